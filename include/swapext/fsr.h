/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FISWAPRANGE ABI of the "xfs: atomic file updates" patch set
 * (include/uapi/linux/fs.h of its VFS patch): struct file_swap_range, its
 * flags and the ioctl number, byte for byte.  The fixed-width types are the
 * platform's (s64 = __s64 and so on), so that this header includes only
 * "sx_platform.h" and serves the engine, the kernel module and the tool.
 */
#ifndef SWAPEXT_FSR_H
#define SWAPEXT_FSR_H

#include "sx_platform.h"

/*
 * Swap part of file1 with part of the file that this ioctl that is being
 * called against (file2).  The filesystem must be able to complete the
 * operation even if the system goes down.
 */
struct file_swap_range {
	s64		file1_fd;
	s64		file1_offset;	/* file1 offset, bytes */
	s64		file2_offset;	/* file2 offset, bytes */
	s64		length;		/* bytes to swap */

	u64		flags;		/* see FILE_SWAP_RANGE_* below */

	/* file2 metadata for optional freshness checks */
	s64		file2_ino;	/* inode number */
	s64		file2_mtime;	/* modification time */
	s64		file2_ctime;	/* change time */
	s32		file2_mtime_nsec; /* mod time, nsec */
	s32		file2_ctime_nsec; /* change time, nsec */

	u64		pad[6];		/* must be zeroes */
};

_Static_assert(sizeof(struct file_swap_range) == 120, "struct file_swap_range changed size");

/* Atomic swap operations are not required (no completion after a crash). */
#define FILE_SWAP_RANGE_NONATOMIC	(1 << 0)
/* Check file2's inode number, mtime and ctime; -EBUSY if they differ. */
#define FILE_SWAP_RANGE_FILE2_FRESH	(1 << 1)
/* Both ranges must end at their file's end; -EDOM otherwise. */
#define FILE_SWAP_RANGE_FULL_FILES	(1 << 2)
/* Swap to the ends of both files, then swap the sizes; length is ignored. */
#define FILE_SWAP_RANGE_TO_EOF		(1 << 3)

#define FILE_SWAP_RANGE_ALL_FLAGS	(FILE_SWAP_RANGE_NONATOMIC | \
					 FILE_SWAP_RANGE_FILE2_FRESH | \
					 FILE_SWAP_RANGE_FULL_FILES | \
					 FILE_SWAP_RANGE_TO_EOF)

/*
 * Ioctl numbers in the asm-generic encoding (x86, arm64, riscv: direction
 * in bits 30-31, size in 16-29, type in 8-15, number in 0-7), spelled out so
 * that this header needs no <linux/ioctl.h>; the module and the tool check
 * them against _IOWR() at compile time.
 */
#define SX_IOC_WRITE		1u
#define SX_IOC_READ		2u
#define SX_IOC(dir, type, nr, size) \
	((unsigned int)(((dir) << 30) | ((size) << 16) | ((type) << 8) | (nr)))
#define SX_IOR(type, nr, T)	SX_IOC(SX_IOC_READ, (type), (nr), sizeof(T))
#define SX_IOW(type, nr, T)	SX_IOC(SX_IOC_WRITE, (type), (nr), sizeof(T))
#define SX_IOWR(type, nr, T)	SX_IOC(SX_IOC_READ | SX_IOC_WRITE, (type), (nr), sizeof(T))

/* _IOWR('X', 129, struct file_swap_range), as in the patch set */
#ifndef FISWAPRANGE
#define FISWAPRANGE		SX_IOWR('X', 129, struct file_swap_range)
#endif

#endif /* SWAPEXT_FSR_H */
