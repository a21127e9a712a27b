// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Checker tests: a fresh and a used filesystem check clean; each kind of
 * damage (bitmap bits, CRC, counts, headers, LSNs, one superblock copy,
 * both copies, copies that disagree, a log that needs recovery, a logged
 * op recovery would refuse, garbage) is reported as a problem, and the
 * checker never crashes on any of it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxcrash.h"

#define MIB		(1ull << 20)

/* Run the checker; returns the number of problems and fills @r. */
static u64 check(struct sx_bdev *bd, struct sxt_text *r)
{
	s64 problems = sxc_checker(bd, SX_CHECK_SPACE_ONLY, r);

	assert_true(problems >= 0);
	assert_non_null(r->text);
	/* every problem is one report line, and the count says so */
	assert_int_equal(problems, r->problem_lines);
	return problems;
}

/* The superblock as a mount would read it. */
static struct sx_sb get_sb(struct sx_bdev *bd)
{
	struct sx_sb sb;

	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	return sb;
}

/* Read block @blkno of a device of block size @bs. */
static u8 *get_block(struct sx_bdev *bd, u32 bs, u64 blkno)
{
	u8 *buf = malloc(bs);

	assert_non_null(buf);
	sxt_bdev_peek(bd, blkno * bs, buf, bs);
	return buf;
}

/* Write block @blkno back, with a fresh header CRC if @restamp. */
static void put_block(struct sx_bdev *bd, u32 bs, u64 blkno, u8 *buf, bool restamp)
{
	struct sx_dblk_hdr *hdr = (struct sx_dblk_hdr *)buf;

	if (restamp)
		hdr->bh_crc = cpu_to_le32(sx_cksum_skip(buf, bs,
							offsetof(struct sx_dblk_hdr, bh_crc)));
	sxt_bdev_poke(bd, blkno * bs, buf, bs);
	free(buf);
}

/* Flip bit @bit of a bitmap block image. */
static void flip_bit(u8 *blk, u64 bit)
{
	blk[SX_BITMAP_HDR_SIZE + bit / 8] ^= (u8)(1u << (bit % 8));
}

/* A 512-byte-block filesystem of 8 MiB: 16384 blocks, 5 bitmap blocks. */
static struct sx_bdev *small_fs(void)
{
	return sxt_memfs(8 * MIB, 512, 0);
}

/* Allocate and free some extents and unmount cleanly. */
static void workload(struct sx_bdev *bd, u32 ntrans)
{
	struct sx_mount *mp = sxt_mount(bd);
	u64 bno[64], seed = 12345;
	u32 len[64], n = 0, i;
	struct sx_trans *tp;

	for (i = 0; i < ntrans; i++) {
		assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
		if (n < 64 && (n == 0 || sxt_rand(&seed) % 3)) {
			u64 hint = mp->m_sb.sb_datastart +
				   sxt_rand(&seed) % (mp->m_sb.sb_dblocks - mp->m_sb.sb_datastart);

			assert_int_equal(sx_alloc_extent(tp, hint, 1, 1 + sxt_rand(&seed) % 40,
							 &bno[n], &len[n]), 0);
			n++;
		} else {
			u32 k = sxt_rand(&seed) % n;

			assert_int_equal(sx_free_extent(tp, bno[k], len[k]), 0);
			bno[k] = bno[n - 1];
			len[k] = len[n - 1];
			n--;
		}
		assert_int_equal(sx_trans_commit(tp), 0);
		if (i % 10 == 9)
			assert_int_equal(sx_sync(mp), 0);
	}
	assert_int_equal(sx_unmount(mp), 0);
}

/* A new filesystem has no problems, at several block sizes. */
static void test_fresh_clean(void **state)
{
	static const u32 sizes[] = { 512, 1024, 4096, 65536 };
	struct sxt_text r;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		/* no log holds every transaction at 64 KiB: a small one is asked for */
		struct sx_bdev *bd = sxt_memfs(sizes[i] == 65536 ? 64 * MIB : 8 * MIB,
					       sizes[i], sizes[i] == 65536 ? 64 : 0);

		assert_int_equal(check(bd, &r), 0);
		assert_true(sxt_text_has(&r, "log: clean"));
		assert_true(sxt_text_has(&r, "check done: 0 problems"));
		sxt_text_free(&r);
		sx_bdev_destroy(bd);
	}
}

/* After a workload and a clean unmount: no problems, and the free count is right. */
static void test_used_clean(void **state)
{
	struct sx_bdev *bd = small_fs();
	struct sx_mount *mp;
	struct sx_info in;
	struct sxt_text r;
	char want[128];

	workload(bd, 150);
	mp = sxt_mount(bd);
	assert_int_equal(sx_get_info(mp, &in), 0);
	assert_int_equal(sx_unmount(mp), 0);

	assert_int_equal(check(bd, &r), 0);
	snprintf(want, sizeof(want), "bitmap: %llu free blocks of %llu data blocks",
		 (unsigned long long)in.in_free_blocks,
		 (unsigned long long)(in.in_dblocks - in.in_datastart));
	assert_true(sxt_text_has(&r, want));
	assert_true(in.in_free_blocks < in.in_dblocks - in.in_datastart);
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

/* A clear bit in each reserved area, with the CRC made right again. */
static void test_bitmap_reserved_bits(void **state)
{
	struct sx_bdev *base = small_fs();
	struct sx_sb sb = get_sb(base);
	u64 bits = SX_BITMAP_BITS(sb.sb_blocksize);
	struct {
		u64		blk;	/* filesystem block whose bit is cleared */
		const char	*what;
	} cases[] = {
		{ 0, "superblock copies" },
		{ 1, "superblock copies" },
		{ sb.sb_logstart + 3, "log [" },
		{ sb.sb_logstart + sb.sb_logblocks - 1, "log [" },
		{ sb.sb_bmapstart, "bitmap [" },
		{ sb.sb_bmapstart + sb.sb_bmapblocks - 1, "bitmap [" },
		{ sb.sb_dblocks, "past the end of the filesystem" },
		{ (u64)sb.sb_bmapblocks * bits - 1, "past the end of the filesystem" },
	};
	struct sxt_text r;
	u32 i;

	/* the cases must be where they say */
	assert_true(sb.sb_bmapblocks >= 2);
	assert_true(sb.sb_dblocks < (u64)sb.sb_bmapblocks * bits);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sx_bdev *bd = sxt_bdev_copy(base);
		u32 idx = cases[i].blk / bits;
		u8 *blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + idx);

		flip_bit(blk, cases[i].blk % bits);
		put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + idx, blk, true);
		assert_true(check(bd, &r) >= 1);
		assert_true(sxt_text_has(&r, cases[i].what));
		sxt_text_free(&r);
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(base);
}

/* A data bit changed without its count, then the count changed without a bit. */
static void test_bitmap_nfree(void **state)
{
	struct sx_bdev *bd = small_fs();
	struct sx_sb sb = get_sb(bd);
	u64 bits = SX_BITMAP_BITS(sb.sb_blocksize);
	struct sx_dbitmap *bm;
	struct sxt_text r;
	char want[96];
	u32 idx = 2;
	u8 *blk;

	/* mark a free data block of bitmap block 2 in use: the count is now off */
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + idx);
	bm = (struct sx_dbitmap *)blk;
	flip_bit(blk, 17);
	snprintf(want, sizeof(want), "bm_nfree is %u, but %u bits are clear",
		 le32_to_cpu(bm->bm_nfree), le32_to_cpu(bm->bm_nfree) - 1);
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + idx, blk, true);
	assert_true((u64)idx * bits + 17 >= sb.sb_datastart);
	/* and the bits no longer add up to the free count mkfs recorded */
	assert_int_equal(check(bd, &r), 2);
	assert_true(sxt_text_has(&r, want));
	assert_true(sxt_text_has(&r, "were free when the log was last left empty"));
	sxt_text_free(&r);

	/* put the bit back but change bm_nfree */
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + idx);
	bm = (struct sx_dbitmap *)blk;
	flip_bit(blk, 17);
	bm->bm_nfree = cpu_to_le32(le32_to_cpu(bm->bm_nfree) + 5);
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + idx, blk, true);
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "bm_nfree"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

/* A byte changed without a new CRC; then header fields with a good CRC. */
static void test_bitmap_crc_and_header(void **state)
{
	struct sx_bdev *base = small_fs();
	struct sx_sb sb = get_sb(base);
	struct sx_bdev *bd;
	struct sx_dbitmap *bm;
	struct sxt_text r;
	u8 *blk;

	bd = sxt_bdev_copy(base);
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 1);
	blk[sb.sb_blocksize - 1] ^= 0x40;
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 1, blk, false);
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "bitmap block 1"));
	assert_true(sxt_text_has(&r, "bad CRC"));
	/* the other blocks are still counted, and the report says one was not */
	assert_true(sxt_text_has(&r, "(1 could not)"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	bd = sxt_bdev_copy(base);
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 1);
	bm = (struct sx_dbitmap *)blk;
	bm->bm_index = cpu_to_le32(3);
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 1, blk, true);
	assert_true(check(bd, &r) >= 1);
	assert_true(sxt_text_has(&r, "bm_index is 3, expected 1"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	bd = sxt_bdev_copy(base);
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart);
	bm = (struct sx_dbitmap *)blk;
	bm->bm_hdr.bh_magic = cpu_to_le32(0x12345678);
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart, blk, true);
	assert_true(check(bd, &r) >= 1);
	assert_true(sxt_text_has(&r, "magic is 0x12345678"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	bd = sxt_bdev_copy(base);
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart);
	bm = (struct sx_dbitmap *)blk;
	bm->bm_hdr.bh_owner = cpu_to_le64(77);
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart, blk, true);
	assert_true(check(bd, &r) >= 1);
	assert_true(sxt_text_has(&r, "owner is 77"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* a block LSN the log never reached */
	bd = sxt_bdev_copy(base);
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 4);
	bm = (struct sx_dbitmap *)blk;
	bm->bm_hdr.bh_lsn = cpu_to_le64(SX_LSN(7, 5));
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 4, blk, true);
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "LSN 7/5 is not behind the log head"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* a wiped bitmap block */
	bd = sxt_bdev_copy(base);
	blk = calloc(1, sb.sb_blocksize);
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 2, blk, false);
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "all zeroes"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(base);
}

/* Rewrite superblock copy @k from @sb (sequence and all, as given). */
static void put_sb_copy(struct sx_bdev *bd, int k, const struct sx_sb *sb)
{
	u8 buf[SX_SB_SIZE];

	sx_sb_encode(sb, buf);
	sxt_bdev_poke(bd, (u64)k * sb->sb_blocksize, buf, SX_SB_SIZE);
}

/* One bad superblock copy is a problem, and everything else is still checked. */
static void test_one_sb_copy(void **state)
{
	struct sx_bdev *base = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_sb sb = get_sb(base);
	struct sx_bdev *bd;
	struct sxt_text r;
	u8 buf[SX_SB_SIZE];
	int k;

	workload(base, 40);
	sb = get_sb(base);
	for (k = 0; k < 2; k++) {
		/*
		 * A damaged copy: a uuid byte changed.  Without the newest
		 * copy a mount reads the older one, whose tail is older: the
		 * log from there on is valid again and would be replayed.
		 */
		bool newest = (u64)k == sb.sb_seq % 2;

		bd = sxt_bdev_copy(base);
		sxt_bdev_peek(bd, (u64)k * 4096, buf, SX_SB_SIZE);
		buf[offsetof(struct sx_dsb, sb_uuid) + 3] ^= 0x10;
		sxt_bdev_poke(bd, (u64)k * 4096, buf, SX_SB_SIZE);
		if (newest)
			assert_true(check(bd, &r) >= 1);
		else
			assert_int_equal(check(bd, &r), 1);
		assert_true(sxt_text_has(&r, k ? "superblock copy 1" : "superblock copy 0"));
		assert_true(sxt_text_has(&r, "bad CRC"));
		/* the other copy is the one in use */
		assert_true(sxt_text_has(&r, k ? "copy 0 in use" : "copy 1 in use"));
		/* still ran to the end */
		assert_true(sxt_text_has(&r, "note: bitmap:"));
		assert_true(sxt_text_has(&r, "check done"));
		if (!newest)
			assert_true(sxt_text_has(&r, "log: clean"));
		sxt_text_free(&r);
		sx_bdev_destroy(bd);
	}

	/* a copy whose CRC is right but whose geometry is not */
	bd = sxt_bdev_copy(base);
	sxt_bdev_peek(bd, 0, buf, SX_SB_SIZE);
	{
		struct sx_dsb *dsb = (struct sx_dsb *)buf;

		dsb->sb_logblocks = cpu_to_le32(sb.sb_logblocks + 1000000);
		dsb->sb_crc = cpu_to_le32(sx_cksum_skip(buf, SX_SB_SIZE,
							offsetof(struct sx_dsb, sb_crc)));
	}
	sxt_bdev_poke(bd, 0, buf, SX_SB_SIZE);
	assert_true(check(bd, &r) >= 2);
	assert_true(sxt_text_has(&r, "CRC is right but fields fail verification"));
	assert_true(sxt_text_has(&r, "sb_logblocks is"));
	assert_true(sxt_text_has(&r, "note: bitmap:"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* two valid copies that disagree */
	bd = sxt_bdev_copy(base);
	{
		struct sx_sb other = sb;
		int oldk = 1 - (int)(sb.sb_seq % 2);

		other.sb_feat_compat = 0x100;	/* unknown compat bits mount fine */
		other.sb_seq = sb.sb_seq - 1;
		put_sb_copy(bd, oldk, &other);
	}
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "sb_feat_compat is"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* two valid copies of two filesystems */
	bd = sxt_bdev_copy(base);
	{
		struct sx_sb other = sb;
		int oldk = 1 - (int)(sb.sb_seq % 2);
		char want[96];

		other.sb_uuid[0] ^= 1;
		other.sb_seq = sb.sb_seq - 1;
		put_sb_copy(bd, oldk, &other);
		assert_true(check(bd, &r) >= 1);
		snprintf(want, sizeof(want),
			 "superblock copy %d: uuid differs from copy %d's (another filesystem?)",
			 oldk, 1 - oldk);
		assert_true(sxt_text_has(&r, want));
	}
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* a valid copy whose sequence number is in the wrong copy */
	bd = sxt_bdev_copy(base);
	{
		struct sx_sb other = sb;
		int oldk = 1 - (int)(sb.sb_seq % 2);

		other.sb_seq = sb.sb_seq + 2;	/* now the newest, same parity */
		put_sb_copy(bd, oldk, &other);
	}
	assert_true(check(bd, &r) >= 1);
	assert_true(sxt_text_has(&r, "belongs in copy"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(base);
}

/* Feature bits this engine does not know: a mount would refuse them. */
static void test_unknown_features(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_sb sb = get_sb(bd), c;
	struct sxt_text r;

	c = sb;
	c.sb_feat_incompat = 0x4;
	c.sb_seq = 2;
	put_sb_copy(bd, 0, &c);
	c.sb_seq = 3;
	put_sb_copy(bd, 1, &c);
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "refuses unknown bits: incompat 0x4"));
	/* the rest was still checked */
	assert_true(sxt_text_has(&r, "note: bitmap:"));
	sxt_text_free(&r);

	c = sb;
	c.sb_feat_log_incompat = 0x80 | SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
	c.sb_seq = 4;
	put_sb_copy(bd, 0, &c);
	c.sb_seq = 5;
	put_sb_copy(bd, 1, &c);
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "log_incompat 0x80"));
	sxt_text_free(&r);

	/* read-only-compatible bits: a read-write mount refuses them too */
	c = sb;
	c.sb_feat_ro_compat = 0x20;
	c.sb_seq = 6;
	put_sb_copy(bd, 0, &c);
	c.sb_seq = 7;
	put_sb_copy(bd, 1, &c);
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "problem: features: a read-write mount refuses unknown bits: incompat 0x0, ro_compat 0x20, log_incompat 0x0"));
	sxt_text_free(&r);

	c = sb;
	c.sb_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
	c.sb_feat_compat = 0x10;	/* ignored by every mount */
	c.sb_seq = 8;
	put_sb_copy(bd, 0, &c);
	c.sb_seq = 9;
	put_sb_copy(bd, 1, &c);
	assert_int_equal(check(bd, &r), 0);
	assert_true(sxt_text_has(&r, "(atomic_swap)"));
	assert_true(sxt_text_has(&r, "unknown compat bits 0x10 are ignored"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

/* With both copies bad there is nothing to go on: problems, and no crash. */
static void test_both_sb_copies(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	u8 junk[SX_SB_SIZE];
	struct sxt_text r;
	u32 i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (u8)(i * 37 + 11);
	sxt_bdev_poke(bd, 100, junk, 64);
	sxt_bdev_poke(bd, 4096, junk, sizeof(junk));
	assert_true(check(bd, &r) >= 2);
	assert_true(sxt_text_has(&r, "superblock copy 0"));
	assert_true(sxt_text_has(&r, "superblock copy 1"));
	assert_true(sxt_text_has(&r, "no valid superblock"));
	sxt_text_free(&r);

	/* wiped entirely */
	memset(junk, 0, sizeof(junk));
	sxt_bdev_poke(bd, 0, junk, sizeof(junk));
	sxt_bdev_poke(bd, 4096, junk, sizeof(junk));
	assert_true(check(bd, &r) >= 2);
	assert_true(sxt_text_has(&r, "all zeroes"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

/*
 * Fields of the older superblock copy that only a verifier refuses (CRC
 * right): each is named, and the copy in use is still checked.
 */
static void test_sb_copy_fields(void **state)
{
	enum { VERSION, SEQ_ZERO, TAIL_CYCLE, SEQ_HUGE, TAIL_BLOCK, MAGIC, NCASES };
	static const char *const what[NCASES] = {
		[VERSION] = "sb_version is 77, expected",
		[SEQ_ZERO] = "sb_seq is 0, which is never written",
		[TAIL_CYCLE] = "log tail cycle is 0",
		[SEQ_HUGE] = "which no filesystem reaches",
		[TAIL_BLOCK] = "is past the log's",
		[MAGIC] = "magic is 0x12345678, expected",
	};
	struct sx_bdev *base = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_sb sb = get_sb(base);
	int older = 1 - (int)(sb.sb_seq % 2), c;

	for (c = 0; c < NCASES; c++) {
		struct sx_bdev *bd = sxt_bdev_copy(base);
		u8 buf[SX_SB_SIZE];
		struct sx_dsb *dsb = (struct sx_dsb *)buf;
		struct sxt_text r;

		sx_sb_encode(&sb, buf);
		dsb->sb_seq = cpu_to_le64(sb.sb_seq - 1);
		switch (c) {
		case VERSION:
			dsb->sb_version = cpu_to_le32(77);
			break;
		case SEQ_ZERO:
			dsb->sb_seq = 0;
			break;
		case TAIL_CYCLE:
			dsb->sb_log_tail = cpu_to_le64(SX_LSN(0, 0));
			break;
		case SEQ_HUGE:
			dsb->sb_seq = cpu_to_le64(SX_SB_SEQ_MAX + 1);
			break;
		case TAIL_BLOCK:
			dsb->sb_log_tail = cpu_to_le64(SX_LSN(1, sb.sb_logblocks));
			break;
		case MAGIC:
			dsb->sb_magic = cpu_to_le32(0x12345678);
			break;
		}
		dsb->sb_crc = cpu_to_le32(sx_cksum_skip(buf, SX_SB_SIZE,
							offsetof(struct sx_dsb, sb_crc)));
		sxt_bdev_poke(bd, (u64)older * 4096, buf, SX_SB_SIZE);
		/* the damage, the field, and (for the version) the copies' disagreement */
		assert_true(check(bd, &r) >= (c == MAGIC ? 1 : 2));
		if (c != MAGIC)
			assert_true(sxt_text_has(&r, "CRC is right but fields fail verification"));
		assert_true(sxt_text_has(&r, what[c]));
		assert_true(sxt_text_has(&r, "log: clean"));
		sxt_text_free(&r);
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(base);
}

/* A bitmap block whose CRC is right but whose header says another block, or padding. */
static void test_bitmap_header_fields(void **state)
{
	struct sx_bdev *base = small_fs();
	struct sx_sb sb = get_sb(base);
	struct sx_bdev *bd;
	struct sx_dbitmap *bm;
	struct sxt_text r;
	u8 *blk;

	bd = sxt_bdev_copy(base);
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 1);
	bm = (struct sx_dbitmap *)blk;
	bm->bm_hdr.bh_blkno = cpu_to_le64(sb.sb_bmapstart + 2);
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 1, blk, true);
	assert_true(check(bd, &r) >= 1);
	assert_true(sxt_text_has(&r, "header says it is block"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	bd = sxt_bdev_copy(base);
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 3);
	bm = (struct sx_dbitmap *)blk;
	bm->bm_pad = cpu_to_le64(5);
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 3, blk, true);
	assert_true(check(bd, &r) >= 1);
	assert_true(sxt_text_has(&r, "bitmap block 3"));
	assert_true(sxt_text_has(&r, "bm_pad is 0x5, expected 0"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* another filesystem's uuid, an owner, another index: each named */
	bd = sxt_bdev_copy(base);
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 2);
	bm = (struct sx_dbitmap *)blk;
	bm->bm_hdr.bh_uuid[5] ^= 0x40;
	bm->bm_hdr.bh_owner = cpu_to_le64(9);
	bm->bm_index = cpu_to_le32(7);
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 2, blk, true);
	assert_true(check(bd, &r) >= 3);
	{
		char want[96];

		snprintf(want, sizeof(want), "bitmap block 2 (block %llu): uuid is not the filesystem's",
			 (unsigned long long)sb.sb_bmapstart + 2);
		assert_true(sxt_text_has(&r, want));
	}
	assert_true(sxt_text_has(&r, "owner is 9, expected 0"));
	assert_true(sxt_text_has(&r, "bm_index is 7, expected 2"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* an LSN that is no place in the log */
	bd = sxt_bdev_copy(base);
	blk = get_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 1);
	bm = (struct sx_dbitmap *)blk;
	bm->bm_hdr.bh_lsn = cpu_to_le64(SX_LSN(0, 5));
	put_block(bd, sb.sb_blocksize, sb.sb_bmapstart + 1, blk, true);
	assert_true(check(bd, &r) >= 1);
	assert_true(sxt_text_has(&r, "bitmap block 1 (block"));
	assert_true(sxt_text_has(&r, "): LSN 0/5 is not a log position"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(base);
}

/* Whether @t names a read failure, in any of the checker's and printer's words. */
static bool says_unreadable(const struct sxt_text *t)
{
	return t->text && (sxt_text_has(t, "cannot read") || sxt_text_has(t, "read error") ||
			   sxt_text_has(t, "unreadable") || sxt_text_has(t, "I/O error"));
}

/*
 * A read error at any read of the checker or the log printer (superblock
 * copies, log records, bitmap, fsinfo, inodes and their trees) is reported,
 * never taken for a clean image, and neither stops early without saying so.
 */
static void test_read_errors(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0), *cbd;
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_crashdev *cd;
	struct sxt_text r;
	u8 data[8192];
	u64 problems, clean, n;
	int fd, error, pass;

	/* files with data, then records the log still holds */
	memset(data, 7, sizeof(data));
	assert_int_equal(sx_create(mp, "a", 0644, &fd), 0);
	assert_int_equal(sx_pwrite(mp, fd, data, sizeof(data), 0), (s64)sizeof(data));
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_checkpoint(mp), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &fd), 0);
	assert_int_equal(sx_pwrite(mp, fd, data, sizeof(data), 4096), (s64)sizeof(data));
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_shutdown(mp);
	sx_unmount(mp);
	assert_int_equal(sx_check(bd, NULL, NULL, &clean), 0);

	for (pass = 0; pass < 2; pass++) {
		for (n = 1;; n++) {
			struct sx_crashdev_stats st;

			assert_true(n < 10000);
			assert_int_equal(sx_crashdev_create(bd, n, &cbd, &cd), 0);
			sx_crashdev_fail(cd, SX_IO_READ, n, true, -EIO);
			memset(&r, 0, sizeof(r));
			problems = 0;
			if (pass == 0)
				error = sx_check(cbd, sxt_text_line, &r, &problems);
			else
				error = sx_logprint(cbd, sxt_text_line, &r);
			sx_crashdev_get_stats(cd, &st);
			sx_bdev_destroy(cbd);
			if (!st.cs_injected_errors) {
				/* past the last read: the same report as without the fault */
				assert_int_equal(error, 0);
				if (pass == 0)
					assert_int_equal(problems, clean);
				sxt_text_free(&r);
				break;
			}
			if (error == 0 && pass == 0 && problems <= clean)
				fail_msg("check: read %llu failed, and the report is clean:\n%s",
					 (unsigned long long)n, r.text ? r.text : "");
			if (error == 0 && !says_unreadable(&r))
				fail_msg("%s: read %llu failed, and the report does not say so:\n%s",
					 pass ? "logprint" : "check", (unsigned long long)n,
					 r.text ? r.text : "");
			sxt_text_free(&r);
		}
		assert_true(n > 3);
	}
	sx_bdev_destroy(bd);
}

/* Committed and synced but not checkpointed: the log needs recovery. */
static void test_dirty_log(void **state)
{
	struct sx_bdev *bd = small_fs();
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sxt_text r;
	u64 bno;
	u32 len;

	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 1, 8, &bno, &len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_free_extent(tp, bno, 3), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_shutdown(mp);
	assert_int_equal(sx_unmount(mp), -EIO);

	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "needs recovery: 2 valid records"));
	sxt_text_free(&r);

	/* recovery makes it clean */
	mp = sxt_mount(bd);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, &r), 0);
	assert_true(sxt_text_has(&r, "log: clean"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

/* A logged BUF op for a block recovery may not touch, with a good record CRC. */
static void test_log_bad_op(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_sb sb;
	struct sx_trans *tp;
	struct sx_dlog_rec *rec;
	struct sxt_text r;
	u8 *buf, *p;
	u32 i, blocks;
	u64 bno;
	u32 len;
	bool found = false;

	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 1, 4, &bno, &len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_shutdown(mp);
	sx_unmount(mp);

	sb = get_sb(bd);
	buf = get_block(bd, 4096, sb.sb_logstart + SX_LSN_BLOCK(sb.sb_log_tail));
	rec = (struct sx_dlog_rec *)buf;
	assert_int_equal(le32_to_cpu(rec->lr_magic), SX_LOG_MAGIC);
	blocks = le32_to_cpu(rec->lr_blocks);
	assert_int_equal(blocks, 1);
	p = buf + sizeof(*rec);
	for (i = 0; i < le32_to_cpu(rec->lr_nops); i++) {
		struct sx_dlog_op *op = (struct sx_dlog_op *)p;

		if (le16_to_cpu(op->lo_type) == SX_LOG_OP_BUF) {
			struct sx_dlog_buf *lb = (struct sx_dlog_buf *)(op + 1);

			lb->lb_blkno = cpu_to_le64(1);	/* the secondary superblock */
			found = true;
			break;
		}
		p += sizeof(*op) + sx_roundup(le32_to_cpu(op->lo_len), SX_LOG_OP_ALIGN);
	}
	assert_true(found);
	rec->lr_crc = cpu_to_le32(sx_cksum_skip(buf, 4096, offsetof(struct sx_dlog_rec, lr_crc)));
	sxt_bdev_poke(bd, (sb.sb_logstart + SX_LSN_BLOCK(sb.sb_log_tail)) * 4096, buf, 4096);
	free(buf);

	assert_int_equal(check(bd, &r), 2);
	assert_true(sxt_text_has(&r, "needs recovery"));
	assert_true(sxt_text_has(&r, "outside the metadata area"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

/* Garbage anywhere: the checker reports and returns, never crashes or spins. */
static void test_garbage(void **state)
{
	struct sx_bdev *base = small_fs();
	struct sx_sb sb = get_sb(base);
	u64 seed = 99, off, end;
	struct sxt_text r;
	u8 *junk = malloc(64 * 1024);
	int round;

	assert_non_null(junk);
	for (round = 0; round < 4; round++) {
		struct sx_bdev *bd = sxt_bdev_copy(base);
		u32 i;

		for (i = 0; i < 64 * 1024; i++)
			junk[i] = (u8)sxt_rand(&seed);
		switch (round) {
		case 0:		/* the log */
			off = sb.sb_logstart * sb.sb_blocksize;
			end = (sb.sb_logstart + sb.sb_logblocks) * sb.sb_blocksize;
			break;
		case 1:		/* the bitmap */
			off = sb.sb_bmapstart * sb.sb_blocksize;
			end = (sb.sb_bmapstart + sb.sb_bmapblocks) * sb.sb_blocksize;
			break;
		case 2:		/* both superblock copies */
			off = 0;
			end = 2 * sb.sb_blocksize;
			break;
		default:	/* everything up to the data */
			off = 0;
			end = sb.sb_datastart * sb.sb_blocksize;
			break;
		}
		for (; off < end; off += 64 * 1024)
			sxt_bdev_poke(bd, off, junk, (u32)sx_min(end - off, (u64)64 * 1024));
		if (round == 0) {
			/* a log of junk has no valid record: still clean */
			assert_int_equal(check(bd, &r), 0);
		} else {
			assert_true(check(bd, &r) >= 1);
		}
		sxt_text_free(&r);
		sx_bdev_destroy(bd);
	}
	free(junk);
	sx_bdev_destroy(base);

	/* a device too small to hold a superblock at all */
	{
		struct sx_bdev *tiny;

		assert_int_equal(sx_memdev_create(512, 512, &tiny), 0);
		assert_true(check(tiny, &r) >= 1);
		sxt_text_free(&r);
		sx_bdev_destroy(tiny);
	}
}

/* A device whose sectors are larger than the filesystem's blocks. */
static void test_big_sectors(void **state)
{
	struct sx_bdev *small = sxt_memfs(8 * MIB, 1024, 0), *big;
	struct sxt_text r;
	u8 *buf = malloc(MIB);
	u64 off;

	assert_non_null(buf);
	assert_int_equal(sx_memdev_create(8 * MIB, 4096, &big), 0);
	for (off = 0; off < 8 * MIB; off += MIB) {
		assert_int_equal(small->bd_ops->read(small, off, buf, MIB), 0);
		assert_int_equal(big->bd_ops->write(big, off, buf, MIB, 0), 0);
	}
	free(buf);
	assert_int_equal(check(big, &r), 1);
	assert_true(sxt_text_has(&r, "device sector size 4096 is larger than the block size 1024"));
	sxt_text_free(&r);
	sx_bdev_destroy(big);
	sx_bdev_destroy(small);
}

/* Bad arguments are refused, and a NULL report or count is allowed. */
static void test_args(void **state)
{
	struct sx_bdev *bd = small_fs();
	u64 problems = 5;

	assert_int_equal(sx_check(NULL, sxt_text_line, NULL, &problems), -EINVAL);
	assert_int_equal(sx_check(bd, NULL, NULL, &problems), 0);
	assert_int_equal(problems, 0);
	assert_int_equal(sx_check(bd, NULL, NULL, NULL), 0);
	sx_bdev_destroy(bd);
}

/* Run every checker test. */
/*
 * Every allocation of the checker and of the log printer fails in turn on
 * a clean image: each fails with -ENOMEM, reports no problem but the
 * failure itself, and keeps nothing it allocated.  The checker used to
 * report the blocks of records it had skipped as leaked, and their files'
 * block counts and a directory's size as wrong.
 */
static void test_enomem(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_alloc_stats a0, a1;
	struct sxt_text r;
	bool hit = true;
	s64 ret;
	u64 n;
	struct sx_mount *mp = sxt_mount(bd);
	static u8 data[8 * 4096];
	int pass, fails = 0, a, b;

	/* two files sharing blocks: inodes, directory, refcounts; a log to print */
	memset(data, 0x3c, sizeof(data));
	assert_int_equal(sx_create(mp, "a", 0644, &a), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &b), 0);
	assert_int_equal(sx_pwrite(mp, a, data, sizeof(data), 0), (s64)sizeof(data));
	assert_int_equal(sx_clone_range(mp, b, 0, a, 0, 4 * 4096), 0);
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_unmount(mp), 0);
	/* the inodes unmount let go are freed after a grace period: not during the count */
	sx_rcu_barrier();
	assert_int_equal(sxc_checker(bd, 0, NULL), 0);
	for (pass = 0; pass < 2; pass++) {
		hit = true;
		for (n = 1; hit; n++) {
			assert_true(n < 100000);
			sx_alloc_get_stats(&a0);
			sx_alloc_fail(n, false);
			memset(&r, 0, sizeof(r));
			if (pass == 0)
				ret = sxc_checker(bd, 0, &r);
			else
				ret = sx_logprint(bd, sxt_text_line, &r);
			sx_alloc_fail(0, false);
			sx_alloc_get_stats(&a1);
			hit = a1.as_failed != a0.as_failed;
			if (hit) {
				assert_int_equal(ret, -ENOMEM);
				fails++;
			} else {
				assert_int_equal(ret, 0);
			}
			/* no damage is made up from what was not looked at */
			if (r.problem_lines) {
				assert_int_equal(r.problem_lines, 1);
				assert_true(sxt_text_has(&r, "out of memory (-12)"));
			}
			assert_int_equal(a1.as_live, a0.as_live);
			sxt_text_free(&r);
		}
	}
	/* the checker's walks and the printer's buffers: many points */
	assert_true(fails > 20);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_clean),
		cmocka_unit_test(test_used_clean),
		cmocka_unit_test(test_bitmap_reserved_bits),
		cmocka_unit_test(test_bitmap_nfree),
		cmocka_unit_test(test_bitmap_crc_and_header),
		cmocka_unit_test(test_one_sb_copy),
		cmocka_unit_test(test_unknown_features),
		cmocka_unit_test(test_both_sb_copies),
		cmocka_unit_test(test_sb_copy_fields),
		cmocka_unit_test(test_bitmap_header_fields),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_dirty_log),
		cmocka_unit_test(test_log_bad_op),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_big_sectors),
		cmocka_unit_test(test_args),
		cmocka_unit_test(test_enomem),
	};

	sx_thread_enter();
	sxt_quiet();
	sxt_register_test_intent();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
