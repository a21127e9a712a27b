/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swapext platform header for POSIX userspace.
 *
 * engine/ files include only this header (by the name "sx_platform.h") and
 * engine headers; -Iuser-glue selects this file, -Ikernel-glue the kernel's.
 * It supplies the kernel-like base types and helpers the engine is written
 * against, then the common contract in <swapext/platform.h>.
 */
#ifndef SX_PLATFORM_USER_H
#define SX_PLATFORM_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <errno.h>
#include <endian.h>
#include <limits.h>
#include <pthread.h>
#include <urcu/urcu-memb.h>
#include <stdio.h>		/* vsnprintf/snprintf, which the kernel also has */

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

/*
 * Little-endian on-disk types; distinct names document intent.  On Linux
 * they come from <linux/types.h>, which glibc's <sys/stat.h> and every
 * <linux/...> header include: a second, different typedef of __le64
 * (uint64_t is unsigned long, the kernel's is unsigned long long) would
 * not compile in any glue file that needs those headers.
 */
#ifdef __linux__
#include <linux/types.h>
#else
typedef uint16_t __le16;
typedef uint32_t __le32;
typedef uint64_t __le64;
#endif

#define cpu_to_le16(x)	((__le16)htole16(x))
#define cpu_to_le32(x)	((__le32)htole32(x))
#define cpu_to_le64(x)	((__le64)htole64(x))
#define le16_to_cpu(x)	((u16)le16toh(x))
#define le32_to_cpu(x)	((u32)le32toh(x))
#define le64_to_cpu(x)	((u64)le64toh(x))

#ifndef EFSCORRUPTED
#define EFSCORRUPTED	EUCLEAN		/* bad metadata */
#endif
#ifndef EFSBADCRC
#define EFSBADCRC	EBADMSG		/* checksum mismatch */
#endif

/* Built with AddressSanitizer (gcc says so one way, clang the other). */
#if defined(__SANITIZE_ADDRESS__)
#define SX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SX_ASAN 1
#endif
#endif

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

#define SX_PACKED	__attribute__((packed))
#define SX_UNUSED	__attribute__((unused))

/* Symbols of the public API; everything else is hidden in libswapext.so. */
#ifndef SX_API
#define SX_API		__attribute__((visibility("default")))
#endif

/* Lock and atomic types (implemented in user-glue/platform_os.c). */
struct sx_mutex {
	pthread_mutex_t	m_lock;
	pthread_t	m_owner;
	bool		m_held;
	bool		m_unordered;	/* sx_mutex_set_unordered() */
	/* an unordered mutex under ThreadSanitizer (platform_os.c) */
	pthread_mutex_t	m_wait_lock;
	pthread_cond_t	m_wait;
	unsigned int	m_waiters;
	bool		m_locked;
};

struct sx_rwsem {
	pthread_rwlock_t s_lock;
	pthread_t	s_writer;
	bool		s_write_held;
};

struct sx_spinlock {
	pthread_mutex_t	l_lock;		/* as xfsprogs does: a mutex */
};

/* A mutex defined and initialised at compile time (no sx_mutex_init()). */
#define SX_DEFINE_MUTEX(name) \
	struct sx_mutex name = { .m_lock = PTHREAD_MUTEX_INITIALIZER }

struct sx_cond {
	pthread_cond_t	c_cond;
};

/* A futex word: 0 until set (platform_os.c). */
struct sx_event {
	uint32_t	e_set;
};

struct sx_atomic {
	int32_t		a_val;
};

struct sx_atomic64 {
	int64_t		a_val;
};

/*
 * RCU is liburcu's "memb" flavour (link with -lurcu-memb).  liburcu queues
 * its own struct rcu_head and calls back with a pointer to it; the glue
 * finds the sx_rcu_head around it and calls the engine's callback, so the
 * engine never sees a liburcu type.
 */
struct sx_rcu_head {
	struct rcu_head	rh_urcu;	/* what liburcu queues */
	void		(*rh_func)(struct sx_rcu_head *head);
};

/*
 * Same ordering as liburcu's rcu_dereference()/rcu_assign_pointer(), but
 * inline: without _LGPL_SOURCE liburcu's versions are out-of-line calls.
 */
#define sx_rcu_dereference(p)	__atomic_load_n(&(p), __ATOMIC_CONSUME)
#define sx_rcu_assign_pointer(p, v) \
	do { __atomic_store_n(&(p), (v), __ATOMIC_RELEASE); } while (0)

/*
 * A plain word shared between threads, read and written in order without a
 * lock (the kernel's smp_load_acquire, smp_store_release and READ_ONCE).
 */
#define sx_load_acquire(x)	__atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define sx_store_release(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define sx_read_once(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Assertions: ASSERT is debug-only, VERIFY is always checked. */
void sx_assert_fail(const char *expr, const char *file, int line)
	__attribute__((noreturn));

#define VERIFY(expr) \
	do { if (unlikely(!(expr))) sx_assert_fail(#expr, __FILE__, __LINE__); } while (0)
#ifdef SX_DEBUG
#define ASSERT(expr)	VERIFY(expr)
#else
#define ASSERT(expr)	do { (void)sizeof(!(expr)); } while (0)
#endif

#include <swapext/platform.h>

/*
 * Userspace-only: run sx_crc32c() with the named implementation ("sw" for
 * slice-by-8 tables, "sse4.2" for the crc32 instruction, NULL for the best
 * this CPU has), so that tests can check each one.  Returns -EOPNOTSUPP if
 * the CPU lacks it, -ENOENT for an unknown name.  Not for engine/ use.
 */
SX_API int sx_crc32c_select(const char *name);

#endif /* SX_PLATFORM_USER_H */
