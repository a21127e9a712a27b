/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Open files: the mount's descriptor table, names, and the data path.
 */
#ifndef SX_FILE_H
#define SX_FILE_H

#include "util.h"

struct sx_inode;

/** sx_files_init() / sx_files_destroy() - the mount's descriptor table */
int sx_files_init(struct sx_mount *mp);
void sx_files_destroy(struct sx_mount *mp);

/** sx_fd_get() - the inode of an open descriptor, referenced; -EBADF */
int sx_fd_get(struct sx_mount *mp, int fd, struct sx_inode **ipp);

/** sx_file_write_data() - write data blocks in place (no journal); the
 * next log force flushes before it writes, so data is durable before the
 * metadata that maps it */
int sx_file_write_data(struct sx_mount *mp, u64 bno, u32 count, const void *buf);

#endif /* SX_FILE_H */
