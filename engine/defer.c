// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Deferred operations: chains of transactions that finish queued work with
 * intent and done items (see defer.h for the contract).
 *
 * Queued work is kept per transaction as a list of pendings, each one type
 * and at most do_max_items items, which one intent item describes.  The
 * chain works on the first pending, one step per transaction:
 *
 *	done(old intent) + the step's changes + intent(what is left of it)
 *	                 + intents of the work the step queued
 *
 * all in one transaction, so that a crash anywhere leaves exactly one
 * intent for every piece of unfinished work, and never an intent for work
 * already done.  The work a step queues goes to the front of the list, in
 * front of what is left of the pending that queued it: the -EAGAIN
 * continuation, which lets an item finish only after the work it spawned
 * (an unmap after the refcount decrease of the piece it removed).
 *
 * One step per transaction costs a done and an intent per step, but it
 * bounds each transaction by do_step_res() whatever the number of items,
 * and it relogs the pending being worked on at every step for free.  The
 * pendings waiting behind it still pin the log tail with their old
 * intents; once they are SX_DEFER_RELOG_STEPS steps old they are relogged
 * (done of the old intent and an identical new one), so that a chain of any
 * length never fills the log.
 */
#include "util.h"
#include "defer.h"
#include "item.h"
#include "trans.h"
#include "log.h"
#include "mount.h"
#include "dev.h"

/* Steps a waiting intent may age before it is relogged. */
#define SX_DEFER_RELOG_STEPS	16
/* Intents of new work one step may log, reserved in every step. */
#define SX_DEFER_SPAWN_INTENTS	3
/* Waiting intents one transaction of a chain may relog, reserved too. */
#define SX_DEFER_RELOGS_PER_STEP 2

struct sx_defer_item {
	struct sx_list	di_list;
	u8		di_data[];	/* do_item_size bytes, 8-byte aligned */
};

struct sx_defer_pending {
	struct sx_list	dp_list;
	const struct sx_defer_ops *dp_ops;
	u64		dp_intent;	/* id of its logged intent; 0: none yet */
	bool		dp_committed;	/* that intent is in a committed transaction */
	u32		dp_age;		/* steps since the intent was logged */
	u32		dp_count;
	struct sx_list	dp_items;
};

/* A registered type: its ops, and the log item table made from them. */
struct sx_defer_type {
	const struct sx_defer_ops *dt_ops;
	struct sx_item_ops dt_intent;
	struct sx_item_ops dt_done;
};

/*
 * Types are registered once, before any mount uses them, and never change
 * while a mount is alive: a plain table indexed by intent type suffices.
 */
static struct sx_defer_type sx_defer_types[SX_LOG_OP_MAX];

/* ------------------------------------------------------------ list helpers */

/* Move every entry of @from to the front of @to, keeping their order. */
static void sx_defer_splice_front(struct sx_list *from, struct sx_list *to)
{
	while (!sx_list_empty(from)) {
		struct sx_list *last = from->prev;

		sx_list_del(last);
		sx_list_add(last, to);
	}
}

/* Move every entry of @from to the back of @to, keeping their order. */
static void sx_defer_splice_tail(struct sx_list *from, struct sx_list *to)
{
	while (!sx_list_empty(from)) {
		struct sx_list *first = from->next;

		sx_list_del(first);
		sx_list_add_tail(first, to);
	}
}

static void sx_defer_stat(struct sx_mount *mp, int which)
{
	sx_atomic64_add_return(&mp->m_dstat[which], 1);
}

/* ------------------------------------------------------------ pendings */

static struct sx_defer_pending *sx_defer_pending_new(const struct sx_defer_ops *ops)
{
	struct sx_defer_pending *dp = sx_zalloc(sizeof(*dp), SX_NOFS);

	if (!dp)
		return NULL;
	dp->dp_ops = ops;
	sx_list_init(&dp->dp_items);
	return dp;
}

static int sx_defer_pending_add(struct sx_defer_pending *dp, const void *item)
{
	const struct sx_defer_ops *ops = dp->dp_ops;
	struct sx_defer_item *di;

	di = sx_alloc(sizeof(*di) + sx_roundup(ops->do_item_size, 8), SX_NOFS);
	if (!di)
		return -ENOMEM;
	memcpy(di->di_data, item, ops->do_item_size);
	sx_list_add_tail(&di->di_list, &dp->dp_items);
	dp->dp_count++;
	return 0;
}

/* Throw a pending's items away (cancel each) and free it. */
static void sx_defer_pending_free(struct sx_defer_pending *dp)
{
	while (!sx_list_empty(&dp->dp_items)) {
		struct sx_defer_item *di = sx_list_first(&dp->dp_items, struct sx_defer_item,
							 di_list);

		sx_list_del(&di->di_list);
		if (dp->dp_ops->do_cancel)
			dp->dp_ops->do_cancel(di->di_data);
		sx_free(di);
	}
	sx_free(dp);
}

/* Free every pending on @list; true if one of them had a committed intent. */
static bool sx_defer_free_list(struct sx_list *list)
{
	bool committed = false;

	while (!sx_list_empty(list)) {
		struct sx_defer_pending *dp = sx_list_first(list, struct sx_defer_pending,
							    dp_list);

		committed |= dp->dp_committed;
		sx_list_del(&dp->dp_list);
		sx_defer_pending_free(dp);
	}
	return committed;
}

/* ------------------------------------------------------------ log items */

static u32 sx_defer_intent_len(const struct sx_defer_ops *ops, u32 nitems)
{
	return (u32)sizeof(struct sx_dlog_intent) + nitems * ops->do_log_size;
}

/* Log an intent listing every item of @dp. */
static int sx_defer_log_intent(struct sx_trans *tp, struct sx_defer_pending *dp)
{
	const struct sx_defer_ops *ops = dp->dp_ops;
	u32 len = sx_defer_intent_len(ops, dp->dp_count);
	struct sx_dlog_intent *li;
	struct sx_list *pos;
	u8 *p;
	u64 id;
	int error;

	ASSERT(dp->dp_count > 0 && dp->dp_count <= ops->do_max_items);
	li = sx_zalloc(len, SX_NOFS);
	if (!li)
		return -ENOMEM;
	id = sx_log_next_intent_id(tp->t_mp);
	li->li_id = cpu_to_le64(id);
	li->li_nitems = cpu_to_le32(dp->dp_count);
	p = (u8 *)(li + 1);
	sx_list_for_each(pos, &dp->dp_items) {
		ops->do_encode(sx_list_entry(pos, struct sx_defer_item, di_list)->di_data, p);
		p += ops->do_log_size;
	}
	error = sx_trans_log_item(tp, ops->do_intent_type, li, len);
	sx_free(li);
	if (error)
		return error;
	dp->dp_intent = id;
	dp->dp_committed = false;
	dp->dp_age = 0;
	sx_defer_stat(tp->t_mp, SX_DSTAT_INTENTS);
	return 0;
}

/* Log the done item of @dp's intent; @dp has no intent afterwards. */
static int sx_defer_log_done(struct sx_trans *tp, struct sx_defer_pending *dp)
{
	struct sx_dlog_intent ld;
	int error;

	ASSERT(dp->dp_intent != 0);
	memset(&ld, 0, sizeof(ld));
	ld.li_id = cpu_to_le64(dp->dp_intent);
	error = sx_trans_log_item(tp, dp->dp_ops->do_done_type, &ld, sizeof(ld));
	if (error)
		return error;
	dp->dp_intent = 0;
	return 0;
}

/* Log an intent for every pending of @tp that has none. */
int sx_defer_log_intents(struct sx_trans *tp)
{
	struct sx_list *pos;
	int error;

	sx_list_for_each(pos, &tp->t_dfops) {
		struct sx_defer_pending *dp = sx_list_entry(pos, struct sx_defer_pending,
							    dp_list);

		if (dp->dp_intent)
			continue;
		error = sx_defer_log_intent(tp, dp);
		if (error)
			return error;
	}
	return 0;
}

/* The intents of @list are in a committed transaction now. */
void sx_defer_committed(struct sx_list *list)
{
	struct sx_list *pos;

	sx_list_for_each(pos, list) {
		struct sx_defer_pending *dp = sx_list_entry(pos, struct sx_defer_pending,
							    dp_list);

		if (dp->dp_intent)
			dp->dp_committed = true;
	}
}

/* sx_trans_roll(): take the work off the transaction being committed ... */
void sx_defer_detach(struct sx_trans *tp, struct sx_list *list)
{
	sx_defer_splice_tail(&tp->t_dfops, list);
}

/* ... and hand it, its intents now committed, to the next one */
void sx_defer_attach(struct sx_trans *tp, struct sx_list *list)
{
	sx_defer_committed(list);
	sx_defer_splice_tail(list, &tp->t_dfops);
}

/* ... or, if the roll failed, throw it away */
void sx_defer_drop(struct sx_mount *mp, struct sx_list *list)
{
	if (sx_defer_free_list(list)) {
		sx_force_shutdown(mp, -EIO, "deferred work with a committed intent was dropped");
	}
}

/* ------------------------------------------------------------ queueing */

/* Queue a copy of @item. */
int sx_defer_add(struct sx_trans *tp, const struct sx_defer_ops *ops, const void *item)
{
	struct sx_defer_pending *dp = NULL;
	int error;

	ASSERT(ops && sx_defer_types[ops->do_intent_type].dt_ops == ops);
	if (!sx_list_empty(&tp->t_dfops)) {
		dp = sx_list_entry(tp->t_dfops.prev, struct sx_defer_pending, dp_list);
		/* a logged intent is fixed; a full one cannot grow */
		if (dp->dp_ops != ops || dp->dp_intent || dp->dp_count >= ops->do_max_items)
			dp = NULL;
	}
	if (!dp) {
		dp = sx_defer_pending_new(ops);
		if (!dp)
			return -ENOMEM;
		sx_list_add_tail(&dp->dp_list, &tp->t_dfops);
	}
	error = sx_defer_pending_add(dp, item);
	if (error && dp->dp_count == 0) {
		sx_list_del(&dp->dp_list);
		sx_free(dp);
	}
	return error;
}

bool sx_defer_pending(const struct sx_trans *tp)
{
	return !sx_list_empty(&tp->t_dfops);
}

/* Drop the work of a transaction being cancelled. */
void sx_defer_cancel(struct sx_trans *tp)
{
	/* a logged promise can no longer be kept by this mount */
	sx_defer_drop(tp->t_mp, &tp->t_dfops);
}

/* ------------------------------------------------------------ finishing */

/*
 * The largest intent any registered type logs, kept up to date by
 * (un)registration: every step's reservation needs it, and scanning the
 * type table each time was a measurable part of a swap step.
 */
static u32 sx_defer_max_ibytes;

static void sx_defer_update_max_intent_bytes(void)
{
	u32 i, max = 0;

	for (i = 0; i < SX_LOG_OP_MAX; i++) {
		const struct sx_defer_ops *ops = sx_defer_types[i].dt_ops;

		if (ops)
			max = sx_max(max, sx_trans_op_bytes(sx_defer_intent_len(ops,
							ops->do_max_items)));
	}
	sx_defer_max_ibytes = max;
}

static u32 sx_defer_max_intent_bytes(void)
{
	return sx_defer_max_ibytes;
}

u32 sx_defer_step_bytes(const struct sx_mount *mp, const struct sx_defer_ops *ops)
{
	u32 res = sx_trans_op_bytes(sizeof(struct sx_dlog_intent)) +
		  sx_trans_op_bytes(sx_defer_intent_len(ops, ops->do_max_items)) +
		  SX_DEFER_SPAWN_INTENTS * sx_defer_max_intent_bytes();

	if (ops->do_step_res)
		res += ops->do_step_res(mp);
	return res;
}

/*
 * What each transaction of a chain reserves: a step of @ops and room to
 * relog a few waiting intents.
 */
static u32 sx_defer_chain_bytes(const struct sx_mount *mp, const struct sx_defer_ops *ops)
{
	return sx_defer_step_bytes(mp, ops) + SX_DEFER_RELOGS_PER_STEP *
	       (sx_trans_op_bytes(sizeof(struct sx_dlog_intent)) + sx_defer_max_intent_bytes());
}

/* The largest chain transaction of any registered type. */
u32 sx_defer_largest_res(const struct sx_mount *mp)
{
	u32 i, res = 0;

	for (i = 0; i < SX_LOG_OP_MAX; i++)
		if (sx_defer_types[i].dt_ops)
			res = sx_max(res, sx_defer_chain_bytes(mp, sx_defer_types[i].dt_ops));
	return res;
}

/* Log space of relogging one pending: a done and a new intent. */
static u32 sx_defer_relog_bytes(const struct sx_defer_pending *dp)
{
	return sx_trans_op_bytes(sizeof(struct sx_dlog_intent)) +
	       sx_trans_op_bytes(sx_defer_intent_len(dp->dp_ops, dp->dp_count));
}

/*
 * Commit the current step and start the next transaction, big enough for a
 * step of the first pending.  The pendings stay with the chain, not with
 * the transaction, so that sx_trans_roll() does not see them.
 */
static int sx_defer_roll(struct sx_trans **tpp, struct sx_list *chain)
{
	struct sx_trans *tp = *tpp;
	bool committed;
	u32 res = 0;
	int error;

	/* sx_trans_roll_res() keeps the current reservation if it is larger */
	if (!sx_list_empty(chain)) {
		struct sx_defer_pending *dp = sx_list_first(chain, struct sx_defer_pending,
							    dp_list);

		res = sx_defer_chain_bytes(tp->t_mp, dp->dp_ops);
	}
	error = sx_trans_roll_res(tpp, res, &committed);
	/* logged in the step just committed: promised, even if the roll failed after */
	if (committed)
		sx_defer_committed(chain);
	return error;
}

/*
 * Relog the waiting pendings whose intents have aged, as many as fit in the
 * current (fresh) transaction; the rest wait for the next step.
 */
static int sx_defer_relog(struct sx_trans *tp, struct sx_list *chain)
{
	struct sx_defer_pending *first = sx_list_first(chain, struct sx_defer_pending,
						       dp_list);
	u32 step = sx_defer_step_bytes(tp->t_mp, first->dp_ops);
	struct sx_list *pos;
	int error;

	sx_list_for_each(pos, chain) {
		struct sx_defer_pending *dp = sx_list_entry(pos, struct sx_defer_pending,
							    dp_list);

		if (dp == first || dp->dp_age < SX_DEFER_RELOG_STEPS || !dp->dp_committed)
			continue;
		if (sx_trans_space(tp) < sx_defer_relog_bytes(dp) + step)
			break;
		error = sx_defer_log_done(tp, dp);
		if (!error)
			error = sx_defer_log_intent(tp, dp);
		if (error)
			return error;
		sx_defer_stat(tp->t_mp, SX_DSTAT_RELOGS);
	}
	return 0;
}

/*
 * One step: the first item of the first pending, in @tp.  New work the item
 * queues goes in front of what is left of its pending.
 */
static int sx_defer_step(struct sx_trans *tp, struct sx_list *chain)
{
	struct sx_defer_pending *dp = sx_list_first(chain, struct sx_defer_pending, dp_list);
	const struct sx_defer_ops *ops = dp->dp_ops;
	struct sx_defer_item *di = sx_list_first(&dp->dp_items, struct sx_defer_item,
						 di_list);
	struct sx_list *pos;
	int error;

	ASSERT(sx_list_empty(&tp->t_dfops) && dp->dp_intent);
	error = sx_defer_log_done(tp, dp);
	if (error)
		return error;
	/* a failed step leaves the item's intent in the log: still owed */
	dp->dp_committed = true;
	error = ops->do_finish(tp, di->di_data);
	sx_defer_stat(tp->t_mp, SX_DSTAT_STEPS);
	if (error == -EAGAIN) {
		sx_defer_stat(tp->t_mp, SX_DSTAT_REQUEUES);
		error = 0;
	} else if (error) {
		return error;
	} else {
		sx_list_del(&di->di_list);
		sx_free(di);
		dp->dp_count--;
	}
	/*
	 * The work the step queued is logged first: recovery finishes intents
	 * in log order, and that work comes before what is left of the item.
	 */
	sx_list_del(&dp->dp_list);
	error = sx_defer_log_intents(tp);
	if (!error && dp->dp_count)
		error = sx_defer_log_intent(tp, dp);
	/*
	 * A pending whose last item is done goes only with the step that
	 * logged its done item: if that step fails, its committed intent is
	 * still owed, and the chain must see it to shut down.
	 */
	if (dp->dp_count || error)
		sx_list_add(&dp->dp_list, chain);
	else
		sx_free(dp);
	sx_list_for_each(pos, chain) {
		struct sx_defer_pending *w = sx_list_entry(pos, struct sx_defer_pending, dp_list);

		if (w != dp)
			w->dp_age++;
	}
	sx_defer_splice_front(&tp->t_dfops, chain);
	return error;
}

/* Finish all queued work of *@tpp. */
int sx_defer_finish(struct sx_trans **tpp)
{
	struct sx_mount *mp = (*tpp)->t_mp;
	struct sx_list chain;
	bool committed;
	int error;

	if (sx_list_empty(&(*tpp)->t_dfops))
		return 0;
	sx_list_init(&chain);
	/* the first transaction promises all the work it queued */
	error = sx_defer_log_intents(*tpp);
	sx_defer_splice_tail(&(*tpp)->t_dfops, &chain);
	if (error)
		goto out_cancel;
	while (!sx_list_empty(&chain)) {
		error = sx_defer_roll(tpp, &chain);
		if (error)
			goto out_cancel;
		error = sx_defer_relog(*tpp, &chain);
		if (error)
			goto out_cancel;
		error = sx_defer_step(*tpp, &chain);
		if (error)
			goto out_cancel;
	}
	/* the caller goes on in a transaction of its own, the chain committed */
	error = sx_trans_roll(tpp);
	if (error)
		goto out_shutdown;
	return 0;

out_cancel:
	committed = sx_defer_free_list(&chain);
	if (*tpp)
		committed |= sx_defer_free_list(&(*tpp)->t_dfops);
	if (!committed)
		return error;
out_shutdown:
	sx_force_shutdown(mp, error, "deferred work failed (%d) after its intent was committed",
			  error);
	return error;
}

/* ------------------------------------------------------------ recovery */

/* Check a logged intent of a defer type and count its items. */
static int sx_defer_check_payload(const struct sx_defer_ops *ops, const void *payload,
				  u32 len, u32 *nitemsp)
{
	const struct sx_dlog_intent *li = payload;
	u32 nitems;

	if (len < sizeof(*li))
		return -EFSCORRUPTED;
	nitems = le32_to_cpu(li->li_nitems);
	if (nitems == 0 || nitems > ops->do_max_items ||
	    len != sx_defer_intent_len(ops, nitems) || li->li_pad != 0)
		return -EFSCORRUPTED;
	*nitemsp = nitems;
	return 0;
}

/* Rebuild the items of a logged intent into a new pending. */
static int sx_defer_decode(const struct sx_defer_ops *ops, struct sx_mount *mp,
			   const void *payload, u32 len, struct sx_defer_pending **dpp)
{
	struct sx_defer_pending *dp;
	const u8 *p = (const u8 *)payload + sizeof(struct sx_dlog_intent);
	void *item;
	u32 nitems, i;
	int error;

	error = sx_defer_check_payload(ops, payload, len, &nitems);
	if (error)
		return error;
	dp = sx_defer_pending_new(ops);
	item = sx_zalloc(sx_roundup(ops->do_item_size, 8), SX_NOFS);
	if (!dp || !item) {
		error = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nitems; i++, p += ops->do_log_size) {
		memset(item, 0, ops->do_item_size);
		error = ops->do_decode(mp, p, item);
		if (!error)
			error = sx_defer_pending_add(dp, item);
		if (error)
			goto out;
	}
	*dpp = dp;
	dp = NULL;
out:
	sx_free(item);
	if (dp)
		sx_defer_pending_free(dp);
	return error;
}

static int sx_defer_io_validate(const struct sx_item_ops *iops, struct sx_mount *mp,
				const void *payload, u32 len)
{
	const struct sx_defer_type *dt = iops->io_priv;
	struct sx_defer_pending *dp;
	int error;

	error = sx_defer_decode(dt->dt_ops, mp, payload, len, &dp);
	if (!error)
		sx_defer_pending_free(dp);
	return error;
}

/* Capture the work of an unfinished intent; sx_defer_recover_finish() does it. */
static int sx_defer_io_recover(const struct sx_item_ops *iops, struct sx_mount *mp,
			       const struct sx_recovered_intent *ri)
{
	const struct sx_defer_type *dt = iops->io_priv;
	struct sx_defer_pending *dp;
	int error;

	error = sx_defer_decode(dt->dt_ops, mp, ri->ri_payload, ri->ri_len, &dp);
	if (error)
		return error;
	dp->dp_intent = ri->ri_id;
	dp->dp_committed = true;
	sx_list_add_tail(&dp->dp_list, &mp->m_dcaptured);
	return 0;
}

/*
 * Finish the captured work in log order, all in one chain: the intents
 * waiting behind the first are relogged as the chain goes on, so that a
 * long recovered chain cannot fill the log behind them.
 */
int sx_defer_recover_finish(struct sx_mount *mp)
{
	struct sx_defer_pending *dp;
	struct sx_trans *tp;
	u32 res = 0;
	struct sx_list *pos;
	int error;

	if (sx_list_empty(&mp->m_dcaptured))
		return 0;
	sx_list_for_each(pos, &mp->m_dcaptured) {
		dp = sx_list_entry(pos, struct sx_defer_pending, dp_list);
		res = sx_max(res, sx_defer_chain_bytes(mp, dp->dp_ops));
	}
	error = sx_trans_alloc(mp, res, 0, &tp);
	if (error) {
		sx_defer_recover_cancel(mp);
		return error;
	}
	sx_defer_splice_tail(&mp->m_dcaptured, &tp->t_dfops);
	error = sx_defer_finish(&tp);
	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

/* Drop captured work that will not be finished (a failed mount). */
void sx_defer_recover_cancel(struct sx_mount *mp)
{
	if (mp->m_dcaptured.next)
		sx_defer_free_list(&mp->m_dcaptured);
}

/* ------------------------------------------------------------ log printer */

static void sx_defer_io_print(const struct sx_item_ops *iops, const void *payload, u32 len,
			      sx_print_fn pr, void *arg)
{
	const struct sx_defer_type *dt = iops->io_priv;
	const struct sx_defer_ops *ops = dt->dt_ops;
	const u8 *p = (const u8 *)payload + sizeof(struct sx_dlog_intent);
	u32 nitems, i, j;

	if (sx_defer_check_payload(ops, payload, len, &nitems)) {
		pr(arg, "      %s: malformed payload of %u bytes", ops->do_name, len);
		return;
	}
	for (i = 0; i < nitems; i++, p += ops->do_log_size) {
		if (ops->do_print) {
			ops->do_print(p, pr, arg);
			continue;
		}
		for (j = 0; j < ops->do_log_size; j += 8) {
			u64 w = 0;

			memcpy(&w, p + j, sx_min(8u, ops->do_log_size - j));
			pr(arg, "      %s item %u word %u: 0x%016llx", ops->do_name, i, j / 8,
			   (unsigned long long)le64_to_cpu((__le64)w));
		}
	}
}

/* ------------------------------------------------------------ registration */

int sx_defer_register(const struct sx_defer_ops *ops)
{
	struct sx_defer_type *dt;
	int error;

	if (!ops || !ops->do_name || !ops->do_encode || !ops->do_decode ||
	    !ops->do_finish || ops->do_item_size == 0 || ops->do_log_size == 0 ||
	    ops->do_max_items == 0 || ops->do_max_items > 1024 ||
	    ops->do_intent_type >= SX_LOG_OP_MAX || ops->do_done_type >= SX_LOG_OP_MAX)
		return -EINVAL;
	dt = &sx_defer_types[ops->do_intent_type];
	if (dt->dt_ops == ops)
		return 0;
	if (dt->dt_ops)
		return -EEXIST;
	memset(dt, 0, sizeof(*dt));
	dt->dt_intent.io_type = ops->do_intent_type;
	dt->dt_intent.io_done_type = ops->do_done_type;
	dt->dt_intent.io_name = ops->do_name;
	dt->dt_intent.io_validate = sx_defer_io_validate;
	dt->dt_intent.io_recover = sx_defer_io_recover;
	dt->dt_intent.io_print = sx_defer_io_print;
	dt->dt_intent.io_priv = dt;
	dt->dt_done.io_type = ops->do_done_type;
	dt->dt_done.io_name = NULL;	/* the done type's own name (sx_item_name) */
	dt->dt_done.io_priv = dt;
	error = sx_item_register(&dt->dt_intent);
	if (error)
		return error;
	error = sx_item_register(&dt->dt_done);
	if (error) {
		sx_item_unregister(&dt->dt_intent);
		return error;
	}
	dt->dt_ops = ops;
	sx_defer_update_max_intent_bytes();
	return 0;
}

void sx_defer_unregister(const struct sx_defer_ops *ops)
{
	struct sx_defer_type *dt;

	if (!ops || ops->do_intent_type >= SX_LOG_OP_MAX)
		return;
	dt = &sx_defer_types[ops->do_intent_type];
	if (dt->dt_ops != ops)
		return;
	sx_item_unregister(&dt->dt_done);
	sx_item_unregister(&dt->dt_intent);
	dt->dt_ops = NULL;
	sx_defer_update_max_intent_bytes();
}

void sx_defer_get_stats(struct sx_mount *mp, struct sx_defer_stats *st)
{
	st->ds_intents = (u64)sx_atomic64_read(&mp->m_dstat[SX_DSTAT_INTENTS]);
	st->ds_steps = (u64)sx_atomic64_read(&mp->m_dstat[SX_DSTAT_STEPS]);
	st->ds_requeues = (u64)sx_atomic64_read(&mp->m_dstat[SX_DSTAT_REQUEUES]);
	st->ds_relogs = (u64)sx_atomic64_read(&mp->m_dstat[SX_DSTAT_RELOGS]);
}
