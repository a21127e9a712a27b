// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `swapext io`, run as a program ($SX_TOOL, else build/swapext): every
 * command and what it prints, k/m/g numbers, the first failing command
 * stopping the run with "swapext: CMD: strerror" and status 1, md5 against
 * known digests, and shutdown: a second run sees the state recovered from
 * the log, without what was not yet durable.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "sxtool.h"

static char image[1100];

/* A fresh 32 MiB image with 4 KiB blocks. */
static void new_image(void)
{
	struct sxt_run r;

	unlink(image);
	sxt_tool_run(&r, "mkfs -b 4k -s 32m '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
}

/* Skip unless the tool has been built. */
static int setup(void **state)
{
	if (sxt_tool_setup("tool_io"))
		return -1;
	snprintf(image, sizeof(image), "%s", sxt_path("io.img"));
	return 0;
}

/* Remove the scratch directory. */
static int teardown(void **state)
{
	return sxt_tool_teardown();
}

/* create, pwrite, pread, stat, md5, and the data after another run. */
static void test_write_read_stat_md5(void **state)
{
	struct sxt_run r;

	new_image();
	sxt_tool_run(&r, "io '%s' -c 'create a' -c 'pwrite -S 0x61 0 8k' -c 'pread 0 8k' "
		"-c 'pread 4k 1m' -c 'stat' -c 'md5'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "wrote 8192/8192 bytes at offset 0\n");
	sxt_assert_has(r.out, "read 8192/8192 bytes at offset 0\n");
	sxt_assert_has(r.out, "read 4096/1048576 bytes at offset 4096\n");	/* short at EOF */
	sxt_assert_has(r.out, "fd.path = \"a\"\n");
	sxt_assert_has(r.out, "stat.size = 8192\n");
	sxt_assert_has(r.out, "stat.blocks = 2\n");
	sxt_assert_has(r.out, "stat.type = regular file\n");
	sxt_assert_has(r.out, "stat.mode = 0644\n");
	sxt_assert_has(r.out, "stat.nlink = 1\n");
	sxt_assert_has(r.out, "stat.blksize = 4096\n");
	sxt_assert_has(r.out, "221994040b14294bdf7fbc128e66633c  a\n");
	assert_int_equal(r.err[0], '\0');
	sxt_run_free(&r);

	/* the default pattern is 0xcd; an empty file's md5; pread -v dumps */
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'md5' -c 'pwrite 8k 4k' -c 'pread -v 8190 4' "
		"-c 'create e' -c 'md5'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "221994040b14294bdf7fbc128e66633c  a\n");
	sxt_assert_has(r.out, "00001ffe:  61 61 cd cd");
	sxt_assert_has(r.out, "aa..\n");
	sxt_assert_has(r.out, "d41d8cd98f00b204e9800998ecf8427e  e\n");
	sxt_run_free(&r);

	sxt_tool_run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
}

/* truncate, falloc, fpunch and bmap; k/m/g numbers. */
static void test_truncate_falloc_punch_bmap(void **state)
{
	struct sxt_run r;

	new_image();
	sxt_tool_run(&r, "io '%s' -c 'create b' -c 'pwrite -S 1 0 16k' -c 'fpunch 4k 4k' "
		"-c 'falloc 64k 8k' -c 'bmap' -c 'bmap -v' -c 'stat'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "b:\n");
	/* [0,4k) mapped, [4k,8k) a hole, [8k,16k) mapped, hole, [64k,72k) unwritten */
	sxt_assert_has(r.out, "\t1: [8..15]: hole\n");
	sxt_assert_has(r.out, "\t3: [32..127]: hole\n");
	sxt_assert_has(r.out, "[128..143]:");
	sxt_assert_has(r.out, " EXT: FILE-OFFSET      BLOCK-RANGE      TOTAL FLAGS\n");
	sxt_assert_has(r.out, "unwritten\n");
	sxt_assert_has(r.out, "stat.size = 73728\n");
	sxt_assert_has(r.out, "stat.blocks = 5\n");
	sxt_run_free(&r);

	/* unwritten blocks and punched holes read as zeroes */
	sxt_tool_run(&r, "io '%s' -c 'open b' -c 'pread -v 4094 4' -c 'pread -v 65536 16'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "00000ffe:  01 01 00 00");
	sxt_assert_has(r.out, "00010000:  00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
	sxt_run_free(&r);

	/* sizes with suffixes; truncate down frees */
	sxt_tool_run(&r, "io '%s' -c 'open b' -c 'truncate 1g' -c 'stat' -c 'truncate 2k' -c 'stat' "
		"-c 'bmap'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "stat.size = 1073741824\n");
	sxt_assert_has(r.out, "stat.size = 2048\n");
	sxt_assert_has(r.out, "stat.blocks = 1\n");
	sxt_assert_has(r.out, "\t0: [0..7]: ");
	sxt_run_free(&r);

	sxt_tool_run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
}

/* Names: tmpfile and link, rename, unlink, ls, close. */
static void test_names(void **state)
{
	struct sxt_run r;

	new_image();
	sxt_tool_run(&r, "io '%s' -c 'tmpfile' -c 'pwrite 0 4k' -c 'link t' -c 'close' -c 'create u' "
		"-c 'rename u v' -c 'create w' -c 'unlink w' -c 'ls'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, " t\n");
	sxt_assert_has(r.out, " v\n");
	assert_null(strstr(r.out, " u\n"));
	assert_null(strstr(r.out, " w\n"));
	sxt_run_free(&r);
	sxt_tool_run(&r, "io '%s' -c 'open t' -c 'md5' -c 'stat'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "5fed275e7617a806f94c173746a2a723  t\n");
	sxt_assert_has(r.out, "stat.nlink = 1\n");
	sxt_run_free(&r);
	/* an unnamed tmpfile is gone after the run */
	sxt_tool_run(&r, "io '%s' -c 'tmpfile' -c 'pwrite 0 64k' -c 'ls'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
	sxt_tool_run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
}

/* clone and clonerange share blocks; the data stays each file's own. */
static void test_clone(void **state)
{
	struct sxt_run r;

	new_image();
	sxt_tool_run(&r, "io '%s' -c 'create s' -c 'pwrite -S 0x61 0 12k' -c 'create d' -c 'clone s' "
		"-c 'md5' -c 'bmap -v' -c 'create e' -c 'clonerange s 4k 8k 4k' -c 'stat' "
		"-c 'pwrite -S 0x62 8k 4k' -c 'open s' -c 'md5'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "91f5cfcb9dbcf528249c52d12e1731d5  d\n");
	sxt_assert_has(r.out, "shared\n");
	sxt_assert_has(r.out, "stat.size = 12288\n");
	sxt_assert_has(r.out, "stat.flags = reflink\n");
	/* s is unchanged by the write to its clone e */
	sxt_assert_has(r.out, "91f5cfcb9dbcf528249c52d12e1731d5  s\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
}

/* The first failing command stops the run with status 1. */
static void test_errors(void **state)
{
	struct sxt_run r;

	new_image();
	sxt_tool_run(&r, "io '%s' -c 'open nope' -c 'ls'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: open: No such file or directory\n");
	assert_string_equal(r.out, "");		/* ls did not run */
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'pwrite 0 4k'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: Bad file descriptor\n");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'create x' -c 'pwrite 0 12q'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: Invalid argument\n");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'create x'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: create: File exists\n");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'open x' -c 'truncate 8p'", image);
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "swapext: truncate: ");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'open x' -c 'pwrite 4503599627370496 1'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: File too large\n");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'open x' -c 'pwrite 0 64m'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: No space left on device\n");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'bogus'", image);
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "bogus");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'pread 1'", image);
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "usage: pread [-v] OFF LEN");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s'/missing.img -c ls", sxt_tool_dir());
	assert_int_equal(r.status, 1);
	sxt_run_free(&r);

	sxt_tool_run(&r, "io");
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "usage: swapext io IMAGE -c CMD [-c CMD]...");
	sxt_run_free(&r);

	/* after all that, the image is still sound */
	sxt_tool_run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
}

/*
 * shutdown stops I/O without flushing the log: a second run recovers the
 * state as of the last fsync (a new block written after it is not mapped,
 * a truncate after it never happened).
 */
static void test_shutdown_recovery(void **state)
{
	struct sxt_run r;

	new_image();
	sxt_tool_run(&r, "io '%s' -c 'create s' -c 'pwrite -S 0x61 0 8k' -c 'fsync' "
		"-c 'pwrite -S 0x62 8k 4k' -c 'truncate 4k' -c 'create gone' -c 'stat' "
		"-c 'shutdown'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "stat.size = 0\n");	/* gone's stat */
	sxt_run_free(&r);

	sxt_tool_run(&r, "info '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "needs recovery");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'open s' -c 'stat' -c 'md5' -c 'ls'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "stat.size = 8192\n");
	sxt_assert_has(r.out, "221994040b14294bdf7fbc128e66633c  s\n");
	assert_null(strstr(r.out, " gone\n"));
	sxt_run_free(&r);

	sxt_tool_run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);

	/* commands after a shutdown fail with an I/O error; the unmount says why */
	sxt_tool_run(&r, "io '%s' -c 'open s' -c 'shutdown' -c 'pwrite 0 4k'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: Input/output error\n"
			    "swapext(io): unmount of a shut-down filesystem (error -5): "
			    "shut down by sx_shutdown()\n");
	sxt_run_free(&r);
}

/* A fresh 32 MiB image with 4 KiB blocks and the atomic_swap feature. */
static void new_atomic_image(void)
{
	struct sxt_run r;

	unlink(image);
	sxt_tool_run(&r, "mkfs -b 4k -s 32m -O atomic_swap '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
}

/* `check IMAGE` passes. */
static void assert_check_ok(void)
{
	struct sxt_run r;

	sxt_tool_run(&r, "check '%s'", image);
	if (r.status != 0)
		fail_msg("check failed:\n%s%s", r.out, r.err);
	sxt_run_free(&r);
}

/*
 * awrite and awritev: the bytes and sizes (md5 of what the ranges leave),
 * a file grown by a range, a shutdown right after them (durable: the next
 * run recovers them), and the errors: overlapping ranges, an unknown
 * name, a bad range, no atomic_swap feature.
 */
static void test_atomic_write(void **state)
{
	struct sxt_run r;

	new_atomic_image();
	sxt_tool_run(&r, "io '%s' -c 'create a' -c 'pwrite -S 0x61 0 8k' "
		"-c 'awrite -S 0x62 100 5000' -c 'create b' "
		"-c 'awritev a:8000:300:0x63 b:10:20 a:0:1' -c 'md5' -c 'stat' -c 'shutdown'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "atomically wrote 5000 bytes at offset 100\n");
	sxt_assert_has(r.out, "atomically wrote 3 ranges\n");
	sxt_assert_has(r.out, "b59582f17f2acb0b48412fc9c1806548  b\n");
	sxt_assert_has(r.out, "stat.size = 30\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'md5' -c 'stat' -c 'awrite -n 0 0' "
		"-c 'awrite -n -S 1 8300 1'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "cab6af80771f200d3f8d233be2c0f4f6  a\n");
	sxt_assert_has(r.out, "stat.size = 8300\n");
	sxt_assert_has(r.out, "atomically wrote 1 bytes at offset 8300\n");
	sxt_run_free(&r);

	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'awritev a:0:10 a:5:10'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: awritev: Invalid argument\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'awritev nosuch:0:10'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: awritev: No such file or directory\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'awritev a:0'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: awritev: Invalid argument\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'awrite -x 0 1'", image);
	assert_int_equal(r.status, 1);
	sxt_run_free(&r);
	assert_check_ok();

	new_image();
	sxt_tool_run(&r, "io '%s' -c 'create a' -c 'awrite 0 10'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: awrite: Operation not supported\n");
	sxt_run_free(&r);
}

/*
 * startupdate, writes and a truncate to the clone, commitupdate: the file
 * gets the new contents and size; before the commit it is unchanged and
 * the clone is a nameless file; the next run sees the update.
 */
static void test_update_commit(void **state)
{
	struct sxt_run r;

	new_atomic_image();
	sxt_tool_run(&r, "io '%s' -c 'create a' -c 'pwrite -S 0x61 0 16k' -c 'startupdate' "
		"-c 'pwrite -S 0x62 4k 4k' -c 'truncate 20000' -c 'md5' -c 'stat' "
		"-c 'open a' -c 'md5' -c 'close' -c 'commitupdate' -c 'md5' -c 'stat' -c 'ls'",
	    image);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err[0], '\0');
	sxt_assert_has(r.out, "5fdcd74a0264cf222c083cf049d903af  a (update)\n");
	sxt_assert_has(r.out, "fd.path = \"a (update)\"\nstat.ino");
	sxt_assert_has(r.out, "stat.nlink = 0\n");
	/* the original, opened again while the update is open: still the old data */
	sxt_assert_has(r.out, "09b47cf07c9d0ea589e0e2aa7d0d3550  a\n");
	/* after the commit the current file is the original, with the new data */
	sxt_assert_has(r.out, "5fdcd74a0264cf222c083cf049d903af  a\nfd.path = \"a\"\n");
	sxt_assert_has(r.out, "stat.size = 20000\n");
	assert_null(strstr(r.out, "(update)\"\nstat.ino = 1029"));
	sxt_run_free(&r);

	/* a shrinking update, and the result persists */
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'startupdate' -c 'truncate 6000' -c 'commitupdate' "
		"-c 'stat'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "stat.size = 6000\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'md5' -c 'ls'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "96a7a21a159d8694116eb94ca2d0d03d  a\n");
	assert_string_equal(strstr(r.out, "\n") + 1, "1029 a\n");	/* no other file */
	sxt_run_free(&r);
	assert_check_ok();
}

/*
 * A change to the original after startupdate: commitupdate fails with
 * EBUSY and the original keeps that change and nothing of the clone's.
 */
static void test_update_busy(void **state)
{
	struct sxt_run r;

	new_atomic_image();
	sxt_tool_run(&r, "io '%s' -c 'create a' -c 'pwrite -S 0x61 0 16k' -c 'startupdate' "
		"-c 'pwrite -S 0x63 0 16k' -c 'open a' -c 'pwrite -S 0x62 4k 4k' "
		"-c 'truncate 20000' -c 'commitupdate' -c 'ls'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: commitupdate: Device or resource busy\n");
	assert_null(strstr(r.out, "1029 a"));		/* ls did not run */
	sxt_run_free(&r);
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'md5'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "5fdcd74a0264cf222c083cf049d903af  a\n");
	sxt_run_free(&r);
	/* the clone was freed at the end of the run: nothing leaked */
	assert_check_ok();

	/* a clone into the original is a change too */
	sxt_tool_run(&r, "io '%s' -c 'create s' -c 'pwrite -S 0x64 0 4k' -c 'open a' -c 'startupdate' "
		"-c 'open a' -c 'clonerange s 0 0 4k' -c 'commitupdate'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: commitupdate: Device or resource busy\n");
	sxt_run_free(&r);
	assert_check_ok();
}

/* cancelupdate: the original as it was, the clone gone. */
static void test_update_cancel(void **state)
{
	struct sxt_run r;

	new_atomic_image();
	sxt_tool_run(&r, "io '%s' -c 'create a' -c 'pwrite -S 0x61 0 16k' -c 'startupdate' "
		"-c 'pwrite -S 0x62 0 64k' -c 'cancelupdate' -c 'md5' -c 'stat'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "09b47cf07c9d0ea589e0e2aa7d0d3550  a\n");
	sxt_assert_has(r.out, "fd.path = \"a\"\n");
	sxt_assert_has(r.out, "stat.size = 16384\n");
	sxt_assert_has(r.out, "stat.blocks = 4\n");
	sxt_run_free(&r);
	assert_check_ok();
}

/* The update commands' errors, each stopping the run with status 1. */
static void test_update_errors(void **state)
{
	static const struct {
		const char *cmds, *err;
	} cases[] = {
		{ "-c 'commitupdate'", "swapext: commitupdate: Invalid argument\n" },
		{ "-c 'cancelupdate'", "swapext: cancelupdate: Invalid argument\n" },
		{ "-c 'startupdate'", "swapext: startupdate: Bad file descriptor\n" },
		{ "-c 'open a' -c 'startupdate' -c 'startupdate'",
		  "swapext: startupdate: Device or resource busy\n" },
		{ "-c 'open a' -c 'startupdate' -c 'close'",
		  "swapext: close: Device or resource busy\n" },
		{ "-c 'open a' -c 'startupdate' -c 'open a' -c 'close' -c 'close'",
		  "swapext: close: Device or resource busy\n" },
		{ "-c 'open a' -c 'startupdate' -c 'commitupdate -x'",
		  "swapext: commitupdate: Invalid argument\n" },
		{ "-c 'open a' -c 'startupdate' -c 'commitupdate -n -n'",
		  "swapext: commitupdate: usage: commitupdate [-n]\n" },
		{ "-c 'open a' -c 'startupdate' -c 'commitupdate' -c 'commitupdate'",
		  "swapext: commitupdate: Invalid argument\n" },
	};
	struct sxt_run r;
	size_t i;

	new_image();		/* no atomic_swap: commitupdate needs -n */
	sxt_tool_run(&r, "io '%s' -c 'create a' -c 'pwrite -S 0x61 0 16k'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *cmds = cases[i].cmds;
		char fixed[512];

		/* a plain commit needs atomic_swap; -n does not */
		if (strstr(cmds, "-c 'commitupdate' -c 'commitupdate'")) {
			snprintf(fixed, sizeof(fixed), "-c 'open a' -c 'startupdate' "
				 "-c 'commitupdate -n' -c 'commitupdate -n'");
			cmds = fixed;
		}
		sxt_tool_run(&r, "io '%s' %s", image, cmds);
		assert_int_equal(r.status, 1);
		if (strcmp(r.err, cases[i].err))
			fail_msg("%s: expected \"%s\", got \"%s\"", cmds, cases[i].err, r.err);
		sxt_run_free(&r);
	}
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'startupdate' -c 'pwrite -S 0x62 0 4k' "
		"-c 'commitupdate'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: commitupdate: Operation not supported\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'md5' -c 'startupdate' -c 'pwrite -S 0x62 4k 4k' "
		"-c 'truncate 20000' -c 'commitupdate -n' -c 'md5'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "09b47cf07c9d0ea589e0e2aa7d0d3550  a\n");
	sxt_assert_has(r.out, "5fdcd74a0264cf222c083cf049d903af  a\n");
	sxt_run_free(&r);
	assert_check_ok();
}

/* The digest md5 printed for @name in @out, or "" (a static buffer). */
static const char *md5_in(const char *out, const char *name)
{
	static char d[2][33];
	static int k;
	char pat[64];
	const char *p;

	k ^= 1;
	d[k][0] = '\0';
	snprintf(pat, sizeof(pat), "  %s\n", name);
	for (p = strstr(out, pat); p; p = strstr(p + 1, pat))
		if (p - out >= 32 && (p - out == 32 || p[-33] == '\n')) {
			memcpy(d[k], p - 32, 32);
			d[k][32] = '\0';
		}
	return d[k];
}

/*
 * swaprange -x N: the power is cut after the N-th device write of an
 * atomic swap of two fragmented files (64 extents each, every block its
 * own byte).  The next run's mount recovers the log: both files are all
 * old or all new, and the image checks clean, at cut points spread over
 * the whole swap.
 */
static void test_swaprange_cut(void **state)
{
	char cmds[8192], base[1200], cmd[2600];
	char old_a[33], old_b[33];
	const char *p;
	struct sxt_run r;
	unsigned long total, n, step, nold = 0, nnew = 0;
	size_t len = 0;
	int i;

	new_atomic_image();
	sxt_tool_run(&r, "io '%s' -c 'create a' -c 'create b'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
	/* blocks of a and b alternate on the device: 64 extents each */
	for (i = 0; i < 64; i++) {
		len += snprintf(cmds + len, sizeof(cmds) - len,
				" -c 'open a' -c 'pwrite -S %d %dk 4k' -c 'close'"
				" -c 'open b' -c 'pwrite -S %d %dk 4k' -c 'close'",
				i + 1, 4 * i, 128 + i, 4 * i);
		if (i % 8 == 7) {
			sxt_tool_run(&r, "io '%s' %s", image, cmds);
			assert_int_equal(r.status, 0);
			sxt_run_free(&r);
			len = 0;
		}
	}
	sxt_tool_run(&r, "io '%s' -c 'open a' -c 'md5' -c 'bmap' -c 'open b' -c 'md5'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "\t63: [504..511]: ");
	snprintf(old_a, sizeof(old_a), "%s", md5_in(r.out, "a"));
	snprintf(old_b, sizeof(old_b), "%s", md5_in(r.out, "b"));
	assert_int_equal(strlen(old_a), 32);
	assert_true(strcmp(old_a, old_b) != 0);
	sxt_run_free(&r);
	snprintf(base, sizeof(base), "%s.base", image);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", image, base);
	assert_int_equal(system(cmd), 0);

	/* how many writes the whole swap takes (the cut comes after it) */
	sxt_tool_run(&r, "io '%s' -c 'open b' -c 'swaprange -x 1000000 a'", image);
	assert_int_equal(r.status, 0);
	p = strstr(r.out, "swaprange: done in ");
	assert_non_null(p);
	total = strtoul(p + strlen("swaprange: done in "), NULL, 10);
	assert_true(total > 1);
	sxt_run_free(&r);

	/* the last cut comes after the swap's last write: nothing is lost */
	step = total > 40 ? total / 40 : 1;
	for (n = 1; n <= total; n = (n < total && n + step > total) ? total : n + step) {
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", base, image);
		assert_int_equal(system(cmd), 0);
		sxt_tool_run(&r, "io '%s' -c 'open b' -c 'swaprange -x %lu a' -c 'stat'", image, n);
		sxt_assert_has(r.out, "swaprange: power cut after write");
		/* the device is dead: the command after the cut fails */
		assert_int_equal(r.status, 1);
		sxt_assert_has(r.err, "swapext: stat: Input/output error\n");
		assert_null(strstr(r.out, "stat.size"));
		sxt_run_free(&r);
		sxt_tool_run(&r, "io '%s' -c 'open a' -c 'md5' -c 'open b' -c 'md5'", image);
		assert_int_equal(r.status, 0);
		if (!strcmp(md5_in(r.out, "a"), old_a) && !strcmp(md5_in(r.out, "b"), old_b))
			nold++;
		else if (!strcmp(md5_in(r.out, "a"), old_b) && !strcmp(md5_in(r.out, "b"), old_a))
			nnew++;
		else
			fail_msg("cut after write %lu of %lu: a %s, b %s: neither old nor new",
				 n, total, md5_in(r.out, "a"), md5_in(r.out, "b"));
		sxt_run_free(&r);
		assert_check_ok();
	}
	if (getenv("SX_TEST_VERBOSE"))
		fprintf(stderr, "swap of %lu writes: %lu cuts old, %lu new\n", total, nold, nnew);
	/* a cut at the first write loses the swap; one after the last keeps it */
	assert_true(nold > 0 && nnew > 0);
	unlink(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read_stat_md5),
		cmocka_unit_test(test_truncate_falloc_punch_bmap),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_clone),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_shutdown_recovery),
		cmocka_unit_test(test_update_commit),
		cmocka_unit_test(test_update_busy),
		cmocka_unit_test(test_atomic_write),
		cmocka_unit_test(test_update_cancel),
		cmocka_unit_test(test_update_errors),
		cmocka_unit_test(test_swaprange_cut),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
