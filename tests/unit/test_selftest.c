/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's scenario self-test (engine/diag/selftest.c) in userspace, on
 * sx_memdev_create() devices: the same scenarios the kernel module runs at
 * load with selftest=1.  Every scenario must pass, and the report must be
 * one line per scenario and the summary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sx_platform.h"
#include <swapext/swapext.h>
#include <swapext/device.h>
#include <swapext/selftest.h>

struct report {
	unsigned int	lines;
	unsigned int	pass_lines;
	unsigned int	fail_lines;
	char		last[256];
};

/* Count and print each line of the self-test's report. */
static void collect(void *arg, const char *fmt, ...)
{
	struct report *r = arg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->last, sizeof(r->last), fmt, ap);
	va_end(ap);
	r->lines++;
	if (!strncmp(r->last, "PASS ", 5))
		r->pass_lines++;
	if (!strncmp(r->last, "FAIL ", 5))
		r->fail_lines++;
	printf("  [selftest] %s\n", r->last);
}

/* Quiet the engine's own messages (the scenarios provoke some on purpose). */
static void quiet(void *arg, enum sx_log_level level, const char *msg)
{
}

/* Every scenario passes, and the report agrees with the counts. */
static void test_selftest_all_pass(void **state)
{
	struct report r = { 0 };
	u32 passed = 0, failed = ~0u;
	char want[64];
	int error;

	sx_set_log_callback(quiet, NULL);
	error = sx_selftest_run(sx_memdev_create, collect, &r, &passed, &failed);
	sx_set_log_callback(NULL, NULL);
	assert_int_equal(failed, 0);
	assert_int_equal(error, 0);
	assert_true(passed >= 10);
	assert_int_equal(r.pass_lines, passed);
	assert_int_equal(r.fail_lines, 0);
	assert_int_equal(r.lines, passed + 1);
	snprintf(want, sizeof(want), "%u passed, 0 failed", passed);
	assert_string_equal(r.last, want);
}

/* A memory device factory that always fails makes every scenario fail cleanly. */
static int no_memdev(u64 size, u32 sectsize, struct sx_bdev **bdp)
{
	return -ENOMEM;
}

/* Failures are reported, counted and returned as -EIO, without crashing. */
static void test_selftest_reports_failures(void **state)
{
	struct report r = { 0 };
	u32 passed = ~0u, failed = 0;

	sx_set_log_callback(quiet, NULL);
	assert_int_equal(sx_selftest_run(no_memdev, collect, &r, &passed, &failed), -EIO);
	sx_set_log_callback(NULL, NULL);
	assert_int_equal(passed, 0);
	assert_true(failed >= 10);
	assert_int_equal(r.fail_lines, failed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_selftest_all_pass),
		cmocka_unit_test(test_selftest_reports_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
