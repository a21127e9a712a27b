/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The parts of the xfscheck guest program (tests/xfs/xfscheck.c). */
#ifndef XFSCHECK_H
#define XFSCHECK_H

#include "sxb.h"

#define XC_BS	4096u	/* the images' block size: the store's default */

/*
 * xc_shutdown_run() - @npoints shutdowns (XFS_IOC_GOINGDOWN, with and
 * without log flush, in turn) at delays spread over a swap of two files of
 * @nextents extents each, each followed by unmount and mount of @dev on
 * @mnt (log recovery); each point passes if both files are all old or
 * both all new
 */
void xc_shutdown_run(struct sxb_report *r, const char *dev, const char *mnt, uint32_t npoints,
		     uint64_t nextents);

/*
 * xc_quota_run() - on @mnt (mounted from @dev with user and group quota):
 * block usage of two owners moves with a swap; a swap past a hard limit
 * fails with EDQUOT and changes nothing
 */
void xc_quota_run(struct sxb_report *r, const char *dev, const char *mnt);

/*
 * xc_misc_run() - on @mnt (mounted from @dev): the XFS geometry flag
 * ATOMIC_SWAP; unwritten extents stay unwritten through swaps (FIEMAP);
 * setuid/setgid kept by a swap as root and dropped from both files by one
 * without CAP_FSETID; the contents after an unmount and mount of @dev
 */
void xc_misc_run(struct sxb_report *r, const char *dev, const char *mnt);

/* xc_now_us() - a monotonic clock in microseconds */
uint64_t xc_now_us(void);

#endif /* XFSCHECK_H */
