// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * XFS_IOC_SWAPEXT on the store (include/swapext/swapext_compat.h): the
 * bulkstat record of one open file, and the old full-file swap turned into
 * a swap_file_range request, as the seed's xfs_ioc_swapext does it.
 *
 * The conversion adds nothing to the swap's own checks except what the old
 * entry refused and the new one would not catch the same way: the request
 * version, bad descriptors (-EINVAL, the old answer), one file given twice
 * and a nonzero sx_offset.
 */
#include "util.h"
#include "file.h"
#include "inode.h"
#include "bmap.h"
#include "mount.h"
#include "dev.h"
#include <swapext/swapext_compat.h>

#define SX_COMPAT_NSEC_PER_SEC	1000000000LL

/* Split a time in nanoseconds into bulkstat's seconds and nanoseconds. */
static void sx_compat_time(s64 ns, struct sx_xfs_bstime *t)
{
	s64 s = ns / SX_COMPAT_NSEC_PER_SEC, r = ns % SX_COMPAT_NSEC_PER_SEC;

	/* nanoseconds stay in 0..999999999 for times before 1970 too */
	if (r < 0) {
		r += SX_COMPAT_NSEC_PER_SEC;
		s--;
	}
	t->tv_sec = s;
	t->tv_nsec = (s32)r;
	t->tv_pad = 0;
}

/* Describe the open file @fd as bulkstat v1 does. */
SX_API int sx_bulkstat(struct sx_mount *mp, int fd, struct sx_xfs_bstat *bs)
{
	struct sx_inode *ip;
	u64 nrecs;
	int error;

	if (sx_is_shutdown(mp))
		return -EIO;
	error = sx_fd_get(mp, fd, &ip);
	if (error)
		return error;
	memset(bs, 0, sizeof(*bs));
	sx_ilock(ip, SX_ILOCK_EXCL);
	bs->bs_ino = ip->i_ino;
	bs->bs_mode = ip->i_mode;
	/* bulkstat v1 has 16 bits of link count; say "many" rather than wrap */
	bs->bs_nlink = (u16)sx_min(ip->i_nlink, (u32)0xffff);
	bs->bs_uid = ip->i_uid;
	bs->bs_gid = ip->i_gid;
	bs->bs_blksize = (s32)mp->m_bsize;
	bs->bs_size = (s64)ip->i_size;
	sx_compat_time(ip->i_atime, &bs->bs_atime);
	sx_compat_time(ip->i_mtime, &bs->bs_mtime);
	sx_compat_time(ip->i_ctime, &bs->bs_ctime);
	bs->bs_blocks = (s64)ip->i_nblocks;
	if (ip->i_flags & SX_DIFLAG_IMMUTABLE)
		bs->bs_xflags |= SX_XFS_XFLAG_IMMUTABLE;
	if (ip->i_flags & SX_DIFLAG_APPEND)
		bs->bs_xflags |= SX_XFS_XFLAG_APPEND;
	nrecs = sx_bmap_count(ip);
	bs->bs_extents = (s32)sx_min(nrecs, (u64)0x7fffffff);
	/* XFS generations are 32 bits; ours are wider and unique, so keep the low part */
	bs->bs_gen = (u32)ip->i_gen;
	sx_iunlock(ip, SX_ILOCK_EXCL);
	sx_irele(ip);
	return 0;
}

/* A descriptor of the request as an int, or -EINVAL as XFS's fdget() failure. */
static int sx_compat_fd(struct sx_mount *mp, s64 v, struct sx_inode **ipp)
{
	if (v < 0 || v > 0x7fffffff)
		return -EINVAL;
	return sx_fd_get(mp, (int)v, ipp) ? -EINVAL : 0;
}

/* XFS_IOC_SWAPEXT. */
SX_API int sx_swapext(struct sx_mount *mp, struct sx_xfs_swapext *sx)
{
	struct file_swap_range fsr;
	struct sx_inode *tip = NULL, *ip = NULL;
	int error;

	if (sx->sx_version != SX_XFS_SX_VERSION)
		return -EINVAL;
	error = sx_compat_fd(mp, sx->sx_fdtarget, &ip);
	if (error)
		return error;
	error = sx_compat_fd(mp, sx->sx_fdtmp, &tip);
	if (error)
		goto out_rele;
	if (ip == tip) {
		error = -EINVAL;
		goto out_rele;
	}
	if (sx->sx_offset != 0) {
		error = -EFAULT;
		goto out_rele;
	}

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = sx->sx_fdtmp;
	fsr.length = sx->sx_length;
	fsr.flags = FILE_SWAP_RANGE_NONATOMIC | FILE_SWAP_RANGE_FILE2_FRESH |
		    FILE_SWAP_RANGE_FULL_FILES;
	fsr.file2_ino = (s64)sx->sx_stat.bs_ino;
	fsr.file2_mtime = sx->sx_stat.bs_mtime.tv_sec;
	fsr.file2_mtime_nsec = sx->sx_stat.bs_mtime.tv_nsec;
	fsr.file2_ctime = sx->sx_stat.bs_ctime.tv_sec;
	fsr.file2_ctime_nsec = sx->sx_stat.bs_ctime.tv_nsec;
	/*
	 * The references taken above keep both inodes alive; the swap looks
	 * the descriptors up again, as the ioctl's vfs call does.
	 */
	error = sx_swap_file_range(mp, (int)sx->sx_fdtarget, &fsr);
	/* the old entry's answer when the request is not both whole files */
	if (error == -EDOM)
		error = -EFAULT;
out_rele:
	if (tip)
		sx_irele(tip);
	sx_irele(ip);
	return error;
}
