// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * File data in the log (SX_LB_DATA, buf.h): a small atomic write carries
 * its new blocks in its record, so a durable 4 KiB write is one device
 * write and one flush; reads see the blocks before a checkpoint writes
 * them home; recovery writes the images back; an overwrite in place of
 * such a block goes through the log, so that recovery's replay of the
 * older image cannot undo it; data allocations step around the blocks
 * while their images may be replayed, a write in place into one is
 * refused, and a checkpoint lets them go.  At the log's level: a data
 * image replays over anything, a block that turns from data into metadata
 * or back replays to what it last was, and the checker and recovery refuse
 * a data op that is not one whole block.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxtest.h"
#include "sxswap.h"
#include "sxcrash.h"
#include "alloc.h"
#include "buf.h"
#include "trans.h"
#include "file_io.h"
#include "fsinfo.h"
#include "log.h"
#include <swapext/device.h>

#define MIB	(1ull << 20)
#define BS	4096u
#define FSIZE	(64 * BS)

static struct sx_bdev *mem, *bd;
static struct sx_crashdev *cd;
static struct sx_mount *mp;
static int fd;
static u8 model[FSIZE];

static void fill(u8 *buf, u64 len, u8 seed)
{
	u64 i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(seed + i * 7 + i / BS);
}

/* A 64-block file, written and durable: "f", its bytes in model[]. */
static int setup_logsize(u64 imgsize, u32 logblocks)
{
	mem = sxs_mkimg(imgsize, BS, logblocks, true);
	assert_int_equal(sx_crashdev_create(mem, 1, &bd, &cd), 0);
	mp = sxt_mount(bd);
	fill(model, FSIZE, 1);
	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	assert_int_equal(sx_pwrite(mp, fd, model, FSIZE, 0), (s64)FSIZE);
	assert_int_equal(sx_fsync(mp, fd), 0);
	return 0;
}

static int setup(void **state)
{
	return setup_logsize(32 * MIB, 0);
}

/* A 16 MiB log: room for more than 2 MiB of blocks in records. */
static int setup_big_log(void **state)
{
	return setup_logsize(32 * MIB, 4096);
}

/* A 32 MiB log, whose eighth (4 MiB) is more than the 2 MiB least bound. */
static int setup_huge_log(void **state)
{
	return setup_logsize(64 * MIB, 8192);
}

static int teardown(void **state)
{
	if (mp)
		assert_int_equal(sx_unmount(mp), 0);
	mp = NULL;
	assert_int_equal(sxc_check_clean(bd, 0, __func__), 0);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(mem);
	return 0;
}

/* The power goes: nothing but what the device holds survives. */
static void crash_remount(void)
{
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "f", &fd), 0);
}

/* "f" reads back as model[]. */
static void verify(void)
{
	static u8 buf[FSIZE];

	assert_int_equal(sx_pread(mp, fd, buf, FSIZE, 0), (s64)FSIZE);
	assert_memory_equal(buf, model, FSIZE);
}

/* Device block of byte @off of "f". */
static u64 phys(u64 off)
{
	struct sx_extent ext[2];
	u32 n = 0;

	assert_int_equal(sx_fiemap(mp, fd, off, BS, ext, 2, &n), 0);
	assert_true(n > 0 && ext[0].ex_off <= off);
	return (ext[0].ex_physical + (off - ext[0].ex_off)) / BS;
}

static u64 free_blocks(void)
{
	struct sx_info in;

	assert_int_equal(sx_get_info(mp, &in), 0);
	return in.in_free_blocks;
}

static void awrite(u64 off, u64 len, u8 seed, u32 flags)
{
	u8 *buf = malloc(len);

	fill(buf, len, seed);
	assert_int_equal(sx_atomic_write(mp, fd, buf, len, off, flags), 0);
	memcpy(model + off, buf, len);
	free(buf);
}

/*
 * A durable 4 KiB atomic write is one device write (its record, with the
 * block in it) and one flush; in place first (SX_ATOMIC_INPLACE) it is
 * two writes.  The block is read back from the cache before any
 * checkpoint, and from the log after a crash.
 */
static void test_one_write(void **state)
{
	struct sx_crashdev_stats c0, c1;
	u8 home[BS];
	u64 b;

	sx_crashdev_get_stats(cd, &c0);
	awrite(5 * BS, BS, 40, 0);
	sx_crashdev_get_stats(cd, &c1);
	assert_int_equal(c1.cs_writes - c0.cs_writes, 1);
	assert_int_equal(c1.cs_flushes - c0.cs_flushes, 1);
	assert_int_equal(sx_bcache_data_count(mp), 1);
	b = phys(5 * BS);
	/* not home yet: only the cache and the log have it */
	sxt_bdev_peek(mem, b * BS, home, BS);
	assert_memory_not_equal(home, model + 5 * BS, BS);
	verify();

	sx_crashdev_get_stats(cd, &c0);
	awrite(9 * BS, BS, 41, SX_ATOMIC_INPLACE);
	sx_crashdev_get_stats(cd, &c1);
	assert_int_equal(c1.cs_writes - c0.cs_writes, 2);
	assert_int_equal(c1.cs_flushes - c0.cs_flushes, 1);
	assert_int_equal(sx_bcache_data_count(mp), 1);

	crash_remount();
	verify();
	sxt_bdev_peek(mem, b * BS, home, BS);
	assert_memory_equal(home, model + 5 * BS, BS);
}

/*
 * A small atomic write over written blocks carries the file's own blocks
 * in its record: nothing is allocated, unmapped or freed, the blocks stay
 * where they are, one device write and one flush make it durable, the
 * blocks' home is untouched until a checkpoint writes them there, and
 * recovery puts the images back.  Not yet durable (SX_ATOMIC_NOSYNC), a
 * crash leaves the old bytes.
 */
static void test_own_blocks(void **state)
{
	struct sx_crashdev_stats c0, c1;
	u8 old[2 * BS], home[2 * BS];
	u64 b = phys(12 * BS), fr = free_blocks();

	assert_int_equal(phys(13 * BS), b + 1);
	sxt_bdev_peek(mem, b * BS, old, sizeof(old));
	sx_crashdev_get_stats(cd, &c0);
	awrite(12 * BS + 100, BS + 50, 42, 0);	/* both blocks partly */
	sx_crashdev_get_stats(cd, &c1);
	assert_int_equal(c1.cs_writes - c0.cs_writes, 1);
	assert_int_equal(c1.cs_flushes - c0.cs_flushes, 1);
	assert_int_equal(phys(12 * BS), b);
	assert_int_equal(phys(13 * BS), b + 1);
	assert_int_equal(free_blocks(), fr);
	assert_int_equal(sx_bcache_data_count(mp), 2);
	sxt_bdev_peek(mem, b * BS, home, sizeof(home));
	assert_memory_equal(home, old, sizeof(home));
	verify();

	crash_remount();
	verify();
	assert_int_equal(phys(12 * BS), b);
	assert_int_equal(free_blocks(), fr);
	assert_int_equal(sx_checkpoint(mp), 0);
	assert_int_equal(sx_bcache_data_count(mp), 0);
	sxt_bdev_peek(mem, b * BS, home, sizeof(home));
	assert_memory_equal(home, model + 12 * BS, sizeof(home));

	/* not durable: the power takes it */
	memcpy(old, model + 12 * BS, sizeof(old));
	awrite(12 * BS, 2 * BS, 43, SX_ATOMIC_NOSYNC);
	verify();
	memcpy(model + 12 * BS, old, sizeof(old));
	crash_remount();
	verify();
}

/*
 * New blocks instead: with SX_ATOMIC_REMAP, and for a write that covers a
 * hole or an unwritten extent anywhere (the whole call moves, the written
 * blocks too).  Each reads back, and after a crash.
 */
static void test_own_blocks_not(void **state)
{
	u64 b = phys(12 * BS), w;

	awrite(12 * BS, BS, 44, SX_ATOMIC_REMAP);
	assert_true(phys(12 * BS) != b);

	assert_int_equal(sx_punch(mp, fd, 21 * BS, BS), 0);
	memset(model + 21 * BS, 0, BS);
	w = phys(20 * BS);
	awrite(20 * BS + 7, 2 * BS, 45, 0);
	assert_true(phys(20 * BS) != w);
	verify();

	assert_int_equal(sx_punch(mp, fd, 25 * BS, BS), 0);
	assert_int_equal(sx_fallocate(mp, fd, 25 * BS, BS), 0);
	memset(model + 25 * BS, 0, BS);
	w = phys(25 * BS);
	awrite(25 * BS + 9, 30, 46, 0);
	assert_true(phys(25 * BS) != w);
	verify();
	assert_int_equal(sx_fsync(mp, fd), 0);
	crash_remount();
	verify();
}

/*
 * A cancelled write over a block still in the log keeps the block's data
 * buffer: the block is home and clean (a checkpoint wrote it) but the
 * tail cannot pass its image (another logged block's buffer is held), and
 * the write fails at its commit.  Were the buffer dropped, the next write
 * in place would go to the block directly, and after a crash recovery
 * would put the old image back over what an fsync said was durable.
 */
static void test_own_cancel_keeps(void **state)
{
	u64 y = phys(7 * BS);
	struct sx_buf *hold;
	u8 buf[BS];
	u32 n;

	awrite(7 * BS, BS, 50, 0);
	awrite(5 * BS, BS, 51, 0);
	hold = sx_buf_trylock_data(mp, y);
	assert_non_null(hold);
	assert_int_equal(sx_checkpoint(mp), 0);
	sx_buf_relse(hold);
	n = sx_bcache_data_count(mp);
	assert_int_equal(n, 2);

	fill(buf, BS, 52);
	assert_int_equal(sx_fault_arm("trans_commit", 1, false, -ENOMEM), 0);
	assert_int_equal(sx_atomic_write(mp, fd, buf, BS, 5 * BS, 0), -ENOMEM);
	sx_fault_disarm_all();
	assert_int_equal(sx_bcache_data_count(mp), n);
	verify();

	fill(buf, BS, 53);
	assert_int_equal(sx_pwrite(mp, fd, buf, BS, 5 * BS), (s64)BS);
	assert_int_equal(sx_fsync(mp, fd), 0);
	memcpy(model + 5 * BS, buf, BS);
	verify();
	crash_remount();
	verify();
}

/*
 * A block written fresh in place and then, before any force, by a small
 * atomic write: the force lists the fresh bytes' checksum in its manifest
 * (log_manifest.c), so the atomic write must not put other bytes in the
 * block itself, which a checkpoint would write home while that force may
 * still be the last one (here another logged block's buffer is held, so
 * the tail stays behind it).  Recovery would find the block changed and
 * drop the force, acknowledged atomic write and all.
 */
static void test_own_not_manifest(void **state)
{
	u64 y = phys(7 * BS);
	struct sx_buf *hold;
	u8 buf[BS];

	assert_int_equal(sx_punch(mp, fd, 30 * BS, BS), 0);
	memset(model + 30 * BS, 0, BS);
	assert_int_equal(sx_fsync(mp, fd), 0);
	awrite(7 * BS, BS, 59, 0);
	fill(buf, BS, 60);
	assert_int_equal(sx_pwrite(mp, fd, buf, BS, 30 * BS), (s64)BS);	/* fresh, not forced */
	memcpy(model + 30 * BS, buf, BS);
	awrite(30 * BS + 100, 200, 61, 0);
	hold = sx_buf_trylock_data(mp, y);
	assert_non_null(hold);
	assert_int_equal(sx_checkpoint(mp), 0);
	sx_buf_relse(hold);
	verify();
	crash_remount();
	verify();
}

/* A checkpoint writes the blocks home and lets their buffers go. */
static void test_checkpoint_home(void **state)
{
	u8 home[4 * BS];
	u64 b;

	awrite(20 * BS, 4 * BS, 50, 0);
	assert_int_equal(sx_bcache_data_count(mp), 4);
	b = phys(20 * BS);
	assert_int_equal(phys(23 * BS), b + 3);
	assert_int_equal(sx_checkpoint(mp), 0);
	assert_int_equal(sx_bcache_data_count(mp), 0);
	sxt_bdev_peek(mem, b * BS, home, sizeof(home));
	assert_memory_equal(home, model + 20 * BS, sizeof(home));
	verify();
	crash_remount();
	verify();
}

/*
 * Overwrites in place of a block whose contents are in the log, durable
 * (fsync) or not, whole, partial, or zeroing: after a crash the file shows
 * them, not the older image recovery also holds.
 */
static void test_overwrite_in_place(void **state)
{
	u8 buf[3 * BS];
	u64 b;

	awrite(30 * BS, 2 * BS, 60, 0);
	b = phys(30 * BS);
	/* across the logged pair and a block written in place on each side */
	fill(buf, sizeof(buf), 61);
	assert_int_equal(sx_pwrite(mp, fd, buf, 3 * BS - 100, 29 * BS + 50), 3 * BS - 100);
	memcpy(model + 29 * BS + 50, buf, 3 * BS - 100);
	assert_int_equal(phys(30 * BS), b);		/* in place */
	verify();
	assert_int_equal(sx_fsync(mp, fd), 0);
	crash_remount();
	verify();

	/* not synced: after a crash, the last durable state or the new one */
	awrite(40 * BS, BS, 62, 0);
	assert_int_equal(sx_punch(mp, fd, 44 * BS, BS), 0);
	memset(model + 44 * BS, 0, BS);
	fill(buf, 10, 63);
	assert_int_equal(sx_pwrite(mp, fd, buf, 10, 40 * BS + 7), 10);
	memcpy(model + 40 * BS + 7, buf, 10);
	verify();
	assert_int_equal(sx_fsync(mp, fd), 0);
	crash_remount();
	verify();
}

/*
 * Fill the filesystem with file "filler" until one block is free (the one
 * just freed); its descriptor in *@ffd.  Return: the filler's size.
 */
static u64 fill_but(int *ffd)
{
	u64 fr;

	assert_int_equal(sx_create(mp, "filler", 0644, ffd), 0);
	fr = free_blocks();
	assert_int_equal(sx_fallocate(mp, *ffd, 0, (fr - 1) * BS), 0);
	assert_int_equal(free_blocks(), 1);
	return (fr - 1) * BS;
}

/* Whether data allocation hands out block @b now. */
static bool data_gets(u64 b)
{
	struct sx_trans *tp;
	u64 got = 0;
	u32 len;
	int error;

	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	error = sx_alloc_data_extent(tp, b, 1, 1, &got, &len);
	sx_trans_cancel(tp);
	assert_true(error == 0 || error == -ENOSPC);
	return error == 0 && got == b;
}

/*
 * A block freed while its image may still be replayed, and not cancelled
 * (its buffer was busy: here the test holds it), is not given to data
 * until a checkpoint moves the tail past it (metadata may take it: its own
 * image is newer), and nobody writes it in place meanwhile.  The
 * filesystem is filled first, so that it is the only free block (the
 * writes move the blocks, SX_ATOMIC_REMAP, to a block past those the
 * filler takes).
 */
static void test_freed_not_reused(void **state)
{
	struct sx_buf *bp;
	u8 buf[BS];
	u64 b;
	int ffd;

	awrite(50 * BS, BS, 70, SX_ATOMIC_REMAP);
	b = phys(50 * BS);
	bp = sx_buf_trylock_data(mp, b);
	assert_non_null(bp);
	awrite(50 * BS, BS, 71, SX_ATOMIC_REMAP);	/* frees b, durably */
	sx_buf_relse(bp);
	assert_true(phys(50 * BS) != b);
	fill_but(&ffd);

	assert_false(data_gets(b));
	fill(buf, BS, 72);
	assert_int_equal(sx_file_write_data(mp, b, 1, buf, true), -EFSCORRUPTED);

	assert_int_equal(sx_checkpoint(mp), 0);
	assert_true(data_gets(b));
	assert_int_equal(sx_close(mp, ffd), 0);
	verify();
	crash_remount();
	verify();
}

/*
 * Freed by the write that replaces it, a block carried in a record gets a
 * cancel in that write's transaction: data may take the block as soon as
 * the free is durable, recovery does not put the old image over what is
 * written there in place afterwards (the image is still in the log at the
 * crash), and no checkpoint writes such a block home.
 */
static void test_freed_cancelled(void **state)
{
	u8 old[BS], buf[BS], got[BS];
	u64 b, fsz;
	int ffd;

	awrite(50 * BS, BS, 70, SX_ATOMIC_REMAP);
	b = phys(50 * BS);
	awrite(50 * BS, BS, 71, SX_ATOMIC_REMAP);	/* frees b, durably, and cancels its image */
	assert_true(phys(50 * BS) != b);

	fsz = fill_but(&ffd);
	assert_true(data_gets(b));
	/* the filler's next block can only be b: written in place there */
	fill(buf, BS, 73);
	assert_int_equal(sx_pwrite(mp, ffd, buf, BS, fsz), (s64)BS);
	assert_int_equal(sx_fsync(mp, ffd), 0);
	assert_int_equal(bd->bd_ops->read(bd, b * BS, got, BS), 0);
	assert_memory_equal(got, buf, BS);
	assert_int_equal(sx_close(mp, ffd), 0);
	verify();
	crash_remount();
	verify();
	assert_int_equal(sx_open(mp, "filler", &ffd), 0);
	assert_int_equal(sx_pread(mp, ffd, got, BS, fsz), (s64)BS);
	assert_memory_equal(got, buf, BS);
	assert_int_equal(sx_punch(mp, ffd, 0, fsz + BS), 0);
	assert_int_equal(sx_close(mp, ffd), 0);

	awrite(51 * BS, BS, 74, SX_ATOMIC_REMAP);
	b = phys(51 * BS);
	memcpy(old, model + 51 * BS, BS);
	awrite(51 * BS, BS, 75, SX_ATOMIC_REMAP);
	assert_int_equal(sx_checkpoint(mp), 0);
	assert_int_equal(bd->bd_ops->read(bd, b * BS, got, BS), 0);
	assert_memory_not_equal(got, old, BS);	/* the checkpoint left it alone */
}

/*
 * Punch the @n blocks at @off of "f", each carried in a record, the first
 * at @b: once the punch is durable their buffers are gone (their images
 * were cancelled), data may take @b at once, the checkpoint after it
 * leaves @b alone, and a crash keeps the hole.
 */
static void punch_cancelled(u64 off, u32 n, u64 b)
{
	u8 old[BS], got[BS];
	u32 n0 = sx_bcache_data_count(mp);

	assert_true(n0 >= n);
	memcpy(old, model + off, BS);
	assert_int_equal(sx_punch(mp, fd, off, (u64)n * BS), 0);
	memset(model + off, 0, (size_t)n * BS);
	assert_int_equal(sx_fsync(mp, fd), 0);
	assert_int_equal(sx_bcache_data_count(mp), n0 - n);
	assert_true(data_gets(b));
	assert_int_equal(sx_checkpoint(mp), 0);
	assert_int_equal(bd->bd_ops->read(bd, b * BS, got, BS), 0);
	assert_memory_not_equal(got, old, BS);
	verify();
	crash_remount();
	verify();
}

/*
 * A punch frees through the batched free of a file's blocks, which cancels
 * the images of the blocks it frees too.
 */
static void test_punch_cancels(void **state)
{
	awrite(30 * BS, 2 * BS, 90, 0);
	punch_cancelled(30 * BS, 2, phys(30 * BS));
}

/*
 * A shared file frees through the refcount tree: the step that lets the
 * last owner go frees the blocks in its own transaction, and cancels the
 * image of a block a small atomic write carried before the file was
 * shared.  Once that step is durable the block goes to data at once, its
 * buffer is gone, and the checkpoint after it leaves the block alone.
 */
static void test_refcount_free_cancels(void **state)
{
	int gfd;

	awrite(50 * BS, BS, 95, 0);
	/* shared, then its only owner again: the block has no refcount record */
	assert_int_equal(sx_create(mp, "g", 0644, &gfd), 0);
	assert_int_equal(sx_clone(mp, gfd, fd), 0);
	assert_int_equal(sx_close(mp, gfd), 0);
	assert_int_equal(sx_unlink(mp, "g"), 0);
	assert_int_equal(sx_fsync(mp, fd), 0);
	punch_cancelled(50 * BS, 1, phys(50 * BS));
}

/*
 * sx_trans_stale_data() cancels no more images than asked, nor than the
 * reservation holds; and a transaction that cancelled some and is then
 * cancelled itself leaves them live: still cached, still withheld, still
 * what reads and recovery return.
 */
static void test_stale_budget(void **state)
{
	struct sx_trans *tp;
	u64 b, hit;

	awrite(20 * BS, 4 * BS, 80, 0);		/* 16 KiB: carried in the record */
	b = phys(20 * BS);
	assert_int_equal(phys(23 * BS), b + 3);
	assert_true(sx_buf_range_data(mp, b, 4, &hit));

	assert_int_equal(sx_trans_alloc(mp, 4 * sx_trans_stale_bytes(), 0, &tp), 0);
	assert_int_equal(sx_trans_stale_data(tp, b, 4, 1), 1);
	assert_int_equal(sx_trans_stale_data(tp, b, 4, 8), 3);
	assert_int_equal(sx_trans_stale_data(tp, b, 4, 8), 0);
	sx_trans_cancel(tp);

	assert_int_equal(sx_trans_alloc(mp, 2 * sx_trans_stale_bytes(), 0, &tp), 0);
	assert_int_equal(sx_trans_stale_data(tp, b, 4, 4), 2);
	sx_trans_cancel(tp);

	/* all four still live after the cancels */
	assert_true(sx_buf_range_data(mp, b, 1, &hit));
	assert_true(sx_buf_range_data(mp, b + 3, 1, &hit));
	verify();
	crash_remount();
	verify();
}

/*
 * A block cached as live metadata is not file data: asked for it as data
 * (a mapping that points into metadata), the cache refuses rather than
 * hand out, and later log whole, the metadata's buffer as a data block.
 * The metadata reads back unchanged afterwards.
 */
static void test_metadata_not_data(void **state)
{
	u64 b = mp->m_sb.sb_fsinfo;
	struct sx_trans *tp;
	struct sx_buf *bp;
	u8 before[BS];

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_fsinfo_get(tp, &bp), 0);
	memcpy(before, bp->b_data, BS);
	sx_trans_cancel(tp);

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_trans_read_buf(tp, b, &sx_data_buf_ops, 0, &bp), -EFSCORRUPTED);
	sx_trans_cancel(tp);
	assert_int_equal(sx_bcache_data_count(mp), 0);

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_fsinfo_get(tp, &bp), 0);
	assert_ptr_equal(bp->b_ops, &sx_fsinfo_buf_ops);
	assert_memory_equal(bp->b_data, before, BS);
	sx_trans_cancel(tp);
	verify();
}

/*
 * The blocks carried in records stay cached until a checkpoint; past an
 * eighth of the log (at least 2 MiB) of them the write that adds more runs
 * one, so they never pile up, and the files read back right across those
 * checkpoints and a crash.  Blocks
 * written over again are cancelled as they are freed, so rewriting a small
 * file keeps no more cached than the file's blocks and needs no checkpoint.
 */
static void test_bounded(void **state)
{
	const u32 n = 1500;
	const u32 bound = sx_max((2u << 20) / BS, mp->m_sb.sb_logblocks / 8);
	struct sx_log_stats s0, s1;
	u8 *gmodel = malloc((size_t)n * BS), *got = malloc((size_t)n * BS);
	u32 i, most = 0;
	int gfd;

	assert_non_null(gmodel);
	assert_non_null(got);
	sx_log_get_stats(mp, &s0);
	for (i = 0; i < n; i++) {
		awrite((i * 7 % 64) * BS, BS, (u8)i, 0);
		most = sx_max(most, sx_bcache_data_count(mp));
	}
	sx_log_get_stats(mp, &s1);
	assert_true(most <= 64 + 2);
	assert_int_equal(s1.ls_checkpoints, s0.ls_checkpoints);

	/* new blocks each time: a second file written block by block */
	assert_int_equal(sx_create(mp, "g", 0644, &gfd), 0);
	most = 0;
	for (i = 0; i < n; i++) {
		fill(gmodel + (size_t)i * BS, BS, (u8)(i * 3));
		assert_int_equal(sx_atomic_write(mp, gfd, gmodel + (size_t)i * BS, BS,
						 (u64)i * BS, 0), 0);
		most = sx_max(most, sx_bcache_data_count(mp));
	}
	sx_log_get_stats(mp, &s0);
	assert_true(most <= bound + 1);
	assert_true(most > bound / 2);
	assert_true(s0.ls_checkpoints - s1.ls_checkpoints >= n / (bound + 1));
	assert_int_equal(sx_close(mp, gfd), 0);
	verify();
	crash_remount();
	verify();
	assert_int_equal(sx_open(mp, "g", &gfd), 0);
	assert_int_equal(sx_pread(mp, gfd, got, (u64)n * BS, 0), (s64)n * BS);
	assert_memory_equal(got, gmodel, (size_t)n * BS);
	assert_int_equal(sx_close(mp, gfd), 0);
	free(gmodel);
	free(got);
}

/* Grow the filler file @ffd (now *@fsize bytes) until @n free blocks are left. */
static void only_free(int ffd, u64 *fsize, u64 n)
{
	u64 fr = free_blocks();

	assert_true(fr >= n);
	if (fr > n) {
		assert_int_equal(sx_fallocate(mp, ffd, *fsize, (fr - n) * BS), 0);
		*fsize += (fr - n) * BS;
	}
	assert_int_equal(free_blocks(), n);
}

/* Rewrite [@off, +2 blocks) twice: its 2 blocks of the first write are freed, still in the log. */
static void withhold_two(u64 off, u8 seed)
{
	awrite(off, 2 * BS, seed, 0);
	awrite(off, 2 * BS, seed + 1, SX_ATOMIC_REMAP);
}

/*
 * On a full filesystem whose only free blocks are ones a data allocation
 * must step around, writes still get them: a checkpoint lets them go.
 * An atomic write, a write into a hole (sx_pwrite) and fallocate, each
 * when the 2 blocks it needs are all there is.
 */
static void test_nearly_full(void **state)
{
	u8 buf[2 * BS];
	u64 fsize = 0;
	int ffd;

	assert_int_equal(sx_create(mp, "filler", 0644, &ffd), 0);
	withhold_two(0, 90);
	only_free(ffd, &fsize, 2);
	awrite(8 * BS, 2 * BS, 92, 0);

	withhold_two(16 * BS, 93);
	only_free(ffd, &fsize, 2);
	fill(buf, sizeof(buf), 95);
	assert_int_equal(sx_pwrite(mp, fd, buf, 2 * BS, FSIZE), 2 * BS);
	assert_int_equal(sx_truncate(mp, fd, FSIZE), 0);

	withhold_two(20 * BS, 96);
	only_free(ffd, &fsize, 2);
	assert_int_equal(sx_fallocate(mp, fd, FSIZE, 2 * BS), 0);
	assert_int_equal(sx_truncate(mp, fd, FSIZE), 0);
	verify();
	assert_int_equal(sx_close(mp, ffd), 0);
	crash_remount();
	verify();
}

/* Only small writes go in the record: 16 KiB does, 20 KiB is written in place. */
static void test_size_limit(void **state)
{
	struct sx_crashdev_stats c0, c1;

	sx_crashdev_get_stats(cd, &c0);
	awrite(0, 4 * BS, 80, 0);
	sx_crashdev_get_stats(cd, &c1);
	assert_int_equal(c1.cs_writes - c0.cs_writes, 1);
	assert_int_equal(sx_bcache_data_count(mp), 4);
	assert_int_equal(sx_checkpoint(mp), 0);
	sx_crashdev_get_stats(cd, &c0);
	awrite(8 * BS, 5 * BS, 81, 0);
	sx_crashdev_get_stats(cd, &c1);
	assert_int_equal(c1.cs_writes - c0.cs_writes, 2);
	assert_int_equal(sx_bcache_data_count(mp), 0);
	crash_remount();
	verify();
}

enum ck_fault { CK_WRITE, CK_SITE, CK_ALLOC };

/* Arm (@nth > 0) or disarm (0) the failure @how on the checkpoint's @nth try. */
static void ck_arm(enum ck_fault how, u64 nth)
{
	switch (how) {
	case CK_WRITE:
		if (nth)
			sx_crashdev_fail(cd, SX_IO_WRITE, nth, true, -EIO);
		else
			sx_crashdev_clear_faults(cd);
		break;
	case CK_SITE:
		assert_int_equal(sx_fault_arm("buf_write", nth, nth != 0, -EIO), 0);
		break;
	case CK_ALLOC:
		sx_alloc_fail(nth, false);
		break;
	}
}

/*
 * Fail the checkpoint of a fresh write's blocks at its 1st, 2nd, ... try
 * of @how until one passes; each failure is @error, and a remount finds
 * the file whole.  Returns how many failed.
 */
static int ck_fail_each(void **state, enum ck_fault how, int want)
{
	int error, failed = 0;
	u64 nth;

	for (nth = 1; nth < 100; nth++) {
		setup(state);
		awrite(20 * BS, 4 * BS, (u8)(50 + how), 0);
		ck_arm(how, nth);
		error = sx_checkpoint(mp);
		ck_arm(how, 0);
		if (error)
			assert_int_equal(error, want);
		crash_remount();
		verify();
		teardown(state);
		/* an allocation's loss may be borne: go on past the first few */
		if (!error && (how != CK_ALLOC || nth > 2))
			break;
		failed += error != 0;
	}
	return failed;
}

/*
 * A checkpoint that writes the blocks home fails at each of its device
 * writes in turn (the batched write of the data blocks among them): it
 * returns the error and shuts the mount down, and after a remount the
 * file is whole, its new blocks put home by recovery from the log; the
 * same at each call of the write fault site.  Then each of its
 * allocations fails in turn: without memory for a batch the blocks go
 * home one at a time, and any other failure ends like the write errors.
 */
static void test_checkpoint_faults(void **state)
{
	/* metadata blocks and the data batch, each failed once */
	assert_true(ck_fail_each(state, CK_WRITE, -EIO) >= 3);
	assert_true(ck_fail_each(state, CK_SITE, -EIO) >= 3);
	ck_fail_each(state, CK_ALLOC, -ENOMEM);
}

/* ------------------------------------------------------------ the log's level */

static struct sx_mount *lmp;
static struct sx_bdev *lbd;

static int setup_log(void **state)
{
	lbd = sxt_memfs(16 * MIB, BS, 0);
	lmp = sxt_mount(lbd);
	return 0;
}

static int teardown_log(void **state)
{
	if (lmp)
		sx_unmount(lmp);
	lmp = NULL;
	sx_bdev_destroy(lbd);
	return 0;
}

/* Log block @blkno as file data holding @byte, in its own transaction. */
static void log_data(u64 blkno, u8 byte)
{
	struct sx_trans *tp;
	struct sx_buf *bp;

	assert_int_equal(sx_trans_alloc(lmp, sx_trans_buf_bytes(lmp), 0, &tp), 0);
	assert_int_equal(sx_trans_get_buf(tp, blkno, &sx_data_buf_ops, 0, &bp), 0);
	memset(bp->b_data, byte, BS);
	assert_int_equal(sx_trans_log_buf(tp, bp, 0, BS - 1), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
}

/* Make block @blkno a test metadata block at @gen, in its own transaction. */
static void log_meta(u64 blkno, u64 gen)
{
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(lmp, sx_trans_buf_bytes(lmp), 0, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, blkno, gen), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
}

static void log_crash(void)
{
	assert_int_equal(sx_log_force(lmp), 0);
	sx_shutdown(lmp);
	sx_unmount(lmp);
	lmp = sxt_mount(lbd);
}

/*
 * A data image replays whole, over whatever the block held, with no
 * verifier; a block that was data and became metadata replays to the
 * metadata, one that was metadata (written home) and became data replays
 * to the data.
 */
static void test_replay_kinds(void **state)
{
	u64 b = lmp->m_sb.sb_datastart + 10, gen;
	u8 buf[BS], want[BS];

	log_data(b, 0xa1);
	log_data(b + 1, 0xb2);
	log_meta(b + 1, 7);			/* data, then metadata */
	log_meta(b + 2, 3);
	assert_int_equal(sx_checkpoint(lmp), 0);	/* b + 2 home as metadata */
	log_data(b + 2, 0xc3);			/* metadata, then data */
	log_crash();

	memset(want, 0xa1, BS);
	sxt_bdev_peek(lbd, b * BS, buf, BS);
	assert_memory_equal(buf, want, BS);
	assert_int_equal(sxt_tblock_read(lmp, b + 1, &gen), 0);
	assert_int_equal(gen, 7);
	memset(want, 0xc3, BS);
	sxt_bdev_peek(lbd, (b + 2) * BS, buf, BS);
	assert_memory_equal(buf, want, BS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_blocks_not, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_cancel_keeps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_not_manifest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_home, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overwrite_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_freed_not_reused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_freed_cancelled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_punch_cancels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refcount_free_cancels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata_not_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nearly_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounded, setup_big_log, teardown),
		cmocka_unit_test_setup_teardown(test_bounded, setup_huge_log, teardown),
		cmocka_unit_test(test_checkpoint_faults),
		cmocka_unit_test_setup_teardown(test_replay_kinds, setup_log, teardown_log),
	};

	sx_thread_enter();
	sxt_quiet();
	sxt_register_test_intent();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
