/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * XFS_IOC_SWAPEXT compatibility: the old full-file entry of xfs_fsr, run as
 * the seed's conversion runs it, over swap_file_range, and the bulkstat
 * record it takes its freshness from.  Plus the defragmentation of one file
 * through it (what `swapext defrag` does to each candidate).
 *
 * The structures have the layout XFS's struct xfs_swapext, struct xfs_bstat
 * and struct xfs_bstime have on 64-bit Linux ABIs (x86-64, arm64, riscv64,
 * ...): 192, 136 and 16 bytes, checked below field by field.  The holes
 * the C compiler leaves in XFS's structs there (after bs_blksize and after
 * each tv_nsec) are named fields here, so that this layout is the same for
 * every caller; XFS's own 32-bit layout (compat_xfs_swapext, 4-byte
 * aligned int64_t and 32-bit tv_sec) is not emulated.
 */
#ifndef SWAPEXT_SWAPEXT_COMPAT_H
#define SWAPEXT_SWAPEXT_COMPAT_H

#include <swapext/types.h>
#include <swapext/swapext.h>
#include <swapext/fsr.h>

/* struct xfs_bstime: __kernel_long_t seconds, int32_t nanoseconds. */
struct sx_xfs_bstime {
	int64_t	tv_sec;
	int32_t	tv_nsec;
	int32_t	tv_pad;	/* the compiler's hole in XFS's struct */
};

/* struct xfs_bstat: one inode as bulkstat (v1) reports it. */
struct sx_xfs_bstat {
	uint64_t		bs_ino;		/* inode number */
	uint16_t		bs_mode;	/* type and mode */
	uint16_t		bs_nlink;	/* number of links (saturates at 65535) */
	uint32_t		bs_uid;
	uint32_t		bs_gid;
	uint32_t		bs_rdev;	/* 0: the store has no device files */
	int32_t			bs_blksize;	/* block size */
	uint32_t		bs_pad0;	/* the compiler's hole in XFS's struct */
	int64_t			bs_size;	/* file size, bytes */
	struct sx_xfs_bstime	bs_atime;
	struct sx_xfs_bstime	bs_mtime;
	struct sx_xfs_bstime	bs_ctime;
	int64_t			bs_blocks;	/* filesystem blocks charged to the file */
	uint32_t		bs_xflags;	/* SX_XFS_XFLAG_* */
	int32_t			bs_extsize;	/* 0: no extent size hint */
	int32_t			bs_extents;	/* extent records of the data fork */
	uint32_t		bs_gen;		/* generation (low 32 bits) */
	uint16_t		bs_projid_lo;
	uint16_t		bs_forkoff;
	uint16_t		bs_projid_hi;
	uint16_t		bs_sick;
	uint16_t		bs_checked;
	uint8_t			bs_pad[2];
	uint32_t		bs_cowextsize;
	uint32_t		bs_dmevmask;
	uint16_t		bs_dmstate;
	uint16_t		bs_aextents;
};

/* The bs_xflags bits we report (the values of Linux's FS_XFLAG_*). */
#define SX_XFS_XFLAG_IMMUTABLE	0x00000008u
#define SX_XFS_XFLAG_APPEND	0x00000010u

/* struct xfs_swapext: swap all of sx_fdtmp's data with sx_fdtarget's. */
struct sx_xfs_swapext {
	int64_t			sx_version;	/* SX_XFS_SX_VERSION */
	int64_t			sx_fdtarget;	/* the file being rewritten (file2) */
	int64_t			sx_fdtmp;	/* the copy holding its new layout (file1) */
	int64_t			sx_offset;	/* must be 0 */
	int64_t			sx_length;	/* must be both files' size */
	char			sx_pad[16];	/* unused (not checked, as XFS does not) */
	struct sx_xfs_bstat	sx_stat;	/* the target as bulkstat saw it before the copy */
};

/* XFS_SX_VERSION: the only version of the request. */
#define SX_XFS_SX_VERSION	0

_Static_assert(sizeof(struct sx_xfs_bstime) == 16, "xfs_bstime layout");
_Static_assert(offsetof(struct sx_xfs_bstime, tv_nsec) == 8, "xfs_bstime layout");

_Static_assert(offsetof(struct sx_xfs_bstat, bs_ino) == 0, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_mode) == 8, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_nlink) == 10, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_uid) == 12, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_gid) == 16, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_rdev) == 20, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_blksize) == 24, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_size) == 32, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_atime) == 40, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_mtime) == 56, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_ctime) == 72, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_blocks) == 88, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_xflags) == 96, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_extsize) == 100, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_extents) == 104, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_gen) == 108, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_projid_lo) == 112, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_forkoff) == 114, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_projid_hi) == 116, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_sick) == 118, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_checked) == 120, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_pad) == 122, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_cowextsize) == 124, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_dmevmask) == 128, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_dmstate) == 132, "xfs_bstat layout");
_Static_assert(offsetof(struct sx_xfs_bstat, bs_aextents) == 134, "xfs_bstat layout");
_Static_assert(sizeof(struct sx_xfs_bstat) == 136, "xfs_bstat size");

_Static_assert(offsetof(struct sx_xfs_swapext, sx_version) == 0, "xfs_swapext layout");
_Static_assert(offsetof(struct sx_xfs_swapext, sx_fdtarget) == 8, "xfs_swapext layout");
_Static_assert(offsetof(struct sx_xfs_swapext, sx_fdtmp) == 16, "xfs_swapext layout");
_Static_assert(offsetof(struct sx_xfs_swapext, sx_offset) == 24, "xfs_swapext layout");
_Static_assert(offsetof(struct sx_xfs_swapext, sx_length) == 32, "xfs_swapext layout");
_Static_assert(offsetof(struct sx_xfs_swapext, sx_pad) == 40, "xfs_swapext layout");
_Static_assert(offsetof(struct sx_xfs_swapext, sx_stat) == 56, "xfs_swapext layout");
_Static_assert(sizeof(struct sx_xfs_swapext) == 192, "xfs_swapext size");

/* XFS_IOC_SWAPEXT: XFS's number, encoded as fsr.h encodes FISWAPRANGE. */
#ifndef XFS_IOC_SWAPEXT
#define XFS_IOC_SWAPEXT		SX_IOWR('X', 109, struct sx_xfs_swapext)
#endif

_Static_assert(SX_IOWR('X', 109, struct sx_xfs_swapext) == 0xc0c0586du,
	       "XFS_IOC_SWAPEXT encoding");

/**
 * sx_bulkstat() - describe the open file @fd as XFS's bulkstat v1 does
 *
 * Fills ino, mode, nlink, uid, gid, blksize, size, the three timestamps
 * (seconds and nanoseconds), blocks (filesystem blocks), xflags (immutable,
 * append), extents (the data fork's extent records) and gen; every other
 * field is zero.  The record is what sx_swapext() checks freshness against.
 *
 * Return: 0, -EBADF, -EIO (shut down).
 */
SX_API int sx_bulkstat(struct sx_mount *mp, int fd, struct sx_xfs_bstat *bs);

/**
 * sx_swapext() - XFS_IOC_SWAPEXT: exchange all the data of @sx->sx_fdtmp
 * with all the data of @sx->sx_fdtarget
 *
 * Runs as the seed's reimplementation does: a swap_file_range request with
 * NONATOMIC | FILE2_FRESH | FULL_FILES, file2 the target, file1 the
 * temporary file, the length sx_length, and file2's freshness (ino, mtime,
 * ctime, with nanoseconds) taken from sx_stat.  The store's swap is still
 * atomic when the filesystem has the atomic_swap feature; without it the
 * swap is a chain of crash-safe steps, which is enough for a defragmenter
 * whose two files hold the same data.  Both files' mtime and ctime are set.
 *
 * Checked before the swap: sx_version must be SX_XFS_SX_VERSION (-EINVAL);
 * either descriptor not open, or out of the int range, is -EINVAL (XFS's
 * answer to a bad fd here, not -EBADF); the same file twice is -EINVAL (the
 * old XFS entry's rule); a nonzero sx_offset is -EFAULT, the old entry's
 * answer to a request that is not the whole of both files (the seed's
 * conversion ignores sx_offset; refusing it keeps a caller from believing
 * that a partial swap happened).  From the swap: sizes that differ from
 * sx_length are -EFAULT (swap_file_range's -EDOM, reported as the old entry
 * reported it), a target changed since sx_stat was taken is -EBUSY, and
 * every other error of sx_swap_file_range() as it is.
 *
 * Return: 0 or a negative errno; on error neither file has changed.
 */
SX_API int sx_swapext(struct sx_mount *mp, struct sx_xfs_swapext *sx);

/* Why sx_defrag_file() left a file as it was (dr_skipped). */
enum sx_defrag_skip {
	SX_DEFRAG_DONE = 0,		/* rewritten */
	SX_DEFRAG_SKIP_NOTREG,		/* not a regular file */
	SX_DEFRAG_SKIP_EMPTY,		/* nothing mapped */
	SX_DEFRAG_SKIP_FLAGS,		/* immutable, append-only or swap file */
	SX_DEFRAG_SKIP_SHARED,		/* shares blocks (a rewrite would unshare them) */
	SX_DEFRAG_SKIP_CONTIGUOUS,	/* already as few extents as its holes allow */
	SX_DEFRAG_SKIP_NOTBETTER,	/* the new copy is not in fewer extents */
	SX_DEFRAG_SKIP_CHANGED,		/* changed during the copy (-EBUSY) */
	SX_DEFRAG_SKIP_NR
};

/* What sx_defrag_file() saw and did. */
struct sx_defrag_result {
	uint32_t	dr_skipped;	/* enum sx_defrag_skip */
	uint32_t	dr_before;	/* extents before */
	uint32_t	dr_after;	/* extents after (of the copy, if skipped after it) */
	uint32_t	dr_ideal;	/* pieces between holes: the fewest possible */
	uint64_t	dr_bytes;	/* data bytes copied */
};

/**
 * sx_defrag_file() - rewrite the open file @fd into as few extents as its
 * holes allow, as xfs_fsr rewrites one file
 * @flags: 0
 *
 * Takes the file's bulkstat record, then copies it into a new tmpfile:
 * each run of mapped blocks is preallocated in one piece (the allocator
 * takes the first free run long enough) and its written parts are copied
 * in large chunks, so that holes stay holes and unwritten extents stay
 * unwritten.  The copy is synced and swapped in with sx_swapext(); the
 * tmpfile, now holding the old blocks, is closed and freed.  The data never
 * changes, so a crash at any point leaves the file's contents as they were
 * (the tmpfile is on the unlinked list; recovery frees it).  A file is left
 * alone, with the reason in @res->dr_skipped, when rewriting it could not
 * help or would change more than its layout.
 *
 * Return: 0 (rewritten or skipped), or a negative errno (-ENOSPC when no
 * copy fits; the file is unchanged on every error).
 */
SX_API int sx_defrag_file(struct sx_mount *mp, int fd, uint32_t flags,
			  struct sx_defrag_result *res);

/** sx_defrag_skip_name() - a short text for an enum sx_defrag_skip */
SX_API const char *sx_defrag_skip_name(uint32_t skip);

#endif /* SWAPEXT_SWAPEXT_COMPAT_H */
