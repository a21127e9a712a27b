/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the kernel glue files share: the block and memory devices, fault
 * site control and the glue's own self-test.  Not part of the engine
 * contract; engine/ never includes this.
 */
#ifndef SX_KGLUE_H
#define SX_KGLUE_H

#include "sx_platform.h"
#include <swapext/swapext.h>

/* Longest fault site name, NUL included (the control ABI's field size). */
#define SX_KFAULT_NAME_MAX	48

/*
 * Every kernel device begins with this: the contract's sx_bdev and the
 * "power is off" flag that sx_kdev_kill() sets and every I/O checks.
 */
struct sx_kdev {
	struct sx_bdev	kd_bd;
	atomic_t	kd_dead;
	/* what a power cut loses, done once by sx_kdev_kill(): writes lost or -errno */
	int		(*kd_lose)(struct sx_kdev *kd);
};

/* sx_kdev_dead() - true once sx_kdev_kill() was called on @bd */
static inline bool sx_kdev_dead(struct sx_bdev *bd)
{
	return atomic_read(&container_of(bd, struct sx_kdev, kd_bd)->kd_dead) != 0;
}

/* sx_kdev_check_range() - -EINVAL unless [@off, @off + @len) is inside @bd and sector-aligned */
int sx_kdev_check_range(const struct sx_bdev *bd, u64 off, u64 len);

/**
 * sx_kbdev_open() - open the block device at @path as an sx_bdev
 * @rdonly: open for reading only; writes and flushes then fail with -EROFS
 *
 * The device is opened exclusively (a second attach of the same device, or
 * a mounted filesystem on it, is -EBUSY).  I/O goes through bios, written
 * with REQ_FUA for SX_BDEV_FUA and flushed with REQ_PREFLUSH.
 * Return: 0 or a negative errno.
 */
int sx_kbdev_open(const char *path, bool rdonly, struct sx_bdev **bdp);

/**
 * sx_kbdev_set_volatile() - make a device from sx_kbdev_open() lose, when
 * sx_kdev_kill() cuts its power, the writes that no flush made durable
 * (for tests: a disk that loses its write cache): all of them, or with a
 * nonzero @seed a random choice (bdev_volatile_os.c); call before any I/O
 */
int sx_kbdev_set_volatile(struct sx_bdev *bd, u32 seed);

/**
 * sx_kmemdev_create() - a device of @size bytes in vmalloc'd memory
 */
int sx_kmemdev_create(u64 size, u32 sectsize, struct sx_bdev **bdp);

/**
 * sx_kdev_kill() - make every later I/O of a device from sx_kbdev_open()
 * or sx_kmemdev_create() fail with -EIO at once (a simulated power cut; the
 * control device's SHUTDOWN).  Writes already submitted complete.  A
 * volatile device then loses its unflushed writes.  Return: how many it
 * lost (0 for any other device), or a negative errno if undoing failed.
 */
int sx_kdev_kill(struct sx_bdev *bd);

/** sx_kdev_destroy() - close a device; NULL is ignored */
void sx_kdev_destroy(struct sx_bdev *bd);

/* fault_os.c: the control side of sx_fault() */
int sx_kfault_arm(const char *site, u64 nth, bool forever, int error);
u64 sx_kfault_hits(const char *site);
void sx_kfault_clear(void);

/* ctl_os.c: the control device and the self-test runner */
#define SX_KCTL_DEVNAME		"swapext-ctl"
int sx_kctl_init(void);
void sx_kctl_exit(void);
/** sx_kctl_run_selftest() - engine scenarios and glue checks, printk'd; -EIO if any failed */
int sx_kctl_run_selftest(u32 *passed, u32 *failed);

/**
 * sx_kglue_selftest() - scenarios for the kernel glue itself (locks,
 * condition variables, atomics, RCU, crc32c, fault sites, the memory device
 * under a real mount); reports like sx_selftest_run() but adds to the counts
 */
void sx_kglue_selftest(sx_report_fn out, void *arg, u32 *passed, u32 *failed);

#endif /* SX_KGLUE_H */
