// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of names.
 *
 * A deterministic workload of name operations (create, create and keep
 * open, tmpfile, link of a tmpfile or of an unlinked open file, a second
 * name, rename to a new name and over an existing one, unlink, close of a
 * nameless file; syncs and checkpoints in between) runs on a crash-emulating
 * device on 1 KiB blocks, where the root directory holds three entries
 * inline, so the workload moves it between the inline and the B+tree form
 * again and again.  The power is cut at every device write, with the
 * volatile writes kept, dropped or torn.  After recovery:
 *   - the names (and which of them lead to the same file) equal the state
 *     after some operation between the last durable and the last committed;
 *   - every file without a name is gone (the unlinked list was processed):
 *     the free block count is exactly what the named files and the
 *     directory account for;
 *   - the checker is clean, and recovering again changes no byte.
 * A sample of the crashes is then repeated with a second power cut at every
 * write of the recovery itself, which must end in the same state.
 *
 * SX_CRASH_LEVEL=quick samples every 5th write; long adds seeds and
 * recovery crashes everywhere.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxcrash.h"
#include "inode.h"

#define NOPS		72
#define MAXN		48		/* names at most */
#define MAXOPEN		16		/* open descriptors at most */
#define IMG_SIZE	(4ull << 20)
#define BSIZE		1024

/* A name and the file (workload id) it leads to. */
struct nent {
	char	name[12];
	u32	fid;
};

/* The names after one operation. */
struct state {
	u32		n;
	struct nent	e[MAXN];
};

struct run {
	struct state	states[NOPS + 1];
	int		ncommitted;	/* last operation that may have reached the log */
	int		ndurable;	/* last operation known durable */
	int		error;		/* first error the workload saw */
};

/* An open descriptor of the workload. */
struct ofile {
	int	fd;
	u32	fid;
};

static u64 recovery_crash_points;
static struct sx_bdev *pristine;
static u64 pristine_free;

/* Index of @name in @st, or -1. */
static int st_find(const struct state *st, const char *name)
{
	u32 i;

	for (i = 0; i < st->n; i++)
		if (!strcmp(st->e[i].name, name))
			return (int)i;
	return -1;
}

/* Names of file @fid in @st. */
static u32 st_links(const struct state *st, u32 fid)
{
	u32 i, n = 0;

	for (i = 0; i < st->n; i++)
		n += st->e[i].fid == fid;
	return n;
}

/* Workload state that is not names: open files, counters. */
struct wl {
	struct sx_mount	*mp;
	u64		seed;
	u32		next_fid;
	u32		next_name;
	struct ofile	open[MAXOPEN];
	u32		nopen;
};

/* A fresh name. */
static void new_name(struct wl *w, char *buf)
{
	snprintf(buf, 12, "n%u", w->next_name++);
}

/* Keep @fd (file @fid) open. */
static void keep_open(struct wl *w, int fd, u32 fid)
{
	w->open[w->nopen].fd = fd;
	w->open[w->nopen].fid = fid;
	w->nopen++;
}

/* An open file with no name in @st, or -1. */
static int nameless_open(const struct wl *w, const struct state *st)
{
	u32 i;

	for (i = 0; i < w->nopen; i++)
		if (st_links(st, w->open[i].fid) == 0)
			return (int)i;
	return -1;
}

/*
 * One operation of the workload, changing @cur as the filesystem should
 * change; 0 or the error that stopped it.  Each changes the names in at
 * most one transaction.
 */
static int one_op(struct wl *w, int i, struct state *cur)
{
	struct sx_mount *mp = w->mp;
	u32 op = (u32)(sxt_rand(&w->seed) % 12), k;
	char name[12];
	int fd, error, o;

	/* steer the directory across the inline/B+tree boundary: grow, then shrink */
	if ((i / 12) % 2 == 0 && op >= 7 && op <= 9 && cur->n < 14)
		op = 0;
	if ((i / 12) % 2 == 1 && op <= 4 && cur->n > 1)
		op = 8;
	if (cur->n >= MAXN - 1 && op <= 4)
		op = 8;
	if (w->nopen >= MAXOPEN - 1 && (op == 1 || op == 2))
		op = 11;
	if (cur->n == 0 && op >= 4 && op <= 9)
		op = 0;

	switch (op) {
	case 0:		/* create, closed */
	case 1:		/* create, kept open */
		new_name(w, name);
		error = sx_create(mp, name, 0644, &fd);
		if (error)
			return error;
		snprintf(cur->e[cur->n].name, 12, "%s", name);
		cur->e[cur->n].fid = w->next_fid++;
		if (op == 1)
			keep_open(w, fd, cur->e[cur->n].fid);
		cur->n++;
		if (op == 0)
			return sx_close(mp, fd);
		return 0;
	case 2:		/* tmpfile */
		error = sx_open_tmpfile(mp, 0600, &fd);
		if (error)
			return error;
		keep_open(w, fd, w->next_fid++);
		return 0;
	case 3:		/* a nameless open file gets a name */
		o = nameless_open(w, cur);
		if (o < 0)
			return sx_sync(mp);
		new_name(w, name);
		error = sx_link(mp, w->open[o].fd, name);
		snprintf(cur->e[cur->n].name, 12, "%s", name);
		cur->e[cur->n].fid = w->open[o].fid;
		cur->n++;
		return error;
	case 4:		/* a second name */
		k = (u32)(sxt_rand(&w->seed) % cur->n);
		error = sx_open(mp, cur->e[k].name, &fd);
		if (error)
			return error;
		new_name(w, name);
		error = sx_link(mp, fd, name);
		snprintf(cur->e[cur->n].name, 12, "%s", name);
		cur->e[cur->n].fid = cur->e[k].fid;
		cur->n++;
		if (error)
			return error;
		return sx_close(mp, fd);
	case 5:		/* rename to a new name */
		k = (u32)(sxt_rand(&w->seed) % cur->n);
		new_name(w, name);
		error = sx_rename(mp, cur->e[k].name, name);
		snprintf(cur->e[k].name, 12, "%s", name);
		return error;
	case 6: {	/* rename over an existing name */
		u32 t = (u32)(sxt_rand(&w->seed) % cur->n);

		k = (u32)(sxt_rand(&w->seed) % cur->n);
		error = sx_rename(mp, cur->e[k].name, cur->e[t].name);
		if (k == t || cur->e[k].fid == cur->e[t].fid)
			return error;		/* two names of one file: no change */
		cur->e[t].fid = cur->e[k].fid;
		cur->e[k] = cur->e[--cur->n];
		return error;
	}
	case 7:
	case 8:
	case 9:		/* unlink */
		k = (u32)(sxt_rand(&w->seed) % cur->n);
		error = sx_unlink(mp, cur->e[k].name);
		cur->e[k] = cur->e[--cur->n];
		return error;
	case 10:	/* unlink a name of an open file: it lives on nameless */
		for (k = 0; k < cur->n; k++) {
			for (o = 0; o < (int)w->nopen; o++)
				if (w->open[o].fid == cur->e[k].fid)
					break;
			if (o < (int)w->nopen)
				break;
		}
		if (k == cur->n)
			return sx_sync(mp);
		error = sx_unlink(mp, cur->e[k].name);
		cur->e[k] = cur->e[--cur->n];
		return error;
	default:	/* close one (the last close of a nameless file frees it) */
		if (w->nopen == 0)
			return sx_sync(mp);
		o = (int)(sxt_rand(&w->seed) % w->nopen);
		error = sx_close(mp, w->open[o].fd);
		w->open[o] = w->open[--w->nopen];
		return error;
	}
}

/* Run the workload on @bd (mount included); record the states it reached. */
static void workload(struct sx_bdev *bd, u64 seed, struct run *r)
{
	struct wl w = { .seed = seed };
	struct state cur = { 0 };
	int i, error;

	memset(r, 0, sizeof(*r));
	r->error = sx_mount(bd, NULL, &w.mp);
	if (r->error)
		return;
	for (i = 1; i <= NOPS; i++) {
		struct state next = cur;

		error = one_op(&w, i, &next);
		/* a failed operation may still have committed */
		r->states[i] = next;
		r->ncommitted = i;
		if (error) {
			r->error = error;
			break;
		}
		cur = next;
		if (i % 4 == 0) {
			error = sx_sync(w.mp);
			if (error) {
				r->error = error;
				break;
			}
			r->ndurable = i;
		}
		if (i % 16 == 0) {
			error = sx_checkpoint(w.mp);
			if (error) {
				r->error = error;
				break;
			}
			r->ndurable = i;
		}
	}
	/* unmount closes what is open (freeing nameless files) and checkpoints */
	error = sx_unmount(w.mp);
	if (!r->error && !error)
		r->ndurable = r->ncommitted;
	if (!r->error)
		r->error = error;
}

/* What readdir finds. */
struct found {
	u32	n;
	char	name[MAXN + 1][12];
	u64	ino[MAXN + 1];
};

/* readdir callback: collect (fails on more names than any state has). */
static int found_cb(void *arg, const char *name, u64 ino)
{
	struct found *f = arg;

	if (f->n > MAXN || strlen(name) >= 12)
		return -E2BIG;
	snprintf(f->name[f->n], 12, "%s", name);
	f->ino[f->n] = ino;
	f->n++;
	return 0;
}

/* True if @f is state @st: the same names, same file behind the same names. */
static bool state_matches(const struct found *f, const struct state *st)
{
	u32 i, j;

	if (f->n != st->n)
		return false;
	for (i = 0; i < f->n; i++) {
		int a = st_find(st, f->name[i]);

		if (a < 0)
			return false;
		for (j = 0; j < i; j++) {
			int b = st_find(st, f->name[j]);

			if ((st->e[a].fid == st->e[b].fid) != (f->ino[i] == f->ino[j]))
				return false;
		}
	}
	return true;
}

/* Distinct files of @st. */
static u32 st_files(const struct state *st)
{
	u32 i, j, n = 0;

	for (i = 0; i < st->n; i++) {
		for (j = 0; j < i; j++)
			if (st->e[j].fid == st->e[i].fid)
				break;
		n += j == i;
	}
	return n;
}

/* Blocks charged to the root directory (its B+tree). */
static u64 root_blocks(struct sx_mount *mp)
{
	struct sx_inode *dp;
	u64 n;

	VERIFY(sx_iget(mp, mp->m_rootino, 0, &dp) == 0);
	sx_ilock(dp, SX_ILOCK_EXCL);
	n = dp->i_nblocks;
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
	return n;
}

/*
 * The names equal a state of @arg's run in its window, and the free blocks
 * are what the files of that state leave: the state found, or -1.
 */
static int names_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct run *r = arg;
	struct found *f = calloc(1, sizeof(*f));
	u64 free_now, want_free;
	u32 nfound;
	int error, j;

	error = sx_readdir(mp, found_cb, f);
	for (j = r->ncommitted; !error && j >= r->ndurable; j--)
		if (state_matches(f, &r->states[j]))
			break;
	nfound = f->n;
	free(f);
	SXC_CHECK(error == 0, "%s: readdir: %s", what, sx_strerror(error));
	SXC_CHECK(j >= r->ndurable, "%s: no state in [%d, %d] matches the %u names found", what,
		  r->ndurable, r->ncommitted, nfound);
	free_now = sx_alloc_free_blocks(mp);
	want_free = pristine_free - st_files(&r->states[j]) - root_blocks(mp);
	SXC_CHECK(free_now == want_free,
		  "%s: %llu blocks free, the names account for %llu (orphans?)", what,
		  (unsigned long long)free_now, (unsigned long long)want_free);
	return j;
}

/* Recover @bd and verify it against @r.  Returns the state found, or -1. */
static int recover_and_verify(struct sx_bdev *bd, const struct run *r, const char *what)
{
	return sxc_recover_verify(bd, 0, names_ok, r, what);
}

/* Cut the power at write @w in @mode and check what recovery makes of it. */
static int crash_at(void *arg, u64 w, enum sx_crash_mode mode)
{
	/* the recovery cut at each write, the modes in turn */
	static const enum sx_crash_mode rmodes[] = { SX_CRASH_DROP, SX_CRASH_KEEP, SX_CRASH_TEAR };
	struct sxc_cuts rcuts = { .modes = rmodes, .nmodes = 3 };
	u64 seed = *(const u64 *)arg;
	bool and_recovery = sxc_level() >= SXC_LONG ||
			    (mode == SX_CRASH_TEAR && w % sxc_pick(45, 9, 9) == 0);
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd, *twin = NULL;
	struct run *r = malloc(sizeof(*r));
	char what[96];
	int j = -1;

	cbd = sxc_cut_dev(img, seed * 131 + w, w, mode, NULL);
	workload(cbd, seed, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "seed %llu write %llu %s", (unsigned long long)seed,
		 (unsigned long long)w, sxf_mode_name(mode));
	if (r->error == 0) {
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
		goto out;
	}
	if (and_recovery)
		twin = sxt_bdev_copy(img);
	j = recover_and_verify(img, r, what);
	if (j >= 0 && and_recovery)
		recovery_crash_points += sxc_cut_recovery(twin, &rcuts, seed, 0, names_ok, r, j);
out:
	if (twin)
		sx_bdev_destroy(twin);
	free(r);
	sx_bdev_destroy(img);
	return j;
}

/* The workload's write count without a crash, and a check of its end state. */
static int dry_run(u64 seed, struct sx_crashdev_stats *st, struct run *r)
{
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd;
	struct sx_crashdev *cd;
	u32 k, maxn = 0, minn = MAXN, changes = 0;
	int j;

	cbd = sxc_cut_dev(img, 1, 0, 0, &cd);
	workload(cbd, seed, r);
	sx_crashdev_get_stats(cd, st);
	sx_bdev_destroy(cbd);
	SXC_CHECK(r->error == 0, "dry run: %s", sx_strerror(r->error));
	SXC_CHECK(r->ncommitted == NOPS && r->ndurable == NOPS, "dry run: %d/%d", r->ndurable,
		  r->ncommitted);
	/* the workload crosses the directory's inline limit (3 entries) many times */
	for (k = 1; k <= NOPS; k++) {
		u32 n = r->states[k].n;

		maxn = n > maxn ? n : maxn;
		minn = n < minn ? n : minn;
		if (k > 1 && (n > 3) != (r->states[k - 1].n > 3))
			changes++;
	}
	/*
	 * The fixed seeds must give that shape, or the test would lose what it
	 * is for; a fresh seed (make soak) is crash-tested whatever its shape.
	 */
	if (getenv("SX_TEST_SEED") && *getenv("SX_TEST_SEED"))
		printf("seed %llu: %u..%u names, %u inline/B+tree crossings\n",
		       (unsigned long long)seed, minn, maxn, changes);
	else
		SXC_CHECK(maxn >= 8 && minn <= 1 && changes >= 4,
			  "workload: %u..%u names, %u crossings", minn, maxn, changes);
	j = recover_and_verify(img, r, "dry run");
	sx_bdev_destroy(img);
	SXC_CHECK(j == NOPS, "dry run: state %d", j);
	return 0;
}

int main(void)
{
	/*
	 * 14, not 13: seed 13's workload never reaches 8 names, so the long
	 * level failed its shape check (found by the harness's long run).
	 */
	static const u64 fixed[3] = { 11, 12, 14 };
	const u64 *seeds;
	u64 nseeds, s, crash_points = 0;
	struct sx_crashdev_stats st;
	struct run *r = malloc(sizeof(*r));
	struct sx_mount *mp;

	sxc_start();
	nseeds = sxt_seeds("crash_names", fixed, sxc_pick(1, 1, 3), &seeds);
	pristine = sxt_memfs(IMG_SIZE, BSIZE, 1024);
	mp = sxt_mount(pristine);
	pristine_free = sx_alloc_free_blocks(mp);
	VERIFY(sx_unmount(mp) == 0);

	for (s = 0; s < nseeds; s++) {
		struct sxc_cuts cuts = { .step = sxc_pick(5, 1, 1), .per_point = 3 };
		u64 seed = seeds[s];

		if (dry_run(seed, &st, r)) {
			sxc_count.failed++;
			break;
		}
		printf("seed %llu: %d operations, %llu writes (%llu FUA), %llu flushes\n",
		       (unsigned long long)seed, NOPS, (unsigned long long)st.cs_writes,
		       (unsigned long long)st.cs_fua_writes, (unsigned long long)st.cs_flushes);
		cuts.last = st.cs_writes;
		crash_points += sxc_cut_writes(&cuts, crash_at, &seed);
	}
	printf("crash points: %llu during the workload, %llu during recovery\n",
	       (unsigned long long)crash_points, (unsigned long long)recovery_crash_points);
	free(r);
	sx_bdev_destroy(pristine);
	return sxc_end();
}
