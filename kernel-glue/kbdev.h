/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel block device's insides, shared by bdev_os.c (the device) and
 * bdev_volatile_os.c (its volatile mode for tests).  Nothing else
 * includes this.
 */
#ifndef SX_KBDEV_H
#define SX_KBDEV_H

#include "sx_kglue.h"
#include <linux/blk_types.h>

struct sx_kbvol;

struct sx_kbdev {
	struct sx_kdev		kb_kd;		/* first: sx_kdev_kill() finds it */
	struct block_device	*kb_bdev;
	fmode_t			kb_mode;
	bool			kb_rdonly;
	struct sx_kbvol		*kb_vol;	/* volatile mode, or NULL */
};

/* sx_kbdev_bios() - move @len bytes at @buf to or from byte @off with bios of type @opf */
int sx_kbdev_bios(struct sx_kbdev *kb, u64 off, u8 *buf, size_t len, blk_opf_t opf);

/* sx_kbdev_bounce_alloc() - a page-aligned vmalloc'd buffer, allocated without I/O */
void *sx_kbdev_bounce_alloc(size_t len);

/* bdev_volatile_os.c: the write and the flush of a volatile device, its end */
int sx_kbvol_write(struct sx_kbdev *kb, u64 off, u8 *io, size_t len, blk_opf_t opf);
int sx_kbvol_flush(struct sx_kbdev *kb);
void sx_kbvol_destroy(struct sx_kbdev *kb);

#endif /* SX_KBDEV_H */
