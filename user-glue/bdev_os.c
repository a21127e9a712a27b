// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Helpers every userspace device uses.
 */
#include "sx_platform.h"
#include <swapext/device.h>
#include "bdev_os.h"

/* -EINVAL unless [@off, @off + @len) is inside @bd and sector-aligned. */
int sx_bdev_check_range(const struct sx_bdev *bd, u64 off, u64 len)
{
	u64 mask = bd->bd_sectsize - 1;

	if ((off & mask) || (len & mask))
		return -EINVAL;
	if (off > bd->bd_size || len > bd->bd_size - off)
		return -EINVAL;
	return 0;
}

/* Close any device. */
void sx_bdev_destroy(struct sx_bdev *bd)
{
	if (bd)
		bd->bd_ops->destroy(bd);
}
