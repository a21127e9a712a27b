// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reference counts of shared blocks.
 *
 * The refcount B+tree holds one record per run of blocks with the same
 * number of owners (mappings in files), keyed by the run's first block.
 * A block with one owner has no record, so a filesystem that never clones
 * has an empty tree.  Records never overlap, every count is at least 2, and
 * the tree stays canonical: two adjacent runs with the same count are one
 * record unless together they would exceed SX_BMAP_MAXLEN blocks.
 *
 * An increase or decrease of a range is done in steps (sx_refcount_adjust),
 * each of which changes the piece at the front of the range: the part of
 * one record, or of the gap between two records, that lies in the range.
 * A step makes at most three B+tree changes (a record split in three, or a
 * merge with both neighbours), so one step fits a small, fixed log
 * reservation, and the tree is canonical after every step; a caller that
 * wants the whole range in one transaction loops over the steps.  Blocks
 * whose last owner goes away are freed.
 *
 * The tree's root and height live in the fsinfo block.  Every change reads
 * that block into the transaction first, so its buffer lock serialises the
 * tree's writers, and lookups take it too, which keeps a reader from
 * walking a tree that a writer has half split.
 */
#include "util.h"
#include "refcount.h"
#include "btree.h"
#include "buf.h"
#include "trans.h"
#include "alloc.h"
#include "inode.h"
#include "fsinfo.h"
#include "log.h"
#include "mount.h"

/* B+tree changes one step makes at most. */
#define SX_REFC_STEP_OPS	3

/*
 * The blocks that decreases left with one owner and whose change the log
 * may not have made durable yet: a few extents, each with the transaction
 * that made it and, once that one is queued to the log, the commit count
 * the log's durable count must reach (sx_log_durable_seq()).  XFS keeps
 * freed extents busy for a like reason.
 *
 * A transaction that changes the tree holds the fsinfo block until it
 * commits, and stamps its extents before it lets go of it.  So whoever
 * holds that block sees every extent unstamped but its own from a
 * transaction that was cancelled; and a barrier, which comes after
 * sx_refcount_find_shared() took the block and saw its blocks with one
 * owner, finds the extents that concern them stamped.
 *
 * The list grows, up to SX_UNSHARED_MAX extents, before it folds: a fold
 * widens what waits to everything between the extents, blocks that are
 * free or newly allocated included, and since fsync no longer forces
 * every transaction, the extents of, say, an update's clone being freed
 * outlive the fsync, and a fold would make the next update's write into a
 * new block wait for them.
 */
#define SX_UNSHARED_MIN		32
#define SX_UNSHARED_MAX		4096

struct sx_unshared_ext {
	u64	ue_bno;
	u64	ue_len;
	u64	ue_tid;
	u64	ue_seq;		/* 0 until the transaction is queued */
};

struct sx_refc_unshared {
	struct sx_mutex		ru_lock;
	struct sx_atomic	ru_count;	/* ru_n, for a look without the lock */
	u32			ru_n;
	u32			ru_cap;		/* entries of ru_ext */
	u32			ru_max;		/* ru_cap grows up to this */
	struct sx_unshared_ext	*ru_ext;
};

int sx_refcount_unshared_init(struct sx_mount *mp)
{
	struct sx_refc_unshared *ru = sx_zalloc(sizeof(*ru), 0);

	if (!ru)
		return -ENOMEM;
	ru->ru_ext = sx_alloc(sizeof(*ru->ru_ext) * SX_UNSHARED_MIN, 0);
	if (!ru->ru_ext) {
		sx_free(ru);
		return -ENOMEM;
	}
	ru->ru_cap = SX_UNSHARED_MIN;
	ru->ru_max = SX_UNSHARED_MAX;
	sx_mutex_init(&ru->ru_lock);
	mp->m_unshared = ru;
	return 0;
}

void sx_refcount_unshared_destroy(struct sx_mount *mp)
{
	struct sx_refc_unshared *ru = mp->m_unshared;

	if (!ru)
		return;
	sx_mutex_destroy(&ru->ru_lock);
	sx_free(ru->ru_ext);
	sx_free(ru);
	mp->m_unshared = NULL;
}

/* Forget extent @i (lock held). */
static void sx_unshared_del(struct sx_refc_unshared *ru, u32 i)
{
	ASSERT(sx_mutex_is_held(&ru->ru_lock));
	ru->ru_ext[i] = ru->ru_ext[--ru->ru_n];
}

/* Widen @to to cover @e too. */
static void sx_unshared_fold(struct sx_unshared_ext *to, const struct sx_unshared_ext *e)
{
	u64 end = sx_max(to->ue_bno + to->ue_len, e->ue_bno + e->ue_len);

	to->ue_bno = sx_min(to->ue_bno, e->ue_bno);
	to->ue_len = end - to->ue_bno;
	to->ue_seq = sx_max(to->ue_seq, e->ue_seq);
}

/* Double the room for extents, up to ru_max (lock held); false if it cannot. */
static bool sx_unshared_grow(struct sx_refc_unshared *ru)
{
	struct sx_unshared_ext *n;
	u32 cap = ru->ru_cap * 2;

	if (cap > ru->ru_max)
		return false;
	n = sx_alloc(sizeof(*n) * cap, SX_NOFS);
	if (!n)
		return false;
	memcpy(n, ru->ru_ext, sizeof(*n) * ru->ru_n);
	sx_free(ru->ru_ext);
	ru->ru_ext = n;
	ru->ru_cap = cap;
	return true;
}

/*
 * Make room for an extent of transaction @tid, which holds the fsinfo
 * block (lock held): forget what is durable and what cancelled
 * transactions left; if that is not enough, grow the list; if it cannot,
 * fold the stamped extents into one and @tid's into another.  Folding only
 * ever widens what waits.
 */
static void sx_unshared_make_room(struct sx_mount *mp, struct sx_refc_unshared *ru, u64 tid)
{
	struct sx_unshared_ext done, mine;
	bool have_done = false, have_mine = false;
	u64 durable = sx_log_durable_seq(mp);
	u32 i;

	ASSERT(sx_mutex_is_held(&ru->ru_lock));
	for (i = 0; i < ru->ru_n;) {
		struct sx_unshared_ext *e = &ru->ru_ext[i];

		if (e->ue_seq ? e->ue_seq <= durable : e->ue_tid != tid)
			sx_unshared_del(ru, i);
		else
			i++;
	}
	if (ru->ru_n < ru->ru_cap || sx_unshared_grow(ru))
		return;
	for (i = 0; i < ru->ru_n; i++) {
		struct sx_unshared_ext *e = &ru->ru_ext[i];

		if (e->ue_seq) {
			if (have_done)
				sx_unshared_fold(&done, e);
			else
				done = *e;
			have_done = true;
		} else {
			if (have_mine)
				sx_unshared_fold(&mine, e);
			else
				mine = *e;
			have_mine = true;
		}
	}
	ru->ru_n = 0;
	if (have_done)
		ru->ru_ext[ru->ru_n++] = done;
	if (have_mine)
		ru->ru_ext[ru->ru_n++] = mine;
}

/* For tests: let the list grow to @max extents at most (never below what it has room for). */
void sx_refcount_unshared_limit(struct sx_mount *mp, u32 max)
{
	struct sx_refc_unshared *ru = mp->m_unshared;

	if (!ru)
		return;
	sx_mutex_lock(&ru->ru_lock);
	ru->ru_max = max;
	sx_mutex_unlock(&ru->ru_lock);
}

/* [@bno, +@len) was left with one owner by @tp, which holds the fsinfo block. */
static void sx_unshared_add(struct sx_trans *tp, u64 bno, u64 len)
{
	struct sx_refc_unshared *ru = tp->t_mp->m_unshared;
	struct sx_unshared_ext *e;
	u32 i;

	/* offline and test mounts that never write have no record */
	if (!ru)
		return;
	tp->t_flags |= SX_TRANS_UNSHARED;
	sx_mutex_lock(&ru->ru_lock);
	for (i = 0; i < ru->ru_n; i++) {
		e = &ru->ru_ext[i];
		/* the steps of one decrease come one after the other */
		if (!e->ue_seq && e->ue_tid == tp->t_tid &&
		    e->ue_bno <= bno + len && bno <= e->ue_bno + e->ue_len) {
			struct sx_unshared_ext n = { .ue_bno = bno, .ue_len = len };

			sx_unshared_fold(e, &n);
			goto out;
		}
	}
	if (ru->ru_n == ru->ru_cap)
		sx_unshared_make_room(tp->t_mp, ru, tp->t_tid);
	e = &ru->ru_ext[ru->ru_n++];
	e->ue_bno = bno;
	e->ue_len = len;
	e->ue_tid = tp->t_tid;
	e->ue_seq = 0;
out:
	sx_atomic_set(&ru->ru_count, (s32)ru->ru_n);
	sx_mutex_unlock(&ru->ru_lock);
}

void sx_refcount_unshared_commit(struct sx_mount *mp, u64 tid)
{
	struct sx_refc_unshared *ru = mp->m_unshared;
	u64 seq;
	u32 i;

	if (!ru)
		return;
	/* read after the commit: this transaction is counted in it */
	seq = sx_log_commit_seq(mp);
	sx_mutex_lock(&ru->ru_lock);
	for (i = 0; i < ru->ru_n; i++)
		if (!ru->ru_ext[i].ue_seq && ru->ru_ext[i].ue_tid == tid)
			ru->ru_ext[i].ue_seq = seq;
	sx_mutex_unlock(&ru->ru_lock);
}

/*
 * Extents not yet stamped are ignored: they belong to a transaction that
 * was cancelled, or to one still running, which cannot be taking an owner
 * away from blocks that had one already when the caller looked.
 */
int sx_refcount_unshare_barrier(struct sx_mount *mp, u64 bno, u64 len)
{
	struct sx_refc_unshared *ru = mp->m_unshared;
	u64 durable, wait = 0;
	u32 i;

	if (!ru || !sx_atomic_read(&ru->ru_count))
		return 0;
	durable = sx_log_durable_seq(mp);
	sx_mutex_lock(&ru->ru_lock);
	for (i = 0; i < ru->ru_n;) {
		struct sx_unshared_ext *e = &ru->ru_ext[i];

		if (e->ue_seq && e->ue_seq <= durable) {
			sx_unshared_del(ru, i);
			continue;
		}
		if (e->ue_seq && e->ue_bno < bno + len && bno < e->ue_bno + e->ue_len)
			wait = sx_max(wait, e->ue_seq);
		i++;
	}
	sx_atomic_set(&ru->ru_count, (s32)ru->ru_n);
	sx_mutex_unlock(&ru->ru_lock);
	if (!wait)
		return 0;
	/* nothing if a force, done or running, took @wait already */
	return sx_log_force_seq(mp, wait, false);
}

/* A record in host byte order. */
struct sx_refc_irec {
	u64	rf_start;
	u32	rf_len;
	u32	rf_count;
};

/* The end of a record's run. */
static inline u64 sx_refc_end(const struct sx_refc_irec *r)
{
	return r->rf_start + r->rf_len;
}

/* The key of an on-disk record. */
static u64 sx_refcbt_key(const void *rec)
{
	return le64_to_cpu(((const struct sx_drefc_rec *)rec)->rc_startblock);
}

/* Decode an on-disk record. */
static void sx_refc_decode(const struct sx_drefc_rec *d, struct sx_refc_irec *r)
{
	r->rf_start = le64_to_cpu(d->rc_startblock);
	r->rf_len = le32_to_cpu(d->rc_blockcount);
	r->rf_count = le32_to_cpu(d->rc_refcount);
}

/* Encode a record. */
static void sx_refc_encode(const struct sx_refc_irec *r, struct sx_drefc_rec *d)
{
	d->rc_startblock = cpu_to_le64(r->rf_start);
	d->rc_blockcount = cpu_to_le32(r->rf_len);
	d->rc_refcount = cpu_to_le32(r->rf_count);
}

/* A record read from disk: at least two owners, a sane length, on the data area. */
static int sx_refcbt_verify_rec(struct sx_mount *mp, const void *rec)
{
	struct sx_refc_irec r;

	sx_refc_decode(rec, &r);
	if (SX_IS_CORRUPT(mp, r.rf_count < 2) ||
	    SX_IS_CORRUPT(mp, r.rf_len == 0 || r.rf_len > SX_BMAP_MAXLEN) ||
	    SX_IS_CORRUPT(mp, r.rf_start < mp->m_sb.sb_datastart) ||
	    SX_IS_CORRUPT(mp, r.rf_start >= mp->m_sb.sb_dblocks ||
			      r.rf_len > mp->m_sb.sb_dblocks - r.rf_start))
		return -EFSCORRUPTED;
	return 0;
}

/* The tree's root moved: record it in the fsinfo block. */
static int sx_refcbt_set_root(struct sx_btree_cur *cur, u64 root, u32 nlevels)
{
	return sx_fsinfo_set_refc_root(cur->bc_tp, root, nlevels);
}

/* Verifier of refcount B+tree blocks. */
static int sx_refcbt_verify(struct sx_mount *mp, const void *data)
{
	return sx_btree_verify_block(mp, data, &sx_refcbt_ops);
}

static const struct sx_buf_ops sx_refcbt_buf_ops = {
	.bo_name = "refcbt",
	.bo_magic = SX_REFCBT_MAGIC,
	.bo_verify = sx_refcbt_verify,
};

const struct sx_btree_ops sx_refcbt_ops = {
	.bo_name = "refcbt",
	.bo_magic = SX_REFCBT_MAGIC,
	.bo_recsize = sizeof(struct sx_drefc_rec),
	.bo_buf_ops = &sx_refcbt_buf_ops,
	.bo_key = sx_refcbt_key,
	.bo_verify_rec = sx_refcbt_verify_rec,
	.bo_set_root = sx_refcbt_set_root,
};

/*
 * Set up a cursor on the tree, its root taken from the fsinfo block, which
 * stays locked (joined to @tp, or held in *@fibp for a read without a
 * transaction) while the cursor is used.
 */
static int sx_refc_cur_init(struct sx_btree_cur *cur, struct sx_mount *mp,
			    struct sx_trans *tp, struct sx_buf **fibp)
{
	u64 root;
	u32 nlevels;
	int error;

	*fibp = NULL;
	error = sx_fsinfo_get_refc_root(mp, tp, fibp, &root, &nlevels);
	if (error)
		return error;
	sx_btree_cur_init(cur, mp, tp, &sx_refcbt_ops, 0, root, nlevels, NULL);
	cur->bc_hint = root;
	return 0;
}

/* Release a cursor and the fsinfo lock a read without a transaction took. */
static void sx_refc_cur_release(struct sx_btree_cur *cur, struct sx_buf *fibp)
{
	sx_btree_cur_release(cur);
	if (fibp)
		sx_buf_relse(fibp);
}

/* The record at the cursor. */
static int sx_refc_get(struct sx_btree_cur *cur, struct sx_refc_irec *r)
{
	struct sx_drefc_rec d;
	int error;

	error = sx_btree_get(cur, &d);
	if (!error)
		sx_refc_decode(&d, r);
	return error;
}

/*
 * Position the cursor at the last record starting at or before @bno;
 * *@found false if there is none.
 */
static int sx_refc_lookup_le(struct sx_btree_cur *cur, u64 bno, struct sx_refc_irec *r,
			     bool *found)
{
	int error;

	error = sx_btree_lookup(cur, bno, SX_BT_LE, found);
	if (error || !*found)
		return error;
	return sx_refc_get(cur, r);
}

/* Position the cursor at the first record starting at or after @bno. */
static int sx_refc_lookup_ge(struct sx_btree_cur *cur, u64 bno, struct sx_refc_irec *r,
			     bool *found)
{
	int error;

	error = sx_btree_lookup(cur, bno, SX_BT_GE, found);
	if (error || !*found)
		return error;
	return sx_refc_get(cur, r);
}

/* Overwrite the record at the cursor. */
static int sx_refc_update(struct sx_btree_cur *cur, const struct sx_refc_irec *r)
{
	struct sx_drefc_rec d;

	sx_refc_encode(r, &d);
	return sx_btree_update(cur, &d);
}

/* Insert a new record. */
static int sx_refc_insert(struct sx_btree_cur *cur, const struct sx_refc_irec *r)
{
	struct sx_drefc_rec d;

	sx_refc_encode(r, &d);
	return sx_btree_insert(cur, &d);
}

/* Find the record starting exactly at @bno and position the cursor on it. */
static int sx_refc_seek(struct sx_btree_cur *cur, u64 bno)
{
	struct sx_refc_irec r;
	bool found;
	int error;

	error = sx_refc_lookup_le(cur, bno, &r, &found);
	if (!error && (!found || r.rf_start != bno))
		error = -EFSCORRUPTED;
	return error;
}

/* Delete the record starting at @bno. */
static int sx_refc_delete_at(struct sx_btree_cur *cur, u64 bno)
{
	bool found;
	int error;

	error = sx_refc_seek(cur, bno);
	if (!error)
		error = sx_btree_delete(cur, &found);
	return error;
}

/* Replace the record starting at @bno with @r. */
static int sx_refc_update_at(struct sx_btree_cur *cur, u64 bno, const struct sx_refc_irec *r)
{
	int error;

	error = sx_refc_seek(cur, bno);
	if (!error)
		error = sx_refc_update(cur, r);
	return error;
}

/* True if runs @a and @b are adjacent with equal counts and fit one record. */
static bool sx_refc_mergeable(const struct sx_refc_irec *a, const struct sx_refc_irec *b)
{
	return sx_refc_end(a) == b->rf_start && a->rf_count == b->rf_count &&
	       (u64)a->rf_len + b->rf_len <= SX_BMAP_MAXLEN;
}

/*
 * The neighbours of a new run @mid, which lies where there is no record (a
 * gap, or a record just deleted or cut away): the record ending at its
 * start (*@have_left) and the one starting at its end (*@have_right).
 */
static int sx_refc_neighbours(struct sx_btree_cur *cur, const struct sx_refc_irec *mid,
			      struct sx_refc_irec *left, bool *have_left,
			      struct sx_refc_irec *right, bool *have_right)
{
	int error;

	*have_left = false;
	*have_right = false;
	if (mid->rf_start > 0) {
		error = sx_refc_lookup_le(cur, mid->rf_start - 1, left, have_left);
		if (error)
			return error;
		if (*have_left && !sx_refc_mergeable(left, mid))
			*have_left = false;
	}
	error = sx_refc_lookup_ge(cur, sx_refc_end(mid), right, have_right);
	if (error)
		return error;
	if (*have_right && !sx_refc_mergeable(mid, right))
		*have_right = false;
	return 0;
}

/*
 * Store run @mid, which lies where no record is now, merging it with the
 * neighbours it may merge with (@merge_right false: not with the one on
 * the right, which the adjustment is about to change anyway).
 */
static int sx_refc_store(struct sx_btree_cur *cur, struct sx_refc_irec *mid, bool merge_right)
{
	struct sx_refc_irec left, right, m;
	bool have_left, have_right;
	int error;

	error = sx_refc_neighbours(cur, mid, &left, &have_left, &right, &have_right);
	if (error)
		return error;
	if (!merge_right)
		have_right = false;
	if (have_left && have_right &&
	    (u64)left.rf_len + mid->rf_len + right.rf_len > SX_BMAP_MAXLEN)
		have_right = false;
	if (have_left) {
		m = left;
		m.rf_len += mid->rf_len;
		if (have_right) {
			m.rf_len += right.rf_len;
			error = sx_refc_delete_at(cur, right.rf_start);
			if (error)
				return error;
		}
		return sx_refc_update_at(cur, left.rf_start, &m);
	}
	if (have_right) {
		/* the right record starts earlier now: its key moves down */
		m = right;
		m.rf_start = mid->rf_start;
		m.rf_len += mid->rf_len;
		return sx_refc_update_at(cur, right.rf_start, &m);
	}
	return sx_refc_insert(cur, mid);
}

/*
 * Free [@bno, +@len), whose last owner went away, in the step's own
 * transaction (sx_refcount_res_bytes() counts one extent freed and its
 * cancels; the step cut @len to what one free takes): a freeing of a file
 * of many small extents then costs no EFI step per extent.
 */
static int sx_refc_free(struct sx_trans *tp, u64 bno, u64 len)
{
	return sx_free_data(tp, bno, len, SX_FREE_DATA_CANCELS);
}

/*
 * One step of an adjustment by @delta (+1 or -1) of [@bno, @end): change
 * the piece at @bno and set *@next to where the piece ended.
 */
static int sx_refc_step(struct sx_trans *tp, struct sx_btree_cur *cur, u64 bno, u64 end,
			int delta, u64 *next)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_refc_irec l, piece, keep;
	bool found;
	u64 e;
	int error;

	error = sx_refc_lookup_le(cur, bno, &l, &found);
	if (error)
		return error;
	if (found && sx_refc_end(&l) > bno) {
		/* blocks with a record: [bno, e) of record l */
		u32 n = l.rf_count + delta;

		e = sx_min(sx_refc_end(&l), end);
		*next = e;
		piece.rf_start = bno;
		piece.rf_len = (u32)(e - bno);
		piece.rf_count = n;
		if (SX_IS_CORRUPT(mp, delta > 0 && l.rf_count == ~0u))
			return -EFSCORRUPTED;
		/* cut the piece out of l: what remains left of it stays at the cursor */
		if (l.rf_start < bno) {
			keep = l;
			keep.rf_len = (u32)(bno - l.rf_start);
			error = sx_refc_update(cur, &keep);
		} else if (sx_refc_end(&l) > e) {
			keep = l;
			keep.rf_start = e;
			keep.rf_len = (u32)(sx_refc_end(&l) - e);
			error = sx_refc_update(cur, &keep);
		} else {
			error = sx_btree_delete(cur, &found);
		}
		if (error)
			return error;
		if (l.rf_start < bno && sx_refc_end(&l) > e) {
			keep = l;
			keep.rf_start = e;
			keep.rf_len = (u32)(sx_refc_end(&l) - e);
			error = sx_refc_insert(cur, &keep);
			if (error)
				return error;
		}
		/* a piece down to one owner needs no record */
		if (n < 2) {
			sx_unshared_add(tp, bno, e - bno);
			return 0;
		}
		return sx_refc_store(cur, &piece, e == end);
	}

	/* a gap: blocks with one owner, up to the next record */
	e = end;
	if (e - bno > SX_BMAP_MAXLEN)
		e = bno + SX_BMAP_MAXLEN;
	error = sx_refc_lookup_ge(cur, bno, &l, &found);
	if (error)
		return error;
	if (found && l.rf_start < e)
		e = l.rf_start;
	if (delta < 0) {
		/* the last owner let go: the blocks are free */
		e = sx_min(e, bno + sx_alloc_max_extent(mp));
		*next = e;
		return sx_refc_free(tp, bno, e - bno);
	}
	*next = e;
	piece.rf_start = bno;
	piece.rf_len = (u32)(e - bno);
	piece.rf_count = 2;
	return sx_refc_store(cur, &piece, e == end);
}

/* Check an adjustment's range before touching anything. */
static int sx_refc_check_range(struct sx_mount *mp, u64 bno, u64 len)
{
	if (len == 0 || bno < mp->m_sb.sb_datastart || bno >= mp->m_sb.sb_dblocks ||
	    len > mp->m_sb.sb_dblocks - bno)
		return -EFSCORRUPTED;
	return 0;
}

/* Do up to @max_steps steps of adjusting [@bno, +@len) by @delta; *@done: blocks done. */
int sx_refcount_adjust(struct sx_trans *tp, u64 bno, u64 len, int op, u32 max_steps,
		       u64 *done)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_btree_cur cur;
	struct sx_buf *fibp;
	u64 pos = bno, end = bno + len, next;
	int delta, error;
	u32 steps;

	*done = 0;
	if (op == SX_CUI_INCREASE)
		delta = 1;
	else if (op == SX_CUI_DECREASE)
		delta = -1;
	else
		return -EINVAL;
	error = sx_refc_check_range(mp, bno, len);
	if (error)
		return error;
	error = sx_refc_cur_init(&cur, mp, tp, &fibp);
	if (error)
		return error;
	for (steps = 0; pos < end && (max_steps == 0 || steps < max_steps); steps++) {
		error = sx_refc_step(tp, &cur, pos, end, delta, &next);
		if (error)
			break;
		if (SX_IS_CORRUPT(mp, next <= pos)) {
			error = -EFSCORRUPTED;
			break;
		}
		pos = next;
	}
	*done = pos - bno;
	sx_refc_cur_release(&cur, fibp);
	return error;
}

/* The first run of shared blocks inside [@bno, +@len). */
int sx_refcount_find_shared(struct sx_mount *mp, struct sx_trans *tp, u64 bno, u64 len,
			    u64 *sbno, u64 *slen)
{
	struct sx_btree_cur cur;
	struct sx_refc_irec r;
	struct sx_buf *fibp;
	u64 end = bno + len, start, stop;
	bool found;
	int error;

	*sbno = 0;
	*slen = 0;
	if (len == 0 || end < bno)
		return -EINVAL;
	error = sx_refc_cur_init(&cur, mp, tp, &fibp);
	if (error)
		return error;
	error = sx_refc_lookup_le(&cur, bno, &r, &found);
	if (error)
		goto out;
	if (!found || sx_refc_end(&r) <= bno) {
		if (found)
			error = sx_btree_next(&cur, &found);
		else
			error = sx_btree_first(&cur, &found);
		if (error || !found)
			goto out;
		error = sx_refc_get(&cur, &r);
		if (error || r.rf_start >= end)
			goto out;
	}
	/* r overlaps the range; adjacent records extend the shared run */
	start = sx_max(r.rf_start, bno);
	stop = sx_refc_end(&r);
	while (stop < end) {
		error = sx_btree_next(&cur, &found);
		if (error || !found)
			break;
		error = sx_refc_get(&cur, &r);
		if (error || r.rf_start != stop)
			break;
		stop = sx_refc_end(&r);
	}
	if (!error) {
		*sbno = start;
		*slen = sx_min(stop, end) - start;
	}
out:
	sx_refc_cur_release(&cur, fibp);
	return error;
}

/* How many owners block @bno has. */
int sx_refcount_get(struct sx_mount *mp, u64 bno, u32 *count)
{
	struct sx_btree_cur cur;
	struct sx_refc_irec r;
	struct sx_buf *fibp;
	bool found;
	int error;

	*count = 1;
	error = sx_refc_cur_init(&cur, mp, NULL, &fibp);
	if (error)
		return error;
	error = sx_refc_lookup_le(&cur, bno, &r, &found);
	if (!error && found && sx_refc_end(&r) > bno)
		*count = r.rf_count;
	sx_refc_cur_release(&cur, fibp);
	return error;
}

/*
 * Log bytes of one step: at most SX_REFC_STEP_OPS B+tree changes in a tree
 * that may grow by a level, the fsinfo block (root), and an extent freed
 * with its cancels.
 */
u32 sx_refcount_res_bytes(const struct sx_mount *mp)
{
	u32 nlevels = sx_fsinfo_refc_nlevels(mp);

	return SX_REFC_STEP_OPS * sx_btree_res_bytes(mp, nlevels + 1) +
	       sx_trans_buf_bytes(mp) + sx_free_data_res_bytes(mp);
}
