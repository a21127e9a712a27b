/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mount's device: I/O in filesystem blocks and shutdown (dev.c).
 */
#ifndef SX_DEV_H
#define SX_DEV_H

#include "mount.h"

/** sx_is_shutdown() - true once the mount has stopped all I/O */
static inline bool sx_is_shutdown(const struct sx_mount *mp)
{
	return sx_load_acquire(mp->m_shutdown) != 0;
}

/**
 * sx_force_shutdown() - stop all further I/O after error @error; @fmt says
 * what failed (the first shutdown's reason is kept, sx_shutdown_state())
 */
void sx_force_shutdown(struct sx_mount *mp, int error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Device I/O in filesystem blocks; errors shut the mount down. */
int sx_dev_read(struct sx_mount *mp, u64 blkno, u32 count, void *buf);
int sx_dev_write(struct sx_mount *mp, u64 blkno, u32 count, const void *buf, unsigned int flags);
int sx_dev_flush(struct sx_mount *mp);

/** sx_write_sb() - write the in-core superblock (caller holds m_sb_lock) */
int sx_write_sb(struct sx_mount *mp);

#endif /* SX_DEV_H */
