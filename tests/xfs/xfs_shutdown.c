// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Shutdowns in the middle of a long swap chain, then XFS's log recovery.
 *
 * Two files of N one-block extents each (every other block, so no two of
 * a file's blocks touch).  A swap of the whole files runs once untimed to
 * measure how long the chain takes; then, point by point, a child process
 * starts the same swap and the parent shuts the filesystem down
 * (XFS_IOC_GOINGDOWN, LOGFLUSH and NOLOGFLUSH in turn) after a delay that
 * walks across that time, unmounts and mounts again.  Recovery must finish
 * or drop the swap whole: both files all old or both all new.  A point
 * "recovered a chain" when the swap had not returned, the mount replayed
 * a dirty log, and the files came out new: the log held the intent and
 * recovery ran the rest of the chain.  Each point starts from what the
 * last left (old or new), so no file is rewritten between points.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sxb_posix.h"
#include "xfscheck.h"

/* XFS's uapi (xfs_fs.h), spelled out: the guest program needs no xfslibs-dev */
#ifndef XFS_IOC_GOINGDOWN
#define XFS_IOC_GOINGDOWN			_IOR('X', 125, uint32_t)
#define XFS_FSOP_GOING_FLAGS_LOGFLUSH		0x1	/* flush the log, not data */
#define XFS_FSOP_GOING_FLAGS_NOLOGFLUSH		0x2	/* flush neither */
#endif

#define HANG_US		(60u * 1000000)	/* a swap still running after a shutdown: hung */

struct shut {
	struct sxb		b;
	struct sxb_posix	px;
	const char		*dev, *mnt;
	char			dir[256];
	struct sxb_model	m[2];	/* what the files hold now */
	uint64_t		nblk;
};

static int remount(struct shut *s, char *why, size_t len)
{
	int i;

	for (i = 0; i < 50; i++) {
		if (!umount(s->mnt))
			break;
		if (errno != EBUSY) {
			snprintf(why, len, "umount: %s", strerror(errno));
			return -1;
		}
		usleep(100000);
	}
	/* the kernel log from here on says whether the mount replayed the log */
	klogctl(5, NULL, 0);
	if (mount(s->dev, s->mnt, "xfs", 0, NULL)) {
		snprintf(why, len, "mount: %s", strerror(errno));
		return -1;
	}
	return 0;
}

#define LOG_DIRTY	(1 << 0)	/* the mount replayed a log */
#define LOG_SWAP	(1 << 1)	/* ... and the module said it recovered a swap */

/* What the last mount's recovery did, from the kernel log. */
static int log_state(void)
{
	char buf[16384];
	int n = klogctl(3, buf, sizeof(buf) - 1), state = 0;

	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (strstr(buf, "Starting recovery"))
		state |= LOG_DIRTY;
	/* kernel-glue/xfs's message for an unfinished swap intent */
	if (strstr(buf, "recovering a swap"))
		state |= LOG_SWAP;
	return state;
}

static int open2(struct shut *s, int fd[2])
{
	char p[300];

	snprintf(p, sizeof(p), "%s/sa", s->dir);
	fd[0] = open(p, O_RDWR);
	snprintf(p, sizeof(p), "%s/sb", s->dir);
	fd[1] = open(p, O_RDWR);
	if (fd[0] >= 0 && fd[1] >= 0)
		return 0;
	if (fd[0] >= 0)
		close(fd[0]);
	if (fd[1] >= 0)
		close(fd[1]);
	return -errno;
}

static int swap_whole(struct shut *s, int fd[2])
{
	struct file_swap_range fsr;

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fd[0];
	fsr.length = (int64_t)(s->nblk * XC_BS);
	return ioctl(fd[1], FISWAPRANGE, &fsr) ? -errno : 0;
}

/* What the files hold: 0 as modelled, 1 swapped, -1 neither (with @why). */
static int classify(struct shut *s, char *why, size_t len)
{
	struct sxb_model sw[2];
	char m0[160], m1[160];
	int fd[2], state = -1, error;

	error = open2(s, fd);
	if (error) {
		snprintf(why, len, "open: %s", sxb_errname(error));
		return -1;
	}
	if (!sxb_verify(&s->b, fd[0], &s->m[0], m0, sizeof(m0)) &&
	    !sxb_verify(&s->b, fd[1], &s->m[1], m1, sizeof(m1))) {
		state = 0;
	} else {
		sxb_model_init(&sw[0], s->nblk);
		sxb_model_init(&sw[1], s->nblk);
		sxb_model_copy(&sw[0], &s->m[1]);
		sxb_model_copy(&sw[1], &s->m[0]);
		if (!sxb_verify(&s->b, fd[0], &sw[0], m0, sizeof(m0)) &&
		    !sxb_verify(&s->b, fd[1], &sw[1], m1, sizeof(m1)))
			state = 1;
		else
			snprintf(why, len, "neither old nor new: %s", m0);
		sxb_model_free(&sw[0]);
		sxb_model_free(&sw[1]);
	}
	close(fd[0]);
	close(fd[1]);
	return state;
}

static int setup(struct shut *s, uint64_t n, char *why, size_t len)
{
	int fd[2], i, error;
	uint64_t k;

	snprintf(s->dir, sizeof(s->dir), "%s/shut", s->mnt);
	mkdir(s->dir, 0755);
	sxb_posix_init(&s->b, &s->px, s->dir, XC_BS);
	s->nblk = 2 * n;
	for (i = 0; i < 2; i++) {
		sxb_model_init(&s->m[i], s->nblk);
		s->m[i].size = s->nblk * XC_BS;
		error = s->b.create(s->b.ctx, i ? "sb" : "sa", &fd[i]);
		if (error) {
			snprintf(why, len, "create: %s", sxb_errname(error));
			return -1;
		}
	}
	/* a the even blocks, b the odd ones: every block an extent of its own */
	for (k = 0; k < s->nblk; k++) {
		i = (int)(k & 1);
		s->m[i].tag[k] = sxb_tag((uint32_t)i, k, 1);
		error = sxb_write_tag(&s->b, fd[i], k, s->m[i].tag[k]);
		if (error) {
			snprintf(why, len, "write: %s", sxb_errname(error));
			return -1;
		}
	}
	for (i = 0; i < 2; i++) {
		if (ftruncate(fd[i], (off_t)(s->nblk * XC_BS)) || fsync(fd[i])) {
			snprintf(why, len, "truncate/fsync: %s", strerror(errno));
			return -1;
		}
		close(fd[i]);
	}
	return remount(s, why, len);
}

/* Wait up to HANG_US for @pid; its exit code is the swap's errno. */
static int reap(pid_t pid, int *err)
{
	uint64_t t0 = xc_now_us();
	int status;

	while (xc_now_us() - t0 < HANG_US) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid) {
			*err = WIFEXITED(status) ? -WEXITSTATUS(status) : -EINTR;
			return 0;
		}
		usleep(5000);
	}
	return -1;
}

void xc_shutdown_run(struct sxb_report *r, const char *dev, const char *mnt, uint32_t npoints,
		     uint64_t nextents)
{
	struct shut s;
	char why[256], name[64];
	uint64_t t0, tswap;
	uint32_t p, recovered = 0, dirty = 0, intents = 0, returned = 0, nnew = 0, nold = 0;
	int fd[2], error, state;

	memset(&s, 0, sizeof(s));
	s.dev = dev;
	s.mnt = mnt;
	if (setup(&s, nextents, why, sizeof(why))) {
		sxb_result(r, 0, "shutdown-setup", "%s", why);
		return;
	}
	/* how long the whole chain takes when nothing stops it */
	if (open2(&s, fd)) {
		sxb_result(r, 0, "shutdown-setup", "open: %s", strerror(errno));
		return;
	}
	t0 = xc_now_us();
	error = swap_whole(&s, fd);
	tswap = xc_now_us() - t0;
	close(fd[0]);
	close(fd[1]);
	if (error) {
		sxb_result(r, 0, "shutdown-calibrate", "FISWAPRANGE of %llu extents: %s",
			   (unsigned long long)nextents, sxb_errname(error));
		tswap = 20000;	/* the points still run: each shows what the swap does */
	} else {
		sxb_model_swap(&s.m[0], 0, &s.m[1], 0, s.nblk);
		sxb_result(r, 1, "shutdown-calibrate", "swap of %llu extents a side: %.3f s",
			   (unsigned long long)nextents, (double)tswap / 1e6);
	}
	if (remount(&s, why, sizeof(why)) || (state = classify(&s, why, sizeof(why))) != 0) {
		sxb_result(r, 0, "shutdown-calibrate-durable", "%s", why);
		return;
	}

	for (p = 0; p < npoints; p++) {
		uint32_t gflags = p & 1 ? XFS_FSOP_GOING_FLAGS_NOLOGFLUSH :
				  XFS_FSOP_GOING_FLAGS_LOGFLUSH;
		/* across the chain, a few just before it starts and after it ends */
		uint64_t delay = tswap * (p + 1) / (npoints - npoints / 10);
		int was_dirty, logst, err = 0, mfd;
		pid_t pid;

		snprintf(name, sizeof(name), "shutdown-point-%02u (%s, %.1f ms)", p,
			 p & 1 ? "nologflush" : "logflush", (double)delay / 1000);
		if (open2(&s, fd)) {
			sxb_result(r, 0, name, "open: %s", strerror(errno));
			return;
		}
		pid = fork();
		if (pid == 0)
			_exit(-swap_whole(&s, fd));
		close(fd[0]);
		close(fd[1]);
		usleep((useconds_t)delay);
		mfd = open(mnt, O_RDONLY | O_DIRECTORY);
		if (mfd < 0 || ioctl(mfd, XFS_IOC_GOINGDOWN, &gflags)) {
			sxb_result(r, 0, name, "XFS_IOC_GOINGDOWN: %s", strerror(errno));
			return;
		}
		close(mfd);
		if (reap(pid, &err)) {
			sxb_result(r, 0, name, "the swap did not return %u s after the shutdown",
				   HANG_US / 1000000);
			return;
		}
		if (remount(&s, why, sizeof(why))) {
			sxb_result(r, 0, name, "%s", why);
			return;
		}
		logst = log_state();
		was_dirty = !!(logst & LOG_DIRTY);
		intents += !!(logst & LOG_SWAP);
		state = classify(&s, why, sizeof(why));
		if (state < 0) {
			sxb_result(r, 0, name, "swap %s; %s", sxb_errname(err), why);
			continue;
		}
		dirty += was_dirty;
		returned += !err;
		if (state == 1) {
			nnew++;
			sxb_model_swap(&s.m[0], 0, &s.m[1], 0, s.nblk);
			if (err && was_dirty)
				recovered++;
		} else {
			nold++;
		}
		if (err == -ENOTTY || err == -EOPNOTSUPP || err == -EINVAL)
			sxb_result(r, 0, name, "FISWAPRANGE: %s", sxb_errname(err));
		else if (!err && state == 0 && !(p & 1))
			/* a swap that returned before a log flush is in the log */
			sxb_result(r, 0, name, "the swap returned but the flushed log lost it");
		else
			sxb_result(r, 1, name, "swap %s, log %s, files %s", sxb_errname(err),
				   logst & LOG_SWAP ? "replayed, a swap recovered" :
				   was_dirty ? "replayed" : "clean", state ? "new" : "old");
	}
	printf("XFSCHECK-INFO shutdown: %u points, %u with a dirty log, %u with a swap intent "
	       "recovered (kernel log), %u recovered a chain (swap cut short, files new), %u "
	       "swaps had returned; files old %u, new %u\n",
	       npoints, dirty, intents, recovered, returned, nold, nnew);
	sxb_result(r, recovered > 0, "shutdown-recovered-a-chain", "%u of %u points", recovered,
		   npoints);
	sxb_model_free(&s.m[0]);
	sxb_model_free(&s.m[1]);
}
