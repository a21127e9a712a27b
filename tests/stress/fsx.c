// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fsx: a model-based random test of the data path, after the fsx of
 * xfstests, with power cuts.
 *
 * An in-memory model holds the contents and size of several files.  Random
 * operations run on the filesystem and on the model: pwrite, pread (every
 * read checked against the model), truncate up and down, fallocate, punch,
 * clone_range, swap_file_range, fsync, sync, close and reopen, and
 * whole-file checks.  Now and then the power is cut by the crash-emulating
 * device, at a random device write (mid-operation) or between operations,
 * keeping, dropping, tearing or randomly losing the writes that were not yet
 * durable.  After recovery, every file that was synced (fsync of it, or
 * sync) since its last change must hold exactly its contents and size at
 * that sync; the checker must be clean; then the model adopts what the files
 * hold and the run goes on.  The run is split into phases of different block
 * sizes.
 *
 * Swaps pick two files or two ranges of one file, random offsets and
 * lengths (mostly valid, some ending at EOF in a partial block, some
 * deliberately invalid) and random flags; sxswapmodel.c says what each must
 * return and how the files change.  Phases alternate between images with
 * the atomic_swap feature (every swap atomic: NONATOMIC only permits
 * otherwise) and images without it (only NONATOMIC swaps run, the others
 * are refused with EOPNOTSUPP).  A swap of two synced files is not synced
 * itself until a sync or an fsync of either file, and until then a power cut
 * may leave it either way: after an atomic swap both files must be all old
 * or all new, and the same one of the two; after a non-atomic one each pair
 * of blocks of the two ranges must be old or exchanged (never one side
 * only), everything outside the ranges old, each size between its old and
 * its new value.
 *
 * The engine must say so when it shuts down: no operation may succeed on a
 * shut-down mount, or shut it down and still report success, and an
 * unmount that fails prints the reason the engine recorded.
 *
 * SX_FSX_OPS=N (make FSX_OPS=N) sets the number of operations per seed
 * (default 100000).  Without SX_TEST_SEED the run goes through the fixed
 * seeds below (make check is deterministic); with it, that seed only (make
 * soak passes fresh ones).  Each seed is printed before it runs.  A failure
 * prints the seed, the operation number and the last operations, and, with
 * SX_FSX_SAVE=PATH, writes the image as it is then to PATH for replay.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxswap.h"
#include "sxswapmodel.h"

#define NFILES		4
#define MAXLEN		(256u * 1024)	/* largest file the model makes */
#define MAXOP		(64u * 1024)	/* largest single write/read */
#define DEV_SIZE	(48ull << 20)
#define HIST		32
#define S64MAX		((s64)(~0ull >> 1))

/*
 * The seeds make check runs.  Every seed that ever failed stays here, with
 * what it found.
 */
static const u64 fixed_seeds[] = {
	/*
	 * Issue 14: a power cut armed a few device writes ahead did not fire
	 * before the phase ended, then fired in the phase's final unmount,
	 * which fsx took for an engine failure (block sizes 4096, 512, 2048,
	 * 512).  fsx now treats it as a power cut in the unmount.
	 */
	22073773218ull, 2015, 2033, 2039,
	/* seeds that never failed, for breadth */
	1, 0x5eed5eedull,
};

/* One file of the model. */
struct mfile {
	char	name[16];
	int	fd;
	u8	*data;			/* MAXLEN bytes; zero past size */
	u64	size;
	u8	*dur;			/* contents at the last sync since a change */
	u64	dur_size;
	bool	clean;			/* synced since its last change */
	/*
	 * A swap made after the last sync, of files that were clean before
	 * it: a power cut may show the contents before it (dur) or after it
	 * (alt), or with a non-atomic swap a mixture block pair by block pair.
	 */
	bool	has_alt;
	u8	*alt;
	u64	alt_size;
	u64	swap_id;		/* the last swap the file took part in */
	int	partner;		/* the other file of that swap (itself if one) */
	bool	partial;		/* non-atomic: may stop anywhere */
	u64	blk, pblk, nblk;	/* its range and the partner's, in blocks */
	int	match;			/* after a cut: M_OLD | M_NEW that it equals */
};

#define M_OLD	1
#define M_NEW	2

static struct mfile files[NFILES];
static struct sx_bdev *lower, *bd;
static struct sx_crashdev *cd;
static struct sx_mount *mp;
static u64 seed, rng, opno, nops;
static const char *save_path;		/* SX_FSX_SAVE: where a failure writes the image */
static char shutdown_msg[512];		/* the engine's last shutdown or unmount error */
static u32 bsize;
static u8 *rbuf, *wbuf;
static bool have_clone = true;
static char hist[HIST][160];
static u32 nhist;

static bool atomic_fs;			/* this phase's image has atomic_swap */
static u64 swap_serial;
static u8 *disk[NFILES];		/* what each file holds after a cut */
static u64 disk_size[NFILES];

/* Figures for the closing line. */
static u64 n_ops[16], n_cut_write, n_cut_now, n_recover_cut, n_cut_unmount, n_checked, n_short;
/* swaps that ran, by kind */
static u64 n_sw_atomic, n_sw_nonatomic, n_sw_zero, n_sw_same, n_sw_toeof, n_sw_full,
	   n_sw_fresh, n_sw_parteof, n_sw_nofit;
/* swaps refused as the model said, by errno */
static u64 n_sw_einval, n_sw_edom, n_sw_ebusy, n_sw_eopnotsupp;
/* power cuts in a swap, and what the swaps not yet synced showed after a cut */
static u64 n_sw_cut, n_sw_old, n_sw_new, n_sw_either, n_sw_mixed, n_sw_done, n_sw_unmoved;

enum {
	OP_WRITE, OP_READ, OP_TRUNC, OP_FALLOC, OP_PUNCH, OP_CLONE, OP_SWAP, OP_FSYNC, OP_SYNC,
	OP_REOPEN, OP_VERIFY, OP_NR
};
static const char *const op_names[OP_NR] = {
	"pwrite", "pread", "truncate", "fallocate", "punch", "clone_range", "swap_range",
	"fsync", "sync", "reopen", "verify",
};
/* relative weights */
static const u32 op_weight[OP_NR] = { 30, 22, 8, 6, 7, 6, 6, 4, 1, 3, 2 };

/* A random number below @n (n > 0). */
static u64 rnd(u64 n)
{
	return sxt_rand(&rng) % n;
}

/* Record what the current operation is, for the report of a failure. */
static void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;
	char *h = hist[nhist++ % HIST];
	int n;

	n = snprintf(h, sizeof(hist[0]), "%llu: ", (unsigned long long)opno);
	va_start(ap, fmt);
	vsnprintf(h + n, sizeof(hist[0]) - (size_t)n, fmt, ap);
	va_end(ap);
}

/* With SX_FSX_SAVE, write the image as it is now, for replay with the tool. */
static void save_image(void)
{
	static u8 chunk[1u << 20];
	FILE *out;
	u64 off;

	if (!save_path || !*save_path || !lower)
		return;
	out = fopen(save_path, "wb");
	if (!out) {
		fprintf(stderr, "fsx: cannot write the image to %s\n", save_path);
		return;
	}
	for (off = 0; off < lower->bd_size; off += sizeof(chunk)) {
		u32 n = (u32)sx_min((u64)sizeof(chunk), lower->bd_size - off);

		sxt_bdev_peek(lower, off, chunk, n);
		if (fwrite(chunk, 1, n, out) != n)
			break;
	}
	if (fclose(out) == 0 && off >= lower->bd_size)
		fprintf(stderr, "fsx: the image is in %s\n", save_path);
	else
		fprintf(stderr, "fsx: writing the image to %s failed\n", save_path);
}

/* Report a failure with the seed and the last operations, and stop. */
static void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...)
{
	va_list ap;
	u32 i, first = nhist > HIST ? nhist - HIST : 0;

	fprintf(stderr, "fsx: FAILED at operation %llu (seed %llu, block size %u): ",
		(unsigned long long)opno, (unsigned long long)seed, bsize);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nfsx: the last operations:\n");
	for (i = first; i < nhist; i++)
		fprintf(stderr, "  %s\n", hist[i % HIST]);
	if (shutdown_msg[0])
		fprintf(stderr, "fsx: the engine's last shutdown message: %s\n", shutdown_msg);
	fprintf(stderr, "fsx: rerun with SX_TEST_SEED=%llu\n", (unsigned long long)seed);
	save_image();
	printf("fsx: 0 passed, 1 failed\n");
	exit(1);
}

/* True once the power has been cut. */
static bool dead(void)
{
	struct sx_crashdev_stats st;

	sx_crashdev_get_stats(cd, &st);
	return st.cs_dead;
}

/*
 * @what of @f succeeded: the mount must be running.  A success on a
 * shut-down mount is wrong whether the shutdown came before the call
 * (nothing may succeed then) or during it (the call that shut the mount
 * down must return the error).
 */
static void check_alive(const char *what, const struct mfile *f)
{
	char why[128];
	int error = sx_shutdown_state(mp, why, sizeof(why));

	if (error)
		die("%s of %s succeeded on a shut-down mount (error %s: %s)", what, f->name,
		    sx_strerror(error), why);
}

/* Compare @n bytes read at @off of file @f with the model. */
static void compare(struct mfile *f, const u8 *got, u64 off, u64 n, const char *what)
{
	u64 i;

	for (i = 0; i < n; i++)
		if (got[i] != f->data[off + i])
			die("%s of %s: byte %llu is 0x%02x, the model says 0x%02x", what, f->name,
			    (unsigned long long)(off + i), got[i], f->data[off + i]);
}

/* The file changed: it is no longer synced. */
static void changed(struct mfile *f)
{
	f->clean = false;
	f->has_alt = false;
}

/* The file is durable as it is now. */
static void synced(struct mfile *f)
{
	memcpy(f->dur, f->data, MAXLEN);
	f->dur_size = f->size;
	f->clean = true;
	f->has_alt = false;
}

/*
 * An fsync of @f forces the log at least to @f's last change; the last
 * swap @f took part in is in the log before that, so its partner is
 * durable as it was after that swap (it has not changed since, or it
 * would not have the swap pending).
 */
static void synced_with_partner(struct mfile *f)
{
	struct mfile *p = &files[f->partner];

	if (f->swap_id && p != f && p->has_alt && p->swap_id == f->swap_id)
		synced(p);
	synced(f);
}

/* Open every file of the model on the current mount. */
static void open_all(void)
{
	int i, error;

	for (i = 0; i < NFILES; i++) {
		error = sx_open(mp, files[i].name, &files[i].fd);
		if (error)
			die("open %s: %s", files[i].name, sx_strerror(error));
	}
}

/* Read all of file @f (its size from fstat) into @buf; returns the size. */
static u64 read_whole(struct mfile *f, u8 *buf)
{
	struct sx_stat st;
	s64 r;
	int error;

	error = sx_fstat(mp, f->fd, &st);
	if (error)
		die("fstat %s: %s", f->name, sx_strerror(error));
	if (st.st_size > MAXLEN)
		die("%s has size %llu, more than the model ever makes", f->name,
		    (unsigned long long)st.st_size);
	r = sx_pread(mp, f->fd, buf, MAXLEN, 0);
	if (r < 0)
		die("pread %s: %s", f->name, sx_strerror((int)r));
	if ((u64)r != st.st_size)
		die("pread of all of %s returned %lld, its size is %llu", f->name, (long long)r,
		    (unsigned long long)st.st_size);
	return st.st_size;
}

/* Run the checker on the unmounted device. */
static void run_checker(const char *when)
{
	u64 problems = 0;
	int error;

	error = sx_check(lower, NULL, NULL, &problems);
	if (error)
		die("check %s: %s", when, sx_strerror(error));
	if (problems)
		die("check %s: %llu problems", when, (unsigned long long)problems);
	n_checked++;
}

/* Unmount, run the checker on the device, and mount again. */
static void check_image(const char *when)
{
	int error;

	error = sx_unmount(mp);
	mp = NULL;
	if (error)
		die("unmount %s: %s (%s)", when, sx_strerror(error), shutdown_msg);
	run_checker(when);
	mp = sxt_mount(bd);
}

/* Mount after a power cut, perhaps cutting the power again during recovery. */
static void recover(void)
{
	struct sx_mount_opts mo = { .mo_name = "fsx" };
	int error, tries;

	if (mp)
		sx_unmount(mp);		/* fails: the device is dead; frees it */
	mp = NULL;
	for (tries = 0;; tries++) {
		sx_bdev_destroy(bd);
		if (sx_crashdev_create(lower, sxt_rand(&rng), &bd, &cd))
			die("crashdev");
		if (tries < 3 && rnd(8) == 0) {
			/* lose the power again somewhere in the recovery */
			sx_crashdev_cut_at_write(cd, 1 + rnd(40), (enum sx_crash_mode)rnd(4));
			error = sx_mount(bd, &mo, &mp);
			if (!error && !dead()) {
				sx_crashdev_cut_at_write(cd, 0, SX_CRASH_KEEP);
				break;
			}
			if (error && !dead())
				die("mount after a power cut: %s", sx_strerror(error));
			if (!error)
				sx_unmount(mp);
			mp = NULL;
			n_recover_cut++;
			continue;
		}
		error = sx_mount(bd, &mo, &mp);
		if (error)
			die("mount after a power cut: %s", sx_strerror(error));
		break;
	}
}

/* The first byte where @got (@gsize bytes) and @want (@wsize) differ, or -1. */
static s64 first_diff(const u8 *got, u64 gsize, const u8 *want, u64 wsize)
{
	u64 b;

	if (gsize != wsize)
		return -2;
	for (b = 0; b < gsize; b++)
		if (got[b] != want[b])
			return (s64)b;
	return -1;
}

/* Fail unless file @i holds what was synced. */
static void check_synced(int i)
{
	struct mfile *f = &files[i];
	s64 b = first_diff(disk[i], disk_size[i], f->dur, f->dur_size);

	if (b == -2)
		die("after recovery %s has size %llu; %llu was synced", f->name,
		    (unsigned long long)disk_size[i], (unsigned long long)f->dur_size);
	if (b >= 0)
		die("after recovery byte %lld of %s is 0x%02x; 0x%02x was synced", (long long)b,
		    f->name, disk[i][b], f->dur[b]);
}

/* Which of the states before and after its pending atomic swap file @i shows. */
static void check_atomic(int i)
{
	struct mfile *f = &files[i];
	s64 o = first_diff(disk[i], disk_size[i], f->dur, f->dur_size);
	s64 n = first_diff(disk[i], disk_size[i], f->alt, f->alt_size);

	f->match = (o == -1 ? M_OLD : 0) | (n == -1 ? M_NEW : 0);
	if (!f->match)
		die("after recovery %s (size %llu) is neither as before its atomic swap (size %llu, "
		    "differs at %lld) nor as after it (size %llu, differs at %lld)", f->name,
		    (unsigned long long)disk_size[i], (unsigned long long)f->dur_size,
		    (long long)o, (unsigned long long)f->alt_size, (long long)n);
}

/* True if byte @b of a file lies in the range of blocks [@blk, +@n). */
static bool in_blocks(u64 b, u64 blk, u64 n)
{
	return b / bsize >= blk && b / bsize < blk + n;
}

/* Fail unless file @i's size lies between its sizes before and after its swap. */
static void check_partial_size(int i)
{
	struct mfile *f = &files[i];
	u64 lo = sx_min(f->dur_size, f->alt_size), hi = sx_max(f->dur_size, f->alt_size);

	if (disk_size[i] < lo || disk_size[i] > hi)
		die("after recovery %s has size %llu; its non-atomic swap goes from %llu to %llu",
		    f->name, (unsigned long long)disk_size[i], (unsigned long long)f->dur_size,
		    (unsigned long long)f->alt_size);
}

/*
 * A non-atomic swap between files @i and @j (or two ranges of file @i = @j)
 * cut short: it runs step by step, each step exchanging one pair of pieces
 * and each step finished by recovery if it reached the log, so every pair
 * of blocks is either as it was or exchanged, and nothing else moved.
 */
static void check_partial(int i, int j)
{
	struct mfile *a = &files[i], *b = &files[j];
	u64 k, n = a->nblk, swapped = 0, unmoved = 0;
	bool same = i == j;

	check_partial_size(i);
	if (!same)
		check_partial_size(j);
	for (k = 0; k < MAXLEN; k++) {
		bool in_a = in_blocks(k, a->blk, n) || (same && in_blocks(k, a->pblk, n));

		if (!in_a && disk[i][k] != a->dur[k])
			die("after recovery byte %llu of %s, outside its non-atomic swap, is 0x%02x; "
			    "0x%02x was synced", (unsigned long long)k, a->name, disk[i][k],
			    a->dur[k]);
		if (!same && !in_blocks(k, a->pblk, n) && disk[j][k] != b->dur[k])
			die("after recovery byte %llu of %s, outside its non-atomic swap, is 0x%02x; "
			    "0x%02x was synced", (unsigned long long)k, b->name, disk[j][k],
			    b->dur[k]);
	}
	for (k = 0; k < n; k++) {
		const u8 *x = disk[i] + (a->blk + k) * bsize, *y = disk[j] + (a->pblk + k) * bsize;
		const u8 *ox = a->dur + (a->blk + k) * bsize, *oy = b->dur + (a->pblk + k) * bsize;
		bool kept = !memcmp(x, ox, bsize) && !memcmp(y, oy, bsize);
		bool moved = !memcmp(x, oy, bsize) && !memcmp(y, ox, bsize);

		if (!kept && !moved)
			die("after recovery block %llu of %s and block %llu of %s are neither as "
			    "before their non-atomic swap nor exchanged",
			    (unsigned long long)(a->blk + k), a->name,
			    (unsigned long long)(a->pblk + k), b->name);
		if (moved && !kept)
			swapped++;
		if (kept && !moved)
			unmoved++;
	}
	if (swapped && unmoved)
		n_sw_mixed++;
	else if (swapped)
		n_sw_done++;
	else
		n_sw_unmoved++;
}

/* Check the swaps made since the last sync of their (clean) files. */
static void check_pending(void)
{
	int i;

	for (i = 0; i < NFILES; i++) {
		struct mfile *f = &files[i];

		if (f->clean && f->has_alt && !f->partial)
			check_atomic(i);
	}
	for (i = 0; i < NFILES; i++) {
		struct mfile *f = &files[i], *p = &files[f->partner];
		bool both = f->clean && f->has_alt && p->clean && p->has_alt &&
			    p->swap_id == f->swap_id;

		if (!both || f->partner < i)
			continue;
		if (f->partial) {
			check_partial(i, f->partner);
			continue;
		}
		if (!(f->match & p->match))
			die("after recovery the atomic swap of %s and %s is half done: %s is %s, "
			    "%s is %s", f->name, p->name, f->name,
			    f->match == M_OLD ? "as before" : "as after", p->name,
			    p->match == M_OLD ? "as before" : "as after");
		if ((f->match & p->match) == (M_OLD | M_NEW))
			n_sw_either++;
		else if (f->match & p->match & M_OLD)
			n_sw_old++;
		else
			n_sw_new++;
	}
}

/* After a power cut: recover, check what must have survived, adopt the rest. */
static void crash_and_check(void)
{
	int i;

	note("power cut; recovery");
	recover();
	open_all();
	for (i = 0; i < NFILES; i++) {
		memset(disk[i], 0, MAXLEN);
		disk_size[i] = read_whole(&files[i], disk[i]);
	}
	for (i = 0; i < NFILES; i++)
		if (files[i].clean && !files[i].has_alt)
			check_synced(i);
	check_pending();
	for (i = 0; i < NFILES; i++) {
		struct mfile *f = &files[i];

		/* the model goes on from what the file holds */
		memcpy(f->data, disk[i], MAXLEN);
		f->size = disk_size[i];
	}
	for (i = 0; i < NFILES; i++)
		sx_close(mp, files[i].fd);
	check_image("after recovery");
	open_all();
	for (i = 0; i < NFILES; i++)
		synced(&files[i]);
}

/* Fail unless @error is 0, or came from the power being cut. */
static bool op_failed(int error, const char *what, struct mfile *f)
{
	if (!error) {
		check_alive(what, f);
		return false;
	}
	if (dead())
		return true;
	die("%s of %s: %s", what, f->name, sx_strerror(error));
}

/* A random offset and length inside the model's range, sometimes block-aligned. */
static void pick_range(u64 *off, u64 *len, u64 maxlen)
{
	*off = rnd(MAXLEN);
	*len = 1 + rnd(sx_min(maxlen, (u64)MAXLEN - *off));
	if (rnd(4) == 0) {
		*off &= ~(u64)(bsize - 1);
		*len = sx_roundup(*len, bsize);
		if (*off + *len > MAXLEN)
			*len = MAXLEN - *off;
	}
}

/* pwrite of random bytes. */
static void op_write(struct mfile *f)
{
	u64 off, len, i;
	s64 r;

	pick_range(&off, &len, MAXOP);
	for (i = 0; i < len; i++)
		wbuf[i] = (u8)sxt_rand(&rng);
	note("pwrite %s %llu+%llu", f->name, (unsigned long long)off, (unsigned long long)len);
	changed(f);
	r = sx_pwrite(mp, f->fd, wbuf, len, off);
	if (r < 0 && op_failed((int)r, "pwrite", f))
		return;
	if ((u64)r != len) {
		if (!dead())
			die("pwrite %s returned %lld of %llu", f->name, (long long)r,
			    (unsigned long long)len);
		n_short++;
		return;
	}
	check_alive("pwrite", f);
	memcpy(f->data + off, wbuf, len);
	f->size = sx_max(f->size, off + len);
}

/* pread, checked against the model. */
static void op_read(struct mfile *f)
{
	u64 off = rnd(MAXLEN + 1), len = 1 + rnd(MAXOP), want;
	s64 r;

	if (f->size && rnd(2))
		off = rnd(f->size);
	note("pread %s %llu+%llu", f->name, (unsigned long long)off, (unsigned long long)len);
	r = sx_pread(mp, f->fd, rbuf, len, off);
	if (r < 0 && op_failed((int)r, "pread", f))
		return;
	want = off >= f->size ? 0 : sx_min(len, f->size - off);
	if ((u64)r != want) {
		if (dead() && (u64)r < want)
			return;
		die("pread %s %llu+%llu returned %lld, the model says %llu", f->name,
		    (unsigned long long)off, (unsigned long long)len, (long long)r,
		    (unsigned long long)want);
	}
	check_alive("pread", f);
	compare(f, rbuf, off, (u64)r, "pread");
}

/* truncate up or down. */
static void op_trunc(struct mfile *f)
{
	u64 size = rnd(MAXLEN + 1);
	int error;

	if (rnd(3) == 0)
		size &= ~(u64)(bsize - 1);
	else if (rnd(3) == 0 && f->size)
		size = rnd(f->size);
	note("truncate %s %llu (from %llu)", f->name, (unsigned long long)size,
	     (unsigned long long)f->size);
	changed(f);
	error = sx_truncate(mp, f->fd, size);
	if (op_failed(error, "truncate", f))
		return;
	if (size < f->size)
		memset(f->data + size, 0, f->size - size);
	f->size = size;
}

/* fallocate: unwritten blocks; the contents do not change, the size may grow. */
static void op_falloc(struct mfile *f)
{
	u64 off, len;
	int error;

	pick_range(&off, &len, 4 * MAXOP);
	note("fallocate %s %llu+%llu", f->name, (unsigned long long)off, (unsigned long long)len);
	changed(f);
	error = sx_fallocate(mp, f->fd, off, len);
	if (op_failed(error, "fallocate", f))
		return;
	f->size = sx_max(f->size, off + len);
}

/* punch a hole: the contents become zeroes, the size stays. */
static void op_punch(struct mfile *f)
{
	u64 off, len;
	int error;

	pick_range(&off, &len, 4 * MAXOP);
	note("punch %s %llu+%llu", f->name, (unsigned long long)off, (unsigned long long)len);
	changed(f);
	error = sx_punch(mp, f->fd, off, len);
	if (op_failed(error, "punch", f))
		return;
	if (off < f->size)
		memset(f->data + off, 0, sx_min(off + len, f->size) - off);
}

/* clone_range of whole blocks from another file. */
static void op_clone(struct mfile *f)
{
	struct mfile *src = &files[rnd(NFILES)];
	u64 nblk, soff, doff, len;
	int error;

	if (!have_clone || src == f || src->size < bsize)
		return;
	nblk = src->size / bsize;
	soff = rnd(nblk) * bsize;
	len = (1 + rnd(sx_min(nblk - soff / bsize, (u64)(MAXOP / bsize)))) * bsize;
	doff = rnd((MAXLEN - len) / bsize + 1) * bsize;
	note("clone_range %s %llu+%llu to %s %llu", src->name, (unsigned long long)soff,
	     (unsigned long long)len, f->name, (unsigned long long)doff);
	changed(f);
	error = sx_clone_range(mp, f->fd, doff, src->fd, soff, len);
	if (error == -EOPNOTSUPP) {
		have_clone = false;
		return;
	}
	if (op_failed(error, "clone_range", f))
		return;
	memcpy(f->data + doff, src->data + soff, len);
	f->size = sx_max(f->size, doff + len);
}

/* ------------------------------------------------------------ swap_range */

/* Kinds of requests op_swap() makes. */
enum {
	SW_BLOCKS,		/* whole blocks inside both files */
	SW_EOF,			/* both ranges end at EOF, often in a partial block */
	SW_TO_EOF,		/* FILE_SWAP_RANGE_TO_EOF */
	SW_FULL,		/* FILE_SWAP_RANGE_FULL_FILES */
	SW_BAD,			/* broken on purpose */
};

/* Truncate as a step of another operation; false if the power went. */
static bool step_truncate(struct mfile *f, u64 size)
{
	int error;

	note("  truncate %s %llu (from %llu)", f->name, (unsigned long long)size,
	     (unsigned long long)f->size);
	changed(f);
	error = sx_truncate(mp, f->fd, size);
	if (op_failed(error, "truncate", f))
		return false;
	if (size < f->size)
		memset(f->data + size, 0, f->size - size);
	f->size = size;
	return true;
}

/* fsync as a step of another operation; false if the power went. */
static bool step_fsync(struct mfile *f)
{
	int error;

	note("  fsync %s", f->name);
	error = sx_fsync(mp, f->fd);
	if (op_failed(error, "fsync", f))
		return false;
	synced_with_partner(f);
	return true;
}

/* A random multiple of the block size in [@lo, @hi] (@lo rounded up), or @lo. */
static s64 rnd_aligned(u64 lo, u64 hi)
{
	lo = sx_roundup(lo, (u64)bsize);
	if (hi < lo)
		return (s64)lo;
	return (s64)(lo + rnd((hi - lo) / bsize + 1) * bsize);
}

/* Two ranges of whole blocks inside @f1 and @f2 (disjoint if one file). */
static void pick_blocks(struct mfile *f1, struct mfile *f2, struct file_swap_range *fsr)
{
	u64 n1 = f1->size / bsize, n2 = f2->size / bsize, nb, b1, b2;

	if (f1 == f2) {
		nb = rnd(n1 / 2 + 1);
		b1 = rnd(n1 - 2 * nb + 1);
		b2 = b1 + nb + rnd(n1 - 2 * nb - b1 + 1);
		if (rnd(2)) {
			u64 t = b1;

			b1 = b2;
			b2 = t;
		}
	} else {
		b1 = rnd(n1 + 1);
		b2 = rnd(n2 + 1);
		nb = sx_min(n1 - b1, n2 - b2);
		if (rnd(3))
			nb = rnd(nb + 1);
	}
	fsr->file1_offset = (s64)(b1 * bsize);
	fsr->file2_offset = (s64)(b2 * bsize);
	fsr->length = (s64)(nb * bsize);
}

/*
 * TO_EOF offsets whose outcome fits the model: each file ends at
 * offset + the other's tail, at most MAXLEN.
 */
static void pick_to_eof(struct mfile *f1, struct mfile *f2, struct file_swap_range *fsr)
{
	u64 s1 = f1->size, s2 = f2->size, o1, lo, hi;

	o1 = (u64)rnd_aligned(0, s1);
	lo = o1 + s2 > MAXLEN ? o1 + s2 - MAXLEN : 0;
	hi = sx_min(s2, MAXLEN + o1 - s1);
	if (f1 == f2 && rnd(2))
		lo = hi = s2;		/* one file: only its aligned EOF can be valid */
	fsr->file1_offset = (s64)o1;
	fsr->file2_offset = rnd_aligned(lo, hi);
	switch (rnd(4)) {
	case 0: fsr->length = 0; break;
	case 1: fsr->length = S64MAX; break;
	default: fsr->length = (s64)rnd(MAXLEN); break;
	}
}

/* Break a valid-looking request in one of the ways the front end must catch. */
static void break_request(struct mfile *f1, struct mfile *f2, struct file_swap_range *fsr,
			  struct mfile **pf1)
{
	switch (rnd(11)) {
	case 0:
		fsr->file1_offset += 1 + (s64)rnd(bsize - 1);
		break;
	case 1:
		fsr->file2_offset += 1 + (s64)rnd(bsize - 1);
		break;
	case 2:		/* a partial block in mid-file */
		fsr->length += 1 + (s64)rnd(bsize - 1);
		break;
	case 3:		/* past EOF */
		fsr->length = (s64)(f1->size - (u64)fsr->file1_offset + bsize * (1 + rnd(4)));
		break;
	case 4:		/* a start past EOF */
		fsr->file2_offset = (s64)sx_roundup(f2->size + 1, (u64)bsize);
		break;
	case 5:		/* overlapping ranges of one file */
		*pf1 = f2;
		fsr->file1_offset = rnd_aligned(0, f2->size);
		fsr->file2_offset = fsr->file1_offset + (s64)(rnd(2) * bsize);
		fsr->length = (s64)(bsize * (2 + rnd(8)));
		if (rnd(2))
			fsr->flags |= FILE_SWAP_RANGE_TO_EOF;
		break;
	case 6:
		if (rnd(2))
			fsr->file1_offset = -(s64)bsize;
		else
			fsr->length = -1 - (s64)rnd(bsize);
		break;
	case 7:		/* offset + length wraps */
		fsr->length = S64MAX - (s64)rnd(bsize);
		break;
	case 8:
		fsr->flags |= 1ull << (4 + rnd(60));
		break;
	case 9:
		fsr->pad[rnd(ARRAY_SIZE(fsr->pad))] = 1 + rnd(1000);
		break;
	default:
		fsr->flags |= FILE_SWAP_RANGE_FULL_FILES | FILE_SWAP_RANGE_TO_EOF;
		break;
	}
}

/* Fill in file2's freshness: right, or (@stale) wrong in one field. */
static bool set_fresh(struct mfile *f2, struct file_swap_range *fsr, bool stale)
{
	struct sx_stat st;
	int error;

	error = sx_fstat(mp, f2->fd, &st);
	if (op_failed(error, "fstat", f2))
		return false;
	fsr->file2_ino = (s64)st.st_ino;
	fsr->file2_mtime = st.st_mtime_ns / 1000000000;
	fsr->file2_mtime_nsec = (s32)(st.st_mtime_ns % 1000000000);
	fsr->file2_ctime = st.st_ctime_ns / 1000000000;
	fsr->file2_ctime_nsec = (s32)(st.st_ctime_ns % 1000000000);
	if (stale) {
		switch (rnd(4)) {
		case 0: fsr->file2_ino ^= 1 + (s64)rnd(7); break;
		case 1: fsr->file2_mtime_nsec = (fsr->file2_mtime_nsec + 1) % 1000000000; break;
		case 2: fsr->file2_ctime -= 1 + (s64)rnd(100); break;
		default: fsr->file2_mtime += 1; break;
		}
	}
	return true;
}

/* Count a refusal the model predicted. */
static void count_refusal(int error)
{
	switch (error) {
	case -EINVAL: n_sw_einval++; break;
	case -EDOM: n_sw_edom++; break;
	case -EBUSY: n_sw_ebusy++; break;
	default: n_sw_eopnotsupp++; break;
	}
}

/* Exchange blocks [@b1, +@n) of @f1 with [@b2, +@n) of @f2 in the model. */
static void model_swap(struct mfile *f1, u64 b1, struct mfile *f2, u64 b2, u64 n)
{
	u8 *x = f1->data + b1 * bsize, *y = f2->data + b2 * bsize;
	u64 i;

	for (i = 0; i < n * bsize; i++) {
		u8 t = x[i];

		x[i] = y[i];
		y[i] = t;
	}
}

/* The model side of a swap that ran (or was cut by the power in the middle). */
static void apply_swap(struct mfile *f1, struct mfile *f2, const struct sxm_result *pr,
		       bool was_clean)
{
	struct mfile *fs[2] = { f1, f2 };
	u64 id = ++swap_serial;
	int i;

	model_swap(f1, pr->blk1, f2, pr->blk2, pr->nblk);
	f1->size = pr->size1;
	f2->size = f1 == f2 ? pr->size1 : pr->size2;
	for (i = 0; i < 2; i++) {
		struct mfile *f = fs[i];

		memset(f->data + f->size, 0, MAXLEN - f->size);
		f->swap_id = id;
		f->partner = (int)(fs[1 - i] - files);
		f->blk = i ? pr->blk2 : pr->blk1;
		f->pblk = i ? pr->blk1 : pr->blk2;
		f->nblk = pr->nblk;
		f->partial = pr->algo == SXM_NONATOMIC;
		if (was_clean) {
			f->clean = true;
			f->has_alt = true;
			memcpy(f->alt, f->data, MAXLEN);
			f->alt_size = f->size;
		} else {
			changed(f);
		}
	}
}

/* swap_file_range with random ranges and flags, checked against the model. */
static void op_swap(struct mfile *f2)
{
	struct mfile *f1 = rnd(4) ? &files[rnd(NFILES)] : f2;
	struct file_swap_range fsr, sent;
	struct sxm_files mf;
	struct sxm_result pr;
	bool stale = false, was_clean, cut;
	int kind, error;

	memset(&fsr, 0, sizeof(fsr));
	switch (rnd(16)) {
	case 0: case 1: case 2: case 3: case 4: case 5: kind = SW_BLOCKS; break;
	case 6: case 7: kind = SW_EOF; break;
	case 8: case 9: case 10: kind = SW_TO_EOF; break;
	case 11: kind = SW_FULL; break;
	default: kind = SW_BAD; break;
	}

	/* equal sizes, or equal tails past the last whole block, make these valid */
	if (kind == SW_FULL && f1 != f2 && rnd(3) && !step_truncate(f1, f2->size))
		return;
	if (kind == SW_EOF && f1 != f2 && f1->size % bsize != f2->size % bsize && rnd(4)) {
		u64 size = f1->size / bsize * bsize + f2->size % bsize;

		if (size > MAXLEN)
			size -= bsize;
		if (!step_truncate(f1, size))
			return;
	}
	/* synced files first, often, so that a cut must leave the swap all or nothing */
	if (rnd(2) && (!step_fsync(f1) || (f1 != f2 && !step_fsync(f2))))
		return;

	switch (kind) {
	case SW_BLOCKS:
		pick_blocks(f1, f2, &fsr);
		break;
	case SW_EOF: {
		u64 tail = f2->size % bsize, whole = sx_min(f1->size, f2->size) / bsize;
		u64 len = tail + rnd(whole + 1) * bsize;

		if (f1 == f2 || f1->size % bsize != tail)
			len = sx_min(f1->size, f2->size) - rnd(2) * tail;
		fsr.file1_offset = (s64)(f1->size - sx_min(len, f1->size));
		fsr.file2_offset = (s64)(f2->size - sx_min(len, f2->size));
		fsr.length = (s64)len;
		break;
	}
	case SW_TO_EOF:
		pick_to_eof(f1, f2, &fsr);
		fsr.flags |= FILE_SWAP_RANGE_TO_EOF;
		break;
	case SW_FULL:
		fsr.length = (s64)f2->size;
		fsr.flags |= FILE_SWAP_RANGE_FULL_FILES;
		break;
	default:
		pick_blocks(f1, f2, &fsr);
		break_request(f1, f2, &fsr, &f1);
		break;
	}
	if (rnd(atomic_fs ? 3 : 4) < (atomic_fs ? 1u : 3u))
		fsr.flags |= FILE_SWAP_RANGE_NONATOMIC;
	if (rnd(4) == 0) {
		fsr.flags |= FILE_SWAP_RANGE_FILE2_FRESH;
		stale = rnd(2);
		if (!set_fresh(f2, &fsr, stale))
			return;
	}
	fsr.file1_fd = f1->fd;

	memset(&mf, 0, sizeof(mf));
	mf.size1 = f1->size;
	mf.size2 = f2->size;
	mf.bsize = bsize;
	mf.same = f1 == f2;
	mf.fresh_ok = !stale;
	mf.atomic = atomic_fs;
	sxm_predict(&mf, &fsr, &pr);
	if (!pr.error && !pr.zero &&
	    ((pr.blk1 + pr.nblk) * bsize > MAXLEN || (pr.blk2 + pr.nblk) * bsize > MAXLEN ||
	     pr.size1 > MAXLEN || pr.size2 > MAXLEN)) {
		n_sw_nofit++;		/* valid, but more than the model holds */
		return;
	}
	note("swap_range %s %lld <-> %s %lld len %lld flags %#llx%s: model %s%s", f1->name,
	     (long long)fsr.file1_offset, f2->name, (long long)fsr.file2_offset,
	     (long long)fsr.length, (unsigned long long)fsr.flags, stale ? " (stale)" : "",
	     pr.error ? sx_strerror(pr.error) : "ok", pr.zero ? " (nothing to swap)" : "");

	was_clean = f1->clean && !f1->has_alt && f2->clean && !f2->has_alt;
	if (was_clean && !pr.error && !pr.zero && rnd(10) == 0) {
		/* a swap whose outcome after a cut is known: cut it, now and then */
		struct sx_crashdev_stats st;

		sx_crashdev_get_stats(cd, &st);
		sx_crashdev_cut_at_write(cd, st.cs_writes + 1 + rnd(24), (enum sx_crash_mode)rnd(4));
		n_cut_write++;
	}
	sent = fsr;
	error = sx_swap_file_range(mp, f2->fd, &fsr);
	cut = dead();
	if (error && memcmp(&sent, &fsr, sizeof(fsr)))
		die("swap_range failed (%s) but changed the request", sx_strerror(error));
	if (cut)
		n_sw_cut++;
	if (pr.error) {
		if (error == pr.error) {
			count_refusal(error);
			return;
		}
		if (error && cut)
			return;
		die("swap_range %s %lld <-> %s %lld len %lld flags %#llx returned %s; the model "
		    "says %s", f1->name, (long long)sent.file1_offset, f2->name,
		    (long long)sent.file2_offset, (long long)sent.length,
		    (unsigned long long)sent.flags, error ? sx_strerror(error) : "success",
		    sx_strerror(pr.error));
	}
	if (error && !cut)
		die("swap_range %s %lld <-> %s %lld len %lld flags %#llx: %s; the model says it "
		    "is valid", f1->name, (long long)sent.file1_offset, f2->name,
		    (long long)sent.file2_offset, (long long)sent.length,
		    (unsigned long long)sent.flags, sx_strerror(error));
	if (!error) {
		check_alive("swap_range", f2);
		sent.length = pr.length;
		if (memcmp(&sent, &fsr, sizeof(fsr)))
			die("swap_range returned length %lld, the model says %lld; or changed "
			    "other fields", (long long)fsr.length, (long long)pr.length);
	}
	if (pr.zero) {
		n_sw_zero++;
		return;
	}
	if (!error) {
		if (pr.algo == SXM_ATOMIC)
			n_sw_atomic++;
		else
			n_sw_nonatomic++;
		n_sw_same += f1 == f2;
		n_sw_toeof += kind == SW_TO_EOF;
		n_sw_full += kind == SW_FULL;
		n_sw_fresh += !!(sent.flags & FILE_SWAP_RANGE_FILE2_FRESH);
		n_sw_parteof += (pr.length % bsize) != 0;
	}
	apply_swap(f1, f2, &pr, was_clean);
}

/* fsync: this file is durable as it is. */
static void op_fsync(struct mfile *f)
{
	int error;

	note("fsync %s", f->name);
	error = sx_fsync(mp, f->fd);
	if (op_failed(error, "fsync", f))
		return;
	synced_with_partner(f);
}

/* sync: every file is durable as it is. */
static void op_sync(void)
{
	int error, i;

	note("sync");
	error = sx_sync(mp);
	if (op_failed(error, "sync", &files[0]))
		return;
	for (i = 0; i < NFILES; i++)
		synced(&files[i]);
}

/* close and reopen by name. */
static void op_reopen(struct mfile *f)
{
	int error;

	note("reopen %s", f->name);
	error = sx_close(mp, f->fd);
	if (op_failed(error, "close", f))
		return;
	error = sx_open(mp, f->name, &f->fd);
	if (error)
		die("open %s: %s", f->name, sx_strerror(error));
	check_alive("open", f);
}

/* Read the whole file and compare it, and its size, with the model. */
static void op_verify(struct mfile *f)
{
	struct sx_stat st;
	s64 r;
	int error;

	note("verify %s", f->name);
	error = sx_fstat(mp, f->fd, &st);
	if (op_failed(error, "fstat", f))
		return;
	if (st.st_size != f->size)
		die("%s has size %llu, the model says %llu", f->name,
		    (unsigned long long)st.st_size, (unsigned long long)f->size);
	r = sx_pread(mp, f->fd, rbuf, MAXLEN, 0);
	if (r < 0 && op_failed((int)r, "pread", f))
		return;
	if ((u64)r != f->size && !dead())
		die("pread of all of %s returned %lld of %llu", f->name, (long long)r,
		    (unsigned long long)f->size);
	compare(f, rbuf, 0, (u64)r, "verify");
}

/* Choose an operation by weight. */
static int pick_op(void)
{
	u32 total = 0, i, r;

	for (i = 0; i < OP_NR; i++)
		total += op_weight[i];
	r = (u32)rnd(total);
	for (i = 0; i < OP_NR; i++) {
		if (r < op_weight[i])
			return (int)i;
		r -= op_weight[i];
	}
	return OP_READ;
}

/* Maybe arm a power cut: at a coming device write, or now. */
static void maybe_cut(void)
{
	struct sx_crashdev_stats st;

	if (rnd(400) != 0)
		return;
	if (rnd(3) == 0) {
		note("power cut now");
		sx_crashdev_cut_now(cd, (enum sx_crash_mode)rnd(4));
		n_cut_now++;
		return;
	}
	sx_crashdev_get_stats(cd, &st);
	sx_crashdev_cut_at_write(cd, st.cs_writes + 1 + rnd(64), (enum sx_crash_mode)rnd(4));
	n_cut_write++;
}

/*
 * The unmount that ends a phase.  A power cut armed a few writes ahead (by
 * maybe_cut() or a swap) may not have fired yet: then it fires in the
 * unmount's checkpoint, which must fail, and the phase ends with the checks
 * of any other power cut.  Otherwise the unmount must succeed and the
 * checker find nothing.
 */
static void end_unmount(void)
{
	int error, i;

	error = sx_unmount(mp);
	mp = NULL;
	if (error && dead()) {
		n_cut_unmount++;
		note("power cut in the unmount that ends the phase");
		crash_and_check();
		for (i = 0; i < NFILES; i++)
			sx_close(mp, files[i].fd);
		error = sx_unmount(mp);
		mp = NULL;
	}
	if (error)
		die("unmount at the end of a phase: %s (%s)", sx_strerror(error), shutdown_msg);
	run_checker("at the end of a phase");
}

/*
 * One phase: a new filesystem of block size @bs, with the atomic_swap
 * feature if @atomic, and @n operations on it.
 */
static void phase(u32 bs, bool atomic, u64 n)
{
	u64 end = opno + n;
	int i, error, fd, op;

	bsize = bs;
	atomic_fs = atomic;
	/*
	 * A 4 MiB log: the default for this device (768 KiB) gives a largest
	 * transaction of 96 KiB, less than clone and copy-on-write reserve
	 * with 4 KiB blocks (reflink.c); fsx tests the data path, not that.
	 */
	lower = sxs_mkimg(DEV_SIZE, bs, (4u << 20) / bs, atomic);
	if (sx_crashdev_create(lower, seed, &bd, &cd))
		die("crashdev");
	mp = sxt_mount(bd);
	for (i = 0; i < NFILES; i++) {
		struct mfile *f = &files[i];

		snprintf(f->name, sizeof(f->name), "f%d", i);
		memset(f->data, 0, MAXLEN);
		f->size = 0;
		error = sx_create(mp, f->name, SX_IFREG | 0644, &fd);
		if (error)
			die("create %s: %s", f->name, sx_strerror(error));
		f->fd = fd;
	}
	error = sx_sync(mp);
	if (error)
		die("sync: %s", sx_strerror(error));
	for (i = 0; i < NFILES; i++)
		synced(&files[i]);

	for (; opno < end; opno++) {
		struct mfile *f = &files[rnd(NFILES)];

		maybe_cut();
		op = pick_op();
		n_ops[op]++;
		switch (op) {
		case OP_WRITE: op_write(f); break;
		case OP_READ: op_read(f); break;
		case OP_TRUNC: op_trunc(f); break;
		case OP_FALLOC: op_falloc(f); break;
		case OP_PUNCH: op_punch(f); break;
		case OP_CLONE: op_clone(f); break;
		case OP_SWAP: op_swap(f); break;
		case OP_FSYNC: op_fsync(f); break;
		case OP_SYNC: op_sync(); break;
		case OP_REOPEN: op_reopen(f); break;
		default: op_verify(f); break;
		}
		if (dead())
			crash_and_check();
	}
	/* the end: every file as the model says, a clean unmount, a clean check */
	for (i = 0; i < NFILES; i++)
		op_verify(&files[i]);
	for (i = 0; i < NFILES; i++)
		sx_close(mp, files[i].fd);
	end_unmount();
	sx_bdev_destroy(bd);
	bd = NULL;
	sx_bdev_destroy(lower);
	lower = NULL;
}

/* Keep the engine's last shutdown message; print nothing (SX_TEST_VERBOSE: errors). */
static void log_cb(void *arg, enum sx_log_level level, const char *msg)
{
	if (level <= SX_LOG_ERR && strstr(msg, "shut"))
		snprintf(shutdown_msg, sizeof(shutdown_msg), "%s", msg);
	if (level <= SX_LOG_ERR && getenv("SX_TEST_VERBOSE"))
		fprintf(stderr, "%s\n", msg);
}

/* Every phase of one seed, from a fresh model. */
static void run_seed(u64 s)
{
	static const u32 sizes[] = { 512, 1024, 4096, 2048 };
	static const bool atomic[] = { true, false, true, false };
	u64 start = sx_now_ns(), ms, first_op;
	u32 i;

	seed = s ? s : 1;
	rng = seed;
	opno = 0;
	nhist = 0;
	have_clone = true;
	shutdown_msg[0] = 0;
	for (i = 0; i < NFILES; i++) {
		struct mfile *f = &files[i];
		u8 *data = f->data, *dur = f->dur, *alt = f->alt;

		memset(f, 0, sizeof(*f));
		f->data = data;
		f->dur = dur;
		f->alt = alt;
	}
	printf("fsx: seed %llu, %llu operations\n", (unsigned long long)seed,
	       (unsigned long long)nops);
	fflush(stdout);
	first_op = opno;
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		phase(sizes[i], atomic[i], nops / ARRAY_SIZE(sizes) + (i < nops % ARRAY_SIZE(sizes)));
	ms = (sx_now_ns() - start) / 1000000;
	printf("fsx: seed %llu passed: %llu operations in %llu.%03llu s\n",
	       (unsigned long long)seed, (unsigned long long)(opno - first_op),
	       (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000));
	fflush(stdout);
}

int main(void)
{
	const char *s = getenv("SX_TEST_SEED"), *o = getenv("SX_FSX_OPS");
	u64 start = sx_now_ns(), ms, total_ops = 0, nseeds = 0;
	u32 i;

	nops = o && *o ? strtoull(o, NULL, 0) : 100000;
	save_path = getenv("SX_FSX_SAVE");
	printf("fsx: %s, %llu operations each (SX_TEST_SEED, SX_FSX_OPS)\n",
	       s && *s ? "the seed SX_TEST_SEED gives" : "the fixed seeds",
	       (unsigned long long)nops);
	fflush(stdout);
	sx_thread_enter();
	sx_set_log_callback(log_cb, NULL);
	rbuf = malloc(MAXLEN + MAXOP);
	wbuf = malloc(MAXLEN);
	for (i = 0; i < NFILES; i++) {
		files[i].data = calloc(1, MAXLEN);
		files[i].dur = calloc(1, MAXLEN);
		files[i].alt = calloc(1, MAXLEN);
		disk[i] = calloc(1, MAXLEN);
		if (!files[i].data || !files[i].dur || !files[i].alt || !disk[i])
			die("out of memory");
	}
	if (!rbuf || !wbuf)
		die("out of memory");
	if (s && *s) {
		run_seed(strtoull(s, NULL, 0));
		total_ops += opno;
		nseeds++;
	} else {
		for (i = 0; i < ARRAY_SIZE(fixed_seeds); i++) {
			run_seed(fixed_seeds[i]);
			total_ops += opno;
			nseeds++;
		}
	}
	ms = (sx_now_ns() - start) / 1000000;
	printf("fsx: %llu seeds, %llu operations in %llu.%03llu s:", (unsigned long long)nseeds,
	       (unsigned long long)total_ops,
	       (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000));
	for (i = 0; i < OP_NR; i++)
		printf(" %s %llu", op_names[i], (unsigned long long)n_ops[i]);
	printf("\nfsx: power cuts: %llu at a device write, %llu between operations, %llu more during recovery, %llu in a phase's final unmount; %llu checker runs; %llu writes cut short%s\n",
	       (unsigned long long)n_cut_write, (unsigned long long)n_cut_now,
	       (unsigned long long)n_recover_cut, (unsigned long long)n_cut_unmount,
	       (unsigned long long)n_checked,
	       (unsigned long long)n_short, have_clone ? "" : "; clone_range not supported");
	printf("fsx: swaps: %llu atomic, %llu non-atomic, %llu of nothing; of those that ran %llu "
	       "within one file, %llu TO_EOF, %llu FULL_FILES, %llu FILE2_FRESH, %llu with a "
	       "partial EOF block; %llu valid but too large for the model, not run\n",
	       (unsigned long long)n_sw_atomic, (unsigned long long)n_sw_nonatomic,
	       (unsigned long long)n_sw_zero, (unsigned long long)n_sw_same,
	       (unsigned long long)n_sw_toeof, (unsigned long long)n_sw_full,
	       (unsigned long long)n_sw_fresh, (unsigned long long)n_sw_parteof,
	       (unsigned long long)n_sw_nofit);
	printf("fsx: swaps refused as the model says: %llu EINVAL, %llu EDOM, %llu EBUSY, "
	       "%llu EOPNOTSUPP\n", (unsigned long long)n_sw_einval,
	       (unsigned long long)n_sw_edom, (unsigned long long)n_sw_ebusy,
	       (unsigned long long)n_sw_eopnotsupp);
	printf("fsx: swaps cut by the power: %llu; unsynced swaps after a cut: atomic %llu all "
	       "old, %llu all new, %llu either (no change); non-atomic %llu part exchanged, "
	       "%llu all, %llu none\n", (unsigned long long)n_sw_cut, (unsigned long long)n_sw_old,
	       (unsigned long long)n_sw_new, (unsigned long long)n_sw_either,
	       (unsigned long long)n_sw_mixed, (unsigned long long)n_sw_done,
	       (unsigned long long)n_sw_unmoved);
	printf("fsx: 1 passed, 0 failed\n");
	for (i = 0; i < NFILES; i++) {
		free(files[i].data);
		free(files[i].dur);
		free(files[i].alt);
		free(disk[i]);
	}
	free(rbuf);
	free(wbuf);
	sx_thread_exit();
	return 0;
}
