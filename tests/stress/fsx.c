// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fsx: a model-based random test of the data path, after the fsx of
 * xfstests, with power cuts.
 *
 * An in-memory model holds the contents and size of several files.  Random
 * operations run on the filesystem and on the model: pwrite, pread (every
 * read checked against the model), truncate up and down, fallocate, punch,
 * clone_range, fsync, sync, close and reopen, and whole-file checks.  Now
 * and then the power is cut by the crash-emulating device, at a random
 * device write (mid-operation) or between operations, keeping, dropping,
 * tearing or randomly losing the writes that were not yet durable.  After
 * recovery, every file that was synced (fsync of it, or sync) since its
 * last change must hold exactly its contents and size at that sync; the
 * checker must be clean; then the model adopts what the files hold and the
 * run goes on.  The run is split into phases of different block sizes.
 *
 * SX_FSX_OPS=N (make FSX_OPS=N) sets the number of operations (default
 * 100000); SX_TEST_SEED the seed, which is printed first.  A failure prints
 * the seed, the operation number and the last operations.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "sxtest.h"

#define NFILES		4
#define MAXLEN		(256u * 1024)	/* largest file the model makes */
#define MAXOP		(64u * 1024)	/* largest single write/read */
#define DEV_SIZE	(48ull << 20)
#define HIST		24

/* One file of the model. */
struct mfile {
	char	name[16];
	int	fd;
	u8	*data;			/* MAXLEN bytes; zero past size */
	u64	size;
	u8	*dur;			/* contents at the last sync since a change */
	u64	dur_size;
	bool	clean;			/* synced since its last change */
};

static struct mfile files[NFILES];
static struct sx_bdev *lower, *bd;
static struct sx_crashdev *cd;
static struct sx_mount *mp;
static u64 seed, rng, opno, nops;
static u32 bsize;
static u8 *rbuf, *wbuf;
static bool have_clone = true;
static char hist[HIST][160];
static u32 nhist;

/* Figures for the closing line. */
static u64 n_ops[16], n_cut_write, n_cut_now, n_recover_cut, n_checked, n_short;

enum {
	OP_WRITE, OP_READ, OP_TRUNC, OP_FALLOC, OP_PUNCH, OP_CLONE, OP_FSYNC, OP_SYNC,
	OP_REOPEN, OP_VERIFY, OP_NR
};
static const char *const op_names[OP_NR] = {
	"pwrite", "pread", "truncate", "fallocate", "punch", "clone_range", "fsync", "sync",
	"reopen", "verify",
};
/* relative weights */
static const u32 op_weight[OP_NR] = { 30, 22, 8, 6, 7, 6, 4, 1, 3, 2 };

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
	fprintf(stderr, "fsx: rerun with SX_TEST_SEED=%llu\n", (unsigned long long)seed);
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
}

/* The file is durable as it is now. */
static void synced(struct mfile *f)
{
	memcpy(f->dur, f->data, MAXLEN);
	f->dur_size = f->size;
	f->clean = true;
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

/* Unmount, run the checker on the device, and mount again. */
static void check_image(const char *when)
{
	u64 problems = 0;
	int error;

	error = sx_unmount(mp);
	mp = NULL;
	if (error)
		die("unmount %s: %s", when, sx_strerror(error));
	error = sx_check(lower, NULL, NULL, &problems);
	if (error)
		die("check %s: %s", when, sx_strerror(error));
	if (problems)
		die("check %s: %llu problems", when, (unsigned long long)problems);
	mp = sxt_mount(bd);
	n_checked++;
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

/* After a power cut: recover, check what must have survived, adopt the rest. */
static void crash_and_check(void)
{
	u64 size;
	int i;

	note("power cut; recovery");
	recover();
	open_all();
	for (i = 0; i < NFILES; i++) {
		struct mfile *f = &files[i];

		size = read_whole(f, rbuf);
		if (f->clean) {
			if (size != f->dur_size)
				die("after recovery %s has size %llu; %llu was synced", f->name,
				    (unsigned long long)size, (unsigned long long)f->dur_size);
			if (memcmp(rbuf, f->dur, size)) {
				u64 b = 0;

				while (rbuf[b] == f->dur[b])
					b++;
				die("after recovery byte %llu of %s is 0x%02x; 0x%02x was synced",
				    (unsigned long long)b, f->name, rbuf[b], f->dur[b]);
			}
		}
		/* the model goes on from what the file holds */
		memset(f->data, 0, MAXLEN);
		memcpy(f->data, rbuf, size);
		f->size = size;
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
	if (!error)
		return false;
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

/* fsync: this file is durable as it is. */
static void op_fsync(struct mfile *f)
{
	int error;

	note("fsync %s", f->name);
	error = sx_fsync(mp, f->fd);
	if (op_failed(error, "fsync", f))
		return;
	synced(f);
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

/* One phase: a new filesystem of block size @bs and @n operations on it. */
static void phase(u32 bs, u64 n)
{
	u64 end = opno + n;
	int i, error, fd, op;

	bsize = bs;
	/*
	 * A 4 MiB log: the default for this device (768 KiB) gives a largest
	 * transaction of 96 KiB, less than clone and copy-on-write reserve
	 * with 4 KiB blocks (reflink.c); fsx tests the data path, not that.
	 */
	lower = sxt_memfs(DEV_SIZE, bs, (4u << 20) / bs);
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
	check_image("at the end of a phase");
	sx_unmount(mp);
	mp = NULL;
	sx_bdev_destroy(bd);
	bd = NULL;
	sx_bdev_destroy(lower);
	lower = NULL;
}

int main(void)
{
	static const u32 sizes[] = { 512, 1024, 4096, 2048 };
	const char *s = getenv("SX_TEST_SEED"), *o = getenv("SX_FSX_OPS");
	u64 start = sx_now_ns(), ms;
	u32 i;

	seed = s && *s ? strtoull(s, NULL, 0) : (u64)time(NULL) ^ ((u64)getpid() << 20);
	if (seed == 0)
		seed = 1;
	nops = o && *o ? strtoull(o, NULL, 0) : 100000;
	printf("fsx: seed %llu, %llu operations (SX_TEST_SEED, SX_FSX_OPS)\n",
	       (unsigned long long)seed, (unsigned long long)nops);
	fflush(stdout);
	rng = seed;
	sx_thread_enter();
	sxt_quiet();
	rbuf = malloc(MAXLEN + MAXOP);
	wbuf = malloc(MAXLEN);
	for (i = 0; i < NFILES; i++) {
		files[i].data = calloc(1, MAXLEN);
		files[i].dur = calloc(1, MAXLEN);
		if (!files[i].data || !files[i].dur)
			die("out of memory");
	}
	if (!rbuf || !wbuf)
		die("out of memory");
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		phase(sizes[i], nops / ARRAY_SIZE(sizes) + (i < nops % ARRAY_SIZE(sizes)));
	ms = (sx_now_ns() - start) / 1000000;
	printf("fsx: %llu operations in %llu.%03llu s:", (unsigned long long)opno,
	       (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000));
	for (i = 0; i < OP_NR; i++)
		printf(" %s %llu", op_names[i], (unsigned long long)n_ops[i]);
	printf("\nfsx: power cuts: %llu at a device write, %llu between operations, %llu more during recovery; %llu checker runs; %llu writes cut short%s\n",
	       (unsigned long long)n_cut_write, (unsigned long long)n_cut_now,
	       (unsigned long long)n_recover_cut, (unsigned long long)n_checked,
	       (unsigned long long)n_short, have_clone ? "" : "; clone_range not supported");
	printf("fsx: 1 passed, 0 failed\n");
	for (i = 0; i < NFILES; i++) {
		free(files[i].data);
		free(files[i].dur);
	}
	free(rbuf);
	free(wbuf);
	sx_thread_exit();
	return 0;
}
