// SPDX-License-Identifier: GPL-2.0-or-later
/* The tests' interposed device: see sxshim.h. */
#include <string.h>
#include "sxshim.h"

static int shim_read(struct sx_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct sxt_shim *sh = bd->bd_ctx;

	return sh->sh_lower->bd_ops->read(sh->sh_lower, off, buf, len);
}

static int shim_write(struct sx_bdev *bd, uint64_t off, const void *buf, size_t len,
		      unsigned int flags)
{
	struct sxt_shim *sh = bd->bd_ctx;
	u64 n = __atomic_add_fetch(&sh->sh_writes, 1, __ATOMIC_SEQ_CST);

	__atomic_add_fetch(&sh->sh_bytes, len, __ATOMIC_SEQ_CST);
	if (sh->sh_fail_write && n == sh->sh_fail_write)
		return -EIO;
	return sh->sh_lower->bd_ops->write(sh->sh_lower, off, buf, len, flags);
}

static int shim_flush(struct sx_bdev *bd)
{
	struct sxt_shim *sh = bd->bd_ctx;
	void (*hook)(void *arg);
	int error;

	error = sh->sh_lower->bd_ops->flush(sh->sh_lower);
	__atomic_add_fetch(&sh->sh_flushes, 1, __ATOMIC_SEQ_CST);
	hook = __atomic_exchange_n(&sh->sh_flush_hook, NULL, __ATOMIC_SEQ_CST);
	if (hook)
		hook(sh->sh_hook_arg);
	return error;
}

static const struct sx_bdev_ops shim_ops = {
	.read	= shim_read,
	.write	= shim_write,
	.flush	= shim_flush,
};

void sxt_shim_init(struct sxt_shim *sh, struct sx_bdev *lower)
{
	memset(sh, 0, sizeof(*sh));
	sh->sh_lower = lower;
	sh->sh_bdev.bd_ops = &shim_ops;
	sh->sh_bdev.bd_ctx = sh;
	sh->sh_bdev.bd_size = lower->bd_size;
	sh->sh_bdev.bd_sectsize = lower->bd_sectsize;
}

u64 sxt_shim_count(const u64 *counter)
{
	return __atomic_load_n(counter, __ATOMIC_SEQ_CST);
}

void sxt_shim_hook_flush(struct sxt_shim *sh, void (*fn)(void *arg), void *arg)
{
	sh->sh_hook_arg = arg;
	__atomic_store_n(&sh->sh_flush_hook, fn, __ATOMIC_SEQ_CST);
}
