/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Log item registry.
 *
 * Each intent or done item type registers an ops table.  Recovery validates
 * every unfinished intent with io_validate and finishes it with io_recover;
 * the log printer decodes items with io_print.  Buffer changes are not
 * registered items: the log handles them itself.
 */
#ifndef SX_ITEM_H
#define SX_ITEM_H

#include "util.h"

typedef void (*sx_print_fn)(void *arg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* An unfinished intent found by recovery. */
struct sx_recovered_intent {
	u16		ri_type;
	u32		ri_len;
	u64		ri_id;
	u64		ri_lsn;		/* record that logged it */
	const void	*ri_payload;	/* begins with struct sx_dlog_intent */
};

struct sx_item_ops {
	u16		io_type;	/* SX_LOG_OP_* */
	u16		io_done_type;	/* for an intent: its done type; else 0 */
	const char	*io_name;
	/* intents: check a logged payload before recovery trusts it */
	int		(*io_validate)(const struct sx_item_ops *ops, struct sx_mount *mp,
				       const void *payload, u32 len);
	/*
	 * intents: finish the work after a crash.  Must log the done item
	 * (with the intent's id) in the transaction that does the work.
	 */
	int		(*io_recover)(const struct sx_item_ops *ops, struct sx_mount *mp,
				      const struct sx_recovered_intent *ri);
	/* decode a payload for the log printer; may be NULL */
	void		(*io_print)(const struct sx_item_ops *ops, const void *payload,
				    u32 len, sx_print_fn pr, void *arg);
	/* the registrant's own data (the deferred-op table of a defer type) */
	const void	*io_priv;
};

/**
 * sx_item_register() - make an item type known
 *
 * Return: 0, -EINVAL for a bad type, -EEXIST if it is taken.
 */
int sx_item_register(const struct sx_item_ops *ops);
/** sx_item_unregister() - forget a type registered with sx_item_register() */
void sx_item_unregister(const struct sx_item_ops *ops);
/** sx_item_lookup() - the ops of @type, or NULL */
const struct sx_item_ops *sx_item_lookup(u16 type);
/** sx_item_is_intent() - true if @type is a registered intent type */
bool sx_item_is_intent(u16 type);
/** sx_item_is_done() - true if @type is the done type of a registered intent */
bool sx_item_is_done(u16 type);
/** sx_item_name() - a printable name for any op type */
const char *sx_item_name(u16 type);

#endif /* SX_ITEM_H */
