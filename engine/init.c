// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Engine start and stop: the deferred-work types (EFI, BUI, CUI and the
 * swap core's SXI) are made known to the log item registry, which log
 * recovery needs for every unfinished intent.  The kernel module calls
 * sx_init() at load and sx_exit() at unload; in the user library the
 * first mount calls sx_init(), under a lock, so a program need not.
 */
#include "util.h"
#include <swapext/swapext.h>
#include "defer.h"
#include "item_efi.h"
#include "reflink.h"
#include "swap_host.h"

static SX_DEFINE_MUTEX(sx_init_lock);
static bool sx_initialised;		/* under sx_init_lock */

/* Register every deferred type; on failure none stays registered. */
SX_API int sx_init(void)
{
	int error = 0;

	sx_mutex_lock(&sx_init_lock);
	if (sx_initialised)
		goto out_unlock;
	error = sx_defer_register(&sx_efi_defer_ops);
	if (error)
		goto out_unlock;
	error = sx_reflink_register();
	if (error)
		goto out_efi;
	/* the swap core's SXI: recovery finishes unfinished swaps */
	error = sx_swap_host_register();
	if (error)
		goto out_reflink;
	sx_initialised = true;
	goto out_unlock;

out_reflink:
	sx_reflink_unregister();
out_efi:
	sx_defer_unregister(&sx_efi_defer_ops);
out_unlock:
	sx_mutex_unlock(&sx_init_lock);
	return error;
}

/* The library's version (include/swapext/version.h). */
SX_API const char *sx_version(void)
{
	return SX_LIB_VERSION;
}

/*
 * Forget the types again; no mount may be left.  Also wait for the RCU
 * callbacks of inodes unmount freed: the module's code must outlive them.
 */
SX_API void sx_exit(void)
{
	sx_rcu_barrier();
	sx_mutex_lock(&sx_init_lock);
	if (sx_initialised) {
		sx_swap_host_unregister();
		sx_reflink_unregister();
		sx_defer_unregister(&sx_efi_defer_ops);
		sx_initialised = false;
	}
	sx_mutex_unlock(&sx_init_lock);
}
