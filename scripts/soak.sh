#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make soak: the randomized tests with fresh seeds until the time is up.
#
# usage: soak.sh BUILD_DIR
#   SOAK_SECONDS  how long to keep starting runs (default 600)
#   SOAK_JOBS     runs at once (default: the CPUs online)
#
# make check runs each randomized test on fixed seeds (the ones that ever
# failed among them).  This runs them on new ones: fsx (100,000 operations a
# seed, SX_FSX_OPS to change), the seeded crash tests (crash_clone,
# crash_data, crash_journal, crash_names; every write of the workload cut in
# each mode), the random unit tests (test_bmap, test_btree) and the thread
# stress (threads: its three phases, forces in flight among them), and,
# where `make kcheck` can run, power cuts of concurrent atomic writers in
# the kernel module (kcuts: a guest boot of tests/kmod/kcheck.sh with
# KCHECK_SEED, eight cuts whose points and cache losses come from the
# seed), in turn, each with a seed from /dev/urandom that is printed
# before it runs.  A run
# that fails (exit status, or over SOAK_RUN_TIMEOUT seconds, default 900) keeps
# its log in BUILD_DIR/soak/, fsx its image there too (SX_FSX_SAVE), and
# the seed goes to BUILD_DIR/soak/failed with the command that replays it
# (that file keeps the failures of every soak until it is removed).
# Ends with "soak: N runs ... N failed"; exit status 1 if any failed.

set -uo pipefail

build=${1:-build}
secs=${SOAK_SECONDS:-600}
jobs=${SOAK_JOBS:-$(nproc 2>/dev/null || echo 2)}
run_timeout=${SOAK_RUN_TIMEOUT:-900}
dir=$build/soak

case "$secs" in ''|*[!0-9]*) echo "soak: bad SOAK_SECONDS '$secs'" >&2; exit 2 ;; esac
case "$jobs" in ''|*[!0-9]*|0) echo "soak: bad SOAK_JOBS '$jobs'" >&2; exit 2 ;; esac

progs=(
	tests/stress/fsx
	tests/crash/crash_clone
	tests/crash/crash_data
	tests/crash/crash_journal
	tests/crash/crash_names
	tests/unit/test_bmap
	tests/unit/test_btree
	tests/stress/threads
)
for p in "${progs[@]}"; do
	if [ ! -x "$build/$p" ]; then
		echo "soak: $build/$p is not built (make tests)" >&2
		exit 2
	fi
done
if bash tests/kmod/kcheck.sh --probe "$build" "$build/swapext" > /dev/null 2>&1; then
	progs+=(kcuts)
else
	echo "soak: no kernel cuts: $(bash tests/kmod/kcheck.sh --probe "$build" "$build/swapext" 2>&1 | tail -n 1)"
fi

mkdir -p "$dir"
: > "$dir/results"
deadline=$(( $(date +%s) + secs ))
echo "soak: fresh seeds for ${secs} s, $jobs at a time; failures are kept in $dir/"

new_seed() {
	local s
	s=$(od -An -N8 -tu8 /dev/urandom | tr -d ' \n')
	[ "$s" = 0 ] && s=1
	echo "$s"
}

# What a passing run did, from its log: fsx's operations, a crash test's points.
work_of() {
	local log=$1
	awk '
	/^fsx: seed [0-9]+ passed: [0-9]+ operations/ { ops += $5 }
	/^crash points: [0-9]+/ { pts += $3 }
	/^KCHECK PASS seeded-cut/ { pts++ }
	END { printf "%d %d", ops, pts }' "$log"
}

# One worker: runs the programs in turn, starting at a different one per worker.
worker() {
	local id=$1 i=$1 p name seed log t0 t1 rc work
	while [ "$(date +%s)" -lt "$deadline" ]; do
		p=${progs[$(( i % ${#progs[@]} ))]}
		i=$(( i + 1 ))
		name=$(basename "$p")
		seed=$(new_seed)
		log=$dir/$name-$seed.log
		echo "soak: [$id] $name seed $seed"
		t0=$(date +%s)
		if [ "$p" = kcuts ]; then
			replay="KCHECK_SEED=$seed bash tests/kmod/kcheck.sh $dir/kcuts-$id $build/swapext"
			KCHECK_SEED=$seed timeout "$run_timeout" bash tests/kmod/kcheck.sh \
				"$dir/kcuts-$id" "$build/swapext" < /dev/null > "$log" 2>&1
		else
			replay="SX_TEST_SEED=$seed $build/$p"
			SX_TEST_SEED=$seed SX_FSX_SAVE=$dir/$name-$seed.img SX_TEST_TMPDIR=$dir \
				timeout "$run_timeout" "$build/$p" < /dev/null > "$log" 2>&1
		fi
		rc=$?
		t1=$(date +%s)
		if [ $rc = 0 ]; then
			work=$(work_of "$log")
			echo "$name $seed pass $work" >> "$dir/results"
			rm -f "$log" "$dir/$name-$seed.img" "$dir/kcuts-$id/kcheck/disk.img"
		else
			echo "$name $seed FAIL 0 0" >> "$dir/results"
			echo "$replay    # exit $rc, log $log" >> "$dir/failed"
			echo "soak: [$id] $name seed $seed FAILED (exit $rc after $(( t1 - t0 )) s); log $log"
			tail -n 5 "$log" | sed 's/^/soak:    /'
		fi
	done
}

pids=()
for ((j = 0; j < jobs; j++)); do
	worker "$j" &
	pids+=($!)
done
for pid in "${pids[@]}"; do
	wait "$pid"
done

awk '
{ runs[$1]++; if ($3 == "pass") { ops += $4; pts += $5 } else { failed++; bad[$1]++ } }
END {
	n = 0
	for (p in runs) { n += runs[p]; line = line sprintf(" %s %d%s;", p, runs[p], bad[p] ? " (" bad[p] " failed)" : "") }
	printf "soak: seeds by program:%s\n", line
	printf "soak: fsx operations %d, crash points %d\n", ops, pts
	printf "soak: %d runs, %d passed, %d failed\n", n, n - failed, failed
}' "$dir/results"
if grep -q ' FAIL ' "$dir/results"; then
	echo "soak: replay the failures with (from $dir/failed):"
	grep -F -f <(awk '$3 == "FAIL" { print "_SEED=" $2 " " }' "$dir/results") \
		"$dir/failed" | sed 's/^/  /'
	exit 1
fi
exit 0
