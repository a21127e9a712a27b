// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * threads: 16 threads on one mount, all at once, on a few shared files.
 *
 * Each thread runs a seeded random sequence of pwrite, pread, punch,
 * clone_range, swap_file_range (atomic and NONATOMIC, two files or two
 * ranges of one), atomic updates (start, change the clone, commit or
 * cancel), atomic writes (sx_atomic_writev() of one range or of ranges of
 * two files, durable or not), fstat, setflags (to no flags: only ctime
 * changes), fsync, sync (reading the log's counters after it) and
 * checkpoint.  Every file has a
 * fixed size and is cut into regions of REGION blocks.  The model is exact
 * because the test takes a reader/writer lock on each region an operation
 * touches (all of them in one global order; an update's start and commit
 * and a setflags also take the file's flags lock), so two operations that
 * touch the same blocks never overlap; everything else does: operations
 * on other regions of the same files, the A-B and B-C swaps whose files
 * the engine has to lock in its own order, reads beside writes, and the
 * log forces and checkpoints of other threads in the middle of all of it.
 * The engine's own locks are what keep those apart.
 *
 * Every block written gets a tag nobody used before (every 8-byte word of
 * the block holds it; a hole is tag 0), and the model keeps the tag of each
 * block of each file, so a read says exactly which write a block came
 * from.  What is asserted:
 *  - every call returns success (whole byte counts for pread and pwrite),
 *    except the one error the API documents for a race: an update's commit
 *    fails with -EBUSY when the original changed after the update started;
 *    it must not fail when nothing changed the original, and a commit that
 *    succeeds must not undo a change made meanwhile;
 *  - every pread returns exactly the model's blocks;
 *  - fstat shows the size the file always has;
 *  - at the end every file holds the model's blocks, before and after a
 *    remount, and sx_check() finds no problem.
 * A watchdog aborts the run, naming what each thread is doing, when no
 * operation completes for STALL_SECONDS (a deadlock).
 *
 * Each seed runs three phases: 1 KiB blocks on an image with the atomic_swap
 * feature, then 4 KiB blocks on one without it (atomic swaps and atomic
 * writes must fail with -EOPNOTSUPP there, non-atomic swaps and updates
 * run), then the first again mounted with SX_MOUNT_OVERLAP_FORCES (log
 * forces in flight together, among fsyncs, fences and checkpoints).
 * SX_THREADS_OPS=N sets the operations per thread and phase (default
 * 1000; make threads-long runs many more); SX_TEST_SEED=N runs that seed
 * instead of the fixed ones.  The same seed gives each thread the same
 * sequence of operations; how they interleave is up to the scheduler.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "sxswap.h"

#define NTHREADS	16
#define NFILES		6
#define REGION		8		/* blocks per test lock */
#define NREGIONS	12
#define FBLK		(REGION * NREGIONS)	/* blocks of each file */
#define MAXIO		16		/* blocks one operation moves at most */
#define DEV_SIZE	(64ull << 20)
#define DEFAULT_OPS	1000
#define STALL_SECONDS	120

static const u64 fixed_seeds[] = { 1, 0x7468726561647321ull };

enum {
	OP_WRITE, OP_READ, OP_PUNCH, OP_CLONE, OP_SWAP, OP_UPDATE, OP_STAT, OP_SETFLAGS,
	OP_FSYNC, OP_SYNC, OP_CHECKPOINT, OP_AWRITE, OP_NR
};
static const char *const op_names[OP_NR] = {
	"pwrite", "pread", "punch", "clone_range", "swap_range", "update", "fstat", "setflags",
	"fsync", "sync", "checkpoint", "atomic_writev",
};
static const u32 op_weight[OP_NR] = { 24, 20, 8, 10, 16, 8, 4, 2, 4, 3, 3, 12 };

/* One phase's filesystem. */
struct phase {
	const char	*ph_name;
	u32		ph_bs;
	bool		ph_atomic;
	u32		ph_mount;	/* SX_MOUNT_* */
};

static const struct phase phases[] = {
	{ "1k-atomic", 1024, true, 0 },
	{ "4k-nonatomic", 4096, false, 0 },
	{ "1k-atomic-overlap", 1024, true, SX_MOUNT_OVERLAP_FORCES },
};

/* A shared file of the model. */
struct mfile {
	int		fd;
	u64		tag[FBLK];		/* under the region locks */
	u64		changes;		/* operations that changed it (atomic) */
	u32		swaps_in_flight;	/* atomic */
};

/* A worker. */
struct worker {
	pthread_t	w_thread;
	u32		w_id;
	u64		w_rng;
	u64		w_done;			/* operations finished (atomic) */
	char		w_doing[160];		/* what it is doing now (for the watchdog) */
	pthread_mutex_t	w_doing_lock;
	u8		*w_buf;
	u8		*w_rbuf;
};

static struct sx_bdev *bd;
static struct sx_mount *mp;
static const struct phase *ph;

static struct sx_mount *phase_mount(struct sx_bdev *dev)
{
	struct sx_mount_opts mo = { .mo_flags = ph->ph_mount };
	struct sx_mount *m;
	int error = sx_mount(dev, &mo, &m);

	if (error) {
		fprintf(stderr, "threads: mount: %s\n", sx_strerror(error));
		abort();
	}
	return m;
}
static struct mfile files[NFILES];
static pthread_rwlock_t regions[NFILES][NREGIONS];
static pthread_mutex_t metas[NFILES];
static struct worker workers[NTHREADS];
static u64 seed, nops;
static u32 bsize;
static u64 next_tag = 1;		/* atomic */
static int failed;			/* atomic: the first failure stops everyone */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

/* Figures (atomic). */
static u64 n_ops[OP_NR], n_swap_atomic, n_swap_nonatomic, n_swap_same, n_swap_overlap,
	   n_swap_eopnotsupp, n_upd_commit, n_upd_ebusy, n_upd_cancel, n_upd_busy_equal,
	   n_aw_two, n_aw_eopnotsupp;

static u64 atomic_add(u64 *p, u64 v)
{
	return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST);
}

static u64 atomic_get(const u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/* A random number below @n (n > 0). */
static u64 rnd(struct worker *w, u64 n)
{
	return sxt_rand(&w->w_rng) % n;
}

/* Say what @w is doing now. */
static void doing(struct worker *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void doing(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&w->w_doing_lock);
	va_start(ap, fmt);
	vsnprintf(w->w_doing, sizeof(w->w_doing), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&w->w_doing_lock);
}

/* Report a failure (the first one only) and make every thread stop. */
static void fail(struct worker *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&fail_lock);
	if (!__atomic_load_n(&failed, __ATOMIC_SEQ_CST)) {
		printf("threads: FAILED: seed %llu, phase %s", (unsigned long long)seed,
		       ph->ph_name);
		if (w) {
			pthread_mutex_lock(&w->w_doing_lock);
			printf(", thread %u, operation %llu (%s)", w->w_id,
			       (unsigned long long)atomic_get(&w->w_done), w->w_doing);
			pthread_mutex_unlock(&w->w_doing_lock);
		}
		printf(": ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
		fflush(stdout);
		__atomic_store_n(&failed, 1, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&fail_lock);
}

static bool stopped(void)
{
	return __atomic_load_n(&failed, __ATOMIC_SEQ_CST) != 0;
}

/*
 * Test locks: a set of regions, each shared or exclusive, taken in the
 * order of (file, region) so that two operations never wait for each other
 * in a circle.
 */
struct rlockset {
	bool	meta[NFILES];			/* the file's flags (exclusive) */
	u8	mode[NFILES][NREGIONS];		/* 0 none, 1 shared, 2 exclusive */
};

static void rl_add(struct rlockset *s, u32 f, u64 off, u64 n, u8 mode)
{
	u64 r;

	for (r = off / REGION; r <= (off + n - 1) / REGION; r++)
		if (s->mode[f][r] < mode)
			s->mode[f][r] = mode;
}

static void rl_lock(const struct rlockset *s)
{
	u32 f, r;

	for (f = 0; f < NFILES; f++) {
		if (s->meta[f])
			pthread_mutex_lock(&metas[f]);
		for (r = 0; r < NREGIONS; r++) {
			if (s->mode[f][r] == 1)
				pthread_rwlock_rdlock(&regions[f][r]);
			else if (s->mode[f][r] == 2)
				pthread_rwlock_wrlock(&regions[f][r]);
		}
	}
}

static void rl_unlock(const struct rlockset *s)
{
	u32 f, r;

	for (f = 0; f < NFILES; f++) {
		for (r = 0; r < NREGIONS; r++)
			if (s->mode[f][r])
				pthread_rwlock_unlock(&regions[f][r]);
		if (s->meta[f])
			pthread_mutex_unlock(&metas[f]);
	}
}

/* Fill @n blocks of @buf with fresh tags, into @tags. */
static void fresh_blocks(u8 *buf, u64 *tags, u64 n)
{
	u64 b, i, t;

	for (b = 0; b < n; b++) {
		t = atomic_add(&next_tag, 1);
		tags[b] = t;
		for (i = 0; i < bsize / 8; i++)
			((u64 *)(buf + b * bsize))[i] = t;
	}
}

/* Check @n blocks read into @buf against @tags; false (and a failure) if one differs. */
static bool check_blocks(struct worker *w, const char *what, const u8 *buf, const u64 *tags,
			 u64 first, u64 n)
{
	u64 b;

	for (b = 0; b < n; b++) {
		u64 got = sxs_tag_of(buf + b * bsize, bsize);

		if (got != tags[b]) {
			fail(w, "%s: block %llu holds tag %#llx, the model says %#llx", what,
			     (unsigned long long)(first + b), (unsigned long long)got,
			     (unsigned long long)tags[b]);
			return false;
		}
	}
	return true;
}

/* The range [*@off, +*@n) of a file: 1..@max blocks, anywhere in it. */
static void pick_range(struct worker *w, u64 max, u64 *off, u64 *n)
{
	*n = 1 + rnd(w, max);
	*off = rnd(w, FBLK - *n + 1);
}

static void op_write(struct worker *w)
{
	struct rlockset s = { 0 };
	u64 tags[MAXIO], off, n;
	u32 f = (u32)rnd(w, NFILES);
	s64 r;

	pick_range(w, MAXIO, &off, &n);
	doing(w, "pwrite file %u blocks %llu+%llu", f, (unsigned long long)off,
	      (unsigned long long)n);
	fresh_blocks(w->w_buf, tags, n);
	rl_add(&s, f, off, n, 2);
	rl_lock(&s);
	r = sx_pwrite(mp, files[f].fd, w->w_buf, n * bsize, off * bsize);
	if (r != (s64)(n * bsize))
		fail(w, "pwrite returned %lld", (long long)r);
	else
		memcpy(&files[f].tag[off], tags, n * sizeof(u64));
	atomic_add(&files[f].changes, 1);
	rl_unlock(&s);
}

/*
 * sx_atomic_writev() of one range, or of two ranges of two files (half the
 * time; two ranges of one file would have to keep apart), durable or not:
 * small ones of unshared files go straight into new blocks, the rest
 * through twins; without the atomic_swap feature it is -EOPNOTSUPP.
 */
static void op_awrite(struct worker *w)
{
	struct rlockset s = { 0 };
	struct sx_atomic_iov v[2];
	u64 tags[2][MAXIO / 2], off[2], n[2];
	u32 f[2], k, nv = 1 + (u32)rnd(w, 2);
	u32 flags = rnd(w, 2) ? SX_ATOMIC_NOSYNC : 0;
	int error;

	f[0] = (u32)rnd(w, NFILES);
	f[1] = (f[0] + 1 + (u32)rnd(w, NFILES - 1)) % NFILES;
	memset(v, 0, sizeof(v));
	for (k = 0; k < nv; k++) {
		pick_range(w, MAXIO / 2, &off[k], &n[k]);
		fresh_blocks(w->w_buf + k * (MAXIO / 2) * bsize, tags[k], n[k]);
		rl_add(&s, f[k], off[k], n[k], 2);
		v[k].ai_fd = files[f[k]].fd;
		v[k].ai_buf = w->w_buf + k * (MAXIO / 2) * bsize;
		v[k].ai_len = n[k] * bsize;
		v[k].ai_off = off[k] * bsize;
	}
	doing(w, "atomic_writev file %u blocks %llu+%llu%s%s", f[0], (unsigned long long)off[0],
	      (unsigned long long)n[0], nv > 1 ? " and another file" : "",
	      flags ? " nosync" : "");
	rl_lock(&s);
	error = sx_atomic_writev(mp, v, nv, flags);
	if (error == -EOPNOTSUPP && !ph->ph_atomic) {
		atomic_add(&n_aw_eopnotsupp, 1);
	} else if (error) {
		fail(w, "atomic_writev: %s", sx_strerror(error));
	} else {
		for (k = 0; k < nv; k++) {
			memcpy(&files[f[k]].tag[off[k]], tags[k], n[k] * sizeof(u64));
			atomic_add(&files[f[k]].changes, 1);
		}
		if (nv > 1)
			atomic_add(&n_aw_two, 1);
	}
	rl_unlock(&s);
}

static void op_read(struct worker *w)
{
	struct rlockset s = { 0 };
	u64 off, n;
	u32 f = (u32)rnd(w, NFILES);
	s64 r;

	pick_range(w, MAXIO, &off, &n);
	doing(w, "pread file %u blocks %llu+%llu", f, (unsigned long long)off,
	      (unsigned long long)n);
	rl_add(&s, f, off, n, 1);
	rl_lock(&s);
	r = sx_pread(mp, files[f].fd, w->w_rbuf, n * bsize, off * bsize);
	if (r != (s64)(n * bsize))
		fail(w, "pread returned %lld", (long long)r);
	else
		check_blocks(w, "pread", w->w_rbuf, &files[f].tag[off], off, n);
	rl_unlock(&s);
}

static void op_punch(struct worker *w)
{
	struct rlockset s = { 0 };
	u64 off, n;
	u32 f = (u32)rnd(w, NFILES);
	int error;

	pick_range(w, MAXIO, &off, &n);
	doing(w, "punch file %u blocks %llu+%llu", f, (unsigned long long)off,
	      (unsigned long long)n);
	rl_add(&s, f, off, n, 2);
	rl_lock(&s);
	error = sx_punch(mp, files[f].fd, off * bsize, n * bsize);
	if (error)
		fail(w, "punch: %s", sx_strerror(error));
	else
		memset(&files[f].tag[off], 0, n * sizeof(u64));
	atomic_add(&files[f].changes, 1);
	rl_unlock(&s);
}

/* Two ranges of @n blocks: of two files, or two that do not overlap in one. */
static void pick_pair(struct worker *w, u32 *f1, u64 *o1, u32 *f2, u64 *o2, u64 *n)
{
	*f1 = (u32)rnd(w, NFILES);
	*f2 = (u32)rnd(w, NFILES);
	*n = 1 + rnd(w, MAXIO);
	*o1 = rnd(w, FBLK - *n + 1);
	for (;;) {
		*o2 = rnd(w, FBLK - *n + 1);
		if (*f1 != *f2 || *o1 + *n <= *o2 || *o2 + *n <= *o1)
			return;
	}
}

static void op_clone(struct worker *w)
{
	struct rlockset s = { 0 };
	u64 o1, o2, n, tags[MAXIO];
	u32 f1, f2;
	int error;

	pick_pair(w, &f1, &o1, &f2, &o2, &n);
	doing(w, "clone file %u blocks %llu+%llu to file %u block %llu", f1,
	      (unsigned long long)o1, (unsigned long long)n, f2, (unsigned long long)o2);
	rl_add(&s, f1, o1, n, 1);
	rl_add(&s, f2, o2, n, 2);
	rl_lock(&s);
	error = sx_clone_range(mp, files[f2].fd, o2 * bsize, files[f1].fd, o1 * bsize,
			       n * bsize);
	if (error) {
		fail(w, "clone_range: %s", sx_strerror(error));
	} else {
		memcpy(tags, &files[f1].tag[o1], n * sizeof(u64));
		memcpy(&files[f2].tag[o2], tags, n * sizeof(u64));
	}
	atomic_add(&files[f2].changes, 1);
	rl_unlock(&s);
}

static void op_swap(struct worker *w)
{
	struct rlockset s = { 0 };
	struct file_swap_range fsr;
	u64 o1, o2, n, tags[MAXIO];
	u32 f1, f2, busy;
	bool atomic;
	int error;

	pick_pair(w, &f1, &o1, &f2, &o2, &n);
	/* an image without the feature refuses an atomic swap now and then */
	atomic = ph->ph_atomic ? rnd(w, 2) == 0 : rnd(w, 16) == 0;
	doing(w, "%s swap file %u blocks %llu+%llu with file %u block %llu",
	      atomic ? "atomic" : "non-atomic", f1, (unsigned long long)o1,
	      (unsigned long long)n, f2, (unsigned long long)o2);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = files[f1].fd;
	fsr.file1_offset = (s64)(o1 * bsize);
	fsr.file2_offset = (s64)(o2 * bsize);
	fsr.length = (s64)(n * bsize);
	fsr.flags = atomic ? 0 : FILE_SWAP_RANGE_NONATOMIC;
	rl_add(&s, f1, o1, n, 2);
	rl_add(&s, f2, o2, n, 2);
	rl_lock(&s);
	/* another swap on one of these files now: the engine orders the two */
	busy = __atomic_fetch_add(&files[f1].swaps_in_flight, 1, __ATOMIC_SEQ_CST);
	if (f2 != f1)
		busy += __atomic_fetch_add(&files[f2].swaps_in_flight, 1, __ATOMIC_SEQ_CST);
	if (busy)
		atomic_add(&n_swap_overlap, 1);
	error = sx_swap_file_range(mp, files[f2].fd, &fsr);
	__atomic_fetch_sub(&files[f1].swaps_in_flight, 1, __ATOMIC_SEQ_CST);
	if (f2 != f1)
		__atomic_fetch_sub(&files[f2].swaps_in_flight, 1, __ATOMIC_SEQ_CST);
	if (atomic && !ph->ph_atomic) {
		if (error != -EOPNOTSUPP)
			fail(w, "atomic swap without the feature: %d, not EOPNOTSUPP", error);
		atomic_add(&n_swap_eopnotsupp, 1);
	} else if (error) {
		fail(w, "swap_file_range: %s", sx_strerror(error));
	} else {
		memcpy(tags, &files[f1].tag[o1], n * sizeof(u64));
		memcpy(&files[f1].tag[o1], &files[f2].tag[o2], n * sizeof(u64));
		memcpy(&files[f2].tag[o2], tags, n * sizeof(u64));
		atomic_add(atomic ? &n_swap_atomic : &n_swap_nonatomic, 1);
		if (f1 == f2)
			atomic_add(&n_swap_same, 1);
		atomic_add(&files[f1].changes, 1);
		atomic_add(&files[f2].changes, 1);
	}
	rl_unlock(&s);
}

/* Every region of file @f, exclusive, and its flags. */
static void rl_whole(struct rlockset *s, u32 f)
{
	s->meta[f] = true;
	rl_add(s, f, 0, FBLK, 2);
}

/*
 * An atomic update of a whole file: start (under the file's locks, so
 * that the clone is what the model says), change the clone with a few
 * writes and punches while the other threads may change the original,
 * then commit (under the locks again) or cancel.
 */
static void op_update(struct worker *w)
{
	struct rlockset s = { 0 };
	struct sx_update upd;
	u64 before[FBLK], clone[FBLK], changes, off, n;
	u32 f = (u32)rnd(w, NFILES), i, k, flags;
	bool cancel;
	s64 r;
	int error;

	doing(w, "update file %u: start", f);
	rl_whole(&s, f);
	rl_lock(&s);
	error = sx_update_start(mp, files[f].fd, &upd);
	memcpy(before, files[f].tag, sizeof(before));
	changes = atomic_get(&files[f].changes);
	rl_unlock(&s);
	if (error) {
		fail(w, "update_start: %s", sx_strerror(error));
		return;
	}
	memcpy(clone, before, sizeof(clone));

	k = 1 + (u32)rnd(w, 4);
	for (i = 0; i < k && !stopped(); i++) {
		pick_range(w, MAXIO, &off, &n);
		if (rnd(w, 4)) {
			doing(w, "update file %u: pwrite clone blocks %llu+%llu", f,
			      (unsigned long long)off, (unsigned long long)n);
			fresh_blocks(w->w_buf, &clone[off], n);
			r = sx_pwrite(mp, upd.su_fd_tmp, w->w_buf, n * bsize, off * bsize);
			if (r != (s64)(n * bsize))
				fail(w, "pwrite of the clone returned %lld", (long long)r);
		} else {
			doing(w, "update file %u: punch clone blocks %llu+%llu", f,
			      (unsigned long long)off, (unsigned long long)n);
			error = sx_punch(mp, upd.su_fd_tmp, off * bsize, n * bsize);
			if (error)
				fail(w, "punch of the clone: %s", sx_strerror(error));
			memset(&clone[off], 0, n * sizeof(u64));
		}
	}
	/* let the others in before the commit, now and then */
	if (rnd(w, 3) == 0)
		sched_yield();

	cancel = rnd(w, 8) == 0 || stopped();
	flags = !ph->ph_atomic || rnd(w, 3) == 0 ? SX_UPDATE_NONATOMIC : 0;
	doing(w, "update file %u: %s%s", f, cancel ? "cancel" : "commit",
	      flags ? " (non-atomic)" : "");
	rl_lock(&s);
	if (cancel) {
		error = sx_update_cancel(mp, &upd);
		if (error)
			fail(w, "update_cancel: %s", sx_strerror(error));
		atomic_add(&n_upd_cancel, 1);
		goto out_unlock;
	}
	error = sx_update_commit(mp, &upd, flags);
	if (error == -EBUSY) {
		/* only a change since the start may refuse the commit */
		if (atomic_get(&files[f].changes) == changes)
			fail(w, "update_commit: EBUSY, but nothing changed the file");
		if (!memcmp(before, files[f].tag, sizeof(before)))
			atomic_add(&n_upd_busy_equal, 1);
		atomic_add(&n_upd_ebusy, 1);
		error = sx_update_cancel(mp, &upd);
		if (error)
			fail(w, "update_cancel after EBUSY: %s", sx_strerror(error));
	} else if (error) {
		fail(w, "update_commit: %s", sx_strerror(error));
	} else {
		/* a commit must never throw away what another thread did meanwhile */
		if (memcmp(before, files[f].tag, sizeof(before)))
			fail(w, "update_commit succeeded over a change made after the start");
		memcpy(files[f].tag, clone, sizeof(clone));
		atomic_add(&files[f].changes, 1);
		atomic_add(&n_upd_commit, 1);
	}
out_unlock:
	rl_unlock(&s);
}

static void op_stat(struct worker *w)
{
	struct sx_stat st;
	u32 f = (u32)rnd(w, NFILES);
	int error;

	doing(w, "fstat file %u", f);
	error = sx_fstat(mp, files[f].fd, &st);
	if (error)
		fail(w, "fstat: %s", sx_strerror(error));
	else if (st.st_size != (u64)FBLK * bsize)
		fail(w, "fstat: size %llu, always %llu", (unsigned long long)st.st_size,
		     (unsigned long long)FBLK * bsize);
}

/*
 * Flags set to what they are (none): no change but ctime, which updates
 * see, so not while one starts or commits; beside everything else.
 */
static void op_setflags(struct worker *w)
{
	struct rlockset s = { 0 };
	u32 f = (u32)rnd(w, NFILES);
	int error;

	doing(w, "setflags file %u", f);
	s.meta[f] = true;
	rl_lock(&s);
	error = sx_setflags(mp, files[f].fd, 0);
	if (error)
		fail(w, "setflags: %s", sx_strerror(error));
	atomic_add(&files[f].changes, 1);
	rl_unlock(&s);
}

static void op_fsync(struct worker *w)
{
	u32 f = (u32)rnd(w, NFILES);
	int error;

	doing(w, "fsync file %u", f);
	error = sx_fsync(mp, files[f].fd);
	if (error)
		fail(w, "fsync: %s", sx_strerror(error));
}

static void op_sync(struct worker *w)
{
	struct sx_log_stats st;
	int error;

	doing(w, "sync");
	error = sx_sync(mp);
	if (error)
		fail(w, "sync: %s", sx_strerror(error));
	/* the counters, read while others force: the tool and bench read them too */
	sx_log_get_stats(mp, &st);
	if (!error && st.ls_forces == 0)
		fail(w, "sync: the log counts no force");
}

static void op_checkpoint(struct worker *w)
{
	int error;

	doing(w, "checkpoint");
	error = sx_checkpoint(mp);
	if (error)
		fail(w, "checkpoint: %s", sx_strerror(error));
}

static void (*const op_fns[OP_NR])(struct worker *w) = {
	op_write, op_read, op_punch, op_clone, op_swap, op_update, op_stat, op_setflags,
	op_fsync, op_sync, op_checkpoint, op_awrite,
};

static u32 pick_op(struct worker *w)
{
	u32 total = 0, i;
	u64 x;

	for (i = 0; i < OP_NR; i++)
		total += op_weight[i];
	x = rnd(w, total);
	for (i = 0; i < OP_NR; i++) {
		if (x < op_weight[i])
			return i;
		x -= op_weight[i];
	}
	return OP_READ;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	u64 i;

	sx_thread_enter();
	for (i = 0; i < nops && !stopped(); i++) {
		u32 op = pick_op(w);

		op_fns[op](w);
		atomic_add(&n_ops[op], 1);
		atomic_add(&w->w_done, 1);
	}
	doing(w, "done");
	sx_thread_exit();
	return NULL;
}

/* Read every file whole and compare it with the model (no thread runs). */
static bool verify_all(const char *when)
{
	u8 *buf = malloc((size_t)FBLK * bsize);
	char what[64];
	u32 f;
	s64 r;

	for (f = 0; f < NFILES && !stopped(); f++) {
		snprintf(what, sizeof(what), "%s, file %u", when, f);
		r = sx_pread(mp, files[f].fd, buf, (u64)FBLK * bsize, 0);
		if (r != (s64)FBLK * bsize) {
			fail(NULL, "%s: pread returned %lld", what, (long long)r);
			break;
		}
		check_blocks(NULL, what, buf, files[f].tag, 0, FBLK);
	}
	free(buf);
	return !stopped();
}

/* Wait for the workers; abort with what each does if none moves for too long. */
static void watch_workers(void)
{
	u64 last = ~0ull, total;
	time_t since = time(NULL);
	u32 i, running;

	for (;;) {
		running = 0;
		total = 0;
		for (i = 0; i < NTHREADS; i++) {
			total += atomic_get(&workers[i].w_done);
			pthread_mutex_lock(&workers[i].w_doing_lock);
			running += strcmp(workers[i].w_doing, "done") != 0;
			pthread_mutex_unlock(&workers[i].w_doing_lock);
		}
		if (!running)
			return;
		if (total != last) {
			last = total;
			since = time(NULL);
		} else if (time(NULL) - since > STALL_SECONDS) {
			printf("threads: no operation finished for %d s (seed %llu, phase %s):\n",
			       STALL_SECONDS, (unsigned long long)seed, ph->ph_name);
			for (i = 0; i < NTHREADS; i++)
				printf("  thread %2u: %s\n", i, workers[i].w_doing);
			printf("threads: 0 passed, 1 failed\n");
			fflush(stdout);
			abort();
		}
		usleep(20000);
	}
}

static void run_phase(void)
{
	struct sx_mkfs_opts mo = { 0 };
	struct sx_log_stats ls = { 0 };
	struct timespec t0, t1;
	u64 problems = 1, b, total, before;
	char name[16];
	u32 i, f, r;
	int error;

	bsize = ph->ph_bs;
	mo.mk_blocksize = bsize;
	if (ph->ph_atomic)
		mo.mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
	if (sx_memdev_create(DEV_SIZE, 512, &bd) || sx_mkfs(bd, &mo)) {
		fail(NULL, "no image");
		return;
	}
	mp = phase_mount(bd);
	memset(files, 0, sizeof(files));
	/* every file starts full, each block with a tag of its own */
	for (f = 0; f < NFILES && !stopped(); f++) {
		u8 *buf = malloc((size_t)FBLK * bsize);

		snprintf(name, sizeof(name), "f%u", f);
		error = sx_create(mp, name, 0644, &files[f].fd);
		if (error)
			fail(NULL, "create %s: %s", name, sx_strerror(error));
		fresh_blocks(buf, files[f].tag, FBLK);
		if (!error && sx_pwrite(mp, files[f].fd, buf, (u64)FBLK * bsize, 0) !=
		    (s64)FBLK * bsize)
			fail(NULL, "first write of %s", name);
		free(buf);
		for (r = 0; r < NREGIONS; r++)
			pthread_rwlock_init(&regions[f][r], NULL);
		pthread_mutex_init(&metas[f], NULL);
	}
	if (!stopped() && sx_sync(mp))
		fail(NULL, "first sync");

	before = 0;
	for (i = 0; i < OP_NR; i++)
		before += atomic_get(&n_ops[i]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < NTHREADS && !stopped(); i++) {
		struct worker *w = &workers[i];

		memset(w, 0, sizeof(*w));
		w->w_id = i;
		w->w_rng = (seed ^ (0x9e3779b97f4a7c15ull * (i + 1))) | 1;
		w->w_buf = malloc((size_t)MAXIO * bsize);
		w->w_rbuf = malloc((size_t)MAXIO * bsize);
		pthread_mutex_init(&w->w_doing_lock, NULL);
		snprintf(w->w_doing, sizeof(w->w_doing), "starting");
		if (pthread_create(&w->w_thread, NULL, worker_main, w)) {
			fail(NULL, "pthread_create");
			break;
		}
	}
	if (i == NTHREADS)
		watch_workers();
	while (i-- > 0) {
		pthread_join(workers[i].w_thread, NULL);
		free(workers[i].w_buf);
		free(workers[i].w_rbuf);
		pthread_mutex_destroy(&workers[i].w_doing_lock);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	total = 0;
	for (i = 0; i < OP_NR; i++)
		total += atomic_get(&n_ops[i]);
	total -= before;

	if (!stopped())
		verify_all("after the run");
	sx_log_get_stats(mp, &ls);
	for (f = 0; f < NFILES; f++)
		sx_close(mp, files[f].fd);
	error = sx_unmount(mp);
	if (error && !stopped())
		fail(NULL, "unmount: %s", sx_strerror(error));
	if (!stopped()) {
		/* what a fresh mount reads from the device, not from any cache */
		mp = phase_mount(bd);
		for (f = 0; f < NFILES; f++) {
			snprintf(name, sizeof(name), "f%u", f);
			error = sx_open(mp, name, &files[f].fd);
			if (error)
				fail(NULL, "open %s after the remount: %s", name,
				     sx_strerror(error));
		}
		if (!stopped())
			verify_all("after a remount");
		for (f = 0; f < NFILES; f++)
			sx_close(mp, files[f].fd);
		error = sx_unmount(mp);
		if (error && !stopped())
			fail(NULL, "second unmount: %s", sx_strerror(error));
	}
	if (!stopped()) {
		error = sx_check(bd, NULL, NULL, &problems);
		if (error || problems)
			fail(NULL, "checker: error %d, %llu problems", error,
			     (unsigned long long)problems);
	}
	for (f = 0; f < NFILES; f++) {
		for (r = 0; r < NREGIONS; r++)
			pthread_rwlock_destroy(&regions[f][r]);
		pthread_mutex_destroy(&metas[f]);
	}
	if (ph->ph_mount & SX_MOUNT_OVERLAP_FORCES && !ls.ls_flights)
		fail(NULL, "no log force flew in a phase that lets them");
	sx_bdev_destroy(bd);
	b = (u64)(t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	printf("threads: seed %llu, phase %s: %s, %llu operations in %llu.%03llu s, "
	       "%llu log forces (%llu in flight)\n",
	       (unsigned long long)seed, ph->ph_name, stopped() ? "FAILED" : "passed",
	       (unsigned long long)total, (unsigned long long)(b / 1000),
	       (unsigned long long)(b % 1000), (unsigned long long)ls.ls_forces,
	       (unsigned long long)ls.ls_flights);
}

/* Engine messages below an error are expected (EBUSY commits log nothing, but others may). */
static void log_sink(void *arg, enum sx_log_level level, const char *msg)
{
	if (level <= SX_LOG_ERR)
		fprintf(stderr, "swapext: %s\n", msg);
}

int main(void)
{
	const char *o = getenv("SX_THREADS_OPS");
	const u64 *seeds;
	u32 nseeds, s, p, i;

	nops = o && *o ? strtoull(o, NULL, 0) : DEFAULT_OPS;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sx_thread_enter();
	sx_set_log_callback(log_sink, NULL);
	nseeds = sxt_seeds("threads", fixed_seeds, ARRAY_SIZE(fixed_seeds), &seeds);
	printf("threads: %d threads, %d files of %d blocks, %llu operations per thread and "
	       "phase (SX_THREADS_OPS)\n", NTHREADS, NFILES, FBLK, (unsigned long long)nops);
	for (s = 0; s < nseeds && !stopped(); s++) {
		seed = seeds[s];
		for (p = 0; p < ARRAY_SIZE(phases) && !stopped(); p++) {
			ph = &phases[p];
			run_phase();
		}
	}
	printf("threads: operations:");
	for (i = 0; i < OP_NR; i++)
		printf(" %s %llu", op_names[i], (unsigned long long)atomic_get(&n_ops[i]));
	printf("\nthreads: swaps: %llu atomic, %llu non-atomic (%llu within one file), "
	       "%llu while another swap held one of the files, %llu refused (no feature)\n",
	       (unsigned long long)n_swap_atomic, (unsigned long long)n_swap_nonatomic,
	       (unsigned long long)n_swap_same, (unsigned long long)n_swap_overlap,
	       (unsigned long long)n_swap_eopnotsupp);
	printf("threads: atomic writes: %llu of two files, %llu refused (no feature)\n",
	       (unsigned long long)n_aw_two, (unsigned long long)n_aw_eopnotsupp);
	printf("threads: updates: %llu committed, %llu refused with EBUSY (%llu of them after "
	       "changes that left the blocks as they were), %llu cancelled\n",
	       (unsigned long long)n_upd_commit, (unsigned long long)n_upd_ebusy,
	       (unsigned long long)n_upd_busy_equal, (unsigned long long)n_upd_cancel);
	sx_thread_exit();
	if (stopped()) {
		printf("threads: 0 passed, 1 failed\n");
		return 1;
	}
	printf("threads: 1 passed, 0 failed\n");
	return 0;
}
