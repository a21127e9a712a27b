// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The write-ahead log: reservations, commits into the queue
 * (log_cil.c), record writing, and checkpoints; forces, which write the
 * queue's records, are log_force.c's.
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
	sx_cond_init(&log->l_gather_cond);
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
	sx_cond_destroy(&log->l_gather_cond);
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
int sx_log_write_record(struct sx_mount *mp, u32 len, u32 nops, u32 flags,
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
int sx_log_prepare_head(struct sx_mount *mp, u32 blocks)
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
int sx_log_write_epoch(struct sx_mount *mp)
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
	sx_mutex_lock(&log->l_wait_lock);	/* for ls_waits and the gatherings' */
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
