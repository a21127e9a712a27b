/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the userspace platform glue: memory, locks and their
 * "is held" assertions, condition variables, events, atomics, RCU, time,
 * fault sites and the log callback.
 *
 * Tests that check that something waits use a short sleep to give a wrong
 * implementation the chance to run ahead; a correct one passes whatever
 * the scheduling.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "sx_platform.h"
#include <swapext/device.h>

#define NTHREADS	4

/* Sleep @ms milliseconds. */
static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0)
		;
}

/* Run @fn in a child process and return its wait status. */
static int run_in_child(void (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* keep the expected assertion message out of the test output */
		if (!freopen("/dev/null", "w", stderr))
			_exit(98);
		fn(arg);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* True if @status says the child died of SIGABRT (a VERIFY failure). */
static bool aborted(int status)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

/* Memory: zalloc zeroes, zero-size requests still succeed, free(NULL) is fine. */
static void test_alloc(void **state)
{
	u8 *p = sx_zalloc(4096, SX_NOFS);
	void *z = sx_alloc(0, 0);
	int i;

	assert_non_null(p);
	for (i = 0; i < 4096; i++)
		assert_int_equal(p[i], 0);
	memset(p, 0xaa, 4096);
	sx_free(p);
	assert_non_null(z);
	sx_free(z);
	sx_free(NULL);
}

#define SLAB_OBJS	6000	/* 1 KiB objects: more than two chunks' worth */

#ifndef SX_ASAN
/* True if the page holding @p is mapped (mincore() fails with ENOMEM if not). */
static bool mapped(const void *p)
{
	unsigned char vec;
	long page = sysconf(_SC_PAGESIZE);

	return mincore((void *)((uintptr_t)p & ~(uintptr_t)(page - 1)), 1, &vec) == 0;
}
#endif

/*
 * A slab's objects are distinct, aligned to their power-of-two size, hold
 * what is written to each, and zalloc zeroes a reused one; freed memory is
 * handed out again; once all are back, no more than one chunk of it stays
 * mapped.
 */
static void test_slab(void **state)
{
	struct sx_slab *s = sx_slab_create(1024);
	struct sx_alloc_stats s0, s1;
	static u8 *p[SLAB_OBJS];
	u32 i, j, unmapped = 0;
	u8 *z;

	assert_non_null(s);
	sx_alloc_get_stats(&s0);
	for (i = 0; i < SLAB_OBJS; i++) {
		p[i] = sx_slab_alloc(s, 0);
		assert_non_null(p[i]);
		assert_int_equal((uintptr_t)p[i] & 1023, 0);
		memset(p[i], (int)(i % 251), 1024);
	}
	sx_alloc_get_stats(&s1);
	assert_int_equal(s1.as_live - s0.as_live, SLAB_OBJS);
	for (i = 0; i < SLAB_OBJS; i++)
		for (j = 0; j < 1024; j += 97)
			assert_int_equal(p[i][j], i % 251);
	/* the last one freed is the next one handed out, zeroed by zalloc */
	sx_slab_free(s, p[77]);
	z = sx_slab_zalloc(s, 0);
	assert_non_null(z);
	for (j = 0; j < 1024; j++)
		assert_int_equal(z[j], 0);
#ifndef SX_ASAN
	assert_ptr_equal(z, p[77]);
#endif
	p[77] = z;
	for (i = 0; i < SLAB_OBJS; i++)
		sx_slab_free(s, p[i]);
	sx_slab_free(s, NULL);
	sx_alloc_get_stats(&s1);
	assert_int_equal(s1.as_live, s0.as_live);
#ifndef SX_ASAN
	/* 6,000 KiB came from three chunks or more; all but one went back */
	for (i = 0; i < SLAB_OBJS; i += 64)
		unmapped += !mapped(p[i]);
	assert_true(unmapped >= (SLAB_OBJS - 2048) / 64);
#else
	(void)unmapped;
#endif
	sx_slab_destroy(s);
	sx_slab_destroy(NULL);
}

/* Odd sizes: 16-byte aligned, the whole size usable, no two overlapping. */
static void test_slab_odd_size(void **state)
{
	struct sx_slab *s = sx_slab_create(200);
	u8 *a, *b;

	assert_non_null(s);
	a = sx_slab_zalloc(s, SX_NOFS);
	b = sx_slab_zalloc(s, SX_NOFS);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal((uintptr_t)a & 15, 0);
	assert_int_equal((uintptr_t)b & 15, 0);
	assert_true(a + 200 <= b || b + 200 <= a);
	memset(a, 1, 200);
	memset(b, 2, 200);
	assert_int_equal(a[199], 1);
	assert_int_equal(b[0], 2);
	sx_slab_free(s, a);
	sx_slab_free(s, b);
	sx_slab_destroy(s);
}

/* An armed fault fails a slab allocation as it fails sx_alloc(). */
static void test_slab_alloc_fail(void **state)
{
	struct sx_slab *s = sx_slab_create(4096);
	struct sx_alloc_stats s0, s1;
	void *a, *b, *c;

	assert_non_null(s);
	sx_alloc_get_stats(&s0);
	sx_alloc_fail(2, false);
	a = sx_slab_alloc(s, 0);
	b = sx_slab_zalloc(s, 0);
	c = sx_slab_alloc(s, 0);
	assert_non_null(a);
	assert_null(b);
	assert_non_null(c);
	assert_int_equal((uintptr_t)c & 4095, 0);
	sx_alloc_get_stats(&s1);
	assert_int_equal(s1.as_calls - s0.as_calls, 3);
	assert_int_equal(s1.as_failed - s0.as_failed, 1);
	assert_int_equal(s1.as_live - s0.as_live, 2);
	sx_slab_free(s, a);
	sx_slab_free(s, c);
	sx_alloc_get_stats(&s1);
	assert_int_equal(s1.as_live, s0.as_live);
	sx_slab_destroy(s);
}

struct slab_worker {
	struct sx_slab	*sw_slab;
	u32		sw_id;
	bool		sw_ok;
};

/* Take and give back objects in a shifting pattern, checking each holds its mark. */
static void *slab_thread(void *arg)
{
	struct slab_worker *w = arg;
	u8 *held[256] = { NULL };
	u32 i, k;

	w->sw_ok = true;
	for (i = 0; i < 40000; i++) {
		k = (i * 7919u + w->sw_id * 31u) % 256;
		if (held[k]) {
			if (held[k][0] != (u8)w->sw_id || held[k][511] != (u8)k)
				w->sw_ok = false;
			sx_slab_free(w->sw_slab, held[k]);
			held[k] = NULL;
		} else {
			held[k] = sx_slab_alloc(w->sw_slab, 0);
			if (!held[k]) {
				w->sw_ok = false;
				continue;
			}
			memset(held[k], w->sw_id, 512);
			held[k][511] = (u8)k;
		}
	}
	for (k = 0; k < 256; k++)
		sx_slab_free(w->sw_slab, held[k]);
	return NULL;
}

/* Threads sharing one slab never get the same object at once. */
static void test_slab_threads(void **state)
{
	struct sx_slab *s = sx_slab_create(512);
	struct slab_worker w[NTHREADS];
	struct sx_alloc_stats s0, s1;
	pthread_t t[NTHREADS];
	int i;

	assert_non_null(s);
	sx_alloc_get_stats(&s0);
	for (i = 0; i < NTHREADS; i++) {
		w[i].sw_slab = s;
		w[i].sw_id = (u32)i + 1;
		assert_int_equal(pthread_create(&t[i], NULL, slab_thread, &w[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		assert_true(w[i].sw_ok);
	}
	sx_alloc_get_stats(&s1);
	assert_int_equal(s1.as_live, s0.as_live);
	sx_slab_destroy(s);
}

struct mutex_probe {
	struct sx_mutex	*mp_mutex;
	bool		mp_held;	/* what sx_mutex_is_held() said there */
	bool		mp_trylock;	/* what sx_mutex_trylock() got there */
};

/* From another thread: is the mutex held by me, and can I take it? */
static void *mutex_probe_thread(void *arg)
{
	struct mutex_probe *mp = arg;

	mp->mp_held = sx_mutex_is_held(mp->mp_mutex);
	mp->mp_trylock = sx_mutex_trylock(mp->mp_mutex);
	if (mp->mp_trylock)
		sx_mutex_unlock(mp->mp_mutex);
	return NULL;
}

/* sx_mutex_is_held() answers for the calling thread only. */
static void test_mutex_held(void **state)
{
	struct mutex_probe mp = { 0 };
	struct sx_mutex m;
	pthread_t t;

	sx_mutex_init(&m);
	mp.mp_mutex = &m;
	assert_false(sx_mutex_is_held(&m));

	sx_mutex_lock(&m);
	assert_true(sx_mutex_is_held(&m));
	mp.mp_held = true;
	mp.mp_trylock = true;
	assert_int_equal(pthread_create(&t, NULL, mutex_probe_thread, &mp), 0);
	pthread_join(t, NULL);
	assert_false(mp.mp_held);
	assert_false(mp.mp_trylock);
	sx_mutex_unlock(&m);
	assert_false(sx_mutex_is_held(&m));

	/* free now: the other thread gets it */
	assert_int_equal(pthread_create(&t, NULL, mutex_probe_thread, &mp), 0);
	pthread_join(t, NULL);
	assert_false(mp.mp_held);
	assert_true(mp.mp_trylock);

	assert_true(sx_mutex_trylock(&m));
	assert_true(sx_mutex_is_held(&m));
	sx_mutex_unlock(&m);
	sx_mutex_destroy(&m);
}

/* Child: take a mutex twice. */
static void child_double_lock(void *arg)
{
	struct sx_mutex m;

	sx_mutex_init(&m);
	sx_mutex_lock(&m);
	sx_mutex_lock(&m);
}

/* Child: release a mutex nobody holds. */
static void child_unlock_unheld(void *arg)
{
	struct sx_mutex m;

	sx_mutex_init(&m);
	sx_mutex_unlock(&m);
}

/* Child: VERIFY a false expression. */
static void child_verify_false(void *arg)
{
	volatile int zero = 0;

	VERIFY(zero == 1);
}

/* Lock misuse and VERIFY failures abort instead of going on. */
static void test_lock_misuse_aborts(void **state)
{
	assert_true(aborted(run_in_child(child_double_lock, NULL)));
	assert_true(aborted(run_in_child(child_unlock_unheld, NULL)));
	assert_true(aborted(run_in_child(child_verify_false, NULL)));
}

struct counter_arg {
	struct sx_mutex	*ca_mutex;
	struct sx_spinlock *ca_spin;
	long		ca_count;
	int		ca_loops;
	struct sx_atomic ca_not_held;	/* cmocka cannot fail from a thread */
};

/* Increment a shared counter under the mutex or the spinlock. */
static void *counter_thread(void *arg)
{
	struct counter_arg *ca = arg;
	int i;

	for (i = 0; i < ca->ca_loops; i++) {
		if (ca->ca_mutex) {
			sx_mutex_lock(ca->ca_mutex);
			if (!sx_mutex_is_held(ca->ca_mutex))
				sx_atomic_add_return(&ca->ca_not_held, 1);
			ca->ca_count++;
			sx_mutex_unlock(ca->ca_mutex);
		} else {
			sx_spin_lock(ca->ca_spin);
			ca->ca_count++;
			sx_spin_unlock(ca->ca_spin);
		}
	}
	return NULL;
}

/* Run counter_thread in NTHREADS threads and check no increment was lost. */
static void run_counters(struct counter_arg *ca)
{
	pthread_t t[NTHREADS];
	int i;

	ca->ca_loops = 50000;
	ca->ca_count = 0;
	sx_atomic_set(&ca->ca_not_held, 0);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, counter_thread, ca), 0);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(ca->ca_count, (long)NTHREADS * ca->ca_loops);
	assert_int_equal(sx_atomic_read(&ca->ca_not_held), 0);
}

/* Mutexes and spinlocks exclude each other's holders. */
static void test_mutual_exclusion(void **state)
{
	struct counter_arg ca = { 0 };
	struct sx_spinlock l;
	struct sx_mutex m;

	sx_mutex_init(&m);
	ca.ca_mutex = &m;
	run_counters(&ca);
	sx_mutex_destroy(&m);

	sx_spin_init(&l);
	ca.ca_mutex = NULL;
	ca.ca_spin = &l;
	run_counters(&ca);
	sx_spin_destroy(&l);
}

#define UNORDERED_HELD	200

/*
 * Unordered mutexes (buffer locks) exclude like any other and refuse a
 * trylock while held; and one thread may hold many at once, as a
 * transaction holds every buffer it joined: past 64, ThreadSanitizer's
 * deadlock detector stopped the TSan build when they were pthread
 * mutexes it saw.
 */
static void test_unordered(void **state)
{
	struct mutex_probe mp = { 0 };
	struct counter_arg ca = { 0 };
	struct sx_mutex *ms;
	pthread_t t;
	int i;

	ms = calloc(UNORDERED_HELD, sizeof(*ms));
	assert_non_null(ms);
	for (i = 0; i < UNORDERED_HELD; i++) {
		sx_mutex_init(&ms[i]);
		sx_mutex_set_unordered(&ms[i]);
	}
	ca.ca_mutex = &ms[0];
	run_counters(&ca);

	for (i = 0; i < UNORDERED_HELD; i++)
		sx_mutex_lock(&ms[i]);
	for (i = 0; i < UNORDERED_HELD; i++)
		assert_true(sx_mutex_is_held(&ms[i]));
	/* another thread's trylock fails while they are held, works after */
	mp.mp_mutex = &ms[UNORDERED_HELD / 2];
	mp.mp_trylock = true;
	assert_int_equal(pthread_create(&t, NULL, mutex_probe_thread, &mp), 0);
	pthread_join(t, NULL);
	assert_false(mp.mp_held);
	assert_false(mp.mp_trylock);
	for (i = UNORDERED_HELD - 1; i >= 0; i--)
		sx_mutex_unlock(&ms[i]);
	assert_int_equal(pthread_create(&t, NULL, mutex_probe_thread, &mp), 0);
	pthread_join(t, NULL);
	assert_true(mp.mp_trylock);
	assert_false(sx_mutex_is_held(mp.mp_mutex));
	for (i = 0; i < UNORDERED_HELD; i++)
		sx_mutex_destroy(&ms[i]);
	free(ms);
}

struct rwsem_arg {
	struct sx_rwsem	*ra_sem;
	struct sx_atomic ra_inside;	/* readers inside now */
	struct sx_atomic ra_max;	/* most readers inside at once */
	struct sx_atomic ra_entered;	/* readers that got in */
	struct sx_atomic ra_write_held;	/* is_write_held() true in a reader */
};

/* Reader: hold @s shared until every reader is inside, or give up. */
static void *rwsem_reader(void *arg)
{
	struct rwsem_arg *ra = arg;
	int n, tries;

	sx_rwsem_down_read(ra->ra_sem);
	sx_atomic_add_return(&ra->ra_entered, 1);
	if (sx_rwsem_is_write_held(ra->ra_sem))
		sx_atomic_set(&ra->ra_write_held, 1);
	sx_atomic_add_return(&ra->ra_inside, 1);
	for (tries = 0; tries < 2000 && sx_atomic_read(&ra->ra_inside) < NTHREADS; tries++)
		sleep_ms(1);
	n = sx_atomic_read(&ra->ra_inside);
	for (;;) {
		s32 max = sx_atomic_read(&ra->ra_max);

		if (n <= max || sx_atomic_cmpxchg(&ra->ra_max, max, n) == max)
			break;
	}
	sleep_ms(5);
	sx_atomic_add_return(&ra->ra_inside, -1);
	sx_rwsem_up_read(ra->ra_sem);
	return NULL;
}

/* Readers share the semaphore; a writer excludes them. */
static void test_rwsem(void **state)
{
	struct rwsem_arg ra = { 0 };
	pthread_t t[NTHREADS];
	struct sx_rwsem s;
	int i;

	sx_rwsem_init(&s);
	ra.ra_sem = &s;
	assert_false(sx_rwsem_is_write_held(&s));

	/* shared: all the readers are inside together */
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, rwsem_reader, &ra), 0);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(sx_atomic_read(&ra.ra_max), NTHREADS);
	assert_int_equal(sx_atomic_read(&ra.ra_write_held), 0);

	/* exclusive: no reader gets in while the writer holds it */
	sx_atomic_set(&ra.ra_entered, 0);
	sx_rwsem_down_write(&s);
	assert_true(sx_rwsem_is_write_held(&s));
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, rwsem_reader, &ra), 0);
	sleep_ms(100);
	assert_int_equal(sx_atomic_read(&ra.ra_entered), 0);
	sx_rwsem_up_write(&s);
	assert_false(sx_rwsem_is_write_held(&s));
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(sx_atomic_read(&ra.ra_entered), NTHREADS);
	assert_int_equal(sx_atomic_read(&ra.ra_write_held), 0);
	sx_rwsem_destroy(&s);
}

struct cond_arg {
	struct sx_mutex	ca_mutex;
	struct sx_cond	ca_cond;
	int		ca_waiting;	/* under ca_mutex */
	bool		ca_go;		/* under ca_mutex */
	int		ca_woken;	/* under ca_mutex */
	bool		ca_held_after;	/* every waiter held the mutex on wakeup */
};

/* Waiter: sleep until ca_go, then check the mutex came back to us. */
static void *cond_waiter(void *arg)
{
	struct cond_arg *ca = arg;
	bool held;

	sx_mutex_lock(&ca->ca_mutex);
	ca->ca_waiting++;
	while (!ca->ca_go)
		sx_cond_wait(&ca->ca_cond, &ca->ca_mutex);
	held = sx_mutex_is_held(&ca->ca_mutex);
	if (!held)
		ca->ca_held_after = false;
	ca->ca_woken++;
	sx_mutex_unlock(&ca->ca_mutex);
	return NULL;
}

/* A broadcast wakes every waiter; waiting releases the mutex. */
static void test_cond(void **state)
{
	struct cond_arg ca = { .ca_held_after = true };
	pthread_t t[NTHREADS];
	int i, waiting;

	sx_mutex_init(&ca.ca_mutex);
	sx_cond_init(&ca.ca_cond);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, cond_waiter, &ca), 0);

	/* we can only see all of them waiting if each released the mutex */
	for (;;) {
		sx_mutex_lock(&ca.ca_mutex);
		waiting = ca.ca_waiting;
		if (waiting == NTHREADS)
			break;
		sx_mutex_unlock(&ca.ca_mutex);
		sleep_ms(1);
	}
	sx_mutex_unlock(&ca.ca_mutex);
	sleep_ms(20);
	sx_mutex_lock(&ca.ca_mutex);
	assert_int_equal(ca.ca_woken, 0);
	ca.ca_go = true;
	sx_cond_broadcast(&ca.ca_cond);
	sx_mutex_unlock(&ca.ca_mutex);

	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(ca.ca_woken, NTHREADS);
	assert_true(ca.ca_held_after);
	sx_cond_destroy(&ca.ca_cond);
	sx_mutex_destroy(&ca.ca_mutex);
}

/* One thread that waits with a long timeout until told to go. */
static void *timed_waiter(void *arg)
{
	struct cond_arg *ca = arg;

	sx_mutex_lock(&ca->ca_mutex);
	ca->ca_waiting++;
	while (!ca->ca_go)
		if (sx_cond_timedwait(&ca->ca_cond, &ca->ca_mutex, 60ull * 1000000000ull))
			ca->ca_woken++;
	ca->ca_held_after = ca->ca_held_after && sx_mutex_is_held(&ca->ca_mutex);
	sx_mutex_unlock(&ca->ca_mutex);
	return NULL;
}

/*
 * Start @waiter (a thread that waits with a 60 s deadline until told to
 * go), tell it to go once it waits, and check that a broadcast ended the
 * wait long before the deadline, the mutex held after every return.
 * Destroys @ca's mutex and condition.
 */
static void go_waiter(struct cond_arg *ca, void *(*waiter)(void *arg))
{
	pthread_t t;
	u64 start = sx_now_ns();
	int waiting;

	assert_int_equal(pthread_create(&t, NULL, waiter, ca), 0);
	do {
		sleep_ms(1);
		sx_mutex_lock(&ca->ca_mutex);
		waiting = ca->ca_waiting;
		sx_mutex_unlock(&ca->ca_mutex);
	} while (!waiting);
	sleep_ms(5);
	sx_mutex_lock(&ca->ca_mutex);
	ca->ca_go = true;
	sx_cond_broadcast(&ca->ca_cond);
	sx_mutex_unlock(&ca->ca_mutex);
	pthread_join(t, NULL);
	/* woken, not timed out: the 60 s did not pass */
	assert_true(ca->ca_woken >= 1);
	assert_true(sx_now_ns() - start < 30ull * 1000000000ull);
	assert_true(ca->ca_held_after);
	sx_cond_destroy(&ca->ca_cond);
	sx_mutex_destroy(&ca->ca_mutex);
}

/*
 * A timed wait nobody ends returns false no sooner than its timeout, with
 * the mutex held again; a broadcast ends a long one early, returning true.
 */
static void test_cond_timedwait(void **state)
{
	struct cond_arg ca = { .ca_held_after = true };
	u64 start;

	sx_mutex_init(&ca.ca_mutex);
	sx_cond_init(&ca.ca_cond);
	sx_mutex_lock(&ca.ca_mutex);
	start = sx_now_ns();
	assert_false(sx_cond_timedwait(&ca.ca_cond, &ca.ca_mutex, 20000000));
	assert_true(sx_now_ns() - start >= 20000000);
	assert_true(sx_mutex_is_held(&ca.ca_mutex));
	sx_mutex_unlock(&ca.ca_mutex);

	go_waiter(&ca, timed_waiter);
}

/* One thread that waits busily, with a 60 s deadline of its own, until told to go. */
static void *busy_waiter(void *arg)
{
	struct cond_arg *ca = arg;
	u64 end = sx_now_ns() + 60ull * 1000000000ull, now;

	sx_mutex_lock(&ca->ca_mutex);
	ca->ca_waiting++;
	while (!ca->ca_go && (now = sx_now_ns()) < end) {
		if (sx_cond_timedwait_busy(&ca->ca_cond, &ca->ca_mutex, end - now))
			ca->ca_woken++;
		ca->ca_held_after = ca->ca_held_after && sx_mutex_is_held(&ca->ca_mutex);
	}
	sx_mutex_unlock(&ca->ca_mutex);
	return NULL;
}

/*
 * A busy timed wait with no time left returns false at once, the mutex
 * held; a longer one lets go of the mutex while it waits (the test takes
 * it to say go), returns with it held, and a broadcast ends the wait long
 * before its deadline.
 */
static void test_cond_timedwait_busy(void **state)
{
	struct cond_arg ca = { .ca_held_after = true };

	sx_mutex_init(&ca.ca_mutex);
	sx_cond_init(&ca.ca_cond);
	sx_mutex_lock(&ca.ca_mutex);
	assert_false(sx_cond_timedwait_busy(&ca.ca_cond, &ca.ca_mutex, 0));
	assert_true(sx_mutex_is_held(&ca.ca_mutex));
	sx_mutex_unlock(&ca.ca_mutex);

	go_waiter(&ca, busy_waiter);
}

struct event_arg {
	struct sx_event	ea_event;
	unsigned int	ea_yields;	/* sx_event_wait_busy()'s, or 0: sx_event_wait() */
	int		ea_payload;	/* written before the set, no lock */
	struct sx_atomic ea_waiting;
	struct sx_atomic ea_returned;
	int		ea_seen;
};

static void *event_waiter(void *arg)
{
	struct event_arg *ea = arg;

	sx_atomic_set(&ea->ea_waiting, 1);
	if (ea->ea_yields)
		sx_event_wait_busy(&ea->ea_event, ea->ea_yields);
	else
		sx_event_wait(&ea->ea_event);
	ea->ea_seen = ea->ea_payload;
	sx_atomic_set(&ea->ea_returned, 1);
	return NULL;
}

/*
 * A waiter on a new event (sx_event_wait(), or sx_event_wait_busy() with
 * @yields) until a set @ms after it began: it must not return before the
 * set, and must see what was written before it.
 */
static void event_wait_once(unsigned int yields, int ms)
{
	struct event_arg ea = { .ea_yields = yields };
	pthread_t t;

	sx_event_init(&ea.ea_event);
	sx_atomic_set(&ea.ea_waiting, 0);
	sx_atomic_set(&ea.ea_returned, 0);
	assert_int_equal(pthread_create(&t, NULL, event_waiter, &ea), 0);
	while (!sx_atomic_read(&ea.ea_waiting))
		sleep_ms(1);
	sleep_ms(ms);
	assert_int_equal(sx_atomic_read(&ea.ea_returned), 0);
	ea.ea_payload = ms + 1;
	sx_event_set(&ea.ea_event);
	pthread_join(t, NULL);
	assert_int_equal(sx_atomic_read(&ea.ea_returned), 1);
	assert_int_equal(ea.ea_seen, ms + 1);
}

/*
 * A wait lasts until the set, and sees what the setter wrote before it;
 * a wait on an event already set returns at once.
 */
static void test_event(void **state)
{
	struct sx_event e;

	event_wait_once(0, 20);
	sx_event_init(&e);
	sx_event_set(&e);
	sx_event_wait(&e);	/* would hang if the set were lost */
}

/*
 * A busy wait lasts until the set too, and sees what was written before
 * it: whether the set comes while the waiter still yields (a billion
 * yields outlast 20 ms) or after it went to sleep (ten yields do not); a
 * busy wait on an event already set returns at once.
 */
static void test_event_busy(void **state)
{
	struct sx_event e;

	event_wait_once(1000000000u, 20);
	event_wait_once(10, 20);
	event_wait_once(1, 0);
	sx_event_init(&e);
	sx_event_set(&e);
	sx_event_wait_busy(&e, 5);
}

#define EVENT_ROUNDS	20000

/* The setter's side of test_event_on_stack(): set each event it is handed. */
struct event_relay {
	struct sx_mutex	er_lock;
	struct sx_cond	er_cond;
	struct sx_event	*er_next;	/* under er_lock */
	int		*er_value;	/* under er_lock */
	bool		er_done;
};

static void *event_setter(void *arg)
{
	struct event_relay *er = arg;
	int n = 0;

	sx_mutex_lock(&er->er_lock);
	for (;;) {
		struct sx_event *e;

		while (!er->er_next && !er->er_done)
			sx_cond_wait(&er->er_cond, &er->er_lock);
		if (!er->er_next)
			break;
		e = er->er_next;
		er->er_next = NULL;
		*er->er_value = ++n;
		sx_mutex_unlock(&er->er_lock);
		sx_event_set(e);	/* its waiter may be gone right after this */
		sx_mutex_lock(&er->er_lock);
	}
	sx_mutex_unlock(&er->er_lock);
	return NULL;
}

/* One round: an event on this frame's stack, handed over and waited for (@yields busy). */
static int event_round(struct event_relay *er, unsigned int yields)
{
	struct sx_event e;
	int value = 0;

	sx_event_init(&e);
	sx_mutex_lock(&er->er_lock);
	er->er_next = &e;
	er->er_value = &value;
	sx_cond_broadcast(&er->er_cond);
	sx_mutex_unlock(&er->er_lock);
	if (yields)
		sx_event_wait_busy(&e, yields);
	else
		sx_event_wait(&e);
	return value;
}

/*
 * Events on the waiter's stack, as the log's waiters keep them: each round
 * reuses the frame of the last, which its setter may still be leaving.
 * Every round must end, with the value written before its set.  Rounds
 * take turns at sleeping at once, yielding a little and yielding until
 * the set, so that a set finds its waiter in each state.
 */
static void test_event_on_stack(void **state)
{
	struct event_relay er = { .er_next = NULL };
	pthread_t t;
	int i;

	sx_mutex_init(&er.er_lock);
	sx_cond_init(&er.er_cond);
	assert_int_equal(pthread_create(&t, NULL, event_setter, &er), 0);
	for (i = 1; i <= EVENT_ROUNDS; i++)
		assert_int_equal(event_round(&er, i % 3 == 0 ? 0 : i % 3 == 1 ? 3 : 1000000000u), i);
	sx_mutex_lock(&er.er_lock);
	er.er_done = true;
	sx_cond_broadcast(&er.er_cond);
	sx_mutex_unlock(&er.er_lock);
	pthread_join(t, NULL);
	sx_cond_destroy(&er.er_cond);
	sx_mutex_destroy(&er.er_lock);
}

/* Atomic read, set, add_return and cmpxchg, 32 and 64 bits. */
static void test_atomics_basic(void **state)
{
	struct sx_atomic a;
	struct sx_atomic64 b;

	sx_atomic_set(&a, 5);
	assert_int_equal(sx_atomic_read(&a), 5);
	assert_int_equal(sx_atomic_add_return(&a, 3), 8);
	assert_int_equal(sx_atomic_add_return(&a, -10), -2);
	assert_int_equal(sx_atomic_cmpxchg(&a, -2, 7), -2);	/* succeeds */
	assert_int_equal(sx_atomic_read(&a), 7);
	assert_int_equal(sx_atomic_cmpxchg(&a, 1, 9), 7);	/* fails */
	assert_int_equal(sx_atomic_read(&a), 7);
	sx_atomic_set(&a, INT32_MAX);
	assert_int_equal(sx_atomic_read(&a), INT32_MAX);

	sx_atomic64_set(&b, 1ll << 40);
	assert_true(sx_atomic64_read(&b) == 1ll << 40);
	assert_true(sx_atomic64_add_return(&b, 1ll << 33) == (1ll << 40) + (1ll << 33));
	assert_true(sx_atomic64_add_return(&b, -(1ll << 41)) ==
		    (1ll << 33) - (1ll << 40));
	assert_true(sx_atomic64_cmpxchg(&b, (1ll << 33) - (1ll << 40), 1ll << 50) ==
		    (1ll << 33) - (1ll << 40));
	assert_true(sx_atomic64_read(&b) == 1ll << 50);
	assert_true(sx_atomic64_cmpxchg(&b, 0, 1) == 1ll << 50);
	assert_true(sx_atomic64_read(&b) == 1ll << 50);
}

struct atomic_arg {
	struct sx_atomic	aa_a;
	struct sx_atomic64	aa_b;
	struct sx_atomic	aa_cas;	/* incremented by cmpxchg loops */
};

/* Hammer the atomics from several threads. */
static void *atomic_thread(void *arg)
{
	struct atomic_arg *aa = arg;
	int i;

	for (i = 0; i < 100000; i++) {
		s32 old;

		sx_atomic_add_return(&aa->aa_a, 1);
		sx_atomic64_add_return(&aa->aa_b, 1ll << 20);
		do {
			old = sx_atomic_read(&aa->aa_cas);
		} while (sx_atomic_cmpxchg(&aa->aa_cas, old, old + 1) != old);
	}
	return NULL;
}

/* No update is lost when threads race. */
static void test_atomics_threads(void **state)
{
	struct atomic_arg aa;
	pthread_t t[NTHREADS];
	int i;

	sx_atomic_set(&aa.aa_a, 0);
	sx_atomic64_set(&aa.aa_b, 0);
	sx_atomic_set(&aa.aa_cas, 0);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, atomic_thread, &aa), 0);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(sx_atomic_read(&aa.aa_a), NTHREADS * 100000);
	assert_true(sx_atomic64_read(&aa.aa_b) == (s64)NTHREADS * 100000 * (1ll << 20));
	assert_int_equal(sx_atomic_read(&aa.aa_cas), NTHREADS * 100000);
}

/* RCU-protected object: b is always 2 * a unless it was freed. */
struct rcu_obj {
	long		ro_a;
	long		ro_b;
	bool		ro_dead;
	struct sx_rcu_head ro_rcu;
};

static struct rcu_obj *rcu_global;
static struct sx_atomic rcu_stop;
static struct sx_atomic rcu_bad;
static struct sx_atomic rcu_reads;
static struct sx_atomic rcu_readers_started;

/* Reader: check every object it sees is whole and alive. */
static void *rcu_reader(void *arg)
{
	sx_thread_enter();
	sx_atomic_add_return(&rcu_readers_started, 1);
	while (!sx_atomic_read(&rcu_stop)) {
		struct rcu_obj *o;

		sx_rcu_read_lock();
		o = sx_rcu_dereference(rcu_global);
		if (o->ro_dead || o->ro_b != 2 * o->ro_a)
			sx_atomic_add_return(&rcu_bad, 1);
		sx_rcu_read_unlock();
		sx_atomic_add_return(&rcu_reads, 1);
	}
	sx_thread_exit();
	return NULL;
}

/* Replace the global object; wait out the readers, then kill the old one. */
static void rcu_replace(long v)
{
	struct rcu_obj *n = calloc(1, sizeof(*n)), *old = rcu_global;

	assert_non_null(n);
	n->ro_a = v;
	n->ro_b = 2 * v;
	sx_rcu_assign_pointer(rcu_global, n);
	sx_synchronize_rcu();
	/* a reader still using it would see ro_dead */
	old->ro_dead = true;
	old->ro_a = -1;
	free(old);
}

/* Readers in several threads never see an object after its grace period. */
static void test_rcu_readers(void **state)
{
	pthread_t t[NTHREADS];
	long v;
	int i;

	rcu_global = calloc(1, sizeof(*rcu_global));
	assert_non_null(rcu_global);
	sx_atomic_set(&rcu_stop, 0);
	sx_atomic_set(&rcu_bad, 0);
	sx_atomic_set(&rcu_reads, 0);
	sx_atomic_set(&rcu_readers_started, 0);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, rcu_reader, NULL), 0);
	while (sx_atomic_read(&rcu_readers_started) < NTHREADS)
		sched_yield();
	for (v = 1; v <= 300; v++) {
		s32 reads = sx_atomic_read(&rcu_reads);

		rcu_replace(v);
		/* let the readers overlap every replacement, even on one CPU */
		while (sx_atomic_read(&rcu_reads) < reads + NTHREADS)
			sched_yield();
	}
	sx_atomic_set(&rcu_stop, 1);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(sx_atomic_read(&rcu_bad), 0);
	assert_true(sx_atomic_read(&rcu_reads) >= 300 * NTHREADS);
	free(rcu_global);
	rcu_global = NULL;
}

struct rcu_holder {
	struct sx_atomic rh_inside;	/* the reader is in its critical section */
	struct sx_atomic rh_release;	/* tell it to leave */
	struct sx_atomic rh_synced;	/* synchronize_rcu() returned */
};

/* Reader: enter a critical section and stay until told to leave. */
static void *rcu_holding_reader(void *arg)
{
	struct rcu_holder *rh = arg;

	sx_thread_enter();
	sx_rcu_read_lock();
	sx_atomic_set(&rh->rh_inside, 1);
	while (!sx_atomic_read(&rh->rh_release))
		sleep_ms(1);
	sx_rcu_read_unlock();
	sx_thread_exit();
	return NULL;
}

/* Writer: one grace period, then say so. */
static void *rcu_syncer(void *arg)
{
	struct rcu_holder *rh = arg;

	sx_thread_enter();
	sx_synchronize_rcu();
	sx_atomic_set(&rh->rh_synced, 1);
	sx_thread_exit();
	return NULL;
}

/* Wait until @a becomes nonzero. */
static void wait_for(struct sx_atomic *a)
{
	while (!sx_atomic_read(a))
		sleep_ms(1);
}

/* synchronize_rcu() waits for a reader that was already inside. */
static void test_rcu_synchronize_waits(void **state)
{
	struct rcu_holder rh;
	pthread_t r, w;

	sx_atomic_set(&rh.rh_inside, 0);
	sx_atomic_set(&rh.rh_release, 0);
	sx_atomic_set(&rh.rh_synced, 0);
	assert_int_equal(pthread_create(&r, NULL, rcu_holding_reader, &rh), 0);
	wait_for(&rh.rh_inside);
	assert_int_equal(pthread_create(&w, NULL, rcu_syncer, &rh), 0);
	sleep_ms(100);
	assert_int_equal(sx_atomic_read(&rh.rh_synced), 0);
	sx_atomic_set(&rh.rh_release, 1);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	assert_int_equal(sx_atomic_read(&rh.rh_synced), 1);
}

static struct sx_atomic rcu_cb_runs;
static struct sx_atomic rcu_cb_bad;

/* call_rcu callback (liburcu's thread): check, count and free the object. */
static void rcu_obj_free(struct sx_rcu_head *head)
{
	struct rcu_obj *o = (struct rcu_obj *)((char *)head -
					       offsetof(struct rcu_obj, ro_rcu));

	if (o->ro_b != 2 * o->ro_a)
		sx_atomic_add_return(&rcu_cb_bad, 1);
	sx_atomic_add_return(&rcu_cb_runs, 1);
	free(o);
}

/* call_rcu callbacks run after the grace period; rcu_barrier waits for them. */
static void test_call_rcu(void **state)
{
	struct rcu_holder rh;
	struct rcu_obj *o;
	pthread_t r;
	int i;

	sx_atomic_set(&rcu_cb_runs, 0);
	sx_atomic_set(&rcu_cb_bad, 0);
	for (i = 0; i < 100; i++) {
		o = calloc(1, sizeof(*o));
		assert_non_null(o);
		o->ro_a = i;
		o->ro_b = 2 * i;
		sx_call_rcu(&o->ro_rcu, rcu_obj_free);
	}
	sx_rcu_barrier();
	assert_int_equal(sx_atomic_read(&rcu_cb_runs), 100);

	/* a reader that is inside holds the callback back */
	sx_atomic_set(&rh.rh_inside, 0);
	sx_atomic_set(&rh.rh_release, 0);
	assert_int_equal(pthread_create(&r, NULL, rcu_holding_reader, &rh), 0);
	wait_for(&rh.rh_inside);
	o = calloc(1, sizeof(*o));
	assert_non_null(o);
	sx_call_rcu(&o->ro_rcu, rcu_obj_free);
	sleep_ms(100);
	assert_int_equal(sx_atomic_read(&rcu_cb_runs), 100);
	sx_atomic_set(&rh.rh_release, 1);
	pthread_join(r, NULL);
	sx_rcu_barrier();
	assert_int_equal(sx_atomic_read(&rcu_cb_runs), 101);
	/* each callback got its own object back, intact */
	assert_int_equal(sx_atomic_read(&rcu_cb_bad), 0);
}

/* Thread registration nests. */
static void test_thread_enter_nests(void **state)
{
	/* the group setup already entered once */
	sx_thread_enter();
	sx_rcu_read_lock();
	sx_rcu_read_unlock();
	sx_thread_exit();
	sx_rcu_read_lock();
	sx_rcu_read_unlock();
	sx_synchronize_rcu();
}

/* Monotonic time moves forward at the right rate; wall time is now. */
static void test_time(void **state)
{
	u64 t0 = sx_now_ns(), t1, wall;

	sleep_ms(20);
	t1 = sx_now_ns();
	assert_true(t1 - t0 >= 20000000ull);
	assert_true(t1 - t0 < 5000000000ull);
	wall = sx_wall_ns();
	assert_true(wall / 1000000000ull >= (u64)time(NULL) - 1);
	assert_true(wall / 1000000000ull <= (u64)time(NULL) + 1);
}

/* A fault site armed once fails its nth call only. */
static void test_fault_once(void **state)
{
	u64 h0 = sx_fault_hits("tp_once");

	assert_int_equal(sx_fault("tp_once"), 0);
	assert_int_equal(sx_fault_hits("tp_once"), h0 + 1);
	assert_int_equal(sx_fault_arm("tp_once", 3, false, -EIO), 0);
	assert_int_equal(sx_fault("tp_once"), 0);
	assert_int_equal(sx_fault("tp_once"), 0);
	assert_int_equal(sx_fault("tp_once"), -EIO);
	assert_int_equal(sx_fault("tp_once"), 0);
	assert_int_equal(sx_fault("tp_once"), 0);
	assert_int_equal(sx_fault_hits("tp_once"), h0 + 6);
	/* other sites are untouched */
	assert_int_equal(sx_fault("tp_other"), 0);

	/* first call */
	assert_int_equal(sx_fault_arm("tp_once", 1, false, -ENOMEM), 0);
	assert_int_equal(sx_fault("tp_once"), -ENOMEM);
	assert_int_equal(sx_fault("tp_once"), 0);
}

/* A fault site armed forever fails from its nth call on until disarmed. */
static void test_fault_forever(void **state)
{
	int i;

	assert_int_equal(sx_fault_arm("tp_forever", 2, true, -ENOSPC), 0);
	assert_int_equal(sx_fault("tp_forever"), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(sx_fault("tp_forever"), -ENOSPC);
	sx_fault_disarm_all();
	assert_int_equal(sx_fault("tp_forever"), 0);

	/* nth 0 disarms one site */
	assert_int_equal(sx_fault_arm("tp_forever", 1, true, -EIO), 0);
	assert_int_equal(sx_fault("tp_forever"), -EIO);
	assert_int_equal(sx_fault_arm("tp_forever", 0, false, 0), 0);
	assert_int_equal(sx_fault("tp_forever"), 0);
}

/* Names are compared by content, hit counts exist for every site called. */
static void test_fault_names_and_hits(void **state)
{
	char name[32], toolong[100];
	int i;

	assert_int_equal(sx_fault_hits("tp_never_called"), 0);
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "tp_site_%d", i);
		assert_int_equal(sx_fault(name), 0);
		assert_int_equal(sx_fault(name), 0);
	}
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "tp_site_%d", i);
		assert_int_equal(sx_fault_hits(name), 2);
	}
	/* armed through a stack copy, hit through a literal */
	snprintf(name, sizeof(name), "tp_site_%d", 7);
	assert_int_equal(sx_fault_arm(name, 1, false, -EROFS), 0);
	memset(name, 'x', sizeof(name) - 1);
	assert_int_equal(sx_fault("tp_site_7"), -EROFS);

	/* bad arguments */
	assert_int_equal(sx_fault_arm("tp_bad", 1, false, 0), -EINVAL);
	assert_int_equal(sx_fault_arm("tp_bad", 1, false, 5), -EINVAL);
	assert_int_equal(sx_fault_arm(NULL, 1, false, -EIO), -EINVAL);
	/* a name too long to arm can never fail */
	memset(toolong, 'y', sizeof(toolong) - 1);
	toolong[sizeof(toolong) - 1] = '\0';
	assert_int_equal(sx_fault_arm(toolong, 1, true, -EIO), -EINVAL);
	assert_int_equal(sx_fault(toolong), 0);
	sx_fault_disarm_all();
}

static struct sx_atomic fault_fired;

/* Many threads through one site. */
static void *fault_thread(void *arg)
{
	int i;

	for (i = 0; i < 10000; i++)
		if (sx_fault("tp_threads") == -EAGAIN)
			sx_atomic_add_return(&fault_fired, 1);
	return NULL;
}

/* Concurrent callers: every hit is counted and a once-fault fires once. */
static void test_fault_threads(void **state)
{
	pthread_t t[NTHREADS];
	u64 h0 = sx_fault_hits("tp_threads");
	int i;

	sx_atomic_set(&fault_fired, 0);
	assert_int_equal(sx_fault_arm("tp_threads", 5000, false, -EAGAIN), 0);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, fault_thread, NULL), 0);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(sx_fault_hits("tp_threads") - h0, NTHREADS * 10000);
	assert_int_equal(sx_atomic_read(&fault_fired), 1);
}

/* The nth allocation fails once; the counters see every call and free. */
static void test_alloc_fail_once(void **state)
{
	struct sx_alloc_stats s0, s1;
	void *p[4];
	int i;

	sx_alloc_get_stats(&s0);
	sx_alloc_fail(3, false);
	p[0] = sx_alloc(10, 0);
	p[1] = sx_zalloc(10, 0);
	p[2] = sx_alloc(10, 0);
	p[3] = sx_zalloc(0, 0);
	assert_non_null(p[0]);
	assert_non_null(p[1]);
	assert_null(p[2]);
	assert_non_null(p[3]);
	sx_alloc_get_stats(&s1);
	assert_int_equal(s1.as_calls - s0.as_calls, 4);
	assert_int_equal(s1.as_failed - s0.as_failed, 1);
	assert_int_equal(s1.as_live - s0.as_live, 3);
	for (i = 0; i < 4; i++)
		sx_free(p[i]);
	sx_alloc_get_stats(&s1);
	assert_int_equal(s1.as_live, s0.as_live);
}

/* Forever fails every allocation from the nth on; nth 0 disarms. */
static void test_alloc_fail_forever(void **state)
{
	struct sx_alloc_stats s0, s1;
	void *p;
	int i;

	sx_alloc_get_stats(&s0);
	sx_alloc_fail(2, true);
	p = sx_alloc(8, 0);
	assert_non_null(p);
	sx_free(p);
	for (i = 0; i < 10; i++)
		assert_null(sx_zalloc(8, 0));
	sx_alloc_fail(0, false);
	p = sx_alloc(8, 0);
	assert_non_null(p);
	sx_free(p);
	sx_alloc_get_stats(&s1);
	assert_int_equal(s1.as_calls - s0.as_calls, 12);
	assert_int_equal(s1.as_failed - s0.as_failed, 10);
	assert_int_equal(s1.as_live, s0.as_live);
}

static void *alloc_thread(void *arg)
{
	struct sx_atomic *nulls = arg;
	int i;

	for (i = 0; i < 10000; i++) {
		void *p = sx_alloc(16, 0);

		if (!p)
			sx_atomic_add_return(nulls, 1);
		sx_free(p);
	}
	return NULL;
}

/* Threads racing through an armed fault: exactly one allocation fails. */
static void test_alloc_fail_threads(void **state)
{
	struct sx_alloc_stats s0, s1;
	struct sx_atomic nulls;
	pthread_t t[NTHREADS];
	int i;

	sx_atomic_set(&nulls, 0);
	sx_alloc_get_stats(&s0);
	sx_alloc_fail(5000, false);
	for (i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, alloc_thread, &nulls), 0);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	sx_alloc_get_stats(&s1);
	assert_int_equal(sx_atomic_read(&nulls), 1);
	assert_int_equal(s1.as_calls - s0.as_calls, NTHREADS * 10000);
	assert_int_equal(s1.as_failed - s0.as_failed, 1);
	assert_int_equal(s1.as_live, s0.as_live);
}

#define LOG_MAX	16

struct log_capture {
	int			lc_count;
	enum sx_log_level	lc_level[LOG_MAX];
	char			lc_msg[LOG_MAX][2048];
};

/* Test log callback: keep what we are given. */
static void capture_log(void *arg, enum sx_log_level level, const char *msg)
{
	struct log_capture *lc = arg;

	if (lc->lc_count >= LOG_MAX)
		return;
	lc->lc_level[lc->lc_count] = level;
	snprintf(lc->lc_msg[lc->lc_count], sizeof(lc->lc_msg[0]), "%s", msg);
	lc->lc_count++;
}

/* The callback gets every level, formatted, without the trailing newline. */
static void test_log_callback(void **state)
{
	struct log_capture lc = { 0 };
	char big[1500];

	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';

	sx_set_log_callback(capture_log, &lc);
	sx_log_emit(SX_LOG_ERR, "error %d", 1);
	sx_log_emit(SX_LOG_WARN, "warn %s", "two");
	sx_log_emit(SX_LOG_INFO, "info\n");
	sx_log_emit(SX_LOG_DEBUG, "debug %x", 0xbeef);
	sx_log_emit(SX_LOG_INFO, "<%s>", big);
	sx_set_log_callback(NULL, NULL);
	sx_log_emit(SX_LOG_DEBUG, "not captured");

	assert_int_equal(lc.lc_count, 5);
	assert_int_equal(lc.lc_level[0], SX_LOG_ERR);
	assert_string_equal(lc.lc_msg[0], "error 1");
	assert_int_equal(lc.lc_level[1], SX_LOG_WARN);
	assert_string_equal(lc.lc_msg[1], "warn two");
	assert_int_equal(lc.lc_level[2], SX_LOG_INFO);
	assert_string_equal(lc.lc_msg[2], "info");
	assert_int_equal(lc.lc_level[3], SX_LOG_DEBUG);
	assert_string_equal(lc.lc_msg[3], "debug beef");
	/* longer than the formatting buffer on the stack: not truncated */
	assert_int_equal(strlen(lc.lc_msg[4]), sizeof(big) + 1);
	assert_int_equal(lc.lc_msg[4][0], '<');
	assert_int_equal(lc.lc_msg[4][sizeof(big)], '>');
}

/* Without a callback, warnings and errors go to stderr and the rest nowhere. */
static void test_log_default_stderr(void **state)
{
	char path[] = "/tmp/sx_test_log_XXXXXX";
	char out[512] = { 0 };
	int fd, saved;
	ssize_t n;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	fflush(stderr);
	saved = dup(2);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, 2), 2);

	sx_set_log_callback(NULL, NULL);
	sx_log_emit(SX_LOG_DEBUG, "quiet-debug");
	sx_log_emit(SX_LOG_INFO, "quiet-info");
	sx_log_emit(SX_LOG_WARN, "loud-warn %d", 4);
	sx_log_emit(SX_LOG_ERR, "loud-err");
	fflush(stderr);

	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	n = pread(fd, out, sizeof(out) - 1, 0);
	close(fd);
	assert_true(n > 0);
	assert_string_equal(out, "loud-warn 4\nloud-err\n");
}

/* Register the main thread with RCU for the whole group. */
static int group_setup(void **state)
{
	sx_thread_enter();
	return 0;
}

/* Wait for callbacks still queued, then unregister. */
static int group_teardown(void **state)
{
	sx_rcu_barrier();
	sx_thread_exit();
	return 0;
}

/* Run every test in this file. */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_slab),
		cmocka_unit_test(test_slab_odd_size),
		cmocka_unit_test(test_slab_alloc_fail),
		cmocka_unit_test(test_slab_threads),
		cmocka_unit_test(test_mutex_held),
		cmocka_unit_test(test_lock_misuse_aborts),
		cmocka_unit_test(test_mutual_exclusion),
		cmocka_unit_test(test_unordered),
		cmocka_unit_test(test_rwsem),
		cmocka_unit_test(test_cond),
		cmocka_unit_test(test_cond_timedwait),
		cmocka_unit_test(test_cond_timedwait_busy),
		cmocka_unit_test(test_event),
		cmocka_unit_test(test_event_busy),
		cmocka_unit_test(test_event_on_stack),
		cmocka_unit_test(test_atomics_basic),
		cmocka_unit_test(test_atomics_threads),
		cmocka_unit_test(test_rcu_readers),
		cmocka_unit_test(test_rcu_synchronize_waits),
		cmocka_unit_test(test_call_rcu),
		cmocka_unit_test(test_thread_enter_nests),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_fault_once),
		cmocka_unit_test(test_fault_forever),
		cmocka_unit_test(test_fault_names_and_hits),
		cmocka_unit_test(test_fault_threads),
		cmocka_unit_test(test_alloc_fail_once),
		cmocka_unit_test(test_alloc_fail_forever),
		cmocka_unit_test(test_alloc_fail_threads),
		cmocka_unit_test(test_log_callback),
		cmocka_unit_test(test_log_default_stderr),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
