// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The data path's refusals: what an immutable or append-only file refuses
 * (write, truncate, allocate, punch), ranges past the largest file (and a
 * write cut short at it), empty and wrapping ranges, and an allocation
 * larger than the free space.  Each refusal leaves the file as it was.
 *
 * And what fsync costs: it forces the log only as far as the file's own
 * last change, shares forces with other callers, and flushes the device
 * for data written in place when it forces nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>
#include "sxtest.h"
#include <swapext/swapext_compat.h>

#define MIB		(1ull << 20)
#define BS		4096u

static struct sx_bdev *bd;
static struct sx_mount *mp;

static int setup(void **state)
{
	bd = sxt_memfs(8 * MIB, BS, 0);
	mp = sxt_mount(bd);
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
	return 0;
}

/* A file of @len bytes of @byte. */
static int mkfile(const char *name, u64 len, u8 byte)
{
	u8 *buf = malloc(len);
	int fd;

	memset(buf, byte, len);
	assert_int_equal(sx_create(mp, name, 0644, &fd), 0);
	assert_int_equal(sx_pwrite(mp, fd, buf, len, 0), (s64)len);
	free(buf);
	return fd;
}

/* @fd is @len bytes of @byte. */
static void holds(int fd, u64 len, u8 byte)
{
	struct sx_stat st;
	u8 *buf = malloc(len + 1);
	u64 i;

	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	assert_int_equal(st.st_size, len);
	assert_int_equal(sx_pread(mp, fd, buf, len + 1, 0), (s64)len);
	for (i = 0; i < len; i++)
		assert_int_equal(buf[i], byte);
	free(buf);
}

/* An immutable file takes no change; one append-only takes appends only. */
static void test_flags(void **state)
{
	int im = mkfile("im", 3 * BS, 0x11), ap = mkfile("ap", 3 * BS, 0x22);
	u8 buf[BS];

	memset(buf, 0x33, sizeof(buf));
	assert_int_equal(sx_setflags(mp, im, SX_DIFLAG_IMMUTABLE), 0);
	assert_int_equal(sx_pwrite(mp, im, buf, BS, 0), -EPERM);
	assert_int_equal(sx_pwrite(mp, im, buf, BS, 3 * BS), -EPERM);
	assert_int_equal(sx_truncate(mp, im, BS), -EPERM);
	assert_int_equal(sx_fallocate(mp, im, 0, 8 * BS), -EPERM);
	assert_int_equal(sx_punch(mp, im, 0, BS), -EPERM);
	holds(im, 3 * BS, 0x11);

	assert_int_equal(sx_setflags(mp, ap, SX_DIFLAG_APPEND), 0);
	assert_int_equal(sx_pwrite(mp, ap, buf, BS, 0), -EPERM);
	assert_int_equal(sx_truncate(mp, ap, BS), -EPERM);
	assert_int_equal(sx_punch(mp, ap, 0, BS), -EPERM);
	holds(ap, 3 * BS, 0x22);
	/* at the end of the file it may grow */
	assert_int_equal(sx_pwrite(mp, ap, buf, BS, 3 * BS), BS);
	assert_int_equal(sx_setflags(mp, ap, 0), 0);
	assert_int_equal(sx_truncate(mp, ap, 3 * BS), 0);
	holds(ap, 3 * BS, 0x22);

	assert_int_equal(sx_setflags(mp, im, 0), 0);
	assert_int_equal(sx_close(mp, im), 0);
	assert_int_equal(sx_close(mp, ap), 0);
}

/* Ranges the file cannot hold, that hold nothing, or that wrap are refused. */
static void test_ranges(void **state)
{
	int fd = mkfile("f", 2 * BS, 0x44);
	u8 buf[BS];

	memset(buf, 0x55, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, fd, buf, BS, SX_MAX_FILE_SIZE), -EFBIG);
	assert_int_equal(sx_truncate(mp, fd, SX_MAX_FILE_SIZE + 1), -EFBIG);
	assert_int_equal(sx_fallocate(mp, fd, 0, 0), -EINVAL);
	assert_int_equal(sx_fallocate(mp, fd, SX_MAX_FILE_SIZE - BS, 2 * BS), -EFBIG);
	assert_int_equal(sx_punch(mp, fd, 0, 0), -EINVAL);
	assert_int_equal(sx_punch(mp, fd, ~0ull - BS, 2 * BS), -EINVAL);
	holds(fd, 2 * BS, 0x44);
	/* a write that starts below the limit is cut short at it */
	assert_int_equal(sx_pwrite(mp, fd, buf, BS, SX_MAX_FILE_SIZE - 8), 8);
	{
		struct sx_stat st;

		assert_int_equal(sx_fstat(mp, fd, &st), 0);
		assert_int_equal(st.st_size, SX_MAX_FILE_SIZE);
	}
	assert_int_equal(sx_truncate(mp, fd, 2 * BS), 0);
	holds(fd, 2 * BS, 0x44);
	assert_int_equal(sx_close(mp, fd), 0);
}

/* Allocating more than is free fails before anything is allocated. */
static void test_falloc_nospc(void **state)
{
	int fd = mkfile("f", BS, 0x66);
	u64 free0 = sx_alloc_free_blocks(mp);

	assert_int_equal(sx_fallocate(mp, fd, BS, (free0 + 1) * BS), -ENOSPC);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	holds(fd, BS, 0x66);
	/* what fits is allocated */
	assert_int_equal(sx_fallocate(mp, fd, BS, 8 * BS), 0);
	assert_true(sx_alloc_free_blocks(mp) <= free0 - 8);
	assert_int_equal(sx_close(mp, fd), 0);
}

/*
 * Calls over no bytes do nothing and say so: a write and a read of zero
 * bytes return 0 with the file as it was, a map of zero bytes finds no
 * mapping.  A missing name is refused by every call that takes one.
 */
static void test_empty_calls(void **state)
{
	int fd = mkfile("f", 2 * BS, 0x77), fd2;
	struct sx_extent ext[2];
	struct sx_stat st0, st1;
	u8 buf[BS];
	u32 n = 9;

	assert_int_equal(sx_fstat(mp, fd, &st0), 0);
	assert_int_equal(sx_pwrite(mp, fd, buf, 0, BS), 0);
	assert_int_equal(sx_pread(mp, fd, buf, 0, 0), 0);
	assert_int_equal(sx_fiemap(mp, fd, 0, 0, ext, 2, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sx_fiemap(mp, fd, 0, 2 * BS, ext, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(sx_fstat(mp, fd, &st1), 0);
	assert_int_equal(st1.st_size, st0.st_size);
	assert_int_equal(st1.st_mtime_ns, st0.st_mtime_ns);
	holds(fd, 2 * BS, 0x77);

	assert_int_equal(sx_create(mp, NULL, 0644, &fd2), -EINVAL);
	assert_int_equal(sx_open(mp, NULL, &fd2), -EINVAL);
	assert_int_equal(sx_unlink(mp, NULL), -EINVAL);
	assert_int_equal(sx_rename(mp, NULL, "g"), -EINVAL);
	assert_int_equal(sx_rename(mp, "f", NULL), -EINVAL);
	assert_int_equal(sx_link(mp, fd, NULL), -EINVAL);
	assert_int_equal(sx_fstat(mp, fd, &st1), 0);
	assert_int_equal(st1.st_nlink, 1);
	holds(fd, 2 * BS, 0x77);
	assert_int_equal(sx_close(mp, fd), 0);
}

/* bulkstat reports the immutable and append-only flags as XFS's. */
static void test_bulkstat_flags(void **state)
{
	int fd = mkfile("f", BS, 0x12);
	struct sx_xfs_bstat bs;

	assert_int_equal(sx_bulkstat(mp, fd, &bs), 0);
	assert_int_equal(bs.bs_xflags, 0);
	assert_int_equal(sx_setflags(mp, fd, SX_DIFLAG_IMMUTABLE), 0);
	assert_int_equal(sx_bulkstat(mp, fd, &bs), 0);
	assert_int_equal(bs.bs_xflags, SX_XFS_XFLAG_IMMUTABLE);
	assert_int_equal(sx_setflags(mp, fd, SX_DIFLAG_APPEND), 0);
	assert_int_equal(sx_bulkstat(mp, fd, &bs), 0);
	assert_int_equal(bs.bs_xflags, SX_XFS_XFLAG_APPEND);
	assert_int_equal(sx_setflags(mp, fd, 0), 0);
	assert_int_equal(sx_close(mp, fd), 0);
}

/* ---------------------------------------------------------------- fsync */

/* Flushes, writes and log forces of @cd and the mount so far. */
struct io_counts {
	u64	flushes;
	u64	writes;
	u64	forces;
};

static void counts(struct sx_crashdev *cd, struct io_counts *c)
{
	struct sx_crashdev_stats st;
	struct sx_log_stats ls;

	sx_crashdev_get_stats(cd, &st);
	sx_log_get_stats(mp, &ls);
	c->flushes = st.cs_flushes;
	c->writes = st.cs_writes;
	c->forces = ls.ls_forces;
}

/* What happened since @c0: each counter's growth. */
static void since(struct sx_crashdev *cd, const struct io_counts *c0, struct io_counts *d)
{
	counts(cd, d);
	d->flushes -= c0->flushes;
	d->writes -= c0->writes;
	d->forces -= c0->forces;
}

/*
 * fsync of a file whose changes are durable writes no record and flushes
 * only for data written in place since the last flush; after a change of
 * the file, it forces once; a force that covered the file's change (one
 * made for another file's fsync) leaves it nothing to do; and a later
 * change of another file is not forced by it.
 */
static void test_fsync_own_changes(void **state)
{
	struct sx_bdev *cbd;
	struct sx_crashdev *cd;
	struct io_counts c0, d;
	u8 buf[BS];
	int a, b;

	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sx_crashdev_create(bd, 1, &cbd, &cd), 0);
	mp = sxt_mount(cbd);
	a = mkfile("a", 4 * BS, 0x11);
	b = mkfile("b", 4 * BS, 0x22);
	assert_int_equal(sx_sync(mp), 0);

	/* durable already, nothing written: nothing at all */
	counts(cd, &c0);
	assert_int_equal(sx_fsync(mp, a), 0);
	since(cd, &c0, &d);
	assert_int_equal(d.flushes, 0);
	assert_int_equal(d.writes, 0);

	/* b grows (new blocks, data in place, a transaction): a's fsync flushes the data only */
	memset(buf, 0x33, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, b, buf, BS, 4 * BS), BS);
	counts(cd, &c0);
	assert_int_equal(sx_fsync(mp, a), 0);
	since(cd, &c0, &d);
	assert_int_equal(d.forces, 0);
	assert_int_equal(d.writes, 0);
	assert_int_equal(d.flushes, 1);
	assert_int_equal(sx_fsync(mp, a), 0);
	since(cd, &c0, &d);
	assert_int_equal(d.flushes, 1);
	/* b's change is not durable: its fsync forces, once */
	assert_true(sx_log_durable_seq(mp) < sx_log_commit_seq(mp));
	assert_int_equal(sx_fsync(mp, b), 0);
	since(cd, &c0, &d);
	assert_int_equal(d.forces, 1);
	assert_int_equal(sx_log_durable_seq(mp), sx_log_commit_seq(mp));

	/* both change; a's fsync forces both, and b's finds nothing to do */
	assert_int_equal(sx_pwrite(mp, a, buf, BS, 4 * BS), BS);
	assert_int_equal(sx_pwrite(mp, b, buf, BS, 5 * BS), BS);
	counts(cd, &c0);
	assert_int_equal(sx_fsync(mp, a), 0);
	since(cd, &c0, &d);
	assert_int_equal(d.forces, 1);
	counts(cd, &c0);
	assert_int_equal(sx_fsync(mp, b), 0);
	since(cd, &c0, &d);
	assert_int_equal(d.forces, 0);
	assert_int_equal(d.writes, 0);
	assert_int_equal(d.flushes, 0);

	/* metadata only (a truncate): forced by its own fsync, not by the other's */
	assert_int_equal(sx_truncate(mp, b, 2 * BS), 0);
	counts(cd, &c0);
	assert_int_equal(sx_fsync(mp, a), 0);
	since(cd, &c0, &d);
	assert_int_equal(d.forces, 0);
	assert_int_equal(d.writes, 0);
	assert_int_equal(sx_fsync(mp, b), 0);
	since(cd, &c0, &d);
	assert_int_equal(d.forces, 1);

	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
	/* what the fsyncs promised survives a power cut right after them */
	sx_crashdev_cut_now(cd, SX_CRASH_DROP);
	sx_unmount(mp);
	sx_bdev_destroy(cbd);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &a), 0);
	assert_int_equal(sx_open(mp, "b", &b), 0);
	assert_int_equal(sx_pread(mp, a, buf, BS, 4 * BS), BS);
	assert_int_equal(buf[0], 0x33);
	assert_int_equal(buf[BS - 1], 0x33);
	holds(b, 2 * BS, 0x22);
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

/* The other thread of test_fsync_shared(): b's fsync, during a's force. */
struct share_race {
	pthread_t	sr_main;
	pthread_t	sr_t;
	bool		sr_fired;
	int		sr_fd;
	int		sr_error;
};

static void *share_fsync_main(void *arg)
{
	struct share_race *sr = arg;

	sx_thread_enter();
	sr->sr_error = sx_fsync(mp, sr->sr_fd);
	sx_thread_exit();
	return NULL;
}

/* Fault hook: when the main thread's force is about to flush, b's fsync starts. */
static void share_hook(void *arg, const char *site)
{
	struct share_race *sr = arg;

	if (sr->sr_fired || strcmp(site, "log_flush") ||
	    !pthread_equal(pthread_self(), sr->sr_main))
		return;
	sr->sr_fired = true;
	assert_int_equal(pthread_create(&sr->sr_t, NULL, share_fsync_main, sr), 0);
	/* time for it to wait behind this force (either way it must not force) */
	usleep(20000);
}

/*
 * Group commit: a and b both change; a's fsync forces, and b's fsync,
 * called by another thread while that force is under way (it has written
 * the record that holds b's change too and is about to flush), waits for
 * it and forces nothing of its own.
 */
static void test_fsync_shared(void **state)
{
	struct share_race sr = { .sr_main = pthread_self() };
	struct sx_log_stats l0, l1;
	u8 buf[BS];
	int a = mkfile("a", BS, 0x11), b = mkfile("b", BS, 0x22);

	assert_int_equal(sx_sync(mp), 0);
	memset(buf, 0x44, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, a, buf, BS, BS), BS);
	assert_int_equal(sx_pwrite(mp, b, buf, BS, BS), BS);
	sx_log_get_stats(mp, &l0);
	sr.sr_fd = b;
	sx_fault_set_hook(share_hook, &sr);
	assert_int_equal(sx_fsync(mp, a), 0);
	sx_fault_set_hook(NULL, NULL);
	assert_true(sr.sr_fired);
	assert_int_equal(pthread_join(sr.sr_t, NULL), 0);
	assert_int_equal(sr.sr_error, 0);
	sx_log_get_stats(mp, &l1);
	assert_int_equal(l1.ls_forces - l0.ls_forces, 1);
	assert_int_equal(sx_log_durable_seq(mp), sx_log_commit_seq(mp));
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

#define FSYNC_THREADS	4
#define FSYNC_ROUNDS	40

struct fsync_worker {
	pthread_t	t;
	int		id;
	int		fd;
	int		error;
};

static pthread_barrier_t fsync_start;

/* Each round: a write into a new block of the thread's own file, then fsync. */
static void *fsync_main(void *arg)
{
	struct fsync_worker *w = arg;
	u8 buf[BS];
	int r;

	sx_thread_enter();
	pthread_barrier_wait(&fsync_start);
	for (r = 0; r < FSYNC_ROUNDS && !w->error; r++) {
		memset(buf, w->id * 64 + r + 1, sizeof(buf));
		if (sx_pwrite(mp, w->fd, buf, BS, (u64)r * BS) != BS)
			w->error = -EIO;
		else
			w->error = sx_fsync(mp, w->fd);
	}
	sx_thread_exit();
	return NULL;
}

/*
 * Threads that each write and fsync their own file: every fsync makes its
 * own write durable whatever the others do (a cut of the power after they
 * all return loses nothing), and no more forces are made than fsyncs.  How
 * many forces they share depends on the scheduler, so that is only printed.
 */
static void test_fsync_threads(void **state)
{
	struct fsync_worker w[FSYNC_THREADS];
	struct sx_bdev *cbd;
	struct sx_crashdev *cd;
	struct sx_log_stats l0, l1;
	char name[16];
	u8 buf[BS];
	int i, r;

	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sx_crashdev_create(bd, 1, &cbd, &cd), 0);
	mp = sxt_mount(cbd);
	assert_int_equal(pthread_barrier_init(&fsync_start, NULL, FSYNC_THREADS), 0);
	for (i = 0; i < FSYNC_THREADS; i++) {
		w[i].id = i;
		w[i].error = 0;
		snprintf(name, sizeof(name), "t%d", i);
		assert_int_equal(sx_create(mp, name, 0644, &w[i].fd), 0);
	}
	assert_int_equal(sx_sync(mp), 0);
	sx_log_get_stats(mp, &l0);
	for (i = 0; i < FSYNC_THREADS; i++)
		assert_int_equal(pthread_create(&w[i].t, NULL, fsync_main, &w[i]), 0);
	for (i = 0; i < FSYNC_THREADS; i++) {
		assert_int_equal(pthread_join(w[i].t, NULL), 0);
		assert_int_equal(w[i].error, 0);
	}
	sx_log_get_stats(mp, &l1);
	print_message("%d fsyncs, %llu log forces\n", FSYNC_THREADS * FSYNC_ROUNDS,
		      (unsigned long long)(l1.ls_forces - l0.ls_forces));
	assert_true(l1.ls_forces - l0.ls_forces <= FSYNC_THREADS * FSYNC_ROUNDS);
	pthread_barrier_destroy(&fsync_start);

	sx_crashdev_cut_now(cd, SX_CRASH_DROP);
	sx_unmount(mp);
	sx_bdev_destroy(cbd);
	mp = sxt_mount(bd);
	for (i = 0; i < FSYNC_THREADS; i++) {
		int fd;

		snprintf(name, sizeof(name), "t%d", i);
		assert_int_equal(sx_open(mp, name, &fd), 0);
		for (r = 0; r < FSYNC_ROUNDS; r++) {
			assert_int_equal(sx_pread(mp, fd, buf, BS, (u64)r * BS), BS);
			assert_int_equal(buf[0], (u8)(i * 64 + r + 1));
			assert_int_equal(buf[BS - 1], (u8)(i * 64 + r + 1));
		}
		assert_int_equal(sx_close(mp, fd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ranges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_falloc_nospc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bulkstat_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fsync_own_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fsync_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fsync_threads, setup, teardown),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
