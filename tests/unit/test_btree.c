// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * B+tree tests, on a test tree type of 16-byte {key, value} records whose
 * root lives in a test root block: random insert/delete/lookup/next/prev
 * against a model (duplicate keys included) at 512- and 4096-byte blocks,
 * long runs of equal keys (also read a run of records at a time), a
 * million-record build, update, persistence across unmount and crash,
 * ENOSPC in a split, and corrupted blocks.
 * After changes every block of the tree is checked by an independent walk:
 * verifier, exact parent keys, sibling chains, fill, block count.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>
#include "sxtest.h"
#include "btree.h"

#define MIB		(1ull << 20)
#define TBT_MAGIC	0x54425854u	/* "TXBT" */
#define TROOT_MAGIC	0x52545854u	/* "TXTR" */
#define TOWNER		77
#define BAD_VAL		0xbad0bad0bad0bad0ull	/* a value the record verifier refuses */
#define TBIG_MAGIC	0x47425854u	/* "TXBG": tree of big records */
#define BIG_RECSIZE	280		/* a directory record's size: one per 512-byte leaf */
#define MAX_RECSIZE	512

struct trec {
	__le64	key;
	__le64	val;
};

/* The test root block: where the tree is, and how many blocks it has. */
struct dtroot {
	struct sx_dblk_hdr tr_hdr;
	__le64	tr_root;
	__le32	tr_nlevels;
	__le32	tr_pad;
	__le64	tr_nblocks;
};

/* A tree under test. */
struct ttree {
	const struct sx_btree_ops *ops;
	struct sx_mount	*mp;
	u64		rootblk;
	u64		root;
	u32		nlevels;
	s64		nblocks;
};

static u64 seed0 = 0x9e3779b97f4a7c15ull;

/* ---------------------------------------------------------------- tree type */

static u64 trec_key(const void *rec)
{
	return le64_to_cpu(((const struct trec *)rec)->key);
}

static int trec_verify(struct sx_mount *mp, const void *rec)
{
	if (SX_IS_CORRUPT(mp, le64_to_cpu(((const struct trec *)rec)->val) == BAD_VAL))
		return -EFSCORRUPTED;
	return 0;
}

static int troot_write(struct sx_trans *tp, struct ttree *t);

static int tbt_set_root(struct sx_btree_cur *cur, u64 root, u32 nlevels)
{
	struct ttree *t = cur->bc_priv;

	t->root = root;
	t->nlevels = nlevels;
	return troot_write(cur->bc_tp, t);
}

static void tbt_charge(struct sx_btree_cur *cur, s64 delta)
{
	struct ttree *t = cur->bc_priv;

	t->nblocks += delta;
}

static const struct sx_btree_ops tbt_ops;

static int tbt_verify(struct sx_mount *mp, const void *data)
{
	return sx_btree_verify_block(mp, data, &tbt_ops);
}

static const struct sx_buf_ops tbt_buf_ops = {
	.bo_name = "testbt",
	.bo_magic = TBT_MAGIC,
	.bo_verify = tbt_verify,
};

static const struct sx_btree_ops tbt_ops = {
	.bo_name = "testbt",
	.bo_magic = TBT_MAGIC,
	.bo_recsize = sizeof(struct trec),
	.bo_buf_ops = &tbt_buf_ops,
	.bo_key = trec_key,
	.bo_verify_rec = trec_verify,
	.bo_set_root = tbt_set_root,
	.bo_charge = tbt_charge,
};

/* Records of BIG_RECSIZE bytes: a struct trec, then bytes derived from the value. */
static const struct sx_btree_ops tbig_ops;

static int tbig_verify(struct sx_mount *mp, const void *data)
{
	return sx_btree_verify_block(mp, data, &tbig_ops);
}

static const struct sx_buf_ops tbig_buf_ops = {
	.bo_name = "testbig",
	.bo_magic = TBIG_MAGIC,
	.bo_verify = tbig_verify,
};

static const struct sx_btree_ops tbig_ops = {
	.bo_name = "testbig",
	.bo_magic = TBIG_MAGIC,
	.bo_recsize = BIG_RECSIZE,
	.bo_buf_ops = &tbig_buf_ops,
	.bo_key = trec_key,
	.bo_verify_rec = trec_verify,
	.bo_set_root = tbt_set_root,
	.bo_charge = tbt_charge,
};

/* Fill a whole record of @rs bytes for {key, val}. */
static void fill_rec(void *buf, u32 rs, u64 key, u64 val)
{
	struct trec *r = buf;
	u32 j;

	r->key = cpu_to_le64(key);
	r->val = cpu_to_le64(val);
	for (j = sizeof(*r); j < rs; j++)
		((u8 *)buf)[j] = (u8)(val * 7 + j);
}

/* A whole record of @rs bytes must be @want with the right fill. */
static void check_rec(const void *buf, u32 rs, const struct trec *want)
{
	u8 full[MAX_RECSIZE];

	fill_rec(full, rs, le64_to_cpu(want->key), le64_to_cpu(want->val));
	assert_memory_equal(buf, full, rs);
}

static int troot_verify(struct sx_mount *mp, const void *data)
{
	const struct dtroot *r = data;

	if (SX_IS_CORRUPT(mp, le32_to_cpu(r->tr_nlevels) > SX_BTREE_MAXLEVELS))
		return -EFSCORRUPTED;
	return 0;
}

static const struct sx_buf_ops troot_ops = {
	.bo_name = "testroot",
	.bo_magic = TROOT_MAGIC,
	.bo_verify = troot_verify,
};

/* Write the tree's root, height and block count into its root block. */
static int troot_write(struct sx_trans *tp, struct ttree *t)
{
	struct sx_buf *bp;
	struct dtroot *r;
	int error;

	error = sx_trans_read_buf(tp, t->rootblk, &troot_ops, 0, &bp);
	if (error)
		return error;
	r = bp->b_data;
	if (le64_to_cpu(r->tr_root) == t->root && le32_to_cpu(r->tr_nlevels) == t->nlevels &&
	    le64_to_cpu(r->tr_nblocks) == (u64)t->nblocks)
		return 0;
	r->tr_root = cpu_to_le64(t->root);
	r->tr_nlevels = cpu_to_le32(t->nlevels);
	r->tr_nblocks = cpu_to_le64(t->nblocks);
	return sx_trans_log_buf(tp, bp, offsetof(struct dtroot, tr_root), sizeof(*r) - 1);
}

/* Make an empty tree with a new root block. */
static void ttree_create(struct ttree *t, struct sx_mount *mp)
{
	struct sx_trans *tp;
	struct sx_buf *bp;
	u32 len;

	memset(t, 0, sizeof(*t));
	t->mp = mp;
	t->ops = &tbt_ops;
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp) + sx_alloc_res_bytes(mp),
					0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 1, 1, &t->rootblk, &len), 0);
	assert_int_equal(sx_trans_get_buf(tp, t->rootblk, &troot_ops, 0, &bp), 0);
	memset(bp->b_data, 0, mp->m_bsize);
	sx_buf_init_hdr(mp, bp, TROOT_MAGIC, 0);
	assert_int_equal(sx_trans_log_buf(tp, bp, 0, mp->m_bsize - 1), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
}

/* Find the tree again from its root block (after a remount). */
static void ttree_open(struct ttree *t, struct sx_mount *mp, u64 rootblk)
{
	struct sx_buf *bp;
	struct dtroot *r;

	memset(t, 0, sizeof(*t));
	t->mp = mp;
	t->ops = &tbt_ops;
	t->rootblk = rootblk;
	assert_int_equal(sx_buf_read(mp, rootblk, &troot_ops, 0, &bp), 0);
	r = bp->b_data;
	t->root = le64_to_cpu(r->tr_root);
	t->nlevels = le32_to_cpu(r->tr_nlevels);
	t->nblocks = (s64)le64_to_cpu(r->tr_nblocks);
	sx_buf_relse(bp);
}

static void mkrec(struct trec *r, u64 key, u64 val)
{
	r->key = cpu_to_le64(key);
	r->val = cpu_to_le64(val);
}

/* Cursor on @t in @tp (NULL: read-only). */
static void tcur(struct sx_btree_cur *cur, struct ttree *t, struct sx_trans *tp)
{
	sx_btree_cur_init(cur, t->mp, tp, t->ops, TOWNER, t->root, t->nlevels, t);
	cur->bc_hint = t->mp->m_sb.sb_datastart;
}

/* Start a transaction big enough for one tree change. */
static int tstart(struct ttree *t, struct sx_trans **tpp)
{
	return sx_trans_alloc(t->mp, sx_btree_res_bytes(t->mp, t->nlevels) +
			      sx_trans_buf_bytes(t->mp), 0, tpp);
}

/* Finish an operation: commit on success, cancel and restore on error. */
static int tfinish(struct ttree *t, const struct ttree *saved, struct sx_trans *tp,
		   struct sx_btree_cur *cur, int error)
{
	sx_btree_cur_release(cur);
	if (!error)
		error = troot_write(tp, t);
	if (error) {
		sx_trans_cancel(tp);
		*t = *saved;
		return error;
	}
	return sx_trans_commit(tp);
}

/* Insert {key, val} in its own transaction; the cursor must land on it. */
static int t_insert(struct ttree *t, u64 key, u64 val)
{
	struct ttree saved = *t;
	struct sx_btree_cur cur;
	struct sx_trans *tp;
	u8 r[MAX_RECSIZE], got[MAX_RECSIZE];
	u32 rs = t->ops->bo_recsize;
	int error;

	error = tstart(t, &tp);
	if (error)
		return error;
	tcur(&cur, t, tp);
	fill_rec(r, rs, key, val);
	error = sx_btree_insert(&cur, r);
	if (!error) {
		assert_int_equal(sx_btree_get(&cur, got), 0);
		assert_memory_equal(got, r, rs);
		assert_int_equal(cur.bc_root, t->root);
		assert_int_equal(cur.bc_nlevels, t->nlevels);
	}
	return tfinish(t, &saved, tp, &cur, error);
}

/*
 * Delete the @skip-th record with key @key in its own transaction; it must
 * have value @val; the follower must be *@next (@has_next false: none).
 */
static int t_delete(struct ttree *t, u64 key, u32 skip, u64 val, const struct trec *next)
{
	struct ttree saved = *t;
	struct sx_btree_cur cur;
	struct sx_trans *tp;
	u8 buf[MAX_RECSIZE];
	struct trec *got = (struct trec *)buf, want;
	u32 i, rs = t->ops->bo_recsize;
	bool found;
	int error;

	error = tstart(t, &tp);
	if (error)
		return error;
	tcur(&cur, t, tp);
	error = sx_btree_lookup(&cur, key, SX_BT_GE, &found);
	for (i = 0; !error && i < skip; i++) {
		assert_true(found);
		error = sx_btree_next(&cur, &found);
	}
	if (!error) {
		assert_true(found);
		assert_int_equal(sx_btree_get(&cur, buf), 0);
		mkrec(&want, key, val);
		check_rec(buf, rs, &want);
		error = sx_btree_delete(&cur, &found);
	}
	if (!error) {
		assert_int_equal(found, next != NULL);
		if (next) {
			assert_int_equal(sx_btree_get(&cur, buf), 0);
			check_rec(buf, rs, next);
			assert_int_equal(got->key, next->key);
		}
	}
	return tfinish(t, &saved, tp, &cur, error);
}

/* ---------------------------------------------------------------- checker */

struct walk {
	struct ttree	*t;
	u64		blocks;
	u64		leaves;
	u64		prev_at[SX_BTREE_MAXLEVELS];	/* last block seen per level */
	struct trec	*recs;				/* records in order, if wanted */
	u64		nrecs, cap;
};

/*
 * Check the subtree at @bno (level @level): every block verified and
 * allocated, parent key = first key, keys within [@lo, @hi], sibling chain
 * in walk order, fill of non-root blocks.
 */
static void walk_block(struct walk *w, u64 bno, u32 level, bool is_root, u64 lo, u64 hi,
		       bool has_hi, u64 *firstkey)
{
	struct sx_mount *mp = w->t->mp;
	const struct sx_btree_ops *ops = w->t->ops;
	u32 nmax = sx_btree_maxrecs(mp, ops, false), lmax = sx_btree_maxrecs(mp, ops, true);
	struct sx_dbtree_block *b;
	struct sx_buf *bp;
	u64 *keys = NULL, *ptrs = NULL, key;
	u32 n, i;
	bool isfree;

	assert_int_equal(sx_buf_read(mp, bno, ops->bo_buf_ops, TOWNER, &bp), 0);
	assert_int_equal(sx_alloc_is_free(mp, bno, &isfree), 0);
	assert_false(isfree);
	b = bp->b_data;
	n = le16_to_cpu(b->bt_numrecs);
	assert_int_equal(le16_to_cpu(b->bt_level), level);
	assert_int_equal(le64_to_cpu(b->bt_leftsib), w->prev_at[level]);
	w->prev_at[level] = bno;
	w->blocks++;
	if (is_root)
		assert_true(level == 0 ? n >= 1 : n >= 2);
	else
		assert_true(n >= (level ? nmax : lmax) / 2 && n >= 1);
	if (level == 0) {
		w->leaves++;
		for (i = 0; i < n; i++) {
			struct trec *r = (struct trec *)((u8 *)b + sizeof(*b) + i * ops->bo_recsize);

			check_rec(r, ops->bo_recsize, r);
			key = le64_to_cpu(r->key);
			assert_true(key >= lo);
			if (has_hi)
				assert_true(key <= hi);
			if (i == 0)
				*firstkey = key;
			if (w->recs) {
				assert_true(w->nrecs < w->cap);
				w->recs[w->nrecs] = *r;
			}
			w->nrecs++;
		}
		sx_buf_relse(bp);
		return;
	}
	keys = calloc(n + 1, sizeof(u64));
	ptrs = calloc(n + 1, sizeof(u64));
	for (i = 0; i < n; i++) {
		keys[i] = le64_to_cpu(((__le64 *)((u8 *)b + sizeof(*b)))[i]);
		ptrs[i] = le64_to_cpu(((__le64 *)((u8 *)b + sizeof(*b)))[nmax + i]);
	}
	sx_buf_relse(bp);
	*firstkey = keys[0];
	assert_true(keys[0] >= lo);
	for (i = 0; i < n; i++) {
		u64 fk = 0;

		walk_block(w, ptrs[i], level - 1, false, keys[i],
			   i + 1 < n ? keys[i + 1] : hi, i + 1 < n || has_hi, &fk);
		assert_int_equal(fk, keys[i]);		/* exact: smallest key below */
	}
	free(keys);
	free(ptrs);
}

/*
 * Check the whole tree; collect its records into *@recs (malloc'ed) if
 * given; return its number of leaves.
 */
static u64 check_tree(struct ttree *t, struct trec **recs, u64 *nrecs)
{
	struct walk w;
	struct sx_mount *mp = t->mp;
	u64 fk = 0, bno;
	u32 l;

	memset(&w, 0, sizeof(w));
	w.t = t;
	if (recs) {
		w.cap = 1;
		/* a generous bound: every leaf full */
		w.cap = (u64)(t->nblocks + 1) * sx_btree_maxrecs(mp, t->ops, true);
		w.recs = malloc(sizeof(struct trec) * (w.cap + 1));
	}
	if (t->nlevels == 0) {
		assert_int_equal(t->root, 0);
		assert_int_equal(t->nblocks, 0);
	} else {
		walk_block(&w, t->root, t->nlevels - 1, true, 0, 0, false, &fk);
		/* each level ends its chain with a zero right sibling */
		for (l = 0; l < t->nlevels; l++) {
			struct sx_buf *bp;

			bno = w.prev_at[l];
			assert_int_not_equal(bno, 0);
			assert_int_equal(sx_buf_read(mp, bno, t->ops->bo_buf_ops, TOWNER, &bp), 0);
			assert_int_equal(((struct sx_dbtree_block *)bp->b_data)->bt_rightsib, 0);
			sx_buf_relse(bp);
		}
		assert_int_equal(w.blocks, (u64)t->nblocks);
	}
	if (recs) {
		*recs = w.recs;
		*nrecs = w.nrecs;
	} else if (nrecs) {
		*nrecs = w.nrecs;
	}
	return w.leaves;
}

/* Iterate the tree read-only (first/next, then prev back) and compare with @want. */
static void check_iter(struct ttree *t, const struct trec *want, u64 n)
{
	struct sx_btree_cur cur;
	u8 got[MAX_RECSIZE];
	u32 rs = t->ops->bo_recsize;
	bool found;
	u64 i = 0;

	tcur(&cur, t, NULL);
	assert_int_equal(sx_btree_first(&cur, &found), 0);
	while (found) {
		assert_true(i < n);
		assert_int_equal(sx_btree_get(&cur, got), 0);
		check_rec(got, rs, &want[i]);
		i++;
		assert_int_equal(sx_btree_next(&cur, &found), 0);
	}
	assert_int_equal(i, n);
	if (n) {
		/* and back from the last one */
		assert_int_equal(sx_btree_lookup(&cur, ~0ull, SX_BT_LE, &found), 0);
		assert_true(found);
		for (i = n; found; ) {
			assert_true(i > 0);
			i--;
			assert_int_equal(sx_btree_get(&cur, got), 0);
			check_rec(got, rs, &want[i]);
			assert_int_equal(sx_btree_prev(&cur, &found), 0);
		}
		assert_int_equal(i, 0);
	}
	sx_btree_cur_release(&cur);
}

/* ---------------------------------------------------------------- the model */

/*
 * Records as (key index, value) with values increasing in insertion order,
 * so the tree's order is (key, value): per key index a growing array of
 * values and a bitmap of key indexes in use, plus a list of live records to
 * pick deletions from.
 */
struct mgroup {
	u64	*vals;
	u32	n, cap;
};

struct model {
	u32		K;
	u64		mult;		/* key = index * mult */
	u64		*bits;
	struct mgroup	*g;
	u32		(*live)[2];	/* key index, position hint unused */
	u64		*live_val;
	u64		nlive, cap;
	u64		nextval;
};

static void model_init(struct model *m, u32 K, u64 cap)
{
	memset(m, 0, sizeof(*m));
	m->K = K;
	m->mult = ~0ull / (K - 1);
	m->bits = calloc((K + 63) / 64, sizeof(u64));
	m->g = calloc(K, sizeof(*m->g));
	m->live = malloc(sizeof(*m->live) * cap);
	m->live_val = malloc(sizeof(u64) * cap);
	m->cap = cap;
	m->nextval = 1;
}

static void model_free(struct model *m)
{
	u32 i;

	for (i = 0; i < m->K; i++)
		free(m->g[i].vals);
	free(m->g);
	free(m->bits);
	free(m->live);
	free(m->live_val);
}

static u64 mkey(const struct model *m, u32 k)
{
	return (u64)k * m->mult;
}

/* First key index >= @k in use, or K. */
static u32 model_next_set(const struct model *m, u64 k)
{
	u64 w;

	if (k >= m->K)
		return m->K;
	w = m->bits[k / 64] & (~0ull << (k % 64));
	k -= k % 64;
	while (!w) {
		k += 64;
		if (k >= m->K)
			return m->K;
		w = m->bits[k / 64];
	}
	return (u32)(k + __builtin_ctzll(w));
}

/* Last key index <= @k in use, or -1. */
static s64 model_prev_set(const struct model *m, s64 k)
{
	u64 w;

	if (k < 0)
		return -1;
	w = m->bits[k / 64] & (~0ull >> (63 - k % 64));
	k -= k % 64;
	while (!w) {
		k -= 64;
		if (k < 0)
			return -1;
		w = m->bits[k / 64];
	}
	return k + 63 - __builtin_clzll(w);
}

static void model_insert(struct model *m, u32 k, u64 val)
{
	struct mgroup *g = &m->g[k];

	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 2;
		g->vals = realloc(g->vals, sizeof(u64) * g->cap);
	}
	g->vals[g->n++] = val;
	m->bits[k / 64] |= 1ull << (k % 64);
	assert_true(m->nlive < m->cap);
	m->live[m->nlive][0] = k;
	m->live_val[m->nlive] = val;
	m->nlive++;
}

/* Remove live record @i; returns its key index and position in its group. */
static void model_remove(struct model *m, u64 i, u32 *kp, u32 *posp, u64 *valp)
{
	u32 k = m->live[i][0], p;
	u64 val = m->live_val[i];
	struct mgroup *g = &m->g[k];

	for (p = 0; p < g->n && g->vals[p] != val; p++)
		;
	assert_true(p < g->n);
	memmove(&g->vals[p], &g->vals[p + 1], sizeof(u64) * (g->n - p - 1));
	g->n--;
	if (!g->n)
		m->bits[k / 64] &= ~(1ull << (k % 64));
	m->nlive--;
	m->live[i][0] = m->live[m->nlive][0];
	m->live_val[i] = m->live_val[m->nlive];
	*kp = k;
	*posp = p;
	*valp = val;
}

/* The record at (key index @k, position @p) (which must exist). */
static void model_rec(const struct model *m, u32 k, u32 p, struct trec *r)
{
	mkrec(r, mkey(m, k), m->g[k].vals[p]);
}

/* The record after (@k, @p) in order: false at the end. */
static bool model_next(const struct model *m, u32 *k, u32 *p)
{
	if (*p + 1 < m->g[*k].n) {
		(*p)++;
		return true;
	}
	*k = model_next_set(m, (u64)*k + 1);
	*p = 0;
	return *k < m->K;
}

/* The record before (@k, @p): false at the start. */
static bool model_prev(const struct model *m, u32 *k, u32 *p)
{
	s64 j;

	if (*p > 0) {
		(*p)--;
		return true;
	}
	j = model_prev_set(m, (s64)*k - 1);
	if (j < 0)
		return false;
	*k = (u32)j;
	*p = m->g[j].n - 1;
	return true;
}

/* All records in order. */
static struct trec *model_array(const struct model *m, u64 *n)
{
	struct trec *a = malloc(sizeof(*a) * (m->nlive + 1));
	u32 k = model_next_set(m, 0), p = 0;
	u64 i = 0;

	if (k < m->K) {
		do {
			model_rec(m, k, p, &a[i++]);
		} while (model_next(m, &k, &p));
	}
	assert_int_equal(i, m->nlive);
	*n = i;
	return a;
}

/* Compare a read-only lookup and a few steps from it with the model. */
static void check_lookup(struct ttree *t, const struct model *m, u64 *rs)
{
	struct sx_btree_cur cur;
	u32 k = (u32)(sxt_rand(rs) % m->K), mk, mp_, steps, i;
	bool le = sxt_rand(rs) & 1, between = (sxt_rand(rs) & 1) && k + 1 < m->K, mfound, found;
	u64 q = mkey(m, k) + (between ? 1 : 0);
	struct trec want;
	u8 got[MAX_RECSIZE];
	s64 j;

	tcur(&cur, t, NULL);
	assert_int_equal(sx_btree_lookup(&cur, q, le ? SX_BT_LE : SX_BT_GE, &found), 0);
	if (le) {
		j = model_prev_set(m, k);
		mfound = j >= 0;
		mk = mfound ? (u32)j : 0;
		mp_ = mfound ? m->g[mk].n - 1 : 0;
	} else {
		mk = model_next_set(m, (u64)k + (between ? 1 : 0));
		mfound = mk < m->K;
		mp_ = 0;
	}
	assert_int_equal(found, mfound);
	steps = (u32)(sxt_rand(rs) % 6);
	for (i = 0; found && i <= steps; i++) {
		bool fwd = sxt_rand(rs) & 1;

		model_rec(m, mk, mp_, &want);
		assert_int_equal(sx_btree_get(&cur, got), 0);
		check_rec(got, t->ops->bo_recsize, &want);
		if (fwd) {
			mfound = model_next(m, &mk, &mp_);
			assert_int_equal(sx_btree_next(&cur, &found), 0);
		} else {
			mfound = model_prev(m, &mk, &mp_);
			assert_int_equal(sx_btree_prev(&cur, &found), 0);
		}
		assert_int_equal(found, mfound);
	}
	sx_btree_cur_release(&cur);
}

/* Structure walk plus full comparison with the model. */
static void check_all(struct ttree *t, const struct model *m)
{
	struct trec *recs, *want;
	u64 n, nw;

	check_tree(t, &recs, &n);
	want = model_array(m, &nw);
	assert_int_equal(n, nw);
	if (n)
		assert_memory_equal(recs, want, n * sizeof(*recs));
	check_iter(t, want, nw);
	free(recs);
	free(want);
}

/* One random insert of a model record. */
static void do_insert(struct ttree *t, struct model *m, u64 *rs)
{
	u32 k = (u32)(sxt_rand(rs) % m->K);
	u64 val = m->nextval++;

	assert_int_equal(t_insert(t, mkey(m, k), val), 0);
	model_insert(m, k, val);
}

/* One random delete of a live record. */
static void do_delete(struct ttree *t, struct model *m, u64 *rs)
{
	u32 k, p, nk, np;
	u64 val;
	struct trec next;
	bool has;

	model_remove(m, sxt_rand(rs) % m->nlive, &k, &p, &val);
	/* the follower, in the model as it is now */
	nk = k;
	np = p;
	if (np < m->g[k].n) {
		has = true;
	} else {
		nk = model_next_set(m, (u64)k + 1);
		np = 0;
		has = nk < m->K;
	}
	if (has)
		model_rec(m, nk, np, &next);
	assert_int_equal(t_delete(t, mkey(m, k), p, val, has ? &next : NULL), 0);
}

/* The seed for random tests: SX_TEST_SEED if set. */
static u64 test_seed(void)
{
	const char *s = getenv("SX_TEST_SEED");
	u64 v = seed0;

	if (s && *s)
		v = strtoull(s, NULL, 0) * 0x9e3779b97f4a7c15ull + 1;
	return v ? v : 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Grow to @target records with a mix of inserts and deletes, then delete
 * everything; compare with the model throughout.  The tree must shrink to
 * nothing and give every block back.
 */
static void random_test(u32 bsize, u64 devsize, u32 K, u64 target,
			const struct sx_btree_ops *ops)
{
	struct sx_bdev *bd = sxt_memfs(devsize, bsize, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct ttree t;
	struct model m;
	u64 rs = test_seed() ^ bsize, free0, nops = 0;
	u32 maxlevels = 0;
	double t0 = now_s();

	ttree_create(&t, mp);
	t.ops = ops;
	free0 = sx_alloc_free_blocks(mp);
	model_init(&m, K, target + 16);
	check_all(&t, &m);
	while (m.nlive < target) {
		if (m.nlive && sxt_rand(&rs) % 10 < 3)
			do_delete(&t, &m, &rs);
		else
			do_insert(&t, &m, &rs);
		nops++;
		if (nops % 64 == 0)
			check_lookup(&t, &m, &rs);
		if (nops % 25000 == 0)
			check_all(&t, &m);
		maxlevels = sx_max(maxlevels, t.nlevels);
	}
	check_all(&t, &m);
	while (m.nlive) {
		do_delete(&t, &m, &rs);
		nops++;
		if (nops % 64 == 0)
			check_lookup(&t, &m, &rs);
		if (m.nlive % 25000 == 0)
			check_all(&t, &m);
	}
	check_all(&t, &m);
	assert_int_equal(t.nlevels, 0);
	assert_int_equal(t.root, 0);
	assert_int_equal(t.nblocks, 0);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	printf("# btree random bs=%u recsize=%u: %llu ops, %llu records at most, height up to %u, "
	       "%.1f s\n", bsize, ops->bo_recsize, (unsigned long long)nops,
	       (unsigned long long)target, maxlevels, now_s() - t0);
	model_free(&m);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

static void test_random_512(void **state)
{
	random_test(512, 64 * MIB, 65536, 100000, &tbt_ops);
}

static void test_random_4096(void **state)
{
	random_test(4096, 64 * MIB, 65536, 100000, &tbt_ops);
}

/* One record per leaf at 512 bytes (split and merge of single records), 14 at 4096. */
static void test_random_bigrec(void **state)
{
	random_test(512, 64 * MIB, 2048, 6000, &tbig_ops);
	random_test(4096, 64 * MIB, 8192, 20000, &tbig_ops);
}

/*
 * Walk the tree twice, a record at a time and in runs of random length
 * (sx_btree_get_run(), which stops at the end of a leaf): the same records
 * in the same order.  A run needs a cursor on a record and room for one.
 */
static void check_get_run(struct ttree *t, u64 *rs)
{
	struct sx_btree_cur cur;
	struct trec *all, b[40];
	u64 n = 0, i = 0, cap = 4096;
	bool found;
	u32 got, k;

	all = malloc(sizeof(*all) * cap);
	assert_non_null(all);
	tcur(&cur, t, NULL);
	assert_int_equal(sx_btree_first(&cur, &found), 0);
	while (found) {
		assert_true(n < cap);
		assert_int_equal(sx_btree_get(&cur, &all[n++]), 0);
		assert_int_equal(sx_btree_next(&cur, &found), 0);
	}
	sx_btree_cur_release(&cur);
	assert_true(n > 1000);

	tcur(&cur, t, NULL);
	assert_int_equal(sx_btree_get_run(&cur, b, 4, &got), -EINVAL);
	assert_int_equal(got, 0);
	assert_int_equal(sx_btree_first(&cur, &found), 0);
	assert_int_equal(sx_btree_get_run(&cur, b, 0, &got), -EINVAL);
	while (found) {
		assert_int_equal(sx_btree_get_run(&cur, b, 1 + (u32)(sxt_rand(rs) % 40), &got), 0);
		assert_true(got >= 1 && i + got <= n);
		for (k = 0; k < got; k++)
			assert_memory_equal(&b[k], &all[i + k], sizeof(b[k]));
		i += got;
		/* the cursor stands on the last record copied */
		assert_int_equal(sx_btree_get(&cur, &b[0]), 0);
		assert_memory_equal(&b[0], &all[i - 1], sizeof(b[0]));
		assert_int_equal(sx_btree_next(&cur, &found), 0);
	}
	assert_int_equal(i, n);
	sx_btree_cur_release(&cur);
	free(all);
}

/* Long runs of one key across many leaves: GE finds the first, LE the last. */
static void test_equal_keys(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 512, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_btree_cur cur;
	struct ttree t;
	struct model m;
	struct trec got;
	bool found;
	u64 rs = test_seed(), i;

	ttree_create(&t, mp);
	model_init(&m, 5, 4000);
	/* keys 0 and 3 a few times, key 1 a thousand times, keys 2 and 4 never */
	for (i = 0; i < 1200; i++) {
		u32 k = i < 1000 ? 1 : (i % 2 ? 0 : 3);
		u64 val = m.nextval++;

		assert_int_equal(t_insert(&t, mkey(&m, k), val), 0);
		model_insert(&m, k, val);
	}
	check_all(&t, &m);
	assert_true(t.nlevels >= 2);
	tcur(&cur, &t, NULL);
	assert_int_equal(sx_btree_lookup(&cur, mkey(&m, 1), SX_BT_GE, &found), 0);
	assert_true(found);
	assert_int_equal(sx_btree_get(&cur, &got), 0);
	assert_int_equal(le64_to_cpu(got.val), m.g[1].vals[0]);
	assert_int_equal(sx_btree_lookup(&cur, mkey(&m, 1), SX_BT_LE, &found), 0);
	assert_true(found);
	assert_int_equal(sx_btree_get(&cur, &got), 0);
	assert_int_equal(le64_to_cpu(got.val), m.g[1].vals[m.g[1].n - 1]);
	/* nothing at 2: GE gives the first 3, LE the last 1 */
	assert_int_equal(sx_btree_lookup(&cur, mkey(&m, 2), SX_BT_GE, &found), 0);
	assert_int_equal(sx_btree_get(&cur, &got), 0);
	assert_int_equal(le64_to_cpu(got.val), m.g[3].vals[0]);
	assert_int_equal(sx_btree_lookup(&cur, mkey(&m, 2), SX_BT_LE, &found), 0);
	assert_int_equal(sx_btree_get(&cur, &got), 0);
	assert_int_equal(le64_to_cpu(got.val), m.g[1].vals[m.g[1].n - 1]);
	/* past both ends */
	assert_int_equal(sx_btree_lookup(&cur, mkey(&m, 3) + 1, SX_BT_GE, &found), 0);
	assert_false(found);
	assert_int_equal(sx_btree_lookup(&cur, 0, SX_BT_LE, &found), 0);
	assert_true(found);
	assert_int_equal(sx_btree_get(&cur, &got), 0);
	assert_int_equal(le64_to_cpu(got.val), m.g[0].vals[m.g[0].n - 1]);
	sx_btree_cur_release(&cur);
	check_get_run(&t, &rs);
	for (i = 0; i < 500; i++)
		check_lookup(&t, &m, &rs);
	/* delete them in random order, checking as we go */
	while (m.nlive) {
		do_delete(&t, &m, &rs);
		if (m.nlive % 100 == 0)
			check_all(&t, &m);
	}
	check_all(&t, &m);
	model_free(&m);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * Records inserted in order fill the leaves: a full leaf hands records to a
 * sibling with room before it splits, so ascending keys (a file written
 * from start to end) and descending ones leave every leaf full but the
 * last two, where splits alone would leave them half full.  Then keys in
 * order into the gaps of those full leaves (odd keys between even ones):
 * the tree stays sound, every record in its place.
 */
static void test_ordered_fill(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 512, 0);
	struct sx_mount *mp = sxt_mount(bd);
	u64 lmax = sx_btree_maxrecs(mp, &tbt_ops, true), N = 60 * lmax, i, n, leaves;
	struct trec *recs;
	struct ttree t;
	int order;

	for (order = 0; order < 2; order++) {
		ttree_create(&t, mp);
		for (i = 0; i < N; i++)
			assert_int_equal(t_insert(&t, 2 * (order ? N - 1 - i : i), i), 0);
		leaves = check_tree(&t, &recs, &n);
		assert_int_equal(n, N);
		for (i = 0; i < N; i++)
			assert_int_equal(le64_to_cpu(recs[i].key), 2 * i);
		free(recs);
		printf("# btree %s fill: %llu records of at most %llu a leaf in %llu leaves\n",
		       order ? "descending" : "ascending", (unsigned long long)N,
		       (unsigned long long)lmax, (unsigned long long)leaves);
		assert_true(leaves <= N / lmax + 2);

		/* the odd keys between, in order: every leaf is full when they start */
		for (i = 0; i < N; i++)
			assert_int_equal(t_insert(&t, 2 * i + 1, N + i), 0);
		check_tree(&t, &recs, &n);
		assert_int_equal(n, 2 * N);
		for (i = 0; i < 2 * N; i++)
			assert_int_equal(le64_to_cpu(recs[i].key), i);
		free(recs);
	}
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Update: in place, a key change between the neighbours, and refusals. */
static void test_update(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 512, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_btree_cur cur;
	struct sx_trans *tp;
	struct ttree t;
	struct trec r, got, *recs;
	bool found;
	u64 i, n, lmax;

	ttree_create(&t, mp);
	lmax = sx_btree_maxrecs(mp, &tbt_ops, true);
	for (i = 0; i < 1000; i++)
		assert_int_equal(t_insert(&t, i * 10, i), 0);
	/* change the first key of every leaf but the first: parents follow */
	check_tree(&t, &recs, &n);
	assert_int_equal(n, 1000);
	free(recs);
	for (i = 1; i < 1000; i++) {
		assert_int_equal(tstart(&t, &tp), 0);
		tcur(&cur, &t, tp);
		assert_int_equal(sx_btree_lookup(&cur, i * 10, SX_BT_GE, &found), 0);
		assert_true(found);
		/* may move to anywhere between the neighbours, inclusive */
		mkrec(&r, i * 10 - (i % 3 == 0 ? 9 : 0) + (i % 3 == 1 ? 9 : 0), i + 5000);
		assert_int_equal(sx_btree_update(&cur, &r), 0);
		assert_int_equal(sx_btree_get(&cur, &got), 0);
		assert_memory_equal(&got, &r, sizeof(r));
		/* beyond a neighbour: refused */
		if (i < 999) {
			mkrec(&r, i * 10 + 11, 0);
			assert_int_equal(sx_btree_update(&cur, &r), -EINVAL);
		}
		mkrec(&r, i * 10 - 25, 0);
		assert_int_equal(sx_btree_update(&cur, &r), -EINVAL);
		sx_btree_cur_release(&cur);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	check_tree(&t, &recs, &n);
	assert_int_equal(n, 1000);
	for (i = 1; i < 1000; i++) {
		assert_int_equal(le64_to_cpu(recs[i].val), i + 5000);
		assert_int_equal(le64_to_cpu(recs[i].key),
				 i * 10 - (i % 3 == 0 ? 9 : 0) + (i % 3 == 1 ? 9 : 0));
	}
	free(recs);
	assert_true(lmax > 0);
	/* a read-only cursor cannot change anything */
	tcur(&cur, &t, NULL);
	assert_int_equal(sx_btree_first(&cur, &found), 0);
	assert_int_equal(sx_btree_update(&cur, &r), -EINVAL);
	assert_int_equal(sx_btree_delete(&cur, &found), -EINVAL);
	assert_int_equal(sx_btree_insert(&cur, &r), -EINVAL);
	sx_btree_cur_release(&cur);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* A million records: insert, look each up, iterate; time each phase. */
static void test_million(void **state)
{
	struct sx_bdev *bd = sxt_memfs(256 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	const u64 N = 1000000;
	struct sx_btree_cur cur;
	struct ttree t;
	struct trec got;
	u64 i, n = 0, last = 0;
	bool found;
	double t0, t1, t2, t3;

	ttree_create(&t, mp);
	/* keys are a permutation of 0..N-1 spread over the u64 range, value = index */
	t0 = now_s();
	for (i = 0; i < N; i++) {
		u64 k = (i * 7919) % N;

		assert_int_equal(t_insert(&t, k << 20, k), 0);
	}
	t1 = now_s();
	tcur(&cur, &t, NULL);
	for (i = 0; i < N; i++) {
		u64 k = (i * 104729) % N;

		assert_int_equal(sx_btree_lookup(&cur, (k << 20) + 5, SX_BT_LE, &found), 0);
		assert_true(found);
		assert_int_equal(sx_btree_get(&cur, &got), 0);
		assert_int_equal(le64_to_cpu(got.val), k);
	}
	t2 = now_s();
	assert_int_equal(sx_btree_first(&cur, &found), 0);
	while (found) {
		assert_int_equal(sx_btree_get(&cur, &got), 0);
		assert_int_equal(le64_to_cpu(got.val), n);
		assert_true(n == 0 || le64_to_cpu(got.key) > last);
		last = le64_to_cpu(got.key);
		n++;
		assert_int_equal(sx_btree_next(&cur, &found), 0);
	}
	t3 = now_s();
	sx_btree_cur_release(&cur);
	assert_int_equal(n, N);
	printf("# btree 1M bs=4096: height %u, %lld blocks; insert %.0f rec/s (one transaction "
	       "each), lookup %.0f rec/s, iterate %.0f rec/s\n", t.nlevels, (long long)t.nblocks,
	       N / (t1 - t0), N / (t2 - t1), N / (t3 - t2));
	check_tree(&t, NULL, &n);
	assert_int_equal(n, N);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Log bytes to build (or free) a tree of @n records: every block new, every one allocated. */
static u32 build_res(struct sx_mount *mp, u64 n)
{
	u64 lmax = sx_btree_maxrecs(mp, &tbt_ops, true), blocks = n / (lmax / 2) + 1;

	blocks += blocks / 2 + SX_BTREE_MAXLEVELS;
	return (u32)(blocks * (sx_trans_buf_bytes(mp) + sx_alloc_res_bytes(mp)) +
		     sx_trans_buf_bytes(mp));
}

/* sx_btree_build makes a checked tree; collect and free_all undo it. */
static void test_build_collect_free(void **state)
{
	static const u32 sizes[] = { 512, 4096 };
	u32 s;

	for (s = 0; s < 2; s++) {
		/* a log big enough for the largest transaction (1 MiB) */
		struct sx_bdev *bd = sxt_memfs(64 * MIB, sizes[s], (8 * MIB) / sizes[s]);
		struct sx_mount *mp = sxt_mount(bd);
		u64 counts[] = { 0, 1, 2, 26, 27, 28, 251, 252, 729, 5000 };
		u32 c;

		for (c = 0; c < ARRAY_SIZE(counts); c++) {
			u64 n = counts[c], i, got_n, free0, cnt;
			struct trec *recs = malloc(sizeof(*recs) * (n + 1)), *got;
			struct sx_trans *tp;
			struct ttree t;

			ttree_create(&t, mp);
			free0 = sx_alloc_free_blocks(mp);
			for (i = 0; i < n; i++)
				mkrec(&recs[i], i / 3, i);	/* duplicates */
			assert_int_equal(sx_trans_alloc(mp, build_res(mp, n), 0, &tp), 0);
			assert_int_equal(sx_btree_build(tp, &tbt_ops, TOWNER, &t, 0, recs, n,
							&t.root, &t.nlevels), 0);
			assert_int_equal(troot_write(tp, &t), 0);
			assert_int_equal(sx_trans_commit(tp), 0);
			check_tree(&t, &got, &got_n);
			assert_int_equal(got_n, n);
			if (n)
				assert_memory_equal(got, recs, n * sizeof(*recs));
			free(got);
			check_iter(&t, recs, n);
			/* collect, with too small a buffer too */
			got = malloc(sizeof(*got) * (n + 1));
			assert_int_equal(sx_btree_collect(mp, NULL, &tbt_ops, TOWNER, t.root, t.nlevels,
							  got, n, &cnt), 0);
			assert_int_equal(cnt, n);
			if (n) {
				assert_memory_equal(got, recs, n * sizeof(*recs));
				assert_int_equal(sx_btree_collect(mp, NULL, &tbt_ops, TOWNER, t.root,
								  t.nlevels, got, n - 1, &cnt), -EFBIG);
			}
			free(got);
			/* and an insert into a built (full) tree still works */
			if (n) {
				assert_int_equal(t_insert(&t, n / 6, 99999), 0);
				check_tree(&t, NULL, &cnt);
				assert_int_equal(cnt, n + 1);
			}
			assert_int_equal(sx_trans_alloc(mp, build_res(mp, n + 1), 0, &tp), 0);
			assert_int_equal(sx_btree_free_all(tp, &tbt_ops, TOWNER, &t, t.root,
							   t.nlevels), 0);
			t.root = 0;
			t.nlevels = 0;
			assert_int_equal(t.nblocks, 0);
			assert_int_equal(troot_write(tp, &t), 0);
			assert_int_equal(sx_trans_commit(tp), 0);
			assert_int_equal(sx_alloc_free_blocks(mp), free0);
			free(recs);
		}
		/* unsorted input is refused */
		{
			struct trec r[2];
			struct sx_trans *tp;
			struct ttree t;
			u64 root;
			u32 nl;

			ttree_create(&t, mp);
			mkrec(&r[0], 5, 0);
			mkrec(&r[1], 4, 0);
			assert_int_equal(sx_trans_alloc(mp, 4 * sx_trans_buf_bytes(mp), 0, &tp), 0);
			assert_int_equal(sx_btree_build(tp, &tbt_ops, TOWNER, &t, 0, r, 2, &root, &nl),
					 -EINVAL);
			sx_trans_cancel(tp);
		}
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(bd);
	}
}

/* ---------------------------------------------------------------- persistence */

/* A simple sorted-array model for the persistence tests. */
struct amodel {
	struct trec	*a;
	u64		n, cap;
};

static void am_insert(struct amodel *m, u64 key, u64 val)
{
	u64 lo = 0, hi = m->n;

	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 1024;
		m->a = realloc(m->a, sizeof(*m->a) * m->cap);
	}
	while (lo < hi) {
		u64 mid = (lo + hi) / 2;

		if (le64_to_cpu(m->a[mid].key) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&m->a[lo + 1], &m->a[lo], sizeof(*m->a) * (m->n - lo));
	mkrec(&m->a[lo], key, val);
	m->n++;
}

/* Remove record @i; its key, rank among equal keys and value come back. */
static void am_remove(struct amodel *m, u64 i, u64 *key, u32 *skip, u64 *val)
{
	u64 j = i;

	*key = le64_to_cpu(m->a[i].key);
	*val = le64_to_cpu(m->a[i].val);
	while (j > 0 && le64_to_cpu(m->a[j - 1].key) == *key)
		j--;
	*skip = (u32)(i - j);
	memmove(&m->a[i], &m->a[i + 1], sizeof(*m->a) * (m->n - i - 1));
	m->n--;
}

/* A random change to tree and model. */
struct aop {
	bool	ins;
	u64	key, val, idx;
};

static void am_apply(struct amodel *m, const struct aop *op)
{
	u64 k, v;
	u32 s;

	if (op->ins)
		am_insert(m, op->key, op->val);
	else
		am_remove(m, op->idx, &k, &s, &v);
}

/* Make a random op, apply it to the tree and the model, and return it. */
static void am_random_op(struct ttree *t, struct amodel *m, u64 *rs, u64 *nextval,
			 struct aop *op)
{
	op->ins = m->n < 100 || sxt_rand(rs) % 3 != 0;
	if (op->ins) {
		op->key = sxt_rand(rs) % 5000;
		op->val = (*nextval)++;
		assert_int_equal(t_insert(t, op->key, op->val), 0);
	} else {
		u64 key, val, j;

		op->idx = sxt_rand(rs) % m->n;
		key = le64_to_cpu(m->a[op->idx].key);
		val = le64_to_cpu(m->a[op->idx].val);
		for (j = op->idx; j > 0 && le64_to_cpu(m->a[j - 1].key) == key; j--)
			;
		assert_int_equal(t_delete(t, key, (u32)(op->idx - j), val,
					  op->idx + 1 < m->n ? &m->a[op->idx + 1] : NULL), 0);
	}
	am_apply(m, op);
}

/* Tree contents equal the model; the structure is right. */
static void am_check(struct ttree *t, const struct amodel *m)
{
	struct trec *recs;
	u64 n;

	check_tree(t, &recs, &n);
	assert_int_equal(n, m->n);
	if (n)
		assert_memory_equal(recs, m->a, n * sizeof(*recs));
	free(recs);
	check_iter(t, m->a, m->n);
}

/* The tree survives unmount/mount, and a crash after sync is recovered. */
static void persist_test(u32 bsize)
{
	struct sx_bdev *bd = sxt_memfs(64 * MIB, bsize, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct amodel m = { 0 }, snap = { 0 };
	struct aop ops[200];
	struct ttree t;
	u64 rs = test_seed() + bsize, nextval = 1, rootblk, i, p, free_before;
	struct trec *recs;
	u64 n;
	s64 last;
	int round;

	ttree_create(&t, mp);
	rootblk = t.rootblk;
	for (i = 0; i < 20000; i++)
		am_random_op(&t, &m, &rs, &nextval, &ops[0]);
	am_check(&t, &m);
	free_before = sx_alloc_free_blocks(mp);
	assert_int_equal(sx_unmount(mp), 0);

	mp = sxt_mount(bd);
	ttree_open(&t, mp, rootblk);
	am_check(&t, &m);
	assert_int_equal(sx_alloc_free_blocks(mp), free_before);

	for (round = 0; round < 4; round++) {
		/* changes, sync, more changes that may or may not survive, crash */
		for (i = 0; i < 3000; i++)
			am_random_op(&t, &m, &rs, &nextval, &ops[0]);
		assert_int_equal(sx_sync(mp), 0);
		snap.n = m.n;
		snap.cap = m.n + 1;
		snap.a = realloc(snap.a, sizeof(*snap.a) * snap.cap);
		memcpy(snap.a, m.a, sizeof(*m.a) * m.n);
		for (i = 0; i < ARRAY_SIZE(ops); i++)
			am_random_op(&t, &m, &rs, &nextval, &ops[i]);
		if (round % 2)
			assert_int_equal(sx_sync(mp), 0);	/* all of them durable */
		sx_shutdown(mp);
		assert_int_equal(sx_unmount(mp), -EIO);

		mp = sxt_mount(bd);
		ttree_open(&t, mp, rootblk);
		check_tree(&t, &recs, &n);
		/* the state must be the synced one plus a prefix of the later ops */
		free(m.a);
		m.n = snap.n;
		m.cap = snap.n + ARRAY_SIZE(ops) + 1;
		m.a = malloc(sizeof(*m.a) * m.cap);
		memcpy(m.a, snap.a, sizeof(*m.a) * snap.n);
		last = -1;
		for (p = 0; p <= ARRAY_SIZE(ops); p++) {
			if (n == m.n && (n == 0 || !memcmp(recs, m.a, n * sizeof(*recs))))
				last = (s64)p;
			if (p < ARRAY_SIZE(ops))
				am_apply(&m, &ops[p]);
		}
		free(recs);
		assert_true(last >= 0);
		if (round % 2)
			assert_int_equal(last, ARRAY_SIZE(ops));
		/* carry on from what survived */
		m.n = snap.n;
		memcpy(m.a, snap.a, sizeof(*m.a) * snap.n);
		for (p = 0; p < (u64)last; p++)
			am_apply(&m, &ops[p]);
		am_check(&t, &m);
	}
	/* delete everything, remount, and the tree is gone */
	while (m.n) {
		u64 key, val;
		u32 skip;
		u64 idx = sxt_rand(&rs) % m.n;

		am_remove(&m, idx, &key, &skip, &val);
		assert_int_equal(t_delete(&t, key, skip, val, idx < m.n ? &m.a[idx] : NULL), 0);
	}
	assert_int_equal(sx_unmount(mp), 0);
	mp = sxt_mount(bd);
	ttree_open(&t, mp, rootblk);
	assert_int_equal(t.nlevels, 0);
	am_check(&t, &m);
	assert_int_equal(sx_unmount(mp), 0);
	free(m.a);
	free(snap.a);
	sx_bdev_destroy(bd);
}

static void test_persist_512(void **state)
{
	persist_test(512);
}

static void test_persist_4096(void **state)
{
	persist_test(4096);
}

/* A split that finds no space fails cleanly; the tree is as it was. */
static void test_enospc(void **state)
{
	struct sx_bdev *bd = sxt_memfs(4 * MIB, 512, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct amodel m = { 0 };
	struct sx_trans *tp;
	struct ttree t;
	u64 i, fill[64], rs = test_seed(), nfill = 0, key = 0;
	u32 len;
	int error = 0;

	ttree_create(&t, mp);
	for (i = 0; i < 3000; i++) {
		assert_int_equal(t_insert(&t, i * 2, i), 0);
		am_insert(&m, i * 2, i);
	}
	/* take every free block */
	while (sx_alloc_free_blocks(mp) > 0) {
		assert_int_equal(sx_trans_alloc(mp, 4 * sx_alloc_res_bytes(mp), 0, &tp), 0);
		assert_int_equal(sx_alloc_extent(tp, 0, 1, ~0u, &fill[nfill], &len), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
		fill[nfill + 32] = len;
		nfill++;
		assert_true(nfill < 32);
	}
	/* insert until a split needs a block */
	for (i = 0; i < 100000; i++) {
		key = (sxt_rand(&rs) % 3000) * 2 + 1;
		error = t_insert(&t, key, 100000 + i);
		if (error)
			break;
		am_insert(&m, key, 100000 + i);
	}
	assert_int_equal(error, -ENOSPC);
	am_check(&t, &m);
	/* give the space back: the same insert now works */
	for (i = 0; i < nfill; i++) {
		assert_int_equal(sx_trans_alloc(mp, 4 * sx_alloc_res_bytes(mp), 0, &tp), 0);
		assert_int_equal(sx_free_extent(tp, fill[i], fill[i + 32]), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	assert_int_equal(t_insert(&t, key, 1), 0);
	am_insert(&m, key, 1);
	am_check(&t, &m);
	assert_int_equal(sx_unmount(mp), 0);
	free(m.a);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- corruption */

/* Recompute the CRC of a metadata block image. */
static void restamp(void *data, u32 bsize)
{
	struct sx_dblk_hdr *h = data;

	h->bh_crc = cpu_to_le32(sx_cksum_skip(data, bsize, offsetof(struct sx_dblk_hdr, bh_crc)));
}

/* Geometry of the tree used for the corruption cases. */
struct cgeo {
	u64	root, node, leaf, leaf_left, leaf_right, leftmost_leaf, other_leaf;
	u32	nlevels, nmax;
};

/* Read block @bno's image from @bd. */
static void *peek_block(struct sx_bdev *bd, u32 bsize, u64 bno)
{
	void *buf = malloc(bsize);

	sxt_bdev_peek(bd, bno * bsize, buf, bsize);
	return buf;
}

/* Child pointer @i of a node image. */
static __le64 *img_ptr(void *blk, u32 nmax, u32 i)
{
	return (__le64 *)((u8 *)blk + sizeof(struct sx_dbtree_block)) + nmax + i;
}

static __le64 *img_key(void *blk, u32 i)
{
	return (__le64 *)((u8 *)blk + sizeof(struct sx_dbtree_block)) + i;
}

/* Every read-only and changing operation on the tree fails cleanly. */
static int exercise(struct sx_bdev *bd, u64 rootblk, u64 nrecs)
{
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_btree_cur cur;
	struct sx_trans *tp;
	struct ttree t;
	struct trec r;
	bool found;
	u64 n = 0, i;
	int error, first_error = 0;

	ttree_open(&t, mp, rootblk);
	/* a full walk forwards */
	tcur(&cur, &t, NULL);
	error = sx_btree_first(&cur, &found);
	while (!error && found) {
		n++;
		assert_true(n <= nrecs + 1);
		error = sx_btree_next(&cur, &found);
	}
	first_error = error;
	/* backwards */
	error = sx_btree_lookup(&cur, ~0ull, SX_BT_LE, &found);
	for (i = 0; !error && found; i++) {
		assert_true(i <= nrecs + 1);
		error = sx_btree_prev(&cur, &found);
	}
	if (!first_error)
		first_error = error;
	/* every key looked up */
	for (i = 0; i < nrecs; i += 7) {
		error = sx_btree_lookup(&cur, i * 4, SX_BT_GE, &found);
		if (error && !first_error)
			first_error = error;
	}
	sx_btree_cur_release(&cur);
	/* changes, in transactions that are cancelled on error */
	for (i = 0; i < nrecs; i += 97) {
		struct ttree saved = t;

		assert_int_equal(tstart(&t, &tp), 0);
		tcur(&cur, &t, tp);
		mkrec(&r, i * 4 + 1, i);
		error = sx_btree_insert(&cur, &r);
		if (!error) {
			error = sx_btree_lookup(&cur, i * 4, SX_BT_GE, &found);
			if (!error && found)
				error = sx_btree_delete(&cur, &found);
		}
		error = tfinish(&t, &saved, tp, &cur, error);
		if (error && !first_error)
			first_error = error;
	}
	sx_unmount(mp);
	return first_error;
}

/* Find a leaf with siblings on both sides under a level-1 node that is not the root. */
static void find_geometry(struct sx_bdev *bd, u32 bsize, struct ttree *t, struct cgeo *g)
{
	u8 *root, *node, *leaf;

	memset(g, 0, sizeof(*g));
	g->nlevels = t->nlevels;
	g->nmax = sx_btree_maxrecs(t->mp, &tbt_ops, false);
	assert_true(t->nlevels == 3);
	g->root = t->root;
	root = peek_block(bd, bsize, g->root);
	g->node = le64_to_cpu(*img_ptr(root, g->nmax, 1));
	node = peek_block(bd, bsize, g->node);
	g->leaf = le64_to_cpu(*img_ptr(node, g->nmax, 1));
	g->other_leaf = le64_to_cpu(*img_ptr(node, g->nmax, 3));
	leaf = peek_block(bd, bsize, g->leaf);
	g->leaf_left = le64_to_cpu(((struct sx_dbtree_block *)leaf)->bt_leftsib);
	g->leaf_right = le64_to_cpu(((struct sx_dbtree_block *)leaf)->bt_rightsib);
	free(leaf);
	free(node);
	node = peek_block(bd, bsize, le64_to_cpu(*img_ptr(root, g->nmax, 0)));
	g->leftmost_leaf = le64_to_cpu(*img_ptr(node, g->nmax, 0));
	free(node);
	free(root);
	assert_true(g->leaf_left && g->leaf_right);
}

enum corrupt_case {
	C_MAGIC, C_BLKNO, C_OWNER, C_UUID, C_LEVEL_BIG, C_LEVEL_WRONG, C_NUMRECS_BIG,
	C_NUMRECS_ZERO, C_NUMRECS_PLUS1, C_PAD, C_LEFT_RANGE, C_LEFT_SELF, C_LEFT_WRONG,
	C_RIGHT_RANGE, C_RIGHT_SELF, C_RIGHT_CYCLE, C_SIBS_EQUAL, C_REC_BAD, C_REC_ORDER,
	C_NODE_KEY_ORDER, C_NODE_KEY_HIGH, C_NODE_PTR_RANGE, C_NODE_PTR_SELF,
	C_NODE_PTR_ROOT, C_NODE_PTR_DAG, C_ROOT_LEVEL, C_NODE_LEVEL, C_CRC,
	C_NCASES
};

/* Apply corruption case @c to a copy of @bd; returns the copy. */
static struct sx_bdev *corrupt(struct sx_bdev *bd, u32 bsize, const struct cgeo *g,
			       enum corrupt_case c)
{
	struct sx_bdev *cp = sxt_bdev_copy(bd);
	u64 bno = g->leaf;
	u8 *img;
	struct sx_dbtree_block *b;
	struct trec *recs;
	u64 dblocks = bd->bd_size / bsize;
	bool stamp = true;

	if (c >= C_NODE_KEY_ORDER && c <= C_NODE_PTR_DAG)
		bno = g->node;
	if (c == C_ROOT_LEVEL)
		bno = g->root;
	if (c == C_NODE_LEVEL)
		bno = g->node;
	img = peek_block(cp, bsize, bno);
	b = (struct sx_dbtree_block *)img;
	recs = (struct trec *)(img + sizeof(*b));
	switch (c) {
	case C_MAGIC:
		b->bt_hdr.bh_magic = cpu_to_le32(TBT_MAGIC ^ 1);
		break;
	case C_BLKNO:
		b->bt_hdr.bh_blkno = cpu_to_le64(bno + 1);
		break;
	case C_OWNER:
		b->bt_hdr.bh_owner = cpu_to_le64(TOWNER + 1);
		break;
	case C_UUID:
		b->bt_hdr.bh_uuid[3] ^= 0x40;
		break;
	case C_LEVEL_BIG:
		b->bt_level = cpu_to_le16(SX_BTREE_MAXLEVELS);
		break;
	case C_LEVEL_WRONG:
		b->bt_level = cpu_to_le16(1);		/* a leaf claiming to be a node */
		break;
	case C_NUMRECS_BIG:
		b->bt_numrecs = cpu_to_le16((bsize - sizeof(*b)) / sizeof(struct trec) + 1);
		break;
	case C_NUMRECS_ZERO:
		b->bt_numrecs = 0;
		break;
	case C_NUMRECS_PLUS1:
		b->bt_numrecs = cpu_to_le16(le16_to_cpu(b->bt_numrecs) + 1);
		break;
	case C_PAD:
		b->bt_pad = cpu_to_le32(1);
		break;
	case C_LEFT_RANGE:
		b->bt_leftsib = cpu_to_le64(dblocks + 5);
		break;
	case C_LEFT_SELF:
		b->bt_leftsib = cpu_to_le64(bno);
		break;
	case C_LEFT_WRONG:
		b->bt_leftsib = cpu_to_le64(g->other_leaf);
		break;
	case C_RIGHT_RANGE:
		b->bt_rightsib = cpu_to_le64(1);	/* the secondary superblock */
		break;
	case C_RIGHT_SELF:
		b->bt_rightsib = cpu_to_le64(bno);
		break;
	case C_RIGHT_CYCLE:
		b->bt_rightsib = cpu_to_le64(g->leftmost_leaf);
		break;
	case C_SIBS_EQUAL:
		b->bt_rightsib = b->bt_leftsib;
		break;
	case C_REC_BAD:
		recs[1].val = cpu_to_le64(BAD_VAL);
		break;
	case C_REC_ORDER:
		recs[1].key = cpu_to_le64(~0ull);
		break;
	case C_NODE_KEY_ORDER:
		*img_key(img, 2) = cpu_to_le64(~0ull);
		break;
	case C_NODE_KEY_HIGH:
		/* above the first key of its child, still in order */
		*img_key(img, 1) = cpu_to_le64(le64_to_cpu(*img_key(img, 1)) + 1);
		break;
	case C_NODE_PTR_RANGE:
		*img_ptr(img, g->nmax, 1) = cpu_to_le64(dblocks);
		break;
	case C_NODE_PTR_SELF:
		*img_ptr(img, g->nmax, 1) = cpu_to_le64(bno);
		break;
	case C_NODE_PTR_ROOT:
		*img_ptr(img, g->nmax, 1) = cpu_to_le64(g->root);	/* a cycle */
		break;
	case C_NODE_PTR_DAG:
		*img_ptr(img, g->nmax, 1) = *img_ptr(img, g->nmax, 3);
		break;
	case C_ROOT_LEVEL:
	case C_NODE_LEVEL:
		b->bt_level = cpu_to_le16(le16_to_cpu(b->bt_level) + 1);
		break;
	case C_CRC:
		b->bt_hdr.bh_crc ^= cpu_to_le32(1);
		stamp = false;
		break;
	default:
		fail();
	}
	if (stamp)
		restamp(img, bsize);
	sxt_bdev_poke(cp, bno * bsize, img, bsize);
	free(img);
	return cp;
}

static void corrupt_test(u32 bsize)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, bsize, 512), *cp;
	struct sx_mount *mp = sxt_mount(bd);
	struct ttree t;
	struct cgeo g;
	u64 i, n, rootblk;
	int c;

	ttree_create(&t, mp);
	rootblk = t.rootblk;
	/* three levels: enough leaves under enough nodes */
	n = bsize == 512 ? 3000 : 80000;
	for (i = 0; i < n; i++)
		assert_int_equal(t_insert(&t, ((i * 7) % n) * 4, i), 0);
	check_tree(&t, NULL, NULL);
	find_geometry(bd, bsize, &t, &g);
	assert_int_equal(sx_unmount(mp), 0);
	/* the intact tree passes the whole exercise (on a copy: it changes it) */
	cp = sxt_bdev_copy(bd);
	assert_int_equal(exercise(cp, rootblk, n), 0);
	sx_bdev_destroy(cp);
	for (c = 0; c < C_NCASES; c++) {
		int error;

		cp = corrupt(bd, bsize, &g, c);
		error = exercise(cp, rootblk, n);

		if (c == C_CRC)
			assert_int_equal(error, -EFSBADCRC);
		else if (error != -EFSCORRUPTED)
			fail_msg("case %d at bs %u: error %d", c, bsize, error);
		sx_bdev_destroy(cp);
	}
	sx_bdev_destroy(bd);
}

static void test_corrupt_512(void **state)
{
	corrupt_test(512);
}

static void test_corrupt_4096(void **state)
{
	corrupt_test(4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_512),
		cmocka_unit_test(test_random_4096),
		cmocka_unit_test(test_random_bigrec),
		cmocka_unit_test(test_equal_keys),
		cmocka_unit_test(test_ordered_fill),
		cmocka_unit_test(test_update),
		cmocka_unit_test(test_build_collect_free),
		cmocka_unit_test(test_million),
		cmocka_unit_test(test_persist_512),
		cmocka_unit_test(test_persist_4096),
		cmocka_unit_test(test_enospc),
		cmocka_unit_test(test_corrupt_512),
		cmocka_unit_test(test_corrupt_4096),
	};

	sx_thread_enter();
	sxt_quiet();
	/* recovery verifies the blocks it rebuilds by their registered type */
	assert_int_equal(sx_buf_type_register(&tbt_buf_ops), 0);
	assert_int_equal(sx_buf_type_register(&tbig_buf_ops), 0);
	assert_int_equal(sx_buf_type_register(&troot_ops), 0);
	printf("# seed %llu\n", (unsigned long long)test_seed());
	return cmocka_run_group_tests(tests, NULL, NULL);
}
