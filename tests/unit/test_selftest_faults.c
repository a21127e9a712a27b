// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The self-test (engine/diag/selftest.c) where the engine fails: every
 * device it makes fails its N-th I/O and every one after it, or each
 * scenario's N-th allocation fails, for N from 1 up to a point no scenario
 * reaches.  The self-test is what the module runs at load
 * to decide whether the engine works there, so a failing device must make
 * it say FAIL, with the call and the error, and never crash or leak memory
 * or a device; a scenario that met no failure must pass.
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

/* A device over a memory device whose I/O number fail_at and later fail. */
struct fdev {
	struct sx_bdev	fd_bd;
	struct sx_bdev	*fd_lower;
	uint64_t	fd_ios;
};

static uint64_t fail_at;	/* 0: never */
static uint64_t faults;		/* I/Os or allocations failed so far */
static int live_devices;
static bool fail_allocs;	/* fail_at counts each scenario's allocations */

/* Count one I/O; true if it is to fail. */
static bool fdev_fails(struct sx_bdev *bd)
{
	struct fdev *fd = bd->bd_ctx;

	fd->fd_ios++;
	if (!fail_allocs && fail_at && fd->fd_ios >= fail_at) {
		faults++;
		return true;
	}
	return false;
}

static int fdev_read(struct sx_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct sx_bdev *lo = ((struct fdev *)bd->bd_ctx)->fd_lower;

	return fdev_fails(bd) ? -EIO : lo->bd_ops->read(lo, off, buf, len);
}

static int fdev_write(struct sx_bdev *bd, uint64_t off, const void *buf, size_t len,
		      unsigned int flags)
{
	struct sx_bdev *lo = ((struct fdev *)bd->bd_ctx)->fd_lower;

	return fdev_fails(bd) ? -EIO : lo->bd_ops->write(lo, off, buf, len, flags);
}

static int fdev_flush(struct sx_bdev *bd)
{
	struct sx_bdev *lo = ((struct fdev *)bd->bd_ctx)->fd_lower;

	return fdev_fails(bd) ? -EIO : lo->bd_ops->flush(lo);
}

static void fdev_destroy(struct sx_bdev *bd)
{
	struct fdev *fd = bd->bd_ctx;

	fd->fd_lower->bd_ops->destroy(fd->fd_lower);
	free(fd);
	live_devices--;
}

static const struct sx_bdev_ops fdev_ops = {
	.read = fdev_read,
	.write = fdev_write,
	.flush = fdev_flush,
	.destroy = fdev_destroy,
};

/* The self-test's device factory: a memory device that fails as set. */
static int fdev_create(uint64_t size, uint32_t sectsize, struct sx_bdev **bdp)
{
	struct fdev *fd = calloc(1, sizeof(*fd));
	int error;

	assert_non_null(fd);
	error = sx_memdev_create(size, sectsize, &fd->fd_lower);
	if (error) {
		free(fd);
		return error;
	}
	fd->fd_bd.bd_ops = &fdev_ops;
	fd->fd_bd.bd_ctx = fd;
	fd->fd_bd.bd_size = fd->fd_lower->bd_size;
	fd->fd_bd.bd_sectsize = fd->fd_lower->bd_sectsize;
	live_devices++;
	*bdp = &fd->fd_bd;
	return 0;
}

/* What one run reported. */
struct run {
	uint64_t	faults_before;	/* faults when the scenario started */
	uint32_t	pass, fail, faulted_pass;
	char		reasons[64][96];	/* distinct "function:line" of FAILs */
	uint32_t	nreasons;
};

static struct run all;		/* the reasons of every run so far */

/* Remember the reason @why (its "st_func:line" part) once. */
static void add_reason(struct run *r, const char *why)
{
	char key[96];
	uint32_t i;

	snprintf(key, sizeof(key), "%.*s", (int)strcspn(why, " "), why);
	for (i = 0; i < r->nreasons; i++)
		if (!strcmp(r->reasons[i], key))
			return;
	if (r->nreasons < 64)
		snprintf(r->reasons[r->nreasons++], sizeof(r->reasons[0]), "%s", key);
}

/* Failed allocations so far (with fail_allocs), else failed I/Os. */
static uint64_t faults_now(void)
{
	struct sx_alloc_stats as;

	if (!fail_allocs)
		return faults;
	sx_alloc_get_stats(&as);
	return as.as_failed;
}

/* Arm the allocation fault of the next scenario: its fail_at-th allocation. */
static void arm_next(void)
{
	if (fail_allocs)
		sx_alloc_fail(fail_at, false);
}

/* Check each line of the report against the faults its scenario met. */
static void report(void *arg, const char *fmt, ...)
{
	struct run *r = arg;
	bool faulted = faults_now() != r->faults_before;
	char line[320];
	const char *why;
	va_list ap;

	sx_alloc_fail(0, false);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	r->faults_before = faults_now();
	arm_next();
	if (!strncmp(line, "PASS ", 5)) {
		r->pass++;
		r->faulted_pass += faulted;
		return;
	}
	if (strncmp(line, "FAIL ", 5)) {
		/* the summary line */
		assert_true(strstr(line, " passed, ") != NULL);
		return;
	}
	r->fail++;
	/* a scenario fails only where the engine was made to fail */
	if (!faulted)
		fail_msg("nothing failed, yet: %s", line);
	/* "FAIL name: st_function:line: what (got value)" */
	why = strstr(line, ": st_");
	if (!why || !strstr(why + 2, ":") || !strstr(why, " (got "))
		fail_msg("a FAIL line without its call and value: %s", line);
	add_reason(&all, why + 2);
}

/* Quiet the engine's messages: the failing devices provoke many. */
static void quiet(void *arg, enum sx_log_level level, const char *msg)
{
}

/*
 * Run the self-test with @n as fail_at (@ncases scenarios; 0: not known yet); the number of I/Os or allocations
 * failed.  Every run leaves no device and no allocation behind.
 */
static uint64_t run_at(uint64_t n, uint32_t ncases, struct run *r)
{
	struct sx_alloc_stats a0, a1;
	uint32_t passed = ~0u, failed = ~0u;
	uint64_t f0 = faults_now();
	int error;

	memset(r, 0, sizeof(*r));
	fail_at = n;
	r->faults_before = f0;
	/* the self-test's own state is allocated before the first scenario */
	if (fail_allocs && n)
		fail_at = n + 1;
	sx_alloc_get_stats(&a0);
	arm_next();
	fail_at = n;
	error = sx_selftest_run(fdev_create, report, r, &passed, &failed);
	sx_alloc_fail(0, false);
	sx_alloc_get_stats(&a1);
	if (a1.as_live != a0.as_live) {
		/* inodes are freed after a grace period, which unmount does not wait for */
		sx_rcu_barrier();
		sx_alloc_get_stats(&a1);
	}
	fail_at = 0;
	assert_int_equal(live_devices, 0);
	assert_int_equal(a1.as_live, a0.as_live);
	assert_int_equal(passed, r->pass);
	assert_int_equal(failed, r->fail);
	if (ncases)
		assert_int_equal(passed + failed, ncases);
	assert_int_equal(error, failed ? -EIO : 0);
	return faults_now() - f0;
}

/*
 * Sweep fail_at over every point up to 48, then ever sparser ones, until a
 * run fails nothing.  Returns the runs that failed a scenario.
 */
static uint32_t sweep(void)
{
	struct run r;
	uint32_t ncases, failing_runs = 0, faulted_passes = 0;
	uint64_t n, step = 1;

	memset(&all, 0, sizeof(all));
	sx_set_log_callback(quiet, NULL);
	/* without faults: the count of scenarios, all passing */
	run_at(0, 0, &r);
	ncases = r.pass;
	assert_int_equal(r.fail, 0);
	for (n = 1;; n += step) {
		assert_true(n < 1000000);
		if (!run_at(n, ncases, &r)) {
			/* no scenario got that far: all pass */
			assert_int_equal(r.pass, ncases);
			break;
		}
		failing_runs += r.fail != 0;
		faulted_passes += r.faulted_pass;
		/* every point at first, then ever sparser ones */
		if (n >= 48)
			step = n / 6;
	}
	sx_set_log_callback(NULL, NULL);
	if (getenv("SX_TEST_VERBOSE"))
		printf("runs up to n=%llu, %u failing, %u reasons, %u passes with faults\n",
		       (unsigned long long)n, failing_runs, all.nreasons, faulted_passes);
	return failing_runs;
}

static void test_selftest_failing_devices(void **state)
{
	fail_allocs = false;
	assert_true(sweep() > 40);
	/* the calls that reported a failure: many of the scenarios' own */
	assert_true(all.nreasons > 40);
}

static void test_selftest_failing_allocations(void **state)
{
	struct run r;

	/* its own state cannot be allocated: -ENOMEM before any scenario */
	memset(&r, 0, sizeof(r));
	sx_alloc_fail(1, false);
	assert_int_equal(sx_selftest_run(fdev_create, report, &r, NULL, NULL), -ENOMEM);
	sx_alloc_fail(0, false);
	assert_int_equal(r.pass + r.fail, 0);
	/* the counts are optional */
	sx_set_log_callback(quiet, NULL);
	assert_int_equal(sx_selftest_run(fdev_create, report, &r, NULL, NULL), 0);
	sx_set_log_callback(NULL, NULL);
	assert_true(r.pass > 10);
	assert_int_equal(r.fail, 0);

	fail_allocs = true;
	assert_true(sweep() > 40);
	assert_true(all.nreasons > 40);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_selftest_failing_devices),
		cmocka_unit_test(test_selftest_failing_allocations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
