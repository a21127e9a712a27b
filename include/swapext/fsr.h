/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FISWAPRANGE: swap part of one file with part of another (or of the same
 * file), the ABI of the "xfs: atomic file updates" design.
 *
 * The caller names file2 by the file the request is issued on and file1 by
 * file1_fd.  file1_offset, file2_offset and length are bytes; the offsets
 * must be block aligned and length too, unless a range ends at the end of
 * its file.  Filesystems must be able to finish the operation after a crash
 * unless FILE_SWAP_RANGE_NONATOMIC allows otherwise.  On success the kernel
 * (and sx_swap_file_range()) copies the structure back: with
 * FILE_SWAP_RANGE_TO_EOF, length then holds the length that was swapped.
 *
 * The layout is the seed's uapi, byte for byte: 120 bytes, no implicit
 * padding, the same on every ABI.
 */
#ifndef SWAPEXT_FSR_H
#define SWAPEXT_FSR_H

#include <swapext/types.h>

struct file_swap_range {
	int64_t		file1_fd;
	int64_t		file1_offset;		/* file1 offset, bytes */
	int64_t		file2_offset;		/* file2 offset, bytes */
	int64_t		length;			/* bytes to swap */

	uint64_t	flags;			/* see FILE_SWAP_RANGE_* below */

	/* file2 metadata for optional freshness checks */
	int64_t		file2_ino;		/* inode number */
	int64_t		file2_mtime;		/* modification time */
	int64_t		file2_ctime;		/* change time */
	int32_t		file2_mtime_nsec;	/* mod time, nsec */
	int32_t		file2_ctime_nsec;	/* change time, nsec */

	uint64_t	pad[6];			/* must be zeroes */
};

_Static_assert(offsetof(struct file_swap_range, file1_fd) == 0, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, file1_offset) == 8, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, file2_offset) == 16, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, length) == 24, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, flags) == 32, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, file2_ino) == 40, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, file2_mtime) == 48, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, file2_ctime) == 56, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, file2_mtime_nsec) == 64, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, file2_ctime_nsec) == 68, "fsr layout");
_Static_assert(offsetof(struct file_swap_range, pad) == 72, "fsr layout");
_Static_assert(sizeof(struct file_swap_range) == 120, "fsr size");

/*
 * The caller does not need the swap to survive a crash whole: the
 * filesystem may leave it partly done after a power loss.
 */
#define FILE_SWAP_RANGE_NONATOMIC	(1ULL << 0)

/*
 * Refuse with -EBUSY unless file2 still has the inode number, mtime and
 * ctime (seconds and nanoseconds) given in file2_ino and file2_[mc]time*.
 */
#define FILE_SWAP_RANGE_FILE2_FRESH	(1ULL << 1)

/*
 * The request must cover both files whole: offsets 0 and a length equal
 * to both sizes, else -EDOM.
 */
#define FILE_SWAP_RANGE_FULL_FILES	(1ULL << 2)

/*
 * Swap from the offsets to the end of each file and exchange what lies past
 * the offsets in size too, so a file's contents can be replaced by more or
 * less data.  The given length is not used; on return it holds the length
 * that was swapped.
 */
#define FILE_SWAP_RANGE_TO_EOF		(1ULL << 3)

#define FILE_SWAP_RANGE_ALL_FLAGS	(FILE_SWAP_RANGE_NONATOMIC | \
					 FILE_SWAP_RANGE_FILE2_FRESH | \
					 FILE_SWAP_RANGE_FULL_FILES | \
					 FILE_SWAP_RANGE_TO_EOF)

/*
 * The ioctl number, encoded as Linux's asm-generic _IOWR() does (x86, arm,
 * arm64, riscv, s390 and most others): direction in bits 30-31 (read 2 |
 * write 1), size in bits 16-29, type in bits 8-15, number in bits 0-7.
 * Spelled out here because engine/ and its public headers cannot include
 * <linux/ioctl.h>; a kernel glue on an architecture with another encoding
 * (alpha, mips, powerpc, sparc) uses the kernel's own _IOWR().
 */
#define SX_IOC_NRSHIFT		0
#define SX_IOC_TYPESHIFT	8
#define SX_IOC_SIZESHIFT	16
#define SX_IOC_DIRSHIFT		30
#define SX_IOC_WRITE		1U
#define SX_IOC_READ		2U
#define SX_IOC(dir, type, nr, size) \
	((unsigned int)(((dir) << SX_IOC_DIRSHIFT) | \
			((unsigned int)(type) << SX_IOC_TYPESHIFT) | \
			((unsigned int)(nr) << SX_IOC_NRSHIFT) | \
			((unsigned int)(size) << SX_IOC_SIZESHIFT)))
#define SX_IOR(type, nr, argtype)	SX_IOC(SX_IOC_READ, (type), (nr), sizeof(argtype))
#define SX_IOW(type, nr, argtype)	SX_IOC(SX_IOC_WRITE, (type), (nr), sizeof(argtype))
#define SX_IOWR(type, nr, argtype) \
	SX_IOC(SX_IOC_READ | SX_IOC_WRITE, (type), (nr), sizeof(argtype))

#ifndef FISWAPRANGE
#define FISWAPRANGE	SX_IOWR('X', 129, struct file_swap_range)
#endif

_Static_assert(SX_IOWR('X', 129, struct file_swap_range) == 0xc0785881u,
	       "FISWAPRANGE encoding");

#endif /* SWAPEXT_FSR_H */
