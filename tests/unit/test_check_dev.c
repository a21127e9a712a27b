// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The checker and the log printer on devices that do not match the
 * filesystem on them: sector sizes no superblock code handles, a sector
 * size other than mkfs's, sectors larger than the blocks (so that the
 * second superblock copy is not on a sector boundary), a device shorter
 * than the filesystem or than a superblock, devices whose reads fail with an error other than
 * -EIO or only when the checker reads a damaged superblock again, and
 * devices without the operations they need; and an engine that
 * cannot fill its registry of log items.  Each gets its exact report and
 * return value.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxcrash.h"
#include "mount.h"
#include "check.h"
#include "defer.h"

#define MIB		(1ull << 20)

/* A new memory device of @size bytes and @sectsize sectors holding @src's first bytes. */
static struct sx_bdev *rehome(struct sx_bdev *src, u64 size, u32 sectsize)
{
	struct sx_bdev *bd;
	u64 off, n = sx_min(size, src->bd_size);
	u8 *buf = malloc(MIB);

	assert_non_null(buf);
	assert_int_equal(sx_memdev_create(size, sectsize, &bd), 0);
	for (off = 0; off < n; off += MIB) {
		u32 len = (u32)sx_min((u64)MIB, n - off);

		sxt_bdev_peek(src, off, buf, len);
		sxt_bdev_poke(bd, off, buf, len);
	}
	free(buf);
	return bd;
}

/* Run the checker; its return value, the problems in *@problems, the report in @r. */
static int check(struct sx_bdev *bd, struct sxt_text *r, u64 *problems)
{
	int error;

	memset(r, 0, sizeof(*r));
	error = sx_check(bd, sxt_text_line, r, problems);
	if (getenv("SX_TEST_VERBOSE") && r->text)
		fputs(r->text, stderr);
	/* every problem is one report line */
	assert_int_equal(*problems, r->problem_lines);
	return error;
}

/* Run the log printer; its return value, the output in @o. */
static int logprint(struct sx_bdev *bd, struct sxt_text *o)
{
	int error;

	memset(o, 0, sizeof(*o));
	error = sx_logprint(bd, sxt_text_line, o);
	if (getenv("SX_TEST_VERBOSE") && o->text)
		fputs(o->text, stderr);
	return error;
}

/*
 * A sector size of 0, not a power of two, or larger than any block: the
 * checker refuses the device with -EINVAL in one problem, the printer says
 * there is no superblock it can read.
 */
static void test_sector_size_unsupported(void **state)
{
	static const u32 bad[] = { 0, 768, 2 * SX_MAX_BLOCKSIZE };
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sxt_text r;
	char want[128];
	u64 problems;
	u32 i, ss = bd->bd_sectsize;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		bd->bd_sectsize = bad[i];
		assert_int_equal(check(bd, &r, &problems), -EINVAL);
		assert_int_equal(problems, 1);
		snprintf(want, sizeof(want), "problem: device sector size %u is not supported\n",
			 bad[i]);
		assert_string_equal(r.text, want);
		sxt_text_free(&r);

		assert_int_equal(logprint(bd, &r), -EINVAL);
		assert_string_equal(r.text, "no valid superblock: invalid request (-22)\n");
		sxt_text_free(&r);
	}
	bd->bd_sectsize = ss;
	sx_bdev_destroy(bd);
}

/* Sectors of 4 KiB under a filesystem made on 512-byte ones: only a note. */
static void test_sector_size_differs(void **state)
{
	struct sx_bdev *fs = sxt_memfs(8 * MIB, 4096, 0), *bd = rehome(fs, 8 * MIB, 4096);
	struct sxt_text r;
	u64 problems;

	assert_int_equal(check(bd, &r, &problems), 0);
	assert_int_equal(problems, 0);
	assert_true(sxt_text_has(&r, "note: device sector size 4096 differs from the 512 recorded at mkfs\n"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(fs);
}

/*
 * 1 KiB blocks on 4 KiB sectors with the primary copy damaged: the second
 * copy, at byte 1024, cannot be read on its own, and the checker says why
 * rather than that it is bad.  (With the primary intact the sectors are
 * refused as larger than the blocks.)
 */
static void test_copy1_off_sector(void **state)
{
	struct sx_bdev *fs = sxt_memfs(8 * MIB, 1024, 0), *bd = rehome(fs, 8 * MIB, 4096);
	struct sxt_text r;
	u64 problems;
	u8 b;

	sxt_bdev_peek(bd, 200, &b, 1);
	b ^= 0x10;
	sxt_bdev_poke(bd, 200, &b, 1);
	assert_int_equal(check(bd, &r, &problems), 0);
	assert_int_equal(problems, 3);
	assert_true(sxt_text_has(&r, "problem: superblock copy 0 (byte 0): bad CRC: stored 0x"));
	assert_true(sxt_text_has(&r, "problem: superblock copy 1: byte 1024 is not on a sector boundary\n"));
	assert_true(sxt_text_has(&r, "problem: no valid superblock copy at any block-size offset: nothing else can be checked\n"));
	sxt_text_free(&r);

	assert_true(logprint(bd, &r) < 0);
	assert_true(sxt_text_has(&r, "no valid superblock: bad CRC ("));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(fs);
}

/* The log printer on sectors larger than the blocks: -EINVAL, and why. */
static void test_logprint_big_sectors(void **state)
{
	struct sx_bdev *fs = sxt_memfs(8 * MIB, 1024, 0), *bd = rehome(fs, 8 * MIB, 4096);
	struct sxt_text o;

	assert_int_equal(logprint(bd, &o), -EINVAL);
	assert_true(sxt_text_has(&o, "device sector size 4096 is larger than the block size 1024\n"));
	sxt_text_free(&o);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(fs);
}

/*
 * A device holding the first half of the filesystem: both copies are
 * intact but describe more blocks than it has, which is why a mount finds
 * no superblock.  The checker used to call copy 0 "unreadable: error (0)"
 * and say nothing of copy 1.
 */
static void test_truncated(void **state)
{
	struct sx_bdev *fs = sxt_memfs(8 * MIB, 4096, 0), *bd = rehome(fs, 4 * MIB, 512);
	struct sxt_text r;
	u64 problems;

	assert_int_equal(check(bd, &r, &problems), 0);
	assert_int_equal(problems, 3);
	assert_true(sxt_text_has(&r, "problem: superblock copy 0: 2048 blocks of 4096 bytes do not fit the device's 4194304 bytes\n"));
	assert_true(sxt_text_has(&r, "problem: superblock copy 1: 2048 blocks of 4096 bytes do not fit the device's 4194304 bytes\n"));
	assert_true(sxt_text_has(&r, "problem: no valid superblock copy at any block-size offset"));
	assert_false(sxt_text_has(&r, "unreadable"));
	sxt_text_free(&r);

	assert_int_equal(logprint(bd, &r), -EFSCORRUPTED);
	assert_string_equal(r.text, "no valid superblock: corrupted (-117)\n");
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(fs);
}

/*
 * The primary damaged and claiming 4 KiB blocks, the real secondary (1 KiB
 * blocks) damaged, and a copy of it at byte 4096: that copy is valid but
 * not where its block size puts it, which a mount refuses; the checker
 * says so of the copy it looked at.
 */
static void test_copy1_misplaced(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 1024, 0);
	__le32 bs = cpu_to_le32(4096);
	u8 sb1[SX_SB_SIZE], b;
	struct sxt_text r;
	u64 problems;

	sxt_bdev_peek(bd, 1024, sb1, sizeof(sb1));
	sxt_bdev_poke(bd, 4096, sb1, sizeof(sb1));
	sxt_bdev_peek(bd, 1024 + 300, &b, 1);
	b ^= 0x01;
	sxt_bdev_poke(bd, 1024 + 300, &b, 1);
	sxt_bdev_poke(bd, offsetof(struct sx_dsb, sb_blocksize), &bs, sizeof(bs));

	assert_int_equal(check(bd, &r, &problems), 0);
	assert_int_equal(problems, 3);
	assert_true(sxt_text_has(&r, "problem: superblock copy 0 (byte 0): bad CRC: stored 0x"));
	assert_true(sxt_text_has(&r, "problem: superblock copy 1 (byte 4096): its block size 1024 puts it at byte 1024, not here\n"));
	assert_true(sxt_text_has(&r, "problem: no valid superblock copy at any block-size offset"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

/*
 * A device of 256 bytes, smaller than a superblock copy: neither copy can
 * be read, and the checker says that rather than that they are bad.
 */
static void test_smaller_than_a_superblock(void **state)
{
	struct sx_bdev *bd;
	struct sxt_text r;
	u64 problems;

	assert_int_equal(sx_memdev_create(512, 512, &bd), 0);
	bd->bd_size = 256;
	assert_int_equal(check(bd, &r, &problems), 0);
	assert_int_equal(problems, 3);
	assert_true(sxt_text_has(&r, "problem: superblock copy 0: the device (256 bytes) is too small to hold it\n"));
	/* with no block size to go by, the secondary is looked for at 4096 */
	assert_true(sxt_text_has(&r, "problem: superblock copy 1: byte 4096 is past the end of the device\n"));
	assert_true(sxt_text_has(&r, "problem: no valid superblock copy at any block-size offset"));
	sxt_text_free(&r);
	bd->bd_size = 512;
	sx_bdev_destroy(bd);
}

/*
 * Reads that fail with something other than -EIO (a device gone, a request
 * the device refuses): the checker cannot read a superblock and returns
 * that error, naming it.
 */
static void test_read_errnos(void **state)
{
	static const struct { int error; const char *line; } cases[] = {
		{ -ENXIO, "problem: superblock: cannot read: error (-6)\n" },
		{ -EINVAL, "problem: superblock: cannot read: invalid request (-22)\n" },
		{ -ENOMEM, "problem: superblock: cannot read: out of memory (-12)\n" },
	};
	struct sx_bdev *fs = sxt_memfs(8 * MIB, 4096, 0), *bd;
	struct sx_crashdev *cd;
	struct sxt_text r;
	u64 problems;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(sx_crashdev_create(fs, 1, &bd, &cd), 0);
		sx_crashdev_fail(cd, SX_IO_READ, 1, true, cases[i].error);
		assert_int_equal(check(bd, &r, &problems), cases[i].error);
		assert_int_equal(problems, 1);
		assert_string_equal(r.text, cases[i].line);
		sxt_text_free(&r);
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(fs);
}

/*
 * Both superblock copies damaged, and the checker's own read of the
 * primary, to explain it, failing: it says the copy is unreadable, with
 * the error, and still that no copy is valid.
 */
static void test_reread_of_bad_superblock_fails(void **state)
{
	struct sx_bdev *fs = sxt_memfs(8 * MIB, 4096, 0), *bd;
	struct sx_crashdev *cd;
	struct sxt_text r;
	u64 problems, n;
	u32 hits = 0;
	u8 b;

	/* a byte of each copy's label: bad CRCs */
	sxt_bdev_peek(fs, 130, &b, 1);
	b ^= 0x01;
	sxt_bdev_poke(fs, 130, &b, 1);
	sxt_bdev_peek(fs, 4096 + 130, &b, 1);
	b ^= 0x01;
	sxt_bdev_poke(fs, 4096 + 130, &b, 1);
	for (n = 1;; n++) {
		struct sx_crashdev_stats st;
		int error;

		assert_true(n < 100);
		assert_int_equal(sx_crashdev_create(fs, 1, &bd, &cd), 0);
		sx_crashdev_fail(cd, SX_IO_READ, n, false, -EIO);
		error = check(bd, &r, &problems);
		sx_crashdev_get_stats(cd, &st);
		sx_bdev_destroy(bd);
		if (!st.cs_injected_errors) {
			assert_int_equal(error, 0);
			sxt_text_free(&r);
			break;
		}
		if (sxt_text_has(&r, "problem: superblock copy 0 (byte 0): unreadable: I/O error (-5)\n")) {
			hits++;
			assert_int_equal(error, 0);
			assert_true(sxt_text_has(&r, "problem: no valid superblock copy at any block-size offset"));
		}
		sxt_text_free(&r);
	}
	assert_int_equal(hits, 1);
	sx_bdev_destroy(fs);
}

/* A device without operations, or without read, and a printer without output. */
static void test_bad_devices(void **state)
{
	static const struct sx_bdev_ops no_read = { 0 };
	struct sx_bdev *fs = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_bdev bd = *fs;
	struct sxt_text r;
	u64 problems = 7;

	memset(&r, 0, sizeof(r));
	bd.bd_ops = NULL;
	assert_int_equal(sx_check(&bd, sxt_text_line, &r, &problems), -EINVAL);
	assert_int_equal(problems, 0);
	assert_int_equal(sx_logprint(&bd, sxt_text_line, &r), -EINVAL);
	bd.bd_ops = &no_read;
	assert_int_equal(sx_check(&bd, sxt_text_line, &r, &problems), -EINVAL);
	assert_int_equal(sx_logprint(&bd, sxt_text_line, &r), -EINVAL);
	/* refused before a word is said */
	assert_null(r.text);
	assert_int_equal(sx_logprint(fs, NULL, NULL), -EINVAL);
	sx_bdev_destroy(fs);
}

/* The offline mount: read-only, named "offline" when no name is given. */
static void test_offline_mount(void **state)
{
	struct sx_bdev *fs = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sx_offline_mount_alloc(fs, NULL);

	assert_non_null(mp);
	assert_string_equal(mp->m_name, "offline");
	assert_ptr_equal(mp->m_bdev, fs);
	assert_int_equal(mp->m_flags, SX_MF_RDONLY);
	sx_offline_mount_free(mp);
	sx_offline_mount_free(NULL);
	mp = sx_offline_mount_alloc(fs, "named");
	assert_non_null(mp);
	assert_string_equal(mp->m_name, "named");
	sx_offline_mount_free(mp);
	sx_bdev_destroy(fs);
}

static void clash_encode(const void *item, void *logged)
{
}

static int clash_decode(struct sx_mount *mp, const void *logged, void *item)
{
	return 0;
}

static int clash_finish(struct sx_trans *tp, void *item)
{
	return 0;
}

/* A deferred-work type that takes the EFI's log types. */
static const struct sx_defer_ops clash_ops = {
	.do_name = "clash",
	.do_intent_type = SX_LOG_OP_EFI,
	.do_done_type = SX_LOG_OP_EFD,
	.do_item_size = 8,
	.do_log_size = 8,
	.do_max_items = 1,
	.do_encode = clash_encode,
	.do_decode = clash_decode,
	.do_finish = clash_finish,
};

/*
 * The checker and the printer judge and name log items by the engine's
 * registry, which they fill with sx_init().  When it cannot be filled
 * (here another type holds the EFI's log types), both return its error
 * before saying a word, rather than judge the log without it.
 */
static void test_engine_cannot_init(void **state)
{
	struct sx_bdev *fs = sxt_memfs(8 * MIB, 4096, 0);
	struct sxt_text r;
	u64 problems = 7;

	sx_exit();
	assert_int_equal(sx_defer_register(&clash_ops), 0);
	memset(&r, 0, sizeof(r));
	assert_int_equal(sx_check(fs, sxt_text_line, &r, &problems), -EEXIST);
	assert_int_equal(problems, 0);
	assert_int_equal(sx_logprint(fs, sxt_text_line, &r), -EEXIST);
	assert_null(r.text);
	sx_defer_unregister(&clash_ops);
	assert_int_equal(check(fs, &r, &problems), 0);
	assert_int_equal(problems, 0);
	sxt_text_free(&r);
	sx_bdev_destroy(fs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sector_size_unsupported),
		cmocka_unit_test(test_sector_size_differs),
		cmocka_unit_test(test_copy1_off_sector),
		cmocka_unit_test(test_logprint_big_sectors),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_copy1_misplaced),
		cmocka_unit_test(test_smaller_than_a_superblock),
		cmocka_unit_test(test_read_errnos),
		cmocka_unit_test(test_reread_of_bad_superblock_fails),
		cmocka_unit_test(test_bad_devices),
		cmocka_unit_test(test_offline_mount),
		cmocka_unit_test(test_engine_cannot_init),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
