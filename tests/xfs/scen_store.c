// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * scen-store SEED OPS: the differential scenario (tests/common/sxb_scen.c)
 * on a fresh store of the XFS images' block size; prints its transcript,
 * which tests/xfs/xfscheck.sh diffs against the guest's on XFS.  The image
 * is checked afterwards (exit 1 if it is not clean).
 */
#include <stdio.h>
#include <stdlib.h>
#include <swapext/swapext.h>
#include <swapext/device.h>
#include "sxb_store.h"

#define BS		4096u
#define DEV_SIZE	(128ull << 20)

int main(int argc, char **argv)
{
	struct sx_mkfs_opts mo = { .mk_blocksize = BS,
				   .mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP };
	struct sx_bdev *bd;
	struct sx_mount *mp;
	struct sxb b;
	uint64_t problems = 0;
	int error;

	if (argc != 3) {
		fprintf(stderr, "usage: scen-store SEED OPS\n");
		return 2;
	}
	error = sx_memdev_create(DEV_SIZE, 512, &bd);
	if (!error)
		error = sx_mkfs(bd, &mo);
	if (!error)
		error = sx_mount(bd, NULL, &mp);
	if (error) {
		fprintf(stderr, "scen-store: %s\n", sx_strerror(error));
		return 1;
	}
	sxb_store_init(&b, mp, BS);
	if (sxb_scen_run(&b, strtoull(argv[1], NULL, 0), (uint32_t)strtoul(argv[2], NULL, 0),
			 stdout))
		return 1;
	error = sx_unmount(mp);
	if (!error)
		error = sx_check(bd, NULL, NULL, &problems);
	sx_bdev_destroy(bd);
	if (error || problems) {
		fprintf(stderr, "scen-store: image after the scenario: %s, %llu problems\n",
			sx_strerror(error), (unsigned long long)problems);
		return 1;
	}
	return 0;
}
