/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Superblock: geometry, features, the log anchor.  Two copies are written
 * alternately (blocks 0 and 1); the valid copy with the highest sequence
 * number is the superblock.
 */
#ifndef SX_SB_H
#define SX_SB_H

#include "util.h"

/* The decoded, host-endian superblock. */
struct sx_sb {
	u32	sb_version;
	u32	sb_blocksize;
	u32	sb_blocklog;
	u32	sb_sectsize;
	u64	sb_dblocks;
	u64	sb_seq;
	u8	sb_uuid[SX_UUID_SIZE];
	u32	sb_feat_compat;
	u32	sb_feat_ro_compat;
	u32	sb_feat_incompat;
	u32	sb_feat_log_incompat;
	u64	sb_logstart;
	u32	sb_logblocks;
	u64	sb_log_tail;
	u32	sb_log_epoch;
	u32	sb_log_tail_prev_crc;
	u64	sb_bmapstart;
	u32	sb_bmapblocks;
	u64	sb_datastart;
	u64	sb_fsinfo;		/* the fsinfo block */
	u64	sb_clean_free;		/* free data blocks + 1 at a clean unmount; 0: unknown */
	u64	sb_ctime;
	char	sb_label[SX_LABEL_SIZE + 1];
};

/* Geometry choices for mkfs; zero fields take defaults. */
struct sx_geometry_opts {
	u32	go_blocksize;		/* bytes; default SX_DEFAULT_BLOCKSIZE */
	u32	go_logblocks;		/* default: derived from the device size */
	u64	go_dblocks;		/* default: the whole device */
	u32	go_feat_log_incompat;	/* e.g. SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP */
	const u8 *go_uuid;		/* default: derived from the clock */
	const char *go_label;
};

/**
 * sx_sb_decode() - verify one superblock copy and decode it
 * @buf: at least SX_SB_SIZE bytes
 * @sb: decoded result (valid only on success)
 *
 * Return: 0, -EFSBADCRC on a checksum mismatch, -EFSCORRUPTED on any field
 * out of bounds (magic, version, block size, geometry overlap, log bounds,
 * tail LSN, fsinfo block, reserved bytes).
 */
int sx_sb_decode(const struct sx_mount *mp, const void *buf, struct sx_sb *sb);

/**
 * sx_sb_from_disk() - copy the fields of an on-disk superblock into @sb
 * without checking any (the checker reports on copies that fail decode)
 */
void sx_sb_from_disk(const void *buf, struct sx_sb *sb);

/** sx_sb_encode() - fill SX_SB_SIZE bytes at @buf with @sb and its CRC */
void sx_sb_encode(const struct sx_sb *sb, void *buf);

/**
 * sx_sb_read() - read both copies and return the newest valid one
 * @which: if not NULL, set to the copy used (0 or 1)
 *
 * Return: 0, or the error of the primary copy if neither copy is valid.
 */
int sx_sb_read(const struct sx_mount *mp, struct sx_bdev *bd, struct sx_sb *sb,
	       int *which);

/**
 * sx_sb_write() - bump @sb's sequence and write it over the older copy (FUA)
 */
int sx_sb_write(struct sx_bdev *bd, struct sx_sb *sb);

/**
 * sx_sb_check_features() - refuse feature bits this engine does not know
 *
 * Return: 0, or -EOPNOTSUPP naming the unknown bits in the log.
 */
int sx_sb_check_features(const struct sx_mount *mp, const struct sx_sb *sb,
			 bool rdonly);

/**
 * sx_sb_geometry() - compute a new filesystem's layout for a device
 * @devsize: device size in bytes
 * @sectsize: device sector size
 *
 * Return: 0, or -EINVAL for a bad block size or a device too small.
 */
int sx_sb_geometry(const struct sx_geometry_opts *go, u64 devsize, u32 sectsize,
		   struct sx_sb *sb);

#endif /* SX_SB_H */
