// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Log recovery's refusals and edges, with logs written by the engine and
 * then rewritten here (CRC recomputed, so only recovery's own checks stand
 * between the damage and the disk): malformed buffer ops, a replay that
 * makes a block of no known type, intents that are unknown, short, repeated,
 * never finished or whose items do not decode (EFI, CUI, BUI, and the
 * deferred-op payload around them), an epoch that goes backwards, a
 * superblock whose epoch is behind its log, a replay of more blocks than
 * recovery holds at once, and read errors and failed allocations anywhere
 * in a recovering mount; failed allocations in a chain of deferred items.
 * Also the item registry's own checks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include "sxtest.h"
#include "sxtext.h"
#include "sxcrash.h"
#include "sxswap.h"
#include <swapext/swap_log.h>
#include "log_recover.h"
#include "sb.h"
#include "inode.h"
#include "file.h"
#include "bmap.h"
#include "defer.h"
#include "item_bmap.h"
#include "item_efi.h"
#include "item_refc.h"
#include "refcount.h"
#include "reflink.h"
#include "dev.h"
#include <swapext/device.h>

#define MIB		(1ull << 20)
#define BS		4096u

/*
 * The engine's messages since the last msgs_expect(): a refusal must be the
 * one the test provoked, not some other check that happens to fail first.
 */
static struct sxt_text msgs;

static void msg_cb(void *arg, enum sx_log_level level, const char *msg)
{
	if (level > SX_LOG_WARN)
		return;
	sxt_text_line(&msgs, "%s", msg);
	if (getenv("SX_TEST_VERBOSE"))
		fprintf(stderr, "%s\n", msg);
}

/* The messages since the last call include @s; forget them. */
static void msgs_expect(const char *s)
{
	if (s && !sxt_text_has(&msgs, s))
		fail_msg("no engine message with \"%s\"; got:\n%s", s,
			 msgs.text ? msgs.text : "(none)");
	sxt_text_free(&msgs);
}

/* First free data block (mkfs takes fsinfo and the root directory's inode). */
static u64 data0(struct sx_mount *mp)
{
	return mp->m_sb.sb_datastart + 2;
}

/* Write test block @blkno at @gen in its own transaction. */
static void put_tblock(struct sx_mount *mp, u64 blkno, u64 gen, u32 flags)
{
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), flags, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, blkno, gen), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
}

/* Log one item of @type in a transaction of its own, durable at once. */
static void log_item(struct sx_mount *mp, u16 type, const void *payload, u32 len)
{
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(mp, 4096, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sx_trans_log_item(tp, type, payload, len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
}

/* Lose power: nothing more reaches the device, the log needs recovery. */
static void crash(struct sx_mount *mp)
{
	sx_shutdown(mp);
	sx_unmount(mp);
}

/* ------------------------------------------------------------ records */

/* A record read off the device to be rewritten, its CRC recomputed. */
struct xrec {
	struct sx_bdev	*bd;
	u64		off;		/* byte offset on the device */
	u32		bytes;
	u8		*buf;
};

/* Read the record at @lsn. */
static void rec_get(struct sx_bdev *bd, u64 lsn, struct xrec *r)
{
	struct sx_sb sb;
	struct sx_dlog_rec hdr;

	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	r->bd = bd;
	r->off = (sb.sb_logstart + SX_LSN_BLOCK(lsn)) * (u64)sb.sb_blocksize;
	sxt_bdev_peek(bd, r->off, &hdr, sizeof(hdr));
	assert_int_equal(le32_to_cpu(hdr.lr_magic), SX_LOG_MAGIC);
	assert_int_equal(le64_to_cpu(hdr.lr_lsn), lsn);
	r->bytes = le32_to_cpu(hdr.lr_blocks) * sb.sb_blocksize;
	r->buf = malloc(r->bytes);
	assert_non_null(r->buf);
	sxt_bdev_peek(bd, r->off, r->buf, r->bytes);
}

static struct sx_dlog_rec *rec_hdr(struct xrec *r)
{
	return (struct sx_dlog_rec *)r->buf;
}

/* Op @i of the record. */
static struct sx_dlog_op *rec_op(struct xrec *r, u32 i)
{
	u8 *p = r->buf + sizeof(struct sx_dlog_rec);

	assert_true(i < le32_to_cpu(rec_hdr(r)->lr_nops));
	while (i--)
		p += sizeof(struct sx_dlog_op) +
		     sx_roundup(le32_to_cpu(((struct sx_dlog_op *)p)->lo_len), SX_LOG_OP_ALIGN);
	return (struct sx_dlog_op *)p;
}

/* The first op of @type (the test fails if there is none). */
static struct sx_dlog_op *rec_find(struct xrec *r, u16 type, u32 nth)
{
	u32 i, n = le32_to_cpu(rec_hdr(r)->lr_nops);

	for (i = 0; i < n; i++)
		if (le16_to_cpu(rec_op(r, i)->lo_type) == type && nth-- == 0)
			return rec_op(r, i);
	fail_msg("no op of type 0x%x in the record", type);
	return NULL;
}

/*
 * Give @op a payload of @len bytes, moving the ops after it, so that the
 * record stays well formed (sx_log_rec_walk_ops() accepts it).
 */
static void rec_resize_op(struct xrec *r, struct sx_dlog_op *op, u32 len)
{
	struct sx_dlog_rec *rec = rec_hdr(r);
	u8 *payload = (u8 *)(op + 1);
	u8 *end = r->buf + sizeof(*rec) + le32_to_cpu(rec->lr_len);
	u32 oldpad = sx_roundup(le32_to_cpu(op->lo_len), SX_LOG_OP_ALIGN);
	u32 newpad = sx_roundup(len, SX_LOG_OP_ALIGN);

	assert_true(end - r->buf + newpad - oldpad <= r->bytes);
	memmove(payload + newpad, payload + oldpad, end - (payload + oldpad));
	if (newpad < oldpad)
		memset(end - (oldpad - newpad), 0, oldpad - newpad);
	rec->lr_len = cpu_to_le32(le32_to_cpu(rec->lr_len) + newpad - oldpad);
	op->lo_len = cpu_to_le32(len);
}

/* Write the record back with a CRC that matches what it now says. */
static void rec_put(struct xrec *r)
{
	struct sx_dlog_rec *rec = rec_hdr(r);

	rec->lr_crc = cpu_to_le32(sx_cksum_skip(r->buf, r->bytes,
						offsetof(struct sx_dlog_rec, lr_crc)));
	sxt_bdev_poke(r->bd, r->off, r->buf, r->bytes);
	free(r->buf);
	r->buf = NULL;
}

/*
 * An image whose log ends with one record that changes test block @b to
 * generation 1 (ops: the BUF of the whole block, TRANS_END); *@lsn is it.
 */
static struct sx_bdev *tblock_image(u64 *b, u64 *lsn)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);

	*b = data0(mp);
	*lsn = sx_log_head(mp);
	put_tblock(mp, *b, 1, SX_TRANS_SYNC);
	crash(mp);
	return bd;
}

/*
 * The checker, which checks each op as recovery will replay it, reports
 * @what about the log of @bd.
 */
static void checker_says(struct sx_bdev *bd, const char *what)
{
	struct sxt_text t = { 0 };

	assert_true(sxc_checker(bd, SX_CHECK_SPACE_ONLY, &t) > 0);
	if (!sxt_text_has(&t, what))
		fail_msg("the checker does not say \"%s\":\n%s", what, t.text ? t.text : "");
	sxt_text_free(&t);
}

/* The log printer, which decodes what it can of a bad op, prints @what. */
static void logprint_says(struct sx_bdev *bd, const char *what)
{
	struct sxt_text t = { 0 };

	assert_int_equal(sx_logprint(bd, sxt_text_line, &t), 0);
	if (!sxt_text_has(&t, what))
		fail_msg("the log printer does not say \"%s\":\n%s", what, t.text ? t.text : "");
	sxt_text_free(&t);
}

/*
 * The mount of @bd is refused as corrupt and writes nothing: recovery
 * checks before it replays.  A second try is refused the same way.
 */
static void refused_untouched(struct sx_bdev *bd, const char *why)
{
	struct sx_mount *mp;
	u64 before = sxt_bdev_digest(bd);

	msgs_expect(NULL);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	msgs_expect(why);
	assert_int_equal(sxt_bdev_digest(bd), before);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	msgs_expect(why);
}

/* The unchanged image recovers: what the tests below break was the cause. */
static void test_control_recovers(void **state)
{
	u64 b, lsn, gen;
	struct sx_bdev *bd = tblock_image(&b, &lsn);
	struct sx_mount *mp;
	struct xrec r;

	/* rewriting a record unchanged keeps it valid */
	rec_get(bd, lsn, &r);
	rec_put(&r);
	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 1);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Each malformed field of a BUF op, in a record whose CRC is good, is refused. */
static void test_bad_buf_ops(void **state)
{
	enum { SHORT, LOW, HIGH, FLAGS, NREGIONS, ZERO_REGION, REGION_PAST, SIZE_MISMATCH,
	       TRANS_END_BYTES, DATA_CANCEL, DATA_PART, NCASES };
	u64 b, lsn;
	struct sx_bdev *good = tblock_image(&b, &lsn);
	struct sx_sb sb;
	static const char *const why[NCASES] = {
		[SHORT] = "len < sizeof(*lb)",
		[LOW] = "blkno < mp->m_sb.sb_bmapstart",
		[HIGH] = "blkno >= mp->m_sb.sb_dblocks",
		[FLAGS] = "le32_to_cpu(lb->lb_flags) & ~SX_LB_FLAGS_ALL",
		[NREGIONS] = "(u64)nreg * sizeof(*rg) > len - sizeof(*lb)",
		[ZERO_REGION] = "rlen == 0 ||",
		[REGION_PAST] = "(u64)off + rlen > mp->m_bsize",
		[SIZE_MISMATCH] = "need != len",
		[TRANS_END_BYTES] = "le32_to_cpu(op->lo_len) != 0",
		[DATA_CANCEL] = "(flags & SX_LB_DATA) &&",
		[DATA_PART] = "(flags & SX_LB_DATA) &&",
	};
	static const char *const checker_why[NCASES] = {
		[SHORT] = "BUF payload of 8 bytes is shorter than its header",
		[LOW] = "is outside the metadata area",
		[HIGH] = "is outside the metadata area",
		[FLAGS] = "has unknown flags 0x100",
		[NREGIONS] = "1000 regions do not fit",
		[ZERO_REGION] = "region 0 (offset 0, 0 bytes) is outside the block",
		[REGION_PAST] = "region 0 (offset 8, 4096 bytes) is outside the block",
		[SIZE_MISMATCH] = "regions need 4112 bytes, the op has 4120",
		[TRANS_END_BYTES] = "TRANS_END carries 8 bytes",
		[DATA_CANCEL] = "a data image must be one whole block, not a cancel",
		[DATA_PART] = "a data image must be one whole block, not a cancel",
	};
	static const char *const logprint_what[NCASES] = {
		[SHORT] = "payload of 8 bytes is too short for a BUF header",
		[NREGIONS] = "regions: 1000 descriptors do not fit the 4120-byte payload",
		[TRANS_END_BYTES] = "8 bytes of payload (should be none)",
	};
	int c;

	assert_int_equal(sx_sb_read(NULL, good, &sb, NULL), 0);
	for (c = 0; c < NCASES; c++) {
		struct sx_bdev *bd = sxt_bdev_copy(good);
		struct sx_dlog_op *op;
		struct sx_dlog_buf *lb;
		struct sx_dlog_region *rg;
		struct xrec r;

		rec_get(bd, lsn, &r);
		op = rec_find(&r, SX_LOG_OP_BUF, 0);
		lb = (struct sx_dlog_buf *)(op + 1);
		rg = (struct sx_dlog_region *)(lb + 1);
		assert_int_equal(le64_to_cpu(lb->lb_blkno), b);
		assert_int_equal(le16_to_cpu(lb->lb_nregions), 1);
		switch (c) {
		case SHORT:		/* too short for its own header */
			rec_resize_op(&r, op, sizeof(*lb) - 8);
			break;
		case LOW:		/* the superblock or the log */
			lb->lb_blkno = cpu_to_le64(sb.sb_bmapstart - 1);
			break;
		case HIGH:
			lb->lb_blkno = cpu_to_le64(sb.sb_dblocks);
			break;
		case FLAGS:
			lb->lb_flags = cpu_to_le32(0x100);
			break;
		case NREGIONS:		/* more region headers than bytes */
			lb->lb_nregions = cpu_to_le16(1000);
			break;
		case ZERO_REGION:
			rg->lg_len = 0;
			break;
		case REGION_PAST:	/* the region runs past the block's end */
			rg->lg_off = cpu_to_le32(8);
			break;
		case SIZE_MISMATCH:	/* the regions say fewer bytes than the op has */
			rg->lg_len = cpu_to_le32(BS - 8);
			break;
		case TRANS_END_BYTES:	/* the end of a transaction carries nothing */
			rec_resize_op(&r, rec_find(&r, SX_LOG_OP_TRANS_END, 0), 8);
			break;
		case DATA_CANCEL:	/* file data is never cancelled */
			lb->lb_flags = cpu_to_le32(SX_LB_DATA | SX_LB_CANCEL);
			break;
		case DATA_PART:		/* file data is logged whole: two halves will not do */
			lb->lb_flags = cpu_to_le32(SX_LB_DATA);
			lb->lb_nregions = cpu_to_le16(2);
			rec_resize_op(&r, op, le32_to_cpu(op->lo_len) + sizeof(*rg));
			lb = (struct sx_dlog_buf *)(op + 1);
			rg = (struct sx_dlog_region *)(lb + 1);
			memmove(rg + 2, rg + 1, BS);
			rg[0].lg_off = 0;
			rg[0].lg_len = cpu_to_le32(BS / 2);
			rg[1].lg_off = cpu_to_le32(BS / 2);
			rg[1].lg_len = cpu_to_le32(BS / 2);
			break;
		}
		rec_put(&r);
		checker_says(bd, checker_why[c]);
		if (logprint_what[c])
			logprint_says(bd, logprint_what[c]);
		refused_untouched(bd, why[c]);
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(good);
}

/*
 * A replay that leaves a block with no known magic is refused before
 * anything of the replay is written.
 */
static void test_replay_unknown_magic(void **state)
{
	u64 b, lsn;
	struct sx_bdev *bd = tblock_image(&b, &lsn);
	struct sx_dlog_op *op;
	struct sx_dlog_buf *lb;
	struct sx_dblk_hdr *hdr;
	struct xrec r;

	rec_get(bd, lsn, &r);
	op = rec_find(&r, SX_LOG_OP_BUF, 0);
	lb = (struct sx_dlog_buf *)(op + 1);
	/* the region is the whole block, header first */
	hdr = (struct sx_dblk_hdr *)((u8 *)(lb + 1) + sizeof(struct sx_dlog_region));
	assert_int_equal(le32_to_cpu(hdr->bh_magic), SXT_TB_MAGIC);
	hdr->bh_magic = cpu_to_le32(0x0badf00d);
	rec_put(&r);
	refused_untouched(bd, "a block of no known type (magic 0x0badf00d)");
	sx_bdev_destroy(bd);
}

/*
 * A record whose CRC is right was written whole by this engine, so ops
 * that do not add up to it are corruption, not a torn end of the log:
 * the mount is refused, naming what does not add up.
 */
static void test_malformed_record(void **state)
{
	enum { NOPS_MORE, NOPS_LESS, PAYLOAD_PAST, TYPE_ZERO, TID_BACK, NCASES };
	static const char *const why[NCASES] = {
		[NOPS_MORE] = "is malformed: op header past the end",
		[NOPS_LESS] = "is malformed: bytes after the last op",
		[PAYLOAD_PAST] = "is malformed: op payload past the end",
		[TYPE_ZERO] = "is malformed: unknown op type",
		[TID_BACK] = "is malformed: transaction ids go backwards",
	};
	u64 b, lsn;
	struct sx_bdev *good = tblock_image(&b, &lsn);
	int c;

	for (c = 0; c < NCASES; c++) {
		struct sx_bdev *bd = sxt_bdev_copy(good);
		struct sx_dlog_rec *rec;
		struct sx_dlog_op *op;
		struct xrec r;

		rec_get(bd, lsn, &r);
		rec = rec_hdr(&r);
		op = rec_find(&r, SX_LOG_OP_TRANS_END, 0);
		switch (c) {
		case NOPS_MORE:
			rec->lr_nops = cpu_to_le32(le32_to_cpu(rec->lr_nops) + 1);
			break;
		case NOPS_LESS:
			rec->lr_nops = cpu_to_le32(le32_to_cpu(rec->lr_nops) - 1);
			break;
		case PAYLOAD_PAST:
			op->lo_len = cpu_to_le32(64);
			break;
		case TYPE_ZERO:
			op->lo_type = 0;
			break;
		case TID_BACK:
			rec->lr_first_tid = cpu_to_le64(le64_to_cpu(op->lo_tid) + 1);
			break;
		}
		rec_put(&r);
		refused_untouched(bd, why[c]);
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(good);
}

static int count_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	return ++*(int *)arg == 2 ? -EAGAIN : 0;
}

/*
 * The op walker that recovery, the checker and the log printer share:
 * ops that claim more than the buffer holds are refused before any is
 * looked at, and a callback's error stops the walk.
 */
static void test_walk_ops(void **state)
{
	u64 b, lsn;
	struct sx_bdev *bd = tblock_image(&b, &lsn);
	const char *why;
	struct xrec r;
	int n = 0;

	rec_get(bd, lsn, &r);
	assert_int_equal(le32_to_cpu(rec_hdr(&r)->lr_nops), 2);
	assert_int_equal(sx_log_rec_walk_ops(r.buf, r.bytes, NULL, NULL, &why), 0);
	assert_null(why);
	/* the callback sees each op until it fails; its error is the walk's */
	assert_int_equal(sx_log_rec_walk_ops(r.buf, r.bytes, count_op, &n, &why), -EAGAIN);
	assert_int_equal(n, 2);
	assert_null(why);
	/* a buffer shorter than the ops the header claims */
	assert_int_equal(sx_log_rec_walk_ops(r.buf, sizeof(struct sx_dlog_rec) + 8, NULL, NULL,
					     &why), -EFSCORRUPTED);
	assert_string_equal(why, "ops overrun the record");
	free(r.buf);
	sx_bdev_destroy(bd);
}

/* ------------------------------------------------------------ intents */

/* Intent and done types of this file's own items (free numbers below the test types). */
#define XT_INTENT	0x70
#define XT_DONE		0x71
#define XT_LAZY		0x72	/* an intent whose recovery forgets its done item */
#define XT_LAZY_DONE	0x73

static u32 xt_recovered;

/* Finish an XT_INTENT: log its done item, which is all its work. */
static int xt_recover(const struct sx_item_ops *ops, struct sx_mount *mp,
		      const struct sx_recovered_intent *ri)
{
	struct sx_dlog_intent done = { .li_id = cpu_to_le64(ri->ri_id) };
	struct sx_trans *tp;
	int error;

	xt_recovered++;
	error = sx_trans_alloc(mp, 1024, 0, &tp);
	if (error)
		return error;
	error = sx_trans_log_item(tp, ops->io_done_type, &done, sizeof(done));
	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

/* A buggy recovery: says it finished the intent, logs nothing. */
static int xt_lazy_recover(const struct sx_item_ops *ops, struct sx_mount *mp,
			   const struct sx_recovered_intent *ri)
{
	xt_recovered++;
	return 0;
}

static const struct sx_item_ops xt_intent_ops = {
	.io_type = XT_INTENT, .io_done_type = XT_DONE, .io_name = "XT",
	.io_recover = xt_recover,
};
static const struct sx_item_ops xt_done_ops = { .io_type = XT_DONE };
static const struct sx_item_ops xt_lazy_ops = {
	.io_type = XT_LAZY, .io_done_type = XT_LAZY_DONE, .io_recover = xt_lazy_recover,
};
static const struct sx_item_ops xt_lazy_done_ops = { .io_type = XT_LAZY_DONE };

/* The registries check what they are given; the item registry names every type. */
static void test_item_registry(void **state)
{
	struct sx_item_ops bad = xt_intent_ops;

	assert_int_equal(sx_item_register(NULL), -EINVAL);
	bad.io_type = 0;
	assert_int_equal(sx_item_register(&bad), -EINVAL);
	bad.io_type = SX_LOG_OP_MAX;
	assert_int_equal(sx_item_register(&bad), -EINVAL);
	bad.io_type = SX_LOG_OP_BUF;
	assert_int_equal(sx_item_register(&bad), -EINVAL);
	bad.io_type = SX_LOG_OP_TRANS_END;
	assert_int_equal(sx_item_register(&bad), -EINVAL);
	bad = xt_intent_ops;
	bad.io_done_type = SX_LOG_OP_MAX;
	assert_int_equal(sx_item_register(&bad), -EINVAL);
	bad.io_done_type = XT_INTENT;		/* its own done type */
	assert_int_equal(sx_item_register(&bad), -EINVAL);
	bad = xt_intent_ops;
	bad.io_recover = NULL;			/* an intent recovery cannot finish */
	assert_int_equal(sx_item_register(&bad), -EINVAL);
	assert_null(sx_item_lookup(XT_INTENT));

	assert_int_equal(sx_item_register(&xt_intent_ops), 0);
	assert_int_equal(sx_item_register(&xt_intent_ops), -EEXIST);
	/* only the registered table is forgotten */
	sx_item_unregister(&bad);
	assert_ptr_equal(sx_item_lookup(XT_INTENT), &xt_intent_ops);
	assert_true(sx_item_is_intent(XT_INTENT));
	assert_true(sx_item_is_done(XT_DONE));
	assert_false(sx_item_is_done(0));
	assert_false(sx_item_is_done(XT_INTENT));
	assert_string_equal(sx_item_name(XT_INTENT), "XT");
	assert_string_equal(sx_item_name(SX_LOG_OP_EFI), "EFI");
	assert_string_equal(sx_item_name(XT_LAZY), "UNKNOWN");
	assert_string_equal(sx_item_name(0xffff), "UNKNOWN");
	assert_null(sx_item_lookup(0xffff));
	sx_item_unregister(&xt_intent_ops);
	assert_null(sx_item_lookup(XT_INTENT));
	assert_false(sx_item_is_intent(XT_INTENT));
	sx_item_unregister(NULL);

	/* block types: once per magic; the same table again is no change */
	{
		struct sx_buf_ops other = sxt_tblock_ops;

		assert_int_equal(sx_buf_type_register(&sxt_tblock_ops), 0);
		assert_int_equal(sx_buf_type_register(&other), -EEXIST);
		assert_ptr_equal(sx_buf_type_lookup(SXT_TB_MAGIC), &sxt_tblock_ops);
	}
}

/* An image with one unfinished XT intent of id @id. */
static struct sx_bdev *xt_image(u16 type, u64 *lsn)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_dlog_intent li = { 0 };

	li.li_id = cpu_to_le64(sx_log_next_intent_id(mp));
	li.li_nitems = cpu_to_le32(1);
	*lsn = sx_log_head(mp);
	log_item(mp, type, &li, sizeof(li));
	crash(mp);
	return bd;
}

/*
 * A log holding an item type this engine does not know is refused: it
 * cannot be finished, and skipping it could lose work.  The engine that
 * knows the type recovers the same log.
 */
static void test_unknown_item_type(void **state)
{
	struct sx_bdev *bd;
	struct sx_mount *mp;
	u64 lsn;

	assert_int_equal(sx_item_register(&xt_intent_ops), 0);
	assert_int_equal(sx_item_register(&xt_done_ops), 0);
	bd = xt_image(XT_INTENT, &lsn);
	sx_item_unregister(&xt_done_ops);
	sx_item_unregister(&xt_intent_ops);
	checker_says(bd, "item type 0x70 (UNKNOWN) is not known to this engine");
	refused_untouched(bd, "item type 0x70 that this engine does not know");

	assert_int_equal(sx_item_register(&xt_intent_ops), 0);
	assert_int_equal(sx_item_register(&xt_done_ops), 0);
	xt_recovered = 0;
	mp = sxt_mount(bd);
	assert_int_equal(xt_recovered, 1);
	assert_int_equal(mp->m_rstats.rs_intents, 1);
	assert_int_equal(sx_log_outstanding_intents(mp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_item_unregister(&xt_done_ops);
	sx_item_unregister(&xt_intent_ops);
	sx_bdev_destroy(bd);
}

/*
 * An intent's recovery that returns success without logging the done item
 * fails the mount: the intent would otherwise pin the log's tail forever.
 */
static void test_intent_left_unfinished(void **state)
{
	struct sx_bdev *bd;
	struct sx_mount *mp;
	u64 lsn;

	assert_int_equal(sx_item_register(&xt_lazy_ops), 0);
	assert_int_equal(sx_item_register(&xt_lazy_done_ops), 0);
	bd = xt_image(XT_LAZY, &lsn);
	xt_recovered = 0;
	msgs_expect(NULL);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	msgs_expect("recovered intents were not finished by done items");
	assert_int_equal(xt_recovered, 1);
	sx_item_unregister(&xt_lazy_done_ops);
	sx_item_unregister(&xt_lazy_ops);
	sx_bdev_destroy(bd);
}

/* An intent op too short for the intent header is refused. */
static void test_intent_too_short(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct xrec r;
	u64 lsn = sx_log_head(mp), id;

	assert_int_equal(sx_trans_alloc(mp, 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, data0(mp), 3, &id), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	crash(mp);
	rec_get(bd, lsn, &r);
	rec_resize_op(&r, rec_find(&r, SX_LOG_OP_TEST_INTENT, 0),
		      sizeof(struct sx_dlog_intent) - 8);
	rec_put(&r);
	checker_says(bd, "TEST_INTENT payload of 8 bytes is shorter than its header");
	logprint_says(bd, "intent, payload of 8 bytes is too short for an item header");
	refused_untouched(bd, "len < sizeof(*li)");
	sx_bdev_destroy(bd);
}

/* Two unfinished intents with one id are refused: a done item could not say which. */
static void test_intent_id_repeated(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_dlog_intent *li0, *li1;
	struct sx_trans *tp;
	struct xrec r;
	u64 lsn = sx_log_head(mp), id0, id1, gen;

	assert_int_equal(sx_trans_alloc(mp, 2048, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, data0(mp), 3, &id0), 0);
	assert_int_equal(sxt_log_test_intent(tp, data0(mp) + 1, 4, &id1), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	crash(mp);
	{
		/* control: as logged, both are finished */
		struct sx_bdev *copy = sxt_bdev_copy(bd);

		mp = sxt_mount(copy);
		assert_int_equal(sxt_tblock_read(mp, data0(mp) + 1, &gen), 0);
		assert_int_equal(gen, 4);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(copy);
	}
	rec_get(bd, lsn, &r);
	li0 = (struct sx_dlog_intent *)(rec_find(&r, SX_LOG_OP_TEST_INTENT, 0) + 1);
	li1 = (struct sx_dlog_intent *)(rec_find(&r, SX_LOG_OP_TEST_INTENT, 1) + 1);
	assert_int_equal(le64_to_cpu(li0->li_id), id0);
	li1->li_id = li0->li_id;
	rec_put(&r);
	refused_untouched(bd, "ri != NULL");
	sx_bdev_destroy(bd);
}

/* ------------------------------------------------------------ deferred items */

/* An intent of a deferred type: header and up to 4 items of any log size. */
struct dintent {
	struct sx_dlog_intent	hdr;
	u8			items[4 * 40];
};

/*
 * Log @len bytes of @di as an intent of @type on a fresh image (with
 * @prep's setup first), crash, and return the mount's result; on success
 * *@mpp is the mount.
 */
static int recover_intent(struct sx_bdev *bd, u16 type, struct dintent *di, u32 len,
			  struct sx_mount **mpp)
{
	struct sx_mount *mp = sxt_mount(bd);

	di->hdr.li_id = cpu_to_le64(sx_log_next_intent_id(mp));
	log_item(mp, type, di, len);
	crash(mp);
	*mpp = NULL;
	msgs_expect(NULL);
	return sx_mount(bd, NULL, mpp);
}

/* Allocate @len blocks in one extent; return its start. */
static u64 alloc_blocks(struct sx_mount *mp, u32 len)
{
	struct sx_trans *tp;
	u64 bno;
	u32 got;

	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, len, len, &bno, &got), 0);
	assert_int_equal(got, len);
	assert_int_equal(sx_trans_commit(tp), 0);
	return bno;
}

/* The payload around the items: length, item count and padding are checked. */
static void test_defer_payload_checked(void **state)
{
	enum { NOITEMS, TOOMANY, LENGTH, PAD, NCASES };
	struct sx_bdev *bd0 = sxt_memfs(8 * MIB, BS, 0), *bd;
	struct sx_mount *mp = sxt_mount(bd0);
	struct sx_dlog_efi *ef;
	struct dintent di;
	u64 bno = alloc_blocks(mp, 4), free0 = sx_alloc_free_blocks(mp);
	u32 len;
	int c;

	assert_int_equal(sx_unmount(mp), 0);
	for (c = 0; c <= NCASES; c++) {
		memset(&di, 0, sizeof(di));
		ef = (struct sx_dlog_efi *)di.items;
		ef->ef_startblock = cpu_to_le64(bno);
		ef->ef_blockcount = cpu_to_le32(4);
		di.hdr.li_nitems = cpu_to_le32(1);
		len = sizeof(di.hdr) + sizeof(*ef);
		switch (c) {
		case NOITEMS:
			di.hdr.li_nitems = 0;
			break;
		case TOOMANY:
			di.hdr.li_nitems = cpu_to_le32(1000);
			break;
		case LENGTH:
			len += 8;
			break;
		case PAD:
			di.hdr.li_pad = cpu_to_le32(1);
			break;
		}
		bd = sxt_bdev_copy(bd0);
		if (c == NCASES) {
			/* control: as it should be, the EFI frees the four blocks */
			assert_int_equal(recover_intent(bd, SX_LOG_OP_EFI, &di, len, &mp), 0);
			assert_int_equal(mp->m_rstats.rs_intents, 1);
			assert_int_equal(sx_alloc_free_blocks(mp), free0 + 4);
			assert_int_equal(sx_unmount(mp), 0);
		} else {
			assert_int_equal(recover_intent(bd, SX_LOG_OP_EFI, &di, len, &mp),
					 -EFSCORRUPTED);
			msgs_expect("failed validation");
			logprint_says(bd, "EFI: malformed payload of");
			/* the intent is still owed: the next mount refuses it too */
			assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
		}
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(bd0);
}

/* Each bad field of a logged EFI item is refused before anything is freed. */
static void test_efi_item_checked(void **state)
{
	struct sx_bdev *bd0 = sxt_memfs(8 * MIB, BS, 0), *bd;
	struct sx_mount *mp = sxt_mount(bd0);
	u64 bno = alloc_blocks(mp, 4), ds = mp->m_sb.sb_datastart, db = mp->m_sb.sb_dblocks;
	const struct {
		u64	start;
		u32	count;
		u32	pad;
	} bad[] = {
		{ bno, 4, 1 },			/* padding not zero */
		{ bno, 0, 0 },			/* empty */
		{ ds - 1, 1, 0 },		/* below the data area */
		{ db, 1, 0 },			/* past the device */
		{ db - 2, 4, 0 },		/* runs past the device */
	};
	struct dintent di;
	u32 i;

	assert_int_equal(sx_unmount(mp), 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct sx_dlog_efi *ef = (struct sx_dlog_efi *)di.items;

		memset(&di, 0, sizeof(di));
		di.hdr.li_nitems = cpu_to_le32(1);
		ef->ef_startblock = cpu_to_le64(bad[i].start);
		ef->ef_blockcount = cpu_to_le32(bad[i].count);
		ef->ef_pad = cpu_to_le32(bad[i].pad);
		bd = sxt_bdev_copy(bd0);
		assert_int_equal(recover_intent(bd, SX_LOG_OP_EFI, &di,
						sizeof(di.hdr) + sizeof(*ef), &mp),
				 -EFSCORRUPTED);
		msgs_expect("failed in sx_efi_decode");
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(bd0);
}

/* Each bad field of a logged CUI item is refused; a good one is finished. */
static void test_cui_item_checked(void **state)
{
	struct sx_bdev *bd0 = sxt_memfs(8 * MIB, BS, 0), *bd;
	struct sx_mount *mp = sxt_mount(bd0);
	u64 bno = alloc_blocks(mp, 4), ds = mp->m_sb.sb_datastart, db = mp->m_sb.sb_dblocks;
	const struct {
		u64	start;
		u32	count;
		u32	op;
	} cases[] = {
		{ bno, 4, 3 },				/* no such op */
		{ bno, 0, SX_CUI_INCREASE },		/* empty */
		{ bno, SX_BMAP_MAXLEN + 1, SX_CUI_INCREASE },	/* longer than a mapping */
		{ ds - 1, 1, SX_CUI_INCREASE },		/* below the data area */
		{ db, 1, SX_CUI_INCREASE },		/* past the device */
		{ db - 2, 4, SX_CUI_DECREASE },		/* runs past the device */
		{ bno, 4, SX_CUI_INCREASE },		/* control: good */
	};
	struct dintent di;
	u32 i, n = ARRAY_SIZE(cases), count;

	assert_int_equal(sx_unmount(mp), 0);
	for (i = 0; i < n; i++) {
		struct sx_dlog_cui *lc = (struct sx_dlog_cui *)di.items;
		int error;

		memset(&di, 0, sizeof(di));
		di.hdr.li_nitems = cpu_to_le32(1);
		lc->cu_startblock = cpu_to_le64(cases[i].start);
		lc->cu_blockcount = cpu_to_le32(cases[i].count);
		lc->cu_op = cpu_to_le32(cases[i].op);
		bd = sxt_bdev_copy(bd0);
		error = recover_intent(bd, SX_LOG_OP_CUI, &di, sizeof(di.hdr) + sizeof(*lc), &mp);
		if (i < n - 1) {
			assert_int_equal(error, -EFSCORRUPTED);
			msgs_expect("failed in sx_cui_decode");
		} else {
			/* the good one gave the blocks a second owner */
			assert_int_equal(error, 0);
			assert_int_equal(sx_refcount_get(mp, bno, &count), 0);
			assert_int_equal(count, 2);
			assert_int_equal(sx_unmount(mp), 0);
		}
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(bd0);
}

/* ------------------------------------------------------------ BUI */

/*
 * A regular file with @nblk blocks mapped at offset 0, on a clean image,
 * and 4 blocks allocated right after them (bno + nblk), mapped nowhere.
 */
struct bfile {
	struct sx_bdev	*bd;
	u64		ino;
	u64		gen;
	u64		bno;		/* its blocks */
	u64		root;		/* the root directory's inode */
};

/* Queue @n items through @fn on @ip and finish them in one chain. */
static int bmap_chain(struct sx_mount *mp, struct sx_inode *ip,
		      int (*fn)(struct sx_trans *tp, struct sx_inode *ip, void *arg), void *arg)
{
	struct sx_trans *tp;
	int error;

	error = sx_trans_alloc(mp, 65536, 0, &tp);
	if (error)
		return error;
	sx_ilock(ip, SX_ILOCK_EXCL);
	error = fn(tp, ip, arg);
	if (!error)
		error = sx_defer_finish(&tp);
	if (!error)
		error = sx_trans_commit(tp);
	else
		sx_trans_cancel(tp);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	return error;
}

static int map_irec(struct sx_trans *tp, struct sx_inode *ip, void *arg)
{
	return sx_bmap_map_later(tp, ip, arg);
}

static void bfile_make(struct bfile *f, u32 nblk)
{
	struct sx_bmap_irec irec = { .br_startoff = 0, .br_blockcount = nblk };
	struct sx_mount *mp;
	struct sx_inode *ip;
	int fd;

	f->bd = sxt_memfs(8 * MIB, BS, 0);
	mp = sxt_mount(f->bd);
	f->root = mp->m_rootino;
	f->bno = alloc_blocks(mp, nblk + 4);
	irec.br_startblock = f->bno;
	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	assert_int_equal(sx_fd_get(mp, fd, &ip), 0);
	f->ino = ip->i_ino;
	f->gen = ip->i_gen;
	assert_int_equal(bmap_chain(mp, ip, map_irec, &irec), 0);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
}

/* What file block @off of @ino maps to (SX_HOLE for none). */
static u64 mapped_at(struct sx_mount *mp, u64 ino, u64 off)
{
	struct sx_bmap_irec got;
	struct sx_inode *ip;

	assert_int_equal(sx_iget(mp, ino, 0, &ip), 0);
	sx_ilock(ip, SX_ILOCK_EXCL);
	assert_int_equal(sx_bmap_lookup(NULL, ip, off, &got), 0);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	assert_int_equal(sx_irele(ip), 0);
	return got.br_startblock == SX_HOLE ? SX_HOLE
					     : got.br_startblock + (off - got.br_startoff);
}

/*
 * A logged BUI is finished only on the file it names: a wrong generation,
 * a free block, a block that is no inode, a directory, or an unmap whose
 * blocks are not where the item says are corruption.  The same items with
 * the right names map and unmap.
 */
static void test_bui_item_targets(void **state)
{
	enum { MAP_OK, UNMAP_OK, STALE_GEN, FREE_INO, DATA_INO, DIR_INO, UNMAP_MOVED, NCASES };
	static const char *const why[NCASES] = {
		[FREE_INO] = "deferred work failed (-117)",
		[STALE_GEN] = "deferred work failed (-117)",
		[DATA_INO] = "bad CRC",	/* "inode block N: bad CRC": data, no metadata */
		[DIR_INO] = "(ip->i_mode & SX_IFMT) != SX_IFREG",
		[UNMAP_MOVED] = "got.br_startblock != bi->bi_bno + (got.br_startoff - bi->bi_off)",
	};
	struct bfile f;
	int c;

	bfile_make(&f, 8);
	for (c = 0; c < NCASES; c++) {
		struct sx_bdev *bd = sxt_bdev_copy(f.bd);
		struct sx_dlog_bmap *lb;
		struct sx_mount *mp;
		struct dintent di;
		u64 freeblk;
		int error;

		mp = sxt_mount(bd);
		freeblk = alloc_blocks(mp, 4);
		assert_int_equal(sx_unmount(mp), 0);
		memset(&di, 0, sizeof(di));
		di.hdr.li_nitems = cpu_to_le32(1);
		lb = (struct sx_dlog_bmap *)di.items;
		lb->bm_ino = cpu_to_le64(f.ino);
		lb->bm_gen = cpu_to_le64(f.gen);
		lb->bm_blockcount = cpu_to_le32(4);
		if (c == UNMAP_OK || c == UNMAP_MOVED) {
			lb->bm_startoff = cpu_to_le64(2);
			lb->bm_startblock = cpu_to_le64(f.bno + 2 + (c == UNMAP_MOVED));
		} else {
			/* map the 4 blocks just allocated past the end */
			lb->bm_startoff = cpu_to_le64(100);
			lb->bm_startblock = cpu_to_le64(freeblk);
			lb->bm_flags = cpu_to_le32(SX_BMI_MAP);
		}
		switch (c) {
		case STALE_GEN:
			lb->bm_gen = cpu_to_le64(f.gen + 1);
			break;
		case FREE_INO:	/* past the blocks in use, so free */
			lb->bm_ino = cpu_to_le64(freeblk + 100);
			break;
		case DATA_INO:
			lb->bm_ino = cpu_to_le64(f.bno);
			break;
		case DIR_INO:
			lb->bm_ino = cpu_to_le64(f.root);
			lb->bm_gen = 0;
			break;
		}
		if (c == DIR_INO) {
			/* the generation of the root directory, as its inode says */
			struct sx_inode *ip;

			mp = sxt_mount(bd);
			assert_int_equal(sx_iget(mp, f.root, 0, &ip), 0);
			lb->bm_gen = cpu_to_le64(ip->i_gen);
			assert_int_equal(sx_irele(ip), 0);
			assert_int_equal(sx_unmount(mp), 0);
		}
		error = recover_intent(bd, SX_LOG_OP_BUI, &di, sizeof(di.hdr) + sizeof(*lb), &mp);
		if (c == MAP_OK || c == UNMAP_OK) {
			assert_int_equal(error, 0);
			assert_int_equal(mp->m_rstats.rs_intents, 1);
			if (c == MAP_OK) {
				assert_int_equal(mapped_at(mp, f.ino, 101), freeblk + 1);
			} else {
				bool isfree;

				assert_int_equal(mapped_at(mp, f.ino, 1), f.bno + 1);
				assert_int_equal(mapped_at(mp, f.ino, 3), SX_HOLE);
				assert_int_equal(mapped_at(mp, f.ino, 6), f.bno + 6);
				/* the unmapped blocks had no other owner: freed */
				assert_int_equal(sx_alloc_is_free(mp, f.bno + 3, &isfree), 0);
				assert_true(isfree);
			}
			assert_int_equal(sx_unmount(mp), 0);
		} else {
			/* a data block read as an inode fails its CRC: the read's error stands */
			assert_int_equal(error, c == DATA_INO ? -EFSBADCRC : -EFSCORRUPTED);
			msgs_expect(why[c]);
		}
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(f.bd);
}

/* Arguments of a queued unmap. */
struct unmap_args {
	u64	off;
	u64	len;
	u64	bno;
};

static int unmap_range(struct sx_trans *tp, struct sx_inode *ip, void *arg)
{
	struct unmap_args *a = arg;

	return sx_bmap_unmap_later(tp, ip, a->off, a->len, a->bno);
}

/*
 * An unmap that names where its blocks must be follows the range across
 * mappings (two pieces here: one written, one unwritten, which do not
 * merge), and each piece must sit where the item says.
 */
static void test_bui_unmap_pieces(void **state)
{
	struct sx_bmap_irec irec = { .br_startoff = 8, .br_blockcount = 4,
				     .br_state = SX_BMAP_UNWRITTEN };
	struct unmap_args a;
	struct sx_defer_stats st0, st;
	struct sx_bdev *img;
	struct sx_mount *mp;
	struct sx_inode *ip;
	struct bfile f;
	u64 bno;

	bfile_make(&f, 8);
	mp = sxt_mount(f.bd);
	/* blocks 8..11 of the file right after its blocks 0..7 on disk, unwritten */
	bno = f.bno + 8;
	irec.br_startblock = bno;
	assert_int_equal(sx_iget(mp, f.ino, f.gen, &ip), 0);
	assert_int_equal(bmap_chain(mp, ip, map_irec, &irec), 0);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);
	img = sxt_bdev_copy(f.bd);

	/* where the blocks are not: refused at the first piece */
	mp = sxt_mount(img);
	assert_int_equal(sx_iget(mp, f.ino, f.gen, &ip), 0);
	a.off = 4;
	a.len = 6;
	a.bno = f.bno + 5;
	msgs_expect(NULL);
	assert_int_equal(bmap_chain(mp, ip, unmap_range, &a), -EFSCORRUPTED);
	msgs_expect("got.br_startblock != bi->bi_bno");
	assert_true(sx_is_shutdown(mp));
	assert_int_equal(sx_irele(ip), 0);
	sx_unmount(mp);
	/* the chain's first commit never reached the log: the file is as it was */
	mp = sxt_mount(img);
	assert_int_equal(mapped_at(mp, f.ino, 4), f.bno + 4);
	assert_int_equal(mapped_at(mp, f.ino, 9), bno + 1);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(img);

	mp = sxt_mount(f.bd);
	assert_int_equal(sx_iget(mp, f.ino, f.gen, &ip), 0);
	sx_defer_get_stats(mp, &st0);
	a.bno = f.bno + 4;
	assert_int_equal(bmap_chain(mp, ip, unmap_range, &a), 0);
	sx_defer_get_stats(mp, &st);
	/* the BUI took a step per piece: requeued once */
	assert_int_equal(st.ds_requeues - st0.ds_requeues, 1);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(mapped_at(mp, f.ino, 3), f.bno + 3);
	assert_int_equal(mapped_at(mp, f.ino, 4), SX_HOLE);
	assert_int_equal(mapped_at(mp, f.ino, 9), SX_HOLE);
	assert_int_equal(mapped_at(mp, f.ino, 10), bno + 2);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(f.bd);
}

/* What an item cannot describe is refused before anything is queued. */
static void test_later_args(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_bmap_irec irec = { .br_startoff = 0, .br_startblock = data0(mp),
				     .br_blockcount = 1 };
	struct sx_bmap_irec bad;
	struct sx_defer_stats st0, st;
	struct sx_trans *tp;
	struct sx_inode *ip;
	int fd;

	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	assert_int_equal(sx_fd_get(mp, fd, &ip), 0);
	assert_int_equal(sx_trans_alloc(mp, 65536, 0, &tp), 0);
	sx_ilock(ip, SX_ILOCK_EXCL);
	bad = irec;
	bad.br_blockcount = 0;
	assert_int_equal(sx_bmap_map_later(tp, ip, &bad), -EINVAL);
	assert_int_equal(sx_bmap_swap_map_later(tp, ip, &bad), -EINVAL);
	assert_int_equal(sx_bmap_swap_unmap_later(tp, ip, &bad), -EINVAL);
	bad.br_blockcount = SX_BMAP_MAXLEN + 1;
	assert_int_equal(sx_bmap_map_later(tp, ip, &bad), -EINVAL);
	assert_int_equal(sx_bmap_swap_map_later(tp, ip, &bad), -EINVAL);
	assert_int_equal(sx_bmap_swap_unmap_later(tp, ip, &bad), -EINVAL);
	bad = irec;
	bad.br_startblock = SX_HOLE;
	assert_int_equal(sx_bmap_map_later(tp, ip, &bad), -EINVAL);
	assert_int_equal(sx_bmap_swap_map_later(tp, ip, &bad), -EINVAL);
	assert_int_equal(sx_bmap_swap_unmap_later(tp, ip, &bad), -EINVAL);
	/* a swap's unmap must say where its blocks are */
	bad.br_startblock = 0;
	assert_int_equal(sx_bmap_swap_unmap_later(tp, ip, &bad), -EINVAL);
	assert_int_equal(sx_bmap_unmap_later(tp, ip, 0, 0, 0), -EINVAL);
	assert_int_equal(sx_bmap_unmap_later(tp, ip, ~0ull - 2, 4, 0), -EINVAL);
	assert_int_equal(sx_refcount_increase_later(tp, data0(mp), 0), -EINVAL);
	assert_int_equal(sx_refcount_decrease_later(tp, ~0ull - 2, 4), -EINVAL);
	assert_false(sx_defer_pending(tp));

	/* an unmap longer than an item describes is queued in pieces, each with its place */
	sx_defer_get_stats(mp, &st0);
	assert_int_equal(sx_bmap_unmap_later(tp, ip, 0, SX_BMAP_MAXLEN + 8, data0(mp)), 0);
	assert_true(sx_defer_pending(tp));
	assert_int_equal(sx_defer_finish(&tp), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_defer_get_stats(mp, &st);
	assert_int_equal(st.ds_steps - st0.ds_steps, 2);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* ------------------------------------------------------------ SXI */

/*
 * An SXI is finished on the store only for the inodes it names, by number
 * and generation: a generation of 0 or one the inode no longer has is a
 * bad intent.  The same SXI with the right generations swaps the blocks.
 */
static void test_sxi_generations(void **state)
{
	enum { GOOD, GEN_ZERO, GEN_STALE, NCASES };
	struct sx_bdev *base = sxs_mkimg(8 * MIB, BS, 0, true);
	struct sx_mount *mp = sxt_mount(base);
	u64 ino[2], gen[2];
	u8 buf[4 * BS];
	int fd[2], c, i;

	for (i = 0; i < 2; i++) {
		struct sx_stat st;

		memset(buf, 0xa0 + i, sizeof(buf));
		assert_int_equal(sx_create(mp, i ? "b" : "a", 0644, &fd[i]), 0);
		assert_int_equal(sx_pwrite(mp, fd[i], buf, sizeof(buf), 0), (s64)sizeof(buf));
		assert_int_equal(sx_fstat(mp, fd[i], &st), 0);
		ino[i] = st.st_ino;
		gen[i] = st.st_gen;
		assert_int_equal(sx_close(mp, fd[i]), 0);
	}
	assert_int_equal(sx_unmount(mp), 0);

	for (c = 0; c < NCASES; c++) {
		struct sx_bdev *bd = sxt_bdev_copy(base);
		struct sx_dlog_sxi sxi;
		int error;

		memset(&sxi, 0, sizeof(sxi));
		mp = sxt_mount(bd);
		sxi.sxi_hdr.li_id = cpu_to_le64(sx_log_next_intent_id(mp));
		sxi.sxi_hdr.li_nitems = cpu_to_le32(1);
		sxi.sxi_ext.sw_ino1 = cpu_to_le64(ino[0]);
		sxi.sxi_ext.sw_ino2 = cpu_to_le64(ino[1]);
		sxi.sxi_ext.sw_gen1 = cpu_to_le64(c == GEN_ZERO ? 0 : gen[0]);
		sxi.sxi_ext.sw_gen2 = cpu_to_le64(c == GEN_STALE ? gen[1] + 1 : gen[1]);
		sxi.sxi_ext.sw_blockcount = cpu_to_le64(2);
		sxi.sxi_ext.sw_isize1 = cpu_to_le64((u64)-1);
		sxi.sxi_ext.sw_isize2 = cpu_to_le64((u64)-1);
		log_item(mp, SX_LOG_OP_SXI, &sxi, sizeof(sxi));
		crash(mp);
		msgs_expect(NULL);
		error = sx_mount(bd, NULL, &mp);
		if (c != GOOD) {
			assert_int_equal(error, -EFSCORRUPTED);
			msgs_expect("error != 0 || *ipp == NULL");
		} else {
			/* the first two blocks changed files; the rest stayed */
			assert_int_equal(error, 0);
			assert_int_equal(mp->m_rstats.rs_intents, 1);
			assert_int_equal(sx_open(mp, "a", &fd[0]), 0);
			assert_int_equal(sx_pread(mp, fd[0], buf, sizeof(buf), 0),
					 (s64)sizeof(buf));
			for (i = 0; i < 4 * (int)BS; i++)
				assert_int_equal(buf[i], i < 2 * (int)BS ? 0xa1 : 0xa0);
			assert_int_equal(sx_close(mp, fd[0]), 0);
			assert_int_equal(sx_unmount(mp), 0);
		}
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(base);
}

/* ------------------------------------------------------------ the scan */

/*
 * A record whose epoch is older than the one before it ends the log: it
 * was written by an earlier mount, so it is stale, whatever its CRC says.
 */
static void test_epoch_backwards(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_recovery_stats rs;
	struct xrec r;
	u64 b = data0(mp), lsn1, gen;

	put_tblock(mp, b, 1, SX_TRANS_SYNC);
	lsn1 = sx_log_head(mp);
	put_tblock(mp, b, 2, SX_TRANS_SYNC);
	crash(mp);
	rec_get(bd, lsn1, &r);
	assert_int_equal(le32_to_cpu(rec_hdr(&r)->lr_epoch), 1);
	rec_hdr(&r)->lr_epoch = 0;
	rec_put(&r);
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_records, 1);
	assert_int_equal(rs.rs_stop_reason, SX_LOG_STOP_EPOCH);
	assert_string_equal(sx_log_stop_name(rs.rs_stop_reason), "epoch went backwards");
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 1);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A superblock whose epoch is behind the records of its log (an older copy
 * that won, say) must not give the next mount an epoch the log already
 * used: intent ids carry the epoch, and a repeated id could pair a new
 * intent with an old done item.
 */
static void test_sb_epoch_behind_log(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sx_sb sb;
	u64 b = data0(mp), id, gen;

	/* an epoch-1 intent, finished by recovery: its id is in the log */
	assert_int_equal(sx_trans_alloc(mp, 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, b, 9, &id), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(id >> 32, 1);
	crash(mp);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	assert_int_equal(sb.sb_log_epoch, 1);
	sb.sb_log_epoch = 0;
	assert_int_equal(sx_sb_write(bd, &sb), 0);

	mp = sxt_mount(bd);
	assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
	assert_int_equal(gen, 9);
	assert_true(sx_log_next_intent_id(mp) >> 32 > 1);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A log that changes more blocks than recovery holds at once (8192) is
 * replayed in batches: blocks written back in the middle of the replay
 * still take the later changes of the log, and lose none.  A write error
 * in that first batch fails the mount and leaves the log to replay.
 */
static void test_replay_in_batches(void **state)
{
	enum { NBLK = 8300, NAGAIN = 100, PER_TRANS = 64 };
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 512, 16384);
	/* cache and log hold the whole workload: nothing moves the tail */
	struct sx_mount_opts mo = { .mo_bcache_max = 2 * NBLK };
	struct sx_mount *mp;
	struct sx_recovery_stats rs;
	struct sx_trans *tp;
	u64 b, gen, hits;
	u32 i, j;

	assert_int_equal(sx_mount(bd, &mo, &mp), 0);
	b = data0(mp);
	for (i = 0; i < NBLK; i += PER_TRANS) {
		assert_int_equal(sx_trans_alloc(mp, PER_TRANS * sx_trans_buf_bytes(mp), 0, &tp), 0);
		for (j = i; j < NBLK && j < i + PER_TRANS; j++)
			assert_int_equal(sxt_tblock_write(tp, b + j, 1), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	assert_int_equal(sx_trans_alloc(mp, NAGAIN * sx_trans_buf_bytes(mp), 0, &tp), 0);
	for (i = 0; i < NAGAIN; i++)
		assert_int_equal(sxt_tblock_update(tp, b + i, 2), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_log_force(mp), 0);
	crash(mp);

	/*
	 * A write that fails while the first batch is written back fails
	 * the mount; the log is still there, and the next mount replays it.
	 */
	hits = sx_fault_hits("recover_write");
	assert_int_equal(sx_fault_arm("recover_write", 1, false, -EIO), 0);
	assert_int_equal(sx_mount(bd, &mo, &mp), -EIO);
	/* the first write of the replay: the mid-replay batch */
	assert_int_equal(sx_fault_hits("recover_write"), hits + 1);
	sx_fault_disarm_all();

	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	/* the whole workload was still in the log */
	assert_int_equal(rs.rs_bufs_replayed + rs.rs_bufs_skipped, NBLK + NAGAIN);
	for (i = 0; i < NBLK; i++) {
		assert_int_equal(sxt_tblock_read(mp, b + i, &gen), 0);
		assert_int_equal(gen, i < NAGAIN ? 2 : 1);
	}
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * A read error anywhere in the mount of a log that needs recovery (the
 * superblock, the log's records, the blocks being replayed, the bitmap,
 * the intents' work) fails the mount with the error; the same image then
 * recovers in full on a device that reads again.
 */
static void test_read_errors_in_recovery(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0), *img, *cbd;
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_crashdev *cd;
	struct sx_trans *tp;
	u64 b = data0(mp), id, gen, n;
	int error = -1;

	/* records of one and of two blocks, and an unfinished intent */
	put_tblock(mp, b, 1, SX_TRANS_SYNC);
	assert_int_equal(sx_trans_alloc(mp, 4 * sx_trans_buf_bytes(mp), SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, b + 1, 2), 0);
	assert_int_equal(sxt_tblock_write(tp, b + 2, 3), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_trans_alloc(mp, 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, b + 3, 4, &id), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	crash(mp);

	for (n = 1; error; n++) {
		assert_true(n < 10000);
		img = sxt_bdev_copy(bd);
		assert_int_equal(sx_crashdev_create(img, n, &cbd, &cd), 0);
		sx_crashdev_fail(cd, SX_IO_READ, n, true, -EIO);
		error = sx_mount(cbd, NULL, &mp);
		if (!error) {
			/* n is past the mount's last read: nothing failed */
			struct sx_crashdev_stats st;

			sx_crashdev_get_stats(cd, &st);
			assert_int_equal(st.cs_injected_errors, 0);
			sx_crashdev_clear_faults(cd);
		} else {
			assert_int_equal(error, -EIO);
			sx_crashdev_clear_faults(cd);
			mp = sxt_mount(cbd);
		}
		assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
		assert_int_equal(gen, 1);
		assert_int_equal(sxt_tblock_read(mp, b + 2, &gen), 0);
		assert_int_equal(gen, 3);
		assert_int_equal(sxt_tblock_read(mp, b + 3, &gen), 0);
		assert_int_equal(gen, 4);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(cbd);
		sx_bdev_destroy(img);
	}
	/* the mount reads the superblock, the log and the blocks: many points */
	assert_true(n > 5);
	sx_bdev_destroy(bd);
}

/* ------------------------------------------------------------ out of memory */

/*
 * Every allocation of a recovering mount fails in turn (the scan's buffer,
 * the list of records, a cancelled block's note, a replayed block, an
 * intent, the log's own state at the end): the mount fails with -ENOMEM,
 * leaves no allocation behind, and the same image then recovers in full:
 * the replayed blocks, the intent's work, and the cancelled block left as
 * it is on disk.
 */
static void test_enomem_in_recovery(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0), *img;
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_alloc_stats a0, a1;
	struct sx_trans *tp;
	struct sx_buf *bp;
	u64 b = data0(mp), id, gen, n;
	u8 junk[BS], got[BS];
	bool hit = true;
	int error, fails = 0;

	/* records of one and of two blocks, a cancelled block, an unfinished intent */
	put_tblock(mp, b, 1, SX_TRANS_SYNC);
	assert_int_equal(sx_trans_alloc(mp, 4 * sx_trans_buf_bytes(mp), SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, b + 1, 2), 0);
	assert_int_equal(sxt_tblock_write(tp, b + 2, 3), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	put_tblock(mp, b + 5, 6, SX_TRANS_SYNC);
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sx_trans_read_buf(tp, b + 5, &sxt_tblock_ops, 0, &bp), 0);
	assert_int_equal(sx_trans_binval(tp, bp), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_trans_alloc(mp, 1024, SX_TRANS_SYNC, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, b + 3, 4, &id), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	crash(mp);
	/* the cancelled block is reused as data behind the log's back */
	memset(junk, 0xa5, sizeof(junk));
	sxt_bdev_poke(bd, (b + 5) * BS, junk, BS);

	for (n = 1; hit; n++) {
		assert_true(n < 100000);
		img = sxt_bdev_copy(bd);
		sx_alloc_get_stats(&a0);
		sx_alloc_fail(n, false);
		error = sx_mount(img, NULL, &mp);
		sx_alloc_fail(0, false);
		sx_alloc_get_stats(&a1);
		hit = a1.as_failed != a0.as_failed;
		if (hit) {
			assert_int_equal(error, -ENOMEM);
			/* a failed mount gives back all it took */
			assert_int_equal(a1.as_live, a0.as_live);
			fails++;
			mp = sxt_mount(img);
		} else {
			assert_int_equal(error, 0);
		}
		/* (a mount that failed after recovery left no intent to the next) */
		assert_true(mp->m_rstats.rs_intents <= 1);
		assert_int_equal(sxt_tblock_read(mp, b, &gen), 0);
		assert_int_equal(gen, 1);
		assert_int_equal(sxt_tblock_read(mp, b + 2, &gen), 0);
		assert_int_equal(gen, 3);
		assert_int_equal(sxt_tblock_read(mp, b + 3, &gen), 0);
		assert_int_equal(gen, 4);
		assert_int_equal(sx_unmount(mp), 0);
		sxt_bdev_peek(img, (b + 5) * BS, got, BS);
		assert_memory_equal(got, junk, BS);
		sx_bdev_destroy(img);
	}
	/* scan, records, cancel, replay, intent, log: many points */
	assert_true(fails > 8);
	msgs_expect(NULL);
	sx_bdev_destroy(bd);
}

/*
 * Every allocation of a chain that unmaps file blocks fails in turn: the
 * BUI's queueing, its unmap queueing the refcount decrease (CUI), and that
 * queueing the free (EFI).  The call fails with -ENOMEM and gives back
 * what it took; after a remount (recovery finishing any intent that
 * reached the log) the range is either mapped and in use as before or
 * unmapped and free, never between, and the checker finds nothing.
 */
static void test_enomem_in_unmap_chain(void **state)
{
	struct unmap_args a = { .off = 2, .len = 4, .bno = 0 };
	struct sx_alloc_stats a0, a1;
	struct sx_bdev *img;
	struct sx_mount *mp;
	struct sx_inode *ip;
	struct bfile f;
	u64 free0, n, off;
	int64_t live0;
	s64 leaked;
	bool hit = true, gone;
	int error, fails = 0;

	bfile_make(&f, 8);
	mp = sxt_mount(f.bd);
	free0 = sx_alloc_free_blocks(mp);
	assert_int_equal(sx_unmount(mp), 0);
	/* bfile_make() leaves the 4 blocks past the file's allocated, unowned */
	leaked = sxc_checker(f.bd, 0, NULL);
	assert_int_equal(leaked, 4);
	for (n = 1; hit; n++) {
		assert_true(n < 100000);
		img = sxt_bdev_copy(f.bd);
		/* inodes are freed after an RCU grace period */
		sx_rcu_barrier();
		sx_alloc_get_stats(&a0);
		live0 = a0.as_live;
		mp = sxt_mount(img);
		assert_int_equal(sx_iget(mp, f.ino, f.gen, &ip), 0);
		sx_alloc_get_stats(&a0);
		sx_alloc_fail(n, false);
		error = bmap_chain(mp, ip, unmap_range, &a);
		sx_alloc_fail(0, false);
		sx_alloc_get_stats(&a1);
		hit = a1.as_failed != a0.as_failed;
		if (hit) {
			assert_int_equal(error, -ENOMEM);
			fails++;
		} else {
			assert_int_equal(error, 0);
		}
		assert_int_equal(sx_irele(ip), 0);
		sx_unmount(mp);
		sx_rcu_barrier();
		sx_alloc_get_stats(&a1);
		assert_int_equal(a1.as_live, live0);

		mp = sxt_mount(img);
		gone = mapped_at(mp, f.ino, 2) == SX_HOLE;
		assert_true(gone || hit);
		for (off = 0; off < 8; off++)
			assert_int_equal(mapped_at(mp, f.ino, off),
					 gone && off >= 2 && off < 6 ? SX_HOLE : f.bno + off);
		assert_int_equal(sx_alloc_free_blocks(mp), free0 + (gone ? 4 : 0));
		assert_int_equal(sx_unmount(mp), 0);
		assert_int_equal(sxc_checker(img, 0, NULL), leaked);
		sx_bdev_destroy(img);
	}
	/* the BUI, the CUI and the EFI are each queued with an allocation */
	assert_true(fails >= 3);
	msgs_expect(NULL);
	sx_bdev_destroy(f.bd);
}

/*
 * A BUI unmap whose walk of the file's extent tree fails (a read error
 * under the inode, its fork a B+tree that is not cached) fails the chain
 * with the error and shuts the mount down; after a remount on a device
 * that reads again the range is unmapped or as it was, and the checker
 * finds nothing.
 */
static void test_bui_unmap_read_error(void **state)
{
	struct unmap_args a = { .off = 0, .len = 64, .bno = 0 };
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0), *img, *cbd;
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_crashdev_stats st;
	struct sx_crashdev *cd;
	struct sx_inode *ip;
	u8 blk[BS];
	u64 ino, n, off, hole;
	int error = -1, fd, fails = 0;

	/* every other block written: one extent each, too many for the inode */
	memset(blk, 0x5a, sizeof(blk));
	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	for (off = 0; off < 512; off += 2)
		assert_int_equal(sx_pwrite(mp, fd, blk, BS, off * BS), BS);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_open(mp, "f", &fd), 0);
	assert_int_equal(sx_fd_get(mp, fd, &ip), 0);
	ino = ip->i_ino;
	assert_int_equal(ip->i_format, SX_DIF_BTREE);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_checker(bd, 0, NULL), 0);

	for (n = 1; error; n++) {
		assert_true(n < 10000);
		img = sxt_bdev_copy(bd);
		assert_int_equal(sx_crashdev_create(img, n, &cbd, &cd), 0);
		mp = sxt_mount(cbd);
		assert_int_equal(sx_iget(mp, ino, 0, &ip), 0);
		sx_crashdev_fail(cd, SX_IO_READ, n, true, -EIO);
		error = bmap_chain(mp, ip, unmap_range, &a);
		sx_crashdev_get_stats(cd, &st);
		if (error) {
			assert_int_equal(error, -EIO);
			assert_true(st.cs_injected_errors > 0);
			assert_true(sx_is_shutdown(mp));
			fails++;
		} else {
			assert_int_equal(st.cs_injected_errors, 0);
		}
		sx_crashdev_clear_faults(cd);
		assert_int_equal(sx_irele(ip), 0);
		sx_unmount(mp);

		mp = sxt_mount(cbd);
		hole = mapped_at(mp, ino, 0) == SX_HOLE;
		assert_true(hole || error);
		for (off = 0; off < 64; off += 2)
			assert_int_equal(mapped_at(mp, ino, off) == SX_HOLE, hole);
		assert_int_not_equal(mapped_at(mp, ino, 64), SX_HOLE);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(cbd);
		assert_int_equal(sxc_checker(img, 0, NULL), 0);
		sx_bdev_destroy(img);
	}
	assert_true(fails > 0);
	msgs_expect(NULL);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_control_recovers),
		cmocka_unit_test(test_bad_buf_ops),
		cmocka_unit_test(test_replay_unknown_magic),
		cmocka_unit_test(test_malformed_record),
		cmocka_unit_test(test_walk_ops),
		cmocka_unit_test(test_item_registry),
		cmocka_unit_test(test_unknown_item_type),
		cmocka_unit_test(test_intent_left_unfinished),
		cmocka_unit_test(test_intent_too_short),
		cmocka_unit_test(test_intent_id_repeated),
		cmocka_unit_test(test_defer_payload_checked),
		cmocka_unit_test(test_efi_item_checked),
		cmocka_unit_test(test_cui_item_checked),
		cmocka_unit_test(test_bui_item_targets),
		cmocka_unit_test(test_bui_unmap_pieces),
		cmocka_unit_test(test_later_args),
		cmocka_unit_test(test_sxi_generations),
		cmocka_unit_test(test_epoch_backwards),
		cmocka_unit_test(test_sb_epoch_behind_log),
		cmocka_unit_test(test_replay_in_batches),
		cmocka_unit_test(test_read_errors_in_recovery),
		cmocka_unit_test(test_enomem_in_recovery),
		cmocka_unit_test(test_enomem_in_unmap_chain),
		cmocka_unit_test(test_bui_unmap_read_error),
	};

	sx_thread_enter();
	sx_set_log_callback(msg_cb, NULL);
	sxt_register_test_intent();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
