// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of the journal.
 *
 * A deterministic workload of allocator and metadata-block transactions
 * (allocate an extent and initialise a test block in it, rewrite a test
 * block, binval a test block and free its extent; syncs and checkpoints in
 * between) runs on a crash-emulating device.  The power is cut at every
 * single device write, with every volatile write kept, dropped or torn.
 * After recovery the image must hold exactly one state the workload reached,
 * no older than the last durable commit and no newer than the last commit;
 * the checker must be clean; recovering again must change no byte.  Then
 * the power is cut at every write of the recovery itself, and the second
 * recovery must reach the same state.  Finally an I/O error is injected at
 * every read, write and flush (once and forever): each gives a clean error
 * and the image still recovers to a valid state.
 *
 * SX_CRASH_LEVEL=quick samples every 7th write; long adds more seeds and
 * recovery crashes in every mode.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxcrash.h"

#define NTX		64
#define MAXE		48
#define IMG_SIZE	(4ull << 20)

struct ext {
	u64	bno;
	u32	len;
	u64	gen;
};

struct state {
	u32		n;
	struct ext	e[MAXE];
};

struct run {
	struct state	states[NTX + 1];
	int		ncommitted;	/* last commit that may have reached the log */
	int		ndurable;	/* last commit known durable */
	int		error;		/* first error the workload saw */
};

static u64 recovery_crash_points, io_error_points;
static struct sx_bdev *pristine;

/* Log bytes one workload transaction may need. */
static u32 tx_res(struct sx_mount *mp)
{
	return 2 * sx_alloc_res_bytes(mp) + 2 * sx_trans_buf_bytes(mp);
}

/* One transaction of the workload on @cur; 0 or the error that stopped it. */
static int one_tx(struct sx_mount *mp, u64 *seed, int i, struct state *cur, bool *sync)
{
	struct sx_trans *tp;
	struct sx_buf *bp;
	u32 op = sxt_rand(seed) % 10, k;
	int error;

	*sync = (i % 10 == 0);
	error = sx_trans_alloc(mp, tx_res(mp), *sync ? SX_TRANS_SYNC : 0, &tp);
	if (error)
		return error;
	if ((op < 5 || cur->n == 0) && cur->n < MAXE) {
		u64 bno;
		u32 len;

		error = sx_alloc_extent(tp, 0, 1, 1 + sxt_rand(seed) % 8, &bno, &len);
		if (error == -ENOSPC) {
			sx_trans_cancel(tp);
			return 0;
		}
		if (!error)
			error = sxt_tblock_write(tp, bno, i);
		if (error)
			goto out_cancel;
		cur->e[cur->n].bno = bno;
		cur->e[cur->n].len = len;
		cur->e[cur->n].gen = i;
		cur->n++;
	} else if (op < 8) {
		k = sxt_rand(seed) % cur->n;
		error = sxt_tblock_update(tp, cur->e[k].bno, i);
		if (error)
			goto out_cancel;
		cur->e[k].gen = i;
	} else {
		k = sxt_rand(seed) % cur->n;
		error = sx_trans_read_buf(tp, cur->e[k].bno, &sxt_tblock_ops, 0, &bp);
		if (!error)
			error = sx_trans_binval(tp, bp);
		if (!error)
			error = sx_free_extent(tp, cur->e[k].bno, cur->e[k].len);
		if (error)
			goto out_cancel;
		cur->e[k] = cur->e[--cur->n];
	}
	return sx_trans_commit(tp);

out_cancel:
	sx_trans_cancel(tp);
	return error;
}

/* Run the workload on @bd (mount included); record the states it reached. */
static void workload(struct sx_bdev *bd, u64 seed, struct run *r)
{
	struct sx_mount *mp;
	struct state cur = { 0 };
	int i, error;

	memset(r, 0, sizeof(*r));
	r->error = sx_mount(bd, NULL, &mp);
	if (r->error)
		return;
	for (i = 1; i <= NTX; i++) {
		struct state next = cur;
		bool sync;

		error = one_tx(mp, &seed, i, &next, &sync);
		/* a failed commit may still have queued its changes */
		r->states[i] = next;
		r->ncommitted = i;
		if (error) {
			r->error = error;
			break;
		}
		cur = next;
		if (sync)
			r->ndurable = i;
		if (i % 7 == 0) {
			error = sx_sync(mp);
			if (error) {
				r->error = error;
				break;
			}
			r->ndurable = i;
		}
		if (i % 16 == 0) {
			error = sx_checkpoint(mp);
			if (error) {
				r->error = error;
				break;
			}
			r->ndurable = i;
		}
	}
	error = sx_unmount(mp);
	if (!r->error && !error)
		r->ndurable = r->ncommitted;
	if (!r->error)
		r->error = error;
}

/* True if the mounted filesystem holds exactly @st. */
static bool state_matches(struct sx_mount *mp, const struct state *st)
{
	u64 b, gen, nalloc = 0;
	u32 i;

	for (i = 0; i < st->n; i++) {
		if (sxt_tblock_read(mp, st->e[i].bno, &gen) || gen != st->e[i].gen)
			return false;
		nalloc += st->e[i].len;
	}
	/* mkfs took the first two data blocks: the fsinfo block and the root inode */
	for (b = mp->m_sb.sb_datastart; b < mp->m_sb.sb_dblocks; b++) {
		bool isfree, want_free = b >= mp->m_sb.sb_fsinfo + 2;

		if (sx_alloc_is_free(mp, b, &isfree))
			return false;
		for (i = 0; i < st->n && want_free; i++)
			if (b >= st->e[i].bno && b < st->e[i].bno + st->e[i].len)
				want_free = false;
		if (isfree != want_free)
			return false;
	}
	return sx_alloc_free_blocks(mp) ==
	       mp->m_sb.sb_dblocks - mp->m_sb.sb_datastart - 2 - nalloc;
}

/* Which recorded state of @arg's run a mounted filesystem holds, in the allowed range. */
static int find_state(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct run *r = arg;
	int j;

	for (j = r->ncommitted; j >= r->ndurable; j--)
		if (state_matches(mp, &r->states[j]))
			break;
	SXC_CHECK(j >= r->ndurable, "%s: no state in [%d, %d] matches", what, r->ndurable,
		  r->ncommitted);
	return j;
}

/* Recover @bd and verify it against @r.  Returns the state found, or -1. */
static int recover_and_verify(struct sx_bdev *bd, const struct run *r, const char *what)
{
	return sxc_recover_verify(bd, SX_CHECK_SPACE_ONLY, find_state, r, what);
}

/* Cut the power at write @w in @mode and check what recovery makes of it. */
static int crash_at(void *arg, u64 w, enum sx_crash_mode mode)
{
	/* the recovery cut at each write, in one mode (long: all three), the modes in turn */
	static const enum sx_crash_mode rmodes[] = { SX_CRASH_DROP, SX_CRASH_KEEP, SX_CRASH_TEAR };
	struct sxc_cuts rcuts = { .modes = rmodes, .nmodes = 3, .per_point = sxc_pick(1, 1, 3) };
	u64 seed = *(const u64 *)arg;
	bool and_recovery = mode == SX_CRASH_RANDOM ? sxc_level() >= SXC_LONG :
			    mode == SX_CRASH_TEAR && (sxc_level() >= SXC_NORMAL || w % 5 == 0);
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd, *twin, *saved = NULL;
	struct run *r = malloc(sizeof(*r));
	char what[96];
	int j = -1, j2;

	cbd = sxc_cut_dev(img, seed * 131 + w, w, mode, NULL);
	workload(cbd, seed, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "seed %llu write %llu %s", (unsigned long long)seed,
		 (unsigned long long)w, sxf_mode_name(mode));
	if (r->error == 0) {
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
		goto out;
	}
	twin = sxt_bdev_copy(img);
	if (and_recovery)
		saved = sxt_bdev_copy(img);
	j = recover_and_verify(img, r, what);
	if (j >= 0) {
		/* recovery is deterministic: a second copy recovers to the same bytes */
		j2 = recover_and_verify(twin, r, what);
		if (j2 != j || !sxt_bdev_equal(img, twin)) {
			fprintf(stderr, "FAIL %s: two recoveries of one image differ\n", what);
			j = -1;
		}
	}
	sx_bdev_destroy(twin);
	if (j >= 0 && and_recovery)
		recovery_crash_points += sxc_cut_recovery(saved, &rcuts, seed, SX_CHECK_SPACE_ONLY,
							  find_state, r, j);
	if (saved)
		sx_bdev_destroy(saved);
out:
	free(r);
	sx_bdev_destroy(img);
	return j;
}

/* The workload's I/O counts without a crash. */
static int dry_run(u64 seed, struct sx_crashdev_stats *st, struct run *r)
{
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd;
	struct sx_crashdev *cd;

	cbd = sxc_cut_dev(img, 1, 0, 0, &cd);
	workload(cbd, seed, r);
	sx_crashdev_get_stats(cd, st);
	sx_bdev_destroy(cbd);
	sx_bdev_destroy(img);
	SXC_CHECK(r->error == 0, "dry run: %s", sx_strerror(r->error));
	SXC_CHECK(r->ncommitted == NTX && r->ndurable == NTX, "dry run: %d/%d", r->ndurable,
		  r->ncommitted);
	return 0;
}

/* Fail the @nth I/O of @kind and check the result. */
static int io_error_at(u64 seed, enum sx_io_kind kind, u64 nth, bool forever)
{
	static const char *const kinds[] = { "read", "write", "flush" };
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd;
	struct sx_crashdev *cd;
	struct run *r = malloc(sizeof(*r));
	char what[96];
	int ret = -1;

	cbd = sxc_cut_dev(img, 7, 0, 0, &cd);
	sx_crashdev_fail(cd, kind, nth, forever, -EIO);
	workload(cbd, seed, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "%s error %llu %s", kinds[kind], (unsigned long long)nth,
		 forever ? "forever" : "once");
	/* every write and flush matters: an error must be reported */
	if (r->error == 0 && kind != SX_IO_READ)
		fprintf(stderr, "FAIL %s: the error was not reported\n", what);
	else if (recover_and_verify(img, r, what) >= 0)
		ret = 0;
	free(r);
	sx_bdev_destroy(img);
	if (sxc_tally(ret) == 0)
		io_error_points++;
	return ret;
}

int main(void)
{
	static const enum sx_crash_mode random_mode[] = { SX_CRASH_RANDOM };
	static const u64 fixed[3] = { 1, 2, 3 };
	const u64 *seeds;
	u64 nseeds, s, step, k, crash_points = 0;
	struct sx_crashdev_stats st;
	struct run *r = malloc(sizeof(*r));

	sxc_start();
	step = sxc_pick(7, 1, 1);
	nseeds = sxt_seeds("crash_journal", fixed, sxc_pick(1, 1, 3), &seeds);
	pristine = sxt_memfs(IMG_SIZE, 4096, 64);

	for (s = 0; s < nseeds; s++) {
		struct sxc_cuts cuts = { .step = step, .per_point = 3 };
		struct sxc_cuts random_cuts = { .step = 3 * step, .modes = random_mode,
						.nmodes = 1 };
		u64 seed = seeds[s];

		if (dry_run(seed, &st, r)) {
			sxc_count.failed++;
			break;
		}
		printf("seed %llu: %d transactions, %llu writes (%llu FUA), %llu flushes, %llu reads\n",
		       (unsigned long long)seed, NTX, (unsigned long long)st.cs_writes,
		       (unsigned long long)st.cs_fua_writes, (unsigned long long)st.cs_flushes,
		       (unsigned long long)st.cs_reads);
		cuts.last = random_cuts.last = st.cs_writes;
		crash_points += sxc_cut_writes(&cuts, crash_at, &seed);
		crash_points += sxc_cut_writes(&random_cuts, crash_at, &seed);
		for (k = 1; k <= st.cs_reads; k += step * sxc_pick(3, 3, 1)) {
			io_error_at(seed, SX_IO_READ, k, false);
			io_error_at(seed, SX_IO_READ, k, true);
		}
		for (k = 1; k <= st.cs_writes; k += step) {
			io_error_at(seed, SX_IO_WRITE, k, false);
			io_error_at(seed, SX_IO_WRITE, k, true);
		}
		for (k = 1; k <= st.cs_flushes; k += step) {
			io_error_at(seed, SX_IO_FLUSH, k, false);
			io_error_at(seed, SX_IO_FLUSH, k, true);
		}
	}
	printf("crash points: %llu during the workload, %llu during recovery; "
	       "I/O error points: %llu\n", (unsigned long long)crash_points,
	       (unsigned long long)recovery_crash_points, (unsigned long long)io_error_points);
	free(r);
	sx_bdev_destroy(pristine);
	return sxc_end();
}
