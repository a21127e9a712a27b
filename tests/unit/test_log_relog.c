// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The log's queue (engine/log_cil.c): what it drops before a record is
 * written, what it must keep, and that recovery of the shorter record ends
 * where the longer one would have.  Each test reads the records back with
 * the log scanner, so it sees the ops that really reached the device.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include "sxtest.h"
#include "log_priv.h"	/* SX_LOG_QUEUE_MEM */
#include "log_recover.h"

#define MIB		(1ull << 20)
#define RAW_MAGIC	0x57415258u	/* "XRAW" */
#define BS		4096

/* A block type with any contents: the tests poke single bytes into it. */
static int raw_verify(struct sx_mount *mp, const void *data)
{
	return 0;
}

static const struct sx_buf_ops raw_ops = {
	.bo_name = "raw",
	.bo_magic = RAW_MAGIC,
	.bo_verify = raw_verify,
};

static u64 data0(struct sx_mount *mp)
{
	return mp->m_sb.sb_datastart + 2;
}

/* Initialise block @b (zero body) in a transaction of its own. */
static void raw_init(struct sx_mount *mp, u64 b, u32 flags)
{
	struct sx_trans *tp;
	struct sx_buf *bp;

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), flags, &tp), 0);
	assert_int_equal(sx_trans_get_buf(tp, b, &raw_ops, 0, &bp), 0);
	sx_buf_init_hdr(mp, bp, RAW_MAGIC, 0);
	memset((u8 *)bp->b_data + sizeof(struct sx_dblk_hdr), 0,
	       mp->m_bsize - sizeof(struct sx_dblk_hdr));
	assert_int_equal(sx_trans_log_buf(tp, bp, 0, mp->m_bsize - 1), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
}

/* The log bytes of a BUF op of one chunk. */
static u32 one_chunk_bytes(void)
{
	return sx_trans_op_bytes(sizeof(struct sx_dlog_buf) + sizeof(struct sx_dlog_region) +
				 SX_BUF_CHUNK);
}

/* Set byte @off of block @b to @val in a transaction reserving @res bytes. */
static void raw_set(struct sx_mount *mp, u64 b, u32 off, u8 val, u32 res, u32 flags)
{
	struct sx_trans *tp;
	struct sx_buf *bp;

	assert_int_equal(sx_trans_alloc(mp, res, flags, &tp), 0);
	assert_int_equal(sx_trans_read_buf(tp, b, &raw_ops, 0, &bp), 0);
	((u8 *)bp->b_data)[off] = val;
	assert_int_equal(sx_trans_log_buf(tp, bp, off, off), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
}

/* Byte @off of block @b through the cache. */
static u8 raw_get(struct sx_mount *mp, u64 b, u32 off)
{
	struct sx_buf *bp;
	u8 v;

	assert_int_equal(sx_buf_read(mp, b, &raw_ops, 0, &bp), 0);
	v = ((u8 *)bp->b_data)[off];
	sx_buf_relse(bp);
	return v;
}

/* What the valid log holds, from the tail. */
struct log_census {
	u32	records;
	u32	ops;
	u32	bufs;		/* BUF ops of @blkno */
	u32	cancels;	/* of @blkno */
	u32	intents;	/* TEST_INTENT ops */
	u32	dones;
	u32	ends;
	u64	blkno;
};

static int census_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	struct log_census *c = arg;
	const struct sx_dlog_buf *lb = payload;

	c->ops++;
	switch (le16_to_cpu(op->lo_type)) {
	case SX_LOG_OP_BUF:
		if (le64_to_cpu(lb->lb_blkno) != c->blkno)
			break;
		if (le32_to_cpu(lb->lb_flags) & SX_LB_CANCEL)
			c->cancels++;
		else
			c->bufs++;
		break;
	case SX_LOG_OP_TEST_INTENT:
		c->intents++;
		break;
	case SX_LOG_OP_TEST_DONE:
		c->dones++;
		break;
	case SX_LOG_OP_TRANS_END:
		c->ends++;
		break;
	}
	return 0;
}

static int census_rec(void *arg, const struct sx_log_scan_rec *r)
{
	struct log_census *c = arg;
	const char *why;

	c->records++;
	return sx_log_rec_walk_ops(r->sr_buf, r->sr_blocks * BS, census_op, c, &why);
}

/* Count the valid log of @bd (a crashed image; nothing is replayed). */
static void census(struct sx_bdev *bd, u64 blkno, struct log_census *c)
{
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_RDONLY | SX_MOUNT_NORECOVERY };
	struct sx_log_scan res;
	struct sx_mount *mp;

	memset(c, 0, sizeof(*c));
	c->blkno = blkno;
	assert_int_equal(sx_mount(bd, &mo, &mp), 0);
	assert_int_equal(sx_log_scan(mp, census_rec, c, &res), 0);
	assert_int_equal(sx_unmount(mp), 0);
}

/* Stop @mp as a power loss would (nothing more is written). */
static void crash(struct sx_mount *mp)
{
	sx_shutdown(mp);
	assert_int_equal(sx_unmount(mp), -EIO);
}

/*
 * Fifty transactions changing one byte of one block, then a sync: the
 * record holds the block once, and recovery ends at the last value.  With
 * SX_MOUNT_LOG_EACH every transaction is a record of its own.
 */
static void test_one_copy_per_record(void **state)
{
	const struct sx_mount_opts each = { .mo_flags = SX_MOUNT_LOG_EACH };
	struct log_census c;
	struct sx_log_stats st;
	int mode, i;

	for (mode = 0; mode < 2; mode++) {
		struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
		struct sx_mount *mp;
		u64 b;

		assert_int_equal(sx_mount(bd, mode ? &each : NULL, &mp), 0);
		b = data0(mp);
		raw_init(mp, b, SX_TRANS_SYNC);
		assert_int_equal(sx_checkpoint(mp), 0);
		for (i = 1; i <= 50; i++)
			raw_set(mp, b, 300, (u8)i, sx_trans_buf_bytes(mp), 0);
		assert_int_equal(sx_sync(mp), 0);
		sx_log_get_stats(mp, &st);
		crash(mp);
		census(bd, b, &c);
		if (mode == 0) {
			assert_int_equal(c.records, 1);
			assert_int_equal(c.bufs, 1);
			assert_int_equal(c.ends, 1);
			assert_int_equal(st.ls_ops_dropped, 49);
		} else {
			assert_int_equal(c.records, 50);
			assert_int_equal(c.bufs, 50);
			assert_int_equal(st.ls_ops_dropped, 0);
		}
		mp = sxt_mount(bd);
		assert_int_equal(raw_get(mp, b, 300), 50);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(bd);
	}
}

/*
 * A later transaction changing other bytes of the block widens its op to
 * the queued op's chunks when its reservation has room, so the older op
 * goes; without room both stay.  Either way both changes survive.
 */
static void test_cover_needs_room(void **state)
{
	struct log_census c;
	struct sx_log_stats st;
	int room;

	for (room = 0; room < 2; room++) {
		struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
		struct sx_mount *mp = sxt_mount(bd);
		u64 b = data0(mp);

		raw_init(mp, b, SX_TRANS_SYNC);
		assert_int_equal(sx_checkpoint(mp), 0);
		raw_set(mp, b, 1 * SX_BUF_CHUNK + 5, 0xa1, one_chunk_bytes(), 0);
		raw_set(mp, b, 9 * SX_BUF_CHUNK + 5, 0xb2,
			room ? 2 * one_chunk_bytes() : one_chunk_bytes(), SX_TRANS_SYNC);
		sx_log_get_stats(mp, &st);
		crash(mp);
		census(bd, b, &c);
		assert_int_equal(c.records, 1);
		assert_int_equal(c.bufs, room ? 1 : 2);
		assert_int_equal(st.ls_ops_dropped, room ? 1 : 0);
		mp = sxt_mount(bd);
		assert_int_equal(raw_get(mp, b, 1 * SX_BUF_CHUNK + 5), 0xa1);
		assert_int_equal(raw_get(mp, b, 9 * SX_BUF_CHUNK + 5), 0xb2);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(bd);
	}
}

/*
 * An intent and its done item in one record are both dropped: nothing is
 * left to recover, the work is in the record, and the log no longer tracks
 * the intent.
 */
static void test_intent_done_whiteout(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_recovery_stats rs;
	struct sx_log_stats st;
	struct log_census c;
	struct sx_trans *tp;
	u64 b = data0(mp), id, gen;

	sxt_nrecovered = 0;
	assert_int_equal(sx_trans_alloc(mp, 1024, 0, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, b, 21, &id), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_log_outstanding_intents(mp), 1);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp) + 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_finish_test_intent(tp, id, b, 21), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_log_outstanding_intents(mp), 0);
	sx_log_get_stats(mp, &st);
	assert_int_equal(st.ls_whiteouts, 1);
	crash(mp);
	census(bd, b, &c);
	assert_int_equal(c.records, 1);
	assert_int_equal(c.intents, 0);
	assert_int_equal(c.dones, 0);
	/* the intent's transaction had nothing else: it is gone whole */
	assert_int_equal(c.ends, 1);
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_intents, 0);
	assert_int_equal(sxt_nrecovered, 0);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 21);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * An intent already in a record is never dropped by its done item in a
 * later one, and one left unfinished by a crash is recovered.
 */
static void test_intent_across_records(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_recovery_stats rs;
	struct sx_log_stats st;
	struct log_census c;
	struct sx_trans *tp;
	u64 b = data0(mp), id[2], gen;

	sxt_nrecovered = 0;
	assert_int_equal(sx_trans_alloc(mp, 2048, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, b, 31, &id[0]), 0);
	assert_int_equal(sxt_log_test_intent(tp, b + 1, 32, &id[1]), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp) + 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_finish_test_intent(tp, id[0], b, 31), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_log_get_stats(mp, &st);
	assert_int_equal(st.ls_whiteouts, 0);
	assert_int_equal(sx_log_outstanding_intents(mp), 1);
	crash(mp);
	census(bd, b, &c);
	assert_int_equal(c.records, 2);
	assert_int_equal(c.intents, 2);
	assert_int_equal(c.dones, 1);
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_intents, 1);
	assert_int_equal(sxt_nrecovered, 1);
	assert_int_equal(sxt_recovered_ids[0], id[1]);
	assert_int_equal(sxt_tblock_read(mp, b + 1, &gen), 0);
	assert_int_equal(gen, 32);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A cancel is never dropped and drops nothing: a block logged, freed and
 * initialised again in one record replays to its new contents, and the
 * record still says it was cancelled in between.
 */
static void test_cancel_kept(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct log_census c;
	struct sx_trans *tp;
	struct sx_buf *bp;
	u64 b = data0(mp), gen;

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, b, 41), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_trans_read_buf(tp, b, &sxt_tblock_ops, 0, &bp), 0);
	assert_int_equal(sx_trans_binval(tp, bp), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, b, 42), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	crash(mp);
	census(bd, b, &c);
	assert_int_equal(c.records, 1);
	assert_int_equal(c.cancels, 1);
	assert_int_equal(c.bufs, 2);
	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 42);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A reservation is given back at commit and the queue holds only what it
 * will write: many transactions that reserve far more than they log fit
 * in a small log without one checkpoint.
 */
static void test_reservation_returned(void **state)
{
	/* 256 log blocks: the 200 reservations below would need 800 */
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 256);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_log_stats st;
	u64 b = data0(mp);
	int i;

	raw_init(mp, b, SX_TRANS_SYNC);
	for (i = 0; i < 200; i++)
		raw_set(mp, b, 200 + i, (u8)(i + 1), 4 * BS - 64, 0);
	sx_log_get_stats(mp, &st);
	assert_int_equal(st.ls_space_waits, 0);
	assert_int_equal(st.ls_checkpoints, 0);
	assert_int_equal(sx_sync(mp), 0);
	crash(mp);
	mp = sxt_mount(bd);
	for (i = 0; i < 200; i++)
		assert_int_equal(raw_get(mp, b, 200 + i), (u8)(i + 1));
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A full queue is written without a sync (a push), so unsynced work does
 * not wait in memory without bound; what was pushed survives a crash.
 */
static void test_push_when_full(void **state)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_log_stats st;
	u64 b = data0(mp), gen;
	u32 i, n;

	/* whole new blocks cannot be dropped: they fill the queue */
	for (i = 0, n = 0; i < 2000; i++) {
		struct sx_trans *tp;

		assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
		assert_int_equal(sxt_tblock_write(tp, b + i, 1000 + i), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
		sx_log_get_stats(mp, &st);
		if (st.ls_pushes) {
			n = i + 1;
			break;
		}
	}
	assert_true(n > 1);
	assert_true(st.ls_records >= 1);
	crash(mp);
	mp = sxt_mount(bd);
	for (i = 0; i < n; i++) {
		assert_int_equal(sxt_tblock_read(mp, b + i, &gen), 0);
		assert_int_equal(gen, 1000 + i);
	}
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A long run of transactions that relog one whole block leaves the queue
 * one live block but keeps every transaction's ops in memory until the
 * force: the queue is pushed once those ops pass SX_LOG_QUEUE_MEM, so its
 * memory stays bounded, and the last value survives a crash.
 */
static void test_push_when_memory_full(void **state)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_log_stats st;
	u64 b = data0(mp);
	u32 i, n, per = 0;

	raw_init(mp, b, SX_TRANS_SYNC);
	n = 3 * SX_LOG_QUEUE_MEM / BS;
	for (i = 0; i < n; i++) {
		struct sx_trans *tp;
		struct sx_buf *bp;

		assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
		assert_int_equal(sx_trans_read_buf(tp, b, &raw_ops, 0, &bp), 0);
		((u8 *)bp->b_data)[500] = (u8)(i + 1);
		assert_int_equal(sx_trans_log_buf(tp, bp, 0, BS - 1), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	per = sx_trans_buf_bytes(mp);
	sx_log_get_stats(mp, &st);
	/* pushed for memory: the live record never came near the record limit */
	assert_true(st.ls_pushes >= 2);
	assert_true(st.ls_queue_peak > SX_LOG_QUEUE_MEM);
	assert_true(st.ls_queue_peak <= SX_LOG_QUEUE_MEM + per);
	/* nearly every op was relogged away */
	assert_true(st.ls_ops_dropped >= n - st.ls_pushes - 2);
	assert_int_equal(sx_sync(mp), 0);
	crash(mp);
	mp = sxt_mount(bd);
	assert_int_equal(raw_get(mp, b, 500), (u8)n);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_copy_per_record),
		cmocka_unit_test(test_cover_needs_room),
		cmocka_unit_test(test_intent_done_whiteout),
		cmocka_unit_test(test_intent_across_records),
		cmocka_unit_test(test_cancel_kept),
		cmocka_unit_test(test_reservation_returned),
		cmocka_unit_test(test_push_when_full),
		cmocka_unit_test(test_push_when_memory_full),
	};

	sxt_quiet();
	/* recovery verifies the blocks it rebuilds by their registered type */
	assert_int_equal(sx_buf_type_register(&raw_ops), 0);
	sxt_register_test_intent();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
