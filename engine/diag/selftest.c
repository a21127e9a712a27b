// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The engine's scenario self-test: the same scenarios in the userspace
 * build (a unit test) and in the kernel module (at load with selftest=1, or
 * through the control device).  Only engine calls and memory devices made
 * by the caller's glue; a crash is simulated by copying a mounted device
 * and mounting the copy, which makes recovery run on exactly what was
 * durable (memory devices make every completed write durable).
 */
#include "sx_platform.h"
#include <swapext/selftest.h>
#include "util.h"
#include "mount.h"
#include "trans.h"
#include "alloc.h"
#include "defer.h"
#include "item_efi.h"

#define ST_DEVSIZE	(16ull << 20)
#define ST_SECTSIZE	512u
#define ST_COPY_CHUNK	(64u << 10)

struct sx_st {
	sx_memdev_fn	st_mkdev;
	char		st_why[160];
};

/* Record why a scenario failed (the first reason wins). */
static void st_fail(struct sx_st *st, const char *func, int line, const char *what,
		    long long val)
{
	if (st->st_why[0])
		return;
	snprintf(st->st_why, sizeof(st->st_why), "%s:%d: %s (got %lld)", func, line, what, val);
}

/* Fail the scenario unless @cond holds; @val is printed with it. */
#define ST_CHECK(st, cond, val) \
	do { \
		if (!(cond)) { \
			st_fail((st), __func__, __LINE__, #cond, (long long)(val)); \
			goto out; \
		} \
	} while (0)

/* Fail the scenario unless @expr (an errno-returning call) is 0. */
#define ST_OK(st, expr) \
	do { \
		int st_err_ = (expr); \
		if (st_err_) { \
			st_fail((st), __func__, __LINE__, #expr, st_err_); \
			goto out; \
		} \
	} while (0)

/* Destroy a device; NULL is ignored. */
static void st_destroy(struct sx_bdev *bd)
{
	if (bd)
		bd->bd_ops->destroy(bd);
}

/* A fresh memory device of @size bytes, formatted with @bsize-byte blocks. */
static int st_newfs(struct sx_st *st, u64 size, u32 bsize, struct sx_bdev **bdp)
{
	struct sx_mkfs_opts mo;
	int error;

	error = st->st_mkdev(size, ST_SECTSIZE, bdp);
	if (error)
		return error;
	memset(&mo, 0, sizeof(mo));
	mo.mk_blocksize = bsize;
	mo.mk_label = "selftest";
	error = sx_mkfs(*bdp, &mo);
	if (error) {
		st_destroy(*bdp);
		*bdp = NULL;
	}
	return error;
}

/* Mount @bd read-write with the self-test's name. */
static int st_mount(struct sx_bdev *bd, u32 flags, struct sx_mount **mpp)
{
	struct sx_mount_opts mo;

	memset(&mo, 0, sizeof(mo));
	mo.mo_flags = flags;
	mo.mo_name = "selftest";
	return sx_mount(bd, &mo, mpp);
}

/*
 * Unmount *@mpp and forget it: sx_unmount() frees the mount even when it
 * fails, so a scenario that jumps to its cleanup on that failure must not
 * find the mount there to unmount again.
 */
static int st_unmount(struct sx_mount **mpp)
{
	struct sx_mount *mp = *mpp;

	*mpp = NULL;
	return sx_unmount(mp);
}

/*
 * The device as a power cut would leave it now: a copy of everything that
 * reached @src (on a memory device, every completed write).
 */
static int st_copy(struct sx_st *st, struct sx_bdev *src, struct sx_bdev **bdp)
{
	u64 off;
	u8 *buf;
	int error;

	buf = sx_alloc(ST_COPY_CHUNK, 0);
	if (!buf)
		return -ENOMEM;
	error = st->st_mkdev(src->bd_size, src->bd_sectsize, bdp);
	if (error)
		goto out_free;
	for (off = 0; off < src->bd_size; off += ST_COPY_CHUNK) {
		size_t n = (size_t)sx_min((u64)ST_COPY_CHUNK, src->bd_size - off);

		error = src->bd_ops->read(src, off, buf, n);
		if (!error)
			error = (*bdp)->bd_ops->write(*bdp, off, buf, n, 0);
		if (error) {
			st_destroy(*bdp);
			*bdp = NULL;
			break;
		}
	}
out_free:
	sx_free(buf);
	return error;
}

/* Allocate one extent in a transaction of its own; returns the error. */
static int st_alloc(struct sx_mount *mp, u32 tflags, u64 hint, u32 minlen, u32 maxlen,
		    u64 *bnop, u32 *lenp)
{
	struct sx_trans *tp;
	int error;

	error = sx_trans_alloc(mp, sx_alloc_res_bytes(mp), tflags, &tp);
	if (error)
		return error;
	error = sx_alloc_extent(tp, hint, minlen, maxlen, bnop, lenp);
	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

/* Free one extent in a transaction of its own; returns the error. */
static int st_free(struct sx_mount *mp, u32 tflags, u64 bno, u64 len)
{
	struct sx_trans *tp;
	int error;

	error = sx_trans_alloc(mp, sx_alloc_res_bytes(mp), tflags, &tp);
	if (error)
		return error;
	error = sx_free_extent(tp, bno, len);
	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

/* How many blocks of [@bno, @bno + @len) are in use; negative errno on error. */
static s64 st_used(struct sx_mount *mp, u64 bno, u64 len)
{
	s64 used = 0;
	u64 b;

	for (b = bno; b < bno + len; b++) {
		bool isfree;
		int error = sx_alloc_is_free(mp, b, &isfree);

		if (error)
			return error;
		used += !isfree;
	}
	return used;
}

/*
 * Run the checker on an unmounted device; the number of problems, or
 * -errno.  The scenarios allocate below the file layer, so block ownership
 * is not judged.
 */
static s64 st_check(struct sx_bdev *bd)
{
	u64 problems = 0;
	int error = sx_check_flags(bd, SX_CHECK_SPACE_ONLY, NULL, NULL, &problems);

	return error ? error : (s64)problems;
}

/* mkfs, mount, describe, unmount, mount again. */
static void st_mkfs_mount(struct sx_st *st)
{
	struct sx_bdev *bd = NULL;
	struct sx_mount *mp = NULL;
	struct sx_info in;
	u64 free0;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 4096, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	ST_OK(st, sx_get_info(mp, &in));
	ST_CHECK(st, in.in_blocksize == 4096, in.in_blocksize);
	ST_CHECK(st, in.in_dblocks == ST_DEVSIZE / 4096, in.in_dblocks);
	/* mkfs may take a few data blocks for its own metadata (root, fsinfo) */
	free0 = in.in_free_blocks;
	ST_CHECK(st, free0 <= in.in_dblocks - in.in_datastart, free0);
	ST_CHECK(st, free0 + 64 >= in.in_dblocks - in.in_datastart, free0);
	ST_CHECK(st, !strcmp(in.in_label, "selftest"), 0);
	ST_OK(st, st_unmount(&mp));
	ST_OK(st, st_mount(bd, 0, &mp));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0, sx_alloc_free_blocks(mp));
	ST_OK(st, st_unmount(&mp));
	ST_CHECK(st, st_check(bd) == 0, st_check(bd));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(bd);
}

/* Geometry: a bad block size is refused; 1 KiB blocks work. */
static void st_mkfs_geometry(struct sx_st *st)
{
	struct sx_bdev *bd = NULL;
	struct sx_mount *mp = NULL;
	struct sx_mkfs_opts mo;
	struct sx_info in;

	ST_OK(st, st->st_mkdev(ST_DEVSIZE, ST_SECTSIZE, &bd));
	memset(&mo, 0, sizeof(mo));
	mo.mk_blocksize = 3000;
	ST_CHECK(st, sx_mkfs(bd, &mo) == -EINVAL, sx_mkfs(bd, &mo));
	mo.mk_blocksize = 1024;
	ST_OK(st, sx_mkfs(bd, &mo));
	ST_OK(st, st_mount(bd, 0, &mp));
	ST_OK(st, sx_get_info(mp, &in));
	ST_CHECK(st, in.in_blocksize == 1024, in.in_blocksize);
	ST_CHECK(st, in.in_dblocks == ST_DEVSIZE / 1024, in.in_dblocks);
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(bd);
}

/* A device without a filesystem is refused, not mounted. */
static void st_mount_garbage(struct sx_st *st)
{
	struct sx_bdev *bd = NULL;
	struct sx_mount *mp = NULL;
	int error;

	ST_OK(st, st->st_mkdev(ST_DEVSIZE, ST_SECTSIZE, &bd));
	error = st_mount(bd, 0, &mp);
	ST_CHECK(st, error < 0, error);
	mp = NULL;
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(bd);
}

/* Commit changes the allocator; cancel gives everything back. */
static void st_trans_commit_cancel(struct sx_st *st)
{
	struct sx_bdev *bd = NULL;
	struct sx_mount *mp = NULL;
	struct sx_trans *tp;
	u64 free0, bno, bno2;
	u32 len, len2;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 4096, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	free0 = sx_alloc_free_blocks(mp);

	ST_OK(st, st_alloc(mp, 0, 0, 4, 4, &bno, &len));
	ST_CHECK(st, len == 4, len);
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0 - 4, sx_alloc_free_blocks(mp));
	ST_CHECK(st, st_used(mp, bno, 4) == 4, st_used(mp, bno, 4));

	/* allocate, then cancel: as if it never happened */
	ST_OK(st, sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp));
	ST_OK(st, sx_alloc_extent(tp, 0, 8, 8, &bno2, &len2));
	sx_trans_cancel(tp);
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0 - 4, sx_alloc_free_blocks(mp));
	ST_CHECK(st, st_used(mp, bno2, len2) == 0, st_used(mp, bno2, len2));

	ST_OK(st, st_free(mp, 0, bno, 4));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0, sx_alloc_free_blocks(mp));
	ST_OK(st, st_unmount(&mp));
	ST_CHECK(st, st_check(bd) == 0, st_check(bd));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(bd);
}

/* A log force (sx_sync, a SYNC commit) writes records: the head moves. */
static void st_log_force(struct sx_st *st)
{
	struct sx_bdev *bd = NULL;
	struct sx_mount *mp = NULL;
	struct sx_info in0, in1, in2;
	u64 bno;
	u32 len;
	int i;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 4096, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	ST_OK(st, sx_get_info(mp, &in0));
	for (i = 0; i < 4; i++)
		ST_OK(st, st_alloc(mp, 0, 0, 1, 2, &bno, &len));
	ST_OK(st, sx_sync(mp));
	ST_OK(st, sx_get_info(mp, &in1));
	ST_CHECK(st, in1.in_log_head != in0.in_log_head, in1.in_log_head);
	ST_OK(st, st_alloc(mp, SX_TRANS_SYNC, 0, 1, 2, &bno, &len));
	ST_OK(st, sx_get_info(mp, &in2));
	ST_CHECK(st, in2.in_log_head != in1.in_log_head, in2.in_log_head);
	/* nothing new: a force has nothing to write */
	ST_OK(st, sx_sync(mp));
	ST_OK(st, st_unmount(&mp));
	ST_CHECK(st, st_check(bd) == 0, st_check(bd));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(bd);
}

#define ST_NEXT		8

/*
 * Crash after a log force: the copy has the log but no metadata written in
 * place; recovery replays every change, and the checker is happy.
 */
static void st_crash_recovery(struct sx_st *st)
{
	struct sx_bdev *bd = NULL, *copy = NULL;
	struct sx_mount *mp = NULL;
	struct sx_recovery_stats rs;
	u64 free0, bno[ST_NEXT];
	u32 len;
	int i;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 4096, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	free0 = sx_alloc_free_blocks(mp);
	for (i = 0; i < ST_NEXT; i++) {
		ST_OK(st, st_alloc(mp, 0, 0, 3, 3, &bno[i], &len));
		ST_CHECK(st, len == 3, len);
	}
	ST_OK(st, st_free(mp, 0, bno[1], 3));
	ST_OK(st, sx_sync(mp));
	ST_OK(st, st_copy(st, bd, &copy));
	sx_shutdown(mp);
	ST_CHECK(st, st_unmount(&mp) != 0, 0);

	ST_OK(st, st_mount(copy, 0, &mp));
	sx_get_recovery_stats(mp, &rs);
	ST_CHECK(st, rs.rs_records > 0, rs.rs_records);
	ST_CHECK(st, rs.rs_bufs_replayed > 0, rs.rs_bufs_replayed);
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0 - 3 * (ST_NEXT - 1),
		 sx_alloc_free_blocks(mp));
	for (i = 0; i < ST_NEXT; i++)
		ST_CHECK(st, st_used(mp, bno[i], 3) == (i == 1 ? 0 : 3), i);
	ST_OK(st, st_unmount(&mp));
	ST_CHECK(st, st_check(copy) == 0, st_check(copy));

	/* and once more: a clean mount finds nothing to do */
	ST_OK(st, st_mount(copy, 0, &mp));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0 - 3 * (ST_NEXT - 1),
		 sx_alloc_free_blocks(mp));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(copy);
	st_destroy(bd);
}

/*
 * Crash with commits that were never forced: whatever part reached the log
 * is recovered, and the result is consistent (allocated blocks add up).
 */
static void st_crash_unforced(struct sx_st *st)
{
	struct sx_bdev *bd = NULL, *copy = NULL;
	struct sx_mount *mp = NULL;
	u64 free0, freec, bno[ST_NEXT];
	s64 used = 0;
	u32 len;
	int i;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 4096, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	free0 = sx_alloc_free_blocks(mp);
	for (i = 0; i < ST_NEXT; i++)
		ST_OK(st, st_alloc(mp, 0, 0, 2, 2, &bno[i], &len));
	ST_OK(st, st_copy(st, bd, &copy));
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = NULL;

	ST_OK(st, st_mount(copy, 0, &mp));
	freec = sx_alloc_free_blocks(mp);
	for (i = 0; i < ST_NEXT; i++) {
		s64 u = st_used(mp, bno[i], 2);

		ST_CHECK(st, u == 0 || u == 2, u);
		used += u;
	}
	ST_CHECK(st, freec + (u64)used == free0, freec);
	ST_OK(st, st_unmount(&mp));
	ST_CHECK(st, st_check(copy) == 0, st_check(copy));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(copy);
	st_destroy(bd);
}

/*
 * A crash right after recovery (before the first new change) recovers to
 * the same state again.
 */
static void st_crash_after_recovery(struct sx_st *st)
{
	struct sx_bdev *bd = NULL, *c1 = NULL, *c2 = NULL;
	struct sx_mount *mp = NULL;
	u64 free0, bno;
	u32 len;
	int i;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 4096, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	for (i = 0; i < ST_NEXT; i++)
		ST_OK(st, st_alloc(mp, SX_TRANS_SYNC, 0, 5, 5, &bno, &len));
	free0 = sx_alloc_free_blocks(mp);
	ST_OK(st, st_copy(st, bd, &c1));
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = NULL;

	ST_OK(st, st_mount(c1, 0, &mp));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0, sx_alloc_free_blocks(mp));
	ST_OK(st, st_copy(st, c1, &c2));
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = NULL;

	ST_OK(st, st_mount(c2, 0, &mp));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0, sx_alloc_free_blocks(mp));
	ST_OK(st, st_unmount(&mp));
	ST_CHECK(st, st_check(c2) == 0, st_check(c2));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(c2);
	st_destroy(c1);
	st_destroy(bd);
}

/* A checkpoint writes metadata in place: a mount without recovery sees it. */
static void st_checkpoint(struct sx_st *st)
{
	struct sx_bdev *bd = NULL, *copy = NULL;
	struct sx_mount *mp = NULL;
	u64 free1, bno;
	u32 len;
	int i;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 4096, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	for (i = 0; i < ST_NEXT; i++)
		ST_OK(st, st_alloc(mp, 0, 0, 7, 7, &bno, &len));
	free1 = sx_alloc_free_blocks(mp);
	ST_OK(st, sx_checkpoint(mp));
	ST_OK(st, st_copy(st, bd, &copy));
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = NULL;

	ST_OK(st, st_mount(copy, SX_MOUNT_RDONLY | SX_MOUNT_NORECOVERY, &mp));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free1, sx_alloc_free_blocks(mp));
	ST_CHECK(st, st_used(mp, bno, 7) == 7, st_used(mp, bno, 7));
	ST_OK(st, st_unmount(&mp));
	ST_CHECK(st, st_check(copy) == 0, st_check(copy));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(copy);
	st_destroy(bd);
}

#define ST_MAX_EXTENTS	8192

struct st_extent {
	u64	se_bno;
	u32	se_len;
};

/* Fill the device, hit ENOSPC, free it all, and find it all again after a remount. */
static void st_alloc_enospc(struct sx_st *st)
{
	struct sx_bdev *bd = NULL;
	struct sx_mount *mp = NULL;
	struct st_extent *ext;
	u64 free0, total = 0, n = 0, i;
	int error;

	ext = sx_alloc(ST_MAX_EXTENTS * sizeof(*ext), 0);
	ST_CHECK(st, ext != NULL, -ENOMEM);
	ST_OK(st, st_newfs(st, 4ull << 20, 1024, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	free0 = sx_alloc_free_blocks(mp);
	for (;;) {
		ST_CHECK(st, n < ST_MAX_EXTENTS, n);
		error = st_alloc(mp, 0, 0, 1, 100, &ext[n].se_bno, &ext[n].se_len);
		if (error)
			break;
		total += ext[n].se_len;
		n++;
	}
	ST_CHECK(st, error == -ENOSPC, error);
	ST_CHECK(st, total == free0, total);
	ST_CHECK(st, sx_alloc_free_blocks(mp) == 0, sx_alloc_free_blocks(mp));
	ST_OK(st, st_unmount(&mp));

	ST_OK(st, st_mount(bd, 0, &mp));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == 0, sx_alloc_free_blocks(mp));
	for (i = 0; i < n; i++)
		ST_OK(st, st_free(mp, 0, ext[i].se_bno, ext[i].se_len));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0, sx_alloc_free_blocks(mp));
	ST_OK(st, st_unmount(&mp));
	ST_OK(st, st_mount(bd, 0, &mp));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0, sx_alloc_free_blocks(mp));
	ST_OK(st, st_unmount(&mp));
	ST_CHECK(st, st_check(bd) == 0, st_check(bd));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(bd);
	sx_free(ext);
}

/* Freeing free blocks is corruption, reported and refused. */
static void st_alloc_double_free(struct sx_st *st)
{
	struct sx_bdev *bd = NULL;
	struct sx_mount *mp = NULL;
	u64 bno;
	u32 len;
	int error;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 4096, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	ST_OK(st, st_alloc(mp, 0, 0, 2, 2, &bno, &len));
	ST_OK(st, st_free(mp, 0, bno, 2));
	error = st_free(mp, 0, bno, 2);
	ST_CHECK(st, error == -EFSCORRUPTED, error);
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(bd);
}

/*
 * A deferred free (an EFI chain of one step per transaction) returns the
 * blocks at commit; a crash copy taken after it recovers to the same
 * counts, with the intent and its done item paired by recovery.
 */
static void st_defer_efi(struct sx_st *st)
{
	struct sx_bdev *bd = NULL, *copy = NULL;
	struct sx_mount *mp = NULL;
	struct sx_defer_stats ds0, ds1;
	struct sx_trans *tp;
	u64 free0, bno[3];
	u32 len, max;
	int i;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 512, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	free0 = sx_alloc_free_blocks(mp);
	max = sx_alloc_max_extent(mp);
	/* three maximal extents, one after the other */
	for (i = 0; i < 3; i++) {
		ST_OK(st, st_alloc(mp, 0, 0, max, max, &bno[i], &len));
		ST_CHECK(st, i == 0 || bno[i] == bno[i - 1] + max, bno[i]);
	}
	sx_defer_get_stats(mp, &ds0);
	ST_OK(st, sx_trans_alloc(mp, sx_efi_res_bytes(mp), SX_TRANS_SYNC, &tp));
	/* one range of three extents' worth: the chain takes three steps */
	ST_OK(st, sx_efi_free_later(tp, bno[0], 3ull * max));
	ST_OK(st, sx_trans_commit(tp));
	sx_defer_get_stats(mp, &ds1);
	ST_CHECK(st, ds1.ds_intents > ds0.ds_intents, ds1.ds_intents);
	ST_CHECK(st, ds1.ds_steps - ds0.ds_steps >= 3, ds1.ds_steps - ds0.ds_steps);
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0, sx_alloc_free_blocks(mp));
	ST_OK(st, st_copy(st, bd, &copy));
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = NULL;

	ST_OK(st, st_mount(copy, 0, &mp));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0, sx_alloc_free_blocks(mp));
	ST_CHECK(st, st_used(mp, bno[0], 3ull * max) == 0, st_used(mp, bno[0], 3ull * max));
	ST_OK(st, st_unmount(&mp));
	ST_CHECK(st, st_check(copy) == 0, st_check(copy));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(copy);
	st_destroy(bd);
}

/* After a shutdown nothing more is written and every call says -EIO. */
static void st_shutdown(struct sx_st *st)
{
	struct sx_bdev *bd = NULL, *copy = NULL;
	struct sx_mount *mp = NULL;
	struct sx_trans *tp;
	u64 free0, bno;
	u32 len;
	int error;

	ST_OK(st, st_newfs(st, ST_DEVSIZE, 4096, &bd));
	ST_OK(st, st_mount(bd, 0, &mp));
	ST_OK(st, st_alloc(mp, SX_TRANS_SYNC, 0, 3, 3, &bno, &len));
	free0 = sx_alloc_free_blocks(mp);
	ST_OK(st, st_alloc(mp, 0, 0, 3, 3, &bno, &len));
	sx_shutdown(mp);
	error = sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp);
	ST_CHECK(st, error == -EIO, error);
	ST_CHECK(st, sx_sync(mp) != 0, 0);
	error = sx_unmount(mp);
	mp = NULL;
	ST_CHECK(st, error == -EIO, error);

	/* the unforced transaction was dropped, the forced one is there */
	ST_OK(st, st_copy(st, bd, &copy));
	ST_OK(st, st_mount(copy, 0, &mp));
	ST_CHECK(st, sx_alloc_free_blocks(mp) == free0, sx_alloc_free_blocks(mp));
out:
	if (mp)
		sx_unmount(mp);
	st_destroy(copy);
	st_destroy(bd);
}

struct sx_st_case {
	const char	*sc_name;
	void		(*sc_fn)(struct sx_st *st);
};

static const struct sx_st_case sx_st_cases[] = {
	{ "mkfs-mount",			st_mkfs_mount },
	{ "mkfs-geometry",		st_mkfs_geometry },
	{ "mount-garbage",		st_mount_garbage },
	{ "trans-commit-cancel",	st_trans_commit_cancel },
	{ "log-force",			st_log_force },
	{ "crash-recovery",		st_crash_recovery },
	{ "crash-unforced",		st_crash_unforced },
	{ "crash-after-recovery",	st_crash_after_recovery },
	{ "checkpoint",			st_checkpoint },
	{ "alloc-enospc",		st_alloc_enospc },
	{ "alloc-double-free",		st_alloc_double_free },
	{ "defer-efi",			st_defer_efi },
	{ "shutdown",			st_shutdown },
};

/* Run every scenario and report each; 0 if all passed. */
SX_API int sx_selftest_run(sx_memdev_fn mkdev, sx_report_fn out, void *arg,
			   u32 *passed, u32 *failed)
{
	struct sx_st *st;
	u32 np = 0, nf = 0;
	size_t i;

	st = sx_zalloc(sizeof(*st), 0);
	if (!st)
		return -ENOMEM;
	st->st_mkdev = mkdev;
	for (i = 0; i < ARRAY_SIZE(sx_st_cases); i++) {
		st->st_why[0] = '\0';
		sx_st_cases[i].sc_fn(st);
		if (st->st_why[0]) {
			nf++;
			out(arg, "FAIL %s: %s", sx_st_cases[i].sc_name, st->st_why);
		} else {
			np++;
			out(arg, "PASS %s", sx_st_cases[i].sc_name);
		}
	}
	out(arg, "%u passed, %u failed", np, nf);
	sx_free(st);
	if (passed)
		*passed = np;
	if (failed)
		*failed = nf;
	return nf ? -EIO : 0;
}
