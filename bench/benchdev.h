/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the swapext benchmarks share: a clock, a device that counts what
 * reaches the device below it, and a file-backed image made for a run.
 *
 * The engine counts its log's records and transactions (sx_log_get_stats())
 * but not the flushes it asks of the device, and a flush is what a durable
 * update pays for; so the benchmarks put this thin wrapper between the
 * engine and the file device and count there.  Header only, with static
 * functions: every C file in bench/ is its own program (the Makefile's wildcard),
 * and this keeps the build rules as they are.
 */
#ifndef BENCHDEV_H
#define BENCHDEV_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <swapext/swapext.h>
#include <swapext/device.h>

static inline double bd_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Counters of one counting device; atomic: several threads commit at once. */
struct bd_counts {
	atomic_ullong	writes;		/* every write, FUA ones included */
	atomic_ullong	fua;		/* FUA writes: each costs a flush on a file device */
	atomic_ullong	flushes;	/* flush() calls */
	atomic_ullong	bytes;		/* bytes written */
	atomic_ullong	reads;		/* read() calls */
};

struct bd_count_ctx {
	struct sx_bdev		*lower;
	struct bd_counts	c;
};

static int bd_count_read(struct sx_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct bd_count_ctx *cx = bd->bd_ctx;

	atomic_fetch_add(&cx->c.reads, 1);
	return cx->lower->bd_ops->read(cx->lower, off, buf, len);
}

static int bd_count_write(struct sx_bdev *bd, uint64_t off, const void *buf, size_t len,
			  unsigned int flags)
{
	struct bd_count_ctx *cx = bd->bd_ctx;

	atomic_fetch_add(&cx->c.writes, 1);
	atomic_fetch_add(&cx->c.bytes, len);
	if (flags & SX_BDEV_FUA)
		atomic_fetch_add(&cx->c.fua, 1);
	return cx->lower->bd_ops->write(cx->lower, off, buf, len, flags);
}

static int bd_count_flush(struct sx_bdev *bd)
{
	struct bd_count_ctx *cx = bd->bd_ctx;

	atomic_fetch_add(&cx->c.flushes, 1);
	return cx->lower->bd_ops->flush(cx->lower);
}

static int bd_count_discard(struct sx_bdev *bd, uint64_t off, uint64_t len)
{
	struct bd_count_ctx *cx = bd->bd_ctx;

	if (!cx->lower->bd_ops->discard)
		return 0;
	return cx->lower->bd_ops->discard(cx->lower, off, len);
}

/* Destroys the device below too: the wrapper owns it. */
static void bd_count_destroy(struct sx_bdev *bd)
{
	struct bd_count_ctx *cx = bd->bd_ctx;

	sx_bdev_destroy(cx->lower);
	free(cx);
	free(bd);
}

static const struct sx_bdev_ops bd_count_ops = {
	.read		= bd_count_read,
	.write		= bd_count_write,
	.flush		= bd_count_flush,
	.discard	= bd_count_discard,
	.destroy	= bd_count_destroy,
};

/* bd_count_wrap() - a device that counts what goes to @lower (and owns it) */
static inline struct sx_bdev *bd_count_wrap(struct sx_bdev *lower)
{
	struct sx_bdev *bd = calloc(1, sizeof(*bd));
	struct bd_count_ctx *cx = calloc(1, sizeof(*cx));

	if (!bd || !cx) {
		fprintf(stderr, "bench: out of memory\n");
		exit(1);
	}
	cx->lower = lower;
	bd->bd_ops = &bd_count_ops;
	bd->bd_ctx = cx;
	bd->bd_size = lower->bd_size;
	bd->bd_sectsize = lower->bd_sectsize;
	return bd;
}

/* A snapshot of the counters, plain numbers. */
struct bd_snap {
	unsigned long long writes, fua, flushes, bytes, reads;
};

static inline void bd_count_snap(struct sx_bdev *bd, struct bd_snap *s)
{
	struct bd_count_ctx *cx = bd->bd_ctx;

	s->writes = atomic_load(&cx->c.writes);
	s->fua = atomic_load(&cx->c.fua);
	s->flushes = atomic_load(&cx->c.flushes);
	s->reads = atomic_load(&cx->c.reads);
	s->bytes = atomic_load(&cx->c.bytes);
}

/*
 * Device cache flushes between two snapshots: flush() calls plus FUA
 * writes, because the file device makes a FUA write durable with an
 * fdatasync of its own (include/swapext/device.h), a flush all the same.
 */
static inline unsigned long long bd_flushes(const struct bd_snap *a, const struct bd_snap *b)
{
	return (b->flushes - a->flushes) + (b->fua - a->fua);
}

/*
 * Write @path whole with zeroes, as a block device is: in a sparse file the
 * first write into each region allocates the host filesystem's blocks, and
 * every fdatasync after it writes that filesystem's metadata too, a cost
 * the floor (pwrite over an existing file) never pays.
 */
static inline void bd_file_fill(const char *path, uint64_t size)
{
	static char zero[1 << 20];
	uint64_t off;
	FILE *f = fopen(path, "wx");

	if (!f) {
		perror(path);
		exit(1);
	}
	for (off = 0; off < size; off += sizeof(zero)) {
		size_t n = size - off < sizeof(zero) ? (size_t)(size - off) : sizeof(zero);

		if (fwrite(zero, 1, n, f) != n) {
			perror(path);
			exit(1);
		}
	}
	if (fflush(f) || fdatasync(fileno(f)) || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/*
 * bd_log_bytes() - the log size the environment variable @var asks for,
 * in MiB (0: mkfs's default), or 128 MiB, what make bench gives XFS
 */
static inline uint64_t bd_log_bytes(const char *var)
{
	const char *env = getenv(var);

	return (env ? strtoull(env, NULL, 0) : 128) << 20;
}

/*
 * bd_file_image() - a new file-backed image of @size bytes at @path (any
 * old file there replaced; written whole first if @fill), mkfs'd with
 * @bs-byte blocks, the atomic_swap feature and a log of @logbytes (0:
 * mkfs's default), behind a counting device; opened O_DIRECT with @direct
 */
static inline struct sx_bdev *bd_file_image(const char *path, uint64_t size, uint32_t bs,
					    uint64_t logbytes, int fill, int direct)
{
	struct sx_mkfs_opts mo = {
		.mk_blocksize = bs,
		.mk_logblocks = (uint32_t)(logbytes / bs),
		.mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP,
	};
	struct sx_bdev *lower, *bd;
	int error;

	unlink(path);
	if (fill)
		bd_file_fill(path, size);
	error = sx_filedev_open(path, (fill ? 0 : SX_FILEDEV_CREATE) |
				(direct ? SX_FILEDEV_DIRECT : 0), size, &lower);
	if (error) {
		fprintf(stderr, "bench: %s: %s\n", path, sx_strerror(error));
		exit(1);
	}
	bd = bd_count_wrap(lower);
	error = sx_mkfs(bd, &mo);
	if (error) {
		fprintf(stderr, "bench: mkfs %s: %s\n", path, sx_strerror(error));
		exit(1);
	}
	return bd;
}

/* bd_file_reopen() - the image at @path again, behind a new counting device */
static inline struct sx_bdev *bd_file_reopen(const char *path)
{
	struct sx_bdev *lower;
	int error = sx_filedev_open(path, 0, 0, &lower);

	if (error) {
		fprintf(stderr, "bench: %s: %s\n", path, sx_strerror(error));
		exit(1);
	}
	return bd_count_wrap(lower);
}

#endif /* BENCHDEV_H */
