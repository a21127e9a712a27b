/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * EFI/EFD: deferred freeing of extents (item_efi.c; its deferred-op table is
 * in defer.h).  A block range queued here is
 * returned to free space by the chain's sx_defer_finish(), the free logged
 * with its done item, so that a crash neither leaks the blocks nor frees
 * them twice.
 */
#ifndef SX_ITEM_EFI_H
#define SX_ITEM_EFI_H

#include "util.h"

struct sx_trans;

/**
 * sx_efi_free_later() - queue the freeing of blocks [@bno, +@len) on @tp
 *
 * Return: 0, -EINVAL for an empty range or one outside the data area,
 * -ENOMEM.
 */
int sx_efi_free_later(struct sx_trans *tp, u64 bno, u64 len);

/** sx_efi_res_bytes() - log bytes the queueing transaction needs for one EFI */
u32 sx_efi_res_bytes(const struct sx_mount *mp);

#endif /* SX_ITEM_EFI_H */
