// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of data manifests: one device flush per log force for the
 * data and the records that map it (engine/log_manifest.c).
 *
 * File f (two tagged blocks, durable) goes through steps that exercise
 * every path of the manifest, each ended by an fsync:
 *  1. appends into new blocks (their force lists them in a manifest);
 *  2. overwrites in place a block of that manifest (it is the last force:
 *     a fence goes first), then appends;
 *  3. overwrites a block no manifest guards, and one the last one does;
 *  4. appends and writes the new blocks again before the fsync (the entry
 *     of the pending manifest follows);
 *  5. the same around a fence: overwrite of a guarded block, an append and
 *     a second write of it;
 *  6. appends more new blocks than a manifest holds (the limit lowered to
 *     2): the data is flushed before the records;
 *  7. an atomic update (clone, copy-on-write into new blocks, swap);
 *  8. an overwrite in place of a durable block, then an update that
 *     shares it into the clone and swaps it back: the force of the swap
 *     flushes that data first.
 * The power is cut at every device write, in each of keep, drop, tear,
 * random and newest-only (quick: every 3rd write, the modes in turn).
 * After recovery, f's size is one some state since the last completed
 * fsync had (or lies
 * between two, at a block boundary, for a chain of appends), and every
 * block shows a tag that block had in one of those states that holds it
 * (a torn overwrite in place: each word), never zeroes or foreign data (a
 * mapping durable without its data); a step-8 update that shows has the
 * overwrite it shared.  The checker is clean and a second recovery
 * changes nothing.  Random and newest-only fates keep records whose data
 * was lost: the run counts the recoveries that dropped a force for it,
 * and there must be some.  The first few of those recoveries (which write a fence
 * over the dropped force) are cut at each of their writes in every mode,
 * and the image, recovered again, must show the same.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxswap.h"
#include "sxcrash.h"
#include "sxfork.h"
#include "log_priv.h"

#define BS		1024u
#define MAXB		32u
#define NSTEP		8

static struct sx_bdev *pristine;

/* The model of f after each step, and how far a run got. */
struct run {
	struct sxs_file	*m[NSTEP + 1];	/* after step k (0: before the first) */
	int		started;	/* steps begun */
	int		durable;	/* steps whose fsync returned */
	int		error;
};

static u64 dropped_runs;	/* recoveries that dropped a force whose data was lost */
static u64 recovery_points;	/* cuts of such recoveries (the fence they write) */

static u64 tag(u64 blk, u32 ver)
{
	return sxs_tag(0, blk, ver);
}

/* Write block @blk with version @ver into f and its model. */
static int wr(struct sx_mount *mp, struct sxs_file *f, u64 blk, u32 ver)
{
	return sxs_write(mp, BS, f, blk, tag(blk, ver));
}

/* An update of f: blocks @blks (ending with ~0) of the clone at @ver. */
static int update(struct sx_mount *mp, struct sxs_file *f, const u64 *blks, u32 ver)
{
	struct sxs_file *t = sxs_file_new(MAXB);
	struct sx_update upd;
	int error;

	error = sx_update_start(mp, f->sf_fd, &upd);
	if (error)
		goto out;
	t->sf_fd = upd.su_fd_tmp;
	for (; !error && *blks != ~0ull; blks++) {
		error = wr(mp, t, *blks, ver);
		if (!error) {
			f->sf_tag[*blks] = t->sf_tag[*blks];
			if (t->sf_size > f->sf_size)
				f->sf_size = t->sf_size;
		}
	}
	if (error) {
		sx_update_cancel(mp, &upd);
		goto out;
	}
	error = sx_update_commit(mp, &upd, 0);
	if (error)
		sx_update_cancel(mp, &upd);
out:
	sxs_file_free(t);
	return error;
}

/* Step @k on f (its model @f, already a copy of the state before). */
static int step(struct sx_mount *mp, int k, struct sxs_file *f)
{
	static const u64 upd7[] = { 1, 2, ~0ull }, upd8[] = { 0, ~0ull };
	struct sx_log *log = mp->m_log;
	u32 max;
	int error = 0;

	switch (k) {
	case 1:
		error = wr(mp, f, 2, 2) ?: wr(mp, f, 3, 2) ?: wr(mp, f, 4, 2);
		break;
	case 2:
		error = wr(mp, f, 3, 3) ?: wr(mp, f, 5, 3);
		break;
	case 3:
		error = wr(mp, f, 0, 4) ?: wr(mp, f, 5, 4);
		break;
	case 4:
		error = wr(mp, f, 6, 5) ?: wr(mp, f, 7, 5) ?: wr(mp, f, 6, 6);
		break;
	case 5:
		error = wr(mp, f, 7, 7) ?: wr(mp, f, 8, 7) ?: wr(mp, f, 8, 8);
		break;
	case 6:
		max = log->l_mf_max;
		log->l_mf_max = 2;
		error = wr(mp, f, 9, 9) ?: wr(mp, f, 10, 9) ?: wr(mp, f, 11, 9) ?:
			wr(mp, f, 12, 9);
		if (!error)
			error = sx_fsync(mp, f->sf_fd);
		log->l_mf_max = max;
		break;
	case 7:
		error = update(mp, f, upd7, 10);
		break;
	case 8:
		error = wr(mp, f, 9, 11) ?: update(mp, f, upd8, 12);
		break;
	}
	return error ?: sx_fsync(mp, f->sf_fd);
}

/* The model after each step, from the one before. */
static void make_models(struct run *r)
{
	struct sx_mount *mp;
	int k;

	pristine = sxs_mkimg(8ull << 20, BS, 1024, true);
	VERIFY(sx_mount(pristine, NULL, &mp) == 0);
	VERIFY(sx_create(mp, "f", 0644, &r->m[0]->sf_fd) == 0);
	VERIFY(wr(mp, r->m[0], 0, 1) == 0 && wr(mp, r->m[0], 1, 1) == 0);
	VERIFY(sx_close(mp, r->m[0]->sf_fd) == 0);
	VERIFY(sx_unmount(mp) == 0);
	/* the models, from a run on a copy */
	{
		struct sx_bdev *img = sxt_bdev_copy(pristine);
		int fd;

		VERIFY(sx_mount(img, NULL, &mp) == 0);
		VERIFY(sx_open(mp, "f", &fd) == 0);
		for (k = 1; k <= NSTEP; k++) {
			sxs_file_copy(r->m[k], r->m[k - 1]);
			r->m[k]->sf_fd = fd;
			VERIFY(step(mp, k, r->m[k]) == 0);
		}
		VERIFY(sx_close(mp, fd) == 0);
		VERIFY(sx_unmount(mp) == 0);
		sx_bdev_destroy(img);
	}
}

/* The whole sequence on @bd. */
static void workload(struct sx_bdev *bd, struct run *r)
{
	struct sxs_file *f = sxs_file_new(MAXB);
	struct sx_mount *mp;
	int k, error;

	r->started = r->durable = 0;
	r->error = sx_mount(bd, NULL, &mp);
	if (r->error)
		goto out;
	sxs_file_copy(f, r->m[0]);
	r->error = sx_open(mp, "f", &f->sf_fd);
	for (k = 1; !r->error && k <= NSTEP; k++) {
		r->started = k;
		r->error = step(mp, k, f);
		if (!r->error)
			r->durable = k;
	}
	sx_close(mp, f->sf_fd);
	error = sx_unmount(mp);
	if (!r->error)
		r->error = error;
out:
	sxs_file_free(f);
}

/*
 * True if block @b has tag @t in some state of [@lo, @hi] that holds the
 * block: a block that shows was written by the step that mapped it, so
 * the zeroes (or the foreign data) the block held before never pass.
 */
static bool tag_in_window(const struct run *r, int lo, int hi, u64 b, u64 t)
{
	int k;

	for (k = lo; k <= hi; k++)
		if ((b + 1) * BS <= r->m[k]->sf_size && r->m[k]->sf_tag[b] == t)
			return true;
	return false;
}

/*
 * True if every word of @blk is a tag block @b had in the window: an
 * overwrite in place is not atomic, so a torn one mixes the two versions.
 */
static bool block_in_window(const struct run *r, int lo, int hi, u64 b, const u64 *blk)
{
	u32 i;

	for (i = 0; i < BS / 8; i++)
		if ((i == 0 || blk[i] != blk[i - 1]) && !tag_in_window(r, lo, hi, b, blk[i]))
			return false;
	return true;
}

/* f's size and blocks come from the states since the last fsync. */
static int file_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct run *r = arg;
	int lo = r->durable, hi = r->started, k, fd;
	u64 size, b, t[MAXB];
	bool size_ok = false;
	struct sx_stat st;
	u8 *buf = malloc(BS);
	s64 n;

	SXC_CHECK(sx_open(mp, "f", &fd) == 0, "%s: open f", what);
	SXC_CHECK(sx_fstat(mp, fd, &st) == 0, "%s: stat f", what);
	size = st.st_size;
	for (k = lo; k <= hi; k++)
		size_ok |= r->m[k]->sf_size == size;
	/* a step's appends are a chain of transactions: a prefix may show */
	for (k = lo; k <= hi && !size_ok; k++)
		size_ok = k > lo && size > r->m[k - 1]->sf_size && size < r->m[k]->sf_size &&
			  size % BS == 0;
	if (!size_ok)
		free(buf);
	SXC_CHECK(size_ok, "%s: size %llu is no state's in steps [%d, %d]", what,
		  (unsigned long long)size, lo, hi);
	for (b = 0; b * BS < size && b < MAXB; b++) {
		n = sx_pread(mp, fd, buf, BS, b * BS);
		t[b] = n == BS ? sxs_tag_of(buf, BS) : ~0ull;
		if (n != BS || !block_in_window(r, lo, hi, b, (const u64 *)buf)) {
			free(buf);
			sx_close(mp, fd);
			SXC_CHECK(0, "%s: block %llu holds %llx, which no state in steps [%d, %d] has there",
				  what, (unsigned long long)b, (unsigned long long)t[b], lo, hi);
		}
	}
	free(buf);
	sx_close(mp, fd);
	/* the update of step 8 shared the overwrite of block 9: both or neither */
	if (size > 9 * BS && t[0] == tag(0, 12))
		SXC_CHECK(t[9] == tag(9, 11), "%s: step 8's update shows without the data it shared (block 9 holds %llx)",
			  what, (unsigned long long)t[9]);
	return 0;
}

static int crash_at(void *arg, u64 w, enum sx_crash_mode mode)
{
	struct run *r = arg;
	struct sx_bdev *img = sxt_bdev_copy(pristine);
	struct sx_bdev *cbd = sxc_cut_dev(img, w * 7 + mode, w, mode, NULL);
	struct sx_recovery_stats rs;
	struct sx_mount *mp;
	char what[96];
	int ret = -1;

	workload(cbd, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "write %llu %s (step %d, %d durable)",
		 (unsigned long long)w, sxf_mode_name(mode), r->started, r->durable);
	if (r->error == 0) {
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
		goto out;
	}
	/* a look at what recovery decided, on a copy */
	{
		struct sx_bdev *peek = sxt_bdev_copy(img);

		rs.rs_dropped = 0;
		if (sx_mount(peek, NULL, &mp) == 0) {
			sx_get_recovery_stats(mp, &rs);
			dropped_runs += rs.rs_dropped != 0;
			sx_unmount(mp);
		}
		sx_bdev_destroy(peek);
	}
	/*
	 * A recovery that drops a force writes a fence over its first
	 * record: cut it at each of its writes (the first few such images),
	 * and the next recovery must come to the same state.
	 */
	if (rs.rs_dropped && dropped_runs <= sxc_pick(1, 6, 20)) {
		struct sxc_cuts rcuts = { 0 };

		rcuts.per_point = 3;
		recovery_points += sxc_cut_recovery(img, &rcuts, w, 0, file_ok, r, 0);
	}
	ret = sxc_recover_verify(img, 0, file_ok, r, what);
out:
	sx_bdev_destroy(img);
	return ret;
}

int main(void)
{
	static const enum sx_crash_mode modes[] = {
		SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR, SX_CRASH_RANDOM, SX_CRASH_NEWEST,
	};
	struct sxc_cuts cuts = { 0 };
	struct sx_crashdev_stats st;
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct run r;
	u64 points;
	int k;

	sxc_start();
	cuts.modes = modes;
	cuts.nmodes = ARRAY_SIZE(modes);
	cuts.step = sxc_pick(3, 1, 1);
	cuts.per_point = sxc_pick(1, ARRAY_SIZE(modes), ARRAY_SIZE(modes));
	memset(&r, 0, sizeof(r));
	for (k = 0; k <= NSTEP; k++)
		r.m[k] = sxs_file_new(MAXB);
	make_models(&r);

	img = sxt_bdev_copy(pristine);
	cbd = sxc_cut_dev(img, 1, 0, 0, &cd);
	workload(cbd, &r);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(cbd);
	if (r.error || r.durable != NSTEP)
		sxc_fail("the uncut workload: %s, %d durable", sx_strerror(r.error), r.durable);
	else
		sxc_tally(sxc_recover_verify(img, 0, file_ok, &r, "uncut run"));
	sx_bdev_destroy(img);
	printf("%d steps, %llu writes, %llu flushes\n", NSTEP,
	       (unsigned long long)st.cs_writes, (unsigned long long)st.cs_flushes);
	cuts.last = st.cs_writes;
	points = sxc_cut_writes(&cuts, crash_at, &r);
	printf("crash points: %llu; %llu recoveries dropped a force whose data was lost, cut at %llu writes\n",
	       (unsigned long long)points, (unsigned long long)dropped_runs,
	       (unsigned long long)recovery_points);
	if (sxc_level() != SXC_QUICK && dropped_runs == 0)
		sxc_fail("no cut left a force's records without its data: the test missed its case");
	for (k = 0; k <= NSTEP; k++)
		sxs_file_free(r.m[k]);
	sx_bdev_destroy(pristine);
	return sxc_end();
}
