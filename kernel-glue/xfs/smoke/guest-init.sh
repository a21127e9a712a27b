#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# /init of the XFS smoke guest (kernel-glue/xfs/smoke/smoke.sh builds the
# initramfs): load the rebuilt xfs.ko, mount the host's image, one
# FISWAPRANGE checked block by block (an unwritten extent among the
# blocks), then long swaps cut by XFS_IOC_GOINGDOWN, unmount, mount: log
# recovery finishes the chain; each file must be all old or all new; user
# quota follows the blocks and a hard limit stops a swap with EDQUOT.
# One "SMOKE PASS|FAIL name" line per check, then "SMOKE DONE".

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo 1 > /proc/sys/kernel/printk
echo

pass() { echo "SMOKE PASS $*"; }
fail() { echo "SMOKE FAIL $*"; }
finish() {
	if dmesg | grep -qE 'BUG:|WARNING:|Oops|Call Trace|Internal error|Corruption|blocked for more'; then
		fail "kernel-log-clean"
		dmesg | grep -E -B2 -A12 'BUG:|WARNING:|Oops|Internal error|Corruption|blocked for more' |
			head -n 80 | sed 's/^/SMOKE-DMESG /'
	else
		pass "kernel-log-clean"
	fi
	dmesg | grep -E 'XFS|swapext' | sed 's/^/SMOKE-KLOG /'
	echo "SMOKE DONE"
	sync
	poweroff -f
	sleep 10
}

for m in $(cat /mods/order) xfs.ko; do
	if ! out=$(insmod "/mods/$m" 2>&1); then
		fail "insmod-$m: $out"
		finish
	fi
done
pass "insmod-xfs"
mkdir -p /mnt
if ! out=$(mount -t xfs /dev/vda /mnt 2>&1); then
	fail "mount: $out"
	finish
fi
pass "mount"
if out=$(sxsmoke geom /mnt); then pass "geometry-flag-atomic-swap ($out)"; else fail "geometry-flag-atomic-swap: $out"; fi

# 1. one swap: a has 64 written blocks; b only its odd blocks, and its
#    blocks 0-7 preallocated (4 unwritten blocks among them)
sxsmoke write /mnt/a 1 64 1 0 && sxsmoke write /mnt/b 2 64 2 1 &&
	sxsmoke falloc /mnt/b 0 8 || fail "setup-swap"
if out=$(sxsmoke swap /mnt/a /mnt/b); then pass "fiswaprange ($out ms)"; else fail "fiswaprange: $out"; fi
if out=$(sxsmoke check /mnt/a 2 64 2 1 && sxsmoke check /mnt/b 1 64 1 0); then
	pass "swap-contents"
else
	fail "swap-contents: $out"
fi
# a swap by a user without CAP_FSETID drops setuid and setgid, as a write does
chown 1000:1000 /mnt/a /mnt/b && chmod 6775 /mnt/b
if out=$(sxsmoke swapas 1000 /mnt/a /mnt/b) && [ "$(stat -c %a /mnt/b)" = 775 ] &&
		sxsmoke check /mnt/a 1 64 1 0 && sxsmoke check /mnt/b 2 64 2 1; then
	pass "setuid-setgid-removed"
else
	fail "setuid-setgid-removed: $out; mode $(stat -c %a /mnt/b)"
fi
chown 0:0 /mnt/a /mnt/b
sxsmoke swap /mnt/a /mnt/b > /dev/null || fail "swap-again"
n=$(sxsmoke unwritten /mnt/a 0 8)
[ "$n" = 4 ] && pass "unwritten-stays-unwritten" || fail "unwritten-stays-unwritten: $n blocks, want 4"
umount /mnt && mount -t xfs /dev/vda /mnt || fail "remount"
if out=$(sxsmoke check /mnt/a 2 64 2 1 && sxsmoke check /mnt/b 1 64 1 0); then
	pass "swap-contents-after-remount"
else
	fail "swap-contents-after-remount: $out"
fi

# two ranges of one file: blocks 0-15 and 40-55 of g
sxsmoke write /mnt/g 9 64 1 0 || fail "setup-one-file"
if out=$(sxsmoke range /mnt/g 0 /mnt/g 40 16) && sxsmoke blk /mnt/g 0 9 40 && sxsmoke blk /mnt/g 15 9 55 &&
		sxsmoke blk /mnt/g 40 9 0 && sxsmoke blk /mnt/g 55 9 15 && sxsmoke blk /mnt/g 16 9 16 &&
		sxsmoke blk /mnt/g 39 9 39; then
	pass "one-file-two-ranges"
else
	fail "one-file-two-ranges: $out"
fi
# shared blocks: h2 is a clone of h; swap h2 with i
sxsmoke write /mnt/h 11 16 1 0 && sxsmoke clone /mnt/h /mnt/h2 && sxsmoke write /mnt/i 12 16 1 0 ||
	fail "setup-reflink"
if out=$(sxsmoke swap /mnt/h2 /mnt/i) && sxsmoke check /mnt/i 11 16 1 0 &&
		sxsmoke check /mnt/h2 12 16 1 0 && sxsmoke check /mnt/h 11 16 1 0; then
	pass "reflinked-extents"
else
	fail "reflinked-extents: $out"
fi
# TO_EOF with unequal sizes: j is 10 blocks and 100 bytes, k 30 blocks
sxsmoke write /mnt/j 15 10 1 0 && sxsmoke size /mnt/j 41060 && sxsmoke write /mnt/k 16 30 1 0 ||
	fail "setup-to-eof"
if out=$(sxsmoke range /mnt/j 0 /mnt/k 0 0 8) && [ "$(stat -c %s /mnt/j)" = 122880 ] &&
		[ "$(stat -c %s /mnt/k)" = 41060 ] && sxsmoke blk /mnt/j 0 16 0 && sxsmoke blk /mnt/j 29 16 29 &&
		sxsmoke blk /mnt/k 9 15 9; then
	pass "to-eof-unequal-sizes"
else
	fail "to-eof-unequal-sizes: $out; sizes $(stat -c %s /mnt/j) $(stat -c %s /mnt/k)"
fi
rm -f /mnt/g /mnt/h /mnt/h2 /mnt/i /mnt/j /mnt/k

# 2. a long swap (every block a piece: N steps) timed whole, then cut
N=${SMOKE_BLOCKS:-6000}
sxsmoke write /mnt/e 5 "$N" 2 0 && sxsmoke write /mnt/f 6 "$N" 2 1 || fail "setup-long"
ext="$(sxsmoke extents /mnt/e) and $(sxsmoke extents /mnt/f) extents"
if ms=$(sxsmoke swap /mnt/e /mnt/f); then
	pass "long-swap ($N blocks, $ext, $ms ms)"
else
	fail "long-swap: $ms"
	ms=1000
fi
rm -f /mnt/e /mnt/f

round=0
set -- ${SMOKE_CUTS:-20 1 40 2 60 1 80 2}
while [ $# -ge 2 ]; do
	pct=$1
	flag=$2
	shift 2
	round=$((round + 1))
	sxsmoke write /mnt/c 3 "$N" 2 0 && sxsmoke write /mnt/d 4 "$N" 2 1 && sync ||
		fail "setup-crash-$round"
	delay=$((ms * pct / 100))
	out=$(sxsmoke crash /mnt/c /mnt/d "$delay" "$flag")
	before=$(dmesg | grep -c 'swapext: recovering')
	umount /mnt || fail "umount-after-shutdown-$round"
	if ! mount -t xfs /dev/vda /mnt; then
		fail "recovery-mount-$round"
		finish
	fi
	after=$(dmesg | grep -c 'swapext: recovering')
	if sxsmoke check /mnt/c 3 "$N" 2 0 > /dev/null && sxsmoke check /mnt/d 4 "$N" 2 1 > /dev/null; then
		state=old
	elif sxsmoke check /mnt/c 4 "$N" 2 1 > /dev/null && sxsmoke check /mnt/d 3 "$N" 2 0 > /dev/null; then
		state=new
	else
		state=mixed
	fi
	info="cut at ${pct}% (${delay} ms) flag $flag: $out; files $state; SXIs recovered $((after - before))"
	[ "$state" != mixed ] && pass "crash-$round all-old-or-all-new ($info)" ||
		fail "crash-$round all-old-or-all-new ($info)"
	if [ $((after - before)) -gt 0 ]; then
		[ "$state" = new ] && pass "crash-$round recovery-finished-the-swap" ||
			fail "crash-$round recovery-finished-the-swap: files $state"
	fi
	rm -f /mnt/c /mnt/d
done

# 3. quota: usage moves with the blocks; over a hard limit, EDQUOT and no
#    change.  The files are written first and the filesystem remounted, so
#    that no speculative preallocation past EOF is left to count.
sxsmoke write /mnt/qa 7 64 1 0 && sxsmoke write /mnt/qb 8 64 8 0 &&
	chown 1000 /mnt/qa && chown 2000 /mnt/qb || fail "setup-quota"
umount /mnt
if ! mount -t xfs -o uquota /dev/vda /mnt; then
	fail "mount-uquota"
	finish
fi
a0=$(sxsmoke quota /dev/vda 1000)
b0=$(sxsmoke quota /dev/vda 2000)
sa=$(stat -c %b /mnt/qa)
sb=$(stat -c %b /mnt/qb)
d=$(((sa - sb) / 8))
if out=$(sxsmoke swap /mnt/qa /mnt/qb); then pass "quota-swap"; else fail "quota-swap: $out"; fi
a1=$(sxsmoke quota /dev/vda 1000)
b1=$(sxsmoke quota /dev/vda 2000)
[ "$a1" = $((a0 - d)) ] && [ "$b1" = $((b0 + d)) ] && [ "$(stat -c %b /mnt/qa)" = "$sb" ] &&
	[ "$(stat -c %b /mnt/qb)" = "$sa" ] &&
	pass "quota-moves-with-blocks (uid 1000 $a0 -> $a1, uid 2000 $b0 -> $b1, $d blocks)" ||
	fail "quota-moves-with-blocks (uid 1000 $a0 -> $a1, uid 2000 $b0 -> $b1; want $d blocks)"
# swapping back gives uid 1000 d blocks: allow it half of them
sxsmoke qlimit /dev/vda 1000 $((a1 + d / 2)) || fail "set-quota-limit"
out=$(sxsmoke swap /mnt/qa /mnt/qb)
a2=$(sxsmoke quota /dev/vda 1000)
b2=$(sxsmoke quota /dev/vda 2000)
case "$out" in
*"Disk quota exceeded"*) pass "quota-hard-limit-edquot" ;;
*) fail "quota-hard-limit-edquot: $out" ;;
esac
if [ "$a2" = "$a1" ] && [ "$b2" = "$b1" ] && sxsmoke check /mnt/qa 8 64 8 0 &&
		sxsmoke check /mnt/qb 7 64 1 0; then
	pass "quota-edquot-changed-nothing"
else
	fail "quota-edquot-changed-nothing (uid 1000 $a2, uid 2000 $b2)"
fi
sxsmoke qlimit /dev/vda 1000 0 || fail "clear-quota-limit"
if out=$(sxsmoke swap /mnt/qa /mnt/qb) && [ "$(sxsmoke quota /dev/vda 1000)" = "$a0" ] &&
		[ "$(sxsmoke quota /dev/vda 2000)" = "$b0" ]; then
	pass "quota-swap-back-restores-usage"
else
	fail "quota-swap-back-restores-usage: $out"
fi
umount /mnt && pass "final-umount" || fail "final-umount"
finish
