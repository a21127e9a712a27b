// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Journal tests: commit, force, checkpoint, cancel, roll, reservations,
 * wrap-around, cancel records, torn in-place writes, the test-only intent
 * and recovery's handling of the log's edges.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <pthread.h>
#include "sxtest.h"
#include "log_recover.h"
#include "dev.h"
#include "log_priv.h"

#define MIB		(1ull << 20)

/*
 * First free data block, where tests put their test blocks (mkfs takes the
 * first two data blocks: the fsinfo block and the root directory's inode).
 */
static u64 data0(struct sx_mount *mp)
{
	return mp->m_sb.sb_datastart + 2;
}

/* Write test block @blkno at @gen in its own transaction. */
static void put_tblock(struct sx_mount *mp, u64 blkno, u64 gen, u32 flags)
{
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), flags, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, blkno, gen), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
}

/* The generation on disk of a test block, read raw (-1 if unverifiable). */
static s64 disk_gen(struct sx_bdev *bd, u32 bsize, u64 blkno)
{
	u8 *buf = malloc(bsize);
	s64 gen;

	sxt_bdev_peek(bd, blkno * bsize, buf, bsize);
	gen = sxt_tblock_check(buf, bsize, blkno);
	free(buf);
	return gen;
}

/*
 * What a transaction charges for a logged block follows the chunks its
 * regions cover: a header, one region per run of dirty chunks and the
 * chunks themselves, never more than the whole block.  Random regions on
 * 512-byte (4 chunks), 4 KiB (32) and 16 KiB (128: runs across words of
 * the chunk map) blocks, the charge checked against a count made chunk by
 * chunk after each one.
 */
static void log_buf_charge(u32 bsize, u64 seed)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, bsize, 0);
	struct sx_mount *mp = sxt_mount(bd);
	u32 nchunks = bsize / SX_BUF_CHUNK, round, k;
	u64 b = data0(mp), rs = seed;
	bool dirty[128];

	put_tblock(mp, b, 1, 0);
	for (round = 0; round < 40; round++) {
		struct sx_trans *tp;
		struct sx_buf *bp;
		u32 base;

		memset(dirty, 0, sizeof(dirty));
		assert_int_equal(sx_trans_alloc(mp, 2 * sx_trans_buf_bytes(mp), 0, &tp), 0);
		assert_int_equal(sx_trans_read_buf(tp, b, &sxt_tblock_ops, 0, &bp), 0);
		base = tp->t_bytes;	/* the transaction's own ops */
		for (k = 0; k < 1 + round % 9; k++) {
			u32 first = (u32)(sxt_rand(&rs) % bsize);
			u32 len = 1 + (u32)(sxt_rand(&rs) % (round % 3 ? 300 : bsize / 3));
			u32 last = first + len - 1 < bsize ? first + len - 1 : bsize - 1;
			u32 i, chunks = 0, runs = 0, want;

			assert_int_equal(sx_trans_log_buf(tp, bp, first, last), 0);
			for (i = first / SX_BUF_CHUNK; i <= last / SX_BUF_CHUNK; i++)
				dirty[i] = true;
			for (i = 0; i < nchunks; i++) {
				chunks += dirty[i];
				runs += dirty[i] && (i == 0 || !dirty[i - 1]);
			}
			want = sx_trans_op_bytes((u32)(sizeof(struct sx_dlog_buf) +
						       runs * sizeof(struct sx_dlog_region) +
						       chunks * SX_BUF_CHUNK));
			if (want > sx_trans_buf_bytes(mp))
				want = sx_trans_buf_bytes(mp);
			assert_int_equal(tp->t_bytes - base, want);
		}
		sx_trans_cancel(tp);
	}
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

static void test_log_buf_charge(void **state)
{
	log_buf_charge(512, 11);
	log_buf_charge(4096, 12);
	log_buf_charge(16384, 13);
}

/* Committed and forced changes survive a crash right after the force. */
static void test_force_then_crash(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_recovery_stats rs;
	u64 b = data0(mp), gen;

	put_tblock(mp, b, 7, 0);
	put_tblock(mp, b + 1, 8, SX_TRANS_SYNC);
	sx_shutdown(mp);
	assert_int_equal(sx_unmount(mp), -EIO);
	/* nothing was written in place */
	assert_true(disk_gen(bd, 4096, b) < 0);

	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_records, 1);
	assert_int_equal(rs.rs_bufs_replayed, 2);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 7);
	assert_int_equal(sxt_tblock_read(mp, b + 1, &gen), 0);
	assert_int_equal(gen, 8);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(disk_gen(bd, 4096, b), 7);
	sx_bdev_destroy(bd);
}

/* A commit that was never forced is lost in a crash, and nothing else is. */
static void test_unforced_lost(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	u64 b = data0(mp), gen;

	put_tblock(mp, b, 1, SX_TRANS_SYNC);
	put_tblock(mp, b, 2, 0);
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 1);
	sx_unmount(mp);
	sx_bdev_destroy(bd);
}

/* Cancel puts a buffer's contents back; a cancelled init is forgotten. */
static void test_cancel_restores(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 b = data0(mp), gen;

	put_tblock(mp, b, 3, SX_TRANS_SYNC);
	assert_int_equal(sx_trans_alloc(mp, 2 * sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sxt_tblock_update(tp, b, 4), 0);
	assert_int_equal(sxt_tblock_write(tp, b + 5, 9), 0);
	sx_trans_cancel(tp);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 3);
	/* the cancelled init must not linger in the cache */
	assert_int_not_equal(sxt_tblock_read(mp, b + 5, &gen), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(disk_gen(bd, 4096, b), 3);
	assert_true(disk_gen(bd, 4096, b + 5) < 0);
	sx_bdev_destroy(bd);
}

/*
 * A buffer holds its before-image (the copy a cancel restores) only while it
 * is joined to a transaction: a cached buffer holds none, and the next join
 * of any buffer takes the memory the last transaction gave back.
 */
static void test_orig_only_joined(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sx_buf *bp;
	u64 b = data0(mp), gen;
	void *orig;

	put_tblock(mp, b, 1, 0);
	put_tblock(mp, b + 1, 1, 0);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_trans_read_buf(tp, b, &sxt_tblock_ops, 0, &bp), 0);
	orig = bp->b_orig;
	assert_non_null(orig);
	assert_int_equal(sxt_tblock_update(tp, b, 2), 0);
	assert_int_equal(sx_trans_commit(tp), 0);

	/* cached, out of any transaction: no before-image */
	assert_int_equal(sx_buf_read(mp, b, &sxt_tblock_ops, 0, &bp), 0);
	assert_null(bp->b_orig);
	sx_buf_relse(bp);

	/* another block's join reuses it; a cancel still restores from it */
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_trans_read_buf(tp, b + 1, &sxt_tblock_ops, 0, &bp), 0);
	assert_ptr_equal(bp->b_orig, orig);
	assert_int_equal(sxt_tblock_update(tp, b + 1, 7), 0);
	sx_trans_cancel(tp);
	assert_int_equal(sxt_tblock_read(mp, b + 1, &gen), 0);
	assert_int_equal(gen, 1);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 2);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Rolling keeps a held buffer locked and joined; all steps are committed. */
static void test_roll(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sx_buf *bp;
	u64 b = data0(mp), gen;
	int i;

	put_tblock(mp, b, 0, 0);
	assert_int_equal(sx_trans_alloc(mp, 2 * sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_trans_read_buf(tp, b, &sxt_tblock_ops, 0, &bp), 0);
	for (i = 1; i <= 20; i++) {
		assert_int_equal(sxt_tblock_update(tp, b, i), 0);
		assert_int_equal(sxt_tblock_write(tp, b + i, i), 0);
		sx_trans_bhold(tp, bp);
		assert_int_equal(sx_trans_roll(&tp), 0);
		assert_ptr_equal(bp->b_trans, tp);
	}
	sx_trans_bhold_release(tp, bp);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 20);
	for (i = 1; i <= 20; i++) {
		assert_int_equal(sxt_tblock_read(mp, b + i, &gen), 0);
		assert_int_equal(gen, i);
	}
	sx_unmount(mp);
	sx_bdev_destroy(bd);
}

/* Logging more than was reserved fails cleanly; too large a reservation too. */
static void test_reservation_limits(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 b = data0(mp), gen;

	assert_int_equal(sx_trans_alloc(mp, sx_log_max_trans_bytes(mp) + 1, 0, &tp), -EINVAL);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, b, 1), 0);
	assert_int_equal(sxt_tblock_write(tp, b + 1, 1), -ENOSPC);
	sx_trans_cancel(tp);
	assert_int_not_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Many passes over a small log: every change is replayed or written back. */
static void test_wraparound(void **state)
{
	struct sx_bdev *bd = sxt_memfs(4 * MIB, 512, 512);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_log_stats ls;
	u64 b = data0(mp), gen, seed = 42;
	u64 gens[64] = { 0 };
	int i, round;

	for (i = 0; i < 64; i++)
		put_tblock(mp, b + i, 0, 0);
	for (round = 0; round < 6; round++) {
		for (i = 0; i < 2000; i++) {
			u32 k = sxt_rand(&seed) % 64;
			struct sx_trans *tp;

			assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
			assert_int_equal(sxt_tblock_update(tp, b + k, ++gens[k]), 0);
			assert_int_equal(sx_trans_commit(tp), 0);
			if (i % 7 == 0)
				assert_int_equal(sx_sync(mp), 0);
		}
		assert_int_equal(sx_sync(mp), 0);
		/* crash after the log went round: recovery must find the head */
		sx_shutdown(mp);
		sx_unmount(mp);
		mp = sxt_mount(bd);
		for (i = 0; i < 64; i++) {
			assert_int_equal(sxt_tblock_read(mp, b + i, &gen), 0);
			assert_int_equal(gen, gens[i]);
		}
	}
	sx_log_get_stats(mp, &ls);
	assert_int_equal(sx_unmount(mp), 0);
	/* wraps are counted per mount; count them over a fresh run instead */
	mp = sxt_mount(bd);
	for (i = 0; i < 20000; i++) {
		struct sx_trans *tp;
		u32 k = i % 64;

		assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
		assert_int_equal(sxt_tblock_update(tp, b + k, ++gens[k]), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
		if (i % 3 == 0)
			assert_int_equal(sx_sync(mp), 0);
	}
	sx_log_get_stats(mp, &ls);
	assert_true(ls.ls_wraps >= 20);
	assert_int_equal(sx_unmount(mp), 0);
	mp = sxt_mount(bd);
	for (i = 0; i < 64; i++) {
		assert_int_equal(sxt_tblock_read(mp, b + i, &gen), 0);
		assert_int_equal(gen, gens[i]);
	}
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* A binval'd block's older changes are never replayed over its new contents. */
static void test_cancel_record(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sx_buf *bp;
	u64 b = data0(mp);
	u8 *junk = malloc(4096);

	put_tblock(mp, b, 5, SX_TRANS_SYNC);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sx_trans_read_buf(tp, b, &sxt_tblock_ops, 0, &bp), 0);
	assert_int_equal(sx_trans_binval(tp, bp), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	/* the block is reused as data behind the log's back */
	memset(junk, 0xa5, 4096);
	sxt_bdev_poke(bd, b * 4096, junk, 4096);
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	sx_unmount(mp);
	sxt_bdev_peek(bd, b * 4096, junk, 4096);
	assert_int_equal(junk[100], 0xa5);
	assert_int_equal(junk[4095], 0xa5);
	free(junk);
	sx_bdev_destroy(bd);
}

/*
 * Transactions commit in another order than they started (threads do):
 * the later one's id is below the last one queued, so the log gives it a
 * new one, and recovery, which refuses a record whose ids go backwards,
 * replays both from their one record.
 */
static void test_commit_out_of_order(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *t1, *t2;
	struct sx_log_stats l0, l1;
	u64 b = data0(mp), gen;

	put_tblock(mp, b, 1, 0);
	put_tblock(mp, b + 1, 1, SX_TRANS_SYNC);
	sx_log_get_stats(mp, &l0);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &t1), 0);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &t2), 0);
	assert_true(t1->t_tid < t2->t_tid);
	assert_int_equal(sxt_tblock_update(t2, b + 1, 2), 0);
	assert_int_equal(sxt_tblock_update(t1, b, 2), 0);
	assert_int_equal(sx_trans_commit(t2), 0);
	assert_int_equal(sx_trans_commit(t1), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_log_get_stats(mp, &l1);
	assert_int_equal(l1.ls_records - l0.ls_records, 1);
	assert_int_equal(l1.ls_forces - l0.ls_forces, 1);
	/* the power goes: only the log has them */
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 2);
	assert_int_equal(sxt_tblock_read(mp, b + 1, &gen), 0);
	assert_int_equal(gen, 2);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A block torn while being written in place has a bad CRC: recovery must
 * apply every logged change to it, not trust its LSN.
 */
static void test_torn_writeback(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_bdev *snap;
	struct sx_trans *tp;
	u64 b = data0(mp), gen;
	u8 *newimg = malloc(4096);

	put_tblock(mp, b, 1, 0);
	assert_int_equal(sx_checkpoint(mp), 0);		/* gen 1 in place, tail moved */
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_tblock_update(tp, b, 2), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	snap = sxt_bdev_copy(bd);			/* log has gen 2, disk gen 1 */
	assert_int_equal(sx_checkpoint(mp), 0);		/* gen 2 in place */
	sxt_bdev_peek(bd, b * 4096, newimg, 4096);
	sx_unmount(mp);
	/* torn: the first sector (header, new LSN) of gen 2, the rest of gen 1 */
	sxt_bdev_poke(snap, b * 4096, newimg, 512);
	assert_true(disk_gen(snap, 4096, b) < 0);
	mp = sxt_mount(snap);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 2);
	sx_unmount(mp);
	free(newimg);
	sx_bdev_destroy(snap);
	sx_bdev_destroy(bd);
}

/* A torn record ends the log: the record before it replays, it does not. */
static void test_torn_record_ends_log(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_recovery_stats rs;
	u64 b = data0(mp), gen, head, off;
	u8 byte;

	put_tblock(mp, b, 1, SX_TRANS_SYNC);
	head = sx_log_head(mp);
	off = (mp->m_sb.sb_logstart + SX_LSN_BLOCK(head)) * 4096ull + 3000;
	put_tblock(mp, b, 2, SX_TRANS_SYNC);
	put_tblock(mp, b, 3, SX_TRANS_SYNC);
	sx_shutdown(mp);
	sx_unmount(mp);
	/* damage a byte in the second record's body */
	sxt_bdev_peek(bd, off, &byte, 1);
	byte ^= 0x40;
	sxt_bdev_poke(bd, off, &byte, 1);
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_records, 1);
	assert_int_equal(rs.rs_stop_reason, SX_LOG_STOP_CRC);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 1);
	/* the log continues from the torn record's place; new work survives */
	put_tblock(mp, b, 4, SX_TRANS_SYNC);
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 4);
	sx_unmount(mp);
	sx_bdev_destroy(bd);
}

/* Every field of a record header is checked. */
static void test_record_header_fields(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_dlog_rec good, bad;
	u64 b = data0(mp), lsn = sx_log_head(mp);
	u8 uuid[16];
	u32 logblocks = mp->m_sb.sb_logblocks;
	u64 logoff = mp->m_sb.sb_logstart * 4096;
	const char *why;
	size_t off;

	memcpy(uuid, mp->m_sb.sb_uuid, 16);
	put_tblock(mp, b, 1, SX_TRANS_SYNC);
	sx_shutdown(mp);
	sx_unmount(mp);
	sxt_bdev_peek(bd, logoff + SX_LSN_BLOCK(lsn) * 4096ull, &good, sizeof(good));
	assert_int_equal(sx_log_rec_check_header(&good, uuid, lsn, logblocks, 4096, &why), 0);
	/* flip each byte outside the CRC field: the header check or the CRC catches it */
	for (off = 0; off < sizeof(good); off++) {
		int hdr_err;

		if (off >= offsetof(struct sx_dlog_rec, lr_crc) &&
		    off < offsetof(struct sx_dlog_rec, lr_crc) + 4)
			continue;
		bad = good;
		((u8 *)&bad)[off] ^= 0x01;
		hdr_err = sx_log_rec_check_header(&bad, uuid, lsn, logblocks, 4096, &why);
		if (off >= offsetof(struct sx_dlog_rec, lr_prev_crc) &&
		    off < offsetof(struct sx_dlog_rec, lr_prev_crc) + 4) {
			/* the chain check of the scan catches this one */
			continue;
		}
		/*
		 * A force LSN moved back stays between the tail and the record
		 * (the scan's force check or the CRC catches it); moved
		 * forward it is past the record.
		 */
		if (off >= offsetof(struct sx_dlog_rec, lr_force_lsn)) {
			size_t k = off - offsetof(struct sx_dlog_rec, lr_force_lsn);

			if (((u8 *)&bad.lr_force_lsn)[k] > ((u8 *)&good.lr_force_lsn)[k])
				assert_int_equal(hdr_err, -EFSCORRUPTED);
		}
		/* the positional fields are checked by the header check itself */
		if (off < offsetof(struct sx_dlog_rec, lr_crc) ||
		    (off >= offsetof(struct sx_dlog_rec, lr_lsn) &&
		     off < offsetof(struct sx_dlog_rec, lr_tail_lsn)) ||
		    (off >= offsetof(struct sx_dlog_rec, lr_cycle) &&
		     off < offsetof(struct sx_dlog_rec, lr_cycle) + 4) ||
		    (off >= offsetof(struct sx_dlog_rec, lr_uuid) &&
		     off < offsetof(struct sx_dlog_rec, lr_force_lsn)))
			assert_int_equal(hdr_err, -EFSCORRUPTED);
		/* whatever the header check says, the record as a whole must be refused */
		sxt_bdev_poke(bd, logoff + SX_LSN_BLOCK(lsn) * 4096ull, &bad, sizeof(bad));
		mp = sxt_mount(bd);
		{
			struct sx_recovery_stats rs;

			sx_get_recovery_stats(mp, &rs);
			assert_int_equal(rs.rs_records, 0);
		}
		sx_shutdown(mp);
		sx_unmount(mp);
		sxt_bdev_poke(bd, logoff + SX_LSN_BLOCK(lsn) * 4096ull, &good, sizeof(good));
	}
	sx_bdev_destroy(bd);
}

/* An intent whose done item is durable is not recovered. */
static void test_intent_done_pairs(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sx_recovery_stats rs;
	u64 b = data0(mp), id, gen;

	sxt_nrecovered = 0;
	assert_int_equal(sx_trans_alloc(mp, 1024, 0, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, b, 11, &id), 0);
	assert_int_equal(sx_trans_roll(&tp), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp) + 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_finish_test_intent(tp, id, b, 11), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_log_outstanding_intents(mp), 0);
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_intents, 0);
	assert_int_equal(sxt_nrecovered, 0);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 11);
	sx_unmount(mp);
	sx_bdev_destroy(bd);
}

/*
 * Unfinished intents are finished by recovery, in log order; the tail does
 * not pass them before; recovering again does nothing and changes nothing.
 */
static void test_intent_recovery(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0), *once;
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_recovery_stats rs;
	struct sx_trans *tp;
	u64 b = data0(mp), ids[3], gen, lsn0;
	int i;

	sxt_nrecovered = 0;
	lsn0 = sx_log_head(mp);
	for (i = 0; i < 3; i++) {
		assert_int_equal(sx_trans_alloc(mp, 1024, SX_TRANS_SYNC, &tp), 0);
		assert_int_equal(sxt_log_test_intent(tp, b + 10 - i, 100 + i, &ids[i]), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	assert_int_equal(sx_log_outstanding_intents(mp), 3);
	/* a checkpoint may not move the tail past the first intent */
	assert_int_equal(sx_checkpoint(mp), 0);
	assert_true(sx_log_tail(mp) <= lsn0);
	sx_shutdown(mp);
	sx_unmount(mp);

	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_intents, 3);
	assert_int_equal(sxt_nrecovered, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(sxt_recovered_ids[i], ids[i]);
		assert_int_equal(sxt_tblock_read(mp, b + 10 - i, &gen), 0);
		assert_int_equal(gen, 100 + i);
	}
	assert_int_equal(sx_log_outstanding_intents(mp), 0);
	assert_int_equal(sx_log_tail(mp), sx_log_head(mp));
	assert_int_equal(sx_unmount(mp), 0);

	/* a second mount has nothing to do and writes nothing */
	once = sxt_bdev_copy(bd);
	sxt_nrecovered = 0;
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_records, 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxt_nrecovered, 0);
	assert_true(sxt_bdev_equal(bd, once));
	sx_bdev_destroy(once);
	sx_bdev_destroy(bd);
}

/*
 * A mount that fails after replay found unfinished intents, before it
 * gets to finish them (here the first bitmap read after replay fails),
 * frees what replay kept for it; the next mount finishes them.  The fault
 * loop found the leak (recovery of a cut swap, update or punch with a read
 * or an allocation failing while the mount set up the bitmap, the fsinfo
 * block or the inode cache): one record per intent, each failed mount.
 */
static void test_failed_mount_after_replay(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_alloc_stats a0, a1;
	struct sx_recovery_stats rs;
	struct sx_trans *tp;
	u64 b = data0(mp), id, gen;
	int i;

	for (i = 0; i < 2; i++) {
		assert_int_equal(sx_trans_alloc(mp, 1024, SX_TRANS_SYNC, &tp), 0);
		assert_int_equal(sxt_log_test_intent(tp, b + i, 50 + i, &id), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	sx_shutdown(mp);
	sx_unmount(mp);

	sx_rcu_barrier();
	sx_alloc_get_stats(&a0);
	assert_int_equal(sx_fault_arm("buf_read", 1, false, -EIO), 0);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EIO);
	sx_fault_disarm_all();
	sx_rcu_barrier();
	sx_alloc_get_stats(&a1);
	assert_int_equal(a1.as_live, a0.as_live);

	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_intents, 2);
	for (i = 0; i < 2; i++) {
		assert_int_equal(sxt_tblock_read(mp, b + i, &gen), 0);
		assert_int_equal(gen, 50 + i);
	}
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* An intent that fails validation stops the mount and leaves the log alone. */
static void test_intent_validation(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0), *before;
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 b = data0(mp), id, gen;

	assert_int_equal(sx_trans_alloc(mp, 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, b, 5, &id), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_shutdown(mp);
	sx_unmount(mp);
	sxt_fail_validate = true;
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	sxt_fail_validate = false;
	before = sxt_bdev_copy(bd);
	/* the log was not marked clean: a good engine still finishes it */
	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 5);
	sx_unmount(mp);
	sx_bdev_destroy(before);
	sx_bdev_destroy(bd);
}

/* A read-only mount of a dirty log is refused unless told not to recover. */
static void test_rdonly_dirty(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_mount_opts ro = { .mo_flags = SX_MOUNT_RDONLY };
	struct sx_mount_opts norec = { .mo_flags = SX_MOUNT_RDONLY | SX_MOUNT_NORECOVERY };
	struct sx_info in;

	put_tblock(mp, data0(mp), 1, SX_TRANS_SYNC);
	sx_shutdown(mp);
	sx_unmount(mp);
	assert_int_equal(sx_mount(bd, &ro, &mp), -EROFS);
	assert_int_equal(sx_mount(bd, &norec, &mp), 0);
	assert_int_equal(sx_get_info(mp, &in), 0);
	assert_true(in.in_log_head != in.in_log_tail);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A transaction refuses an item of no registered type, one too short for
 * the intent header, one that overruns its reservation, and a logged range
 * that is backwards or past the block; it stays usable after each.
 */
static void test_log_item_refusals(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_dlog_intent li = { .li_id = cpu_to_le64(1), .li_nitems = cpu_to_le32(1) };
	static u8 big[16384];
	struct sx_trans *tp;
	struct sx_buf *bp;
	u64 b = data0(mp), gen;

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp) + 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sx_trans_log_item(tp, 0x6f, &li, sizeof(li)), -EINVAL);
	assert_int_equal(sx_trans_log_item(tp, SX_LOG_OP_BUF, &li, sizeof(li)), -EINVAL);
	assert_int_equal(sx_trans_log_item(tp, SX_LOG_OP_TEST_INTENT, &li, 8), -EINVAL);
	memcpy(big, &li, sizeof(li));
	assert_int_equal(sx_trans_log_item(tp, SX_LOG_OP_TEST_DONE, big, sizeof(big)), -ENOSPC);
	assert_int_equal(sxt_tblock_write(tp, b, 3), 0);
	assert_int_equal(sx_trans_read_buf(tp, b, &sxt_tblock_ops, 0, &bp), 0);
	assert_int_equal(sx_trans_log_buf(tp, bp, 100, 99), -EINVAL);
	assert_int_equal(sx_trans_log_buf(tp, bp, 0, 4096), -EINVAL);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 3);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * An intent that is never finished pins the log's tail: once the rest of
 * the log is used, a reservation that no checkpoint can make room for
 * fails with ENOSPC instead of waiting forever, the mount stays up, and
 * what was committed before reads back.  (Recovering this log needs more
 * space than it has: see "Coverage" in README.md.)
 */
static void test_log_full_pinned(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 64);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 b = data0(mp), id, gen, last[4] = { 0 };
	int error = 0, i;

	assert_int_equal(sx_trans_alloc(mp, 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, b, 7, &id), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	for (i = 1; i < 1000; i++) {
		/* each its own record, so that records fill the log */
		error = sx_trans_alloc(mp, sx_trans_buf_bytes(mp), SX_TRANS_SYNC, &tp);
		if (error)
			break;
		assert_int_equal(sxt_tblock_write(tp, b + 1 + i % 4, i), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
		last[i % 4] = i;
	}
	assert_int_equal(error, -ENOSPC);
	assert_true(i > 4);
	assert_false(sx_is_shutdown(mp));
	assert_int_equal(sx_log_outstanding_intents(mp), 1);
	for (i = 0; i < 4; i++) {
		assert_int_equal(sxt_tblock_read(mp, b + 1 + i, &gen), 0);
		assert_int_equal(gen, last[i]);
	}
	sx_shutdown(mp);
	sx_unmount(mp);
	sx_bdev_destroy(bd);
}

/* The buffer cache stays within its bound while dirtying many blocks. */
static void test_bcache_bound(void **state)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, 4096, 0);
	struct sx_mount_opts mo = { .mo_bcache_max = 64 };
	struct sx_bcache_stats st;
	struct sx_mount *mp;
	u64 b, gen;
	int i;

	assert_int_equal(sx_mount(bd, &mo, &mp), 0);
	b = data0(mp);
	for (i = 0; i < 1000; i++) {
		put_tblock(mp, b + i, i, 0);
		sx_bcache_get_stats(mp, &st);
		assert_true(st.bs_cached <= 64 + 2);
	}
	assert_int_equal(sx_unmount(mp), 0);
	/* a bound below 64 buffers is taken as 64 (sx_bcache_init()) */
	mo.mo_bcache_max = 4;
	assert_int_equal(sx_mount(bd, &mo, &mp), 0);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(sxt_tblock_read(mp, b + i, &gen), 0);
		assert_int_equal(gen, i);
		sx_bcache_get_stats(mp, &st);
		assert_true(st.bs_cached <= 64 + 2);
	}
	assert_true(st.bs_cached > 4);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * The default cache holds 4,096 buffers, or 16 MiB of blocks where that
 * is more: 16,384 blocks of 1 KiB, 4,096 of 8 KiB (not 2,048).
 */
static void test_bcache_default(void **state)
{
	static const struct {
		u32	bs;
		u32	max;
	} geo[] = { { 1024, 16384 }, { 8192, 4096 } };
	struct sx_bcache_stats st;
	u32 g, i, n;

	for (g = 0; g < 2; g++) {
		struct sx_bdev *bd = sxt_memfs(128 * MIB, geo[g].bs, 0);
		struct sx_mount *mp = sxt_mount(bd);
		u64 b = data0(mp), gen;

		n = geo[g].max + 2000;
		for (i = 0; i < n; i++)
			put_tblock(mp, b + i, i, 0);
		assert_int_equal(sx_unmount(mp), 0);
		mp = sxt_mount(bd);
		for (i = 0; i < n; i++) {
			assert_int_equal(sxt_tblock_read(mp, b + i, &gen), 0);
			assert_int_equal(gen, i);
		}
		sx_bcache_get_stats(mp, &st);
		assert_in_range(st.bs_cached, geo[g].max - 2, geo[g].max + 2);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(bd);
	}
}

/*
 * Under cache pressure a commit checkpoints after it queued its
 * transaction.  Each allocation of such a commit fails in turn: an error
 * with the mount still up must mean the change did not happen.  The
 * writeback's list could not be had for memory, and the commit returned
 * that -ENOMEM with its change made.
 */
static void test_commit_under_pressure(void **state)
{
	struct sx_mount_opts mo = { .mo_bcache_max = 64 };
	struct sx_alloc_stats a0, a1;
	struct sx_bdev *bd;
	struct sx_mount *mp;
	struct sx_trans *tp;
	bool hit = true;
	u64 b, gen, n;
	int error, i;

	for (n = 1; hit; n++) {
		bd = sxt_memfs(16 * MIB, 4096, 0);
		assert_int_equal(sx_mount(bd, &mo, &mp), 0);
		b = data0(mp);
		/* the block to change, clean; then 48 dirty: one more is pressure */
		put_tblock(mp, b + 48, 1, 0);
		assert_int_equal(sx_checkpoint(mp), 0);
		for (i = 0; i < 48; i++)
			put_tblock(mp, b + i, 1, 0);
		assert_int_equal(sx_log_force(mp), 0);
		assert_false(sx_bcache_pressure(mp));
		sx_alloc_get_stats(&a0);
		sx_alloc_fail(n, false);
		error = sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp);
		if (!error) {
			error = sxt_tblock_update(tp, b + 48, 7);
			if (!error)
				error = sx_trans_commit(tp);
			else
				sx_trans_cancel(tp);
		}
		sx_alloc_fail(0, false);
		sx_alloc_get_stats(&a1);
		hit = a1.as_failed != a0.as_failed;
		assert_int_equal(sxt_tblock_read(mp, b + 48, &gen), 0);
		if (error && !sx_shutdown_state(mp, NULL, 0))
			assert_int_equal(gen, 1);
		if (!error)
			assert_int_equal(gen, 7);
		sx_unmount(mp);
		sx_bdev_destroy(bd);
	}
}

/*
 * A force whose record cannot be remembered for lack of memory (the list
 * of records between tail and head is full and cannot grow) shuts the
 * mount down with its log space accounting intact, and recovery gives
 * back every commit before it.  The fault loop found it: the record was
 * written, the space it took counted as head movement, and then counted
 * again when the failed force gave its groups back (an assertion, or a
 * wrapped l_force_blocks without SX_DEBUG).
 */
static void test_record_tracking_enomem(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_log *log = mp->m_log;
	struct sx_alloc_stats as0, as1;
	u64 b = data0(mp), gen, i;
	u32 cap;

	/* records pile up until the list is full: no checkpoint moves the tail */
	put_tblock(mp, b, 1, SX_TRANS_SYNC);
	cap = log->l_recs_cap;
	assert_true(cap > 0);
	for (i = 2; log->l_nrecs < cap; i++)
		put_tblock(mp, b, i, SX_TRANS_SYNC);
	put_tblock(mp, b + 1, 99, 0);
	/* the force's first allocation is the list's growth */
	sx_alloc_get_stats(&as0);
	sx_alloc_fail(1, false);
	assert_int_equal(sx_log_force(mp), -ENOMEM);
	sx_alloc_fail(0, false);
	sx_alloc_get_stats(&as1);
	assert_int_equal(as1.as_failed - as0.as_failed, 1);
	assert_int_equal(log->l_recs_cap, cap);
	assert_int_equal(log->l_force_blocks, 0);
	assert_int_not_equal(sx_shutdown_state(mp, NULL, 0), 0);
	assert_int_equal(sx_unmount(mp), -ENOMEM);

	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, i - 1);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* One of the threads of test_force_seq_threads(). */
struct fs_worker {
	struct sx_mount	*mp;
	u64		blkno;
	int		rounds;
	int		error;		/* first error */
	int		early;		/* returns before the log was durable far enough */
};

#define FS_THREADS	8
#define FS_ROUNDS	200

static void *fs_main(void *arg)
{
	struct fs_worker *w = arg;
	int r;

	sx_thread_enter();
	for (r = 0; r < w->rounds && !w->error; r++) {
		u64 seq;

		struct sx_trans *tp;

		/* no cmocka asserts off the main thread: errors are results here */
		w->error = sx_trans_alloc(w->mp, sx_trans_buf_bytes(w->mp), 0, &tp);
		if (w->error)
			break;
		w->error = sxt_tblock_write(tp, w->blkno, (u64)r + 1);
		if (w->error) {
			sx_trans_cancel(tp);
			break;
		}
		w->error = sx_trans_commit(tp);
		if (w->error)
			break;
		seq = sx_log_commit_seq(w->mp);
		w->error = sx_log_force_seq(w->mp, seq, false);
		if (!w->error && sx_log_durable_seq(w->mp) < seq)
			w->early++;
	}
	sx_thread_exit();
	return NULL;
}

/*
 * Threads that commit and force concurrently share forces (group commit
 * with a leader): each returns only once the log is durable up to its
 * commit, none hangs, and after a crash every block shows its last forced
 * generation.  A shutdown in the middle makes every caller that is not
 * covered yet return -EIO, and none hangs.
 */
static void test_force_seq_threads(void **state)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct fs_worker w[FS_THREADS];
	pthread_t th[FS_THREADS];
	struct sx_log_stats ls;
	u64 b = data0(mp);
	int i, pass;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < FS_THREADS; i++) {
			w[i].mp = mp;
			w[i].blkno = b + i;
			w[i].rounds = FS_ROUNDS;
			w[i].error = 0;
			w[i].early = 0;
			assert_int_equal(pthread_create(&th[i], NULL, fs_main, &w[i]), 0);
		}
		if (pass == 1)
			sx_shutdown(mp);
		for (i = 0; i < FS_THREADS; i++) {
			assert_int_equal(pthread_join(th[i], NULL), 0);
			assert_int_equal(w[i].early, 0);
			if (pass == 0)
				assert_int_equal(w[i].error, 0);
			else
				assert_true(w[i].error == 0 || w[i].error == -EIO);
		}
		if (pass == 0) {
			sx_log_get_stats(mp, &ls);
			assert_true(ls.ls_forces <= ls.ls_trans);
			/* a crash now: every block at its last generation */
			sx_shutdown(mp);
			sx_unmount(mp);
			mp = sxt_mount(bd);
			for (i = 0; i < FS_THREADS; i++) {
				u64 gen;

				assert_int_equal(sxt_tblock_read(mp, b + i, &gen), 0);
				assert_int_equal(gen, FS_ROUNDS);
			}
		}
	}
	sx_unmount(mp);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_buf_charge),
		cmocka_unit_test(test_force_then_crash),
		cmocka_unit_test(test_unforced_lost),
		cmocka_unit_test(test_cancel_restores),
		cmocka_unit_test(test_orig_only_joined),
		cmocka_unit_test(test_roll),
		cmocka_unit_test(test_reservation_limits),
		cmocka_unit_test(test_wraparound),
		cmocka_unit_test(test_cancel_record),
		cmocka_unit_test(test_commit_out_of_order),
		cmocka_unit_test(test_torn_writeback),
		cmocka_unit_test(test_torn_record_ends_log),
		cmocka_unit_test(test_record_header_fields),
		cmocka_unit_test(test_intent_done_pairs),
		cmocka_unit_test(test_intent_recovery),
		cmocka_unit_test(test_intent_validation),
		cmocka_unit_test(test_failed_mount_after_replay),
		cmocka_unit_test(test_rdonly_dirty),
		cmocka_unit_test(test_log_item_refusals),
		cmocka_unit_test(test_log_full_pinned),
		cmocka_unit_test(test_bcache_bound),
		cmocka_unit_test(test_bcache_default),
		cmocka_unit_test(test_commit_under_pressure),
		cmocka_unit_test(test_record_tracking_enomem),
		cmocka_unit_test(test_force_seq_threads),
	};

	sx_thread_enter();
	sxt_quiet();
	sxt_register_test_intent();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
