/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mount: one open filesystem on a block device.
 */
#ifndef SX_MOUNT_H
#define SX_MOUNT_H

#include "util.h"
#include "sb.h"
#include <swapext/swapext.h>
#include <swapext/host.h>

struct sx_log;
struct sx_bcache;
struct sx_alloc;
struct sx_files;
struct sx_icache;

/* Counters of deferred work, m_dstat[] */
enum {
	SX_DSTAT_INTENTS,
	SX_DSTAT_STEPS,
	SX_DSTAT_REQUEUES,
	SX_DSTAT_RELOGS,
};

enum {
	SX_MF_RDONLY	= (1u << 0),
	SX_MF_RECOVERY	= (1u << 2),	/* log recovery in progress */
	SX_MF_LOG_EACH	= (1u << 3),	/* SX_MOUNT_LOG_EACH */
	SX_MF_OVERLAP	= (1u << 4),	/* SX_MOUNT_OVERLAP_FORCES */
};

struct sx_mount {
	struct sx_bdev	*m_bdev;
	struct sx_sb	m_sb;		/* under m_sb_lock */
	struct sx_mutex	m_sb_lock;
	u32		m_bsize;
	u32		m_blog;
	u32		m_flags;	/* SX_MF_*, set while mounting only */
	struct sx_mutex	m_shutdown_lock; /* the shutdown's error and reason */
	u32		m_shutdown;	/* set once, last, under the lock */
	int		m_shutdown_error;
	char		m_shutdown_reason[128];
	char		m_name[32];
	struct sx_log	*m_log;
	struct sx_bcache *m_bcache;
	struct sx_alloc	*m_alloc;
	struct sx_recovery_stats m_rstats;
	struct sx_list	m_rintents;	/* unfinished intents found by recovery */
	struct sx_list	m_dcaptured;	/* their deferred work, captured (defer.c) */
	struct sx_atomic64 m_dstat[4];	/* SX_DSTAT_* (defer.c) */
	struct sx_files	*m_files;	/* open descriptors (file.c) */
	struct sx_icache *m_icache;	/* in-core inodes (inode.c) */
	struct sx_mutex	m_unlinked_lock; /* serialises removals from the unlinked list */
	u64		m_rootino;	/* the root directory (fsinfo, fixed at mkfs) */
	u64		m_clean_free;	/* unmount: sb_clean_free for its last checkpoint */
	struct sx_atomic m_refc_nlevels; /* refcount tree height, greatest seen (fsinfo.c) */
	struct sx_refc_unshared *m_unshared; /* blocks unshared, maybe not durably (refcount.c) */
	struct sx_host	m_host;		/* the swap core's host (swap_host.c) */
	u32		m_swap_direct_res; /* log bytes a direct swap step adds (swap_host.c) */
	/*
	 * The latest commit sequence of a transaction that changed more
	 * inodes than it could remember: every fsync forces that far.
	 */
	struct sx_atomic64 m_inodes_lost_seq;
};

#endif /* SX_MOUNT_H */
