// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The sxb backend of a real filesystem: POSIX calls, fallocate(2), the
 * FICLONERANGE and FS_IOC_[GS]ETFLAGS ioctls and FISWAPRANGE, on files in
 * one directory.  Built into the static guest program (no libswapext).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>
#include "sxb_posix.h"

/* A call's result as the store gives it: 0 or -errno (a function: the call runs once) */
static int neg(int ret)
{
	return ret < 0 ? -errno : ret;
}

static int px_create(void *ctx, const char *name, int *fd)
{
	struct sxb_posix *px = ctx;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", px->dir, name);
	*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	return *fd < 0 ? -errno : 0;
}

static int px_close(void *ctx, int fd)
{
	return neg(close(fd));
}

static int px_unlink(void *ctx, const char *name)
{
	struct sxb_posix *px = ctx;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", px->dir, name);
	return neg(unlink(path));
}

static int64_t px_pwrite(void *ctx, int fd, const void *buf, uint64_t len, uint64_t off)
{
	ssize_t n = pwrite(fd, buf, len, (off_t)off);

	return n < 0 ? -errno : n;
}

/* Until EOF or @len: a real file may return less than asked before EOF. */
static int64_t px_pread(void *ctx, int fd, void *buf, uint64_t len, uint64_t off)
{
	uint64_t done = 0;
	ssize_t n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	return (int64_t)done;
}

static int px_truncate(void *ctx, int fd, uint64_t size)
{
	return neg(ftruncate(fd, (off_t)size));
}

static int px_fallocate(void *ctx, int fd, uint64_t off, uint64_t len)
{
	return neg(fallocate(fd, 0, (off_t)off, (off_t)len));
}

static int px_punch(void *ctx, int fd, uint64_t off, uint64_t len)
{
	return neg(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off,
			     (off_t)len));
}

static int px_clone_range(void *ctx, int dst, uint64_t doff, int src, uint64_t soff,
			  uint64_t len)
{
	struct file_clone_range fcr = {
		.src_fd = src, .src_offset = soff, .src_length = len, .dest_offset = doff,
	};

	return neg(ioctl(dst, FICLONERANGE, &fcr));
}

static int px_swap(void *ctx, int fd2, struct file_swap_range *fsr)
{
	return neg(ioctl(fd2, FISWAPRANGE, fsr));
}

static int px_fstat(void *ctx, int fd, struct sxb_stat *out)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	out->ino = st.st_ino;
	out->size = (uint64_t)st.st_size;
	out->blocks = (uint64_t)st.st_blocks;
	out->mtime_sec = st.st_mtim.tv_sec;
	out->mtime_nsec = (int32_t)st.st_mtim.tv_nsec;
	out->ctime_sec = st.st_ctim.tv_sec;
	out->ctime_nsec = (int32_t)st.st_ctim.tv_nsec;
	return 0;
}

static int px_setflags(void *ctx, int fd, uint32_t flags)
{
	int f;

	if (ioctl(fd, FS_IOC_GETFLAGS, &f))
		return -errno;
	f &= ~(FS_IMMUTABLE_FL | FS_APPEND_FL);
	if (flags & SXB_IMMUTABLE)
		f |= FS_IMMUTABLE_FL;
	if (flags & SXB_APPEND)
		f |= FS_APPEND_FL;
	return neg(ioctl(fd, FS_IOC_SETFLAGS, &f));
}

static int px_fsync(void *ctx, int fd)
{
	return neg(fsync(fd));
}

static int px_drop_caches(void *ctx)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	int error = 0;

	sync();
	if (fd < 0)
		return -errno;
	if (write(fd, "3", 1) != 1)
		error = -errno;
	close(fd);
	return error;
}

void sxb_posix_init(struct sxb *b, struct sxb_posix *px, const char *dir, uint32_t bs)
{
	memset(b, 0, sizeof(*b));
	px->dir = dir;
	b->name = "posix";
	b->ctx = px;
	b->bs = bs;
	b->create = px_create;
	b->close = px_close;
	b->unlink = px_unlink;
	b->pwrite = px_pwrite;
	b->pread = px_pread;
	b->truncate = px_truncate;
	b->fallocate = px_fallocate;
	b->punch = px_punch;
	b->clone_range = px_clone_range;
	b->swap = px_swap;
	b->fstat = px_fstat;
	b->setflags = px_setflags;
	b->fsync = px_fsync;
	b->drop_caches = px_drop_caches;
	/* above anything the guest program opens */
	b->bad_fd = 999;
}
