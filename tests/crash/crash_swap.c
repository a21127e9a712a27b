// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of swap_file_range on the store.
 *
 * Each case builds files of tagged blocks (every block says which file and
 * block it came from; holes between them), then runs a sequence of atomic
 * swaps, with a sync after each, on a crash-emulating device.  The
 * sequence runs once; before each chosen device write the run forks
 * (tests/common/sxfork.h) and the child is the same run with the power cut
 * at that write, the volatile writes kept, dropped or torn.  After recovery
 * each swap is all old or all new: every file, block by block and in size,
 * equals the model after some number k of the swaps, k between the last
 * durable and the last started swap.  The checker is clean (block
 * ownership, block counts and refcounts exact, no unfinished intent) and a
 * second recovery changes nothing.
 *
 * The cases, as the issue lists them: one extent; 64 extents with holes;
 * TO_EOF with unequal sizes and offsets; shared (cloned) extents; two
 * ranges of one file; a swap across the inline/B+tree boundary of both
 * forks; a mixed sequence of all of these; a 1,200-extent swap on a small
 * log (the chain checkpoints as it goes); and a 100,000-extent swap cut at
 * sampled writes.  Small cases are cut at every write in all three modes,
 * the mixed sequence too when queued (with LOG_EACH at every 4th write, in
 * one mode, modes in turn), the large ones at sampled writes.  SX_CRASH_LEVEL=quick samples, long cuts every
 * write in every mode and the 100,000-extent swap at 1,000 writes.
 * SX_SWAP_CASES=name,name runs only those cases.
 *
 * On these images a step of the swap is a direct step (the store changes
 * both forks in the step's transaction, many exchanges per step), so a
 * cut at every write cuts inside and between batched steps; the large
 * case (several such steps) also has its recovery cut at every write it
 * makes, after cuts at a third and half of the run.
 *
 * Every case runs with the log's default queue (a chain shares a few
 * records, so a cut loses whole groups of steps) and again with
 * SX_MOUNT_LOG_EACH (a record per transaction, so cuts fall between any
 * two steps); the 100,000-extent swap runs LOG_EACH only at the long level,
 * cut at 500 of its 600,000 records' writes besides the 1,000 sampled cuts
 * of the queued run (each cut recovers half the swap on average: the two
 * sweeps take some 40 minutes on 2 cores as it is).  LOG_EACH runs
 * take 30-60 times the writes, so below the long level each of their cut
 * writes is cut in one mode, the three in turn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sxswap.h"
#include "sxcrash.h"
#include "defer.h"
#include "inode.h"
#include "file.h"
#include "fork.h"
#include "bmap.h"

#define BS		1024u
#define NF		3		/* files a, b, c */
#define MAXOPS		4

/* One swap of a sequence. */
struct sop {
	int	f1, f2;		/* files: 0 = a, 1 = b, 2 = c */
	u64	o1, o2, n;	/* blocks; n 0: TO_EOF */
};

struct cfg {
	const char	*name;
	u64		img;		/* bytes */
	u32		logblocks;
	void		(*build)(const struct cfg *c, struct sx_mount *mp);
	u64		nblk;		/* blocks of a and b */
	u32		holes;		/* build_interleaved: every holes-th block a hole */
	const struct sop *ops;
	int		nops;
	/* crash points at each level (quick, normal, long): */
	u64		step[3];	/* cut every step-th write; 0: sample */
	u64		samples[3];	/* with step 0: this many writes, evenly spread */
	u32		modes[3];	/* modes cut at each write: 1 (in turn) or 3 */
	u32		each_levels;	/* levels (1 << level) that also run LOG_EACH */
	u64		each_samples;	/* LOG_EACH with step 0: this many (0: samples[]) */
};

/*
 * How the workload mounts: the log's default queue, where a whole chain
 * of transactions shares a few records, or SX_MOUNT_LOG_EACH, a record per
 * transaction, so that cuts fall between any two steps of the chain.
 */
static struct sx_mount_opts wl_opts;
static const char *wl_mode = "queued";

/* The model after each swap, and what the run reached. */
struct run {
	struct sxs_file	*m[MAXOPS + 1][NF];
	int		nfiles;
	int		ncommitted;	/* swaps that returned */
	int		nstarted;	/* swaps begun */
	int		ndurable;	/* swaps known durable (synced) */
	int		error;
};

static const char *const names[NF] = { "a", "b", "c" };
static struct sxs_file *init_model[NF];
static int nfiles;
static u64 crash_points;
static enum sxc_level level;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void new_files(struct sx_mount *mp, int n, u64 nblk)
{
	int f;

	nfiles = n;
	for (f = 0; f < n; f++) {
		init_model[f] = sxs_file_new(2 * nblk);
		VERIFY(sx_create(mp, names[f], 0644, &init_model[f]->sf_fd) == 0);
	}
}

/* Set file @f's size (file and model); blocks past it read as holes. */
static void set_size(struct sx_mount *mp, int f, u64 size)
{
	u64 i;

	VERIFY(sx_truncate(mp, init_model[f]->sf_fd, size) == 0);
	init_model[f]->sf_size = size;
	for (i = sx_howmany(size, BS); i < init_model[f]->sf_nblk; i++)
		init_model[f]->sf_tag[i] = 0;
}

/*
 * a and b written block by block, interleaved so that no two blocks of a
 * file are adjacent on disk, every holes-th block a hole (a and b out of
 * step); b is 7 blocks and 300 bytes shorter, so TO_EOF swaps change both
 * sizes and one EOF block is partial.
 */
static void build_interleaved(const struct cfg *c, struct sx_mount *mp)
{
	u64 i;
	int f;

	new_files(mp, 2, c->nblk);
	for (i = 0; i < c->nblk; i++)
		for (f = 0; f < 2; f++)
			if ((i + f) % c->holes)
				VERIFY(sxs_write(mp, BS, init_model[f], i,
						 sxs_tag((u32)f, i, 1)) == 0);
	for (f = 0; f < 2; f++)
		set_size(mp, f, (c->nblk - 7 * f) * BS - (f ? 300 : 0));
}

/* a and b each one extent: written one file after the other. */
static void build_one_extent(const struct cfg *c, struct sx_mount *mp)
{
	u64 i;
	int f;

	new_files(mp, 2, c->nblk);
	for (f = 0; f < 2; f++)
		for (i = 0; i < c->nblk; i++)
			VERIFY(sxs_write(mp, BS, init_model[f], i, sxs_tag((u32)f, i, 1)) == 0);
}

/*
 * Shared extents: interleaved a and b, then c a clone of all of a, and a
 * range of a cloned over part of b; the swaps then move blocks with
 * refcount 2 and 3 between files, and c (sharing them) must not change.
 */
static void build_shared(const struct cfg *c, struct sx_mount *mp)
{
	struct sxs_file *a, *b, *cc;
	int fd;

	build_interleaved(c, mp);
	a = init_model[0];
	b = init_model[1];
	nfiles = 3;
	cc = init_model[2] = sxs_file_new(2 * c->nblk);
	VERIFY(sx_create(mp, names[2], 0644, &fd) == 0);
	cc->sf_fd = fd;
	VERIFY(sx_clone(mp, fd, a->sf_fd) == 0);
	sxs_file_copy(cc, a);
	VERIFY(sx_clone_range(mp, b->sf_fd, 40 * BS, a->sf_fd, 10 * BS, 20 * BS) == 0);
	memcpy(&b->sf_tag[40], &a->sf_tag[10], 20 * sizeof(u64));
}

/*
 * The inline/B+tree boundary: a has a third of what the inline area holds
 * (inline), b three times as many (a B+tree); the whole-file swap turns a
 * into a B+tree and b back inline.
 */
static u32 inline_max;

static void build_boundary(const struct cfg *c, struct sx_mount *mp)
{
	u64 i, na, nb;
	int f;

	inline_max = sx_fork_inline_max(mp, &sx_bmap_fork_ops);
	na = inline_max / 3;
	nb = 3 * inline_max;
	VERIFY(2 * nb <= c->nblk);
	new_files(mp, 2, c->nblk);
	for (i = 0; i < 2 * nb; i += 2)
		for (f = 0; f < 2; f++)
			if (i / 2 < (f ? nb : na))
				VERIFY(sxs_write(mp, BS, init_model[f], i + (u64)f,
						 sxs_tag((u32)f, i + (u64)f, 1)) == 0);
	for (f = 0; f < 2; f++)
		set_size(mp, f, 2 * nb * BS);
}

/* Is @name's fork a B+tree?  (Checks that the boundary case crosses it.) */
static bool is_btree(struct sx_mount *mp, const char *name)
{
	struct sx_inode *ip;
	bool bt;
	int fd;

	VERIFY(sx_open(mp, name, &fd) == 0);
	VERIFY(sx_fd_get(mp, fd, &ip) == 0);
	bt = ip->i_blevel > 0;
	sx_irele(ip);
	sx_close(mp, fd);
	return bt;
}

static struct sx_bdev *make_pristine(const struct cfg *c)
{
	struct sx_bdev *bd = sxs_mkimg(c->img, BS, c->logblocks, true);
	struct sx_mount *mp;
	int f;

	VERIFY(sx_mount(bd, NULL, &mp) == 0);
	c->build(c, mp);
	for (f = 0; f < nfiles; f++)
		sx_close(mp, init_model[f]->sf_fd);
	VERIFY(sx_unmount(mp) == 0);
	return bd;
}

/* Apply swap @op to the models (as the engine does it, TO_EOF sizes too). */
static void model_op(const struct sop *op, struct sxs_file **m)
{
	struct sxs_file *f1 = m[op->f1], *f2 = m[op->f2];

	if (op->n == 0) {
		u64 s1 = f1->sf_size, s2 = f2->sf_size;
		u64 len = sx_max(s1 - op->o1 * BS, s2 - op->o2 * BS);

		sxs_model_swap(f1, op->o1, f2, op->o2, sx_howmany(len, BS));
		f1->sf_size = op->o1 * BS + (s2 - op->o2 * BS);
		f2->sf_size = op->o2 * BS + (s1 - op->o1 * BS);
		return;
	}
	sxs_model_swap(f1, op->o1, f2, op->o2, op->n);
}

/* The extents (fiemap records) of [@off, +@len) of @fd: what a swap of it moves. */
static u64 count_extents(struct sx_mount *mp, int fd, u64 off, u64 len)
{
	struct sx_extent ext[256];
	u64 n = 0, end = off + len;
	u32 got;

	while (off < end) {
		VERIFY(sx_fiemap(mp, fd, off, end - off, ext, 256, &got) == 0);
		if (!got)
			break;
		n += got;
		off = ext[got - 1].ex_off + ext[got - 1].ex_len;
	}
	return n;
}

/* Run the swaps on @bd, recording the models; @stats: print figures. */
static void workload(const struct cfg *c, struct sx_bdev *bd, struct run *r, bool stats)
{
	struct sx_mount *mp;
	int fd[NF], i, f, error;

	r->ncommitted = r->nstarted = r->ndurable = 0;
	r->nfiles = nfiles;
	r->error = 0;
	for (f = 0; f < nfiles; f++)
		sxs_file_copy(r->m[0][f], init_model[f]);
	r->error = sx_mount(bd, &wl_opts, &mp);
	if (r->error)
		return;
	for (f = 0; f < nfiles; f++) {
		fd[f] = -1;
		if (!r->error)
			r->error = sx_open(mp, names[f], &fd[f]);
	}
	for (i = 0; !r->error && i < c->nops; i++) {
		const struct sop *op = &c->ops[i];
		struct file_swap_range fsr;
		struct sx_log_stats l0, l1;
		struct sx_defer_stats d0, d1;
		u64 e1 = 0, e2 = 0;
		double t0;

		for (f = 0; f < nfiles; f++)
			sxs_file_copy(r->m[i + 1][f], r->m[i][f]);
		model_op(op, r->m[i + 1]);
		memset(&fsr, 0, sizeof(fsr));
		fsr.file1_fd = fd[op->f1];
		fsr.file1_offset = (s64)(op->o1 * BS);
		fsr.file2_offset = (s64)(op->o2 * BS);
		fsr.length = (s64)(op->n * BS);
		if (op->n == 0)
			fsr.flags = FILE_SWAP_RANGE_TO_EOF;
		if (stats) {
			u64 len = op->n ? op->n * BS : sx_max(r->m[i][op->f1]->sf_size - op->o1 * BS,
							      r->m[i][op->f2]->sf_size - op->o2 * BS);

			e1 = count_extents(mp, fd[op->f1], op->o1 * BS, len);
			e2 = count_extents(mp, fd[op->f2], op->o2 * BS, len);
		}
		sx_log_get_stats(mp, &l0);
		sx_defer_get_stats(mp, &d0);
		r->nstarted = i + 1;
		t0 = now_s();
		error = sx_swap_file_range(mp, fd[op->f2], &fsr);
		if (error) {
			r->error = error;
			break;
		}
		r->ncommitted = i + 1;
		error = sx_sync(mp);
		if (error) {
			r->error = error;
			break;
		}
		r->ndurable = i + 1;
		if (stats) {
			double t = now_s() - t0;
			u64 blocks = sx_howmany((u64)fsr.length, BS);
			u64 ext = sx_max((e1 + e2) / 2, (u64)1);

			sx_log_get_stats(mp, &l1);
			sx_defer_get_stats(mp, &d1);
			printf("%s swap %d: %llu blocks, %llu extents a side on average: %.3f s "
			       "(%.0f extents/s), %llu transactions (%.2f per extent), "
			       "%llu log bytes (%.0f per extent), %llu finish steps\n",
			       c->name, i, (unsigned long long)blocks, (unsigned long long)ext,
			       t, ext / t, (unsigned long long)(l1.ls_trans - l0.ls_trans),
			       (double)(l1.ls_trans - l0.ls_trans) / ext,
			       (unsigned long long)(l1.ls_bytes - l0.ls_bytes),
			       (double)(l1.ls_bytes - l0.ls_bytes) / ext,
			       (unsigned long long)(d1.ds_steps - d0.ds_steps));
		}
	}
	for (f = 0; f < nfiles; f++)
		if (fd[f] >= 0)
			sx_close(mp, fd[f]);
	error = sx_unmount(mp);
	if (!r->error)
		r->error = error;
}

/* Every file equals the model after k swaps, for one k in the window. */
static int files_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct run *r = arg;
	char msg[160], first[200] = "";
	int fd[NF], f, k;
	bool ok = false;

	for (f = 0; f < r->nfiles; f++)
		SXC_CHECK(sx_open(mp, names[f], &fd[f]) == 0, "%s: open %s", what, names[f]);
	for (k = r->ndurable; !ok && k <= r->nstarted; k++) {
		ok = true;
		for (f = 0; ok && f < r->nfiles; f++) {
			r->m[k][f]->sf_fd = fd[f];
			if (sxs_verify(mp, BS, r->m[k][f], msg, sizeof(msg))) {
				ok = false;
				if (!first[0])
					snprintf(first, sizeof(first), "k=%d %s: %s", k,
						 names[f], msg);
			}
		}
	}
	for (f = 0; f < r->nfiles; f++)
		sx_close(mp, fd[f]);
	SXC_CHECK(ok, "%s: no state in [%d, %d] matches (%s)", what, r->ndurable, r->nstarted,
		  first);
	return 0;
}

/* Recover @bd and check it against @r. */
static int recover_and_verify(struct sx_bdev *bd, const struct run *r, const char *what)
{
	return sxc_recover_verify(bd, 0, files_ok, r, what);
}

/*
 * files_ok() that says which state matched: the number of swaps the files
 * show, so that a recovery cut short and finished by a second recovery
 * must end where an uncut recovery ends.
 */
static int files_state(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct run *r = arg;
	char msg[160];
	int fd[NF], f, k, match = -1;

	for (f = 0; f < r->nfiles; f++)
		SXC_CHECK(sx_open(mp, names[f], &fd[f]) == 0, "%s: open %s", what, names[f]);
	for (k = r->ndurable; match < 0 && k <= r->nstarted; k++) {
		bool ok = true;

		for (f = 0; ok && f < r->nfiles; f++) {
			r->m[k][f]->sf_fd = fd[f];
			ok = !sxs_verify(mp, BS, r->m[k][f], msg, sizeof(msg));
		}
		if (ok)
			match = k;
	}
	for (f = 0; f < r->nfiles; f++)
		sx_close(mp, fd[f]);
	SXC_CHECK(match >= 0, "%s: no state in [%d, %d] matches", what, r->ndurable, r->nstarted);
	return match;
}

/* Cuts of recoveries (the "large" case): a crash after some direct steps. */
static u64 recovery_crash_points;

/*
 * Cut the run at write @w (dropped), then cut the recovery of what is
 * left at every write it makes, in the three modes in turn: each cut
 * recovery, finished by another, must end in the state an uncut recovery
 * reaches (the swap all done once its intent was durable).
 */
static int cut_recoveries(const struct cfg *c, struct sx_bdev *pristine, struct run *r, u64 w)
{
	static const enum sx_crash_mode rmodes[] = { SX_CRASH_DROP, SX_CRASH_TEAR, SX_CRASH_KEEP };
	struct sxc_cuts rcuts = { .modes = rmodes, .nmodes = 3 };
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd, *saved;
	char what[96];
	int ref;

	cbd = sxc_cut_dev(img, w, w, SX_CRASH_DROP, NULL);
	workload(c, cbd, r, false);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "%s/%s cut at write %llu, uncut recovery", c->name, wl_mode,
		 (unsigned long long)w);
	if (!r->error) {
		sxc_fail("%s: the workload did not see the power cut", what);
		sx_bdev_destroy(img);
		return -1;
	}
	saved = sxt_bdev_copy(img);
	ref = sxc_recover_verify(img, 0, files_state, r, what);
	sxc_tally(ref < 0 ? -1 : 0);
	if (ref >= 0)
		recovery_crash_points += sxc_cut_recovery(saved, &rcuts, w, 0, files_state, r, ref);
	sx_bdev_destroy(saved);
	sx_bdev_destroy(img);
	return ref;
}

static void run_cfg(const struct cfg *c)
{
	static const enum sx_crash_mode modes[] = { SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR };
	struct sx_bdev *pristine, *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	struct sxf_points pts;
	struct run r;
	double t0 = now_s();
	char what[96];
	int k, f;

	memset(&r, 0, sizeof(r));
	pristine = make_pristine(c);
	for (k = 0; k <= MAXOPS; k++)
		for (f = 0; f < NF; f++)
			r.m[k][f] = sxs_file_new(2 * c->nblk);

	/* the uncut run: how many writes, the figures, and it must end clean */
	img = sxt_bdev_copy(pristine);
	VERIFY(sx_crashdev_create(img, 1, &cbd, &cd) == 0);
	workload(c, cbd, &r, true);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(cbd);
	if (r.error)
		sxc_fail("%s: the workload failed: %s", c->name, sx_strerror(r.error));
	else
		sxc_tally(recover_and_verify(img, &r, "uncut run"));
	if (c->build == build_boundary) {
		struct sx_mount *mp;
		bool ok;

		VERIFY(sx_mount(img, NULL, &mp) == 0);
		ok = is_btree(mp, "a") && !is_btree(mp, "b");
		VERIFY(sx_unmount(mp) == 0);
		if (!ok)
			sxc_fail("%s: the swap did not cross the inline/B+tree boundary "
				 "(inline area: %u records)", c->name, inline_max);
	}
	sx_bdev_destroy(img);

	/* the same run again, forking a child cut at each chosen write */
	memset(&pts, 0, sizeof(pts));
	pts.fp_step = c->step[level];
	if (!pts.fp_step)
		pts.fp_step = sx_max(st.cs_writes / (wl_opts.mo_flags & SX_MOUNT_LOG_EACH &&
						     c->each_samples ? c->each_samples :
						     c->samples[level]), (u64)1);
	pts.fp_modes = modes;
	pts.fp_nmodes = 3;
	pts.fp_per_point = wl_opts.mo_flags & SX_MOUNT_LOG_EACH && level < 2 ? 1 : c->modes[level];
	if (!(wl_opts.mo_flags & SX_MOUNT_LOG_EACH) && level > 0 && c->step[level]) {
		/* queued, a chain is a few dozen writes: cut each in every mode */
		pts.fp_step = 1;
		pts.fp_per_point = 3;
	}
	pts.fp_jobs = sxf_jobs();
	img = sxt_bdev_copy(pristine);
	VERIFY(sx_crashdev_create(img, 7, &cbd, &cd) == 0);
	pts.fp_cd = cd;
	sxf_arm(&pts);
	workload(c, cbd, &r, false);
	sx_bdev_destroy(cbd);
	if (pts.fp_child) {
		int error = -1;

		snprintf(what, sizeof(what), "%s/%s write %llu %s", c->name, wl_mode,
			 (unsigned long long)pts.fp_write, sxf_mode_name(pts.fp_mode));
		if (r.error == 0)
			fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
		else
			error = recover_and_verify(img, &r, what);
		sxf_child_done(&pts, error == 0);
	}
	sxf_wait_all(&pts);
	if (r.error)
		sxc_fail("%s: the second run failed: %s", c->name, sx_strerror(r.error));
	sx_bdev_destroy(img);
	sxc_count.passed += pts.fp_passed;
	sxc_count.failed += pts.fp_failed;
	crash_points += pts.fp_points;
	printf("%s/%s: %d swaps, %llu writes, %llu flushes; %llu crash points (every %llu-th "
	       "write, %u mode%s each), %llu failed, %.1f s\n",
	       c->name, wl_mode, c->nops, (unsigned long long)st.cs_writes,
	       (unsigned long long)st.cs_flushes, (unsigned long long)pts.fp_points,
	       (unsigned long long)pts.fp_step, pts.fp_per_point,
	       pts.fp_per_point > 1 ? "s" : "", (unsigned long long)pts.fp_failed,
	       now_s() - t0);
	fflush(stdout);

	/*
	 * A crash after some direct steps, its recovery cut at every write
	 * (the large case has several steps of many exchanges each): a third
	 * and halfway through the run's writes.
	 */
	if (!strcmp(c->name, "large")) {
		u64 before = recovery_crash_points;
		int k1 = cut_recoveries(c, pristine, &r, st.cs_writes / 3);
		int k2 = cut_recoveries(c, pristine, &r, st.cs_writes / 2);

		printf("%s/%s: recoveries cut at %llu writes (after the cuts at writes %llu and "
		       "%llu: %d and %d swaps done)\n", c->name, wl_mode,
		       (unsigned long long)(recovery_crash_points - before),
		       (unsigned long long)st.cs_writes / 3, (unsigned long long)st.cs_writes / 2,
		       k1, k2);
	}

	for (k = 0; k <= MAXOPS; k++)
		for (f = 0; f < NF; f++)
			sxs_file_free(r.m[k][f]);
	for (f = 0; f < nfiles; f++)
		sxs_file_free(init_model[f]);
	sx_bdev_destroy(pristine);
}

static const struct sop ops_whole[] = {
	{ 0, 1, 0, 0, 0 },		/* whole files (TO_EOF) */
};

static const struct sop ops_holes64[] = {
	{ 0, 1, 0, 0, 128 },		/* 64 extents of each and the holes between */
};

static const struct sop ops_eof[] = {
	{ 0, 1, 20, 50, 0 },		/* TO_EOF, unequal offsets and sizes */
	{ 1, 0, 3, 3, 0 },
};

static const struct sop ops_shared[] = {
	{ 0, 1, 0, 0, 100 },		/* a's shared blocks to b, b's (some shared) to a */
	{ 2, 1, 5, 35, 30 },		/* c's blocks, shared with b now, into b */
};

static const struct sop ops_onefile[] = {
	{ 0, 0, 10, 60, 40 },		/* two ranges of one file */
	{ 1, 1, 0, 64, 32 },
};

static const struct sop ops_mixed[] = {
	{ 0, 1, 0, 0, 0 },
	{ 0, 0, 10, 150, 100 },
	{ 0, 1, 20, 50, 0 },
	{ 1, 0, 5, 5, 200 },
};

int main(void)
{
	const char *only = getenv("SX_SWAP_CASES");
	struct cfg cases[] = {
		{ "one-extent", 8ull << 20, 1024, build_one_extent, 8, 0, ops_whole, 1,
		  { 2, 1, 1 }, { 0 }, { 1, 3, 3 }, 7 },
		{ "holes64", 8ull << 20, 1024, build_interleaved, 136, 2, ops_holes64, 1,
		  { 4, 1, 1 }, { 0 }, { 1, 3, 3 }, 7 },
		{ "to-eof", 8ull << 20, 1024, build_interleaved, 100, 5, ops_eof, 2,
		  { 4, 1, 1 }, { 0 }, { 1, 3, 3 }, 7 },
		{ "shared", 8ull << 20, 1024, build_shared, 120, 5, ops_shared, 2,
		  { 4, 1, 1 }, { 0 }, { 1, 3, 3 }, 7 },
		{ "one-file", 8ull << 20, 1024, build_interleaved, 120, 5, ops_onefile, 2,
		  { 4, 1, 1 }, { 0 }, { 1, 3, 3 }, 7 },
		{ "boundary", 8ull << 20, 1024, build_boundary, 0, 2, ops_whole, 1,
		  { 4, 1, 1 }, { 0 }, { 1, 3, 3 }, 7 },
		{ "mixed", 32ull << 20, 1024, build_interleaved, 300, 5, ops_mixed, 4,
		  { 16, 4, 1 }, { 0 }, { 1, 1, 3 }, 7 },
		{ "large", 64ull << 20, 1024, build_interleaved, 1200, 2, ops_whole, 1,
		  { 0, 0, 1 }, { 20, 200, 0 }, { 1, 1, 3 }, 7 },
		{ "huge", 0, 4096, build_interleaved, 200000, 2, ops_whole, 1,
		  { 0, 0, 0 }, { 20, 100, 1000 }, { 1, 1, 1 }, 4, 500 },
	};
	u32 i;

	level = sxc_start();
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct cfg *c = &cases[i];

		if (only && *only && !strstr(only, c->name))
			continue;
		if (c->build == build_boundary)
			c->nblk = 4096;	/* enough for 3 x the inline area, any block size */
		if (!c->img)	/* data, two B+trees, the log and slack */
			c->img = (c->nblk * 2 + c->nblk / 8 + 8192) * (u64)BS + (16ull << 20);
		wl_opts.mo_flags = 0;
		wl_mode = "queued";
		run_cfg(c);
		if (c->each_levels & (1u << level)) {
			wl_opts.mo_flags = SX_MOUNT_LOG_EACH;
			wl_mode = "each";
			run_cfg(c);
		}
	}
	printf("crash points: %llu, recovery crash points: %llu\n",
	       (unsigned long long)crash_points, (unsigned long long)recovery_crash_points);
	return sxc_end();
}
