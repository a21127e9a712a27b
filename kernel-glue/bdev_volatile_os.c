// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A volatile block device, for tests: a power cut (sx_kdev_kill()) loses
 * writes that no flush made durable, as a disk that loses its write cache
 * would.  The control device's ATTACH_VOLATILE makes one; the kernel's
 * crash tests (`swapext kmod writers -c`) cut its power.
 *
 * Each write first reads the bytes it will overwrite and keeps them (an
 * undo entry) until a flush issued after the write returned has returned.
 * Writes go one at a time, so a before-image is never read beside another
 * write of the same blocks.  A write with REQ_FUA is followed by a flush,
 * as the block layer does on a device without FUA (this VM's virtio disk),
 * which also makes every write before it durable.  At the cut, every
 * entry of a write that returned is undone, newest first, and the device
 * flushed; with a seed, each entry that overlaps no other is undone or
 * kept at random instead (a cache keeps any part of what it holds; writes
 * of the same blocks go together, which keeps the result one a cache could
 * leave).  A write still in flight at the cut keeps its entry and may land
 * or not.  A flush that returns after the cut fails: what it covered may
 * have been undone.
 */
#include "sx_platform.h"
#include "sx_kglue.h"
#include "kbdev.h"
#include <linux/blkdev.h>
#include <linux/highmem.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

struct sx_kbvol {
	struct mutex		v_lock;		/* v_undo, v_flushes, v_rand */
	struct mutex		v_write_lock;	/* one write at a time */
	struct list_head	v_undo;		/* struct sx_kbvol_undo, oldest first */
	u64			v_flushes;	/* flushes issued */
	u32			v_rand;		/* 0: a cut undoes every entry */
};

/* What a write overwrote, until a flush covers it. */
struct sx_kbvol_undo {
	struct list_head	u_list;
	u64			u_off;
	size_t			u_len;
	bool			u_done;		/* the write returned */
	bool			u_keep;		/* a cut with a seed keeps it */
	u64			u_flush;	/* 0, or the first flush issued after that */
	u8			*u_old;		/* vmalloc'd */
};

static void sx_kbvol_undo_free(struct sx_kbvol_undo *u)
{
	list_del(&u->u_list);
	vfree(u->u_old);
	kfree(u);
}

/* Read what @len bytes at @off hold before a write replaces them. */
static struct sx_kbvol_undo *sx_kbvol_save(struct sx_kbdev *kb, u64 off, size_t len)
{
	struct sx_kbvol_undo *u = kzalloc(sizeof(*u), GFP_NOIO);
	int error;

	if (!u)
		return ERR_PTR(-ENOMEM);
	u->u_old = sx_kbdev_bounce_alloc(len);
	if (!u->u_old) {
		kfree(u);
		return ERR_PTR(-ENOMEM);
	}
	error = sx_kbdev_bios(kb, off, u->u_old, len, REQ_OP_READ);
	if (error) {
		vfree(u->u_old);
		kfree(u);
		return ERR_PTR(error);
	}
	invalidate_kernel_vmap_range(u->u_old, len);
	u->u_off = off;
	u->u_len = len;
	return u;
}

/* A write of a volatile device: kept undoable until a flush covers it. */
int sx_kbvol_write(struct sx_kbdev *kb, u64 off, u8 *io, size_t len, blk_opf_t opf)
{
	struct sx_kbvol *v = kb->kb_vol;
	struct sx_kbvol_undo *u;
	int error;

	mutex_lock(&v->v_write_lock);
	u = sx_kbvol_save(kb, off, len);
	if (IS_ERR(u)) {
		mutex_unlock(&v->v_write_lock);
		return PTR_ERR(u);
	}
	mutex_lock(&v->v_lock);
	list_add_tail(&u->u_list, &v->v_undo);
	mutex_unlock(&v->v_lock);
	error = sx_kbdev_bios(kb, off, io, len, opf & ~REQ_FUA);
	mutex_lock(&v->v_lock);
	u->u_done = true;
	mutex_unlock(&v->v_lock);
	mutex_unlock(&v->v_write_lock);
	if (!error && (opf & REQ_FUA))
		error = sx_kbvol_flush(kb);
	return error;
}

/* A flush of a volatile device: what it covers is durable once it returns. */
int sx_kbvol_flush(struct sx_kbdev *kb)
{
	struct sx_kbvol *v = kb->kb_vol;
	struct sx_kbvol_undo *u, *next;
	u64 gen;
	int error;

	mutex_lock(&v->v_lock);
	gen = ++v->v_flushes;
	list_for_each_entry(u, &v->v_undo, u_list)
		if (u->u_done && !u->u_flush)
			u->u_flush = gen;
	mutex_unlock(&v->v_lock);
	error = blkdev_issue_flush(kb->kb_bdev);
	mutex_lock(&v->v_lock);
	/* a cut while it ran may have undone what it covered */
	if (!error && sx_kdev_dead(&kb->kb_kd.kd_bd))
		error = -EIO;
	if (!error) {
		list_for_each_entry_safe(u, next, &v->v_undo, u_list)
			if (u->u_flush && u->u_flush <= gen)
				sx_kbvol_undo_free(u);
	}
	mutex_unlock(&v->v_lock);
	return error;
}

/* Whether entry @u shares a byte with any other entry. */
static bool sx_kbvol_overlaps(struct sx_kbvol *v, struct sx_kbvol_undo *u)
{
	struct sx_kbvol_undo *o;

	list_for_each_entry(o, &v->v_undo, u_list)
		if (o != u && o->u_off < u->u_off + u->u_len && u->u_off < o->u_off + o->u_len)
			return true;
	return false;
}

/* The next random bit of the cut (xorshift32). */
static bool sx_kbvol_coin(struct sx_kbvol *v)
{
	v->v_rand ^= v->v_rand << 13;
	v->v_rand ^= v->v_rand >> 17;
	v->v_rand ^= v->v_rand << 5;
	return v->v_rand & 1;
}

/* The power cut (struct sx_kdev's kd_lose): the writes lost, or -errno. */
static int sx_kbvol_lose(struct sx_kdev *kd)
{
	struct sx_kbdev *kb = container_of(kd, struct sx_kbdev, kb_kd);
	struct sx_kbvol *v = kb->kb_vol;
	struct sx_kbvol_undo *u, *prev;
	int lost = 0, error = 0;

	mutex_lock(&v->v_lock);
	list_for_each_entry(u, &v->v_undo, u_list)
		u->u_keep = u->u_done && v->v_rand && !sx_kbvol_overlaps(v, u) && sx_kbvol_coin(v);
	list_for_each_entry_safe_reverse(u, prev, &v->v_undo, u_list) {
		if (!u->u_done)
			continue;	/* in flight: its writer marks it, destroy frees it */
		if (!u->u_keep) {
			flush_kernel_vmap_range(u->u_old, u->u_len);
			if (!error)
				error = sx_kbdev_bios(kb, u->u_off, u->u_old, u->u_len,
						      REQ_OP_WRITE | REQ_SYNC);
			lost++;
		}
		sx_kbvol_undo_free(u);
	}
	mutex_unlock(&v->v_lock);
	if (!error)
		error = blkdev_issue_flush(kb->kb_bdev);
	pr_info("swapext: power cut: %d writes not flushed were lost%s\n", lost,
		error ? " (undoing them failed)" : "");
	return error ? error : lost;
}

/* Make a device from sx_kbdev_open() volatile (before any I/O; see the top). */
int sx_kbdev_set_volatile(struct sx_bdev *bd, u32 seed)
{
	struct sx_kbdev *kb = bd->bd_ctx;
	struct sx_kbvol *v = kzalloc(sizeof(*v), GFP_KERNEL);

	if (!v)
		return -ENOMEM;
	mutex_init(&v->v_lock);
	mutex_init(&v->v_write_lock);
	INIT_LIST_HEAD(&v->v_undo);
	v->v_rand = seed;
	kb->kb_vol = v;
	kb->kb_kd.kd_lose = sx_kbvol_lose;
	return 0;
}

/* Free what a volatile device kept (at close, with no I/O left). */
void sx_kbvol_destroy(struct sx_kbdev *kb)
{
	struct sx_kbvol *v = kb->kb_vol;
	struct sx_kbvol_undo *u, *next;

	if (!v)
		return;
	list_for_each_entry_safe(u, next, &v->v_undo, u_list)
		sx_kbvol_undo_free(u);
	kfree(v);
	kb->kb_vol = NULL;
}
