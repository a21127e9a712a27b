// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Group commit's waiting callers (sx_log_force_seq()).
 *
 * fsync's share: callers that need the data they wrote in place durable
 * wait behind one leader, and a flush begun after a caller came serves it,
 * even if other data was written while that flush ran.  Before, each such
 * caller took the force lock in turn and flushed again whenever anything
 * had been written in place meanwhile.  (On that code both fsync tests
 * fail after their 30 s waits: a caller that takes the force lock never
 * shows as the leader or a follower, and one the test's hold of the force
 * lock blocks never returns in time.)
 *
 * Wake-ups: a force wakes only the callers it served, and the leader's
 * end one more, to lead; the others sleep on.  Before, every force woke
 * every waiter, and those it had not served went back to sleep
 * (test_waits_once counted 3 or 4 sleeps where 2 are needed).
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
#include "sxshim.h"
#include "sxswap.h"
#include "log_priv.h"
#include "dev.h"
#include <swapext/device.h>

#define MIB		(1ull << 20)
#define BS		4096u
#define NS_PER_S	1000000000ull

/* The files of the tests with three writers */
static const char *const names[] = { "a", "b", "c" };

/* One file's writer: a block of @byte over its durable block 0, then fsync. */
struct writer {
	struct sx_mount	*mp;
	int		fd;
	u8		byte;
	bool		nowrite;	/* only the fsync */
	bool		sync;
	int		error;
	bool		done;		/* atomic: the thread finished */
};

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	u8 buf[BS];
	s64 n;

	sx_thread_enter();
	memset(buf, w->byte, sizeof(buf));
	n = w->nowrite ? BS : sx_pwrite(w->mp, w->fd, buf, BS, 0);
	w->error = n == BS ? 0 : n < 0 ? (int)n : -EIO;
	if (!w->error && w->sync)
		w->error = sx_fsync(w->mp, w->fd);
	__atomic_store_n(&w->done, true, __ATOMIC_SEQ_CST);
	sx_thread_exit();
	return NULL;
}

/* Wait (up to 30 s) until @cond(@arg) holds; false if it never did. */
static bool poll_for(bool (*cond)(void *arg), void *arg)
{
	u64 start = sx_now_ns();

	do {
		if (cond(arg))
			return true;
		usleep(1000);
	} while (sx_now_ns() - start < 30 * NS_PER_S);
	return cond(arg);
}

static bool writer_done(void *arg)
{
	struct writer *w = arg;

	return __atomic_load_n(&w->done, __ATOMIC_SEQ_CST);
}

static bool is_leading(void *arg)
{
	struct sx_log *log = arg;
	bool ok;

	sx_mutex_lock(&log->l_wait_lock);
	ok = log->l_leading;
	sx_mutex_unlock(&log->l_wait_lock);
	return ok;
}

/* Whether @n callers sleep behind the leader (on l_waiters). */
static bool followers_are(struct sx_log *log, u32 n)
{
	struct sx_list *pos;
	u32 count = 0;

	sx_mutex_lock(&log->l_wait_lock);
	sx_list_for_each(pos, &log->l_waiters)
		count++;
	sx_mutex_unlock(&log->l_wait_lock);
	return count == n;
}

static bool one_follower(void *arg)
{
	return followers_are(arg, 1);
}

static bool two_followers(void *arg)
{
	return followers_are(arg, 2);
}

/* What the hook saw and did, inside the leader's flush. */
struct mid_flush {
	struct writer	*c;		/* writes in place, no fsync */
	struct writer	*b;		/* the follower */
	bool		ran;
	bool		b_waited;	/* B had not returned yet */
	bool		c_done;		/* C's write finished within 30 s */
};

/*
 * The hook: another file's write in place while the flush runs.  It
 * waits for the write only so long: a write that needed the force lock,
 * which the leader holds while it flushes, would never finish, and the
 * test then fails instead of hanging.  No asserts here (not the main
 * thread): main checks what it recorded.
 */
static void write_c(void *arg)
{
	struct mid_flush *mf = arg;
	pthread_t th;

	mf->ran = true;
	mf->b_waited = !writer_done(mf->b);
	if (pthread_create(&th, NULL, writer_run, mf->c))
		return;
	mf->c_done = poll_for(writer_done, mf->c);
	if (mf->c_done)
		pthread_join(th, NULL);
	else
		pthread_detach(th);
}

/*
 * Make the last force one with records and no data manifest: then no
 * block of the files written so far is guarded (log_manifest.c), and a
 * write in place over one needs no fence record and flush of its own.
 */
static void unguard(struct sx_mount *mp)
{
	int fd;

	assert_int_equal(sx_create(mp, "z", 0644, &fd), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_sync(mp), 0);
}

static u8 first_byte(struct sx_mount *mp, const char *name)
{
	u8 buf[BS];
	int fd;

	assert_int_equal(sx_open(mp, name, &fd), 0);
	assert_int_equal(sx_pread(mp, fd, buf, BS, 0), (s64)BS);
	assert_int_equal(sx_close(mp, fd), 0);
	return buf[0];
}

/*
 * A leads (the test holds the force lock until B waits behind it), B
 * follows, and C writes in place while A's flush runs.  One flush serves
 * A and B: B's data was written before that flush began.  C's write
 * leaves the data dirty, which made B flush a second time before.  After
 * a power cut that keeps only what was flushed, A's and B's data are
 * there.
 */
static void test_fsync_shares_flush(void **state)
{
	struct sx_bdev *mem = sxt_memfs(16 * MIB, BS, 0), *cbd;
	struct writer w[3];
	struct mid_flush mf = { .c = &w[2], .b = &w[1] };
	struct sx_crashdev *cd;
	struct sxt_shim sh;
	struct sx_mount *mp;
	struct sx_log *log;
	pthread_t ta, tb;
	u64 f0;
	int i;

	assert_int_equal(sx_crashdev_create(mem, 1, &cbd, &cd), 0);
	sxt_shim_init(&sh, cbd);
	mp = sxt_mount(&sh.sh_bdev);
	log = mp->m_log;
	for (i = 0; i < 3; i++) {
		u8 buf[BS];

		memset(buf, 0x10 + i, sizeof(buf));
		w[i] = (struct writer){ .mp = mp, .byte = (u8)(0x20 + i), .sync = i < 2 };
		assert_int_equal(sx_create(mp, names[i], 0644, &w[i].fd), 0);
		assert_int_equal(sx_pwrite(mp, w[i].fd, buf, BS, 0), (s64)BS);
		assert_int_equal(sx_fsync(mp, w[i].fd), 0);
	}
	/* C's write in place must not wait for a fence: A's flush holds the force lock */
	unguard(mp);

	sx_mutex_lock(&log->l_force_lock);
	assert_int_equal(pthread_create(&ta, NULL, writer_run, &w[0]), 0);
	assert_true(poll_for(is_leading, log));
	assert_int_equal(pthread_create(&tb, NULL, writer_run, &w[1]), 0);
	assert_true(poll_for(one_follower, log));
	sxt_shim_hook_flush(&sh, write_c, &mf);
	f0 = sxt_shim_count(&sh.sh_flushes);
	sx_mutex_unlock(&log->l_force_lock);
	assert_int_equal(pthread_join(ta, NULL), 0);
	assert_int_equal(pthread_join(tb, NULL), 0);
	assert_true(mf.ran);
	assert_true(mf.b_waited);	/* B did not return before the flush */
	assert_true(mf.c_done);
	assert_int_equal(w[0].error, 0);
	assert_int_equal(w[1].error, 0);
	assert_int_equal(w[2].error, 0);
	/* C's write left data dirty: before, B flushed again for it */
	assert_int_equal(sxt_shim_count(&sh.sh_flushes) - f0, 1);

	sx_crashdev_cut_now(cd, SX_CRASH_DROP);
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(mem);
	assert_int_equal(first_byte(mp, "a"), 0x20);
	assert_int_equal(first_byte(mp, "b"), 0x21);
	sx_unmount(mp);
	sx_bdev_destroy(cbd);
	sx_bdev_destroy(mem);
}

/*
 * A caller whose data a finished flush already covers returns at once,
 * without the force lock; one whose data is dirty still gets a flush.
 */
static void test_fsync_covered(void **state)
{
	struct sx_bdev *mem = sxt_memfs(16 * MIB, BS, 0);
	struct writer w = { .byte = 0x31 };
	struct sxt_shim sh;
	struct sx_mount *mp;
	struct sx_log *log;
	pthread_t th;
	u64 f0;
	bool done;
	u8 buf[BS];

	sxt_shim_init(&sh, mem);
	mp = sxt_mount(&sh.sh_bdev);
	log = mp->m_log;
	w.mp = mp;
	memset(buf, 0x30, sizeof(buf));
	assert_int_equal(sx_create(mp, "f", 0644, &w.fd), 0);
	assert_int_equal(sx_pwrite(mp, w.fd, buf, BS, 0), (s64)BS);
	assert_int_equal(sx_fsync(mp, w.fd), 0);
	unguard(mp);

	/* nothing written since the last flush: no flush, and no force lock */
	f0 = sxt_shim_count(&sh.sh_flushes);
	w.nowrite = true;
	w.sync = true;
	sx_mutex_lock(&log->l_force_lock);
	assert_int_equal(pthread_create(&th, NULL, writer_run, &w), 0);
	done = poll_for(writer_done, &w);
	sx_mutex_unlock(&log->l_force_lock);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(done);
	assert_int_equal(w.error, 0);
	assert_int_equal(sxt_shim_count(&sh.sh_flushes), f0);

	/* written in place: one flush */
	w.nowrite = false;
	w.sync = false;
	writer_run(&w);
	assert_int_equal(w.error, 0);
	assert_int_equal(sx_fsync(mp, w.fd), 0);
	assert_int_equal(sxt_shim_count(&sh.sh_flushes) - f0, 1);
	assert_int_equal(sx_close(mp, w.fd), 0);
	sx_unmount(mp);
	sx_bdev_destroy(mem);
}

/* Two callers that come while a leader flushes, started by the hook. */
struct late_pair {
	struct sx_log	*log;
	struct writer	*w[2];
	pthread_t	th[2];
	bool		started[2];
	bool		both_wait;	/* both asleep behind the leader within 30 s */
};

/* The hook: B and C write in place and fsync while A's flush runs. */
static void start_late_pair(void *arg)
{
	struct late_pair *lp = arg;
	int i;

	for (i = 0; i < 2; i++)
		lp->started[i] = !pthread_create(&lp->th[i], NULL, writer_run, lp->w[i]);
	lp->both_wait = lp->started[0] && lp->started[1] && poll_for(two_followers, lp->log);
}

/*
 * Files a, b and c, each with a durable block 0 of @old + i, and a writer
 * for each that writes a block of @new + i over it and fsyncs.  The last
 * force is left without a data manifest (unguard()): writes in place then
 * need no fence, which would wait for a leader that holds the force lock.
 */
static void three_writers(struct sx_mount *mp, struct writer w[3], u8 old, u8 new)
{
	int i;

	for (i = 0; i < 3; i++) {
		u8 buf[BS];

		memset(buf, old + i, sizeof(buf));
		w[i] = (struct writer){ .mp = mp, .byte = (u8)(new + i), .sync = true };
		assert_int_equal(sx_create(mp, names[i], 0644, &w[i].fd), 0);
		assert_int_equal(sx_pwrite(mp, w[i].fd, buf, BS, 0), (s64)BS);
		assert_int_equal(sx_fsync(mp, w[i].fd), 0);
	}
	unguard(mp);
}

/* Arm @hook to start writers B and C inside the next flush. */
static void arm_late_pair(struct late_pair *lp, struct sxt_shim *sh, struct sx_mount *mp,
			  struct writer w[3], void (*hook)(void *arg))
{
	memset(lp, 0, sizeof(*lp));
	lp->log = mp->m_log;
	lp->w[0] = &w[1];
	lp->w[1] = &w[2];
	sxt_shim_hook_flush(sh, hook, lp);
}

/*
 * A leads; B and C write and fsync while A's flush runs, so A's force
 * serves neither.  Each sleeps once: when A's force ends, the one that
 * queued first is woken to lead, and the other, whose data that leader's
 * flush covers, sleeps until its force is done.  Two flushes in all, and
 * every write survives a power cut that keeps only what was flushed.
 */
static void test_waits_once(void **state)
{
	struct sx_bdev *mem = sxt_memfs(16 * MIB, BS, 0), *cbd;
	struct writer w[3];
	struct late_pair lp;
	struct sx_log_stats s0, s1;
	struct sx_crashdev *cd;
	struct sxt_shim sh;
	struct sx_mount *mp;
	pthread_t ta;
	u64 f0;
	int i;

	assert_int_equal(sx_crashdev_create(mem, 1, &cbd, &cd), 0);
	sxt_shim_init(&sh, cbd);
	mp = sxt_mount(&sh.sh_bdev);
	three_writers(mp, w, 0x40, 0x50);
	arm_late_pair(&lp, &sh, mp, w, start_late_pair);
	sx_log_get_stats(mp, &s0);
	f0 = sxt_shim_count(&sh.sh_flushes);
	assert_int_equal(pthread_create(&ta, NULL, writer_run, &w[0]), 0);
	assert_int_equal(pthread_join(ta, NULL), 0);
	for (i = 0; i < 2; i++)
		if (lp.started[i])
			assert_int_equal(pthread_join(lp.th[i], NULL), 0);
	assert_true(lp.both_wait);
	for (i = 0; i < 3; i++)
		assert_int_equal(w[i].error, 0);
	sx_log_get_stats(mp, &s1);
	assert_int_equal(s1.ls_waits - s0.ls_waits, 2);
	assert_int_equal(sxt_shim_count(&sh.sh_flushes) - f0, 2);

	sx_crashdev_cut_now(cd, SX_CRASH_DROP);
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(mem);
	for (i = 0; i < 3; i++)
		assert_int_equal(first_byte(mp, names[i]), 0x50 + i);
	sx_unmount(mp);
	sx_bdev_destroy(cbd);
	sx_bdev_destroy(mem);
}

/* The hook of the shutdown test: B and C queue behind A, then the mount shuts down. */
static void late_pair_then_shutdown(void *arg)
{
	struct late_pair *lp = arg;

	start_late_pair(lp);
	sx_force_shutdown(lp->w[0]->mp, -EIO, "test: shut down during a flush");
}

/*
 * The mount shuts down while A flushes and B and C wait behind it.  Each
 * of them is woken in turn to lead, finds the mount down, fails with
 * -EIO and wakes the next: none is left asleep without a leader.  (A
 * hang fails the test after 30 s instead of hanging it.)
 */
static void test_waiters_shutdown(void **state)
{
	struct sx_bdev *mem = sxt_memfs(16 * MIB, BS, 0);
	struct writer w[3];
	struct late_pair lp;
	struct sxt_shim sh;
	struct sx_mount *mp;
	pthread_t ta;
	bool done[3];
	int i;

	sxt_shim_init(&sh, mem);
	mp = sxt_mount(&sh.sh_bdev);
	three_writers(mp, w, 0x60, 0x70);
	arm_late_pair(&lp, &sh, mp, w, late_pair_then_shutdown);
	assert_int_equal(pthread_create(&ta, NULL, writer_run, &w[0]), 0);
	for (i = 0; i < 3; i++)
		done[i] = poll_for(writer_done, &w[i]);
	assert_int_equal(pthread_join(ta, NULL), 0);
	for (i = 0; i < 2; i++) {
		if (!lp.started[i])
			continue;
		if (done[i + 1])
			assert_int_equal(pthread_join(lp.th[i], NULL), 0);
		else
			pthread_detach(lp.th[i]);
	}
	assert_true(lp.both_wait);
	assert_true(done[0] && done[1] && done[2]);
	assert_int_equal(w[1].error, -EIO);
	assert_int_equal(w[2].error, -EIO);
	sx_unmount(mp);
	sx_bdev_destroy(mem);
}

/* A flush that takes SLOW_FLUSH_US: the hook sleeps, and arms itself again while @arg says so. */
#define SLOW_FLUSH_US	3000

struct slow {
	struct sxt_shim	*sh;
	bool		on;		/* atomic */
};

static void slow_flush(void *arg)
{
	struct slow *sl = arg;

	usleep(SLOW_FLUSH_US);
	if (__atomic_load_n(&sl->on, __ATOMIC_SEQ_CST))
		sxt_shim_hook_flush(sl->sh, slow_flush, sl);
}

/* One of three writers: GATHER_WRITES durable atomic writes of block 0, the last of @byte. */
#define GATHER_WRITES	20

static void *trio_run(void *arg)
{
	struct writer *w = arg;
	u8 buf[BS];
	int i;

	sx_thread_enter();
	for (i = 0; i < GATHER_WRITES && !w->error; i++) {
		memset(buf, i == GATHER_WRITES - 1 ? w->byte : i, sizeof(buf));
		w->error = sx_atomic_write(w->mp, w->fd, buf, BS, 0, 0);
	}
	sx_thread_exit();
	return NULL;
}

/*
 * Three writers, each writing durably again as soon as its last write is
 * durable, on a device whose flush takes milliseconds.  A force that
 * served some of them and left the others waiting lets the next leader
 * force only once those it served have committed again (or a flush's
 * time, at most 1 ms, has passed): so each force serves all three, and
 * 20 writes each take about 20 flushes.  Before, the next leader forced
 * at once, and the writers took turns in groups.
 */
static void test_gather_trio(void **state)
{
	struct sx_bdev *mem = sxs_mkimg(16 * MIB, BS, 0, true);
	struct writer w[3];
	struct sxt_shim sh;
	struct slow sl = { .sh = &sh, .on = true };
	struct sx_mount *mp;
	pthread_t th[3];
	u64 f0, flushes;
	int i;

	sxt_shim_init(&sh, mem);
	mp = sxt_mount(&sh.sh_bdev);
	three_writers(mp, w, 0x10, 0x20);
	sxt_shim_hook_flush(&sh, slow_flush, &sl);
	f0 = sxt_shim_count(&sh.sh_flushes);
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, trio_run, &w[i]), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	flushes = sxt_shim_count(&sh.sh_flushes) - f0;
	__atomic_store_n(&sl.on, false, __ATOMIC_SEQ_CST);
	for (i = 0; i < 3; i++)
		assert_int_equal(w[i].error, 0);
	printf("%d durable writes each by 3 writers: %llu flushes\n", GATHER_WRITES,
	       (unsigned long long)flushes);
	assert_true(flushes >= GATHER_WRITES);
	assert_true(flushes <= GATHER_WRITES + GATHER_WRITES / 4);
	sx_shutdown(mp);
	sx_unmount(mp);
	mp = sxt_mount(mem);
	for (i = 0; i < 3; i++)
		assert_int_equal(first_byte(mp, names[i]), 0x20 + i);
	sx_unmount(mp);
	sx_bdev_destroy(mem);
}

/*
 * A lone writer whose forces each find the last force's count of writers
 * set to three (as if it had served others): nobody comes, so each
 * gathering waits in vain, for the last flush's time but at most 1 ms, and
 * after n such waits in a row the next 2^n - 1 forces do not wait (n at
 * most 4).  Twelve forces: wait, skip, wait, skip 3, wait, skip 5 of 7.
 */
static void test_gather_backoff(void **state)
{
	struct sx_bdev *mem = sxs_mkimg(16 * MIB, BS, 0, true);
	static const bool waits[12] = { 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0 };
	struct sx_log_stats s0, s1;
	struct sx_mount *mp = sxt_mount(mem);
	struct sx_log *log = mp->m_log;
	u8 buf[BS];
	int fd, i;

	assert_int_equal(sx_create(mp, "a", 0644, &fd), 0);
	memset(buf, 1, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, fd, buf, BS, 0), (s64)BS);
	assert_int_equal(sx_fsync(mp, fd), 0);
	for (i = 0; i < 12; i++) {
		u64 start, took;

		buf[0] = (u8)i;
		assert_int_equal(sx_atomic_write(mp, fd, buf, BS, 0, SX_ATOMIC_NOSYNC), 0);
		sx_log_get_stats(mp, &s0);
		sx_mutex_lock(&log->l_wait_lock);
		log->l_gather = 3;
		log->l_flush_ns = 5000000;	/* 5 ms: the wait stops at 1 ms */
		sx_mutex_unlock(&log->l_wait_lock);
		start = sx_now_ns();
		assert_int_equal(sx_log_force_seq(mp, sx_log_commit_seq(mp), false), 0);
		took = sx_now_ns() - start;
		sx_log_get_stats(mp, &s1);
		assert_int_equal(s1.ls_gathers - s0.ls_gathers, waits[i]);
		assert_int_equal(s1.ls_gathers_vain - s0.ls_gathers_vain, waits[i]);
		assert_int_equal(s1.ls_gather_skips - s0.ls_gather_skips, !waits[i]);
		if (waits[i])
			assert_true(took >= 1000000 && took < 1000000000);
	}
	assert_int_equal(sx_close(mp, fd), 0);
	sx_unmount(mp);
	sx_bdev_destroy(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fsync_shares_flush),
		cmocka_unit_test(test_fsync_covered),
		cmocka_unit_test(test_waits_once),
		cmocka_unit_test(test_waiters_shutdown),
		cmocka_unit_test(test_gather_trio),
		cmocka_unit_test(test_gather_backoff),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
