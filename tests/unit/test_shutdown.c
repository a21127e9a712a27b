// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Shutdown: the call that shuts a mount down gets the error, the engine
 * records why (sx_shutdown_state(), and sx_unmount() logs it), every later
 * operation fails and nothing more reaches the device.
 *
 * test_cut_in_unmount is the sequence behind fsx's "unmount at the end of a
 * phase: Input/output error" (issue 14, seeds 22073773218, 2015, 2033 and
 * 2039): a power cut armed a few writes ahead by fsx did not fire before
 * the phase's last operation, so it fired in the unmount's checkpoint.  The
 * unmount must fail with the device's error, name the write that failed,
 * and recovery must give back everything synced before it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxswap.h"
#include "sxcrash.h"

#define BS	1024u
#define IMG	(16ull << 20)

static struct sx_bdev *lower, *bd;
static struct sx_crashdev *cd;
static struct sx_mount *mp;
static char last_err[512];	/* the last error-level engine message */

static void remember_err(void *arg, enum sx_log_level level, const char *msg)
{
	if (level <= SX_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
}

static int setup(void **state)
{
	last_err[0] = 0;
	sx_set_log_callback(remember_err, NULL);
	lower = sxs_mkimg(IMG, BS, 1024, true);
	assert_int_equal(sx_crashdev_create(lower, 7, &bd, &cd), 0);
	mp = sxt_mount(bd);
	return 0;
}

static int teardown(void **state)
{
	sx_unmount(mp);
	mp = NULL;
	sx_bdev_destroy(bd);
	sx_bdev_destroy(lower);
	sxt_quiet();
	return 0;
}

/* A file "f" of @n blocks of byte @byte, synced; its descriptor. */
static int synced_file(const char *name, u32 n, int byte)
{
	static u8 buf[16 * BS];
	int fd;

	assert_true(n * BS <= sizeof(buf));
	memset(buf, byte, n * BS);
	assert_int_equal(sx_create(mp, name, SX_IFREG | 0644, &fd), 0);
	assert_int_equal(sx_pwrite(mp, fd, buf, n * BS, 0), (s64)(n * BS));
	assert_int_equal(sx_fsync(mp, fd), 0);
	return fd;
}

/* A running mount has no shutdown state. */
static void test_running(void **state)
{
	char why[64] = "x";

	assert_int_equal(sx_shutdown_state(mp, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	assert_int_equal(sx_shutdown_state(mp, NULL, 0), 0);
}

/* sx_shutdown() says so, and the reason is cut to the caller's buffer. */
static void test_explicit(void **state)
{
	char why[128], small[6];

	sx_shutdown(mp);
	assert_int_equal(sx_shutdown_state(mp, why, sizeof(why)), -EIO);
	assert_non_null(strstr(why, "sx_shutdown()"));
	assert_int_equal(sx_shutdown_state(mp, small, sizeof(small)), -EIO);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	/* a second shutdown keeps the first reason */
	sx_shutdown(mp);
	assert_int_equal(sx_shutdown_state(mp, why, sizeof(why)), -EIO);
	assert_non_null(strstr(why, "sx_shutdown()"));
}

/*
 * The write that fails shuts the mount down and the pwrite that issued it
 * returns the error; the reason names the failed device write.
 */
static void test_failing_call_gets_error(void **state)
{
	static u8 buf[4 * BS];
	char why[128];
	int fd = synced_file("f", 4, 0x11);
	s64 r;

	sx_crashdev_fail(cd, SX_IO_WRITE, 1, true, -EIO);
	memset(buf, 0x22, sizeof(buf));
	r = sx_pwrite(mp, fd, buf, sizeof(buf), 0);
	assert_true(r < 0);
	assert_int_equal(r, -EIO);
	assert_int_equal(sx_shutdown_state(mp, why, sizeof(why)), -EIO);
	assert_non_null(strstr(why, "device write"));
	assert_non_null(strstr(last_err, "shutting down"));
	assert_int_equal(sx_close(mp, fd), 0);
}

/*
 * A write whose data went out but whose last transaction (the times and
 * the size) shut the mount down fails with the error, however much it
 * wrote: none of it can reach the disk any more.  The fault loop found
 * the write returning its full count on the shut-down mount.  Each
 * allocation of an overwrite fails in turn: the result and the shutdown
 * state must agree.
 */
static void test_write_that_shuts_down_fails(void **state)
{
	static u8 buf[2 * BS];
	struct sx_alloc_stats a0, a1;
	int fd = synced_file("f", 2, 0x11), shutdowns = 0;
	bool hit = true;
	u64 n;
	s64 r;

	teardown(state);
	for (n = 1; hit; n++) {
		setup(state);
		fd = synced_file("f", 2, 0x11);
		memset(buf, 0x22, sizeof(buf));
		sx_alloc_get_stats(&a0);
		sx_alloc_fail(n, false);
		r = sx_pwrite(mp, fd, buf, sizeof(buf), 0);
		sx_alloc_fail(0, false);
		sx_alloc_get_stats(&a1);
		hit = a1.as_failed != a0.as_failed;
		if (sx_shutdown_state(mp, NULL, 0)) {
			shutdowns++;
			assert_true(r < 0);
		}
		sx_close(mp, fd);
		teardown(state);
	}
	assert_true(shutdowns > 0);
	setup(state);
}

/* After a shutdown every operation fails and nothing reaches the device. */
static void test_everything_fails_after(void **state)
{
	struct file_swap_range fsr = { 0 };
	struct sx_crashdev_stats before, after;
	struct sx_update upd;
	struct sx_stat st;
	struct sx_extent ext[4];
	u32 next = 0;
	u8 buf[BS];
	int fa = synced_file("a", 4, 0x33), fb = synced_file("b", 4, 0x44), fd;

	sx_shutdown(mp);
	sx_crashdev_get_stats(cd, &before);
	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, fa, buf, BS, 0), -EIO);
	assert_int_equal(sx_pread(mp, fa, buf, BS, 0), -EIO);
	assert_int_equal(sx_truncate(mp, fa, 1), -EIO);
	assert_int_equal(sx_fallocate(mp, fa, 0, 8 * BS), -EIO);
	assert_int_equal(sx_punch(mp, fa, 0, BS), -EIO);
	assert_int_equal(sx_fsync(mp, fa), -EIO);
	assert_int_equal(sx_sync(mp), -EIO);
	assert_int_equal(sx_checkpoint(mp), -EIO);
	assert_int_equal(sx_fstat(mp, fa, &st), -EIO);
	assert_int_equal(sx_fiemap(mp, fa, 0, 4 * BS, ext, 4, &next), -EIO);
	assert_int_equal(sx_setflags(mp, fa, 0), -EIO);
	assert_int_equal(sx_clone(mp, fb, fa), -EIO);
	assert_int_equal(sx_clone_range(mp, fb, 0, fa, 0, BS), -EIO);
	fsr.file1_fd = fa;
	fsr.length = BS;
	assert_int_equal(sx_swap_file_range(mp, fb, &fsr), -EIO);
	assert_int_equal(sx_update_start(mp, fa, &upd), -EIO);
	assert_int_equal(sx_create(mp, "c", SX_IFREG | 0644, &fd), -EIO);
	assert_int_equal(sx_open(mp, "a", &fd), -EIO);
	assert_int_equal(sx_open_tmpfile(mp, SX_IFREG | 0644, &fd), -EIO);
	assert_int_equal(sx_link(mp, fa, "a2"), -EIO);
	assert_int_equal(sx_unlink(mp, "b"), -EIO);
	assert_int_equal(sx_rename(mp, "a", "z"), -EIO);
	/* closing still releases the descriptor */
	assert_int_equal(sx_close(mp, fa), 0);
	assert_int_equal(sx_close(mp, fb), 0);
	sx_crashdev_get_stats(cd, &after);
	assert_int_equal(after.cs_writes, before.cs_writes);
	assert_int_equal(after.cs_flushes, before.cs_flushes);
	assert_int_equal(after.cs_reads, before.cs_reads);
	/* the unmount reports the shutdown and why */
	last_err[0] = 0;
	assert_int_equal(sx_unmount(mp), -EIO);
	mp = NULL;
	assert_non_null(strstr(last_err, "sx_shutdown()"));
	sx_crashdev_get_stats(cd, &after);
	assert_int_equal(after.cs_writes, before.cs_writes);
}

/*
 * fsx's failing sequence: synced files, changes not yet synced, a power
 * cut armed a few writes ahead that no operation reaches, then close and
 * unmount.  The unmount's checkpoint hits the cut: it must fail with the
 * device's error and say which write failed; recovery must keep what was
 * synced, and the image must check clean.
 */
static void test_cut_in_unmount(void **state)
{
	struct sx_crashdev_stats st;
	u8 buf[4 * BS], got[4 * BS];
	int fa = synced_file("a", 4, 0x66), fb = synced_file("b", 4, 0x77), error, i;

	memset(buf, 0x88, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, fb, buf, 2 * BS, BS), 2 * BS);	/* not synced */
	assert_int_equal(sx_truncate(mp, fa, 3 * BS), 0);		/* not synced */
	sx_crashdev_get_stats(cd, &st);
	sx_crashdev_cut_at_write(cd, st.cs_writes + 2, SX_CRASH_DROP);
	assert_int_equal(sx_close(mp, fa), 0);
	assert_int_equal(sx_close(mp, fb), 0);
	last_err[0] = 0;
	error = sx_unmount(mp);
	mp = NULL;
	assert_int_equal(error, -EIO);
	sx_crashdev_get_stats(cd, &st);
	assert_true(st.cs_dead);
	assert_non_null(strstr(last_err, "unmount of a shut-down filesystem"));
	assert_non_null(strstr(last_err, "write"));

	/* power back: recovery gives the synced contents (the rest may or may not be) */
	sx_bdev_destroy(bd);
	assert_int_equal(sx_crashdev_create(lower, 8, &bd, &cd), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &fa), 0);
	assert_int_equal(sx_open(mp, "b", &fb), 0);
	memset(buf, 0x66, sizeof(buf));
	error = (int)sx_pread(mp, fa, got, sizeof(got), 0);
	assert_true(error == 3 * BS || error == 4 * BS);
	assert_memory_equal(got, buf, (size_t)error);
	assert_int_equal(sx_pread(mp, fb, got, sizeof(got), 0), 4 * BS);
	for (i = 0; i < 4; i++) {
		/* blocks 0 and 3 as synced; 1 and 2 each whole, old or new */
		int want = (i == 1 || i == 2) ? got[i * BS] : 0x77;

		assert_true(want == 0x77 || want == 0x88);
		memset(buf, want, BS);
		assert_memory_equal(got + i * BS, buf, BS);
	}
	assert_int_equal(sx_close(mp, fa), 0);
	assert_int_equal(sx_close(mp, fb), 0);
	assert_int_equal(sx_unmount(mp), 0);
	mp = NULL;
	assert_int_equal(sxc_check_clean(lower, 0, __func__), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_explicit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failing_call_gets_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_that_shuts_down_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_everything_fails_after, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_in_unmount, setup, teardown),
	};

	sx_thread_enter();
	return cmocka_run_group_tests_name("shutdown", tests, NULL, NULL);
}
