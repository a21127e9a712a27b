// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The data path: read, write, truncate, fallocate, punch, fsync, fiemap.
 *
 * File data is written in place, never through the log.  The ordering
 * rules that make this crash-safe:
 *  - New blocks are written before the transaction that maps them commits,
 *    and the force that writes it lists them with the CRC of their data in
 *    a manifest record, before its records and one flush: recovery drops a
 *    force whose manifest does not match the blocks (log_manifest.c), so
 *    no mapping survives without its data.  Writes say whether the blocks
 *    are fresh (mapping not durable: a hole, a copy-on-write copy, unwritten
 *    blocks to convert) or overwrite a durable mapping, which needs no
 *    order; a transaction that maps blocks holding data into a file (swap,
 *    clone) makes its force flush such overwrites before its records.
 *  - Unwritten blocks (fallocate) read as zeroes; a write puts its data
 *    into them first and converts them to written in a transaction after.
 *  - A block freed by a transaction that is not yet durable is not written
 *    in place (else a crash could give the block back to its old owner
 *    with our data in it): every allocation of blocks that data will go
 *    into in place (a write into a hole, fallocate, copy-on-write) is
 *    sx_alloc_data_extent(), which steps around such busy blocks and, only
 *    when nothing else is free, forces the log once and takes them.  The
 *    allocator learns of each free under the lock it allocates under, so
 *    no free can slip between the check and the allocation.
 *  - Shared blocks are never written in place: sx_reflink_cow() gives the
 *    file its own copies first.  Nor are blocks whose other owners let go
 *    of them in a transaction that is not yet durable (a copy-on-write,
 *    punch or clone over them in the other file): a crash would give the
 *    block back to them with our data in it, so
 *    sx_refcount_unshare_barrier() forces the log first.
 *  - fsync makes durable what the file's own transactions did: each one
 *    that joins the inode's block stamps the in-core inode with its commit
 *    sequence, and fsync forces the log that far and no further (or, if
 *    that is durable, flushes only data written in place since the last
 *    flush).  Every change of a file's data or mapping logs its inode.
 *  - A file's size changes in the transaction that maps the blocks a write
 *    extends it with, so a crash leaves a prefix of the write.  Blocks past
 *    EOF can outlive a crash (a truncate's chain of unmaps, a fallocate that
 *    failed half way); before a file grows over them they are freed, and the
 *    tail of the EOF block is zeroed, so old bytes never show (xfs_zero_eof).
 *
 * Locking: the iolock is held shared by reads and exclusive by everything
 * that changes data or mappings, for the whole call; the ilock (metadata)
 * is taken for each lookup and for each transaction, after the transaction
 * is allocated (a reservation may wait for a checkpoint) and until it
 * commits.  Long operations are chains of transactions, each complete.
 */
#include "util.h"
#include "file.h"
#include "bmap.h"
#include "inode.h"
#include "trans.h"
#include "alloc.h"
#include "defer.h"
#include "refcount.h"
#include "item_efi.h"
#include "reflink.h"
#include "log.h"
#include "mount.h"
#include "dev.h"
#include "item_refc.h"
#include "file_io.h"
#include "fsinfo.h"
#include <swapext/swapext.h>

/* Blocks one device read or write of file data moves at most. */
#define SX_IO_MAX_BYTES		(1u << 20)

/* One data path call on one open file. */
struct sx_io {
	struct sx_mount	*io_mp;
	struct sx_inode	*io_ip;
	u8		*io_buf;		/* one block: partial blocks, zeroes */
	u64		io_bsize;
	u32		io_blog;
};

/*
 * Write data blocks in place; @fresh: their mapping is not durable yet, so
 * the log lists them in the manifest of the force that maps them.
 */
int sx_file_write_data(struct sx_mount *mp, u64 bno, u32 count, const void *buf, bool fresh)
{
	int error;

	error = sx_fault("file_write_data");
	if (error)
		return error;
	return sx_log_write_data(mp, bno, count, buf, fresh);
}

/* Read data blocks, those still in the log from their buffers. */
static int sx_file_read_data(struct sx_mount *mp, u64 bno, u32 count, void *buf)
{
	int error;

	error = sx_fault("file_read_data");
	if (!error)
		error = sx_dev_read(mp, bno, count, buf);
	if (!error)
		sx_buf_overlay_data(mp, bno, count, buf);
	return error;
}

/*
 * Set up a call on descriptor @fd: the inode, referenced, checked to be a
 * regular file, and a block buffer.
 */
static int sx_io_begin(struct sx_mount *mp, int fd, struct sx_io *io)
{
	struct sx_inode *ip;
	int error;

	io->io_ip = NULL;
	io->io_buf = NULL;
	if (sx_is_shutdown(mp))
		return -EIO;
	error = sx_fd_get(mp, fd, &ip);
	if (error)
		return error;
	if ((ip->i_mode & SX_IFMT) == SX_IFDIR) {
		error = -EISDIR;
		goto out_rele;
	}
	if ((ip->i_mode & SX_IFMT) != SX_IFREG) {
		error = -EINVAL;
		goto out_rele;
	}
	io->io_buf = sx_alloc(mp->m_bsize, 0);
	if (!io->io_buf) {
		error = -ENOMEM;
		goto out_rele;
	}
	io->io_mp = mp;
	io->io_ip = ip;
	io->io_bsize = mp->m_bsize;
	io->io_blog = mp->m_blog;
	return 0;
out_rele:
	sx_irele(ip);
	return error;
}

/* Finish a call: drop the buffer and the inode reference. */
static void sx_io_end(struct sx_io *io)
{
	sx_free(io->io_buf);
	if (io->io_ip)
		sx_irele(io->io_ip);
}

/* The first file block at or after byte @pos. */
static inline u64 sx_io_bup(const struct sx_io *io, u64 pos)
{
	return (pos >> io->io_blog) + ((pos & (io->io_bsize - 1)) != 0);
}

/* The byte offset of file block @fb. */
static inline u64 sx_io_bytes(const struct sx_io *io, u64 fb)
{
	return fb << io->io_blog;
}

/* Mark the file changed now (caller holds the ilock). */
static void sx_file_touch(struct sx_inode *ip)
{
	s64 now = (s64)sx_wall_ns();

	ASSERT(sx_mutex_is_held(&ip->i_ilock));
	ip->i_mtime = now;
	ip->i_ctime = now;
}

/*
 * Start a transaction on the file, take its ilock and join its inode's
 * block: before any fsinfo or bitmap block, whatever the transaction does
 * first (an allocation, a refcount lookup, a B+tree fork whose inode is
 * logged last), as the lock order wants (inode.c).
 */
static int sx_io_trans(struct sx_io *io, u32 res, u32 flags, struct sx_trans **tpp)
{
	struct sx_buf *bp;
	int error;

	error = sx_trans_alloc(io->io_mp, res, flags, tpp);
	if (error)
		return error;
	sx_ilock(io->io_ip, SX_ILOCK_EXCL);
	error = sx_inode_get_buf(io->io_mp, *tpp, io->io_ip, &bp);
	if (error) {
		sx_trans_cancel(*tpp);
		sx_iunlock(io->io_ip, SX_ILOCK_EXCL);
	}
	return error;
}

/* Commit a transaction of sx_io_trans() and drop the ilock. */
static int sx_io_commit(struct sx_io *io, struct sx_trans *tp)
{
	int error = sx_trans_commit(tp);

	sx_iunlock(io->io_ip, SX_ILOCK_EXCL);
	return error;
}

/* Cancel a transaction of sx_io_trans() and drop the ilock. */
static void sx_io_cancel(struct sx_io *io, struct sx_trans *tp)
{
	sx_trans_cancel(tp);
	sx_iunlock(io->io_ip, SX_ILOCK_EXCL);
}

/* A read-only lookup of file block @fb under the ilock. */
static int sx_io_lookup(struct sx_io *io, u64 fb, struct sx_bmap_irec *irec)
{
	int error;

	sx_ilock(io->io_ip, SX_ILOCK_EXCL);
	error = sx_bmap_lookup(NULL, io->io_ip, fb, irec);
	sx_iunlock(io->io_ip, SX_ILOCK_EXCL);
	return error;
}

/* The file's size, read under the ilock. */
static u64 sx_io_size(struct sx_io *io)
{
	u64 size;

	sx_ilock(io->io_ip, SX_ILOCK_EXCL);
	size = io->io_ip->i_size;
	sx_iunlock(io->io_ip, SX_ILOCK_EXCL);
	return size;
}

/*
 * Put bytes [@pos, @end) of the file into the blocks starting at device
 * block @wbno (which holds file block @pos >> blog).  Partial blocks take
 * the rest of their bytes from @rbno's blocks, or zeroes if @rbno is
 * SX_HOLE.  @src holds the bytes from @pos on; NULL writes zeroes.
 */
static int sx_io_put(struct sx_io *io, u64 rbno, u64 wbno, u64 pos, u64 end,
		     const u8 *src, bool fresh)
{
	struct sx_mount *mp = io->io_mp;
	u64 bs = io->io_bsize, cur = pos, b = 0, n, boff, chunk;
	int error;

	while (cur < end) {
		boff = cur & (bs - 1);
		if (boff == 0 && end - cur >= bs && src) {
			/* whole blocks straight from the caller's buffer */
			n = sx_min((end - cur) >> io->io_blog,
				   (u64)(SX_IO_MAX_BYTES >> io->io_blog));
			if (n == 0)
				n = 1;
			error = sx_file_write_data(mp, wbno + b, (u32)n, src + (cur - pos), fresh);
			if (error)
				return error;
			cur += n << io->io_blog;
			b += n;
			continue;
		}
		chunk = sx_min(bs - boff, end - cur);
		if (chunk == bs || rbno == SX_HOLE) {
			memset(io->io_buf, 0, bs);
		} else {
			error = sx_file_read_data(mp, rbno + b, 1, io->io_buf);
			if (error)
				return error;
		}
		if (src)
			memcpy(io->io_buf + boff, src + (cur - pos), chunk);
		else
			memset(io->io_buf + boff, 0, chunk);
		error = sx_file_write_data(mp, wbno + b, 1, io->io_buf, fresh);
		if (error)
			return error;
		cur += chunk;
		b++;
	}
	return 0;
}

/*
 * Overwrite bytes [@pos, @end), which lie in the one written block @bno,
 * through the log: the block's contents are in the log (a data buffer,
 * buf.h), and recovery would write that image over a write in place.  So
 * the new contents are logged whole too, and the newest image wins.  The
 * transaction notes the file, so that its fsync forces the change.
 */
static int sx_io_log_block(struct sx_io *io, u64 bno, u64 pos, u64 end, const u8 *src)
{
	struct sx_mount *mp = io->io_mp;
	u64 boff = pos & (io->io_bsize - 1);
	struct sx_trans *tp;
	struct sx_buf *bp;
	int error;

	error = sx_io_trans(io, sx_trans_buf_bytes(mp) + sx_inode_res_bytes(mp), 0, &tp);
	if (error)
		return error;
	error = sx_trans_read_buf(tp, bno, &sx_data_buf_ops, 0, &bp);
	if (error) {
		sx_io_cancel(io, tp);
		return error;
	}
	if (src)
		memcpy((u8 *)bp->b_data + boff, src, end - pos);
	else
		memset((u8 *)bp->b_data + boff, 0, end - pos);
	error = sx_trans_log_buf(tp, bp, 0, (u32)io->io_bsize - 1);
	if (error) {
		sx_io_cancel(io, tp);
		return error;
	}
	sx_trans_note_inode(tp, io->io_ip);
	return sx_io_commit(io, tp);
}

/*
 * Overwrite bytes [@pos, @end) of the file's own written blocks from
 * device block @bno on: in place, except the blocks whose contents are
 * still in the log, which go through it (sx_io_log_block()).
 */
static int sx_io_overwrite(struct sx_io *io, u64 bno, u64 pos, u64 end, const u8 *src)
{
	u64 nb = sx_io_bup(io, end) - (pos >> io->io_blog), hit, cut;
	int error;

	while (pos < end) {
		if (!sx_buf_range_data(io->io_mp, bno, nb, &hit))
			return sx_io_put(io, bno, bno, pos, end, src, false);
		/* in place up to the logged block, through the log for it */
		cut = sx_io_bytes(io, (pos >> io->io_blog) + (hit - bno));
		if (cut > pos) {
			error = sx_io_put(io, bno, bno, pos, cut, src, false);
			if (error)
				return error;
			src = src ? src + (cut - pos) : NULL;
			nb -= hit - bno;
			bno = hit;
			pos = cut;
		}
		cut = sx_min(end, sx_io_bytes(io, (pos >> io->io_blog) + 1));
		error = sx_io_log_block(io, bno, pos, cut, src);
		if (error)
			return error;
		src = src ? src + (cut - pos) : NULL;
		nb--;
		bno++;
		pos = cut;
	}
	return 0;
}

/* Grow the in-core size to cover @end (caller holds the ilock). */
static void sx_io_extend(struct sx_io *io, u64 end)
{
	ASSERT(sx_mutex_is_held(&io->io_ip->i_ilock));
	if (end > io->io_ip->i_size)
		io->io_ip->i_size = end;
}

/*
 * Write [@pos, @end), which lies in the hole at file block @fb: allocate
 * blocks (next to the mapping before the hole if it can), write the data
 * into them and map them in one transaction that also moves the size.
 * *@donep says how far it got (one allocation may return fewer blocks).
 */
static int sx_io_write_hole_once(struct sx_io *io, u64 fb, u64 pos, u64 end, const u8 *src,
				 u64 *donep)
{
	struct sx_mount *mp = io->io_mp;
	struct sx_inode *ip = io->io_ip;
	struct sx_bmap_irec prev, map;
	struct sx_trans *tp;
	u64 nb = sx_io_bup(io, end) - fb, hint = 0, bno, wend;
	u32 len;
	int error;

	nb = sx_min(nb, (u64)sx_min(sx_alloc_max_extent(mp), SX_BMAP_MAXLEN));
	error = sx_io_trans(io, sx_bmap_res_bytes(mp, ip) + sx_alloc_res_bytes(mp) +
			    sx_inode_res_bytes(mp), 0, &tp);
	if (error)
		return error;
	if (fb > 0) {
		error = sx_bmap_lookup(tp, ip, fb - 1, &prev);
		if (error)
			goto out_cancel;
		if (prev.br_startblock != SX_HOLE)
			hint = prev.br_startblock + (fb - prev.br_startoff);
	}
	error = sx_alloc_data_extent(tp, hint, 1, (u32)nb, &bno, &len);
	if (error)
		goto out_cancel;
	wend = sx_min(end, sx_io_bytes(io, fb + len));
	error = sx_io_put(io, SX_HOLE, bno, pos, wend, src, true);
	if (error)
		goto out_cancel;
	map.br_startoff = fb;
	map.br_startblock = bno;
	map.br_blockcount = len;
	map.br_state = 0;
	error = sx_bmap_map(tp, ip, &map);
	if (error)
		goto out_cancel;
	sx_io_extend(io, wend);
	sx_file_touch(ip);
	error = sx_inode_log(tp, ip);
	if (error)
		goto out_cancel;
	error = sx_io_commit(io, tp);
	if (!error)
		*donep = wend;
	return error;
out_cancel:
	sx_io_cancel(io, tp);
	return error;
}

/*
 * Write [@pos, @end), which lies in the unwritten mapping @irec: the data
 * goes into the blocks first (the rest of a partial block is zeroes, which
 * is what the block reads as), then a transaction converts them.
 */
static int sx_io_write_unwritten(struct sx_io *io, const struct sx_bmap_irec *irec,
				 u64 fb, u64 pos, u64 end, const u8 *src)
{
	struct sx_mount *mp = io->io_mp;
	struct sx_inode *ip = io->io_ip;
	u64 nb = sx_io_bup(io, end) - fb, cur = fb;
	struct sx_bmap_irec changed;
	struct sx_trans *tp;
	int error;

	error = sx_io_put(io, SX_HOLE, irec->br_startblock + (fb - irec->br_startoff), pos,
			  end, src, true);
	if (error)
		return error;
	error = sx_io_trans(io, sx_bmap_res_bytes(mp, ip) + sx_inode_res_bytes(mp), 0, &tp);
	if (error)
		return error;
	/* the range lies inside one mapping: one piece changes */
	error = sx_bmap_set_state_one(tp, ip, cur, nb, 0, &changed);
	if (error)
		goto out_cancel;
	if (SX_IS_CORRUPT(mp, changed.br_startoff != fb || changed.br_blockcount != nb)) {
		error = -EFSCORRUPTED;
		goto out_cancel;
	}
	sx_io_extend(io, end);
	sx_file_touch(ip);
	error = sx_inode_log(tp, ip);
	if (error)
		goto out_cancel;
	return sx_io_commit(io, tp);
out_cancel:
	sx_io_cancel(io, tp);
	return error;
}

/*
 * If any block of the mapped file blocks [@fb, +@nb) (inside mapping
 * @irec) is shared, give the file its own copies first.  *@cowed is set
 * if the mapping changed.  If none is, the caller writes them in place:
 * first the change that took their last other owner away must be durable.
 */
static int sx_io_write_hole(struct sx_io *io, u64 fb, u64 pos, u64 end, const u8 *src,
			    u64 *donep)
{
	int error = sx_io_write_hole_once(io, fb, pos, end, src, donep);

	if (sx_log_home_data(io->io_mp, &error))
		error = sx_io_write_hole_once(io, fb, pos, end, src, donep);
	return error;
}

static int sx_io_unshare(struct sx_io *io, const struct sx_bmap_irec *irec, u64 fb, u64 nb,
			 bool *cowed)
{
	struct sx_mount *mp = io->io_mp;
	struct sx_inode *ip = io->io_ip;
	struct sx_trans *tp;
	u64 bno = irec->br_startblock + (fb - irec->br_startoff), sbno, slen, n = 0;
	int error;

	*cowed = false;
	if (!(ip->i_flags & SX_DIFLAG_REFLINK))
		return 0;
	error = sx_refcount_find_shared(mp, NULL, bno, nb, &sbno, &slen);
	if (error)
		return error;
	if (slen == 0)
		return sx_refcount_unshare_barrier(mp, bno, nb);
	error = sx_io_trans(io, sx_reflink_cow_res_bytes(mp, ip), 0, &tp);
	if (error)
		return error;
	/* (sx_reflink_cow() allocates with sx_alloc_data_extent(): no busy blocks) */
	error = sx_reflink_cow(&tp, ip, fb, nb, &n);
	if (error) {
		sx_io_cancel(io, tp);
		return error;
	}
	*cowed = true;
	return sx_io_commit(io, tp);
}

/*
 * Write bytes [@pos, @end) of the file from @src (NULL: zeroes).  With
 * @zeroing, holes and unwritten blocks are left alone (they read as
 * zeroes already).  *@donep: bytes from @pos done, also on error.
 */
static int sx_io_write(struct sx_io *io, u64 pos, u64 end, const u8 *src, bool zeroing,
		       u64 *donep)
{
	struct sx_bmap_irec irec;
	u64 cur = pos, fb, stepend, next;
	bool cowed, homed = false;
	int error = 0;

	ASSERT(sx_rwsem_is_write_held(&io->io_ip->i_iolock));
	*donep = 0;
	while (cur < end) {
		fb = cur >> io->io_blog;
		error = sx_io_lookup(io, fb, &irec);
		if (error)
			break;
		stepend = sx_min(end, sx_io_bytes(io, irec.br_startoff + irec.br_blockcount));
		if (irec.br_startblock == SX_HOLE) {
			if (zeroing) {
				cur = stepend;
				continue;
			}
			error = sx_io_write_hole(io, fb, cur, stepend, src ? src + (cur - pos) : NULL,
						 &next);
			if (error)
				break;
			cur = next;
			*donep = cur - pos;
			continue;
		}
		error = sx_io_unshare(io, &irec, fb, sx_io_bup(io, stepend) - fb, &cowed);
		if (!homed && sx_log_home_data(io->io_mp, &error)) {
			homed = true;
			continue;	/* look again, with the blocks let go */
		}
		if (error)
			break;
		if (cowed)
			continue;		/* the mapping changed: look again */
		if (irec.br_state == SX_BMAP_UNWRITTEN) {
			if (!zeroing)
				error = sx_io_write_unwritten(io, &irec, fb, cur, stepend,
							      src ? src + (cur - pos) : NULL);
		} else {
			/* the file's own written blocks: overwrite in place */
			u64 bno = irec.br_startblock + (fb - irec.br_startoff);

			error = sx_io_overwrite(io, bno, cur, stepend,
						src ? src + (cur - pos) : NULL);
		}
		if (error)
			break;
		cur = stepend;
		*donep = cur - pos;
	}
	return error;
}

/* Zero bytes [@pos, @end) of the file where they are written. */
static int sx_io_zero(struct sx_io *io, u64 pos, u64 end)
{
	u64 done;

	return sx_io_write(io, pos, end, NULL, true, &done);
}

/*
 * Log bytes of one step of freeing a mapped piece: the unmap and the
 * intent (an EFI, or a CUI for a file that may share blocks) logged beside
 * it.  The work of the intent is done by sx_defer_finish() in transactions
 * it rolls into with the reservation of its own step, so it is not
 * counted here.  This is the least a transaction of sx_file_free_blocks()
 * needs (sx_file_res_largest() counts it); sx_file_free_batch_res() asks
 * for more.
 */
u32 sx_file_free_res(const struct sx_mount *mp, const struct sx_inode *ip)
{
	u32 cui = sx_trans_op_bytes(sizeof(struct sx_dlog_intent) +
				    sx_refcount_defer_ops.do_max_items * sizeof(struct sx_dlog_cui));

	return sx_bmap_res_bytes(mp, ip) + sx_max(sx_efi_res_bytes(mp), cui) +
	       sx_inode_res_bytes(mp);
}

/* Pieces one transaction of sx_file_free_blocks() reserves room for. */
#define SX_FILE_FREE_BATCH	32

/*
 * Log bytes of freeing one piece directly: its unmap and one refcount step,
 * or a free with its cancels.
 */
static u32 sx_file_free_piece_res(const struct sx_mount *mp, const struct sx_inode *ip)
{
	return sx_bmap_res_bytes(mp, ip) +
	       sx_max(sx_refcount_res_bytes(mp), sx_free_data_res_bytes(mp));
}

/*
 * The reservation to start sx_file_free_blocks() with: room for
 * SX_FILE_FREE_BATCH pieces freed directly, within half the log's largest
 * record, and never below sx_file_free_res().
 */
u32 sx_file_free_batch_res(const struct sx_mount *mp, const struct sx_inode *ip)
{
	u32 res = sx_file_free_res(mp, ip) + SX_FILE_FREE_BATCH * sx_file_free_piece_res(mp, ip);

	res = sx_min(res, sx_log_max_trans_bytes(mp) / 2);
	return sx_max(res, sx_file_free_res(mp, ip));
}

/*
 * Free the blocks of the piece @got just unmapped in @tp, directly while
 * the reservation covers a step and always leaving room for the intent of
 * the rest, which is queued if any is left (*@queued: the batch ends).
 */
static int sx_file_free_piece(struct sx_trans *tp, struct sx_inode *ip,
			      const struct sx_bmap_irec *got, u32 keep, bool *queued)
{
	struct sx_mount *mp = ip->i_mp;
	u64 bno = got->br_startblock, len = got->br_blockcount, done;
	int error;

	*queued = false;
	if (ip->i_flags & SX_DIFLAG_REFLINK) {
		while (len && sx_trans_space(tp) >= keep + sx_refcount_res_bytes(mp)) {
			error = sx_refcount_adjust(tp, bno, len, SX_CUI_DECREASE, 1, &done);
			if (error)
				return error;
			if (SX_IS_CORRUPT(mp, done == 0 || done > len))
				return -EFSCORRUPTED;
			bno += done;
			len -= done;
		}
		if (!len)
			return 0;
		*queued = true;
		return sx_refcount_decrease_later(tp, bno, len);
	}
	if (len <= sx_alloc_max_extent(mp) &&
	    sx_trans_space(tp) >= keep + sx_free_data_res_bytes(mp))
		return sx_free_data(tp, bno, len, SX_FREE_DATA_CANCELS);
	*queued = true;
	return sx_efi_free_later(tp, bno, len);
}

/*
 * Unmap and free every mapped block of file blocks [@fb, +@nb): a chain
 * of transactions, each unmapping as many pieces as its reservation
 * covers and, in the same transaction, freeing their blocks (or dropping
 * a reference to them, for a file that may share blocks).  Each
 * transaction is complete: a crash between two leaves the file with fewer
 * blocks and every block either mapped or freed.  A piece whose freeing
 * does not fit what is left of the reservation gets an intent (EFI or
 * CUI) beside its unmap, finished by the chain before the next batch, as
 * every piece got before: a piece of many refcount records, or a
 * transaction of only sx_file_free_res().  For a file of many small
 * extents (an update's clone) this is a few transactions instead of two
 * or three per extent.
 * The caller holds the ilock and a transaction of sx_file_free_res() at
 * least (sx_file_free_batch_res() to batch).
 */
int sx_file_free_blocks(struct sx_trans **tpp, struct sx_inode *ip, u64 fb, u64 nb)
{
	struct sx_mount *mp = ip->i_mp;
	u32 piece = sx_file_free_piece_res(mp, ip);
	/* room kept for the rest's intent and the inode, whatever is done */
	u32 keep = sx_file_free_res(mp, ip) - sx_bmap_res_bytes(mp, ip);
	struct sx_bmap_irec got;
	bool queued = false, hole = false;
	u32 n;
	int error;

	ASSERT(sx_mutex_is_held(&ip->i_ilock));
	if (nb == 0)
		return 0;
	while (!hole) {
		struct sx_buf *bp;

		/* the inode's block first, in each transaction of the chain */
		error = sx_inode_get_buf(mp, *tpp, ip, &bp);
		if (error)
			return error;
		/*
		 * then, for a file that may share blocks, the fsinfo block,
		 * before anything of the batch: its refcount steps lock it, and
		 * an unmap before them may already hold the allocator (a bmbt
		 * block split or freed), which comes after fsinfo in the lock
		 * order (fsinfo.h)
		 */
		if (ip->i_flags & SX_DIFLAG_REFLINK) {
			error = sx_fsinfo_get(*tpp, &bp);
			if (error)
				return error;
		}
		for (n = 0; !queued; n++) {
			/* the first piece always: the caller reserved for it */
			if (n && sx_trans_space(*tpp) < keep + piece)
				break;
			error = sx_bmap_unmap_one(*tpp, ip, fb, nb, &got);
			if (error)
				return error;
			if (got.br_startblock == SX_HOLE) {
				hole = true;
				break;
			}
			error = sx_file_free_piece(*tpp, ip, &got, keep, &queued);
			if (error)
				return error;
		}
		queued = false;
		if (n == 0)
			break;
		sx_file_touch(ip);
		error = sx_inode_log(*tpp, ip);
		if (!error)
			error = sx_defer_finish(tpp);
		if (!error && !hole)
			error = sx_trans_roll(tpp);
		if (error)
			return error;
	}
	return 0;
}

/* sx_file_free_blocks() in a chain of its own, for the data path. */
static int sx_io_free_blocks(struct sx_io *io, u64 fb, u64 nb)
{
	struct sx_mount *mp = io->io_mp;
	struct sx_inode *ip = io->io_ip;
	struct sx_bmap_irec got;
	struct sx_trans *tp;
	bool found;
	int error;

	if (nb == 0)
		return 0;
	/* nothing mapped there: no transaction at all */
	sx_ilock(ip, SX_ILOCK_EXCL);
	error = sx_bmap_next(NULL, ip, fb, &got, &found);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	/* (the mapping found may start before @fb: it contains it) */
	if (error || !found || (got.br_startoff > fb && got.br_startoff - fb >= nb))
		return error;
	error = sx_io_trans(io, sx_file_free_batch_res(mp, ip), 0, &tp);
	if (error)
		return error;
	error = sx_file_free_blocks(&tp, ip, fb, nb);
	if (error)
		goto out_cancel;
	return sx_io_commit(io, tp);
out_cancel:
	sx_io_cancel(io, tp);
	return error;
}

/*
 * Before the file grows from its size to @newsize: free whatever blocks a
 * crash left past the EOF block, and zero the EOF block's tail.
 */
static int sx_io_prepare_grow(struct sx_io *io, u64 newsize)
{
	u64 size = io->io_ip->i_size, first = sx_io_bup(io, size);
	int error;

	ASSERT(sx_rwsem_is_write_held(&io->io_ip->i_iolock));
	if (newsize <= size)
		return 0;
	error = sx_io_free_blocks(io, first, ~0ull - first);
	if (error)
		return error;
	if (size & (io->io_bsize - 1))
		return sx_io_zero(io, size, sx_io_bytes(io, first));
	return 0;
}

/* An sx_io for a caller outside the data path that already holds @ip (no buffer). */
static void sx_io_of_inode(struct sx_io *io, struct sx_inode *ip)
{
	io->io_mp = ip->i_mp;
	io->io_ip = ip;
	io->io_bsize = ip->i_mp->m_bsize;
	io->io_blog = ip->i_mp->m_blog;
	io->io_buf = NULL;
}

/*
 * sx_io_prepare_grow() for a caller outside the data path that is about to
 * grow the regular file @ip to @newsize (a clone past EOF); the caller
 * holds the iolock exclusive.
 */
int sx_file_prepare_grow(struct sx_inode *ip, u64 newsize)
{
	struct sx_mount *mp = ip->i_mp;
	struct sx_io io;
	int error;

	if (newsize <= ip->i_size)
		return 0;
	sx_io_of_inode(&io, ip);
	io.io_buf = sx_alloc(mp->m_bsize, 0);
	if (!io.io_buf)
		return -ENOMEM;
	error = sx_io_prepare_grow(&io, newsize);
	sx_free(io.io_buf);
	return error;
}

/*
 * Free whatever a crash left mapped past @ip's EOF block, for a caller
 * outside the data path holding the iolock exclusive (a swap, whose TO_EOF
 * ranges reach past EOF).  Nothing mapped there: no transaction.
 */
int sx_file_trim_eof(struct sx_inode *ip)
{
	struct sx_io io;
	u64 first;

	ASSERT(sx_rwsem_is_write_held(&ip->i_iolock));
	sx_io_of_inode(&io, ip);
	first = sx_io_bup(&io, ip->i_size);
	return sx_io_free_blocks(&io, first, ~0ull - first);
}

/* How sx_io_set_size() treats the size. */
enum sx_io_size {
	SX_IO_SIZE_KEEP,		/* only the change times */
	SX_IO_SIZE_SET,			/* set it to the value given */
	SX_IO_SIZE_GROW,		/* grow it to the value given */
};

/* Change the size (per @how) and the change times in one transaction. */
static int sx_io_set_size(struct sx_io *io, u64 size, enum sx_io_size how, u32 flags)
{
	struct sx_trans *tp;
	int error;

	error = sx_io_trans(io, sx_inode_res_bytes(io->io_mp), flags, &tp);
	if (error)
		return error;
	if (how == SX_IO_SIZE_SET)
		io->io_ip->i_size = size;
	else if (how == SX_IO_SIZE_GROW)
		sx_io_extend(io, size);
	sx_file_touch(io->io_ip);
	error = sx_inode_log(tp, io->io_ip);
	if (error) {
		sx_io_cancel(io, tp);
		return error;
	}
	return sx_io_commit(io, tp);
}

/*
 * Read up to @len bytes at @off of @io's file, whose iolock the caller
 * holds: holes and unwritten blocks read as zeroes.
 */
static s64 sx_io_read(struct sx_io *io, void *buf, u64 len, u64 off)
{
	struct sx_mount *mp = io->io_mp;
	struct sx_bmap_irec irec;
	u8 *dst = buf;
	u64 size, end, cur, stepend, boff, chunk, n, bno;
	int error = 0;

	size = sx_io_size(io);
	if (off >= size || len == 0) {
		cur = end = off;
		goto out;
	}
	end = off + sx_min(len, size - off);
	for (cur = off; cur < end; cur = stepend) {
		error = sx_io_lookup(io, cur >> io->io_blog, &irec);
		if (error)
			break;
		stepend = sx_min(end, sx_io_bytes(io, irec.br_startoff + irec.br_blockcount));
		if (irec.br_startblock == SX_HOLE || irec.br_state == SX_BMAP_UNWRITTEN) {
			memset(dst + (cur - off), 0, stepend - cur);
			continue;
		}
		bno = irec.br_startblock + ((cur >> io->io_blog) - irec.br_startoff);
		while (cur < stepend) {
			boff = cur & (io->io_bsize - 1);
			if (boff == 0 && stepend - cur >= io->io_bsize) {
				n = sx_min((stepend - cur) >> io->io_blog,
					   (u64)(SX_IO_MAX_BYTES >> io->io_blog));
				if (n == 0)
					n = 1;
				error = sx_file_read_data(mp, bno, (u32)n, dst + (cur - off));
				if (error)
					goto out;
				cur += n << io->io_blog;
				bno += n;
				continue;
			}
			chunk = sx_min(io->io_bsize - boff, stepend - cur);
			error = sx_file_read_data(mp, bno, 1, io->io_buf);
			if (error)
				goto out;
			memcpy(dst + (cur - off), io->io_buf + boff, chunk);
			cur += chunk;
			bno++;
		}
	}
out:
	if (error && cur == off)
		return error;
	return (s64)(cur - off);
}

/* Read up to @len bytes at @off: holes and unwritten blocks read as zeroes. */
SX_API s64 sx_pread(struct sx_mount *mp, int fd, void *buf, u64 len, u64 off)
{
	struct sx_io io;
	s64 ret;
	int error;

	error = sx_io_begin(mp, fd, &io);
	if (error)
		return error;
	sx_ilock(io.io_ip, SX_IOLOCK_SHARED);
	ret = sx_io_read(&io, buf, len, off);
	sx_iunlock(io.io_ip, SX_IOLOCK_SHARED);
	sx_io_end(&io);
	return ret;
}

/* sx_io_read() for a caller outside the data path that holds @ip's iolock. */
s64 sx_file_read(struct sx_inode *ip, void *buf, u64 len, u64 off)
{
	struct sx_io io;
	s64 ret;

	sx_io_of_inode(&io, ip);
	io.io_buf = sx_alloc(io.io_bsize, 0);
	if (!io.io_buf)
		return -ENOMEM;
	ret = sx_io_read(&io, buf, len, off);
	sx_free(io.io_buf);
	return ret;
}

/* Check a change of [@off, +@len) against the maximum file size. */
static int sx_io_check_range(u64 off, u64 len)
{
	if (off >= SX_MAX_FILE_SIZE || len > SX_MAX_FILE_SIZE - off)
		return -EFBIG;
	return 0;
}

/* Write @len bytes at @off: allocate into holes, overwrite, copy on write. */
SX_API s64 sx_pwrite(struct sx_mount *mp, int fd, const void *buf, u64 len, u64 off)
{
	struct sx_io io;
	u64 done = 0, end;
	int error, error2;

	error = sx_io_begin(mp, fd, &io);
	if (error)
		return error;
	/*
	 * An overwrite of the file's own written blocks goes to the device
	 * with no transaction, so the refusal every other change gets from
	 * sx_trans_alloc() must be made here.
	 */
	if (mp->m_flags & SX_MF_RDONLY) {
		sx_io_end(&io);
		return -EROFS;
	}
	sx_ilock(io.io_ip, SX_IOLOCK_EXCL);
	if (io.io_ip->i_flags & SX_DIFLAG_IMMUTABLE) {
		error = -EPERM;
		goto out_unlock;
	}
	if ((io.io_ip->i_flags & SX_DIFLAG_APPEND) && off != sx_io_size(&io)) {
		error = -EPERM;
		goto out_unlock;
	}
	if (len == 0)
		goto out_unlock;
	/* a write that starts below the limit and runs past it is cut short */
	if (off >= SX_MAX_FILE_SIZE) {
		error = -EFBIG;
		goto out_unlock;
	}
	len = sx_min(len, SX_MAX_FILE_SIZE - off);
	end = off + len;
	error = sx_io_prepare_grow(&io, end);
	if (!error)
		error = sx_io_write(&io, off, end, buf, false, &done);
	if (done) {
		/* what was written is the file's, whatever came after */
		error2 = sx_io_set_size(&io, off + done, SX_IO_SIZE_GROW, 0);
		if (error2 && !error)
			error = error2;
	}
out_unlock:
	sx_iunlock(io.io_ip, SX_IOLOCK_EXCL);
	sx_io_end(&io);
	/*
	 * A write that shut the mount down fails, as every call after it
	 * does: none of what it wrote can reach the disk any more.
	 */
	if (done && !(error && sx_is_shutdown(mp)))
		return (s64)done;
	return error;
}

/* Set the size; blocks past it are freed. */
SX_API int sx_truncate(struct sx_mount *mp, int fd, u64 size)
{
	struct sx_io io;
	u64 old;
	bool tail;
	int error;

	error = sx_io_begin(mp, fd, &io);
	if (error)
		return error;
	sx_ilock(io.io_ip, SX_IOLOCK_EXCL);
	if (io.io_ip->i_flags & (SX_DIFLAG_IMMUTABLE | SX_DIFLAG_APPEND)) {
		error = -EPERM;
		goto out_unlock;
	}
	if (size > SX_MAX_FILE_SIZE) {
		error = -EFBIG;
		goto out_unlock;
	}
	old = sx_io_size(&io);
	if (size > old) {
		error = sx_io_prepare_grow(&io, size);
		if (!error)
			error = sx_io_set_size(&io, size, SX_IO_SIZE_SET, 0);
		goto out_unlock;
	}
	/*
	 * Down: the new size first.  When the new EOF block keeps a tail to
	 * zero, the size is made durable before the tail is zeroed in place,
	 * so no crash can show the old size with the tail already gone.
	 */
	tail = (size & (io.io_bsize - 1)) && size < old;
	error = sx_io_set_size(&io, size, SX_IO_SIZE_SET, tail ? SX_TRANS_SYNC : 0);
	if (!error && tail)
		error = sx_io_zero(&io, size, sx_min(old, sx_io_bytes(&io, sx_io_bup(&io, size))));
	if (!error)
		error = sx_io_free_blocks(&io, sx_io_bup(&io, size), ~0ull - sx_io_bup(&io, size));
out_unlock:
	sx_iunlock(io.io_ip, SX_IOLOCK_EXCL);
	sx_io_end(&io);
	return error;
}

/* Count the blocks of holes in file blocks [@fb, @fend). */
static int sx_io_count_holes(struct sx_io *io, u64 fb, u64 fend, u64 *holes)
{
	struct sx_bmap_irec irec;
	bool found;
	int error = 0;

	*holes = 0;
	sx_ilock(io->io_ip, SX_ILOCK_EXCL);
	while (fb < fend) {
		error = sx_bmap_next(NULL, io->io_ip, fb, &irec, &found);
		if (error)
			break;
		if (!found || irec.br_startoff >= fend) {
			*holes += fend - fb;
			break;
		}
		if (irec.br_startoff > fb)
			*holes += irec.br_startoff - fb;
		fb = irec.br_startoff + irec.br_blockcount;
	}
	sx_iunlock(io->io_ip, SX_ILOCK_EXCL);
	return error;
}

/*
 * Map one run of unwritten blocks into the hole at file block @fb (which
 * runs @nb blocks at most); *@lenp says how many.
 */
static int sx_io_falloc_one(struct sx_io *io, u64 fb, u64 nb, u64 *lenp)
{
	struct sx_mount *mp = io->io_mp;
	struct sx_inode *ip = io->io_ip;
	struct sx_bmap_irec prev, map;
	struct sx_trans *tp;
	u64 hint = 0, bno;
	u32 len;
	int error;

	nb = sx_min(nb, (u64)sx_min(sx_alloc_max_extent(mp), SX_BMAP_MAXLEN));
	error = sx_io_trans(io, sx_bmap_res_bytes(mp, ip) + sx_alloc_res_bytes(mp) +
			    sx_inode_res_bytes(mp), 0, &tp);
	if (error)
		return error;
	if (fb > 0) {
		error = sx_bmap_lookup(tp, ip, fb - 1, &prev);
		if (error)
			goto out_cancel;
		if (prev.br_startblock != SX_HOLE)
			hint = prev.br_startblock + (fb - prev.br_startoff);
	}
	/* writes will put data into these blocks in place, with no allocation */
	error = sx_alloc_data_extent(tp, hint, 1, (u32)nb, &bno, &len);
	if (error)
		goto out_cancel;
	map.br_startoff = fb;
	map.br_startblock = bno;
	map.br_blockcount = len;
	map.br_state = SX_BMAP_UNWRITTEN;
	error = sx_bmap_map(tp, ip, &map);
	if (error)
		goto out_cancel;
	*lenp = len;
	return sx_io_commit(io, tp);
out_cancel:
	sx_io_cancel(io, tp);
	return error;
}

/*
 * Allocate unwritten blocks for the holes of [@off, +@len) and grow the
 * size to cover it.  Space is counted first, so a request that cannot fit
 * fails before anything is allocated; if it still runs out, what was
 * allocated stays (unwritten blocks read as the hole did) and the size
 * does not change.
 */
SX_API int sx_fallocate(struct sx_mount *mp, int fd, u64 off, u64 len)
{
	struct sx_bmap_irec irec;
	struct sx_io io;
	u64 fb, fend, holes, n, step;
	int error;

	error = sx_io_begin(mp, fd, &io);
	if (error)
		return error;
	sx_ilock(io.io_ip, SX_IOLOCK_EXCL);
	if (io.io_ip->i_flags & SX_DIFLAG_IMMUTABLE) {
		error = -EPERM;
		goto out_unlock;
	}
	if (len == 0) {
		error = -EINVAL;
		goto out_unlock;
	}
	error = sx_io_check_range(off, len);
	if (error)
		goto out_unlock;
	fb = off >> io.io_blog;
	fend = sx_io_bup(&io, off + len);
	error = sx_io_count_holes(&io, fb, fend, &holes);
	if (error)
		goto out_unlock;
	if (holes > sx_alloc_free_blocks(mp)) {
		error = -ENOSPC;
		goto out_unlock;
	}
	error = sx_io_prepare_grow(&io, off + len);
	if (error)
		goto out_unlock;
	while (fb < fend) {
		error = sx_io_lookup(&io, fb, &irec);
		if (error)
			goto out_unlock;
		n = sx_min(fend, irec.br_startoff + irec.br_blockcount) - fb;
		if (irec.br_startblock != SX_HOLE) {
			fb += n;
			continue;
		}
		error = sx_io_falloc_one(&io, fb, n, &step);
		if (sx_log_home_data(mp, &error))
			error = sx_io_falloc_one(&io, fb, n, &step);
		if (error)
			goto out_unlock;
		fb += step;
	}
	error = sx_io_set_size(&io, off + len, SX_IO_SIZE_GROW, 0);
out_unlock:
	sx_iunlock(io.io_ip, SX_IOLOCK_EXCL);
	sx_io_end(&io);
	return error;
}

/* Free the whole blocks of [@off, +@len) and zero the partial ends. */
SX_API int sx_punch(struct sx_mount *mp, int fd, u64 off, u64 len)
{
	struct sx_io io;
	u64 end, size, zend, fb, fend;
	int error;

	error = sx_io_begin(mp, fd, &io);
	if (error)
		return error;
	sx_ilock(io.io_ip, SX_IOLOCK_EXCL);
	if (io.io_ip->i_flags & (SX_DIFLAG_IMMUTABLE | SX_DIFLAG_APPEND)) {
		error = -EPERM;
		goto out_unlock;
	}
	if (len == 0) {
		error = -EINVAL;
		goto out_unlock;
	}
	if (off + len < off) {
		error = -EINVAL;
		goto out_unlock;
	}
	end = sx_min(off + len, SX_MAX_FILE_SIZE);
	size = sx_io_size(&io);
	fb = sx_io_bup(&io, off);
	fend = end >> io.io_blog;
	/* the partial ends, as far as they lie inside the file */
	if (fb > fend) {
		/* inside one block */
		error = sx_io_zero(&io, off, sx_min(end, size));
	} else {
		zend = sx_min(sx_io_bytes(&io, fb), size);
		if (off < zend)
			error = sx_io_zero(&io, off, zend);
		if (!error && sx_io_bytes(&io, fend) < sx_min(end, size))
			error = sx_io_zero(&io, sx_io_bytes(&io, fend), sx_min(end, size));
		if (!error)
			error = sx_io_free_blocks(&io, fb, fend - fb);
	}
	if (!error)
		error = sx_io_set_size(&io, 0, SX_IO_SIZE_KEEP, 0);
out_unlock:
	sx_iunlock(io.io_ip, SX_IOLOCK_EXCL);
	sx_io_end(&io);
	return error;
}

/*
 * Make the file's data and metadata durable: the log as far as the file's
 * last change (a force flushes data written in place before any record),
 * or, when that is durable already, only the data written in place since
 * the last flush.  Changes of other files that came later are not waited
 * for, and a force another thread runs meanwhile serves this call too.
 */
SX_API int sx_fsync(struct sx_mount *mp, int fd)
{
	struct sx_inode *ip;
	int error;

	if (sx_is_shutdown(mp))
		return -EIO;
	error = sx_fd_get(mp, fd, &ip);
	if (error)
		return error;
	if (mp->m_flags & SX_MF_RDONLY)
		error = 0;
	else
		error = sx_log_force_seq(mp, sx_inode_sync_seq(ip), true);
	sx_irele(ip);
	return error;
}

/*
 * Report the mapping @irec, split where its blocks go from shared to not;
 * *@n counts what was (or would be) reported.
 */
static int sx_io_fiemap_one(struct sx_io *io, const struct sx_bmap_irec *irec,
			    struct sx_extent *ext, u32 max, u32 *n)
{
	u64 bno = irec->br_startblock, left = irec->br_blockcount, off = irec->br_startoff;
	u64 sbno, slen, run;
	u32 flags;
	int error;

	while (left) {
		flags = irec->br_state == SX_BMAP_UNWRITTEN ? SX_EXTENT_UNWRITTEN : 0;
		run = left;
		if (io->io_ip->i_flags & SX_DIFLAG_REFLINK) {
			error = sx_refcount_find_shared(io->io_mp, NULL, bno, left, &sbno, &slen);
			if (error)
				return error;
			if (slen && sbno == bno) {
				flags |= SX_EXTENT_SHARED;
				run = slen;
			} else if (slen) {
				run = sbno - bno;
			}
		}
		if (max && *n >= max)
			return 0;
		if (max) {
			ext[*n].ex_off = sx_io_bytes(io, off);
			ext[*n].ex_len = sx_io_bytes(io, run);
			ext[*n].ex_physical = sx_io_bytes(io, bno);
			ext[*n].ex_flags = flags;
			ext[*n].ex_pad = 0;
		}
		(*n)++;
		off += run;
		bno += run;
		left -= run;
	}
	return 0;
}

/*
 * The mappings that overlap [@off, +@len), whole; with @max 0 only their
 * number.
 */
SX_API int sx_fiemap(struct sx_mount *mp, int fd, u64 off, u64 len, struct sx_extent *ext,
		     u32 max, u32 *n)
{
	struct sx_bmap_irec irec;
	struct sx_io io;
	u64 fb, fend;
	bool found;
	int error;

	*n = 0;
	error = sx_io_begin(mp, fd, &io);
	if (error)
		return error;
	if (len == 0)
		goto out;
	fb = off >> io.io_blog;
	fend = off + len < off ? ~0ull : sx_io_bup(&io, off + len);
	sx_ilock(io.io_ip, SX_IOLOCK_SHARED);
	while (fb < fend && (!max || *n < max)) {
		sx_ilock(io.io_ip, SX_ILOCK_EXCL);
		error = sx_bmap_next(NULL, io.io_ip, fb, &irec, &found);
		sx_iunlock(io.io_ip, SX_ILOCK_EXCL);
		if (error || !found || irec.br_startoff >= fend)
			break;
		error = sx_io_fiemap_one(&io, &irec, ext, max, n);
		if (error)
			break;
		fb = irec.br_startoff + irec.br_blockcount;
	}
	sx_iunlock(io.io_ip, SX_IOLOCK_SHARED);
out:
	sx_io_end(&io);
	return error;
}
