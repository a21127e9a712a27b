#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# kcheck: the kernel module in a real Linux 6.1 kernel under qemu.
#
# usage: kcheck.sh BUILD_DIR TOOL
#        kcheck.sh --probe BUILD_DIR TOOL   only say whether it can run (exit 0 or 77)
#
# Builds the module, makes a disk image with `TOOL mkfs`, builds an initramfs
# (busybox-static, the module, the tool and its libraries, the virtio and
# crc32c modules, tests/kmod/guest-init.sh as /init) and boots
# /boot/vmlinuz-<ver> in qemu-system-x86_64 (software emulation, stdin from
# /dev/null, killed after $KCHECK_TIMEOUT seconds).  The guest prints one
# "KCHECK PASS|FAIL" line per check; afterwards the host runs `TOOL check`
# and `TOOL info` on the image.  Ends with "N passed, N failed".
# Exit status: 0 all passed, 1 something failed, 77 skipped (the reason is
# printed: no headers, no kernel image, no qemu, no busybox-static ...).

set -uo pipefail

srcdir=$(cd "$(dirname "$0")/../.." && pwd)
probe=0
if [ "${1:-}" = --probe ]; then
	probe=1
	shift
fi
build=${1:?usage: kcheck.sh BUILD_DIR TOOL}
tool=${2:?usage: kcheck.sh BUILD_DIR TOOL}
timeout_s=${KCHECK_TIMEOUT:-150}
bs=${KCHECK_BS:-4096}
mkdir -p "$build"
build=$(cd "$build" && pwd)
work=$build/kcheck
start=$(date +%s)

skip() { echo "kcheck: SKIPPED: $*"; exit 77; }

kver=$(bash "$srcdir/scripts/kmod.sh" kver)
[ -n "$kver" ] || skip "no Linux 6.1 amd64 headers in /usr/src (apt-get install linux-headers-amd64)"
vmlinuz=/boot/vmlinuz-$kver
moddir=/lib/modules/$kver/kernel
[ -r "$vmlinuz" ] || skip "no readable $vmlinuz (apt-get install linux-image-amd64; reading it needs root)"
[ -d "$moddir" ] || skip "no $moddir (apt-get install linux-image-amd64)"
command -v qemu-system-x86_64 > /dev/null || skip "no qemu-system-x86_64 (apt-get install qemu-system-x86)"
command -v cpio > /dev/null || skip "no cpio"
busybox=""
for b in /bin/busybox /usr/bin/busybox; do
	if [ -x "$b" ] && ! ldd "$b" > /dev/null 2>&1; then busybox=$b; break; fi
done
[ -n "$busybox" ] || skip "no statically linked busybox (apt-get install busybox-static)"
[ -x "$tool" ] || [ "$probe" = 1 ] || skip "no tool $tool"
if [ "$probe" = 1 ]; then
	echo "kcheck: will run: Linux $kver under $(command -v qemu-system-x86_64)"
	exit 0
fi

rm -rf "$work"
mkdir -p "$work/root"/{bin,mods,proc,sys,dev,tmp,lib64}

echo "kcheck: building the module for $kver"
if ! bash "$srcdir/scripts/kmod.sh" build "$build/kmod" > "$work/kmod-build.log" 2>&1; then
	tail -n 30 "$work/kmod-build.log"
	echo "KCHECK FAIL kmod-build"
	echo "0 passed, 1 failed"
	exit 1
fi
if ! bash "$srcdir/scripts/kmod.sh" consumer "$build/kmod" "$build/kmod-consumer" \
		> "$work/consumer-build.log" 2>&1; then
	tail -n 30 "$work/consumer-build.log"
	echo "KCHECK FAIL consumer-module-build"
	echo "0 passed, 1 failed"
	exit 1
fi

# The initramfs: busybox, the tool with every library it needs, the modules.
root=$work/root
cp "$busybox" "$root/bin/busybox"
cp "$tool" "$root/bin/swapext"
for lib in $(ldd "$tool" | awk '/=> \//{ print $3 } /^\t\/lib64/{ print $1 }'); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
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
	# a missing one may be built in
done
echo "$order" > "$root/mods/order"
cp "$build/kmod/swapext.ko" "$root/swapext.ko"
cp "$build/kmod-consumer/sxuser.ko" "$root/sxuser.ko"
{
	echo '#!/bin/busybox sh'
	echo "export KCHECK_BS=$bs"
	tail -n +2 "$srcdir/tests/kmod/guest-init.sh"
} > "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

img=$work/disk.img
rm -f "$img"
if ! "$tool" mkfs -b "$bs" -s 64m -L kcheck -O atomic_swap "$img" > "$work/mkfs.log" 2>&1; then
	cat "$work/mkfs.log"
	echo "KCHECK FAIL host-mkfs"
	echo "0 passed, 1 failed"
	exit 1
fi

echo "kcheck: booting $vmlinuz in qemu (timeout ${timeout_s}s)"
# software emulation (KVM is not usable for guests on these machines);
# KCHECK_ACCEL="-enable-kvm -cpu host" opts in elsewhere
accel=${KCHECK_ACCEL:-"-accel tcg"}
# shellcheck disable=SC2086
timeout -k 5 "$timeout_s" qemu-system-x86_64 $accel -m 512 -smp 2 -nographic -no-reboot \
	-kernel "$vmlinuz" -initrd "$work/initrd.gz" \
	-drive "file=$img,format=raw,if=virtio" \
	-append "console=ttyS0 quiet panic=-1 oops=panic" < /dev/null > "$work/console.log" 2>&1
qrc=$?
tr -d '\r' < "$work/console.log" > "$work/console.txt"

passed=0
failed=0
while IFS= read -r line; do
	case "$line" in
	"KCHECK PASS "*) passed=$((passed + 1)); echo "$line" ;;
	"KCHECK FAIL "*) failed=$((failed + 1)); echo "$line" ;;
	"KCHECK-INFO "*|"KCHECK-DMESG "*) echo "$line" ;;
	esac
done < <(grep -ao 'KCHECK.*' "$work/console.txt")

result() { # result PASS|FAIL name
	if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	echo "KCHECK $1 $2"
}
if grep -aq 'KCHECK DONE' "$work/console.txt"; then
	result PASS "guest-finished (qemu exit $qrc)"
else
	result FAIL "guest-finished: no KCHECK DONE (qemu exit $qrc; timeout or crash); last console lines:"
	tail -n 25 "$work/console.txt"
fi
if grep -aqE 'BUG:|Oops|Kernel panic|WARNING:|assertion failed' "$work/console.txt"; then
	result FAIL "kernel-log-clean"
	grep -aE -A5 'BUG:|Oops|Kernel panic|WARNING:|assertion failed' "$work/console.txt" | head -n 30
else
	result PASS "kernel-log-clean"
fi

# The same image on the host: the format is shared.  Space only (-s): the
# guest's allocator checks allocate extents that no file owns.
if "$tool" check -s "$img" > "$work/check.log" 2>&1; then
	result PASS "host-check-image ($(tail -n 1 "$work/check.log"))"
else
	result FAIL "host-check-image"
	cat "$work/check.log"
fi
# and the files the kernel wrote read back in userspace
if grep -qa 'KCHECK PASS create' "$work/console.txt"; then
	want=$(printf hello-from-the-kernel | md5sum | cut -d' ' -f1)
	out=$("$tool" io "$img" -c 'open hello' -c 'md5' 2>&1)
	case "$out" in
	"$want  hello") result PASS "host-io-read-kernel-file" ;;
	*) result FAIL "host-io-read-kernel-file: $out" ;;
	esac
fi
gfree=$(sed -n 's/.*KCHECK-FREE \([0-9]*\).*/\1/p' "$work/console.txt" | tail -n 1)
hfree=$("$tool" info "$img" 2>/dev/null | sed -n 's/^free: *\([0-9]*\) blocks.*/\1/p')
if [ -n "$gfree" ] && [ "$gfree" = "$hfree" ]; then
	result PASS "host-free-count-matches-guest ($hfree blocks)"
else
	result FAIL "host-free-count-matches-guest: guest ${gfree:-?}, host ${hfree:-?}"
fi

echo "kcheck: $(($(date +%s) - start)) s; console log in $work/console.txt"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
