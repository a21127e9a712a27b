/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The flat root directory: entries (name -> inode number) in the root
 * inode's fork, keyed by a hash of the name; equal hashes are told apart by
 * the name itself.  The directory's di_size counts its entries.  Every
 * function but sx_dir_hash and sx_dir_check_name expects the caller to hold
 * the directory's ilock.
 */
#ifndef SX_DIR_H
#define SX_DIR_H

#include "util.h"

struct sx_trans;
struct sx_inode;

extern const struct sx_fork_ops sx_dir_fork_ops;
extern const struct sx_btree_ops sx_dirbt_ops;

/** sx_dir_hash() - the key of a name (on-disk format: see dir.c) */
u64 sx_dir_hash(const char *name, u32 len);

/** sx_dir_check_name() - -EINVAL for "", ".", "..", '/', NUL or > SX_NAME_MAX bytes */
int sx_dir_check_name(const char *name);

/** sx_dir_lookup() - the inode number of @name in @dp, or -ENOENT */
int sx_dir_lookup(struct sx_trans *tp, struct sx_inode *dp, const char *name, u64 *ino);

/** sx_dir_add() - add @name -> @ino; -EEXIST if the name is taken */
int sx_dir_add(struct sx_trans *tp, struct sx_inode *dp, const char *name, u64 ino);

/** sx_dir_remove() - remove @name; its inode number in *@ino; -ENOENT */
int sx_dir_remove(struct sx_trans *tp, struct sx_inode *dp, const char *name, u64 *ino);

/**
 * sx_dir_replace() - point the existing entry @name at @ino (rename over an
 * existing name); the old inode number in *@oldino; -ENOENT.  Never needs
 * a new block, so it cannot fail with -ENOSPC.
 */
int sx_dir_replace(struct sx_trans *tp, struct sx_inode *dp, const char *name, u64 ino,
		   u64 *oldino);

/**
 * sx_dir_iterate() - call @fn for each entry whose hash is >= @start, in
 * hash order (equal hashes in the order they were added); @name is
 * NUL-terminated.  A nonzero return of @fn stops the walk and is returned.
 * The caller holds @dp's ilock, so @fn must not call into the directory;
 * @start and the @hash given to @fn let a caller walk in pieces, dropping
 * the lock in between (resume at a hash not yet finished).
 */
int sx_dir_iterate(struct sx_inode *dp, u64 start,
		   int (*fn)(void *arg, const char *name, u32 len, u64 hash, u64 ino),
		   void *arg);

/** sx_dir_res_bytes() - log bytes of one add or remove */
u32 sx_dir_res_bytes(const struct sx_mount *mp, const struct sx_inode *dp);

#endif /* SX_DIR_H */
