// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: an extent map B+tree block.  The input (fz_tree.h) replaces
 * one block of file a's three-level extent tree, or of its clone b's, in a
 * copy of the golden image: the verifier runs on it alone, the checker on
 * the image, and a mount maps every block of that file (lookups down the
 * tree, next and previous), then runs the operations after the block
 * (or fz_tree_ops), which insert and delete records.
 */
#include "fz_tree.h"
#include "bmap.h"
#include "btree.h"

/*
 * Map every block of the file whose tree holds the damaged block, in
 * fiemap's chunks: lookups down the tree, then next and previous.  The
 * other file's tree is intact, and walking it too took half of each run.
 */
static void bmbt_walk(struct sx_mount *mp, const struct fz_image *img, u32 which)
{
	static const char *const names[] = { "a", "b" };
	struct sx_extent ext[64];
	u64 off;
	u32 n;
	int fd;

	if (sx_open(mp, names[which % ARRAY_SIZE(names)], &fd))
		return;
	for (off = 0;; off = ext[n - 1].ex_off + ext[n - 1].ex_len) {
		if (sx_fiemap(mp, fd, off, ~0ull >> 12, ext, ARRAY_SIZE(ext), &n) || !n)
			break;
		if (n < ARRAY_SIZE(ext))
			break;
	}
	sx_close(mp, fd);
}

static struct fz_tree bmbt_tree = {
	.tr_name = "bmbt",
	.tr_magic = SX_BMBT_MAGIC,
	.tr_walk = bmbt_walk,
};

static void bmbt_owners(struct fz_tree *t)
{
	t->tr_buf_ops = sx_bmbt_ops.bo_buf_ops;
	t->tr_owner[0] = t->tr_img.im_ino_a;
	t->tr_owner[1] = t->tr_img.im_ino_b;
	t->tr_nowners = 2;
}

static int bmbt_init(void)
{
	return fz_tree_init(&bmbt_tree, bmbt_owners);
}

static int bmbt_run(const u8 *data, size_t size)
{
	return fz_tree_run(&bmbt_tree, data, size);
}

FZ_TARGET(bmbt, bmbt_init, bmbt_run)
