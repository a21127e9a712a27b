// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swap_file_range on the store, through the public API on real files:
 * one extent, many extents with holes and unwritten extents, unequal sizes
 * with TO_EOF, shared (cloned) extents, two ranges of one file, forks
 * crossing the inline/B+tree boundary both ways, FILE2_FRESH, persistence;
 * the atomic, non-atomic and full-file paths give the same contents; the
 * SX_BMI_SWAP BUI flag (format and validation); and a mount that refuses
 * an unfinished SXI when the atomic_swap feature is off.  Every block is
 * tagged with where it came from; the checker must be clean after each case
 * (it walks every file: block ownership, counts and refcounts exact).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxswap.h"
#include "sxcrash.h"
#include "inode.h"
#include "file.h"
#include "bmap.h"
#include "fork.h"
#include "defer.h"
#include "reflink.h"
#include "refcount.h"
#include "sb.h"

#define MIB	(1ull << 20)
#define BS	1024u
#define IMG	(64 * MIB)

static struct sx_bdev *bd;
static struct sx_mount *mp;
static struct sxs_file *F[4];

static void open_files(void)
{
	static const char *const names[4] = { "a", "b", "c", "d" };
	int i;

	for (i = 0; i < 4; i++) {
		F[i] = sxs_file_new(SXS_MAXB);
		assert_int_equal(sx_create(mp, names[i], 0644, &F[i]->sf_fd), 0);
	}
}

static int setup_fs(bool atomic)
{
	bd = sxs_mkimg(IMG, BS, 4096, atomic);
	mp = sxt_mount(bd);
	open_files();
	return 0;
}

static int setup(void **state)
{
	return setup_fs(true);
}

static int setup_noatomic(void **state)
{
	return setup_fs(false);
}

static int teardown(void **state)
{
	int i;

	for (i = 0; i < 4; i++)
		sxs_file_free(F[i]);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(bd, 0, __func__), 0);
	sx_bdev_destroy(bd);
	return 0;
}

static void verify(const struct sxs_file *f)
{
	char msg[160];

	if (sxs_verify(mp, BS, f, msg, sizeof(msg))) {
		fprintf(stderr, "fd %d: %s\n", f->sf_fd, msg);
		fail();
	}
}

static void verify_all(void)
{
	int i;

	for (i = 0; i < 4; i++)
		verify(F[i]);
}

static void wr(struct sxs_file *f, u64 blk, u64 tag)
{
	assert_int_equal(sxs_write(mp, BS, f, blk, tag), 0);
}

/* Swap whole blocks through the API and in the model. */
static void swapm(struct sxs_file *f1, u64 b1, struct sxs_file *f2, u64 b2, u64 n, u64 flags)
{
	assert_int_equal(sxs_swap(mp, f1, b1 * BS, f2, b2 * BS, n * BS, flags), 0);
	sxs_model_swap(f1, b1, f2, b2, n);
}

/* Unmount and mount again (and check the image in between). */
static void remount(void)
{
	int i;

	for (i = 0; i < 4; i++)
		assert_int_equal(sx_close(mp, F[i]->sf_fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(bd, 0, __func__), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &F[0]->sf_fd), 0);
	assert_int_equal(sx_open(mp, "b", &F[1]->sf_fd), 0);
	assert_int_equal(sx_open(mp, "c", &F[2]->sf_fd), 0);
	assert_int_equal(sx_open(mp, "d", &F[3]->sf_fd), 0);
}

static u64 nblocks(int fd)
{
	struct sx_stat st;

	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	return st.st_blocks;
}

static u64 nextents(int fd)
{
	struct sx_extent ext[64];
	u32 n = 0;
	u64 off = 0, total = 0;

	for (;;) {
		assert_int_equal(sx_fiemap(mp, fd, off, ~0ull >> 12, ext, 64, &n), 0);
		total += n;
		if (n < 64)
			return total;
		off = ext[63].ex_off + ext[63].ex_len;
	}
}

/* Write @n blocks of @a and @b interleaved, so that no two blocks of one file touch. */
static void fill_interleaved(struct sxs_file *a, struct sxs_file *b, u64 n, u32 ver,
			     u64 holes_every)
{
	u64 i;

	for (i = 0; i < n; i++) {
		if (!holes_every || i % holes_every)
			wr(a, i, sxs_tag(0, i, ver));
		if (!holes_every || (i + 1) % holes_every)
			wr(b, i, sxs_tag(1, i, ver));
	}
	/* the sizes cover @n blocks even when the last one is a hole */
	assert_int_equal(sx_truncate(mp, a->sf_fd, n * BS), 0);
	assert_int_equal(sx_truncate(mp, b->sf_fd, n * BS), 0);
	a->sf_size = b->sf_size = n * BS;
}

/* ---------------------------------------------------------------- tests */

static void test_bmi_swap_format(void **state)
{
	const struct sx_defer_ops *ops = &sx_bmap_defer_ops;
	struct sx_dlog_bmap lb;
	u8 item[128];
	u64 ino = mp->m_rootino;

	assert_int_equal(SX_BMI_SWAP, 4);
	assert_int_equal(SX_BMI_FLAGS_ALL, SX_BMI_MAP | SX_BMI_UNWRITTEN | SX_BMI_SWAP);
	assert_true(ops->do_item_size <= sizeof(item));
	memset(&lb, 0, sizeof(lb));
	lb.bm_ino = cpu_to_le64(ino);
	lb.bm_gen = cpu_to_le64(1);
	lb.bm_startoff = cpu_to_le64(10);
	lb.bm_startblock = cpu_to_le64(mp->m_sb.sb_datastart + 100);
	lb.bm_blockcount = cpu_to_le32(4);
	/* a swap's map and unmap are valid */
	lb.bm_flags = cpu_to_le32(SX_BMI_MAP | SX_BMI_SWAP);
	assert_int_equal(ops->do_decode(mp, &lb, item), 0);
	lb.bm_flags = cpu_to_le32(SX_BMI_MAP | SX_BMI_SWAP | SX_BMI_UNWRITTEN);
	assert_int_equal(ops->do_decode(mp, &lb, item), 0);
	lb.bm_flags = cpu_to_le32(SX_BMI_SWAP);
	assert_int_equal(ops->do_decode(mp, &lb, item), 0);
	/* a swap's unmap must say where its blocks are */
	lb.bm_startblock = 0;
	assert_int_equal(ops->do_decode(mp, &lb, item), -EFSCORRUPTED);
	/* an unknown flag */
	lb.bm_startblock = cpu_to_le64(mp->m_sb.sb_datastart + 100);
	lb.bm_flags = cpu_to_le32(SX_BMI_MAP | 8);
	assert_int_equal(ops->do_decode(mp, &lb, item), -EFSCORRUPTED);
}

static void test_one_extent(void **state)
{
	u64 i, na, nb;

	for (i = 0; i < 8; i++)
		wr(F[0], i, sxs_tag(0, i, 1));
	for (i = 0; i < 8; i++)
		wr(F[1], i, sxs_tag(1, i, 1));
	na = nblocks(F[0]->sf_fd);
	nb = nblocks(F[1]->sf_fd);
	assert_int_equal(nextents(F[0]->sf_fd), 1);
	swapm(F[0], 0, F[1], 0, 8, 0);
	verify_all();
	assert_int_equal(nblocks(F[0]->sf_fd), nb);
	assert_int_equal(nblocks(F[1]->sf_fd), na);
	/* and back: the same blocks where they started */
	swapm(F[0], 0, F[1], 0, 8, 0);
	verify_all();
	/* part of it, unaligned within the extent */
	swapm(F[0], 3, F[1], 1, 4, 0);
	verify_all();
	remount();
	verify_all();
}

static void test_many_extents_holes(void **state)
{
	u64 n = 600;

	fill_interleaved(F[0], F[1], n, 1, 7);
	/* some unwritten extents too */
	assert_int_equal(sx_truncate(mp, F[0]->sf_fd, (n + 40) * BS), 0);
	assert_int_equal(sx_fallocate(mp, F[0]->sf_fd, n * BS, 40 * BS), 0);
	F[0]->sf_size = (n + 40) * BS;
	assert_true(nextents(F[0]->sf_fd) > 400);
	swapm(F[0], 10, F[1], 30, 500, 0);
	verify_all();
	swapm(F[0], 560, F[1], 100, 80, 0);
	verify_all();
	remount();
	verify_all();
}

static void test_to_eof_unequal(void **state)
{
	u64 i, s1, s2;
	struct file_swap_range fsr;

	for (i = 0; i < 50; i++)
		wr(F[0], i, sxs_tag(0, i, 1));
	for (i = 0; i < 20; i++)
		wr(F[1], i, sxs_tag(1, i, 1));
	/* a partial EOF block on the short file */
	assert_int_equal(sx_truncate(mp, F[1]->sf_fd, 19 * BS + 200), 0);
	F[1]->sf_size = 19 * BS + 200;
	s1 = F[0]->sf_size;
	s2 = F[1]->sf_size;
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = F[0]->sf_fd;
	fsr.file1_offset = 5 * BS;
	fsr.file2_offset = 5 * BS;
	fsr.length = 1ll << 40;
	fsr.flags = FILE_SWAP_RANGE_TO_EOF;
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), 0);
	assert_int_equal(fsr.length, s1 - 5 * BS);
	sxs_model_swap(F[0], 5, F[1], 5, 45);
	F[0]->sf_size = 5 * BS + (s2 - 5 * BS);
	F[1]->sf_size = 5 * BS + (s1 - 5 * BS);
	verify_all();
	/* unequal offsets */
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = F[0]->sf_fd;
	fsr.file1_offset = 2 * BS;
	fsr.file2_offset = 30 * BS;
	fsr.flags = FILE_SWAP_RANGE_TO_EOF;
	s1 = F[0]->sf_size;
	s2 = F[1]->sf_size;
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), 0);
	sxs_model_swap(F[0], 2, F[1], 30, sx_howmany((u64)fsr.length, BS));
	F[0]->sf_size = 2 * BS + (s2 - 30 * BS);
	F[1]->sf_size = 30 * BS + (s1 - 2 * BS);
	verify_all();
	remount();
	verify_all();
}

static void test_shared(void **state)
{
	u64 i;
	u32 rc;
	struct sx_extent ext[4];
	u32 n;

	for (i = 0; i < 16; i++)
		wr(F[0], i, sxs_tag(0, i, 1));
	for (i = 0; i < 16; i++)
		wr(F[1], i, sxs_tag(1, i, 1));
	/* c shares all of a */
	assert_int_equal(sx_clone(mp, F[2]->sf_fd, F[0]->sf_fd), 0);
	memcpy(F[2]->sf_tag, F[0]->sf_tag, SXS_MAXB * sizeof(u64));
	F[2]->sf_size = F[0]->sf_size;
	/* swap part of c with b: a keeps its blocks, c's shared ones go to b */
	swapm(F[2], 4, F[1], 0, 8, 0);
	verify_all();
	assert_int_equal(sx_fiemap(mp, F[1]->sf_fd, 0, 8 * BS, ext, 4, &n), 0);
	assert_true(n >= 1 && (ext[0].ex_flags & SX_EXTENT_SHARED));
	assert_int_equal(sx_refcount_get(mp, ext[0].ex_physical / BS, &rc), 0);
	assert_int_equal(rc, 2);
	/* writing b copies on write: a unchanged */
	wr(F[1], 2, sxs_tag(1, 2, 9));
	verify_all();
	/* a swap of a with c where they still share: those blocks stay */
	swapm(F[0], 0, F[2], 0, 16, 0);
	verify_all();
	remount();
	verify_all();
}

static void test_one_file(void **state)
{
	u64 i;

	fill_interleaved(F[0], F[3], 60, 1, 0);
	swapm(F[0], 0, F[0], 20, 10, 0);
	verify_all();
	swapm(F[0], 45, F[0], 5, 15, 0);
	verify_all();
	/* adjacent ranges */
	swapm(F[0], 0, F[0], 30, 30, 0);
	verify_all();
	for (i = 0; i < 60; i++)
		assert_true(F[0]->sf_tag[i] >> 48 == 1);
	remount();
	verify_all();
}

/*
 * TO_EOF within one file: the only valid request has one range at the
 * (aligned) EOF, so the data of the other moves past the old EOF and the
 * file must grow to hold it, whichever of the two ranges is file1's.  The
 * size was once taken from file1's formula alone: with file1 the lower
 * range the file shrank to that range's start and the moved data was lost
 * past EOF.
 */
static void one_file_to_eof(u64 flags)
{
	struct file_swap_range fsr;
	u64 i;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		struct sxs_file *f = F[pass];
		s64 lo = 6 * BS, eof = 20 * BS;

		for (i = 0; i < 20; i++)
			wr(f, i, sxs_tag((u32)pass, i, 1));
		memset(&fsr, 0, sizeof(fsr));
		fsr.file1_fd = f->sf_fd;
		fsr.file1_offset = pass ? eof : lo;
		fsr.file2_offset = pass ? lo : eof;
		fsr.flags = FILE_SWAP_RANGE_TO_EOF | flags;
		assert_int_equal(sx_swap_file_range(mp, f->sf_fd, &fsr), 0);
		assert_int_equal(fsr.length, eof - lo);
		/* blocks 6..19 now at 20..33; 6..19 hold what lay past EOF: holes */
		sxs_model_swap(f, 6, f, 20, 14);
		f->sf_size = (u64)(2 * eof - lo);
		verify_all();
	}
	remount();
	verify_all();
}

static void test_one_file_to_eof(void **state)
{
	one_file_to_eof(0);
}

static void test_one_file_to_eof_nonatomic(void **state)
{
	one_file_to_eof(FILE_SWAP_RANGE_NONATOMIC);
}

/*
 * Leave blocks [@from, @to) of @f mapped past EOF, as a truncate cut short
 * by a crash does (its size change commits before its chain of unmaps):
 * write them, then set the size back in a transaction of its own.
 */
static void leave_past_eof(struct sxs_file *f, u64 from, u64 to, u32 id)
{
	struct sx_inode *ip;
	struct sx_trans *tp;
	u64 i;

	for (i = from; i < to; i++)
		assert_int_equal(sxs_write(mp, BS, f, i, sxs_tag(id, i, 9)), 0);
	assert_int_equal(sx_fd_get(mp, f->sf_fd, &ip), 0);
	assert_int_equal(sx_trans_alloc(mp, sx_inode_res_bytes(mp), 0, &tp), 0);
	sx_ilock(ip, SX_ILOCK_EXCL);
	ip->i_size = from * BS;
	assert_int_equal(sx_inode_log(tp, ip), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	sx_irele(ip);
	/* the model: nothing past EOF */
	f->sf_size = from * BS;
	for (i = from; i < to; i++)
		f->sf_tag[i] = 0;
}

/*
 * Blocks a crash left past EOF must not come inside a file's size: a
 * same-file TO_EOF swap of [4, 8) with the aligned EOF moves the range past
 * EOF (holes, though stale blocks are mapped there) to [4, 8), and a TO_EOF
 * swap between files reaches past the shorter file's EOF.
 */
static void stale_past_eof(u64 flags)
{
	struct file_swap_range fsr;
	u64 i;

	for (i = 0; i < 8; i++) {
		wr(F[0], i, sxs_tag(0, i, 1));
		wr(F[1], i, sxs_tag(1, i, 1));
	}
	leave_past_eof(F[0], 8, 12, 0);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = F[0]->sf_fd;
	fsr.file1_offset = 4 * BS;
	fsr.file2_offset = 8 * BS;
	fsr.flags = FILE_SWAP_RANGE_TO_EOF | flags;
	assert_int_equal(sx_swap_file_range(mp, F[0]->sf_fd, &fsr), 0);
	assert_int_equal(fsr.length, 4 * BS);
	sxs_model_swap(F[0], 4, F[0], 8, 4);
	F[0]->sf_size = 12 * BS;
	verify_all();

	/* b ends at 6 with stale blocks to 10; a's [0, 10) for b's [0, 6) */
	assert_int_equal(sx_truncate(mp, F[1]->sf_fd, 0), 0);
	for (i = 0; i < 8; i++)
		F[1]->sf_tag[i] = 0;
	for (i = 0; i < 6; i++)
		wr(F[1], i, sxs_tag(1, i, 2));
	leave_past_eof(F[1], 6, 10, 1);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = F[1]->sf_fd;
	fsr.flags = FILE_SWAP_RANGE_TO_EOF | flags;
	assert_int_equal(sx_swap_file_range(mp, F[0]->sf_fd, &fsr), 0);
	sxs_model_swap(F[1], 0, F[0], 0, 12);
	F[1]->sf_size = 12 * BS;
	F[0]->sf_size = 6 * BS;
	verify_all();
	/* a grows again over what b's stale blocks would be: zeroes */
	assert_int_equal(sx_truncate(mp, F[0]->sf_fd, 12 * BS), 0);
	F[0]->sf_size = 12 * BS;
	verify_all();
	remount();
	verify_all();
}

static void test_stale_past_eof(void **state)
{
	stale_past_eof(0);
}

static void test_stale_past_eof_nonatomic(void **state)
{
	stale_past_eof(FILE_SWAP_RANGE_NONATOMIC);
}

static void test_btree_boundary(void **state)
{
	u32 imax = sx_fork_inline_max(mp, &sx_bmap_fork_ops);
	u64 na = imax - 1, nb = 3 * imax, i;

	/* a inline with na extents, b a B+tree of nb */
	for (i = 0; i < nb; i++) {
		if (i < na)
			wr(F[0], 2 * i, sxs_tag(0, 2 * i, 1));
		wr(F[1], 2 * i, sxs_tag(1, 2 * i, 1));
	}
	assert_int_equal(nextents(F[0]->sf_fd), na);
	assert_int_equal(nextents(F[1]->sf_fd), nb);
	assert_int_equal(sx_truncate(mp, F[0]->sf_fd, 2 * nb * BS), 0);
	assert_int_equal(sx_truncate(mp, F[1]->sf_fd, 2 * nb * BS), 0);
	F[0]->sf_size = F[1]->sf_size = 2 * nb * BS;
	/* the whole files: a becomes a B+tree, b goes back inline */
	swapm(F[0], 0, F[1], 0, 2 * nb, 0);
	verify_all();
	assert_int_equal(nextents(F[0]->sf_fd), nb);
	assert_int_equal(nextents(F[1]->sf_fd), na);
	/* half of it back, across the boundary in the middle of the chain */
	swapm(F[0], 0, F[1], 0, nb, 0);
	verify_all();
	remount();
	verify_all();
}

static void test_fresh_and_errors(void **state)
{
	struct file_swap_range fsr;
	struct sx_stat st;
	u64 i;

	for (i = 0; i < 4; i++) {
		wr(F[0], i, sxs_tag(0, i, 1));
		wr(F[1], i, sxs_tag(1, i, 1));
	}
	assert_int_equal(sx_fstat(mp, F[1]->sf_fd, &st), 0);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = F[0]->sf_fd;
	fsr.length = 4 * BS;
	fsr.flags = FILE_SWAP_RANGE_FILE2_FRESH;
	fsr.file2_ino = (s64)st.st_ino;
	fsr.file2_mtime = st.st_mtime_ns / 1000000000;
	fsr.file2_mtime_nsec = st.st_mtime_ns % 1000000000;
	fsr.file2_ctime = st.st_ctime_ns / 1000000000;
	fsr.file2_ctime_nsec = st.st_ctime_ns % 1000000000;
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), 0);
	sxs_model_swap(F[0], 0, F[1], 0, 4);
	verify_all();
	/* the swap changed file2's times: the same request is stale now */
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), -EBUSY);
	verify_all();
	/* descriptors */
	fsr.flags = 0;
	fsr.file1_fd = 99;
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), -EBADF);
	fsr.file1_fd = -1;
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), -EBADF);
	fsr.file1_fd = F[0]->sf_fd;
	assert_int_equal(sx_swap_file_range(mp, 77, &fsr), -EBADF);
	/* misaligned, past EOF, FULL_FILES of different sizes */
	fsr.file1_offset = 100;
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), -EINVAL);
	fsr.file1_offset = 0;
	fsr.length = 5 * BS;
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), -EINVAL);
	wr(F[2], 0, sxs_tag(2, 0, 1));
	fsr.file1_fd = F[2]->sf_fd;
	fsr.length = BS;
	fsr.flags = FILE_SWAP_RANGE_FULL_FILES;
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), -EDOM);
	/* immutable */
	assert_int_equal(sx_fstat(mp, F[2]->sf_fd, &st), 0);
	assert_int_equal(sx_setflags(mp, F[2]->sf_fd, st.st_flags | SX_DIFLAG_IMMUTABLE), 0);
	fsr.flags = 0;
	assert_int_equal(sx_swap_file_range(mp, F[1]->sf_fd, &fsr), -EPERM);
	assert_int_equal(sx_setflags(mp, F[2]->sf_fd, st.st_flags), 0);
	verify_all();
}

/* Build two files of @n blocks (holes, unwritten) and run three swaps with @flags. */
static void scenario(u64 flags, u64 full_flags, u8 **out, u64 *outlen)
{
	u64 n = 300, i, len;
	int f;

	fill_interleaved(F[0], F[1], n, 1, 5);
	assert_int_equal(sx_fallocate(mp, F[1]->sf_fd, 100 * BS, 20 * BS), 0);
	for (i = 100; i < 120; i++)
		if (!F[1]->sf_tag[i])
			F[1]->sf_tag[i] = 0;
	swapm(F[0], 0, F[1], 0, n, full_flags);
	swapm(F[0], 17, F[1], 120, 90, flags);
	swapm(F[1], 0, F[1], 200, 50, flags);
	verify_all();
	len = 0;
	*out = malloc(2 * n * BS);
	for (f = 0; f < 2; f++) {
		assert_int_equal(sx_pread(mp, F[f]->sf_fd, *out + len, n * BS, 0), (s64)(n * BS));
		len += n * BS;
	}
	*outlen = len;
}

static void test_paths_agree(void **state)
{
	static const u64 modes[][2] = {
		{ 0, 0 },
		{ 0, FILE_SWAP_RANGE_FULL_FILES },
		{ FILE_SWAP_RANGE_NONATOMIC, FILE_SWAP_RANGE_NONATOMIC },
		{ FILE_SWAP_RANGE_NONATOMIC, FILE_SWAP_RANGE_NONATOMIC | FILE_SWAP_RANGE_FULL_FILES },
	};
	u8 *ref = NULL, *got;
	u64 rlen = 0, glen;
	u32 m;

	for (m = 0; m < ARRAY_SIZE(modes); m++) {
		if (m) {
			teardown(state);
			setup(state);
		}
		scenario(modes[m][0], modes[m][1], &got, &glen);
		if (!ref) {
			ref = got;
			rlen = glen;
			continue;
		}
		assert_int_equal(glen, rlen);
		assert_memory_equal(got, ref, rlen);
		free(got);
	}
	free(ref);
}

/* Without the atomic_swap feature: atomic requests refused, NONATOMIC the same result. */
static void test_no_atomic_feature(void **state)
{
	u8 *got;
	u64 glen;

	assert_false(mp->m_host.h_features & SX_HOST_ATOMIC_SWAP);
	wr(F[2], 0, sxs_tag(2, 0, 1));
	wr(F[3], 0, sxs_tag(3, 0, 1));
	assert_int_equal(sxs_swap(mp, F[2], 0, F[3], 0, BS, 0), -EOPNOTSUPP);
	assert_int_equal(sxs_swap(mp, F[2], 0, F[3], 0, BS, FILE_SWAP_RANGE_FULL_FILES),
			 -EOPNOTSUPP);
	verify_all();
	/* NONATOMIC on files whose forks live in their inode blocks */
	swapm(F[2], 0, F[3], 0, 1, FILE_SWAP_RANGE_NONATOMIC);
	verify_all();
	scenario(FILE_SWAP_RANGE_NONATOMIC, FILE_SWAP_RANGE_NONATOMIC, &got, &glen);
	free(got);
}

/*
 * A non-atomic swap of files whose mappings are inline in their inodes.
 * The first transaction logs both inodes (times, reflink flags); the first
 * step then read the mappings from the inode blocks outside that
 * transaction, which already held them locked, and the swap hung (the user
 * build's lock assertion stopped it).
 */
static void test_nonatomic_inline(void **state)
{
	u64 i;

	for (i = 0; i < 6; i++) {
		wr(F[0], 2 * i, sxs_tag(0, 2 * i, 1));
		wr(F[1], 3 * i, sxs_tag(1, 3 * i, 1));
	}
	assert_int_equal(sx_truncate(mp, F[0]->sf_fd, 20 * BS), 0);
	assert_int_equal(sx_truncate(mp, F[1]->sf_fd, 20 * BS), 0);
	F[0]->sf_size = F[1]->sf_size = 20 * BS;
	assert_true(nextents(F[0]->sf_fd) < sx_fork_inline_max(mp, &sx_bmap_fork_ops));
	swapm(F[0], 0, F[1], 0, 20, FILE_SWAP_RANGE_NONATOMIC);
	verify_all();
	swapm(F[0], 3, F[0], 11, 7, FILE_SWAP_RANGE_NONATOMIC);
	verify_all();
	remount();
	verify_all();
}

/*
 * A swap is durable when it returns.  Data is written in place, so a write
 * into a block the swap just gave to file b went to the disk at once; had
 * the swap still been in the in-memory log, a power cut (keeping the
 * written blocks) would have shown that write in a, which was synced
 * before the swap and never written since.
 */
static void test_durable_before_writes(void **state)
{
	struct sx_bdev *lower = sxs_mkimg(IMG, BS, 4096, true), *cbd;
	struct sx_crashdev *cd;
	struct sx_mount *m2;
	struct sxs_file *a = sxs_file_new(16), *b = sxs_file_new(16);
	struct sx_mount *saved = mp;
	char msg[160];
	u64 i;

	assert_int_equal(sx_crashdev_create(lower, 5, &cbd, &cd), 0);
	mp = m2 = sxt_mount(cbd);
	assert_int_equal(sx_create(mp, "x", 0644, &a->sf_fd), 0);
	assert_int_equal(sx_create(mp, "y", 0644, &b->sf_fd), 0);
	for (i = 0; i < 4; i++) {
		wr(a, i, sxs_tag(0, i, 1));
		wr(b, i, sxs_tag(1, i, 1));
	}
	assert_int_equal(sx_sync(mp), 0);
	swapm(a, 0, b, 0, 4, 0);
	/* b's block 0 is a's old block now; overwrite it, no sync */
	wr(b, 0, sxs_tag(1, 0, 2));
	sx_crashdev_cut_now(cd, SX_CRASH_KEEP);
	sx_unmount(m2);
	sx_bdev_destroy(cbd);
	mp = sxt_mount(lower);
	assert_int_equal(sx_open(mp, "x", &a->sf_fd), 0);
	/* a is as after the swap: b's old blocks, untouched by the write */
	if (sxs_verify(mp, BS, a, msg, sizeof(msg))) {
		fprintf(stderr, "a after the cut: %s\n", msg);
		fail();
	}
	assert_int_equal(sx_close(mp, a->sf_fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(lower);
	sxs_file_free(a);
	sxs_file_free(b);
	mp = saved;
}

/* Misses of @m's buffer cache so far. */
static u64 bcache_misses(struct sx_mount *m)
{
	struct sx_bcache_stats st;

	sx_bcache_get_stats(m, &st);
	return st.bs_misses;
}

/* Mount @b with a cache of @bufs buffers and open "a" and "b". */
static struct sx_mount *mount_small_cache(struct sx_bdev *b, u32 bufs, int *fa, int *fb)
{
	struct sx_mount_opts mo = { .mo_bcache_max = bufs };
	struct sx_mount *m;

	assert_int_equal(sx_mount(b, &mo, &m), 0);
	assert_int_equal(sx_open(m, "a", fa), 0);
	assert_int_equal(sx_open(m, "b", fb), 0);
	return m;
}

static void unmount_pair(struct sx_mount *m, int fa, int fb)
{
	assert_int_equal(sx_close(m, fa), 0);
	assert_int_equal(sx_close(m, fb), 0);
	assert_int_equal(sx_unmount(m), 0);
}

#define LONG_EXT	4u		/* blocks of each extent */
#define LONG_N		16448u		/* extents of both files: 65,792 blocks */
#define LONG_CACHE	340u

/*
 * A swap whose mapping blocks outnumber the cache.  The estimate walks the
 * range before the steps do; walked from first to last, it would leave the
 * range's end cached and the steps, going from first to last, would miss
 * every block again.  Walked from its last piece to its first, it leaves
 * the first ones cached for the steps: the swap misses well under twice
 * the blocks that reading both files' mappings once misses.
 */
static void test_long_swap_cached(void **state)
{
	struct sx_bdev *b = sxs_mkimg(160 * MIB, BS, 0, true);
	struct sx_mount *m = sxt_mount(b);
	struct sx_extent ext[64];
	struct file_swap_range fsr;
	u8 buf[LONG_EXT * BS], got[BS];
	u64 once, swap, i, off;
	u32 n;
	int fa, fb;

	assert_int_equal(sx_create(m, "a", 0644, &fa), 0);
	assert_int_equal(sx_create(m, "b", 0644, &fb), 0);
	/* a has the even extents, b the odd ones: nothing merges */
	for (i = 0; i < LONG_N; i++) {
		memset(buf, (int)(i % 251) + 1, sizeof(buf));
		assert_int_equal(sx_pwrite(m, i % 2 ? fb : fa, buf, sizeof(buf),
					   i * sizeof(buf)), (s64)sizeof(buf));
	}
	assert_int_equal(sx_truncate(m, fa, (u64)LONG_N * sizeof(buf)), 0);
	assert_int_equal(sx_truncate(m, fb, (u64)LONG_N * sizeof(buf)), 0);
	unmount_pair(m, fa, fb);

	/* what reading every mapping of both files once misses */
	m = mount_small_cache(b, LONG_CACHE, &fa, &fb);
	once = bcache_misses(m);
	for (i = 0; i < 2; i++) {
		for (off = 0;; off = ext[63].ex_off + ext[63].ex_len) {
			assert_int_equal(sx_fiemap(m, i ? fb : fa, off, ~0ull >> 12, ext, 64, &n), 0);
			if (n < 64)
				break;
		}
	}
	once = bcache_misses(m) - once;
	unmount_pair(m, fa, fb);
	/* the point of the test: both files' mappings do not fit in the cache */
	assert_true(once > LONG_CACHE);

	m = mount_small_cache(b, LONG_CACHE, &fa, &fb);
	swap = bcache_misses(m);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fa;
	fsr.length = (s64)((u64)LONG_N * sizeof(buf));
	assert_int_equal(sx_swap_file_range(m, fb, &fsr), 0);
	swap = bcache_misses(m) - swap;
	print_message("mapping reads: %llu for one pass, %llu for the swap\n",
		      (unsigned long long)once, (unsigned long long)swap);
	assert_true(swap * 10 < once * 16);

	/* and the blocks moved: a has the odd extents' data now */
	for (i = 0; i < LONG_N; i++) {
		assert_int_equal(sx_pread(m, i % 2 ? fa : fb, got, BS, i * sizeof(buf) + BS),
				 (s64)BS);
		assert_int_equal(got[0], (u8)((i % 251) + 1));
	}
	unmount_pair(m, fa, fb);
	assert_int_equal(sxc_check_clean(b, 0, __func__), 0);
	sx_bdev_destroy(b);
}

/*
 * An unfinished SXI needs the feature: cut the power in the middle of a
 * long swap, then turn the feature bit off in the superblock.  Recovery
 * with the bit on finishes the swap; with it off the mount is refused at
 * every cut that left an SXI unfinished.
 */
static void test_mount_refuses_sxi(void **state)
{
	struct sx_bdev *base, *img, *cbd, *cp;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st0, st1;
	/* each transaction its own record, so cuts fall between SXI and SXD */
	const struct sx_mount_opts each = { .mo_flags = SX_MOUNT_LOG_EACH };
	struct sx_mount *m2;
	struct sx_sb sb;
	u64 w, refused = 0, tried = 0;
	int i;

	fill_interleaved(F[0], F[1], 200, 1, 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(sx_close(mp, F[i]->sf_fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	base = sxt_bdev_copy(bd);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &F[0]->sf_fd), 0);
	assert_int_equal(sx_open(mp, "b", &F[1]->sf_fd), 0);
	assert_int_equal(sx_open(mp, "c", &F[2]->sf_fd), 0);
	assert_int_equal(sx_open(mp, "d", &F[3]->sf_fd), 0);

	/* how many writes a swap of the two files takes */
	img = sxt_bdev_copy(base);
	assert_int_equal(sx_crashdev_create(img, 1, &cbd, &cd), 0);
	assert_int_equal(sx_mount(cbd, &each, &m2), 0);
	{
		int a, b;
		struct file_swap_range fsr;

		assert_int_equal(sx_open(m2, "a", &a), 0);
		assert_int_equal(sx_open(m2, "b", &b), 0);
		sx_crashdev_get_stats(cd, &st0);
		memset(&fsr, 0, sizeof(fsr));
		fsr.file1_fd = a;
		fsr.length = 200 * BS;
		assert_int_equal(sx_swap_file_range(m2, b, &fsr), 0);
		assert_int_equal(sx_sync(m2), 0);
		sx_crashdev_get_stats(cd, &st1);
		sx_close(m2, a);
		sx_close(m2, b);
		assert_int_equal(sx_unmount(m2), 0);
	}
	sx_bdev_destroy(cbd);
	sx_bdev_destroy(img);

	/* a direct step swaps many blocks per write: cut at every write then */
	for (w = st0.cs_writes + 1; w <= st1.cs_writes;
	     w += st1.cs_writes - st0.cs_writes > 30 ? 3 : 1) {
		int a, b, error;
		struct file_swap_range fsr;

		img = sxt_bdev_copy(base);
		assert_int_equal(sx_crashdev_create(img, w, &cbd, &cd), 0);
		assert_int_equal(sx_mount(cbd, &each, &m2), 0);
		assert_int_equal(sx_open(m2, "a", &a), 0);
		assert_int_equal(sx_open(m2, "b", &b), 0);
		sx_crashdev_cut_at_write(cd, w, SX_CRASH_DROP);
		memset(&fsr, 0, sizeof(fsr));
		fsr.file1_fd = a;
		fsr.length = 200 * BS;
		error = sx_swap_file_range(m2, b, &fsr);
		if (!error)
			error = sx_sync(m2);
		sx_close(m2, a);
		sx_close(m2, b);
		sx_unmount(m2);
		sx_bdev_destroy(cbd);
		tried++;
		/* with the feature off */
		cp = sxt_bdev_copy(img);
		assert_int_equal(sx_sb_read(NULL, cp, &sb, NULL), 0);
		sb.sb_feat_log_incompat &= ~SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
		assert_int_equal(sx_sb_write(cp, &sb), 0);
		assert_int_equal(sx_sb_write(cp, &sb), 0);
		error = sx_mount(cp, NULL, &m2);
		if (error) {
			assert_int_equal(error, -EFSCORRUPTED);
			refused++;
		} else {
			sx_unmount(m2);
		}
		sx_bdev_destroy(cp);
		/* with it on, recovery finishes the swap and the image is clean */
		assert_int_equal(sx_mount(img, NULL, &m2), 0);
		assert_int_equal(sx_unmount(m2), 0);
		assert_int_equal(sxc_check_clean(img, 0, __func__), 0);
		sx_bdev_destroy(img);
	}
	printf("mount refused an unfinished SXI without atomic_swap at %llu of %llu cuts\n",
	       (unsigned long long)refused, (unsigned long long)tried);
	assert_true(refused > 0);
	sx_bdev_destroy(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bmi_swap_format, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_extent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_extents_holes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_to_eof_unequal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_file_to_eof, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btree_boundary, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_past_eof, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_past_eof_nonatomic, setup_noatomic,
						teardown),
		cmocka_unit_test_setup_teardown(test_fresh_and_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths_agree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_atomic_feature, setup_noatomic, teardown),
		cmocka_unit_test(test_long_swap_cached),
		cmocka_unit_test_setup_teardown(test_nonatomic_inline, setup_noatomic, teardown),
		cmocka_unit_test_setup_teardown(test_durable_before_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_file_to_eof_nonatomic, setup_noatomic,
						teardown),
		cmocka_unit_test_setup_teardown(test_mount_refuses_sxi, setup, teardown),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
