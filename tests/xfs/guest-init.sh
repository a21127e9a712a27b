#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# /init of the xfscheck guest (tests/xfs/xfscheck.sh builds the initramfs
# and puts the settings in /xc.env).  Disks: /dev/vda the main image
# (mkfs.xfs -m crc=1,reflink=1), /dev/vdb the quota image.  Every check
# prints "XFSCHECK PASS name" or "XFSCHECK FAIL name: why"; the scenario's
# transcript comes out as "XSCEN " lines.  "XFSCHECK DONE" ends the run.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp /mnt/a /mnt/q
mount -t tmpfs tmp /tmp
echo 1 > /proc/sys/kernel/printk
echo
. /xc.env

pass() { echo "XFSCHECK PASS $*"; }
fail() { echo "XFSCHECK FAIL $*"; }
now() { cut -d' ' -f1 /proc/uptime; }
finish() {
	umount /mnt/a 2> /dev/null
	umount /mnt/q 2> /dev/null
	# after the guest's unmounts the logs are clean: the host runs xfs_repair -n
	if dmesg | grep -qE 'BUG:|WARNING:|Oops|Call Trace|Assertion failed|Internal error|Corruption|blocked for more'; then
		fail "kernel-log-clean"
		dmesg | grep -E -B2 -A12 'BUG:|WARNING:|Oops|Assertion failed|Internal error|Corruption|blocked for more' |
			head -n 80 | sed 's/^/XFSCHECK-DMESG /'
	else
		pass "kernel-log-clean"
	fi
	dmesg | grep -iE 'xfs|swap' | tail -n 40 | sed 's/^/XFSCHECK-KLOG /'
	echo "XFSCHECK DONE"
	sync
	poweroff -f
	sleep 10
}
# part NAME ARGS...: one part of the guest program, timed
part() {
	t0=$(now)
	/xfscheck "$@"
	echo "XFSCHECK-TIME $1 $(now) - $t0"
}

for m in $(cat /mods/order); do
	insmod "/mods/$m" || { fail "load-$m"; finish; }
done
if out=$(insmod /xfs.ko 2>&1); then
	pass "load-xfs.ko ($XC_MODULE)"
else
	fail "load-xfs.ko: $out"
	finish
fi
echo "XFSCHECK-INFO $(dmesg | grep -m1 'SGI XFS')"

if out=$(mount -t xfs /dev/vda /mnt/a 2>&1); then
	pass "mount-reflink-image"
else
	fail "mount-reflink-image: $out"
	finish
fi
part errtab /mnt/a/errtab
part swaps /mnt/a/swaps "$XC_EXTENTS"
part scen /mnt/a/scen "$XC_SEED" "$XC_OPS"
# it unmounts and mounts /dev/vda itself: nothing may hold /mnt/a open
part misc /dev/vda /mnt/a
# everything written so far survives an unmount and mount
if umount /mnt/a && mount -t xfs /dev/vda /mnt/a; then
	pass "remount-reflink-image"
else
	fail "remount-reflink-image"
fi
part shutdown /dev/vda /mnt/a "$XC_POINTS" "$XC_CHAIN"
umount /mnt/a && pass "unmount-after-shutdowns" || fail "unmount-after-shutdowns"

if out=$(mount -t xfs -o uquota,gquota /dev/vdb /mnt/q 2>&1); then
	pass "mount-quota-image"
	part quota /dev/vdb /mnt/q
	umount /mnt/q && pass "unmount-quota-image" || fail "unmount-quota-image"
else
	fail "mount-quota-image: $out"
fi
finish
