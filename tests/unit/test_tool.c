// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The swapext tool, run as a program ($SX_TOOL, else build/swapext): exit
 * statuses, what each subcommand prints, error and usage messages, and the
 * demo end to end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "sxtool.h"
#include "sxtest.h"

#define MIB		(1ull << 20)

/* Skip unless the tool has been built. */
static int setup(void **state)
{
	return sxt_tool_setup("tool");
}

/* Remove the scratch directory. */
static int teardown(void **state)
{
	return sxt_tool_teardown();
}

/* mkfs with every option, then info, check and logprint of the result. */
static void test_mkfs_info_check_logprint(void **state)
{
	struct sxt_run r;
	struct stat st;

	/* a log too small for the largest transaction: refused, the smallest named */
	sxt_tool_run(&r, "mkfs -b 1k -s 16m -l 256k '%s'", sxt_path("a.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "a log of 262144 bytes is too small for the largest transaction"));
	assert_non_null(strstr(r.err, "the smallest log is 770048 bytes (-l 752k)"));
	sxt_run_free(&r);

	sxt_tool_run(&r, "mkfs -b 1k -s 16m -l 1m -L mylabel -O atomic_swap '%s'", sxt_path("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "16384 blocks of 1024 bytes (16.0 MiB), log 1024 blocks"));
	sxt_run_free(&r);
	assert_int_equal(stat(sxt_path("a.img"), &st), 0);
	assert_int_equal(st.st_size, 16 * MIB);

	sxt_tool_run(&r, "info '%s'", sxt_path("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "label:              mylabel"));
	assert_non_null(strstr(r.out, "block size:         1024 bytes"));
	assert_non_null(strstr(r.out, "size:               16384 blocks (16.0 MiB)"));
	assert_non_null(strstr(r.out, "log:                blocks 2..1025 (1024 blocks"));
	assert_non_null(strstr(r.out, "features log:       atomic_swap"));
	assert_non_null(strstr(r.out, "features incompat:  none"));
	assert_non_null(strstr(r.out, "log state:          clean"));
	assert_null(strstr(r.out, "needs recovery"));
	sxt_run_free(&r);

	sxt_tool_run(&r, "check '%s'", sxt_path("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "no problems found"));
	assert_non_null(strstr(r.out, "(atomic_swap)"));
	sxt_run_free(&r);

	sxt_tool_run(&r, "logprint '%s'", sxt_path("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "the log is clean"));
	assert_non_null(strstr(r.out, "log_incompat 0x1 (atomic_swap)"));
	sxt_run_free(&r);

	/* a new file with no size gets 256 MiB (sparse) */
	sxt_tool_run(&r, "mkfs '%s'", sxt_path("b.img"));
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
	assert_int_equal(stat(sxt_path("b.img"), &st), 0);
	assert_int_equal(st.st_size, 256 * MIB);
	/* an existing image keeps its size */
	sxt_tool_run(&r, "mkfs -b 4096 '%s'", sxt_path("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "4096 blocks of 4096 bytes (16.0 MiB)"));
	sxt_run_free(&r);
	unlink(sxt_path("b.img"));
}

/* A log that needs recovery shows in info, check and logprint. */
static void test_dirty_image(void **state)
{
	struct sx_bdev *bd;
	struct sx_mount *mp;
	struct sx_trans *tp;
	struct sxt_run r;
	u64 bno;
	u32 len;

	sxt_tool_run(&r, "mkfs -s 8m '%s'", sxt_path("d.img"));
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
	assert_int_equal(sx_filedev_open(sxt_path("d.img"), 0, 0, &bd), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	/* a change that leaves no block owned by nothing: allocate and free again */
	assert_int_equal(sx_alloc_extent(tp, 0, 1, 5, &bno, &len), 0);
	assert_int_equal(sx_free_extent(tp, bno, len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_shutdown(mp);
	assert_int_equal(sx_unmount(mp), -EIO);
	sx_bdev_destroy(bd);

	sxt_tool_run(&r, "info '%s'", sxt_path("d.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "log needs recovery"));
	sxt_run_free(&r);

	sxt_tool_run(&r, "check '%s'", sxt_path("d.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "problem: log needs recovery: 1 valid records"));
	assert_non_null(strstr(r.err, "swapext: check: "));
	assert_non_null(strstr(r.err, "1 problem found"));
	sxt_run_free(&r);

	sxt_tool_run(&r, "logprint '%s'", sxt_path("d.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "record 1/0: device block 2,"));
	assert_non_null(strstr(r.out, "BUF (0x01)"));
	assert_non_null(strstr(r.out, "the log needs recovery"));
	sxt_run_free(&r);

	/* a read-write mount recovers it; then it is clean */
	assert_int_equal(sx_filedev_open(sxt_path("d.img"), 0, 0, &bd), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
	sxt_tool_run(&r, "check '%s'", sxt_path("d.img"));
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
	unlink(sxt_path("d.img"));
}

/* Errors: "swapext: WHAT: strerror", exit 1; usage errors print a usage line. */
static void test_errors_and_usage(void **state)
{
	static const char *const usage_cases[] = {
		"", "frobnicate", "mkfs", "mkfs -b 3000 x.img", "mkfs -s 12q x.img",
		"mkfs -O nosuch x.img", "mkfs -Z x.img", "mkfs a b", "info", "info a b",
		"check", "check -x img", "logprint", "demo -S notanumber", "demo a b", "demo -x",
		"demo -j a b",
	};
	struct sxt_run r;
	size_t i;
	FILE *f;

	for (i = 0; i < ARRAY_SIZE(usage_cases); i++) {
		sxt_tool_run(&r, "%s", usage_cases[i]);
		assert_int_equal(r.status, 1);
		assert_non_null(strstr(r.err, "usage: swapext"));
		sxt_run_free(&r);
	}

	sxt_tool_run(&r, "info '%s'", sxt_path("missing.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: info: cannot open"));
	assert_non_null(strstr(r.err, ": No such file or directory"));
	sxt_run_free(&r);

	/* a file of garbage: a clear error, no crash */
	f = fopen(sxt_path("junk.img"), "w");
	assert_non_null(f);
	for (i = 0; i < MIB; i++)
		fputc((int)((i * 2654435761u) >> 13) & 0xff, f);
	fclose(f);
	sxt_tool_run(&r, "info '%s'", sxt_path("junk.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: info: cannot mount"));
	sxt_run_free(&r);
	sxt_tool_run(&r, "logprint '%s'", sxt_path("junk.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: logprint: "));
	sxt_run_free(&r);
	sxt_tool_run(&r, "check '%s'", sxt_path("junk.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "no valid superblock"));
	sxt_run_free(&r);

	/* too small for a filesystem */
	sxt_tool_run(&r, "mkfs -s 64k '%s'", sxt_path("tiny.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: mkfs: "));
	assert_non_null(strstr(r.err, "Invalid argument"));
	sxt_run_free(&r);

	sxt_tool_run(&r, "--help");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "swapext demo"));
	sxt_run_free(&r);
}

/*
 * The default demo, the swap headline: the atomic update commits, the
 * stale one gets EBUSY, no block leaks; the large swap is cut in the middle
 * and recovery finishes it; every block verified, the checker clean.  The
 * image it leaves passes the full checker.
 */
static void test_demo_swap(void **state)
{
	static const char *const seeds[] = { "", "-S 1" };
	static const char *const lines[] = {
		"swapext demo: the atomic swap; image ",
		"feature atomic_swap",
		"Part 1: an atomic update of part of a file",
		"1.2 sx_update_start: ",
		"block 16: \"report block 16, version 2\"",
		"block 24: \"report block 24, version 1\"",
		"verified: all 64 blocks read back, 16..23 are version 2, the rest version 1; ",
		"sx_update_commit: Device or resource busy (the report changed since the update started)",
		"verified: the report is untouched by the refused commit",
		"part 1 verified: the update committed, the stale one was refused, no block leaked, the checker is clean",
		"Part 2: a large atomic swap cut short by a power loss, finished by recovery",
		"wrote 43000 tagged blocks in ",
		"2.2 dry run on a copy of the image in memory: ",
		" flushes; writes not yet flushed are torn",
		"the swap returned: Input/output error",
		"    recovery: ",
		"big-a: all new: 25200 blocks read, each as expected (21000 of data, 4200 holes); size 25804800 bytes (before the swap: 27033600)",
		"big-b: all new: 26400 blocks read, each as expected (22000 of data, 4400 holes); size 27033600 bytes (before the swap: 25804800)",
		"verified: both files hold all of the other's old data and size: recovery finished the swap",
		"Log recovery found the swap's unfinished intent and finished it",
		"  swapext logprint ",
		"  swapext check ",
		"  swapext io ",
		"Result: PASS",
	};
	unsigned long long cut, nth, writes, fl, nfl;
	unsigned int ext[2];
	struct sxt_run r;
	size_t i, j;
	const char *p;
	int checks;

	for (i = 0; i < ARRAY_SIZE(seeds); i++) {
		sxt_tool_run(&r, "demo %s '%s'", seeds[i], sxt_path("demo.img"));
		assert_int_equal(r.status, 0);
		for (j = 0; j < ARRAY_SIZE(lines); j++) {
			if (!strstr(r.out, lines[j]))
				fail_msg("demo %s: no \"%s\" in:\n%s", seeds[i], lines[j], r.out);
		}
		/* both files are fragmented: 20,000 extents or more each */
		p = strstr(r.out, "big-a has ");
		assert_non_null(p);
		assert_int_equal(sscanf(p, "big-a has %u extents in 26400 blocks, big-b %u extents in 25200 blocks",
					&ext[0], &ext[1]), 2);
		assert_true(ext[0] >= 20000 && ext[1] >= 20000);
		/* the cut write lies inside the swap, between two of its flushes */
		p = strstr(r.out, "power cut armed at device write ");
		assert_non_null(p);
		assert_int_equal(sscanf(p, "power cut armed at device write %llu: write %llu of the swap's %llu, after %llu of its %llu flushes",
					&cut, &nth, &writes, &fl, &nfl), 5);
		assert_true(writes >= 4 && nth >= 1 && nth <= writes && cut >= nth);
		assert_true(fl >= 1 && fl < nfl);
		/* recovery finished an intent: the cut was inside the swap */
		p = strstr(r.out, "    recovery: ");
		assert_non_null(p);
		assert_null(strstr(p, "; 0 unfinished intents finished"));
		/* the checker ran after each part and found nothing */
		for (checks = 0, p = r.out; (p = strstr(p, "note: check done: 0 problems")); p++)
			checks++;
		assert_int_equal(checks, 2);
		assert_null(strstr(r.out, "problem:"));
		sxt_run_free(&r);
	}
	/* both parts' files stay on the image, and the full checker passes */
	sxt_tool_run(&r, "check '%s'", sxt_path("demo.img"));
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
	sxt_tool_run(&r, "io '%s' -c 'open report' -c stat -c 'open big-a' -c stat", sxt_path("demo.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "stat.size = 65536"));
	assert_non_null(strstr(r.out, "stat.size = 25804800"));
	sxt_run_free(&r);
	unlink(sxt_path("demo.img"));

	/* an image it cannot write: exit 1 with the reason */
	sxt_tool_run(&r, "demo '%s/no/such/dir/demo.img'", sxt_tool_dir());
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: demo: "));
	assert_null(strstr(r.out, "Result: PASS"));
	sxt_run_free(&r);
}

/* The journal demo crashes, recovers, checks and passes, for a few seeds. */
static void test_demo_journal(void **state)
{
	static const char *const seeds[] = { "", "-S 1", "-S 17", "-S 0x2a" };
	struct sxt_run r;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(seeds); i++) {
		sxt_tool_run(&r, "demo -j %s '%s'", seeds[i], sxt_path("demo.img"));
		assert_int_equal(r.status, 0);
		assert_non_null(strstr(r.out, "swapext demo -j (the journal)"));
		assert_non_null(strstr(r.out, "What happened:"));
		assert_non_null(strstr(r.out, "power cut armed at device write"));
		assert_non_null(strstr(r.out, "recovery: "));
		assert_non_null(strstr(r.out, "the bitmap is exactly the state after transaction"));
		assert_non_null(strstr(r.out, "note: check done: 0 problems"));
		assert_non_null(strstr(r.out, "Result: PASS"));
		sxt_run_free(&r);
	}
	/*
	 * afterwards the image is clean in everything but block ownership: its
	 * allocator workload allocates below the file layer
	 */
	sxt_tool_run(&r, "check -s '%s'", sxt_path("demo.img"));
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
	unlink(sxt_path("demo.img"));
}

/* Run every tool test in a scratch directory. */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mkfs_info_check_logprint),
		cmocka_unit_test(test_dirty_image),
		cmocka_unit_test(test_errors_and_usage),
		cmocka_unit_test(test_demo_swap),
		cmocka_unit_test(test_demo_journal),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, setup, teardown);
}
