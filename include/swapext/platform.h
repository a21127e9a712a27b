/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swapext platform contract.
 *
 * This is everything engine/ may call outside itself.  Each glue directory
 * (user-glue/, kernel-glue/) provides an sx_platform.h that defines the basic
 * types (u8..u64, __le16/32/64, the lock, atomic and RCU types, ASSERT and
 * VERIFY, likely/unlikely, endian helpers, EFSCORRUPTED and EFSBADCRC) and
 * then includes this file for the function contract.  The glue implements the
 * functions in *_os.c files.  Keep this contract small: every entry must be
 * implementable in both a kernel and a POSIX process.
 */
#ifndef SWAPEXT_PLATFORM_H
#define SWAPEXT_PLATFORM_H

#include <swapext/types.h>
#include <swapext/bdev.h>

/*
 * Memory.  All allocations may fail and return NULL; callers turn that into
 * -ENOMEM.  SX_NOFS is passed inside transactions: in the kernel it maps to
 * GFP_NOFS so that reclaim cannot recurse into a filesystem holding our locks.
 */
#define SX_NOFS		(1u << 0)

/** sx_alloc() - allocate @size bytes (any size; large sizes may be vmalloc'd) */
void *sx_alloc(size_t size, unsigned int flags);
/** sx_zalloc() - allocate @size zeroed bytes */
void *sx_zalloc(size_t size, unsigned int flags);
/** sx_free() - free memory from sx_alloc()/sx_zalloc(); NULL is ignored */
void sx_free(void *p);

/*
 * Slabs: objects of one size that a cache takes and gives back at a high
 * rate (the buffer cache's buffers and their blocks).  Each allocation
 * counts as one sx_alloc() would (it may fail the same way); an object
 * goes back to the slab it came from, and a slab is destroyed only when
 * all its objects are back.  An object whose size is a power of two is
 * aligned to it, up to 4 KiB.
 */
struct sx_slab;
/** sx_slab_create() - a slab of @size-byte objects, or NULL without memory */
struct sx_slab *sx_slab_create(size_t size);
/** sx_slab_destroy() - free @s (NULL is ignored), whose objects must all be back */
void sx_slab_destroy(struct sx_slab *s);
/** sx_slab_alloc() - an object of @s, contents undefined, or NULL */
void *sx_slab_alloc(struct sx_slab *s, unsigned int flags);
/** sx_slab_zalloc() - a zeroed object of @s, or NULL */
void *sx_slab_zalloc(struct sx_slab *s, unsigned int flags);
/** sx_slab_free() - give @p back to @s; NULL is ignored */
void sx_slab_free(struct sx_slab *s, void *p);

/*
 * Locks.  The lock types (struct sx_mutex, struct sx_rwsem, struct
 * sx_spinlock, struct sx_cond, struct sx_event) are defined by the glue.
 * A condition variable is always used with an sx_mutex.
 * SX_DEFINE_MUTEX(name), a glue macro, defines a mutex that needs no
 * sx_mutex_init() (for static data).
 */
/** sx_mutex_init() - initialise a sleeping mutex */
void sx_mutex_init(struct sx_mutex *m);
/** sx_mutex_destroy() - release a mutex's resources */
void sx_mutex_destroy(struct sx_mutex *m);
/** sx_mutex_lock() - take a mutex, sleeping if needed */
void sx_mutex_lock(struct sx_mutex *m);
/** sx_mutex_trylock() - take a mutex if it is free; true on success */
bool sx_mutex_trylock(struct sx_mutex *m);
/** sx_mutex_unlock() - release a mutex held by the caller */
void sx_mutex_unlock(struct sx_mutex *m);
/** sx_mutex_is_held() - true if the calling thread holds @m (for assertions) */
bool sx_mutex_is_held(struct sx_mutex *m);
/**
 * sx_mutex_set_unordered() - leave @m out of lock-order checking (lockdep,
 * ThreadSanitizer), as the kernel's lockdep_set_novalidate_class() does:
 * for a kind of lock taken in an order that follows the role of what it
 * guards, which changes, not the lock's identity (buffer locks).  Right
 * after sx_mutex_init(); such a mutex is never used with sx_cond_wait().
 */
void sx_mutex_set_unordered(struct sx_mutex *m);

/** sx_rwsem_init() - initialise a reader/writer semaphore */
void sx_rwsem_init(struct sx_rwsem *s);
/** sx_rwsem_destroy() - release a reader/writer semaphore's resources */
void sx_rwsem_destroy(struct sx_rwsem *s);
/** sx_rwsem_down_read() - take @s shared */
void sx_rwsem_down_read(struct sx_rwsem *s);
/** sx_rwsem_up_read() - drop a shared hold of @s */
void sx_rwsem_up_read(struct sx_rwsem *s);
/** sx_rwsem_down_write() - take @s exclusive */
void sx_rwsem_down_write(struct sx_rwsem *s);
/** sx_rwsem_up_write() - drop an exclusive hold of @s */
void sx_rwsem_up_write(struct sx_rwsem *s);
/** sx_rwsem_is_write_held() - true if the calling thread holds @s exclusive */
bool sx_rwsem_is_write_held(struct sx_rwsem *s);

/** sx_spin_init() - initialise a spinlock (never sleep while holding it) */
void sx_spin_init(struct sx_spinlock *l);
/** sx_spin_destroy() - release a spinlock's resources */
void sx_spin_destroy(struct sx_spinlock *l);
/** sx_spin_lock() - take a spinlock */
void sx_spin_lock(struct sx_spinlock *l);
/** sx_spin_unlock() - release a spinlock */
void sx_spin_unlock(struct sx_spinlock *l);

/** sx_cond_init() - initialise a condition variable */
void sx_cond_init(struct sx_cond *c);
/** sx_cond_destroy() - release a condition variable's resources */
void sx_cond_destroy(struct sx_cond *c);
/** sx_cond_wait() - atomically release @m, sleep until woken, retake @m */
void sx_cond_wait(struct sx_cond *c, struct sx_mutex *m);
/**
 * sx_cond_timedwait() - sx_cond_wait() for at most @timeout_ns nanoseconds
 *
 * Return: false if the time ran out, true if woken (or woken spuriously).
 */
bool sx_cond_timedwait(struct sx_cond *c, struct sx_mutex *m, u64 timeout_ns);
/**
 * sx_cond_timedwait_busy() - sx_cond_timedwait() for a wait that should
 * end within microseconds while other threads have work: the glue may
 * instead let go of @m, give the CPU to other threads once and retake @m,
 * and return true, as a spurious wakeup would (the kernel's sleeps).  So
 * the caller checks its condition and its deadline after each return.
 */
bool sx_cond_timedwait_busy(struct sx_cond *c, struct sx_mutex *m, u64 timeout_ns);
/** sx_cond_broadcast() - wake every waiter of @c */
void sx_cond_broadcast(struct sx_cond *c);

/*
 * One-shot events (struct sx_event, defined by the glue): one thread sleeps
 * until another sets the event, with no lock to retake on waking.  The
 * waiter may return and free the event as soon as it is set, so an event
 * can live on the waiter's stack: sx_event_set() touches nothing of it
 * that the waiter's return could free.  A set happens before the return
 * of the wait it ends.
 */
/** sx_event_init() - initialise @e, not set */
void sx_event_init(struct sx_event *e);
/** sx_event_wait() - sleep until @e is set (at once if it is) */
void sx_event_wait(struct sx_event *e);
/**
 * sx_event_wait_busy() - wait until @e is set, first giving the CPU to
 * other threads up to @yields times while it is not, and only then
 * sleeping: for a wait that should end soon while other threads have
 * work, where a sleep and a wake cost more than the yields.  The glue may
 * sleep at once (the kernel's does).
 */
void sx_event_wait_busy(struct sx_event *e, unsigned int yields);
/** sx_event_set() - set @e and wake its waiter */
void sx_event_set(struct sx_event *e);

/*
 * Atomics: struct sx_atomic (32-bit) and struct sx_atomic64, defined by the
 * glue.  All operations are sequentially consistent.  For a plain aligned
 * word that one thread publishes and others read without a lock, the glue
 * also defines three macros on the word itself (an lvalue):
 * sx_load_acquire(x), sx_store_release(x, v) and sx_read_once(x) (a
 * relaxed, tear-free read), as the kernel's smp_load_acquire(),
 * smp_store_release() and READ_ONCE().  core/ and engine/ use no compiler
 * atomics of their own (check-portable).
 */
/** sx_atomic_read() - read a 32-bit atomic */
s32 sx_atomic_read(const struct sx_atomic *a);
/** sx_atomic_set() - set a 32-bit atomic */
void sx_atomic_set(struct sx_atomic *a, s32 v);
/** sx_atomic_add_return() - add @v and return the new value */
s32 sx_atomic_add_return(struct sx_atomic *a, s32 v);
/** sx_atomic_cmpxchg() - set to @new if equal to @old; returns the old value */
s32 sx_atomic_cmpxchg(struct sx_atomic *a, s32 old, s32 new);
/** sx_atomic64_read() - read a 64-bit atomic */
s64 sx_atomic64_read(const struct sx_atomic64 *a);
/** sx_atomic64_set() - set a 64-bit atomic */
void sx_atomic64_set(struct sx_atomic64 *a, s64 v);
/** sx_atomic64_add_return() - add @v and return the new value */
s64 sx_atomic64_add_return(struct sx_atomic64 *a, s64 v);
/** sx_atomic64_cmpxchg() - set to @new if equal to @old; returns the old value */
s64 sx_atomic64_cmpxchg(struct sx_atomic64 *a, s64 old, s64 new);

/*
 * RCU.  Readers bracket lookups with sx_rcu_read_lock()/unlock(); writers
 * publish with sx_rcu_assign_pointer() (a glue macro, as is
 * sx_rcu_dereference()) and free with sx_call_rcu() or after
 * sx_synchronize_rcu().  Every thread that uses RCU calls sx_thread_enter()
 * first and sx_thread_exit() before it ends (liburcu registration in
 * userspace; nothing in the kernel).
 */
/** sx_thread_enter() - register the calling thread with the platform */
void sx_thread_enter(void);
/** sx_thread_exit() - unregister the calling thread */
void sx_thread_exit(void);
/** sx_rcu_read_lock() - begin an RCU read-side critical section */
void sx_rcu_read_lock(void);
/** sx_rcu_read_unlock() - end an RCU read-side critical section */
void sx_rcu_read_unlock(void);
/** sx_synchronize_rcu() - wait until every pre-existing reader has finished */
void sx_synchronize_rcu(void);
/** sx_call_rcu() - run @fn(@head) after a grace period */
void sx_call_rcu(struct sx_rcu_head *head, void (*fn)(struct sx_rcu_head *head));
/** sx_rcu_barrier() - wait for every queued sx_call_rcu() callback to run */
void sx_rcu_barrier(void);

/* Time. */
/** sx_now_ns() - monotonic time in nanoseconds */
u64 sx_now_ns(void);
/** sx_wall_ns() - wall-clock time in nanoseconds since the Unix epoch */
u64 sx_wall_ns(void);

/*
 * Logging.  Levels follow syslog.  In userspace the message goes to a
 * callback that a program or test may replace; in the kernel to printk.
 */
/* enum sx_log_level is in <swapext/types.h>. */
/** sx_log_emit() - emit one formatted log message at @level */
void sx_log_emit(enum sx_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * crc32c (Castagnoli).  Like the kernel's crc32c(): @crc is the running
 * value, with no pre- or post-inversion.  Checksums on disk are
 * ~sx_crc32c(~0, buf, len) (see sx_cksum() in engine/util.h).
 */
/** sx_crc32c() - update a running crc32c with @len bytes at @buf */
u32 sx_crc32c(u32 crc, const void *buf, size_t len);

/*
 * Named fault-injection sites.  Engine code calls sx_fault("site") at points
 * where a failure is worth testing; it returns 0, or the negative errno that a
 * test has armed for that site.  Builds without fault injection return 0.
 */
/** sx_fault() - 0, or the error armed for the fault site @site */
int sx_fault(const char *site);

/* Block devices: struct sx_bdev and its operations, in <swapext/bdev.h>. */

#endif /* SWAPEXT_PLATFORM_H */
