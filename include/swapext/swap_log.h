/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The swap core's log formats: the payload of an SXI (swap extents intent)
 * and the framing swapext's store gives every intent.  Apart from the core
 * itself, only a host's log code needs this file; the store's other log
 * and on-disk formats are in <swapext/format.h>, which a host of the core
 * never needs.
 *
 * Little-endian and fixed-width with explicit padding, like every format
 * (sizes pinned in engine/diag/format_check.c).
 */
#ifndef SWAPEXT_SWAP_LOG_H
#define SWAPEXT_SWAP_LOG_H

/*
 * Every intent and done payload the store logs begins with this header, so
 * that recovery and the log printer can pair them without knowing the
 * type.  An intent's li_id is unique over the life of the filesystem
 * (epoch in the high half); a done item carries the id of its intent.
 */
struct sx_dlog_intent {
	__le64	li_id;
	__le32	li_nitems;
	__le32	li_pad;
};

/*
 * SXI/SXD: swap the mappings of two ranges of two files' data forks (or of
 * two ranges of one file), the seed's xfs_swap_extent plus both inodes'
 * generation numbers, which recovery checks so that an inode reused after
 * the intent was logged is never touched.  The core encodes and decodes
 * struct sx_dlog_swapext; a host frames it.  swapext's store and the
 * in-memory host log an SXI as struct sx_dlog_intent (li_nitems = 1,
 * li_pad = 0) and one struct sx_dlog_swapext (struct sx_dlog_sxi), and an
 * SXD as the bare struct sx_dlog_intent with the SXI's id; another host
 * (XFS) wraps the same payload in its own log item format.  The intent
 * describes what is LEFT to do: each step of the chain logs the SXD of the
 * old intent and an SXI for the remainder.
 */
struct sx_dlog_swapext {
	__le64	sw_ino1;
	__le64	sw_ino2;
	__le64	sw_gen1;
	__le64	sw_gen2;
	__le64	sw_startoff1;		/* file blocks */
	__le64	sw_startoff2;
	__le64	sw_blockcount;		/* blocks left to swap; never 0 */
	__le64	sw_flags;		/* SX_SWAPEXT_* */
	__le64	sw_isize1;		/* s64; SET_SIZES: final size of ino1, else -1 */
	__le64	sw_isize2;
};

struct sx_dlog_sxi {
	struct sx_dlog_intent	sxi_hdr;
	struct sx_dlog_swapext	sxi_ext;
};

/* Attribute forks (seed bit 0): not supported, never logged, rejected. */
#define SX_SWAPEXT_ATTR_FORK		(1ULL << 0)
/* When the last block is swapped, set both sizes to sw_isize1/sw_isize2. */
#define SX_SWAPEXT_SET_SIZES		(1ULL << 1)
/* When the last block is swapped, clear ino1's / ino2's reflink flag. */
#define SX_SWAPEXT_CLEAR_INO1_REFLINK	(1ULL << 3)
#define SX_SWAPEXT_CLEAR_INO2_REFLINK	(1ULL << 4)
#define SX_SWAPEXT_FLAGS_ALL		(SX_SWAPEXT_SET_SIZES | \
					 SX_SWAPEXT_CLEAR_INO1_REFLINK | \
					 SX_SWAPEXT_CLEAR_INO2_REFLINK)

#endif /* SWAPEXT_SWAP_LOG_H */
