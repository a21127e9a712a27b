/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swapext platform header for the Linux kernel (written against 6.1).
 *
 * engine/ files include only this header (by the name "sx_platform.h") and
 * engine headers; -Ikernel-glue selects this file.  The base types, the
 * endian helpers, likely/unlikely, ARRAY_SIZE, offsetof, va_list and the
 * string and snprintf family come from the kernel itself; this file adds
 * the contract's lock, atomic and RCU types, ASSERT/VERIFY and the
 * filesystem error codes, then the common contract in <swapext/platform.h>.
 *
 * Keep the kernel headers pulled in here few and low-level: every engine
 * file sees them, and a name an engine file uses for a static function or
 * a variable must not collide with a macro they define.
 */
#ifndef SX_PLATFORM_KERNEL_H
#define SX_PLATFORM_KERNEL_H

#include <linux/types.h>
#include <linux/stddef.h>
#include <linux/stdarg.h>
#include <linux/compiler.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <linux/bug.h>
#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/completion.h>
#include <linux/rcupdate.h>
#include <asm/byteorder.h>

/* Not in the kernel's errno.h: XFS defines them privately the same way. */
#ifndef EFSCORRUPTED
#define EFSCORRUPTED	EUCLEAN		/* bad metadata */
#endif
#ifndef EFSBADCRC
#define EFSBADCRC	EBADMSG		/* checksum mismatch */
#endif

#define SX_PACKED	__packed
#define SX_UNUSED	__maybe_unused

/*
 * Exports are EXPORT_SYMBOL_GPL() lines in kernel-glue/exports_os.c, made
 * from a list that `make kmod` generates from the SX_API definitions in
 * the engine sources (kernel-glue/gen-api.sh), not an attribute on the definition.
 */
#define SX_API

/*
 * Lock types (kernel-glue/platform_os.c).  The kernel's mutex and rwsem
 * cannot say whether the *calling* task holds them (mutex_is_locked() only
 * says that someone does), so the holder is recorded beside the lock; it is
 * written only by the holder, so a task that does not hold the lock can
 * never find itself there.
 */
struct sx_mutex {
	struct mutex		m_lock;
	struct task_struct	*m_owner;
};

/* A mutex defined and initialised at compile time (no sx_mutex_init()). */
#define SX_DEFINE_MUTEX(name) \
	struct sx_mutex name = { .m_lock = __MUTEX_INITIALIZER(name.m_lock) }

struct sx_rwsem {
	struct rw_semaphore	s_lock;
	struct task_struct	*s_writer;
};

struct sx_spinlock {
	spinlock_t		l_lock;
};

/*
 * A condition variable: a wait queue and a sequence number.  A waiter reads
 * the sequence while it still holds the mutex, and sleeps until the number
 * moves; a broadcast bumps it before waking the queue, so a broadcast that
 * comes between the waiter's unlock and its sleep is not lost.
 */
struct sx_cond {
	wait_queue_head_t	c_wait;
	atomic_t		c_seq;
};

/* A completion: complete() is safe against the waiter freeing it at once. */
struct sx_event {
	struct completion	e_done;
};

struct sx_atomic {
	atomic_t		a_val;
};

struct sx_atomic64 {
	atomic64_t		a_val;
};

/* Kernel RCU: the engine's callback is called through a trampoline. */
struct sx_rcu_head {
	struct rcu_head		rh_rcu;
	void			(*rh_func)(struct sx_rcu_head *head);
};

/*
 * The engine dereferences RCU-protected pointers that carry no __rcu
 * annotation, sometimes under its own update-side lock rather than
 * rcu_read_lock(): the _check form with a true condition keeps the
 * ordering and skips the lockdep "outside a read section" check.
 */
#define sx_rcu_dereference(p)		rcu_dereference_check((p), 1)
#define sx_rcu_assign_pointer(p, v)	rcu_assign_pointer((p), (v))

/* A plain word shared between threads, read and written in order without a lock. */
#define sx_load_acquire(x)	smp_load_acquire(&(x))
#define sx_store_release(x, v)	smp_store_release(&(x), (v))
#define sx_read_once(x)		READ_ONCE(x)

/*
 * Assertions.  VERIFY is always checked and ends in BUG(): the contract
 * says the engine cannot go on past it.  ASSERT is VERIFY under SX_DEBUG.
 * BUG() is expanded here, at the failing site, rather than inside a
 * __noreturn sx_assert_fail(): objtool knows only the kernel's own noreturn
 * functions and would report every caller as falling through.
 */
void sx_assert_report(const char *expr, const char *file, int line);

#define VERIFY(expr) \
	do { \
		if (unlikely(!(expr))) { \
			sx_assert_report(#expr, __FILE__, __LINE__); \
			BUG(); \
		} \
	} while (0)
#ifdef SX_DEBUG
#define ASSERT(expr)	VERIFY(expr)
#else
#define ASSERT(expr)	do { (void)sizeof(!(expr)); } while (0)
#endif

#include <swapext/platform.h>

#endif /* SX_PLATFORM_KERNEL_H */
