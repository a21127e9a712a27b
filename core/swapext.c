// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The swap core: the estimate, one step of a swap (finish_one) and the three
 * algorithms that drive it (the seed's xfs_swapext.c and xfs_swap_range).
 *
 * A swap walks both ranges together.  Each step reads the mapping at each
 * range's cursor, trims both to the shorter, and unless they are the same
 * blocks (two holes, or shared blocks) queues the unmap of both and the map
 * of each into the other file, moves the block counts with the blocks and
 * raises the sizes so that no mapping ever lies past EOF.  The last step sets
 * the final sizes (TO_EOF) and clears the reflink flags that the first
 * transaction decided to clear.  The atomic algorithm queues the walk as one
 * deferred item (the SXI chain: after a crash, recovery finishes it); the
 * non-atomic one runs the same steps in a plain chain of transactions; the
 * whole-fork swap asks the host to exchange both forks at once.
 */
#include "swap_core.h"

/* Block size of the inodes being swapped. */
static u32 sx_swapext_blksize(struct sx_hinode *ip)
{
	struct sx_hstat st;

	sx_hstat(ip, &st);
	return st.hs_blksize;
}

/*
 * True if the host changes the forks in each step's own transaction
 * (SX_HOST_DIRECT_MAP with all four of its operations).
 */
static bool sx_swapext_direct(const struct sx_hinode *ip)
{
	const struct sx_host *h = ip->hi_host;
	const struct sx_host_ops *ops = h->h_ops;

	return (h->h_features & SX_HOST_DIRECT_MAP) && ops->ho_read_mapping_tp &&
	       ops->ho_unmap_now && ops->ho_map_now && ops->ho_step_room;
}

/*
 * A walk's reader of one range: the mappings read ahead of the cursor and
 * not used yet.  A swap never changes a block ahead of its cursors (the
 * estimate relies on it too), so what was read there stays true while the
 * walk goes on, and a host that reads several mappings in one lookup
 * (ho_read_mappings) saves a lookup of its mapping structure per piece:
 * with 16 at a time, the store's swap of two files of 100,000 single-block
 * extents spent a quarter of its instructions reading them (callgrind:
 * 1,223M in all; 1,075M with 64, the store reading a leaf's records at
 * once).  The buffers are the heap's (too large for a kernel stack);
 * without memory a walk reads a few at a time into buffers of its own.
 */
#define SX_SWAPEXT_READAHEAD		64
#define SX_SWAPEXT_READAHEAD_NOMEM	4

struct sx_swapext_rcur {
	struct sx_hinode *rc_ip;
	u32	rc_i;			/* the first mapping not used up */
	u32	rc_n;			/* mappings read */
	u32	rc_max;			/* room in rc_maps */
	struct sx_hmap *rc_maps;
};

/* Both ranges' readers of one walk (the estimate, or one step). */
struct sx_swapext_walk {
	struct sx_swapext_rcur	w_rc1, w_rc2;
	struct sx_hmap		*w_buf;		/* the heap's, or NULL */
	struct sx_hmap		w_nomem[2][SX_SWAPEXT_READAHEAD_NOMEM];
};

static void sx_swapext_rcur_init(struct sx_swapext_rcur *rc, struct sx_hinode *ip,
				 struct sx_hmap *maps, u32 max)
{
	rc->rc_ip = ip;
	rc->rc_i = 0;
	rc->rc_n = 0;
	rc->rc_max = max;
	rc->rc_maps = maps;
}

static void sx_swapext_walk_init(struct sx_swapext_walk *w, const struct sx_swapext_intent *si)
{
	w->w_buf = NULL;
	/* a host without ho_read_mappings reads one mapping per lookup anyway */
	if (sx_hops(si->si_ip1)->ho_read_mappings)
		w->w_buf = sx_alloc(2 * SX_SWAPEXT_READAHEAD * sizeof(struct sx_hmap), SX_NOFS);
	if (w->w_buf) {
		sx_swapext_rcur_init(&w->w_rc1, si->si_ip1, w->w_buf, SX_SWAPEXT_READAHEAD);
		sx_swapext_rcur_init(&w->w_rc2, si->si_ip2, w->w_buf + SX_SWAPEXT_READAHEAD,
				     SX_SWAPEXT_READAHEAD);
	} else {
		sx_swapext_rcur_init(&w->w_rc1, si->si_ip1, w->w_nomem[0],
				     SX_SWAPEXT_READAHEAD_NOMEM);
		sx_swapext_rcur_init(&w->w_rc2, si->si_ip2, w->w_nomem[1],
				     SX_SWAPEXT_READAHEAD_NOMEM);
	}
}

/* Forget what @w read ahead, for a walk that starts elsewhere. */
static void sx_swapext_walk_rewind(struct sx_swapext_walk *w)
{
	w->w_rc1.rc_i = w->w_rc1.rc_n = 0;
	w->w_rc2.rc_i = w->w_rc2.rc_n = 0;
}

static void sx_swapext_walk_done(struct sx_swapext_walk *w)
{
	sx_free(w->w_buf);
}

/*
 * Read what @rc's inode maps from @off, where @avail blocks of the range
 * are left, through @tp (a direct step's transaction, whose changes may
 * hold the mapping blocks) or outside any (NULL), and check that the host
 * kept the contract: each mapping starts where the one before ends, the
 * first at @off, none is empty or past the range, and no hole is
 * unwritten.  Anything else would make the walk swap the wrong blocks.
 */
static int sx_swapext_rcur_fill(struct sx_htrans *tp, struct sx_swapext_rcur *rc, u64 off,
				u64 avail)
{
	struct sx_hinode *ip = rc->rc_ip;
	const struct sx_host_ops *ops = sx_hops(ip);
	int n, error;
	u32 i;

	rc->rc_i = 0;
	rc->rc_n = 0;
	memset(rc->rc_maps, 0, rc->rc_max * sizeof(*rc->rc_maps));
	if (ops->ho_read_mappings) {
		n = ops->ho_read_mappings(tp, ip, off, avail, rc->rc_maps, rc->rc_max);
		if (n < 0)
			return n;
		if (SX_CORE_CORRUPT(ip->hi_host, n == 0 || (u32)n > rc->rc_max))
			return -EFSCORRUPTED;
	} else {
		n = 1;
		if (tp)
			error = ops->ho_read_mapping_tp(tp, ip, off, avail, &rc->rc_maps[0]);
		else
			error = ops->ho_read_mapping(ip, off, avail, &rc->rc_maps[0]);
		if (error)
			return error;
	}
	for (i = 0; i < (u32)n; i++) {
		const struct sx_hmap *m = &rc->rc_maps[i];

		if (SX_CORE_CORRUPT(ip->hi_host, m->hm_startoff != off || m->hm_blockcount == 0 ||
				  m->hm_blockcount > avail ||
				  (!sx_hmap_is_mapped(m) && (m->hm_flags & SX_HMAP_UNWRITTEN))))
			return -EFSCORRUPTED;
		off += m->hm_blockcount;
		avail -= m->hm_blockcount;
	}
	rc->rc_n = (u32)n;
	return 0;
}

/*
 * The piece of @rc's range at @off (@avail blocks of the range left), at
 * most @len blocks; read if the walk has not read it yet.
 */
static int sx_swapext_rcur_get(struct sx_htrans *tp, struct sx_swapext_rcur *rc, u64 off,
			       u64 avail, u64 len, struct sx_hmap *m)
{
	int error;

	if (rc->rc_i >= rc->rc_n || rc->rc_maps[rc->rc_i].hm_startoff != off) {
		error = sx_swapext_rcur_fill(tp, rc, off, avail);
		if (error)
			return error;
	}
	*m = rc->rc_maps[rc->rc_i];
	m->hm_blockcount = sx_min(m->hm_blockcount, len);
	return 0;
}

/* The walk moved past @len blocks of @rc's first mapping. */
static void sx_swapext_rcur_use(struct sx_swapext_rcur *rc, u64 len)
{
	struct sx_hmap *m = &rc->rc_maps[rc->rc_i];

	m->hm_startoff += len;
	if (sx_hmap_is_mapped(m))
		m->hm_startblock += len;
	m->hm_blockcount -= len;
	if (m->hm_blockcount == 0)
		rc->rc_i++;
}

/*
 * Read the next pair of pieces of @si: both start at the cursors and have
 * the same length.  @tp: the direct step's transaction, or NULL.
 */
static int sx_swapext_read_pair(struct sx_htrans *tp, const struct sx_swapext_intent *si,
				struct sx_swapext_rcur *rc1, struct sx_swapext_rcur *rc2,
				struct sx_hmap *m1, struct sx_hmap *m2)
{
	int error;

	error = sx_swapext_rcur_get(tp, rc1, si->si_startoff1, si->si_blockcount,
				    si->si_blockcount, m1);
	if (error)
		return error;
	error = sx_swapext_rcur_get(tp, rc2, si->si_startoff2, si->si_blockcount,
				    m1->hm_blockcount, m2);
	if (error)
		return error;
	m1->hm_blockcount = m2->hm_blockcount;
	return 0;
}

/* Advance @si and its readers past @len blocks. */
static void sx_swapext_advance(struct sx_swapext_intent *si, struct sx_swapext_rcur *rc1,
			       struct sx_swapext_rcur *rc2, u64 len)
{
	si->si_startoff1 += len;
	si->si_startoff2 += len;
	si->si_blockcount -= len;
	sx_swapext_rcur_use(rc1, len);
	sx_swapext_rcur_use(rc2, len);
}

/*
 * Read the mapping at @off of @ip, at most @len blocks, checked as
 * sx_swapext_rcur_fill() checks it.
 */
static int sx_swapext_read(struct sx_hinode *ip, u64 off, u64 len, struct sx_hmap *m)
{
	int error;

	memset(m, 0, sizeof(*m));
	error = sx_hops(ip)->ho_read_mapping(ip, off, len, m);
	if (error)
		return error;
	if (SX_CORE_CORRUPT(ip->hi_host, m->hm_startoff != off || m->hm_blockcount == 0 ||
			  m->hm_blockcount > len ||
			  (!sx_hmap_is_mapped(m) && (m->hm_flags & SX_HMAP_UNWRITTEN))))
		return -EFSCORRUPTED;
	return 0;
}

/*
 * Two pieces on the same blocks are left alone: two holes, or blocks both
 * ranges share.  Two states for one block is corruption.
 */
static int sx_swapext_same(const struct sx_swapext_intent *si, const struct sx_hmap *m1,
			   const struct sx_hmap *m2, bool *same)
{
	*same = m1->hm_startblock == m2->hm_startblock;
	if (*same && SX_CORE_CORRUPT(si->si_ip1->hi_host, (m1->hm_flags & SX_HMAP_UNWRITTEN) !=
				   (m2->hm_flags & SX_HMAP_UNWRITTEN)))
		return -EFSCORRUPTED;
	return 0;
}

/* True if @ip maps anything at or after file block @off. */
static int sx_swapext_mapped_beyond(struct sx_hinode *ip, u64 off, bool *beyond)
{
	struct sx_hmap m;
	u64 len = (u64)-1 - off;
	int error;

	*beyond = false;
	if (len == 0)
		return 0;
	error = sx_swapext_read(ip, off, len, &m);
	if (error)
		return error;
	*beyond = sx_hmap_is_mapped(&m) || m.hm_blockcount < len;
	return 0;
}

/*
 * A long swap's estimate walks its range in pieces, from the last to the
 * first.  The steps walk from first to last right after it, and a host's
 * cache that cannot hold all the mapping blocks of both ranges keeps those
 * it read last: walked in order, those are the range's end, and the steps
 * would find none of theirs until the end, reading every mapping block a
 * second time; walked backwards, the first pieces' blocks wait in the cache
 * for the steps.  (The store, swapping two files of 100,000 extents: 10,948
 * device reads down to 7,176.)  Only a swap of many mappings over a long
 * range is walked so: a mapping cut at a piece's edge counts as two
 * pieces, so a walk in pieces may count up to SX_SWAPEXT_EST_PIECES - 1
 * steps and incoming mappings of each range more than the swap has (twice
 * that for one file): a reservation a little too large, never too small,
 * and -EFBIG for a swap that many mappings short of ho_max_extents.
 * Blocks are counted exactly.
 */
#define SX_SWAPEXT_EST_PIECES	16
#define SX_SWAPEXT_EST_LONG	65536	/* blocks of a range walked in pieces */
#define SX_SWAPEXT_EST_MANY	256	/* mappings of both forks, at least */

/*
 * Add the walk of @si's range, read through @rd, to @est and the incoming
 * pieces to @in1, @in2.
 */
static int sx_swapext_est_walk(const struct sx_swapext_intent *si, struct sx_swapext_walk *rd,
			       struct sx_swap_est *est, u64 *in1, u64 *in2)
{
	struct sx_swapext_intent walk = *si;
	int error = 0;

	sx_swapext_walk_rewind(rd);
	while (walk.si_blockcount > 0) {
		struct sx_hmap m1, m2;
		bool same;

		error = sx_swapext_read_pair(NULL, &walk, &rd->w_rc1, &rd->w_rc2, &m1, &m2);
		if (!error)
			error = sx_swapext_same(&walk, &m1, &m2, &same);
		if (error)
			break;
		if (same) {
			if (sx_hmap_is_mapped(&m1))
				est->se_shared_skipped = true;
		} else {
			est->se_steps++;
			if (sx_hmap_is_mapped(&m2)) {
				(*in1)++;
				est->se_blocks2 += m2.hm_blockcount;
			}
			if (sx_hmap_is_mapped(&m1)) {
				(*in2)++;
				est->se_blocks1 += m1.hm_blockcount;
			}
		}
		sx_swapext_advance(&walk, &rd->w_rc1, &rd->w_rc2, m1.hm_blockcount);
	}
	return error;
}

/*
 * Walk the whole swap as finish_one will (the steps never touch a block
 * ahead of the cursors, so the current mappings are the ones each step will
 * read; a long one in pieces, see above) and bound each fork's mapping
 * count at any point of the chain: the count now, plus one for each
 * incoming piece, plus three for the splits at the two ends of the range
 * and at the cursor.  Pieces leaving are not
 * subtracted: a piece may be part of a larger mapping, so its leaving need
 * not lower the count.  One file holds both ranges' growth.
 */
int sx_swapext_estimate(const struct sx_swapext_intent *si, struct sx_swap_est *est)
{
	const struct sx_host_ops *ops = sx_hops(si->si_ip1);
	u64 len = si->si_blockcount, plen = len, npieces, i;
	struct sx_swapext_walk rd;
	struct sx_hstat st1, st2;
	u64 in1 = 0, in2 = 0;
	u64 max1, max2;
	int error = 0;

	memset(est, 0, sizeof(*est));
	sx_hstat(si->si_ip1, &st1);
	sx_hstat(si->si_ip2, &st2);
	if (len >= SX_SWAPEXT_EST_LONG && st1.hs_nextents + st2.hs_nextents >= SX_SWAPEXT_EST_MANY)
		plen = sx_howmany(len, SX_SWAPEXT_EST_PIECES);
	npieces = len ? sx_howmany(len, plen) : 0;
	/* one read-ahead buffer for all the pieces */
	sx_swapext_walk_init(&rd, si);
	for (i = npieces; i-- > 0 && !error;) {
		struct sx_swapext_intent piece = *si;

		piece.si_startoff1 += i * plen;
		piece.si_startoff2 += i * plen;
		piece.si_blockcount = sx_min(plen, len - i * plen);
		error = sx_swapext_est_walk(&piece, &rd, est, &in1, &in2);
	}
	sx_swapext_walk_done(&rd);
	if (error)
		return error;
	error = sx_swapext_mapped_beyond(si->si_ip1, si->si_startoff1 + len, &est->se_beyond1);
	if (!error)
		error = sx_swapext_mapped_beyond(si->si_ip2, si->si_startoff2 + len, &est->se_beyond2);
	if (error)
		return error;

	max1 = ops->ho_max_extents(si->si_ip1);
	max2 = ops->ho_max_extents(si->si_ip2);
	if (si->si_ip1 == si->si_ip2) {
		in1 += in2 + 3;
		in2 = in1;
	}
	est->se_nrext1 = st1.hs_nextents + 3 + in1;
	est->se_nrext2 = st2.hs_nextents + 3 + in2;
	/* overflow of the sums themselves is impossible: counts are < 2^62 */
	if (est->se_nrext1 > max1 || est->se_nrext2 > max2)
		return -EFBIG;
	return 0;
}

void sx_swapext_est_res(const struct sx_swapext_intent *si, const struct sx_swap_est *est,
			enum sx_swap_algo algo, struct sx_hres *res)
{
	memset(res, 0, sizeof(*res));
	res->hr_algo = algo;
	res->hr_steps = est->se_steps;
	res->hr_nrext1 = est->se_nrext1;
	res->hr_nrext2 = est->se_nrext2;
	res->hr_ip1 = si->si_ip1;
	res->hr_ip2 = si->si_ip2;
	res->hr_blocks1 = est->se_blocks1;
	res->hr_blocks2 = est->se_blocks2;
}

/*
 * Raise @ip's size to cover a piece mapped at file blocks [.., @end), but
 * never past the final size @isize: the map is still queued, so the size
 * is on disk before the mapping is (the seed's xfs_swapext_update_size).
 */
static int sx_swapext_update_size(struct sx_htrans *tp, struct sx_hinode *ip, u64 end,
				  s64 isize, u32 bsize)
{
	struct sx_hstat st;
	s64 len;

	if (isize < 0)
		return 0;
	if (end > (u64)SX_S64_MAX / bsize)
		len = isize;
	else
		len = sx_min((s64)(end * bsize), isize);
	sx_hstat(ip, &st);
	if (len <= st.hs_size)
		return 0;
	return sx_hops(ip)->ho_set_size(tp, ip, len);
}

/* Unmap @m (if it maps anything) from @ip: now if @direct, else queued. */
static int sx_swapext_unmap(struct sx_htrans *tp, struct sx_hinode *ip, const struct sx_hmap *m,
			    bool direct)
{
	if (!sx_hmap_is_mapped(m))
		return 0;
	if (direct)
		return sx_hops(ip)->ho_unmap_now(tp, ip, m);
	return sx_hops(ip)->ho_queue_unmap(tp, ip, m);
}

/* Map @m's blocks (if any) into @ip at file block @off: now or queued. */
static int sx_swapext_map(struct sx_htrans *tp, struct sx_hinode *ip, const struct sx_hmap *m,
			  u64 off, bool direct)
{
	struct sx_hmap nm = *m;

	if (!sx_hmap_is_mapped(m))
		return 0;
	nm.hm_startoff = off;
	if (direct)
		return sx_hops(ip)->ho_map_now(tp, ip, &nm);
	return sx_hops(ip)->ho_queue_map(tp, ip, &nm);
}

/*
 * What the exchanges of a direct step owe both inodes, applied once at the
 * end of the step (sx_swapext_settle()): the block counts' moves and the
 * sizes.  The step is one transaction, so nothing sees the forks between
 * its exchanges, and no mapping lies past EOF where the step ends.
 */
struct sx_swapext_owed {
	s64	so_delta1;		/* blocks inode 1 gains */
	s64	so_delta2;
	u64	so_end1;		/* end of the last piece mapped into inode 1; 0: none */
	u64	so_end2;
};

/* Move the block counts by @delta1 and @delta2; within one file they cancel. */
static int sx_swapext_nblocks(struct sx_htrans *tp, struct sx_swapext_intent *si, s64 delta1,
			      s64 delta2)
{
	const struct sx_host_ops *ops = sx_hops(si->si_ip1);
	int error;

	if (si->si_ip1 == si->si_ip2)
		return 0;
	if (delta1) {
		error = ops->ho_mod_nblocks(tp, si->si_ip1, delta1);
		if (error)
			return error;
	}
	if (delta2)
		return ops->ho_mod_nblocks(tp, si->si_ip2, delta2);
	return 0;
}

/*
 * Raise the sizes to cover the pieces mapped up to file blocks @end1 and
 * @end2 (0: none mapped): TO_EOF grows the shorter file as it goes.
 */
static int sx_swapext_sizes(struct sx_htrans *tp, struct sx_swapext_intent *si, u64 end1,
			    u64 end2, u32 bsize)
{
	int error;

	if (end1) {
		error = sx_swapext_update_size(tp, si->si_ip1, end1, si->si_isize1, bsize);
		if (error)
			return error;
	}
	if (end2)
		return sx_swapext_update_size(tp, si->si_ip2, end2, si->si_isize2, bsize);
	return 0;
}

/* Apply what a direct step's exchanges owe the inodes. */
static int sx_swapext_settle(struct sx_htrans *tp, struct sx_swapext_intent *si,
			     const struct sx_swapext_owed *owed, u32 bsize)
{
	int error = sx_swapext_nblocks(tp, si, owed->so_delta1, owed->so_delta2);

	if (error)
		return error;
	return sx_swapext_sizes(tp, si, owed->so_end1, owed->so_end2, bsize);
}

/*
 * Swap the pieces @m1 (of inode 1) and @m2 (of inode 2) in @tp: with @owed
 * (a direct step) changing the forks now and adding the block counts and
 * sizes to what the step owes, else queuing the changes and moving those
 * at once.  Both unmaps come before both maps: within one file the second
 * range's piece may lie where the first one's goes.
 */
static int sx_swapext_step(struct sx_htrans *tp, struct sx_swapext_intent *si,
			   const struct sx_hmap *m1, const struct sx_hmap *m2,
			   struct sx_swapext_owed *owed, u32 bsize)
{
	bool direct = owed != NULL;
	u64 len = m1->hm_blockcount;
	u64 end1 = sx_hmap_is_mapped(m2) ? si->si_startoff1 + len : 0;
	u64 end2 = sx_hmap_is_mapped(m1) ? si->si_startoff2 + len : 0;
	s64 delta1 = 0, delta2 = 0;
	int error;

	/* block counts move with the blocks */
	if (sx_hmap_is_mapped(m1)) {
		delta1 -= (s64)len;
		delta2 += (s64)len;
	}
	if (sx_hmap_is_mapped(m2)) {
		delta1 += (s64)len;
		delta2 -= (s64)len;
	}
	if (direct) {
		owed->so_delta1 += delta1;
		owed->so_delta2 += delta2;
	} else {
		error = sx_swapext_nblocks(tp, si, delta1, delta2);
		if (error)
			return error;
	}

	/* remove both pieces, then map each where the other was */
	error = sx_swapext_unmap(tp, si->si_ip1, m1, direct);
	if (!error)
		error = sx_swapext_unmap(tp, si->si_ip2, m2, direct);
	if (!error)
		error = sx_swapext_map(tp, si->si_ip1, m2, si->si_startoff1, direct);
	if (!error)
		error = sx_swapext_map(tp, si->si_ip2, m1, si->si_startoff2, direct);
	if (error)
		return error;

	/* no mapping past EOF, ever: TO_EOF grows the shorter file as it goes */
	if (direct) {
		if (end1)
			owed->so_end1 = end1;
		if (end2)
			owed->so_end2 = end2;
		return 0;
	}
	return sx_swapext_sizes(tp, si, end1, end2, bsize);
}

/* The last step: final sizes and the reflink flags decided at the start. */
static int sx_swapext_finish_last(struct sx_htrans *tp, struct sx_swapext_intent *si)
{
	const struct sx_host_ops *ops = sx_hops(si->si_ip1);
	int error;

	if (si->si_flags & SX_SWAPEXT_SET_SIZES) {
		error = ops->ho_set_size(tp, si->si_ip1, si->si_isize1);
		if (!error && si->si_ip2 != si->si_ip1)
			error = ops->ho_set_size(tp, si->si_ip2, si->si_isize2);
		if (error)
			return error;
	}
	if (si->si_flags & SX_SWAPEXT_CLEAR_INO1_REFLINK) {
		error = ops->ho_set_reflink(tp, si->si_ip1, false);
		if (error)
			return error;
	}
	if (si->si_flags & SX_SWAPEXT_CLEAR_INO2_REFLINK) {
		error = ops->ho_set_reflink(tp, si->si_ip2, false);
		if (error)
			return error;
	}
	return 0;
}

/*
 * One step: skip the pieces both files share, then exchange the next
 * differing pair.  A host that changes the forks directly goes on with
 * further pairs while its reservation has room for one more at its worst
 * (ho_step_room), so that a step of a long swap is one transaction: the
 * SXD of the old intent, many exchanges, the SXI of what is left.  The
 * item's cursors advance with each exchange, and the SXI the host logs
 * after the step describes exactly the rest, so a crash recovers from the
 * last committed step whatever the number of exchanges in it.
 */
int sx_swapext_finish_one(struct sx_htrans *tp, struct sx_swapext_intent *si)
{
	bool direct = sx_swapext_direct(si->si_ip1);
	const struct sx_host_ops *ops = sx_hops(si->si_ip1);
	u32 bsize = sx_swapext_blksize(si->si_ip1);
	struct sx_swapext_owed owed;
	struct sx_swapext_walk rd;
	u64 pairs = 0;
	int error = 0;

	memset(&owed, 0, sizeof(owed));
	sx_swapext_walk_init(&rd, si);
	while (si->si_blockcount > 0) {
		struct sx_hmap m1, m2;
		bool same;

		/*
		 * No room for another exchange: the step ends here, or if
		 * this was to be its first, that one is queued (it then
		 * needs only what a queued step reserves).
		 */
		if (direct && !ops->ho_step_room(tp, si->si_ip1, si->si_ip2)) {
			if (pairs > 0)
				break;
			direct = false;
		}
		/* reads after a direct change go through its transaction */
		error = sx_swapext_read_pair(direct && pairs ? tp : NULL, si, &rd.w_rc1,
					     &rd.w_rc2, &m1, &m2);
		if (!error)
			error = sx_swapext_same(si, &m1, &m2, &same);
		if (error)
			break;
		if (same) {
			/*
			 * Blocks left in both files were not exchanged: the
			 * reflink flags stay (the flags follow what was
			 * actually exchanged, never what was asked).
			 */
			if (sx_hmap_is_mapped(&m1))
				si->si_flags &= ~(SX_SWAPEXT_CLEAR_INO1_REFLINK |
						  SX_SWAPEXT_CLEAR_INO2_REFLINK);
			sx_swapext_advance(si, &rd.w_rc1, &rd.w_rc2, m1.hm_blockcount);
			continue;
		}
		error = sx_swapext_step(tp, si, &m1, &m2, direct ? &owed : NULL, bsize);
		if (error)
			break;
		sx_swapext_advance(si, &rd.w_rc1, &rd.w_rc2, m1.hm_blockcount);
		pairs++;
		if (!direct)
			break;
	}
	sx_swapext_walk_done(&rd);
	if (error)
		return error;
	if (direct && pairs) {
		error = sx_swapext_settle(tp, si, &owed, bsize);
		if (error)
			return error;
	}
	if (si->si_blockcount > 0)
		return -EAGAIN;
	return sx_swapext_finish_last(tp, si);
}

/* ---------------------------------------------------------------- algorithms */

/* Build the deferred item of a request. */
static void sx_swapext_init_intent(const struct sx_swap_req *req, struct sx_swapext_intent *si)
{
	struct sx_hstat st1, st2;

	sx_hstat(req->sr_ip1, &st1);
	sx_hstat(req->sr_ip2, &st2);
	memset(si, 0, sizeof(*si));
	si->si_ip1 = req->sr_ip1;
	si->si_ip2 = req->sr_ip2;
	si->si_ino1 = st1.hs_ino;
	si->si_ino2 = st2.hs_ino;
	si->si_gen1 = st1.hs_gen;
	si->si_gen2 = st2.hs_gen;
	si->si_startoff1 = req->sr_startoff1;
	si->si_startoff2 = req->sr_startoff2;
	si->si_blockcount = req->sr_blockcount;
	si->si_flags = req->sr_flags & SX_SWAPEXT_SET_SIZES;
	si->si_isize1 = -1;
	si->si_isize2 = -1;
	if (si->si_flags & SX_SWAPEXT_SET_SIZES) {
		si->si_isize1 = req->sr_isize1;
		si->si_isize2 = req->sr_isize2;
	}
}

/*
 * The reflink flags before a swap (the seed's xfs_swapext_reflink_prep): a
 * file that may receive shared blocks gets the flag now, in the first
 * transaction.  If exactly one file had it and the swap exchanges both files
 * entirely (whole files from block 0, nothing mapped beyond, nothing left
 * shared in place), the file that had it will hold only the other's
 * unshared blocks, so the last step may clear its flag.
 */
static int sx_swapext_reflink_prep(struct sx_htrans *tp, struct sx_swapext_intent *si,
				   const struct sx_swap_est *est)
{
	const struct sx_host_ops *ops = sx_hops(si->si_ip1);
	struct sx_hstat st1, st2;
	bool r1, r2;
	u64 b1, b2;
	int error;

	if (si->si_ip1 == si->si_ip2)
		return 0;
	sx_hstat(si->si_ip1, &st1);
	sx_hstat(si->si_ip2, &st2);
	r1 = st1.hs_flags & SX_HSTAT_REFLINK;
	r2 = st2.hs_flags & SX_HSTAT_REFLINK;
	if (r1 == r2)
		return 0;
	error = ops->ho_set_reflink(tp, r1 ? si->si_ip2 : si->si_ip1, true);
	if (error)
		return error;

	b1 = sx_howmany((u64)st1.hs_size, st1.hs_blksize);
	b2 = sx_howmany((u64)st2.hs_size, st2.hs_blksize);
	if (si->si_startoff1 == 0 && si->si_startoff2 == 0 &&
	    si->si_blockcount == b1 && si->si_blockcount == b2 &&
	    !est->se_shared_skipped && !est->se_beyond1 && !est->se_beyond2)
		si->si_flags |= r1 ? SX_SWAPEXT_CLEAR_INO1_REFLINK :
				     SX_SWAPEXT_CLEAR_INO2_REFLINK;
	return 0;
}

/*
 * Whole-fork swap: the forks, block counts and (following the blocks) the
 * reflink flags change places; the sizes are equal (full files only).
 */
static int sx_swapext_forks(struct sx_htrans *tp, const struct sx_swap_req *req)
{
	const struct sx_host_ops *ops = sx_hops(req->sr_ip1);
	struct sx_hstat st1, st2;
	bool r1, r2;
	int error;

	sx_hstat(req->sr_ip1, &st1);
	sx_hstat(req->sr_ip2, &st2);
	error = ops->ho_swap_forks(tp, req->sr_ip1, req->sr_ip2);
	if (error)
		return error;
	r1 = st1.hs_flags & SX_HSTAT_REFLINK;
	r2 = st2.hs_flags & SX_HSTAT_REFLINK;
	if (r1 == r2)
		return 0;
	error = ops->ho_set_reflink(tp, req->sr_ip1, r2);
	if (!error)
		error = ops->ho_set_reflink(tp, req->sr_ip2, r1);
	return error;
}

int sx_swapext_swap(const struct sx_swap_req *req)
{
	struct sx_hinode *ip1 = req->sr_ip1, *ip2 = req->sr_ip2;
	const struct sx_host_ops *ops = sx_hops(ip1);
	struct sx_swapext_intent si;
	struct sx_swap_est est;
	struct sx_htrans *tp = NULL;
	struct sx_hres res;
	int error;

	sx_swapext_init_intent(req, &si);
	memset(&est, 0, sizeof(est));
	if (req->sr_algo != SX_SWAP_FORKS) {
		error = sx_swapext_estimate(&si, &est);
		if (error)
			return error;
	}

	sx_swapext_est_res(&si, &est, req->sr_algo, &res);
	error = ops->ho_trans_alloc(ip1->hi_host, &res, &tp);
	if (error)
		return error;

	/* the first transaction: times, reflink flags, then the work */
	error = ops->ho_touch(tp, ip1);
	if (!error && ip2 != ip1)
		error = ops->ho_touch(tp, ip2);
	if (error)
		goto out_cancel;

	switch (req->sr_algo) {
	case SX_SWAP_ATOMIC:
		error = sx_swapext_reflink_prep(tp, &si, &est);
		if (!error)
			error = ops->ho_defer_swap(tp, &si);
		break;
	case SX_SWAP_BMAP:
		error = sx_swapext_reflink_prep(tp, &si, &est);
		/*
		 * Each step reads the mappings outside the transaction
		 * (ho_read_mapping takes none); the first one has just
		 * logged both inodes, and a host that keeps mappings in the
		 * inode block holds that block locked until it commits.
		 * Commit it first, as the atomic chain does before its
		 * first step.
		 */
		if (!error)
			error = ops->ho_trans_roll(&tp);
		while (!error) {
			error = sx_swapext_finish_one(tp, &si);
			if (error != -EAGAIN)
				break;
			/* finish the step's map/unmap work, then go on */
			error = ops->ho_trans_roll(&tp);
		}
		break;
	case SX_SWAP_FORKS:
		error = sx_swapext_forks(tp, req);
		break;
	default:
		error = -EOPNOTSUPP;
		break;
	}
	if (error)
		goto out_cancel;
	/* commit runs the SXI chain (or the last step's work) to its end */
	return ops->ho_trans_commit(tp);

out_cancel:
	if (tp)
		ops->ho_trans_cancel(tp);
	return error;
}

/* ---------------------------------------------------------------- queueing */

int sx_swapext_queue_check(const struct sx_swap_req *req)
{
	struct sx_swapext_intent si;
	struct sx_swap_est est;

	sx_swapext_init_intent(req, &si);
	return sx_swapext_estimate(&si, &est);
}

int sx_swapext_queue(struct sx_htrans *tp, const struct sx_swap_req *req)
{
	const struct sx_host_ops *ops = sx_hops(req->sr_ip1);
	struct sx_swapext_intent si;
	struct sx_swap_est est;
	int error;

	/*
	 * No second estimate: @tp may hold an inode's block by now, which a
	 * lookup outside it would wait for.  Without it reflink_prep cannot
	 * know that the files are exchanged whole, so it never decides to
	 * clear a flag: a flag left set only says blocks may be shared.
	 */
	sx_swapext_init_intent(req, &si);
	memset(&est, 0, sizeof(est));
	est.se_shared_skipped = true;
	error = ops->ho_touch(tp, req->sr_ip1);
	if (!error)
		error = ops->ho_touch(tp, req->sr_ip2);
	if (!error)
		error = sx_swapext_reflink_prep(tp, &si, &est);
	if (!error)
		error = ops->ho_defer_swap(tp, &si);
	return error;
}
