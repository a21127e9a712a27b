/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Crash points as forked children of one run.
 *
 * A crash test that cuts the power at write w normally replays the whole
 * workload up to w for every w, so a long workload costs its length times
 * the number of cuts.  Here the workload runs once: before each chosen
 * device write the crash device's hook forks, and the child arms a cut at
 * that very write and goes on; it is then exactly the run cut at w, and
 * checks its own recovery while the parent runs on (and up to a given
 * number of children check in parallel).  A child reports by exit status.
 */
#ifndef SXFORK_H
#define SXFORK_H

#include "sxtest.h"
#include <sys/types.h>

struct sxf_points {
	struct sx_crashdev *fp_cd;
	u64		fp_first;	/* first write to cut at (1-based) */
	u64		fp_step;	/* then every fp_step-th write */
	u64		fp_last;	/* last write to cut at, 0: no limit */
	const enum sx_crash_mode *fp_modes;	/* modes cut at each point, in turn */
	u32		fp_nmodes;	/* of fp_modes */
	u32		fp_per_point;	/* children per point (modes taken in turn) */
	u32		fp_jobs;	/* children alive at once */

	/* the run's state in a child */
	bool		fp_child;
	u64		fp_write;	/* the write this child is cut at */
	enum sx_crash_mode fp_mode;

	/* results, in the parent */
	u64		fp_next;
	u32		fp_running;
	u64		fp_points;	/* children started */
	u64		fp_passed;
	u64		fp_failed;
	u64		fp_turn;
};

/* sxf_fork() - fork() that keeps liburcu's call_rcu threads working on both sides */
pid_t sxf_fork(void);
/* sxf_jobs() - children to run at once: SX_CRASH_JOBS, else the CPUs online (1..8) */
u32 sxf_jobs(void);
/* sxf_arm() - install the hook on @p->fp_cd (fields up to fp_jobs set by the caller) */
void sxf_arm(struct sxf_points *p);
/*
 * sxf_child_done() - in a child: exit with @ok's status (never returns).
 * In the parent: nothing (returns).
 */
void sxf_child_done(struct sxf_points *p, bool ok);
/* sxf_wait_all() - in the parent: collect every child (the device may be gone) */
void sxf_wait_all(struct sxf_points *p);
/* sxf_mode_name() - "keep", "drop", "tear" or "random" */
const char *sxf_mode_name(enum sx_crash_mode mode);

#endif /* SXFORK_H */
