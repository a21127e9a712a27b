// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Transactions: reservation, joined buffers, logged items, commit, roll and
 * cancel.
 *
 * A joined buffer keeps a copy of its contents from the moment it was
 * joined, so that cancel can put them back: an error halfway through an
 * operation then costs nothing but the work, instead of shutting the
 * filesystem down as a dirty cancel must when there is no before-image.
 */
#include "util.h"
#include "trans.h"
#include "defer.h"
#include "buf.h"
#include "log.h"
#include "item.h"
#include "refcount.h"
#include "alloc.h"
#include "inode.h"
#include "mount.h"
#include "dev.h"
#include "log_cil.h"

#define SX_TRANS_END_BYTES	sizeof(struct sx_dlog_op)

/* Log bytes of one op with @payload bytes of payload. */
u32 sx_trans_op_bytes(u32 payload)
{
	return sizeof(struct sx_dlog_op) + sx_roundup(payload, SX_LOG_OP_ALIGN);
}

/* Log bytes of a whole block logged as one region. */
u32 sx_trans_buf_bytes(const struct sx_mount *mp)
{
	return sx_trans_op_bytes(sizeof(struct sx_dlog_buf) +
				 sizeof(struct sx_dlog_region) + mp->m_bsize);
}

/* Start a transaction with @res_bytes of log space. */
int sx_trans_alloc(struct sx_mount *mp, u32 res_bytes, u32 flags,
		   struct sx_trans **tpp)
{
	struct sx_trans *tp;
	int error;
	u32 i;

	if (mp->m_flags & SX_MF_RDONLY)
		return -EROFS;
	if (sx_is_shutdown(mp))
		return -EIO;
	error = sx_fault("trans_alloc");
	if (error)
		return error;
	tp = sx_zalloc(sizeof(*tp), SX_NOFS);
	if (!tp)
		return -ENOMEM;
	tp->t_mp = mp;
	tp->t_flags = flags & SX_TRANS_SYNC;
	tp->t_res_bytes = res_bytes + SX_TRANS_END_BYTES;
	tp->t_bytes = SX_TRANS_END_BYTES;
	sx_list_init(&tp->t_bufs);
	for (i = 0; i < SX_TRANS_BHASH; i++)
		sx_list_init(&tp->t_bhash[i]);
	sx_list_init(&tp->t_items);
	sx_list_init(&tp->t_dfops);
	error = sx_log_reserve(mp, tp->t_res_bytes, &tp->t_res_blocks);
	if (error) {
		sx_free(tp);
		return error;
	}
	tp->t_tid = sx_log_next_tid(mp);
	*tpp = tp;
	return 0;
}

/*
 * The joined buffer of @blkno, if any.  A long transaction (a batched swap
 * step joins hundreds of B+tree blocks) looks blocks up at every descent,
 * and each block not joined yet was a walk of the whole list: the buffers
 * are hashed by block number too.
 */
static struct sx_buf *sx_trans_find_buf(struct sx_trans *tp, u64 blkno)
{
	struct sx_list *head = &tp->t_bhash[blkno % SX_TRANS_BHASH], *pos;

	sx_list_for_each(pos, head) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_thash);

		if (bp->b_blkno == blkno)
			return bp;
	}
	return NULL;
}

/* Attach a locked buffer, saving its contents for cancel. */
static int sx_trans_attach(struct sx_trans *tp, struct sx_buf *bp)
{
	struct sx_mount *mp = tp->t_mp;
	int error;

	error = sx_buf_orig_get(bp);
	if (error)
		return error;
	memcpy(bp->b_orig, bp->b_data, mp->m_bsize);
	memset(bp->b_logmap, 0, sizeof(bp->b_logmap));
	bp->b_tcost = 0;
	bp->b_flags &= ~(SX_BUF_LOGGED | SX_BUF_INVAL);
	bp->b_trans = tp;
	sx_list_add_tail(&bp->b_tlist, &tp->t_bufs);
	sx_list_add(&bp->b_thash, &tp->t_bhash[bp->b_blkno % SX_TRANS_BHASH]);
	return 0;
}

/* Read, lock and join a block; a block already joined is returned again. */
int sx_trans_read_buf(struct sx_trans *tp, u64 blkno, const struct sx_buf_ops *ops,
		      u64 owner, struct sx_buf **bpp)
{
	struct sx_buf *bp = sx_trans_find_buf(tp, blkno);
	int error;

	if (bp) {
		if (bp->b_ops != ops || bp->b_owner != owner)
			return -EFSCORRUPTED;
		*bpp = bp;
		return 0;
	}
	error = sx_buf_read(tp->t_mp, blkno, ops, owner, &bp);
	if (error)
		return error;
	error = sx_trans_attach(tp, bp);
	if (error) {
		sx_buf_relse(bp);
		return error;
	}
	*bpp = bp;
	return 0;
}

/* Lock and join a block being initialised; it will be logged whole. */
int sx_trans_get_buf(struct sx_trans *tp, u64 blkno, const struct sx_buf_ops *ops,
		     u64 owner, struct sx_buf **bpp)
{
	struct sx_buf *bp = sx_trans_find_buf(tp, blkno);
	int error;

	if (!bp) {
		error = sx_buf_get(tp->t_mp, blkno, ops, owner, &bp);
		if (error)
			return error;
		error = sx_trans_attach(tp, bp);
		if (error) {
			sx_buf_relse(bp);
			return error;
		}
	}
	bp->b_ops = ops;
	bp->b_owner = owner;
	bp->b_flags |= SX_BUF_NEW | SX_BUF_VERIFIED;
	bp->b_flags &= ~SX_BUF_INVAL;
	*bpp = bp;
	return 0;
}

/*
 * Count the dirty chunks and their runs in a buffer's log map, a word at a
 * time (every logged change recounts it): a run starts at each set bit
 * whose lower neighbour, in this word or the last bit of the one before,
 * is clear.
 */
static void sx_buf_map_count(const struct sx_buf *bp, u32 nchunks, u32 *chunks,
			     u32 *runs)
{
	u64 carry = 0, m;
	u32 w;

	*chunks = 0;
	*runs = 0;
	for (w = 0; w * 64 < nchunks; w++) {
		m = bp->b_logmap[w];
		if (nchunks - w * 64 < 64)
			m &= (1ull << (nchunks - w * 64)) - 1;
		*chunks += sx_popcount64(m);
		*runs += sx_popcount64(m & ~((m << 1) | carry));
		carry = m >> 63;
	}
}

/* Worst-case log bytes of the changes recorded for @bp. */
static u32 sx_trans_buf_cost(const struct sx_mount *mp, const struct sx_buf *bp)
{
	u32 chunks, runs, bytes;

	if (bp->b_flags & SX_BUF_INVAL)
		return sx_trans_op_bytes(sizeof(struct sx_dlog_buf));
	if ((bp->b_flags & SX_BUF_NEW) || sx_buf_is_data(bp))
		return sx_trans_buf_bytes(mp);
	sx_buf_map_count(bp, mp->m_bsize / SX_BUF_CHUNK, &chunks, &runs);
	bytes = sizeof(struct sx_dlog_buf) + runs * sizeof(struct sx_dlog_region) +
		chunks * SX_BUF_CHUNK;
	return sx_min(sx_trans_op_bytes(bytes), sx_trans_buf_bytes(mp));
}

/* Re-account @bp's cost against the reservation. */
static int sx_trans_recost(struct sx_trans *tp, struct sx_buf *bp)
{
	u32 cost = sx_trans_buf_cost(tp->t_mp, bp);
	u32 total = tp->t_bytes - bp->b_tcost + cost;

	if (total > tp->t_res_bytes) {
		sx_err(tp->t_mp, "transaction %llu overruns its log reservation (%u > %u)",
		       (unsigned long long)tp->t_tid, total, tp->t_res_bytes);
		return -ENOSPC;
	}
	tp->t_bytes = total;
	bp->b_tcost = cost;
	return 0;
}

/*
 * A buffer whose newest queued op waits in the log's open group: log that
 * op's chunks again with ours, where the reservation has room, so the log
 * can drop the older op (log_cil.c).  The chunks hold the buffer's current
 * contents, which are what the older op replays to or newer, and both ops
 * land in one record, so replay ends in the same place with fewer bytes.
 */
static void sx_trans_cover_queued(struct sx_trans *tp)
{
	struct sx_mount *mp = tp->t_mp;
	u64 group = sx_log_cil_group(mp);
	u64 saved[SX_BUF_MAP_WORDS];
	struct sx_list *pos;
	u32 w, cost, total;
	bool wider;

	if (!group)
		return;
	sx_list_for_each(pos, &tp->t_bufs) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_tlist);

		if (bp->b_cil_group != group || !(bp->b_flags & SX_BUF_LOGGED) ||
		    (bp->b_flags & (SX_BUF_INVAL | SX_BUF_NEW)))
			continue;
		memcpy(saved, bp->b_logmap, sizeof(saved));
		wider = false;
		for (w = 0; w < SX_BUF_MAP_WORDS; w++) {
			wider |= (bp->b_cilmap[w] & ~bp->b_logmap[w]) != 0;
			bp->b_logmap[w] |= bp->b_cilmap[w];
		}
		if (!wider)
			continue;
		cost = sx_trans_buf_cost(mp, bp);
		total = tp->t_bytes - bp->b_tcost + cost;
		if (total > tp->t_res_bytes) {
			memcpy(bp->b_logmap, saved, sizeof(saved));
			continue;
		}
		tp->t_bytes = total;
		bp->b_tcost = cost;
	}
}

/* Record that bytes [@first, @last] of a joined buffer changed. */
int sx_trans_log_buf(struct sx_trans *tp, struct sx_buf *bp, u32 first, u32 last)
{
	u32 i, mp_bsize = tp->t_mp->m_bsize;
	u64 saved[SX_BUF_MAP_WORDS];
	int error;

	VERIFY(bp->b_trans == tp);
	ASSERT(sx_mutex_is_held(&bp->b_lock));
	if (first > last || last >= mp_bsize)
		return -EINVAL;
	/*
	 * Chunks already logged cost nothing more: a leaf changed record by
	 * record logs the same chunks again and again (in a swap of 100,000
	 * extents nine calls in ten), and the recount walks the whole map.
	 */
	for (i = first / SX_BUF_CHUNK; i <= last / SX_BUF_CHUNK; i++)
		if (!(bp->b_logmap[i / 64] & (1ull << (i % 64))))
			break;
	if (i <= last / SX_BUF_CHUNK) {
		memcpy(saved, bp->b_logmap, sizeof(saved));
		for (; i <= last / SX_BUF_CHUNK; i++)
			bp->b_logmap[i / 64] |= 1ull << (i % 64);
		error = sx_trans_recost(tp, bp);
		if (error) {
			memcpy(bp->b_logmap, saved, sizeof(saved));
			return error;
		}
	}
	bp->b_flags |= SX_BUF_LOGGED;
	tp->t_flags |= SX_TRANS_DIRTY;
	return 0;
}

/* Keep a joined buffer locked across commit or roll. */
void sx_trans_bhold(struct sx_trans *tp, struct sx_buf *bp)
{
	VERIFY(bp->b_trans == tp);
	bp->b_flags |= SX_BUF_HOLD;
}

/* Let a held buffer be released at the next commit. */
void sx_trans_bhold_release(struct sx_trans *tp, struct sx_buf *bp)
{
	VERIFY(bp->b_trans == tp);
	bp->b_flags &= ~SX_BUF_HOLD;
}

/* Detach a buffer from its transaction. */
static void sx_trans_detach(struct sx_buf *bp)
{
	sx_buf_orig_put(bp);
	sx_list_del(&bp->b_thash);
	sx_list_del(&bp->b_tlist);
	bp->b_trans = NULL;
	bp->b_flags &= ~(SX_BUF_LOGGED | SX_BUF_INVAL | SX_BUF_NEW);
	memset(bp->b_logmap, 0, sizeof(bp->b_logmap));
	bp->b_tcost = 0;
}

/* Release a joined buffer that this transaction has not changed. */
void sx_trans_brelse(struct sx_trans *tp, struct sx_buf *bp)
{
	VERIFY(bp->b_trans == tp);
	if (bp->b_flags & (SX_BUF_LOGGED | SX_BUF_INVAL | SX_BUF_NEW | SX_BUF_HOLD))
		return;
	if (tp->t_flags & SX_TRANS_KEEP_CLEAN)
		return;
	sx_trans_detach(bp);
	sx_buf_relse(bp);
}

/* The block stops being metadata. */
int sx_trans_binval(struct sx_trans *tp, struct sx_buf *bp)
{
	u32 oldflags = bp->b_flags;
	int error;

	VERIFY(bp->b_trans == tp);
	bp->b_flags |= SX_BUF_INVAL;
	bp->b_flags &= ~(SX_BUF_NEW | SX_BUF_LOGGED);
	error = sx_trans_recost(tp, bp);
	if (error) {
		bp->b_flags = oldflags;
		return error;
	}
	memset(bp->b_logmap, 0, sizeof(bp->b_logmap));
	tp->t_flags |= SX_TRANS_DIRTY;
	return 0;
}

u32 sx_trans_stale_bytes(void)
{
	return sx_trans_op_bytes(sizeof(struct sx_dlog_buf));
}

/* Cancel the logged images of freed file blocks (sx_trans_stale_data()). */
u32 sx_trans_stale_data(struct sx_trans *tp, u64 bno, u64 len, u32 max)
{
	struct sx_mount *mp = tp->t_mp;
	u64 b = bno, hit;
	u32 done = 0;

	while (done < max && b - bno < len && sx_buf_range_data(mp, b, len - (b - bno), &hit)) {
		struct sx_buf *bp = sx_trans_find_buf(tp, hit);

		b = hit + 1;
		if (bp) {
			if (!sx_buf_is_data(bp) || (bp->b_flags & SX_BUF_INVAL))
				continue;
		} else {
			bp = sx_buf_trylock_data(mp, hit);
			if (!bp)
				continue;
			if (sx_trans_attach(tp, bp)) {
				sx_buf_relse(bp);
				continue;
			}
		}
		if (tp->t_bytes - bp->b_tcost + sx_trans_stale_bytes() > tp->t_res_bytes)
			break;		/* the caller reserved for fewer: the rest stay */
		if (sx_trans_binval(tp, bp) == 0)
			done++;
	}
	return done;
}

/* Log an intent or done item. */
int sx_trans_log_item(struct sx_trans *tp, u16 type, const void *payload, u32 len)
{
	struct sx_trans_item *ti;
	u32 cost = sx_trans_op_bytes(len);

	if (!sx_item_is_intent(type) && !sx_item_is_done(type))
		return -EINVAL;
	if (len < sizeof(struct sx_dlog_intent))
		return -EINVAL;
	if (tp->t_bytes + cost > tp->t_res_bytes) {
		sx_err(tp->t_mp, "transaction %llu: %s item overruns the reservation",
		       (unsigned long long)tp->t_tid, sx_item_name(type));
		return -ENOSPC;
	}
	ti = sx_alloc(sizeof(*ti) + len, SX_NOFS);
	if (!ti)
		return -ENOMEM;
	ti->ti_type = type;
	ti->ti_len = len;
	memcpy(ti->ti_data, payload, len);
	sx_list_add_tail(&ti->ti_list, &tp->t_items);
	tp->t_bytes += cost;
	tp->t_flags |= SX_TRANS_DIRTY;
	return 0;
}

/* Append one op header and its payload pieces at @p; returns the new end. */
static u8 *sx_trans_put_op(u8 *p, u16 type, u64 tid, u32 len)
{
	struct sx_dlog_op *op = (struct sx_dlog_op *)p;

	op->lo_type = cpu_to_le16(type);
	op->lo_flags = 0;
	op->lo_len = cpu_to_le32(len);
	op->lo_tid = cpu_to_le64(tid);
	return p + sizeof(*op);
}

/* Format the changes of @bp as one BUF op at @p; returns the new end. */
static u8 *sx_trans_format_buf(struct sx_trans *tp, struct sx_buf *bp, u8 *p)
{
	struct sx_mount *mp = tp->t_mp;
	u32 nchunks = mp->m_bsize / SX_BUF_CHUNK;
	u32 chunks, runs, len, i, off;
	bool whole = false;
	struct sx_dlog_buf *lb;
	struct sx_dlog_region *rg;
	u8 *data;

	if (bp->b_flags & SX_BUF_INVAL) {
		runs = 0;
		chunks = 0;
	} else if ((bp->b_flags & SX_BUF_NEW) || sx_buf_is_data(bp)) {
		whole = true;		/* file data is replayed whole, over anything */
	} else {
		sx_buf_map_count(bp, nchunks, &chunks, &runs);
		if (runs * sizeof(*rg) + chunks * SX_BUF_CHUNK >= sizeof(*rg) + mp->m_bsize)
			whole = true;
	}
	if (whole) {
		runs = 1;
		chunks = nchunks;
	}
	len = sizeof(*lb) + runs * sizeof(*rg) + chunks * SX_BUF_CHUNK;
	p = sx_trans_put_op(p, SX_LOG_OP_BUF, tp->t_tid, len);
	lb = (struct sx_dlog_buf *)p;
	lb->lb_blkno = cpu_to_le64(bp->b_blkno);
	lb->lb_flags = cpu_to_le32((bp->b_flags & SX_BUF_INVAL) ? SX_LB_CANCEL :
				   sx_buf_is_data(bp) ? SX_LB_DATA : 0);
	lb->lb_nregions = cpu_to_le16(runs);
	lb->lb_pad = 0;
	rg = (struct sx_dlog_region *)(lb + 1);
	data = (u8 *)(rg + runs);
	if (whole) {
		rg->lg_off = 0;
		rg->lg_len = cpu_to_le32(mp->m_bsize);
		memcpy(data, bp->b_data, mp->m_bsize);
		data += mp->m_bsize;
	} else {
		for (i = 0; i < nchunks; i++) {
			u32 start;

			if (!((bp->b_logmap[i / 64] >> (i % 64)) & 1))
				continue;
			start = i;
			while (i + 1 < nchunks && ((bp->b_logmap[(i + 1) / 64] >> ((i + 1) % 64)) & 1))
				i++;
			off = start * SX_BUF_CHUNK;
			rg->lg_off = cpu_to_le32(off);
			rg->lg_len = cpu_to_le32((i - start + 1) * SX_BUF_CHUNK);
			memcpy(data, (u8 *)bp->b_data + off, (i - start + 1) * SX_BUF_CHUNK);
			data += (i - start + 1) * SX_BUF_CHUNK;
			rg++;
		}
	}
	len = (u32)(data - p);
	memset(data, 0, sx_roundup(len, SX_LOG_OP_ALIGN) - len);
	return p + sx_roundup(len, SX_LOG_OP_ALIGN);
}

/*
 * Release each joined buffer after a commit, except held ones: those stay
 * locked and go on @held if it is given (a roll re-joins them).
 */
static void sx_trans_release_bufs(struct sx_trans *tp, struct sx_list *held)
{
	struct sx_list *pos, *n;

	sx_list_for_each_safe(pos, n, &tp->t_bufs) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_tlist);

		sx_trans_detach(bp);
		if (bp->b_flags & SX_BUF_HOLD) {
			if (held)
				sx_list_add_tail(&bp->b_tlist, held);
			continue;
		}
		sx_buf_relse(bp);
	}
}

/* Free the items of a transaction. */
static void sx_trans_free_items(struct sx_trans *tp)
{
	struct sx_list *pos, *n;

	sx_list_for_each_safe(pos, n, &tp->t_items) {
		sx_list_del(pos);
		sx_free(sx_list_entry(pos, struct sx_trans_item, ti_list));
	}
}

/* Undo every change: joined buffers get their contents back. */
void sx_trans_cancel(struct sx_trans *tp)
{
	struct sx_mount *mp;
	struct sx_list *pos, *n;

	if (!tp)
		return;
	mp = tp->t_mp;
	sx_defer_cancel(tp);

	sx_list_for_each_safe(pos, n, &tp->t_bufs) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_tlist);

		if (bp->b_flags & SX_BUF_NEW)
			sx_buf_invalidate(mp, bp);
		memcpy(bp->b_data, bp->b_orig, mp->m_bsize);
		if (!(bp->b_flags & SX_BUF_NEW) && bp->b_ops && bp->b_ops->bo_cancel)
			bp->b_ops->bo_cancel(mp, bp);
		sx_trans_detach(bp);
		bp->b_flags &= ~SX_BUF_HOLD;
		sx_buf_relse(bp);
	}
	sx_trans_free_items(tp);
	sx_log_unreserve(mp, tp->t_res_blocks);
	sx_free(tp);
}

/*
 * Format and queue the transaction; the joined buffers stay attached.  The
 * caller releases them.
 */
static int sx_trans_queue(struct sx_trans *tp, u64 *seqp)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_buf **bufs = NULL;
	u64 *ids = NULL;
	u32 nbufs = 0, nitems = 0, nintents = 0, ndones = 0, nops = 0;
	struct sx_list *pos;
	u8 *ops, *p;
	int error;

	sx_trans_cover_queued(tp);
	sx_list_for_each(pos, &tp->t_bufs)
		nbufs++;
	sx_list_for_each(pos, &tp->t_items)
		nitems++;
	ops = sx_alloc(tp->t_bytes, SX_NOFS);
	bufs = sx_alloc(sizeof(*bufs) * (nbufs + 1), SX_NOFS);
	ids = sx_alloc(sizeof(*ids) * (nitems + 1) * 2, SX_NOFS);
	if (!ops || !bufs || !ids) {
		error = -ENOMEM;
		goto out_free;
	}

	p = ops;
	nbufs = 0;
	sx_list_for_each(pos, &tp->t_bufs) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_tlist);

		if (!(bp->b_flags & (SX_BUF_LOGGED | SX_BUF_INVAL | SX_BUF_NEW)))
			continue;
		p = sx_trans_format_buf(tp, bp, p);
		bufs[nbufs++] = bp;
		nops++;
	}
	/* intent ids first, done ids after them, in the same array */
	sx_list_for_each(pos, &tp->t_items) {
		struct sx_trans_item *ti = sx_list_entry(pos, struct sx_trans_item, ti_list);
		const struct sx_dlog_intent *li = (const void *)ti->ti_data;

		p = sx_trans_put_op(p, ti->ti_type, tp->t_tid, ti->ti_len);
		memcpy(p, ti->ti_data, ti->ti_len);
		memset(p + ti->ti_len, 0, sx_roundup(ti->ti_len, SX_LOG_OP_ALIGN) - ti->ti_len);
		p += sx_roundup(ti->ti_len, SX_LOG_OP_ALIGN);
		nops++;
		if (sx_item_is_intent(ti->ti_type))
			ids[nintents++] = le64_to_cpu(li->li_id);
	}
	sx_list_for_each(pos, &tp->t_items) {
		struct sx_trans_item *ti = sx_list_entry(pos, struct sx_trans_item, ti_list);
		const struct sx_dlog_intent *li = (const void *)ti->ti_data;

		if (!sx_item_is_intent(ti->ti_type))
			ids[nintents + ndones++] = le64_to_cpu(li->li_id);
	}
	p = sx_trans_put_op(p, SX_LOG_OP_TRANS_END, tp->t_tid, 0);
	nops++;
	VERIFY((u32)(p - ops) <= tp->t_bytes);

	error = sx_log_commit(mp, tp->t_tid, ops, (u32)(p - ops), nops, bufs, nbufs,
			      ids, nintents, ids + nintents, ndones, tp->t_res_blocks, seqp);
	ops = NULL;		/* the log owns it now, even on error */
	tp->t_res_blocks = 0;	/* so is the reservation */
	/* a committed binval leaves the cached copy stale */
out_free:
	sx_free(ops);
	sx_free(bufs);
	sx_free(ids);
	return error;
}

/* @tp changes @ip: remember it, once. */
void sx_trans_note_inode(struct sx_trans *tp, struct sx_inode *ip)
{
	u32 i;

	for (i = 0; i < tp->t_ninodes; i++)
		if (tp->t_inodes[i] == ip->i_ino)
			return;
	if (tp->t_ninodes == SX_TRANS_INODES) {
		tp->t_flags |= SX_TRANS_INODES_LOST;
		return;
	}
	tp->t_inodes[tp->t_ninodes++] = ip->i_ino;
}

/*
 * @tp reached the log as commit sequence @seq: the inodes it changed are
 * durable once that is.  One that changed more inodes than it remembers
 * makes every fsync wait for it.  Inodes are remembered by number and
 * looked up now: one may have lost its last reference (and its in-core
 * copy) before the commit, and a copy read again later starts from the
 * commit count of the time it was read.
 */
static void sx_trans_stamp_inodes(struct sx_trans *tp, u64 seq)
{
	struct sx_atomic64 *lost = &tp->t_mp->m_inodes_lost_seq;
	s64 old;
	u32 i;

	for (i = 0; i < tp->t_ninodes; i++)
		sx_icache_committed(tp->t_mp, tp->t_inodes[i], seq);
	if (!(tp->t_flags & SX_TRANS_INODES_LOST))
		return;
	do {
		old = sx_atomic64_read(lost);
		if ((u64)old >= seq)
			return;
	} while (sx_atomic64_cmpxchg(lost, old, (s64)seq) != old);
}

/*
 * Commit and free a transaction; held buffers go on @held if given.
 * *@queued says whether it reached the log: an error may come after that,
 * from the force or push that follows.
 */
static int sx_trans_commit_held(struct sx_trans *tp, struct sx_list *held, bool *queued)
{
	struct sx_mount *mp = tp->t_mp;
	bool sync = tp->t_flags & SX_TRANS_SYNC;
	u64 seq = 0;
	int error = 0;

	*queued = false;
	if (sx_is_shutdown(mp)) {
		error = -EIO;
		goto out_cancel;
	}
	if (tp->t_flags & SX_TRANS_DIRTY) {
		error = sx_fault("trans_commit");
		if (error)
			goto out_cancel;
		error = sx_trans_queue(tp, &seq);
		if (error) {
			/*
			 * Nothing was queued: the in-memory state can no
			 * longer be made to match the log, so stop.
			 */
			sx_force_shutdown(mp, error, "a transaction could not be queued to the log");
			goto out_cancel;
		}
		*queued = true;
		/* before the refcount tree's lock goes with the buffers */
		if (tp->t_flags & SX_TRANS_UNSHARED)
			sx_refcount_unshared_commit(mp, tp->t_tid);
		/* and before the allocator's: its frees are busy until @seq is durable */
		sx_alloc_committed(tp, seq);
		sx_trans_stamp_inodes(tp, seq);
	} else {
		sx_log_unreserve(mp, tp->t_res_blocks);
	}
	sx_trans_release_bufs(tp, held);
	sx_trans_free_items(tp);
	sx_free(tp);
	if (sync)
		error = seq ? sx_log_force_seq(mp, seq, false) : sx_log_force(mp);
	else
		error = sx_log_cil_push(mp);
	if (!error && sx_bcache_pressure(mp)) {
		/*
		 * Relief for the cache, not part of the commit, which is in
		 * the log whatever happens here: only a checkpoint that shut
		 * the mount down fails the call.  One short of memory is
		 * tried again at the next commit.
		 */
		error = sx_log_checkpoint(mp);
		if (error && !sx_is_shutdown(mp))
			error = 0;
	}
	return error;

out_cancel:
	sx_trans_cancel(tp);
	return error;
}

/*
 * Commit @tp; held buffers stay locked and are the caller's to release.
 * Work still queued is finished first, in a chain of its own.
 */
int sx_trans_commit(struct sx_trans *tp)
{
	bool queued;
	int error;

	if (sx_defer_pending(tp)) {
		error = sx_defer_finish(&tp);
		if (error) {
			sx_trans_cancel(tp);
			return error;
		}
	}
	return sx_trans_commit_held(tp, NULL, &queued);
}

/*
 * Commit and continue in a new transaction with the same reservation; held
 * buffers stay locked and joined.  On error everything is released and
 * *@tpp is NULL.
 */
int sx_trans_roll(struct sx_trans **tpp)
{
	return sx_trans_roll_res(tpp, 0, NULL);
}

/* sx_trans_roll() into a reservation of at least @res_bytes. */
int sx_trans_roll_res(struct sx_trans **tpp, u32 res_bytes, bool *committed)
{
	struct sx_trans *tp = *tpp, *ntp = NULL;
	struct sx_mount *mp = tp->t_mp;
	u32 res = sx_max(tp->t_res_bytes - SX_TRANS_END_BYTES, res_bytes);
	u32 flags = tp->t_flags & SX_TRANS_SYNC;
	struct sx_list held, dfops, *pos, *n;
	bool queued;
	int error;

	/* queued work is promised by this commit and carried to the next */
	*tpp = NULL;
	if (committed)
		*committed = false;
	error = sx_defer_log_intents(tp);
	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	sx_list_init(&held);
	sx_list_init(&dfops);
	sx_defer_detach(tp, &dfops);
	error = sx_trans_commit_held(tp, &held, &queued);
	if (committed)
		*committed = queued;
	/*
	 * Once in the log the intents are promised, whatever fails next (the
	 * new transaction's allocation or reservation): work dropped then is
	 * work only recovery may finish, and dropping it shuts down.
	 */
	if (queued)
		sx_defer_committed(&dfops);
	if (!error)
		error = sx_trans_alloc(mp, res, flags, &ntp);
	if (!error)
		sx_defer_attach(ntp, &dfops);
	else
		sx_defer_drop(mp, &dfops);
	sx_list_for_each_safe(pos, n, &held) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_tlist);

		sx_list_del(&bp->b_tlist);
		if (!error) {
			error = sx_trans_attach(ntp, bp);
			if (!error)
				continue;
		}
		bp->b_flags &= ~SX_BUF_HOLD;
		sx_buf_relse(bp);
	}
	if (error) {
		if (ntp)
			sx_trans_cancel(ntp);
		return error;
	}
	*tpp = ntp;
	return 0;
}
