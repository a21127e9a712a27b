// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Deferred operations: chains finish every step exactly once, new work runs
 * before the item that queued it, aged intents are relogged so that long
 * chains fit in a small log, cancelling is clean, a failed chain is finished
 * by recovery; EFI/EFD frees extents of any length.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include "sxtest.h"
#include "sxdefer.h"
#include "item_efi.h"
#include "dev.h"

#define MIB		(1ull << 20)

/* Allocate @n single blocks and make each a test block at generation 0. */
static void alloc_tblocks(struct sx_mount *mp, u64 *blk, u32 n)
{
	struct sx_trans *tp;
	u32 i, len;

	for (i = 0; i < n; i++) {
		assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp) +
						sx_trans_buf_bytes(mp), 0, &tp), 0);
		assert_int_equal(sx_alloc_extent(tp, 0, 1, 1, &blk[i], &len), 0);
		assert_int_equal(sxt_tblock_write(tp, blk[i], 0), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	assert_int_equal(sx_log_force(mp), 0);
}

static u64 gen_of(struct sx_mount *mp, u64 blkno)
{
	u64 gen = ~0ull;

	assert_int_equal(sxt_tblock_read(mp, blkno, &gen), 0);
	return gen;
}

static struct sx_trans *chain_trans(struct sx_mount *mp, u32 flags)
{
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(mp, sx_defer_step_bytes(mp, &sxt_tdf_ops), flags,
					&tp), 0);
	return tp;
}

static void finish_and_commit(struct sx_trans *tp)
{
	assert_int_equal(sx_defer_finish(&tp), 0);
	assert_false(sx_defer_pending(tp));
	assert_int_equal(sx_trans_commit(tp), 0);
}

/* Every item's steps are applied once; the intents are all done. */
static void test_chain_counts(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	static const u32 steps[] = { 1, 5, 40, 3, 7, 2 };
	struct sx_defer_stats st;
	struct sx_trans *tp;
	u64 blk[6];
	u32 i, total = 0;

	sxt_tdf_reset();
	alloc_tblocks(mp, blk, 6);
	tp = chain_trans(mp, 0);
	for (i = 0; i < 6; i++) {
		assert_int_equal(sxt_tdf_add(tp, blk[i], steps[i], 0), 0);
		total += steps[i];
	}
	assert_true(sx_defer_pending(tp));
	finish_and_commit(tp);
	for (i = 0; i < 6; i++)
		assert_int_equal(gen_of(mp, blk[i]), steps[i]);
	sx_defer_get_stats(mp, &st);
	assert_int_equal(st.ds_steps, total);
	assert_int_equal(st.ds_requeues, total - 6);
	/* two first intents (4 + 2 items), then one per step that left work:
	 * every requeue, and every finished item but the last of its pending */
	assert_int_equal(st.ds_intents, 2 + (total - 6) + 4 + st.ds_relogs);
	assert_int_equal(sx_log_force(mp), 0);
	assert_int_equal(sx_log_outstanding_intents(mp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	/* nothing is left for a recovery to do */
	mp = sxt_mount(bd);
	assert_int_equal(mp->m_rstats.rs_intents, 0);
	for (i = 0; i < 6; i++)
		assert_int_equal(gen_of(mp, blk[i]), steps[i]);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* New work runs before what is left of the item that queued it. */
static void test_spawned_work_first(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 blk[3];

	sxt_tdf_reset();
	alloc_tblocks(mp, blk, 3);
	tp = chain_trans(mp, 0);
	assert_int_equal(sxt_tdf_add(tp, blk[0], 2, blk[1]), 0);
	assert_int_equal(sxt_tdf_add(tp, blk[2], 1, 0), 0);
	finish_and_commit(tp);
	assert_int_equal(sxt_tdf_ntrace, 4);
	assert_int_equal(sxt_tdf_trace[0].tt_blkno, blk[0]);
	assert_int_equal(sxt_tdf_trace[0].tt_steps, 2);
	assert_int_equal(sxt_tdf_trace[1].tt_blkno, blk[1]);
	assert_int_equal(sxt_tdf_trace[2].tt_blkno, blk[0]);
	assert_int_equal(sxt_tdf_trace[2].tt_steps, 1);
	assert_int_equal(sxt_tdf_trace[3].tt_blkno, blk[2]);
	assert_int_equal(gen_of(mp, blk[0]), 2);
	assert_int_equal(gen_of(mp, blk[1]), 1);
	assert_int_equal(gen_of(mp, blk[2]), 1);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A chain far longer than the log: without relogging, the intents waiting
 * behind the first item would pin the tail and the chain could not go on.
 */
static void test_relog_long_chain(void **state)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, 4096, 64);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_defer_stats st;
	struct sx_trans *tp;
	u64 blk[9];
	u32 i;

	sxt_tdf_reset();
	alloc_tblocks(mp, blk, 9);
	tp = chain_trans(mp, 0);
	assert_int_equal(sxt_tdf_add(tp, blk[0], 3000, 0), 0);
	for (i = 1; i < 9; i++)
		assert_int_equal(sxt_tdf_add(tp, blk[i], 2, 0), 0);
	finish_and_commit(tp);
	assert_int_equal(gen_of(mp, blk[0]), 3000);
	for (i = 1; i < 9; i++)
		assert_int_equal(gen_of(mp, blk[i]), 2);
	sx_defer_get_stats(mp, &st);
	assert_true(st.ds_relogs > 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Many items: several pendings, each full intent at most do_max_items. */
static void test_many_items(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 blk[50];
	u32 i;

	sxt_tdf_reset();
	alloc_tblocks(mp, blk, 50);
	tp = chain_trans(mp, 0);
	for (i = 0; i < 50; i++)
		assert_int_equal(sxt_tdf_add(tp, blk[i], 1 + i % 3, i % 7 ? 0 : blk[(i + 1) % 50]),
				 0);
	finish_and_commit(tp);
	for (i = 0; i < 50; i++) {
		u64 want = 1 + i % 3;

		/* children were queued on blocks i+1 for every i divisible by 7 */
		if (i > 0 && (i - 1) % 7 == 0)
			want++;
		if (i == 0 && 49 % 7 == 0)
			want++;
		assert_int_equal(gen_of(mp, blk[i]), want);
	}
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Cancelling a transaction with unlogged work drops it and nothing else. */
static void test_cancel_unlogged(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 blk[2];

	sxt_tdf_reset();
	alloc_tblocks(mp, blk, 2);
	tp = chain_trans(mp, 0);
	assert_int_equal(sxt_tdf_add(tp, blk[0], 3, 0), 0);
	assert_int_equal(sxt_tdf_add(tp, blk[1], 3, 0), 0);
	sx_trans_cancel(tp);
	assert_int_equal(sxt_tdf_cancelled, 2);
	assert_false(sx_is_shutdown(mp));
	assert_int_equal(gen_of(mp, blk[0]), 0);
	sx_trans_cancel(NULL);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Commit finishes queued work; a roll carries it to the next transaction. */
static void test_commit_and_roll(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 blk[2];

	sxt_tdf_reset();
	alloc_tblocks(mp, blk, 2);
	tp = chain_trans(mp, 0);
	assert_int_equal(sxt_tdf_add(tp, blk[0], 4, 0), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(gen_of(mp, blk[0]), 4);

	tp = chain_trans(mp, 0);
	assert_int_equal(sxt_tdf_add(tp, blk[1], 2, 0), 0);
	assert_int_equal(sx_trans_roll(&tp), 0);
	assert_true(sx_defer_pending(tp));
	finish_and_commit(tp);
	assert_int_equal(gen_of(mp, blk[1]), 2);
	assert_int_equal(sx_log_force(mp), 0);
	assert_int_equal(sx_log_outstanding_intents(mp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A step that fails after the chain's intents were committed shuts the
 * mount down; recovery finishes exactly the steps that were not done.
 */
static void test_failure_then_recovery(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 blk[3];

	sxt_tdf_reset();
	alloc_tblocks(mp, blk, 3);
	tp = chain_trans(mp, SX_TRANS_SYNC);
	assert_int_equal(sxt_tdf_add(tp, blk[0], 5, blk[2]), 0);
	assert_int_equal(sxt_tdf_add(tp, blk[1], 3, 0), 0);
	sxt_tdf_fail_countdown = 4;	/* blk0 step 1, child, blk0 step 2, then fail */
	assert_int_equal(sx_defer_finish(&tp), -EIO);
	sx_trans_cancel(tp);
	assert_true(sx_is_shutdown(mp));
	sx_unmount(mp);

	sxt_tdf_reset();
	mp = sxt_mount(bd);
	assert_true(mp->m_rstats.rs_intents >= 1);
	assert_int_equal(gen_of(mp, blk[0]), 5);
	assert_int_equal(gen_of(mp, blk[1]), 3);
	assert_int_equal(gen_of(mp, blk[2]), 1);
	/* recovery did the 3 steps left of blk0 and the 3 of blk1, no more */
	assert_int_equal(sxt_tdf_ntrace, 6);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * The N-th allocation of a chain fails, for each N until none strikes: the
 * chain either shuts the mount down (recovery then finishes it or, if its
 * first commit never reached the disk, finds nothing of it) or leaves
 * nothing of itself in memory or in the log.  The fault loop found two
 * ways to get an error with the chain's intents committed and the mount
 * running: a roll whose commit reached the log but whose next transaction
 * could not be allocated, and a step that finished its pending's last item
 * and then could not log the intent of the work it spawned.
 */
static void test_alloc_failure_each_point(void **state)
{
	struct sx_alloc_stats a0, a1;
	struct sx_bdev *bd;
	struct sx_mount *mp;
	struct sx_trans *tp;
	u64 blk[3], n, g[3];
	bool hit, shut;
	int error, i;

	for (n = 1;; n++) {
		bd = sxt_memfs(32 * MIB, 4096, 0);
		mp = sxt_mount(bd);
		sxt_tdf_reset();
		alloc_tblocks(mp, blk, 3);
		tp = chain_trans(mp, 0);
		/* three steps, then the last pending: one step that spawns a child */
		assert_int_equal(sxt_tdf_add(tp, blk[1], 3, 0), 0);
		assert_int_equal(sxt_tdf_add(tp, blk[0], 1, blk[2]), 0);
		sx_alloc_get_stats(&a0);
		sx_alloc_fail(n, false);
		error = sx_defer_finish(&tp);
		if (!error)
			error = sx_trans_commit(tp);
		else
			sx_trans_cancel(tp);
		sx_alloc_fail(0, false);
		sx_alloc_get_stats(&a1);
		hit = a1.as_failed != a0.as_failed;
		shut = sx_is_shutdown(mp);
		if (error && !shut)
			for (i = 0; i < 3; i++)
				assert_int_equal(gen_of(mp, blk[i]), 0);
		sx_unmount(mp);

		sxt_tdf_reset();
		mp = sxt_mount(bd);
		for (i = 0; i < 3; i++)
			g[i] = gen_of(mp, blk[i]);
		if (!error || (shut && g[1]))
			assert_true(g[0] == 1 && g[1] == 3 && g[2] == 1);
		else
			assert_true(g[0] == 0 && g[1] == 0 && g[2] == 0);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(bd);
		if (!hit)
			break;
	}
	assert_true(n > 10);
}

/*
 * A roll whose commit put the intents of its queued work in the log, but
 * whose next transaction cannot be had, shuts the mount down: that work
 * is promised, and only recovery may do it now.
 */
static void test_roll_alloc_failure(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 blk[1];

	sxt_tdf_reset();
	alloc_tblocks(mp, blk, 1);
	tp = chain_trans(mp, 0);
	assert_int_equal(sxt_tdf_add(tp, blk[0], 2, 0), 0);
	assert_int_equal(sx_fault_arm("trans_alloc", 1, false, -ENOMEM), 0);
	assert_int_equal(sx_trans_roll(&tp), -ENOMEM);
	sx_fault_disarm_all();
	assert_null(tp);
	assert_true(sx_is_shutdown(mp));
	sx_unmount(mp);
	mp = sxt_mount(bd);
	assert_int_equal(gen_of(mp, blk[0]), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* An intent whose work is not done is not trusted if it fails validation. */
static void test_bad_intent_refused(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd), *mp2;
	struct {
		struct sx_dlog_intent hdr;
		__le64 blkno, child;
		__le32 steps, pad;
	} bad;
	struct sx_trans *tp;

	memset(&bad, 0, sizeof(bad));
	bad.hdr.li_id = cpu_to_le64(sx_log_next_intent_id(mp));
	bad.hdr.li_nitems = cpu_to_le32(1);
	bad.blkno = cpu_to_le64(mp->m_sb.sb_dblocks + 5);	/* off the device */
	bad.steps = cpu_to_le32(1);
	assert_int_equal(sx_trans_alloc(mp, 4096, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sx_trans_log_item(tp, SX_LOG_OP_TEST_DEFER, &bad, sizeof(bad)), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_force_shutdown(mp, -EIO, "test: shut down before the roll");
	sx_unmount(mp);
	assert_int_equal(sx_mount(bd, NULL, &mp2), -EFSCORRUPTED);
	sx_bdev_destroy(bd);
}

/* EFI frees an extent longer than one step frees, across several steps. */
static void test_efi_long_extent(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 512, 0);
	struct sx_mount *mp = sxt_mount(bd);
	u32 max = sx_alloc_max_extent(mp), len;
	u64 free0 = sx_alloc_free_blocks(mp), bno[3];
	struct sx_defer_stats st0, st;
	struct sx_trans *tp;
	int i;

	/* three maximal extents, one after another from the first free block */
	for (i = 0; i < 3; i++) {
		assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
		assert_int_equal(sx_alloc_extent(tp, i ? bno[i - 1] + max : 0, max, max,
						 &bno[i], &len), 0);
		assert_int_equal(len, max);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	assert_int_equal(bno[1], bno[0] + max);
	assert_int_equal(bno[2], bno[1] + max);
	assert_int_equal(sx_alloc_free_blocks(mp), free0 - 3ull * max);
	sx_defer_get_stats(mp, &st0);

	assert_int_equal(sx_trans_alloc(mp, sx_efi_res_bytes(mp), SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sx_efi_free_later(tp, bno[0], 3ull * max), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	sx_defer_get_stats(mp, &st);
	assert_int_equal(st.ds_steps - st0.ds_steps, 3);
	assert_int_equal(st.ds_requeues - st0.ds_requeues, 2);
	assert_int_equal(sx_unmount(mp), 0);
	/* and the bitmap agrees after a remount */
	mp = sxt_mount(bd);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Ranges that are not data blocks are refused before anything is queued. */
static void test_efi_bad_ranges(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(mp, sx_efi_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_efi_free_later(tp, mp->m_sb.sb_datastart, 0), -EINVAL);
	assert_int_equal(sx_efi_free_later(tp, 0, 1), -EINVAL);
	assert_int_equal(sx_efi_free_later(tp, mp->m_sb.sb_datastart - 1, 1), -EINVAL);
	assert_int_equal(sx_efi_free_later(tp, mp->m_sb.sb_dblocks - 1, 2), -EINVAL);
	assert_int_equal(sx_efi_free_later(tp, ~0ull - 3, 8), -EINVAL);
	assert_false(sx_defer_pending(tp));
	sx_trans_cancel(tp);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* A double free found while finishing an EFI is corruption, not silence. */
static void test_efi_double_free(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 bno;
	u32 len;

	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 4, 4, &bno, &len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_trans_alloc(mp, sx_efi_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_efi_free_later(tp, bno, 4), 0);
	assert_int_equal(sx_efi_free_later(tp, bno + 2, 1), 0);
	assert_int_equal(sx_defer_finish(&tp), -EFSCORRUPTED);
	sx_trans_cancel(tp);
	assert_true(sx_is_shutdown(mp));
	sx_unmount(mp);
	sx_bdev_destroy(bd);
}

/* Registration checks its table and refuses a taken type. */
static void test_register(void **state)
{
	struct sx_defer_ops bad = sxt_tdf_ops;

	assert_int_equal(sx_defer_register(&sxt_tdf_ops), 0);	/* again: fine */
	assert_int_equal(sx_defer_register(&bad), -EEXIST);
	bad.do_finish = NULL;
	assert_int_equal(sx_defer_register(&bad), -EINVAL);
	bad = sxt_tdf_ops;
	bad.do_max_items = 0;
	assert_int_equal(sx_defer_register(&bad), -EINVAL);
	assert_int_equal(sx_defer_register(NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_chain_counts),
		cmocka_unit_test(test_spawned_work_first),
		cmocka_unit_test(test_relog_long_chain),
		cmocka_unit_test(test_many_items),
		cmocka_unit_test(test_cancel_unlogged),
		cmocka_unit_test(test_commit_and_roll),
		cmocka_unit_test(test_failure_then_recovery),
		cmocka_unit_test(test_alloc_failure_each_point),
		cmocka_unit_test(test_roll_alloc_failure),
		cmocka_unit_test(test_bad_intent_refused),
		cmocka_unit_test(test_efi_long_extent),
		cmocka_unit_test(test_efi_bad_ranges),
		cmocka_unit_test(test_efi_double_free),
	};

	sx_thread_enter();
	sxt_quiet();
	sxt_tdf_register();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
