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
 */
#include "util.h"
#include "sb.h"
#include "buf.h"
#include "trans.h"
#include "mount.h"
#include "alloc.h"
#include "log.h"
#include "inode.h"

struct sx_alloc {
	struct sx_mutex	a_lock;		/* a_free, a_total */
	struct sx_atomic64 a_frees;	/* sx_free_extent() calls so far */
	struct sx_atomic64 a_frees_durable; /* of those, the ones a log force covered */
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

/*
 * Population count without __builtin_popcountll, which becomes a libgcc call
 * that a kernel module cannot link.
 */
static inline u32 bm_popcount(u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (u32)((x * 0x0101010101010101ull) >> 56);
}

/* Count the set bits among bits [start, end) of a block. */
static u64 bm_count_set(const u8 *bits, u64 start, u64 end)
{
	u64 n = 0, wi;

	while (start < end) {
		u32 lo = start % 64;
		u32 hi = (end - (start - lo)) >= 64 ? 64 : (u32)(end - (start - lo));

		wi = start / 64;
		n += bm_popcount(bm_load(bits, wi) & bm_mask(lo, hi));
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

/*
 * Search state: a run of free blocks being followed, the best run seen, and
 * the unjoined buffer currently being read.
 */
struct alloc_search {
	struct sx_mount	*as_mp;
	struct sx_alloc	*as_a;
	u32		as_minlen;
	u32		as_maxlen;
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
			u64 want = s->as_maxlen - (s->as_in_run ? s->as_run_len : 0);

			if (search_extend(s, pos, sx_min(bend - pos, want)))
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
			if (search_extend(s, base + off, hit - off))
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
 * Allocate between @minlen and @maxlen contiguous blocks.
 *
 * Policy: walk free runs in block order from @hint (or sb_datastart when the
 * hint is 0 or outside the data area) to the end of the device, then from
 * sb_datastart round to the hint.  The first run of at least @maxlen blocks
 * wins and its first @maxlen blocks are taken; failing that, the longest run
 * of at least @minlen (the first of equals) is taken whole.  A run that the
 * wrap point cuts is followed on past the hint in the second leg, so it is
 * measured whole.  @maxlen above sx_alloc_max_extent() is lowered to it;
 * @minlen above it is -EINVAL.
 */
int sx_alloc_extent(struct sx_trans *tp, u64 hint, u32 minlen, u32 maxlen,
		    u64 *bnop, u32 *lenp)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_alloc *a = mp->m_alloc;
	const struct sx_sb *sb = &mp->m_sb;
	struct alloc_search s;
	u64 start, bno, len;
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
	error = search_range(&s, start, sb->sb_dblocks);
	if (error == 0 && start > sb->sb_datastart)
		error = search_range(&s, sb->sb_datastart,
				     sx_min(start + maxlen, sb->sb_dblocks));
	if (s.as_bp)
		sx_buf_relse(s.as_bp);
	if (error < 0)
		return error;
	if (error == 1) {
		bno = s.as_run_start;
		len = maxlen;
	} else if (s.as_best_len) {
		bno = s.as_best_start;
		len = s.as_best_len;
	} else {
		return -ENOSPC;
	}

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
	error = alloc_change(tp, a, bno, len, false);
	if (!error)
		sx_atomic64_add_return(&a->a_frees, 1);
	return error;
}

/*
 * Blocks freed by a transaction that is not yet durable may be allocated
 * at once.  That is safe for metadata (logged, written back only after the
 * log), but data written in place into such a block would survive a crash
 * that gives the block back to its old owner.  So force the log if any
 * blocks were freed since the last time this was done.  Call it holding
 * the allocation (after sx_alloc_extent() in the same transaction): frees
 * need bitmap block 0, so every free it must cover has committed.
 */
int sx_alloc_reuse_barrier(struct sx_mount *mp)
{
	struct sx_alloc *a = mp->m_alloc;
	s64 frees, durable;
	int error;

	if (!a)
		return 0;
	frees = sx_atomic64_read(&a->a_frees);
	if (sx_atomic64_read(&a->a_frees_durable) >= frees)
		return 0;
	error = sx_log_force(mp);
	if (error)
		return error;
	do {
		durable = sx_atomic64_read(&a->a_frees_durable);
		if (durable >= frees)
			break;
	} while (sx_atomic64_cmpxchg(&a->a_frees_durable, durable, frees) != durable);
	return 0;
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
