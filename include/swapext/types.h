/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The basic types of swapext's public headers.  A program that includes
 * <swapext/swapext.h> sees the C library's fixed-width types, size_t and
 * bool, and nothing of the platform layer the engine is built on (no u8,
 * ASSERT, likely, locks, pthread or liburcu); the kernel build takes the
 * same types from <linux/types.h>.  This is the one public header that
 * picks its includes by platform.
 */
#ifndef SWAPEXT_TYPES_H
#define SWAPEXT_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/stddef.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#endif

/*
 * The library's exported functions.  The shared library is built with
 * hidden visibility, so everything else stays private; the kernel exports
 * by EXPORT_SYMBOL_GPL() lists instead (kernel-glue/exports_os.c).
 */
#ifndef SX_API
#if defined(__GNUC__) && !defined(__KERNEL__)
#define SX_API		__attribute__((visibility("default")))
#else
#define SX_API
#endif
#endif

/* Levels of the engine's messages (syslog's numbers). */
enum sx_log_level {
	SX_LOG_ERR = 3,
	SX_LOG_WARN = 4,
	SX_LOG_INFO = 6,
	SX_LOG_DEBUG = 7,
};

#endif /* SWAPEXT_TYPES_H */
