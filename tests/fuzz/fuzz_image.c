// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: a whole small image and a short operation sequence.  The
 * input is a sparse image (struct fz_simg_hdr, then the blocks that are
 * not all zero, so that only metadata costs input bytes; the header's
 * fix-ups re-seal what the input leaves unsealed) followed by operations
 * for fz_ops_run().  The log printer and the checker read the image; a
 * mount that takes it runs the operations and unmounts.
 *
 * When the checker found nothing wrong with the image, what the engine did
 * to it must not be wrong either: the image must mount, and after the
 * operations (shutdowns included) and one more mount to recover, the
 * checker must find nothing again.  Anything else aborts the run.
 */
#include "fz.h"

static int image_init(void)
{
	return 0;
}

static int image_run(const u8 *data, size_t size)
{
	struct sx_mount *mp = NULL;
	struct sx_bdev *bd;
	const u8 *ops;
	size_t oplen;
	u64 before, after;
	int error;

	bd = fz_simg_load(data, size, &ops, &oplen);
	if (!bd)
		return 0;
	fz_logprint(bd);
	before = fz_check(bd);
	error = sx_mount(bd, NULL, &mp);
	if (error) {
		if (before == 0)
			fz_bug("the checker passed the image, but mount failed: %d", error);
		goto out;
	}
	fz_ops_run(bd, &mp, ops, oplen);
	if (mp)
		sx_unmount(mp);
	if (before != 0)
		goto out;
	error = sx_mount(bd, NULL, &mp);
	if (error)
		fz_bug("a checked image no longer mounts after the operations: %d", error);
	sx_unmount(mp);
	after = fz_check(bd);
	if (after != 0)
		fz_bug("the checker passed the image, and after the operations finds %llu problems",
		       (unsigned long long)after);
out:
	fz_dev_free(bd);
	return 0;
}

FZ_TARGET(image, image_init, image_run)
