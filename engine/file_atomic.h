/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The state of one atomic write call, shared by its two ways of putting
 * the new bytes in place: new blocks mapped straight into the files in one
 * transaction (file_atomic_direct.c), or a nameless twin of each file and
 * a remap or a chain of swaps (file_atomic.c, which owns the call).
 */
#ifndef SX_FILE_ATOMIC_H
#define SX_FILE_ATOMIC_H

#include "util.h"

struct sx_mount;
struct sx_inode;
struct sx_hswap;
struct sx_atomic_iov;
struct sx_trans;

/* One file written, and its twin. */
struct sx_aw_file {
	struct sx_inode	*f_ip;		/* referenced */
	struct sx_inode	*f_tip;		/* the twin, referenced; NULL until made */
	int		f_tfd;		/* the twin's descriptor, or -1 */
	u64		f_oldsize;
	u64		f_newsize;
	u64		f_pieces;	/* pieces the fast path would remap */
};

/* One range with bytes to write. */
struct sx_aw_range {
	u32		r_file;		/* index into the files */
	u32		r_iov;
	u64		r_off;
	u64		r_len;
};

/* The state of one call. */
struct sx_aw {
	struct sx_mount		*a_mp;
	const struct sx_atomic_iov *a_iov;
	u32			a_n;
	struct sx_aw_file	*a_files;
	u32			a_nfiles;
	struct sx_aw_range	*a_ranges;	/* sorted by file, then offset */
	u32			a_nranges;
	struct sx_hswap		*a_sw;
	u32			a_nsw;
	struct sx_inode		**a_lock;	/* files and twins, by inode number */
	u32			a_nlock;
	bool			a_iolocked;	/* the files' iolocks */
	bool			a_tiolocked;	/* the twins' iolocks */
	u8			*a_blk;		/* one block */
};

/*
 * sx_aw_copy_old() - read into @buf the old bytes of file block @fb of @f,
 * up to its old EOF (the rest of the block is left as it is)
 */
int sx_aw_copy_old(struct sx_aw *aw, struct sx_aw_file *f, u64 fb, u8 *buf);

/*
 * sx_aw_call_res() - log bytes of one fork call on @ip once its fork has
 * grown by @grow mappings (a call in the middle of a transaction's many)
 */
u32 sx_aw_call_res(const struct sx_inode *ip, u64 grow);

/* sx_aw_join_blocks() - join the block of every inode the call locked to @tp */
int sx_aw_join_blocks(struct sx_aw *aw, struct sx_trans *tp);

/*
 * sx_aw_set_files() - give every file written its new size (if it grows)
 * and times @now, logged in @tp
 */
int sx_aw_set_files(struct sx_aw *aw, struct sx_trans *tp, s64 now);

/*
 * sx_aw_direct() - write the call's ranges into new blocks and map them
 * into the files in one transaction, if the call allows it (the files
 * locked, their sizes known): 0 when done, 1 when the call must take the
 * twins instead (nothing changed), or a negative errno (nothing changed)
 */
int sx_aw_direct(struct sx_aw *aw, u32 flags);

#endif /* SX_FILE_ATOMIC_H */
