/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the file-backed and memory devices: creation and
 * extension, round trips, range and alignment checks, read-only mode,
 * O_DIRECT with aligned and misaligned buffers, discard, and reopening.
 *
 * SX_TEST_BLKDEV=/dev/xxx runs the block-device test on that device
 * (its contents are destroyed); without it that test is skipped.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "sx_platform.h"
#include <swapext/device.h>

#define MiB	(1024 * 1024)

static char tmpdir[] = "/tmp/sx_test_filedev_XXXXXX";

/* A path inside the test's temporary directory. */
static const char *tpath(const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	return path;
}

/* Fill @buf with a pattern that differs for every @tag and byte offset. */
static void pattern(u8 *buf, size_t len, u32 tag)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(tag * 131 + i * 7 + (i >> 9));
}

/* Allocate @size bytes aligned to @align, failing the test if we cannot. */
static void *xalign(size_t align, size_t size)
{
	void *p = NULL;

	assert_int_equal(posix_memalign(&p, align, size), 0);
	assert_non_null(p);
	return p;
}

/* Size of the file at @path. */
static off_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

/* Read @len bytes at @off of the file behind a device, bypassing it. */
static void raw_read(const char *path, u64 off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

/* Make a regular file of @size bytes filled with pattern @tag. */
static void make_file(const char *path, size_t size, u32 tag)
{
	u8 *buf = malloc(size);
	int fd;

	assert_non_null(buf);
	pattern(buf, size, tag);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, size, 0), (ssize_t)size);
	close(fd);
	free(buf);
}

/* Creating a device makes a file of the requested size, zero-filled. */
static void test_create(void **state)
{
	const char *path = tpath("create.img");
	struct sx_bdev *bd;
	u8 buf[4096], zero[4096] = { 0 };

	unlink(path);
	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_CREATE, MiB, &bd), 0);
	assert_int_equal(bd->bd_size, MiB);
	assert_int_equal(bd->bd_sectsize, 512);
	assert_int_equal(file_size(path), MiB);
	assert_int_equal(bd->bd_ops->read(bd, MiB - 4096, buf, 4096), 0);
	assert_memory_equal(buf, zero, 4096);
	sx_bdev_destroy(bd);

	/* without CREATE a missing file is an error, not a new file */
	unlink(path);
	assert_int_equal(sx_filedev_open(path, 0, MiB, &bd), -ENOENT);
	assert_null(bd);
	assert_int_equal(access(path, F_OK), -1);
}

/* CREATE extends a shorter file and keeps what it held. */
static void test_extend(void **state)
{
	const char *path = tpath("extend.img");
	u8 want[65536], got[65536];
	struct sx_bdev *bd;

	make_file(path, 65536, 3);
	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_CREATE, 4 * MiB, &bd), 0);
	assert_int_equal(bd->bd_size, 4 * MiB);
	assert_int_equal(file_size(path), 4 * MiB);
	pattern(want, sizeof(want), 3);
	assert_int_equal(bd->bd_ops->read(bd, 0, got, sizeof(got)), 0);
	assert_memory_equal(got, want, sizeof(want));
	sx_bdev_destroy(bd);

	/* a bigger file is never shrunk; the device is the requested size */
	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_CREATE, MiB, &bd), 0);
	assert_int_equal(bd->bd_size, MiB);
	assert_int_equal(file_size(path), 4 * MiB);
	sx_bdev_destroy(bd);

	/* size 0 means the whole file */
	assert_int_equal(sx_filedev_open(path, 0, 0, &bd), 0);
	assert_int_equal(bd->bd_size, 4 * MiB);
	sx_bdev_destroy(bd);
}

/* Arguments that make no device. */
static void test_open_errors(void **state)
{
	const char *path = tpath("errors.img");
	struct sx_bdev *bd;

	make_file(path, 65536, 1);
	/* larger than the file, and not allowed to extend it */
	assert_int_equal(sx_filedev_open(path, 0, MiB, &bd), -ENOSPC);
	/* not a multiple of the sector size */
	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_CREATE, 1000, &bd), -EINVAL);
	assert_int_equal(file_size(path), 65536);
	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_RDONLY | SX_FILEDEV_CREATE,
					 MiB, &bd), -EINVAL);
	assert_int_equal(sx_filedev_open(path, 1u << 20, 0, &bd), -EINVAL);
	/* a directory is not a device */
	assert_int_equal(sx_filedev_open(tmpdir, SX_FILEDEV_RDONLY, 0, &bd), -EINVAL);
	/* an empty file is a device of no sectors */
	make_file(tpath("empty.img"), 0, 0);
	assert_int_equal(sx_filedev_open(tpath("empty.img"), 0, 0, &bd), -EINVAL);

	/* a file the failed open created is removed again */
	unlink(tpath("fresh.img"));
	assert_int_equal(sx_filedev_open(tpath("fresh.img"), SX_FILEDEV_CREATE, 1000, &bd),
			 -EINVAL);
	assert_int_equal(access(tpath("fresh.img"), F_OK), -1);
	assert_null(bd);
}

/* Writes read back through the device, the file and a reopened device. */
static void test_round_trip(void **state)
{
	const char *path = tpath("rt.img");
	static u8 want[MiB], got[MiB];
	struct sx_bdev *bd;
	u64 offs[] = { 0, 512, 4096, 65536 - 512, 3 * 65536, MiB - 8192 };
	size_t lens[] = { 512, 1024, 4096, 8192, 65536, 8192 };
	size_t i;

	unlink(path);
	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_CREATE, 2 * MiB, &bd), 0);
	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		pattern(want, lens[i], i + 10);
		assert_int_equal(bd->bd_ops->write(bd, offs[i], want, lens[i],
						   i & 1 ? SX_BDEV_FUA : 0), 0);
		memset(got, 0, lens[i]);
		assert_int_equal(bd->bd_ops->read(bd, offs[i], got, lens[i]), 0);
		assert_memory_equal(got, want, lens[i]);
	}
	assert_int_equal(bd->bd_ops->flush(bd), 0);
	/* one big transfer, larger than any internal chunk */
	pattern(want, MiB, 77);
	assert_int_equal(bd->bd_ops->write(bd, MiB, want, MiB, 0), 0);
	assert_int_equal(bd->bd_ops->flush(bd), 0);
	sx_bdev_destroy(bd);

	raw_read(path, MiB, got, MiB);
	assert_memory_equal(got, want, MiB);
	assert_int_equal(sx_filedev_open(path, 0, 0, &bd), 0);
	assert_int_equal(bd->bd_size, 2 * MiB);
	for (i = 0; i < ARRAY_SIZE(offs) - 1; i++) {
		pattern(want, lens[i], i + 10);
		assert_int_equal(bd->bd_ops->read(bd, offs[i], got, lens[i]), 0);
		assert_memory_equal(got, want, lens[i]);
	}
	sx_bdev_destroy(bd);
}

/* Check that every misaligned or out-of-range request fails with -EINVAL. */
static void check_einval(struct sx_bdev *bd)
{
	u32 ss = bd->bd_sectsize;
	u64 size = bd->bd_size;
	/* aligned, so that the O_DIRECT device takes the in-range requests */
	u8 *buf = xalign(4096, 2 * ss);

	memset(buf, 0x5a, 2 * ss);
	assert_int_equal(bd->bd_ops->read(bd, 1, buf, ss), -EINVAL);
	assert_int_equal(bd->bd_ops->read(bd, ss / 2, buf, ss), -EINVAL);
	assert_int_equal(bd->bd_ops->read(bd, 0, buf, ss - 1), -EINVAL);
	assert_int_equal(bd->bd_ops->read(bd, 0, buf, ss + 1), -EINVAL);
	assert_int_equal(bd->bd_ops->read(bd, size, buf, ss), -EINVAL);
	assert_int_equal(bd->bd_ops->read(bd, size - ss, buf, 2 * ss), -EINVAL);
	assert_int_equal(bd->bd_ops->read(bd, UINT64_MAX - ss + 1, buf, ss), -EINVAL);
	assert_int_equal(bd->bd_ops->write(bd, 7, buf, ss, 0), -EINVAL);
	assert_int_equal(bd->bd_ops->write(bd, 0, buf, ss + 3, 0), -EINVAL);
	assert_int_equal(bd->bd_ops->write(bd, size, buf, ss, 0), -EINVAL);
	assert_int_equal(bd->bd_ops->write(bd, size - ss, buf, 2 * ss, SX_BDEV_FUA), -EINVAL);
	assert_int_equal(bd->bd_ops->write(bd, UINT64_MAX - ss + 1, buf, 2 * ss, 0), -EINVAL);
	/* the last sector itself is fine */
	assert_int_equal(bd->bd_ops->write(bd, size - ss, buf, ss, 0), 0);
	assert_int_equal(bd->bd_ops->read(bd, size - ss, buf + ss, ss), 0);
	assert_memory_equal(buf, buf + ss, ss);
	free(buf);
}

/* Misaligned and out-of-range I/O is refused on a file device. */
static void test_file_einval(void **state)
{
	const char *path = tpath("inval.img");
	struct sx_bdev *bd;
	u8 before[4096], after[4096];

	make_file(path, 65536, 9);
	assert_int_equal(sx_filedev_open(path, 0, 0, &bd), 0);
	raw_read(path, 0, before, sizeof(before));
	check_einval(bd);
	/* the refused writes did not touch the start of the file */
	raw_read(path, 0, after, sizeof(after));
	assert_memory_equal(before, after, sizeof(before));
	sx_bdev_destroy(bd);
}

/* A read-only device reads but refuses writes and leaves the file alone. */
static void test_rdonly(void **state)
{
	const char *path = tpath("ro.img");
	u8 want[8192], got[8192];
	struct sx_bdev *bd;

	make_file(path, 65536, 5);
	assert_int_equal(chmod(path, 0444), 0);
	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_RDONLY, 0, &bd), 0);
	pattern(want, sizeof(want), 5);
	assert_int_equal(bd->bd_ops->read(bd, 0, got, sizeof(got)), 0);
	assert_memory_equal(got, want, sizeof(want));

	memset(got, 0xee, sizeof(got));
	assert_int_equal(bd->bd_ops->write(bd, 0, got, 4096, 0), -EROFS);
	assert_int_equal(bd->bd_ops->write(bd, 4096, got, 4096, SX_BDEV_FUA), -EROFS);
	assert_int_equal(bd->bd_ops->discard(bd, 0, 4096), -EROFS);
	assert_int_equal(bd->bd_ops->flush(bd), 0);
	raw_read(path, 0, got, sizeof(got));
	assert_memory_equal(got, want, sizeof(want));
	sx_bdev_destroy(bd);
	assert_int_equal(chmod(path, 0644), 0);
}

/* Open @path with O_DIRECT, or skip the test if its filesystem refuses. */
static struct sx_bdev *open_direct_or_skip(const char *path, u64 size)
{
	struct sx_bdev *bd;
	int error;

	error = sx_filedev_open(path, SX_FILEDEV_CREATE | SX_FILEDEV_DIRECT, size, &bd);
	if (error == -EINVAL) {
		print_message("O_DIRECT not supported for %s, skipping\n", path);
		unlink(path);
		skip();
	}
	assert_int_equal(error, 0);
	return bd;
}

/* O_DIRECT with aligned and misaligned buffers; the data really lands. */
static void test_direct(void **state)
{
	const char *path = tpath("direct.img");
	struct sx_bdev *bd;
	size_t len = 3 * 65536;
	u8 *abuf, *mbuf, *want, *got;
	u32 ss;

	unlink(path);
	bd = open_direct_or_skip(path, 4 * MiB);
	ss = bd->bd_sectsize;
	assert_true(ss >= 512 && (ss & (ss - 1)) == 0);
	assert_int_equal(bd->bd_size, 4 * MiB);
	check_einval(bd);

	abuf = xalign(4096, len + 4096);
	want = malloc(len);
	got = malloc(len);
	assert_non_null(want);
	assert_non_null(got);

	/* aligned buffer: straight through */
	pattern(want, len, 21);
	memcpy(abuf, want, len);
	assert_int_equal(bd->bd_ops->write(bd, 0, abuf, len, 0), 0);
	memset(abuf, 0, len);
	assert_int_equal(bd->bd_ops->read(bd, 0, abuf, len), 0);
	assert_memory_equal(abuf, want, len);

	/* misaligned buffer: bounced, same result */
	mbuf = abuf + 1;
	pattern(want, len, 22);
	memcpy(mbuf, want, len);
	assert_int_equal(bd->bd_ops->write(bd, MiB, mbuf, len, SX_BDEV_FUA), 0);
	memset(mbuf, 0, len);
	assert_int_equal(bd->bd_ops->read(bd, MiB, mbuf, len), 0);
	assert_memory_equal(mbuf, want, len);
	/* a misaligned transfer longer than the bounce buffer */
	{
		size_t biglen = 2 * MiB + 65536;
		u8 *big = malloc(biglen + 1), *bigwant = malloc(biglen);

		assert_non_null(big);
		assert_non_null(bigwant);
		pattern(bigwant, biglen, 23);
		memcpy(big + 1, bigwant, biglen);
		assert_int_equal(bd->bd_ops->write(bd, MiB, big + 1, biglen, 0), 0);
		memset(big, 0, biglen + 1);
		assert_int_equal(bd->bd_ops->read(bd, MiB, big + 1, biglen), 0);
		assert_memory_equal(big + 1, bigwant, biglen);
		free(big);
		free(bigwant);
	}
	assert_int_equal(bd->bd_ops->flush(bd), 0);
	sx_bdev_destroy(bd);

	/* what O_DIRECT wrote is what a buffered reader sees */
	pattern(want, len, 21);
	raw_read(path, 0, got, len);
	assert_memory_equal(got, want, len);

	free(abuf);
	free(want);
	free(got);
	unlink(path);
}

/* O_DIRECT on tmpfs either works or is refused with -EINVAL (the fallback). */
static void test_direct_tmpfs(void **state)
{
	struct sx_bdev *bd;
	u8 *buf;
	int error;

	if (access("/dev/shm", W_OK) != 0)
		skip();
	unlink("/dev/shm/sx_test_direct.img");
	error = sx_filedev_open("/dev/shm/sx_test_direct.img",
				SX_FILEDEV_CREATE | SX_FILEDEV_DIRECT, MiB, &bd);
	if (error == -EINVAL) {
		assert_null(bd);
		return;
	}
	assert_int_equal(error, 0);
	buf = xalign(4096, 8192);
	pattern(buf, 8192, 4);
	assert_int_equal(bd->bd_ops->write(bd, 0, buf, 8192, 0), 0);
	memset(buf, 0, 8192);
	assert_int_equal(bd->bd_ops->read(bd, 0, buf, 8192), 0);
	{
		u8 want[8192];

		pattern(want, sizeof(want), 4);
		assert_memory_equal(buf, want, sizeof(want));
	}
	free(buf);
	sx_bdev_destroy(bd);
	unlink("/dev/shm/sx_test_direct.img");
}

/* Discard on a file punches a hole: the range reads back as zeroes. */
static void test_file_discard(void **state)
{
	const char *path = tpath("discard.img");
	u8 got[65536], zero[65536] = { 0 }, want[4096];
	struct sx_bdev *bd;
	int error;

	make_file(path, 4 * 65536, 8);
	assert_int_equal(sx_filedev_open(path, 0, 0, &bd), 0);
	error = bd->bd_ops->discard(bd, 65536, 65536);
	if (error == -EOPNOTSUPP) {
		sx_bdev_destroy(bd);
		skip();
	}
	assert_int_equal(error, 0);
	assert_int_equal(bd->bd_ops->read(bd, 65536, got, 65536), 0);
	assert_memory_equal(got, zero, 65536);
	/* the neighbours are untouched and the size stays */
	assert_int_equal(bd->bd_ops->read(bd, 65536 - 4096, got, 4096), 0);
	{
		u8 full[65536];

		pattern(full, sizeof(full), 8);
		memcpy(want, full + 65536 - 4096, 4096);
	}
	assert_memory_equal(got, want, 4096);
	assert_int_equal(file_size(path), 4 * 65536);
	assert_int_equal(bd->bd_ops->discard(bd, 100, 512), -EINVAL);
	sx_bdev_destroy(bd);
}

/* A memory device starts zeroed, round-trips, and checks its ranges. */
static void test_memdev(void **state)
{
	u8 want[16384], got[16384], zero[16384] = { 0 };
	struct sx_bdev *bd;

	assert_int_equal(sx_memdev_create(MiB, 4096, &bd), 0);
	assert_int_equal(bd->bd_size, MiB);
	assert_int_equal(bd->bd_sectsize, 4096);
	assert_int_equal(bd->bd_ops->read(bd, 0, got, sizeof(got)), 0);
	assert_memory_equal(got, zero, sizeof(got));

	pattern(want, sizeof(want), 31);
	assert_int_equal(bd->bd_ops->write(bd, 8192, want, sizeof(want), 0), 0);
	assert_int_equal(bd->bd_ops->read(bd, 8192, got, sizeof(got)), 0);
	assert_memory_equal(got, want, sizeof(want));
	assert_int_equal(bd->bd_ops->flush(bd), 0);
	/* 512-aligned is not enough on a 4096-byte-sector device */
	assert_int_equal(bd->bd_ops->read(bd, 512, got, 4096), -EINVAL);
	assert_int_equal(bd->bd_ops->write(bd, 0, want, 512, 0), -EINVAL);
	check_einval(bd);

	/* discard zeroes exactly its range */
	assert_int_equal(bd->bd_ops->discard(bd, 12288, 4096), 0);
	assert_int_equal(bd->bd_ops->read(bd, 8192, got, sizeof(got)), 0);
	assert_memory_equal(got, want, 4096);
	assert_memory_equal(got + 4096, zero, 4096);
	assert_memory_equal(got + 8192, want + 8192, 8192);
	sx_bdev_destroy(bd);

	assert_int_equal(sx_memdev_create(MiB, 1000, &bd), -EINVAL);
	assert_int_equal(sx_memdev_create(MiB, 256, &bd), -EINVAL);
	assert_int_equal(sx_memdev_create(MiB + 512, 4096, &bd), -EINVAL);
	assert_int_equal(sx_memdev_create(0, 512, &bd), -EINVAL);
	assert_null(bd);
	sx_bdev_destroy(NULL);
}

/* A block device node, if the environment names one. */
static void test_blkdev(void **state)
{
	const char *dev = getenv("SX_TEST_BLKDEV");
	struct sx_bdev *bd;
	u8 *want, *got;
	u32 ss;

	if (!dev || !*dev)
		skip();
	assert_int_equal(sx_filedev_open(dev, 0, 0, &bd), 0);
	ss = bd->bd_sectsize;
	assert_true(ss >= 512 && (ss & (ss - 1)) == 0);
	assert_true(bd->bd_size >= 2 * 65536);
	want = malloc(65536);
	got = malloc(65536);
	pattern(want, 65536, 41);
	assert_int_equal(bd->bd_ops->write(bd, bd->bd_size - 65536, want, 65536, SX_BDEV_FUA), 0);
	assert_int_equal(bd->bd_ops->read(bd, bd->bd_size - 65536, got, 65536), 0);
	assert_memory_equal(got, want, 65536);
	check_einval(bd);
	/* a block device cannot grow */
	sx_bdev_destroy(bd);
	assert_int_equal(sx_filedev_open(dev, SX_FILEDEV_CREATE, (u64)1 << 60, &bd), -ENOSPC);
	free(want);
	free(got);
}

/* Make the temporary directory. */
static int group_setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

/* Remove the temporary directory and what the tests left in it. */
static int group_teardown(void **state)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Run every test in this file. */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_extend),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_file_einval),
		cmocka_unit_test(test_rdonly),
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_direct_tmpfs),
		cmocka_unit_test(test_file_discard),
		cmocka_unit_test(test_memdev),
		cmocka_unit_test(test_blkdev),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
