/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An inode fork: a sorted set of fixed-size records kept inline in the
 * inode block while they fit, and in a B+tree (engine/btree.c) when they do
 * not.  The extent map (bmap.c) and the directory (dir.c) are forks with
 * different record types.  The fork converts itself: to a B+tree when an
 * insert overflows the inline area, back inline when a delete leaves at most
 * half of what the inline area holds (the gap stops a file at the boundary
 * from converting on every operation).
 */
#ifndef SX_FORK_H
#define SX_FORK_H

#include "util.h"
#include "btree.h"

struct sx_inode;

/*
 * A record type stored in a fork.  Its B+tree ops must use
 * sx_fork_btree_set_root and sx_fork_btree_charge as bo_set_root and
 * bo_charge: the fork's cursors carry the inode in bc_priv.
 */
struct sx_fork_ops {
	const struct sx_btree_ops *fo_btree;	/* its B+tree form; gives size and key */
};

/** sx_fork_btree_set_root() - bo_set_root of fork trees: the inode's i_broot/i_blevel */
int sx_fork_btree_set_root(struct sx_btree_cur *cur, u64 root, u32 nlevels);
/** sx_fork_btree_charge() - bo_charge of fork trees: the inode's i_nblocks */
void sx_fork_btree_charge(struct sx_btree_cur *cur, s64 delta);

/*
 * A position in a fork; lives on the caller's stack.  One cursor at a time
 * works on a fork within a transaction: cursors share the transaction's
 * buffers, and one that lets a block go would take it from under another
 * (VERIFY in sx_trans_brelse()).  So a kept cursor's path is the fork's
 * own until it is released, which sx_bmap_find() relies on to start from
 * where the cursor stands.
 */
struct sx_fork_cur {
	struct sx_inode	*fc_ip;
	struct sx_trans	*fc_tp;			/* NULL: read-only */
	const struct sx_fork_ops *fc_ops;
	bool		fc_btree;		/* which form the cursor is on */
	u64		fc_idx;			/* inline: record index */
	struct sx_btree_cur fc_bt;		/* B+tree form */
};

/** sx_fork_inline_max() - records the inline area of @mp's inodes holds */
u32 sx_fork_inline_max(const struct sx_mount *mp, const struct sx_fork_ops *ops);

/** sx_fork_cur_init() - set up a cursor on @ip's fork (caller holds the inode lock) */
void sx_fork_cur_init(struct sx_fork_cur *fc, struct sx_inode *ip, struct sx_trans *tp,
		      const struct sx_fork_ops *ops);
/** sx_fork_cur_release() - drop the cursor's buffers */
void sx_fork_cur_release(struct sx_fork_cur *fc);

/* The same operations as the B+tree cursor, on either form. */
int sx_fork_lookup(struct sx_fork_cur *fc, u64 key, enum sx_btree_dir dir, bool *found);
int sx_fork_first(struct sx_fork_cur *fc, bool *found);
int sx_fork_get(struct sx_fork_cur *fc, void *rec);
/**
 * sx_fork_get_run() - copy the records from the cursor's on, at most @max
 * (> 0), as far as one block holds them (sx_btree_get_run()); *@n is how
 * many, and the cursor stands on the last one copied
 */
int sx_fork_get_run(struct sx_fork_cur *fc, void *recs, u32 max, u32 *n);
int sx_fork_next(struct sx_fork_cur *fc, bool *found);
int sx_fork_prev(struct sx_fork_cur *fc, bool *found);
/* insert and delete may convert the fork; the cursor is then re-positioned */
int sx_fork_insert(struct sx_fork_cur *fc, const void *rec);
int sx_fork_delete(struct sx_fork_cur *fc, bool *found);
int sx_fork_update(struct sx_fork_cur *fc, const void *rec);

/** sx_fork_free_all() - drop every record (and B+tree block) of the fork */
int sx_fork_free_all(struct sx_trans *tp, struct sx_inode *ip, const struct sx_fork_ops *ops);

/** sx_fork_res_bytes() - worst-case log bytes of one fork insert or delete */
u32 sx_fork_res_bytes(const struct sx_mount *mp, const struct sx_inode *ip);

#endif /* SX_FORK_H */
