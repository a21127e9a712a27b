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
#include "item.h"

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
	/* optional: describe one logged item for the log printer */
	void		(*do_print)(const void *logged, sx_print_fn pr, void *arg);
};

/*
 * The store's deferred types, one file each: extent map changes (BUI,
 * item_bmap.c), extent frees (EFI, item_efi.c), refcount changes (CUI,
 * item_refc.c) and the swap core's swaps (SXI, swap_host.c, whose
 * callbacks are the core's sx_swapext_item_*()).  sx_init() registers them.
 */
extern const struct sx_defer_ops sx_bmap_defer_ops;
extern const struct sx_defer_ops sx_efi_defer_ops;
extern const struct sx_defer_ops sx_refcount_defer_ops;
extern const struct sx_defer_ops sx_sxi_defer_ops;

/** sx_defer_register() - make a type known, with its log items for recovery */
int sx_defer_register(const struct sx_defer_ops *ops);
void sx_defer_unregister(const struct sx_defer_ops *ops);

/** sx_defer_add() - queue a copy of @item of type @ops on @tp */
int sx_defer_add(struct sx_trans *tp, const struct sx_defer_ops *ops, const void *item);

/**
 * sx_defer_finish() - finish every queued item, rolling *@tpp as needed
 *
 * On return *@tpp is a fresh transaction (nothing of the chain left in it)
 * for the caller to go on with and commit.  On error the work not yet done
 * is cancelled and *@tpp is the caller's to cancel (it may be NULL if a roll
 * failed; sx_trans_cancel(NULL) does nothing).  An error after the chain's
 * first intent was committed shuts the mount down: the log then holds an
 * unfinished intent that only recovery may finish.
 */
int sx_defer_finish(struct sx_trans **tpp);

/** sx_defer_cancel() - drop queued work of a transaction being cancelled */
void sx_defer_cancel(struct sx_trans *tp);

/** sx_defer_pending() - true if @tp has queued work */
bool sx_defer_pending(const struct sx_trans *tp);

/*
 * For trans.c: sx_trans_roll() of a transaction with queued work logs the
 * intents of that work before the commit (the change that queued the work
 * and the promise to do it are one atomic update) and moves the work on.
 */
int sx_defer_log_intents(struct sx_trans *tp);
/* move @tp's work to @list / @list's committed work into @tp / throw it away */
void sx_defer_detach(struct sx_trans *tp, struct sx_list *list);
void sx_defer_attach(struct sx_trans *tp, struct sx_list *list);
void sx_defer_drop(struct sx_mount *mp, struct sx_list *list);
/* the transaction that logged the intents of @list's work reached the log */
void sx_defer_committed(struct sx_list *list);

/**
 * sx_defer_step_bytes() - log space a transaction of a chain needs for one
 * finish step of @ops: the step, its done item, an intent for what is left
 * and intents for the work the step queues
 */
u32 sx_defer_step_bytes(const struct sx_mount *mp, const struct sx_defer_ops *ops);

/**
 * sx_defer_largest_res() - the largest reservation a transaction of a chain
 * of any registered type asks for (recovery's chain included)
 */
u32 sx_defer_largest_res(const struct sx_mount *mp);

/*
 * Recovery: each unfinished intent of a registered type is captured (its
 * items rebuilt, no transaction yet); sx_defer_recover_finish() then runs
 * the captured chains in log order, after every intent has been seen, so
 * that no chain's new work lands before an older intent's.
 */
int sx_defer_recover_finish(struct sx_mount *mp);
void sx_defer_recover_cancel(struct sx_mount *mp);

/** sx_defer_stats - chain counters, for tests and figures */
struct sx_defer_stats {
	u64	ds_intents;		/* intents logged */
	u64	ds_steps;		/* finish steps */
	u64	ds_requeues;		/* steps that returned -EAGAIN */
	u64	ds_relogs;		/* intents relogged to free the log tail */
};
void sx_defer_get_stats(struct sx_mount *mp, struct sx_defer_stats *st);

#endif /* SX_DEFER_H */
