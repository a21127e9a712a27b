/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the bitmap allocator (engine/alloc.c), through real
 * transactions on a mounted memory device: allocation policy, persistence
 * across remount, ENOSPC, double and out-of-range frees, runs crossing
 * bitmap blocks, cancel, a random workload against a model, concurrent
 * allocating threads, and the bitmap verifier field by field.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <cmocka.h>

#include "sxtest.h"
#include "sb.h"

/* ---------------------------------------------------------------- helpers */

/* A transaction with room for @n extent operations. */
static struct sx_trans *trans(struct sx_mount *mp, u32 n)
{
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(mp, n * sx_alloc_res_bytes(mp), 0, &tp), 0);
	return tp;
}

/* Allocate in a transaction of its own and commit; returns the error. */
static int alloc1(struct sx_mount *mp, u64 hint, u32 minlen, u32 maxlen, u64 *bno,
		  u32 *len)
{
	struct sx_trans *tp = trans(mp, 1);
	int error = sx_alloc_extent(tp, hint, minlen, maxlen, bno, len);

	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

/* Free in a transaction of its own and commit; returns the error. */
static int free1(struct sx_mount *mp, u64 bno, u64 len)
{
	struct sx_trans *tp = trans(mp, 1);
	int error = sx_free_extent(tp, bno, len);

	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

/* Whether @bno is free. */
static bool is_free(struct sx_mount *mp, u64 bno)
{
	bool f;

	assert_int_equal(sx_alloc_is_free(mp, bno, &f), 0);
	return f;
}

/* Every block of [bno, bno + len) is free (@want) or in use. */
static void assert_range(struct sx_mount *mp, u64 bno, u64 len, bool want)
{
	u64 b;

	for (b = bno; b < bno + len; b++)
		if (is_free(mp, b) != want)
			fail_msg("block %llu is %s", (unsigned long long)b,
				 want ? "in use" : "free");
}

/* Count free blocks one by one through sx_alloc_is_free(). */
static u64 count_free(struct sx_mount *mp)
{
	u64 b, n = 0;

	for (b = 0; b < mp->m_sb.sb_dblocks; b++)
		n += is_free(mp, b);
	return n;
}

/* Unmount and mount again, checking both succeed. */
static struct sx_mount *remount(struct sx_mount *mp, struct sx_bdev *bd)
{
	assert_int_equal(sx_unmount(mp), 0);
	return sxt_mount(bd);
}

/* A fresh filesystem on a memory device. */
static struct sx_bdev *newfs(u64 size, u32 bs)
{
	return sxt_memfs(size, bs, 0);
}

/*
 * mkfs allocates the first data blocks (the fsinfo block and the root
 * directory's inode); the tests work on the blocks after them.
 */
#define MKFS_USED	2

/* The first block a new filesystem has free. */
static u64 first_free(struct sx_mount *mp)
{
	return mp->m_sb.sb_datastart + MKFS_USED;
}

/* Free data blocks of a new filesystem. */
static u64 ndata(struct sx_mount *mp)
{
	return mp->m_sb.sb_dblocks - first_free(mp);
}

/* ---------------------------------------------------------------- basics */

/* Allocate, commit, remount: the bits and counts are still there; then free. */
static void test_alloc_persists(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), total = ndata(mp), bno;
	u32 len;

	assert_int_equal(sx_alloc_free_blocks(mp), total);
	assert_int_equal(alloc1(mp, 0, 1, 10, &bno, &len), 0);
	assert_int_equal(bno, ds);
	assert_int_equal(len, 10);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 10);
	assert_range(mp, ds, 10, false);
	assert_true(is_free(mp, ds + 10));

	/* metadata blocks are never free */
	assert_false(is_free(mp, 0));
	assert_false(is_free(mp, mp->m_sb.sb_logstart));
	assert_false(is_free(mp, ds - 1));
	assert_int_equal(sx_alloc_is_free(mp, mp->m_sb.sb_dblocks, &(bool){ 0 }), -EINVAL);

	mp = remount(mp, bd);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 10);
	assert_range(mp, ds, 10, false);
	assert_int_equal(count_free(mp), total - 10);

	assert_int_equal(free1(mp, ds + 2, 5), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 5);
	mp = remount(mp, bd);
	assert_range(mp, ds, 2, false);
	assert_range(mp, ds + 2, 5, true);
	assert_range(mp, ds + 7, 3, false);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 5);
	assert_int_equal(count_free(mp), total - 5);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* The same, made durable only by the log (no checkpoint): recovery replays it. */
static void test_alloc_recovered(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096), *copy;
	struct sx_mount *mp = sxt_mount(bd);
	u64 total = ndata(mp), bno;
	u32 len;

	assert_int_equal(alloc1(mp, 0, 5, 5, &bno, &len), 0);
	assert_int_equal(sx_sync(mp), 0);
	/* the image as a crash would leave it: log durable, bitmap not written */
	copy = sxt_bdev_copy(bd);
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(copy);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 5);
	assert_range(mp, bno, 5, false);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(copy);
	sx_bdev_destroy(bd);
}

/* Bad arguments. */
static void test_alloc_invalid(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp = trans(mp, 1);
	u32 cap = sx_alloc_max_extent(mp), len;
	u64 bno;

	assert_int_equal(cap, SX_BITMAP_BITS(4096));
	assert_int_equal(sx_alloc_extent(tp, 0, 0, 5, &bno, &len), -EINVAL);
	assert_int_equal(sx_alloc_extent(tp, 0, 6, 5, &bno, &len), -EINVAL);
	assert_int_equal(sx_alloc_extent(tp, 0, cap + 1, cap + 1, &bno, &len), -EINVAL);
	assert_int_equal(sx_free_extent(tp, first_free(mp), 0), -EINVAL);
	assert_int_equal(sx_free_extent(tp, first_free(mp), (u64)cap + 1), -EINVAL);
	sx_trans_cancel(tp);

	/* a maxlen above the cap is lowered to it */
	assert_int_equal(alloc1(mp, 0, 1, 0xffffffffu, &bno, &len), 0);
	assert_int_equal(len, sx_min((u64)cap, ndata(mp)));
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* The hint is where the search starts; past the end it wraps. */
static void test_alloc_hint(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), end = mp->m_sb.sb_dblocks, bno;
	u32 len;

	assert_int_equal(alloc1(mp, ds + 100, 1, 8, &bno, &len), 0);
	assert_int_equal(bno, ds + 100);
	assert_int_equal(len, 8);
	/* in use: the next free block after it */
	assert_int_equal(alloc1(mp, ds + 104, 1, 8, &bno, &len), 0);
	assert_int_equal(bno, ds + 108);
	/* a hint in the metadata or past the end starts at datastart */
	assert_int_equal(alloc1(mp, 1, 1, 4, &bno, &len), 0);
	assert_int_equal(bno, ds);
	assert_int_equal(alloc1(mp, end + 5, 1, 4, &bno, &len), 0);
	assert_int_equal(bno, ds + 4);
	/* near the end, too short a run there: wraps round to the front */
	assert_int_equal(alloc1(mp, end - 3, 10, 10, &bno, &len), 0);
	assert_int_equal(bno, ds + 8);
	/* near the end, but minlen fits there: the first full-length run wins */
	assert_int_equal(alloc1(mp, end - 3, 2, 10, &bno, &len), 0);
	assert_int_equal(bno, ds + 18);
	assert_int_equal(len, 10);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Fill the whole data area with single-block allocations. */
static void fill_all(struct sx_mount *mp)
{
	u64 bno;
	u32 len, cap = sx_alloc_max_extent(mp);
	int error;

	for (;;) {
		error = alloc1(mp, 0, 1, cap, &bno, &len);
		if (error == -ENOSPC)
			break;
		assert_int_equal(error, 0);
	}
	assert_int_equal(sx_alloc_free_blocks(mp), 0);
}

/*
 * Without a run of maxlen, the longest run of at least minlen is taken
 * whole, wherever it is; with none, ENOSPC.
 */
static void test_alloc_longest_run(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), bno;
	u32 len;

	fill_all(mp);
	assert_int_equal(free1(mp, ds + 10, 3), 0);
	assert_int_equal(free1(mp, ds + 100, 7), 0);
	assert_int_equal(free1(mp, ds + 200, 5), 0);
	assert_int_equal(free1(mp, ds + 300, 7), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), 22);

	assert_int_equal(alloc1(mp, ds + 150, 8, 50, &bno, &len), -ENOSPC);
	/* from ds+150: 5 @200, 7 @300, wrap, 3 @10, 7 @100: first 7 wins */
	assert_int_equal(alloc1(mp, ds + 150, 4, 50, &bno, &len), 0);
	assert_int_equal(bno, ds + 300);
	assert_int_equal(len, 7);
	/* exactly maxlen long: taken at the first one */
	assert_int_equal(alloc1(mp, ds + 150, 1, 5, &bno, &len), 0);
	assert_int_equal(bno, ds + 200);
	assert_int_equal(len, 5);
	assert_int_equal(alloc1(mp, ds + 150, 1, 50, &bno, &len), 0);
	assert_int_equal(bno, ds + 100);
	assert_int_equal(len, 7);
	assert_int_equal(alloc1(mp, 0, 4, 50, &bno, &len), -ENOSPC);
	assert_int_equal(alloc1(mp, 0, 1, 50, &bno, &len), 0);
	assert_int_equal(bno, ds + 10);
	assert_int_equal(len, 3);
	assert_int_equal(sx_alloc_free_blocks(mp), 0);
	assert_int_equal(alloc1(mp, 0, 1, 1, &bno, &len), -ENOSPC);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Fill to ENOSPC, persist, free one block, and it is the one handed out. */
static void test_enospc(void **state)
{
	struct sx_bdev *bd = newfs(8ull << 20, 1024);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), bno;
	u32 len;

	fill_all(mp);
	assert_int_equal(alloc1(mp, ds + 7, 1, 1, &bno, &len), -ENOSPC);
	mp = remount(mp, bd);
	assert_int_equal(sx_alloc_free_blocks(mp), 0);
	assert_int_equal(count_free(mp), 0);
	assert_int_equal(free1(mp, ds + 1234, 1), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), 1);
	assert_int_equal(alloc1(mp, 0, 1, 100, &bno, &len), 0);
	assert_int_equal(bno, ds + 1234);
	assert_int_equal(len, 1);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Freeing free or out-of-range blocks is corruption and changes nothing. */
static void test_double_free(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), end = mp->m_sb.sb_dblocks, total = ndata(mp);
	u64 bno;
	u32 len;

	assert_int_equal(alloc1(mp, 0, 20, 20, &bno, &len), 0);
	assert_int_equal(free1(mp, ds + 5, 5), 0);
	assert_int_equal(free1(mp, ds + 5, 5), -EFSCORRUPTED);	/* all free */
	assert_int_equal(free1(mp, ds + 8, 4), -EFSCORRUPTED);	/* half free */
	assert_int_equal(free1(mp, ds + 19, 2), -EFSCORRUPTED);	/* runs off the end */
	assert_int_equal(sx_alloc_free_blocks(mp), total - 15);
	assert_range(mp, ds, 5, false);
	assert_range(mp, ds + 5, 5, true);
	assert_range(mp, ds + 10, 10, false);

	/* outside the data area */
	assert_int_equal(free1(mp, mp->m_sb.sb_datastart - 1, 2), -EFSCORRUPTED);
	assert_int_equal(free1(mp, 0, 1), -EFSCORRUPTED);
	assert_int_equal(free1(mp, end - 1, 2), -EFSCORRUPTED);
	assert_int_equal(free1(mp, end, 1), -EFSCORRUPTED);
	assert_int_equal(free1(mp, ~0ull - 1, 1), -EFSCORRUPTED);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 15);

	mp = remount(mp, bd);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 15);
	assert_int_equal(count_free(mp), total - 15);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* A cancelled transaction leaves counts and bits as they were. */
static void test_cancel(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), total = ndata(mp), bno, b2;
	struct sx_trans *tp;
	u32 len, l2;

	tp = trans(mp, 3);
	assert_int_equal(sx_alloc_extent(tp, 0, 30, 30, &bno, &len), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 30, 30, &b2, &l2), 0);
	assert_int_equal(b2, bno + 30);
	/* the owner sees its own changes */
	assert_int_equal(sx_alloc_free_blocks(mp), total - 60);
	assert_false(is_free(mp, bno));
	assert_int_equal(sx_free_extent(tp, bno + 10, 5), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 55);
	sx_trans_cancel(tp);

	assert_int_equal(sx_alloc_free_blocks(mp), total);
	assert_range(mp, ds, 60, true);
	assert_int_equal(alloc1(mp, 0, 1, 4, &bno, &len), 0);
	assert_int_equal(bno, ds);

	/* a cancelled free, then a new owner: counts follow the bits */
	tp = trans(mp, 1);
	assert_int_equal(sx_free_extent(tp, ds, 4), 0);
	sx_trans_cancel(tp);
	assert_int_equal(alloc1(mp, 0, 1, 1, &bno, &len), 0);
	assert_int_equal(bno, ds + 4);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 5);
	mp = remount(mp, bd);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 5);
	assert_int_equal(count_free(mp), total - 5);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Several extents in one transaction, allocated and freed, one commit. */
static void test_many_in_one_trans(void **state)
{
	/* a log big enough for records of ten worst-case extents */
	struct sx_bdev *bd = newfs(64ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 total = ndata(mp), bno[8];
	struct sx_trans *tp = trans(mp, 10);
	u32 len[8], i;

	for (i = 0; i < 8; i++) {
		assert_int_equal(sx_alloc_extent(tp, 0, 1, i + 1, &bno[i], &len[i]), 0);
		assert_int_equal(len[i], i + 1);
	}
	assert_int_equal(sx_free_extent(tp, bno[3], len[3]), 0);
	assert_int_equal(sx_free_extent(tp, bno[5], len[5]), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 36 + 4 + 6);
	mp = remount(mp, bd);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 26);
	for (i = 0; i < 8; i++)
		assert_range(mp, bno[i], len[i], i == 3 || i == 5);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- bitmap block boundaries */

/* 512-byte blocks: runs that cross from one bitmap block to the next. */
static void test_cross_bitmap_blocks(void **state)
{
	/* a 256 KiB log keeps the data area inside the first bitmap block */
	struct sx_bdev *bd = sxt_memfs(8ull << 20, 512, 512);
	struct sx_mount *mp = sxt_mount(bd);
	u64 bits = SX_BITMAP_BITS(512), ds = first_free(mp), total = ndata(mp);
	u64 edge = 2 * bits, bno;
	u32 len, cap = sx_alloc_max_extent(mp);
	struct sx_trans *tp;

	assert_int_equal(bits, 3584);
	assert_true(mp->m_sb.sb_bmapblocks >= 4);
	assert_true(ds < bits);

	/* a hinted extent straddling the boundary between bitmap blocks 1 and 2 */
	assert_int_equal(alloc1(mp, edge - 5, 10, 10, &bno, &len), 0);
	assert_int_equal(bno, edge - 5);
	assert_int_equal(len, 10);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 10);
	mp = remount(mp, bd);
	assert_range(mp, edge - 6, 1, true);
	assert_range(mp, edge - 5, 10, false);
	assert_range(mp, edge + 5, 1, true);
	assert_int_equal(count_free(mp), total - 10);

	/* freeing across it */
	assert_int_equal(free1(mp, edge - 2, 4), 0);
	assert_range(mp, edge - 2, 4, true);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 6);

	/* the only usable run straddles a boundary: the search must join it */
	mp = remount(mp, bd);
	fill_all(mp);
	assert_int_equal(free1(mp, bits - 3, 7), 0);
	assert_int_equal(free1(mp, edge + 100, 3), 0);
	assert_int_equal(alloc1(mp, 0, 7, 7, &bno, &len), 0);
	assert_int_equal(bno, bits - 3);
	assert_int_equal(alloc1(mp, 0, 4, 4, &bno, &len), -ENOSPC);

	/* a maximal extent spans two bitmap blocks and fits its reservation */
	assert_int_equal(free1(mp, bits + 10, cap - 10), 0);
	assert_int_equal(free1(mp, edge, 10), 0);
	tp = trans(mp, 1);
	assert_int_equal(sx_alloc_extent(tp, 0, cap, cap, &bno, &len), 0);
	assert_int_equal(bno, bits + 10);
	assert_int_equal(len, cap);
	assert_true(tp->t_bytes <= tp->t_res_bytes);
	assert_int_equal(sx_trans_commit(tp), 0);
	/* and freeing it whole does too */
	tp = trans(mp, 1);
	assert_int_equal(sx_free_extent(tp, bno, len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	mp = remount(mp, bd);
	assert_range(mp, bits + 10, cap, true);
	assert_int_equal(count_free(mp), (u64)cap + 3);
	assert_int_equal(sx_alloc_free_blocks(mp), (u64)cap + 3);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- random workload */

/* Random allocations and frees against a model of which blocks are in use. */
static void test_random_vs_model(void **state)
{
	struct sx_bdev *bd = newfs(4ull << 20, 512);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), end = mp->m_sb.sb_dblocks, seed = 0xa110c;
	u64 nfree = ndata(mp), b;
	bool *used = calloc(end, sizeof(bool));
	struct { u64 bno; u32 len; } *ext = calloc(end, sizeof(*ext));
	u32 next = 0, round, i;

	assert_non_null(used);
	assert_non_null(ext);
	for (round = 0; round < 3000; round++) {
		u64 r = sxt_rand(&seed);

		if (next == 0 || r % 3 != 0) {
			u32 maxlen = 1 + (u32)(sxt_rand(&seed) % 300);
			u32 minlen = 1 + (u32)(sxt_rand(&seed) % maxlen);
			u64 hint = sxt_rand(&seed) % (end + 10);
			u64 bno;
			u32 len;
			int error = alloc1(mp, hint, minlen, maxlen, &bno, &len);

			if (error == -ENOSPC)
				continue;
			assert_int_equal(error, 0);
			assert_true(len >= minlen && len <= maxlen);
			assert_true(bno >= ds && bno + len <= end);
			for (b = bno; b < bno + len; b++) {
				assert_false(used[b]);
				used[b] = true;
			}
			nfree -= len;
			ext[next].bno = bno;
			ext[next].len = len;
			next++;
		} else {
			u32 k = (u32)(sxt_rand(&seed) % next);
			u64 off = sxt_rand(&seed) % ext[k].len;
			u64 n = 1 + sxt_rand(&seed) % (ext[k].len - off);

			/* free a piece of an extent; keep the rest listed */
			assert_int_equal(free1(mp, ext[k].bno + off, n), 0);
			for (b = ext[k].bno + off; b < ext[k].bno + off + n; b++)
				used[b] = false;
			nfree += n;
			if (off + n < ext[k].len) {
				ext[next].bno = ext[k].bno + off + n;
				ext[next].len = (u32)(ext[k].len - off - n);
				next++;
			}
			if (off) {
				ext[k].len = (u32)off;
			} else {
				ext[k] = ext[--next];
			}
		}
		assert_int_equal(sx_alloc_free_blocks(mp), nfree);
		if (round % 1000 == 999)
			mp = remount(mp, bd);
	}
	mp = remount(mp, bd);
	assert_int_equal(sx_alloc_free_blocks(mp), nfree);
	for (b = 0; b < end; b++)
		assert_int_equal(is_free(mp, b), b >= ds && !used[b]);
	for (i = 0; i < next; i++)
		assert_int_equal(free1(mp, ext[i].bno, ext[i].len), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), ndata(mp));
	assert_int_equal(sx_unmount(mp), 0);
	free(used);
	free(ext);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- threads */

struct worker {
	struct sx_mount	*w_mp;
	u64		w_seed;
	int		w_error;
	u64		w_held;		/* blocks still allocated at the end */
};

/* Allocate several extents per transaction and free them again later. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct sx_mount *mp = w->w_mp;
	u64 bno[64];
	u32 len[64], n = 0, round;
	int error = 0;

	sx_thread_enter();
	for (round = 0; round < 150 && !error; round++) {
		struct sx_trans *tp;
		u32 k, i;

		error = sx_trans_alloc(mp, 4 * sx_alloc_res_bytes(mp), 0, &tp);
		if (error)
			break;
		for (k = 0; k < 3 && n < 64 && !error; k++) {
			error = sx_alloc_extent(tp, sxt_rand(&w->w_seed) % mp->m_sb.sb_dblocks,
						1, 1 + sxt_rand(&w->w_seed) % 16, &bno[n], &len[n]);
			if (!error)
				n++;
		}
		if (!error && n > 8) {
			i = (u32)(sxt_rand(&w->w_seed) % n);
			error = sx_free_extent(tp, bno[i], len[i]);
			if (!error) {
				bno[i] = bno[n - 1];
				len[i] = len[n - 1];
				n--;
			}
		}
		if (error) {
			sx_trans_cancel(tp);
			break;
		}
		error = sx_trans_commit(tp);
		/* reading the count from outside an allocation */
		if (!error && round % 10 == 0)
			(void)sx_alloc_free_blocks(mp);
	}
	w->w_error = error;
	for (w->w_held = 0; n > 0; n--)
		w->w_held += len[n - 1];
	sx_thread_exit();
	return NULL;
}

/* Threads allocating in parallel neither deadlock nor lose a block. */
static void test_threads(void **state)
{
	struct sx_bdev *bd = newfs(64ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	struct worker w[4];
	pthread_t th[4];
	u64 held = 0, total = ndata(mp);
	int i;

	for (i = 0; i < 4; i++) {
		w[i].w_mp = mp;
		w[i].w_seed = 0x1234567ull * (i + 1);
		w[i].w_error = 0;
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(w[i].w_error, 0);
		held += w[i].w_held;
	}
	assert_true(held > 0);
	assert_int_equal(sx_alloc_free_blocks(mp), total - held);
	mp = remount(mp, bd);
	assert_int_equal(sx_alloc_free_blocks(mp), total - held);
	assert_int_equal(count_free(mp), total - held);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- verifier */

/* A mount stand-in holding a geometry, for calling the verifier directly. */
static struct sx_mount *fake_mount(u64 devsize, u32 bs)
{
	static const u8 uuid[SX_UUID_SIZE] = { 1, 2, 3, 4, 5, 6, 0x47, 8, 0x89 };
	struct sx_geometry_opts go = { .go_blocksize = bs, .go_uuid = uuid };
	struct sx_mount *mp = calloc(1, sizeof(*mp));

	assert_non_null(mp);
	assert_int_equal(sx_sb_geometry(&go, devsize, 512, &mp->m_sb), 0);
	mp->m_bsize = bs;
	mp->m_blog = mp->m_sb.sb_blocklog;
	strcpy(mp->m_name, "verify");
	return mp;
}

/* Seal a bitmap block image with its CRC. */
static void seal(struct sx_mount *mp, void *blk)
{
	struct sx_dblk_hdr *h = blk;

	h->bh_crc = cpu_to_le32(sx_cksum_skip(blk, mp->m_bsize,
					      offsetof(struct sx_dblk_hdr, bh_crc)));
}

/* Flip bit @i of a bitmap image's bits. */
static void flip(u8 *blk, u64 i)
{
	blk[SX_BITMAP_HDR_SIZE + i / 8] ^= (u8)(1u << (i % 8));
}

/* Add @d to bm_nfree. */
static void nfree_add(u8 *blk, s32 d)
{
	struct sx_dbitmap *bm = (void *)blk;

	bm->bm_nfree = cpu_to_le32(le32_to_cpu(bm->bm_nfree) + d);
}

/* The verifier accepts mkfs's blocks and rejects each corrupted field. */
static void test_verifier(void **state)
{
	/* 3.5 bitmap blocks of 512-byte blocks: first, middle and last differ */
	struct sx_mount *mp = fake_mount(3 * 3584 * 512 + 1800 * 512, 512);
	const struct sx_sb *sb = &mp->m_sb;
	u64 bits = SX_BITMAP_BITS(512);
	u8 good[512], blk[512];
	u32 last = sb->sb_bmapblocks - 1, idx;
	struct sx_dbitmap *bm = (void *)blk;

	assert_int_equal(sb->sb_bmapblocks, 4);
	for (idx = 0; idx <= last; idx++) {
		u64 blkno = sb->sb_bmapstart + idx;

		sx_bitmap_init_block(sb, idx, good);
		assert_int_equal(sx_buf_verify(mp, good, blkno, &sx_bitmap_buf_ops, 0), 0);

#define EXPECT(err) assert_int_equal(sx_buf_verify(mp, blk, blkno, &sx_bitmap_buf_ops, 0), err)
		/* generic header fields */
		memcpy(blk, good, 512);
		blk[300] ^= 1;
		EXPECT(-EFSBADCRC);
		memcpy(blk, good, 512);
		bm->bm_hdr.bh_magic = cpu_to_le32(SX_SB_MAGIC);
		seal(mp, blk);
		EXPECT(-EFSCORRUPTED);
		memcpy(blk, good, 512);
		bm->bm_hdr.bh_blkno = cpu_to_le64(blkno + 1);
		seal(mp, blk);
		EXPECT(-EFSCORRUPTED);
		memcpy(blk, good, 512);
		bm->bm_hdr.bh_owner = cpu_to_le64(7);
		seal(mp, blk);
		EXPECT(-EFSCORRUPTED);
		memcpy(blk, good, 512);
		bm->bm_hdr.bh_uuid[3] ^= 0x10;
		seal(mp, blk);
		EXPECT(-EFSCORRUPTED);
		/* the LSN may be anything */
		memcpy(blk, good, 512);
		bm->bm_hdr.bh_lsn = cpu_to_le64(SX_LSN(9, 3));
		seal(mp, blk);
		EXPECT(0);

		/* bitmap fields */
		memcpy(blk, good, 512);
		bm->bm_index = cpu_to_le32(idx + 1);
		seal(mp, blk);
		EXPECT(-EFSCORRUPTED);
		memcpy(blk, good, 512);
		bm->bm_pad = cpu_to_le64(1ull << 40);
		seal(mp, blk);
		EXPECT(-EFSCORRUPTED);
		memcpy(blk, good, 512);
		nfree_add(blk, 1);
		seal(mp, blk);
		EXPECT(-EFSCORRUPTED);
		memcpy(blk, good, 512);
		nfree_add(blk, -1);
		seal(mp, blk);
		EXPECT(-EFSCORRUPTED);
		memcpy(blk, good, 512);
		bm->bm_nfree = cpu_to_le32(0xffffffffu);
		seal(mp, blk);
		EXPECT(-EFSCORRUPTED);

		/* a data bit changed without its count, then with it (valid) */
		if (idx > 0) {
			memcpy(blk, good, 512);
			flip(blk, 17);
			seal(mp, blk);
			EXPECT(-EFSCORRUPTED);
			nfree_add(blk, -1);
			seal(mp, blk);
			EXPECT(0);
		}
		/* a metadata block marked free, count adjusted: still refused */
		if (idx == 0) {
			memcpy(blk, good, 512);
			flip(blk, sb->sb_datastart - 1);
			nfree_add(blk, 1);
			seal(mp, blk);
			EXPECT(-EFSCORRUPTED);
			memcpy(blk, good, 512);
			flip(blk, 0);
			nfree_add(blk, 1);
			seal(mp, blk);
			EXPECT(-EFSCORRUPTED);
		}
		/* a block past the end marked free, count adjusted or not */
		if (idx == last) {
			u64 past = sb->sb_dblocks - (u64)last * bits;

			memcpy(blk, good, 512);
			flip(blk, past);
			seal(mp, blk);
			EXPECT(-EFSCORRUPTED);
			nfree_add(blk, 1);
			seal(mp, blk);
			EXPECT(-EFSCORRUPTED);
			memcpy(blk, good, 512);
			flip(blk, bits - 1);
			seal(mp, blk);
			EXPECT(-EFSCORRUPTED);
		}
#undef EXPECT
	}

	/* a good bitmap block image read as if it lived outside the bitmap */
	sx_bitmap_init_block(sb, 0, good);
	memcpy(blk, good, 512);
	bm->bm_hdr.bh_blkno = cpu_to_le64(sb->sb_datastart);
	seal(mp, blk);
	assert_int_equal(sx_buf_verify(mp, blk, sb->sb_datastart, &sx_bitmap_buf_ops, 0),
			 -EFSCORRUPTED);
	bm->bm_hdr.bh_blkno = cpu_to_le64(sb->sb_bmapstart - 1);
	seal(mp, blk);
	assert_int_equal(sx_buf_verify(mp, blk, sb->sb_bmapstart - 1, &sx_bitmap_buf_ops, 0),
			 -EFSCORRUPTED);
	free(mp);
}

/* Random bytes in a sealed bitmap block never verify and never crash. */
static void test_verifier_garbage(void **state)
{
	struct sx_mount *mp = fake_mount(64ull << 20, 4096);
	u8 *blk = malloc(4096);
	struct sx_dbitmap *bm = (void *)blk;
	u64 seed = 77;
	int round;
	u32 i;

	assert_non_null(blk);
	for (round = 0; round < 200; round++) {
		sx_bitmap_init_block(&mp->m_sb, 0, blk);
		for (i = SX_BITMAP_HDR_SIZE; i < 4096; i++)
			blk[i] = (u8)sxt_rand(&seed);
		if (round & 1)
			bm->bm_nfree = cpu_to_le32((u32)sxt_rand(&seed));
		seal(mp, blk);
		assert_int_equal(sx_buf_verify(mp, blk, mp->m_sb.sb_bmapstart,
					       &sx_bitmap_buf_ops, 0), -EFSCORRUPTED);
	}
	free(blk);
	free(mp);
}

/* A corrupted bitmap block on disk makes the mount fail cleanly. */
static void test_mount_bad_bitmap(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 off = mp->m_sb.sb_bmapstart * 4096;
	u8 *blk = malloc(4096);
	u8 *orig = malloc(4096);

	assert_non_null(blk);
	assert_non_null(orig);
	assert_int_equal(sx_unmount(mp), 0);
	sxt_bdev_peek(bd, off, orig, 4096);

	memcpy(blk, orig, 4096);
	nfree_add(blk, -3);
	((struct sx_dblk_hdr *)blk)->bh_crc = cpu_to_le32(
		sx_cksum_skip(blk, 4096, offsetof(struct sx_dblk_hdr, bh_crc)));
	sxt_bdev_poke(bd, off, blk, 4096);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);

	memcpy(blk, orig, 4096);
	blk[1000] ^= 4;
	sxt_bdev_poke(bd, off, blk, 4096);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSBADCRC);

	sxt_bdev_poke(bd, off, orig, 4096);
	mp = sxt_mount(bd);
	assert_int_equal(sx_alloc_free_blocks(mp), ndata(mp));
	assert_int_equal(sx_unmount(mp), 0);
	free(blk);
	free(orig);
	sx_bdev_destroy(bd);
}

/* An error injected into an allocation leaves nothing behind. */
static void test_alloc_fault(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 total = ndata(mp), bno;
	u32 len;

	assert_int_equal(sx_fault_arm("alloc_extent", 1, false, -ENOMEM), 0);
	assert_int_equal(alloc1(mp, 0, 1, 5, &bno, &len), -ENOMEM);
	assert_int_equal(alloc1(mp, 0, 1, 5, &bno, &len), 0);
	assert_int_equal(sx_fault_arm("free_extent", 1, false, -EIO), 0);
	assert_int_equal(free1(mp, bno, len), -EIO);
	assert_int_equal(sx_alloc_free_blocks(mp), total - 5);
	assert_int_equal(free1(mp, bno, len), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), total);
	sx_fault_disarm_all();
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- busy extents */

/* Allocate data blocks in a transaction of its own and commit; returns the error. */
static int dalloc1(struct sx_mount *mp, u64 hint, u32 minlen, u32 maxlen, u64 *bno,
		   u32 *len)
{
	struct sx_trans *tp = trans(mp, 1);
	int error = sx_alloc_data_extent(tp, hint, minlen, maxlen, bno, len);

	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

/* Log forces that wrote something, so far. */
static u64 forces(struct sx_mount *mp)
{
	struct sx_log_stats ls;

	sx_log_get_stats(mp, &ls);
	return ls.ls_forces;
}

/*
 * A block freed by a transaction that is not yet durable is not handed to
 * a data allocation while other blocks are free, and nothing is forced for
 * it; metadata may have it at once.  Once the free is durable, data may too.
 */
static void test_busy_skipped(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), bno, f0;
	u32 len;

	assert_int_equal(alloc1(mp, ds, 8, 8, &bno, &len), 0);
	assert_int_equal(bno, ds);
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(free1(mp, ds + 2, 3), 0);
	assert_int_equal(sx_alloc_busy_blocks(mp), 3);
	f0 = forces(mp);

	/* the hint points into the busy blocks: data gets the first after them */
	assert_int_equal(dalloc1(mp, ds + 2, 1, 4, &bno, &len), 0);
	assert_int_equal(bno, ds + 8);
	assert_int_equal(len, 4);
	/* a run is cut where busy blocks start, and the longest usable one wins */
	assert_int_equal(free1(mp, ds, 2), 0);
	assert_int_equal(dalloc1(mp, 0, 1, 2, &bno, &len), 0);
	assert_int_equal(bno, ds + 12);
	assert_range(mp, ds, 5, true);
	assert_int_equal(forces(mp), f0);
	assert_int_equal(sx_log_durable_seq(mp) < sx_log_commit_seq(mp), true);

	/* metadata takes busy blocks: the log orders it after the free */
	assert_int_equal(alloc1(mp, ds + 3, 1, 1, &bno, &len), 0);
	assert_int_equal(bno, ds + 3);
	assert_int_equal(forces(mp), f0);

	/* durable: no longer busy, and data may have them */
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(dalloc1(mp, ds, 1, 2, &bno, &len), 0);
	assert_int_equal(bno, ds);
	assert_int_equal(len, 2);
	assert_int_equal(sx_alloc_busy_blocks(mp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* sx_alloc_data_next() in a transaction of its own, committed. */
static int dnext1(struct sx_mount *mp, u32 maxlen, u64 *bno, u32 *len)
{
	struct sx_trans *tp = trans(mp, 1);
	int error = sx_alloc_data_next(tp, 1, maxlen, bno, len);

	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

/*
 * The rotor hands out data blocks side by side whatever is freed behind
 * it, steps around busy and allocated blocks, and wraps to the start of
 * the data area at the end of the device.
 */
static void test_data_rotor(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 4096);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), bno, first, end = mp->m_sb.sb_dblocks;
	u32 len;

	assert_int_equal(dnext1(mp, 2, &first, &len), 0);
	assert_int_equal(len, 2);
	/* freed behind the rotor and durable: still not taken next */
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(free1(mp, first, 2), 0);
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(dnext1(mp, 3, &bno, &len), 0);
	assert_int_equal(bno, first + 2);
	/* a block in use past it is stepped over */
	assert_int_equal(alloc1(mp, first + 5, 1, 1, &bno, &len), 0);
	assert_int_equal(bno, first + 5);
	assert_int_equal(dnext1(mp, 1, &bno, &len), 0);
	assert_int_equal(bno, first + 6);
	/* busy blocks right past it are stepped over too */
	assert_int_equal(alloc1(mp, first + 7, 4, 4, &bno, &len), 0);
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(free1(mp, first + 7, 4), 0);
	assert_int_equal(dnext1(mp, 1, &bno, &len), 0);
	assert_int_equal(bno, first + 11);
	/* the rest of the device in use: the rotor wraps to what was freed */
	assert_int_equal(sx_sync(mp), 0);
	for (bno = first + 12; bno < end; bno += len)
		assert_int_equal(alloc1(mp, bno, 1, (u32)sx_min(end - bno, 1024), &bno, &len), 0);
	assert_int_equal(dnext1(mp, 1, &bno, &len), 0);
	assert_true(bno >= ds && bno < first + 12);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * With nothing else free, a data allocation forces the log once and then
 * takes the busy blocks; blocks its own transaction freed are never taken
 * for data (its record cannot be durable before it commits), but metadata
 * of the same transaction may take them.
 */
static void test_busy_forced_when_full(void **state)
{
	struct sx_bdev *bd = newfs(8ull << 20, 1024);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), bno, f0, seq;
	struct sx_trans *tp;
	u32 len;

	fill_all(mp);
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(free1(mp, ds + 100, 5), 0);
	seq = sx_log_commit_seq(mp);
	assert_true(sx_log_durable_seq(mp) < seq);
	f0 = forces(mp);
	assert_int_equal(dalloc1(mp, 0, 1, 8, &bno, &len), 0);
	assert_int_equal(bno, ds + 100);
	assert_int_equal(len, 5);
	assert_int_equal(forces(mp), f0 + 1);
	assert_true(sx_log_durable_seq(mp) >= seq);
	assert_int_equal(sx_alloc_busy_blocks(mp), 0);

	/* the transaction's own frees: ENOSPC for data, with nothing to force */
	assert_int_equal(sx_sync(mp), 0);
	f0 = forces(mp);
	tp = trans(mp, 4);
	assert_int_equal(sx_free_extent(tp, ds + 200, 2), 0);
	assert_int_equal(sx_alloc_data_extent(tp, 0, 1, 2, &bno, &len), -ENOSPC);
	assert_int_equal(sx_alloc_extent(tp, 0, 1, 2, &bno, &len), 0);
	assert_int_equal(bno, ds + 200);
	assert_int_equal(len, 2);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(forces(mp), f0);

	/* a cancelled free leaves nothing busy behind */
	tp = trans(mp, 1);
	assert_int_equal(sx_free_extent(tp, ds + 300, 1), 0);
	sx_trans_cancel(tp);
	assert_false(is_free(mp, ds + 300));
	assert_int_equal(free1(mp, ds + 300, 1), 0);
	assert_int_equal(sx_sync(mp), 0);
	f0 = forces(mp);
	assert_int_equal(dalloc1(mp, 0, 1, 1, &bno, &len), 0);
	assert_int_equal(bno, ds + 300);
	assert_int_equal(forces(mp), f0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * Many frees stay few entries (adjacent ones merge) and are forgotten once
 * durable, in any order and crossing bitmap blocks.
 */
static void test_busy_merge_prune(void **state)
{
	struct sx_bdev *bd = newfs(16ull << 20, 1024);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ds = first_free(mp), bits = SX_BITMAP_BITS(mp->m_sb.sb_blocksize);
	u64 base = bits - 50 > ds ? bits - 50 : ds, bno, i;
	u32 len;

	for (i = 0; i < 100; i += 10) {
		assert_int_equal(alloc1(mp, base + i, 10, 10, &bno, &len), 0);
		assert_int_equal(bno, base + i);
	}
	assert_int_equal(sx_sync(mp), 0);
	/* every other block, then the ones between: backwards, one at a time */
	for (i = 0; i < 100; i += 2)
		assert_int_equal(free1(mp, base + 99 - i, 1), 0);
	assert_int_equal(sx_alloc_busy_blocks(mp), 50);
	for (i = 1; i < 100; i += 2)
		assert_int_equal(free1(mp, base + 99 - i, 1), 0);
	assert_int_equal(sx_alloc_busy_blocks(mp), 100);
	/* one run now: data finds nothing in it */
	assert_int_equal(dalloc1(mp, base, 1, 1, &bno, &len), 0);
	assert_int_equal(bno, base + 100);
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(dalloc1(mp, base, 1, 100, &bno, &len), 0);
	assert_int_equal(bno, base);
	assert_int_equal(len, 100);
	assert_int_equal(sx_alloc_busy_blocks(mp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_persists),
		cmocka_unit_test(test_alloc_recovered),
		cmocka_unit_test(test_alloc_invalid),
		cmocka_unit_test(test_alloc_hint),
		cmocka_unit_test(test_alloc_longest_run),
		cmocka_unit_test(test_enospc),
		cmocka_unit_test(test_double_free),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_many_in_one_trans),
		cmocka_unit_test(test_cross_bitmap_blocks),
		cmocka_unit_test(test_random_vs_model),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_verifier),
		cmocka_unit_test(test_verifier_garbage),
		cmocka_unit_test(test_mount_bad_bitmap),
		cmocka_unit_test(test_alloc_fault),
		cmocka_unit_test(test_busy_skipped),
		cmocka_unit_test(test_busy_forced_when_full),
		cmocka_unit_test(test_busy_merge_prune),
		cmocka_unit_test(test_data_rotor),
	};

	sxt_quiet();
	sx_thread_enter();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
