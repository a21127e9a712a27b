#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Interleaved A/B runs of two builds of a benchmark, for "what a change
# bought" on a noisy machine: this VM's speed drifts by 10-20% within
# minutes, so two builds timed one after the other compare the minutes, not
# the builds.  Each pair runs A and B back to back, the first of the two
# alternating from pair to pair; the figure is the median of the per-pair
# ratios B/A, with how many pairs B won and the sign test's two-sided p.
# The test takes the pairs as independent, and the drift is not: a round
# that looks decisive can be followed by one that is not, so repeat it.
#
# usage: ab.sh [-n PAIRS] [-k KEY] A B [ARG...]
#
#   A, B   the two programs (copy each build's binary somewhere first)
#   ARG    their arguments; an ARG "{}" becomes "a" or "b", so that each
#          build gets its own image (e.g. /tmp/ab-{}.img)
#   KEY    the figure: KEY=VALUE on the program's RESULT line (or, if it
#          prints none, its first line with KEY=); default ops_s, or
#          extents_s where the program prints no ops_s; higher is better
#
# e.g. scripts/ab.sh -n 12 /tmp/a/bench_update /tmp/b/bench_update /tmp/ab-{}.img 2000 8 atomic

set -euo pipefail

die() { echo "ab: $*" >&2; exit 2; }

pairs=10 key=""
while getopts "n:k:" o; do
	case $o in
	n) pairs=$OPTARG ;;
	k) key=$OPTARG ;;
	*) die "usage: ab.sh [-n PAIRS] [-k KEY] A B [ARG...]" ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || die "usage: ab.sh [-n PAIRS] [-k KEY] A B [ARG...]"
case $pairs in '' | *[!0-9]* | 0) die "PAIRS must be a positive number: $pairs" ;; esac
a=$1 b=$2
shift 2
for p in "$a" "$b"; do
	[ -x "$p" ] || die "$p is not an executable program"
done

# run WHICH PROG: one run, its figure on stdout
run() {
	local which=$1 prog=$2 out line arg k v
	local args=()
	for arg in "${ARGS[@]}"; do
		args+=("${arg//\{\}/$which}")
	done
	out=$("$prog" "${args[@]}" 2>&1) || { echo "$out" >&2; die "$prog failed"; }
	line=$(grep -m1 '^RESULT ' <<< "$out" || true)
	[ -n "$line" ] || line=$out
	for k in ${key:-ops_s extents_s}; do
		if v=$(grep -o "\b$k=[0-9.eE+-]*" <<< "$line" | head -n1) && [ -n "$v" ]; then
			echo "${v#*=}"
			return
		fi
	done
	echo "$out" >&2
	die "$prog printed no ${key:-ops_s or extents_s}"
}

ARGS=("$@")
results=()
for ((i = 1; i <= pairs; i++)); do
	if ((i % 2)); then
		va=$(run a "$a")
		vb=$(run b "$b")
	else
		vb=$(run b "$b")
		va=$(run a "$a")
	fi
	echo "pair $i: A $va  B $vb"
	results+=("$va $vb")
done

printf '%s\n' "${results[@]}" | awk -v n="$pairs" '
function median(x, k,    i, j, t) {
	for (i = 2; i <= k; i++)
		for (j = i; j > 1 && x[j - 1] > x[j]; j--) {
			t = x[j]; x[j] = x[j - 1]; x[j - 1] = t
		}
	return (k % 2) ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2
}
{
	a[NR] = $1; b[NR] = $2
	r[NR] = ($1 > 0) ? $2 / $1 : 0
	if ($2 > $1) wins++
}
END {
	# sign test: the chance of a split at least this uneven if A and B were the same
	m = (wins > n - wins) ? wins : n - wins
	c = 1; p = 0
	for (k = 0; k <= n; k++) {
		if (k > 0) c = c * (n - k + 1) / k
		if (k >= m) p += c
	}
	p = 2 * p / 2 ^ n
	if (p > 1) p = 1
	printf "median A %.6g, median B %.6g; B/A per pair: median %.3f; B won %d of %d pairs (sign test p = %.3f)\n",
	       median(a, n), median(b, n), median(r, n), wins, n, p
}'
