/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared blocks: clone (FICLONE/FICLONERANGE) and copy-on-write for the
 * data path, built on the deferred extent map changes (BUI, item_bmap.h)
 * and refcount changes (CUI, item_refc.h).
 *
 * Files whose blocks may be shared carry SX_DIFLAG_REFLINK.  A block mapped
 * by k >= 2 mappings has a refcount record saying k (refcount.h); a write
 * must never change such a block in place.  The data path calls
 * sx_reflink_cow() on the file blocks it is about to write: afterwards every
 * mapped block of that range belongs to the file alone (the shared ones were
 * copied to new blocks and remapped), so the data can be written in place.
 */
#ifndef SX_REFLINK_H
#define SX_REFLINK_H

#include "util.h"

struct sx_trans;
struct sx_inode;
struct sx_bmap_irec;

/**
 * sx_bmap_unmap_later() - queue BUIs that unmap file blocks [@off, +@len)
 * of @ip; each piece's blocks lose a reference (CUI decrease: freed if it
 * was the last)
 * @bno: where the range's blocks must be (checked), or 0 for whatever is there
 */
int sx_bmap_unmap_later(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
			u64 bno);

/**
 * sx_reflink_cow() - make every mapped block of file blocks [@off, +@len)
 * of @ip the file's own before the data path writes into them
 * @tpp: the caller's transaction; rolled (through sx_defer_finish) after
 *	each shared piece, so it must be allocated with at least
 *	sx_reflink_cow_res_bytes(); on return it is still the caller's to use
 *	(it may be a new one), on error too (the caller cancels it)
 * @cowed: if not NULL, the number of blocks that were copied
 *
 * For each run of shared blocks in the range: allocate new blocks, copy
 * the old contents into them (read with sx_dev_read(), written with
 * sx_file_write_data() as fresh blocks, so the copy is durable no later
 * than the remap),
 * unmap the old blocks (their refcount drops) and map the new ones in the
 * same state (unwritten stays unwritten, with no copy).  Holes and blocks
 * with one owner are left alone.  Files without SX_DIFLAG_REFLINK return at
 * once.  The caller holds @ip's IOLOCK and ILOCK exclusively.
 *
 * Return: 0, -ENOSPC (nothing half done: the pieces already copied stay
 * copied, which is harmless), -ENOMEM, -EIO, -EFSCORRUPTED.
 */
int sx_reflink_cow(struct sx_trans **tpp, struct sx_inode *ip, u64 off, u64 len,
		   u64 *cowed);

/** sx_reflink_cow_res_bytes() - the reservation a transaction needs for sx_reflink_cow() */
u32 sx_reflink_cow_res_bytes(const struct sx_mount *mp, const struct sx_inode *ip);

/**
 * sx_reflink_remap() - the engine of sx_clone_range() on inodes: share
 * byte range [@src_off, +@len) of @src at @dst_off of @dst (@len 0: to the
 * source's EOF), with every check of FICLONERANGE; locks both inodes
 *
 * Return: 0, -EINVAL, -EISDIR, -EPERM, -ETXTBSY, -EFBIG, -ENOSPC, -EIO, ...
 */
int sx_reflink_remap(struct sx_inode *dst, u64 dst_off, struct sx_inode *src, u64 src_off,
		     u64 len);

/** sx_reflink_register() / sx_reflink_unregister() - the BUI and CUI types */
int sx_reflink_register(void);
void sx_reflink_unregister(void);

#endif /* SX_REFLINK_H */
