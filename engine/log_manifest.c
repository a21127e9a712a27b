// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Data manifests: one device flush per log force, for data and records.
 *
 * File data is written in place, and a record that maps new blocks must not
 * be durable while their data is not.  Flushing the device before writing
 * the records would order them, at the cost of a second flush per force.
 * Instead the force lists, in a manifest op at the start of its first
 * record (before that record's transactions, if they fit beside it: a
 * small force writes one record), each block written since the last force
 * whose mapping is not durable, with the CRC of its new contents, and
 * flushes once after all its records.  Recovery
 * reads the blocks of the last force's manifest: a mismatch means the
 * force's flush never finished (so it was never acknowledged) and the log
 * ends before the force, as at a torn record.  The rules that keep this
 * safe:
 *
 *  - A data write puts its blocks in the pending set only after the device
 *    took them, and a force takes the pending set and the queue together,
 *    under l_mf_sem exclusive, while writes hold it shared.  So every block
 *    a taken transaction maps was written before the take (data goes in
 *    before the transaction that maps it commits) and is in the manifest,
 *    and every block of the manifest was written before the flush that
 *    ends the force: an acknowledged force's manifest matches.
 *  - Blocks written in place over a durable mapping need no entry: their
 *    mapping does not change, and fsync's flush covers their data.  But if
 *    a later transaction maps them elsewhere (a swap, a clone), the data
 *    must come with the mapping: sx_log_data_remap() makes the force that
 *    writes it flush the data before its records, as before manifests.
 *  - Once a force F is acknowledged, its manifest blocks may be written
 *    again.  While F is the last force with records on the disk, a crash
 *    would show the new contents to recovery, which would drop the
 *    acknowledged F.  So a write to a block of the manifest of the last
 *    force that wrote records (l_mf_done), or of the force writing now
 *    (l_mf_flight: it is the last one as soon as it lands), first gets
 *    another force written and flushed: a fence record if nothing else is
 *    queued.  That is the cheap choice: such writes are rare (a block
 *    written fresh and then overwritten in place after the force), while
 *    putting the block in a later manifest cannot help, since its new
 *    data may reach the media before any later record does.  The fence
 *    costs one flush, the same as the data flush a force would pay without
 *    manifests.
 *  - A block freed by a transaction that is not durable gets no new data
 *    (busy extents, alloc.c; metadata is written back only after its
 *    records): so a block of F's manifest is written fresh again only
 *    after a later force wrote the free, when F is no longer the last
 *    force.  The checks above still
 *    cover every write, fresh or not.
 *  - A force whose manifest would not fit one manifest record (l_mf_max
 *    entries, a quarter of the largest record so that the log keeps room
 *    for it beside a wrap), or that missed an entry for want of memory,
 *    flushes the data before its records instead and writes no manifest.
 */
#include "util.h"
#include "log_priv.h"
#include "mount.h"
#include "dev.h"
#include "buf.h"

/* Slot of @bno in a table of @cap slots. */
static u32 sx_mfset_slot(u64 bno, u32 cap)
{
	return (u32)((bno * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* Index of @bno's slot, or of the empty slot where it would go. */
static u32 sx_mfset_find(const struct sx_mfset *ms, u64 bno)
{
	u32 i = sx_mfset_slot(bno, ms->ms_cap);

	while (ms->ms_bno[i] && ms->ms_bno[i] != bno)
		i = (i + 1) & (ms->ms_cap - 1);
	return i;
}

/* Grow the table of @ms to @cap slots. */
static int sx_mfset_grow(struct sx_mfset *ms, u32 cap)
{
	u64 *bno = sx_zalloc(sizeof(*bno) * cap, 0);
	u32 *crc = sx_alloc(sizeof(*crc) * cap, 0);
	struct sx_mfset n = { bno, crc, cap, 0 };
	u32 i;

	if (!bno || !crc) {
		sx_free(bno);
		sx_free(crc);
		return -ENOMEM;
	}
	for (i = 0; i < ms->ms_cap; i++) {
		if (ms->ms_bno[i]) {
			u32 j = sx_mfset_find(&n, ms->ms_bno[i]);

			n.ms_bno[j] = ms->ms_bno[i];
			n.ms_crc[j] = ms->ms_crc[i];
			n.ms_n++;
		}
	}
	sx_mfset_free(ms);
	*ms = n;
	return 0;
}

/* Add @bno with @crc, or set the CRC of the entry it has. */
int sx_mfset_add(struct sx_mfset *ms, u64 bno, u32 crc)
{
	u32 i;
	int error;

	ASSERT(bno != 0);
	/* at most half full, so that probes stay short */
	if (2 * (ms->ms_n + 1) > ms->ms_cap) {
		error = sx_mfset_grow(ms, ms->ms_cap ? 2 * ms->ms_cap : 64);
		if (error)
			return error;
	}
	i = sx_mfset_find(ms, bno);
	if (!ms->ms_bno[i]) {
		ms->ms_bno[i] = bno;
		ms->ms_n++;
	}
	ms->ms_crc[i] = crc;
	return 0;
}

/* True if @bno is in @ms. */
bool sx_mfset_has(const struct sx_mfset *ms, u64 bno)
{
	return ms->ms_n && ms->ms_bno[sx_mfset_find(ms, bno)] == bno;
}

/* Empty @ms, keeping its table unless it grew large. */
void sx_mfset_clear(struct sx_mfset *ms)
{
	if (ms->ms_cap > 4096) {
		sx_mfset_free(ms);
		return;
	}
	if (ms->ms_n)
		memset(ms->ms_bno, 0, sizeof(*ms->ms_bno) * ms->ms_cap);
	ms->ms_n = 0;
}

/* Free the table of @ms. */
void sx_mfset_free(struct sx_mfset *ms)
{
	sx_free(ms->ms_bno);
	sx_free(ms->ms_crc);
	memset(ms, 0, sizeof(*ms));
}

/* The entries of @ms, in slot order. */
void sx_mfset_format(const struct sx_mfset *ms, struct sx_dlog_mfent *ents)
{
	u32 i, n = 0;

	for (i = 0; i < ms->ms_cap; i++) {
		if (!ms->ms_bno[i])
			continue;
		ents[n].me_bno = cpu_to_le64(ms->ms_bno[i]);
		ents[n].me_crc = cpu_to_le32(ms->ms_crc[i]);
		ents[n].me_pad = 0;
		n++;
	}
	ASSERT(n == ms->ms_n);
}

/* Set up the manifest state of a new log. */
int sx_log_mf_init(struct sx_log *log)
{
	/* a quarter of the largest record: sx_log_avail() keeps it free */
	log->l_mf_blocks = sx_max(log->l_max_rec_blocks / 4, 1u);
	log->l_mf_max = (log->l_mf_blocks * log->l_bsize - SX_LOG_HDR_BYTES -
			 sizeof(struct sx_dlog_op)) / sizeof(struct sx_dlog_mfent);
	sx_rwsem_init(&log->l_mf_sem);
	sx_mutex_init(&log->l_mf_lock);
	return 0;
}

/* Free the manifest state. */
void sx_log_mf_destroy(struct sx_log *log)
{
	sx_mfset_free(&log->l_mf_pending);
	sx_mfset_free(&log->l_mf_flight);
	sx_mfset_free(&log->l_mf_done);
	sx_mutex_destroy(&log->l_mf_lock);
	sx_rwsem_destroy(&log->l_mf_sem);
}

/*
 * A force took the queue (l_mf_sem held exclusive): make the pending set
 * its manifest.  Returns true if the force must flush data before its
 * records instead (then it has no manifest).  @flying: a force in flight
 * may not have flushed yet; it cleared l_data_inplace as its flush began,
 * and the data written in place before that is durable only once it
 * returns, so a remap waits for it as it waits for a flush of its own.
 */
bool sx_log_mf_take(struct sx_log *log, bool flying)
{
	struct sx_mfset t;
	bool preflush;

	ASSERT(sx_rwsem_is_write_held(&log->l_mf_sem));
	ASSERT(log->l_mf_flight.ms_n == 0);
	preflush = sx_atomic_cmpxchg(&log->l_remap, 1, 0) == 1 &&
		   (flying || sx_atomic_read(&log->l_data_inplace));
	preflush |= log->l_mf_overflow;
	log->l_mf_overflow = false;
	if (preflush) {
		sx_mfset_clear(&log->l_mf_pending);
		return true;
	}
	t = log->l_mf_flight;
	log->l_mf_flight = log->l_mf_pending;
	log->l_mf_pending = t;
	return false;
}

/*
 * The force is done.  If it @wrote records, it is now the last force on
 * the disk: its manifest (maybe empty) is the one to guard.
 */
void sx_log_mf_forced(struct sx_log *log, bool wrote)
{
	struct sx_mfset t;

	sx_rwsem_down_write(&log->l_mf_sem);
	if (wrote) {
		t = log->l_mf_done;
		log->l_mf_done = log->l_mf_flight;
		log->l_mf_flight = t;
		log->l_mf_all = false;
		log->l_fence_wanted = false;
	}
	sx_mfset_clear(&log->l_mf_flight);
	sx_rwsem_up_write(&log->l_mf_sem);
}

/* True if a write to [@bno, +@count) must wait for a fence (l_mf_sem held). */
static bool sx_log_mf_guarded(struct sx_log *log, u64 bno, u32 count)
{
	u32 i;

	if (log->l_mf_all)
		return true;
	if (!log->l_mf_done.ms_n && !log->l_mf_flight.ms_n)
		return false;
	for (i = 0; i < count; i++)
		if (sx_mfset_has(&log->l_mf_done, bno + i) ||
		    sx_mfset_has(&log->l_mf_flight, bno + i))
			return true;
	return false;
}

/* Write file data in place, ordered against the log (see the top). */
int sx_log_write_data(struct sx_mount *mp, u64 bno, u32 count, const void *buf, bool fresh)
{
	struct sx_log *log = mp->m_log;
	const u8 *p = buf;
	bool inplace = false;
	u64 hit;
	u32 i;
	int error;

	/*
	 * A block whose contents are in the log is written home by a
	 * checkpoint, and recovery writes its image: data written here would
	 * be lost to either.  Overwrites of such blocks go through the log
	 * (file_io.c), and data allocations step around them (alloc.c).
	 */
	if (sx_buf_range_data(mp, bno, count, &hit)) {
		sx_err(mp, "refusing to write block %llu in place: its contents are in the log",
		       (unsigned long long)hit);
		return -EFSCORRUPTED;
	}
	for (;;) {
		sx_rwsem_down_read(&log->l_mf_sem);
		if (!sx_log_mf_guarded(log, bno, count))
			break;
		sx_rwsem_up_read(&log->l_mf_sem);
		error = sx_log_fence(mp);
		if (error)
			return error;
	}
	error = sx_dev_write(mp, bno, count, buf, 0);
	/* even a failed write may have changed some of the blocks */
	sx_atomic_set(&log->l_data_dirty, 1);
	if (error)
		goto out;
	sx_mutex_lock(&log->l_mf_lock);
	for (i = 0; i < count; i++, p += log->l_bsize) {
		if (!fresh && !sx_mfset_has(&log->l_mf_pending, bno + i)) {
			inplace = true;
			continue;
		}
		if (log->l_mf_overflow)
			continue;
		if (log->l_mf_pending.ms_n >= log->l_mf_max ||
		    sx_mfset_add(&log->l_mf_pending, bno + i, sx_cksum(p, log->l_bsize)))
			log->l_mf_overflow = true;
	}
	sx_mutex_unlock(&log->l_mf_lock);
	if (inplace)
		sx_atomic_set(&log->l_data_inplace, 1);
out:
	sx_rwsem_up_read(&log->l_mf_sem);
	return error;
}

/*
 * Whether a block of [@bno, +@count) waits in l_mf_pending for the next
 * manifest: read as the data writes add to it, under l_mf_sem shared (a
 * force swaps the set away under it exclusive) and l_mf_lock.
 */
bool sx_log_data_pending(struct sx_mount *mp, u64 bno, u32 count)
{
	struct sx_log *log = mp->m_log;
	bool found = false;
	u32 i;

	sx_rwsem_down_read(&log->l_mf_sem);
	sx_mutex_lock(&log->l_mf_lock);
	for (i = 0; i < count && !found && log->l_mf_pending.ms_n; i++)
		found = sx_mfset_has(&log->l_mf_pending, bno + i);
	sx_mutex_unlock(&log->l_mf_lock);
	sx_rwsem_up_read(&log->l_mf_sem);
	return found;
}

/* A transaction maps blocks whose data may have been written in place. */
void sx_log_data_remap(struct sx_mount *mp)
{
	sx_atomic_set(&mp->m_log->l_remap, 1);
}

/* The next force writes a record, a fence if it has nothing else. */
void sx_log_want_fence(struct sx_mount *mp)
{
	mp->m_log->l_fence_wanted = true;
}

/* Where MANIFEST ops may be: first in a manifest record, nowhere else. */
struct sx_log_kind_walk {
	bool		kw_manifest;	/* the record has SX_LR_MANIFEST */
	u32		kw_op;		/* ops seen */
	const char	*kw_why;
};

static int sx_log_rec_kind_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	struct sx_log_kind_walk *kw = arg;
	bool is_mf = le16_to_cpu(op->lo_type) == SX_LOG_OP_MANIFEST;
	bool first = kw->kw_op++ == 0;

	if (!kw->kw_manifest && is_mf)
		kw->kw_why = "manifest op outside a manifest record";
	else if (kw->kw_manifest && first && !is_mf)
		kw->kw_why = "manifest record does not begin with a manifest op";
	else if (kw->kw_manifest && !first && is_mf)
		kw->kw_why = "manifest op after the start of a manifest record";
	return kw->kw_why ? -EFSCORRUPTED : 0;
}

/*
 * Check what a record holds for its flags.  A manifest record begins with
 * the MANIFEST op (tid 0) and then holds the force's first transactions, if
 * they fit beside it: so a small force writes one record.
 */
int sx_log_rec_check_kind(const void *recbuf, u32 recbytes, u64 datastart, u64 dblocks,
			  const struct sx_dlog_mfent **ents, u32 *nents, const char **why)
{
	const struct sx_dlog_rec *rec = recbuf;
	const struct sx_dlog_op *op = (const struct sx_dlog_op *)(rec + 1);
	struct sx_log_kind_walk kw = { false, 0, NULL };
	const struct sx_dlog_mfent *e;
	const char *inner = NULL;
	u32 len, n, i;
	int error;

	*ents = NULL;
	*nents = 0;
	*why = NULL;
	kw.kw_manifest = le32_to_cpu(rec->lr_flags) & SX_LR_MANIFEST;
	error = sx_log_rec_walk_ops(recbuf, recbytes, sx_log_rec_kind_op, &kw, &inner);
	if (error) {
		*why = kw.kw_why ? kw.kw_why : inner;
		return error;
	}
	if (!kw.kw_manifest)
		return 0;
	/* the walk checked that the op is there, whole, and a MANIFEST one */
	if (kw.kw_op == 0) {
		*why = "manifest record does not begin with a manifest op";
		return -EFSCORRUPTED;
	}
	len = le32_to_cpu(op->lo_len);
	if (op->lo_flags || op->lo_tid || (kw.kw_op == 1 && rec->lr_first_tid))
		*why = "manifest op with flags or a transaction id";
	else if (len == 0 || len % sizeof(*e))
		*why = "manifest op of a bad length";
	if (*why)
		return -EFSCORRUPTED;
	e = (const struct sx_dlog_mfent *)(op + 1);
	n = len / sizeof(*e);
	for (i = 0; i < n; i++) {
		u64 bno = le64_to_cpu(e[i].me_bno);

		if (bno < datastart || bno >= dblocks) {
			*why = "manifest names a block outside the data area";
			return -EFSCORRUPTED;
		}
		if (e[i].me_pad) {
			*why = "manifest entry padding is not zero";
			return -EFSCORRUPTED;
		}
	}
	*ents = e;
	*nents = n;
	return 0;
}
