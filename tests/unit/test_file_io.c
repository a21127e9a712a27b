// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The data path's refusals: what an immutable or append-only file refuses
 * (write, truncate, allocate, punch), ranges past the largest file (and a
 * write cut short at it), empty and wrapping ranges, and an allocation
 * larger than the free space.  Each refusal leaves the file as it was.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxtest.h"
#include <swapext/swapext_compat.h>

#define MIB		(1ull << 20)
#define BS		4096u

static struct sx_bdev *bd;
static struct sx_mount *mp;

static int setup(void **state)
{
	bd = sxt_memfs(8 * MIB, BS, 0);
	mp = sxt_mount(bd);
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
	return 0;
}

/* A file of @len bytes of @byte. */
static int mkfile(const char *name, u64 len, u8 byte)
{
	u8 *buf = malloc(len);
	int fd;

	memset(buf, byte, len);
	assert_int_equal(sx_create(mp, name, 0644, &fd), 0);
	assert_int_equal(sx_pwrite(mp, fd, buf, len, 0), (s64)len);
	free(buf);
	return fd;
}

/* @fd is @len bytes of @byte. */
static void holds(int fd, u64 len, u8 byte)
{
	struct sx_stat st;
	u8 *buf = malloc(len + 1);
	u64 i;

	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	assert_int_equal(st.st_size, len);
	assert_int_equal(sx_pread(mp, fd, buf, len + 1, 0), (s64)len);
	for (i = 0; i < len; i++)
		assert_int_equal(buf[i], byte);
	free(buf);
}

/* An immutable file takes no change; one append-only takes appends only. */
static void test_flags(void **state)
{
	int im = mkfile("im", 3 * BS, 0x11), ap = mkfile("ap", 3 * BS, 0x22);
	u8 buf[BS];

	memset(buf, 0x33, sizeof(buf));
	assert_int_equal(sx_setflags(mp, im, SX_DIFLAG_IMMUTABLE), 0);
	assert_int_equal(sx_pwrite(mp, im, buf, BS, 0), -EPERM);
	assert_int_equal(sx_pwrite(mp, im, buf, BS, 3 * BS), -EPERM);
	assert_int_equal(sx_truncate(mp, im, BS), -EPERM);
	assert_int_equal(sx_fallocate(mp, im, 0, 8 * BS), -EPERM);
	assert_int_equal(sx_punch(mp, im, 0, BS), -EPERM);
	holds(im, 3 * BS, 0x11);

	assert_int_equal(sx_setflags(mp, ap, SX_DIFLAG_APPEND), 0);
	assert_int_equal(sx_pwrite(mp, ap, buf, BS, 0), -EPERM);
	assert_int_equal(sx_truncate(mp, ap, BS), -EPERM);
	assert_int_equal(sx_punch(mp, ap, 0, BS), -EPERM);
	holds(ap, 3 * BS, 0x22);
	/* at the end of the file it may grow */
	assert_int_equal(sx_pwrite(mp, ap, buf, BS, 3 * BS), BS);
	assert_int_equal(sx_setflags(mp, ap, 0), 0);
	assert_int_equal(sx_truncate(mp, ap, 3 * BS), 0);
	holds(ap, 3 * BS, 0x22);

	assert_int_equal(sx_setflags(mp, im, 0), 0);
	assert_int_equal(sx_close(mp, im), 0);
	assert_int_equal(sx_close(mp, ap), 0);
}

/* Ranges the file cannot hold, that hold nothing, or that wrap are refused. */
static void test_ranges(void **state)
{
	int fd = mkfile("f", 2 * BS, 0x44);
	u8 buf[BS];

	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, fd, buf, BS, SX_MAX_FILE_SIZE), -EFBIG);
	assert_int_equal(sx_truncate(mp, fd, SX_MAX_FILE_SIZE + 1), -EFBIG);
	assert_int_equal(sx_fallocate(mp, fd, 0, 0), -EINVAL);
	assert_int_equal(sx_fallocate(mp, fd, SX_MAX_FILE_SIZE - BS, 2 * BS), -EFBIG);
	assert_int_equal(sx_punch(mp, fd, 0, 0), -EINVAL);
	assert_int_equal(sx_punch(mp, fd, ~0ull - BS, 2 * BS), -EINVAL);
	holds(fd, 2 * BS, 0x44);
	/* a write that starts below the limit is cut short at it */
	assert_int_equal(sx_pwrite(mp, fd, buf, BS, SX_MAX_FILE_SIZE - 8), 8);
	{
		struct sx_stat st;

		assert_int_equal(sx_fstat(mp, fd, &st), 0);
		assert_int_equal(st.st_size, SX_MAX_FILE_SIZE);
	}
	assert_int_equal(sx_truncate(mp, fd, 2 * BS), 0);
	holds(fd, 2 * BS, 0x44);
	assert_int_equal(sx_close(mp, fd), 0);
}

/* Allocating more than is free fails before anything is allocated. */
static void test_falloc_nospc(void **state)
{
	int fd = mkfile("f", BS, 0x66);
	u64 free0 = sx_alloc_free_blocks(mp);

	assert_int_equal(sx_fallocate(mp, fd, BS, (free0 + 1) * BS), -ENOSPC);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	holds(fd, BS, 0x66);
	/* what fits is allocated */
	assert_int_equal(sx_fallocate(mp, fd, BS, 8 * BS), 0);
	assert_true(sx_alloc_free_blocks(mp) <= free0 - 8);
	assert_int_equal(sx_close(mp, fd), 0);
}

/*
 * Calls over no bytes do nothing and say so: a write and a read of zero
 * bytes return 0 with the file as it was, a map of zero bytes finds no
 * mapping.  A missing name is refused by every call that takes one.
 */
static void test_empty_calls(void **state)
{
	int fd = mkfile("f", 2 * BS, 0x77), fd2;
	struct sx_extent ext[2];
	struct sx_stat st0, st1;
	u8 buf[BS];
	u32 n = 9;

	assert_int_equal(sx_fstat(mp, fd, &st0), 0);
	assert_int_equal(sx_pwrite(mp, fd, buf, 0, BS), 0);
	assert_int_equal(sx_pread(mp, fd, buf, 0, 0), 0);
	assert_int_equal(sx_fiemap(mp, fd, 0, 0, ext, 2, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sx_fiemap(mp, fd, 0, 2 * BS, ext, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(sx_fstat(mp, fd, &st1), 0);
	assert_int_equal(st1.st_size, st0.st_size);
	assert_int_equal(st1.st_mtime_ns, st0.st_mtime_ns);
	holds(fd, 2 * BS, 0x77);

	assert_int_equal(sx_create(mp, NULL, 0644, &fd2), -EINVAL);
	assert_int_equal(sx_open(mp, NULL, &fd2), -EINVAL);
	assert_int_equal(sx_unlink(mp, NULL), -EINVAL);
	assert_int_equal(sx_rename(mp, NULL, "g"), -EINVAL);
	assert_int_equal(sx_rename(mp, "f", NULL), -EINVAL);
	assert_int_equal(sx_link(mp, fd, NULL), -EINVAL);
	assert_int_equal(sx_fstat(mp, fd, &st1), 0);
	assert_int_equal(st1.st_nlink, 1);
	holds(fd, 2 * BS, 0x77);
	assert_int_equal(sx_close(mp, fd), 0);
}

/* bulkstat reports the immutable and append-only flags as XFS's. */
static void test_bulkstat_flags(void **state)
{
	int fd = mkfile("f", BS, 0x12);
	struct sx_xfs_bstat bs;

	assert_int_equal(sx_bulkstat(mp, fd, &bs), 0);
	assert_int_equal(bs.bs_xflags, 0);
	assert_int_equal(sx_setflags(mp, fd, SX_DIFLAG_IMMUTABLE), 0);
	assert_int_equal(sx_bulkstat(mp, fd, &bs), 0);
	assert_int_equal(bs.bs_xflags, SX_XFS_XFLAG_IMMUTABLE);
	assert_int_equal(sx_setflags(mp, fd, SX_DIFLAG_APPEND), 0);
	assert_int_equal(sx_bulkstat(mp, fd, &bs), 0);
	assert_int_equal(bs.bs_xflags, SX_XFS_XFLAG_APPEND);
	assert_int_equal(sx_setflags(mp, fd, 0), 0);
	assert_int_equal(sx_close(mp, fd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_falloc_nospc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bulkstat_flags, setup, teardown),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
