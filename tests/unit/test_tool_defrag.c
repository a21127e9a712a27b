// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `swapext defrag`, run as a program ($SX_TOOL, else build/swapext): files
 * made badly fragmented by interleaved writes (one with a hole, one shared
 * with a clone, one contiguous) come out in the fewest extents their holes
 * allow, most fragmented first; the md5 of every file is unchanged; the
 * shared and contiguous files are skipped and say why; -n and -t limit the
 * run; a second run finds nothing to do; `swapext check` is clean; bad
 * arguments and images fail with status 1 and a message.
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

/* Run "tool ARGS" with stdout and stderr captured (long io scripts fit). */
static void __attribute__((format(printf, 2, 3)))
run(struct run *r, const char *fmt, ...)
{
	static char args[65536], cmd[70000];
	char outp[1100], errp[1100];
	va_list ap;
	int st, n;

	va_start(ap, fmt);
	n = vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(args));
	snprintf(outp, sizeof(outp), "%s/out.txt", dir);
	snprintf(errp, sizeof(errp), "%s/err.txt", dir);
	snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s' </dev/null", tool, args, outp, errp);
	st = system(cmd);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r->out = slurp(outp);
	r->err = slurp(errp);
	if (getenv("SX_TEST_VERBOSE"))
		fprintf(stderr, "$ swapext %.200s -> %d\n%s%s", args, r->status, r->out, r->err);
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

#define assert_has(s, sub) do { \
	if (!strstr((s), (sub))) \
		fail_msg("expected \"%s\" in:\n%s", (sub), (s)); \
} while (0)

/* The md5 `io ... md5` printed for @name. */
static void md5_of(const char *name, char digest[33])
{
	char want[64];
	struct run r;
	const char *p;

	run(&r, "io '%s' -c 'open %s' -c md5", image, name);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "  %s\n", name);
	p = strstr(r.out, want);
	assert_non_null(p);
	assert_true(p - r.out >= 32);
	memcpy(digest, p - 32, 32);
	digest[32] = '\0';
	run_free(&r);
}

/* The mappings `io ... bmap` prints for @name (holes not counted). */
static int extents_of(const char *name)
{
	struct run r;
	const char *p;
	int n = 0;

	run(&r, "io '%s' -c 'open %s' -c bmap", image, name);
	assert_int_equal(r.status, 0);
	for (p = r.out; (p = strchr(p, '\t')) != NULL; p++) {
		const char *m = strstr(p, "]: ");

		if (m && strncmp(m, "]: hole", 7) != 0)
			n++;
	}
	run_free(&r);
	return n;
}

static const char *const names[] = { "a", "b", "c", "d", "e" };
#define NFILES	5

/*
 * A 64 MiB image of 4 KiB blocks: a, b (48 pieces of 8 KiB each) and c, d
 * (20 pieces) written in turn, so each piece is an extent of its own; a
 * then loses 8 pieces to a punched hole and grows past its last block (a
 * hole at EOF); e is a clone of c (both share every block); f is one
 * contiguous write.
 */
static void make_image(void)
{
	static char script[60000];
	struct run r;
	size_t len = 0;
	int i;

	unlink(image);
	run(&r, "mkfs -b 4k -s 64m '%s'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);

	len += (size_t)snprintf(script + len, sizeof(script) - len,
				"-c 'create a' -c close -c 'create b' -c close "
				"-c 'create c' -c close -c 'create d' -c close");
	for (i = 0; i < 48; i++) {
		len += (size_t)snprintf(script + len, sizeof(script) - len,
					" -c 'open a' -c 'pwrite -S %d %dk 8k' -c close"
					" -c 'open b' -c 'pwrite -S %d %dk 8k' -c close",
					i + 1, i * 8, i + 101, i * 8);
		if (i < 20)
			len += (size_t)snprintf(script + len, sizeof(script) - len,
						" -c 'open c' -c 'pwrite -S %d %dk 8k' -c close"
						" -c 'open d' -c 'pwrite -S %d %dk 8k' -c close",
						i + 51, i * 8, i + 151, i * 8);
		assert_true(len < sizeof(script));
	}
	len += (size_t)snprintf(script + len, sizeof(script) - len,
				" -c 'open a' -c 'fpunch 64k 64k' -c 'truncate 400000' -c close"
				" -c 'create e' -c 'clone c' -c close"
				" -c 'create f' -c 'pwrite -S 7 0 256k' -c close");
	assert_true(len < sizeof(script));
	run(&r, "io '%s' %s", image, script);
	assert_int_equal(r.status, 0);
	run_free(&r);
}

/* The whole run: extents drop, data stays, skips say why, check is clean. */
static void test_defrag(void **state)
{
	char before[NFILES + 1][33], after[33];
	struct run r;
	int i;

	make_image();
	for (i = 0; i < NFILES; i++)
		md5_of(names[i], before[i]);
	md5_of("f", before[NFILES]);
	/* the layout the interleaving made (a: its hole took 8 pieces) */
	assert_int_equal(extents_of("a"), 40);
	assert_int_equal(extents_of("b"), 48);
	assert_int_equal(extents_of("c"), 20);
	assert_int_equal(extents_of("d"), 20);
	assert_int_equal(extents_of("f"), 1);

	run(&r, "defrag '%s'", image);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	assert_has(r.out, "b: 48 -> 1 extents\n");
	assert_has(r.out, "a: 40 -> 2 extents\n");		/* before and after the hole */
	assert_has(r.out, "d: 20 -> 1 extents\n");
	assert_has(r.out, "c: 20 extents, skipped: shares blocks\n");
	assert_has(r.out, "e: 20 extents, skipped: shares blocks\n");
	/* most fragmented first */
	assert_true(strstr(r.out, "b: 48") < strstr(r.out, "a: 40"));
	assert_true(strstr(r.out, "a: 40") < strstr(r.out, "c: 20"));
	assert_true(strstr(r.out, "c: 20") < strstr(r.out, "d: 20"));
	assert_null(strstr(r.out, "f:"));			/* below the threshold */
	assert_has(r.out, "defrag: 6 files, 5 candidates: 3 defragmented (108 -> 4 extents), "
			  "2 skipped, 0 failed;");
	run_free(&r);

	for (i = 0; i < NFILES; i++) {
		md5_of(names[i], after);
		assert_string_equal(after, before[i]);
	}
	md5_of("f", after);
	assert_string_equal(after, before[NFILES]);
	assert_int_equal(extents_of("a"), 2);
	assert_int_equal(extents_of("b"), 1);
	assert_int_equal(extents_of("d"), 1);
	assert_int_equal(extents_of("c"), 20);
	run(&r, "io '%s' -c 'open a' -c stat", image);
	assert_has(r.out, "stat.size = 400000\n");
	run_free(&r);

	run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "no problems found");
	run_free(&r);

	/* again: only the shared files are candidates, and they stay */
	run(&r, "defrag '%s' -v", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "b: 1 extent, below the threshold\n");
	assert_has(r.out, "a: 2 extents, skipped: already contiguous [fewest possible 2, "
			  "0 bytes copied]\n");
	assert_has(r.out, "0 defragmented");
	run_free(&r);
}

/* -n takes the most fragmented files only; -t raises the bar. */
static void test_limits(void **state)
{
	struct run r;

	make_image();
	run(&r, "defrag -n 1 '%s'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "b: 48 -> 1 extents\n");
	assert_null(strstr(r.out, "a: "));
	assert_has(r.out, "5 candidates: 1 defragmented (48 -> 1 extents)");
	run_free(&r);
	assert_int_equal(extents_of("a"), 40);

	run(&r, "defrag '%s' -t 30", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "a: 40 -> 2 extents\n");
	assert_null(strstr(r.out, "d: "));
	assert_has(r.out, "1 candidates: 1 defragmented (40 -> 2 extents), 0 skipped");
	run_free(&r);
	assert_int_equal(extents_of("d"), 20);

	run(&r, "defrag -t 1000 '%s'", image);
	assert_int_equal(r.status, 0);
	assert_has(r.out, "0 candidates");
	run_free(&r);

	run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	run_free(&r);
}

/* Bad arguments and images. */
static void test_errors(void **state)
{
	char missing[1200];
	struct run r;

	make_image();
	run(&r, "defrag");
	assert_int_equal(r.status, 1);
	assert_has(r.err, "usage: swapext defrag IMAGE [-n MAXFILES] [-t THRESHOLD] [-v]");
	run_free(&r);
	run(&r, "defrag '%s' -n", image);
	assert_int_equal(r.status, 1);
	assert_has(r.err, "swapext: defrag: -n needs a count\n");
	run_free(&r);
	run(&r, "defrag '%s' -t many", image);
	assert_int_equal(r.status, 1);
	assert_has(r.err, "swapext: defrag: -t needs a count\n");
	run_free(&r);
	run(&r, "defrag '%s' -x", image);
	assert_int_equal(r.status, 1);
	assert_has(r.err, "swapext: defrag: unexpected argument '-x'\n");
	run_free(&r);
	run(&r, "defrag '%s' '%s'", image, image);
	assert_int_equal(r.status, 1);
	run_free(&r);
	snprintf(missing, sizeof(missing), "%s/none.img", dir);
	run(&r, "defrag '%s'", missing);
	assert_int_equal(r.status, 1);
	assert_has(r.err, "swapext: defrag: cannot open");
	run_free(&r);
	/* not a filesystem */
	{
		static char zeroes[65536];
		FILE *f = fopen(missing, "w");

		assert_non_null(f);
		assert_int_equal(fwrite(zeroes, 1, sizeof(zeroes), f), sizeof(zeroes));
		assert_int_equal(fclose(f), 0);
	}
	run(&r, "defrag '%s'", missing);
	assert_int_equal(r.status, 1);
	assert_has(r.err, "swapext: defrag: cannot mount");
	run_free(&r);
	/* nothing was touched by the failed runs */
	assert_int_equal(extents_of("b"), 48);
}

static int setup(void **state)
{
	const char *t = getenv("SX_TOOL"), *d = getenv("SX_TEST_TMPDIR");

	snprintf(tool, sizeof(tool), "%s", t && *t ? t : "build/swapext");
	if (access(tool, X_OK) != 0) {
		fprintf(stderr, "test_tool_defrag: %s is not built\n", tool);
		return -1;
	}
	if (!d || !*d)
		d = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/sx-defrag-XXXXXX", d && *d ? d : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(image, sizeof(image), "%s/defrag.img", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[1100];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defrag),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
