#!/usr/bin/env python3
"""tests/relcached-proto.py - relcached's protocol test.

    relcached-proto.py --port PORT [--pid PID] [--reference] [--group G]...

Talks memcached's text protocol to 127.0.0.1:PORT and checks every reply
byte for byte.  Groups: commands, errors, noreply, pipeline, expiry,
hostile (bad clients; --pid lets it read the server's memory), deal (a
burst of connections spread over the workers; needs --pid), eviction
(the server must run with -m 2), maxconns (with -c 3), concurrent
(several clients update one key at once).  --reference: the server is Debian's
memcached, which the expected replies come from; cases where relcached
deliberately differs are skipped.  Every socket operation has a timeout;
the whole run is bounded by the sleeps of the expiry group (about 10 s).
Exit status 0 when every check passed.
"""
import argparse
import os
import re
import signal
import socket
import sys
import time

TIMEOUT = 10.0
failures = []


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def read(self, n):
        """Exactly n bytes, or fewer if the server closes or times out."""
        deadline = time.monotonic() + TIMEOUT
        while len(self.buf) < n and time.monotonic() < deadline:
            try:
                d = self.sock.recv(max(n - len(self.buf), 65536))
            except socket.timeout:
                break
            if not d:
                break
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def line(self):
        deadline = time.monotonic() + TIMEOUT
        while b"\r\n" not in self.buf and time.monotonic() < deadline:
            try:
                d = self.sock.recv(65536)
            except socket.timeout:
                break
            if not d:
                break
            self.buf += d
        i = self.buf.find(b"\r\n")
        if i < 0:
            out, self.buf = self.buf, b""
            return out
        out, self.buf = self.buf[: i + 2], self.buf[i + 2 :]
        return out

    def closed(self):
        """True when the server closed the connection (within the timeout)."""
        try:
            self.sock.settimeout(TIMEOUT)
            while True:
                d = self.sock.recv(65536)
                if not d:
                    return True
        except (socket.timeout, OSError) as e:
            return not isinstance(e, socket.timeout)

    def close(self):
        self.sock.close()


def check(name, got, want):
    ok = want.fullmatch(got) is not None if isinstance(want, re.Pattern) else got == want
    if not ok:
        failures.append(name)
        print("FAIL %s:\n  want %r\n  got  %r" % (name, want, got))


def exchange(c, name, send, want):
    c.send(send)
    if isinstance(want, re.Pattern):
        got = b""
        while not got.endswith(b"END\r\n") and not want.fullmatch(got):
            ln = c.line()
            if not ln:
                break
            got += ln
    else:
        got = c.read(len(want))
    check(name, got, want)


def value(key, v, flags=0):
    return b"VALUE %s %d %d\r\n%s\r\nEND\r\n" % (key, flags, len(v), v)


def gets_cas(c, key):
    c.send(b"gets " + key + b"\r\n")
    head = c.line()
    m = re.fullmatch(rb"VALUE \S+ \d+ (\d+) (\d+)\r\n", head)
    if not m:
        check("gets " + key.decode(), head, re.compile(rb"VALUE .*"))
        return 0
    c.read(int(m.group(1)) + 2)
    c.line()  # END
    return int(m.group(2))


# ---------------------------------------------------------------------------

def group_commands(port, reference):
    c = Client(port)
    x = lambda n, s, w: exchange(c, n, s, w)
    x("set", b"set foo 5 0 3\r\nbar\r\n", b"STORED\r\n")
    x("get", b"get foo\r\n", value(b"foo", b"bar", 5))
    x("get miss", b"get nope\r\n", b"END\r\n")
    x("multi-get", b"get foo nope foo\r\n",
      b"VALUE foo 5 3\r\nbar\r\nVALUE foo 5 3\r\nbar\r\nEND\r\n")
    x("gets", b"gets foo\r\n", re.compile(rb"VALUE foo 5 3 \d+\r\nbar\r\nEND\r\n"))
    x("set empty", b"set empty 0 0 0\r\n\r\n", b"STORED\r\n")
    x("get empty", b"get empty\r\n", value(b"empty", b""))
    key250 = b"k" * 250
    x("set key 250", b"set " + key250 + b" 0 0 1\r\nx\r\n", b"STORED\r\n")
    x("get key 250", b"get " + key250 + b"\r\n", value(key250, b"x"))
    x("binary value", b"set bin 0 0 4\r\n\r\n\x00\xff\r\n", b"STORED\r\n")
    x("get binary", b"get bin\r\n", value(b"bin", b"\r\n\x00\xff"))
    # cas
    cas = gets_cas(c, b"foo")
    x("cas ok", b"cas foo 0 0 1 %d\r\nA\r\n" % cas, b"STORED\r\n")
    x("cas stale", b"cas foo 0 0 1 %d\r\nB\r\n" % cas, b"EXISTS\r\n")
    x("cas missing", b"cas nope 0 0 1 1\r\nB\r\n", b"NOT_FOUND\r\n")
    x("cas kept", b"get foo\r\n", value(b"foo", b"A"))
    # add / replace
    x("add existing", b"add foo 0 0 1\r\nC\r\n", b"NOT_STORED\r\n")
    x("add new", b"add newkey 0 0 1\r\nC\r\n", b"STORED\r\n")
    x("replace missing", b"replace nope 0 0 1\r\nD\r\n", b"NOT_STORED\r\n")
    x("replace", b"replace newkey 7 0 1\r\nD\r\n", b"STORED\r\n")
    x("replaced", b"get newkey\r\n", value(b"newkey", b"D", 7))
    # append / prepend keep the flags
    x("append", b"append newkey 0 0 2\r\nEF\r\n", b"STORED\r\n")
    x("prepend", b"prepend newkey 0 0 2\r\nAB\r\n", b"STORED\r\n")
    x("appended", b"get newkey\r\n", value(b"newkey", b"ABDEF", 7))
    x("append missing", b"append nope 0 0 1\r\nx\r\n", b"NOT_STORED\r\n")
    x("prepend missing", b"prepend nope 0 0 1\r\nx\r\n", b"NOT_STORED\r\n")
    # delete
    x("delete", b"delete newkey\r\n", b"DELETED\r\n")
    x("delete again", b"delete newkey\r\n", b"NOT_FOUND\r\n")
    x("delete 0", b"delete foo 0\r\n", b"DELETED\r\n")
    # incr / decr
    x("set number", b"set n 0 0 2\r\n10\r\n", b"STORED\r\n")
    x("incr", b"incr n 5\r\n", b"15\r\n")
    x("decr", b"decr n 3\r\n", b"12\r\n")
    x("decr floor", b"decr n 100\r\n", b"0\r\n")
    x("set max", b"set n 0 0 20\r\n18446744073709551615\r\n", b"STORED\r\n")
    x("incr wraps", b"incr n 2\r\n", b"1\r\n")
    x("incr missing", b"incr nope 1\r\n", b"NOT_FOUND\r\n")
    x("decr missing", b"decr nope 1\r\n", b"NOT_FOUND\r\n")
    x("set text", b"set t 0 0 3\r\nabc\r\n", b"STORED\r\n")
    x("incr text", b"incr t 1\r\n",
      b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
    x("incr bad delta", b"incr n abc\r\n", b"CLIENT_ERROR invalid numeric delta argument\r\n")
    x("incr negative delta", b"incr n -1\r\n", b"CLIENT_ERROR invalid numeric delta argument\r\n")
    # touch, gat, gats
    x("touch", b"touch t 100\r\n", b"TOUCHED\r\n")
    x("touch missing", b"touch nope 100\r\n", b"NOT_FOUND\r\n")
    x("gat", b"gat 100 t nope\r\n", value(b"t", b"abc"))
    x("gats", b"gats 100 t\r\n", re.compile(rb"VALUE t 0 3 \d+\r\nabc\r\nEND\r\n"))
    cas = gets_cas(c, b"t")
    x("touch keeps cas", b"touch t 200\r\n", b"TOUCHED\r\n")
    x("cas after touch", b"cas t 0 0 1 %d\r\nz\r\n" % cas, b"STORED\r\n")
    # flush_all, version, verbosity, stats
    x("flush_all", b"flush_all\r\n", b"OK\r\n")
    x("flushed", b"get t n foo\r\n", b"END\r\n")
    x("set after flush", b"set f 0 0 1\r\n1\r\n", b"STORED\r\n")
    x("get after flush", b"get f\r\n", value(b"f", b"1"))
    x("flush_all 0", b"flush_all 0\r\n", b"OK\r\n")
    x("flushed 0", b"get f\r\n", b"END\r\n")
    x("version", b"version\r\n", re.compile(rb"VERSION \S+\r\n"))
    x("verbosity", b"verbosity 1\r\n", b"OK\r\n")
    x("verbosity noreply", b"verbosity 1 noreply\r\nget f\r\n", b"END\r\n")
    x("stats", b"stats\r\n", re.compile(
        rb"(STAT [a-z_]+ [^\r]+\r\n)+END\r\n", re.S))
    c.send(b"stats\r\n")
    stats = read_stats(c)
    for field in (b"curr_items", b"total_items", b"get_hits", b"get_misses", b"evictions",
                  b"bytes", b"curr_connections", b"threads", b"limit_maxbytes", b"uptime",
                  b"cmd_get", b"cmd_set"):
        check("stats has " + field.decode(), field in stats, True)
    if not reference:
        for field in (b"table_buckets", b"table_resizes", b"table_throttled_inserts",
                      b"grace_periods"):
            check("stats has " + field.decode(), field in stats, True)
    x("quit", b"quit\r\n", b"")
    check("quit closes", c.closed(), True)


def read_stats(c):
    stats = {}
    while True:
        ln = c.line()
        if ln in (b"END\r\n", b""):
            return stats
        parts = ln.split()
        stats[parts[1]] = parts[2]


def group_errors(port, reference):
    c = Client(port)
    x = lambda n, s, w: exchange(c, n, s, w)
    bad = b"CLIENT_ERROR bad command line format\r\n"
    x("unknown command", b"foo bar\r\n", b"ERROR\r\n")
    x("empty line", b"\r\n", b"ERROR\r\n")
    x("upper case", b"GET foo\r\n", b"ERROR\r\n")
    x("get without key", b"get\r\n", b"ERROR\r\n")
    x("set too few", b"set k 0 0\r\n", b"ERROR\r\n")
    x("set too many", b"set k 0 0 1 2 3\r\n", b"ERROR\r\n")
    x("incr too few", b"incr k\r\n", b"ERROR\r\n")
    x("binary garbage", b"\x00\x01\xfe\xff\r\n", b"ERROR\r\n")
    x("get key 251", b"get " + b"a" * 251 + b"\r\n", bad)
    x("set key 251", b"set " + b"a" * 251 + b" 0 0 1\r\nb\r\n", bad + b"ERROR\r\n")
    x("set bad flags", b"set k x 0 1\r\na\r\n", bad + b"ERROR\r\n")
    x("set bad exptime", b"set k 0 x 1\r\na\r\n", bad + b"ERROR\r\n")
    x("set negative length", b"set k 0 0 -1\r\n", bad)
    x("cas bad unique", b"cas k 0 0 1 x\r\n", bad)
    x("delete usage", b"delete k 1\r\n",
      b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n")
    x("touch bad exptime", b"touch k x\r\n", b"CLIENT_ERROR invalid exptime argument\r\n")
    x("gat bad exptime", b"gat x k\r\n", b"CLIENT_ERROR invalid exptime argument\r\n")
    x("flush_all bad delay", b"flush_all x\r\n", b"CLIENT_ERROR invalid exptime argument\r\n")
    x("verbosity bad", b"verbosity x\r\n", bad)
    x("verbosity without level", b"verbosity\r\n", b"ERROR\r\n")
    x("data longer than announced", b"set k 0 0 1\r\nabc\r\n",
      b"CLIENT_ERROR bad data chunk\r\nERROR\r\n")
    x("data with bare newline", b"set k 0 0 1\nb\nget k\n",
      b"CLIENT_ERROR bad data chunk\r\nERROR\r\n")
    x("bare newlines", b"set k2 0 0 1\nb\r\nget k2\n", b"STORED\r\n" + value(b"k2", b"b"))
    big = 2 * 1024 * 1024
    x("set to keep", b"set big 0 0 1\r\nx\r\n", b"STORED\r\n")
    x("too large", b"set big 0 0 %d\r\n" % big + b"v" * big + b"\r\n",
      b"SERVER_ERROR object too large for cache\r\n")
    x("too large removed the old value", b"get big\r\n", b"END\r\n")
    x("still in sync", b"get k2\r\n", value(b"k2", b"b"))
    c.close()
    # A line over 2048 bytes that is not a get: memcached closes.
    c = Client(port)
    c.send(b"x" * 3000)
    check("long line closes", c.closed(), True)
    c.close()
    # A get line may be long.
    c = Client(port)
    keys = b" ".join(b"key%d" % i for i in range(1000))
    exchange(c, "long get line", b"get " + keys + b"\r\n", b"END\r\n")
    c.close()


def group_noreply(port, reference):
    c = Client(port)
    c.send(b"set a 0 0 1 noreply\r\n1\r\n"
           b"add a 0 0 1 noreply\r\n2\r\n"
           b"add b 0 0 1 noreply\r\n2\r\n"
           b"replace b 0 0 1 noreply\r\n3\r\n"
           b"append b 0 0 1 noreply\r\n4\r\n"
           b"prepend b 0 0 1 noreply\r\n5\r\n"
           b"incr a 10 noreply\r\n"
           b"decr a 1 noreply\r\n"
           b"touch a 100 noreply\r\n"
           b"set c 0 0 1 noreply\r\nc\r\n"
           b"delete c noreply\r\n"
           b"incr nope 1 noreply\r\n"
           b"set k 0 0 1 noreply\r\nabc\r\n")
    exchange(c, "noreply effects", b"get a b c\r\n",
             b"ERROR\r\nVALUE a 0 2\r\n10\r\nVALUE b 0 3\r\n534\r\nEND\r\n")
    cas = gets_cas(c, b"a")
    c.send(b"cas a 0 0 1 %d noreply\r\nX\r\n" % cas)
    c.send(b"cas a 0 0 1 %d noreply\r\nY\r\n" % cas)
    exchange(c, "cas noreply", b"get a\r\n", value(b"a", b"X"))
    c.send(b"flush_all noreply\r\n")
    exchange(c, "flush_all noreply", b"get a b\r\n", b"END\r\n")
    c.close()


def group_pipeline(port, reference):
    c = Client(port)
    send, want = b"", b""
    for i in range(300):
        v = b"value-%d" % i
        send += b"set p%d %d 0 %d\r\n%s\r\n" % (i, i, len(v), v)
        want += b"STORED\r\n"
    for i in range(300):
        v = b"value-%d" % i
        send += b"get p%d\r\n" % i
        want += b"VALUE p%d %d %d\r\n%s\r\nEND\r\n" % (i, i, len(v), v)
    send += b"incr p0 1\r\ndelete p1\r\nget p1\r\n"
    want += b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\nDELETED\r\nEND\r\n"
    exchange(c, "pipelined 603 commands", send, want)
    # One command split over many small writes.
    for part in (b"se", b"t sp", b"lit 0 0", b" 5\r", b"\nhel", b"lo", b"\r", b"\n"):
        c.send(part)
        time.sleep(0.01)
    check("split command", c.read(8), b"STORED\r\n")
    exchange(c, "split get", b"get split\r\n", value(b"split", b"hello"))
    if not reference:
        # RELHASH_AUTO_RESIZE: the table started with 16 buckets and grows
        # (on the library's resize thread, hence the wait).
        deadline, buckets = time.monotonic() + 5, 0
        while time.monotonic() < deadline and buckets < 512:
            c.send(b"stats\r\n")
            buckets = int(read_stats(c).get(b"table_buckets", b"0"))
            time.sleep(0.05)
        print("pipeline: table_buckets %d with 300+ items" % buckets)
        check("the table grew past 300 items / 0.75 load", buckets >= 512, True)
    c.close()


def group_expiry(port, reference):
    # Times have a granularity of one second (as memcached's): an item
    # with expiry N dies N-1 to N seconds after it was stored, so every
    # check below keeps a margin of at least one second.
    c = Client(port)
    x = lambda n, s, w: exchange(c, n, s, w)
    start = time.time()
    now = int(start)
    x("set exp 2", b"set e1 0 2 1\r\na\r\n", b"STORED\r\n")
    x("set exp abs", b"set e2 0 %d 1\r\nb\r\n" % (now + 3), b"STORED\r\n")
    x("set exp past", b"set e3 0 %d 1\r\nc\r\n" % (now - 10), b"STORED\r\n")
    x("set exp negative", b"set e4 0 -1 1\r\nd\r\n", b"STORED\r\n")
    x("set touch", b"set e5 0 2 1\r\ne\r\n", b"STORED\r\n")
    x("set gat", b"set e6 0 2 1\r\nf\r\n", b"STORED\r\n")
    x("set never", b"set e7 0 0 1\r\ng\r\n", b"STORED\r\n")
    x("past gone", b"get e3 e4\r\n", b"END\r\n")
    x("fresh", b"get e1 e2\r\n", b"VALUE e1 0 1\r\na\r\nVALUE e2 0 1\r\nb\r\nEND\r\n")
    x("touch extends", b"touch e5 100\r\n", b"TOUCHED\r\n")
    x("gat extends", b"gat 100 e6\r\n", value(b"e6", b"f"))
    x("flush_all delay", b"flush_all 6\r\n", b"OK\r\n")
    time.sleep(max(0, start + 3.2 - time.time()))
    x("relative expired", b"get e1\r\n", b"END\r\n")
    x("absolute expired", b"get e2\r\n", b"END\r\n")
    x("touched survive", b"get e5 e6 e7\r\n",
      b"VALUE e5 0 1\r\ne\r\nVALUE e6 0 1\r\nf\r\nVALUE e7 0 1\r\ng\r\nEND\r\n")
    x("touch expired", b"touch e1 10\r\n", b"NOT_FOUND\r\n")
    time.sleep(max(0, start + 7.5 - time.time()))
    x("delayed flush", b"get e5 e6 e7\r\n", b"END\r\n")
    x("set after delayed flush", b"set e8 0 0 1\r\nh\r\n", b"STORED\r\n")
    x("get after delayed flush", b"get e8\r\n", value(b"e8", b"h"))
    c.close()


def vm_rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for ln in f:
                if ln.startswith("VmRSS:"):
                    return int(ln.split()[1])
    except OSError:
        pass
    return 0


def group_hostile(port, reference, pid, idle):
    ok = Client(port)
    # A data block that never ends: the other clients are served meanwhile.
    slow = Client(port)
    slow.send(b"set slow 0 0 100\r\nonly a part")
    exchange(ok, "served beside an endless data block", b"set x 0 0 1\r\n1\r\n", b"STORED\r\n")
    exchange(ok, "partial block not stored", b"get slow\r\n", b"END\r\n")
    slow.close()
    # Idle connections.
    conns = []
    try:
        for _ in range(idle):
            conns.append(socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT))
    except OSError as e:
        print("idle connections: opened %d of %d (%s)" % (len(conns), idle, e))
    exchange(ok, "served beside %d idle connections" % len(conns), b"get x\r\n", value(b"x", b"1"))
    if not reference:
        # The server accepts from its backlog as fast as it can: wait.
        deadline, curr = time.monotonic() + 10, 0
        while curr < len(conns) and time.monotonic() < deadline:
            ok.send(b"stats\r\n")
            curr = int(read_stats(ok).get(b"curr_connections", b"0"))
            time.sleep(0.05)
        check("curr_connections counts the idle ones", curr >= len(conns), True)
    rss_idle = vm_rss_kb(pid) if pid else 0
    for s in conns:
        s.close()
    # A client that never reads its responses.
    big = b"B" * (512 * 1024)
    exchange(ok, "set big", b"set big 0 0 %d\r\n%s\r\n" % (len(big), big), b"STORED\r\n")
    deaf = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    deaf.setblocking(False)
    sent, deadline = 0, time.monotonic() + 3
    request = b"get big\r\n" * 1000
    while time.monotonic() < deadline and sent < 64 << 20:
        try:
            sent += deaf.send(request)
        except BlockingIOError:
            time.sleep(0.05)
    exchange(ok, "served beside a client that never reads", b"get x\r\n", value(b"x", b"1"))
    rss = vm_rss_kb(pid) if pid else 0
    print("hostile: %d idle connections, server RSS %d kB with them; a deaf client "
          "sent %d bytes of gets (%d MB of replies); server RSS %d kB"
          % (len(conns), rss_idle, sent, sent // 9 * len(big) >> 20, rss))
    if pid and not reference:
        check("memory bounded with a deaf client (RSS < 400 MB)", rss < 400 * 1024, True)
    deaf.close()
    ok.close()


def epoll_clients(pid):
    """For each epoll set of process pid (one per worker), by its file
    descriptor: how many file descriptors it watches (/proc/PID/fdinfo)."""
    counts = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:[eventpoll]":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                counts[fd] = sum(ln.startswith("tfd:") for ln in f)
        except OSError:
            pass
    return counts


def group_deal(port, reference, pid):
    """A burst of connections, all waiting in the backlog when the server
    wakes, is dealt out evenly to the workers."""
    if reference or not pid:
        print("deal: skipped (needs --pid and relcached)")
        return
    burst = 100
    time.sleep(0.2)  # the server closes the earlier groups' connections
    before = epoll_clients(pid)
    os.kill(pid, signal.SIGSTOP)
    try:
        conns = [socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
                 for _ in range(burst)]
    finally:
        os.kill(pid, signal.SIGCONT)
    for s in conns:
        s.sendall(b"version\r\n")
    for s in conns:
        s.recv(64)
    after = epoll_clients(pid)
    # A connection of an earlier group that the server closes meanwhile
    # may take one off a share.
    shares = sorted(after[fd] - before.get(fd, 0) for fd in after)
    print("deal: %d connections in a burst, per worker %s" % (burst, shares))
    check("a burst of connections dealt evenly (%s)" % shares,
          len(shares) >= 2 and max(shares) - min(shares) <= 3, True)
    for s in conns:
        s.close()


def group_eviction(port, reference):
    c = Client(port)
    v = b"e" * 10000
    n = 600  # 6 MB into -m 2
    hot = 0
    c.send(b"set hot 0 0 3\r\nhot\r\n")
    check("set hot", c.read(8), b"STORED\r\n")
    for i in range(n):
        c.send(b"set ev%d 0 0 %d\r\n%s\r\n" % (i, len(v), v))
        check("set under -m", c.read(8), b"STORED\r\n")
        if i % 20 == 0:
            c.send(b"get hot\r\n")
            if c.line() == b"VALUE hot 0 3\r\n":
                hot += c.read(5) == b"hot\r\n" and c.line() == b"END\r\n"
    c.send(b"stats\r\n")
    st = read_stats(c)
    limit = int(st[b"limit_maxbytes"])
    print("eviction: %s evictions, %s items, %s bytes of %d, hot key hit %d of %d"
          % (st[b"evictions"].decode(), st[b"curr_items"].decode(), st[b"bytes"].decode(),
             limit, hot, (n + 19) // 20))
    check("evictions happened", int(st[b"evictions"]) > 0, True)
    check("bytes under the limit", int(st[b"bytes"]) <= limit, True)
    exchange(c, "early keys evicted", b"get ev0 ev1\r\n", b"END\r\n")
    exchange(c, "last key kept", b"get ev%d\r\n" % (n - 1),
             b"VALUE ev%d 0 %d\r\n%s\r\nEND\r\n" % (n - 1, len(v), v))
    check("a key read often stays (CLOCK)", hot, (n + 19) // 20)
    # A stored item is the most recently used one: the eviction its own
    # store causes must not take it.  Large values leave most stripes with
    # one item or none, where an item stored unreferenced would be the
    # first the hand takes.
    big = b"b" * 100000
    lost = []
    for i in range(200):
        c.send(b"set big%d 0 0 %d\r\n%s\r\nget big%d\r\n" % (i, len(big), big, i))
        check("set under -m, large", c.read(8), b"STORED\r\n")
        if c.line() != b"VALUE big%d 0 %d\r\n" % (i, len(big)):
            lost.append(i)
            continue
        c.read(len(big) + 2)
        c.line()
    check("a key just stored is kept (lost: %s)" % lost[:10], lost, [])
    c.close()


def group_maxconns(port, reference):
    """The server runs with -c 3."""
    time.sleep(0.5)  # the start-up probe's connection must be closed first
    cs = [Client(port) for _ in range(3)]
    for i, c in enumerate(cs):
        exchange(c, "connection %d of 3" % (i + 1), b"version\r\n", re.compile(rb"VERSION \S+\r\n"))
    extra = Client(port)
    check("connection 4 refused", extra.line(), b"ERROR Too many open connections\r\n")
    check("connection 4 closed", extra.closed(), True)
    cs[0].close()
    time.sleep(0.2)
    again = Client(port)
    exchange(again, "a free slot is used again", b"version\r\n", re.compile(rb"VERSION \S+\r\n"))
    for c in cs[1:] + [again, extra]:
        c.close()


def group_concurrent(port, reference):
    """Clients on several connections (served by different worker threads)
    update one key at once: no incr or append is lost, and readers see whole
    values only."""
    import threading

    clients, rounds, batch = 4, 20, 100
    setup = Client(port)
    exchange(setup, "set counter", b"set counter 0 0 1\r\n0\r\n", b"STORED\r\n")
    exchange(setup, "set log", b"set log 0 0 0\r\n\r\n", b"STORED\r\n")
    errors = []

    def updater(i):
        c = Client(port)
        for _ in range(rounds):
            c.send(b"incr counter 1\r\n" * batch +
                   b"append log 0 0 1\r\n%c\r\n" % (ord("a") + i) * batch)
            for _ in range(batch):
                if not re.fullmatch(rb"\d+\r\n", c.line()):
                    errors.append("incr reply")
            for _ in range(batch):
                if c.line() != b"STORED\r\n":
                    errors.append("append reply")
        c.close()

    def reader():
        c = Client(port)
        for _ in range(rounds * 5):
            c.send(b"get whole\r\n")
            head = c.line()
            m = re.fullmatch(rb"VALUE whole 0 (\d+)\r\n", head)
            if m:
                v = c.read(int(m.group(1)) + 2)[:-2]
                if v not in (b"x" * 1000, b"y" * 3000):
                    errors.append("torn value of %d bytes" % len(v))
                c.line()
            elif head != b"END\r\n":
                errors.append("get reply %r" % head[:40])
        c.close()

    def writer():
        c = Client(port)
        for i in range(rounds * 5):
            v = b"x" * 1000 if i % 2 else b"y" * 3000
            c.send(b"set whole 0 0 %d\r\n%s\r\n" % (len(v), v))
            if c.line() != b"STORED\r\n":
                errors.append("set reply")
        c.close()

    threads = [threading.Thread(target=updater, args=(i,)) for i in range(clients)]
    threads += [threading.Thread(target=reader), threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    check("concurrent replies", errors[:3], [])
    total = clients * rounds * batch
    exchange(setup, "no incr lost", b"get counter\r\n", value(b"counter", b"%d" % total))
    setup.send(b"get log\r\n")
    head = setup.line()
    log = setup.read(int(head.split()[3]) + 2)[:-2] if head.startswith(b"VALUE") else b""
    setup.line()
    check("no append lost", [log.count(b"%c" % (ord("a") + i)) for i in range(clients)],
          [rounds * batch] * clients)
    setup.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, default=0)
    ap.add_argument("--reference", action="store_true")
    ap.add_argument("--idle", type=int, default=1000)
    ap.add_argument("--group", action="append")
    a = ap.parse_args()
    groups = {
        "commands": lambda: group_commands(a.port, a.reference),
        "errors": lambda: group_errors(a.port, a.reference),
        "noreply": lambda: group_noreply(a.port, a.reference),
        "pipeline": lambda: group_pipeline(a.port, a.reference),
        "expiry": lambda: group_expiry(a.port, a.reference),
        "hostile": lambda: group_hostile(a.port, a.reference, a.pid, a.idle),
        "deal": lambda: group_deal(a.port, a.reference, a.pid),
        "eviction": lambda: group_eviction(a.port, a.reference),
        "maxconns": lambda: group_maxconns(a.port, a.reference),
        "concurrent": lambda: group_concurrent(a.port, a.reference),
    }
    for g in a.group or ["commands", "errors", "noreply", "pipeline", "concurrent",
                         "deal", "expiry", "hostile"]:
        start = time.monotonic()
        groups[g]()
        print("group %s: done in %.1f s" % (g, time.monotonic() - start))
    print("%s: %d failures" % ("relcached-proto", len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
