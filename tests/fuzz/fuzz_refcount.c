// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the refcount tree.  The input (fz_tree.h) replaces one block
 * of the golden image's refcount tree (a record for each of the 300 runs
 * files a and b share): the verifier runs on it alone, the checker on the
 * image, and a mount asks the refcount of every seventh block of the data
 * area and for every shared run in it, then runs the operations after the
 * block (or fz_tree_ops), whose copy-on-write, clones, swaps and punches
 * change refcounts.
 */
#include "fz_tree.h"
#include "refcount.h"
#include "btree.h"

static void refc_walk(struct sx_mount *mp, const struct fz_image *img, u32 which)
{
	const struct sx_sb *sb = &img->im_sb;
	u64 bno, sbno, slen;
	u32 count;

	for (bno = sb->sb_datastart; bno < sb->sb_dblocks; bno += 7)
		if (sx_refcount_get(mp, bno, &count))
			break;
	for (bno = sb->sb_datastart; bno < sb->sb_dblocks; bno = sbno + slen) {
		if (sx_refcount_find_shared(mp, NULL, bno, sb->sb_dblocks - bno, &sbno, &slen) ||
		    !slen)
			break;
	}
}

static struct fz_tree refc_tree = {
	.tr_name = "refcount",
	.tr_magic = SX_REFCBT_MAGIC,
	.tr_walk = refc_walk,
};

static void refc_owners(struct fz_tree *t)
{
	t->tr_buf_ops = sx_refcbt_ops.bo_buf_ops;
	t->tr_owner[0] = 0;
	t->tr_nowners = 1;
}

static int refc_init(void)
{
	return fz_tree_init(&refc_tree, refc_owners);
}

static int refc_run(const u8 *data, size_t size)
{
	return fz_tree_run(&refc_tree, data, size);
}

FZ_TARGET(refcount, refc_init, refc_run)
