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

static char tool[1024];
static char dir[1024];
static char image[1100];

/* What one run of the tool did. */
struct run {
	int	status;
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
	char args[4096], cmd[8192], outp[1100], errp[1100];
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

/* Assert @s contains @sub, showing both if not. */
#define assert_has(s, sub) do { \
	if (!strstr((s), (sub))) \
		fail_msg("expected \"%s\" in:\n%s", (sub), (s)); \
} while (0)

/* A fresh 32 MiB image with 4 KiB blocks. */
static void new_image(void)
{
	struct run r;

	unlink(image);
	run(&r, "mkfs -b 4k -s 32m '%s'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);
}

/* Skip unless the tool has been built. */
static int setup(void **state)
{
	const char *t = getenv("SX_TOOL"), *d = getenv("SX_TEST_TMPDIR");

	snprintf(tool, sizeof(tool), "%s", t && *t ? t : "build/swapext");
	if (access(tool, X_OK) != 0) {
		fprintf(stderr, "test_tool_io: %s is not built\n", tool);
		return -1;
	}
	if (!d || !*d)
		d = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/sx-io-XXXXXX", d && *d ? d : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(image, sizeof(image), "%s/io.img", dir);
	return 0;
}

/* Remove the scratch directory. */
static int teardown(void **state)
{
	char cmd[1100];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* create, pwrite, pread, stat, md5, and the data after another run. */
static void test_write_read_stat_md5(void **state)
{
	struct run r;

	new_image();
	run(&r, "io '%s' -c 'create a' -c 'pwrite -S 0x61 0 8k' -c 'pread 0 8k' "
		"-c 'pread 4k 1m' -c 'stat' -c 'md5'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "wrote 8192/8192 bytes at offset 0\n");
	assert_has(r.out, "read 8192/8192 bytes at offset 0\n");
	assert_has(r.out, "read 4096/1048576 bytes at offset 4096\n");	/* short at EOF */
	assert_has(r.out, "fd.path = \"a\"\n");
	assert_has(r.out, "stat.size = 8192\n");
	assert_has(r.out, "stat.blocks = 2\n");
	assert_has(r.out, "stat.type = regular file\n");
	assert_has(r.out, "stat.mode = 0644\n");
	assert_has(r.out, "stat.nlink = 1\n");
	assert_has(r.out, "stat.blksize = 4096\n");
	assert_has(r.out, "221994040b14294bdf7fbc128e66633c  a\n");
	assert_int_equal(r.err[0], '\0');
	run_free(&r);

	/* the default pattern is 0xcd; an empty file's md5; pread -v dumps */
	run(&r, "io '%s' -c 'open a' -c 'md5' -c 'pwrite 8k 4k' -c 'pread -v 8190 4' "
		"-c 'create e' -c 'md5'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "221994040b14294bdf7fbc128e66633c  a\n");
	assert_has(r.out, "00001ffe:  61 61 cd cd");
	assert_has(r.out, "aa..\n");
	assert_has(r.out, "d41d8cd98f00b204e9800998ecf8427e  e\n");
	run_free(&r);

	run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);
}

/* truncate, falloc, fpunch and bmap; k/m/g numbers. */
static void test_truncate_falloc_punch_bmap(void **state)
{
	struct run r;

	new_image();
	run(&r, "io '%s' -c 'create b' -c 'pwrite -S 1 0 16k' -c 'fpunch 4k 4k' "
		"-c 'falloc 64k 8k' -c 'bmap' -c 'bmap -v' -c 'stat'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "b:\n");
	/* [0,4k) mapped, [4k,8k) a hole, [8k,16k) mapped, hole, [64k,72k) unwritten */
	assert_has(r.out, "\t1: [8..15]: hole\n");
	assert_has(r.out, "\t3: [32..127]: hole\n");
	assert_has(r.out, "[128..143]:");
	assert_has(r.out, " EXT: FILE-OFFSET      BLOCK-RANGE      TOTAL FLAGS\n");
	assert_has(r.out, "unwritten\n");
	assert_has(r.out, "stat.size = 73728\n");
	assert_has(r.out, "stat.blocks = 5\n");
	run_free(&r);

	/* unwritten blocks and punched holes read as zeroes */
	run(&r, "io '%s' -c 'open b' -c 'pread -v 4094 4' -c 'pread -v 65536 16'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "00000ffe:  01 01 00 00");
	assert_has(r.out, "00010000:  00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
	run_free(&r);

	/* sizes with suffixes; truncate down frees */
	run(&r, "io '%s' -c 'open b' -c 'truncate 1g' -c 'stat' -c 'truncate 2k' -c 'stat' "
		"-c 'bmap'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "stat.size = 1073741824\n");
	assert_has(r.out, "stat.size = 2048\n");
	assert_has(r.out, "stat.blocks = 1\n");
	assert_has(r.out, "\t0: [0..7]: ");
	run_free(&r);

	run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);
}

/* Names: tmpfile and link, rename, unlink, ls, close. */
static void test_names(void **state)
{
	struct run r;

	new_image();
	run(&r, "io '%s' -c 'tmpfile' -c 'pwrite 0 4k' -c 'link t' -c 'close' -c 'create u' "
		"-c 'rename u v' -c 'create w' -c 'unlink w' -c 'ls'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, " t\n");
	assert_has(r.out, " v\n");
	assert_null(strstr(r.out, " u\n"));
	assert_null(strstr(r.out, " w\n"));
	run_free(&r);
	run(&r, "io '%s' -c 'open t' -c 'md5' -c 'stat'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "5fed275e7617a806f94c173746a2a723  t\n");
	assert_has(r.out, "stat.nlink = 1\n");
	run_free(&r);
	/* an unnamed tmpfile is gone after the run */
	run(&r, "io '%s' -c 'tmpfile' -c 'pwrite 0 64k' -c 'ls'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);
	run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);
}

/* clone and clonerange share blocks; the data stays each file's own. */
static void test_clone(void **state)
{
	struct run r;

	new_image();
	run(&r, "io '%s' -c 'create s' -c 'pwrite -S 0x61 0 12k' -c 'create d' -c 'clone s' "
		"-c 'md5' -c 'bmap -v' -c 'create e' -c 'clonerange s 4k 8k 4k' -c 'stat' "
		"-c 'pwrite -S 0x62 8k 4k' -c 'open s' -c 'md5'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "91f5cfcb9dbcf528249c52d12e1731d5  d\n");
	assert_has(r.out, "shared\n");
	assert_has(r.out, "stat.size = 12288\n");
	assert_has(r.out, "stat.flags = reflink\n");
	/* s is unchanged by the write to its clone e */
	assert_has(r.out, "91f5cfcb9dbcf528249c52d12e1731d5  s\n");
	run_free(&r);
	run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);
}

/* The first failing command stops the run with status 1. */
static void test_errors(void **state)
{
	struct run r;

	new_image();
	run(&r, "io '%s' -c 'open nope' -c 'ls'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: open: No such file or directory\n");
	assert_string_equal(r.out, "");		/* ls did not run */
	run_free(&r);

	run(&r, "io '%s' -c 'pwrite 0 4k'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: Bad file descriptor\n");
	run_free(&r);

	run(&r, "io '%s' -c 'create x' -c 'pwrite 0 12q'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: Invalid argument\n");
	run_free(&r);

	run(&r, "io '%s' -c 'create x'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: create: File exists\n");
	run_free(&r);

	run(&r, "io '%s' -c 'open x' -c 'truncate 8p'", image);
	assert_int_equal(r.status, 1);
	assert_has(r.err, "swapext: truncate: ");
	run_free(&r);

	run(&r, "io '%s' -c 'open x' -c 'pwrite 4503599627370496 1'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: File too large\n");
	run_free(&r);

	run(&r, "io '%s' -c 'open x' -c 'pwrite 0 64m'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: No space left on device\n");
	run_free(&r);

	run(&r, "io '%s' -c 'bogus'", image);
	assert_int_equal(r.status, 1);
	assert_has(r.err, "bogus");
	run_free(&r);

	run(&r, "io '%s' -c 'pread 1'", image);
	assert_int_equal(r.status, 1);
	assert_has(r.err, "usage: pread [-v] OFF LEN");
	run_free(&r);

	run(&r, "io '%s'/missing.img -c ls", dir);
	assert_int_equal(r.status, 1);
	run_free(&r);

	run(&r, "io");
	assert_int_equal(r.status, 1);
	assert_has(r.err, "usage: swapext io IMAGE -c CMD [-c CMD]...");
	run_free(&r);

	/* after all that, the image is still sound */
	run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);
}

/*
 * shutdown stops I/O without flushing the log: a second run recovers the
 * state as of the last fsync (a new block written after it is not mapped,
 * a truncate after it never happened).
 */
static void test_shutdown_recovery(void **state)
{
	struct run r;

	new_image();
	run(&r, "io '%s' -c 'create s' -c 'pwrite -S 0x61 0 8k' -c 'fsync' "
		"-c 'pwrite -S 0x62 8k 4k' -c 'truncate 4k' -c 'create gone' -c 'stat' "
		"-c 'shutdown'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "stat.size = 0\n");	/* gone's stat */
	run_free(&r);

	run(&r, "info '%s'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "needs recovery");
	run_free(&r);

	run(&r, "io '%s' -c 'open s' -c 'stat' -c 'md5' -c 'ls'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "stat.size = 8192\n");
	assert_has(r.out, "221994040b14294bdf7fbc128e66633c  s\n");
	assert_null(strstr(r.out, " gone\n"));
	run_free(&r);

	run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);

	/* commands after a shutdown fail with an I/O error */
	run(&r, "io '%s' -c 'open s' -c 'shutdown' -c 'pwrite 0 4k'", image);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.err, "swapext: pwrite: Input/output error\n");
	run_free(&r);
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
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
