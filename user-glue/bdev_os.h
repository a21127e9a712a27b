/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the userspace devices share.
 */
#ifndef SX_BDEV_OS_H
#define SX_BDEV_OS_H

#include "sx_platform.h"

/* sx_bdev_check_range() - -EINVAL unless [@off, @off + @len) is inside @bd and sector-aligned */
int sx_bdev_check_range(const struct sx_bdev *bd, u64 off, u64 len);

#endif /* SX_BDEV_OS_H */
