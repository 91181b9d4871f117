#!/usr/bin/env bash
# run-spin.sh -- model-check tests/model/unzip.pml and rehash.pml with spin.
#
#   tests/model/run-spin.sh            quick run (about a minute and a half)
#   tests/model/run-spin.sh --long     bigger exhaustive runs (longer chains,
#                                      two removals; minutes, several GB)
#   tests/model/run-spin.sh --keep     keep the work directory (pan outputs,
#                                      trails) and print where it is
#
# Every configuration of the correct model must be verified with 0 errors.
# Every negative control (a deliberately broken variant, see the switches at
# the top of each model) must make spin report an error: if one passes, the
# model has gone blind and this script fails.  For each negative control pan
# searches for the shortest counterexample (-i; its "errors" then counts
# every shorter trail found on the way), which is replayed and printed as a
# narrative (the model's printf lines).
#
# One line per run: variant, verdict, errors, states stored, transitions,
# depth reached, pan's elapsed time and memory; then the spin -D switches.
# SPIN_JOBS=n sets how many verifiers run side by side (default 2).
# Exit status: 0 all as expected, 1 some run not as expected, 2 usage.
#
# Needs spin (apt-get install spin) and a C compiler.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
models=(unzip rehash)
mode=quick
keep=0

usage() {
	sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

for arg in "$@"; do
	case "$arg" in
	--long) mode=long ;;
	--keep) keep=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run-spin.sh: unknown argument: $arg" >&2; usage >&2; exit 2 ;;
	esac
done

for tool in spin "${CC:-gcc}"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "run-spin.sh: '$tool' not found (apt-get install -y spin gcc)" >&2
		exit 2
	fi
done
for m in "${models[@]}"; do
	[ -r "$here/$m.pml" ] || { echo "run-spin.sh: $here/$m.pml not found" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/relhash-spin.XXXXXX")
# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
	# stop what we started and is still running: each verification job is
	# its own process group (set -m below), holding spin, gcc or pan
	local pid
	for pid in $(jobs -p); do
		kill -- "-$pid" 2>/dev/null || true
	done
	if [ "$keep" = 1 ]; then
		echo "work directory kept: $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# pan settings.  The state vectors are ~72 (unzip) and ~120 bytes (rehash),
# so the default VECTORSZ is plenty; -DSAFETY: only assertions and invalid
# end states are checked (no cycles), which is all the models ask for.  The
# long mode compresses stored states (-DCOLLAPSE) and uses a bigger hash
# table.  The quick mode compiles pan with -O1: gcc -O2 takes 3 to 4 s a
# run, more than most of these searches, and -O1 half that for a pan about
# as fast (-O0: a third slower).  Negative controls search small spaces:
# pan is compiled at -O0 (under a second), with a smaller hash table.
if [ "$mode" = long ]; then
	cflags=(-O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=9000)
	panflags=(-m1000000 -w27)
else
	cflags=(-O1 -w -DSAFETY -DMEMLIM=3000)
	panflags=(-m100000 -w24)
fi

jobs_max=${SPIN_JOBS:-2}    # verifiers run side by side (2 cores)
set -m                      # each background job in its own process group
names=()

# field NAME FILE: pull one figure out of pan's report
field() {
	case "$1" in
	errors) sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$2" | tail -1 ;;
	depth) sed -n 's/.*depth reached \([0-9][0-9]*\).*/\1/p' "$2" | tail -1 ;;
	stored) sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$2" | tail -1 ;;
	trans) sed -n 's/^ *\([0-9.e+]*\) transitions.*/\1/p' "$2" | tail -1 ;;
	time) sed -n 's/^pan: elapsed time \([0-9.e+]*\) seconds.*/\1/p' "$2" | tail -1 ;;
	mem) sed -n 's/^ *\([0-9.]*\)[[:space:]]*total actual memory usage.*/\1/p' "$2" | tail -1 ;;
	esac
}

# verify MODEL NAME EXPECT SPIN-DEFINES...
#   MODEL: unzip or rehash; EXPECT: pass (0 errors required) or fail (an
#   error required).
#   Writes its report to $work/NAME/report and "ok" or "bad" to
#   $work/NAME/status; always returns 0.
verify() {
	local m=$1 name=$2 expect=$3
	shift 3
	local dir="$work/$name" rc=0 verdict ok=ok
	local -a cf=("${cflags[@]}") pf=("${panflags[@]}")
	if [ "$expect" = fail ]; then
		# look for the shortest counterexample: it reads better
		cf=(-O0 -w -DSAFETY -DMEMLIM=3000 -DREACH)
		pf=(-m100000 -w22 -i)
	fi
	cp "$here/$m.pml" "$dir/$m.pml"
	if ! (cd "$dir" && spin -a "$@" "$m.pml" >spin-a.out 2>&1 &&
		"${CC:-gcc}" "${cf[@]}" -o pan pan.c >cc.out 2>&1); then
		{
			echo "$name: building the verifier failed:"
			cat "$dir/spin-a.out" "$dir/cc.out" 2>/dev/null || true
		} >"$dir/report"
		echo bad >"$dir/status"
		return 0
	fi
	(cd "$dir" && ./pan "${pf[@]}" >pan.out 2>&1) || rc=$?

	local out="$dir/pan.out"
	local errors stored trans depth secs mem
	errors=$(field errors "$out")
	stored=$(field stored "$out")
	trans=$(field trans "$out")
	depth=$(field depth "$out")
	secs=$(field time "$out")
	mem=$(field mem "$out")
	: "${errors:=?}" "${stored:=?}" "${trans:=?}" "${depth:=?}" "${secs:=0}" "${mem:=?}"

	if [ "$errors" = "?" ]; then
		verdict="BROKEN(pan rc=$rc)"; ok=bad
	elif [ "$expect" = fail ]; then
		# any error found will do; the search may stop early
		if [ "$errors" != 0 ] && [ -s "$dir/$m.pml.trail" ]; then
			verdict=caught
		else
			verdict="MISSED(model blind)"; ok=bad
		fi
	elif [ "$errors" != 0 ]; then
		verdict=FAILED; ok=bad
	elif grep -q "max search depth too small" "$out"; then
		verdict="INCOMPLETE(depth)"; ok=bad
	elif grep -qi "out of memory\|MEMLIM bound\|Search not completed" "$out"; then
		verdict="INCOMPLETE(memory)"; ok=bad
	else
		verdict=verified
	fi

	{
		printf '%-22s expect=%-4s %-10s errors=%-3s states=%-9s transitions=%-9s depth=%-4s time=%ss mem=%sMB\n' \
			"$name" "$expect" "$verdict" "$errors" "$stored" "$trans" "$depth" "$secs" "$mem"
		printf '    spin -a %s\n' "${*:-(defaults)}"
		if [ "$errors" != 0 ] && [ "$errors" != "?" ]; then
			# what failed, and the (shortest found) counterexample
			grep -m1 '^pan:1:' "$out" | sed 's/^/    /' || true
			sed -n 's/^pan: reducing search depth to \([0-9]*\).*/    shortest counterexample found: depth \1 (pan -i)/p' \
				"$out" | tail -1
			if [ -s "$dir/$m.pml.trail" ]; then
				(cd "$dir" && spin -t "$@" "$m.pml" 2>&1) |
					sed -n 's/^ *MSC: /      /p' || true
			fi
		fi
	} >"$dir/report"
	echo "$ok" >"$dir/status"
	return 0
}

# run NAME EXPECT SPIN-DEFINES...: start a verification of $model, at most
# jobs_max at a time
run() {
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n || true
	done
	mkdir -p "$work/$1"
	names+=("$1")
	verify "$model" "$@" &
}

echo "spin models: ${models[*]/%/.pml} in $here ($mode run, $jobs_max jobs)"
SECONDS=0

# ======== unzip.pml: one family unzipped after an expansion ==================
model=unzip

# ---- the correct model: must verify with 0 errors --------------------------
# (c-head-to-next*: the remover as src/table/table.c implements it, see
# HEAD_TO_NEXT in unzip.pml)
if [ "$mode" = long ]; then
	run correct-6n-1rm   pass -DNN=6 -DMINLEN=2 -DNREMOVALS=1
	run correct-5n-2rm   pass -DNN=5 -DMINLEN=2 -DNREMOVALS=2
	run headlast-5n-2rm  pass -DNN=5 -DMINLEN=2 -DNREMOVALS=2 -DREDIRECT_HEAD_LAST
	run correct-defaults pass                  # 5 nodes, 1 removal, 2 readers x 2 lookups
	run correct-6n-2rm-1rd pass -DNN=6 -DMINLEN=2 -DNREMOVALS=2 -DNREADERS=1 -DNLOOKUPS=3
	run c-head-to-next-5n-2rm pass -DNN=5 -DMINLEN=2 -DNREMOVALS=2 -DHEAD_TO_NEXT
	run c-insert-5n-1rd  pass -DNN=5 -DMINLEN=2 -DNINSERTS=1 -DNREADERS=1 -DHEAD_TO_NEXT
	run insert2-4n       pass -DNN=4 -DMINLEN=2 -DNINSERTS=2 -DNREADERS=1
	# not a bug in the model (see INSERT_PAST_PREFIX in unzip.pml)
	run past-prefix-4n-1rd pass -DNN=4 -DMINLEN=2 -DNINSERTS=1 -DNREADERS=1 -DINSERT_PAST_PREFIX
else
	run correct-5n       pass -DNN=5 -DNREMOVALS=1 -DNLOOKUPS=1
	run correct-4n-2rm   pass -DNN=4 -DMINLEN=2 -DNREMOVALS=2 -DNLOOKUPS=1
	run headlast-4n-2rm  pass -DNN=4 -DMINLEN=2 -DNREMOVALS=2 -DNLOOKUPS=1 -DREDIRECT_HEAD_LAST
	run correct-6n-1rd   pass -DNN=6 -DMINLEN=2 -DNREMOVALS=1 -DNREADERS=1
	run c-head-to-next   pass -DNN=4 -DMINLEN=2 -DNREMOVALS=2 -DNLOOKUPS=1 -DHEAD_TO_NEXT
	# an insertion anywhere in a clean prefix, at any moment (NINSERTS)
	run insert-4n-1rd    pass -DNN=4 -DNINSERTS=1 -DNREADERS=1
	run c-insert-4n-1rd  pass -DNN=4 -DMINLEN=2 -DNINSERTS=1 -DNREADERS=1 -DHEAD_TO_NEXT
	run insert-3n-2rd    pass -DNN=3 -DNINSERTS=1 -DNLOOKUPS=1
fi

# ---- negative controls: each must be caught --------------------------------
# The first is the algorithm as originally specified (no grace period after
# a removal moved a head past foreign nodes): a real bug, see THE HEAD-SKIP
# HAZARD in unzip.pml.  The others run without the structural-invariant
# asserts, so a reader itself has to run into the damage (P1 or P2).
run as-specified       fail -DNN=4 -DGP_AFTER_HEAD_SKIP=0
run no-gp-between      fail -DNN=4 -DGP_BETWEEN_PATCHES=0 -DCHECK_INVARIANTS=0
run first-pred-only    fail -DNN=4 -DBUG_FIRST_PRED -DCHECK_INVARIANTS=0
run stop-at-foreign    fail -DNN=4 -DBUG_STOP_AT_FOREIGN -DCHECK_INVARIANTS=0
run reclaim-without-gp fail -DNN=4 -DBUG_NO_GP_RECLAIM -DCHECK_INVARIANTS=0
# the fix with its flag cleared after the grace period instead of before
run flag-cleared-late  fail -DNN=4 -DNREMOVALS=2 -DNLOOKUPS=1 -DBUG_CLEAR_FLAG_LATE
# insertions: N published before N->next is set; N linked into the other
# bucket's clean prefix
run insert-publish-first fail -DNN=3 -DNINSERTS=1 -DBUG_INSERT_PUBLISH_FIRST -DCHECK_INVARIANTS=0
run insert-other-prefix  fail -DNN=3 -DNINSERTS=1 -DBUG_INSERT_OTHER_PREFIX -DCHECK_INVARIANTS=0
# the unzipper stops after any patch, not only after one that left the
# family clean: a removal at rest misses a pointer into the zipped rest of
# the chain, and a reader reaches the reclaimed node
run last-patch-early     fail -DNN=4 -DBUG_LAST_PATCH_EARLY -DCHECK_INVARIANTS=0

# ======== rehash.pml: the healing rehash with a new seed =====================
model=rehash
# ---- the correct model (with the stale-walk fix, see rehash.pml) -----------
# lookups, an iteration, duplicate walks, each against updates of every
# kind (NB_ANY: every new bucket of the three nodes)
if [ "$mode" = long ]; then
	run rh-lookups-2upd-nb pass -DNB_ANY -DNUPD=2
	run rh-lookups-2x2     pass -DNLOOKUPS=2 -DNUPD=2
	run rh-iter-reader     pass -DITER
	run rh-iter-2upd       pass -DITER -DREADER=0 -DNUPD=2
	run rh-iter-nb         pass -DITER -DREADER=0 -DNB_ANY
	run rh-walk-2upd       pass -DWALK -DDUP -DDUP2 -DNUPD=2
	run rh-walk-2upd-nb    pass -DWALK -DDUP -DNUPD=2 -DNB_ANY
else
	run rh-lookups-nb      pass -DNB_ANY
	run rh-iter            pass -DITER -DREADER=0
fi
run rh-walk-dup-nb     pass -DWALK -DDUP -DDUP2 -DNB_ANY
# two removals or replacements: where the design as first written fails
run rh-walk-2rm        pass -DWALK -DDUP -DNUPD=2 -DOPS=6

# ---- negative controls: each must be caught --------------------------------
# The design as first written (doc/DESIGN.md section 12): a walk standing on
# a member marked before the relink resumes along its stale next
run rh-as-specified    fail -DWALK -DDUP -DOPS=4 -DSTALE_WALK_FIX=0
run rh-as-spec-freed   fail -DWALK -DNUPD=2 -DOPS=2 -DSTALE_WALK_FIX=0
# the wrong variants the subsection lists
run rh-no-gp1          fail -DNUPD=0 -DNO_GP1
run rh-no-gp2          fail -DNUPD=0 -DNO_GP2
run rh-early-cookie    fail -DNUPD=0 -DEARLY_COOKIE
run rh-insert-into-old fail -DOPS=1 -DINSERT_INTO_OLD
run rh-no-recheck      fail -DOPS=1 -DNO_RECHECK
run rh-members-in-mid  fail -DITER -DREADER=0 -DNUPD=0 -DMEMBERS_IN_MID
run rh-mark-before-link fail -DOPS=4 -DMARK_BEFORE_LINK
run rh-no-mark         fail -DREADER=0 -DOPS=2 -DNO_MARK
run rh-mid-before-members fail -DWALK -DDUP -DOPS=1 -DMID_BEFORE_MEMBERS
# and two of the model's: the walk's hash taken from the array, not obj;
# the fix's MID and SET freed without their grace period
run rh-next-by-seed    fail -DWALK -DDUP2 -DOPS=2 -DNEXT_BY_SEED
run rh-no-gp3          fail -DWALK -DDUP -DOPS=1 -DNO_GP3

wait || true

status=0
for name in "${names[@]}"; do
	cat "$work/$name/report" 2>/dev/null || echo "$name: no report"
	[ "$(cat "$work/$name/status" 2>/dev/null)" = ok ] || status=1
done

if [ "$status" = 0 ]; then
	echo "run-spin.sh: OK in ${SECONDS}s (${#names[@]} runs: correct model verified, every negative control caught)"
else
	echo "run-spin.sh: FAILED in ${SECONDS}s (see above)" >&2
fi
exit "$status"
