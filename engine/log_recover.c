// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Log recovery.
 *
 * Pass 1 walks the log from the superblock's tail to find the head: each
 * record must sit where its LSN says, chain to the CRC of the record before
 * it and pass its own CRC; the first one that does not ends the log.  Pass 2
 * replays buffer changes newer than the block they change (a block whose
 * own CRC is bad, e.g. torn while being written in place, takes every
 * change) and pairs intents with done items.  Pass 3, after the log is set
 * up for writing, finishes every unfinished intent in log order.
 */
#include "util.h"
#include "log.h"
#include "buf.h"
#include "item.h"
#include "defer.h"
#include "mount.h"
#include "dev.h"
#include "log_recover.h"

/* Recovery buffers held at once before they are written back. */
#define SX_RECOVER_MAX_BUFS	8192

/* A block being rebuilt by replay. */
struct sx_rbuf {
	struct sx_list	rb_hash;
	u64		rb_blkno;
	u64		rb_disk_lsn;	/* what the block held before replay; 0 = unusable */
	u64		rb_lsn;		/* last change applied */
	u32		rb_dirty;
	u32		rb_is_data;	/* holds a file data image (no header); the pair keeps rb_data 8-byte aligned */
	u8		rb_data[];
};

/* The last cancel of a block: changes before op number rc_seq are dead. */
struct sx_rcancel {
	struct sx_list	cn_hash;
	u64		cn_blkno;
	u64		cn_seq;
};

/* An intent found in the log with no done item (yet). */
struct sx_rintent {
	struct sx_list	ri_list;
	struct sx_recovered_intent ri;
	u8		ri_data[];
};

#define SX_RHASH	1024

struct sx_recover {
	struct sx_mount	*rc_mp;
	struct sx_list	rc_bufs[SX_RHASH];
	u32		rc_nbufs;
	struct sx_list	rc_cancels[SX_RHASH];
	struct sx_list	rc_intents;
	u64		rc_seq;		/* ops seen so far */
	u64		rc_lsn;		/* record being replayed */
	u64		rc_head;	/* end of the valid log, from pass 1 */
	int		rc_pass;
	/* the records pass 1 found, for the log to move its tail onto later */
	struct sx_log_scan_rec *rc_recs;
	u32		rc_nrecs;
	u32		rc_recs_cap;
};

static const char *const sx_stop_names[] = {
	[SX_LOG_STOP_NONE] = "end of log",
	[SX_LOG_STOP_HEADER] = "no record header",
	[SX_LOG_STOP_CHAIN] = "record does not chain",
	[SX_LOG_STOP_EPOCH] = "epoch went backwards",
	[SX_LOG_STOP_CRC] = "bad record CRC (torn write)",
	[SX_LOG_STOP_IO] = "read error",
	[SX_LOG_STOP_DATA] = "data of the last force does not match its manifest",
};

/* A word for a scan stop reason. */
const char *sx_log_stop_name(enum sx_log_stop stop)
{
	return stop < ARRAY_SIZE(sx_stop_names) ? sx_stop_names[stop] : "?";
}

/* The last force a scan walked: where it began and its manifest. */
struct sx_scan_force {
	u64		sf_force;	/* its lr_force_lsn */
	u64		sf_start;	/* its first record; 0: began before the tail */
	u32		sf_prev_crc;	/* lr_prev_crc of that record */
	u32		sf_records;	/* its records walked */
	u32		sf_nonwrap;	/* of them, not wrap records */
	struct sx_dlog_mfent *sf_ents;	/* a copy of its manifest */
	u32		sf_nents;
	u32		sf_cap;
};

/*
 * Follow the records of forces: a record starts a force or continues the
 * one before it, and a manifest (the first op of a manifest record) comes
 * first in its force.
 */
static int sx_scan_note_force(struct sx_mount *mp, struct sx_scan_force *sf,
			      const struct sx_dlog_rec *rec, u32 recbytes, u32 prev_crc,
			      bool first, const char **why)
{
	u64 lsn = le64_to_cpu(rec->lr_lsn), force = le64_to_cpu(rec->lr_force_lsn);
	u32 flags = le32_to_cpu(rec->lr_flags), n;
	const struct sx_dlog_mfent *ents;
	int error;

	error = sx_log_rec_check_kind(rec, recbytes, mp->m_sb.sb_datastart,
				      mp->m_sb.sb_dblocks, &ents, &n, why);
	if (error)
		return error;
	if (!first && force != lsn && force != sf->sf_force) {
		*why = "record is not of the force before it, nor the first of its own";
		return -EFSCORRUPTED;
	}
	if (force != sf->sf_force || first) {
		/* a new force; the tail may sit inside one, whose start is behind it */
		sf->sf_force = force;
		sf->sf_start = force == lsn ? lsn : 0;
		sf->sf_prev_crc = prev_crc;
		sf->sf_records = 0;
		sf->sf_nonwrap = 0;
		sf->sf_nents = 0;
	}
	if (flags & SX_LR_MANIFEST) {
		if (!sf->sf_start || sf->sf_nonwrap) {
			*why = "manifest record is not the first of its force";
			return -EFSCORRUPTED;
		}
		if (n > sf->sf_cap) {
			struct sx_dlog_mfent *e = sx_alloc(sizeof(*e) * n, 0);

			if (!e)
				return -ENOMEM;
			sx_free(sf->sf_ents);
			sf->sf_ents = e;
			sf->sf_cap = n;
		}
		memcpy(sf->sf_ents, ents, sizeof(*ents) * n);
		sf->sf_nents = n;
	}
	sf->sf_records++;
	if (!(flags & SX_LR_WRAP))
		sf->sf_nonwrap++;
	return 0;
}

/*
 * Read the blocks of the last force's manifest: the first that does not
 * hold what the force wrote there is returned in *@bad (0: all match).
 */
static int sx_scan_check_manifest(struct sx_mount *mp, const struct sx_scan_force *sf,
				  u8 *buf, u64 *bad)
{
	u32 i;
	int error;

	*bad = 0;
	for (i = 0; i < sf->sf_nents; i++) {
		u64 bno = le64_to_cpu(sf->sf_ents[i].me_bno);

		error = sx_dev_read(mp, bno, 1, buf);
		if (error)
			return error;
		if (sx_cksum(buf, mp->m_bsize) != le32_to_cpu(sf->sf_ents[i].me_crc)) {
			*bad = bno;
			return 0;
		}
	}
	return 0;
}

/* Walk the valid log from the tail, calling @fn for each record. */
int sx_log_scan(struct sx_mount *mp, int (*fn)(void *arg, const struct sx_log_scan_rec *r),
		void *arg, struct sx_log_scan *res)
{
	return sx_log_scan_to(mp, 0, fn, arg, res);
}

/* Walk the valid log from the tail up to @limit (0: none). */
int sx_log_scan_to(struct sx_mount *mp, u64 limit,
		   int (*fn)(void *arg, const struct sx_log_scan_rec *r), void *arg,
		   struct sx_log_scan *res)
{
	const struct sx_sb *sb = &mp->m_sb;
	u32 bsize = mp->m_bsize, maxblocks = sx_log_rec_max_blocks(sb->sb_logblocks, bsize);
	u32 cycle = SX_LSN_CYCLE(sb->sb_log_tail), block = SX_LSN_BLOCK(sb->sb_log_tail);
	u32 prev_crc = sb->sb_log_tail_prev_crc, epoch = 0;
	struct sx_scan_force sf;
	u64 walked = 0;
	u8 *buf;
	int error = 0;

	memset(res, 0, sizeof(*res));
	memset(&sf, 0, sizeof(sf));
	buf = sx_alloc((size_t)maxblocks * bsize, 0);
	if (!buf)
		return -ENOMEM;
	/*
	 * The bound on the blocks walked is the loop's guarantee of an end, and
	 * no log reaches it: a record must sit where its LSN says, so after a
	 * whole lap the record at the tail has the older cycle and the scan
	 * stops at its header.  Leaving by the bound keeps sc_stop at
	 * SX_LOG_STOP_NONE (0, from the memset above).
	 */
	while (walked < sb->sb_logblocks) {
		struct sx_dlog_rec *rec = (struct sx_dlog_rec *)buf;
		struct sx_log_scan_rec r;
		const char *why;
		u32 blocks, crc;

		res->sc_head = SX_LSN(cycle, block);
		res->sc_head_prev_crc = prev_crc;
		if (limit && SX_LSN(cycle, block) == limit) {
			res->sc_stop = SX_LOG_STOP_DATA;
			res->sc_why = "the force here was dropped: its data did not match";
			break;
		}
		error = sx_dev_read(mp, sb->sb_logstart + block, 1, buf);
		if (error) {
			res->sc_stop = SX_LOG_STOP_IO;
			break;
		}
		if (sx_log_rec_check_header(rec, sb->sb_uuid, SX_LSN(cycle, block),
					    sb->sb_logblocks, bsize, &why)) {
			res->sc_stop = SX_LOG_STOP_HEADER;
			res->sc_why = why;
			break;
		}
		if (le32_to_cpu(rec->lr_prev_crc) != prev_crc) {
			res->sc_stop = SX_LOG_STOP_CHAIN;
			res->sc_why = "previous-record CRC mismatch";
			break;
		}
		if (le32_to_cpu(rec->lr_epoch) < epoch) {
			res->sc_stop = SX_LOG_STOP_EPOCH;
			res->sc_why = "epoch older than the previous record's";
			break;
		}
		blocks = le32_to_cpu(rec->lr_blocks);
		if (blocks > 1) {
			error = sx_dev_read(mp, sb->sb_logstart + block + 1, blocks - 1,
					    buf + bsize);
			if (error) {
				res->sc_stop = SX_LOG_STOP_IO;
				break;
			}
		}
		crc = le32_to_cpu(rec->lr_crc);
		if (crc != sx_cksum_skip(buf, (size_t)blocks * bsize,
					 offsetof(struct sx_dlog_rec, lr_crc))) {
			res->sc_stop = SX_LOG_STOP_CRC;
			res->sc_why = "record CRC mismatch";
			break;
		}
		/* a record that passed its CRC was written whole by us */
		error = sx_log_rec_walk_ops(buf, blocks * bsize, NULL, NULL, &why);
		if (!error)
			error = sx_scan_note_force(mp, &sf, rec, blocks * bsize, prev_crc,
						   res->sc_records == 0, &why);
		if (error) {
			if (error == -EFSCORRUPTED)
				sx_err(mp, "log record at LSN %u/%u is malformed: %s", cycle,
				       block, why);
			res->sc_why = why;
			break;
		}
		r.sr_lsn = SX_LSN(cycle, block);
		r.sr_blocks = blocks;
		r.sr_crc = crc;
		r.sr_prev_crc = prev_crc;
		r.sr_epoch = le32_to_cpu(rec->lr_epoch);
		r.sr_buf = buf;
		if (le64_to_cpu(rec->lr_first_tid) > res->sc_max_tid)
			res->sc_max_tid = le64_to_cpu(rec->lr_first_tid);
		epoch = r.sr_epoch;
		res->sc_epoch = epoch;
		res->sc_records++;
		prev_crc = crc;
		if (le32_to_cpu(rec->lr_flags) & SX_LR_WRAP) {
			walked += sb->sb_logblocks - block;
			block = 0;
			cycle++;
		} else {
			walked += blocks;
			block += blocks;
			if (block == sb->sb_logblocks) {
				block = 0;
				cycle++;
			}
		}
		if (fn) {
			error = fn(arg, &r);
			if (error)
				break;
		}
	}
	if (!error && res->sc_stop != SX_LOG_STOP_IO) {
		res->sc_head = SX_LSN(cycle, block);
		res->sc_head_prev_crc = prev_crc;
	}
	/*
	 * The last force's flush covered its records and its data: if a block
	 * of its manifest does not hold what the force wrote, the flush never
	 * finished, nothing of the force was acknowledged, and the log ends
	 * before it, as at a torn record.
	 */
	if (!error && !limit && res->sc_stop != SX_LOG_STOP_IO && sf.sf_start && sf.sf_nents) {
		res->sc_manifest = sf.sf_nents;
		error = sx_scan_check_manifest(mp, &sf, buf, &res->sc_bad_bno);
		if (!error && res->sc_bad_bno) {
			res->sc_head = sf.sf_start;
			res->sc_head_prev_crc = sf.sf_prev_crc;
			res->sc_records -= sf.sf_records;
			res->sc_dropped = sf.sf_records;
			res->sc_stop = SX_LOG_STOP_DATA;
			res->sc_why = "a block of the last force's manifest does not hold its data";
		}
	}
	sx_free(sf.sf_ents);
	sx_free(buf);
	return error;
}

/* Hash bucket of a block number. */
static u32 sx_rhash(u64 blkno)
{
	return (u32)((blkno * 0x9e3779b97f4a7c15ull) >> 54) & (SX_RHASH - 1);
}

/* Record the latest cancel of @blkno. */
static int sx_recover_note_cancel(struct sx_recover *rc, u64 blkno)
{
	struct sx_list *head = &rc->rc_cancels[sx_rhash(blkno)], *pos;
	struct sx_rcancel *c;

	sx_list_for_each(pos, head) {
		c = sx_list_entry(pos, struct sx_rcancel, cn_hash);
		if (c->cn_blkno == blkno) {
			c->cn_seq = rc->rc_seq;
			return 0;
		}
	}
	c = sx_alloc(sizeof(*c), 0);
	if (!c)
		return -ENOMEM;
	c->cn_blkno = blkno;
	c->cn_seq = rc->rc_seq;
	sx_list_add(&c->cn_hash, head);
	return 0;
}

/* True if a later cancel kills the change being replayed to @blkno. */
static bool sx_recover_is_cancelled(struct sx_recover *rc, u64 blkno)
{
	struct sx_list *pos;

	sx_list_for_each(pos, &rc->rc_cancels[sx_rhash(blkno)]) {
		struct sx_rcancel *c = sx_list_entry(pos, struct sx_rcancel, cn_hash);

		if (c->cn_blkno == blkno)
			return rc->rc_seq < c->cn_seq;
	}
	return false;
}

/*
 * The CRC recovery stamps on a rebuilt block proves nothing about it: a
 * record that passed its own CRC may still carry a bad block image.  So the
 * block must pass the structure verifier of its type, as every block the
 * running filesystem writes does.
 */
static int sx_recover_verify_buf(struct sx_mount *mp, const struct sx_rbuf *rb)
{
	const struct sx_dblk_hdr *hdr = (const struct sx_dblk_hdr *)rb->rb_data;
	u32 magic = le32_to_cpu(hdr->bh_magic);
	const struct sx_buf_ops *ops = sx_buf_type_lookup(magic);
	int error;

	if (!ops) {
		sx_err(mp, "recovery: replay made block %llu a block of no known type (magic 0x%08x); refusing to write it",
		       (unsigned long long)rb->rb_blkno, magic);
		return -EFSCORRUPTED;
	}
	/* which object owns it is the business of whoever reads it next */
	error = sx_buf_verify(mp, rb->rb_data, rb->rb_blkno, ops, le64_to_cpu(hdr->bh_owner));
	if (error) {
		sx_err(mp, "recovery: replayed %s block %llu fails its verifier (%d); refusing to write it",
		       ops->bo_name, (unsigned long long)rb->rb_blkno, error);
		return -EFSCORRUPTED;
	}
	return 0;
}

/*
 * Write every rebuilt block in place and forget them.  All of them are
 * verified before any is written, so a bad one fails the mount with
 * nothing of this batch on the disk.
 */
static int sx_recover_flush_bufs(struct sx_recover *rc)
{
	struct sx_mount *mp = rc->rc_mp;
	int error = 0, i;

	for (i = 0; i < SX_RHASH && !error; i++) {
		struct sx_list *pos;

		sx_list_for_each(pos, &rc->rc_bufs[i]) {
			struct sx_rbuf *rb = sx_list_entry(pos, struct sx_rbuf, rb_hash);

			if (!rb->rb_dirty || rb->rb_is_data)
				continue;	/* file data: no header, no verifier */
			sx_buf_stamp(mp, rb->rb_data, rb->rb_lsn);
			error = sx_recover_verify_buf(mp, rb);
			if (error)
				break;
		}
	}
	for (i = 0; i < SX_RHASH; i++) {
		struct sx_list *pos, *n;

		sx_list_for_each_safe(pos, n, &rc->rc_bufs[i]) {
			struct sx_rbuf *rb = sx_list_entry(pos, struct sx_rbuf, rb_hash);

			if (!error && rb->rb_dirty) {
				error = sx_fault("recover_write");
				if (!error)
					error = sx_dev_write(mp, rb->rb_blkno, 1, rb->rb_data, 0);
			}
			sx_list_del(pos);
			sx_free(rb);
		}
	}
	rc->rc_nbufs = 0;
	return error;
}

/* The recovery buffer of @blkno, if replay has one. */
static struct sx_rbuf *sx_recover_find_buf(struct sx_recover *rc, u64 blkno)
{
	struct sx_list *pos;

	sx_list_for_each(pos, &rc->rc_bufs[sx_rhash(blkno)]) {
		struct sx_rbuf *rb = sx_list_entry(pos, struct sx_rbuf, rb_hash);

		if (rb->rb_blkno == blkno)
			return rb;
	}
	return NULL;
}

/*
 * A new recovery buffer for @blkno, its contents not set, not yet in the
 * table (sx_recover_add_buf()).  A full table is written out first.
 */
static int sx_recover_new_buf(struct sx_recover *rc, u64 blkno, struct sx_rbuf **rbp)
{
	struct sx_rbuf *rb;
	int error;

	if (rc->rc_nbufs >= SX_RECOVER_MAX_BUFS) {
		/* safe: a written block's LSN still orders later changes */
		error = sx_recover_flush_bufs(rc);
		if (error)
			return error;
	}
	rb = sx_alloc(sizeof(*rb) + rc->rc_mp->m_bsize, 0);
	if (!rb)
		return -ENOMEM;
	rb->rb_blkno = blkno;
	rb->rb_dirty = 0;
	rb->rb_is_data = 0;
	rb->rb_lsn = 0;
	rb->rb_disk_lsn = 0;
	*rbp = rb;
	return 0;
}

static void sx_recover_add_buf(struct sx_recover *rc, struct sx_rbuf *rb)
{
	sx_list_add(&rb->rb_hash, &rc->rc_bufs[sx_rhash(rb->rb_blkno)]);
	rc->rc_nbufs++;
}

/* The recovery buffer of @blkno, read on first use. */
static int sx_recover_get_buf(struct sx_recover *rc, u64 blkno, struct sx_rbuf **rbp)
{
	struct sx_mount *mp = rc->rc_mp;
	const struct sx_dblk_hdr *hdr;
	struct sx_rbuf *rb;
	int error;

	rb = sx_recover_find_buf(rc, blkno);
	if (rb) {
		*rbp = rb;
		return 0;
	}
	error = sx_recover_new_buf(rc, blkno, &rb);
	if (error)
		return error;
	error = sx_dev_read(mp, blkno, 1, rb->rb_data);
	if (error) {
		sx_free(rb);
		return error;
	}
	hdr = (const struct sx_dblk_hdr *)rb->rb_data;
	/*
	 * Only a block that is wholly what some writeback wrote can be
	 * trusted to hold everything up to its LSN.
	 */
	if (le32_to_cpu(hdr->bh_crc) == sx_cksum_skip(rb->rb_data, mp->m_bsize,
						      offsetof(struct sx_dblk_hdr, bh_crc)) &&
	    le64_to_cpu(hdr->bh_blkno) == blkno &&
	    memcmp(hdr->bh_uuid, mp->m_sb.sb_uuid, SX_UUID_SIZE) == 0)
		rb->rb_disk_lsn = le64_to_cpu(hdr->bh_lsn);
	/*
	 * A block is written only after the record of its last change, so
	 * no block of this log can name a record at or past the head.  One
	 * that does would have every change to it skipped: refuse it.
	 */
	if (rb->rb_disk_lsn >= rc->rc_head) {
		sx_err(mp, "recovery: block %llu has LSN %u/%u, which is not behind the log head %u/%u; refusing to trust it",
		       (unsigned long long)blkno, SX_LSN_CYCLE(rb->rb_disk_lsn),
		       SX_LSN_BLOCK(rb->rb_disk_lsn), SX_LSN_CYCLE(rc->rc_head),
		       SX_LSN_BLOCK(rc->rc_head));
		sx_free(rb);
		return -EFSCORRUPTED;
	}
	sx_recover_add_buf(rc, rb);
	*rbp = rb;
	return 0;
}

/*
 * Replay the image of a file data block.  Its home is never read: data has
 * no header whose LSN could say it is newer (a data block is written home
 * only after its last image is in a durable record, so home is never newer
 * than the log), and what the block held before does not matter.  The
 * image replaces whatever earlier ops of this replay left, and forgets the
 * LSN a metadata home carried: if the block turns into metadata again, that
 * starts with a whole image, and every change after it is in the log.
 */
static int sx_recover_data_op(struct sx_recover *rc, u64 blkno, const u8 *image)
{
	struct sx_mount *mp = rc->rc_mp;
	struct sx_rbuf *rb = sx_recover_find_buf(rc, blkno);
	int error;

	if (!rb) {
		error = sx_recover_new_buf(rc, blkno, &rb);
		if (error)
			return error;
		sx_recover_add_buf(rc, rb);
	}
	memcpy(rb->rb_data, image, mp->m_bsize);
	rb->rb_disk_lsn = 0;
	rb->rb_dirty = 1;
	rb->rb_is_data = 1;
	rb->rb_lsn = rc->rc_lsn;
	mp->m_rstats.rs_bufs_replayed++;
	return 0;
}

/* Replay (pass 2) or note the cancel of (pass 1) one BUF op. */
static int sx_recover_buf_op(struct sx_recover *rc, const struct sx_dlog_op *op,
			     const void *payload)
{
	struct sx_mount *mp = rc->rc_mp;
	const struct sx_dlog_buf *lb = payload;
	const struct sx_dlog_region *rg;
	u32 len = le32_to_cpu(op->lo_len), nreg, i, flags;
	u64 blkno, need;
	const u8 *data;
	struct sx_rbuf *rb;
	int error;

	if (SX_IS_CORRUPT(mp, len < sizeof(*lb)))
		return -EFSCORRUPTED;
	blkno = le64_to_cpu(lb->lb_blkno);
	nreg = le16_to_cpu(lb->lb_nregions);
	if (SX_IS_CORRUPT(mp, blkno < mp->m_sb.sb_bmapstart) ||
	    SX_IS_CORRUPT(mp, blkno >= mp->m_sb.sb_dblocks) ||
	    SX_IS_CORRUPT(mp, le32_to_cpu(lb->lb_flags) & ~SX_LB_FLAGS_ALL) ||
	    SX_IS_CORRUPT(mp, (u64)nreg * sizeof(*rg) > len - sizeof(*lb)))
		return -EFSCORRUPTED;
	rg = (const struct sx_dlog_region *)(lb + 1);
	need = sizeof(*lb) + (u64)nreg * sizeof(*rg);
	for (i = 0; i < nreg; i++) {
		u32 off = le32_to_cpu(rg[i].lg_off), rlen = le32_to_cpu(rg[i].lg_len);

		if (SX_IS_CORRUPT(mp, rlen == 0 || (u64)off + rlen > mp->m_bsize))
			return -EFSCORRUPTED;
		need += rlen;
	}
	if (SX_IS_CORRUPT(mp, need != len))
		return -EFSCORRUPTED;

	flags = le32_to_cpu(lb->lb_flags);
	if (SX_IS_CORRUPT(mp, (flags & SX_LB_DATA) &&
			  ((flags & SX_LB_CANCEL) || nreg != 1 || le32_to_cpu(rg[0].lg_off) != 0 ||
			   le32_to_cpu(rg[0].lg_len) != mp->m_bsize)))
		return -EFSCORRUPTED;
	if (flags & SX_LB_CANCEL) {
		if (rc->rc_pass == 1)
			return sx_recover_note_cancel(rc, blkno);
		mp->m_rstats.rs_bufs_cancelled++;
		return 0;
	}
	if (rc->rc_pass == 1)
		return 0;
	if (sx_recover_is_cancelled(rc, blkno)) {
		mp->m_rstats.rs_bufs_cancelled++;
		return 0;
	}
	if (flags & SX_LB_DATA)
		return sx_recover_data_op(rc, blkno, (const u8 *)(rg + nreg));
	error = sx_recover_get_buf(rc, blkno, &rb);
	if (error)
		return error;
	if (rb->rb_disk_lsn >= rc->rc_lsn) {
		mp->m_rstats.rs_bufs_skipped++;
		return 0;
	}
	data = (const u8 *)(rg + nreg);
	for (i = 0; i < nreg; i++) {
		u32 off = le32_to_cpu(rg[i].lg_off), rlen = le32_to_cpu(rg[i].lg_len);

		memcpy(rb->rb_data + off, data, rlen);
		data += rlen;
	}
	rb->rb_dirty = 1;
	rb->rb_is_data = 0;
	rb->rb_lsn = rc->rc_lsn;
	mp->m_rstats.rs_bufs_replayed++;
	return 0;
}

/* Find a pending intent by id. */
static struct sx_rintent *sx_recover_find_intent(struct sx_recover *rc, u64 id)
{
	struct sx_list *pos;

	sx_list_for_each(pos, &rc->rc_intents) {
		struct sx_rintent *ri = sx_list_entry(pos, struct sx_rintent, ri_list);

		if (ri->ri.ri_id == id)
			return ri;
	}
	return NULL;
}

/* Pair intents and done items (pass 2). */
static int sx_recover_item_op(struct sx_recover *rc, const struct sx_dlog_op *op,
			      const void *payload)
{
	struct sx_mount *mp = rc->rc_mp;
	u16 type = le16_to_cpu(op->lo_type);
	u32 len = le32_to_cpu(op->lo_len);
	const struct sx_dlog_intent *li = payload;
	struct sx_rintent *ri;

	if (!sx_item_is_intent(type) && !sx_item_is_done(type)) {
		sx_err(mp, "log holds item type 0x%x that this engine does not know", type);
		return -EFSCORRUPTED;
	}
	if (SX_IS_CORRUPT(mp, len < sizeof(*li)))
		return -EFSCORRUPTED;
	if (rc->rc_pass == 1)
		return 0;
	ri = sx_recover_find_intent(rc, le64_to_cpu(li->li_id));
	if (sx_item_is_done(type)) {
		/* a done whose intent is behind the tail is fine */
		if (ri) {
			sx_list_del(&ri->ri_list);
			sx_free(ri);
		}
		return 0;
	}
	if (SX_IS_CORRUPT(mp, ri != NULL))
		return -EFSCORRUPTED;
	ri = sx_alloc(sizeof(*ri) + len, 0);
	if (!ri)
		return -ENOMEM;
	memcpy(ri->ri_data, payload, len);
	ri->ri.ri_type = type;
	ri->ri.ri_len = len;
	ri->ri.ri_id = le64_to_cpu(li->li_id);
	ri->ri.ri_lsn = rc->rc_lsn;
	ri->ri.ri_payload = ri->ri_data;
	sx_list_add_tail(&ri->ri_list, &rc->rc_intents);
	return 0;
}

/* Dispatch one op. */
static int sx_recover_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	struct sx_recover *rc = arg;
	u16 type = le16_to_cpu(op->lo_type);
	int error;

	rc->rc_seq++;
	if (rc->rc_pass == 2)
		rc->rc_mp->m_rstats.rs_ops++;
	switch (type) {
	case SX_LOG_OP_BUF:
		error = sx_recover_buf_op(rc, op, payload);
		break;
	case SX_LOG_OP_TRANS_END:
		error = SX_IS_CORRUPT(rc->rc_mp, le32_to_cpu(op->lo_len) != 0) ? -EFSCORRUPTED : 0;
		break;
	case SX_LOG_OP_MANIFEST:
		error = 0;	/* the scan checked the data it lists */
		break;
	default:
		error = sx_recover_item_op(rc, op, payload);
		break;
	}
	return error;
}

/* One valid record of the scan. */
static int sx_recover_record(void *arg, const struct sx_log_scan_rec *r)
{
	struct sx_recover *rc = arg;
	const char *why;
	int error;

	rc->rc_lsn = r->sr_lsn;
	if (rc->rc_pass == 1) {
		if (rc->rc_nrecs == rc->rc_recs_cap) {
			u32 cap = rc->rc_recs_cap ? rc->rc_recs_cap * 2 : 64;
			struct sx_log_scan_rec *n = sx_alloc(sizeof(*n) * cap, 0);

			if (!n)
				return -ENOMEM;
			if (rc->rc_nrecs)
				memcpy(n, rc->rc_recs, sizeof(*n) * rc->rc_nrecs);
			sx_free(rc->rc_recs);
			rc->rc_recs = n;
			rc->rc_recs_cap = cap;
		}
		rc->rc_recs[rc->rc_nrecs] = *r;
		rc->rc_recs[rc->rc_nrecs++].sr_buf = NULL;
	}
	error = sx_log_rec_walk_ops(r->sr_buf, r->sr_blocks * rc->rc_mp->m_bsize,
				    sx_recover_op, rc, &why);
	/* sx_log_scan() walked these ops already: only an op's own check fails here */
	ASSERT(!why);
	return error;
}

/* Forget what pass 1 noted (cancels, records), to walk it again. */
static void sx_recover_reset(struct sx_recover *rc)
{
	struct sx_list *pos, *n;
	int i;

	for (i = 0; i < SX_RHASH; i++) {
		sx_list_for_each_safe(pos, n, &rc->rc_cancels[i]) {
			sx_list_del(pos);
			sx_free(sx_list_entry(pos, struct sx_rcancel, cn_hash));
		}
	}
	rc->rc_nrecs = 0;
	rc->rc_seq = 0;
}

/* Free what the recovery state still holds. */
static void sx_recover_free(struct sx_recover *rc)
{
	struct sx_list *pos, *n;
	int i;

	sx_recover_reset(rc);
	for (i = 0; i < SX_RHASH; i++) {
		sx_list_for_each_safe(pos, n, &rc->rc_bufs[i]) {
			sx_list_del(pos);
			sx_free(sx_list_entry(pos, struct sx_rbuf, rb_hash));
		}
	}
	sx_list_for_each_safe(pos, n, &rc->rc_intents) {
		sx_list_del(pos);
		sx_free(sx_list_entry(pos, struct sx_rintent, ri_list));
	}
	sx_free(rc->rc_recs);
	sx_free(rc);
}

/*
 * Passes 1 and 2, then set up the log for writing.  Unfinished intents stay
 * queued in mp for sx_log_recover_intents().
 */
int sx_log_recover_replay(struct sx_mount *mp, bool *dirty)
{
	struct sx_recover *rc;
	struct sx_log_scan scan;
	u64 limit = 0, bad_bno = 0;
	u32 dropped = 0;
	int error, i;

	*dirty = false;
	rc = sx_zalloc(sizeof(*rc), 0);
	if (!rc)
		return -ENOMEM;
	rc->rc_mp = mp;
	for (i = 0; i < SX_RHASH; i++) {
		sx_list_init(&rc->rc_bufs[i]);
		sx_list_init(&rc->rc_cancels[i]);
	}
	sx_list_init(&rc->rc_intents);

	/* pass 1: find the head and every cancelled block */
	rc->rc_pass = 1;
	error = sx_log_scan(mp, sx_recover_record, rc, &scan);
	if (error)
		goto out_free;
	if (scan.sc_stop == SX_LOG_STOP_DATA) {
		/*
		 * The last force's data did not all reach the media: it was
		 * never acknowledged, and the log ends before it.  Pass 1 saw
		 * its records too; see the log again without them.
		 */
		sx_warn(mp, "recovery: block %llu does not hold what the last force (%u records from LSN %u/%u) wrote there; dropping that force",
			(unsigned long long)scan.sc_bad_bno, scan.sc_dropped,
			SX_LSN_CYCLE(scan.sc_head), SX_LSN_BLOCK(scan.sc_head));
		limit = scan.sc_head;
		dropped = scan.sc_dropped;
		bad_bno = scan.sc_bad_bno;
		sx_recover_reset(rc);
		error = sx_log_scan_to(mp, limit, sx_recover_record, rc, &scan);
		if (error)
			goto out_free;
		ASSERT(scan.sc_head == limit);
		scan.sc_dropped = dropped;
		scan.sc_bad_bno = bad_bno;
	}
	/* a scan stopped by a read error returns that error */
	ASSERT(scan.sc_stop != SX_LOG_STOP_IO);
	mp->m_rstats.rs_records = scan.sc_records;
	mp->m_rstats.rs_head_lsn = scan.sc_head;
	mp->m_rstats.rs_tail_lsn = mp->m_sb.sb_log_tail;
	mp->m_rstats.rs_stop_reason = scan.sc_stop;
	mp->m_rstats.rs_dropped = dropped;
	if (scan.sc_records && (mp->m_flags & SX_MF_RDONLY)) {
		sx_err(mp, "log needs recovery; cannot mount read-only");
		error = -EROFS;
		goto out_free;
	}

	if (scan.sc_records) {
		/* pass 2: replay, pair intents */
		rc->rc_pass = 2;
		rc->rc_head = scan.sc_head;
		rc->rc_seq = 0;
		error = sx_log_scan_to(mp, limit, sx_recover_record, rc, &scan);
		if (!error)
			error = sx_recover_flush_bufs(rc);
		if (!error)
			error = sx_dev_flush(mp);
		if (error)
			goto out_free;
		*dirty = true;
		sx_info(mp, "recovery: %u records, %llu changes replayed, %llu skipped",
			scan.sc_records, (unsigned long long)mp->m_rstats.rs_bufs_replayed,
			(unsigned long long)mp->m_rstats.rs_bufs_skipped);
	}

	/* the next record continues the chain at the head */
	if (scan.sc_epoch > mp->m_sb.sb_log_epoch)
		mp->m_sb.sb_log_epoch = scan.sc_epoch;
	error = sx_log_init(mp, scan.sc_head, scan.sc_head_prev_crc, scan.sc_max_tid + 1);
	if (error)
		goto out_free;
	if (dropped) {
		/*
		 * The dropped force's records still chain from the head: the
		 * mount's checkpoint writes a fence over its first record (in
		 * a new epoch, so nothing after it chains to the fence), and
		 * a later crash cannot bring the force back.
		 */
		sx_log_want_fence(mp);
		*dirty = true;
	}
	for (i = 0; i < (int)rc->rc_nrecs; i++) {
		error = sx_log_note_record(mp, rc->rc_recs[i].sr_lsn, rc->rc_recs[i].sr_prev_crc);
		if (error)
			goto out_free;
	}
	while (!sx_list_empty(&rc->rc_intents)) {
		struct sx_rintent *ri = sx_list_first(&rc->rc_intents, struct sx_rintent,
						      ri_list);

		error = sx_log_track_intent(mp, ri->ri.ri_id, ri->ri.ri_lsn);
		if (error)
			goto out_free;
		sx_list_del(&ri->ri_list);
		sx_list_add_tail(&ri->ri_list, &mp->m_rintents);
	}
out_free:
	sx_recover_free(rc);
	return error;
}

/* Drop the intents replay queued in mp: the mount failed before pass 3. */
void sx_log_recover_cancel(struct sx_mount *mp)
{
	struct sx_list *pos, *n;

	/* sx_mount() sets the list up before anything can fail */
	ASSERT(mp->m_rintents.next);
	sx_list_for_each_safe(pos, n, &mp->m_rintents) {
		sx_list_del(pos);
		sx_free(sx_list_entry(pos, struct sx_rintent, ri_list));
	}
}

/*
 * Pass 3: finish every unfinished intent in log order.  A failure stops the
 * mount without moving the tail, so the next mount tries again from the same
 * log.
 */
int sx_log_recover_intents(struct sx_mount *mp)
{
	int error = 0;

	while (!sx_list_empty(&mp->m_rintents)) {
		struct sx_rintent *ri = sx_list_first(&mp->m_rintents, struct sx_rintent,
						      ri_list);
		const struct sx_item_ops *ops = sx_item_lookup(ri->ri.ri_type);

		/*
		 * Replay queued only types registered as intents, which have
		 * io_recover, and the registry does not change during a mount.
		 */
		ASSERT(ops && ops->io_recover);
		if (!error) {
			if (ops->io_validate &&
			    ops->io_validate(ops, mp, ri->ri.ri_payload, ri->ri.ri_len)) {
				sx_err(mp, "%s intent %llx failed validation", ops->io_name,
				       (unsigned long long)ri->ri.ri_id);
				error = -EFSCORRUPTED;
			} else {
				error = ops->io_recover(ops, mp, &ri->ri);
				if (!error)
					mp->m_rstats.rs_intents++;
			}
		}
		sx_list_del(&ri->ri_list);
		sx_free(ri);
	}
	/* the intents of deferred types were captured above; finish them now */
	if (!error)
		error = sx_defer_recover_finish(mp);
	else
		sx_defer_recover_cancel(mp);
	if (error) {
		sx_force_shutdown(mp, error,
				  "intent recovery failed (%d); the log is left for the next mount",
				  error);
		return error;
	}
	error = sx_log_force(mp);
	if (!error && sx_log_outstanding_intents(mp) != 0) {
		sx_err(mp, "recovered intents were not finished by done items");
		error = -EFSCORRUPTED;
	}
	return error;
}
