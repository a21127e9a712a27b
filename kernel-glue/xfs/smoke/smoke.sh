#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The XFS smoke run: BUILD/xfsmod/xfs.ko (make xfsmod) in Linux 6.1 under
# qemu, on an image made here by mkfs.xfs -m crc=1,reflink=1: one
# FISWAPRANGE checked block by block, long swaps cut by XFS_IOC_GOINGDOWN
# and finished by log recovery, then xfs_repair -n here.
#
# usage: smoke.sh BUILD_DIR
# $SMOKE_BLOCKS (6000): blocks of the long swap's files; $SMOKE_CUTS: where
# to shut down, "PERCENT FLAG ..." pairs (default "20 1 40 2 60 1 80 2": % of
# the timed swap, 1 log flush, 2 none); $SMOKE_TIMEOUT (300 s).
# Exit status: 0 all passed, 1 something failed, 77 skipped (the reason is printed).

set -uo pipefail

srcdir=$(cd "$(dirname "$0")/../../.." && pwd)
build=${1:?usage: smoke.sh BUILD_DIR}
mkdir -p "$build"
build=$(cd "$build" && pwd)
work=$build/xfsmod/smoke
timeout_s=${SMOKE_TIMEOUT:-300}
start=$(date +%s)

skip() { echo "xfs-smoke: SKIPPED: $*"; exit 77; }

kver=$(bash "$srcdir/scripts/kmod.sh" kver)
vmlinuz=/boot/vmlinuz-$kver
moddir=/lib/modules/$kver/kernel
[ -n "$kver" ] && [ -r "$vmlinuz" ] && [ -d "$moddir" ] ||
	skip "no readable Linux 6.1 kernel image and modules (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 > /dev/null || skip "no qemu-system-x86_64"
command -v mkfs.xfs > /dev/null && command -v xfs_repair > /dev/null || skip "no xfsprogs"
command -v cpio > /dev/null || skip "no cpio"
[ -x /bin/busybox ] && ! ldd /bin/busybox > /dev/null 2>&1 || skip "no static busybox"
bash "$srcdir/scripts/xfsmod.sh" "$build"
rc=$?
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || { echo "xfs-smoke: make xfsmod failed"; exit 1; }

rm -rf "$work"
mkdir -p "$work/root"/{bin,mods,proc,sys,dev,mnt}
root=$work/root
if ! gcc -static -O2 -Wall -Werror -I"$srcdir/include" -o "$root/bin/sxsmoke" \
		"$srcdir/kernel-glue/xfs/smoke/sxsmoke.c"; then
	echo "xfs-smoke: cannot build sxsmoke statically (libc6-dev's libc.a)"
	exit 1
fi
cp /bin/busybox "$root/bin/busybox"
order=""
for m in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev \
	 drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci drivers/block/virtio_blk \
	 crypto/crc32c_generic lib/libcrc32c; do
	if [ -f "$moddir/$m.ko" ]; then
		cp "$moddir/$m.ko" "$root/mods/"
		order="$order $(basename "$m").ko"
	fi
done
echo "$order" > "$root/mods/order"
cp "$build/xfsmod/xfs.ko" "$root/mods/xfs.ko"
{
	echo '#!/bin/busybox sh'
	echo "export SMOKE_BLOCKS=${SMOKE_BLOCKS:-6000}"
	[ -z "${SMOKE_CUTS:-}" ] || echo "export SMOKE_CUTS='$SMOKE_CUTS'"
	tail -n +2 "$srcdir/kernel-glue/xfs/smoke/guest-init.sh"
} > "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

img=$work/xfs.img
truncate -s 512M "$img"
mkfs.xfs -q -f -m crc=1,reflink=1 "$img" || { echo "xfs-smoke: mkfs.xfs failed"; exit 1; }

echo "xfs-smoke: booting $vmlinuz with $build/xfsmod/xfs.ko (timeout ${timeout_s}s)"
timeout -k 5 "$timeout_s" qemu-system-x86_64 -accel tcg -m 1024 -smp 2 -nographic -no-reboot \
	-kernel "$vmlinuz" -initrd "$work/initrd.gz" \
	-drive "file=$img,format=raw,if=virtio" \
	-append "console=ttyS0 quiet panic=-1 oops=panic" < /dev/null > "$work/console.log" 2>&1
qrc=$?
tr -d '\r' < "$work/console.log" > "$work/console.txt"

passed=0
failed=0
while IFS= read -r line; do
	case "$line" in
	"SMOKE PASS "*) passed=$((passed + 1)); echo "$line" ;;
	"SMOKE FAIL "*) failed=$((failed + 1)); echo "$line" ;;
	"SMOKE-"*) echo "$line" ;;
	esac
done < <(grep -ao 'SMOKE.*' "$work/console.txt")
result() {
	if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	echo "SMOKE $1 $2"
}
if grep -aq 'SMOKE DONE' "$work/console.txt"; then
	result PASS "guest-finished (qemu exit $qrc)"
else
	result FAIL "guest-finished: no SMOKE DONE (qemu exit $qrc); last console lines:"
	tail -n 40 "$work/console.txt"
fi
if xfs_repair -n "$img" > "$work/repair.log" 2>&1; then
	result PASS "host-xfs_repair-n-clean"
else
	result FAIL "host-xfs_repair-n-clean"
	grep -v '^        - \|^Phase' "$work/repair.log" | head -n 30
fi
echo "xfs-smoke: $(($(date +%s) - start)) s; console log in $work/console.txt"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
