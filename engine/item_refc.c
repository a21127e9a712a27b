// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * CUI/CUD: deferred refcount changes.
 *
 * An item asks for one range of blocks to gain or lose an owner.  Each
 * finish does one step of sx_refcount_adjust() (one piece of the range,
 * at most three B+tree changes) and, if the range is not done, leaves the
 * rest in the item and returns -EAGAIN; the defer engine then logs a done
 * item for what was logged and a new intent for the rest.  Recovery decodes
 * the logged item and finishes it the same way.
 */
#include "util.h"
#include "refcount.h"
#include "defer.h"
#include "trans.h"
#include "mount.h"
#include "item_refc.h"

/* The in-memory form of one refcount change. */
struct sx_refc_item {
	u64	ci_bno;
	u64	ci_len;
	u32	ci_op;		/* SX_CUI_* */
	u32	ci_pad;
};

/* Items one CUI lists at most. */
#define SX_CUI_MAX_ITEMS	16

/* Write the log form of a refcount change. */
static void sx_cui_encode(const void *item, void *logged)
{
	const struct sx_refc_item *ci = item;
	struct sx_dlog_cui *lc = logged;

	lc->cu_startblock = cpu_to_le64(ci->ci_bno);
	lc->cu_blockcount = cpu_to_le32((u32)ci->ci_len);
	lc->cu_op = cpu_to_le32(ci->ci_op);
}

/* Check and decode a logged refcount change (recovery trusts nothing else). */
static int sx_cui_decode(struct sx_mount *mp, const void *logged, void *item)
{
	const struct sx_dlog_cui *lc = logged;
	struct sx_refc_item *ci = item;
	u64 bno = le64_to_cpu(lc->cu_startblock);
	u32 len = le32_to_cpu(lc->cu_blockcount), op = le32_to_cpu(lc->cu_op);

	if (SX_IS_CORRUPT(mp, op != SX_CUI_INCREASE && op != SX_CUI_DECREASE) ||
	    SX_IS_CORRUPT(mp, len == 0 || len > SX_BMAP_MAXLEN) ||
	    SX_IS_CORRUPT(mp, bno < mp->m_sb.sb_datastart) ||
	    SX_IS_CORRUPT(mp, bno >= mp->m_sb.sb_dblocks || len > mp->m_sb.sb_dblocks - bno))
		return -EFSCORRUPTED;
	memset(ci, 0, sizeof(*ci));
	ci->ci_bno = bno;
	ci->ci_len = len;
	ci->ci_op = op;
	return 0;
}

/* Do one step of the change; -EAGAIN with the rest left in the item. */
static int sx_cui_finish(struct sx_trans *tp, void *item)
{
	struct sx_refc_item *ci = item;
	u64 done;
	int error;

	error = sx_refcount_adjust(tp, ci->ci_bno, ci->ci_len, ci->ci_op, 1, &done);
	if (error)
		return error;
	ci->ci_bno += done;
	ci->ci_len -= done;
	return ci->ci_len ? -EAGAIN : 0;
}

/* Nothing to release: the item holds no references. */
static void sx_cui_cancel(void *item)
{
}

/* Log bytes of one finish step. */
static u32 sx_cui_step_res(const struct sx_mount *mp)
{
	return sx_refcount_res_bytes(mp);
}

const struct sx_defer_ops sx_refcount_defer_ops = {
	.do_name = "CUI",
	.do_intent_type = SX_LOG_OP_CUI,
	.do_done_type = SX_LOG_OP_CUD,
	.do_item_size = sizeof(struct sx_refc_item),
	.do_log_size = sizeof(struct sx_dlog_cui),
	.do_max_items = SX_CUI_MAX_ITEMS,
	.do_encode = sx_cui_encode,
	.do_decode = sx_cui_decode,
	.do_finish = sx_cui_finish,
	.do_cancel = sx_cui_cancel,
	.do_step_res = sx_cui_step_res,
};

/* Queue a change of [@bno, +@len) in pieces a logged item can describe. */
static int sx_refcount_later(struct sx_trans *tp, u64 bno, u64 len, u32 op)
{
	struct sx_refc_item ci;
	int error;

	if (len == 0 || bno + len < bno)
		return -EINVAL;
	memset(&ci, 0, sizeof(ci));
	ci.ci_op = op;
	while (len) {
		ci.ci_bno = bno;
		ci.ci_len = sx_min(len, (u64)SX_BMAP_MAXLEN);
		error = sx_defer_add(tp, &sx_refcount_defer_ops, &ci);
		if (error)
			return error;
		bno += ci.ci_len;
		len -= ci.ci_len;
	}
	return 0;
}

/* Queue an increase of [@bno, +@len) on @tp. */
int sx_refcount_increase_later(struct sx_trans *tp, u64 bno, u64 len)
{
	return sx_refcount_later(tp, bno, len, SX_CUI_INCREASE);
}

/* Queue a decrease of [@bno, +@len) on @tp. */
int sx_refcount_decrease_later(struct sx_trans *tp, u64 bno, u64 len)
{
	return sx_refcount_later(tp, bno, len, SX_CUI_DECREASE);
}
