#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# swapext's swap next to Linux XFS's XFS_IOC_EXCHANGE_RANGE (make bench-xfs).
#
# usage: bench-xfs.sh BUILD N...
#
# For each N: a fresh sparse image, mkfs.xfs (crc, reflink, BLOCKSIZE-byte
# blocks, LOGSIZE log), the exchange-range feature bit set in the superblock
# (Debian's mkfs.xfs 6.1 cannot), mounted on a loop device; two files of N
# interleaved single-block extents; remounted (cold metadata cache, as
# bench_swap mounts its image afresh); one timed exchange of both whole files
# plus fsync of both; then the same N through BUILD/bench/bench_swap (the
# atomic swap) when it is built.  Extent counts are checked with FIEMAP by the
# program and with xfs_bmap here, before and after.
#
# Environment: BLOCKSIZE (1024), LOGSIZE (mkfs -l size=, 128m), TMPDIR (where
# the image goes; it is sparse, at most about 4*N*BLOCKSIZE bytes get written).
# Needs root, xfsprogs, losetup and a kernel with XFS (6.10 or later for the
# ioctl).  Cleans up its mount, loop device and image however it ends.

set -euo pipefail

die() { echo "bench-xfs: $*" >&2; exit 1; }

[ $# -ge 2 ] || die "usage: bench-xfs.sh BUILD N..."
build=$1
shift
for n in "$@"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || die "N must be a positive number, not '$n'"
done

bs=${BLOCKSIZE:-1024}
logsize=${LOGSIZE:-128m}
prog=$build/bench/xfs_exchange
swapbench=$build/bench/bench_swap

# What is missing, all of it, before touching anything.
missing=""
[ "$(id -u)" = 0 ] || missing="$missing root (mkfs, loop devices and mount need it: sudo make bench-xfs);"
for c in mkfs.xfs xfs_bmap losetup mount umount; do
	command -v "$c" > /dev/null 2>&1 || missing="$missing $c;"
done
[ -x "$prog" ] || missing="$missing $prog (make bench-xfs builds it);"
[ -e /dev/loop-control ] || missing="$missing /dev/loop-control (loop devices);"
grep -qw xfs /proc/filesystems 2> /dev/null ||
	missing="$missing XFS in the running kernel (not in /proc/filesystems);"
[ -z "$missing" ] || die "cannot run, missing:$missing"

work=""
dev=""
mnt=""

cleanup() {
	local rc=$?

	if [ -n "$mnt" ] && mountpoint -q "$mnt"; then
		umount "$mnt" || echo "bench-xfs: warning: could not unmount $mnt" >&2
	fi
	if [ -n "$dev" ]; then
		losetup -d "$dev" || echo "bench-xfs: warning: could not detach $dev" >&2
	fi
	[ -z "$work" ] || rm -rf "$work"
	dev=""
	mnt=""
	work=""
	return $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bmap_extents FILE: data extents xfs_bmap lists (its holes and header left out)
bmap_extents() {
	xfs_bmap "$1" | awk 'NR > 1 && !/hole/ { n++ } END { print n + 0 }'
}

# check_bmap WHEN N: xfs_bmap agrees with FIEMAP that a and b map N extents each
check_bmap() {
	local ea eb
	ea=$(bmap_extents "$mnt/a")
	eb=$(bmap_extents "$mnt/b")
	echo "$1: xfs_bmap a $ea extents, b $eb extents"
	[ "$ea" = "$2" ] && [ "$eb" = "$2" ] || die "xfs_bmap: expected $2 extents in each file"
}

declare -a summary=()

run_xfs() {
	local n=$1 size line

	work=$(mktemp -d "${TMPDIR:-/tmp}/bench-xfs.XXXXXX")
	mnt=$work/mnt
	mkdir "$mnt"
	# data 2N blocks, room for the bmap btrees, the log, and slack; at least 1 GiB
	size=$(( 4 * n * bs + 512 * 1024 * 1024 ))
	[ $size -ge $(( 1024 * 1024 * 1024 )) ] || size=$(( 1024 * 1024 * 1024 ))
	truncate -s "$size" "$work/img"
	mkfs.xfs -q -f -m crc=1,reflink=1 -b size="$bs" -l size="$logsize" "$work/img"
	"$prog" sb-exchrange "$work/img"
	dev=$(losetup --find --show "$work/img")
	mount -t xfs "$dev" "$mnt"
	echo "mounted: $(findmnt -n -o SOURCE,FSTYPE,OPTIONS "$mnt") (image $work/img, $(( size >> 20 )) MiB sparse)"

	"$prog" mkfiles "$mnt" "$n"
	check_bmap "before" "$n"
	umount "$mnt"
	mount -t xfs "$dev" "$mnt"

	"$prog" swap "$mnt" "$n" | tee "$work/out"
	check_bmap "after" "$n"
	line=$(grep '^xfs ' "$work/out") || die "no result line from $prog"
	summary+=("N=$n  XFS exchange-range (loop device on a file, page cache, XFS log): ${line#*: }")

	umount "$mnt"
	losetup -d "$dev"
	dev=""
	rm -rf "$work"
	work=""
	mnt=""
}

run_swapext() {
	local n=$1 out line

	if [ ! -x "$swapbench" ]; then
		summary+=("N=$n  swapext atomic swap: not measured ($swapbench is not built: bench/bench_swap.c is not on this branch)")
		return
	fi
	out=$("$swapbench" "$n" "$bs" atomic) || { echo "$out"; die "$swapbench $n $bs atomic failed"; }
	echo "$out"
	line=$(grep '^atomic' <<< "$out") || die "no 'atomic' line from $swapbench"
	summary+=("N=$n  swapext atomic swap (memory device, swapext log):             ${line#*: }")
}

echo "kernel $(uname -r), $(mkfs.xfs -V), ${bs}-byte blocks, log $logsize"
for n in "$@"; do
	echo "== N=$n: XFS_IOC_EXCHANGE_RANGE"
	run_xfs "$n"
	echo "== N=$n: swapext bench_swap"
	run_swapext "$n"
done

echo "== side by side (one atomic swap of two whole files of N single-block extents each, durable when timed)"
printf '%s\n' "${summary[@]}"
