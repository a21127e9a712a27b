// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Linux implementation of the platform contract: memory, locks, condition
 * variables, atomics, RCU, time, logging and assertions.
 */
#include "sx_platform.h"
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <linux/printk.h>

/*
 * Memory.  kvmalloc() falls back to vmalloc() only for GFP_KERNEL-compatible
 * flags (6.1 hands anything else to kmalloc alone), so SX_NOFS is expressed
 * as a NOFS scope around a GFP_KERNEL request: reclaim inside it cannot
 * recurse into a filesystem, and large buffers can still be vmalloc'd.
 */

/* Allocate @size bytes with kvmalloc(); never NULL for a zero-byte request. */
static void *sx_kv_alloc(size_t size, unsigned int flags, gfp_t extra)
{
	unsigned int nofs;
	void *p;

	if (!size)
		size = 1;
	if (!(flags & SX_NOFS))
		return kvmalloc(size, GFP_KERNEL | extra);
	nofs = memalloc_nofs_save();
	p = kvmalloc(size, GFP_KERNEL | extra);
	memalloc_nofs_restore(nofs);
	return p;
}

/* Allocate @size bytes. */
void *sx_alloc(size_t size, unsigned int flags)
{
	return sx_kv_alloc(size, flags, 0);
}

/* Allocate @size zeroed bytes. */
void *sx_zalloc(size_t size, unsigned int flags)
{
	return sx_kv_alloc(size, flags, __GFP_ZERO);
}

/* Free memory from sx_alloc()/sx_zalloc(); NULL is ignored. */
void sx_free(void *p)
{
	kvfree(p);
}

/*
 * Slabs.  Objects come from kvmalloc() one by one, as before slabs existed:
 * kmalloc()'s own caches serve the buffer cache's sizes, and the page
 * faults that a userspace slab saves do not happen in the kernel's direct
 * map.
 */
struct sx_slab {
	size_t	s_size;
};

struct sx_slab *sx_slab_create(size_t size)
{
	struct sx_slab *s = kmalloc(sizeof(*s), GFP_KERNEL);

	if (s)
		s->s_size = size;
	return s;
}

void sx_slab_destroy(struct sx_slab *s)
{
	kfree(s);
}

void *sx_slab_alloc(struct sx_slab *s, unsigned int flags)
{
	return sx_kv_alloc(s->s_size, flags, 0);
}

void *sx_slab_zalloc(struct sx_slab *s, unsigned int flags)
{
	return sx_kv_alloc(s->s_size, flags, __GFP_ZERO);
}

void sx_slab_free(struct sx_slab *s, void *p)
{
	kvfree(p);
}

/*
 * Mutexes.  Every sx_mutex shares one lockdep class, because the kernel's
 * mutex_init() takes its class from the call site and all of them are
 * initialised here; a lockdep kernel would need the contract to make
 * sx_mutex_init() a macro.
 */

/* Initialise a mutex. */
void sx_mutex_init(struct sx_mutex *m)
{
	mutex_init(&m->m_lock);
	WRITE_ONCE(m->m_owner, NULL);
}

/* Release a mutex's resources; it must not be held. */
void sx_mutex_destroy(struct sx_mutex *m)
{
	VERIFY(!mutex_is_locked(&m->m_lock));
	mutex_destroy(&m->m_lock);
}

/* Take a mutex; taking it twice in one task is a bug, caught here. */
void sx_mutex_lock(struct sx_mutex *m)
{
	VERIFY(!sx_mutex_is_held(m));
	mutex_lock(&m->m_lock);
	WRITE_ONCE(m->m_owner, current);
}

/* Take a mutex if it is free; one the caller holds is not free. */
bool sx_mutex_trylock(struct sx_mutex *m)
{
	if (sx_mutex_is_held(m))
		return false;
	if (!mutex_trylock(&m->m_lock))
		return false;
	WRITE_ONCE(m->m_owner, current);
	return true;
}

/* Release a mutex; only its holder may. */
void sx_mutex_unlock(struct sx_mutex *m)
{
	VERIFY(sx_mutex_is_held(m));
	WRITE_ONCE(m->m_owner, NULL);
	mutex_unlock(&m->m_lock);
}

/* True if the calling task holds @m. */
bool sx_mutex_is_held(struct sx_mutex *m)
{
	return mutex_is_locked(&m->m_lock) && READ_ONCE(m->m_owner) == current;
}

/* Leave @m out of lockdep: its order follows what it guards, not itself. */
void sx_mutex_set_unordered(struct sx_mutex *m)
{
	lockdep_set_novalidate_class(&m->m_lock);
}

/* Reader/writer semaphores: the kernel's rwsem, with the writer recorded. */

/* Initialise a reader/writer semaphore. */
void sx_rwsem_init(struct sx_rwsem *s)
{
	init_rwsem(&s->s_lock);
	WRITE_ONCE(s->s_writer, NULL);
}

/* Release a reader/writer semaphore's resources; it must be free. */
void sx_rwsem_destroy(struct sx_rwsem *s)
{
	VERIFY(!rwsem_is_locked(&s->s_lock));
}

/* Take @s shared; a writer taking its own lock shared would deadlock. */
void sx_rwsem_down_read(struct sx_rwsem *s)
{
	VERIFY(!sx_rwsem_is_write_held(s));
	down_read(&s->s_lock);
}

/* Drop a shared hold of @s. */
void sx_rwsem_up_read(struct sx_rwsem *s)
{
	up_read(&s->s_lock);
}

/* Take @s exclusive. */
void sx_rwsem_down_write(struct sx_rwsem *s)
{
	VERIFY(!sx_rwsem_is_write_held(s));
	down_write(&s->s_lock);
	WRITE_ONCE(s->s_writer, current);
}

/* Drop an exclusive hold of @s. */
void sx_rwsem_up_write(struct sx_rwsem *s)
{
	VERIFY(sx_rwsem_is_write_held(s));
	WRITE_ONCE(s->s_writer, NULL);
	up_write(&s->s_lock);
}

/* True if the calling task holds @s exclusive. */
bool sx_rwsem_is_write_held(struct sx_rwsem *s)
{
	return rwsem_is_locked(&s->s_lock) && READ_ONCE(s->s_writer) == current;
}

/* Spinlocks. */

/* Initialise a spinlock. */
void sx_spin_init(struct sx_spinlock *l)
{
	spin_lock_init(&l->l_lock);
}

/* Release a spinlock's resources (none in the kernel). */
void sx_spin_destroy(struct sx_spinlock *l)
{
	VERIFY(!spin_is_locked(&l->l_lock));
}

/* Take a spinlock. */
void sx_spin_lock(struct sx_spinlock *l)
{
	spin_lock(&l->l_lock);
}

/* Release a spinlock. */
void sx_spin_unlock(struct sx_spinlock *l)
{
	spin_unlock(&l->l_lock);
}

/* Condition variables: a wait queue and a sequence number (see sx_platform.h). */

/* Initialise a condition variable. */
void sx_cond_init(struct sx_cond *c)
{
	init_waitqueue_head(&c->c_wait);
	atomic_set(&c->c_seq, 0);
}

/* Release a condition variable's resources; nobody may be waiting. */
void sx_cond_destroy(struct sx_cond *c)
{
	VERIFY(!waitqueue_active(&c->c_wait));
}

/*
 * Sleep on @c with @m released.  The sequence is read before the unlock,
 * so a broadcast issued by anyone who takes @m after us is seen; like a
 * pthread condition variable, a return does not promise that the condition
 * the caller waits for holds, only that it is worth looking again.
 */
void sx_cond_wait(struct sx_cond *c, struct sx_mutex *m)
{
	int seq;

	VERIFY(sx_mutex_is_held(m));
	seq = atomic_read(&c->c_seq);
	sx_mutex_unlock(m);
	wait_event(c->c_wait, atomic_read(&c->c_seq) != seq);
	sx_mutex_lock(m);
}

/* sx_cond_wait() that gives up after @timeout_ns: false if it did. */
bool sx_cond_timedwait(struct sx_cond *c, struct sx_mutex *m, u64 timeout_ns)
{
	long left;
	int seq;

	VERIFY(sx_mutex_is_held(m));
	seq = atomic_read(&c->c_seq);
	sx_mutex_unlock(m);
	/* a high-resolution timer: the waits are microseconds, not ticks */
	left = wait_event_hrtimeout(c->c_wait, atomic_read(&c->c_seq) != seq,
				    ns_to_ktime(timeout_ns));
	sx_mutex_lock(m);
	return left == 0;
}

/* As sx_cond_timedwait(): a kernel thread that waits sleeps. */
bool sx_cond_timedwait_busy(struct sx_cond *c, struct sx_mutex *m, u64 timeout_ns)
{
	return sx_cond_timedwait(c, m, timeout_ns);
}

/* Wake every waiter of @c. */
void sx_cond_broadcast(struct sx_cond *c)
{
	/* atomic_inc_return() is fully ordered: the waker's changes go first */
	atomic_inc_return(&c->c_seq);
	wake_up_all(&c->c_wait);
}

/*
 * Events are completions: complete() does its work under the completion's
 * lock, which the waiter takes before it returns, so the waiter cannot free
 * the event while complete() still touches it.
 */

/* Initialise an event, not set. */
void sx_event_init(struct sx_event *e)
{
	init_completion(&e->e_done);
}

/* Sleep until @e is set. */
void sx_event_wait(struct sx_event *e)
{
	wait_for_completion(&e->e_done);
}

/* As sx_event_wait(): a kernel thread that waits sleeps at once. */
void sx_event_wait_busy(struct sx_event *e, unsigned int yields)
{
	sx_event_wait(e);
}

/* Set @e and wake its waiter, which may free it at once. */
void sx_event_set(struct sx_event *e)
{
	complete(&e->e_done);
}

/*
 * Atomics.  The contract promises sequential consistency; the kernel's
 * value-returning RMW operations are fully ordered, but atomic_read() and
 * atomic_set() are not, so they get full barriers (set is an xchg).
 */

/* Read a 32-bit atomic. */
s32 sx_atomic_read(const struct sx_atomic *a)
{
	s32 v;

	smp_mb();
	v = atomic_read(&a->a_val);
	smp_mb();
	return v;
}

/* Set a 32-bit atomic. */
void sx_atomic_set(struct sx_atomic *a, s32 v)
{
	atomic_xchg(&a->a_val, v);
}

/* Add to a 32-bit atomic and return the new value. */
s32 sx_atomic_add_return(struct sx_atomic *a, s32 v)
{
	return atomic_add_return(v, &a->a_val);
}

/* Compare and exchange a 32-bit atomic; returns the value found. */
s32 sx_atomic_cmpxchg(struct sx_atomic *a, s32 old, s32 new)
{
	return atomic_cmpxchg(&a->a_val, old, new);
}

/* Read a 64-bit atomic. */
s64 sx_atomic64_read(const struct sx_atomic64 *a)
{
	s64 v;

	smp_mb();
	v = atomic64_read(&a->a_val);
	smp_mb();
	return v;
}

/* Set a 64-bit atomic. */
void sx_atomic64_set(struct sx_atomic64 *a, s64 v)
{
	atomic64_xchg(&a->a_val, v);
}

/* Add to a 64-bit atomic and return the new value. */
s64 sx_atomic64_add_return(struct sx_atomic64 *a, s64 v)
{
	return atomic64_add_return(v, &a->a_val);
}

/* Compare and exchange a 64-bit atomic; returns the value found. */
s64 sx_atomic64_cmpxchg(struct sx_atomic64 *a, s64 old, s64 new)
{
	return atomic64_cmpxchg(&a->a_val, old, new);
}

/* RCU: the kernel's; threads need no registration. */

/* Register the calling thread (nothing to do in the kernel). */
void sx_thread_enter(void)
{
}

/* Unregister the calling thread (nothing to do in the kernel). */
void sx_thread_exit(void)
{
}

/* Begin an RCU read-side critical section. */
void sx_rcu_read_lock(void)
{
	rcu_read_lock();
}

/* End an RCU read-side critical section. */
void sx_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

/* Wait for every reader that was running when we were called. */
void sx_synchronize_rcu(void)
{
	synchronize_rcu();
}

/* call_rcu()'s callback: find the engine's head around the kernel's and run it. */
static void sx_rcu_trampoline(struct rcu_head *rcu)
{
	struct sx_rcu_head *head = container_of(rcu, struct sx_rcu_head, rh_rcu);

	head->rh_func(head);
}

/* Run @fn(@head) after a grace period (in softirq context: it must not sleep). */
void sx_call_rcu(struct sx_rcu_head *head, void (*fn)(struct sx_rcu_head *head))
{
	head->rh_func = fn;
	call_rcu(&head->rh_rcu, sx_rcu_trampoline);
}

/* Wait until every callback queued so far has run. */
void sx_rcu_barrier(void)
{
	rcu_barrier();
}

/* Time. */

/* Monotonic time in nanoseconds. */
u64 sx_now_ns(void)
{
	return ktime_get_ns();
}

/* Wall-clock time in nanoseconds since the Unix epoch. */
u64 sx_wall_ns(void)
{
	return ktime_get_real_ns();
}

/*
 * Logging goes to printk at the matching level.  The engine's messages
 * carry no line end; one that does is not given a second.
 */
void sx_log_emit(enum sx_log_level level, const char *fmt, ...)
{
	struct va_format vaf;
	const char *nl;
	size_t len = strlen(fmt);
	va_list ap;

	nl = (len && fmt[len - 1] == '\n') ? "" : "\n";
	va_start(ap, fmt);
	vaf.fmt = fmt;
	vaf.va = &ap;
	switch (level) {
	case SX_LOG_ERR:
		printk(KERN_ERR "%pV%s", &vaf, nl);
		break;
	case SX_LOG_WARN:
		printk(KERN_WARNING "%pV%s", &vaf, nl);
		break;
	case SX_LOG_INFO:
		printk(KERN_INFO "%pV%s", &vaf, nl);
		break;
	default:
		printk(KERN_DEBUG "%pV%s", &vaf, nl);
		break;
	}
	va_end(ap);
}

/* A VERIFY or ASSERT failed: say where (the macro then calls BUG()). */
void sx_assert_report(const char *expr, const char *file, int line)
{
	pr_crit("swapext: assertion failed: %s (%s:%d)\n", expr, file, line);
}
