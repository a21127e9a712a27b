/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Userspace block devices: a file-backed device and a crash-emulating
 * device that wraps any other device.
 */
#ifndef SWAPEXT_DEVICE_H
#define SWAPEXT_DEVICE_H

#include <swapext/types.h>
#include <swapext/bdev.h>

enum {
	SX_FILEDEV_RDONLY	= (1u << 0),
	SX_FILEDEV_CREATE	= (1u << 1),	/* create or extend to the given size */
	SX_FILEDEV_DIRECT	= (1u << 2),	/* O_DIRECT (falls back with -EINVAL if unsupported) */
};

/**
 * sx_filedev_open() - open a file (or block device node) as a device
 * @size: with SX_FILEDEV_CREATE, the size to create or extend to (bytes)
 *
 * Writes use pwrite, flush uses fdatasync, FUA writes are followed by
 * fdatasync.  Return: 0 or a negative errno.
 */
SX_API int sx_filedev_open(const char *path, unsigned int flags, uint64_t size,
			   struct sx_bdev **bdp);

/**
 * sx_memdev_create() - a device held in memory, @size bytes (for tests)
 */
SX_API int sx_memdev_create(uint64_t size, uint32_t sectsize, struct sx_bdev **bdp);

/** sx_bdev_destroy() - close any device; NULL is ignored */
SX_API void sx_bdev_destroy(struct sx_bdev *bd);

/* Fates of a write that was not yet durable when the power went. */
enum sx_crash_mode {
	SX_CRASH_KEEP,		/* every volatile write reached the media */
	SX_CRASH_DROP,		/* none did */
	SX_CRASH_TEAR,		/* each reached it up to a random sector boundary */
	SX_CRASH_RANDOM,	/* each independently kept, dropped or torn */
	SX_CRASH_NEWEST,	/* only the newest (the one in flight at a cut) did:
				 * the worst reordering a volatile cache may do */
};

enum sx_io_kind {
	SX_IO_READ,
	SX_IO_WRITE,
	SX_IO_FLUSH,
};

struct sx_crashdev;

struct sx_crashdev_stats {
	uint64_t	cs_reads;
	uint64_t	cs_writes;	/* every write issued, FUA included */
	uint64_t	cs_fua_writes;
	uint64_t	cs_flushes;
	uint64_t	cs_bytes_read;
	uint64_t	cs_bytes_written;
	uint64_t	cs_volatile;	/* writes not yet durable now */
	uint64_t	cs_injected_errors;
	bool		cs_dead;	/* power was cut */
};

/**
 * sx_crashdev_create() - wrap @lower in a crash-emulating device
 * @cdp: the control handle; stays valid until the returned device is destroyed
 *
 * Writes pass through to @lower at once, but the device remembers what
 * every sector held since the last flush, so that at a power cut each
 * volatile write can be kept, dropped or torn at a sector boundary.  FUA
 * writes are durable at once.  @lower is not destroyed with the wrapper.
 */
SX_API int sx_crashdev_create(struct sx_bdev *lower, uint64_t seed, struct sx_bdev **bdp,
			      struct sx_crashdev **cdp);

/**
 * sx_crashdev_cut_at_write() - lose power while write number @n (1-based,
 * counted from creation) is in flight: that write gets a fate too and fails,
 * and every I/O after it fails with -EIO.  @n = 0 disarms.
 */
SX_API void sx_crashdev_cut_at_write(struct sx_crashdev *cd, uint64_t n,
				     enum sx_crash_mode mode);

/** sx_crashdev_cut_now() - lose power now, applying @mode to volatile writes */
SX_API void sx_crashdev_cut_now(struct sx_crashdev *cd, enum sx_crash_mode mode);

/**
 * sx_crashdev_fail() - make the @nth I/O of @kind (1-based, counted from
 * now) fail with @error, once or (with @forever) from then on
 */
SX_API void sx_crashdev_fail(struct sx_crashdev *cd, enum sx_io_kind kind, uint64_t nth,
			     bool forever, int error);

/** sx_crashdev_clear_faults() - disarm every injected I/O error */
SX_API void sx_crashdev_clear_faults(struct sx_crashdev *cd);

/**
 * sx_crashdev_set_write_hook() - call @fn(@arg, @n) before write number @n
 * is counted or issued, while the power is on (NULL: none)
 *
 * For tests that share one run's prefix among many crash points: the hook
 * may fork() and, in the child, arm sx_crashdev_cut_at_write(@n), so that
 * every child is the same run cut at a different write.  The hook runs
 * without the device's lock, and @n is exact only while one thread writes.
 */
SX_API void sx_crashdev_set_write_hook(struct sx_crashdev *cd, void (*fn)(void *arg, uint64_t n),
				       void *arg);

/** sx_crashdev_get_stats() - copy the counters */
SX_API void sx_crashdev_get_stats(struct sx_crashdev *cd, struct sx_crashdev_stats *st);

/** sx_crashdev_set_sectsize() - sector size used for tearing (default: lower's) */
SX_API void sx_crashdev_set_sectsize(struct sx_crashdev *cd, uint32_t sectsize);

/*
 * Userspace platform extras.
 */
typedef void (*sx_log_callback)(void *arg, enum sx_log_level level, const char *msg);

/** sx_set_log_callback() - send engine messages to @fn (NULL: stderr, warnings and up) */
SX_API void sx_set_log_callback(sx_log_callback fn, void *arg);

/**
 * sx_fault_arm() - make sx_fault(@site) return @error on its @nth call from
 * now (1-based), once or, with @forever, on every call from then on
 */
SX_API int sx_fault_arm(const char *site, uint64_t nth, bool forever, int error);
/** sx_fault_disarm_all() - disarm every fault site */
SX_API void sx_fault_disarm_all(void);
/** sx_fault_hits() - how often sx_fault(@site) has been called */
SX_API uint64_t sx_fault_hits(const char *site);
/**
 * sx_fault_set_hook() - call @fn(@arg, @site) in the calling thread at
 * every sx_fault() call from now on, before the site's armed error is
 * decided (NULL: none), so that a test can make something happen at an
 * exact point of an operation (another thread's work, say)
 */
SX_API void sx_fault_set_hook(void (*fn)(void *arg, const char *site), void *arg);

/*
 * Allocation faults.  Every sx_alloc()/sx_zalloc() the engine makes is
 * counted, and a test can make one of them, or all from one on, return
 * NULL as an exhausted kernel allocator would.  The user library only: the
 * kernel module has the kernel's own fault injection (failslab).
 */
struct sx_alloc_stats {
	uint64_t	as_calls;	/* allocations asked for since the program started */
	uint64_t	as_failed;	/* of them, failed by sx_alloc_fail() */
	int64_t		as_live;	/* allocated and not yet freed (sx_free) */
};

/**
 * sx_alloc_fail() - make the @nth allocation from now (1-based) fail, once
 * or, with @forever, every one from then on; @nth 0 disarms.  Thread-safe;
 * a disarmed allocation pays one relaxed atomic load for the check.
 */
SX_API void sx_alloc_fail(uint64_t nth, bool forever);
/** sx_alloc_get_stats() - copy the allocation counters */
SX_API void sx_alloc_get_stats(struct sx_alloc_stats *st);

#endif /* SWAPEXT_DEVICE_H */
