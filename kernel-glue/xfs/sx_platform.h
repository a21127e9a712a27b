/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The swap core's platform header inside xfs.ko (the core's files find it as
 * "sx_platform.h" in fs/xfs/sx/): kernel-glue's own, except that XFS's
 * ASSERT is kept when XFS's headers came first (the binding's files), as
 * kernel-glue's header defines one of its own.  The core uses neither
 * ASSERT nor any platform function but sx_log_emit(), sx_alloc() and
 * sx_free(), which the binding provides (xfs_swapext.c).
 */
#ifndef SX_XFS_PLATFORM_H
#define SX_XFS_PLATFORM_H

#ifdef ASSERT
#pragma push_macro("ASSERT")
#undef ASSERT
#include <kernel-glue/sx_platform.h>
#undef ASSERT
#pragma pop_macro("ASSERT")
#else
#include <kernel-glue/sx_platform.h>
#endif

#endif /* SX_XFS_PLATFORM_H */
