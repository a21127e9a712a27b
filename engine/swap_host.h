/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The store as a host of the swap core (include/swapext/host.h): the core's
 * operations over the store's inodes, extent maps, transactions and
 * deferred work, the SXI deferred type, and sx_swap_file_range() on
 * descriptors.
 */
#ifndef SX_SWAP_HOST_H
#define SX_SWAP_HOST_H

#include "util.h"
#include <swapext/host.h>

/**
 * sx_swap_host_init() - fill the mount's struct sx_host from its superblock
 * (SX_HOST_ATOMIC_SWAP with the ATOMIC_SWAP log-incompat feature; the
 * store always has deferred map/unmap)
 */
void sx_swap_host_init(struct sx_mount *mp);

/** sx_swap_host_register() / _unregister() - the SXI type, for recovery too */
int sx_swap_host_register(void);
void sx_swap_host_unregister(void);

/** sx_swap_host_res() - the reservation of one transaction of a swap */
u32 sx_swap_host_res(const struct sx_mount *mp);
/** sx_swap_host_queue_res() - the base of a transaction that queues swaps */
u32 sx_swap_host_queue_res(const struct sx_mount *mp);

#endif /* SX_SWAP_HOST_H */
