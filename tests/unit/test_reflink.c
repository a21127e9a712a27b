// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Clone tests (engine/reflink.c) through the public file API: FICLONE and
 * FICLONERANGE semantics (what is shared, holes and unwritten extents,
 * sizes, the REFLINK flag, refcounts, blocks freed from the destination),
 * every error (alignment, overlap, EOF, bad descriptors, immutable,
 * append-only and swap files), copy-on-write (writing either file never
 * changes the other), unlinking either side, persistence, a power cut
 * after one file lets go of blocks the other then overwrites (at one
 * write, and at every write of the sequence), a block another thread frees
 * while a copy-on-write or a fallocate allocates never takes data before
 * its free is durable, and the checker clean after each case.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>
#include "sxcrash.h"
#include "inode.h"
#include "file.h"
#include "refcount.h"
#include "fsinfo.h"
#include "reflink.h"

#define MIB	(1ull << 20)
#define BS	4096u

static struct sx_bdev *bd;
static struct sx_mount *mp;

/* A fresh filesystem for each test. */
static int setup(void **state)
{
	bd = sxt_memfs(64 * MIB, BS, 4096);
	mp = sxt_mount(bd);
	return 0;
}

/* 1 KiB blocks: one free takes at most 8,192 of them (sx_alloc_max_extent()). */
static int setup_small_blocks(void **state)
{
	bd = sxt_memfs(32 * MIB, 1024, 0);
	mp = sxt_mount(bd);
	return 0;
}

/* Unmount, and the checker must find nothing wrong. */
static int teardown(void **state)
{
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(bd, 0, "teardown"), 0);
	sx_bdev_destroy(bd);
	return 0;
}

/* The byte at @off of the pattern @seed. */
static u8 pat(u64 seed, u64 off)
{
	u64 x = (off / 8) * 0x9e3779b97f4a7c15ull ^ seed;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return (u8)(x >> (off % 8 * 8));
}

/* Write @len bytes of pattern @seed at @off: 0 or the write's error. */
static int put_err(int fd, u64 off, u64 len, u64 seed)
{
	u8 *buf = malloc(len);
	s64 n;
	u64 i;

	for (i = 0; i < len; i++)
		buf[i] = pat(seed, off + i);
	n = sx_pwrite(mp, fd, buf, len, off);
	free(buf);
	return n < 0 ? (int)n : (n == (s64)len ? 0 : -EIO);
}

/* Write @len bytes of pattern @seed at @off. */
static void put(int fd, u64 off, u64 len, u64 seed)
{
	assert_int_equal(put_err(fd, off, len, seed), 0);
}

/* [@off, +@len) of @fd holds what put(@seed) wrote at @src (0: zeroes). */
static bool holds_from(int fd, u64 off, u64 len, u64 seed, u64 src)
{
	u8 *buf = malloc(len);
	bool ok;
	u64 i;

	ok = sx_pread(mp, fd, buf, len, off) == (s64)len;
	for (i = 0; ok && i < len; i++)
		ok = buf[i] == (seed ? pat(seed, src + i) : 0);
	free(buf);
	return ok;
}

/* [@off, +@len) of @fd holds what put(@seed) wrote there (0: zeroes). */
static bool holds(int fd, u64 off, u64 len, u64 seed)
{
	return holds_from(fd, off, len, seed, off);
}

/* Create and open @name. */
static int mk(const char *name)
{
	int fd;

	assert_int_equal(sx_create(mp, name, 0644, &fd), 0);
	return fd;
}

/* The size of @fd. */
static u64 fsize(int fd)
{
	struct sx_stat st;

	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	return st.st_size;
}

/* The flags of @fd. */
static u32 fflags(int fd)
{
	struct sx_stat st;

	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	return st.st_flags;
}

/* The device block of byte @off of @fd, or 0 for a hole; *@unwritten its state. */
static u64 phys(int fd, u64 off, bool *unwritten)
{
	struct sx_extent ext[4];
	u32 n = 0;

	assert_int_equal(sx_fiemap(mp, fd, off, BS, ext, 4, &n), 0);
	if (unwritten)
		*unwritten = false;
	if (n == 0 || ext[0].ex_off > off)
		return 0;
	if (unwritten)
		*unwritten = ext[0].ex_flags & SX_EXTENT_UNWRITTEN;
	return (ext[0].ex_physical + (off - ext[0].ex_off)) / BS;
}

/* The refcount of device block @bno. */
static u32 refc(u64 bno)
{
	u32 count;

	assert_int_equal(sx_refcount_get(mp, bno, &count), 0);
	return count;
}

/* FICLONE shares every block; both files get REFLINK; refcounts become 2. */
static void test_clone_whole(void **state)
{
	int a = mk("a"), b = mk("b");
	u64 free0, i;

	put(a, 0, 10 * BS, 1);
	free0 = sx_alloc_free_blocks(mp);
	assert_int_equal(sx_clone(mp, b, a), 0);
	assert_int_equal(fsize(b), 10 * BS);
	assert_true(holds(b, 0, 10 * BS, 1));
	assert_true(fflags(a) & SX_DIFLAG_REFLINK);
	assert_true(fflags(b) & SX_DIFLAG_REFLINK);
	for (i = 0; i < 10; i++) {
		u64 p = phys(a, i * BS, NULL);

		assert_true(p != 0);
		assert_int_equal(phys(b, i * BS, NULL), p);
		assert_int_equal(refc(p), 2);
	}
	/* only refcount tree blocks were allocated */
	assert_true(free0 - sx_alloc_free_blocks(mp) <= 1);
	/* a second clone onto another file makes it 3 */
	{
		int c = mk("c");

		assert_int_equal(sx_clone(mp, c, b), 0);
		assert_int_equal(refc(phys(a, 0, NULL)), 3);
		assert_int_equal(sx_close(mp, c), 0);
		assert_int_equal(sx_unlink(mp, "c"), 0);
		assert_int_equal(refc(phys(a, 0, NULL)), 2);
	}
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

/* Writing either side after a clone never changes the other. */
static void test_clone_cow(void **state)
{
	int a = mk("a"), b = mk("b");
	u64 pa;

	put(a, 0, 8 * BS, 2);
	assert_int_equal(sx_clone(mp, b, a), 0);
	pa = phys(a, 3 * BS, NULL);
	put(b, 3 * BS + 100, 50, 3);
	assert_true(holds(a, 0, 8 * BS, 2));
	assert_true(holds(b, 3 * BS + 100, 50, 3));
	assert_true(holds(b, 3 * BS, 100, 2));
	assert_true(holds(b, 3 * BS + 150, BS - 150, 2));
	assert_true(phys(b, 3 * BS, NULL) != pa);
	assert_int_equal(refc(pa), 1);
	assert_int_equal(refc(phys(b, 3 * BS, NULL)), 1);
	/* and the source side */
	put(a, 0, 2 * BS, 4);
	assert_true(holds(b, 0, 2 * BS, 2));
	assert_true(holds(a, 0, 2 * BS, 4));
	assert_true(holds(a, 2 * BS, 6 * BS, 2));
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

/* Ranges: holes stay holes, unwritten stays unwritten, old blocks go, size grows. */
static void test_clone_range_shapes(void **state)
{
	int a = mk("a"), b = mk("b");
	bool unw;
	u64 free0, old;

	put(a, 0, 2 * BS, 5);
	put(a, 6 * BS, 2 * BS, 6);			/* hole at [2, 6) */
	assert_int_equal(sx_fallocate(mp, a, 8 * BS, 2 * BS), 0);	/* unwritten [8, 10) */
	put(b, 0, 12 * BS, 7);
	old = phys(b, 4 * BS, NULL);
	free0 = sx_alloc_free_blocks(mp);
	/* blocks [1, 10) of a onto [3, 12) of b */
	assert_int_equal(sx_clone_range(mp, b, 3 * BS, a, BS, 9 * BS), 0);
	assert_true(holds(b, 0, 3 * BS, 7));
	/* what put() wrote at a's offsets, now at b's */
	assert_true(holds_from(b, 3 * BS, BS, 5, BS));
	assert_int_equal(phys(b, 4 * BS, NULL), 0);	/* the hole came along */
	assert_true(holds(b, 4 * BS, 4 * BS, 0));
	assert_true(holds_from(b, 8 * BS, 2 * BS, 6, 6 * BS));
	assert_true(phys(b, 10 * BS, &unw) != 0 && unw);
	assert_true(holds(b, 10 * BS, 2 * BS, 0));
	assert_int_equal(fsize(b), 12 * BS);
	/* b's own 9 blocks there were freed; the shared ones cost nothing */
	assert_true(sx_alloc_free_blocks(mp) + 1 >= free0 + 9);
	assert_int_equal(refc(phys(a, 6 * BS, NULL)), 2);
	(void)old;
	/* past the destination's EOF: the size grows to cover the range */
	assert_int_equal(sx_clone_range(mp, b, 20 * BS, a, 0, 2 * BS), 0);
	assert_int_equal(fsize(b), 22 * BS);
	assert_true(holds(b, 12 * BS, 8 * BS, 0));
	assert_true(holds_from(b, 20 * BS, 2 * BS, 5, 0));
	/* within one file, not overlapping */
	assert_int_equal(sx_clone_range(mp, a, 20 * BS, a, 0, 2 * BS), 0);
	assert_true(holds_from(a, 20 * BS, 2 * BS, 5, 0));
	assert_int_equal(refc(phys(a, 0, NULL)), 3);
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

/* A length reaching the source's EOF takes its partial last block. */
static void test_clone_eof(void **state)
{
	int a = mk("a"), b = mk("b"), c = mk("c");

	put(a, 0, 2 * BS + 1000, 8);
	assert_int_equal(sx_clone(mp, b, a), 0);
	assert_int_equal(fsize(b), 2 * BS + 1000);
	assert_true(holds(b, 0, 2 * BS + 1000, 8));
	/* len 0 from an offset: to EOF */
	assert_int_equal(sx_clone_range(mp, c, 4 * BS, a, BS, 0), 0);
	assert_int_equal(fsize(c), 5 * BS + 1000);
	{
		u8 buf[BS + 1000];
		u64 i;

		assert_int_equal(sx_pread(mp, c, buf, sizeof(buf), 4 * BS), (s64)sizeof(buf));
		for (i = 0; i < sizeof(buf); i++)
			assert_int_equal(buf[i], pat(8, BS + i));
	}
	/* a length past EOF is cut to EOF */
	assert_int_equal(sx_clone_range(mp, c, 8 * BS, a, 0, 100 * BS), 0);
	assert_int_equal(fsize(c), 10 * BS + 1000);
	/* the partial EOF block into the middle of a file: refused */
	put(c, 0, 20 * BS, 9);
	assert_int_equal(sx_clone_range(mp, c, 0, a, 0, 0), -EINVAL);
	/* an empty source: nothing to do */
	{
		int e = mk("e");

		assert_int_equal(sx_clone(mp, c, e), 0);
		assert_int_equal(fsize(c), 20 * BS);
		assert_int_equal(sx_close(mp, e), 0);
	}
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_close(mp, c), 0);
}

/* Every refused request, each leaving both files untouched. */
static void test_clone_errors(void **state)
{
	int a = mk("a"), b = mk("b");

	put(a, 0, 4 * BS, 10);
	put(b, 0, 4 * BS, 11);
	assert_int_equal(sx_clone_range(mp, b, 1, a, 0, BS), -EINVAL);
	assert_int_equal(sx_clone_range(mp, b, 0, a, 1, BS), -EINVAL);
	assert_int_equal(sx_clone_range(mp, b, 0, a, 0, 100), -EINVAL);
	assert_int_equal(sx_clone_range(mp, b, 0, a, 4 * BS, BS), -EINVAL);
	assert_int_equal(sx_clone_range(mp, b, 0, a, 5 * BS, 0), -EINVAL);
	assert_int_equal(sx_clone_range(mp, b, ~0ull - BS + 1, a, 0, 2 * BS), -EINVAL);
	/* a source range that wraps; a destination past the largest offset */
	assert_int_equal(sx_clone_range(mp, b, 0, a, BS, ~0ull - BS + 1), -EINVAL);
	assert_int_equal(sx_clone_range(mp, b, (1ull << 63) - BS, a, 0, BS), -EFBIG);
	assert_int_equal(fsize(b), 4 * BS);
	assert_int_equal(sx_clone_range(mp, a, BS, a, 0, 2 * BS), -EINVAL);
	assert_int_equal(sx_clone(mp, a, a), -EINVAL);
	assert_int_equal(sx_clone(mp, b, 999), -EBADF);
	assert_int_equal(sx_clone(mp, 999, a), -EBADF);
	assert_int_equal(sx_clone(mp, -1, a), -EBADF);
	assert_int_equal(sx_setflags(mp, b, SX_DIFLAG_IMMUTABLE), 0);
	assert_int_equal(sx_clone(mp, b, a), -EPERM);
	assert_int_equal(sx_setflags(mp, b, SX_DIFLAG_APPEND), 0);
	assert_int_equal(sx_clone(mp, b, a), -EPERM);
	assert_int_equal(sx_setflags(mp, b, SX_DIFLAG_SWAPFILE), 0);
	assert_int_equal(sx_clone(mp, b, a), -ETXTBSY);
	assert_int_equal(sx_clone(mp, a, b), -ETXTBSY);
	assert_int_equal(sx_setflags(mp, b, 0), 0);
	/* an immutable source may be cloned from */
	assert_int_equal(sx_setflags(mp, a, SX_DIFLAG_IMMUTABLE), 0);
	assert_true(holds(b, 0, 4 * BS, 11));
	assert_int_equal(sx_clone(mp, b, a), 0);
	assert_true(holds(b, 0, 4 * BS, 10));
	assert_int_equal(sx_setflags(mp, a, 0), 0);
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

/* A directory is -EISDIR (the root, through the inode-level entry point). */
static void test_clone_isdir(void **state)
{
	struct sx_inode *root, *ip;
	int a = mk("a");
	u64 ino = 0;

	put(a, 0, BS, 12);
	assert_int_equal(sx_fd_get(mp, a, &ip), 0);
	assert_int_equal(sx_fsinfo_root_ino(mp, &ino), 0);
	assert_int_equal(sx_iget(mp, ino, 0, &root), 0);
	assert_int_equal(sx_reflink_remap(root, 0, ip, 0, 0), -EISDIR);
	assert_int_equal(sx_reflink_remap(ip, 0, root, 0, 0), -EISDIR);
	assert_int_equal(sx_irele(root), 0);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_close(mp, a), 0);
}

/* Unlinking either side: the other keeps its data; refcounts drop to none. */
static void test_clone_unlink(void **state)
{
	int a = mk("a"), b = mk("b");
	u64 p, free0;

	put(a, 0, 16 * BS, 13);
	free0 = sx_alloc_free_blocks(mp);
	assert_int_equal(sx_clone(mp, b, a), 0);
	p = phys(a, 5 * BS, NULL);
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_unlink(mp, "a"), 0);
	assert_int_equal(refc(p), 1);
	assert_true(holds(b, 0, 16 * BS, 13));
	/* nothing was freed: b owns every block now */
	assert_true(sx_alloc_free_blocks(mp) <= free0 + 1);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_unlink(mp, "b"), 0);
	assert_true(sx_alloc_free_blocks(mp) >= free0 + 16);
}

/* Clones survive unmount; truncating and punching drop references. */
static void test_clone_persist(void **state)
{
	int a = mk("a"), b = mk("b");
	u64 p;

	put(a, 0, 32 * BS, 14);
	assert_int_equal(sx_clone(mp, b, a), 0);
	p = phys(a, 20 * BS, NULL);
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_unmount(mp), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &a), 0);
	assert_int_equal(sx_open(mp, "b", &b), 0);
	assert_true(holds(b, 0, 32 * BS, 14));
	assert_int_equal(refc(p), 2);
	assert_int_equal(sx_truncate(mp, a, 16 * BS), 0);
	assert_int_equal(refc(p), 1);
	assert_int_equal(sx_punch(mp, b, 0, 8 * BS), 0);
	assert_int_equal(refc(phys(a, 0, NULL)), 1);
	assert_true(holds(a, 0, 16 * BS, 14));
	assert_true(holds(b, 8 * BS, 24 * BS, 14));
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

/* The ways a file can stop sharing its blocks with another one. */
enum unshare_how {
	UNSHARE_COW,		/* the other file writes its copy (copy-on-write) */
	UNSHARE_PUNCH,		/* the other file punches its copy away */
	UNSHARE_CLONE_OVER,	/* another file's blocks are cloned over the copy */
};

/*
 * a and b share 4 blocks, durably.  Then b lets go of them (@how), which
 * leaves a their sole owner, and a overwrites them in place; the power
 * goes before anything forces the log, with every volatile write kept.
 * b's change may be lost, but b must never read a's new bytes: an
 * overwrite in place must not reach the disk before the change that made
 * the blocks a's alone.
 */
static void unshare_then_crash(enum unshare_how how)
{
	struct sx_bdev *cbd;
	struct sx_crashdev *cd;
	int a, b, c;

	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sx_crashdev_create(bd, 1, &cbd, &cd), 0);
	mp = sxt_mount(cbd);
	a = mk("a");
	b = mk("b");
	c = mk("c");
	put(a, 0, 4 * BS, 1);
	put(c, 0, 4 * BS, 2);
	assert_int_equal(sx_clone(mp, b, a), 0);
	assert_int_equal(sx_sync(mp), 0);
	switch (how) {
	case UNSHARE_COW:
		put(b, 0, 4 * BS, 3);
		break;
	case UNSHARE_PUNCH:
		assert_int_equal(sx_punch(mp, b, 0, 4 * BS), 0);
		break;
	case UNSHARE_CLONE_OVER:
		assert_int_equal(sx_clone_range(mp, b, 0, c, 0, 4 * BS), 0);
		break;
	}
	assert_int_equal(refc(phys(a, 0, NULL)), 1);
	put(a, 0, 4 * BS, 4);
	sx_crashdev_cut_now(cd, SX_CRASH_KEEP);
	sx_unmount(mp);
	sx_bdev_destroy(cbd);

	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &a), 0);
	assert_int_equal(sx_open(mp, "b", &b), 0);
	assert_true(holds(a, 0, 4 * BS, 1) || holds(a, 0, 4 * BS, 4));
	switch (how) {
	case UNSHARE_COW:
		assert_true(holds(b, 0, 4 * BS, 1) || holds(b, 0, 4 * BS, 3));
		break;
	case UNSHARE_PUNCH:
		assert_true(holds(b, 0, 4 * BS, 1) || holds(b, 0, 4 * BS, 0));
		break;
	case UNSHARE_CLONE_OVER:
		assert_true(holds(b, 0, 4 * BS, 1) || holds(b, 0, 4 * BS, 2));
		break;
	}
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

static void test_clone_crash_unshare_cow(void **state)
{
	unshare_then_crash(UNSHARE_COW);
}

static void test_clone_crash_unshare_punch(void **state)
{
	unshare_then_crash(UNSHARE_PUNCH);
}

static void test_clone_crash_unshare_clone_over(void **state)
{
	unshare_then_crash(UNSHARE_CLONE_OVER);
}

/*
 * Only blocks that lost an owner since the last log force make an
 * overwrite in place wait for the log: writing again into the new blocks
 * copy-on-write gave b, or into a's blocks that were never shared, forces
 * nothing.  (a's blocks are listed in the data manifest of the sync's
 * force: while it is the last force, an overwrite of them would get a
 * fence written first, which the force of a's first block ends.)
 */
static void test_clone_cow_no_force(void **state)
{
	struct sx_log_stats st0, st1;
	int a = mk("a"), b = mk("b");

	put(a, 0, 8 * BS, 1);
	assert_int_equal(sx_clone_range(mp, b, 0, a, 0, 4 * BS), 0);
	assert_int_equal(sx_sync(mp), 0);
	put(b, 0, 4 * BS, 2);
	sx_log_get_stats(mp, &st0);
	put(b, 0, 4 * BS, 3);
	sx_log_get_stats(mp, &st1);
	assert_int_equal(st1.ls_forces, st0.ls_forces);
	/* a's first 4 blocks lost their other owner: that one waits */
	put(a, 0, BS, 5);
	sx_log_get_stats(mp, &st1);
	assert_int_equal(st1.ls_forces, st0.ls_forces + 1);
	put(a, 4 * BS, 4 * BS, 4);
	sx_log_get_stats(mp, &st1);
	assert_int_equal(st1.ls_forces, st0.ls_forces + 1);
	assert_int_equal(st1.ls_fences, st0.ls_fences);
	assert_true(holds(b, 0, 4 * BS, 3));
	assert_true(holds(a, 0, BS, 5));
	assert_true(holds(a, BS, 3 * BS, 1));
	assert_true(holds(a, 4 * BS, 4 * BS, 4));
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

/*
 * More blocks left with one owner between two log forces than the record
 * of them holds (limited here to 32 extents): the oldest are folded
 * together, which only widens what waits, so an overwrite in place of any
 * of them still forces the log first, and once forced nothing waits.
 */
static void test_clone_unshare_many(void **state)
{
	enum { N = 40 };
	struct sx_log_stats st0, st1;
	int a = mk("a"), b = mk("b");
	u32 i;

	sx_refcount_unshared_limit(mp, 32);
	put(a, 0, 2 * N * BS, 1);
	assert_int_equal(sx_clone(mp, b, a), 0);
	assert_int_equal(sx_sync(mp), 0);
	/* N separate punches leave a's even blocks its own, N extents apart */
	for (i = 0; i < N; i++)
		assert_int_equal(sx_punch(mp, b, 2 * i * BS, BS), 0);
	assert_int_equal(refc(phys(a, 0, NULL)), 1);
	assert_int_equal(refc(phys(a, BS, NULL)), 2);
	sx_log_get_stats(mp, &st0);
	/* the first one punched was folded away from its own entry */
	put(a, 0, BS, 2);
	sx_log_get_stats(mp, &st1);
	assert_int_equal(st1.ls_forces, st0.ls_forces + 1);
	/* that force made every punch durable: the last one waits no more */
	put(a, 2 * (N - 1) * BS, BS, 3);
	sx_log_get_stats(mp, &st0);
	assert_int_equal(st0.ls_forces, st1.ls_forces);
	assert_true(holds(a, 0, BS, 2));
	assert_true(holds(a, BS, BS, 1));
	assert_true(holds(b, BS, BS, 1));
	assert_true(holds(b, 0, BS, 0));
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

/*
 * The same punches with the record free to grow: nothing is folded, so an
 * overwrite in place of a block between those left with one owner, which
 * a has always owned alone, waits for nothing; one of those blocks still
 * forces the log first.  (With the fold the first overwrite waited too:
 * an update's write after the previous update's clone was freed did.)
 */
static void test_clone_unshare_many_precise(void **state)
{
	enum { N = 40 };
	struct sx_log_stats st0, st1;
	int a = mk("a"), b = mk("b");
	u32 i;

	put(a, 0, 2 * N * BS, 1);
	/*
	 * a's blocks are in the data manifest of this force: overwriting them
	 * while it is the last force would cost a fence, which is not what
	 * this test counts, so the clones' force comes after it.
	 */
	assert_int_equal(sx_sync(mp), 0);
	/* b shares a's even blocks only */
	for (i = 0; i < N; i++)
		assert_int_equal(sx_clone_range(mp, b, 2 * i * BS, a, 2 * i * BS, BS), 0);
	assert_int_equal(sx_sync(mp), 0);
	for (i = 0; i < N; i++)
		assert_int_equal(sx_punch(mp, b, 2 * i * BS, BS), 0);
	assert_int_equal(refc(phys(a, 0, NULL)), 1);
	assert_int_equal(refc(phys(a, BS, NULL)), 1);
	sx_log_get_stats(mp, &st0);
	put(a, BS, BS, 2);
	put(a, (2 * N - 1) * BS, BS, 2);
	sx_log_get_stats(mp, &st1);
	assert_int_equal(st1.ls_forces, st0.ls_forces);
	put(a, 2 * (N / 2) * BS, BS, 3);
	sx_log_get_stats(mp, &st1);
	assert_int_equal(st1.ls_forces, st0.ls_forces + 1);
	assert_true(holds(a, BS, BS, 2));
	assert_true(holds(a, 2 * (N / 2) * BS, BS, 3));
	assert_true(holds(a, 2 * BS, BS, 1));
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
}

/*
 * Write @n blocks to each of @x and @y in turn, so that neither has two
 * blocks side by side: @n single-block extents each.
 */
static void interleave(int x, int y, u64 n)
{
	u64 i;

	for (i = 0; i < n; i++) {
		put(x, i * BS, BS, 1);
		put(y, i * BS, BS, 2);
	}
	for (i = 1; i < n; i++) {
		assert_true(phys(x, i * BS, NULL) != phys(x, (i - 1) * BS, NULL) + 1);
		assert_true(phys(y, i * BS, NULL) != phys(y, (i - 1) * BS, NULL) + 1);
	}
}

/*
 * A source of N single-block extents (its blocks interleaved with another
 * file's) clones in a few transactions, not three per extent: the
 * destination is a hole, so each transaction raises the refcounts and maps
 * as many pieces as its reservation covers.  Each block is then shared.
 */
static void test_clone_many_extents_batched(void **state)
{
	enum { N = 96 };
	struct sx_log_stats st0, st1;
	int a = mk("a"), c = mk("c"), b = mk("b");
	u64 i, pa;

	interleave(a, c, N);
	sx_log_get_stats(mp, &st0);
	assert_int_equal(sx_clone(mp, b, a), 0);
	sx_log_get_stats(mp, &st1);
	/* the flag and times, then N / SX_REFLINK_BATCH pieces or so each */
	assert_true(st1.ls_trans - st0.ls_trans <= 1 + N / 8);
	assert_int_equal(fsize(b), N * BS);
	assert_true(holds(b, 0, N * BS, 1));
	for (i = 0; i < N; i++) {
		pa = phys(a, i * BS, NULL);
		assert_int_equal(phys(b, i * BS, NULL), pa);
		assert_int_equal(refc(pa), 2);
	}
	/* a clone over a mapped destination still goes piece by piece, in chains */
	put(b, 0, 2 * BS, 3);
	assert_int_equal(sx_clone_range(mp, b, 0, c, 0, 4 * BS), 0);
	assert_true(holds(b, 0, 4 * BS, 2));
	assert_true(holds_from(b, 4 * BS, (N - 4) * BS, 1, 4 * BS));
	assert_int_equal(refc(phys(c, 0, NULL)), 2);
	assert_int_equal(refc(phys(a, 0, NULL)), 1);
	assert_int_equal(refc(phys(a, 2 * BS, NULL)), 1);
	assert_int_equal(refc(phys(a, 4 * BS, NULL)), 2);
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_close(mp, c), 0);
}

/*
 * Freeing a file of N single-block extents takes a few transactions, not
 * two or three per extent: each unmaps as many pieces as its reservation
 * covers and frees them (or drops a reference to them) in itself.  Three
 * kinds: a truncate of a file that shares nothing (plain frees), the last
 * close of an unlinked clone (references dropped, nothing freed), and a
 * truncate of a REFLINK file that owns its blocks alone again (freed by
 * the refcount decrease).  The checker at teardown walks every block.
 */
static void test_free_many_extents_batched(void **state)
{
	enum { N = 96 };
	struct sx_log_stats st0, st1;
	int a = mk("a"), c = mk("c"), b = mk("b");
	u64 i, free0;

	interleave(a, c, N);
	free0 = sx_alloc_free_blocks(mp);
	sx_log_get_stats(mp, &st0);
	assert_int_equal(sx_truncate(mp, c, 0), 0);
	sx_log_get_stats(mp, &st1);
	assert_true(st1.ls_trans - st0.ls_trans <= 2 + N / 8);
	assert_true(sx_alloc_free_blocks(mp) >= free0 + N);

	assert_int_equal(sx_clone(mp, b, a), 0);
	assert_int_equal(refc(phys(a, 0, NULL)), 2);
	assert_int_equal(sx_unlink(mp, "b"), 0);
	free0 = sx_alloc_free_blocks(mp);
	sx_log_get_stats(mp, &st0);
	assert_int_equal(sx_close(mp, b), 0);
	sx_log_get_stats(mp, &st1);
	assert_true(st1.ls_trans - st0.ls_trans <= 2 + N / 8);
	for (i = 0; i < N; i++)
		assert_int_equal(refc(phys(a, i * BS, NULL)), 1);
	assert_true(holds(a, 0, N * BS, 1));
	/* only the inode and refcount tree blocks came back */
	assert_true(sx_alloc_free_blocks(mp) < free0 + N);

	free0 = sx_alloc_free_blocks(mp);
	sx_log_get_stats(mp, &st0);
	assert_int_equal(sx_truncate(mp, a, BS), 0);
	sx_log_get_stats(mp, &st1);
	assert_true(st1.ls_trans - st0.ls_trans <= 2 + N / 8);
	assert_true(sx_alloc_free_blocks(mp) >= free0 + N - 1);
	assert_true(holds(a, 0, BS, 1));
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, c), 0);
}

/*
 * A mapping longer than one free can take (more blocks than a bitmap block
 * covers) does not fit the batch: its blocks go through an EFI beside the
 * unmap, as every piece did before batching, and all come back.
 */
static void test_free_long_extent(void **state)
{
	u64 max = sx_alloc_max_extent(mp), len = max + max / 4, free0;
	struct sx_log_stats st0, st1;
	int f = mk("long");

	free0 = sx_alloc_free_blocks(mp);
	assert_int_equal(sx_fallocate(mp, f, 0, len * 1024), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), free0 - len);
	sx_log_get_stats(mp, &st0);
	assert_int_equal(sx_truncate(mp, f, 0), 0);
	sx_log_get_stats(mp, &st1);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	assert_true(st1.ls_trans - st0.ls_trans >= 2);
	assert_int_equal(sx_close(mp, f), 0);
}

/* Many clone ranges and writes at random against a model of both files. */
static void test_clone_random(void **state)
{
	enum { NF = 3, NBLK = 48 };
	static u8 model[NF][NBLK * BS];
	u64 seed = 0x1234567, sizes[NF] = { 0 };
	int fd[NF], i, op;
	u8 *buf = malloc(NBLK * BS);

	for (i = 0; i < NF; i++) {
		char name[8];

		snprintf(name, sizeof(name), "f%d", i);
		fd[i] = mk(name);
	}
	memset(model, 0, sizeof(model));
	for (op = 0; op < 400; op++) {
		int d = sxt_rand(&seed) % NF, s = sxt_rand(&seed) % NF;
		u64 off = sxt_rand(&seed) % (NBLK - 4), len = 1 + sxt_rand(&seed) % 4;

		if (sxt_rand(&seed) % 2) {
			u64 boff = off * BS + sxt_rand(&seed) % BS, blen = 1 + sxt_rand(&seed) % BS;
			u64 j;

			for (j = 0; j < blen; j++)
				buf[j] = (u8)sxt_rand(&seed);
			assert_int_equal(sx_pwrite(mp, fd[d], buf, blen, boff), (s64)blen);
			memcpy(&model[d][boff], buf, blen);
			if (boff + blen > sizes[d])
				sizes[d] = boff + blen;
		} else {
			u64 soff = sxt_rand(&seed) % (NBLK - 4), doff = off, bytes;
			bool to_eof;
			int error;

			if (soff * BS >= sizes[s])
				continue;
			if ((soff + len) * BS > sizes[s])
				len = sx_howmany(sizes[s], BS) - soff;
			to_eof = (soff + len) * BS >= sizes[s];
			bytes = sx_min(len * BS, sizes[s] - soff * BS);
			error = sx_clone_range(mp, fd[d], doff * BS, fd[s], soff * BS,
					       to_eof ? 0 : len * BS);
			if (d == s && doff < soff + len && soff < doff + len) {
				assert_int_equal(error, -EINVAL);
				continue;
			}
			if (to_eof && sizes[s] % BS && doff * BS + bytes < sizes[d]) {
				/* the partial EOF block into the middle of a file */
				assert_int_equal(error, -EINVAL);
				continue;
			}
			assert_int_equal(error, 0);
			{

				memmove(&model[d][doff * BS], &model[s][soff * BS], len * BS);
				if (doff * BS + bytes > sizes[d])
					sizes[d] = doff * BS + bytes;
			}
		}
		for (i = 0; i < NF; i++) {
			assert_int_equal(fsize(fd[i]), sizes[i]);
			assert_int_equal(sx_pread(mp, fd[i], buf, sizes[i], 0), (s64)sizes[i]);
			assert_memory_equal(buf, model[i], sizes[i]);
		}
	}
	for (i = 0; i < NF; i++)
		assert_int_equal(sx_close(mp, fd[i]), 0);
	free(buf);
}

/* Each 512-byte sector of [@off, +@len) of @fd holds pattern @s1 or @s2. */
static bool holds_either(int fd, u64 off, u64 len, u64 s1, u64 s2)
{
	u64 k;

	for (k = off; k < off + len; k += 512)
		if (!holds(fd, k, 512, s1) && !holds(fd, k, 512, s2))
			return false;
	return true;
}

/*
 * Copy-on-write of b's block 1 leaves a's block 1 with one owner, in a
 * transaction that is not durable yet; then a overwrites that block in
 * place.  The overwrite must wait until the unshare is durable: a crash
 * before would give the block back to both files, with a's new data in it,
 * and b's contents, durable since the clone, would be lost (found by
 * crash_clone seed 2987835946930191577).  The power is cut at every write,
 * kept, dropped and torn; b must always read as the clone left it, or with
 * its own write.
 */
static void test_clone_unshare_crash(void **state)
{
	static const enum sx_crash_mode modes[] = { SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR };
	struct sx_crashdev_stats st;
	struct sx_crashdev *cd;
	struct sx_bdev *img, *cbd;
	u64 w, nwrites = 0, points = 0, problems;
	int a = mk("a"), b = mk("b"), m, error, error2;

	put(a, 0, 4 * BS, 21);
	assert_int_equal(sx_clone(mp, b, a), 0);
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_unmount(mp), 0);
	for (w = 0; w == 0 || w <= nwrites; w++) {
		for (m = 0; m < 3; m++) {
			img = sxt_bdev_copy(bd);
			assert_int_equal(sx_crashdev_create(img, w * 3 + m, &cbd, &cd), 0);
			if (w)
				sx_crashdev_cut_at_write(cd, w, modes[m]);
			mp = NULL;
			error = sx_mount(cbd, NULL, &mp);
			if (error)
				mp = NULL;
			if (!error)
				error = sx_open(mp, "a", &a);
			if (!error)
				error = sx_open(mp, "b", &b);
			if (!error)
				error = put_err(b, BS + 100, 50, 22);
			if (!error)
				error = put_err(a, BS, BS, 23);
			if (mp) {
				error2 = sx_unmount(mp);
				if (!error)
					error = error2;
			}
			sx_crashdev_get_stats(cd, &st);
			sx_bdev_destroy(cbd);
			if (!w) {
				assert_int_equal(error, 0);
				nwrites = st.cs_writes;
			} else {
				assert_true(error != 0);
			}
			mp = sxt_mount(img);
			assert_int_equal(sx_open(mp, "a", &a), 0);
			assert_int_equal(sx_open(mp, "b", &b), 0);
			assert_true(holds(b, 0, BS + 100, 21));
			/* (one sector: b's write is there whole or not at all) */
			assert_true(holds(b, BS + 100, 50, 21) || holds(b, BS + 100, 50, 22));
			assert_true(holds(b, BS + 150, 3 * BS - 150, 21));
			assert_true(holds(a, 0, BS, 21));
			assert_true(holds_either(a, BS, BS, 21, 23));
			assert_true(holds(a, 2 * BS, 2 * BS, 21));
			assert_int_equal(sx_close(mp, a), 0);
			assert_int_equal(sx_close(mp, b), 0);
			assert_int_equal(sx_unmount(mp), 0);
			problems = 1;
			assert_int_equal(sx_check(img, NULL, NULL, &problems), 0);
			assert_int_equal(problems, 0);
			sx_bdev_destroy(img);
			points++;
			if (!w)
				break;
		}
	}
	assert_true(points >= 10);
	mp = sxt_mount(bd);
}

/* The other thread of free_then_reuse(): a punch at the chosen moment. */
struct reuse_race {
	pthread_t	rr_main;	/* the thread whose allocation waits for it */
	bool		rr_fired;
	int		rr_fd;		/* the file punched */
	int		rr_error;
};

static void *reuse_punch_main(void *arg)
{
	struct reuse_race *rr = arg;

	sx_thread_enter();
	rr->rr_error = sx_punch(mp, rr->rr_fd, 0, BS);
	sx_thread_exit();
	return NULL;
}

/* Fault hook: the first allocation of the main thread waits for the punch. */
static void reuse_hook(void *arg, const char *site)
{
	struct reuse_race *rr = arg;
	pthread_t t;

	if (rr->rr_fired || strcmp(site, "alloc_extent") ||
	    !pthread_equal(pthread_self(), rr->rr_main))
		return;
	rr->rr_fired = true;
	assert_int_equal(pthread_create(&t, NULL, reuse_punch_main, rr), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

/* The ways data goes in place into blocks just allocated. */
enum reuse_how {
	REUSE_COW,		/* the copy of a copy-on-write, then the write */
	REUSE_FALLOC,		/* fallocate, then a write into the unwritten block */
};

/*
 * Another thread frees a block (a punch of y, not yet durable) right when
 * a copy-on-write or a fallocate is about to allocate, and the allocation
 * would get that block: it is the first free one after the hint.  Data
 * then goes into the new block in place, and the power goes with every
 * volatile write kept and nothing forcing the log.  y must read its old
 * bytes (the punch was lost) or zeroes (it was not), never ours.  The
 * block is busy (its free is not durable), so the allocation, which sees
 * the free because it is made under the same lock, steps over it (it once
 * forced the log instead, and once checked for frees before the
 * copy-on-write allocated, which a free in between slipped past).
 */
static void free_then_reuse(enum reuse_how how)
{
	struct reuse_race rr = { .rr_main = pthread_self() };
	struct sx_bdev *cbd;
	struct sx_crashdev *cd;
	u64 yblk, got;
	bool yfree;
	int s, x, y, z;

	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sx_crashdev_create(bd, 1, &cbd, &cd), 0);
	mp = sxt_mount(cbd);
	s = mk("s");
	y = mk("y");
	x = mk("x");
	z = mk("z");
	/* y's block right after s's: the first free block once it is punched */
	put(s, 0, BS, 1);
	put(y, 0, BS, 2);
	yblk = phys(y, 0, NULL);
	assert_int_equal(yblk, phys(s, 0, NULL) + 1);
	assert_int_equal(sx_clone(mp, x, s), 0);
	assert_int_equal(sx_sync(mp), 0);

	rr.rr_fd = y;
	sx_fault_set_hook(reuse_hook, &rr);
	if (how == REUSE_COW) {
		put(x, 0, BS, 3);
		got = phys(x, 0, NULL);
	} else {
		assert_int_equal(sx_fallocate(mp, z, 0, BS), 0);
		got = phys(z, 0, NULL);
		put(z, 0, BS, 3);
	}
	sx_fault_set_hook(NULL, NULL);
	assert_true(rr.rr_fired);
	assert_int_equal(rr.rr_error, 0);
	/* the block the other thread freed is free, and busy: not taken */
	assert_true(got != yblk);
	assert_int_equal(sx_alloc_is_free(mp, yblk, &yfree), 0);
	assert_true(yfree);
	sx_crashdev_cut_now(cd, SX_CRASH_KEEP);
	sx_unmount(mp);
	sx_bdev_destroy(cbd);

	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "y", &y), 0);
	assert_true(holds(y, 0, BS, 2) || holds(y, 0, BS, 0));
	assert_int_equal(sx_open(mp, "x", &x), 0);
	assert_true(holds(x, 0, BS, 1) || holds(x, 0, BS, 3));
	assert_int_equal(sx_close(mp, x), 0);
	assert_int_equal(sx_close(mp, y), 0);
}

static void test_clone_free_then_reuse_cow(void **state)
{
	free_then_reuse(REUSE_COW);
}

static void test_clone_free_then_reuse_falloc(void **state)
{
	free_then_reuse(REUSE_FALLOC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_clone_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_many_extents_batched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_many_extents_batched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_long_extent, setup_small_blocks, teardown),
		cmocka_unit_test_setup_teardown(test_clone_cow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_range_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_eof, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_isdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_unlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_persist, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_crash_unshare_cow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_crash_unshare_punch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_crash_unshare_clone_over, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_clone_cow_no_force, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_unshare_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_unshare_many_precise, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_unshare_crash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_free_then_reuse_cow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_clone_free_then_reuse_falloc, setup,
						teardown),
	};

	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
