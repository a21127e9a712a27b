#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# /init of the kcheck guest (tests/kmod/kcheck.sh builds the initramfs).
# Every check prints one line "KCHECK PASS name" or "KCHECK FAIL name: why";
# the host counts them.  "KCHECK DONE" ends the run, then the guest powers off.

/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp
mount -t tmpfs tmp /tmp
# engine messages stay in the kernel log; the console gets only ours
echo 1 > /proc/sys/kernel/printk
echo

pass() { echo "KCHECK PASS $*"; }
fail() { echo "KCHECK FAIL $*"; }
# check NAME COMMAND...: PASS if COMMAND succeeds, else FAIL with its output
check() {
	name=$1
	shift
	if out=$("$@" 2>&1); then pass "$name"; else fail "$name: $(echo "$out" | tail -n 2 | tr '\n' ' ')"; fi
}
finish() {
	# the console shows only our lines: look at the kernel log itself
	if dmesg | grep -qE 'BUG:|WARNING:|Oops|Call Trace|assertion failed|hung_task|blocked for more'; then
		fail "kernel-log-no-warnings"
		dmesg | grep -E -A12 'BUG:|WARNING:|Oops|assertion failed|blocked for more' | head -n 60 |
			sed 's/^/KCHECK-DMESG /'
	else
		pass "kernel-log-no-warnings"
	fi
	dmesg | grep -E 'swapext|sxuser' | sed 's/^/KLOG /'
	echo "KCHECK DONE"
	sync
	poweroff -f
	sleep 10
}

# 1. Dependencies and the module, all through libkmod (swapext kmod load)
for m in $(cat /mods/order); do
	if ! out=$(swapext kmod load "/mods/$m" 2>&1); then
		fail "load-$m: $out"
		finish
	fi
done
pass "load-dependencies"
# KCHECK_SEED (make soak): only power cuts of concurrent atomic writers, at
# points and with cache losses drawn from the seed, then the host's check.
if [ -n "${KCHECK_SEED:-}" ]; then
	check "kmod-load" swapext kmod load /swapext.ko
	# the seed's last nine digits, behind a 1 so that no leading 0 makes it octal
	s=$((1$(echo "$KCHECK_SEED" | tail -c 10) % 2147483629))
	echo "KCHECK-INFO seed $KCHECK_SEED: $s"
	i=0
	r=$s
	while [ $i -lt 8 ]; do
		i=$((i + 1))
		# an LCG; its high bits choose, its low ones repeat too soon
		r=$(( (r * 1103515245 + 12345) % 2147483648 ))
		h=$((r / 65536))
		case $((h % 4)) in
		0) set -- -s $((h % 120 + 1)) /dev/vda 4 40 ;;
		1) set -- -f $((h % 40 + 1)) /dev/vda 4 40 ;;
		2) set -- -b 64 -s $((h % 60 + 1)) /dev/vda 4 20 ;;
		3) set -- -b 1200 -s $((h % 7 + 9)) /dev/vda 2 8 ;;
		esac
		o=-o; [ $((h / 4 % 3)) = 0 ] && o=
		[ "$r" = 0 ] && r=1
		if out=$(swapext kmod writers $o -r "$r" "$@" 2>&1); then
			pass "seeded-cut-$i (-r $r $o $*: $(echo "$out" | tail -n 1))"
		else
			fail "seeded-cut-$i (-r $r $o $*): $(echo "$out" | tail -n 3 | tr '\n' ' ')"
		fi
	done
	# what the guest counts free, for the host's count of the same image
	if id=$(swapext kmod attach /dev/vda 2>/dev/null); then
		echo "KCHECK-FREE $(swapext kmod info "$id" | sed -n 's/^free //p')"
		swapext kmod detach "$id" > /dev/null 2>&1
	fi
	check "unload" swapext kmod unload
	finish
fi

check "kmod-load-selftest" swapext kmod load /swapext.ko selftest=1
[ -c /dev/swapext-ctl ] && pass "control-device" || { fail "control-device: no /dev/swapext-ctl"; finish; }

# 2. The load-time self-test: one line per scenario in the kernel log
dmesg | sed -n 's/.*swapext: selftest: \(PASS\|FAIL\) \(.*\)/\1 \2/p' > /tmp/st
while read -r verdict rest; do
	echo "KCHECK $verdict selftest/$rest"
done < /tmp/st
total=$(dmesg | sed -n 's/.*swapext: selftest: total: \(.*\)/\1/p' | tail -n 1)
echo "KCHECK-INFO kernel selftest at load: $total"
case "$total" in
*" 0 failed") pass "selftest-at-load ($total)" ;;
*) fail "selftest-at-load: ${total:-no total line}" ;;
esac

# 3. The same through the control device
out=$(swapext kmod selftest 2>&1)
case "$out" in
*" 0 failed") pass "selftest-ioctl ($out)" ;;
*) fail "selftest-ioctl: $out" ;;
esac
# A second module built against swapext.ko's exports uses them
if out=$(swapext kmod load /sxuser.ko 2>&1); then
	line=$(dmesg | sed -n 's/.*sxuser: exported API: //p' | tail -n 1)
	case "$line" in
	*" 0 failed; "*": 0 (Success)") pass "exported-api-from-another-module ($line)" ;;
	*) fail "exported-api-from-another-module: ${line:-no sxuser line}" ;;
	esac
else
	fail "exported-api-from-another-module: $out"
fi
check "unload-api-user" swapext kmod unload sxuser
ver=$(swapext kmod version 2>&1)
echo "KCHECK-INFO version: $ver"
case "$ver" in abi\ 1*) pass "version" ;; *) fail "version: $ver" ;; esac

# 4. Attach the disk the host made with swapext mkfs (clean log)
id=$(swapext kmod attach /dev/vda 2>/tmp/attach1) || { fail "attach: $(cat /tmp/attach1)"; finish; }
pass "attach-fresh ($(cat /tmp/attach1))"
info() { swapext kmod info "$id" | sed -n "s/^$1 //p"; }
bs=$(info blocksize)
[ "$bs" = "$KCHECK_BS" ] && pass "info-blocksize" || fail "info-blocksize: $bs, host made $KCHECK_BS"
free0=$(info free)
check "attach-twice-busy" sh -c "! swapext kmod attach /dev/vda"

# verify_synced: every block of every extent in /tmp/synced is in use
verify_synced() {
	bad=0
	while read -r b l; do
		[ "$(swapext kmod isfree "$id" "$b" "$l")" = "used $l free 0" ] || bad=$((bad + 1))
	done < /tmp/synced
	[ $bad = 0 ] && pass "$1" || fail "$1: $bad extents not wholly in use"
}
# reattach NAME [OPTION]: attach again after a shutdown; recovery runs in the kernel
reattach() {
	id=$(swapext kmod attach $2 /dev/vda 2>/tmp/attach) || { fail "$1: $(cat /tmp/attach)"; finish; }
	echo "KCHECK-INFO $(cat /tmp/attach)"
	rec=$(sed -n 's/.*recovery: \([0-9]*\) records.*/\1/p' /tmp/attach)
	rep=$(sed -n 's/.* \([0-9]*\) buffers replayed.*/\1/p' /tmp/attach)
}

# 5. Durable work (20 allocations committed with SYNC), then a shutdown
# before any checkpoint: the log holds all of it, recovery must replay it
: > /tmp/synced
n=0
ok=1
while [ $n -lt 20 ]; do
	ext=$(swapext kmod alloc -s "$id" 1 $((n % 8 + 1))) || { ok=0; break; }
	echo "$ext" >> /tmp/synced
	n=$((n + 1))
done
[ $ok = 1 ] && pass "alloc-sync-20" || fail "alloc-sync-20: after $n"
synced=0
while read -r b l; do synced=$((synced + l)); done < /tmp/synced
free1=$(info free)
[ "$free1" -eq $((free0 - synced)) ] && pass "free-count-after-alloc" ||
	fail "free-count-after-alloc: $free1, expected $((free0 - synced))"
check "shutdown-after-sync" swapext kmod shutdown "$id"
out=$(swapext kmod detach "$id" 2>&1)
case "$out" in
*"Input/output error"*) pass "detach-after-shutdown ($out)" ;;
*) fail "detach-after-shutdown: $out" ;;
esac
reattach "reattach-1"
[ "${rec:-0}" -gt 0 ] && [ "${rep:-0}" -gt 0 ] && pass "recovery-replayed ($rec records, $rep buffers)" ||
	fail "recovery-replayed: $(cat /tmp/attach)"
verify_synced "synced-extents-recovered"
[ "$(info free)" = "$free1" ] && pass "free-count-after-recovery" ||
	fail "free-count-after-recovery: $(info free), expected $free1"
check "sync" swapext kmod sync "$id"
check "checkpoint" swapext kmod checkpoint "$id"
b=$(head -n 1 /tmp/synced | cut -d' ' -f1)
check "free-then-alloc" sh -c "swapext kmod free $id $b 1 && swapext kmod alloc -s $id 1 1 $b | grep -q '^$b 1\$'"

# 6. The file API: real work when the engine has it, else EOPNOTSUPP
case "$ver" in
*files*)
	fd=$(swapext kmod create "$id" hello) && pass "create" || fail "create"
	check "pwrite" swapext kmod pwrite "$id" "$fd" 0 hello-from-the-kernel
	out=$(swapext kmod pread "$id" "$fd" 0 21)
	[ "$out" = hello-from-the-kernel ] && pass "pread" || fail "pread: $out"
	check "fsync" swapext kmod fsync "$id" "$fd"
	case "$ver" in
	*clone*)
		fd2=$(swapext kmod create "$id" hello-clone) && pass "create-clone-target" ||
			fail "create-clone-target"
		check "clone" swapext kmod clone "$id" "$fd2" "$fd"
		out=$(swapext kmod pread "$id" "$fd2" 0 21)
		[ "$out" = hello-from-the-kernel ] && pass "pread-clone" || fail "pread-clone: $out"
		check "fsync-clone" swapext kmod fsync "$id" "$fd2"
		check "close-clone" swapext kmod close "$id" "$fd2"
		;;
	esac
	check "close" swapext kmod close "$id" "$fd"
	;;
*)
	out=$(swapext kmod create "$id" hello 2>&1)
	case "$out" in
	*"not supported"*) pass "file-api-eopnotsupp (engine has no file API yet)" ;;
	*) fail "file-api-eopnotsupp: $out" ;;
	esac
	;;
esac
# 7. FISWAPRANGE: an atomic swap of two 48-extent files, then one cut short
# by an I/O error in the middle of its chain (the mount shuts down), and
# recovery in the kernel leaves each file all-old or all-new
case "$ver" in
*swaprange*)
	fa=$(swapext kmod create "$id" swapa) && fb=$(swapext kmod create "$id" swapb) &&
		pass "swap-create" || fail "swap-create"
	i=0
	bad=0
	while [ $i -lt 48 ]; do
		swapext kmod pwrite "$id" "$fa" $((i * 8192)) "A-$i" > /dev/null || bad=$((bad + 1))
		swapext kmod pwrite "$id" "$fb" $((i * 8192)) "B-$i" > /dev/null || bad=$((bad + 1))
		i=$((i + 1))
	done
	[ $bad = 0 ] && pass "swap-files-written" || fail "swap-files-written: $bad"
	check "swap-fsync" sh -c "swapext kmod fsync $id $fa && swapext kmod fsync $id $fb"
	len=$((47 * 8192 + 4))
	check "swaprange" swapext kmod swaprange "$id" "$fb" "$fa" 0 0 $len
	# whose piece i each file holds: A or B for all 48, else "mixed"
	holds() { # holds ID FD
		h=""
		j=0
		while [ $j -lt 48 ]; do
			n=$(swapext kmod pread "$1" "$2" $((j * 8192)) $((2 + ${#j})) 2>/dev/null)
			case "$n" in
			"A-$j") w=A ;;
			"B-$j") w=B ;;
			*) w=X ;;
			esac
			[ -z "$h" ] && h=$w
			[ "$h" = "$w" ] || { echo mixed; return; }
			j=$((j + 1))
		done
		echo "$h"
	}
	ha=$(holds "$id" "$fa")
	hb=$(holds "$id" "$fb")
	[ "$ha" = B ] && [ "$hb" = A ] && pass "swap-contents" || fail "swap-contents: a $ha, b $hb"
	# XFS_IOC_SWAPEXT: a stale record is refused, a fresh one swaps back
	# and forth, a length that is not both sizes is EFAULT
	case "$ver" in
	*swapext*)
		out=$(swapext kmod swapext -s "$id" "$fb" "$fa" $len 2>&1)
		case "$out" in *"busy"*) pass "swapext-stale-ebusy" ;; *) fail "swapext-stale-ebusy: $out" ;; esac
		out=$(swapext kmod swapext "$id" "$fb" "$fa" $((len - 4)) 2>&1)
		case "$out" in *"Bad address"*) pass "swapext-not-full-efault" ;; *) fail "swapext-not-full-efault: $out" ;; esac
		check "swapext" swapext kmod swapext "$id" "$fb" "$fa" $len
		ha=$(holds "$id" "$fa")
		hb=$(holds "$id" "$fb")
		[ "$ha" = A ] && [ "$hb" = B ] && pass "swapext-contents" || fail "swapext-contents: a $ha, b $hb"
		check "swapext-again" swapext kmod swapext "$id" "$fb" "$fa" $len
		ha=$(holds "$id" "$fa")
		hb=$(holds "$id" "$fb")
		[ "$ha" = B ] && [ "$hb" = A ] && pass "swapext-contents-again" || fail "swapext-contents-again: a $ha, b $hb"
		;;
	*) fail "swapext: the module does not say it has XFS_IOC_SWAPEXT ($ver)" ;;
	esac
	case "$ver" in
	*faults*)
		# the swap commits twice: its SXI, then one batched step with
		# every exchange; the step's commit fails
		check "swap-arm-commit-error" swapext kmod fault trans_commit 2 5
		out=$(swapext kmod swaprange "$id" "$fb" "$fa" 0 0 $len 2>&1)
		case "$out" in *"Input/output error"*) pass "swap-cut-short" ;; *) fail "swap-cut-short: $out" ;; esac
		swapext kmod fault-clear > /dev/null
		swapext kmod shutdown "$id" > /dev/null 2>&1
		swapext kmod detach "$id" > /dev/null 2>&1
		# -e: a record per transaction, so the late cut below finds
		# the chain's SXI in the log (the default queue would still
		# hold it in memory)
		reattach "reattach-after-swap" -e
		fa=$(swapext kmod open "$id" swapa) && fb=$(swapext kmod open "$id" swapb) &&
			pass "swap-reopen" || fail "swap-reopen"
		ha=$(holds "$id" "$fa")
		hb=$(holds "$id" "$fb")
		if [ "$ha" = A ] && [ "$hb" = B ]; then
			pass "swap-recovered-all-new (recovery: ${rec:-0} records)"
		elif [ "$ha" = B ] && [ "$hb" = A ]; then
			pass "swap-recovered-all-old (recovery: ${rec:-0} records)"
		else
			fail "swap-recovered: a $ha, b $hb"
		fi
		# Cut after the SXI (commit 2 of 2, the batched step), on the
		# mount with a record per transaction: the SXI has reached the
		# log by then, so recovery must finish the swap.
		pa=$ha
		pb=$hb
		check "swap-arm-late-commit-error" swapext kmod fault trans_commit 2 5
		out=$(swapext kmod swaprange "$id" "$fb" "$fa" 0 0 $len 2>&1)
		case "$out" in *"Input/output error"*) pass "swap-cut-late" ;; *) fail "swap-cut-late: $out" ;; esac
		swapext kmod fault-clear > /dev/null
		swapext kmod shutdown "$id" > /dev/null 2>&1
		swapext kmod detach "$id" > /dev/null 2>&1
		reattach "reattach-after-late-cut"
		fa=$(swapext kmod open "$id" swapa) && fb=$(swapext kmod open "$id" swapb) &&
			pass "swap-reopen-late" || fail "swap-reopen-late"
		ha=$(holds "$id" "$fa")
		hb=$(holds "$id" "$fb")
		if [ "$ha" = "$pb" ] && [ "$hb" = "$pa" ]; then
			pass "swap-late-cut-finished-by-recovery (recovery: ${rec:-0} records)"
		else
			fail "swap-late-cut-finished-by-recovery: a $ha, b $hb (before: a $pa, b $pb)"
		fi
		;;
	esac
	;;
*)
	out=$(swapext kmod swaprange "$id" 0 1 0 0 4096 2>&1)
	case "$out" in
	*"not supported"*) pass "fiswaprange-eopnotsupp (engine has no swap_file_range yet)" ;;
	*) fail "fiswaprange-eopnotsupp: $out" ;;
	esac
	;;
esac
out=$(swapext kmod swaprange "$id" 0 1 0 0 4096 64 2>&1)
case "$out" in *"Invalid argument"*) pass "fiswaprange-bad-flags" ;; *) fail "fiswaprange-bad-flags: $out" ;; esac

# Fault sites armed through the control device fail the engine call once
case "$ver" in
*faults*)
	check "fault-arm" swapext kmod fault alloc_extent 1 28
	out=$(swapext kmod alloc -s "$id" 1 1 2>&1)
	case "$out" in *"No space left"*) pass "fault-fails-alloc" ;; *) fail "fault-fails-alloc: $out" ;; esac
	check "fault-once-only" swapext kmod alloc -s "$id" 1 1
	check "fault-arm-trans" swapext kmod fault trans_alloc 1 12
	out=$(swapext kmod alloc -s "$id" 1 1 2>&1)
	case "$out" in *"Cannot allocate memory"*) pass "fault-fails-trans-alloc" ;; *) fail "fault-fails-trans-alloc: $out" ;; esac
	check "fault-clear" swapext kmod fault-clear
	[ "$(info shutdown)" = 0 ] && pass "faults-did-not-shut-down" || fail "faults-did-not-shut-down"
	;;
esac

# Two transaction streams at once (the guest has two CPUs)
swapext kmod work "$id" 1000 > /tmp/w1 2>&1 &
p1=$!
swapext kmod work "$id" 1000 > /tmp/w2 2>&1 &
p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
[ $r1 = 0 ] && [ $r2 = 0 ] && pass "concurrent-work ($(cat /tmp/w1 | tr -d '\n'); $(cat /tmp/w2))" ||
	fail "concurrent-work: $r1 $r2 $(cat /tmp/w1 /tmp/w2)"
check "sync-after-concurrent-work" swapext kmod sync "$id"

# 7. Shut down in the middle of a stream of transactions (one more durable
# allocation made while the stream runs)
swapext kmod work "$id" 100000000 > /tmp/work 2>&1 &
wpid=$!
sleep 1
ext=$(swapext kmod alloc -s "$id" 3 3) && echo "$ext" >> /tmp/synced && pass "alloc-sync-during-work" ||
	fail "alloc-sync-during-work"
free1=$(info free)
sleep 1
check "shutdown-mid-work" swapext kmod shutdown "$id"
wait $wpid
wrc=$?
echo "KCHECK-INFO $(cat /tmp/work)"
[ $wrc = 2 ] && grep -q "Input/output error" /tmp/work && pass "work-stopped-by-shutdown" ||
	fail "work-stopped-by-shutdown: rc $wrc $(cat /tmp/work)"
[ "$(info shutdown)" = 1 ] && pass "info-shutdown" || fail "info-shutdown"
out=$(swapext kmod alloc -s "$id" 1 1 2>&1)
case "$out" in *"Input/output error"*) pass "alloc-after-shutdown-eio" ;; *) fail "alloc-after-shutdown-eio: $out" ;; esac
out=$(swapext kmod detach "$id" 2>&1)
case "$out" in
*"Input/output error"*) pass "detach-mid-work ($out)" ;;
*) fail "detach-mid-work: $out" ;;
esac

# 8. Attach again: recovery runs in the kernel; the durable work is there
reattach "reattach-2"
pass "reattach-after-mid-work-shutdown ($rec records replayed from the log)"
verify_synced "synced-extents-survived"
free2=$(info free)
# the work loop holds at most two extents of up to 4 blocks each
[ "$free2" -le $((free1 + 8)) ] && [ "$free2" -ge $((free1 - 8)) ] && pass "free-count-after-recovery-2 ($free2)" ||
	fail "free-count-after-recovery-2: $free2, during the work $free1"

# the fsync'd file came through the shutdown and the recovery
case "$ver" in
*files*)
	fd=$(swapext kmod open "$id" hello) && out=$(swapext kmod pread "$id" "$fd" 0 21)
	[ "$out" = hello-from-the-kernel ] && pass "file-after-recovery" || fail "file-after-recovery: $out"
	swapext kmod close "$id" "$fd" > /dev/null 2>&1
	;;
esac

# 9. More work after recovery, then a clean detach
bad=0
while read -r b l; do swapext kmod free -s "$id" "$b" "$l" || bad=$((bad + 1)); done < /tmp/synced
[ $bad = 0 ] && pass "free-synced" || fail "free-synced"
ext=$(swapext kmod alloc -s "$id" 5 5) && pass "alloc-after-recovery" || fail "alloc-after-recovery"
echo "KCHECK-EXTENT $ext"
echo "KCHECK-FREE $(info free)"
out=$(swapext kmod detach "$id" 2>&1)
case "$out" in *clean*) pass "detach-clean" ;; *) fail "detach-clean: $out" ;; esac

# Atomic writes in the kernel: one vectored call over two files, its
# refusals, and writers in kernel threads' contexts at once (processes'
# ioctls), with forces one at a time and in flight, and a shutdown among
# them; `kmod writers` checks every file after a remount itself.
case "$ver" in
*atomic*)
	id=$(swapext kmod attach /dev/vda 2>/dev/null) || { fail "attach-for-awrite"; finish; }
	fa=$(swapext kmod create "$id" aw-a) && fb=$(swapext kmod create "$id" aw-b) &&
		pass "awrite-create" || fail "awrite-create"
	out=$(swapext kmod awrite "$id" "$fa" 0 first-range "$fb" 7 second-range 2>&1)
	[ "$out" = 23 ] && pass "awrite-vectored" || fail "awrite-vectored: $out"
	out=$(swapext kmod pread "$id" "$fa" 0 11)
	[ "$out" = first-range ] && pass "awrite-read-first" || fail "awrite-read-first: $out"
	out=$(swapext kmod pread "$id" "$fb" 7 12)
	[ "$out" = second-range ] && pass "awrite-read-second" || fail "awrite-read-second: $out"
	out=$(swapext kmod awrite "$id" "$fa" 0 abc "$fa" 2 xyz 2>&1)
	case "$out" in *"Invalid argument"*) pass "awrite-overlap-einval" ;; *) fail "awrite-overlap-einval: $out" ;; esac
	out=$(swapext kmod awrite "$id" 999 0 abc 2>&1)
	case "$out" in *"Bad file descriptor"*) pass "awrite-badf" ;; *) fail "awrite-badf: $out" ;; esac
	out=$(swapext kmod pread "$id" "$fa" 0 11)
	[ "$out" = first-range ] && pass "awrite-refusals-changed-nothing" ||
		fail "awrite-refusals-changed-nothing: $out"
	check "awrite-abi-refusals" swapext kmod awrite-abi "$id" "$fa"
	stat() { swapext kmod logstats "$id" | sed -n "s/^$1 //p"; }
	f0=$(stat forces)
	out=$(swapext kmod awrite "$id" "$fa" 0 durable-now 2>&1)
	f1=$(stat forces)
	[ "$out" = 11 ] && [ "$f1" -gt "$f0" ] && pass "logstats-durable-awrite-forced ($f0 -> $f1)" ||
		fail "logstats-durable-awrite-forced: $out, forces $f0 -> $f1"
	out=$(swapext kmod awrite -n "$id" "$fa" 0 nosync-then 2>&1)
	f2=$(stat forces)
	[ "$out" = 11 ] && [ "$f2" = "$f1" ] && pass "logstats-nosync-awrite-not-forced ($f2)" ||
		fail "logstats-nosync-awrite-not-forced: $out, forces $f1 -> $f2"
	echo "KCHECK-INFO logstats: $(swapext kmod logstats "$id" | tr '\n' ' ')"
	out=$(swapext kmod detach "$id" 2>&1)
	case "$out" in *clean*) pass "detach-after-awrite" ;; *) fail "detach-after-awrite: $out" ;; esac
	id=$(swapext kmod attach /dev/vda 2>/dev/null) || { fail "attach-after-awrite"; finish; }
	fa=$(swapext kmod open "$id" aw-a) && out=$(swapext kmod pread "$id" "$fa" 0 11)
	[ "$out" = nosync-then ] && pass "awrite-after-remount-first" ||
		fail "awrite-after-remount-first: $out"
	fb=$(swapext kmod open "$id" aw-b) && out=$(swapext kmod pread "$id" "$fb" 7 12)
	[ "$out" = second-range ] && pass "awrite-after-remount-second" ||
		fail "awrite-after-remount-second: $out"
	swapext kmod detach "$id" > /dev/null 2>&1

	writers() {
		name=$1
		shift
		if out=$(swapext kmod writers "$@" 2>&1); then
			pass "$name ($(echo "$out" | tail -n 1))"
		else
			fail "$name: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
		fi
	}
	writers "writers-one-force-at-a-time" /dev/vda 4 40
	writers "writers-forces-in-flight" -o /dev/vda 4 40
	writers "writers-in-flight-shutdown" -o -s 50 /dev/vda 4 40
	writers "writers-in-flight-beside-manifests" -o -b 64 /dev/vda 4 20
	writers "writers-beside-manifests-shutdown" -o -b 64 -s 30 /dev/vda 4 20
	# A volatile device (attach -c) loses at SHUTDOWN the writes no flush
	# covered: a write whose log flush failed (the fault site) is on the
	# disk, and recovery replays it, unless the device lost it.
	case "$ver" in
	*faults*)
		for mode in kept lost; do
			opt=; [ $mode = lost ] && opt=-c
			vid=$(swapext kmod attach $opt /dev/vda 2>/dev/null) || { fail "volatile-$mode: attach"; break; }
			vf=$(swapext kmod create "$vid" "volatile-$mode")
			swapext kmod pwrite "$vid" "$vf" 0 before > /dev/null && swapext kmod fsync "$vid" "$vf"
			swapext kmod fault log_flush 1 5 > /dev/null
			out=$(swapext kmod awrite "$vid" "$vf" 0 after! 2>&1)
			swapext kmod fault-clear > /dev/null
			swapext kmod shutdown "$vid"
			lost=$(swapext kmod logstats "$vid" | sed -n 's/^cut-lost //p')
			swapext kmod detach "$vid" > /dev/null 2>&1
			vid=$(swapext kmod attach /dev/vda 2>/dev/null) || { fail "volatile-$mode: reattach"; break; }
			vf=$(swapext kmod open "$vid" "volatile-$mode") && got=$(swapext kmod pread "$vid" "$vf" 0 6)
			want=after!; [ $mode = lost ] && want=before
			case "$out" in
			*"Input/output error"*)
				[ "$got" = "$want" ] && { [ $mode = kept ] || [ "${lost:-0}" -gt 0 ]; } &&
					pass "volatile-$mode (the unflushed record: $got; $lost writes lost)" ||
					fail "volatile-$mode: read $got, expected $want; $lost writes lost" ;;
			*) fail "volatile-$mode: the write whose flush failed returned: $out" ;;
			esac
			swapext kmod detach "$vid" > /dev/null 2>&1
		done
		;;
	esac
	# the same cuts on a device that loses every write no flush covered
	writers "writers-power-cut" -c -s 50 /dev/vda 4 40
	writers "writers-in-flight-power-cut" -o -c -s 50 /dev/vda 4 40
	writers "writers-in-flight-power-cut-early" -o -c -s 7 /dev/vda 4 40
	writers "writers-beside-manifests-power-cut" -o -c -b 64 -s 30 /dev/vda 4 20
	case "$ver" in
	*faults*)
		# the N-th log flush fails, then the power goes with the cache
		for n in 3 10 25; do
			writers "writers-flush-$n-fails-power-cut" -c -f $n /dev/vda 4 40
			writers "writers-in-flight-flush-$n-fails-power-cut" -o -c -f $n /dev/vda 4 40
		done
		# a random part of the cache lost: a record may survive the data it maps
		for seed in 1 2 3 4; do
			writers "writers-manifests-flush-fails-random-cut-$seed" -o -r $seed -b 64 \
				-f $((seed * 4)) /dev/vda 4 20
		done
		# writes over 1 MiB take twins and swap intents, which recovery finishes;
		# the small writer ends first, so the cut lands among the large ones
		writers "writers-twins-flush-fails-power-cut" -o -c -b 1200 -f 14 /dev/vda 2 8
		;;
	esac
	for seed in 5 6; do
		writers "writers-in-flight-random-cut-$seed" -o -r $seed -s $((seed * 9)) /dev/vda 4 40
		writers "writers-manifests-random-cut-$seed" -o -r $seed -b 64 -s $((seed * 5)) /dev/vda 4 20
	done
	writers "writers-twins-power-cut" -o -c -b 1200 -s 12 /dev/vda 2 8
	writers "writers-twins-random-cut" -o -r 7 -b 1200 -s 13 /dev/vda 2 8
	dmesg | sed -n 's/.*swapext: power cut: /KCHECK-INFO power cut: /p'
	;;
*)
	fail "atomic-writes: the module does not offer them ($ver)"
	;;
esac
check "reattach-readonly" sh -c "i=\$(swapext kmod attach -r /dev/vda) && swapext kmod detach \$i"
# Unloading with an instance attached unmounts it cleanly
id=$(swapext kmod attach /dev/vda 2>/dev/null) && ext=$(swapext kmod alloc "$id" 2 2) ||
	fail "attach-before-unload"
freeu=$(info free)
check "unload-with-instance-attached" swapext kmod unload
[ ! -e /dev/swapext-ctl ] && pass "control-device-gone" || fail "control-device-gone"
check "reload" swapext kmod load /swapext.ko
id=$(swapext kmod attach /dev/vda 2>/tmp/attach3) || fail "attach-after-reload: $(cat /tmp/attach3)"
grep -q "recovery: 0 records" /tmp/attach3 && pass "unload-had-unmounted-cleanly" ||
	fail "unload-had-unmounted-cleanly: $(cat /tmp/attach3)"
[ "$(info free)" = "$freeu" ] && pass "unload-kept-the-work" || fail "unload-kept-the-work: $(info free), expected $freeu"
set -- $ext
check "free-after-reload" swapext kmod free -s "$id" "$1" "$2"
echo "KCHECK-FREE $(info free)"
out=$(swapext kmod detach "$id" 2>&1)
case "$out" in *clean*) pass "detach-clean-2" ;; *) fail "detach-clean-2: $out" ;; esac
check "unload" swapext kmod unload
finish
