/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Generic B+tree of fixed-size records keyed by a u64, on metadata blocks.
 *
 * One implementation serves the extent map of a large fork, large
 * directories and the refcount tree; each tree type supplies an ops table.
 * The tree does not own its root pointer: the owner (an inode fork, the
 * fsinfo block) keeps root block and height and is told through bo_set_root
 * when they change, in the same transaction.  Equal keys are allowed and
 * stay in insertion order.
 */
#ifndef SX_BTREE_H
#define SX_BTREE_H

#include "util.h"

struct sx_trans;
struct sx_buf;
struct sx_buf_ops;
struct sx_btree_cur;

struct sx_btree_ops {
	const char	*bo_name;
	u32		bo_magic;
	u32		bo_recsize;		/* bytes per record, a multiple of 8 */
	const struct sx_buf_ops *bo_buf_ops;	/* verifier: calls sx_btree_verify_block */
	/* the key of an on-disk record */
	u64		(*bo_key)(const void *rec);
	/* optional: -EFSCORRUPTED if a record read from disk is impossible */
	int		(*bo_verify_rec)(struct sx_mount *mp, const void *rec);
	/* root block or height changed: record and log it (cur->bc_tp) */
	int		(*bo_set_root)(struct sx_btree_cur *cur, u64 root, u32 nlevels);
	/* optional: @delta blocks were allocated (>0) or freed (<0) for the tree */
	void		(*bo_charge)(struct sx_btree_cur *cur, s64 delta);
};

struct sx_btree_level {
	struct sx_buf	*bl_bp;
	u32		bl_ptr;			/* entry index in the block */
};

/*
 * A position in a tree; lives on the caller's stack.  With a transaction the
 * cursor's buffers are joined to it: release the cursor before the
 * transaction commits or rolls, and use one cursor per tree at a time in a
 * transaction (releasing a cursor releases the clean buffers it holds).
 * Without one, the cursor holds its path's buffers locked until released.
 */
struct sx_btree_cur {
	struct sx_mount	*bc_mp;
	struct sx_trans	*bc_tp;			/* NULL: read-only */
	const struct sx_btree_ops *bc_ops;
	u64		bc_owner;		/* bh_owner of every block */
	u64		bc_root;		/* 0 with bc_nlevels 0: empty tree */
	u32		bc_nlevels;
	void		*bc_priv;		/* the owner's, for the callbacks */
	u64		bc_hint;		/* where to allocate new blocks */
	struct sx_btree_level bc_levels[SX_BTREE_MAXLEVELS];	/* [0] = leaf */
};

enum sx_btree_dir {
	SX_BT_LE,	/* last record with key <= the key */
	SX_BT_GE,	/* first record with key >= the key */
};

/** sx_btree_cur_init() - set up a cursor on the tree at @root of @nlevels */
void sx_btree_cur_init(struct sx_btree_cur *cur, struct sx_mount *mp, struct sx_trans *tp,
		       const struct sx_btree_ops *ops, u64 owner, u64 root, u32 nlevels,
		       void *priv);
/** sx_btree_cur_release() - drop the cursor's buffers */
void sx_btree_cur_release(struct sx_btree_cur *cur);

/**
 * sx_btree_lookup() - position at the record nearest @key in direction @dir
 * @found: false if there is none (empty tree, nothing before/after)
 */
int sx_btree_lookup(struct sx_btree_cur *cur, u64 key, enum sx_btree_dir dir, bool *found);
/** sx_btree_first() - position at the first record */
int sx_btree_first(struct sx_btree_cur *cur, bool *found);
/** sx_btree_get() - copy the on-disk record at the cursor */
int sx_btree_get(struct sx_btree_cur *cur, void *rec);
/**
 * sx_btree_get_run() - copy the records from the cursor's to the last of
 * its leaf, at most @max (> 0), into @recs; *@n is how many, and the
 * cursor stands on the last one copied
 */
int sx_btree_get_run(struct sx_btree_cur *cur, void *recs, u32 max, u32 *n);
/** sx_btree_next() / sx_btree_prev() - move one record; @found false at the end */
int sx_btree_next(struct sx_btree_cur *cur, bool *found);
int sx_btree_prev(struct sx_btree_cur *cur, bool *found);

/**
 * sx_btree_insert() - insert @rec in key order (after records with an equal
 * key), splitting blocks and growing the tree as needed; the cursor is then
 * at the new record
 */
int sx_btree_insert(struct sx_btree_cur *cur, const void *rec);
/**
 * sx_btree_delete() - delete the record at the cursor, merging or
 * rebalancing underfull blocks and shrinking the tree; the cursor is then
 * at the record that followed (@found false if none)
 */
int sx_btree_delete(struct sx_btree_cur *cur, bool *found);
/**
 * sx_btree_update() - overwrite the record at the cursor; its key may
 * change only if it stays between its neighbours' keys (-EINVAL otherwise)
 */
int sx_btree_update(struct sx_btree_cur *cur, const void *rec);

/**
 * sx_btree_build() - make a new tree holding @n sorted records (@recs, on-disk
 * form), full blocks; *@root and *@nlevels describe it (bo_set_root is not
 * called)
 */
int sx_btree_build(struct sx_trans *tp, const struct sx_btree_ops *ops, u64 owner,
		   void *priv, u64 hint, const void *recs, u64 n, u64 *root, u32 *nlevels);
/** sx_btree_free_all() - free every block of a tree (binval + free; bo_charge per block) */
int sx_btree_free_all(struct sx_trans *tp, const struct sx_btree_ops *ops, u64 owner,
		      void *priv, u64 root, u32 nlevels);
/**
 * sx_btree_collect() - copy all records (at most @max) of a tree into @recs
 *
 * Return: 0, -EFBIG if the tree holds more than @max records, or a read error.
 */
int sx_btree_collect(struct sx_mount *mp, struct sx_trans *tp, const struct sx_btree_ops *ops,
		     u64 owner, u64 root, u32 nlevels, void *recs, u64 max, u64 *n);

/** sx_btree_maxrecs() - records (leaf) or keys (node) a block can hold */
u32 sx_btree_maxrecs(const struct sx_mount *mp, const struct sx_btree_ops *ops, bool leaf);

/**
 * sx_btree_max_levels() - the greatest height a tree of @ops holding @nrecs
 * records can have (every block but the root is at least half full), at
 * most SX_BTREE_MAXLEVELS
 */
u32 sx_btree_max_levels(const struct sx_mount *mp, const struct sx_btree_ops *ops, u64 nrecs);
/**
 * sx_btree_verify_recs() - @n records at @recs each valid (bo_verify_rec) and
 * in key order: a leaf's, or an inode's inline fork's
 */
int sx_btree_verify_recs(struct sx_mount *mp, const struct sx_btree_ops *ops, const void *recs,
			 u64 n);
/** sx_btree_verify_block() - structure checks of a tree block (for bo_verify) */
int sx_btree_verify_block(struct sx_mount *mp, const void *data, const struct sx_btree_ops *ops);
/**
 * sx_btree_res_bytes() - worst-case log bytes of one insert or delete in a
 * tree of height @nlevels (every level splits or merges, plus a new root)
 */
u32 sx_btree_res_bytes(const struct sx_mount *mp, u32 nlevels);

#endif /* SX_BTREE_H */
