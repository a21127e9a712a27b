/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Deferred operations, modelled on xfs_defer.
 *
 * A long operation is a chain of transactions.  Work queued with
 * sx_defer_add() is finished by sx_defer_finish() before the final commit:
 * for each pending type, an intent item listing the work is logged in the
 * current transaction, the transaction rolls, and each step of the work is
 * done in a transaction that also logs a done item for it.  If the system
 * crashes in between, recovery finds the intent without its done item and
 * calls the type's recover to finish the work.  A finish step may return
 * -EAGAIN: the item is requeued behind the work it queued itself.  Intents
 * still open after a roll are relogged (a new intent for what is left, a
 * done for the old one), so that a long chain never pins the log tail.
 */
#ifndef SX_DEFER_H
#define SX_DEFER_H

#include "util.h"

struct sx_trans;
struct sx_recovered_intent;

struct sx_defer_ops {
	const char	*do_name;
	u16		do_intent_type;		/* SX_LOG_OP_* */
	u16		do_done_type;
	u32		do_item_size;		/* in-memory work item */
	u32		do_log_size;		/* one item in the intent payload */
	u32		do_max_items;		/* per intent */
	/* write one item's log form */
	void		(*do_encode)(const void *item, void *logged);
	/* rebuild an in-memory item from its log form; -EFSCORRUPTED if bad */
	int		(*do_decode)(struct sx_mount *mp, const void *logged, void *item);
	/* do (part of) an item in @tp; -EAGAIN: requeue it after new work */
	int		(*do_finish)(struct sx_trans *tp, void *item);
	/* throw an item away (error path) */
	void		(*do_cancel)(void *item);
	/* log bytes one finish step needs beyond the done item */
	u32		(*do_step_res)(const struct sx_mount *mp);
};

/** sx_defer_register() - make a type known, with its log items for recovery */
int sx_defer_register(const struct sx_defer_ops *ops);
void sx_defer_unregister(const struct sx_defer_ops *ops);

/** sx_defer_add() - queue a copy of @item of type @ops on @tp */
int sx_defer_add(struct sx_trans *tp, const struct sx_defer_ops *ops, const void *item);

/**
 * sx_defer_finish() - finish every queued item, rolling *@tpp as needed;
 * on error the work not yet done is cancelled and *@tpp is still valid to
 * cancel (its intents are left for recovery only if logged)
 */
int sx_defer_finish(struct sx_trans **tpp);

/** sx_defer_cancel() - drop queued work of a transaction being cancelled */
void sx_defer_cancel(struct sx_trans *tp);

/** sx_defer_pending() - true if @tp has queued work */
bool sx_defer_pending(const struct sx_trans *tp);

#endif /* SX_DEFER_H */
