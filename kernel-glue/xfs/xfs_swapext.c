// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The swap core's host over Linux 6.1's XFS, and the FISWAPRANGE ioctl.
 *
 * Inodes: struct sx_hinode is the xfs_inode's i_sxhost word and struct
 * sx_host the xfs_mount's m_sxhost words (the patch adds both), so that
 * ho_iget returns the same object for the same inode and the core's
 * one-file test by pointer holds.
 *
 * Locks: ho_lock_two is xfs_ilock2_io_mmap (IOLOCK and MMAPLOCK of both, in
 * inode order; it may fail with -EINTR).  ho_trans_alloc takes both ILOCKs
 * and joins the inodes to the transaction with no unlock flags, so XFS's
 * deferred-work code holds them across every roll of the chain (as it does
 * for two inodes in recovery: SX_HOST_RECOVERY_LOCKS); commit and cancel
 * drop them.  ho_read_mapping takes ILOCK_SHARED itself unless the
 * caller's transaction holds the inode (the estimate runs before it).
 *
 * Block counts (SX_HOST_MAP_NBLOCKS): XFS's deferred map and unmap with
 * XFS_BMAPI_REMAP move i_nblocks themselves (xfs_bmapi_remap adds the
 * length, xfs_bmap_del_extent_real subtracts it) but no quota: the core's
 * ho_mod_nblocks moves quota only, by the same net delta, as
 * xfs_reflink_remap_extent does.  ho_trans_alloc reserves each owner's
 * increase (hr_blocks2 - hr_blocks1 for file 1 and the opposite for file 2)
 * with xfs_trans_reserve_quota_nblks, and -EDQUOT changes nothing.
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
#include "xfs_inode_item.h"
#include "xfs_bmap.h"
#include "xfs_bmap_util.h"
#include "xfs_bmap_btree.h"
#include "xfs_trans_space.h"
#include "xfs_quota.h"
#include "xfs_icache.h"
#include "xfs_log.h"
#include "xfs_log_recover.h"
#include "xfs_ioctl.h"
#include "xfs_reflink.h"
#include <linux/file.h>
#include <linux/fsnotify.h>
#include <linux/mount.h>
#include <linux/sched/mm.h>
#include "xfs_swapext.h"

/* ------------------------------------------------------------ the platform */

/*
 * The platform functions the core calls: its messages, and memory for the
 * mappings its walks read ahead.  It asks for that only of a host with
 * ho_read_mappings, which this one has not (xfs_bmapi_read gives one
 * mapping at a time), and goes on without when it gets none; it always
 * asks inside a transaction, so never with reclaim into the filesystem.
 */
void *sx_alloc(size_t size, unsigned int flags)
{
	unsigned int nofs = memalloc_nofs_save();
	void *p = kvmalloc(size ? size : 1, GFP_KERNEL);

	memalloc_nofs_restore(nofs);
	return p;
}

void sx_free(void *p)
{
	kvfree(p);
}

void sx_log_emit(enum sx_log_level level, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	switch (level) {
	case SX_LOG_ERR:
		pr_err("XFS: %pV\n", &vaf);
		break;
	case SX_LOG_WARN:
		pr_warn("XFS: %pV\n", &vaf);
		break;
	case SX_LOG_INFO:
		pr_info("XFS: %pV\n", &vaf);
		break;
	default:
		pr_debug("XFS: %pV\n", &vaf);
		break;
	}
	va_end(args);
}

/* ---------------------------------------------------------------- objects */

static const struct sx_host_ops xfs_sx_ops;

static struct xfs_mount *xfs_sx_mount(struct sx_host *h)
{
	return container_of((u64 (*)[4])h, struct xfs_mount, m_sxhost);
}

struct sx_host *xfs_sx_host(struct xfs_mount *mp)
{
	struct sx_host *h = (struct sx_host *)mp->m_sxhost;
	u32 features = SX_HOST_MAP_NBLOCKS | SX_HOST_RECOVERY_LOCKS;

	BUILD_BUG_ON(sizeof(struct sx_host) > sizeof(mp->m_sxhost));
	if (smp_load_acquire(&h->h_ops))
		return h;
	/*
	 * The SXI needs the log-incompat bit, which needs a V5 superblock.
	 * XFS itself logs BUIs only on reflink filesystems: the non-atomic
	 * steps only there (a V4 filesystem gets -EOPNOTSUPP).
	 */
	if (xfs_has_crc(mp))
		features |= SX_HOST_ATOMIC_SWAP;
	if (xfs_has_reflink(mp))
		features |= SX_HOST_DEFER_BMAP;
	h->h_name = mp->m_super->s_id;
	h->h_features = features;
	h->h_maxbytes = MAX_LFS_FILESIZE;	/* XFS's s_maxbytes */
	smp_store_release(&h->h_ops, &xfs_sx_ops);
	return h;
}

struct sx_hinode *xfs_sx_hinode(struct xfs_inode *ip)
{
	struct sx_hinode *hi = (struct sx_hinode *)&ip->i_sxhost;

	BUILD_BUG_ON(sizeof(struct sx_hinode) != sizeof(ip->i_sxhost));
	hi->hi_host = xfs_sx_host(ip->i_mount);
	return hi;
}

struct xfs_inode *xfs_sx_inode(struct sx_hinode *hi)
{
	return container_of((void **)hi, struct xfs_inode, i_sxhost);
}

/*
 * Blocks a chain may allocate for the bmap btrees: the two forks' largest
 * trees (at the most mappings the estimate allows, every block half full)
 * and one more split.  Generous (blocks the trees already own count again)
 * and small: about one block per 125 mappings with 4 KiB blocks.  rmapbt
 * blocks come from the AG reservation, as for reflink.
 */
int xfs_sx_resblks(struct xfs_mount *mp, const struct sx_hres *res, unsigned int *blocks)
{
	u64 b = XFS_EXTENTADD_SPACE_RES(mp, XFS_DATA_FORK);

	*blocks = 0;
	if (res->hr_steps == 0)
		return 0;
	b += xfs_bmbt_calc_size(mp, res->hr_nrext1) + xfs_bmbt_calc_size(mp, res->hr_nrext2);
	if (b > UINT_MAX)
		return -ENOSPC;
	*blocks = b;
	return 0;
}

/* True if @ip is joined to the calling task's transaction (so ILOCKed). */
static bool xfs_sx_ilocked(struct xfs_inode *ip)
{
	struct xfs_trans *tp = current->journal_info;
	struct xfs_log_item *lip;

	if (!tp || !ip->i_itemp)
		return false;
	list_for_each_entry(lip, &tp->t_items, li_trans)
		if (lip == &ip->i_itemp->ili_item)
			return true;
	return false;
}

/* ---------------------------------------------------------------- inodes */

static void xfs_sx_stat(struct sx_hinode *hi, struct sx_hstat *st)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);
	struct inode *inode = VFS_I(ip);

	st->hs_ino = ip->i_ino;
	st->hs_gen = inode->i_generation;
	st->hs_size = i_size_read(inode);
	st->hs_mode = inode->i_mode;
	st->hs_flags = 0;
	if (IS_IMMUTABLE(inode))
		st->hs_flags |= SX_HSTAT_IMMUTABLE;
	if (IS_APPEND(inode))
		st->hs_flags |= SX_HSTAT_APPEND;
	if (IS_SWAPFILE(inode))
		st->hs_flags |= SX_HSTAT_SWAPFILE;
	if (xfs_is_reflink_inode(ip))
		st->hs_flags |= SX_HSTAT_REFLINK;
	st->hs_blksize = i_blocksize(inode);
	st->hs_nextents = ip->i_df.if_nextents;
	st->hs_mtime_sec = inode->i_mtime.tv_sec;
	st->hs_mtime_nsec = inode->i_mtime.tv_nsec;
	st->hs_ctime_sec = inode->i_ctime.tv_sec;
	st->hs_ctime_nsec = inode->i_ctime.tv_nsec;
}

static int xfs_sx_lock_two(struct sx_hinode *hi1, struct sx_hinode *hi2)
{
	return xfs_ilock2_io_mmap(xfs_sx_inode(hi1), xfs_sx_inode(hi2));
}

static void xfs_sx_unlock_two(struct sx_hinode *hi1, struct sx_hinode *hi2)
{
	xfs_iunlock2_io_mmap(xfs_sx_inode(hi1), xfs_sx_inode(hi2));
}

/*
 * Write back the whole file and wait for direct I/O, then drop the page
 * cache from the range's first block to EOF: past the range too, so that
 * no delayed allocation is left where the estimate looks for mappings
 * beyond it.  Writeback ends after XFS's ioend work (CoW remap, unwritten
 * conversion).  The part before the range is written back as well because
 * ho_trim_eof then drops the whole CoW fork: a dirty page over shared
 * blocks whose CoW reservation went would be written in place, into the
 * blocks its file shares.
 */
static int xfs_sx_flush_range(struct sx_hinode *hi, s64 off, s64 len)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);
	struct inode *inode = VFS_I(ip);
	loff_t rounding = max_t(loff_t, i_blocksize(inode), PAGE_SIZE);
	loff_t start = round_down(off, rounding);
	int error;

	inode_dio_wait(inode);
	error = filemap_write_and_wait_range(inode->i_mapping, 0, LLONG_MAX);
	if (error)
		return error;
	truncate_pagecache_range(inode, start, LLONG_MAX);
	return 0;
}

static int xfs_sx_read_mapping(struct sx_hinode *hi, u64 startoff, u64 blockcount,
			       struct sx_hmap *map)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);
	struct xfs_bmbt_irec irec;
	unsigned int lockmode = 0;
	int nmaps = 1;
	int error;

	if (startoff > XFS_MAX_FILEOFF)
		return -EFSCORRUPTED;
	blockcount = min_t(u64, blockcount, XFS_MAX_FILEOFF + 1 - startoff);
	if (!xfs_sx_ilocked(ip))
		lockmode = xfs_ilock_data_map_shared(ip);
	error = xfs_bmapi_read(ip, startoff, blockcount, &irec, &nmaps, 0);
	if (lockmode)
		xfs_iunlock(ip, lockmode);
	if (error)
		return error;
	if (nmaps != 1 || irec.br_startoff != startoff || irec.br_blockcount == 0)
		return -EFSCORRUPTED;

	map->hm_startoff = irec.br_startoff;
	map->hm_blockcount = irec.br_blockcount;
	map->hm_flags = 0;
	if (irec.br_startblock == HOLESTARTBLOCK) {
		map->hm_startblock = SX_HOLESTARTBLOCK;
	} else if (isnullstartblock(irec.br_startblock)) {
		/* delayed allocation: the flush left none at or past the range */
		xfs_warn(ip->i_mount, "swapext: delalloc at ino 0x%llx block %llu",
			 ip->i_ino, startoff);
		return -EFSCORRUPTED;
	} else {
		map->hm_startblock = irec.br_startblock;
		if (irec.br_state == XFS_EXT_UNWRITTEN)
			map->hm_flags = SX_HMAP_UNWRITTEN;
	}
	return 0;
}

static u64 xfs_sx_max_extents(struct sx_hinode *hi)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);

	return xfs_iext_max_nextents(xfs_inode_has_large_extent_counts(ip), XFS_DATA_FORK);
}

/*
 * Free every block and delayed allocation past EOF, preallocated ones too
 * (xfs_free_eofblocks keeps those): a TO_EOF swap may move that part of the
 * fork inside the size.  Drop the CoW fork's staging extents too (after the
 * whole-file flush they hold no data): they belong to the blocks being
 * swapped away,
 * and a file whose reflink flag the swap clears must have none.  Called
 * after the flush, with IOLOCK and MMAPLOCK held.
 */
static int xfs_sx_trim_eof(struct sx_hinode *hi)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);
	struct xfs_mount *mp = ip->i_mount;
	xfs_fileoff_t end_fsb = XFS_B_TO_FSB(mp, (xfs_ufsize_t)XFS_ISIZE(ip));
	struct xfs_bmbt_irec irec;
	struct xfs_trans *tp;
	unsigned int lockmode;
	int nmaps = 1;
	int error;

	if (xfs_inode_has_cow_data(ip)) {
		error = xfs_reflink_cancel_cow_range(ip, 0, NULLFILEOFF, true);
		if (error)
			return error;
	}
	if (end_fsb > XFS_MAX_FILEOFF)
		return 0;
	lockmode = xfs_ilock_data_map_shared(ip);
	error = xfs_bmapi_read(ip, end_fsb, XFS_MAX_FILEOFF + 1 - end_fsb, &irec, &nmaps, 0);
	xfs_iunlock(ip, lockmode);
	if (error)
		return error;
	if (nmaps == 1 && irec.br_startblock == HOLESTARTBLOCK &&
	    irec.br_blockcount == XFS_MAX_FILEOFF + 1 - end_fsb)
		return 0;

	error = xfs_qm_dqattach(ip);
	if (error)
		return error;
	error = xfs_trans_alloc(mp, &M_RES(mp)->tr_itruncate, 0, 0, 0, &tp);
	if (error)
		return error;
	xfs_ilock(ip, XFS_ILOCK_EXCL);
	xfs_trans_ijoin(tp, ip, 0);
	error = xfs_itruncate_extents(&tp, ip, XFS_DATA_FORK, XFS_ISIZE(ip));
	if (error)
		xfs_trans_cancel(tp);
	else
		error = xfs_trans_commit(tp);
	xfs_iunlock(ip, XFS_ILOCK_EXCL);
	return error;
}

/* ---------------------------------------------------------- transactions */

static inline struct xfs_trans *XTP(struct sx_htrans *tp)
{
	return (struct xfs_trans *)tp;
}

/* The inodes @tp holds (joined without unlock flags), at most two. */
static int xfs_sx_held(struct xfs_trans *tp, struct xfs_inode *ips[2])
{
	struct xfs_log_item *lip;
	int n = 0;

	list_for_each_entry(lip, &tp->t_items, li_trans) {
		struct xfs_inode_log_item *iip;

		if (lip->li_type != XFS_LI_INODE)
			continue;
		iip = container_of(lip, struct xfs_inode_log_item, ili_item);
		if (iip->ili_lock_flags == 0 && n < 2)
			ips[n++] = iip->ili_inode;
	}
	return n;
}

static int xfs_sx_trans_alloc(struct sx_host *h, const struct sx_hres *res,
			      struct sx_htrans **tpp)
{
	struct xfs_mount *mp = xfs_sx_mount(h);
	struct xfs_inode *ip1 = xfs_sx_inode(res->hr_ip1);
	struct xfs_inode *ip2 = xfs_sx_inode(res->hr_ip2);
	struct xfs_trans *tp;
	unsigned int blocks;
	int error;

	error = xfs_sx_resblks(mp, res, &blocks);
	if (error)
		return error;
	error = xfs_qm_dqattach(ip1);
	if (!error && ip2 != ip1)
		error = xfs_qm_dqattach(ip2);
	if (error)
		return error;

	error = xfs_trans_alloc(mp, &M_RES(mp)->tr_write, blocks, 0, 0, &tp);
	if (error)
		return error;
	if (ip1 == ip2)
		xfs_ilock(ip1, XFS_ILOCK_EXCL);
	else
		xfs_lock_two_inodes(ip1, XFS_ILOCK_EXCL, ip2, XFS_ILOCK_EXCL);
	xfs_trans_ijoin(tp, ip1, 0);
	if (ip2 != ip1)
		xfs_trans_ijoin(tp, ip2, 0);

	/* each owner's increase; within one file nothing moves */
	if (ip1 != ip2 && res->hr_blocks2 > res->hr_blocks1)
		error = xfs_trans_reserve_quota_nblks(tp, ip1,
				res->hr_blocks2 - res->hr_blocks1, 0, false);
	if (!error && ip1 != ip2 && res->hr_blocks1 > res->hr_blocks2)
		error = xfs_trans_reserve_quota_nblks(tp, ip2,
				res->hr_blocks1 - res->hr_blocks2, 0, false);
	if (error) {
		xfs_trans_cancel(tp);
		xfs_iunlock(ip1, XFS_ILOCK_EXCL);
		if (ip2 != ip1)
			xfs_iunlock(ip2, XFS_ILOCK_EXCL);
		return error;
	}
	*tpp = (struct sx_htrans *)tp;
	return 0;
}

static int xfs_sx_trans_roll(struct sx_htrans **tpp)
{
	struct xfs_trans *tp = XTP(*tpp);
	int error;

	error = xfs_defer_finish(&tp);
	*tpp = (struct sx_htrans *)tp;
	return error;
}

static int xfs_sx_trans_commit(struct sx_htrans *htp)
{
	struct xfs_trans *tp = XTP(htp);
	struct xfs_inode *ips[2];
	int i, n = xfs_sx_held(tp, ips);
	int error;

	if (xfs_has_wsync(tp->t_mountp))
		xfs_trans_set_sync(tp);
	error = xfs_trans_commit(tp);
	for (i = 0; i < n; i++)
		xfs_iunlock(ips[i], XFS_ILOCK_EXCL);
	return error;
}

static void xfs_sx_trans_cancel(struct sx_htrans *htp)
{
	struct xfs_trans *tp = XTP(htp);
	struct xfs_inode *ips[2];
	int i, n = xfs_sx_held(tp, ips);

	xfs_trans_cancel(tp);
	for (i = 0; i < n; i++)
		xfs_iunlock(ips[i], XFS_ILOCK_EXCL);
}

/* ---------------------------------------------------------------- changes */

/* @map as an XFS mapping, checked: a bad one would corrupt the fork. */
static int xfs_sx_irec(struct xfs_inode *ip, const struct sx_hmap *map,
		       struct xfs_bmbt_irec *irec)
{
	struct xfs_mount *mp = ip->i_mount;

	if (map->hm_startblock == SX_HOLESTARTBLOCK ||
	    map->hm_blockcount > XFS_MAX_BMBT_EXTLEN ||
	    !xfs_verify_fileext(mp, map->hm_startoff, map->hm_blockcount) ||
	    !xfs_verify_fsbext(mp, map->hm_startblock, map->hm_blockcount))
		return -EFSCORRUPTED;
	irec->br_startoff = map->hm_startoff;
	irec->br_startblock = map->hm_startblock;
	irec->br_blockcount = map->hm_blockcount;
	irec->br_state = (map->hm_flags & SX_HMAP_UNWRITTEN) ? XFS_EXT_UNWRITTEN :
							       XFS_EXT_NORM;
	return 0;
}

/*
 * Queue a deferred bmap of @map: a map or an unmap, the two halves of each
 * step.  The patch makes xfs_bmap_finish_one map an unwritten extent
 * unwritten.
 */
static int xfs_sx_queue(struct sx_htrans *tp, struct sx_hinode *hi, const struct sx_hmap *map,
			bool do_map)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);
	struct xfs_bmbt_irec irec;
	int error;

	error = xfs_sx_irec(ip, map, &irec);
	if (error)
		return error;
	if (do_map)
		xfs_bmap_map_extent(XTP(tp), ip, &irec);
	else
		xfs_bmap_unmap_extent(XTP(tp), ip, &irec);
	return 0;
}

static int xfs_sx_queue_unmap(struct sx_htrans *tp, struct sx_hinode *hi,
			      const struct sx_hmap *map)
{
	return xfs_sx_queue(tp, hi, map, false);
}

static int xfs_sx_queue_map(struct sx_htrans *tp, struct sx_hinode *hi,
			    const struct sx_hmap *map)
{
	return xfs_sx_queue(tp, hi, map, true);
}

static int xfs_sx_set_size(struct sx_htrans *tp, struct sx_hinode *hi, s64 size)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);

	ip->i_disk_size = size;
	i_size_write(VFS_I(ip), size);
	xfs_trans_log_inode(XTP(tp), ip, XFS_ILOG_CORE);
	return 0;
}

/* SX_HOST_MAP_NBLOCKS: the map/unmap move i_nblocks; this moves quota. */
static int xfs_sx_mod_nblocks(struct sx_htrans *tp, struct sx_hinode *hi, s64 delta)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);

	xfs_trans_mod_dquot_byino(XTP(tp), ip, XFS_TRANS_DQ_BCOUNT, delta);
	return 0;
}

static int xfs_sx_set_reflink(struct sx_htrans *tp, struct sx_hinode *hi, bool on)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);

	if (on && !xfs_has_reflink(ip->i_mount))
		return -EOPNOTSUPP;
	/* as xfs_reflink_set_inode_flag: a reflink inode has a CoW fork */
	if (on)
		ip->i_diflags2 |= XFS_DIFLAG2_REFLINK;
	else
		ip->i_diflags2 &= ~XFS_DIFLAG2_REFLINK;
	xfs_trans_log_inode(XTP(tp), ip, XFS_ILOG_CORE);
	if (on)
		xfs_ifork_init_cow(ip);
	return 0;
}

static int xfs_sx_touch(struct sx_htrans *tp, struct sx_hinode *hi)
{
	struct xfs_inode *ip = xfs_sx_inode(hi);

	xfs_trans_ichgtime(XTP(tp), ip, XFS_ICHGTIME_MOD | XFS_ICHGTIME_CHG);
	xfs_trans_log_inode(XTP(tp), ip, XFS_ILOG_CORE);
	return 0;
}

static int xfs_sx_defer_swap(struct sx_htrans *tp, const struct sx_swapext_intent *si)
{
	xfs_sx_defer_add(XTP(tp), si);
	return 0;
}

/* -------------------------------------------------------------- recovery */

static int xfs_sx_iget(struct sx_host *h, u64 ino, u64 gen, struct sx_hinode **hip)
{
	struct xfs_mount *mp = xfs_sx_mount(h);
	struct xfs_inode *ip;
	int error;

	if (!xfs_verify_ino(mp, ino))
		return -EFSCORRUPTED;
	error = xlog_recover_iget(mp, ino, &ip);
	if (error)
		return error;
	if (VFS_I(ip)->i_generation != gen) {
		xfs_irele(ip);
		return -ENOENT;
	}
	*hip = xfs_sx_hinode(ip);
	return 0;
}

static void xfs_sx_irele(struct sx_hinode *hi)
{
	xfs_irele(xfs_sx_inode(hi));
}

static const struct sx_host_ops xfs_sx_ops = {
	.ho_stat		= xfs_sx_stat,
	.ho_lock_two		= xfs_sx_lock_two,
	.ho_unlock_two		= xfs_sx_unlock_two,
	.ho_flush_range		= xfs_sx_flush_range,
	.ho_read_mapping	= xfs_sx_read_mapping,
	.ho_max_extents		= xfs_sx_max_extents,
	.ho_trim_eof		= xfs_sx_trim_eof,
	.ho_trans_alloc		= xfs_sx_trans_alloc,
	.ho_trans_roll		= xfs_sx_trans_roll,
	.ho_trans_commit	= xfs_sx_trans_commit,
	.ho_trans_cancel	= xfs_sx_trans_cancel,
	.ho_queue_unmap		= xfs_sx_queue_unmap,
	.ho_queue_map		= xfs_sx_queue_map,
	.ho_set_size		= xfs_sx_set_size,
	.ho_mod_nblocks		= xfs_sx_mod_nblocks,
	.ho_set_reflink		= xfs_sx_set_reflink,
	.ho_touch		= xfs_sx_touch,
	.ho_defer_swap		= xfs_sx_defer_swap,
	.ho_iget		= xfs_sx_iget,
	.ho_irele		= xfs_sx_irele,
};

/* ------------------------------------------------------------- the ioctl */

/*
 * The SXI may be logged only while the log-incompat bit is set: take a
 * reference that keeps an idle log from clearing it, and set it (writing
 * the superblock) the first time (as xfs_attr_grab_log_assist does).
 */
static int xfs_sx_grab_log_assist(struct xfs_mount *mp)
{
	int error;

	xlog_use_incompat_feat(mp->m_log);
	if (xfs_sb_has_incompat_log_feature(&mp->m_sb, XFS_SB_FEAT_INCOMPAT_LOG_SWAPEXT))
		return 0;
	error = xfs_add_incompat_log_feature(mp, XFS_SB_FEAT_INCOMPAT_LOG_SWAPEXT);
	if (error)
		xlog_drop_incompat_feat(mp->m_log);
	return error;
}

static u32 xfs_sx_fmode(struct file *file)
{
	u32 mode = 0;

	if (file->f_mode & FMODE_READ)
		mode |= SX_HF_READ;
	if (file->f_mode & FMODE_WRITE)
		mode |= SX_HF_WRITE;
	if (file->f_flags & O_APPEND)
		mode |= SX_HF_APPEND;
	return mode;
}

/* A changed file loses its setuid/setgid bits and capabilities. */
static void xfs_sx_remove_privs(struct file *file)
{
	struct inode *inode = file_inode(file);

	inode_lock(inode);
	file_remove_privs(file);
	inode_unlock(inode);
}

/* The request checks the core makes before -EXDEV, for a foreign file1. */
static int xfs_sx_request_checks(const struct file_swap_range *fsr)
{
	unsigned int i;

	if (fsr->flags & ~FILE_SWAP_RANGE_ALL_FLAGS)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(fsr->pad); i++)
		if (fsr->pad[i])
			return -EINVAL;
	if ((fsr->flags & FILE_SWAP_RANGE_FULL_FILES) && (fsr->flags & FILE_SWAP_RANGE_TO_EOF))
		return -EINVAL;
	return -EXDEV;
}

/*
 * FISWAPRANGE on @file2 (file1 is fsr.file1_fd): xfs_file_ioctl's default
 * case calls this; anything but FISWAPRANGE is -ENOTTY, as before.
 */
long xfs_ioc_swap_range(struct file *file2, unsigned int cmd, void __user *arg)
{
	struct xfs_inode *ip2 = XFS_I(file_inode(file2));
	struct xfs_mount *mp = ip2->i_mount;
	struct file_swap_range fsr;
	struct sx_hfile hf1, hf2;
	struct xfs_inode *ip1;
	bool assist = false;
	struct fd f1;
	long error;

	if (cmd != FISWAPRANGE)
		return -ENOTTY;
	if (copy_from_user(&fsr, arg, sizeof(fsr)))
		return -EFAULT;
	if (fsr.file1_fd < 0 || fsr.file1_fd > INT_MAX)
		return -EBADF;
	f1 = fdget(fsr.file1_fd);
	if (!f1.file)
		return -EBADF;
	if (file_inode(f1.file)->i_sb != file_inode(file2)->i_sb) {
		error = xfs_sx_request_checks(&fsr);
		goto out_fdput;
	}
	ip1 = XFS_I(file_inode(f1.file));

	/* what the core does not know of: realtime files and DAX */
	error = -EOPNOTSUPP;
	if (XFS_IS_REALTIME_INODE(ip1) || XFS_IS_REALTIME_INODE(ip2) ||
	    IS_DAX(VFS_I(ip1)) || IS_DAX(VFS_I(ip2)))
		goto out_fdput;

	/* (the VFS's security_file_permission is not exported to modules) */
	error = mnt_want_write_file(file2);
	if (error)
		goto out_fdput;

	if (xfs_has_crc(mp)) {
		error = xfs_sx_grab_log_assist(mp);
		if (error)
			goto out_drop_write;
		assist = true;
	}

	hf1.hf_ip = xfs_sx_hinode(ip1);
	hf1.hf_mode = xfs_sx_fmode(f1.file);
	hf1.hf_pad = 0;
	hf2.hf_ip = xfs_sx_hinode(ip2);
	hf2.hf_mode = xfs_sx_fmode(file2);
	hf2.hf_pad = 0;

	error = sx_swap_core_range(&hf1, &hf2, &fsr);
	if (assist)
		xlog_drop_incompat_feat(mp->m_log);
	if (!error) {
		/* the seed's file_modified(): the times are the core's */
		xfs_sx_remove_privs(f1.file);
		if (file_inode(file2) != file_inode(f1.file))
			xfs_sx_remove_privs(file2);
		fsnotify_modify(f1.file);
		if (file2 != f1.file)
			fsnotify_modify(file2);
		if (copy_to_user(arg, &fsr, sizeof(fsr)))
			error = -EFAULT;
	}
out_drop_write:
	mnt_drop_write_file(file2);
out_fdput:
	fdput(f1);
	return error;
}
