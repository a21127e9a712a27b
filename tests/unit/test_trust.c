// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Trust between structures: metadata whose checksums are right but whose
 * contents disagree with another structure must be refused, not spread.
 * Each damaged image is built in memory with the engine and then edited
 * the way a forger with a hex editor would: bytes changed, the block's CRC
 * (or the log record's CRC and the chain after it) made right again.
 *
 * Most cases start from one image: two files of NEXT single-block extents
 * (so both forks are B+trees) on a filesystem with atomic_swap, and a
 * whole-file swap of them cut by a power loss after its first step, one
 * transaction per log record, which leaves an unfinished SXI and its
 * B+tree changes in the log.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxswap.h"
#include "sxtext.h"
#include "log_recover.h"
#include "check.h"
#include "sb.h"

#define MIB		(1ull << 20)
#define BS		1024u
#define IMG		(32 * MIB)
#define NEXT		4000u

/* Clean image with files "a" and "b" of NEXT extents each. */
static struct sx_bdev *swap_base;
/* The device writes of a swap of "a" and "b" on swap_base: (w0, w1]. */
static u64 swap_w0, swap_w1;

static const struct sx_mount_opts log_each = { .mo_flags = SX_MOUNT_LOG_EACH };

/* Fill block @blk of @fd with @tag. */
static void put_tag(struct sx_mount *mp, int fd, u64 blk, u64 tag)
{
	u64 buf[BS / 8];
	u32 i;

	for (i = 0; i < BS / 8; i++)
		buf[i] = tag;
	assert_int_equal(sx_pwrite(mp, fd, buf, BS, blk * BS), (s64)BS);
}

/* Swap the whole of "a" and "b"; the error, if any. */
static int swap_ab(struct sx_mount *mp)
{
	struct file_swap_range fsr;
	int a, b, error;

	assert_int_equal(sx_open(mp, "a", &a), 0);
	assert_int_equal(sx_open(mp, "b", &b), 0);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = a;
	fsr.length = (u64)NEXT * BS;
	error = sx_swap_file_range(mp, b, &fsr);
	if (!error)
		error = sx_sync(mp);
	sx_close(mp, a);
	sx_close(mp, b);
	return error;
}

/* Build swap_base and count the writes of a swap on it (once per run). */
static void build_swap_base(void)
{
	struct sx_crashdev_stats st0, st1;
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_mount *mp;
	int a, b;
	u64 i;

	if (swap_base)
		return;
	swap_base = sxs_mkimg(IMG, BS, 4096, true);
	mp = sxt_mount(swap_base);
	assert_int_equal(sx_create(mp, "a", 0644, &a), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &b), 0);
	/* interleaved, so that no two blocks of one file touch */
	for (i = 0; i < NEXT; i++) {
		put_tag(mp, a, i, sxs_tag(0, i, 1));
		put_tag(mp, b, i, sxs_tag(1, i, 1));
	}
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_unmount(mp), 0);

	img = sxt_bdev_copy(swap_base);
	assert_int_equal(sx_crashdev_create(img, 1, &cbd, &cd), 0);
	assert_int_equal(sx_mount(cbd, &log_each, &mp), 0);
	sx_crashdev_get_stats(cd, &st0);
	assert_int_equal(swap_ab(mp), 0);
	sx_crashdev_get_stats(cd, &st1);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(cbd);
	sx_bdev_destroy(img);
	swap_w0 = st0.cs_writes;
	swap_w1 = st1.cs_writes;
	/* the first transaction, two steps at least, the checkpoint */
	assert_true(swap_w1 > swap_w0 + 3);
}

/* The fsinfo block of swap_base. */
static u64 swap_base_fsinfo(void)
{
	struct sx_sb sb;

	assert_int_equal(sx_sb_read(NULL, swap_base, &sb, NULL), 0);
	return sb.sb_fsinfo;
}

/* swap_base with the power cut (writes dropped) at write @w of the swap. */
static struct sx_bdev *cut_swap_at(u64 w)
{
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_mount *mp;

	img = sxt_bdev_copy(swap_base);
	assert_int_equal(sx_crashdev_create(img, 1, &cbd, &cd), 0);
	assert_int_equal(sx_mount(cbd, &log_each, &mp), 0);
	sx_crashdev_cut_at_write(cd, w, SX_CRASH_DROP);
	assert_int_not_equal(swap_ab(mp), 0);
	sx_unmount(mp);
	sx_bdev_destroy(cbd);
	return img;
}

struct log_ops;
static struct log_ops *scan_log(struct sx_bdev *img);
static u32 log_sxi(const struct log_ops *lo);

/*
 * swap_base with the power cut mid-swap: at the first write of the swap
 * that leaves a second SXI in the log, that of the rest after a finished
 * step (its B+tree changes in the log too).  A step swaps many extents
 * (direct steps), so the swap's middle write may come after its last
 * record, among the checkpoint's writes.
 */
static struct sx_bdev *cut_swap(void)
{
	struct sx_bdev *img;
	u64 w;

	build_swap_base();
	for (w = swap_w0 + 1; w < swap_w1; w++) {
		struct log_ops *lo;
		u32 n;

		img = cut_swap_at(w);
		lo = scan_log(img);
		n = log_sxi(lo);
		free(lo);
		if (n >= 2)
			return img;
		sx_bdev_destroy(img);
	}
	fail_msg("no cut of the swap leaves a finished step and an unfinished SXI");
	return NULL;
}

/* What the valid log of an unmounted image holds. */
struct log_ops {
	u64	lo_head;		/* LSN after the valid log */
	u32	lo_records;
	u32	lo_sxi;			/* SXI ops */
	u32	lo_nbuf;		/* BUF ops (not cancels), in log order: */
	u64	lo_buf_blkno[4096];
	u64	lo_buf_lsn[4096];	/* the record holding each */
};

static u64 scan_lsn;

static u32 log_sxi(const struct log_ops *lo)
{
	return lo->lo_sxi;
}

static int scan_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	struct log_ops *lo = arg;
	const struct sx_dlog_buf *lb = payload;

	if (le16_to_cpu(op->lo_type) == SX_LOG_OP_SXI)
		lo->lo_sxi++;
	if (le16_to_cpu(op->lo_type) != SX_LOG_OP_BUF || (le32_to_cpu(lb->lb_flags) & SX_LB_CANCEL))
		return 0;
	assert_true(lo->lo_nbuf < ARRAY_SIZE(lo->lo_buf_blkno));
	lo->lo_buf_blkno[lo->lo_nbuf] = le64_to_cpu(lb->lb_blkno);
	lo->lo_buf_lsn[lo->lo_nbuf++] = scan_lsn;
	return 0;
}

static int scan_rec(void *arg, const struct sx_log_scan_rec *r)
{
	struct log_ops *lo = arg;
	const char *why;

	lo->lo_records++;
	scan_lsn = r->sr_lsn;
	return sx_log_rec_walk_ops(r->sr_buf, r->sr_blocks * BS, scan_op, lo, &why);
}

/* Scan the log of @bd as recovery's first pass would. */
static struct log_ops *scan_log(struct sx_bdev *bd)
{
	struct log_ops *lo = calloc(1, sizeof(*lo));
	struct sx_mount *mp = sx_offline_mount_alloc(bd, "scan");
	struct sx_log_scan scan;
	struct sx_sb sb;

	assert_non_null(lo);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	sx_offline_mount_set_sb(mp, &sb);
	assert_int_equal(sx_log_scan(mp, scan_rec, lo, &scan), 0);
	lo->lo_head = scan.sc_head;
	sx_offline_mount_free(mp);
	return lo;
}

/* True if the log holds a change of @blkno. */
static bool log_touches(const struct log_ops *lo, u64 blkno)
{
	u32 i;

	for (i = 0; i < lo->lo_nbuf; i++)
		if (lo->lo_buf_blkno[i] == blkno)
			return true;
	return false;
}

/* Read block @blkno of @bd. */
static void get_blk(struct sx_bdev *bd, u64 blkno, void *buf)
{
	sxt_bdev_peek(bd, blkno * BS, buf, BS);
}

/* Write block @blkno of @bd with its header CRC made right. */
static void put_blk(struct sx_bdev *bd, u64 blkno, void *buf)
{
	struct sx_dblk_hdr *hdr = buf;

	hdr->bh_crc = cpu_to_le32(sx_cksum_skip(buf, BS, offsetof(struct sx_dblk_hdr, bh_crc)));
	sxt_bdev_poke(bd, blkno * BS, buf, BS);
}

/* Run the full checker; the problem count, the report in @r. */
static u64 check(struct sx_bdev *bd, struct sxt_text *r)
{
	u64 problems = ~0ull;

	memset(r, 0, sizeof(*r));
	assert_int_equal(sx_check(bd, sxt_text_line, r, &problems), 0);
	if (getenv("SX_TEST_VERBOSE"))
		fputs(r->text, stderr);
	return problems;
}

/*
 * The checker and the log printer know every item type of the engine
 * without a mount having registered them first: an unfinished SXI is
 * printed as an intent and checked as one recovery will take.
 */
static void test_offline_item_types(void **state)
{
	struct sx_bdev *img = cut_swap();
	struct log_ops *lo = scan_log(img);
	struct sxt_text r;

	assert_true(lo->lo_sxi > 0);
	/* forget every registered type, as a fresh program that never mounted */
	sx_exit();

	memset(&r, 0, sizeof(r));
	assert_int_equal(sx_logprint(img, sxt_text_line, &r), 0);
	if (getenv("SX_TEST_VERBOSE"))
		fputs(r.text, stderr);
	/* the swap core names it "swapext", and decodes it */
	assert_true(sxt_text_has(&r, "swapext (0x16) tid 1: intent, id"));
	assert_true(sxt_text_has(&r, "<-> ino2"));
	assert_false(sxt_text_has(&r, "unregistered item"));
	sxt_text_free(&r);

	/* only "needs recovery": no op recovery would refuse */
	assert_int_equal(check(img, &r), 1);
	assert_true(sxt_text_has(&r, "log needs recovery"));
	assert_false(sxt_text_has(&r, "not known to this engine"));
	sxt_text_free(&r);
	free(lo);
	sx_bdev_destroy(img);
}

/*
 * A mount that fails after log replay (a bitmap block, then the fsinfo
 * block, fails its verifier; the log touches neither) must free the
 * unfinished intents replay collected.  LeakSanitizer (make asan) sees it.
 */
static void test_failed_mount_frees_intents(void **state)
{
	struct sx_bdev *img = cut_swap(), *bd;
	struct log_ops *lo = scan_log(img);
	struct sx_dbitmap *bm;
	struct sx_dfsinfo *fi;
	struct sx_mount *mp;
	struct sx_sb sb;
	u8 buf[BS];
	u64 bno;

	assert_true(lo->lo_sxi > 0);
	assert_int_equal(sx_sb_read(NULL, img, &sb, NULL), 0);

	/* the last bitmap block, its pad set: the verifier refuses it */
	bno = sb.sb_bmapstart + sb.sb_bmapblocks - 1;
	assert_false(log_touches(lo, bno));
	bd = sxt_bdev_copy(img);
	get_blk(bd, bno, buf);
	bm = (struct sx_dbitmap *)buf;
	bm->bm_pad = cpu_to_le64(1);
	put_blk(bd, bno, buf);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	sx_bdev_destroy(bd);

	/* the fsinfo block, its pad set */
	assert_false(log_touches(lo, sb.sb_fsinfo));
	bd = sxt_bdev_copy(img);
	get_blk(bd, sb.sb_fsinfo, buf);
	fi = (struct sx_dfsinfo *)buf;
	fi->fi_pad = cpu_to_le32(1);
	put_blk(bd, sb.sb_fsinfo, buf);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	sx_bdev_destroy(bd);

	/* undamaged, the same log recovers */
	mp = sxt_mount(img);
	assert_int_equal(sx_unmount(mp), 0);
	free(lo);
	sx_bdev_destroy(img);
}

/* True if the header CRC of block image @buf is right. */
static bool crc_ok(const void *buf)
{
	const struct sx_dblk_hdr *hdr = buf;

	return le32_to_cpu(hdr->bh_crc) ==
	       sx_cksum_skip(buf, BS, offsetof(struct sx_dblk_hdr, bh_crc));
}

/* Print the first @n problem lines of a report. */
static void print_problems(const struct sxt_text *r, u32 n)
{
	const char *p = r->text, *e;

	while (n && (p = strstr(p, "problem: ")) != NULL) {
		e = strchr(p, '\n');
		fprintf(stderr, "  %.*s\n", (int)(e ? e - p : (long)strlen(p)), p);
		p = e ? e : p + strlen(p);
		n--;
	}
}

/* An LSN one log cycle past @head. */
static u64 lsn_ahead(u64 head)
{
	return head + (1ull << 32);
}

/*
 * An extent B+tree block whose changes are in the log, its LSN set one log
 * cycle past the head (CRC right): recovery skipped the replay into it, the
 * mount succeeded and the swap's blocks were mapped twice with a refcount
 * of 1.  Now the mount refuses, and the checker names the block.
 */
static void test_lsn_ahead_in_recovery(void **state)
{
	struct sx_bdev *img = cut_swap(), *bd;
	struct log_ops *lo = scan_log(img);
	struct sx_dblk_hdr *hdr;
	struct sx_mount *mp;
	struct sxt_text r;
	u64 done[16], problems;
	u32 i, k, tried = 0, accepted = 0;
	char want[128];
	u8 buf[BS];
	int error;

	assert_true(lo->lo_sxi > 0);
	for (i = 0; i < lo->lo_nbuf && tried < ARRAY_SIZE(done); i++) {
		u64 bno = lo->lo_buf_blkno[i];

		for (k = 0; k < tried && done[k] != bno; k++)
			;
		if (k < tried)
			continue;
		get_blk(img, bno, buf);
		hdr = (struct sx_dblk_hdr *)buf;
		/* a bmbt block that replay would change */
		if (le32_to_cpu(hdr->bh_magic) != SX_BMBT_MAGIC || !crc_ok(buf) ||
		    le64_to_cpu(hdr->bh_lsn) >= lo->lo_buf_lsn[i])
			continue;
		done[tried++] = bno;
		bd = sxt_bdev_copy(img);
		hdr->bh_lsn = cpu_to_le64(lsn_ahead(lo->lo_head));
		put_blk(bd, bno, buf);

		check(bd, &r);
		snprintf(want, sizeof(want), "bmbt block %llu (owner ", (unsigned long long)bno);
		assert_true(sxt_text_has(&r, want));
		assert_true(sxt_text_has(&r, "is not behind the log head"));
		sxt_text_free(&r);

		error = sx_mount(bd, NULL, &mp);
		if (!error) {
			assert_int_equal(sx_unmount(mp), 0);
			problems = check(bd, &r);
			fprintf(stderr, "block %llu: mount succeeded; the checker then found %llu problems\n",
				(unsigned long long)bno, (unsigned long long)problems);
			print_problems(&r, 3);
			sxt_text_free(&r);
			accepted++;
		} else {
			assert_int_equal(error, -EFSCORRUPTED);
		}
		sx_bdev_destroy(bd);
	}
	assert_true(tried > 0);
	assert_int_equal(accepted, 0);
	free(lo);
	sx_bdev_destroy(img);
}

/* The inode number of file @name. */
static u64 ino_of(struct sx_mount *mp, const char *name)
{
	struct sx_stat st;
	int fd;

	assert_int_equal(sx_open(mp, name, &fd), 0);
	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	return st.st_ino;
}

/* Read all of file @name; 0 or the first error. */
static int read_all(struct sx_mount *mp, const char *name)
{
	u8 buf[16 * BS];
	int fd, error;
	u64 off;
	s64 n;

	error = sx_open(mp, name, &fd);
	if (error)
		return error;
	for (off = 0; off < (u64)NEXT * BS; off += n) {
		n = sx_pread(mp, fd, buf, sizeof(buf), off);
		if (n <= 0) {
			error = n < 0 ? (int)n : -EIO;
			break;
		}
	}
	sx_close(mp, fd);
	return error;
}

/*
 * On a clean image, every metadata block type with its LSN past the head:
 * the checker reports each (it did so for bitmap blocks only), and a read
 * through the engine refuses the block instead of trusting it.
 */
static void test_lsn_ahead_clean(void **state)
{
	struct sx_bdev *img, *bd;
	struct log_ops *lo;
	struct sx_dinode *di;
	struct sx_dfsinfo *fi;
	struct sx_mount *mp;
	struct sxt_text r;
	u64 ino, bmbt, refc, head;
	char want[128];
	u8 buf[BS];
	int a, c;
	struct {
		const char	*name;	/* the block's name in the checker's report */
		u64		bno;
	} cases[4];
	u32 i;

	/* recovered, unmounted clean, and "a" cloned: a refcount tree */
	build_swap_base();
	img = sxt_bdev_copy(swap_base);
	mp = sxt_mount(img);
	assert_int_equal(sx_open(mp, "a", &a), 0);
	assert_int_equal(sx_create(mp, "c", 0644, &c), 0);
	assert_int_equal(sx_clone(mp, c, a), 0);
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, c), 0);
	ino = ino_of(mp, "a");
	assert_int_equal(sx_unmount(mp), 0);
	lo = scan_log(img);
	head = lo->lo_head;
	assert_int_equal(lo->lo_records, 0);
	get_blk(img, ino, buf);
	di = (struct sx_dinode *)buf;
	assert_int_equal(le16_to_cpu(di->di_format), SX_DIF_BTREE);
	bmbt = le64_to_cpu(di->di_broot);
	get_blk(img, swap_base_fsinfo(), buf);
	fi = (struct sx_dfsinfo *)buf;
	refc = le64_to_cpu(fi->fi_refc_root);
	assert_true(refc != 0);

	cases[0].name = "fsinfo";
	cases[0].bno = swap_base_fsinfo();
	cases[1].name = "inode";
	cases[1].bno = ino;
	cases[2].name = "bmbt";
	cases[2].bno = bmbt;
	cases[3].name = "refcbt";
	cases[3].bno = refc;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		bd = sxt_bdev_copy(img);
		get_blk(bd, cases[i].bno, buf);
		((struct sx_dblk_hdr *)buf)->bh_lsn = cpu_to_le64(lsn_ahead(head));
		put_blk(bd, cases[i].bno, buf);

		assert_true(check(bd, &r) >= 1);
		snprintf(want, sizeof(want), "%s block %llu", cases[i].name,
			 (unsigned long long)cases[i].bno);
		if (!sxt_text_has(&r, want) || !sxt_text_has(&r, "is not behind the log head")) {
			fputs(r.text, stderr);
			fail_msg("%s block %llu with its LSN past the head is not reported",
				 cases[i].name, (unsigned long long)cases[i].bno);
		}
		sxt_text_free(&r);

		if (i == 0) {
			/* the mount reads it */
			assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
		} else if (i < 3) {
			mp = sxt_mount(bd);
			assert_int_equal(read_all(mp, "a"), -EFSCORRUPTED);
			sx_unmount(mp);
		}
		sx_bdev_destroy(bd);
	}
	free(lo);
	sx_bdev_destroy(img);
}

/* The valid records of an unmounted image, as the scan found them. */
struct recs {
	u32	n;
	u64	lsn[1024];
	u32	blocks[1024];
};

static int note_rec(void *arg, const struct sx_log_scan_rec *r)
{
	struct recs *rs = arg;

	assert_true(rs->n < ARRAY_SIZE(rs->lsn));
	rs->lsn[rs->n] = r->sr_lsn;
	rs->blocks[rs->n++] = r->sr_blocks;
	return 0;
}

/* Where record @i starts on the device. */
static u64 rec_off(const struct sx_sb *sb, const struct recs *rs, u32 i)
{
	return (sb->sb_logstart + SX_LSN_BLOCK(rs->lsn[i])) * BS;
}

/*
 * Change one logged byte of @blkno, at @off in the block, to @val in the
 * last BUF op that logs it, and seal that record and every one after it
 * again (each record's CRC, and the chain of previous-record CRCs), as a
 * forger would.  Returns false if no op logs that byte.
 */
static bool forge_logged_byte(struct sx_bdev *bd, u64 blkno, u32 off, u8 val)
{
	struct sx_mount *mp = sx_offline_mount_alloc(bd, "forge");
	struct recs *rs = calloc(1, sizeof(*rs));
	u8 *rec[1024], *hit = NULL;
	struct sx_log_scan scan;
	struct sx_sb sb;
	u32 i, k, first = 0;

	assert_non_null(rs);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	sx_offline_mount_set_sb(mp, &sb);
	assert_int_equal(sx_log_scan(mp, note_rec, rs, &scan), 0);
	sx_offline_mount_free(mp);
	for (i = 0; i < rs->n; i++) {
		struct sx_dlog_rec *h;
		u8 *p;

		rec[i] = malloc(rs->blocks[i] * BS);
		assert_non_null(rec[i]);
		sxt_bdev_peek(bd, rec_off(&sb, rs, i), rec[i], rs->blocks[i] * BS);
		h = (struct sx_dlog_rec *)rec[i];
		p = rec[i] + sizeof(*h);
		for (k = 0; k < le32_to_cpu(h->lr_nops); k++) {
			struct sx_dlog_op *op = (struct sx_dlog_op *)p;
			struct sx_dlog_buf *lb = (struct sx_dlog_buf *)(op + 1);
			struct sx_dlog_region *rg = (struct sx_dlog_region *)(lb + 1);
			u8 *data = (u8 *)(rg + le16_to_cpu(lb->lb_nregions));
			u32 r;

			p += sizeof(*op) + sx_roundup(le32_to_cpu(op->lo_len), SX_LOG_OP_ALIGN);
			if (le16_to_cpu(op->lo_type) != SX_LOG_OP_BUF ||
			    le64_to_cpu(lb->lb_blkno) != blkno)
				continue;
			for (r = 0; r < le16_to_cpu(lb->lb_nregions); r++) {
				u32 ro = le32_to_cpu(rg[r].lg_off), rl = le32_to_cpu(rg[r].lg_len);

				if (off >= ro && off < ro + rl) {
					hit = data + (off - ro);
					first = i;
				}
				data += rl;
			}
		}
	}
	if (hit) {
		*hit = val;
		for (i = first; i < rs->n; i++) {
			struct sx_dlog_rec *h = (struct sx_dlog_rec *)rec[i];
			u32 bytes = rs->blocks[i] * BS;

			if (i > first)
				h->lr_prev_crc = ((struct sx_dlog_rec *)rec[i - 1])->lr_crc;
			h->lr_crc = cpu_to_le32(sx_cksum_skip(rec[i], bytes,
							      offsetof(struct sx_dlog_rec, lr_crc)));
			sxt_bdev_poke(bd, rec_off(&sb, rs, i), rec[i], bytes);
		}
	}
	for (i = 0; i < rs->n; i++)
		free(rec[i]);
	free(rs);
	return hit != NULL;
}

/*
 * A record whose CRC (and the chain after it) is right but whose image of
 * an inode block has an impossible fork format: recovery stamped a fresh
 * CRC on the rebuilt block and wrote it, so the damage reached the disk
 * looking valid and the mount succeeded.  Now the rebuilt block must pass
 * the inode verifier: the mount fails and the block on the disk is as it
 * was.
 */
static void test_replay_verifies(void **state)
{
	struct sx_bdev *bd = sxs_mkimg(IMG, BS, 4096, false);
	struct sx_mount *mp = sxt_mount(bd);
	u8 before[BS], after[BS];
	u64 ino, i;
	int fd;

	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	for (i = 0; i < 4; i++)
		put_tag(mp, fd, i, sxs_tag(0, i, 1));
	assert_int_equal(sx_close(mp, fd), 0);
	ino = ino_of(mp, "f");
	assert_int_equal(sx_sync(mp), 0);
	sx_shutdown(mp);
	sx_unmount(mp);

	assert_true(forge_logged_byte(bd, ino, offsetof(struct sx_dinode, di_format), 7));
	get_blk(bd, ino, before);
	if (sx_mount(bd, NULL, &mp) == 0) {
		sx_unmount(mp);
		get_blk(bd, ino, after);
		fprintf(stderr, "mount succeeded; inode %llu on disk: format %u, CRC %s\n",
			(unsigned long long)ino,
			le16_to_cpu(((struct sx_dinode *)after)->di_format),
			crc_ok(after) ? "right" : "bad");
		fail();
	}
	get_blk(bd, ino, after);
	assert_memory_equal(before, after, BS);
	/* and again: the log is left as it was for the next try */
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	sx_bdev_destroy(bd);
}

/* Create empty files @prefix0 .. @prefix(n-1). */
static void make_files(struct sx_mount *mp, const char *prefix, u32 n)
{
	char name[32];
	u32 i;
	int fd;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%u", prefix, i);
		assert_int_equal(sx_create(mp, name, 0644, &fd), 0);
		assert_int_equal(sx_close(mp, fd), 0);
	}
}

/*
 * A lost write of a bitmap block on an otherwise clean image: block 0 of
 * the bitmap back at its version before ten inodes were allocated.  The
 * checker saw it, but the mount took the bitmap's word, and the next
 * copy-on-write allocated a live inode's block as data.  Now the mount
 * compares the bitmap with the free count the last clean unmount recorded
 * and refuses.
 */
static void test_lost_bitmap_write(void **state)
{
	struct sx_bdev *bd = sxs_mkimg(IMG, BS, 4096, false);
	struct sx_mount *mp;
	struct sxt_text r;
	u8 old[BS];
	struct sx_sb sb;
	int a, c, error;
	u64 i;

	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_create(mp, "a", 0644, &a), 0);
	for (i = 0; i < 8; i++)
		put_tag(mp, a, i, sxs_tag(0, i, 1));
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_unmount(mp), 0);
	get_blk(bd, sb.sb_bmapstart, old);
	mp = sxt_mount(bd);
	make_files(mp, "n", 10);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, &r), 0);
	sxt_text_free(&r);

	/* the last write of bitmap block 0 never reached the disk */
	sxt_bdev_poke(bd, sb.sb_bmapstart * BS, old, BS);
	assert_true(check(bd, &r) > 0);
	assert_true(sxt_text_has(&r, "is free but holds metadata"));
	assert_true(sxt_text_has(&r, "were free when the log was last left empty"));
	sxt_text_free(&r);

	error = sx_mount(bd, NULL, &mp);
	if (!error) {
		/* what came next: a clone, and a write into it */
		assert_int_equal(sx_open(mp, "a", &a), 0);
		assert_int_equal(sx_create(mp, "c", 0644, &c), 0);
		assert_int_equal(sx_clone(mp, c, a), 0);
		put_tag(mp, c, 0, sxs_tag(2, 0, 1));
		sx_close(mp, a);
		sx_close(mp, c);
		sx_unmount(mp);
		fprintf(stderr, "mount succeeded; after a copy-on-write the checker found %llu problems\n",
			(unsigned long long)check(bd, &r));
		print_problems(&r, 4);
		sxt_text_free(&r);
	}
	assert_int_equal(error, -EFSCORRUPTED);
	sx_bdev_destroy(bd);
}

/* Make the superblock say the free count is not known (both copies). */
static void forget_clean_free(struct sx_bdev *bd)
{
	struct sx_sb sb;

	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	sb.sb_clean_free = 0;
	assert_int_equal(sx_sb_write(bd, &sb), 0);
	assert_int_equal(sx_sb_write(bd, &sb), 0);
}

/* Clear the bitmap bit of @bno, keeping the block's count and CRC right. */
static void clear_bit(struct sx_bdev *bd, u64 bno)
{
	struct sx_dbitmap *bm;
	struct sx_sb sb;
	u64 bits = SX_BITMAP_BITS(BS), i = bno % bits;
	u8 buf[BS];

	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	get_blk(bd, sb.sb_bmapstart + bno / bits, buf);
	bm = (struct sx_dbitmap *)buf;
	assert_true(buf[SX_BITMAP_HDR_SIZE + i / 8] & (1u << (i % 8)));
	buf[SX_BITMAP_HDR_SIZE + i / 8] &= (u8)~(1u << (i % 8));
	bm->bm_nfree = cpu_to_le32(le32_to_cpu(bm->bm_nfree) + 1);
	put_blk(bd, sb.sb_bmapstart + bno / bits, buf);
}

/*
 * Where the superblock cannot vouch for the free count (it was not left by
 * a clean unmount), the mount still cross-checks the bitmap against fsinfo:
 * the fsinfo block, the root directory's inode, the refcount tree's root
 * and the head of the unlinked list must be in use, and there must be at
 * least one block in use per inode fsinfo counts, plus the fsinfo block.
 */
static void test_mount_space_checks(void **state)
{
	struct sx_bdev *base = sxs_mkimg(IMG, BS, 4096, false), *bd;
	struct sx_mount *mp;
	struct sx_sb sb;
	u8 fresh[BS];

	assert_int_equal(sx_sb_read(NULL, base, &sb, NULL), 0);
	get_blk(base, sb.sb_bmapstart, fresh);
	mp = sxt_mount(base);
	make_files(mp, "n", 30);
	assert_int_equal(sx_unmount(mp), 0);
	forget_clean_free(base);
	mp = sxt_mount(base);
	assert_int_equal(sx_unmount(mp), 0);

	/* the root directory's inode free in the bitmap */
	bd = sxt_bdev_copy(base);
	forget_clean_free(bd);
	clear_bit(bd, sb.sb_fsinfo + 1);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	sx_bdev_destroy(bd);

	/* the fsinfo block free in the bitmap */
	bd = sxt_bdev_copy(base);
	forget_clean_free(bd);
	clear_bit(bd, sb.sb_fsinfo);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	sx_bdev_destroy(bd);

	/* bitmap block 0 as mkfs left it: 2 blocks in use for 31 inodes */
	bd = sxt_bdev_copy(base);
	forget_clean_free(bd);
	sxt_bdev_poke(bd, sb.sb_bmapstart * BS, fresh, BS);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EFSCORRUPTED);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(base);
}

/*
 * In one transaction, the bitmap forgets block @bno (as a stale bitmap
 * block would), and the allocator is asked for a block at @bno: it must
 * refuse, not hand out a block that something owns.
 */
static void refuse_alloc(struct sx_mount *mp, u64 bno, const char *what)
{
	struct sx_trans *tp;
	u64 got = 0;
	u32 len = 0;
	int error;

	assert_int_equal(sx_trans_alloc(mp, 4 * sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_free_extent(tp, bno, 1), 0);
	error = sx_alloc_extent(tp, bno, 1, 1, &got, &len);
	if (!error)
		fprintf(stderr, "%s (block %llu): the allocator handed out block %llu\n", what,
			(unsigned long long)bno, (unsigned long long)got);
	assert_int_equal(error, -EFSCORRUPTED);
	sx_trans_cancel(tp);
}

/*
 * What the mount knows without reading anything is never handed out: the
 * fsinfo block, the root directory, an inode in the inode cache (its
 * buffer gone from the buffer cache), a B+tree block cached as metadata.
 */
static void test_alloc_refuses_owned(void **state)
{
	struct sx_dinode *di;
	struct sx_bdev *bd;
	struct sx_mount *mp;
	u64 fsinfo, ino;
	u8 buf[BS];
	int a, k;

	build_swap_base();
	fsinfo = swap_base_fsinfo();
	for (k = 0; k < 4; k++) {
		bd = sxt_bdev_copy(swap_base);
		mp = sxt_mount(bd);
		ino = ino_of(mp, "a");
		assert_int_equal(sx_open(mp, "a", &a), 0);
		switch (k) {
		case 0:
			refuse_alloc(mp, fsinfo, "fsinfo");
			break;
		case 1:
			refuse_alloc(mp, fsinfo + 1, "root directory");
			break;
		case 2:
			/* only the inode cache knows it now */
			assert_int_equal(sx_log_checkpoint(mp), 0);
			sx_bcache_purge(mp);
			refuse_alloc(mp, ino, "cached inode");
			break;
		case 3:
			assert_int_equal(read_all(mp, "a"), 0);
			get_blk(bd, ino, buf);
			di = (struct sx_dinode *)buf;
			assert_int_equal(le16_to_cpu(di->di_format), SX_DIF_BTREE);
			refuse_alloc(mp, le64_to_cpu(di->di_broot), "bmbt block");
			break;
		}
		sx_close(mp, a);
		sx_unmount(mp);
		sx_bdev_destroy(bd);
	}
}

static int teardown_all(void **state)
{
	if (swap_base)
		sx_bdev_destroy(swap_base);
	swap_base = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offline_item_types),
		cmocka_unit_test(test_failed_mount_frees_intents),
		cmocka_unit_test(test_lsn_ahead_in_recovery),
		cmocka_unit_test(test_lsn_ahead_clean),
		cmocka_unit_test(test_replay_verifies),
		cmocka_unit_test(test_lost_bitmap_write),
		cmocka_unit_test(test_mount_space_checks),
		cmocka_unit_test(test_alloc_refuses_owned),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, teardown_all);
}
