// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext demo -j [-S SEED] [IMAGE]: what the journal is for, in one run.
 *
 * Makes a 64 MiB image, runs a metadata workload (transactions that
 * allocate and free extents, with a sync every 20 and a checkpoint every
 * 60) through a crash-emulating device, cuts the power part way through,
 * tearing every write that was not yet flushed, then mounts the image again
 * (log recovery runs), checks that the free space is exactly what some
 * committed transaction at or after the last durable one left, runs the
 * checker and says what happened.  The cut point comes from a dry run of
 * the same workload: the run is deterministic, so the seed reproduces it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "tool.h"
#include "demo.h"
#include "mount.h"
#include "trans.h"
#include "alloc.h"
#include "log.h"
#include "log_recover.h"

#define DEMO_SIZE		(64ull << 20)
#define DEMO_BLOCKSIZE		1024
#define DEMO_NTRANS		240
#define DEMO_SYNC_EVERY		20
#define DEMO_CHECKPOINT_EVERY	60
#define DEMO_MAX_LIVE		192	/* extents allocated at once at most */
#define DEMO_MAX_EXTENT		32	/* blocks per extent at most */
#define DEMO_MAX_OPS		3	/* extent operations per transaction */

struct demo_ext {
	u64	e_bno;
	u32	e_len;
};

/* One extent operation of a committed transaction. */
struct demo_op {
	u64	o_bno;
	u32	o_len;
	bool	o_alloc;
};

/* A committed transaction: its ops and the free count it left. */
struct demo_trans {
	u32	t_first;	/* index into r_ops */
	u32	t_nops;
	u64	t_free;
};

struct demo_run {
	u64		r_rng;
	u64		r_datastart;
	u64		r_datablocks;
	struct demo_ext	r_live[DEMO_MAX_LIVE];
	u32		r_nlive;
	struct demo_op	r_ops[DEMO_NTRANS * DEMO_MAX_OPS];
	u32		r_nops;
	struct demo_trans r_trans[DEMO_NTRANS + 1];	/* [0]: the state at mount */
	u32		r_committed;	/* last transaction whose commit returned 0 */
	u32		r_durable;	/* last one a successful sync or checkpoint covered */
	u32		r_syncs;
	u32		r_checkpoints;
	u64		r_allocated;	/* blocks, over the run */
	u64		r_freed;
	u64		r_free;		/* the model's free count */
	int		r_error;	/* what ended the run early, or 0 */
	char		r_where[96];
};

/* mkfs the demo image; fills @in with what was made. */
static int demo_mkfs(const char *path, struct sx_info *in)
{
	struct sx_mkfs_opts opts = { .mk_blocksize = DEMO_BLOCKSIZE, .mk_label = "swapext-demo" };
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_RDONLY | SX_MOUNT_NORECOVERY,
				    .mo_name = "demo" };
	struct sx_mount *mp;
	struct sx_bdev *bd;
	int error;

	error = sx_filedev_open(path, SX_FILEDEV_CREATE, DEMO_SIZE, &bd);
	if (error)
		return tool_error(error, "demo: cannot create %s", path);
	error = sx_mkfs(bd, &opts);
	if (error) {
		sx_bdev_destroy(bd);
		return tool_error(error, "demo: mkfs %s", path);
	}
	error = sx_mount(bd, &mo, &mp);
	if (!error) {
		sx_get_info(mp, in);
		sx_unmount(mp);
	}
	sx_bdev_destroy(bd);
	if (error)
		return tool_error(error, "demo: the new filesystem on %s does not mount", path);
	return 0;
}

/* Note where the run stopped and why. */
static void demo_stop(struct demo_run *r, int error, const char *fmt, u32 i)
{
	r->r_error = error;
	snprintf(r->r_where, sizeof(r->r_where), fmt, i);
}

/* One extent operation inside @tp: allocate a new extent or free a live one. */
static int demo_extent_op(struct sx_trans *tp, struct demo_run *r)
{
	struct demo_op *op = &r->r_ops[r->r_nops];
	u64 bno;
	u32 len, k;
	int error;

	if (r->r_nlive == 0 ||
	    (r->r_nlive < DEMO_MAX_LIVE && demo_rand(&r->r_rng) % 100 < 55)) {
		u32 want = 1 + (u32)(demo_rand(&r->r_rng) % DEMO_MAX_EXTENT);
		u64 hint = r->r_datastart + demo_rand(&r->r_rng) % r->r_datablocks;

		error = sx_alloc_extent(tp, hint, 1, want, &bno, &len);
		if (error)
			return error;
		r->r_live[r->r_nlive].e_bno = bno;
		r->r_live[r->r_nlive].e_len = len;
		r->r_nlive++;
		op->o_alloc = true;
		r->r_free -= len;
		r->r_allocated += len;
	} else {
		k = (u32)(demo_rand(&r->r_rng) % r->r_nlive);
		bno = r->r_live[k].e_bno;
		len = r->r_live[k].e_len;
		error = sx_free_extent(tp, bno, len);
		if (error)
			return error;
		r->r_live[k] = r->r_live[--r->r_nlive];
		op->o_alloc = false;
		r->r_free += len;
		r->r_freed += len;
	}
	op->o_bno = bno;
	op->o_len = len;
	r->r_nops++;
	return 0;
}

/*
 * The workload: DEMO_NTRANS transactions of 1..3 extent operations, a sync
 * every DEMO_SYNC_EVERY and a checkpoint every DEMO_CHECKPOINT_EVERY.  It
 * stops at the first error (after a power cut every I/O fails).
 */
static void demo_workload(struct sx_mount *mp, struct demo_run *r, u64 seed)
{
	struct sx_info in;
	struct sx_trans *tp;
	u32 i, j, nops, first;
	int error;

	sx_get_info(mp, &in);
	r->r_rng = seed;
	r->r_datastart = in.in_datastart;
	r->r_datablocks = in.in_dblocks - in.in_datastart;
	r->r_free = in.in_free_blocks;
	r->r_trans[0].t_free = r->r_free;
	for (i = 1; i <= DEMO_NTRANS; i++) {
		nops = 1 + (u32)(demo_rand(&r->r_rng) % DEMO_MAX_OPS);
		error = sx_trans_alloc(mp, nops * sx_alloc_res_bytes(mp), 0, &tp);
		if (error) {
			demo_stop(r, error, "starting transaction %u", i);
			return;
		}
		first = r->r_nops;
		for (j = 0; j < nops; j++) {
			error = demo_extent_op(tp, r);
			if (error)
				break;
		}
		if (error) {
			sx_trans_cancel(tp);
			demo_stop(r, error, "an extent operation of transaction %u", i);
			return;
		}
		error = sx_trans_commit(tp);
		if (error) {
			demo_stop(r, error, "committing transaction %u", i);
			return;
		}
		r->r_committed = i;
		r->r_trans[i].t_first = first;
		r->r_trans[i].t_nops = nops;
		r->r_trans[i].t_free = r->r_free;
		if (i % DEMO_SYNC_EVERY == 0) {
			error = sx_sync(mp);
			if (error) {
				demo_stop(r, error, "the sync after transaction %u", i);
				return;
			}
			r->r_syncs++;
			r->r_durable = i;
		}
		if (i % DEMO_CHECKPOINT_EVERY == 0) {
			error = sx_checkpoint(mp);
			if (error) {
				demo_stop(r, error, "the checkpoint after transaction %u", i);
				return;
			}
			r->r_checkpoints++;
			r->r_durable = i;
		}
	}
}

/*
 * Mount @path through a crash device, run the workload and take the mount
 * down.  With @cut, the power goes at that write in tear mode.  Fills the
 * crash device's counters in @st.
 */
static int demo_run_once(const char *path, u64 seed, u64 cut, struct demo_run *r,
			 struct sx_crashdev_stats *st, int *unmount_error)
{
	struct sx_mount_opts mo = { .mo_name = "demo" };
	struct sx_bdev *lower, *bd;
	struct sx_crashdev *cd;
	struct sx_mount *mp;
	int error;

	sx_set_log_callback(cut ? demo_log : demo_log_quiet, NULL);
	error = sx_filedev_open(path, 0, 0, &lower);
	if (error)
		return tool_error(error, "demo: cannot open %s", path);
	error = sx_crashdev_create(lower, seed, &bd, &cd);
	if (error) {
		sx_bdev_destroy(lower);
		return tool_error(error, "demo: cannot make a crash device");
	}
	if (cut)
		sx_crashdev_cut_at_write(cd, cut, SX_CRASH_TEAR);
	error = sx_mount(bd, &mo, &mp);
	if (error) {
		sx_bdev_destroy(bd);
		sx_bdev_destroy(lower);
		sx_set_log_callback(demo_log, NULL);
		return tool_error(error, "demo: cannot mount %s", path);
	}
	demo_workload(mp, r, seed);
	sx_crashdev_get_stats(cd, st);
	if (cut && !st->cs_dead) {
		printf("  the workload ended before write %llu; cutting the power now\n",
		       (unsigned long long)cut);
		sx_crashdev_cut_now(cd, SX_CRASH_TEAR);
	}
	if (!cut)
		sx_shutdown(mp);	/* the dry run only counts the workload's writes */
	*unmount_error = sx_unmount(mp);
	sx_bdev_destroy(bd);
	sx_bdev_destroy(lower);
	sx_set_log_callback(demo_log, NULL);
	return 0;
}

/* The extents allocated in the state after transaction @k, into @ext. */
static u32 demo_state(const struct demo_run *r, u32 k, struct demo_ext *ext)
{
	u32 end = k ? r->r_trans[k].t_first + r->r_trans[k].t_nops : 0, n = 0, i, j;

	for (i = 0; i < end; i++) {
		const struct demo_op *op = &r->r_ops[i];

		if (op->o_alloc) {
			ext[n].e_bno = op->o_bno;
			ext[n].e_len = op->o_len;
			n++;
			continue;
		}
		for (j = 0; j < n; j++) {
			if (ext[j].e_bno == op->o_bno && ext[j].e_len == op->o_len) {
				ext[j] = ext[--n];
				break;
			}
		}
	}
	return n;
}

/*
 * True if the recovered bitmap is exactly the state after transaction @k:
 * the free count matches and every block that state allocated is in use.
 */
static int demo_state_matches(struct sx_mount *mp, const struct demo_run *r, u32 k,
			      u64 nfree, bool *match)
{
	struct demo_ext ext[DEMO_MAX_LIVE];
	u32 n, i, b;
	bool isfree;
	int error;

	*match = false;
	if (r->r_trans[k].t_free != nfree)
		return 0;
	n = demo_state(r, k, ext);
	for (i = 0; i < n; i++) {
		for (b = 0; b < ext[i].e_len; b++) {
			error = sx_alloc_is_free(mp, ext[i].e_bno + b, &isfree);
			if (error)
				return error;
			if (isfree)
				return 0;
		}
	}
	*match = true;
	return 0;
}


/* Run the journal demo on @path with @seed; returns the exit status. */
int demo_journal(const char *path, u64 seed)
{
	struct sx_mount_opts mo = { .mo_name = "demo-recover" };
	struct sx_crashdev_stats dry_st, st;
	struct sx_recovery_stats rs;
	struct demo_run *dry = NULL, *run = NULL;
	struct demo_check dc = { 0 };
	struct sx_info in, rin;
	struct sx_mount *mp = NULL;
	struct sx_bdev *bd = NULL;
	char s1[48], s2[48];
	u64 cut, pct, rng, problems = 0;
	u32 k, found = 0;
	int error, uerr, status = 1;
	bool match;

	dry = calloc(1, sizeof(*dry));
	run = calloc(1, sizeof(*run));
	if (!dry || !run) {
		tool_error(-ENOMEM, "demo");
		goto out_free;
	}
	sx_set_log_callback(demo_log, NULL);

	printf("swapext demo -j (the journal): image %s, seed %llu\n", path, (unsigned long long)seed);
	if (demo_mkfs(path, &in))
		goto out_free;
	printf("1. mkfs: %llu blocks of %u bytes (%s), log %u blocks, %u bitmap blocks, %llu data blocks free\n",
	       (unsigned long long)in.in_dblocks, in.in_blocksize,
	       tool_format_size(in.in_dblocks * in.in_blocksize, s1, sizeof(s1)),
	       in.in_logblocks, in.in_bmapblocks, (unsigned long long)in.in_free_blocks);

	/* the dry run counts the device writes of the workload */
	if (demo_run_once(path, seed, 0, dry, &dry_st, &uerr))
		goto out_free;
	if (dry->r_error) {
		tool_error(dry->r_error, "demo: the dry run failed at %s", dry->r_where);
		goto out_free;
	}
	printf("2. dry run: %u transactions (allocating %llu and freeing %llu blocks, a sync every %u, a checkpoint every %u) made %llu device writes and %llu flushes\n",
	       dry->r_committed, (unsigned long long)dry->r_allocated,
	       (unsigned long long)dry->r_freed, DEMO_SYNC_EVERY, DEMO_CHECKPOINT_EVERY,
	       (unsigned long long)dry_st.cs_writes, (unsigned long long)dry_st.cs_flushes);
	if (dry_st.cs_writes < 2) {
		tool_fail("demo: the workload made only %llu writes; nothing to cut",
			  (unsigned long long)dry_st.cs_writes);
		goto out_free;
	}
	rng = seed ^ 0x5851f42d4c957f2dull;
	pct = 50 + demo_rand(&rng) % 21;
	cut = sx_max(dry_st.cs_writes * pct / 100, 1ull);

	/* the real run, on a fresh filesystem */
	if (demo_mkfs(path, &in))
		goto out_free;
	printf("3. the same workload on a fresh filesystem, power cut armed at device write %llu of %llu (%llu%%); writes not yet flushed then are torn at random sector boundaries\n",
	       (unsigned long long)cut, (unsigned long long)dry_st.cs_writes,
	       (unsigned long long)pct);
	if (demo_run_once(path, seed, cut, run, &st, &uerr))
		goto out_free;
	if (run->r_error && !st.cs_dead) {
		tool_error(run->r_error, "demo: the workload failed before the power cut, at %s",
			   run->r_where);
		goto out_free;
	}
	printf("   the power went out during %s: %u transactions had committed, %u of them durable (%u syncs and %u checkpoints returned)\n",
	       run->r_error ? run->r_where : "the end of the workload", run->r_committed,
	       run->r_durable, run->r_syncs, run->r_checkpoints);
	printf("   the crash device saw %llu writes (%llu FUA) and %llu flushes; the dead mount's unmount said: %s\n",
	       (unsigned long long)st.cs_writes, (unsigned long long)st.cs_fua_writes,
	       (unsigned long long)st.cs_flushes, tool_strerror(uerr));

	/* recovery */
	printf("4. mount the image again (log recovery runs)\n");
	error = sx_filedev_open(path, 0, 0, &bd);
	if (error) {
		tool_error(error, "demo: cannot open %s", path);
		goto out_free;
	}
	error = sx_mount(bd, &mo, &mp);
	if (error) {
		tool_error(error, "demo: recovery of %s failed", path);
		goto out_free;
	}
	sx_get_recovery_stats(mp, &rs);
	sx_get_info(mp, &rin);
	printf("   recovery: %llu log records (%llu ops) from tail %s to head %s; %llu block changes replayed, %llu skipped (the block on disk was newer), %llu cancelled, %llu intents finished; the log ended with: %s\n",
	       (unsigned long long)rs.rs_records, (unsigned long long)rs.rs_ops,
	       tool_format_lsn(rs.rs_tail_lsn, s1, sizeof(s1)),
	       tool_format_lsn(rs.rs_head_lsn, s2, sizeof(s2)),
	       (unsigned long long)rs.rs_bufs_replayed, (unsigned long long)rs.rs_bufs_skipped,
	       (unsigned long long)rs.rs_bufs_cancelled, (unsigned long long)rs.rs_intents,
	       sx_log_stop_name(rs.rs_stop_reason));

	/* the recovered state must be one a committed transaction left */
	printf("5. verify: %llu blocks free after recovery; allowed: the state after any transaction from %u (last durable) to %u (last committed)\n",
	       (unsigned long long)rin.in_free_blocks, run->r_durable, run->r_committed);
	for (k = run->r_committed + 1; k-- > run->r_durable;) {
		error = demo_state_matches(mp, run, k, rin.in_free_blocks, &match);
		if (error) {
			tool_error(error, "demo: reading the recovered bitmap");
			goto out_unmount;
		}
		if (match) {
			found = k + 1;
			break;
		}
	}
	if (!found) {
		tool_fail("demo: the recovered free space (%llu blocks) is not the state after any transaction from %u to %u",
			  (unsigned long long)rin.in_free_blocks, run->r_durable, run->r_committed);
		goto out_unmount;
	}
	k = found - 1;
	printf("   the bitmap is exactly the state after transaction %u: %llu blocks free, every extent that state allocated is in use\n",
	       k, (unsigned long long)run->r_trans[k].t_free);

	error = sx_unmount(mp);
	mp = NULL;
	if (error) {
		tool_error(error, "demo: unmount after recovery");
		goto out_free;
	}
	printf("6. check the unmounted image:\n");
	error = sx_check_flags(bd, SX_CHECK_SPACE_ONLY, demo_check_line, &dc, &problems);
	if (error) {
		tool_error(error, "demo: the checker could not run");
		goto out_free;
	}

	printf("\nWhat happened:\n");
	printf("  %u transactions were planned; %u committed before the power was cut at device write %llu (of the %llu the workload makes).\n",
	       DEMO_NTRANS, run->r_committed, (unsigned long long)cut,
	       (unsigned long long)dry_st.cs_writes);
	if (run->r_durable)
		printf("  Transactions 1..%u were durable: a sync or checkpoint after them had returned.\n",
		       run->r_durable);
	else
		printf("  No transaction was durable yet: no sync had returned.\n");
	if (run->r_committed > run->r_durable)
		printf("  Transactions %u..%u had committed, but no sync had returned for them: they could go either way.\n",
		       run->r_durable + 1, run->r_committed);
	printf("  The cut tore every write the disk had not yet flushed; recovery then replayed %llu block changes from %llu log records (and skipped %llu already on disk).\n",
	       (unsigned long long)rs.rs_bufs_replayed, (unsigned long long)rs.rs_records,
	       (unsigned long long)rs.rs_bufs_skipped);
	if (k > run->r_durable)
		printf("  The filesystem came back in the state after transaction %u: it committed after the last sync that returned, but its log record had reached the disk anyway.\n",
		       k);
	else if (run->r_committed > run->r_durable)
		printf("  The filesystem came back in the state after transaction %u, the last durable one: the %u transactions after it were not durable yet and were lost, which is allowed.\n",
		       k, run->r_committed - run->r_durable);
	else
		printf("  The filesystem came back in the state after transaction %u, the last one committed and durable.\n",
		       k);
	if (problems)
		printf("  The checker found %llu problem%s.\n", (unsigned long long)problems,
		       problems == 1 ? "" : "s");
	else
		printf("  The checker found no problems.\n");
	if (problems) {
		tool_fail("demo: the recovered image has %llu problem%s",
			  (unsigned long long)problems, problems == 1 ? "" : "s");
		goto out_free;
	}
	printf("Result: PASS\n");
	status = 0;
	goto out_free;

out_unmount:
	sx_unmount(mp);
out_free:
	sx_bdev_destroy(bd);
	sx_set_log_callback(NULL, NULL);
	free(dry);
	free(run);
	return status;
}
