// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Recovery benchmark: how long mounting takes after the power was cut in
 * the middle of an atomic swap of two files of N single-block extents.
 *
 * The files are bench_swap's (a at the even blocks, b at the odd ones, 1
 * KiB blocks, atomic_swap), on a memory device behind the crash-emulating
 * device the crash tests use (sx_crashdev_*).  A first run of the swap plus
 * sx_sync() counts its device writes (mounted with a log record per
 * transaction, so that each step of the swap is a write of its own); a
 * second run, on a fresh copy of the same image, loses power at the write
 * halfway through them, with every
 * write not yet flushed dropped (SX_CRASH_DROP).  What is timed is
 * sx_mount() of the device left behind: log recovery replays the durable
 * records and finishes the swap's unfinished steps (the engine finishes
 * intents at mount), and then, timed separately, the sx_sync() that makes
 * the finished swap durable.  Afterwards every block of both files is
 * checked: the swap is all done (each file holds the other's old blocks)
 * or, if no record of it was durable at the cut, not done at all.
 *
 * Usage: bench_recover N
 * Prints "RESULT ..." for scripts/bench.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxswap.h"
#include "sxtest.h"
#include "benchdev.h"

#define BS	1024u

static u8 block_byte(u64 i)
{
	return (u8)(i * 7 + 1);
}

static struct sx_bdev *make_image(u64 n)
{
	/* the data, both files' bmap btrees with room to split, the log, slack */
	u64 devsize = (2 * n + 2 * n * 256 / BS + 65536) * (u64)BS;
	struct sx_bdev *bd = sxs_mkimg(devsize, BS, 0, true);
	struct sx_mount *mp = sxt_mount(bd);
	u8 buf[BS];
	int fd[2], f;
	u64 i;

	for (f = 0; f < 2; f++)
		VERIFY(sx_create(mp, f ? "b" : "a", 0644, &fd[f]) == 0);
	for (i = 0; i < 2 * n; i++) {
		f = (int)(i & 1);
		memset(buf, block_byte(i), BS);
		VERIFY(sx_pwrite(mp, fd[f], buf, BS, i * BS) == (s64)BS);
	}
	for (f = 0; f < 2; f++) {
		VERIFY(sx_truncate(mp, fd[f], 2 * n * BS) == 0);
		VERIFY(sx_close(mp, fd[f]) == 0);
	}
	VERIFY(sx_unmount(mp) == 0);
	return bd;
}

/*
 * The swap on a crash device over a copy of @pristine, cut at device write
 * @cut (0: not cut).  Returns the lower device; *@w0 and *@w1 get the write
 * counts before the swap and after its sync.
 */
static struct sx_bdev *run_swap(struct sx_bdev *pristine, u64 n, u64 cut, u64 *w0, u64 *w1)
{
	struct sx_bdev *lower = sxt_bdev_copy(pristine), *bd;
	struct sx_crashdev_stats cs;
	struct file_swap_range fsr;
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_LOG_EACH };
	struct sx_crashdev *cd;
	struct sx_mount *mp;
	int fa, fb, error;

	VERIFY(sx_crashdev_create(lower, 1, &bd, &cd) == 0);
	/*
	 * A record per transaction: batched steps hold hundreds of exchanges
	 * each and the log's queue would write the whole swap in a few
	 * records at its end, so the halfway write would fall before any
	 * step.  Each step is its own write now: half of them are durable.
	 */
	VERIFY(sx_mount(bd, &mo, &mp) == 0);
	VERIFY(sx_open(mp, "a", &fa) == 0);
	VERIFY(sx_open(mp, "b", &fb) == 0);
	sx_crashdev_get_stats(cd, &cs);
	*w0 = cs.cs_writes;
	if (cut)
		sx_crashdev_cut_at_write(cd, cut, SX_CRASH_DROP);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fa;
	fsr.length = (s64)(2 * n * BS);
	error = sx_swap_file_range(mp, fb, &fsr);
	if (!error)
		error = sx_sync(mp);
	sx_crashdev_get_stats(cd, &cs);
	*w1 = cs.cs_writes;
	if (!cut && error) {
		fprintf(stderr, "bench_recover: swap: %s\n", sx_strerror(error));
		exit(1);
	}
	if (cut && !cs.cs_dead) {
		fprintf(stderr, "bench_recover: the power was not cut at write %llu "
			"(the run made %llu writes)\n", (unsigned long long)cut,
			(unsigned long long)*w1);
		exit(1);
	}
	sx_close(mp, fa);
	sx_close(mp, fb);
	sx_unmount(mp);		/* after the cut it fails: the device is dead */
	sx_bdev_destroy(bd);	/* the wrapper only */
	return lower;
}

/* Every block of @fd holds the pair's block i where i has @parity, else zeroes. */
static bool check_file(struct sx_mount *mp, int fd, u64 n, u64 parity)
{
	u8 got[BS], want[BS];
	u64 i;

	for (i = 0; i < 2 * n; i++) {
		memset(want, (i & 1) == parity ? block_byte(i) : 0, BS);
		if (sx_pread(mp, fd, got, BS, i * BS) != (s64)BS || memcmp(got, want, BS))
			return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	u64 n = argc == 2 ? strtoull(argv[1], NULL, 0) : 0;
	struct sx_recovery_stats rs;
	struct sx_bdev *pristine, *bd;
	struct sx_mount *mp;
	u64 w0, w1, c0, c1, cut, problems = 0;
	double t0, t_mount, t_sync;
	int fa, fb, error;
	const char *state;

	if (!n) {
		fprintf(stderr, "usage: bench_recover N\n");
		return 2;
	}
	sx_thread_enter();
	sxt_quiet();
	pristine = make_image(n);
	bd = run_swap(pristine, n, 0, &w0, &w1);
	sx_bdev_destroy(bd);
	cut = w0 + (w1 - w0) / 2;
	bd = run_swap(pristine, n, cut, &c0, &c1);
	sx_bdev_destroy(pristine);

	t0 = bd_now();
	error = sx_mount(bd, NULL, &mp);
	t_mount = bd_now() - t0;
	if (error) {
		fprintf(stderr, "bench_recover: recovery failed: %s\n", sx_strerror(error));
		return 1;
	}
	sx_get_recovery_stats(mp, &rs);
	t0 = bd_now();
	VERIFY(sx_sync(mp) == 0);
	t_sync = bd_now() - t0;

	VERIFY(sx_open(mp, "a", &fa) == 0);
	VERIFY(sx_open(mp, "b", &fb) == 0);
	if (check_file(mp, fa, n, 1) && check_file(mp, fb, n, 0)) {
		state = "done";
	} else if (check_file(mp, fa, n, 0) && check_file(mp, fb, n, 1)) {
		state = "not-started";
	} else {
		fprintf(stderr, "bench_recover: after recovery the swap is neither all done "
			"nor not done at all\n");
		return 1;
	}
	sx_close(mp, fa);
	sx_close(mp, fb);
	VERIFY(sx_unmount(mp) == 0);
	VERIFY(sx_check(bd, NULL, NULL, &problems) == 0 && problems == 0);
	sx_bdev_destroy(bd);
	printf("RESULT workload=recover impl=swapext n=%llu secs=%.4f sync_secs=%.4f "
	       "cut_write=%llu of_writes=%llu records=%llu intents=%llu swap=%s\n",
	       (unsigned long long)n, t_mount, t_sync, (unsigned long long)(cut - w0),
	       (unsigned long long)(w1 - w0), (unsigned long long)rs.rs_records,
	       (unsigned long long)rs.rs_intents, state);
	return 0;
}
