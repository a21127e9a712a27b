/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swapext public API: make, mount, check and inspect a filesystem.
 *
 * All functions return 0 or a negative errno.  -EFSCORRUPTED (EUCLEAN) means
 * bad metadata, -EFSBADCRC (EBADMSG) a checksum mismatch, -EIO a device
 * error or a mount that has shut down.
 */
#ifndef SWAPEXT_SWAPEXT_H
#define SWAPEXT_SWAPEXT_H

#include "sx_platform.h"

struct sx_mount;
struct sx_bdev;

#ifndef SX_API
#define SX_API
#endif

/* Options for sx_mkfs(); zero fields take defaults. */
struct sx_mkfs_opts {
	u32		mo_blocksize;		/* 512..65536, power of 2; default 4096 */
	u32		mo_logblocks;		/* default: 1/64 of the device, 256 KiB..64 MiB */
	u64		mo_dblocks;		/* default: the whole device */
	u32		mo_feat_log_incompat;	/* SX_FEAT_LOG_INCOMPAT_* */
	const u8	*mo_uuid;		/* 16 bytes; default derived from the clock */
	const char	*mo_label;
};

/**
 * sx_mkfs() - write a new, empty filesystem on @bd
 *
 * Return: 0, -EINVAL for impossible geometry, or a device error.
 */
SX_API int sx_mkfs(struct sx_bdev *bd, const struct sx_mkfs_opts *opts);

enum {
	SX_MOUNT_RDONLY		= (1u << 0),	/* no writes at all */
	SX_MOUNT_NORECOVERY	= (1u << 1),	/* with RDONLY: do not replay the log */
};

struct sx_mount_opts {
	u32		mo_flags;		/* SX_MOUNT_* */
	u32		mo_bcache_max;		/* buffers cached at most; default 4096 */
	const char	*mo_name;		/* for log messages */
};

/* What log recovery did at mount. */
struct sx_recovery_stats {
	u64	rs_records;		/* valid records found */
	u64	rs_ops;
	u64	rs_bufs_replayed;	/* buffer ops applied */
	u64	rs_bufs_skipped;	/* buffer ops older than the block */
	u64	rs_bufs_cancelled;
	u64	rs_intents;		/* unfinished intents finished */
	u64	rs_head_lsn;
	u64	rs_tail_lsn;
	int	rs_stop_reason;		/* 0: clean end of the log; else why it stopped */
};

/**
 * sx_mount() - open the filesystem on @bd, recovering the log if needed
 *
 * Return: 0, -EFSCORRUPTED/-EFSBADCRC for a bad superblock or log,
 * -EOPNOTSUPP for unknown feature bits, -EIO, -ENOMEM.
 */
SX_API int sx_mount(struct sx_bdev *bd, const struct sx_mount_opts *opts,
		    struct sx_mount **mpp);

/**
 * sx_unmount() - checkpoint and close; frees @mp even on error
 *
 * Return: 0, or the first error (including a shutdown's).
 */
SX_API int sx_unmount(struct sx_mount *mp);

/** sx_shutdown() - stop all I/O at once without flushing the log */
SX_API void sx_shutdown(struct sx_mount *mp);

/** sx_sync() - make everything committed so far durable */
SX_API int sx_sync(struct sx_mount *mp);

/** sx_checkpoint() - sync, write metadata in place and move the log tail */
SX_API int sx_checkpoint(struct sx_mount *mp);

/* Filesystem facts for `swapext info` and tests. */
struct sx_info {
	u32	in_version;
	u32	in_blocksize;
	u32	in_sectsize;
	u64	in_dblocks;
	u64	in_free_blocks;
	u64	in_logstart;
	u32	in_logblocks;
	u64	in_bmapstart;
	u32	in_bmapblocks;
	u64	in_datastart;
	u32	in_feat_compat;
	u32	in_feat_ro_compat;
	u32	in_feat_incompat;
	u32	in_feat_log_incompat;
	u64	in_log_head;
	u64	in_log_tail;
	u32	in_log_epoch;
	u64	in_sb_seq;
	u8	in_uuid[16];
	char	in_label[33];
};

/** sx_get_info() - describe a mounted filesystem */
SX_API int sx_get_info(struct sx_mount *mp, struct sx_info *info);

/** sx_get_recovery_stats() - what recovery did when @mp was mounted */
SX_API void sx_get_recovery_stats(struct sx_mount *mp, struct sx_recovery_stats *rs);

/* Problem reports of the checker and lines of the log printer. */
typedef void (*sx_report_fn)(void *arg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * sx_check() - verify everything on an unmounted device
 * @report: called once per problem found (and for notes)
 * @problems: set to the number of problems
 *
 * Return: 0 if the checker ran (problems may still be > 0), or an error
 * that kept it from running.
 */
SX_API int sx_check(struct sx_bdev *bd, sx_report_fn report, void *arg,
		    u64 *problems);

/**
 * sx_logprint() - decode every record and item of the log, from the tail
 * to the end of the valid log and then on while headers still parse,
 * marking bad CRCs, torn and stale records
 */
SX_API int sx_logprint(struct sx_bdev *bd, sx_report_fn print, void *arg);

/** sx_strerror() - a message for a swapext error (negative errno) */
SX_API const char *sx_strerror(int error);

#endif /* SWAPEXT_SWAPEXT_H */
