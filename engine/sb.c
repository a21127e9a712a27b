/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Superblock: decoding with full verification, encoding, the two-copy read
 * and write protocol, feature checks and the geometry of a new filesystem.
 *
 * Copy k of the superblock lives at byte offset k * blocksize.  Writes bump
 * sb_seq and go to copy (sb_seq % 2), so consecutive writes alternate and a
 * torn write can only damage the copy that was already the older one.
 */
#include "util.h"
#include "sb.h"

/* Largest device sector size a superblock read or write will deal with. */
#define SX_SB_MAX_SECTSIZE	SX_MAX_BLOCKSIZE

/* Default log size bounds, in bytes. */
/*
 * The default log: 1/64 of the device, at least 4 MiB (but at most a
 * quarter of a small device), at most 64 MiB.  4 MiB allows transactions of
 * 512 KiB (a record is at most 1/8 of the log), which the worst-case clone,
 * copy-on-write and B+tree reservations of 4 KiB blocks need.
 */
#define SX_LOG_DEFAULT_MIN	(4u * 1024 * 1024)
#define SX_LOG_DEFAULT_MAX	(64u * 1024 * 1024)

/* Data blocks a new filesystem must at least have. */
#define SX_MIN_DATABLOCKS	16

/* Check that every byte of @len bytes at @p is zero. */
static bool sb_all_zero(const void *p, size_t len)
{
	const u8 *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* Count the bytes of a label field before its terminating NUL. */
static size_t sb_label_len(const char *label, size_t max)
{
	size_t n = 0;

	while (n < max && label[n])
		n++;
	return n;
}

/*
 * Check the layout fields of a decoded superblock.  Kept apart from the
 * byte-level checks so that geometry computed by mkfs goes through the very
 * same rules that a mount applies.
 */
static int sb_check_geometry(const struct sx_mount *mp, const struct sx_sb *sb)
{
	u64 bits;

	if (SX_IS_CORRUPT(mp, sb->sb_version != SX_VERSION))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, !sx_is_pow2(sb->sb_blocksize) ||
			  sb->sb_blocksize < SX_MIN_BLOCKSIZE ||
			  sb->sb_blocksize > SX_MAX_BLOCKSIZE))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, !sx_is_pow2(sb->sb_sectsize) || sb->sb_sectsize < 512 ||
			  sb->sb_sectsize > sb->sb_blocksize))
		return -EFSCORRUPTED;
	/* dblocks * blocksize must be a representable byte count */
	if (SX_IS_CORRUPT(mp, sb->sb_dblocks == 0 ||
			  sb->sb_dblocks > (~0ull >> sb->sb_blocklog)))
		return -EFSCORRUPTED;
	/* seq 0 is never written: sx_sb_write() bumps before writing */
	if (SX_IS_CORRUPT(mp, sb->sb_seq == 0))
		return -EFSCORRUPTED;
	/* nor is one past the maximum; such a copy would win every read */
	if (SX_IS_CORRUPT(mp, sb->sb_seq > SX_SB_SEQ_MAX))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, sb_all_zero(sb->sb_uuid, SX_UUID_SIZE)))
		return -EFSCORRUPTED;

	/* blocks 0 and 1 hold the superblock copies */
	if (SX_IS_CORRUPT(mp, sb->sb_logstart < 2 || sb->sb_logstart >= sb->sb_dblocks))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, sb->sb_logblocks < SX_MIN_LOGBLOCKS ||
			  sb->sb_logblocks > SX_MAX_LOGBLOCKS))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, sb->sb_logblocks > sb->sb_dblocks - sb->sb_logstart))
		return -EFSCORRUPTED;

	if (SX_IS_CORRUPT(mp, sb->sb_bmapstart < sb->sb_logstart + sb->sb_logblocks ||
			  sb->sb_bmapstart >= sb->sb_dblocks))
		return -EFSCORRUPTED;
	bits = SX_BITMAP_BITS(sb->sb_blocksize);
	if (SX_IS_CORRUPT(mp, sb->sb_bmapblocks != sx_howmany(sb->sb_dblocks, bits)))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, sb->sb_bmapblocks > sb->sb_dblocks - sb->sb_bmapstart))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, sb->sb_datastart != sb->sb_bmapstart + sb->sb_bmapblocks ||
			  sb->sb_datastart >= sb->sb_dblocks))
		return -EFSCORRUPTED;

	/* the fsinfo block is allocated from the data area */
	if (SX_IS_CORRUPT(mp, sb->sb_fsinfo < sb->sb_datastart ||
			  sb->sb_fsinfo >= sb->sb_dblocks))
		return -EFSCORRUPTED;

	if (SX_IS_CORRUPT(mp, SX_LSN_CYCLE(sb->sb_log_tail) < 1 ||
			  SX_LSN_BLOCK(sb->sb_log_tail) >= sb->sb_logblocks))
		return -EFSCORRUPTED;
	/* never more free blocks than data blocks */
	if (SX_IS_CORRUPT(mp, sb->sb_clean_free > sb->sb_dblocks - sb->sb_datastart + 1))
		return -EFSCORRUPTED;
	return 0;
}

/* Copy every field of an on-disk superblock into @sb, judging none of them. */
void sx_sb_from_disk(const void *buf, struct sx_sb *sb)
{
	const struct sx_dsb *dsb = buf;

	memset(sb, 0, sizeof(*sb));
	sb->sb_version = le32_to_cpu(dsb->sb_version);
	sb->sb_blocksize = le32_to_cpu(dsb->sb_blocksize);
	sb->sb_blocklog = sx_ilog2(sb->sb_blocksize);
	sb->sb_sectsize = le32_to_cpu(dsb->sb_sectsize);
	sb->sb_dblocks = le64_to_cpu(dsb->sb_dblocks);
	sb->sb_seq = le64_to_cpu(dsb->sb_seq);
	memcpy(sb->sb_uuid, dsb->sb_uuid, SX_UUID_SIZE);
	sb->sb_feat_compat = le32_to_cpu(dsb->sb_feat_compat);
	sb->sb_feat_ro_compat = le32_to_cpu(dsb->sb_feat_ro_compat);
	sb->sb_feat_incompat = le32_to_cpu(dsb->sb_feat_incompat);
	sb->sb_feat_log_incompat = le32_to_cpu(dsb->sb_feat_log_incompat);
	sb->sb_logstart = le64_to_cpu(dsb->sb_logstart);
	sb->sb_logblocks = le32_to_cpu(dsb->sb_logblocks);
	sb->sb_log_tail = le64_to_cpu(dsb->sb_log_tail);
	sb->sb_log_epoch = le32_to_cpu(dsb->sb_log_epoch);
	sb->sb_log_tail_prev_crc = le32_to_cpu(dsb->sb_log_tail_prev_crc);
	sb->sb_bmapstart = le64_to_cpu(dsb->sb_bmapstart);
	sb->sb_bmapblocks = le32_to_cpu(dsb->sb_bmapblocks);
	sb->sb_datastart = le64_to_cpu(dsb->sb_datastart);
	sb->sb_fsinfo = le64_to_cpu(dsb->sb_fsinfo);
	sb->sb_clean_free = le64_to_cpu(dsb->sb_clean_free);
	sb->sb_ctime = le64_to_cpu(dsb->sb_ctime);
	memcpy(sb->sb_label, dsb->sb_label, SX_LABEL_SIZE);
	sb->sb_label[SX_LABEL_SIZE] = '\0';
}

/* Verify one on-disk superblock copy and decode it into @sb. */
int sx_sb_decode(const struct sx_mount *mp, const void *buf, struct sx_sb *sb)
{
	const struct sx_dsb *dsb = buf;
	size_t lablen;
	u32 crc;

	/*
	 * The CRC goes first: any damage it catches is reported as a checksum
	 * failure, whatever field it hit, and the field checks below only
	 * ever see bytes that a writer really produced.
	 */
	crc = sx_cksum_skip(buf, SX_SB_SIZE, offsetof(struct sx_dsb, sb_crc));
	if (crc != le32_to_cpu(dsb->sb_crc))
		return -EFSBADCRC;

	if (SX_IS_CORRUPT(mp, le32_to_cpu(dsb->sb_magic) != SX_SB_MAGIC))
		return -EFSCORRUPTED;

	sx_sb_from_disk(buf, sb);

	/*
	 * A label shorter than the field is NUL-terminated and zero-filled, so
	 * that stray bytes after the NUL cannot hide there.
	 */
	lablen = sb_label_len(dsb->sb_label, SX_LABEL_SIZE);
	if (SX_IS_CORRUPT(mp, !sb_all_zero(dsb->sb_label + lablen,
					   SX_LABEL_SIZE - lablen)))
		return -EFSCORRUPTED;
	memcpy(sb->sb_label, dsb->sb_label, lablen);
	sb->sb_label[lablen] = '\0';

	if (SX_IS_CORRUPT(mp, dsb->sb_pad0 != 0))
		return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, !sb_all_zero(dsb->sb_reserved, sizeof(dsb->sb_reserved))))
		return -EFSCORRUPTED;
	/* the CRC covers SX_SB_SIZE bytes; what the struct does not use is zero */
	if (SX_IS_CORRUPT(mp, !sb_all_zero((const u8 *)buf + sizeof(*dsb),
					   SX_SB_SIZE - sizeof(*dsb))))
		return -EFSCORRUPTED;

	return sb_check_geometry(mp, sb);
}

/* Encode @sb into SX_SB_SIZE bytes at @buf and seal it with its CRC. */
void sx_sb_encode(const struct sx_sb *sb, void *buf)
{
	struct sx_dsb *dsb = buf;
	size_t lablen;

	memset(buf, 0, SX_SB_SIZE);
	dsb->sb_magic = cpu_to_le32(SX_SB_MAGIC);
	dsb->sb_version = cpu_to_le32(sb->sb_version);
	dsb->sb_blocksize = cpu_to_le32(sb->sb_blocksize);
	dsb->sb_dblocks = cpu_to_le64(sb->sb_dblocks);
	dsb->sb_seq = cpu_to_le64(sb->sb_seq);
	memcpy(dsb->sb_uuid, sb->sb_uuid, SX_UUID_SIZE);
	dsb->sb_feat_compat = cpu_to_le32(sb->sb_feat_compat);
	dsb->sb_feat_ro_compat = cpu_to_le32(sb->sb_feat_ro_compat);
	dsb->sb_feat_incompat = cpu_to_le32(sb->sb_feat_incompat);
	dsb->sb_feat_log_incompat = cpu_to_le32(sb->sb_feat_log_incompat);
	dsb->sb_logstart = cpu_to_le64(sb->sb_logstart);
	dsb->sb_logblocks = cpu_to_le32(sb->sb_logblocks);
	dsb->sb_sectsize = cpu_to_le32(sb->sb_sectsize);
	dsb->sb_log_tail = cpu_to_le64(sb->sb_log_tail);
	dsb->sb_log_epoch = cpu_to_le32(sb->sb_log_epoch);
	dsb->sb_log_tail_prev_crc = cpu_to_le32(sb->sb_log_tail_prev_crc);
	dsb->sb_bmapstart = cpu_to_le64(sb->sb_bmapstart);
	dsb->sb_bmapblocks = cpu_to_le32(sb->sb_bmapblocks);
	dsb->sb_datastart = cpu_to_le64(sb->sb_datastart);
	dsb->sb_fsinfo = cpu_to_le64(sb->sb_fsinfo);
	dsb->sb_clean_free = cpu_to_le64(sb->sb_clean_free);
	dsb->sb_ctime = cpu_to_le64(sb->sb_ctime);
	lablen = sb_label_len(sb->sb_label, SX_LABEL_SIZE);
	memcpy(dsb->sb_label, sb->sb_label, lablen);
	dsb->sb_crc = cpu_to_le32(sx_cksum_skip(buf, SX_SB_SIZE,
						offsetof(struct sx_dsb, sb_crc)));
}

/* Bytes a superblock read or write moves: SX_SB_SIZE rounded to a sector. */
static int sb_io_len(const struct sx_bdev *bd, size_t *lenp)
{
	u32 ss = bd->bd_sectsize;

	if (!sx_is_pow2(ss) || ss > SX_SB_MAX_SECTSIZE)
		return -EINVAL;
	*lenp = sx_roundup((size_t)SX_SB_SIZE, (size_t)ss);
	return 0;
}

/*
 * Read and decode the copy at byte offset @off.  A copy is only taken for
 * what it claims if it sits where its own block size puts it and if the
 * device holds the whole filesystem it describes.
 */
static int sb_read_copy(const struct sx_mount *mp, struct sx_bdev *bd, u64 off,
			void *buf, size_t len, struct sx_sb *sb)
{
	int error;

	if (off % bd->bd_sectsize)
		return -EFSCORRUPTED;
	if (len > bd->bd_size || off > bd->bd_size - len)
		return -EFSCORRUPTED;
	error = bd->bd_ops->read(bd, off, buf, len);
	if (error)
		return error;
	error = sx_sb_decode(mp, buf, sb);
	if (error)
		return error;
	if (SX_IS_CORRUPT(mp, off != 0 && off != sb->sb_blocksize))
		return -EFSCORRUPTED;
	if (sb->sb_dblocks > (bd->bd_size >> sb->sb_blocklog)) {
		sx_err(mp, "superblock at byte %llu describes %llu blocks of %u bytes, but the device holds only %llu bytes",
		       (unsigned long long)off, (unsigned long long)sb->sb_dblocks,
		       sb->sb_blocksize, (unsigned long long)bd->bd_size);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* True if two valid copies describe the same filesystem. */
static bool sb_same_fs(const struct sx_sb *a, const struct sx_sb *b)
{
	return a->sb_blocksize == b->sb_blocksize &&
	       a->sb_sectsize == b->sb_sectsize &&
	       a->sb_dblocks == b->sb_dblocks &&
	       a->sb_logstart == b->sb_logstart &&
	       a->sb_logblocks == b->sb_logblocks &&
	       a->sb_bmapstart == b->sb_bmapstart &&
	       a->sb_bmapblocks == b->sb_bmapblocks &&
	       a->sb_datastart == b->sb_datastart &&
	       a->sb_fsinfo == b->sb_fsinfo &&
	       memcmp(a->sb_uuid, b->sb_uuid, SX_UUID_SIZE) == 0;
}

/* Read both superblock copies and return the newest valid one. */
int sx_sb_read(const struct sx_mount *mp, struct sx_bdev *bd, struct sx_sb *sb,
	       int *which)
{
	struct sx_sb *cand;
	size_t len;
	void *buf;
	int err0, err1, error;
	u32 p;

	error = sb_io_len(bd, &len);
	if (error)
		return error;
	buf = sx_alloc(len, SX_NOFS);
	cand = sx_alloc(3 * sizeof(*cand), SX_NOFS);	/* [2] is scratch */
	if (!buf || !cand) {
		error = -ENOMEM;
		goto out_free;
	}

	err0 = sb_read_copy(mp, bd, 0, buf, len, &cand[0]);
	if (!err0) {
		err1 = sb_read_copy(mp, bd, cand[0].sb_blocksize, buf, len, &cand[1]);
	} else {
		/*
		 * Without the primary we do not know the block size, so look
		 * for the secondary wherever some block size would put it;
		 * among several candidates (a stale copy of an older
		 * filesystem, say) the newest wins, as it does below.
		 */
		err1 = -EFSCORRUPTED;
		for (p = SX_MIN_BLOCKSIZE; p <= SX_MAX_BLOCKSIZE; p <<= 1) {
			if (sb_read_copy(mp, bd, p, buf, len, &cand[2]))
				continue;
			if (err1 || cand[2].sb_seq > cand[1].sb_seq)
				cand[1] = cand[2];
			err1 = 0;
		}
	}

	if (err0 && err1) {
		error = err0;
		goto out_free;
	}
	if (!err0 && !err1 && !sb_same_fs(&cand[0], &cand[1]))
		sx_warn(mp, "superblock copies disagree on geometry or uuid (seq %llu and %llu); using the newer",
			(unsigned long long)cand[0].sb_seq,
			(unsigned long long)cand[1].sb_seq);

	if (!err0 && (err1 || cand[0].sb_seq >= cand[1].sb_seq)) {
		*sb = cand[0];
		if (which)
			*which = 0;
	} else {
		*sb = cand[1];
		if (which)
			*which = 1;
	}
	error = 0;
out_free:
	sx_free(cand);
	sx_free(buf);
	return error;
}

/*
 * Write @sb over the older copy.  On failure the sequence number is put back,
 * so a retry goes to the same (possibly torn) copy and never to the one that
 * is still good.
 */
int sx_sb_write(struct sx_bdev *bd, struct sx_sb *sb)
{
	size_t len;
	void *buf;
	u64 off;
	int error;

	error = sb_io_len(bd, &len);
	if (error)
		return error;
	if (bd->bd_sectsize > sb->sb_blocksize)
		return -EINVAL;
	/* a sequence past the maximum would fail decode: never write one */
	if (sb->sb_seq >= SX_SB_SEQ_MAX)
		return -EFSCORRUPTED;
	buf = sx_zalloc(len, SX_NOFS);
	if (!buf)
		return -ENOMEM;

	sb->sb_seq++;
	sx_sb_encode(sb, buf);
	off = (sb->sb_seq % 2) * (u64)sb->sb_blocksize;
	error = bd->bd_ops->write(bd, off, buf, len, SX_BDEV_FUA);
	if (error)
		sb->sb_seq--;
	sx_free(buf);
	return error;
}

/* Refuse feature bits this engine does not implement. */
int sx_sb_check_features(const struct sx_mount *mp, const struct sx_sb *sb,
			 bool rdonly)
{
	u32 unknown;

	unknown = sb->sb_feat_incompat & ~SX_FEAT_INCOMPAT_SUPPORTED;
	if (unknown) {
		sx_err(mp, "unknown incompatible feature bits 0x%x (this engine knows 0x%x); cannot mount",
		       unknown, SX_FEAT_INCOMPAT_SUPPORTED);
		return -EOPNOTSUPP;
	}
	/* the log may hold items we cannot replay, even for a read-only look */
	unknown = sb->sb_feat_log_incompat & ~SX_FEAT_LOG_INCOMPAT_SUPPORTED;
	if (unknown) {
		sx_err(mp, "unknown log-incompatible feature bits 0x%x (this engine knows 0x%x); cannot mount",
		       unknown, SX_FEAT_LOG_INCOMPAT_SUPPORTED);
		return -EOPNOTSUPP;
	}
	unknown = sb->sb_feat_ro_compat & ~SX_FEAT_RO_COMPAT_SUPPORTED;
	if (unknown) {
		if (!rdonly) {
			sx_err(mp, "unknown read-only-compatible feature bits 0x%x (this engine knows 0x%x); mount read-only",
			       unknown, SX_FEAT_RO_COMPAT_SUPPORTED);
			return -EOPNOTSUPP;
		}
		sx_warn(mp, "unknown read-only-compatible feature bits 0x%x; read-only mount allowed",
			unknown);
	}
	unknown = sb->sb_feat_compat & ~SX_FEAT_COMPAT_SUPPORTED;
	if (unknown)
		sx_info(mp, "ignoring unknown compatible feature bits 0x%x", unknown);
	return 0;
}

/* Finalise 64 bits the way splitmix64 does: every input bit moves every output bit. */
static u64 sb_mix64(u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/*
 * Make a filesystem uuid without a random source in the contract: the wall
 * clock, the monotonic clock, a per-boot counter (two mkfs in the same
 * nanosecond) and a stack address (ASLR in userspace) hashed together, then
 * marked as an RFC 4122 version 4 uuid, which also keeps it from being nil.
 */
static void sb_make_uuid(u8 *uuid)
{
	static struct sx_atomic64 counter;
	u64 c, h1, h2;
	int i;

	c = (u64)sx_atomic64_add_return(&counter, 1);
	h1 = sb_mix64(sx_wall_ns() ^ sb_mix64(c + 0x9e3779b97f4a7c15ull));
	h2 = sb_mix64(h1 ^ sx_now_ns() ^ sb_mix64((u64)(uintptr_t)&c));
	for (i = 0; i < 8; i++) {
		uuid[i] = (u8)(h1 >> (8 * i));
		uuid[8 + i] = (u8)(h2 >> (8 * i));
	}
	uuid[6] = (uuid[6] & 0x0f) | 0x40;
	uuid[8] = (uuid[8] & 0x3f) | 0x80;
}

/*
 * Lay out a new filesystem: superblock copies in blocks 0 and 1, the log from
 * block 2, the bitmap right after the log, data after the bitmap.
 *
 * The default log is 1/64 of the filesystem, clamped to [256 KiB, 64 MiB] and
 * to at least SX_MIN_LOGBLOCKS blocks; on a device too small for that it
 * shrinks (never below SX_MIN_LOGBLOCKS) to leave SX_MIN_DATABLOCKS data
 * blocks.  An explicit log size is taken as given or refused.
 *
 * sb_seq is set to 1: the first sx_sb_write() makes it 2 and writes copy 0,
 * the next one writes copy 1, and so on alternately.
 */
int sx_sb_geometry(const struct sx_geometry_opts *go, u64 devsize, u32 sectsize,
		   struct sx_sb *sb)
{
	u64 dblocks, logblocks, bmapblocks, bits, room;
	u32 bs;
	size_t lablen = 0;

	bs = go->go_blocksize ? go->go_blocksize : SX_DEFAULT_BLOCKSIZE;
	if (!sx_is_pow2(bs) || bs < SX_MIN_BLOCKSIZE || bs > SX_MAX_BLOCKSIZE)
		return -EINVAL;
	if (!sx_is_pow2(sectsize) || sectsize < 512 || sectsize > bs)
		return -EINVAL;
	if (go->go_feat_log_incompat & ~SX_FEAT_LOG_INCOMPAT_SUPPORTED)
		return -EINVAL;
	if (go->go_label) {
		lablen = strlen(go->go_label);
		if (lablen > SX_LABEL_SIZE)
			return -EINVAL;
	}
	if (go->go_uuid && sb_all_zero(go->go_uuid, SX_UUID_SIZE))
		return -EINVAL;

	dblocks = devsize / bs;
	if (go->go_dblocks) {
		if (go->go_dblocks > dblocks)
			return -EINVAL;
		dblocks = go->go_dblocks;
	}
	if (dblocks < 2 + SX_MIN_LOGBLOCKS + 1 + SX_MIN_DATABLOCKS)
		return -EINVAL;

	bits = SX_BITMAP_BITS(bs);
	bmapblocks = sx_howmany(dblocks, bits);
	if (bmapblocks > 0xffffffffull)
		return -EINVAL;
	room = dblocks - 2 - bmapblocks;
	if (room < SX_MIN_DATABLOCKS + SX_MIN_LOGBLOCKS)
		return -EINVAL;
	room -= SX_MIN_DATABLOCKS;		/* the most the log may take */

	if (go->go_logblocks) {
		logblocks = go->go_logblocks;
		if (logblocks < SX_MIN_LOGBLOCKS || logblocks > SX_MAX_LOGBLOCKS ||
		    logblocks > room)
			return -EINVAL;
	} else {
		u64 bytes = dblocks * bs / 64;

		bytes = sx_max(bytes, sx_min((u64)SX_LOG_DEFAULT_MIN, dblocks * bs / 4));
		bytes = sx_min(bytes, (u64)SX_LOG_DEFAULT_MAX);
		logblocks = sx_howmany(bytes, (u64)bs);
		logblocks = sx_max(logblocks, (u64)SX_MIN_LOGBLOCKS);
		logblocks = sx_min(logblocks, (u64)SX_MAX_LOGBLOCKS);
		logblocks = sx_min(logblocks, room);
	}

	memset(sb, 0, sizeof(*sb));
	sb->sb_version = SX_VERSION;
	sb->sb_blocksize = bs;
	sb->sb_blocklog = sx_ilog2(bs);
	sb->sb_sectsize = sectsize;
	sb->sb_dblocks = dblocks;
	sb->sb_seq = 1;
	if (go->go_uuid)
		memcpy(sb->sb_uuid, go->go_uuid, SX_UUID_SIZE);
	else
		sb_make_uuid(sb->sb_uuid);
	sb->sb_feat_log_incompat = go->go_feat_log_incompat;
	sb->sb_logstart = 2;
	sb->sb_logblocks = (u32)logblocks;
	sb->sb_log_tail = SX_LSN(1, 0);
	sb->sb_log_epoch = 0;
	sb->sb_log_tail_prev_crc = 0;
	sb->sb_bmapstart = sb->sb_logstart + logblocks;
	sb->sb_bmapblocks = (u32)bmapblocks;
	sb->sb_datastart = sb->sb_bmapstart + bmapblocks;
	sb->sb_fsinfo = sb->sb_datastart;	/* mkfs allocates it first */
	sb->sb_ctime = sx_wall_ns();
	if (lablen)
		memcpy(sb->sb_label, go->go_label, lablen);
	sb->sb_label[lablen] = '\0';

	/* whatever mkfs makes, a mount must accept */
	if (sb_check_geometry(NULL, sb))
		return -EINVAL;
	return 0;
}
