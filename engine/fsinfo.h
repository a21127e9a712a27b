/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fsinfo block: the logged, changing facts of the filesystem that the
 * superblock (never logged) cannot hold: the root directory, the head of
 * the unlinked list, the next inode generation, the inode count and the
 * refcount B+tree's root.
 *
 * Every change goes through a transaction that joins the block, so its
 * buffer lock serialises the writers of these fields.  Lock order: inode
 * blocks, then the fsinfo block, then B+tree and bitmap blocks.
 */
#ifndef SX_FSINFO_H
#define SX_FSINFO_H

#include "util.h"

struct sx_trans;
struct sx_buf;
struct sx_sb;

/** sx_fsinfo_buf_ops - verifier of the fsinfo block */
extern const struct sx_buf_ops sx_fsinfo_buf_ops;

/**
 * sx_fsinfo_init_block() - format the fsinfo block of a new filesystem
 * @data: sb_blocksize bytes, filled in and sealed with its CRC
 * @rootino: the root directory's inode
 * @next_gen: generation of the next inode allocated
 * @icount: inodes in use
 */
void sx_fsinfo_init_block(const struct sx_sb *sb, u64 rootino, u64 next_gen, u64 icount,
			  void *data);

/**
 * sx_fsinfo_mount() - read and verify the fsinfo block at mount: sets
 * m_rootino and the cached refcount tree height
 *
 * Return: 0, -EFSCORRUPTED/-EFSBADCRC, -EIO, -ENOMEM.
 */
int sx_fsinfo_mount(struct sx_mount *mp);

/**
 * sx_fsinfo_get() - the fsinfo block, read and joined to @tp
 */
int sx_fsinfo_get(struct sx_trans *tp, struct sx_buf **bpp);

/**
 * sx_fsinfo_get_refc_root() - the refcount B+tree's root block and height
 * @tp: if not NULL, the block is joined to it (released at commit) and
 *      *@fibp is set to NULL; if NULL, the block is read locked and returned
 *      in *@fibp for the caller to release with sx_buf_relse() (its lock
 *      keeps the tree still while the caller reads it)
 * @root: 0 for an empty tree
 * @nlevels: the height, 0 for an empty tree
 */
int sx_fsinfo_get_refc_root(struct sx_mount *mp, struct sx_trans *tp, struct sx_buf **fibp,
			    u64 *root, u32 *nlevels);

/** sx_fsinfo_set_refc_root() - record the refcount tree's new root and height in @tp */
int sx_fsinfo_set_refc_root(struct sx_trans *tp, u64 root, u32 nlevels);

/**
 * sx_fsinfo_refc_nlevels() - the refcount tree's height as last committed or
 * set (unlocked; for sizing reservations)
 */
u32 sx_fsinfo_refc_nlevels(const struct sx_mount *mp);

/** sx_fsinfo_root_ino() - the root directory's inode number */
int sx_fsinfo_root_ino(struct sx_mount *mp, u64 *ino);

/** sx_fsinfo_next_gen() - take the next inode generation (fi_next_gen++) in @tp */
int sx_fsinfo_next_gen(struct sx_trans *tp, u64 *gen);

/** sx_fsinfo_mod_icount() - add @delta to the inode count in @tp */
int sx_fsinfo_mod_icount(struct sx_trans *tp, s64 delta);

/**
 * sx_fsinfo_get_unlinked() / sx_fsinfo_set_unlinked() - the head of the
 * unlinked list (0: empty), read or changed in @tp
 */
int sx_fsinfo_get_unlinked(struct sx_trans *tp, u64 *head);
int sx_fsinfo_set_unlinked(struct sx_trans *tp, u64 head);

/**
 * sx_fsinfo_read_unlinked() - the head of the unlinked list, read without a
 * transaction (the checker, recovery)
 */
int sx_fsinfo_read_unlinked(struct sx_mount *mp, u64 *head);

/** sx_fsinfo_res_bytes() - log bytes of changing the fsinfo block in a transaction */
u32 sx_fsinfo_res_bytes(const struct sx_mount *mp);

#endif /* SX_FSINFO_H */
