// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The sxb backend of the store: every operation through the library's
 * public API on one mount.
 */
#include <errno.h>
#include <string.h>
#include <swapext/swapext.h>
#include "sxb_store.h"

static int st_create(void *ctx, const char *name, int *fd)
{
	struct sx_mount *mp = ctx;
	int error = sx_create(mp, name, 0644, fd);

	/* O_CREAT | O_TRUNC */
	if (error == -EEXIST) {
		error = sx_open(mp, name, fd);
		if (!error)
			error = sx_truncate(mp, *fd, 0);
	}
	return error;
}

static int st_close(void *ctx, int fd)
{
	return sx_close(ctx, fd);
}

static int st_unlink(void *ctx, const char *name)
{
	return sx_unlink(ctx, name);
}

static int64_t st_pwrite(void *ctx, int fd, const void *buf, uint64_t len, uint64_t off)
{
	return sx_pwrite(ctx, fd, buf, len, off);
}

static int64_t st_pread(void *ctx, int fd, void *buf, uint64_t len, uint64_t off)
{
	return sx_pread(ctx, fd, buf, len, off);
}

static int st_truncate(void *ctx, int fd, uint64_t size)
{
	return sx_truncate(ctx, fd, size);
}

static int st_fallocate(void *ctx, int fd, uint64_t off, uint64_t len)
{
	return sx_fallocate(ctx, fd, off, len);
}

static int st_punch(void *ctx, int fd, uint64_t off, uint64_t len)
{
	return sx_punch(ctx, fd, off, len);
}

static int st_clone_range(void *ctx, int dst, uint64_t doff, int src, uint64_t soff,
			  uint64_t len)
{
	return sx_clone_range(ctx, dst, doff, src, soff, len);
}

static int st_swap(void *ctx, int fd2, struct file_swap_range *fsr)
{
	return sx_swap_file_range(ctx, fd2, fsr);
}

static int st_fstat(void *ctx, int fd, struct sxb_stat *out)
{
	struct sx_stat st;
	int error = sx_fstat(ctx, fd, &st);

	if (error)
		return error;
	out->ino = st.st_ino;
	out->size = st.st_size;
	out->blocks = st.st_blocks * st.st_blksize / 512;
	out->mtime_sec = st.st_mtime_ns / 1000000000;
	out->mtime_nsec = (int32_t)(st.st_mtime_ns % 1000000000);
	out->ctime_sec = st.st_ctime_ns / 1000000000;
	out->ctime_nsec = (int32_t)(st.st_ctime_ns % 1000000000);
	return 0;
}

static int st_setflags(void *ctx, int fd, uint32_t flags)
{
	struct sx_stat st;
	uint32_t f;
	int error = sx_fstat(ctx, fd, &st);

	if (error)
		return error;
	f = st.st_flags & ~(SX_DIFLAG_IMMUTABLE | SX_DIFLAG_APPEND);
	if (flags & SXB_IMMUTABLE)
		f |= SX_DIFLAG_IMMUTABLE;
	if (flags & SXB_APPEND)
		f |= SX_DIFLAG_APPEND;
	return sx_setflags(ctx, fd, f);
}

static int st_fsync(void *ctx, int fd)
{
	return sx_fsync(ctx, fd);
}

void sxb_store_init(struct sxb *b, struct sx_mount *mp, uint32_t bs)
{
	memset(b, 0, sizeof(*b));
	b->name = "store";
	b->ctx = mp;
	b->bs = bs;
	b->create = st_create;
	b->close = st_close;
	b->unlink = st_unlink;
	b->pwrite = st_pwrite;
	b->pread = st_pread;
	b->truncate = st_truncate;
	b->fallocate = st_fallocate;
	b->punch = st_punch;
	b->clone_range = st_clone_range;
	b->swap = st_swap;
	b->fstat = st_fstat;
	b->setflags = st_setflags;
	b->fsync = st_fsync;
	/* the store's descriptors are small table indexes */
	b->bad_fd = 999;
}
