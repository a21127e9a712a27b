// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Defragmenting one file the way xfs_fsr does (sx_defrag_file() in
 * include/swapext/swapext_compat.h): copy it into a tmpfile laid out in as
 * few extents as its holes allow, then XFS_IOC_SWAPEXT the copy in.
 *
 * Only the public file API is used, so this is what any caller of the
 * library could write; it lives in the engine so that the tool, the tests
 * and the kernel module run the same code.
 *
 * Why the result is safe whatever happens: the bulkstat record is taken
 * before the file's layout is read, so any change to the file from then on
 * (a write, punch, truncate or fallocate sets mtime or ctime) makes the
 * swap fail with -EBUSY and the copy is thrown away.  The copy is synced
 * before the swap, so no block of it can reach the file before its data is
 * durable.  And the two files hold the same bytes, so even a non-atomic
 * swap cut short leaves the file's contents whole; the tmpfile has no name
 * and recovery frees it with whichever blocks it holds.
 */
#include "util.h"
#include <swapext/swapext_compat.h>

/* Bytes moved per read and write of the copy. */
#define SX_DEFRAG_CHUNK		(1u << 20)

static const char *const sx_defrag_skip_names[SX_DEFRAG_SKIP_NR] = {
	[SX_DEFRAG_DONE]		= "defragmented",
	[SX_DEFRAG_SKIP_NOTREG]		= "not a regular file",
	[SX_DEFRAG_SKIP_EMPTY]		= "no data",
	[SX_DEFRAG_SKIP_FLAGS]		= "immutable, append-only or swap file",
	[SX_DEFRAG_SKIP_SHARED]		= "shares blocks",
	[SX_DEFRAG_SKIP_CONTIGUOUS]	= "already contiguous",
	[SX_DEFRAG_SKIP_NOTBETTER]	= "no better layout found",
	[SX_DEFRAG_SKIP_CHANGED]	= "changed while being copied",
};

/* A short text for a skip reason. */
SX_API const char *sx_defrag_skip_name(u32 skip)
{
	return skip < SX_DEFRAG_SKIP_NR ? sx_defrag_skip_names[skip] : "unknown";
}

/*
 * The mappings of bytes [0, @size) of @fd into a new array (*@extp, freed
 * by the caller; NULL when there are none).  Returns 1 if the file gained
 * mappings between counting and listing them (it is changing).
 */
static int sx_defrag_map(struct sx_mount *mp, int fd, u64 size, struct sx_extent **extp,
			 u32 *np)
{
	struct sx_extent *ext;
	u32 count, n;
	int error;

	*extp = NULL;
	*np = 0;
	if (size == 0)
		return 0;
	error = sx_fiemap(mp, fd, 0, size, NULL, 0, &count);
	if (error || count == 0)
		return error;
	if (count == 0xffffffffu)
		return -EFBIG;
	/* one slot more than counted: filling it means the map grew meanwhile */
	ext = sx_alloc(((size_t)count + 1) * sizeof(*ext), 0);
	if (!ext)
		return -ENOMEM;
	error = sx_fiemap(mp, fd, 0, size, ext, count + 1, &n);
	if (error) {
		sx_free(ext);
		return error;
	}
	*extp = ext;
	*np = n;
	return n > count ? 1 : 0;
}

/* True if mapping @b continues mapping @a in the file and in its state. */
static bool sx_defrag_continues(const struct sx_extent *a, const struct sx_extent *b)
{
	return a->ex_off + a->ex_len == b->ex_off &&
	       (a->ex_flags & SX_EXTENT_UNWRITTEN) == (b->ex_flags & SX_EXTENT_UNWRITTEN);
}

/* The fewest extents the mappings can be: one per run between holes and state changes. */
static u32 sx_defrag_ideal(const struct sx_extent *ext, u32 n)
{
	u32 i, runs = n ? 1 : 0;

	for (i = 1; i < n; i++)
		if (!sx_defrag_continues(&ext[i - 1], &ext[i]))
			runs++;
	return runs;
}

/*
 * Copy [@off, @end) of @fd into @tmp through @buf.  Returns 1 if the file
 * turned out shorter than that (it is changing), or the error of a read or
 * write.
 */
static int sx_defrag_copy(struct sx_mount *mp, int fd, int tmp, u64 off, u64 end, u8 *buf,
			  u64 *bytes)
{
	while (off < end) {
		u64 want = sx_min(end - off, (u64)SX_DEFRAG_CHUNK);
		s64 r, w;

		/*
		 * A short read is followed by the call that says why: an error
		 * (a read that failed part way returns what it read first), or
		 * nothing at all when the file did shrink.  Taking the short
		 * read itself for a change would report a read error as a skip.
		 */
		r = sx_pread(mp, fd, buf, want, off);
		if (r < 0)
			return (int)r;
		if (r == 0)
			return 1;
		w = sx_pwrite(mp, tmp, buf, (u64)r, off);
		if (w < 0)
			return (int)w;
		/* a short write is followed by the call that says why; never loop */
		if (w == 0)
			return -EIO;
		off += (u64)w;
		*bytes += (u64)w;
	}
	return 0;
}

/*
 * Lay the copy of @fd out in @tmp: preallocate each run of mappings that
 * continue one another in the file in one call (the allocator hands out the
 * first free run long enough), then copy the written parts into it.
 * Returns 1 if the file was seen changing.
 */
static int sx_defrag_fill(struct sx_mount *mp, int fd, int tmp, u64 size,
			  const struct sx_extent *ext, u32 n, u64 *bytes)
{
	struct sx_stat st;
	u8 *buf;
	u32 i, j;
	int error = 0;

	buf = sx_alloc(SX_DEFRAG_CHUNK, 0);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n && !error; i = j) {
		u64 start = ext[i].ex_off, end;

		for (j = i + 1; j < n && ext[j - 1].ex_off + ext[j - 1].ex_len == ext[j].ex_off; j++)
			;
		/* blocks past EOF are not swapped (FULL_FILES covers the size) */
		end = sx_min(ext[j - 1].ex_off + ext[j - 1].ex_len, size);
		if (start >= end)
			continue;
		error = sx_fallocate(mp, tmp, start, end - start);
	}
	/*
	 * Copy each run of written mappings whole, not mapping by mapping: a
	 * write into preallocated space costs a transaction per call, and the
	 * mappings of a fragmented file are many and small.
	 */
	for (i = 0; i < n && !error; i = j) {
		u64 start = ext[i].ex_off, end;

		for (j = i + 1; j < n && sx_defrag_continues(&ext[j - 1], &ext[j]); j++)
			;
		end = sx_min(ext[j - 1].ex_off + ext[j - 1].ex_len, size);
		if ((ext[i].ex_flags & SX_EXTENT_UNWRITTEN) || start >= end)
			continue;
		error = sx_defrag_copy(mp, fd, tmp, start, end, buf, bytes);
	}
	sx_free(buf);
	if (error)
		return error;
	/* a file that ends in a hole: the copy ends there too */
	error = sx_fstat(mp, tmp, &st);
	if (!error && st.st_size != size)
		error = sx_truncate(mp, tmp, size);
	return error;
}

/* The number of mappings of bytes [0, @size) of @fd. */
static int sx_defrag_count(struct sx_mount *mp, int fd, u64 size, u32 *np)
{
	*np = 0;
	return size ? sx_fiemap(mp, fd, 0, size, NULL, 0, np) : 0;
}

/* Copy @fd into a fresh tmpfile and swap it in if it is in fewer extents. */
static int sx_defrag_rewrite(struct sx_mount *mp, int fd, const struct sx_xfs_bstat *bs,
			     const struct sx_extent *ext, u32 n, struct sx_defrag_result *res)
{
	struct sx_xfs_swapext sx;
	u64 size = (u64)bs->bs_size;
	int tmp, error, cerr;

	error = sx_open_tmpfile(mp, SX_IFREG | 0600, &tmp);
	if (error)
		return error;
	error = sx_defrag_fill(mp, fd, tmp, size, ext, n, &res->dr_bytes);
	if (error == 1) {
		res->dr_skipped = SX_DEFRAG_SKIP_CHANGED;
		error = 0;
		goto out_close;
	}
	/* the copy's data is durable before any of its blocks can become the file's */
	if (!error)
		error = sx_fsync(mp, tmp);
	if (!error)
		error = sx_defrag_count(mp, tmp, size, &res->dr_after);
	if (error)
		goto out_close;
	if (res->dr_after >= res->dr_before) {
		res->dr_skipped = SX_DEFRAG_SKIP_NOTBETTER;
		goto out_close;
	}

	memset(&sx, 0, sizeof(sx));
	sx.sx_version = SX_XFS_SX_VERSION;
	sx.sx_fdtarget = fd;
	sx.sx_fdtmp = tmp;
	sx.sx_offset = 0;
	sx.sx_length = (s64)size;
	sx.sx_stat = *bs;
	error = sx_swapext(mp, &sx);
	/*
	 * -EBUSY: changed since the bulkstat record; -EFAULT: its size moved
	 * (that changes ctime too, but the size check comes first).
	 */
	if (error == -EBUSY || error == -EFAULT) {
		res->dr_skipped = SX_DEFRAG_SKIP_CHANGED;
		error = 0;
		goto out_close;
	}
	if (!error)
		error = sx_defrag_count(mp, fd, size, &res->dr_after);
out_close:
	/* the last close frees the tmpfile and, after a swap, the old blocks */
	cerr = sx_close(mp, tmp);
	return error ? error : cerr;
}

/* Rewrite the open file @fd into as few extents as its holes allow. */
SX_API int sx_defrag_file(struct sx_mount *mp, int fd, u32 flags, struct sx_defrag_result *res)
{
	struct sx_xfs_bstat bs;
	struct sx_extent *ext = NULL;
	struct sx_stat st;
	u32 n = 0, i;
	int error;

	memset(res, 0, sizeof(*res));
	if (flags)
		return -EINVAL;
	error = sx_fstat(mp, fd, &st);
	if (error)
		return error;
	if ((st.st_mode & SX_IFMT) != SX_IFREG) {
		res->dr_skipped = SX_DEFRAG_SKIP_NOTREG;
		return 0;
	}
	if (st.st_flags & (SX_DIFLAG_IMMUTABLE | SX_DIFLAG_APPEND | SX_DIFLAG_SWAPFILE)) {
		res->dr_skipped = SX_DEFRAG_SKIP_FLAGS;
		return 0;
	}
	/* the freshness record comes first: a change after it makes the swap fail */
	error = sx_bulkstat(mp, fd, &bs);
	if (error)
		return error;
	error = sx_defrag_map(mp, fd, (u64)bs.bs_size, &ext, &n);
	if (error < 0)
		return error;
	res->dr_before = n;
	res->dr_after = n;
	if (error == 1) {
		res->dr_skipped = SX_DEFRAG_SKIP_CHANGED;
		error = 0;
		goto out_free;
	}
	if (n == 0) {
		res->dr_skipped = SX_DEFRAG_SKIP_EMPTY;
		goto out_free;
	}
	for (i = 0; i < n; i++) {
		if (ext[i].ex_flags & SX_EXTENT_SHARED) {
			res->dr_skipped = SX_DEFRAG_SKIP_SHARED;
			goto out_free;
		}
	}
	res->dr_ideal = sx_defrag_ideal(ext, n);
	if (n <= res->dr_ideal) {
		res->dr_skipped = SX_DEFRAG_SKIP_CONTIGUOUS;
		goto out_free;
	}
	error = sx_defrag_rewrite(mp, fd, &bs, ext, n, res);
out_free:
	sx_free(ext);
	return error;
}
