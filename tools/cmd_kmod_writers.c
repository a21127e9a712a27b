// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext kmod writers [-o] [-s N] [-b BLOCKS] DEVICE THREADS COUNT:
 * concurrent atomic writers in the kernel module, checked after a remount.
 *
 * It attaches DEVICE, gives each of THREADS threads a file of its own
 * ("writers-I", three blocks) and lets them rewrite their files COUNT times
 * each at once, every rewrite one durable AWRITE of the whole file.  So the
 * module's group commit, and with -o its forces in flight (ATTACH_OVERLAP),
 * run with the kernel's locks, completions and block layer under them, as
 * they do in userspace under tests/stress/threads.c.
 *
 * Each write fills the file with a pattern of its own (thread, k), so a file
 * read back names the one write it holds, and a mix of two writes matches
 * none.  With -s N the thread whose write is the N-th to succeed shuts the
 * instance down (SHUTDOWN: the device dies, as at a power cut); every thread
 * then stops at its first failure, which must be EIO.  After DETACH and
 * ATTACH (recovery), each file must hold one whole write, no older than the
 * last one its thread was told was durable and no newer than the last it
 * tried; without -s, the last one, checked before the remount too.  Without
 * -o no force may fly (LOGSTATS); with it some must.  With -b the files of
 * odd threads have BLOCKS blocks: more than 16 KiB of them are written in
 * place before the record, whose force then carries a data manifest and
 * does not fly, nor does the next while the last force on the disk guards
 * data: such runs check the two kinds of force beside each other, and
 * need not fly at all.
 * The last line
 * printed sums the run up; the exit status is 0 only if every check passed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "kmod.h"
#include <swapext/kctl.h>

#define WR_BLOCKS	3	/* blocks a file (-b: of even threads'): carried in the record */
#define WR_MAX_THREADS	64

struct wr_run {
	u32		id;		/* the instance */
	u64		shutdown_at;	/* 0, or the successful write that shuts down */
	u64		ok;		/* writes that succeeded so far */
	int		shut_error;	/* SHUTDOWN's result, if issued */
	bool		shut;
};

struct wr_thread {
	struct wr_run	*run;
	u32		index;
	u32		bytes;		/* of the file and each write */
	s32		fd;		/* the module's descriptor of "writers-INDEX" */
	u32		count;
	u32		durable;	/* the last write the module said was durable */
	u32		tried;		/* the last write issued */
	int		error;		/* the failure that stopped it, or 0 */
	pthread_t	thread;
};

/* Fill @buf with the pattern of write @k of thread @index (write 0: the file's first contents). */
static void wr_pattern(u32 index, u32 k, u8 *buf, u32 len)
{
	u64 x = (((u64)index << 32) | k) * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	u32 i;

	for (i = 0; i < len; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		buf[i] = (u8)((x * 0x2545f4914f6cdd1dull) >> 56);
	}
}

static double wr_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One ioctl on the open control file @ctl: 0 or -errno. */
static int wr_ioctl(int ctl, unsigned long cmd, void *arg)
{
	return ioctl(ctl, cmd, arg) < 0 ? -errno : 0;
}

/* Attach @dev (@flags SX_KCTL_ATTACH_*); prints what recovery did. */
static int wr_attach(const char *dev, u32 flags, u32 *idp, u64 *recordsp)
{
	struct sx_kctl_attach ka;

	memset(&ka, 0, sizeof(ka));
	ka.ka_flags = flags;
	strcpy(ka.ka_path, dev);
	if (kmod_ioctl(SX_KCTL_ATTACH, &ka, dev))
		return -EIO;
	*idp = ka.ka_id;
	if (recordsp)
		*recordsp = ka.ka_rs_records;
	return 0;
}

/* Detach instance @id; 0 if its unmount was clean, else the unmount's error. */
static int wr_detach(u32 id)
{
	struct sx_kctl_id kid;

	memset(&kid, 0, sizeof(kid));
	kid.ki_id = id;
	if (kmod_ioctl(SX_KCTL_DETACH, &kid, "detach"))
		return -EIO;
	return kid.ki_result;
}

static int wr_logstats(u32 id, struct sx_kctl_logstats *kl)
{
	memset(kl, 0, sizeof(*kl));
	kl->kl_id = id;
	return kmod_ioctl(SX_KCTL_LOGSTATS, kl, "logstats");
}

/* Open (@create: create, or open if it is there) "writers-@index" of instance @id. */
static int wr_open(u32 id, u32 index, bool create, s32 *fdp)
{
	struct sx_kctl_file kf;
	int ret = -EEXIST;

	memset(&kf, 0, sizeof(kf));
	kf.kf_id = id;
	kf.kf_mode = 0644;
	snprintf(kf.kf_name, sizeof(kf.kf_name), "writers-%u", index);
	if (create)
		ret = kmod_ioctl(SX_KCTL_CREATE, &kf, NULL);
	if (ret == -EEXIST)
		ret = kmod_ioctl(SX_KCTL_OPEN, &kf, NULL);
	if (ret) {
		tool_error(ret, "open %s", kf.kf_name);
		return ret;
	}
	*fdp = kf.kf_fd;
	return 0;
}

/* PREAD or PWRITE of @len bytes at 0; the bytes moved or -errno. */
static s64 wr_rw(u32 id, s32 fd, unsigned long cmd, void *buf, u64 len)
{
	struct sx_kctl_rw kr;
	int ret;

	memset(&kr, 0, sizeof(kr));
	kr.kr_id = id;
	kr.kr_fd = fd;
	kr.kr_buf = (u64)(uintptr_t)buf;
	kr.kr_len = len;
	ret = kmod_ioctl(cmd, &kr, NULL);
	return ret ? ret : kr.kr_result;
}

/* The file's first contents (write 0), made durable. */
static int wr_setup(struct wr_thread *t, u8 *buf)
{
	struct sx_kctl_file kf;
	u32 bytes = t->bytes;
	s64 n;

	wr_pattern(t->index, 0, buf, bytes);
	n = wr_rw(t->run->id, t->fd, SX_KCTL_PWRITE, buf, bytes);
	if (n != bytes)
		return tool_error(n < 0 ? (int)n : -EIO, "first write of writers-%u", t->index);
	memset(&kf, 0, sizeof(kf));
	kf.kf_id = t->run->id;
	kf.kf_fd = t->fd;
	return kmod_ioctl(SX_KCTL_FSYNC, &kf, "fsync") ? 1 : 0;
}

static void *wr_thread_run(void *arg)
{
	struct wr_thread *t = arg;
	struct wr_run *run = t->run;
	struct sx_kctl_aiov iov;
	struct sx_kctl_awrite ka;
	int ctl = kmod_ctl_open();
	u8 *buf = malloc(t->bytes);
	u32 k;

	if (ctl < 0 || !buf) {
		t->error = ctl < 0 ? -ENODEV : -ENOMEM;
		goto out;
	}
	for (k = 1; k <= t->count; k++) {
		wr_pattern(t->index, k, buf, t->bytes);
		memset(&iov, 0, sizeof(iov));
		iov.ai_fd = t->fd;
		iov.ai_buf = (u64)(uintptr_t)buf;
		iov.ai_len = t->bytes;
		memset(&ka, 0, sizeof(ka));
		ka.ka_id = run->id;
		ka.ka_n = 1;
		ka.ka_iov = (u64)(uintptr_t)&iov;
		t->tried = k;
		t->error = wr_ioctl(ctl, SX_KCTL_AWRITE, &ka);
		if (t->error)
			break;
		t->durable = k;
		if (run->shutdown_at &&
		    __atomic_add_fetch(&run->ok, 1, __ATOMIC_RELAXED) == run->shutdown_at) {
			struct sx_kctl_id kid;

			memset(&kid, 0, sizeof(kid));
			kid.ki_id = run->id;
			run->shut_error = wr_ioctl(ctl, SX_KCTL_SHUTDOWN, &kid);
			__atomic_store_n(&run->shut, true, __ATOMIC_RELEASE);
		}
	}
out:
	free(buf);
	if (ctl >= 0)
		close(ctl);
	return NULL;
}

/*
 * Read each file of instance @id and name the write it holds: it must be
 * one of its thread's writes durable..tried.  Returns the files that fail.
 */
static int wr_verify(u32 id, struct wr_thread *ts, u32 nthreads, bool reopen, const char *when)
{
	u32 most = 0, i, k;
	u8 *got, *want;
	int bad = 0;

	for (i = 0; i < nthreads; i++)
		most = most > ts[i].bytes ? most : ts[i].bytes;
	got = malloc(most + 1);
	want = malloc(most);
	if (!got || !want) {
		free(got);
		free(want);
		return tool_error(-ENOMEM, "verify");
	}
	for (i = 0; i < nthreads; i++) {
		struct wr_thread *t = &ts[i];
		u32 bytes = t->bytes;
		s64 n;

		if (reopen && wr_open(id, t->index, false, &t->fd)) {
			bad++;
			continue;
		}
		n = wr_rw(id, t->fd, SX_KCTL_PREAD, got, (u64)bytes + 1);
		if (n != bytes) {
			fprintf(stderr, "writers-%u %s: read %lld bytes, the file has %u\n", t->index,
				when, (long long)n, bytes);
			bad++;
			continue;
		}
		for (k = t->durable; k <= t->tried; k++) {
			wr_pattern(t->index, k, want, bytes);
			if (!memcmp(got, want, bytes))
				break;
		}
		if (k > t->tried) {
			fprintf(stderr, "writers-%u %s: holds none of writes %u..%u\n", t->index,
				when, t->durable, t->tried);
			bad++;
		}
	}
	free(got);
	free(want);
	return bad;
}

/* Close every file of the run (before a detach, which would close them anyway). */
static void wr_close_all(u32 id, struct wr_thread *ts, u32 nthreads)
{
	struct sx_kctl_file kf;
	u32 i;

	for (i = 0; i < nthreads; i++) {
		memset(&kf, 0, sizeof(kf));
		kf.kf_id = id;
		kf.kf_fd = ts[i].fd;
		kmod_ioctl(SX_KCTL_CLOSE, &kf, NULL);
	}
}

/* Start every thread, wait for them all; the seconds they took. */
static double wr_run_threads(struct wr_thread *ts, u32 nthreads)
{
	double t0 = wr_now();
	u32 i;

	for (i = 0; i < nthreads; i++) {
		if (pthread_create(&ts[i].thread, NULL, wr_thread_run, &ts[i])) {
			ts[i].error = -EAGAIN;
			ts[i].thread = 0;
		}
	}
	for (i = 0; i < nthreads; i++)
		if (ts[i].thread)
			pthread_join(ts[i].thread, NULL);
	return wr_now() - t0;
}

/* How the threads ended: the failures a clean run or a shutdown does not explain. */
static int wr_judge(const struct wr_run *run, const struct wr_thread *ts, u32 nthreads)
{
	int bad = 0;
	u32 i;

	for (i = 0; i < nthreads; i++) {
		const struct wr_thread *t = &ts[i];

		if (!t->error && t->durable == t->count)
			continue;
		if (run->shut && t->error == -EIO)
			continue;
		fprintf(stderr, "writers-%u: stopped at write %u of %u: %s\n", t->index, t->tried,
			t->count, tool_strerror(t->error));
		bad++;
	}
	if (run->shutdown_at && !run->shut) {
		fprintf(stderr, "writers: the shutdown at write %llu never came\n",
			(unsigned long long)run->shutdown_at);
		bad++;
	}
	if (run->shut && run->shut_error) {
		fprintf(stderr, "writers: shutdown: %s\n", tool_strerror(run->shut_error));
		bad++;
	}
	return bad;
}

int kmod_writers(int argc, char **argv)
{
	struct sx_kctl_logstats l0, l1;
	struct sx_kctl_info ki;
	struct wr_thread *ts;
	struct wr_run run;
	u64 nthreads, count, blocks = WR_BLOCKS, recs = 0, durable = 0;
	u32 flags = 0, i;
	const char *dev;
	double secs;
	int bad = 0, ret;
	u8 *buf;

	memset(&run, 0, sizeof(run));
	while (argc > 0 && argv[0][0] == '-') {
		if (!strcmp(argv[0], "-o")) {
			flags |= SX_KCTL_ATTACH_OVERLAP;
		} else if (!strcmp(argv[0], "-s") && argc > 1 &&
			   kmod_num(argv[1], &run.shutdown_at) && run.shutdown_at) {
			argc--;
			argv++;
		} else if (!strcmp(argv[0], "-b") && argc > 1 && kmod_num(argv[1], &blocks) &&
			   blocks && blocks <= 256) {
			argc--;
			argv++;
		} else {
			return tool_fail("writers: unknown option %s", argv[0]);
		}
		argc--;
		argv++;
	}
	if (argc != 3 || strlen(argv[0]) >= sizeof(((struct sx_kctl_attach *)0)->ka_path) ||
	    !kmod_num(argv[1], &nthreads) || !nthreads || nthreads > WR_MAX_THREADS ||
	    !kmod_num(argv[2], &count) || !count || count > UINT32_MAX)
		return tool_fail("writers: DEVICE THREADS (1..%d) COUNT expected", WR_MAX_THREADS);
	dev = argv[0];
	if (wr_attach(dev, flags, &run.id, NULL))
		return 1;
	memset(&ki, 0, sizeof(ki));
	ki.ki_id = run.id;
	if (kmod_ioctl(SX_KCTL_INFO, &ki, "info")) {
		wr_detach(run.id);
		return 1;
	}
	ts = calloc(nthreads, sizeof(*ts));
	buf = malloc((size_t)(blocks > WR_BLOCKS ? blocks : WR_BLOCKS) * ki.ki_blocksize);
	if (!ts || !buf) {
		free(ts);
		free(buf);
		wr_detach(run.id);
		return tool_error(-ENOMEM, "writers");
	}
	for (i = 0; i < nthreads && !bad; i++) {
		ts[i].run = &run;
		ts[i].index = i;
		ts[i].bytes = (u32)((i % 2 ? blocks : WR_BLOCKS) * ki.ki_blocksize);
		ts[i].count = (u32)count;
		bad += wr_open(run.id, i, true, &ts[i].fd) || wr_setup(&ts[i], buf);
	}
	free(buf);
	if (bad || wr_logstats(run.id, &l0)) {
		wr_detach(run.id);
		free(ts);
		return 1;
	}

	secs = wr_run_threads(ts, (u32)nthreads);
	bad += wr_judge(&run, ts, (u32)nthreads);
	bad += wr_logstats(run.id, &l1) != 0;
	if (!run.shut)
		bad += wr_verify(run.id, ts, (u32)nthreads, false, "before the remount");
	for (i = 0; i < nthreads; i++)
		durable += ts[i].durable;
	if ((flags & SX_KCTL_ATTACH_OVERLAP) && blocks == WR_BLOCKS &&
	    l1.kl_flights == l0.kl_flights) {
		fprintf(stderr, "writers: no force flew (%llu forces)\n",
			(unsigned long long)(l1.kl_forces - l0.kl_forces));
		bad++;
	}
	if (!(flags & SX_KCTL_ATTACH_OVERLAP) && l1.kl_flights != l0.kl_flights) {
		fprintf(stderr, "writers: forces flew without -o\n");
		bad++;
	}

	if (!run.shut)
		wr_close_all(run.id, ts, (u32)nthreads);
	ret = wr_detach(run.id);
	if (run.shut ? ret != -EIO : ret != 0) {
		fprintf(stderr, "writers: detach: unmount %s\n", ret ? tool_strerror(ret) : "clean");
		bad++;
	}
	if (wr_attach(dev, 0, &run.id, &recs)) {
		free(ts);
		return 1;
	}
	bad += wr_verify(run.id, ts, (u32)nthreads, true, "after the remount");
	wr_close_all(run.id, ts, (u32)nthreads);
	ret = wr_detach(run.id);
	if (ret) {
		fprintf(stderr, "writers: detach after the check: %s\n", tool_strerror(ret));
		bad++;
	}
	free(ts);
	printf("%s%llu threads x %llu writes: %llu durable in %.2f s, %llu forces, %llu in flight, "
	       "%llu records recovered%s\n",
	       bad ? "FAILED: " : "", (unsigned long long)nthreads, (unsigned long long)count,
	       (unsigned long long)durable, secs, (unsigned long long)(l1.kl_forces - l0.kl_forces),
	       (unsigned long long)(l1.kl_flights - l0.kl_flights), (unsigned long long)recs,
	       run.shut ? " after a shutdown" : "");
	return bad ? 1 : 0;
}
