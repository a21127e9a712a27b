// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The peers of bench/bench_update.c: a durable 4 KiB update of a 1 MiB
 * file, the ways a Linux program does it today, T threads each on its own
 * file in DIR (on XFS for the XFS methods, any filesystem for the others):
 *
 *   exchange  FICLONE the file into an O_TMPFILE, pwrite the clone,
 *             XFS_IOC_EXCHANGE_RANGE(TO_EOF | DSYNC) of the whole file
 *   commit    XFS_IOC_START_COMMIT on the file, the same clone and write,
 *             XFS_IOC_COMMIT_RANGE(TO_EOF | DSYNC) (refused if the file
 *             changed since the start: the freshness check swapext does too)
 *   atomic    pwritev2(RWF_ATOMIC | RWF_DSYNC) on an O_DIRECT descriptor
 *             (XFS software atomic writes, Linux 6.16+)
 *   rename    read the file, write the copy with the 4 KiB changed to a new
 *             file, fsync it, rename it over the file, fsync the directory
 *   floor     pwrite + fdatasync in place: durable but not atomic, the
 *             least a durable 4 KiB write costs on that filesystem
 *
 * Usage: xfs_update METHOD DIR OPS THREADS
 * Prints "RESULT ..." (ops/s, and per update the device's flushes and, on
 * XFS, transactions and log bytes) or "SKIP ... reason" when the kernel or
 * filesystem lacks the method.  Each file is read back afterwards and
 * compared with what the thread wrote; a difference fails the run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include "sysstat.h"

#define FILE_SIZE	(1u << 20)
#define UPDATE_SIZE	4096u

/* ---------------------------------------------------------------- ABI (Linux 6.10+ / 6.13+) */

struct xchg_range {
	int32_t		file1_fd;
	uint32_t	pad;
	uint64_t	file1_offset;
	uint64_t	file2_offset;
	uint64_t	length;
	uint64_t	flags;
};

struct commit_range {
	int32_t		file1_fd;
	uint32_t	pad;
	uint64_t	file1_offset;
	uint64_t	file2_offset;
	uint64_t	length;
	uint64_t	flags;
	uint64_t	file2_freshness[6];	/* filled in by START_COMMIT */
};
_Static_assert(sizeof(struct commit_range) == 88, "xfs_commit_range is 88 bytes");

#define XCHG_TO_EOF		(1ULL << 0)
#define XCHG_DSYNC		(1ULL << 1)
#define XCHG_IOC_EXCHANGE_RANGE	_IOW('X', 129, struct xchg_range)
#define XCHG_IOC_START_COMMIT	_IOR('X', 130, struct commit_range)
#define XCHG_IOC_COMMIT_RANGE	_IOW('X', 131, struct commit_range)

#ifndef RWF_ATOMIC
#define RWF_ATOMIC		0x00000040
#endif

/* ---------------------------------------------------------------- helpers */

enum method { M_EXCHANGE, M_COMMIT, M_ATOMIC, M_RENAME, M_FLOOR };
static const char *const method_names[] = { "exchange", "commit", "atomic", "rename", "floor" };

static const char *dir;
static enum method method;
static pthread_barrier_t start_line;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("xfs_update: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* The method cannot run here: say why, and succeed (the harness records a skip). */
static void skip(const char *why, int err) __attribute__((noreturn));
static void skip(const char *why, int err)
{
	printf("SKIP method=%s reason=\"%s: %s\"\n", method_names[method], why, strerror(err));
	exit(0);
}

static void fill(unsigned char *buf, size_t len, int id, unsigned int op)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(id * 31 + op * 7 + i / 512 + 1);
}

static void path_of(char *p, size_t len, int id, const char *suffix)
{
	snprintf(p, len, "%s/u%d%s", dir, id, suffix);
}

/* ---------------------------------------------------------------- the methods */

struct worker {
	int		id;
	unsigned int	ops;
	int		fd;		/* the file (O_DIRECT for atomic); -1 for rename */
	unsigned char	*model;
	unsigned char	*buf;		/* UPDATE_SIZE, aligned for O_DIRECT */
	unsigned char	*copy;		/* FILE_SIZE, rename only */
	pthread_t	thread;
	int		err;		/* errno of the first failure */
	const char	*what;
};

/* A clone of @fd with the update written into it (exchange and commit). */
static int clone_and_write(struct worker *w, uint64_t off)
{
	int tmp = open(dir, O_TMPFILE | O_RDWR, 0644);

	if (tmp < 0) {
		w->what = "open(O_TMPFILE)";
		return -1;
	}
	if (ioctl(tmp, FICLONE, w->fd)) {
		w->what = "FICLONE";
		close(tmp);
		return -1;
	}
	if (pwrite(tmp, w->buf, UPDATE_SIZE, (off_t)off) != UPDATE_SIZE) {
		w->what = "pwrite (clone)";
		close(tmp);
		return -1;
	}
	return tmp;
}

static int update_once(struct worker *w, unsigned int op)
{
	uint64_t off = (uint64_t)((op * 2654435761u + (unsigned int)w->id * 97u) %
				  (FILE_SIZE / UPDATE_SIZE)) * UPDATE_SIZE;
	char path[4096], tmppath[4096];
	struct commit_range cr;
	struct xchg_range xr;
	struct iovec iov;
	int tmp, fd, dfd;

	fill(w->buf, UPDATE_SIZE, w->id, op);
	switch (method) {
	case M_EXCHANGE:
		tmp = clone_and_write(w, off);
		if (tmp < 0)
			return errno;
		memset(&xr, 0, sizeof(xr));
		xr.file1_fd = tmp;
		xr.length = FILE_SIZE;
		xr.flags = XCHG_TO_EOF | XCHG_DSYNC;
		if (ioctl(w->fd, XCHG_IOC_EXCHANGE_RANGE, &xr)) {
			w->what = "XFS_IOC_EXCHANGE_RANGE";
			close(tmp);
			return errno;
		}
		close(tmp);
		break;
	case M_COMMIT:
		memset(&cr, 0, sizeof(cr));
		if (ioctl(w->fd, XCHG_IOC_START_COMMIT, &cr)) {
			w->what = "XFS_IOC_START_COMMIT";
			return errno;
		}
		tmp = clone_and_write(w, off);
		if (tmp < 0)
			return errno;
		cr.file1_fd = tmp;
		cr.file1_offset = 0;
		cr.file2_offset = 0;
		cr.length = FILE_SIZE;
		cr.flags = XCHG_TO_EOF | XCHG_DSYNC;
		if (ioctl(w->fd, XCHG_IOC_COMMIT_RANGE, &cr)) {
			w->what = "XFS_IOC_COMMIT_RANGE";
			close(tmp);
			return errno;
		}
		close(tmp);
		break;
	case M_ATOMIC:
		iov.iov_base = w->buf;
		iov.iov_len = UPDATE_SIZE;
		if (pwritev2(w->fd, &iov, 1, (off_t)off, RWF_ATOMIC | RWF_DSYNC) != UPDATE_SIZE) {
			w->what = "pwritev2(RWF_ATOMIC | RWF_DSYNC)";
			return errno ? errno : EIO;
		}
		break;
	case M_RENAME:
		path_of(path, sizeof(path), w->id, "");
		path_of(tmppath, sizeof(tmppath), w->id, ".new");
		fd = open(path, O_RDONLY);
		if (fd < 0 || pread(fd, w->copy, FILE_SIZE, 0) != FILE_SIZE) {
			w->what = "read the file";
			return errno ? errno : EIO;
		}
		close(fd);
		memcpy(w->copy + off, w->buf, UPDATE_SIZE);
		fd = open(tmppath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || pwrite(fd, w->copy, FILE_SIZE, 0) != FILE_SIZE || fsync(fd)) {
			w->what = "write and fsync the copy";
			return errno ? errno : EIO;
		}
		close(fd);
		if (rename(tmppath, path)) {
			w->what = "rename";
			return errno;
		}
		dfd = open(dir, O_RDONLY | O_DIRECTORY);
		if (dfd < 0 || fsync(dfd)) {
			w->what = "fsync the directory";
			return errno;
		}
		close(dfd);
		break;
	case M_FLOOR:
		if (pwrite(w->fd, w->buf, UPDATE_SIZE, (off_t)off) != UPDATE_SIZE ||
		    fdatasync(w->fd)) {
			w->what = "pwrite + fdatasync";
			return errno ? errno : EIO;
		}
		break;
	}
	memcpy(w->model + off, w->buf, UPDATE_SIZE);
	return 0;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	unsigned int op;

	pthread_barrier_wait(&start_line);
	for (op = 0; op < w->ops && !w->err; op++)
		w->err = update_once(w, op);
	return NULL;
}

static void setup(struct worker *w)
{
	char path[4096];
	int fd;

	w->model = malloc(FILE_SIZE);
	if (!w->model || posix_memalign((void **)&w->buf, 4096, UPDATE_SIZE))
		die("out of memory");
	fill(w->model, FILE_SIZE, w->id, 1u << 20);
	path_of(path, sizeof(path), w->id, "");
	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || pwrite(fd, w->model, FILE_SIZE, 0) != FILE_SIZE || fsync(fd))
		die("%s: %s", path, strerror(errno));
	close(fd);
	w->fd = -1;
	if (method == M_RENAME) {
		w->copy = malloc(FILE_SIZE);
		if (!w->copy)
			die("out of memory");
		return;
	}
	w->fd = open(path, O_RDWR | (method == M_ATOMIC ? O_DIRECT : 0));
	if (w->fd < 0)
		die("%s: %s", path, strerror(errno));
}

static void verify(struct worker *w)
{
	unsigned char *got = malloc(FILE_SIZE);
	char path[4096];
	int fd;

	path_of(path, sizeof(path), w->id, "");
	fd = open(path, O_RDONLY);
	if (!got || fd < 0 || pread(fd, got, FILE_SIZE, 0) != FILE_SIZE)
		die("%s: cannot read back: %s", path, strerror(errno));
	if (memcmp(got, w->model, FILE_SIZE))
		die("%s: does not hold its updates (%s)", path, method_names[method]);
	close(fd);
	unlink(path);
	free(got);
}

int main(int argc, char **argv)
{
	struct sysstat s0, s1;
	struct worker *ws;
	unsigned int ops, m;
	int nthreads, t;
	double t0, secs, total;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 5)
		goto usage;
	for (m = 0; m < sizeof(method_names) / sizeof(method_names[0]); m++)
		if (!strcmp(argv[1], method_names[m]))
			break;
	if (m == sizeof(method_names) / sizeof(method_names[0]))
		goto usage;
	method = (enum method)m;
	dir = argv[2];
	ops = (unsigned int)strtoul(argv[3], NULL, 0);
	nthreads = atoi(argv[4]);
	if (!ops || nthreads < 1 || nthreads > 64)
		goto usage;

	ws = calloc((size_t)nthreads, sizeof(*ws));
	if (!ws)
		die("out of memory");
	for (t = 0; t < nthreads; t++) {
		ws[t].id = t;
		ws[t].ops = ops;
		setup(&ws[t]);
	}
	sync();
	/* one untimed update first: a method the kernel lacks is a skip, not a result */
	if (update_once(&ws[0], ops + 1)) {
		int e = errno;

		if (e == EOPNOTSUPP || e == ENOTTY || e == EINVAL || e == EXDEV || e == ENOSYS)
			skip(ws[0].what, e);
		die("%s: %s", ws[0].what, strerror(e));
	}

	pthread_barrier_init(&start_line, NULL, (unsigned int)nthreads + 1);
	for (t = 0; t < nthreads; t++)
		pthread_create(&ws[t].thread, NULL, worker_run, &ws[t]);
	sysstat_read(dir, &s0);
	pthread_barrier_wait(&start_line);
	t0 = now();
	for (t = 0; t < nthreads; t++)
		pthread_join(ws[t].thread, NULL);
	secs = now() - t0;
	sysstat_read(dir, &s1);
	for (t = 0; t < nthreads; t++)
		if (ws[t].err)
			die("thread %d: %s: %s", t, ws[t].what, strerror(ws[t].err));
	for (t = 0; t < nthreads; t++) {
		if (ws[t].fd >= 0)
			close(ws[t].fd);
		verify(&ws[t]);
	}

	total = (double)ops * nthreads;
	printf("RESULT workload=update impl=%s threads=%d ops=%.0f secs=%.4f ops_s=%.1f "
	       "flushes_op=%.2f trans_op=%.2f logbytes_op=%.0f\n",
	       method_names[method], nthreads, total, secs, total / secs,
	       s1.have_flushes ? (double)(s1.flushes - s0.flushes) / total : -1.0,
	       s1.per_fs ? (double)(s1.trans - s0.trans) / total : -1.0,
	       s1.per_fs ? (double)(s1.log_bytes - s0.log_bytes) / total : -1.0);
	return 0;
usage:
	fprintf(stderr, "usage: xfs_update exchange|commit|atomic|rename|floor DIR OPS THREADS\n");
	return 2;
}
