/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The swap core inside Linux 6.1's XFS: what the binding's two files share.
 *
 * xfs_swapext.c is the host (<swapext/host.h> over XFS's inodes, bmap,
 * deferred work, transactions and quota) and the FISWAPRANGE ioctl;
 * xfs_swapext_item.c is the SXI/SXD log items, the deferred-op type whose
 * callbacks are the core's and their log recovery.  fs/xfs knows of them
 * only through the few declarations kernel-glue/xfs/xfs-6.1.patch adds to
 * its headers (the defer type, the caches, the recovery ops, the ioctl).
 *
 * Include after XFS's headers: sx_platform.h keeps XFS's ASSERT.
 */
#ifndef XFS_SWAPEXT_H
#define XFS_SWAPEXT_H

#include "sx_platform.h"
#include <swapext/host.h>
#include <swapext/swap_log.h>

/*
 * Log formats.  Like every XFS log item: a 16-bit type, a 16-bit count of
 * regions (1), native-endian framing; the payload is the core's
 * little-endian struct sx_dlog_swapext as it encodes it.  The types
 * (XFS_LI_SXI 0x1248, XFS_LI_SXD 0x1249) and the log-incompat bit
 * (XFS_SB_FEAT_INCOMPAT_LOG_SWAPEXT, bit 1) are the patch's: a kernel
 * without this binding refuses to replay a log that may hold them.
 */
struct xfs_sxi_log_format {
	uint16_t		sxi_type;	/* XFS_LI_SXI */
	uint16_t		sxi_size;	/* regions: 1 */
	uint32_t		__pad;		/* zero */
	uint64_t		sxi_id;		/* the intent's id */
	struct sx_dlog_swapext	sxi_extent;	/* what is left to do */
};

struct xfs_sxd_log_format {
	uint16_t		sxd_type;	/* XFS_LI_SXD */
	uint16_t		sxd_size;	/* regions: 1 */
	uint32_t		__pad;
	uint64_t		sxd_sxi_id;	/* the intent it finishes */
};

/* The in-memory items: an intent and its done item. */
struct xfs_sxi_log_item {
	struct xfs_log_item		sxi_item;
	atomic_t			sxi_refcount;
	struct xfs_sxi_log_format	sxi_format;
};

struct xfs_sxd_log_item {
	struct xfs_log_item		sxd_item;
	struct xfs_sxi_log_item		*sxd_intent;
	struct xfs_sxd_log_format	sxd_format;
};

/* A queued swap: the deferred work item of XFS_DEFER_OPS_TYPE_SWAPEXT. */
struct xfs_swapext_work {
	struct list_head		sw_list;
	struct sx_swapext_intent	sw_si;
};

/* xfs_swapext.c: the host */

/* The host of @mp (embedded in it), set up on first use. */
struct sx_host *xfs_sx_host(struct xfs_mount *mp);
/* The swap core's view of @ip (embedded in it). */
struct sx_hinode *xfs_sx_hinode(struct xfs_inode *ip);
/* The XFS inode of a core inode. */
struct xfs_inode *xfs_sx_inode(struct sx_hinode *hi);
/* The space a chain described by @res may take for mapping structures. */
int xfs_sx_resblks(struct xfs_mount *mp, const struct sx_hres *res, unsigned int *blocks);

/* xfs_swapext_item.c */

/* Queue a copy of @si as deferred work in @tp (ho_defer_swap). */
void xfs_sx_defer_add(struct xfs_trans *tp, const struct sx_swapext_intent *si);

#endif /* XFS_SWAPEXT_H */
