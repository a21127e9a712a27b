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
# and `TOOL info` on the image.  Ends with "N passed, N failed".  The qemu
# plumbing is tests/common/guest.sh, shared with tests/xfs/xfscheck.sh.
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
# software emulation; KCHECK_ACCEL="-enable-kvm -cpu host" opts in elsewhere
accel=${KCHECK_ACCEL:-"-accel tcg"}
mkdir -p "$build"
build=$(cd "$build" && pwd)
work=$build/kcheck
start=$(date +%s)
guest_name=kcheck
guest_tag=KCHECK
# shellcheck source-path=SCRIPTDIR source=../common/guest.sh
. "$srcdir/tests/common/guest.sh"

guest_find_kernel
[ -x "$tool" ] || [ "$probe" = 1 ] || guest_skip "no tool $tool"
if [ "$probe" = 1 ]; then
	echo "kcheck: will run: Linux $kver under $(command -v qemu-system-x86_64)"
	exit 0
fi

guest_root
echo "kcheck: building the module for $kver"
if ! bash "$srcdir/scripts/kmod.sh" build "$build/kmod" > "$work/kmod-build.log" 2>&1; then
	tail -n 30 "$work/kmod-build.log"
	guest_abort kmod-build
fi
if ! bash "$srcdir/scripts/kmod.sh" consumer "$build/kmod" "$build/kmod-consumer" \
		> "$work/consumer-build.log" 2>&1; then
	tail -n 30 "$work/consumer-build.log"
	guest_abort consumer-module-build
fi

# The initramfs: busybox and the modules (guest_root), the tool with every
# library it needs, our two modules.
cp "$tool" "$root/bin/swapext"
for lib in $(ldd "$tool" | awk '/=> \//{ print $3 } /^\t\/lib64/{ print $1 }'); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
cp "$build/kmod/swapext.ko" "$root/swapext.ko"
cp "$build/kmod-consumer/sxuser.ko" "$root/sxuser.ko"
{
	echo '#!/bin/busybox sh'
	echo "export KCHECK_BS=$bs"
	echo "export KCHECK_SEED=${KCHECK_SEED:-}"
	tail -n +2 "$srcdir/tests/kmod/guest-init.sh"
} > "$root/init"
chmod +x "$root/init"

img=$work/disk.img
rm -f "$img"
if ! "$tool" mkfs -b "$bs" -s 64m -L kcheck -O atomic_swap "$img" > "$work/mkfs.log" 2>&1; then
	cat "$work/mkfs.log"
	guest_abort host-mkfs
fi

echo "kcheck: booting $vmlinuz in qemu (timeout ${timeout_s}s)"
guest_boot 512 "$img"
guest_console kernel-log-clean

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
guest_end
