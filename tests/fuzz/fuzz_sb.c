// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the superblock.  The input is a flags byte and the bytes of
 * one superblock copy (SX_SB_SIZE at most; zero after the input).  The copy
 * is decoded on its own, then laid over a copy of the golden image, which
 * goes through the two-copy read, the checker and a mount; a mount that
 * takes it runs the short workload and unmounts.
 */
#include "fz.h"
#include "sb.h"

enum {
	SB_FIXCRC	= (1u << 0),	/* recompute the copy's CRC */
	SB_COPY1	= (1u << 1),	/* replace copy 1 rather than copy 0 */
	SB_BOTH		= (1u << 2),	/* replace both copies */
	SB_KILL		= (1u << 3),	/* zero the copy not replaced */
	SB_RDONLY	= (1u << 4),
	SB_NORECOVERY	= (1u << 5),	/* with SB_RDONLY */
	SB_LOG_EACH	= (1u << 6),
};

static struct fz_image sb_golden;

static int sb_init(void)
{
	return fz_golden(&fz_golden_std, &sb_golden);
}

static int sb_run(const u8 *data, size_t size)
{
	struct sx_mount_opts mo = { 0 };
	u64 words[SX_SB_SIZE / 8] = { 0 };
	u8 *copy = (u8 *)words;
	struct sx_mount *mp;
	struct sx_bdev *bd;
	struct sx_sb sb;
	u64 off[2] = { 0, sb_golden.im_bsize };
	u8 flags;
	int mine, error;

	if (size < 1)
		return 0;
	flags = data[0];
	memcpy(copy, data + 1, sx_min(size - 1, (size_t)SX_SB_SIZE));
	if (flags & SB_FIXCRC)
		((struct sx_dsb *)copy)->sb_crc =
			cpu_to_le32(sx_cksum_skip(copy, SX_SB_SIZE, offsetof(struct sx_dsb, sb_crc)));
	sx_sb_decode(NULL, copy, &sb);

	bd = fz_dev_from(sb_golden.im_data, sb_golden.im_size);
	if (!bd)
		return 0;
	mine = !!(flags & SB_COPY1);
	memcpy(fz_dev_data(bd) + off[mine], copy, SX_SB_SIZE);
	if (flags & SB_BOTH)
		memcpy(fz_dev_data(bd) + off[!mine], copy, SX_SB_SIZE);
	else if (flags & SB_KILL)
		memset(fz_dev_data(bd) + off[!mine], 0, SX_SB_SIZE);
	sx_sb_read(NULL, bd, &sb, NULL);
	fz_check(bd);

	if (flags & SB_RDONLY)
		mo.mo_flags |= SX_MOUNT_RDONLY | ((flags & SB_NORECOVERY) ? SX_MOUNT_NORECOVERY : 0);
	if (flags & SB_LOG_EACH)
		mo.mo_flags |= SX_MOUNT_LOG_EACH;
	error = sx_mount(bd, &mo, &mp);
	if (!error) {
		fz_ops_run(bd, &mp, fz_short_ops, fz_short_ops_len);
		if (mp)
			sx_unmount(mp);
	}
	fz_dev_free(bd);
	return 0;
}

FZ_TARGET(sb, sb_init, sb_run)
