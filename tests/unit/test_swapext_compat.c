// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * XFS_IOC_SWAPEXT compatibility (include/swapext/swapext_compat.h): the
 * layouts are compile-time asserts in the header; here the ioctl number
 * against Linux's own _IOWR, sx_bulkstat's fields, and sx_swapext's
 * behaviour on the store: a full-file swap exchanges the contents (atomic
 * and non-atomic images); a wrong version, bad descriptors, one file twice
 * are -EINVAL; a nonzero sx_offset and sizes that differ are -EFAULT (never
 * -EDOM); a target changed after its bulkstat record is -EBUSY and stays
 * untouched.  Then sx_defrag_file: a fragmented file with holes and an
 * unwritten range comes out in the fewest extents, same bytes, holes and
 * unwritten state kept; shared, immutable, contiguous and empty files are
 * skipped with their reason.  The checker is clean after every case.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <linux/ioctl.h>
#include <cmocka.h>
/* XFS's own header, where xfslibs-dev is installed: the layouts against it too */
#if __has_include(<xfs/xfs.h>)
#include <xfs/xfs.h>
#define HAVE_XFS_HEADERS 1
#endif
#include "sxswap.h"
#include "sxcrash.h"
#include <swapext/swapext_compat.h>

#ifdef HAVE_XFS_HEADERS
#define SAME_FIELD(xs, ss, f) \
	_Static_assert(offsetof(struct xs, f) == offsetof(struct ss, f) && \
		       sizeof(((struct xs *)0)->f) == sizeof(((struct ss *)0)->f), #f)
SAME_FIELD(xfs_bstime, sx_xfs_bstime, tv_sec);
SAME_FIELD(xfs_bstime, sx_xfs_bstime, tv_nsec);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_ino);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_mode);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_nlink);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_uid);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_gid);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_rdev);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_blksize);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_size);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_atime);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_mtime);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_ctime);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_blocks);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_xflags);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_extsize);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_extents);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_gen);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_projid_lo);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_forkoff);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_projid_hi);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_cowextsize);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_dmevmask);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_dmstate);
SAME_FIELD(xfs_bstat, sx_xfs_bstat, bs_aextents);
SAME_FIELD(xfs_swapext, sx_xfs_swapext, sx_version);
SAME_FIELD(xfs_swapext, sx_xfs_swapext, sx_fdtarget);
SAME_FIELD(xfs_swapext, sx_xfs_swapext, sx_fdtmp);
SAME_FIELD(xfs_swapext, sx_xfs_swapext, sx_offset);
SAME_FIELD(xfs_swapext, sx_xfs_swapext, sx_length);
SAME_FIELD(xfs_swapext, sx_xfs_swapext, sx_pad);
SAME_FIELD(xfs_swapext, sx_xfs_swapext, sx_stat);
_Static_assert(sizeof(struct xfs_swapext) == sizeof(struct sx_xfs_swapext), "size");
_Static_assert(sizeof(struct xfs_bstat) == sizeof(struct sx_xfs_bstat), "size");
_Static_assert(XFS_SX_VERSION == SX_XFS_SX_VERSION, "version");
_Static_assert(FS_XFLAG_IMMUTABLE == SX_XFS_XFLAG_IMMUTABLE, "xflag");
_Static_assert(FS_XFLAG_APPEND == SX_XFS_XFLAG_APPEND, "xflag");
#endif

#define MIB	(1ull << 20)
#define BS	1024u
#define IMG	(64 * MIB)
#define NBLK	256u

static struct sx_bdev *bd;
static struct sx_mount *mp;
static struct sxs_file *A, *B;

static int setup_fs(bool atomic)
{
	bd = sxs_mkimg(IMG, BS, 4096, atomic);
	mp = sxt_mount(bd);
	A = sxs_file_new(SXS_MAXB);
	B = sxs_file_new(SXS_MAXB);
	assert_int_equal(sx_create(mp, "a", 0644, &A->sf_fd), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &B->sf_fd), 0);
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
	assert_int_equal(sx_close(mp, A->sf_fd), 0);
	assert_int_equal(sx_close(mp, B->sf_fd), 0);
	sxs_file_free(A);
	sxs_file_free(B);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(bd, 0, __func__), 0);
	sx_bdev_destroy(bd);
	return 0;
}

/* After a shutdown: close, unmount (it reports the shutdown), then recover clean. */
static int teardown_shutdown(void **state)
{
	sx_close(mp, A->sf_fd);
	sx_close(mp, B->sf_fd);
	sxs_file_free(A);
	sxs_file_free(B);
	assert_int_not_equal(sx_unmount(mp), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(bd, 0, __func__), 0);
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

static void wr(struct sxs_file *f, u64 blk, u64 tag)
{
	assert_int_equal(sxs_write(mp, BS, f, blk, tag), 0);
}

/* Both files @n blocks of their own tags, written interleaved (fragmented). */
static void fill_two(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++) {
		wr(A, i, sxs_tag(0, i, 1));
		wr(B, i, sxs_tag(1, i, 1));
	}
}

/* A request to swap all of @tmp with all of @target, fresh. */
static void request(struct sx_xfs_swapext *sx, const struct sxs_file *target,
		    const struct sxs_file *tmp)
{
	memset(sx, 0, sizeof(*sx));
	sx->sx_version = SX_XFS_SX_VERSION;
	sx->sx_fdtarget = target->sf_fd;
	sx->sx_fdtmp = tmp->sf_fd;
	sx->sx_length = (s64)target->sf_size;
	assert_int_equal(sx_bulkstat(mp, target->sf_fd, &sx->sx_stat), 0);
}

static u32 extents(int fd)
{
	struct sx_stat st;
	u32 n = 0;

	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	if (st.st_size)
		assert_int_equal(sx_fiemap(mp, fd, 0, st.st_size, NULL, 0, &n), 0);
	return n;
}

/* The number and size agree with Linux's encoding of XFS's ioctl. */
static void test_ioctl_number(void **state)
{
	assert_int_equal(XFS_IOC_SWAPEXT, _IOWR('X', 109, struct sx_xfs_swapext));
	assert_int_equal(XFS_IOC_SWAPEXT, 0xc0c0586du);
	assert_int_equal(sizeof(struct sx_xfs_swapext), 192);
	assert_int_equal(sizeof(struct sx_xfs_bstat), 136);
#ifdef HAVE_XFS_HEADERS
	/* XFS_IOC_SWAPEXT is XFS's own definition here (ours steps aside) */
	assert_int_equal(XFS_IOC_SWAPEXT, _IOWR('X', 109, struct xfs_swapext));
#else
	print_message("xfs/xfs.h not installed: layouts checked against the numbers only\n");
#endif
}

/* Every field bulkstat fills, against fstat. */
static void test_bulkstat(void **state)
{
	struct sx_xfs_bstat bs;
	struct sx_stat st;
	u64 i;

	for (i = 0; i < 10; i += 2)
		wr(A, i, sxs_tag(0, i, 1));		/* 5 extents with holes between */
	assert_int_equal(sx_truncate(mp, A->sf_fd, 9 * BS + 100), 0);
	A->sf_size = 9 * BS + 100;
	assert_int_equal(sx_setflags(mp, A->sf_fd, SX_DIFLAG_APPEND), 0);
	memset(&bs, 0xa5, sizeof(bs));
	assert_int_equal(sx_bulkstat(mp, A->sf_fd, &bs), 0);
	assert_int_equal(sx_fstat(mp, A->sf_fd, &st), 0);
	assert_int_equal(bs.bs_ino, st.st_ino);
	assert_int_equal(bs.bs_mode, st.st_mode);
	assert_int_equal(bs.bs_mode & SX_IFMT, SX_IFREG);
	assert_int_equal(bs.bs_nlink, 1);
	assert_int_equal(bs.bs_uid, st.st_uid);
	assert_int_equal(bs.bs_gid, st.st_gid);
	assert_int_equal(bs.bs_blksize, BS);
	assert_int_equal(bs.bs_size, 9 * BS + 100);
	assert_int_equal(bs.bs_blocks, 5);
	assert_int_equal(bs.bs_extents, 5);
	assert_int_equal(bs.bs_gen, (u32)st.st_gen);
	assert_int_equal(bs.bs_xflags, SX_XFS_XFLAG_APPEND);
	assert_int_equal(bs.bs_mtime.tv_sec * 1000000000ll + bs.bs_mtime.tv_nsec,
			 st.st_mtime_ns);
	assert_int_equal(bs.bs_ctime.tv_sec * 1000000000ll + bs.bs_ctime.tv_nsec,
			 st.st_ctime_ns);
	assert_int_equal(bs.bs_atime.tv_sec * 1000000000ll + bs.bs_atime.tv_nsec,
			 st.st_atime_ns);
	assert_true(bs.bs_mtime.tv_nsec >= 0 && bs.bs_mtime.tv_nsec < 1000000000);
	/* what we do not have is zero, padding included */
	assert_int_equal(bs.bs_rdev, 0);
	assert_int_equal(bs.bs_pad0, 0);
	assert_int_equal(bs.bs_mtime.tv_pad, 0);
	assert_int_equal(bs.bs_extsize, 0);
	assert_int_equal(bs.bs_aextents, 0);
	assert_int_equal(bs.bs_cowextsize, 0);
	assert_int_equal(sx_setflags(mp, A->sf_fd, 0), 0);
	assert_int_equal(sx_bulkstat(mp, 99, &bs), -EBADF);
	verify(A);
}

/* A full-file swap exchanges both files' contents. */
static void test_full_swap(void **state)
{
	struct sx_xfs_swapext sx;

	fill_two(NBLK);
	request(&sx, A, B);
	assert_int_equal(sx_swapext(mp, &sx), 0);
	sxs_model_swap(A, 0, B, 0, NBLK);
	verify(A);
	verify(B);
	/* and back, with a fresh record: the swap changed a's times */
	request(&sx, A, B);
	assert_int_equal(sx_swapext(mp, &sx), 0);
	sxs_model_swap(A, 0, B, 0, NBLK);
	verify(A);
	verify(B);
}

/* The version must be XFS's; the descriptors must be open, and two files. */
static void test_bad_requests(void **state)
{
	struct sx_xfs_swapext sx, ok;

	fill_two(16);
	request(&ok, A, B);

	sx = ok;
	sx.sx_version = 1;
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);
	sx.sx_version = -1;
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);

	sx = ok;
	sx.sx_fdtarget = 77;				/* not open */
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);
	sx = ok;
	sx.sx_fdtmp = 77;
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);
	sx = ok;
	sx.sx_fdtmp = -1;
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);
	sx = ok;
	sx.sx_fdtarget = 1ll << 40;			/* past the int range */
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);

	/* one file twice, even through two descriptors of it */
	sx = ok;
	sx.sx_fdtmp = sx.sx_fdtarget;
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);
	{
		int fd2;

		assert_int_equal(sx_open(mp, "a", &fd2), 0);
		sx.sx_fdtmp = fd2;
		assert_int_equal(sx_swapext(mp, &sx), -EINVAL);
		assert_int_equal(sx_close(mp, fd2), 0);
	}

	/* not the whole files: -EFAULT, as the old entry said */
	sx = ok;
	sx.sx_offset = BS;
	assert_int_equal(sx_swapext(mp, &sx), -EFAULT);
	sx.sx_offset = -1;
	assert_int_equal(sx_swapext(mp, &sx), -EFAULT);
	sx = ok;
	sx.sx_length = (s64)A->sf_size - BS;
	assert_int_equal(sx_swapext(mp, &sx), -EFAULT);
	sx.sx_length = (s64)A->sf_size + BS;
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);	/* past EOF: the range check */
	sx.sx_length = -1;
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);

	/* none of it changed anything, and the good request still runs */
	verify(A);
	verify(B);
	assert_int_equal(sx_swapext(mp, &ok), 0);
	sxs_model_swap(A, 0, B, 0, 16);
	verify(A);
	verify(B);
}

/* Sizes that differ: FULL_FILES's -EDOM comes back as -EFAULT. */
static void test_sizes_differ(void **state)
{
	struct sx_xfs_swapext sx;

	fill_two(32);
	assert_int_equal(sx_truncate(mp, B->sf_fd, 20 * BS), 0);
	B->sf_size = 20 * BS;
	memset(&B->sf_tag[20], 0, 12 * sizeof(u64));
	request(&sx, A, B);
	sx.sx_length = (s64)B->sf_size;		/* inside both files, a's is longer */
	assert_int_equal(sx_swapext(mp, &sx), -EFAULT);
	request(&sx, B, A);			/* length = b's size, a is longer */
	assert_int_equal(sx_swapext(mp, &sx), -EFAULT);
	/*
	 * A length past the shorter file's EOF fails the range check that
	 * comes before the full-files check: -EINVAL, as the seed's
	 * conversion answers (the old entry said -EFAULT to both).
	 */
	request(&sx, A, B);
	assert_int_equal(sx_swapext(mp, &sx), -EINVAL);
	verify(A);
	verify(B);
}

/* A target changed after its bulkstat record: -EBUSY, nothing swapped. */
static void test_stale(void **state)
{
	struct sx_xfs_swapext sx;

	fill_two(64);
	request(&sx, A, B);
	wr(A, 3, sxs_tag(0, 3, 2));		/* mtime and ctime move */
	assert_int_equal(sx_swapext(mp, &sx), -EBUSY);
	verify(A);
	verify(B);

	/* a change of the temporary file is not the target's business */
	request(&sx, A, B);
	wr(B, 5, sxs_tag(1, 5, 2));
	assert_int_equal(sx_swapext(mp, &sx), 0);
	sxs_model_swap(A, 0, B, 0, 64);
	verify(A);
	verify(B);

	/* a record of another file is stale too */
	request(&sx, A, B);
	assert_int_equal(sx_bulkstat(mp, B->sf_fd, &sx.sx_stat), 0);
	assert_int_equal(sx_swapext(mp, &sx), -EBUSY);
	/* and a changed ctime alone (flags) */
	request(&sx, A, B);
	assert_int_equal(sx_setflags(mp, A->sf_fd, 0), 0);
	assert_int_equal(sx_swapext(mp, &sx), -EBUSY);
	verify(A);
	verify(B);
}

/* The non-atomic swap (no atomic_swap feature) gives the same result. */
static void test_full_swap_noatomic(void **state)
{
	struct sx_xfs_swapext sx;

	fill_two(NBLK);
	request(&sx, A, B);
	assert_int_equal(sx_swapext(mp, &sx), 0);
	sxs_model_swap(A, 0, B, 0, NBLK);
	verify(A);
	verify(B);
	request(&sx, A, B);
	wr(A, 0, sxs_tag(0, 0, 3));
	assert_int_equal(sx_swapext(mp, &sx), -EBUSY);
	verify(A);
	verify(B);
}

/* Empty files swap (nothing to do) and a shut-down mount says -EIO. */
static void test_empty_and_shutdown(void **state)
{
	struct sx_xfs_swapext sx;
	struct sx_xfs_bstat bs;

	request(&sx, A, B);
	assert_int_equal(sx.sx_length, 0);
	assert_int_equal(sx_swapext(mp, &sx), 0);
	sx_shutdown(mp);
	assert_int_equal(sx_swapext(mp, &sx), -EIO);
	assert_int_equal(sx_bulkstat(mp, A->sf_fd, &bs), -EIO);
}

/* A fragmented file with holes and an unwritten range: fewest extents, same data. */
static void test_defrag(void **state)
{
	struct sx_defrag_result res;
	struct sx_extent ext[8];
	struct sx_stat st0, st1;
	u32 n;
	u64 i;

	fill_two(NBLK);				/* both: NBLK one-block extents */
	for (i = 100; i < 110; i++)		/* a hole in a */
		A->sf_tag[i] = 0;
	assert_int_equal(sx_punch(mp, A->sf_fd, 100 * BS, 10 * BS), 0);
	for (i = 200; i < 210; i++)
		A->sf_tag[i] = 0;		/* unwritten: reads as zeroes */
	assert_int_equal(sx_punch(mp, A->sf_fd, 200 * BS, 10 * BS), 0);
	assert_int_equal(sx_fallocate(mp, A->sf_fd, 200 * BS, 10 * BS), 0);
	/* ends in a hole past a partial block */
	assert_int_equal(sx_truncate(mp, A->sf_fd, (NBLK + 20) * BS + 123), 0);
	A->sf_size = (NBLK + 20) * BS + 123;
	assert_int_equal(sx_fstat(mp, A->sf_fd, &st0), 0);
	assert_true(extents(A->sf_fd) > 200);

	assert_int_equal(sx_defrag_file(mp, A->sf_fd, 0, &res), 0);
	assert_int_equal(res.dr_skipped, SX_DEFRAG_DONE);
	assert_true(res.dr_before > 200);
	assert_int_equal(res.dr_ideal, 4);	/* data, (hole), data, unwritten, data */
	assert_int_equal(res.dr_after, 4);
	assert_int_equal(res.dr_bytes, (NBLK - 20) * BS);
	verify(A);
	verify(B);
	assert_int_equal(sx_fiemap(mp, A->sf_fd, 0, A->sf_size, ext, 8, &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(ext[0].ex_off, 0);
	assert_int_equal(ext[0].ex_len, 100 * BS);
	assert_int_equal(ext[1].ex_off, 110 * BS);
	assert_int_equal(ext[1].ex_len, 90 * BS);
	assert_int_equal(ext[2].ex_flags, SX_EXTENT_UNWRITTEN);
	assert_int_equal(ext[2].ex_len, 10 * BS);
	assert_int_equal(ext[3].ex_off, 210 * BS);
	assert_int_equal(ext[3].ex_len, (NBLK - 210) * BS);
	assert_int_equal(sx_fstat(mp, A->sf_fd, &st1), 0);
	assert_int_equal(st1.st_size, st0.st_size);
	/* the same data blocks; fewer mapping-tree blocks charged */
	assert_true(st1.st_blocks <= st0.st_blocks && st1.st_blocks >= NBLK - 10);
	assert_int_equal(st1.st_ino, st0.st_ino);

	/* a second pass has nothing to do */
	assert_int_equal(sx_defrag_file(mp, A->sf_fd, 0, &res), 0);
	assert_int_equal(res.dr_skipped, SX_DEFRAG_SKIP_CONTIGUOUS);
	assert_int_equal(res.dr_before, 4);
	assert_int_equal(sx_defrag_file(mp, A->sf_fd, 1, &res), -EINVAL);
	verify(A);
}

/* Files defrag must leave alone, each with its reason. */
static void test_defrag_skips(void **state)
{
	struct sx_defrag_result res;
	int c, e;

	/* empty */
	assert_int_equal(sx_defrag_file(mp, A->sf_fd, 0, &res), 0);
	assert_int_equal(res.dr_skipped, SX_DEFRAG_SKIP_EMPTY);

	fill_two(64);
	/* immutable (and append-only, swap files) */
	assert_int_equal(sx_setflags(mp, A->sf_fd, SX_DIFLAG_IMMUTABLE), 0);
	assert_int_equal(sx_defrag_file(mp, A->sf_fd, 0, &res), 0);
	assert_int_equal(res.dr_skipped, SX_DEFRAG_SKIP_FLAGS);
	assert_int_equal(sx_setflags(mp, A->sf_fd, SX_DIFLAG_SWAPFILE), 0);
	assert_int_equal(sx_defrag_file(mp, A->sf_fd, 0, &res), 0);
	assert_int_equal(res.dr_skipped, SX_DEFRAG_SKIP_FLAGS);
	assert_int_equal(sx_setflags(mp, A->sf_fd, 0), 0);

	/* shared: a clone of b */
	assert_int_equal(sx_create(mp, "c", 0644, &c), 0);
	assert_int_equal(sx_clone(mp, c, B->sf_fd), 0);
	assert_int_equal(sx_defrag_file(mp, B->sf_fd, 0, &res), 0);
	assert_int_equal(res.dr_skipped, SX_DEFRAG_SKIP_SHARED);
	assert_int_equal(res.dr_before, 64);
	assert_int_equal(sx_close(mp, c), 0);
	assert_int_equal(sx_unlink(mp, "c"), 0);

	/* contiguous */
	assert_int_equal(sx_create(mp, "e", 0644, &e), 0);
	assert_int_equal(sx_fallocate(mp, e, 0, 64 * BS), 0);
	assert_int_equal(sx_defrag_file(mp, e, 0, &res), 0);
	assert_int_equal(res.dr_skipped, SX_DEFRAG_SKIP_CONTIGUOUS);
	assert_int_equal(sx_close(mp, e), 0);

	/* a closed descriptor */
	assert_int_equal(sx_defrag_file(mp, 99, 0, &res), -EBADF);
	assert_string_equal(sx_defrag_skip_name(SX_DEFRAG_SKIP_SHARED), "shares blocks");
	assert_string_equal(sx_defrag_skip_name(1000), "unknown");
	verify(A);
	verify(B);
}

/*
 * No free run long enough for the copy: the allocator hands out what it
 * has and the copy is no better, so the file is left as it was.
 */
static void test_defrag_notbetter(void **state)
{
	struct sx_defrag_result res;
	struct sx_stat st;
	u64 i, nfill;
	int fill;

	fill_two(64);
	/* fill the rest of the device with a file, then free every other block of it */
	assert_int_equal(sx_create(mp, "fill", 0644, &fill), 0);
	for (nfill = 0;; nfill += 64) {
		s64 r;
		char buf[64 * BS];

		memset(buf, 0x11, sizeof(buf));
		r = sx_pwrite(mp, fill, buf, sizeof(buf), nfill * BS);
		if (r != (s64)sizeof(buf))
			break;
	}
	assert_true(nfill > 1000);
	for (i = 0; i < nfill; i += 2)
		assert_int_equal(sx_punch(mp, fill, i * BS, BS), 0);
	assert_int_equal(sx_fstat(mp, fill, &st), 0);
	assert_int_equal(sx_close(mp, fill), 0);
	assert_int_equal(sx_defrag_file(mp, A->sf_fd, 0, &res), 0);
	assert_int_equal(res.dr_skipped, SX_DEFRAG_SKIP_NOTBETTER);
	assert_true(res.dr_after >= res.dr_before);
	assert_int_equal(extents(A->sf_fd), 64);
	verify(A);
	verify(B);
	assert_int_equal(sx_unlink(mp, "fill"), 0);
}

/*
 * A change to a while defrag copies it: from inside the first device write
 * defrag issues (after its bulkstat record is taken), block 7 of a is
 * rewritten.  Deterministic, unlike a racing thread.
 */
static struct sx_bdev *lower;
static struct sx_crashdev *cd;
static bool hook_fired;
static u64 hook_tag;
static s64 hook_result;

static int setup_hooked(void **state)
{
	lower = sxs_mkimg(IMG, BS, 4096, true);
	assert_int_equal(sx_crashdev_create(lower, 1, &bd, &cd), 0);
	mp = sxt_mount(bd);
	A = sxs_file_new(SXS_MAXB);
	B = sxs_file_new(SXS_MAXB);
	assert_int_equal(sx_create(mp, "a", 0644, &A->sf_fd), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &B->sf_fd), 0);
	return 0;
}

static int teardown_hooked(void **state)
{
	teardown(state);
	sx_bdev_destroy(lower);
	return 0;
}

/* The write, by a thread of its own as another program's would be. */
static void *hook_write_main(void *arg)
{
	u64 buf[BS / 8];
	u32 i;

	sx_thread_enter();
	for (i = 0; i < BS / 8; i++)
		buf[i] = hook_tag;
	hook_result = sx_pwrite(mp, A->sf_fd, buf, BS, 7 * BS);
	sx_thread_exit();
	return arg;
}

/*
 * Defrag waits inside its device write for the other thread's write to
 * end; that thread holds none of defrag's locks (a's are free while the
 * copy is written), and defrag's locks are none of its.
 */
static void write_during_defrag(void *arg, u64 n)
{
	pthread_t t;

	if (hook_fired)
		return;
	hook_fired = true;	/* first: the write below goes to the device too */
	assert_int_equal(pthread_create(&t, NULL, hook_write_main, NULL), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
}

static void test_defrag_changed(void **state)
{
	struct sx_defrag_result res;
	u32 before;

	fill_two(NBLK);
	before = extents(A->sf_fd);
	assert_true(before > 1);
	hook_tag = sxs_tag(0, 7, 99);
	sx_crashdev_set_write_hook(cd, write_during_defrag, NULL);
	assert_int_equal(sx_defrag_file(mp, A->sf_fd, 0, &res), 0);
	sx_crashdev_set_write_hook(cd, NULL, NULL);
	assert_true(hook_fired);
	assert_int_equal(hook_result, BS);
	assert_int_equal(res.dr_skipped, SX_DEFRAG_SKIP_CHANGED);
	/* the copy was thrown away: the write stays, the layout too */
	A->sf_tag[7] = hook_tag;
	verify(A);
	verify(B);
	assert_int_equal(extents(A->sf_fd), before);
}

/* A writer that keeps changing block 7 of a until told to stop. */
struct writer {
	bool		w_stop;			/* atomic */
	u64		w_writes;		/* atomic */
	u64		w_last;			/* the tag written last */
	int		w_error;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	u64 *buf = malloc(BS);
	u64 tag;
	u32 i;

	sx_thread_enter();
	while (!__atomic_load_n(&w->w_stop, __ATOMIC_RELAXED) && !w->w_error) {
		tag = sxs_tag(0, 7, (u32)(__atomic_load_n(&w->w_writes, __ATOMIC_RELAXED) % 200) +
			      10);
		for (i = 0; i < BS / 8; i++)
			buf[i] = tag;
		if (sx_pwrite(mp, A->sf_fd, buf, BS, 7 * BS) != BS)
			w->w_error = -EIO;
		w->w_last = tag;
		__atomic_add_fetch(&w->w_writes, 1, __ATOMIC_RELAXED);
	}
	sx_thread_exit();
	free(buf);
	return NULL;
}

/* Move 40 blocks of a elsewhere one by one, between appends to b (no data change). */
static void refragment(int round)
{
	u64 k;

	for (k = 20; k < 60; k++) {
		assert_int_equal(sx_punch(mp, A->sf_fd, k * BS, BS), 0);
		wr(B, NBLK + (u64)round * 40 + (k - 20), sxs_tag(1, NBLK + round * 40 + k, 1));
		wr(A, k, A->sf_tag[k]);
	}
}

/*
 * A file written to while it is being defragmented: the swap's freshness
 * check sees it (-EBUSY inside), the copy is dropped and the file keeps
 * every write.  A run that happens to fall between two writes may
 * defragment it; either way the data is the last written.
 */
/*
 * Defrag racing a writer thread: however the two interleave, every write
 * stays and each defrag either skips (changed, or nothing to do) or swaps
 * in a copy that holds the writes made before it.  How often the race is
 * won depends on the scheduler, so it is printed, not asserted
 * (test_defrag_changed makes the change happen for certain).
 */
static struct writer race_writer;
static pthread_t race_thread;
static bool race_running;

/* Stop the writer and wait for it; 0 or its error. */
static int stop_writer(void)
{
	if (!race_running)
		return 0;
	__atomic_store_n(&race_writer.w_stop, true, __ATOMIC_RELAXED);
	assert_int_equal(pthread_join(race_thread, NULL), 0);
	race_running = false;
	return race_writer.w_error;
}

/*
 * The writer must be gone before the files close and the mount goes,
 * also when the test failed half way (cmocka jumps straight here): an
 * unmount under a thread still in sx_pwrite() frees the inode whose iolock
 * it holds ("assertion failed: !...s_write_held" in sx_rwsem_destroy(),
 * with the test's own failure lost in stdout's buffer).
 */
static int teardown_race(void **state)
{
	stop_writer();
	return teardown(state);
}

static void test_defrag_race(void **state)
{
	struct sx_defrag_result res;
	struct writer *w = &race_writer;
	int i, changed = 0, done = 0;

	fill_two(NBLK);
	memset(w, 0, sizeof(*w));
	assert_int_equal(pthread_create(&race_thread, NULL, writer_main, w), 0);
	race_running = true;
	while (__atomic_load_n(&w->w_writes, __ATOMIC_RELAXED) == 0)
		;
	for (i = 0; i < 60 && !changed; i++) {
		assert_int_equal(sx_defrag_file(mp, A->sf_fd, 0, &res), 0);
		if (res.dr_skipped == SX_DEFRAG_SKIP_CHANGED)
			changed++;
		else if (res.dr_skipped == SX_DEFRAG_DONE)
			done++;
		else
			assert_int_equal(res.dr_skipped, SX_DEFRAG_SKIP_CONTIGUOUS);
		/* once defragmented there is nothing left to race with: fragment again */
		if (res.dr_skipped != SX_DEFRAG_SKIP_CHANGED)
			refragment(i);
	}
	assert_int_equal(stop_writer(), 0);
	A->sf_tag[7] = w->w_last;
	verify(A);
	verify(B);
	print_message("defrag raced a writer: %d changed, %d done, %llu writes\n", changed, done,
		      (unsigned long long)w->w_writes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ioctl_number),
		cmocka_unit_test_setup_teardown(test_bulkstat, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_swap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sizes_differ, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_swap_noatomic, setup_noatomic, teardown),
		cmocka_unit_test_setup_teardown(test_empty_and_shutdown, setup, teardown_shutdown),
		cmocka_unit_test_setup_teardown(test_defrag, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defrag, setup_noatomic, teardown),
		cmocka_unit_test_setup_teardown(test_defrag_skips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defrag_notbetter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defrag_changed, setup_hooked,
						teardown_hooked),
		cmocka_unit_test_setup_teardown(test_defrag_race, setup, teardown_race),
	};

	/* a failure's message must reach the log even if an abort follows */
	setvbuf(stdout, NULL, _IOLBF, 0);
	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
