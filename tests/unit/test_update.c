// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Atomic file update on the store (sx_update_start/commit/cancel): part of
 * a file rewritten, the file grown and shrunk through the clone, the other
 * files untouched; every kind of change to the original between start and
 * commit refused with -EBUSY, the original byte for byte as the change
 * left it; cancel; a crash with the update open (recovery frees the
 * clone); misuse; eight threads updating on a small log.  Blocks carry
 * tags (tests/common/sxswap.h); free-block counts show the clone and the
 * replaced blocks freed, and the checker, which walks every file, must be
 * clean after each case.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>
#include <swapext/device.h>
#include "sxswap.h"
#include "sxcrash.h"

#define MIB	(1ull << 20)
#define BS	1024u
#define IMG	(64 * MIB)
#define NA	64u		/* blocks of a */
#define NB	32u		/* blocks of b */

static struct sx_bdev *bd;
static struct sx_mount *mp;
static struct sxs_file *A, *B;	/* the file updated, a bystander */

static void wr(struct sxs_file *f, u64 blk, u64 tag)
{
	assert_int_equal(sxs_write(mp, BS, f, blk, tag), 0);
}

/* a: NA blocks, every 8th a hole; b: NB blocks. */
static void fill(void)
{
	u64 i;

	for (i = 0; i < NA; i++)
		if (i % 8 != 3)
			wr(A, i, sxs_tag(0, i, 1));
	for (i = 0; i < NB; i++)
		wr(B, i, sxs_tag(1, i, 1));
	assert_int_equal(sx_fsync(mp, A->sf_fd), 0);
}

static int setup_fs(bool atomic)
{
	bd = sxs_mkimg(IMG, BS, 4096, atomic);
	mp = sxt_mount(bd);
	A = sxs_file_new(SXS_MAXB);
	B = sxs_file_new(SXS_MAXB);
	assert_int_equal(sx_create(mp, "a", 0644, &A->sf_fd), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &B->sf_fd), 0);
	fill();
	return 0;
}

static int setup(void **state)
{
	return setup_fs(true);
}

static int setup_noatomic(void **state)
{
	return setup_fs(false);
}

static int teardown(void **state)
{
	if (mp)
		assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(bd, 0, __func__), 0);
	sxs_file_free(A);
	sxs_file_free(B);
	sx_bdev_destroy(bd);
	return 0;
}

static void verify(const struct sxs_file *f)
{
	char msg[160];

	if (sxs_verify(mp, BS, f, msg, sizeof(msg))) {
		fprintf(stderr, "fd %d: %s\n", f->sf_fd, msg);
		fail();
	}
}

static u64 free_blocks(void)
{
	struct sx_info in;

	assert_int_equal(sx_get_info(mp, &in), 0);
	return in.in_free_blocks;
}

static struct sx_stat fstat_of(int fd)
{
	struct sx_stat st;

	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	return st;
}

/* Blocks a model says are mapped (tag 0 is a hole). */
static u64 model_blocks(const struct sxs_file *f)
{
	u64 i, n = 0;

	for (i = 0; i < sx_howmany(f->sf_size, BS); i++)
		n += f->sf_tag[i] != 0;
	return n;
}

/* Truncate @f (file and model) to @size bytes. */
static void trunc_to(struct sxs_file *f, u64 size)
{
	u64 i;

	assert_int_equal(sx_truncate(mp, f->sf_fd, size), 0);
	for (i = sx_howmany(size, BS); i < f->sf_nblk; i++)
		f->sf_tag[i] = 0;
	f->sf_size = size;
}

/* All bytes of @fd, and its size, in *@len. */
static u8 *snap(int fd, u64 *len)
{
	struct sx_stat st = fstat_of(fd);
	u8 *buf = malloc(st.st_size + 1);

	assert_non_null(buf);
	assert_int_equal(sx_pread(mp, fd, buf, st.st_size, 0), (s64)st.st_size);
	*len = st.st_size;
	return buf;
}

/* @fd holds exactly the @len bytes of @want. */
static void assert_same(int fd, const u8 *want, u64 len)
{
	u64 glen;
	u8 *got = snap(fd, &glen);

	assert_int_equal(glen, len);
	assert_memory_equal(got, want, len);
	free(got);
}

/* Start an update of a; its model is a copy of a's on the clone's descriptor. */
static struct sxs_file *start(struct sx_update *u)
{
	struct sxs_file *t = sxs_file_new(SXS_MAXB);
	struct sx_stat st, tst;

	assert_int_equal(sx_update_start(mp, A->sf_fd, u), 0);
	assert_true(sx_update_active(u));
	assert_int_equal(u->su_fd_orig, A->sf_fd);
	assert_true(u->su_fd_tmp >= 0 && u->su_fd_tmp != A->sf_fd);
	st = fstat_of(A->sf_fd);
	tst = fstat_of(u->su_fd_tmp);
	/* the freshness recorded is the original's now: the clone did not touch it */
	assert_int_equal(u->su_ino, st.st_ino);
	assert_int_equal(u->su_mtime_ns, st.st_mtime_ns);
	assert_int_equal(u->su_ctime_ns, st.st_ctime_ns);
	/* a clone with no name, holding what a holds */
	assert_int_equal(tst.st_nlink, 0);
	assert_int_equal(u->su_tmp_ino, tst.st_ino);
	assert_int_equal(u->su_tmp_gen, tst.st_gen);
	assert_true(tst.st_ino != st.st_ino);
	sxs_file_copy(t, A);
	t->sf_fd = u->su_fd_tmp;
	verify(t);
	return t;
}

/* Unmount, check, mount again and reopen a and b. */
static void remount(void)
{
	assert_int_equal(sx_close(mp, A->sf_fd), 0);
	assert_int_equal(sx_close(mp, B->sf_fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(bd, 0, __func__), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &A->sf_fd), 0);
	assert_int_equal(sx_open(mp, "b", &B->sf_fd), 0);
}

/* ---------------------------------------------------------------- tests */

/*
 * Part of a: some blocks rewritten, a hole filled; a sees none of it until
 * the commit, then all of it; b never.  The blocks a had where it was
 * rewritten are freed with the clone, and the clone costs nothing once
 * gone: free blocks are down only by the filled holes.
 */
static void test_commit_part(void **state)
{
	struct sx_update u;
	struct sxs_file *t;
	u64 free0 = free_blocks(), i;
	int tmpfd;

	t = start(&u);
	tmpfd = u.su_fd_tmp;
	for (i = 10; i < 20; i++)
		wr(t, i, sxs_tag(0, i, 2));	/* 10..19, the holes 11 and 19 among them */
	wr(t, 40, sxs_tag(0, 40, 2));
	verify(A);				/* the original does not see it */
	assert_int_equal(sx_update_commit(mp, &u, 0), 0);
	assert_false(sx_update_active(&u));
	assert_int_equal(u.su_fd_tmp, -1);
	assert_int_equal(sx_fstat(mp, tmpfd, &(struct sx_stat){ 0 }), -EBADF);
	sxs_file_copy(A, t);
	verify(A);
	verify(B);
	assert_int_equal(fstat_of(A->sf_fd).st_blocks, model_blocks(A));
	assert_int_equal(free_blocks(), free0 - 2);
	/* once over, the update is no longer open */
	assert_int_equal(sx_update_commit(mp, &u, 0), -EINVAL);
	assert_int_equal(sx_update_cancel(mp, &u), -EINVAL);
	remount();
	verify(A);
	verify(B);
	sxs_file_free(t);
}

/* The clone grown past a's end, then a shrunk to a partial block. */
static void test_grow_shrink(void **state)
{
	struct sx_update u;
	struct sxs_file *t;
	u64 free0 = free_blocks(), i;

	t = start(&u);
	for (i = NA; i < NA + 20; i++)
		wr(t, i, sxs_tag(0, i, 2));
	assert_int_equal(sx_update_commit(mp, &u, 0), 0);
	sxs_file_copy(A, t);
	assert_int_equal(A->sf_size, (NA + 20) * BS);
	verify(A);
	verify(B);
	assert_int_equal(free_blocks(), free0 - 20);
	sxs_file_free(t);

	/* shrink: a ends inside its block 10 */
	t = start(&u);
	trunc_to(t, 10 * BS + 300);
	wr(t, 2, sxs_tag(0, 2, 3));
	verify(A);
	assert_int_equal(sx_update_commit(mp, &u, 0), 0);
	sxs_file_copy(A, t);
	verify(A);
	verify(B);
	assert_int_equal(fstat_of(A->sf_fd).st_size, 10 * BS + 300);
	assert_int_equal(fstat_of(A->sf_fd).st_blocks, model_blocks(A));
	/* what a had past its new end is free again, and the old block 2 too */
	assert_int_equal(free_blocks(), free0 + (NA - model_blocks(A)) - NA / 8);
	remount();
	verify(A);
	sxs_file_free(t);
}

/* An empty file filled by an update, then emptied by one. */
static void test_empty_file(void **state)
{
	struct sx_update u;
	struct sxs_file *t;

	trunc_to(A, 0);
	t = start(&u);
	wr(t, 0, sxs_tag(0, 0, 2));
	wr(t, 5, sxs_tag(0, 5, 2));
	assert_int_equal(sx_update_commit(mp, &u, 0), 0);
	sxs_file_copy(A, t);
	verify(A);
	sxs_file_free(t);

	t = start(&u);
	trunc_to(t, 0);
	assert_int_equal(sx_update_commit(mp, &u, 0), 0);
	sxs_file_copy(A, t);
	verify(A);
	assert_int_equal(fstat_of(A->sf_fd).st_blocks, 0);
	/* nothing to nothing: a zero-length swap, freshness still checked */
	assert_int_equal(sx_update_start(mp, A->sf_fd, &u), 0);
	assert_int_equal(sx_update_commit(mp, &u, 0), 0);
	verify(A);
	assert_int_equal(sx_update_start(mp, A->sf_fd, &u), 0);
	assert_int_equal(sx_truncate(mp, A->sf_fd, 0), 0);
	assert_int_equal(sx_update_commit(mp, &u, 0), -EBUSY);
	assert_int_equal(sx_update_cancel(mp, &u), 0);
	sxs_file_free(t);
}

/* The ways to change a between start and commit. */
enum change {
	CH_WRITE, CH_WRITE_SAME, CH_TRUNCATE, CH_TRUNCATE_SAME, CH_FALLOC, CH_PUNCH,
	CH_SETFLAGS, CH_CLONE, CH_SWAP, CH_LINK, CH_RENAME_OVER, CH_NR
};

static const char *const change_names[CH_NR] = {
	"write", "write of the same bytes", "truncate", "truncate to the same size",
	"fallocate", "punch", "setflags", "clone into it", "swap into it", "link",
	"rename over it"
};

static void do_change(enum change c)
{
	u8 *buf = malloc(BS);
	int fd;

	assert_non_null(buf);
	switch (c) {
	case CH_WRITE:
		wr(A, 30, sxs_tag(0, 30, 9));
		break;
	case CH_WRITE_SAME:
		/* new bytes are not needed: the write itself is the change */
		assert_int_equal(sx_pread(mp, A->sf_fd, buf, BS, 0), BS);
		assert_int_equal(sx_pwrite(mp, A->sf_fd, buf, BS, 0), BS);
		break;
	case CH_TRUNCATE:
		trunc_to(A, 20 * BS);
		break;
	case CH_TRUNCATE_SAME:
		trunc_to(A, A->sf_size);
		break;
	case CH_FALLOC:
		assert_int_equal(sx_fallocate(mp, A->sf_fd, A->sf_size, 4 * BS), 0);
		A->sf_size += 4 * BS;		/* unwritten blocks: zeroes, as holes */
		break;
	case CH_PUNCH:
		assert_int_equal(sx_punch(mp, A->sf_fd, 4 * BS, 2 * BS), 0);
		A->sf_tag[4] = A->sf_tag[5] = 0;
		break;
	case CH_SETFLAGS:
		/* the same flags again: the call still changes the inode */
		assert_int_equal(sx_setflags(mp, A->sf_fd, fstat_of(A->sf_fd).st_flags), 0);
		break;
	case CH_CLONE:
		assert_int_equal(sx_clone_range(mp, A->sf_fd, 0, B->sf_fd, 0, 4 * BS), 0);
		memcpy(A->sf_tag, B->sf_tag, 4 * sizeof(u64));
		break;
	case CH_SWAP:
		assert_int_equal(sxs_swap(mp, B, 0, A, 0, 2 * BS, 0), 0);
		sxs_model_swap(B, 0, A, 0, 2);
		break;
	case CH_LINK:
		assert_int_equal(sx_link(mp, A->sf_fd, "a2"), 0);
		break;
	case CH_RENAME_OVER:
		/* a is replaced: its name now names another file */
		assert_int_equal(sx_create(mp, "new", 0644, &fd), 0);
		assert_int_equal(sx_close(mp, fd), 0);
		assert_int_equal(sx_rename(mp, "new", "a"), 0);
		break;
	case CH_NR:
		fail();
	}
	free(buf);
}

/*
 * Each change makes the commit fail with -EBUSY and leave a exactly as the
 * change left it; the update stays open (a second commit fails alike) and
 * cancel frees the clone.
 */
static void test_changed_original(void **state)
{
	struct sx_update u;
	struct sxs_file *t;
	u64 len, free0;
	u8 *before;
	int c, tmpfd;

	for (c = 0; c < CH_NR; c++) {
		t = start(&u);
		tmpfd = u.su_fd_tmp;
		wr(t, 1, sxs_tag(0, 1, 5));
		trunc_to(t, t->sf_size + 3 * BS);
		do_change((enum change)c);
		before = snap(A->sf_fd, &len);
		free0 = free_blocks();
		if (sx_update_commit(mp, &u, 0) != -EBUSY)
			fail_msg("%s: commit did not fail with EBUSY", change_names[c]);
		assert_true(sx_update_active(&u));
		assert_int_equal(sx_update_commit(mp, &u, 0), -EBUSY);
		assert_same(A->sf_fd, before, len);
		verify(A);
		verify(t);				/* the clone as it was written */
		assert_int_equal(free_blocks(), free0);
		assert_int_equal(sx_update_cancel(mp, &u), 0);
		assert_int_equal(sx_fstat(mp, tmpfd, &(struct sx_stat){ 0 }), -EBADF);
		assert_true(free_blocks() > free0);	/* the clone's own blocks */
		assert_same(A->sf_fd, before, len);
		free(before);
		sxs_file_free(t);
		/* back to one name "a" on the original */
		if (c == CH_LINK)
			assert_int_equal(sx_unlink(mp, "a2"), 0);
		if (c == CH_RENAME_OVER) {
			assert_int_equal(sx_unlink(mp, "a"), 0);
			assert_int_equal(sx_link(mp, A->sf_fd, "a"), 0);
		}
	}
	remount();
}

/* Cancel: a untouched, the clone and everything written to it freed. */
static void test_cancel(void **state)
{
	struct sx_update u;
	struct sxs_file *t;
	u64 free0 = free_blocks(), len, i;
	u8 *before = snap(A->sf_fd, &len);
	int tmpfd;

	t = start(&u);
	tmpfd = u.su_fd_tmp;
	for (i = 0; i < NA + 10; i++)
		wr(t, i, sxs_tag(0, i, 7));
	assert_true(free_blocks() < free0);
	assert_int_equal(sx_update_cancel(mp, &u), 0);
	assert_false(sx_update_active(&u));
	assert_int_equal(sx_fstat(mp, tmpfd, &(struct sx_stat){ 0 }), -EBADF);
	assert_int_equal(free_blocks(), free0);
	assert_same(A->sf_fd, before, len);
	verify(A);
	verify(B);
	assert_int_equal(sx_update_cancel(mp, &u), -EINVAL);
	assert_int_equal(sx_update_commit(mp, &u, 0), -EINVAL);
	free(before);
	sxs_file_free(t);
	remount();
	verify(A);
}

/*
 * A crash with the update open: the clone has no name, so recovery frees
 * it and all its blocks; a is as it was.
 */
static void test_crash_open_update(void **state)
{
	struct sx_recovery_stats rs;
	struct sx_update u;
	struct sxs_file *t;
	u64 free0 = free_blocks(), len, i;
	u8 *before = snap(A->sf_fd, &len);

	t = start(&u);
	for (i = 0; i < 16; i++)
		wr(t, i, sxs_tag(0, i, 8));
	assert_int_equal(sx_fsync(mp, t->sf_fd), 0);
	sx_shutdown(mp);
	assert_int_equal(sx_update_commit(mp, &u, 0), -EIO);
	assert_true(sx_update_active(&u));
	assert_int_equal(sx_update_cancel(mp, &u), 0);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	sx_get_recovery_stats(mp, &rs);
	assert_int_equal(rs.rs_unlinked, 1);
	assert_int_equal(free_blocks(), free0);
	assert_int_equal(sx_open(mp, "a", &A->sf_fd), 0);
	assert_int_equal(sx_open(mp, "b", &B->sf_fd), 0);
	assert_same(A->sf_fd, before, len);
	verify(A);
	verify(B);
	free(before);
	sxs_file_free(t);
	remount();
}

/* Bad arguments and descriptors, files an update cannot start on. */
static void test_misuse(void **state)
{
	struct sx_update u, zero;
	struct sxs_file *t;
	int fd, tmpfd;

	memset(&zero, 0, sizeof(zero));
	assert_int_equal(sx_update_start(NULL, A->sf_fd, &u), -EINVAL);
	assert_int_equal(sx_update_start(mp, A->sf_fd, NULL), -EINVAL);
	assert_int_equal(sx_update_start(mp, -1, &u), -EBADF);
	assert_false(sx_update_active(&u));
	assert_int_equal(sx_update_start(mp, 999, &u), -EBADF);
	assert_int_equal(sx_update_commit(mp, &zero, 0), -EINVAL);
	assert_int_equal(sx_update_commit(mp, NULL, 0), -EINVAL);
	assert_int_equal(sx_update_cancel(mp, &zero), -EINVAL);
	assert_int_equal(sx_update_cancel(NULL, &zero), -EINVAL);
	assert_false(sx_update_active(NULL));

	/* unknown flags: refused, the update stays open */
	t = start(&u);
	wr(t, 0, sxs_tag(0, 0, 4));
	assert_int_equal(sx_update_commit(mp, &u, 1u << 7), -EINVAL);
	assert_true(sx_update_active(&u));
	verify(A);
	assert_int_equal(sx_update_commit(mp, NULL, 0), -EINVAL);
	assert_int_equal(sx_update_commit(NULL, &u, 0), -EINVAL);
	assert_int_equal(sx_update_commit(mp, &u, 0), 0);
	sxs_file_copy(A, t);
	verify(A);
	sxs_file_free(t);

	/* files the swap would refuse are refused at start, nothing left open */
	assert_int_equal(sx_setflags(mp, A->sf_fd, SX_DIFLAG_IMMUTABLE), 0);
	assert_int_equal(sx_update_start(mp, A->sf_fd, &u), -EPERM);
	assert_int_equal(sx_setflags(mp, A->sf_fd, SX_DIFLAG_APPEND), 0);
	assert_int_equal(sx_update_start(mp, A->sf_fd, &u), -EPERM);
	assert_int_equal(sx_setflags(mp, A->sf_fd, SX_DIFLAG_SWAPFILE), 0);
	assert_int_equal(sx_update_start(mp, A->sf_fd, &u), -ETXTBSY);
	assert_false(sx_update_active(&u));
	assert_int_equal(sx_setflags(mp, A->sf_fd, 0), 0);

	/* an original made immutable after the start: the swap's -EPERM */
	t = start(&u);
	assert_int_equal(sx_setflags(mp, A->sf_fd, SX_DIFLAG_IMMUTABLE), 0);
	assert_int_equal(sx_update_commit(mp, &u, 0), -EPERM);
	assert_int_equal(sx_setflags(mp, A->sf_fd, 0), 0);
	assert_int_equal(sx_update_commit(mp, &u, 0), -EBUSY);
	assert_int_equal(sx_update_cancel(mp, &u), 0);
	sxs_file_free(t);

	/* the caller closed the clone's descriptor: -EBADF, then cancel ends it */
	t = start(&u);
	assert_int_equal(sx_close(mp, u.su_fd_tmp), 0);
	assert_int_equal(sx_update_commit(mp, &u, 0), -EBADF);
	assert_true(sx_update_active(&u));
	assert_int_equal(sx_update_cancel(mp, &u), -EBADF);
	assert_false(sx_update_active(&u));
	verify(A);
	sxs_file_free(t);

	/* ... and its number went to another file: that file is not touched */
	t = start(&u);
	tmpfd = u.su_fd_tmp;
	assert_int_equal(sx_close(mp, tmpfd), 0);
	assert_int_equal(sx_open(mp, "b", &fd), 0);
	assert_int_equal(fd, tmpfd);
	assert_int_equal(sx_update_commit(mp, &u, 0), -EBADF);
	assert_int_equal(sx_update_cancel(mp, &u), -EBADF);
	assert_int_equal(sx_fstat(mp, fd, &(struct sx_stat){ 0 }), 0);	/* still open */
	assert_int_equal(sx_close(mp, fd), 0);
	verify(A);
	verify(B);
	sxs_file_free(t);

	/* ... or to a new tmpfile, which may get the clone's inode number too */
	t = start(&u);
	tmpfd = u.su_fd_tmp;
	assert_int_equal(sx_close(mp, tmpfd), 0);
	assert_int_equal(sx_open_tmpfile(mp, 0600, &fd), 0);
	assert_int_equal(fd, tmpfd);
	assert_int_equal(sx_update_commit(mp, &u, 0), -EBADF);
	assert_int_equal(sx_update_cancel(mp, &u), -EBADF);
	assert_int_equal(sx_close(mp, fd), 0);
	verify(A);
	sxs_file_free(t);

	/* the original's descriptor closed: -EBADF, the update stays open */
	assert_int_equal(sx_open(mp, "a", &fd), 0);
	assert_int_equal(sx_update_start(mp, fd, &u), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_update_commit(mp, &u, 0), -EBADF);
	assert_int_equal(sx_update_cancel(mp, &u), 0);
	verify(A);
}

/* A read-only mount and a shut-down one. */
static void test_rdonly_shutdown(void **state)
{
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_RDONLY };
	struct sx_update u;

	assert_int_equal(sx_close(mp, A->sf_fd), 0);
	assert_int_equal(sx_close(mp, B->sf_fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sx_mount(bd, &mo, &mp), 0);
	assert_int_equal(sx_open(mp, "a", &A->sf_fd), 0);
	assert_int_equal(sx_update_start(mp, A->sf_fd, &u), -EROFS);
	assert_false(sx_update_active(&u));
	assert_int_equal(sx_close(mp, A->sf_fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &A->sf_fd), 0);
	sx_shutdown(mp);
	assert_int_equal(sx_update_start(mp, A->sf_fd, &u), -EIO);
	assert_int_equal(sx_close(mp, A->sf_fd), 0);
	sx_unmount(mp);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &A->sf_fd), 0);
	verify(A);
	assert_int_equal(sx_close(mp, A->sf_fd), 0);
}

/* Without the atomic_swap feature only a NONATOMIC commit runs. */
static void test_no_atomic_feature(void **state)
{
	struct sx_update u;
	struct sxs_file *t;

	t = start(&u);
	wr(t, 7, sxs_tag(0, 7, 2));
	assert_int_equal(sx_update_commit(mp, &u, 0), -EOPNOTSUPP);
	assert_true(sx_update_active(&u));
	verify(A);
	assert_int_equal(sx_update_commit(mp, &u, SX_UPDATE_NONATOMIC), 0);
	sxs_file_copy(A, t);
	verify(A);
	verify(B);
	sxs_file_free(t);
	remount();
	verify(A);
}

/* ------------------------------------------------ threads on a small log */

#define LT_IMG		(288 * MIB)	/* mkfs's default log: 1,152 blocks */
#define LT_THREADS	8
#define LT_BLOCKS	256	/* 4 KiB blocks of each thread's file */
#define LT_UPDATES	300

/* One thread of test_threads_small_log(): its own file, its own model. */
struct lt_worker {
	int		id;
	int		fd;
	u8		*model;
	int		error;		/* first error */
	const char	*what;
};

static void lt_fill(u8 *buf, u32 len, int id, u32 n)
{
	u32 i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(id * 37 + n * 11 + i / 256 + 1);
}

static void *lt_main(void *arg)
{
	struct lt_worker *w = arg;
	u8 buf[4096];
	u32 n;

	sx_thread_enter();
	for (n = 0; n < LT_UPDATES && !w->error; n++) {
		struct sx_update u;
		u64 off = (u64)((n * 2654435761u + (u32)w->id * 97u) % LT_BLOCKS) * 4096;

		lt_fill(buf, sizeof(buf), w->id, n);
		w->what = "start";
		w->error = sx_update_start(mp, w->fd, &u);
		if (w->error)
			break;
		w->what = "write";
		if (sx_pwrite(mp, u.su_fd_tmp, buf, sizeof(buf), off) != (s64)sizeof(buf)) {
			w->error = -EIO;
			sx_update_cancel(mp, &u);
			break;
		}
		w->what = "commit";
		w->error = sx_update_commit(mp, &u, 0);
		if (!w->error) {
			w->what = "fsync";
			w->error = sx_fsync(mp, w->fd);
		}
		if (!w->error)
			memcpy(w->model + off, buf, sizeof(buf));
	}
	sx_thread_exit();
	return NULL;
}

/*
 * Eight threads each update their own file 300 times (clone, write, swap,
 * fsync) on the log mkfs gives (1,152 blocks).  Each update is a chain of
 * hundreds of transactions, and the others fill the log with changes to
 * the same refcount and bitmap blocks, which some force or other pins
 * nearly all the time, so a checkpoint cannot write them back: a thread
 * that needed log space took the log for full of pinned records while a
 * force was still completing, and the run ended in -ENOSPC and a shutdown
 * (in 5 runs of 8 before the fix).  Every update must succeed and every
 * file read back as its model, after a remount too; the checker is clean.
 */
static void test_threads_small_log(void **state)
{
	struct lt_worker w[LT_THREADS];
	pthread_t th[LT_THREADS];
	struct sx_mkfs_opts mo = { 0 };
	struct sx_bdev *fbd;
	char path[512];
	u8 *buf = malloc(LT_BLOCKS * 4096);
	char name[16];
	u32 b;
	int t;

	assert_non_null(buf);
	assert_int_equal(sx_close(mp, A->sf_fd), 0);
	assert_int_equal(sx_close(mp, B->sf_fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	/* a file image: a memory device's flushes are too quick for a force to be seen running */
	snprintf(path, sizeof(path), "%s/sx_test_update_%d.img",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
	unlink(path);
	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_CREATE, LT_IMG, &fbd), 0);
	mo.mk_blocksize = 4096;
	mo.mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
	assert_int_equal(sx_mkfs(fbd, &mo), 0);
	mp = sxt_mount(fbd);
	for (t = 0; t < LT_THREADS; t++) {
		w[t].id = t;
		w[t].error = 0;
		w[t].model = malloc(LT_BLOCKS * 4096);
		assert_non_null(w[t].model);
		snprintf(name, sizeof(name), "t%d", t);
		assert_int_equal(sx_create(mp, name, 0644, &w[t].fd), 0);
	}
	/* each file in one extent: the updates fragment it as they go */
	for (t = 0; t < LT_THREADS; t++) {
		for (b = 0; b < LT_BLOCKS; b++)
			lt_fill(w[t].model + b * 4096, 4096, t, 1000 + b);
		assert_int_equal(sx_pwrite(mp, w[t].fd, w[t].model, LT_BLOCKS * 4096, 0),
				 LT_BLOCKS * 4096);
	}
	assert_int_equal(sx_sync(mp), 0);
	for (t = 0; t < LT_THREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, lt_main, &w[t]), 0);
	for (t = 0; t < LT_THREADS; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		if (w[t].error)
			fail_msg("thread %d: %s: %d", t, w[t].what, w[t].error);
	}
	for (t = 0; t < LT_THREADS; t++)
		assert_int_equal(sx_close(mp, w[t].fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	mp = sxt_mount(fbd);
	for (t = 0; t < LT_THREADS; t++) {
		snprintf(name, sizeof(name), "t%d", t);
		assert_int_equal(sx_open(mp, name, &w[t].fd), 0);
		assert_int_equal(sx_pread(mp, w[t].fd, buf, LT_BLOCKS * 4096, 0),
				 LT_BLOCKS * 4096);
		if (memcmp(buf, w[t].model, LT_BLOCKS * 4096))
			fail_msg("thread %d: its file differs from its model", t);
		assert_int_equal(sx_close(mp, w[t].fd), 0);
		free(w[t].model);
	}
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(fbd, 0, __func__), 0);
	sx_bdev_destroy(fbd);
	unlink(path);
	/* teardown checks the memory image it expects */
	mp = sxt_mount(bd);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_commit_part, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grow_shrink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_changed_original, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_open_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_misuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rdonly_shutdown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_atomic_feature, setup_noatomic,
						teardown),
		cmocka_unit_test_setup_teardown(test_threads_small_log, setup, teardown),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
