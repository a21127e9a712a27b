// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of the journal.
 *
 * A deterministic workload of allocator and metadata-block transactions
 * (allocate an extent and initialise a test block in it, rewrite a test
 * block, binval a test block and free its extent; syncs and checkpoints in
 * between) runs on a crash-emulating device.  The power is cut at every
 * single device write, with every volatile write kept, dropped or torn.
 * After recovery the image must hold exactly one state the workload reached,
 * no older than the last durable commit and no newer than the last commit;
 * the checker must be clean; recovering again must change no byte.  Then
 * the power is cut at every write of the recovery itself, and the second
 * recovery must reach the same state.  Finally an I/O error is injected at
 * every read, write and flush (once and forever): each gives a clean error
 * and the image still recovers to a valid state.
 *
 * SX_CRASH_LEVEL=quick samples every 7th write; long adds more seeds and
 * recovery crashes in every mode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxtest.h"

#define NTX		64
#define MAXE		48
#define IMG_SIZE	(4ull << 20)

struct ext {
	u64	bno;
	u32	len;
	u64	gen;
};

struct state {
	u32		n;
	struct ext	e[MAXE];
};

struct run {
	struct state	states[NTX + 1];
	int		ncommitted;	/* last commit that may have reached the log */
	int		ndurable;	/* last commit known durable */
	int		error;		/* first error the workload saw */
};

static u64 passed, failed, crash_points, recovery_crash_points, io_error_points;
static int level;	/* 0 quick, 1 normal, 2 long */
static struct sx_bdev *pristine;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		failed++; \
		fprintf(stderr, "FAIL %s:%d: %s: ", __func__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fprintf(stderr, "\n"); \
		return -1; \
	} \
} while (0)

/* Log bytes one workload transaction may need. */
static u32 tx_res(struct sx_mount *mp)
{
	return 2 * sx_alloc_res_bytes(mp) + 2 * sx_trans_buf_bytes(mp);
}

/* One transaction of the workload on @cur; 0 or the error that stopped it. */
static int one_tx(struct sx_mount *mp, u64 *seed, int i, struct state *cur, bool *sync)
{
	struct sx_trans *tp;
	struct sx_buf *bp;
	u32 op = sxt_rand(seed) % 10, k;
	int error;

	*sync = (i % 10 == 0);
	error = sx_trans_alloc(mp, tx_res(mp), *sync ? SX_TRANS_SYNC : 0, &tp);
	if (error)
		return error;
	if ((op < 5 || cur->n == 0) && cur->n < MAXE) {
		u64 bno;
		u32 len;

		error = sx_alloc_extent(tp, 0, 1, 1 + sxt_rand(seed) % 8, &bno, &len);
		if (error == -ENOSPC) {
			sx_trans_cancel(tp);
			return 0;
		}
		if (!error)
			error = sxt_tblock_write(tp, bno, i);
		if (error)
			goto out_cancel;
		cur->e[cur->n].bno = bno;
		cur->e[cur->n].len = len;
		cur->e[cur->n].gen = i;
		cur->n++;
	} else if (op < 8) {
		k = sxt_rand(seed) % cur->n;
		error = sxt_tblock_update(tp, cur->e[k].bno, i);
		if (error)
			goto out_cancel;
		cur->e[k].gen = i;
	} else {
		k = sxt_rand(seed) % cur->n;
		error = sx_trans_read_buf(tp, cur->e[k].bno, &sxt_tblock_ops, 0, &bp);
		if (!error)
			error = sx_trans_binval(tp, bp);
		if (!error)
			error = sx_free_extent(tp, cur->e[k].bno, cur->e[k].len);
		if (error)
			goto out_cancel;
		cur->e[k] = cur->e[--cur->n];
	}
	return sx_trans_commit(tp);

out_cancel:
	sx_trans_cancel(tp);
	return error;
}

/* Run the workload on @bd (mount included); record the states it reached. */
static void workload(struct sx_bdev *bd, u64 seed, struct run *r)
{
	struct sx_mount *mp;
	struct state cur = { 0 };
	int i, error;

	memset(r, 0, sizeof(*r));
	r->error = sx_mount(bd, NULL, &mp);
	if (r->error)
		return;
	for (i = 1; i <= NTX; i++) {
		struct state next = cur;
		bool sync;

		error = one_tx(mp, &seed, i, &next, &sync);
		/* a failed commit may still have queued its changes */
		r->states[i] = next;
		r->ncommitted = i;
		if (error) {
			r->error = error;
			break;
		}
		cur = next;
		if (sync)
			r->ndurable = i;
		if (i % 7 == 0) {
			error = sx_sync(mp);
			if (error) {
				r->error = error;
				break;
			}
			r->ndurable = i;
		}
		if (i % 16 == 0) {
			error = sx_checkpoint(mp);
			if (error) {
				r->error = error;
				break;
			}
			r->ndurable = i;
		}
	}
	error = sx_unmount(mp);
	if (!r->error && !error)
		r->ndurable = r->ncommitted;
	if (!r->error)
		r->error = error;
}

/* True if the mounted filesystem holds exactly @st. */
static bool state_matches(struct sx_mount *mp, const struct state *st)
{
	u64 b, gen, nalloc = 0;
	u32 i;

	for (i = 0; i < st->n; i++) {
		if (sxt_tblock_read(mp, st->e[i].bno, &gen) || gen != st->e[i].gen)
			return false;
		nalloc += st->e[i].len;
	}
	/* mkfs took the first two data blocks: the fsinfo block and the root inode */
	for (b = mp->m_sb.sb_datastart; b < mp->m_sb.sb_dblocks; b++) {
		bool isfree, want_free = b >= mp->m_sb.sb_fsinfo + 2;

		if (sx_alloc_is_free(mp, b, &isfree))
			return false;
		for (i = 0; i < st->n && want_free; i++)
			if (b >= st->e[i].bno && b < st->e[i].bno + st->e[i].len)
				want_free = false;
		if (isfree != want_free)
			return false;
	}
	return sx_alloc_free_blocks(mp) ==
	       mp->m_sb.sb_dblocks - mp->m_sb.sb_datastart - 2 - nalloc;
}

/* Which recorded state a mounted filesystem holds, in the allowed range. */
static int find_state(struct sx_mount *mp, const struct run *r)
{
	int j;

	for (j = r->ncommitted; j >= r->ndurable; j--)
		if (state_matches(mp, &r->states[j]))
			return j;
	return -1;
}

/* Report sink for the checker. */
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

/* The checker finds no problem on @bd. */
static bool check_clean(struct sx_bdev *bd)
{
	u64 problems = 0;

	return sx_check_flags(bd, SX_CHECK_SPACE_ONLY, check_report, NULL, &problems) == 0 &&
	       problems == 0;
}

/*
 * Recover @bd, verify the state against @r, and that a second recovery
 * changes nothing.  Returns the state found, or -1.
 */
static int recover_and_verify(struct sx_bdev *bd, const struct run *r, const char *what)
{
	struct sx_mount *mp;
	struct sx_bdev *once;
	int error, j;

	error = sx_mount(bd, NULL, &mp);
	CHECK(error == 0, "%s: mount after crash: %s", what, sx_strerror(error));
	j = find_state(mp, r);
	error = sx_unmount(mp);
	CHECK(j >= 0, "%s: no state in [%d, %d] matches", what, r->ndurable, r->ncommitted);
	CHECK(error == 0, "%s: unmount after recovery: %s", what, sx_strerror(error));
	CHECK(check_clean(bd), "%s: checker not clean after recovery", what);
	once = sxt_bdev_copy(bd);
	error = sx_mount(bd, NULL, &mp);
	CHECK(error == 0, "%s: second mount: %s", what, sx_strerror(error));
	error = sx_unmount(mp);
	CHECK(error == 0, "%s: second unmount", what);
	CHECK(sxt_bdev_equal(bd, once), "%s: second recovery changed the image", what);
	sx_bdev_destroy(once);
	return j;
}

/* Count the writes a mount (with recovery) and unmount of @bd make. */
static u64 count_recovery_writes(struct sx_bdev *bd)
{
	struct sx_bdev *copy = sxt_bdev_copy(bd), *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	struct sx_mount *mp;

	VERIFY(sx_crashdev_create(copy, 1, &cbd, &cd) == 0);
	if (sx_mount(cbd, NULL, &mp) == 0)
		sx_unmount(mp);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(cbd);
	sx_bdev_destroy(copy);
	return st.cs_writes;
}

/* Cut the power at every write of the recovery of @crashed. */
static int crash_recovery(struct sx_bdev *crashed, const struct run *r, int jref, u64 seed)
{
	u64 nw = count_recovery_writes(crashed), w;
	static const enum sx_crash_mode modes[] = { SX_CRASH_TEAR, SX_CRASH_DROP, SX_CRASH_KEEP };
	char what[96];

	for (w = 1; w <= nw; w++) {
		u32 m, nmodes = level >= 2 ? 3 : 1;

		for (m = 0; m < nmodes; m++) {
			struct sx_bdev *copy = sxt_bdev_copy(crashed), *cbd;
			struct sx_crashdev *cd;
			struct sx_mount *mp;
			int j;

			VERIFY(sx_crashdev_create(copy, seed + w, &cbd, &cd) == 0);
			sx_crashdev_cut_at_write(cd, w, modes[(w + m) % 3]);
			if (sx_mount(cbd, NULL, &mp) == 0)
				sx_unmount(mp);
			sx_bdev_destroy(cbd);
			snprintf(what, sizeof(what), "recovery crash at write %llu/%llu",
				 (unsigned long long)w, (unsigned long long)nw);
			j = recover_and_verify(copy, r, what);
			sx_bdev_destroy(copy);
			if (j < 0)
				return -1;
			CHECK(j == jref, "%s: state %d, uninterrupted recovery gave %d", what, j, jref);
			recovery_crash_points++;
			passed++;
		}
	}
	return 0;
}

/* Cut the power at write @w in @mode and check what recovery makes of it. */
static int crash_at(u64 seed, u64 w, enum sx_crash_mode mode, bool and_recovery)
{
	static const char *const names[] = { "keep", "drop", "tear", "random" };
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd, *twin;
	struct sx_crashdev *cd;
	struct run *r = malloc(sizeof(*r));
	char what[96];
	int j, j2, ret = 0;

	VERIFY(sx_crashdev_create(img, seed * 131 + w, &cbd, &cd) == 0);
	sx_crashdev_cut_at_write(cd, w, mode);
	workload(cbd, seed, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "seed %llu write %llu %s", (unsigned long long)seed,
		 (unsigned long long)w, names[mode]);
	if (r->error == 0) {
		failed++;
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
		ret = -1;
		goto out;
	}
	twin = sxt_bdev_copy(img);
	j = recover_and_verify(img, r, what);
	if (j < 0) {
		sx_bdev_destroy(twin);
		ret = -1;
		goto out;
	}
	/* recovery is deterministic: a second copy recovers to the same bytes */
	j2 = recover_and_verify(twin, r, what);
	if (j2 != j || !sxt_bdev_equal(img, twin)) {
		failed++;
		fprintf(stderr, "FAIL %s: two recoveries of one image differ\n", what);
		ret = -1;
	} else {
		passed++;
		crash_points++;
	}
	sx_bdev_destroy(twin);
	if (!ret && and_recovery) {
		/* the crashed image again, for crashes during its recovery */
		struct sx_bdev *again = sxt_bdev_copy(pristine);

		VERIFY(sx_crashdev_create(again, seed * 131 + w, &cbd, &cd) == 0);
		sx_crashdev_cut_at_write(cd, w, mode);
		workload(cbd, seed, r);
		sx_bdev_destroy(cbd);
		ret = crash_recovery(again, r, j, seed);
		sx_bdev_destroy(again);
	}
out:
	free(r);
	sx_bdev_destroy(img);
	return ret;
}

/* The workload's I/O counts without a crash. */
static int dry_run(u64 seed, struct sx_crashdev_stats *st, struct run *r)
{
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd;
	struct sx_crashdev *cd;

	VERIFY(sx_crashdev_create(img, 1, &cbd, &cd) == 0);
	workload(cbd, seed, r);
	sx_crashdev_get_stats(cd, st);
	sx_bdev_destroy(cbd);
	CHECK(r->error == 0, "dry run: %s", sx_strerror(r->error));
	CHECK(r->ncommitted == NTX && r->ndurable == NTX, "dry run: %d/%d", r->ndurable,
	      r->ncommitted);
	sx_bdev_destroy(img);
	return 0;
}

/* Fail the @nth I/O of @kind and check the result. */
static int io_error_at(u64 seed, enum sx_io_kind kind, u64 nth, bool forever)
{
	static const char *const kinds[] = { "read", "write", "flush" };
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd;
	struct sx_crashdev *cd;
	struct run *r = malloc(sizeof(*r));
	char what[96];
	int j, ret = 0;

	VERIFY(sx_crashdev_create(img, 7, &cbd, &cd) == 0);
	sx_crashdev_fail(cd, kind, nth, forever, -EIO);
	workload(cbd, seed, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "%s error %llu %s", kinds[kind], (unsigned long long)nth,
		 forever ? "forever" : "once");
	if (r->error == 0 && kind != SX_IO_READ) {
		/* every write and flush matters: an error must be reported */
		failed++;
		fprintf(stderr, "FAIL %s: the error was not reported\n", what);
		ret = -1;
		goto out;
	}
	j = recover_and_verify(img, r, what);
	if (j < 0)
		ret = -1;
	else {
		passed++;
		io_error_points++;
	}
out:
	free(r);
	sx_bdev_destroy(img);
	return ret;
}

int main(void)
{
	const char *lv = getenv("SX_CRASH_LEVEL");
	static const enum sx_crash_mode modes[] = { SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR };
	static const u64 fixed[3] = { 1, 2, 3 };
	const u64 *seeds;
	u64 nseeds, s, w, step, k;
	struct sx_crashdev_stats st;
	struct run *r = malloc(sizeof(*r));
	u32 m;

	level = 1;
	if (lv && !strcmp(lv, "quick"))
		level = 0;
	else if (lv && !strcmp(lv, "long"))
		level = 2;
	step = level == 0 ? 7 : 1;
	nseeds = sxt_seeds("crash_journal", fixed, level >= 2 ? 3 : 1, &seeds);

	sx_thread_enter();
	sxt_quiet();
	pristine = sxt_memfs(IMG_SIZE, 4096, 64);

	for (s = 0; s < nseeds; s++) {
		u64 seed = seeds[s];

		if (dry_run(seed, &st, r))
			break;
		printf("seed %llu: %d transactions, %llu writes (%llu FUA), %llu flushes, %llu reads\n",
		       (unsigned long long)seed, NTX, (unsigned long long)st.cs_writes,
		       (unsigned long long)st.cs_fua_writes, (unsigned long long)st.cs_flushes,
		       (unsigned long long)st.cs_reads);
		for (w = 1; w <= st.cs_writes; w += step)
			for (m = 0; m < 3; m++)
				crash_at(seed, w, modes[m], m == 2 && (level >= 1 || w % 5 == 0));
		for (w = 1; w <= st.cs_writes; w += step * 3)
			crash_at(seed, w, SX_CRASH_RANDOM, level >= 2);
		for (k = 1; k <= st.cs_reads; k += step * (level >= 2 ? 1 : 3)) {
			io_error_at(seed, SX_IO_READ, k, false);
			io_error_at(seed, SX_IO_READ, k, true);
		}
		for (k = 1; k <= st.cs_writes; k += step) {
			io_error_at(seed, SX_IO_WRITE, k, false);
			io_error_at(seed, SX_IO_WRITE, k, true);
		}
		for (k = 1; k <= st.cs_flushes; k += step) {
			io_error_at(seed, SX_IO_FLUSH, k, false);
			io_error_at(seed, SX_IO_FLUSH, k, true);
		}
	}
	printf("crash points: %llu during the workload, %llu during recovery; "
	       "I/O error points: %llu\n", (unsigned long long)crash_points,
	       (unsigned long long)recovery_crash_points, (unsigned long long)io_error_points);
	printf("%llu passed, %llu failed\n", (unsigned long long)passed,
	       (unsigned long long)failed);
	free(r);
	sx_bdev_destroy(pristine);
	return failed ? 1 : 0;
}
