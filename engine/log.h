/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The write-ahead log.
 *
 * Committed transactions are formatted into ops and queued in memory in
 * groups of one record each, where ops that later ops repeat are dropped
 * (log_cil.c); a log force writes the groups as records at the head of the
 * circular log, after a manifest record of the new data blocks they map
 * (log_manifest.c), and flushes the device once.  Only then are the
 * buffers they changed unpinned and allowed to be written in place.  A
 * checkpoint writes metadata back and moves the tail, which is anchored in
 * the superblock: the tail never passes a change that is not written back or
 * an intent whose done item is not durable.
 */
#ifndef SX_LOG_H
#define SX_LOG_H

#include "util.h"

struct sx_trans;
struct sx_buf;

/* Log counters, for tests, benchmarks and the tool. */
struct sx_log_stats {
	u64	ls_records;		/* records written, wrap records included */
	u64	ls_wraps;
	u64	ls_bytes;		/* bytes of records written */
	u64	ls_forces;		/* forces that wrote at least one record */
	u64	ls_fences;		/* of them, forces a data write asked for (log_manifest.c) */
	u64	ls_manifests;		/* manifest records written */
	u64	ls_preflushes;		/* forces that flushed data before their records */
	u64	ls_flights;		/* forces that flushed while the next one could write */
	u64	ls_checkpoints;
	u64	ls_tail_moves;
	u64	ls_trans;		/* transactions committed */
	u64	ls_space_waits;		/* reservations that needed a checkpoint */
	u64	ls_ops_dropped;		/* queued ops a later op made useless */
	u64	ls_bytes_dropped;	/* their bytes, TRANS_ENDs of emptied transactions included */
	u64	ls_whiteouts;		/* intent and done pairs dropped together */
	u64	ls_pushes;		/* forces because the queue was full */
	u64	ls_queue_peak;		/* most bytes of ops the queue held at once */
	u64	ls_waits;		/* times a caller of sx_log_force_seq() slept while another led */
	u64	ls_gathers;		/* new leaders that waited for the last force's writers */
	u64	ls_gathers_vain;	/* of them, waits that ran out of time */
	u64	ls_gather_skips;	/* new leaders that did not wait: the back-off after those */
};

/** sx_log_init() - set up the log of @mp at head @head_lsn after mount/recovery */
int sx_log_init(struct sx_mount *mp, u64 head_lsn, u32 prev_crc, u64 next_tid);
/** sx_log_destroy() - free the log state; pending work is discarded */
void sx_log_destroy(struct sx_mount *mp);

/**
 * sx_log_reserve() - reserve log space for a transaction of @bytes
 * @blocks: set to the number of log blocks granted
 *
 * Checkpoints to make room.  Return: 0, -EINVAL if @bytes can never fit in
 * one record, -ENOSPC if the log is pinned full, -EIO after shutdown.
 */
int sx_log_reserve(struct sx_mount *mp, u32 bytes, u32 *blocks);
/** sx_log_unreserve() - give back a reservation that was not committed */
void sx_log_unreserve(struct sx_mount *mp, u32 blocks);

/** sx_log_max_trans_bytes() - the largest reservation one transaction may ask */
u32 sx_log_max_trans_bytes(const struct sx_mount *mp);

/**
 * sx_log_commit() - queue a formatted transaction
 * @ops: @len bytes of whole ops (ownership passes to the log)
 * @bufs: the @nbufs buffers it changed; each gains a pin and a reference
 * @intents: ids of the intents it logs; @dones: ids the done items finish
 * @seqp: set to its commit sequence: it is durable once sx_log_durable_seq()
 *	reaches that
 *
 * Return: 0, or -EIO after shutdown (nothing was queued; @ops is freed).
 */
int sx_log_commit(struct sx_mount *mp, u64 tid, void *ops, u32 len, u32 nops,
		  struct sx_buf **bufs, u32 nbufs, const u64 *intents, u32 nintents,
		  const u64 *dones, u32 ndones, u32 res_blocks, u64 *seqp);

/** sx_log_force() - make every queued transaction durable */
int sx_log_force(struct sx_mount *mp);

/**
 * sx_log_force_seq() - make the transactions up to commit sequence @seq
 * durable (see sx_log_commit()), and with @data the file data written in
 * place so far; writes and flushes nothing that a force, done or in
 * progress, already covers
 */
int sx_log_force_seq(struct sx_mount *mp, u64 seq, bool data);

/**
 * sx_log_commit_seq() - how many transactions were queued so far: one
 * that committed before the call is durable once sx_log_durable_seq()
 * reaches the value returned
 */
u64 sx_log_commit_seq(struct sx_mount *mp);
/** sx_log_durable_seq() - the queued transactions the log made durable, counted from mount */
u64 sx_log_durable_seq(struct sx_mount *mp);

/**
 * sx_log_write_data() - write file data blocks in place, ordered against
 * the log (log_manifest.c)
 * @fresh: the blocks' mapping is not durable yet (new blocks, copies of
 *	a copy-on-write, unwritten blocks to be converted): the data must be
 *	durable no later than the record that maps them
 *
 * Fresh blocks, and blocks written fresh since the last force, go into the
 * next force's manifest; a block listed in the manifest of the last force
 * that wrote records gets another force written first (a fence).
 */
int sx_log_write_data(struct sx_mount *mp, u64 bno, u32 count, const void *buf, bool fresh);

/**
 * sx_log_data_pending() - whether a block of [@bno, +@count) was written
 * fresh since the last force took its data: the next force's manifest
 * will list that block's checksum, so no other bytes may reach it until a
 * force after that one is on the disk
 */
bool sx_log_data_pending(struct sx_mount *mp, u64 bno, u32 count);

/**
 * sx_log_data_remap() - a transaction maps into a file blocks that may
 * hold data written in place over a durable mapping (a swap, a clone): the
 * force that writes it flushes that data before its records
 */
void sx_log_data_remap(struct sx_mount *mp);

/**
 * sx_log_want_fence() - make the next force write a record even if it has
 * nothing else to write (recovery, after it dropped a force whose data did
 * not match: the fence overwrites that force's first record)
 */
void sx_log_want_fence(struct sx_mount *mp);

/** sx_log_checkpoint() - force, write metadata back, flush, move the tail */
int sx_log_checkpoint(struct sx_mount *mp);
/**
 * sx_log_home_data() - after a data allocation's -ENOSPC (*@error), with
 * blocks cached whose contents are still in the log (data allocations step
 * around them), checkpoint to let them go: true if it did, and the caller
 * tries once more; *@error is the checkpoint's result then
 */
bool sx_log_home_data(struct sx_mount *mp, int *error);

/** sx_log_next_tid() - a new transaction id */
u64 sx_log_next_tid(struct sx_mount *mp);
/** sx_log_next_intent_id() - a new intent id, unique for the filesystem's life */
u64 sx_log_next_intent_id(struct sx_mount *mp);

/**
 * sx_log_track_intent() - pin the tail at @lsn until intent @id is done
 * (recovery uses this for the intents it found unfinished)
 */
int sx_log_track_intent(struct sx_mount *mp, u64 id, u64 lsn);

/**
 * sx_log_note_record() - tell the log about a record recovery found between
 * the tail and the head, so the tail can later move onto it
 */
int sx_log_note_record(struct sx_mount *mp, u64 lsn, u32 prev_crc);

/** sx_log_outstanding_intents() - intents logged but not yet done */
u32 sx_log_outstanding_intents(struct sx_mount *mp);

/** sx_log_get_stats() - copy the log counters */
void sx_log_get_stats(struct sx_mount *mp, struct sx_log_stats *st);

/** sx_log_head() / sx_log_tail() - current head and tail LSNs */
u64 sx_log_head(struct sx_mount *mp);
u64 sx_log_tail(struct sx_mount *mp);

/*
 * Helpers shared by the writer, recovery and the log printer.
 */
/** sx_log_rec_max_blocks() - the largest record, in blocks, for this geometry */
u32 sx_log_rec_max_blocks(u32 logblocks, u32 blocksize);

/**
 * sx_log_min_blocks() - the smallest log of @blocksize blocks whose largest
 * record holds a transaction of @bytes; 0 if no log's records can
 */
u32 sx_log_min_blocks(u32 bytes, u32 blocksize);

/**
 * sx_log_rec_check_header() - validate a record header against where it was
 * found; @expect_lsn is the position, @prev_crc the chain value
 *
 * Return: 0, or -EFSCORRUPTED with *@why saying what is wrong.
 */
int sx_log_rec_check_header(const struct sx_dlog_rec *rec, const u8 *uuid,
			    u64 expect_lsn, u32 logblocks, u32 blocksize,
			    const char **why);

/**
 * sx_log_rec_check_kind() - check what a whole record of @recbytes (header
 * and ops already checked) holds for its flags: a manifest record begins
 * with one MANIFEST op of entries inside [@datastart, @dblocks), then
 * maybe the ops of the force's first transactions; any other record no
 * MANIFEST op.  For a manifest record, *@ents and *@nents give its entries
 * (else NULL and 0).
 *
 * Return: 0, or -EFSCORRUPTED with *@why saying what is wrong.
 */
int sx_log_rec_check_kind(const void *rec, u32 recbytes, u64 datastart, u64 dblocks,
			  const struct sx_dlog_mfent **ents, u32 *nents, const char **why);

/**
 * sx_log_rec_check_ops() - walk the ops of a whole record, bounds-checking
 * each; calls @fn for each op unless @fn is NULL
 */
int sx_log_rec_walk_ops(const void *rec, u32 recbytes,
			int (*fn)(void *arg, const struct sx_dlog_op *op,
				  const void *payload),
			void *arg, const char **why);


#endif /* SX_LOG_H */
