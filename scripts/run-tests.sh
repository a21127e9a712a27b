#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run swapext test programs, one line of result per program, and close with
# exactly one line "N passed, N failed" (the totals).
#
# usage: run-tests.sh [--logdir DIR] [--timeout SECONDS] [--jobs N]
#                     [--filter 'WORD...'] [--] PROGRAM...
#
# How a program's result is read from its output (stdout and stderr, saved in
# DIR/<suite>/<name>.log):
#   - a line "N passed, N failed" (optionally ", N skipped" after it and one
#     "word:" before it), alone on its line: the LAST such line is the result;
#   - otherwise the cmocka summaries, summed over every group the program ran:
#     "[  PASSED  ] N test(s).", "[  FAILED  ] N test(s), listed below:",
#     "[  SKIPPED ] N test(s), listed below:", and a failed group setup or
#     teardown ("[  FAILED  ] GROUP SETUP") counts as one failure.
# A program that prints neither counts as 1 failed.  A program that is killed
# by a signal or the timeout counts 1 failed more than its summary says; one
# that exits non-zero while its summary shows no failure (a sanitizer report
# at exit, say) also counts 1 failed.
#
# Every program runs from the current directory with stdin from /dev/null,
# TMPDIR and SX_TEST_TMPDIR set to a private scratch directory (removed when
# the program passes), and the caller's SX_* variables (SX_CRASH_LEVEL,
# SX_TEST_SEED, SX_TOOL, ...).  Exit status: 0 when nothing failed.

set -uo pipefail

logdir=build/test-logs
timeout_s=${SX_TEST_TIMEOUT:-900}
jobs=1
filter=""

while [ $# -gt 0 ]; do
	case "$1" in
	--logdir) logdir=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--filter) filter=$2; shift 2 ;;
	--) shift; break ;;
	-h|--help) sed -n '3,26p' "$0"; exit 0 ;;
	-*) echo "run-tests: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done

case "$timeout_s" in ''|*[!0-9]*) echo "run-tests: bad --timeout '$timeout_s'" >&2; exit 2 ;; esac
case "$jobs" in ''|*[!0-9]*|0) echo "run-tests: bad --jobs '$jobs'" >&2; exit 2 ;; esac

# Select the programs (a word of the filter must occur in the program's label).
progs=()
for p in "$@"; do
	if [ -n "$filter" ]; then
		label=$(basename "$(dirname "$p")")/$(basename "$p")
		keep=0
		for w in $filter; do
			case "$label" in *"$w"*) keep=1 ;; esac
		done
		[ $keep = 1 ] || continue
	fi
	progs+=("$p")
done

mkdir -p "$logdir"
resdir="$logdir/.results"
rm -rf "$resdir"
mkdir -p "$resdir"

now_ns() { date +%s%N; }

# Parse a log: prints "passed failed skipped source".
parse_log() {
	awk '
	function num(s) { if (match(s, /[0-9]+/)) return substr(s, RSTART, RLENGTH) + 0; return 0 }
	{ sub(/\r$/, "") }
	/^\[  PASSED  \] [0-9]+ test\(s\)\./			{ cp += num(substr($0, 13)); cm = 1; next }
	/^\[  FAILED  \] [0-9]+ test\(s\), listed below:/	{ cf += num(substr($0, 13)); cm = 1; next }
	/^\[  SKIPPED \] [0-9]+ test\(s\), listed below:/	{ cs += num(substr($0, 13)); cm = 1; next }
	/^\[  FAILED  \] GROUP (SETUP|TEARDOWN)/		{ cf += 1; cm = 1; next }
	/^([A-Za-z][A-Za-z0-9_.-]*: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?[ \t]*$/ {
		line = $0
		sub(/^[A-Za-z][A-Za-z0-9_.-]*: /, "", line)
		split(line, f, /[ ,]+/)
		pp = f[1] + 0; pf = f[3] + 0; ps = (f[6] == "skipped") ? f[5] + 0 : 0
		pm = 1
	}
	END {
		if (pm)		printf "%d %d %d plain\n", pp, pf, ps
		else if (cm)	printf "%d %d %d cmocka\n", cp, cf, cs
		else		printf "0 0 0 none\n"
	}' "$1"
}

# Run one program; writes "$resdir/<idx>" with: passed failed skipped secs verdict...
run_one() {
	local idx=$1 prog=$2
	local label suite name log tmp start end rc secs
	suite=$(basename "$(dirname "$prog")")
	name=$(basename "$prog")
	label="$suite/$name"
	log="$logdir/$suite/$name.log"
	tmp="$logdir/tmp/$suite/$name"
	mkdir -p "$logdir/$suite"
	rm -rf "$tmp"
	mkdir -p "$tmp"

	start=$(now_ns)
	if [ ! -x "$prog" ]; then
		echo "run-tests: $prog: not found or not executable" > "$log"
		rc=127
	else
		# The subshell keeps bash's "Segmentation fault" notice out of
		# our output: the verdict line says it.
		(
			TMPDIR="$tmp" SX_TEST_TMPDIR="$tmp" CMOCKA_MESSAGE_OUTPUT=STDOUT \
				timeout -k 10 "$timeout_s" "$prog" < /dev/null > "$log" 2>&1
			exit $?
		) 2> /dev/null
		rc=$?
	fi
	end=$(now_ns)
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')

	local passed failed skipped src note=""
	read -r passed failed skipped src < <(parse_log "$log")

	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		note="timeout after ${timeout_s}s (exit $rc)"
		failed=$((failed + 1))
	elif [ "$rc" -gt 128 ] && [ "$rc" != 127 ]; then
		note="killed by signal $((rc - 128))"
		failed=$((failed + 1))
	elif [ "$src" = none ]; then
		if [ "$rc" = 0 ]; then
			note="no result line (print a cmocka summary or 'N passed, N failed')"
		else
			note="exit status $rc, no result line"
		fi
		failed=1
	elif [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
		note="exit status $rc after a clean summary"
		failed=1
	fi

	printf '%s %s %s %s %s %s %s\n' "$passed" "$failed" "$skipped" "$secs" \
		"$rc" "$label" "$note" > "$resdir/$idx"
	if [ "$failed" = 0 ]; then
		rm -rf "$tmp"
		rmdir -p "$(dirname "$tmp")" 2> /dev/null || true
	fi
}

# Print one program's result line (and the tail of its log on failure).
report_one() {
	local idx=$1 passed failed skipped secs rc label note log extra=""
	read -r passed failed skipped secs rc label note < "$resdir/$idx"
	log="$logdir/$label.log"
	[ "$skipped" != 0 ] && extra=", $skipped skipped"
	if [ "$failed" = 0 ]; then
		printf 'ok    %-40s %4d ok%s  [%ss]\n' "$label" "$passed" "$extra" "$secs"
	else
		printf 'FAIL  %-40s %4d ok, %d bad%s  [%ss]%s\n' "$label" "$passed" \
			"$failed" "$extra" "$secs" "${note:+  $note}"
		echo "      log: $log (last lines below)"
		tail -n 25 "$log" | sed 's/^/      | /'
	fi
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
	total_skipped=$((total_skipped + skipped))
	[ "$failed" = 0 ] || failed_progs+=("$label")
}

total_passed=0
total_failed=0
total_skipped=0
failed_progs=()
t0=$(now_ns)

echo "run-tests: ${#progs[@]} program(s), timeout ${timeout_s}s, jobs $jobs," \
	"SX_CRASH_LEVEL=${SX_CRASH_LEVEL:-}, logs in $logdir/"

if [ ${#progs[@]} = 0 ]; then
	echo "run-tests: warning: no test programs to run"
fi

if [ "$jobs" = 1 ]; then
	for i in "${!progs[@]}"; do
		run_one "$i" "${progs[$i]}"
		report_one "$i"
	done
else
	running=0
	for i in "${!progs[@]}"; do
		if [ $running -ge "$jobs" ]; then
			wait -n
			running=$((running - 1))
		fi
		run_one "$i" "${progs[$i]}" &
		running=$((running + 1))
	done
	wait
	for i in "${!progs[@]}"; do
		report_one "$i"
	done
fi

t1=$(now_ns)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')

{
	echo "programs: ${#progs[@]}, failed programs: ${#failed_progs[@]}${failed_progs[*]:+ (${failed_progs[*]})}"
	[ "$total_skipped" = 0 ] || echo "skipped tests: $total_skipped"
	echo "wall time: ${wall}s"
	echo "$total_passed passed, $total_failed failed"
} | tee "$logdir/summary.txt"

rm -rf "$resdir"
[ "$total_failed" = 0 ]
