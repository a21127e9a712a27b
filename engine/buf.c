// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Metadata buffer cache.
 *
 * Lock order: a buffer's b_lock, then the log's locks, then the cache lock.
 * The cache lock covers the hash, the LRU, the dirty list and each buffer's
 * b_state, b_refs, b_pin and LSNs; b_lock covers the contents and b_flags.
 */
#include "util.h"
#include "buf.h"
#include "mount.h"
#include "dev.h"
#include "log.h"

/*
 * Before-images kept for the next joins: more than the buffers a
 * transaction usually joins at once (a swap step, a batch of frees), so
 * that their memory stays warm; beyond that they go back to the allocator.
 */
#define SX_BCACHE_ORIGS		64

/*
 * The cache's default size: 4,096 buffers, or 16 MiB of blocks where that
 * is more.  A swap of two files of 100,000 single-block extents at 1 KiB
 * blocks dirties some 5,200 mapping blocks: with 4,096 buffers the cache
 * checkpoints three times on the way to write dirty ones back, and reads
 * 1,100 of them twice (0.156 s; with 16,384 and a log that holds the
 * swap, 0.124 s, 8 writes instead of 3,100, 3 flushes instead of 8).
 */
#define SX_BCACHE_DEFAULT		4096u
#define SX_BCACHE_DEFAULT_BYTES		(16u << 20)

struct sx_bcache {
	struct sx_mutex	bc_lock;
	u32		bc_nhash;	/* power of 2 */
	struct sx_list	*bc_hash;
	struct sx_list	bc_lru;		/* unreferenced, clean: reclaimable */
	struct sx_list	bc_dirty;	/* each holds a reference */
	u32		bc_max;
	u32		bc_count;
	u32		bc_ndirty;
	struct sx_list	bc_data;	/* data buffers (SX_BS_DATA), never on the LRU */
	u32		bc_ndata;
	u64		bc_tail;	/* the log's tail, as sx_bcache_set_tail() said */
	struct sx_bcache_stats bc_stats;
	u32		bc_bsize;
	struct sx_slab	*bc_heads;	/* struct sx_buf */
	struct sx_slab	*bc_blocks;	/* b_data and b_orig */
	u32		bc_norigs;
	void		*bc_origs[SX_BCACHE_ORIGS];	/* before-images to reuse */
};

/* Bucket of @blkno. */
static struct sx_list *sx_bcache_bucket(struct sx_bcache *bc, u64 blkno)
{
	u64 h = blkno * 0x9e3779b97f4a7c15ull;

	return &bc->bc_hash[(h >> 32) & (bc->bc_nhash - 1)];
}

/* Set up the buffer cache of @mp. */
int sx_bcache_init(struct sx_mount *mp, u32 max)
{
	struct sx_bcache *bc;
	u32 i;

	bc = sx_zalloc(sizeof(*bc), 0);
	if (!bc)
		return -ENOMEM;
	bc->bc_bsize = mp->m_bsize;
	bc->bc_max = max ? max : sx_max(SX_BCACHE_DEFAULT, SX_BCACHE_DEFAULT_BYTES >> mp->m_blog);
	if (bc->bc_max < 64)
		bc->bc_max = 64;
	bc->bc_nhash = 256;
	while (bc->bc_nhash < bc->bc_max && bc->bc_nhash < (1u << 20))
		bc->bc_nhash <<= 1;
	bc->bc_hash = sx_alloc(sizeof(*bc->bc_hash) * bc->bc_nhash, 0);
	bc->bc_heads = sx_slab_create(sizeof(struct sx_buf));
	bc->bc_blocks = sx_slab_create(bc->bc_bsize);
	if (!bc->bc_hash || !bc->bc_heads || !bc->bc_blocks) {
		sx_slab_destroy(bc->bc_blocks);
		sx_slab_destroy(bc->bc_heads);
		sx_free(bc->bc_hash);
		sx_free(bc);
		return -ENOMEM;
	}
	for (i = 0; i < bc->bc_nhash; i++)
		sx_list_init(&bc->bc_hash[i]);
	sx_list_init(&bc->bc_lru);
	sx_list_init(&bc->bc_dirty);
	sx_list_init(&bc->bc_data);
	sx_mutex_init(&bc->bc_lock);
	mp->m_bcache = bc;
	return 0;
}

/* Free one buffer that is out of every list. */
static void sx_buf_free(struct sx_buf *bp)
{
	struct sx_bcache *bc = bp->b_bc;

	sx_mutex_destroy(&bp->b_lock);
	sx_slab_free(bc->bc_blocks, bp->b_orig);
	sx_slab_free(bc->bc_blocks, bp->b_data);
	sx_slab_free(bc->bc_heads, bp);
}

/* Take @bp out of the cache and free it (cache lock held, no references). */
static void sx_bcache_evict(struct sx_bcache *bc, struct sx_buf *bp)
{
	ASSERT(sx_mutex_is_held(&bc->bc_lock));
	ASSERT(bp->b_refs == 0 && bp->b_pin == 0);
	if (bp->b_state & (SX_BS_LRU | SX_BS_DATA))
		sx_list_del(&bp->b_lru);
	if (bp->b_state & SX_BS_DATA)
		sx_store_release(bc->bc_ndata, bc->bc_ndata - 1);
	sx_list_del(&bp->b_hash);
	bc->bc_count--;
	sx_buf_free(bp);
}

/* Free every buffer; a shut-down mount may still have dirty ones. */
void sx_bcache_destroy(struct sx_mount *mp)
{
	struct sx_bcache *bc = mp->m_bcache;
	struct sx_list *pos, *n;
	u32 i;

	if (!bc)
		return;
	for (i = 0; i < bc->bc_nhash; i++) {
		sx_list_for_each_safe(pos, n, &bc->bc_hash[i]) {
			struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_hash);

			sx_list_del(&bp->b_hash);
			sx_list_del(&bp->b_dirty);
			sx_list_del(&bp->b_lru);
			sx_buf_free(bp);
		}
	}
	while (bc->bc_norigs)
		sx_slab_free(bc->bc_blocks, bc->bc_origs[--bc->bc_norigs]);
	sx_mutex_destroy(&bc->bc_lock);
	sx_slab_destroy(bc->bc_blocks);
	sx_slab_destroy(bc->bc_heads);
	sx_free(bc->bc_hash);
	sx_free(bc);
	mp->m_bcache = NULL;
}

/* Copy the counters. */
void sx_bcache_get_stats(struct sx_mount *mp, struct sx_bcache_stats *st)
{
	struct sx_bcache *bc = mp->m_bcache;

	sx_mutex_lock(&bc->bc_lock);
	*st = bc->bc_stats;
	st->bs_cached = bc->bc_count;
	st->bs_dirty = bc->bc_ndirty;
	sx_mutex_unlock(&bc->bc_lock);
}

/* Reclaim clean unreferenced buffers until the cache is within @target. */
static void sx_bcache_shrink(struct sx_bcache *bc, u32 target)
{
	ASSERT(sx_mutex_is_held(&bc->bc_lock));
	while (bc->bc_count > target && !sx_list_empty(&bc->bc_lru)) {
		struct sx_buf *bp = sx_list_first(&bc->bc_lru, struct sx_buf, b_lru);

		sx_bcache_evict(bc, bp);
		bc->bc_stats.bs_reclaims++;
	}
}

/* Drop every clean unreferenced buffer. */
void sx_bcache_purge(struct sx_mount *mp)
{
	struct sx_bcache *bc = mp->m_bcache;

	sx_mutex_lock(&bc->bc_lock);
	sx_bcache_shrink(bc, 0);
	sx_mutex_unlock(&bc->bc_lock);
}

/* True when dirty buffers use three quarters of the cache. */
bool sx_bcache_pressure(struct sx_mount *mp)
{
	struct sx_bcache *bc = mp->m_bcache;
	bool ret;

	sx_mutex_lock(&bc->bc_lock);
	ret = bc->bc_ndirty > bc->bc_max / 4 * 3;
	sx_mutex_unlock(&bc->bc_lock);
	return ret;
}

/* Look up @blkno and take a reference (cache lock held). */
static struct sx_buf *sx_bcache_find(struct sx_bcache *bc, u64 blkno)
{
	struct sx_list *head = sx_bcache_bucket(bc, blkno), *pos;

	ASSERT(sx_mutex_is_held(&bc->bc_lock));
	sx_list_for_each(pos, head) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_hash);

		if (bp->b_blkno != blkno || (bp->b_state & SX_BS_INVALID))
			continue;
		if (bp->b_state & SX_BS_LRU) {
			sx_list_del(&bp->b_lru);
			bp->b_state &= ~SX_BS_LRU;
		}
		bp->b_refs++;
		return bp;
	}
	return NULL;
}

/* Find a block of [@bno, +@len) cached as live metadata. */
bool sx_buf_range_live(struct sx_mount *mp, u64 bno, u64 len, u64 *hit)
{
	struct sx_bcache *bc = mp->m_bcache;
	bool found = false;
	u64 b;

	sx_mutex_lock(&bc->bc_lock);
	for (b = bno; b - bno < len && !found; b++) {
		struct sx_list *pos;

		sx_list_for_each(pos, sx_bcache_bucket(bc, b)) {
			struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_hash);

			if (bp->b_blkno != b || !bp->b_ops || sx_buf_is_data(bp) ||
			    (bp->b_state & (SX_BS_STALE | SX_BS_INVALID)))
				continue;
			/* b_flags is ours to read only under b_lock, held by our transaction */
			if (sx_mutex_is_held(&bp->b_lock) && (bp->b_flags & SX_BUF_INVAL))
				continue;
			*hit = b;
			found = true;
			break;
		}
	}
	sx_mutex_unlock(&bc->bc_lock);
	return found;
}

/* The cached data buffer of @b, if any (cache lock held). */
static struct sx_buf *sx_bcache_data_at(struct sx_bcache *bc, u64 b)
{
	struct sx_list *pos;

	sx_list_for_each(pos, sx_bcache_bucket(bc, b)) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_hash);

		if (bp->b_blkno == b && (bp->b_state & SX_BS_DATA) &&
		    !(bp->b_state & (SX_BS_STALE | SX_BS_INVALID)))
			return bp;
	}
	return NULL;
}

/*
 * Find a block of [@bno, +@len) held in a data buffer: by block when the
 * range is shorter than the list of data buffers, else through the list.
 */
bool sx_buf_range_data(struct sx_mount *mp, u64 bno, u64 len, u64 *hit)
{
	struct sx_bcache *bc = mp->m_bcache;
	struct sx_list *pos;
	bool found = false;
	u64 b;

	if (!sx_read_once(bc->bc_ndata))
		return false;
	sx_mutex_lock(&bc->bc_lock);
	if (len <= bc->bc_ndata) {
		for (b = bno; b - bno < len; b++) {
			if (sx_bcache_data_at(bc, b)) {
				*hit = b;
				found = true;
				break;
			}
		}
	} else {
		sx_list_for_each(pos, &bc->bc_data) {
			struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_lru);

			if (bp->b_blkno < bno || bp->b_blkno - bno >= len ||
			    (bp->b_state & (SX_BS_STALE | SX_BS_INVALID)))
				continue;
			if (!found || bp->b_blkno < *hit)
				*hit = bp->b_blkno;
			found = true;
		}
	}
	sx_mutex_unlock(&bc->bc_lock);
	return found;
}

/* The data buffer of @b, locked, if its lock is free (sx_buf_trylock_data()). */
struct sx_buf *sx_buf_trylock_data(struct sx_mount *mp, u64 b)
{
	struct sx_bcache *bc = mp->m_bcache;
	struct sx_buf *bp;
	bool live;

	if (!sx_read_once(bc->bc_ndata))
		return NULL;
	sx_mutex_lock(&bc->bc_lock);
	bp = sx_bcache_data_at(bc, b);
	if (bp)
		bp->b_refs++;
	sx_mutex_unlock(&bc->bc_lock);
	if (!bp)
		return NULL;
	if (!sx_mutex_trylock(&bp->b_lock)) {
		sx_buf_rele(bp);
		return NULL;
	}
	/* it may have turned stale or been dropped before the lock came */
	sx_mutex_lock(&bc->bc_lock);
	live = (bp->b_state & SX_BS_DATA) && !(bp->b_state & (SX_BS_STALE | SX_BS_INVALID));
	sx_mutex_unlock(&bc->bc_lock);
	if (!live) {
		sx_buf_relse(bp);
		return NULL;
	}
	return bp;
}

/*
 * Reads of file data: a block in a data buffer may not be home yet, and
 * the buffer is never older than home.
 */
void sx_buf_overlay_data(struct sx_mount *mp, u64 bno, u32 count, void *buf)
{
	struct sx_bcache *bc = mp->m_bcache;
	u64 b;

	if (!sx_read_once(bc->bc_ndata))
		return;
	sx_mutex_lock(&bc->bc_lock);
	for (b = bno; b - bno < count; b++) {
		struct sx_buf *bp = sx_bcache_data_at(bc, b);

		if (bp)
			memcpy((u8 *)buf + ((b - bno) << mp->m_blog), bp->b_data, mp->m_bsize);
	}
	sx_mutex_unlock(&bc->bc_lock);
}

u32 sx_bcache_data_count(struct sx_mount *mp)
{
	struct sx_bcache *bc = mp->m_bcache;
	u32 n;

	sx_mutex_lock(&bc->bc_lock);
	n = bc->bc_ndata;
	sx_mutex_unlock(&bc->bc_lock);
	return n;
}

/* The log's tail moved to @tail: let go of the data buffers behind it. */
void sx_bcache_set_tail(struct sx_mount *mp, u64 tail)
{
	struct sx_bcache *bc = mp->m_bcache;
	struct sx_list *pos, *n;

	sx_mutex_lock(&bc->bc_lock);
	bc->bc_tail = tail;
	sx_list_for_each_safe(pos, n, &bc->bc_data) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_lru);

		if (bp->b_refs == 0 && bp->b_pin == 0 && !(bp->b_state & SX_BS_DIRTY) &&
		    bp->b_lsn < tail)
			sx_bcache_evict(bc, bp);
	}
	sx_mutex_unlock(&bc->bc_lock);
}

/* Give @bp a before-image, from those kept for reuse if there is one. */
int sx_buf_orig_get(struct sx_buf *bp)
{
	struct sx_bcache *bc = bp->b_bc;

	if (bp->b_orig)
		return 0;
	sx_mutex_lock(&bc->bc_lock);
	if (bc->bc_norigs)
		bp->b_orig = bc->bc_origs[--bc->bc_norigs];
	sx_mutex_unlock(&bc->bc_lock);
	if (!bp->b_orig)
		bp->b_orig = sx_slab_alloc(bc->bc_blocks, SX_NOFS);
	return bp->b_orig ? 0 : -ENOMEM;
}

/* Take @bp's before-image back, to keep for reuse or free. */
void sx_buf_orig_put(struct sx_buf *bp)
{
	struct sx_bcache *bc = bp->b_bc;
	void *orig = bp->b_orig;

	if (!orig)
		return;
	bp->b_orig = NULL;
	sx_mutex_lock(&bc->bc_lock);
	if (bc->bc_norigs < SX_BCACHE_ORIGS) {
		bc->bc_origs[bc->bc_norigs++] = orig;
		orig = NULL;
	}
	sx_mutex_unlock(&bc->bc_lock);
	sx_slab_free(bc->bc_blocks, orig);
}

/* Take another reference to a referenced buffer. */
void sx_buf_hold(struct sx_buf *bp)
{
	sx_mutex_lock(&bp->b_bc->bc_lock);
	ASSERT(bp->b_refs > 0);
	bp->b_refs++;
	sx_mutex_unlock(&bp->b_bc->bc_lock);
}

/* Drop a reference under the cache lock; the last one parks or frees it. */
static void sx_buf_rele_locked(struct sx_bcache *bc, struct sx_buf *bp)
{
	ASSERT(sx_mutex_is_held(&bc->bc_lock));
	ASSERT(bp->b_refs > 0);
	if (--bp->b_refs > 0)
		return;
	if (bp->b_state & (SX_BS_INVALID | SX_BS_STALE)) {
		sx_bcache_evict(bc, bp);
		return;
	}
	if (bp->b_state & SX_BS_DATA) {
		/* kept on bc_data while recovery could still replay it */
		if (!(bp->b_state & SX_BS_DIRTY) && bp->b_pin == 0 && bp->b_lsn < bc->bc_tail)
			sx_bcache_evict(bc, bp);
		return;
	}
	bp->b_state |= SX_BS_LRU;
	sx_list_add_tail(&bp->b_lru, &bc->bc_lru);
	if (bc->bc_count > bc->bc_max)
		sx_bcache_shrink(bc, bc->bc_max);
}

/*
 * Give a locked buffer its type.  Data buffers move between the LRU's
 * world and bc_data as a block turns from metadata into data or back.
 */
static void sx_buf_set_ops(struct sx_bcache *bc, struct sx_buf *bp,
			   const struct sx_buf_ops *ops)
{
	bool was = bp->b_state & SX_BS_DATA, is = ops == &sx_data_buf_ops;

	bp->b_ops = ops;
	if (was == is)
		return;
	sx_mutex_lock(&bc->bc_lock);
	ASSERT(!(bp->b_state & SX_BS_LRU));	/* referenced: off the LRU */
	if (is) {
		sx_list_add(&bp->b_lru, &bc->bc_data);
		bp->b_state |= SX_BS_DATA;
		sx_store_release(bc->bc_ndata, bc->bc_ndata + 1);
	} else {
		sx_list_del(&bp->b_lru);
		bp->b_state &= ~SX_BS_DATA;
		sx_store_release(bc->bc_ndata, bc->bc_ndata - 1);
	}
	sx_mutex_unlock(&bc->bc_lock);
}

/*
 * Find or create the buffer of @blkno, referenced and locked.  *@newp says
 * whether it was just created (contents not read yet).
 */
static int sx_buf_find_lock(struct sx_mount *mp, u64 blkno, struct sx_buf **bpp,
			    bool *newp)
{
	struct sx_bcache *bc = mp->m_bcache;
	struct sx_buf *bp, *nbp = NULL;

	if (blkno >= mp->m_sb.sb_dblocks)
		return -EFSCORRUPTED;
again:
	sx_mutex_lock(&bc->bc_lock);
	bp = sx_bcache_find(bc, blkno);
	if (bp) {
		bc->bc_stats.bs_hits++;
		sx_mutex_unlock(&bc->bc_lock);
		if (nbp)
			sx_buf_free(nbp);
		nbp = NULL;
		sx_mutex_lock(&bp->b_lock);
		if (bp->b_state & SX_BS_INVALID) {
			/* the read that created it failed: try again */
			sx_mutex_unlock(&bp->b_lock);
			sx_buf_rele(bp);
			goto again;
		}
		*bpp = bp;
		*newp = false;
		return 0;
	}
	if (!nbp) {
		sx_mutex_unlock(&bc->bc_lock);
		nbp = sx_slab_zalloc(bc->bc_heads, SX_NOFS);
		if (!nbp)
			return -ENOMEM;
		nbp->b_data = sx_slab_zalloc(bc->bc_blocks, SX_NOFS);
		if (!nbp->b_data) {
			sx_slab_free(bc->bc_heads, nbp);
			return -ENOMEM;
		}
		nbp->b_blkno = blkno;
		nbp->b_bc = bc;
		sx_mutex_init(&nbp->b_lock);
		/* ordered by the block's role (inode.c), which changes with reuse */
		sx_mutex_set_unordered(&nbp->b_lock);
		sx_list_init(&nbp->b_lru);
		sx_list_init(&nbp->b_dirty);
		sx_list_init(&nbp->b_tlist);
		sx_list_init(&nbp->b_thash);
		sx_list_init(&nbp->b_hash);
		goto again;
	}
	bc->bc_stats.bs_misses++;
	nbp->b_refs = 1;
	sx_list_add(&nbp->b_hash, sx_bcache_bucket(bc, blkno));
	bc->bc_count++;
	/* lock before anyone else can find it, so they wait for the read */
	sx_mutex_lock(&nbp->b_lock);
	if (bc->bc_count > bc->bc_max)
		sx_bcache_shrink(bc, bc->bc_max);
	sx_mutex_unlock(&bc->bc_lock);
	*bpp = nbp;
	*newp = true;
	return 0;
}

/* Check the generic header, then the type's own checks. */
int sx_buf_verify(struct sx_mount *mp, const void *data, u64 blkno,
		  const struct sx_buf_ops *ops, u64 owner)
{
	const struct sx_dblk_hdr *hdr = data;

	if (le32_to_cpu(hdr->bh_crc) !=
	    sx_cksum_skip(data, mp->m_bsize, offsetof(struct sx_dblk_hdr, bh_crc))) {
		sx_warn(mp, "%s block %llu: bad CRC", ops->bo_name,
			(unsigned long long)blkno);
		return -EFSBADCRC;
	}
	if (SX_IS_CORRUPT(mp, le32_to_cpu(hdr->bh_magic) != ops->bo_magic) ||
	    SX_IS_CORRUPT(mp, le64_to_cpu(hdr->bh_blkno) != blkno) ||
	    SX_IS_CORRUPT(mp, memcmp(hdr->bh_uuid, mp->m_sb.sb_uuid, SX_UUID_SIZE) != 0) ||
	    SX_IS_CORRUPT(mp, le64_to_cpu(hdr->bh_owner) != owner))
		return -EFSCORRUPTED;
	if (ops->bo_verify)
		return ops->bo_verify(mp, data);
	return 0;
}

/*
 * A block's LSN names the last log record whose changes it holds, and
 * writeback comes after that record is durable: an LSN at or past the log
 * head was never written by this log.  Trusted, it would make the next
 * recovery skip changes the block lacks, so the block is corrupt.  (Before
 * the log is set up, recovery checks the blocks it replays into itself.)
 */
static int sx_buf_check_lsn(struct sx_mount *mp, const void *data, u64 blkno,
			    const struct sx_buf_ops *ops)
{
	u64 lsn = le64_to_cpu(((const struct sx_dblk_hdr *)data)->bh_lsn), head;

	if (!mp->m_log || !lsn)
		return 0;
	head = sx_log_head(mp);
	if (lsn < head)
		return 0;
	sx_err(mp, "%s block %llu has LSN %u/%u, which is not behind the log head %u/%u",
	       ops->bo_name, (unsigned long long)blkno, SX_LSN_CYCLE(lsn), SX_LSN_BLOCK(lsn),
	       SX_LSN_CYCLE(head), SX_LSN_BLOCK(head));
	return -EFSCORRUPTED;
}

/* Read and verify a block into a locked buffer. */
int sx_buf_read(struct sx_mount *mp, u64 blkno, const struct sx_buf_ops *ops,
		u64 owner, struct sx_buf **bpp)
{
	struct sx_buf *bp;
	bool isnew;
	int error;

	error = sx_buf_find_lock(mp, blkno, &bp, &isnew);
	if (error)
		return error;
	if (isnew) {
		error = sx_fault("buf_read");
		if (!error)
			error = sx_dev_read(mp, blkno, 1, bp->b_data);
		if (error)
			goto out_invalid;
	}
	if (ops == &sx_data_buf_ops) {
		/* file data has no header; but a live metadata block is not data */
		if (!isnew && bp->b_ops && bp->b_ops != ops && (bp->b_flags & SX_BUF_VERIFIED) &&
		    !(bp->b_state & (SX_BS_STALE | SX_BS_INVALID))) {
			sx_err(mp, "block %llu is cached as %s, not file data",
			       (unsigned long long)blkno, bp->b_ops->bo_name);
			error = -EFSCORRUPTED;
			goto out_invalid;
		}
		sx_buf_set_ops(mp->m_bcache, bp, ops);
		bp->b_owner = owner;
		bp->b_flags |= SX_BUF_VERIFIED;
	} else if (!(bp->b_flags & SX_BUF_VERIFIED) || bp->b_ops != ops || bp->b_owner != owner) {
		error = sx_buf_verify(mp, bp->b_data, blkno, ops, owner);
		if (!error)
			error = sx_buf_check_lsn(mp, bp->b_data, blkno, ops);
		if (error)
			goto out_invalid;
		sx_buf_set_ops(mp->m_bcache, bp, ops);
		bp->b_owner = owner;
		bp->b_flags |= SX_BUF_VERIFIED;
	}
	*bpp = bp;
	return 0;

out_invalid:
	/* a dirty buffer's contents are newer than the disk: keep them */
	if (isnew)
		sx_buf_invalidate(mp, bp);
	sx_buf_relse(bp);
	return error;
}

/* Return a locked buffer for a block about to be initialised. */
int sx_buf_get(struct sx_mount *mp, u64 blkno, const struct sx_buf_ops *ops,
	       u64 owner, struct sx_buf **bpp)
{
	struct sx_buf *bp;
	bool isnew;
	int error;

	error = sx_buf_find_lock(mp, blkno, &bp, &isnew);
	if (error)
		return error;
	sx_buf_set_ops(mp->m_bcache, bp, ops);
	bp->b_owner = owner;
	bp->b_flags |= SX_BUF_VERIFIED;
	*bpp = bp;
	return 0;
}

/* Mark a locked buffer's contents unusable so the next lookup rereads. */
void sx_buf_invalidate(struct sx_mount *mp, struct sx_buf *bp)
{
	struct sx_bcache *bc = mp->m_bcache;

	ASSERT(sx_mutex_is_held(&bp->b_lock));
	sx_mutex_lock(&bc->bc_lock);
	if (!(bp->b_state & SX_BS_DIRTY) && bp->b_pin == 0)
		bp->b_state |= SX_BS_INVALID;
	sx_mutex_unlock(&bc->bc_lock);
	bp->b_flags &= ~SX_BUF_VERIFIED;
}

/* Lock a referenced buffer. */
void sx_buf_lock(struct sx_buf *bp)
{
	sx_mutex_lock(&bp->b_lock);
}

/* Unlock a buffer. */
void sx_buf_unlock(struct sx_buf *bp)
{
	sx_mutex_unlock(&bp->b_lock);
}

/* Drop a reference. */
void sx_buf_rele(struct sx_buf *bp)
{
	struct sx_bcache *bc = bp->b_bc;

	sx_mutex_lock(&bc->bc_lock);
	sx_buf_rele_locked(bc, bp);
	sx_mutex_unlock(&bc->bc_lock);
}

/* Unlock and release. */
void sx_buf_relse(struct sx_buf *bp)
{
	sx_buf_unlock(bp);
	sx_buf_rele(bp);
}

/* Fill the generic header of a new metadata block. */
void sx_buf_init_hdr(struct sx_mount *mp, struct sx_buf *bp, u32 magic, u64 owner)
{
	struct sx_dblk_hdr *hdr = bp->b_data;

	hdr->bh_magic = cpu_to_le32(magic);
	hdr->bh_crc = 0;
	hdr->bh_blkno = cpu_to_le64(bp->b_blkno);
	hdr->bh_owner = cpu_to_le64(owner);
	hdr->bh_lsn = 0;
	memcpy(hdr->bh_uuid, mp->m_sb.sb_uuid, SX_UUID_SIZE);
	bp->b_owner = owner;
}

/* Stamp the LSN and CRC of a metadata block image. */
void sx_buf_stamp(struct sx_mount *mp, void *data, u64 lsn)
{
	struct sx_dblk_hdr *hdr = data;

	hdr->bh_lsn = cpu_to_le64(lsn);
	hdr->bh_crc = cpu_to_le32(sx_cksum_skip(data, mp->m_bsize,
						offsetof(struct sx_dblk_hdr, bh_crc)));
}

/*
 * Write a locked buffer in place.  The write verifier runs first: writing a
 * block that would not pass the read verifier would turn a memory error
 * into on-disk corruption, so the mount shuts down instead.
 */
int sx_buf_write(struct sx_mount *mp, struct sx_buf *bp)
{
	u64 lsn;
	int error;

	ASSERT(sx_mutex_is_held(&bp->b_lock));
	sx_mutex_lock(&mp->m_bcache->bc_lock);
	lsn = bp->b_lsn;
	sx_mutex_unlock(&mp->m_bcache->bc_lock);
	if (sx_buf_is_data(bp))
		goto write;		/* file data: no header to stamp, no verifier */
	sx_buf_stamp(mp, bp->b_data, lsn);
	if (bp->b_ops) {
		error = sx_buf_verify(mp, bp->b_data, bp->b_blkno, bp->b_ops, bp->b_owner);
		if (error) {
			sx_force_shutdown(mp, -EFSCORRUPTED, "refused to write corrupt %s block %llu",
					  bp->b_ops->bo_name, (unsigned long long)bp->b_blkno);
			return -EFSCORRUPTED;
		}
	}
write:
	error = sx_fault("buf_write");
	if (error) {
		sx_force_shutdown(mp, error, "metadata write of block %llu failed",
				  (unsigned long long)bp->b_blkno);
		return error;
	}
	return sx_dev_write(mp, bp->b_blkno, 1, bp->b_data, 0);
}

/* @bp, locked, is written: clean, off the dirty list, and that list's reference dropped. */
static void sx_buf_written(struct sx_bcache *bc, struct sx_buf *bp)
{
	sx_mutex_lock(&bc->bc_lock);
	bp->b_state &= ~SX_BS_DIRTY;
	bp->b_first_lsn = 0;
	sx_list_del(&bp->b_dirty);
	bc->bc_ndirty--;
	bc->bc_stats.bs_writebacks++;
	/* the dirty list's reference */
	sx_buf_rele_locked(bc, bp);
	sx_mutex_unlock(&bc->bc_lock);
}

/*
 * Data blocks of a writeback, gathered into one device write while they
 * follow one another on the device (the blocks of atomic writes come from
 * a rotor, and the dirty list holds them in the order they were logged):
 * a checkpoint writes thousands of them, and a write each would cost as
 * much as the writes the log saved.
 */
#define SX_WB_BYTES	(256u << 10)
#define SX_WB_BUFS	64

struct sx_wb {
	struct sx_buf	*w_bufs[SX_WB_BUFS];
	u32		w_n;
	u32		w_max;
	u8		*w_bounce;
};

/* Write the gathered data blocks, then let them go (clean if written). */
static int sx_wb_flush(struct sx_mount *mp, struct sx_wb *wb)
{
	u32 i;
	int error = 0;

	if (!wb->w_n)
		return 0;
	if (sx_is_shutdown(mp))
		error = -EIO;
	for (i = 0; i < wb->w_n && !error; i++)
		error = sx_fault("buf_write");
	if (!error) {
		for (i = 0; i < wb->w_n; i++)
			memcpy(wb->w_bounce + ((size_t)i << mp->m_blog), wb->w_bufs[i]->b_data,
			       mp->m_bsize);
		error = sx_dev_write(mp, wb->w_bufs[0]->b_blkno, wb->w_n, wb->w_bounce, 0);
	}
	if (error && !sx_is_shutdown(mp))
		sx_force_shutdown(mp, error, "data write of blocks %llu+%u failed",
				  (unsigned long long)wb->w_bufs[0]->b_blkno, wb->w_n);
	for (i = 0; i < wb->w_n; i++) {
		struct sx_buf *bp = wb->w_bufs[i];

		if (!error)
			sx_buf_written(mp->m_bcache, bp);
		sx_mutex_unlock(&bp->b_lock);
		sx_buf_rele(bp);
	}
	wb->w_n = 0;
	return error;
}

/* Add a locked, writable data buffer to the batch, writing the batch first if it must. */
static int sx_wb_add(struct sx_mount *mp, struct sx_wb *wb, struct sx_buf *bp)
{
	int error = 0;

	if (!wb->w_bounce) {
		wb->w_bounce = sx_alloc(SX_WB_BYTES, SX_NOFS);
		if (!wb->w_bounce)
			wb->w_max = 1;		/* a block at a time, from the buffer itself */
	}
	if (wb->w_n && (wb->w_n == wb->w_max ||
			bp->b_blkno != wb->w_bufs[wb->w_n - 1]->b_blkno + 1))
		error = sx_wb_flush(mp, wb);
	if (!wb->w_bounce) {
		/* no memory for a batch: write this one alone */
		if (!error)
			error = sx_buf_write(mp, bp);
		if (!error)
			sx_buf_written(mp->m_bcache, bp);
		sx_mutex_unlock(&bp->b_lock);
		sx_buf_rele(bp);
		return error;
	}
	wb->w_bufs[wb->w_n++] = bp;
	return error;
}

/* Write every dirty buffer that is unpinned and not held by a transaction. */
int sx_buf_writeback(struct sx_mount *mp, u64 *oldest, u32 *pinned, u32 *locked)
{
	struct sx_bcache *bc = mp->m_bcache;
	struct sx_buf **list = NULL;
	struct sx_list *pos;
	struct sx_wb wb;
	u32 n = 0, i, cap, skipped = 0;
	int error = 0, error2;
	u64 min = 0;

	sx_mutex_lock(&bc->bc_lock);
	cap = bc->bc_ndirty;
	sx_mutex_unlock(&bc->bc_lock);
	if (cap) {
		list = sx_alloc(sizeof(*list) * cap, SX_NOFS);
		if (!list)
			return -ENOMEM;
	}
	sx_mutex_lock(&bc->bc_lock);
	sx_list_for_each(pos, &bc->bc_dirty) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_dirty);

		if (n == cap)
			break;
		if (bp->b_pin) {
			skipped++;
			continue;
		}
		bp->b_refs++;
		list[n++] = bp;
	}
	sx_mutex_unlock(&bc->bc_lock);

	*locked = 0;
	wb.w_n = 0;
	wb.w_max = sx_min(SX_WB_BUFS, SX_WB_BYTES >> mp->m_blog);
	wb.w_bounce = NULL;
	for (i = 0; i < n; i++) {
		struct sx_buf *bp = list[i];

		if (!error && !sx_mutex_trylock(&bp->b_lock)) {
			/* the caller's own transaction may hold it: no wait ends that */
			if (!sx_mutex_is_held(&bp->b_lock))
				(*locked)++;
		} else if (!error) {
			bool writable;

			sx_mutex_lock(&bc->bc_lock);
			writable = bp->b_pin == 0 && (bp->b_state & SX_BS_DIRTY) &&
				   !(bp->b_state & SX_BS_STALE);
			sx_mutex_unlock(&bc->bc_lock);
			if (writable && sx_buf_is_data(bp)) {
				/* locked and referenced until its batch is written */
				error = sx_wb_add(mp, &wb, bp);
				continue;
			}
			error = sx_wb_flush(mp, &wb);
			if (writable && !error) {
				error = sx_buf_write(mp, bp);
				if (!error)
					sx_buf_written(bc, bp);
			}
			sx_mutex_unlock(&bp->b_lock);
		}
		sx_buf_rele(bp);
	}
	error2 = sx_wb_flush(mp, &wb);
	if (!error)
		error = error2;
	sx_free(wb.w_bounce);
	sx_free(list);

	/*
	 * Pinned: blocks left dirty because a force had them pinned, now or
	 * when the list was taken.  One whose force completed meanwhile holds
	 * the tail as well, and the next pass can write it: a reservation
	 * that saw no pinned block would call the log full (a 1-in-thousands
	 * -ENOSPC of test_force_seq_threads in CI).
	 */
	*pinned = skipped;
	sx_mutex_lock(&bc->bc_lock);
	sx_list_for_each(pos, &bc->bc_dirty) {
		struct sx_buf *bp = sx_list_entry(pos, struct sx_buf, b_dirty);

		if (bp->b_first_lsn && (!min || bp->b_first_lsn < min))
			min = bp->b_first_lsn;
		if (bp->b_pin)
			(*pinned)++;
	}
	sx_mutex_unlock(&bc->bc_lock);
	*oldest = min;
	return error;
}

/* A commit changed @bp: keep it in memory and off the disk until forced. */
void sx_buf_pin(struct sx_mount *mp, struct sx_buf *bp, bool stale)
{
	struct sx_bcache *bc = mp->m_bcache;

	sx_mutex_lock(&bc->bc_lock);
	bp->b_pin++;
	bp->b_refs++;			/* the log's reference, dropped at unpin */
	if (stale) {
		bp->b_state |= SX_BS_STALE;
		if (bp->b_state & SX_BS_DIRTY) {
			bp->b_state &= ~SX_BS_DIRTY;
			bp->b_first_lsn = 0;
			sx_list_del(&bp->b_dirty);
			bc->bc_ndirty--;
			sx_buf_rele_locked(bc, bp);
		}
	} else {
		bp->b_state &= ~SX_BS_STALE;
		if (!(bp->b_state & SX_BS_DIRTY)) {
			bp->b_state |= SX_BS_DIRTY;
			bp->b_refs++;		/* the dirty list's reference */
			sx_list_add_tail(&bp->b_dirty, &bc->bc_dirty);
			bc->bc_ndirty++;
		}
	}
	sx_mutex_unlock(&bc->bc_lock);
}

/* The change pinned by sx_buf_pin() is durable in the record at @lsn. */
void sx_buf_unpin(struct sx_mount *mp, struct sx_buf *bp, u64 lsn)
{
	struct sx_bcache *bc = mp->m_bcache;

	sx_mutex_lock(&bc->bc_lock);
	ASSERT(bp->b_pin > 0);
	bp->b_pin--;
	if (lsn > bp->b_lsn)
		bp->b_lsn = lsn;
	if ((bp->b_state & SX_BS_DIRTY) && !bp->b_first_lsn)
		bp->b_first_lsn = lsn;
	sx_buf_rele_locked(bc, bp);
	sx_mutex_unlock(&bc->bc_lock);
}

/* The known metadata block types; see sx_buf_type_register(). */
#define SX_BUF_TYPES_MAX	16
static const struct sx_buf_ops *sx_buf_types[SX_BUF_TYPES_MAX];

/* Register @ops for its magic (again: a no-op). */
int sx_buf_type_register(const struct sx_buf_ops *ops)
{
	const struct sx_buf_ops *cur = sx_buf_type_lookup(ops->bo_magic);
	u32 i;

	if (cur)
		return cur == ops ? 0 : -EEXIST;
	for (i = 0; i < SX_BUF_TYPES_MAX; i++) {
		if (!sx_buf_types[i]) {
			sx_buf_types[i] = ops;
			return 0;
		}
	}
	return -ENOSPC;
}

/* Forget @ops. */
void sx_buf_type_unregister(const struct sx_buf_ops *ops)
{
	u32 i;

	for (i = 0; i < SX_BUF_TYPES_MAX; i++)
		if (sx_buf_types[i] == ops)
			sx_buf_types[i] = NULL;
}

/* The type whose blocks start with @magic. */
const struct sx_buf_ops *sx_buf_type_lookup(u32 magic)
{
	u32 i;

	for (i = 0; i < SX_BUF_TYPES_MAX; i++)
		if (sx_buf_types[i] && sx_buf_types[i]->bo_magic == magic)
			return sx_buf_types[i];
	return NULL;
}

/*
 * File data logged whole: nothing to verify (sx_buf_read() and
 * sx_buf_write() skip the header for this type), no magic of its own.
 */
const struct sx_buf_ops sx_data_buf_ops = {
	.bo_name	= "file data",
};
