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
#include "sxcrash.h"
#include "sxdefer.h"
#include "item_efi.h"

#define NCH		12
#define ELEN		3
#define IMG_SIZE	(4ull << 20)

static u64 b[NCH], c[NCH], e[NCH];
static u64 recovery_crash_points;
static struct sx_bdev *pristine;

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

/* The chains whole, then absent, at least @arg's acknowledged ones whole: how many. */
static int chains_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	int acked = *(const int *)arg, i, whole = 0, st;

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
	SXC_CHECK(st >= 0, "%s: chain %d is neither whole nor absent, or out of order", what,
		  i - 1);
	SXC_CHECK(whole >= acked, "%s: %d whole chains, %d were acknowledged", what, whole,
		  acked);
	return whole;
}

/* Recover @bd and check the chains; returns the number of whole chains. */
static int recover_and_verify(struct sx_bdev *bd, int acked, const char *what)
{
	return sxc_recover_verify(bd, SX_CHECK_SPACE_ONLY, chains_ok, &acked, what);
}

static int crash_at(void *arg, u64 w, enum sx_crash_mode mode)
{
	/* the recovery cut at each write, the modes in turn */
	static const enum sx_crash_mode rmodes[] = { SX_CRASH_DROP, SX_CRASH_TEAR, SX_CRASH_KEEP };
	struct sxc_cuts rcuts = { .modes = rmodes, .nmodes = 3 };
	bool and_recovery = mode != SX_CRASH_RANDOM &&
			    (sxc_level() >= SXC_LONG || (mode == SX_CRASH_TEAR && w % 6 == 0));
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd, *saved;
	char what[64];
	int acked, error, whole;

	cbd = sxc_cut_dev(img, w * 7 + mode, w, mode, NULL);
	error = workload(cbd, &acked);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "write %llu %s", (unsigned long long)w, sxf_mode_name(mode));
	if (error == 0) {
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
		sx_bdev_destroy(img);
		return -1;
	}
	saved = sxt_bdev_copy(img);
	whole = recover_and_verify(img, acked, what);
	if (whole >= 0 && and_recovery)
		recovery_crash_points += sxc_cut_recovery(saved, &rcuts, 0, SX_CHECK_SPACE_ONLY,
							  chains_ok, &acked, whole);
	sx_bdev_destroy(saved);
	sx_bdev_destroy(img);
	return whole;
}

int main(void)
{
	static const enum sx_crash_mode random_mode[] = { SX_CRASH_RANDOM };
	struct sxc_cuts cuts = { .per_point = 3 };
	struct sxc_cuts random_cuts = { .modes = random_mode, .nmodes = 1 };
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	u64 crash_points = 0;
	int acked, whole;

	sxc_start();
	cuts.step = sxc_pick(5, 1, 1);
	random_cuts.step = 3 * cuts.step;
	sxt_tdf_register();
	setup();

	img = sxt_bdev_copy(pristine);
	cbd = sxc_cut_dev(img, 1, 0, 0, &cd);
	VERIFY(workload(cbd, &acked) == 0 && acked == NCH);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(cbd);
	whole = recover_and_verify(img, NCH, "no crash");
	if (whole != NCH)
		sxc_fail("no crash: %d whole chains of %d", whole, NCH);
	sx_bdev_destroy(img);
	printf("%d chains: %llu writes, %llu flushes\n", NCH, (unsigned long long)st.cs_writes,
	       (unsigned long long)st.cs_flushes);

	cuts.last = random_cuts.last = st.cs_writes;
	crash_points += sxc_cut_writes(&cuts, crash_at, NULL);
	crash_points += sxc_cut_writes(&random_cuts, crash_at, NULL);
	printf("crash points: %llu during the chains, %llu during recovery\n",
	       (unsigned long long)crash_points, (unsigned long long)recovery_crash_points);
	sx_bdev_destroy(pristine);
	return sxc_end();
}
