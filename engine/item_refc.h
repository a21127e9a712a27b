/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CUI/CUD: deferred refcount changes (item_refc.c; its deferred-op table
 * is in defer.h).
 */
#ifndef SX_ITEM_REFC_H
#define SX_ITEM_REFC_H

#include "util.h"

struct sx_trans;

/**
 * sx_refcount_increase_later() / sx_refcount_decrease_later() - queue the
 * change as CUI deferred work on @tp (item_refc.c); finished one step per
 * transaction by sx_defer_finish(), or by recovery after a crash
 */
int sx_refcount_increase_later(struct sx_trans *tp, u64 bno, u64 len);
int sx_refcount_decrease_later(struct sx_trans *tp, u64 bno, u64 len);

#endif /* SX_ITEM_REFC_H */
