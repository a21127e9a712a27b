// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The B+tree block targets' common run (fz_tree.h).
 */
#include <stdio.h>
#include "fz_tree.h"
#include "buf.h"

/* 600 extents in file a: a three-level extent tree with 512-byte blocks. */
static const struct fz_golden_opts fz_tree_golden = {
	.go_bsize = 512,
	.go_size = 2u << 20,
	.go_extents = 600,
};

/*
 * What runs on a mount that took the block when the input brings no
 * operations: changes in the middle of both trees (a write that replaces
 * records of a, a copy-on-write of a block b shares, a punch, a clone of a
 * few blocks, an atomic swap of sixteen, a truncate that drops the last
 * twenty-five extents), then a checkpoint.  Cloning or truncating whole
 * files (fz_short_ops) would spend most of the run on the 600 records no
 * input changed: 12 runs a second under ASan and libFuzzer, against ~30.
 */
const u8 fz_tree_ops[] = {
	FZ_OP_OPEN, 0, 0,				/* a in slot 0 */
	FZ_OP_OPEN, 1, 1,				/* b in slot 1 */
	FZ_OP_OPEN, 2, 4,				/* a new file e in slot 2 */
	FZ_OP_PWRITE, 0, 0x90, 0x01, 0xff, 0x03, 0x11,	/* a, blocks 200-201 */
	FZ_OP_PWRITE, 1, 0xb4, 0x04, 0xff, 0x01, 0x22,	/* b, block 602 (shared) */
	FZ_OP_PUNCH, 0, 0x40, 0x06, 0x00, 0x01,		/* a, blocks 800-808 */
	FZ_OP_CLONERANGE, 2, 0, 0, 10, 6,		/* e[0..6) = a[10..16) */
	FZ_OP_SWAP, 1, 0, 40, 40, 16, 0,		/* a <-> b, blocks 40-55 */
	FZ_OP_TRUNCATE, 0, 0xfc, 0x08, 0,		/* a to block 1150 */
	FZ_OP_FIEMAP, 1, 0, 0,
	FZ_OP_FSYNC, 1,
	FZ_OP_SYNC, 1,
};
const size_t fz_tree_ops_len = sizeof(fz_tree_ops);

int fz_tree_init(struct fz_tree *t, void (*owners)(struct fz_tree *t))
{
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_RDONLY };
	u32 i;
	int error;

	error = fz_golden(&fz_tree_golden, &t->tr_img);
	if (error)
		return error;
	owners(t);
	for (i = 0; i < t->tr_nowners; i++) {
		t->tr_nblocks[i] = fz_tree_blocks(&t->tr_img, t->tr_magic, t->tr_owner[i],
						  t->tr_blocks[i], ARRAY_SIZE(t->tr_blocks[i]));
		if (!t->tr_nblocks[i]) {
			fprintf(stderr, "fuzz %s: the golden image has no tree of owner %llu\n",
				t->tr_name, (unsigned long long)t->tr_owner[i]);
			return -EINVAL;
		}
	}
	t->tr_bd = fz_dev_from(t->tr_img.im_data, t->tr_img.im_size);
	if (!t->tr_bd)
		return -ENOMEM;
	return sx_mount(t->tr_bd, &mo, &t->tr_mp);
}

int fz_tree_run(struct fz_tree *t, const u8 *data, size_t size)
{
	u32 bs = t->tr_img.im_bsize, which, len;
	struct sx_mount *mp;
	struct sx_bdev *bd;
	u64 bno, owner;
	u8 sel, fix;

	if (size < 2)
		return 0;
	sel = data[0];
	fix = data[1];
	data += 2;
	size -= 2;
	which = (sel >> 7) % t->tr_nowners;
	bno = t->tr_blocks[which][(sel & 0x7f) % t->tr_nblocks[which]];
	owner = t->tr_owner[which];
	len = (u32)sx_min(size, (size_t)bs);

	bd = fz_replace_block(&t->tr_img, bno, data, len, fix);
	if (!bd)
		return 0;
	/* the verifier alone, as every read of the block runs it */
	sx_buf_verify(t->tr_mp, fz_dev_data(bd) + bno * bs, bno, t->tr_buf_ops, owner);
	fz_check(bd);
	if (!sx_mount(bd, NULL, &mp)) {
		t->tr_walk(mp, &t->tr_img, which);
		if (size > bs)
			fz_ops_run(bd, &mp, data + bs, size - bs);
		else
			fz_ops_run(bd, &mp, fz_tree_ops, fz_tree_ops_len);
		if (mp)
			sx_unmount(mp);
	}
	fz_dev_free(bd);
	return 0;
}
