// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext kmod writers [-o] [-c | -r SEED] [-s N | -f N] [-b KIB] DEVICE THREADS COUNT:
 * concurrent atomic writers in the kernel module, checked after a remount.
 *
 * It attaches DEVICE, gives each of THREADS threads two files of its own
 * and lets them rewrite both COUNT times each at once, every rewrite one
 * durable AWRITE of two ranges, the whole of each file.  So the module's
 * vectored atomic write, its group commit and, with -o, its forces in
 * flight (ATTACH_OVERLAP) run with the kernel's locks, completions and
 * block layer under them, as they do in userspace under
 * tests/stress/threads.c.
 *
 * Each write fills both files with a pattern of its own (run, thread, file,
 * k), so a file read back names the one write it holds, a mix of two
 * writes matches none, and a file left by another run matches nothing of
 * this one (the names are the run's too).  With -s N the thread whose write
 * is the N-th to succeed shuts the instance down (SHUTDOWN); every thread
 * then stops at its first failure, which must be EIO and come after the
 * shutdown began.  After DETACH and ATTACH (recovery) both files of a
 * thread must hold the same write, no older than the last one the thread
 * was told was durable and no newer than the last it tried; without -s, the
 * last one, checked before the remount too.  SHUTDOWN fails all I/O from
 * then on but keeps what the disk already took, flushed or not, unless -c
 * attached the device volatile (SX_KCTL_ATTACH_VOLATILE): then it loses
 * every write no flush covered, as a power cut that takes the disk's
 * write cache would, and a write said to be durable must survive that;
 * -r SEED loses a random choice of them instead (bdev_volatile_os.c), so
 * that a record may survive while data it maps is lost.
 * -f N cuts there instead: the N-th log flush from the start fails (the
 * fault site log_flush), which shuts the mount down, and the first thread
 * to see a write fail then issues the SHUTDOWN: with -c the records that
 * force and any force in flight beside it wrote are lost (at least one
 * write must be), and every write of theirs must have failed; the fault
 * must have fired.
 *
 * Without -o no force may fly (LOGSTATS); with it some must in a run not
 * cut short (no -s or -f), when the two files fit in a write's record (at most 16 KiB in all: each file is 6 KiB,
 * rounded up to a block).  With -b the files of odd threads have KIB KiB
 * each: past the 16 KiB the engine carries in a record
 * (engine/file_atomic_direct.c) they are written in place before the
 * record, whose force then carries a data manifest and does not fly, nor
 * does the next while the last force on the disk guards data: such runs
 * check the two kinds of force beside each other and need not fly at all.
 * The last line printed sums the run up; the exit status is 0 only if
 * every check passed.
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

#define WR_FILE_BYTES	(6u << 10)	/* each file of a thread without -b */
#define WR_CARRY_BYTES	(16u << 10)	/* what a write carries in its record */
#define WR_MAX_THREADS	64
#define WR_MAX_COUNT	1000000u
#define WR_MAX_KIB	4096u

struct wr_run {
	u32		id;		/* the instance */
	u32		nonce;		/* names this run's files and patterns */
	u64		shutdown_at;	/* 0, or the successful write that shuts down */
	u64		fail_flush;	/* 0, or the log flush that fails (-f) */
	u64		ok;		/* writes that succeeded so far */
	int		shut_error;	/* SHUTDOWN's result */
	bool		shut_begun;	/* set before SHUTDOWN is issued */
};

struct wr_thread {
	struct wr_run	*run;
	u32		index;
	u32		bytes;		/* of each of its files, and each write of them */
	s32		fd[2];		/* the module's descriptors of its two files */
	u32		count;
	u32		durable;	/* the last write the module said was durable */
	u32		tried;		/* the last write issued */
	int		error;		/* the failure that stopped it, or 0 */
	bool		error_after_shutdown;	/* it returned after SHUTDOWN began */
	pthread_t	thread;
	bool		started;
};

/* Fill @buf with the pattern of write @k of file @file of thread @t (write 0: the first contents). */
static void wr_pattern(const struct wr_thread *t, u32 file, u32 k, u8 *buf)
{
	u64 x = ((((u64)t->run->nonce << 32) | ((u64)t->index << 1) | file) ^ ((u64)k << 20)) *
			0x9e3779b97f4a7c15ull +
		0x2545f4914f6cdd1dull;
	u32 i;

	for (i = 0; i < t->bytes; i++) {
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

/* Attach @dev (@flags SX_KCTL_ATTACH_*); 0 or -errno (printed). */
static int wr_attach(const char *dev, u32 flags, u32 seed, u32 *idp, u64 *recordsp)
{
	struct sx_kctl_attach ka;
	int ret;

	memset(&ka, 0, sizeof(ka));
	ka.ka_flags = flags;
	ka.ka_seed = seed;
	strcpy(ka.ka_path, dev);
	ret = kmod_ioctl(SX_KCTL_ATTACH, &ka, dev);
	if (ret)
		return ret;
	*idp = ka.ka_id;
	if (recordsp)
		*recordsp = ka.ka_rs_records;
	return 0;
}

/* Detach instance @id: the ioctl's error (printed), and in *@unmount the unmount's. */
static int wr_detach(u32 id, int *unmount)
{
	struct sx_kctl_id kid;
	int ret;

	memset(&kid, 0, sizeof(kid));
	kid.ki_id = id;
	ret = kmod_ioctl(SX_KCTL_DETACH, &kid, "detach");
	*unmount = ret ? 0 : kid.ki_result;
	return ret;
}

static int wr_logstats(u32 id, struct sx_kctl_logstats *kl)
{
	memset(kl, 0, sizeof(*kl));
	kl->kl_id = id;
	return kmod_ioctl(SX_KCTL_LOGSTATS, kl, "logstats");
}

/* Create (@create) or open file @file of thread @t in instance @id. */
static int wr_open(const struct wr_thread *t, u32 id, u32 file, bool create, s32 *fdp)
{
	struct sx_kctl_file kf;
	int ret;

	memset(&kf, 0, sizeof(kf));
	kf.kf_id = id;
	kf.kf_mode = 0644;
	snprintf(kf.kf_name, sizeof(kf.kf_name), "writers-%08x-%u-%c", t->run->nonce, t->index,
		 'a' + file);
	ret = kmod_ioctl(create ? SX_KCTL_CREATE : SX_KCTL_OPEN, &kf, NULL);
	if (ret) {
		tool_error(ret, "%s %s", create ? "create" : "open", kf.kf_name);
		return ret;
	}
	*fdp = kf.kf_fd;
	return 0;
}

/* Thread @t's two files with their first contents (write 0), made durable. */
static int wr_setup(struct wr_thread *t, u8 *buf)
{
	struct sx_kctl_file kf;
	u32 file;
	s64 n;

	for (file = 0; file < 2; file++) {
		if (wr_open(t, t->run->id, file, true, &t->fd[file]))
			return 1;
		wr_pattern(t, file, 0, buf);
		n = kmod_rw_at(t->run->id, t->fd[file], SX_KCTL_PWRITE, buf, t->bytes, 0, NULL);
		if (n != t->bytes)
			return tool_error(n < 0 ? (int)n : -EIO, "first write of thread %u", t->index);
		memset(&kf, 0, sizeof(kf));
		kf.kf_id = t->run->id;
		kf.kf_fd = t->fd[file];
		if (kmod_ioctl(SX_KCTL_FSYNC, &kf, "fsync"))
			return 1;
	}
	return 0;
}

/* The thread whose write was the run's shutdown_at-th to succeed shuts the instance down. */
static void wr_maybe_shutdown(struct wr_run *run, int ctl)
{
	struct sx_kctl_id kid;

	if (!run->shutdown_at ||
	    __atomic_add_fetch(&run->ok, 1, __ATOMIC_RELAXED) != run->shutdown_at)
		return;
	memset(&kid, 0, sizeof(kid));
	kid.ki_id = run->id;
	__atomic_store_n(&run->shut_begun, true, __ATOMIC_SEQ_CST);
	run->shut_error = wr_ioctl(ctl, SX_KCTL_SHUTDOWN, &kid);
}

/* -f: the first thread whose write failed cuts the power after the failure. */
static void wr_cut_after_failure(struct wr_run *run, int ctl)
{
	struct sx_kctl_id kid;

	if (__atomic_exchange_n(&run->shut_begun, true, __ATOMIC_SEQ_CST))
		return;
	memset(&kid, 0, sizeof(kid));
	kid.ki_id = run->id;
	run->shut_error = wr_ioctl(ctl, SX_KCTL_SHUTDOWN, &kid);
}

/*
 * The fault site log_flush: with @nth > 0 every site is forgotten and its
 * @nth-th call from now fails; with 0 it only counts from now on.  Its
 * calls since it was named go to *@hitsp.
 */
static int wr_fault(u64 nth, u64 *hitsp)
{
	struct sx_kctl_fault kf;
	int ret;

	memset(&kf, 0, sizeof(kf));
	if (nth) {
		ret = kmod_ioctl(SX_KCTL_FAULT, &kf, "fault-clear");
		if (ret)
			return ret;
	}
	strcpy(kf.kf_name, "log_flush");
	kf.kf_nth = nth;
	kf.kf_error = -EIO;
	ret = kmod_ioctl(SX_KCTL_FAULT, &kf, "fault log_flush");
	*hitsp = kf.kf_hits;
	return ret;
}

/* Forget every fault site. */
static int wr_fault_clear(void)
{
	struct sx_kctl_fault kf;

	memset(&kf, 0, sizeof(kf));
	return kmod_ioctl(SX_KCTL_FAULT, &kf, "fault-clear");
}

static void *wr_thread_run(void *arg)
{
	struct wr_thread *t = arg;
	struct wr_run *run = t->run;
	struct sx_kctl_aiov iov[2];
	struct sx_kctl_awrite ka;
	int ctl = kmod_ctl_open();
	u8 *buf = malloc(2 * (size_t)t->bytes);
	u32 k, file;

	if (ctl < 0 || !buf) {
		t->error = ctl < 0 ? -ENODEV : -ENOMEM;
		goto out;
	}
	for (k = 1; k <= t->count; k++) {
		memset(iov, 0, sizeof(iov));
		for (file = 0; file < 2; file++) {
			wr_pattern(t, file, k, buf + file * t->bytes);
			iov[file].ai_fd = t->fd[file];
			iov[file].ai_buf = (u64)(uintptr_t)(buf + file * t->bytes);
			iov[file].ai_len = t->bytes;
		}
		memset(&ka, 0, sizeof(ka));
		ka.ka_id = run->id;
		ka.ka_n = 2;
		ka.ka_iov = (u64)(uintptr_t)iov;
		t->tried = k;
		t->error = wr_ioctl(ctl, SX_KCTL_AWRITE, &ka);
		if (t->error) {
			t->error_after_shutdown = __atomic_load_n(&run->shut_begun, __ATOMIC_SEQ_CST);
			if (run->fail_flush)
				wr_cut_after_failure(run, ctl);
			break;
		}
		t->durable = k;
		wr_maybe_shutdown(run, ctl);
	}
out:
	free(buf);
	if (ctl >= 0)
		close(ctl);
	return NULL;
}

/*
 * Read both files of each thread in instance @id and name the write they
 * hold: the same one, one of the thread's writes durable..tried.  Returns
 * the threads whose files fail.
 */
static int wr_verify(u32 id, struct wr_thread *ts, u32 nthreads, bool reopen, const char *when)
{
	u32 most = 0, i, k, file;
	u8 *got[2], *want;
	int bad = 0;

	for (i = 0; i < nthreads; i++)
		most = most > ts[i].bytes ? most : ts[i].bytes;
	got[0] = malloc(most + 1);
	got[1] = malloc(most + 1);
	want = malloc(most);
	for (i = 0; i < nthreads && got[0] && got[1] && want; i++) {
		struct wr_thread *t = &ts[i];
		bool ok = true;

		for (file = 0; file < 2 && ok; file++) {
			s64 n;

			if (reopen && wr_open(t, id, file, false, &t->fd[file])) {
				ok = false;
				break;
			}
			n = kmod_rw_at(id, t->fd[file], SX_KCTL_PREAD, got[file], (u64)t->bytes + 1, 0, NULL);
			if (n != t->bytes) {
				fprintf(stderr, "thread %u file %u %s: read %lld bytes, the file has %u\n",
					t->index, file, when, (long long)n, t->bytes);
				ok = false;
			}
		}
		for (k = t->durable; ok && k <= t->tried; k++) {
			wr_pattern(t, 0, k, want);
			if (memcmp(got[0], want, t->bytes))
				continue;
			wr_pattern(t, 1, k, want);
			if (!memcmp(got[1], want, t->bytes))
				break;
			fprintf(stderr, "thread %u %s: its first file holds write %u, its second not\n",
				t->index, when, k);
			ok = false;
		}
		if (ok && k > t->tried) {
			fprintf(stderr, "thread %u %s: its first file holds none of writes %u..%u\n",
				t->index, when, t->durable, t->tried);
			ok = false;
		}
		bad += !ok;
	}
	if (!got[0] || !got[1] || !want)
		bad += tool_error(-ENOMEM, "verify");
	free(got[0]);
	free(got[1]);
	free(want);
	return bad;
}

/* Close every file of the run (before a detach, which would close them anyway). */
static void wr_close_all(u32 id, struct wr_thread *ts, u32 nthreads)
{
	struct sx_kctl_file kf;
	u32 i, file;

	for (i = 0; i < nthreads; i++) {
		for (file = 0; file < 2; file++) {
			memset(&kf, 0, sizeof(kf));
			kf.kf_id = id;
			kf.kf_fd = ts[i].fd[file];
			kmod_ioctl(SX_KCTL_CLOSE, &kf, NULL);
		}
	}
}

/* Start every thread, wait for them all; the seconds they took. */
static double wr_run_threads(struct wr_thread *ts, u32 nthreads)
{
	double t0 = wr_now();
	u32 i;

	for (i = 0; i < nthreads; i++) {
		ts[i].started = !pthread_create(&ts[i].thread, NULL, wr_thread_run, &ts[i]);
		if (!ts[i].started)
			ts[i].error = -EAGAIN;
	}
	for (i = 0; i < nthreads; i++)
		if (ts[i].started)
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
		/* -f: the failed flush shut the mount down, and every write after it fails */
		if (t->error == -EIO && (t->error_after_shutdown || run->fail_flush))
			continue;
		fprintf(stderr, "thread %u: stopped at write %u of %u: %s%s\n", t->index, t->tried,
			t->count, tool_strerror(t->error),
			t->error == -EIO ? " (before any shutdown)" : "");
		bad++;
	}
	if (run->shutdown_at && !run->shut_begun) {
		fprintf(stderr, "writers: the shutdown at write %llu never came\n",
			(unsigned long long)run->shutdown_at);
		bad++;
	}
	if (run->fail_flush && !run->shut_begun) {
		fprintf(stderr, "writers: no write failed after log flush %llu was made to fail\n",
			(unsigned long long)run->fail_flush);
		bad++;
	}
	if (run->shut_begun && run->shut_error) {
		fprintf(stderr, "writers: shutdown: %s\n", tool_strerror(run->shut_error));
		bad++;
	}
	return bad;
}

/* Round @bytes up to whole blocks of @bsize, at least one. */
static u32 wr_blocks_of(u64 bytes, u32 bsize)
{
	return (u32)((bytes + bsize - 1) / bsize * bsize);
}

/* Parse the options; false on a bad one (printed). */
static bool wr_options(int *argcp, char ***argvp, u32 *flags, struct wr_run *run, u64 *kib,
		       u64 *seed)
{
	int argc = *argcp;
	char **argv = *argvp;

	while (argc > 0 && argv[0][0] == '-') {
		if (!strcmp(argv[0], "-o")) {
			*flags |= SX_KCTL_ATTACH_OVERLAP;
		} else if (!strcmp(argv[0], "-c")) {
			*flags |= SX_KCTL_ATTACH_VOLATILE;
		} else if (!strcmp(argv[0], "-r") && argc > 1 && kmod_num(argv[1], seed) && *seed &&
			   *seed <= UINT32_MAX) {
			*flags |= SX_KCTL_ATTACH_VOLATILE;
			argc--;
			argv++;
		} else if (!strcmp(argv[0], "-s") && argc > 1 && !run->fail_flush &&
			   kmod_num(argv[1], &run->shutdown_at) && run->shutdown_at) {
			argc--;
			argv++;
		} else if (!strcmp(argv[0], "-f") && argc > 1 && !run->shutdown_at &&
			   kmod_num(argv[1], &run->fail_flush) && run->fail_flush) {
			argc--;
			argv++;
		} else if (!strcmp(argv[0], "-b") && argc > 1 && kmod_num(argv[1], kib) && *kib &&
			   *kib <= WR_MAX_KIB) {
			argc--;
			argv++;
		} else {
			tool_fail("writers: bad option %s", argv[0]);
			return false;
		}
		argc--;
		argv++;
	}
	*argcp = argc;
	*argvp = argv;
	return true;
}

int kmod_writers(int argc, char **argv)
{
	struct sx_kctl_logstats l0, l1;
	struct sx_kctl_info ki;
	struct wr_thread *ts = NULL;
	struct wr_run run;
	u64 nthreads, count, kib = 0, seed = 0, recs = 0, durable = 0, hits = 0;
	u32 flags = 0, small, large, i;
	bool flyable;
	const char *dev;
	double secs;
	int bad = 0, unmount;
	u8 *buf = NULL;

	memset(&run, 0, sizeof(run));
	if (!wr_options(&argc, &argv, &flags, &run, &kib, &seed))
		return 1;
	if (argc != 3 || strlen(argv[0]) >= sizeof(((struct sx_kctl_attach *)0)->ka_path) ||
	    !kmod_num(argv[1], &nthreads) || !nthreads || nthreads > WR_MAX_THREADS ||
	    !kmod_num(argv[2], &count) || !count || count > WR_MAX_COUNT)
		return tool_fail("writers: DEVICE THREADS (1..%d) COUNT (1..%u) expected",
				 WR_MAX_THREADS, WR_MAX_COUNT);
	dev = argv[0];
	run.nonce = (u32)time(NULL) ^ ((u32)getpid() << 16);
	if (wr_attach(dev, flags, (u32)seed, &run.id, NULL))
		return 1;
	memset(&ki, 0, sizeof(ki));
	ki.ki_id = run.id;
	if (kmod_ioctl(SX_KCTL_INFO, &ki, "info"))
		goto fail_detach;
	small = wr_blocks_of(WR_FILE_BYTES, ki.ki_blocksize);
	flyable = !kib && 2 * small <= WR_CARRY_BYTES;
	ts = calloc(nthreads, sizeof(*ts));
	large = kib ? wr_blocks_of(kib << 10, ki.ki_blocksize) : 0;
	buf = malloc(large > small ? large : small);
	if (!ts || !buf) {
		tool_error(-ENOMEM, "writers");
		goto fail_detach;
	}
	for (i = 0; i < nthreads; i++) {
		ts[i].run = &run;
		ts[i].index = i;
		ts[i].bytes = large && i % 2 ? large : small;
		ts[i].count = (u32)count;
		if (wr_setup(&ts[i], buf))
			goto fail_detach;
	}
	free(buf);
	buf = NULL;
	if (wr_logstats(run.id, &l0) || (run.fail_flush && wr_fault(run.fail_flush, &hits)))
		goto fail_detach;

	secs = wr_run_threads(ts, (u32)nthreads);
	if (run.fail_flush) {
		bad += wr_fault(0, &hits) != 0 || wr_fault_clear() != 0;
		if (hits < run.fail_flush) {
			fprintf(stderr, "writers: log flush %llu never came (%llu flushes)\n",
				(unsigned long long)run.fail_flush, (unsigned long long)hits);
			bad++;
		}
	}
	bad += wr_judge(&run, ts, (u32)nthreads);
	bad += wr_logstats(run.id, &l1) != 0;
	if (!run.shut_begun)
		bad += wr_verify(run.id, ts, (u32)nthreads, false, "before the remount");
	for (i = 0; i < nthreads; i++)
		durable += ts[i].durable;
	if ((flags & SX_KCTL_ATTACH_OVERLAP) && flyable && !run.shutdown_at && !run.fail_flush &&
	    l1.kl_flights == l0.kl_flights) {
		fprintf(stderr, "writers: no force flew (%llu forces)\n",
			(unsigned long long)(l1.kl_forces - l0.kl_forces));
		bad++;
	}
	if (run.fail_flush && (flags & SX_KCTL_ATTACH_VOLATILE) && !seed && !l1.kl_cut_lost) {
		fprintf(stderr, "writers: the cut after the failed flush lost no write\n");
		bad++;
	}
	if (!(flags & SX_KCTL_ATTACH_OVERLAP) && l1.kl_flights != l0.kl_flights) {
		fprintf(stderr, "writers: forces flew without -o\n");
		bad++;
	}

	if (!run.shut_begun)
		wr_close_all(run.id, ts, (u32)nthreads);
	if (wr_detach(run.id, &unmount))
		goto fail;
	if (run.shut_begun ? unmount != -EIO : unmount != 0) {
		fprintf(stderr, "writers: detach: unmount %s\n",
			unmount ? tool_strerror(unmount) : "clean");
		bad++;
	}
	if (wr_attach(dev, 0, 0, &run.id, &recs))
		goto fail;
	bad += wr_verify(run.id, ts, (u32)nthreads, true, "after the remount");
	wr_close_all(run.id, ts, (u32)nthreads);
	if (wr_detach(run.id, &unmount))
		goto fail;
	if (unmount) {
		fprintf(stderr, "writers: detach after the check: %s\n", tool_strerror(unmount));
		bad++;
	}
	printf("%s%llu threads x %llu writes of 2 files: %llu durable in %.2f s, %llu forces, "
	       "%llu in flight, %llu records recovered%s%s",
	       bad ? "FAILED: " : "", (unsigned long long)nthreads, (unsigned long long)count,
	       (unsigned long long)durable, secs, (unsigned long long)(l1.kl_forces - l0.kl_forces),
	       (unsigned long long)(l1.kl_flights - l0.kl_flights), (unsigned long long)recs,
	       run.shut_begun ? " after a shutdown" : "",
	       run.shut_begun && (flags & SX_KCTL_ATTACH_VOLATILE) ? " that lost the cache" : "");
	if (run.shut_begun && (flags & SX_KCTL_ATTACH_VOLATILE))
		printf(" (%llu writes%s)", (unsigned long long)l1.kl_cut_lost,
		       seed ? ", chosen at random" : "");
	printf("; durable a thread:");
	for (i = 0; i < nthreads; i++)
		printf(" %u", ts[i].durable);
	printf("\n");
	free(ts);
	return bad ? 1 : 0;

fail_detach:
	wr_detach(run.id, &unmount);
fail:
	free(buf);
	free(ts);
	return 1;
}
