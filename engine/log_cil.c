// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The queue of committed transactions (the log's "CIL", after XFS's
 * committed item list) and what it drops before a record is written.
 *
 * A commit puts its formatted ops into the open group; a force writes each
 * group as one record.  Because a record replays whole or not at all, an op
 * whose effect a later op of the same group repeats is dead weight:
 *
 *  - a BUF op is dropped when a later BUF op of the same block in the group
 *    logs at least the same bytes (the later op holds the newer contents;
 *    the transaction layer widens a buffer's op to cover its queued one when
 *    its reservation allows, see sx_trans_cover_queued());
 *  - an intent and its done item in the same group are both dropped: replay
 *    would see the promise and its fulfilment, and the changes that fulfil
 *    it are in the same record anyway;
 *  - a transaction left with no live op loses its TRANS_END too.
 *
 * Cancel ops are never dropped and never drop anything: recovery orders
 * them against ops of earlier records.  Ops in different groups never
 * affect each other, so what reaches the log is always a prefix of groups,
 * each one a consistent picture of the transactions in it.
 *
 * Locks: everything here runs under l_lock, except sx_cil_parse() and
 * sx_cil_format(), which touch only a transaction or group nobody else can
 * reach.  A buffer's b_cil_* fields are changed only by the commit of the
 * transaction that holds the buffer locked.
 */
#include "util.h"
#include "log_priv.h"
#include "buf.h"
#include "item.h"
#include "mount.h"
#include "log_cil.h"

/* Bytes of the trailing TRANS_END op of every transaction. */
#define SX_CIL_END_BYTES	sizeof(struct sx_dlog_op)

/* Index the ops of a formatted transaction. */
int sx_cil_parse(struct sx_mount *mp, struct sx_cil_trans *ct)
{
	const u8 *p = ct->ct_ops, *end = p + ct->ct_len;
	u32 i;

	for (i = 0; i < ct->ct_nops; i++) {
		const struct sx_dlog_op *op = (const struct sx_dlog_op *)p;
		u32 bytes;

		if (end - p < (long)sizeof(*op))
			return -EFSCORRUPTED;
		bytes = sizeof(*op) + sx_roundup(le32_to_cpu(op->lo_len), SX_LOG_OP_ALIGN);
		if ((u64)(end - p) < bytes)
			return -EFSCORRUPTED;
		ct->ct_opv[i].co_off = (u32)(p - (const u8 *)ct->ct_ops);
		ct->ct_opv[i].co_bytes = bytes;
		ct->ct_opv[i].co_type = le16_to_cpu(op->lo_type);
		ct->ct_opv[i].co_dead = false;
		p += bytes;
	}
	/* our own formatting: BUF ops first, one per buffer, TRANS_END last */
	if (p != end || ct->ct_nops < 1 ||
	    ct->ct_opv[ct->ct_nops - 1].co_type != SX_LOG_OP_TRANS_END)
		return -EFSCORRUPTED;
	for (i = 0; i < ct->ct_nbufs; i++)
		if (ct->ct_opv[i].co_type != SX_LOG_OP_BUF)
			return -EFSCORRUPTED;
	return 0;
}

static const void *sx_cil_payload(const struct sx_cil_trans *ct, u32 i)
{
	return (const u8 *)ct->ct_ops + ct->ct_opv[i].co_off + sizeof(struct sx_dlog_op);
}

/*
 * The chunks a BUF op logs, as a map like b_logmap.  Return: false for a
 * cancel op, which takes no part in dropping.
 */
static bool sx_cil_buf_map(struct sx_mount *mp, const struct sx_cil_trans *ct, u32 i,
			   u64 *map)
{
	const struct sx_dlog_buf *lb = sx_cil_payload(ct, i);
	const struct sx_dlog_region *rg = (const struct sx_dlog_region *)(lb + 1);
	u32 n = le16_to_cpu(lb->lb_nregions), r, c;

	if (le32_to_cpu(lb->lb_flags) & SX_LB_CANCEL)
		return false;
	memset(map, 0, sizeof(u64) * SX_BUF_MAP_WORDS);
	for (r = 0; r < n; r++) {
		u32 first = le32_to_cpu(rg[r].lg_off) / SX_BUF_CHUNK;
		u32 last = (le32_to_cpu(rg[r].lg_off) + le32_to_cpu(rg[r].lg_len) - 1) /
			   SX_BUF_CHUNK;

		for (c = first; c <= last && c < mp->m_bsize / SX_BUF_CHUNK; c++)
			map[c / 64] |= 1ull << (c % 64);
	}
	return true;
}

/* True if every chunk of @old is in @new. */
static bool sx_cil_map_covers(const u64 *new, const u64 *old)
{
	u32 w;

	for (w = 0; w < SX_BUF_MAP_WORDS; w++)
		if (old[w] & ~new[w])
			return false;
	return true;
}

/* Recount the blocks @g's record will take. */
static void sx_cil_reblock(struct sx_log *log, struct sx_cil_group *g)
{
	u32 blocks = g->g_len ? sx_howmany(SX_LOG_HDR_BYTES + g->g_len, log->l_bsize) : 0;

	log->l_cil_blocks = log->l_cil_blocks - g->g_blocks + blocks;
	g->g_blocks = blocks;
}

/* Drop op @i of @ct; its transaction's TRANS_END goes with its last live op. */
static void sx_cil_kill(struct sx_log *log, struct sx_cil_trans *ct, u32 i)
{
	struct sx_cil_group *g = ct->ct_group;
	struct sx_cil_op *co = &ct->ct_opv[i];

	if (co->co_dead)
		return;
	ASSERT(co->co_type != SX_LOG_OP_TRANS_END && ct->ct_nlive > 0);
	co->co_dead = true;
	g->g_len -= co->co_bytes;
	g->g_nops--;
	log->l_stats.ls_ops_dropped++;
	log->l_stats.ls_bytes_dropped += co->co_bytes;
	if (--ct->ct_nlive == 0) {
		co = &ct->ct_opv[ct->ct_nops - 1];
		co->co_dead = true;
		g->g_len -= co->co_bytes;
		g->g_nops--;
		log->l_stats.ls_bytes_dropped += co->co_bytes;
	}
}

/* The open group, or a new one if @ct does not fit (or none is open). */
static struct sx_cil_group *sx_cil_open_group(struct sx_log *log, struct sx_cil_trans *ct,
					      struct sx_cil_group **spare)
{
	struct sx_cil_group *g = NULL;

	if (log->l_cil_group) {
		g = sx_list_entry(log->l_cil.prev, struct sx_cil_group, g_list);
		ASSERT(g->g_id == log->l_cil_group);
		if (g->g_len + ct->ct_len <= sx_log_rec_max_bytes(log))
			return g;
	}
	g = *spare;
	*spare = NULL;
	sx_list_init(&g->g_trans);
	g->g_id = ++log->l_cil_next_group;
	g->g_len = 0;
	g->g_nops = 0;
	g->g_blocks = 0;
	sx_list_add_tail(&g->g_list, &log->l_cil);
	log->l_cil_group = g->g_id;
	return g;
}

/* A BUF op of @ct for buffer @bp: drop the group's older op of the block. */
static void sx_cil_queue_buf(struct sx_mount *mp, struct sx_cil_trans *ct, u32 i)
{
	struct sx_log *log = mp->m_log;
	struct sx_cil_group *g = ct->ct_group;
	struct sx_buf *bp = ct->ct_bufs[i];
	u64 map[SX_BUF_MAP_WORDS];

	/* the committing transaction's buffer: its b_cil_* are read under b_lock */
	ASSERT(sx_mutex_is_held(&bp->b_lock) && sx_mutex_is_held(&log->l_lock));
	if (!sx_cil_buf_map(mp, ct, i, map)) {
		bp->b_cil_group = 0;
		return;
	}
	/* an older op this one does not cover stays; later ops compare with ours */
	if (bp->b_cil_group == g->g_id && sx_cil_map_covers(map, bp->b_cilmap))
		sx_cil_kill(log, bp->b_cil_ct, bp->b_cil_op);
	bp->b_cil_group = g->g_id;
	bp->b_cil_ct = ct;
	bp->b_cil_op = i;
	memcpy(bp->b_cilmap, map, sizeof(map));
}

/* An intent or done op of @ct. */
static void sx_cil_queue_item(struct sx_log *log, struct sx_cil_trans *ct, u32 i,
			      struct sx_log_intent **prealloc)
{
	const struct sx_dlog_intent *di = sx_cil_payload(ct, i);
	u64 id = le64_to_cpu(di->li_id);
	struct sx_log_intent *li;

	if (sx_item_is_intent(ct->ct_opv[i].co_type)) {
		li = *prealloc;
		*prealloc = NULL;
		li->li_id = id;
		li->li_lsn = 0;
		li->li_group = ct->ct_group->g_id;
		li->li_ct = ct;
		li->li_op = i;
		sx_list_add_tail(&li->li_list, &log->l_intents);
		sx_list_add_tail(&li->li_hash, &log->l_ihash[id % SX_LOG_IHASH]);
		log->l_nintents++;
		return;
	}
	li = sx_log_find_intent(log, id);
	if (!li || li->li_group != ct->ct_group->g_id)
		return;
	/* promise and fulfilment in one record: neither needs to be there */
	sx_cil_kill(log, li->li_ct, li->li_op);
	sx_cil_kill(log, ct, i);
	sx_log_del_intent(log, li);
	log->l_stats.ls_whiteouts++;
}

/*
 * Put @ct into the queue (log lock held).  @spare is a free group, used if
 * a new one is needed; @lis holds one preallocated intent record per intent
 * op.  Nothing here can fail: every allocation was made before the lock.
 */
/*
 * Transaction ids are handed out when transactions start, and threads
 * commit in any order, but a record's ids must not go backwards (recovery
 * refuses such a record as malformed).  A transaction whose id is below
 * the last one queued gets a new id, above every id handed out so far,
 * in each of its ops: in the log, ids follow the commit order.  (Nothing
 * else knows a transaction by the id the log shows: recovery only checks
 * their order and takes the largest for the next mount.)
 */
static void sx_cil_order_tid(struct sx_log *log, struct sx_cil_trans *ct)
{
	struct sx_dlog_op *op;
	u32 i;

	if (ct->ct_tid >= log->l_cil_last_tid) {
		log->l_cil_last_tid = ct->ct_tid;
		return;
	}
	ct->ct_tid = log->l_next_tid++;
	log->l_cil_last_tid = ct->ct_tid;
	for (i = 0; i < ct->ct_nops; i++) {
		op = (struct sx_dlog_op *)((u8 *)ct->ct_ops + ct->ct_opv[i].co_off);
		op->lo_tid = cpu_to_le64(ct->ct_tid);
	}
}

void sx_cil_insert(struct sx_mount *mp, struct sx_cil_trans *ct, struct sx_cil_group **spare,
		   struct sx_log_intent **lis)
{
	struct sx_log *log = mp->m_log;
	struct sx_cil_group *g;
	u32 i, k = 0;

	ASSERT(sx_mutex_is_held(&log->l_lock));
	sx_cil_order_tid(log, ct);
	g = sx_cil_open_group(log, ct, spare);
	ct->ct_group = g;
	sx_list_add_tail(&ct->ct_list, &g->g_trans);
	g->g_len += ct->ct_len;
	g->g_nops += ct->ct_nops;
	log->l_cil_mem += ct->ct_len;
	if (log->l_cil_mem > log->l_stats.ls_queue_peak)
		log->l_stats.ls_queue_peak = log->l_cil_mem;
	ct->ct_nlive = ct->ct_nops - 1;
	for (i = 0; i < ct->ct_nbufs; i++)
		sx_cil_queue_buf(mp, ct, i);
	for (i = ct->ct_nbufs; i + 1 < ct->ct_nops; i++) {
		if (sx_item_is_intent(ct->ct_opv[i].co_type))
			sx_cil_queue_item(log, ct, i, &lis[k++]);
		else
			sx_cil_queue_item(log, ct, i, NULL);
	}
	sx_cil_reblock(log, g);
}

/* Hand every queued group to a force; the open group is closed. */
void sx_cil_take(struct sx_log *log, struct sx_list *groups)
{
	struct sx_list *pos, *n;

	ASSERT(sx_mutex_is_held(&log->l_lock));
	sx_list_for_each_safe(pos, n, &log->l_cil) {
		sx_list_del(pos);
		sx_list_add_tail(pos, groups);
	}
	log->l_force_blocks += log->l_cil_blocks;
	log->l_cil_blocks = 0;
	log->l_cil_mem = 0;
	log->l_cil_group = 0;
}

/* Copy the live ops of @g to @dst, in commit order; returns the first tid. */
u64 sx_cil_format(const struct sx_cil_group *g, u8 *dst)
{
	const struct sx_list *pos;
	u64 first_tid = 0;
	u32 i;

	sx_list_for_each(pos, &g->g_trans) {
		const struct sx_cil_trans *ct = sx_list_entry(pos, struct sx_cil_trans, ct_list);

		for (i = 0; i < ct->ct_nops; i++) {
			const struct sx_cil_op *co = &ct->ct_opv[i];

			if (co->co_dead)
				continue;
			if (!first_tid)
				first_tid = ct->ct_tid;
			memcpy(dst, (const u8 *)ct->ct_ops + co->co_off, co->co_bytes);
			dst += co->co_bytes;
		}
	}
	return first_tid;
}

/* Free one queued transaction, dropping its pins. */
void sx_cil_trans_free(struct sx_mount *mp, struct sx_cil_trans *ct, u64 lsn)
{
	u32 i;

	for (i = 0; i < ct->ct_nbufs; i++)
		sx_buf_unpin(mp, ct->ct_bufs[i], lsn);
	sx_free(ct->ct_ops);
	sx_free(ct->ct_opv);
	sx_free(ct->ct_bufs);
	sx_free(ct->ct_ids);
	sx_free(ct);
}

/* The id of the open group, 0 if none: a buffer queued there may be covered. */
u64 sx_log_cil_group(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	u64 id;

	sx_mutex_lock(&log->l_lock);
	id = log->l_cil_group;
	sx_mutex_unlock(&log->l_lock);
	return id;
}

/*
 * Write the queue once its records would take more than the mount lets it
 * keep back, or its ops more memory than it may hold.
 */
int sx_log_cil_push(struct sx_mount *mp)
{
	struct sx_log *log = mp->m_log;
	bool push;

	sx_mutex_lock(&log->l_lock);
	push = log->l_cil_blocks > log->l_cil_max || log->l_cil_mem > log->l_cil_mem_max;
	if (push)
		log->l_stats.ls_pushes++;
	sx_mutex_unlock(&log->l_lock);
	return push ? sx_log_force(mp) : 0;
}
