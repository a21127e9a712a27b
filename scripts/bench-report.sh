#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The tables and plots of make bench, from the raw.csv that scripts/bench.sh
# wrote: summary.csv (median, min and max of each figure over the runs),
# results.md (the issue 17 ratios, each with its target and whether this
# run meets it) and, when gnuplot is installed, three PNG plots.  Fails if a
# workload that was not skipped (skips.txt) has fewer figures than runs.
#
# usage: bench-report.sh OUT full|quick "N..." "T..." RUNS SWAP_RUNS OPS

set -euo pipefail

die() { echo "bench-report: $*" >&2; exit 1; }

[ $# -eq 7 ] || die "usage: bench-report.sh OUT full|quick N... T... RUNS SWAP_RUNS OPS"
out=$1 mode=$2 ns=$3 threads=$4 runs=$5 swap_runs=$6 ops=$7
raw=$out/raw.csv
sum=$out/summary.csv
md=$out/results.md
skips=$out/skips.txt
[ -f "$raw" ] || die "no $raw"

# ---------------------------------------------------------------- summary

# Sorted by figure, then by value, so each figure's values arrive in order.
{
	echo "workload,impl,fs,param,metric,median,min,max,runs"
	tail -n +2 "$raw" | cut -d, -f1-4,6,7 | sort -t, -k1,5 -k6,6g |
	awk -F, '
	function flush() {
		if (!k) return
		med = (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
		printf "%s,%.6g,%.6g,%.6g,%d\n", prev, med, v[1], v[k], k
	}
	{
		key = $1 "," $2 "," $3 "," $4 "," $5
		if (key != prev) { flush(); prev = key; k = 0 }
		v[++k] = $6
	}
	END { flush() }'
} > "$sum"

# get W I F P M: "median min max runs" of a figure, or nothing
get() {
	awk -F, -v k="$1,$2,$3,$4,$5" '$1 "," $2 "," $3 "," $4 "," $5 == k { print $6, $7, $8, $9 }' "$sum"
}

# skipped W I F P: the figure was skipped, and skips.txt says why
skipped() {
	[ -s "$skips" ] || return 1
	# a method the kernel lacks (the program said SKIP), or an N left out
	grep -q "^$1 $2 $3: method=" "$skips" && return 0
	grep -q "^$1 $2 $3: N=$4 " "$skips" && return 0
	[ "$3" = xfs ] || return 1
	grep -q "^$1 (every XFS peer)" "$skips" || grep -q "^$1 N=$4 (every XFS peer)" "$skips"
}

rootfs=$(awk -F, '$1 == "update" && $2 == "swapext" { print $3; exit }' "$sum")
[ -n "$rootfs" ] || die "no swapext update figure at all"

# ---------------------------------------------------------------- completeness

missing=""
need() {	# need W I F P M RUNS
	local g
	g=$(get "$1" "$2" "$3" "$4" "$5")
	if [ -z "$g" ]; then
		skipped "$1" "$2" "$3" "$4" || missing="$missing $1/$2/$3/$4;"
		return
	fi
	set -- "$@" $g
	[ "${10}" = "$6" ] || missing="$missing $1/$2/$3/$4 (${10} of $6 runs);"
}
need update swapext "$rootfs" 1 ops_s "$runs"
need update swapext-atomic "$rootfs" 1 ops_s "$runs"
for m in floor rename; do need update $m "$rootfs" 1 ops_s "$runs"; done
for m in exchange commit atomic floor rename; do need update $m xfs 1 ops_s "$runs"; done
for t in $threads; do
	need threads swapext "$rootfs" "$t" ops_s "$runs"
	need threads swapext-atomic "$rootfs" "$t" ops_s "$runs"
	need threads swapext-atomic-direct "$rootfs" "$t" ops_s "$runs"
	need threads floor "$rootfs" "$t" ops_s "$runs"
done
for n in $ns; do
	need swap swapext "$rootfs" "$n" extents_s "$swap_runs"
	need swap xfs xfs "$n" extents_s "$swap_runs"
	need recover swapext memory "$n" secs "$swap_runs"
done

# ---------------------------------------------------------------- helpers

# fig W I F P M FMT: "median (min-max)" in FMT, or "skipped"/"-"
fig() {
	local g f=$6
	g=$(get "$1" "$2" "$3" "$4" "$5")
	if [ -z "$g" ]; then
		if skipped "$1" "$2" "$3" "$4"; then echo "skipped"; else echo "-"; fi
		return
	fi
	set -- $g
	awk -v m="$1" -v lo="$2" -v hi="$3" -v f="$f" 'BEGIN { printf f " (" f "-" f ")", m, lo, hi }'
}

# med W I F P M: the median alone, or nothing
med() {
	local g
	g=$(get "$@")
	[ -n "$g" ] && echo "${g%% *}"
	return 0
}

# one W I F P M FMT: the median alone in FMT, or "-" (counters a run does not have are -1)
one() {
	local m
	m=$(med "$1" "$2" "$3" "$4" "$5")
	if [ -z "$m" ] || awk -v m="$m" 'BEGIN { exit !(m < 0) }'; then echo "-"; return; fi
	awk -v m="$m" -v f="$6" 'BEGIN { printf f, m }'
}

# ratio A B: A/B to two digits, or "-"
ratio() {
	if [ -z "$1" ] || [ -z "$2" ]; then echo "-"; return; fi
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'
}

# verdict A B BAR: "met" if A/B >= BAR, "NOT met" if not, "not measured" without figures
verdict() {
	if [ -z "$1" ] || [ -z "$2" ]; then echo "not measured"; return; fi
	awk -v a="$1" -v b="$2" -v bar="$3" 'BEGIN { print (b > 0 && a / b >= bar) ? "met" : "**NOT met**" }'
}

# ---------------------------------------------------------------- results.md

sx_ops=$(med update swapext "$rootfs" 1 ops_s)
sx_fl=$(med update swapext "$rootfs" 1 flushes_op)
aw_ops=$(med update swapext-atomic "$rootfs" 1 ops_s)

{
	echo "# make bench: swapext beside its peers"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), mode $mode, kernel $(uname -r), $(nproc) CPUs," \
	     "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo "swapext's image file and the floor and rename peers on the folder's $rootfs;" \
	     "XFS on a loop device backed by a file on that same $rootfs."
	echo "Each figure: median (min-max) of $runs runs ($swap_runs for swap and recovery);" \
	     "$ops updates per thread per run."
	echo
	echo "## Durable atomic 4 KiB update of a 1 MiB file (one thread)"
	echo
	echo "| method | fs | updates/s | device flushes/update | transactions/update | log bytes/update | target | sx_update vs it | | sx_atomic_write vs it | |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	row() {	# row LABEL IMPL FS BAR
		local m
		m=$(med update "$2" "$3" 1 ops_s)
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$3" \
			"$(fig update "$2" "$3" 1 ops_s '%.0f')" \
			"$(one update "$2" "$3" 1 flushes_op '%.2f')" \
			"$(one update "$2" "$3" 1 trans_op '%.1f')" \
			"$(one update "$2" "$3" 1 logbytes_op '%.0f')" \
			"${4:+>= ${4}x}" \
			"$(case $2 in swapext*) echo "" ;; *) ratio "$sx_ops" "$m" ;; esac)" \
			"$( [ -n "$4" ] && verdict "$sx_ops" "$m" "$4")" \
			"$(case $2 in swapext*) echo "" ;; *) ratio "$aw_ops" "$m" ;; esac)" \
			"$( [ -n "$4" ] && verdict "$aw_ops" "$m" "$4")"
	}
	row "swapext: sx_update_start, pwrite, commit, sx_fsync" swapext "$rootfs" ""
	row "swapext: sx_atomic_write (durable, no clone)" swapext-atomic "$rootfs" ""
	row "swapext: sx_atomic_write, blocks in place before the record (SX_ATOMIC_INPLACE)" \
		swapext-atomic-inplace "$rootfs" ""
	row "pwrite + fdatasync (the floor; not atomic)" floor "$rootfs" 0.8
	row "copy + fsync + rename + dir fsync" rename "$rootfs" 5
	row "XFS clone + write + EXCHANGE_RANGE(DSYNC)" exchange xfs 10
	row "XFS START_COMMIT + clone + write + COMMIT_RANGE(DSYNC)" commit xfs 10
	row "XFS pwritev2(RWF_ATOMIC, RWF_DSYNC), O_DIRECT" atomic xfs 1.5
	row "pwrite + fdatasync on XFS" floor xfs ""
	row "copy + fsync + rename + dir fsync on XFS" rename xfs ""
	echo
	fl_verdict() {
		[ -n "$1" ] && awk -v f="$1" 'BEGIN { print (f <= 1.0) ? "met" : "**NOT met**" }' ||
			echo "not measured"
	}
	aw_fl=$(med update swapext-atomic "$rootfs" 1 flushes_op)
	printf 'Device flushes per update (target: 1): sx_update %s (%s), sx_atomic_write %s (%s).\n' \
		"${sx_fl:--}" "$(fl_verdict "$sx_fl")" "${aw_fl:--}" "$(fl_verdict "$aw_fl")"
	printf 'sx_atomic_write: %s sx_update; carrying its blocks in the record: %s writing them in place first.\n' \
		"$(ratio "$aw_ops" "$sx_ops")" \
		"$(ratio "$aw_ops" "$(med update swapext-atomic-inplace "$rootfs" 1 ops_s)")"
	echo
	echo "## Atomic swap of two files of N single-block extents, durable"
	echo
	echo "| N | swapext extents/s | XFS exchange-range extents/s | swapext vs XFS | target (>= 10x at 100000) | swapext transactions/extent | XFS transactions/extent | swapext log bytes/extent | XFS log bytes/extent | swapext flushes | XFS device flushes | swapext peak RSS KiB |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	for n in $ns; do
		a=$(med swap swapext "$rootfs" "$n" extents_s)
		b=$(med swap xfs xfs "$n" extents_s)
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" \
			"$(fig swap swapext "$rootfs" "$n" extents_s '%.0f')" \
			"$(fig swap xfs xfs "$n" extents_s '%.0f')" "$(ratio "$a" "$b")" \
			"$([ "$n" = 100000 ] && verdict "$a" "$b" 10 || echo -)" \
			"$(one swap swapext "$rootfs" "$n" trans_ext '%.2f')" \
			"$(one swap xfs xfs "$n" trans_ext '%.2f')" \
			"$(one swap swapext "$rootfs" "$n" logbytes_ext '%.0f')" \
			"$(one swap xfs xfs "$n" logbytes_ext '%.0f')" \
			"$(one swap swapext "$rootfs" "$n" flushes '%.0f')" \
			"$(one swap xfs xfs "$n" flushes '%.0f')" \
			"$(fig swap swapext "$rootfs" "$n" maxrss_kb '%.0f')"
	done
	echo
	echo "## Recovery after a power cut halfway through the swap"
	echo
	echo "| N | mount (recovery) s | sync after it s | records replayed | intents finished | cut at write | of the swap's writes |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	for n in $ns; do
		printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$n" \
			"$(fig recover swapext memory "$n" secs '%.3f')" \
			"$(one recover swapext memory "$n" sync_secs '%.3f')" \
			"$(one recover swapext memory "$n" records '%.0f')" \
			"$(one recover swapext memory "$n" intents '%.0f')" \
			"$(one recover swapext memory "$n" cut_write '%.0f')" \
			"$(one recover swapext memory "$n" of_writes '%.0f')"
	done
	big=$(med recover swapext memory 1000000 secs)
	echo
	if [ -n "$big" ]; then
		printf 'Target: under 1 s at N = 1,000,000: %s (%.3f s).\n' \
			"$(awk -v s="$big" 'BEGIN { print (s < 1) ? "met" : "**NOT met**" }')" "$big"
	else
		echo "Target: under 1 s at N = 1,000,000: not measured in this run (BENCH_BIG=1)."
	fi
	echo
	echo "## T threads, each updating its own file"
	echo
	echo "| T | sx_update updates/s | vs T = 1 | flushes/update | sx_atomic_write/s | vs T = 1 | flushes/write | the same, O_DIRECT image, forces overlapping/s | vs T = 1 | flushes/write | pwrite + fdatasync/s ($rootfs) | vs T = 1 | its device flushes/write | sx_atomic_write vs it |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	s1=$(med threads swapext "$rootfs" 1 ops_s)
	a1=$(med threads swapext-atomic "$rootfs" 1 ops_s)
	d1=$(med threads swapext-atomic-direct "$rootfs" 1 ops_s)
	f1=$(med threads floor "$rootfs" 1 ops_s)
	for t in $threads; do
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" \
			"$(fig threads swapext "$rootfs" "$t" ops_s '%.0f')" \
			"$(ratio "$(med threads swapext "$rootfs" "$t" ops_s)" "$s1")" \
			"$(one threads swapext "$rootfs" "$t" flushes_op '%.2f')" \
			"$(fig threads swapext-atomic "$rootfs" "$t" ops_s '%.0f')" \
			"$(ratio "$(med threads swapext-atomic "$rootfs" "$t" ops_s)" "$a1")" \
			"$(one threads swapext-atomic "$rootfs" "$t" flushes_op '%.2f')" \
			"$(fig threads swapext-atomic-direct "$rootfs" "$t" ops_s '%.0f')" \
			"$(ratio "$(med threads swapext-atomic-direct "$rootfs" "$t" ops_s)" "$d1")" \
			"$(one threads swapext-atomic-direct "$rootfs" "$t" flushes_op '%.2f')" \
			"$(fig threads floor "$rootfs" "$t" ops_s '%.0f')" \
			"$(ratio "$(med threads floor "$rootfs" "$t" ops_s)" "$f1")" \
			"$(one threads floor "$rootfs" "$t" flushes_op '%.2f')" \
			"$(ratio "$(med threads swapext-atomic "$rootfs" "$t" ops_s)" \
				 "$(med threads floor "$rootfs" "$t" ops_s)")"
	done
	echo
	printf 'Target: T = 8 at least 4x T = 1: sx_update %s; sx_atomic_write %s; on the O_DIRECT image with forces overlapping %s.\n' \
		"$(verdict "$(med threads swapext "$rootfs" 8 ops_s)" "$s1" 4)" \
		"$(verdict "$(med threads swapext-atomic "$rootfs" 8 ops_s)" "$a1" 4)" \
		"$(verdict "$(med threads swapext-atomic-direct "$rootfs" 8 ops_s)" "$d1" 4)"
	if [ -s "$skips" ]; then
		echo
		echo "## Skipped"
		echo
		sed 's/^/- /' "$skips"
	fi
} > "$md"

# ---------------------------------------------------------------- plots

# dat W I F M: "param median min max" per param, in param order
dat() {
	awk -F, -v w="$1" -v i="$2" -v f="$3" -v m="$4" \
		'$1 == w && $2 == i && $3 == f && $5 == m { print $4, $6, $7, $8 }' "$sum" | sort -g
}

if command -v gnuplot > /dev/null 2>&1; then
	dat swap swapext "$rootfs" extents_s > "$out/swap-swapext.dat"
	dat swap xfs xfs extents_s > "$out/swap-xfs.dat"
	dat recover swapext memory secs > "$out/recover.dat"
	dat threads swapext "$rootfs" ops_s > "$out/threads-swapext.dat"
	dat threads swapext-atomic "$rootfs" ops_s > "$out/threads-atomic.dat"
	dat threads swapext-atomic-direct "$rootfs" ops_s > "$out/threads-direct.dat"
	dat threads floor "$rootfs" ops_s > "$out/threads-floor.dat"
	plot_swap="'$out/swap-swapext.dat' using 1:2:3:4 with yerrorlines title 'swapext (image file)'"
	[ -s "$out/swap-xfs.dat" ] &&
		plot_swap="$plot_swap, '$out/swap-xfs.dat' using 1:2:3:4 with yerrorlines title 'XFS exchange-range (loop)'"
	gnuplot <<-EOF
	set terminal pngcairo size 640,400 noenhanced
	set grid
	set key below
	set offsets graph 0.05, graph 0.05, 0, 0
	set logscale x
	set xlabel 'N (single-block extents per file)'
	set ylabel 'extents/s (median, min-max)'
	set yrange [0:*]
	set title 'Durable atomic swap of two files'
	set output '$out/swap.png'
	plot $plot_swap
	set ylabel 'seconds (median, min-max)'
	set title 'Mount (recovery) after a cut halfway through the swap'
	set output '$out/recover.png'
	plot '$out/recover.dat' using 1:2:3:4 with yerrorlines title 'swapext (memory device)'
	unset logscale x
	set logscale y
	set yrange [*:*]
	set xtics 1
	set xlabel 'threads, each updating its own 1 MiB file'
	set ylabel 'durable updates/s (log scale)'
	set title 'Concurrency'
	set output '$out/threads.png'
	plot '$out/threads-swapext.dat' using 1:2:3:4 with yerrorlines title 'swapext sx_update', \
	     '$out/threads-atomic.dat' using 1:2:3:4 with yerrorlines title 'swapext sx_atomic_write', \
	     '$out/threads-direct.dat' using 1:2:3:4 with yerrorlines title 'the same, O_DIRECT image, forces overlapping', \
	     '$out/threads-floor.dat' using 1:2:3:4 with yerrorlines title 'pwrite + fdatasync ($rootfs)'
	EOF
	echo "bench: plots in $out/{swap,recover,threads}.png"
else
	echo "bench: gnuplot is not installed: no plots (scripts/deps.sh xfs installs it)"
fi

echo "bench: $sum, $md"
cat "$md"
[ -z "$missing" ] || die "no figures (or too few) for:$missing"
