// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The swapext kernel module: the engine and its exported API, the control
 * device /dev/swapext-ctl, and the self-test at load time (selftest=1).
 */
#include "sx_platform.h"
#include "sx_kglue.h"
#include <linux/module.h>
#include <linux/moduleparam.h>

static bool selftest;
module_param(selftest, bool, 0444);
MODULE_PARM_DESC(selftest, "run the engine's scenario self-test at load and print the counts");

/* Load: the self-test first if asked (its counts are printed), then the control device. */
static int __init sx_module_init(void)
{
	u32 passed, failed;
	int error;

	error = sx_init();
	if (error) {
		pr_err("swapext: cannot register the log item types: %d\n", error);
		return error;
	}
	if (selftest)
		sx_kctl_run_selftest(&passed, &failed);
	error = sx_kctl_init();
	if (error) {
		pr_err("swapext: cannot register the control device: %d\n", error);
		sx_exit();
		return error;
	}
	pr_info("swapext: loaded (control device /dev/" SX_KCTL_DEVNAME ")\n");
	return 0;
}

/* Unload: every instance still attached is detached (unmounted). */
static void __exit sx_module_exit(void)
{
	sx_kctl_exit();
	sx_exit();
	pr_info("swapext: unloaded\n");
}

module_init(sx_module_init);
module_exit(sx_module_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("swapext: a journaling block-mapping engine with atomic file range swaps");
MODULE_AUTHOR("swapext developers");
MODULE_SOFTDEP("pre: crc32c");
MODULE_VERSION(SX_LIB_VERSION);
