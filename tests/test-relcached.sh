#!/usr/bin/env bash
# tests/test-relcached.sh - relcached on a free loopback port, checked by the
# project's protocol test (tests/relcached-proto.py) and, when installed,
# by libmemcached's memccapable.  When Debian's memcached is installed, the
# protocol test runs against it too: the expected replies are memcached's.
#
# Every server this script starts is stopped on every path (trap).  Only
# 127.0.0.1 is used.  Exit 77 (skip) without python3.
#
# Environment: RELCACHED_IDLE (idle connections for the hostile group,
# default 1000; the script raises ulimit -n when it can).
set -u

me=test-relcached
srcdir=${srcdir:-$(dirname "$0")/..}
builddir=${top_builddir:-.}
server=$builddir/relcached/relcached
proto=$srcdir/tests/relcached-proto.py
idle=${RELCACHED_IDLE:-1000}

command -v python3 >/dev/null 2>&1 || { echo "$me: SKIP: no python3"; exit 77; }
[ -x "$server" ] || { echo "$me: FAIL: $server not built"; exit 1; }

pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
		# The deal group stops the server for a moment (SIGSTOP): a
		# test killed then must not leave it stopped, deaf to SIGTERM.
		kill -CONT "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ulimit -n $((idle + 200)) 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT PID: until PORT accepts (10 s at most) while PID lives.
wait_port() {
	local i
	for i in $(seq 100); do
		kill -0 "$2" 2>/dev/null || return 1
		python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
			"$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# start NAME CMD...: run a server; sets $port and $pid.  The port is
# chosen just before, so another program may take it: three tries.
start() {
	local name=$1 try
	shift
	for try in 1 2 3; do
		port=$(free_port)
		"$@" -p "$port" -l 127.0.0.1 &
		pid=$!
		pids+=("$pid")
		if wait_port "$port" "$pid"; then
			echo "$me: $name on 127.0.0.1:$port (pid $pid)"
			return 0
		fi
		kill "$pid" 2>/dev/null
	done
	echo "$me: FAIL: $name did not start"
	return 1
}

# forget PID: stop PID (if it still runs) and drop it from the list.
forget() {
	local p rest=()
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	for p in "${pids[@]}"; do
		[ "$p" = "$1" ] || rest+=("$p")
	done
	pids=("${rest[@]}")
}

# stop_checked NAME PID: SIGTERM, then the exit status must be 0 (a clean
# shutdown; under the sanitizers, also no leak or race report).
stop_checked() {
	local rc=0
	kill "$2" 2>/dev/null
	wait "$2" || rc=$?
	forget "$2"
	if [ "$rc" != 0 ]; then
		echo "$me: FAIL: $1 exited with status $rc after SIGTERM"
		fail=1
	fi
}

fail=0
start relcached "$server" -t 2 -c $((idle + 100)) || exit 1
python3 "$proto" --port "$port" --pid "$pid" --idle "$idle" || fail=1
if command -v memccapable >/dev/null 2>&1; then
	out=$(timeout 120 memccapable -a -h 127.0.0.1 -p "$port" 2>&1)
	echo "$out" | tail -n 1
	echo "$out" | grep -q '^All tests passed' || { echo "$out"; fail=1; }
else
	echo "$me: memccapable not installed (libmemcached-tools): not run"
fi
stop_checked relcached "$pid"

start "relcached -m 2" "$server" -t 2 -m 2 || exit 1
python3 "$proto" --port "$port" --group eviction || fail=1
stop_checked "relcached -m 2" "$pid"

start "relcached -c 3" "$server" -t 2 -c 3 || exit 1
python3 "$proto" --port "$port" --group maxconns || fail=1
stop_checked "relcached -c 3" "$pid"

# Negative control: without the stripe lock, the concurrent group must fail
# (lost updates, or the server aborting on a failed relhash_replace).
nolock=$builddir/relcached/relcached-nolock
if [ -x "$nolock" ]; then
	start "relcached-nolock" "$nolock" -t 2 || exit 1
	caught=0
	for try in $(seq 10); do
		if ! python3 "$proto" --port "$port" --group concurrent >"$builddir/relcached-nolock.log" 2>&1; then
			caught=1
			break
		fi
	done
	forget "$pid"
	if [ "$caught" = 1 ]; then
		echo "$me: negative control caught (try $try): $(grep -m1 -E 'FAIL|Error' "$builddir/relcached-nolock.log")"
	else
		echo "$me: FAIL: the concurrent group passed against relcached-nolock 10 times"
		fail=1
	fi
fi

if command -v memcached >/dev/null 2>&1; then
	user=()
	[ "$(id -u)" = 0 ] && user=(-u root)
	start memcached memcached "${user[@]}" -U 0 -t 2 || exit 1
	python3 "$proto" --port "$port" --reference --idle 100 \
		--group commands --group errors --group noreply --group pipeline ||
		fail=1
else
	echo "$me: memcached not installed: the expected replies not checked against it"
fi
exit $fail
