// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Engine start and stop: the deferred-work types (EFI, BUI, CUI and the
 * swap core's SXI) are made known to the log item registry, which log
 * recovery needs for every unfinished intent, and the metadata block types
 * to the buffer type registry, whose verifiers recovery runs on the blocks
 * it rebuilds.  The kernel module calls
 * sx_init() at load and sx_exit() at unload; in the user library the
 * first mount calls sx_init(), under a lock, so a program need not.
 */
#include "util.h"
#include <swapext/swapext.h>
#include "defer.h"
#include "item_efi.h"
#include "reflink.h"
#include "swap_host.h"
#include "buf.h"
#include "alloc.h"
#include "fsinfo.h"
#include "inode.h"
#include "btree.h"
#include "bmap.h"
#include "dir.h"
#include "refcount.h"

static SX_DEFINE_MUTEX(sx_init_lock);
static bool sx_initialised;		/* under sx_init_lock */

/* Every metadata block type the store writes, for recovery's verifier. */
static const struct sx_buf_ops *sx_buf_types_of(u32 i)
{
	switch (i) {
	case 0: return &sx_bitmap_buf_ops;
	case 1: return &sx_fsinfo_buf_ops;
	case 2: return &sx_inode_buf_ops;
	case 3: return sx_bmbt_ops.bo_buf_ops;
	case 4: return sx_dirbt_ops.bo_buf_ops;
	case 5: return sx_refcbt_ops.bo_buf_ops;
	default: return NULL;
	}
}

/* Forget the engine's block types. */
static void sx_buf_types_unregister(void)
{
	u32 i;

	for (i = 0; sx_buf_types_of(i); i++)
		sx_buf_type_unregister(sx_buf_types_of(i));
}

/* Make the engine's block types known; on failure none stays registered. */
static int sx_buf_types_register(void)
{
	u32 i;
	int error;

	for (i = 0; sx_buf_types_of(i); i++) {
		error = sx_buf_type_register(sx_buf_types_of(i));
		if (error) {
			sx_buf_types_unregister();
			return error;
		}
	}
	return 0;
}

/* Register every deferred type; on failure none stays registered. */
SX_API int sx_init(void)
{
	int error = 0;

	sx_mutex_lock(&sx_init_lock);
	if (sx_initialised)
		goto out_unlock;
	error = sx_buf_types_register();
	if (error)
		goto out_unlock;
	error = sx_defer_register(&sx_efi_defer_ops);
	if (error)
		goto out_types;
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
out_types:
	sx_buf_types_unregister();
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
		sx_buf_types_unregister();
		sx_initialised = false;
	}
	sx_mutex_unlock(&sx_init_lock);
}
