// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The write-ahead log: reservations, the queue of committed transactions,
 * record writing, forces and checkpoints.
 *
 * Locks: l_force_lock serialises everything that writes the log or moves
 * the tail (forces and checkpoints), so a checkpoint never computes a tail
 * while a force has written records whose buffers are not yet unpinned;
 * a force in flight (l_flights) flushes without it, and whatever takes it
 * to do more than write the next force's records first waits until no
 * force is in flight.
 * l_lock covers the state read by reservations and commits, the queue
 * included.  Order: l_force_lock, then l_lock, then the buffer cache lock;
 * l_wait_lock (group commit's, sx_log_force_seq()) is taken last, and
 * nothing is taken under it.
 *
 * Space: a reservation holds blocks in l_grant only while its transaction
 * is open; at commit it gives them back and the queue's groups count what
 * they will really take (l_cil_blocks, then l_force_blocks while a force
 * writes them), which is never more than what was reserved.
 */
#include "util.h"
#include "log_priv.h"
#include "item.h"
#include "buf.h"
#include "mount.h"
#include "dev.h"
#include "log_cil.h"

/* The largest record for a log of @logblocks blocks of @blocksize. */
u32 sx_log_rec_max_blocks(u32 logblocks, u32 blocksize)
{
	u32 max = sx_howmany(1u << 20, blocksize);

	max = sx_min(max, logblocks / 8);
	return sx_max(max, 2u);
}

/*
 * The smallest log for a transaction of @bytes: a record of r blocks needs
 * a log of 8r blocks (records are at most an eighth of the log), and no
 * record is longer than 1 MiB, whatever the log.
 */
u32 sx_log_min_blocks(u32 bytes, u32 blocksize)
{
	u64 rec = sx_howmany((u64)bytes + SX_LOG_HDR_BYTES, (u64)blocksize);

	if (rec > sx_log_rec_max_blocks(SX_MAX_LOGBLOCKS, blocksize))
		return 0;
	return (u32)sx_max(8 * rec, (u64)SX_MIN_LOGBLOCKS);
}

/* The largest reservation a transaction may have. */
u32 sx_log_max_trans_bytes(const struct sx_mount *mp)
{
	return sx_log_rec_max_bytes(mp->m_log);
}

/* Blocks between the tail and the head. */
static u32 sx_log_used(const struct sx_log *log)
{
	u32 tc = SX_LSN_CYCLE(log->l_tail), tb = SX_LSN_BLOCK(log->l_tail);

	if (log->l_cycle == tc)
		return log->l_head - tb;
	return log->l_size - tb + log->l_head;
}

/*
 * Blocks a new reservation may take: one record's worth stays free for a
 * wrap, and room for the manifest (or fence) record a force may write.
 */
static u32 sx_log_avail(const struct sx_log *log)
{
	u64 busy = (u64)sx_log_used(log) + log->l_grant + log->l_cil_blocks +
		   log->l_force_blocks + log->l_max_rec_blocks + 1 + log->l_mf_blocks;

	return busy >= log->l_size ? 0 : (u32)(log->l_size - busy);
}

/* Set up the in-core log at @head_lsn, the end of the valid log. */
int sx_log_init(struct sx_mount *mp, u64 head_lsn, u32 prev_crc, u64 next_tid)
{
	struct sx_log *log;
	u32 i;

	log = sx_zalloc(sizeof(*log), 0);
	if (!log)
		return -ENOMEM;
	log->l_start = mp->m_sb.sb_logstart;
	log->l_size = mp->m_sb.sb_logblocks;
	log->l_bsize = mp->m_bsize;
	log->l_max_rec_blocks = sx_log_rec_max_blocks(log->l_size, log->l_bsize);
	log->l_cycle = SX_LSN_CYCLE(head_lsn);
	log->l_head = SX_LSN_BLOCK(head_lsn);
	log->l_prev_crc = prev_crc;
	log->l_tail = mp->m_sb.sb_log_tail;
	log->l_epoch = mp->m_sb.sb_log_epoch + 1;
	log->l_next_tid = next_tid ? next_tid : 1;
	log->l_next_intent = 1;
	sx_list_init(&log->l_cil);
	sx_list_init(&log->l_intents);
	for (i = 0; i < SX_LOG_IHASH; i++)
		sx_list_init(&log->l_ihash[i]);
	/* a quarter of the log at most, so that queued work never crowds it */
	log->l_cil_max = sx_min(SX_LOG_QUEUE_RECORDS * log->l_max_rec_blocks, log->l_size / 4);
	log->l_cil_mem_max = SX_LOG_QUEUE_MEM;
	if (mp->m_flags & SX_MF_LOG_EACH)
		log->l_cil_max = 0;
	log->l_flights_max = (mp->m_flags & SX_MF_OVERLAP) ? SX_LOG_FLIGHTS : 1;
	log->l_iobuf = sx_alloc((size_t)log->l_max_rec_blocks * log->l_bsize, 0);
	if (!log->l_iobuf) {
		sx_free(log);
		return -ENOMEM;
	}
	sx_log_mf_init(log);
	/*
	 * A log with records in it (before recovery's checkpoint empties it)
	 * ends with a force whose manifest this mount does not know.
	 */
	log->l_mf_all = head_lsn != log->l_tail;
	sx_mutex_init(&log->l_force_lock);
	sx_mutex_init(&log->l_lock);
	sx_mutex_init(&log->l_wait_lock);
	sx_cond_init(&log->l_space);
	sx_cond_init(&log->l_flight_cond);
	sx_list_init(&log->l_waiters);
	mp->m_log = log;
	return 0;
}

/* Free the log; after a shutdown, queued work is thrown away. */
void sx_log_destroy(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	struct sx_list *pos, *n;

	if (!log)
		return;
	sx_list_for_each_safe(pos, n, &log->l_cil) {
		struct sx_cil_group *g = sx_list_entry(pos, struct sx_cil_group, g_list);
		struct sx_list *tpos, *tn;

		sx_list_for_each_safe(tpos, tn, &g->g_trans) {
			sx_list_del(tpos);
			sx_cil_trans_free(mp, sx_list_entry(tpos, struct sx_cil_trans, ct_list), 0);
		}
		sx_list_del(pos);
		sx_free(g);
	}
	sx_list_for_each_safe(pos, n, &log->l_intents) {
		struct sx_log_intent *li = sx_list_entry(pos, struct sx_log_intent, li_list);

		sx_list_del(&li->li_hash);
		sx_list_del(pos);
		sx_free(li);
	}
	ASSERT(sx_list_empty(&log->l_waiters));
	ASSERT(log->l_flights == 0);
	sx_log_mf_destroy(log);
	sx_cond_destroy(&log->l_space);
	sx_cond_destroy(&log->l_flight_cond);
	sx_mutex_destroy(&log->l_lock);
	sx_mutex_destroy(&log->l_wait_lock);
	sx_mutex_destroy(&log->l_force_lock);
	sx_free(log->l_recs);
	sx_free(log->l_iobuf);
	sx_free(log);
	mp->m_log = NULL;
}

/* Reserve log blocks for a transaction of @bytes, checkpointing for room. */
int sx_log_reserve(struct sx_mount *mp, u32 bytes, u32 *blocks)
{
	struct sx_log *log = mp->m_log;
	u32 need;
	u32 lockwaits = 0;
	int error;
	bool tried = false;

	if (bytes > sx_log_max_trans_bytes(mp))
		return -EINVAL;
	need = sx_howmany(bytes + SX_LOG_HDR_BYTES, log->l_bsize);
	sx_mutex_lock(&log->l_lock);
	for (;;) {
		if (sx_is_shutdown(mp)) {
			error = -EIO;
			break;
		}
		if (sx_log_avail(log) >= need) {
			log->l_grant += need;
			*blocks = need;
			error = 0;
			break;
		}
		if (!tried) {
			/* move the tail as far as it goes, once */
			log->l_stats.ls_space_waits++;
			sx_mutex_unlock(&log->l_lock);
			error = sx_log_checkpoint(mp);
			sx_mutex_lock(&log->l_lock);
			if (error)
				break;
			tried = true;
			continue;
		}
		/*
		 * Blocks pinned by commits that a force has not completed
		 * cannot be written back, so the checkpoint left them, and the
		 * tail with them.  A force that wrote its records and is still
		 * flushing is in flight as much as one writing them; and if
		 * the checkpoint met pinned blocks, their forces have completed
		 * since (nothing is in flight now): checkpoint again.  Under
		 * several threads hot blocks such as the refcount root are
		 * pinned nearly all the time, and calling the log full then
		 * shut down mounts that were only busy.
		 */
		if (log->l_grant == 0 && sx_list_empty(&log->l_cil) && !log->l_forces_active) {
			if (log->l_ckpt_pinned) {
				tried = false;
				continue;
			}
			/*
			 * Blocks another thread held locked: a transaction
			 * that committed (its reservation is back, its
			 * records may be written) and has not let its
			 * buffers go.  It will without needing log space, so
			 * wait a little and checkpoint again; but only so
			 * long, since two rolls that each hold what pins the
			 * other's tail would wait on each other for ever.
			 */
			if (log->l_ckpt_locked && lockwaits < SX_LOG_LOCKED_RETRIES) {
				lockwaits++;
				sx_cond_timedwait(&log->l_space, &log->l_lock, SX_LOG_LOCKED_WAIT_NS);
				tried = false;
				continue;
			}
			/* nothing else can free space: intents pin the tail */
			sx_err(mp, "log full: %u of %u blocks pinned",
			       sx_log_used(log), log->l_size);
			error = -ENOSPC;
			break;
		}
		/* other transactions hold space; wait for their commits */
		sx_cond_wait(&log->l_space, &log->l_lock);
		tried = false;
	}
	sx_mutex_unlock(&log->l_lock);
	return error;
}

/* Give back an unused reservation. */
void sx_log_unreserve(struct sx_mount *mp, u32 blocks)
{
	struct sx_log *log = mp->m_log;

	if (!blocks)
		return;
	sx_mutex_lock(&log->l_lock);
	ASSERT(log->l_grant >= blocks);
	log->l_grant -= blocks;
	sx_cond_broadcast(&log->l_space);
	sx_mutex_unlock(&log->l_lock);
}

/* A new transaction id. */
u64 sx_log_next_tid(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	u64 tid;

	sx_mutex_lock(&log->l_lock);
	tid = log->l_next_tid++;
	sx_mutex_unlock(&log->l_lock);
	return tid;
}

/* A new intent id: the epoch makes it unique across mounts. */
u64 sx_log_next_intent_id(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	u64 id;

	sx_mutex_lock(&log->l_lock);
	id = ((u64)log->l_epoch << 32) | log->l_next_intent++;
	sx_mutex_unlock(&log->l_lock);
	return id;
}

/*
 * Track an intent so the tail cannot pass it (log lock held).  @lip, if
 * given, is a preallocated record to use.
 */
int sx_log_add_intent(struct sx_log *log, u64 id, u64 lsn, struct sx_log_intent **lip)
{
	struct sx_log_intent *li;

	ASSERT(sx_mutex_is_held(&log->l_lock));
	li = lip ? *lip : sx_alloc(sizeof(*li), SX_NOFS);
	if (!li)
		return -ENOMEM;
	if (lip)
		*lip = NULL;
	li->li_id = id;
	li->li_lsn = lsn;
	li->li_group = 0;
	li->li_ct = NULL;
	li->li_op = 0;
	sx_list_add_tail(&li->li_list, &log->l_intents);
	sx_list_add_tail(&li->li_hash, &log->l_ihash[id % SX_LOG_IHASH]);
	log->l_nintents++;
	return 0;
}

/* Stop tracking @li and free it (log lock held). */
void sx_log_del_intent(struct sx_log *log, struct sx_log_intent *li)
{
	ASSERT(sx_mutex_is_held(&log->l_lock));
	sx_list_del(&li->li_list);
	sx_list_del(&li->li_hash);
	log->l_nintents--;
	sx_free(li);
}

/* The tracked intent with @id (log lock held). */
struct sx_log_intent *sx_log_find_intent(struct sx_log *log, u64 id)
{
	struct sx_list *pos;

	ASSERT(sx_mutex_is_held(&log->l_lock));
	sx_list_for_each(pos, &log->l_ihash[id % SX_LOG_IHASH]) {
		struct sx_log_intent *li = sx_list_entry(pos, struct sx_log_intent, li_hash);

		if (li->li_id == id)
			return li;
	}
	return NULL;
}

/* Recovery found intent @id unfinished in the record at @lsn. */
int sx_log_track_intent(struct sx_mount *mp, u64 id, u64 lsn)
{
	struct sx_log *log = mp->m_log;
	int error;

	sx_mutex_lock(&log->l_lock);
	error = sx_log_add_intent(log, id, lsn, NULL);
	sx_mutex_unlock(&log->l_lock);
	return error;
}

/* Intents not yet finished by a durable done item. */
u32 sx_log_outstanding_intents(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	u32 n;

	sx_mutex_lock(&log->l_lock);
	n = log->l_nintents;
	sx_mutex_unlock(&log->l_lock);
	return n;
}

/* Make room to remember one more record between tail and head (log lock held). */
static int sx_log_grow_recinfo(struct sx_log *log)
{
	struct sx_log_recinfo *n;
	u32 cap;

	ASSERT(sx_mutex_is_held(&log->l_lock));
	if (log->l_nrecs < log->l_recs_cap)
		return 0;
	cap = log->l_recs_cap ? log->l_recs_cap * 2 : 64;
	n = sx_alloc(sizeof(*n) * cap, SX_NOFS);
	if (!n)
		return -ENOMEM;
	if (log->l_nrecs)
		memcpy(n, log->l_recs, sizeof(*n) * log->l_nrecs);
	sx_free(log->l_recs);
	log->l_recs = n;
	log->l_recs_cap = cap;
	return 0;
}

/* Remember a record between tail and head (log lock held). */
static int sx_log_add_recinfo(struct sx_log *log, u64 lsn, u32 prev_crc)
{
	int error = sx_log_grow_recinfo(log);

	if (error)
		return error;
	log->l_recs[log->l_nrecs].ri_lsn = lsn;
	log->l_recs[log->l_nrecs].ri_prev_crc = prev_crc;
	log->l_nrecs++;
	return 0;
}

/* Recovery tells us about a record it found. */
int sx_log_note_record(struct sx_mount *mp, u64 lsn, u32 prev_crc)
{
	struct sx_log *log = mp->m_log;
	int error;

	sx_mutex_lock(&log->l_lock);
	error = sx_log_add_recinfo(log, lsn, prev_crc);
	sx_mutex_unlock(&log->l_lock);
	return error;
}

/* Queue a formatted transaction for the next force. */
int sx_log_commit(struct sx_mount *mp, u64 tid, void *ops, u32 len, u32 nops,
		  struct sx_buf **bufs, u32 nbufs, const u64 *intents, u32 nintents,
		  const u64 *dones, u32 ndones, u32 res_blocks, u64 *seqp)
{
	struct sx_log *log = mp->m_log;
	struct sx_log_intent **lis = NULL;
	struct sx_cil_group *spare = NULL;
	struct sx_cil_trans *ct;
	u32 i, n;
	int error = -ENOMEM;

	/* everything the queue needs is allocated before the lock */
	ct = sx_zalloc(sizeof(*ct), SX_NOFS);
	if (!ct)
		goto out_free;
	ct->ct_bufs = sx_alloc(sizeof(*bufs) * (nbufs + 1), SX_NOFS);
	ct->ct_ids = sx_alloc(sizeof(u64) * (nintents + ndones + 1), SX_NOFS);
	ct->ct_opv = sx_alloc(sizeof(*ct->ct_opv) * (nops + 1), SX_NOFS);
	lis = sx_zalloc(sizeof(*lis) * (nintents + 1), SX_NOFS);
	spare = sx_zalloc(sizeof(*spare), SX_NOFS);
	if (!ct->ct_bufs || !ct->ct_ids || !ct->ct_opv || !lis || !spare)
		goto out_free;
	for (i = 0; i < nintents; i++) {
		lis[i] = sx_alloc(sizeof(**lis), SX_NOFS);
		if (!lis[i])
			goto out_free;
	}
	ct->ct_tid = tid;
	ct->ct_ops = ops;
	ct->ct_len = len;
	ct->ct_nops = nops;
	ct->ct_nbufs = nbufs;
	ct->ct_nintents = nintents;
	ct->ct_ndones = ndones;
	memcpy(ct->ct_bufs, bufs, sizeof(*bufs) * nbufs);
	memcpy(ct->ct_ids, intents, sizeof(u64) * nintents);
	memcpy(ct->ct_ids + nintents, dones, sizeof(u64) * ndones);
	error = sx_cil_parse(mp, ct);
	if (error)
		goto out_free;
	for (i = nbufs, n = 0; i + 1 < nops; i++)
		if (sx_item_is_intent(ct->ct_opv[i].co_type))
			n++;
	if (n != nintents) {
		/* the ids the caller gave do not match the ops it formatted */
		error = -EFSCORRUPTED;
		goto out_free;
	}

	sx_mutex_lock(&log->l_lock);
	if (sx_is_shutdown(mp)) {
		sx_mutex_unlock(&log->l_lock);
		error = -EIO;
		goto out_free;
	}
	for (i = 0; i < nbufs; i++)
		sx_buf_pin(mp, bufs[i], (bufs[i]->b_flags & SX_BUF_INVAL) != 0);
	sx_cil_insert(mp, ct, &spare, lis);
	ASSERT(log->l_grant >= res_blocks);
	log->l_grant -= res_blocks;
	log->l_stats.ls_trans++;
	*seqp = ++log->l_commit_seq;
	sx_cond_broadcast(&log->l_space);
	sx_mutex_unlock(&log->l_lock);
	sx_free(spare);
	sx_free(lis);
	return 0;

out_free:
	if (lis) {
		for (i = 0; i < nintents; i++)
			sx_free(lis[i]);
		sx_free(lis);
	}
	sx_free(spare);
	if (ct) {
		sx_free(ct->ct_bufs);
		sx_free(ct->ct_ids);
		sx_free(ct->ct_opv);
		sx_free(ct);
	}
	sx_free(ops);
	sx_log_unreserve(mp, res_blocks);
	return error;
}

/*
 * Write one record of @len bytes of ops (already at l_iobuf + header);
 * @accounted blocks of l_force_blocks become head movement.
 */
static int sx_log_write_record(struct sx_mount *mp, u32 len, u32 nops, u32 flags,
			       u64 first_tid, u32 accounted, u64 *lsnp)
{
	struct sx_log *log = mp->m_log;
	struct sx_dlog_rec *rec = (struct sx_dlog_rec *)log->l_iobuf;
	u32 bytes = SX_LOG_HDR_BYTES + len;
	u32 blocks = sx_howmany(bytes, log->l_bsize);
	u64 lsn = SX_LSN(log->l_cycle, log->l_head);
	u32 crc;
	int error;

	ASSERT(sx_mutex_is_held(&log->l_force_lock));
	ASSERT(log->l_head + blocks <= log->l_size);
	memset(log->l_iobuf + bytes, 0, (size_t)blocks * log->l_bsize - bytes);
	rec->lr_magic = cpu_to_le32(SX_LOG_MAGIC);
	rec->lr_crc = 0;
	rec->lr_lsn = cpu_to_le64(lsn);
	rec->lr_tail_lsn = cpu_to_le64(log->l_tail);
	rec->lr_cycle = cpu_to_le32(log->l_cycle);
	rec->lr_epoch = cpu_to_le32(log->l_epoch);
	rec->lr_blocks = cpu_to_le32(blocks);
	rec->lr_len = cpu_to_le32(len);
	rec->lr_nops = cpu_to_le32(nops);
	rec->lr_flags = cpu_to_le32(flags);
	rec->lr_prev_crc = cpu_to_le32(log->l_prev_crc);
	rec->lr_version = cpu_to_le32(SX_VERSION);
	rec->lr_first_tid = cpu_to_le64(first_tid);
	memcpy(rec->lr_uuid, mp->m_sb.sb_uuid, SX_UUID_SIZE);
	/* every record names the first record of its force */
	rec->lr_force_lsn = cpu_to_le64(log->l_force_first ? log->l_force_first : lsn);
	crc = sx_cksum(log->l_iobuf, (size_t)blocks * log->l_bsize);
	rec->lr_crc = cpu_to_le32(crc);

	/*
	 * Room to remember the record is made before it is written: once it
	 * may be on the device, the head and the space accounting must move
	 * past it, and nothing after the write may fail.
	 */
	sx_mutex_lock(&log->l_lock);
	error = sx_log_grow_recinfo(log);
	sx_mutex_unlock(&log->l_lock);
	if (error) {
		sx_force_shutdown(mp, error, "no memory to track log record %llu",
				  (unsigned long long)lsn);
		return error;
	}

	error = sx_fault("log_write");
	if (!error)
		error = sx_dev_write(mp, log->l_start + log->l_head, blocks, log->l_iobuf, 0);
	if (error) {
		sx_force_shutdown(mp, error, "log record write (%u blocks at log block %u) failed",
				  blocks, log->l_head);
		return error;
	}

	if (!log->l_force_first)
		log->l_force_first = lsn;
	sx_mutex_lock(&log->l_lock);
	/* the room made above: only forces (l_force_lock) add records */
	VERIFY(sx_log_add_recinfo(log, lsn, log->l_prev_crc) == 0);
	log->l_prev_crc = crc;
	log->l_head += blocks;
	if (log->l_head == log->l_size) {
		log->l_head = 0;
		log->l_cycle++;
	}
	ASSERT(log->l_force_blocks >= accounted);
	log->l_force_blocks -= accounted;
	log->l_stats.ls_records++;
	log->l_stats.ls_bytes += (u64)blocks * log->l_bsize;
	sx_mutex_unlock(&log->l_lock);
	*lsnp = lsn;
	return 0;
}

/* Make room for @blocks at the head, writing a wrap record if needed. */
static int sx_log_prepare_head(struct sx_mount *mp, u32 blocks)
{
	struct sx_log *log = mp->m_log;
	u64 lsn;
	int error;

	ASSERT(sx_mutex_is_held(&log->l_force_lock));
	if (log->l_head + blocks <= log->l_size)
		return 0;
	error = sx_log_write_record(mp, 0, 0, SX_LR_WRAP, 0, 0, &lsn);
	if (error)
		return error;
	/* the counters are read under the log lock (sx_log_get_stats()) */
	sx_mutex_lock(&log->l_lock);
	log->l_stats.ls_wraps++;
	if (log->l_head != 0) {
		/* the wrap record took the last block(s): jump to the start */
		log->l_head = 0;
		log->l_cycle++;
	}
	sx_mutex_unlock(&log->l_lock);
	return 0;
}

/*
 * The first record of a mount carries a new epoch, and the superblock must
 * say so first: otherwise a later mount could reuse the epoch and a stale
 * record beyond a torn one could chain to an identical new record.
 */
static int sx_log_write_epoch(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	int error;

	ASSERT(sx_mutex_is_held(&log->l_force_lock));
	if (log->l_epoch_written)
		return 0;
	sx_mutex_lock(&mp->m_sb_lock);
	mp->m_sb.sb_log_epoch = log->l_epoch;
	/* from the first record on, the bitmap may change behind the count */
	mp->m_sb.sb_clean_free = 0;
	error = sx_write_sb(mp);
	sx_mutex_unlock(&mp->m_sb_lock);
	if (!error)
		log->l_epoch_written = true;
	return error;
}

/*
 * A caller of sx_log_force_seq() asleep while another leads: it needs the
 * log durable up to w_seq and the flush numbered w_flush done.
 */
struct sx_log_waiter {
	struct sx_list	w_list;		/* on l_waiters, then on a waker's list */
	u64		w_seq;
	u64		w_flush;
	bool		w_lead;		/* woken to lead the next force */
	struct sx_event	w_event;
};

/* Whether the log is durable up to @seq and flush @flush is done (l_wait_lock held). */
static bool sx_log_served(struct sx_log *log, u64 seq, u64 flush)
{
	return (u64)sx_atomic64_read(&log->l_durable_seq) >= seq && log->l_flush_done >= flush;
}

/*
 * Whether a force in flight will serve a caller that needs @seq and flush
 * @flush (l_wait_lock held): it need not lead, only wait for it.
 */
static bool sx_log_in_flight(struct sx_log *log, u64 seq, u64 flush)
{
	return log->l_flights && seq <= log->l_taken_seq && flush <= log->l_flush_begun;
}

static void sx_log_take_waiter(struct sx_log_waiter *w, bool lead, struct sx_list *woken)
{
	sx_list_del(&w->w_list);
	w->w_lead = lead;
	sx_list_add_tail(&w->w_list, woken);
}

/*
 * Take off l_waiters, onto @woken, the waiters the log now serves, and with
 * @lead (nobody leads) the oldest one it does not and no force in flight
 * will, to lead the next force;
 * l_wait_lock held.  The caller wakes them with sx_log_wake_list() once it
 * let go of l_wait_lock: a waiter woken under it would only block on it
 * again.  Each waiter sleeps on its own event, so that a force wakes only
 * those it served: with one condition for all, every force woke the
 * callers that had committed during it as well, only to send them back to
 * sleep (8 threads, 16,000 atomic writes: 23,500 sleeps, 9,300 of them for
 * nothing; now 15,700: the only sleeps for nothing are of a waiter woken
 * to lead that finds that a caller who came meanwhile took the lead).
 */
static void sx_log_wake(struct sx_log *log, bool lead, struct sx_list *woken)
{
	struct sx_list *pos, *n;

	ASSERT(sx_mutex_is_held(&log->l_wait_lock));
	sx_list_for_each_safe(pos, n, &log->l_waiters) {
		struct sx_log_waiter *w = sx_list_entry(pos, struct sx_log_waiter, w_list);

		if (sx_log_served(log, w->w_seq, w->w_flush))
			sx_log_take_waiter(w, false, woken);
	}
	if (!lead)
		return;
	sx_list_for_each(pos, &log->l_waiters) {
		struct sx_log_waiter *w = sx_list_entry(pos, struct sx_log_waiter, w_list);

		if (!sx_log_in_flight(log, w->w_seq, w->w_flush)) {
			sx_log_take_waiter(w, true, woken);
			return;
		}
	}
}

/*
 * Wake the waiters on @woken (l_wait_lock not held).  A waiter returns as
 * soon as its event is set, and its entry goes with its stack: the next
 * one is read first.
 */
static void sx_log_wake_list(struct sx_list *woken)
{
	struct sx_list *pos = woken->next, *n;

	for (; pos != woken; pos = n) {
		n = pos->next;
		sx_event_set(&sx_list_entry(pos, struct sx_log_waiter, w_list)->w_event);
	}
}

/*
 * Sleep behind the leader until a waker takes this caller off l_waiters;
 * called with l_wait_lock held, returns without it.  True if woken to
 * lead, false if woken because the log serves it.
 */
static bool sx_log_wait_turn(struct sx_log *log, u64 seq, u64 flush)
{
	struct sx_log_waiter w = { .w_seq = seq, .w_flush = flush };

	sx_event_init(&w.w_event);
	sx_list_add_tail(&w.w_list, &log->l_waiters);
	log->l_stats.ls_waits++;
	sx_mutex_unlock(&log->l_wait_lock);
	sx_event_wait(&w.w_event);
	/* w_lead was written before the set */
	return w.w_lead;
}

/*
 * Complete the groups a force took, after their records are durable (or
 * after @error: then nothing of them is in the log and the mount is down).
 * @seq is the commit count when it took them: all those are durable now.
 */
static void sx_log_complete(struct sx_mount *mp, struct sx_list *groups, u64 seq, int error)
{
	struct sx_log *log = mp->m_log;
	struct sx_list *gpos, *gn, *pos, *n;
	u32 i;

	sx_mutex_lock(&log->l_lock);
	ASSERT(log->l_forces_active > 0);
	log->l_forces_active--;
	sx_list_for_each_safe(gpos, gn, groups) {
		struct sx_cil_group *g = sx_list_entry(gpos, struct sx_cil_group, g_list);

		sx_list_for_each_safe(pos, n, &g->g_trans) {
			struct sx_cil_trans *ct = sx_list_entry(pos, struct sx_cil_trans, ct_list);

			/* ids whose ops were dropped are no longer tracked */
			for (i = 0; !error && i < ct->ct_nintents; i++) {
				struct sx_log_intent *li = sx_log_find_intent(log, ct->ct_ids[i]);

				if (li && !li->li_lsn)
					li->li_lsn = ct->ct_lsn;
			}
			for (i = 0; !error && i < ct->ct_ndones; i++) {
				struct sx_log_intent *li;

				li = sx_log_find_intent(log, ct->ct_ids[ct->ct_nintents + i]);
				if (li)
					sx_log_del_intent(log, li);
			}
			sx_list_del(pos);
			sx_cil_trans_free(mp, ct, error ? 0 : ct->ct_lsn);
		}
		/* a group that was not written (after an error) still holds its space */
		ASSERT(log->l_force_blocks >= g->g_blocks);
		log->l_force_blocks -= g->g_blocks;
		sx_list_del(gpos);
		sx_free(g);
	}
	sx_cond_broadcast(&log->l_space);
	sx_mutex_unlock(&log->l_lock);
	/*
	 * Wake the callers last: woken first, they preempted the completion
	 * while it held l_lock, and their next reservations queued behind it
	 * (8 threads on 2 CPUs: 3,781 of 16,000 reservations waited, 50 us
	 * each).  Nothing they do next relies on being woken before it.
	 */
	if (!error && seq > (u64)sx_atomic64_read(&log->l_durable_seq)) {
		struct sx_list woken;

		sx_list_init(&woken);
		sx_mutex_lock(&log->l_wait_lock);
		sx_atomic64_set(&log->l_durable_seq, (s64)seq);
		sx_log_wake(log, false, &woken);
		sx_mutex_unlock(&log->l_wait_lock);
		sx_log_wake_list(&woken);
	}
}

/*
 * Flush the device: data written in place since the last flush is durable
 * after it.  @always: flush even if no data was written.
 */
static int sx_log_flush_data(struct sx_mount *mp, bool always)
{
	struct sx_log *log = mp->m_log;
	u64 gen;
	int error;

	ASSERT(sx_mutex_is_held(&log->l_force_lock));
	/* the count moves with the dirty flag: see sx_log_flush_wanted() */
	sx_mutex_lock(&log->l_wait_lock);
	if (sx_atomic_cmpxchg(&log->l_data_dirty, 1, 0) != 1 && !always) {
		sx_mutex_unlock(&log->l_wait_lock);
		return 0;
	}
	gen = ++log->l_flush_begun;
	sx_mutex_unlock(&log->l_wait_lock);
	sx_atomic_set(&log->l_data_inplace, 0);
	error = sx_dev_flush(mp);
	if (error) {
		sx_atomic_set(&log->l_data_dirty, 1);
		sx_atomic_set(&log->l_data_inplace, 1);
		return error;
	}
	sx_mutex_lock(&log->l_wait_lock);
	log->l_flush_done = gen;
	sx_mutex_unlock(&log->l_wait_lock);
	return 0;
}

/*
 * The flush a caller that needs the data it wrote in place durable waits
 * for (l_wait_lock held).  Its writes set l_data_dirty after the device
 * took them; a flush clears the flag as it begins, under l_wait_lock.  So
 * if the flag is clear, a flush begun since covers them (the last one
 * begun, or one before it); if it is set, the next one to begin will.
 */
static u64 sx_log_flush_wanted(struct sx_log *log)
{
	ASSERT(sx_mutex_is_held(&log->l_wait_lock));
	return log->l_flush_begun + (sx_atomic_read(&log->l_data_dirty) ? 1 : 0);
}

/* Bytes of the manifest op of the force (l_mf_flight), header included. */
static u32 sx_log_manifest_bytes(const struct sx_log *log)
{
	return sizeof(struct sx_dlog_op) + log->l_mf_flight.ms_n * sizeof(struct sx_dlog_mfent);
}

/* Format the manifest of the force as the first op of its first record. */
static void sx_log_format_manifest(struct sx_log *log)
{
	struct sx_dlog_op *op = (struct sx_dlog_op *)(log->l_iobuf + SX_LOG_HDR_BYTES);
	u32 n = log->l_mf_flight.ms_n;

	ASSERT(n && n <= log->l_mf_max);
	op->lo_type = cpu_to_le16(SX_LOG_OP_MANIFEST);
	op->lo_flags = 0;
	op->lo_len = cpu_to_le32(n * sizeof(struct sx_dlog_mfent));
	op->lo_tid = 0;
	sx_mfset_format(&log->l_mf_flight, (struct sx_dlog_mfent *)(op + 1));
}

/*
 * Write the manifest of the force in a record of its own: its first group
 * does not fit beside it, or every group was dropped.
 */
static int sx_log_write_manifest(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	u32 mflen = sx_log_manifest_bytes(log);
	u64 lsn;
	int error;

	error = sx_log_prepare_head(mp, sx_howmany(SX_LOG_HDR_BYTES + mflen, log->l_bsize));
	if (error)
		return error;
	/* after the wrap record, which is written from l_iobuf too */
	sx_log_format_manifest(log);
	/* its blocks are not reserved: sx_log_avail() keeps l_mf_blocks free */
	return sx_log_write_record(mp, mflen, 1, SX_LR_MANIFEST, 0, 0, &lsn);
}

/* Wait until at most @max forces are in flight (force lock held). */
static void sx_log_flights_wait(struct sx_log *log, u32 max)
{
	ASSERT(sx_mutex_is_held(&log->l_force_lock));
	if (log->l_flights_max == 1)
		return;		/* none ever flies */
	sx_mutex_lock(&log->l_wait_lock);
	while (log->l_flights > max)
		sx_cond_wait(&log->l_flight_cond, &log->l_wait_lock);
	sx_mutex_unlock(&log->l_wait_lock);
}

/*
 * Whether a force that took the queue may fly: it needs no flush of data
 * before its records and guards no data (no manifest, no fence), and the
 * last force on the disk guards none either, so that the forces in flight
 * leave the manifest state (log_manifest.c) as they found it.
 */
static bool sx_log_may_fly(struct sx_log *log, bool preflush, bool fence)
{
	return log->l_flights_max > 1 && !preflush && !fence && !log->l_mf_flight.ms_n &&
	       !log->l_mf_done.ms_n && !log->l_mf_all;
}

/*
 * The flush and completion of a force in flight, entered with the force
 * lock and the lead held and its records written; returns without them.
 */
static int sx_log_fly(struct sx_mount *mp, struct sx_list *groups, u64 seq)
{
	struct sx_log *log = mp->m_log;
	struct sx_list woken;
	u64 ticket, gen;
	int error;

	log->l_force_first = 0;
	sx_list_init(&woken);
	sx_mutex_lock(&log->l_wait_lock);
	ticket = ++log->l_flight_next;
	log->l_flights++;
	/* the flush begins: data written in place before now is under it */
	sx_atomic_set(&log->l_data_dirty, 0);
	gen = ++log->l_flush_begun;
	log->l_leading = false;
	sx_log_wake(log, true, &woken);
	sx_mutex_unlock(&log->l_wait_lock);
	sx_atomic_set(&log->l_data_inplace, 0);
	sx_mutex_unlock(&log->l_force_lock);
	sx_log_wake_list(&woken);

	error = sx_fault("log_flush");
	if (!error)
		error = sx_dev_flush(mp);
	if (error) {
		sx_atomic_set(&log->l_data_dirty, 1);
		sx_atomic_set(&log->l_data_inplace, 1);
		sx_force_shutdown(mp, error, "cache flush after a log force failed");
	}
	sx_mutex_lock(&log->l_wait_lock);
	while (log->l_flight_done + 1 != ticket)
		sx_cond_wait(&log->l_flight_cond, &log->l_wait_lock);
	/* a force before this one failed: its records may be missing */
	if (!error && sx_is_shutdown(mp))
		error = -EIO;
	if (!error)
		log->l_flush_done = gen;
	sx_mutex_unlock(&log->l_wait_lock);
	if (!error) {
		sx_mutex_lock(&log->l_lock);
		log->l_stats.ls_forces++;
		log->l_stats.ls_flights++;
		sx_mutex_unlock(&log->l_lock);
	}
	sx_log_complete(mp, groups, seq, error);
	sx_list_init(&woken);
	sx_mutex_lock(&log->l_wait_lock);
	log->l_flight_done = ticket;
	log->l_flights--;
	sx_cond_broadcast(&log->l_flight_cond);
	/* after a failure its waiters are not served: one of them leads */
	sx_log_wake(log, !log->l_leading, &woken);
	sx_mutex_unlock(&log->l_wait_lock);
	sx_log_wake_list(&woken);
	return error;
}

/*
 * Write everything queued and flush (force lock held).  With @may_fly the
 * caller leads (sx_log_force_seq()), and the force may go on in flight
 * (sx_log_fly()): then *@flew is set, and the force lock and the lead are
 * gone when it returns.
 */
static int sx_log_force_run(struct sx_mount *mp, bool may_fly, bool *flew)
{
	struct sx_log *log = mp->m_log;
	struct sx_list groups, *pos;
	bool preflush = false, flying = false, fence, mf_left, fly;
	u64 seq;
	int error = 0;

	ASSERT(sx_mutex_is_held(&log->l_force_lock));
	sx_log_flights_wait(log, may_fly ? log->l_flights_max - 1 : 0);
	sx_list_init(&groups);
	/* the queue and the blocks its transactions wrote, together */
	sx_rwsem_down_write(&log->l_mf_sem);
	sx_mutex_lock(&log->l_lock);
	sx_cil_take(log, &groups);
	seq = log->l_commit_seq;
	log->l_forces_active++;
	sx_mutex_unlock(&log->l_lock);
	if (log->l_flights_max > 1) {
		/* none starts while this force holds the force lock */
		sx_mutex_lock(&log->l_wait_lock);
		log->l_taken_seq = seq;
		flying = log->l_flights > 0;
		sx_mutex_unlock(&log->l_wait_lock);
	}
	fence = log->l_fence_wanted;
	if (!sx_list_empty(&groups))
		preflush = sx_log_mf_take(log, flying);
	sx_rwsem_up_write(&log->l_mf_sem);
	fly = !sx_list_empty(&groups) && may_fly && sx_log_may_fly(log, preflush, fence);
	if (!fly)
		sx_log_flights_wait(log, 0);
	if (sx_list_empty(&groups) && !fence) {
		/* the forces before this one took them all, and none failed */
		error = sx_is_shutdown(mp) ? -EIO : sx_log_flush_data(mp, false);
		sx_log_complete(mp, &groups, seq, error);
		return error;
	}
	log->l_force_first = 0;
	if (sx_is_shutdown(mp)) {
		error = -EIO;
		goto out_complete;
	}
	/* without a manifest, data goes to the media before the records */
	if (preflush)
		error = sx_log_flush_data(mp, false);
	if (!error)
		error = sx_log_write_epoch(mp);
	if (error)
		goto out_complete;

	mf_left = log->l_mf_flight.ms_n != 0;
	/*
	 * The manifest is the first op of the first record, before the first
	 * group's ops if they fit beside it (the group's blocks are reserved,
	 * the manifest's are kept free by sx_log_avail()), else alone.
	 */
	sx_list_for_each(pos, &groups) {
		struct sx_cil_group *g = sx_list_entry(pos, struct sx_cil_group, g_list);
		struct sx_list *tpos;
		u64 lsn = 0, first_tid;
		u32 mflen = 0, flags = 0;

		if (!g->g_len)
			continue;	/* everything in it was dropped */
		if (mf_left) {
			mf_left = false;
			mflen = sx_log_manifest_bytes(log);
			if (mflen + g->g_len > sx_log_rec_max_bytes(log)) {
				error = sx_log_write_manifest(mp);
				if (error)
					break;
				mflen = 0;
			} else {
				flags = SX_LR_MANIFEST;
			}
		}
		error = sx_log_prepare_head(mp, sx_howmany(SX_LOG_HDR_BYTES + mflen + g->g_len,
							   log->l_bsize));
		if (error)
			break;
		if (mflen)
			sx_log_format_manifest(log);
		first_tid = sx_cil_format(g, log->l_iobuf + SX_LOG_HDR_BYTES + mflen);
		error = sx_log_write_record(mp, mflen + g->g_len, g->g_nops + !!mflen, flags,
					    first_tid, g->g_blocks, &lsn);
		if (error)
			break;
		g->g_blocks = 0;	/* written: the head now counts it */
		sx_list_for_each(tpos, &g->g_trans)
			sx_list_entry(tpos, struct sx_cil_trans, ct_list)->ct_lsn = lsn;
	}
	if (!error && mf_left) {
		/* every group was dropped whole: the manifest still comes first */
		error = sx_log_write_manifest(mp);
	}
	if (!error && fence && !log->l_force_first) {
		u64 lsn;

		/* nothing else to write: a fence ends the last force's reign */
		error = sx_log_prepare_head(mp, 1);
		if (!error)
			error = sx_log_write_record(mp, 0, 0, SX_LR_FENCE, 0, 0, &lsn);
	}
	if (!error && fly) {
		*flew = true;
		return sx_log_fly(mp, &groups, seq);
	}
	if (!error) {
		/* one flush for the records and every data write before them */
		error = sx_fault("log_flush");
		if (!error)
			error = sx_log_flush_data(mp, true);
		if (error)
			sx_force_shutdown(mp, error, "cache flush after a log force failed");
	}
	if (!error) {
		sx_mutex_lock(&log->l_lock);
		log->l_stats.ls_forces++;
		log->l_stats.ls_manifests += log->l_mf_flight.ms_n != 0;
		log->l_stats.ls_preflushes += preflush;
		log->l_stats.ls_fences += fence;
		sx_mutex_unlock(&log->l_lock);
	}
out_complete:
	sx_log_mf_forced(log, !error && log->l_force_first);
	log->l_force_first = 0;
	sx_log_complete(mp, &groups, seq, error);
	return error;
}

/* Write everything queued and flush, no force in flight (force lock held). */
static int sx_log_force_locked(struct sx_mount *mp)
{
	return sx_log_force_run(mp, false, NULL);
}

/*
 * Get a force written and flushed, a fence record if nothing is queued:
 * the last force that wrote records is then no longer the last one.
 */
int sx_log_fence(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	int error;

	sx_mutex_lock(&log->l_force_lock);
	log->l_fence_wanted = true;
	error = sx_log_force_locked(mp);
	sx_mutex_unlock(&log->l_force_lock);
	return error;
}

/* How many transactions were queued so far. */
u64 sx_log_commit_seq(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	u64 seq;

	sx_mutex_lock(&log->l_lock);
	seq = log->l_commit_seq;
	sx_mutex_unlock(&log->l_lock);
	return seq;
}

/* How many of them are durable: every one up to that count. */
u64 sx_log_durable_seq(struct sx_mount *mp)
{
	return (u64)sx_atomic64_read(&mp->m_log->l_durable_seq);
}

/* Make every committed transaction durable. */
int sx_log_force(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	int error;

	sx_mutex_lock(&log->l_force_lock);
	error = sx_log_force_locked(mp);
	sx_mutex_unlock(&log->l_force_lock);
	return error;
}

/*
 * Make the transactions up to commit sequence @seq durable, and with @data
 * the file data written in place so far too.  Forces are shared (group
 * commit): a force takes everything queued, and a caller whose
 * transactions a force covered writes and flushes nothing.
 *
 * Callers elect a leader under l_wait_lock: one of them forces
 * (l_leading), the others sleep on l_waiters until the log is durable far
 * enough for them and, with @data, until a flush that covers their data
 * is done (sx_log_flush_wanted()), or until the leader is done and one of
 * them must lead the next force.  Waiting for the force lock instead
 * would serve them one at a time as the lock passes, and a thread with a
 * newer commit could start the next force in between: a caller the last
 * force covered would wait for that one too, and every group would
 * shrink to the thread that leads it; and a fsync that found data
 * written in place by anyone since the last flush began would flush
 * again although that flush covered its own.
 *
 * A new leader forces at once, with whatever is queued.  Stop 26 had it
 * wait first for the writers the last force served to commit again (up to
 * a force's length): fewer flushes, but fewer writes too, measured in
 * interleaved pairs at stop 34: the device idles while they gather, and
 * a writer that misses a force is served by the next one, which starts
 * as soon as this one ends.
 */
int sx_log_force_seq(struct sx_mount *mp, u64 seq, bool data)
{
	struct sx_log *log = mp->m_log;
	struct sx_list woken;
	u64 flush = 0;
	bool lead = false;
	int error = 0;

	if (!data && sx_log_durable_seq(mp) >= seq)
		return 0;
	sx_list_init(&woken);
	sx_mutex_lock(&log->l_wait_lock);
	if (data)
		flush = sx_log_flush_wanted(log);
	for (;;) {
		if (sx_log_served(log, seq, flush)) {
			/* woken to lead, but served meanwhile: the next waiter leads */
			if (lead && !log->l_leading)
				sx_log_wake(log, true, &woken);
			sx_mutex_unlock(&log->l_wait_lock);
			sx_log_wake_list(&woken);
			return 0;
		}
		if (!log->l_leading && !sx_log_in_flight(log, seq, flush))
			break;
		if (!sx_log_wait_turn(log, seq, flush))
			return 0;	/* the waker found it served */
		lead = true;
		sx_mutex_lock(&log->l_wait_lock);
	}
	log->l_leading = true;
	sx_mutex_unlock(&log->l_wait_lock);

	sx_mutex_lock(&log->l_force_lock);
	if (sx_log_durable_seq(mp) < seq) {
		bool flew = false;

		/* its flush is begun after every caller here came */
		error = sx_log_force_run(mp, true, &flew);
		if (flew)
			return error;	/* the lead went at its flush */
	} else if (data) {
		/* no force, but a caller waits for a flush: every one begun is done */
		sx_log_flights_wait(log, 0);
		error = sx_is_shutdown(mp) ? -EIO : sx_log_flush_data(mp, false);
	}
	sx_mutex_unlock(&log->l_force_lock);

	sx_mutex_lock(&log->l_wait_lock);
	log->l_leading = false;
	sx_log_wake(log, true, &woken);
	sx_mutex_unlock(&log->l_wait_lock);
	sx_log_wake_list(&woken);
	return error;
}

/* The prev-CRC of the record at @lsn, which is the tail-to-be (log lock held). */
static u32 sx_log_prev_crc_of(struct sx_log *log, u64 lsn)
{
	u32 i;

	ASSERT(sx_mutex_is_held(&log->l_lock));
	if (lsn == SX_LSN(log->l_cycle, log->l_head))
		return log->l_prev_crc;
	for (i = 0; i < log->l_nrecs; i++)
		if (log->l_recs[i].ri_lsn == lsn)
			return log->l_recs[i].ri_prev_crc;
	/* every tail candidate is a record start we wrote or recovered */
	VERIFY(0);
	return 0;
}

/* Force, write metadata back, flush and move the tail as far as it can go. */
int sx_log_checkpoint(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	struct sx_list *pos;
	u64 oldest, tail, clean_free;
	u32 prev_crc = 0, i, keep, pinned, locked;
	bool moved;
	int error;

	if (mp->m_flags & SX_MF_RDONLY)
		return 0;
	sx_mutex_lock(&log->l_force_lock);
	error = sx_log_force_locked(mp);
	if (error)
		goto out_unlock;
	error = sx_buf_writeback(mp, &oldest, &pinned, &locked);
	if (error)
		goto out_unlock;
	error = sx_fault("checkpoint_flush");
	if (!error)
		error = sx_dev_flush(mp);
	if (error) {
		sx_force_shutdown(mp, error, "cache flush of a checkpoint failed");
		goto out_unlock;
	}

	sx_mutex_lock(&log->l_lock);
	log->l_stats.ls_checkpoints++;
	log->l_ckpt_pinned = pinned;
	log->l_ckpt_locked = locked;
	tail = SX_LSN(log->l_cycle, log->l_head);
	if (oldest && oldest < tail)
		tail = oldest;
	sx_list_for_each(pos, &log->l_intents) {
		struct sx_log_intent *li = sx_list_entry(pos, struct sx_log_intent, li_list);

		if (li->li_lsn && li->li_lsn < tail)
			tail = li->li_lsn;
	}
	/*
	 * The free count goes into the superblock only when this checkpoint
	 * empties the log of an unmount: then the bitmap on the disk is all
	 * there is, and nothing can change it before the next mount.
	 */
	clean_free = tail == SX_LSN(log->l_cycle, log->l_head) ? mp->m_clean_free : 0;
	moved = tail != log->l_tail;
	if (moved)
		prev_crc = sx_log_prev_crc_of(log, tail);
	sx_mutex_unlock(&log->l_lock);

	sx_mutex_lock(&mp->m_sb_lock);
	if (!moved && (!clean_free || mp->m_sb.sb_clean_free == clean_free)) {
		sx_mutex_unlock(&mp->m_sb_lock);
		goto out_unlock;
	}
	mp->m_sb.sb_log_tail = tail;
	if (moved)
		mp->m_sb.sb_log_tail_prev_crc = prev_crc;
	if (log->l_epoch_written)
		mp->m_sb.sb_log_epoch = log->l_epoch;
	mp->m_sb.sb_clean_free = clean_free;
	error = sx_write_sb(mp);
	sx_mutex_unlock(&mp->m_sb_lock);
	if (error || !moved)
		goto out_unlock;

	sx_bcache_set_tail(mp, tail);
	sx_mutex_lock(&log->l_lock);
	log->l_tail = tail;
	log->l_stats.ls_tail_moves++;
	for (keep = 0; keep < log->l_nrecs && log->l_recs[keep].ri_lsn < tail; keep++)
		;
	for (i = keep; i < log->l_nrecs; i++)
		log->l_recs[i - keep] = log->l_recs[i];
	log->l_nrecs -= keep;
	sx_cond_broadcast(&log->l_space);
	sx_mutex_unlock(&log->l_lock);
	if (tail == SX_LSN(log->l_cycle, log->l_head)) {
		/* an empty log has no last force whose manifest recovery reads */
		sx_rwsem_down_write(&log->l_mf_sem);
		sx_mfset_clear(&log->l_mf_done);
		log->l_mf_all = false;
		sx_rwsem_up_write(&log->l_mf_sem);
	}
out_unlock:
	sx_mutex_unlock(&log->l_force_lock);
	return error;
}

/* A nearly full filesystem whose free blocks are in the log: see log.h. */
bool sx_log_home_data(struct sx_mount *mp, int *error)
{
	if (*error != -ENOSPC || !sx_bcache_data_count(mp))
		return false;
	*error = sx_log_checkpoint(mp);
	return !*error;
}

/* Copy the counters. */
void sx_log_get_stats(struct sx_mount *mp, struct sx_log_stats *st)
{
	struct sx_log *log = mp->m_log;

	sx_mutex_lock(&log->l_lock);
	sx_mutex_lock(&log->l_wait_lock);	/* for ls_waits */
	*st = log->l_stats;
	sx_mutex_unlock(&log->l_wait_lock);
	sx_mutex_unlock(&log->l_lock);
}

/* The LSN the next record will get. */
u64 sx_log_head(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	u64 lsn;

	sx_mutex_lock(&log->l_lock);
	lsn = SX_LSN(log->l_cycle, log->l_head);
	sx_mutex_unlock(&log->l_lock);
	return lsn;
}

/* The tail LSN. */
u64 sx_log_tail(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	u64 lsn;

	sx_mutex_lock(&log->l_lock);
	lsn = log->l_tail;
	sx_mutex_unlock(&log->l_lock);
	return lsn;
}

/* Validate a record header found at @expect_lsn. */
int sx_log_rec_check_header(const struct sx_dlog_rec *rec, const u8 *uuid,
			    u64 expect_lsn, u32 logblocks, u32 blocksize,
			    const char **why)
{
	u32 blocks = le32_to_cpu(rec->lr_blocks);
	u32 flags = le32_to_cpu(rec->lr_flags);
	u32 max = sx_log_rec_max_blocks(logblocks, blocksize);
	u64 lsn = le64_to_cpu(rec->lr_lsn);
	u64 tail = le64_to_cpu(rec->lr_tail_lsn);
	u64 force = le64_to_cpu(rec->lr_force_lsn);

	*why = NULL;
	if (le32_to_cpu(rec->lr_magic) != SX_LOG_MAGIC)
		*why = "bad magic";
	else if (memcmp(rec->lr_uuid, uuid, SX_UUID_SIZE) != 0)
		*why = "uuid of another filesystem";
	else if (le32_to_cpu(rec->lr_version) != SX_VERSION)
		*why = "unknown version";
	else if (lsn != expect_lsn || le32_to_cpu(rec->lr_cycle) != SX_LSN_CYCLE(lsn))
		*why = "stale record (LSN is not its position)";
	else if (blocks == 0 || blocks > max || SX_LSN_BLOCK(lsn) + blocks > logblocks)
		*why = "bad length";
	else if ((u64)le32_to_cpu(rec->lr_len) + sizeof(*rec) > (u64)blocks * blocksize)
		*why = "ops overrun the record";
	else if (flags & ~SX_LR_FLAGS_ALL)
		*why = "unknown flags";
	else if ((flags & SX_LR_WRAP) && (blocks != 1 || rec->lr_len || rec->lr_nops))
		*why = "bad wrap record";
	else if ((flags & SX_LR_FENCE) && (blocks != 1 || rec->lr_len || rec->lr_nops))
		*why = "bad fence record";
	else if (flags & (flags - 1))
		*why = "more than one kind of record";
	else if (force > lsn || force < tail || SX_LSN_BLOCK(force) >= logblocks)
		*why = "bad force LSN";	/* (the tail does not move during a force) */
	else if (tail > lsn || SX_LSN_CYCLE(tail) + 1 < SX_LSN_CYCLE(lsn) ||
		 SX_LSN_BLOCK(tail) >= logblocks)
		*why = "bad tail LSN";
	return *why ? -EFSCORRUPTED : 0;
}

/* Walk the ops of a whole record, checking every bound. */
int sx_log_rec_walk_ops(const void *recbuf, u32 recbytes,
			int (*fn)(void *arg, const struct sx_dlog_op *op,
				  const void *payload),
			void *arg, const char **why)
{
	const struct sx_dlog_rec *rec = recbuf;
	const u8 *p = (const u8 *)recbuf + sizeof(*rec);
	const u8 *end = p + le32_to_cpu(rec->lr_len);
	u32 nops = le32_to_cpu(rec->lr_nops), i;
	u64 tid = le64_to_cpu(rec->lr_first_tid);
	int error;

	*why = NULL;
	if ((u64)le32_to_cpu(rec->lr_len) + sizeof(*rec) > recbytes) {
		*why = "ops overrun the record";
		return -EFSCORRUPTED;
	}
	for (i = 0; i < nops; i++) {
		const struct sx_dlog_op *op = (const struct sx_dlog_op *)p;
		u32 len;

		if (end - p < (long)sizeof(*op)) {
			*why = "op header past the end";
			return -EFSCORRUPTED;
		}
		len = le32_to_cpu(op->lo_len);
		if ((u64)(end - p) - sizeof(*op) < sx_roundup((u64)len, SX_LOG_OP_ALIGN)) {
			*why = "op payload past the end";
			return -EFSCORRUPTED;
		}
		if (le16_to_cpu(op->lo_type) == 0 || le16_to_cpu(op->lo_type) >= SX_LOG_OP_MAX) {
			*why = "unknown op type";
			return -EFSCORRUPTED;
		}
		/* a manifest (tid 0) may come before the record's first transaction */
		if (le16_to_cpu(op->lo_type) != SX_LOG_OP_MANIFEST) {
			if (le64_to_cpu(op->lo_tid) < tid) {
				*why = "transaction ids go backwards";
				return -EFSCORRUPTED;
			}
			tid = le64_to_cpu(op->lo_tid);
		}
		if (fn) {
			error = fn(arg, op, op + 1);
			if (error)
				return error;
		}
		p += sizeof(*op) + sx_roundup(len, SX_LOG_OP_ALIGN);
	}
	if (p != end) {
		*why = "bytes after the last op";
		return -EFSCORRUPTED;
	}
	return 0;
}

/* Make every committed change durable. */
SX_API int sx_sync(struct sx_mount *mp)
{
	if (mp->m_flags & SX_MF_RDONLY)
		return 0;
	return sx_log_force(mp);
}

/* Sync, write metadata in place and move the tail. */
SX_API int sx_checkpoint(struct sx_mount *mp)
{
	return sx_log_checkpoint(mp);
}
