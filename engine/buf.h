/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Metadata buffer cache.
 *
 * A buffer holds one metadata block.  It is read through a verifier, locked
 * by the one transaction that changes it, pinned in memory while it holds
 * committed changes not yet in a durable log record, and written in place
 * only by a checkpoint, after the log that describes it is durable.  Clean
 * unreferenced buffers sit on an LRU and are reclaimed past the cache limit.
 */
#ifndef SX_BUF_H
#define SX_BUF_H

#include "util.h"

struct sx_trans;
struct sx_cil_trans;
struct sx_buf;

/* Per-type verifier: the generic header checks run first. */
struct sx_buf_ops {
	const char	*bo_name;
	u32		bo_magic;
	/* type-specific structure checks; -EFSCORRUPTED on failure */
	int		(*bo_verify)(struct sx_mount *mp, const void *data);
	/*
	 * A cancelled transaction put the block's contents back (optional):
	 * in-core state taken from the block must follow it.  Called with
	 * the buffer locked, before the transaction lets it go.
	 */
	void		(*bo_cancel)(struct sx_mount *mp, struct sx_buf *bp);
};

/* Dirty regions are tracked in chunks of this many bytes. */
#define SX_BUF_CHUNK		128
#define SX_BUF_MAP_WORDS	(SX_MAX_BLOCKSIZE / SX_BUF_CHUNK / 64)

/* b_flags: changed only by the holder of b_lock */
enum {
	SX_BUF_NEW	= (1u << 0),	/* initialised in the current transaction */
	SX_BUF_VERIFIED	= (1u << 1),	/* contents passed the verifier for b_ops */
	SX_BUF_HOLD	= (1u << 2),	/* stays locked across commit/roll */
	SX_BUF_LOGGED	= (1u << 3),	/* changed in the current transaction */
	SX_BUF_INVAL	= (1u << 4),	/* binval'd in the current transaction */
};

/* b_state: changed only under the cache lock */
enum {
	SX_BS_DIRTY	= (1u << 0),	/* committed changes not written back */
	SX_BS_STALE	= (1u << 1),	/* no longer metadata; never written */
	SX_BS_INVALID	= (1u << 2),	/* contents unusable (read failed, cancelled init) */
	SX_BS_LRU	= (1u << 3),	/* on the LRU */
	SX_BS_DATA	= (1u << 4),	/* file data (sx_data_buf_ops), on bc_data */
};

struct sx_bcache;

struct sx_buf {
	struct sx_bcache *b_bc;		/* the cache it belongs to */
	u64		b_blkno;
	void		*b_data;
	const struct sx_buf_ops *b_ops;
	u64		b_owner;
	u32		b_flags;	/* SX_BUF_*, under b_lock */
	/* the rest of this block is under the cache lock */
	u32		b_state;	/* SX_BS_* */
	u32		b_refs;
	u32		b_pin;		/* commits waiting for a log force */
	u64		b_lsn;		/* LSN of the last change in a written record */
	u64		b_first_lsn;	/* LSN of the oldest change not written back */
	struct sx_mutex	b_lock;		/* held by the user changing it */
	struct sx_list	b_hash;
	struct sx_list	b_lru;
	struct sx_list	b_dirty;
	/* the current transaction's view */
	struct sx_trans	*b_trans;
	struct sx_list	b_tlist;	/* on the transaction's buffer list */
	struct sx_list	b_thash;	/* on a bucket of the transaction's hash (trans.c) */
	void		*b_orig;	/* contents before this transaction, for cancel;
					 * NULL out of a transaction */
	u32		b_tcost;	/* worst-case log bytes of its changes */
	u64		b_logmap[SX_BUF_MAP_WORDS];
	/*
	 * Its newest op in the log's queue (log_cil.c), valid while
	 * b_cil_group is the open group: set by the commit of the
	 * transaction holding b_lock, under the log lock.
	 */
	u64		b_cil_group;	/* 0: none */
	struct sx_cil_trans *b_cil_ct;
	u32		b_cil_op;
	u64		b_cilmap[SX_BUF_MAP_WORDS];	/* the chunks that op logs */
};

/* Cache statistics, for tests and benchmarks. */
struct sx_bcache_stats {
	u64	bs_hits;
	u64	bs_misses;
	u64	bs_reclaims;
	u64	bs_writebacks;
	u32	bs_cached;
	u32	bs_dirty;
};

/** sx_bcache_init() - set up the cache of @mp holding at most @max buffers */
int sx_bcache_init(struct sx_mount *mp, u32 max);
/** sx_bcache_destroy() - free every cached buffer; none may be referenced */
void sx_bcache_destroy(struct sx_mount *mp);
/** sx_bcache_get_stats() - copy the cache counters */
void sx_bcache_get_stats(struct sx_mount *mp, struct sx_bcache_stats *st);
/** sx_bcache_purge() - drop every clean unreferenced buffer */
void sx_bcache_purge(struct sx_mount *mp);

/**
 * sx_buf_read() - return block @blkno locked and verified
 * @ops: verifier (magic, CRC, blkno, uuid, @owner, then bo_verify)
 *
 * Return: 0, -EFSCORRUPTED/-EFSBADCRC if the block fails verification, -EIO,
 * -ENOMEM.  A cached buffer is verified again if it was last used as
 * another type.
 */
int sx_buf_read(struct sx_mount *mp, u64 blkno, const struct sx_buf_ops *ops,
		u64 owner, struct sx_buf **bpp);

/**
 * sx_buf_get() - return block @blkno locked, without reading it
 *
 * A buffer not in the cache comes back zeroed; the caller initialises it.
 */
int sx_buf_get(struct sx_mount *mp, u64 blkno, const struct sx_buf_ops *ops,
	       u64 owner, struct sx_buf **bpp);

/**
 * sx_buf_orig_get() - give a buffer joining a transaction its before-image
 *
 * A buffer holds one only while it is joined (trans.c): the memory comes
 * from the few the cache keeps for reuse, or the allocator, so that a cache
 * full of buffers does not carry a second block each, and a join reuses
 * memory already touched instead of faulting in new pages.
 *
 * Return: 0 (also if it has one already), -ENOMEM.
 */
int sx_buf_orig_get(struct sx_buf *bp);
/** sx_buf_orig_put() - take a buffer's before-image back as it leaves its transaction */
void sx_buf_orig_put(struct sx_buf *bp);

/** sx_buf_relse() - unlock and release a buffer */
void sx_buf_relse(struct sx_buf *bp);

/** sx_buf_lock() / sx_buf_unlock() - take or drop a referenced buffer's lock */
void sx_buf_lock(struct sx_buf *bp);
void sx_buf_unlock(struct sx_buf *bp);

/** sx_buf_hold() - take an extra reference */
void sx_buf_hold(struct sx_buf *bp);
/** sx_buf_rele() - drop a reference (buffer must not be locked by caller) */
void sx_buf_rele(struct sx_buf *bp);

/**
 * sx_buf_init_hdr() - set the generic header of a new metadata block
 */
void sx_buf_init_hdr(struct sx_mount *mp, struct sx_buf *bp, u32 magic, u64 owner);

/**
 * sx_buf_verify() - run the generic header checks and @ops on @data
 *
 * Return: 0, -EFSBADCRC or -EFSCORRUPTED.
 */
int sx_buf_verify(struct sx_mount *mp, const void *data, u64 blkno,
		  const struct sx_buf_ops *ops, u64 owner);

/**
 * sx_buf_write() - stamp LSN and CRC and write @bp in place (checkpoint)
 */
int sx_buf_write(struct sx_mount *mp, struct sx_buf *bp);

/**
 * sx_buf_writeback() - write every dirty, unpinned, unlocked buffer
 * @oldest: set to the smallest b_first_lsn still dirty afterwards, or 0
 * @pinned: set to how many dirty buffers it left because a commit that a
 *	force has not completed pinned them (they become writable when the
 *	force completes)
 * @locked: set to how many it left because another thread held them locked
 *	(a transaction between its commit and its release: they become
 *	writable when it lets them go)
 *
 * The caller has forced the log and flushes the device afterwards.
 */
int sx_buf_writeback(struct sx_mount *mp, u64 *oldest, u32 *pinned, u32 *locked);

/*
 * The log's side: a commit pins each changed buffer (dirty, not writable,
 * referenced); the force that makes the change durable unpins it at @lsn.
 * A committed binval makes the buffer stale instead.
 */
void sx_buf_pin(struct sx_mount *mp, struct sx_buf *bp, bool stale);
void sx_buf_unpin(struct sx_mount *mp, struct sx_buf *bp, u64 lsn);

/*
 * File data in the log.  A small atomic write logs its new blocks whole
 * (SX_LB_DATA) instead of writing them in place before its record: one
 * device write for data and record.  Such a block lives in a buffer of
 * sx_data_buf_ops (no header, no verifier) until a checkpoint writes it
 * home, and the buffer stays cached, off the LRU, until the log's tail
 * has passed its last image, since until then recovery may write that
 * image over the block.  While it is cached: reads take the block from it
 * (sx_buf_overlay_data()), data allocations step around the block
 * (sx_buf_range_data()), and an overwrite in place goes through the log
 * too (file_io.c).
 */
extern const struct sx_buf_ops sx_data_buf_ops;

static inline bool sx_buf_is_data(const struct sx_buf *bp)
{
	return bp->b_ops == &sx_data_buf_ops;
}

/**
 * sx_buf_range_data() - whether a block of [@bno, +@len) is file data in
 * the log (cached in a data buffer); *@hit gets the first such block
 */
bool sx_buf_range_data(struct sx_mount *mp, u64 bno, u64 len, u64 *hit);

/**
 * sx_buf_trylock_data() - the data buffer of block @b, referenced and
 * locked, if one is cached and its lock is free at once; else NULL.  For a
 * caller that holds other buffers and can do without this one.
 */
struct sx_buf *sx_buf_trylock_data(struct sx_mount *mp, u64 b);

/** sx_buf_overlay_data() - copy the cached data blocks of [@bno, +@count) over @buf */
void sx_buf_overlay_data(struct sx_mount *mp, u64 bno, u32 count, void *buf);

/** sx_bcache_data_count() - how many data buffers are cached (for tests) */
u32 sx_bcache_data_count(struct sx_mount *mp);

/**
 * sx_bcache_set_tail() - the log's tail is @tail now: data buffers written
 * home whose last image lies behind it are let go
 */
void sx_bcache_set_tail(struct sx_mount *mp, u64 tail);

/* sx_bcache_pressure() - true when dirty buffers fill most of the cache */
bool sx_bcache_pressure(struct sx_mount *mp);

/* sx_buf_invalidate() - drop a locked buffer's contents (cancelled init) */
void sx_buf_invalidate(struct sx_mount *mp, struct sx_buf *bp);

/**
 * sx_buf_range_live() - whether a block of [@bno, +@len) is cached as live
 * metadata (typed, neither stale nor invalid, not invalidated by the
 * caller's own transaction); *@hit gets the first such block
 */
bool sx_buf_range_live(struct sx_mount *mp, u64 bno, u64 len, u64 *hit);

/* Stamp header LSN and CRC in @data, which is @blkno's contents. */
void sx_buf_stamp(struct sx_mount *mp, void *data, u64 lsn);

/*
 * The metadata block types by magic, so that log recovery can run the
 * structure verifier of a block it rebuilt before writing it.  sx_init()
 * registers the engine's; tests add their own.  Registration happens at
 * start-up, never while a mount recovers, like the log item registry.
 */
/** sx_buf_type_register() - make @ops known by its magic; -EEXIST, -ENOSPC */
int sx_buf_type_register(const struct sx_buf_ops *ops);
/** sx_buf_type_unregister() - forget @ops if it is registered */
void sx_buf_type_unregister(const struct sx_buf_ops *ops);
/** sx_buf_type_lookup() - the registered type of @magic, or NULL */
const struct sx_buf_ops *sx_buf_type_lookup(u32 magic);

#endif /* SX_BUF_H */
