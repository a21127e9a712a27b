// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Atomic writes straight into new blocks: the common case of
 * sx_atomic_writev(), a few small ranges of files that share no blocks.
 *
 * The new bytes, with the old bytes of each range's partial first and last
 * blocks around them, are assembled in memory, one buffer per run of file
 * blocks the ranges touch.  One transaction then allocates new blocks for
 * every run, writes the runs into them, unmaps and frees the old blocks
 * and maps the new ones in their place, and sets the files' sizes and
 * times.  A crash leaves all of it or none: it is one transaction, and the
 * new blocks are either logged whole in it (up to SX_AWD_LOG_BYTES: data
 * and record are then one device write; buf.h) or written fresh, so that
 * the force that makes it durable lists them in its data manifest and data
 * and record share its one flush (log_manifest.c).  Against the twins
 * (file_atomic.c) this makes and frees no inode and maps no block twice:
 * one transaction instead of seven, and a record of a few hundred bytes.
 *
 * Blocks logged whole need not move: when every block of the runs is
 * written already, the transaction logs the files' own blocks with their
 * new contents, as an overwrite through the log does (file_io.c), and
 * allocates, unmaps and frees nothing (sx_awd_own()).  The record is the
 * only copy of the new bytes until a checkpoint writes them home, which a
 * block's buffer waits for until its record is durable, and recovery
 * replays the newest image of each block: so the old bytes stay home until
 * the new ones are safe in the log.  Not over a block written fresh since
 * the last force, though: that force's manifest will hold the fresh
 * bytes' checksum, and a checkpoint could put the new bytes home while
 * that force is still the last on the disk, which recovery would then
 * drop; such a write takes new blocks.  Not taking the allocator's block 0
 * matters with many writers: it is held from the allocation to the commit,
 * and eight writers' commits queued behind it (a commit 11.6 us, 3.4 of
 * them waiting for it, against 4 us and none).
 *
 * It declines (returns 1, nothing changed) and the twins take the call:
 *  - when SX_ATOMIC_TWIN or SX_ATOMIC_CHAIN asks for them;
 *  - for a file that may share blocks (the reflink flag): dropping its
 *    references to the old blocks is the refcount's deferred work, which
 *    the twin's release does;
 *  - past SX_AWD_BYTES of blocks in all (they are assembled in memory), or
 *    past SX_AWD_CALLS changes of the forks (old mapped pieces unmapped,
 *    new extents mapped): one transaction's reservation bounds them;
 *  - when free space is too fragmented to give the runs their blocks in
 *    that many extents: the allocations are cancelled (a cancel puts the
 *    bitmap blocks back, and the inode blocks, joined first, put the
 *    in-core inodes back) before anything else changed.
 *
 * Locking: the caller holds the files' iolocks exclusive (nobody changes
 * their bytes or mappings while the old bytes are read and the pieces
 * counted); the ilocks are taken in inode-number order once the
 * transaction is allocated, as the data path does.
 *
 * The new blocks come from sx_alloc_data_next(): never blocks whose free
 * is not durable yet (the data goes into them before the commit), and
 * from a rotor through free space rather than near the old blocks, which
 * stay in use until the commit: the writes of the threads that share a
 * force then lie side by side and reach the device in one I/O.
 */
#include "util.h"
#include "file.h"
#include "file_io.h"
#include "inode.h"
#include "bmap.h"
#include "alloc.h"
#include "trans.h"
#include "log.h"
#include "mount.h"
#include "file_atomic.h"
#include <swapext/swapext.h>

/* Fork changes one direct write may make: old pieces unmapped plus new extents. */
#define SX_AWD_CALLS	16
/* Bytes of blocks one direct write assembles in memory. */
#define SX_AWD_BYTES	(1u << 20)
/*
 * Bytes of blocks a direct write carries in its log record instead of
 * writing them in place first (SX_LB_DATA): then data and record are one
 * device write.  Small, since the blocks take log space and stay cached
 * until a checkpoint writes them home.
 */
#define SX_AWD_LOG_BYTES	(16u << 10)
/*
 * Blocks carried in records stay cached until a checkpoint writes them
 * home and the tail passes them (or a later write frees them and cancels
 * their images).  Past an eighth of the log's size in them, and at least
 * this many bytes, the write that adds more runs that checkpoint: memory
 * stays bounded and is used again (grown by a block a write, the cache grew
 * the heap by a system call and a page fault a write: 4,479 mprotect()
 * calls in 3,000 writes), and home takes them in a few large writes.  The
 * log holds every cached block's image anyway, so a larger log affords a
 * larger cache, in which more blocks are written over (and cancelled)
 * before any checkpoint writes them: with a 128 MiB log and eight threads
 * rewriting 1 MiB files each, device writes per update fell from 0.40 to
 * 0.19 against a fixed 2 MiB.
 */
#define SX_AWD_LOGGED_MIN	(2u << 20)

/* Blocks carried in records that may stay cached before a checkpoint. */
static u64 sx_awd_logged_max(const struct sx_mount *mp)
{
	return sx_max((u64)SX_AWD_LOGGED_MIN >> mp->m_blog, (u64)mp->m_sb.sb_logblocks / 8);
}

/* File blocks [r_fb, +r_nb) of one file, their new contents at r_data. */
struct sx_awd_run {
	u32		r_file;
	u64		r_fb;
	u64		r_nb;
	u8		*r_data;
};

/* New blocks [e_bno, +e_len) for file blocks from e_fb of run e_run. */
struct sx_awd_ext {
	u32		e_run;
	u32		e_len;
	u64		e_fb;
	u64		e_bno;
};

/* The state of one direct write. */
struct sx_awd {
	struct sx_aw		*d_aw;
	struct sx_awd_run	*d_runs;
	u32			d_nruns;
	u32			d_old;		/* old mapped pieces in the runs */
	u32			d_maxext;	/* new extents the reservation holds */
	u32			d_next;
	struct sx_awd_ext	d_ext[SX_AWD_CALLS];
	u8			*d_data;
	u64			d_bytes;
	bool			d_logged;	/* the new blocks go in the record */
	bool			d_ownable;	/* the runs' blocks may be logged where they are */
	bool			d_own;		/* and will be (sx_awd_own()) */
};

/* The runs of blocks the ranges touch: ranges of a file merge where their blocks meet. */
static void sx_awd_runs(struct sx_awd *d)
{
	struct sx_aw *aw = d->d_aw;
	u64 bs = aw->a_mp->m_bsize;
	struct sx_awd_run *cur = NULL;
	u32 i;

	d->d_nruns = 0;
	for (i = 0; i < aw->a_nranges; i++) {
		const struct sx_aw_range *r = &aw->a_ranges[i];
		u64 b0 = r->r_off / bs, b1 = sx_howmany(r->r_off + r->r_len, bs);

		if (cur && cur->r_file == r->r_file && b0 <= cur->r_fb + cur->r_nb) {
			cur->r_nb = sx_max(cur->r_nb, b1 - cur->r_fb);
			continue;
		}
		cur = &d->d_runs[d->d_nruns++];
		cur->r_file = r->r_file;
		cur->r_fb = b0;
		cur->r_nb = b1 - b0;
	}
}

/* Count the mapped pieces of run @r's old blocks, under the ilock: *@fits false if too many. */
static int sx_awd_count(struct sx_awd *d, struct sx_awd_run *r, bool *fits)
{
	struct sx_inode *ip = d->d_aw->a_files[r->r_file].f_ip;
	u64 off = r->r_fb, end = r->r_fb + r->r_nb;
	int error = 0;

	sx_ilock(ip, SX_ILOCK_EXCL);
	while (off < end) {
		struct sx_bmap_irec irec;

		error = sx_bmap_lookup(NULL, ip, off, &irec);
		if (error)
			break;
		if (SX_IS_CORRUPT(ip->i_mp, irec.br_startoff > off ||
				  irec.br_startoff + irec.br_blockcount <= off)) {
			error = -EFSCORRUPTED;
			break;
		}
		/*
		 * Logged where they are: written blocks only, and none whose
		 * fresh bytes the next force's manifest will list (the record
		 * would put other bytes home before a later force is on the
		 * disk).  This file's iolock keeps any block from becoming
		 * so meanwhile.
		 */
		if (irec.br_startblock == SX_HOLE || irec.br_state == SX_BMAP_UNWRITTEN)
			d->d_ownable = false;
		else if (d->d_ownable) {
			u64 skip = off - irec.br_startoff;
			u64 n = sx_min(end - off, irec.br_blockcount - skip);

			if (sx_log_data_pending(ip->i_mp, irec.br_startblock + skip, (u32)n))
				d->d_ownable = false;
		}
		if (irec.br_startblock != SX_HOLE && ++d->d_old + d->d_nruns > SX_AWD_CALLS) {
			*fits = false;
			break;
		}
		off = irec.br_startoff + irec.br_blockcount;
	}
	sx_iunlock(ip, SX_ILOCK_EXCL);
	return error;
}

/*
 * Whether the call can go direct: no twins asked for, no file that may
 * share blocks, and few enough bytes and pieces.  *@resp: the log bytes of
 * its transaction.
 */
static int sx_awd_check(struct sx_awd *d, u32 flags, u32 *resp, bool *fits)
{
	struct sx_aw *aw = d->d_aw;
	struct sx_mount *mp = aw->a_mp;
	u64 calls, callres = 0, res;
	u32 i;
	int error;

	*fits = false;
	if (flags & (SX_ATOMIC_TWIN | SX_ATOMIC_CHAIN))
		return 0;
	for (i = 0; i < aw->a_nfiles; i++) {
		struct sx_inode *ip = aw->a_files[i].f_ip;
		bool shared;

		sx_ilock(ip, SX_ILOCK_EXCL);
		shared = ip->i_flags & SX_DIFLAG_REFLINK;
		sx_iunlock(ip, SX_ILOCK_EXCL);
		if (shared)
			return 0;
	}
	d->d_bytes = 0;
	for (i = 0; i < d->d_nruns; i++)
		d->d_bytes += d->d_runs[i].r_nb << mp->m_blog;
	if (d->d_bytes > SX_AWD_BYTES)
		return 0;
	*fits = true;
	d->d_old = 0;
	d->d_ownable = true;
	for (i = 0; i < d->d_nruns && *fits; i++) {
		error = sx_awd_count(d, &d->d_runs[i], fits);
		if (error)
			return error;
	}
	if (!*fits)
		return 0;
	/* room for each run to come in a few pieces; more is fragmentation */
	d->d_maxext = sx_min(SX_AWD_CALLS - d->d_old, 2 * d->d_nruns + 2);
	/*
	 * Each call on a fork is bounded as for the largest fork of the call
	 * grown by one mapping a call (an unmap splits at most one, a map
	 * adds at most one), so that a fork that changes form or height
	 * halfway is paid for too.
	 */
	calls = d->d_old + d->d_maxext;
	for (i = 0; i < aw->a_nfiles; i++) {
		struct sx_inode *ip = aw->a_files[i].f_ip;

		sx_ilock(ip, SX_ILOCK_EXCL);
		callres = sx_max(callres, (u64)sx_aw_call_res(ip, calls));
		sx_iunlock(ip, SX_ILOCK_EXCL);
	}
	/* and a cancel for each old block whose image the log may still hold */
	res = calls * (callres + sx_alloc_res_bytes(mp)) +
	      (u64)aw->a_nfiles * sx_inode_res_bytes(mp) +
	      (d->d_bytes >> mp->m_blog) * sx_trans_stale_bytes();
	d->d_logged = d->d_bytes <= SX_AWD_LOG_BYTES && !(flags & SX_ATOMIC_INPLACE);
	d->d_own = d->d_logged && d->d_ownable && !(flags & SX_ATOMIC_REMAP);
	if (d->d_own) {
		/* the blocks and the inodes, nothing of the forks or the allocator */
		res = (d->d_bytes >> mp->m_blog) * sx_trans_buf_bytes(mp) +
		      (u64)aw->a_nfiles * sx_inode_res_bytes(mp);
		if (res > sx_log_max_trans_bytes(mp)) {
			*fits = false;
			return 0;
		}
		*resp = (u32)res;
		return 0;
	}
	if (d->d_logged)
		res += (d->d_bytes >> mp->m_blog) * sx_trans_buf_bytes(mp);
	if (res > sx_log_max_trans_bytes(mp)) {
		*fits = false;
		return 0;
	}
	*resp = (u32)res;
	return 0;
}

/*
 * The run that holds range @r, searched from run *@ri on (ranges and runs
 * are in the same order).
 */
static struct sx_awd_run *sx_awd_run_of(struct sx_awd *d, const struct sx_aw_range *r, u32 *ri)
{
	u64 b0 = r->r_off >> d->d_aw->a_mp->m_blog;

	while (d->d_runs[*ri].r_file != r->r_file ||
	       d->d_runs[*ri].r_fb + d->d_runs[*ri].r_nb <= b0)
		(*ri)++;
	return &d->d_runs[*ri];
}

/*
 * Assemble every run's new contents: first the old bytes of each range's
 * partial blocks (all of them before any new byte, since two ranges may
 * share a block; a range within one block reads it once), then the new
 * bytes.
 */
static int sx_awd_fill(struct sx_awd *d)
{
	struct sx_aw *aw = d->d_aw;
	u64 bs = aw->a_mp->m_bsize, at = 0;
	u32 i, ri = 0;
	int error;

	for (i = 0; i < d->d_nruns; i++) {
		d->d_runs[i].r_data = d->d_data + at;
		at += d->d_runs[i].r_nb * bs;
	}
	for (i = 0; i < aw->a_nranges; i++) {
		const struct sx_aw_range *r = &aw->a_ranges[i];
		const struct sx_awd_run *run = sx_awd_run_of(d, r, &ri);
		u64 ends[2] = { r->r_off, r->r_off + r->r_len };
		u32 k;

		for (k = 0; k < 2; k++) {
			u64 fb = ends[k] / bs;
			u8 *blk = run->r_data + (fb - run->r_fb) * bs;

			if (ends[k] % bs == 0 || (k == 1 && ends[0] % bs && fb == ends[0] / bs))
				continue;
			memset(blk, 0, bs);
			error = sx_aw_copy_old(aw, &aw->a_files[r->r_file], fb, blk);
			if (error)
				return error;
		}
	}
	for (i = 0, ri = 0; i < aw->a_nranges; i++) {
		const struct sx_aw_range *r = &aw->a_ranges[i];
		const struct sx_awd_run *run = sx_awd_run_of(d, r, &ri);

		memcpy(run->r_data + (r->r_off - run->r_fb * bs), aw->a_iov[r->r_iov].ai_buf,
		       r->r_len);
	}
	return 0;
}

/* Allocate new blocks for every run; 1 if they take more extents than reserved. */
static int sx_awd_alloc(struct sx_awd *d, struct sx_trans *tp)
{
	struct sx_mount *mp = tp->t_mp;
	u32 maxlen = sx_min(sx_alloc_max_extent(mp), SX_BMAP_MAXLEN);
	u32 i;
	int error;

	d->d_next = 0;
	for (i = 0; i < d->d_nruns; i++) {
		const struct sx_awd_run *r = &d->d_runs[i];
		u64 fb = r->r_fb, end = r->r_fb + r->r_nb;

		while (fb < end) {
			struct sx_awd_ext *e = &d->d_ext[d->d_next];
			u32 len;

			if (d->d_next == d->d_maxext)
				return 1;
			error = sx_alloc_data_next(tp, 1, (u32)sx_min(end - fb, maxlen), &e->e_bno,
						   &len);
			if (error)
				return error;
			e->e_run = i;
			e->e_fb = fb;
			e->e_len = len;
			d->d_next++;
			fb += len;
		}
	}
	return 0;
}

/*
 * Log block @bno whole, in @tp, with the contents at @src.  A block still
 * in the log (a cached data buffer) keeps its buffer as it is if @tp is
 * cancelled: only a buffer made here is new, to be dropped then.  No other
 * thread makes one meanwhile: a block the write puts its bytes in is one
 * of the files' it holds the iolocks of, or a new one.
 */
static int sx_awd_log_block(struct sx_trans *tp, u64 bno, const u8 *src)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_buf *bp;
	u64 hit;
	int error;

	if (sx_buf_range_data(mp, bno, 1, &hit))
		error = sx_trans_read_buf(tp, bno, &sx_data_buf_ops, 0, &bp);
	else
		error = sx_trans_get_buf(tp, bno, &sx_data_buf_ops, 0, &bp);
	if (error)
		return error;
	memcpy(bp->b_data, src, mp->m_bsize);
	return sx_trans_log_buf(tp, bp, 0, mp->m_bsize - 1);
}

/* Log the blocks of new extent @e whole, in @tp, with the contents at @src. */
static int sx_awd_log(struct sx_trans *tp, const struct sx_awd_ext *e, const u8 *src)
{
	u32 b;
	int error;

	for (b = 0; b < e->e_len; b++, src += tp->t_mp->m_bsize) {
		error = sx_awd_log_block(tp, e->e_bno + b, src);
		if (error)
			return error;
	}
	return 0;
}

/*
 * Put every new extent's contents into its blocks: in the record, or
 * written fresh in place (the manifest's).
 */
static int sx_awd_write(struct sx_awd *d, struct sx_trans *tp)
{
	struct sx_mount *mp = d->d_aw->a_mp;
	u32 i;
	int error;

	for (i = 0; i < d->d_next; i++) {
		const struct sx_awd_ext *e = &d->d_ext[i];
		const struct sx_awd_run *r = &d->d_runs[e->e_run];
		const u8 *src = r->r_data + ((e->e_fb - r->r_fb) << mp->m_blog);

		if (d->d_logged)
			error = sx_awd_log(tp, e, src);
		else
			error = sx_file_write_data(mp, e->e_bno, e->e_len, src, true);
		if (error)
			return error;
	}
	return 0;
}

/*
 * Log every run's blocks where they are, whole, with their new contents
 * (d_own).
 */
static int sx_awd_own(struct sx_awd *d, struct sx_trans *tp)
{
	struct sx_mount *mp = tp->t_mp;
	u32 i;
	int error;

	for (i = 0; i < d->d_nruns; i++) {
		const struct sx_awd_run *r = &d->d_runs[i];
		struct sx_inode *ip = d->d_aw->a_files[r->r_file].f_ip;
		u64 fb = r->r_fb, end = r->r_fb + r->r_nb;
		const u8 *src = r->r_data;

		while (fb < end) {
			struct sx_bmap_irec irec;
			u64 bno, stop;

			error = sx_bmap_lookup(tp, ip, fb, &irec);
			if (error)
				return error;
			/* the iolocks kept the forks as sx_awd_check() found them */
			if (SX_IS_CORRUPT(mp, irec.br_startblock == SX_HOLE ||
					  irec.br_state == SX_BMAP_UNWRITTEN ||
					  irec.br_startoff > fb))
				return -EFSCORRUPTED;
			bno = irec.br_startblock + (fb - irec.br_startoff);
			stop = sx_min(end, irec.br_startoff + irec.br_blockcount);
			for (; fb < stop; fb++, bno++, src += mp->m_bsize) {
				error = sx_awd_log_block(tp, bno, src);
				if (error)
					return error;
			}
		}
	}
	return 0;
}

/*
 * Put new extent @e in place of the file's old blocks there, which are
 * freed: in place of the mapping's record when one mapping covers it (a
 * rewrite of written blocks), else by unmapping every piece and mapping it.
 */
static int sx_awd_remap(struct sx_awd *d, struct sx_trans *tp, const struct sx_awd_ext *e)
{
	struct sx_inode *ip = d->d_aw->a_files[d->d_runs[e->e_run].r_file].f_ip;
	struct sx_bmap_irec got, map;
	int error;

	map.br_startoff = e->e_fb;
	map.br_startblock = e->e_bno;
	map.br_blockcount = e->e_len;
	map.br_state = 0;
	error = sx_bmap_replace_one(tp, ip, &map, &got);
	if (error)
		return error;
	if (got.br_startblock != SX_HOLE)
		return sx_free_data(tp, got.br_startblock, got.br_blockcount,
				    (u32)got.br_blockcount);
	for (;;) {
		error = sx_bmap_unmap_one(tp, ip, e->e_fb, e->e_len, &got);
		if (error)
			return error;
		if (got.br_startblock == SX_HOLE)
			break;
		/* the pieces freed are at most e_len blocks: their cancels are reserved */
		error = sx_free_data(tp, got.br_startblock, got.br_blockcount,
				     (u32)got.br_blockcount);
		if (error)
			return error;
	}
	return sx_bmap_map(tp, ip, &map);
}

/*
 * The transaction of the write: 0 when committed, 1 when the allocations
 * needed too many extents (cancelled), or an error (cancelled).
 */
static int sx_awd_commit(struct sx_awd *d, u32 res, u64 *seqp)
{
	struct sx_aw *aw = d->d_aw;
	struct sx_mount *mp = aw->a_mp;
	struct sx_trans *tp;
	s64 now = (s64)sx_wall_ns();
	u32 i;
	int error;

	error = sx_trans_alloc(mp, res, 0, &tp);
	if (error)
		return error;
	for (i = 0; i < aw->a_nlock; i++)
		sx_ilock(aw->a_lock[i], SX_ILOCK_EXCL);
	/* the inode blocks first (the lock order), and so a cancel restores the inodes */
	error = sx_aw_join_blocks(aw, tp);
	if (!error && d->d_own) {
		error = sx_awd_own(d, tp);
	} else {
		if (!error)
			error = sx_awd_alloc(d, tp);
		if (!error)
			error = sx_awd_write(d, tp);
		for (i = 0; i < d->d_next && !error; i++)
			error = sx_awd_remap(d, tp, &d->d_ext[i]);
	}
	if (!error)
		error = sx_aw_set_files(aw, tp, now);
	if (error)
		sx_trans_cancel(tp);
	else
		error = sx_trans_commit(tp);
	*seqp = 0;
	for (i = aw->a_nlock; i > 0; i--) {
		*seqp = sx_max(*seqp, sx_inode_sync_seq(aw->a_lock[i - 1]));
		sx_iunlock(aw->a_lock[i - 1], SX_ILOCK_EXCL);
	}
	return error;
}

int sx_aw_direct(struct sx_aw *aw, u32 flags)
{
	struct sx_mount *mp = aw->a_mp;
	struct sx_awd d;
	bool fits;
	u32 res = 0;
	u64 seq;
	int error;

	memset(&d, 0, sizeof(d));
	d.d_aw = aw;
	d.d_runs = sx_alloc(aw->a_nranges * sizeof(*d.d_runs), 0);
	if (!d.d_runs)
		return -ENOMEM;
	sx_awd_runs(&d);
	error = sx_awd_check(&d, flags, &res, &fits);
	if (error || !fits) {
		sx_free(d.d_runs);
		return error ? error : 1;
	}
	d.d_data = sx_alloc(d.d_bytes, 0);
	if (!d.d_data)
		error = -ENOMEM;
	if (!error)
		error = sx_awd_fill(&d);
	if (!error)
		error = sx_awd_commit(&d, res, &seq);
	if (sx_log_home_data(mp, &error)) {
		d.d_next = 0;
		error = sx_awd_commit(&d, res, &seq);
	}
	if (!error && !(flags & SX_ATOMIC_NOSYNC))
		error = sx_log_force_seq(mp, seq, false);
	/* the write is done: a failed checkpoint has shut the mount down, and says so */
	if (!error && d.d_logged && sx_bcache_data_count(mp) > sx_awd_logged_max(mp))
		(void)sx_log_checkpoint(mp);
	sx_free(d.d_data);
	sx_free(d.d_runs);
	return error;
}
