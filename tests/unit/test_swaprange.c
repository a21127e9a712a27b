// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The FISWAPRANGE front end (core/swaprange.c) on the in-memory host,
 * table-driven: every branch of the seed's checks with its errno, and a
 * rejected call changes nothing (files, log, the caller's structure, locks,
 * transactions).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include "memhost.h"

#define B		4096
#define S64MAX		((s64)(~0ULL >> 1))
#define RW		(SX_HF_READ | SX_HF_WRITE)

enum fresh {
	FR_NONE = 0,
	FR_MATCH,
	FR_INO,
	FR_MTIME,
	FR_MTIME_NSEC,
	FR_CTIME,
	FR_CTIME_NSEC,
};

struct prep_case {
	const char	*name;
	int		expect;
	/* the files */
	s64		size1, size2;		/* 0: 16 blocks */
	bool		same;			/* file2 is file1 */
	bool		mode1_set, mode2_set;
	u32		mode1, mode2;		/* SX_HF_*; default RW */
	u32		ifmt1, ifmt2;		/* default regular */
	u32		flags1, flags2;		/* SX_HSTAT_* */
	bool		other_host;
	bool		features_set;
	u32		features;		/* default SX_HOST_ATOMIC_SWAP */
	bool		no_forks;
	bool		no_touch;		/* a host missing an operation */
	s64		maxbytes;
	u64		max_extents;
	bool		fragmented;		/* 1-block extents with holes */
	bool		shared_states;		/* one block, two states */
	u32		fail_flush, fail_alloc;
	/* the request */
	s64		off1, off2, len;
	u64		flags;
	int		pad;			/* 1..6: pad[pad-1] = 1 */
	enum fresh	fresh;
	/* on success: the length copied back (TO_EOF), if set */
	bool		len_out_set;
	s64		len_out;
};

static const struct prep_case cases[] = {
	{ "unknown flag", -EINVAL, .len = B, .flags = 1ull << 4 },
	{ "high unknown flag", -EINVAL, .len = B, .flags = 1ull << 63 },
	{ "pad[0] nonzero", -EINVAL, .len = B, .pad = 1 },
	{ "pad[5] nonzero", -EINVAL, .len = B, .pad = 6 },
	{ "FULL_FILES with TO_EOF", -EINVAL,
	  .flags = FILE_SWAP_RANGE_FULL_FILES | FILE_SWAP_RANGE_TO_EOF },
	{ "files of two hosts", -EXDEV, .len = B, .other_host = true },
	{ "file1 a directory", -EISDIR, .len = B, .ifmt1 = SX_HS_IFDIR },
	{ "file2 a directory", -EISDIR, .len = B, .ifmt2 = SX_HS_IFDIR },
	{ "file1 a fifo", -EINVAL, .len = B, .ifmt1 = 0010000 },
	{ "file2 a symlink", -EINVAL, .len = B, .ifmt2 = 0120000 },
	{ "file1 not open for reading", -EBADF, .len = B, .mode1_set = true,
	  .mode1 = SX_HF_WRITE },
	{ "file1 not open for writing", -EBADF, .len = B, .mode1_set = true,
	  .mode1 = SX_HF_READ },
	{ "file2 not open for writing", -EBADF, .len = B, .mode2_set = true,
	  .mode2 = SX_HF_READ },
	{ "file2 O_APPEND", -EBADF, .len = B, .mode2_set = true,
	  .mode2 = RW | SX_HF_APPEND },
	{ "file1 O_APPEND", -EBADF, .len = B, .mode1_set = true,
	  .mode1 = RW | SX_HF_APPEND },
	{ "host without an operation", -EOPNOTSUPP, .len = B, .no_touch = true },
	{ "file1_offset negative", -EINVAL, .off1 = -B, .len = B },
	{ "file2_offset negative", -EINVAL, .off2 = -B, .len = B },
	{ "file2_offset S64_MIN", -EINVAL, .off2 = -S64MAX - 1, .len = B },
	{ "length negative", -EINVAL, .len = -B },
	{ "file1_offset + length wraps", -EINVAL, .off1 = B, .len = S64MAX },
	{ "file2_offset + length wraps", -EINVAL, .off2 = 2 * B, .len = S64MAX - B },
	{ "TO_EOF, negative offset (sign before arithmetic)", -EINVAL,
	  .off1 = -S64MAX - 1, .flags = FILE_SWAP_RANGE_TO_EOF },
	{ "TO_EOF, negative length", -EINVAL, .len = -1, .flags = FILE_SWAP_RANGE_TO_EOF },
	{ "file2 immutable", -EPERM, .len = B, .flags2 = SX_HSTAT_IMMUTABLE },
	{ "file1 immutable", -EPERM, .len = B, .flags1 = SX_HSTAT_IMMUTABLE },
	{ "file1 append-only", -EPERM, .len = B, .flags1 = SX_HSTAT_APPEND },
	{ "file1 a swap file", -ETXTBSY, .len = B, .flags1 = SX_HSTAT_SWAPFILE },
	{ "file2 a swap file", -ETXTBSY, .len = B, .flags2 = SX_HSTAT_SWAPFILE },
	{ "file1_offset past EOF", -EINVAL, .off1 = 17 * B, .len = 0 },
	{ "file2_offset past EOF", -EINVAL, .off2 = 16 * B + 1, .len = 0 },
	{ "zero length", 0, .len = 0 },
	{ "zero length at both EOFs, TO_EOF", 0, .off1 = 16 * B, .off2 = 16 * B,
	  .len = 77, .flags = FILE_SWAP_RANGE_TO_EOF, .len_out_set = true, .len_out = 0 },
	{ "zero length, stale FILE2_FRESH", -EBUSY, .len = 0,
	  .flags = FILE_SWAP_RANGE_FILE2_FRESH, .fresh = FR_MTIME },
	{ "file1_offset unaligned", -EINVAL, .off1 = 512, .len = B },
	{ "file2_offset unaligned", -EINVAL, .off2 = B + 1, .len = B },
	{ "range past file1's EOF", -EINVAL, .size1 = 8 * B, .off1 = 4 * B, .len = 5 * B },
	{ "range past file2's EOF", -EINVAL, .size2 = 8 * B, .off2 = 4 * B, .len = 5 * B },
	{ "range at the size limit", -EFBIG, .size1 = 64 * B, .size2 = 64 * B,
	  .maxbytes = 32 * B, .off2 = 32 * B, .len = B },
	{ "file1 range at the size limit", -EFBIG, .size1 = 64 * B, .size2 = 64 * B,
	  .maxbytes = 32 * B, .off1 = 40 * B, .len = B },
	{ "length cut by the size limit", -EINVAL, .size1 = 64 * B, .size2 = 64 * B,
	  .maxbytes = 32 * B, .off2 = 16 * B, .len = 32 * B },
	{ "length unaligned mid-file", -EINVAL, .len = B + 100 },
	{ "one file, overlapping ranges", -EINVAL, .size1 = 64 * B, .same = true,
	  .off1 = 0, .off2 = 4 * B, .len = 8 * B },
	{ "one file, one range", -EINVAL, .same = true, .len = 4 * B },
	{ "one file, overlap after EOF rounding", -EINVAL, .size1 = 10 * B + 100,
	  .same = true, .off1 = 6 * B, .off2 = 8 * B, .len = 2 * B + 100 },
	{ "partial EOF block into file2's middle", -EINVAL, .size1 = 10 * B + 100,
	  .size2 = 20 * B, .off1 = 8 * B, .off2 = 0, .len = 2 * B + 100 },
	{ "partial EOF block into file1's middle", -EINVAL, .size1 = 20 * B,
	  .size2 = 10 * B + 100, .off1 = 0, .off2 = 8 * B, .len = 2 * B + 100 },
	{ "partial EOF blocks at both EOFs", 0, .size1 = 10 * B + 100, .size2 = 4 * B + 100,
	  .off1 = 8 * B, .off2 = 2 * B, .len = 2 * B + 100 },
	{ "FULL_FILES, offset not zero", -EDOM, .size1 = 16 * B, .size2 = 16 * B,
	  .off1 = 0, .off2 = B, .len = 15 * B, .flags = FILE_SWAP_RANGE_FULL_FILES },
	{ "FULL_FILES, sizes differ", -EDOM, .size1 = 16 * B, .size2 = 20 * B,
	  .len = 16 * B, .flags = FILE_SWAP_RANGE_FULL_FILES },
	{ "FULL_FILES", 0, .len = 16 * B, .flags = FILE_SWAP_RANGE_FULL_FILES },
	{ "FILE2_FRESH matches", 0, .len = 4 * B, .flags = FILE_SWAP_RANGE_FILE2_FRESH,
	  .fresh = FR_MATCH },
	{ "FILE2_FRESH, other inode", -EBUSY, .len = 4 * B,
	  .flags = FILE_SWAP_RANGE_FILE2_FRESH, .fresh = FR_INO },
	{ "FILE2_FRESH, mtime", -EBUSY, .len = 4 * B, .flags = FILE_SWAP_RANGE_FILE2_FRESH,
	  .fresh = FR_MTIME },
	{ "FILE2_FRESH, mtime ns", -EBUSY, .len = 4 * B,
	  .flags = FILE_SWAP_RANGE_FILE2_FRESH, .fresh = FR_MTIME_NSEC },
	{ "FILE2_FRESH, ctime", -EBUSY, .len = 4 * B, .flags = FILE_SWAP_RANGE_FILE2_FRESH,
	  .fresh = FR_CTIME },
	{ "FILE2_FRESH, ctime ns", -EBUSY, .len = 4 * B,
	  .flags = FILE_SWAP_RANGE_FILE2_FRESH, .fresh = FR_CTIME_NSEC },
	{ "TO_EOF sets the length", 0, .size1 = 10 * B + 7, .size2 = 3 * B,
	  .off1 = 2 * B, .off2 = B, .len = 5, .flags = FILE_SWAP_RANGE_TO_EOF,
	  .len_out_set = true, .len_out = 8 * B + 7 },
	{ "no atomic swap, atomic asked", -EOPNOTSUPP, .features_set = true, .len = 16 * B },
	{ "non-atomic, no deferred bmap, part of a file", -EOPNOTSUPP,
	  .features_set = true, .len = 4 * B, .flags = FILE_SWAP_RANGE_NONATOMIC },
	{ "non-atomic, no deferred bmap, TO_EOF", -EOPNOTSUPP, .features_set = true,
	  .flags = FILE_SWAP_RANGE_NONATOMIC | FILE_SWAP_RANGE_TO_EOF },
	{ "non-atomic, no deferred bmap, no fork swap", -EOPNOTSUPP, .features_set = true,
	  .no_forks = true, .len = 16 * B, .flags = FILE_SWAP_RANGE_NONATOMIC },
	{ "non-atomic, fork swap", 0, .features_set = true, .len = 16 * B,
	  .flags = FILE_SWAP_RANGE_NONATOMIC },
	{ "non-atomic, deferred bmap", 0, .features_set = true,
	  .features = SX_HOST_DEFER_BMAP, .len = 4 * B, .flags = FILE_SWAP_RANGE_NONATOMIC },
	{ "extent count would overflow", -EFBIG, .fragmented = true, .max_extents = 40,
	  .size1 = 64 * B, .size2 = 64 * B, .len = 64 * B },
	{ "one block, two states", -EFSCORRUPTED, .shared_states = true, .len = 4 * B },
	{ "flush fails", -EIO, .len = B, .fail_flush = 1 },
	{ "second flush fails", -EIO, .len = B, .fail_flush = 2 },
	{ "reservation fails", -ENOSPC, .len = B, .fail_alloc = 1 },
};

static struct mh_host host, host2;

/* Map file @mi fully with 4-block extents, or (@frag) every other block. */
static void fill(struct mh_inode *mi, bool frag)
{
	u64 nb = mh_howmany((u64)mi->mi_size, B), off;

	for (off = 0; off < nb; off += frag ? 2 : 4)
		mh_add_extent(mi, off, frag ? 1 : mh_min(4, nb - off), frag && (off & 2));
}

static void fill_fsr(const struct prep_case *c, struct mh_inode *m2, struct file_swap_range *fsr)
{
	memset(fsr, 0, sizeof(*fsr));
	fsr->file1_fd = 3;
	fsr->file1_offset = c->off1;
	fsr->file2_offset = c->off2;
	fsr->length = c->len;
	fsr->flags = c->flags;
	if (c->pad)
		fsr->pad[c->pad - 1] = 1;
	if (c->fresh == FR_NONE)
		return;
	fsr->file2_ino = (s64)m2->mi_ino;
	fsr->file2_mtime = m2->mi_mtime_sec;
	fsr->file2_mtime_nsec = (s32)m2->mi_mtime_nsec;
	fsr->file2_ctime = m2->mi_ctime_sec;
	fsr->file2_ctime_nsec = (s32)m2->mi_ctime_nsec;
	switch (c->fresh) {
	case FR_INO:
		fsr->file2_ino++;
		break;
	case FR_MTIME:
		fsr->file2_mtime--;
		break;
	case FR_MTIME_NSEC:
		fsr->file2_mtime_nsec++;
		break;
	case FR_CTIME:
		fsr->file2_ctime++;
		break;
	case FR_CTIME_NSEC:
		fsr->file2_ctime_nsec--;
		break;
	default:
		break;
	}
}

static void run_case(const struct prep_case *c)
{
	struct mh_inode *m1, *m2, *before;
	struct mh_host *h2 = &host;
	struct file_swap_range fsr, orig;
	struct sx_hfile f1, f2;
	u32 i;
	int error;

	mh_init(&host, B, c->features_set ? c->features : SX_HOST_ATOMIC_SWAP);
	mh_init(&host2, B, SX_HOST_ATOMIC_SWAP);
	if (c->maxbytes)
		host.mh_host.h_maxbytes = c->maxbytes;
	if (c->max_extents)
		host.mh_max_extents = c->max_extents;
	if (c->no_forks)
		host.mh_ops.ho_swap_forks = NULL;
	if (c->no_touch)
		host.mh_ops.ho_touch = NULL;
	if (c->other_host)
		h2 = &host2;
	m1 = mh_create(&host, c->size1 ? c->size1 : 16 * B);
	m2 = c->same ? m1 : mh_create(h2, c->size2 ? c->size2 : 16 * B);
	if (c->shared_states) {
		u64 blk = mh_alloc(&host, 4);

		mh_add_mapping(m1, 0, blk, 4, false);
		mh_add_mapping(m2, 0, blk, 4, true);
		mh_add_extent(m1, 4, 12, false);
		mh_add_extent(m2, 4, 12, false);
	} else {
		fill(m1, c->fragmented);
		if (!c->same)
			fill(m2, !c->fragmented);
	}
	if (c->ifmt1)
		m1->mi_mode = c->ifmt1 | 0644;
	if (c->ifmt2)
		m2->mi_mode = c->ifmt2 | 0644;
	m1->mi_flags |= c->flags1;
	m2->mi_flags |= c->flags2;
	mh_checkpoint(&host);
	before = mh_snapshot(&host);

	f1 = mh_hfile(m1, c->mode1_set ? c->mode1 : RW);
	f2 = mh_hfile(m2, c->mode2_set ? c->mode2 : RW);
	fill_fsr(c, m2, &fsr);
	orig = fsr;
	host.mh_fail_error = -EIO;
	if (c->fail_flush)
		host.mh_fail_flush = c->fail_flush;
	if (c->fail_alloc) {
		host.mh_fail_alloc = c->fail_alloc;
		host.mh_fail_error = -ENOSPC;
	}

	error = sx_swap_core_range(&f1, &f2, &fsr);
	if (error != c->expect)
		fail_msg("%s: got %d, expected %d", c->name, error, c->expect);

	/* never a lock or a transaction left behind */
	for (i = 0; i < MH_NINODES; i++) {
		assert_int_equal(host.mh_inodes[i].mi_locked, 0);
		assert_int_equal(host.mh_inodes[i].mi_refs, 0);
	}
	assert_int_equal(host.mh_open_trans, 0);
	assert_false(host.mh_shutdown);

	if (error || fsr.length == 0) {
		/* nothing changed: files, log, caller's structure */
		if (!mh_same_all(before, host.mh_inodes))
			fail_msg("%s: a rejected call changed the files", c->name);
		assert_int_equal(host.mh_nrec, 0);
		if (error)
			assert_memory_equal(&fsr, &orig, sizeof(fsr));
		if (fsr.length == 0 && !error)
			assert_int_equal(host.mh_nalloc, 0);
	} else {
		assert_true(host.mh_nrec > 0);
		assert_int_equal(mh_unfinished(&host), 0);
		assert_int_equal(mh_check(&host, MH_CHECK_EOF), 0);
		/* the swap touched both files */
		assert_true(m2->mi_mtime_sec != before[m2->mi_ino - MH_FIRST_INO].mi_mtime_sec);
	}
	if (!error && c->len_out_set)
		assert_int_equal(fsr.length, c->len_out);
	free(before);
	mh_destroy(&host);
	mh_destroy(&host2);
}

static void test_prep_table(void **state)
{
	u32 i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		run_case(&cases[i]);
}

/* Both inodes' lock is taken once, even for one file, and released. */
static void test_prep_same_file_swap(void **state)
{
	struct file_swap_range fsr;
	struct sx_hfile f;
	struct mh_inode *m;
	u64 b0, b8;

	(void)state;
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	m = mh_create(&host, 16 * B);
	mh_add_extent(m, 0, 4, false);
	mh_add_extent(m, 8, 4, false);
	b0 = mh_block_at(m, 0, NULL);
	b8 = mh_block_at(m, 8, NULL);
	f = mh_hfile(m, RW);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file2_offset = 8 * B;
	fsr.length = 4 * B;
	assert_int_equal(sx_swap_core_range(&f, &f, &fsr), 0);
	assert_int_equal(mh_block_at(m, 0, NULL), b8);
	assert_int_equal(mh_block_at(m, 8, NULL), b0);
	assert_int_equal(m->mi_nblocks, 8);
	assert_int_equal(m->mi_locked, 0);
	mh_destroy(&host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prep_table),
		cmocka_unit_test(test_prep_same_file_swap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
