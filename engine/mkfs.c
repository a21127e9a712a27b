/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mkfs: write a new, empty filesystem straight to a device, without a mount.
 *
 * Order matters for a mkfs that is interrupted: the old superblocks go first
 * (so an old filesystem can never be mounted over a half-written new one),
 * then the bitmap, the fsinfo block, the root directory and the head of the
 * log, and the new superblocks last, each stage made durable before the next.
 *
 * The fsinfo block is the first data block and the root directory's inode
 * the next one; both are marked in use in the bitmap as written.
 */
#include "util.h"
#include "sb.h"
#include "alloc.h"
#include "fsinfo.h"
#include "inode.h"
#include "mount.h"
#include "log.h"
#include "btree.h"
#include "refcount.h"
#include "file.h"
#include <swapext/swapext.h>

/* Bytes of bitmap written per device write. */
#define SX_MKFS_BATCH		(4u * 1024 * 1024)

/* Write @len bytes at byte offset @off, in one call. */
static int mkfs_write(struct sx_bdev *bd, u64 off, const void *buf, size_t len)
{
	if (len > bd->bd_size || off > bd->bd_size - len)
		return -EINVAL;
	return bd->bd_ops->write(bd, off, buf, len, 0);
}

/*
 * Zero both superblock blocks, and every other place where sx_sb_read()
 * probes for a secondary copy when the primary is bad (byte offsets 512 ..
 * 65536), so that no superblock of an earlier filesystem with another block
 * size can be found and taken for ours.
 */
static int mkfs_wipe_sb(struct sx_bdev *bd, const struct sx_sb *sb, void *zero,
			size_t zlen)
{
	size_t len = sx_roundup((size_t)SX_SB_SIZE, (size_t)bd->bd_sectsize);
	u64 p;
	int error;

	ASSERT(zlen >= 2 * (size_t)sb->sb_blocksize && zlen >= len);
	error = mkfs_write(bd, 0, zero, 2 * (size_t)sb->sb_blocksize);
	if (error)
		return error;
	for (p = SX_MIN_BLOCKSIZE; p <= SX_MAX_BLOCKSIZE; p <<= 1) {
		if (p < 2 * (u64)sb->sb_blocksize || p % bd->bd_sectsize)
			continue;
		if (len > bd->bd_size || p > bd->bd_size - len)
			break;
		error = mkfs_write(bd, p, zero, len);
		if (error)
			return error;
	}
	return 0;
}

/* The root directory's inode: the block after the fsinfo block. */
static u64 mkfs_rootino(const struct sx_sb *sb)
{
	return sb->sb_fsinfo + 1;
}

/* Mark block @bno in use in bitmap block image @data (index @idx), if it is there. */
static void mkfs_bitmap_take(const struct sx_sb *sb, u32 idx, void *data, u64 bno)
{
	struct sx_dbitmap *bm = data;
	u64 bits = SX_BITMAP_BITS(sb->sb_blocksize), base = (u64)idx * bits, i;
	u8 *map = (u8 *)data + SX_BITMAP_HDR_SIZE;

	if (bno < base || bno >= base + bits)
		return;
	i = bno - base;
	ASSERT(!(map[i / 8] & (1u << (i % 8))));
	map[i / 8] |= (u8)(1u << (i % 8));
	bm->bm_nfree = cpu_to_le32(le32_to_cpu(bm->bm_nfree) - 1);
	bm->bm_hdr.bh_crc = cpu_to_le32(sx_cksum_skip(data, sb->sb_blocksize,
					offsetof(struct sx_dblk_hdr, bh_crc)));
}

/* Format and write every bitmap block, many blocks per write. */
static int mkfs_write_bitmap(struct sx_bdev *bd, const struct sx_sb *sb)
{
	u32 bs = sb->sb_blocksize;
	u32 per = sx_max(SX_MKFS_BATCH / bs, 1u);
	u32 idx, n, i;
	u8 *buf;
	int error = 0;

	per = sx_min(per, sb->sb_bmapblocks);
	buf = sx_alloc((size_t)per * bs, 0);
	if (!buf)
		return -ENOMEM;
	for (idx = 0; idx < sb->sb_bmapblocks; idx += n) {
		n = sx_min(per, sb->sb_bmapblocks - idx);
		for (i = 0; i < n; i++) {
			sx_bitmap_init_block(sb, idx + i, buf + (size_t)i * bs);
			mkfs_bitmap_take(sb, idx + i, buf + (size_t)i * bs, sb->sb_fsinfo);
			mkfs_bitmap_take(sb, idx + i, buf + (size_t)i * bs, mkfs_rootino(sb));
		}
		error = mkfs_write(bd, (sb->sb_bmapstart + idx) << sb->sb_blocklog,
				   buf, (size_t)n * bs);
		if (error)
			break;
	}
	sx_free(buf);
	return error;
}

/*
 * The smallest log for a filesystem of @sb's geometry, in *@minp (0: none
 * can do), and the largest transaction it must hold, in *@resp.  The
 * reservations are computed by the engine's own functions on a mount that
 * has the geometry and the refcount tree at its greatest height.
 */
static int mkfs_log_min(const struct sx_sb *sb, u32 *minp, u32 *resp)
{
	struct sx_mount *mp;
	int error;

	/* the deferred types size the chains' reservations */
	error = sx_init();
	if (error)
		return error;
	mp = sx_zalloc(sizeof(*mp), 0);
	if (!mp)
		return -ENOMEM;
	mp->m_sb = *sb;
	mp->m_bsize = sb->sb_blocksize;
	mp->m_blog = sb->sb_blocklog;
	sx_atomic_set(&mp->m_refc_nlevels,
		      (s32)sx_btree_max_levels(mp, &sx_refcbt_ops, sb->sb_dblocks));
	*resp = sx_file_res_largest(mp);
	*minp = sx_log_min_blocks(*resp, sb->sb_blocksize);
	sx_free(mp);
	return 0;
}

/*
 * The geometry of a new filesystem, with a log that holds the largest
 * transaction: a default log grows to it, a log given too small is refused
 * (unless SX_MKFS_SMALL_LOG), and so is a block size no log can serve.
 */
static int mkfs_geometry(struct sx_bdev *bd, const struct sx_mkfs_opts *opts,
			 struct sx_sb *sb, u32 *minp, u32 *resp)
{
	struct sx_geometry_opts go;
	int error;

	memset(&go, 0, sizeof(go));
	if (opts) {
		go.go_blocksize = opts->mk_blocksize;
		go.go_logblocks = opts->mk_logblocks;
		go.go_dblocks = opts->mk_dblocks;
		go.go_feat_log_incompat = opts->mk_feat_log_incompat;
		go.go_uuid = opts->mk_uuid;
		go.go_label = opts->mk_label;
	}
	error = sx_sb_geometry(&go, bd->bd_size, bd->bd_sectsize, sb);
	if (error)
		return error;
	error = mkfs_log_min(sb, minp, resp);
	if (error || (opts && (opts->mk_flags & SX_MKFS_SMALL_LOG)))
		return error;
	if (!*minp) {
		sx_err(NULL, "mkfs: the largest transaction takes %u bytes, more than any log record holds (%u bytes with %u-byte blocks); use smaller blocks",
		       *resp, sx_log_rec_max_blocks(SX_MAX_LOGBLOCKS, sb->sb_blocksize) *
		       sb->sb_blocksize - (u32)sizeof(struct sx_dlog_rec), sb->sb_blocksize);
		return -EINVAL;
	}
	if (sb->sb_logblocks >= *minp)
		return 0;
	if (go.go_logblocks) {
		sx_err(NULL, "mkfs: a log of %u blocks is too small for the largest transaction (%u bytes): the smallest log is %u blocks (%llu bytes)",
		       sb->sb_logblocks, *resp, *minp,
		       (unsigned long long)*minp * sb->sb_blocksize);
		return -EINVAL;
	}
	go.go_logblocks = *minp;
	error = sx_sb_geometry(&go, bd->bd_size, bd->bd_sectsize, sb);
	if (error)
		sx_err(NULL, "mkfs: the device is too small for the smallest log, %u blocks (%llu bytes)",
		       *minp, (unsigned long long)*minp * sb->sb_blocksize);
	return error;
}

/* The smallest log sx_mkfs() accepts for @opts on @bd. */
SX_API int sx_mkfs_log_min(struct sx_bdev *bd, const struct sx_mkfs_opts *opts,
			   uint32_t *logblocks, uint32_t *res_bytes)
{
	struct sx_mkfs_opts mo;
	struct sx_sb sb;
	int error;

	if (!bd || !logblocks || !res_bytes)
		return -EINVAL;
	/* the geometry apart from the log: any valid log size will do */
	memset(&mo, 0, sizeof(mo));
	if (opts)
		mo = *opts;
	mo.mk_logblocks = 0;
	mo.mk_flags |= SX_MKFS_SMALL_LOG;
	error = mkfs_geometry(bd, &mo, &sb, logblocks, res_bytes);
	return error;
}

/* Write a new, empty filesystem on @bd. */
SX_API int sx_mkfs(struct sx_bdev *bd, const struct sx_mkfs_opts *opts)
{
	struct sx_sb sb;
	u32 min, res;
	size_t zlen;
	void *zero;
	int error;

	if (!bd || !bd->bd_ops || !bd->bd_ops->write || !bd->bd_ops->flush)
		return -EINVAL;
	error = mkfs_geometry(bd, opts, &sb, &min, &res);
	if (error)
		return error;

	zlen = 2 * (size_t)sb.sb_blocksize;
	zero = sx_zalloc(zlen, 0);
	if (!zero)
		return -ENOMEM;

	error = mkfs_wipe_sb(bd, &sb, zero, zlen);
	if (error)
		goto out_free;
	error = bd->bd_ops->flush(bd);
	if (error)
		goto out_free;

	error = mkfs_write_bitmap(bd, &sb);
	if (error)
		goto out_free;
	/* the fsinfo block (generation 1 is the root's) and the empty root */
	sx_fsinfo_init_block(&sb, mkfs_rootino(&sb), 2, 1, zero);
	error = mkfs_write(bd, sb.sb_fsinfo << sb.sb_blocklog, zero, sb.sb_blocksize);
	if (error)
		goto out_free;
	sx_inode_init_block(&sb, mkfs_rootino(&sb), SX_IFDIR | 0755, 2, 1, (s64)sb.sb_ctime,
			    zero);
	error = mkfs_write(bd, mkfs_rootino(&sb) << sb.sb_blocklog, zero, sb.sb_blocksize);
	if (error)
		goto out_free;
	memset(zero, 0, zlen);
	/*
	 * Only the first log block needs to be zero: recovery stops at the
	 * first record that fails its uuid, LSN or CRC chain check, so stale
	 * bytes further on can never be read as ours.
	 */
	error = mkfs_write(bd, sb.sb_logstart << sb.sb_blocklog, zero, sb.sb_blocksize);
	if (error)
		goto out_free;
	error = bd->bd_ops->flush(bd);
	if (error)
		goto out_free;

	/* the log is empty: every data block is free but these two */
	sb.sb_clean_free = sb.sb_dblocks - sb.sb_datastart - 2 + 1;
	/* seq 1 -> 2 writes copy 0, then 3 writes copy 1: both valid */
	error = sx_sb_write(bd, &sb);
	if (error)
		goto out_free;
	error = sx_sb_write(bd, &sb);
	if (error)
		goto out_free;
	error = bd->bd_ops->flush(bd);
out_free:
	sx_free(zero);
	return error;
}
