/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The log's in-core state, shared by the writer (log.c), its forces
 * (log_force.c), the queue of committed transactions (log_cil.c) and the
 * data manifests (log_manifest.c).  Nothing outside the log's files
 * includes this.
 *
 * The queue is a list of groups; each group becomes exactly one record when
 * it is written, so a group never holds more ops than one record can carry.
 * Inside a group the log may drop an op that a later op in the same group
 * makes useless (a buffer logged again over the same bytes; an intent and
 * its done item), because a record is replayed whole or not at all: the
 * record then says the same thing in fewer bytes.
 */
#ifndef SX_LOG_PRIV_H
#define SX_LOG_PRIV_H

#include "util.h"
#include "log.h"

#define SX_LOG_HDR_BYTES	sizeof(struct sx_dlog_rec)
#define SX_LOG_IHASH		512	/* intent hash buckets */
#define SX_LOG_QUEUE_RECORDS	8	/* default queue limit, in full records */
/*
 * The formatted ops the queue may hold in memory, dropped ones included:
 * a long chain relogs the same few blocks, so its groups stay small on the
 * log while every transaction's ops stay allocated until the force.
 */
#define SX_LOG_QUEUE_MEM	(4u << 20)
/* Forces in flight at once with SX_MOUNT_OVERLAP_FORCES (see l_flights) */
#define SX_LOG_FLIGHTS		2

struct sx_cil_group;

/* One op of a queued transaction. */
struct sx_cil_op {
	u32		co_off;		/* byte offset in ct_ops */
	u32		co_bytes;	/* header, payload and padding */
	u16		co_type;
	bool		co_dead;	/* dropped: a later op says the same */
};

/* A committed transaction waiting in the queue. */
struct sx_cil_trans {
	struct sx_list	ct_list;	/* on its group's g_trans */
	struct sx_cil_group *ct_group;
	u64		ct_tid;
	void		*ct_ops;
	u32		ct_len;
	u32		ct_nops;	/* the trailing TRANS_END included */
	u32		ct_nlive;	/* live ops, TRANS_END not counted */
	u32		ct_nbufs;
	u32		ct_nintents;
	u32		ct_ndones;
	u64		ct_lsn;		/* record it went into */
	struct sx_cil_op *ct_opv;	/* ct_nops entries; BUF ops first, one per buffer */
	struct sx_buf	**ct_bufs;
	u64		*ct_ids;	/* intents, then dones */
};

/* A run of queued transactions that will be one record. */
struct sx_cil_group {
	struct sx_list	g_list;		/* on l_cil */
	struct sx_list	g_trans;
	u64		g_id;		/* never reused: 1, 2, ... */
	u32		g_len;		/* bytes of live ops */
	u32		g_nops;		/* live ops */
	u32		g_blocks;	/* log blocks its record will take; 0 if empty */
};

/* An intent whose done item is not yet durable. */
struct sx_log_intent {
	struct sx_list	li_list;	/* on l_intents */
	struct sx_list	li_hash;
	u64		li_id;
	u64		li_lsn;		/* 0 until its record is written */
	/* where its op waits, while li_group is the open group */
	u64		li_group;
	struct sx_cil_trans *li_ct;
	u32		li_op;
};

/* A record between the tail and the head. */
struct sx_log_recinfo {
	u64		ri_lsn;
	u32		ri_prev_crc;
};

/*
 * A set of data blocks with the CRC of what was last written to each
 * (log_manifest.c): open addressing on the block number, where 0 is an
 * empty slot (block 0 is the superblock, never file data).
 */
struct sx_mfset {
	u64		*ms_bno;
	u32		*ms_crc;
	u32		ms_cap;		/* slots: 0 or a power of two */
	u32		ms_n;
};

/*
 * A reservation that finds the log full because another thread holds
 * blocks locked waits this long, this many times at most, for them.
 */
#define SX_LOG_LOCKED_WAIT_NS	1000000ull
#define SX_LOG_LOCKED_RETRIES	1000

struct sx_log {
	struct sx_mutex	l_force_lock;
	struct sx_mutex	l_lock;
	struct sx_cond	l_space;
	u64		l_start;	/* device block of log block 0 */
	u32		l_size;		/* blocks */
	u32		l_bsize;
	u32		l_max_rec_blocks;
	/* the head: where the next record goes */
	u32		l_cycle;
	u32		l_head;
	u32		l_prev_crc;	/* CRC of the record before the head */
	u64		l_tail;		/* LSN, as in the superblock */
	u32		l_epoch;
	bool		l_epoch_written;
	u64		l_next_tid;
	u32		l_next_intent;
	u32		l_grant;	/* blocks reserved by open transactions */
	/*
	 * Data written in place since the last flush began: set without a
	 * lock after the device took the write, cleared under l_wait_lock as
	 * a flush begins (l_flush_begun).
	 */
	struct sx_atomic l_data_dirty;
	/*
	 * Data manifests (log_manifest.c).  l_mf_sem is held shared by every
	 * data write that may need one, across its device write, and
	 * exclusive by a force while it takes the pending set with the queue
	 * and when it publishes l_mf_done; l_mf_lock serialises the shared
	 * holders' changes to the pending set.
	 */
	struct sx_rwsem	l_mf_sem;
	struct sx_mutex	l_mf_lock;
	struct sx_mfset	l_mf_pending;	/* blocks to list in the next force's manifest */
	struct sx_mfset	l_mf_flight;	/* the manifest of the force writing now */
	struct sx_mfset	l_mf_done;	/* that of the last force that wrote records */
	u32		l_mf_blocks;	/* the largest manifest record, in blocks */
	u32		l_mf_max;	/* the entries it holds */
	bool		l_mf_overflow;	/* the pending set missed a block: flush data first */
	bool		l_mf_all;	/* the last force's manifest is not known: fence every write */
	bool		l_fence_wanted;	/* the next force writes a record, a fence if nothing else */
	u64		l_force_first;	/* LSN of the current force's first record; 0 until written */
	struct sx_atomic l_data_inplace; /* data over durable mappings since the last flush */
	struct sx_atomic l_remap;	/* blocks that hold data were mapped since the last force */
	/* the queue */
	struct sx_list	l_cil;		/* groups, oldest first; the last may be open */
	u64		l_cil_group;	/* id of the open group; 0 if none is open */
	u64		l_cil_next_group;
	u32		l_cil_blocks;	/* blocks the queued groups will take */
	u32		l_cil_max;	/* write the queue once it passes this */
	u64		l_cil_mem;	/* bytes of ops queued, dropped ones included */
	u64		l_cil_mem_max;	/* ... or once they pass this */
	u32		l_force_blocks;	/* blocks of groups a force took but has not written */
	u32		l_forces_active; /* forces that took groups and have not completed them */
	u32		l_ckpt_pinned;	/* dirty buffers the last checkpoint found pinned */
	u32		l_ckpt_locked;	/* ... and found locked by another thread */
	u64		l_cil_last_tid;	/* the largest id the queue has given the log */
	u64		l_commit_seq;	/* transactions queued so far */
	/*
	 * Of those, how many a force made durable: set under l_wait_lock once
	 * the force's completion work is done, read without a lock.
	 * l_wait_lock, not the busy l_lock, is what the callers of
	 * sx_log_force_seq() sleep under.
	 */
	struct sx_atomic64 l_durable_seq;
	struct sx_mutex	l_wait_lock;
	bool		l_leading;	/* a caller of sx_log_force_seq() is forcing */
	/*
	 * Gathering (sx_log_gather()), under l_wait_lock: the callers the
	 * last force served or left waiting, whom the next leader waits for;
	 * while it waits, how many waiters it wants (0: none gathers); the
	 * back-off after gatherings in vain; and how long the last flush
	 * took, which bounds the wait.
	 */
	u32		l_gather;
	u32		l_gather_want;
	u32		l_gather_misses; /* gatherings in a row that waited in vain */
	u32		l_gather_skip;	/* forces that will not gather */
	u64		l_flush_ns;
	struct sx_cond	l_gather_cond;	/* l_gather_want callers are waiting */
	/*
	 * Forces in flight (SX_MOUNT_OVERLAP_FORCES), under l_wait_lock.  A
	 * leader whose force needs nothing of the forces before it (no data
	 * to flush first, no manifest, no fence) lets the force lock and the
	 * lead go once its records are written, and flushes while the next
	 * leader writes.  Forces complete in the order they took the queue
	 * (tickets), so the log is never called durable past a force whose
	 * flush has not returned; anything else that holds the force lock
	 * first waits until none is in flight (sx_log_flights_wait()).
	 */
	u32		l_flights_max;	/* at most this many at once; 1: none overlap */
	u32		l_flights;	/* forces flushing without the force lock */
	u64		l_flight_next;	/* tickets given */
	u64		l_flight_done;	/* tickets completed, each after the one before */
	u64		l_taken_seq;	/* the commit count the last force took */
	struct sx_cond	l_flight_cond;	/* a flight completed */
	/*
	 * Device flushes that cover data written in place (sx_log_flush_data()),
	 * under l_wait_lock: begun, and finished (all up to that count; the
	 * force lock serialises them; after a failed one, which shuts the
	 * mount down, l_flush_done stays behind).  A caller that needs its
	 * data durable waits for the first flush begun after it came, or, if
	 * a flush began after its data write already, for that one.
	 */
	u64		l_flush_begun;
	u64		l_flush_done;
	/*
	 * Callers of sx_log_force_seq() asleep while another leads, oldest
	 * first (struct sx_log_waiter), each woken alone (sx_log_wake()): by
	 * a force's completion or its leader's end that finds it served, or
	 * by the leader's end to lead the next force.  l_flush_done moves
	 * without waking anyone, but a waiter that needs only a flush waits
	 * behind a leader, whose end wakes it.
	 */
	struct sx_list	l_waiters;
	struct sx_list	l_intents;
	struct sx_list	l_ihash[SX_LOG_IHASH];
	u32		l_nintents;
	struct sx_log_recinfo *l_recs;
	u32		l_nrecs;
	u32		l_recs_cap;
	u8		*l_iobuf;	/* one record */
	struct sx_log_stats l_stats;
};

/* The largest payload of one record. */
static inline u32 sx_log_rec_max_bytes(const struct sx_log *log)
{
	return log->l_max_rec_blocks * log->l_bsize - SX_LOG_HDR_BYTES;
}

/* log.c, for the queue */
struct sx_log_intent *sx_log_find_intent(struct sx_log *log, u64 id);
int sx_log_add_intent(struct sx_log *log, u64 id, u64 lsn, struct sx_log_intent **lip);
void sx_log_del_intent(struct sx_log *log, struct sx_log_intent *li);

/* log_manifest.c, for the writer */
int sx_mfset_add(struct sx_mfset *ms, u64 bno, u32 crc);
bool sx_mfset_has(const struct sx_mfset *ms, u64 bno);
void sx_mfset_clear(struct sx_mfset *ms);
void sx_mfset_free(struct sx_mfset *ms);
/* the entries of @ms, in slot order, into @ents (room for ms_n) */
void sx_mfset_format(const struct sx_mfset *ms, struct sx_dlog_mfent *ents);
int sx_log_mf_init(struct sx_log *log);
void sx_log_mf_destroy(struct sx_log *log);
bool sx_log_mf_take(struct sx_log *log, bool flying);
void sx_log_mf_forced(struct sx_log *log, bool wrote);

/* log.c, the record writer of forces (force lock held) */
int sx_log_write_record(struct sx_mount *mp, u32 len, u32 nops, u32 flags, u64 first_tid,
			u32 accounted, u64 *lsnp);
int sx_log_prepare_head(struct sx_mount *mp, u32 blocks);
int sx_log_write_epoch(struct sx_mount *mp);

/* log_force.c */
/* write everything queued and flush, for checkpoints (force lock held) */
int sx_log_force_locked(struct sx_mount *mp);
/* a force even with nothing queued (a fence record), for data writes */
int sx_log_fence(struct sx_mount *mp);

#endif /* SX_LOG_PRIV_H */
