// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fault loops (issue 18, item 5): the N-th device read, write or flush, or
 * the N-th allocation of the engine, fails, for N = 1, 2, ... until the
 * workload runs to its end without reaching it; once (the I/O or
 * allocation after it works again) and forever (every one from the N-th
 * on fails).
 *
 * The workloads: an atomic swap of two fragmented files (one block per
 * extent, holes), then a whole-file TO_EOF swap of them; a non-atomic
 * swap; a clone, copy-on-write writes into both files, a punch of shared
 * blocks, a truncate and the unlink of an open file (freed at its last
 * close, under the fault too); an atomic file update (sx_update_start,
 * writes and a truncate of the clone, sx_update_commit); and the recovery
 * of four images that a power cut left with unfinished intents (a swap's
 * SXI chain, an update's commit with its nameless clone, a punch of
 * shared blocks with its refcount and free intents, a clone's map and
 * refcount intents), so that the fault strikes recovery too; and the two
 * swaps again mounted with SX_MOUNT_OVERLAP_FORCES, where their log forces
 * fly (engine/log_force.c), so that it strikes a flight's flush and completion.
 * Each normal workload is a list of steps from mount to unmount, each
 * step one call with a model of the files (a, b, c: existence, size,
 * every block's tag) after it; a recovery workload is its mount and
 * unmount.
 *
 * Every run of a point is checked:
 *  - a step that fails leaves the files as the step before left them; a
 *    call made of pieces (a write, a non-atomic swap, a clone, a punch)
 *    may have done a prefix of them, a truncate sets the size before it
 *    frees what lies past it, and an update's commit that says its swap
 *    happened leaves the new contents.  Seen on the live mount when it is
 *    still up (the fault paused while the test reads), then by a remount
 *    after a clean unmount, which must show the same;
 *  - a step that succeeds leaves the model's next state, and the mount is
 *    up (a shutdown fails the call that caused it);
 *  - after a shutdown, or a failed unmount, the remount (recovery) shows
 *    the state of a step boundary between the last durable one and the
 *    end of the failed step, or a prefix of it: an atomic swap or update
 *    all old or all new;
 *  - a failed device write or flush shuts the mount down (or fails the
 *    mount); a shut-down mount says why (sx_shutdown_state()), fails
 *    sx_sync(), and from the moment it shut down no read, write or flush
 *    reaches the device, its unmount included;
 *  - every allocation of the point is freed when it ends (the live count
 *    of sx_alloc_get_stats() after an RCU barrier), the remounted image
 *    checks clean, and a second recovery changes nothing.
 *
 * make check takes N in steps chosen from what the workload does without
 * a fault (about FL_POINTS points per workload, kind and mode);
 * SX_CRASH_LEVEL=long (make faults) takes every N.  It prints, per
 * workload and kind, the count without a fault, the step, the points run
 * once and forever and how many of them shut the mount down.
 * SX_FAULT_WORKLOADS='word ...' runs the workloads whose names hold a
 * word; SX_FAULT_POINT='clone alloc 871 once' runs that point alone
 * (with SX_TEST_VERBOSE, the engine's errors and the files' differences).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sxswap.h"
#include "sxcrash.h"

#define BS		1024u
#define IMG		(16ull << 20)
#define LOGBLOCKS	1024u
#define NF		3		/* files a, b, c */
#define MAXB		64u		/* blocks a model holds per file */
#define NA		48u		/* blocks of a */
#define NB		40u		/* blocks of b */
#define MAXSTEPS	16
#define MAXALLOW	(2 * MAXSTEPS + MAXB + 2)

/* Points per workload, kind and mode at each level (quick, normal; long: all). */
#define FL_POINTS_QUICK		6
#define FL_POINTS		48

static const char *const fname[NF] = { "a", "b", "c" };

/* What the mount shows of the files: the model of a state. */
struct fl_state {
	bool	exists[NF];
	u64	size[NF];
	u64	tag[NF][MAXB];
};

enum fl_kind { FL_READ, FL_WRITE, FL_FLUSH, FL_ALLOC, FL_NKINDS };
static const char *const kind_name[FL_NKINDS] = { "read", "write", "flush", "alloc" };

/* Step flags. */
enum {
	FL_DURABLE	= 1u << 0,	/* durable when it returns */
	/*
	 * An error may leave a prefix of the step's blocks done: a write
	 * (a short write), a non-atomic swap (some of its steps), a clone
	 * (its pieces are chains of their own, reflink.c)
	 */
	FL_PARTIAL	= 1u << 1,
	/*
	 * An error may come after the change took effect: a truncate sets the
	 * size in a transaction of its own before it frees what lies past it
	 */
	FL_MAYBE_NEW	= 1u << 2,
};

struct fl_run;
struct fl_step;

typedef int (*fl_step_fn)(struct fl_run *r, const struct fl_step *s);
typedef void (*fl_model_fn)(struct fl_state *m, const struct fl_step *s);

struct fl_step {
	const char	*name;
	fl_step_fn	fn;
	fl_model_fn	model;		/* NULL: the files do not change */
	u32		flags;
	int		f1, f2;		/* files */
	u64		a1, a2, a3;	/* blocks or bytes, as the step says */
	u64		flags64;	/* swap flags */
};

struct fl_wl {
	const char	*name;
	struct sx_bdev	*img;		/* the image it starts from */
	const struct fl_step *steps;
	int		nsteps;
	u32		mflags;		/* SX_MOUNT_* of its runs */
	struct fl_state	st[MAXSTEPS + 1];	/* st[0] the image, st[i + 1] after step i */
	struct fl_state	*part[MAXSTEPS];	/* what an FL_PARTIAL step may leave */
	u32		npart[MAXSTEPS];
	/* what the workload does without a fault */
	u64		count[FL_NKINDS];
	u64		step[FL_NKINDS];	/* N goes 1, 1 + step, ... */
	u64		points[FL_NKINDS][2];
	u64		shutdowns[FL_NKINDS][2];
};

/* One run of a workload. */
struct fl_run {
	struct sx_mount	*mp;
	int		fd[NF];
	struct sx_update upd;
	bool		err_new;	/* the failed step says it took effect all the same */
	bool		bad;		/* a step broke a rule (said) */
};

/* Shutdown watch: the device's counters when the engine said it shut down. */
struct fl_watch {
	struct sx_crashdev *cd;
	bool		seen;
	struct sx_crashdev_stats at;
	char		last[256];	/* the last error message */
};

static struct fl_watch watch;
static bool verbose;

static void fl_log(void *arg, enum sx_log_level level, const char *msg)
{
	struct fl_watch *w = arg;

	if (level > SX_LOG_ERR)
		return;
	snprintf(w->last, sizeof(w->last), "%s", msg);
	if (w->cd && !w->seen && strstr(msg, "shutting down after error")) {
		w->seen = true;
		sx_crashdev_get_stats(w->cd, &w->at);
	}
	if (verbose)
		fprintf(stderr, "  engine: %s\n", msg);
}

/* Say why a point fails; the point is counted once, by its caller. */
static void say(const char *fmt, ...)
{
	va_list ap;

	fputs("FAIL ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------ models */

static u64 tag_of(u32 f, u64 blk, u32 ver)
{
	return sxs_tag(f, blk, ver);
}

static void m_write(struct fl_state *m, int f, u64 blk, u64 tag)
{
	m->tag[f][blk] = tag;
	if ((blk + 1) * BS > m->size[f])
		m->size[f] = (blk + 1) * BS;
}

static void m_trunc(struct fl_state *m, int f, u64 size)
{
	u64 i;

	for (i = sx_howmany(size, BS); i < MAXB; i++)
		m->tag[f][i] = 0;
	m->size[f] = size;
}

static bool m_same(const struct fl_state *x, const struct fl_state *y)
{
	int f;

	for (f = 0; f < NF; f++) {
		if (x->exists[f] != y->exists[f])
			return false;
		if (!x->exists[f])
			continue;
		if (x->size[f] != y->size[f] ||
		    memcmp(x->tag[f], y->tag[f], sx_howmany(x->size[f], BS) * sizeof(u64)))
			return false;
	}
	return true;
}

/* How far @x is from @y: files that differ in existence or size, and blocks. */
static u64 m_distance(const struct fl_state *x, const struct fl_state *y)
{
	u64 d = 0, b;
	int f;

	for (f = 0; f < NF; f++) {
		if (x->exists[f] != y->exists[f] || x->size[f] != y->size[f])
			d += MAXB;
		for (b = 0; b < MAXB; b++)
			d += x->tag[f][b] != y->tag[f][b];
	}
	return d;
}

/* A line saying where @x and @y first differ. */
static void m_diff(const struct fl_state *x, const struct fl_state *y, char *buf, size_t len)
{
	u64 b;
	int f;

	for (f = 0; f < NF; f++) {
		if (x->exists[f] != y->exists[f]) {
			snprintf(buf, len, "%s %s", fname[f],
				 x->exists[f] ? "exists" : "is missing");
			return;
		}
		if (!x->exists[f])
			continue;
		if (x->size[f] != y->size[f]) {
			snprintf(buf, len, "%s size %llu, model %llu", fname[f],
				 (unsigned long long)x->size[f], (unsigned long long)y->size[f]);
			return;
		}
		for (b = 0; b < sx_howmany(x->size[f], BS); b++) {
			if (x->tag[f][b] != y->tag[f][b]) {
				snprintf(buf, len, "%s block %llu tag %llx, model %llx", fname[f],
					 (unsigned long long)b, (unsigned long long)x->tag[f][b],
					 (unsigned long long)y->tag[f][b]);
				return;
			}
		}
	}
	snprintf(buf, len, "same");
}

/* Print every file of @x next to the model @y (SX_TEST_VERBOSE). */
static void m_dump(const struct fl_state *x, const struct fl_state *y)
{
	u64 b;
	int f;

	for (f = 0; f < NF; f++) {
		fprintf(stderr, "  %s: exists %d/%d size %llu/%llu\n", fname[f], x->exists[f],
			y->exists[f], (unsigned long long)x->size[f],
			(unsigned long long)y->size[f]);
		for (b = 0; b < MAXB; b++)
			if (x->tag[f][b] != y->tag[f][b])
				fprintf(stderr, "    block %llu: %llx, model %llx\n",
					(unsigned long long)b, (unsigned long long)x->tag[f][b],
					(unsigned long long)y->tag[f][b]);
	}
}

static int count_names(void *arg, const char *name, u64 ino)
{
	int *n = arg, f;

	for (f = 0; f < NF; f++)
		if (!strcmp(name, fname[f]))
			break;
	*n += f < NF ? 1 : 100;
	return 0;
}

/*
 * What @mp shows of a, b and c (and that they are the only names): 0, or
 * the engine's error.
 */
static int snap(struct sx_mount *mp, struct fl_state *s)
{
	static u64 buf[MAXB * BS / 8];
	struct sx_stat st;
	int f, fd, error, names = 0, nexist = 0;
	s64 n;
	u64 b;

	memset(s, 0, sizeof(*s));
	for (f = 0; f < NF; f++) {
		error = sx_open(mp, fname[f], &fd);
		if (error == -ENOENT)
			continue;
		if (error)
			return error;
		s->exists[f] = true;
		nexist++;
		error = sx_fstat(mp, fd, &st);
		if (!error && st.st_size > MAXB * BS)
			error = -EFBIG;
		if (!error) {
			n = sx_pread(mp, fd, buf, st.st_size, 0);
			if (n != (s64)st.st_size)
				error = n < 0 ? (int)n : -EIO;
		}
		if (error) {
			sx_close(mp, fd);
			return error;
		}
		s->size[f] = st.st_size;
		for (b = 0; b < sx_howmany(st.st_size, BS); b++) {
			const u64 *w = buf + b * (BS / 8);
			u64 words = sx_min((u64)BS, st.st_size - b * BS) / 8, i;

			for (i = 1; i < words && w[i] == w[0]; i++)
				;
			s->tag[f][b] = i == words ? w[0] : ~0ull;
		}
		error = sx_close(mp, fd);
		if (error)
			return error;
	}
	error = sx_readdir(mp, count_names, &names);
	if (error)
		return error;
	return names == nexist ? 0 : -EEXIST;
}

/* ------------------------------------------------------------ steps */

static int st_open(struct fl_run *r, const struct fl_step *s)
{
	int f, error;

	for (f = 0; f < NF; f++) {
		if (r->fd[f] >= 0 || !(s->a1 & (1u << f)))
			continue;
		error = sx_open(r->mp, fname[f], &r->fd[f]);
		if (error) {
			r->fd[f] = -1;
			return error;
		}
	}
	return 0;
}

static int st_create(struct fl_run *r, const struct fl_step *s)
{
	int error = sx_create(r->mp, fname[s->f1], SX_IFREG | 0644, &r->fd[s->f1]);

	if (error)
		r->fd[s->f1] = -1;
	return error;
}

static void m_create(struct fl_state *m, const struct fl_step *s)
{
	m->exists[s->f1] = true;
	m_trunc(m, s->f1, 0);
}

/* Swap blocks [a1, +a3) of f1 with [a2, +a3) of f2; a3 0: TO_EOF from a1, a2. */
static int st_swap(struct fl_run *r, const struct fl_step *s)
{
	struct file_swap_range fsr;

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = r->fd[s->f1];
	fsr.file1_offset = (s64)(s->a1 * BS);
	fsr.file2_offset = (s64)(s->a2 * BS);
	fsr.length = (s64)(s->a3 * BS);
	fsr.flags = s->flags64 | (s->a3 ? 0 : FILE_SWAP_RANGE_TO_EOF);
	return sx_swap_file_range(r->mp, r->fd[s->f2], &fsr);
}

static void m_swap(struct fl_state *m, const struct fl_step *s)
{
	u64 n = s->a3, i, t, s1, s2;

	if (!n) {
		/* TO_EOF from offset 0 of both: the files trade contents and sizes */
		s1 = m->size[s->f1];
		s2 = m->size[s->f2];
		n = sx_max(sx_howmany(s1, BS), sx_howmany(s2, BS));
		m->size[s->f1] = s2;
		m->size[s->f2] = s1;
	}
	for (i = 0; i < n; i++) {
		t = m->tag[s->f1][s->a1 + i];
		m->tag[s->f1][s->a1 + i] = m->tag[s->f2][s->a2 + i];
		m->tag[s->f2][s->a2 + i] = t;
	}
}

/* f1 (created empty) becomes a clone of f2. */
static int st_clone(struct fl_run *r, const struct fl_step *s)
{
	return sx_clone(r->mp, r->fd[s->f1], r->fd[s->f2]);
}

static void m_clone(struct fl_state *m, const struct fl_step *s)
{
	m->size[s->f1] = m->size[s->f2];
	memcpy(m->tag[s->f1], m->tag[s->f2], sizeof(m->tag[0]));
}

/* Write blocks [a1, a2) of f1 with version a3's tags. */
static int write_blocks(struct sx_mount *mp, int fd, u32 f, u64 from, u64 to, u32 ver)
{
	u64 buf[BS / 8], b, i;
	s64 n;

	for (b = from; b < to; b++) {
		for (i = 0; i < BS / 8; i++)
			buf[i] = tag_of(f, b, ver);
		n = sx_pwrite(mp, fd, buf, BS, b * BS);
		if (n != BS)
			return n < 0 ? (int)n : -EIO;
	}
	return 0;
}

/* Write blocks [a1, a2) of f1 with version a3's tags, in one call. */
static int st_write(struct fl_run *r, const struct fl_step *s)
{
	u64 len = (s->a2 - s->a1) * BS, b, i;
	u64 *buf = malloc(len);
	s64 n;

	for (b = s->a1; b < s->a2; b++)
		for (i = 0; i < BS / 8; i++)
			buf[(b - s->a1) * (BS / 8) + i] = tag_of((u32)s->f1, b, (u32)s->a3);
	n = sx_pwrite(r->mp, r->fd[s->f1], buf, len, s->a1 * BS);
	free(buf);
	if (n != (s64)len)
		return n < 0 ? (int)n : -EIO;
	return 0;
}

static void m_write_blocks(struct fl_state *m, int f, u64 from, u64 to, u32 ver)
{
	u64 b;

	for (b = from; b < to; b++)
		m_write(m, f, b, tag_of((u32)f, b, ver));
}

static void m_st_write(struct fl_state *m, const struct fl_step *s)
{
	m_write_blocks(m, s->f1, s->a1, s->a2, (u32)s->a3);
}

static int st_punch(struct fl_run *r, const struct fl_step *s)
{
	return sx_punch(r->mp, r->fd[s->f1], s->a1 * BS, (s->a2 - s->a1) * BS);
}

static void m_punch(struct fl_state *m, const struct fl_step *s)
{
	u64 b;

	for (b = s->a1; b < s->a2; b++)
		m->tag[s->f1][b] = 0;
}

static int st_trunc(struct fl_run *r, const struct fl_step *s)
{
	return sx_truncate(r->mp, r->fd[s->f1], s->a1);
}

static void m_st_trunc(struct fl_state *m, const struct fl_step *s)
{
	m_trunc(m, s->f1, s->a1);
}

/* Unlink f1, which stays open: its last close, at the end, frees it. */
static int st_unlink(struct fl_run *r, const struct fl_step *s)
{
	return sx_unlink(r->mp, fname[s->f1]);
}

static void m_unlink(struct fl_state *m, const struct fl_step *s)
{
	m->exists[s->f1] = false;
}

static int st_fsync(struct fl_run *r, const struct fl_step *s)
{
	return sx_fsync(r->mp, r->fd[s->f1]);
}

static int st_sync(struct fl_run *r, const struct fl_step *s)
{
	return sx_sync(r->mp);
}

static int st_upd_start(struct fl_run *r, const struct fl_step *s)
{
	return sx_update_start(r->mp, r->fd[s->f1], &r->upd);
}

/* The update's writes into the clone: blocks [a1, a2) at version 2, then size a3. */
static int st_upd_write(struct fl_run *r, const struct fl_step *s)
{
	int error;

	error = write_blocks(r->mp, r->upd.su_fd_tmp, (u32)s->f1, s->a1, s->a2, 2);
	if (!error && s->a3)
		error = sx_truncate(r->mp, r->upd.su_fd_tmp, s->a3);
	return error;
}

static int st_upd_commit(struct fl_run *r, const struct fl_step *s)
{
	int error = sx_update_commit(r->mp, &r->upd, 0);

	/* a commit whose swap went through but whose clone's close failed */
	if (error && !sx_update_active(&r->upd))
		r->err_new = true;
	return error;
}

/* The model of the commit: what the clone got in the write step (@s's args). */
static void m_upd_commit(struct fl_state *m, const struct fl_step *s)
{
	m_write_blocks(m, s->f1, s->a1, s->a2, 2);
	if (s->a3)
		m_trunc(m, s->f1, s->a3);
}

/* ------------------------------------------------------------ workloads */

#define AB		3u		/* open a and b */

static const struct fl_step swap_steps[] = {
	{ "open", st_open, NULL, 0, .a1 = AB },
	{ "atomic swap", st_swap, m_swap, FL_DURABLE, 0, 1, 4, 2, 32 },
	{ "atomic swap TO_EOF", st_swap, m_swap, FL_DURABLE, 1, 0, 0, 0, 0 },
};

static const struct fl_step nonatomic_steps[] = {
	{ "open", st_open, NULL, 0, .a1 = AB },
	{ "non-atomic swap", st_swap, m_swap, FL_DURABLE | FL_PARTIAL, 0, 1, 4, 2, 32,
	  FILE_SWAP_RANGE_NONATOMIC },
};

static const struct fl_step clone_steps[] = {
	{ "open", st_open, NULL, 0, .a1 = AB },
	{ "create c", st_create, m_create, 0, 2 },
	{ "clone a to c", st_clone, m_clone, FL_PARTIAL, 2, 0 },
	{ "write c (cow)", st_write, m_st_write, FL_PARTIAL, 2, .a1 = 3, .a2 = 6, .a3 = 3 },
	{ "write a (cow)", st_write, m_st_write, FL_PARTIAL, 0, .a1 = 10, .a2 = 12, .a3 = 3 },
	{ "fsync c", st_fsync, NULL, FL_DURABLE, 2 },
	{ "punch c", st_punch, m_punch, FL_PARTIAL, 2, .a1 = 8, .a2 = 30 },
	{ "truncate a", st_trunc, m_st_trunc, FL_MAYBE_NEW, 0, .a1 = 20 * BS + 100 },
	{ "unlink b", st_unlink, m_unlink, 0, 1 },
	{ "sync", st_sync, NULL, FL_DURABLE },
};

static const struct fl_step update_steps[] = {
	{ "open", st_open, NULL, 0, .a1 = AB },
	{ "update start", st_upd_start, NULL, 0, 0 },
	{ "update writes", st_upd_write, NULL, 0, 0, .a1 = 16, .a2 = 24, .a3 = 60 * BS - 50 },
	{ "update commit", st_upd_commit, m_upd_commit, 0, 0, .a1 = 16, .a2 = 24,
	  .a3 = 60 * BS - 50 },
	{ "sync", st_sync, NULL, FL_DURABLE },
};

/* The files of the images: a and b written interleaved, one block per extent. */
static struct sx_bdev *make_image(struct fl_state *m)
{
	struct sx_bdev *bd = sxs_mkimg(IMG, BS, LOGBLOCKS, true);
	struct sx_mount *mp;
	int fd[2], f;
	u64 b;

	memset(m, 0, sizeof(*m));
	VERIFY(sx_mount(bd, NULL, &mp) == 0);
	for (f = 0; f < 2; f++) {
		VERIFY(sx_create(mp, fname[f], SX_IFREG | 0644, &fd[f]) == 0);
		m->exists[f] = true;
	}
	for (b = 0; b < NA; b++) {
		for (f = 0; f < 2; f++) {
			if (b >= (f ? NB : NA) || (b + 3 * f) % (f ? 5 : 7) == 3)
				continue;
			VERIFY(write_blocks(mp, fd[f], (u32)f, b, b + 1, 1) == 0);
			m_write(m, f, b, tag_of((u32)f, b, 1));
		}
	}
	VERIFY(sx_truncate(mp, fd[0], NA * BS) == 0);
	VERIFY(sx_truncate(mp, fd[1], NB * BS - 300) == 0);
	m_trunc(m, 0, NA * BS);
	m_trunc(m, 1, NB * BS - 300);
	for (f = 0; f < 2; f++)
		VERIFY(sx_close(mp, fd[f]) == 0);
	VERIFY(sx_unmount(mp) == 0);
	return bd;
}

/* The models after each step of @wl, and what its FL_PARTIAL steps may leave. */
static void wl_models(struct fl_wl *wl)
{
	int i;
	u64 k, n;

	for (i = 0; i < wl->nsteps; i++) {
		const struct fl_step *s = &wl->steps[i];

		wl->st[i + 1] = wl->st[i];
		if (s->model)
			s->model(&wl->st[i + 1], s);
		if (!(s->flags & FL_PARTIAL))
			continue;
		/* the first k blocks done, for each k short of the whole */
		if (s->fn == st_write || s->fn == st_punch)
			n = s->a2 - s->a1;
		else if (s->fn == st_clone)
			n = sx_howmany(wl->st[i].size[s->f2], BS);
		else
			n = s->a3;
		wl->npart[i] = (u32)n - 1;
		wl->part[i] = calloc(n, sizeof(struct fl_state));
		for (k = 1; k < n; k++) {
			struct fl_state *m = &wl->part[i][k - 1];
			struct fl_step ps = *s;

			*m = wl->st[i];
			if (s->fn == st_clone) {
				/* each piece grows the clone's size over it */
				memcpy(m->tag[s->f1], m->tag[s->f2], k * sizeof(u64));
				m->size[s->f1] = k * BS;
				continue;
			}
			if (s->fn == st_write || s->fn == st_punch)
				ps.a2 = s->a1 + k;
			else
				ps.a3 = k;
			s->model(m, &ps);
		}
	}
}

/* ------------------------------------------------------------ one point */

static int run_steps(struct fl_wl *wl, struct fl_run *r, const char *what, int *failed,
		     int *durable)
{
	int i, error = 0;

	*failed = -1;
	*durable = 0;
	for (i = 0; i < wl->nsteps; i++) {
		error = wl->steps[i].fn(r, &wl->steps[i]);
		if (error) {
			*failed = i;
			return error;
		}
		if (wl->steps[i].flags & FL_DURABLE)
			*durable = i + 1;
		if (sx_shutdown_state(r->mp, NULL, 0)) {
			say("%s: step \"%s\" succeeded on a mount that shut down", what,
			    wl->steps[i].name);
			r->bad = true;
			*failed = i;
			return -EIO;
		}
	}
	return 0;
}

/* Close what the steps left open: an update is cancelled. */
static void end_steps(struct fl_run *r)
{
	int f;

	if (sx_update_active(&r->upd))
		sx_update_cancel(r->mp, &r->upd);
	for (f = 0; f < NF; f++)
		if (r->fd[f] >= 0)
			sx_close(r->mp, r->fd[f]);
}

/* The states a remount may show. */
struct fl_allow {
	const struct fl_state *s[MAXALLOW];
	int		n;
};

static void allow(struct fl_allow *a, const struct fl_state *s)
{
	VERIFY(a->n < MAXALLOW);
	a->s[a->n++] = s;
}

/* What a step that failed may have left: the state before, or more. */
static void allow_failed(struct fl_allow *a, struct fl_wl *wl, int i, bool new_too)
{
	u32 k;

	allow(a, &wl->st[i]);
	/* (a step done in pieces may fail after its last one) */
	if (new_too || (wl->steps[i].flags & (FL_MAYBE_NEW | FL_PARTIAL)))
		allow(a, &wl->st[i + 1]);
	for (k = 0; k < wl->npart[i]; k++)
		allow(a, &wl->part[i][k]);
}

/* Which allowed state @mp shows: its index, or -1 having said why. */
static int match(struct sx_mount *mp, const struct fl_allow *a, const char *what)
{
	struct fl_state now;
	char diff[160] = "";
	int i, best, error;

	error = snap(mp, &now);
	SXC_CHECK(error == 0, "%s: reading the files: %s", what, sx_strerror(error));
	for (i = 0; i < a->n; i++)
		if (m_same(&now, a->s[i]))
			return i;
	for (i = 1, best = 0; i < a->n; i++)
		if (m_distance(&now, a->s[i]) < m_distance(&now, a->s[best]))
			best = i;
	m_diff(&now, a->s[best], diff, sizeof(diff));
	if (verbose)
		m_dump(&now, a->s[best]);
	SXC_CHECK(0, "%s: the files match none of %d allowed states (nearest, %d: %s)", what,
		  a->n, best, diff);
	return -1;
}

static int remount_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	return match(mp, arg, what) < 0 ? -1 : 0;
}

/* Allocations live between points: the program's own, with nothing of a mount. */
static s64 live_base;

static void leak_base(void)
{
	struct sx_alloc_stats as;

	sx_rcu_barrier();
	sx_alloc_get_stats(&as);
	live_base = as.as_live;
}

/*
 * The fault of a point.  The test's own look at the files (reads and the
 * engine's allocations for them) must neither strike nor move it, so it
 * pauses the fault and resumes it with the count where it was.
 */
struct fl_fault {
	struct sx_crashdev *cd;
	enum fl_kind	kind;
	u64		n;		/* the n-th from arming fails */
	bool		forever;
	u64		used;		/* I/Os or allocations of the kind counted before a pause */
	u64		base;		/* the counter when armed or resumed */
};

/* The counter of @ft's kind: device I/Os, or allocations of the whole program. */
static u64 fault_counter(const struct fl_fault *ft)
{
	struct sx_crashdev_stats cs;
	struct sx_alloc_stats as;

	if (ft->kind == FL_ALLOC) {
		sx_alloc_get_stats(&as);
		return as.as_calls;
	}
	sx_crashdev_get_stats(ft->cd, &cs);
	return ft->kind == FL_READ ? cs.cs_reads : ft->kind == FL_WRITE ? cs.cs_writes :
	       cs.cs_flushes;
}

/* Fail the @n-th from now (0: none), once or @forever. */
static void arm(const struct fl_fault *ft, u64 n, bool forever)
{
	static const enum sx_io_kind io[] = { SX_IO_READ, SX_IO_WRITE, SX_IO_FLUSH };

	if (ft->kind == FL_ALLOC)
		sx_alloc_fail(n, forever);
	else
		sx_crashdev_fail(ft->cd, io[ft->kind], n, forever, -EIO);
}

static void fault_start(struct fl_fault *ft)
{
	ft->used = 0;
	ft->base = fault_counter(ft);
	arm(ft, ft->n, ft->forever);
}

static void fault_pause(struct fl_fault *ft)
{
	arm(ft, 0, false);
	ft->used += fault_counter(ft) - ft->base;
}

static void fault_resume(struct fl_fault *ft)
{
	ft->base = fault_counter(ft);
	if (ft->used < ft->n)
		arm(ft, ft->n - ft->used, ft->forever);
	else if (ft->forever)
		arm(ft, 1, true);
}

/*
 * Run @wl with the @n-th I/O or allocation of @kind failing, once or
 * @forever, and check what it left.  Returns whether the fault struck.
 */
static bool point(struct fl_wl *wl, enum fl_kind kind, u64 n, bool forever)
{
	struct sx_bdev *img = sxt_bdev_copy(wl->img), *cbd;
	struct fl_fault ft = { .kind = kind, .n = n, .forever = forever };
	struct sx_alloc_stats a0, a1;
	struct sx_crashdev_stats cs;
	struct fl_allow allowed = { .n = 0 }, here = { .n = 0 };
	struct fl_run r;
	char what[160], reason[128];
	int error, uerror = 0, failed = -1, durable = 0, live = -1, f, shut = 0;
	bool hit, ok = true;

	snprintf(what, sizeof(what), "%s: %s %llu %s", wl->name, kind_name[kind],
		 (unsigned long long)n, forever ? "forever" : "once");
	memset(&r, 0, sizeof(r));
	for (f = 0; f < NF; f++)
		r.fd[f] = -1;
	VERIFY(sx_crashdev_create(img, n, &cbd, &ft.cd) == 0);
	memset(&watch, 0, sizeof(watch));
	watch.cd = ft.cd;
	sx_alloc_get_stats(&a0);

	fault_start(&ft);
	error = sx_mount(cbd, &(struct sx_mount_opts){ .mo_flags = wl->mflags }, &r.mp);
	if (error) {
		r.mp = NULL;
		failed = -2;
	} else {
		error = run_steps(wl, &r, what, &failed, &durable);
	}
	if (r.mp) {
		fault_pause(&ft);
		shut = sx_shutdown_state(r.mp, reason, sizeof(reason));
		if (shut && !reason[0]) {
			say("%s: shut down with no reason", what);
			ok = false;
		}
		if (shut && sx_sync(r.mp) == 0) {
			say("%s: sx_sync() succeeded after the shutdown", what);
			ok = false;
		}
		if (!shut) {
			/* what the files show now: the last state, or what a failed step left */
			if (failed < 0)
				allow(&here, &wl->st[wl->nsteps]);
			else if (r.err_new)
				allow(&here, &wl->st[failed + 1]);
			else
				allow_failed(&here, wl, failed, false);
			live = match(r.mp, &here, what);
			if (live < 0)
				ok = false;
		}
		fault_resume(&ft);
		end_steps(&r);
		uerror = sx_unmount(r.mp);
	}
	sx_crashdev_get_stats(ft.cd, &cs);
	hit = kind == FL_ALLOC ? (sx_alloc_get_stats(&a1), a1.as_failed != a0.as_failed) :
		cs.cs_injected_errors != 0;
	arm(&ft, 0, false);
	watch.cd = NULL;

	if (watch.seen) {
		wl->shutdowns[kind][forever]++;
		if (cs.cs_reads != watch.at.cs_reads || cs.cs_writes != watch.at.cs_writes ||
		    cs.cs_flushes != watch.at.cs_flushes) {
			say("%s: I/O after the shutdown: reads %llu -> %llu, writes %llu -> %llu, "
			    "flushes %llu -> %llu", what,
			    (unsigned long long)watch.at.cs_reads, (unsigned long long)cs.cs_reads,
			    (unsigned long long)watch.at.cs_writes,
			    (unsigned long long)cs.cs_writes,
			    (unsigned long long)watch.at.cs_flushes,
			    (unsigned long long)cs.cs_flushes);
			ok = false;
		}
	} else if (hit && (kind == FL_WRITE || kind == FL_FLUSH)) {
		say("%s: a failed device %s did not shut the mount down", what, kind_name[kind]);
		ok = false;
	}
	sx_bdev_destroy(cbd);

	/* what a remount must show */
	if (failed == -2) {
		allow(&allowed, &wl->st[0]);
	} else if (live >= 0 && !uerror && !watch.seen) {
		/* a clean unmount keeps what the mount showed */
		allow(&allowed, here.s[live]);
	} else {
		int hi = failed < 0 ? wl->nsteps : failed, i;

		for (i = durable; i <= hi; i++)
			allow(&allowed, &wl->st[i]);
		if (failed >= 0)
			allow_failed(&allowed, wl, failed, true);
	}
	if (verbose)
		fprintf(stderr, "%s: %s, failed step %d (%s), unmount %d, shutdown %d, "
			"%d allowed\n", what, hit ? "hit" : "not hit", failed,
			failed >= 0 ? wl->steps[failed].name : failed == -2 ? "mount" : "-",
			uerror, watch.seen, allowed.n);
	if (sxc_recover_verify(img, 0, remount_ok, &allowed, what) < 0)
		ok = false;
	/* every allocation of the run and of the remounts is freed (inodes after RCU) */
	sx_rcu_barrier();
	sx_alloc_get_stats(&a1);
	if (a1.as_live != live_base) {
		say("%s: %lld allocations not freed", what, (long long)(a1.as_live - live_base));
		ok = false;
		live_base = a1.as_live;
	}
	if (r.bad)
		ok = false;
	if (!ok)
		fprintf(stderr, "  (%s: step %d %s, error %s, unmount %s; last engine error: %s)\n",
			what, failed,
			failed >= 0 ? wl->steps[failed].name : failed == -2 ? "mount" : "-",
			sx_strerror(error), sx_strerror(uerror), watch.last);
	sxc_tally(ok ? 0 : -1);
	sx_bdev_destroy(img);
	return hit;
}

/* ------------------------------------------------------------ the loops */

/* What @wl does without a fault: device I/O and allocations; it must end right. */
static void wl_count(struct fl_wl *wl)
{
	struct sx_bdev *img = sxt_bdev_copy(wl->img), *cbd;
	struct sx_alloc_stats a0, a1;
	struct sx_crashdev_stats cs;
	struct sx_crashdev *cd;
	struct fl_run r;
	int failed, durable, f;

	/* the checked run with no fault armed */
	leak_base();
	point(wl, FL_ALLOC, 0, false);
	memset(&r, 0, sizeof(r));
	for (f = 0; f < NF; f++)
		r.fd[f] = -1;
	VERIFY(sx_crashdev_create(img, 1, &cbd, &cd) == 0);
	sx_alloc_get_stats(&a0);
	VERIFY(sx_mount(cbd, &(struct sx_mount_opts){ .mo_flags = wl->mflags }, &r.mp) == 0);
	VERIFY(run_steps(wl, &r, wl->name, &failed, &durable) == 0);
	end_steps(&r);
	VERIFY(sx_unmount(r.mp) == 0);
	sx_alloc_get_stats(&a1);
	sx_crashdev_get_stats(cd, &cs);
	wl->count[FL_READ] = cs.cs_reads;
	wl->count[FL_WRITE] = cs.cs_writes;
	wl->count[FL_FLUSH] = cs.cs_flushes;
	wl->count[FL_ALLOC] = a1.as_calls - a0.as_calls;
	sx_bdev_destroy(cbd);
	sx_bdev_destroy(img);
	leak_base();
}

/* N = 1, 1 + step, ... until the workload no longer reaches the fault. */
static void loop(struct fl_wl *wl, enum fl_kind kind, bool forever)
{
	u64 budget = sxc_pick(FL_POINTS_QUICK, FL_POINTS, 0);
	u64 step = budget ? sx_max(1ull, wl->count[kind] / budget) : 1;
	u64 n, limit = 4 * wl->count[kind] + 100;

	wl->step[kind] = step;
	for (n = 1;; n += step) {
		wl->points[kind][forever]++;
		if (!point(wl, kind, n, forever))
			break;
		if (n > limit) {
			sxc_fail("%s: %s %llu: still failing past %llu, the fault-free count",
				 wl->name, kind_name[kind], (unsigned long long)n,
				 (unsigned long long)wl->count[kind]);
			break;
		}
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* SX_FAULT_WORKLOADS='word ...': the workloads whose name holds one of the words */
static bool selected(const char *name)
{
	const char *only = getenv("SX_FAULT_WORKLOADS");
	char word[32];
	int n;

	if (!only)
		return true;
	while (sscanf(only, " %31s%n", word, &n) == 1) {
		if (strstr(name, word))
			return true;
		only += n;
	}
	return false;
}

static void run_wl(struct fl_wl *wl)
{
	const char *one = getenv("SX_FAULT_POINT");
	double t0 = now_s();
	char name[32], kind[8], mode[8];
	unsigned long long n;
	int k;

	if (!selected(wl->name))
		return;
	wl_models(wl);
	leak_base();
	/* SX_FAULT_POINT="clone alloc 871 once": that point alone */
	if (one && sscanf(one, "%31s %7s %llu %7s", name, kind, &n, mode) == 4) {
		for (k = 0; k < FL_NKINDS; k++)
			if (!strcmp(name, wl->name) && !strcmp(kind, kind_name[k]))
				point(wl, k, n, !strcmp(mode, "forever"));
		return;
	}
	wl_count(wl);
	for (k = 0; k < FL_NKINDS; k++) {
		loop(wl, k, false);
		loop(wl, k, true);
	}
	for (k = 0; k < FL_NKINDS; k++)
		printf("%-15s %-5s %7llu %5llu %6llu %8llu %10llu %10llu\n", wl->name, kind_name[k],
		       (unsigned long long)wl->count[k], (unsigned long long)wl->step[k],
		       (unsigned long long)wl->points[k][0], (unsigned long long)wl->points[k][1],
		       (unsigned long long)wl->shutdowns[k][0],
		       (unsigned long long)wl->shutdowns[k][1]);
	printf("%-15s %.1fs\n", wl->name, now_s() - t0);
	fflush(stdout);
}

/*
 * The image a power cut leaves in step @cut of @src's steps: each write of
 * that step cut in turn (the volatile writes kept), from its middle on and
 * then from its start, until recovery has unfinished intents to finish
 * (an update's commit leaves them early now that the clone's free, late
 * in it, needs none).  Every transaction is
 * its own record (LOG_EACH), so the cut falls inside the step's chain.
 * @wl gets the image, and as its one state what recovery makes of it.
 */
static void make_crashed(struct fl_wl *wl, const struct fl_wl *src, int cut)
{
	static const struct sx_mount_opts each = { .mo_flags = SX_MOUNT_LOG_EACH };
	struct sx_crashdev_stats cs;
	struct sx_recovery_stats rs;
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_mount *mp;
	struct fl_run r;
	u64 w[MAXSTEPS + 1], at, mid;
	bool wrap;
	int i, f;

	/* the writes before and after the step, uncut */
	img = sxt_bdev_copy(src->img);
	VERIFY(sx_crashdev_create(img, 1, &cbd, &cd) == 0);
	memset(&r, 0, sizeof(r));
	for (f = 0; f < NF; f++)
		r.fd[f] = -1;
	VERIFY(sx_mount(cbd, &each, &r.mp) == 0);
	for (i = 0; i <= cut; i++) {
		sx_crashdev_get_stats(cd, &cs);
		w[i] = cs.cs_writes;
		VERIFY(src->steps[i].fn(&r, &src->steps[i]) == 0);
	}
	sx_crashdev_get_stats(cd, &cs);
	w[cut + 1] = cs.cs_writes;
	end_steps(&r);
	VERIFY(sx_unmount(r.mp) == 0);
	sx_bdev_destroy(cbd);
	sx_bdev_destroy(img);

	mid = (w[cut] + w[cut + 1]) / 2;
	for (at = (w[cut] + w[cut + 1]) / 2 + 1, wrap = false; !wrap || at <= mid; at++) {
		if (at > w[cut + 1]) {
			/* none from the middle on: the first half then */
			wrap = true;
			at = w[cut] + 1;
		}
		wl->img = sxt_bdev_copy(src->img);
		cbd = sxc_cut_dev(wl->img, at, at, SX_CRASH_KEEP, NULL);
		memset(&r, 0, sizeof(r));
		for (f = 0; f < NF; f++)
			r.fd[f] = -1;
		VERIFY(sx_mount(cbd, &each, &r.mp) == 0);
		for (i = 0; i <= cut; i++)
			if (src->steps[i].fn(&r, &src->steps[i]))
				break;
		end_steps(&r);
		sx_unmount(r.mp);
		sx_bdev_destroy(cbd);

		/* what recovery makes of it, on a copy */
		img = sxt_bdev_copy(wl->img);
		VERIFY(sx_mount(img, NULL, &mp) == 0);
		sx_get_recovery_stats(mp, &rs);
		VERIFY(snap(mp, &wl->st[0]) == 0);
		VERIFY(sx_unmount(mp) == 0);
		sx_bdev_destroy(img);
		/*
		 * A step whose transactions are each complete (a punch of small
		 * extents, freed in the transactions that unmap them) leaves
		 * none anywhere: its middle cut then, records to replay.
		 */
		if (rs.rs_intents || (wrap && at == mid)) {
			printf("%s: %s cut at write %llu of %llu-%llu: %llu records, "
			       "%llu intents to finish\n", wl->name, src->steps[cut].name,
			       (unsigned long long)at, (unsigned long long)w[cut] + 1,
			       (unsigned long long)w[cut + 1], (unsigned long long)rs.rs_records,
			       (unsigned long long)rs.rs_intents);
			return;
		}
		sx_bdev_destroy(wl->img);
	}
	fprintf(stderr, "%s: no cut of %s leaves an intent\n", wl->name, src->steps[cut].name);
	abort();
}

int main(void)
{
	static struct fl_wl wls[] = {
		{ "swap", NULL, swap_steps, ARRAY_SIZE(swap_steps) },
		{ "nonatomic", NULL, nonatomic_steps, ARRAY_SIZE(nonatomic_steps) },
		{ "clone", NULL, clone_steps, ARRAY_SIZE(clone_steps) },
		{ "update", NULL, update_steps, ARRAY_SIZE(update_steps) },
		/* recovery of an image cut in a step of the workload above them */
		{ "recover-swap" },
		{ "recover-update" },
		{ "recover-punch" },
		{ "recover-clone" },
		/*
		 * The two swaps again with forces in flight: each of their
		 * forces flies (the clone's and the update's carry manifests
		 * or remaps and never do), so a fault strikes a flight's
		 * flush, its completion and the allocations around it.
		 */
		{ "swap-overlap", NULL, swap_steps, ARRAY_SIZE(swap_steps), SX_MOUNT_OVERLAP_FORCES },
		{ "nonatomic-overlap", NULL, nonatomic_steps, ARRAY_SIZE(nonatomic_steps),
		  SX_MOUNT_OVERLAP_FORCES },
	};
	/* which workload each recovery workload cuts, and in which step */
	static const struct { int wl, from, step; } rec[] = {
		{ 4, 0, 1 }, { 5, 3, 3 }, { 6, 2, 6 }, { 7, 2, 2 },
	};
	struct fl_state m0;
	struct sx_bdev *base;
	double t0 = now_s();
	u32 i, k;

	sxc_start();
	verbose = getenv("SX_TEST_VERBOSE") != NULL;
	sx_set_log_callback(fl_log, &watch);
	base = make_image(&m0);
	for (i = 0; i < ARRAY_SIZE(wls); i++) {
		wls[i].img = base;
		wls[i].st[0] = m0;
	}
	for (i = 0; i < ARRAY_SIZE(rec); i++)
		if (selected(wls[rec[i].wl].name))
			make_crashed(&wls[rec[i].wl], &wls[rec[i].from], rec[i].step);
	printf("%-15s %-5s %7s %5s %6s %8s %10s %10s\n", "workload", "kind", "count", "step",
	       "once", "forever", "shut once", "shut ever");
	for (i = 0; i < ARRAY_SIZE(wls); i++)
		run_wl(&wls[i]);
	for (i = 0; i < ARRAY_SIZE(wls); i++) {
		for (k = 0; k < MAXSTEPS; k++)
			free(wls[i].part[k]);
		if (wls[i].img != base)
			sx_bdev_destroy(wls[i].img);
	}
	sx_bdev_destroy(base);
	printf("time %.1fs\n", now_s() - t0);
	return sxc_end();
}
