// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * SXI/SXD in XFS's log item framework, the deferred-op type that runs the
 * swap core's items, and their log recovery (the seed's xfs_swapext_item.c
 * on 6.1's interfaces, modelled on its BUI/BUD).
 *
 * The payload is the core's: sx_swapext_item_encode() writes what is left
 * of a swap into the SXI, sx_swapext_item_finish() does one step in the
 * transaction whose SXD marks the old intent done, and -EAGAIN has XFS's
 * defer code log a new SXI in the same transaction and requeue the item
 * behind the bmap work the step queued.  Recovery decodes the SXI with
 * sx_swapext_item_decode() (both inodes by number and generation), asks
 * sx_swapext_item_estimate() for the blocks the rest of the chain needs,
 * does one step with both inodes locked and joined, and captures the rest
 * of the chain: XFS then finishes it with the ILOCKs held throughout
 * (SX_HOST_RECOVERY_LOCKS).
 */
#include "xfs.h"
#include "xfs_fs.h"
#include "xfs_shared.h"
#include "xfs_format.h"
#include "xfs_log_format.h"
#include "xfs_trans_resv.h"
#include "xfs_mount.h"
#include "xfs_defer.h"
#include "xfs_inode.h"
#include "xfs_trans.h"
#include "xfs_trans_priv.h"
#include "xfs_log.h"
#include "xfs_log_priv.h"
#include "xfs_log_recover.h"
#include "xfs_error.h"
#include "xfs_swapext.h"

static struct kmem_cache *xfs_sxi_cache;
static struct kmem_cache *xfs_sxd_cache;
static struct kmem_cache *xfs_swapext_work_cache;

static const struct xfs_item_ops xfs_sxi_item_ops;
static const struct xfs_item_ops xfs_sxd_item_ops;

static inline struct xfs_sxi_log_item *SXI_ITEM(struct xfs_log_item *lip)
{
	return container_of(lip, struct xfs_sxi_log_item, sxi_item);
}

static inline struct xfs_sxd_log_item *SXD_ITEM(struct xfs_log_item *lip)
{
	return container_of(lip, struct xfs_sxd_log_item, sxd_item);
}

/* ------------------------------------------------------------------- SXI */

static void xfs_sxi_item_free(struct xfs_sxi_log_item *sxip)
{
	kmem_free(sxip->sxi_item.li_lv_shadow);
	kmem_cache_free(xfs_sxi_cache, sxip);
}

/*
 * Two references: the log's (dropped at unpin) and the SXD's (or the
 * abort's); the last one takes the intent out of the AIL and frees it.
 */
static void xfs_sxi_release(struct xfs_sxi_log_item *sxip)
{
	if (!atomic_dec_and_test(&sxip->sxi_refcount))
		return;
	xfs_trans_ail_delete(&sxip->sxi_item, 0);
	xfs_sxi_item_free(sxip);
}

static void xfs_sxi_item_size(struct xfs_log_item *lip, int *nvecs, int *nbytes)
{
	*nvecs += 1;
	*nbytes += sizeof(struct xfs_sxi_log_format);
}

static void xfs_sxi_item_format(struct xfs_log_item *lip, struct xfs_log_vec *lv)
{
	struct xfs_sxi_log_item *sxip = SXI_ITEM(lip);
	struct xfs_log_iovec *vecp = NULL;

	sxip->sxi_format.sxi_type = XFS_LI_SXI;
	sxip->sxi_format.sxi_size = 1;
	xlog_copy_iovec(lv, &vecp, XLOG_REG_TYPE_SXI_FORMAT, &sxip->sxi_format,
			sizeof(struct xfs_sxi_log_format));
}

static void xfs_sxi_item_unpin(struct xfs_log_item *lip, int remove)
{
	xfs_sxi_release(SXI_ITEM(lip));
}

static void xfs_sxi_item_release(struct xfs_log_item *lip)
{
	xfs_sxi_release(SXI_ITEM(lip));
}

static struct xfs_sxi_log_item *xfs_sxi_init(struct xfs_mount *mp)
{
	struct xfs_sxi_log_item *sxip;

	sxip = kmem_cache_zalloc(xfs_sxi_cache, GFP_KERNEL | __GFP_NOFAIL);
	xfs_log_item_init(mp, &sxip->sxi_item, XFS_LI_SXI, &xfs_sxi_item_ops);
	sxip->sxi_format.sxi_id = (uintptr_t)(void *)sxip;
	atomic_set(&sxip->sxi_refcount, 2);
	return sxip;
}

static bool xfs_sxi_item_match(struct xfs_log_item *lip, uint64_t intent_id)
{
	return SXI_ITEM(lip)->sxi_format.sxi_id == intent_id;
}

/* ------------------------------------------------------------------- SXD */

static void xfs_sxd_item_size(struct xfs_log_item *lip, int *nvecs, int *nbytes)
{
	*nvecs += 1;
	*nbytes += sizeof(struct xfs_sxd_log_format);
}

static void xfs_sxd_item_format(struct xfs_log_item *lip, struct xfs_log_vec *lv)
{
	struct xfs_sxd_log_item *sxdp = SXD_ITEM(lip);
	struct xfs_log_iovec *vecp = NULL;

	sxdp->sxd_format.sxd_type = XFS_LI_SXD;
	sxdp->sxd_format.sxd_size = 1;
	xlog_copy_iovec(lv, &vecp, XLOG_REG_TYPE_SXD_FORMAT, &sxdp->sxd_format,
			sizeof(struct xfs_sxd_log_format));
}

/* Committed or cancelled: drop the intent's reference and free the SXD. */
static void xfs_sxd_item_release(struct xfs_log_item *lip)
{
	struct xfs_sxd_log_item *sxdp = SXD_ITEM(lip);

	xfs_sxi_release(sxdp->sxd_intent);
	kmem_free(sxdp->sxd_item.li_lv_shadow);
	kmem_cache_free(xfs_sxd_cache, sxdp);
}

static struct xfs_log_item *xfs_sxd_item_intent(struct xfs_log_item *lip)
{
	return &SXD_ITEM(lip)->sxd_intent->sxi_item;
}

static const struct xfs_item_ops xfs_sxd_item_ops = {
	.flags		= XFS_ITEM_RELEASE_WHEN_COMMITTED | XFS_ITEM_INTENT_DONE,
	.iop_size	= xfs_sxd_item_size,
	.iop_format	= xfs_sxd_item_format,
	.iop_release	= xfs_sxd_item_release,
	.iop_intent	= xfs_sxd_item_intent,
};

static struct xfs_sxd_log_item *xfs_trans_get_sxd(struct xfs_trans *tp,
						  struct xfs_sxi_log_item *sxip)
{
	struct xfs_sxd_log_item *sxdp;

	sxdp = kmem_cache_zalloc(xfs_sxd_cache, GFP_KERNEL | __GFP_NOFAIL);
	xfs_log_item_init(tp->t_mountp, &sxdp->sxd_item, XFS_LI_SXD, &xfs_sxd_item_ops);
	sxdp->sxd_intent = sxip;
	sxdp->sxd_format.sxd_sxi_id = sxip->sxi_format.sxi_id;
	xfs_trans_add_item(tp, &sxdp->sxd_item);
	return sxdp;
}

/* --------------------------------------------------------- deferred work */

void xfs_sx_defer_add(struct xfs_trans *tp, const struct sx_swapext_intent *si)
{
	struct xfs_swapext_work *sw;

	sw = kmem_cache_zalloc(xfs_swapext_work_cache, GFP_NOFS | __GFP_NOFAIL);
	INIT_LIST_HEAD(&sw->sw_list);
	memcpy(&sw->sw_si, si, sizeof(sw->sw_si));
	xfs_defer_add(tp, XFS_DEFER_OPS_TYPE_SWAPEXT, &sw->sw_list);
}

static void xfs_swapext_work_free(struct xfs_swapext_work *sw)
{
	kmem_cache_free(xfs_swapext_work_cache, sw);
}

static struct xfs_log_item *xfs_swapext_create_intent(struct xfs_trans *tp,
		struct list_head *items, unsigned int count, bool sort)
{
	struct xfs_sxi_log_item *sxip = xfs_sxi_init(tp->t_mountp);
	struct xfs_swapext_work *sw;

	ASSERT(count == 1);
	xfs_trans_add_item(tp, &sxip->sxi_item);
	tp->t_flags |= XFS_TRANS_DIRTY;
	set_bit(XFS_LI_DIRTY, &sxip->sxi_item.li_flags);
	sw = list_first_entry(items, struct xfs_swapext_work, sw_list);
	sx_swapext_item_encode(&sw->sw_si, &sxip->sxi_format.sxi_extent);
	return &sxip->sxi_item;
}

static void xfs_swapext_abort_intent(struct xfs_log_item *intent)
{
	xfs_sxi_release(SXI_ITEM(intent));
}

static struct xfs_log_item *xfs_swapext_create_done(struct xfs_trans *tp,
		struct xfs_log_item *intent, unsigned int count)
{
	return &xfs_trans_get_sxd(tp, SXI_ITEM(intent))->sxd_item;
}

/*
 * One step of @si in @tp, whose SXD is @done.  The transaction is dirty
 * even on error, so that it aborts (releasing the SXI, freeing the SXD and
 * shutting the filesystem down) rather than committing half a step.
 */
static int xfs_swapext_step(struct xfs_trans *tp, struct xfs_sxd_log_item *sxdp,
			    struct sx_swapext_intent *si)
{
	int error;

	error = sx_swapext_item_finish((struct sx_htrans *)tp, si);
	tp->t_flags |= XFS_TRANS_DIRTY | XFS_TRANS_HAS_INTENT_DONE;
	set_bit(XFS_LI_DIRTY, &sxdp->sxd_item.li_flags);
	return error;
}

static int xfs_swapext_finish_item(struct xfs_trans *tp, struct xfs_log_item *done,
		struct list_head *item, struct xfs_btree_cur **state)
{
	struct xfs_swapext_work *sw = container_of(item, struct xfs_swapext_work, sw_list);
	int error;

	error = xfs_swapext_step(tp, SXD_ITEM(done), &sw->sw_si);
	if (error == -EAGAIN)
		return error;		/* requeued behind its bmap work */
	if (error)
		sx_swapext_item_cancel(&sw->sw_si);
	xfs_swapext_work_free(sw);
	return error;
}

static void xfs_swapext_cancel_item(struct list_head *item)
{
	struct xfs_swapext_work *sw = container_of(item, struct xfs_swapext_work, sw_list);

	sx_swapext_item_cancel(&sw->sw_si);
	xfs_swapext_work_free(sw);
}

const struct xfs_defer_op_type xfs_swapext_defer_type = {
	.max_items	= 1,
	.create_intent	= xfs_swapext_create_intent,
	.abort_intent	= xfs_swapext_abort_intent,
	.create_done	= xfs_swapext_create_done,
	.finish_item	= xfs_swapext_finish_item,
	.cancel_item	= xfs_swapext_cancel_item,
};

/* -------------------------------------------------------------- recovery */

/*
 * Finish what a recovered SXI says is left: one step now, the rest as a
 * captured chain that log recovery runs once every intent was looked at.
 */
static int xfs_sxi_item_recover(struct xfs_log_item *lip, struct list_head *capture_list)
{
	struct xfs_sxi_log_item *sxip = SXI_ITEM(lip);
	struct xfs_mount *mp = lip->li_log->l_mp;
	struct sx_host *h = xfs_sx_host(mp);
	struct xfs_sxd_log_item *sxdp;
	struct sx_swapext_intent si;
	struct xfs_inode *ip1, *ip2;
	struct xfs_trans_res resv;
	struct xfs_trans *tp;
	struct sx_hres res;
	unsigned int blocks;
	int error;

	error = sx_swapext_item_decode(h, &sxip->sxi_format.sxi_extent, &si);
	if (error) {
		XFS_CORRUPTION_ERROR(__func__, XFS_ERRLEVEL_LOW, mp, &sxip->sxi_format,
				     sizeof(sxip->sxi_format));
		return error;
	}
	xfs_info(mp, "swapext: recovering a swap of inodes 0x%llx and 0x%llx, %llu blocks left",
		 si.si_ino1, si.si_ino2, si.si_blockcount);
	/*
	 * Our own references: the item drops its own when it finishes, which
	 * may be in this very step, with the inodes still locked and joined.
	 */
	ip1 = xfs_sx_inode(si.si_ip1);
	ip2 = xfs_sx_inode(si.si_ip2);
	ihold(VFS_I(ip1));
	ihold(VFS_I(ip2));

	/* the whole rest of the chain draws on this reservation */
	error = sx_swapext_item_estimate(&si, &res);
	if (!error)
		error = xfs_sx_resblks(mp, &res, &blocks);
	if (error)
		goto out_cancel_item;
	resv = xlog_recover_resv(&M_RES(mp)->tr_write);
	error = xfs_trans_alloc(mp, &resv, blocks, 0, XFS_TRANS_RESERVE, &tp);
	if (error)
		goto out_cancel_item;

	sxdp = xfs_trans_get_sxd(tp, sxip);
	if (ip1 == ip2)
		xfs_ilock(ip1, XFS_ILOCK_EXCL);
	else
		xfs_lock_two_inodes(ip1, XFS_ILOCK_EXCL, ip2, XFS_ILOCK_EXCL);
	xfs_trans_ijoin(tp, ip1, 0);
	if (ip2 != ip1)
		xfs_trans_ijoin(tp, ip2, 0);

	error = xfs_swapext_step(tp, sxdp, &si);
	if (error == -EAGAIN) {
		/* the rest, with the item's inode references, as deferred work */
		xfs_sx_defer_add(tp, &si);
		error = 0;
	} else if (error) {
		sx_swapext_item_cancel(&si);
		xfs_trans_cancel(tp);
		goto out_unlock;
	}

	error = xfs_defer_ops_capture_and_commit(tp, capture_list);
out_unlock:
	xfs_iunlock(ip1, XFS_ILOCK_EXCL);
	if (ip2 != ip1)
		xfs_iunlock(ip2, XFS_ILOCK_EXCL);
	xfs_irele(ip2);
	xfs_irele(ip1);
	return error;

out_cancel_item:
	sx_swapext_item_cancel(&si);
	xfs_irele(ip2);
	xfs_irele(ip1);
	return error;
}

/* Relog an intent to move the log tail: SXD for it, a new SXI alike. */
static struct xfs_log_item *xfs_sxi_item_relog(struct xfs_log_item *intent,
					       struct xfs_trans *tp)
{
	struct xfs_sxd_log_item *sxdp;
	struct xfs_sxi_log_item *sxip;

	tp->t_flags |= XFS_TRANS_DIRTY;
	sxdp = xfs_trans_get_sxd(tp, SXI_ITEM(intent));
	set_bit(XFS_LI_DIRTY, &sxdp->sxd_item.li_flags);

	sxip = xfs_sxi_init(tp->t_mountp);
	memcpy(&sxip->sxi_format.sxi_extent, &SXI_ITEM(intent)->sxi_format.sxi_extent,
	       sizeof(sxip->sxi_format.sxi_extent));
	xfs_trans_add_item(tp, &sxip->sxi_item);
	set_bit(XFS_LI_DIRTY, &sxip->sxi_item.li_flags);
	return &sxip->sxi_item;
}

static const struct xfs_item_ops xfs_sxi_item_ops = {
	.flags		= XFS_ITEM_INTENT,
	.iop_size	= xfs_sxi_item_size,
	.iop_format	= xfs_sxi_item_format,
	.iop_unpin	= xfs_sxi_item_unpin,
	.iop_release	= xfs_sxi_item_release,
	.iop_recover	= xfs_sxi_item_recover,
	.iop_match	= xfs_sxi_item_match,
	.iop_relog	= xfs_sxi_item_relog,
};

/* An SXI in the log: into the AIL as an unfinished intent. */
static int xlog_recover_sxi_commit_pass2(struct xlog *log, struct list_head *buffer_list,
					 struct xlog_recover_item *item, xfs_lsn_t lsn)
{
	struct xfs_mount *mp = log->l_mp;
	struct xfs_sxi_log_format *f = item->ri_buf[0].iov_base;
	struct xfs_sxi_log_item *sxip;

	if (item->ri_buf[0].iov_len != sizeof(*f) || f->sxi_size != 1 || f->__pad != 0) {
		XFS_CORRUPTION_ERROR(__func__, XFS_ERRLEVEL_LOW, mp, item->ri_buf[0].iov_base,
				     item->ri_buf[0].iov_len);
		return -EFSCORRUPTED;
	}
	sxip = xfs_sxi_init(mp);
	memcpy(&sxip->sxi_format, f, sizeof(*f));
	/* one reference for the AIL; finishing or cancelling drops the other */
	xfs_trans_ail_insert(log->l_ailp, &sxip->sxi_item, lsn);
	xfs_sxi_release(sxip);
	return 0;
}

const struct xlog_recover_item_ops xlog_sxi_item_ops = {
	.item_type	= XFS_LI_SXI,
	.commit_pass2	= xlog_recover_sxi_commit_pass2,
};

/* An SXD in the log: its intent is done. */
static int xlog_recover_sxd_commit_pass2(struct xlog *log, struct list_head *buffer_list,
					 struct xlog_recover_item *item, xfs_lsn_t lsn)
{
	struct xfs_sxd_log_format *f = item->ri_buf[0].iov_base;

	if (item->ri_buf[0].iov_len != sizeof(*f)) {
		XFS_CORRUPTION_ERROR(__func__, XFS_ERRLEVEL_LOW, log->l_mp,
				     item->ri_buf[0].iov_base, item->ri_buf[0].iov_len);
		return -EFSCORRUPTED;
	}
	xlog_recover_release_intent(log, XFS_LI_SXI, f->sxd_sxi_id);
	return 0;
}

const struct xlog_recover_item_ops xlog_sxd_item_ops = {
	.item_type	= XFS_LI_SXD,
	.commit_pass2	= xlog_recover_sxd_commit_pass2,
};

/* ---------------------------------------------------------------- caches */

int xfs_swapext_init_caches(void)
{
	xfs_sxi_cache = kmem_cache_create("xfs_sxi_item", sizeof(struct xfs_sxi_log_item),
					  0, 0, NULL);
	xfs_sxd_cache = kmem_cache_create("xfs_sxd_item", sizeof(struct xfs_sxd_log_item),
					  0, 0, NULL);
	xfs_swapext_work_cache = kmem_cache_create("xfs_swapext_work",
						   sizeof(struct xfs_swapext_work), 0, 0, NULL);
	if (!xfs_sxi_cache || !xfs_sxd_cache || !xfs_swapext_work_cache) {
		xfs_swapext_destroy_caches();
		return -ENOMEM;
	}
	return 0;
}

void xfs_swapext_destroy_caches(void)
{
	kmem_cache_destroy(xfs_swapext_work_cache);
	kmem_cache_destroy(xfs_sxd_cache);
	kmem_cache_destroy(xfs_sxi_cache);
	xfs_swapext_work_cache = NULL;
	xfs_sxd_cache = NULL;
	xfs_sxi_cache = NULL;
}
