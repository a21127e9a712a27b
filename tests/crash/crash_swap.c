// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of swap_file_range on the store.
 *
 * Two files of tagged blocks (every block says which file and block it
 * came from; holes and unwritten extents between them) go through a
 * sequence of atomic swaps with a sync after each: whole ranges of two
 * files, two ranges of one file, TO_EOF with unequal offsets, on a
 * crash-emulating device.  The power is cut at every 4th device write
 * (every write with SX_CRASH_LEVEL=long, every 16th with quick), with
 * the volatile writes kept, dropped or torn.  After recovery each swap is
 * all old or all new: both files, block by block and in size, equal the
 * model after some number k of the swaps, k between the last durable and
 * the last committed swap.  The checker is clean (block ownership, block
 * counts and refcounts exact, no unfinished intent) and a second recovery
 * changes nothing.
 *
 * A larger swap (1,200 extents each side, a small log so that the chain
 * checkpoints as it goes) is cut at sampled writes.  SX_CRASH_LEVEL=long
 * swaps 100,000 extents each side at 1,000 sampled cuts and prints the
 * throughput of the uncut swap.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sxswap.h"
#include "defer.h"

#define BS		1024u
#define MAXOPS		4

struct cfg {
	const char	*name;
	u64		img;		/* bytes */
	u32		logblocks;
	u64		nblk;		/* blocks of each file */
	u32		holes;		/* every holes-th block is a hole */
	int		nops;
	u64		samples;	/* crash points sampled (0: every write) */
};

/* One swap of the sequence. */
struct sop {
	int	f1, f2;		/* files: 0 = a, 1 = b */
	u64	o1, o2, n;	/* blocks; n 0: TO_EOF */
};

static const struct sop ops_small[MAXOPS] = {
	{ 0, 1, 0, 0, 0 },		/* whole files; sizes equal: TO_EOF = all */
	{ 0, 0, 10, 150, 100 },		/* two ranges of one file */
	{ 0, 1, 20, 50, 0 },		/* TO_EOF, unequal offsets and sizes */
	{ 1, 0, 5, 5, 200 },
};

static const struct sop ops_large[MAXOPS] = {
	{ 0, 1, 0, 0, 0 },
};

/* The model after each swap, and what the run reached. */
struct run {
	struct sxs_file	*m[MAXOPS + 1][2];
	int		ncommitted;	/* swaps that returned */
	int		ndurable;	/* swaps known durable (synced) */
	int		error;
};

static u64 passed, failed, crash_points;
static struct sx_bdev *pristine;
static struct sxs_file *init_model[2];
static const char *const names[2] = { "a", "b" };

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		failed++; \
		fprintf(stderr, "FAIL %s:%d: %s: ", __func__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		return -1; \
	} \
} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The pristine image: both files written block by block, interleaved, with holes. */
static void make_pristine(const struct cfg *c)
{
	struct sx_mount *mp;
	u64 i;
	int f;

	pristine = sxs_mkimg(c->img, BS, c->logblocks, true);
	VERIFY(sx_mount(pristine, NULL, &mp) == 0);
	for (f = 0; f < 2; f++) {
		init_model[f] = sxs_file_new(2 * c->nblk);
		VERIFY(sx_create(mp, names[f], 0644, &init_model[f]->sf_fd) == 0);
	}
	for (i = 0; i < c->nblk; i++)
		for (f = 0; f < 2; f++)
			if ((i + f) % c->holes)
				VERIFY(sxs_write(mp, BS, init_model[f], i,
						 sxs_tag((u32)f, i, 1)) == 0);
	/* b is shorter: TO_EOF swaps change both sizes */
	for (f = 0; f < 2; f++) {
		u64 size = (c->nblk - 7 * f) * BS - (f ? 300 : 0);

		VERIFY(sx_truncate(mp, init_model[f]->sf_fd, size) == 0);
		init_model[f]->sf_size = size;
		for (i = sx_howmany(size, BS); i < 2 * c->nblk; i++)
			init_model[f]->sf_tag[i] = 0;
		sx_close(mp, init_model[f]->sf_fd);
	}
	VERIFY(sx_unmount(mp) == 0);
}

/* Apply swap @op to the models (as the engine does it, TO_EOF sizes too). */
static void model_op(const struct sop *op, struct sxs_file **m)
{
	struct sxs_file *f1 = m[op->f1], *f2 = m[op->f2];
	u64 n = op->n;

	if (n == 0) {
		u64 s1 = f1->sf_size, s2 = f2->sf_size;
		u64 len = sx_max(s1 - op->o1 * BS, s2 - op->o2 * BS);

		n = sx_howmany(len, BS);
		sxs_model_swap(f1, op->o1, f2, op->o2, n);
		f1->sf_size = op->o1 * BS + (s2 - op->o2 * BS);
		f2->sf_size = op->o2 * BS + (s1 - op->o1 * BS);
		return;
	}
	sxs_model_swap(f1, op->o1, f2, op->o2, n);
}

/* Run the swaps on @bd, recording the models; @stats: print figures. */
static void workload(const struct cfg *c, const struct sop *ops, struct sx_bdev *bd,
		     struct run *r, bool stats)
{
	struct sx_mount *mp;
	int fd[2], i, f, error;

	r->ncommitted = r->ndurable = 0;
	r->error = 0;
	for (f = 0; f < 2; f++)
		sxs_file_copy(r->m[0][f], init_model[f]);
	r->error = sx_mount(bd, NULL, &mp);
	if (r->error)
		return;
	for (f = 0; f < 2; f++) {
		fd[f] = -1;
		if (!r->error)
			r->error = sx_open(mp, names[f], &fd[f]);
	}
	for (i = 0; !r->error && i < c->nops; i++) {
		const struct sop *op = &ops[i];
		struct file_swap_range fsr;
		struct sx_log_stats l0, l1;
		struct sx_defer_stats d0, d1;
		double t0;

		for (f = 0; f < 2; f++)
			sxs_file_copy(r->m[i + 1][f], r->m[i][f]);
		model_op(op, r->m[i + 1]);
		memset(&fsr, 0, sizeof(fsr));
		fsr.file1_fd = fd[op->f1];
		fsr.file1_offset = (s64)(op->o1 * BS);
		fsr.file2_offset = (s64)(op->o2 * BS);
		fsr.length = (s64)(op->n * BS);
		if (op->n == 0)
			fsr.flags = FILE_SWAP_RANGE_TO_EOF;
		sx_log_get_stats(mp, &l0);
		sx_defer_get_stats(mp, &d0);
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
			u64 ext = c->nblk - c->nblk / c->holes;

			sx_log_get_stats(mp, &l1);
			sx_defer_get_stats(mp, &d1);
			printf("%s swap %d: %llu blocks, ~%llu extents each side: %.2f s "
			       "(%.0f extents/s), %llu transactions (%.2f per extent), "
			       "%llu log bytes (%.0f per extent), %llu SXI/BUI steps\n",
			       c->name, i, (unsigned long long)sx_howmany((u64)fsr.length, BS),
			       (unsigned long long)ext, t, ext / t,
			       (unsigned long long)(l1.ls_trans - l0.ls_trans),
			       (double)(l1.ls_trans - l0.ls_trans) / ext,
			       (unsigned long long)(l1.ls_bytes - l0.ls_bytes),
			       (double)(l1.ls_bytes - l0.ls_bytes) / ext,
			       (unsigned long long)(d1.ds_steps - d0.ds_steps));
		}
	}
	for (f = 0; f < 2; f++)
		if (fd[f] >= 0)
			sx_close(mp, fd[f]);
	error = sx_unmount(mp);
	if (!r->error)
		r->error = error;
}

/* Both files equal the model after k swaps, for some k in the window. */
static int files_ok(struct sx_mount *mp, const struct run *r, const char *what)
{
	char msg[160], first[200] = "";
	int fd[2], f, k;
	bool ok = false;

	for (f = 0; f < 2; f++)
		CHECK(sx_open(mp, names[f], &fd[f]) == 0, "%s: open", what);
	for (k = r->ndurable; !ok && k <= r->ncommitted + (r->error ? 1 : 0); k++) {
		if (k > MAXOPS || !r->m[k][0]->sf_nblk)
			break;
		ok = true;
		for (f = 0; ok && f < 2; f++) {
			r->m[k][f]->sf_fd = fd[f];
			if (sxs_verify(mp, BS, r->m[k][f], msg, sizeof(msg))) {
				ok = false;
				if (!first[0])
					snprintf(first, sizeof(first), "k=%d %s: %s", k,
						 names[f], msg);
			}
		}
	}
	for (f = 0; f < 2; f++)
		sx_close(mp, fd[f]);
	CHECK(ok, "%s: no state in [%d, %d] matches (%s)", what, r->ndurable,
	      r->ncommitted + 1, first);
	return 0;
}

static void check_report(void *arg, const char *fmt, ...)
{
	va_list ap;

	if (!getenv("SX_TEST_VERBOSE"))
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Recover @bd and check it against @r. */
static int recover_and_verify(struct sx_bdev *bd, const struct run *r, const char *what)
{
	struct sx_mount *mp;
	struct sx_bdev *once;
	u64 problems = 0;
	int error, bad;

	error = sx_mount(bd, NULL, &mp);
	CHECK(error == 0, "%s: mount after crash: %s", what, sx_strerror(error));
	bad = files_ok(mp, r, what);
	error = sx_unmount(mp);
	if (bad)
		return -1;
	CHECK(error == 0, "%s: unmount after recovery: %s", what, sx_strerror(error));
	error = sx_check(bd, check_report, NULL, &problems);
	CHECK(error == 0 && problems == 0, "%s: checker: %d, %llu problems", what, error,
	      (unsigned long long)problems);
	once = sxt_bdev_copy(bd);
	error = sx_mount(bd, NULL, &mp);
	CHECK(error == 0, "%s: second mount: %s", what, sx_strerror(error));
	error = sx_unmount(mp);
	CHECK(error == 0, "%s: second unmount", what);
	CHECK(sxt_bdev_equal(bd, once), "%s: second recovery changed the image", what);
	sx_bdev_destroy(once);
	return 0;
}

static void crash_at(const struct cfg *c, const struct sop *ops, struct run *r, u64 w,
		     enum sx_crash_mode mode)
{
	static const char *const mnames[] = { "keep", "drop", "tear", "random" };
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd;
	struct sx_crashdev *cd;
	char what[96];

	VERIFY(sx_crashdev_create(img, w * 7 + mode, &cbd, &cd) == 0);
	sx_crashdev_cut_at_write(cd, w, mode);
	workload(c, ops, cbd, r, false);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "%s write %llu %s", c->name, (unsigned long long)w,
		 mnames[mode]);
	crash_points++;
	if (r->error == 0) {
		failed++;
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
	} else if (recover_and_verify(img, r, what) == 0) {
		passed++;
	}
	sx_bdev_destroy(img);
}

static void run_cfg(const struct cfg *c, const struct sop *ops, u64 step_quick)
{
	static const enum sx_crash_mode modes[] = { SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR };
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	struct run r;
	u64 w, step, first;
	int k, f;
	u32 m;

	memset(&r, 0, sizeof(r));
	make_pristine(c);
	for (k = 0; k <= MAXOPS; k++)
		for (f = 0; f < 2; f++)
			r.m[k][f] = sxs_file_new(k <= c->nops ? 2 * c->nblk : 0);

	/* the uncut run: how many writes, and it must end clean */
	img = sxt_bdev_copy(pristine);
	VERIFY(sx_crashdev_create(img, 1, &cbd, &cd) == 0);
	workload(c, ops, cbd, &r, true);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(cbd);
	if (r.error) {
		failed++;
		fprintf(stderr, "FAIL %s: the workload failed: %s\n", c->name,
			sx_strerror(r.error));
	} else if (recover_and_verify(img, &r, "uncut run") == 0) {
		passed++;
	}
	sx_bdev_destroy(img);
	first = 1;
	step = c->samples ? sx_max(st.cs_writes / c->samples, (u64)1) : step_quick;
	printf("%s: %d swaps, %llu writes, %llu flushes; cutting every %llu\n", c->name,
	       c->nops, (unsigned long long)st.cs_writes, (unsigned long long)st.cs_flushes,
	       (unsigned long long)step);
	for (w = first; w <= st.cs_writes; w += step)
		for (m = 0; m < 3; m++)
			crash_at(c, ops, &r, w, modes[(m + w) % 3]);
	for (k = 0; k <= MAXOPS; k++)
		for (f = 0; f < 2; f++)
			sxs_file_free(r.m[k][f]);
	for (f = 0; f < 2; f++)
		sxs_file_free(init_model[f]);
	sx_bdev_destroy(pristine);
}

int main(void)
{
	const char *lv = getenv("SX_CRASH_LEVEL");
	int level = 1;
	struct cfg small = { "small", 32ull << 20, 1024, 300, 5, 4, 0 };
	struct cfg large = { "large", 64ull << 20, 1024, 1200, 2, 1, 40 };
	struct cfg huge = { "huge", 1ull << 30, 4096, 200000, 2, 1, 1000 };

	if (lv && !strcmp(lv, "quick"))
		level = 0;
	else if (lv && !strcmp(lv, "long"))
		level = 2;
	sx_thread_enter();
	sxt_quiet();
	run_cfg(&small, ops_small, level == 0 ? 16 : level == 1 ? 4 : 1);
	run_cfg(&large, ops_large, 1);
	if (level >= 2)
		run_cfg(&huge, ops_large, 1);
	printf("crash points: %llu\n", (unsigned long long)crash_points);
	printf("%llu passed, %llu failed\n", (unsigned long long)passed,
	       (unsigned long long)failed);
	return failed ? 1 : 0;
}
