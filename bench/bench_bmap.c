// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Extent-map benchmark: map N single-block extents into one file and look
 * them up.
 *
 * The file's blocks are allocated and mapped at every other file block, so
 * that no two mappings merge: the map ends with exactly N records (checked)
 * in a B+tree.  Each transaction allocates and maps SX_BENCH_BATCH blocks
 * and commits; the log is forced at the end and the time includes it.  Then
 * N lookups at random mapped offsets, then a truncate to zero that unmaps
 * and frees everything (through BUI-less direct unmapping and EFIs).
 *
 * Usage: bench_bmap [N [BLOCKSIZE]]  (default 1000000 extents, 1024-byte
 * blocks, on a memory device: the figures are CPU and journal cost, not a
 * disk's).  Prints one line per phase with its rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "sxtest.h"
#include "inode.h"
#include "bmap.h"
#include "file.h"

#define SX_BENCH_BATCH	64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	u64 n = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	u32 bs = argc > 2 ? (u32)strtoul(argv[2], NULL, 0) : 1024;
	u64 devsize, i, seed = 42, hint = 0;
	struct sx_bmap_irec irec;
	struct sx_mount *mp;
	struct sx_inode *ip;
	struct sx_bdev *bd;
	double t0, t1;
	int fd, error;

	sx_thread_enter();
	sxt_quiet();
	/* the data, the tree (records of 24 bytes, half-full leaves at worst) and slack */
	devsize = (n + n * 48 / bs + 65536) * (u64)bs;
	bd = sxt_memfs(devsize, bs, 0);
	mp = sxt_mount(bd);
	VERIFY(sx_create(mp, "big", 0644, &fd) == 0);
	VERIFY(sx_fd_get(mp, fd, &ip) == 0);

	t0 = now();
	for (i = 0; i < n;) {
		struct sx_trans *tp = NULL;
		u32 k, len, per = sx_bmap_res_bytes(mp, ip) + sx_alloc_res_bytes(mp);
		u32 batch = sx_max(sx_min((u32)SX_BENCH_BATCH,
					  (sx_log_max_trans_bytes(mp) - 1024) / per), 1u);

		/* a batch as large as the largest transaction allows */
		error = sx_trans_alloc(mp, batch * per, 0, &tp);
		sx_ilock(ip, SX_ILOCK_EXCL);
		for (k = 0; !error && k < batch && i < n; k++, i++) {
			error = sx_alloc_extent(tp, hint, 1, 1, &irec.br_startblock, &len);
			if (error)
				break;
			hint = irec.br_startblock + 1;
			irec.br_startoff = 2 * i;
			irec.br_blockcount = 1;
			irec.br_state = 0;
			error = sx_bmap_map(tp, ip, &irec);
		}
		if (!error)
			error = sx_trans_commit(tp);
		else if (tp)
			sx_trans_cancel(tp);
		sx_iunlock(ip, SX_ILOCK_EXCL);
		if (error) {
			fprintf(stderr, "bench_bmap: mapping extent %llu: %s\n",
				(unsigned long long)i, sx_strerror(error));
			return 1;
		}
	}
	VERIFY(sx_log_force(mp) == 0);
	t1 = now();
	VERIFY(sx_bmap_count(ip) == n);
	printf("map:    %llu single-block extents in %.2f s: %.0f extents/s "
	       "(block size %u, %u per transaction, B+tree of %u levels)\n",
	       (unsigned long long)n, t1 - t0, n / (t1 - t0), bs, SX_BENCH_BATCH,
	       ip->i_blevel + 1);

	t0 = now();
	sx_ilock(ip, SX_ILOCK_EXCL);
	for (i = 0; i < n; i++) {
		u64 want = sxt_rand(&seed) % n;

		VERIFY(sx_bmap_lookup(NULL, ip, 2 * want, &irec) == 0);
		VERIFY(irec.br_startoff == 2 * want && irec.br_blockcount == 1 &&
		       irec.br_startblock != SX_HOLE);
	}
	sx_iunlock(ip, SX_ILOCK_EXCL);
	t1 = now();
	printf("lookup: %llu random lookups in %.2f s: %.0f lookups/s\n",
	       (unsigned long long)n, t1 - t0, n / (t1 - t0));

	sx_irele(ip);
	/*
	 * The map was made below the data path, so the file's size is still
	 * 0 and every mapping lies past EOF: growing the file frees them all
	 * first (blocks past EOF are what a crash leaves, sx_io_prepare_grow),
	 * which is the unmap timed here; the truncate to 0 then finds nothing.
	 */
	t0 = now();
	VERIFY(sx_truncate(mp, fd, 2 * n * bs) == 0);
	VERIFY(sx_truncate(mp, fd, 0) == 0);
	VERIFY(sx_fsync(mp, fd) == 0);
	t1 = now();
	printf("unmap:  truncate to 0 of %llu extents in %.2f s: %.0f extents/s\n",
	       (unsigned long long)n, t1 - t0, n / (t1 - t0));
	VERIFY(sx_close(mp, fd) == 0);
	VERIFY(sx_unmount(mp) == 0);
	sx_bdev_destroy(bd);
	return 0;
}
