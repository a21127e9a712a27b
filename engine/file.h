/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Open files: the mount's descriptor table and names (file.c); the data
 * path is file_io.h.
 */
#ifndef SX_FILE_H
#define SX_FILE_H

#include "util.h"

struct sx_inode;
struct sx_trans;

/** sx_files_init() / sx_files_destroy() - the mount's descriptor table */
int sx_files_init(struct sx_mount *mp);
void sx_files_destroy(struct sx_mount *mp);

/** sx_fd_get() - the inode of an open descriptor, referenced; -EBADF */
int sx_fd_get(struct sx_mount *mp, int fd, struct sx_inode **ipp);

/** sx_file_inode_ops - how the inode layer frees a file's blocks (sx_icache_init()) */
extern const struct sx_inode_ops sx_file_inode_ops;

/**
 * sx_file_res_largest() - the largest log reservation any operation asks
 * for on a filesystem of @mp's geometry, its B+trees at the greatest
 * height their records can reach (mkfs sizes the log by it)
 */
u32 sx_file_res_largest(const struct sx_mount *mp);

#endif /* SX_FILE_H */
