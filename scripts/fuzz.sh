#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make fuzz: each libFuzzer target of tests/fuzz/ for a while, one after
# another, under AddressSanitizer and UndefinedBehaviorSanitizer.
#
# usage: fuzz.sh --build DIR [--seconds N] [--replay PROGRAM] TARGET...
#   --build DIR      where the libFuzzer binaries are (DIR/tests/fuzz/fuzz_TARGET);
#                    the working corpus goes to DIR/corpus/TARGET, artifacts
#                    to DIR/artifacts/TARGET
#   --seconds N      fuzzing time per target (default 60); 0 runs every input
#                    of the checked-in corpus and crashers once, no fuzzing
#   --replay PROG    no libFuzzer here: run PROG (fz-replay) over the
#                    checked-in corpus and crashers instead
#
# Every target starts from tests/fuzz/corpus/TARGET and the crashers kept in
# tests/fuzz/crashers/TARGET, so an old finding that came back fails first.
# The limits are the ones an input must stay within: 10 s a run (-timeout),
# no single allocation of 64 MiB or more (-malloc_limit_mb); leaks are
# reported by LeakSanitizer after each input (libFuzzer's -detect_leaks).
# The RSS limit is loose (FUZZ_RSS_MB, default 2048) because ASan's shadow
# and quarantine count in it.  A crash, leak, timeout or oversized
# allocation is copied to tests/fuzz/crashers/TARGET/ (to be fixed in the
# engine; make check then replays it) and the target counts as failed.
# Ends with a line per target (executions, exec/s, outcome) and
# "N passed, N failed"; exit status 1 if any target failed.

set -uo pipefail

build=build/fuzz
secs=60
replay=""
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--replay) replay=$2; shift 2 ;;
	-h|--help) sed -n '3,27p' "$0"; exit 0 ;;
	-*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
case "$secs" in ''|*[!0-9]*) echo "fuzz: bad FUZZ_SECONDS '$secs'" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "fuzz: no targets" >&2; exit 2; }

src=tests/fuzz
rss_mb=${FUZZ_RSS_MB:-2048}

if [ -n "$replay" ]; then
	echo "fuzz: clang's libFuzzer is not available: replaying the corpus and crashers only"
	exec "$replay" "$src"
fi

passed=0
failed=0
summary=()
for t in "$@"; do
	bin=$build/tests/fuzz/fuzz_$t
	if [ ! -x "$bin" ]; then
		echo "fuzz: $bin is not built" >&2
		exit 2
	fi
	work=$build/corpus/$t
	art=$build/artifacts/$t
	log=$build/logs/$t.log
	mkdir -p "$work" "$art" "$(dirname "$log")"
	rm -f "$art"/*
	seeds=("$src/corpus/$t")
	[ -d "$src/crashers/$t" ] && seeds+=("$src/crashers/$t")
	if [ "$secs" = 0 ]; then
		# every checked-in input once, nothing new
		echo "== $t: replaying ${seeds[*]}"
		files=()
		for d in "${seeds[@]}"; do
			for f in "$d"/*; do [ -f "$f" ] && files+=("$f"); done
		done
		args=(-runs=1 "${files[@]}")
	else
		echo "== $t: fuzzing for $secs s from ${seeds[*]}"
		args=(-max_total_time="$secs" "$work" "${seeds[@]}")
	fi
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		"$bin" -timeout=10 -malloc_limit_mb=64 -rss_limit_mb="$rss_mb" \
		-print_final_stats=1 -artifact_prefix="$art/" "${args[@]}" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	found=$(find "$art" -type f | sort)
	if [ $rc = 0 ] && [ -z "$found" ]; then
		outcome=ok
		passed=$((passed + 1))
	else
		outcome="FAILED (exit $rc)"
		failed=$((failed + 1))
		if [ -n "$found" ]; then
			mkdir -p "$src/crashers/$t"
			for f in $found; do
				cp "$f" "$src/crashers/$t/"
				outcome="$outcome, kept $src/crashers/$t/$(basename "$f")"
			done
		fi
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|fuzz: engine invariant)' "$log" |
			head -5 | sed "s/^/  $t: /"
		echo "  $t: the whole report is in $log"
	fi
	line=$(printf '%-9s %10s execs %7s exec/s  %s' "$t" "${execs:-?}" "${rate:-?}" "$outcome")
	echo "$line"
	summary+=("$line")
done

echo "== fuzz: ${secs} s per target"
printf '%s\n' "${summary[@]}"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
