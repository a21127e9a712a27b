// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Faults under the namespace and extent-tree operations, each on a cold
 * mount of one image: a directory of many names (its fork a B+tree), a
 * file of 300 one-block extents (a B+tree two levels deep), shared and
 * unwritten blocks.  tests/crash/fault_loop.c runs whole workloads with a
 * sample of fault points; this takes every point of one call at a time,
 * so that each read the call makes of a block no cache holds yet, and
 * each allocation, fails in turn.
 *
 * For each step and each N = 1, 2, ... until the step completes without
 * reaching its N-th read (failing from then on) or allocation (failing
 * once):
 *  - the step fails with the injected error (-EIO, -ENOMEM), or succeeds;
 *  - a mount that is not shut down shows what the disk holds (a remount
 *    shows the same) and unmounts cleanly;
 *  - the remount shows the state before the step or after it (any state
 *    for a step made of pieces: a punch, a truncate, a clone), and the
 *    state after it when the step said it succeeded;
 *  - the checker finds nothing, and no allocation is left (checked after
 *    the points of a step: an RCU barrier costs milliseconds).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxtest.h"
#include "sxcrash.h"
#include "dev.h"
#include "file.h"
#include "inode.h"
#include <swapext/swapext_compat.h>

#define MIB		(1ull << 20)
#define BS		1024u
#define NNAMES		150u		/* names of empty files: the directory is a B+tree */
#define BIGEXT		300u		/* one-block extents of "big" */
#define MAXNAMES	(NNAMES + 80)

/* The image every step starts from. */
static struct sx_bdev *base;

/* ------------------------------------------------------------ the files */

/* The bytes of block @blk of a file written by this test: a tag of both. */
static void fill(u8 *buf, u64 blk, u8 tag)
{
	u32 i;

	for (i = 0; i < BS; i++)
		buf[i] = (u8)(blk * 7 + i + tag);
}

static int put(struct sx_mount *mp, int fd, u64 blk, u8 tag)
{
	u8 buf[BS];
	s64 n;

	fill(buf, blk, tag);
	n = sx_pwrite(mp, fd, buf, BS, blk * BS);
	return n == BS ? 0 : n < 0 ? (int)n : -EIO;
}

static int openf(struct sx_mount *mp, const char *name, int *fd)
{
	return sx_open(mp, name, fd);
}

/* Close @fd and keep the first error. */
static int done(struct sx_mount *mp, int fd, int error)
{
	int error2 = sx_close(mp, fd);

	return error ? error : error2;
}

/* The fork format of the open file @fd. */
static u32 format(struct sx_mount *mp, int fd)
{
	struct sx_inode *ip;
	u32 f;

	assert_int_equal(sx_fd_get(mp, fd, &ip), 0);
	f = ip->i_format;
	assert_int_equal(sx_irele(ip), 0);
	return f;
}

/* Extents the inode holds inline: "mid" gets as many, one more makes a tree. */
static u64 inline_max;

static void make_base(void)
{
	struct sx_mount *mp;
	char name[16];
	u32 i;
	int fd, fd2;

	base = sxt_memfs(8 * MIB, BS, 0);
	mp = sxt_mount(base);
	for (i = 0; i < NNAMES; i++) {
		snprintf(name, sizeof(name), "n%03u", i);
		assert_int_equal(sx_create(mp, name, 0644, &fd), 0);
		assert_int_equal(sx_close(mp, fd), 0);
	}
	/* every other block: an extent each, far more than the inode holds */
	assert_int_equal(sx_create(mp, "big", 0644, &fd), 0);
	for (i = 0; i < BIGEXT; i++)
		assert_int_equal(put(mp, fd, 2 * i, 1), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_create(mp, "small", 0644, &fd), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(put(mp, fd, i, 2), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	/* "dst" shares the blocks of "src" */
	assert_int_equal(sx_create(mp, "src", 0644, &fd), 0);
	for (i = 0; i < 16; i++)
		assert_int_equal(put(mp, fd, i, 3), 0);
	assert_int_equal(sx_create(mp, "dst", 0644, &fd2), 0);
	assert_int_equal(sx_clone(mp, fd2, fd), 0);
	assert_int_equal(sx_close(mp, fd2), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	/* "frag" and "other" written block by block in turn: each in 24 extents */
	assert_int_equal(sx_create(mp, "frag", 0644, &fd), 0);
	assert_int_equal(sx_create(mp, "other", 0644, &fd2), 0);
	for (i = 0; i < 24; i++) {
		assert_int_equal(put(mp, fd, i, 9), 0);
		assert_int_equal(put(mp, fd2, i, 10), 0);
	}
	assert_int_equal(sx_close(mp, fd2), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	/* one-block extents until the inode holds no more of them */
	assert_int_equal(sx_create(mp, "mid", 0644, &fd), 0);
	for (inline_max = 0; format(mp, fd) == SX_DIF_INLINE; inline_max++)
		assert_int_equal(put(mp, fd, 2 * inline_max, 11), 0);
	inline_max--;
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unlink(mp, "mid"), 0);
	assert_int_equal(sx_create(mp, "mid", 0644, &fd), 0);
	for (i = 0; i < inline_max; i++)
		assert_int_equal(put(mp, fd, 2 * i, 11), 0);
	assert_int_equal(format(mp, fd), SX_DIF_INLINE);
	assert_int_equal(sx_close(mp, fd), 0);
	/* unwritten blocks */
	assert_int_equal(sx_create(mp, "unw", 0644, &fd), 0);
	assert_int_equal(sx_fallocate(mp, fd, 0, 8 * BS), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_checker(base, 0, NULL), 0);
}

/* ------------------------------------------------------------ what the mount shows */

struct names {
	char	n[MAXNAMES][32];
	u32	count;
};

static int names_add(void *arg, const char *name, uint64_t ino)
{
	struct names *nm = arg;

	if (nm->count >= MAXNAMES || strlen(name) >= sizeof(nm->n[0]))
		return -E2BIG;
	strcpy(nm->n[nm->count++], name);
	return 0;
}

static int names_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static u64 mix(u64 h, const void *p, size_t len)
{
	const u8 *b = p;

	while (len--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

/*
 * A digest of everything a user sees: each name, the identity, size,
 * link count and flags of its file, and every byte of it.
 */
static u64 digest(struct sx_mount *mp)
{
	static struct names nm;
	static u8 buf[64 * BS];
	struct sx_stat st;
	u64 h = 0xcbf29ce484222325ull, off;
	u32 i;
	s64 n;
	int fd;

	nm.count = 0;
	assert_int_equal(sx_readdir(mp, names_add, &nm), 0);
	qsort(nm.n, nm.count, sizeof(nm.n[0]), names_cmp);
	for (i = 0; i < nm.count; i++) {
		h = mix(h, nm.n[i], strlen(nm.n[i]) + 1);
		assert_int_equal(sx_open(mp, nm.n[i], &fd), 0);
		assert_int_equal(sx_fstat(mp, fd, &st), 0);
		h = mix(h, &st.st_ino, sizeof(st.st_ino));
		h = mix(h, &st.st_size, sizeof(st.st_size));
		h = mix(h, &st.st_nlink, sizeof(st.st_nlink));
		h = mix(h, &st.st_flags, sizeof(st.st_flags));
		for (off = 0; off < st.st_size; off += (u64)n) {
			n = sx_pread(mp, fd, buf, sizeof(buf), off);
			assert_true(n > 0);
			h = mix(h, buf, (size_t)n);
		}
		assert_int_equal(sx_close(mp, fd), 0);
	}
	return h;
}

/* ------------------------------------------------------------ the steps */

struct step {
	const char	*name;
	int		(*run)(struct sx_mount *mp);
	bool		pieces;		/* a failure may leave a part done */
};

static int st_create(struct sx_mount *mp)
{
	int fd, error = sx_create(mp, "newf", 0600, &fd);

	return error ? error : done(mp, fd, 0);
}

static int st_link(struct sx_mount *mp)
{
	int fd, error = openf(mp, "small", &fd);

	return error ? error : done(mp, fd, sx_link(mp, fd, "small.l"));
}

static int st_rename_over(struct sx_mount *mp)
{
	return sx_rename(mp, "n010", "n020");
}

static int st_rename_big(struct sx_mount *mp)
{
	return sx_rename(mp, "big", "zz");
}

static int st_unlink_big(struct sx_mount *mp)
{
	return sx_unlink(mp, "big");
}

static int st_unlink_shared(struct sx_mount *mp)
{
	return sx_unlink(mp, "dst");
}

/* The file is freed at its last close, not at the unlink. */
static int st_unlink_open(struct sx_mount *mp)
{
	int fd, error = openf(mp, "big", &fd);

	return error ? error : done(mp, fd, sx_unlink(mp, "big"));
}

static int st_tmpfile(struct sx_mount *mp)
{
	int fd, error = sx_open_tmpfile(mp, 0600, &fd);
	u64 i;

	if (error)
		return error;
	for (i = 0; i < 4 && !error; i++)
		error = put(mp, fd, i, 4);
	if (!error)
		error = sx_link(mp, fd, "tmpl");
	return done(mp, fd, error);
}

static int count_names(void *arg, const char *name, uint64_t ino)
{
	(*(u32 *)arg)++;
	return 0;
}

static int st_readdir(struct sx_mount *mp)
{
	u32 n = 0;
	int error = sx_readdir(mp, count_names, &n);

	if (!error)
		assert_int_equal(n, NNAMES + 8);
	return error;
}

static int st_write_hole(struct sx_mount *mp)
{
	int fd, error = openf(mp, "big", &fd);

	return error ? error : done(mp, fd, put(mp, fd, 301, 5));
}

static int st_write_cow(struct sx_mount *mp)
{
	int fd, error = openf(mp, "dst", &fd);

	return error ? error : done(mp, fd, put(mp, fd, 3, 6));
}

static int st_punch(struct sx_mount *mp)
{
	int fd, error = openf(mp, "big", &fd);

	return error ? error : done(mp, fd, sx_punch(mp, fd, 100 * BS, 100 * BS));
}

static int st_truncate(struct sx_mount *mp)
{
	int fd, error = openf(mp, "big", &fd);

	return error ? error : done(mp, fd, sx_truncate(mp, fd, 10 * BS));
}

static int st_falloc(struct sx_mount *mp)
{
	int fd, error = openf(mp, "big", &fd);

	return error ? error : done(mp, fd, sx_fallocate(mp, fd, BS, 40 * BS));
}

static int st_clone_into(struct sx_mount *mp)
{
	int fd, fd2, error = openf(mp, "big", &fd);

	if (error)
		return error;
	error = openf(mp, "src", &fd2);
	if (error)
		return done(mp, fd, error);
	error = sx_clone_range(mp, fd, 1 * BS, fd2, 0, 16 * BS);
	return done(mp, fd, done(mp, fd2, error));
}

static int st_fiemap(struct sx_mount *mp)
{
	struct sx_extent ext[16];
	u32 n = 0;
	int fd, error = openf(mp, "big", &fd);

	if (error)
		return error;
	error = sx_fiemap(mp, fd, 500 * BS, 40 * BS, ext, 16, &n);
	if (!error) {
		assert_int_equal(n, 16);
		assert_int_equal(ext[0].ex_off, 500 * BS);
	}
	return done(mp, fd, error);
}

static int st_setflags(struct sx_mount *mp)
{
	int fd, error = openf(mp, "big", &fd);

	return error ? error : done(mp, fd, sx_setflags(mp, fd, SX_DIFLAG_APPEND));
}

static int st_write_unwritten(struct sx_mount *mp)
{
	int fd, error = openf(mp, "unw", &fd);

	return error ? error : done(mp, fd, put(mp, fd, 2, 7));
}

/* Forty extents into the holes of one stretch: its leaf splits. */
static int st_fill_holes(struct sx_mount *mp)
{
	int fd, error = openf(mp, "big", &fd);
	u64 b;

	for (b = 201; b < 280 && !error; b += 2)
		error = put(mp, fd, b, 8);
	return error ? error : done(mp, fd, 0);
}

/* Sixty new names: leaves of the directory's tree split. */
static int st_create_many(struct sx_mount *mp)
{
	char name[16];
	int fd, error = 0;
	u32 i;

	for (i = 0; i < 60 && !error; i++) {
		snprintf(name, sizeof(name), "m%03u", i);
		error = sx_create(mp, name, 0600, &fd);
		if (!error)
			error = sx_close(mp, fd);
	}
	return error;
}

/* Ninety names removed: leaves of the directory's tree merge. */
static int st_unlink_many(struct sx_mount *mp)
{
	char name[16];
	int error = 0;
	u32 i;

	for (i = 0; i < 90 && !error; i++) {
		snprintf(name, sizeof(name), "n%03u", i);
		error = sx_unlink(mp, name);
	}
	return error;
}

/* The contents stay; the copy swapped in is in one extent. */
static int st_defrag(struct sx_mount *mp)
{
	struct sx_defrag_result res;
	int fd, error = openf(mp, "frag", &fd);

	if (error)
		return error;
	error = sx_defrag_file(mp, fd, 0, &res);
	if (!error) {
		assert_int_equal(res.dr_skipped, SX_DEFRAG_DONE);
		assert_int_equal(res.dr_before, 24);
		assert_int_equal(res.dr_after, 1);
	}
	return done(mp, fd, error);
}

/* One extent more than the inode holds: the fork becomes a B+tree. */
static int st_to_btree(struct sx_mount *mp)
{
	int fd, error = openf(mp, "mid", &fd);

	if (error)
		return error;
	error = put(mp, fd, 2 * inline_max, 12);
	if (!error)
		assert_int_equal(format(mp, fd), SX_DIF_BTREE);
	return done(mp, fd, error);
}

static const struct step steps[] = {
	{ "create", st_create },
	{ "link", st_link },
	{ "rename over", st_rename_over },
	{ "rename big", st_rename_big },
	{ "unlink big", st_unlink_big },
	{ "unlink shared", st_unlink_shared },
	{ "unlink open", st_unlink_open },
	{ "tmpfile", st_tmpfile },
	{ "readdir", st_readdir },
	{ "write hole", st_write_hole },
	{ "write cow", st_write_cow },
	{ "write unwritten", st_write_unwritten },
	{ "punch", st_punch, true },
	{ "truncate", st_truncate, true },
	{ "fallocate", st_falloc, true },
	{ "clone into", st_clone_into, true },
	{ "fiemap", st_fiemap },
	{ "setflags", st_setflags },
	{ "fill holes", st_fill_holes, true },
	{ "create many", st_create_many, true },
	{ "unlink many", st_unlink_many, true },
	{ "defrag", st_defrag },
	{ "to btree", st_to_btree },
};

/* ------------------------------------------------------------ the loop */

enum kind { K_READ, K_WRITE, K_ALLOC };

static const char *const kind_name[] = { "read", "write", "alloc" };

/*
 * The state before and after @s, the step run without a fault; *@allocs
 * is how many allocations the step made.
 */
static u64 digest_after(const struct step *s, u64 *before, u64 *allocs)
{
	struct sx_bdev *img = sxt_bdev_copy(base);
	struct sx_mount *mp = sxt_mount(img);
	struct sx_alloc_stats a0, a1;
	u64 h;

	*before = digest(mp);
	assert_int_equal(sx_unmount(mp), 0);
	mp = sxt_mount(img);
	sx_alloc_get_stats(&a0);
	assert_int_equal(s->run(mp), 0);
	sx_alloc_get_stats(&a1);
	*allocs = a1.as_calls - a0.as_calls;
	assert_int_equal(sx_unmount(mp), 0);
	mp = sxt_mount(img);
	h = digest(mp);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_checker(img, 0, NULL), 0);
	sx_bdev_destroy(img);
	sx_rcu_barrier();
	return h;
}

/*
 * Run @s with the @n-th read (and every one after it) or the @n-th
 * allocation failing and check what it left.  Returns whether the fault
 * struck; *@failed says whether the step failed.
 */
static bool point(const struct step *s, enum kind k, u64 n, u64 before, u64 after, bool *failed)
{
	struct sx_bdev *img, *cbd;
	struct sx_crashdev_stats cs;
	struct sx_alloc_stats a0, a1;
	struct sx_crashdev *cd;
	struct sx_mount *mp;
	bool hit, shut;
	int error;
	u64 h, live = 0;

	sx_alloc_get_stats(&a0);
	img = sxt_bdev_copy(base);
	assert_int_equal(sx_crashdev_create(img, n, &cbd, &cd), 0);
	mp = sxt_mount(cbd);
	if (k != K_ALLOC)
		sx_crashdev_fail(cd, k == K_READ ? SX_IO_READ : SX_IO_WRITE, n, true, -EIO);
	else
		sx_alloc_fail(n, false);
	error = s->run(mp);
	sx_alloc_fail(0, false);
	sx_crashdev_clear_faults(cd);
	sx_crashdev_get_stats(cd, &cs);
	sx_alloc_get_stats(&a1);
	hit = k != K_ALLOC ? cs.cs_injected_errors != 0 : a1.as_failed != a0.as_failed;
	if (error) {
		if (!hit)
			fail_msg("%s: %s %llu: error %d with no fault", s->name,
				 kind_name[k], (unsigned long long)n, error);
		if (error != (k != K_ALLOC ? -EIO : -ENOMEM))
			fail_msg("%s: %s %llu: error %d (%s)", s->name,
				 kind_name[k], (unsigned long long)n, error,
				 sx_strerror(error));
	}
	shut = sx_is_shutdown(mp);
	/*
	 * A mount the fault did not shut down goes on: what it shows now
	 * must be what the disk holds, which the remount shows (a cancel
	 * that left an in-core inode changed would show a file the disk
	 * does not have).
	 */
	if (!shut)
		live = digest(mp);
	if (shut)
		sx_unmount(mp);
	else
		assert_int_equal(sx_unmount(mp), 0);

	mp = sxt_mount(cbd);
	h = digest(mp);
	assert_int_equal(sx_unmount(mp), 0);
	if (!shut && live != h)
		fail_msg("%s: %s %llu: the mount went on showing files the disk does not hold",
			 s->name, kind_name[k], (unsigned long long)n);
	if (!error && h != after)
		fail_msg("%s: %s %llu: succeeded but the files are not the step's", s->name,
			 kind_name[k], (unsigned long long)n);
	if (error && !s->pieces && h != before && h != after)
		fail_msg("%s: %s %llu: failed, the files neither before nor after", s->name,
			 kind_name[k], (unsigned long long)n);
	sx_bdev_destroy(cbd);
	assert_int_equal(sxc_checker(img, 0, NULL), 0);
	sx_bdev_destroy(img);
	*failed = error != 0;
	return hit;
}

/*
 * The allocation points of a step: each of the first and of the last
 * ALLOC_ALL (where a call starts and where it finishes: a fork changing
 * form, the last free), and ALLOC_ALL spread over the rest (a step that
 * frees 300 extents allocates thousands of times, the same few
 * allocations over again).  Reads and writes: each one, a step does a
 * few dozen.
 */
#define ALLOC_ALL	48u

static u64 next_point(enum kind k, u64 n, u64 allocs)
{
	if (k != K_ALLOC || n < ALLOC_ALL || allocs <= 3 * ALLOC_ALL ||
	    n + ALLOC_ALL >= allocs)
		return n + 1;
	return sx_min(n + (allocs - 2 * ALLOC_ALL) / ALLOC_ALL, allocs - ALLOC_ALL);
}

static void loop(enum kind k)
{
	u32 i, total = 0;

	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		const struct step *s = &steps[i];
		u64 before, allocs, after = digest_after(s, &before, &allocs), n;
		struct sx_alloc_stats a0, a1;
		u32 fails = 0, points = 0;
		bool failed, hit = true;

		/* (digest_after() ended with an RCU barrier: no inode waits to be freed) */
		sx_alloc_get_stats(&a0);
		for (n = 1; hit; n = next_point(k, n, allocs)) {
			assert_true(n < 100000);
			hit = point(s, k, n, before, after, &failed);
			fails += failed;
			points++;
		}
		/*
		 * Every allocation of the points is freed, inodes after an RCU
		 * grace period (one barrier for all: each costs milliseconds).
		 */
		sx_rcu_barrier();
		sx_alloc_get_stats(&a1);
		if (a1.as_live != a0.as_live)
			fail_msg("%s: %s: %lld allocations not freed", s->name, kind_name[k],
				 (long long)(a1.as_live - a0.as_live));
		/*
		 * every step reads blocks no cache holds, and allocates; only
		 * some write before they return (data, a sync, a full log)
		 */
		assert_true(fails > 0 || k == K_WRITE);
		total += points;
		if (getenv("SX_TEST_VERBOSE"))
			printf("  %s: %u points, %u failed (%llu allocations)\n", s->name, points,
			       fails, (unsigned long long)allocs);
	}
	printf("%s: %u points\n", kind_name[k], total);
}

static void test_read_faults(void **state)
{
	loop(K_READ);
}

static void test_write_faults(void **state)
{
	loop(K_WRITE);
}

static void test_alloc_faults(void **state)
{
	loop(K_ALLOC);
}

/* ------------------------------------------------------------ mkfs */

/*
 * mkfs on a device whose N-th write or flush fails (from then on), or
 * whose N-th allocation fails: the error comes back, nothing is left
 * allocated, and a second mkfs on the same device makes a filesystem
 * that mounts and checks clean.  Bad arguments are refused.
 */
static void test_mkfs_faults(void **state)
{
	static const enum sx_io_kind kinds[] = { SX_IO_WRITE, SX_IO_FLUSH };
	struct sx_crashdev_stats cs;
	struct sx_alloc_stats a0, a1;
	struct sx_bdev *md, *cbd;
	struct sx_crashdev *cd;
	struct sx_mount *mp;
	u32 k, fails = 0, logmin, res;
	u64 n;
	bool hit;
	int error;

	assert_int_equal(sx_mkfs(NULL, NULL), -EINVAL);
	assert_int_equal(sx_memdev_create(8 * MIB, 512, &md), 0);
	assert_int_equal(sx_mkfs_log_min(NULL, NULL, &logmin, &res), -EINVAL);
	assert_int_equal(sx_mkfs_log_min(md, NULL, NULL, &res), -EINVAL);
	assert_int_equal(sx_mkfs_log_min(md, NULL, &logmin, NULL), -EINVAL);
	for (k = 0; k <= ARRAY_SIZE(kinds); k++) {
		for (n = 1, hit = true; hit; n++) {
			assert_true(n < 10000);
			assert_int_equal(sx_crashdev_create(md, n, &cbd, &cd), 0);
			sx_alloc_get_stats(&a0);
			if (k < ARRAY_SIZE(kinds))
				sx_crashdev_fail(cd, kinds[k], n, true, -EIO);
			else
				sx_alloc_fail(n, false);
			error = sx_mkfs(cbd, NULL);
			sx_alloc_fail(0, false);
			sx_crashdev_clear_faults(cd);
			sx_crashdev_get_stats(cd, &cs);
			sx_alloc_get_stats(&a1);
			hit = k < ARRAY_SIZE(kinds) ? cs.cs_injected_errors != 0 :
			      a1.as_failed != a0.as_failed;
			assert_int_equal(a1.as_live, a0.as_live);
			if (hit) {
				assert_int_equal(error, k < ARRAY_SIZE(kinds) ? -EIO : -ENOMEM);
				fails++;
				assert_int_equal(sx_mkfs(cbd, NULL), 0);
			} else {
				assert_int_equal(error, 0);
			}
			mp = sxt_mount(cbd);
			assert_int_equal(sx_unmount(mp), 0);
			sx_bdev_destroy(cbd);
			assert_int_equal(sxc_checker(md, 0, NULL), 0);
		}
	}
	/* the superblock copies, the bitmap, fsinfo, root, log; flushes; buffers */
	assert_true(fails >= 8);
	sx_bdev_destroy(md);
}

static char last_err[256];

static void err_cb(void *arg, enum sx_log_level level, const char *msg)
{
	if (level <= SX_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
}

/*
 * A device with room for the smallest geometry but not for the smallest
 * log of its block size: mkfs refuses it and says so; a device one step
 * larger takes it.
 */
static void test_mkfs_small_device(void **state)
{
	struct sx_mkfs_opts mo = { .mk_blocksize = 4096 };
	struct sx_bdev *md;
	u64 size;
	int error = -EINVAL;
	bool said = false;

	sx_set_log_callback(err_cb, NULL);
	for (size = 64 * 4096; error; size += 16 * 4096) {
		assert_true(size < 64 * MIB);
		assert_int_equal(sx_memdev_create(size, 512, &md), 0);
		last_err[0] = 0;
		error = sx_mkfs(md, &mo);
		if (error) {
			assert_int_equal(error, -EINVAL);
			said |= strstr(last_err, "too small for the smallest log") != NULL;
		}
		sx_bdev_destroy(md);
	}
	sxt_quiet();
	assert_true(said);
}

static int group_setup(void **state)
{
	make_base();
	return 0;
}

static int group_teardown(void **state)
{
	sx_bdev_destroy(base);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_faults),
		cmocka_unit_test(test_write_faults),
		cmocka_unit_test(test_alloc_faults),
		cmocka_unit_test(test_mkfs_faults),
		cmocka_unit_test(test_mkfs_small_device),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
