// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Inode forks: a sorted set of fixed-size records, inline in the inode
 * block while they fit and in a B+tree (btree.c) when they do not.
 *
 * Inline form (SX_DIF_INLINE): i_nrecs records sorted by key at the start
 * of the fork area, the rest of the area zero.  B+tree form (SX_DIF_BTREE):
 * the fork area is zero; i_broot is the root block and i_blevel the tree's
 * height - 1 (i_broot 0 only for an instant, when the last record of a tree
 * goes, before the fork turns inline again).  i_nrecs counts the records in
 * both forms, and i_nblocks includes the tree's blocks.
 *
 * An insert that would overflow the inline area builds a tree from the
 * inline records and the new one; a delete that leaves at most half of
 * what the inline area holds collects the tree's records, frees the tree
 * and writes them inline.  Changes to the fork area are logged here
 * (exactly the bytes changed); the core goes through sx_inode_log().  If
 * an operation fails, the in-core fork fields are put back as they were,
 * so that cancelling the transaction leaves inode and block agreeing.
 */
#include "util.h"
#include "fork.h"
#include "btree.h"
#include "inode.h"
#include "trans.h"
#include "buf.h"
#include "alloc.h"
#include "mount.h"

/* The in-core fork fields an operation may change, for putting them back. */
struct fork_saved {
	u16	fs_format;
	u64	fs_nrecs;
	u64	fs_broot;
	u32	fs_blevel;
	u64	fs_nblocks;
};

/* Remember @ip's fork fields. */
static void fork_save(const struct sx_inode *ip, struct fork_saved *fs)
{
	fs->fs_format = ip->i_format;
	fs->fs_nrecs = ip->i_nrecs;
	fs->fs_broot = ip->i_broot;
	fs->fs_blevel = ip->i_blevel;
	fs->fs_nblocks = ip->i_nblocks;
}

/* Put @ip's fork fields back after a failed operation. */
static void fork_restore(struct sx_inode *ip, const struct fork_saved *fs)
{
	ip->i_format = fs->fs_format;
	ip->i_nrecs = fs->fs_nrecs;
	ip->i_broot = fs->fs_broot;
	ip->i_blevel = fs->fs_blevel;
	ip->i_nblocks = fs->fs_nblocks;
}

/* Records the inline area holds. */
u32 sx_fork_inline_max(const struct sx_mount *mp, const struct sx_fork_ops *ops)
{
	return (u32)(SX_FORK_BYTES(mp->m_bsize) / ops->fo_btree->bo_recsize);
}

/* Height of the inode's tree (0: none). */
static u32 fork_bt_levels(const struct sx_inode *ip)
{
	return ip->i_broot ? ip->i_blevel + 1 : 0;
}

/* bo_set_root of fork trees: record the new root in the inode and log it. */
int sx_fork_btree_set_root(struct sx_btree_cur *cur, u64 root, u32 nlevels)
{
	struct sx_inode *ip = cur->bc_priv;

	ip->i_broot = root;
	ip->i_blevel = nlevels ? nlevels - 1 : 0;
	return sx_inode_log(cur->bc_tp, ip);
}

/* bo_charge of fork trees: tree blocks count in the inode's blocks. */
void sx_fork_btree_charge(struct sx_btree_cur *cur, s64 delta)
{
	struct sx_inode *ip = cur->bc_priv;

	ip->i_nblocks += delta;
}

/* Point the cursor's B+tree part at the inode's tree as it is now. */
static void fork_bt_init(struct sx_fork_cur *fc)
{
	struct sx_inode *ip = fc->fc_ip;

	sx_btree_cur_init(&fc->fc_bt, ip->i_mp, fc->fc_tp, fc->fc_ops->fo_btree, ip->i_ino,
			  ip->i_broot, fork_bt_levels(ip), ip);
	fc->fc_bt.bc_hint = ip->i_ino;
}

/* Set up a cursor on the fork. */
void sx_fork_cur_init(struct sx_fork_cur *fc, struct sx_inode *ip, struct sx_trans *tp,
		      const struct sx_fork_ops *ops)
{
	ASSERT(sx_mutex_is_held(&ip->i_ilock));
	memset(fc, 0, sizeof(*fc));
	fc->fc_ip = ip;
	fc->fc_tp = tp;
	fc->fc_ops = ops;
	fc->fc_btree = ip->i_format == SX_DIF_BTREE;
	fork_bt_init(fc);
}

/* Drop the cursor's buffers. */
void sx_fork_cur_release(struct sx_fork_cur *fc)
{
	sx_btree_cur_release(&fc->fc_bt);
}

/* The fork's format must be one we know. */
static int fork_check_format(const struct sx_fork_cur *fc)
{
	const struct sx_inode *ip = fc->fc_ip;

	if (SX_IS_CORRUPT(ip->i_mp, ip->i_format != SX_DIF_INLINE &&
			  ip->i_format != SX_DIF_BTREE))
		return -EFSCORRUPTED;
	return 0;
}

/*
 * Before positioning: follow the fork if it changed form or root since
 * cur_init.  A B+tree cursor still on the fork's tree keeps its path, so
 * that the B+tree can reuse it when the new position is near the old one.
 */
static int fork_resync(struct sx_fork_cur *fc)
{
	struct sx_inode *ip = fc->fc_ip;
	int error = fork_check_format(fc);

	if (error)
		return error;
	if (fc->fc_btree && ip->i_format == SX_DIF_BTREE &&
	    fc->fc_bt.bc_root == ip->i_broot && fc->fc_bt.bc_nlevels == fork_bt_levels(ip))
		return 0;
	sx_btree_cur_release(&fc->fc_bt);
	fc->fc_btree = fc->fc_ip->i_format == SX_DIF_BTREE;
	fork_bt_init(fc);
	return 0;
}

/* A positioned cursor must still be on the fork's current form. */
static int fork_check_form(const struct sx_fork_cur *fc)
{
	int error = fork_check_format(fc);

	if (error)
		return error;
	if (fc->fc_btree != (fc->fc_ip->i_format == SX_DIF_BTREE))
		return -EINVAL;
	return 0;
}

/* Record @i of the inline area of inode block image @data. */
static inline u8 *fork_rec(const struct sx_fork_cur *fc, void *data, u64 i)
{
	return (u8 *)data + SX_DINODE_CORE + i * fc->fc_ops->fo_btree->bo_recsize;
}

/* Key of inline record @i. */
static inline u64 fork_key(const struct sx_fork_cur *fc, void *data, u64 i)
{
	return fc->fc_ops->fo_btree->bo_key(fork_rec(fc, data, i));
}

/* Release an inode buffer taken without a transaction. */
static void fork_relse(struct sx_fork_cur *fc, struct sx_buf *bp)
{
	if (!fc->fc_tp)
		sx_buf_relse(bp);
}

/*
 * The inode block of an inline fork of no more records than fit.  The
 * records themselves were checked as the block was read (sx_inode_verify(),
 * as a leaf's are), and are again before it is written: checked at every
 * lookup instead, a fork of a hundred extents was walked whole by each one.
 */
static int fork_inline_buf(struct sx_fork_cur *fc, struct sx_buf **bpp)
{
	struct sx_inode *ip = fc->fc_ip;
	struct sx_mount *mp = ip->i_mp;

	if (SX_IS_CORRUPT(mp, ip->i_nrecs > sx_fork_inline_max(mp, fc->fc_ops)))
		return -EFSCORRUPTED;
	return sx_inode_get_buf(mp, fc->fc_tp, ip, bpp);
}

/* First inline index whose key is >= @key (@upper: > @key). */
static u64 fork_search(const struct sx_fork_cur *fc, void *data, u64 n, u64 key, bool upper)
{
	u64 lo = 0, hi = n;

	while (lo < hi) {
		u64 mid = lo + (hi - lo) / 2;
		u64 k = fork_key(fc, data, mid);

		if (k < key || (upper && k == key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Log bytes [@first, @end) of the inline area. */
static int fork_log(struct sx_fork_cur *fc, struct sx_buf *bp, u64 first, u64 end)
{
	if (first >= end)
		return 0;
	return sx_trans_log_buf(fc->fc_tp, bp, (u32)(SX_DINODE_CORE + first),
				(u32)(SX_DINODE_CORE + end - 1));
}

/* Position at the record nearest @key in direction @dir. */
int sx_fork_lookup(struct sx_fork_cur *fc, u64 key, enum sx_btree_dir dir, bool *found)
{
	struct sx_buf *bp;
	u64 n, i;
	int error;

	*found = false;
	error = fork_resync(fc);
	if (error)
		return error;
	if (fc->fc_btree)
		return sx_btree_lookup(&fc->fc_bt, key, dir, found);
	error = fork_inline_buf(fc, &bp);
	if (error)
		return error;
	n = fc->fc_ip->i_nrecs;
	if (dir == SX_BT_GE) {
		i = fork_search(fc, bp->b_data, n, key, false);
		fc->fc_idx = i;
		*found = i < n;
	} else {
		i = fork_search(fc, bp->b_data, n, key, true);
		fc->fc_idx = i ? i - 1 : 0;
		*found = i > 0;
	}
	fork_relse(fc, bp);
	return 0;
}

/* Position at the first record. */
int sx_fork_first(struct sx_fork_cur *fc, bool *found)
{
	return sx_fork_lookup(fc, 0, SX_BT_GE, found);
}

/* Copy @k inline records from the cursor's on. */
static int fork_inline_copy(struct sx_fork_cur *fc, void *recs, u64 k)
{
	struct sx_inode *ip = fc->fc_ip;
	struct sx_buf *bp;
	int error;

	error = sx_inode_get_buf(ip->i_mp, fc->fc_tp, ip, &bp);
	if (error)
		return error;
	memcpy(recs, fork_rec(fc, bp->b_data, fc->fc_idx),
	       (size_t)k * fc->fc_ops->fo_btree->bo_recsize);
	fork_relse(fc, bp);
	return 0;
}

/*
 * Copy the record at the cursor.  Not a run of one: this is the hot path
 * of every fork walk, and going through sx_fork_get_run() cost a swap of
 * 100,000 extents 5% more instructions.
 */
int sx_fork_get(struct sx_fork_cur *fc, void *rec)
{
	int error;

	error = fork_check_form(fc);
	if (error)
		return error;
	if (fc->fc_btree)
		return sx_btree_get(&fc->fc_bt, rec);
	if (fc->fc_idx >= fc->fc_ip->i_nrecs)
		return -EINVAL;
	return fork_inline_copy(fc, rec, 1);
}

/* Copy a run of records from the cursor's on (see fork.h). */
int sx_fork_get_run(struct sx_fork_cur *fc, void *recs, u32 max, u32 *n)
{
	u64 k;
	int error;

	*n = 0;
	error = fork_check_form(fc);
	if (error)
		return error;
	if (fc->fc_btree)
		return sx_btree_get_run(&fc->fc_bt, recs, max, n);
	if (fc->fc_idx >= fc->fc_ip->i_nrecs || max == 0)
		return -EINVAL;
	k = sx_min((u64)max, fc->fc_ip->i_nrecs - fc->fc_idx);
	error = fork_inline_copy(fc, recs, k);
	if (error)
		return error;
	fc->fc_idx += k - 1;
	*n = (u32)k;
	return 0;
}

/* Move to the next record. */
int sx_fork_next(struct sx_fork_cur *fc, bool *found)
{
	int error;

	*found = false;
	error = fork_check_form(fc);
	if (error)
		return error;
	if (fc->fc_btree)
		return sx_btree_next(&fc->fc_bt, found);
	if (fc->fc_idx >= fc->fc_ip->i_nrecs)
		return -EINVAL;
	if (fc->fc_idx + 1 < fc->fc_ip->i_nrecs) {
		fc->fc_idx++;
		*found = true;
	}
	return 0;
}

/* Move to the previous record. */
int sx_fork_prev(struct sx_fork_cur *fc, bool *found)
{
	int error;

	*found = false;
	error = fork_check_form(fc);
	if (error)
		return error;
	if (fc->fc_btree)
		return sx_btree_prev(&fc->fc_bt, found);
	if (fc->fc_idx >= fc->fc_ip->i_nrecs)
		return -EINVAL;
	if (fc->fc_idx > 0) {
		fc->fc_idx--;
		*found = true;
	}
	return 0;
}

/*
 * The inline area is full: build a tree from its records with @rec at
 * index @pos, clear the area and switch the fork to the B+tree form; the
 * cursor ends on the new record.
 */
static int fork_to_btree(struct sx_fork_cur *fc, struct sx_buf *bp, u64 pos, const void *rec)
{
	struct sx_inode *ip = fc->fc_ip;
	const struct sx_btree_ops *bops = fc->fc_ops->fo_btree;
	u32 rs = bops->bo_recsize, nlevels;
	u64 n = ip->i_nrecs, root;
	u8 *recs, *area = fork_rec(fc, bp->b_data, 0);
	bool found;
	int error;

	recs = sx_alloc((size_t)(n + 1) * rs, SX_NOFS);
	if (!recs)
		return -ENOMEM;
	memcpy(recs, area, (size_t)pos * rs);
	memcpy(recs + pos * rs, rec, rs);
	memcpy(recs + (pos + 1) * rs, area + pos * rs, (size_t)(n - pos) * rs);
	error = sx_btree_build(fc->fc_tp, bops, ip->i_ino, ip, ip->i_ino, recs, n + 1, &root,
			       &nlevels);
	if (error)
		goto out_free;
	memset(area, 0, (size_t)n * rs);
	error = fork_log(fc, bp, 0, n * rs);
	if (error)
		goto out_free;
	ip->i_format = SX_DIF_BTREE;
	ip->i_broot = root;
	ip->i_blevel = nlevels - 1;
	ip->i_nrecs = n + 1;
	error = sx_inode_log(fc->fc_tp, ip);
	if (error)
		goto out_free;
	fc->fc_btree = true;
	fork_bt_init(fc);
	/* the new record is the last one with its key */
	error = sx_btree_lookup(&fc->fc_bt, bops->bo_key(rec), SX_BT_LE, &found);
	if (!error && SX_IS_CORRUPT(ip->i_mp, !found))
		error = -EFSCORRUPTED;
out_free:
	sx_free(recs);
	return error;
}

/* Insert @rec after records with an equal key; the cursor ends on it. */
int sx_fork_insert(struct sx_fork_cur *fc, const void *rec)
{
	struct sx_inode *ip = fc->fc_ip;
	struct sx_mount *mp = ip->i_mp;
	const struct sx_btree_ops *bops = fc->fc_ops->fo_btree;
	u32 rs = bops->bo_recsize;
	struct fork_saved fs;
	struct sx_buf *bp;
	u64 n, pos;
	int error;

	if (!fc->fc_tp)
		return -EINVAL;
	error = fork_resync(fc);
	if (error)
		return error;
	fork_save(ip, &fs);
	if (fc->fc_btree) {
		error = sx_btree_insert(&fc->fc_bt, rec);
		if (error)
			goto out_restore;
		ip->i_nrecs++;
		error = sx_inode_log(fc->fc_tp, ip);
		goto out_restore;
	}
	error = fork_inline_buf(fc, &bp);
	if (error)
		return error;
	n = ip->i_nrecs;
	pos = fork_search(fc, bp->b_data, n, bops->bo_key(rec), true);
	if (n >= sx_fork_inline_max(mp, fc->fc_ops)) {
		error = fork_to_btree(fc, bp, pos, rec);
		goto out_restore;
	}
	memmove(fork_rec(fc, bp->b_data, pos + 1), fork_rec(fc, bp->b_data, pos),
		(size_t)(n - pos) * rs);
	memcpy(fork_rec(fc, bp->b_data, pos), rec, rs);
	error = fork_log(fc, bp, pos * rs, (n + 1) * rs);
	if (error)
		goto out_restore;
	ip->i_nrecs = n + 1;
	fc->fc_idx = pos;
	error = sx_inode_log(fc->fc_tp, ip);
out_restore:
	if (error)
		fork_restore(ip, &fs);
	return error;
}

/*
 * The tree has few records left: copy them inline, free the tree and
 * switch the fork to the inline form.  @found says whether the cursor was
 * on a record (the one after the deleted one), which it stays on.
 */
static int fork_to_inline(struct sx_fork_cur *fc, bool *found)
{
	struct sx_inode *ip = fc->fc_ip;
	struct sx_mount *mp = ip->i_mp;
	const struct sx_btree_ops *bops = fc->fc_ops->fo_btree;
	u64 n = ip->i_nrecs, idx = n, got;
	u32 rs = bops->bo_recsize;
	struct sx_buf *bp;
	bool more;
	u8 *recs;
	int error;

	if (*found) {
		/* where the cursor is, as an index: records before it */
		if (fc->fc_bt.bc_nlevels == 1) {
			idx = fc->fc_bt.bc_levels[0].bl_ptr;
		} else {
			idx = 0;
			do {
				error = sx_btree_prev(&fc->fc_bt, &more);
				if (error)
					return error;
				if (more)
					idx++;
				if (SX_IS_CORRUPT(mp, idx >= n))
					return -EFSCORRUPTED;
			} while (more);
		}
	}
	sx_btree_cur_release(&fc->fc_bt);

	recs = sx_alloc((size_t)sx_max(n, 1) * rs, SX_NOFS);
	if (!recs)
		return -ENOMEM;
	error = sx_btree_collect(mp, fc->fc_tp, bops, ip->i_ino, ip->i_broot, fork_bt_levels(ip),
				 recs, n, &got);
	if (error == -EFBIG || (!error && got != n)) {
		sx_corruption_report(mp, "tree records != i_nrecs", __func__, __LINE__);
		error = -EFSCORRUPTED;
	}
	if (error)
		goto out_free;
	error = sx_btree_free_all(fc->fc_tp, bops, ip->i_ino, ip, ip->i_broot,
				  fork_bt_levels(ip));
	if (error)
		goto out_free;
	error = sx_inode_get_buf(mp, fc->fc_tp, ip, &bp);
	if (error)
		goto out_free;
	memcpy(fork_rec(fc, bp->b_data, 0), recs, (size_t)n * rs);
	error = fork_log(fc, bp, 0, n * rs);
	if (error)
		goto out_free;
	ip->i_format = SX_DIF_INLINE;
	ip->i_broot = 0;
	ip->i_blevel = 0;
	fc->fc_btree = false;
	fork_bt_init(fc);
	fc->fc_idx = idx;
	*found = idx < n;
out_free:
	sx_free(recs);
	return error;
}

/* Delete the record at the cursor; the cursor ends on the one that followed. */
int sx_fork_delete(struct sx_fork_cur *fc, bool *found)
{
	struct sx_inode *ip = fc->fc_ip;
	struct sx_mount *mp = ip->i_mp;
	u32 rs = fc->fc_ops->fo_btree->bo_recsize;
	struct fork_saved fs;
	struct sx_buf *bp;
	u64 n, idx = fc->fc_idx;
	int error;

	*found = false;
	if (!fc->fc_tp)
		return -EINVAL;
	error = fork_check_form(fc);
	if (error)
		return error;
	fork_save(ip, &fs);
	if (fc->fc_btree) {
		if (SX_IS_CORRUPT(mp, ip->i_nrecs == 0))
			return -EFSCORRUPTED;
		error = sx_btree_delete(&fc->fc_bt, found);
		if (error)
			goto out_restore;
		ip->i_nrecs--;
		if (ip->i_nrecs <= sx_fork_inline_max(mp, fc->fc_ops) / 2) {
			error = fork_to_inline(fc, found);
			if (error)
				goto out_restore;
		}
		error = sx_inode_log(fc->fc_tp, ip);
		goto out_restore;
	}
	error = fork_inline_buf(fc, &bp);
	if (error)
		return error;
	n = ip->i_nrecs;
	if (idx >= n)
		return -EINVAL;
	memmove(fork_rec(fc, bp->b_data, idx), fork_rec(fc, bp->b_data, idx + 1),
		(size_t)(n - idx - 1) * rs);
	memset(fork_rec(fc, bp->b_data, n - 1), 0, rs);
	error = fork_log(fc, bp, idx * rs, n * rs);
	if (error)
		goto out_restore;
	ip->i_nrecs = n - 1;
	*found = idx < n - 1;
	error = sx_inode_log(fc->fc_tp, ip);
out_restore:
	if (error) {
		fork_restore(ip, &fs);
		*found = false;
	}
	return error;
}

/* Overwrite the record at the cursor; its key must stay between its neighbours'. */
int sx_fork_update(struct sx_fork_cur *fc, const void *rec)
{
	struct sx_inode *ip = fc->fc_ip;
	const struct sx_btree_ops *bops = fc->fc_ops->fo_btree;
	u64 key = bops->bo_key(rec), idx = fc->fc_idx, n;
	struct sx_buf *bp;
	int error;

	if (!fc->fc_tp)
		return -EINVAL;
	error = fork_check_form(fc);
	if (error)
		return error;
	if (fc->fc_btree)
		return sx_btree_update(&fc->fc_bt, rec);
	error = fork_inline_buf(fc, &bp);
	if (error)
		return error;
	n = ip->i_nrecs;
	if (idx >= n ||
	    (idx > 0 && fork_key(fc, bp->b_data, idx - 1) > key) ||
	    (idx + 1 < n && fork_key(fc, bp->b_data, idx + 1) < key))
		return -EINVAL;
	memcpy(fork_rec(fc, bp->b_data, idx), rec, bops->bo_recsize);
	return fork_log(fc, bp, idx * bops->bo_recsize, (idx + 1) * bops->bo_recsize);
}

/* Drop every record of the fork, and its tree. */
int sx_fork_free_all(struct sx_trans *tp, struct sx_inode *ip, const struct sx_fork_ops *ops)
{
	struct sx_fork_cur fc;
	struct fork_saved fs;
	struct sx_buf *bp;
	int error;

	sx_fork_cur_init(&fc, ip, tp, ops);
	error = fork_check_format(&fc);
	if (error)
		return error;
	fork_save(ip, &fs);
	if (fc.fc_btree) {
		error = sx_btree_free_all(tp, ops->fo_btree, ip->i_ino, ip, ip->i_broot,
					  fork_bt_levels(ip));
	} else if (ip->i_nrecs) {
		error = fork_inline_buf(&fc, &bp);
		if (!error) {
			memset(fork_rec(&fc, bp->b_data, 0), 0,
			       (size_t)ip->i_nrecs * ops->fo_btree->bo_recsize);
			error = fork_log(&fc, bp, 0, ip->i_nrecs * ops->fo_btree->bo_recsize);
		}
	}
	if (error)
		goto out_restore;
	ip->i_format = SX_DIF_INLINE;
	ip->i_nrecs = 0;
	ip->i_broot = 0;
	ip->i_blevel = 0;
	error = sx_inode_log(tp, ip);
out_restore:
	if (error)
		fork_restore(ip, &fs);
	return error;
}

/*
 * Worst-case log bytes of one fork insert or delete: the inode block, plus
 * in the inline form the tree an overflowing insert builds (at most three
 * blocks: the inline records and one more fill at most two leaves, since a
 * leaf holds at least as many records as the inline area, plus a root), or
 * in the B+tree form one tree insert or delete and, for a delete that
 * turns the fork inline, freeing what is left of the tree (one block per
 * level of a tree that small).
 */
u32 sx_fork_res_bytes(const struct sx_mount *mp, const struct sx_inode *ip)
{
	u32 ino = sx_max(sx_trans_buf_bytes(mp), sx_inode_res_bytes(mp));
	u32 blk = sx_trans_buf_bytes(mp) + sx_alloc_res_bytes(mp);
	u32 inval = sx_trans_op_bytes(sizeof(struct sx_dlog_buf));
	u32 levels;

	if (ip->i_format != SX_DIF_BTREE)
		return ino + 3 * blk;
	levels = fork_bt_levels(ip);
	return ino + sx_btree_res_bytes(mp, levels) + levels * (inval + sx_alloc_res_bytes(mp));
}
