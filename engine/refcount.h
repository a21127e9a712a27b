/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reference counts of shared blocks, in a B+tree rooted in the fsinfo
 * block.  A mapped block without a record has one owner; a record says how
 * many mappings share its blocks (always >= 2).  Dropping the last owner
 * frees the blocks.
 */
#ifndef SX_REFCOUNT_H
#define SX_REFCOUNT_H

#include "util.h"

struct sx_trans;

extern const struct sx_btree_ops sx_refcbt_ops;

/**
 * sx_refcount_adjust() - up to @max_steps steps (0: all) of an increase
 * (@op SX_CUI_INCREASE) or decrease (SX_CUI_DECREASE) of [@bno, +@len)
 * @done: blocks of the range, from @bno, that are done
 *
 * A step changes the piece at the front of what is left (part of one
 * record, or of the gap between two), at most three B+tree changes and one
 * extent freed, within sx_refcount_res_bytes(); the tree is canonical after
 * every step.  Return: 0, -EFSCORRUPTED (a range off the data area, a free
 * block losing an owner), -ENOSPC, -ENOMEM, -EIO.
 */
int sx_refcount_adjust(struct sx_trans *tp, u64 bno, u64 len, int op, u32 max_steps,
		       u64 *done);

/**
 * sx_refcount_find_shared() - the first shared run inside [@bno, +@len):
 * *@sbno and *@slen (0 if none), for copy-on-write
 * @tp: the caller's transaction, or NULL
 */
int sx_refcount_find_shared(struct sx_mount *mp, struct sx_trans *tp, u64 bno, u64 len,
			    u64 *sbno, u64 *slen);

/**
 * sx_refcount_get() - how many owners block @bno has (1 if no record);
 * takes the fsinfo block's lock, so never call it inside a transaction
 * that holds it (one that changed refcounts or inodes' allocation)
 */
int sx_refcount_get(struct sx_mount *mp, u64 bno, u32 *count);

/** sx_refcount_res_bytes() - log bytes of one increase or decrease step */
u32 sx_refcount_res_bytes(const struct sx_mount *mp);

/*
 * Blocks a decrease left with one owner, until the log makes that durable.
 * A write into a block its file owns alone goes in place; were the change
 * that took the other owner away lost in a crash, that owner would map the
 * block again and read what was written into it.
 */

/** sx_refcount_unshared_init() / _destroy() - the mount's record of such blocks */
int sx_refcount_unshared_init(struct sx_mount *mp);
void sx_refcount_unshared_destroy(struct sx_mount *mp);

/**
 * sx_refcount_unshared_commit() - transaction @tid, which left blocks with
 * one owner (SX_TRANS_UNSHARED), is queued to the log; call it before the
 * transaction's buffers are released
 */
void sx_refcount_unshared_commit(struct sx_mount *mp, u64 tid);

/**
 * sx_refcount_unshare_barrier() - before file data is written in place
 * into [@bno, +@len), which its file owns alone (sx_refcount_find_shared()
 * said so): force the log if a transaction that left any of those blocks
 * with one owner may not be durable yet
 */
int sx_refcount_unshare_barrier(struct sx_mount *mp, u64 bno, u64 len);

/**
 * sx_refcount_unshared_limit() - for tests: the record of blocks left with
 * one owner grows to @max extents at most before it folds them (the mount
 * starts with room for 32 and never goes below that)
 */
void sx_refcount_unshared_limit(struct sx_mount *mp, u32 max);

#endif /* SX_REFCOUNT_H */
