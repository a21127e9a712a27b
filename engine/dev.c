// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The mount's device: block I/O in filesystem blocks, cache flushes, the
 * superblock write, and shutdown.  Every layer (buf, log, trans, defer,
 * the data path) does its I/O here, and a failed write or flush shuts the
 * mount down here, so that none of them calls up into mount.c.
 */
#include "util.h"
#include "dev.h"

/*
 * Stop all further I/O.  The first failure is the one reported: its error
 * is what sx_unmount() returns and its reason is kept for
 * sx_shutdown_state(), so a caller that sees EIO long after the cause can
 * still learn the cause.
 */
void sx_force_shutdown(struct sx_mount *mp, int error, const char *fmt, ...)
{
	bool first = false;
	va_list ap;

	sx_mutex_lock(&mp->m_shutdown_lock);
	if (!sx_is_shutdown(mp)) {
		mp->m_shutdown_error = error ? error : -EIO;
		va_start(ap, fmt);
		vsnprintf(mp->m_shutdown_reason, sizeof(mp->m_shutdown_reason), fmt, ap);
		va_end(ap);
		/* the reason is written before the flag that publishes it */
		sx_store_release(mp->m_shutdown, 1u);
		first = true;
	}
	sx_mutex_unlock(&mp->m_shutdown_lock);
	if (first)
		sx_err(mp, "shutting down after error %d: %s; no further I/O", error,
		       mp->m_shutdown_reason);
}

/* Whether @mp has shut down: the error and the reason of the first failure. */
SX_API int sx_shutdown_state(struct sx_mount *mp, char *reason, size_t len)
{
	int error = 0;

	sx_mutex_lock(&mp->m_shutdown_lock);
	if (sx_is_shutdown(mp))
		error = mp->m_shutdown_error;
	if (reason && len)
		snprintf(reason, len, "%s", error ? mp->m_shutdown_reason : "");
	sx_mutex_unlock(&mp->m_shutdown_lock);
	return error;
}

/* Check that [@blkno, @blkno + @count) lies on the filesystem. */
static int sx_dev_check(struct sx_mount *mp, u64 blkno, u32 count)
{
	if (count == 0 || blkno >= mp->m_sb.sb_dblocks || count > mp->m_sb.sb_dblocks - blkno)
		return -EFSCORRUPTED;
	return 0;
}

/* Read @count blocks at @blkno. */
int sx_dev_read(struct sx_mount *mp, u64 blkno, u32 count, void *buf)
{
	int error = sx_dev_check(mp, blkno, count);

	if (error)
		return error;
	if (sx_is_shutdown(mp))
		return -EIO;
	return mp->m_bdev->bd_ops->read(mp->m_bdev, blkno << mp->m_blog, buf,
					(size_t)count << mp->m_blog);
}

/* Write @count blocks at @blkno; a failure shuts the mount down. */
int sx_dev_write(struct sx_mount *mp, u64 blkno, u32 count, const void *buf, unsigned int flags)
{
	int error = sx_dev_check(mp, blkno, count);

	if (error)
		return error;
	if (sx_is_shutdown(mp))
		return -EIO;
	error = mp->m_bdev->bd_ops->write(mp->m_bdev, blkno << mp->m_blog, buf,
					  (size_t)count << mp->m_blog, flags);
	if (error)
		sx_force_shutdown(mp, error, "device write of %u blocks at block %llu failed",
				  count, (unsigned long long)blkno);
	return error;
}

/* Make completed writes durable; a failure shuts the mount down. */
int sx_dev_flush(struct sx_mount *mp)
{
	int error;

	if (sx_is_shutdown(mp))
		return -EIO;
	error = mp->m_bdev->bd_ops->flush(mp->m_bdev);
	if (error)
		sx_force_shutdown(mp, error, "device cache flush failed");
	return error;
}

/* Write the in-core superblock over the older copy (m_sb_lock held). */
int sx_write_sb(struct sx_mount *mp)
{
	int error;

	ASSERT(sx_mutex_is_held(&mp->m_sb_lock));
	if (sx_is_shutdown(mp))
		return -EIO;
	error = sx_fault("sb_write");
	if (!error)
		error = sx_sb_write(mp->m_bdev, &mp->m_sb);
	if (error)
		sx_force_shutdown(mp, error, "superblock write (sequence %llu) failed",
				  (unsigned long long)mp->m_sb.sb_seq);
	return error;
}

/* Stop all I/O at once, without flushing the log. */
SX_API void sx_shutdown(struct sx_mount *mp)
{
	sx_force_shutdown(mp, -EIO, "shut down by sx_shutdown()");
}
