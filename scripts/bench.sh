#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make bench / make bench-quick: swapext beside its peers, in one run, on
# the same filesystem (issue 17).
#
# usage: bench.sh BUILD full|quick
#
# Workloads (each figure the median of BENCH_RUNS runs with min and max;
# within a run swapext and the peers alternate, and the order flips every
# run, so slow drift of a shared machine hits both sides alike; each
# round of the threads workload runs every T, for the same reason):
#   update   durable atomic 4 KiB update of a 1 MiB file, one thread:
#            swapext (bench_update, image file in BUILD/bench/work on the
#            filesystem BUILD is on): sx_update + fsync, and sx_atomic_write
#            (bench_update ... atomic, durable on return; and atomic-inplace, its
#            blocks written in place before the record, for what carrying them
#            in the record buys); pwrite + fdatasync and copy + fsync +
#            rename on that same filesystem; and, on XFS (4 KiB blocks, a
#            loop device backed by a file in the same folder, mounted here):
#            clone + write + XFS_IOC_EXCHANGE_RANGE(DSYNC), START_COMMIT +
#            COMMIT_RANGE(DSYNC), pwritev2(RWF_ATOMIC|RWF_DSYNC) O_DIRECT,
#            and the same two non-XFS methods again
#   threads  T = BENCH_THREADS threads each updating its own file: swapext
#            (sx_update; sx_atomic_write; sx_atomic_write on the image opened
#            O_DIRECT and mounted with SX_MOUNT_OVERLAP_FORCES) and the
#            fdatasync floor of the image's filesystem
#   swap     atomic swap of two files of N single-block extents (1 KiB
#            blocks), durable: swapext (bench_swap, image file) vs XFS
#            exchange-range (xfs_exchange, 1 KiB blocks, remounted cold
#            before every run), N in BENCH_N
#   recover  mount time after a power cut halfway through that swap
#            (bench_recover, crash device over a memory device), N in BENCH_N
#
# Environment: BENCH_N, BENCH_RUNS, BENCH_OPS (updates per thread per run),
# BENCH_THREADS, BENCH_BIG=1 (adds N = 1,000,000), BENCH_XFS_MAX_N (the
# XFS swap peer is skipped above it; 1000000: writing its two files of
# 1,000,000 blocks through the loop device took 2.5 minutes here).  Defaults: full N =
# "10000 100000", 5 runs of 1,000 updates (3 runs of each swap and recovery);
# quick N = "1000 10000", 3 runs of 20 updates.  Runs of 100 updates (until
# stop 25) lasted about 10 ms for the fast methods, and the first updates
# of a run (cold caches, memory still growing) weighed in every figure.
#
# Output in BUILD/bench/: raw.csv (every measure of every run), summary.csv
# (median, min, max per figure), skips.txt, results.md (the table with the
# issue's ratios and targets) and, with gnuplot, swap.png, recover.png and
# threads.png.  XFS needs root, losetup and XFS in the kernel; without them
# the XFS peers are skipped with the reason in results.md.  The run fails if
# any workload that was not skipped produced no figure or wrong contents
# (every program checks what it wrote); no figure is compared with a bar.

set -euo pipefail

die() { echo "bench: $*" >&2; exit 1; }

[ $# -eq 2 ] || die "usage: bench.sh BUILD full|quick"
build=$(cd "$1" && pwd)
mode=$2
case $mode in
full)	def_n="10000 100000"; def_runs=5; def_swap_runs=3; def_ops=1000 ;;
quick)	def_n="1000 10000"; def_runs=3; def_swap_runs=3; def_ops=20 ;;
*)	die "mode must be full or quick, not '$mode'" ;;
esac
ns=${BENCH_N:-$def_n}
[ "${BENCH_BIG:-0}" = 1 ] && ns="$ns 1000000"
runs=${BENCH_RUNS:-$def_runs}
swap_runs=${BENCH_RUNS:-$def_swap_runs}
ops=${BENCH_OPS:-$def_ops}
threads=${BENCH_THREADS:-1 2 4 8}
xfs_max_n=${BENCH_XFS_MAX_N:-1000000}

bin=$build/bench
out=$build/bench
work=$out/work
raw=$out/raw.csv
skips=$out/skips.txt
mkdir -p "$out"
rm -rf "$work"
mkdir -p "$work"
echo "workload,impl,fs,param,run,metric,value" > "$raw"
: > "$skips"

for p in bench_update bench_swap bench_recover xfs_update xfs_exchange; do
	[ -x "$bin/$p" ] || die "$bin/$p is not built (make bench builds it)"
done

# ---------------------------------------------------------------- XFS

xfs_why=""
[ "$(id -u)" = 0 ] || xfs_why="not root (loop devices and mount need it: sudo make bench)"
if [ -z "$xfs_why" ]; then
	for c in mkfs.xfs losetup mount umount mountpoint; do
		command -v "$c" > /dev/null 2>&1 || xfs_why="$xfs_why $c missing;"
	done
	[ -e /dev/loop-control ] || xfs_why="$xfs_why no /dev/loop-control;"
	grep -qw xfs /proc/filesystems 2> /dev/null || xfs_why="$xfs_why XFS is not in the running kernel;"
fi

dev=""
mnt=$work/mnt
cleanup() {
	local rc=$?
	if mountpoint -q "$mnt" 2> /dev/null; then
		umount "$mnt" || echo "bench: warning: could not unmount $mnt" >&2
	fi
	if [ -n "$dev" ]; then
		losetup -d "$dev" || echo "bench: warning: could not detach $dev" >&2
	fi
	dev=""
	rm -rf "$work"
	return $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# xfs_up BLOCKSIZE SIZE [fill]: a fresh XFS with reflink and the
# exchange-range bit (set by hand, as make bench-xfs does: Debian's
# mkfs.xfs 6.1 cannot) on a loop device backed by $work/xfs.img, mounted on
# $mnt.  With "fill" the backing file is written whole first, as swapext's
# update image is (bench/benchdev.h): a durable update's fdatasync then
# pays no ext4 block allocation under either.  Fails (status 1, message in
# $xfs_why) if the kernel refuses it.
xfs_up() {
	mkdir -p "$mnt"
	rm -f "$work/xfs.img"
	truncate -s "$2" "$work/xfs.img"
	if [ "${3:-}" = fill ]; then
		dd if=/dev/zero of="$work/xfs.img" bs=1M count=$(($(stat -c %s "$work/xfs.img") >> 20)) \
			conv=notrunc,fdatasync status=none
	fi
	if ! mkfs.xfs -q -f -m crc=1,reflink=1 -b size="$1" -l size=128m "$work/xfs.img" \
		> "$work/mount.err" 2>&1; then
		xfs_why="mkfs.xfs failed: $(tr '\n' ' ' < "$work/mount.err")"
		return 1
	fi
	"$bin/xfs_exchange" sb-exchrange "$work/xfs.img" > /dev/null
	if ! dev=$(losetup --find --show "$work/xfs.img" 2> "$work/mount.err"); then
		xfs_why="no loop device: $(tr '\n' ' ' < "$work/mount.err")"
		dev=""
		return 1
	fi
	if ! mount -t xfs "$dev" "$mnt" 2> "$work/mount.err"; then
		xfs_why="the kernel does not mount XFS with exchange-range (Linux 6.10+ does): $(tr '\n' ' ' < "$work/mount.err")"
		losetup -d "$dev"
		dev=""
		return 1
	fi
}

xfs_down() {
	umount "$mnt"
	losetup -d "$dev"
	dev=""
	rm -f "$work/xfs.img"
}

xfs_remount() {
	umount "$mnt"
	mount -t xfs "$dev" "$mnt"
}

# ---------------------------------------------------------------- recording

# record WORKLOAD IMPL FS PARAM RUN LINE: the key=value pairs of a RESULT line
record() {
	local w=$1 impl=$2 fs=$3 param=$4 r=$5 line=$6 kv
	for kv in $line; do
		case $kv in
		RESULT|workload=*|impl=*|threads=*|n=*|swap=*) ;;
		*=*) echo "$w,$impl,$fs,$param,$r,${kv%%=*},${kv#*=}" >> "$raw" ;;
		esac
	done
}

# run_one WORKLOAD IMPL FS PARAM RUN CMD...: run, record its RESULT line or its SKIP
run_one() {
	local w=$1 impl=$2 fs=$3 param=$4 r=$5 o line
	shift 5
	if ! o=$("$@" 2>&1); then
		echo "$o" >&2
		die "$w $impl on $fs ($param) failed: $*"
	fi
	if line=$(grep '^SKIP ' <<< "$o"); then
		grep -qF "$w $impl $fs" "$skips" || echo "$w $impl $fs: ${line#SKIP }" >> "$skips"
		echo "  $w $impl $fs $param: skipped: ${line#SKIP }"
		return
	fi
	line=$(grep '^RESULT ' <<< "$o") || { echo "$o" >&2; die "$w $impl on $fs printed no RESULT"; }
	record "$w" "$impl" "$fs" "$param" "$r" "$line"
	echo "  $w $impl $fs $param run $r: ${line#RESULT }"
}

skip_xfs() {
	echo "$1 (every XFS peer): $xfs_why" >> "$skips"
	echo "bench: $1: XFS peers skipped: $xfs_why"
}

rootfs=$(findmnt -n -o FSTYPE -T "$work" || echo "?")

# ---------------------------------------------------------------- update

echo "== durable atomic 4 KiB update of a 1 MiB file ($runs runs of $ops updates)"
have_xfs=0
if [ -z "$xfs_why" ] && xfs_up 4096 2G fill; then have_xfs=1; else skip_xfs update; fi
mkdir -p "$work/plain"
for r in $(seq "$runs"); do
	jobs=("swapext" "swapext-atomic" "swapext-atomic-inplace" "floor:$rootfs" "rename:$rootfs")
	[ $have_xfs = 1 ] && jobs+=("exchange:xfs" "commit:xfs" "atomic:xfs" "floor:xfs" "rename:xfs")
	# every other run in reverse order: no method always goes first
	if [ $((r % 2)) = 0 ]; then
		for ((i = 0, j = ${#jobs[@]} - 1; i < j; i++, j--)); do
			t=${jobs[i]}; jobs[i]=${jobs[j]}; jobs[j]=$t
		done
	fi
	for job in "${jobs[@]}"; do
		case $job in
		swapext) run_one update swapext "$rootfs" 1 "$r" "$bin/bench_update" "$work/update.img" "$ops" 1 ;;
		swapext-atomic) run_one update swapext-atomic "$rootfs" 1 "$r" "$bin/bench_update" "$work/update.img" "$ops" 1 atomic ;;
		swapext-atomic-inplace) run_one update swapext-atomic-inplace "$rootfs" 1 "$r" "$bin/bench_update" "$work/update.img" "$ops" 1 atomic-inplace ;;
		*:xfs) run_one update "${job%%:*}" xfs 1 "$r" "$bin/xfs_update" "${job%%:*}" "$mnt" "$ops" 1 ;;
		*) run_one update "${job%%:*}" "$rootfs" 1 "$r" "$bin/xfs_update" "${job%%:*}" "$work/plain" "$ops" 1 ;;
		esac
	done
done
[ $have_xfs = 1 ] && xfs_down

# ---------------------------------------------------------------- threads

echo "== T threads, each updating its own file ($runs runs of $ops updates per thread)"
# Each round runs every T, in reverse order every other round: a figure
# against T = 1 compares runs spread over the same minutes, not the T = 1
# runs of the first minute with the T = 8 runs of the last.
for r in $(seq "$runs"); do
	order=$threads
	[ $((r % 2)) = 0 ] && order=$(tr ' ' '\n' <<< "$threads" | tac | tr '\n' ' ')
	for t in $order; do
		if [ $((r % 2)) = 1 ]; then
			run_one threads swapext "$rootfs" "$t" "$r" "$bin/bench_update" "$work/update.img" "$ops" "$t"
			run_one threads swapext-atomic "$rootfs" "$t" "$r" "$bin/bench_update" "$work/update.img" "$ops" "$t" atomic
			run_one threads swapext-atomic-direct "$rootfs" "$t" "$r" "$bin/bench_update" "$work/update.img" "$ops" "$t" atomic-direct
			run_one threads floor "$rootfs" "$t" "$r" "$bin/xfs_update" floor "$work/plain" "$ops" "$t"
		else
			run_one threads floor "$rootfs" "$t" "$r" "$bin/xfs_update" floor "$work/plain" "$ops" "$t"
			run_one threads swapext-atomic-direct "$rootfs" "$t" "$r" "$bin/bench_update" "$work/update.img" "$ops" "$t" atomic-direct
			run_one threads swapext-atomic "$rootfs" "$t" "$r" "$bin/bench_update" "$work/update.img" "$ops" "$t" atomic
			run_one threads swapext "$rootfs" "$t" "$r" "$bin/bench_update" "$work/update.img" "$ops" "$t"
		fi
	done
done

# ---------------------------------------------------------------- swap

echo "== atomic swap of two files of N single-block extents ($swap_runs runs each)"
for n in $ns; do
	echo "  N=$n: making the files (not timed)"
	"$bin/bench_swap" mkimage "$work/swap.img" "$n" | sed 's/^/  /'
	have_xfs=0
	if [ "$n" -gt "$xfs_max_n" ]; then
		echo "swap xfs xfs: N=$n above BENCH_XFS_MAX_N=$xfs_max_n (its files take too long to write)" >> "$skips"
		echo "  N=$n: XFS peer skipped: above BENCH_XFS_MAX_N=$xfs_max_n"
	elif [ -z "$xfs_why" ]; then
		# data 2N blocks, room for the bmap btrees and the log: at least 1 GiB
		size=$(( 4 * n * 1024 + 512 * 1024 * 1024 ))
		[ $size -ge $(( 1 << 30 )) ] || size=$(( 1 << 30 ))
		if xfs_up 1024 "$size"; then
			"$bin/xfs_exchange" mkfiles "$mnt" "$n" | sed 's/^/  /'
			have_xfs=1
		fi
	fi
	[ $have_xfs = 1 ] || [ "$n" -gt "$xfs_max_n" ] || skip_xfs "swap N=$n"
	for r in $(seq "$swap_runs"); do
		if [ $have_xfs = 1 ] && [ $((r % 2)) = 1 ]; then
			xfs_remount
			run_one swap xfs xfs "$n" "$r" "$bin/xfs_exchange" swap "$mnt" "$n"
		fi
		run_one swap swapext "$rootfs" "$n" "$r" "$bin/bench_swap" swap "$work/swap.img" "$n"
		if [ $have_xfs = 1 ] && [ $((r % 2)) = 0 ]; then
			xfs_remount
			run_one swap xfs xfs "$n" "$r" "$bin/xfs_exchange" swap "$mnt" "$n"
		fi
	done
	[ $have_xfs = 1 ] && xfs_down
	rm -f "$work/swap.img"
done

# ---------------------------------------------------------------- recover

echo "== recovery after a power cut halfway through the swap ($swap_runs runs each)"
for n in $ns; do
	for r in $(seq "$swap_runs"); do
		run_one recover swapext memory "$n" "$r" "$bin/bench_recover" "$n"
	done
done

# ---------------------------------------------------------------- tables

bash "$(dirname "$0")/bench-report.sh" "$out" "$mode" "$ns" "$threads" "$runs" "$swap_runs" "$ops"
