/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the superblock (engine/sb.c) and mkfs (engine/mkfs.c):
 * encode/decode at every block size, geometry, a rejected corruption for
 * every field, the CRC, the two-copy read and write protocol, feature checks,
 * and what mkfs leaves on a device.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "sxtest.h"
#include "sxshim.h"
#include "sxtext.h"
#include "sb.h"
#include "fsinfo.h"
#include "inode.h"

/* Data blocks a new filesystem uses: the fsinfo block and the root directory. */
#define MKFS_USED	2

static const u8 test_uuid[SX_UUID_SIZE] = {
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x47, 0x88,
	0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01,
};

/* ---------------------------------------------------------------- helpers */

/* A fresh memory device. */
static struct sx_bdev *memdev(u64 size)
{
	struct sx_bdev *bd;

	assert_int_equal(sx_memdev_create(size, 512, &bd), 0);
	return bd;
}

/*
 * mkfs with a fixed uuid and block size (and other defaults).  These tests
 * look at the superblocks and the layout at every block size, also those
 * too large for any log to hold the largest transaction.
 */
static void mkfs_bs(struct sx_bdev *bd, u32 bs)
{
	struct sx_mkfs_opts mo = { .mk_blocksize = bs, .mk_uuid = test_uuid,
				   .mk_flags = SX_MKFS_SMALL_LOG };

	assert_int_equal(sx_mkfs(bd, &mo), 0);
}

/* The geometry of a @devsize device at block size @bs, with a label. */
static void good_sb(struct sx_sb *sb, u64 devsize, u32 bs)
{
	struct sx_geometry_opts go = {
		.go_blocksize = bs, .go_uuid = test_uuid, .go_label = "test-label",
	};

	assert_int_equal(sx_sb_geometry(&go, devsize, 512, sb), 0);
}

/* Reseal SX_SB_SIZE bytes at @buf with a correct CRC. */
static void reseal(void *buf)
{
	struct sx_dsb *d = buf;

	d->sb_crc = cpu_to_le32(sx_cksum_skip(buf, SX_SB_SIZE,
					      offsetof(struct sx_dsb, sb_crc)));
}

/* Read the raw superblock area at byte offset @off. */
static void raw_read(struct sx_bdev *bd, u64 off, u8 *buf)
{
	assert_int_equal(bd->bd_ops->read(bd, off, buf, SX_SB_SIZE), 0);
}

/* Write the raw superblock area at byte offset @off. */
static void raw_write(struct sx_bdev *bd, u64 off, const u8 *buf)
{
	assert_int_equal(bd->bd_ops->write(bd, off, buf, SX_SB_SIZE, 0), 0);
}

/* Two decoded superblocks are equal in every field. */
static void assert_sb_equal(const struct sx_sb *a, const struct sx_sb *b)
{
	assert_int_equal(a->sb_version, b->sb_version);
	assert_int_equal(a->sb_blocksize, b->sb_blocksize);
	assert_int_equal(a->sb_blocklog, b->sb_blocklog);
	assert_int_equal(a->sb_sectsize, b->sb_sectsize);
	assert_int_equal(a->sb_dblocks, b->sb_dblocks);
	assert_int_equal(a->sb_seq, b->sb_seq);
	assert_memory_equal(a->sb_uuid, b->sb_uuid, SX_UUID_SIZE);
	assert_int_equal(a->sb_feat_compat, b->sb_feat_compat);
	assert_int_equal(a->sb_feat_ro_compat, b->sb_feat_ro_compat);
	assert_int_equal(a->sb_feat_incompat, b->sb_feat_incompat);
	assert_int_equal(a->sb_feat_log_incompat, b->sb_feat_log_incompat);
	assert_int_equal(a->sb_logstart, b->sb_logstart);
	assert_int_equal(a->sb_logblocks, b->sb_logblocks);
	assert_int_equal(a->sb_log_tail, b->sb_log_tail);
	assert_int_equal(a->sb_log_epoch, b->sb_log_epoch);
	assert_int_equal(a->sb_log_tail_prev_crc, b->sb_log_tail_prev_crc);
	assert_int_equal(a->sb_bmapstart, b->sb_bmapstart);
	assert_int_equal(a->sb_bmapblocks, b->sb_bmapblocks);
	assert_int_equal(a->sb_datastart, b->sb_datastart);
	assert_int_equal(a->sb_fsinfo, b->sb_fsinfo);
	assert_int_equal(a->sb_ctime, b->sb_ctime);
	assert_string_equal(a->sb_label, b->sb_label);
}

/* Captured engine messages, for checking what an error says. */
static char logbuf[8192];

/* Log callback that appends every message to logbuf. */
static void capture_cb(void *arg, enum sx_log_level level, const char *msg)
{
	size_t n = strlen(logbuf);

	snprintf(logbuf + n, sizeof(logbuf) - n, "%s\n", msg);
}

/* Start capturing engine messages. */
static void capture_start(void)
{
	logbuf[0] = '\0';
	sx_set_log_callback(capture_cb, NULL);
}

/* ---------------------------------------------------------------- encode/decode */

/* Every block size: geometry, encode, decode give back the same superblock. */
static void test_roundtrip_all_blocksizes(void **state)
{
	u8 buf[SX_SB_SIZE], buf2[SX_SB_SIZE];
	struct sx_sb sb, out;
	u32 bs;

	for (bs = SX_MIN_BLOCKSIZE; bs <= SX_MAX_BLOCKSIZE; bs <<= 1) {
		good_sb(&sb, 256ull << 20, bs);
		sb.sb_seq = 7 + bs;
		sb.sb_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
		sb.sb_log_tail = SX_LSN(3, sb.sb_logblocks - 1);
		sb.sb_log_epoch = 9;
		sb.sb_log_tail_prev_crc = 0xabcdef01u;
		sx_sb_encode(&sb, buf);
		assert_int_equal(sx_sb_decode(NULL, buf, &out), 0);
		assert_sb_equal(&sb, &out);
		assert_int_equal(out.sb_blocklog, sx_ilog2(bs));
		/* encoding the decoded copy gives the same bytes */
		sx_sb_encode(&out, buf2);
		assert_memory_equal(buf, buf2, SX_SB_SIZE);
	}
}

/* A label of exactly SX_LABEL_SIZE bytes has no NUL and is still valid. */
static void test_full_label(void **state)
{
	struct sx_geometry_opts go = { .go_uuid = test_uuid,
		.go_label = "0123456789abcdef0123456789ABCDEF" };
	u8 buf[SX_SB_SIZE];
	struct sx_sb sb, out;

	assert_int_equal(sx_sb_geometry(&go, 64ull << 20, 512, &sb), 0);
	sx_sb_encode(&sb, buf);
	assert_int_equal(sx_sb_decode(NULL, buf, &out), 0);
	assert_string_equal(out.sb_label, go.go_label);
	go.go_label = "0123456789abcdef0123456789ABCDEFx";
	assert_int_equal(sx_sb_geometry(&go, 64ull << 20, 512, &sb), -EINVAL);
}

/* ---------------------------------------------------------------- geometry */

/* Layout rules that hold for every geometry. */
static void check_layout(const struct sx_sb *sb, u64 devsize)
{
	u64 bits = SX_BITMAP_BITS(sb->sb_blocksize);
	u8 buf[SX_SB_SIZE];
	struct sx_sb out;

	assert_int_equal(sb->sb_version, SX_VERSION);
	assert_true(sb->sb_dblocks <= devsize / sb->sb_blocksize);
	assert_int_equal(sb->sb_logstart, 2);
	assert_true(sb->sb_logblocks >= SX_MIN_LOGBLOCKS);
	assert_int_equal(sb->sb_bmapstart, 2 + sb->sb_logblocks);
	assert_int_equal(sb->sb_bmapblocks, (sb->sb_dblocks + bits - 1) / bits);
	assert_true((u64)sb->sb_bmapblocks * bits >= sb->sb_dblocks);
	assert_true((u64)(sb->sb_bmapblocks - 1) * bits < sb->sb_dblocks);
	assert_int_equal(sb->sb_datastart, sb->sb_bmapstart + sb->sb_bmapblocks);
	assert_true(sb->sb_datastart + 16 <= sb->sb_dblocks);
	/* the fsinfo block is the first data block */
	assert_int_equal(sb->sb_fsinfo, sb->sb_datastart);
	assert_int_equal(sb->sb_log_tail, SX_LSN(1, 0));
	assert_int_equal(sb->sb_log_epoch, 0);
	assert_int_equal(sb->sb_seq, 1);
	/* a mount accepts whatever the geometry makes */
	sx_sb_encode(sb, buf);
	assert_int_equal(sx_sb_decode(NULL, buf, &out), 0);
}

/* Default log sizes across device sizes, and explicit choices. */
static void test_geometry_sizes(void **state)
{
	static const struct {
		u64 devsize;
		u32 bs;
		u32 logblocks;		/* expected default */
	} cases[] = {
		{ 1ull << 20, 4096, 64 },		/* a quarter of the device */
		{ 64ull << 20, 4096, 1024 },		/* the 4 MiB floor */
		{ 1ull << 30, 4096, 4096 },		/* 16 MiB */
		{ 1ull << 30, 512, 32768 },
		{ 16ull << 30, 4096, 16384 },		/* 64 MiB cap */
		{ 1ull << 40, 4096, 16384 },
		{ 1ull << 40, 65536, 1024 },
		{ 8ull << 20, 65536, 64 },		/* SX_MIN_LOGBLOCKS floor */
		{ 100ull << 20, 1024, 4096 },		/* 4 MiB > 1/64 */
		{ 1ull << 30, 1024, 16384 },		/* 16 MiB = 1/64 */
	};
	struct sx_geometry_opts go = { 0 };
	struct sx_sb sb;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		go.go_blocksize = cases[i].bs;
		assert_int_equal(sx_sb_geometry(&go, cases[i].devsize, 512, &sb), 0);
		assert_int_equal(sb.sb_blocksize, cases[i].bs);
		assert_int_equal(sb.sb_dblocks, cases[i].devsize / cases[i].bs);
		assert_int_equal(sb.sb_logblocks, cases[i].logblocks);
		check_layout(&sb, cases[i].devsize);
	}

	/* the default block size is 4096 */
	go.go_blocksize = 0;
	assert_int_equal(sx_sb_geometry(&go, 64ull << 20, 512, &sb), 0);
	assert_int_equal(sb.sb_blocksize, SX_DEFAULT_BLOCKSIZE);

	/* an explicit log and filesystem size are taken as given */
	go.go_blocksize = 4096;
	go.go_logblocks = 100;
	go.go_dblocks = 5000;
	assert_int_equal(sx_sb_geometry(&go, 64ull << 20, 512, &sb), 0);
	assert_int_equal(sb.sb_logblocks, 100);
	assert_int_equal(sb.sb_dblocks, 5000);
	check_layout(&sb, 64ull << 20);

	/* a small device gets a smaller default log, never below the minimum */
	memset(&go, 0, sizeof(go));
	go.go_blocksize = 512;
	assert_int_equal(sx_sb_geometry(&go, 200 * 512, 512, &sb), 0);
	assert_true(sb.sb_logblocks >= SX_MIN_LOGBLOCKS && sb.sb_logblocks < 512);
	check_layout(&sb, 200 * 512);

	/* the smallest device that fits: 2 + 64 log + 1 bitmap + 16 data */
	assert_int_equal(sx_sb_geometry(&go, 83 * 512, 512, &sb), 0);
	assert_int_equal(sb.sb_datastart + 16, sb.sb_dblocks);
	assert_int_equal(sx_sb_geometry(&go, 82 * 512, 512, &sb), -EINVAL);

	/* the sector size is kept */
	go.go_blocksize = 4096;
	assert_int_equal(sx_sb_geometry(&go, 64ull << 20, 4096, &sb), 0);
	assert_int_equal(sb.sb_sectsize, 4096);
}

/* Every impossible geometry is refused with -EINVAL. */
static void test_geometry_invalid(void **state)
{
	static const u8 nil[SX_UUID_SIZE];
	struct sx_geometry_opts go;
	struct sx_sb sb;
	u64 dev = 64ull << 20;

	memset(&go, 0, sizeof(go));
	go.go_blocksize = 3000;
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), -EINVAL);
	go.go_blocksize = 256;
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), -EINVAL);
	go.go_blocksize = 131072;
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), -EINVAL);

	memset(&go, 0, sizeof(go));
	assert_int_equal(sx_sb_geometry(&go, dev, 8192, &sb), -EINVAL);	/* sector > block */
	assert_int_equal(sx_sb_geometry(&go, dev, 0, &sb), -EINVAL);
	assert_int_equal(sx_sb_geometry(&go, dev, 768, &sb), -EINVAL);

	go.go_logblocks = SX_MIN_LOGBLOCKS - 1;
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), -EINVAL);
	go.go_logblocks = SX_MAX_LOGBLOCKS + 1;
	assert_int_equal(sx_sb_geometry(&go, 1ull << 40, 512, &sb), -EINVAL);
	go.go_logblocks = 16384 - 2 - 1 - 15;		/* leaves 15 data blocks */
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), -EINVAL);
	go.go_logblocks = 16384 - 2 - 1 - 16;		/* leaves exactly 16 */
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), 0);

	memset(&go, 0, sizeof(go));
	go.go_dblocks = dev / 4096 + 1;
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), -EINVAL);

	memset(&go, 0, sizeof(go));
	go.go_uuid = nil;
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), -EINVAL);

	memset(&go, 0, sizeof(go));
	go.go_feat_log_incompat = 1u << 7;
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), -EINVAL);
	go.go_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
	assert_int_equal(sx_sb_geometry(&go, dev, 512, &sb), 0);
	assert_int_equal(sb.sb_feat_log_incompat, SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP);
}

/* Clock-derived uuids are distinct, version 4, never nil; given ones are kept. */
static void test_geometry_uuid(void **state)
{
	struct sx_geometry_opts go = { 0 };
	struct sx_sb a, b;

	assert_int_equal(sx_sb_geometry(&go, 64ull << 20, 512, &a), 0);
	assert_int_equal(sx_sb_geometry(&go, 64ull << 20, 512, &b), 0);
	assert_memory_not_equal(a.sb_uuid, b.sb_uuid, SX_UUID_SIZE);
	assert_int_equal(a.sb_uuid[6] >> 4, 4);
	assert_int_equal(a.sb_uuid[8] >> 6, 2);
	assert_true(a.sb_ctime > 0);

	go.go_uuid = test_uuid;
	assert_int_equal(sx_sb_geometry(&go, 64ull << 20, 512, &a), 0);
	assert_memory_equal(a.sb_uuid, test_uuid, SX_UUID_SIZE);
}

/* ---------------------------------------------------------------- corruption */

enum expect {
	X_CORRUPT,	/* decode: -EFSCORRUPTED */
	X_FEATURE,	/* decode accepts; a read-write mount refuses (-EOPNOTSUPP) */
	X_ANY,		/* every value is valid: it must decode and round-trip */
};

struct corruption {
	const char	*what;
	size_t		off, size;	/* the bytes it changes */
	enum expect	expect;
	void		(*fn)(struct sx_dsb *d, const struct sx_sb *g);
};

#define FIELD(f)	offsetof(struct sx_dsb, f), sizeof(((struct sx_dsb *)0)->f)
#define C(name, f, x, body) \
	static void c_##name(struct sx_dsb *d, const struct sx_sb *g) { body; }
#define E(name, f, x)	{ #name, FIELD(f), x, c_##name }

/*
 * The corruptions, each as one function; the test table below lists them with
 * the field they hit, and the test checks that together they hit every byte.
 */
C(magic, sb_magic, X_CORRUPT, d->sb_magic = cpu_to_le32(0x12345678))
C(magic_xfs, sb_magic, X_CORRUPT, d->sb_magic = cpu_to_le32(0x58465342))
C(version0, sb_version, X_CORRUPT, d->sb_version = 0)
C(version2, sb_version, X_CORRUPT, d->sb_version = cpu_to_le32(SX_VERSION + 1))
C(bs0, sb_blocksize, X_CORRUPT, d->sb_blocksize = 0)
C(bs1000, sb_blocksize, X_CORRUPT, d->sb_blocksize = cpu_to_le32(1000))
C(bs256, sb_blocksize, X_CORRUPT, d->sb_blocksize = cpu_to_le32(256))
C(bs128k, sb_blocksize, X_CORRUPT, d->sb_blocksize = cpu_to_le32(131072))
C(bs_other, sb_blocksize, X_CORRUPT, d->sb_blocksize = cpu_to_le32(g->sb_blocksize * 2))
C(dblocks0, sb_dblocks, X_CORRUPT, d->sb_dblocks = 0)
C(dblocks_max, sb_dblocks, X_CORRUPT, d->sb_dblocks = cpu_to_le64(~0ull))
C(dblocks_eq_data, sb_dblocks, X_CORRUPT, d->sb_dblocks = cpu_to_le64(g->sb_datastart))
C(dblocks_bmap, sb_dblocks, X_CORRUPT,
  d->sb_dblocks = cpu_to_le64(g->sb_dblocks + 3 * SX_BITMAP_BITS(g->sb_blocksize)))
C(seq0, sb_seq, X_CORRUPT, d->sb_seq = 0)
C(seq_max, sb_seq, X_CORRUPT, d->sb_seq = cpu_to_le64(~0ull))
C(uuid_nil, sb_uuid, X_CORRUPT, memset(d->sb_uuid, 0, SX_UUID_SIZE))
C(compat, sb_feat_compat, X_ANY, d->sb_feat_compat = cpu_to_le32(0xffffffffu))
C(ro_compat, sb_feat_ro_compat, X_FEATURE, d->sb_feat_ro_compat = cpu_to_le32(1u << 5))
C(incompat, sb_feat_incompat, X_FEATURE, d->sb_feat_incompat = cpu_to_le32(1u << 0))
C(log_incompat, sb_feat_log_incompat, X_FEATURE,
  d->sb_feat_log_incompat = cpu_to_le32(1u << 1))
C(logstart0, sb_logstart, X_CORRUPT, d->sb_logstart = 0)
C(logstart1, sb_logstart, X_CORRUPT, d->sb_logstart = cpu_to_le64(1))
C(logstart_overlap, sb_logstart, X_CORRUPT, d->sb_logstart = cpu_to_le64(3))
C(logstart_end, sb_logstart, X_CORRUPT, d->sb_logstart = cpu_to_le64(g->sb_dblocks))
C(logstart_max, sb_logstart, X_CORRUPT, d->sb_logstart = cpu_to_le64(~0ull - 10))
C(logblocks0, sb_logblocks, X_CORRUPT, d->sb_logblocks = 0)
C(logblocks_small, sb_logblocks, X_CORRUPT, d->sb_logblocks = cpu_to_le32(SX_MIN_LOGBLOCKS - 1))
C(logblocks_big, sb_logblocks, X_CORRUPT, d->sb_logblocks = cpu_to_le32(SX_MAX_LOGBLOCKS + 1))
C(logblocks_overlap, sb_logblocks, X_CORRUPT,
  d->sb_logblocks = cpu_to_le32(g->sb_logblocks + 1))
C(logblocks_max, sb_logblocks, X_CORRUPT, d->sb_logblocks = cpu_to_le32(0xffffffffu))
C(sect0, sb_sectsize, X_CORRUPT, d->sb_sectsize = 0)
C(sect256, sb_sectsize, X_CORRUPT, d->sb_sectsize = cpu_to_le32(256))
C(sect768, sb_sectsize, X_CORRUPT, d->sb_sectsize = cpu_to_le32(768))
C(sect_big, sb_sectsize, X_CORRUPT, d->sb_sectsize = cpu_to_le32(g->sb_blocksize * 2))
C(tail_cycle0, sb_log_tail, X_CORRUPT, d->sb_log_tail = cpu_to_le64(SX_LSN(0, 0)))
C(tail_block, sb_log_tail, X_CORRUPT,
  d->sb_log_tail = cpu_to_le64(SX_LSN(1, g->sb_logblocks)))
C(tail_block_max, sb_log_tail, X_CORRUPT,
  d->sb_log_tail = cpu_to_le64(SX_LSN(5, 0xffffffffu)))
C(epoch, sb_log_epoch, X_ANY, d->sb_log_epoch = cpu_to_le32(0xdeadbeefu))
C(prev_crc, sb_log_tail_prev_crc, X_ANY, d->sb_log_tail_prev_crc = cpu_to_le32(0x12345678))
C(bmap_low, sb_bmapstart, X_CORRUPT, d->sb_bmapstart = cpu_to_le64(g->sb_bmapstart - 1))
C(bmap_high, sb_bmapstart, X_CORRUPT, d->sb_bmapstart = cpu_to_le64(g->sb_bmapstart + 1))
C(bmap0, sb_bmapstart, X_CORRUPT, d->sb_bmapstart = 0)
C(bmap_max, sb_bmapstart, X_CORRUPT, d->sb_bmapstart = cpu_to_le64(~0ull))
C(bmapblocks0, sb_bmapblocks, X_CORRUPT, d->sb_bmapblocks = 0)
C(bmapblocks_more, sb_bmapblocks, X_CORRUPT,
  d->sb_bmapblocks = cpu_to_le32(g->sb_bmapblocks + 1))
C(bmapblocks_less, sb_bmapblocks, X_CORRUPT,
  d->sb_bmapblocks = cpu_to_le32(g->sb_bmapblocks - 1))
C(pad0, sb_pad0, X_CORRUPT, d->sb_pad0 = cpu_to_le32(1))
C(data_low, sb_datastart, X_CORRUPT, d->sb_datastart = cpu_to_le64(g->sb_datastart - 1))
C(data_high, sb_datastart, X_CORRUPT, d->sb_datastart = cpu_to_le64(g->sb_datastart + 1))
C(data_end, sb_datastart, X_CORRUPT, d->sb_datastart = cpu_to_le64(g->sb_dblocks))
C(ctime0, sb_ctime, X_ANY, d->sb_ctime = 0)
C(ctime_max, sb_ctime, X_ANY, d->sb_ctime = cpu_to_le64(~0ull))
C(fsinfo0, sb_fsinfo, X_CORRUPT, d->sb_fsinfo = 0)
C(fsinfo_sb1, sb_fsinfo, X_CORRUPT, d->sb_fsinfo = cpu_to_le64(1))
C(fsinfo_log, sb_fsinfo, X_CORRUPT, d->sb_fsinfo = cpu_to_le64(g->sb_logstart + 1))
C(fsinfo_bmap, sb_fsinfo, X_CORRUPT, d->sb_fsinfo = cpu_to_le64(g->sb_bmapstart))
C(fsinfo_data_low, sb_fsinfo, X_CORRUPT, d->sb_fsinfo = cpu_to_le64(g->sb_datastart - 1))
C(fsinfo_end, sb_fsinfo, X_CORRUPT, d->sb_fsinfo = cpu_to_le64(g->sb_dblocks))
C(fsinfo_max, sb_fsinfo, X_CORRUPT, d->sb_fsinfo = cpu_to_le64(~0ull))
C(clean_free_none, sb_clean_free, X_ANY, d->sb_clean_free = cpu_to_le64(1))
C(clean_free_all, sb_clean_free, X_ANY,
  d->sb_clean_free = cpu_to_le64(g->sb_dblocks - g->sb_datastart + 1))
C(clean_free_more, sb_clean_free, X_CORRUPT,
  d->sb_clean_free = cpu_to_le64(g->sb_dblocks - g->sb_datastart + 2))
C(clean_free_max, sb_clean_free, X_CORRUPT, d->sb_clean_free = cpu_to_le64(~0ull))
C(label_junk, sb_label, X_CORRUPT, d->sb_label[SX_LABEL_SIZE - 1] = 'x')
C(label_after_nul, sb_label, X_CORRUPT, d->sb_label[strlen(g->sb_label) + 1] = 1)

static const struct corruption corruptions[] = {
	E(magic, sb_magic, X_CORRUPT),
	E(magic_xfs, sb_magic, X_CORRUPT),
	E(version0, sb_version, X_CORRUPT),
	E(version2, sb_version, X_CORRUPT),
	E(bs0, sb_blocksize, X_CORRUPT),
	E(bs1000, sb_blocksize, X_CORRUPT),
	E(bs256, sb_blocksize, X_CORRUPT),
	E(bs128k, sb_blocksize, X_CORRUPT),
	E(bs_other, sb_blocksize, X_CORRUPT),
	E(dblocks0, sb_dblocks, X_CORRUPT),
	E(dblocks_max, sb_dblocks, X_CORRUPT),
	E(dblocks_eq_data, sb_dblocks, X_CORRUPT),
	E(dblocks_bmap, sb_dblocks, X_CORRUPT),
	E(seq0, sb_seq, X_CORRUPT),
	E(seq_max, sb_seq, X_CORRUPT),
	E(uuid_nil, sb_uuid, X_CORRUPT),
	E(compat, sb_feat_compat, X_ANY),
	E(ro_compat, sb_feat_ro_compat, X_FEATURE),
	E(incompat, sb_feat_incompat, X_FEATURE),
	E(log_incompat, sb_feat_log_incompat, X_FEATURE),
	E(logstart0, sb_logstart, X_CORRUPT),
	E(logstart1, sb_logstart, X_CORRUPT),
	E(logstart_overlap, sb_logstart, X_CORRUPT),
	E(logstart_end, sb_logstart, X_CORRUPT),
	E(logstart_max, sb_logstart, X_CORRUPT),
	E(logblocks0, sb_logblocks, X_CORRUPT),
	E(logblocks_small, sb_logblocks, X_CORRUPT),
	E(logblocks_big, sb_logblocks, X_CORRUPT),
	E(logblocks_overlap, sb_logblocks, X_CORRUPT),
	E(logblocks_max, sb_logblocks, X_CORRUPT),
	E(sect0, sb_sectsize, X_CORRUPT),
	E(sect256, sb_sectsize, X_CORRUPT),
	E(sect768, sb_sectsize, X_CORRUPT),
	E(sect_big, sb_sectsize, X_CORRUPT),
	E(tail_cycle0, sb_log_tail, X_CORRUPT),
	E(tail_block, sb_log_tail, X_CORRUPT),
	E(tail_block_max, sb_log_tail, X_CORRUPT),
	E(epoch, sb_log_epoch, X_ANY),
	E(prev_crc, sb_log_tail_prev_crc, X_ANY),
	E(bmap_low, sb_bmapstart, X_CORRUPT),
	E(bmap_high, sb_bmapstart, X_CORRUPT),
	E(bmap0, sb_bmapstart, X_CORRUPT),
	E(bmap_max, sb_bmapstart, X_CORRUPT),
	E(bmapblocks0, sb_bmapblocks, X_CORRUPT),
	E(bmapblocks_more, sb_bmapblocks, X_CORRUPT),
	E(bmapblocks_less, sb_bmapblocks, X_CORRUPT),
	E(pad0, sb_pad0, X_CORRUPT),
	E(data_low, sb_datastart, X_CORRUPT),
	E(data_high, sb_datastart, X_CORRUPT),
	E(data_end, sb_datastart, X_CORRUPT),
	E(ctime0, sb_ctime, X_ANY),
	E(ctime_max, sb_ctime, X_ANY),
	E(fsinfo0, sb_fsinfo, X_CORRUPT),
	E(fsinfo_sb1, sb_fsinfo, X_CORRUPT),
	E(fsinfo_log, sb_fsinfo, X_CORRUPT),
	E(fsinfo_bmap, sb_fsinfo, X_CORRUPT),
	E(fsinfo_data_low, sb_fsinfo, X_CORRUPT),
	E(fsinfo_end, sb_fsinfo, X_CORRUPT),
	E(fsinfo_max, sb_fsinfo, X_CORRUPT),
	E(clean_free_none, sb_clean_free, X_ANY),
	E(clean_free_all, sb_clean_free, X_ANY),
	E(clean_free_more, sb_clean_free, X_CORRUPT),
	E(clean_free_max, sb_clean_free, X_CORRUPT),
	E(label_junk, sb_label, X_CORRUPT),
	E(label_after_nul, sb_label, X_CORRUPT),
};

/*
 * Every field: each corruption, resealed with a correct CRC, is refused by
 * decode (or, for feature words, by the feature check; for the few fields
 * where every value is legal, it round-trips).  Reserved words and the unused
 * tail of the CRC area are hit one word/byte at a time.  Together the cases
 * must touch every byte of the superblock.
 */
static void test_every_field_corrupted(void **state)
{
	u8 good[SX_SB_SIZE], buf[SX_SB_SIZE], again[SX_SB_SIZE];
	bool covered[SX_SB_SIZE] = { false };
	struct sx_sb g, out;
	size_t i, j;
	int error;

	/* 2 GiB at 4 KiB: several bitmap blocks, so "one fewer" is nonzero */
	good_sb(&g, 2ull << 30, 4096);
	assert_true(g.sb_bmapblocks > 2);
	g.sb_seq = 42;
	g.sb_log_tail = SX_LSN(2, 17);
	sx_sb_encode(&g, good);
	assert_int_equal(sx_sb_decode(NULL, good, &out), 0);

	for (i = 0; i < ARRAY_SIZE(corruptions); i++) {
		const struct corruption *c = &corruptions[i];

		memcpy(buf, good, sizeof(buf));
		c->fn((struct sx_dsb *)buf, &g);
		assert_memory_not_equal(buf, good, sizeof(buf));
		reseal(buf);
		error = sx_sb_decode(NULL, buf, &out);
		if (c->expect == X_CORRUPT && error != -EFSCORRUPTED)
			fail_msg("corruption %s: decode returned %d", c->what, error);
		if (c->expect != X_CORRUPT && error != 0)
			fail_msg("change %s: decode returned %d", c->what, error);
		if (c->expect == X_FEATURE) {
			assert_int_equal(sx_sb_check_features(NULL, &out, false), -EOPNOTSUPP);
		}
		if (c->expect == X_ANY) {
			assert_int_equal(sx_sb_check_features(NULL, &out, false), 0);
			sx_sb_encode(&out, again);
			assert_memory_equal(again, buf, sizeof(buf));
		}
		for (j = c->off; j < c->off + c->size; j++)
			covered[j] = true;
	}

	/* the sealed CRC itself */
	memcpy(buf, good, sizeof(buf));
	buf[offsetof(struct sx_dsb, sb_crc)] ^= 0x01;
	assert_int_equal(sx_sb_decode(NULL, buf, &out), -EFSBADCRC);
	for (j = 0; j < 4; j++)
		covered[offsetof(struct sx_dsb, sb_crc) + j] = true;

	/* each reserved word */
	for (i = 0; i < ARRAY_SIZE(((struct sx_dsb *)0)->sb_reserved); i++) {
		struct sx_dsb *d = (struct sx_dsb *)buf;

		memcpy(buf, good, sizeof(buf));
		d->sb_reserved[i] = cpu_to_le64(1ull << (i % 64));
		reseal(buf);
		assert_int_equal(sx_sb_decode(NULL, buf, &out), -EFSCORRUPTED);
		for (j = 0; j < 8; j++)
			covered[offsetof(struct sx_dsb, sb_reserved) + i * 8 + j] = true;
	}

	/* each byte past the struct but inside the CRC area */
	for (i = sizeof(struct sx_dsb); i < SX_SB_SIZE; i++) {
		memcpy(buf, good, sizeof(buf));
		buf[i] = 0x80;
		reseal(buf);
		assert_int_equal(sx_sb_decode(NULL, buf, &out), -EFSCORRUPTED);
		covered[i] = true;
	}

	for (j = 0; j < SX_SB_SIZE; j++)
		if (!covered[j])
			fail_msg("no corruption case touches superblock byte %zu", j);
}

/* A bit flipped anywhere, without resealing, is a checksum failure. */
static void test_byte_flip_badcrc(void **state)
{
	u8 good[SX_SB_SIZE], buf[SX_SB_SIZE];
	struct sx_sb g, out;
	size_t i;

	good_sb(&g, 64ull << 20, 4096);
	sx_sb_encode(&g, good);
	for (i = 0; i < SX_SB_SIZE; i++) {
		memcpy(buf, good, sizeof(buf));
		buf[i] ^= (u8)(1u << (i % 8));
		assert_int_equal(sx_sb_decode(NULL, buf, &out), -EFSBADCRC);
	}
	/* and a block of zeros is not a superblock */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(sx_sb_decode(NULL, buf, &out), -EFSBADCRC);
}

/* Random garbage, sealed or not, never decodes and never crashes. */
static void test_random_garbage(void **state)
{
	u8 buf[SX_SB_SIZE];
	struct sx_sb out;
	u64 seed = 0x5eed;
	int round;
	size_t i;

	for (round = 0; round < 2000; round++) {
		for (i = 0; i < sizeof(buf); i++)
			buf[i] = (u8)sxt_rand(&seed);
		if (round & 1) {
			((struct sx_dsb *)buf)->sb_magic = cpu_to_le32(SX_SB_MAGIC);
			reseal(buf);
			assert_int_equal(sx_sb_decode(NULL, buf, &out), -EFSCORRUPTED);
		} else {
			assert_int_not_equal(sx_sb_decode(NULL, buf, &out), 0);
		}
	}
}

/* ---------------------------------------------------------------- features */

/* Unknown feature bits: refused with a message naming them. */
static void test_features(void **state)
{
	struct sx_sb sb;

	good_sb(&sb, 64ull << 20, 4096);
	assert_int_equal(sx_sb_check_features(NULL, &sb, false), 0);
	sb.sb_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
	assert_int_equal(sx_sb_check_features(NULL, &sb, false), 0);

	capture_start();
	sb.sb_feat_incompat = 1u << 4;
	assert_int_equal(sx_sb_check_features(NULL, &sb, false), -EOPNOTSUPP);
	assert_int_equal(sx_sb_check_features(NULL, &sb, true), -EOPNOTSUPP);
	assert_non_null(strstr(logbuf, "incompatible feature bits 0x10"));
	sb.sb_feat_incompat = 0;

	logbuf[0] = '\0';
	sb.sb_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP | (1u << 3);
	assert_int_equal(sx_sb_check_features(NULL, &sb, false), -EOPNOTSUPP);
	assert_int_equal(sx_sb_check_features(NULL, &sb, true), -EOPNOTSUPP);
	assert_non_null(strstr(logbuf, "log-incompatible feature bits 0x8"));
	sb.sb_feat_log_incompat = 0;

	logbuf[0] = '\0';
	sb.sb_feat_ro_compat = 1u << 2;
	assert_int_equal(sx_sb_check_features(NULL, &sb, false), -EOPNOTSUPP);
	assert_non_null(strstr(logbuf, "read-only-compatible feature bits 0x4"));
	assert_int_equal(sx_sb_check_features(NULL, &sb, true), 0);
	sb.sb_feat_ro_compat = 0;

	sb.sb_feat_compat = 0xffff;
	assert_int_equal(sx_sb_check_features(NULL, &sb, false), 0);
	sxt_quiet();
}

/* Set feature words in both on-disk copies, resealing them. */
static void set_disk_features(struct sx_bdev *bd, u32 bs, u32 incompat, u32 ro_compat,
			      u32 log_incompat)
{
	u8 buf[SX_SB_SIZE];
	int k;

	for (k = 0; k < 2; k++) {
		struct sx_dsb *d = (struct sx_dsb *)buf;

		raw_read(bd, (u64)k * bs, buf);
		d->sb_feat_incompat = cpu_to_le32(incompat);
		d->sb_feat_ro_compat = cpu_to_le32(ro_compat);
		d->sb_feat_log_incompat = cpu_to_le32(log_incompat);
		reseal(buf);
		raw_write(bd, (u64)k * bs, buf);
	}
}

/* A mount refuses unknown bits; ro_compat only for read-write. */
static void test_mount_features(void **state)
{
	struct sx_mount_opts ro = { .mo_flags = SX_MOUNT_RDONLY };
	struct sx_bdev *bd = memdev(16ull << 20);
	struct sx_mount *mp;

	mkfs_bs(bd, 4096);
	set_disk_features(bd, 4096, 1u << 9, 0, 0);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EOPNOTSUPP);
	assert_int_equal(sx_mount(bd, &ro, &mp), -EOPNOTSUPP);

	set_disk_features(bd, 4096, 0, 0, 1u << 5);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EOPNOTSUPP);

	set_disk_features(bd, 4096, 0, 1u << 1, 0);
	assert_int_equal(sx_mount(bd, NULL, &mp), -EOPNOTSUPP);
	assert_int_equal(sx_mount(bd, &ro, &mp), 0);
	assert_int_equal(sx_unmount(mp), 0);

	set_disk_features(bd, 4096, 0, 0, SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP);
	assert_int_equal(sx_mount(bd, NULL, &mp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- read/write */

/* After mkfs both copies are valid, and the newer (copy 1) is used. */
static void test_read_after_mkfs(void **state)
{
	struct sx_bdev *bd = memdev(16ull << 20);
	u8 buf[SX_SB_SIZE];
	struct sx_sb sb, c0, c1;
	int which = -1;

	mkfs_bs(bd, 4096);
	raw_read(bd, 0, buf);
	assert_int_equal(sx_sb_decode(NULL, buf, &c0), 0);
	raw_read(bd, 4096, buf);
	assert_int_equal(sx_sb_decode(NULL, buf, &c1), 0);
	assert_int_equal(c0.sb_seq, 2);
	assert_int_equal(c1.sb_seq, 3);
	c1.sb_seq = c0.sb_seq;
	assert_sb_equal(&c0, &c1);

	assert_int_equal(sx_sb_read(NULL, bd, &sb, &which), 0);
	assert_int_equal(which, 1);
	assert_int_equal(sb.sb_seq, 3);
	assert_memory_equal(sb.sb_uuid, test_uuid, SX_UUID_SIZE);
	sx_bdev_destroy(bd);
}

/* Writes alternate between the copies and the newest always wins. */
static void test_write_alternates(void **state)
{
	struct sx_bdev *bd = memdev(16ull << 20);
	struct sx_sb sb, rd;
	u8 buf[SX_SB_SIZE];
	int which, i;

	mkfs_bs(bd, 4096);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	for (i = 0; i < 10; i++) {
		u64 seq = sb.sb_seq + 1;

		sb.sb_log_epoch = i;
		assert_int_equal(sx_sb_write(bd, &sb), 0);
		assert_int_equal(sb.sb_seq, seq);
		raw_read(bd, (seq % 2) * 4096, buf);
		assert_int_equal(sx_sb_decode(NULL, buf, &rd), 0);
		assert_int_equal(rd.sb_seq, seq);
		/* the other copy is the previous write, still valid */
		raw_read(bd, ((seq + 1) % 2) * 4096, buf);
		assert_int_equal(sx_sb_decode(NULL, buf, &rd), 0);
		assert_int_equal(rd.sb_seq, seq - 1);

		assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
		assert_int_equal(which, (int)(seq % 2));
		assert_int_equal(rd.sb_seq, seq);
		assert_int_equal(rd.sb_log_epoch, (u32)i);
	}
	sx_bdev_destroy(bd);
}

/*
 * A copy whose sequence is 2^64 - 1 (CRC right) can never have been written:
 * taken for the newest, it made the next write wrap to 0, which decode
 * refuses, and left one good copy where there should be two.  Such a copy
 * is refused, and the writes of a mount leave both copies valid.
 */
static void test_seq_at_max(void **state)
{
	struct sx_bdev *bd = memdev(16ull << 20);
	struct sx_sb sb, c0, c1;
	struct sx_mount *mp;
	struct sxt_text r;
	u8 buf[SX_SB_SIZE];
	u64 problems;
	int fd, which;

	mkfs_bs(bd, 4096);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	sb.sb_seq = ~0ull;		/* odd: copy 1's */
	sx_sb_encode(&sb, buf);
	raw_write(bd, 4096, buf);
	assert_int_equal(sx_sb_decode(NULL, buf, &c1), -EFSCORRUPTED);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, &which), 0);
	assert_int_equal(which, 0);
	memset(&r, 0, sizeof(r));
	assert_int_equal(sx_check(bd, sxt_text_line, &r, &problems), 0);
	assert_int_equal(problems, 2);
	assert_true(sxt_text_has(&r, "superblock copy 1: sb_seq 18446744073709551615 is beyond"));
	sxt_text_free(&r);

	/* a mount that writes the superblock more than once */
	mp = sxt_mount(bd);
	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(sx_unmount(mp), 0);

	raw_read(bd, 0, buf);
	assert_int_equal(sx_sb_decode(NULL, buf, &c0), 0);
	raw_read(bd, 4096, buf);
	assert_int_equal(sx_sb_decode(NULL, buf, &c1), 0);
	assert_true(c0.sb_seq + 1 == c1.sb_seq || c1.sb_seq + 1 == c0.sb_seq);
	sx_bdev_destroy(bd);
}

/* A failed write leaves the sequence alone, so a retry hits the same copy. */
static void test_write_failure(void **state)
{
	struct sx_bdev *bd = memdev(16ull << 20);
	struct sxt_shim c;
	struct sx_sb sb, rd;
	u64 seq;
	int which;

	mkfs_bs(bd, 4096);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	sxt_shim_init(&c, bd);
	seq = sb.sb_seq;
	c.sh_fail_write = 1;
	assert_int_equal(sx_sb_write(&c.sh_bdev, &sb), -EIO);
	assert_int_equal(sb.sb_seq, seq);
	assert_int_equal(sx_sb_write(&c.sh_bdev, &sb), 0);
	assert_int_equal(sb.sb_seq, seq + 1);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
	assert_int_equal(rd.sb_seq, seq + 1);
	assert_int_equal(which, (int)((seq + 1) % 2));
	sx_bdev_destroy(bd);
}

/* A torn or damaged newer copy falls back to the older good one. */
static void test_read_fallback(void **state)
{
	struct sx_bdev *bd = memdev(16ull << 20);
	u8 buf[SX_SB_SIZE], newer[SX_SB_SIZE];
	struct sx_sb sb, rd;
	int which;

	mkfs_bs(bd, 4096);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	assert_int_equal(sx_sb_write(bd, &sb), 0);		/* seq 4 -> copy 0 */

	/*
	 * A torn write of seq 5 to copy 1: its first 64 bytes (CRC and seq)
	 * land, the changed label at byte 128 does not.
	 */
	raw_read(bd, 4096, buf);
	sb.sb_seq = 5;
	strcpy(sb.sb_label, "newer");
	sx_sb_encode(&sb, newer);
	memcpy(buf, newer, 64);
	assert_memory_not_equal(buf, newer, SX_SB_SIZE);
	raw_write(bd, 4096, buf);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
	assert_int_equal(which, 0);
	assert_int_equal(rd.sb_seq, 4);

	/* a well-sealed copy 1 that fails a field check is skipped too */
	((struct sx_dsb *)newer)->sb_logstart = cpu_to_le64(1);
	reseal(newer);
	raw_write(bd, 4096, newer);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
	assert_int_equal(which, 0);
	assert_int_equal(rd.sb_seq, 4);

	/* now copy 1 is good (seq 5) and copy 0 is damaged */
	sb.sb_seq = 5;
	sx_sb_encode(&sb, newer);
	raw_write(bd, 4096, newer);
	raw_read(bd, 0, buf);
	buf[100] ^= 0x40;
	raw_write(bd, 0, buf);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
	assert_int_equal(which, 1);
	assert_int_equal(rd.sb_seq, 5);

	/* both bad: the primary's error comes back */
	raw_read(bd, 4096, buf);
	buf[7] ^= 0x01;
	raw_write(bd, 4096, buf);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), -EFSBADCRC);

	/* a primary that is sealed but wrong gives -EFSCORRUPTED */
	sb.sb_seq = 6;
	sx_sb_encode(&sb, buf);
	((struct sx_dsb *)buf)->sb_version = cpu_to_le32(77);
	reseal(buf);
	raw_write(bd, 0, buf);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), -EFSCORRUPTED);
	sx_bdev_destroy(bd);
}

/* With copy 0 gone, copy 1 is found at every block size. */
static void test_read_probe_all_blocksizes(void **state)
{
	u8 zero[SX_SB_SIZE] = { 0 };
	struct sx_sb rd;
	u32 bs;
	int which;

	for (bs = SX_MIN_BLOCKSIZE; bs <= SX_MAX_BLOCKSIZE; bs <<= 1) {
		struct sx_bdev *bd = memdev(16ull << 20);

		mkfs_bs(bd, bs);
		raw_write(bd, 0, zero);
		assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
		assert_int_equal(which, 1);
		assert_int_equal(rd.sb_blocksize, bs);
		assert_int_equal(rd.sb_seq, 3);
		sx_bdev_destroy(bd);
	}
}

/* A copy 1 that does not sit at its own block size is not taken. */
static void test_read_misplaced_copy(void **state)
{
	struct sx_bdev *bd = memdev(16ull << 20);
	u8 buf[SX_SB_SIZE], zero[SX_SB_SIZE] = { 0 };
	struct sx_sb rd;

	mkfs_bs(bd, 4096);
	raw_read(bd, 4096, buf);
	raw_write(bd, 8192, buf);		/* where a 8 KiB fs keeps copy 1 */
	raw_write(bd, 4096, zero);
	raw_write(bd, 0, zero);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, NULL), -EFSBADCRC);
	sx_bdev_destroy(bd);
}

/* Copies that disagree: the newer one is used. */
static void test_read_disagree(void **state)
{
	struct sx_bdev *bd = memdev(16ull << 20);
	u8 buf[SX_SB_SIZE];
	struct sx_sb sb, rd;
	int which;

	mkfs_bs(bd, 4096);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	sb.sb_uuid[0] ^= 0xff;
	sb.sb_seq = 10;
	sx_sb_encode(&sb, buf);
	raw_write(bd, 0, buf);
	capture_start();
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
	assert_int_equal(which, 0);
	assert_int_equal(rd.sb_uuid[0], (u8)(test_uuid[0] ^ 0xff));
	assert_non_null(strstr(logbuf, "disagree"));
	sxt_quiet();
	sx_bdev_destroy(bd);
}

/* A filesystem larger than its device is refused. */
static void test_read_device_too_small(void **state)
{
	struct sx_bdev *big = memdev(16ull << 20), *small = memdev(8ull << 20);
	u8 *img = malloc(8ull << 20);
	struct sx_sb rd;

	assert_non_null(img);
	mkfs_bs(big, 4096);
	assert_int_equal(big->bd_ops->read(big, 0, img, 8ull << 20), 0);
	assert_int_equal(small->bd_ops->write(small, 0, img, 8ull << 20, 0), 0);
	assert_int_equal(sx_sb_read(NULL, small, &rd, NULL), -EFSCORRUPTED);
	free(img);
	sx_bdev_destroy(big);
	sx_bdev_destroy(small);
}

/* A 4 KiB-sector device: reads and writes are whole sectors. */
static void test_big_sectors(void **state)
{
	struct sx_mkfs_opts mo = { .mk_blocksize = 4096, .mk_uuid = test_uuid };
	struct sx_bdev *bd;
	struct sx_sb rd;
	int which;

	assert_int_equal(sx_memdev_create(16ull << 20, 4096, &bd), 0);
	assert_int_equal(sx_mkfs(bd, &mo), 0);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
	assert_int_equal(rd.sb_sectsize, 4096);
	assert_int_equal(sx_sb_write(bd, &rd), 0);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
	assert_int_equal(which, 0);
	/* a block smaller than the sector is refused */
	mo.mk_blocksize = 2048;
	assert_int_equal(sx_mkfs(bd, &mo), -EINVAL);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- mkfs */

/* A mount stand-in for calling verifiers directly. */
static struct sx_mount *fake_mount(const struct sx_sb *sb)
{
	struct sx_mount *mp = calloc(1, sizeof(*mp));

	assert_non_null(mp);
	mp->m_sb = *sb;
	mp->m_bsize = sb->sb_blocksize;
	mp->m_blog = sb->sb_blocklog;
	strcpy(mp->m_name, "test");
	return mp;
}

/* Whether block @b is marked in use in a bitmap block image of index @idx. */
static bool bit_used(const u8 *blk, u64 bits, u32 idx, u64 b)
{
	u64 i = b - (u64)idx * bits;

	return (blk[SX_BITMAP_HDR_SIZE + i / 8] >> (i % 8)) & 1;
}

/* What mkfs wrote: every bitmap block verifies and counts exactly. */
static void check_mkfs_image(struct sx_bdev *bd, u32 bs, u64 dblocks_want)
{
	struct sx_sb sb;
	struct sx_mount *mp;
	u8 *blk = malloc(bs);
	u64 bits = SX_BITMAP_BITS(bs), nfree = 0, b;
	u32 i;

	assert_non_null(blk);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	assert_int_equal(sb.sb_blocksize, bs);
	if (dblocks_want)
		assert_int_equal(sb.sb_dblocks, dblocks_want);
	mp = fake_mount(&sb);

	for (i = 0; i < sb.sb_bmapblocks; i++) {
		const struct sx_dbitmap *bm = (const void *)blk;
		u64 lo = (u64)i * bits, hi = lo + bits;

		assert_int_equal(bd->bd_ops->read(bd, (sb.sb_bmapstart + i) * bs, blk, bs), 0);
		assert_int_equal(sx_buf_verify(mp, blk, sb.sb_bmapstart + i,
					       &sx_bitmap_buf_ops, 0), 0);
		assert_int_equal(le32_to_cpu(bm->bm_hdr.bh_magic), SX_BITMAP_MAGIC);
		assert_int_equal(le64_to_cpu(bm->bm_hdr.bh_owner), 0);
		assert_int_equal(le64_to_cpu(bm->bm_hdr.bh_lsn), 0);
		assert_memory_equal(bm->bm_hdr.bh_uuid, sb.sb_uuid, SX_UUID_SIZE);
		assert_int_equal(le32_to_cpu(bm->bm_index), i);
		nfree += le32_to_cpu(bm->bm_nfree);
		/* spot-check bits: metadata and past-the-end used, data free */
		for (b = lo; b < hi; b += (hi - lo) / 97 + 1) {
			bool want = b < sb.sb_datastart + MKFS_USED || b >= sb.sb_dblocks;

			assert_int_equal(bit_used(blk, bits, i, b), want);
		}
		/* the fsinfo block and the root inode are the first data blocks */
		if (sb.sb_datastart > lo && sb.sb_datastart + MKFS_USED < hi) {
			assert_true(bit_used(blk, bits, i, sb.sb_datastart - 1));
			assert_true(bit_used(blk, bits, i, sb.sb_datastart));
			assert_true(bit_used(blk, bits, i, sb.sb_datastart + 1));
			assert_false(bit_used(blk, bits, i, sb.sb_datastart + MKFS_USED));
		}
		if (sb.sb_dblocks > lo && sb.sb_dblocks < hi) {
			assert_false(bit_used(blk, bits, i, sb.sb_dblocks - 1));
			assert_true(bit_used(blk, bits, i, sb.sb_dblocks));
		}
	}
	assert_int_equal(nfree, sb.sb_dblocks - sb.sb_datastart - MKFS_USED);

	/* the fsinfo block and the empty root directory verify */
	assert_int_equal(sb.sb_fsinfo, sb.sb_datastart);
	assert_int_equal(bd->bd_ops->read(bd, sb.sb_fsinfo * bs, blk, bs), 0);
	assert_int_equal(sx_buf_verify(mp, blk, sb.sb_fsinfo, &sx_fsinfo_buf_ops, 0), 0);
	{
		const struct sx_dfsinfo *fi = (const void *)blk;
		u64 root = le64_to_cpu(fi->fi_rootino);
		const struct sx_dinode *di = (const void *)blk;

		assert_int_equal(root, sb.sb_fsinfo + 1);
		assert_int_equal(le64_to_cpu(fi->fi_unlinked), 0);
		assert_int_equal(le64_to_cpu(fi->fi_icount), 1);
		assert_int_equal(le64_to_cpu(fi->fi_refc_root), 0);
		assert_int_equal(bd->bd_ops->read(bd, root * bs, blk, bs), 0);
		assert_int_equal(sx_buf_verify(mp, blk, root, &sx_inode_buf_ops, root), 0);
		assert_int_equal(le16_to_cpu(di->di_mode), SX_IFDIR | 0755);
		assert_int_equal(le16_to_cpu(di->di_format), SX_DIF_INLINE);
		assert_int_equal(le64_to_cpu(di->di_nrecs), 0);
		assert_int_equal(le64_to_cpu(di->di_next_unlinked), 0);
		assert_true(le32_to_cpu(di->di_nlink) >= 1);
	}

	/* the first log block is zero */
	assert_int_equal(bd->bd_ops->read(bd, sb.sb_logstart * bs, blk, bs), 0);
	for (b = 0; b < bs; b++)
		assert_int_equal(blk[b], 0);
	free(mp);
	free(blk);
}

/* mkfs at every block size, then a mount sees every data block free. */
static void test_mkfs_all_blocksizes(void **state)
{
	u32 bs;

	for (bs = SX_MIN_BLOCKSIZE; bs <= SX_MAX_BLOCKSIZE; bs <<= 1) {
		struct sx_bdev *bd = memdev(32ull << 20);
		struct sx_mount *mp;
		struct sx_info in;

		mkfs_bs(bd, bs);
		check_mkfs_image(bd, bs, (32ull << 20) / bs);
		assert_int_equal(sx_mount(bd, NULL, &mp), 0);
		assert_int_equal(sx_get_info(mp, &in), 0);
		assert_int_equal(in.in_blocksize, bs);
		assert_int_equal(in.in_free_blocks, in.in_dblocks - in.in_datastart - MKFS_USED);
		assert_int_equal(sx_alloc_free_blocks(mp),
				 in.in_dblocks - in.in_datastart - MKFS_USED);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(bd);
	}
}

/* A filesystem smaller than its device: bits past the end are in use. */
static void test_mkfs_partial_device(void **state)
{
	struct sx_mkfs_opts mo = { .mk_blocksize = 512, .mk_uuid = test_uuid,
				   .mk_dblocks = 3 * 3584 + 100, .mk_logblocks = 64,
				   .mk_label = "part", .mk_flags = SX_MKFS_SMALL_LOG };
	struct sx_bdev *bd = memdev(32ull << 20);
	struct sx_sb sb;

	assert_int_equal(sx_mkfs(bd, &mo), 0);
	check_mkfs_image(bd, 512, mo.mk_dblocks);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	assert_int_equal(sb.sb_bmapblocks, 4);
	assert_int_equal(sb.sb_logblocks, 64);
	assert_string_equal(sb.sb_label, "part");
	sx_bdev_destroy(bd);
}

/* A 1 GiB mkfs is a handful of large writes. */
static void test_mkfs_large_batches(void **state)
{
	struct sx_bdev *bd = memdev(1ull << 30);
	struct sx_mkfs_opts mo = { .mk_blocksize = 512, .mk_uuid = test_uuid };
	struct sxt_shim c;
	struct sx_sb sb;
	u64 t0, t1;

	sxt_shim_init(&c, bd);
	t0 = sx_now_ns();
	assert_int_equal(sx_mkfs(&c.sh_bdev, &mo), 0);
	t1 = sx_now_ns();
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	/* 2M blocks at 512 bytes: ~575 bitmap blocks, all in one write */
	assert_true(sb.sb_bmapblocks > 500);
	assert_true(c.sh_writes <= 16);
	assert_true(c.sh_flushes >= 3);
	print_message("mkfs of 1 GiB at 512 B blocks: %llu writes, %llu bytes, %.1f ms\n",
		      (unsigned long long)c.sh_writes, (unsigned long long)c.sh_bytes,
		      (double)(t1 - t0) / 1e6);
	check_mkfs_image(bd, 512, 0);
	sx_bdev_destroy(bd);
}

/* A write error anywhere in mkfs is returned. */
static void test_mkfs_write_errors(void **state)
{
	struct sx_bdev *bd = memdev(8ull << 20);
	struct sx_mkfs_opts mo = { .mk_blocksize = 4096 };
	struct sxt_shim c;
	u64 n, total;

	sxt_shim_init(&c, bd);
	assert_int_equal(sx_mkfs(&c.sh_bdev, &mo), 0);
	total = c.sh_writes;
	assert_true(total >= 4);
	for (n = 1; n <= total; n++) {
		sxt_shim_init(&c, bd);
		c.sh_fail_write = n;
		assert_int_equal(sx_mkfs(&c.sh_bdev, &mo), -EIO);
	}
	sx_bdev_destroy(bd);
}

/* mkfs refuses what cannot work. */
static void test_mkfs_invalid(void **state)
{
	struct sx_bdev *bd = memdev(64 * 4096);
	struct sx_mkfs_opts mo = { .mk_blocksize = 4096 };

	assert_int_equal(sx_mkfs(bd, &mo), -EINVAL);		/* too small */
	mo.mk_blocksize = 1000;
	assert_int_equal(sx_mkfs(bd, &mo), -EINVAL);
	sx_bdev_destroy(bd);
}

/*
 * A superblock left by an earlier filesystem with another block size is
 * wiped, so with copy 0 damaged the probe finds only the new copy 1.
 */
static void test_mkfs_wipes_stale_superblocks(void **state)
{
	static const u8 other_uuid[SX_UUID_SIZE] = { 9, 9, 9, 9, 9, 9, 0x49, 9, 0x89 };
	struct sx_mkfs_opts mo = { .mk_blocksize = 65536, .mk_uuid = other_uuid,
				   .mk_flags = SX_MKFS_SMALL_LOG };
	struct sx_bdev *bd = memdev(32ull << 20);
	u8 buf[SX_SB_SIZE], zero[SX_SB_SIZE] = { 0 };
	struct sx_sb rd;
	int which;

	assert_int_equal(sx_mkfs(bd, &mo), 0);
	/* its copy 1, with a very high seq, at byte 65536 */
	assert_int_equal(sx_sb_read(NULL, bd, &rd, NULL), 0);
	rd.sb_seq = 1000001;
	sx_sb_encode(&rd, buf);
	raw_write(bd, 65536, buf);

	mkfs_bs(bd, 4096);
	raw_read(bd, 65536, buf);
	assert_int_not_equal(sx_sb_decode(NULL, buf, &rd), 0);
	raw_write(bd, 0, zero);
	assert_int_equal(sx_sb_read(NULL, bd, &rd, &which), 0);
	assert_int_equal(which, 1);
	assert_int_equal(rd.sb_blocksize, 4096);
	assert_memory_equal(rd.sb_uuid, test_uuid, SX_UUID_SIZE);
	sx_bdev_destroy(bd);
}

/* Write @n bytes of @byte at @off of @fd. */
static void fill(struct sx_mount *mp, int fd, u64 off, u32 n, u8 byte)
{
	u8 buf[4096];
	u32 done, k;

	memset(buf, byte, sizeof(buf));
	for (done = 0; done < n; done += k) {
		k = n - done < sizeof(buf) ? n - done : (u32)sizeof(buf);
		assert_int_equal(sx_pwrite(mp, fd, buf, k, off + done), (s64)k);
	}
}

/* A clone, a write into it and a swap on @bd: 0 or the first error. */
static int clone_and_swap(struct sx_bdev *bd)
{
	struct file_swap_range fsr;
	struct sx_mount *mp;
	int a, b, error;

	assert_int_equal(sx_mount(bd, NULL, &mp), 0);
	assert_int_equal(sx_create(mp, "a", 0644, &a), 0);
	fill(mp, a, 0, 64 * 1024, 'a');
	assert_int_equal(sx_create(mp, "b", 0644, &b), 0);
	error = sx_clone(mp, b, a);
	if (!error) {
		fill(mp, b, 0, 4096, 'b');
		memset(&fsr, 0, sizeof(fsr));
		fsr.file1_fd = a;
		fsr.length = 64 * 1024;
		error = sx_swap_file_range(mp, b, &fsr);
	}
	sx_close(mp, a);
	sx_close(mp, b);
	assert_int_equal(sx_unmount(mp), 0);
	return error;
}

/*
 * mkfs -b 1024 -s 16m -l 256k made a filesystem whose log could not hold a
 * clone's transaction: the clone failed with EINVAL (68,504 bytes reserved,
 * 32,688 the largest record holds).  mkfs refuses such a log and names the
 * smallest, with which a clone and a swap work; a default log grows to it;
 * blocks too large for any log's records are refused.
 */
static void test_mkfs_log_too_small(void **state)
{
	struct sx_bdev *bd = memdev(16ull << 20);
	struct sx_mkfs_opts mo = {
		.mk_blocksize = 1024, .mk_logblocks = 256, .mk_uuid = test_uuid,
		.mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP,
	};
	u32 min = 0, res = 0;
	struct sx_sb sb;
	int error;

	error = sx_mkfs(bd, &mo);
	if (!error)
		fprintf(stderr, "mkfs took a 256 KiB log; a clone and a swap then gave %d\n",
			clone_and_swap(bd));
	assert_int_equal(error, -EINVAL);

	assert_int_equal(sx_mkfs_log_min(bd, &mo, &min, &res), 0);
	assert_true(res >= 68504);
	assert_true(min > 256);
	mo.mk_logblocks = min - 1;
	assert_int_equal(sx_mkfs(bd, &mo), -EINVAL);
	mo.mk_logblocks = min;
	assert_int_equal(sx_mkfs(bd, &mo), 0);
	assert_int_equal(clone_and_swap(bd), 0);
	/* the flag for tests of the log itself takes the small log */
	mo.mk_logblocks = 256;
	mo.mk_flags = SX_MKFS_SMALL_LOG;
	assert_int_equal(sx_mkfs(bd, &mo), 0);
	sx_bdev_destroy(bd);

	/* 16 KiB blocks on 256 MiB: the default log (4 MiB) grows */
	bd = memdev(256ull << 20);
	memset(&mo, 0, sizeof(mo));
	mo.mk_blocksize = 16384;
	assert_int_equal(sx_mkfs_log_min(bd, &mo, &min, &res), 0);
	assert_true(min > (4u << 20) / 16384);
	assert_int_equal(sx_mkfs(bd, &mo), 0);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	assert_int_equal(sb.sb_logblocks, min);
	sx_bdev_destroy(bd);

	/* 64 KiB blocks: the largest transaction exceeds a 1 MiB record */
	bd = memdev(64ull << 20);
	mo.mk_blocksize = 65536;
	assert_int_equal(sx_mkfs_log_min(bd, &mo, &min, &res), 0);
	assert_int_equal(min, 0);
	assert_true(res > (1u << 20));
	assert_int_equal(sx_mkfs(bd, &mo), -EINVAL);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_all_blocksizes),
		cmocka_unit_test(test_full_label),
		cmocka_unit_test(test_geometry_sizes),
		cmocka_unit_test(test_geometry_invalid),
		cmocka_unit_test(test_geometry_uuid),
		cmocka_unit_test(test_every_field_corrupted),
		cmocka_unit_test(test_byte_flip_badcrc),
		cmocka_unit_test(test_random_garbage),
		cmocka_unit_test(test_features),
		cmocka_unit_test(test_mount_features),
		cmocka_unit_test(test_read_after_mkfs),
		cmocka_unit_test(test_write_alternates),
		cmocka_unit_test(test_write_failure),
		cmocka_unit_test(test_seq_at_max),
		cmocka_unit_test(test_read_fallback),
		cmocka_unit_test(test_read_probe_all_blocksizes),
		cmocka_unit_test(test_read_misplaced_copy),
		cmocka_unit_test(test_read_disagree),
		cmocka_unit_test(test_read_device_too_small),
		cmocka_unit_test(test_big_sectors),
		cmocka_unit_test(test_mkfs_all_blocksizes),
		cmocka_unit_test(test_mkfs_partial_device),
		cmocka_unit_test(test_mkfs_large_batches),
		cmocka_unit_test(test_mkfs_write_errors),
		cmocka_unit_test(test_mkfs_invalid),
		cmocka_unit_test(test_mkfs_wipes_stale_superblocks),
		cmocka_unit_test(test_mkfs_log_too_small),
	};

	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
