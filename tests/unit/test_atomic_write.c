// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Atomic writes (sx_atomic_write(), sx_atomic_writev()) on the store.
 *
 * Every file is modelled byte for byte in memory; after each write the
 * file's size and every byte must equal the model, the other files must be
 * untouched, the free-block count must show exactly the blocks the write
 * added (the twins and the replaced blocks freed), and the checker, which
 * walks every block and inode, must be clean at teardown.  Cases: unaligned
 * and odd sizes, one byte, many blocks, holes, shared (cloned) blocks,
 * unwritten blocks, writes past EOF and into an empty file, several ranges
 * of several files (sharing a block, one file through two descriptors),
 * every error; and every allocation and every device read and write of a
 * write and of a vectored write failing in turn: the call fails with the
 * injected error or succeeds, the remounted files are all old or all new
 * (all new when it succeeded), the checker is clean and nothing stays
 * allocated.  Every case runs five times: small writes of unshared files
 * straight into new blocks (one transaction; up to 16 KiB the blocks go in
 * the log record, over written blocks the files' own blocks, left where
 * they are), the same always into new blocks (SX_ATOMIC_REMAP), the same
 * with the blocks written in place before the
 * record (SX_ATOMIC_INPLACE), through twins remapped in one plain
 * transaction (SX_ATOMIC_TWIN), and everything through the swap intents
 * (SX_ATOMIC_CHAIN).  The direct write is one transaction, and
 * gives way to the twins for shared files and fragmented free space.
 * Fixed seeds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include "sxswap.h"
#include "sxcrash.h"
#include "dev.h"
#include "log.h"

#define MIB	(1ull << 20)
#define BS	1024u
#define IMG	(8 * MIB)
#define MAXSZ	(512 * 1024u)	/* bytes a model holds */
#define NF	3

/* A file and its model. */
struct mf {
	const char	*name;
	int		fd;
	u64		size;
	u8		*b;
};

static struct sx_bdev *bd;
static struct sx_mount *mp;
static struct mf F[NF] = { { "a" }, { "b" }, { "c" } };
static u64 seed = 0x5eed0017;
/* Flags of every atomic write of a test: 0 or SX_ATOMIC_CHAIN (the intent path). */
static u32 xflags;

static u8 rnd8(void)
{
	return (u8)(sxt_rand(&seed) >> 24);
}

/* Fill @buf with @len bytes of a fixed pseudo-random sequence. */
static void rfill(u8 *buf, u64 len)
{
	u64 i;

	for (i = 0; i < len; i++)
		buf[i] = rnd8() | 1;	/* never 0: a zero means a hole's bytes */
}

/* sx_pwrite() of @len bytes at @off, model too. */
static void pw(struct mf *f, u64 off, u64 len)
{
	u8 *buf = malloc(len);

	assert_non_null(buf);
	rfill(buf, len);
	assert_int_equal(sx_pwrite(mp, f->fd, buf, len, off), (s64)len);
	memcpy(f->b + off, buf, len);
	if (off + len > f->size)
		f->size = off + len;
	free(buf);
}

/* Apply a write of @buf to the model of @f. */
static void model_write(struct mf *f, const u8 *buf, u64 len, u64 off)
{
	memcpy(f->b + off, buf, len);
	if (off + len > f->size)
		f->size = off + len;
}

/* The file @fd equals the model @f, size and bytes. */
static void verify_fd(const struct mf *f, int fd)
{
	struct sx_stat st;
	u8 *buf = malloc(f->size + 1);

	assert_non_null(buf);
	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	if (st.st_size != f->size)
		fail_msg("%s: size %llu, model %llu", f->name, (unsigned long long)st.st_size,
			 (unsigned long long)f->size);
	assert_int_equal(sx_pread(mp, fd, buf, f->size, 0), (s64)f->size);
	if (memcmp(buf, f->b, f->size)) {
		u64 i;

		for (i = 0; buf[i] == f->b[i]; i++)
			;
		fail_msg("%s: byte %llu is %u, model %u", f->name, (unsigned long long)i,
			 buf[i], f->b[i]);
	}
	free(buf);
}

static void verify_all(void)
{
	int i;

	for (i = 0; i < NF; i++)
		verify_fd(&F[i], F[i].fd);
}

static u64 free_blocks(void)
{
	struct sx_info in;

	assert_int_equal(sx_get_info(mp, &in), 0);
	return in.in_free_blocks;
}

/* sx_atomic_write() of @len random bytes at @off, model too. */
static int aw(struct mf *f, u64 off, u64 len, u32 flags)
{
	u8 *buf = malloc(len + 1);
	int error;

	assert_non_null(buf);
	rfill(buf, len);
	error = sx_atomic_write(mp, f->fd, buf, len, off, flags | xflags);
	if (!error)
		model_write(f, buf, len, off);
	free(buf);
	return error;
}

static int setup_fs(bool atomic)
{
	int i;

	bd = sxs_mkimg(IMG, BS, 1024, atomic);
	mp = sxt_mount(bd);
	for (i = 0; i < NF; i++) {
		F[i].b = calloc(1, MAXSZ);
		F[i].size = 0;
		assert_non_null(F[i].b);
		assert_int_equal(sx_create(mp, F[i].name, 0644, &F[i].fd), 0);
	}
	/* a: 64 blocks and a tail, with holes; b: 20 blocks; c: empty */
	pw(&F[0], 0, 10 * BS);
	pw(&F[0], 12 * BS, 40 * BS);
	pw(&F[0], 56 * BS, 8 * BS + 300);
	pw(&F[1], 0, 20 * BS);
	assert_int_equal(sx_sync(mp), 0);
	return 0;
}

static int setup(void **state)
{
	xflags = 0;
	return setup_fs(true);
}

/* The same, every write through the twins (SX_ATOMIC_TWIN). */
static int setup_twin(void **state)
{
	xflags = SX_ATOMIC_TWIN;
	return setup_fs(true);
}

/* The same, small direct writes' blocks in place before the record (SX_ATOMIC_INPLACE). */
static int setup_inplace(void **state)
{
	xflags = SX_ATOMIC_INPLACE;
	return setup_fs(true);
}

/* The same, small writes over written blocks into new blocks too (SX_ATOMIC_REMAP). */
static int setup_remap(void **state)
{
	xflags = SX_ATOMIC_REMAP;
	return setup_fs(true);
}

/* The same, every write through the swap intents (SX_ATOMIC_CHAIN). */
static int setup_chain(void **state)
{
	xflags = SX_ATOMIC_CHAIN;
	return setup_fs(true);
}

static int setup_noatomic(void **state)
{
	return setup_fs(false);
}

static int teardown(void **state)
{
	int i;

	if (mp) {
		verify_all();
		assert_int_equal(sx_unmount(mp), 0);
		mp = NULL;
	}
	assert_int_equal(sxc_check_clean(bd, 0, __func__), 0);
	for (i = 0; i < NF; i++)
		free(F[i].b);
	sx_bdev_destroy(bd);
	return 0;
}

/* Remount and reopen every file: what the device holds. */
static void remount(void)
{
	int i;

	assert_int_equal(sx_unmount(mp), 0);
	mp = sxt_mount(bd);
	for (i = 0; i < NF; i++)
		assert_int_equal(sx_open(mp, F[i].name, &F[i].fd), 0);
}

/* ------------------------------------------------------------ contents */

/* Overwrites of written blocks: no block more or less once done. */
static void test_overwrite(void **state)
{
	static const u64 cases[][2] = {
		{ 0, 1 }, { 0, BS }, { 5, 7 }, { 1000, 100 }, { 3 * BS, 4 * BS },
		{ 3 * BS + 17, 5 * BS + 901 }, { 20 * BS - 1, 2 }, { 0, 10 * BS },
		{ 14 * BS + 512, 30 * BS + 3 },
	};
	u64 fr = free_blocks();
	u32 i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(aw(&F[0], cases[i][0], cases[i][1], 0), 0);
		verify_all();
		assert_int_equal(free_blocks(), fr);
	}
	remount();
	verify_all();
}

/* Writes over holes map new blocks; the EOF block's tail; unaligned ends in holes. */
static void test_holes(void **state)
{
	u64 fr = free_blocks();

	/* a hole at blocks 10-11: fill it exactly */
	assert_int_equal(aw(&F[0], 10 * BS, 2 * BS, 0), 0);
	assert_int_equal(free_blocks(), fr - 2);
	/* blocks 52-55 are a hole: a write from the middle of 51 to the middle of 53 */
	assert_int_equal(aw(&F[0], 51 * BS + 100, 2 * BS, 0), 0);
	assert_int_equal(free_blocks(), fr - 4);
	verify_all();
	remount();
	verify_all();
}

/* A file that shares its blocks: the other file keeps the old bytes. */
static void test_shared(void **state)
{
	struct mf *a = &F[0], *c = &F[2];
	u64 fr;

	assert_int_equal(sx_clone(mp, c->fd, a->fd), 0);
	memcpy(c->b, a->b, a->size);
	c->size = a->size;
	fr = free_blocks();
	assert_int_equal(aw(a, 2 * BS + 5, 3 * BS, 0), 0);
	/* four new blocks in a; c keeps the shared ones */
	assert_int_equal(free_blocks(), fr - 4);
	verify_all();
	assert_int_equal(aw(c, 0, 1, 0), 0);
	/* growing from a shared EOF block: c keeps its tail */
	assert_int_equal(aw(a, a->size - 10, 2 * BS, 0), 0);
	verify_all();
	remount();
	verify_all();
}

/* Unwritten blocks read as zeroes around a partial write into them. */
static void test_unwritten(void **state)
{
	struct mf *c = &F[2];
	u64 fr;

	assert_int_equal(sx_fallocate(mp, c->fd, 0, 16 * BS), 0);
	c->size = 16 * BS;
	fr = free_blocks();
	assert_int_equal(aw(c, 3 * BS + 200, 2 * BS + 1, 0), 0);
	assert_int_equal(free_blocks(), fr);
	verify_all();
	remount();
	verify_all();
}

/* Writes past EOF: the size and the data together; the gap reads zeroes. */
static void test_extend(void **state)
{
	struct mf *a = &F[0], *b = &F[1], *c = &F[2];

	/* c is empty: a write in the middle of nowhere */
	assert_int_equal(aw(c, 5 * BS + 3, 10, 0), 0);
	assert_int_equal(c->size, 5 * BS + 13);
	/* from inside a's EOF block to past it */
	assert_int_equal(aw(a, a->size - 100, 3 * BS, 0), 0);
	/* far past b's EOF (b's EOF is block aligned) */
	assert_int_equal(aw(b, 100 * BS + 1, 2 * BS, 0), 0);
	/* right at c's EOF, unaligned */
	assert_int_equal(aw(c, c->size, 7, 0), 0);
	verify_all();
	remount();
	verify_all();
}

/* A write whose EOF block held old bytes past EOF: they do not show. */
static void test_extend_stale_tail(void **state)
{
	struct mf *b = &F[1];
	u8 junk[BS];

	memset(junk, 0x5a, sizeof(junk));
	/* b's last block full of junk, then the size cut inside it */
	assert_int_equal(sx_pwrite(mp, b->fd, junk, BS, 19 * BS), BS);
	assert_int_equal(sx_truncate(mp, b->fd, 19 * BS + 10), 0);
	memcpy(b->b + 19 * BS, junk, 10);
	memset(b->b + 19 * BS + 10, 0, BS - 10);
	b->size = 19 * BS + 10;
	assert_int_equal(aw(b, 21 * BS + 50, 30, 0), 0);
	verify_all();
	remount();
	verify_all();
}

/* Many blocks at once, and the NOSYNC flag. */
static void test_large(void **state)
{
	struct mf *c = &F[2];
	u64 fr = free_blocks();

	assert_int_equal(aw(c, 77, 300 * BS + 5, 0), 0);
	assert_int_equal(free_blocks(), fr - 301);
	assert_int_equal(aw(c, 1000, 200 * BS, SX_ATOMIC_NOSYNC), 0);
	assert_int_equal(free_blocks(), fr - 301);
	verify_all();
	assert_int_equal(sx_sync(mp), 0);
	remount();
	verify_all();
}

/* ------------------------------------------------------------ vectored */

/* Three files, ranges sharing a block, one file through two descriptors, growth. */
static void test_writev(void **state)
{
	static const struct { int f; u64 off, len; } r[] = {
		{ 0, 100, 200 },		/* a: two ranges in block 0 */
		{ 0, 300, 50 },
		{ 0, 5 * BS, 3 * BS },		/* a: touches the next */
		{ 0, 8 * BS, 1 },
		{ 0, 30 * BS + 9, 700 },
		{ 1, 19 * BS + 1000, 2 * BS },	/* b: grows */
		{ 1, 40 * BS, 10 },		/* b: past the growth */
		{ 2, 0, 3 },			/* c: from empty */
		{ 0, 70 * BS, 4 },		/* a: grows */
	};
	struct sx_atomic_iov v[ARRAY_SIZE(r) + 1];
	u8 *bufs[ARRAY_SIZE(r)];
	int fd2;
	u32 i;

	assert_int_equal(sx_open(mp, "a", &fd2), 0);
	memset(v, 0, sizeof(v));
	for (i = 0; i < ARRAY_SIZE(r); i++) {
		bufs[i] = malloc(r[i].len);
		assert_non_null(bufs[i]);
		rfill(bufs[i], r[i].len);
		v[i].ai_fd = (i == 3) ? fd2 : F[r[i].f].fd;
		v[i].ai_buf = bufs[i];
		v[i].ai_len = r[i].len;
		v[i].ai_off = r[i].off;
	}
	/* and an empty range of b */
	v[i].ai_fd = F[1].fd;
	assert_int_equal(sx_atomic_writev(mp, v, ARRAY_SIZE(r) + 1, xflags), 0);
	for (i = 0; i < ARRAY_SIZE(r); i++) {
		model_write(&F[r[i].f], bufs[i], r[i].len, r[i].off);
		free(bufs[i]);
	}
	assert_int_equal(sx_close(mp, fd2), 0);
	verify_all();
	remount();
	verify_all();
}

/* The most ranges, each of its own block, and nothing for n = 0. */
static void test_writev_max(void **state)
{
	struct sx_atomic_iov v[SX_ATOMIC_IOV_MAX];
	static u8 buf[SX_ATOMIC_IOV_MAX][16];
	u32 i;

	memset(v, 0, sizeof(v));
	for (i = 0; i < SX_ATOMIC_IOV_MAX; i++) {
		rfill(buf[i], sizeof(buf[i]));
		v[i].ai_fd = F[i % NF].fd;
		v[i].ai_buf = buf[i];
		v[i].ai_len = sizeof(buf[i]);
		v[i].ai_off = (u64)(i / NF) * 2 * BS + i;
	}
	assert_int_equal(sx_atomic_writev(mp, v, 0, 0), 0);
	assert_int_equal(sx_atomic_writev(mp, NULL, 0, 0), 0);
	assert_int_equal(sx_atomic_writev(mp, v, SX_ATOMIC_IOV_MAX, xflags), 0);
	for (i = 0; i < SX_ATOMIC_IOV_MAX; i++)
		model_write(&F[i % NF], buf[i], sizeof(buf[i]), v[i].ai_off);
	verify_all();
	remount();
	verify_all();
}

/*
 * On the smallest log mkfs makes, 64 ranges each in a run of its own
 * either fit in one record or are refused with -E2BIG, nothing changed.
 */
static void test_writev_small_log(void **state)
{
	struct sx_atomic_iov v[SX_ATOMIC_IOV_MAX];
	static u8 buf[16];
	struct sx_bdev *sbd;
	struct sx_mount *smp;
	u32 i, logmin, res;
	int fd, error;

	assert_int_equal(sx_memdev_create(IMG, BS, &sbd), 0);
	assert_int_equal(sx_mkfs_log_min(sbd, NULL, &logmin, &res), 0);
	sx_bdev_destroy(sbd);
	sbd = sxs_mkimg(IMG, BS, logmin, true);
	smp = sxt_mount(sbd);
	assert_int_equal(sx_create(smp, "f", 0644, &fd), 0);
	memset(v, 0, sizeof(v));
	memset(buf, 7, sizeof(buf));
	for (i = 0; i < SX_ATOMIC_IOV_MAX; i++) {
		v[i].ai_fd = fd;
		v[i].ai_buf = buf;
		v[i].ai_len = sizeof(buf);
		v[i].ai_off = (u64)i * 2 * BS;
	}
	error = sx_atomic_writev(smp, v, SX_ATOMIC_IOV_MAX, 0);
	assert_true(error == 0 || error == -E2BIG);
	printf("64 ranges on a %u-block log: %s\n", logmin, error ? "E2BIG" : "fit");
	assert_int_equal(sx_atomic_writev(smp, v, 4, 0), 0);
	assert_int_equal(sx_close(smp, fd), 0);
	assert_int_equal(sx_unmount(smp), 0);
	assert_int_equal(sxc_check_clean(sbd, 0, __func__), 0);
	sx_bdev_destroy(sbd);
}

/* One of two threads writing both a and b, in opposite orders. */
struct cw {
	int		id;
	int		fd[2];
	u8		buf[2][300];
	int		error;
};

#define CW_ROUNDS	60

static void *cw_main(void *arg)
{
	struct cw *w = arg;
	struct sx_atomic_iov v[2];
	int r, i;

	sx_thread_enter();
	memset(v, 0, sizeof(v));
	for (r = 0; r < CW_ROUNDS && !w->error; r++) {
		for (i = 0; i < 2; i++) {
			/* thread 0 lists a then b, thread 1 b then a */
			int f = w->id ? 1 - i : i;

			memset(w->buf[f], (u8)(w->id * 100 + r + 1), sizeof(w->buf[f]));
			v[i].ai_fd = w->fd[f];
			v[i].ai_buf = w->buf[f];
			v[i].ai_len = sizeof(w->buf[f]);
			v[i].ai_off = (u64)w->id * 2 * BS + 500 + (u64)f * 3 * BS;
		}
		w->error = sx_atomic_writev(mp, v, 2, xflags | (r % 2 ? SX_ATOMIC_NOSYNC : 0));
	}
	sx_thread_exit();
	return NULL;
}

/*
 * Two threads, each writing both files in one call and naming them in
 * opposite orders: no deadlock, and each range ends with its thread's
 * last bytes.
 */
static void test_concurrent(void **state)
{
	struct cw w[2];
	pthread_t th[2];
	int t, f;

	memset(w, 0, sizeof(w));
	for (t = 0; t < 2; t++) {
		w[t].id = t;
		w[t].fd[0] = F[0].fd;
		w[t].fd[1] = F[1].fd;
		assert_int_equal(pthread_create(&th[t], NULL, cw_main, &w[t]), 0);
	}
	for (t = 0; t < 2; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		assert_int_equal(w[t].error, 0);
	}
	for (t = 0; t < 2; t++)
		for (f = 0; f < 2; f++)
			model_write(&F[f], w[t].buf[f], sizeof(w[t].buf[f]),
				    (u64)t * 2 * BS + 500 + (u64)f * 3 * BS);
	verify_all();
	remount();
	verify_all();
}

/* ------------------------------------------------------------ the direct write */

/* Transactions committed so far. */
static u64 trans_count(void)
{
	struct sx_log_stats ls;

	sx_log_get_stats(mp, &ls);
	return ls.ls_trans;
}

/*
 * Small writes of unshared files are one transaction each, whatever their
 * alignment, over holes, past EOF or over several files; the twins take
 * more (SX_ATOMIC_TWIN), and so does a file that shares blocks.
 */
static void test_direct_one_trans(void **state)
{
	static const u64 cases[][3] = {	/* file, offset, length */
		{ 0, 0, BS }, { 0, 3 * BS + 17, 5 * BS + 901 }, { 0, 10 * BS, 2 * BS },
		{ 1, 19 * BS + 1000, 3 * BS }, { 2, 7, 1 },
	};
	struct sx_atomic_iov v[3];
	u8 buf[3][100];
	u64 t0;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		t0 = trans_count();
		assert_int_equal(aw(&F[cases[i][0]], cases[i][1], cases[i][2], 0), 0);
		assert_int_equal(trans_count() - t0, 1);
		verify_all();
	}
	memset(v, 0, sizeof(v));
	for (i = 0; i < 3; i++) {
		rfill(buf[i], sizeof(buf[i]));
		v[i].ai_fd = F[i].fd;
		v[i].ai_buf = buf[i];
		v[i].ai_len = sizeof(buf[i]);
		v[i].ai_off = 2 * BS - 50 + i;
	}
	/*
	 * Growing c zeroes the tail of its old last block, which the write
	 * above left in the log: an overwrite through the log of its own
	 * (test_log_data.c).  Home first, so that only the write is counted.
	 */
	assert_int_equal(sx_checkpoint(mp), 0);
	t0 = trans_count();
	assert_int_equal(sx_atomic_writev(mp, v, 3, 0), 0);
	assert_int_equal(trans_count() - t0, 1);
	for (i = 0; i < 3; i++)
		model_write(&F[i], buf[i], sizeof(buf[i]), v[i].ai_off);
	t0 = trans_count();
	assert_int_equal(aw(&F[0], 5 * BS, BS, SX_ATOMIC_TWIN), 0);
	assert_true(trans_count() - t0 > 1);
	assert_int_equal(sx_clone(mp, F[2].fd, F[1].fd), 0);
	memcpy(F[2].b, F[1].b, F[1].size);
	F[2].size = F[1].size;
	t0 = trans_count();
	assert_int_equal(aw(&F[1], 5 * BS, BS, 0), 0);
	assert_true(trans_count() - t0 > 1);
	verify_all();
	remount();
	verify_all();
}

/*
 * Free space in single blocks: a write needing more extents than its
 * transaction holds gives way to the twins, with nothing left of its
 * allocations; one that fits stays one transaction.  The checker
 * (teardown) sees every block accounted for.
 */
static void test_direct_fragmented(void **state)
{
	struct mf *c = &F[2];
	u64 fr, t0, i, n;
	int fd;

	/* a file over nearly all free space, then every other block punched */
	fr = free_blocks();
	n = (fr - 8) & ~1ull;
	assert_int_equal(sx_create(mp, "filler", 0644, &fd), 0);
	assert_int_equal(sx_fallocate(mp, fd, 0, n * BS), 0);
	for (i = 0; i < n; i += 2)
		assert_int_equal(sx_punch(mp, fd, i * BS, BS), 0);
	assert_int_equal(sx_sync(mp), 0);
	fr = free_blocks();

	/* 4 blocks in 4 pieces: within what one transaction holds */
	t0 = trans_count();
	assert_int_equal(aw(c, 0, 4 * BS, 0), 0);
	assert_int_equal(trans_count() - t0, 1);
	assert_int_equal(free_blocks(), fr - 4);
	/* 20 blocks in 20 pieces: the twins */
	t0 = trans_count();
	assert_int_equal(aw(c, 4 * BS + 3, 20 * BS - 6, 0), 0);
	assert_true(trans_count() - t0 > 1);
	assert_int_equal(free_blocks(), fr - 24);
	verify_all();
	assert_int_equal(sx_close(mp, fd), 0);
	remount();
	verify_all();
}

/*
 * More than 1 MiB of blocks is more than the direct write assembles in
 * memory: the twins take it, and the file reads back whole; 1 MiB is
 * still one transaction.
 */
static void test_direct_size_limit(void **state)
{
	u64 len = MIB + BS, t0, i;
	u8 *buf = malloc(len), *rbuf = malloc(len);
	int fd;

	assert_non_null(buf);
	assert_non_null(rbuf);
	assert_int_equal(sx_create(mp, "big", 0644, &fd), 0);
	for (i = 0; i < len; i++)
		buf[i] = (u8)(i * 7 + i / BS + 1);
	t0 = trans_count();
	assert_int_equal(sx_atomic_write(mp, fd, buf, MIB, 0, 0), 0);
	assert_int_equal(trans_count() - t0, 1);
	for (i = 0; i < len; i++)
		buf[i] = (u8)(i * 13 + i / BS + 2);
	t0 = trans_count();
	assert_int_equal(sx_atomic_write(mp, fd, buf, len, 0, 0), 0);
	assert_true(trans_count() - t0 > 1);
	assert_int_equal(sx_pread(mp, fd, rbuf, len, 0), (s64)len);
	assert_memory_equal(rbuf, buf, len);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unlink(mp, "big"), 0);
	free(buf);
	free(rbuf);
}

/* ------------------------------------------------------------ errors */

/* Every refusal leaves every file and the free space as they were. */
static void test_errors(void **state)
{
	struct sx_atomic_iov v[SX_ATOMIC_IOV_MAX + 1];
	u8 buf[64] = { 1 };
	u64 fr = free_blocks();
	int fd;

	memset(v, 0, sizeof(v));
	assert_int_equal(sx_atomic_write(NULL, F[0].fd, buf, 1, 0, 0), -EINVAL);
	assert_int_equal(sx_atomic_write(mp, -1, buf, 1, 0, 0), -EBADF);
	assert_int_equal(sx_atomic_write(mp, 999, buf, 1, 0, 0), -EBADF);
	assert_int_equal(sx_atomic_write(mp, 999, buf, 0, 0, 0), -EBADF);
	assert_int_equal(sx_atomic_write(mp, F[0].fd, NULL, 1, 0, 0), -EINVAL);
	assert_int_equal(sx_atomic_write(mp, F[0].fd, buf, 1, 0, 0x80), -EINVAL);
	assert_int_equal(sx_atomic_write(mp, F[0].fd, buf, 1, 0, ~SX_ATOMIC_ALL_FLAGS), -EINVAL);
	assert_int_equal(sx_atomic_write(mp, F[0].fd, buf, 2, ~0ull, 0), -EINVAL);
	assert_int_equal(sx_atomic_write(mp, F[0].fd, buf, 1, SX_MAX_FILE_SIZE, 0), -EFBIG);
	assert_int_equal(sx_atomic_write(mp, F[0].fd, buf, 2, SX_MAX_FILE_SIZE - 1, 0), -EFBIG);
	/* len 0: nothing written, nothing synced, the descriptor checked */
	assert_int_equal(sx_atomic_write(mp, F[0].fd, NULL, 0, SX_MAX_FILE_SIZE + 5, 0), 0);
	assert_int_equal(sx_atomic_writev(mp, NULL, 1, 0), -EINVAL);
	assert_int_equal(sx_atomic_writev(mp, v, SX_ATOMIC_IOV_MAX + 1, 0), -EINVAL);
	/* overlapping ranges of one file, also through two descriptors */
	assert_int_equal(sx_open(mp, "a", &fd), 0);
	v[0].ai_fd = F[0].fd;
	v[0].ai_buf = buf;
	v[0].ai_len = 10;
	v[0].ai_off = 100;
	v[1] = v[0];
	v[1].ai_fd = fd;
	v[1].ai_off = 109;
	assert_int_equal(sx_atomic_writev(mp, v, 2, 0), -EINVAL);
	v[1].ai_off = 110;
	v[2] = v[0];
	v[2].ai_fd = 777;
	assert_int_equal(sx_atomic_writev(mp, v, 3, 0), -EBADF);
	assert_int_equal(sx_close(mp, fd), 0);
	/* flags of the file: the swap's errnos */
	assert_int_equal(sx_setflags(mp, F[1].fd, SX_DIFLAG_IMMUTABLE), 0);
	assert_int_equal(sx_atomic_write(mp, F[1].fd, buf, 1, 0, 0), -EPERM);
	v[1].ai_fd = F[1].fd;
	assert_int_equal(sx_atomic_writev(mp, v, 2, 0), -EPERM);
	assert_int_equal(sx_setflags(mp, F[1].fd, SX_DIFLAG_APPEND), 0);
	assert_int_equal(sx_atomic_write(mp, F[1].fd, buf, 1, F[1].size, 0), -EPERM);
	assert_int_equal(sx_setflags(mp, F[1].fd, SX_DIFLAG_SWAPFILE), 0);
	assert_int_equal(sx_atomic_write(mp, F[1].fd, buf, 1, 0, 0), -ETXTBSY);
	assert_int_equal(sx_setflags(mp, F[1].fd, 0), 0);
	assert_int_equal(free_blocks(), fr);
	verify_all();

	/* a read-only mount */
	remount();
	{
		struct sx_mount_opts o = { .mo_flags = SX_MOUNT_RDONLY };
		struct sx_mount *rmp;
		int rfd;

		assert_int_equal(sx_unmount(mp), 0);
		assert_int_equal(sx_mount(bd, &o, &rmp), 0);
		assert_int_equal(sx_open(rmp, "a", &rfd), 0);
		assert_int_equal(sx_atomic_write(rmp, rfd, buf, 1, 0, 0), -EROFS);
		assert_int_equal(sx_unmount(rmp), 0);
		mp = sxt_mount(bd);
		assert_int_equal(sx_open(mp, "a", &F[0].fd), 0);
		assert_int_equal(sx_open(mp, "b", &F[1].fd), 0);
		assert_int_equal(sx_open(mp, "c", &F[2].fd), 0);
	}
	/* a mount that has shut down */
	sx_shutdown(mp);
	assert_int_equal(sx_atomic_write(mp, F[0].fd, buf, 1, 0, 0), -EIO);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &F[0].fd), 0);
	assert_int_equal(sx_open(mp, "b", &F[1].fd), 0);
	assert_int_equal(sx_open(mp, "c", &F[2].fd), 0);
}

/* Without the atomic_swap feature: refused, nothing changed. */
static void test_noatomic(void **state)
{
	u8 buf[8] = { 1 };
	u64 fr = free_blocks();

	assert_int_equal(sx_atomic_write(mp, F[0].fd, buf, 8, 3, 0), -EOPNOTSUPP);
	assert_int_equal(free_blocks(), fr);
}

/* ------------------------------------------------------------ faults */

/* A digest of the three files: sizes and bytes. */
static u64 digest(void)
{
	u64 h = 0xcbf29ce484222325ull;
	u8 *buf = malloc(MAXSZ);
	int i, fd;

	assert_non_null(buf);
	for (i = 0; i < NF; i++) {
		struct sx_stat st;
		u64 k;

		assert_int_equal(sx_open(mp, F[i].name, &fd), 0);
		assert_int_equal(sx_fstat(mp, fd, &st), 0);
		assert_true(st.st_size <= MAXSZ);
		assert_int_equal(sx_pread(mp, fd, buf, st.st_size, 0), (s64)st.st_size);
		h = (h ^ st.st_size) * 0x100000001b3ull;
		for (k = 0; k < st.st_size; k++)
			h = (h ^ buf[k]) * 0x100000001b3ull;
		assert_int_equal(sx_close(mp, fd), 0);
	}
	free(buf);
	return h;
}

static u8 fbuf[4][3 * BS];

/* One write over a hole and written blocks, growing the file; or a vectored one. */
static int fault_step(bool vec)
{
	struct sx_atomic_iov v[4];
	int fd[NF], i, error = 0;

	for (i = 0; i < NF && !error; i++)
		error = sx_open(mp, F[i].name, &fd[i]);
	if (error)
		return error;
	memset(v, 0, sizeof(v));
	v[0].ai_fd = fd[0];
	v[0].ai_buf = fbuf[0];
	v[0].ai_len = 2 * BS + 10;
	v[0].ai_off = 63 * BS + 7;	/* a: past EOF */
	v[1].ai_fd = fd[1];
	v[1].ai_buf = fbuf[1];
	v[1].ai_len = 3 * BS;
	v[1].ai_off = 4 * BS + 100;
	v[2].ai_fd = fd[2];
	v[2].ai_buf = fbuf[2];
	v[2].ai_len = 30;
	v[2].ai_off = 9;
	v[3].ai_fd = fd[0];
	v[3].ai_buf = fbuf[3];
	v[3].ai_len = BS;
	v[3].ai_off = 9 * BS + 512;	/* a: over written blocks and a hole */
	if (vec)
		error = sx_atomic_writev(mp, v, 4, xflags);
	else
		error = sx_atomic_write(mp, fd[0], fbuf[3], BS, 9 * BS + 512, xflags);
	for (i = 0; i < NF; i++)
		sx_close(mp, fd[i]);
	return error;
}

enum kind { K_READ, K_WRITE, K_ALLOC };

/* Every fault point of the step; see the top of the file. */
static void fault_loop(bool vec, enum kind k)
{
	struct sx_bdev *base, *img, *cbd;
	struct sx_crashdev_stats cs;
	struct sx_alloc_stats a0, a1, s0, s1;
	struct sx_crashdev *cd;
	u64 before, after, h, n;
	u32 points = 0, fails = 0;
	bool hit = true, shut;
	int error, i;

	for (i = 0; i < 4; i++)
		rfill(fbuf[i], sizeof(fbuf[i]));
	/* the image: setup()'s files, unmounted */
	for (i = 0; i < NF; i++)
		verify_fd(&F[i], F[i].fd);
	assert_int_equal(sx_unmount(mp), 0);
	mp = NULL;
	base = sxt_bdev_copy(bd);
	mp = sxt_mount(base);
	before = digest();
	assert_int_equal(fault_step(vec), 0);
	after = digest();
	assert_int_equal(sx_unmount(mp), 0);
	assert_true(before != after);
	sx_bdev_destroy(base);

	sx_rcu_barrier();
	sx_alloc_get_stats(&s0);
	for (n = 1; hit; n++) {
		assert_true(n < 20000);
		img = sxt_bdev_copy(bd);
		assert_int_equal(sx_crashdev_create(img, n, &cbd, &cd), 0);
		mp = sxt_mount(cbd);
		sx_alloc_get_stats(&a0);
		if (k != K_ALLOC)
			sx_crashdev_fail(cd, k == K_READ ? SX_IO_READ : SX_IO_WRITE, n, true, -EIO);
		else
			sx_alloc_fail(n, false);
		error = fault_step(vec);
		sx_alloc_fail(0, false);
		sx_crashdev_clear_faults(cd);
		sx_crashdev_get_stats(cd, &cs);
		sx_alloc_get_stats(&a1);
		hit = k != K_ALLOC ? cs.cs_injected_errors != 0 : a1.as_failed != a0.as_failed;
		if (error && !hit)
			fail_msg("%s %llu: error %d with no fault", vec ? "writev" : "write",
				 (unsigned long long)n, error);
		if (error && error != (k != K_ALLOC ? -EIO : -ENOMEM))
			fail_msg("%s %llu: error %d", vec ? "writev" : "write",
				 (unsigned long long)n, error);
		shut = sx_is_shutdown(mp);
		if (shut)
			sx_unmount(mp);
		else
			assert_int_equal(sx_unmount(mp), 0);
		mp = sxt_mount(cbd);
		h = digest();
		assert_int_equal(sx_unmount(mp), 0);
		mp = NULL;
		if (!error && h != after)
			fail_msg("%llu: succeeded but the files are not new", (unsigned long long)n);
		if (error && h != before && h != after)
			fail_msg("%llu: failed, the files neither old nor new",
				 (unsigned long long)n);
		sx_bdev_destroy(cbd);
		assert_int_equal(sxc_checker(img, 0, NULL), 0);
		sx_bdev_destroy(img);
		fails += error != 0;
		points++;
	}
	sx_rcu_barrier();
	sx_alloc_get_stats(&s1);
	if (s1.as_live != s0.as_live)
		fail_msg("%lld allocations not freed", (long long)(s1.as_live - s0.as_live));
	assert_true(fails > 0);
	if (getenv("SX_TEST_VERBOSE"))
		printf("  %s %d: %u points, %u failed\n", vec ? "writev" : "write", k, points,
		       fails);
	mp = sxt_mount(bd);
	for (i = 0; i < NF; i++)
		assert_int_equal(sx_open(mp, F[i].name, &F[i].fd), 0);
}

static void test_faults_write_read(void **state)
{
	fault_loop(false, K_READ);
}

static void test_faults_write_write(void **state)
{
	fault_loop(false, K_WRITE);
}

static void test_faults_write_alloc(void **state)
{
	fault_loop(false, K_ALLOC);
}

static void test_faults_writev_read(void **state)
{
	fault_loop(true, K_READ);
}

static void test_faults_writev_write(void **state)
{
	fault_loop(true, K_WRITE);
}

static void test_faults_writev_alloc(void **state)
{
	fault_loop(true, K_ALLOC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_overwrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overwrite, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_overwrite, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_overwrite, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_overwrite, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_holes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_holes, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_holes, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_holes, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_holes, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_shared, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_shared, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_shared, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_unwritten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritten, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_unwritten, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_unwritten, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_unwritten, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_extend, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extend, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_extend, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_extend, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_extend, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_extend_stale_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_extend_stale_tail, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_extend_stale_tail, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_extend_stale_tail, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_extend_stale_tail, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_large, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_large, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_large, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_large, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_writev, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writev, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_writev, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_writev, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_writev, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_writev_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writev_max, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_writev_max, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_writev_max, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_writev_max, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_direct_one_trans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_direct_fragmented, setup, teardown),
		cmocka_unit_test_setup_teardown(test_direct_size_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test(test_writev_small_log),
		cmocka_unit_test_setup_teardown(test_noatomic, setup_noatomic, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_read, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_read, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_read, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_read, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_write, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_write, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_write, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_write, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_alloc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_alloc, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_alloc, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_alloc, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_faults_write_alloc, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_read, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_read, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_read, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_read, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_write, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_write, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_write, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_write, setup_remap, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_alloc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_alloc, setup_chain, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_alloc, setup_twin, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_alloc, setup_inplace, teardown),
		cmocka_unit_test_setup_teardown(test_faults_writev_alloc, setup_remap, teardown),
	};

	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
