/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Transactions.
 *
 * A transaction reserves log space up front, locks and joins the buffers it
 * changes, may log intent and done items, and then commits (its changes are
 * queued for the log; durable at the next force) or cancels (every joined
 * buffer gets its contents back).  A long operation rolls: commit and go on
 * in a fresh transaction with the same reservation, keeping held buffers
 * locked.
 */
#ifndef SX_TRANS_H
#define SX_TRANS_H

#include "util.h"

struct sx_buf;
struct sx_buf_ops;
struct sx_inode;

enum {
	SX_TRANS_SYNC	= (1u << 0),	/* force the log at commit */
	SX_TRANS_DIRTY	= (1u << 1),	/* something was logged */
	SX_TRANS_UNSHARED = (1u << 2),	/* left blocks with one owner (refcount.c) */
	SX_TRANS_KEEP_CLEAN = (1u << 3),	/* sx_trans_brelse() keeps the buffer
					 * joined until the commit */
	SX_TRANS_INODES_LOST = (1u << 4), /* joined more inodes than t_inodes holds */
};

/* Buckets of a transaction's hash of joined buffers. */
#define SX_TRANS_BHASH	64

/* Inodes a transaction remembers, so that their fsync knows how far to force. */
#define SX_TRANS_INODES	4

struct sx_trans_item {
	struct sx_list	ti_list;
	u16		ti_type;
	u32		ti_len;
	u8		ti_data[];
};

struct sx_trans {
	struct sx_mount	*t_mp;
	u64		t_tid;
	u32		t_flags;
	u32		t_res_bytes;	/* log space asked for */
	u32		t_res_blocks;	/* log blocks granted */
	u32		t_bytes;	/* worst-case formatted size so far */
	struct sx_list	t_bufs;
	struct sx_list	t_items;
	struct sx_list	t_dfops;	/* queued deferred work (defer.c) */
	struct sx_list	t_bhash[SX_TRANS_BHASH]; /* t_bufs by block number
						  * modulo SX_TRANS_BHASH */
	u64		t_inodes[SX_TRANS_INODES]; /* numbers of the inodes whose blocks it joined */
	u32		t_ninodes;
};

/**
 * sx_trans_alloc() - start a transaction that logs at most @res_bytes
 * @flags: SX_TRANS_SYNC to make the commit durable before it returns
 *
 * Return: 0, -EINVAL (reservation too large), -ENOSPC, -ENOMEM, -EIO.
 */
int sx_trans_alloc(struct sx_mount *mp, u32 res_bytes, u32 flags,
		   struct sx_trans **tpp);

/** sx_trans_read_buf() - read, lock and join a metadata block */
int sx_trans_read_buf(struct sx_trans *tp, u64 blkno, const struct sx_buf_ops *ops,
		      u64 owner, struct sx_buf **bpp);

/**
 * sx_trans_get_buf() - lock and join a block that is being (re)initialised;
 * it is logged whole, so replay never reads what was there before
 */
int sx_trans_get_buf(struct sx_trans *tp, u64 blkno, const struct sx_buf_ops *ops,
		     u64 owner, struct sx_buf **bpp);

/**
 * sx_trans_log_buf() - record that bytes [@first, @last] of @bp changed
 *
 * Return: 0, or -ENOSPC if the change overflows the reservation (the
 * transaction must then be cancelled).
 */
int sx_trans_log_buf(struct sx_trans *tp, struct sx_buf *bp, u32 first, u32 last);

/** sx_trans_bhold() - keep @bp locked and joined across commit or roll */
void sx_trans_bhold(struct sx_trans *tp, struct sx_buf *bp);
/** sx_trans_bhold_release() - let a held buffer go at the next commit */
void sx_trans_bhold_release(struct sx_trans *tp, struct sx_buf *bp);

/**
 * sx_trans_brelse() - release a joined buffer this transaction did not change
 * (with SX_TRANS_KEEP_CLEAN it stays joined, and locked, until the commit:
 * a transaction that walks the same blocks over and over, a batched swap
 * step, finds them joined instead of locking and copying them again)
 */
void sx_trans_brelse(struct sx_trans *tp, struct sx_buf *bp);

/**
 * sx_trans_binval() - the block stops being metadata: log a cancel so that
 * recovery replays none of its earlier changes, and never write it back
 */
int sx_trans_binval(struct sx_trans *tp, struct sx_buf *bp);

/**
 * sx_trans_stale_data() - freed file blocks [@bno, +@len) whose images the
 * log still holds (data buffers, buf.h): cancel at most @max of them in
 * @tp, which must have reserved sx_trans_stale_bytes() for each.  Once
 * @tp is durable recovery replays none of those images, so a checkpoint
 * need not write the blocks home and they may be used again at once.  A
 * block whose buffer another thread holds is left as it was: it stays
 * withheld until a checkpoint writes it and the tail passes its image.
 * Return: how many were cancelled.
 */
u32 sx_trans_stale_data(struct sx_trans *tp, u64 bno, u64 len, u32 max);

/** sx_trans_stale_bytes() - log bytes of one cancel by sx_trans_stale_data() */
u32 sx_trans_stale_bytes(void);

/**
 * sx_trans_log_item() - log an intent or done item payload of type @type
 *
 * The payload begins with struct sx_dlog_intent.  Return: 0, -ENOMEM,
 * -ENOSPC (reservation exceeded), -EINVAL (unregistered type).
 */
int sx_trans_log_item(struct sx_trans *tp, u16 type, const void *payload, u32 len);

/** sx_trans_commit() - commit and free @tp; on error the changes are lost */
int sx_trans_commit(struct sx_trans *tp);

/** sx_trans_roll() - commit *@tpp and replace it with a fresh transaction */
int sx_trans_roll(struct sx_trans **tpp);

/**
 * sx_trans_roll_res() - sx_trans_roll() into a transaction that reserves at
 * least @res_bytes (a chain whose later steps need more than its first)
 * @committed: if not NULL, set to whether *@tpp reached the log: the
 *	intents it logged are promised then, even if the roll goes on to fail
 */
int sx_trans_roll_res(struct sx_trans **tpp, u32 res_bytes, bool *committed);

/** sx_trans_space() - log bytes still free in @tp's reservation */
static inline u32 sx_trans_space(const struct sx_trans *tp)
{
	return tp->t_res_bytes - tp->t_bytes;
}

/** sx_trans_cancel() - undo every change of @tp and free it; NULL is a no-op */
void sx_trans_cancel(struct sx_trans *tp);

/** sx_trans_op_bytes() - worst-case log bytes for an op with @payload bytes */
u32 sx_trans_op_bytes(u32 payload);
/** sx_trans_buf_bytes() - worst-case log bytes for logging a whole block */
u32 sx_trans_buf_bytes(const struct sx_mount *mp);

/**
 * sx_trans_note_inode() - @tp changes @ip (joins its block): at commit @ip
 * learns the transaction's commit sequence, which its fsync forces up to
 */
void sx_trans_note_inode(struct sx_trans *tp, struct sx_inode *ip);

#endif /* SX_TRANS_H */
