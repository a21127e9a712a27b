// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The offline checker: verify everything on an unmounted device without
 * replaying or writing anything.
 *
 * It reads both superblock copies and compares them, checks the feature
 * words, scans the log from the tail (a valid record there means the log
 * needs recovery) and checks every op of the records it finds, then reads
 * each bitmap block on its own: header, CRC, index, the bits that must be
 * set (the superblock copies, the log, the bitmap, everything past the end
 * of the filesystem), the free count against the zero bits, and the block's
 * LSN against the log head.  Then the fsinfo block, the root directory's
 * inode and the unlinked list: each block verified and in use in the bitmap,
 * the root a directory, every entry of the list an inode with no links, the
 * list without a cycle.  Last, check_files.c walks every file and the
 * refcount tree and judges every data block's use.
 *
 * Every problem goes to the report callback as one line starting with
 * "problem: " and is counted; lines starting with "note: " are facts.
 */
#include "util.h"
#include "sb.h"
#include "buf.h"
#include "log.h"
#include "item.h"
#include "alloc.h"
#include "mount.h"
#include "fsinfo.h"
#include "inode.h"
#include "check.h"
#include "check_priv.h"
#include "dev.h"
#include "log_recover.h"

/* Longest line handed to the report callback. */
#define SX_CHECK_LINE	512

/* Hand one formatted line with @prefix to the report callback. */
static void ck_vemit(struct sx_checker *ck, const char *prefix, const char *fmt,
		     va_list ap)
{
	char line[SX_CHECK_LINE];

	vsnprintf(line, sizeof(line), fmt, ap);
	if (ck->ck_report)
		ck->ck_report(ck->ck_arg, "%s%s", prefix, line);
}

/* Report and count one problem. */
void sx_check_problem(struct sx_checker *ck, const char *fmt, ...)
{
	va_list ap;

	ck->ck_problems++;
	va_start(ap, fmt);
	ck_vemit(ck, "problem: ", fmt, ap);
	va_end(ap);
}

/* Report a fact that is not a problem. */
void sx_check_note(struct sx_checker *ck, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ck_vemit(ck, "note: ", fmt, ap);
	va_end(ap);
}

/* A short word for an error code in a report. */
const char *sx_offline_errname(int error)
{
	switch (error) {
	case -EFSBADCRC:	return "bad CRC";
	case -EFSCORRUPTED:	return "corrupted";
	case -EIO:		return "I/O error";
	case -ENOMEM:		return "out of memory";
	case -EINVAL:		return "invalid request";
	default:		return "error";
	}
}

/* A read-only mount for offline tools: no cache, no log, no allocator. */
struct sx_mount *sx_offline_mount_alloc(struct sx_bdev *bd, const char *name)
{
	struct sx_mount *mp = sx_zalloc(sizeof(*mp), 0);

	if (!mp)
		return NULL;
	mp->m_bdev = bd;
	mp->m_flags = SX_MF_RDONLY;
	sx_mutex_init(&mp->m_sb_lock);
	sx_list_init(&mp->m_rintents);
	sx_list_init(&mp->m_dcaptured);
	snprintf(mp->m_name, sizeof(mp->m_name), "%s", name ? name : "offline");
	return mp;
}

/* Install the superblock whose geometry the offline mount reads by. */
void sx_offline_mount_set_sb(struct sx_mount *mp, const struct sx_sb *sb)
{
	mp->m_sb = *sb;
	mp->m_bsize = sb->sb_blocksize;
	mp->m_blog = sb->sb_blocklog;
}

/* Free an offline mount. */
void sx_offline_mount_free(struct sx_mount *mp)
{
	if (!mp)
		return;
	sx_mutex_destroy(&mp->m_sb_lock);
	sx_free(mp);
}

/* Bytes of one superblock copy read: SX_SB_SIZE rounded up to a sector. */
int sx_offline_sb_io_len(const struct sx_bdev *bd, size_t *lenp)
{
	u32 ss = bd->bd_sectsize;

	if (!sx_is_pow2(ss) || ss > SX_MAX_BLOCKSIZE)
		return -EINVAL;
	*lenp = sx_roundup((size_t)SX_SB_SIZE, (size_t)ss);
	return 0;
}

/*
 * Superblock copies.
 */

/* Every field of a superblock copy, judged by nothing, and its magic. */
static void ck_sb_raw(const void *buf, struct sx_sb *sb, u32 *magic)
{
	*magic = le32_to_cpu(((const struct sx_dsb *)buf)->sb_magic);
	sx_sb_from_disk(buf, sb);
}

/* True if @len bytes at @p are all zero. */
static bool ck_all_zero(const void *p, size_t len)
{
	const u8 *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/*
 * Report every geometry field in which copy @k (@a) differs from copy @j
 * (@b).  Returns how many differ.
 */
static u32 ck_sb_compare(struct sx_checker *ck, int k, const struct sx_sb *a, int j,
			 const struct sx_sb *b)
{
	u32 n = 0;

#define CK_SB_CMP(field)						\
	do {								\
		if (a->field != b->field) {				\
			sx_check_problem(ck, "superblock copy %d: %s is %llu, but copy %d says %llu", \
				   k, #field, (sx_ull)a->field, j, (sx_ull)b->field); \
			n++;						\
		}							\
	} while (0)

	CK_SB_CMP(sb_version);
	CK_SB_CMP(sb_blocksize);
	CK_SB_CMP(sb_sectsize);
	CK_SB_CMP(sb_dblocks);
	CK_SB_CMP(sb_logstart);
	CK_SB_CMP(sb_logblocks);
	CK_SB_CMP(sb_bmapstart);
	CK_SB_CMP(sb_bmapblocks);
	CK_SB_CMP(sb_datastart);
	CK_SB_CMP(sb_feat_compat);
	CK_SB_CMP(sb_feat_ro_compat);
	CK_SB_CMP(sb_feat_incompat);
	CK_SB_CMP(sb_feat_log_incompat);
#undef CK_SB_CMP
	if (memcmp(a->sb_uuid, b->sb_uuid, SX_UUID_SIZE) != 0) {
		sx_check_problem(ck, "superblock copy %d: uuid differs from copy %d's (another filesystem?)",
			   k, j);
		n++;
	}
	return n;
}

/*
 * Say what is wrong with a copy that failed to decode with @error; @good, if
 * not NULL, is a valid superblock (copy @goodk) to compare the fields with.
 */
static void ck_sb_explain(struct sx_checker *ck, int k, u64 off, const void *buf,
			  int error, const struct sx_sb *good, int goodk)
{
	const struct sx_dsb *dsb = buf;
	struct sx_sb raw;
	u32 magic, crc;

	if (error != -EFSCORRUPTED && error != -EFSBADCRC) {
		sx_check_problem(ck, "superblock copy %d (byte %llu): unreadable: %s (%d)",
			   k, (sx_ull)off, sx_offline_errname(error), error);
		return;
	}
	if (ck_all_zero(buf, SX_SB_SIZE)) {
		sx_check_problem(ck, "superblock copy %d (byte %llu): all zeroes, never written or wiped",
			   k, (sx_ull)off);
		return;
	}
	if (error == -EFSBADCRC) {
		crc = sx_cksum_skip(buf, SX_SB_SIZE, offsetof(struct sx_dsb, sb_crc));
		sx_check_problem(ck, "superblock copy %d (byte %llu): bad CRC: stored 0x%08x, computed 0x%08x (torn or damaged write)",
			   k, (sx_ull)off, le32_to_cpu(dsb->sb_crc), crc);
		return;
	}
	ck_sb_raw(buf, &raw, &magic);
	if (magic != SX_SB_MAGIC) {
		sx_check_problem(ck, "superblock copy %d (byte %llu): magic is 0x%08x, expected 0x%08x",
			   k, (sx_ull)off, magic, SX_SB_MAGIC);
		return;
	}
	sx_check_problem(ck, "superblock copy %d (byte %llu): CRC is right but fields fail verification (seq %llu)",
		   k, (sx_ull)off, (sx_ull)raw.sb_seq);
	if (raw.sb_version != SX_VERSION)
		sx_check_problem(ck, "superblock copy %d: sb_version is %u, expected %u",
			   k, raw.sb_version, SX_VERSION);
	if (raw.sb_seq == 0)
		sx_check_problem(ck, "superblock copy %d: sb_seq is 0, which is never written", k);
	if (raw.sb_seq > SX_SB_SEQ_MAX)
		sx_check_problem(ck, "superblock copy %d: sb_seq %llu is beyond %llu, which no filesystem reaches",
				 k, (sx_ull)raw.sb_seq, (sx_ull)SX_SB_SEQ_MAX);
	if (raw.sb_logblocks && SX_LSN_BLOCK(raw.sb_log_tail) >= raw.sb_logblocks)
		sx_check_problem(ck, "superblock copy %d: log tail block %u is past the log's %u blocks",
			   k, SX_LSN_BLOCK(raw.sb_log_tail), raw.sb_logblocks);
	if (SX_LSN_CYCLE(raw.sb_log_tail) == 0)
		sx_check_problem(ck, "superblock copy %d: log tail cycle is 0", k);
	if (good && ck_sb_compare(ck, k, &raw, goodk, good) == 0)
		sx_check_note(ck, "superblock copy %d: its geometry matches copy %d; the bad field is elsewhere (label, padding, reserved bytes or bounds)",
			k, goodk);
}

/* Read SX_SB_SIZE bytes (rounded to a sector) at @off and decode them. */
static int ck_sb_read_copy(struct sx_checker *ck, u64 off, void *buf, size_t len,
			   struct sx_sb *sb)
{
	struct sx_bdev *bd = ck->ck_bd;
	int error;

	if (off % bd->bd_sectsize)
		return -EINVAL;
	if (len > bd->bd_size || off > bd->bd_size - len)
		return -ERANGE;
	error = bd->bd_ops->read(bd, off, buf, len);
	if (error)
		return error;
	return sx_sb_decode(ck->ck_mp, buf, sb);
}

/*
 * Whether copy @k, which decoded, describes a filesystem the device can hold;
 * if not, say so.  A mount refuses such a copy, so it can be why there is
 * no usable superblock at all (a device shorter than its filesystem).
 */
static bool ck_sb_fits(struct sx_checker *ck, int k, const struct sx_sb *copy)
{
	struct sx_bdev *bd = ck->ck_bd;

	if (copy->sb_dblocks <= (bd->bd_size >> copy->sb_blocklog))
		return true;
	sx_check_problem(ck, "superblock copy %d: %llu blocks of %u bytes do not fit the device's %llu bytes",
			 k, (sx_ull)copy->sb_dblocks, copy->sb_blocksize, (sx_ull)bd->bd_size);
	return false;
}

/*
 * Check both superblock copies and return the one a mount would use in @sb.
 * Return: 0, 1 if there is no usable superblock (reported), or an error.
 */
static int ck_superblocks(struct sx_checker *ck, struct sx_sb *sb)
{
	struct sx_bdev *bd = ck->ck_bd;
	struct sx_sb copy[2], raw;
	int err[2], which, k, error;
	u64 off[2];
	size_t len;
	u32 magic;
	u8 *buf;

	error = sx_offline_sb_io_len(bd, &len);
	if (error) {
		sx_check_problem(ck, "device sector size %u is not supported", bd->bd_sectsize);
		return error;
	}
	buf = sx_alloc(len, 0);
	if (!buf)
		return -ENOMEM;

	error = sx_sb_read(ck->ck_mp, bd, sb, &which);
	if (error && error != -EFSCORRUPTED && error != -EFSBADCRC) {
		sx_check_problem(ck, "superblock: cannot read: %s (%d)", sx_offline_errname(error), error);
		goto out_free;
	}
	if (error) {
		/* explain the primary, and the secondary where the primary puts it */
		err[0] = ck_sb_read_copy(ck, 0, buf, len, &copy[0]);
		if (err[0] == -ERANGE) {
			sx_check_problem(ck, "superblock copy 0: the device (%llu bytes) is too small to hold it",
				   (sx_ull)bd->bd_size);
			memset(buf, 0, len);
		} else if (!err[0]) {
			ck_sb_fits(ck, 0, &copy[0]);
		} else {
			ck_sb_explain(ck, 0, 0, buf, err[0], NULL, 0);
		}
		ck_sb_raw(buf, &raw, &magic);
		off[1] = SX_DEFAULT_BLOCKSIZE;
		if (sx_is_pow2(raw.sb_blocksize) && raw.sb_blocksize >= SX_MIN_BLOCKSIZE &&
		    raw.sb_blocksize <= SX_MAX_BLOCKSIZE)
			off[1] = raw.sb_blocksize;
		err[1] = ck_sb_read_copy(ck, off[1], buf, len, &copy[1]);
		if (err[1] == -ERANGE || err[1] == -EINVAL)
			sx_check_problem(ck, "superblock copy 1: byte %llu is %s",
				   (sx_ull)off[1], err[1] == -EINVAL ? "not on a sector boundary" :
				   "past the end of the device");
		else if (!err[1] && ck_sb_fits(ck, 1, &copy[1]) && copy[1].sb_blocksize != off[1])
			sx_check_problem(ck, "superblock copy 1 (byte %llu): its block size %u puts it at byte %u, not here",
					 (sx_ull)off[1], copy[1].sb_blocksize, copy[1].sb_blocksize);
		else if (err[1])
			ck_sb_explain(ck, 1, off[1], buf, err[1], NULL, 0);
		sx_check_problem(ck, "no valid superblock copy at any block-size offset: nothing else can be checked");
		error = 1;
		goto out_free;
	}

	if (bd->bd_sectsize > sb->sb_blocksize) {
		sx_check_problem(ck, "device sector size %u is larger than the block size %u: blocks cannot be read",
			   bd->bd_sectsize, sb->sb_blocksize);
		error = 1;
		goto out_free;
	}

	/* a mount uses @sb; now judge each copy on its own */
	off[0] = 0;
	off[1] = sb->sb_blocksize;
	for (k = 0; k < 2; k++) {
		err[k] = ck_sb_read_copy(ck, off[k], buf, len, &copy[k]);
		if (err[k] == -ERANGE) {
			sx_check_problem(ck, "superblock copy %d: byte %llu is past the end of the device",
				   k, (sx_ull)off[k]);
		} else if (err[k] == -EFSCORRUPTED || err[k] == -EFSBADCRC) {
			ck_sb_explain(ck, k, off[k], buf, err[k], sb, which);
		} else if (err[k]) {
			sx_check_problem(ck, "superblock copy %d (byte %llu): cannot read: %s (%d)",
				   k, (sx_ull)off[k], sx_offline_errname(err[k]), err[k]);
		} else if (!ck_sb_fits(ck, k, &copy[k])) {
			err[k] = -EFSCORRUPTED;
		} else if (copy[k].sb_seq % 2 != (u64)k) {
			/* sx_sb_write() puts sequence s in copy s % 2 */
			sx_check_problem(ck, "superblock copy %d: sequence %llu belongs in copy %d; the next superblock write would overwrite the newest copy",
				   k, (sx_ull)copy[k].sb_seq, (int)(copy[k].sb_seq % 2));
		}
	}
	if (!err[0] && !err[1]) {
		ck_sb_compare(ck, 0, &copy[0], 1, &copy[1]);
		if (copy[0].sb_seq + 1 != copy[1].sb_seq && copy[1].sb_seq + 1 != copy[0].sb_seq)
			sx_check_note(ck, "superblock copies have sequences %llu and %llu, not consecutive",
				(sx_ull)copy[0].sb_seq, (sx_ull)copy[1].sb_seq);
	}
	sx_check_note(ck, "superblock: copy %d in use (seq %llu), %llu blocks of %u bytes, log %u blocks at %llu, bitmap %u blocks at %llu, data from %llu",
		which, (sx_ull)sb->sb_seq, (sx_ull)sb->sb_dblocks, sb->sb_blocksize,
		sb->sb_logblocks, (sx_ull)sb->sb_logstart, sb->sb_bmapblocks,
		(sx_ull)sb->sb_bmapstart, (sx_ull)sb->sb_datastart);
	if (bd->bd_sectsize != sb->sb_sectsize)
		sx_check_note(ck, "device sector size %u differs from the %u recorded at mkfs",
			bd->bd_sectsize, sb->sb_sectsize);
	error = 0;
out_free:
	sx_free(buf);
	return error;
}

/* Check the feature words the way a read-write mount would. */
static void ck_features(struct sx_checker *ck, const struct sx_sb *sb)
{
	u32 compat = sb->sb_feat_compat & ~SX_FEAT_COMPAT_SUPPORTED;
	u32 ro = sb->sb_feat_ro_compat & ~SX_FEAT_RO_COMPAT_SUPPORTED;
	u32 incompat = sb->sb_feat_incompat & ~SX_FEAT_INCOMPAT_SUPPORTED;
	u32 logi = sb->sb_feat_log_incompat & ~SX_FEAT_LOG_INCOMPAT_SUPPORTED;

	/* it refuses whenever one of ro, incompat or logi is not 0 */
	if (sx_sb_check_features(ck->ck_mp, sb, false) != 0)
		sx_check_problem(ck, "features: a read-write mount refuses unknown bits: incompat 0x%x, ro_compat 0x%x, log_incompat 0x%x (known: 0x%x, 0x%x, 0x%x)",
			   incompat, ro, logi, SX_FEAT_INCOMPAT_SUPPORTED,
			   SX_FEAT_RO_COMPAT_SUPPORTED, SX_FEAT_LOG_INCOMPAT_SUPPORTED);
	if (compat)
		sx_check_note(ck, "features: unknown compat bits 0x%x are ignored", compat);
	sx_check_note(ck, "features: compat 0x%x, ro_compat 0x%x, incompat 0x%x, log_incompat 0x%x%s",
		sb->sb_feat_compat, sb->sb_feat_ro_compat, sb->sb_feat_incompat,
		sb->sb_feat_log_incompat,
		(sb->sb_feat_log_incompat & SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP) ?
		" (atomic_swap)" : "");
}

/*
 * The log.
 */

/* Report the first bad op of a record (later ones are not judged). */
static void __attribute__((format(printf, 2, 3)))
ck_op_problem(struct sx_checker *ck, const char *fmt, ...)
{
	char line[SX_CHECK_LINE];
	va_list ap;

	if (ck->ck_op_bad)
		return;
	ck->ck_op_bad = true;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	sx_check_problem(ck, "log record %u/%u, op %u: %s; recovery would refuse it",
		   SX_LSN_CYCLE(ck->ck_rec_lsn), SX_LSN_BLOCK(ck->ck_rec_lsn), ck->ck_opno,
		   line);
}

/* Check one BUF op as recovery will replay it. */
static void ck_buf_op(struct sx_checker *ck, u32 len, const void *payload)
{
	const struct sx_sb *sb = &ck->ck_mp->m_sb;
	const struct sx_dlog_buf *lb = payload;
	const struct sx_dlog_region *rg;
	u64 blkno, need;
	u32 nreg, flags, i;

	if (len < sizeof(*lb)) {
		ck_op_problem(ck, "BUF payload of %u bytes is shorter than its header", len);
		return;
	}
	blkno = le64_to_cpu(lb->lb_blkno);
	nreg = le16_to_cpu(lb->lb_nregions);
	flags = le32_to_cpu(lb->lb_flags);
	if (blkno < sb->sb_bmapstart || blkno >= sb->sb_dblocks) {
		ck_op_problem(ck, "BUF block %llu is outside the metadata area [%llu, %llu)",
			      (sx_ull)blkno, (sx_ull)sb->sb_bmapstart, (sx_ull)sb->sb_dblocks);
		return;
	}
	if (flags & ~SX_LB_FLAGS_ALL) {
		ck_op_problem(ck, "BUF block %llu has unknown flags 0x%x", (sx_ull)blkno,
			      flags & ~SX_LB_FLAGS_ALL);
		return;
	}
	if ((u64)nreg * sizeof(*rg) > len - sizeof(*lb)) {
		ck_op_problem(ck, "BUF block %llu: %u regions do not fit %u bytes",
			      (sx_ull)blkno, nreg, len);
		return;
	}
	rg = (const struct sx_dlog_region *)(lb + 1);
	need = sizeof(*lb) + (u64)nreg * sizeof(*rg);
	for (i = 0; i < nreg; i++) {
		u32 off = le32_to_cpu(rg[i].lg_off), rlen = le32_to_cpu(rg[i].lg_len);

		if (rlen == 0 || (u64)off + rlen > ck->ck_mp->m_bsize) {
			ck_op_problem(ck, "BUF block %llu: region %u (offset %u, %u bytes) is outside the block",
				      (sx_ull)blkno, i, off, rlen);
			return;
		}
		need += rlen;
	}
	if (need != len) {
		ck_op_problem(ck, "BUF block %llu: regions need %llu bytes, the op has %u",
			      (sx_ull)blkno, (sx_ull)need, len);
		return;
	}
	if ((flags & SX_LB_DATA) &&
	    ((flags & SX_LB_CANCEL) || nreg != 1 || le32_to_cpu(rg[0].lg_off) != 0 ||
	     le32_to_cpu(rg[0].lg_len) != ck->ck_mp->m_bsize))
		ck_op_problem(ck, "BUF block %llu: a data image must be one whole block, not a cancel",
			      (sx_ull)blkno);
}

/* Check one op of a valid record (a callback of sx_log_rec_walk_ops()). */
static int ck_log_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	struct sx_checker *ck = arg;
	u16 type = le16_to_cpu(op->lo_type);
	u32 len = le32_to_cpu(op->lo_len);

	ck->ck_opno++;
	switch (type) {
	case SX_LOG_OP_BUF:
		ck_buf_op(ck, len, payload);
		break;
	case SX_LOG_OP_TRANS_END:
		if (len)
			ck_op_problem(ck, "TRANS_END carries %u bytes", len);
		break;
	case SX_LOG_OP_MANIFEST:
		/* the scan checked its place, its entries and the data they name */
		break;
	default:
		if (!sx_item_is_intent(type) && !sx_item_is_done(type))
			ck_op_problem(ck, "item type 0x%x (%s) is not known to this engine",
				      type, sx_item_name(type));
		else if (len < sizeof(struct sx_dlog_intent))
			ck_op_problem(ck, "%s payload of %u bytes is shorter than its header",
				      sx_item_name(type), len);
		break;
	}
	return 0;
}

/* Check one valid record found past the tail (a callback of sx_log_scan()). */
static int ck_log_record(void *arg, const struct sx_log_scan_rec *r)
{
	struct sx_checker *ck = arg;
	const struct sx_sb *sb = &ck->ck_mp->m_sb;
	const char *why;

	ck->ck_records++;
	ck->ck_rec_lsn = r->sr_lsn;
	ck->ck_opno = 0;
	ck->ck_op_bad = false;
	if (r->sr_epoch > sb->sb_log_epoch)
		sx_check_problem(ck, "log record %u/%u: epoch %u is newer than the superblock's %u (the epoch is written before the first record of a mount)",
			   SX_LSN_CYCLE(r->sr_lsn), SX_LSN_BLOCK(r->sr_lsn), r->sr_epoch,
			   sb->sb_log_epoch);
	/* the scan has bounds-checked the ops; this judges their contents */
	sx_log_rec_walk_ops(r->sr_buf, r->sr_blocks * ck->ck_mp->m_bsize, ck_log_op, ck,
			    &why);
	if (ck->ck_op_bad)
		ck->ck_rec_problems++;
	return 0;
}

/* Scan the log from the tail and say whether it needs recovery. */
static int ck_log(struct sx_checker *ck, const struct sx_sb *sb)
{
	struct sx_log_scan scan;
	u64 tail = sb->sb_log_tail;
	int error;

	sx_check_note(ck, "log: tail %u/%u (prev CRC 0x%08x), epoch %u",
		SX_LSN_CYCLE(tail), SX_LSN_BLOCK(tail), sb->sb_log_tail_prev_crc,
		sb->sb_log_epoch);
	error = sx_log_scan(ck->ck_mp, ck_log_record, ck, &scan);
	if (error == -EFSCORRUPTED) {
		sx_check_problem(ck, "log record %u/%u has a good CRC but malformed ops (%s): recovery will refuse to mount",
			   SX_LSN_CYCLE(scan.sc_head), SX_LSN_BLOCK(scan.sc_head),
			   scan.sc_why ? scan.sc_why : "?");
		ck->ck_head = 0;
		if (ck->ck_records)
			sx_check_problem(ck, "log needs recovery: %u valid records before the malformed one",
				   ck->ck_records);
		return 0;
	}
	if (error) {
		sx_check_problem(ck, "log: scan failed: %s (%d)", sx_offline_errname(error), error);
		return error;
	}
	/* a scan stopped by a read error returns it: reported just above */
	ASSERT(scan.sc_stop != SX_LOG_STOP_IO);
	ck->ck_head = scan.sc_head;
	if (scan.sc_records)
		sx_check_problem(ck, "log needs recovery: %u valid records from the tail %u/%u to the head %u/%u (the next read-write mount replays them)",
			   scan.sc_records, SX_LSN_CYCLE(tail), SX_LSN_BLOCK(tail),
			   SX_LSN_CYCLE(scan.sc_head), SX_LSN_BLOCK(scan.sc_head));
	else
		sx_check_note(ck, "log: clean (no valid record at the tail)");
	if (scan.sc_stop == SX_LOG_STOP_NONE)
		sx_check_note(ck, "log: the valid log fills the whole log; no end was found");
	else
		sx_check_note(ck, "log: the valid log ends at %u/%u: %s%s%s%s",
			SX_LSN_CYCLE(scan.sc_head), SX_LSN_BLOCK(scan.sc_head),
			sx_log_stop_name(scan.sc_stop), scan.sc_why ? " (" : "",
			scan.sc_why ? scan.sc_why : "", scan.sc_why ? ")" : "");
	if (scan.sc_stop == SX_LOG_STOP_DATA)
		sx_check_problem(ck, "log: the last force (%u records from %u/%u) lists block %llu, which does not hold its data: recovery drops the force",
			   scan.sc_dropped, SX_LSN_CYCLE(scan.sc_head), SX_LSN_BLOCK(scan.sc_head),
			   (unsigned long long)scan.sc_bad_bno);
	else if (scan.sc_manifest)
		sx_check_note(ck, "log: the %u blocks of the last force's manifest hold its data",
			scan.sc_manifest);
	if (ck->ck_rec_problems)
		sx_check_note(ck, "log: %u records hold ops recovery would refuse", ck->ck_rec_problems);
	return 0;
}

/*
 * The free-space bitmap.
 */

/*
 * A block is written back only after the log record of its last change,
 * so its LSN is a place in the log behind the head.  Recovery skips every
 * change older than a block's LSN: one past the head would have it skip
 * changes the block lacks.
 */
void sx_check_lsn(struct sx_checker *ck, const void *data, const char *what)
{
	const struct sx_sb *sb = &ck->ck_mp->m_sb;
	u64 lsn = le64_to_cpu(((const struct sx_dblk_hdr *)data)->bh_lsn);

	if (!lsn)
		return;
	if (SX_LSN_CYCLE(lsn) == 0 || SX_LSN_BLOCK(lsn) >= sb->sb_logblocks)
		sx_check_problem(ck, "%s: LSN %u/%u is not a log position", what,
				 SX_LSN_CYCLE(lsn), SX_LSN_BLOCK(lsn));
	else if (ck->ck_head && lsn >= ck->ck_head)
		sx_check_problem(ck, "%s: LSN %u/%u is not behind the log head %u/%u (recovery would skip changes the block lacks)",
				 what, SX_LSN_CYCLE(lsn), SX_LSN_BLOCK(lsn),
				 SX_LSN_CYCLE(ck->ck_head), SX_LSN_BLOCK(ck->ck_head));
}

/* Population count without a libgcc call. */
static inline u32 ck_popcount(u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (u32)((x * 0x0101010101010101ull) >> 56);
}

/* Word @wi of a bitmap: bit i of the word is bit 64 * wi + i. */
static inline u64 ck_word(const u8 *bits, u64 wi)
{
	__le64 v;

	memcpy(&v, bits + wi * 8, sizeof(v));
	return le64_to_cpu(v);
}

/* Bits [lo, hi) of a word, 0 <= lo < hi <= 64. */
static inline u64 ck_mask(u32 lo, u32 hi)
{
	u64 m = hi == 64 ? ~0ull : (1ull << hi) - 1;

	return m & ~((1ull << lo) - 1);
}

/*
 * Count the clear bits among [start, end) of a block's bits; *@first gets
 * the first clear one (or @end).
 */
static u64 ck_count_clear(const u8 *bits, u64 start, u64 end, u64 *first)
{
	u64 n = 0;

	*first = end;
	while (start < end) {
		u32 lo = start % 64;
		u32 hi = end - (start - lo) >= 64 ? 64 : (u32)(end - (start - lo));
		u64 w = ~ck_word(bits, start / 64) & ck_mask(lo, hi);

		if (w && *first == end)
			*first = start - lo + (u64)__builtin_ctzll(w);
		n += ck_popcount(w);
		start = start - lo + hi;
	}
	return n;
}

/* A reserved area that must be marked in use. */
struct ck_area {
	const char	*a_name;
	u64		a_start;
	u64		a_end;
};

/* Check that the bits of every reserved area within bitmap block @idx are set. */
static void ck_bitmap_reserved(struct sx_checker *ck, u32 idx, const u8 *bits,
			       u64 base, u64 nbits)
{
	const struct sx_sb *sb = &ck->ck_mp->m_sb;
	const struct ck_area areas[] = {
		{ "superblock copies", 0, 2 },
		{ "space before the log", 2, sb->sb_logstart },
		{ "log", sb->sb_logstart, sb->sb_logstart + sb->sb_logblocks },
		{ "space between the log and the bitmap",
		  sb->sb_logstart + sb->sb_logblocks, sb->sb_bmapstart },
		{ "bitmap", sb->sb_bmapstart, sb->sb_bmapstart + sb->sb_bmapblocks },
		{ "space between the bitmap and the data",
		  sb->sb_bmapstart + sb->sb_bmapblocks, sb->sb_datastart },
		{ "blocks past the end of the filesystem", sb->sb_dblocks, base + nbits },
	};
	u64 lo, hi, n, first;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(areas); i++) {
		lo = sx_max(areas[i].a_start, base);
		hi = sx_min(areas[i].a_end, base + nbits);
		if (lo >= hi)
			continue;
		n = ck_count_clear(bits, lo - base, hi - base, &first);
		if (n)
			sx_check_problem(ck, "bitmap block %u (block %llu): %llu bits of the %s [%llu, %llu) are clear, all must be set (first: block %llu)",
				   idx, (sx_ull)(sb->sb_bmapstart + idx), (sx_ull)n,
				   areas[i].a_name, (sx_ull)areas[i].a_start,
				   (sx_ull)areas[i].a_end, (sx_ull)(base + first));
	}
}

/*
 * Check one bitmap block read into @buf.  Adds its free data blocks to
 * *@nfree and returns true if the block could be judged.
 */
static bool ck_bitmap_block(struct sx_checker *ck, u32 idx, const u8 *buf, u64 *nfree)
{
	struct sx_mount *mp = ck->ck_mp;
	const struct sx_sb *sb = &mp->m_sb;
	const struct sx_dbitmap *bm = (const struct sx_dbitmap *)buf;
	const u8 *bits = buf + SX_BITMAP_HDR_SIZE;
	u64 blkno = sb->sb_bmapstart + idx, nbits = SX_BITMAP_BITS(mp->m_bsize);
	u64 base = (u64)idx * nbits, below, zeros, lo, hi, first;
	u64 problems = ck->ck_problems;
	char what[64];
	u32 crc, stored;
	int error;

	stored = le32_to_cpu(bm->bm_hdr.bh_crc);
	crc = sx_cksum_skip(buf, mp->m_bsize, offsetof(struct sx_dblk_hdr, bh_crc));
	if (le32_to_cpu(bm->bm_hdr.bh_magic) != SX_BITMAP_MAGIC) {
		sx_check_problem(ck, "bitmap block %u (block %llu): magic is 0x%08x, expected 0x%08x%s",
			   idx, (sx_ull)blkno, le32_to_cpu(bm->bm_hdr.bh_magic), SX_BITMAP_MAGIC,
			   ck_all_zero(buf, mp->m_bsize) ? " (the block is all zeroes)" : "");
		return false;
	}
	if (stored != crc) {
		sx_check_problem(ck, "bitmap block %u (block %llu): bad CRC: stored 0x%08x, computed 0x%08x (torn or damaged; contents not checked)",
			   idx, (sx_ull)blkno, stored, crc);
		return false;
	}
	if (le64_to_cpu(bm->bm_hdr.bh_blkno) != blkno)
		sx_check_problem(ck, "bitmap block %u (block %llu): header says it is block %llu",
			   idx, (sx_ull)blkno, (sx_ull)le64_to_cpu(bm->bm_hdr.bh_blkno));
	if (memcmp(bm->bm_hdr.bh_uuid, sb->sb_uuid, SX_UUID_SIZE) != 0)
		sx_check_problem(ck, "bitmap block %u (block %llu): uuid is not the filesystem's",
			   idx, (sx_ull)blkno);
	if (le64_to_cpu(bm->bm_hdr.bh_owner) != 0)
		sx_check_problem(ck, "bitmap block %u (block %llu): owner is %llu, expected 0",
			   idx, (sx_ull)blkno, (sx_ull)le64_to_cpu(bm->bm_hdr.bh_owner));
	if (le32_to_cpu(bm->bm_index) != idx)
		sx_check_problem(ck, "bitmap block %u (block %llu): bm_index is %u, expected %u",
			   idx, (sx_ull)blkno, le32_to_cpu(bm->bm_index), idx);
	if (bm->bm_pad != 0)
		sx_check_problem(ck, "bitmap block %u (block %llu): bm_pad is 0x%llx, expected 0",
			   idx, (sx_ull)blkno, (sx_ull)le64_to_cpu(bm->bm_pad));
	snprintf(what, sizeof(what), "bitmap block %u (block %llu)", idx, (sx_ull)blkno);
	sx_check_lsn(ck, buf, what);

	ck_bitmap_reserved(ck, idx, bits, base, nbits);

	/* bm_nfree counts the zero bits standing for blocks below sb_dblocks */
	below = sb->sb_dblocks > base ? sx_min(sb->sb_dblocks - base, nbits) : 0;
	zeros = ck_count_clear(bits, 0, below, &first);
	if (le32_to_cpu(bm->bm_nfree) != zeros)
		sx_check_problem(ck, "bitmap block %u (block %llu): bm_nfree is %u, but %llu bits are clear",
			   idx, (sx_ull)blkno, le32_to_cpu(bm->bm_nfree), (sx_ull)zeros);

	/* free data blocks: clear bits in [datastart, dblocks) */
	lo = sb->sb_datastart > base ? sx_min(sb->sb_datastart - base, nbits) : 0;
	hi = sx_max(below, lo);
	*nfree += ck_count_clear(bits, lo, hi, &first);

	/* and whatever else the allocator's own verifier refuses */
	error = sx_buf_verify(mp, buf, blkno, &sx_bitmap_buf_ops, 0);
	if (error && ck->ck_problems == problems)
		sx_check_problem(ck, "bitmap block %u (block %llu): fails the bitmap verifier: %s (%d)",
			   idx, (sx_ull)blkno, sx_offline_errname(error), error);
	return true;
}

/* Check every bitmap block, one block in memory at a time. */
static int ck_bitmap(struct sx_checker *ck, const struct sx_sb *sb)
{
	struct sx_mount *mp = ck->ck_mp;
	u64 nfree = 0, data = sb->sb_dblocks - sb->sb_datastart;
	u32 idx, unjudged = 0;
	u8 *buf;
	int error;

	buf = sx_alloc(mp->m_bsize, 0);
	if (!buf)
		return -ENOMEM;
	for (idx = 0; idx < sb->sb_bmapblocks; idx++) {
		error = sx_dev_read(mp, sb->sb_bmapstart + idx, 1, buf);
		if (error) {
			sx_check_problem(ck, "bitmap block %u (block %llu): cannot read: %s (%d)",
				   idx, (sx_ull)(sb->sb_bmapstart + idx), sx_offline_errname(error),
				   error);
			unjudged++;
			continue;
		}
		if (!ck_bitmap_block(ck, idx, buf, &nfree))
			unjudged++;
	}
	sx_free(buf);
	/* what the last clean unmount counted, if the log is still empty */
	if (!unjudged && ck->ck_head && !ck->ck_records && sb->sb_clean_free &&
	    nfree != sb->sb_clean_free - 1)
		sx_check_problem(ck, "bitmap: %llu free data blocks, but the superblock says %llu were free when the log was last left empty (a bitmap block lost a write?)",
				 (sx_ull)nfree, (sx_ull)(sb->sb_clean_free - 1));
	if (unjudged)
		sx_check_note(ck, "bitmap: %llu free blocks of %llu data blocks in the %u bitmap blocks that could be checked (%u could not)",
			(sx_ull)nfree, (sx_ull)data, sb->sb_bmapblocks - unjudged, unjudged);
	else
		sx_check_note(ck, "bitmap: %llu free blocks of %llu data blocks (%llu in use)",
			(sx_ull)nfree, (sx_ull)data, (sx_ull)(data - nfree));
	return 0;
}

/*
 * The fsinfo block, the root inode and the unlinked list.
 */

/* Whether bitmap bit @bno is set; -errno if its bitmap block cannot be read. */
static int ck_block_used(struct sx_checker *ck, const struct sx_sb *sb, u8 *buf, u64 bno,
			 bool *used)
{
	u64 bits = SX_BITMAP_BITS(sb->sb_blocksize), i;
	u32 idx = (u32)(bno / bits);
	int error;

	error = sx_dev_read(ck->ck_mp, sb->sb_bmapstart + idx, 1, buf);
	if (error)
		return error;
	i = bno - (u64)idx * bits;
	*used = (buf[SX_BITMAP_HDR_SIZE + i / 8] >> (i % 8)) & 1;
	return 0;
}

/*
 * Read block @bno, what @what names, through the verifier @ops; report a
 * problem and return false if it fails or is free in the bitmap.
 */
static bool ck_meta_block(struct sx_checker *ck, const struct sx_sb *sb, u8 *buf, u64 bno,
			  const struct sx_buf_ops *ops, u64 owner, const char *what)
{
	bool used = true;
	int error;

	if (bno < sb->sb_datastart || bno >= sb->sb_dblocks) {
		sx_check_problem(ck, "%s: block %llu lies outside the data area", what, (sx_ull)bno);
		return false;
	}
	if (!ck_block_used(ck, sb, buf, bno, &used) && !used)
		sx_check_problem(ck, "%s (block %llu) is free in the bitmap", what, (sx_ull)bno);
	error = sx_dev_read(ck->ck_mp, bno, 1, buf);
	if (!error)
		error = sx_buf_verify(ck->ck_mp, buf, bno, ops, owner);
	if (error) {
		sx_check_problem(ck, "%s (block %llu): %s (%d)", what, (sx_ull)bno,
			   sx_offline_errname(error), error);
		return false;
	}
	/* the walk of every file judges these blocks' LSNs when it runs */
	if (ck->ck_flags & SX_CHECK_SPACE_ONLY) {
		char name[96];

		snprintf(name, sizeof(name), "%s block %llu (%s)", ops->bo_name, (sx_ull)bno,
			 what);
		sx_check_lsn(ck, buf, name);
	}
	return used;
}

/* Check the fsinfo block, the root directory and the unlinked list. */
static int ck_fsinfo(struct sx_checker *ck, const struct sx_sb *sb)
{
	const struct sx_dfsinfo *fi;
	const struct sx_dinode *di;
	u64 root, icount, cur, n = 0;
	char what[64];
	u8 *buf;

	buf = sx_alloc(ck->ck_mp->m_bsize, 0);
	if (!buf)
		return -ENOMEM;
	if (!ck_meta_block(ck, sb, buf, sb->sb_fsinfo, &sx_fsinfo_buf_ops, 0, "fsinfo block"))
		goto out_free;
	fi = (const void *)buf;
	root = le64_to_cpu(fi->fi_rootino);
	icount = le64_to_cpu(fi->fi_icount);
	cur = le64_to_cpu(fi->fi_unlinked);

	if (ck_meta_block(ck, sb, buf, root, &sx_inode_core_buf_ops, root, "root directory inode")) {
		di = (const void *)buf;
		if ((le16_to_cpu(di->di_mode) & SX_IFMT) != SX_IFDIR)
			sx_check_problem(ck, "root inode %llu is not a directory (mode 0%o)",
				   (sx_ull)root, le16_to_cpu(di->di_mode));
		if (le32_to_cpu(di->di_nlink) == 0)
			sx_check_problem(ck, "root inode %llu has no links", (sx_ull)root);
	}

	while (cur) {
		if (++n > icount) {
			sx_check_problem(ck, "unlinked list: more entries than the %llu inodes in use (a cycle?)",
				   (sx_ull)icount);
			break;
		}
		if (cur == root)
			sx_check_problem(ck, "unlinked list: holds the root inode %llu", (sx_ull)root);
		snprintf(what, sizeof(what), "unlinked list entry %llu", (sx_ull)n);
		if (!ck_meta_block(ck, sb, buf, cur, &sx_inode_core_buf_ops, cur, what))
			break;
		di = (const void *)buf;
		if (le32_to_cpu(di->di_nlink) != 0)
			sx_check_problem(ck, "unlinked list: inode %llu has %u links",
				   (sx_ull)cur, le32_to_cpu(di->di_nlink));
		cur = le64_to_cpu(di->di_next_unlinked);
	}
	sx_check_note(ck, "fsinfo: root inode %llu, %llu inodes in use, %llu on the unlinked list",
		(sx_ull)root, (sx_ull)icount, (sx_ull)n);
out_free:
	sx_free(buf);
	return 0;
}

/* Verify everything on an unmounted device. */
SX_API int sx_check(struct sx_bdev *bd, sx_report_fn report, void *arg, u64 *problems)
{
	return sx_check_flags(bd, 0, report, arg, problems);
}

/* Verify an unmounted device, maybe leaving out the walk of every file. */
SX_API int sx_check_flags(struct sx_bdev *bd, u32 flags, sx_report_fn report, void *arg,
			  u64 *problems)
{
	struct sx_checker ck;
	struct sx_sb sb;
	int error;

	if (problems)
		*problems = 0;
	if (!bd || !bd->bd_ops || !bd->bd_ops->read)
		return -EINVAL;
	/* the log's items are judged by the registry, which a mount fills */
	error = sx_init();
	if (error)
		return error;
	memset(&ck, 0, sizeof(ck));
	ck.ck_flags = flags;
	ck.ck_bd = bd;
	ck.ck_report = report;
	ck.ck_arg = arg;
	ck.ck_mp = sx_offline_mount_alloc(bd, "check");
	if (!ck.ck_mp)
		return -ENOMEM;

	error = ck_superblocks(&ck, &sb);
	if (error)
		goto out_done;
	sx_offline_mount_set_sb(ck.ck_mp, &sb);
	ck_features(&ck, &sb);
	error = ck_log(&ck, &sb);
	if (error)
		goto out_done;
	error = ck_bitmap(&ck, &sb);
	if (error)
		goto out_done;
	error = ck_fsinfo(&ck, &sb);
	if (error)
		goto out_done;
	if (!(flags & SX_CHECK_SPACE_ONLY)) {
		error = sx_check_files(&ck, &sb);
		if (error)
			goto out_done;
	}
	if (ck.ck_records && ck.ck_problems > 1)
		sx_check_note(&ck, "the log needs recovery, which may repair some of the other problems");
out_done:
	/* 1: nothing more could be looked at, which is itself reported */
	if (error == 1)
		error = 0;
	if (!error)
		sx_check_note(&ck, "check done: %llu problem%s", (sx_ull)ck.ck_problems,
			ck.ck_problems == 1 ? "" : "s");
	if (problems)
		*problems = ck.ck_problems;
	sx_offline_mount_free(ck.ck_mp);
	return error;
}
