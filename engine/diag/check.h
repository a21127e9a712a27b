/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Offline inspection: the checker (check.c) and the log printer (logprint.c)
 * look at an unmounted device through a minimal read-only mount that never
 * replays, writes or caches anything.
 */
#ifndef SX_CHECK_H
#define SX_CHECK_H

#include "util.h"
#include "sb.h"

/**
 * sx_offline_mount_alloc() - a read-only mount of @bd for offline tools
 * @name: for engine messages
 *
 * Only m_bdev, m_name and m_flags are set; sx_offline_mount_set_sb() adds
 * the geometry.  No buffer cache, log or allocator is set up, so only the
 * device I/O helpers, sx_log_scan() and sx_buf_verify() may be used on it.
 * Return: the mount, or NULL without memory.
 */
struct sx_mount *sx_offline_mount_alloc(struct sx_bdev *bd, const char *name);

/** sx_offline_mount_set_sb() - give an offline mount its superblock */
void sx_offline_mount_set_sb(struct sx_mount *mp, const struct sx_sb *sb);

/** sx_offline_mount_free() - free a mount from sx_offline_mount_alloc() */
void sx_offline_mount_free(struct sx_mount *mp);

/**
 * sx_offline_sb_io_len() - bytes a superblock copy read moves on @bd
 * (SX_SB_SIZE rounded up to the sector size)
 *
 * Return: 0, or -EINVAL for a sector size no superblock code handles.
 */
int sx_offline_sb_io_len(const struct sx_bdev *bd, size_t *lenp);

/** sx_offline_errname() - a short word for @error (a negative errno) in a report */
const char *sx_offline_errname(int error);

#endif /* SX_CHECK_H */
