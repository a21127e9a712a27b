// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sxuser: a second module that uses swapext.ko's EXPORT_SYMBOL_GPL API, as
 * another kernel user of the engine would: at load it runs the engine's
 * self-test on the glue's memory devices and makes, mounts and unmounts a
 * filesystem itself, then prints one result line for kcheck.
 */
#include "sx_platform.h"
#include "sx_kglue.h"
#include <linux/module.h>
#include <swapext/swapext.h>
#include <swapext/selftest.h>

/* The self-test's lines are not needed here: only the counts. */
static void sxuser_report(void *arg, const char *fmt, ...)
{
}

/* Run the exported API and say what happened. */
static int __init sxuser_init(void)
{
	struct sx_mount *mp = NULL;
	struct sx_bdev *bd = NULL;
	struct sx_info in;
	u32 passed = 0, failed = 0;
	int error;

	sx_selftest_run(sx_kmemdev_create, sxuser_report, NULL, &passed, &failed);
	error = sx_kmemdev_create(8u << 20, 512, &bd);
	if (!error)
		error = sx_mkfs(bd, NULL);
	if (!error)
		error = sx_mount(bd, NULL, &mp);
	if (!error)
		error = sx_get_info(mp, &in);
	if (!error)
		error = sx_unmount(mp);
	sx_kdev_destroy(bd);
	pr_info("sxuser: exported API: selftest %u passed, %u failed; mkfs/mount/info/unmount: %d (%s)\n",
		passed, failed, error, sx_strerror(error));
	return 0;
}

/* Nothing to undo. */
static void __exit sxuser_exit(void)
{
}

module_init(sxuser_init);
module_exit(sxuser_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("a user of swapext.ko's exported API (kcheck)");
