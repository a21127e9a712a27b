// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The harness's own check, run by fz-replay before the corpus: that the
 * inputs reach what the targets say they reach.  A fuzz target whose input
 * silently misses its structure still passes every input, so nothing else
 * would notice: the log records were once framed at a stale superblock's
 * tail, where recovery never looked, and the log and item targets mounted
 * a clean image a million times.
 */
#include <stdio.h>
#include <stdlib.h>
#include "fz.h"
#include "fz_selftest.h"

#define FZ_EXPECT(cond, ...)							\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "fz-selftest: " __VA_ARGS__);		\
			fprintf(stderr, " (%s)\n", #cond);			\
			goto out;						\
		}								\
	} while (0)

/* One framed record holding an empty transaction (its TRANS_END alone). */
static size_t fz_one_record(u8 *buf)
{
	struct fz_rec_hdr h = { 0 };
	struct sx_dlog_op op = { 0 };

	op.lo_type = cpu_to_le16(SX_LOG_OP_TRANS_END);
	op.lo_tid = cpu_to_le64(1);
	h.fr_len = cpu_to_le16(sizeof(op));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &op, sizeof(op));
	return sizeof(h) + sizeof(op);
}

/* The depth of the B+tree whose blocks are @blocks: the highest level + 1. */
static u32 fz_tree_depth(const struct fz_image *img, const u64 *blocks, u32 n)
{
	u32 i, depth = 0;

	for (i = 0; i < n; i++) {
		const struct sx_dbtree_block *b = (const struct sx_dbtree_block *)
			(img->im_data + blocks[i] * img->im_bsize);

		depth = sx_max(depth, (u32)le16_to_cpu(b->bt_level) + 1);
	}
	return depth;
}

int fz_selftest(void)
{
	static const struct fz_golden_opts tree_opts = {
		.go_bsize = 512, .go_size = 2u << 20, .go_extents = 600,
	};
	struct fz_image g = { 0 }, t = { 0 };
	struct sx_bdev *bd = NULL, *bd2 = NULL;
	struct sx_mount *mp;
	u8 rec[64], *s = NULL;
	const u8 *rest;
	size_t len, restlen;
	u64 blocks[256];
	u32 n;
	int ret = -1;

	FZ_EXPECT(!fz_golden(&fz_golden_std, &g), "cannot build the golden image");
	bd = fz_dev_from(g.im_data, g.im_size);
	FZ_EXPECT(bd, "no memory");
	FZ_EXPECT(fz_check(bd) == 0, "the golden image does not pass the checker");

	/* a framed record lands where recovery reads, and recovery takes it */
	FZ_EXPECT(fz_frame_log(fz_dev_data(bd), bd->bd_size, rec, fz_one_record(rec)) == 1,
		  "a framed record was not written");
	n = (u32)fz_check(bd);
	FZ_EXPECT(n != 0 && n != ~0u, "the checker sees no log to recover after framing");
	FZ_EXPECT(!sx_mount(bd, NULL, &mp), "recovery refused a well-formed framed record");
	sx_unmount(mp);
	FZ_EXPECT(fz_check(bd) == 0, "the image is not clean after recovering the record");

	/* a sparse image loads back byte for byte, the operations after it */
	s = fz_simg_save(g.im_data, g.im_size, 9, 0, fz_short_ops, fz_short_ops_len, &len);
	FZ_EXPECT(s, "cannot save a sparse image");
	bd2 = fz_simg_load(s, len, &rest, &restlen);
	FZ_EXPECT(bd2 && bd2->bd_size == g.im_size, "the sparse image does not load");
	FZ_EXPECT(!memcmp(fz_dev_data(bd2), g.im_data, g.im_size),
		  "the sparse image loads different bytes");
	FZ_EXPECT(restlen == fz_short_ops_len && !memcmp(rest, fz_short_ops, restlen),
		  "the operations after a sparse image are lost");

	/* the extent tree the bmbt target damages has the three levels it claims */
	FZ_EXPECT(!fz_golden(&tree_opts, &t), "cannot build the tree image");
	n = fz_tree_blocks(&t, SX_BMBT_MAGIC, t.im_ino_a, blocks, ARRAY_SIZE(blocks));
	FZ_EXPECT(n > 0 && n <= 128 && fz_tree_depth(&t, blocks, n) == 3,
		  "file a's extent tree is not three levels in at most 128 blocks (%u blocks)", n);
	n = fz_tree_blocks(&t, SX_REFCBT_MAGIC, 0, blocks, ARRAY_SIZE(blocks));
	FZ_EXPECT(n > 1 && n <= 128 && fz_tree_depth(&t, blocks, n) >= 2,
		  "the refcount tree is not two levels in at most 128 blocks (%u blocks)", n);
	ret = 0;
out:
	free(s);
	fz_dev_free(bd2);
	fz_dev_free(bd);
	fz_image_free(&t);
	fz_image_free(&g);
	return ret;
}
