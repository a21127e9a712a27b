/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The model of one FISWAPRANGE request, for tests that issue random ones:
 * from the two files' sizes, the block size and the request, what the call
 * must return (the errno of the first rule broken, in the order the front
 * end checks them) and, if it succeeds, which blocks move and the sizes the
 * files end with.  It knows nothing of the engine: it restates the rules of
 * the interface, so a difference between the two is a finding.
 */
#ifndef SXSWAPMODEL_H
#define SXSWAPMODEL_H

#include "sx_platform.h"
#include <swapext/fsr.h>

/* What the test knows of the two files and the filesystem. */
struct sxm_files {
	u64	size1, size2;		/* bytes */
	u32	bsize;
	bool	same;			/* file1 and file2 are one file */
	bool	fresh_ok;		/* the FILE2_FRESH fields match file2 */
	bool	atomic;			/* the filesystem has the atomic_swap feature */
};

/* The algorithm that runs a valid request. */
enum sxm_algo { SXM_NONE, SXM_ATOMIC, SXM_NONATOMIC };

struct sxm_result {
	int		error;		/* 0 or -errno */
	bool		zero;		/* succeeds, changes nothing */
	enum sxm_algo	algo;
	s64		length;		/* the length the call reports back */
	u64		blk1, blk2;	/* first block of each range */
	u64		nblk;		/* blocks exchanged */
	u64		size1, size2;	/* sizes after the swap (same file: size1) */
};

/* sxm_predict() - the outcome of @fsr on files @f (file1_fd is not looked at) */
void sxm_predict(const struct sxm_files *f, const struct file_swap_range *fsr,
		 struct sxm_result *r);

#endif /* SXSWAPMODEL_H */
