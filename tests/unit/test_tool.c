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
#include "sxtest.h"

#define MIB		(1ull << 20)

static char tool[1024];
static char dir[1024];

/* What one run of the tool did. */
struct run {
	int	status;		/* exit status, or -1 if it did not exit */
	char	*out;
	char	*err;
};

/* Read a whole file into a new string. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t cap = 4096, len = 0, n;
	char *buf = malloc(cap);

	assert_non_null(f);
	assert_non_null(buf);
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* Run "tool ARGS" with stdout and stderr captured. */
static void __attribute__((format(printf, 2, 3)))
run(struct run *r, const char *fmt, ...)
{
	char args[2048], cmd[8192], outp[1100], errp[1100];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(outp, sizeof(outp), "%s/out.txt", dir);
	snprintf(errp, sizeof(errp), "%s/err.txt", dir);
	snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s' </dev/null", tool, args, outp, errp);
	st = system(cmd);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r->out = slurp(outp);
	r->err = slurp(errp);
	if (getenv("SX_TEST_VERBOSE"))
		fprintf(stderr, "$ swapext %s -> %d\n%s%s", args, r->status, r->out, r->err);
}

/* Free what a run captured. */
static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* A path in the scratch directory. */
static const char *img(const char *name)
{
	static char path[1100];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

/* Skip unless the tool has been built. */
static int setup(void **state)
{
	const char *t = getenv("SX_TOOL"), *d = getenv("SX_TEST_TMPDIR");

	snprintf(tool, sizeof(tool), "%s", t && *t ? t : "build/swapext");
	if (access(tool, X_OK) != 0) {
		fprintf(stderr, "test_tool: %s is not built\n", tool);
		return -1;
	}
	if (!d || !*d)
		d = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/sx-tool-XXXXXX", d && *d ? d : "/tmp");
	assert_non_null(mkdtemp(dir));
	return 0;
}

/* Remove the scratch directory. */
static int teardown(void **state)
{
	char cmd[1100];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* mkfs with every option, then info, check and logprint of the result. */
static void test_mkfs_info_check_logprint(void **state)
{
	struct run r;
	struct stat st;

	run(&r, "mkfs -b 1k -s 16m -l 256k -L mylabel -O atomic_swap '%s'", img("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "16384 blocks of 1024 bytes (16.0 MiB), log 256 blocks"));
	run_free(&r);
	assert_int_equal(stat(img("a.img"), &st), 0);
	assert_int_equal(st.st_size, 16 * MIB);

	run(&r, "info '%s'", img("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "label:              mylabel"));
	assert_non_null(strstr(r.out, "block size:         1024 bytes"));
	assert_non_null(strstr(r.out, "size:               16384 blocks (16.0 MiB)"));
	assert_non_null(strstr(r.out, "log:                blocks 2..257 (256 blocks"));
	assert_non_null(strstr(r.out, "features log:       atomic_swap"));
	assert_non_null(strstr(r.out, "features incompat:  none"));
	assert_non_null(strstr(r.out, "log state:          clean"));
	assert_null(strstr(r.out, "needs recovery"));
	run_free(&r);

	run(&r, "check '%s'", img("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "no problems found"));
	assert_non_null(strstr(r.out, "(atomic_swap)"));
	run_free(&r);

	run(&r, "logprint '%s'", img("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "the log is clean"));
	assert_non_null(strstr(r.out, "log_incompat 0x1 (atomic_swap)"));
	run_free(&r);

	/* a new file with no size gets 256 MiB (sparse) */
	run(&r, "mkfs '%s'", img("b.img"));
	assert_int_equal(r.status, 0);
	run_free(&r);
	assert_int_equal(stat(img("b.img"), &st), 0);
	assert_int_equal(st.st_size, 256 * MIB);
	/* an existing image keeps its size */
	run(&r, "mkfs -b 4096 '%s'", img("a.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "4096 blocks of 4096 bytes (16.0 MiB)"));
	run_free(&r);
	unlink(img("b.img"));
}

/* A log that needs recovery shows in info, check and logprint. */
static void test_dirty_image(void **state)
{
	struct sx_bdev *bd;
	struct sx_mount *mp;
	struct sx_trans *tp;
	struct run r;
	u64 bno;
	u32 len;

	run(&r, "mkfs -s 8m '%s'", img("d.img"));
	assert_int_equal(r.status, 0);
	run_free(&r);
	assert_int_equal(sx_filedev_open(img("d.img"), 0, 0, &bd), 0);
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

	run(&r, "info '%s'", img("d.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "log needs recovery"));
	run_free(&r);

	run(&r, "check '%s'", img("d.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "problem: log needs recovery: 1 valid records"));
	assert_non_null(strstr(r.err, "swapext: check: "));
	assert_non_null(strstr(r.err, "1 problem found"));
	run_free(&r);

	run(&r, "logprint '%s'", img("d.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "record 1/0: device block 2,"));
	assert_non_null(strstr(r.out, "BUF (0x01)"));
	assert_non_null(strstr(r.out, "the log needs recovery"));
	run_free(&r);

	/* a read-write mount recovers it; then it is clean */
	assert_int_equal(sx_filedev_open(img("d.img"), 0, 0, &bd), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
	run(&r, "check '%s'", img("d.img"));
	assert_int_equal(r.status, 0);
	run_free(&r);
	unlink(img("d.img"));
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
	struct run r;
	size_t i;
	FILE *f;

	for (i = 0; i < ARRAY_SIZE(usage_cases); i++) {
		run(&r, "%s", usage_cases[i]);
		assert_int_equal(r.status, 1);
		assert_non_null(strstr(r.err, "usage: swapext"));
		run_free(&r);
	}

	run(&r, "info '%s'", img("missing.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: info: cannot open"));
	assert_non_null(strstr(r.err, ": No such file or directory"));
	run_free(&r);

	/* a file of garbage: a clear error, no crash */
	f = fopen(img("junk.img"), "w");
	assert_non_null(f);
	for (i = 0; i < MIB; i++)
		fputc((int)((i * 2654435761u) >> 13) & 0xff, f);
	fclose(f);
	run(&r, "info '%s'", img("junk.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: info: cannot mount"));
	run_free(&r);
	run(&r, "logprint '%s'", img("junk.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: logprint: "));
	run_free(&r);
	run(&r, "check '%s'", img("junk.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "no valid superblock"));
	run_free(&r);

	/* too small for a filesystem */
	run(&r, "mkfs -s 64k '%s'", img("tiny.img"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: mkfs: "));
	assert_non_null(strstr(r.err, "Invalid argument"));
	run_free(&r);

	run(&r, "--help");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "swapext demo"));
	run_free(&r);
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
		"% into the swap's ",
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
	unsigned long long cut, writes;
	unsigned int ext[2], pct;
	struct run r;
	size_t i, j;
	const char *p;
	int checks;

	for (i = 0; i < ARRAY_SIZE(seeds); i++) {
		run(&r, "demo %s '%s'", seeds[i], img("demo.img"));
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
		/* the cut write lies inside the swap's writes, 40-60% in */
		p = strstr(r.out, "power cut armed at device write ");
		assert_non_null(p);
		assert_int_equal(sscanf(p, "power cut armed at device write %llu: %u%% into the swap's %llu writes",
					&cut, &pct, &writes), 3);
		assert_true(pct >= 40 && pct <= 60 && writes > 1000 && cut < writes);
		/* recovery finished an intent: the cut was inside the swap */
		p = strstr(r.out, "    recovery: ");
		assert_non_null(p);
		assert_null(strstr(p, "; 0 unfinished intents finished"));
		/* the checker ran after each part and found nothing */
		for (checks = 0, p = r.out; (p = strstr(p, "note: check done: 0 problems")); p++)
			checks++;
		assert_int_equal(checks, 2);
		assert_null(strstr(r.out, "problem:"));
		run_free(&r);
	}
	/* both parts' files stay on the image, and the full checker passes */
	run(&r, "check '%s'", img("demo.img"));
	assert_int_equal(r.status, 0);
	run_free(&r);
	run(&r, "io '%s' -c 'open report' -c stat -c 'open big-a' -c stat", img("demo.img"));
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "stat.size = 65536"));
	assert_non_null(strstr(r.out, "stat.size = 25804800"));
	run_free(&r);
	unlink(img("demo.img"));

	/* an image it cannot write: exit 1 with the reason */
	run(&r, "demo '%s/no/such/dir/demo.img'", dir);
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "swapext: demo: "));
	assert_null(strstr(r.out, "Result: PASS"));
	run_free(&r);
}

/* The journal demo crashes, recovers, checks and passes, for a few seeds. */
static void test_demo_journal(void **state)
{
	static const char *const seeds[] = { "", "-S 1", "-S 17", "-S 0x2a" };
	struct run r;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(seeds); i++) {
		run(&r, "demo -j %s '%s'", seeds[i], img("demo.img"));
		assert_int_equal(r.status, 0);
		assert_non_null(strstr(r.out, "swapext demo -j (the journal)"));
		assert_non_null(strstr(r.out, "What happened:"));
		assert_non_null(strstr(r.out, "power cut armed at device write"));
		assert_non_null(strstr(r.out, "recovery: "));
		assert_non_null(strstr(r.out, "the bitmap is exactly the state after transaction"));
		assert_non_null(strstr(r.out, "note: check done: 0 problems"));
		assert_non_null(strstr(r.out, "Result: PASS"));
		run_free(&r);
	}
	/*
	 * afterwards the image is clean in everything but block ownership: its
	 * allocator workload allocates below the file layer
	 */
	run(&r, "check -s '%s'", img("demo.img"));
	assert_int_equal(r.status, 0);
	run_free(&r);
	unlink(img("demo.img"));
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
