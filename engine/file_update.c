// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Atomic file update (sx_update_start/commit/cancel), built only from the
 * public file API: a nameless clone to write to, and one swap_file_range
 * with FILE2_FRESH and TO_EOF to put it in place.  See swapext.h for what
 * the caller is promised.
 *
 * The freshness recorded at start must describe exactly the contents the
 * clone got.  The original is stat'ed before and after the clone: a clone
 * does not change its source's times, so equal stats mean nothing changed
 * the original while it was cloned, and the clone holds what the recorded
 * times describe.  Unequal stats mean a concurrent change that the clone
 * may or may not hold; start then fails with -EBUSY rather than record
 * times that could hide it.
 */
#include "util.h"
#include <swapext/swapext.h>

#define SX_NSEC_PER_SEC		1000000000LL

/* Mode of the clone: it never gets a name, only its blocks are swapped. */
#define SX_UPDATE_TMP_MODE	(SX_IFREG | 0600)

/* True if @a and @b describe the same state of one file. */
static bool sx_update_same(const struct sx_stat *a, const struct sx_stat *b)
{
	return a->st_ino == b->st_ino && a->st_mtime_ns == b->st_mtime_ns &&
	       a->st_ctime_ns == b->st_ctime_ns;
}

/* True if @st is the clone of @upd (not a file that got its descriptor number). */
static bool sx_update_is_tmp(const struct sx_update *upd, const struct sx_stat *st)
{
	return st->st_ino == upd->su_tmp_ino && st->st_gen == upd->su_tmp_gen;
}

/* Forget @upd: it is no longer an open update. */
static void sx_update_end(struct sx_update *upd)
{
	upd->su_magic = 0;
	upd->su_fd_tmp = -1;
}

/* Split ns since the epoch into the seconds and nanoseconds of the fsr. */
static void sx_update_split(s64 ns, s64 *sec, s32 *nsec)
{
	s64 s = ns / SX_NSEC_PER_SEC, r = ns % SX_NSEC_PER_SEC;

	if (r < 0) {
		r += SX_NSEC_PER_SEC;
		s--;
	}
	*sec = s;
	*nsec = (s32)r;
}

/* Whether @st is a file an update may start on; the swap's errnos. */
static int sx_update_check_file(const struct sx_stat *st)
{
	if ((st->st_mode & SX_IFMT) == SX_IFDIR)
		return -EISDIR;
	if ((st->st_mode & SX_IFMT) != SX_IFREG)
		return -EINVAL;
	if (st->st_flags & (SX_DIFLAG_IMMUTABLE | SX_DIFLAG_APPEND))
		return -EPERM;
	if (st->st_flags & SX_DIFLAG_SWAPFILE)
		return -ETXTBSY;
	return 0;
}

SX_API int sx_update_start(struct sx_mount *mp, int fd, struct sx_update *upd)
{
	struct sx_stat before, after, tst;
	int tmp, error;

	if (!mp || !upd)
		return -EINVAL;
	memset(upd, 0, sizeof(*upd));
	sx_update_end(upd);
	upd->su_fd_orig = -1;
	error = sx_fstat(mp, fd, &before);
	if (error)
		return error;
	error = sx_update_check_file(&before);
	if (error)
		return error;
	error = sx_open_tmpfile(mp, SX_UPDATE_TMP_MODE, &tmp);
	if (error)
		return error;
	error = sx_clone(mp, tmp, fd);
	if (!error)
		error = sx_fstat(mp, fd, &after);
	if (!error && !sx_update_same(&before, &after))
		error = -EBUSY;
	if (!error)
		error = sx_fstat(mp, tmp, &tst);
	if (error) {
		/* the clone's last close frees it and its blocks */
		sx_close(mp, tmp);
		return error;
	}
	upd->su_fd_orig = fd;
	upd->su_fd_tmp = tmp;
	upd->su_ino = after.st_ino;
	upd->su_mtime_ns = after.st_mtime_ns;
	upd->su_ctime_ns = after.st_ctime_ns;
	upd->su_tmp_ino = tst.st_ino;
	upd->su_tmp_gen = tst.st_gen;
	upd->su_magic = SX_UPDATE_MAGIC;
	return 0;
}

SX_API int sx_update_commit(struct sx_mount *mp, struct sx_update *upd, u32 flags)
{
	struct file_swap_range fsr;
	struct sx_stat tst;
	int error;

	if (!mp || !sx_update_active(upd) || (flags & ~SX_UPDATE_ALL_FLAGS))
		return -EINVAL;
	/* a descriptor number the caller closed may have been given to another file */
	error = sx_fstat(mp, upd->su_fd_tmp, &tst);
	if (error)
		return error;
	if (!sx_update_is_tmp(upd, &tst))
		return -EBADF;

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = upd->su_fd_tmp;
	fsr.flags = FILE_SWAP_RANGE_FILE2_FRESH | FILE_SWAP_RANGE_TO_EOF;
	if (flags & SX_UPDATE_NONATOMIC)
		fsr.flags |= FILE_SWAP_RANGE_NONATOMIC;
	fsr.file2_ino = (s64)upd->su_ino;
	sx_update_split(upd->su_mtime_ns, &fsr.file2_mtime, &fsr.file2_mtime_nsec);
	sx_update_split(upd->su_ctime_ns, &fsr.file2_ctime, &fsr.file2_ctime_nsec);
	error = sx_swap_file_range(mp, upd->su_fd_orig, &fsr);
	if (error)
		return error;

	/* the clone now holds the old contents: its last close frees them */
	error = sx_close(mp, upd->su_fd_tmp);
	sx_update_end(upd);
	return error;
}

SX_API int sx_update_cancel(struct sx_mount *mp, struct sx_update *upd)
{
	struct sx_stat tst;
	int error;

	if (!mp || !sx_update_active(upd))
		return -EINVAL;
	/*
	 * Never close a descriptor that is no longer the clone's.  After a
	 * shutdown fstat fails with -EIO but the descriptor is still the
	 * clone's (only close frees a slot), so it is closed.
	 */
	error = sx_fstat(mp, upd->su_fd_tmp, &tst);
	if (error == -EBADF || (!error && !sx_update_is_tmp(upd, &tst))) {
		sx_update_end(upd);
		return -EBADF;
	}
	error = sx_close(mp, upd->su_fd_tmp);
	sx_update_end(upd);
	return error;
}
