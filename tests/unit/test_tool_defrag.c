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
#include "sxtool.h"

static char image[1100];

/* The md5 `io ... md5` printed for @name. */
static void md5_of(const char *name, char digest[33])
{
	char want[64];
	struct sxt_run r;
	const char *p;

	sxt_tool_run(&r, "io '%s' -c 'open %s' -c md5", image, name);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "  %s\n", name);
	p = strstr(r.out, want);
	assert_non_null(p);
	assert_true(p - r.out >= 32);
	memcpy(digest, p - 32, 32);
	digest[32] = '\0';
	sxt_run_free(&r);
}

/* The mappings `io ... bmap` prints for @name (holes not counted). */
static int extents_of(const char *name)
{
	struct sxt_run r;
	const char *p;
	int n = 0;

	sxt_tool_run(&r, "io '%s' -c 'open %s' -c bmap", image, name);
	assert_int_equal(r.status, 0);
	for (p = r.out; (p = strchr(p, '\t')) != NULL; p++) {
		const char *m = strstr(p, "]: ");

		if (m && strncmp(m, "]: hole", 7) != 0)
			n++;
	}
	sxt_run_free(&r);
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
	struct sxt_run r;
	size_t len = 0;
	int i;

	unlink(image);
	sxt_tool_run(&r, "mkfs -b 4k -s 64m '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);

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
	sxt_tool_run(&r, "io '%s' %s", image, script);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
}

/* The whole run: extents drop, data stays, skips say why, check is clean. */
static void test_defrag(void **state)
{
	char before[NFILES + 1][33], after[33];
	struct sxt_run r;
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

	sxt_tool_run(&r, "defrag '%s'", image);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	sxt_assert_has(r.out, "b: 48 -> 1 extents\n");
	sxt_assert_has(r.out, "a: 40 -> 2 extents\n");		/* before and after the hole */
	sxt_assert_has(r.out, "d: 20 -> 1 extents\n");
	sxt_assert_has(r.out, "c: 20 extents, skipped: shares blocks\n");
	sxt_assert_has(r.out, "e: 20 extents, skipped: shares blocks\n");
	/* most fragmented first */
	assert_true(strstr(r.out, "b: 48") < strstr(r.out, "a: 40"));
	assert_true(strstr(r.out, "a: 40") < strstr(r.out, "c: 20"));
	assert_true(strstr(r.out, "c: 20") < strstr(r.out, "d: 20"));
	assert_null(strstr(r.out, "f:"));			/* below the threshold */
	sxt_assert_has(r.out, "defrag: 6 files, 5 candidates: 3 defragmented (108 -> 4 extents), "
			  "2 skipped, 0 failed;");
	sxt_run_free(&r);

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
	sxt_tool_run(&r, "io '%s' -c 'open a' -c stat", image);
	sxt_assert_has(r.out, "stat.size = 400000\n");
	sxt_run_free(&r);

	sxt_tool_run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "no problems found");
	sxt_run_free(&r);

	/* again: only the shared files are candidates, and they stay */
	sxt_tool_run(&r, "defrag '%s' -v", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "b: 1 extent, below the threshold\n");
	sxt_assert_has(r.out, "a: 2 extents, skipped: already contiguous [fewest possible 2, "
			  "0 bytes copied]\n");
	sxt_assert_has(r.out, "0 defragmented");
	sxt_run_free(&r);
}

/* -n takes the most fragmented files only; -t raises the bar. */
static void test_limits(void **state)
{
	struct sxt_run r;

	make_image();
	sxt_tool_run(&r, "defrag -n 1 '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "b: 48 -> 1 extents\n");
	assert_null(strstr(r.out, "a: "));
	sxt_assert_has(r.out, "5 candidates: 1 defragmented (48 -> 1 extents)");
	sxt_run_free(&r);
	assert_int_equal(extents_of("a"), 40);

	sxt_tool_run(&r, "defrag '%s' -t 30", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "a: 40 -> 2 extents\n");
	assert_null(strstr(r.out, "d: "));
	sxt_assert_has(r.out, "1 candidates: 1 defragmented (40 -> 2 extents), 0 skipped");
	sxt_run_free(&r);
	assert_int_equal(extents_of("d"), 20);

	sxt_tool_run(&r, "defrag -t 1000 '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_assert_has(r.out, "0 candidates");
	sxt_run_free(&r);

	sxt_tool_run(&r, "check '%s'", image);
	assert_int_equal(r.status, 0);
	sxt_run_free(&r);
}

/* Bad arguments and images. */
static void test_errors(void **state)
{
	char missing[1200];
	struct sxt_run r;

	make_image();
	sxt_tool_run(&r, "defrag");
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "usage: swapext defrag IMAGE [-n MAXFILES] [-t THRESHOLD] [-v]");
	sxt_run_free(&r);
	sxt_tool_run(&r, "defrag '%s' -n", image);
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "swapext: defrag: -n needs a count\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "defrag '%s' -t many", image);
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "swapext: defrag: -t needs a count\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "defrag '%s' -x", image);
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "swapext: defrag: unexpected argument '-x'\n");
	sxt_run_free(&r);
	sxt_tool_run(&r, "defrag '%s' '%s'", image, image);
	assert_int_equal(r.status, 1);
	sxt_run_free(&r);
	snprintf(missing, sizeof(missing), "%s/none.img", sxt_tool_dir());
	sxt_tool_run(&r, "defrag '%s'", missing);
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "swapext: defrag: cannot open");
	sxt_run_free(&r);
	/* not a filesystem */
	{
		static char zeroes[65536];
		FILE *f = fopen(missing, "w");

		assert_non_null(f);
		assert_int_equal(fwrite(zeroes, 1, sizeof(zeroes), f), sizeof(zeroes));
		assert_int_equal(fclose(f), 0);
	}
	sxt_tool_run(&r, "defrag '%s'", missing);
	assert_int_equal(r.status, 1);
	sxt_assert_has(r.err, "swapext: defrag: cannot mount");
	sxt_run_free(&r);
	/* nothing was touched by the failed runs */
	assert_int_equal(extents_of("b"), 48);
}

/* Skip unless the tool has been built. */
static int setup(void **state)
{
	if (sxt_tool_setup("tool_defrag"))
		return -1;
	snprintf(image, sizeof(image), "%s", sxt_path("defrag.img"));
	return 0;
}

/* Remove the scratch directory. */
static int teardown(void **state)
{
	return sxt_tool_teardown();
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
