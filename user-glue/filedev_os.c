/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Userspace block devices: a regular file or block device node accessed
 * with pread/pwrite/fdatasync, and a device held in memory for tests.
 */
#define _GNU_SOURCE
#include "sx_platform.h"
#include <swapext/device.h>
#include "bdev_os.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/falloc.h>
#include <linux/fs.h>

/* Sector size of a regular file opened without O_DIRECT. */
#define SX_FILEDEV_SECTSIZE	512u
/* Largest bounce buffer for misaligned O_DIRECT buffers. */
#define SX_FILEDEV_BOUNCE_MAX	(1u << 20)

struct sx_filedev {
	struct sx_bdev	fd_bdev;
	int		fd_fd;
	unsigned int	fd_flags;	/* SX_FILEDEV_* */
	u32		fd_memalign;	/* O_DIRECT buffer alignment, else 1 */
	bool		fd_blkdev;	/* a block device node, not a file */
};

struct sx_memdev {
	struct sx_bdev	md_bdev;
	u8		*md_data;
	/* concurrent I/O to one sector must see whole writes, as a disk does */
	pthread_rwlock_t md_lock;
};

/* The file device behind @bd. */
static struct sx_filedev *sx_filedev_of(struct sx_bdev *bd)
{
	return bd->bd_ctx;
}

/* pread until @len bytes are in, retrying short reads and EINTR. */
static int sx_filedev_pread_full(int fd, u64 off, u8 *buf, size_t len)
{
	while (len) {
		ssize_t n = pread(fd, buf, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* the file shrank under us: the device has lost its end */
		if (n == 0)
			return -EIO;
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* pwrite until @len bytes are out, retrying short writes and EINTR. */
static int sx_filedev_pwrite_full(int fd, u64 off, const u8 *buf, size_t len)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* no progress and no error: retrying would spin forever */
		if (n == 0)
			return -EIO;
		buf += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* fdatasync, retrying EINTR. */
static int sx_filedev_sync(int fd)
{
	while (fdatasync(fd) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/* Allocate an O_DIRECT bounce buffer for a transfer of @len bytes. */
static void *sx_filedev_bounce_alloc(struct sx_filedev *fdev, size_t len,
				     size_t *bouncelen)
{
	size_t align = fdev->fd_memalign;
	void *p;

	if (align < sizeof(void *))
		align = sizeof(void *);
	*bouncelen = len < SX_FILEDEV_BOUNCE_MAX ? len : SX_FILEDEV_BOUNCE_MAX;
	if (posix_memalign(&p, align, *bouncelen))
		return NULL;
	return p;
}

/* True if O_DIRECT cannot use @buf as it is. */
static bool sx_filedev_needs_bounce(struct sx_filedev *fdev, const void *buf)
{
	return (uintptr_t)buf & (fdev->fd_memalign - 1);
}

/* Read from a file device. */
static int sx_filedev_read(struct sx_bdev *bd, u64 off, void *buf, size_t len)
{
	struct sx_filedev *fdev = sx_filedev_of(bd);
	size_t bouncelen;
	u8 *bounce;
	int error;

	error = sx_bdev_check_range(bd, off, len);
	if (error)
		return error;
	if (!sx_filedev_needs_bounce(fdev, buf))
		return sx_filedev_pread_full(fdev->fd_fd, off, buf, len);

	bounce = sx_filedev_bounce_alloc(fdev, len, &bouncelen);
	if (!bounce)
		return -ENOMEM;
	while (len) {
		size_t n = len < bouncelen ? len : bouncelen;

		error = sx_filedev_pread_full(fdev->fd_fd, off, bounce, n);
		if (error)
			goto out_free;
		memcpy(buf, bounce, n);
		buf = (u8 *)buf + n;
		off += n;
		len -= n;
	}
out_free:
	free(bounce);
	return error;
}

/* Write to a file device; FUA writes are synced before returning. */
static int sx_filedev_write(struct sx_bdev *bd, u64 off, const void *buf,
			    size_t len, unsigned int flags)
{
	struct sx_filedev *fdev = sx_filedev_of(bd);
	size_t bouncelen;
	u8 *bounce = NULL;
	int error;

	if (fdev->fd_flags & SX_FILEDEV_RDONLY)
		return -EROFS;
	error = sx_bdev_check_range(bd, off, len);
	if (error)
		return error;
	if (!sx_filedev_needs_bounce(fdev, buf)) {
		error = sx_filedev_pwrite_full(fdev->fd_fd, off, buf, len);
		goto out_fua;
	}

	bounce = sx_filedev_bounce_alloc(fdev, len, &bouncelen);
	if (!bounce)
		return -ENOMEM;
	while (len) {
		size_t n = len < bouncelen ? len : bouncelen;

		memcpy(bounce, buf, n);
		error = sx_filedev_pwrite_full(fdev->fd_fd, off, bounce, n);
		if (error)
			goto out_free;
		buf = (const u8 *)buf + n;
		off += n;
		len -= n;
	}
out_fua:
	/*
	 * fdatasync makes more than this write durable; that is allowed,
	 * FUA only promises at least this write.
	 */
	if (!error && (flags & SX_BDEV_FUA))
		error = sx_filedev_sync(fdev->fd_fd);
out_free:
	free(bounce);
	return error;
}

/* Make every completed write durable. */
static int sx_filedev_flush(struct sx_bdev *bd)
{
	struct sx_filedev *fdev = sx_filedev_of(bd);

	if (fdev->fd_flags & SX_FILEDEV_RDONLY)
		return 0;
	return sx_filedev_sync(fdev->fd_fd);
}

/* Tell the file or device that a range no longer holds data. */
static int sx_filedev_discard(struct sx_bdev *bd, u64 off, u64 len)
{
	struct sx_filedev *fdev = sx_filedev_of(bd);
	int error;

	if (fdev->fd_flags & SX_FILEDEV_RDONLY)
		return -EROFS;
	error = sx_bdev_check_range(bd, off, len);
	if (error || !len)
		return error;
	if (fdev->fd_blkdev) {
		u64 range[2] = { off, len };

		if (ioctl(fdev->fd_fd, BLKDISCARD, range) < 0)
			return -errno;
		return 0;
	}
	if (fallocate(fdev->fd_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len) < 0)
		return -errno;
	return 0;
}

/* Close a file device. */
static void sx_filedev_destroy(struct sx_bdev *bd)
{
	struct sx_filedev *fdev = sx_filedev_of(bd);

	close(fdev->fd_fd);
	free(fdev);
}

static const struct sx_bdev_ops sx_filedev_ops = {
	.read		= sx_filedev_read,
	.write		= sx_filedev_write,
	.flush		= sx_filedev_flush,
	.discard	= sx_filedev_discard,
	.destroy	= sx_filedev_destroy,
};

/*
 * Find the O_DIRECT alignment of a regular file: its offset alignment
 * becomes the sector size, so that every request the engine makes is one
 * the filesystem accepts.
 */
static int sx_filedev_dio_geometry(struct sx_filedev *fdev, u32 *sectsize)
{
#ifdef STATX_DIOALIGN
	struct statx stx;

	if (statx(fdev->fd_fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		/* zero alignments: this file cannot do direct I/O at all */
		if (!stx.stx_dio_offset_align || !stx.stx_dio_mem_align)
			return -EINVAL;
		*sectsize = stx.stx_dio_offset_align;
		if (*sectsize < SX_FILEDEV_SECTSIZE)
			*sectsize = SX_FILEDEV_SECTSIZE;
		fdev->fd_memalign = stx.stx_dio_mem_align;
		return 0;
	}
#endif
	/* the kernel cannot tell us: a page is enough for every filesystem */
	*sectsize = 4096;
	fdev->fd_memalign = 4096;
	return 0;
}

/* Open a file or block device node as a device. */
int sx_filedev_open(const char *path, unsigned int flags, u64 size,
		    struct sx_bdev **bdp)
{
	struct sx_filedev *fdev;
	bool created = false;
	struct stat st;
	u64 cursize;
	u32 sectsize;
	int oflags;
	int error;

	*bdp = NULL;
	if (flags & ~(SX_FILEDEV_RDONLY | SX_FILEDEV_CREATE | SX_FILEDEV_DIRECT))
		return -EINVAL;
	if ((flags & SX_FILEDEV_RDONLY) && (flags & SX_FILEDEV_CREATE))
		return -EINVAL;

	fdev = calloc(1, sizeof(*fdev));
	if (!fdev)
		return -ENOMEM;
	fdev->fd_flags = flags;
	fdev->fd_memalign = 1;

	oflags = O_CLOEXEC;
	oflags |= (flags & SX_FILEDEV_RDONLY) ? O_RDONLY : O_RDWR;
	if (flags & SX_FILEDEV_DIRECT)
		oflags |= O_DIRECT;
	/* know whether we made the file, so that a failure can remove it */
	fdev->fd_fd = -1;
	if (flags & SX_FILEDEV_CREATE) {
		fdev->fd_fd = open(path, oflags | O_CREAT | O_EXCL, 0666);
		if (fdev->fd_fd >= 0)
			created = true;
		else if (errno != EEXIST) {
			error = -errno;
			goto out_free;
		}
	}
	if (fdev->fd_fd < 0)
		fdev->fd_fd = open(path, oflags);
	if (fdev->fd_fd < 0) {
		error = -errno;
		goto out_free;
	}
	if (fstat(fdev->fd_fd, &st) < 0) {
		error = -errno;
		goto out_close;
	}

	if (S_ISBLK(st.st_mode)) {
		int ssz;

		fdev->fd_blkdev = true;
		if (ioctl(fdev->fd_fd, BLKGETSIZE64, &cursize) < 0 ||
		    ioctl(fdev->fd_fd, BLKSSZGET, &ssz) < 0) {
			error = -errno;
			goto out_close;
		}
		sectsize = ssz;
		if (flags & SX_FILEDEV_DIRECT)
			fdev->fd_memalign = sectsize;
	} else if (S_ISREG(st.st_mode)) {
		cursize = st.st_size;
		sectsize = SX_FILEDEV_SECTSIZE;
		if (flags & SX_FILEDEV_DIRECT) {
			error = sx_filedev_dio_geometry(fdev, &sectsize);
			if (error)
				goto out_close;
		}
	} else {
		error = -EINVAL;
		goto out_close;
	}
	if (!sectsize || (sectsize & (sectsize - 1))) {
		error = -EINVAL;
		goto out_close;
	}

	/* @size, if given, is the device size: the file must be that big */
	if (size) {
		if (size & (sectsize - 1)) {
			error = -EINVAL;
			goto out_close;
		}
		if (cursize < size && (flags & SX_FILEDEV_CREATE) && !fdev->fd_blkdev) {
			if (ftruncate(fdev->fd_fd, (off_t)size) < 0) {
				error = -errno;
				goto out_close;
			}
			cursize = size;
		}
		if (cursize < size) {
			error = -ENOSPC;
			goto out_close;
		}
		cursize = size;
	}
	cursize &= ~(u64)(sectsize - 1);
	if (!cursize) {
		error = -EINVAL;
		goto out_close;
	}

	fdev->fd_bdev.bd_ops = &sx_filedev_ops;
	fdev->fd_bdev.bd_ctx = fdev;
	fdev->fd_bdev.bd_size = cursize;
	fdev->fd_bdev.bd_sectsize = sectsize;
	*bdp = &fdev->fd_bdev;
	return 0;

out_close:
	close(fdev->fd_fd);
	if (created)
		unlink(path);
out_free:
	free(fdev);
	return error;
}

/* The memory device behind @bd. */
static struct sx_memdev *sx_memdev_of(struct sx_bdev *bd)
{
	return bd->bd_ctx;
}

/* Read from a memory device. */
static int sx_memdev_read(struct sx_bdev *bd, u64 off, void *buf, size_t len)
{
	struct sx_memdev *mdev = sx_memdev_of(bd);
	int error;

	error = sx_bdev_check_range(bd, off, len);
	if (error)
		return error;
	pthread_rwlock_rdlock(&mdev->md_lock);
	memcpy(buf, mdev->md_data + off, len);
	pthread_rwlock_unlock(&mdev->md_lock);
	return 0;
}

/* Write to a memory device; memory is as durable as it gets here. */
static int sx_memdev_write(struct sx_bdev *bd, u64 off, const void *buf,
			   size_t len, unsigned int flags)
{
	struct sx_memdev *mdev = sx_memdev_of(bd);
	int error;

	error = sx_bdev_check_range(bd, off, len);
	if (error)
		return error;
	pthread_rwlock_wrlock(&mdev->md_lock);
	memcpy(mdev->md_data + off, buf, len);
	pthread_rwlock_unlock(&mdev->md_lock);
	return 0;
}

/* Nothing is cached in a memory device. */
static int sx_memdev_flush(struct sx_bdev *bd)
{
	return 0;
}

/* Discarded sectors read back as zeroes, as on a thin-provisioned disk. */
static int sx_memdev_discard(struct sx_bdev *bd, u64 off, u64 len)
{
	struct sx_memdev *mdev = sx_memdev_of(bd);
	int error;

	error = sx_bdev_check_range(bd, off, len);
	if (error)
		return error;
	pthread_rwlock_wrlock(&mdev->md_lock);
	memset(mdev->md_data + off, 0, len);
	pthread_rwlock_unlock(&mdev->md_lock);
	return 0;
}

/* Free a memory device. */
static void sx_memdev_destroy(struct sx_bdev *bd)
{
	struct sx_memdev *mdev = sx_memdev_of(bd);

	pthread_rwlock_destroy(&mdev->md_lock);
	free(mdev->md_data);
	free(mdev);
}

static const struct sx_bdev_ops sx_memdev_ops = {
	.read		= sx_memdev_read,
	.write		= sx_memdev_write,
	.flush		= sx_memdev_flush,
	.discard	= sx_memdev_discard,
	.destroy	= sx_memdev_destroy,
};

/* Create a zeroed device of @size bytes in memory. */
int sx_memdev_create(u64 size, u32 sectsize, struct sx_bdev **bdp)
{
	struct sx_memdev *mdev;
	int error;

	*bdp = NULL;
	if (sectsize < 512 || sectsize > 65536 || (sectsize & (sectsize - 1)))
		return -EINVAL;
	if (!size || (size & (sectsize - 1)))
		return -EINVAL;
	if (size > SIZE_MAX)
		return -EFBIG;

	mdev = calloc(1, sizeof(*mdev));
	if (!mdev)
		return -ENOMEM;
	/* calloc of a large size maps fresh zero pages: untouched RAM is free */
	mdev->md_data = calloc(1, (size_t)size);
	if (!mdev->md_data) {
		error = -ENOMEM;
		goto out_free;
	}
	error = -pthread_rwlock_init(&mdev->md_lock, NULL);
	if (error)
		goto out_free_data;

	mdev->md_bdev.bd_ops = &sx_memdev_ops;
	mdev->md_bdev.bd_ctx = mdev;
	mdev->md_bdev.bd_size = size;
	mdev->md_bdev.bd_sectsize = sectsize;
	*bdp = &mdev->md_bdev;
	return 0;

out_free_data:
	free(mdev->md_data);
out_free:
	free(mdev);
	return error;
}
