// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Clone and copy-on-write.
 *
 * Clone (FICLONE/FICLONERANGE) walks the source range one mapping (or
 * hole) at a time.  For each piece it first empties the destination's
 * blocks there (BUI unmaps, each dropping a reference to what it removes),
 * then, for a mapping, queues a refcount increase of the source blocks
 * (CUI) and the mapping of the same blocks, in the same state, into the
 * destination (BUI), with the destination size grown over the piece.  Each
 * of the two is a chain of transactions through the deferred ops: the
 * intents are logged in the chain's first transaction, so a crash in the
 * middle is finished by recovery, and a crash between chains leaves the
 * destination with the piece unmapped (a hole), which a clone that did not
 * complete may leave.  The unmap runs as its own chain so that the map
 * never depends on the order the defer engine finishes items in.
 *
 * Where the destination is a hole already (a fresh file: an update's
 * clone), no chain is needed: one transaction raises the refcount of a
 * source piece and maps it into the destination directly, piece after
 * piece, for as many pieces as its reservation (room for
 * SX_REFLINK_BATCH of them, or of half the log's largest record) still
 * covers.
 * Each transaction is complete in itself; a crash between two leaves the
 * destination holding a prefix of the clone, as a crash between chains
 * does.  A clone of a file of many small extents is then a few
 * transactions, not three per extent.
 *
 * Copy-on-write gives a file its own copy of the shared blocks it is about
 * to write: new blocks are allocated in the caller's transaction, the old
 * contents copied into them (durable before the remap commits), and the
 * file range remapped directly (sx_bmap_replace_one(), one piece each)
 * with a deferred refcount decrease of the old blocks.
 */
#include "util.h"
#include "reflink.h"
#include "refcount.h"
#include "bmap.h"
#include "inode.h"
#include "file.h"
#include "defer.h"
#include "trans.h"
#include "alloc.h"
#include "mount.h"
#include "dev.h"
#include "item_refc.h"
#include "item_bmap.h"
#include "file_io.h"
#include "log.h"

/* Blocks one copy-on-write I/O moves at most (the bounce buffer). */
#define SX_COW_IO_BYTES		(64u * 1024)

/* Log bytes of a deferred-op chain whose steps are BUI and CUI steps. */
static u32 sx_reflink_chain_res(const struct sx_mount *mp)
{
	u32 step = sx_max(sx_bmap_defer_ops.do_step_res(mp),
			  sx_refcount_defer_ops.do_step_res(mp));
	u32 bui = sx_trans_op_bytes(sizeof(struct sx_dlog_intent) +
				    sx_bmap_defer_ops.do_max_items * sizeof(struct sx_dlog_bmap));
	u32 cui = sx_trans_op_bytes(sizeof(struct sx_dlog_intent) +
				    sx_refcount_defer_ops.do_max_items * sizeof(struct sx_dlog_cui));

	/* a step, the intents (re)logged and done beside it, two inode cores */
	return step + 2 * (bui + cui) + 2 * sx_inode_res_bytes(mp);
}

/* The reservation sx_reflink_cow() needs of its caller's transaction. */
u32 sx_reflink_cow_res_bytes(const struct sx_mount *mp, const struct sx_inode *ip)
{
	return sx_max(sx_reflink_chain_res(mp),
		      2 * sx_bmap_res_bytes(mp, ip) + sx_alloc_res_bytes(mp) +
		      sx_trans_op_bytes(sizeof(struct sx_dlog_intent) +
					sizeof(struct sx_dlog_cui)));
}

/* Register the BUI and CUI types with the defer engine. */
int sx_reflink_register(void)
{
	int error;

	error = sx_defer_register(&sx_bmap_defer_ops);
	if (error)
		return error;
	error = sx_defer_register(&sx_refcount_defer_ops);
	if (error)
		sx_defer_unregister(&sx_bmap_defer_ops);
	return error;
}

/* Unregister the BUI and CUI types. */
void sx_reflink_unregister(void)
{
	sx_defer_unregister(&sx_refcount_defer_ops);
	sx_defer_unregister(&sx_bmap_defer_ops);
}

/* ------------------------------------------------------------------ clone */

/* File sizes and offsets are signed 64-bit numbers of bytes. */
static inline u64 sx_reflink_max_bytes(const struct sx_mount *mp)
{
	return ((u64)1 << 63) - mp->m_bsize;
}

/*
 * FICLONERANGE checks (those of the VFS's generic_remap_checks and
 * vfs_clone_file_range): file types, flags, alignment, overflow, EOF.
 * On success *@blen is the number of blocks to remap (0: nothing to do)
 * and *@new_size what the destination's size becomes at least.
 */
static int sx_reflink_check(struct sx_inode *dst, u64 dst_off, struct sx_inode *src,
			    u64 src_off, u64 *lenp, u64 *blen)
{
	struct sx_mount *mp = src->i_mp;
	u64 bs = mp->m_bsize, len = *lenp, isize = src->i_size, bcount;

	*blen = 0;
	if ((src->i_mode & SX_IFMT) == SX_IFDIR || (dst->i_mode & SX_IFMT) == SX_IFDIR)
		return -EISDIR;
	if ((src->i_mode & SX_IFMT) != SX_IFREG || (dst->i_mode & SX_IFMT) != SX_IFREG)
		return -EINVAL;
	if (dst->i_flags & (SX_DIFLAG_IMMUTABLE | SX_DIFLAG_APPEND))
		return -EPERM;
	if ((src->i_flags | dst->i_flags) & SX_DIFLAG_SWAPFILE)
		return -ETXTBSY;
	/* zero length: to the source's EOF */
	if (len == 0) {
		if (src_off == isize)
			return 0;
		if (src_off > isize)
			return -EINVAL;
		len = isize - src_off;
	}
	if (src_off % bs || dst_off % bs)
		return -EINVAL;
	if (src_off + len < src_off || dst_off + len < dst_off)
		return -EINVAL;
	if (src_off >= isize)
		return -EINVAL;
	len = sx_min(len, isize - src_off);
	if (dst_off + len > sx_reflink_max_bytes(mp) || src_off + len > sx_reflink_max_bytes(mp))
		return -EFBIG;
	if (src_off + len == isize) {
		/* to the source's EOF: the partial last block goes too */
		bcount = sx_roundup(isize, bs) - src_off;
		/* but never into the middle of the destination, past whose
		 * new end the rest of that block would show */
		if (isize % bs && dst_off + len < dst->i_size)
			return -EINVAL;
	} else {
		if (len % bs)
			return -EINVAL;
		bcount = len;
	}
	if (src == dst && dst_off + bcount > src_off && dst_off < src_off + bcount)
		return -EINVAL;
	*lenp = len;
	*blen = bcount >> mp->m_blog;
	return 0;
}

/* Give @ip the REFLINK flag in @tp if it lacks it. */
static int sx_reflink_set_flag(struct sx_trans *tp, struct sx_inode *ip)
{
	if (ip->i_flags & SX_DIFLAG_REFLINK)
		return 0;
	ip->i_flags |= SX_DIFLAG_REFLINK;
	return sx_inode_log(tp, ip);
}

/* Start a chain's first transaction and lock both inodes for it. */
static int sx_reflink_trans(struct sx_inode *dst, struct sx_inode *src, struct sx_trans **tpp)
{
	int error;

	error = sx_trans_alloc(dst->i_mp, sx_reflink_chain_res(dst->i_mp), 0, tpp);
	if (error)
		return error;
	sx_ilock_two(src, dst, SX_ILOCK_EXCL);
	return 0;
}

/* Finish a chain and commit it (or cancel it on error), then unlock. */
static int sx_reflink_trans_end(struct sx_inode *dst, struct sx_inode *src,
				struct sx_trans *tp, int error)
{
	if (!error && !sx_defer_pending(tp) && !(tp->t_flags & SX_TRANS_DIRTY)) {
		/* nothing was changed: no record needed */
		sx_trans_cancel(tp);
		goto out_unlock;
	}
	if (!error)
		error = sx_defer_finish(&tp);
	if (!error) {
		error = sx_trans_commit(tp);
	} else if (tp) {
		/* (a failed roll in sx_defer_finish() leaves no transaction) */
		sx_defer_cancel(tp);
		sx_trans_cancel(tp);
	}
out_unlock:
	sx_iunlock_two(src, dst, SX_ILOCK_EXCL);
	return error;
}

/* True if file blocks [@off, +@len) of @ip map anything. */
static int sx_reflink_any_mapped(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
				 bool *mapped)
{
	struct sx_bmap_irec got;
	u64 end = off + len;
	int error;

	*mapped = false;
	while (off < end) {
		error = sx_bmap_lookup(tp, ip, off, &got);
		if (error)
			return error;
		if (got.br_startblock != SX_HOLE) {
			*mapped = true;
			return 0;
		}
		off = got.br_startoff + got.br_blockcount;
	}
	return 0;
}

/*
 * Remap one piece: destination blocks [@doff, +@n) get what source block
 * @soff starts (a mapping or a hole); *@done says how many blocks it was.
 * @size_end: the destination size after the whole clone.
 */
static int sx_reflink_remap_piece(struct sx_inode *dst, u64 doff, struct sx_inode *src,
				  u64 soff, u64 n, u64 size_end, u64 *done)
{
	struct sx_mount *mp = dst->i_mp;
	struct sx_bmap_irec smap, dmap;
	struct sx_trans *tp;
	bool mapped;
	u64 new_size;
	int error;

	ASSERT(sx_rwsem_is_write_held(&dst->i_iolock) && sx_rwsem_is_write_held(&src->i_iolock));
	/* empty the destination's part first, as its own chain */
	error = sx_reflink_trans(dst, src, &tp);
	if (error)
		return error;
	error = sx_bmap_lookup(tp, src, soff, &smap);
	if (error)
		goto out_end;
	if (SX_IS_CORRUPT(mp, smap.br_blockcount == 0)) {
		error = -EFSCORRUPTED;
		goto out_end;
	}
	n = sx_min(n, smap.br_startoff + smap.br_blockcount - soff);
	if (smap.br_startblock != SX_HOLE) {
		smap.br_startblock += soff - smap.br_startoff;
		smap.br_startoff = soff;
	}
	smap.br_blockcount = (u32)n;
	error = sx_reflink_any_mapped(tp, dst, doff, n, &mapped);
	if (!error && mapped)
		error = sx_bmap_unmap_later(tp, dst, doff, n, 0);
out_end:
	error = sx_reflink_trans_end(dst, src, tp, error);
	if (error)
		return error;

	/* then share the source's blocks there */
	error = sx_reflink_trans(dst, src, &tp);
	if (error)
		return error;
	if (smap.br_startblock != SX_HOLE) {
		/* nothing can have changed the source: both IOLOCKs are held */
		error = sx_bmap_lookup(tp, dst, doff, &dmap);
		if (!error && (dmap.br_startblock != SX_HOLE || dmap.br_blockcount < n))
			error = -EFSCORRUPTED;
		if (!error)
			error = sx_refcount_increase_later(tp, smap.br_startblock, n);
		dmap = smap;
		dmap.br_startoff = doff;
		if (!error)
			error = sx_bmap_map_later(tp, dst, &dmap);
	}
	new_size = sx_min((doff + n) << mp->m_blog, size_end);
	if (!error && new_size > dst->i_size) {
		dst->i_size = new_size;
		error = sx_inode_log(tp, dst);
	}
	error = sx_reflink_trans_end(dst, src, tp, error);
	if (!error)
		*done = n;
	return error;
}

/* Pieces one direct clone transaction reserves room for. */
#define SX_REFLINK_BATCH	32

/* Log bytes one piece of a direct clone needs at most: a refcount step and a map. */
static u32 sx_reflink_direct_piece_res(const struct sx_mount *mp, const struct sx_inode *dst)
{
	return sx_refcount_res_bytes(mp) + sx_bmap_res_bytes(mp, dst);
}

/*
 * The reservation of a direct clone transaction: the destination's inode
 * core and SX_REFLINK_BATCH pieces, within half the log's largest record.
 * 0 if that holds not even one piece (a tiny log): the clone goes through
 * the chains then, whose transactions sx_file_res_largest() counts.
 */
static u32 sx_reflink_direct_res(const struct sx_mount *mp, const struct sx_inode *dst)
{
	u32 piece = sx_reflink_direct_piece_res(mp, dst), base = sx_inode_res_bytes(mp);
	u32 res = sx_min(base + SX_REFLINK_BATCH * piece, sx_log_max_trans_bytes(mp) / 2);

	return res < base + piece ? 0 : res;
}

/*
 * Clone source blocks from @soff at destination blocks from @doff, at most
 * @n of them, in one transaction, as many pieces as its reservation
 * covers: each source mapping's refcount raised and the same blocks mapped
 * into the destination, where the destination is a hole.  *@done says how
 * many blocks were cloned: 0 if the first piece's destination maps
 * something, or the log is too small (sx_reflink_remap_piece() then
 * clones it in chains).
 */
static int sx_reflink_remap_direct(struct sx_inode *dst, u64 doff, struct sx_inode *src,
				   u64 soff, u64 n, u64 size_end, u64 *done)
{
	struct sx_mount *mp = dst->i_mp;
	u32 piece = sx_reflink_direct_piece_res(mp, dst);
	struct sx_bmap_irec smap, dmap;
	struct sx_trans *tp;
	struct sx_buf *ibp;
	u64 pos = 0, new_size, len, step;
	bool mapped;
	int error;

	*done = 0;
	if (!sx_reflink_direct_res(mp, dst))
		return 0;
	error = sx_trans_alloc(mp, sx_reflink_direct_res(mp, dst), 0, &tp);
	if (error)
		return error;
	sx_ilock_two(src, dst, SX_ILOCK_EXCL);
	/*
	 * The destination's inode block before the fsinfo block the
	 * refcount steps take (see sx_reflink_cow()): a B+tree fork would
	 * otherwise first log the inode at a map.
	 */
	error = sx_inode_get_buf(mp, tp, dst, &ibp);
	while (!error && pos < n && sx_trans_space(tp) >= piece + sx_inode_res_bytes(mp)) {
		error = sx_bmap_lookup(tp, src, soff + pos, &smap);
		if (error)
			break;
		if (SX_IS_CORRUPT(mp, smap.br_blockcount == 0)) {
			error = -EFSCORRUPTED;
			break;
		}
		len = sx_min(n - pos, smap.br_startoff + smap.br_blockcount - (soff + pos));
		error = sx_reflink_any_mapped(tp, dst, doff + pos, len, &mapped);
		if (error || mapped)
			break;
		if (smap.br_startblock == SX_HOLE) {
			pos += len;
			continue;
		}
		/* one refcount step: part of the piece, as far as one record goes */
		error = sx_refcount_adjust(tp, smap.br_startblock + (soff + pos - smap.br_startoff),
					   len, SX_CUI_INCREASE, 1, &step);
		if (error)
			break;
		if (SX_IS_CORRUPT(mp, step == 0 || step > len)) {
			error = -EFSCORRUPTED;
			break;
		}
		dmap = smap;
		dmap.br_startblock += soff + pos - smap.br_startoff;
		dmap.br_startoff = doff + pos;
		dmap.br_blockcount = (u32)step;
		/*
		 * The blocks may hold data written in place over the source's
		 * durable mapping: it must be durable before this mapping is.
		 */
		sx_log_data_remap(mp);
		error = sx_bmap_map(tp, dst, &dmap);
		if (!error)
			pos += step;
	}
	if (error)
		goto out_cancel;
	new_size = sx_min((doff + pos) << mp->m_blog, size_end);
	if (new_size > dst->i_size) {
		dst->i_size = new_size;
		error = sx_inode_log(tp, dst);
		if (error)
			goto out_cancel;
	}
	if (pos == 0 && !(tp->t_flags & SX_TRANS_DIRTY))
		sx_trans_cancel(tp);
	else
		error = sx_trans_commit(tp);
	sx_iunlock_two(src, dst, SX_ILOCK_EXCL);
	if (!error)
		*done = pos;
	return error;
out_cancel:
	sx_trans_cancel(tp);
	sx_iunlock_two(src, dst, SX_ILOCK_EXCL);
	return error;
}

/* Share bytes [@src_off, +@len) of @src at @dst_off of @dst. */
int sx_reflink_remap(struct sx_inode *dst, u64 dst_off, struct sx_inode *src, u64 src_off,
		     u64 len)
{
	struct sx_mount *mp = dst->i_mp;
	struct sx_trans *tp;
	u64 blen, pos, done, dfsb, sfsb, size_end;
	int error;

	sx_ilock_two(src, dst, SX_IOLOCK_EXCL);
	error = sx_reflink_check(dst, dst_off, src, src_off, &len, &blen);
	if (error || blen == 0)
		goto out_unlock;
	/* growing the destination: no old bytes past its EOF may show */
	error = sx_file_prepare_grow(dst, dst_off + len);
	if (error)
		goto out_unlock;

	/*
	 * Both files may share blocks from now on, and the destination is
	 * being changed: it gets a new mtime and ctime now, as the VFS's
	 * file_modified() gives it, so that a FILE2_FRESH check (an atomic
	 * update's commit) sees a clone into the file.  The source's times
	 * stay: a clone reads it.
	 */
	error = sx_reflink_trans(dst, src, &tp);
	if (error)
		goto out_unlock;
	error = sx_reflink_set_flag(tp, src);
	if (!error && src != dst)
		error = sx_reflink_set_flag(tp, dst);
	if (!error) {
		s64 now = (s64)sx_wall_ns();

		dst->i_mtime = now;
		dst->i_ctime = now;
		error = sx_inode_log(tp, dst);
	}
	error = sx_reflink_trans_end(dst, src, tp, error);
	if (error)
		goto out_unlock;

	dfsb = dst_off >> mp->m_blog;
	sfsb = src_off >> mp->m_blog;
	size_end = dst_off + len;
	for (pos = 0; pos < blen; pos += done) {
		error = sx_reflink_remap_direct(dst, dfsb + pos, src, sfsb + pos, blen - pos,
						size_end, &done);
		if (!error && done == 0)
			error = sx_reflink_remap_piece(dst, dfsb + pos, src, sfsb + pos,
						       blen - pos, size_end, &done);
		if (error)
			goto out_unlock;
	}
out_unlock:
	sx_iunlock_two(src, dst, SX_IOLOCK_EXCL);
	return error;
}

/* FICLONERANGE on descriptors. */
SX_API int sx_clone_range(struct sx_mount *mp, int dst_fd, u64 dst_off, int src_fd,
			  u64 src_off, u64 len)
{
	struct sx_inode *dst, *src;
	int error, error2;

	error = sx_fd_get(mp, dst_fd, &dst);
	if (error)
		return error;
	error = sx_fd_get(mp, src_fd, &src);
	if (error)
		goto out_dst;
	if (mp->m_flags & SX_MF_RDONLY)
		error = -EROFS;
	else if (sx_is_shutdown(mp))
		error = -EIO;
	else
		error = sx_reflink_remap(dst, dst_off, src, src_off, len);
	error2 = sx_irele(src);
	if (!error)
		error = error2;
out_dst:
	error2 = sx_irele(dst);
	return error ? error : error2;
}

/* FICLONE: the whole source. */
SX_API int sx_clone(struct sx_mount *mp, int dst_fd, int src_fd)
{
	return sx_clone_range(mp, dst_fd, 0, src_fd, 0, 0);
}

/* --------------------------------------------------------- copy-on-write */

/* Copy @n blocks from @from to @to through @buf (SX_COW_IO_BYTES long). */
static int sx_reflink_copy(struct sx_mount *mp, u64 from, u64 to, u64 n, void *buf)
{
	u32 chunk = SX_COW_IO_BYTES >> mp->m_blog, c;
	int error;

	if (chunk == 0)
		chunk = 1;
	while (n) {
		c = (u32)sx_min(n, (u64)chunk);
		error = sx_dev_read(mp, from, c, buf);
		if (error)
			return error;
		sx_buf_overlay_data(mp, from, c, buf);
		error = sx_file_write_data(mp, to, c, buf, true);
		if (error)
			return error;
		from += c;
		to += c;
		n -= c;
	}
	return 0;
}

/*
 * Give file blocks [@off, +@n) of @ip, which lie inside the one mapping
 * @got and are all shared, new blocks: as many as one allocation returns
 * (*@done).
 */
static int sx_reflink_cow_piece(struct sx_trans **tpp, struct sx_inode *ip,
				const struct sx_bmap_irec *got, u64 off, u64 n, void *buf,
				u64 *done)
{
	struct sx_mount *mp = ip->i_mp;
	struct sx_bmap_irec old, new;
	u64 obno = got->br_startblock + (off - got->br_startoff), nbno;
	u32 nlen;
	int error;

	n = sx_min(n, (u64)sx_alloc_max_extent(mp));
	/*
	 * Data goes into the new blocks in place (the copy now, or the
	 * caller's write into an unwritten piece): no block whose free is
	 * not yet durable.
	 */
	error = sx_alloc_data_extent(*tpp, obno, 1, (u32)n, &nbno, &nlen);
	if (error)
		return error;
	if (got->br_state != SX_BMAP_UNWRITTEN) {
		error = sx_reflink_copy(mp, obno, nbno, nlen, buf);
		if (error)
			return error;
	}
	new.br_startoff = off;
	new.br_startblock = nbno;
	new.br_blockcount = nlen;
	new.br_state = got->br_state;
	error = sx_bmap_replace_one(*tpp, ip, &new, &old);
	if (error)
		return error;
	if (SX_IS_CORRUPT(mp, old.br_startoff != off || old.br_blockcount != nlen ||
			      old.br_startblock != obno || old.br_state != got->br_state))
		return -EFSCORRUPTED;
	error = sx_refcount_decrease_later(*tpp, obno, nlen);
	if (error)
		return error;
	error = sx_defer_finish(tpp);
	if (error)
		return error;
	*done = nlen;
	return 0;
}

/* Make the mapped blocks of [@off, +@len) of @ip the file's own. */
int sx_reflink_cow(struct sx_trans **tpp, struct sx_inode *ip, u64 off, u64 len,
		   u64 *cowed)
{
	struct sx_mount *mp = ip->i_mp;
	struct sx_bmap_irec got;
	struct sx_buf *ibp;
	u64 end = off + len, pos = off, gend, pbno, sbno, slen, done;
	void *buf = NULL;
	int error = 0;

	ASSERT(sx_rwsem_is_write_held(&ip->i_iolock) && sx_mutex_is_held(&ip->i_ilock));
	if (cowed)
		*cowed = 0;
	if (!(ip->i_flags & SX_DIFLAG_REFLINK) || len == 0)
		return 0;
	if (end < off)
		return -EINVAL;
	while (pos < end) {
		/*
		 * The inode's block before the fsinfo block that the refcount
		 * lookup takes (each piece rolls the transaction, so again
		 * each time): a B+tree fork would otherwise first log the
		 * inode at the unmap.  Our ilock does not keep everyone off
		 * the inode's block: removing another file from the unlinked
		 * list holds its predecessor's block, which may be ours (a
		 * tmpfile: an update's clone), while it waits for fsinfo.
		 */
		error = sx_inode_get_buf(mp, *tpp, ip, &ibp);
		if (error)
			break;
		error = sx_bmap_lookup(*tpp, ip, pos, &got);
		if (error)
			break;
		gend = sx_min(got.br_startoff + got.br_blockcount, end);
		if (got.br_startblock == SX_HOLE) {
			pos = gend;
			continue;
		}
		pbno = got.br_startblock + (pos - got.br_startoff);
		error = sx_refcount_find_shared(mp, *tpp, pbno, gend - pos, &sbno, &slen);
		if (error)
			break;
		if (slen == 0) {
			pos = gend;
			continue;
		}
		if (!buf) {
			buf = sx_alloc(SX_COW_IO_BYTES > mp->m_bsize ? SX_COW_IO_BYTES :
				       mp->m_bsize, SX_NOFS);
			if (!buf) {
				error = -ENOMEM;
				break;
			}
		}
		pos += sbno - pbno;
		error = sx_reflink_cow_piece(tpp, ip, &got, pos, slen, buf, &done);
		if (error)
			break;
		if (cowed)
			*cowed += done;
		pos += done;
	}
	sx_free(buf);
	return error;
}
