// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The store's half of the tests XFS runs in the qemu guest
 * (tests/xfs/xfscheck.c): the seed's FISWAPRANGE errno table at the level
 * of descriptors (tests/common/fsr_cases.h), the block-by-block swap tests
 * and the differential scenario, all through the same sxb code
 * (tests/common/sxb*.c) that drives XFS there.  The image is checked after
 * each part.  Prints one line per test and "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <swapext/swapext.h>
#include <swapext/device.h>
#include "sxb_store.h"

#define BS		4096u
#define DEV_SIZE	(192ull << 20)
/* the size the guest runs */
#define BIG		10000u
#define SCEN_SEED	20261205ull
#define SCEN_OPS	300u

static struct sx_bdev *mkimg(void)
{
	struct sx_mkfs_opts mo = { .mk_blocksize = BS,
				   .mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP };
	struct sx_bdev *bd;

	if (sx_memdev_create(DEV_SIZE, 512, &bd) || sx_mkfs(bd, &mo)) {
		fprintf(stderr, "mkfs failed\n");
		exit(1);
	}
	return bd;
}

/* Unmount and check the image; one result line. */
static void check_image(struct sxb_report *r, struct sx_bdev *bd, struct sx_mount *mp,
			const char *name)
{
	uint64_t problems = 0;
	int error = sx_unmount(mp);

	if (!error)
		error = sx_check(bd, NULL, NULL, &problems);
	if (error)
		sxb_result(r, 0, name, "%s", sx_strerror(error));
	else
		sxb_result(r, problems == 0, name, "%llu problems", (unsigned long long)problems);
}

int main(void)
{
	struct sxb_report r = { .prefix = "STORE", .out = stdout };
	struct sx_bdev *bd;
	struct sx_mount *mp;
	struct sxb b;
	FILE *devnull;

	sx_init();
	bd = mkimg();
	if (sx_mount(bd, NULL, &mp))
		return 1;
	sxb_store_init(&b, mp, BS);
	sxb_errtab_run(&b, &r);
	check_image(&r, bd, mp, "errtab-image-clean");

	if (sx_mount(bd, NULL, &mp))
		return 1;
	sxb_store_init(&b, mp, BS);
	sxb_swaps_run(&b, &r, BIG);
	check_image(&r, bd, mp, "swaps-image-clean");

	/* the scenario runs to its end (its transcript is compared in xfscheck) */
	if (sx_mount(bd, NULL, &mp))
		return 1;
	sxb_store_init(&b, mp, BS);
	devnull = fopen("/dev/null", "w");
	sxb_result(&r, sxb_scen_run(&b, SCEN_SEED, SCEN_OPS, devnull) == 0, "scenario-runs",
		   "seed %llu, %u ops", SCEN_SEED, SCEN_OPS);
	fclose(devnull);
	check_image(&r, bd, mp, "scenario-image-clean");
	sx_bdev_destroy(bd);
	printf("%u passed, %u failed\n", r.passed, r.failed);
	return r.failed ? 1 : 0;
}
