// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Data manifests (engine/log_manifest.c): a force that maps new blocks
 * lists them with the CRC of their data in its first record and flushes
 * once; recovery drops the last force when its data does not match, and
 * writes a fence over it; an overwrite of a block of the last force's
 * manifest gets a fence first; a manifest too large for its record, and a
 * remap of blocks written in place, flush the data before the records.
 * Also the record checks: header fields and flags, the manifest record's
 * contents; and what the log printer and the checker say about them.
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
#include "sxcrash.h"
#include "log_recover.h"
#include "log_priv.h"
#include <swapext/device.h>

#define MIB		(1ull << 20)
#define BS		4096u
#define NFULL		500	/* files written by one force: several records */
#define FULL_LOG	200	/* log blocks there: records of at most 25 blocks */

static struct sx_bdev *mem, *bd;
static struct sx_crashdev *cd;
static struct sx_mount *mp;

static int setup(void **state)
{
	mem = sxt_memfs(8 * MIB, BS, 0);
	assert_int_equal(sx_crashdev_create(mem, 1, &bd, &cd), 0);
	mp = sxt_mount(bd);
	return 0;
}

/* A small log, so that a force of a few hundred transactions fills records. */
static int setup_small_log(void **state)
{
	mem = sxt_memfs(8 * MIB, BS, FULL_LOG);
	assert_int_equal(sx_crashdev_create(mem, 1, &bd, &cd), 0);
	mp = sxt_mount(bd);
	return 0;
}

static int teardown(void **state)
{
	if (mp)
		sx_unmount(mp);
	mp = NULL;
	sx_bdev_destroy(bd);
	sx_bdev_destroy(mem);
	return 0;
}

/* Lose everything not yet in the log, as a crash would (the device keeps its writes). */
static void crash(void)
{
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = NULL;
}

static u64 flushes(void)
{
	struct sx_crashdev_stats st;

	sx_crashdev_get_stats(cd, &st);
	return st.cs_flushes;
}

/* Device block of byte @off of @fd (0: a hole). */
static u64 phys(int fd, u64 off)
{
	struct sx_extent ext[4];
	u32 n = 0;

	assert_int_equal(sx_fiemap(mp, fd, off, BS, ext, 4, &n), 0);
	if (n == 0 || ext[0].ex_off > off)
		return 0;
	return (ext[0].ex_physical + (off - ext[0].ex_off)) / BS;
}

/* A durable empty file. */
static int mkfile(const char *name)
{
	int fd;

	assert_int_equal(sx_create(mp, name, 0644, &fd), 0);
	assert_int_equal(sx_fsync(mp, fd), 0);
	return fd;
}

static void put(int fd, u64 off, u64 len, u8 byte)
{
	u8 *buf = malloc(len);

	memset(buf, byte, len);
	assert_int_equal(sx_pwrite(mp, fd, buf, len, off), (s64)len);
	free(buf);
}

/* @name is @len bytes of @byte. */
static void holds(const char *name, u64 len, u8 byte)
{
	struct sx_stat st;
	u8 *buf = malloc(len + 1);
	u64 i;
	int fd;

	assert_int_equal(sx_open(mp, name, &fd), 0);
	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	assert_int_equal(st.st_size, len);
	assert_int_equal(sx_pread(mp, fd, buf, len + 1, 0), (s64)len);
	for (i = 0; i < len; i++)
		assert_int_equal(buf[i], byte);
	assert_int_equal(sx_close(mp, fd), 0);
	free(buf);
}

/* The log record at @lsn, read raw (@buf holds @blocks blocks). */
static struct sx_dlog_rec *peek_rec(u64 lsn, u8 *buf, u32 blocks)
{
	u64 logstart;
	struct sx_dsb sb;

	sxt_bdev_peek(mem, 0, &sb, sizeof(sb));
	logstart = le64_to_cpu(sb.sb_logstart);
	sxt_bdev_peek(mem, (logstart + SX_LSN_BLOCK(lsn)) * BS, buf, blocks * BS);
	return (struct sx_dlog_rec *)buf;
}

/*
 * A write into new blocks and its fsync: one record and one flush.  The
 * manifest is the first op of the force's first record, the transaction's
 * ops follow it in the same record.
 */
static void test_one_flush_manifest_first(void **state)
{
	struct sx_log_stats s0, s1;
	struct sx_crashdev_stats c0, c1;
	u8 *buf = malloc(4 * BS), data[BS];
	const struct sx_dlog_mfent *e;
	struct sx_dlog_rec *rec;
	const struct sx_dlog_op *op;
	u64 head, b0, b1;
	u32 len;
	int fd = mkfile("f");

	head = sx_log_head(mp);
	put(fd, 0, 2 * BS, 0x5a);
	sx_log_get_stats(mp, &s0);
	sx_crashdev_get_stats(cd, &c0);
	assert_int_equal(sx_fsync(mp, fd), 0);
	sx_crashdev_get_stats(cd, &c1);
	sx_log_get_stats(mp, &s1);
	/* one record, one device write, one flush */
	assert_int_equal(c1.cs_flushes - c0.cs_flushes, 1);
	assert_int_equal(c1.cs_writes - c0.cs_writes, 1);
	assert_int_equal(s1.ls_records - s0.ls_records, 1);
	assert_int_equal(s1.ls_manifests, s0.ls_manifests + 1);
	assert_int_equal(s1.ls_preflushes, s0.ls_preflushes);
	b0 = phys(fd, 0);
	b1 = phys(fd, BS);
	crash();

	rec = peek_rec(head, buf, 4);
	assert_int_equal(le32_to_cpu(rec->lr_flags), SX_LR_MANIFEST);
	assert_int_equal(le64_to_cpu(rec->lr_force_lsn), head);
	assert_true(le32_to_cpu(rec->lr_nops) > 1);
	op = (const struct sx_dlog_op *)(rec + 1);
	assert_int_equal(le16_to_cpu(op->lo_type), SX_LOG_OP_MANIFEST);
	assert_int_equal(le64_to_cpu(op->lo_tid), 0);
	len = le32_to_cpu(op->lo_len);
	assert_int_equal(len, 2 * sizeof(*e));
	e = (const struct sx_dlog_mfent *)(op + 1);
	memset(data, 0x5a, BS);
	assert_true((le64_to_cpu(e[0].me_bno) == b0 && le64_to_cpu(e[1].me_bno) == b1) ||
		    (le64_to_cpu(e[0].me_bno) == b1 && le64_to_cpu(e[1].me_bno) == b0));
	assert_int_equal(le32_to_cpu(e[0].me_crc), sx_cksum(data, BS));
	assert_int_equal(le32_to_cpu(e[1].me_crc), sx_cksum(data, BS));
	/* the transaction's ops follow, and the record names their first tid */
	op = (const struct sx_dlog_op *)((const u8 *)(op + 1) + len);
	assert_int_not_equal(le16_to_cpu(op->lo_type), SX_LOG_OP_MANIFEST);
	assert_true(le64_to_cpu(op->lo_tid) > 0);
	assert_int_equal(le64_to_cpu(op->lo_tid), le64_to_cpu(rec->lr_first_tid));
	/* and nothing of the force comes after it */
	rec = peek_rec(head + le32_to_cpu(rec->lr_blocks), buf, 1);
	assert_true(le32_to_cpu(rec->lr_magic) != SX_LOG_MAGIC ||
		    le64_to_cpu(rec->lr_force_lsn) != head);

	mp = sxt_mount(bd);
	holds("f", 2 * BS, 0x5a);
	free(buf);
}

/*
 * A force's records on the media without its data (the data write lost):
 * recovery drops the whole force, and the fence the mount writes over it
 * keeps it dropped even if the data turns up later.
 */
static void test_torn_data_drops_force(void **state)
{
	struct sx_recovery_stats rs;
	u8 old[BS], junk[BS];
	u64 b0;
	int fd = mkfile("f");

	put(fd, 0, 2 * BS, 0x5a);
	assert_int_equal(sx_fsync(mp, fd), 0);
	b0 = phys(fd, BS);
	crash();
	sxt_bdev_peek(mem, b0 * BS, old, BS);
	memset(junk, 0xee, BS);
	sxt_bdev_poke(mem, b0 * BS, junk, BS);

	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_dropped, 1);	/* the force is one record */
	assert_int_equal(rs.rs_stop_reason, SX_LOG_STOP_DATA);
	holds("f", 0, 0);
	assert_int_equal(sx_unmount(mp), 0);
	mp = NULL;
	assert_int_equal(sxc_check_clean(bd, 0, "after the dropped force"), 0);

	/* the data shows up after all: the force stays gone */
	sxt_bdev_poke(mem, b0 * BS, old, BS);
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_records, 0);
	assert_int_equal(rs.rs_dropped, 0);
	holds("f", 0, 0);
}

/* Crash between the manifest's flush and the fence the mount would write. */
static void test_dropped_force_before_fence(void **state)
{
	struct sx_recovery_stats rs;
	u8 junk[BS];
	u64 b0;
	int fd = mkfile("f");

	put(fd, 0, BS, 0x11);
	assert_int_equal(sx_fsync(mp, fd), 0);
	b0 = phys(fd, 0);
	crash();
	memset(junk, 0xee, BS);
	sxt_bdev_poke(mem, b0 * BS, junk, BS);
	/* a read-only look: nothing is written, the force is still dropped */
	{
		struct sxt_text t;

		memset(&t, 0, sizeof(t));
		assert_true(sxc_checker(bd, 0, &t) > 0);
		assert_true(sxt_text_has(&t, "does not hold its data: recovery drops the force"));
		sxt_text_free(&t);
		memset(&t, 0, sizeof(t));
		assert_int_equal(sx_logprint(bd, sxt_text_line, &t), 0);
		assert_true(sxt_text_has(&t, "(MANIFEST)"));
		/* the manifest starts its force, the records after it name it */
		assert_true(sxt_text_has(&t, "(starts it)"));
		assert_true(sxt_text_has(&t, "blocks (block/crc):"));
		assert_true(sxt_text_has(&t, "MANIFEST (0x03) tid 0: 1 data blocks"));
		assert_true(sxt_text_has(&t, "does not hold what the manifest of the last force says"));
		sxt_text_free(&t);
	}
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_dropped, 1);	/* the force is one record */
	holds("f", 0, 0);
}

/* The same force with its data: replayed whole, and the tools say so. */
static void test_matching_data_replays(void **state)
{
	struct sx_recovery_stats rs;
	struct sxt_text t;
	int fd = mkfile("f");

	put(fd, 0, 3 * BS, 0x22);
	assert_int_equal(sx_fsync(mp, fd), 0);
	crash();
	memset(&t, 0, sizeof(t));
	sxc_checker(bd, 0, &t);
	assert_true(sxt_text_has(&t, "blocks of the last force's manifest hold its data"));
	sxt_text_free(&t);
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_dropped, 0);
	assert_int_equal(rs.rs_stop_reason, SX_LOG_STOP_HEADER);
	holds("f", 3 * BS, 0x22);
}

/*
 * An overwrite in place of a block the last force's manifest lists gets a
 * fence written first: else a crash would show the new data to recovery,
 * which would drop the acknowledged force.
 */
static void test_overwrite_fences(void **state)
{
	struct sx_log_stats s0, s1;
	struct sx_recovery_stats rs;
	int fd = mkfile("f");

	put(fd, 0, 2 * BS, 0x33);
	assert_int_equal(sx_fsync(mp, fd), 0);
	sx_log_get_stats(mp, &s0);
	put(fd, BS, BS, 0x44);
	sx_log_get_stats(mp, &s1);
	assert_int_equal(s1.ls_fences, s0.ls_fences + 1);
	/* once fenced, more overwrites wait for nothing */
	put(fd, 0, BS, 0x44);
	sx_log_get_stats(mp, &s0);
	assert_int_equal(s0.ls_fences, s1.ls_fences);
	assert_int_equal(s0.ls_forces, s1.ls_forces);
	crash();
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_dropped, 0);
	holds("f", 2 * BS, 0x44);
}

/*
 * A force of several records whose first group is full: the manifest does
 * not fit beside it, so it is a record of its own, still the first of the
 * force.  Its data lost, recovery drops every record of the force.
 */
static void test_full_group_manifest_alone(void **state)
{
	struct sx_log_stats s0, s1;
	struct sx_recovery_stats rs;
	u8 *buf = malloc(64 * BS), junk[BS];
	struct sx_dlog_rec *rec;
	u64 head, nrec, b0;
	char name[16];
	int fd[NFULL], i;
	u32 maxb;

	for (i = 0; i < NFULL; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		fd[i] = mkfile(name);
	}
	head = sx_log_head(mp);
	sx_log_get_stats(mp, &s0);
	for (i = 0; i < NFULL; i++)
		put(fd[i], 0, BS, (u8)(i + 1));
	assert_int_equal(sx_sync(mp), 0);
	sx_log_get_stats(mp, &s1);
	nrec = s1.ls_records - s0.ls_records;
	maxb = sx_log_rec_max_bytes(mp->m_log);
	assert_true(nrec >= 2);
	assert_int_equal(s1.ls_manifests, s0.ls_manifests + 1);
	assert_int_equal(s1.ls_wraps, s0.ls_wraps);
	b0 = phys(fd[NFULL - 1], 0);
	crash();

	rec = peek_rec(head, buf, 64);
	assert_int_equal(le32_to_cpu(rec->lr_flags), SX_LR_MANIFEST);
	assert_int_equal(le32_to_cpu(rec->lr_nops), 1);
	assert_int_equal(le32_to_cpu(rec->lr_len),
			 sizeof(struct sx_dlog_op) + NFULL * sizeof(struct sx_dlog_mfent));
	rec = peek_rec(head + le32_to_cpu(rec->lr_blocks), buf, 64);
	assert_int_equal(le32_to_cpu(rec->lr_flags), 0);
	assert_int_equal(le64_to_cpu(rec->lr_force_lsn), head);
	/* a full group: the manifest would not have fitted beside it */
	assert_true(le32_to_cpu(rec->lr_len) + sizeof(struct sx_dlog_op) +
		    NFULL * sizeof(struct sx_dlog_mfent) > maxb);

	memset(junk, 0xee, BS);
	sxt_bdev_poke(mem, b0 * BS, junk, BS);
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_dropped, nrec);
	assert_int_equal(rs.rs_stop_reason, SX_LOG_STOP_DATA);
	holds("f0", 0, 0);
	free(buf);
}

/* Writes again into blocks not yet forced update their entry: no fence. */
static void test_rewrite_before_force(void **state)
{
	struct sx_log_stats s0, s1;
	struct sx_recovery_stats rs;
	int fd = mkfile("f");

	sx_log_get_stats(mp, &s0);
	put(fd, 0, 2 * BS, 0x33);
	put(fd, 0, 2 * BS, 0x66);
	assert_int_equal(sx_fsync(mp, fd), 0);
	sx_log_get_stats(mp, &s1);
	assert_int_equal(s1.ls_fences, s0.ls_fences);
	assert_int_equal(s1.ls_manifests, s0.ls_manifests + 1);
	crash();
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_dropped, 0);
	holds("f", 2 * BS, 0x66);
}

/* More new blocks than one manifest holds: the data is flushed first. */
static void test_overflow_flushes_first(void **state)
{
	struct sx_log_stats s0, s1;
	struct sx_recovery_stats rs;
	u64 f0;
	int fd = mkfile("f");

	mp->m_log->l_mf_max = 4;
	sx_log_get_stats(mp, &s0);
	put(fd, 0, 5 * BS, 0x77);
	f0 = flushes();
	assert_int_equal(sx_fsync(mp, fd), 0);
	assert_int_equal(flushes() - f0, 2);
	sx_log_get_stats(mp, &s1);
	assert_int_equal(s1.ls_preflushes, s0.ls_preflushes + 1);
	assert_int_equal(s1.ls_manifests, s0.ls_manifests);
	/* nothing to guard: an overwrite waits for nothing */
	put(fd, 0, BS, 0x77);
	sx_log_get_stats(mp, &s0);
	assert_int_equal(s0.ls_fences, s1.ls_fences);
	/* four blocks fit */
	put(fd, 5 * BS, 4 * BS, 0x77);
	assert_int_equal(sx_fsync(mp, fd), 0);
	sx_log_get_stats(mp, &s1);
	assert_int_equal(s1.ls_preflushes, s0.ls_preflushes);
	assert_int_equal(s1.ls_manifests, s0.ls_manifests + 1);
	crash();
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_dropped, 0);
	holds("f", 9 * BS, 0x77);
}

/*
 * Data written in place over a durable mapping, then mapped into another
 * file (a clone): the force flushes it before the records, as the mapping
 * must not outlive it.  A clone with no such write flushes once.
 */
static void test_remap_flushes_inplace_data(void **state)
{
	struct sx_log_stats s0, s1;
	int a = mkfile("a"), b = mkfile("b"), c = mkfile("c");
	u64 f0;

	put(a, 0, 2 * BS, 0x10);
	assert_int_equal(sx_fsync(mp, a), 0);
	/* end the reign of that force's manifest */
	assert_int_equal(sx_fsync(mp, b), 0);
	put(b, 0, BS, 0x20);
	assert_int_equal(sx_sync(mp), 0);
	put(c, 0, BS, 0x20);
	assert_int_equal(sx_sync(mp), 0);

	sx_log_get_stats(mp, &s0);
	f0 = flushes();
	assert_int_equal(sx_clone_range(mp, b, 0, a, 0, 2 * BS), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_log_get_stats(mp, &s1);
	assert_int_equal(s1.ls_preflushes, s0.ls_preflushes);
	assert_int_equal(flushes() - f0, 1);

	put(c, 0, BS, 0x30);		/* in place, c's durable block */
	sx_log_get_stats(mp, &s0);
	assert_int_equal(sx_clone_range(mp, a, 0, c, 0, BS), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_log_get_stats(mp, &s1);
	assert_int_equal(s1.ls_preflushes, s0.ls_preflushes + 1);
}

/* A record buffer: header, then @nops ops of @len payload bytes each of @type. */
static u8 *mkrec(u32 flags, u16 type, u32 nops, u32 len, u32 *bytes)
{
	u32 total = sizeof(struct sx_dlog_rec) + nops * (sizeof(struct sx_dlog_op) + len);
	u8 *buf = calloc(1, BS);
	struct sx_dlog_rec *rec = (struct sx_dlog_rec *)buf;
	u8 *p = buf + sizeof(*rec);
	u32 i;

	assert_true(total <= BS);
	rec->lr_flags = cpu_to_le32(flags);
	rec->lr_nops = cpu_to_le32(nops);
	rec->lr_len = cpu_to_le32(total - sizeof(*rec));
	for (i = 0; i < nops; i++) {
		struct sx_dlog_op *op = (struct sx_dlog_op *)p;

		op->lo_type = cpu_to_le16(type);
		op->lo_len = cpu_to_le32(len);
		p += sizeof(*op) + len;
	}
	*bytes = BS;
	return buf;
}

/*
 * A manifest record as a force writes it first: a MANIFEST op of one entry
 * (block 100), then a transaction @tid of one BUF op and its TRANS_END.
 */
static u8 *mkrec_mixed(u64 tid, u32 *bytes)
{
	u8 *buf = calloc(1, BS);
	struct sx_dlog_rec *rec = (struct sx_dlog_rec *)buf;
	struct sx_dlog_op *op = (struct sx_dlog_op *)(rec + 1);
	struct sx_dlog_mfent *e = (struct sx_dlog_mfent *)(op + 1);

	op->lo_type = cpu_to_le16(SX_LOG_OP_MANIFEST);
	op->lo_len = cpu_to_le32(sizeof(*e));
	e->me_bno = cpu_to_le64(100);
	op = (struct sx_dlog_op *)(e + 1);
	op->lo_type = cpu_to_le16(SX_LOG_OP_BUF);
	op->lo_tid = cpu_to_le64(tid);
	op->lo_len = cpu_to_le32(8);
	op = (struct sx_dlog_op *)((u8 *)(op + 1) + 8);
	op->lo_type = cpu_to_le16(SX_LOG_OP_TRANS_END);
	op->lo_tid = cpu_to_le64(tid);
	rec->lr_flags = cpu_to_le32(SX_LR_MANIFEST);
	rec->lr_nops = cpu_to_le32(3);
	rec->lr_first_tid = cpu_to_le64(tid);
	rec->lr_len = cpu_to_le32((u32)((u8 *)(op + 1) - (u8 *)(rec + 1)));
	*bytes = BS;
	return buf;
}

/* What a manifest record may hold, and where MANIFEST ops may be. */
static void test_record_kind_checks(void **state)
{
	const struct sx_dlog_mfent *ents;
	struct sx_dlog_mfent *e;
	const char *why;
	u32 n, bytes;
	u8 *buf;

	/* a good one: two entries in the data area */
	buf = mkrec(SX_LR_MANIFEST, SX_LOG_OP_MANIFEST, 1, 2 * sizeof(*e), &bytes);
	e = (struct sx_dlog_mfent *)(buf + sizeof(struct sx_dlog_rec) + sizeof(struct sx_dlog_op));
	e[0].me_bno = cpu_to_le64(100);
	e[1].me_bno = cpu_to_le64(101);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 50, 200, &ents, &n, &why), 0);
	assert_int_equal(n, 2);
	assert_ptr_equal(ents, e);
	e[1].me_bno = cpu_to_le64(200);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 50, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	assert_string_equal(why, "manifest names a block outside the data area");
	e[1].me_bno = cpu_to_le64(49);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 50, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	e[1].me_bno = cpu_to_le64(101);
	e[1].me_pad = cpu_to_le32(1);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 50, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	assert_string_equal(why, "manifest entry padding is not zero");
	free(buf);
	/* no entries, a partial entry, a transaction id, two manifests */
	buf = mkrec(SX_LR_MANIFEST, SX_LOG_OP_MANIFEST, 1, 0, &bytes);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 50, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	free(buf);
	buf = mkrec(SX_LR_MANIFEST, SX_LOG_OP_MANIFEST, 1, sizeof(*e) + 8, &bytes);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 0, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	assert_string_equal(why, "manifest op of a bad length");
	free(buf);
	buf = mkrec(SX_LR_MANIFEST, SX_LOG_OP_MANIFEST, 1, sizeof(*e), &bytes);
	((struct sx_dlog_op *)(buf + sizeof(struct sx_dlog_rec)))->lo_tid = cpu_to_le64(3);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 0, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	free(buf);
	buf = mkrec(SX_LR_MANIFEST, SX_LOG_OP_MANIFEST, 2, sizeof(*e), &bytes);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 0, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	free(buf);
	/* a manifest record whose first op is not the manifest */
	buf = mkrec(SX_LR_MANIFEST, SX_LOG_OP_TRANS_END, 1, 0, &bytes);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 0, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	assert_string_equal(why, "manifest record does not begin with a manifest op");
	free(buf);
	/* a manifest op, then a transaction's ops: the force's first record */
	buf = mkrec_mixed(7, &bytes);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 0, 200, &ents, &n, &why), 0);
	assert_int_equal(n, 1);
	assert_int_equal(le64_to_cpu(ents[0].me_bno), 100);
	/* the manifest's tid 0 is not a tid going backwards */
	assert_int_equal(sx_log_rec_walk_ops(buf, bytes, NULL, NULL, &why), 0);
	free(buf);
	/* ... but no second manifest after them */
	buf = mkrec_mixed(7, &bytes);
	((struct sx_dlog_op *)(buf + sizeof(struct sx_dlog_rec) + sizeof(struct sx_dlog_op) +
			       sizeof(*e)))->lo_type = cpu_to_le16(SX_LOG_OP_MANIFEST);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 0, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	assert_string_equal(why, "manifest op after the start of a manifest record");
	free(buf);
	/* ... and a record holding only a manifest says no transaction */
	buf = mkrec(SX_LR_MANIFEST, SX_LOG_OP_MANIFEST, 1, sizeof(*e), &bytes);
	((struct sx_dlog_rec *)buf)->lr_first_tid = cpu_to_le64(7);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 0, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	free(buf);
	/* a MANIFEST op outside a manifest record */
	buf = mkrec(0, SX_LOG_OP_MANIFEST, 1, sizeof(*e), &bytes);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 0, 200, &ents, &n, &why),
			 -EFSCORRUPTED);
	assert_string_equal(why, "manifest op outside a manifest record");
	free(buf);
	/* other records: no entries */
	buf = mkrec(0, SX_LOG_OP_TRANS_END, 1, 0, &bytes);
	assert_int_equal(sx_log_rec_check_kind(buf, bytes, 0, 200, &ents, &n, &why), 0);
	assert_null(ents);
	assert_int_equal(n, 0);
	free(buf);
}

/* The header's new rules: fence records, one kind per record, the force LSN. */
static void test_header_checks(void **state)
{
	struct sx_dlog_rec rec;
	u8 uuid[SX_UUID_SIZE];
	const char *why;
	u64 lsn = SX_LSN(3, 40);

	memset(uuid, 7, sizeof(uuid));
	memset(&rec, 0, sizeof(rec));
	rec.lr_magic = cpu_to_le32(SX_LOG_MAGIC);
	rec.lr_version = cpu_to_le32(SX_VERSION);
	memcpy(rec.lr_uuid, uuid, sizeof(uuid));
	rec.lr_lsn = cpu_to_le64(lsn);
	rec.lr_cycle = cpu_to_le32(3);
	rec.lr_blocks = cpu_to_le32(1);
	rec.lr_tail_lsn = cpu_to_le64(SX_LSN(2, 90));
	rec.lr_force_lsn = cpu_to_le64(lsn);
	rec.lr_flags = cpu_to_le32(SX_LR_FENCE);
	assert_int_equal(sx_log_rec_check_header(&rec, uuid, lsn, 128, BS, &why), 0);
	/* a force that began in the cycle before, after the tail */
	rec.lr_force_lsn = cpu_to_le64(SX_LSN(2, 100));
	assert_int_equal(sx_log_rec_check_header(&rec, uuid, lsn, 128, BS, &why), 0);
	rec.lr_force_lsn = cpu_to_le64(SX_LSN(2, 80));
	assert_int_equal(sx_log_rec_check_header(&rec, uuid, lsn, 128, BS, &why), -EFSCORRUPTED);
	assert_string_equal(why, "bad force LSN");
	rec.lr_force_lsn = cpu_to_le64(lsn + 1);
	assert_int_equal(sx_log_rec_check_header(&rec, uuid, lsn, 128, BS, &why), -EFSCORRUPTED);
	rec.lr_force_lsn = cpu_to_le64(lsn);
	rec.lr_len = cpu_to_le32(16);
	assert_int_equal(sx_log_rec_check_header(&rec, uuid, lsn, 128, BS, &why), -EFSCORRUPTED);
	assert_string_equal(why, "bad fence record");
	rec.lr_len = 0;
	rec.lr_flags = cpu_to_le32(SX_LR_MANIFEST | SX_LR_WRAP);
	assert_int_equal(sx_log_rec_check_header(&rec, uuid, lsn, 128, BS, &why), -EFSCORRUPTED);
	rec.lr_flags = cpu_to_le32(SX_LR_MANIFEST | SX_LR_FENCE);
	assert_int_equal(sx_log_rec_check_header(&rec, uuid, lsn, 128, BS, &why), -EFSCORRUPTED);
	assert_string_equal(why, "more than one kind of record");
	rec.lr_flags = cpu_to_le32(1u << 3);
	assert_int_equal(sx_log_rec_check_header(&rec, uuid, lsn, 128, BS, &why), -EFSCORRUPTED);
	assert_string_equal(why, "unknown flags");
	/* the format version went up with the force LSN */
	assert_int_equal(SX_VERSION, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_one_flush_manifest_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_data_drops_force, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dropped_force_before_fence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_matching_data_replays, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overwrite_fences, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_group_manifest_alone, setup_small_log,
						teardown),
		cmocka_unit_test_setup_teardown(test_rewrite_before_force, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overflow_flushes_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remap_flushes_inplace_data, setup, teardown),
		cmocka_unit_test(test_record_kind_checks),
		cmocka_unit_test(test_header_checks),
	};

	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
