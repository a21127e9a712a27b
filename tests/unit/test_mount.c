// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Mount's refusals of a device that cannot hold the filesystem it carries
 * and of options that contradict each other, what a read-only mount
 * refuses to start, and the error texts of sx_strerror().
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxtest.h"

#define MIB		(1ull << 20)

/* A memory device of @size bytes and @sectsize sectors holding @src's first bytes. */
static struct sx_bdev *copy_prefix(struct sx_bdev *src, u64 size, u32 sectsize)
{
	struct sx_bdev *bd;
	u8 *buf = malloc(size);

	assert_non_null(buf);
	assert_int_equal(sx_memdev_create(size, sectsize, &bd), 0);
	assert_int_equal(src->bd_ops->read(src, 0, buf, size), 0);
	assert_int_equal(bd->bd_ops->write(bd, 0, buf, size, 0), 0);
	free(buf);
	return bd;
}

/*
 * A device shorter than the filesystem (a truncated image) is refused as
 * corrupt, before anything is read past its end; one whose sectors are
 * larger than the filesystem's blocks cannot be written a block at a time
 * and is refused as invalid.  The whole device still mounts.
 */
static void test_device_mismatch(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 512, 0), *cut;
	struct sx_mount *mp;

	cut = copy_prefix(bd, 4 * MIB, 512);
	assert_int_equal(sx_mount(cut, NULL, &mp), -EFSCORRUPTED);
	sx_bdev_destroy(cut);

	cut = copy_prefix(bd, 8 * MIB, 4096);
	assert_int_equal(sx_mount(cut, NULL, &mp), -EINVAL);
	sx_bdev_destroy(cut);

	mp = sxt_mount(bd);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/*
 * Skipping recovery is for looking only: asked for on a mount that could
 * write, it is refused.  A read-only mount starts no transaction.
 */
static void test_options(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount_opts norec = { .mo_flags = SX_MOUNT_NORECOVERY };
	struct sx_mount_opts ro = { .mo_flags = SX_MOUNT_RDONLY };
	struct sx_mount *mp;
	struct sx_trans *tp = NULL;
	u64 before = sxt_bdev_digest(bd);

	assert_int_equal(sx_mount(bd, &norec, &mp), -EINVAL);
	assert_int_equal(sx_mount(bd, &ro, &mp), 0);
	assert_int_equal(sx_trans_alloc(mp, 1024, 0, &tp), -EROFS);
	assert_null(tp);
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	/* and wrote nothing */
	assert_int_equal(sxt_bdev_digest(bd), before);
	sx_bdev_destroy(bd);
}

/*
 * A read-only mount reads files and refuses every change with -EROFS:
 * writes, size and flag changes, block sharing, new, renamed, linked and
 * removed names, and tmpfiles.  The device is left as it was.
 */
static void test_rdonly_refusals(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount_opts ro = { .mo_flags = SX_MOUNT_RDONLY };
	struct sx_mount *mp = sxt_mount(bd);
	u8 buf[8192], got[8192];
	u64 before;
	int fd, fd2;

	memset(buf, 0x3c, sizeof(buf));
	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	assert_int_equal(sx_pwrite(mp, fd, buf, sizeof(buf), 0), (s64)sizeof(buf));
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_create(mp, "g", 0644, &fd), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	before = sxt_bdev_digest(bd);

	assert_int_equal(sx_mount(bd, &ro, &mp), 0);
	assert_int_equal(sx_open(mp, "f", &fd), 0);
	assert_int_equal(sx_open(mp, "g", &fd2), 0);
	assert_int_equal(sx_pread(mp, fd, got, sizeof(got), 0), (s64)sizeof(got));
	assert_memory_equal(got, buf, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, fd, buf, 4096, 0), -EROFS);
	assert_int_equal(sx_truncate(mp, fd, 0), -EROFS);
	assert_int_equal(sx_fallocate(mp, fd, 8192, 4096), -EROFS);
	assert_int_equal(sx_punch(mp, fd, 0, 4096), -EROFS);
	assert_int_equal(sx_setflags(mp, fd, SX_DIFLAG_IMMUTABLE), -EROFS);
	assert_int_equal(sx_clone_range(mp, fd2, 0, fd, 0, 4096), -EROFS);
	assert_int_equal(sx_create(mp, "h", 0644, &fd2), -EROFS);
	assert_int_equal(sx_open_tmpfile(mp, 0600, &fd2), -EROFS);
	assert_int_equal(sx_link(mp, fd, "f2"), -EROFS);
	assert_int_equal(sx_rename(mp, "f", "f3"), -EROFS);
	assert_int_equal(sx_unlink(mp, "g"), -EROFS);
	assert_int_equal(sx_fsync(mp, fd), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxt_bdev_digest(bd), before);
	sx_bdev_destroy(bd);
}

/* Every errno the engine returns has the C library's text; its own two have theirs. */
static void test_strerror(void **state)
{
	static const int errs[] = {
		EIO, ENOMEM, ENOSPC, EINVAL, EOPNOTSUPP, EROFS, EEXIST, ENOENT, EBUSY,
		EFBIG, EPERM, EBADF, ENAMETOOLONG, EISDIR, EMFILE, EMLINK,
	};
	u32 i;

	for (i = 0; i < ARRAY_SIZE(errs); i++)
		assert_string_equal(sx_strerror(-errs[i]), strerror(errs[i]));
	assert_string_equal(sx_strerror(0), "Success");
	assert_string_equal(sx_strerror(-EFSCORRUPTED),
			    "Structure needs cleaning (metadata corrupted)");
	assert_string_equal(sx_strerror(-EFSBADCRC), "Bad message (checksum mismatch)");
	assert_string_equal(sx_strerror(-EXDEV), "Unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_mismatch),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_rdonly_refusals),
		cmocka_unit_test(test_strerror),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
