// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * SXI/SXD: the swap's deferred item, its log form and its recovery (the
 * seed's xfs_swapext_item.c).
 *
 * The host's deferred-work manager logs an SXI whenever a swap item is
 * queued or requeued (sx_swapext_item_encode), logs the SXD of the old
 * intent in each step's transaction and calls sx_swapext_item_finish for
 * the step.  After a crash, recovery hands each SXI without its SXD to
 * sx_swapext_item_decode, which validates it, finds both inodes by number
 * and generation, and rebuilds the item from the log alone (in particular
 * the final sizes: they are never recomputed from inodes that earlier steps
 * may already have grown); the host then finishes it like any other item.
 */
#include "swap_core.h"

void sx_swapext_item_encode(const struct sx_swapext_intent *si, struct sx_dlog_swapext *dl)
{
	dl->sw_ino1 = cpu_to_le64(si->si_ino1);
	dl->sw_ino2 = cpu_to_le64(si->si_ino2);
	dl->sw_gen1 = cpu_to_le64(si->si_gen1);
	dl->sw_gen2 = cpu_to_le64(si->si_gen2);
	dl->sw_startoff1 = cpu_to_le64(si->si_startoff1);
	dl->sw_startoff2 = cpu_to_le64(si->si_startoff2);
	dl->sw_blockcount = cpu_to_le64(si->si_blockcount);
	dl->sw_flags = cpu_to_le64(si->si_flags);
	dl->sw_isize1 = cpu_to_le64((u64)si->si_isize1);
	dl->sw_isize2 = cpu_to_le64((u64)si->si_isize2);
}

int sx_swapext_sxi_check(const struct sx_host *h, const void *payload, u32 len)
{
	const struct sx_dlog_sxi *sxi = payload;

	if (SX_CORE_CORRUPT(h, len != sizeof(*sxi)) ||
	    SX_CORE_CORRUPT(h, le32_to_cpu(sxi->sxi_hdr.li_nitems) != 1) ||
	    SX_CORE_CORRUPT(h, sxi->sxi_hdr.li_pad != 0) ||
	    SX_CORE_CORRUPT(h, sxi->sxi_hdr.li_id == 0))
		return -EFSCORRUPTED;
	return 0;
}

/* True if [@off, +@len) of a file of @bsize blocks stays below 2^63 bytes. */
static bool sx_swapext_range_ok(u64 off, u64 len, u32 bsize)
{
	u64 max = (u64)SX_S64_MAX / bsize;

	return off <= max && len <= max - off;
}

/* Check what a logged item says on its own, before any inode is looked at. */
static int sx_swapext_item_check(const struct sx_host *h, const struct sx_swapext_intent *si)
{
	bool sizes = si->si_flags & SX_SWAPEXT_SET_SIZES;

	if (SX_CORE_CORRUPT(h, si->si_blockcount == 0) ||
	    SX_CORE_CORRUPT(h, si->si_flags & ~SX_SWAPEXT_FLAGS_ALL) ||
	    SX_CORE_CORRUPT(h, sizes && (si->si_isize1 < 0 || si->si_isize2 < 0)) ||
	    SX_CORE_CORRUPT(h, !sizes && (si->si_isize1 != -1 || si->si_isize2 != -1)) ||
	    SX_CORE_CORRUPT(h, !sx_swapext_range_ok(si->si_startoff1, si->si_blockcount, 1)) ||
	    SX_CORE_CORRUPT(h, !sx_swapext_range_ok(si->si_startoff2, si->si_blockcount, 1)))
		return -EFSCORRUPTED;
	if (si->si_ino1 != si->si_ino2)
		return 0;
	/* two ranges of one file: one generation, no overlap */
	if (SX_CORE_CORRUPT(h, si->si_gen1 != si->si_gen2) ||
	    SX_CORE_CORRUPT(h, si->si_startoff1 < si->si_startoff2 + si->si_blockcount &&
			  si->si_startoff2 < si->si_startoff1 + si->si_blockcount))
		return -EFSCORRUPTED;
	return 0;
}

/* Find a logged inode; anything but a memory shortage means a bad intent. */
static int sx_swapext_iget(struct sx_host *h, u64 ino, u64 gen, struct sx_hinode **ipp)
{
	int error;

	*ipp = NULL;
	error = h->h_ops->ho_iget(h, ino, gen, ipp);
	if (error == -ENOMEM)
		return error;
	if (SX_CORE_CORRUPT(h, error != 0 || *ipp == NULL)) {
		*ipp = NULL;
		return -EFSCORRUPTED;
	}
	return 0;
}

/* Drop the inode references a recovered item owns. */
static void sx_swapext_item_release(struct sx_swapext_intent *si)
{
	if (!(si->si_iflags & SX_SI_RECOVERED))
		return;
	if (si->si_ip2)
		sx_hops(si->si_ip2)->ho_irele(si->si_ip2);
	if (si->si_ip1)
		sx_hops(si->si_ip1)->ho_irele(si->si_ip1);
	si->si_ip1 = NULL;
	si->si_ip2 = NULL;
	si->si_iflags &= ~SX_SI_RECOVERED;
}

int sx_swapext_item_decode(struct sx_host *h, const struct sx_dlog_swapext *dl,
			   struct sx_swapext_intent *si)
{
	struct sx_hstat st1, st2;
	int error;

	memset(si, 0, sizeof(*si));
	si->si_ino1 = le64_to_cpu(dl->sw_ino1);
	si->si_ino2 = le64_to_cpu(dl->sw_ino2);
	si->si_gen1 = le64_to_cpu(dl->sw_gen1);
	si->si_gen2 = le64_to_cpu(dl->sw_gen2);
	si->si_startoff1 = le64_to_cpu(dl->sw_startoff1);
	si->si_startoff2 = le64_to_cpu(dl->sw_startoff2);
	si->si_blockcount = le64_to_cpu(dl->sw_blockcount);
	si->si_flags = le64_to_cpu(dl->sw_flags);
	si->si_isize1 = (s64)le64_to_cpu(dl->sw_isize1);
	si->si_isize2 = (s64)le64_to_cpu(dl->sw_isize2);
	error = sx_swapext_item_check(h, si);
	if (error)
		return error;

	si->si_iflags = SX_SI_RECOVERED;
	error = sx_swapext_iget(h, si->si_ino1, si->si_gen1, &si->si_ip1);
	if (!error)
		error = sx_swapext_iget(h, si->si_ino2, si->si_gen2, &si->si_ip2);
	if (error)
		goto out_release;

	/* the inodes must still be regular files whose block size fits the ranges */
	sx_hstat(si->si_ip1, &st1);
	sx_hstat(si->si_ip2, &st2);
	if (SX_CORE_CORRUPT(h, (st1.hs_mode & SX_HS_IFMT) != SX_HS_IFREG ||
			  (st2.hs_mode & SX_HS_IFMT) != SX_HS_IFREG) ||
	    SX_CORE_CORRUPT(h, st1.hs_blksize == 0 || st1.hs_blksize != st2.hs_blksize) ||
	    SX_CORE_CORRUPT(h, !sx_swapext_range_ok(si->si_startoff1, si->si_blockcount,
						    st1.hs_blksize) ||
			  !sx_swapext_range_ok(si->si_startoff2, si->si_blockcount,
					       st2.hs_blksize))) {
		error = -EFSCORRUPTED;
		goto out_release;
	}
	return 0;

out_release:
	sx_swapext_item_release(si);
	return error;
}

int sx_swapext_item_finish(struct sx_htrans *tp, struct sx_swapext_intent *si)
{
	const struct sx_host *h = si->si_ip1->hi_host;
	bool lock = (si->si_iflags & SX_SI_RECOVERED) &&
		    !(h->h_features & SX_HOST_RECOVERY_LOCKS);
	int error;

	/*
	 * In normal operation the front end holds both locks for the chain;
	 * a recovered item takes them for each step unless the host's
	 * recovery holds them already.
	 */
	if (lock) {
		error = h->h_ops->ho_lock_two(si->si_ip1, si->si_ip2);
		if (error)
			return error;
	}
	error = sx_swapext_finish_one(tp, si);
	if (lock)
		h->h_ops->ho_unlock_two(si->si_ip1, si->si_ip2);
	if (error == 0)
		sx_swapext_item_release(si);
	return error;
}

int sx_swapext_item_estimate(const struct sx_swapext_intent *si, struct sx_hres *res)
{
	struct sx_swap_est est;
	int error;

	error = sx_swapext_estimate(si, &est);
	if (error)
		return error;
	sx_swapext_est_res(si, &est, SX_SWAP_ATOMIC, res);
	return 0;
}

void sx_swapext_item_cancel(struct sx_swapext_intent *si)
{
	sx_swapext_item_release(si);
}

void sx_swapext_item_describe(const struct sx_dlog_swapext *dl, char *buf, size_t len)
{
	snprintf(buf, len,
		 "swapext ino1 %llu gen %llu off %llu <-> ino2 %llu gen %llu off %llu "
		 "count %llu flags 0x%llx isize1 %lld isize2 %lld",
		 (unsigned long long)le64_to_cpu(dl->sw_ino1),
		 (unsigned long long)le64_to_cpu(dl->sw_gen1),
		 (unsigned long long)le64_to_cpu(dl->sw_startoff1),
		 (unsigned long long)le64_to_cpu(dl->sw_ino2),
		 (unsigned long long)le64_to_cpu(dl->sw_gen2),
		 (unsigned long long)le64_to_cpu(dl->sw_startoff2),
		 (unsigned long long)le64_to_cpu(dl->sw_blockcount),
		 (unsigned long long)le64_to_cpu(dl->sw_flags),
		 (long long)le64_to_cpu(dl->sw_isize1),
		 (long long)le64_to_cpu(dl->sw_isize2));
}
