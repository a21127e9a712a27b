// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The swap core's corruption reports.  A host may run several filesystems
 * (the store's mounts, XFS's), so a report names the host that handed the
 * core the bad mapping, inode or logged item: its h_name.
 */
#include "swap_core.h"

void sx_core_corrupt(const struct sx_host *h, const char *what, const char *func, int line)
{
	sx_log_emit(SX_LOG_WARN, "swapext(%s): corruption: \"%s\" failed in %s:%d",
		    h && h->h_name ? h->h_name : "swap core", what, func, line);
}
