// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A memory device in vmalloc'd memory: what the kernel glue's self-test
 * mounts to exercise the engine with the kernel's allocator, locks and
 * crc32c without a disk.  Every write is durable at once; sx_kdev_kill()
 * drops all later I/O, as on the block device.
 */
#include "sx_platform.h"
#include "sx_kglue.h"
#include <linux/slab.h>
#include <linux/vmalloc.h>

struct sx_kmemdev {
	struct sx_kdev	km_kd;		/* first: sx_kdev_kill() finds it */
	u8		*km_data;
};

/* Copy out @len bytes at @off. */
static int sx_kmemdev_read(struct sx_bdev *bd, u64 off, void *buf, size_t len)
{
	struct sx_kmemdev *km = bd->bd_ctx;
	int error = sx_kdev_check_range(bd, off, len);

	if (error)
		return error;
	if (sx_kdev_dead(bd))
		return -EIO;
	memcpy(buf, km->km_data + off, len);
	return 0;
}

/* Copy in @len bytes at @off; memory is always durable. */
static int sx_kmemdev_write(struct sx_bdev *bd, u64 off, const void *buf, size_t len,
			    unsigned int flags)
{
	struct sx_kmemdev *km = bd->bd_ctx;
	int error = sx_kdev_check_range(bd, off, len);

	if (error)
		return error;
	if (sx_kdev_dead(bd))
		return -EIO;
	memcpy(km->km_data + off, buf, len);
	return 0;
}

/* Nothing is volatile in memory. */
static int sx_kmemdev_flush(struct sx_bdev *bd)
{
	return sx_kdev_dead(bd) ? -EIO : 0;
}

/* Free the memory and the device. */
static void sx_kmemdev_destroy(struct sx_bdev *bd)
{
	struct sx_kmemdev *km = bd->bd_ctx;

	vfree(km->km_data);
	kfree(km);
}

static const struct sx_bdev_ops sx_kmemdev_ops = {
	.read		= sx_kmemdev_read,
	.write		= sx_kmemdev_write,
	.flush		= sx_kmemdev_flush,
	.destroy	= sx_kmemdev_destroy,
};

/* A zeroed device of @size bytes with @sectsize-byte sectors. */
int sx_kmemdev_create(u64 size, u32 sectsize, struct sx_bdev **bdp)
{
	struct sx_kmemdev *km;

	if (!sectsize || !is_power_of_2(sectsize) || !size || size % sectsize ||
	    size > (u64)SIZE_MAX)
		return -EINVAL;
	km = kzalloc(sizeof(*km), GFP_KERNEL);
	if (!km)
		return -ENOMEM;
	km->km_data = vzalloc(size);
	if (!km->km_data) {
		kfree(km);
		return -ENOMEM;
	}
	atomic_set(&km->km_kd.kd_dead, 0);
	km->km_kd.kd_bd.bd_ops = &sx_kmemdev_ops;
	km->km_kd.kd_bd.bd_ctx = km;
	km->km_kd.kd_bd.bd_size = size;
	km->km_kd.kd_bd.bd_sectsize = sectsize;
	*bdp = &km->km_kd.kd_bd;
	return 0;
}
