// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The checker and the log printer at the edges of the log: a valid log
 * that fills the whole log, so that the scan comes back to the tail
 * without finding an end (a record, then a WRAP record at the next block,
 * which makes the scan go all the way round), and a read that fails in the
 * middle of a record past the end of the valid log.
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
#define BS		4096u

/* Run the log printer, which must return @error; the output in @o. */
static void print_log(struct sx_bdev *bd, int error, struct sxt_text *o)
{
	memset(o, 0, sizeof(*o));
	assert_int_equal(sx_logprint(bd, sxt_text_line, o), error);
	assert_non_null(o->text);
	if (getenv("SX_TEST_VERBOSE"))
		fputs(o->text, stderr);
}

/*
 * One transaction left in the log by a shutdown: its record at 1/0.
 * Returns the device; *@rec0 gets the record's first block.
 */
static struct sx_bdev *one_record(struct sx_sb *sb, u8 *rec0)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	u64 bno;
	u32 len;

	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 1, 8, &bno, &len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_shutdown(mp);
	assert_int_equal(sx_unmount(mp), -EIO);
	assert_int_equal(sx_sb_read(NULL, bd, sb, NULL), 0);
	assert_int_equal(sb->sb_log_tail, SX_LSN(1, 0));
	sxt_bdev_peek(bd, sb->sb_logstart * BS, rec0, BS);
	assert_int_equal(le32_to_cpu(((struct sx_dlog_rec *)rec0)->lr_magic), SX_LOG_MAGIC);
	return bd;
}

/*
 * After the record at 1/0, a WRAP record chained to it: the writer puts
 * one at the last blocks of a lap, and one here ends the lap at once, so
 * that the two records cover the whole log.
 */
static void put_wrap(struct sx_bdev *bd, const struct sx_sb *sb, const u8 *rec0)
{
	const struct sx_dlog_rec *r0 = (const struct sx_dlog_rec *)rec0;
	u32 at = le32_to_cpu(r0->lr_blocks);
	u8 *buf = calloc(1, BS);
	struct sx_dlog_rec *w = (struct sx_dlog_rec *)buf;

	assert_non_null(buf);
	*w = *r0;
	w->lr_lsn = cpu_to_le64(SX_LSN(1, at));
	w->lr_blocks = cpu_to_le32(1);
	w->lr_len = 0;
	w->lr_nops = 0;
	w->lr_flags = cpu_to_le32(SX_LR_WRAP);
	w->lr_prev_crc = r0->lr_crc;
	w->lr_crc = cpu_to_le32(sx_cksum_skip(buf, BS, offsetof(struct sx_dlog_rec, lr_crc)));
	sxt_bdev_poke(bd, (sb->sb_logstart + at) * BS, buf, BS);
	free(buf);
}

/*
 * The valid log fills the whole log: the checker says the log needs
 * recovery up to the head one lap on (2/0) and that no end was found;
 * the printer prints both records and nothing past them, since there is
 * no "past".
 */
static void test_valid_log_fills_the_log(void **state)
{
	u8 rec0[BS];
	struct sx_sb sb;
	struct sx_bdev *bd = one_record(&sb, rec0);
	struct sxt_text r;
	char want[160];

	put_wrap(bd, &sb, rec0);
	assert_int_equal(sxc_checker(bd, 0, &r), 1);
	assert_true(sxt_text_has(&r, "problem: log needs recovery: 2 valid records from the tail 1/0 to the head 2/0 (the next read-write mount replays them)\n"));
	assert_true(sxt_text_has(&r, "note: log: the valid log fills the whole log; no end was found\n"));
	sxt_text_free(&r);

	print_log(bd, 0, &r);
	snprintf(want, sizeof(want), "record 1/%u: device block %llu,",
		 le32_to_cpu(((struct sx_dlog_rec *)rec0)->lr_blocks),
		 (unsigned long long)(sb.sb_logstart +
				      le32_to_cpu(((struct sx_dlog_rec *)rec0)->lr_blocks)));
	assert_true(sxt_text_has(&r, want));
	assert_true(sxt_text_has(&r, "1 blocks, 0 ops, 0 bytes, flags 0x1 (WRAP)"));
	assert_true(sxt_text_has(&r, "the valid log fills the whole log: 2 records\nthe log needs recovery\n"));
	assert_false(sxt_text_has(&r, "past the valid log"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

/*
 * Past the end of the valid log (its first record fails its CRC), a
 * record of two blocks whose second block cannot be read: the printer
 * prints what it read, says where the read failed, and returns -EIO.
 */
static void test_read_error_in_record_past_the_log(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, BS, 0), *cbd;
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_crashdev *cd;
	struct sx_trans *tp;
	struct sx_dlog_rec *rec;
	struct sxt_text o;
	struct sx_sb sb;
	u64 b = mp->m_sb.sb_datastart + 100, bno, n;
	u32 len, second, hits = 0;
	u8 *buf = malloc(BS);
	int error;

	assert_non_null(buf);
	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 1, 8, &bno, &len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_sync(mp), 0);
	/* a whole test block: a record of two blocks */
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, b, 1), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_shutdown(mp);
	assert_int_equal(sx_unmount(mp), -EIO);
	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	sxt_bdev_peek(bd, sb.sb_logstart * BS, buf, BS);
	rec = (struct sx_dlog_rec *)buf;
	second = le32_to_cpu(rec->lr_blocks);
	/* the first record's last byte changed: the valid log ends at 1/0 */
	buf[BS - 1] ^= 0x01;
	sxt_bdev_poke(bd, sb.sb_logstart * BS, buf, BS);
	sxt_bdev_peek(bd, (sb.sb_logstart + second) * BS, buf, BS);
	assert_int_equal(le32_to_cpu(rec->lr_blocks), 2);
	free(buf);

	print_log(bd, 0, &o);
	assert_true(sxt_text_has(&o, "end of the valid log at 1/0 after 0 records: bad record CRC"));
	sxt_text_free(&o);

	/* every read from the n-th on fails: one n fails the record's second block */
	for (n = 1;; n++) {
		struct sx_crashdev_stats st;
		char want[128];

		assert_true(n < 100);
		assert_int_equal(sx_crashdev_create(bd, n, &cbd, &cd), 0);
		sx_crashdev_fail(cd, SX_IO_READ, n, true, -EIO);
		memset(&o, 0, sizeof(o));
		error = sx_logprint(cbd, sxt_text_line, &o);
		sx_crashdev_get_stats(cd, &st);
		sx_bdev_destroy(cbd);
		if (!st.cs_injected_errors) {
			sxt_text_free(&o);
			break;
		}
		snprintf(want, sizeof(want), "read error in the record at 1/%u: I/O error (-5); stopping\n",
			 second);
		if (sxt_text_has(&o, want)) {
			hits++;
			assert_int_equal(error, -EIO);
			/* the header it read is not printed as a record */
			snprintf(want, sizeof(want), "record 1/%u", second);
			assert_false(sxt_text_has(&o, want));
			assert_true(sxt_text_has(&o, "past the valid log:\n"));
		}
		sxt_text_free(&o);
	}
	assert_int_equal(hits, 1);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_log_fills_the_log),
		cmocka_unit_test(test_read_error_in_record_past_the_log),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
