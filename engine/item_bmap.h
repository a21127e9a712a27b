/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * BUI/BUD: deferred extent map changes (item_bmap.c; its deferred-op table
 * is in defer.h).  Clone, copy-on-write, truncate and the swap queue them,
 * so that a crash leaves each change done or to be redone by recovery.
 */
#ifndef SX_ITEM_BMAP_H
#define SX_ITEM_BMAP_H

#include "util.h"

struct sx_trans;
struct sx_inode;
struct sx_bmap_irec;

/**
 * sx_bmap_map_later() - queue a BUI that maps @irec into a hole of @ip
 *
 * The caller must hold @ip's ILOCK until sx_defer_finish() is done.
 */
int sx_bmap_map_later(struct sx_trans *tp, struct sx_inode *ip, const struct sx_bmap_irec *irec);

/**
 * sx_bmap_swap_map_later() / sx_bmap_swap_unmap_later() - queue a swap's
 * halves of a block exchange (SX_BMI_SWAP BUIs): the unmap of exactly the
 * piece @irec (its blocks keep their references) and the map of @irec into
 * a hole; neither moves @ip's block count.  Same locking as above.
 */
int sx_bmap_swap_map_later(struct sx_trans *tp, struct sx_inode *ip,
			   const struct sx_bmap_irec *irec);
int sx_bmap_swap_unmap_later(struct sx_trans *tp, struct sx_inode *ip,
			     const struct sx_bmap_irec *irec);

#endif /* SX_ITEM_BMAP_H */
