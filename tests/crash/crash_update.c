// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of the atomic file update (sx_update_start/commit).
 *
 * File a (tagged blocks with holes) goes through a sequence of updates,
 * each start, writes and truncates of the clone, commit and sync: part of
 * the file rewritten and its holes filled, the file grown, the file shrunk
 * to a partial block.  File b is never written.  The power is cut at every
 * 3rd device write of the sequence, the volatile writes kept, dropped or
 * torn in turn (SX_CRASH_LEVEL=long: at every write, in each of the three
 * modes; quick: every 12th).  The same test with non-atomic commits on a
 * filesystem without atomic_swap finds mixed states: it can fail.
 * After recovery a equals, block by block and in size, the model after
 * some number k of the updates, k between the last durable one and the
 * last committed one (plus the one whose commit the cut interrupted): all
 * old or all new, never a mix.  b is as it was, a and b are the only
 * files, and the checker is clean: the clone, which has no name, was freed
 * by recovery with all its blocks (the checker walks every block and every
 * inode).  A second recovery changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxswap.h"
#include "sxcrash.h"

#define BS		1024u
#define NBLK		96u		/* blocks of a at first */
#define NUPD		3		/* updates of the sequence */
#define MAXB		(2 * NBLK)

/* What one update does to the clone before the commit. */
struct upd {
	const char	*name;
	u64		from, to;	/* blocks [from, to) rewritten */
	u64		trunc;		/* then the size set to this (0: kept) */
};

static const struct upd upds[NUPD] = {
	{ "rewrite part, fill holes", 16, 48, 0 },
	{ "grow", NBLK - 4, NBLK + 40, 0 },
	{ "shrink to a partial block", 3, 5, 30 * BS + 100 },
};

/* The models of a after each update, and what a run reached. */
struct run {
	struct sxs_file	*m[NUPD + 1];
	int		ncommitted;	/* commits that returned */
	int		ndurable;	/* commits known durable (synced) */
	bool		in_commit;	/* the cut came inside sx_update_commit() */
	int		error;
};

static struct sx_bdev *pristine;
static struct sxs_file *model_b;

/* Set @f's model size to @size, zeroing what lies past it. */
static void model_trunc(struct sxs_file *f, u64 size)
{
	u64 i;

	for (i = sx_howmany(size, BS); i < f->sf_nblk; i++)
		f->sf_tag[i] = 0;
	f->sf_size = size;
}

/* The pristine image: a with a hole every 5th block, b whole; the models. */
static void make_pristine(struct sxs_file *a0)
{
	struct sx_mount *mp;
	u64 i;

	pristine = sxs_mkimg(24ull << 20, BS, 1024, true);
	VERIFY(sx_mount(pristine, NULL, &mp) == 0);
	model_b = sxs_file_new(MAXB);
	VERIFY(sx_create(mp, "a", 0644, &a0->sf_fd) == 0);
	VERIFY(sx_create(mp, "b", 0644, &model_b->sf_fd) == 0);
	for (i = 0; i < NBLK; i++) {
		if (i % 5 != 2)
			VERIFY(sxs_write(mp, BS, a0, i, sxs_tag(0, i, 1)) == 0);
		if (i < NBLK / 2)
			VERIFY(sxs_write(mp, BS, model_b, i, sxs_tag(1, i, 1)) == 0);
	}
	VERIFY(sx_truncate(mp, a0->sf_fd, NBLK * BS - 200) == 0);
	model_trunc(a0, NBLK * BS - 200);
	sx_close(mp, a0->sf_fd);
	sx_close(mp, model_b->sf_fd);
	VERIFY(sx_unmount(mp) == 0);
}

/* The model after update @k (1-based) from the model before it. */
static void model_update(int k, const struct sxs_file *before, struct sxs_file *after)
{
	const struct upd *u = &upds[k - 1];
	u64 i;

	sxs_file_copy(after, before);
	for (i = u->from; i < u->to; i++) {
		after->sf_tag[i] = sxs_tag(0, i, (u32)(k + 1));
		if ((i + 1) * BS > after->sf_size)
			after->sf_size = (i + 1) * BS;
	}
	if (u->trunc)
		model_trunc(after, u->trunc);
}

/* Run update @k on a (descriptor @fd): start, write, truncate, commit, sync. */
static int one_update(struct sx_mount *mp, int fd, int k, struct run *r)
{
	const struct upd *u = &upds[k - 1];
	struct sxs_file *t = sxs_file_new(MAXB);
	struct sx_update upd;
	u64 i;
	int error;

	error = sx_update_start(mp, fd, &upd);
	if (error)
		goto out;
	t->sf_fd = upd.su_fd_tmp;
	for (i = u->from; !error && i < u->to; i++)
		error = sxs_write(mp, BS, t, i, sxs_tag(0, i, (u32)(k + 1)));
	if (!error && u->trunc)
		error = sx_truncate(mp, t->sf_fd, u->trunc);
	if (error) {
		sx_update_cancel(mp, &upd);
		goto out;
	}
	r->in_commit = true;
	error = sx_update_commit(mp, &upd, 0);
	if (error) {
		sx_update_cancel(mp, &upd);
		goto out;
	}
	r->in_commit = false;
	r->ncommitted = k;
	error = sx_sync(mp);
	if (!error)
		r->ndurable = k;
out:
	sxs_file_free(t);
	return error;
}

/* How the workload mounts: the log's default queue, then a record per transaction. */
static struct sx_mount_opts wl_opts;

/* The whole sequence on @bd. */
static void workload(struct sx_bdev *bd, struct run *r)
{
	struct sx_mount *mp;
	int fd = -1, k, error;

	r->ncommitted = r->ndurable = 0;
	r->in_commit = false;
	r->error = sx_mount(bd, &wl_opts, &mp);
	if (r->error)
		return;
	r->error = sx_open(mp, "a", &fd);
	for (k = 1; !r->error && k <= NUPD; k++)
		r->error = one_update(mp, fd, k, r);
	if (fd >= 0)
		sx_close(mp, fd);
	error = sx_unmount(mp);
	if (!r->error)
		r->error = error;
}

/* The names in the root directory: exactly a and b. */
static int count_name(void *arg, const char *name, u64 ino)
{
	int *n = arg;

	*n += !strcmp(name, "a") || !strcmp(name, "b") ? 1 : 100;
	return 0;
}

/* a equals the model after k updates for some k in the window; b as it was. */
static int files_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct run *r = arg;
	char msg[160], first[200] = "";
	int fd, k, hi = r->ncommitted + (r->in_commit ? 1 : 0), names = 0;
	bool ok = false;

	SXC_CHECK(sx_readdir(mp, count_name, &names) == 0 && names == 2, "%s: names", what);
	SXC_CHECK(sx_open(mp, "b", &model_b->sf_fd) == 0, "%s: open b", what);
	ok = sxs_verify(mp, BS, model_b, msg, sizeof(msg)) == 0;
	sx_close(mp, model_b->sf_fd);
	SXC_CHECK(ok, "%s: b changed: %s", what, msg);
	SXC_CHECK(sx_open(mp, "a", &fd) == 0, "%s: open a", what);
	ok = false;
	for (k = r->ndurable; !ok && k <= hi && k <= NUPD; k++) {
		r->m[k]->sf_fd = fd;
		ok = sxs_verify(mp, BS, r->m[k], msg, sizeof(msg)) == 0;
		if (!ok && !first[0])
			snprintf(first, sizeof(first), "k=%d: %s", k, msg);
	}
	sx_close(mp, fd);
	SXC_CHECK(ok, "%s: no state in [%d, %d] matches (%s)", what, r->ndurable, hi, first);
	return 0;
}

static u64 in_commit;		/* cuts that came inside a commit */

static int crash_at(void *arg, u64 w, enum sx_crash_mode mode)
{
	struct run *r = arg;
	struct sx_bdev *img = sxt_bdev_copy(pristine);
	struct sx_bdev *cbd = sxc_cut_dev(img, w * 7 + mode, w, mode, NULL);
	char what[96];
	int ret = -1;

	workload(cbd, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "write %llu %s (after %d commits%s)",
		 (unsigned long long)w, sxf_mode_name(mode), r->ncommitted,
		 r->in_commit ? ", in a commit" : "");
	in_commit += r->in_commit;
	if (r->error == 0)
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
	else
		ret = sxc_recover_verify(img, 0, files_ok, r, what);
	sx_bdev_destroy(img);
	return ret;
}

int main(void)
{
	struct sxc_cuts cuts = { 0 };
	struct sx_crashdev_stats st;
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct run r;
	u64 crash_points = 0;
	int k, mode;

	sxc_start();
	/* each cut write in one mode, the modes in turn; every mode at each with long */
	cuts.step = sxc_pick(12, 3, 1);
	cuts.per_point = sxc_pick(1, 1, 3);
	memset(&r, 0, sizeof(r));
	for (k = 0; k <= NUPD; k++)
		r.m[k] = sxs_file_new(MAXB);
	make_pristine(r.m[0]);
	for (k = 1; k <= NUPD; k++)
		model_update(k, r.m[k - 1], r.m[k]);

	for (mode = 0; mode < 2; mode++) {
		wl_opts.mo_flags = mode ? SX_MOUNT_LOG_EACH : 0;
		printf("%s:\n", mode ? "a log record per transaction (LOG_EACH)" :
		       "the log's default queue");
		/* the uncut run: how many writes, and it must end with every update in */
		img = sxt_bdev_copy(pristine);
		cbd = sxc_cut_dev(img, 1, 0, 0, &cd);
		workload(cbd, &r);
		sx_crashdev_get_stats(cd, &st);
		sx_bdev_destroy(cbd);
		if (r.error || r.ndurable != NUPD) {
			sxc_fail("the uncut workload: %s, %d durable", sx_strerror(r.error),
				 r.ndurable);
		} else {
			r.ndurable = r.ncommitted = NUPD;	/* only the last state may show */
			sxc_tally(sxc_recover_verify(img, 0, files_ok, &r, "uncut run"));
		}
		sx_bdev_destroy(img);
		printf("%d updates, %llu writes, %llu flushes; cutting every %llu\n", NUPD,
		       (unsigned long long)st.cs_writes, (unsigned long long)st.cs_flushes,
		       (unsigned long long)cuts.step);
		cuts.last = st.cs_writes;
		crash_points += sxc_cut_writes(&cuts, crash_at, &r);
	}
	printf("crash points: %llu (%llu inside a commit)\n", (unsigned long long)crash_points,
	       (unsigned long long)in_commit);
	for (k = 0; k <= NUPD; k++)
		sxs_file_free(r.m[k]);
	sxs_file_free(model_b);
	sx_bdev_destroy(pristine);
	return sxc_end();
}
