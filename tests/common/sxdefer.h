/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A test-only deferred type (TEST_DEFER) for the defer engine's tests: an
 * item adds one to the generation of a test block per step until its steps
 * are used up, and may queue a one-step child item on its first step.  A
 * test block's generation therefore counts the steps applied to it, so a
 * step done twice or lost after a crash shows as a wrong count.
 */
#ifndef SXDEFER_H
#define SXDEFER_H

#include "sxtest.h"
#include "defer.h"

struct sxt_tdf_item {
	u64	ti_blkno;
	u64	ti_child;	/* test block of a child queued at the first step; 0 none */
	u32	ti_steps;	/* steps left */
	u32	ti_pad;
};

extern const struct sx_defer_ops sxt_tdf_ops;

/* Each finish step seen, in order: the block and the steps it had left. */
struct sxt_tdf_trace {
	u64	tt_blkno;
	u32	tt_steps;
};
extern struct sxt_tdf_trace sxt_tdf_trace[256];
extern u32 sxt_tdf_ntrace;
/* If nonzero, the step that brings it to zero fails with -EIO. */
extern u32 sxt_tdf_fail_countdown;
/* Items cancelled (do_cancel calls). */
extern u32 sxt_tdf_cancelled;

/* sxt_tdf_register() - register the type (idempotent) */
void sxt_tdf_register(void);
/* sxt_tdf_add() - queue an item on @tp */
int sxt_tdf_add(struct sx_trans *tp, u64 blkno, u32 steps, u64 child);
/* sxt_tdf_reset() - clear the trace and the failure countdown */
void sxt_tdf_reset(void);

#endif /* SXDEFER_H */
