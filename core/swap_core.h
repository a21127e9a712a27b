/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The swap core's private header: the interfaces between its three files.
 * The front end (swaprange.c) hands a checked request to the swap
 * (swapext.c), whose deferred item (swapext_item.c) the host's chain
 * runner finishes.
 *
 * The core is a unit of its own (core/, built as libswapext-core.a): it
 * reaches a filesystem only through <swapext/host.h> and the platform only
 * through the contract in <swapext/platform.h>, and `make check-portable`
 * fails if one of its objects references any other symbol.  It includes
 * nothing of a host (engine/ is one host, tests/common/memhost.c another).
 */
#ifndef SX_SWAP_CORE_H
#define SX_SWAP_CORE_H

#include "sx_platform.h"
#include <swapext/host.h>

#define SX_S64_MAX	((s64)(~0ULL >> 1))

#define sx_min(a, b)		((a) < (b) ? (a) : (b))
#define sx_max(a, b)		((a) > (b) ? (a) : (b))
#define sx_roundup(x, y)	((((x) + (y) - 1) / (y)) * (y))
#define sx_howmany(x, y)	(((x) + (y) - 1) / (y))
#define sx_is_pow2(x)		((x) != 0 && ((x) & ((x) - 1)) == 0)

/*
 * sx_core_corrupt() - log that a check of what a host or the log gave the
 * core failed (@what, at @func:@line), naming host @h; the caller returns
 * -EFSCORRUPTED.
 */
void sx_core_corrupt(const struct sx_host *h, const char *what, const char *func, int line);

/*
 * SX_CORE_CORRUPT() - evaluate @expr; if it is true, report it against
 * host @h and yield true ("if (SX_CORE_CORRUPT(h, x)) return -EFSCORRUPTED;").
 */
#define SX_CORE_CORRUPT(h, expr) \
	(unlikely(expr) ? (sx_core_corrupt((h), #expr, __func__, __LINE__), true) : false)

/* The host of an inode, and its operations. */
static inline const struct sx_host_ops *sx_hops(const struct sx_hinode *ip)
{
	return ip->hi_host->h_ops;
}

/* sx_hstat() - read @ip's attributes */
static inline void sx_hstat(struct sx_hinode *ip, struct sx_hstat *st)
{
	memset(st, 0, sizeof(*st));
	sx_hops(ip)->ho_stat(ip, st);
}

/* True if @m maps blocks (written or unwritten), false for a hole. */
static inline bool sx_hmap_is_mapped(const struct sx_hmap *m)
{
	return m->hm_startblock != SX_HOLESTARTBLOCK;
}

/* A swap request that passed every check of the front end. */
struct sx_swap_req {
	struct sx_hinode *sr_ip1;
	struct sx_hinode *sr_ip2;
	u64	sr_startoff1;		/* file blocks */
	u64	sr_startoff2;
	u64	sr_blockcount;
	s64	sr_isize1;		/* final sizes with SET_SIZES, else -1 */
	s64	sr_isize2;
	u64	sr_flags;		/* SX_SWAPEXT_SET_SIZES */
	enum sx_swap_algo sr_algo;
};

/* What the estimate found. */
struct sx_swap_est {
	u64	se_steps;		/* exchange steps */
	u64	se_nrext1;		/* worst mapping counts during the chain */
	u64	se_nrext2;
	u64	se_blocks1;		/* mapped blocks each range gives away */
	u64	se_blocks2;
	bool	se_shared_skipped;	/* a range mapped to the same blocks in both */
	bool	se_beyond1;		/* inode 1 has mappings past its range */
	bool	se_beyond2;
};

/**
 * sx_swapext_estimate() - walk the ranges of @si as the chain will, without
 * changing anything: count its steps and bound the mapping counts (a long
 * swap's walk, in pieces, may count up to 15 steps and mappings more, 30
 * for one file; never fewer)
 *
 * Return: 0, -EFBIG if a fork could outgrow ho_max_extents, -EFSCORRUPTED
 * for one block mapped with two states, or a host error.
 */
int sx_swapext_estimate(const struct sx_swapext_intent *si, struct sx_swap_est *est);

/* sx_swapext_est_res() - the reservation request of @si's estimate @est */
void sx_swapext_est_res(const struct sx_swapext_intent *si, const struct sx_swap_est *est,
			enum sx_swap_algo algo, struct sx_hres *res);

/**
 * sx_swapext_finish_one() - swap the next differing piece of @si's ranges
 * in @tp (with SX_HOST_DIRECT_MAP, as many as the host's reservation has
 * room for) and advance it; at the end apply the final sizes and reflink
 * flags
 *
 * Return: 0 when nothing is left, -EAGAIN when blocks are left, or an error.
 */
int sx_swapext_finish_one(struct sx_htrans *tp, struct sx_swapext_intent *si);

/**
 * sx_swapext_swap() - run a checked request with its algorithm, from the
 * estimate to the commit.  The caller holds both inodes' lock.
 */
int sx_swapext_swap(const struct sx_swap_req *req);

/**
 * sx_swapext_queue_check() - estimate the atomic request @req as its
 * queueing would, changing nothing (sx_swap_core_queue())
 *
 * Return: 0, -EFBIG, -EFSCORRUPTED or a host error.
 */
int sx_swapext_queue_check(const struct sx_swap_req *req);

/**
 * sx_swapext_queue() - do in @tp what the first transaction of an atomic
 * swap does for @req: touch both inodes, set the reflink flags, queue the
 * SXI; the caller commits @tp
 */
int sx_swapext_queue(struct sx_htrans *tp, const struct sx_swap_req *req);

#endif /* SX_SWAP_CORE_H */
