// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The log item registry: one ops table per intent or done type.
 */
#include "util.h"
#include "item.h"

/*
 * Registration happens at module or library start and in tests, never
 * concurrently with recovery, so a plain table suffices.
 */
static const struct sx_item_ops *sx_items[SX_LOG_OP_MAX];

/* Register @ops for its type; the done type is implied by the intent. */
int sx_item_register(const struct sx_item_ops *ops)
{
	if (!ops || ops->io_type == 0 || ops->io_type >= SX_LOG_OP_MAX ||
	    ops->io_type == SX_LOG_OP_BUF || ops->io_type == SX_LOG_OP_TRANS_END)
		return -EINVAL;
	if (ops->io_done_type >= SX_LOG_OP_MAX || ops->io_done_type == ops->io_type)
		return -EINVAL;
	if (ops->io_done_type && !ops->io_recover)
		return -EINVAL;
	if (sx_items[ops->io_type])
		return -EEXIST;
	sx_items[ops->io_type] = ops;
	return 0;
}

/* Forget @ops if it is the registered table for its type. */
void sx_item_unregister(const struct sx_item_ops *ops)
{
	if (ops && ops->io_type < SX_LOG_OP_MAX && sx_items[ops->io_type] == ops)
		sx_items[ops->io_type] = NULL;
}

/* Find the ops of @type. */
const struct sx_item_ops *sx_item_lookup(u16 type)
{
	return type < SX_LOG_OP_MAX ? sx_items[type] : NULL;
}

/* An intent type is one registered with a done type. */
bool sx_item_is_intent(u16 type)
{
	const struct sx_item_ops *ops = sx_item_lookup(type);

	return ops && ops->io_done_type != 0;
}

/* A done type is the done type of some registered intent. */
bool sx_item_is_done(u16 type)
{
	u16 i;

	if (type == 0)
		return false;
	for (i = 0; i < SX_LOG_OP_MAX; i++)
		if (sx_items[i] && sx_items[i]->io_done_type == type)
			return true;
	return false;
}

/* A name for any op type, registered or not. */
const char *sx_item_name(u16 type)
{
	static const char *const names[] = {
		[SX_LOG_OP_BUF] = "BUF",
		[SX_LOG_OP_TRANS_END] = "TRANS_END",
		[SX_LOG_OP_MANIFEST] = "MANIFEST",
		[SX_LOG_OP_BUI] = "BUI", [SX_LOG_OP_BUD] = "BUD",
		[SX_LOG_OP_EFI] = "EFI", [SX_LOG_OP_EFD] = "EFD",
		[SX_LOG_OP_CUI] = "CUI", [SX_LOG_OP_CUD] = "CUD",
		[SX_LOG_OP_SXI] = "SXI", [SX_LOG_OP_SXD] = "SXD",
		[SX_LOG_OP_TEST_DEFER] = "TEST_DEFER",
		[SX_LOG_OP_TEST_DEFER_DONE] = "TEST_DEFER_DONE",
		[SX_LOG_OP_TEST_INTENT] = "TEST_INTENT",
		[SX_LOG_OP_TEST_DONE] = "TEST_DONE",
	};
	const struct sx_item_ops *ops = sx_item_lookup(type);

	if (ops && ops->io_name)
		return ops->io_name;
	if (type < ARRAY_SIZE(names) && names[type])
		return names[type];
	return "UNKNOWN";
}
