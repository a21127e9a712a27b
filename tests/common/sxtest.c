// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Shared test helpers (see sxtest.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include "sxtest.h"

u64 sxt_recovered_ids[64];
u32 sxt_nrecovered;
bool sxt_fail_validate;

/* The byte at @i of test block (@blkno, @gen). */
static u8 sxt_tbyte(u64 blkno, u64 gen, u32 i)
{
	u64 x = (blkno * 0x9e3779b97f4a7c15ull) ^ (gen * 0xc2b2ae3d27d4eb4full) ^ (i / 8);

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (u8)(x >> ((i % 8) * 8));
}

/* Fill a whole test block image. */
void sxt_tblock_fill(void *data, u32 bsize, u64 blkno, u64 gen)
{
	struct sxt_dtblock *tb = data;
	u8 *p = data;
	u32 i;

	tb->tb_gen = cpu_to_le64(gen);
	tb->tb_pad = 0;
	for (i = sizeof(*tb); i < bsize; i++)
		p[i] = sxt_tbyte(blkno, gen, i);
}

/* Check the body of a test block: its generation, or -1 if any byte is off. */
s64 sxt_tblock_check(const void *data, u32 bsize, u64 blkno)
{
	const struct sxt_dtblock *tb = data;
	const u8 *p = data;
	u64 gen = le64_to_cpu(tb->tb_gen);
	u32 i;

	if (tb->tb_pad)
		return -1;
	for (i = sizeof(*tb); i < bsize; i++)
		if (p[i] != sxt_tbyte(blkno, gen, i))
			return -1;
	return (s64)gen;
}

/* Verifier: every byte must match the generation. */
static int sxt_tblock_verify(struct sx_mount *mp, const void *data)
{
	const struct sx_dblk_hdr *hdr = data;

	if (sxt_tblock_check(data, mp->m_bsize, le64_to_cpu(hdr->bh_blkno)) < 0)
		return -EFSCORRUPTED;
	return 0;
}

const struct sx_buf_ops sxt_tblock_ops = {
	.bo_name = "test",
	.bo_magic = SXT_TB_MAGIC,
	.bo_verify = sxt_tblock_verify,
};

/*
 * Recovery runs the verifier of every block it rebuilds, found by magic:
 * make the test block type known before any test mounts.
 */
static void __attribute__((constructor)) sxt_register_tblock(void)
{
	if (sx_buf_type_register(&sxt_tblock_ops))
		abort();
}

/* Initialise test block @blkno at @gen. */
int sxt_tblock_write(struct sx_trans *tp, u64 blkno, u64 gen)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_buf *bp;
	int error;

	error = sx_trans_get_buf(tp, blkno, &sxt_tblock_ops, 0, &bp);
	if (error)
		return error;
	sx_buf_init_hdr(mp, bp, SXT_TB_MAGIC, 0);
	sxt_tblock_fill(bp->b_data, mp->m_bsize, blkno, gen);
	return sx_trans_log_buf(tp, bp, 0, mp->m_bsize - 1);
}

/* Move an existing test block to @gen, logging only the bytes that changed. */
int sxt_tblock_update(struct sx_trans *tp, u64 blkno, u64 gen)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_buf *bp;
	u8 *img, *p;
	u32 i, first = 0, last = 0;
	bool any = false;
	int error;

	error = sx_trans_read_buf(tp, blkno, &sxt_tblock_ops, 0, &bp);
	if (error)
		return error;
	img = malloc(mp->m_bsize);
	if (!img)
		return -ENOMEM;
	memcpy(img, bp->b_data, mp->m_bsize);
	sxt_tblock_fill(img, mp->m_bsize, blkno, gen);
	p = bp->b_data;
	for (i = 0; i < mp->m_bsize; i++) {
		if (p[i] != img[i]) {
			if (!any)
				first = i;
			last = i;
			any = true;
		}
	}
	memcpy(bp->b_data, img, mp->m_bsize);
	free(img);
	if (!any)
		return 0;
	return sx_trans_log_buf(tp, bp, first, last);
}

/* Read a test block through the cache. */
int sxt_tblock_read(struct sx_mount *mp, u64 blkno, u64 *gen)
{
	struct sx_buf *bp;
	int error;

	error = sx_buf_read(mp, blkno, &sxt_tblock_ops, 0, &bp);
	if (error)
		return error;
	*gen = le64_to_cpu(((struct sxt_dtblock *)bp->b_data)->tb_gen);
	sx_buf_relse(bp);
	return 0;
}

/* A memory device with a fresh filesystem. */
struct sx_bdev *sxt_memfs(u64 size, u32 blocksize, u32 logblocks)
{
	struct sx_mkfs_opts mo = { .mk_blocksize = blocksize, .mk_logblocks = logblocks };
	static const u8 uuid[16] = { 0x5e, 0x70, 0xe5, 0x7e, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	struct sx_bdev *bd;
	int error;

	mo.mk_uuid = uuid;
	/* a test that picks the log's size picks it for the log's sake */
	if (logblocks)
		mo.mk_flags = SX_MKFS_SMALL_LOG;
	error = sx_memdev_create(size, 512, &bd);
	if (error) {
		fprintf(stderr, "memdev: %d\n", error);
		abort();
	}
	error = sx_mkfs(bd, &mo);
	if (error) {
		fprintf(stderr, "mkfs: %s\n", sx_strerror(error));
		abort();
	}
	return bd;
}

/* Copy a device into a new memory device. */
struct sx_bdev *sxt_bdev_copy(struct sx_bdev *src)
{
	struct sx_bdev *bd;
	u64 off, chunk = 1 << 20;
	u8 *buf = malloc(chunk);

	if (!buf || sx_memdev_create(src->bd_size, src->bd_sectsize, &bd))
		abort();
	for (off = 0; off < src->bd_size; off += chunk) {
		u64 n = src->bd_size - off < chunk ? src->bd_size - off : chunk;

		if (src->bd_ops->read(src, off, buf, n) || bd->bd_ops->write(bd, off, buf, n, 0))
			abort();
	}
	free(buf);
	return bd;
}

/* Compare two devices byte for byte. */
bool sxt_bdev_equal(struct sx_bdev *a, struct sx_bdev *b)
{
	u64 off, chunk = 1 << 20;
	u8 *x = malloc(chunk), *y = malloc(chunk);
	bool eq = a->bd_size == b->bd_size;

	for (off = 0; eq && off < a->bd_size; off += chunk) {
		u64 n = a->bd_size - off < chunk ? a->bd_size - off : chunk;

		if (a->bd_ops->read(a, off, x, n) || b->bd_ops->read(b, off, y, n))
			abort();
		eq = memcmp(x, y, n) == 0;
	}
	free(x);
	free(y);
	return eq;
}

/*
 * A 64-bit digest of a device: the crc32c of each 1 MiB chunk, mixed with
 * its position.  Cheaper than a copy to compare against for images of
 * hundreds of MiB; a change goes unnoticed with odds of 2^-32 per chunk.
 */
u64 sxt_bdev_digest(struct sx_bdev *bd)
{
	u64 off, chunk = 1 << 20, h = 0x9e3779b97f4a7c15ull;
	u8 *buf = malloc(chunk);

	if (!buf)
		abort();
	for (off = 0; off < bd->bd_size; off += chunk) {
		u64 n = bd->bd_size - off < chunk ? bd->bd_size - off : chunk;

		if (bd->bd_ops->read(bd, off, buf, n))
			abort();
		h = (h ^ sx_crc32c(~0u, buf, n) ^ (off << 20)) * 0xff51afd7ed558ccdull;
		h ^= h >> 33;
	}
	free(buf);
	return h;
}

/* Overwrite bytes of a device (read-modify-write of whole sectors). */
void sxt_bdev_poke(struct sx_bdev *bd, u64 off, const void *buf, u32 len)
{
	u64 start = off / bd->bd_sectsize * bd->bd_sectsize;
	u64 end = (off + len + bd->bd_sectsize - 1) / bd->bd_sectsize * bd->bd_sectsize;
	u8 *tmp = malloc(end - start);

	if (!tmp || bd->bd_ops->read(bd, start, tmp, end - start))
		abort();
	memcpy(tmp + (off - start), buf, len);
	if (bd->bd_ops->write(bd, start, tmp, end - start, 0))
		abort();
	free(tmp);
}

/* Read bytes of a device. */
void sxt_bdev_peek(struct sx_bdev *bd, u64 off, void *buf, u32 len)
{
	u64 start = off / bd->bd_sectsize * bd->bd_sectsize;
	u64 end = (off + len + bd->bd_sectsize - 1) / bd->bd_sectsize * bd->bd_sectsize;
	u8 *tmp = malloc(end - start);

	if (!tmp || bd->bd_ops->read(bd, start, tmp, end - start))
		abort();
	memcpy(buf, tmp + (off - start), len);
	free(tmp);
}

/* Mount or abort the test. */
struct sx_mount *sxt_mount(struct sx_bdev *bd)
{
	struct sx_mount *mp;
	int error = sx_mount(bd, NULL, &mp);

	if (error) {
		fprintf(stderr, "mount: %s\n", sx_strerror(error));
		abort();
	}
	return mp;
}

/* Validate a logged test intent. */
static int sxt_intent_validate(const struct sx_item_ops *ops, struct sx_mount *mp,
			       const void *payload, u32 len)
{
	const struct sxt_dtest_intent *ti = payload;

	if (sxt_fail_validate || len != sizeof(*ti) ||
	    le32_to_cpu(ti->ti_hdr.li_nitems) != 1 ||
	    le64_to_cpu(ti->ti_blkno) < mp->m_sb.sb_datastart ||
	    le64_to_cpu(ti->ti_blkno) >= mp->m_sb.sb_dblocks)
		return -EFSCORRUPTED;
	return 0;
}

/* Finish a test intent found unfinished by recovery. */
static int sxt_intent_recover(const struct sx_item_ops *ops, struct sx_mount *mp,
			      const struct sx_recovered_intent *ri)
{
	const struct sxt_dtest_intent *ti = ri->ri_payload;
	struct sx_trans *tp;
	int error;

	if (sxt_nrecovered < 64)
		sxt_recovered_ids[sxt_nrecovered++] = ri->ri_id;
	error = sx_trans_alloc(mp, sx_trans_buf_bytes(mp) + sx_trans_op_bytes(sizeof(*ti)),
			       0, &tp);
	if (error)
		return error;
	error = sxt_finish_test_intent(tp, ri->ri_id, le64_to_cpu(ti->ti_blkno),
				       le64_to_cpu(ti->ti_gen));
	if (error) {
		sx_trans_cancel(tp);
		return error;
	}
	return sx_trans_commit(tp);
}

static const struct sx_item_ops sxt_intent_ops = {
	.io_type = SX_LOG_OP_TEST_INTENT,
	.io_done_type = SX_LOG_OP_TEST_DONE,
	.io_name = "TEST_INTENT",
	.io_validate = sxt_intent_validate,
	.io_recover = sxt_intent_recover,
};

static const struct sx_item_ops sxt_done_ops = {
	.io_type = SX_LOG_OP_TEST_DONE,
	.io_name = "TEST_DONE",
};

/* Register the test intent and done types once. */
void sxt_register_test_intent(void)
{
	if (!sx_item_lookup(SX_LOG_OP_TEST_INTENT))
		VERIFY(sx_item_register(&sxt_intent_ops) == 0);
	if (!sx_item_lookup(SX_LOG_OP_TEST_DONE))
		VERIFY(sx_item_register(&sxt_done_ops) == 0);
}

/* Log an intent to set @blkno to @gen. */
int sxt_log_test_intent(struct sx_trans *tp, u64 blkno, u64 gen, u64 *id)
{
	struct sxt_dtest_intent ti = { 0 };

	*id = sx_log_next_intent_id(tp->t_mp);
	ti.ti_hdr.li_id = cpu_to_le64(*id);
	ti.ti_hdr.li_nitems = cpu_to_le32(1);
	ti.ti_blkno = cpu_to_le64(blkno);
	ti.ti_gen = cpu_to_le64(gen);
	return sx_trans_log_item(tp, SX_LOG_OP_TEST_INTENT, &ti, sizeof(ti));
}

/* Do the intent's work and log its done item in the same transaction. */
int sxt_finish_test_intent(struct sx_trans *tp, u64 id, u64 blkno, u64 gen)
{
	struct sx_dlog_intent done = { 0 };
	int error;

	error = sxt_tblock_write(tp, blkno, gen);
	if (error)
		return error;
	done.li_id = cpu_to_le64(id);
	done.li_nitems = cpu_to_le32(1);
	return sx_trans_log_item(tp, SX_LOG_OP_TEST_DONE, &done, sizeof(done));
}

/* The seeds of a randomized test (see sxtest.h). */
u32 sxt_seeds(const char *prog, const u64 *fixed, u32 n, const u64 **seeds)
{
	static u64 given;
	const char *s = getenv("SX_TEST_SEED");
	u32 i;

	if (s && *s) {
		given = strtoull(s, NULL, 0);
		*seeds = &given;
		n = 1;
		printf("%s: seed %llu (SX_TEST_SEED)\n", prog, (unsigned long long)given);
	} else {
		*seeds = fixed;
		printf("%s: fixed seeds", prog);
		for (i = 0; i < n; i++)
			printf(" %llu", (unsigned long long)fixed[i]);
		printf(" (SX_TEST_SEED=N runs N instead)\n");
	}
	fflush(stdout);
	return n;
}

/* Drop engine messages below ERR. */
static void sxt_log_cb(void *arg, enum sx_log_level level, const char *msg)
{
	if (level <= SX_LOG_ERR && getenv("SX_TEST_VERBOSE"))
		fprintf(stderr, "%s\n", msg);
}

/* Silence engine messages (SX_TEST_VERBOSE=1 shows errors). */
void sxt_quiet(void)
{
	sx_set_log_callback(sxt_log_cb, NULL);
}
