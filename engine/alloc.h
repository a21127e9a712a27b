/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Free-space allocator over an on-disk bitmap.
 *
 * A bitmap rather than a free-space B+tree: its size is fixed at mkfs (no
 * allocation while allocating), each change logs a few bytes of one block,
 * and exact free counts fall out of per-block counters that are rebuilt at
 * mount.  In-core, a per-bitmap-block free count lets searches skip full
 * blocks, so a search costs O(bitmap blocks / 64) before it finds space.
 */
#ifndef SX_ALLOC_H
#define SX_ALLOC_H

#include "util.h"
#include "sb.h"
#include "buf.h"

struct sx_trans;

/** sx_alloc_init() - read every bitmap block and build the in-core counts */
int sx_alloc_init(struct sx_mount *mp);
/** sx_alloc_destroy() - free the in-core allocator state */
void sx_alloc_destroy(struct sx_mount *mp);

/**
 * sx_alloc_extent() - allocate between @minlen and @maxlen contiguous blocks
 * @hint: preferred first block (0 = anywhere)
 * @bnop, @lenp: the extent allocated
 *
 * The longest run up to @maxlen at or after @hint is preferred.  Return: 0,
 * -ENOSPC when no run of @minlen exists, -EINVAL for bad lengths.
 */
int sx_alloc_extent(struct sx_trans *tp, u64 hint, u32 minlen, u32 maxlen,
		    u64 *bnop, u32 *lenp);

/**
 * sx_free_extent() - return [@bno, @bno + @len) to free space
 *
 * Return: 0, or -EFSCORRUPTED if any block is already free or out of range.
 */
int sx_free_extent(struct sx_trans *tp, u64 bno, u64 len);

/**
 * sx_free_check_data() - check that [@bno, @bno + @len), file data about to
 * be freed, holds nothing the mount knows as metadata at no I/O cost (the
 * fsinfo block, the root directory's inode, a cached inode, a block cached
 * as live metadata)
 *
 * Return: 0, or -EFSCORRUPTED (a damaged mapping) if it does.
 */
int sx_free_check_data(struct sx_mount *mp, u64 bno, u64 len);

/**
 * sx_free_data() - free [@bno, @bno + @len), blocks a file mapped: checked
 * by sx_free_check_data(), freed, and the images of them the log still
 * holds cancelled, at most @cancels of them (sx_trans_stale_data(); the
 * caller reserved sx_trans_stale_bytes() each)
 *
 * Return: 0, or the error of the check or of the free.
 */
int sx_free_data(struct sx_trans *tp, u64 bno, u64 len, u32 cancels);

/*
 * Images still in the log that a free made inside another step (a piece
 * of sx_file_free_blocks(), a refcount step) cancels at most: enough for
 * the blocks small atomic writes carry; more stay withheld from data
 * until a checkpoint, as they would without a cancel.
 */
#define SX_FREE_DATA_CANCELS	4

/** sx_free_data_res_bytes() - log bytes of sx_free_data() of one extent with SX_FREE_DATA_CANCELS */
u32 sx_free_data_res_bytes(const struct sx_mount *mp);

/**
 * sx_alloc_data_extent() - sx_alloc_extent() for blocks that file data will
 * be written into in place: never blocks freed by a transaction that is not
 * yet durable (busy), or a crash could give them back to their old owner
 * with the new data in them.  Only if nothing else fits does it force the
 * log (once) and take them; blocks freed by @tp itself stay busy.
 */
int sx_alloc_data_extent(struct sx_trans *tp, u64 hint, u32 minlen, u32 maxlen,
			 u64 *bnop, u32 *lenp);

/**
 * sx_alloc_data_next() - sx_alloc_data_extent() at the first free blocks
 * past those it gave last (a rotor): copy-on-write data, whose old place is
 * no hint, of writes that follow one another lands side by side
 */
int sx_alloc_data_next(struct sx_trans *tp, u32 minlen, u32 maxlen, u64 *bnop, u32 *lenp);

/**
 * sx_alloc_committed() - @tp reached the log as its transaction @seq (the
 * commit count sx_log_commit() returned): what it freed is busy until the
 * log is durable that far.  Called before @tp releases its buffers.
 */
void sx_alloc_committed(struct sx_trans *tp, u64 seq);

/** sx_alloc_busy_blocks() - committed frees still busy (for tests; not from an owner) */
u64 sx_alloc_busy_blocks(struct sx_mount *mp);

/** sx_alloc_free_blocks() - exact count of free blocks */
u64 sx_alloc_free_blocks(struct sx_mount *mp);

/**
 * sx_alloc_owned() - true if the calling thread holds the allocator (bitmap
 * block 0, which an allocating or freeing transaction keeps until it ends)
 */
bool sx_alloc_owned(struct sx_mount *mp);

/** sx_alloc_is_free() - read whether @bno is free (for the checker and tests) */
int sx_alloc_is_free(struct sx_mount *mp, u64 bno, bool *freep);

/** sx_alloc_res_bytes() - log bytes to reserve per extent allocated or freed */
u32 sx_alloc_res_bytes(const struct sx_mount *mp);

/**
 * sx_alloc_max_extent() - the most blocks one sx_alloc_extent() hands out or
 * one sx_free_extent() takes back (one bitmap block's worth of bits, so that
 * a call changes at most two bitmap blocks); larger frees are -EINVAL
 */
u32 sx_alloc_max_extent(const struct sx_mount *mp);

/* The verifier of bitmap blocks. */
extern const struct sx_buf_ops sx_bitmap_buf_ops;

/** sx_bitmap_init_block() - format bitmap block @index for a new filesystem */
void sx_bitmap_init_block(const struct sx_sb *sb, u32 index, void *data);

#endif /* SX_ALLOC_H */
