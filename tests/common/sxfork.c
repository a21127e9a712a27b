// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash points as forked children of one run (see sxfork.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include <urcu/urcu-memb.h>
#include "sxfork.h"

pid_t sxf_fork(void)
{
	pid_t pid;

	/*
	 * The engine frees some objects through call_rcu; the threads that
	 * run those callbacks do not survive fork(), and a child that waits
	 * for them (rcu_barrier at unmount) would hang.  liburcu re-creates
	 * them in the child when asked to around the fork.
	 */
	fflush(stdout);
	fflush(stderr);
	urcu_memb_call_rcu_before_fork();
	pid = fork();
	if (pid == 0)
		urcu_memb_call_rcu_after_fork_child();
	else
		urcu_memb_call_rcu_after_fork_parent();
	return pid;
}

u32 sxf_jobs(void)
{
	const char *e = getenv("SX_CRASH_JOBS");
	long n = e && *e ? strtol(e, NULL, 0) : sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 8 ? 8 : (u32)n;
}

const char *sxf_mode_name(enum sx_crash_mode mode)
{
	static const char *const names[] = { "keep", "drop", "tear", "random", "newest" };

	return (unsigned int)mode < ARRAY_SIZE(names) ? names[mode] : "?";
}

/* Collect one child; @block: wait for it. */
static bool sxf_reap(struct sxf_points *p, bool block)
{
	int status;
	pid_t pid = waitpid(-1, &status, block ? 0 : WNOHANG);

	if (pid <= 0)
		return false;
	p->fp_running--;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		p->fp_passed++;
	} else {
		p->fp_failed++;
		if (!WIFEXITED(status))
			fprintf(stderr, "FAIL: a crash-point child died (status %#x)\n", status);
	}
	return true;
}

static void sxf_hook(void *arg, u64 n)
{
	struct sxf_points *p = arg;
	u32 i;

	if (p->fp_child || n != p->fp_next)
		return;
	if (p->fp_last && n > p->fp_last)
		return;
	p->fp_next += p->fp_step;
	for (i = 0; i < p->fp_per_point; i++) {
		enum sx_crash_mode mode = p->fp_modes[p->fp_turn++ % p->fp_nmodes];
		pid_t pid;

		while (p->fp_running >= p->fp_jobs)
			sxf_reap(p, true);
		pid = sxf_fork();
		if (pid < 0) {
			perror("fork");
			p->fp_failed++;
			continue;
		}
		if (pid == 0) {
			/* the child: this write is the one the power dies in */
			p->fp_child = true;
			p->fp_write = n;
			p->fp_mode = mode;
			sx_crashdev_set_write_hook(p->fp_cd, NULL, NULL);
			sx_crashdev_cut_at_write(p->fp_cd, n, mode);
			return;
		}
		p->fp_running++;
		p->fp_points++;
	}
	while (sxf_reap(p, false))
		;
}

void sxf_arm(struct sxf_points *p)
{
	p->fp_child = false;
	p->fp_next = p->fp_first ? p->fp_first : 1;
	if (!p->fp_step)
		p->fp_step = 1;
	if (!p->fp_per_point)
		p->fp_per_point = 1;
	if (!p->fp_jobs)
		p->fp_jobs = 1;
	sx_crashdev_set_write_hook(p->fp_cd, sxf_hook, p);
}

void sxf_child_done(struct sxf_points *p, bool ok)
{
	if (!p->fp_child)
		return;
	fflush(stderr);
	_exit(ok ? 0 : 1);
}

void sxf_wait_all(struct sxf_points *p)
{
	if (p->fp_child)
		return;
	while (p->fp_running)
		sxf_reap(p, true);
}
