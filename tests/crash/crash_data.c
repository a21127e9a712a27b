// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Crash tests of the data path.
 *
 * A workload of two files mixes writes (scattered single blocks that push
 * the extent map of a file past its inline capacity into a B+tree, then
 * random writes of any alignment), clones of ranges, copy-on-write over
 * shared blocks, truncates up and down, fallocate, punches that bring the
 * map back inline, and fsyncs.  The model records each file after every
 * operation.  The power is cut at every device write, with volatile writes
 * kept, dropped or torn (and a sample of random fates).  After recovery:
 *  - each file equals its state after some operation no older than its last
 *    completed fsync, or lies between the states before and after one
 *    operation since then (every byte from one of the two: an operation is
 *    a chain of transactions, so one that was not durable may survive in
 *    part, those before it whole), or, since overwrites in place bypass
 *    the journal, has every byte and its size from some state since its
 *    last fsync;
 *  - the checker is clean (every block owned once, or as its refcount says);
 *  - a second recovery changes no byte.
 * Then ENOSPC is injected at every block allocation and an I/O error at
 * every write and flush (once and forever) and at a sample of reads: each
 * gives a clean error, and the image, remounted, passes the same checks.
 *
 * A second, small workload frees blocks and writes data into new blocks
 * right after, on a filesystem with room to spare and on one so full that
 * the only free blocks are the ones just freed: cut at every write, the
 * file that gave the blocks up never shows the new data (the allocator
 * keeps such blocks busy until their free is durable, and takes them only
 * after forcing the log).
 *
 * The normal level runs seed 1 and the seeds that once failed;
 * SX_CRASH_LEVEL=quick runs seed 1 alone and samples every 4th write; long
 * adds seeds.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxcrash.h"

#define BSIZE		1024u
#define NFILES		2
#define MAXSZ		(160u * 1024)
#define NOPS		90
#define IMG_SIZE	(6ull << 20)

struct fstate {
	u32	size;
	u8	*data;		/* MAXSZ bytes, zero past size */
};

struct run {
	struct fstate	st[NOPS + 1][NFILES];	/* after op k (0: before the first) */
	int		done;			/* ops completed */
	int		dur[NFILES];		/* op after which each file was last synced */
	int		error;
};

static u64 enospc_points, io_error_points, n_bytewise;
static u64 seed = 1;
static struct sx_bdev *pristine;
static const char *const names[NFILES] = { "a", "b" };

static struct run *run_new(void)
{
	struct run *r = calloc(1, sizeof(*r));
	int k, f;

	for (k = 0; k <= NOPS; k++)
		for (f = 0; f < NFILES; f++)
			r->st[k][f].data = calloc(1, MAXSZ);
	return r;
}

static void run_free(struct run *r)
{
	int k, f;

	for (k = 0; k <= NOPS; k++)
		for (f = 0; f < NFILES; f++)
			free(r->st[k][f].data);
	free(r);
}

/* One operation of the workload, decided by (seed, k) alone. */
struct op {
	enum { OP_WRITE, OP_CLONE, OP_TRUNC, OP_FALLOC, OP_PUNCH, OP_FSYNC } kind;
	int	f, src;
	u32	off, len, soff;
	u8	byte;
};

static void make_op(int k, struct op *o)
{
	u64 s = seed * 0x9e3779b97f4a7c15ull + (u64)k * 0xbf58476d1ce4e5b9ull + 1;
	u64 x;

	memset(o, 0, sizeof(*o));
	sxt_rand(&s);
	o->byte = (u8)(k * 37 + 1);
	if (k < 48) {
		/* one block at every other block: 48 mappings, past the inline 35 */
		o->kind = k % 12 == 11 ? OP_FSYNC : OP_WRITE;
		o->f = 0;
		o->off = (u32)k * 2 * BSIZE;
		o->len = BSIZE;
		return;
	}
	if (k == 48) {
		o->kind = OP_CLONE;
		o->f = 1;
		o->src = 0;
		o->soff = 0;
		o->off = 4 * BSIZE;
		o->len = 40 * BSIZE;
		return;
	}
	if (k >= 49 && k < 60) {
		/* punch most of the map away: back under half the inline capacity */
		o->kind = k % 5 == 4 ? OP_FSYNC : OP_PUNCH;
		o->f = 0;
		o->off = (u32)(k - 49) * 8 * BSIZE;
		o->len = 7 * BSIZE;
		return;
	}
	x = sxt_rand(&s);
	o->f = (int)(x & 1);
	o->src = 1 - o->f;
	switch ((x >> 1) % 10) {
	case 0: case 1: case 2: case 3:
		o->kind = OP_WRITE;
		o->off = (u32)(sxt_rand(&s) % (MAXSZ - 8192));
		o->len = 1 + (u32)(sxt_rand(&s) % 8191);
		break;
	case 4:
		o->kind = OP_CLONE;
		o->soff = (u32)(sxt_rand(&s) % 64) * BSIZE;
		o->off = (u32)(sxt_rand(&s) % 64) * BSIZE;
		o->len = (1 + (u32)(sxt_rand(&s) % 32)) * BSIZE;
		break;
	case 5:
		o->kind = OP_TRUNC;
		o->len = (u32)(sxt_rand(&s) % MAXSZ);
		break;
	case 6:
		o->kind = OP_FALLOC;
		o->off = (u32)(sxt_rand(&s) % (MAXSZ - 16384));
		o->len = 1 + (u32)(sxt_rand(&s) % 16383);
		break;
	case 7:
		o->kind = OP_PUNCH;
		o->off = (u32)(sxt_rand(&s) % (MAXSZ - 16384));
		o->len = 1 + (u32)(sxt_rand(&s) % 16383);
		break;
	default:
		o->kind = OP_FSYNC;
		break;
	}
}

/* Apply @o to the model state @st (a copy of the previous one). */
static void model_apply(struct fstate *st, const struct op *o)
{
	struct fstate *d = &st[o->f], *s = &st[o->src];
	u32 end;

	switch (o->kind) {
	case OP_WRITE:
		memset(d->data + o->off, o->byte, o->len);
		if (o->off + o->len > d->size)
			d->size = o->off + o->len;
		break;
	case OP_CLONE:
		/* clone_range reads past EOF of the source as nothing to share */
		end = sx_min(o->soff + o->len, s->size);
		if (o->soff >= end)
			break;
		memmove(d->data + o->off, s->data + o->soff, end - o->soff);
		if (o->off + (end - o->soff) > d->size)
			d->size = o->off + (end - o->soff);
		break;
	case OP_TRUNC:
		if (o->len < d->size)
			memset(d->data + o->len, 0, d->size - o->len);
		d->size = o->len;
		break;
	case OP_FALLOC:
		/* like fallocate(2) without KEEP_SIZE: the size grows, reads give zeroes */
		if (o->off + o->len > d->size)
			d->size = o->off + o->len;
		break;
	case OP_PUNCH:
		end = sx_min(o->off + o->len, d->size);
		if (o->off < end)
			memset(d->data + o->off, 0, end - o->off);
		break;
	case OP_FSYNC:
		break;
	}
}

/*
 * Run the operation on the filesystem.  A clone whose source range ends
 * past EOF is cut to EOF and to whole blocks, so that model and filesystem
 * agree on what it means.
 */
static int fs_apply(struct sx_mount *mp, const int *fds, struct op *o, const struct fstate *st)
{
	static u8 buf[8192];
	s64 n;

	switch (o->kind) {
	case OP_WRITE:
		memset(buf, o->byte, o->len);
		n = sx_pwrite(mp, fds[o->f], buf, o->len, o->off);
		return n < 0 ? (int)n : n == o->len ? 0 : -EIO;
	case OP_CLONE: {
		u32 ssz = st[o->src].size, len = o->len;

		if (o->soff >= ssz) {
			o->len = 0;
			return 0;
		}
		if (o->soff + len > ssz)
			len = (ssz - o->soff) / BSIZE * BSIZE;
		o->len = len;
		if (len == 0)
			return 0;
		return sx_clone_range(mp, fds[o->f], o->off, fds[o->src], o->soff, len);
	}
	case OP_TRUNC:
		return sx_truncate(mp, fds[o->f], o->len);
	case OP_FALLOC:
		return sx_fallocate(mp, fds[o->f], o->off, o->len);
	case OP_PUNCH:
		return sx_punch(mp, fds[o->f], o->off, o->len);
	case OP_FSYNC:
		return sx_fsync(mp, fds[o->f]);
	}
	return -EINVAL;
}

static void setup(void)
{
	struct sx_mount *mp;
	int f, fd;

	/*
	 * A 1 MiB log (largest transaction 128 KiB): with 256 blocks the
	 * largest transaction is 32 KiB, less than a clone's chain reserves
	 * with 1 KiB blocks (about 68 KiB, reflink.c), so the clone at op 48
	 * failed with EINVAL before any crash point was reached.
	 */
	pristine = sxt_memfs(IMG_SIZE, BSIZE, 1024);
	mp = sxt_mount(pristine);
	for (f = 0; f < NFILES; f++) {
		VERIFY(sx_create(mp, names[f], 0644, &fd) == 0);
		VERIFY(sx_close(mp, fd) == 0);
	}
	VERIFY(sx_unmount(mp) == 0);
}

/* Run the workload on @bd, recording the model into @r. */
static void workload(struct sx_bdev *bd, struct run *r)
{
	struct sx_mount *mp;
	int fds[NFILES], k, f, error;

	r->done = 0;
	r->error = 0;
	for (f = 0; f < NFILES; f++) {
		r->dur[f] = 0;
		r->st[0][f].size = 0;
		memset(r->st[0][f].data, 0, MAXSZ);
	}
	error = sx_mount(bd, NULL, &mp);
	if (error) {
		r->error = error;
		return;
	}
	for (f = 0; f < NFILES && !error; f++)
		error = sx_open(mp, names[f], &fds[f]);
	for (k = 1; k <= NOPS && !error; k++) {
		struct op o;

		make_op(k - 1, &o);
		for (f = 0; f < NFILES; f++) {
			r->st[k][f].size = r->st[k - 1][f].size;
			memcpy(r->st[k][f].data, r->st[k - 1][f].data, MAXSZ);
		}
		error = fs_apply(mp, fds, &o, r->st[k - 1]);
		model_apply(r->st[k], &o);
		if (error)
			break;
		r->done = k;
		if (o.kind == OP_FSYNC)
			r->dur[o.f] = k;
	}
	if (!error) {
		error = sx_unmount(mp);
		if (!error)
			for (f = 0; f < NFILES; f++)
				r->dur[f] = r->done;
	} else {
		sx_unmount(mp);
	}
	r->error = error;
}

/* True if file @f's contents (@size, @data) match the state after op @k. */
static bool same(const struct run *r, int k, int f, u32 size, const u8 *data)
{
	return r->st[k][f].size == size && !memcmp(r->st[k][f].data, data, size);
}

/*
 * Every byte from the state before or after the running op @k.  An op that
 * grows the file (a write or a clone past EOF) is a chain of transactions,
 * each mapping a piece and moving the size over it (as XFS does), so a
 * crash may leave a size in between: then what lies between the old and
 * the new size is the op's own bytes, never anything else.
 */
static bool between(const struct run *r, int k, int f, u32 size, const u8 *data)
{
	const struct fstate *a = &r->st[k - 1][f], *b = &r->st[k][f];
	u32 i, lim = size;

	if (size != a->size && size != b->size) {
		if (size < a->size || size > b->size)
			return false;
		if (memcmp(data + a->size, b->data + a->size, size - a->size))
			return false;
		lim = a->size;
	}
	for (i = 0; i < lim; i++)
		if (data[i] != a->data[i] && data[i] != b->data[i])
			return false;
	return true;
}

/* Sizes and bytes each from some state in [dur, done + 1] of file @f. */
static bool bytewise(const struct run *r, int f, u32 size, const u8 *data)
{
	int lo = r->dur[f], hi = sx_min(r->done + 1, NOPS), k;
	u32 i, smin = ~0u, smax = 0;

	for (k = lo; k <= hi; k++) {
		smin = sx_min(smin, r->st[k][f].size);
		smax = sx_max(smax, r->st[k][f].size);
	}
	if (size < smin || size > smax)
		return false;
	for (i = 0; i < size; i++) {
		for (k = lo; k <= hi; k++)
			if (data[i] == r->st[k][f].data[i])
				break;
		if (k > hi)
			return false;
	}
	return true;
}

/* Read file @f whole. */
static int read_file(struct sx_mount *mp, int f, u8 *data, u32 *size)
{
	struct sx_stat st;
	int fd, error;
	s64 n;

	error = sx_open(mp, names[f], &fd);
	if (error)
		return error;
	error = sx_fstat(mp, fd, &st);
	if (!error && st.st_size > MAXSZ)
		error = -EFBIG;
	if (!error) {
		*size = (u32)st.st_size;
		memset(data, 0, MAXSZ);
		n = sx_pread(mp, fd, data, *size, 0);
		if (n != (s64)*size)
			error = n < 0 ? (int)n : -EIO;
	}
	sx_close(mp, fd);
	return error;
}

/* Each file in a state the window of @r allows. */
static int files_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct run *r = arg;
	static u8 data[MAXSZ];
	int error, f, k;

	for (f = 0; f < NFILES; f++) {
		u32 size = 0;
		bool ok = false;

		error = read_file(mp, f, data, &size);
		SXC_CHECK(error == 0, "%s: reading %s: %s", what, names[f], sx_strerror(error));
		for (k = r->dur[f]; k <= r->done && !ok; k++)
			ok = same(r, k, f, size, data);
		/*
		 * An operation is a chain of transactions: one that was not yet
		 * durable may have reached the log in part, the ones before it
		 * whole and none after it.
		 */
		for (k = r->dur[f] + 1; k <= r->done + 1 && k <= NOPS && !ok; k++)
			ok = between(r, k, f, size, data);
		/*
		 * Overwrites of blocks a file owns alone go in place, outside
		 * the journal: those of writes not yet synced may reach the disk
		 * in any order relative to the metadata.  Then each byte must
		 * still come from a state since the last sync, none older.
		 */
		if (!ok) {
			ok = bytewise(r, f, size, data);
			n_bytewise += ok;
		}
		SXC_CHECK(ok, "%s: file %s (size %u) matches no state in [%d, %d]", what, names[f],
			  size, r->dur[f], r->done);
	}
	return 0;
}

/* Recover @bd and check files, checker and idempotence. */
static int recover_and_verify(struct sx_bdev *bd, const struct run *r, const char *what)
{
	return sxc_recover_verify(bd, 0, files_ok, r, what);
}

static int crash_at(void *arg, u64 w, enum sx_crash_mode mode)
{
	struct run *r = arg;
	struct sx_bdev *img = sxt_bdev_copy(pristine);
	struct sx_bdev *cbd = sxc_cut_dev(img, seed * 977 + w, w, mode, NULL);
	char what[64];
	int ret = -1;

	workload(cbd, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "seed %llu write %llu %s", (unsigned long long)seed,
		 (unsigned long long)w, sxf_mode_name(mode));
	if (r->error == 0)
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
	else
		ret = recover_and_verify(img, r, what);
	sx_bdev_destroy(img);
	return ret;
}

/* ENOSPC from the @nth allocation on; false once the workload never reaches it. */
static bool enospc_at(struct run *r, u64 nth)
{
	struct sx_bdev *img = sxt_bdev_copy(pristine);
	char what[64];
	bool hit;

	VERIFY(sx_fault_arm("alloc_extent", nth, true, -ENOSPC) == 0);
	workload(img, r);
	sx_fault_disarm_all();
	hit = r->error != 0;
	snprintf(what, sizeof(what), "ENOSPC from allocation %llu", (unsigned long long)nth);
	if (hit && r->error != -ENOSPC && r->error != -EIO)
		sxc_fail("%s: the workload saw %s", what, sx_strerror(r->error));
	else if (hit && sxc_tally(recover_and_verify(img, r, what)) == 0)
		enospc_points++;
	sx_bdev_destroy(img);
	return hit;
}

static void io_error_at(struct run *r, enum sx_io_kind kind, u64 nth, bool forever)
{
	static const char *const kinds[] = { "read", "write", "flush" };
	struct sx_bdev *img = sxt_bdev_copy(pristine), *cbd;
	struct sx_crashdev *cd;
	char what[64];

	cbd = sxc_cut_dev(img, 5, 0, 0, &cd);
	sx_crashdev_fail(cd, kind, nth, forever, -EIO);
	workload(cbd, r);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "%s error %llu %s", kinds[kind], (unsigned long long)nth,
		 forever ? "forever" : "once");
	if (r->error == 0 && kind != SX_IO_READ)
		sxc_fail("%s: the error was not reported", what);
	else if (sxc_tally(recover_and_verify(img, r, what)) == 0)
		io_error_points++;
	sx_bdev_destroy(img);
}


/* ---------------------------------------------------------------- reuse */

#define REUSE_IMG	(2ull << 20)
#define REUSE_OLD	0x11	/* the old file's bytes */
#define REUSE_NEW	0x22	/* written into the new file */
#define REUSE_FALLOC	0x33	/* written into its fallocated range */

/* The reuse workload on one image: how full it is, what it did. */
struct reuse {
	struct sx_bdev	*pristine;
	u32		free_left;	/* blocks free besides what the punches free */
	u32		old_size;
	int		error;
	const char	*name;
};

static u8 reuse_buf[64 * BSIZE];

/* "old" fills the image up to @free_left free blocks; "new" is empty. */
static void reuse_setup(struct reuse *ru)
{
	struct sx_mount *mp;
	u64 off = 0, nfree;
	int fd;

	ru->pristine = sxt_memfs(REUSE_IMG, BSIZE, 1024);
	mp = sxt_mount(ru->pristine);
	VERIFY(sx_create(mp, "new", 0644, &fd) == 0);
	VERIFY(sx_close(mp, fd) == 0);
	VERIFY(sx_create(mp, "old", 0644, &fd) == 0);
	memset(reuse_buf, REUSE_OLD, sizeof(reuse_buf));
	for (;;) {
		u64 n;

		nfree = sx_alloc_free_blocks(mp);
		/* a block or two may go to the map as it grows: stop short */
		if (nfree <= ru->free_left + 4)
			break;
		n = sx_min((u64)ARRAY_SIZE(reuse_buf) / BSIZE, nfree - ru->free_left - 4);
		VERIFY(sx_pwrite(mp, fd, reuse_buf, n * BSIZE, off) == (s64)(n * BSIZE));
		off += n * BSIZE;
	}
	ru->old_size = (u32)off;
	VERIFY(sx_close(mp, fd) == 0);
	VERIFY(sx_unmount(mp) == 0);
	mp = sxt_mount(ru->pristine);
	ru->free_left = (u32)sx_alloc_free_blocks(mp);
	VERIFY(sx_unmount(mp) == 0);
}

/*
 * Punch 40 blocks out of "old", then write 32 blocks into "new" (more
 * than were free before the punch); punch 24 more, fallocate 16 blocks of
 * "new" and write into them; fsync "new"; unmount.
 */
static void reuse_workload(struct sx_bdev *bd, struct reuse *ru)
{
	struct sx_mount *mp;
	int fo = -1, fn = -1, error;

	error = sx_mount(bd, NULL, &mp);
	if (error) {
		ru->error = error;
		return;
	}
	error = sx_open(mp, "old", &fo);
	if (!error)
		error = sx_open(mp, "new", &fn);
	if (!error)
		error = sx_punch(mp, fo, 8 * BSIZE, 40 * BSIZE);
	if (!error) {
		memset(reuse_buf, REUSE_NEW, 32 * BSIZE);
		error = sx_pwrite(mp, fn, reuse_buf, 32 * BSIZE, 0) == 32 * BSIZE ? 0 : -EIO;
	}
	if (!error)
		error = sx_punch(mp, fo, 64 * BSIZE, 24 * BSIZE);
	if (!error)
		error = sx_fallocate(mp, fn, 32 * BSIZE, 16 * BSIZE);
	if (!error) {
		memset(reuse_buf, REUSE_FALLOC, 16 * BSIZE);
		error = sx_pwrite(mp, fn, reuse_buf, 16 * BSIZE, 32 * BSIZE) == 16 * BSIZE ?
			0 : -EIO;
	}
	if (!error)
		error = sx_fsync(mp, fn);
	if (!error)
		error = sx_unmount(mp);
	else
		sx_unmount(mp);
	ru->error = error;
}

/* "old" holds its own bytes or zeroes (punched), "new" its own or zeroes. */
static int reuse_ok(struct sx_mount *mp, const void *arg, const char *what)
{
	const struct reuse *ru = arg;
	static u8 data[REUSE_IMG];
	struct sx_stat st;
	const char *name[2] = { "old", "new" };
	int f, fd, error;
	u64 i;
	s64 n;

	for (f = 0; f < 2; f++) {
		error = sx_open(mp, name[f], &fd);
		SXC_CHECK(error == 0, "%s: open %s: %s", what, name[f], sx_strerror(error));
		error = sx_fstat(mp, fd, &st);
		SXC_CHECK(error == 0 && st.st_size <= sizeof(data), "%s: stat %s", what, name[f]);
		SXC_CHECK(f == 1 || st.st_size == ru->old_size, "%s: old is %llu bytes, not %u",
			  what, (unsigned long long)st.st_size, ru->old_size);
		n = sx_pread(mp, fd, data, st.st_size, 0);
		sx_close(mp, fd);
		SXC_CHECK(n == (s64)st.st_size, "%s: reading %s: %lld", what, name[f], (long long)n);
		for (i = 0; i < st.st_size; i++) {
			u8 b = data[i];

			if (f == 0)
				SXC_CHECK(b == REUSE_OLD || (b == 0 && i >= 8 * BSIZE),
					  "%s: old holds %#x at %llu: another file's data in a block it still maps",
					  what, b, (unsigned long long)i);
			else
				SXC_CHECK(b == 0 || b == (i < 32 * BSIZE ? REUSE_NEW : REUSE_FALLOC),
					  "%s: new holds %#x at %llu", what, b, (unsigned long long)i);
		}
	}
	return 0;
}

static int reuse_cut(void *arg, u64 w, enum sx_crash_mode mode)
{
	struct reuse *ru = arg;
	struct sx_bdev *img = sxt_bdev_copy(ru->pristine);
	struct sx_bdev *cbd = sxc_cut_dev(img, 31 * w + 7, w, mode, NULL);
	char what[80];
	int ret = -1;

	reuse_workload(cbd, ru);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "reuse (%s) write %llu %s", ru->name,
		 (unsigned long long)w, sxf_mode_name(mode));
	if (ru->error == 0)
		fprintf(stderr, "FAIL %s: the workload did not see the power cut\n", what);
	else
		ret = sxc_recover_verify(img, 0, reuse_ok, ru, what);
	sx_bdev_destroy(img);
	return ret;
}

/* The reuse workload, with @free_left blocks free besides the punched ones. */
static u64 reuse_run(const char *name, u32 free_left, u64 step)
{
	struct reuse ru = { .free_left = free_left, .name = name };
	struct sxc_cuts cuts = { .step = step, .per_point = 3 };
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	u64 points;

	reuse_setup(&ru);
	img = sxt_bdev_copy(ru.pristine);
	cbd = sxc_cut_dev(img, 1, 0, 0, &cd);
	reuse_workload(cbd, &ru);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(cbd);
	if (ru.error) {
		sxc_fail("reuse (%s): the workload fails without a crash: %s", name,
			 sx_strerror(ru.error));
		points = 0;
	} else {
		sxc_tally(sxc_recover_verify(img, 0, reuse_ok, &ru, "reuse, no crash"));
		printf("reuse (%s, %u blocks free): %llu writes, %llu flushes\n", name,
		       ru.free_left, (unsigned long long)st.cs_writes,
		       (unsigned long long)st.cs_flushes);
		cuts.last = st.cs_writes;
		points = sxc_cut_writes(&cuts, reuse_cut, &ru);
	}
	sx_bdev_destroy(img);
	sx_bdev_destroy(ru.pristine);
	return points;
}

int main(void)
{
	/*
	 * The seeds make check runs: 1, then every seed that ever failed, with
	 * what it found (the normal level runs these too), then the rest of
	 * the long level's.
	 */
	static const u64 fixed[] = {
		1,
		/*
		 * An overwrite in place reached the disk before the change
		 * that had left its block with one owner, and the crash lost
		 * that change: the other file mapped the block again and
		 * read the bytes written into it.  Here a's copy-on-write of
		 * a block it shared with b, then b's write into the block
		 * (a read b's bytes), and a clone from a over blocks of b,
		 * one shared with a, then a's write into that one (b read
		 * a's bytes).  Fixed by sx_refcount_unshare_barrier().
		 */
		9096498735981781502ull, 5588878758647622971ull,
		/* seeds that never failed, for breadth */
		2, 3, 4,
	};
	static const enum sx_crash_mode random_mode[] = { SX_CRASH_RANDOM };
	const u64 *seeds;
	struct run *r = run_new();
	struct sx_bdev *img, *cbd;
	struct sx_crashdev *cd;
	struct sx_crashdev_stats st;
	u64 k, step, nseeds, si, crash_points = 0;

	/*
	 * Each crash point copies the 6 MiB image and frees the copies: left
	 * to itself, malloc hands that memory back at every free and the
	 * kernel faults it in and clears it again, which cost more CPU than
	 * the rest of the test.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);

	sxc_start();
	step = sxc_pick(4, 1, 1);
	nseeds = sxt_seeds("crash_data", fixed, sxc_pick(1, 3, ARRAY_SIZE(fixed)), &seeds);
	setup();
	for (si = 0; si < nseeds; si++) {
		struct sxc_cuts cuts = { .step = step, .per_point = 3 };
		struct sxc_cuts random_cuts = { .step = 3 * step, .modes = random_mode,
						.nmodes = 1 };

		seed = seeds[si];
		img = sxt_bdev_copy(pristine);
		cbd = sxc_cut_dev(img, 1, 0, 0, &cd);
		workload(cbd, r);
		sx_crashdev_get_stats(cd, &st);
		sx_bdev_destroy(cbd);
		if (r->error || r->done != NOPS) {
			sxc_fail("seed %llu: the workload fails without a crash: %s at op %d",
				 (unsigned long long)seed, sx_strerror(r->error), r->done + 1);
			sx_bdev_destroy(img);
			break;
		}
		sxc_tally(recover_and_verify(img, r, "no crash"));
		sx_bdev_destroy(img);
		printf("seed %llu: %d operations, %llu writes, %llu flushes, %llu reads\n",
		       (unsigned long long)seed, NOPS, (unsigned long long)st.cs_writes,
		       (unsigned long long)st.cs_flushes, (unsigned long long)st.cs_reads);

		cuts.last = random_cuts.last = st.cs_writes;
		crash_points += sxc_cut_writes(&cuts, crash_at, r);
		crash_points += sxc_cut_writes(&random_cuts, crash_at, r);
		for (k = 1; enospc_at(r, k); k += step)
			;
		for (k = 1; k <= st.cs_writes; k += step) {
			io_error_at(r, SX_IO_WRITE, k, false);
			io_error_at(r, SX_IO_WRITE, k, true);
		}
		for (k = 1; k <= st.cs_flushes; k += step) {
			io_error_at(r, SX_IO_FLUSH, k, false);
			io_error_at(r, SX_IO_FLUSH, k, true);
		}
		for (k = 1; k <= st.cs_reads; k += 5 * step)
			io_error_at(r, SX_IO_READ, k, true);
	}
	/* room to spare, then nothing free but what the punches free */
	crash_points += reuse_run("room", 1000, step);
	crash_points += reuse_run("full", 4, step);
	printf("crash points: %llu; ENOSPC points: %llu; I/O error points: %llu\n",
	       (unsigned long long)crash_points, (unsigned long long)enospc_points,
	       (unsigned long long)io_error_points);
	printf("files that matched only byte by byte (unsynced in-place overwrites): %llu\n",
	       (unsigned long long)n_bytewise);
	run_free(r);
	sx_bdev_destroy(pristine);
	return sxc_end();
}
