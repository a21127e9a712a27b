// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * memhost: the in-memory host of the swap core (see memhost.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include "memhost.h"

enum {
	MH_OP_INTENT = 1,
	MH_OP_DONE,
	MH_OP_MAP,
	MH_OP_UNMAP,
	MH_OP_CORE,
	MH_OP_FORKS,
};

enum {
	MH_IT_BUI = 1,
	MH_IT_SXI,
};

/* The memhost's own map/unmap intent. */
struct mh_bui {
	u64	mb_ino;
	u64	mb_gen;
	u32	mb_map;			/* 1: map, 0: unmap */
	u32	mb_pad;
	struct sx_hmap mb_m;
};

/* An inode's durable attributes, logged whole at each change. */
struct mh_core {
	s64	mc_size;
	s64	mc_nblocks;
	s64	mc_qused;
	u32	mc_flags;
	u32	mc_mtime_nsec;
	u32	mc_ctime_nsec;
	u32	mc_pad;
	s64	mc_mtime_sec;
	s64	mc_ctime_sec;
};

struct mh_op {
	u16	mo_type;
	u16	mo_itype;
	u32	mo_len;
	u64	mo_id;
	u64	mo_ino;
	u64	mo_ino2;
	struct sx_hmap mo_map;
	struct mh_core mo_core;
	union {
		struct sx_dlog_sxi sxi;
		struct mh_bui bui;
	} mo_p;
};

struct mh_work {
	struct mh_work	*mw_next;
	int		mw_kind;
	u64		mw_id;		/* its logged intent; 0: none yet */
	struct mh_bui	mw_bui;
	struct sx_swapext_intent mw_si;
};

struct mh_trans {
	struct mh_host	*mt_mh;
	struct mh_op	*mt_ops;
	u32		mt_nops;
	u32		mt_cap;
	struct mh_work	*mt_work;
	u32		mt_pairs;	/* direct exchanges ho_step_room let in */
};

static void mh_die(const char *what)
{
	fprintf(stderr, "memhost: %s\n", what);
	abort();
}

static void *mh_xzalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		mh_die("out of memory");
	return p;
}

static struct mh_inode *MI(struct sx_hinode *ip)
{
	return mh_container_of(ip, struct mh_inode, mi_hi);
}

static struct mh_host *MH(struct sx_host *h)
{
	return mh_container_of(h, struct mh_host, mh_host);
}

static struct mh_trans *MT(struct sx_htrans *tp)
{
	return (struct mh_trans *)tp;
}

static struct mh_host *mh_of(struct mh_inode *mi)
{
	return MH(mi->mi_hi.hi_host);
}

static struct mh_inode *mh_find(struct mh_host *mh, u64 ino)
{
	if (ino < MH_FIRST_INO || ino >= MH_FIRST_INO + MH_NINODES)
		return NULL;
	if (!mh->mh_inodes[ino - MH_FIRST_INO].mi_used)
		return NULL;
	return &mh->mh_inodes[ino - MH_FIRST_INO];
}

/* ------------------------------------------------------------ extent lists */

/* Index of the first extent that ends after @off. */
static u32 mh_ext_search(const struct mh_inode *mi, u64 off)
{
	u32 i;

	for (i = 0; i < mi->mi_next; i++)
		if (mi->mi_ext[i].me_off + mi->mi_ext[i].me_len > off)
			break;
	return i;
}

static bool mh_ext_mergeable(const struct mh_ext *a, const struct mh_ext *b)
{
	return a->me_off + a->me_len == b->me_off && a->me_blk + a->me_len == b->me_blk &&
	       a->me_unwritten == b->me_unwritten;
}

/* Merge extent @i with its right neighbour if they are contiguous. */
static void mh_ext_merge_right(struct mh_inode *mi, u32 i)
{
	if (i + 1 >= mi->mi_next || !mh_ext_mergeable(&mi->mi_ext[i], &mi->mi_ext[i + 1]))
		return;
	mi->mi_ext[i].me_len += mi->mi_ext[i + 1].me_len;
	memmove(&mi->mi_ext[i + 1], &mi->mi_ext[i + 2],
		(mi->mi_next - i - 2) * sizeof(mi->mi_ext[0]));
	mi->mi_next--;
}

/* Map @m into @mi where it is a hole. */
static int mh_apply_map(struct mh_inode *mi, const struct sx_hmap *m)
{
	u32 i = mh_ext_search(mi, m->hm_startoff);

	if (i < mi->mi_next && mi->mi_ext[i].me_off < m->hm_startoff + m->hm_blockcount)
		return -EFSCORRUPTED;		/* not a hole */
	if (mi->mi_next >= MH_MAX_EXT)
		return -EFBIG;
	memmove(&mi->mi_ext[i + 1], &mi->mi_ext[i], (mi->mi_next - i) * sizeof(mi->mi_ext[0]));
	mi->mi_ext[i].me_off = m->hm_startoff;
	mi->mi_ext[i].me_blk = m->hm_startblock;
	mi->mi_ext[i].me_len = m->hm_blockcount;
	mi->mi_ext[i].me_unwritten = !!(m->hm_flags & SX_HMAP_UNWRITTEN);
	mi->mi_next++;
	mh_ext_merge_right(mi, i);
	if (i > 0)
		mh_ext_merge_right(mi, i - 1);
	return 0;
}

/* Remove @m from @mi; it must be mapped exactly so (blocks and state). */
static int mh_apply_unmap(struct mh_inode *mi, const struct sx_hmap *m)
{
	u64 off = m->hm_startoff, end = off + m->hm_blockcount;
	u32 i = mh_ext_search(mi, off);
	struct mh_ext *e;
	u64 eend;

	if (i >= mi->mi_next)
		return -EFSCORRUPTED;
	e = &mi->mi_ext[i];
	eend = e->me_off + e->me_len;
	if (e->me_off > off || eend < end || e->me_blk + (off - e->me_off) != m->hm_startblock ||
	    e->me_unwritten != !!(m->hm_flags & SX_HMAP_UNWRITTEN))
		return -EFSCORRUPTED;
	if (e->me_off < off && eend > end) {
		/* split in two */
		if (mi->mi_next >= MH_MAX_EXT)
			return -EFBIG;
		memmove(&mi->mi_ext[i + 1], &mi->mi_ext[i], (mi->mi_next - i) * sizeof(*e));
		mi->mi_next++;
		e = &mi->mi_ext[i];
		e->me_len = off - e->me_off;
		e[1].me_blk += end - e[1].me_off;
		e[1].me_len = eend - end;
		e[1].me_off = end;
	} else if (e->me_off < off) {
		e->me_len = off - e->me_off;
	} else if (eend > end) {
		e->me_blk += end - e->me_off;
		e->me_len = eend - end;
		e->me_off = end;
	} else {
		memmove(&mi->mi_ext[i], &mi->mi_ext[i + 1], (mi->mi_next - i - 1) * sizeof(*e));
		mi->mi_next--;
	}
	return 0;
}

/*
 * Apply a map or unmap to @mi, moving its block count too when the host's
 * map/unmap do that (SX_HOST_MAP_NBLOCKS); replay does the same.
 */
static int mh_apply_work(struct mh_host *mh, struct mh_inode *mi, const struct sx_hmap *m,
			 bool is_map)
{
	int error = is_map ? mh_apply_map(mi, m) : mh_apply_unmap(mi, m);

	if (!error && (mh->mh_host.h_features & SX_HOST_MAP_NBLOCKS))
		mi->mi_nblocks += is_map ? (s64)m->hm_blockcount : -(s64)m->hm_blockcount;
	return error;
}

/* Apply a BUI's work (with fault injection for tests). */
static int mh_apply_bui(struct mh_host *mh, const struct mh_bui *b)
{
	struct mh_inode *mi = mh_find(mh, b->mb_ino);

	if (!mi || mi->mi_gen != b->mb_gen)
		return -EFSCORRUPTED;
	if (mh->mh_fail_apply && --mh->mh_fail_apply == 0)
		return mh->mh_fail_error;
	return mh_apply_work(mh, mi, &b->mb_m, b->mb_map);
}

/* ------------------------------------------------------------ log and transactions */

static struct mh_op *mh_tp_op(struct mh_trans *tp, u16 type)
{
	struct mh_op *op;

	if (tp->mt_nops == tp->mt_cap) {
		tp->mt_cap = tp->mt_cap ? tp->mt_cap * 2 : 8;
		tp->mt_ops = realloc(tp->mt_ops, tp->mt_cap * sizeof(*op));
		if (!tp->mt_ops)
			mh_die("out of memory");
	}
	op = &tp->mt_ops[tp->mt_nops++];
	memset(op, 0, sizeof(*op));
	op->mo_type = type;
	return op;
}

static void mh_core_get(const struct mh_inode *mi, struct mh_core *c)
{
	memset(c, 0, sizeof(*c));
	c->mc_size = mi->mi_size;
	c->mc_nblocks = mi->mi_nblocks;
	c->mc_qused = mi->mi_qused;
	c->mc_flags = mi->mi_flags;
	c->mc_mtime_sec = mi->mi_mtime_sec;
	c->mc_mtime_nsec = mi->mi_mtime_nsec;
	c->mc_ctime_sec = mi->mi_ctime_sec;
	c->mc_ctime_nsec = mi->mi_ctime_nsec;
}

static void mh_core_set(struct mh_inode *mi, const struct mh_core *c)
{
	mi->mi_size = c->mc_size;
	mi->mi_nblocks = c->mc_nblocks;
	mi->mi_qused = c->mc_qused;
	mi->mi_flags = c->mc_flags;
	mi->mi_mtime_sec = c->mc_mtime_sec;
	mi->mi_mtime_nsec = c->mc_mtime_nsec;
	mi->mi_ctime_sec = c->mc_ctime_sec;
	mi->mi_ctime_nsec = c->mc_ctime_nsec;
}

/* Log @mi's attributes as they are now. */
static void mh_log_core(struct mh_trans *tp, struct mh_inode *mi)
{
	struct mh_op *op = mh_tp_op(tp, MH_OP_CORE);

	op->mo_ino = mi->mi_ino;
	mh_core_get(mi, &op->mo_core);
}

/* Commit @tp's ops as one record (nothing reaches the log after a shutdown). */
static void mh_commit_record(struct mh_trans *tp)
{
	struct mh_host *mh = tp->mt_mh;
	struct mh_rec *r;

	if (tp->mt_nops == 0)
		return;
	if (mh->mh_shutdown) {
		tp->mt_nops = 0;
		return;
	}
	if (mh->mh_nrec == mh->mh_caprec) {
		mh->mh_caprec = mh->mh_caprec ? mh->mh_caprec * 2 : 64;
		mh->mh_log = realloc(mh->mh_log, mh->mh_caprec * sizeof(*r));
		if (!mh->mh_log)
			mh_die("out of memory");
	}
	r = &mh->mh_log[mh->mh_nrec++];
	r->mr_nops = tp->mt_nops;
	r->mr_ops = malloc(tp->mt_nops * sizeof(struct mh_op));
	if (!r->mr_ops)
		mh_die("out of memory");
	memcpy(r->mr_ops, tp->mt_ops, tp->mt_nops * sizeof(struct mh_op));
	tp->mt_nops = 0;
	tp->mt_pairs = 0;
	mh->mh_ncommit++;
}

static void mh_log_intent(struct mh_trans *tp, struct mh_work *w)
{
	struct mh_op *op = mh_tp_op(tp, MH_OP_INTENT);

	w->mw_id = ++tp->mt_mh->mh_next_id;
	op->mo_id = w->mw_id;
	if (w->mw_kind == MH_IT_BUI) {
		op->mo_itype = MH_IT_BUI;
		op->mo_len = sizeof(w->mw_bui);
		op->mo_p.bui = w->mw_bui;
	} else {
		op->mo_itype = MH_IT_SXI;
		op->mo_len = sizeof(op->mo_p.sxi);
		op->mo_p.sxi.sxi_hdr.li_id = cpu_to_le64(w->mw_id);
		op->mo_p.sxi.sxi_hdr.li_nitems = cpu_to_le32(1);
		sx_swapext_item_encode(&w->mw_si, &op->mo_p.sxi.sxi_ext);
	}
}

static void mh_log_done(struct mh_trans *tp, struct mh_work *w)
{
	struct mh_op *op = mh_tp_op(tp, MH_OP_DONE);

	op->mo_id = w->mw_id;
	op->mo_itype = w->mw_kind;
	w->mw_id = 0;
}

static void mh_work_free(struct mh_work *w)
{
	if (w->mw_kind == MH_IT_SXI)
		sx_swapext_item_cancel(&w->mw_si);
	free(w);
}

static void mh_work_free_list(struct mh_work *w)
{
	while (w) {
		struct mh_work *next = w->mw_next;

		mh_work_free(w);
		w = next;
	}
}

static struct mh_work **mh_work_tail(struct mh_work **head)
{
	while (*head)
		head = &(*head)->mw_next;
	return head;
}

static void mh_shut(struct mh_host *mh)
{
	mh->mh_shutdown = true;
}

/*
 * Commit @tp with its deferred work and finish that work, one step per
 * transaction (the chain of engine/defer.c).  @tp is reused for each
 * transaction of the chain and is empty again at the end.
 */
static int mh_run(struct mh_trans *tp)
{
	struct mh_host *mh = tp->mt_mh;
	struct mh_work *list = tp->mt_work, *w;
	int error = 0;

	tp->mt_work = NULL;
	for (w = list; w; w = w->mw_next)
		if (!w->mw_id)
			mh_log_intent(tp, w);
	mh_commit_record(tp);

	while (list) {
		struct mh_work *requeue = NULL, *spawned, **tail;

		w = list;
		list = w->mw_next;
		w->mw_next = NULL;
		mh_log_done(tp, w);
		if (w->mw_kind == MH_IT_BUI) {
			error = mh_apply_bui(mh, &w->mw_bui);
			if (!error) {
				struct mh_op *op = mh_tp_op(tp, w->mw_bui.mb_map ? MH_OP_MAP :
							    MH_OP_UNMAP);

				op->mo_ino = w->mw_bui.mb_ino;
				op->mo_map = w->mw_bui.mb_m;
				free(w);
			}
		} else {
			error = sx_swapext_item_finish((struct sx_htrans *)tp, &w->mw_si);
			if (error == -EAGAIN) {
				requeue = w;
				error = 0;
			} else if (!error) {
				free(w);
			}
		}
		if (error) {
			mh_work_free(w);
			goto out_fail;
		}

		/* new work goes first; the requeued item behind it */
		spawned = tp->mt_work;
		tp->mt_work = NULL;
		if (requeue && mh->mh_order == MH_ORDER_STORE)
			mh_log_intent(tp, requeue);
		for (w = spawned; w; w = w->mw_next)
			mh_log_intent(tp, w);
		if (requeue && mh->mh_order == MH_ORDER_SPAWN_FIRST)
			mh_log_intent(tp, requeue);
		if (requeue) {
			requeue->mw_next = list;
			list = requeue;
		}
		tail = mh_work_tail(&spawned);
		*tail = list;
		list = spawned;
		mh_commit_record(tp);
	}
	return 0;

out_fail:
	mh_work_free_list(list);
	mh_work_free_list(tp->mt_work);
	tp->mt_work = NULL;
	tp->mt_nops = 0;
	mh_shut(mh);
	return error;
}

static struct mh_trans *mh_trans_new(struct mh_host *mh)
{
	struct mh_trans *tp = mh_xzalloc(sizeof(*tp));

	tp->mt_mh = mh;
	mh->mh_open_trans++;
	return tp;
}

static void mh_trans_free(struct mh_trans *tp)
{
	tp->mt_mh->mh_open_trans--;
	mh_work_free_list(tp->mt_work);
	free(tp->mt_ops);
	free(tp);
}

/* ------------------------------------------------------------ host ops */

static void mh_stat(struct sx_hinode *ip, struct sx_hstat *st)
{
	struct mh_inode *mi = MI(ip);

	st->hs_ino = mi->mi_ino;
	st->hs_gen = mi->mi_gen;
	st->hs_size = mi->mi_size;
	st->hs_mode = mi->mi_mode;
	st->hs_flags = mi->mi_flags;
	st->hs_blksize = mh_of(mi)->mh_blksize;
	st->hs_nextents = mi->mi_next;
	st->hs_mtime_sec = mi->mi_mtime_sec;
	st->hs_mtime_nsec = mi->mi_mtime_nsec;
	st->hs_ctime_sec = mi->mi_ctime_sec;
	st->hs_ctime_nsec = mi->mi_ctime_nsec;
}

static int mh_lock_two(struct sx_hinode *ip1, struct sx_hinode *ip2)
{
	struct mh_inode *a = MI(ip1), *b = MI(ip2);
	struct mh_host *mh = mh_of(a);

	if (mh->mh_fail_lock && --mh->mh_fail_lock == 0)
		return mh->mh_fail_error;	/* as XFS's -EINTR: nothing held */
	if (a->mi_ino > b->mi_ino) {
		struct mh_inode *t = a;

		a = b;
		b = t;
	}
	if (a->mi_locked || b->mi_locked)
		mh_die("lock_two: already locked (would deadlock)");
	a->mi_locked = 1;
	b->mi_locked = 1;
	return 0;
}

static void mh_unlock_two(struct sx_hinode *ip1, struct sx_hinode *ip2)
{
	if (!MI(ip1)->mi_locked || !MI(ip2)->mi_locked)
		mh_die("unlock_two: not locked");
	MI(ip1)->mi_locked = 0;
	MI(ip2)->mi_locked = 0;
}

static void mh_assert_locked(struct mh_inode *mi)
{
	if (!mi->mi_locked)
		mh_die("inode changed without its lock");
}

static int mh_flush_range(struct sx_hinode *ip, s64 off, s64 len)
{
	struct mh_host *mh = mh_of(MI(ip));

	mh_assert_locked(MI(ip));
	if (off < 0 || len <= 0)
		mh_die("flush of a bad range");
	mh->mh_nflush++;
	if (mh->mh_fail_flush && --mh->mh_fail_flush == 0)
		return mh->mh_fail_error;
	return 0;
}

static int mh_read_mapping(struct sx_hinode *ip, u64 startoff, u64 blockcount,
			   struct sx_hmap *map)
{
	struct mh_inode *mi = MI(ip);
	u32 i = mh_ext_search(mi, startoff);

	memset(map, 0, sizeof(*map));
	map->hm_startoff = startoff;
	if (i < mi->mi_next && mi->mi_ext[i].me_off <= startoff) {
		const struct mh_ext *e = &mi->mi_ext[i];

		map->hm_startblock = e->me_blk + (startoff - e->me_off);
		map->hm_blockcount = mh_min(e->me_off + e->me_len - startoff, blockcount);
		map->hm_flags = e->me_unwritten ? SX_HMAP_UNWRITTEN : 0;
	} else {
		map->hm_startblock = SX_HOLESTARTBLOCK;
		map->hm_blockcount = i < mi->mi_next ?
				     mh_min(mi->mi_ext[i].me_off - startoff, blockcount) :
				     blockcount;
	}
	return 0;
}

/*
 * Several mappings from @startoff on, each as mh_read_mapping gives it,
 * within [@startoff, +@blockcount): at most @nmaps and mh_read_ahead.
 */
static int mh_read_mappings(struct sx_htrans *tp, struct sx_hinode *ip, u64 startoff,
			    u64 blockcount, struct sx_hmap *maps, u32 nmaps)
{
	struct mh_host *mh = mh_of(MI(ip));
	u64 end = startoff + blockcount;
	u32 n = 0;

	if (tp)
		mh_assert_locked(MI(ip));
	nmaps = mh_min(nmaps, mh->mh_read_ahead);
	while (startoff < end && n < nmaps) {
		mh_read_mapping(ip, startoff, end - startoff, &maps[n]);
		startoff += maps[n].hm_blockcount;
		n++;
	}
	mh->mh_nreads++;
	return n ? (int)n : -EINVAL;
}

static u64 mh_max_extents(struct sx_hinode *ip)
{
	return mh_of(MI(ip))->mh_max_extents;
}

/* Would @mi's owner pass its hard limit by gaining @gain blocks? */
static bool mh_over_quota(const struct mh_inode *mi, s64 gain)
{
	return mi->mi_qlimit && gain > 0 && mi->mi_qused + gain > mi->mi_qlimit;
}

/*
 * Reserve a swap's quota as the seed does: each file's owner must be able
 * to hold what the file gains, before anything changes.  A whole-fork swap
 * moves the whole block counts.
 */
static int mh_reserve_quota(const struct sx_hres *res)
{
	struct mh_inode *a = MI(res->hr_ip1), *b = MI(res->hr_ip2);
	s64 gain = (s64)res->hr_blocks2 - (s64)res->hr_blocks1;

	if (a == b)
		return 0;
	if (res->hr_algo == SX_SWAP_FORKS)
		gain = b->mi_nblocks - a->mi_nblocks;
	if (mh_over_quota(a, gain) || mh_over_quota(b, -gain))
		return -EDQUOT;
	return 0;
}

static int mh_trans_alloc(struct sx_host *h, const struct sx_hres *res, struct sx_htrans **tpp)
{
	struct mh_host *mh = MH(h);
	int error;

	if (mh->mh_shutdown)
		return -EIO;
	if (!res || res->hr_algo < SX_SWAP_ATOMIC || res->hr_algo > SX_SWAP_FORKS ||
	    res->hr_nrext1 > mh->mh_max_extents || res->hr_nrext2 > mh->mh_max_extents ||
	    !res->hr_ip1 || !res->hr_ip2 ||
	    (res->hr_algo == SX_SWAP_FORKS && (res->hr_blocks1 || res->hr_blocks2)))
		mh_die("bad reservation");
	mh->mh_last_res = *res;
	mh->mh_nalloc++;
	if (mh->mh_fail_alloc && --mh->mh_fail_alloc == 0)
		return mh->mh_fail_error;
	error = mh_reserve_quota(res);
	if (error)
		return error;
	*tpp = (struct sx_htrans *)mh_trans_new(mh);
	return 0;
}

static int mh_trans_roll(struct sx_htrans **tpp)
{
	return mh_run(MT(*tpp));
}

static int mh_trans_commit(struct sx_htrans *tp)
{
	int error = mh_run(MT(tp));

	mh_trans_free(MT(tp));
	return error;
}

static void mh_trans_cancel(struct sx_htrans *htp)
{
	struct mh_trans *tp = MT(htp);

	if (tp->mt_nops || tp->mt_work)
		mh_shut(tp->mt_mh);	/* changes made in memory cannot be undone */
	mh_trans_free(tp);
}

static int mh_queue(struct sx_htrans *htp, struct sx_hinode *ip, const struct sx_hmap *map,
		    bool is_map)
{
	struct mh_trans *tp = MT(htp);
	struct mh_inode *mi = MI(ip);
	struct mh_work *w;

	mh_assert_locked(mi);
	if (map->hm_startblock == SX_HOLESTARTBLOCK || map->hm_blockcount == 0)
		mh_die("queued map/unmap of a hole");
	w = mh_xzalloc(sizeof(*w));
	w->mw_kind = MH_IT_BUI;
	w->mw_bui.mb_ino = mi->mi_ino;
	w->mw_bui.mb_gen = mi->mi_gen;
	w->mw_bui.mb_map = is_map;
	w->mw_bui.mb_m = *map;
	*mh_work_tail(&tp->mt_work) = w;
	return 0;
}

static int mh_queue_unmap(struct sx_htrans *tp, struct sx_hinode *ip, const struct sx_hmap *map)
{
	return mh_queue(tp, ip, map, false);
}

static int mh_queue_map(struct sx_htrans *tp, struct sx_hinode *ip, const struct sx_hmap *map)
{
	return mh_queue(tp, ip, map, true);
}

/*
 * SX_HOST_DIRECT_MAP: apply a map or unmap in the step's own transaction
 * and record it there (replay applies it as it applies a finished BUI).
 */
static int mh_now(struct sx_htrans *htp, struct sx_hinode *ip, const struct sx_hmap *map,
		  bool is_map)
{
	struct mh_trans *tp = MT(htp);
	struct mh_inode *mi = MI(ip);
	struct mh_host *mh = mh_of(mi);
	struct mh_op *op;
	int error;

	mh_assert_locked(mi);
	if (map->hm_startblock == SX_HOLESTARTBLOCK || map->hm_blockcount == 0)
		mh_die("direct map/unmap of a hole");
	if (!tp->mt_pairs)
		mh_die("direct map/unmap without ho_step_room");
	if (mh->mh_fail_apply && --mh->mh_fail_apply == 0)
		return mh->mh_fail_error;
	error = mh_apply_work(mh, mi, map, is_map);
	if (error)
		return error;
	op = mh_tp_op(tp, is_map ? MH_OP_MAP : MH_OP_UNMAP);
	op->mo_ino = mi->mi_ino;
	op->mo_map = *map;
	mh->mh_ndirect++;
	return 0;
}

static int mh_unmap_now(struct sx_htrans *tp, struct sx_hinode *ip, const struct sx_hmap *map)
{
	return mh_now(tp, ip, map, false);
}

static int mh_map_now(struct sx_htrans *tp, struct sx_hinode *ip, const struct sx_hmap *map)
{
	return mh_now(tp, ip, map, true);
}

/* Reads see the step's direct changes: they are applied as they are made. */
static int mh_read_mapping_tp(struct sx_htrans *tp, struct sx_hinode *ip, u64 startoff,
			      u64 blockcount, struct sx_hmap *map)
{
	mh_assert_locked(MI(ip));
	return mh_read_mapping(ip, startoff, blockcount, map);
}

/* Room for mh_step_pairs exchanges per transaction (0: none, all queued). */
static bool mh_step_room(struct sx_htrans *htp, struct sx_hinode *ip1, struct sx_hinode *ip2)
{
	struct mh_trans *tp = MT(htp);

	mh_assert_locked(MI(ip1));
	mh_assert_locked(MI(ip2));
	if (tp->mt_pairs >= tp->mt_mh->mh_step_pairs)
		return false;
	tp->mt_pairs++;
	return true;
}

static int mh_set_size(struct sx_htrans *tp, struct sx_hinode *ip, s64 size)
{
	mh_assert_locked(MI(ip));
	if (size < 0)
		mh_die("negative size");
	MI(ip)->mi_size = size;
	mh_log_core(MT(tp), MI(ip));
	return 0;
}

/* Quota always moves here; the block count only if map/unmap leave it. */
static int mh_mod_nblocks(struct sx_htrans *tp, struct sx_hinode *ip, s64 delta)
{
	struct mh_inode *mi = MI(ip);

	mh_assert_locked(mi);
	if (delta == 0)
		mh_die("mod_nblocks by zero");
	mi->mi_qused += delta;
	if (!(mh_of(mi)->mh_host.h_features & SX_HOST_MAP_NBLOCKS))
		mi->mi_nblocks += delta;
	mh_log_core(MT(tp), mi);
	return 0;
}

static int mh_set_reflink(struct sx_htrans *tp, struct sx_hinode *ip, bool on)
{
	mh_assert_locked(MI(ip));
	if (on)
		MI(ip)->mi_flags |= SX_HSTAT_REFLINK;
	else
		MI(ip)->mi_flags &= ~SX_HSTAT_REFLINK;
	mh_log_core(MT(tp), MI(ip));
	return 0;
}

static int mh_touch(struct sx_htrans *tp, struct sx_hinode *ip)
{
	struct mh_inode *mi = MI(ip);
	struct mh_host *mh = mh_of(mi);

	mh_assert_locked(mi);
	mh->mh_clock_ns += 1000000007ull;
	mi->mi_mtime_sec = mi->mi_ctime_sec = (s64)(mh->mh_clock_ns / 1000000000ull);
	mi->mi_mtime_nsec = mi->mi_ctime_nsec = (u32)(mh->mh_clock_ns % 1000000000ull);
	mh_log_core(MT(tp), mi);
	return 0;
}

static int mh_defer_swap(struct sx_htrans *htp, const struct sx_swapext_intent *si)
{
	struct mh_trans *tp = MT(htp);
	struct mh_work *w = mh_xzalloc(sizeof(*w));

	w->mw_kind = MH_IT_SXI;
	w->mw_si = *si;
	*mh_work_tail(&tp->mt_work) = w;
	return 0;
}

/* Exchange the extent lists of two inodes (not the attributes). */
static void mh_swap_ext(struct mh_inode *a, struct mh_inode *b)
{
	static struct mh_ext tmp[MH_MAX_EXT];
	u32 n = a->mi_next;

	memcpy(tmp, a->mi_ext, sizeof(tmp));
	memcpy(a->mi_ext, b->mi_ext, sizeof(tmp));
	memcpy(b->mi_ext, tmp, sizeof(tmp));
	a->mi_next = b->mi_next;
	b->mi_next = n;
}

static int mh_swap_forks(struct sx_htrans *htp, struct sx_hinode *ip1, struct sx_hinode *ip2)
{
	struct mh_trans *tp = MT(htp);
	struct mh_inode *a = MI(ip1), *b = MI(ip2);
	struct mh_op *op;
	s64 n;

	mh_assert_locked(a);
	mh_assert_locked(b);
	mh_swap_ext(a, b);
	n = a->mi_nblocks;
	a->mi_nblocks = b->mi_nblocks;
	b->mi_nblocks = n;
	n = a->mi_qused;
	a->mi_qused = b->mi_qused;
	b->mi_qused = n;
	op = mh_tp_op(tp, MH_OP_FORKS);
	op->mo_ino = a->mi_ino;
	op->mo_ino2 = b->mi_ino;
	mh_log_core(tp, a);
	mh_log_core(tp, b);
	return 0;
}

static int mh_iget(struct sx_host *h, u64 ino, u64 gen, struct sx_hinode **ipp)
{
	struct mh_inode *mi = mh_find(MH(h), ino);

	if (!mi || mi->mi_gen != gen)
		return -ENOENT;
	mi->mi_refs++;
	*ipp = &mi->mi_hi;
	return 0;
}

static void mh_irele(struct sx_hinode *ip)
{
	if (MI(ip)->mi_refs <= 0)
		mh_die("irele without iget");
	MI(ip)->mi_refs--;
}

static const struct sx_host_ops mh_host_ops = {
	.ho_stat		= mh_stat,
	.ho_lock_two		= mh_lock_two,
	.ho_unlock_two		= mh_unlock_two,
	.ho_flush_range		= mh_flush_range,
	.ho_read_mapping	= mh_read_mapping,
	.ho_read_mappings	= mh_read_mappings,
	.ho_max_extents		= mh_max_extents,
	.ho_trans_alloc		= mh_trans_alloc,
	.ho_trans_roll		= mh_trans_roll,
	.ho_trans_commit	= mh_trans_commit,
	.ho_trans_cancel	= mh_trans_cancel,
	.ho_queue_unmap		= mh_queue_unmap,
	.ho_queue_map		= mh_queue_map,
	.ho_set_size		= mh_set_size,
	.ho_mod_nblocks		= mh_mod_nblocks,
	.ho_set_reflink		= mh_set_reflink,
	.ho_touch		= mh_touch,
	.ho_defer_swap		= mh_defer_swap,
	.ho_swap_forks		= mh_swap_forks,
	.ho_read_mapping_tp	= mh_read_mapping_tp,
	.ho_unmap_now		= mh_unmap_now,
	.ho_map_now		= mh_map_now,
	.ho_step_room		= mh_step_room,
	.ho_iget		= mh_iget,
	.ho_irele		= mh_irele,
};

/* ------------------------------------------------------------ setup */

void mh_init(struct mh_host *mh, u32 blksize, u32 features)
{
	memset(mh, 0, sizeof(*mh));
	mh->mh_ops = mh_host_ops;
	mh->mh_host.h_ops = &mh->mh_ops;
	mh->mh_host.h_name = "memhost";
	mh->mh_host.h_features = features;
	mh->mh_host.h_maxbytes = (s64)1 << 50;
	mh->mh_blksize = blksize;
	mh->mh_max_extents = MH_MAX_EXT;
	mh->mh_step_pairs = MH_STEP_PAIRS;
	mh->mh_read_ahead = MH_READ_AHEAD;
	mh->mh_next_blk = 1000;
	mh->mh_clock_ns = 1700000000ull * 1000000000ull;
}

static void mh_free_log(struct mh_host *mh, u32 from)
{
	u32 i;

	for (i = from; i < mh->mh_nrec; i++)
		free(mh->mh_log[i].mr_ops);
	mh->mh_nrec = from;
}

void mh_destroy(struct mh_host *mh)
{
	mh_free_log(mh, 0);
	free(mh->mh_log);
	free(mh->mh_base);
	mh->mh_log = NULL;
	mh->mh_base = NULL;
}

struct mh_inode *mh_create(struct mh_host *mh, s64 size)
{
	u32 i;

	for (i = 0; i < MH_NINODES; i++) {
		struct mh_inode *mi = &mh->mh_inodes[i];

		if (mi->mi_used)
			continue;
		memset(mi, 0, sizeof(*mi));
		mi->mi_hi.hi_host = &mh->mh_host;
		mi->mi_used = true;
		mi->mi_ino = MH_FIRST_INO + i;
		mi->mi_gen = 0x1000 + i * 7;
		mi->mi_size = size;
		mi->mi_mode = SX_HS_IFREG | 0644;
		mi->mi_mtime_sec = 1600000000 + i;
		mi->mi_mtime_nsec = 123456789;
		mi->mi_ctime_sec = 1600000100 + i;
		mi->mi_ctime_nsec = 987654321;
		return mi;
	}
	mh_die("out of inodes");
	return NULL;
}

u64 mh_alloc(struct mh_host *mh, u64 len)
{
	u64 b = mh->mh_next_blk;

	mh->mh_next_blk += len;
	if (mh->mh_next_blk > MH_DEV_BLOCKS)
		mh_die("device full");
	return b;
}

void mh_add_mapping(struct mh_inode *mi, u64 off, u64 blk, u64 len, bool unwritten)
{
	struct sx_hmap m = {
		.hm_startoff = off, .hm_blockcount = len, .hm_startblock = blk,
		.hm_flags = unwritten ? SX_HMAP_UNWRITTEN : 0,
	};

	if (mh_apply_map(mi, &m))
		mh_die("setup mapping over a mapping");
	mi->mi_nblocks += (s64)len;
	mi->mi_qused += (s64)len;
}

void mh_add_extent(struct mh_inode *mi, u64 off, u64 len, bool unwritten)
{
	mh_add_mapping(mi, off, mh_alloc(mh_of(mi), len), len, unwritten);
}

void mh_cut_at(struct mh_inode *mi, u64 end)
{
	while (mi->mi_next) {
		struct mh_ext *e = &mi->mi_ext[mi->mi_next - 1];
		u64 drop;

		if (e->me_off + e->me_len <= end)
			break;
		drop = e->me_off >= end ? e->me_len : e->me_off + e->me_len - end;
		mi->mi_nblocks -= (s64)drop;
		mi->mi_qused -= (s64)drop;
		e->me_len -= drop;
		if (e->me_len == 0)
			mi->mi_next--;
	}
}

struct sx_hfile mh_hfile(struct mh_inode *mi, u32 mode)
{
	struct sx_hfile f;

	memset(&f, 0, sizeof(f));
	f.hf_ip = &mi->mi_hi;
	f.hf_mode = mode;
	return f;
}

u64 mh_block_at(const struct mh_inode *mi, u64 off, bool *unwritten)
{
	u32 i = mh_ext_search(mi, off);

	if (unwritten)
		*unwritten = false;
	if (i >= mi->mi_next || mi->mi_ext[i].me_off > off)
		return SX_HOLESTARTBLOCK;
	if (unwritten)
		*unwritten = mi->mi_ext[i].me_unwritten;
	return mi->mi_ext[i].me_blk + (off - mi->mi_ext[i].me_off);
}

/* ------------------------------------------------------------ crash and recovery */

void mh_checkpoint(struct mh_host *mh)
{
	free(mh->mh_base);
	mh->mh_base = mh_snapshot(mh);
	mh_free_log(mh, 0);
}

/* Deep copy of @n records. */
static struct mh_rec *mh_recs_copy(const struct mh_rec *from, u32 n)
{
	struct mh_rec *r = mh_xzalloc((n + 1) * sizeof(*r));
	u32 i;

	for (i = 0; i < n; i++) {
		r[i].mr_nops = from[i].mr_nops;
		r[i].mr_ops = mh_xzalloc(from[i].mr_nops * sizeof(struct mh_op));
		memcpy(r[i].mr_ops, from[i].mr_ops, from[i].mr_nops * sizeof(struct mh_op));
	}
	return r;
}

struct mh_tape *mh_tape_save(const struct mh_host *mh)
{
	struct mh_tape *t = mh_xzalloc(sizeof(*t));

	t->mt_nrec = mh->mh_nrec;
	t->mt_recs = mh_recs_copy(mh->mh_log, mh->mh_nrec);
	return t;
}

void mh_tape_load(struct mh_host *mh, const struct mh_tape *t)
{
	mh_free_log(mh, 0);
	free(mh->mh_log);
	mh->mh_log = mh_recs_copy(t->mt_recs, t->mt_nrec);
	mh->mh_nrec = t->mt_nrec;
	mh->mh_caprec = t->mt_nrec + 1;
}

void mh_tape_free(struct mh_tape *t)
{
	u32 i;

	if (!t)
		return;
	for (i = 0; i < t->mt_nrec; i++)
		free(t->mt_recs[i].mr_ops);
	free(t->mt_recs);
	free(t);
}

/* Replay one logged op onto the state. */
static void mh_replay_op(struct mh_host *mh, const struct mh_op *op)
{
	struct mh_inode *mi = mh_find(mh, op->mo_ino);

	switch (op->mo_type) {
	case MH_OP_INTENT:
	case MH_OP_DONE:
		return;
	case MH_OP_MAP:
	case MH_OP_UNMAP:
		if (!mi || mh_apply_work(mh, mi, &op->mo_map, op->mo_type == MH_OP_MAP))
			mh_die("replay: map/unmap failed");
		return;
	case MH_OP_CORE:
		if (!mi)
			mh_die("replay: no inode");
		mh_core_set(mi, &op->mo_core);
		return;
	case MH_OP_FORKS:
		if (!mi || !mh_find(mh, op->mo_ino2))
			mh_die("replay: no inode");
		mh_swap_ext(mi, mh_find(mh, op->mo_ino2));
		return;
	default:
		mh_die("replay: unknown op");
	}
}

void mh_crash(struct mh_host *mh, u32 nrec)
{
	u32 r, i;

	if (!mh->mh_base)
		mh_die("crash without a checkpoint");
	if (nrec > mh->mh_nrec)
		mh_die("crash: cut past the log's end");
	mh_free_log(mh, nrec);
	memcpy(mh->mh_inodes, mh->mh_base, sizeof(mh->mh_inodes));
	for (r = 0; r < mh->mh_nrec; r++)
		for (i = 0; i < mh->mh_log[r].mr_nops; i++)
			mh_replay_op(mh, &mh->mh_log[r].mr_ops[i]);
	for (i = 0; i < MH_NINODES; i++) {
		mh->mh_inodes[i].mi_locked = 0;
		mh->mh_inodes[i].mi_refs = 0;
	}
	mh->mh_shutdown = false;
	mh->mh_fail_apply = mh->mh_fail_flush = mh->mh_fail_alloc = mh->mh_fail_lock = 0;
}

/* True if the log holds a done for intent @id. */
static bool mh_has_done(const struct mh_host *mh, u64 id)
{
	u32 r, i;

	for (r = 0; r < mh->mh_nrec; r++)
		for (i = 0; i < mh->mh_log[r].mr_nops; i++)
			if (mh->mh_log[r].mr_ops[i].mo_type == MH_OP_DONE &&
			    mh->mh_log[r].mr_ops[i].mo_id == id)
				return true;
	return false;
}

/* Copy the unfinished intents, in log order; their number. */
static u32 mh_collect(const struct mh_host *mh, struct mh_op **opsp)
{
	struct mh_op *ops = NULL;
	u32 r, i, n = 0;

	for (r = 0; r < mh->mh_nrec; r++)
		for (i = 0; i < mh->mh_log[r].mr_nops; i++) {
			const struct mh_op *op = &mh->mh_log[r].mr_ops[i];

			if (op->mo_type != MH_OP_INTENT || mh_has_done(mh, op->mo_id))
				continue;
			ops = realloc(ops, (n + 1) * sizeof(*ops));
			if (!ops)
				mh_die("out of memory");
			ops[n++] = *op;
		}
	*opsp = ops;
	return n;
}

u32 mh_unfinished(const struct mh_host *mh)
{
	struct mh_op *ops;
	u32 n = mh_collect(mh, &ops);

	free(ops);
	return n;
}

struct sx_dlog_sxi *mh_unfinished_sxi(struct mh_host *mh)
{
	u32 r, i;

	for (r = 0; r < mh->mh_nrec; r++)
		for (i = 0; i < mh->mh_log[r].mr_nops; i++) {
			struct mh_op *op = &mh->mh_log[r].mr_ops[i];

			if (op->mo_type == MH_OP_INTENT && op->mo_itype == MH_IT_SXI &&
			    !mh_has_done(mh, op->mo_id))
				return &op->mo_p.sxi;
		}
	return NULL;
}

/*
 * What a host's recovery does for a decoded SXI before its chain runs:
 * reserve what the rest of the chain needs (kept in mh_last_res for the
 * tests), and with SX_HOST_RECOVERY_LOCKS lock both inodes for the whole
 * chain (*@l1, *@l2: what the caller unlocks after it).  On error the item
 * is cancelled.
 */
static int mh_recover_prep(struct mh_host *mh, struct sx_swapext_intent *si,
			   struct sx_hinode **l1, struct sx_hinode **l2)
{
	struct sx_hres res;
	int error;

	error = sx_swapext_item_estimate(si, &res);
	if (!error && (res.hr_nrext1 > mh->mh_max_extents || res.hr_nrext2 > mh->mh_max_extents))
		mh_die("recovered estimate past the fork limit");
	if (!error && (mh->mh_host.h_features & SX_HOST_RECOVERY_LOCKS))
		error = mh_lock_two(si->si_ip1, si->si_ip2);
	if (error) {
		sx_swapext_item_cancel(si);
		return error;
	}
	mh->mh_last_res = res;
	if (mh->mh_host.h_features & SX_HOST_RECOVERY_LOCKS) {
		*l1 = si->si_ip1;
		*l2 = si->si_ip2;
	}
	return 0;
}

int mh_recover(struct mh_host *mh)
{
	struct sx_hinode *locked[2] = { NULL, NULL };
	struct mh_op *ops;
	u32 n = mh_collect(mh, &ops), i;
	int error = 0;

	mh->mh_recovering = true;
	for (i = 0; i < n && !error; i++) {
		struct mh_trans *tp = mh_trans_new(mh);
		struct mh_work *w = mh_xzalloc(sizeof(*w));

		/* each intent is recovered once: its done is the chain's first op */
		w->mw_id = ops[i].mo_id;
		w->mw_kind = ops[i].mo_itype;
		if (w->mw_kind == MH_IT_BUI) {
			w->mw_bui = ops[i].mo_p.bui;
		} else {
			error = sx_swapext_sxi_check(&mh->mh_host, &ops[i].mo_p.sxi, ops[i].mo_len);
			if (!error)
				error = sx_swapext_item_decode(&mh->mh_host,
							       &ops[i].mo_p.sxi.sxi_ext,
							       &w->mw_si);
			if (!error)
				error = mh_recover_prep(mh, &w->mw_si, &locked[0], &locked[1]);
			if (error) {
				free(w);
				mh_trans_free(tp);
				break;
			}
		}
		tp->mt_work = w;
		error = mh_run(tp);
		mh_trans_free(tp);
		if (locked[0])
			mh_unlock_two(locked[0], locked[1]);
		locked[0] = locked[1] = NULL;
		mh->mh_recovered_intents++;
	}
	mh->mh_recovering = false;
	free(ops);
	return error;
}

u32 mh_rec_maps(const struct mh_host *mh, u32 rec)
{
	u32 j, maps = 0;

	for (j = 0; j < mh->mh_log[rec].mr_nops; j++)
		maps += mh->mh_log[rec].mr_ops[j].mo_type == MH_OP_MAP;
	return maps;
}

/* ------------------------------------------------------------ checks */

int mh_check(const struct mh_host *mh, u32 flags)
{
	bool allow_shared = flags & MH_CHECK_SHARED, eof = flags & MH_CHECK_EOF;
	u8 *used = mh_xzalloc(mh->mh_next_blk + 1);
	int ret = 0;
	u32 i, j;

	for (i = 0; i < MH_NINODES && !ret; i++) {
		const struct mh_inode *mi = &mh->mh_inodes[i];
		u64 sum = 0, maxblk = mh_howmany((u64)mi->mi_size, mh->mh_blksize);

		if (!mi->mi_used)
			continue;
		for (j = 0; j < mi->mi_next && !ret; j++) {
			const struct mh_ext *e = &mi->mi_ext[j];
			u64 b;

			if (e->me_len == 0)
				ret = -1;
			else if (j > 0 && mi->mi_ext[j - 1].me_off + mi->mi_ext[j - 1].me_len >
				 e->me_off)
				ret = -2;
			else if (eof && e->me_off + e->me_len > maxblk)
				ret = -3;
			else if (e->me_blk + e->me_len > mh->mh_next_blk)
				ret = -4;
			for (b = 0; !ret && !allow_shared && b < e->me_len; b++)
				if (used[e->me_blk + b]++)
					ret = -5;
			sum += e->me_len;
		}
		if (!ret && !(flags & MH_CHECK_NO_NBLOCKS) && (s64)sum != mi->mi_nblocks)
			ret = -6;
		if (!ret && !(flags & MH_CHECK_NO_NBLOCKS) && mi->mi_qused != mi->mi_nblocks)
			ret = -7;
		if (ret)
			fprintf(stderr, "memhost: check of inode %llu failed: %d\n",
				(unsigned long long)mi->mi_ino, ret);
	}
	free(used);
	return ret;
}

struct mh_inode *mh_snapshot(const struct mh_host *mh)
{
	struct mh_inode *s = mh_xzalloc(sizeof(mh->mh_inodes));

	memcpy(s, mh->mh_inodes, sizeof(mh->mh_inodes));
	return s;
}

static u64 mh_end(const struct mh_inode *mi)
{
	if (!mi->mi_next)
		return 0;
	return mi->mi_ext[mi->mi_next - 1].me_off + mi->mi_ext[mi->mi_next - 1].me_len;
}

bool mh_same(const struct mh_inode *a, const struct mh_inode *b, u64 ino, bool sizes)
{
	const struct mh_inode *x = &a[ino - MH_FIRST_INO], *y = &b[ino - MH_FIRST_INO];
	u64 end = mh_max(mh_end(x), mh_end(y)), off;

	if (sizes && x->mi_size != y->mi_size)
		return false;
	if (x->mi_nblocks != y->mi_nblocks || x->mi_qused != y->mi_qused)
		return false;
	for (off = 0; off < end; off++) {
		bool ux, uy;

		if (mh_block_at(x, off, &ux) != mh_block_at(y, off, &uy) || ux != uy)
			return false;
	}
	return true;
}

bool mh_same_all(const struct mh_inode *a, const struct mh_inode *b)
{
	u32 i;

	for (i = 0; i < MH_NINODES; i++) {
		if (a[i].mi_used != b[i].mi_used)
			return false;
		if (!a[i].mi_used)
			continue;
		if (!mh_same(a, b, MH_FIRST_INO + i, true) || a[i].mi_flags != b[i].mi_flags ||
		    a[i].mi_mtime_sec != b[i].mi_mtime_sec ||
		    a[i].mi_mtime_nsec != b[i].mi_mtime_nsec ||
		    a[i].mi_ctime_sec != b[i].mi_ctime_sec ||
		    a[i].mi_ctime_nsec != b[i].mi_ctime_nsec)
			return false;
	}
	return true;
}
