#!/usr/bin/env bash
# relcached/bench-memcached.sh - the same memcaslap load against relcached
# and Debian's memcached, one after the other, on 127.0.0.1 only.
#
#   relcached/bench-memcached.sh [RELCACHED_BINARY]
#
# For each server, started fresh with the same -t and -m:
#   fill: FILL_KEYS sets of new keys into the empty server (100 % set);
#   mix:  90 % get / 10 % set for MIX_SECONDS over the filled key space.
# Reports throughput (memcaslap's TPS), latency (p50 and p99 as the upper
# bound of memcaslap's power-of-two histogram buckets, so within a factor
# of 2) and memory per item (the server's RSS growth over the fill divided
# by its curr_items).  Client and server share the machine's cores.
#
# Environment: THREADS (server threads, default 2), MEM_MB (-m, default
# 1024), FILL_KEYS (default 1000000), MIX_SECONDS (default 10), CLIENT_THREADS
# (memcaslap -T, default 2), CONCURRENCY (memcaslap -c, default 64),
# VALUE_SIZE (default 100), KEY_SIZE (default 32).  Every memcaslap run is
# bounded by timeout(1); every server started is stopped on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
relcached=${1:-$here/relcached}
THREADS=${THREADS:-2}
MEM_MB=${MEM_MB:-1024}
FILL_KEYS=${FILL_KEYS:-1000000}
MIX_SECONDS=${MIX_SECONDS:-10}
CLIENT_THREADS=${CLIENT_THREADS:-2}
CONCURRENCY=${CONCURRENCY:-64}
VALUE_SIZE=${VALUE_SIZE:-100}
KEY_SIZE=${KEY_SIZE:-32}

for tool in memcaslap memcached python3; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "bench-memcached.sh: $tool not found (apt-get install libmemcached-tools memcached python3)" >&2
		exit 1
	}
done
[ -x "$relcached" ] || { echo "bench-memcached.sh: no $relcached (make first)" >&2; exit 1; }

work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# memcaslap's configuration: key and value sizes, then the command mix
# (0 = set, 1 = get, with their proportions).
config() {
	printf 'key\n%d %d 1\nvalue\n%d %d 1\ncmd\n0 %s\n1 %s\n' \
		"$KEY_SIZE" "$KEY_SIZE" "$VALUE_SIZE" "$VALUE_SIZE" "$1" "$2"
}
config 1.0 0.0 >"$work/fill.cfg"
config 0.1 0.9 >"$work/mix.cfg"

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

stat_value() {
	python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    d = s.recv(65536)
    if not d:
        break
    buf += d
for line in buf.decode().splitlines():
    p = line.split()
    if len(p) == 3 and p[1] == sys.argv[2]:
        print(p[2])
PY
}

# start NAME CMD...: sets pid and port.
start() {
	local i
	port=$(free_port)
	"$@" -p "$port" -l 127.0.0.1 -t "$THREADS" -m "$MEM_MB" -c 4096 &
	pid=$!
	for i in $(seq 50); do
		stat_value "$port" pid >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "bench-memcached.sh: $1 did not start" >&2
	exit 1
}

stop() {
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	pid=
}

# Summarise a memcaslap log: "TPS p50 p99" (latencies in us, bucket bounds).
summarise() {
	awk '
	/^Total Statistics/ { total = 1 }
	total && /Log2 Dist:/ { dist = 1; next }
	dist && /^ *[0-9]+:/ {
		base = $1; sub(":", "", base)
		for (i = 2; i <= NF; i++) { count[base + i - 2] = $i; n += $i; if (base + i - 2 > hi) hi = base + i - 2 }
		next
	}
	dist { dist = 0; total = 0 }
	/^Run time:/ { for (i = 1; i <= NF; i++) if ($i == "TPS:") tps = $(i + 1) }
	END {
		for (k = 0; k <= hi; k++) {
			c += count[k]
			if (!p50 && c >= 0.50 * n) p50 = 2 ^ k
			if (!p99 && c >= 0.99 * n) p99 = 2 ^ k
		}
		printf "%s %d %d\n", tps, p50, p99
	}' "$1"
}

run_server() {
	local name=$1 rss0 rss1 items fill mix
	shift
	start "$@"
	rss0=$(rss_kb "$pid")
	timeout $((FILL_KEYS / 2000 + 120)) memcaslap -s "127.0.0.1:$port" -F "$work/fill.cfg" \
		-T "$CLIENT_THREADS" -c "$CONCURRENCY" -x "$FILL_KEYS" -w 64k -S 3600s \
		>"$work/$name-fill.log" 2>&1
	rss1=$(rss_kb "$pid")
	items=$(stat_value "$port" curr_items)
	timeout $((MIX_SECONDS + 60)) memcaslap -s "127.0.0.1:$port" -F "$work/mix.cfg" \
		-T "$CLIENT_THREADS" -c "$CONCURRENCY" -t "${MIX_SECONDS}s" -w 64k -S 3600s \
		>"$work/$name-mix.log" 2>&1
	stop
	read -r fill_tps fill_p50 fill_p99 < <(summarise "$work/$name-fill.log")
	read -r mix_tps mix_p50 mix_p99 < <(summarise "$work/$name-mix.log")
	printf '| %-9s | %9s | %5s | %6s | %9s | %5s | %6s | %9s | %8s |\n' \
		"$name" "$fill_tps" "$fill_p50" "$fill_p99" "$mix_tps" "$mix_p50" "$mix_p99" \
		"$items" "$(( (rss1 - rss0) * 1024 / (items > 0 ? items : 1) ))"
}

user=()
[ "$(id -u)" = 0 ] && user=(-u root)
echo "memcaslap against 127.0.0.1, server -t $THREADS -m $MEM_MB, client -T $CLIENT_THREADS -c $CONCURRENCY;"
echo "keys $KEY_SIZE B, values $VALUE_SIZE B; fill: $FILL_KEYS sets from empty; mix: 90 % get / 10 % set for $MIX_SECONDS s."
echo "$(nproc) cores shared by client and servers.  Latency: upper bounds of power-of-two buckets, in us."
echo
echo "| server    | fill ops/s | p50 | p99 | mix ops/s | p50 | p99 | items | B/item (RSS) |"
echo "|-----------|-----------:|----:|----:|----------:|----:|----:|------:|-------------:|"
run_server relcached "$relcached"
run_server memcached memcached "${user[@]}" -U 0
