/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swapext on-disk and log formats.
 *
 * Everything here is little-endian and fixed-width, with explicit padding so
 * that the layout is identical in every build (kernel, userspace, any ABI).
 * Sizes are pinned by static assertions in engine/diag/format_check.c.
 *
 * Device layout, in filesystem blocks:
 *   0              primary superblock (the first SX_SB_SIZE bytes are checked)
 *   1              secondary superblock; the copies are written alternately,
 *                  so a torn superblock write always leaves one good copy
 *   logstart..     the circular log, logblocks long
 *   bmapstart..    the free-space bitmap, bmapblocks long
 *   datastart..    space managed by the allocator; mkfs allocates the
 *                  fsinfo block (sb_fsinfo, the first data block) and the
 *                  root directory inode (the block after it) there
 */
#ifndef SWAPEXT_FORMAT_H
#define SWAPEXT_FORMAT_H

#include <swapext/swapext.h>
#include <swapext/swap_log.h>

#define SX_SB_MAGIC		0x42535853u	/* "SXSB" */
#define SX_LOG_MAGIC		0x474c5853u	/* "SXLG" */
#define SX_BITMAP_MAGIC		0x4d425853u	/* "SXBM" */
#define SX_FSINFO_MAGIC		0x49465853u	/* "SXFI" */
#define SX_INODE_MAGIC		0x4e495853u	/* "SXIN" */
#define SX_BMBT_MAGIC		0x58425853u	/* "SXBX": extent map B+tree block */
#define SX_DIRBT_MAGIC		0x52445853u	/* "SXDR": directory B+tree block */
#define SX_REFCBT_MAGIC		0x43525853u	/* "SXRC": refcount B+tree block */

#define SX_VERSION		2	/* 2: log records name their force (lr_force_lsn), data manifests */
#define SX_SB_SIZE		512	/* bytes of each superblock copy covered by its CRC */
#define SX_MIN_BLOCKSIZE	512
#define SX_MAX_BLOCKSIZE	65536
#define SX_DEFAULT_BLOCKSIZE	4096
#define SX_MIN_LOGBLOCKS	64
#define SX_MAX_LOGBLOCKS	(1u << 24)
#define SX_UUID_SIZE		16
#define SX_LABEL_SIZE		32

/*
 * Feature words.  A mount refuses any incompat bit it does not know; a
 * read-write mount refuses unknown ro_compat bits; log_incompat bits say the
 * log may hold items that an older engine could not replay (they are set
 * while such items may be in the log, like XFS's log incompat features).
 */
#define SX_FEAT_COMPAT_SUPPORTED	0u
#define SX_FEAT_RO_COMPAT_SUPPORTED	0u
#define SX_FEAT_INCOMPAT_SUPPORTED	0u
/* SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP is in <swapext/swapext.h> (sx_mkfs() takes it) */
#define SX_FEAT_LOG_INCOMPAT_SUPPORTED	(SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP)

/*
 * Log sequence numbers: the cycle (how many times the log has been written
 * from its start, beginning at 1) in the high 32 bits, the block within the
 * log in the low 32 bits.  LSNs compare as integers.
 */
#define SX_LSN(cycle, block)	(((u64)(cycle) << 32) | (u32)(block))
#define SX_LSN_CYCLE(lsn)	((u32)((lsn) >> 32))
#define SX_LSN_BLOCK(lsn)	((u32)(lsn))

/*
 * The largest superblock sequence number.  No filesystem gets near it (2^62
 * writes at a million a second take 146,000 years), so a copy beyond it is
 * damage; and since sx_sb_write() never goes past it, the sequence never
 * wraps to 0, which decode refuses.
 */
#define SX_SB_SEQ_MAX		(1ull << 62)

/* Superblock: SX_SB_SIZE bytes at the start of blocks 0 and 1. */
struct sx_dsb {
	__le32	sb_magic;
	__le32	sb_crc;			/* over SX_SB_SIZE bytes, this field zero */
	__le32	sb_version;
	__le32	sb_blocksize;
	__le64	sb_dblocks;		/* device size in blocks */
	__le64	sb_seq;			/* bumped at each write; newest good copy wins */
	u8	sb_uuid[SX_UUID_SIZE];
	__le32	sb_feat_compat;
	__le32	sb_feat_ro_compat;
	__le32	sb_feat_incompat;
	__le32	sb_feat_log_incompat;
	__le64	sb_logstart;		/* first block of the log */
	__le32	sb_logblocks;
	__le32	sb_sectsize;		/* device sector size at mkfs */
	__le64	sb_log_tail;		/* LSN recovery starts from */
	__le32	sb_log_epoch;		/* bumped at each mount that writes the log */
	__le32	sb_log_tail_prev_crc;	/* lr_crc of the record before the tail */
	__le64	sb_bmapstart;		/* first block of the free-space bitmap */
	__le32	sb_bmapblocks;
	__le32	sb_pad0;
	__le64	sb_datastart;		/* first block the allocator manages */
	__le64	sb_ctime;		/* mkfs time, ns since the epoch */
	char	sb_label[SX_LABEL_SIZE];
	__le64	sb_fsinfo;		/* block of the fsinfo block (in the data area) */
	/*
	 * 1 + the free data blocks the bitmap shows, written only when the
	 * log is empty (mkfs, the last checkpoint of a clean unmount) and
	 * cleared before a mount writes its first record: 0 means not known.
	 * A mount that finds the log empty compares it with the bitmap, so
	 * that a bitmap block that lost a write is not taken at its word.
	 */
	__le64	sb_clean_free;
	__le64	sb_reserved[38];	/* zero; room for later fields */
};

/*
 * Header of every metadata block other than the superblock.  The CRC covers
 * the whole block.  bh_lsn is the LSN of the last log record whose changes
 * the block holds: recovery replays a change only if it is newer.
 */
struct sx_dblk_hdr {
	__le32	bh_magic;
	__le32	bh_crc;			/* over the whole block, this field zero */
	__le64	bh_blkno;		/* where the block lives */
	__le64	bh_owner;		/* owning object; 0 = the filesystem */
	__le64	bh_lsn;
	u8	bh_uuid[SX_UUID_SIZE];
};

/*
 * Free-space bitmap block: one bit per block of the device (1 = in use),
 * block number = bm_index * SX_BITMAP_BITS(bs) + bit.  bm_nfree counts the
 * zero bits that stand for blocks below sb_dblocks.
 */
struct sx_dbitmap {
	struct sx_dblk_hdr bm_hdr;
	__le32	bm_index;
	__le32	bm_nfree;
	__le64	bm_pad;
	/* u8 bm_bits[] follows, to the end of the block */
};
#define SX_BITMAP_HDR_SIZE	sizeof(struct sx_dbitmap)
#define SX_BITMAP_BITS(bs)	(((u64)(bs) - SX_BITMAP_HDR_SIZE) * 8)

/*
 * Log record.  A record is a run of whole log blocks holding a header and
 * then ops; it never wraps past the end of the log.  A record is valid only
 * if its magic, version, uuid, LSN (which must equal its position and the
 * expected cycle), length and CRC are right, and if lr_prev_crc equals the
 * CRC of the record before it: that chain stops a stale record from an
 * earlier pass, left beyond a torn one, from ever being taken as a
 * continuation.  When the next record does not fit before the end of the log,
 * the writer puts a one-block record with SX_LR_WRAP and continues at block 0
 * with the next cycle.
 *
 * A log force writes one or more records and then flushes the device once.
 * Every record names its force: lr_force_lsn is the LSN of the first record
 * the force wrote (wrap records included), so the records of one force are
 * a run whose first has lr_force_lsn == lr_lsn.  File data written in place
 * into blocks whose mapping the force makes durable is not flushed before
 * the records: instead the force's first record (after a wrap, if any) is an
 * SX_LR_MANIFEST record, whose first op lists each such block with the CRC
 * of what was written there; the force's first transactions follow in the
 * same record when they fit beside it, so a small force is one record.  Recovery reads the blocks of the last force's manifest;
 * if any does not match, that force's flush never finished (it was never
 * acknowledged), and the log ends before its first record.  A force with
 * nothing else to say may write an SX_LR_FENCE record, so that an older
 * force's manifest is no longer the last one.
 */
struct sx_dlog_rec {
	__le32	lr_magic;
	__le32	lr_crc;			/* over lr_blocks blocks, this field zero */
	__le64	lr_lsn;
	__le64	lr_tail_lsn;		/* the log tail when this was written */
	__le32	lr_cycle;
	__le32	lr_epoch;		/* sb_log_epoch of the writing mount */
	__le32	lr_blocks;		/* length in log blocks, header included */
	__le32	lr_len;			/* bytes of ops after this header */
	__le32	lr_nops;
	__le32	lr_flags;
	__le32	lr_prev_crc;
	__le32	lr_version;
	__le64	lr_first_tid;		/* transaction id of the first op */
	u8	lr_uuid[SX_UUID_SIZE];
	__le64	lr_force_lsn;		/* LSN of the first record of its force */
};

#define SX_LR_WRAP	(1u << 0)	/* no ops; the log continues at block 0 */
#define SX_LR_MANIFEST	(1u << 1)	/* first op SX_LOG_OP_MANIFEST, the only one */
#define SX_LR_FENCE	(1u << 2)	/* no ops; the force before it is not the last */
#define SX_LR_FLAGS_ALL	(SX_LR_WRAP | SX_LR_MANIFEST | SX_LR_FENCE)

/*
 * One op in a record: a header, then lo_len bytes of payload, then zero
 * padding to a multiple of 8.  Every op belongs to one transaction (lo_tid);
 * a record holds whole transactions only, so a valid record means every one
 * of its transactions committed.
 */
struct sx_dlog_op {
	__le16	lo_type;		/* SX_LOG_OP_* */
	__le16	lo_flags;
	__le32	lo_len;
	__le64	lo_tid;
};
#define SX_LOG_OP_ALIGN		8

enum sx_log_op_type {
	SX_LOG_OP_BUF		= 0x01,	/* physical change to a metadata block */
	SX_LOG_OP_TRANS_END	= 0x02,	/* closes a transaction (no payload) */
	SX_LOG_OP_MANIFEST	= 0x03,	/* data blocks of a force (SX_LR_MANIFEST only) */
	SX_LOG_OP_BUI		= 0x10,	/* map/unmap an extent in a fork */
	SX_LOG_OP_BUD		= 0x11,
	SX_LOG_OP_EFI		= 0x12,	/* free extents */
	SX_LOG_OP_EFD		= 0x13,
	SX_LOG_OP_CUI		= 0x14,	/* refcount changes */
	SX_LOG_OP_CUD		= 0x15,
	SX_LOG_OP_SXI		= 0x16,	/* swap extents */
	SX_LOG_OP_SXD		= 0x17,
	SX_LOG_OP_TEST_DEFER	= 0x7c,	/* test-only deferred type (unit tests) */
	SX_LOG_OP_TEST_DEFER_DONE = 0x7d,
	SX_LOG_OP_TEST_INTENT	= 0x7e,	/* test-only intent (unit tests) */
	SX_LOG_OP_TEST_DONE	= 0x7f,
	SX_LOG_OP_MAX		= 0x80,
};

/*
 * SX_LOG_OP_BUF payload: the block, then lb_nregions region descriptors,
 * then the regions' bytes back to back.  A block logged for the first time
 * since it was (re)initialised is logged whole, so replay never depends on
 * what was there before.  SX_LB_CANCEL says the block stopped being
 * metadata: no change logged for it before this op may be replayed.
 */
struct sx_dlog_buf {
	__le64	lb_blkno;
	__le32	lb_flags;
	__le16	lb_nregions;
	__le16	lb_pad;
};
/*
 * SX_LOG_OP_MANIFEST payload: one entry per data block written in place
 * since the last force whose mapping the force makes durable (lo_tid 0, at
 * least one entry, lo_len a multiple of the entry).  It is the first op of
 * an SX_LR_MANIFEST record; lr_first_tid and the order of tids are those of
 * the ops after it (lr_first_tid 0 if there are none).  me_crc is sx_cksum()
 * of the block's whole contents.
 */
struct sx_dlog_mfent {
	__le64	me_bno;
	__le32	me_crc;
	__le32	me_pad;			/* zero */
};

struct sx_dlog_region {
	__le32	lg_off;
	__le32	lg_len;
};
#define SX_LB_CANCEL	(1u << 0)
/*
 * SX_LB_DATA: the block is file data, logged whole (one region, the whole
 * block) instead of written in place before the record: replay writes the
 * image as it is, with no block header or verifier, whatever the block
 * held before.  Never with SX_LB_CANCEL.
 */
#define SX_LB_DATA	(1u << 1)
#define SX_LB_FLAGS_ALL	(SX_LB_CANCEL | SX_LB_DATA)

/*
 * Filesystem information block (sb_fsinfo): the logged, changing facts that
 * the superblock, which is never logged, cannot hold.
 */
struct sx_dfsinfo {
	struct sx_dblk_hdr fi_hdr;
	__le64	fi_rootino;		/* the root directory */
	__le64	fi_unlinked;		/* first inode of the unlinked list; 0 = none */
	__le64	fi_next_gen;		/* generation of the next inode allocated */
	__le64	fi_icount;		/* inodes in use */
	__le64	fi_refc_root;		/* refcount B+tree root block; 0 = empty */
	__le32	fi_refc_level;		/* its height - 1 */
	__le32	fi_pad;
	__le64	fi_reserved[8];		/* zero */
};

/*
 * Inodes.  Each inode is one metadata block; its number is its block
 * number.  The fork area after the core holds either the fork's records
 * inline (SX_DIF_INLINE: di_nrecs of them) or nothing but the root pointer
 * of a B+tree holding them (SX_DIF_BTREE).  A regular file's records are
 * extent mappings, a directory's are directory entries.
 */
#define SX_NAME_MAX		255

/* SX_IFMT, SX_IFREG and SX_IFDIR (di_mode) are in <swapext/swapext.h>. */

enum {
	SX_DIF_INLINE	= 1,
	SX_DIF_BTREE	= 2,
};

/* di_flags: SX_DIFLAG_* in <swapext/swapext.h> (sx_fstat() reports them) */

struct sx_dinode {
	struct sx_dblk_hdr di_hdr;	/* bh_owner = the inode number */
	__le16	di_mode;
	__le16	di_format;		/* SX_DIF_* */
	__le32	di_nlink;
	__le32	di_uid;
	__le32	di_gid;
	__le64	di_size;
	__le64	di_nblocks;		/* data and B+tree blocks charged to it */
	__le64	di_gen;			/* changes each time the block is reused */
	__le32	di_flags;		/* SX_DIFLAG_* */
	__le32	di_pad;
	__le64	di_atime;		/* ns since the epoch, signed */
	__le64	di_mtime;
	__le64	di_ctime;
	__le64	di_next_unlinked;	/* next on the unlinked list; 0 = end */
	__le64	di_nrecs;		/* records in the fork */
	__le64	di_broot;		/* SX_DIF_BTREE: root block */
	__le32	di_blevel;		/* SX_DIF_BTREE: height - 1 */
	__le32	di_pad2;
	__le64	di_reserved[4];		/* zero */
	/* fork area to the end of the block */
};
#define SX_DINODE_CORE		sizeof(struct sx_dinode)
#define SX_FORK_BYTES(bs)	((bs) - SX_DINODE_CORE)

/* An extent mapping: file blocks [startoff, +blockcount) at startblock. */
struct sx_dbmap_rec {
	__le64	br_startoff;
	__le64	br_startblock;
	__le32	br_blockcount;
	__le32	br_flags;		/* SX_BMAP_UNWRITTEN */
};
#define SX_BMAP_UNWRITTEN	(1u << 0)
#define SX_BMAP_MAXLEN		(1u << 21)	/* blocks in one mapping */

/* A directory entry, keyed by the hash of its name. */
struct sx_ddir_rec {
	__le64	de_hash;
	__le64	de_ino;
	__le16	de_namelen;
	u8	de_pad[6];
	char	de_name[256];		/* not NUL-terminated; zero after de_namelen */
};

/* A refcount record: blocks [startblock, +blockcount) are mapped refcount times. */
struct sx_drefc_rec {
	__le64	rc_startblock;
	__le32	rc_blockcount;
	__le32	rc_refcount;		/* >= 2; a block mapped once has no record */
};

/*
 * B+tree block.  Leaves (level 0) hold records sorted by key; nodes hold
 * bt_numrecs keys, then (at a fixed offset set by the maximum) as many
 * child pointers.  Equal keys are allowed; the key of a node entry is the
 * smallest key below it.
 */
struct sx_dbtree_block {
	struct sx_dblk_hdr bt_hdr;	/* bh_owner: the inode, or 0 */
	__le16	bt_level;
	__le16	bt_numrecs;
	__le32	bt_pad;
	__le64	bt_leftsib;		/* 0: none (block 0 is never a B+tree block) */
	__le64	bt_rightsib;
};
#define SX_BTREE_MAXLEVELS	9

/* BUI/BUD: map or unmap an extent in an inode's data fork. */
struct sx_dlog_bmap {
	__le64	bm_ino;
	__le64	bm_gen;
	__le64	bm_startoff;
	__le64	bm_startblock;
	__le32	bm_blockcount;
	__le32	bm_flags;		/* SX_BMI_* */
};
#define SX_BMI_MAP		(1u << 0)	/* else unmap */
#define SX_BMI_UNWRITTEN	(1u << 1)
/*
 * A swap's half of a block exchange (the SXI chain's map/unmap): the blocks
 * change owner, not references.  An unmap neither frees nor decreases the
 * refcount of what it removes, and startblock must say where it is; neither
 * a map nor an unmap moves the inode's block count (the swap moves it).
 */
#define SX_BMI_SWAP		(1u << 2)
#define SX_BMI_FLAGS_ALL	0x7u

/* EFI/EFD: free extents. */
struct sx_dlog_efi {
	__le64	ef_startblock;
	__le32	ef_blockcount;
	__le32	ef_pad;
};

/* CUI/CUD: refcount changes. */
struct sx_dlog_cui {
	__le64	cu_startblock;
	__le32	cu_blockcount;
	__le32	cu_op;			/* SX_CUI_* */
};
enum {
	SX_CUI_INCREASE	= 1,
	SX_CUI_DECREASE	= 2,
};

/* SXI/SXD: the swap core's items, <swapext/swap_log.h>. */

#endif /* SWAPEXT_FORMAT_H */
