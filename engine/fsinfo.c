// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The fsinfo block: verifier, the mkfs format, the mount-time read and the
 * accessors the inode, refcount and checker code use.
 *
 * The block is read through the buffer cache like any metadata block and
 * changed only in transactions; the mount keeps two facts of it in core:
 * the root inode (fixed at mkfs) and the refcount tree's height, which
 * only sizes reservations: it is the greatest height this mount has seen,
 * so that a change that is later cancelled can never make it too small.
 */
#include "util.h"
#include "fsinfo.h"
#include "sb.h"
#include "buf.h"
#include "trans.h"
#include "mount.h"

/* True if every byte of @len bytes at @p is zero. */
static bool fi_all_zero(const void *p, size_t len)
{
	const u8 *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* True if @bno is 0 or a block of the data area other than the fsinfo block. */
static bool fi_ptr_ok(const struct sx_mount *mp, u64 bno, bool zero_ok)
{
	if (bno == 0)
		return zero_ok;
	return bno >= mp->m_sb.sb_datastart && bno < mp->m_sb.sb_dblocks &&
	       bno != mp->m_sb.sb_fsinfo;
}

/* Structure checks of the fsinfo block (after the generic header checks). */
static int sx_fsinfo_verify(struct sx_mount *mp, const void *data)
{
	const struct sx_dfsinfo *fi = data;
	u32 level = le32_to_cpu(fi->fi_refc_level);
	u64 refc = le64_to_cpu(fi->fi_refc_root);

	if (SX_IS_CORRUPT(mp, !fi_ptr_ok(mp, le64_to_cpu(fi->fi_rootino), false)) ||
	    SX_IS_CORRUPT(mp, !fi_ptr_ok(mp, le64_to_cpu(fi->fi_unlinked), true)) ||
	    SX_IS_CORRUPT(mp, le64_to_cpu(fi->fi_next_gen) == 0) ||
	    SX_IS_CORRUPT(mp, le64_to_cpu(fi->fi_icount) == 0 ||
			      le64_to_cpu(fi->fi_icount) > mp->m_sb.sb_dblocks) ||
	    SX_IS_CORRUPT(mp, !fi_ptr_ok(mp, refc, true)) ||
	    SX_IS_CORRUPT(mp, level >= SX_BTREE_MAXLEVELS || (refc == 0 && level != 0)) ||
	    SX_IS_CORRUPT(mp, fi->fi_pad != 0) ||
	    SX_IS_CORRUPT(mp, !fi_all_zero(fi->fi_reserved, sizeof(fi->fi_reserved))) ||
	    SX_IS_CORRUPT(mp, !fi_all_zero((const u8 *)data + sizeof(*fi),
					   mp->m_bsize - sizeof(*fi))))
		return -EFSCORRUPTED;
	return 0;
}

const struct sx_buf_ops sx_fsinfo_buf_ops = {
	.bo_name = "fsinfo",
	.bo_magic = SX_FSINFO_MAGIC,
	.bo_verify = sx_fsinfo_verify,
};

/* Format the fsinfo block of a new filesystem. */
void sx_fsinfo_init_block(const struct sx_sb *sb, u64 rootino, u64 next_gen, u64 icount,
			  void *data)
{
	struct sx_dfsinfo *fi = data;

	memset(data, 0, sb->sb_blocksize);
	fi->fi_hdr.bh_magic = cpu_to_le32(SX_FSINFO_MAGIC);
	fi->fi_hdr.bh_blkno = cpu_to_le64(sb->sb_fsinfo);
	fi->fi_hdr.bh_owner = 0;
	fi->fi_hdr.bh_lsn = 0;
	memcpy(fi->fi_hdr.bh_uuid, sb->sb_uuid, SX_UUID_SIZE);
	fi->fi_rootino = cpu_to_le64(rootino);
	fi->fi_unlinked = 0;
	fi->fi_next_gen = cpu_to_le64(next_gen);
	fi->fi_icount = cpu_to_le64(icount);
	fi->fi_refc_root = 0;
	fi->fi_refc_level = 0;
	fi->fi_hdr.bh_crc = cpu_to_le32(sx_cksum_skip(data, sb->sb_blocksize,
					offsetof(struct sx_dblk_hdr, bh_crc)));
}

/* The refcount tree's height from the block's fields. */
static u32 fi_refc_nlevels(const struct sx_dfsinfo *fi)
{
	return fi->fi_refc_root ? le32_to_cpu(fi->fi_refc_level) + 1 : 0;
}

/* Remember a height the refcount tree has had (the greatest one). */
static void fi_note_nlevels(struct sx_mount *mp, u32 nlevels)
{
	s32 cur = sx_atomic_read(&mp->m_refc_nlevels), seen;

	while ((s32)nlevels > cur) {
		seen = sx_atomic_cmpxchg(&mp->m_refc_nlevels, cur, (s32)nlevels);
		if (seen == cur)
			break;
		cur = seen;
	}
}

/* Read the fsinfo block at mount. */
int sx_fsinfo_mount(struct sx_mount *mp)
{
	const struct sx_dfsinfo *fi;
	struct sx_buf *bp;
	int error;

	error = sx_buf_read(mp, mp->m_sb.sb_fsinfo, &sx_fsinfo_buf_ops, 0, &bp);
	if (error) {
		sx_err(mp, "fsinfo block %llu unreadable (error %d)",
		       (unsigned long long)mp->m_sb.sb_fsinfo, error);
		return error;
	}
	fi = bp->b_data;
	mp->m_rootino = le64_to_cpu(fi->fi_rootino);
	sx_atomic_set(&mp->m_refc_nlevels, (s32)fi_refc_nlevels(fi));
	sx_buf_relse(bp);
	return 0;
}

/* The fsinfo block, joined to @tp. */
int sx_fsinfo_get(struct sx_trans *tp, struct sx_buf **bpp)
{
	return sx_trans_read_buf(tp, tp->t_mp->m_sb.sb_fsinfo, &sx_fsinfo_buf_ops, 0, bpp);
}

/* Log the fields of the fsinfo block (they share two log chunks). */
static int fi_log(struct sx_trans *tp, struct sx_buf *bp)
{
	return sx_trans_log_buf(tp, bp, sizeof(struct sx_dblk_hdr),
				sizeof(struct sx_dfsinfo) - 1);
}

/* The refcount tree's root and height; the block stays locked for the caller. */
int sx_fsinfo_get_refc_root(struct sx_mount *mp, struct sx_trans *tp, struct sx_buf **fibp,
			    u64 *root, u32 *nlevels)
{
	const struct sx_dfsinfo *fi;
	struct sx_buf *bp;
	int error;

	if (tp)
		error = sx_fsinfo_get(tp, &bp);
	else
		error = sx_buf_read(mp, mp->m_sb.sb_fsinfo, &sx_fsinfo_buf_ops, 0, &bp);
	if (error)
		return error;
	fi = bp->b_data;
	*root = le64_to_cpu(fi->fi_refc_root);
	*nlevels = fi_refc_nlevels(fi);
	/* joined to @tp, it is released at commit: nothing for the caller to drop */
	if (fibp)
		*fibp = tp ? NULL : bp;
	else if (!tp)
		sx_buf_relse(bp);
	return 0;
}

/* Record the refcount tree's new root and height. */
int sx_fsinfo_set_refc_root(struct sx_trans *tp, u64 root, u32 nlevels)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_dfsinfo *fi;
	struct sx_buf *bp;
	int error;

	if (SX_IS_CORRUPT(mp, (root == 0) != (nlevels == 0) ||
			      nlevels > SX_BTREE_MAXLEVELS ||
			      !fi_ptr_ok(mp, root, true)))
		return -EFSCORRUPTED;
	error = sx_fsinfo_get(tp, &bp);
	if (error)
		return error;
	fi = bp->b_data;
	fi->fi_refc_root = cpu_to_le64(root);
	fi->fi_refc_level = cpu_to_le32(nlevels ? nlevels - 1 : 0);
	error = fi_log(tp, bp);
	if (!error)
		fi_note_nlevels(mp, nlevels);
	return error;
}

/* The refcount tree's height, for sizing reservations. */
u32 sx_fsinfo_refc_nlevels(const struct sx_mount *mp)
{
	return (u32)sx_atomic_read(&mp->m_refc_nlevels);
}

/* The root directory. */
int sx_fsinfo_root_ino(struct sx_mount *mp, u64 *ino)
{
	if (!mp->m_rootino)
		return -EFSCORRUPTED;
	*ino = mp->m_rootino;
	return 0;
}

/* Take the next inode generation. */
int sx_fsinfo_next_gen(struct sx_trans *tp, u64 *gen)
{
	struct sx_dfsinfo *fi;
	struct sx_buf *bp;
	u64 g;
	int error;

	error = sx_fsinfo_get(tp, &bp);
	if (error)
		return error;
	fi = bp->b_data;
	g = le64_to_cpu(fi->fi_next_gen);
	/* 0 means "any generation" to sx_iget(): skip it on wrap */
	fi->fi_next_gen = cpu_to_le64(g + 1 ? g + 1 : 1);
	error = fi_log(tp, bp);
	if (!error)
		*gen = g;
	return error;
}

/* Add @delta to the inode count. */
int sx_fsinfo_mod_icount(struct sx_trans *tp, s64 delta)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_dfsinfo *fi;
	struct sx_buf *bp;
	u64 n;
	int error;

	error = sx_fsinfo_get(tp, &bp);
	if (error)
		return error;
	fi = bp->b_data;
	n = le64_to_cpu(fi->fi_icount) + (u64)delta;
	/* the root is always there; no more inodes than blocks */
	if (SX_IS_CORRUPT(mp, n == 0 || n > mp->m_sb.sb_dblocks))
		return -EFSCORRUPTED;
	fi->fi_icount = cpu_to_le64(n);
	return fi_log(tp, bp);
}

/* The head of the unlinked list, in @tp. */
int sx_fsinfo_get_unlinked(struct sx_trans *tp, u64 *head)
{
	struct sx_buf *bp;
	int error;

	error = sx_fsinfo_get(tp, &bp);
	if (!error)
		*head = le64_to_cpu(((struct sx_dfsinfo *)bp->b_data)->fi_unlinked);
	return error;
}

/* Set the head of the unlinked list in @tp. */
int sx_fsinfo_set_unlinked(struct sx_trans *tp, u64 head)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_buf *bp;
	int error;

	if (SX_IS_CORRUPT(mp, !fi_ptr_ok(mp, head, true)))
		return -EFSCORRUPTED;
	error = sx_fsinfo_get(tp, &bp);
	if (error)
		return error;
	((struct sx_dfsinfo *)bp->b_data)->fi_unlinked = cpu_to_le64(head);
	return fi_log(tp, bp);
}

/* The head of the unlinked list, without a transaction. */
int sx_fsinfo_read_unlinked(struct sx_mount *mp, u64 *head)
{
	struct sx_buf *bp;
	int error;

	error = sx_buf_read(mp, mp->m_sb.sb_fsinfo, &sx_fsinfo_buf_ops, 0, &bp);
	if (error)
		return error;
	*head = le64_to_cpu(((struct sx_dfsinfo *)bp->b_data)->fi_unlinked);
	sx_buf_relse(bp);
	return 0;
}

/* Log bytes of changing the fsinfo block: its fields fit two log chunks. */
u32 sx_fsinfo_res_bytes(const struct sx_mount *mp)
{
	u32 bytes = sizeof(struct sx_dlog_buf) + sizeof(struct sx_dlog_region) +
		    (u32)sx_roundup(sizeof(struct sx_dfsinfo), (size_t)SX_BUF_CHUNK);

	return sx_min(sx_trans_op_bytes(bytes), sx_trans_buf_bytes(mp));
}
