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
# on each image after the guest has unmounted it.  Ends with "N passed, N
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

skip() { echo "xfscheck: SKIPPED: $*"; exit 77; }

kver=$(bash "$srcdir/scripts/kmod.sh" kver)
[ -n "$kver" ] || skip "no Linux 6.1 amd64 headers in /usr/src (apt-get install linux-headers-amd64)"
vmlinuz=/boot/vmlinuz-$kver
moddir=/lib/modules/$kver/kernel
[ -r "$vmlinuz" ] || skip "no readable $vmlinuz (apt-get install linux-image-amd64; reading it needs root)"
[ -d "$moddir" ] || skip "no $moddir (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 > /dev/null || skip "no qemu-system-x86_64 (apt-get install qemu-system-x86)"
command -v cpio > /dev/null || skip "no cpio"
for t in mkfs.xfs xfs_repair; do
	command -v $t > /dev/null || skip "no $t (apt-get install xfsprogs)"
done
busybox=""
for b in /bin/busybox /usr/bin/busybox; do
	if [ -x "$b" ] && ! ldd "$b" > /dev/null 2>&1; then busybox=$b; break; fi
done
[ -n "$busybox" ] || skip "no statically linked busybox (apt-get install busybox-static)"

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
				skip "cannot build $ko: $out"
			echo "xfscheck: will run: $module (make xfsmod) in Linux $kver under $(command -v qemu-system-x86_64)"
			exit 0
		fi
		echo "xfscheck: building $ko (scripts/xfsmod.sh)"
		bash "$srcdir/scripts/xfsmod.sh" "$build" > "$build/xfsmod-build.log" 2>&1
		rc=$?
		if [ $rc = 77 ]; then
			skip "cannot build $ko: $(grep -m1 SKIPPED "$build/xfsmod-build.log")"
		elif [ $rc != 0 ]; then
			tail -n 20 "$build/xfsmod-build.log"
			echo "XFSCHECK FAIL xfsmod-build (log: $build/xfsmod-build.log)"
			echo "0 passed, 1 failed"
			exit 1
		fi
	fi
	[ -f "$ko" ] || skip "no $ko (make xfsmod builds it; XFS_KO=PATH names another)"
fi
if [ "$probe" = 1 ]; then
	echo "xfscheck: will run: $module in Linux $kver under $(command -v qemu-system-x86_64)"
	exit 0
fi
[ -x "$guest" ] || skip "no guest program $guest"
[ -x "$storescen" ] || skip "no store scenario program $storescen"

rm -rf "$work"
mkdir -p "$work/root"/{bin,mods,proc,sys,dev,tmp,mnt}
root=$work/root
cp "$busybox" "$root/bin/busybox"
cp "$guest" "$root/xfscheck"
order=""
for m in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev \
	 drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci drivers/block/virtio_blk \
	 crypto/crc32c_generic lib/libcrc32c; do
	if [ -f "$moddir/$m.ko" ]; then
		cp "$moddir/$m.ko" "$root/mods/"
		order="$order $(basename "$m").ko"
	elif [ -f "$moddir/$m.ko.xz" ]; then
		xz -dc "$moddir/$m.ko.xz" > "$root/mods/$(basename "$m").ko"
		order="$order $(basename "$m").ko"
	fi
done
echo "$order" > "$root/mods/order"
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
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

# The images: the store's block size, so the scenario means the same on both.
# In memory when /dev/shm is there: on a busy disk writing and removing the
# 200 MB the guest writes took longer than the guest's run.
imgdir=$work
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
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
		echo "XFSCHECK FAIL host-mkfs-$i"
		echo "0 passed, 1 failed"
		exit 1
	fi
done

echo "xfscheck: booting $vmlinuz with $module (timeout ${timeout_s}s)"
accel=${XFSCHECK_ACCEL:-"-accel tcg"}
t0=$(date +%s)
# shellcheck disable=SC2086
timeout -k 5 "$timeout_s" qemu-system-x86_64 $accel -m 1024 -smp 2 -nographic -no-reboot \
	-kernel "$vmlinuz" -initrd "$work/initrd.gz" \
	-drive "file=$imgdir/main.img,format=raw,if=virtio" \
	-drive "file=$imgdir/quota.img,format=raw,if=virtio" \
	-append "console=ttyS0 quiet panic=-1 oops=panic" < /dev/null > "$work/console.log" 2>&1
qrc=$?
guest_s=$(($(date +%s) - t0))
tr -d '\r' < "$work/console.log" > "$work/console.txt"

passed=0
failed=0
while IFS= read -r line; do
	case "$line" in
	"XFSCHECK PASS "*) passed=$((passed + 1)); echo "$line" ;;
	"XFSCHECK FAIL "*) failed=$((failed + 1)); echo "$line" ;;
	"XFSCHECK-INFO "*|"XFSCHECK-DMESG "*|"XFSCHECK-TIME "*) echo "$line" ;;
	esac
done < <(grep -ao 'XFSCHECK.*' "$work/console.txt")

result() { # result PASS|FAIL name
	if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	echo "XFSCHECK $1 $2"
}
if grep -aq 'XFSCHECK DONE' "$work/console.txt"; then
	result PASS "guest-finished (${guest_s} s, qemu exit $qrc)"
else
	result FAIL "guest-finished: no XFSCHECK DONE after ${guest_s} s (qemu exit $qrc; timeout or crash); last console lines:"
	tail -n 25 "$work/console.txt"
fi
if grep -aqE 'BUG:|Oops|Kernel panic|WARNING:' "$work/console.txt"; then
	result FAIL "console-clean"
	grep -aE -A5 'BUG:|Oops|Kernel panic|WARNING:' "$work/console.txt" | head -n 30
else
	result PASS "console-clean"
fi

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
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
