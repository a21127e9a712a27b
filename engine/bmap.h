/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The extent map of a regular file: its fork holds mappings of file block
 * ranges to device blocks, written or unwritten; holes are implicit.
 * Adjacent compatible mappings merge.  Each call changes at most one
 * mapping piece, so a caller can bound its transactions and roll between
 * calls.  Mapping and unmapping move the inode's block count with the blocks.
 */
#ifndef SX_BMAP_H
#define SX_BMAP_H

#include "util.h"

struct sx_trans;
struct sx_inode;
struct sx_fork_cur;

#define SX_HOLE			(~0ull)		/* br_startblock of a hole */

/* A mapping (or hole) in host byte order. */
struct sx_bmap_irec {
	u64	br_startoff;		/* file block */
	u64	br_startblock;		/* device block, or SX_HOLE */
	u32	br_blockcount;
	u32	br_state;		/* SX_BMAP_UNWRITTEN or 0 */
};

/* The fork ops of extent maps (and the B+tree type behind them). */
extern const struct sx_fork_ops sx_bmap_fork_ops;
extern const struct sx_btree_ops sx_bmbt_ops;

/**
 * sx_bmap_lookup() - the mapping that contains file block @off, or the hole
 * there, which runs to the next mapping (at most SX_BMAP_MAXLEN blocks)
 * @tp: NULL for a read-only lookup (caller holds the inode lock)
 */
int sx_bmap_lookup(struct sx_trans *tp, struct sx_inode *ip, u64 off,
		   struct sx_bmap_irec *irec);

/**
 * sx_bmap_next() - the mapping that contains file block @off or, if @off is
 * in a hole, the first mapping after it; @found false if there is none
 * (one lookup however long the hole)
 * @tp: NULL for a read-only lookup (caller holds the inode lock)
 */
int sx_bmap_next(struct sx_trans *tp, struct sx_inode *ip, u64 off,
		 struct sx_bmap_irec *irec, bool *found);

/**
 * sx_bmap_next_n() - sx_bmap_next() and the mappings after it, up to @n, in
 * one walk; *@got says how many (0: none at or after @off)
 */
int sx_bmap_next_n(struct sx_trans *tp, struct sx_inode *ip, u64 off,
		   struct sx_bmap_irec *irecs, u32 n, u32 *got);

/**
 * sx_bmap_map() - map @irec (which must lie in a hole) and charge its blocks
 * to the inode; merges with compatible neighbours
 */
int sx_bmap_map(struct sx_trans *tp, struct sx_inode *ip, const struct sx_bmap_irec *irec);

/**
 * sx_bmap_map_nocharge() - sx_bmap_map() without charging the blocks: a
 * swap moves blocks between files and moves the block counts itself
 */
int sx_bmap_map_nocharge(struct sx_trans *tp, struct sx_inode *ip,
			 const struct sx_bmap_irec *irec);

/**
 * sx_bmap_unmap_one() - unmap the first mapped piece in [@off, @off + @len)
 * @removed: what was unmapped (br_startblock SX_HOLE: nothing was left)
 *
 * The caller owns the removed blocks (free them, or drop a reference).
 */
int sx_bmap_unmap_one(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
		      struct sx_bmap_irec *removed);

/** sx_bmap_unmap_one_nocharge() - sx_bmap_unmap_one() leaving i_nblocks alone (swaps) */
int sx_bmap_unmap_one_nocharge(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
			       struct sx_bmap_irec *removed);

/*
 * The same two through a cursor the caller keeps across the calls of one
 * transaction (sx_fork_cur_init() on the extent map, sx_bmap_fork_ops), so
 * that a change near the last one skips the walk from the fork's root: the
 * swap's direct steps.  Release the cursor before the transaction commits,
 * or let the commit drop its buffers in a transaction that keeps clean
 * buffers joined (SX_TRANS_KEEP_CLEAN); after an error, start it afresh.
 *
 * These do not log the inode core at the end, as the others do: with the
 * block count left alone, the only inode fields they change are the
 * fork's (records, root, height, form, tree blocks), and the fork logs
 * the inode whenever it changes those.  The caller must have joined the
 * inode's block to the transaction (a swap's direct step does, for both
 * inodes, before its first change), so that the transaction names the
 * inode for fsync even when only a B+tree block changed.
 */
int sx_bmap_map_nocharge_cur(struct sx_fork_cur *fc, const struct sx_bmap_irec *irec);
int sx_bmap_unmap_one_nocharge_cur(struct sx_fork_cur *fc, u64 off, u64 len,
				   struct sx_bmap_irec *removed);

/**
 * sx_bmap_set_state_one() - give the first mapped piece in [@off, +@len)
 * whose state differs the state @state; @changed says what was changed
 */
int sx_bmap_set_state_one(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
			  u32 state, struct sx_bmap_irec *changed);

/**
 * sx_bmap_replace_one() - put @irec's blocks in place of the one mapping
 * that covers all of @irec's range, in one change of the fork (an update
 * where no neighbour merges), leaving i_nblocks alone
 * @removed: the piece replaced, whose blocks the caller now owns;
 *	br_startblock SX_HOLE if no single mapping covers the range, and then
 *	nothing changed (unmap the pieces and map @irec instead)
 *
 * What an unmap and a map of the same range would leave, without the
 * delete and insert between them: those shift the records after the
 * place twice, and log them each time.  An out-of-place rewrite of mapped
 * blocks (the atomic write) is the caller.
 */
int sx_bmap_replace_one(struct sx_trans *tp, struct sx_inode *ip,
			const struct sx_bmap_irec *irec, struct sx_bmap_irec *removed);

/** sx_bmap_res_bytes() - log bytes one map/unmap/set_state/replace call may need */
u32 sx_bmap_res_bytes(const struct sx_mount *mp, const struct sx_inode *ip);

/** sx_bmap_count() - the number of mappings */
u64 sx_bmap_count(const struct sx_inode *ip);

#endif /* SX_BMAP_H */
