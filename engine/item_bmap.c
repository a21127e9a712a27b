// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * BUI/BUD: deferred changes of an inode's extent map.
 *
 * An item maps the extent (startoff, startblock, blockcount, state) into a
 * hole of inode (ino, gen), or unmaps whatever is mapped in the file range
 * [startoff, +blockcount).  A map finishes in one step; an unmap takes the
 * first mapped piece of its range per step, queues a refcount decrease of
 * the piece's blocks (which frees the blocks that had no other owner) and
 * returns -EAGAIN until nothing is left.  For an unmap a nonzero startblock
 * says where the range's blocks must be: each piece removed must sit at
 * startblock + (its offset - startoff), or the map changed under the item.
 *
 * The caller of sx_defer_finish() holds the inode lock of every inode its
 * items change (and a reference, so the lookup finds it cached); recovery
 * holds nothing and the finish takes the lock itself.
 *
 * SX_BMI_SWAP items are a swap's halves of a block exchange (the SXI chain
 * of swapext.c): the unmap leaves the removed piece's references alone (the
 * paired map gives the blocks to the other file) and must name its blocks,
 * and neither half moves the inode's block count (the swap step moves it
 * with the blocks, in its own transaction).  Recovery follows the flag.
 */
#include "util.h"
#include "bmap.h"
#include "btree.h"
#include "fork.h"
#include "inode.h"
#include "defer.h"
#include "refcount.h"
#include "reflink.h"
#include "trans.h"
#include "alloc.h"
#include "mount.h"
#include "item_refc.h"
#include "item_bmap.h"
#include "log.h"

/* The in-memory form of one extent map change. */
struct sx_bmap_item {
	u64	bi_ino;
	u64	bi_gen;
	u64	bi_off;
	u64	bi_bno;		/* map: where; unmap: where it must be, or 0 */
	u32	bi_len;
	u32	bi_flags;	/* SX_BMI_* */
};

/* Items one BUI lists at most. */
#define SX_BUI_MAX_ITEMS	8

/* Write the log form of an extent map change. */
static void sx_bui_encode(const void *item, void *logged)
{
	const struct sx_bmap_item *bi = item;
	struct sx_dlog_bmap *lb = logged;

	lb->bm_ino = cpu_to_le64(bi->bi_ino);
	lb->bm_gen = cpu_to_le64(bi->bi_gen);
	lb->bm_startoff = cpu_to_le64(bi->bi_off);
	lb->bm_startblock = cpu_to_le64(bi->bi_bno);
	lb->bm_blockcount = cpu_to_le32(bi->bi_len);
	lb->bm_flags = cpu_to_le32(bi->bi_flags);
}

/* True if [@bno, +@len) lies on the data area. */
static bool sx_bui_blocks_ok(const struct sx_mount *mp, u64 bno, u32 len)
{
	return bno >= mp->m_sb.sb_datastart && bno < mp->m_sb.sb_dblocks &&
	       len <= mp->m_sb.sb_dblocks - bno;
}

/* Check and decode a logged extent map change. */
static int sx_bui_decode(struct sx_mount *mp, const void *logged, void *item)
{
	const struct sx_dlog_bmap *lb = logged;
	struct sx_bmap_item *bi = item;
	u64 ino = le64_to_cpu(lb->bm_ino), gen = le64_to_cpu(lb->bm_gen);
	u64 off = le64_to_cpu(lb->bm_startoff), bno = le64_to_cpu(lb->bm_startblock);
	u32 len = le32_to_cpu(lb->bm_blockcount), flags = le32_to_cpu(lb->bm_flags);

	if (SX_IS_CORRUPT(mp, ino < mp->m_sb.sb_datastart || ino >= mp->m_sb.sb_dblocks) ||
	    SX_IS_CORRUPT(mp, gen == 0) ||
	    SX_IS_CORRUPT(mp, flags & ~SX_BMI_FLAGS_ALL) ||
	    SX_IS_CORRUPT(mp, !(flags & SX_BMI_MAP) && (flags & SX_BMI_UNWRITTEN)) ||
	    SX_IS_CORRUPT(mp, (flags & SX_BMI_SWAP) && !(flags & SX_BMI_MAP) && bno == 0) ||
	    SX_IS_CORRUPT(mp, len == 0 || len > SX_BMAP_MAXLEN) ||
	    SX_IS_CORRUPT(mp, off + len < off || off + len > ((u64)1 << 63) >> mp->m_blog) ||
	    SX_IS_CORRUPT(mp, (flags & SX_BMI_MAP) && !sx_bui_blocks_ok(mp, bno, len)) ||
	    SX_IS_CORRUPT(mp, !(flags & SX_BMI_MAP) && bno != 0 &&
			  !sx_bui_blocks_ok(mp, bno, len)))
		return -EFSCORRUPTED;
	memset(bi, 0, sizeof(*bi));
	bi->bi_ino = ino;
	bi->bi_gen = gen;
	bi->bi_off = off;
	bi->bi_bno = bno;
	bi->bi_len = len;
	bi->bi_flags = flags;
	return 0;
}

/* Map the item's extent into its hole. */
static int sx_bui_map(struct sx_trans *tp, struct sx_inode *ip, struct sx_bmap_item *bi)
{
	struct sx_bmap_irec irec;

	irec.br_startoff = bi->bi_off;
	irec.br_startblock = bi->bi_bno;
	irec.br_blockcount = bi->bi_len;
	irec.br_state = (bi->bi_flags & SX_BMI_UNWRITTEN) ? SX_BMAP_UNWRITTEN : 0;
	/*
	 * The blocks may hold data written in place over their old mapping
	 * (a swap, a clone): it must be durable before this mapping is.
	 */
	sx_log_data_remap(tp->t_mp);
	if (bi->bi_flags & SX_BMI_SWAP)
		return sx_bmap_map_nocharge(tp, ip, &irec);
	return sx_bmap_map(tp, ip, &irec);
}

/*
 * Unmap the first mapped piece of the item's range and drop a reference
 * to its blocks (a swap's unmap: neither, the blocks change owner);
 * -EAGAIN while some of the range is left.
 */
static int sx_bui_unmap(struct sx_trans *tp, struct sx_inode *ip, struct sx_bmap_item *bi)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_bmap_irec got;
	u64 end = bi->bi_off + bi->bi_len, gend;
	int error;

	bool swap = bi->bi_flags & SX_BMI_SWAP;

	if (swap)
		error = sx_bmap_unmap_one_nocharge(tp, ip, bi->bi_off, bi->bi_len, &got);
	else
		error = sx_bmap_unmap_one(tp, ip, bi->bi_off, bi->bi_len, &got);
	if (error)
		return error;
	if (got.br_startblock == SX_HOLE || got.br_blockcount == 0)
		return 0;
	gend = got.br_startoff + got.br_blockcount;
	if (SX_IS_CORRUPT(mp, got.br_startoff < bi->bi_off || gend > end) ||
	    SX_IS_CORRUPT(mp, bi->bi_bno != 0 &&
			  got.br_startblock != bi->bi_bno + (got.br_startoff - bi->bi_off)))
		return -EFSCORRUPTED;
	if (!swap) {
		error = sx_refcount_decrease_later(tp, got.br_startblock, got.br_blockcount);
		if (error)
			return error;
	}
	if (gend >= end)
		return 0;
	if (bi->bi_bno)
		bi->bi_bno += gend - bi->bi_off;
	bi->bi_len = (u32)(end - gend);
	bi->bi_off = gend;
	return -EAGAIN;
}

/* Do one step of the item in @tp. */
static int sx_bui_finish(struct sx_trans *tp, void *item)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_bmap_item *bi = item;
	struct sx_inode *ip;
	struct sx_buf *bp;
	bool lock = (mp->m_flags & SX_MF_RECOVERY) != 0;
	int error, error2;

	error = sx_iget(mp, bi->bi_ino, bi->bi_gen, &ip);
	if (error)
		return error == -ENOENT || error == -ESTALE ? -EFSCORRUPTED : error;
	if (SX_IS_CORRUPT(mp, (ip->i_mode & SX_IFMT) != SX_IFREG)) {
		error = -EFSCORRUPTED;
		goto out_rele;
	}
	/* the caller of sx_defer_finish() holds it in normal operation */
	if (lock)
		sx_ilock(ip, SX_ILOCK_EXCL);
	ASSERT(sx_mutex_is_held(&ip->i_ilock));
	/*
	 * The inode's block before a B+tree fork's split or merge takes a
	 * bitmap block: the inode is logged after that (lock order, inode.c).
	 */
	error = sx_inode_get_buf(mp, tp, ip, &bp);
	if (!error && (bi->bi_flags & SX_BMI_MAP))
		error = sx_bui_map(tp, ip, bi);
	else if (!error)
		error = sx_bui_unmap(tp, ip, bi);
	if (lock)
		sx_iunlock(ip, SX_ILOCK_EXCL);
out_rele:
	error2 = sx_irele(ip);
	return error ? error : error2;
}

/* Nothing to release: the item holds no references. */
static void sx_bui_cancel(void *item)
{
}

/*
 * Log bytes of one finish step, for any inode of @mp: a fork call on a
 * B+tree as tall as a fork of the device's every block could grow
 * (blocks half full), plus the inode block logged whole for a conversion
 * between the inline and B+tree forms.
 */
static u32 sx_bui_step_res(const struct sx_mount *mp)
{
	u32 leaf = sx_max(sx_btree_maxrecs(mp, &sx_bmbt_ops, true) / 2, 2u);
	u32 node = sx_max(sx_btree_maxrecs(mp, &sx_bmbt_ops, false) / 2, 2u);
	u64 n = sx_howmany(mp->m_sb.sb_dblocks, leaf);
	u32 levels = 1;

	while (n > 1 && levels < SX_BTREE_MAXLEVELS) {
		n = sx_howmany(n, node);
		levels++;
	}
	return 3 * sx_btree_res_bytes(mp, levels) + sx_trans_buf_bytes(mp) +
	       sx_alloc_res_bytes(mp) + sx_inode_res_bytes(mp);
}

const struct sx_defer_ops sx_bmap_defer_ops = {
	.do_name = "BUI",
	.do_intent_type = SX_LOG_OP_BUI,
	.do_done_type = SX_LOG_OP_BUD,
	.do_item_size = sizeof(struct sx_bmap_item),
	.do_log_size = sizeof(struct sx_dlog_bmap),
	.do_max_items = SX_BUI_MAX_ITEMS,
	.do_encode = sx_bui_encode,
	.do_decode = sx_bui_decode,
	.do_finish = sx_bui_finish,
	.do_cancel = sx_bui_cancel,
	.do_step_res = sx_bui_step_res,
};

/* Queue the mapping of @irec into a hole of @ip. */
int sx_bmap_map_later(struct sx_trans *tp, struct sx_inode *ip,
		      const struct sx_bmap_irec *irec)
{
	struct sx_bmap_item bi;

	if (irec->br_blockcount == 0 || irec->br_blockcount > SX_BMAP_MAXLEN ||
	    irec->br_startblock == SX_HOLE)
		return -EINVAL;
	memset(&bi, 0, sizeof(bi));
	bi.bi_ino = ip->i_ino;
	bi.bi_gen = ip->i_gen;
	bi.bi_off = irec->br_startoff;
	bi.bi_bno = irec->br_startblock;
	bi.bi_len = irec->br_blockcount;
	bi.bi_flags = SX_BMI_MAP |
		      ((irec->br_state & SX_BMAP_UNWRITTEN) ? SX_BMI_UNWRITTEN : 0);
	return sx_defer_add(tp, &sx_bmap_defer_ops, &bi);
}

/*
 * Queue the unmapping of [@off, +@len) of @ip (@bno: where its blocks must
 * be, or 0 for whatever is mapped), in pieces a logged item can describe.
 */
int sx_bmap_unmap_later(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
			u64 bno)
{
	struct sx_bmap_item bi;
	int error;

	if (len == 0 || off + len < off)
		return -EINVAL;
	memset(&bi, 0, sizeof(bi));
	bi.bi_ino = ip->i_ino;
	bi.bi_gen = ip->i_gen;
	while (len) {
		bi.bi_off = off;
		bi.bi_bno = bno;
		bi.bi_len = (u32)sx_min(len, (u64)SX_BMAP_MAXLEN);
		error = sx_defer_add(tp, &sx_bmap_defer_ops, &bi);
		if (error)
			return error;
		off += bi.bi_len;
		if (bno)
			bno += bi.bi_len;
		len -= bi.bi_len;
	}
	return 0;
}

/*
 * Queue a swap's map of @irec into a hole of @ip (SX_BMI_SWAP: the block
 * count is the swap's to move).
 */
int sx_bmap_swap_map_later(struct sx_trans *tp, struct sx_inode *ip,
			   const struct sx_bmap_irec *irec)
{
	struct sx_bmap_item bi;

	if (irec->br_blockcount == 0 || irec->br_blockcount > SX_BMAP_MAXLEN ||
	    irec->br_startblock == SX_HOLE)
		return -EINVAL;
	memset(&bi, 0, sizeof(bi));
	bi.bi_ino = ip->i_ino;
	bi.bi_gen = ip->i_gen;
	bi.bi_off = irec->br_startoff;
	bi.bi_bno = irec->br_startblock;
	bi.bi_len = irec->br_blockcount;
	bi.bi_flags = SX_BMI_MAP | SX_BMI_SWAP |
		      ((irec->br_state & SX_BMAP_UNWRITTEN) ? SX_BMI_UNWRITTEN : 0);
	return sx_defer_add(tp, &sx_bmap_defer_ops, &bi);
}

/*
 * Queue a swap's unmap of the piece @irec of @ip: the blocks keep their
 * references and the block count stays (SX_BMI_SWAP).
 */
int sx_bmap_swap_unmap_later(struct sx_trans *tp, struct sx_inode *ip,
			     const struct sx_bmap_irec *irec)
{
	struct sx_bmap_item bi;

	if (irec->br_blockcount == 0 || irec->br_blockcount > SX_BMAP_MAXLEN ||
	    irec->br_startblock == SX_HOLE || irec->br_startblock == 0)
		return -EINVAL;
	memset(&bi, 0, sizeof(bi));
	bi.bi_ino = ip->i_ino;
	bi.bi_gen = ip->i_gen;
	bi.bi_off = irec->br_startoff;
	bi.bi_bno = irec->br_startblock;
	bi.bi_len = irec->br_blockcount;
	bi.bi_flags = SX_BMI_SWAP;
	return sx_defer_add(tp, &sx_bmap_defer_ops, &bi);
}
