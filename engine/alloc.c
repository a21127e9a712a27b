/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Free-space allocator over the on-disk bitmap.
 *
 * Locking.  A transaction that allocates or frees takes bitmap block 0
 * (through sx_trans_read_buf()) before anything else and keeps it until it
 * commits or cancels, the way an XFS transaction keeps its AGF: only that
 * transaction, the allocator's owner, may lock any other bitmap block, so
 * several allocations in one transaction can never deadlock against another
 * transaction's.  a_lock is a short lock over the in-core counters, never held
 * while waiting for a buffer.
 *
 * Cancel.  A cancelled transaction puts its buffers back as they were, but
 * there is no hook that tells the allocator.  So each bitmap block an owner
 * joins stays on a list, and whoever takes block 0 next (a new owner, or a
 * reader of the free count) re-reads bm_nfree from every block on the list
 * before trusting the counters.  Buffers are the truth; counters follow them.
 *
 * One allocating transaction per thread at a time: ownership is recognised by
 * the calling thread holding block 0's lock.
 *
 * Busy extents.  A block freed by a transaction whose record is not yet
 * durable still belongs to its old owner after a crash.  Metadata may take
 * it at once (it reaches the disk through the log, after the free), but
 * file data written in place into it could show in the old owner after a
 * crash.  So, as XFS does, each free is remembered as busy until the log
 * has made its transaction durable, and allocations of data blocks
 * (sx_alloc_data_extent()) step around busy blocks; only when nothing else
 * is free do they force the log, once, and take them.  The busy lists
 * belong to whoever holds block 0, like the rest of the owner state: the
 * frees of the owner go on a_pend until it commits (sx_alloc_committed()
 * stamps them with its commit sequence and moves them to a_busy), and a
 * cancelled owner's are dropped by the next resync.
 */
#include "util.h"
#include "sb.h"
#include "buf.h"
#include "trans.h"
#include "mount.h"
#include "alloc.h"
#include "log.h"
#include "inode.h"

/* Blocks [b_bno, +b_len) were freed by a transaction that is durable once the log's is at b_seq. */
struct sx_busy {
	u64		b_bno;
	u64		b_len;
	u64		b_seq;
};

struct sx_alloc {
	struct sx_mutex	a_lock;		/* a_free, a_total */
	u32		a_nblocks;	/* bitmap blocks */
	u64		a_bits;		/* bits per bitmap block */
	u32		*a_free;	/* free blocks per bitmap block */
	u64		a_total;	/* sum of a_free */
	struct sx_buf	*a_bm0;		/* bitmap block 0, referenced for our life */
	/* the rest belongs to whoever holds a_bm0 locked */
	struct sx_trans	*a_owner;	/* transaction holding a_bm0, if any */
	int		a_owner_error;	/* the owner could not bring counters up to date */
	struct sx_buf	**a_joined;	/* blocks joined to a_owner, by index */
	u32		*a_list;	/* blocks joined since the last resync */
	u8		*a_listed;	/* by index: on a_list */
	u32		a_nlist;
	/* busy extents (see the top of the file) */
	struct sx_busy	*a_busy;	/* committed frees not yet durable: sorted, disjoint */
	u32		a_nbusy;
	u32		a_busy_cap;
	struct sx_busy	*a_pend;	/* frees of a_owner, not committed (b_seq unused) */
	u32		a_npend;
	u32		a_pend_cap;
	u64		a_rotor;	/* where sx_alloc_data_next() looks first */
};

/* Where a bitmap block's bits begin. */
static inline u8 *bm_bits(void *data)
{
	return (u8 *)data + SX_BITMAP_HDR_SIZE;
}

/* Load bitmap word @wi: bit i of the word is bit 64 * wi + i of the block. */
static inline u64 bm_load(const u8 *bits, u64 wi)
{
	__le64 v;

	memcpy(&v, bits + wi * 8, sizeof(v));
	return le64_to_cpu(v);
}

/* Store bitmap word @wi. */
static inline void bm_store(u8 *bits, u64 wi, u64 w)
{
	__le64 v = cpu_to_le64(w);

	memcpy(bits + wi * 8, &v, sizeof(v));
}

/*
 * Bits [lo, hi) of a word, 0 <= lo < hi <= 64.  Spelled out because a shift by
 * 64 is undefined.
 */
static inline u64 bm_mask(u32 lo, u32 hi)
{
	u64 m = hi == 64 ? ~0ull : (1ull << hi) - 1;

	return m & ~((1ull << lo) - 1);
}

/* Count the set bits among bits [start, end) of a block. */
static u64 bm_count_set(const u8 *bits, u64 start, u64 end)
{
	u64 n = 0, wi;

	while (start < end) {
		u32 lo = start % 64;
		u32 hi = (end - (start - lo)) >= 64 ? 64 : (u32)(end - (start - lo));

		wi = start / 64;
		n += sx_popcount64(bm_load(bits, wi) & bm_mask(lo, hi));
		start = start - lo + hi;
	}
	return n;
}

/* Set (@set) or clear bits [start, end) of a block. */
static void bm_change(u8 *bits, u64 start, u64 end, bool set)
{
	u64 wi;

	while (start < end) {
		u32 lo = start % 64;
		u32 hi = (end - (start - lo)) >= 64 ? 64 : (u32)(end - (start - lo));
		u64 w, m = bm_mask(lo, hi);

		wi = start / 64;
		w = bm_load(bits, wi);
		bm_store(bits, wi, set ? (w | m) : (w & ~m));
		start = start - lo + hi;
	}
}

/*
 * First bit in [pos, end) equal to @want, or @end.  Works a word at a time:
 * inverting the word for zeros turns both searches into "first set bit".
 */
static u64 bm_find(const u8 *bits, u64 pos, u64 end, bool want)
{
	while (pos < end) {
		u32 lo = pos % 64;
		u64 w = bm_load(bits, pos / 64);

		if (!want)
			w = ~w;
		w &= bm_mask(lo, 64);
		if (w) {
			u64 hit = pos - lo + (u64)__builtin_ctzll(w);

			return hit < end ? hit : end;
		}
		pos = pos - lo + 64;
	}
	return end;
}

/* Blocks of bitmap block @idx that the allocator manages at all. */
static u64 bm_navail(const struct sx_sb *sb, u64 bits, u32 idx)
{
	u64 lo = (u64)idx * bits, hi = lo + bits;

	lo = sx_max(lo, sb->sb_datastart);
	hi = sx_min(hi, sb->sb_dblocks);
	return hi > lo ? hi - lo : 0;
}

/*
 * Bitmap verifier.  The generic checks have already matched magic, CRC, uuid,
 * owner and blkno; here the block must sit at its own index, count its free
 * bits exactly, and mark in use every bit that does not stand for a data
 * block (metadata below sb_datastart, nothing at or past sb_dblocks), so that
 * the allocator can trust any clear bit it finds.
 */
static int sx_bitmap_verify(struct sx_mount *mp, const void *data)
{
	const struct sx_dbitmap *bm = data;
	const struct sx_sb *sb;
	const u8 *bits;
	u64 blkno, base, nbits, lo, hi, nfree;
	u32 index;

	if (SX_IS_CORRUPT(mp, mp == NULL))
		return -EFSCORRUPTED;
	sb = &mp->m_sb;
	bits = (const u8 *)data + SX_BITMAP_HDR_SIZE;
	nbits = SX_BITMAP_BITS(sb->sb_blocksize);
	blkno = le64_to_cpu(bm->bm_hdr.bh_blkno);
	index = le32_to_cpu(bm->bm_index);

	if (SX_IS_CORRUPT(mp, blkno < sb->sb_bmapstart ||
			  blkno - sb->sb_bmapstart >= sb->sb_bmapblocks))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, index != blkno - sb->sb_bmapstart))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, bm->bm_pad != 0))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, le32_to_cpu(bm->bm_nfree) > nbits))
		return -EFSCORRUPTED;

	/* the data blocks of this bitmap block are bits [lo, hi) */
	base = (u64)index * nbits;
	lo = sb->sb_datastart > base ? sx_min(sb->sb_datastart - base, nbits) : 0;
	hi = sb->sb_dblocks > base ? sx_min(sb->sb_dblocks - base, nbits) : 0;
	if (hi < lo)
		hi = lo;
	if (SX_IS_CORRUPT(mp, bm_count_set(bits, 0, lo) != lo))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, bm_count_set(bits, hi, nbits) != nbits - hi))
		return -EFSCORRUPTED;
	nfree = (hi - lo) - bm_count_set(bits, lo, hi);
	if (SX_IS_CORRUPT(mp, le32_to_cpu(bm->bm_nfree) != nfree))
		return -EFSCORRUPTED;
	return 0;
}

const struct sx_buf_ops sx_bitmap_buf_ops = {
	.bo_name	= "bitmap",
	.bo_magic	= SX_BITMAP_MAGIC,
	.bo_verify	= sx_bitmap_verify,
};

/*
 * Format bitmap block @index of a new filesystem in @data (one block),
 * header and CRC included, so that mkfs can write it without a mount.
 */
void sx_bitmap_init_block(const struct sx_sb *sb, u32 index, void *data)
{
	struct sx_dbitmap *bm = data;
	u64 nbits = SX_BITMAP_BITS(sb->sb_blocksize);
	u64 base = (u64)index * nbits, lo, hi;
	u8 *bits = bm_bits(data);

	memset(data, 0, sb->sb_blocksize);
	bm->bm_hdr.bh_magic = cpu_to_le32(SX_BITMAP_MAGIC);
	bm->bm_hdr.bh_blkno = cpu_to_le64(sb->sb_bmapstart + index);
	bm->bm_hdr.bh_owner = cpu_to_le64(0);
	bm->bm_hdr.bh_lsn = cpu_to_le64(0);
	memcpy(bm->bm_hdr.bh_uuid, sb->sb_uuid, SX_UUID_SIZE);
	bm->bm_index = cpu_to_le32(index);

	lo = sb->sb_datastart > base ? sx_min(sb->sb_datastart - base, nbits) : 0;
	hi = sb->sb_dblocks > base ? sx_min(sb->sb_dblocks - base, nbits) : 0;
	if (hi < lo)
		hi = lo;
	bm_change(bits, 0, lo, true);
	bm_change(bits, hi, nbits, true);
	bm->bm_nfree = cpu_to_le32((u32)(hi - lo));
	bm->bm_hdr.bh_crc = cpu_to_le32(sx_cksum_skip(data, sb->sb_blocksize,
					offsetof(struct sx_dblk_hdr, bh_crc)));
}

/* The longest extent one call allocates or frees; see sx_alloc_res_bytes(). */
u32 sx_alloc_max_extent(const struct sx_mount *mp)
{
	return (u32)SX_BITMAP_BITS(mp->m_sb.sb_blocksize);
}

/*
 * Log space for one extent allocated or freed.  An extent is at most
 * sx_alloc_max_extent() blocks, one bitmap block's worth, so it changes at
 * most two bitmap blocks; each is charged as if logged whole.  Block 0, taken
 * by every allocating transaction as its lock, costs nothing unless changed,
 * and then it is one of the two.
 */
u32 sx_alloc_res_bytes(const struct sx_mount *mp)
{
	return 2 * sx_trans_buf_bytes(mp);
}

u32 sx_free_data_res_bytes(const struct sx_mount *mp)
{
	return sx_alloc_res_bytes(mp) + SX_FREE_DATA_CANCELS * sx_trans_stale_bytes();
}

/* Remember that bitmap block @idx must be re-counted at the next resync. */
static void alloc_list_add(struct sx_alloc *a, u32 idx)
{
	if (a->a_listed[idx])
		return;
	a->a_listed[idx] = 1;
	a->a_list[a->a_nlist++] = idx;
}

/* Set the in-core count of block @idx to @nfree, keeping the total exact. */
static void alloc_set_count(struct sx_alloc *a, u32 idx, u32 nfree)
{
	sx_mutex_lock(&a->a_lock);
	a->a_total = a->a_total - a->a_free[idx] + nfree;
	a->a_free[idx] = nfree;
	sx_mutex_unlock(&a->a_lock);
}

/*
 * Bring the counters back in line with the buffers after the previous owner
 * finished, committed or cancelled.  The caller holds a_bm0 locked, so no
 * owner is active; a previous owner still releasing a block is waited for.
 */
static int alloc_resync(struct sx_mount *mp, struct sx_alloc *a)
{
	const struct sx_dbitmap *bm;
	struct sx_buf *bp;
	u32 i, idx;
	int error;

	ASSERT(sx_mutex_is_held(&a->a_bm0->b_lock));
	/* the previous owner's buffer pointers mean nothing from here on */
	for (i = 0; i < a->a_nlist; i++)
		a->a_joined[a->a_list[i]] = NULL;
	a->a_owner = NULL;
	/* frees it did not commit: it was cancelled, and they never happened */
	a->a_npend = 0;

	while (a->a_nlist > 0) {
		idx = a->a_list[a->a_nlist - 1];
		if (idx == 0) {
			bm = a->a_bm0->b_data;
			alloc_set_count(a, 0, le32_to_cpu(bm->bm_nfree));
		} else {
			error = sx_buf_read(mp, mp->m_sb.sb_bmapstart + idx,
					    &sx_bitmap_buf_ops, 0, &bp);
			if (error)
				return error;
			bm = bp->b_data;
			alloc_set_count(a, idx, le32_to_cpu(bm->bm_nfree));
			sx_buf_relse(bp);
		}
		a->a_listed[idx] = 0;
		a->a_nlist--;
	}
	return 0;
}

/*
 * Make @tp the allocator's owner: lock bitmap block 0 into it (or find that
 * it already is the owner) and bring the counters up to date.
 */
static int alloc_own(struct sx_trans *tp, struct sx_alloc *a)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_buf *bp;
	int error;

	if (sx_mutex_is_held(&a->a_bm0->b_lock)) {
		if (a->a_owner != tp) {
			sx_err(mp, "allocator used by a second transaction of the thread that holds it");
			return -EDEADLK;
		}
		return a->a_owner_error;
	}

	error = sx_trans_read_buf(tp, mp->m_sb.sb_bmapstart, &sx_bitmap_buf_ops, 0, &bp);
	if (error)
		return error;
	VERIFY(bp == a->a_bm0);

	/*
	 * Block 0 is joined whatever the resync does, so that nothing of this
	 * transaction ever reads it as an unjoined buffer it already locks; a
	 * failed resync is remembered and refuses every later call of @tp.
	 */
	error = alloc_resync(mp, a);
	a->a_owner = tp;
	a->a_owner_error = error;
	a->a_joined[0] = bp;
	alloc_list_add(a, 0);
	return error;
}

/* Bitmap block @idx joined to the owner @tp, joining it on first use. */
static int alloc_join(struct sx_trans *tp, struct sx_alloc *a, u32 idx,
		      struct sx_buf **bpp)
{
	struct sx_mount *mp = tp->t_mp;
	int error;

	ASSERT(a->a_owner == tp && sx_mutex_is_held(&a->a_bm0->b_lock));
	if (!a->a_joined[idx]) {
		error = sx_trans_read_buf(tp, mp->m_sb.sb_bmapstart + idx,
					  &sx_bitmap_buf_ops, 0, &a->a_joined[idx]);
		if (error) {
			a->a_joined[idx] = NULL;
			return error;
		}
		alloc_list_add(a, idx);
	}
	*bpp = a->a_joined[idx];
	return 0;
}


/* ---------------------------------------------------------------- busy extents */

/* Make room for @need entries in *@v (of *@cap). */
static int busy_grow(struct sx_busy **v, u32 *cap, u32 need)
{
	struct sx_busy *n;
	u32 ncap;

	if (need <= *cap)
		return 0;
	ncap = sx_max(need, *cap ? *cap * 2 : 16u);
	n = sx_alloc(sizeof(*n) * (size_t)ncap, SX_NOFS);
	if (!n)
		return -ENOMEM;
	if (*cap)
		memcpy(n, *v, sizeof(*n) * (size_t)*cap);
	sx_free(*v);
	*v = n;
	*cap = ncap;
	return 0;
}

/* Forget the busy extents whose frees are durable now (the owner's call). */
static void busy_prune(struct sx_alloc *a, u64 durable)
{
	u32 i, n = 0;

	for (i = 0; i < a->a_nbusy; i++)
		if (a->a_busy[i].b_seq > durable)
			a->a_busy[n++] = a->a_busy[i];
	a->a_nbusy = n;
}

/* The first entry of a_busy that ends after @bno (a_nbusy if none). */
static u32 busy_search(const struct sx_alloc *a, u64 bno)
{
	u32 lo = 0, hi = a->a_nbusy;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (a->a_busy[mid].b_bno + a->a_busy[mid].b_len > bno)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * Add [@bno, +@len), durable at @seq, to a_busy.  Entries it overlaps or
 * touches become one, durable at the latest of their sequences: a little
 * waiting more for a list that stays short.  busy_reserve() made room.
 */
static void busy_insert(struct sx_alloc *a, u64 bno, u64 len, u64 seq)
{
	u64 start = bno, end = bno + len;
	u32 i, j, k;

	i = bno ? busy_search(a, bno - 1) : 0;	/* also the entry that ends at @bno */
	for (j = i; j < a->a_nbusy && a->a_busy[j].b_bno <= end; j++) {
		start = sx_min(start, a->a_busy[j].b_bno);
		end = sx_max(end, a->a_busy[j].b_bno + a->a_busy[j].b_len);
		seq = sx_max(seq, a->a_busy[j].b_seq);
	}
	if (j == i) {
		VERIFY(a->a_nbusy < a->a_busy_cap);
		for (k = a->a_nbusy; k > i; k--)
			a->a_busy[k] = a->a_busy[k - 1];
		a->a_nbusy++;
	} else if (j > i + 1) {
		for (k = 0; j + k < a->a_nbusy; k++)
			a->a_busy[i + 1 + k] = a->a_busy[j + k];
		a->a_nbusy -= j - i - 1;
	}
	a->a_busy[i].b_bno = start;
	a->a_busy[i].b_len = end - start;
	a->a_busy[i].b_seq = seq;
}

/*
 * Room for one more free of the owner, now and when it commits (each
 * pending free may become an entry of its own), so that the commit, which
 * cannot fail, never allocates.  Durable entries go first, so the list
 * grows only with frees that are not durable.
 */
static int busy_reserve(struct sx_mount *mp, struct sx_alloc *a)
{
	u32 need = a->a_nbusy + a->a_npend + 1;
	int error;

	if (need > a->a_busy_cap && a->a_nbusy) {
		busy_prune(a, sx_log_durable_seq(mp));
		need = a->a_nbusy + a->a_npend + 1;
	}
	error = busy_grow(&a->a_busy, &a->a_busy_cap, need);
	if (!error)
		error = busy_grow(&a->a_pend, &a->a_pend_cap, a->a_npend + 1);
	return error;
}

/* The owner freed [@bno, +@len): busy from now on, at a sequence its commit will say. */
static void busy_note_free(struct sx_alloc *a, u64 bno, u64 len)
{
	struct sx_busy *last = a->a_npend ? &a->a_pend[a->a_npend - 1] : NULL;

	if (last && last->b_bno + last->b_len == bno) {
		last->b_len += len;
		return;
	}
	VERIFY(a->a_npend < a->a_pend_cap);
	a->a_pend[a->a_npend].b_bno = bno;
	a->a_pend[a->a_npend].b_len = len;
	a->a_pend[a->a_npend].b_seq = 0;
	a->a_npend++;
}

/*
 * The first busy blocks that overlap [@pos, @end), committed or the
 * owner's own: false if none, else [*@bs, *@be).
 */
static bool busy_find(const struct sx_alloc *a, u64 pos, u64 end, u64 *bs, u64 *be)
{
	u64 s = end, e = end;
	u32 i;

	i = busy_search(a, pos);
	if (i < a->a_nbusy && a->a_busy[i].b_bno < end) {
		s = a->a_busy[i].b_bno;
		e = s + a->a_busy[i].b_len;
	}
	for (i = 0; i < a->a_npend; i++) {
		const struct sx_busy *p = &a->a_pend[i];

		if (p->b_bno < end && p->b_bno + p->b_len > pos && p->b_bno < s) {
			s = p->b_bno;
			e = s + p->b_len;
		}
	}
	if (s >= end)
		return false;
	*bs = sx_max(s, pos);
	*be = e;
	return true;
}

/*
 * @tp committed as the log's transaction @seq: its frees become busy until
 * that is durable.  Called by trans.c while @tp still holds its buffers,
 * so that no other owner has looked at the allocator in between.
 */
void sx_alloc_committed(struct sx_trans *tp, u64 seq)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_alloc *a = mp->m_alloc;
	u32 i;

	if (!a || !sx_mutex_is_held(&a->a_bm0->b_lock) || a->a_owner != tp)
		return;
	for (i = 0; i < a->a_npend; i++)
		busy_insert(a, a->a_pend[i].b_bno, a->a_pend[i].b_len, seq);
	a->a_npend = 0;
}

/* The busy blocks the allocator remembers now, committed ones only (for tests). */
u64 sx_alloc_busy_blocks(struct sx_mount *mp)
{
	struct sx_alloc *a = mp->m_alloc;
	u64 n = 0;
	u32 i;

	if (!a)
		return 0;
	sx_buf_lock(a->a_bm0);
	for (i = 0; i < a->a_nbusy; i++)
		n += a->a_busy[i].b_len;
	sx_buf_unlock(a->a_bm0);
	return n;
}

/*
 * Search state: a run of free blocks being followed, the best run seen, and
 * the unjoined buffer currently being read.
 */
struct alloc_search {
	struct sx_mount	*as_mp;
	struct sx_alloc	*as_a;
	u32		as_minlen;
	u32		as_maxlen;
	bool		as_busy;	/* busy blocks count as in use */
	bool		as_in_run;
	u64		as_run_start;
	u64		as_run_len;
	u64		as_best_start;
	u64		as_best_len;
	struct sx_buf	*as_bp;		/* read, not joined; released on move */
	u32		as_bp_idx;
};

/* The run being followed has ended: keep it if it is the longest usable one. */
static void search_end_run(struct alloc_search *s)
{
	if (s->as_in_run && s->as_run_len >= s->as_minlen &&
	    s->as_run_len > s->as_best_len) {
		s->as_best_start = s->as_run_start;
		s->as_best_len = s->as_run_len;
	}
	s->as_in_run = false;
}

/* Extend or start the run with free blocks [pos, pos + n); true once it is long enough. */
static bool search_extend(struct alloc_search *s, u64 pos, u64 n)
{
	if (!s->as_in_run) {
		s->as_in_run = true;
		s->as_run_start = pos;
		s->as_run_len = 0;
	}
	s->as_run_len += n;
	return s->as_run_len >= s->as_maxlen;
}

/*
 * Free blocks [pos, pos + n) follow the run being followed: extend it as
 * far as it needs, or, avoiding busy blocks, end it at each busy stretch and
 * start again after it.  For data, a block whose contents are still in the
 * log (sx_buf_range_data()) counts as busy too, and stays so until the
 * tail passes them: recovery could write the logged image over new data.
 * True once the run is long enough.
 */
static bool search_free(struct alloc_search *s, u64 pos, u64 n)
{
	u64 end = pos + n, bs, be, stop, hit;

	while (pos < end) {
		bool busy = s->as_busy && busy_find(s->as_a, pos, end, &bs, &be);

		stop = busy ? bs : end;
		if (stop > pos) {
			u64 want = s->as_maxlen - (s->as_in_run ? s->as_run_len : 0);
			u64 take = sx_min(stop - pos, want);

			if (s->as_busy && sx_buf_range_data(s->as_mp, pos, take, &hit)) {
				if (hit > pos && search_extend(s, pos, hit - pos))
					return true;
				search_end_run(s);
				pos = hit + 1;
				continue;
			}
			if (search_extend(s, pos, take))
				return true;
		}
		if (!busy)
			break;
		search_end_run(s);
		pos = sx_min(be, end);
	}
	return false;
}

/* The bits of block @idx for reading: the owner's joined copy or a cached read. */
static int search_bits(struct alloc_search *s, u32 idx, const u8 **bitsp)
{
	struct sx_alloc *a = s->as_a;
	int error;

	if (a->a_joined[idx]) {
		*bitsp = bm_bits(a->a_joined[idx]->b_data);
		return 0;
	}
	if (!s->as_bp || s->as_bp_idx != idx) {
		if (s->as_bp)
			sx_buf_relse(s->as_bp);
		s->as_bp = NULL;
		error = sx_buf_read(s->as_mp, s->as_mp->m_sb.sb_bmapstart + idx,
				    &sx_bitmap_buf_ops, 0, &s->as_bp);
		if (error) {
			s->as_bp = NULL;
			return error;
		}
		s->as_bp_idx = idx;
	}
	*bitsp = bm_bits(s->as_bp->b_data);
	return 0;
}

/*
 * Follow free runs through blocks [from, to).  Returns 1 as soon as the run
 * being followed reaches as_maxlen (it is then as_run_start, as_maxlen long),
 * 0 when the range is done, or a negative errno.  Bitmap blocks with nothing
 * free are skipped without being read, wholly free ones are crossed without
 * being read, and the rest are searched a word at a time.
 */
static int search_range(struct alloc_search *s, u64 from, u64 to)
{
	struct sx_alloc *a = s->as_a;
	const struct sx_sb *sb = &s->as_mp->m_sb;
	u64 pos = from;
	int error;

	while (pos < to) {
		u32 idx = (u32)(pos / a->a_bits);
		u64 base = (u64)idx * a->a_bits;
		u64 bend = sx_min(base + a->a_bits, to);
		u64 off, end;
		const u8 *bits;

		if (a->a_free[idx] == 0) {
			search_end_run(s);
			pos = bend;
			continue;
		}
		if (a->a_free[idx] == bm_navail(sb, a->a_bits, idx)) {
			if (search_free(s, pos, bend - pos))
				return 1;
			pos = bend;
			continue;
		}

		error = search_bits(s, idx, &bits);
		if (error)
			return error;
		off = pos - base;
		end = bend - base;
		while (off < end) {
			u64 limit, hit;

			if (!s->as_in_run) {
				off = bm_find(bits, off, end, false);
				if (off == end)
					break;
				s->as_in_run = true;
				s->as_run_start = base + off;
				s->as_run_len = 0;
			}
			/* look no further than the run needs to be long enough */
			limit = sx_min(end, off + (s->as_maxlen - s->as_run_len));
			hit = bm_find(bits, off, limit, true);
			if (search_free(s, base + off, hit - off))
				return 1;
			if (hit < limit) {
				search_end_run(s);
				off = hit;
			} else {
				off = limit;
			}
		}
		pos = bend;
	}
	search_end_run(s);
	return 0;
}

/*
 * Change bits of [bno, bno + len) to @set in the owner's transaction.  Every
 * bit must currently be the opposite (else -EFSCORRUPTED and nothing
 * changes); the changed bytes and bm_nfree are logged, and the counters
 * follow.  @len is at most a block's worth, so two bitmap blocks at most.
 */
static int alloc_change(struct sx_trans *tp, struct sx_alloc *a, u64 bno, u64 len,
			bool set)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_buf *bp[2];
	u64 start[2], end[2];
	u32 idx[2], n, i;
	int error;

	ASSERT(a->a_owner == tp && sx_mutex_is_held(&a->a_bm0->b_lock));
	idx[0] = (u32)(bno / a->a_bits);
	idx[1] = (u32)((bno + len - 1) / a->a_bits);
	n = idx[0] == idx[1] ? 1 : 2;
	ASSERT(idx[1] - idx[0] < 2);
	start[0] = bno - (u64)idx[0] * a->a_bits;
	end[0] = n == 1 ? start[0] + len : a->a_bits;
	start[1] = 0;
	end[1] = bno + len - (u64)idx[1] * a->a_bits;

	/* check everything before changing anything */
	for (i = 0; i < n; i++) {
		u64 nset;

		error = alloc_join(tp, a, idx[i], &bp[i]);
		if (error)
			return error;
		nset = bm_count_set(bm_bits(bp[i]->b_data), start[i], end[i]);
		if (SX_IS_CORRUPT(mp, nset != (set ? 0 : end[i] - start[i]))) {
			sx_err(mp, "%s blocks %llu..%llu: %llu of %llu already %s",
			       set ? "allocating" : "freeing",
			       (unsigned long long)bno,
			       (unsigned long long)(bno + len - 1),
			       (unsigned long long)(set ? nset : end[i] - start[i] - nset),
			       (unsigned long long)(end[i] - start[i]),
			       set ? "in use" : "free");
			return -EFSCORRUPTED;
		}
	}

	for (i = 0; i < n; i++) {
		struct sx_dbitmap *bm = bp[i]->b_data;
		u32 nfree = le32_to_cpu(bm->bm_nfree);
		u32 cnt = (u32)(end[i] - start[i]);
		u32 first, last;

		if (SX_IS_CORRUPT(mp, set ? nfree < cnt : nfree + (u64)cnt > a->a_bits))
			return -EFSCORRUPTED;
		nfree = set ? nfree - cnt : nfree + cnt;
		bm_change(bm_bits(bm), start[i], end[i], set);
		bm->bm_nfree = cpu_to_le32(nfree);
		alloc_set_count(a, idx[i], nfree);

		first = (u32)(SX_BITMAP_HDR_SIZE + start[i] / 8);
		last = (u32)(SX_BITMAP_HDR_SIZE + (end[i] - 1) / 8);
		error = sx_trans_log_buf(tp, bp[i], first, last);
		if (error)
			return error;
		error = sx_trans_log_buf(tp, bp[i], offsetof(struct sx_dbitmap, bm_nfree),
					 offsetof(struct sx_dbitmap, bm_nfree) +
					 sizeof(bm->bm_nfree) - 1);
		if (error)
			return error;
	}
	return 0;
}

/*
 * The bitmap is the only record of free space: a block of it that lost a
 * write says "free" for blocks in use, and handing one out destroys what
 * lives there.  Without a reverse map (XFS's rmapbt) a block's owner cannot
 * be looked up, so only what the mount knows at no I/O cost is checked, and
 * only facts that never make a truly free block look owned:
 *  - the fsinfo block and the root directory's inode are always in use;
 *  - an inode in the inode cache that is not being freed owns its block
 *    (an inode's number is its block number);
 *  - a block cached as live metadata (typed, not stale, i.e. not freed by
 *    a committed transaction, not invalid, not invalidated by the caller's
 *    own transaction) belongs to its structure.
 * Reading each candidate to look for a metadata header would cost a read
 * per block allocated and would not be sound either: a freed block keeps
 * its last header on the disk.  A hit means the bitmap is damaged.
 */
static const char *alloc_owner(struct sx_mount *mp, u64 bno, u64 len, u64 *hitp)
{
	const struct sx_sb *sb = &mp->m_sb;
	const char *what = NULL;
	u64 hit = 0;

	if (sb->sb_fsinfo >= bno && sb->sb_fsinfo - bno < len) {
		hit = sb->sb_fsinfo;
		what = "the fsinfo block";
	} else if (mp->m_rootino >= bno && mp->m_rootino - bno < len) {
		hit = mp->m_rootino;
		what = "the root directory's inode";
	} else if (mp->m_icache && sx_icache_range_has(mp, bno, len, &hit)) {
		what = "an inode in use";
	} else if (sx_buf_range_live(mp, bno, len, &hit)) {
		what = "cached metadata";
	}
	*hitp = hit;
	return what;
}

static int alloc_check_unowned(struct sx_mount *mp, u64 bno, u64 len)
{
	u64 hit;
	const char *what = alloc_owner(mp, bno, len, &hit);

	if (!what)
		return 0;
	sx_err(mp, "the bitmap says block %llu is free, but it is %s: a bitmap block is stale (a lost write?); not allocating it",
	       (unsigned long long)hit, what);
	return -EFSCORRUPTED;
}

/*
 * The same facts guard the freeing of file data (extents a file maps, freed
 * through an EFI): a mapping damaged to cover metadata would otherwise free
 * it, and the allocator would hand it out again.  Metadata is freed by its
 * own structure (B+tree blocks, inodes), never through here.
 */
int sx_free_check_data(struct sx_mount *mp, u64 bno, u64 len)
{
	u64 hit;
	const char *what = alloc_owner(mp, bno, len, &hit);

	if (!what)
		return 0;
	sx_err(mp, "freeing file blocks %llu+%llu, but block %llu is %s: a mapping is damaged; not freeing them",
	       (unsigned long long)bno, (unsigned long long)len, (unsigned long long)hit, what);
	return -EFSCORRUPTED;
}

/*
 * Blocks a file mapped go back to free space.  A block whose image the log
 * still holds (a small atomic write carried it) gets a cancel in the same
 * transaction: nobody owns the block once it is free, so a checkpoint
 * writing it home would be I/O for nothing, and without the cancel the
 * block would stay withheld from data until the tail passed its image.
 */
int sx_free_data(struct sx_trans *tp, u64 bno, u64 len, u32 cancels)
{
	int error;

	error = sx_free_check_data(tp->t_mp, bno, len);
	if (!error)
		error = sx_free_extent(tp, bno, len);
	if (!error && cancels)
		sx_trans_stale_data(tp, bno, len, cancels);
	return error;
}

/*
 * Find between @minlen and @maxlen contiguous free blocks (stepping around
 * busy ones if @busy) for the owner.
 *
 * Policy: walk free runs in block order from @hint (or sb_datastart when the
 * hint is 0 or outside the data area) to the end of the device, then from
 * sb_datastart round to the hint.  The first run of at least @maxlen blocks
 * wins and its first @maxlen blocks are taken; failing that, the longest run
 * of at least @minlen (the first of equals) is taken whole.  A run that the
 * wrap point cuts is followed on past the hint in the second leg, so it is
 * measured whole.
 */
static int alloc_search(struct sx_mount *mp, struct sx_alloc *a, u64 hint, u32 minlen,
			u32 maxlen, bool busy, u64 *bnop, u64 *lenp)
{
	const struct sx_sb *sb = &mp->m_sb;
	struct alloc_search s;
	u64 start;
	int error;

	if (a->a_total < minlen)
		return -ENOSPC;
	start = hint;
	if (start < sb->sb_datastart || start >= sb->sb_dblocks)
		start = sb->sb_datastart;

	memset(&s, 0, sizeof(s));
	s.as_mp = mp;
	s.as_a = a;
	s.as_minlen = minlen;
	s.as_maxlen = maxlen;
	s.as_busy = busy;
	error = search_range(&s, start, sb->sb_dblocks);
	if (error == 0 && start > sb->sb_datastart)
		error = search_range(&s, sb->sb_datastart,
				     sx_min(start + maxlen, sb->sb_dblocks));
	if (s.as_bp)
		sx_buf_relse(s.as_bp);
	if (error < 0)
		return error;
	if (error == 1) {
		*bnop = s.as_run_start;
		*lenp = maxlen;
	} else if (s.as_best_len) {
		*bnop = s.as_best_start;
		*lenp = s.as_best_len;
	} else {
		return -ENOSPC;
	}
	return 0;
}

/*
 * Search for data blocks: none busy.  If only busy blocks would do, make
 * every committed free durable (one log force, up to the latest busy
 * sequence) and search once more; blocks the owner itself freed stay busy
 * whatever, since its own record cannot be forced before it commits.
 */
static int alloc_search_data(struct sx_mount *mp, struct sx_alloc *a, u64 hint, u32 minlen,
			     u32 maxlen, u64 *bnop, u64 *lenp)
{
	u64 need = 0;
	u32 i;
	int error;

	if (a->a_nbusy)
		busy_prune(a, sx_log_durable_seq(mp));
	error = alloc_search(mp, a, hint, minlen, maxlen, true, bnop, lenp);
	if (error != -ENOSPC || !a->a_nbusy)
		return error;
	for (i = 0; i < a->a_nbusy; i++)
		need = sx_max(need, a->a_busy[i].b_seq);
	error = sx_log_force(mp);
	if (error)
		return error;
	busy_prune(a, need);
	return alloc_search(mp, a, hint, minlen, maxlen, true, bnop, lenp);
}

/*
 * Allocate between @minlen and @maxlen contiguous blocks, as alloc_search()
 * finds them, for metadata (@data false) or for file data.  @maxlen above
 * sx_alloc_max_extent() is lowered to it; @minlen above it is -EINVAL.
 */
static int alloc_extent(struct sx_trans *tp, u64 hint, u32 minlen, u32 maxlen, bool data,
			u64 *bnop, u32 *lenp)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_alloc *a = mp->m_alloc;
	const struct sx_sb *sb = &mp->m_sb;
	u64 bno, len;
	int error;

	if (!a)
		return -EINVAL;
	maxlen = sx_min(maxlen, sx_alloc_max_extent(mp));
	if (minlen == 0 || minlen > maxlen)
		return -EINVAL;
	error = sx_fault("alloc_extent");
	if (error)
		return error;

	error = alloc_own(tp, a);
	if (error)
		return error;
	if (data)
		error = alloc_search_data(mp, a, hint, minlen, maxlen, &bno, &len);
	else
		error = alloc_search(mp, a, hint, minlen, maxlen, false, &bno, &len);
	if (error)
		return error;

	if (SX_IS_CORRUPT(mp, bno < sb->sb_datastart || len > sb->sb_dblocks - bno))
		return -EFSCORRUPTED;
	error = alloc_check_unowned(mp, bno, len);
	if (error)
		return error;
	error = alloc_change(tp, a, bno, len, true);
	if (error)
		return error;
	*bnop = bno;
	*lenp = (u32)len;
	return 0;
}

/* Blocks for metadata: busy ones are fine, the log orders them after their free. */
int sx_alloc_extent(struct sx_trans *tp, u64 hint, u32 minlen, u32 maxlen,
		    u64 *bnop, u32 *lenp)
{
	return alloc_extent(tp, hint, minlen, maxlen, false, bnop, lenp);
}

/* Blocks that data will be written into in place: never busy ones. */
int sx_alloc_data_extent(struct sx_trans *tp, u64 hint, u32 minlen, u32 maxlen,
			 u64 *bnop, u32 *lenp)
{
	return alloc_extent(tp, hint, minlen, maxlen, true, bnop, lenp);
}

/*
 * Data blocks from a rotor through free space, past the last ones it gave:
 * the blocks of writes that follow one another, from any thread, lie side
 * by side, so the device takes a force's worth of them in one I/O.  The
 * rotor belongs to the owner, like the rest of the allocator's state.
 */
int sx_alloc_data_next(struct sx_trans *tp, u32 minlen, u32 maxlen, u64 *bnop, u32 *lenp)
{
	struct sx_alloc *a = tp->t_mp->m_alloc;
	int error;

	if (!a)
		return -EINVAL;
	error = alloc_own(tp, a);
	if (error)
		return error;
	error = alloc_extent(tp, a->a_rotor, minlen, maxlen, true, bnop, lenp);
	if (!error)
		a->a_rotor = *bnop + *lenp;
	return error;
}

/* Return [@bno, @bno + @len) to free space; every block must be in use. */
int sx_free_extent(struct sx_trans *tp, u64 bno, u64 len)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_alloc *a = mp->m_alloc;
	const struct sx_sb *sb = &mp->m_sb;
	int error;

	if (!a || len == 0 || len > sx_alloc_max_extent(mp))
		return -EINVAL;
	if (SX_IS_CORRUPT(mp, bno < sb->sb_datastart || bno >= sb->sb_dblocks ||
			  len > sb->sb_dblocks - bno)) {
		sx_err(mp, "freeing blocks %llu+%llu outside the data area [%llu, %llu)",
		       (unsigned long long)bno, (unsigned long long)len,
		       (unsigned long long)sb->sb_datastart,
		       (unsigned long long)sb->sb_dblocks);
		return -EFSCORRUPTED;
	}
	error = sx_fault("free_extent");
	if (error)
		return error;

	error = alloc_own(tp, a);
	if (error)
		return error;
	error = busy_reserve(mp, a);
	if (error)
		return error;
	error = alloc_change(tp, a, bno, len, false);
	if (!error)
		busy_note_free(a, bno, len);
	return error;
}

/*
 * Exact free block count.  Called by the owner, it includes the owner's own
 * uncommitted changes; called by anyone else, it waits for the current owner
 * to finish and counts what that left behind.
 */
u64 sx_alloc_free_blocks(struct sx_mount *mp)
{
	struct sx_alloc *a = mp->m_alloc;
	u64 total;
	int error = 0;

	if (!a)
		return 0;
	if (!sx_mutex_is_held(&a->a_bm0->b_lock)) {
		sx_buf_lock(a->a_bm0);
		error = alloc_resync(mp, a);
		sx_buf_unlock(a->a_bm0);
	}
	if (error)
		sx_warn(mp, "free block count may be stale: error %d re-reading the bitmap",
			error);
	sx_mutex_lock(&a->a_lock);
	total = a->a_total;
	sx_mutex_unlock(&a->a_lock);
	return total;
}

/* True if the calling thread holds bitmap block 0: a transaction of it owns the allocator. */
bool sx_alloc_owned(struct sx_mount *mp)
{
	struct sx_alloc *a = mp->m_alloc;

	return a && sx_mutex_is_held(&a->a_bm0->b_lock);
}

/* Read whether block @bno is free, as the owner sees it if the caller is one. */
int sx_alloc_is_free(struct sx_mount *mp, u64 bno, bool *freep)
{
	struct sx_alloc *a = mp->m_alloc;
	struct sx_buf *bp;
	u32 idx;
	u64 bit;
	int error;

	if (!a || bno >= mp->m_sb.sb_dblocks)
		return -EINVAL;
	idx = (u32)(bno / a->a_bits);
	bit = bno - (u64)idx * a->a_bits;

	if (sx_mutex_is_held(&a->a_bm0->b_lock) && a->a_joined[idx]) {
		*freep = bm_find(bm_bits(a->a_joined[idx]->b_data), bit, bit + 1, true) != bit;
		return 0;
	}
	error = sx_buf_read(mp, mp->m_sb.sb_bmapstart + idx, &sx_bitmap_buf_ops, 0, &bp);
	if (error)
		return error;
	*freep = bm_find(bm_bits(bp->b_data), bit, bit + 1, true) != bit;
	sx_buf_relse(bp);
	return 0;
}

/* Free the in-core state; the buffer cache must still be up. */
void sx_alloc_destroy(struct sx_mount *mp)
{
	struct sx_alloc *a = mp->m_alloc;

	if (!a)
		return;
	if (a->a_bm0)
		sx_buf_rele(a->a_bm0);
	sx_free(a->a_busy);
	sx_free(a->a_pend);
	sx_free(a->a_listed);
	sx_free(a->a_list);
	sx_free(a->a_joined);
	sx_free(a->a_free);
	sx_mutex_destroy(&a->a_lock);
	sx_free(a);
	mp->m_alloc = NULL;
}

/* Read every bitmap block (verifying it) and build the in-core counters. */
int sx_alloc_init(struct sx_mount *mp)
{
	const struct sx_sb *sb = &mp->m_sb;
	struct sx_alloc *a;
	struct sx_buf *bp;
	u32 i;
	int error;

	a = sx_zalloc(sizeof(*a), 0);
	if (!a)
		return -ENOMEM;
	sx_mutex_init(&a->a_lock);
	mp->m_alloc = a;
	a->a_nblocks = sb->sb_bmapblocks;
	a->a_bits = SX_BITMAP_BITS(sb->sb_blocksize);
	a->a_free = sx_zalloc(sizeof(*a->a_free) * (size_t)a->a_nblocks, 0);
	a->a_joined = sx_zalloc(sizeof(*a->a_joined) * (size_t)a->a_nblocks, 0);
	a->a_list = sx_zalloc(sizeof(*a->a_list) * (size_t)a->a_nblocks, 0);
	a->a_listed = sx_zalloc((size_t)a->a_nblocks, 0);
	if (!a->a_free || !a->a_joined || !a->a_list || !a->a_listed) {
		error = -ENOMEM;
		goto out_destroy;
	}

	for (i = 0; i < a->a_nblocks; i++) {
		const struct sx_dbitmap *bm;

		error = sx_buf_read(mp, sb->sb_bmapstart + i, &sx_bitmap_buf_ops, 0, &bp);
		if (error) {
			sx_err(mp, "cannot read bitmap block %u: error %d", i, error);
			goto out_destroy;
		}
		bm = bp->b_data;
		a->a_free[i] = le32_to_cpu(bm->bm_nfree);
		a->a_total += a->a_free[i];
		if (i == 0) {
			sx_buf_hold(bp);
			a->a_bm0 = bp;
		}
		sx_buf_relse(bp);
	}
	return 0;

out_destroy:
	sx_alloc_destroy(mp);
	return error;
}
