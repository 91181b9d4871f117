#!/usr/bin/env bash
# relcached/bench-memcached.sh - the same memcaslap load against relcached
# and Debian's memcached, alternately, on 127.0.0.1 only; prints a Markdown
# section (make bench-report puts it into doc/PERFORMANCE.md).
#
#   relcached/bench-memcached.sh [RELCACHED_BINARY]
#
# Each round starts relcached, then memcached, fresh with the same -t and
# -m, and runs against each:
#   fill: FILL_KEYS sets of new keys into the empty server (100 % set);
#   mix:  90 % get / 10 % set for MIX_SECONDS over the filled key space.
# Prints every run's throughput (memcaslap's TPS), latency (p50 and p99 as
# the upper bound of memcaslap's power-of-two histogram buckets, so within
# a factor of 2) and memory per item (the server's RSS growth over the fill
# divided by its curr_items); then the medians over the rounds against the
# goals (at least memcached's throughput, at most its p99, in both
# workloads).  Client and servers share the machine's cores.
#
# Environment: ROUNDS (default 1), THREADS (server threads, default 2),
# MEM_MB (-m, default 1024), FILL_KEYS (default 1000000), MIX_SECONDS
# (default 10), CLIENT_THREADS (memcaslap -T, default 2), CONCURRENCY
# (memcaslap -c, default 64), VALUE_SIZE (default 100), KEY_SIZE (default
# 32).  Every memcaslap run is bounded by timeout(1); every server started
# is stopped on exit.  Exit status 1 when a tool is missing or a server
# does not start.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
relcached=${1:-$here/relcached}
ROUNDS=${ROUNDS:-1}
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

# run_server NAME ROUND CMD...: one fill and one mix; appends "NAME ROUND
# fill_tps fill_p50 fill_p99 mix_tps mix_p50 mix_p99 items bytes_per_item"
# to $work/results.
run_server() {
	local name=$1 round=$2 rss0 rss1 items
	shift 2
	start "$@"
	rss0=$(rss_kb "$pid")
	timeout $((FILL_KEYS / 2000 + 120)) memcaslap -s "127.0.0.1:$port" -F "$work/fill.cfg" \
		-T "$CLIENT_THREADS" -c "$CONCURRENCY" -x "$FILL_KEYS" -w 64k -S 3600s \
		>"$work/fill.log" 2>&1
	rss1=$(rss_kb "$pid")
	items=$(stat_value "$port" curr_items)
	timeout $((MIX_SECONDS + 60)) memcaslap -s "127.0.0.1:$port" -F "$work/mix.cfg" \
		-T "$CLIENT_THREADS" -c "$CONCURRENCY" -t "${MIX_SECONDS}s" -w 64k -S 3600s \
		>"$work/mix.log" 2>&1
	stop
	echo "$name $round $(summarise "$work/fill.log") $(summarise "$work/mix.log") $items" \
		"$(( (rss1 - rss0) * 1024 / (items > 0 ? items : 1) ))" >>"$work/results"
}

user=()
[ "$(id -u)" = 0 ] && user=(-u root)
: >"$work/results"
for round in $(seq "$ROUNDS"); do
	echo "bench-memcached.sh: round $round of $ROUNDS" >&2
	run_server relcached "$round" "$relcached"
	run_server memcached "$round" memcached "${user[@]}" -U 0
done

cat <<EOF
memcaslap (libmemcached-tools) against 127.0.0.1; both servers with \`-t $THREADS -m $MEM_MB -c 4096\`,
memcaslap \`-T $CLIENT_THREADS -c $CONCURRENCY\`; keys $KEY_SIZE B, values $VALUE_SIZE B.
**fill**: $FILL_KEYS sets of new keys into the empty server; **mix**: 90 % get /
10 % set for $MIX_SECONDS s over the filled keys.  $ROUNDS round(s), each relcached
then memcached, each server started fresh.  $(nproc) CPUs, **shared by the
client and the server**: the numbers move with the machine's load.
Latencies: upper bounds of memcaslap's power-of-two buckets, in us (within
a factor of 2).  Memory: the server's RSS growth over the fill, per item.

EOF
awk '
function median(list, n,    i, j, t, a) {
	split(list, a, " ")
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
BEGIN {
	print "| run | server | fill ops/s | p50 | p99 | mix ops/s | p50 | p99 | items | B/item (RSS) |"
	print "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
}
{
	printf "| %d | %s | %d | %d | %d | %d | %d | %d | %d | %d |\n", $2, $1, $3, $4, $5, $6, $7, $8, $9, $10
	n[$1]++
	for (f = 3; f <= 10; f++) col[$1, f] = col[$1, f] " " $f
}
END {
	printf "\nMedians over the rounds, and the goals (at least memcached'"'"'s throughput,\nat most its p99):\n\n"
	print "| | relcached | memcached | met |"
	print "|---|---:|---:|---|"
	split("fill ops/s|fill p99 us|mix ops/s|mix p99 us", what, "|")
	split("3 5 6 8", field, " ")
	for (g = 1; g <= 4; g++) {
		r = median(col["relcached", field[g]], n["relcached"])
		m = median(col["memcached", field[g]], n["memcached"])
		met = g % 2 ? r >= m : r <= m
		printf "| %s | %d | %d | %s |\n", what[g], r, m, met ? "yes" : "**no**"
	}
}' "$work/results"
