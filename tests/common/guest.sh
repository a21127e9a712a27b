# SPDX-License-Identifier: GPL-2.0-or-later
# The variables below are the caller's, not assigned here (SC2154).
# shellcheck shell=bash disable=SC2154
#
# What tests/kmod/kcheck.sh and tests/xfs/xfscheck.sh share: find Debian's
# Linux 6.1 image and modules, assemble a busybox initramfs, boot it in
# qemu, count the guest's "<TAG> PASS|FAIL" lines.  Sourced, not run.
#
# The caller sets before sourcing:
#   srcdir        the source tree
#   guest_name    the prefix of its own messages ("kcheck")
#   guest_tag     the prefix of the guest's result lines ("KCHECK")
#   work          a directory of its own, emptied by guest_root
# and before guest_boot: timeout_s (seconds) and accel (qemu's options).
#
# Results go through result(); passed and failed count them.  Exit
# status, as both scripts promise: 0 all passed, 1 something failed, 77
# skipped (the reason printed).

passed=0
failed=0

guest_skip() { echo "$guest_name: SKIPPED: $*"; exit 77; }

# guest_abort NAME: a step before the boot failed, so no guest result can follow
guest_abort() {
	echo "$guest_tag FAIL $1"
	echo "0 passed, 1 failed"
	exit 1
}

result() { # result PASS|FAIL name
	if [ "$1" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	echo "$guest_tag $1 $2"
}

# guest_find_kernel: kver, vmlinuz, moddir and busybox, or a skip that says
# what to install.  The kernel is the one scripts/kmod.sh finds headers for,
# so that modules built against those headers load in it.
guest_find_kernel() {
	kver=$(bash "$srcdir/scripts/kmod.sh" kver)
	[ -n "$kver" ] || guest_skip "no Linux 6.1 amd64 headers in /usr/src (apt-get install linux-headers-amd64)"
	vmlinuz=/boot/vmlinuz-$kver
	moddir=/lib/modules/$kver/kernel
	[ -r "$vmlinuz" ] || guest_skip "no readable $vmlinuz (apt-get install linux-image-amd64; reading it needs root)"
	[ -d "$moddir" ] || guest_skip "no $moddir (apt-get install linux-image-amd64)"
	command -v qemu-system-x86_64 > /dev/null ||
		guest_skip "no qemu-system-x86_64 (apt-get install qemu-system-x86)"
	command -v cpio > /dev/null || guest_skip "no cpio"
	# the initramfs has no libraries for a dynamically linked one
	busybox=""
	for b in /bin/busybox /usr/bin/busybox; do
		if [ -x "$b" ] && ! ldd "$b" > /dev/null 2>&1; then busybox=$b; break; fi
	done
	[ -n "$busybox" ] || guest_skip "no statically linked busybox (apt-get install busybox-static)"
}

# guest_root: a fresh $work/root (root=) with busybox and, in /mods with
# their load order in /mods/order, the modules a virtio disk and XFS's or
# the store's crc32c need: Debian builds them as modules.
guest_root() {
	local m order=""

	rm -rf "$work"
	root=$work/root
	mkdir -p "$root"/{bin,mods,proc,sys,dev,tmp,mnt,lib64}
	cp "$busybox" "$root/bin/busybox"
	for m in drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_legacy_dev \
		 drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci drivers/block/virtio_blk \
		 crypto/crc32c_generic lib/libcrc32c; do
		if [ -f "$moddir/$m.ko" ]; then
			cp "$moddir/$m.ko" "$root/mods/"
			order="$order $(basename "$m").ko"
		elif [ -f "$moddir/$m.ko.xz" ]; then
			# busybox's insmod may not read compressed modules
			xz -dc "$moddir/$m.ko.xz" > "$root/mods/$(basename "$m").ko"
			order="$order $(basename "$m").ko"
		fi
		# a missing one may be built in
	done
	echo "$order" > "$root/mods/order"
}

# guest_boot MEM_MB IMAGE...: pack $root, boot it with the images as
# virtio disks vda, vdb, ...; qrc is qemu's exit status, guest_s the
# seconds it ran, $work/console.txt its console.  The guest's result lines
# are counted and echoed.
guest_boot() {
	local mem=$1 img drives=() line t0
	shift
	for img in "$@"; do
		drives+=(-drive "file=$img,format=raw,if=virtio")
	done
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"
	t0=$(date +%s)
	# Software emulation by default (KVM is not usable for guests on these
	# machines).  stdin from /dev/null: qemu -nographic would otherwise take
	# over the terminal, and under make wait for it.  timeout: a hung guest
	# must not hang the test run.
	# shellcheck disable=SC2086
	timeout -k 5 "$timeout_s" qemu-system-x86_64 $accel -m "$mem" -smp 2 -nographic -no-reboot \
		-kernel "$vmlinuz" -initrd "$work/initrd.gz" "${drives[@]}" \
		-append "console=ttyS0 quiet panic=-1 oops=panic" < /dev/null > "$work/console.log" 2>&1
	qrc=$?
	guest_s=$(($(date +%s) - t0))
	tr -d '\r' < "$work/console.log" > "$work/console.txt"
	while IFS= read -r line; do
		case "$line" in
		"$guest_tag PASS "*) passed=$((passed + 1)); echo "$line" ;;
		"$guest_tag FAIL "*) failed=$((failed + 1)); echo "$line" ;;
		"$guest_tag-INFO "*|"$guest_tag-DMESG "*|"$guest_tag-TIME "*) echo "$line" ;;
		esac
	done < <(grep -ao "$guest_tag.*" "$work/console.txt")
}

# guest_console NAME: two results from the console: the guest got to
# "<TAG> DONE" (a timeout or a crash does not), and no kernel complaint
# (result NAME) reached the console, whatever the guest itself checked.
guest_console() {
	local bad='BUG:|Oops|Kernel panic|WARNING:|assertion failed'

	if grep -aq "$guest_tag DONE" "$work/console.txt"; then
		result PASS "guest-finished (${guest_s} s, qemu exit $qrc)"
	else
		result FAIL "guest-finished: no $guest_tag DONE after ${guest_s} s (qemu exit $qrc; timeout or crash); last console lines:"
		tail -n 25 "$work/console.txt"
	fi
	if grep -aqE "$bad" "$work/console.txt"; then
		result FAIL "$1"
		grep -aE -A5 "$bad" "$work/console.txt" | head -n 30
	else
		result PASS "$1"
	fi
}

# guest_end: the summary line and the exit status
guest_end() {
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ] && exit 0
	exit 1
}
