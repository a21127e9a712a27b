/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * POSIX implementation of the platform contract: memory, locks, atomics,
 * RCU (liburcu, memb flavour), time, logging and assertions.
 */
#define _GNU_SOURCE
#include "sx_platform.h"
#include <swapext/device.h>
#include "mem_os.h"

#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <time.h>

/* Built with ThreadSanitizer (gcc says so one way, clang the other). */
#if defined(__SANITIZE_THREAD__)
#define SX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SX_TSAN 1
#endif
#endif

/*
 * Memory.  SX_NOFS has no meaning here: there is no reclaim that could
 * recurse into us.
 *
 * Every allocation is counted so that a test can fail the nth one
 * (sx_alloc_fail()) and see that a workload gave back all it took
 * (as_live).  The counters are relaxed atomics: nothing is ordered by
 * them.  The armed fault is read with one relaxed load and taken under a
 * lock only while armed, so a disarmed allocation never contends.
 */
static u64 sx_mem_calls;
static u64 sx_mem_failed;
static s64 sx_mem_live;

static pthread_mutex_t sx_mem_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static bool sx_mem_fault_armed;		/* read without the lock */
static bool sx_mem_fault_forever;
static u64 sx_mem_fault_countdown;	/* allocations left until the first failure */

/* Whether this allocation is the one armed to fail (or one after it, forever). */
bool sx_mem_fault(void)
{
	bool fail = false;

	__atomic_add_fetch(&sx_mem_calls, 1, __ATOMIC_RELAXED);
	if (likely(!__atomic_load_n(&sx_mem_fault_armed, __ATOMIC_RELAXED)))
		return false;
	pthread_mutex_lock(&sx_mem_fault_lock);
	if (sx_mem_fault_armed) {
		if (sx_mem_fault_countdown > 1) {
			sx_mem_fault_countdown--;
		} else {
			fail = true;
			if (!sx_mem_fault_forever)
				__atomic_store_n(&sx_mem_fault_armed, false, __ATOMIC_RELAXED);
		}
	}
	pthread_mutex_unlock(&sx_mem_fault_lock);
	if (fail)
		__atomic_add_fetch(&sx_mem_failed, 1, __ATOMIC_RELAXED);
	return fail;
}

/* Count a pointer handed out. */
void *sx_mem_got(void *p)
{
	if (p)
		__atomic_add_fetch(&sx_mem_live, 1, __ATOMIC_RELAXED);
	return p;
}

/* Count a pointer given back. */
void sx_mem_gone(void)
{
	__atomic_sub_fetch(&sx_mem_live, 1, __ATOMIC_RELAXED);
}

/* Allocate @size bytes; never returns a valid pointer for a failed request. */
void *sx_alloc(size_t size, unsigned int flags)
{
	if (sx_mem_fault())
		return NULL;
	/* malloc(0) may return NULL, which callers would read as -ENOMEM */
	return sx_mem_got(malloc(size ? size : 1));
}

/* Allocate @size zeroed bytes. */
void *sx_zalloc(size_t size, unsigned int flags)
{
	if (sx_mem_fault())
		return NULL;
	return sx_mem_got(calloc(1, size ? size : 1));
}

/* Free memory from sx_alloc()/sx_zalloc(). */
void sx_free(void *p)
{
	if (p)
		sx_mem_gone();
	free(p);
}

/* Fail the @nth allocation from now, once or from then on; 0 disarms. */
void sx_alloc_fail(u64 nth, bool forever)
{
	pthread_mutex_lock(&sx_mem_fault_lock);
	sx_mem_fault_countdown = nth;
	sx_mem_fault_forever = forever;
	__atomic_store_n(&sx_mem_fault_armed, nth != 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sx_mem_fault_lock);
}

/* Copy the allocation counters. */
void sx_alloc_get_stats(struct sx_alloc_stats *st)
{
	st->as_calls = __atomic_load_n(&sx_mem_calls, __ATOMIC_RELAXED);
	st->as_failed = __atomic_load_n(&sx_mem_failed, __ATOMIC_RELAXED);
	st->as_live = __atomic_load_n(&sx_mem_live, __ATOMIC_RELAXED);
}

/*
 * Mutexes.  The owner is recorded so that sx_mutex_is_held() can answer
 * for the calling thread.  The fields are written only by the holder, so a
 * thread that does not hold the lock can never read its own id with m_held
 * set; relaxed atomics keep the unlocked reads free of data races.
 */

/* Initialise a mutex. */
void sx_mutex_init(struct sx_mutex *m)
{
	VERIFY(pthread_mutex_init(&m->m_lock, NULL) == 0);
	__atomic_store_n(&m->m_held, false, __ATOMIC_RELAXED);
	m->m_unordered = false;
}

/* Release a mutex's resources; it must not be held. */
void sx_mutex_destroy(struct sx_mutex *m)
{
	VERIFY(!__atomic_load_n(&m->m_held, __ATOMIC_RELAXED));
	VERIFY(pthread_mutex_destroy(&m->m_lock) == 0);
	if (m->m_unordered) {
		VERIFY(pthread_cond_destroy(&m->m_wait) == 0);
		VERIFY(pthread_mutex_destroy(&m->m_wait_lock) == 0);
	}
}

/*
 * Unordered mutexes.  Without ThreadSanitizer nothing here checks lock
 * order, and they are plain mutexes.  TSan checks the order of every
 * mutex it sees locked, and its deadlock detector counts every mutex a
 * thread holds, at most 64 (past that it stops the program): a
 * transaction that builds a B+tree of 5,000 records holds more buffers
 * than that.  So under TSan an unordered mutex is a flag, m_locked,
 * guarded by m_wait_lock: TSan sees only m_wait_lock, held for a moment
 * in which nothing else is taken, so it can close no cycle and is never
 * counted among the held; and since each holder takes m_wait_lock to
 * set the flag after the last holder took it to clear it, TSan still
 * orders every holder's accesses after the last one's.
 */
void sx_mutex_set_unordered(struct sx_mutex *m)
{
	VERIFY(pthread_mutex_init(&m->m_wait_lock, NULL) == 0);
	VERIFY(pthread_cond_init(&m->m_wait, NULL) == 0);
	m->m_waiters = 0;
	m->m_locked = false;
	m->m_unordered = true;
}

/* Take @m, an unordered mutex, or with @try only if it is free. */
static bool sx_mutex_lock_unordered(struct sx_mutex *m, bool try)
{
	bool got = true;

	VERIFY(pthread_mutex_lock(&m->m_wait_lock) == 0);
	while (m->m_locked && !try) {
		m->m_waiters++;
		VERIFY(pthread_cond_wait(&m->m_wait, &m->m_wait_lock) == 0);
		m->m_waiters--;
	}
	if (m->m_locked)
		got = false;
	else
		m->m_locked = true;
	VERIFY(pthread_mutex_unlock(&m->m_wait_lock) == 0);
	return got;
}

/* Let go of @m, an unordered mutex, and wake whoever waits for it. */
static void sx_mutex_unlock_unordered(struct sx_mutex *m)
{
	VERIFY(pthread_mutex_lock(&m->m_wait_lock) == 0);
	m->m_locked = false;
	if (m->m_waiters)
		VERIFY(pthread_cond_broadcast(&m->m_wait) == 0);
	VERIFY(pthread_mutex_unlock(&m->m_wait_lock) == 0);
}

#ifdef SX_TSAN
#define sx_mutex_tsan_unordered(m)	((m)->m_unordered)
#else
#define sx_mutex_tsan_unordered(m)	false
#endif

/* Record the calling thread as the holder of a just-acquired mutex. */
static void sx_mutex_set_owner(struct sx_mutex *m)
{
	__atomic_store_n(&m->m_owner, pthread_self(), __ATOMIC_RELAXED);
	__atomic_store_n(&m->m_held, true, __ATOMIC_RELAXED);
}

/* Forget the holder of a mutex about to be released. */
static void sx_mutex_clear_owner(struct sx_mutex *m)
{
	__atomic_store_n(&m->m_held, false, __ATOMIC_RELAXED);
}

/* Take a mutex; taking it twice in one thread is a bug, caught here. */
void sx_mutex_lock(struct sx_mutex *m)
{
	VERIFY(!sx_mutex_is_held(m));
	if (sx_mutex_tsan_unordered(m))
		sx_mutex_lock_unordered(m, false);
	else
		VERIFY(pthread_mutex_lock(&m->m_lock) == 0);
	sx_mutex_set_owner(m);
}

/* Take a mutex if it is free; one the caller holds is not free. */
bool sx_mutex_trylock(struct sx_mutex *m)
{
	int error;

	if (sx_mutex_is_held(m))
		return false;
	if (sx_mutex_tsan_unordered(m)) {
		if (!sx_mutex_lock_unordered(m, true))
			return false;
	} else {
		error = pthread_mutex_trylock(&m->m_lock);
		if (error == EBUSY)
			return false;
		VERIFY(error == 0);
	}
	sx_mutex_set_owner(m);
	return true;
}

/* Release a mutex; only its holder may. */
void sx_mutex_unlock(struct sx_mutex *m)
{
	VERIFY(sx_mutex_is_held(m));
	sx_mutex_clear_owner(m);
	if (sx_mutex_tsan_unordered(m))
		sx_mutex_unlock_unordered(m);
	else
		VERIFY(pthread_mutex_unlock(&m->m_lock) == 0);
}

/* True if the calling thread holds @m. */
bool sx_mutex_is_held(struct sx_mutex *m)
{
	pthread_t owner;

	if (!__atomic_load_n(&m->m_held, __ATOMIC_RELAXED))
		return false;
	owner = __atomic_load_n(&m->m_owner, __ATOMIC_RELAXED);
	return pthread_equal(owner, pthread_self());
}

/*
 * Reader/writer semaphores.  Writers are preferred, as in the kernel's
 * rwsem: glibc's default lets a stream of readers starve a writer forever,
 * and it would hide the recursive-read deadlocks the kernel build has.
 */

/* Initialise a reader/writer semaphore. */
void sx_rwsem_init(struct sx_rwsem *s)
{
	pthread_rwlockattr_t attr;

	VERIFY(pthread_rwlockattr_init(&attr) == 0);
	VERIFY(pthread_rwlockattr_setkind_np(&attr,
			PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) == 0);
	VERIFY(pthread_rwlock_init(&s->s_lock, &attr) == 0);
	pthread_rwlockattr_destroy(&attr);
	__atomic_store_n(&s->s_write_held, false, __ATOMIC_RELAXED);
}

/* Release a reader/writer semaphore's resources. */
void sx_rwsem_destroy(struct sx_rwsem *s)
{
	VERIFY(!__atomic_load_n(&s->s_write_held, __ATOMIC_RELAXED));
	VERIFY(pthread_rwlock_destroy(&s->s_lock) == 0);
}

/* Take @s shared. */
void sx_rwsem_down_read(struct sx_rwsem *s)
{
	VERIFY(!sx_rwsem_is_write_held(s));
	VERIFY(pthread_rwlock_rdlock(&s->s_lock) == 0);
}

/* Drop a shared hold of @s. */
void sx_rwsem_up_read(struct sx_rwsem *s)
{
	VERIFY(pthread_rwlock_unlock(&s->s_lock) == 0);
}

/* Take @s exclusive. */
void sx_rwsem_down_write(struct sx_rwsem *s)
{
	VERIFY(!sx_rwsem_is_write_held(s));
	VERIFY(pthread_rwlock_wrlock(&s->s_lock) == 0);
	__atomic_store_n(&s->s_writer, pthread_self(), __ATOMIC_RELAXED);
	__atomic_store_n(&s->s_write_held, true, __ATOMIC_RELAXED);
}

/* Drop an exclusive hold of @s. */
void sx_rwsem_up_write(struct sx_rwsem *s)
{
	VERIFY(sx_rwsem_is_write_held(s));
	__atomic_store_n(&s->s_write_held, false, __ATOMIC_RELAXED);
	VERIFY(pthread_rwlock_unlock(&s->s_lock) == 0);
}

/* True if the calling thread holds @s exclusive. */
bool sx_rwsem_is_write_held(struct sx_rwsem *s)
{
	pthread_t writer;

	if (!__atomic_load_n(&s->s_write_held, __ATOMIC_RELAXED))
		return false;
	writer = __atomic_load_n(&s->s_writer, __ATOMIC_RELAXED);
	return pthread_equal(writer, pthread_self());
}

/*
 * Spinlocks are plain mutexes, as in xfsprogs: a spinning lock in
 * userspace burns a CPU whenever the holder is preempted.
 */

/* Initialise a spinlock. */
void sx_spin_init(struct sx_spinlock *l)
{
	VERIFY(pthread_mutex_init(&l->l_lock, NULL) == 0);
}

/* Release a spinlock's resources. */
void sx_spin_destroy(struct sx_spinlock *l)
{
	VERIFY(pthread_mutex_destroy(&l->l_lock) == 0);
}

/* Take a spinlock. */
void sx_spin_lock(struct sx_spinlock *l)
{
	VERIFY(pthread_mutex_lock(&l->l_lock) == 0);
}

/* Release a spinlock. */
void sx_spin_unlock(struct sx_spinlock *l)
{
	VERIFY(pthread_mutex_unlock(&l->l_lock) == 0);
}

/* Condition variables. */

/* Initialise a condition variable. */
void sx_cond_init(struct sx_cond *c)
{
	pthread_condattr_t attr;

	/* timed waits count on the clock sx_now_ns() reads */
	VERIFY(pthread_condattr_init(&attr) == 0);
	VERIFY(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0);
	VERIFY(pthread_cond_init(&c->c_cond, &attr) == 0);
	pthread_condattr_destroy(&attr);
}

/* Release a condition variable's resources. */
void sx_cond_destroy(struct sx_cond *c)
{
	VERIFY(pthread_cond_destroy(&c->c_cond) == 0);
}

/* Sleep on @c with @m released; the owner record follows the lock. */
void sx_cond_wait(struct sx_cond *c, struct sx_mutex *m)
{
	VERIFY(sx_mutex_is_held(m) && !m->m_unordered);
	sx_mutex_clear_owner(m);
	VERIFY(pthread_cond_wait(&c->c_cond, &m->m_lock) == 0);
	sx_mutex_set_owner(m);
}

/* sx_cond_wait() that gives up after @timeout_ns: false if it did. */
bool sx_cond_timedwait(struct sx_cond *c, struct sx_mutex *m, u64 timeout_ns)
{
	struct timespec ts;
	u64 when;
	int rc;

	VERIFY(sx_mutex_is_held(m) && !m->m_unordered);
	VERIFY(clock_gettime(CLOCK_MONOTONIC, &ts) == 0);
	when = (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec + timeout_ns;
	ts.tv_sec = (time_t)(when / 1000000000ull);
	ts.tv_nsec = (long)(when % 1000000000ull);
	sx_mutex_clear_owner(m);
	rc = pthread_cond_timedwait(&c->c_cond, &m->m_lock, &ts);
	sx_mutex_set_owner(m);
	VERIFY(rc == 0 || rc == ETIMEDOUT);
	return rc == 0;
}

/*
 * A yield instead of a sleep: in this VM a futex sleep and its wake cost
 * tens of microseconds, the yield lets the threads the caller waits for
 * run at once (a log force's gathering, log_force.c: scripts/ab.sh, 8
 * threads, a timed wait x0.91 against the yields).
 */
bool sx_cond_timedwait_busy(struct sx_cond *c, struct sx_mutex *m, u64 timeout_ns)
{
	(void)c;
	VERIFY(sx_mutex_is_held(m) && !m->m_unordered);
	if (!timeout_ns)
		return false;
	sx_mutex_unlock(m);
	sched_yield();
	sx_mutex_lock(m);
	return true;
}

/* Wake every waiter of @c. */
void sx_cond_broadcast(struct sx_cond *c)
{
	VERIFY(pthread_cond_broadcast(&c->c_cond) == 0);
}

/*
 * Events.  On Linux the waiter sleeps on the event's word with a futex,
 * and a set is a store and, if the waiter said it sleeps, a wake: the
 * wake is a system call on the word's address that reads none of the
 * event's memory, so the waiter may already be gone (a wake that lands on
 * a word reused since can only cause a spurious wakeup, which every futex
 * user tolerates).  Elsewhere the event's word is set under one
 * process-wide lock and the setter reads nothing of the event after its
 * store, so a waiter may return (from its yields) while the setter still
 * holds the lock.  A busy wait yields with sched_yield() before either.
 */
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { SX_EVENT_CLEAR, SX_EVENT_SET, SX_EVENT_SLEEPING };

static void sx_futex(uint32_t *word, int op, uint32_t val)
{
	/* EAGAIN (the word changed) and EINTR only mean: look again */
	(void)syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}
#else
enum { SX_EVENT_CLEAR, SX_EVENT_SET };

static pthread_mutex_t sx_event_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sx_event_cond = PTHREAD_COND_INITIALIZER;
#endif

/* Initialise an event, not set. */
void sx_event_init(struct sx_event *e)
{
	__atomic_store_n(&e->e_set, SX_EVENT_CLEAR, __ATOMIC_RELAXED);
}

/*
 * Wait until @e is set, yielding up to @yields times first.  On Linux the
 * word is SX_EVENT_CLEAR, SX_EVENT_SET or SX_EVENT_SLEEPING (the waiter
 * is about to sleep or asleep in FUTEX_WAIT): a set that finds the waiter
 * still yielding makes no system call, and wakes nobody.
 */
void sx_event_wait_busy(struct sx_event *e, unsigned int yields)
{
#ifdef __linux__
	uint32_t clear = SX_EVENT_CLEAR;

	for (; yields; yields--) {
		if (__atomic_load_n(&e->e_set, __ATOMIC_ACQUIRE) == SX_EVENT_SET)
			return;
		sched_yield();
	}
	if (!__atomic_compare_exchange_n(&e->e_set, &clear, SX_EVENT_SLEEPING, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
		return;		/* set meanwhile */
	while (__atomic_load_n(&e->e_set, __ATOMIC_ACQUIRE) != SX_EVENT_SET)
		sx_futex(&e->e_set, FUTEX_WAIT_PRIVATE, SX_EVENT_SLEEPING);
#else
	for (; yields; yields--) {
		if (__atomic_load_n(&e->e_set, __ATOMIC_ACQUIRE))
			return;
		sched_yield();
	}
	VERIFY(pthread_mutex_lock(&sx_event_lock) == 0);
	while (!__atomic_load_n(&e->e_set, __ATOMIC_ACQUIRE))
		VERIFY(pthread_cond_wait(&sx_event_cond, &sx_event_lock) == 0);
	VERIFY(pthread_mutex_unlock(&sx_event_lock) == 0);
#endif
}

/* Sleep until @e is set. */
void sx_event_wait(struct sx_event *e)
{
	sx_event_wait_busy(e, 0);
}

/* Set @e and wake its waiter, which may free it at once. */
void sx_event_set(struct sx_event *e)
{
#ifdef __linux__
	/* FUTEX_WAKE reads nothing at the address: the event may be gone by then */
	if (__atomic_exchange_n(&e->e_set, SX_EVENT_SET, __ATOMIC_ACQ_REL) == SX_EVENT_SLEEPING)
		sx_futex(&e->e_set, FUTEX_WAKE_PRIVATE, 1);
#else
	VERIFY(pthread_mutex_lock(&sx_event_lock) == 0);
	__atomic_store_n(&e->e_set, SX_EVENT_SET, __ATOMIC_RELEASE);
	VERIFY(pthread_cond_broadcast(&sx_event_cond) == 0);
	VERIFY(pthread_mutex_unlock(&sx_event_lock) == 0);
#endif
}

/* Atomics: sequentially consistent, as the contract promises. */

/* Read a 32-bit atomic. */
s32 sx_atomic_read(const struct sx_atomic *a)
{
	return __atomic_load_n(&a->a_val, __ATOMIC_SEQ_CST);
}

/* Set a 32-bit atomic. */
void sx_atomic_set(struct sx_atomic *a, s32 v)
{
	__atomic_store_n(&a->a_val, v, __ATOMIC_SEQ_CST);
}

/* Add to a 32-bit atomic and return the new value. */
s32 sx_atomic_add_return(struct sx_atomic *a, s32 v)
{
	return __atomic_add_fetch(&a->a_val, v, __ATOMIC_SEQ_CST);
}

/* Compare and exchange a 32-bit atomic; returns the value found. */
s32 sx_atomic_cmpxchg(struct sx_atomic *a, s32 old, s32 new)
{
	/* on failure the builtin stores the value it found into old */
	__atomic_compare_exchange_n(&a->a_val, &old, new, false,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return old;
}

/* Read a 64-bit atomic. */
s64 sx_atomic64_read(const struct sx_atomic64 *a)
{
	return __atomic_load_n(&a->a_val, __ATOMIC_SEQ_CST);
}

/* Set a 64-bit atomic. */
void sx_atomic64_set(struct sx_atomic64 *a, s64 v)
{
	__atomic_store_n(&a->a_val, v, __ATOMIC_SEQ_CST);
}

/* Add to a 64-bit atomic and return the new value. */
s64 sx_atomic64_add_return(struct sx_atomic64 *a, s64 v)
{
	return __atomic_add_fetch(&a->a_val, v, __ATOMIC_SEQ_CST);
}

/* Compare and exchange a 64-bit atomic; returns the value found. */
s64 sx_atomic64_cmpxchg(struct sx_atomic64 *a, s64 old, s64 new)
{
	__atomic_compare_exchange_n(&a->a_val, &old, new, false,
				    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return old;
}

/*
 * RCU.  liburcu refuses a second registration of one thread, but library
 * entry points and the programs around them both want to say "this thread
 * uses RCU"; a per-thread depth lets them nest.
 *
 * ThreadSanitizer.  liburcu is not built with it, and its grace periods
 * are made of membarrier(), futexes and atomics inside the library, which
 * TSan never sees: a reader's accesses and the free after the grace
 * period would look unordered, and so would a call_rcu() and its
 * callback on liburcu's thread.  The glue tells TSan what RCU promises:
 * every read-side section that ends releases one sync object, and code
 * that runs after a grace period (synchronize, barrier, a callback)
 * acquires it; sx_call_rcu() releases its head, the callback acquires it,
 * and a barrier acquires what the callbacks released when they returned.
 * The engine's code is untouched and every access TSan checks is real.
 */
static __thread unsigned int sx_rcu_depth;

#ifdef SX_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);

/* What every read-side section releases and every grace period acquires. */
static char sx_rcu_tsan_gp;
/* What every callback releases when it is done and a barrier acquires. */
static char sx_rcu_tsan_cb;

#define sx_tsan_acquire(p)	__tsan_acquire(p)
#define sx_tsan_release(p)	__tsan_release(p)
#else
#define sx_tsan_acquire(p)	do { } while (0)
#define sx_tsan_release(p)	do { } while (0)
#endif

/* Register the calling thread with liburcu (nests). */
void sx_thread_enter(void)
{
	if (sx_rcu_depth++ == 0)
		urcu_memb_register_thread();
}

/* Unregister the calling thread when its outermost enter ends. */
void sx_thread_exit(void)
{
	VERIFY(sx_rcu_depth > 0);
	if (--sx_rcu_depth == 0)
		urcu_memb_unregister_thread();
}

/* Begin an RCU read-side critical section. */
void sx_rcu_read_lock(void)
{
	urcu_memb_read_lock();
}

/* End an RCU read-side critical section. */
void sx_rcu_read_unlock(void)
{
	sx_tsan_release(&sx_rcu_tsan_gp);
	urcu_memb_read_unlock();
}

/* Wait for every reader that was running when we were called. */
void sx_synchronize_rcu(void)
{
	urcu_memb_synchronize_rcu();
	sx_tsan_acquire(&sx_rcu_tsan_gp);
}

/* liburcu's callback: find the engine's head around liburcu's and run it. */
static void sx_rcu_trampoline(struct rcu_head *urcu)
{
	struct sx_rcu_head *head;

	head = (struct sx_rcu_head *)((char *)urcu -
				      offsetof(struct sx_rcu_head, rh_urcu));
	sx_tsan_acquire(head);
	sx_tsan_acquire(&sx_rcu_tsan_gp);
	head->rh_func(head);
	sx_tsan_release(&sx_rcu_tsan_cb);
}

/* Run @fn(@head) from liburcu's callback thread after a grace period. */
void sx_call_rcu(struct sx_rcu_head *head, void (*fn)(struct sx_rcu_head *head))
{
	head->rh_func = fn;
	sx_tsan_release(head);
	urcu_memb_call_rcu(&head->rh_urcu, sx_rcu_trampoline);
}

/* Wait until every callback queued so far has run. */
void sx_rcu_barrier(void)
{
	urcu_memb_barrier();
	sx_tsan_acquire(&sx_rcu_tsan_cb);
}

/* Time. */

/* Read @clock in nanoseconds. */
static u64 sx_clock_ns(clockid_t clock)
{
	struct timespec ts;

	VERIFY(clock_gettime(clock, &ts) == 0);
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

/* Monotonic time in nanoseconds. */
u64 sx_now_ns(void)
{
	return sx_clock_ns(CLOCK_MONOTONIC);
}

/* Wall-clock time in nanoseconds since the Unix epoch. */
u64 sx_wall_ns(void)
{
	return sx_clock_ns(CLOCK_REALTIME);
}

/*
 * Logging.  The callback is called with sx_log_lock held shared, so that
 * once sx_set_log_callback() returns no thread is still inside the old
 * callback and its argument may go away.  The lock is glibc's default
 * (reader-preferring) kind, so a callback that logs again cannot deadlock;
 * one that calls sx_set_log_callback() would.
 */
static pthread_rwlock_t sx_log_lock = PTHREAD_RWLOCK_INITIALIZER;
static sx_log_callback sx_log_fn;
static void *sx_log_arg;

/* Default sink: warnings and errors on stderr, one line each. */
static void sx_log_stderr(enum sx_log_level level, const char *msg)
{
	if (level <= SX_LOG_WARN)
		fprintf(stderr, "%s\n", msg);
}

/* Format a message and pass it to the callback (or stderr). */
void sx_log_emit(enum sx_log_level level, const char *fmt, ...)
{
	char stackbuf[512];
	char *msg = stackbuf;
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(stackbuf, sizeof(stackbuf), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(stackbuf)) {
		/* too long for the stack: format again, or send it truncated */
		char *big = malloc((size_t)len + 1);

		if (big) {
			va_start(ap, fmt);
			vsnprintf(big, (size_t)len + 1, fmt, ap);
			va_end(ap);
			msg = big;
		} else {
			len = sizeof(stackbuf) - 1;
		}
	}
	/* sinks add their own line end */
	if (len > 0 && msg[len - 1] == '\n')
		msg[len - 1] = '\0';

	pthread_rwlock_rdlock(&sx_log_lock);
	if (sx_log_fn)
		sx_log_fn(sx_log_arg, level, msg);
	else
		sx_log_stderr(level, msg);
	pthread_rwlock_unlock(&sx_log_lock);

	if (msg != stackbuf)
		free(msg);
}

/* Send messages to @fn, or back to stderr with NULL. */
void sx_set_log_callback(sx_log_callback fn, void *arg)
{
	pthread_rwlock_wrlock(&sx_log_lock);
	sx_log_fn = fn;
	sx_log_arg = arg;
	pthread_rwlock_unlock(&sx_log_lock);
}

/* A VERIFY or ASSERT failed: say where, then stop with a core dump. */
void sx_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "swapext: assertion failed: %s (%s:%d)\n", expr, file, line);
	fflush(stderr);
	abort();
}
