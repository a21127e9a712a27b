// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Durable atomic update benchmark: T threads, each rewriting 4 KiB of its
 * own 1 MiB file with sx_update_start(), a write to the clone,
 * sx_update_commit() and sx_fsync() of the file (commit does not force
 * the log, so the fsync is what makes the update durable: without it the
 * figure would not compare with the peers' durable ones).
 *
 * The image is a file on the filesystem the peers' floor runs on (not the
 * memory device), 4096-byte blocks, the atomic_swap feature, behind a
 * counting device (bench/benchdev.h): device flushes and writes per update
 * are counted there, transactions, log bytes and sleeps behind another
 * thread's log force (waits_op) by the log's own counters.
 * Only the update loop is timed; making the files is not.
 *
 * The log is 128 MiB, as make bench gives XFS, so that neither waits for
 * log space; BENCH_UPDATE_LOG_MB=N picks another size (0: mkfs's default,
 * 1/64 of this image, about 4.5 MiB, where 8 threads of sx_update spend
 * a third of their flushes on checkpoints).
 *
 * With a fourth argument "atomic" each update is one sx_atomic_write() of
 * the 4 KiB instead (durable on return: no fsync): the atomic write
 * without the clone, measured beside sx_update on the same image.
 *
 * Every thread keeps a copy of what its file must hold; after the timed
 * loop, and again after a remount, each file is read back and compared
 * (the update's correctness check: a lost or torn update fails the run).
 *
 * With "atomic-inplace" the atomic writes pass SX_ATOMIC_INPLACE: their
 * new blocks are written in place before the record instead of carried in
 * it (the path of larger writes), for the figure of what carrying bought.
 *
 * With "atomic-direct" they are plain atomic writes, but the image is
 * opened O_DIRECT and mounted with SX_MOUNT_OVERLAP_FORCES: a log force
 * flushes while the next one writes (the device then has the records when
 * a write returns, and flushes in flight together overlap).
 *
 * Usage: bench_update IMAGE OPS THREADS [update|atomic|atomic-inplace|atomic-direct]
 * Prints a line "RESULT ..." that scripts/bench.sh collects.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sx_platform.h"
#include "log.h"
#include "benchdev.h"

#define FILE_SIZE	(1u << 20)
#define UPDATE_SIZE	4096u
#define BLOCK_SIZE	4096u

struct worker {
	struct sx_mount	*mp;
	int		id;
	unsigned int	ops;
	int		fd;
	unsigned char	*model;		/* what the file must hold */
	unsigned char	*buf;
	pthread_t	thread;
	int		error;		/* first error, negative errno */
	const char	*what;		/* the call that failed */
};

static pthread_barrier_t start_line;

/* Each update is one sx_atomic_write() ("atomic"), not sx_update_*. */
static bool use_atomic;
/* ... with SX_ATOMIC_INPLACE ("atomic-inplace"): the data in place, not in the record */
static unsigned int atomic_flags;

/* Fill @buf with bytes that say which thread and which update wrote them. */
static void fill(unsigned char *buf, size_t len, int id, unsigned int op)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(id * 31 + op * 7 + i / 512 + 1);
}

static void name_of(char *name, size_t len, int id)
{
	snprintf(name, len, "u%d", id);
}

/* One durable atomic update: returns 0 or the first error. */
static int update_once(struct worker *w, unsigned int op)
{
	struct sx_update upd;
	uint64_t off = (uint64_t)((op * 2654435761u + (unsigned int)w->id * 97u) %
				  (FILE_SIZE / UPDATE_SIZE)) * UPDATE_SIZE;
	int error;

	fill(w->buf, UPDATE_SIZE, w->id, op);
	if (use_atomic) {
		error = sx_atomic_write(w->mp, w->fd, w->buf, UPDATE_SIZE, off, atomic_flags);
		if (error) {
			w->what = "sx_atomic_write";
			return error;
		}
		memcpy(w->model + off, w->buf, UPDATE_SIZE);
		return 0;
	}
	error = sx_update_start(w->mp, w->fd, &upd);
	if (error) {
		w->what = "sx_update_start";
		return error;
	}
	if (sx_pwrite(w->mp, upd.su_fd_tmp, w->buf, UPDATE_SIZE, off) != (int64_t)UPDATE_SIZE) {
		w->what = "sx_pwrite";
		sx_update_cancel(w->mp, &upd);
		return -EIO;
	}
	error = sx_update_commit(w->mp, &upd, 0);
	if (error) {
		w->what = "sx_update_commit";
		sx_update_cancel(w->mp, &upd);
		return error;
	}
	error = sx_fsync(w->mp, w->fd);
	if (error) {
		w->what = "sx_fsync";
		return error;
	}
	memcpy(w->model + off, w->buf, UPDATE_SIZE);
	return 0;
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	unsigned int op;

	sx_thread_enter();
	pthread_barrier_wait(&start_line);
	for (op = 0; op < w->ops && !w->error; op++)
		w->error = update_once(w, op);
	sx_thread_exit();
	return NULL;
}

/* Compare every file with its model; exits on a difference. */
static void verify(struct sx_mount *mp, struct worker *ws, int nthreads, const char *when)
{
	unsigned char *got = malloc(FILE_SIZE);
	char name[32];
	int t, fd;

	for (t = 0; t < nthreads; t++) {
		name_of(name, sizeof(name), t);
		if (sx_open(mp, name, &fd) ||
		    sx_pread(mp, fd, got, FILE_SIZE, 0) != (int64_t)FILE_SIZE ||
		    memcmp(got, ws[t].model, FILE_SIZE)) {
			fprintf(stderr, "bench_update: %s: file %s does not hold its updates\n",
				when, name);
			exit(1);
		}
		sx_close(mp, fd);
	}
	free(got);
}

int main(int argc, char **argv)
{
	struct sx_mount_opts mo = { 0 };
	struct sx_log_stats l0, l1;
	struct bd_snap s0, s1;
	bool direct;
	struct worker *ws;
	struct sx_mount *mp;
	struct sx_bdev *bd;
	unsigned int ops;
	int nthreads, t, error;
	uint64_t size, logbytes;
	double t0, secs, total;
	char name[32];

	if (argc < 4 || argc > 5 || !(ops = (unsigned int)strtoul(argv[2], NULL, 0)) ||
	    (nthreads = atoi(argv[3])) < 1 || nthreads > 64 ||
	    (argc == 5 && strcmp(argv[4], "update") && strcmp(argv[4], "atomic") &&
	     strcmp(argv[4], "atomic-inplace") && strcmp(argv[4], "atomic-direct"))) {
		fprintf(stderr, "usage: bench_update IMAGE OPS THREADS (1-64) "
			"[update|atomic|atomic-inplace|atomic-direct]\n");
		return 2;
	}
	use_atomic = argc == 5 && !strncmp(argv[4], "atomic", 6);
	if (argc == 5 && !strcmp(argv[4], "atomic-inplace"))
		atomic_flags = SX_ATOMIC_INPLACE;
	direct = argc == 5 && !strcmp(argv[4], "atomic-direct");
	mo.mo_flags = direct ? SX_MOUNT_OVERLAP_FORCES : 0;
	sx_thread_enter();
	/* the files, a clone's new blocks per thread, and room for the log */
	logbytes = bd_log_bytes("BENCH_UPDATE_LOG_MB");
	size = (uint64_t)nthreads * 4 * FILE_SIZE + (256ull << 20) + logbytes;
	bd = bd_file_image(argv[1], size, BLOCK_SIZE, logbytes, 1, direct);
	error = sx_mount(bd, &mo, &mp);
	if (error) {
		fprintf(stderr, "bench_update: mount: %s\n", sx_strerror(error));
		return 1;
	}
	ws = calloc((size_t)nthreads, sizeof(*ws));
	for (t = 0; t < nthreads; t++) {
		struct worker *w = &ws[t];

		w->mp = mp;
		w->id = t;
		w->ops = ops;
		w->model = malloc(FILE_SIZE);
		w->buf = malloc(UPDATE_SIZE);
		fill(w->model, FILE_SIZE, t, 1u << 20);
		name_of(name, sizeof(name), t);
		if (sx_create(mp, name, 0644, &w->fd) ||
		    sx_pwrite(mp, w->fd, w->model, FILE_SIZE, 0) != (int64_t)FILE_SIZE ||
		    sx_fsync(mp, w->fd)) {
			fprintf(stderr, "bench_update: cannot make %s\n", name);
			return 1;
		}
	}
	if (sx_sync(mp))
		return 1;

	pthread_barrier_init(&start_line, NULL, (unsigned int)nthreads + 1);
	sx_log_get_stats(mp, &l0);
	bd_count_snap(bd, &s0);
	for (t = 0; t < nthreads; t++)
		pthread_create(&ws[t].thread, NULL, worker_run, &ws[t]);
	pthread_barrier_wait(&start_line);
	t0 = bd_now();
	for (t = 0; t < nthreads; t++)
		pthread_join(ws[t].thread, NULL);
	secs = bd_now() - t0;
	bd_count_snap(bd, &s1);
	sx_log_get_stats(mp, &l1);
	for (t = 0; t < nthreads; t++)
		if (ws[t].error) {
			fprintf(stderr, "bench_update: thread %d: %s: %s\n", t, ws[t].what,
				sx_strerror(ws[t].error));
			return 1;
		}

	verify(mp, ws, nthreads, "after the updates");
	for (t = 0; t < nthreads; t++)
		sx_close(mp, ws[t].fd);
	if (sx_unmount(mp) || sx_mount(bd, &mo, &mp)) {
		fprintf(stderr, "bench_update: remount failed\n");
		return 1;
	}
	verify(mp, ws, nthreads, "after a remount");
	if (sx_unmount(mp))
		return 1;
	sx_bdev_destroy(bd);
	unlink(argv[1]);

	total = (double)ops * nthreads;
	printf("RESULT workload=update impl=%s threads=%d ops=%.0f secs=%.4f "
	       "ops_s=%.1f flushes_op=%.2f writes_op=%.2f trans_op=%.2f logbytes_op=%.0f "
	       "waits_op=%.2f\n",
	       atomic_flags ? "swapext-atomic-inplace" : direct ? "swapext-atomic-direct" :
	       use_atomic ? "swapext-atomic" : "swapext",
	       nthreads, total, secs, total / secs,
	       bd_flushes(&s0, &s1) / total, (s1.writes - s0.writes) / total,
	       (double)(l1.ls_trans - l0.ls_trans) / total,
	       (double)(l1.ls_bytes - l0.ls_bytes) / total,
	       (double)(l1.ls_waits - l0.ls_waits) / total);
	for (t = 0; t < nthreads; t++) {
		free(ws[t].model);
		free(ws[t].buf);
	}
	free(ws);
	return 0;
}
