// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The outcome of a FISWAPRANGE request, from the rules of the interface
 * (include/swapext/fsr.h and the seed's checks), for random tests.
 *
 * The files are assumed regular, writable, without immutable, append-only
 * or swapfile flags, and far below the largest file size, so the rules that
 * only such files break (EISDIR, EBADF, EPERM, ETXTBSY, EFBIG, EXDEV) are
 * left out; every other rule is here, in the order the front end applies
 * them, since a request breaking two must fail with the first one's errno.
 */
#include <string.h>
#include "sxswapmodel.h"

#define S64_MAX_	((s64)(~0ull >> 1))

/* @pos + @len for a range whose bytes must all be addressable (both >= 0). */
static bool sum_fits(s64 pos, s64 len)
{
	return len <= S64_MAX_ - pos;
}

/* The checks before the inodes are locked: flags, pad, signs and wrapping. */
static int early_checks(const struct sxm_files *f, const struct file_swap_range *fsr)
{
	bool to_eof = fsr->flags & FILE_SWAP_RANGE_TO_EOF;
	s64 pos[2] = { fsr->file1_offset, fsr->file2_offset };
	s64 size[2] = { (s64)f->size1, (s64)f->size2 };
	u32 i;

	if (fsr->flags & ~FILE_SWAP_RANGE_ALL_FLAGS)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(fsr->pad); i++)
		if (fsr->pad[i])
			return -EINVAL;
	if (to_eof && (fsr->flags & FILE_SWAP_RANGE_FULL_FILES))
		return -EINVAL;
	for (i = 0; i < 2; i++) {
		s64 len = fsr->length;

		if (pos[i] < 0)
			return -EINVAL;
		/* TO_EOF checks only what is left to EOF (negative past it) */
		if (to_eof && size[i] - pos[i] < len)
			len = size[i] - pos[i];
		if (len < 0 || !sum_fits(pos[i], len))
			return -EINVAL;
	}
	return 0;
}

/*
 * The range checks on the final length @len: aligned starts, both ranges
 * inside EOF (TO_EOF aside), a length that is whole blocks unless a range
 * ends at its EOF, no overlap within one file, and a partial last block
 * only where both ranges reach their EOF.
 */
static int range_checks(const struct sxm_files *f, const struct file_swap_range *fsr, s64 len)
{
	s64 o1 = fsr->file1_offset, o2 = fsr->file2_offset;
	s64 s1 = (s64)f->size1, s2 = (s64)f->size2, bs = f->bsize;
	s64 span;

	if (o1 % bs || o2 % bs)
		return -EINVAL;
	if (!sum_fits(o1, len) || !sum_fits(o2, len))
		return -EINVAL;
	if (!(fsr->flags & FILE_SWAP_RANGE_TO_EOF) && (o1 + len > s1 || o2 + len > s2))
		return -EINVAL;
	/* the extent of the ranges in whole blocks, for the overlap test */
	if (o1 + len == s1)
		span = (s1 + bs - 1) / bs * bs - o1;
	else if (o2 + len == s2)
		span = (s2 + bs - 1) / bs * bs - o2;
	else if (len % bs)
		return -EINVAL;
	else
		span = len;
	if (f->same && o1 < o2 + span && o2 < o1 + span)
		return -EINVAL;
	if (len % bs && (o1 + len < s1 || o2 + len < s2))
		return -EINVAL;
	return 0;
}

/* The checks made after both files are flushed: FULL_FILES, then FILE2_FRESH. */
static int fresh_checks(const struct sxm_files *f, const struct file_swap_range *fsr, s64 len)
{
	if ((fsr->flags & FILE_SWAP_RANGE_FULL_FILES) &&
	    (fsr->file1_offset || fsr->file2_offset || len != (s64)f->size1 ||
	     len != (s64)f->size2))
		return -EDOM;
	if ((fsr->flags & FILE_SWAP_RANGE_FILE2_FRESH) && !f->fresh_ok)
		return -EBUSY;
	return 0;
}

void sxm_predict(const struct sxm_files *f, const struct file_swap_range *fsr,
		 struct sxm_result *r)
{
	s64 o1 = fsr->file1_offset, o2 = fsr->file2_offset, len = fsr->length;
	s64 s1 = (s64)f->size1, s2 = (s64)f->size2;

	memset(r, 0, sizeof(*r));
	r->length = fsr->length;
	r->size1 = f->size1;
	r->size2 = f->size2;
	r->error = early_checks(f, fsr);
	if (r->error)
		return;
	if (o1 > s1 || o2 > s2) {
		r->error = -EINVAL;
		return;
	}
	if (fsr->flags & FILE_SWAP_RANGE_TO_EOF)
		len = s1 - o1 > s2 - o2 ? s1 - o1 : s2 - o2;
	if (len) {
		r->error = range_checks(f, fsr, len);
		if (r->error)
			return;
	}
	r->error = fresh_checks(f, fsr, len);
	if (r->error)
		return;
	r->length = len;
	if (!len) {
		r->zero = true;
		return;
	}
	if (f->atomic)
		r->algo = SXM_ATOMIC;
	else if (fsr->flags & FILE_SWAP_RANGE_NONATOMIC)
		r->algo = SXM_NONATOMIC;
	else {
		r->error = -EOPNOTSUPP;
		r->length = fsr->length;
		return;
	}
	r->blk1 = (u64)o1 / f->bsize;
	r->blk2 = (u64)o2 / f->bsize;
	r->nblk = ((u64)len + f->bsize - 1) / f->bsize;
	if (fsr->flags & FILE_SWAP_RANGE_TO_EOF) {
		/* each file ends where the other's tail, moved in, ends */
		r->size1 = (u64)(o1 + (s2 - o2));
		r->size2 = (u64)(o2 + (s1 - o1));
		/*
		 * Within one file (possible only with one range at an aligned
		 * EOF), the file keeps the data moved past its old end.
		 */
		if (f->same)
			r->size1 = r->size2 = r->size1 > r->size2 ? r->size1 : r->size2;
	}
}
