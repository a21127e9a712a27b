/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A device the tests put between the engine and the device below: it
 * counts what reaches it, can fail one write, and can run a hook inside
 * its next flush, once the flush below returned (the engine is then in
 * the middle of its flush, after it took what the flush covers).
 */
#ifndef SXSHIM_H
#define SXSHIM_H

#include <swapext/device.h>
#include "util.h"

struct sxt_shim {
	struct sx_bdev	sh_bdev;	/* hand this to the engine */
	struct sx_bdev	*sh_lower;	/* not owned: the test destroys it */
	u64		sh_writes;	/* counters: read with sxt_shim_count() */
	u64		sh_bytes;
	u64		sh_flushes;
	u64		sh_fail_write;	/* 1-based write number to fail with -EIO, 0: none */
	void		(*sh_flush_hook)(void *arg);
	void		*sh_hook_arg;
};

/* sxt_shim_init() - @sh over @lower, counters at zero, nothing armed */
void sxt_shim_init(struct sxt_shim *sh, struct sx_bdev *lower);
/* sxt_shim_count() - read a counter of @sh (other threads may be adding to it) */
u64 sxt_shim_count(const u64 *counter);
/* sxt_shim_hook_flush() - run @fn(@arg) once, inside the next flush */
void sxt_shim_hook_flush(struct sxt_shim *sh, void (*fn)(void *arg), void *arg);

#endif /* SXSHIM_H */
