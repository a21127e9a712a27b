/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The allocation counters behind sx_alloc_fail() and sx_alloc_get_stats(),
 * shared by every userspace allocator (platform_os.c, slab_os.c).
 */
#ifndef SX_MEM_OS_H
#define SX_MEM_OS_H

#include "sx_platform.h"

/* sx_mem_fault() - count an allocation; true if it is armed to fail */
bool sx_mem_fault(void);
/* sx_mem_got() - count @p as live if it is not NULL; returns @p */
void *sx_mem_got(void *p);
/* sx_mem_gone() - count one live allocation as given back */
void sx_mem_gone(void);

#endif /* SX_MEM_OS_H */
