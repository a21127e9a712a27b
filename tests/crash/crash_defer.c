// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of deferred operations.
 *
 * The workload runs NCH chains.  Chain i queues a TEST_DEFER item of s(i)
 * steps on test block b(i) (on odd chains, with a one-step child on block
 * c(i)) and the EFI freeing of extent e(i), then finishes the chain; some
 * chains are synchronous, and the log is forced now and then.  The power is
 * cut at every device write, with volatile writes kept, dropped or torn.
 * After recovery every chain must be whole or absent: b(i) at s(i), c(i) at
 * its child's count and e(i) free, or all three untouched; the whole chains
 * must be a prefix of the workload reaching at least the last acknowledged
 * synchronous chain; the checker must be clean; a second recovery changes no
 * byte.  Crashes during the recovery of some of those images must recover
 * to the same chains.
 *
 * SX_CRASH_LEVEL=quick samples every 5th write; long adds recovery crashes
 * at every crash point.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxtest.h"
#include "sxdefer.h"
#include "item_efi.h"

#define NCH		12
#define ELEN		3
#define IMG_SIZE	(4ull << 20)

static u64 b[NCH], c[NCH], e[NCH];
static u64 passed, failed, crash_points, recovery_crash_points;
static int level;
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

static u32 steps_of(int i)
{
	return 1 + i % 5 + (i == 5 ? 40 : 0);
}

/* Make the pristine image: every chain's blocks allocated, test blocks at 0. */
static void setup(void)
{
	struct sx_mount *mp;
	struct sx_trans *tp;
	u32 len;
	int i;

	pristine = sxt_memfs(IMG_SIZE, 4096, 128);
	mp = sxt_mount(pristine);
	for (i = 0; i < NCH; i++) {
		VERIFY(sx_trans_alloc(mp, 3 * sx_alloc_res_bytes(mp) +
				      2 * sx_trans_buf_bytes(mp), 0, &tp) == 0);
		VERIFY(sx_alloc_extent(tp, 0, 1, 1, &b[i], &len) == 0);
		VERIFY(sx_alloc_extent(tp, 0, 1, 1, &c[i], &len) == 0);
		VERIFY(sx_alloc_extent(tp, 0, ELEN, ELEN, &e[i], &len) == 0);
		VERIFY(sxt_tblock_write(tp, b[i], 0) == 0);
		VERIFY(sxt_tblock_write(tp, c[i], 0) == 0);
		VERIFY(sx_trans_commit(tp) == 0);
	}
	VERIFY(sx_unmount(mp) == 0);
}

/* Run the chains; *@acked: chains known durable.  Returns the first error. */
static int workload(struct sx_bdev *bd, int *acked)
{
	struct sx_mount *mp;
	struct sx_trans *tp;
	int i, error;

	*acked = 0;
	error = sx_mount(bd, NULL, &mp);
	if (error)
		return error;
	for (i = 0; i < NCH; i++) {
		u32 flags = i % 3 == 0 ? SX_TRANS_SYNC : 0;

		error = sx_trans_alloc(mp, sx_defer_step_bytes(mp, &sxt_tdf_ops) +
				       sx_efi_res_bytes(mp), flags, &tp);
		if (error)
			break;
		error = sxt_tdf_add(tp, b[i], steps_of(i), i % 2 ? c[i] : 0);
		if (!error)
			error = sx_efi_free_later(tp, e[i], ELEN);
		if (!error)
			error = sx_defer_finish(&tp);
		if (error) {
			sx_trans_cancel(tp);
			break;
		}
		error = sx_trans_commit(tp);
		if (error)
			break;
		if (flags)
			*acked = i + 1;
		if (i % 4 == 3) {
			error = sx_log_force(mp);
			if (error)
				break;
			*acked = i + 1;
		}
	}
	if (error) {
		sx_unmount(mp);
		return error;
	}
	error = sx_unmount(mp);
	if (!error)
		*acked = NCH;
	return error;
}

/* 1: chain @i whole, 0: absent, -1: a mix. */
static int chain_state(struct sx_mount *mp, int i)
{
	u64 gb, gc;
	bool fr, all_free = true, none_free = true;
	u32 k;

	if (sxt_tblock_read(mp, b[i], &gb) || sxt_tblock_read(mp, c[i], &gc))
		return -1;
	for (k = 0; k < ELEN; k++) {
		if (sx_alloc_is_free(mp, e[i] + k, &fr))
			return -1;
		all_free &= fr;
		none_free &= !fr;
	}
	if (gb == steps_of(i) && gc == (i % 2 ? 1u : 0u) && all_free)
		return 1;
	if (gb == 0 && gc == 0 && none_free)
		return 0;
	return -1;
}

static void check_report(void *arg, const char *fmt, ...)
{
}

/* Recover @bd and check the chains; returns the number of whole chains. */
static int recover_and_verify(struct sx_bdev *bd, int acked, const char *what)
{
	struct sx_mount *mp;
	struct sx_bdev *once;
	u64 problems = 0;
	int error, i, whole = 0, st;

	error = sx_mount(bd, NULL, &mp);
	CHECK(error == 0, "%s: mount after crash: %s", what, sx_strerror(error));
	for (i = 0; i < NCH; i++) {
		st = chain_state(mp, i);
		if (st < 0)
			break;
		if (st == 0)
			break;
		whole++;
	}
	for (; i < NCH && st >= 0; i++)
		st = chain_state(mp, i) == 0 ? 0 : -1;
	error = sx_unmount(mp);
	CHECK(st >= 0, "%s: chain %d is neither whole nor absent, or out of order", what,
	      i - 1);
	CHECK(whole >= acked, "%s: %d whole chains, %d were acknowledged", what, whole, acked);
	CHECK(error == 0, "%s: unmount after recovery: %s", what, sx_strerror(error));
	CHECK(sx_check_flags(bd, SX_CHECK_SPACE_ONLY, check_report, NULL, &problems) == 0 &&
	      problems == 0,
	      "%s: checker found %llu problems", what, (unsigned long long)problems);
	once = sxt_bdev_copy(bd);
	error = sx_mount(bd, NULL, &mp);
	CHECK(error == 0, "%s: second mount: %s", what, sx_strerror(error));
	CHECK(sx_unmount(mp) == 0, "%s: second unmount", what);
	CHECK(sxt_bdev_equal(bd, once), "%s: second recovery changed the image", what);
	sx_bdev_destroy(once);
	return whole;
}

/* Cut the power at every write of the recovery of @crashed. */
static int crash_recovery(struct sx_bdev *crashed, int acked, int whole_ref)
{
	struct sx_bdev *copy = sxt_bdev_copy(crashed), *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	struct sx_mount *mp;
	char what[96];
	u64 w;

	VERIFY(sx_crashdev_create(copy, 1, &cbd, &cd) == 0);
	if (sx_mount(cbd, NULL, &mp) == 0)
		sx_unmount(mp);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(cbd);
	sx_bdev_destroy(copy);
	for (w = 1; w <= st.cs_writes; w++) {
		int whole;

		copy = sxt_bdev_copy(crashed);
		VERIFY(sx_crashdev_create(copy, w, &cbd, &cd) == 0);
		sx_crashdev_cut_at_write(cd, w, (enum sx_crash_mode)(w % 3));
		if (sx_mount(cbd, NULL, &mp) == 0)
			sx_unmount(mp);
		sx_bdev_destroy(cbd);
		snprintf(what, sizeof(what), "recovery crash at write %llu",
			 (unsigned long long)w);
		whole = recover_and_verify(copy, acked, what);
		sx_bdev_destroy(copy);
		if (whole < 0)
			return -1;
		CHECK(whole == whole_ref, "%s: %d whole chains, recovery alone gave %d", what,
		      whole, whole_ref);
		recovery_crash_points++;
		passed++;
	}
	return 0;
}

static int crash_at(u64 w, enum sx_crash_mode mode, bool and_recovery)
{
	static const char *const names[] = { "keep", "drop", "tear", "random" };
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd, *saved;
	struct sx_crashdev *cd;
	char what[64];
	int acked, error, whole, ret = 0;

	VERIFY(sx_crashdev_create(img, w * 7 + mode, &cbd, &cd) == 0);
	sx_crashdev_cut_at_write(cd, w, mode);
	error = workload(cbd, &acked);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "write %llu %s", (unsigned long long)w, names[mode]);
	if (error == 0) {
		failed++;
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
		sx_bdev_destroy(img);
		return -1;
	}
	saved = sxt_bdev_copy(img);
	whole = recover_and_verify(img, acked, what);
	if (whole < 0) {
		ret = -1;
	} else {
		passed++;
		crash_points++;
		if (and_recovery)
			ret = crash_recovery(saved, acked, whole);
	}
	sx_bdev_destroy(saved);
	sx_bdev_destroy(img);
	return ret;
}

int main(void)
{
	const char *lv = getenv("SX_CRASH_LEVEL");
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	int acked, m;
	u64 w, step;

	level = 1;
	if (lv && !strcmp(lv, "quick"))
		level = 0;
	else if (lv && !strcmp(lv, "long"))
		level = 2;
	step = level == 0 ? 5 : 1;

	sx_thread_enter();
	sxt_quiet();
	sxt_tdf_register();
	setup();

	img = sxt_bdev_copy(pristine);
	VERIFY(sx_crashdev_create(img, 1, &cbd, &cd) == 0);
	VERIFY(workload(cbd, &acked) == 0 && acked == NCH);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(cbd);
	if (recover_and_verify(img, NCH, "no crash") != NCH)
		failed++;
	sx_bdev_destroy(img);
	printf("%d chains: %llu writes, %llu flushes\n", NCH, (unsigned long long)st.cs_writes,
	       (unsigned long long)st.cs_flushes);

	for (w = 1; w <= st.cs_writes; w += step)
		for (m = 0; m < 3; m++)
			crash_at(w, (enum sx_crash_mode)m,
				 level >= 2 || (m == 2 && w % 6 == 0));
	for (w = 1; w <= st.cs_writes; w += 3 * step)
		crash_at(w, SX_CRASH_RANDOM, false);
	printf("crash points: %llu during the chains, %llu during recovery\n",
	       (unsigned long long)crash_points, (unsigned long long)recovery_crash_points);
	printf("%llu passed, %llu failed\n", (unsigned long long)passed,
	       (unsigned long long)failed);
	sx_bdev_destroy(pristine);
	return failed ? 1 : 0;
}
