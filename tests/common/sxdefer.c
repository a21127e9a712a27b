// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The test-only deferred type; see sxdefer.h.
 */
#include "sxdefer.h"

struct sxt_dtdf {
	__le64	lt_blkno;
	__le64	lt_child;
	__le32	lt_steps;
	__le32	lt_pad;
};

struct sxt_tdf_trace sxt_tdf_trace[256];
u32 sxt_tdf_ntrace;
u32 sxt_tdf_fail_countdown;
u32 sxt_tdf_cancelled;

static void tdf_encode(const void *item, void *logged)
{
	const struct sxt_tdf_item *it = item;
	struct sxt_dtdf *lt = logged;

	lt->lt_blkno = cpu_to_le64(it->ti_blkno);
	lt->lt_child = cpu_to_le64(it->ti_child);
	lt->lt_steps = cpu_to_le32(it->ti_steps);
	lt->lt_pad = 0;
}

static int tdf_decode(struct sx_mount *mp, const void *logged, void *item)
{
	const struct sxt_dtdf *lt = logged;
	struct sxt_tdf_item *it = item;

	it->ti_blkno = le64_to_cpu(lt->lt_blkno);
	it->ti_child = le64_to_cpu(lt->lt_child);
	it->ti_steps = le32_to_cpu(lt->lt_steps);
	if (it->ti_steps == 0 || it->ti_blkno < mp->m_sb.sb_datastart ||
	    it->ti_blkno >= mp->m_sb.sb_dblocks || lt->lt_pad)
		return -EFSCORRUPTED;
	return 0;
}

static int tdf_finish(struct sx_trans *tp, void *item)
{
	struct sxt_tdf_item *it = item;
	struct sx_buf *bp;
	u64 gen;
	int error;

	if (sxt_tdf_ntrace < ARRAY_SIZE(sxt_tdf_trace)) {
		sxt_tdf_trace[sxt_tdf_ntrace].tt_blkno = it->ti_blkno;
		sxt_tdf_trace[sxt_tdf_ntrace].tt_steps = it->ti_steps;
		sxt_tdf_ntrace++;
	}
	if (sxt_tdf_fail_countdown && --sxt_tdf_fail_countdown == 0)
		return -EIO;
	error = sx_trans_read_buf(tp, it->ti_blkno, &sxt_tblock_ops, 0, &bp);
	if (error)
		return error;
	gen = le64_to_cpu(((struct sxt_dtblock *)bp->b_data)->tb_gen);
	error = sxt_tblock_update(tp, it->ti_blkno, gen + 1);
	if (error)
		return error;
	if (it->ti_child) {
		error = sxt_tdf_add(tp, it->ti_child, 1, 0);
		if (error)
			return error;
		it->ti_child = 0;
	}
	return --it->ti_steps ? -EAGAIN : 0;
}

static void tdf_cancel(void *item)
{
	sxt_tdf_cancelled++;
}

static u32 tdf_step_res(const struct sx_mount *mp)
{
	return sx_trans_buf_bytes(mp);
}

const struct sx_defer_ops sxt_tdf_ops = {
	.do_name = "TEST_DEFER",
	.do_intent_type = SX_LOG_OP_TEST_DEFER,
	.do_done_type = SX_LOG_OP_TEST_DEFER_DONE,
	.do_item_size = sizeof(struct sxt_tdf_item),
	.do_log_size = sizeof(struct sxt_dtdf),
	.do_max_items = 4,
	.do_encode = tdf_encode,
	.do_decode = tdf_decode,
	.do_finish = tdf_finish,
	.do_cancel = tdf_cancel,
	.do_step_res = tdf_step_res,
};

void sxt_tdf_register(void)
{
	VERIFY(sx_defer_register(&sxt_tdf_ops) == 0);
}

int sxt_tdf_add(struct sx_trans *tp, u64 blkno, u32 steps, u64 child)
{
	struct sxt_tdf_item it = {
		.ti_blkno = blkno, .ti_child = child, .ti_steps = steps,
	};

	return sx_defer_add(tp, &sxt_tdf_ops, &it);
}

void sxt_tdf_reset(void)
{
	sxt_tdf_ntrace = 0;
	sxt_tdf_fail_countdown = 0;
	sxt_tdf_cancelled = 0;
}
