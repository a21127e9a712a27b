#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# xfscheck: the swap core inside Linux's XFS (the rebuilt xfs.ko of `make
# xfsmod`) under qemu, and the same scenario on the store.
#
# usage: xfscheck.sh BUILD_DIR GUEST_PROG STORE_SCEN
#        xfscheck.sh --probe BUILD_DIR GUEST_PROG STORE_SCEN   (exit 0 or 77)
#
# GUEST_PROG is tests/xfs/xfscheck.c linked -static; STORE_SCEN prints the
# differential scenario's transcript on the store.  Makes two images with
# the host's mkfs.xfs (-m crc=1,reflink=1, the store's block size: the main
# one, and one mounted with user and group quota), builds a busybox
# initramfs (the program, the virtio and crc32c modules, XFS_KO as
# /xfs.ko, tests/xfs/guest-init.sh as /init), boots /boot/vmlinuz-<ver> in
# qemu-system-x86_64 (stdin from /dev/null, killed after XFSCHECK_TIMEOUT
# seconds), counts the guest's "XFSCHECK PASS|FAIL" lines, diffs the
# guest's scenario transcript against the store's, and runs `xfs_repair -n`
# on each image after the guest has unmounted it (the qemu plumbing is
# tests/common/guest.sh, shared with kcheck).  Ends with "N passed, N
# failed".  Exit status: 0 all passed, 1 something failed, 77 skipped (the
# reason is printed).
#
# XFS_KO: the module (default BUILD_DIR/xfsmod/xfs.ko, which
# `scripts/xfsmod.sh BUILD_DIR` builds or brings up to date first when the
# script exists; a build that cannot run is a skip, one that fails a
# failure).
# XFS_KO=stock boots Debian's own xfs.ko, which has no FISWAPRANGE: every
# swap test then fails with ENOTTY, which is how the harness itself is
# tried without the rebuilt module.
# XFSCHECK_EXTENTS (10000), XFSCHECK_POINTS (56), XFSCHECK_CHAIN (1000
# extents a side in the shutdown loop), XFSCHECK_SEED (20261205), XFSCHECK_OPS (1000): sizes.

set -uo pipefail

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
probe=0
if [ "${1:-}" = --probe ]; then
	probe=1
	shift
fi
build=${1:?usage: xfscheck.sh BUILD_DIR GUEST_PROG STORE_SCEN}
guest=${2:?usage: xfscheck.sh BUILD_DIR GUEST_PROG STORE_SCEN}
storescen=${3:?usage: xfscheck.sh BUILD_DIR GUEST_PROG STORE_SCEN}
timeout_s=${XFSCHECK_TIMEOUT:-420}
# software emulation; XFSCHECK_ACCEL="-enable-kvm -cpu host" opts in elsewhere
accel=${XFSCHECK_ACCEL:-"-accel tcg"}
extents=${XFSCHECK_EXTENTS:-10000}
points=${XFSCHECK_POINTS:-56}
chain=${XFSCHECK_CHAIN:-1000}
seed=${XFSCHECK_SEED:-20261205}
ops=${XFSCHECK_OPS:-1000}
bs=4096
mkdir -p "$build"
build=$(cd "$build" && pwd)
work=$build/xfscheck
start=$(date +%s)

guest_name=xfscheck
guest_tag=XFSCHECK
# shellcheck source-path=SCRIPTDIR source=../common/guest.sh
. "$srcdir/tests/common/guest.sh"

guest_find_kernel
for t in mkfs.xfs xfs_repair; do
	command -v $t > /dev/null || guest_skip "no $t (apt-get install xfsprogs)"
done

# The module: ours, or Debian's when asked (to try the harness without ours).
ko=${XFS_KO:-$build/xfsmod/xfs.ko}
if [ "$ko" = stock ]; then
	ko=$moddir/fs/xfs/xfs.ko
	module="Debian's stock xfs.ko: no FISWAPRANGE"
else
	module="rebuilt $(basename "$ko")"
	# make xfsmod's module is brought up to date first (the build is incremental)
	if [ -f "$srcdir/scripts/xfsmod.sh" ] && [ "$ko" = "$build/xfsmod/xfs.ko" ]; then
		if [ "$probe" = 1 ]; then
			out=$(bash "$srcdir/scripts/xfsmod.sh" --probe "$build" 2>&1) ||
				guest_skip "cannot build $ko: $out"
			echo "xfscheck: will run: $module (make xfsmod) in Linux $kver under $(command -v qemu-system-x86_64)"
			exit 0
		fi
		echo "xfscheck: building $ko (scripts/xfsmod.sh)"
		bash "$srcdir/scripts/xfsmod.sh" "$build" > "$build/xfsmod-build.log" 2>&1
		rc=$?
		if [ $rc = 77 ]; then
			guest_skip "cannot build $ko: $(grep -m1 SKIPPED "$build/xfsmod-build.log")"
		elif [ $rc != 0 ]; then
			tail -n 20 "$build/xfsmod-build.log"
			guest_abort "xfsmod-build (log: $build/xfsmod-build.log)"
		fi
	fi
	[ -f "$ko" ] || guest_skip "no $ko (make xfsmod builds it; XFS_KO=PATH names another)"
fi
if [ "$probe" = 1 ]; then
	echo "xfscheck: will run: $module in Linux $kver under $(command -v qemu-system-x86_64)"
	exit 0
fi
[ -x "$guest" ] || guest_skip "no guest program $guest"
[ -x "$storescen" ] || guest_skip "no store scenario program $storescen"

guest_root
cp "$guest" "$root/xfscheck"
# the debug information is of no use in the guest and 40 MB of initramfs
if ! strip --strip-debug -o "$root/xfs.ko" "$ko" 2> /dev/null; then
	cp "$ko" "$root/xfs.ko"
fi
cat > "$root/xc.env" <<EOF
XC_MODULE="$module"
XC_EXTENTS=$extents
XC_POINTS=$points
XC_CHAIN=$chain
XC_SEED=$seed
XC_OPS=$ops
EOF
cp "$srcdir/tests/xfs/guest-init.sh" "$root/init"
chmod +x "$root/init"

# The images: the store's block size, so the scenario means the same on both.
# In memory when /dev/shm is there with room for both sparse images filled
# (a container's /dev/shm may be 64 MB): on a busy disk writing and removing
# the 200 MB the guest writes took longer than the guest's run.
imgdir=$work
shm_free_kb=$(df -Pk /dev/shm 2> /dev/null | awk 'NR == 2 { print $4 }')
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "${shm_free_kb:-0}" -ge $((1536 * 1024)) ]; then
	imgdir=/dev/shm/xfscheck-$(id -u)-$(echo "$build" | md5sum | cut -c1-8)
fi
rm -rf "$imgdir"
mkdir -p "$imgdir"
imgs="main quota"
for i in $imgs; do
	truncate -s 640m "$imgdir/$i.img"
	if ! mkfs.xfs -q -f -m crc=1,reflink=1 -b size=$bs -L "xc$i" "$imgdir/$i.img" \
			> "$work/mkfs-$i.log" 2>&1; then
		cat "$work/mkfs-$i.log"
		guest_abort "host-mkfs-$i"
	fi
done

echo "xfscheck: booting $vmlinuz with $module (timeout ${timeout_s}s)"
guest_boot 1024 "$imgdir/main.img" "$imgdir/quota.img"
guest_console console-clean

# The differential scenario: the store's transcript against XFS's
sed -n 's/^.*XSCEN //p' "$work/console.txt" > "$work/scen-xfs.txt"
if "$storescen" "$seed" "$ops" > "$work/scen-store.txt" 2> "$work/scen-store.err"; then
	nlines=$(grep -c '^[0-9]*:' "$work/scen-store.txt")
	if [ ! -s "$work/scen-xfs.txt" ]; then
		result FAIL "differential-scenario: no transcript from the guest"
	elif diff -u "$work/scen-store.txt" "$work/scen-xfs.txt" > "$work/scen.diff"; then
		result PASS "differential-scenario (seed $seed, $nlines operations: every errno and file hash the same)"
	else
		nbad=$(grep -c '^+[0-9]*:' "$work/scen.diff")
		result FAIL "differential-scenario: seed $seed, $nbad of $nlines operations differ (store -, xfs +; $work/scen.diff):"
		grep -E '^[-+][0-9]' "$work/scen.diff" | head -n 12
	fi
else
	result FAIL "differential-scenario: the store's run failed: $(tail -n 3 "$work/scen-store.err")"
fi

# The images after the guest's last unmount: clean logs, so repair can look
keep=0
for i in $imgs; do
	if xfs_repair -n -f "$imgdir/$i.img" > "$work/repair-$i.log" 2>&1; then
		result PASS "xfs_repair-n-$i-image"
	else
		keep=1
		result FAIL "xfs_repair-n-$i-image (kept in $imgdir):"
		grep -vE '^(Phase|        - )' "$work/repair-$i.log" | head -n 20
	fi
done
# a failed run's images stay for a look until the next run
[ "$failed" != 0 ] && [ "$keep" = 1 ] || [ "$imgdir" = "$work" ] || rm -rf "$imgdir"

echo "xfscheck: $(($(date +%s) - start)) s (guest ${guest_s} s); console log in $work/console.txt"
guest_end
