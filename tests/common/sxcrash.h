/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The crash-test harness: what every crash test does around its own
 * workload and model, so that each test says only what it runs and what
 * a recovered image may hold.
 *
 * A crash test counts checks: a check function fails with SXC_CHECK(),
 * which says why, and its caller counts the result with sxc_tally() (one
 * check, whatever the number of SXC_CHECKs behind it).  It reads its level
 * from SX_CRASH_LEVEL with sxc_start(), cuts the power at chosen writes of
 * its run in each crash mode with sxc_cut_writes() (or of a recovery, with
 * sxc_cut_recovery()), and after each cut runs sxc_recover_verify():
 * recovery, the test's own look at what it shows, the checker, and a second
 * recovery that must change nothing.  sxc_end() prints the counts.
 *
 * The checker helpers serve the unit tests too: sxc_check_clean() for an
 * image that must have no problem, sxc_checker() to look at what it says.
 */
#ifndef SXCRASH_H
#define SXCRASH_H

#include "sxtest.h"
#include "sxtext.h"
#include "sxfork.h"

enum sxc_level {
	SXC_QUICK,		/* SX_CRASH_LEVEL=quick: samples, for iterating */
	SXC_NORMAL,		/* unset or normal: what make check runs */
	SXC_LONG,		/* long: more seeds, modes and recovery cuts */
};

/* The checks of a test so far: its "N passed, N failed". */
struct sxc_count {
	u64	passed;
	u64	failed;
};

extern struct sxc_count sxc_count;

void sxc_fail_at(const char *func, int line, const char *cond, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * SXC_CHECK() - in a check function: unless @cond holds, say so with the
 * message and return -1.  It counts nothing: the caller tallies the check.
 */
#define SXC_CHECK(cond, ...) do {						\
	if (!(cond)) {								\
		sxc_fail_at(__func__, __LINE__, #cond, __VA_ARGS__);		\
		return -1;							\
	}									\
} while (0)

/*
 * sxc_start() - the start of a crash test: enter the engine's thread state,
 * silence its messages below ERR, read SX_CRASH_LEVEL.  Returns the level.
 */
enum sxc_level sxc_start(void);
/* sxc_level() - the level sxc_start() read */
enum sxc_level sxc_level(void);
/* sxc_pick() - @quick, @normal or @slow, as the level says */
u64 sxc_pick(u64 quick, u64 normal, u64 slow);
/* sxc_tally() - count one check: passed if @ret >= 0, else failed.  Returns @ret. */
int sxc_tally(int ret);
/* sxc_fail() - count one failed check and print FAIL with the message */
void sxc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* sxc_end() - print "N passed, N failed"; the exit status of the test */
int sxc_end(void);

/*
 * sxc_checker() - run the checker with @flags (SX_CHECK_*) on unmounted
 * @bd, its report kept in @r (reset first; NULL: not kept) and printed with
 * SX_TEST_VERBOSE.  Returns the number of problems, or the error that kept
 * the checker from running.
 */
s64 sxc_checker(struct sx_bdev *bd, u32 flags, struct sxt_text *r);
/*
 * sxc_check_clean() - 0 if the checker runs on @bd with @flags and finds no
 * problem; else -1, having printed FAIL with @what and the problems.
 */
int sxc_check_clean(struct sx_bdev *bd, u32 flags, const char *what);

/* sxc_ok_fn - a test's look at a recovered mount: < 0 failed, else a value it returns */
typedef int (*sxc_ok_fn)(struct sx_mount *mp, const void *arg, const char *what);

/*
 * sxc_recover_verify() - the checks after a power cut: mount @bd (recovery),
 * @ok(@mp, @arg, @what) on what it shows (NULL: nothing), unmount, the
 * checker clean with @check_flags, and a second mount and unmount that
 * change no byte.  Returns what @ok returned (0 without @ok), or -1 having
 * said why.
 */
int sxc_recover_verify(struct sx_bdev *bd, u32 check_flags, sxc_ok_fn ok, const void *arg,
		       const char *what);

/*
 * The writes a crash test cuts: @first, then every @step-th, up to @last.
 * At each, @per_point of the @nmodes @modes, taken in turn: with 1 the mode
 * changes from one write to the next, with all of them each write is cut
 * in every mode.
 */
struct sxc_cuts {
	u64	first;			/* 0: the first write */
	u64	step;			/* 0: 1 */
	u64	last;			/* the last write that may be cut */
	const enum sx_crash_mode *modes;	/* NULL: keep, drop, tear */
	u32	nmodes;			/* of @modes (with NULL: 3) */
	u32	per_point;		/* 0: 1 */
};

/* sxc_cut_fn - cut a run at write @w in @mode and check it: < 0 failed */
typedef int (*sxc_cut_fn)(void *arg, u64 w, enum sx_crash_mode mode);

/* sxc_cut_writes() - @cut(@arg, w, mode) for each write and mode of @c, tallied; the cuts */
u64 sxc_cut_writes(const struct sxc_cuts *c, sxc_cut_fn cut, void *arg);

/*
 * sxc_cut_dev() - a crash device over @img (seeded @seed, the fate of torn
 * and random writes) that loses power at write @w in @mode (@w 0: never);
 * its control in *@cd unless @cd is NULL.
 */
struct sx_bdev *sxc_cut_dev(struct sx_bdev *img, u64 seed, u64 w, enum sx_crash_mode mode,
			    struct sx_crashdev **cd);

/*
 * sxc_cut_recovery() - cut the recovery (a mount and unmount) of a copy of
 * @crashed at the writes and modes of @c (@c->last 0: every write an uncut
 * recovery makes) on a crash device seeded @seed + the write.  Each cut
 * image, recovered again, must pass sxc_recover_verify(@check_flags, @ok,
 * @arg) with @ok giving @ref, what it gave after the uncut recovery: a
 * check tallied.  Returns the cuts.
 */
u64 sxc_cut_recovery(struct sx_bdev *crashed, const struct sxc_cuts *c, u64 seed,
		     u32 check_flags, sxc_ok_fn ok, const void *arg, int ref);

#endif /* SXCRASH_H */
