// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The store as a host of the swap core (include/swapext/host.h).
 *
 * The mount embeds struct sx_host (m_host) and each in-core inode struct
 * sx_hinode (i_hinode); a host transaction is the store's struct sx_trans
 * itself (the deferred-work manager hands its own transactions to the SXI
 * callbacks, so no wrapper could survive its rolls).  The swap's map and
 * unmap halves are SX_BMI_SWAP BUIs: blocks change owner without a
 * refcount change, and the block counts move with ho_mod_nblocks in the
 * step's own transaction (so no SX_HOST_MAP_NBLOCKS; the store has no
 * quota, so the reservation's per-file block totals go unused).
 *
 * Locking.  ho_lock_two takes both iolocks exclusively (no writer,
 * truncate, clone or other swap can change either file) and pairs the two
 * inodes.  The ilocks follow the data path's rule: taken after the
 * transaction is allocated (a reservation may wait for other transactions
 * to commit, and those may want an ilock), so the first change a swap
 * makes in a transaction takes both ilocks, in inode-number order, and
 * holds them across the chain's rolls until ho_unlock_two: the BUI steps
 * of the chain expect their caller to hold the ilock.  Reads outside a
 * transaction (the estimate) take the ilock for each lookup.  A recovered
 * SXI step (the core locks it per step) does the same; its BUIs, finished
 * in later transactions of recovery, lock their inode themselves.
 *
 * ho_swap_forks is NULL: the store always has deferred map/unmap
 * (SX_HOST_DEFER_BMAP), so the core's algorithm choice never reaches the
 * whole-fork swap (a non-atomic request takes the step algorithm), and a
 * fork exchange would have to rewrite the owner of every B+tree block.
 */
#include "util.h"
#include "swap_host.h"
#include "inode.h"
#include "bmap.h"
#include "btree.h"
#include "fork.h"
#include "trans.h"
#include "defer.h"
#include "log.h"
#include "reflink.h"
#include "alloc.h"
#include "file.h"
#include "mount.h"
#include "dev.h"
#include "item_bmap.h"
#include "file_io.h"
#include <swapext/swapext.h>

#define SX_NSEC_PER_SEC	1000000000LL

/* The store inode of a host inode. */
static inline struct sx_inode *sx_shost_ip(struct sx_hinode *hi)
{
	return sx_container_of(hi, struct sx_inode, i_hinode);
}

/* The store transaction of a host transaction. */
static inline struct sx_trans *sx_shost_tp(struct sx_htrans *tp)
{
	return (struct sx_trans *)tp;
}

/* The mount of a host. */
static inline struct sx_mount *sx_shost_mp(struct sx_host *h)
{
	return sx_container_of(h, struct sx_mount, m_host);
}

/* ------------------------------------------------------------- inodes */

/* Split a time in nanoseconds into seconds and nanoseconds (0..999999999). */
static void sx_shost_time(s64 ns, s64 *sec, u32 *nsec)
{
	s64 s = ns / SX_NSEC_PER_SEC, r = ns % SX_NSEC_PER_SEC;

	if (r < 0) {
		r += SX_NSEC_PER_SEC;
		s--;
	}
	*sec = s;
	*nsec = (u32)r;
}

/*
 * What the core reads of an inode, under the ilock: the core stats the
 * files before ho_lock_two too, while writers change them, and under it
 * a link, unlink or flag change still sets ctime and flags with the ilock
 * alone.  Inside a swap's transactions the swap holds the ilock already.
 */
static void sx_shost_stat(struct sx_hinode *hi, struct sx_hstat *st)
{
	struct sx_inode *ip = sx_shost_ip(hi);
	bool lock = !sx_mutex_is_held(&ip->i_ilock);
	u32 f;

	if (lock)
		sx_ilock(ip, SX_ILOCK_EXCL);
	f = ip->i_flags;

	st->hs_ino = ip->i_ino;
	st->hs_gen = ip->i_gen;
	st->hs_size = (s64)ip->i_size;
	st->hs_mode = ip->i_mode;
	st->hs_flags = ((f & SX_DIFLAG_IMMUTABLE) ? SX_HSTAT_IMMUTABLE : 0) |
		       ((f & SX_DIFLAG_APPEND) ? SX_HSTAT_APPEND : 0) |
		       ((f & SX_DIFLAG_SWAPFILE) ? SX_HSTAT_SWAPFILE : 0) |
		       ((f & SX_DIFLAG_REFLINK) ? SX_HSTAT_REFLINK : 0);
	st->hs_blksize = ip->i_mp->m_bsize;
	st->hs_nextents = sx_bmap_count(ip);
	sx_shost_time(ip->i_mtime, &st->hs_mtime_sec, &st->hs_mtime_nsec);
	sx_shost_time(ip->i_ctime, &st->hs_ctime_sec, &st->hs_ctime_nsec);
	if (lock)
		sx_iunlock(ip, SX_ILOCK_EXCL);
}

/*
 * Lock both inodes' iolocks and pair them (the ilocks come with the first
 * change).  The store's locks wait without interruption: this never fails.
 */
static int sx_shost_lock_two(struct sx_hinode *h1, struct sx_hinode *h2)
{
	struct sx_inode *a = sx_shost_ip(h1), *b = sx_shost_ip(h2);

	sx_ilock_two(a, b, SX_IOLOCK_EXCL);
	ASSERT(!a->i_swap_peer && !b->i_swap_peer);
	a->i_swap_peer = b;
	b->i_swap_peer = a;
	return 0;
}

static void sx_shost_cur_free(struct sx_inode *ip);

/* Undo sx_shost_lock_two() and drop the ilocks if a change took them. */
static void sx_shost_unlock_two(struct sx_hinode *h1, struct sx_hinode *h2)
{
	struct sx_inode *a = sx_shost_ip(h1), *b = sx_shost_ip(h2);

	if (a->i_swap_ilocked) {
		ASSERT(b->i_swap_ilocked);
		a->i_swap_ilocked = false;
		b->i_swap_ilocked = false;
		sx_iunlock_two(a, b, SX_ILOCK_EXCL);
	}
	a->i_swap_peer = NULL;
	b->i_swap_peer = NULL;
	sx_shost_cur_free(a);
	sx_shost_cur_free(b);
	sx_iunlock_two(a, b, SX_IOLOCK_EXCL);
}

/*
 * Before the swap's first change in a transaction: take both ilocks (the
 * transaction is allocated by now), held until ho_unlock_two.
 */
static void sx_shost_join(struct sx_inode *ip)
{
	struct sx_inode *peer = ip->i_swap_peer;

	ASSERT(sx_rwsem_is_write_held(&ip->i_iolock));
	ASSERT(peer != NULL);
	if (ip->i_swap_ilocked)
		return;
	if (!peer)
		peer = ip;
	sx_ilock_two(ip, peer, SX_ILOCK_EXCL);
	ip->i_swap_ilocked = true;
	peer->i_swap_ilocked = true;
}

/*
 * Data is written synchronously and in place (file_io.c), under the iolock
 * the core holds: no write is in flight or cached, no allocation delayed.
 */
static int sx_shost_flush_range(struct sx_hinode *hi, s64 off, s64 len)
{
	return sx_is_shutdown(sx_shost_ip(hi)->i_mp) ? -EIO : 0;
}

/* Blocks a cut-short truncate left past EOF go before the swap (host.h). */
static int sx_shost_trim_eof(struct sx_hinode *hi)
{
	return sx_file_trim_eof(sx_shost_ip(hi));
}

/*
 * The mapping at file block @startoff, trimmed to [@startoff, +@blockcount),
 * read through @tp (NULL: no transaction).
 */
static int sx_shost_read_at(struct sx_trans *tp, struct sx_hinode *hi, u64 startoff,
			    u64 blockcount, struct sx_hmap *map)
{
	struct sx_inode *ip = sx_shost_ip(hi);
	struct sx_bmap_irec irec;
	bool lock = !ip->i_swap_ilocked, found;
	int error;

	if (lock)
		sx_ilock(ip, SX_ILOCK_EXCL);
	error = sx_bmap_next(tp, ip, startoff, &irec, &found);
	if (lock)
		sx_iunlock(ip, SX_ILOCK_EXCL);
	if (error)
		return error;
	memset(map, 0, sizeof(*map));
	map->hm_startoff = startoff;
	if (!found || irec.br_startoff > startoff) {
		/* a hole, up to the next mapping */
		map->hm_startblock = SX_HOLESTARTBLOCK;
		map->hm_blockcount = blockcount;
		if (found && irec.br_startoff - startoff < blockcount)
			map->hm_blockcount = irec.br_startoff - startoff;
		return 0;
	}
	map->hm_startblock = irec.br_startblock + (startoff - irec.br_startoff);
	map->hm_blockcount = sx_min(irec.br_startoff + irec.br_blockcount - startoff,
				    blockcount);
	if (irec.br_state & SX_BMAP_UNWRITTEN)
		map->hm_flags = SX_HMAP_UNWRITTEN;
	return 0;
}

/*
 * Records one ho_read_mappings call reads at most: one lookup of the fork
 * serves the core's read-ahead (core/swapext.c), and 32 records cost 768
 * bytes of a kernel stack.
 */
#define SX_SHOST_READ_RECS	32

/*
 * The mappings from file block @startoff on, holes included, within
 * [@startoff, +@blockcount): at most @nmaps, from one walk of the fork.
 */
static int sx_shost_read_mappings(struct sx_htrans *htp, struct sx_hinode *hi, u64 startoff,
				  u64 blockcount, struct sx_hmap *maps, u32 nmaps)
{
	struct sx_inode *ip = sx_shost_ip(hi);
	struct sx_bmap_irec irecs[SX_SHOST_READ_RECS];
	u32 want = sx_min(nmaps, (u32)SX_SHOST_READ_RECS), got, k = 0, n = 0;
	u64 off = startoff, end = startoff + blockcount;
	bool lock = !ip->i_swap_ilocked;
	int error;

	if (nmaps == 0 || blockcount == 0 || end < startoff)
		return -EINVAL;
	if (lock)
		sx_ilock(ip, SX_ILOCK_EXCL);
	error = sx_bmap_next_n(htp ? sx_shost_tp(htp) : NULL, ip, startoff, irecs, want, &got);
	if (lock)
		sx_iunlock(ip, SX_ILOCK_EXCL);
	if (error)
		return error;
	while (off < end && n < nmaps) {
		struct sx_hmap *m = &maps[n];
		const struct sx_bmap_irec *r = k < got ? &irecs[k] : NULL;

		if (r && r->br_startoff + r->br_blockcount <= off) {
			k++;
			continue;
		}
		/* past the last record read, more may follow: stop there */
		if (!r && got == want)
			break;
		memset(m, 0, sizeof(*m));
		m->hm_startoff = off;
		if (r && r->br_startoff <= off) {
			m->hm_startblock = r->br_startblock + (off - r->br_startoff);
			m->hm_blockcount = sx_min(r->br_startoff + r->br_blockcount, end) - off;
			if (r->br_state & SX_BMAP_UNWRITTEN)
				m->hm_flags = SX_HMAP_UNWRITTEN;
			k++;
		} else {
			/* a hole, up to the next mapping or the end */
			m->hm_startblock = SX_HOLESTARTBLOCK;
			m->hm_blockcount = (r ? sx_min(r->br_startoff, end) : end) - off;
		}
		off += m->hm_blockcount;
		n++;
	}
	return (int)n;
}

/* The mapping at file block @startoff, outside any transaction. */
static int sx_shost_read_mapping(struct sx_hinode *hi, u64 startoff, u64 blockcount,
				 struct sx_hmap *map)
{
	return sx_shost_read_at(NULL, hi, startoff, blockcount, map);
}

/*
 * The same in a direct step's transaction, which may hold the B+tree
 * blocks locked with its changes: read them through it.
 */
static int sx_shost_read_mapping_tp(struct sx_htrans *tp, struct sx_hinode *hi, u64 startoff,
				    u64 blockcount, struct sx_hmap *map)
{
	return sx_shost_read_at(sx_shost_tp(tp), hi, startoff, blockcount, map);
}

/* The most mappings a data fork can hold: a B+tree of the greatest height. */
static u64 sx_shost_max_extents(struct sx_hinode *hi)
{
	const struct sx_mount *mp = sx_shost_ip(hi)->i_mp;
	u64 cap = sx_btree_maxrecs(mp, &sx_bmbt_ops, true);
	u64 node = sx_btree_maxrecs(mp, &sx_bmbt_ops, false);
	u32 l;

	for (l = 1; l < SX_BTREE_MAXLEVELS; l++) {
		if (cap > ((u64)1 << 62) / node)
			return (u64)1 << 62;
		cap *= node;
	}
	return cap;
}

/* ------------------------------------------------------- transactions */

/*
 * Blocks a B+tree of @nrecs mappings may occupy at worst (every block half
 * full, as after splits); none while the records fit inline.
 */
static u64 sx_shost_bmbt_blocks(const struct sx_mount *mp, u64 nrecs)
{
	u64 leaf = sx_max(sx_btree_maxrecs(mp, &sx_bmbt_ops, true) / 2, 2u);
	u64 node = sx_max(sx_btree_maxrecs(mp, &sx_bmbt_ops, false) / 2, 2u);
	u64 n, total;

	if (nrecs <= sx_fork_inline_max(mp, &sx_bmap_fork_ops))
		return 0;
	n = sx_howmany(nrecs, leaf);
	total = n;
	while (n > 1) {
		n = sx_howmany(n, node);
		total += n;
	}
	return total;
}

/*
 * What a direct step reserves beyond the SXI's own step: up to as much as
 * SX_SHOST_DIRECT_BUI_STEPS steps of queued map/unmap work reserve, as
 * much of that as the log's largest record holds (sx_swap_host_init()).
 * ho_step_room sizes each exchange on the two forks as they are and
 * counts the log bytes the step has actually used, so a step of
 * exchanges that share their B+tree leaves (a swap of many small
 * extents) holds hundreds of them; an exchange that does not fit at its
 * worst ends the step, or is queued if it was to be the step's first.
 */
#define SX_SHOST_DIRECT_BUI_STEPS	3

/* Log bytes of one transaction of a swap: an SXI step and a BUI step. */
static u32 sx_shost_step_bytes(const struct sx_mount *mp)
{
	return sx_defer_step_bytes(mp, &sx_sxi_defer_ops) +
	       sx_defer_step_bytes(mp, &sx_bmap_defer_ops);
}

/*
 * What a swap's first transaction reserves.  Its rolls keep it, or grow it
 * to what the chain's first pending work needs (defer.c).  With direct
 * steps it is an SXI step, which holds the direct exchanges: the steps
 * then reserve the same in the chain as in its recovery, which starts
 * from the SXI's own chain reservation; a queued exchange grows it.
 */
static u32 sx_shost_first_bytes(const struct sx_mount *mp)
{
	if (mp->m_host.h_features & SX_HOST_DIRECT_MAP)
		return sx_defer_step_bytes(mp, &sx_sxi_defer_ops);
	return sx_shost_step_bytes(mp);
}

/* For sizing the log: what sx_shost_trans_alloc() reserves without direct steps. */
u32 sx_swap_host_res(const struct sx_mount *mp)
{
	return sx_shost_step_bytes(mp);
}

/*
 * What a transaction that only queues swaps needs besides their intents
 * and inodes: a step without the direct exchanges' room, which would
 * leave no room for the intents in one record.  Its chain's first roll
 * grows the reservation to a step's (sx_defer_chain_bytes()).
 */
u32 sx_swap_host_queue_res(const struct sx_mount *mp)
{
	return sx_shost_step_bytes(mp) - mp->m_swap_direct_res;
}

/*
 * Start a swap's transaction: log space for one step (the chain renews it
 * at each roll), and -ENOSPC at once if the free blocks could not hold the
 * mapping B+trees the estimate allows both forks to grow to.
 */
static int sx_shost_trans_alloc(struct sx_host *h, const struct sx_hres *res,
				struct sx_htrans **tpp)
{
	struct sx_mount *mp = sx_shost_mp(h);
	struct sx_trans *tp;
	u64 need;
	int error;

	if (sx_is_shutdown(mp))
		return -EIO;
	if (mp->m_flags & SX_MF_RDONLY)
		return -EROFS;
	need = sx_shost_bmbt_blocks(mp, res->hr_nrext1) +
	       sx_shost_bmbt_blocks(mp, res->hr_nrext2);
	if (need > sx_alloc_free_blocks(mp))
		return -ENOSPC;
	error = sx_trans_alloc(mp, sx_shost_first_bytes(mp), 0, &tp);
	if (error)
		return error;
	*tpp = (struct sx_htrans *)tp;
	return 0;
}

/* Commit with the queued work finished, and go on in a fresh transaction. */
static int sx_shost_trans_roll(struct sx_htrans **tpp)
{
	struct sx_trans *tp = sx_shost_tp(*tpp);
	int error;

	if (sx_defer_pending(tp))
		error = sx_defer_finish(&tp);
	else
		error = sx_trans_roll(&tp);
	*tpp = (struct sx_htrans *)tp;
	return error;
}

/*
 * Commit, finishing the queued work (the SXI chain) first, and make the
 * swap durable before the core unlocks the files.  Data is written in
 * place: once the files are unlocked, a write into a block the swap moved
 * could reach the disk while the swap has not, and after a crash it would
 * show in the file that held the block before, which may have been synced
 * and not changed since.  Blocks that are freed stay busy until their
 * commit is durable (alloc.c); blocks that change owner wait for this
 * force.  Only the swap's own transactions must be durable: the commit
 * count read after its last commit covers them, and a force that another
 * thread runs meanwhile serves it too.
 */
static int sx_shost_trans_commit(struct sx_htrans *htp)
{
	struct sx_trans *tp = sx_shost_tp(htp);
	struct sx_mount *mp = tp->t_mp;
	int error;

	error = sx_trans_commit(tp);
	if (error)
		return error;
	return sx_log_force_seq(mp, sx_log_commit_seq(mp), false);
}

/*
 * Throw a transaction away.  The in-core inodes of a dirty one were
 * changed with it and cannot be put back: shut down.
 */
static void sx_shost_trans_cancel(struct sx_htrans *htp)
{
	struct sx_trans *tp = sx_shost_tp(htp);

	if (tp && (tp->t_flags & SX_TRANS_DIRTY))
		sx_force_shutdown(tp->t_mp, -EIO, "the swap core cancelled a dirty transaction");
	sx_trans_cancel(tp);
}

/* ------------------------------------------------------------ changes */

/* A host mapping as an extent map record. */
static int sx_shost_irec(const struct sx_hmap *map, struct sx_bmap_irec *irec)
{
	if (map->hm_startblock == SX_HOLESTARTBLOCK || map->hm_blockcount == 0 ||
	    map->hm_blockcount > SX_BMAP_MAXLEN)
		return -EINVAL;
	irec->br_startoff = map->hm_startoff;
	irec->br_startblock = map->hm_startblock;
	irec->br_blockcount = (u32)map->hm_blockcount;
	irec->br_state = (map->hm_flags & SX_HMAP_UNWRITTEN) ? SX_BMAP_UNWRITTEN : 0;
	return 0;
}

/* Queue a swap's unmap of @map (blocks kept, block count left alone). */
static int sx_shost_queue_unmap(struct sx_htrans *tp, struct sx_hinode *hi,
				const struct sx_hmap *map)
{
	struct sx_inode *ip = sx_shost_ip(hi);
	struct sx_bmap_irec irec;
	int error;

	error = sx_shost_irec(map, &irec);
	if (error)
		return error;
	sx_shost_join(ip);
	return sx_bmap_swap_unmap_later(sx_shost_tp(tp), ip, &irec);
}

/* Queue a swap's map of @map into a hole (block count left alone). */
static int sx_shost_queue_map(struct sx_htrans *tp, struct sx_hinode *hi,
			      const struct sx_hmap *map)
{
	struct sx_inode *ip = sx_shost_ip(hi);
	struct sx_bmap_irec irec;
	int error;

	error = sx_shost_irec(map, &irec);
	if (error)
		return error;
	sx_shost_join(ip);
	return sx_bmap_swap_map_later(sx_shost_tp(tp), ip, &irec);
}

/*
 * Before a direct change: both ilocks, and both inodes' blocks joined
 * before any B+tree or bitmap block of the change (the lock order of
 * inode.c: the unlinked list's walk holds inode blocks while it waits for
 * the bitmap, and an update's clone is a file on that list).
 *
 * The step's fork calls walk the same B+tree blocks (roots, the leaves at
 * the cursors) over and over: the transaction keeps the clean ones joined
 * until it commits (SX_TRANS_KEEP_CLEAN) instead of unlocking them after
 * each call and locking and copying them again at the next.  Only the
 * swap's two inodes, which it holds locked, own those blocks; the bitmap
 * blocks an allocation joins are the allocator owner's until the commit
 * anyway (alloc.c).
 */
static int sx_shost_direct_join(struct sx_trans *tp, struct sx_inode *ip)
{
	struct sx_inode *peer = ip->i_swap_peer ? ip->i_swap_peer : ip;
	struct sx_inode *first = ip->i_ino <= peer->i_ino ? ip : peer;
	struct sx_inode *second = first == ip ? peer : ip;
	struct sx_buf *bp;
	int error;

	sx_shost_join(ip);
	tp->t_flags |= SX_TRANS_KEEP_CLEAN;
	error = sx_inode_get_buf(tp->t_mp, tp, first, &bp);
	if (!error && second != first)
		error = sx_inode_get_buf(tp->t_mp, tp, second, &bp);
	return error;
}

/*
 * The fork cursor of an inode's direct changes in one transaction.  A
 * step's exchanges change each fork at one place after another, mostly in
 * the same leaf: the cursor keeps its path between the calls, and the
 * B+tree walks from the root only when the next change is elsewhere
 * (btree.c checks the path against the blocks it holds).  The transaction
 * keeps every block the cursor holds joined until it commits
 * (SX_TRANS_KEEP_CLEAN, sx_shost_direct_join()), so the cursor needs no
 * release: one of another transaction (its number, t_tid, tells) is
 * started afresh.
 */
struct sx_shost_cur {
	struct sx_trans		*sc_tp;		/* NULL: start afresh */
	u64			sc_tid;
	struct sx_fork_cur	sc_fc;
	bool			sc_joined;	/* sx_shost_direct_join() done in sc_tp */
	/* sx_bmap_res_bytes() of the fork's shape sc_res_shape (sx_shost_bmap_res()) */
	u64			sc_res_shape;
	u32			sc_res;
};

/* True if @sc is the cursor of transaction @tp (not of an earlier one). */
static bool sx_shost_cur_in(const struct sx_shost_cur *sc, const struct sx_trans *tp)
{
	return sc->sc_tp == tp && sc->sc_tid == tp->t_tid;
}

/* @ip's cursor for a direct change in @tp, or NULL (no memory: go without). */
static struct sx_fork_cur *sx_shost_cur(struct sx_trans *tp, struct sx_inode *ip)
{
	struct sx_shost_cur *sc = ip->i_swap_cur;

	if (!sc) {
		sc = sx_zalloc(sizeof(*sc), SX_NOFS);
		if (!sc)
			return NULL;
		ip->i_swap_cur = sc;
	}
	if (!sx_shost_cur_in(sc, tp)) {
		sx_fork_cur_init(&sc->sc_fc, ip, tp, &sx_bmap_fork_ops);
		sc->sc_tp = tp;
		sc->sc_tid = tp->t_tid;
		sc->sc_joined = false;
	}
	return &sc->sc_fc;
}

/* A change through @ip's cursor failed: its position means nothing now. */
static void sx_shost_cur_reset(struct sx_inode *ip)
{
	if (ip->i_swap_cur)
		ip->i_swap_cur->sc_tp = NULL;
}

/* The swap is over: drop the cursors (their buffers are the transactions'). */
static void sx_shost_cur_free(struct sx_inode *ip)
{
	sx_free(ip->i_swap_cur);
	ip->i_swap_cur = NULL;
}

/*
 * Before a direct step changes @ip's fork: @map as a record, @ip joined
 * to @tp, and the step's kept cursor on the fork (*@fcp NULL if none).
 */
static int sx_shost_now_begin(struct sx_trans *tp, struct sx_inode *ip,
			      const struct sx_hmap *map, struct sx_bmap_irec *irec,
			      struct sx_fork_cur **fcp)
{
	struct sx_shost_cur *sc = ip->i_swap_cur;
	int error;

	error = sx_shost_irec(map, irec);
	if (error)
		return error;
	/*
	 * Join once per transaction: the blocks stay joined until it
	 * commits, and finding both again at each change cost 8% of a
	 * swap's instructions.
	 */
	if (sc && sc->sc_joined && sx_shost_cur_in(sc, tp)) {
		*fcp = &sc->sc_fc;
		return 0;
	}
	error = sx_shost_direct_join(tp, ip);
	if (error)
		return error;
	*fcp = sx_shost_cur(tp, ip);
	if (*fcp)
		ip->i_swap_cur->sc_joined = true;
	return 0;
}

/* Remove the piece @map from @ip's fork now; its blocks change owner. */
static int sx_shost_unmap_now(struct sx_htrans *htp, struct sx_hinode *hi,
			      const struct sx_hmap *map)
{
	struct sx_trans *tp = sx_shost_tp(htp);
	struct sx_inode *ip = sx_shost_ip(hi);
	struct sx_bmap_irec irec, got;
	struct sx_fork_cur *fc;
	int error;

	error = sx_shost_now_begin(tp, ip, map, &irec, &fc);
	if (error)
		return error;
	if (fc)
		error = sx_bmap_unmap_one_nocharge_cur(fc, irec.br_startoff, irec.br_blockcount,
						       &got);
	else
		error = sx_bmap_unmap_one_nocharge(tp, ip, irec.br_startoff, irec.br_blockcount,
						   &got);
	if (error) {
		sx_shost_cur_reset(ip);
		return error;
	}
	/* the core read this piece: anything else means the map changed */
	if (SX_IS_CORRUPT(ip->i_mp, got.br_startoff != irec.br_startoff ||
			  got.br_blockcount != irec.br_blockcount ||
			  got.br_startblock != irec.br_startblock ||
			  got.br_state != irec.br_state))
		return -EFSCORRUPTED;
	return 0;
}

/* Map @map into a hole of @ip's fork now (block count left alone). */
static int sx_shost_map_now(struct sx_htrans *htp, struct sx_hinode *hi,
			    const struct sx_hmap *map)
{
	struct sx_trans *tp = sx_shost_tp(htp);
	struct sx_inode *ip = sx_shost_ip(hi);
	struct sx_bmap_irec irec;
	struct sx_fork_cur *fc;
	int error;

	error = sx_shost_now_begin(tp, ip, map, &irec, &fc);
	if (error)
		return error;
	if (fc)
		error = sx_bmap_map_nocharge_cur(fc, &irec);
	else
		error = sx_bmap_map_nocharge(tp, ip, &irec);
	if (error)
		sx_shost_cur_reset(ip);
	return error;
}

/*
 * Room in the step's transaction for one more exchange at its worst and
 * the SXI that ends the step.  The worst is what an unmap and a map on
 * each inode may log with its fork as it is now (sx_bmap_res_bytes() per
 * call; one file's two ranges make four calls on it), against the log
 * bytes the transaction has used so far (trans.c charges a buffer once
 * however often it is logged).
 */
/*
 * sx_bmap_res_bytes() of @ip, asked before each exchange of a step, where
 * the fork's shape mostly stays the same: what it depends on (the form,
 * and the height of a tree or the record count of an inline fork) is
 * remembered with the answer in the inode's cursor, when it has one.
 */
static u32 sx_shost_bmap_res(struct sx_inode *ip)
{
	struct sx_shost_cur *sc = ip->i_swap_cur;
	u64 shape;

	if (!sc)
		return sx_bmap_res_bytes(ip->i_mp, ip);
	if (ip->i_format == SX_DIF_BTREE)
		shape = (1ull << 63) | (ip->i_broot ? ip->i_blevel + 1 : 0);
	else
		shape = ip->i_nrecs;
	/* sc_res 0: not known yet (no call needs 0 bytes) */
	if (sc->sc_res == 0 || sc->sc_res_shape != shape) {
		sc->sc_res = sx_bmap_res_bytes(ip->i_mp, ip);
		sc->sc_res_shape = shape;
	}
	return sc->sc_res;
}

static bool sx_shost_step_room(struct sx_htrans *htp, struct sx_hinode *h1, struct sx_hinode *h2)
{
	struct sx_trans *tp = sx_shost_tp(htp);
	struct sx_inode *ip1 = sx_shost_ip(h1), *ip2 = sx_shost_ip(h2);
	u32 need = 2 * (sx_shost_bmap_res(ip1) + sx_shost_bmap_res(ip2)) +
		   sx_trans_op_bytes(sizeof(struct sx_dlog_sxi));

	return sx_trans_space(tp) >= need;
}

/* Set the size. */
static int sx_shost_set_size(struct sx_htrans *tp, struct sx_hinode *hi, s64 size)
{
	struct sx_inode *ip = sx_shost_ip(hi);

	if (size < 0 || (u64)size > SX_MAX_FILE_SIZE)
		return -EINVAL;
	sx_shost_join(ip);
	ip->i_size = (u64)size;
	return sx_inode_log(sx_shost_tp(tp), ip);
}

/*
 * Move blocks charged to the inode.  The store's BUIs leave block counts
 * alone (no SX_HOST_MAP_NBLOCKS) and it has no quota: the count is all.
 */
static int sx_shost_mod_nblocks(struct sx_htrans *tp, struct sx_hinode *hi, s64 delta)
{
	struct sx_inode *ip = sx_shost_ip(hi);

	sx_shost_join(ip);
	if (SX_IS_CORRUPT(ip->i_mp, delta < 0 && (u64)-delta > ip->i_nblocks))
		return -EFSCORRUPTED;
	ip->i_nblocks += (u64)delta;
	return sx_inode_log(sx_shost_tp(tp), ip);
}

/* Set or clear the reflink flag. */
static int sx_shost_set_reflink(struct sx_htrans *tp, struct sx_hinode *hi, bool on)
{
	struct sx_inode *ip = sx_shost_ip(hi);

	sx_shost_join(ip);
	if (on)
		ip->i_flags |= SX_DIFLAG_REFLINK;
	else
		ip->i_flags &= ~SX_DIFLAG_REFLINK;
	return sx_inode_log(sx_shost_tp(tp), ip);
}

/* mtime and ctime to now. */
static int sx_shost_touch(struct sx_htrans *tp, struct sx_hinode *hi)
{
	struct sx_inode *ip = sx_shost_ip(hi);
	s64 now = (s64)sx_wall_ns();

	sx_shost_join(ip);
	ip->i_mtime = now;
	ip->i_ctime = now;
	return sx_inode_log(sx_shost_tp(tp), ip);
}

/* Queue the swap as SXI deferred work. */
static int sx_shost_defer_swap(struct sx_htrans *tp, const struct sx_swapext_intent *si)
{
	return sx_defer_add(sx_shost_tp(tp), &sx_sxi_defer_ops, si);
}

/* ----------------------------------------------------------- recovery */

/* Find inode @ino of generation @gen. */
static int sx_shost_iget(struct sx_host *h, u64 ino, u64 gen, struct sx_hinode **ipp)
{
	struct sx_inode *ip;
	int error;

	if (gen == 0)
		return -ENOENT;
	error = sx_iget(sx_shost_mp(h), ino, gen, &ip);
	if (error == -ESTALE)
		error = -ENOENT;
	if (error)
		return error;
	*ipp = &ip->i_hinode;
	return 0;
}

/* Drop a reference of sx_shost_iget(). */
static void sx_shost_irele(struct sx_hinode *hi)
{
	sx_irele(sx_shost_ip(hi));
}

static const struct sx_host_ops sx_store_host_ops = {
	.ho_stat = sx_shost_stat,
	.ho_lock_two = sx_shost_lock_two,
	.ho_unlock_two = sx_shost_unlock_two,
	.ho_flush_range = sx_shost_flush_range,
	.ho_read_mapping = sx_shost_read_mapping,
	.ho_read_mappings = sx_shost_read_mappings,
	.ho_max_extents = sx_shost_max_extents,
	.ho_trim_eof = sx_shost_trim_eof,
	.ho_trans_alloc = sx_shost_trans_alloc,
	.ho_trans_roll = sx_shost_trans_roll,
	.ho_trans_commit = sx_shost_trans_commit,
	.ho_trans_cancel = sx_shost_trans_cancel,
	.ho_queue_unmap = sx_shost_queue_unmap,
	.ho_queue_map = sx_shost_queue_map,
	.ho_set_size = sx_shost_set_size,
	.ho_mod_nblocks = sx_shost_mod_nblocks,
	.ho_set_reflink = sx_shost_set_reflink,
	.ho_touch = sx_shost_touch,
	.ho_defer_swap = sx_shost_defer_swap,
	.ho_swap_forks = NULL,
	.ho_read_mapping_tp = sx_shost_read_mapping_tp,
	.ho_unmap_now = sx_shost_unmap_now,
	.ho_map_now = sx_shost_map_now,
	.ho_step_room = sx_shost_step_room,
	.ho_iget = sx_shost_iget,
	.ho_irele = sx_shost_irele,
};

/*
 * Fill the mount's host from the superblock.  Direct steps reserve what
 * the log's largest record holds beyond an SXI step (with room to spare
 * for a chain's relogs), up to SX_SHOST_DIRECT_BUI_STEPS BUI steps; mkfs
 * sizes the log for queued steps, so a small log gives them less, and
 * below a quarter of one BUI step (where few exchanges of a large file
 * would fit) a step queues its map/unmap work as before.
 */
void sx_swap_host_init(struct sx_mount *mp)
{
	u32 rec, base, bui, avail;

	mp->m_host.h_ops = &sx_store_host_ops;
	mp->m_host.h_name = mp->m_name;
	mp->m_host.h_features = SX_HOST_DEFER_BMAP;
	if (mp->m_sb.sb_feat_log_incompat & SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP)
		mp->m_host.h_features |= SX_HOST_ATOMIC_SWAP;
	mp->m_host.h_maxbytes = (s64)SX_MAX_FILE_SIZE;

	mp->m_swap_direct_res = 0;
	rec = sx_log_rec_max_blocks(mp->m_sb.sb_logblocks, mp->m_bsize) * mp->m_bsize;
	base = 3 * sx_defer_step_bytes(mp, &sx_sxi_defer_ops);
	bui = sx_bmap_defer_ops.do_step_res(mp);
	avail = rec > base ? rec - base : 0;
	if (avail >= bui / 4) {
		mp->m_swap_direct_res = sx_min(avail, SX_SHOST_DIRECT_BUI_STEPS * bui);
		mp->m_host.h_features |= SX_HOST_DIRECT_MAP;
	}
}

/* ------------------------------------------------------ the SXI type */

static void sx_sxi_encode(const void *item, void *logged)
{
	sx_swapext_item_encode(item, logged);
}

/*
 * Rebuild a logged swap for recovery.  Only a filesystem with the
 * ATOMIC_SWAP log-incompat feature may hold SXIs: one without it was
 * written by something this mount does not understand.
 */
static int sx_sxi_decode(struct sx_mount *mp, const void *logged, void *item)
{
	if (!(mp->m_sb.sb_feat_log_incompat & SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP)) {
		sx_err(mp, "log holds a swap intent (SXI) but the atomic_swap feature is off");
		return -EFSCORRUPTED;
	}
	return sx_swapext_item_decode(&mp->m_host, logged, item);
}

static int sx_sxi_finish(struct sx_trans *tp, void *item)
{
	return sx_swapext_item_finish((struct sx_htrans *)tp, item);
}

static void sx_sxi_cancel(void *item)
{
	sx_swapext_item_cancel(item);
}

/*
 * Log bytes of one step beyond its items: both inode cores (size, block
 * count, flags); the BUIs it queues are intents the chain reserves anyway.
 */
static u32 sx_sxi_step_res(const struct sx_mount *mp)
{
	u32 res = SX_SWAPEXT_STEP_INODES * sx_inode_res_bytes(mp);

	/* a direct step changes the forks itself: see sx_swap_host_init() */
	return res + mp->m_swap_direct_res;
}

static void sx_sxi_print(const void *logged, sx_print_fn pr, void *arg)
{
	char buf[256];

	sx_swapext_item_describe(logged, buf, sizeof(buf));
	pr(arg, "%s", buf);
}

const struct sx_defer_ops sx_sxi_defer_ops = {
	.do_name = "swapext",
	.do_intent_type = SX_LOG_OP_SXI,
	.do_done_type = SX_LOG_OP_SXD,
	.do_item_size = sizeof(struct sx_swapext_intent),
	.do_log_size = sizeof(struct sx_dlog_swapext),
	.do_max_items = 1,
	.do_encode = sx_sxi_encode,
	.do_decode = sx_sxi_decode,
	.do_finish = sx_sxi_finish,
	.do_cancel = sx_sxi_cancel,
	.do_step_res = sx_sxi_step_res,
	.do_print = sx_sxi_print,
};

int sx_swap_host_register(void)
{
	return sx_defer_register(&sx_sxi_defer_ops);
}

void sx_swap_host_unregister(void)
{
	sx_defer_unregister(&sx_sxi_defer_ops);
}

/* ------------------------------------------------------ the public API */

/* Swap a range of fsr->file1_fd with a range of @fd2 (FISWAPRANGE on @fd2). */
SX_API int sx_swap_file_range(struct sx_mount *mp, int fd2, struct file_swap_range *fsr)
{
	struct sx_inode *ip1 = NULL, *ip2 = NULL;
	struct sx_hfile f1, f2;
	int error;

	if (sx_is_shutdown(mp))
		return -EIO;
	error = sx_fd_get(mp, fd2, &ip2);
	if (error)
		return error;
	if (fsr->file1_fd < 0 || fsr->file1_fd > 0x7fffffff) {
		error = -EBADF;
		goto out_rele;
	}
	error = sx_fd_get(mp, (int)fsr->file1_fd, &ip1);
	if (error)
		goto out_rele;
	if (mp->m_flags & SX_MF_RDONLY) {
		error = -EROFS;
		goto out_rele;
	}
	/* the store's descriptors are open for reading and writing */
	memset(&f1, 0, sizeof(f1));
	memset(&f2, 0, sizeof(f2));
	f1.hf_ip = &ip1->i_hinode;
	f1.hf_mode = SX_HF_READ | SX_HF_WRITE;
	f2.hf_ip = &ip2->i_hinode;
	f2.hf_mode = SX_HF_READ | SX_HF_WRITE;
	error = sx_swap_core_range(&f1, &f2, fsr);
out_rele:
	if (ip1)
		sx_irele(ip1);
	sx_irele(ip2);
	return error;
}
