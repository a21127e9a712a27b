// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sx_bdev over a Linux block device, with synchronous bios.
 *
 * A request is cut into bios of at most BIO_MAX_VECS pages; each page of the
 * caller's buffer is found with virt_to_page() or, for vmalloc'd memory
 * (large sx_alloc() buffers are), vmalloc_to_page().  A buffer that is not
 * aligned to the logical block size, or that lives on the (vmapped) task
 * stack, goes through a page-aligned bounce buffer instead, so that every
 * bio vector is whole sectors and DMA never targets a stack.
 *
 * SX_BDEV_FUA writes carry REQ_FUA (the block layer turns that into a write
 * and a flush on a device without FUA); flush is blkdev_issue_flush(), an
 * empty REQ_PREFLUSH bio.  The page cache of the device is not used, so
 * reads see exactly what earlier writes put on the device.  A device made
 * volatile for tests passes its writes and flushes through
 * bdev_volatile_os.c, which can lose the unflushed ones at a power cut.
 */
#include "sx_platform.h"
#include "sx_kglue.h"
#include "kbdev.h"
#include <swapext/format.h>
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

/* The kernel block device behind @bd. */
static struct sx_kbdev *sx_kbdev_of(struct sx_bdev *bd)
{
	return bd->bd_ctx;
}

/* -EINVAL unless [@off, @off + @len) is inside @bd and sector-aligned. */
int sx_kdev_check_range(const struct sx_bdev *bd, u64 off, u64 len)
{
	u64 mask = bd->bd_sectsize - 1;

	if ((off & mask) || (len & mask))
		return -EINVAL;
	if (off > bd->bd_size || len > bd->bd_size - off)
		return -EINVAL;
	return 0;
}

/* The page holding kernel address @p, for a vmalloc'd or a linear address. */
static struct page *sx_kbdev_page(const void *p)
{
	return is_vmalloc_addr(p) ? vmalloc_to_page(p) : virt_to_page(p);
}

/* Move @len bytes at @buf to or from byte @off with bios of type @opf. */
int sx_kbdev_bios(struct sx_kbdev *kb, u64 off, u8 *buf, size_t len,
			 blk_opf_t opf)
{
	sector_t sector = off >> SECTOR_SHIFT;
	int error = 0;

	while (len && !error) {
		unsigned int npages;
		struct bio *bio;

		npages = min_t(size_t, BIO_MAX_VECS,
			       DIV_ROUND_UP(offset_in_page(buf) + len, PAGE_SIZE));
		bio = bio_alloc(kb->kb_bdev, npages, opf, GFP_NOIO);
		bio->bi_iter.bi_sector = sector;
		while (len) {
			unsigned int chunk = min_t(size_t, len,
						   PAGE_SIZE - offset_in_page(buf));

			if (bio_add_page(bio, sx_kbdev_page(buf), chunk,
					 offset_in_page(buf)) != chunk)
				break;
			buf += chunk;
			len -= chunk;
			sector += chunk >> SECTOR_SHIFT;
		}
		error = submit_bio_wait(bio);
		bio_put(bio);
	}
	return error;
}

/* True if @buf can be handed to bios as it is. */
static bool sx_kbdev_direct_ok(struct sx_kbdev *kb, const void *buf)
{
	unsigned long mask = kb->kb_kd.kd_bd.bd_sectsize - 1;

	mask |= bdev_dma_alignment(kb->kb_bdev);
	return !((unsigned long)buf & mask) && !object_is_on_stack(buf);
}

/* A page-aligned buffer for @len bytes that allocation cannot recurse for. */
void *sx_kbdev_bounce_alloc(size_t len)
{
	unsigned int noio = memalloc_noio_save();
	void *p = vmalloc(len);

	memalloc_noio_restore(noio);
	return p;
}

/* Read @len bytes at @off into @buf. */
static int sx_kbdev_read(struct sx_bdev *bd, u64 off, void *buf, size_t len)
{
	struct sx_kbdev *kb = sx_kbdev_of(bd);
	void *io = buf;
	int error;

	error = sx_kdev_check_range(bd, off, len);
	if (error)
		return error;
	if (sx_kdev_dead(bd))
		return -EIO;
	if (!len)
		return 0;
	if (!sx_kbdev_direct_ok(kb, buf)) {
		io = sx_kbdev_bounce_alloc(len);
		if (!io)
			return -ENOMEM;
	}
	error = sx_kbdev_bios(kb, off, io, len, REQ_OP_READ);
	if (is_vmalloc_addr(io))
		invalidate_kernel_vmap_range(io, len);
	if (io != buf) {
		if (!error)
			memcpy(buf, io, len);
		vfree(io);
	}
	return error;
}

/* Write @len bytes at @off; with SX_BDEV_FUA durable when it returns. */
static int sx_kbdev_write(struct sx_bdev *bd, u64 off, const void *buf, size_t len,
			  unsigned int flags)
{
	struct sx_kbdev *kb = sx_kbdev_of(bd);
	blk_opf_t opf = REQ_OP_WRITE | REQ_SYNC;
	void *io = (void *)buf;
	int error;

	error = sx_kdev_check_range(bd, off, len);
	if (error)
		return error;
	if (kb->kb_rdonly)
		return -EROFS;
	if (sx_kdev_dead(bd))
		return -EIO;
	if (!len)
		return 0;
	if (flags & SX_BDEV_FUA)
		opf |= REQ_FUA;
	if (!sx_kbdev_direct_ok(kb, buf)) {
		io = sx_kbdev_bounce_alloc(len);
		if (!io)
			return -ENOMEM;
		memcpy(io, buf, len);
	}
	if (is_vmalloc_addr(io))
		flush_kernel_vmap_range(io, len);
	if (kb->kb_vol)
		error = sx_kbvol_write(kb, off, io, len, opf);
	else
		error = sx_kbdev_bios(kb, off, io, len, opf);
	if (io != buf)
		vfree(io);
	return error;
}

/* Make every completed write durable: an empty REQ_PREFLUSH bio. */
static int sx_kbdev_flush(struct sx_bdev *bd)
{
	struct sx_kbdev *kb = sx_kbdev_of(bd);

	if (kb->kb_rdonly)
		return -EROFS;
	if (sx_kdev_dead(bd))
		return -EIO;
	if (kb->kb_vol)
		return sx_kbvol_flush(kb);
	return blkdev_issue_flush(kb->kb_bdev);
}

/* Tell the device that [@off, @off + @len) holds nothing any more. */
static int sx_kbdev_discard(struct sx_bdev *bd, u64 off, u64 len)
{
	struct sx_kbdev *kb = sx_kbdev_of(bd);
	int error;

	error = sx_kdev_check_range(bd, off, len);
	if (error)
		return error;
	if (kb->kb_rdonly)
		return -EROFS;
	if (sx_kdev_dead(bd))
		return -EIO;
	if (!bdev_max_discard_sectors(kb->kb_bdev))
		return -EOPNOTSUPP;
	return blkdev_issue_discard(kb->kb_bdev, off >> SECTOR_SHIFT,
				    len >> SECTOR_SHIFT, GFP_NOFS);
}

/* Close the block device and free the wrapper. */
static void sx_kbdev_destroy(struct sx_bdev *bd)
{
	struct sx_kbdev *kb = sx_kbdev_of(bd);

	sx_kbvol_destroy(kb);
	blkdev_put(kb->kb_bdev, kb->kb_mode);
	kfree(kb);
}

static const struct sx_bdev_ops sx_kbdev_ops = {
	.read		= sx_kbdev_read,
	.write		= sx_kbdev_write,
	.flush		= sx_kbdev_flush,
	.discard	= sx_kbdev_discard,
	.destroy	= sx_kbdev_destroy,
};

/* Open the block device at @path exclusively as an sx_bdev. */
int sx_kbdev_open(const char *path, bool rdonly, struct sx_bdev **bdp)
{
	struct block_device *bdev;
	struct sx_kbdev *kb;
	unsigned int lbs;

	kb = kzalloc(sizeof(*kb), GFP_KERNEL);
	if (!kb)
		return -ENOMEM;
	kb->kb_rdonly = rdonly;
	kb->kb_mode = FMODE_READ | FMODE_EXCL | (rdonly ? 0 : FMODE_WRITE);
	/* the wrapper is the exclusive holder: one attach per device */
	bdev = blkdev_get_by_path(path, kb->kb_mode, kb);
	if (IS_ERR(bdev)) {
		kfree(kb);
		return PTR_ERR(bdev);
	}
	kb->kb_bdev = bdev;
	lbs = bdev_logical_block_size(bdev);
	if (!is_power_of_2(lbs) || lbs > SX_MAX_BLOCKSIZE) {
		blkdev_put(bdev, kb->kb_mode);
		kfree(kb);
		return -EINVAL;
	}
	atomic_set(&kb->kb_kd.kd_dead, 0);
	kb->kb_kd.kd_bd.bd_ops = &sx_kbdev_ops;
	kb->kb_kd.kd_bd.bd_ctx = kb;
	kb->kb_kd.kd_bd.bd_size = bdev_nr_bytes(bdev);
	kb->kb_kd.kd_bd.bd_sectsize = lbs;
	*bdp = &kb->kb_kd.kd_bd;
	return 0;
}

/*
 * Cut the power of a kernel device: every later I/O fails with -EIO, and a
 * volatile device loses its cache; how many writes it lost, or -errno.
 */
int sx_kdev_kill(struct sx_bdev *bd)
{
	struct sx_kdev *kd = container_of(bd, struct sx_kdev, kd_bd);

	if (atomic_xchg(&kd->kd_dead, 1) == 0 && kd->kd_lose)
		return kd->kd_lose(kd);
	return 0;
}

/* Close any kernel device. */
void sx_kdev_destroy(struct sx_bdev *bd)
{
	if (bd)
		bd->bd_ops->destroy(bd);
}
