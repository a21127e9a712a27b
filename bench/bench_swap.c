// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Swap benchmark: swap_file_range of two files of N single-block extents.
 *
 * Files a and b get a data block at every other file block, a at even and
 * b at odd ones, so neither fork can merge anything and every block of the
 * swapped range is its own step (data against hole): N extents each side,
 * 2N steps.  The swap runs once per algorithm asked for (atomic: a chain of
 * SXI steps, on an image with the atomic_swap feature; nonatomic: the same
 * steps as deferred bmap work without an SXI, on an image without it), on a
 * fresh copy of the image, and the time includes the log force that makes
 * the swap durable.  The store has no whole-fork swap (engine/swap_host.c
 * says why), so full files take the nonatomic path too.  Printed per run:
 * extents/s (extents of one side per second), transactions and log bytes
 * per extent, and the finish steps of the deferred-operation chain.
 *
 * Usage: bench_swap [N [BLOCKSIZE [atomic,nonatomic]]]  (default 100000
 * extents, 1024-byte blocks, both), on a memory device: CPU and journal
 * cost, not a disk's.
 *
 * On a file-backed image, for scripts/bench.sh (make bench), which runs
 * the swap several times interleaved with XFS's exchange-range:
 *
 *   bench_swap mkimage IMAGE N   the two files, atomic_swap, 1 KiB blocks, a
 *                                128 MiB log (BENCH_SWAP_LOG_MB)
 *   bench_swap swap IMAGE N      mount (cold cache), time one atomic swap
 *                                of both whole files plus sx_sync(), check
 *                                every block moved, unmount; prints RESULT
 *                                with the process's peak RSS (maxrss_kb,
 *                                getrusage: the whole run, checks included)
 *                                and the swap's CPU time (cpu_s: steadier
 *                                than its wall time on a loaded machine),
 *                                and the device reads and writes it made
 *                                (each a system call on a file image)
 *
 * A swap exchanges the files whole, so each run swaps back what the last
 * one swapped and every run finds the same layout, mirrored.  Device
 * flushes are counted below the engine (bench/benchdev.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include "sxswap.h"
#include "sxtest.h"
#include "log.h"
#include "defer.h"
#include "benchdev.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU seconds of the process: on a loaded machine, steadier than wall time. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The byte every data block i of the pair of files is filled with. */
static u8 block_byte(u64 i)
{
	return (u8)(i * 7 + 1);
}

/*
 * Write the pair both image builders make: files "a" and "b" of @n
 * interleaved one-block extents of @bs bytes (a at the even file blocks,
 * b at the odd), both sized to 2n blocks, closed.
 */
static void write_pair(struct sx_mount *mp, u64 n, u32 bs)
{
	u8 *buf = malloc(bs);
	int fd[2], f;
	u64 i;

	VERIFY(buf != NULL);
	for (f = 0; f < 2; f++)
		VERIFY(sx_create(mp, f ? "b" : "a", 0644, &fd[f]) == 0);
	for (i = 0; i < 2 * n; i++) {
		f = (int)(i & 1);
		memset(buf, block_byte(i), bs);
		VERIFY(sx_pwrite(mp, fd[f], buf, bs, i * bs) == (s64)bs);
	}
	/* equal sizes: the swapped range is both files whole */
	for (f = 0; f < 2; f++) {
		VERIFY(sx_truncate(mp, fd[f], 2 * n * bs) == 0);
		VERIFY(sx_close(mp, fd[f]) == 0);
	}
	free(buf);
}

/* Two files of @n interleaved one-block extents; the image is returned unmounted. */
static struct sx_bdev *make_image(u64 n, u32 bs, bool atomic)
{
	u64 devsize = (2 * n + 2 * n * 64 / bs + 65536) * (u64)bs;
	struct sx_bdev *bd = sxs_mkimg(devsize, bs, 0, atomic);
	struct sx_mount *mp = sxt_mount(bd);
	double t0 = now();

	write_pair(mp, n, bs);
	VERIFY(sx_unmount(mp) == 0);
	printf("image: 2 files x %llu extents of 1 block (%u-byte blocks)%s written in %.2f s\n",
	       (unsigned long long)n, bs, atomic ? ", atomic_swap" : "", now() - t0);
	return bd;
}

static void run(struct sx_bdev *pristine, u64 n, u32 bs, const char *name, u64 flags)
{
	struct sx_bdev *bd = sxt_bdev_copy(pristine);
	struct sx_mount *mp = sxt_mount(bd);
	struct file_swap_range fsr;
	struct sx_log_stats l0, l1;
	struct sx_defer_stats d0, d1;
	int fa, fb, error;
	double t0, t;

	VERIFY(sx_open(mp, "a", &fa) == 0);
	VERIFY(sx_open(mp, "b", &fb) == 0);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fa;
	fsr.length = (s64)(2 * n * bs);
	fsr.flags = flags;
	sx_log_get_stats(mp, &l0);
	sx_defer_get_stats(mp, &d0);
	t0 = now();
	error = sx_swap_file_range(mp, fb, &fsr);
	if (!error)
		error = sx_sync(mp);
	t = now() - t0;
	if (error) {
		printf("%-9s: failed: %s\n", name, sx_strerror(error));
	} else {
		sx_log_get_stats(mp, &l1);
		sx_defer_get_stats(mp, &d1);
		printf("%-9s: %llu extents each side in %.3f s: %.0f extents/s, "
		       "%.2f transactions and %.0f log bytes per extent, %llu finish steps\n",
		       name, (unsigned long long)n, t, n / t,
		       (double)(l1.ls_trans - l0.ls_trans) / n,
		       (double)(l1.ls_bytes - l0.ls_bytes) / n,
		       (unsigned long long)(d1.ds_steps - d0.ds_steps));
		printf("%-9s  log: %llu records, %llu forces (%llu because the queue was full), "
		       "%llu checkpoints, %llu space waits; %llu ops (%llu bytes) dropped as "
		       "relogged, %llu intent/done pairs dropped\n", "",
		       (unsigned long long)(l1.ls_records - l0.ls_records),
		       (unsigned long long)(l1.ls_forces - l0.ls_forces),
		       (unsigned long long)(l1.ls_pushes - l0.ls_pushes),
		       (unsigned long long)(l1.ls_checkpoints - l0.ls_checkpoints),
		       (unsigned long long)(l1.ls_space_waits - l0.ls_space_waits),
		       (unsigned long long)(l1.ls_ops_dropped - l0.ls_ops_dropped),
		       (unsigned long long)(l1.ls_bytes_dropped - l0.ls_bytes_dropped),
		       (unsigned long long)(l1.ls_whiteouts - l0.ls_whiteouts));
	}
	sx_close(mp, fa);
	sx_close(mp, fb);
	VERIFY(sx_unmount(mp) == 0);
	sx_bdev_destroy(bd);
}

/* Is @word one of the comma-separated words of @list? */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p;

	for (p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

#define FILE_BS	1024u

/*
 * The image's log is 128 MiB, as make bench gives XFS (and bench_update
 * swapext), so that the swap need not write blocks back to free log space;
 * BENCH_SWAP_LOG_MB=N picks another size (0: mkfs's default).
 */
static int cmd_mkimage(const char *path, u64 n)
{
	u64 logbytes = bd_log_bytes("BENCH_SWAP_LOG_MB");
	/* the data, both files' bmap btrees with room to split, slack; the log */
	u64 devsize = (2 * n + 2 * n * 256 / FILE_BS + 65536) * (u64)FILE_BS + logbytes;
	struct sx_bdev *bd = bd_file_image(path, devsize, FILE_BS, logbytes, 0, 0);
	struct sx_mount *mp = sxt_mount(bd);
	double t0 = now();

	write_pair(mp, n, FILE_BS);
	VERIFY(sx_unmount(mp) == 0);
	sx_bdev_destroy(bd);
	printf("image %s: 2 files x %llu extents of 1 block (%u-byte blocks), atomic_swap, "
	       "%llu MiB log, written in %.2f s\n", path, (unsigned long long)n, FILE_BS,
	       (unsigned long long)(logbytes >> 20), now() - t0);
	return 0;
}

/*
 * Every block of @fd: data of the pair's block i where i has parity
 * @parity, zeroes elsewhere.  Returns false at the first difference.
 */
static bool check_file(struct sx_mount *mp, int fd, u64 n, u64 parity)
{
	u8 *got = malloc(FILE_BS), want[FILE_BS];
	u64 i;
	bool ok = true;

	for (i = 0; i < 2 * n && ok; i++) {
		memset(want, (i & 1) == parity ? block_byte(i) : 0, FILE_BS);
		ok = sx_pread(mp, fd, got, FILE_BS, i * FILE_BS) == (s64)FILE_BS &&
		     !memcmp(got, want, FILE_BS);
	}
	free(got);
	return ok;
}

static int cmd_swap(const char *path, u64 n)
{
	struct sx_bdev *bd = bd_file_reopen(path);
	struct sx_mount *mp = sxt_mount(bd);
	struct file_swap_range fsr;
	struct sx_log_stats l0, l1;
	struct bd_snap s0, s1;
	struct rusage ru;
	u8 first;
	u64 pa;
	int fa, fb, error;
	double t0, t, c0, c;

	VERIFY(sx_open(mp, "a", &fa) == 0);
	VERIFY(sx_open(mp, "b", &fb) == 0);
	/* which half a holds now: the even blocks at first, the odd after a swap */
	VERIFY(sx_pread(mp, fa, &first, 1, 0) == 1);
	pa = first ? 0 : 1;
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fa;
	fsr.length = (s64)(2 * n * FILE_BS);
	sx_log_get_stats(mp, &l0);
	bd_count_snap(bd, &s0);
	c0 = cpu_now();
	t0 = now();
	error = sx_swap_file_range(mp, fb, &fsr);
	if (!error)
		error = sx_sync(mp);
	t = now() - t0;
	c = cpu_now() - c0;
	bd_count_snap(bd, &s1);
	sx_log_get_stats(mp, &l1);
	if (error) {
		fprintf(stderr, "bench_swap: swap: %s\n", sx_strerror(error));
		return 1;
	}
	if (!check_file(mp, fa, n, pa ^ 1) || !check_file(mp, fb, n, pa)) {
		fprintf(stderr, "bench_swap: after the swap the files do not hold each "
			"other's old blocks\n");
		return 1;
	}
	sx_close(mp, fa);
	sx_close(mp, fb);
	VERIFY(sx_unmount(mp) == 0);
	sx_bdev_destroy(bd);
	getrusage(RUSAGE_SELF, &ru);
	printf("RESULT workload=swap impl=swapext n=%llu secs=%.4f extents_s=%.0f "
	       "cpu_s=%.4f flushes=%llu reads=%llu writes=%llu trans_ext=%.2f logbytes_ext=%.1f "
	       "maxrss_kb=%ld\n",
	       (unsigned long long)n, t, n / t, c, bd_flushes(&s0, &s1), s1.reads - s0.reads,
	       s1.writes - s0.writes,
	       (double)(l1.ls_trans - l0.ls_trans) / n, (double)(l1.ls_bytes - l0.ls_bytes) / n,
	       ru.ru_maxrss);
	return 0;
}

int main(int argc, char **argv)
{
	u64 n = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000;
	u32 bs = argc > 2 ? (u32)strtoul(argv[2], NULL, 0) : 1024;
	const char *which = argc > 3 ? argv[3] : "atomic,nonatomic";
	struct sx_bdev *pristine;

	sx_thread_enter();
	sxt_quiet();
	if (argc == 4 && (!strcmp(argv[1], "mkimage") || !strcmp(argv[1], "swap"))) {
		n = strtoull(argv[3], NULL, 0);
		if (!n) {
			fprintf(stderr, "bench_swap: N must be a positive number\n");
			return 2;
		}
		return argv[1][0] == 'm' ? cmd_mkimage(argv[2], n) : cmd_swap(argv[2], n);
	}
	if (!n) {
		fprintf(stderr, "usage: bench_swap [N [BLOCKSIZE [atomic,nonatomic]]]\n"
			"       bench_swap mkimage|swap IMAGE N\n");
		return 2;
	}
	/*
	 * With the atomic_swap feature every swap is atomic (as in the seed),
	 * so the other two algorithms run on an image without it.
	 */
	if (has_word(which, "atomic")) {
		pristine = make_image(n, bs, true);
		run(pristine, n, bs, "atomic", 0);
		sx_bdev_destroy(pristine);
	}
	if (has_word(which, "nonatomic")) {
		pristine = make_image(n, bs, false);
		run(pristine, n, bs, "nonatomic", FILE_SWAP_RANGE_NONATOMIC);
		sx_bdev_destroy(pristine);
	}
	return 0;
}
