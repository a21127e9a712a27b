// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The FISWAPRANGE front end: every check of the seed's do_swap_file_range,
 * generic_swap_file_range_prep, generic_swap_file_range_checks and
 * generic_swap_file_range_check_fresh (fs/read_write.c, mm/filemap.c), with
 * their errnos and in their order, then the choice of algorithm made by the
 * seed's xfs_swap_range.
 *
 * The request is worked on in a copy: a rejected call changes neither the
 * files nor the caller's structure.  Signed offsets and lengths are checked
 * for sign before any arithmetic, and every sum is checked for overflow
 * before it is formed (the seed's "pos + len < 0" would be undefined in C).
 * Two hardenings over the seed, both from mainline exchange-range: file1 is
 * written too, so it must be open for writing as file2 must; and an
 * immutable or append-only file1 is refused like file2.
 */
#include "swap_core.h"

/* The host operations the core cannot do without. */
static bool sx_swaprange_host_ok(const struct sx_host *h)
{
	const struct sx_host_ops *o = h ? h->h_ops : NULL;

	return o && o->ho_stat && o->ho_lock_two && o->ho_unlock_two && o->ho_flush_range &&
	       o->ho_read_mapping && o->ho_max_extents && o->ho_trans_alloc &&
	       o->ho_trans_roll && o->ho_trans_commit && o->ho_trans_cancel &&
	       o->ho_queue_unmap && o->ho_queue_map && o->ho_set_size &&
	       o->ho_mod_nblocks && o->ho_set_reflink && o->ho_touch && o->ho_defer_swap &&
	       o->ho_iget && o->ho_irele;
}

static bool sx_isdir(const struct sx_hstat *st)
{
	return (st->hs_mode & SX_HS_IFMT) == SX_HS_IFDIR;
}

static bool sx_isreg(const struct sx_hstat *st)
{
	return (st->hs_mode & SX_HS_IFMT) == SX_HS_IFREG;
}

/* True if @a + @b (both >= 0) does not fit in an s64. */
static bool sx_add_overflows(s64 a, s64 b)
{
	return a > SX_S64_MAX - b;
}

/* @x rounded up to a multiple of @bs, or -1 if that does not fit. */
static s64 sx_align_up(s64 x, u32 bs)
{
	u64 r = sx_roundup((u64)x, (u64)bs);

	return r > (u64)SX_S64_MAX ? -1 : (s64)r;
}

/*
 * generic_file_rw_checks(): no directories, pipes or sockets; both files
 * open for writing (file1 for reading too), neither O_APPEND.
 */
static int sx_swaprange_rw_checks(const struct sx_hfile *f1, const struct sx_hfile *f2,
				  const struct sx_hstat *st1, const struct sx_hstat *st2)
{
	if (sx_isdir(st1) || sx_isdir(st2))
		return -EISDIR;
	if (!sx_isreg(st1) || !sx_isreg(st2))
		return -EINVAL;
	if (!(f1->hf_mode & SX_HF_READ) || !(f1->hf_mode & SX_HF_WRITE) ||
	    !(f2->hf_mode & SX_HF_WRITE) ||
	    (f1->hf_mode & SX_HF_APPEND) || (f2->hf_mode & SX_HF_APPEND))
		return -EBADF;
	return 0;
}

/*
 * remap_verify_area() as swap_range_verify_area() calls it: the position and
 * length are not negative and their sum does not wrap.  With TO_EOF the
 * length checked is what remains to EOF (at most the given length).
 */
static int sx_swaprange_verify_area(const struct file_swap_range *fsr, s64 pos,
				    const struct sx_hstat *st)
{
	s64 len = fsr->length;

	if (pos < 0)
		return -EINVAL;
	if (fsr->flags & FILE_SWAP_RANGE_TO_EOF)
		len = sx_min(len, st->hs_size - pos);
	if (len < 0 || sx_add_overflows(pos, len))
		return -EINVAL;
	return 0;
}

/*
 * generic_write_check_limits() without RLIMIT_FSIZE: a range may not start
 * at or past the largest file size, and @count is cut to what fits.
 */
static int sx_swaprange_check_limits(const struct sx_host *h, s64 pos, s64 *count)
{
	if (pos >= h->h_maxbytes)
		return -EFBIG;
	*count = sx_min(*count, h->h_maxbytes - pos);
	return 0;
}

/* generic_swap_file_range_checks(): offsets, lengths, limits and overlap. */
static int sx_swaprange_checks(const struct sx_host *h, bool same,
			       const struct file_swap_range *fsr,
			       const struct sx_hstat *st1, const struct sx_hstat *st2)
{
	s64 size1 = st1->hs_size, size2 = st2->hs_size;
	s64 bs = st2->hs_blksize;
	s64 test_len, blen, a;
	int error;

	if (fsr->length < 0)
		return -EINVAL;

	/* the start of both ranges must be aligned to a block */
	if ((fsr->file1_offset & (bs - 1)) || (fsr->file2_offset & (bs - 1)))
		return -EINVAL;

	/* ensure offsets don't wrap (verify_area saw no more than this length) */
	if (sx_add_overflows(fsr->file1_offset, fsr->length) ||
	    sx_add_overflows(fsr->file2_offset, fsr->length))
		return -EINVAL;

	/* both ranges within EOF, unless swapping to EOF */
	if (!(fsr->flags & FILE_SWAP_RANGE_TO_EOF) &&
	    (fsr->file1_offset + fsr->length > size1 ||
	     fsr->file2_offset + fsr->length > size2))
		return -EINVAL;

	/* a size limit that would cut the length aborts the whole operation */
	test_len = fsr->length;
	error = sx_swaprange_check_limits(h, fsr->file2_offset, &test_len);
	if (error)
		return error;
	error = sx_swaprange_check_limits(h, fsr->file1_offset, &test_len);
	if (error)
		return error;
	if (test_len != fsr->length)
		return -EINVAL;

	/*
	 * A range that ends at its file's EOF is rounded up to the next block
	 * for the overlap check; otherwise the length must be block aligned.
	 */
	if (fsr->file1_offset + fsr->length == size1) {
		a = sx_align_up(size1, (u32)bs);
		if (a < 0)
			return -EINVAL;
		blen = a - fsr->file1_offset;
	} else if (fsr->file2_offset + fsr->length == size2) {
		a = sx_align_up(size2, (u32)bs);
		if (a < 0)
			return -EINVAL;
		blen = a - fsr->file2_offset;
	} else if (fsr->length & (bs - 1)) {
		return -EINVAL;
	} else {
		blen = fsr->length;
	}

	/* no overlapping ranges within one file */
	if (same && fsr->file2_offset < fsr->file1_offset + blen &&
	    fsr->file1_offset < fsr->file2_offset + blen)
		return -EINVAL;
	return 0;
}

/*
 * generic_swap_file_range_prep(), under both locks.  Sets *@zero for a
 * request that turned out to swap nothing.
 */
static int sx_swaprange_prep(const struct sx_host *h, bool same, struct file_swap_range *fsr,
			     const struct sx_hstat *st1, const struct sx_hstat *st2, bool *zero)
{
	s64 blkmask = (s64)st1->hs_blksize - 1;
	int error;

	*zero = false;

	/* don't touch certain kinds of inodes */
	if ((st1->hs_flags | st2->hs_flags) & (SX_HSTAT_IMMUTABLE | SX_HSTAT_APPEND))
		return -EPERM;
	if ((st1->hs_flags | st2->hs_flags) & SX_HSTAT_SWAPFILE)
		return -ETXTBSY;

	/* no dirs, pipes, sockets... (checked again: they were unlocked) */
	if (sx_isdir(st1) || sx_isdir(st2))
		return -EISDIR;
	if (!sx_isreg(st1) || !sx_isreg(st2))
		return -EINVAL;

	/* ranges cannot start after EOF */
	if (fsr->file1_offset > st1->hs_size || fsr->file2_offset > st2->hs_size)
		return -EINVAL;

	/* TO_EOF: cover everything to the end of both files */
	if (fsr->flags & FILE_SWAP_RANGE_TO_EOF)
		fsr->length = sx_max(st1->hs_size - fsr->file1_offset,
				     st2->hs_size - fsr->file2_offset);

	/* a zero-length swap exits immediately */
	if (fsr->length == 0) {
		*zero = true;
		return 0;
	}

	error = sx_swaprange_checks(h, same, fsr, st1, st2);
	if (error)
		return error;

	/* never swap a partial EOF block into the middle of another file */
	if (fsr->length & blkmask) {
		s64 new_length = fsr->length;

		if (fsr->file2_offset + new_length < st2->hs_size)
			new_length &= ~blkmask;
		if (fsr->file1_offset + new_length < st1->hs_size)
			new_length &= ~blkmask;
		if (new_length != fsr->length)
			return -EINVAL;
	}
	return 0;
}

/*
 * generic_swap_file_range_check_fresh(), after both inodes are locked (and
 * flushed): full files really are full, and file2 is what the caller saw.
 */
static int sx_swaprange_check_fresh(const struct file_swap_range *fsr,
				    const struct sx_hstat *st1, const struct sx_hstat *st2)
{
	if ((fsr->flags & FILE_SWAP_RANGE_FULL_FILES) &&
	    (fsr->file1_offset != 0 || fsr->file2_offset != 0 ||
	     fsr->length != st1->hs_size || fsr->length != st2->hs_size))
		return -EDOM;

	if ((fsr->flags & FILE_SWAP_RANGE_FILE2_FRESH) &&
	    ((u64)fsr->file2_ino != st2->hs_ino ||
	     fsr->file2_ctime != st2->hs_ctime_sec ||
	     (u32)fsr->file2_ctime_nsec != st2->hs_ctime_nsec ||
	     fsr->file2_mtime != st2->hs_mtime_sec ||
	     (u32)fsr->file2_mtime_nsec != st2->hs_mtime_nsec))
		return -EBUSY;
	return 0;
}

/*
 * The seed's xfs_swap_range choice: the atomic swap whenever the log may
 * hold SXIs; otherwise, only if the caller allows a non-atomic swap, the
 * same steps without an intent if map/unmap are deferred work, or the
 * whole-fork swap for full files of one size; otherwise nothing.
 */
static int sx_swaprange_algo(const struct sx_host *h, const struct file_swap_range *fsr,
			     const struct sx_hstat *st1, const struct sx_hstat *st2,
			     enum sx_swap_algo *algo)
{
	bool nonatomic = fsr->flags & FILE_SWAP_RANGE_NONATOMIC;

	if (h->h_features & SX_HOST_ATOMIC_SWAP)
		*algo = SX_SWAP_ATOMIC;
	else if (nonatomic && (h->h_features & SX_HOST_DEFER_BMAP))
		*algo = SX_SWAP_BMAP;
	else if (nonatomic && !(fsr->flags & FILE_SWAP_RANGE_TO_EOF) &&
		 fsr->file1_offset == 0 && fsr->file2_offset == 0 &&
		 fsr->length == st1->hs_size && fsr->length == st2->hs_size &&
		 h->h_ops->ho_swap_forks)
		*algo = SX_SWAP_FORKS;
	else
		return -EOPNOTSUPP;
	return 0;
}

/* Turn a checked request into the swap's terms (blocks, final sizes). */
static void sx_swaprange_req(const struct sx_hfile *f1, const struct sx_hfile *f2,
			     const struct file_swap_range *fsr, const struct sx_hstat *st1,
			     const struct sx_hstat *st2, enum sx_swap_algo algo,
			     struct sx_swap_req *req)
{
	u32 bs = st1->hs_blksize;

	memset(req, 0, sizeof(*req));
	req->sr_ip1 = f1->hf_ip;
	req->sr_ip2 = f2->hf_ip;
	req->sr_startoff1 = (u64)fsr->file1_offset / bs;
	req->sr_startoff2 = (u64)fsr->file2_offset / bs;
	req->sr_blockcount = sx_howmany((u64)fsr->length, bs);
	req->sr_isize1 = -1;
	req->sr_isize2 = -1;
	req->sr_algo = algo;
	if (fsr->flags & FILE_SWAP_RANGE_TO_EOF) {
		/*
		 * Each file ends where the other's tail ends after the move:
		 * the seed's plain exchange of sizes when the offsets are
		 * equal, and no lost or exposed bytes when they are not.
		 * No overflow: each sum is at most offset + length, which
		 * the limit checks kept below h_maxbytes.
		 */
		req->sr_flags |= SX_SWAPEXT_SET_SIZES;
		req->sr_isize1 = fsr->file1_offset + (st2->hs_size - fsr->file2_offset);
		req->sr_isize2 = fsr->file2_offset + (st1->hs_size - fsr->file1_offset);
		/*
		 * Within one file the checks let through only a range that
		 * starts at an aligned EOF: the data of the other range moves
		 * past the old EOF, and the file must grow to keep it.  The
		 * two formulas give the old start of that data and its new
		 * end; the file takes the larger, whichever range is file1's
		 * (the last step sets only one size on one inode).
		 */
		if (f1->hf_ip == f2->hf_ip)
			req->sr_isize1 = req->sr_isize2 = sx_max(req->sr_isize1, req->sr_isize2);
	}
}

int sx_swap_core_range(const struct sx_hfile *file1, const struct sx_hfile *file2,
		       struct file_swap_range *ufsr)
{
	struct file_swap_range fsr = *ufsr;
	struct sx_hinode *ip1 = file1->hf_ip, *ip2 = file2->hf_ip;
	struct sx_host *h = ip1->hi_host;
	struct sx_hstat st1, st2;
	enum sx_swap_algo algo;
	struct sx_swap_req req;
	u32 i;
	bool zero;
	int error;

	/* do_swap_file_range(): the request itself */
	if (fsr.flags & ~FILE_SWAP_RANGE_ALL_FLAGS)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(fsr.pad); i++)
		if (fsr.pad[i])
			return -EINVAL;
	if ((fsr.flags & FILE_SWAP_RANGE_FULL_FILES) && (fsr.flags & FILE_SWAP_RANGE_TO_EOF))
		return -EINVAL;

	/* both files in one filesystem */
	if (ip1->hi_host != ip2->hi_host)
		return -EXDEV;

	sx_hstat(ip1, &st1);
	sx_hstat(ip2, &st2);
	error = sx_swaprange_rw_checks(file1, file2, &st1, &st2);
	if (error)
		return error;
	if (!sx_swaprange_host_ok(h))
		return -EOPNOTSUPP;
	error = sx_swaprange_verify_area(&fsr, fsr.file1_offset, &st1);
	if (!error)
		error = sx_swaprange_verify_area(&fsr, fsr.file2_offset, &st2);
	if (error)
		return error;

	/* the filesystem's swap_file_range: everything else under both locks */
	error = h->h_ops->ho_lock_two(ip1, ip2);
	if (error)
		return error;
	sx_hstat(ip1, &st1);
	sx_hstat(ip2, &st2);
	if (SX_CORE_CORRUPT(h, !sx_is_pow2(st1.hs_blksize) ||
			  st1.hs_blksize != st2.hs_blksize)) {
		error = -EFSCORRUPTED;
		goto out_unlock;
	}
	error = sx_swaprange_prep(h, ip1 == ip2, &fsr, &st1, &st2, &zero);
	if (error)
		goto out_unlock;
	if (!zero) {
		/* wait for I/O and write back both ranges: the mappings are final */
		error = h->h_ops->ho_flush_range(ip1, fsr.file1_offset, fsr.length);
		if (!error)
			error = h->h_ops->ho_flush_range(ip2, fsr.file2_offset, fsr.length);
		if (error)
			goto out_unlock;
		sx_hstat(ip1, &st1);
		sx_hstat(ip2, &st2);
	}
	error = sx_swaprange_check_fresh(&fsr, &st1, &st2);
	if (error || zero)
		goto out_unlock;
	error = sx_swaprange_algo(h, &fsr, &st1, &st2, &algo);
	if (error)
		goto out_unlock;
	/* no stale block past an EOF may be swapped inside a file's size */
	if (h->h_ops->ho_trim_eof) {
		error = h->h_ops->ho_trim_eof(ip1);
		if (!error && ip2 != ip1)
			error = h->h_ops->ho_trim_eof(ip2);
		if (error)
			goto out_unlock;
	}

	sx_swaprange_req(file1, file2, &fsr, &st1, &st2, algo, &req);
	error = sx_swapext_swap(&req);
out_unlock:
	h->h_ops->ho_unlock_two(ip1, ip2);
	if (!error)
		*ufsr = fsr;
	return error;
}

/* ------------------------------------------------- a host's own atomic swaps */

/* Whether the range pair @sw may be queued, the swap's errnos. */
static int sx_swaprange_queue_one(const struct sx_hswap *sw)
{
	struct sx_hinode *ip1 = sw->hw_ip1, *ip2 = sw->hw_ip2;
	struct sx_host *h;
	struct sx_hstat st1, st2;
	u64 bs, end1, end2, maxblk;

	if (!ip1 || !ip2 || ip1 == ip2 || sw->hw_blockcount == 0)
		return -EINVAL;
	h = ip1->hi_host;
	if (ip2->hi_host != h)
		return -EXDEV;
	if (!sx_swaprange_host_ok(h) || !(h->h_features & SX_HOST_ATOMIC_SWAP))
		return -EOPNOTSUPP;
	sx_hstat(ip1, &st1);
	sx_hstat(ip2, &st2);
	if (sx_isdir(&st1) || sx_isdir(&st2))
		return -EISDIR;
	if (!sx_isreg(&st1) || !sx_isreg(&st2))
		return -EINVAL;
	if ((st1.hs_flags | st2.hs_flags) & (SX_HSTAT_IMMUTABLE | SX_HSTAT_APPEND))
		return -EPERM;
	if ((st1.hs_flags | st2.hs_flags) & SX_HSTAT_SWAPFILE)
		return -ETXTBSY;
	if (SX_CORE_CORRUPT(h, !sx_is_pow2(st1.hs_blksize) ||
			  st1.hs_blksize != st2.hs_blksize))
		return -EFSCORRUPTED;
	bs = st1.hs_blksize;
	maxblk = (u64)h->h_maxbytes / bs;
	if (sw->hw_startoff1 >= maxblk || sw->hw_startoff2 >= maxblk ||
	    sw->hw_blockcount > maxblk - sw->hw_startoff1 ||
	    sw->hw_blockcount > maxblk - sw->hw_startoff2)
		return -EFBIG;
	end1 = (sw->hw_startoff1 + sw->hw_blockcount) * bs;
	end2 = (sw->hw_startoff2 + sw->hw_blockcount) * bs;
	if ((sw->hw_isize1 < 0) != (sw->hw_isize2 < 0) ||
	    (sw->hw_isize1 < 0 && (sw->hw_isize1 != -1 || sw->hw_isize2 != -1)) ||
	    sw->hw_isize1 > h->h_maxbytes || sw->hw_isize2 > h->h_maxbytes)
		return -EINVAL;
	/* without final sizes, no block may land past its new file's EOF block */
	if (sw->hw_isize1 < 0 && (end1 > sx_roundup((u64)st1.hs_size, bs) ||
				  end2 > sx_roundup((u64)st2.hs_size, bs)))
		return -EINVAL;
	return 0;
}

/* True if ranges @a and @b share a block of one inode. */
static bool sx_swaprange_queue_overlap(const struct sx_hswap *a, const struct sx_hswap *b)
{
	struct sx_hinode *ia[2] = { a->hw_ip1, a->hw_ip2 }, *ib[2] = { b->hw_ip1, b->hw_ip2 };
	u64 oa[2] = { a->hw_startoff1, a->hw_startoff2 };
	u64 ob[2] = { b->hw_startoff1, b->hw_startoff2 };
	u32 i, j;

	for (i = 0; i < 2; i++)
		for (j = 0; j < 2; j++)
			if (ia[i] == ib[j] && oa[i] < ob[j] + b->hw_blockcount &&
			    ob[j] < oa[i] + a->hw_blockcount)
				return true;
	return false;
}

/* The request of the swap machinery for range pair @sw. */
static void sx_swaprange_queue_req(const struct sx_hswap *sw, struct sx_swap_req *req)
{
	memset(req, 0, sizeof(*req));
	req->sr_ip1 = sw->hw_ip1;
	req->sr_ip2 = sw->hw_ip2;
	req->sr_startoff1 = sw->hw_startoff1;
	req->sr_startoff2 = sw->hw_startoff2;
	req->sr_blockcount = sw->hw_blockcount;
	req->sr_isize1 = sw->hw_isize1;
	req->sr_isize2 = sw->hw_isize2;
	if (sw->hw_isize1 >= 0)
		req->sr_flags = SX_SWAPEXT_SET_SIZES;
	req->sr_algo = SX_SWAP_ATOMIC;
}

int sx_swap_core_queue(struct sx_htrans *tp, const struct sx_hswap *sw, u32 n)
{
	struct sx_swap_req req;
	u32 i, j;
	int error;

	if (!tp || (n && !sw))
		return -EINVAL;
	/* everything that can fail before anything changes in @tp */
	for (i = 0; i < n; i++) {
		error = sx_swaprange_queue_one(&sw[i]);
		if (error)
			return error;
		for (j = 0; j < i; j++)
			if (sx_swaprange_queue_overlap(&sw[i], &sw[j]))
				return -EINVAL;
		sx_swaprange_queue_req(&sw[i], &req);
		error = sx_swapext_queue_check(&req);
		if (error)
			return error;
	}
	for (i = 0; i < n; i++) {
		sx_swaprange_queue_req(&sw[i], &req);
		error = sx_swapext_queue(tp, &req);
		if (error)
			return error;
	}
	return 0;
}
