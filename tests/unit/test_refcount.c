// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Refcount tree tests.  A model holds the owner count of every block of a
 * test region (0 = free, 1 = one owner, k >= 2 = shared): after changes the
 * tree must hold exactly the records the model implies, canonical (sorted,
 * disjoint, counts >= 2, adjacent equal counts merged), and the bitmap must
 * say free exactly where the model says 0.  Cases: the split and merge
 * shapes one by one, thousands of random increases and decreases done one
 * step per transaction and whole ranges through CUI chains, lookups
 * (sx_refcount_get, sx_refcount_find_shared), persistence across unmount
 * and crash, bad ranges, records the verifier refuses, and a power cut at
 * every write of CUI and BUI chains with recovery finishing them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include "sxtest.h"
#include "btree.h"
#include "bmap.h"
#include "inode.h"
#include "defer.h"
#include "refcount.h"
#include "fsinfo.h"
#include "reflink.h"
#include "file.h"
#include "dev.h"
#include "item_refc.h"
#include "item_bmap.h"
#include <swapext/device.h>

#define MIB		(1ull << 20)
#define NB		3000		/* blocks in the test region */
#define MAXREC		(NB + 1)

static u64 seed0 = 0x2545f4914f6cdd1dull;

/* The tree's root, as the fsinfo block says. */
static void rc_root(struct sx_mount *mp, u64 *root, u32 *nlevels)
{
	struct sx_buf *bp = NULL;

	assert_int_equal(sx_fsinfo_get_refc_root(mp, NULL, &bp, root, nlevels), 0);
	if (bp)
		sx_buf_relse(bp);
}

/* A test region of NB blocks in use, each with one owner. */
struct region {
	struct sx_mount	*mp;
	u64		base;
	u32		model[NB];
};

/* Allocate the region (one contiguous run) on a fresh mount. */
static void region_init(struct region *rg, struct sx_mount *mp)
{
	struct sx_trans *tp;
	u64 bno;
	u32 k, got;

	rg->mp = mp;
	assert_int_equal(sx_trans_alloc(mp, 8 * sx_alloc_res_bytes(mp), 0, &tp), 0);
	for (k = 0; k < NB; k += got) {
		assert_int_equal(sx_alloc_extent(tp, 0, 1, NB - k, &bno, &got), 0);
		if (k == 0)
			rg->base = bno;
		assert_true(bno == rg->base + k);
	}
	assert_int_equal(sx_trans_commit(tp), 0);
	for (k = 0; k < NB; k++)
		rg->model[k] = 1;
}

/* Every record of the tree. */
static int tree_records(struct sx_mount *mp, struct sx_drefc_rec *recs, u64 *n)
{
	u64 root;
	u32 nlevels;

	rc_root(mp, &root, &nlevels);
	return sx_btree_collect(mp, NULL, &sx_refcbt_ops, 0, root, nlevels, recs, MAXREC, n);
}

/* Mark in @used (indexed from @base) every block of the subtree at @bno. */
static void tree_blocks(struct sx_mount *mp, u64 bno, u32 level, u64 base, bool *used)
{
	const struct sx_dbtree_block *blk;
	struct sx_buf *bp;
	u32 nmax = sx_btree_maxrecs(mp, &sx_refcbt_ops, false), n, i;
	u64 *ptrs;

	if (bno >= base && bno < base + NB)
		used[bno - base] = true;
	assert_int_equal(sx_buf_read(mp, bno, sx_refcbt_ops.bo_buf_ops, 0, &bp), 0);
	blk = bp->b_data;
	assert_int_equal(le16_to_cpu(blk->bt_level), level);
	n = le16_to_cpu(blk->bt_numrecs);
	ptrs = malloc(sizeof(u64) * (n + 1));
	for (i = 0; level > 0 && i < n; i++)
		ptrs[i] = le64_to_cpu(*(const __le64 *)((const u8 *)blk + sizeof(*blk) +
							(nmax + i) * sizeof(__le64)));
	sx_buf_relse(bp);
	for (i = 0; level > 0 && i < n; i++)
		tree_blocks(mp, ptrs[i], level - 1, base, used);
	free(ptrs);
}

/*
 * Check the tree and the bitmap against the model (a free block of the
 * model may hold a block of the tree itself); a message and false on the
 * first difference.
 */
static bool region_matches(struct region *rg)
{
	static struct sx_drefc_rec recs[MAXREC];
	static u32 cnt[NB];
	u64 n, i, b, prev_end = 0, prev_start = 0;
	u32 prev_count = 0;

	static bool tblk[NB];
	u64 root;
	u32 nlevels;

	if (tree_records(rg->mp, recs, &n)) {
		fprintf(stderr, "cannot collect the tree\n");
		return false;
	}
	memset(tblk, 0, sizeof(tblk));
	rc_root(rg->mp, &root, &nlevels);
	if (nlevels)
		tree_blocks(rg->mp, root, nlevels - 1, rg->base, tblk);
	memset(cnt, 0, sizeof(cnt));
	for (i = 0; i < n; i++) {
		u64 s = le64_to_cpu(recs[i].rc_startblock);
		u32 l = le32_to_cpu(recs[i].rc_blockcount), c = le32_to_cpu(recs[i].rc_refcount);

		if (c < 2 || l == 0 || s < rg->base || s + l > rg->base + NB || s < prev_end) {
			fprintf(stderr, "bad record [%llu, +%u) count %u\n",
				(unsigned long long)s, l, c);
			return false;
		}
		if (i && s == prev_end && c == prev_count &&
		    (s + l) - prev_start <= SX_BMAP_MAXLEN) {
			fprintf(stderr, "records at %llu and %llu should be one\n",
				(unsigned long long)prev_start, (unsigned long long)s);
			return false;
		}
		for (b = s; b < s + l; b++)
			cnt[b - rg->base] = c;
		prev_start = s;
		prev_end = s + l;
		prev_count = c;
	}
	for (b = 0; b < NB; b++) {
		u32 m = rg->model[b];
		bool isfree;

		if (m >= 2 ? cnt[b] != m : cnt[b] != 0) {
			fprintf(stderr, "block %llu: model %u, tree %u\n", (unsigned long long)b,
				m, cnt[b]);
			return false;
		}
		if (m == 0 && tblk[b]) {
			if (sx_alloc_is_free(rg->mp, rg->base + b, &isfree) || isfree) {
				fprintf(stderr, "tree block %llu is free\n", (unsigned long long)b);
				return false;
			}
			continue;
		}
		if (tblk[b]) {
			fprintf(stderr, "block %llu: model %u, but a tree block\n",
				(unsigned long long)b, m);
			return false;
		}
		if (sx_alloc_is_free(rg->mp, rg->base + b, &isfree) || isfree != (m == 0)) {
			fprintf(stderr, "block %llu: model %u, bitmap %s\n", (unsigned long long)b,
				m, isfree ? "free" : "in use");
			return false;
		}
	}
	return true;
}

/* Change [@s, +@l) of the region by @op, one step per transaction. */
static int region_adjust_steps(struct region *rg, u64 s, u64 l, int op)
{
	struct sx_mount *mp = rg->mp;
	u64 pos = rg->base + s, end = rg->base + s + l, done;
	struct sx_trans *tp;
	int error;

	while (pos < end) {
		error = sx_trans_alloc(mp, sx_refcount_res_bytes(mp), 0, &tp);
		if (error)
			return error;
		error = sx_refcount_adjust(tp, pos, end - pos, op, 1, &done);
		if (!error)
			error = sx_defer_finish(&tp);
		if (error) {
			sx_trans_cancel(tp);
			return error;
		}
		error = sx_trans_commit(tp);
		if (error)
			return error;
		pos += done;
	}
	return 0;
}

/* Change [@s, +@l) by @op through a CUI chain. */
static int region_adjust_later(struct region *rg, u64 s, u64 l, int op)
{
	struct sx_mount *mp = rg->mp;
	struct sx_trans *tp;
	int error;

	error = sx_trans_alloc(mp, sx_refcount_res_bytes(mp) + 4096, 0, &tp);
	if (error)
		return error;
	if (op == SX_CUI_INCREASE)
		error = sx_refcount_increase_later(tp, rg->base + s, l);
	else
		error = sx_refcount_decrease_later(tp, rg->base + s, l);
	if (!error)
		error = sx_defer_finish(&tp);
	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

/* Apply @op to the model. */
static void model_apply(struct region *rg, u64 s, u64 l, int op)
{
	u64 b;

	for (b = s; b < s + l; b++) {
		assert_true(rg->model[b] > 0);
		rg->model[b] += op == SX_CUI_INCREASE ? 1 : -1;
	}
}

/* Both ways of changing the region, with the model following. */
static void region_op(struct region *rg, u64 s, u64 l, int op, bool later)
{
	if (later)
		assert_int_equal(region_adjust_later(rg, s, l, op), 0);
	else
		assert_int_equal(region_adjust_steps(rg, s, l, op), 0);
	model_apply(rg, s, l, op);
}

/* The record list must be exactly @want (triples start, len, count; offsets from base). */
static void expect_records(struct region *rg, const u64 *want, u32 nwant)
{
	static struct sx_drefc_rec recs[MAXREC];
	u64 n, i;

	assert_int_equal(tree_records(rg->mp, recs, &n), 0);
	if (n != nwant) {
		for (i = 0; i < n; i++)
			fprintf(stderr, "  [%llu, +%u) x%u\n",
				(unsigned long long)(le64_to_cpu(recs[i].rc_startblock) - rg->base),
				le32_to_cpu(recs[i].rc_blockcount),
				le32_to_cpu(recs[i].rc_refcount));
	}
	assert_int_equal(n, nwant);
	for (i = 0; i < n; i++) {
		assert_int_equal(le64_to_cpu(recs[i].rc_startblock) - rg->base, want[3 * i]);
		assert_int_equal(le32_to_cpu(recs[i].rc_blockcount), want[3 * i + 1]);
		assert_int_equal(le32_to_cpu(recs[i].rc_refcount), want[3 * i + 2]);
	}
}

static struct region rg_static;

/* A region on a new filesystem of 1 KiB blocks. */
static struct region *new_region(struct sx_bdev **bdp, u32 bsize)
{
	struct sx_bdev *bd = sxt_memfs(64 * MIB, bsize, 4096);
	struct sx_mount *mp = sxt_mount(bd);

	memset(&rg_static, 0, sizeof(rg_static));
	region_init(&rg_static, mp);
	*bdp = bd;
	return &rg_static;
}

/* Split and merge shapes one by one, with exact record lists. */
static void test_refc_shapes(void **state)
{
	struct sx_bdev *bd;
	struct region *rg = new_region(&bd, 1024);
	u32 count;

	region_op(rg, 10, 10, SX_CUI_INCREASE, false);
	expect_records(rg, (const u64[]){ 10, 10, 2 }, 1);
	assert_int_equal(sx_refcount_get(rg->mp, rg->base + 9, &count), 0);
	assert_int_equal(count, 1);
	assert_int_equal(sx_refcount_get(rg->mp, rg->base + 15, &count), 0);
	assert_int_equal(count, 2);
	/* overlap on the right: split in three */
	region_op(rg, 15, 10, SX_CUI_INCREASE, false);
	expect_records(rg, (const u64[]){ 10, 5, 2, 15, 5, 3, 20, 5, 2 }, 3);
	/* the middle back down: all one record again */
	region_op(rg, 15, 5, SX_CUI_DECREASE, false);
	expect_records(rg, (const u64[]){ 10, 15, 2 }, 1);
	/* inside one record: three pieces */
	region_op(rg, 12, 3, SX_CUI_INCREASE, false);
	expect_records(rg, (const u64[]){ 10, 2, 2, 12, 3, 3, 15, 10, 2 }, 3);
	/* the gap next to a record of count 2 merges with it */
	region_op(rg, 25, 5, SX_CUI_INCREASE, false);
	expect_records(rg, (const u64[]){ 10, 2, 2, 12, 3, 3, 15, 15, 2 }, 3);
	region_op(rg, 5, 5, SX_CUI_INCREASE, false);
	expect_records(rg, (const u64[]){ 5, 7, 2, 12, 3, 3, 15, 15, 2 }, 3);
	/* a decrease to one owner leaves no record, and splits what it cuts */
	region_op(rg, 20, 3, SX_CUI_DECREASE, false);
	expect_records(rg, (const u64[]){ 5, 7, 2, 12, 3, 3, 15, 5, 2, 23, 7, 2 }, 4);
	/* a decrease over records and gaps: the gap's blocks are freed */
	region_op(rg, 0, 40, SX_CUI_DECREASE, false);
	expect_records(rg, (const u64[]){ 12, 3, 2 }, 1);
	assert_true(region_matches(rg));
	/* the same through the CUI chain */
	region_op(rg, 100, 50, SX_CUI_INCREASE, true);
	region_op(rg, 110, 10, SX_CUI_INCREASE, true);
	region_op(rg, 100, 50, SX_CUI_DECREASE, true);
	expect_records(rg, (const u64[]){ 12, 3, 2, 110, 10, 2 }, 2);
	assert_true(region_matches(rg));
	assert_int_equal(sx_unmount(rg->mp), 0);
	sx_bdev_destroy(bd);
}

/* sx_refcount_find_shared() against the model. */
static void check_find_shared(struct region *rg, u64 s, u64 l)
{
	u64 sbno, slen, b, ws = 0, wl = 0;

	for (b = s; b < s + l; b++) {
		if (rg->model[b] >= 2) {
			if (!wl)
				ws = b;
			wl++;
		} else if (wl) {
			break;
		}
	}
	assert_int_equal(sx_refcount_find_shared(rg->mp, NULL, rg->base + s, l, &sbno, &slen), 0);
	assert_int_equal(slen, wl);
	if (wl)
		assert_int_equal(sbno, rg->base + ws);
}

/* A random range of blocks in use starting at a random block, or false. */
static bool pick_range(struct region *rg, u64 *seed, u64 maxlen, u64 *s, u64 *l)
{
	u64 b = sxt_rand(seed) % NB, e, want = 1 + sxt_rand(seed) % maxlen;

	if (rg->model[b] == 0)
		return false;
	for (e = b; e < NB && e < b + want && rg->model[e] > 0; e++)
		;
	*s = b;
	*l = e - b;
	return true;
}

/* Random increases and decreases against the model; @later: through CUI chains. */
static void random_ops(struct region *rg, u64 *seed, u32 nops, bool later, u32 every)
{
	u32 i, done = 0;

	for (i = 0; done < nops && i < 20 * nops; i++) {
		u64 s, l, b, q;
		int op = sxt_rand(seed) % 2 ? SX_CUI_INCREASE : SX_CUI_DECREASE;

		if (!pick_range(rg, seed, i % 4 ? 8 : 300, &s, &l))
			continue;
		for (b = s; b < s + l && op == SX_CUI_INCREASE; b++)
			if (rg->model[b] >= 12)
				op = SX_CUI_DECREASE;
		region_op(rg, s, l, op, later);
		done++;
		if (every && done % every == 0)
			assert_true(region_matches(rg));
		q = sxt_rand(seed) % NB;
		check_find_shared(rg, q, 1 + sxt_rand(seed) % (NB - q));
		{
			u32 count;

			q = sxt_rand(seed) % NB;
			assert_int_equal(sx_refcount_get(rg->mp, rg->base + q, &count), 0);
			if (rg->model[q] > 0)
				assert_int_equal(count, rg->model[q]);
		}
	}
	assert_true(region_matches(rg));
}

/* Thousands of random steps; the tree grows several levels at 512-byte blocks. */
static void test_refc_random(void **state)
{
	struct sx_bdev *bd;
	struct region *rg = new_region(&bd, 512);
	u64 seed = seed0, root;
	u32 nlevels;

	random_ops(rg, &seed, 6000, false, 50);
	rc_root(rg->mp, &root, &nlevels);
	assert_true(nlevels >= 2);
	random_ops(rg, &seed, 1500, true, 50);
	assert_int_equal(sx_unmount(rg->mp), 0);
	/* and the same after a fresh mount */
	rg->mp = sxt_mount(bd);
	assert_true(region_matches(rg));
	random_ops(rg, &seed, 500, false, 100);
	assert_int_equal(sx_unmount(rg->mp), 0);
	sx_bdev_destroy(bd);
}

/* Everything back to one owner, then to none: an empty tree, a free region. */
static void test_refc_drain(void **state)
{
	struct sx_bdev *bd;
	struct region *rg = new_region(&bd, 1024);
	u64 seed = seed0 ^ 77, b, root;
	u32 nlevels;

	random_ops(rg, &seed, 1000, false, 0);
	for (b = 0; b < NB; b++) {
		while (rg->model[b] > 1)
			region_op(rg, b, 1, SX_CUI_DECREASE, false);
	}
	rc_root(rg->mp, &root, &nlevels);
	assert_int_equal(root, 0);
	assert_int_equal(nlevels, 0);
	for (b = 0; b < NB; b++)
		if (rg->model[b])
			region_op(rg, b, 1, SX_CUI_DECREASE, b % 2);
	assert_true(region_matches(rg));
	assert_int_equal(sx_unmount(rg->mp), 0);
	sx_bdev_destroy(bd);
}

/* Ranges off the data area, unknown ops and free blocks are refused. */
static void test_refc_bad_ranges(void **state)
{
	struct sx_bdev *bd;
	struct region *rg = new_region(&bd, 1024);
	struct sx_mount *mp = rg->mp;
	struct sx_trans *tp;
	u64 done;

	sxt_quiet();
	assert_int_equal(sx_trans_alloc(mp, sx_refcount_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_refcount_adjust(tp, 0, 1, SX_CUI_INCREASE, 1, &done),
			 -EFSCORRUPTED);
	assert_int_equal(sx_refcount_adjust(tp, mp->m_sb.sb_dblocks - 1, 2, SX_CUI_INCREASE, 1,
					    &done), -EFSCORRUPTED);
	assert_int_equal(sx_refcount_adjust(tp, rg->base, 0, SX_CUI_INCREASE, 1, &done),
			 -EFSCORRUPTED);
	assert_int_equal(sx_refcount_adjust(tp, rg->base, 1, 7, 1, &done), -EINVAL);
	sx_trans_cancel(tp);
	/* a block with one owner loses it (freed); losing it again is corruption */
	region_op(rg, 5, 1, SX_CUI_DECREASE, false);
	assert_int_equal(region_adjust_steps(rg, 5, 1, SX_CUI_DECREASE), -EFSCORRUPTED);
	/*
	 * found by the free in the decrease's own transaction, before
	 * anything of it was committed: the transaction is cancelled, and the
	 * record it would have changed is as it was
	 */
	assert_int_equal(region_adjust_steps(rg, 5, 1, SX_CUI_DECREASE), -EFSCORRUPTED);
	assert_true(region_matches(rg));
	assert_false(sx_is_shutdown(mp));
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* A record the verifier refuses stops lookups with -EFSCORRUPTED. */
static void test_refc_verifier(void **state)
{
	struct sx_bdev *bd;
	struct region *rg = new_region(&bd, 1024);
	struct sx_mount *mp;
	struct sx_drefc_rec rec;
	u64 root, off, sbno, slen;
	u32 nlevels, count, bs = 1024;

	region_op(rg, 10, 10, SX_CUI_INCREASE, false);
	rc_root(rg->mp, &root, &nlevels);
	assert_int_equal(nlevels, 1);
	assert_int_equal(sx_unmount(rg->mp), 0);

	/* the first record gets a count of 1 (and a CRC that matches) */
	off = root * bs + sizeof(struct sx_dbtree_block);
	sxt_bdev_peek(bd, off, &rec, sizeof(rec));
	assert_int_equal(le32_to_cpu(rec.rc_refcount), 2);
	rec.rc_refcount = cpu_to_le32(1);
	sxt_bdev_poke(bd, off, &rec, sizeof(rec));
	{
		u8 blk[1024];
		struct sx_dblk_hdr *h = (struct sx_dblk_hdr *)blk;

		sxt_bdev_peek(bd, root * bs, blk, bs);
		h->bh_crc = cpu_to_le32(sx_cksum_skip(blk, bs, offsetof(struct sx_dblk_hdr,
									  bh_crc)));
		sxt_bdev_poke(bd, root * bs, blk, bs);
	}
	sxt_quiet();
	mp = sxt_mount(bd);
	assert_int_equal(sx_refcount_get(mp, rg->base + 12, &count), -EFSCORRUPTED);
	assert_int_equal(sx_refcount_find_shared(mp, NULL, rg->base, 100, &sbno, &slen),
			 -EFSCORRUPTED);
	sx_unmount(mp);
	sx_bdev_destroy(bd);
}


/* ---------------------------------------------------------------- crashes */

#define CRASH_OPS	10

/* The ops of the crash workload: (start, len, op) from the seed. */
static void crash_plan(u64 seed, const struct region *start, u64 (*plan)[3])
{
	static struct region m;
	u32 i;

	m = *start;
	for (i = 0; i < CRASH_OPS; i++) {
		u64 s, l, b;
		int op = i % 3 == 2 ? SX_CUI_DECREASE : SX_CUI_INCREASE;

		while (!pick_range(&m, &seed, 400, &s, &l))
			;
		for (b = s; b < s + l && op == SX_CUI_INCREASE; b++)
			if (m.model[b] >= 12)
				op = SX_CUI_DECREASE;
		plan[i][0] = s;
		plan[i][1] = l;
		plan[i][2] = op;
		for (b = s; b < s + l; b++)
			m.model[b] += op == SX_CUI_INCREASE ? 1 : -1;
	}
}

/*
 * Power cut at every write of a workload of long CUI chains (many steps,
 * each relogged), one sync after each: recovery must finish or drop each
 * chain whole, so the tree is exactly the model before or after the op the
 * cut fell in.
 */
static void test_cui_crash(void **state)
{
	static struct region start, rg;
	static u32 models[CRASH_OPS + 1][NB];
	static const enum sx_crash_mode modes[] = { SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR };
	u64 plan[CRASH_OPS][3], seed = seed0 ^ 0xc0ffee, w, nwrites = 0;
	struct sx_bdev *bd, *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	struct region *r0 = new_region(&bd, 1024);
	u32 i, m, points = 0;

	random_ops(r0, &seed, 300, false, 0);
	start = *r0;
	assert_int_equal(sx_unmount(r0->mp), 0);
	crash_plan(seed, &start, plan);
	sxt_quiet();
	for (w = 1; nwrites == 0 || w <= nwrites; w++) {
		for (m = 0; m < 3; m++) {
			int done = 0, durable = 0, error = 0, j, match = -1;

			img = sxt_bdev_copy(bd);
			assert_int_equal(sx_crashdev_create(img, w * 3 + m, &cbd, &cd), 0);
			if (nwrites)
				sx_crashdev_cut_at_write(cd, w, modes[m]);
			rg = start;
			memcpy(models[0], start.model, sizeof(models[0]));
			rg.mp = NULL;
			error = sx_mount(cbd, NULL, &rg.mp);
			for (i = 0; !error && i < CRASH_OPS; i++) {
				error = region_adjust_later(&rg, plan[i][0], plan[i][1], (int)plan[i][2]);
				memcpy(models[i + 1], models[i], sizeof(models[0]));
				{
					u64 b;

					for (b = plan[i][0]; b < plan[i][0] + plan[i][1]; b++)
						models[i + 1][b] += plan[i][2] == SX_CUI_INCREASE ? 1 : -1;
				}
				done = i + 1;
				if (!error)
					error = sx_sync(rg.mp);
				if (!error)
					durable = i + 1;
			}
			/* a cut may fall in the unmount's writes: it must fail then */
			if (rg.mp) {
				int e2 = sx_unmount(rg.mp);

				if (!error)
					error = e2;
			}
			sx_crashdev_get_stats(cd, &st);
			sx_bdev_destroy(cbd);
			if (!nwrites) {
				/* the uncut run counts the writes */
				assert_int_equal(error, 0);
				nwrites = st.cs_writes;
				sx_bdev_destroy(img);
				break;
			}
			assert_true(error != 0);
			rg.mp = sxt_mount(img);
			for (j = durable; j <= done && match < 0; j++) {
				memcpy(rg.model, models[j], sizeof(rg.model));
				if (region_matches(&rg))
					match = j;
			}
			if (match < 0)
				fprintf(stderr, "write %llu mode %u: no state in [%d, %d]\n",
					(unsigned long long)w, m, durable, done);
			assert_true(match >= 0);
			assert_int_equal(sx_unmount(rg.mp), 0);
			sx_bdev_destroy(img);
			points++;
		}
	}
	assert_true(points >= 30);
	sx_bdev_destroy(bd);
}

/* The mapping of file block @off of @ip: its block, or 0 for a hole. */
static u64 map_at(struct sx_inode *ip, u64 off)
{
	struct sx_bmap_irec irec;
	int error;

	/* a lookup without a transaction holds the inode lock (bmap.h) */
	sx_ilock(ip, SX_ILOCK_EXCL);
	error = sx_bmap_lookup(NULL, ip, off, &irec);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	assert_int_equal(error, 0);
	if (irec.br_startblock == SX_HOLE)
		return 0;
	return irec.br_startblock + (off - irec.br_startoff);
}

/* Queue BUI/CUI work of one op on a fresh transaction and finish it. */
static int bui_op(struct sx_mount *mp, struct sx_inode *ip, int op, u64 off, u64 len, u64 bno)
{
	struct sx_bmap_irec irec = { .br_startoff = off, .br_startblock = bno,
				     .br_blockcount = (u32)len };
	struct sx_trans *tp;
	int error;

	error = sx_trans_alloc(mp, 65536, 0, &tp);
	if (error)
		return error;
	sx_ilock(ip, SX_ILOCK_EXCL);
	if (op == 0) {
		error = sx_bmap_map_later(tp, ip, &irec);
	} else if (op == 1) {
		error = sx_refcount_increase_later(tp, bno, len);
		if (!error)
			error = sx_bmap_map_later(tp, ip, &irec);
	} else {
		error = sx_bmap_unmap_later(tp, ip, off, len, 0);
	}
	if (!error)
		error = sx_defer_finish(&tp);
	if (!error)
		error = sx_trans_commit(tp);
	else
		sx_trans_cancel(tp);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	return error;
}

/*
 * BUI chains: map a region's blocks into a file, share them at a second
 * offset (CUI increase + BUI map), unmap ranges (BUI unmap, CUI decrease,
 * freeing); a power cut at every write, and after recovery the file's map
 * and the refcounts are those before or after the op the cut fell in.
 */
static void test_bui_crash(void **state)
{
	static struct region rg;
	static const enum sx_crash_mode modes[] = { SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR };
	/* op, file offset, length, region block */
	static const u64 plan[][4] = {
		{ 0, 0, 40, 0 }, { 0, 100, 20, 100 }, { 1, 200, 30, 5 }, { 1, 300, 10, 10 },
		{ 2, 10, 100, 0 }, { 2, 200, 50, 0 }, { 2, 0, 400, 0 },
	};
	enum { NPLAN = ARRAY_SIZE(plan) };
	static u32 models[NPLAN + 1][NB];
	static u64 maps[NPLAN + 1][400];
	struct sx_bdev *bd, *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	struct region *r0 = new_region(&bd, 1024);
	struct sx_inode *ip;
	u64 ino, w, nwrites = 0, b;
	u32 i, m, j, points = 0;
	int fd;

	/* the model: mapping of each file block and count of each region block */
	memcpy(models[0], r0->model, sizeof(models[0]));
	memset(maps[0], 0, sizeof(maps[0]));
	for (i = 0; i < NPLAN; i++) {
		memcpy(models[i + 1], models[i], sizeof(models[0]));
		memcpy(maps[i + 1], maps[i], sizeof(maps[0]));
		for (b = 0; b < plan[i][2]; b++) {
			u64 off = plan[i][1] + b;

			if (plan[i][0] == 2) {
				if (off < 400 && maps[i + 1][off]) {
					models[i + 1][maps[i + 1][off] - 1]--;
					maps[i + 1][off] = 0;
				}
				continue;
			}
			maps[i + 1][off] = plan[i][3] + b + 1;
			if (plan[i][0] == 1)
				models[i + 1][plan[i][3] + b]++;
		}
	}
	assert_int_equal(sx_create(r0->mp, "bui", 0644, &fd), 0);
	assert_int_equal(sx_fd_get(r0->mp, fd, &ip), 0);
	ino = ip->i_ino;
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_close(r0->mp, fd), 0);
	rg = *r0;
	assert_int_equal(sx_unmount(r0->mp), 0);
	sxt_quiet();
	for (w = 1; nwrites == 0 || w <= nwrites; w++) {
		for (m = 0; m < 3; m++) {
			int done = 0, durable = 0, error, match = -1, k;
			bool have_ip = false;

			img = sxt_bdev_copy(bd);
			assert_int_equal(sx_crashdev_create(img, w * 7 + m, &cbd, &cd), 0);
			if (nwrites)
				sx_crashdev_cut_at_write(cd, w, modes[m]);
			rg.mp = NULL;
			error = sx_mount(cbd, NULL, &rg.mp);
			if (!error)
				error = sx_iget(rg.mp, ino, 0, &ip);
			have_ip = !error;
			for (i = 0; !error && i < NPLAN; i++) {
				error = bui_op(rg.mp, ip, (int)plan[i][0], plan[i][1], plan[i][2],
					       rg.base + plan[i][3]);
				done = i + 1;
				if (!error)
					error = sx_sync(rg.mp);
				if (!error)
					durable = i + 1;
			}
			if (have_ip)
				sx_irele(ip);
			/* a cut may fall in the unmount's writes: it must fail then */
			if (rg.mp) {
				int e2 = sx_unmount(rg.mp);

				if (!error)
					error = e2;
			}
			sx_crashdev_get_stats(cd, &st);
			sx_bdev_destroy(cbd);
			if (!nwrites) {
				assert_int_equal(error, 0);
				nwrites = st.cs_writes;
				sx_bdev_destroy(img);
				break;
			}
			assert_true(error != 0);
			rg.mp = sxt_mount(img);
			assert_int_equal(sx_iget(rg.mp, ino, 0, &ip), 0);
			for (k = durable; k <= done && match < 0; k++) {
				bool same = true;

				for (j = 0; j < 400 && same; j++) {
					u64 want = maps[k][j] ? rg.base + maps[k][j] - 1 : 0;

					same = map_at(ip, j) == want;
				}
				memcpy(rg.model, models[k], sizeof(rg.model));
				if (same && region_matches(&rg))
					match = k;
			}
			if (match < 0)
				fprintf(stderr, "write %llu mode %u: no state in [%d, %d]\n",
					(unsigned long long)w, m, durable, done);
			assert_true(match >= 0);
			assert_int_equal(sx_irele(ip), 0);
			assert_int_equal(sx_unmount(rg.mp), 0);
			sx_bdev_destroy(img);
			points++;
		}
	}
	assert_true(points >= 30);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refc_shapes),
		cmocka_unit_test(test_refc_random),
		cmocka_unit_test(test_refc_drain),
		cmocka_unit_test(test_refc_bad_ranges),
		cmocka_unit_test(test_refc_verifier),
		cmocka_unit_test(test_cui_crash),
		cmocka_unit_test(test_bui_crash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
