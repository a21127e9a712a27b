/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's scenario self-test (engine/diag/selftest.c): the same scenarios
 * in both builds, on memory devices that the caller's glue makes (the
 * userspace unit test with sx_memdev_create(), the kernel module with its
 * vmalloc'd memory device).
 */
#ifndef SWAPEXT_SELFTEST_H
#define SWAPEXT_SELFTEST_H

#include <swapext/types.h>
#include <swapext/swapext.h>

/* Make a zeroed memory device of @size bytes with @sectsize-byte sectors. */
typedef int (*sx_memdev_fn)(uint64_t size, uint32_t sectsize, struct sx_bdev **bdp);

/**
 * sx_selftest_run() - run every scenario: mkfs, mount, transactions,
 * commit and log force, a simulated crash (a copy of the device taken while
 * mounted) and its recovery, the allocator, shutdown
 * @mkdev: makes the memory devices (destroyed through their bd_ops)
 * @out: gets one line per scenario ("PASS name" or "FAIL name: why") and a
 * last line "N passed, N failed"
 * @passed, @failed: the counts
 *
 * Return: 0 if every scenario passed, else -EIO.
 */
SX_API int sx_selftest_run(sx_memdev_fn mkdev, sx_report_fn out, void *arg,
			   uint32_t *passed, uint32_t *failed);

#endif /* SWAPEXT_SELFTEST_H */
