// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of defragmentation (sx_defrag_file(), what `swapext defrag`
 * runs on each file): the copy into a tmpfile, its sync, the
 * XFS_IOC_SWAPEXT swap and the close that frees the old blocks.
 *
 * A file of tagged blocks, fragmented by being written in turn with
 * another (one-block extents), with punched holes, an unwritten range and
 * a partial block at EOF, is defragmented on a crash-emulating device,
 * once with the log's default queue and once with SX_MOUNT_LOG_EACH (a
 * record per transaction, some 80 times the writes).  The power is cut at
 * every device write of the whole run (mount, defrag, unmount) of the
 * queued run and at every 4th of the LOG_EACH one, with the volatile
 * writes kept, dropped and torn (the LOG_EACH cuts take the three in
 * turn); SX_CRASH_LEVEL=long cuts every write of both in all three modes,
 * quick every 4th and 12th write in one mode.  After recovery:
 * - the file holds exactly its original data, block by block, and its size:
 *   defragmenting never changes data, whichever blocks hold it;
 * - the other file is untouched;
 * - with the atomic_swap feature, the layout is all old or all new (the
 *   file's extent count is the original's or the defragmented one's);
 * - the checker is clean: every block has its owner, so the tmpfile (on the
 *   unlinked list) and whatever blocks it held were freed by recovery;
 * - a second recovery changes nothing.
 * The same runs on an image without atomic_swap, where the swap is the
 * non-atomic chain of steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sxswap.h"
#include "sxcrash.h"
#include <swapext/swapext_compat.h>

#define BS		1024u
#define IMG		(8ull << 20)
#define LOGBLOCKS	1024u
#define NBLK		200u		/* blocks of the fragmented file */

struct cfg {
	const char	*name;
	bool		atomic;
	u32		mount_flags;	/* of the defrag's mount: 0 or SX_MOUNT_LOG_EACH */
};

/* How the workload mounts (the log's default queue, or a record per transaction). */
static struct sx_mount_opts wl_opts;

static u64 crash_points;
static struct sx_bdev *pristine;
static struct sxs_file *model[2];	/* 0: the file defragmented, 1: the other */
static u32 ext_before, ext_after;	/* extent counts of an uncut run */
static const char *const names[2] = { "frag", "other" };
static u64 tmpfiles_freed;		/* recoveries that freed the tmpfile */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The extent count of bytes [0, size) of @fd. */
static u32 extents(struct sx_mount *mp, int fd)
{
	struct sx_stat st;
	u32 n = 0;

	VERIFY(sx_fstat(mp, fd, &st) == 0);
	if (st.st_size)
		VERIFY(sx_fiemap(mp, fd, 0, st.st_size, NULL, 0, &n) == 0);
	return n;
}

/* The pristine image: frag and other written a block each in turn, then holes and more. */
static void make_pristine(const struct cfg *c)
{
	struct sx_mount *mp;
	u64 i;
	int f;

	pristine = sxs_mkimg(IMG, BS, LOGBLOCKS, c->atomic);
	VERIFY(sx_mount(pristine, NULL, &mp) == 0);
	for (f = 0; f < 2; f++) {
		model[f] = sxs_file_new(NBLK + 8);
		VERIFY(sx_create(mp, names[f], 0644, &model[f]->sf_fd) == 0);
	}
	for (i = 0; i < NBLK; i++)
		for (f = 0; f < 2; f++)
			VERIFY(sxs_write(mp, BS, model[f], i, sxs_tag((u32)f, i, 1)) == 0);
	/* holes: every 25th block and a run */
	for (i = 0; i < NBLK; i += 25) {
		VERIFY(sx_punch(mp, model[0]->sf_fd, i * BS, BS) == 0);
		model[0]->sf_tag[i] = 0;
	}
	VERIFY(sx_punch(mp, model[0]->sf_fd, 60 * BS, 15 * BS) == 0);
	/* an unwritten range: reads as zeroes, stays unwritten */
	VERIFY(sx_punch(mp, model[0]->sf_fd, 140 * BS, 10 * BS) == 0);
	VERIFY(sx_fallocate(mp, model[0]->sf_fd, 140 * BS, 10 * BS) == 0);
	for (i = 60; i < 75; i++)
		model[0]->sf_tag[i] = 0;
	for (i = 140; i < 150; i++)
		model[0]->sf_tag[i] = 0;
	/* a partial block at EOF, beyond a hole */
	VERIFY(sx_truncate(mp, model[0]->sf_fd, (NBLK + 3) * BS + 200) == 0);
	model[0]->sf_size = (NBLK + 3) * BS + 200;
	ext_before = extents(mp, model[0]->sf_fd);
	for (f = 0; f < 2; f++)
		VERIFY(sx_close(mp, model[f]->sf_fd) == 0);
	VERIFY(sx_unmount(mp) == 0);
}

/* Mount @bd, defragment frag, unmount; 0 only if all of it succeeded. */
static int workload(struct sx_bdev *bd, struct sx_defrag_result *res)
{
	struct sx_mount *mp;
	int fd, error, e2;

	memset(res, 0, sizeof(*res));
	error = sx_mount(bd, &wl_opts, &mp);
	if (error)
		return error;
	error = sx_open(mp, names[0], &fd);
	if (!error) {
		error = sx_defrag_file(mp, fd, 0, res);
		e2 = sx_close(mp, fd);
		if (!error)
			error = e2;
	}
	e2 = sx_unmount(mp);
	return error ? error : e2;
}

/*
 * Recovery freed no file but the defrag's tmpfile; both files hold their
 * original data; frag is in the old or new layout.
 */
static int files_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct cfg *c = arg;
	struct sx_recovery_stats rs;
	char msg[160];
	u32 n;
	int f, bad = 0;

	sx_get_recovery_stats(mp, &rs);
	/* the only nameless file there can be is the defrag's tmpfile */
	SXC_CHECK(rs.rs_unlinked <= 1, "%s: recovery freed %llu unlinked inodes", what,
		  (unsigned long long)rs.rs_unlinked);
	tmpfiles_freed += rs.rs_unlinked;
	for (f = 0; f < 2; f++) {
		SXC_CHECK(sx_open(mp, names[f], &model[f]->sf_fd) == 0, "%s: open %s", what,
			  names[f]);
		if (sxs_verify(mp, BS, model[f], msg, sizeof(msg))) {
			fprintf(stderr, "FAIL %s: %s: %s\n", what, names[f], msg);
			bad = 1;
		}
	}
	n = extents(mp, model[0]->sf_fd);
	for (f = 0; f < 2; f++)
		sx_close(mp, model[f]->sf_fd);
	if (bad)
		return -1;
	SXC_CHECK(!c->atomic || n == ext_before || n == ext_after,
		  "%s: %u extents, neither the old %u nor the new %u", what, n, ext_before,
		  ext_after);
	SXC_CHECK(n <= ext_before, "%s: %u extents, more than the %u before",
		  what, n, ext_before);
	return 0;
}

/* One cut at write @w in @mode, then recovery and the checks. */
static int crash_at(void *arg, u64 w, enum sx_crash_mode mode)
{
	const struct cfg *c = arg;
	struct sx_bdev *img = sxt_bdev_copy(pristine);
	struct sx_bdev *cbd = sxc_cut_dev(img, w * 7 + mode, w, mode, NULL);
	struct sx_defrag_result res;
	char what[96];
	int error, ret = -1;

	error = workload(cbd, &res);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "%s write %llu %s", c->name, (unsigned long long)w,
		 sxf_mode_name(mode));
	if (error == 0)
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
	else
		ret = sxc_recover_verify(img, 0, files_ok, c, what);
	sx_bdev_destroy(img);
	return ret;
}

/* Cut every @step-th write in @nmodes modes (1: the three in turn). */
static void run_cfg(const struct cfg *c, u64 step, u32 nmodes)
{
	struct sxc_cuts cuts = { .step = step, .per_point = nmodes };
	struct sx_crashdev_stats st;
	struct sx_defrag_result res;
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_mount *mp;
	int error, fd;
	double t0;
	u64 cuts_made;

	make_pristine(c);

	/* the uncut run: it defragments, and how many writes it takes */
	img = sxt_bdev_copy(pristine);
	cbd = sxc_cut_dev(img, 1, 0, 0, &cd);
	t0 = now_s();
	error = workload(cbd, &res);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(cbd);
	if (error || res.dr_skipped != SX_DEFRAG_DONE) {
		sxc_fail("%s: the uncut defrag: %s, %s", c->name, sx_strerror(error),
			 sx_defrag_skip_name(res.dr_skipped));
	} else {
		VERIFY(sx_mount(img, NULL, &mp) == 0);
		VERIFY(sx_open(mp, names[0], &fd) == 0);
		ext_after = extents(mp, fd);
		sx_close(mp, fd);
		VERIFY(sx_unmount(mp) == 0);
		if (ext_after != res.dr_ideal || ext_after >= ext_before)
			sxc_fail("%s: %u -> %u extents, the fewest is %u", c->name, ext_before,
				 ext_after, res.dr_ideal);
		else
			sxc_tally(sxc_recover_verify(img, 0, files_ok, c, "uncut run"));
	}
	sx_bdev_destroy(img);
	printf("%s: %u -> %u extents, %llu bytes copied in %.3f s; %llu writes, %llu flushes; "
	       "cutting every %llu\n", c->name, ext_before, ext_after,
	       (unsigned long long)res.dr_bytes, now_s() - t0, (unsigned long long)st.cs_writes,
	       (unsigned long long)st.cs_flushes, (unsigned long long)step);

	cuts.last = st.cs_writes;
	cuts_made = sxc_cut_writes(&cuts, crash_at, (void *)c);
	crash_points += cuts_made;
	printf("%s: %llu crash points\n", c->name, (unsigned long long)cuts_made);
	sxs_file_free(model[0]);
	sxs_file_free(model[1]);
	sx_bdev_destroy(pristine);
}

int main(void)
{
	const struct cfg cfgs[] = {
		{ "atomic/queued", true, 0 },
		{ "nonatomic/queued", false, 0 },
		{ "atomic/each", true, SX_MOUNT_LOG_EACH },
		{ "nonatomic/each", false, SX_MOUNT_LOG_EACH },
	};
	/* cut steps and modes per cut, queued then LOG_EACH */
	u64 step_q, step_e;
	u32 i, modes_q, modes_e;

	sxc_start();
	step_q = sxc_pick(4, 1, 1);
	step_e = sxc_pick(12, 4, 1);
	modes_q = sxc_pick(1, 3, 3);
	modes_e = sxc_pick(1, 1, 3);
	for (i = 0; i < ARRAY_SIZE(cfgs); i++) {
		bool each = cfgs[i].mount_flags & SX_MOUNT_LOG_EACH;

		wl_opts.mo_flags = cfgs[i].mount_flags;
		run_cfg(&cfgs[i], each ? step_e : step_q, each ? modes_e : modes_q);
	}
	printf("crash points: %llu (recovery freed the tmpfile after %llu of them)\n",
	       (unsigned long long)crash_points, (unsigned long long)tmpfiles_freed);
	return sxc_end();
}
