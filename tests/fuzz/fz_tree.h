/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The B+tree block targets (fuzz_bmbt.c, fuzz_refcount.c): one block of a
 * tree of the golden image with many extents is replaced by the input.
 */
#ifndef FZ_TREE_H
#define FZ_TREE_H

#include "fz.h"

struct fz_tree {
	const char	*tr_name;
	u32		tr_magic;
	const struct sx_buf_ops *tr_buf_ops;
	/* the trees' owners (inode numbers, or 0 for the refcount tree) */
	u64		tr_owner[2];
	u32		tr_nowners;
	/* read everything tree @which maps on a mount that took its block */
	void		(*tr_walk)(struct sx_mount *mp, const struct fz_image *img, u32 which);
	/* filled by fz_tree_init() */
	struct fz_image	tr_img;
	struct sx_bdev	*tr_bd;
	struct sx_mount	*tr_mp;			/* read-only, for the verifier */
	u64		tr_blocks[2][256];
	u32		tr_nblocks[2];
};

/* The operations after the block when the input has none (fz_ops_run() form). */
extern const u8 fz_tree_ops[];
extern const size_t fz_tree_ops_len;

/* fz_tree_init() - the golden image and its tree blocks; @owners is called on it */
int fz_tree_init(struct fz_tree *t, void (*owners)(struct fz_tree *t));

/*
 * fz_tree_run() - the input is a selector (which tree, which of its
 * blocks), a byte of FZ_BLK_* fix-ups, the block, then operations
 * (fz_tree_ops when there are none)
 */
int fz_tree_run(struct fz_tree *t, const u8 *data, size_t size);

#endif /* FZ_TREE_H */
