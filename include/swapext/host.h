/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The host boundary of the swap core.
 *
 * The swap core (core/swaprange.c, swapext.c, swapext_item.c) implements
 * swap_file_range: the FISWAPRANGE checks, the estimate, the three swap
 * algorithms, the SXI/SXD intent and its recovery.  It knows nothing of how
 * a filesystem stores inodes, mappings or its journal: everything it needs
 * from a filesystem goes through the table of operations below, which a
 * *host* provides.  swapext's own store is one host; a small in-memory host
 * in tests/common/memhost.c is another; a filesystem that wants
 * swap_file_range (XFS, say) becomes one by implementing this file.
 *
 * Writing a host
 * --------------
 * 1. Embed struct sx_host in the mount (fill h_ops, h_features, h_maxbytes)
 *    and struct sx_hinode in each in-memory inode (set hi_host).  The core
 *    finds the host from an inode; it never dereferences a transaction.
 * 2. Implement struct sx_host_ops.  Every operation returns 0 or a negative
 *    errno unless it says otherwise; none may be NULL except ho_swap_forks,
 *    ho_read_mappings and the four of direct steps (SX_HOST_DIRECT_MAP).
 * 3. Give the deferred-work manager of the host a swap type whose items are
 *    struct sx_swapext_intent (copied by value, at most one per intent) and
 *    whose callbacks are the core's sx_swapext_item_*() functions below.
 *    It must log an SXI (struct sx_dlog_sxi) when an item is first queued or
 *    requeued, and the SXD of the previous intent in the transaction of each
 *    step; a step that returns -EAGAIN is requeued *behind* the map/unmap
 *    work it queued.  For swapext's store this is a struct sx_defer_ops:
 *
 *	static int sxi_decode(struct sx_mount *mp, const void *dl, void *si)
 *	{ return sx_swapext_item_decode(store_host(mp), dl, si); }
 *	static int sxi_finish(struct sx_trans *tp, void *si)
 *	{ return sx_swapext_item_finish((struct sx_htrans *)tp, si); }
 *	const struct sx_defer_ops sx_sxi_defer_ops = {
 *		.do_name = "swapext", .do_intent_type = SX_LOG_OP_SXI,
 *		.do_done_type = SX_LOG_OP_SXD,
 *		.do_item_size = sizeof(struct sx_swapext_intent),
 *		.do_log_size = sizeof(struct sx_dlog_swapext), .do_max_items = 1,
 *		.do_encode = sx_swapext_item_encode (cast), .do_decode = sxi_decode,
 *		.do_finish = sxi_finish, .do_cancel = sx_swapext_item_cancel (cast),
 *	};
 *
 *    registered with sx_defer_register(), ho_defer_swap being sx_defer_add()
 *    of that table and ho_trans_roll sx_defer_finish().  The in-memory host
 *    drives the same callbacks with a chain runner of its own.
 * 4. At log recovery, hand each unfinished SXI's payload to
 *    sx_swapext_sxi_check() and sx_swapext_item_decode(), reserve what
 *    sx_swapext_item_estimate() says the rest of the chain needs, then
 *    finish the item with the chain runner like any other deferred work,
 *    in log order.
 *
 * Locking: the core takes the two inodes' lock (ho_lock_two) for the whole
 * call, around the checks, the flush, the estimate and the chain; a host
 * uses one lock level that excludes other writers, truncates and mapping
 * changes of both files (XFS: IOLOCK+MMAPLOCK, then ILOCK inside its own
 * transaction code).  Recovered items lock their inodes for each step,
 * unless the host's recovery holds them for the whole chain
 * (SX_HOST_RECOVERY_LOCKS: XFS joins both ILOCKs to the recovery
 * transaction and keeps them across its rolls, so locking per step would
 * take them twice, or out of XFS's order).
 *
 * Block counts and quota: a step moves mapped blocks from one file to the
 * other.  Either the host's deferred map/unmap move the inodes' block
 * counts as they land (SX_HOST_MAP_NBLOCKS: XFS's remap and unmap do), or
 * ho_mod_nblocks does; never both.  ho_mod_nblocks always moves the quota
 * charged to each file's owners, and the reservation (struct sx_hres)
 * names the blocks each file gains so that quota can be reserved first.
 */
#ifndef SWAPEXT_HOST_H
#define SWAPEXT_HOST_H

#include "sx_platform.h"
#include <swapext/swap_log.h>
#include <swapext/fsr.h>

#ifndef SX_API
#define SX_API
#endif

struct sx_host;
struct sx_htrans;		/* the host's transaction; opaque to the core */

/** struct sx_hinode - embedded in each in-memory inode of a host */
struct sx_hinode {
	struct sx_host	*hi_host;
};

/* ---------------------------------------------------------------- inodes */

/* hs_flags */
#define SX_HSTAT_IMMUTABLE	(1u << 0)	/* no changes at all (EPERM) */
#define SX_HSTAT_APPEND		(1u << 1)	/* append-only (EPERM) */
#define SX_HSTAT_SWAPFILE	(1u << 2)	/* an active swap file (ETXTBSY) */
#define SX_HSTAT_REFLINK	(1u << 3)	/* may share blocks with others */

/* File types in hs_mode, the usual S_IFMT values. */
#define SX_HS_IFMT		0170000u
#define SX_HS_IFREG		0100000u
#define SX_HS_IFDIR		0040000u

/**
 * struct sx_hstat - what the core reads of an inode (ho_stat)
 * @hs_ino:	inode number
 * @hs_gen:	generation: changes each time the inode number is reused
 * @hs_size:	file size in bytes (the size readers see)
 * @hs_mode:	file type and permissions (SX_HS_IFMT bits)
 * @hs_flags:	SX_HSTAT_*
 * @hs_blksize:	the fundamental block size: file offsets in blocks are
 *		byte offsets divided by it; a power of 2
 * @hs_nextents: mappings (extents) in the data fork now, for the estimate
 * @hs_mtime_sec, @hs_mtime_nsec, @hs_ctime_sec, @hs_ctime_nsec:
 *		modification and change time, seconds since the epoch and
 *		nanoseconds (0..999999999), compared exactly by FILE2_FRESH
 */
struct sx_hstat {
	u64	hs_ino;
	u64	hs_gen;
	s64	hs_size;
	u32	hs_mode;
	u32	hs_flags;
	u32	hs_blksize;
	u32	hs_pad;
	u64	hs_nextents;
	s64	hs_mtime_sec;
	s64	hs_ctime_sec;
	u32	hs_mtime_nsec;
	u32	hs_ctime_nsec;
};

#define SX_HOLESTARTBLOCK	((u64)-1)	/* hm_startblock of a hole */
#define SX_HMAP_UNWRITTEN	(1u << 0)	/* allocated, reads as zeroes */

/**
 * struct sx_hmap - one mapping of a data fork, in file and device blocks
 * @hm_startoff:   first file block
 * @hm_blockcount: length in blocks, at least 1
 * @hm_startblock: device block of @hm_startoff, or SX_HOLESTARTBLOCK
 * @hm_flags:      SX_HMAP_UNWRITTEN (never set on a hole)
 */
struct sx_hmap {
	u64	hm_startoff;
	u64	hm_blockcount;
	u64	hm_startblock;
	u32	hm_flags;
	u32	hm_pad;
};

/* -------------------------------------------------------- transactions */

/* hr_algo: which algorithm a reservation is for */
enum sx_swap_algo {
	SX_SWAP_ATOMIC	= 1,	/* SXI chain */
	SX_SWAP_BMAP	= 2,	/* the same steps, no SXI (not crash-safe) */
	SX_SWAP_FORKS	= 3,	/* ho_swap_forks in one transaction */
};

/**
 * struct sx_hres - what a swap will do, for ho_trans_alloc
 * @hr_algo:	SX_SWAP_*
 * @hr_steps:	exchanges of the chain, or up to 15 more for a long swap
 *		of many mappings, walked in pieces (each: two unmaps, two maps,
 *		both inodes' size and block count); one per transaction,
 *		or with SX_HOST_DIRECT_MAP as many per transaction as
 *		ho_step_room allows
 * @hr_nrext1:	the most mappings inode 1's fork can have during the chain
 * @hr_nrext2:	the same for inode 2 (equal to @hr_nrext1 for one file)
 * @hr_ip1, @hr_ip2: the two inodes (equal for two ranges of one file)
 * @hr_blocks1:	blocks mapped (written or unwritten) in inode 1's range that
 *		the chain moves to inode 2; shared pieces left in place are
 *		not counted
 * @hr_blocks2:	the same for inode 2's range.  After the chain inode 1
 *		holds @hr_blocks2 - @hr_blocks1 more blocks and inode 2 as
 *		many fewer (no change for one file).  Zero for SX_SWAP_FORKS,
 *		whose forks move whole.
 *
 * The host reserves log space for one step per transaction of the chain
 * (ho_trans_roll renews it) and, up front, every block the whole chain may
 * need for its mapping structures (B+tree splits), or fails with -ENOSPC.
 * A host with quota reserves each file's gain against its owners' limits
 * here, or fails with -EDQUOT; nothing has changed yet when it fails.
 */
struct sx_hres {
	u32	hr_algo;
	u32	hr_pad;
	u64	hr_steps;
	u64	hr_nrext1;
	u64	hr_nrext2;
	struct sx_hinode *hr_ip1;
	struct sx_hinode *hr_ip2;
	u64	hr_blocks1;
	u64	hr_blocks2;
};

/* h_features */
#define SX_HOST_ATOMIC_SWAP	(1u << 0)	/* SXI/SXD may be logged (the
						 * ATOMIC_SWAP log-incompat
						 * feature is on) */
#define SX_HOST_DEFER_BMAP	(1u << 1)	/* map/unmap are logged deferred
						 * work: the non-atomic step
						 * algorithm is available */
#define SX_HOST_MAP_NBLOCKS	(1u << 2)	/* the queued map/unmap move the
						 * inode's block count as they
						 * land: ho_mod_nblocks moves
						 * quota only */
#define SX_HOST_RECOVERY_LOCKS	(1u << 3)	/* recovery holds both inodes of
						 * a recovered item locked for
						 * its whole chain: the core
						 * takes no lock per step */
#define SX_HOST_DIRECT_MAP	(1u << 4)	/* ho_unmap_now/ho_map_now change
						 * the forks in the step's own
						 * transaction: one step swaps
						 * as many pieces as
						 * ho_step_room allows */

struct sx_swapext_intent;

/**
 * struct sx_host_ops - what a host provides to the swap core
 *
 * Inodes:
 * @ho_stat:		fill @st for @ip (cannot fail)
 * @ho_lock_two:	lock both inodes against every other change, in an order
 *			of the host's choosing that cannot deadlock (XFS:
 *			by inode number); @ip1 may equal @ip2: lock it once.
 *			It may fail (XFS's two-inode lock returns -EINTR
 *			for a fatal signal) with nothing held: the core then
 *			returns the error having changed nothing, and a
 *			recovered step fails with it
 * @ho_unlock_two:	undo a successful ho_lock_two
 * @ho_flush_range:	write back and wait for bytes [@off, @off + @len) of
 *			@ip's cached data and wait for direct I/O, so that
 *			the mappings are final (no delayed allocation left)
 * @ho_read_mapping:	the mapping of @ip's data fork at file block
 *			@startoff, trimmed to start there and to at most
 *			@blockcount blocks (a hole runs to the next mapping);
 *			called with the swap's transaction open but nothing
 *			changed in it yet
 * @ho_read_mappings:	optional: the mapping at @startoff as ho_read_mapping
 *			(@tp NULL) or ho_read_mapping_tp (@tp) gives it, and
 *			those after it, each starting where the one before
 *			ends (holes too), all within [@startoff, +@blockcount):
 *			at most @nmaps in @maps, from one lookup of the
 *			mapping structure.  Returns how many (at least 1) or
 *			a negative errno.  The core reads ahead with it in
 *			its walks; without it, a lookup per piece
 * @ho_max_extents:	the most mappings @ip's data fork may hold (-EFBIG
 *			from the estimate beyond it)
 * @ho_trim_eof:	optional: free whatever @ip maps past its EOF block.
 *			Called once every check has passed, before the
 *			estimate.  A host whose files may keep blocks past
 *			EOF (a truncate cut short by a crash, preallocation)
 *			needs it: a TO_EOF range reaches past the shorter
 *			file's EOF, and in one file it may move that part
 *			inside the size, where stale blocks would show.
 *			It may change the times (the swap sets them anyway).
 *
 * Transactions (one transaction is open at a time per swap):
 * @ho_trans_alloc:	start a transaction with the reservation of @res
 * @ho_trans_roll:	commit *@tpp with all the deferred work queued on it,
 *			finishing that work in a chain of transactions (the
 *			swap items with sx_swapext_item_finish()), and put a
 *			fresh transaction with the same reservation in *@tpp.
 *			On error *@tpp is the caller's to cancel (or NULL) and
 *			the host has shut down if a committed intent is left.
 * @ho_trans_commit:	commit (finishing deferred work first, as roll does)
 * @ho_trans_cancel:	throw a transaction away; a dirty one shuts the host
 *			down (its changes cannot be undone)
 *
 * Changes, each in transaction @tp, on inodes the core has locked:
 * @ho_queue_unmap:	queue deferred work (the store's BUI) removing @map
 *			from @ip's data fork *without freeing* its blocks:
 *			they move to the other file by the paired map
 * @ho_queue_map:	queue deferred work adding @map to @ip's data fork
 *			where the range is a hole (after the unmap ahead of
 *			it); neither changes the block count
 * @ho_set_size:	set @ip's size (on disk and in memory) to @size
 * @ho_mod_nblocks:	@ip gains @delta mapped blocks (negative: loses) by
 *			the step's queued map/unmap: move the quota charged
 *			to @ip's owners by @delta and, unless the host has
 *			SX_HOST_MAP_NBLOCKS, @ip's block count too.  Called
 *			once per step for each of two files whose count
 *			changes (never for one file: its moves cancel)
 * @ho_set_reflink:	set (@on) or clear @ip's reflink flag
 * @ho_touch:		set @ip's mtime and ctime to now
 * @ho_defer_swap:	queue a copy of @si as deferred work of the swap type
 *			(an SXI is logged for it at the next roll or commit)
 * @ho_swap_forks:	optional (NULL: not available): exchange the whole
 *			data forks, mappings and block counts of @ip1 and
 *			@ip2 (not the sizes), moving their owners' quota
 *			with the blocks, in @tp; -EINVAL if a fork's format
 *			does not allow it
 *
 * Recovery:
 * Direct steps (SX_HOST_DIRECT_MAP; all four NULL otherwise, and the flag
 * is ignored unless all four are set).  A step then changes the forks in
 * its own transaction instead of queuing map/unmap work, so one
 * transaction holds the SXD of the old intent, several exchanges and the
 * SXI of what is left; the SXI's format does not change (it always
 * describes the remainder), so a log written either way recovers either way:
 * @ho_read_mapping_tp:	ho_read_mapping in @tp, which the step's direct
 *			changes may have changed already (a host that reads
 *			its mapping blocks through the transaction that holds
 *			them locked); the core reads no block ahead of the
 *			step's cursors, which no change of the step touched
 * @ho_unmap_now:	remove @map from @ip's data fork in @tp *without
 *			freeing* its blocks (they go to the other file by the
 *			paired map); the block count moves as the queued
 *			unmap's would (only with SX_HOST_MAP_NBLOCKS)
 * @ho_map_now:		add @map to @ip's data fork, where it is a hole, in @tp
 *			(the block count as the queued map's would)
 * @ho_step_room:	true if @tp's log reservation still holds one more
 *			exchange between @ip1 and @ip2 at its worst (two
 *			unmaps, two maps, both inodes, sized on the forks as
 *			they are now) plus the SXI that ends the step.  The
 *			core asks before each exchange; when there is no room
 *			for a step's first, that exchange is queued instead
 *			(ho_queue_unmap/ho_queue_map, one exchange per step as
 *			without the flag), so a host may reserve less than an
 *			exchange's worst case and still be right; it reserves
 *			more to batch more (the store counts the log bytes
 *			the step has actually used)
 *
 * Recovery:
 * @ho_iget:		find inode @ino with generation @gen and take a
 *			reference; -ENOENT (or -EFSCORRUPTED) if it is not in
 *			use or has another generation
 * @ho_irele:		drop a reference taken by ho_iget
 */
struct sx_host_ops {
	void	(*ho_stat)(struct sx_hinode *ip, struct sx_hstat *st);
	int	(*ho_lock_two)(struct sx_hinode *ip1, struct sx_hinode *ip2);
	void	(*ho_unlock_two)(struct sx_hinode *ip1, struct sx_hinode *ip2);
	int	(*ho_flush_range)(struct sx_hinode *ip, s64 off, s64 len);
	int	(*ho_read_mapping)(struct sx_hinode *ip, u64 startoff, u64 blockcount,
				   struct sx_hmap *map);
	int	(*ho_read_mappings)(struct sx_htrans *tp, struct sx_hinode *ip, u64 startoff,
				    u64 blockcount, struct sx_hmap *maps, u32 nmaps);
	u64	(*ho_max_extents)(struct sx_hinode *ip);
	int	(*ho_trim_eof)(struct sx_hinode *ip);

	int	(*ho_trans_alloc)(struct sx_host *h, const struct sx_hres *res,
				  struct sx_htrans **tpp);
	int	(*ho_trans_roll)(struct sx_htrans **tpp);
	int	(*ho_trans_commit)(struct sx_htrans *tp);
	void	(*ho_trans_cancel)(struct sx_htrans *tp);

	int	(*ho_queue_unmap)(struct sx_htrans *tp, struct sx_hinode *ip,
				  const struct sx_hmap *map);
	int	(*ho_queue_map)(struct sx_htrans *tp, struct sx_hinode *ip,
				const struct sx_hmap *map);
	int	(*ho_set_size)(struct sx_htrans *tp, struct sx_hinode *ip, s64 size);
	int	(*ho_mod_nblocks)(struct sx_htrans *tp, struct sx_hinode *ip, s64 delta);
	int	(*ho_set_reflink)(struct sx_htrans *tp, struct sx_hinode *ip, bool on);
	int	(*ho_touch)(struct sx_htrans *tp, struct sx_hinode *ip);
	int	(*ho_defer_swap)(struct sx_htrans *tp, const struct sx_swapext_intent *si);
	int	(*ho_swap_forks)(struct sx_htrans *tp, struct sx_hinode *ip1,
				 struct sx_hinode *ip2);

	int	(*ho_read_mapping_tp)(struct sx_htrans *tp, struct sx_hinode *ip, u64 startoff,
				      u64 blockcount, struct sx_hmap *map);
	int	(*ho_unmap_now)(struct sx_htrans *tp, struct sx_hinode *ip,
				const struct sx_hmap *map);
	int	(*ho_map_now)(struct sx_htrans *tp, struct sx_hinode *ip,
			      const struct sx_hmap *map);
	bool	(*ho_step_room)(struct sx_htrans *tp, struct sx_hinode *ip1,
				struct sx_hinode *ip2);

	int	(*ho_iget)(struct sx_host *h, u64 ino, u64 gen, struct sx_hinode **ipp);
	void	(*ho_irele)(struct sx_hinode *ip);
};

/**
 * struct sx_host - embedded in a host's mount
 * @h_ops:	the operations
 * @h_name:	what the core's reports call this host (a mount's name, say);
 *		NULL reads "swap core"
 * @h_features:	SX_HOST_*; read at each call, so a host may turn
 *		SX_HOST_ATOMIC_SWAP on when it sets its log-incompat bit
 * @h_maxbytes:	the largest file size (s_maxbytes): a range may not reach
 *		past it (-EFBIG if it starts there, else -EINVAL)
 */
struct sx_host {
	const struct sx_host_ops *h_ops;
	const char *h_name;
	u32	h_features;
	u32	h_pad;
	s64	h_maxbytes;
};

/* --------------------------------------------------- the core's entry */

/* hf_mode: how a file was opened */
#define SX_HF_READ	(1u << 0)
#define SX_HF_WRITE	(1u << 1)
#define SX_HF_APPEND	(1u << 2)

/**
 * struct sx_hfile - an open file as swap_file_range sees it
 * @hf_ip:	its inode (the caller holds a reference for the call)
 * @hf_mode:	SX_HF_*
 */
struct sx_hfile {
	struct sx_hinode *hf_ip;
	u32	hf_mode;
	u32	hf_pad;
};

/**
 * sx_swap_core_range() - swap a range of @file1 with a range of @file2 (the
 * core of swap_file_range; a host's own entry, e.g. the store's
 * sx_swap_file_range() on descriptors, resolves the files and calls it)
 * @file1:	the file named by fsr->file1_fd (resolved by the caller:
 *		-EBADF for a bad descriptor is the caller's)
 * @file2:	the file the request was issued on
 * @fsr:	the request; on success it is updated as the ioctl copies it
 *		back (TO_EOF: the length swapped), on failure it is untouched
 *
 * Runs every check of the seed's do_swap_file_range,
 * generic_swap_file_range_prep, generic_swap_file_range_checks and
 * generic_swap_file_range_check_fresh, locks and flushes both files,
 * estimates, and swaps with the first algorithm the host allows: the SXI
 * chain (SX_HOST_ATOMIC_SWAP), else with FILE_SWAP_RANGE_NONATOMIC the
 * non-atomic steps (SX_HOST_DEFER_BMAP), else for NONATOMIC full files the
 * whole-fork swap (ho_swap_forks).  Both files are open for writing: a swap
 * writes to both (the seed asked only for read access to file1; mainline
 * asks for both).  A zero length succeeds after the freshness checks and
 * changes nothing.  The caller updates no timestamps: the core touches both
 * inodes in the swap's first transaction.
 *
 * Return: 0; -EINVAL (bad flags, pad, offsets, alignment, overlap, ranges
 * past EOF, size limits), -EXDEV (different hosts), -EISDIR, -EBADF (open
 * modes, O_APPEND), -EPERM (immutable, append-only), -ETXTBSY (swap file),
 * -EDOM (FULL_FILES mismatch), -EBUSY (FILE2_FRESH mismatch), -EFBIG (size
 * limit, extent count), -EOPNOTSUPP (no algorithm), or a host error.
 */
SX_API int sx_swap_core_range(const struct sx_hfile *file1, const struct sx_hfile *file2,
			      struct file_swap_range *fsr);

/**
 * struct sx_hswap - one range pair of sx_swap_core_queue()
 * @hw_ip1, @hw_ip2:	the inodes (two different regular files of one host)
 * @hw_startoff1, @hw_startoff2: the first file block of each range
 * @hw_blockcount:	blocks to swap, at least 1
 * @hw_isize1, @hw_isize2: the sizes both files get in the last step of this
 *			range, or -1 for both to leave the sizes alone (the
 *			ranges then lie within both files' EOF blocks)
 */
struct sx_hswap {
	struct sx_hinode *hw_ip1;
	struct sx_hinode *hw_ip2;
	u64	hw_startoff1;
	u64	hw_startoff2;
	u64	hw_blockcount;
	s64	hw_isize1;
	s64	hw_isize2;
};

/**
 * sx_swap_core_queue() - queue @n atomic swaps into the caller's
 * transaction @tp, so that one transaction's commit promises them all
 * @tp:	a transaction of the host (ho_trans_alloc or the host's own), big
 *	enough for the first step of a chain plus @n SXIs and a change to
 *	each inode; its next roll (ho_trans_roll) or commit logs the @n
 *	intents together and runs the chains
 * @sw:	the ranges; ranges of one inode may not overlap
 * @n:	how many
 *
 * For a host's own atomic operations (the store's atomic write), which
 * made the ranges themselves: there is no FISWAPRANGE request, and no
 * flush or trim of EOF blocks (the caller's).  The caller holds every
 * inode as ho_lock_two would, with the mappings in the ranges final.
 * Every check and the estimate of every range comes first: on error @tp
 * has not been changed.  Then each range touches both inodes, sets the
 * reflink flags as a swap's first transaction does, and queues its SXI
 * with ho_defer_swap.  After a crash, recovery finishes every range of a
 * committed @tp, or none was started.
 *
 * Return: 0; -EOPNOTSUPP (the host cannot log SXIs), -EINVAL (a range of
 * length 0, one inode twice in a pair, overlapping ranges of one inode,
 * bad sizes), -EXDEV (inodes of two hosts), -EISDIR, -EPERM, -ETXTBSY (as
 * the swap), -EFBIG (past h_maxbytes, or a fork could outgrow its extent
 * count), or a host error.
 */
SX_API int sx_swap_core_queue(struct sx_htrans *tp, const struct sx_hswap *sw, u32 n);

/* ------------------------------------------ the swap type's deferred work */

/* si_iflags: in memory only */
#define SX_SI_RECOVERED		(1u << 0)	/* from the log: owns a reference to
						 * both inodes, locks them per step */

/**
 * struct sx_swapext_intent - one deferred swap: what is left to do
 * @si_ip1, @si_ip2:	 the inodes (equal for two ranges of one file)
 * @si_ino1, @si_ino2, @si_gen1, @si_gen2: their numbers and generations
 * @si_startoff1, @si_startoff2: next file blocks to swap
 * @si_blockcount:	 blocks left
 * @si_flags:		 SX_SWAPEXT_* (logged)
 * @si_isize1, @si_isize2: with SX_SWAPEXT_SET_SIZES the final sizes, else -1
 * @si_iflags:		 SX_SI_*
 *
 * Hosts copy it by value (memcpy) and never look inside.
 */
struct sx_swapext_intent {
	struct sx_hinode *si_ip1;
	struct sx_hinode *si_ip2;
	u64	si_ino1;
	u64	si_ino2;
	u64	si_gen1;
	u64	si_gen2;
	u64	si_startoff1;
	u64	si_startoff2;
	u64	si_blockcount;
	u64	si_flags;
	s64	si_isize1;
	s64	si_isize2;
	u32	si_iflags;
	u32	si_pad;
};

/* Work one exchange queues: at most two unmaps and two maps. */
#define SX_SWAPEXT_STEP_QUEUED	4
/* Inodes one step changes (size, block count, flags). */
#define SX_SWAPEXT_STEP_INODES	2

/** sx_swapext_item_encode() - write @si's log form (an SXI's one item) */
SX_API void sx_swapext_item_encode(const struct sx_swapext_intent *si,
				   struct sx_dlog_swapext *dl);

/**
 * sx_swapext_item_decode() - rebuild an item from a logged SXI for recovery
 *
 * Validates the item (blocks left nonzero and in range, flags known, sizes
 * not negative with SET_SIZES, ranges of one file not overlapping) and
 * takes a reference to both inodes with ho_iget(), checking the logged
 * generations.  The item (SX_SI_RECOVERED) owns the references until it
 * is finished or cancelled.  The logged sizes are the final sizes: they are
 * never recomputed from the inodes.
 *
 * Return: 0, -EFSCORRUPTED for a bad item or a missing/reused inode, -ENOMEM.
 */
SX_API int sx_swapext_item_decode(struct sx_host *h, const struct sx_dlog_swapext *dl,
				  struct sx_swapext_intent *si);

/**
 * sx_swapext_item_finish() - do one step of @si in @tp (one exchange, or
 * with SX_HOST_DIRECT_MAP as many as ho_step_room allows)
 *
 * Return: -EAGAIN if blocks are left (log an SXI for what is left and
 * requeue the item behind the work the step queued), 0 when done (the item
 * has released what it owned), or an error (cancel the item).
 */
SX_API int sx_swapext_item_finish(struct sx_htrans *tp, struct sx_swapext_intent *si);

/**
 * sx_swapext_item_estimate() - the reservation what is left of @si needs
 *
 * Walks the rest of @si's ranges with ho_read_mapping, as the start of a
 * swap does, and fills @res as for ho_trans_alloc (SX_SWAP_ATOMIC).  A
 * host's recovery calls it for a decoded item before it allocates the
 * transaction that finishes the item's chain: the chain then holds the
 * blocks and quota it needs, as the original call did.  Call it with the
 * inodes' mappings held still (at recovery nothing else runs).
 *
 * Return: 0, -EFBIG if a fork could outgrow ho_max_extents, -EFSCORRUPTED
 * for one block mapped with two states, or a host error.
 */
SX_API int sx_swapext_item_estimate(const struct sx_swapext_intent *si, struct sx_hres *res);

/** sx_swapext_item_cancel() - throw an unfinished item away */
SX_API void sx_swapext_item_cancel(struct sx_swapext_intent *si);

/**
 * sx_swapext_sxi_check() - check a whole logged SXI payload's framing
 *
 * For hosts that frame the payload as the store does (struct sx_dlog_sxi):
 * @len must be its size, li_nitems 1, li_pad zero.  A failure is reported
 * against @h.  Return: 0 or -EFSCORRUPTED.
 */
SX_API int sx_swapext_sxi_check(const struct sx_host *h, const void *payload, u32 len);

/** sx_swapext_item_describe() - one line about a logged item, for log printers */
SX_API void sx_swapext_item_describe(const struct sx_dlog_swapext *dl, char *buf,
				     size_t len);

#endif /* SWAPEXT_HOST_H */
