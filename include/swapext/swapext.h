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

#include <swapext/types.h>
#include <swapext/version.h>
#include <swapext/fsr.h>

struct sx_mount;
struct sx_bdev;

#ifndef SX_API
#define SX_API
#endif

/*
 * On-disk values the API passes through (the rest of the format is the
 * engine's, in format.h): the log-incompat feature sx_mkfs() may set, file
 * types of a mode, and inode flags.
 */
#define SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP (1u << 0)	/* SXI/SXD items may be logged */

#define SX_IFMT			0170000
#define SX_IFREG		0100000
#define SX_IFDIR		0040000

#define SX_DIFLAG_REFLINK	(1u << 0)	/* may share blocks */
#define SX_DIFLAG_IMMUTABLE	(1u << 1)
#define SX_DIFLAG_APPEND	(1u << 2)
#define SX_DIFLAG_SWAPFILE	(1u << 3)	/* in use as swap: no remapping (ETXTBSY) */
#define SX_DIFLAG_ALL		0xfu

/* Options for sx_mkfs(); zero fields take defaults. */
enum {
	/*
	 * Accept a log too small for the largest transaction (clones,
	 * copy-on-write, swaps and deep B+trees then fail with EINVAL): for
	 * tests of the log itself, which want a small log that wraps often.
	 */
	SX_MKFS_SMALL_LOG	= (1u << 0),
};

struct sx_mkfs_opts {
	uint32_t	mk_blocksize;		/* 512..65536, power of 2; default 4096 */
	/*
	 * Default: 1/64 of the device, 256 KiB..64 MiB, and at least
	 * sx_mkfs_log_min(); a log given here below that is refused.
	 */
	uint32_t	mk_logblocks;
	uint64_t	mk_dblocks;		/* default: the whole device */
	uint32_t	mk_feat_log_incompat;	/* SX_FEAT_LOG_INCOMPAT_* */
	const uint8_t	*mk_uuid;		/* 16 bytes; default derived from the clock */
	const char	*mk_label;
	uint32_t	mk_flags;		/* SX_MKFS_* */
};

/**
 * sx_mkfs() - write a new, empty filesystem on @bd
 *
 * Return: 0, -EINVAL for impossible geometry (a log too small for the
 * largest transaction among it: see sx_mkfs_log_min()), or a device error.
 */
SX_API int sx_mkfs(struct sx_bdev *bd, const struct sx_mkfs_opts *opts);

/**
 * sx_mkfs_log_min() - the smallest log sx_mkfs() accepts for @opts on @bd
 * @logblocks: set to the smallest log in blocks, whose largest record holds
 *	the largest transaction of a filesystem of that block size and size;
 *	0 if no log can (records are at most 1 MiB: the blocks are too large)
 * @res_bytes: set to the size of that transaction
 *
 * Return: 0, or -EINVAL for impossible geometry.
 */
SX_API int sx_mkfs_log_min(struct sx_bdev *bd, const struct sx_mkfs_opts *opts,
			   uint32_t *logblocks, uint32_t *res_bytes);

enum {
	SX_MOUNT_RDONLY		= (1u << 0),	/* no writes at all */
	SX_MOUNT_NORECOVERY	= (1u << 1),	/* with RDONLY: do not replay the log */
	/*
	 * Write each transaction as its own record at commit instead of
	 * queueing it, so nothing is relogged: far more log writes, for
	 * crash tests that want to stop between any two transactions.
	 */
	SX_MOUNT_LOG_EACH	= (1u << 2),
	/*
	 * Let a log force flush while the next one writes its records: for
	 * devices whose writes are on the device when they return (a file
	 * opened with SX_FILEDEV_DIRECT, a block device), where flushes in
	 * flight together overlap.  On a buffered file each flush writes back
	 * the others' records first, and the overlap is slower.
	 */
	SX_MOUNT_OVERLAP_FORCES	= (1u << 3),
};

struct sx_mount_opts {
	uint32_t	mo_flags;	/* SX_MOUNT_* */
	uint32_t	mo_bcache_max;	/* buffers cached at most; default 4096, or
					 * 16 MiB of blocks if that is more */
	const char	*mo_name;	/* for log messages */
};

/* What log recovery did at mount. */
struct sx_recovery_stats {
	uint64_t	rs_records;		/* valid records found */
	uint64_t	rs_ops;
	uint64_t	rs_bufs_replayed;	/* buffer ops applied */
	uint64_t	rs_bufs_skipped;	/* buffer ops older than the block */
	uint64_t	rs_bufs_cancelled;
	uint64_t	rs_intents;		/* unfinished intents finished */
	uint64_t	rs_head_lsn;
	uint64_t	rs_tail_lsn;
	int		rs_stop_reason;		/* 0: clean end of the log; else why it stopped */
	uint64_t	rs_unlinked;		/* inodes with no name freed after recovery */
	uint64_t	rs_dropped;		/* records of a last force whose data did not match */
};

/**
 * sx_init() - make the engine's log item types known (log recovery needs
 * them).  The kernel module calls it at load; in a program the first
 * sx_mount() does, so calling it is optional.  Idempotent and thread-safe.
 *
 * Return: 0, or -EEXIST/-EINVAL if a type clashes with one already known.
 */
SX_API int sx_init(void);

/** sx_exit() - forget what sx_init() registered; no mount may be left */
SX_API void sx_exit(void);

/**
 * sx_version() - the version of the library in use ("0.1.0"): the one that
 * runs, which may differ from SX_LIB_VERSION of the headers a program was
 * built with
 */
SX_API const char *sx_version(void);

/**
 * sx_mount() - open the filesystem on @bd, recovering the log if needed
 *
 * Return: 0, -EFSCORRUPTED/-EFSBADCRC for a bad superblock or log,
 * -EOPNOTSUPP for unknown feature bits, -EIO, -ENOMEM.
 */
SX_API int sx_mount(struct sx_bdev *bd, const struct sx_mount_opts *opts,
		    struct sx_mount **mpp);

/**
 * sx_unmount() - checkpoint and close; frees @mp even on error (a shutdown's
 * reason, then or before, is logged at error level before @mp goes)
 *
 * Return: 0, or the first error (including a shutdown's).
 */
SX_API int sx_unmount(struct sx_mount *mp);

/** sx_shutdown() - stop all I/O at once without flushing the log */
SX_API void sx_shutdown(struct sx_mount *mp);

/**
 * sx_shutdown_state() - whether @mp has shut down, and why
 * @reason: if not NULL, receives (@len bytes, NUL-terminated) what failed
 *	first, as the engine recorded it ("device write of 1 blocks at block
 *	1081 failed", say), or "" while the mount runs
 *
 * Once shut down, every operation on @mp fails (-EIO or the shutdown's
 * error) and nothing more reaches the device; sx_unmount() still frees it.
 *
 * Return: 0 while the mount runs, else the error of the first failure.
 */
SX_API int sx_shutdown_state(struct sx_mount *mp, char *reason, size_t len);

/** sx_sync() - make everything committed so far durable */
SX_API int sx_sync(struct sx_mount *mp);

/** sx_checkpoint() - sync, write metadata in place and move the log tail */
SX_API int sx_checkpoint(struct sx_mount *mp);

/* Filesystem facts for `swapext info` and tests. */
struct sx_info {
	uint32_t	in_version;
	uint32_t	in_blocksize;
	uint32_t	in_sectsize;
	uint64_t	in_dblocks;
	uint64_t	in_free_blocks;
	uint64_t	in_logstart;
	uint32_t	in_logblocks;
	uint64_t	in_bmapstart;
	uint32_t	in_bmapblocks;
	uint64_t	in_datastart;
	uint32_t	in_feat_compat;
	uint32_t	in_feat_ro_compat;
	uint32_t	in_feat_incompat;
	uint32_t	in_feat_log_incompat;
	uint64_t	in_log_head;
	uint64_t	in_log_tail;
	uint32_t	in_log_epoch;
	uint64_t	in_sb_seq;
	uint8_t		in_uuid[16];
	char		in_label[33];
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
		    uint64_t *problems);

/* Flags of sx_check_flags(). */
enum {
	/*
	 * Check the superblocks, the log, the free-space bitmap and the fsinfo
	 * block, but not who owns each block: for images whose blocks are
	 * allocated below the file layer (the journal's own tests and demo).
	 */
	SX_CHECK_SPACE_ONLY	= (1u << 0),
	/*
	 * Report every data block that has a problem, not only the first
	 * ones: for programs that compare two reports block by block (the
	 * field fuzzer's before and after).
	 */
	SX_CHECK_ALL_BLOCKS	= (1u << 1),
};

/** sx_check_flags() - sx_check() with SX_CHECK_* @flags */
SX_API int sx_check_flags(struct sx_bdev *bd, uint32_t flags, sx_report_fn report, void *arg,
			  uint64_t *problems);

/**
 * sx_logprint() - decode every record and item of the log, from the tail
 * to the end of the valid log and then on while headers still parse,
 * marking bad CRCs, torn and stale records
 */
SX_API int sx_logprint(struct sx_bdev *bd, sx_report_fn print, void *arg);

/*
 * Files.  A mount keeps a table of open files; descriptors are small
 * integers (>= 0) valid until sx_close() or unmount.  Offsets and lengths
 * are in bytes.  Names live in the one flat root directory.
 */
struct sx_stat {
	uint64_t	st_ino;
	uint64_t	st_gen;
	uint64_t	st_size;
	uint64_t	st_blocks;	/* filesystem blocks charged to the file */
	uint32_t	st_blksize;
	uint32_t	st_mode;
	uint32_t	st_nlink;
	uint32_t	st_uid;
	uint32_t	st_gid;
	uint32_t	st_flags;	/* SX_DIFLAG_* */
	int64_t		st_atime_ns;
	int64_t		st_mtime_ns;
	int64_t		st_ctime_ns;
};

/* One mapping of sx_fiemap(). */
struct sx_extent {
	uint64_t	ex_off;		/* file byte offset */
	uint64_t	ex_len;		/* bytes */
	uint64_t	ex_physical;	/* device byte offset */
	uint32_t	ex_flags;	/* SX_EXTENT_* */
	uint32_t	ex_pad;
};
#define SX_EXTENT_UNWRITTEN	(1u << 0)
#define SX_EXTENT_SHARED	(1u << 1)

/** sx_create() - create and open a regular file @name; -EEXIST if it exists */
SX_API int sx_create(struct sx_mount *mp, const char *name, uint32_t mode, int *fdp);
/** sx_open() - open the file @name */
SX_API int sx_open(struct sx_mount *mp, const char *name, int *fdp);
/** sx_open_tmpfile() - create and open a file with no name (O_TMPFILE) */
SX_API int sx_open_tmpfile(struct sx_mount *mp, uint32_t mode, int *fdp);
/** sx_close() - close a descriptor; an unlinked file's last close frees it */
SX_API int sx_close(struct sx_mount *mp, int fd);
/** sx_link() - give the open file @fd the name @name (also a tmpfile) */
SX_API int sx_link(struct sx_mount *mp, int fd, const char *name);
/** sx_unlink() - remove @name; the file lives on while open */
SX_API int sx_unlink(struct sx_mount *mp, const char *name);
/** sx_rename() - rename @from to @to, replacing @to if it exists */
SX_API int sx_rename(struct sx_mount *mp, const char *from, const char *to);
/** sx_readdir() - call @fn for each name; a nonzero return stops */
SX_API int sx_readdir(struct sx_mount *mp, int (*fn)(void *arg, const char *name,
						     uint64_t ino), void *arg);

/*
 * The largest file size: a write, truncate or fallocate past it fails with
 * -EFBIG (a write that starts below it is cut short).  2^52 bytes keeps
 * every byte offset a positive int64_t and every block number of any block
 * size far from the 64-bit limits of extent maps.
 */
#define SX_MAX_FILE_SIZE	(1ull << 52)

/** sx_pread() - read up to @len bytes at @off; returns bytes read or -errno */
SX_API int64_t sx_pread(struct sx_mount *mp, int fd, void *buf, uint64_t len, uint64_t off);
/** sx_pwrite() - write @len bytes at @off; returns bytes written or -errno */
SX_API int64_t sx_pwrite(struct sx_mount *mp, int fd, const void *buf, uint64_t len, uint64_t off);
/** sx_truncate() - set the size; blocks past it are freed */
SX_API int sx_truncate(struct sx_mount *mp, int fd, uint64_t size);
/** sx_fallocate() - allocate unwritten blocks for [@off, +@len); reads give zeroes */
SX_API int sx_fallocate(struct sx_mount *mp, int fd, uint64_t off, uint64_t len);
/** sx_punch() - free the blocks of [@off, +@len) (block-aligned part; the rest zeroed) */
SX_API int sx_punch(struct sx_mount *mp, int fd, uint64_t off, uint64_t len);
/**
 * sx_fsync() - make the file's data and metadata durable: the log up to the
 * file's own last change (not other files' later ones), and data written in
 * place; a force another thread runs meanwhile serves it too.  Creating,
 * linking and renaming a file change it as well, so they are covered.
 */
SX_API int sx_fsync(struct sx_mount *mp, int fd);
/** sx_fstat() - describe an open file */
SX_API int sx_fstat(struct sx_mount *mp, int fd, struct sx_stat *st);
/** sx_setflags() - set the SX_DIFLAG_* flags a user may set (IMMUTABLE, APPEND,
 * SWAPFILE); the engine's REFLINK flag is kept as it is */
SX_API int sx_setflags(struct sx_mount *mp, int fd, uint32_t flags);
/** sx_fiemap() - the mappings of [@off, +@len): at most @max into @ext, count in *@n */
SX_API int sx_fiemap(struct sx_mount *mp, int fd, uint64_t off, uint64_t len, struct sx_extent *ext,
		     uint32_t max, uint32_t *n);
/** sx_clone() - make @dst_fd share all of @src_fd's blocks (FICLONE) */
SX_API int sx_clone(struct sx_mount *mp, int dst_fd, int src_fd);
/** sx_clone_range() - share [@src_off, +@len) of @src_fd at @dst_off of @dst_fd (FICLONERANGE) */
SX_API int sx_clone_range(struct sx_mount *mp, int dst_fd, uint64_t dst_off, int src_fd,
			  uint64_t src_off, uint64_t len);

/**
 * sx_swap_file_range() - swap a range of one file with a range of another
 * (or of the same file): FISWAPRANGE issued on @fd2
 * @fd2:	file2, the file the request is issued on
 * @fsr:	the request (include/swapext/fsr.h); fsr->file1_fd names file1.
 *		On success it is updated as the ioctl copies it back (TO_EOF:
 *		the length swapped); on failure it is untouched.
 *
 * Without FILE_SWAP_RANGE_NONATOMIC the swap is atomic: after a crash at
 * any point, recovery leaves both ranges either all old or all new.  That
 * needs the atomic_swap log-incompat feature (mkfs -O atomic_swap); without
 * it only NONATOMIC requests run (a chain of steps, each crash-safe).
 * Offsets must be block aligned, and the length too unless a range ends at
 * its file's EOF.  Both files' mtime and ctime are set.
 *
 * Return: 0; -EBADF (bad descriptor), -EIO (shut down), -EROFS, or any
 * error of the swap core (include/swapext/host.h, sx_swap_core_range()):
 * -EINVAL, -EISDIR, -EPERM, -ETXTBSY, -EDOM (FULL_FILES), -EBUSY
 * (FILE2_FRESH), -EFBIG, -EOPNOTSUPP (atomic requested without the
 * feature), -ENOSPC, -ENOMEM.
 */
SX_API int sx_swap_file_range(struct sx_mount *mp, int fd2, struct file_swap_range *fsr);

/*
 * Atomic file update: rewrite any part of a file, or all of it, or change
 * its size, so that the file shows either all of its old contents or all
 * of the new, after a crash too, and so that an update lost to a
 * concurrent change is refused instead of silently undoing that change.
 *
 *	struct sx_update upd;
 *
 *	sx_update_start(mp, fd, &upd);		(upd.su_fd_tmp: a clone of fd)
 *	sx_pwrite(mp, upd.su_fd_tmp, ...);	(any writes, truncates, ...)
 *	sx_update_commit(mp, &upd, 0);		(or sx_update_cancel())
 *
 * Start makes a file with no name (sx_open_tmpfile()), shares all of the
 * original's blocks with it (sx_clone(), so no data is copied) and records
 * the original's inode number, mtime and ctime to the nanosecond.  The
 * caller changes the clone as it likes; the original does not see it
 * (writes to shared blocks go to new blocks).  Commit swaps the two files'
 * contents, from offset 0 to the end of the longer and their sizes too
 * (FILE_SWAP_RANGE_TO_EOF), with FILE_SWAP_RANGE_FILE2_FRESH checking the
 * recorded inode number and times under the files' locks.
 *
 * Why it is atomic: the swap is one chain of logged intents (the
 * atomic_swap feature, mkfs -O atomic_swap) that recovery finishes if a
 * crash cuts it short, and the clone's new data is on the device before
 * the swap's first log record.  A crash before the swap's first record
 * leaves the old contents, any later one the new; the clone, which has no
 * name, is freed by recovery.  Commit does not force the log: sx_fsync()
 * or sx_sync() afterwards makes the new contents durable.
 *
 * What -EBUSY means: the original changed after the update started: a
 * write, truncate, fallocate, punch, a clone or swap into it, a flag
 * change, a name given to it or taken from it (link, unlink, rename of it
 * or over it): anything that sets its mtime or ctime.  Committing would
 * throw that change away, so the original is left as it is; the update
 * stays open and the caller cancels it (and may start again).  Times come
 * from the wall clock in nanoseconds, so a change is missed only if the
 * clock is set back to within the nanosecond of the recorded time.
 *
 * Every function returns 0 or a negative errno.  A zeroed structure is
 * not an open update.  Only one thread may use an update at a time.
 */
struct sx_update {
	uint32_t	su_magic;	/* SX_UPDATE_MAGIC while open */
	int		su_fd_orig;	/* the file being updated (the caller's) */
	int		su_fd_tmp;	/* the clone the caller changes; -1 when closed */
	uint64_t	su_ino;		/* the original at start: inode number, */
	int64_t		su_mtime_ns;	/* mtime and ctime in ns since the epoch */
	int64_t		su_ctime_ns;
	uint64_t	su_tmp_ino;	/* the clone's inode number and generation */
	uint64_t	su_tmp_gen;
};

#define SX_UPDATE_MAGIC		0x53585550u	/* "SXUP" */

/* sx_update_active() - true while @upd is started and not yet ended */
static inline bool sx_update_active(const struct sx_update *upd)
{
	return upd && upd->su_magic == SX_UPDATE_MAGIC && upd->su_fd_tmp >= 0;
}

/* Flags of sx_update_commit(). */
enum {
	/*
	 * Swap with FILE_SWAP_RANGE_NONATOMIC: works without the atomic_swap
	 * feature, but a crash in the middle may leave the original part old,
	 * part new.
	 */
	SX_UPDATE_NONATOMIC	= (1u << 0),
};
#define SX_UPDATE_ALL_FLAGS	(SX_UPDATE_NONATOMIC)

/**
 * sx_update_start() - begin an atomic update of the open file @fd
 * @upd:	filled in (whatever it held); upd->su_fd_tmp is the descriptor
 *		of the clone to change
 *
 * Return: 0; -EINVAL (NULL argument), -EBADF, -EIO (shut down), -EROFS,
 * -EISDIR or -EINVAL (not a regular file), -EPERM (immutable or
 * append-only: the swap would refuse it), -ETXTBSY (in use as swap),
 * -EBUSY (the file changed while it was being cloned: start again),
 * -ENOSPC, -ENOMEM.  On error nothing is left open.
 */
SX_API int sx_update_start(struct sx_mount *mp, int fd, struct sx_update *upd);

/**
 * sx_update_commit() - make the clone's contents and size the original's
 * @flags:	SX_UPDATE_*
 *
 * On success the clone's descriptor is closed and the original's previous
 * blocks, which the clone now holds, are freed; the update is over.  If
 * that close fails, its error is returned, but the swap has happened and
 * the update is over all the same (recovery frees what the close did not).
 *
 * Return: 0; -EINVAL (not an open update, or unknown @flags), -EBADF (a
 * descriptor was closed, or the clone's descriptor now names another
 * file), -EBUSY (the original changed since sx_update_start(); it is
 * untouched), -EOPNOTSUPP (atomic without the atomic_swap feature), any
 * other error of sx_swap_file_range().  On any error but -EINVAL the swap
 * did not happen and the update stays open, to be committed again or
 * cancelled.
 */
SX_API int sx_update_commit(struct sx_mount *mp, struct sx_update *upd, uint32_t flags);

/**
 * sx_update_cancel() - end an update without changing the original: the
 * clone is closed and freed
 *
 * Return: 0, -EINVAL (not an open update), -EBADF (the clone's descriptor
 * was closed or now names another file, which is left open), or the error
 * of closing the clone.  The update is over in every case but -EINVAL.
 */
SX_API int sx_update_cancel(struct sx_mount *mp, struct sx_update *upd);

/*
 * Atomic writes: write any range of a file so that it shows either all of
 * its old bytes or all of the new, after a crash too, with no limit on
 * size or alignment; or several ranges of several files as one change.
 *
 * How: a small change (at most 16 KiB of blocks) over blocks the files
 * have written, of files that share no blocks, is one transaction whose
 * log record carries the new contents of those blocks: they stay where
 * they are, reads take them from the cache, recovery from the log, and a
 * later checkpoint writes them home; nothing is allocated or freed.
 * Otherwise the new bytes go out of place, into new blocks.  A small
 * change (at most 1 MiB of blocks, a few mappings) of files that share no
 * blocks is written into blocks allocated by one transaction, which also
 * frees the old blocks and maps the new ones in their place: one
 * transaction, all or nothing.  Otherwise the new blocks belong to a
 * nameless file made for each file written (at the same file offsets; the
 * old bytes of partial first and last blocks copied in around them), and
 * one transaction then queues one swap intent (SXI, the atomic swap's)
 * for each run of blocks written, all of them, whatever the number of
 * files and ranges.  Once that transaction is in the log, recovery
 * finishes every swap it promised; before it, nothing has changed.  A
 * change of a few mappings (at most 16 pieces) is remapped in that one
 * transaction directly, without intents.  A write that extends a file
 * sets the new size in the swap that maps its last block, so size and
 * data change together.  The nameless files, which then hold the old
 * blocks, are freed at the end (or by recovery).  Either way the new data
 * is listed with its checksum in the log force that makes the change
 * durable, so data and log share one device flush.  Needs the
 * atomic_swap feature (mkfs -O atomic_swap).  Concurrent writers, readers
 * and swaps of the files written wait for the call to finish.
 *
 * sx_update_start()/commit() remain for changes made piece by piece or of
 * more than what fits in memory: they share the same swap machinery.
 */

/** The most ranges one sx_atomic_writev() takes. */
#define SX_ATOMIC_IOV_MAX	64

/* Flags of sx_atomic_write() and sx_atomic_writev(). */
enum {
	/*
	 * Return without forcing the log: the change is atomic but becomes
	 * durable only with the next log force (sx_fsync(), sx_sync(), a
	 * later durable call).
	 */
	SX_ATOMIC_NOSYNC	= (1u << 0),
	/*
	 * Always remap with the swap intents, even a write small enough for
	 * one plain transaction (for tests and benchmarks of that path).
	 */
	SX_ATOMIC_CHAIN		= (1u << 1),
	/*
	 * Write through the nameless twins even when the new blocks could
	 * be mapped straight into the files (for tests and benchmarks of
	 * that path).
	 */
	SX_ATOMIC_TWIN		= (1u << 2),
	/*
	 * Write the new blocks of a small write in place before its log
	 * record, as larger writes are, instead of carrying them in the
	 * record (for tests and benchmarks of that path).
	 */
	SX_ATOMIC_INPLACE	= (1u << 3),
	/*
	 * Give a small write over written blocks new blocks too, where its
	 * record would otherwise carry the file's own blocks, left where
	 * they are (for tests and benchmarks of that path).
	 */
	SX_ATOMIC_REMAP		= (1u << 4),
};
#define SX_ATOMIC_ALL_FLAGS	(SX_ATOMIC_NOSYNC | SX_ATOMIC_CHAIN | SX_ATOMIC_TWIN | \
				 SX_ATOMIC_INPLACE | SX_ATOMIC_REMAP)

/**
 * struct sx_atomic_iov - one range of sx_atomic_writev()
 * @ai_fd:	the open regular file
 * @ai_buf:	the new bytes
 * @ai_len:	how many (0: the range writes nothing, but @ai_fd is checked)
 * @ai_off:	where, in bytes (any offset; past EOF extends the file)
 */
struct sx_atomic_iov {
	int		ai_fd;
	int		ai_pad;
	const void	*ai_buf;
	uint64_t	ai_len;
	uint64_t	ai_off;
};

/**
 * sx_atomic_write() - write @len bytes of @buf at @off of @fd atomically
 * and (without SX_ATOMIC_NOSYNC) durably
 * @flags:	SX_ATOMIC_*
 *
 * After return the range holds the new bytes (and the file's size is at
 * least @off + @len); after a crash at any point before it, all of the old
 * bytes and size or all of the new; after it, the new.  Unlike
 * sx_pwrite() it is never cut short: it writes everything or returns an
 * error with the file unchanged.  A @len of 0 writes nothing and syncs
 * nothing (@fd is checked).  The file's mtime and ctime are set.
 *
 * Return: 0; -EINVAL (NULL @mp, or @buf with @len > 0, unknown @flags,
 * @off + @len wraps, not a regular file), -EBADF, -EISDIR, -EIO (shut
 * down, device error), -EROFS, -EPERM (immutable or append-only),
 * -ETXTBSY (in use as swap), -EFBIG (past SX_MAX_FILE_SIZE, or the
 * extent map would outgrow its limit), -EOPNOTSUPP (no atomic_swap
 * feature), -ENOSPC, -ENOMEM.  On error nothing has changed, unless the
 * error shut the mount down (then recovery leaves all old or all new).
 */
SX_API int sx_atomic_write(struct sx_mount *mp, int fd, const void *buf, uint64_t len,
			   uint64_t off, uint32_t flags);

/**
 * sx_atomic_writev() - write @n ranges, of one or several files, as one
 * atomic change: after a crash, all of them or none
 * @iov:	the ranges (at most SX_ATOMIC_IOV_MAX); ranges of one file
 *		(by inode, whatever the descriptor) may not overlap, but may
 *		share a block
 * @flags:	SX_ATOMIC_*
 *
 * As sx_atomic_write() for each range, with one durable commit for all.
 * A file twice through two descriptors is one file.
 *
 * Return: 0 (also for @n = 0); -EINVAL (too many ranges, NULL @iov with
 * @n > 0, overlapping ranges of one file), -E2BIG (the ranges make more
 * runs of blocks than one log record of this filesystem can promise: a
 * log made smaller than mkfs's default), any error of sx_atomic_write()
 * for any range: nothing has changed in any file.
 */
SX_API int sx_atomic_writev(struct sx_mount *mp, const struct sx_atomic_iov *iov, uint32_t n,
			    uint32_t flags);

/** sx_strerror() - a message for a swapext error (negative errno) */
SX_API const char *sx_strerror(int error);

#endif /* SWAPEXT_SWAPEXT_H */
