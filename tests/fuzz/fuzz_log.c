// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: a log record stream through recovery.  The input is a
 * flags byte and framed records (struct fz_rec_hdr and ops, fz.h), which
 * are written as records into the log of a copy of the golden image from
 * its tail on, with every field a writer sets set right unless a record's
 * flags ask otherwise, so that the ops themselves reach replay and intent
 * recovery.  The log printer and the checker read the image first; then
 * it is mounted (recovery), and a mount that succeeds runs the short
 * workload, unmounts, and is mounted and unmounted once more.
 */
#include "fz.h"

enum {
	LOG_RDONLY	= (1u << 0),	/* a read-only mount without recovery: the scan alone */
	LOG_WORK	= (1u << 1),	/* the short workload after recovery */
	LOG_EACH	= (1u << 2),	/* SX_MOUNT_LOG_EACH */
};

static struct fz_image log_golden;

static int log_init(void)
{
	return fz_golden(&fz_golden_std, &log_golden);
}

static int log_run(const u8 *data, size_t size)
{
	struct sx_mount_opts mo = { 0 };
	struct sx_mount *mp;
	struct sx_bdev *bd;
	u8 flags;

	if (size < 1)
		return 0;
	flags = data[0];
	bd = fz_dev_from(log_golden.im_data, log_golden.im_size);
	if (!bd)
		return 0;
	fz_frame_log(fz_dev_data(bd), bd->bd_size, data + 1, size - 1);
	fz_read_tools(bd);
	if (flags & LOG_RDONLY)
		mo.mo_flags |= SX_MOUNT_RDONLY | SX_MOUNT_NORECOVERY;
	if (flags & LOG_EACH)
		mo.mo_flags |= SX_MOUNT_LOG_EACH;
	if (!sx_mount(bd, &mo, &mp)) {
		if (flags & LOG_WORK)
			fz_ops_run(bd, &mp, fz_short_ops, fz_short_ops_len);
		if (mp)
			sx_unmount(mp);
		if (!sx_mount(bd, NULL, &mp))
			sx_unmount(mp);
	}
	fz_dev_free(bd);
	return 0;
}

FZ_TARGET(log, log_init, log_run)
