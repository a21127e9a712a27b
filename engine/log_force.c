// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Log forces: group commit and forces in flight.
 *
 * A caller that needs its transactions durable (sx_log_force_seq()) either
 * leads a force for everyone waiting or sleeps until a force has served
 * it; the leader takes the whole queue, writes its records
 * (sx_log_write_record(), log.c), flushes and completes the transactions
 * (sx_log_complete()).  With SX_MOUNT_OVERLAP_FORCES a force that needs
 * nothing of the forces before it flushes in flight (sx_log_fly()) while
 * the next leader writes.  The locks are log.c's (see the top of it).
 */
#include "util.h"
#include "log_priv.h"
#include "mount.h"
#include "dev.h"
#include "log_cil.h"

/* Waiters at which a new one yields before it sleeps, and how often (sx_log_wait_turn()). */
#define SX_LOG_SPIN_SIBLINGS	3
#define SX_LOG_SPIN_YIELDS	200
/*
 * The longest a new leader gathers (sx_log_gather()), whatever a flush
 * takes; and after n gatherings in a row that waited in vain, the next
 * 2^n - 1 forces gather not, n at most SX_LOG_GATHER_BACKOFF.
 */
#define SX_LOG_GATHER_MAX_NS	1000000ull
#define SX_LOG_GATHER_BACKOFF	4

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

/* Whether at least @n callers are on l_waiters (l_wait_lock held): a walk of @n at most. */
static bool sx_log_waiting(struct sx_log *log, u32 n)
{
	struct sx_list *pos;

	sx_list_for_each(pos, &log->l_waiters)
		if (!--n)
			return true;
	return false;
}

/*
 * Sleep behind the leader until a waker takes this caller off l_waiters;
 * called with l_wait_lock held, returns without it.  True if woken to
 * lead, false if woken because the log serves it.
 *
 * With SX_LOG_SPIN_SIBLINGS callers waiting, this one among them, it
 * yields the CPU (SX_LOG_SPIN_YIELDS times at most) before it sleeps:
 * so many writers keep both CPUs busy, and a waiter still yielding when
 * its force completes is served by a store, where one asleep costs its
 * waker a system call and both a sleep and a wake, tens of microseconds
 * in this VM, which the completion spent being preempted by the writers it
 * woke.  Fewer waiters leave the CPUs idle, and their yields would only
 * take host CPU from the device's flushes (measured: scripts/ab.sh, 8
 * threads x1.215, 6 of 6 pairs; 4 threads x1.003, 2 threads x1.012; the
 * yields for any number of waiters: 4 threads x0.93, 2 threads x0.77).
 */
static bool sx_log_wait_turn(struct sx_log *log, u64 seq, u64 flush)
{
	struct sx_log_waiter w = { .w_seq = seq, .w_flush = flush };
	unsigned int yields;

	sx_event_init(&w.w_event);
	sx_list_add_tail(&w.w_list, &log->l_waiters);
	yields = sx_log_waiting(log, SX_LOG_SPIN_SIBLINGS) ? SX_LOG_SPIN_YIELDS : 0;
	if (log->l_gather_want && sx_log_waiting(log, log->l_gather_want))
		sx_cond_broadcast(&log->l_gather_cond);
	log->l_stats.ls_waits++;
	sx_mutex_unlock(&log->l_wait_lock);
	sx_event_wait_busy(&w.w_event, yields);
	/* w_lead was written before the set */
	return w.w_lead;
}

/*
 * Complete the groups a force took, after their records are durable (or
 * after @error: then nothing of them is in the log and the mount is down).
 * @seq is the commit count when it took them: all those are durable now.
 * @led: a caller of sx_log_force_seq() led it, a writer who comes back
 * (not a checkpoint, a sync or a full queue): sx_log_gather() counts it.
 */
static void sx_log_complete(struct sx_mount *mp, struct sx_list *groups, u64 seq, int error,
			    bool led)
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
		/* those it served, its leader, and those still waiting */
		log->l_gather = led;
		sx_list_for_each(pos, &woken)
			log->l_gather++;
		sx_list_for_each(pos, &log->l_waiters)
			log->l_gather++;
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
	u64 gen, start;
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
	start = sx_now_ns();
	error = sx_dev_flush(mp);
	if (error) {
		sx_atomic_set(&log->l_data_dirty, 1);
		sx_atomic_set(&log->l_data_inplace, 1);
		return error;
	}
	start = sx_now_ns() - start;
	sx_mutex_lock(&log->l_wait_lock);
	log->l_flush_ns = start;
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
	sx_log_complete(mp, groups, seq, error, true);
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
		sx_log_complete(mp, &groups, seq, error, may_fly);
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
	sx_log_complete(mp, &groups, seq, error, may_fly);
	return error;
}

/* Write everything queued and flush, no force in flight (force lock held). */
int sx_log_force_locked(struct sx_mount *mp)
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
 * Before a new leader takes the queue: wait, up to one flush's time, until
 * every caller the last force served (its leader too, if a writer led it)
 * or left waiting, but this one, waits behind it (l_wait_lock held;
 * dropped and retaken while waiting).  @forcing: the leader will force
 * (one that only flushes for data, or finds its commit durable, waits
 * for nobody).
 *
 * Without it, writers that each write again as soon as they are served
 * split into two groups that take turns: the force that served one group
 * ends, the other group, which committed during it, is forced at once,
 * and the group just served commits again during that force and waits
 * for the one after.  Each writer then waits for two forces a write (8
 * threads: 231 us a write against a 115 us force, 4.1 writers a force).
 * The served writers need only their own work to commit again (4 us a
 * commit), so the next force waits for them and takes both groups.
 *
 * Stop 26 had a gathering too, bounded by a force's time and waiting for
 * as many writers as the last force's end found waiting: the group
 * already waiting, so it never joined the two, and with commits of 12 to
 * 27 us, most of them waiting for the allocator, the device idled while
 * eight of them ran one after the other.  A force in flight serves its
 * own writers only once it completes, so none gathers while one flies.
 *
 * Writers that think between writes longer than a flush do not come back
 * in time, and each gathering would only delay their force: after waits
 * in vain the next forces do not wait (SX_LOG_GATHER_BACKOFF; measured
 * with 2 threads each spinning 200 us between writes: x0.939 without the
 * back-off, x1.004 with it, against no gathering at all).
 */
static void sx_log_gather(struct sx_log *log, bool forcing)
{
	u32 want = log->l_gather;
	bool met = false;
	u64 now, end;

	ASSERT(sx_mutex_is_held(&log->l_wait_lock) && log->l_leading);
	log->l_gather = 0;
	if (!forcing || want < 2 || log->l_flights)
		return;
	if (log->l_gather_skip) {
		log->l_gather_skip--;
		log->l_stats.ls_gather_skips++;
		return;
	}
	log->l_stats.ls_gathers++;
	now = sx_now_ns();
	end = now + sx_min(log->l_flush_ns, SX_LOG_GATHER_MAX_NS);
	log->l_gather_want = want - 1;
	while (!(met = sx_log_waiting(log, want - 1)) && now < end) {
		if (!sx_cond_timedwait_busy(&log->l_gather_cond, &log->l_wait_lock, end - now))
			break;
		now = sx_now_ns();
	}
	log->l_gather_want = 0;
	if (met || sx_log_waiting(log, want - 1)) {
		log->l_gather_misses = 0;
	} else {
		log->l_stats.ls_gathers_vain++;
		log->l_gather_misses = sx_min(log->l_gather_misses + 1, SX_LOG_GATHER_BACKOFF);
		log->l_gather_skip = (1u << log->l_gather_misses) - 1;
	}
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
 * A new leader first waits for the writers the last force served to
 * commit again (sx_log_gather()).
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
	sx_log_gather(log, sx_log_durable_seq(mp) < seq);
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
