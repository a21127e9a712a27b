// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The write-ahead log: reservations, the queue of committed transactions,
 * record writing, forces and checkpoints.
 *
 * Locks: l_force_lock serialises everything that writes the log or moves
 * the tail (forces and checkpoints), so a checkpoint never computes a tail
 * while a force has written records whose buffers are not yet unpinned.
 * l_lock covers the state read by reservations and commits.  Order:
 * l_force_lock, then l_lock, then the buffer cache lock.
 */
#include "util.h"
#include "log.h"
#include "buf.h"
#include "mount.h"

#define SX_LOG_HDR_BYTES	sizeof(struct sx_dlog_rec)

/* A committed transaction waiting for a force. */
struct sx_cil_trans {
	struct sx_list	ct_list;
	u64		ct_tid;
	void		*ct_ops;
	u32		ct_len;
	u32		ct_nops;
	u32		ct_res_blocks;
	u32		ct_nbufs;
	u32		ct_nintents;
	u32		ct_ndones;
	u64		ct_lsn;		/* record it went into */
	struct sx_buf	**ct_bufs;
	u64		*ct_ids;	/* intents, then dones */
};

/* An intent whose done item is not yet durable. */
struct sx_log_intent {
	struct sx_list	li_list;
	u64		li_id;
	u64		li_lsn;		/* 0 until its record is written */
};

/* A record between the tail and the head. */
struct sx_log_recinfo {
	u64		ri_lsn;
	u32		ri_prev_crc;
};

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
	u32		l_grant;	/* blocks reserved by open or queued transactions */
	struct sx_atomic l_data_dirty;	/* data written in place since the last flush */
	struct sx_list	l_cil;
	struct sx_list	l_intents;
	u32		l_nintents;
	struct sx_log_recinfo *l_recs;
	u32		l_nrecs;
	u32		l_recs_cap;
	u8		*l_iobuf;	/* one record */
	struct sx_log_stats l_stats;
};

/* The largest record for a log of @logblocks blocks of @blocksize. */
u32 sx_log_rec_max_blocks(u32 logblocks, u32 blocksize)
{
	u32 max = sx_howmany(1u << 20, blocksize);

	max = sx_min(max, logblocks / 8);
	return sx_max(max, 2u);
}

/* The largest reservation a transaction may have. */
u32 sx_log_max_trans_bytes(const struct sx_mount *mp)
{
	return mp->m_log->l_max_rec_blocks * mp->m_log->l_bsize - SX_LOG_HDR_BYTES;
}

/* Blocks between the tail and the head. */
static u32 sx_log_used(const struct sx_log *log)
{
	u32 tc = SX_LSN_CYCLE(log->l_tail), tb = SX_LSN_BLOCK(log->l_tail);

	if (log->l_cycle == tc)
		return log->l_head - tb;
	return log->l_size - tb + log->l_head;
}

/* Blocks a new reservation may take: one record's worth stays free for a wrap. */
static u32 sx_log_avail(const struct sx_log *log)
{
	u64 busy = (u64)sx_log_used(log) + log->l_grant + log->l_max_rec_blocks + 1;

	return busy >= log->l_size ? 0 : (u32)(log->l_size - busy);
}

/* Set up the in-core log at @head_lsn, the end of the valid log. */
int sx_log_init(struct sx_mount *mp, u64 head_lsn, u32 prev_crc, u64 next_tid)
{
	struct sx_log *log;

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
	log->l_iobuf = sx_alloc((size_t)log->l_max_rec_blocks * log->l_bsize, 0);
	if (!log->l_iobuf) {
		sx_free(log);
		return -ENOMEM;
	}
	sx_mutex_init(&log->l_force_lock);
	sx_mutex_init(&log->l_lock);
	sx_cond_init(&log->l_space);
	mp->m_log = log;
	return 0;
}

/* Free one queued transaction, dropping its pins without writing it. */
static void sx_cil_trans_free(struct sx_mount *mp, struct sx_cil_trans *ct, u64 lsn)
{
	u32 i;

	for (i = 0; i < ct->ct_nbufs; i++)
		sx_buf_unpin(mp, ct->ct_bufs[i], lsn);
	sx_free(ct->ct_ops);
	sx_free(ct->ct_bufs);
	sx_free(ct->ct_ids);
	sx_free(ct);
}

/* Free the log; after a shutdown, queued work is thrown away. */
void sx_log_destroy(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	struct sx_list *pos, *n;

	if (!log)
		return;
	sx_list_for_each_safe(pos, n, &log->l_cil) {
		sx_list_del(pos);
		sx_cil_trans_free(mp, sx_list_entry(pos, struct sx_cil_trans, ct_list), 0);
	}
	sx_list_for_each_safe(pos, n, &log->l_intents) {
		sx_list_del(pos);
		sx_free(sx_list_entry(pos, struct sx_log_intent, li_list));
	}
	sx_cond_destroy(&log->l_space);
	sx_mutex_destroy(&log->l_lock);
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
		if (log->l_grant == 0 && sx_list_empty(&log->l_cil)) {
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

/* Track an intent so the tail cannot pass it (log lock held). */
static int sx_log_add_intent(struct sx_log *log, u64 id, u64 lsn)
{
	struct sx_log_intent *li = sx_alloc(sizeof(*li), SX_NOFS);

	if (!li)
		return -ENOMEM;
	li->li_id = id;
	li->li_lsn = lsn;
	sx_list_add_tail(&li->li_list, &log->l_intents);
	log->l_nintents++;
	return 0;
}

/* The tracked intent with @id (log lock held). */
static struct sx_log_intent *sx_log_find_intent(struct sx_log *log, u64 id)
{
	struct sx_list *pos;

	sx_list_for_each(pos, &log->l_intents) {
		struct sx_log_intent *li = sx_list_entry(pos, struct sx_log_intent, li_list);

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
	error = sx_log_add_intent(log, id, lsn);
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

/* Remember a record between tail and head (log lock held). */
static int sx_log_add_recinfo(struct sx_log *log, u64 lsn, u32 prev_crc)
{
	if (log->l_nrecs == log->l_recs_cap) {
		u32 cap = log->l_recs_cap ? log->l_recs_cap * 2 : 64;
		struct sx_log_recinfo *n = sx_alloc(sizeof(*n) * cap, SX_NOFS);

		if (!n)
			return -ENOMEM;
		if (log->l_nrecs)
			memcpy(n, log->l_recs, sizeof(*n) * log->l_nrecs);
		sx_free(log->l_recs);
		log->l_recs = n;
		log->l_recs_cap = cap;
	}
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
		  const u64 *dones, u32 ndones, u32 res_blocks)
{
	struct sx_log *log = mp->m_log;
	struct sx_cil_trans *ct;
	u32 i;
	int error = -ENOMEM;

	ct = sx_zalloc(sizeof(*ct), SX_NOFS);
	if (!ct)
		goto out_free;
	ct->ct_bufs = sx_alloc(sizeof(*bufs) * (nbufs + 1), SX_NOFS);
	ct->ct_ids = sx_alloc(sizeof(u64) * (nintents + ndones + 1), SX_NOFS);
	if (!ct->ct_bufs || !ct->ct_ids)
		goto out_free;
	ct->ct_tid = tid;
	ct->ct_ops = ops;
	ct->ct_len = len;
	ct->ct_nops = nops;
	ct->ct_res_blocks = res_blocks;
	ct->ct_nintents = nintents;
	ct->ct_ndones = ndones;
	memcpy(ct->ct_ids, intents, sizeof(u64) * nintents);
	memcpy(ct->ct_ids + nintents, dones, sizeof(u64) * ndones);

	sx_mutex_lock(&log->l_lock);
	if (sx_is_shutdown(mp)) {
		sx_mutex_unlock(&log->l_lock);
		error = -EIO;
		goto out_free;
	}
	for (i = 0; i < nintents; i++) {
		error = sx_log_add_intent(log, intents[i], 0);
		if (error) {
			sx_mutex_unlock(&log->l_lock);
			goto out_free;
		}
	}
	for (i = 0; i < nbufs; i++) {
		sx_buf_pin(mp, bufs[i], (bufs[i]->b_flags & SX_BUF_INVAL) != 0);
		ct->ct_bufs[i] = bufs[i];
	}
	ct->ct_nbufs = nbufs;
	sx_list_add_tail(&ct->ct_list, &log->l_cil);
	log->l_stats.ls_trans++;
	sx_mutex_unlock(&log->l_lock);
	return 0;

out_free:
	if (ct) {
		sx_free(ct->ct_bufs);
		sx_free(ct->ct_ids);
		sx_free(ct);
	}
	sx_free(ops);
	sx_log_unreserve(mp, res_blocks);
	return error;
}

/* Write one record of @len bytes of ops (already at l_iobuf + header). */
static int sx_log_write_record(struct sx_mount *mp, u32 len, u32 nops, u32 flags,
			       u64 first_tid, u64 *lsnp)
{
	struct sx_log *log = mp->m_log;
	struct sx_dlog_rec *rec = (struct sx_dlog_rec *)log->l_iobuf;
	u32 bytes = SX_LOG_HDR_BYTES + len;
	u32 blocks = sx_howmany(bytes, log->l_bsize);
	u64 lsn = SX_LSN(log->l_cycle, log->l_head);
	u32 crc;
	int error;

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
	crc = sx_cksum(log->l_iobuf, (size_t)blocks * log->l_bsize);
	rec->lr_crc = cpu_to_le32(crc);

	error = sx_fault("log_write");
	if (!error)
		error = sx_dev_write(mp, log->l_start + log->l_head, blocks, log->l_iobuf, 0);
	if (error) {
		sx_force_shutdown(mp, error);
		return error;
	}

	sx_mutex_lock(&log->l_lock);
	error = sx_log_add_recinfo(log, lsn, log->l_prev_crc);
	log->l_prev_crc = crc;
	log->l_head += blocks;
	if (log->l_head == log->l_size) {
		log->l_head = 0;
		log->l_cycle++;
	}
	log->l_stats.ls_records++;
	log->l_stats.ls_bytes += (u64)blocks * log->l_bsize;
	sx_mutex_unlock(&log->l_lock);
	if (error) {
		sx_force_shutdown(mp, error);
		return error;
	}
	*lsnp = lsn;
	return 0;
}

/* Make room for @blocks at the head, writing a wrap record if needed. */
static int sx_log_prepare_head(struct sx_mount *mp, u32 blocks)
{
	struct sx_log *log = mp->m_log;
	u64 lsn;
	int error;

	if (log->l_head + blocks <= log->l_size)
		return 0;
	error = sx_log_write_record(mp, 0, 0, SX_LR_WRAP, 0, &lsn);
	if (error)
		return error;
	log->l_stats.ls_wraps++;
	if (log->l_head != 0) {
		/* the wrap record took the last block(s): jump to the start */
		sx_mutex_lock(&log->l_lock);
		log->l_head = 0;
		log->l_cycle++;
		sx_mutex_unlock(&log->l_lock);
	}
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

	if (log->l_epoch_written)
		return 0;
	sx_mutex_lock(&mp->m_sb_lock);
	mp->m_sb.sb_log_epoch = log->l_epoch;
	error = sx_write_sb(mp);
	sx_mutex_unlock(&mp->m_sb_lock);
	if (!error)
		log->l_epoch_written = true;
	return error;
}

/* Complete the queued transactions in @done after their records are durable. */
static void sx_log_complete(struct sx_mount *mp, struct sx_list *done, int error)
{
	struct sx_log *log = mp->m_log;
	struct sx_list *pos, *n;
	u32 i;

	sx_mutex_lock(&log->l_lock);
	sx_list_for_each_safe(pos, n, done) {
		struct sx_cil_trans *ct = sx_list_entry(pos, struct sx_cil_trans, ct_list);

		for (i = 0; !error && i < ct->ct_nintents; i++) {
			struct sx_log_intent *li = sx_log_find_intent(log, ct->ct_ids[i]);

			if (li && !li->li_lsn)
				li->li_lsn = ct->ct_lsn;
		}
		for (i = 0; !error && i < ct->ct_ndones; i++) {
			struct sx_log_intent *li;

			li = sx_log_find_intent(log, ct->ct_ids[ct->ct_nintents + i]);
			if (li) {
				sx_list_del(&li->li_list);
				log->l_nintents--;
				sx_free(li);
			}
		}
		ASSERT(log->l_grant >= ct->ct_res_blocks);
		log->l_grant -= ct->ct_res_blocks;
		sx_list_del(pos);
		sx_cil_trans_free(mp, ct, error ? 0 : ct->ct_lsn);
	}
	sx_cond_broadcast(&log->l_space);
	sx_mutex_unlock(&log->l_lock);
}

/* File data went to the device in place: flush it before the next record. */
void sx_log_data_written(struct sx_mount *mp)
{
	sx_atomic_set(&mp->m_log->l_data_dirty, 1);
}

/*
 * Flush data written in place, so that it is durable before any record that
 * maps it can be: a record and the data it points to may otherwise reach the
 * media in either order.
 */
static int sx_log_flush_data(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	int error;

	if (sx_atomic_cmpxchg(&log->l_data_dirty, 1, 0) != 1)
		return 0;
	error = sx_dev_flush(mp);
	if (error)
		sx_atomic_set(&log->l_data_dirty, 1);
	return error;
}

/* Write everything queued and flush (force lock held). */
static int sx_log_force_locked(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	u32 max_bytes = log->l_max_rec_blocks * log->l_bsize - SX_LOG_HDR_BYTES;
	struct sx_list todo, done, *pos, *n;
	int error = 0;

	sx_list_init(&todo);
	sx_list_init(&done);
	sx_mutex_lock(&log->l_lock);
	sx_list_for_each_safe(pos, n, &log->l_cil) {
		sx_list_del(pos);
		sx_list_add_tail(pos, &todo);
	}
	sx_mutex_unlock(&log->l_lock);
	if (sx_list_empty(&todo))
		return sx_is_shutdown(mp) ? -EIO : sx_log_flush_data(mp);
	if (sx_is_shutdown(mp)) {
		error = -EIO;
		goto out_complete;
	}
	error = sx_log_flush_data(mp);
	if (!error)
		error = sx_log_write_epoch(mp);
	if (error)
		goto out_complete;

	while (!error && !sx_list_empty(&todo)) {
		struct sx_cil_trans *first = sx_list_first(&todo, struct sx_cil_trans, ct_list);
		u32 len = 0, nops = 0, blocks;
		struct sx_list rec;
		u64 lsn = 0;

		/* pack whole transactions into one record */
		sx_list_init(&rec);
		sx_list_for_each_safe(pos, n, &todo) {
			struct sx_cil_trans *ct = sx_list_entry(pos, struct sx_cil_trans, ct_list);

			if (len + ct->ct_len > max_bytes)
				break;
			len += ct->ct_len;
			nops += ct->ct_nops;
			sx_list_del(pos);
			sx_list_add_tail(pos, &rec);
		}
		VERIFY(!sx_list_empty(&rec));	/* a reservation bounds each */
		blocks = sx_howmany(SX_LOG_HDR_BYTES + len, log->l_bsize);
		error = sx_log_prepare_head(mp, blocks);
		if (!error) {
			u8 *p = log->l_iobuf + SX_LOG_HDR_BYTES;

			sx_list_for_each(pos, &rec) {
				struct sx_cil_trans *ct = sx_list_entry(pos, struct sx_cil_trans, ct_list);

				memcpy(p, ct->ct_ops, ct->ct_len);
				p += ct->ct_len;
			}
			error = sx_log_write_record(mp, len, nops, 0, first->ct_tid, &lsn);
		}
		sx_list_for_each_safe(pos, n, &rec) {
			struct sx_cil_trans *ct = sx_list_entry(pos, struct sx_cil_trans, ct_list);

			ct->ct_lsn = lsn;
			sx_list_del(pos);
			sx_list_add_tail(pos, &done);
		}
	}
	if (!error) {
		error = sx_fault("log_flush");
		if (!error)
			error = sx_dev_flush(mp);
		if (error)
			sx_force_shutdown(mp, error);
	}
	if (!error)
		log->l_stats.ls_forces++;
out_complete:
	sx_list_for_each_safe(pos, n, &todo) {
		sx_list_del(pos);
		sx_list_add_tail(pos, &done);
	}
	sx_log_complete(mp, &done, error);
	return error;
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

/* The prev-CRC of the record at @lsn, which is the tail-to-be (log lock held). */
static u32 sx_log_prev_crc_of(struct sx_log *log, u64 lsn)
{
	u32 i;

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
	u64 oldest, tail;
	u32 prev_crc, i, keep;
	int error;

	if (mp->m_flags & SX_MF_RDONLY)
		return 0;
	sx_mutex_lock(&log->l_force_lock);
	error = sx_log_force_locked(mp);
	if (error)
		goto out_unlock;
	error = sx_buf_writeback(mp, &oldest);
	if (error)
		goto out_unlock;
	error = sx_fault("checkpoint_flush");
	if (!error)
		error = sx_dev_flush(mp);
	if (error) {
		sx_force_shutdown(mp, error);
		goto out_unlock;
	}

	sx_mutex_lock(&log->l_lock);
	log->l_stats.ls_checkpoints++;
	tail = SX_LSN(log->l_cycle, log->l_head);
	if (oldest && oldest < tail)
		tail = oldest;
	sx_list_for_each(pos, &log->l_intents) {
		struct sx_log_intent *li = sx_list_entry(pos, struct sx_log_intent, li_list);

		if (li->li_lsn && li->li_lsn < tail)
			tail = li->li_lsn;
	}
	if (tail == log->l_tail) {
		sx_mutex_unlock(&log->l_lock);
		goto out_unlock;
	}
	prev_crc = sx_log_prev_crc_of(log, tail);
	sx_mutex_unlock(&log->l_lock);

	sx_mutex_lock(&mp->m_sb_lock);
	mp->m_sb.sb_log_tail = tail;
	mp->m_sb.sb_log_tail_prev_crc = prev_crc;
	if (log->l_epoch_written)
		mp->m_sb.sb_log_epoch = log->l_epoch;
	error = sx_write_sb(mp);
	sx_mutex_unlock(&mp->m_sb_lock);
	if (error)
		goto out_unlock;

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
out_unlock:
	sx_mutex_unlock(&log->l_force_lock);
	return error;
}

/* Copy the counters. */
void sx_log_get_stats(struct sx_mount *mp, struct sx_log_stats *st)
{
	struct sx_log *log = mp->m_log;

	sx_mutex_lock(&log->l_lock);
	*st = log->l_stats;
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
		if (le64_to_cpu(op->lo_tid) < tid) {
			*why = "transaction ids go backwards";
			return -EFSCORRUPTED;
		}
		tid = le64_to_cpu(op->lo_tid);
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
