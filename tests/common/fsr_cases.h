/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The seed's FISWAPRANGE errno table at the level of file descriptors: the
 * rows of tests/unit/test_swaprange.c (the core on the in-memory host) that
 * a caller can set up with ordinary files on any host, one request each
 * and the errno it must get.  tests/common/sxb_errtab.c runs it; the store
 * runs it in tests/unit/test_swap_errtab.c and XFS in the qemu guest
 * (tests/xfs/xfscheck.c), so both hosts pass the same table.
 *
 * Rows the core table has and this one does not need a host hook no file
 * API gives (a missing host operation, a host without the feature, a size
 * limit or extent limit set by the test, injected flush and allocation
 * failures, one block in two states) or a file the store cannot make
 * (directories, fifos, open modes, swap files): xfscheck.c checks the
 * open-mode and file-type rows on XFS by itself.
 *
 * Sizes and offsets are bytes in blocks of FSRC_B; both hosts run it with
 * that block size.
 */
#ifndef FSR_CASES_H
#define FSR_CASES_H

#include <errno.h>
#include <stdint.h>
#include <swapext/fsr.h>

#define FSRC_B		4096
#define FSRC_S64MAX	((int64_t)(~0ull >> 1))
#define FSRC_SIZE	(16 * FSRC_B)	/* a file's size when the row gives none */

enum fsrc_fresh {
	FSRC_FR_NONE = 0,
	FSRC_FR_MATCH,		/* file2's own ino and times */
	FSRC_FR_INO,		/* ... with another inode number */
	FSRC_FR_MTIME,
	FSRC_FR_MTIME_NSEC,
	FSRC_FR_CTIME,
	FSRC_FR_CTIME_NSEC,
};

enum fsrc_fd {
	FSRC_FD_OK = 0,
	FSRC_FD_BAD,		/* a number no file is open under */
	FSRC_FD_NEG,		/* -1 */
};

/* inode flags of a row (set after the files are opened) */
#define FSRC_IMMUTABLE	(1u << 0)
#define FSRC_APPEND	(1u << 1)

struct fsr_case {
	const char	*name;
	int		err;		/* 0 or the (positive) errno expected */
	int64_t		size1, size2;	/* bytes; 0: FSRC_SIZE */
	uint8_t		same;		/* file2 is file1 */
	uint8_t		iflags1, iflags2;
	uint8_t		fd1;		/* enum fsrc_fd */
	int64_t		off1, off2, len;
	uint64_t	flags;
	uint8_t		pad;		/* 1..6: pad[pad - 1] = 1 */
	uint8_t		fresh;		/* enum fsrc_fresh */
	uint8_t		len_out_set;	/* on success fsr.length must be len_out */
	int64_t		len_out;
};

#define B_	FSRC_B
#define NA_	FILE_SWAP_RANGE_NONATOMIC
#define FR_	FILE_SWAP_RANGE_FILE2_FRESH
#define FF_	FILE_SWAP_RANGE_FULL_FILES
#define TE_	FILE_SWAP_RANGE_TO_EOF

static const struct fsr_case fsr_cases[] = {
	{ "unknown flag", EINVAL, .len = B_, .flags = 1ull << 4 },
	{ "high unknown flag", EINVAL, .len = B_, .flags = 1ull << 63 },
	{ "pad[0] nonzero", EINVAL, .len = B_, .pad = 1 },
	{ "pad[5] nonzero", EINVAL, .len = B_, .pad = 6 },
	{ "FULL_FILES with TO_EOF", EINVAL, .flags = FF_ | TE_ },
	{ "file1_fd names no file", EBADF, .len = B_, .fd1 = FSRC_FD_BAD },
	{ "file1_fd -1", EBADF, .len = B_, .fd1 = FSRC_FD_NEG },
	{ "file1_offset negative", EINVAL, .off1 = -B_, .len = B_ },
	{ "file2_offset negative", EINVAL, .off2 = -B_, .len = B_ },
	{ "file2_offset S64_MIN", EINVAL, .off2 = -FSRC_S64MAX - 1, .len = B_ },
	{ "length negative", EINVAL, .len = -B_ },
	{ "file1_offset + length wraps", EINVAL, .off1 = B_, .len = FSRC_S64MAX },
	{ "file2_offset + length wraps", EINVAL, .off2 = 2 * B_, .len = FSRC_S64MAX - B_ },
	{ "TO_EOF, negative offset", EINVAL, .off1 = -FSRC_S64MAX - 1, .flags = TE_ },
	{ "TO_EOF, negative length", EINVAL, .len = -1, .flags = TE_ },
	{ "file2 immutable", EPERM, .len = B_, .iflags2 = FSRC_IMMUTABLE },
	{ "file1 immutable", EPERM, .len = B_, .iflags1 = FSRC_IMMUTABLE },
	{ "file1 append-only", EPERM, .len = B_, .iflags1 = FSRC_APPEND },
	{ "file2 append-only", EPERM, .len = B_, .iflags2 = FSRC_APPEND },
	{ "file1_offset past EOF", EINVAL, .off1 = 17 * B_, .len = 0 },
	{ "file2_offset past EOF", EINVAL, .off2 = 16 * B_ + 1, .len = 0 },
	{ "zero length", 0, .len = 0 },
	{ "zero length at both EOFs, TO_EOF", 0, .off1 = 16 * B_, .off2 = 16 * B_, .len = 77,
	  .flags = TE_, .len_out_set = 1, .len_out = 0 },
	{ "zero length, stale FILE2_FRESH", EBUSY, .len = 0, .flags = FR_,
	  .fresh = FSRC_FR_MTIME },
	{ "file1_offset unaligned", EINVAL, .off1 = 512, .len = B_ },
	{ "file2_offset unaligned", EINVAL, .off2 = B_ + 1, .len = B_ },
	{ "range past file1's EOF", EINVAL, .size1 = 8 * B_, .off1 = 4 * B_, .len = 5 * B_ },
	{ "range past file2's EOF", EINVAL, .size2 = 8 * B_, .off2 = 4 * B_, .len = 5 * B_ },
	{ "length unaligned mid-file", EINVAL, .len = B_ + 100 },
	{ "one file, overlapping ranges", EINVAL, .size1 = 64 * B_, .same = 1, .off1 = 0,
	  .off2 = 4 * B_, .len = 8 * B_ },
	{ "one file, one range", EINVAL, .same = 1, .len = 4 * B_ },
	{ "one file, overlap after EOF rounding", EINVAL, .size1 = 10 * B_ + 100, .same = 1,
	  .off1 = 6 * B_, .off2 = 8 * B_, .len = 2 * B_ + 100 },
	{ "one file, two ranges", 0, .size1 = 32 * B_, .same = 1, .off1 = 2 * B_,
	  .off2 = 20 * B_, .len = 8 * B_ },
	{ "partial EOF block into file2's middle", EINVAL, .size1 = 10 * B_ + 100,
	  .size2 = 20 * B_, .off1 = 8 * B_, .off2 = 0, .len = 2 * B_ + 100 },
	{ "partial EOF block into file1's middle", EINVAL, .size1 = 20 * B_,
	  .size2 = 10 * B_ + 100, .off1 = 0, .off2 = 8 * B_, .len = 2 * B_ + 100 },
	{ "partial EOF blocks at both EOFs", 0, .size1 = 10 * B_ + 100, .size2 = 4 * B_ + 100,
	  .off1 = 8 * B_, .off2 = 2 * B_, .len = 2 * B_ + 100 },
	{ "FULL_FILES, offset not zero", EDOM, .off2 = B_, .len = 15 * B_, .flags = FF_ },
	{ "FULL_FILES, sizes differ", EDOM, .size2 = 20 * B_, .len = 16 * B_, .flags = FF_ },
	{ "FULL_FILES", 0, .len = 16 * B_, .flags = FF_ },
	{ "FULL_FILES, NONATOMIC", 0, .len = 16 * B_, .flags = FF_ | NA_ },
	{ "NONATOMIC", 0, .off1 = 3 * B_, .off2 = 5 * B_, .len = 7 * B_, .flags = NA_ },
	{ "FILE2_FRESH matches", 0, .len = 4 * B_, .flags = FR_, .fresh = FSRC_FR_MATCH },
	{ "FILE2_FRESH, other inode", EBUSY, .len = 4 * B_, .flags = FR_, .fresh = FSRC_FR_INO },
	{ "FILE2_FRESH, mtime", EBUSY, .len = 4 * B_, .flags = FR_, .fresh = FSRC_FR_MTIME },
	{ "FILE2_FRESH, mtime ns", EBUSY, .len = 4 * B_, .flags = FR_,
	  .fresh = FSRC_FR_MTIME_NSEC },
	{ "FILE2_FRESH, ctime", EBUSY, .len = 4 * B_, .flags = FR_, .fresh = FSRC_FR_CTIME },
	{ "FILE2_FRESH, ctime ns", EBUSY, .len = 4 * B_, .flags = FR_,
	  .fresh = FSRC_FR_CTIME_NSEC },
	{ "TO_EOF sets the length", 0, .size1 = 10 * B_ + 7, .size2 = 3 * B_, .off1 = 2 * B_,
	  .off2 = B_, .len = 5, .flags = TE_, .len_out_set = 1, .len_out = 8 * B_ + 7 },
	{ "TO_EOF, NONATOMIC", 0, .size1 = 5 * B_, .size2 = 12 * B_, .off1 = B_, .off2 = 4 * B_,
	  .flags = TE_ | NA_, .len_out_set = 1, .len_out = 8 * B_ },
};

#undef B_
#undef NA_
#undef FR_
#undef FF_
#undef TE_

#endif /* FSR_CASES_H */
