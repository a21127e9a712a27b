/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a block device is to swapext: a table of operations.  The glue
 * provides a file-backed, a memory and a crash-emulating device
 * (<swapext/device.h>) and the kernel module a bio-backed one; a program
 * may bring its own.
 */
#ifndef SWAPEXT_BDEV_H
#define SWAPEXT_BDEV_H

#include <swapext/types.h>

/*
 * Block devices.  Offsets and lengths are in bytes and are multiples of the
 * device's sector size.  write() with SX_BDEV_FUA is durable when it returns;
 * any other write is durable only after a later flush() returns.  flush()
 * makes every write that completed before it durable.
 */
#define SX_BDEV_FUA	(1u << 0)

struct sx_bdev;

struct sx_bdev_ops {
	int	(*read)(struct sx_bdev *bd, uint64_t off, void *buf, size_t len);
	int (*write)(struct sx_bdev *bd, uint64_t off, const void *buf, size_t len,
		     unsigned int flags);
	int	(*flush)(struct sx_bdev *bd);
	/* optional: tell the device a range no longer holds data */
	int	(*discard)(struct sx_bdev *bd, uint64_t off, uint64_t len);
	/* release the device and its context */
	void	(*destroy)(struct sx_bdev *bd);
};

struct sx_bdev {
	const struct sx_bdev_ops	*bd_ops;
	void				*bd_ctx;	/* the implementation's state */
	uint64_t			bd_size;	/* bytes */
	uint32_t			bd_sectsize;	/* logical sector size, a power of 2 */
};

#endif /* SWAPEXT_BDEV_H */
