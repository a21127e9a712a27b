// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of the atomic write (sx_atomic_write(), sx_atomic_writev()).
 *
 * Three files: a (blocks with holes, a partial last block), b (every block
 * its own extent: written in turn with the bystander z, so a range of b
 * spans many mappings) and c (one partial block).  The sequence:
 *  1. an atomic write into a, unaligned, over holes and written blocks;
 *  2. one vectored write over the three files: two ranges of a sharing a
 *     block and one growing it, a multi-extent range of b, c grown far;
 *  3. a small vectored write over the three files, a growing too;
 *  4. a large atomic write of b that grows it, over its many extents;
 *  5. a plain sx_pwrite() inside one block of a that call 1 wrote, then
 *     sx_fsync(): that block's contents are still in the log (small direct
 *     writes carry their blocks in the record), so the overwrite goes
 *     through the log too, and recovery must not put call 1's image back
 *     over it.  Within one block it is all or nothing, and durable once
 *     its fsync returns, whatever the flags of the atomic calls;
 *  6. a vectored write over written blocks of the three files, those of
 *     a that call 1 carried in its record and call 5 logged again among
 *     them: it logs them again where they are (recovery must replay the
 *     newest image of each), or with SX_ATOMIC_REMAP it frees them, and
 *     the free cancels their images in the log (recovery must replay
 *     neither over the blocks, which are free, nor leave them withheld or
 *     leaked).
 * Small changes of few pieces (1 and 3) go straight into new blocks in
 * one transaction, or, over written blocks only (6), in their
 * record as the files' own blocks, left where they are; the others go
 * through twins.  The whole sequence runs again with SX_ATOMIC_REMAP
 * (small changes always into new blocks: 6 frees what 1 and 5 logged),
 * with SX_ATOMIC_TWIN (small changes remapped from twins in one plain
 * transaction) and with SX_ATOMIC_CHAIN, everything through the swap
 * intents.
 * Each call is durable when it returns; the sequence runs again with
 * SX_ATOMIC_NOSYNC and one sx_sync() at the end, so that one force writes
 * the calls' transactions and data manifest as a group, which the
 * cuts then tear anywhere (group commit cut mid-group): the files must
 * still show the state after a prefix of the calls, the same for all.
 * The power is cut at every device write of the sequence, the volatile
 * writes kept, dropped, torn, each given a random fate, and all lost but
 * the newest (the last two keep records whose data was lost: the data
 * manifest must catch it); quick: every 4th write, one fate each; long:
 * the recovery itself cut too.  After recovery the three files equal, in
 * size and every byte, the models after some number k of the calls, the
 * same k for all three (the vectored write all or nothing across files),
 * k between the last call that was durable when it returned (with
 * NOSYNC: none before the final sync) and the last call that returned,
 * plus the call the cut interrupted; z is as it was, the names are a, b, c, z; the checker
 * is clean (it walks every block: the twins and the blocks they held are
 * freed, nothing leaks) and a second recovery changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxswap.h"
#include "sxcrash.h"

#define BS		1024u
#define NF		4		/* a, b, c, z */
#define NOPS		6
#define OP_PWRITE	5		/* call 5: sx_pwrite() and sx_fsync() */
#define MAXSZ		(160u * BS)

static const char *const names[NF] = { "a", "b", "c", "z" };

/* A state of all files: sizes and bytes. */
struct state {
	u64	size[NF];
	u8	*b[NF];
};

/* One range of a call. */
struct rng {
	int	f;
	u64	off, len;
};

/* The calls: ranges (len 0 ends the list); one range: sx_atomic_write(). */
static const struct rng ops[NOPS][6] = {
	{ { 0, 10 * BS + 300, 9 * BS + 11 } },
	{ { 0, 2 * BS + 5, 40 }, { 0, 2 * BS + 100, 900 }, { 0, 40 * BS - 7, 3 * BS },
	  { 1, 3 * BS + 512, 20 * BS }, { 2, 90 * BS + 1, 100 } },
	{ { 2, 5, 10 }, { 0, 47 * BS + 1, 2 * BS }, { 1, 0, 3 } },
	{ { 1, 10 * BS + 1, 100 * BS } },
	{ { 0, 12 * BS + 10, 100 } },
	{ { 0, 11 * BS + 3, 2 * BS }, { 1, 5 * BS + 7, 300 }, { 2, 100, 50 } },
};

static struct state st[NOPS + 1];
static u8 *opbuf[NOPS][6];
static struct sx_bdev *pristine;
static u32 xflags;		/* SX_ATOMIC_CHAIN, _TWIN or _REMAP, SX_ATOMIC_NOSYNC, or none */

/* Fill @buf with bytes of a fixed sequence seeded @seed, never zero. */
static void rfill(u8 *buf, u64 len, u64 seed)
{
	u64 i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(sxt_rand(&seed) >> 24) | 1;
}

static void state_apply(struct state *s, int f, const u8 *buf, u64 off, u64 len)
{
	VERIFY(off + len <= MAXSZ);
	memcpy(s->b[f] + off, buf, len);
	if (off + len > s->size[f])
		s->size[f] = off + len;
}

/* Write @len bytes seeded @seed at @off of @fd, and into @s. */
static void put(struct sx_mount *mp, int fd, struct state *s, int f, u64 off, u64 len, u64 seed)
{
	u8 *buf = malloc(len);

	VERIFY(buf);
	rfill(buf, len, seed);
	VERIFY(sx_pwrite(mp, fd, buf, len, off) == (s64)len);
	state_apply(s, f, buf, off, len);
	free(buf);
}

/* The pristine image and state 0. */
static void make_pristine(void)
{
	struct sx_mount *mp;
	int fd[NF], i;
	u64 k;

	pristine = sxs_mkimg(12ull << 20, BS, 1024, true);
	VERIFY(sx_mount(pristine, NULL, &mp) == 0);
	for (i = 0; i < NF; i++)
		VERIFY(sx_create(mp, names[i], 0644, &fd[i]) == 0);
	/* a: 48 blocks and a tail, a hole every 6th block */
	for (k = 0; k < 48; k++)
		if (k % 6 != 4)
			put(mp, fd[0], &st[0], 0, k * BS, BS, 100 + k);
	put(mp, fd[0], &st[0], 0, 48 * BS, 333, 99);
	/* b and z in turn: one-block extents */
	for (k = 0; k < 40; k++) {
		put(mp, fd[1], &st[0], 1, k * BS, BS, 200 + k);
		put(mp, fd[3], &st[0], 3, k * BS, BS, 300 + k);
	}
	put(mp, fd[2], &st[0], 2, 0, 500, 400);
	for (i = 0; i < NF; i++)
		sx_close(mp, fd[i]);
	VERIFY(sx_unmount(mp) == 0);
}

/* The states after each call, and the calls' buffers. */
static void make_states(void)
{
	int k, i, f;

	for (k = 0; k <= NOPS; k++)
		for (f = 0; f < NF; f++) {
			if (!st[k].b[f])
				st[k].b[f] = calloc(1, MAXSZ);
			VERIFY(st[k].b[f]);
		}
	make_pristine();
	for (k = 1; k <= NOPS; k++) {
		for (f = 0; f < NF; f++) {
			memcpy(st[k].b[f], st[k - 1].b[f], MAXSZ);
			st[k].size[f] = st[k - 1].size[f];
		}
		for (i = 0; ops[k - 1][i].len; i++) {
			const struct rng *r = &ops[k - 1][i];

			opbuf[k - 1][i] = malloc(r->len);
			VERIFY(opbuf[k - 1][i]);
			rfill(opbuf[k - 1][i], r->len, 1000 * k + i);
			state_apply(&st[k], r->f, opbuf[k - 1][i], r->off, r->len);
		}
	}
}

/* What a run reached. */
struct run {
	int	nreturned;	/* calls that returned 0 */
	int	ndurable;	/* of them, those made durable before the cut */
	bool	in_op;		/* the cut came inside a call */
	int	error;
	bool	moved;		/* call 6 moved block 11 of a (uncut runs) */
};

/* Device block of file block @fb of @fd, or 0 if unmapped or on error. */
static u64 phys_of(struct sx_mount *mp, int fd, u64 fb)
{
	struct sx_extent ext;
	u32 n = 0;

	if (sx_fiemap(mp, fd, fb * BS, BS, &ext, 1, &n) || !n || ext.ex_off > fb * BS)
		return 0;
	return (ext.ex_physical + (fb * BS - ext.ex_off)) / BS;
}

/* Call @k (1-based). */
static int one_op(struct sx_mount *mp, const int *fd, int k)
{
	struct sx_atomic_iov v[6];
	int i;

	if (k == OP_PWRITE) {
		const struct rng *r = &ops[k - 1][0];
		s64 n = sx_pwrite(mp, fd[r->f], opbuf[k - 1][0], r->len, r->off);

		if (n != (s64)r->len)
			return n < 0 ? (int)n : -EIO;
		return sx_fsync(mp, fd[r->f]);
	}
	memset(v, 0, sizeof(v));
	for (i = 0; ops[k - 1][i].len; i++) {
		v[i].ai_fd = fd[ops[k - 1][i].f];
		v[i].ai_buf = opbuf[k - 1][i];
		v[i].ai_len = ops[k - 1][i].len;
		v[i].ai_off = ops[k - 1][i].off;
	}
	if (i == 1)
		return sx_atomic_write(mp, v[0].ai_fd, v[0].ai_buf, v[0].ai_len, v[0].ai_off,
				       xflags);
	return sx_atomic_writev(mp, v, (u32)i, xflags);
}

static struct sx_mount_opts wl_opts;

static void workload(struct sx_bdev *bd, struct run *r)
{
	struct sx_mount *mp;
	int fd[NF], i, k, error;

	r->nreturned = 0;
	r->ndurable = 0;
	r->in_op = false;
	r->error = sx_mount(bd, &wl_opts, &mp);
	if (r->error)
		return;
	for (i = 0; i < NF; i++)
		fd[i] = -1;
	for (i = 0; !r->error && i < NF; i++)
		r->error = sx_open(mp, names[i], &fd[i]);
	r->moved = false;
	for (k = 1; !r->error && k <= NOPS; k++) {
		u64 before = k == NOPS ? phys_of(mp, fd[0], 11) : 0;

		r->in_op = true;
		r->error = one_op(mp, fd, k);
		if (!r->error && k == NOPS)
			r->moved = phys_of(mp, fd[0], 11) != before;
		if (!r->error) {
			r->in_op = false;
			r->nreturned = k;
			if (!(xflags & SX_ATOMIC_NOSYNC) || k == OP_PWRITE)
				r->ndurable = k;
		}
	}
	if (!r->error && (xflags & SX_ATOMIC_NOSYNC)) {
		/* one force for every call: the group */
		r->error = sx_sync(mp);
		if (!r->error)
			r->ndurable = NOPS;
	}
	for (i = 0; i < NF; i++)
		if (fd[i] >= 0)
			sx_close(mp, fd[i]);
	error = sx_unmount(mp);
	if (!r->error)
		r->error = error;
}

static int count_name(void *arg, const char *name, u64 ino)
{
	int *n = arg, i;

	for (i = 0; i < NF; i++)
		if (!strcmp(name, names[i]))
			break;
	*n += i < NF ? 1 : 100;
	return 0;
}

/* The file @f now equals state @s; a message in @msg if not. */
static bool file_is(struct sx_mount *mp, int f, const struct state *s, u8 *buf, char *msg,
		    size_t len)
{
	struct sx_stat sb;
	int fd;
	bool ok;

	if (sx_open(mp, names[f], &fd) || sx_fstat(mp, fd, &sb)) {
		snprintf(msg, len, "%s: cannot open", names[f]);
		return false;
	}
	ok = sb.st_size == s->size[f] &&
	     sx_pread(mp, fd, buf, sb.st_size, 0) == (s64)sb.st_size &&
	     !memcmp(buf, s->b[f], sb.st_size);
	if (!ok)
		snprintf(msg, len, "%s: size %llu (state %llu) or bytes differ", names[f],
			 (unsigned long long)sb.st_size, (unsigned long long)s->size[f]);
	sx_close(mp, fd);
	return ok;
}

/* All files equal one state k in the window. */
static int files_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct run *r = arg;
	int hi = r->nreturned + (r->in_op ? 1 : 0), k, f, n = 0;
	static u8 buf[MAXSZ];
	char msg[160], first[200] = "";
	bool ok = false;

	SXC_CHECK(sx_readdir(mp, count_name, &n) == 0 && n == NF, "%s: names", what);
	SXC_CHECK(file_is(mp, 3, &st[0], buf, msg, sizeof(msg)), "%s: z: %s", what, msg);
	for (k = r->ndurable; !ok && k <= hi && k <= NOPS; k++) {
		ok = true;
		for (f = 0; ok && f < 3; f++)
			ok = file_is(mp, f, &st[k], buf, msg, sizeof(msg));
		if (!ok && !first[0])
			snprintf(first, sizeof(first), "k=%d: %s", k, msg);
	}
	SXC_CHECK(ok, "%s: no state in [%d, %d] matches (%s)", what, r->ndurable, hi, first);
	return 0;
}

static u64 in_op;

/* Random and newest-only fates keep a write and drop earlier ones: a record without its data. */
static const enum sx_crash_mode all_modes[] = {
	SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR, SX_CRASH_RANDOM, SX_CRASH_NEWEST,
};

static int crash_at(void *arg, u64 w, enum sx_crash_mode mode)
{
	struct run *r = arg;
	struct sx_bdev *img = sxt_bdev_copy(pristine);
	struct sx_bdev *cbd = sxc_cut_dev(img, w * 7 + mode, w, mode, NULL);
	char what[96];
	int ret = -1;

	workload(cbd, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "write %llu %s (after %d calls%s)",
		 (unsigned long long)w, sxf_mode_name(mode), r->nreturned,
		 r->in_op ? ", in a call" : "");
	in_op += r->in_op;
	if (r->error == 0) {
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
	} else {
		ret = sxc_recover_verify(img, 0, files_ok, r, what);
		/* long: cut the recovery of a cut inside the vectored write too */
		if (ret >= 0 && sxc_level() == SXC_LONG && r->in_op && r->nreturned <= 2) {
			struct sxc_cuts rc = { .step = 3 };

			sxc_cut_recovery(img, &rc, w, 0, files_ok, r, ret);
		}
	}
	sx_bdev_destroy(img);
	return ret;
}

int main(void)
{
	struct sxc_cuts cuts = { 0 };
	struct sx_crashdev_stats cs;
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct run r;
	u64 points = 0;
	int k, f, i, mode;

	sxc_start();
	cuts.step = sxc_pick(4, 1, 1);
	cuts.modes = all_modes;
	cuts.nmodes = ARRAY_SIZE(all_modes);
	cuts.per_point = sxc_pick(1, 5, 5);
	make_states();
	for (mode = 0; mode < 32; mode++) {
		if ((mode & 2) && (mode & 8))
			continue;	/* the intents always go through twins */
		if ((mode & 16) && (mode & 10))
			continue;	/* neither moves the files' own blocks */
		wl_opts.mo_flags = (mode & 1) ? SX_MOUNT_LOG_EACH : 0;
		xflags = ((mode & 2) ? SX_ATOMIC_CHAIN : 0) | ((mode & 4) ? SX_ATOMIC_NOSYNC : 0) |
			 ((mode & 8) ? SX_ATOMIC_TWIN : 0) | ((mode & 16) ? SX_ATOMIC_REMAP : 0);
		printf("%s%s%s%s%s:\n", (mode & 1) ? "a log record per transaction (LOG_EACH)" :
		       "the log's default queue", (mode & 2) ? ", every write by intents" : "",
		       (mode & 8) ? ", every write through twins" : "",
		       (mode & 16) ? ", small writes into new blocks" : "",
		       (mode & 4) ? ", not synced until one sync at the end" : "");
		img = sxt_bdev_copy(pristine);
		cbd = sxc_cut_dev(img, 1, 0, 0, &cd);
		workload(cbd, &r);
		sx_crashdev_get_stats(cd, &cs);
		sx_bdev_destroy(cbd);
		if (r.error || r.nreturned != NOPS) {
			sxc_fail("the uncut workload: %s, %d calls", sx_strerror(r.error),
				 r.nreturned);
		} else if (r.moved != !!(xflags & (SX_ATOMIC_REMAP | SX_ATOMIC_TWIN |
							 SX_ATOMIC_CHAIN))) {
			/* only the own path leaves call 6's blocks where they were */
			sxc_fail("the uncut workload: call 6 %s block 11 of a", r.moved ? "moved" :
				 "did not move");
		} else {
			sxc_tally(sxc_recover_verify(img, 0, files_ok, &r, "uncut run"));
		}
		sx_bdev_destroy(img);
		printf("%d calls, %llu writes, %llu flushes; cutting every %llu\n", NOPS,
		       (unsigned long long)cs.cs_writes, (unsigned long long)cs.cs_flushes,
		       (unsigned long long)cuts.step);
		cuts.last = cs.cs_writes;
		points += sxc_cut_writes(&cuts, crash_at, &r);
	}
	printf("crash points: %llu (%llu inside a call)\n", (unsigned long long)points,
	       (unsigned long long)in_op);
	for (k = 0; k <= NOPS; k++)
		for (f = 0; f < NF; f++)
			free(st[k].b[f]);
	for (k = 0; k < NOPS; k++)
		for (i = 0; i < 6; i++)
			free(opbuf[k][i]);
	sx_bdev_destroy(pristine);
	return sxc_end();
}
