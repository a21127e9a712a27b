// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * EFI/EFD: deferred extent freeing.
 *
 * An item is one extent of any length.  A step frees at most
 * sx_alloc_max_extent() blocks from its front (one bitmap block's worth, so
 * that a step's log space is bounded) and returns -EAGAIN until the whole
 * extent is free: an intent is relogged for what is left at every step, so
 * recovery never frees a block twice.
 */
#include "util.h"
#include "item_efi.h"
#include "defer.h"
#include "alloc.h"
#include "trans.h"
#include "mount.h"

struct sx_efi_item {
	u64	ei_bno;
	u64	ei_len;
};

/* Items one EFI lists at most. */
#define SX_EFI_MAX_ITEMS	16
/* The longest extent one logged item describes. */
#define SX_EFI_MAX_LEN		0xffffffffu
/*
 * Images still in the log that one step cancels at most (sx_free_data()):
 * enough for the blocks small atomic writes carry; more stay withheld
 * until a checkpoint, as they would without the cancel.
 */
#define SX_EFI_CANCELS		16

static void sx_efi_encode(const void *item, void *logged)
{
	const struct sx_efi_item *ei = item;
	struct sx_dlog_efi *le = logged;

	le->ef_startblock = cpu_to_le64(ei->ei_bno);
	le->ef_blockcount = cpu_to_le32((u32)ei->ei_len);
	le->ef_pad = 0;
}

/* True if [@bno, +@len) is a nonempty range of the data area. */
static bool sx_efi_range_ok(const struct sx_mount *mp, u64 bno, u64 len)
{
	return len != 0 && bno >= mp->m_sb.sb_datastart && bno < mp->m_sb.sb_dblocks &&
	       len <= mp->m_sb.sb_dblocks - bno;
}

static int sx_efi_decode(struct sx_mount *mp, const void *logged, void *item)
{
	const struct sx_dlog_efi *le = logged;
	struct sx_efi_item *ei = item;

	ei->ei_bno = le64_to_cpu(le->ef_startblock);
	ei->ei_len = le32_to_cpu(le->ef_blockcount);
	if (SX_IS_CORRUPT(mp, le->ef_pad != 0 ||
			  !sx_efi_range_ok(mp, ei->ei_bno, ei->ei_len)))
		return -EFSCORRUPTED;
	return 0;
}

/* Free the front of the extent; -EAGAIN while some of it is left. */
static int sx_efi_finish(struct sx_trans *tp, void *item)
{
	struct sx_efi_item *ei = item;
	u64 n = sx_min(ei->ei_len, (u64)sx_alloc_max_extent(tp->t_mp));
	int error;

	error = sx_free_data(tp, ei->ei_bno, n, SX_EFI_CANCELS);
	if (error)
		return error;
	ei->ei_bno += n;
	ei->ei_len -= n;
	return ei->ei_len ? -EAGAIN : 0;
}

static u32 sx_efi_step_res(const struct sx_mount *mp)
{
	return sx_alloc_res_bytes(mp) + SX_EFI_CANCELS * sx_trans_stale_bytes();
}

static void sx_efi_print(const void *logged, sx_print_fn pr, void *arg)
{
	const struct sx_dlog_efi *le = logged;

	pr(arg, "      free: start %llu len %u",
	   (unsigned long long)le64_to_cpu(le->ef_startblock),
	   le32_to_cpu(le->ef_blockcount));
}

const struct sx_defer_ops sx_efi_defer_ops = {
	.do_name = "EFI",
	.do_intent_type = SX_LOG_OP_EFI,
	.do_done_type = SX_LOG_OP_EFD,
	.do_item_size = sizeof(struct sx_efi_item),
	.do_log_size = sizeof(struct sx_dlog_efi),
	.do_max_items = SX_EFI_MAX_ITEMS,
	.do_encode = sx_efi_encode,
	.do_decode = sx_efi_decode,
	.do_finish = sx_efi_finish,
	.do_step_res = sx_efi_step_res,
	.do_print = sx_efi_print,
};

int sx_efi_free_later(struct sx_trans *tp, u64 bno, u64 len)
{
	struct sx_efi_item ei;
	int error;

	if (!sx_efi_range_ok(tp->t_mp, bno, len))
		return -EINVAL;
	while (len) {
		ei.ei_bno = bno;
		ei.ei_len = sx_min(len, (u64)SX_EFI_MAX_LEN);
		error = sx_defer_add(tp, &sx_efi_defer_ops, &ei);
		if (error)
			return error;
		bno += ei.ei_len;
		len -= ei.ei_len;
	}
	return 0;
}

/* The EFI a transaction logs when it rolls or finishes its chain. */
u32 sx_efi_res_bytes(const struct sx_mount *mp)
{
	return sx_trans_op_bytes(sizeof(struct sx_dlog_intent) +
				 SX_EFI_MAX_ITEMS * sizeof(struct sx_dlog_efi));
}
