// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Extent map tests (engine/bmap.c) on real inodes, forks and transactions:
 * lookups of mappings and holes; merges with the left, the right and both
 * neighbours; splits by unmap and by state changes, and the merges state
 * changes make; replaces of a mapped range by new blocks, and the ranges
 * they refuse; argument and overlap errors; a random workload against a
 * per-block model (each check also reading runs of mappings with
 * sx_bmap_next_n()) that crosses the inline/B+tree boundary of the fork in
 * both directions many times (once more with replaces of mapped ranges by
 * new blocks among the operations), every operation in a transaction of exactly
 * sx_bmap_res_bytes(), with remounts; a file driven across the boundary
 * back and forth on purpose; many changes through one kept cursor in one
 * transaction, as a swap step makes them; and a file of 1,000,000
 * single-block extents (mapping rate, lookup rate and the blocks one
 * lookup touches).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>
#include "sxtest.h"
#include "bmap.h"
#include "fork.h"
#include "inode.h"
#include "file.h"

#define MIB		(1ull << 20)
#define HOLE		(~0ull)

static u64 seed0 = 0x2545f4914f6cdd1dull;

/* The seed for random tests: SX_TEST_SEED if set. */
static u64 test_seed(void)
{
	const char *s = getenv("SX_TEST_SEED");
	u64 v = seed0;

	if (s && *s)
		v = strtoull(s, NULL, 0) * 0x9e3779b97f4a7c15ull + 1;
	return v ? v : 1;
}

/* Seconds on the monotonic clock. */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A file under test. */
struct tfile {
	struct sx_mount	*mp;
	struct sx_bdev	*bd;
	int		fd;
	struct sx_inode	*ip;
	char		name[16];
};

/* Create (or with @open, open) file @name on @mp and hold its inode. */
static void tf_open(struct tfile *t, struct sx_mount *mp, const char *name, bool create)
{
	t->mp = mp;
	snprintf(t->name, sizeof(t->name), "%s", name);
	if (create)
		assert_int_equal(sx_create(mp, name, SX_IFREG | 0644, &t->fd), 0);
	else
		assert_int_equal(sx_open(mp, name, &t->fd), 0);
	assert_int_equal(sx_fd_get(mp, t->fd, &t->ip), 0);
}

/* Drop the inode and close the file. */
static void tf_close(struct tfile *t)
{
	sx_irele(t->ip);
	assert_int_equal(sx_close(t->mp, t->fd), 0);
}

/* Unmount and mount again; reopen the file. */
static void tf_remount(struct tfile *t)
{
	char name[16];

	snprintf(name, sizeof(name), "%s", t->name);
	tf_close(t);
	assert_int_equal(sx_unmount(t->mp), 0);
	t->mp = sxt_mount(t->bd);
	tf_open(t, t->mp, name, false);
}

/* The transaction reservation of one bmap call plus one allocation or free. */
static u32 op_res(struct tfile *t)
{
	return sx_bmap_res_bytes(t->mp, t->ip) + sx_alloc_res_bytes(t->mp);
}

/* Start a transaction for one bmap call and take the inode lock. */
static struct sx_trans *tf_trans(struct tfile *t)
{
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(t->mp, op_res(t), 0, &tp), 0);
	sx_ilock(t->ip, SX_ILOCK_EXCL);
	return tp;
}

/* Commit it and unlock. */
static void tf_commit(struct tfile *t, struct sx_trans *tp)
{
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_iunlock(t->ip, SX_ILOCK_EXCL);
}

/* Cancel it and unlock. */
static void tf_cancel(struct tfile *t, struct sx_trans *tp)
{
	sx_trans_cancel(tp);
	sx_iunlock(t->ip, SX_ILOCK_EXCL);
}

/* Map (no allocation) in a transaction of its own; returns the error. */
static int tf_map(struct tfile *t, u64 off, u64 bno, u32 len, u32 state)
{
	struct sx_bmap_irec r = { off, bno, len, state };
	struct sx_trans *tp = tf_trans(t);
	int error = sx_bmap_map(tp, t->ip, &r);

	if (error) {
		tf_cancel(t, tp);
		return error;
	}
	tf_commit(t, tp);
	return 0;
}

/* Read-only lookup. */
static struct sx_bmap_irec tf_lookup(struct tfile *t, u64 off)
{
	struct sx_bmap_irec r;

	sx_ilock(t->ip, SX_ILOCK_EXCL);
	assert_int_equal(sx_bmap_lookup(NULL, t->ip, off, &r), 0);
	sx_iunlock(t->ip, SX_ILOCK_EXCL);
	return r;
}

/* Every mapping of the file, in order, into @out (at most @max); returns the count. */
static u64 tf_walk(struct tfile *t, struct sx_bmap_irec *out, u64 max)
{
	struct sx_bmap_irec r;
	u64 n = 0, off = 0;
	bool found;

	sx_ilock(t->ip, SX_ILOCK_EXCL);
	for (;;) {
		assert_int_equal(sx_bmap_next(NULL, t->ip, off, &r, &found), 0);
		if (!found)
			break;
		assert_true(r.br_startoff >= off);
		assert_true(n < max);
		out[n++] = r;
		off = r.br_startoff + r.br_blockcount;
	}
	sx_iunlock(t->ip, SX_ILOCK_EXCL);
	return n;
}

/*
 * sx_bmap_next_n() from random file blocks, for up to three leaves' worth
 * of records (it copies them out a block at a time, so a run crosses the
 * end of a leaf or of the inline fork), against the @n mappings of a walk
 * one at a time.
 */
static void check_next_n(struct tfile *t, const struct sx_bmap_irec *all, u64 n, u64 nblocks,
			 u64 *rs)
{
	u32 cap = 3 * (u32)sx_btree_maxrecs(t->mp, &sx_bmbt_ops, true);
	struct sx_bmap_irec *got = malloc(sizeof(*got) * cap);
	u64 i, j, b;
	u32 want, k, ngot;

	assert_non_null(got);
	sx_ilock(t->ip, SX_ILOCK_EXCL);
	for (i = 0; i < 16; i++) {
		b = sxt_rand(rs) % (nblocks + 1);
		want = 1 + (u32)(sxt_rand(rs) % cap);
		assert_int_equal(sx_bmap_next_n(NULL, t->ip, b, got, want, &ngot), 0);
		/* the first mapping that ends after @b, then those after it */
		for (j = 0; j < n && all[j].br_startoff + all[j].br_blockcount <= b; j++)
			;
		assert_int_equal(ngot, sx_min((u64)want, n - j));
		for (k = 0; k < ngot; k++)
			assert_memory_equal(&got[k], &all[j + k], sizeof(got[k]));
	}
	sx_iunlock(t->ip, SX_ILOCK_EXCL);
	free(got);
}

/* Assert that a mapping is what is expected. */
#define assert_irec(r, off, bno, len, st) do { \
	assert_int_equal((r).br_startoff, (off)); \
	assert_int_equal((r).br_startblock, (bno)); \
	assert_int_equal((r).br_blockcount, (len)); \
	assert_int_equal((r).br_state, (st)); \
} while (0)

/*
 * A new filesystem with one empty file on it.  The log is at least 1 MiB
 * (and the default when that is larger): mkfs gives a small device a log
 * of 256 KiB, whose largest transaction (an eighth) holds only about seven
 * whole 4 KiB blocks, less than one map in a B+tree fork may log in the
 * worst case (a split on two levels in each of two inserts) and less than
 * creating the file needs; these tests are about extent maps, not about
 * logs too small for the block size.
 */
static void tf_setup(struct tfile *t, u64 devsize, u32 bsize)
{
	u32 logblocks = (u32)(MIB / bsize);

	if (devsize / 64 > MIB)
		logblocks = 0;
	t->bd = sxt_memfs(devsize, bsize, logblocks);
	t->mp = sxt_mount(t->bd);
	tf_open(t, t->mp, "f", true);
}

/* Close, unmount and destroy. */
static void tf_teardown(struct tfile *t)
{
	tf_close(t);
	assert_int_equal(sx_unmount(t->mp), 0);
	sx_bdev_destroy(t->bd);
}

/* ------------------------------------------------------------- basics */

/* Lookups of holes and mappings; merges left, right and both; limits. */
static void test_map_lookup_merge(void **state)
{
	struct sx_bmap_irec r, all[16];
	struct tfile t;
	u64 d;

	tf_setup(&t, 16 * MIB, 4096);
	d = t.mp->m_sb.sb_datastart + 1000;

	/* an empty file is one long hole */
	r = tf_lookup(&t, 0);
	assert_irec(r, 0, HOLE, SX_BMAP_MAXLEN, 0);
	r = tf_lookup(&t, ~0ull - 5);
	assert_irec(r, ~0ull - 5, HOLE, 5, 0);
	assert_int_equal(sx_bmap_count(t.ip), 0);

	assert_int_equal(tf_map(&t, 10, d + 10, 5, 0), 0);
	r = tf_lookup(&t, 12);
	assert_irec(r, 10, d + 10, 5, 0);
	r = tf_lookup(&t, 0);
	assert_irec(r, 0, HOLE, 10, 0);
	r = tf_lookup(&t, 15);
	assert_irec(r, 15, HOLE, SX_BMAP_MAXLEN, 0);
	assert_int_equal(t.ip->i_nblocks, 5);

	/* right neighbour continues on disk: merges into one */
	assert_int_equal(tf_map(&t, 15, d + 15, 3, 0), 0);
	assert_int_equal(sx_bmap_count(t.ip), 1);
	r = tf_lookup(&t, 10);
	assert_irec(r, 10, d + 10, 8, 0);
	/* left neighbour: grows backwards */
	assert_int_equal(tf_map(&t, 7, d + 7, 3, 0), 0);
	assert_int_equal(sx_bmap_count(t.ip), 1);
	r = tf_lookup(&t, 17);
	assert_irec(r, 7, d + 7, 11, 0);
	/* not contiguous on disk, different state: separate records */
	assert_int_equal(tf_map(&t, 18, d + 100, 2, 0), 0);
	assert_int_equal(tf_map(&t, 5, d + 5, 2, SX_BMAP_UNWRITTEN), 0);
	assert_int_equal(sx_bmap_count(t.ip), 3);
	/* fill a gap that joins both sides */
	assert_int_equal(tf_map(&t, 30, d + 30, 2, 0), 0);
	assert_int_equal(tf_map(&t, 34, d + 34, 2, 0), 0);
	assert_int_equal(sx_bmap_count(t.ip), 5);
	assert_int_equal(tf_map(&t, 32, d + 32, 2, 0), 0);
	assert_int_equal(sx_bmap_count(t.ip), 4);
	r = tf_lookup(&t, 33);
	assert_irec(r, 30, d + 30, 6, 0);
	assert_int_equal(tf_walk(&t, all, 16), 4);
	assert_irec(all[0], 5, d + 5, 2, SX_BMAP_UNWRITTEN);
	assert_irec(all[1], 7, d + 7, 11, 0);
	assert_irec(all[2], 18, d + 100, 2, 0);
	assert_irec(all[3], 30, d + 30, 6, 0);
	assert_int_equal(t.ip->i_nblocks, 2 + 11 + 2 + 6);

	/* overlaps are refused and change nothing */
	assert_int_equal(tf_map(&t, 17, d + 500, 1, 0), -EFSCORRUPTED);
	assert_int_equal(tf_map(&t, 3, d + 500, 3, 0), -EFSCORRUPTED);
	assert_int_equal(tf_map(&t, 20, d + 500, 11, 0), -EFSCORRUPTED);
	/* bad arguments */
	assert_int_equal(tf_map(&t, 100, d, 0, 0), -EINVAL);
	assert_int_equal(tf_map(&t, 100, d, SX_BMAP_MAXLEN + 1, 0), -EINVAL);
	assert_int_equal(tf_map(&t, 100, d, 1, 4), -EINVAL);
	assert_int_equal(tf_map(&t, 100, HOLE, 1, 0), -EINVAL);
	assert_int_equal(tf_map(&t, 100, 1, 1, 0), -EINVAL);	/* not in the data area */
	assert_int_equal(tf_map(&t, 100, t.mp->m_sb.sb_dblocks - 1, 2, 0), -EINVAL);
	assert_int_equal(tf_map(&t, ~0ull - 1, d, 4, 0), -EINVAL);
	assert_int_equal(tf_walk(&t, all, 16), 4);

	/* it all survives a remount */
	tf_remount(&t);
	assert_int_equal(tf_walk(&t, all, 16), 4);
	assert_irec(all[1], 7, d + 7, 11, 0);
	assert_int_equal(t.ip->i_nblocks, 21);
	tf_teardown(&t);
}

/* Two mappings that would be longer than SX_BMAP_MAXLEN together stay apart. */
static void test_maxlen(void **state)
{
	struct sx_bmap_irec all[4];
	struct tfile t;
	u64 d;

	/* 2 GiB of 512-byte blocks: room for two mappings of SX_BMAP_MAXLEN (sparse) */
	tf_setup(&t, 2048 * MIB, 512);
	d = t.mp->m_sb.sb_datastart;
	assert_int_equal(tf_map(&t, 0, d, SX_BMAP_MAXLEN - 1, 0), 0);
	assert_int_equal(tf_map(&t, SX_BMAP_MAXLEN - 1, d + SX_BMAP_MAXLEN - 1, 1, 0), 0);
	assert_int_equal(sx_bmap_count(t.ip), 1);
	assert_int_equal(tf_map(&t, SX_BMAP_MAXLEN, d + SX_BMAP_MAXLEN, 1, 0), 0);
	assert_int_equal(tf_walk(&t, all, 4), 2);
	assert_irec(all[0], 0, d, SX_BMAP_MAXLEN, 0);
	assert_irec(all[1], SX_BMAP_MAXLEN, d + SX_BMAP_MAXLEN, 1, 0);
	tf_teardown(&t);
}

/* Unmap one piece in a transaction; returns what went. */
static struct sx_bmap_irec tf_unmap(struct tfile *t, u64 off, u64 len)
{
	struct sx_trans *tp = tf_trans(t);
	struct sx_bmap_irec r;

	assert_int_equal(sx_bmap_unmap_one(tp, t->ip, off, len, &r), 0);
	tf_commit(t, tp);
	return r;
}

/* Change the state of one piece in a transaction; returns what changed. */
static struct sx_bmap_irec tf_set_state(struct tfile *t, u64 off, u64 len, u32 st)
{
	struct sx_trans *tp = tf_trans(t);
	struct sx_bmap_irec r;

	assert_int_equal(sx_bmap_set_state_one(tp, t->ip, off, len, st, &r), 0);
	tf_commit(t, tp);
	return r;
}

/* Replace in a transaction; returns what was replaced (HOLE: nothing). */
static struct sx_bmap_irec tf_replace(struct tfile *t, u64 off, u64 bno, u32 len, u32 st)
{
	struct sx_bmap_irec irec = { off, bno, len, st }, r;
	struct sx_trans *tp = tf_trans(t);

	assert_int_equal(sx_bmap_replace_one(tp, t->ip, &irec, &r), 0);
	tf_commit(t, tp);
	return r;
}

/* Unmap splits; set_state splits and merges again. */
static void test_unmap_set_state(void **state)
{
	struct sx_bmap_irec r, all[16];
	struct tfile t;
	u64 d;

	tf_setup(&t, 16 * MIB, 4096);
	d = t.mp->m_sb.sb_datastart + 100;
	assert_int_equal(tf_map(&t, 0, d, 100, 0), 0);

	/* the middle: one mapping becomes two */
	r = tf_unmap(&t, 40, 10);
	assert_irec(r, 40, d + 40, 10, 0);
	assert_int_equal(tf_walk(&t, all, 16), 2);
	assert_irec(all[0], 0, d, 40, 0);
	assert_irec(all[1], 50, d + 50, 50, 0);
	assert_int_equal(t.ip->i_nblocks, 90);
	/* one piece at a time: the first piece in the range only */
	r = tf_unmap(&t, 30, 30);
	assert_irec(r, 30, d + 30, 10, 0);
	r = tf_unmap(&t, 30, 30);
	assert_irec(r, 50, d + 50, 10, 0);
	r = tf_unmap(&t, 30, 30);
	assert_int_equal(r.br_startblock, HOLE);
	assert_int_equal(r.br_blockcount, 0);
	/* the front and the back of a mapping */
	r = tf_unmap(&t, 0, 5);
	assert_irec(r, 0, d, 5, 0);
	r = tf_unmap(&t, 95, ~0ull);
	assert_irec(r, 95, d + 95, 5, 0);
	assert_int_equal(tf_walk(&t, all, 16), 2);
	assert_irec(all[0], 5, d + 5, 25, 0);
	assert_irec(all[1], 60, d + 60, 35, 0);
	assert_int_equal(t.ip->i_nblocks, 60);

	/* state: the middle of [60, 95) becomes unwritten, then written again */
	r = tf_set_state(&t, 70, 10, SX_BMAP_UNWRITTEN);
	assert_irec(r, 70, d + 70, 10, SX_BMAP_UNWRITTEN);
	assert_int_equal(tf_walk(&t, all, 16), 4);
	assert_irec(all[1], 60, d + 60, 10, 0);
	assert_irec(all[2], 70, d + 70, 10, SX_BMAP_UNWRITTEN);
	assert_irec(all[3], 80, d + 80, 15, 0);
	/* written in two steps: the first merges left, the second joins all three */
	r = tf_set_state(&t, 70, 4, 0);
	assert_irec(r, 70, d + 70, 4, 0);
	assert_int_equal(tf_walk(&t, all, 16), 4);
	assert_irec(all[1], 60, d + 60, 14, 0);
	assert_irec(all[2], 74, d + 74, 6, SX_BMAP_UNWRITTEN);
	r = tf_set_state(&t, 60, 100, 0);	/* skips what is written already */
	assert_irec(r, 74, d + 74, 6, 0);
	assert_int_equal(tf_walk(&t, all, 16), 2);
	assert_irec(all[1], 60, d + 60, 35, 0);
	/* nothing left to change */
	r = tf_set_state(&t, 0, 1000, 0);
	assert_int_equal(r.br_blockcount, 0);
	/*
	 * the tail of an unwritten mapping written: it splits off (nothing
	 * after it continues it: [60, 95) starts at 60); then the rest is
	 * written and joins the mappings on both sides
	 */
	assert_int_equal(tf_map(&t, 30, d + 30, 10, SX_BMAP_UNWRITTEN), 0);
	assert_int_equal(tf_walk(&t, all, 16), 3);
	r = tf_set_state(&t, 35, 5, 0);
	assert_irec(r, 35, d + 35, 5, 0);
	assert_int_equal(tf_walk(&t, all, 16), 4);
	assert_irec(all[0], 5, d + 5, 25, 0);
	assert_irec(all[1], 30, d + 30, 5, SX_BMAP_UNWRITTEN);
	assert_irec(all[2], 35, d + 35, 5, 0);
	r = tf_set_state(&t, 30, 5, 0);
	assert_int_equal(tf_walk(&t, all, 16), 2);
	assert_irec(all[0], 5, d + 5, 35, 0);
	assert_int_equal(t.ip->i_nblocks, 35 + 35);
	/* bad state */
	{
		struct sx_trans *tp = tf_trans(&t);

		assert_int_equal(sx_bmap_set_state_one(tp, t.ip, 0, 10, 2, &r), -EINVAL);
		tf_cancel(&t, tp);
	}
	tf_remount(&t);
	assert_int_equal(tf_walk(&t, all, 16), 2);
	assert_irec(all[0], 5, d + 5, 35, 0);
	assert_irec(all[1], 60, d + 60, 35, 0);
	tf_teardown(&t);
}

/*
 * Replace: the middle, the front and the back of a mapping, a whole one
 * that joins both neighbours, a state that keeps it apart, and the ranges
 * no single mapping covers (a hole, two mappings), which change nothing.
 */
static void test_replace(void **state)
{
	struct sx_bmap_irec r, all[16];
	struct tfile t;
	u64 d, e;

	tf_setup(&t, 16 * MIB, 4096);
	d = t.mp->m_sb.sb_datastart + 100;
	e = d + 1000;
	assert_int_equal(tf_map(&t, 0, d, 100, 0), 0);

	/* the middle: three mappings, the new blocks between the old */
	r = tf_replace(&t, 40, e, 10, 0);
	assert_irec(r, 40, d + 40, 10, 0);
	assert_int_equal(tf_walk(&t, all, 16), 3);
	assert_irec(all[0], 0, d, 40, 0);
	assert_irec(all[1], 40, e, 10, 0);
	assert_irec(all[2], 50, d + 50, 50, 0);
	assert_int_equal(t.ip->i_nblocks, 100);
	/* the old blocks back: both neighbours continue them, one mapping again */
	r = tf_replace(&t, 40, d + 40, 10, 0);
	assert_irec(r, 40, e, 10, 0);
	assert_int_equal(tf_walk(&t, all, 16), 1);
	assert_irec(all[0], 0, d, 100, 0);
	/* the front and the back */
	r = tf_replace(&t, 0, e, 5, 0);
	assert_irec(r, 0, d, 5, 0);
	r = tf_replace(&t, 95, e + 95, 5, 0);
	assert_irec(r, 95, d + 95, 5, 0);
	assert_int_equal(tf_walk(&t, all, 16), 3);
	assert_irec(all[0], 0, e, 5, 0);
	assert_irec(all[1], 5, d + 5, 90, 0);
	assert_irec(all[2], 95, e + 95, 5, 0);
	/* a whole mapping, with blocks that continue both neighbours */
	r = tf_replace(&t, 5, e + 5, 90, 0);
	assert_irec(r, 5, d + 5, 90, 0);
	assert_int_equal(tf_walk(&t, all, 16), 1);
	assert_irec(all[0], 0, e, 100, 0);
	/* unwritten blocks do not join written neighbours */
	r = tf_replace(&t, 5, e + 200, 5, SX_BMAP_UNWRITTEN);
	assert_irec(r, 5, e + 5, 5, 0);
	assert_int_equal(tf_walk(&t, all, 16), 3);
	assert_irec(all[0], 0, e, 5, 0);
	assert_irec(all[1], 5, e + 200, 5, SX_BMAP_UNWRITTEN);
	assert_irec(all[2], 10, e + 10, 90, 0);
	/* ... and written ones that continue them do */
	r = tf_replace(&t, 5, e + 5, 5, 0);
	assert_irec(r, 5, e + 200, 5, SX_BMAP_UNWRITTEN);
	assert_int_equal(tf_walk(&t, all, 16), 1);
	assert_irec(all[0], 0, e, 100, 0);
	assert_int_equal(t.ip->i_nblocks, 100);

	/* no single mapping covers: past the end, across the end, across two */
	r = tf_replace(&t, 100, d, 10, 0);
	assert_int_equal(r.br_startblock, HOLE);
	r = tf_replace(&t, 95, d, 10, 0);
	assert_int_equal(r.br_startblock, HOLE);
	r = tf_replace(&t, 40, d, 10, 0);		/* [40, 50) first, to make two */
	assert_irec(r, 40, e + 40, 10, 0);
	r = tf_replace(&t, 45, e + 200, 10, 0);
	assert_int_equal(r.br_startblock, HOLE);
	assert_int_equal(tf_walk(&t, all, 16), 3);
	assert_irec(all[0], 0, e, 40, 0);
	assert_irec(all[1], 40, d, 10, 0);
	assert_irec(all[2], 50, e + 50, 50, 0);
	assert_int_equal(t.ip->i_nblocks, 100);
	/* a bad mapping */
	{
		struct sx_bmap_irec bad = { 0, d, 0, 0 };
		struct sx_trans *tp = tf_trans(&t);

		assert_int_equal(sx_bmap_replace_one(tp, t.ip, &bad, &r), -EINVAL);
		bad.br_blockcount = 1;
		bad.br_state = 2;
		assert_int_equal(sx_bmap_replace_one(tp, t.ip, &bad, &r), -EINVAL);
		/* blocks that overlap the ones they would replace */
		bad.br_startoff = 40;
		bad.br_startblock = d + 1;
		bad.br_blockcount = 2;
		bad.br_state = 0;
		assert_int_equal(sx_bmap_replace_one(tp, t.ip, &bad, &r), -EINVAL);
		assert_int_equal(r.br_startblock, HOLE);
		tf_cancel(&t, tp);
	}
	tf_remount(&t);
	assert_int_equal(tf_walk(&t, all, 16), 3);
	assert_irec(all[1], 40, d, 10, 0);
	tf_teardown(&t);
}

/* ------------------------------------------------------------- model */

/* The expected state of each file block: device block (HOLE) and state. */
struct model {
	u64	n;
	u64	*blk;
	u8	*st;
};

/*
 * Compare the file with the model: the mappings must be exactly the
 * maximal runs of the model (so every merge happened), lookups at random
 * blocks must agree, and the block count must be the data blocks plus the
 * B+tree's.
 */
static void model_check(struct tfile *t, struct model *m, u64 *rs)
{
	struct sx_bmap_irec *all = malloc(sizeof(*all) * (m->n + 1)), r;
	u64 n, i, k = 0, b, data = 0;

	assert_non_null(all);
	n = tf_walk(t, all, m->n + 1);
	for (b = 0; b < m->n;) {
		u64 start = b;

		if (m->blk[b] == HOLE) {
			b++;
			continue;
		}
		while (b + 1 < m->n && m->blk[b + 1] == m->blk[b] + 1 &&
		       m->st[b + 1] == m->st[start])
			b++;
		b++;
		data += b - start;
		if (k >= n)
			fail_msg("model run at %llu missing", (unsigned long long)start);
		if (all[k].br_startoff != start || all[k].br_startblock != m->blk[start] ||
		    all[k].br_blockcount != b - start || all[k].br_state != m->st[start])
			fail_msg("mapping %llu is %llu+%u at %llu st %u; model %llu+%llu at %llu st %u",
				 (unsigned long long)k, (unsigned long long)all[k].br_startoff,
				 all[k].br_blockcount, (unsigned long long)all[k].br_startblock,
				 all[k].br_state, (unsigned long long)start,
				 (unsigned long long)(b - start), (unsigned long long)m->blk[start],
				 m->st[start]);
		k++;
	}
	assert_int_equal(n, k);
	assert_int_equal(sx_bmap_count(t->ip), n);
	check_next_n(t, all, n, m->n, rs);
	for (i = 0; i < 64; i++) {
		b = sxt_rand(rs) % m->n;
		r = tf_lookup(t, b);
		assert_true(r.br_startoff <= b && b < r.br_startoff + r.br_blockcount);
		if (m->blk[b] == HOLE) {
			assert_int_equal(r.br_startblock, HOLE);
		} else {
			assert_int_equal(r.br_startblock + (b - r.br_startoff), m->blk[b]);
			assert_int_equal(r.br_state, m->st[b]);
		}
	}
	if (t->ip->i_format == SX_DIF_INLINE)
		assert_int_equal(t->ip->i_nblocks, data);
	else
		assert_true(t->ip->i_nblocks > data);
	free(all);
}

/*
 * Start a transaction and allocate up to @len blocks for file block @off,
 * next to the blocks of file block @off - 1 when those are mapped (three
 * times in four), so that the new mapping may continue them.
 */
static u64 model_alloc(struct tfile *t, struct model *m, u64 *rs, u64 off, u64 len,
		       struct sx_trans **tpp, u32 *got)
{
	u64 hint = off > 0 && m->blk[off - 1] != HOLE ? m->blk[off - 1] + 1 : 0, bno;

	if (sxt_rand(rs) % 4 == 0)
		hint = 0;
	*tpp = tf_trans(t);
	assert_int_equal(sx_alloc_extent(*tpp, hint, 1, (u32)len, &bno, got), 0);
	return bno;
}

/* Map a random hole piece, with blocks allocated next to its neighbour when free. */
static void model_map(struct tfile *t, struct model *m, u64 *rs)
{
	u64 off = sxt_rand(rs) % m->n, len = 1 + sxt_rand(rs) % 8, bno, i;
	struct sx_bmap_irec r;
	struct sx_trans *tp;
	u32 got;
	int error;

	r = tf_lookup(t, off);
	if (r.br_startblock != HOLE)
		return;
	len = sx_min(len, (u64)r.br_blockcount);
	len = sx_min(len, m->n - off);
	bno = model_alloc(t, m, rs, off, len, &tp, &got);
	r.br_startoff = off;
	r.br_startblock = bno;
	r.br_blockcount = got;
	r.br_state = sxt_rand(rs) % 3 == 0 ? SX_BMAP_UNWRITTEN : 0;
	error = sx_bmap_map(tp, t->ip, &r);
	if (error)
		fail_msg("map %llu+%u at %llu: %d", (unsigned long long)off, got,
			 (unsigned long long)bno, error);
	tf_commit(t, tp);
	for (i = 0; i < got; i++) {
		m->blk[off + i] = bno + i;
		m->st[off + i] = (u8)r.br_state;
	}
}

/*
 * Unmap the first piece of a random range and free its blocks.  With @big
 * (the file is to shrink) the range starts where the first mapping at or
 * after a random block does and covers it: a random range inside a long
 * mapping would split it, and a dense file would only fragment further.
 */
static void model_unmap(struct tfile *t, struct model *m, u64 *rs, bool big)
{
	u64 off = sxt_rand(rs) % m->n, len = 1 + sxt_rand(rs) % 24, b, i;
	struct sx_bmap_irec r;
	struct sx_trans *tp;

	if (big) {
		r = tf_lookup(t, off);
		if (r.br_startblock == SX_HOLE) {
			off += r.br_blockcount;
			if (off >= m->n)
				off = 0;
			r = tf_lookup(t, off);
		}
		off = r.br_startoff;
		len = r.br_blockcount + sxt_rand(rs) % 8;
	}

	tp = tf_trans(t);
	assert_int_equal(sx_bmap_unmap_one(tp, t->ip, off, len, &r), 0);
	for (b = off; b < off + len && b < m->n && m->blk[b] == HOLE; b++)
		;
	if (b >= off + len || b >= m->n) {
		assert_int_equal(r.br_startblock, HOLE);
		tf_cancel(t, tp);
		return;
	}
	assert_int_equal(r.br_startoff, b);
	assert_int_equal(r.br_startblock, m->blk[b]);
	assert_int_equal(sx_free_extent(tp, r.br_startblock, r.br_blockcount), 0);
	tf_commit(t, tp);
	for (i = 0; i < r.br_blockcount; i++) {
		assert_int_equal(m->blk[b + i], r.br_startblock + i);
		m->blk[b + i] = HOLE;
	}
	/* it took the whole piece: the next block is not part of it */
	b += r.br_blockcount;
	if (b < off + len && b < m->n)
		assert_true(m->blk[b] == HOLE || m->blk[b] != r.br_startblock + r.br_blockcount ||
			    m->st[b] != r.br_state);
}

/*
 * Replace a random range with new blocks (next to its neighbour's when
 * free, so that they join it): it must happen exactly when one mapping
 * covers the range, and then hand back that mapping's piece.
 */
static void model_replace(struct tfile *t, struct model *m, u64 *rs)
{
	u64 off = sxt_rand(rs) % m->n, len = 1 + sxt_rand(rs) % 8, bno, b, i;
	struct sx_bmap_irec irec, r;
	struct sx_trans *tp;
	bool one = true;
	u32 got;

	len = sx_min(len, m->n - off);
	bno = model_alloc(t, m, rs, off, len, &tp, &got);
	/* one mapping covers [off, off + got): every block mapped, contiguous, one state */
	for (b = off; b < off + got; b++)
		if (m->blk[b] == HOLE ||
		    (b > off && (m->blk[b] != m->blk[b - 1] + 1 || m->st[b] != m->st[b - 1])))
			one = false;
	irec.br_startoff = off;
	irec.br_startblock = bno;
	irec.br_blockcount = got;
	irec.br_state = sxt_rand(rs) % 3 == 0 ? SX_BMAP_UNWRITTEN : 0;
	assert_int_equal(sx_bmap_replace_one(tp, t->ip, &irec, &r), 0);
	if (!one) {
		assert_int_equal(r.br_startblock, HOLE);
		tf_cancel(t, tp);
		return;
	}
	assert_int_equal(r.br_startoff, off);
	assert_int_equal(r.br_blockcount, got);
	assert_int_equal(r.br_startblock, m->blk[off]);
	assert_int_equal(r.br_state, m->st[off]);
	assert_int_equal(sx_free_extent(tp, r.br_startblock, r.br_blockcount), 0);
	tf_commit(t, tp);
	for (i = 0; i < got; i++) {
		m->blk[off + i] = bno + i;
		m->st[off + i] = (u8)irec.br_state;
	}
}

/* Flip the state of the first differing piece of a random range. */
static void model_state(struct tfile *t, struct model *m, u64 *rs)
{
	u64 off = sxt_rand(rs) % m->n, len = 1 + sxt_rand(rs) % 24, b, i;
	u32 st = sxt_rand(rs) % 2 ? SX_BMAP_UNWRITTEN : 0;
	struct sx_bmap_irec r;

	r = tf_set_state(t, off, len, st);
	for (b = off; b < off + len && b < m->n && (m->blk[b] == HOLE || m->st[b] == st); b++)
		;
	if (b >= off + len || b >= m->n) {
		assert_int_equal(r.br_blockcount, 0);
		return;
	}
	assert_int_equal(r.br_startoff, b);
	assert_int_equal(r.br_startblock, m->blk[b]);
	assert_int_equal(r.br_state, st);
	for (i = 0; i < r.br_blockcount; i++) {
		assert_int_equal(m->blk[b + i], r.br_startblock + i);
		assert_int_not_equal(m->st[b + i], st);
		m->st[b + i] = (u8)st;
	}
}

/*
 * Random maps, unmaps and state changes against the model.  The mix drifts
 * between growing and shrinking, so the fork crosses the inline/B+tree
 * boundary both ways, many times; remounts now and then.
 */
static void random_run(u32 bsize, u64 nblocks, u64 nops, u32 min_crossings, u32 replace_pct)
{
	struct model m;
	struct tfile t;
	u64 rs = test_seed() ^ bsize, i, free0, to_tree = 0, to_inline = 0;
	u32 inl, prev;
	bool grow = true;

	tf_setup(&t, 64 * MIB, bsize);
	inl = sx_fork_inline_max(t.mp, &sx_bmap_fork_ops);
	free0 = sx_alloc_free_blocks(t.mp);
	m.n = nblocks;
	m.blk = malloc(sizeof(*m.blk) * nblocks);
	m.st = calloc(1, nblocks);
	assert_non_null(m.blk);
	assert_non_null(m.st);
	for (i = 0; i < nblocks; i++)
		m.blk[i] = HOLE;
	prev = t.ip->i_format;
	for (i = 0; i < nops; i++) {
		u64 r = sxt_rand(&rs) % 100, count = sx_bmap_count(t.ip);

		/* drift: grow to a few times the inline size, shrink to a few records */
		if (grow && count > 3 * inl + (sxt_rand(&rs) % (8 * inl)))
			grow = false;
		else if (!grow && count < 1 + sxt_rand(&rs) % (inl / 2 + 1))
			grow = true;
		if (replace_pct && sxt_rand(&rs) % 100 < replace_pct)
			model_replace(&t, &m, &rs);
		else if (r < (grow ? 55u : 20u))
			model_map(&t, &m, &rs);
		else if (r < 80)
			model_unmap(&t, &m, &rs, !grow);
		else
			model_state(&t, &m, &rs);
		if (t.ip->i_format != prev) {
			if (t.ip->i_format == SX_DIF_BTREE)
				to_tree++;
			else
				to_inline++;
			prev = t.ip->i_format;
		}
		if (i % 257 == 0)
			model_check(&t, &m, &rs);
		if (i % 5000 == 4999) {
			tf_remount(&t);
			model_check(&t, &m, &rs);
			prev = t.ip->i_format;
		}
	}
	model_check(&t, &m, &rs);
	printf("bmap random %u-byte blocks: %llu ops, %llu mappings at the end, inline max %u, "
	       "%llu conversions to a B+tree and %llu back inline\n", bsize,
	       (unsigned long long)nops, (unsigned long long)sx_bmap_count(t.ip), inl,
	       (unsigned long long)to_tree, (unsigned long long)to_inline);
	assert_true(to_tree >= min_crossings);
	assert_true(to_inline >= min_crossings);
	/* unmap everything: the fork goes back inline and every block is free again */
	for (;;) {
		struct sx_trans *tp = tf_trans(&t);
		struct sx_bmap_irec r;

		assert_int_equal(sx_bmap_unmap_one(tp, t.ip, 0, ~0ull, &r), 0);
		if (r.br_startblock == HOLE) {
			tf_cancel(&t, tp);
			break;
		}
		assert_int_equal(sx_free_extent(tp, r.br_startblock, r.br_blockcount), 0);
		tf_commit(&t, tp);
	}
	assert_int_equal(sx_bmap_count(t.ip), 0);
	assert_int_equal(t.ip->i_format, SX_DIF_INLINE);
	assert_int_equal(t.ip->i_nblocks, 0);
	assert_int_equal(sx_alloc_free_blocks(t.mp), free0);
	free(m.blk);
	free(m.st);
	tf_teardown(&t);
}

static void test_random_512(void **state)
{
	random_run(512, 6000, 40000, 10, 0);
}

static void test_random_4096(void **state)
{
	random_run(4096, 60000, 40000, 3, 0);
}

/* The same workload with a quarter of the operations replaces. */
static void test_random_replace(void **state)
{
	random_run(512, 6000, 40000, 10, 25);
}

/*
 * Drive one file across the boundary on purpose: map single blocks until
 * the fork converts, unmap until it goes back, many times; check it all
 * each time, and once after a remount.
 */
static void test_boundary(void **state)
{
	struct tfile t;
	struct model m;
	u64 rs = test_seed(), d, i, next = 0, round;
	u32 inl;

	tf_setup(&t, 16 * MIB, 1024);
	inl = sx_fork_inline_max(t.mp, &sx_bmap_fork_ops);
	m.n = 4 * inl + 8;
	m.blk = malloc(sizeof(*m.blk) * m.n);
	m.st = calloc(1, m.n);
	for (i = 0; i < m.n; i++)
		m.blk[i] = HOLE;
	d = t.mp->m_sb.sb_datastart + 64;
	for (round = 0; round < 60; round++) {
		/* grow: every other file block, so nothing merges */
		while (t.ip->i_format == SX_DIF_INLINE) {
			assert_true(next < m.n / 2);
			assert_int_equal(tf_map(&t, 2 * next, d + 2 * next, 1, 0), 0);
			m.blk[2 * next] = d + 2 * next;
			next++;
		}
		assert_int_equal(sx_bmap_count(t.ip), inl + 1);
		model_check(&t, &m, &rs);
		/* shrink from the front until it is inline again */
		while (t.ip->i_format == SX_DIF_BTREE) {
			struct sx_bmap_irec r = tf_unmap(&t, 0, ~0ull);

			assert_int_not_equal(r.br_startblock, HOLE);
			m.blk[r.br_startoff] = HOLE;
		}
		assert_true(sx_bmap_count(t.ip) <= inl / 2 + 1);
		model_check(&t, &m, &rs);
		if (round == 30) {
			tf_remount(&t);
			model_check(&t, &m, &rs);
		}
		/* and start over from nothing */
		while (sx_bmap_count(t.ip)) {
			struct sx_bmap_irec r = tf_unmap(&t, 0, ~0ull);

			m.blk[r.br_startoff] = HOLE;
		}
		assert_int_equal(t.ip->i_nblocks, 0);
		next = 0;
	}
	free(m.blk);
	free(m.st);
	tf_teardown(&t);
}

/*
 * A swap step's way of changing a fork: many maps and unmaps in one
 * transaction through one kept cursor (the *_cur calls), moving along the
 * file a few blocks at a time and now and then back, so that most finds
 * start from where the cursor stands and some must look the place up.
 * Against the model; the blocks are the test's (no allocator), as in
 * test_boundary.
 */
static void test_kept_cursor(void **state)
{
	struct tfile t;
	struct model m;
	u64 rs = test_seed(), d, d2, i, off, round, nops = 0, back = 0;

	tf_setup(&t, 64 * MIB, 1024);
	m.n = 12000;
	m.blk = malloc(sizeof(*m.blk) * m.n);
	m.st = calloc(1, m.n);
	assert_non_null(m.blk);
	assert_non_null(m.st);
	for (i = 0; i < m.n; i++)
		m.blk[i] = HOLE;
	/* every other block: a B+tree of single-block mappings */
	d = t.mp->m_sb.sb_datastart + 64;
	d2 = d + m.n + 64;
	for (i = 0; i < m.n; i += 2) {
		assert_int_equal(tf_map(&t, i, d + i, 1, 0), 0);
		m.blk[i] = d + i;
	}
	assert_int_equal(t.ip->i_format, SX_DIF_BTREE);
	model_check(&t, &m, &rs);
	for (round = 0; round < 40; round++) {
		struct sx_fork_cur fc;
		struct sx_trans *tp;

		assert_int_equal(sx_trans_alloc(t.mp, sx_log_max_trans_bytes(t.mp) / 2, 0, &tp), 0);
		sx_ilock(t.ip, SX_ILOCK_EXCL);
		sx_fork_cur_init(&fc, t.ip, tp, &sx_bmap_fork_ops);
		off = sxt_rand(&rs) % m.n;
		/* while there is room for one more change at its worst, as a step goes on */
		for (i = 0; i < 4000 && tp->t_bytes + sx_bmap_res_bytes(t.mp, t.ip) <= tp->t_res_bytes;
		     i++) {
			struct sx_bmap_irec r;

			if (sxt_rand(&rs) % 10 == 0) {
				u64 j = 1 + sxt_rand(&rs) % 40;

				off = off > j ? off - j : 0;
				back++;
			} else {
				off = (off + 1 + sxt_rand(&rs) % 3) % m.n;
			}
			if (m.blk[off] == HOLE) {
				r.br_startoff = off;
				/* one block of its own per file block: neighbours merge */
				r.br_startblock = d2 + off;
				r.br_blockcount = 1;
				r.br_state = 0;
				assert_int_equal(sx_bmap_map_nocharge_cur(&fc, &r), 0);
				m.blk[off] = r.br_startblock;
				t.ip->i_nblocks++;
			} else {
				assert_int_equal(sx_bmap_unmap_one_nocharge_cur(&fc, off, 1, &r), 0);
				assert_int_equal(r.br_startoff, off);
				assert_int_equal(r.br_blockcount, 1);
				assert_int_equal(r.br_startblock, m.blk[off]);
				m.blk[off] = HOLE;
				t.ip->i_nblocks--;
			}
			nops++;
		}
		sx_fork_cur_release(&fc);
		assert_int_equal(sx_inode_log(tp, t.ip), 0);
		tf_commit(&t, tp);
		if (round % 8 == 7)
			model_check(&t, &m, &rs);
	}
	model_check(&t, &m, &rs);
	printf("bmap kept cursor: %llu changes in 40 transactions, %llu steps back\n",
	       (unsigned long long)nops, (unsigned long long)back);
	assert_true(nops > 40 * 50);
	free(m.blk);
	free(m.st);
	tf_teardown(&t);
}

/* ------------------------------------------------------------- a million */

#define MILLION		1000000ull

/*
 * 1,000,000 single-block extents.  File block i maps device block
 * base + (i ^ 1): neighbours in the file are never neighbours on disk in
 * the same order, so nothing merges, and the blocks come from a few large
 * allocations.  Maps are batched so each transaction nearly fills the
 * largest reservation; then random lookups, with the buffer cache counting
 * the blocks each touches.
 */
static void test_million(void **state)
{
	struct sx_bcache_stats b0, b1;
	struct sx_bmap_irec r;
	struct sx_trans *tp;
	struct tfile t;
	u64 rs = test_seed(), base = 0, have = 0, i, bno, nlook = 200000;
	u32 got, per, inres, k, maxlev;
	double t0, t1, t2;
	int error;

	/* 4 KiB blocks: 1M data blocks and the tree; the memory device is sparse */
	tf_setup(&t, 4608 * MIB, 4096);
	inres = sx_bmap_res_bytes(t.mp, t.ip);
	per = sx_log_max_trans_bytes(t.mp) / (2 * inres + 2 * sx_alloc_res_bytes(t.mp));
	per = sx_max(per, 1u);
	t0 = now_s();
	for (i = 0; i < MILLION;) {
		assert_int_equal(sx_trans_alloc(t.mp, per * inres + 2 * sx_alloc_res_bytes(t.mp),
						0, &tp), 0);
		sx_ilock(t.ip, SX_ILOCK_EXCL);
		for (k = 0; k < per && i < MILLION; k++, i++) {
			if (have == 0) {
				u64 want = sx_min((u64)sx_alloc_max_extent(t.mp), MILLION - i);

				want &= ~1ull;
				error = sx_alloc_extent(tp, 0, (u32)want, (u32)want, &base, &got);
				assert_int_equal(error, 0);
				have = got;
			}
			bno = base + ((i % 2) ? 0 : 1);
			r.br_startoff = i;
			r.br_startblock = bno;
			r.br_blockcount = 1;
			r.br_state = 0;
			error = sx_bmap_map(tp, t.ip, &r);
			if (error)
				fail_msg("map %llu: %d", (unsigned long long)i, error);
			if (i % 2) {
				base += 2;
				have -= 2;
			}
		}
		assert_int_equal(sx_trans_commit(tp), 0);
		sx_iunlock(t.ip, SX_ILOCK_EXCL);
	}
	t1 = now_s();
	assert_int_equal(sx_bmap_count(t.ip), MILLION);
	maxlev = t.ip->i_blevel + 1;

	sx_bcache_get_stats(t.mp, &b0);
	sx_ilock(t.ip, SX_ILOCK_EXCL);
	for (i = 0; i < nlook; i++) {
		u64 b = sxt_rand(&rs) % MILLION;

		assert_int_equal(sx_bmap_lookup(NULL, t.ip, b, &r), 0);
		if (r.br_startoff != b || r.br_blockcount != 1)
			fail_msg("lookup %llu", (unsigned long long)b);
	}
	sx_iunlock(t.ip, SX_ILOCK_EXCL);
	t2 = now_s();
	sx_bcache_get_stats(t.mp, &b1);
	printf("bmap: 1,000,000 single-block extents mapped in %.2f s (%.0f extents/s, %u per "
	       "transaction), B+tree height %u, %llu blocks charged\n", t1 - t0,
	       MILLION / (t1 - t0), per, maxlev, (unsigned long long)t.ip->i_nblocks);
	printf("bmap: %llu random lookups in %.2f s (%.0f lookups/s, %.2f buffer gets each)\n",
	       (unsigned long long)nlook, t2 - t1, nlook / (t2 - t1),
	       (double)(b1.bs_hits + b1.bs_misses - b0.bs_hits - b0.bs_misses) / nlook);
	/* O(log n): a lookup reads the path from the root and at most a neighbour leaf */
	assert_true(b1.bs_hits + b1.bs_misses - b0.bs_hits - b0.bs_misses <=
		    nlook * (maxlev + 3));
	/* a hole lookup past the end, and the last extent, after a remount */
	tf_remount(&t);
	r = tf_lookup(&t, MILLION - 1);
	assert_irec(r, MILLION - 1, r.br_startblock, 1, 0);
	r = tf_lookup(&t, MILLION);
	assert_int_equal(r.br_startblock, HOLE);
	assert_int_equal(sx_bmap_count(t.ip), MILLION);
	tf_teardown(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_lookup_merge),
		cmocka_unit_test(test_maxlen),
		cmocka_unit_test(test_unmap_set_state),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_boundary),
		cmocka_unit_test(test_kept_cursor),
		cmocka_unit_test(test_random_512),
		cmocka_unit_test(test_random_4096),
		cmocka_unit_test(test_random_replace),
		cmocka_unit_test(test_million),
	};

	sx_thread_enter();
	sxt_quiet();
	printf("# seed %llu\n", (unsigned long long)test_seed());
	return cmocka_run_group_tests(tests, NULL, NULL);
}
