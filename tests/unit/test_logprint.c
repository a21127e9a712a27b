// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Log printer tests: every record and op of a log is printed and decoded
 * (BUF with regions and CANCEL, TRANS_END, intents and dones with a type's
 * own decoder); past the valid log it marks BAD CRC, TORN, BROKEN CHAIN and
 * STALE records; it stops on garbage and never walks more than one pass.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxtest.h"
#include "sxtext.h"

#define MIB		(1ull << 20)

/* Run the printer, which must succeed. */
static void print_log(struct sx_bdev *bd, struct sxt_text *o)
{
	memset(o, 0, sizeof(*o));
	assert_int_equal(sx_logprint(bd, sxt_text_line, o), 0);
	assert_non_null(o->text);
	if (getenv("SX_TEST_VERBOSE"))
		fputs(o->text, stderr);
}

/* The line of @o that contains @s, copied into @line (empty if none). */
static void line_with(const struct sxt_text *o, const char *s, char *line, size_t len)
{
	const char *p = o->text ? strstr(o->text, s) : NULL, *b, *e;

	line[0] = '\0';
	if (!p)
		return;
	for (b = p; b > o->text && b[-1] != '\n'; b--)
		;
	e = strchr(p, '\n');
	snprintf(line, len, "%.*s", (int)(e - b), b);
}

/* Count the lines starting with @prefix between the lines holding @from and @to. */
static u32 count_between(const struct sxt_text *o, const char *prefix, const char *from,
			 const char *to)
{
	const char *p = strstr(o->text, from), *end;
	u32 n = 0;

	assert_non_null(p);
	end = strstr(p, to);
	assert_non_null(end);
	while ((p = strchr(p, '\n')) && p < end) {
		p++;
		if (!strncmp(p, prefix, strlen(prefix)) && p < end)
			n++;
	}
	return n;
}

/*
 * A real EFI payload (the type is registered by the first mount), to show
 * that a type's decoder is called: the intent header, then one extent.
 */
struct test_efi {
	struct sx_dlog_intent	te_hdr;
	struct sx_dlog_efi	te_ext;
};

/* What the scenario logged. */
struct scenario {
	struct sx_bdev	*bd;
	struct sx_sb	sb;
	u64		intent_id;
	u64		tblock;
	u32		nrecs;
	u64		lsn[16];	/* of each record, found by reading the log here */
	u32		blocks[16];
	u32		nops[16];
	u32		total_ops;
};

/* Commit @tp and make it durable: one record per transaction. */
static void commit_sync(struct sx_mount *mp, struct sx_trans *tp)
{
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_sync(mp), 0);
}

/* Walk the record headers from the tail the simple way, for comparison. */
static void find_records(struct scenario *sc)
{
	const struct sx_sb *sb = &sc->sb;
	u8 *buf = malloc(sb->sb_blocksize);
	u32 block = SX_LSN_BLOCK(sb->sb_log_tail), cycle = SX_LSN_CYCLE(sb->sb_log_tail);

	assert_non_null(buf);
	sc->nrecs = 0;
	sc->total_ops = 0;
	for (;;) {
		const struct sx_dlog_rec *rec = (const struct sx_dlog_rec *)buf;

		sxt_bdev_peek(sc->bd, (sb->sb_logstart + block) * sb->sb_blocksize, buf,
			      sb->sb_blocksize);
		if (le32_to_cpu(rec->lr_magic) != SX_LOG_MAGIC ||
		    memcmp(rec->lr_uuid, sb->sb_uuid, SX_UUID_SIZE) ||
		    le64_to_cpu(rec->lr_lsn) != SX_LSN(cycle, block))
			break;
		assert_true(sc->nrecs < 16);
		sc->lsn[sc->nrecs] = le64_to_cpu(rec->lr_lsn);
		sc->blocks[sc->nrecs] = le32_to_cpu(rec->lr_blocks);
		sc->nops[sc->nrecs] = le32_to_cpu(rec->lr_nops);
		sc->total_ops += sc->nops[sc->nrecs];
		block += le32_to_cpu(rec->lr_blocks);
		sc->nrecs++;
	}
	free(buf);
}

/*
 * Eight transactions, each synced into a record of its own, left in the log
 * by a shutdown: an allocation, a whole test block, a partial update, a
 * test intent, its done item, an EFI, a cancel with the EFD, a free.
 */
static void scenario(struct scenario *sc)
{
	struct sx_mount *mp;
	struct sx_trans *tp;
	struct test_efi te = { 0 };
	struct sx_dlog_intent efd = { 0 };
	struct sx_buf *bp;
	u64 bno;
	u32 len;

	memset(sc, 0, sizeof(*sc));
	sc->bd = sxt_memfs(8 * MIB, 4096, 0);
	mp = sxt_mount(sc->bd);
	sc->tblock = mp->m_sb.sb_dblocks - 10;

	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 1, 6, &bno, &len), 0);
	commit_sync(mp, tp);

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sxt_tblock_write(tp, sc->tblock, 1), 0);
	commit_sync(mp, tp);

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp), 0, &tp), 0);
	assert_int_equal(sxt_tblock_update(tp, sc->tblock, 2), 0);
	commit_sync(mp, tp);

	assert_int_equal(sx_trans_alloc(mp, sx_trans_op_bytes(sizeof(struct sxt_dtest_intent)),
					0, &tp), 0);
	assert_int_equal(sxt_log_test_intent(tp, sc->tblock - 1, 5, &sc->intent_id), 0);
	commit_sync(mp, tp);

	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp) +
					sx_trans_op_bytes(sizeof(struct sx_dlog_intent)), 0, &tp), 0);
	assert_int_equal(sxt_finish_test_intent(tp, sc->intent_id, sc->tblock - 1, 5), 0);
	commit_sync(mp, tp);

	assert_int_equal(sx_trans_alloc(mp, sx_trans_op_bytes(sizeof(te)) +
					sx_trans_op_bytes(sizeof(efd)), 0, &tp), 0);
	te.te_hdr.li_id = cpu_to_le64(0xabc0001ull);
	te.te_hdr.li_nitems = cpu_to_le32(1);
	te.te_ext.ef_startblock = cpu_to_le64(123);
	te.te_ext.ef_blockcount = cpu_to_le32(7);
	efd.li_id = te.te_hdr.li_id;
	efd.li_nitems = cpu_to_le32(1);
	assert_int_equal(sx_trans_log_item(tp, SX_LOG_OP_EFI, &te, sizeof(te)), 0);
	commit_sync(mp, tp);

	/* the EFD in a record of its own: with its EFI, the log would drop both */
	assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp) +
					sx_trans_op_bytes(sizeof(efd)), 0, &tp), 0);
	assert_int_equal(sx_trans_read_buf(tp, sc->tblock, &sxt_tblock_ops, 0, &bp), 0);
	assert_int_equal(sx_trans_binval(tp, bp), 0);
	assert_int_equal(sx_trans_log_item(tp, SX_LOG_OP_EFD, &efd, sizeof(efd)), 0);
	commit_sync(mp, tp);

	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_free_extent(tp, bno, len), 0);
	commit_sync(mp, tp);

	sx_shutdown(mp);
	assert_int_equal(sx_unmount(mp), -EIO);
	assert_int_equal(sx_sb_read(NULL, sc->bd, &sc->sb, NULL), 0);
	find_records(sc);
	assert_int_equal(sc->nrecs, 8);
	/* the whole test block makes a record of two blocks */
	assert_int_equal(sc->blocks[1], 2);
}

/* Every record and every op is printed and decoded. */
static void test_every_record_and_op(void **state)
{
	struct scenario sc;
	struct sxt_text o;
	char want[160], line[1024];
	u32 i;

	scenario(&sc);
	print_log(sc.bd, &o);

	assert_true(sxt_text_has(&o, "log tail 1/0"));
	for (i = 0; i < sc.nrecs; i++) {
		snprintf(want, sizeof(want), "record %u/%u: device block %llu,",
			 SX_LSN_CYCLE(sc.lsn[i]), SX_LSN_BLOCK(sc.lsn[i]),
			 (unsigned long long)(sc.sb.sb_logstart + SX_LSN_BLOCK(sc.lsn[i])));
		assert_true(sxt_text_has(&o, want));
		line_with(&o, want, line, sizeof(line));
		snprintf(want, sizeof(want), "%u blocks, %u ops,", sc.blocks[i], sc.nops[i]);
		assert_non_null(strstr(line, want));
		assert_non_null(strstr(line, "flags 0x0,"));
		assert_non_null(strstr(line, "crc 0x"));
		assert_non_null(strstr(line, "prev crc 0x"));
	}
	snprintf(want, sizeof(want), "end of the valid log at 1/%u after 8 records: no record header",
		 SX_LSN_BLOCK(sc.lsn[7]) + sc.blocks[7]);
	assert_true(sxt_text_has(&o, want));
	assert_true(sxt_text_has(&o, "the log needs recovery"));
	/* one "op" line per op in the valid part */
	assert_int_equal(count_between(&o, "    op ", "valid log from the tail",
				       "end of the valid log"), sc.total_ops);
	assert_int_equal(count_between(&o, "record ", "valid log from the tail",
				       "end of the valid log"), 8);

	assert_true(sxt_text_has(&o, "BUF (0x01) tid"));
	assert_true(sxt_text_has(&o, "TRANS_END (0x02) tid"));
	/* the whole test block is one region */
	snprintf(want, sizeof(want), "block %llu, flags 0x0, 1 regions",
		 (unsigned long long)sc.tblock);
	assert_true(sxt_text_has(&o, want));
	assert_true(sxt_text_has(&o, "regions (off/len): 0/4096"));
	snprintf(want, sizeof(want), "block %llu, flags 0x1 (CANCEL)",
		 (unsigned long long)sc.tblock);
	assert_true(sxt_text_has(&o, want));
	snprintf(want, sizeof(want), "TEST_INTENT (0x7e) tid");
	assert_true(sxt_text_has(&o, want));
	snprintf(want, sizeof(want), "intent, id 0x%llx, 1 items",
		 (unsigned long long)sc.intent_id);
	assert_true(sxt_text_has(&o, want));
	snprintf(want, sizeof(want), "done, id 0x%llx, 1 items",
		 (unsigned long long)sc.intent_id);
	assert_true(sxt_text_has(&o, want));
	assert_true(sxt_text_has(&o, "TEST_DONE (0x7f)"));
	assert_true(sxt_text_has(&o, "EFI (0x12) tid"));
	assert_true(sxt_text_has(&o, "intent, id 0xabc0001"));
	assert_true(sxt_text_has(&o, "      free: start 123 len 7"));
	assert_true(sxt_text_has(&o, "EFD (0x13) tid"));
	assert_false(sxt_text_has(&o, "BAD CRC"));
	assert_false(sxt_text_has(&o, "malformed"));
	sxt_text_free(&o);
	sx_bdev_destroy(sc.bd);
}

/* Read record @i of @sc from @bd into a new buffer. */
static u8 *get_record(struct scenario *sc, struct sx_bdev *bd, u32 i)
{
	u32 bytes = sc->blocks[i] * sc->sb.sb_blocksize;
	u8 *buf = malloc(bytes);

	assert_non_null(buf);
	sxt_bdev_peek(bd, (sc->sb.sb_logstart + SX_LSN_BLOCK(sc->lsn[i])) * sc->sb.sb_blocksize,
		      buf, bytes);
	return buf;
}

/* Write record @i back from @buf (and free it), with a new CRC if @recrc. */
static void put_record(struct scenario *sc, struct sx_bdev *bd, u32 i, u8 *buf, bool recrc)
{
	u32 bytes = sc->blocks[i] * sc->sb.sb_blocksize;
	struct sx_dlog_rec *rec = (struct sx_dlog_rec *)buf;

	if (recrc)
		rec->lr_crc = cpu_to_le32(sx_cksum_skip(buf, bytes,
							offsetof(struct sx_dlog_rec, lr_crc)));
	sxt_bdev_poke(bd, (sc->sb.sb_logstart + SX_LSN_BLOCK(sc->lsn[i])) * sc->sb.sb_blocksize,
		      buf, bytes);
	free(buf);
}

/* A changed byte: BAD CRC there, the valid log ends there, the rest follows. */
static void test_bad_crc(void **state)
{
	struct scenario sc;
	struct sx_bdev *bd;
	struct sxt_text o;
	char want[160], line[1024];
	u8 *buf;
	u32 i;

	scenario(&sc);
	bd = sxt_bdev_copy(sc.bd);
	/* a byte of the first op's block number in record 3 */
	buf = get_record(&sc, bd, 2);
	buf[sizeof(struct sx_dlog_rec) + sizeof(struct sx_dlog_op) + 2] ^= 0x01;
	put_record(&sc, bd, 2, buf, false);
	print_log(bd, &o);

	snprintf(want, sizeof(want), "record %u/%u BAD CRC", SX_LSN_CYCLE(sc.lsn[2]),
		 SX_LSN_BLOCK(sc.lsn[2]));
	assert_true(sxt_text_has(&o, want));
	line_with(&o, want, line, sizeof(line));
	/* the ops still parse: damaged, not torn */
	assert_null(strstr(line, "TORN"));
	snprintf(want, sizeof(want), "end of the valid log at 1/%u after 2 records: bad record CRC",
		 SX_LSN_BLOCK(sc.lsn[2]));
	assert_true(sxt_text_has(&o, want));
	/* the records after it are still printed, past the valid log */
	for (i = 3; i < sc.nrecs; i++) {
		snprintf(want, sizeof(want), "record %u/%u: device block",
			 SX_LSN_CYCLE(sc.lsn[i]), SX_LSN_BLOCK(sc.lsn[i]));
		assert_true(sxt_text_has(&o, want));
	}
	assert_int_equal(count_between(&o, "record ", "valid log from the tail",
				       "end of the valid log"), 2);
	assert_true(sxt_text_has(&o, "(ops not decoded: the record fails its CRC)"));
	sxt_text_free(&o);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(sc.bd);
}

/* The second block of a two-block record lost: BAD CRC and TORN. */
static void test_torn(void **state)
{
	struct scenario sc;
	struct sx_bdev *bd;
	struct sxt_text o;
	char want[160], line[1024];
	u8 *buf;

	scenario(&sc);
	bd = sxt_bdev_copy(sc.bd);
	buf = get_record(&sc, bd, 1);
	memset(buf + sc.sb.sb_blocksize, 0, sc.sb.sb_blocksize);
	put_record(&sc, bd, 1, buf, false);
	print_log(bd, &o);

	snprintf(want, sizeof(want), "record %u/%u BAD CRC", SX_LSN_CYCLE(sc.lsn[1]),
		 SX_LSN_BLOCK(sc.lsn[1]));
	assert_true(sxt_text_has(&o, want));
	line_with(&o, want, line, sizeof(line));
	assert_non_null(strstr(line, ", TORN (not as written from byte"));
	assert_true(sxt_text_has(&o, "after 1 records: bad record CRC"));
	sxt_text_free(&o);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(sc.bd);
}

/* A record whose prev CRC does not chain: BROKEN CHAIN. */
static void test_broken_chain(void **state)
{
	struct scenario sc;
	struct sx_bdev *bd;
	struct sx_dlog_rec *rec;
	struct sxt_text o;
	char want[160];
	u8 *buf;

	scenario(&sc);
	bd = sxt_bdev_copy(sc.bd);
	buf = get_record(&sc, bd, 4);
	rec = (struct sx_dlog_rec *)buf;
	rec->lr_prev_crc = cpu_to_le32(le32_to_cpu(rec->lr_prev_crc) ^ 0x5a5a);
	put_record(&sc, bd, 4, buf, true);
	print_log(bd, &o);

	snprintf(want, sizeof(want), "record %u/%u BROKEN CHAIN (the record before has crc 0x",
		 SX_LSN_CYCLE(sc.lsn[4]), SX_LSN_BLOCK(sc.lsn[4]));
	assert_true(sxt_text_has(&o, want));
	assert_true(sxt_text_has(&o, "after 4 records: record does not chain"));
	/* its own CRC is fine, so its ops are decoded */
	assert_false(sxt_text_has(&o, "BAD CRC"));
	assert_true(sxt_text_has(&o, "intent, id 0xabc0001"));
	sxt_text_free(&o);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(sc.bd);
}

/*
 * A log that has wrapped: after a clean unmount the blocks past the head
 * hold records of the previous cycle, and the walk stops after one pass.
 */
static void test_stale_after_wrap(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, SX_MIN_LOGBLOCKS);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sxt_text o;
	u64 bno;
	u32 len, i;

	for (i = 0; i < 100; i++) {
		assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), SX_TRANS_SYNC, &tp), 0);
		if (i % 2 == 0)
			assert_int_equal(sx_alloc_extent(tp, 0, 1, 3, &bno, &len), 0);
		else
			assert_int_equal(sx_free_extent(tp, bno, len), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	assert_true(SX_LSN_CYCLE(sx_log_head(mp)) >= 2);
	assert_int_equal(sx_unmount(mp), 0);

	print_log(bd, &o);
	assert_true(sxt_text_has(&o, "the log is clean"));
	assert_true(sxt_text_has(&o, "STALE (old cycle 1)"));
	assert_true(sxt_text_has(&o, "STALE (old cycle 2, checkpointed: behind the tail)"));
	assert_true(sxt_text_has(&o, "back at the tail: the whole log has been printed"));
	/* one pass: no more record lines than the log has blocks */
	assert_true(count_between(&o, "record ", "past the valid log", "back at the tail") <=
		    SX_MIN_LOGBLOCKS);
	sxt_text_free(&o);
	sx_bdev_destroy(bd);
}

/* Garbage in the log, or no superblock: the printer says so and returns. */
static void test_garbage(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_sb sb;
	struct sxt_text o;
	u64 seed = 7, off;
	u8 junk[4096];
	u32 i;

	assert_int_equal(sx_sb_read(NULL, bd, &sb, NULL), 0);
	for (off = 0; off < sb.sb_logblocks; off++) {
		for (i = 0; i < sizeof(junk); i++)
			junk[i] = (u8)sxt_rand(&seed);
		/* some blocks start with the right magic, to get past the first check */
		if (off % 3 == 0)
			memcpy(junk, &(__le32){ cpu_to_le32(SX_LOG_MAGIC) }, 4);
		sxt_bdev_poke(bd, (sb.sb_logstart + off) * 4096, junk, sizeof(junk));
	}
	print_log(bd, &o);
	assert_true(sxt_text_has(&o, "after 0 records"));
	assert_true(sxt_text_has(&o, "no record header at 1/0"));
	sxt_text_free(&o);

	memset(junk, 0, sizeof(junk));
	sxt_bdev_poke(bd, 0, junk, sizeof(junk));
	sxt_bdev_poke(bd, 4096, junk, sizeof(junk));
	memset(&o, 0, sizeof(o));
	assert_true(sx_logprint(bd, sxt_text_line, &o) < 0);
	assert_true(sxt_text_has(&o, "no valid superblock"));
	sxt_text_free(&o);
	assert_int_equal(sx_logprint(NULL, sxt_text_line, &o), -EINVAL);
	sx_bdev_destroy(bd);
}

/* Records of three blocks in a 64-block log: the writer wraps with a WRAP record. */
static void test_wrap_record(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, SX_MIN_LOGBLOCKS);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sx_log_stats ls;
	struct sxt_text o;
	char line[1024];
	u64 b = mp->m_sb.sb_datastart + 100;
	u32 i;

	for (i = 0; i < 40; i++) {
		assert_int_equal(sx_trans_alloc(mp, 2 * sx_trans_buf_bytes(mp), SX_TRANS_SYNC,
						&tp), 0);
		assert_int_equal(sxt_tblock_write(tp, b, i + 1), 0);
		assert_int_equal(sxt_tblock_write(tp, b + 1, i + 1), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	sx_log_get_stats(mp, &ls);
	assert_true(ls.ls_wraps >= 1);
	sx_shutdown(mp);
	sx_unmount(mp);

	print_log(bd, &o);
	assert_true(sxt_text_has(&o, "flags 0x1 (WRAP)"));
	line_with(&o, "flags 0x1 (WRAP)", line, sizeof(line));
	assert_non_null(strstr(line, "1 blocks, 0 ops, 0 bytes"));
	assert_non_null(strstr(line, ": device block 65,"));	/* the last log block */
	assert_true(sxt_text_has(&o, "3 blocks, 3 ops"));
	sxt_text_free(&o);
	sx_bdev_destroy(bd);
}

/* Count lines and nothing else: the damage test only wants the printers to survive. */
static void __attribute__((format(printf, 2, 3)))
count_line(void *arg, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	(*(u64 *)arg)++;
}

/*
 * Random damage to the records, the superblocks and the bitmap, often with
 * the CRC made right again so that the deeper checks see it: the printer
 * and the checker must return every time, within one pass over the log.
 */
static void test_random_damage(void **state)
{
	struct scenario sc;
	u64 seed = 2024, lines, problems;
	u32 round, bs;
	int error;

	scenario(&sc);
	bs = sc.sb.sb_blocksize;
	for (round = 0; round < 400; round++) {
		struct sx_bdev *bd = sxt_bdev_copy(sc.bd);
		u32 n = 1 + sxt_rand(&seed) % 6, j;

		for (j = 0; j < n; j++) {
			u32 what = sxt_rand(&seed) % 8;

			if (what < 5) {
				/* a byte of a record, maybe with a good CRC again */
				u32 i = sxt_rand(&seed) % sc.nrecs;
				u8 *buf = get_record(&sc, bd, i);

				buf[sxt_rand(&seed) % (sc.blocks[i] * bs)] ^=
					(u8)(1u << (sxt_rand(&seed) % 8));
				put_record(&sc, bd, i, buf, sxt_rand(&seed) % 2);
			} else if (what < 7) {
				/* a byte of a superblock copy, maybe with a good CRC */
				u64 off = (sxt_rand(&seed) % 2) * bs;
				u8 buf[SX_SB_SIZE];

				sxt_bdev_peek(bd, off, buf, SX_SB_SIZE);
				buf[sxt_rand(&seed) % SX_SB_SIZE] ^= (u8)(1u << (sxt_rand(&seed) % 8));
				if (sxt_rand(&seed) % 2)
					((struct sx_dsb *)buf)->sb_crc =
						cpu_to_le32(sx_cksum_skip(buf, SX_SB_SIZE,
									  offsetof(struct sx_dsb, sb_crc)));
				sxt_bdev_poke(bd, off, buf, SX_SB_SIZE);
			} else {
				/* a byte of the bitmap, maybe with a good CRC */
				u64 blk = sc.sb.sb_bmapstart;
				u8 *buf = malloc(bs);

				assert_non_null(buf);
				sxt_bdev_peek(bd, blk * bs, buf, bs);
				buf[sxt_rand(&seed) % bs] ^= (u8)(1u << (sxt_rand(&seed) % 8));
				if (sxt_rand(&seed) % 2)
					((struct sx_dblk_hdr *)buf)->bh_crc =
						cpu_to_le32(sx_cksum_skip(buf, bs,
							offsetof(struct sx_dblk_hdr, bh_crc)));
				sxt_bdev_poke(bd, blk * bs, buf, bs);
				free(buf);
			}
		}
		lines = 0;
		error = sx_logprint(bd, count_line, &lines);
		assert_true(error == 0 || error == -EFSCORRUPTED || error == -EFSBADCRC);
		assert_true(lines > 0);
		/* headers, at most one line per log block and per op, the end lines */
		assert_true(lines < 16 + 64 * 8);
		lines = 0;
		assert_int_equal(sx_check(bd, count_line, &lines, &problems), 0);
		assert_true(lines > problems);
		sx_bdev_destroy(bd);
	}
	sx_bdev_destroy(sc.bd);
}

/* Run every log printer test, with the test EFI type registered. */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_record_and_op),
		cmocka_unit_test(test_bad_crc),
		cmocka_unit_test(test_torn),
		cmocka_unit_test(test_broken_chain),
		cmocka_unit_test(test_stale_after_wrap),
		cmocka_unit_test(test_wrap_record),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_random_damage),
	};

	sx_thread_enter();
	sxt_quiet();
	sxt_register_test_intent();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
