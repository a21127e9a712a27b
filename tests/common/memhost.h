/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * memhost: a small in-memory host of the swap core (<swapext/host.h>), so
 * that the core is tested, and crash-tested, without the store.
 *
 * Inodes hold sorted extent lists over a fake device whose blocks are only
 * numbers (a block's number is its tag: the "data" of a file block is the
 * device block mapped there).  Every change goes through a transaction that
 * records it; a commit appends the record to an in-memory log.  Deferred
 * work (map/unmap "BUIs" and the core's swap items) is finished by a chain
 * runner that logs intents and dones as swapext's defer manager does: one
 * step per transaction, done + work + intent for what is left.
 *
 * ho_read_mappings gives up to mh_read_ahead mappings per call (tests set
 * mh_ops.ho_read_mappings to NULL for a host without it).
 *
 * With SX_HOST_DIRECT_MAP a step changes the forks in its own transaction
 * (ho_unmap_now/ho_map_now, recorded as the BUIs' work is) and
 * ho_step_room lets mh_step_pairs exchanges into each transaction (0: none,
 * so every step falls back to queued work).
 *
 * Host features it honours besides the core's: SX_HOST_MAP_NBLOCKS (the
 * map/unmap work moves block counts as it lands, ho_mod_nblocks then moves
 * only the quota usage mi_qused) and SX_HOST_RECOVERY_LOCKS (mh_recover()
 * holds both inodes of an SXI locked for its whole chain, as XFS's
 * recovery does).  Each inode is its own quota owner: mi_qlimit makes
 * ho_trans_alloc refuse a reservation whose gain would pass it (-EDQUOT).
 *
 * Crash testing: mh_checkpoint() makes the current state the durable base
 * and empties the log; mh_crash(n) restores the base and replays the first
 * n records (a power cut after n commits); mh_recover() then finishes every
 * intent without a done, in log order, appending its own records, so a
 * crash during recovery is a later mh_crash().
 */
#ifndef MEMHOST_H
#define MEMHOST_H

#include "sx_platform.h"
#include <swapext/host.h>

/*
 * The host and the core's tests link the core and the platform glue only,
 * never the store: these stand in for the store's util.h helpers.
 */
#define mh_min(a, b)		((a) < (b) ? (a) : (b))
#define mh_max(a, b)		((a) > (b) ? (a) : (b))
#define mh_howmany(x, y)	(((x) + (y) - 1) / (y))
#define mh_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define MH_NINODES	8
#define MH_MAX_EXT	512
#define MH_FIRST_INO	100
#define MH_DEV_BLOCKS	(1u << 20)
#define MH_STEP_PAIRS	3	/* default exchanges per direct step */
#define MH_READ_AHEAD	5	/* default mappings per ho_read_mappings */

struct mh_ext {
	u64	me_off;
	u64	me_blk;
	u64	me_len;
	u32	me_unwritten;
	u32	me_pad;
};

struct mh_inode {
	struct sx_hinode mi_hi;
	bool	mi_used;
	u64	mi_ino;
	u64	mi_gen;
	s64	mi_size;
	u32	mi_mode;
	u32	mi_flags;		/* SX_HSTAT_* */
	s64	mi_mtime_sec, mi_ctime_sec;
	u32	mi_mtime_nsec, mi_ctime_nsec;
	s64	mi_nblocks;
	s64	mi_qused;		/* blocks charged to the owner (quota) */
	u32	mi_next;
	struct mh_ext mi_ext[MH_MAX_EXT];
	/* not durable */
	s64	mi_qlimit;		/* hard quota limit in blocks; 0: none */
	int	mi_locked;
	int	mi_refs;
};

struct mh_op;
struct mh_rec {
	u32	mr_nops;
	struct mh_op *mr_ops;
};

/* Order a step's intents are logged in (recovery finishes in log order). */
enum mh_order {
	MH_ORDER_STORE = 0,	/* as engine/defer.c: requeued item, then spawned work */
	MH_ORDER_SPAWN_FIRST,	/* spawned work, then the requeued item */
};

struct mh_host {
	struct sx_host	mh_host;
	struct sx_host_ops mh_ops;	/* a copy tests may edit */
	struct mh_inode	mh_inodes[MH_NINODES];
	struct mh_inode	*mh_base;	/* the durable state of mh_checkpoint() */
	u32	mh_blksize;
	u64	mh_max_extents;
	u64	mh_next_blk;
	u64	mh_next_id;
	u64	mh_clock_ns;
	enum mh_order mh_order;
	/* the log */
	struct mh_rec *mh_log;
	u32	mh_nrec;
	u32	mh_caprec;
	bool	mh_shutdown;
	bool	mh_recovering;
	/* fault injection: the Nth map/unmap applied fails with mh_fail_error */
	u32	mh_fail_apply;
	u32	mh_fail_flush;		/* same for flushes */
	u32	mh_fail_alloc;		/* same for transaction allocations */
	u32	mh_fail_lock;		/* same for ho_lock_two */
	int	mh_fail_error;
	/* counters */
	u32	mh_nflush;
	u32	mh_nalloc;
	u32	mh_ncommit;
	u32	mh_open_trans;
	u32	mh_recovered_intents;
	u32	mh_ndirect;		/* direct maps and unmaps applied */
	u32	mh_step_pairs;		/* exchanges ho_step_room allows per transaction */
	u32	mh_read_ahead;		/* mappings ho_read_mappings gives at most */
	u32	mh_nreads;		/* ho_read_mappings calls */
	struct sx_hres mh_last_res;	/* the last reservation asked for */
};

/* mh_init() - an empty host with @blksize-byte blocks; features SX_HOST_* */
void mh_init(struct mh_host *mh, u32 blksize, u32 features);
/* mh_destroy() - free the log and the base */
void mh_destroy(struct mh_host *mh);

/* mh_create() - a new regular file of @size bytes, no blocks; its inode */
struct mh_inode *mh_create(struct mh_host *mh, s64 size);
/* mh_alloc() - @len fresh device blocks, contiguous; the first */
u64 mh_alloc(struct mh_host *mh, u64 len);
/* mh_add_extent() - map fresh blocks at file block @off (setup only, no log) */
void mh_add_extent(struct mh_inode *mi, u64 off, u64 len, bool unwritten);
/* mh_add_mapping() - map given device blocks at @off (setup only, no log) */
void mh_add_mapping(struct mh_inode *mi, u64 off, u64 blk, u64 len, bool unwritten);

/* mh_cut_at() - drop every mapping at or past file block @end (setup only, no log) */
void mh_cut_at(struct mh_inode *mi, u64 end);

/* mh_hfile() - an open file of @mi with SX_HF_* @mode */
struct sx_hfile mh_hfile(struct mh_inode *mi, u32 mode);

/* mh_block_at() - device block at file block @off (SX_HOLESTARTBLOCK for a hole) */
u64 mh_block_at(const struct mh_inode *mi, u64 off, bool *unwritten);

/* mh_checkpoint() - make the current state durable and empty the log */
void mh_checkpoint(struct mh_host *mh);
/* mh_crash() - power cut after @nrec committed records: base + replay */
void mh_crash(struct mh_host *mh, u32 nrec);
/* A saved copy of the log, so that one run can be cut at every point. */
struct mh_tape {
	u32	mt_nrec;
	struct mh_rec *mt_recs;
};
/* mh_tape_save() - copy the log; mh_tape_load() - make a copy the log again */
struct mh_tape *mh_tape_save(const struct mh_host *mh);
void mh_tape_load(struct mh_host *mh, const struct mh_tape *t);
void mh_tape_free(struct mh_tape *t);
/* mh_recover() - finish every intent without a done, in log order */
int mh_recover(struct mh_host *mh);
/* mh_rec_maps() - the maps (queued work finished, or direct) record @rec holds */
u32 mh_rec_maps(const struct mh_host *mh, u32 rec);
/* mh_unfinished() - intents in the log without their done */
u32 mh_unfinished(const struct mh_host *mh);

/*
 * mh_check() - consistency of every inode: extents sorted, not overlapping;
 * block counts and quota usage match the mappings (unless
 * MH_CHECK_NO_NBLOCKS: mid-chain one moves before the queued maps land); no device block mapped twice
 * (unless MH_CHECK_SHARED); no mapping past EOF (with MH_CHECK_EOF).  0, or
 * a negative number naming the first failed check (and a message on stderr).
 */
#define MH_CHECK_SHARED		(1u << 0)
#define MH_CHECK_EOF		(1u << 1)
#define MH_CHECK_NO_NBLOCKS	(1u << 2)
int mh_check(const struct mh_host *mh, u32 flags);

/* mh_unfinished_sxi() - the first SXI in the log without its SXD, or NULL */
struct sx_dlog_sxi *mh_unfinished_sxi(struct mh_host *mh);

/* mh_snapshot()/mh_same() - copy the inodes; compare two copies block by block */
struct mh_inode *mh_snapshot(const struct mh_host *mh);
bool mh_same(const struct mh_inode *a, const struct mh_inode *b, u64 ino, bool sizes);
bool mh_same_all(const struct mh_inode *a, const struct mh_inode *b);

#endif /* MEMHOST_H */
