// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Atomic writes (sx_atomic_write(), sx_atomic_writev()): any ranges of any
 * files, all old or all new after a crash, with no size or alignment limit.
 *
 * The new bytes go out of place: each file written gets a nameless twin
 * (a tmpfile), and every range is written into the twin at its own file
 * offset, after the old bytes of the range's partial first and last
 * blocks have been copied there (so each block of the twin that the swap
 * will move holds exactly what the file must show).  The ranges of one
 * file become runs of whole blocks (ranges that share or touch a block
 * merge; past the old EOF block every run merges into the last, whose gap
 * is holes in both files).  Then one transaction queues one atomic swap
 * (SXI) per run with sx_swap_core_queue(): the deferred-work manager logs
 * every intent of a transaction at its first roll (defer.c), so a single
 * commit promises all the swaps, and recovery finishes all of them or
 * none was started.  An SXI describes a range of any length with what is
 * left of it, so the first transaction is bounded by the number of runs,
 * not by their size.  The run that extends a file carries the final size
 * (SET_SIZES): the core raises the size as the blocks land, and the last
 * step sets it, so size and data change in the same chain.
 *
 * Why not a clone and sx_update: the clone shares every block of the file
 * and the swap walks the whole file; here only the written blocks are
 * new and only their runs are swapped.
 *
 * Locking.  The iolocks of the files written, exclusive, in inode-number
 * order, for the whole call: no writer, truncate, clone or swap can
 * change the old bytes copied into the twins, or the mappings swapped.
 * The twins are written through the ordinary data path (it takes and
 * drops their iolocks), then their iolocks are taken too (nobody else
 * knows them).  The swap host (swap_host.c) expects its inodes paired and
 * their ilocks held across the chain's rolls: after the transaction is
 * allocated, every ilock is taken in inode-number order and each file is
 * paired with its twin, so the host's join finds them held.
 *
 * Durability: the twins' blocks are new, so their data goes into the
 * pending data manifest (log_manifest.c), and the force that makes the
 * swap durable writes it with the records and flushes once.  Unless
 * SX_ATOMIC_NOSYNC, the call returns once the log is durable up to its
 * commit: a force another thread runs meanwhile serves it, so concurrent
 * writers share forces (sx_log_force_seq()).  The twins are
 * closed at the end: their last close frees the old blocks they now hold;
 * a crash before that leaves them on the unlinked list, which recovery
 * frees.
 */
#include "util.h"
#include "file.h"
#include "file_io.h"
#include "inode.h"
#include "bmap.h"
#include "trans.h"
#include "defer.h"
#include "log.h"
#include "mount.h"
#include "dev.h"
#include "swap_host.h"
#include "file_atomic.h"
#include <swapext/swapext.h>

/* Mode of a twin: it never gets a name. */
#define SX_AW_TWIN_MODE		(SX_IFREG | 0600)

/* Whether the file @ip may be written atomically: the swap's errnos. */
static int sx_aw_check_flags(const struct sx_inode *ip)
{
	if (ip->i_flags & (SX_DIFLAG_IMMUTABLE | SX_DIFLAG_APPEND))
		return -EPERM;
	if (ip->i_flags & SX_DIFLAG_SWAPFILE)
		return -ETXTBSY;
	return 0;
}

/* Check one range's numbers (its descriptor comes later). */
static int sx_aw_check_iov(const struct sx_atomic_iov *v)
{
	if (v->ai_len == 0)
		return 0;
	if (!v->ai_buf || v->ai_off + v->ai_len < v->ai_off)
		return -EINVAL;
	if (v->ai_off >= SX_MAX_FILE_SIZE || v->ai_len > SX_MAX_FILE_SIZE - v->ai_off)
		return -EFBIG;
	return 0;
}

/* The file of descriptor @fd, added to the call's files if new; its index. */
static int sx_aw_add_file(struct sx_aw *aw, int fd, u32 *idx)
{
	struct sx_inode *ip;
	u32 i;
	int error;

	error = sx_fd_get(aw->a_mp, fd, &ip);
	if (error)
		return error;
	if ((ip->i_mode & SX_IFMT) == SX_IFDIR) {
		sx_irele(ip);
		return -EISDIR;
	}
	if ((ip->i_mode & SX_IFMT) != SX_IFREG) {
		sx_irele(ip);
		return -EINVAL;
	}
	for (i = 0; i < aw->a_nfiles; i++) {
		if (aw->a_files[i].f_ip == ip) {
			sx_irele(ip);
			*idx = i;
			return 0;
		}
	}
	aw->a_files[i].f_ip = ip;
	aw->a_files[i].f_tip = NULL;
	aw->a_files[i].f_tfd = -1;
	aw->a_nfiles++;
	*idx = i;
	return 0;
}

/* Sort the ranges by file, then offset (insertion sort: at most 64). */
static void sx_aw_sort_ranges(struct sx_aw *aw)
{
	u32 i, j;

	for (i = 1; i < aw->a_nranges; i++) {
		struct sx_aw_range r = aw->a_ranges[i];

		for (j = i; j > 0; j--) {
			const struct sx_aw_range *p = &aw->a_ranges[j - 1];

			if (p->r_file < r.r_file || (p->r_file == r.r_file && p->r_off <= r.r_off))
				break;
			aw->a_ranges[j] = *p;
		}
		aw->a_ranges[j] = r;
	}
}

/* Sort the inodes to lock by inode number. */
static void sx_aw_sort_locks(struct sx_aw *aw)
{
	u32 i, j;

	for (i = 1; i < aw->a_nlock; i++) {
		struct sx_inode *ip = aw->a_lock[i];

		for (j = i; j > 0 && aw->a_lock[j - 1]->i_ino > ip->i_ino; j--)
			aw->a_lock[j] = aw->a_lock[j - 1];
		aw->a_lock[j] = ip;
	}
}

/* True if @ip is one of the twins of @aw. */
static bool sx_aw_is_twin(const struct sx_aw *aw, const struct sx_inode *ip)
{
	u32 k;

	for (k = 0; k < aw->a_nfiles; k++)
		if (aw->a_files[k].f_tip == ip)
			return true;
	return false;
}

/* Take (@lock) or drop the lock @mode of the files, or of the twins. */
static void sx_aw_lock(struct sx_aw *aw, bool twins, u32 mode, bool lock)
{
	u32 i;

	for (i = 0; i < aw->a_nlock; i++) {
		struct sx_inode *ip = aw->a_lock[i];

		if (sx_aw_is_twin(aw, ip) != twins)
			continue;
		if (lock)
			sx_ilock(ip, mode);
		else
			sx_iunlock(ip, mode);
	}
}

/* Take every ilock in inode-number order and pair each file with its twin. */
static void sx_aw_join(struct sx_aw *aw)
{
	u32 i;

	for (i = 0; i < aw->a_nlock; i++) {
		sx_ilock(aw->a_lock[i], SX_ILOCK_EXCL);
		aw->a_lock[i]->i_swap_ilocked = true;
	}
	for (i = 0; i < aw->a_nfiles; i++) {
		struct sx_aw_file *f = &aw->a_files[i];

		f->f_ip->i_swap_peer = f->f_tip;
		f->f_tip->i_swap_peer = f->f_ip;
	}
}

/* Undo sx_aw_join(). */
static void sx_aw_unjoin(struct sx_aw *aw)
{
	u32 i;

	for (i = 0; i < aw->a_nfiles; i++) {
		aw->a_files[i].f_ip->i_swap_peer = NULL;
		aw->a_files[i].f_tip->i_swap_peer = NULL;
	}
	for (i = aw->a_nlock; i > 0; i--) {
		aw->a_lock[i - 1]->i_swap_ilocked = false;
		sx_iunlock(aw->a_lock[i - 1], SX_ILOCK_EXCL);
	}
}

/* Write @len bytes of @buf at @off of twin @f, all of them. */
static int sx_aw_put(struct sx_aw *aw, struct sx_aw_file *f, const void *buf, u64 len, u64 off)
{
	const u8 *p = buf;

	/* a write cut short by an error returns what it wrote: go on for the error */
	while (len) {
		s64 n = sx_pwrite(aw->a_mp, f->f_tfd, p, len, off);

		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO;
		p += n;
		off += (u64)n;
		len -= (u64)n;
	}
	return 0;
}

/* Read the old bytes of file block @fb of @f up to its old EOF into @buf. */
int sx_aw_copy_old(struct sx_aw *aw, struct sx_aw_file *f, u64 fb, u8 *buf)
{
	u64 bs = aw->a_mp->m_bsize, pos = fb * bs, len;
	s64 n;

	if (pos >= f->f_oldsize)
		return 0;
	len = sx_min(bs, f->f_oldsize - pos);
	n = sx_file_read(f->f_ip, buf, len, pos);
	if (n < 0)
		return (int)n;
	if ((u64)n != len)
		return -EIO;
	return 0;
}

/*
 * Copy into the twin the old bytes of file block @fb of @f (up to the old
 * EOF), for a range that covers only part of the block.
 */
static int sx_aw_twin_copy_old(struct sx_aw *aw, struct sx_aw_file *f, u64 fb)
{
	u64 bs = aw->a_mp->m_bsize, pos = fb * bs;
	int error;

	if (pos >= f->f_oldsize)
		return 0;
	error = sx_aw_copy_old(aw, f, fb, aw->a_blk);
	if (error)
		return error;
	return sx_aw_put(aw, f, aw->a_blk, sx_min(bs, f->f_oldsize - pos), pos);
}

/*
 * Fill every twin: first the old bytes of each range's partial blocks
 * (all of them before any new byte, since two ranges may share a block),
 * then the new bytes.
 */
static int sx_aw_fill(struct sx_aw *aw)
{
	u64 bs = aw->a_mp->m_bsize;
	u32 i;
	int error;

	for (i = 0; i < aw->a_nranges; i++) {
		const struct sx_aw_range *r = &aw->a_ranges[i];
		struct sx_aw_file *f = &aw->a_files[r->r_file];
		u64 end = r->r_off + r->r_len;

		if (r->r_off % bs) {
			error = sx_aw_twin_copy_old(aw, f, r->r_off / bs);
			if (error)
				return error;
		}
		/* the last block, unless it is the first one, copied already */
		if (end % bs && !((r->r_off % bs) && end / bs == r->r_off / bs)) {
			error = sx_aw_twin_copy_old(aw, f, end / bs);
			if (error)
				return error;
		}
	}
	for (i = 0; i < aw->a_nranges; i++) {
		const struct sx_aw_range *r = &aw->a_ranges[i];

		error = sx_aw_put(aw, &aw->a_files[r->r_file], aw->a_iov[r->r_iov].ai_buf,
				  r->r_len, r->r_off);
		if (error)
			return error;
	}
	return 0;
}

/*
 * The runs of whole blocks to swap, one SXI each: the ranges of a file
 * merged where their blocks meet, and everything past the old EOF block
 * merged into the last run, which sets the sizes when the file grows.
 */
static void sx_aw_runs(struct sx_aw *aw)
{
	u64 bs = aw->a_mp->m_bsize;
	struct sx_hswap *cur = NULL;
	u32 i, curfile = 0;

	aw->a_nsw = 0;
	for (i = 0; i < aw->a_nranges; i++) {
		const struct sx_aw_range *r = &aw->a_ranges[i];
		struct sx_aw_file *f = &aw->a_files[r->r_file];
		u64 b0 = r->r_off / bs, b1 = sx_howmany(r->r_off + r->r_len, bs);
		u64 eofblk = sx_howmany(f->f_oldsize, bs);

		if (cur && curfile == r->r_file &&
		    (b0 <= cur->hw_startoff1 + cur->hw_blockcount ||
		     cur->hw_startoff1 + cur->hw_blockcount >= eofblk)) {
			cur->hw_blockcount = sx_max(cur->hw_blockcount, b1 - cur->hw_startoff1);
			continue;
		}
		cur = &aw->a_sw[aw->a_nsw++];
		curfile = r->r_file;
		cur->hw_ip1 = &f->f_tip->i_hinode;
		cur->hw_ip2 = &f->f_ip->i_hinode;
		cur->hw_startoff1 = b0;
		cur->hw_startoff2 = b0;
		cur->hw_blockcount = b1 - b0;
		cur->hw_isize1 = -1;
		cur->hw_isize2 = -1;
	}
	/* the last run of a growing file sets both sizes */
	for (i = 0; i < aw->a_nsw; i++) {
		struct sx_hswap *sw = &aw->a_sw[i];
		struct sx_inode *ip = sx_container_of(sw->hw_ip2, struct sx_inode, i_hinode);
		struct sx_inode *tip = sx_container_of(sw->hw_ip1, struct sx_inode, i_hinode);
		u32 k;

		if (i + 1 < aw->a_nsw && aw->a_sw[i + 1].hw_ip2 == sw->hw_ip2)
			continue;
		for (k = 0; k < aw->a_nfiles; k++) {
			const struct sx_aw_file *f = &aw->a_files[k];

			if (f->f_ip == ip && f->f_newsize > f->f_oldsize) {
				sw->hw_isize2 = (s64)f->f_newsize;
				sw->hw_isize1 = (s64)tip->i_size;
			}
		}
	}
}

/*
 * Log bytes of the first transaction: a chain's step, and for each run its
 * intent and both inode cores (touch, reflink flag).
 */
static u32 sx_aw_res(const struct sx_aw *aw)
{
	const struct sx_mount *mp = aw->a_mp;

	return sx_swap_host_queue_res(mp) +
	       aw->a_nsw * (sx_trans_op_bytes(sizeof(struct sx_dlog_intent) +
					      sizeof(struct sx_dlog_swapext)) +
			    2 * sx_inode_res_bytes(mp));
}

/* ------------------------------------------------- one transaction, no intents */

/* Pieces the fast path may remap in one transaction (four fork calls each). */
#define SX_AW_FAST_PIECES	16

/*
 * The mapping of @ip at file block @off, trimmed to at most @len blocks
 * (holes too); @tp NULL for a lookup outside a transaction.
 */
static int sx_aw_piece(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
		       struct sx_bmap_irec *p)
{
	struct sx_bmap_irec irec;
	bool lock = !tp && !ip->i_swap_ilocked;
	int error;

	if (lock)
		sx_ilock(ip, SX_ILOCK_EXCL);
	error = sx_bmap_lookup(tp, ip, off, &irec);
	if (lock)
		sx_iunlock(ip, SX_ILOCK_EXCL);
	if (error)
		return error;
	if (SX_IS_CORRUPT(ip->i_mp, irec.br_startoff > off ||
			  irec.br_startoff + irec.br_blockcount <= off))
		return -EFSCORRUPTED;
	p->br_startoff = off;
	p->br_blockcount = (u32)sx_min(irec.br_startoff + irec.br_blockcount - off, len);
	p->br_state = irec.br_state;
	p->br_startblock = irec.br_startblock;
	if (irec.br_startblock != SX_HOLE)
		p->br_startblock += off - irec.br_startoff;
	return 0;
}

/* The next pair of pieces of file @ip and twin @tip at @off, of one length. */
static int sx_aw_pair(struct sx_trans *tp, struct sx_inode *ip, struct sx_inode *tip, u64 off,
		      u64 len, struct sx_bmap_irec *p, struct sx_bmap_irec *tpc)
{
	int error;

	error = sx_aw_piece(tp, ip, off, len, p);
	if (!error)
		error = sx_aw_piece(tp, tip, off, p->br_blockcount, tpc);
	if (error)
		return error;
	p->br_blockcount = tpc->br_blockcount;
	return 0;
}

/* The inodes of run @sw. */
static void sx_aw_run_inodes(const struct sx_hswap *sw, struct sx_inode **ip,
			     struct sx_inode **tip)
{
	*tip = sx_container_of(sw->hw_ip1, struct sx_inode, i_hinode);
	*ip = sx_container_of(sw->hw_ip2, struct sx_inode, i_hinode);
}

/* Log bytes of one fork call on @ip once its fork has grown by @grow mappings. */
u32 sx_aw_call_res(const struct sx_inode *ip, u64 grow)
{
	struct sx_inode grown;

	/* only the fork's shape matters to the bound */
	memset(&grown, 0, sizeof(grown));
	grown.i_mode = ip->i_mode;
	grown.i_format = ip->i_format;
	grown.i_broot = ip->i_broot;
	grown.i_blevel = ip->i_blevel;
	grown.i_nrecs = ip->i_nrecs + grow;
	return sx_bmap_res_bytes(ip->i_mp, &grown);
}

/*
 * The log bytes of remapping every run in one transaction, or 0 if that
 * is too much for one: more than SX_AW_FAST_PIECES pieces, or more than
 * one record holds.  Each piece is at most two fork calls on the file and
 * two on its twin, each bounded as for a fork grown by two mappings for
 * every piece of the call.
 */
static u32 sx_aw_fast_res(struct sx_aw *aw)
{
	struct sx_mount *mp = aw->a_mp;
	u64 pieces = 0, res = 0;
	u32 i, k;
	int error;

	for (k = 0; k < aw->a_nfiles; k++)
		aw->a_files[k].f_pieces = 0;
	for (i = 0; i < aw->a_nsw; i++) {
		const struct sx_hswap *sw = &aw->a_sw[i];
		struct sx_inode *ip, *tip;
		u64 off = sw->hw_startoff1, end = off + sw->hw_blockcount;

		sx_aw_run_inodes(sw, &ip, &tip);
		for (k = 0; aw->a_files[k].f_ip != ip; k++)
			;
		while (off < end) {
			struct sx_bmap_irec p, tp;

			error = sx_aw_pair(NULL, ip, tip, off, end - off, &p, &tp);
			if (error)
				return 0;
			if (p.br_startblock != tp.br_startblock) {
				pieces++;
				aw->a_files[k].f_pieces++;
			}
			off += p.br_blockcount;
			if (pieces > SX_AW_FAST_PIECES)
				return 0;
		}
	}
	for (k = 0; k < aw->a_nfiles; k++) {
		const struct sx_aw_file *f = &aw->a_files[k];
		u64 grow = 2 * f->f_pieces;

		res += 2 * f->f_pieces * ((u64)sx_aw_call_res(f->f_ip, grow) +
					  sx_aw_call_res(f->f_tip, grow));
	}
	res += (u64)aw->a_nlock * sx_inode_res_bytes(mp);
	if (res > sx_log_max_trans_bytes(mp))
		return 0;
	return (u32)res;
}

/*
 * Unmap [@off, +@len) of @from, which the lookup found at block @want, and
 * move its count to @to, which takes the blocks in the same transaction.
 */
static int sx_aw_unmap(struct sx_trans *tp, struct sx_inode *from, struct sx_inode *to,
		       u64 off, u64 len, u64 want)
{
	struct sx_bmap_irec got;
	int error;

	error = sx_bmap_unmap_one_nocharge(tp, from, off, len, &got);
	if (!error && SX_IS_CORRUPT(from->i_mp, got.br_startblock != want ||
				    got.br_blockcount != len))
		error = -EFSCORRUPTED;
	if (error)
		return error;
	from->i_nblocks -= len;
	to->i_nblocks += len;
	return 0;
}

/* Remap run @sw in @tp: each differing piece of the file and the twin trade places. */
static int sx_aw_fast_run(struct sx_trans *tp, const struct sx_hswap *sw)
{
	struct sx_inode *ip, *tip;
	u64 off = sw->hw_startoff1, end = off + sw->hw_blockcount;
	int error;

	sx_aw_run_inodes(sw, &ip, &tip);
	while (off < end) {
		struct sx_bmap_irec p, t;
		u64 len;

		error = sx_aw_pair(tp, ip, tip, off, end - off, &p, &t);
		if (error)
			return error;
		len = p.br_blockcount;
		if (p.br_startblock == t.br_startblock) {
			off += len;
			continue;
		}
		if (p.br_startblock != SX_HOLE) {
			error = sx_aw_unmap(tp, ip, tip, off, len, p.br_startblock);
			if (error)
				return error;
		}
		if (t.br_startblock != SX_HOLE) {
			error = sx_aw_unmap(tp, tip, ip, off, len, t.br_startblock);
			if (!error)
				error = sx_bmap_map_nocharge(tp, ip, &t);
			if (error)
				return error;
		}
		if (p.br_startblock != SX_HOLE) {
			error = sx_bmap_map_nocharge(tp, tip, &p);
			if (error)
				return error;
		}
		off += len;
	}
	return 0;
}

/*
 * End @aw's transaction @tp: on @error (from @what) cancel it, shutting
 * the mount down if it is dirty (the in-core inodes changed with it and
 * cannot be put back); else commit it and, unless SX_ATOMIC_NOSYNC, wait
 * for the log durable up to it.
 */
static int sx_aw_end(struct sx_aw *aw, struct sx_trans *tp, int error, const char *what,
		     u32 flags)
{
	struct sx_mount *mp = aw->a_mp;

	if (error) {
		if (tp->t_flags & SX_TRANS_DIRTY)
			sx_force_shutdown(mp, error, "atomic write: %s failed (%d)", what, error);
		sx_trans_cancel(tp);
		sx_aw_unjoin(aw);
		return error;
	}
	error = sx_trans_commit(tp);
	sx_aw_unjoin(aw);
	if (!error && !(flags & SX_ATOMIC_NOSYNC))
		error = sx_log_force_seq(mp, sx_log_commit_seq(mp), false);
	return error;
}

/*
 * Remap every run in one transaction of @res bytes: small writes need no
 * intent, the transaction itself is all or nothing.  The inodes' blocks
 * are joined first (before any bitmap block: the lock order of inode.c);
 * the file takes its new size and times, and a twin that may now hold
 * shared blocks the reflink flag, in the same transaction.
 */
static int sx_aw_commit_fast(struct sx_aw *aw, u32 res, u32 flags)
{
	struct sx_mount *mp = aw->a_mp;
	struct sx_trans *tp;
	s64 now = (s64)sx_wall_ns();
	u32 i;
	int error;

	error = sx_trans_alloc(mp, res, 0, &tp);
	if (error)
		return error;
	sx_aw_join(aw);
	error = sx_aw_join_blocks(aw, tp);
	for (i = 0; i < aw->a_nsw && !error; i++)
		error = sx_aw_fast_run(tp, &aw->a_sw[i]);
	for (i = 0; i < aw->a_nfiles && !error; i++) {
		struct sx_aw_file *f = &aw->a_files[i];

		if (f->f_ip->i_flags & SX_DIFLAG_REFLINK)
			f->f_tip->i_flags |= SX_DIFLAG_REFLINK;
		error = sx_inode_log(tp, f->f_tip);
	}
	if (!error)
		error = sx_aw_set_files(aw, tp, now);
	return sx_aw_end(aw, tp, error, "remap", flags);
}

/* Join the blocks of every inode the call locked to @tp (before any bitmap block). */
int sx_aw_join_blocks(struct sx_aw *aw, struct sx_trans *tp)
{
	u32 i;
	int error = 0;

	for (i = 0; i < aw->a_nlock && !error; i++) {
		struct sx_buf *bp;

		error = sx_inode_get_buf(aw->a_mp, tp, aw->a_lock[i], &bp);
	}
	return error;
}

/* Give every file written its new size (if it grows) and times @now, logged in @tp. */
int sx_aw_set_files(struct sx_aw *aw, struct sx_trans *tp, s64 now)
{
	u32 i;
	int error = 0;

	for (i = 0; i < aw->a_nfiles && !error; i++) {
		struct sx_aw_file *f = &aw->a_files[i];

		if (f->f_newsize > f->f_ip->i_size)
			f->f_ip->i_size = f->f_newsize;
		f->f_ip->i_mtime = now;
		f->f_ip->i_ctime = now;
		error = sx_inode_log(tp, f->f_ip);
	}
	return error;
}

/* Queue every run's swap in one transaction and commit it (the chains run). */
static int sx_aw_commit(struct sx_aw *aw, u32 flags)
{
	struct sx_mount *mp = aw->a_mp;
	struct sx_trans *tp;
	int error;

	if (!(flags & SX_ATOMIC_CHAIN)) {
		u32 res = sx_aw_fast_res(aw);

		if (res)
			return sx_aw_commit_fast(aw, res, flags);
	}
	/* the intents of every run in one record: a small log may not hold them all */
	if (sx_aw_res(aw) > sx_log_max_trans_bytes(mp))
		return -E2BIG;
	error = sx_trans_alloc(mp, sx_aw_res(aw), 0, &tp);
	if (error)
		return error;
	sx_aw_join(aw);
	/* the core checks everything before it changes anything */
	error = sx_swap_core_queue((struct sx_htrans *)tp, aw->a_sw, aw->a_nsw);
	return sx_aw_end(aw, tp, error, "queueing the swaps", flags);
}

/* Make the twins and fill them; the files are locked. */
static int sx_aw_twins(struct sx_aw *aw)
{
	u32 i;
	int error;

	for (i = 0; i < aw->a_nfiles; i++) {
		struct sx_aw_file *f = &aw->a_files[i];

		error = sx_open_tmpfile(aw->a_mp, SX_AW_TWIN_MODE, &f->f_tfd);
		if (error) {
			f->f_tfd = -1;
			return error;
		}
		error = sx_fd_get(aw->a_mp, f->f_tfd, &f->f_tip);
		if (error)
			return error;
		aw->a_lock[aw->a_nlock++] = f->f_tip;
	}
	return sx_aw_fill(aw);
}

/*
 * Lock the files, check them as the swap would, and learn their sizes;
 * a file that grows loses first whatever a crash left past its EOF and
 * the old bytes of its EOF block's tail (as the data path does).
 */
static int sx_aw_lock_files(struct sx_aw *aw)
{
	u32 i;
	int error;

	for (i = 0; i < aw->a_nfiles; i++)
		aw->a_lock[aw->a_nlock++] = aw->a_files[i].f_ip;
	sx_aw_sort_locks(aw);
	sx_aw_lock(aw, false, SX_IOLOCK_EXCL, true);
	aw->a_iolocked = true;
	for (i = 0; i < aw->a_nfiles; i++) {
		struct sx_aw_file *f = &aw->a_files[i];

		sx_ilock(f->f_ip, SX_ILOCK_EXCL);
		error = sx_aw_check_flags(f->f_ip);
		f->f_oldsize = f->f_ip->i_size;
		sx_iunlock(f->f_ip, SX_ILOCK_EXCL);
		if (error)
			return error;
		f->f_newsize = f->f_oldsize;
	}
	for (i = 0; i < aw->a_nranges; i++) {
		const struct sx_aw_range *r = &aw->a_ranges[i];
		struct sx_aw_file *f = &aw->a_files[r->r_file];

		f->f_newsize = sx_max(f->f_newsize, r->r_off + r->r_len);
	}
	for (i = 0; i < aw->a_nfiles; i++) {
		struct sx_aw_file *f = &aw->a_files[i];

		error = sx_file_prepare_grow(f->f_ip, f->f_newsize);
		if (error)
			return error;
	}
	return 0;
}

/* Release everything of @aw: locks, twins (their last close frees them), memory. */
static int sx_aw_release(struct sx_aw *aw, int error)
{
	u32 i;
	int error2;

	if (aw->a_tiolocked)
		sx_aw_lock(aw, true, SX_IOLOCK_EXCL, false);
	if (aw->a_iolocked)
		sx_aw_lock(aw, false, SX_IOLOCK_EXCL, false);
	for (i = 0; aw->a_files && i < aw->a_nfiles; i++) {
		struct sx_aw_file *f = &aw->a_files[i];

		if (f->f_tip)
			sx_irele(f->f_tip);
		if (f->f_tfd >= 0) {
			error2 = sx_close(aw->a_mp, f->f_tfd);
			if (!error)
				error = error2;
		}
		sx_irele(f->f_ip);
	}
	sx_free(aw->a_files);
	sx_free(aw->a_ranges);
	sx_free(aw->a_sw);
	sx_free(aw->a_lock);
	sx_free(aw->a_blk);
	return error;
}

/* True if two ranges of one file overlap (they are sorted). */
static bool sx_aw_overlap(const struct sx_aw *aw)
{
	u32 i;

	for (i = 1; i < aw->a_nranges; i++) {
		const struct sx_aw_range *p = &aw->a_ranges[i - 1], *r = &aw->a_ranges[i];

		if (p->r_file == r->r_file && p->r_off + p->r_len > r->r_off)
			return true;
	}
	return false;
}

/* Allocate the call's tables for @n ranges. */
static int sx_aw_alloc(struct sx_aw *aw, u32 n)
{
	aw->a_files = sx_zalloc(n * sizeof(*aw->a_files), 0);
	aw->a_ranges = sx_zalloc(n * sizeof(*aw->a_ranges), 0);
	aw->a_sw = sx_zalloc(n * sizeof(*aw->a_sw), 0);
	aw->a_lock = sx_zalloc(2 * n * sizeof(*aw->a_lock), 0);
	aw->a_blk = sx_alloc(aw->a_mp->m_bsize, 0);
	if (!aw->a_files || !aw->a_ranges || !aw->a_sw || !aw->a_lock || !aw->a_blk)
		return -ENOMEM;
	return 0;
}

SX_API int sx_atomic_writev(struct sx_mount *mp, const struct sx_atomic_iov *iov, u32 n,
			    u32 flags)
{
	struct sx_aw aw;
	u32 i;
	int error;

	if (!mp || (flags & ~SX_ATOMIC_ALL_FLAGS) || n > SX_ATOMIC_IOV_MAX || (n && !iov))
		return -EINVAL;
	if (n == 0)
		return 0;
	if (sx_is_shutdown(mp))
		return -EIO;
	for (i = 0; i < n; i++) {
		error = sx_aw_check_iov(&iov[i]);
		if (error)
			return error;
	}
	memset(&aw, 0, sizeof(aw));
	aw.a_mp = mp;
	aw.a_iov = iov;
	aw.a_n = n;
	error = sx_aw_alloc(&aw, n);
	if (error)
		return sx_aw_release(&aw, error);

	/* every descriptor, also of an empty range */
	for (i = 0; i < n; i++) {
		u32 idx;

		error = sx_aw_add_file(&aw, iov[i].ai_fd, &idx);
		if (error)
			return sx_aw_release(&aw, error);
		if (iov[i].ai_len == 0)
			continue;
		aw.a_ranges[aw.a_nranges].r_file = idx;
		aw.a_ranges[aw.a_nranges].r_iov = i;
		aw.a_ranges[aw.a_nranges].r_off = iov[i].ai_off;
		aw.a_ranges[aw.a_nranges].r_len = iov[i].ai_len;
		aw.a_nranges++;
	}
	if (mp->m_flags & SX_MF_RDONLY)
		return sx_aw_release(&aw, -EROFS);
	if (!(mp->m_host.h_features & SX_HOST_ATOMIC_SWAP))
		return sx_aw_release(&aw, -EOPNOTSUPP);
	sx_aw_sort_ranges(&aw);
	if (sx_aw_overlap(&aw))
		return sx_aw_release(&aw, -EINVAL);

	error = sx_aw_lock_files(&aw);
	if (error || aw.a_nranges == 0)
		return sx_aw_release(&aw, error);
	error = sx_aw_direct(&aw, flags);
	if (error <= 0)
		return sx_aw_release(&aw, error);
	error = sx_aw_twins(&aw);
	if (error)
		return sx_aw_release(&aw, error);
	sx_aw_lock(&aw, true, SX_IOLOCK_EXCL, true);
	aw.a_tiolocked = true;
	sx_aw_sort_locks(&aw);
	sx_aw_runs(&aw);
	error = sx_aw_commit(&aw, flags);
	return sx_aw_release(&aw, error);
}

SX_API int sx_atomic_write(struct sx_mount *mp, int fd, const void *buf, u64 len, u64 off,
			   u32 flags)
{
	struct sx_atomic_iov v;

	memset(&v, 0, sizeof(v));
	v.ai_fd = fd;
	v.ai_buf = buf;
	v.ai_len = len;
	v.ai_off = off;
	return sx_atomic_writev(mp, &v, 1, flags);
}
