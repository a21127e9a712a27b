// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The log printer, like xfs_logprint: decode every record and op of the log
 * of an unmounted device.
 *
 * It prints the superblock's log anchor, then walks the valid log from the
 * tail with the same scan recovery uses, then goes on past the end of the
 * valid log for as long as record headers still parse, marking what it
 * finds there: records from an earlier pass (STALE), records whose previous
 * CRC does not chain (BROKEN CHAIN), records that fail their CRC (BAD CRC;
 * TORN as well when the bytes after the header stop making sense: the ops
 * break off or the padding is not zero, as when only the first sectors of a
 * write reached the disk).  It stops at the first block without a record
 * header, and never walks more than one pass over the log.
 *
 * Each call of the print callback is one line, without a newline.
 */
#include "util.h"
#include "sb.h"
#include "log.h"
#include "item.h"
#include "mount.h"
#include "check.h"
#include "dev.h"
#include "log_recover.h"

/* Regions of a BUF op printed per line. */
#define SX_LP_REGIONS_PER_LINE	8

typedef unsigned long long sx_ull;

struct sx_logprinter {
	struct sx_mount	*lp_mp;
	sx_report_fn	lp_print;
	void		*lp_arg;
	u64		lp_walked;	/* log blocks covered so far */
	u32		lp_records;
	u32		lp_opno;
	const u8	*lp_rec;	/* record whose ops are being printed */
	u32		lp_op_end;	/* byte offset after the last op that parsed */
};

#define lp_out(lp, ...)	((lp)->lp_print((lp)->lp_arg, __VA_ARGS__))

/* Print a record header line, with @mark (may be empty) after the LSN. */
static void lp_print_header(struct sx_logprinter *lp, u32 block, const struct sx_dlog_rec *rec,
			    const char *mark)
{
	u64 lsn = le64_to_cpu(rec->lr_lsn), tail = le64_to_cpu(rec->lr_tail_lsn);
	u32 flags = le32_to_cpu(rec->lr_flags);

	u64 force = le64_to_cpu(rec->lr_force_lsn);

	lp_out(lp, "record %u/%u%s%s: device block %llu, tail %u/%u, epoch %u, %u blocks, %u ops, %u bytes, flags 0x%x%s%s%s, first tid %llu, crc 0x%08x, prev crc 0x%08x, force %u/%u%s",
	       SX_LSN_CYCLE(lsn), SX_LSN_BLOCK(lsn), mark[0] ? " " : "", mark,
	       (sx_ull)(lp->lp_mp->m_sb.sb_logstart + block), SX_LSN_CYCLE(tail),
	       SX_LSN_BLOCK(tail), le32_to_cpu(rec->lr_epoch), le32_to_cpu(rec->lr_blocks),
	       le32_to_cpu(rec->lr_nops), le32_to_cpu(rec->lr_len), flags,
	       (flags & SX_LR_WRAP) ? " (WRAP)" : "",
	       (flags & SX_LR_MANIFEST) ? " (MANIFEST)" : "",
	       (flags & SX_LR_FENCE) ? " (FENCE)" : "",
	       (sx_ull)le64_to_cpu(rec->lr_first_tid), le32_to_cpu(rec->lr_crc),
	       le32_to_cpu(rec->lr_prev_crc), SX_LSN_CYCLE(force), SX_LSN_BLOCK(force),
	       force == lsn ? " (starts it)" : "");
}

/* Print the payload of a BUF op: block, flags and regions. */
static void lp_print_buf(struct sx_logprinter *lp, const char *prefix, u32 len,
			 const void *payload)
{
	const struct sx_dlog_buf *lb = payload;
	const struct sx_dlog_region *rg;
	char line[SX_LP_REGIONS_PER_LINE * 24 + 1];
	u32 nreg, flags, i, j, n;
	int used;

	if (len < sizeof(*lb)) {
		lp_out(lp, "%s: payload of %u bytes is too short for a BUF header", prefix, len);
		return;
	}
	nreg = le16_to_cpu(lb->lb_nregions);
	flags = le32_to_cpu(lb->lb_flags);
	lp_out(lp, "%s: block %llu, flags 0x%x%s%s, %u regions", prefix,
	       (sx_ull)le64_to_cpu(lb->lb_blkno), flags,
	       (flags & SX_LB_CANCEL) ? " (CANCEL)" : "",
	       (flags & SX_LB_DATA) ? " (DATA)" : "", nreg);
	if ((u64)nreg * sizeof(*rg) > len - sizeof(*lb)) {
		lp_out(lp, "      regions: %u descriptors do not fit the %u-byte payload", nreg, len);
		return;
	}
	rg = (const struct sx_dlog_region *)(lb + 1);
	for (i = 0; i < nreg; i += n) {
		n = sx_min(nreg - i, (u32)SX_LP_REGIONS_PER_LINE);
		used = 0;
		line[0] = '\0';
		for (j = 0; j < n; j++)
			used += snprintf(line + used, sizeof(line) - used, " %u/%u",
					 le32_to_cpu(rg[i + j].lg_off),
					 le32_to_cpu(rg[i + j].lg_len));
		lp_out(lp, "      regions (off/len):%s", line);
	}
}

/* Print a MANIFEST op: its entries, a few a line. */
static void lp_print_manifest(struct sx_logprinter *lp, const char *prefix, u32 len,
			      const void *payload)
{
	const struct sx_dlog_mfent *e = payload;
	char line[SX_LP_REGIONS_PER_LINE * 32 + 1];
	u32 n = len / sizeof(*e), i, j, k;
	int used;

	lp_out(lp, "%s: %u data blocks%s", prefix, n,
	       len % sizeof(*e) ? ", with a partial entry" : "");
	for (i = 0; i < n; i += k) {
		k = sx_min(n - i, (u32)SX_LP_REGIONS_PER_LINE);
		used = 0;
		line[0] = '\0';
		for (j = 0; j < k; j++)
			used += snprintf(line + used, sizeof(line) - used, " %llu/0x%08x",
					 (sx_ull)le64_to_cpu(e[i + j].me_bno),
					 le32_to_cpu(e[i + j].me_crc));
		lp_out(lp, "      blocks (block/crc):%s", line);
	}
}

/* Print an intent or done item: its common header, then the type's decoder. */
static void lp_print_item(struct sx_logprinter *lp, const char *prefix, u16 type,
			  u32 len, const void *payload)
{
	const struct sx_item_ops *ops = sx_item_lookup(type);
	const struct sx_dlog_intent *li = payload;
	const char *kind = sx_item_is_intent(type) ? "intent" :
			   sx_item_is_done(type) ? "done" : "unregistered item";

	if (len < sizeof(*li)) {
		lp_out(lp, "%s: %s, payload of %u bytes is too short for an item header",
		       prefix, kind, len);
		return;
	}
	lp_out(lp, "%s: %s, id 0x%llx, %u items, %u bytes", prefix, kind,
	       (sx_ull)le64_to_cpu(li->li_id), le32_to_cpu(li->li_nitems), len);
	if (ops && ops->io_print)
		ops->io_print(ops, payload, len, lp->lp_print, lp->lp_arg);
}

/* Print one op (a callback of sx_log_rec_walk_ops()). */
static int lp_print_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	struct sx_logprinter *lp = arg;
	u16 type = le16_to_cpu(op->lo_type), flags = le16_to_cpu(op->lo_flags);
	u32 len = le32_to_cpu(op->lo_len);
	char prefix[96];

	lp->lp_opno++;
	snprintf(prefix, sizeof(prefix), "    op %u: %s (0x%02x) tid %llu%s", lp->lp_opno,
		 sx_item_name(type), type, (sx_ull)le64_to_cpu(op->lo_tid),
		 flags ? ", op flags set" : "");
	switch (type) {
	case SX_LOG_OP_BUF:
		lp_print_buf(lp, prefix, len, payload);
		break;
	case SX_LOG_OP_TRANS_END:
		if (len)
			lp_out(lp, "%s: %u bytes of payload (should be none)", prefix, len);
		else
			lp_out(lp, "%s", prefix);
		break;
	case SX_LOG_OP_MANIFEST:
		lp_print_manifest(lp, prefix, len, payload);
		break;
	default:
		lp_print_item(lp, prefix, type, len, payload);
		break;
	}
	lp->lp_op_end = (u32)((const u8 *)payload - lp->lp_rec) +
			sx_roundup(len, SX_LOG_OP_ALIGN);
	return 0;
}

/*
 * Print the ops of a record of @recbytes.  Return: 0, or -EFSCORRUPTED if
 * they do not parse (said in the output).
 */
static int lp_print_ops(struct sx_logprinter *lp, const u8 *rec, u32 recbytes)
{
	const char *why;
	int error;

	lp->lp_opno = 0;
	lp->lp_rec = rec;
	lp->lp_op_end = sizeof(struct sx_dlog_rec);
	error = sx_log_rec_walk_ops(rec, recbytes, lp_print_op, lp, &why);
	if (error)
		lp_out(lp, "    ops malformed after byte %u of the record: %s", lp->lp_op_end,
		       why ? why : "?");
	return error;
}

/* Blocks of the log a record at @block covers, up to the next record. */
static u32 lp_advance(const struct sx_mount *mp, const struct sx_dlog_rec *rec, u32 block)
{
	if (le32_to_cpu(rec->lr_flags) & SX_LR_WRAP)
		return mp->m_sb.sb_logblocks - block;
	return le32_to_cpu(rec->lr_blocks);
}

/* Print one record of the valid log (a callback of sx_log_scan()). */
static int lp_valid_record(void *arg, const struct sx_log_scan_rec *r)
{
	struct sx_logprinter *lp = arg;
	const struct sx_dlog_rec *rec = r->sr_buf;

	lp->lp_records++;
	lp_print_header(lp, SX_LSN_BLOCK(r->sr_lsn), rec, "");
	lp_print_ops(lp, r->sr_buf, r->sr_blocks * lp->lp_mp->m_bsize);
	lp->lp_walked += lp_advance(lp->lp_mp, rec, SX_LSN_BLOCK(r->sr_lsn));
	return 0;
}

/*
 * Decide whether a record whose CRC failed was torn: the writer zero-fills
 * a record after its ops, so foreign bytes there, or ops that break off,
 * mean that part of the record is not what was written.  Sets *@where to
 * the first byte that is off.
 */
static bool lp_looks_torn(struct sx_logprinter *lp, const u8 *rec, u32 recbytes, u32 *where)
{
	const struct sx_dlog_rec *hdr = (const struct sx_dlog_rec *)rec;
	u32 end = sizeof(*hdr) + le32_to_cpu(hdr->lr_len), i;
	const char *why;

	if (sx_log_rec_walk_ops(rec, recbytes, NULL, NULL, &why)) {
		/* find how far the ops do parse, quietly */
		const u8 *p = rec + sizeof(*hdr);
		u32 nops = le32_to_cpu(hdr->lr_nops), k;

		for (k = 0; k < nops; k++) {
			const struct sx_dlog_op *op = (const struct sx_dlog_op *)p;
			u64 adv;

			if ((u64)(p - rec) + sizeof(*op) > end)
				break;
			adv = sizeof(*op) + sx_roundup((u64)le32_to_cpu(op->lo_len),
						       SX_LOG_OP_ALIGN);
			if (le16_to_cpu(op->lo_type) == 0 ||
			    le16_to_cpu(op->lo_type) >= SX_LOG_OP_MAX ||
			    (u64)(p - rec) + adv > end)
				break;
			p += adv;
		}
		*where = (u32)(p - rec);
		return true;
	}
	for (i = end; i < recbytes; i++) {
		if (rec[i]) {
			*where = i;
			return true;
		}
	}
	return false;
}

/* Where the walk past the valid log stands. */
struct lp_pos {
	u32	p_cycle;	/* the cycle a record written here now would have */
	u32	p_block;
	u32	p_prev_crc;	/* lr_crc of the record before */
	u32	p_epoch;	/* epoch of the record before */
};

/*
 * Read the header at @pos and classify it.  Return: 1 if a header parsed
 * (*@stale says whether it is from an earlier cycle), 0 if the walk ends
 * here (said in the output), or an I/O error.
 */
static int lp_read_header(struct sx_logprinter *lp, const struct lp_pos *pos, u8 *buf,
			  bool *stale)
{
	struct sx_mount *mp = lp->lp_mp;
	const struct sx_sb *sb = &mp->m_sb;
	const struct sx_dlog_rec *rec = (const struct sx_dlog_rec *)buf;
	u64 expect = SX_LSN(pos->p_cycle, pos->p_block), found;
	const char *why, *why2;
	int error;

	error = sx_dev_read(mp, sb->sb_logstart + pos->p_block, 1, buf);
	if (error) {
		lp_out(lp, "read error at %u/%u (device block %llu): %s (%d); stopping",
		       pos->p_cycle, pos->p_block, (sx_ull)(sb->sb_logstart + pos->p_block),
		       sx_offline_errname(error), error);
		return error;
	}
	*stale = false;
	if (!sx_log_rec_check_header(rec, sb->sb_uuid, expect, sb->sb_logblocks,
				     mp->m_bsize, &why))
		return 1;
	found = le64_to_cpu(rec->lr_lsn);
	if (SX_LSN_BLOCK(found) == pos->p_block && SX_LSN_CYCLE(found) < pos->p_cycle &&
	    !sx_log_rec_check_header(rec, sb->sb_uuid, found, sb->sb_logblocks,
				     mp->m_bsize, &why2)) {
		*stale = true;
		return 1;
	}
	lp_out(lp, "no record header at %u/%u (device block %llu): %s; the log ends here",
	       pos->p_cycle, pos->p_block, (sx_ull)(sb->sb_logstart + pos->p_block),
	       why ? why : "?");
	return 0;
}

/* Walk on past the valid log while record headers still parse. */
static int lp_beyond(struct sx_logprinter *lp, struct lp_pos *pos, u8 *buf)
{
	struct sx_mount *mp = lp->lp_mp;
	const struct sx_sb *sb = &mp->m_sb;
	const struct sx_dlog_rec *rec = (const struct sx_dlog_rec *)buf;
	char mark[160];
	u32 blocks, crc, stored, where;
	bool stale = false, crc_ok;
	int error, used;

	while (lp->lp_walked < sb->sb_logblocks) {
		error = lp_read_header(lp, pos, buf, &stale);
		if (error <= 0)
			return error;
		blocks = le32_to_cpu(rec->lr_blocks);
		if (blocks > 1) {
			error = sx_dev_read(mp, sb->sb_logstart + pos->p_block + 1, blocks - 1,
					    buf + mp->m_bsize);
			if (error) {
				lp_out(lp, "read error in the record at %u/%u: %s (%d); stopping",
				       pos->p_cycle, pos->p_block, sx_offline_errname(error),
				       error);
				return error;
			}
		}
		stored = le32_to_cpu(rec->lr_crc);
		crc = sx_cksum_skip(buf, (size_t)blocks * mp->m_bsize,
				    offsetof(struct sx_dlog_rec, lr_crc));
		crc_ok = crc == stored;

		used = 0;
		mark[0] = '\0';
		if (stale)
			used += snprintf(mark + used, sizeof(mark) - used,
					 "STALE (old cycle %u%s)",
					 SX_LSN_CYCLE(le64_to_cpu(rec->lr_lsn)),
					 SX_LSN_CYCLE(le64_to_cpu(rec->lr_lsn)) ==
					 SX_LSN_CYCLE(sb->sb_log_tail) ?
					 ", checkpointed: behind the tail" : "");
		else if (le32_to_cpu(rec->lr_prev_crc) != pos->p_prev_crc)
			used += snprintf(mark + used, sizeof(mark) - used,
					 "BROKEN CHAIN (the record before has crc 0x%08x)",
					 pos->p_prev_crc);
		else if (le32_to_cpu(rec->lr_epoch) < pos->p_epoch)
			used += snprintf(mark + used, sizeof(mark) - used,
					 "EPOCH BACKWARDS (the record before has epoch %u)",
					 pos->p_epoch);
		if (!crc_ok) {
			used += snprintf(mark + used, sizeof(mark) - used,
					 "%sBAD CRC (computed 0x%08x)", used ? ", " : "", crc);
			if (lp_looks_torn(lp, buf, blocks * mp->m_bsize, &where))
				snprintf(mark + used, sizeof(mark) - used,
					 ", TORN (not as written from byte %u of %u)", where,
					 blocks * mp->m_bsize);
		}
		lp_print_header(lp, pos->p_block, rec, mark);
		if (crc_ok)
			lp_print_ops(lp, buf, blocks * mp->m_bsize);
		else
			lp_out(lp, "    (ops not decoded: the record fails its CRC)");

		pos->p_prev_crc = stored;
		pos->p_epoch = le32_to_cpu(rec->lr_epoch);
		lp->lp_walked += lp_advance(mp, rec, pos->p_block);
		if (le32_to_cpu(rec->lr_flags) & SX_LR_WRAP) {
			pos->p_block = 0;
			pos->p_cycle++;
		} else {
			pos->p_block += blocks;
			if (pos->p_block == sb->sb_logblocks) {
				pos->p_block = 0;
				pos->p_cycle++;
			}
		}
	}
	lp_out(lp, "back at the tail: the whole log has been printed");
	return 0;
}

/* Print the superblock fields that anchor the log. */
static void lp_print_sb(struct sx_logprinter *lp, const struct sx_sb *sb, int which)
{
	const u8 *u = sb->sb_uuid;

	lp_out(lp, "superblock: copy %d, seq %llu, uuid %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x, block size %u",
	       which, (sx_ull)sb->sb_seq, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7],
	       u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15], sb->sb_blocksize);
	lp_out(lp, "log: %u blocks at device block %llu, records of at most %u blocks, log_incompat 0x%x%s",
	       sb->sb_logblocks, (sx_ull)sb->sb_logstart,
	       sx_log_rec_max_blocks(sb->sb_logblocks, sb->sb_blocksize),
	       sb->sb_feat_log_incompat,
	       (sb->sb_feat_log_incompat & SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP) ?
	       " (atomic_swap)" : "");
	lp_out(lp, "log tail %u/%u, tail prev crc 0x%08x, epoch %u",
	       SX_LSN_CYCLE(sb->sb_log_tail), SX_LSN_BLOCK(sb->sb_log_tail),
	       sb->sb_log_tail_prev_crc, sb->sb_log_epoch);
}

/* Decode every record of the log of an unmounted device. */
SX_API int sx_logprint(struct sx_bdev *bd, sx_report_fn print, void *arg)
{
	struct sx_logprinter lp;
	struct sx_log_scan scan;
	struct lp_pos pos;
	struct sx_sb sb;
	u8 *buf = NULL;
	int which, error;

	if (!bd || !bd->bd_ops || !bd->bd_ops->read || !print)
		return -EINVAL;
	/* item names and decoders come from the registry, which a mount fills */
	error = sx_init();
	if (error)
		return error;
	memset(&lp, 0, sizeof(lp));
	lp.lp_print = print;
	lp.lp_arg = arg;
	lp.lp_mp = sx_offline_mount_alloc(bd, "logprint");
	if (!lp.lp_mp)
		return -ENOMEM;
	error = sx_sb_read(lp.lp_mp, bd, &sb, &which);
	if (error) {
		print(arg, "no valid superblock: %s (%d)", sx_offline_errname(error), error);
		goto out_free;
	}
	if (bd->bd_sectsize > sb.sb_blocksize) {
		print(arg, "device sector size %u is larger than the block size %u",
		      bd->bd_sectsize, sb.sb_blocksize);
		error = -EINVAL;
		goto out_free;
	}
	sx_offline_mount_set_sb(lp.lp_mp, &sb);
	lp_print_sb(&lp, &sb, which);

	print(arg, "valid log from the tail %u/%u:", SX_LSN_CYCLE(sb.sb_log_tail),
	      SX_LSN_BLOCK(sb.sb_log_tail));
	error = sx_log_scan(lp.lp_mp, lp_valid_record, &lp, &scan);
	if (error && error != -EFSCORRUPTED)
		goto out_free;
	/* a scan stopped by a read error returns it: gone out just above */
	ASSERT(scan.sc_stop != SX_LOG_STOP_IO);
	if (error) {
		print(arg, "end of the valid log at %u/%u after %u records: the record there passes its CRC but its ops are malformed (%s)",
		      SX_LSN_CYCLE(scan.sc_head), SX_LSN_BLOCK(scan.sc_head), lp.lp_records,
		      scan.sc_why ? scan.sc_why : "?");
		error = 0;
	} else if (scan.sc_stop == SX_LOG_STOP_DATA) {
		print(arg, "end of the valid log at %u/%u after %u records: block %llu does not hold what the manifest of the last force says, so its %u records above are dropped",
		      SX_LSN_CYCLE(scan.sc_head), SX_LSN_BLOCK(scan.sc_head), scan.sc_records,
		      (sx_ull)scan.sc_bad_bno, scan.sc_dropped);
	} else if (scan.sc_stop == SX_LOG_STOP_NONE) {
		print(arg, "the valid log fills the whole log: %u records", lp.lp_records);
	} else {
		print(arg, "end of the valid log at %u/%u after %u records: %s%s%s%s",
		      SX_LSN_CYCLE(scan.sc_head), SX_LSN_BLOCK(scan.sc_head), lp.lp_records,
		      sx_log_stop_name(scan.sc_stop), scan.sc_why ? " (" : "",
		      scan.sc_why ? scan.sc_why : "", scan.sc_why ? ")" : "");
	}
	print(arg, "%s", lp.lp_records ? "the log needs recovery" : "the log is clean");
	if (scan.sc_manifest && scan.sc_stop != SX_LOG_STOP_DATA)
		print(arg, "the %u blocks of the last force's manifest hold its data", scan.sc_manifest);
	if (lp.lp_walked >= sb.sb_logblocks)
		goto out_free;

	buf = sx_alloc((size_t)sx_log_rec_max_blocks(sb.sb_logblocks, sb.sb_blocksize) *
		       sb.sb_blocksize, 0);
	if (!buf) {
		error = -ENOMEM;
		goto out_free;
	}
	print(arg, "past the valid log:");
	pos.p_cycle = SX_LSN_CYCLE(scan.sc_head);
	pos.p_block = SX_LSN_BLOCK(scan.sc_head);
	pos.p_prev_crc = scan.sc_head_prev_crc;
	pos.p_epoch = scan.sc_epoch;
	error = lp_beyond(&lp, &pos, buf);
out_free:
	sx_free(buf);
	sx_offline_mount_free(lp.lp_mp);
	return error;
}
