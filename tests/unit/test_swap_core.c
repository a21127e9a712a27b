// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The swap core on the in-memory host: swaps of one extent, of 64 extents
 * with holes and unwritten pieces, of unequal sizes with TO_EOF, of two
 * ranges of one file; the three algorithms agree on a full-file swap; the
 * reflink flags follow what was exchanged; and the log cut after every
 * commit (and again during recovery) always recovers to all-old or all-new,
 * with the sizes the intent logged, also on a host whose map/unmap move the
 * block counts and whose recovery holds the inodes' locks.  Recovery rejects bad SXIs.
 * Several swaps queued in one transaction (sx_swap_core_queue()) recover
 * all together.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <string.h>
#include <swapext/device.h>
#include "memhost.h"

#define B	4096
#define RW	(SX_HF_READ | SX_HF_WRITE)

static struct mh_host host;

static u64 rnd_state = 0x9e3779b97f4a7c15ull;

static u64 rnd(void)
{
	u64 x = rnd_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rnd_state = x;
	return x;
}

/* Map @next extents of 1..8 blocks from @off with holes of 0..3 blocks between. */
static u64 fill_random(struct mh_inode *mi, u64 off, u32 next)
{
	u32 i;

	for (i = 0; i < next; i++) {
		u64 len = 1 + rnd() % 8;

		mh_add_extent(mi, off, len, rnd() % 5 == 0);
		off += len + rnd() % 4;
	}
	return off;
}

static int do_swap(struct mh_inode *a, struct mh_inode *b, s64 off1, s64 off2, s64 len,
		   u64 flags, struct file_swap_range *out)
{
	struct sx_hfile f1 = mh_hfile(a, RW), f2 = mh_hfile(b, RW);
	struct file_swap_range fsr;
	int error;

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_offset = off1;
	fsr.file2_offset = off2;
	fsr.length = len;
	fsr.flags = flags;
	error = sx_swap_core_range(&f1, &f2, &fsr);
	if (out)
		*out = fsr;
	return error;
}

/* Block @o of inode @ino in snapshot @s. */
static u64 blk(const struct mh_inode *s, u64 ino, u64 o, bool *unw)
{
	return mh_block_at(&s[ino - MH_FIRST_INO], o, unw);
}

/* After a swap of [o1, +n) of ino1 with [o2, +n) of ino2: every block moved. */
static void check_swapped(const struct mh_inode *old, const struct mh_inode *now, u64 ino1,
			  u64 ino2, u64 o1, u64 o2, u64 n, u64 span)
{
	u64 o;
	bool u1, u2;

	for (o = 0; o < span; o++) {
		u64 want1 = blk(old, ino1, o, &u1), want2;

		if (o >= o1 && o < o1 + n)
			want1 = blk(old, ino2, o - o1 + o2, &u1);
		assert_int_equal(blk(now, ino1, o, &u2), want1);
		assert_int_equal(u1, u2);
		if (ino1 == ino2)
			continue;
		want2 = blk(old, ino2, o, &u1);
		if (o >= o2 && o < o2 + n)
			want2 = blk(old, ino1, o - o2 + o1, &u1);
		assert_int_equal(blk(now, ino2, o, &u2), want2);
		assert_int_equal(u1, u2);
	}
}

static void check_no_leftovers(void)
{
	u32 i;

	for (i = 0; i < MH_NINODES; i++) {
		assert_int_equal(host.mh_inodes[i].mi_locked, 0);
		assert_int_equal(host.mh_inodes[i].mi_refs, 0);
	}
	assert_int_equal(host.mh_open_trans, 0);
	assert_int_equal(mh_unfinished(&host), 0);
}

static void test_one_extent(void **state)
{
	struct mh_inode *a, *b, *old;

	(void)state;
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 16 * B);
	b = mh_create(&host, 16 * B);
	mh_add_extent(a, 0, 16, false);
	mh_add_extent(b, 0, 16, false);
	old = mh_snapshot(&host);
	assert_int_equal(do_swap(a, b, 0, 0, 16 * B, 0, NULL), 0);
	check_swapped(old, host.mh_inodes, a->mi_ino, b->mi_ino, 0, 0, 16, 32);
	assert_int_equal(a->mi_nblocks, 16);
	assert_int_equal(a->mi_size, 16 * B);
	assert_int_equal(mh_check(&host, MH_CHECK_EOF), 0);
	check_no_leftovers();
	free(old);
	mh_destroy(&host);
}

static void test_64_extents_holes(void **state)
{
	struct mh_inode *a, *b, *old;
	u64 end1, end2, n = 300;

	(void)state;
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 0);
	b = mh_create(&host, 0);
	end1 = fill_random(a, 0, 64);
	end2 = fill_random(b, 2, 64);
	a->mi_size = (s64)end1 * B;
	b->mi_size = (s64)end2 * B;
	n = mh_min(n, mh_min(end1 - 5, end2 - 9));
	old = mh_snapshot(&host);
	assert_int_equal(do_swap(a, b, 5 * B, 9 * B, (s64)n * B, 0, NULL), 0);
	check_swapped(old, host.mh_inodes, a->mi_ino, b->mi_ino, 5, 9, n,
		      mh_max(end1, end2) + 8);
	assert_int_equal(mh_check(&host, MH_CHECK_EOF), 0);
	assert_int_equal(a->mi_size, (s64)end1 * B);
	check_no_leftovers();
	free(old);
	mh_destroy(&host);
}

static void test_unequal_to_eof(void **state)
{
	struct mh_inode *a, *b, *old;
	struct file_swap_range out;

	(void)state;
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 10 * B + 100);
	b = mh_create(&host, 37 * B + 5);
	mh_add_extent(a, 0, 11, false);
	fill_random(b, 0, 6);
	mh_cut_at(b, 38);	/* keep b within its EOF for the check */
	old = mh_snapshot(&host);
	assert_int_equal(do_swap(a, b, 0, 0, 0, FILE_SWAP_RANGE_TO_EOF, &out), 0);
	assert_int_equal(out.length, 37 * B + 5);
	assert_int_equal(a->mi_size, 37 * B + 5);
	assert_int_equal(b->mi_size, 10 * B + 100);
	check_swapped(old, host.mh_inodes, a->mi_ino, b->mi_ino, 0, 0, 38, 40);
	assert_int_equal(mh_check(&host, MH_CHECK_EOF), 0);

	/* unequal offsets: each file ends where the other's tail ends */
	free(old);
	old = mh_snapshot(&host);
	assert_int_equal(do_swap(a, b, 4 * B, 2 * B, 0, FILE_SWAP_RANGE_TO_EOF, &out), 0);
	assert_int_equal(a->mi_size, 4 * B + (10 * B + 100 - 2 * B));
	assert_int_equal(b->mi_size, 2 * B + (37 * B + 5 - 4 * B));
	assert_int_equal(mh_check(&host, MH_CHECK_EOF), 0);
	check_no_leftovers();
	free(old);
	mh_destroy(&host);
}

static void test_one_file_two_ranges(void **state)
{
	struct mh_inode *a, *old;
	u64 o;

	(void)state;
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 64 * B);
	fill_random(a, 0, 12);
	a->mi_size = 64 * B;
	mh_cut_at(a, 64);
	old = mh_snapshot(&host);
	assert_int_equal(do_swap(a, a, 0, 32 * B, 16 * B, 0, NULL), 0);
	for (o = 0; o < 72; o++) {
		u64 src = o < 16 ? o + 32 : (o >= 32 && o < 48) ? o - 32 : o;
		bool u1, u2;

		assert_int_equal(mh_block_at(a, o, &u2), blk(old, a->mi_ino, src, &u1));
		assert_int_equal(u1, u2);
	}
	assert_int_equal(a->mi_nblocks, old[0].mi_nblocks);
	assert_int_equal(mh_check(&host, MH_CHECK_EOF), 0);
	check_no_leftovers();
	free(old);
	mh_destroy(&host);
}

/* Build the same two files in @h. */
static void build_pair_n(struct mh_host *h, u32 features, struct mh_inode **a,
			 struct mh_inode **b, u32 next)
{
	u64 e1, e2;

	rnd_state = 12345;
	mh_init(h, B, features);
	*a = mh_create(h, 0);
	*b = mh_create(h, 0);
	e1 = fill_random(*a, 0, next);
	e2 = fill_random(*b, 1, next);
	/* full files of one size, nothing mapped past EOF */
	(*a)->mi_size = (*b)->mi_size = (s64)mh_max(e1, e2) * B;
	(*a)->mi_flags |= SX_HSTAT_REFLINK;
}

static void build_pair(struct mh_host *h, u32 features, struct mh_inode **a, struct mh_inode **b)
{
	build_pair_n(h, features, a, b, 8);
}

static void test_three_algorithms(void **state)
{
	static struct mh_host h2, h3;
	struct mh_inode *a1, *b1, *a2, *b2, *a3, *b3;
	struct sx_hfile f1, f2;
	struct file_swap_range fsr;

	(void)state;
	build_pair(&host, SX_HOST_ATOMIC_SWAP, &a1, &b1);
	build_pair(&h2, SX_HOST_DEFER_BMAP, &a2, &b2);
	build_pair(&h3, 0, &a3, &b3);

	assert_int_equal(do_swap(a1, b1, 0, 0, a1->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL), 0);
	f1 = mh_hfile(a2, RW);
	f2 = mh_hfile(b2, RW);
	memset(&fsr, 0, sizeof(fsr));
	fsr.length = a2->mi_size;
	fsr.flags = FILE_SWAP_RANGE_NONATOMIC | FILE_SWAP_RANGE_FULL_FILES;
	assert_int_equal(sx_swap_core_range(&f1, &f2, &fsr), 0);
	f1 = mh_hfile(a3, RW);
	f2 = mh_hfile(b3, RW);
	assert_int_equal(sx_swap_core_range(&f1, &f2, &fsr), 0);

	/* the same blocks, sizes, block counts and reflink flags everywhere */
	assert_true(mh_same(host.mh_inodes, h2.mh_inodes, a1->mi_ino, true));
	assert_true(mh_same(host.mh_inodes, h2.mh_inodes, b1->mi_ino, true));
	assert_true(mh_same(host.mh_inodes, h3.mh_inodes, a1->mi_ino, true));
	assert_true(mh_same(host.mh_inodes, h3.mh_inodes, b1->mi_ino, true));
	/* a had the flag, b not, whole files: the flag went with a's blocks */
	assert_false(a1->mi_flags & SX_HSTAT_REFLINK);
	assert_true(b1->mi_flags & SX_HSTAT_REFLINK);
	assert_int_equal(a1->mi_flags, a2->mi_flags);
	assert_int_equal(a1->mi_flags, a3->mi_flags);
	assert_int_equal(b1->mi_flags, b2->mi_flags);
	assert_int_equal(b1->mi_flags, b3->mi_flags);
	assert_int_equal(mh_check(&host, 0), 0);
	assert_int_equal(mh_check(&h2, 0), 0);
	assert_int_equal(mh_check(&h3, 0), 0);
	mh_destroy(&host);
	mh_destroy(&h2);
	mh_destroy(&h3);
}

/*
 * SX_HOST_DIRECT_MAP: the same swap, with the forks changed in each step's
 * transaction, ends exactly as the queued chain does, in fewer
 * transactions, each holding up to mh_step_pairs exchanges; with no room
 * for any (mh_step_pairs 0) every step falls back to queued work.  The
 * non-atomic step algorithm batches the same way.
 */
static void test_direct_batches(void **state)
{
	static struct mh_host h2, h3, h4;
	struct mh_inode *a1, *b1, *a2, *b2, *a3, *b3, *a4, *b4;
	struct sx_hfile f1, f2;
	struct file_swap_range fsr;
	u32 i, maps, most = 0;

	(void)state;
	build_pair(&host, SX_HOST_ATOMIC_SWAP, &a1, &b1);
	build_pair(&h2, SX_HOST_ATOMIC_SWAP | SX_HOST_DIRECT_MAP, &a2, &b2);
	build_pair(&h3, SX_HOST_ATOMIC_SWAP | SX_HOST_DIRECT_MAP, &a3, &b3);
	build_pair(&h4, SX_HOST_DEFER_BMAP | SX_HOST_DIRECT_MAP, &a4, &b4);
	h2.mh_step_pairs = 4;
	h3.mh_step_pairs = 0;
	h4.mh_step_pairs = 4;
	mh_checkpoint(&host);
	mh_checkpoint(&h2);
	mh_checkpoint(&h3);

	assert_int_equal(do_swap(a1, b1, 0, 0, a1->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL), 0);
	assert_int_equal(do_swap(a2, b2, 0, 0, a2->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL), 0);
	assert_int_equal(do_swap(a3, b3, 0, 0, a3->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL), 0);
	f1 = mh_hfile(a4, RW);
	f2 = mh_hfile(b4, RW);
	memset(&fsr, 0, sizeof(fsr));
	fsr.length = a4->mi_size;
	fsr.flags = FILE_SWAP_RANGE_NONATOMIC | FILE_SWAP_RANGE_FULL_FILES;
	assert_int_equal(sx_swap_core_range(&f1, &f2, &fsr), 0);

	assert_true(mh_same_all(host.mh_inodes, h2.mh_inodes));
	assert_true(mh_same_all(host.mh_inodes, h3.mh_inodes));
	assert_true(mh_same_all(host.mh_inodes, h4.mh_inodes));
	assert_int_equal(host.mh_ndirect, 0);
	assert_int_equal(h3.mh_ndirect, 0);
	assert_true(h2.mh_ndirect > 0);
	assert_true(h4.mh_ndirect > 0);
	/* the walks read ahead: fewer lookups than pieces read */
	assert_true(h2.mh_nreads > 0);
	/* queued: an SXI step then its four BUIs, one transaction each */
	assert_true(h2.mh_nrec * 3 < host.mh_nrec);
	assert_int_equal(h3.mh_nrec, host.mh_nrec);
	/* no record holds more than four exchanges: two maps each */
	for (i = 0; i < h2.mh_nrec; i++) {
		maps = mh_rec_maps(&h2, i);
		most = mh_max(most, maps);
	}
	assert_true(most > 2 && most <= 8);
	assert_int_equal(mh_check(&host, 0), 0);
	assert_int_equal(mh_check(&h2, 0), 0);
	assert_int_equal(mh_check(&h3, 0), 0);
	assert_int_equal(mh_check(&h4, 0), 0);
	mh_destroy(&host);
	mh_destroy(&h2);
	mh_destroy(&h3);
	mh_destroy(&h4);
}

/*
 * The core's walks read ahead (ho_read_mappings): the same swap ends the
 * same with five mappings per lookup, one, or no ho_read_mappings at all,
 * and five take fewer lookups than one.
 */
static void test_readahead(void **state)
{
	static struct mh_host h2, h3;
	struct mh_inode *a1, *b1, *a2, *b2, *a3, *b3;

	(void)state;
	build_pair(&host, SX_HOST_ATOMIC_SWAP | SX_HOST_DIRECT_MAP, &a1, &b1);
	build_pair(&h2, SX_HOST_ATOMIC_SWAP | SX_HOST_DIRECT_MAP, &a2, &b2);
	build_pair(&h3, SX_HOST_ATOMIC_SWAP | SX_HOST_DIRECT_MAP, &a3, &b3);
	h2.mh_read_ahead = 1;
	h3.mh_ops.ho_read_mappings = NULL;
	assert_int_equal(do_swap(a1, b1, 0, 0, a1->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL), 0);
	assert_int_equal(do_swap(a2, b2, 0, 0, a2->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL), 0);
	assert_int_equal(do_swap(a3, b3, 0, 0, a3->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL), 0);
	assert_true(mh_same_all(host.mh_inodes, h2.mh_inodes));
	assert_true(mh_same_all(host.mh_inodes, h3.mh_inodes));
	assert_int_equal(h3.mh_nreads, 0);
	assert_true(host.mh_nreads > 0);
	assert_true(host.mh_nreads * 2 < h2.mh_nreads);
	assert_int_equal(mh_check(&host, 0), 0);
	mh_destroy(&host);
	mh_destroy(&h2);
	mh_destroy(&h3);
}

/*
 * A host that gives as many mappings as it is asked for gets up to 64 per
 * lookup; with no memory for those buffers the walks read a few at a time
 * (four), and the swap ends the same.
 */
static void test_readahead_nomem(void **state)
{
	static struct mh_host h2, h3;
	struct mh_inode *a1, *b1, *a2, *b2, *a3, *b3;
	struct sx_alloc_stats s0, s1;
	int error;

	(void)state;
	build_pair_n(&host, SX_HOST_ATOMIC_SWAP | SX_HOST_DIRECT_MAP, &a1, &b1, 120);
	build_pair_n(&h2, SX_HOST_ATOMIC_SWAP | SX_HOST_DIRECT_MAP, &a2, &b2, 120);
	build_pair_n(&h3, SX_HOST_ATOMIC_SWAP | SX_HOST_DIRECT_MAP, &a3, &b3, 120);
	/* steps of many exchanges: a step's walk starts with a lookup of each file */
	host.mh_step_pairs = h2.mh_step_pairs = h3.mh_step_pairs = 1000;
	h2.mh_read_ahead = 1000;
	h3.mh_read_ahead = 1000;
	assert_int_equal(do_swap(a1, b1, 0, 0, a1->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL), 0);
	assert_int_equal(do_swap(a2, b2, 0, 0, a2->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL), 0);
	/* the memory host allocates with malloc: only the core's buffers fail */
	sx_alloc_get_stats(&s0);
	sx_alloc_fail(1, true);
	error = do_swap(a3, b3, 0, 0, a3->mi_size, FILE_SWAP_RANGE_FULL_FILES, NULL);
	sx_alloc_fail(0, false);
	sx_alloc_get_stats(&s1);
	assert_int_equal(error, 0);
	assert_true(s1.as_failed > s0.as_failed);
	assert_true(mh_same_all(host.mh_inodes, h2.mh_inodes));
	assert_true(mh_same_all(host.mh_inodes, h3.mh_inodes));
	printf("lookups: %u with 5 mappings each, %u with 64, %u without memory (4 each)\n",
	       (unsigned)host.mh_nreads, (unsigned)h2.mh_nreads, (unsigned)h3.mh_nreads);
	assert_true(h2.mh_nreads * 4 < host.mh_nreads);
	assert_true(h2.mh_nreads * 4 < h3.mh_nreads);
	assert_true(host.mh_nreads < h3.mh_nreads);
	assert_int_equal(mh_check(&h3, 0), 0);
	check_no_leftovers();
	mh_destroy(&host);
	mh_destroy(&h2);
	mh_destroy(&h3);
}

/*
 * A partial swap, or a block left shared in place, keeps both reflink
 * flags; a whole-file swap moves the flag with the blocks.
 */
static void test_reflink_flags(void **state)
{
	struct mh_inode *a, *b;
	u64 shared;

	(void)state;
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 16 * B);
	b = mh_create(&host, 16 * B);
	mh_add_extent(a, 0, 16, false);
	mh_add_extent(b, 0, 16, false);
	a->mi_flags |= SX_HSTAT_REFLINK;
	assert_int_equal(do_swap(a, b, 0, 0, 8 * B, 0, NULL), 0);
	assert_true(a->mi_flags & SX_HSTAT_REFLINK);
	assert_true(b->mi_flags & SX_HSTAT_REFLINK);
	mh_destroy(&host);

	/* both flagged, sharing block 3 in place: skipped, flags stay */
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 8 * B);
	b = mh_create(&host, 8 * B);
	shared = mh_alloc(&host, 1);
	mh_add_extent(a, 0, 3, false);
	mh_add_mapping(a, 3, shared, 1, false);
	mh_add_extent(a, 4, 4, false);
	mh_add_extent(b, 0, 3, false);
	mh_add_mapping(b, 3, shared, 1, false);
	mh_add_extent(b, 4, 4, false);
	a->mi_flags |= SX_HSTAT_REFLINK;
	b->mi_flags |= SX_HSTAT_REFLINK;
	assert_int_equal(do_swap(a, b, 0, 0, 8 * B, 0, NULL), 0);
	assert_int_equal(mh_block_at(a, 3, NULL), shared);
	assert_int_equal(mh_block_at(b, 3, NULL), shared);
	assert_true(a->mi_flags & SX_HSTAT_REFLINK);
	assert_true(b->mi_flags & SX_HSTAT_REFLINK);
	assert_int_equal(mh_check(&host, MH_CHECK_SHARED), 0);

	/* a flagged, whole files, but a maps a block past EOF: it keeps its flag */
	mh_destroy(&host);
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 8 * B);
	b = mh_create(&host, 8 * B);
	mh_add_extent(a, 0, 10, false);
	mh_add_extent(b, 0, 8, false);
	a->mi_flags |= SX_HSTAT_REFLINK;
	assert_int_equal(do_swap(a, b, 0, 0, 8 * B, 0, NULL), 0);
	assert_true(a->mi_flags & SX_HSTAT_REFLINK);
	assert_true(b->mi_flags & SX_HSTAT_REFLINK);
	mh_destroy(&host);

	/* file2 flagged, whole files exchanged: the flag goes with its blocks to file1 */
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 8 * B);
	b = mh_create(&host, 8 * B);
	mh_add_extent(a, 0, 8, false);
	mh_add_extent(b, 0, 8, false);
	b->mi_flags |= SX_HSTAT_REFLINK;
	assert_int_equal(do_swap(a, b, 0, 0, 8 * B, 0, NULL), 0);
	assert_true(a->mi_flags & SX_HSTAT_REFLINK);
	assert_false(b->mi_flags & SX_HSTAT_REFLINK);
	assert_int_equal(mh_check(&host, 0), 0);
	mh_destroy(&host);
}

/* ------------------------------------------------------------ crash tests */

enum setup {
	SETUP_64,		/* 64 extents each, holes, partial ranges */
	SETUP_TO_EOF,		/* unequal sizes, TO_EOF, reflink whole-file */
	SETUP_ONE_FILE,		/* two ranges of one file */
};

/* Host features the crash tests add (a host shaped like XFS, say). */
static u32 crash_features;
/* With SX_HOST_DIRECT_MAP: exchanges per step (0: memhost's default). */
static u32 crash_step_pairs;
/* A host without ho_read_mappings (XFS's binding): a lookup per piece. */
static bool crash_no_readahead;

static void setup_crash(enum setup s, struct mh_inode **a, struct mh_inode **b,
			struct file_swap_range *fsr)
{
	u64 e1, e2;

	rnd_state = 777 + s;
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP | crash_features);
	if (crash_step_pairs)
		host.mh_step_pairs = crash_step_pairs;
	if (crash_no_readahead)
		host.mh_ops.ho_read_mappings = NULL;
	memset(fsr, 0, sizeof(*fsr));
	*a = mh_create(&host, 0);
	switch (s) {
	case SETUP_64:
		*b = mh_create(&host, 0);
		e1 = fill_random(*a, 0, 64);
		e2 = fill_random(*b, 3, 64);
		(*a)->mi_size = (s64)e1 * B;
		(*b)->mi_size = (s64)e2 * B;
		fsr->file1_offset = 2 * B;
		fsr->file2_offset = 3 * B;
		fsr->length = (s64)(mh_min(e1 - 2, e2 - 3) - 10) * B;
		break;
	case SETUP_TO_EOF:
		*b = mh_create(&host, 0);
		e1 = fill_random(*a, 0, 6);
		e2 = fill_random(*b, 0, 30);
		(*a)->mi_size = (s64)e1 * B - 1000;
		(*b)->mi_size = (s64)e2 * B - 7;
		(*b)->mi_flags |= SX_HSTAT_REFLINK;
		fsr->flags = FILE_SWAP_RANGE_TO_EOF;
		break;
	case SETUP_ONE_FILE:
		*b = *a;
		e1 = fill_random(*a, 0, 40);
		(*a)->mi_size = (s64)e1 * B;
		fsr->file1_offset = 0;
		fsr->file2_offset = (s64)(e1 / 2) * B;
		fsr->length = (s64)(e1 / 2 - 1) * B;
		break;
	}
}

/*
 * Recover the state after a cut at @cut and check it is @before or @after
 * (all of it): @after exactly when the first transaction was durable.
 */
static void check_recovered(struct mh_inode *before, struct mh_inode *after, u32 cut,
			    u32 first, const char *what)
{
	int error = mh_recover(&host);

	if (error)
		fail_msg("%s: recovery after cut %u failed: %d", what, cut, error);
	check_no_leftovers();
	if (mh_check(&host, MH_CHECK_EOF))
		fail_msg("%s: inconsistent after cut %u", what, cut);
	if (cut < first) {
		if (!mh_same_all(before, host.mh_inodes))
			fail_msg("%s: cut %u before the intent is not all-old", what, cut);
	} else if (!mh_same_all(after, host.mh_inodes)) {
		fail_msg("%s: cut %u is not all-new", what, cut);
	}
}

static void crash_one(enum setup s, enum mh_order order, bool during_recovery)
{
	struct mh_inode *a, *b, *before, *after;
	struct file_swap_range fsr;
	struct sx_hfile f1, f2;
	struct mh_tape *tape;
	u32 n, cut, first = 0, r;
	const char *what = s == SETUP_64 ? "64 extents" : s == SETUP_TO_EOF ? "TO_EOF" :
			   "one file";

	setup_crash(s, &a, &b, &fsr);
	host.mh_order = order;
	mh_checkpoint(&host);
	before = mh_snapshot(&host);
	f1 = mh_hfile(a, RW);
	f2 = mh_hfile(b, RW);
	assert_int_equal(sx_swap_core_range(&f1, &f2, &fsr), 0);
	after = mh_snapshot(&host);
	n = host.mh_nrec;
	assert_true(n > 10);
	/* a direct step is one transaction: several exchanges in a record */
	if (crash_features & SX_HOST_DIRECT_MAP)
		assert_true(host.mh_ndirect > 0);
	tape = mh_tape_save(&host);
	/* the first record holds the SXI (and the touches) */
	mh_crash(&host, 1);
	assert_int_equal(mh_unfinished(&host), 1);
	first = 1;
	if (s == SETUP_TO_EOF) {
		/* sizes exchanged per the intent, even when recovery finishes it */
		assert_int_equal(after[b->mi_ino - MH_FIRST_INO].mi_size,
				 before[a->mi_ino - MH_FIRST_INO].mi_size);
	}

	for (cut = 0; cut <= n; cut++) {
		struct mh_tape *rtape;
		u32 m;

		mh_tape_load(&host, tape);
		mh_crash(&host, cut);
		/* before recovery: no mapping past EOF, whatever is pending */
		if (mh_check(&host, MH_CHECK_EOF | MH_CHECK_NO_NBLOCKS))
			fail_msg("%s: a mapping past EOF at cut %u", what, cut);
		check_recovered(before, after, cut, first, what);
		/* recovering again changes nothing */
		assert_int_equal(mh_recover(&host), 0);
		assert_true(cut < first ? mh_same_all(before, host.mh_inodes) :
			    mh_same_all(after, host.mh_inodes));
		if (!during_recovery)
			continue;
		/* a crash at every commit of that recovery */
		mh_tape_load(&host, tape);
		mh_crash(&host, cut);
		assert_int_equal(mh_recover(&host), 0);
		m = host.mh_nrec;
		rtape = mh_tape_save(&host);
		for (r = cut + 1; r < m; r++) {
			mh_tape_load(&host, rtape);
			mh_crash(&host, r);
			check_recovered(before, after, cut, first, what);
		}
		mh_tape_free(rtape);
	}
	mh_tape_free(tape);
	free(before);
	free(after);
	mh_destroy(&host);
}

static void test_crash_64(void **state)
{
	(void)state;
	crash_one(SETUP_64, MH_ORDER_STORE, false);
	crash_one(SETUP_64, MH_ORDER_SPAWN_FIRST, false);
}

static void test_crash_to_eof(void **state)
{
	(void)state;
	crash_one(SETUP_TO_EOF, MH_ORDER_STORE, true);
	crash_one(SETUP_TO_EOF, MH_ORDER_SPAWN_FIRST, true);
}

static void test_crash_one_file(void **state)
{
	(void)state;
	crash_one(SETUP_ONE_FILE, MH_ORDER_STORE, true);
	crash_one(SETUP_ONE_FILE, MH_ORDER_SPAWN_FIRST, false);
}

/*
 * A host shaped like XFS: its map/unmap move the block counts (the core's
 * ho_mod_nblocks then moves quota only) and its recovery holds both inodes
 * for the whole chain (memhost dies if the core locked them again).  Every
 * cut still recovers all-old or all-new with counts and quota exact.
 */
static void test_crash_xfs_shaped_host(void **state)
{
	(void)state;
	/* XFS's binding reads one mapping per lookup */
	crash_no_readahead = true;
	crash_features = SX_HOST_MAP_NBLOCKS | SX_HOST_RECOVERY_LOCKS;
	crash_one(SETUP_64, MH_ORDER_STORE, false);
	crash_one(SETUP_TO_EOF, MH_ORDER_SPAWN_FIRST, true);
	crash_one(SETUP_ONE_FILE, MH_ORDER_STORE, true);
	crash_features = SX_HOST_MAP_NBLOCKS;
	crash_one(SETUP_64, MH_ORDER_SPAWN_FIRST, false);
	crash_features = 0;
	crash_no_readahead = false;
}

/*
 * Direct steps (SX_HOST_DIRECT_MAP): a step's exchanges, its SXD and the
 * SXI of the rest are one record, so a cut at every record, and at every
 * record of the recovery after it, leaves the swap all-old or all-new;
 * recovery resumes from the last SXI, batching again.  Also on the
 * XFS-shaped host, and with two exchanges per step (the last step of a
 * range then often has room left).
 */
static void test_crash_direct(void **state)
{
	(void)state;
	crash_features = SX_HOST_DIRECT_MAP;
	crash_one(SETUP_64, MH_ORDER_STORE, true);
	crash_one(SETUP_TO_EOF, MH_ORDER_SPAWN_FIRST, true);
	crash_one(SETUP_ONE_FILE, MH_ORDER_STORE, true);
	crash_features = SX_HOST_DIRECT_MAP | SX_HOST_MAP_NBLOCKS | SX_HOST_RECOVERY_LOCKS;
	crash_one(SETUP_64, MH_ORDER_SPAWN_FIRST, true);
	crash_one(SETUP_ONE_FILE, MH_ORDER_STORE, true);
	crash_features = SX_HOST_DIRECT_MAP;
	crash_step_pairs = 2;
	crash_one(SETUP_64, MH_ORDER_STORE, true);
	crash_one(SETUP_TO_EOF, MH_ORDER_STORE, true);
	crash_no_readahead = true;
	crash_one(SETUP_ONE_FILE, MH_ORDER_SPAWN_FIRST, true);
	crash_no_readahead = false;
	crash_step_pairs = 0;
	crash_features = 0;
}

/* A host transaction for sx_swap_core_queue(): an atomic reservation. */
static struct sx_htrans *queue_trans(struct mh_inode *a, struct mh_inode *b)
{
	struct sx_htrans *tp = NULL;
	struct sx_hres res;

	memset(&res, 0, sizeof(res));
	res.hr_algo = SX_SWAP_ATOMIC;
	res.hr_ip1 = &a->mi_hi;
	res.hr_ip2 = &b->mi_hi;
	assert_int_equal(host.mh_host.h_ops->ho_trans_alloc(&host.mh_host, &res, &tp), 0);
	return tp;
}

static struct sx_hswap hswap(struct mh_inode *a, struct mh_inode *b, u64 off, u64 n, s64 isz1,
			     s64 isz2)
{
	struct sx_hswap sw;

	memset(&sw, 0, sizeof(sw));
	sw.hw_ip1 = &a->mi_hi;
	sw.hw_ip2 = &b->mi_hi;
	sw.hw_startoff1 = off;
	sw.hw_startoff2 = off;
	sw.hw_blockcount = n;
	sw.hw_isize1 = isz1;
	sw.hw_isize2 = isz2;
	return sw;
}

/*
 * sx_swap_core_queue(): three ranges of two pairs of files, one growing
 * its file, queued in one transaction and committed together; every
 * refusal leaves the transaction clean; the log cut after every commit
 * (and during recovery) recovers all three ranges old or all new.
 */
static void test_queue(void **state)
{
	const struct sx_host_ops *ops;
	struct mh_inode *a, *t1, *b, *t2, *before, *after;
	struct sx_hswap sw[3], bad[2];
	struct sx_htrans *tp;
	struct mh_tape *tape;
	u32 n, cut, r;
	u64 e;

	(void)state;
	rnd_state = 4242;
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	ops = host.mh_host.h_ops;
	a = mh_create(&host, 0);
	t1 = mh_create(&host, 0);
	b = mh_create(&host, 0);
	t2 = mh_create(&host, 0);
	e = fill_random(a, 0, 30);
	a->mi_size = (s64)e * B - 100;
	fill_random(t1, 0, 30);
	t1->mi_size = a->mi_size;
	e = fill_random(b, 0, 10);
	b->mi_size = (s64)e * B;
	mh_add_extent(t2, 4, e + 6, false);		/* b grows to e + 10 blocks */
	t2->mi_size = (s64)(e + 10) * B - 5;
	sw[0] = hswap(t1, a, 2, 7, -1, -1);
	sw[1] = hswap(t1, a, 12, e / 2, -1, -1);
	sw[2] = hswap(t2, b, 4, e + 6, t2->mi_size, t2->mi_size);
	mh_checkpoint(&host);
	before = mh_snapshot(&host);
	assert_int_equal(ops->ho_lock_two(&t1->mi_hi, &a->mi_hi), 0);
	assert_int_equal(ops->ho_lock_two(&t2->mi_hi, &b->mi_hi), 0);
	tp = queue_trans(t1, a);

	/* refusals: nothing queued, nothing changed */
	bad[0] = sw[0];
	bad[1] = hswap(t1, a, 8, 2, -1, -1);		/* overlaps sw[0] */
	assert_int_equal(sx_swap_core_queue(tp, bad, 2), -EINVAL);
	bad[1] = hswap(a, a, 20, 2, -1, -1);
	assert_int_equal(sx_swap_core_queue(tp, bad, 2), -EINVAL);
	bad[1] = hswap(t1, a, 20, 0, -1, -1);
	assert_int_equal(sx_swap_core_queue(tp, bad, 2), -EINVAL);
	bad[1] = hswap(t1, a, 20, 2, -1, 5);
	assert_int_equal(sx_swap_core_queue(tp, bad, 2), -EINVAL);
	bad[1] = hswap(t1, a, (u64)a->mi_size / B + 40, 2, -1, -1);	/* past EOF */
	assert_int_equal(sx_swap_core_queue(tp, bad, 2), -EINVAL);
	bad[1] = hswap(t1, a, ~0ull / B, 2, -1, -1);
	assert_int_equal(sx_swap_core_queue(tp, bad, 2), -EFBIG);
	a->mi_flags |= SX_HSTAT_APPEND;
	assert_int_equal(sx_swap_core_queue(tp, sw, 1), -EPERM);
	a->mi_flags &= ~SX_HSTAT_APPEND;
	t2->mi_flags |= SX_HSTAT_SWAPFILE;
	assert_int_equal(sx_swap_core_queue(tp, sw, 3), -ETXTBSY);
	t2->mi_flags &= ~SX_HSTAT_SWAPFILE;
	host.mh_host.h_features &= ~SX_HOST_ATOMIC_SWAP;
	assert_int_equal(sx_swap_core_queue(tp, sw, 3), -EOPNOTSUPP);
	host.mh_host.h_features |= SX_HOST_ATOMIC_SWAP;
	assert_int_equal(sx_swap_core_queue(NULL, sw, 3), -EINVAL);
	assert_int_equal(sx_swap_core_queue(tp, NULL, 3), -EINVAL);
	assert_int_equal(sx_swap_core_queue(tp, sw, 0), 0);
	assert_true(mh_same_all(before, host.mh_inodes));

	assert_int_equal(sx_swap_core_queue(tp, sw, 3), 0);
	assert_int_equal(ops->ho_trans_commit(tp), 0);
	ops->ho_unlock_two(&t2->mi_hi, &b->mi_hi);
	ops->ho_unlock_two(&t1->mi_hi, &a->mi_hi);
	check_no_leftovers();
	after = mh_snapshot(&host);
	check_swapped(before, after, t1->mi_ino, a->mi_ino, 2, 2, 7, 12);
	check_swapped(before, after, t2->mi_ino, b->mi_ino, 4, 4, e + 6, e + 10);
	assert_int_equal(after[b->mi_ino - MH_FIRST_INO].mi_size, t2->mi_size);
	assert_int_equal(after[a->mi_ino - MH_FIRST_INO].mi_size,
			 before[a->mi_ino - MH_FIRST_INO].mi_size);
	if (mh_check(&host, MH_CHECK_EOF))
		fail();

	/* the first record promises all three */
	n = host.mh_nrec;
	tape = mh_tape_save(&host);
	mh_crash(&host, 1);
	assert_int_equal(mh_unfinished(&host), 3);
	for (cut = 0; cut <= n; cut++) {
		struct mh_tape *rtape;
		u32 m;

		mh_tape_load(&host, tape);
		mh_crash(&host, cut);
		check_recovered(before, after, cut, 1, "queue");
		mh_tape_load(&host, tape);
		mh_crash(&host, cut);
		assert_int_equal(mh_recover(&host), 0);
		m = host.mh_nrec;
		rtape = mh_tape_save(&host);
		for (r = cut + 1; r < m; r++) {
			mh_tape_load(&host, rtape);
			mh_crash(&host, r);
			check_recovered(before, after, cut, 1, "queue, recovery cut");
		}
		mh_tape_free(rtape);
	}
	mh_tape_free(tape);
	free(before);
	free(after);
	mh_destroy(&host);
}

/* A step failing mid-chain shuts the host down; recovery completes the swap. */
static void test_fail_mid_chain(void **state)
{
	struct mh_inode *a, *b, *before, *after;
	struct file_swap_range fsr, fsr2;
	struct sx_hfile f1, f2;
	u64 clock;
	u32 k;

	(void)state;
	setup_crash(SETUP_64, &a, &b, &fsr);
	mh_checkpoint(&host);
	f1 = mh_hfile(a, RW);
	f2 = mh_hfile(b, RW);
	fsr2 = fsr;
	clock = host.mh_clock_ns;
	assert_int_equal(sx_swap_core_range(&f1, &f2, &fsr2), 0);
	after = mh_snapshot(&host);
	mh_crash(&host, 0);
	before = mh_snapshot(&host);
	for (k = 1; k < 40; k += 7) {
		mh_crash(&host, 0);
		host.mh_clock_ns = clock;
		host.mh_fail_apply = k;
		host.mh_fail_error = -EIO;
		fsr2 = fsr;
		assert_int_equal(sx_swap_core_range(&f1, &f2, &fsr2), -EIO);
		assert_true(host.mh_shutdown);
		assert_int_equal(host.mh_open_trans, 0);
		mh_crash(&host, host.mh_nrec);
		assert_int_equal(mh_recover(&host), 0);
		check_no_leftovers();
		assert_true(mh_same_all(after, host.mh_inodes));
	}
	free(before);
	free(after);
	mh_destroy(&host);
}

/* Recovery refuses an SXI that is malformed or names a reused inode. */
/* The last warning the core logged: its corruption reports name the host. */
static char last_warn[256];

static void keep_warn(void *arg, enum sx_log_level level, const char *msg)
{
	if (level <= SX_LOG_WARN)
		snprintf(last_warn, sizeof(last_warn), "%s", msg);
}

/* ho_iget that fails its iget_nomem_at-th call with -ENOMEM */
static int (*mh_iget_saved)(struct sx_host *h, u64 ino, u64 gen, struct sx_hinode **ipp);
static u32 iget_nomem_at, iget_calls;

static int iget_nomem(struct sx_host *h, u64 ino, u64 gen, struct sx_hinode **ipp)
{
	if (++iget_calls == iget_nomem_at)
		return -ENOMEM;
	return mh_iget_saved(h, ino, gen, ipp);
}

static void test_recover_bad_sxi(void **state)
{
	struct mh_inode *a, *b;
	struct file_swap_range fsr;
	struct sx_hfile f1, f2;
	struct sx_dlog_sxi *sxi, good;
	u32 cut = 0, i;

	(void)state;
	setup_crash(SETUP_TO_EOF, &a, &b, &fsr);
	mh_iget_saved = host.mh_ops.ho_iget;
	mh_checkpoint(&host);
	f1 = mh_hfile(a, RW);
	f2 = mh_hfile(b, RW);
	assert_int_equal(sx_swap_core_range(&f1, &f2, &fsr), 0);
	/* a cut in the middle of the chain */
	cut = host.mh_nrec / 2;
	mh_crash(&host, cut + 4);
	sxi = mh_unfinished_sxi(&host);
	assert_non_null(sxi);
	good = *sxi;
	for (i = 0; i < 13; i++) {
		struct sx_dlog_swapext *e = &sxi->sxi_ext;
		u32 mode = a->mi_mode;

		*sxi = good;
		switch (i) {
		case 0: e->sw_blockcount = 0; break;
		case 1: sxi->sxi_hdr.li_pad = cpu_to_le32(1); break;
		case 2: e->sw_flags = cpu_to_le64(SX_SWAPEXT_ATTR_FORK | SX_SWAPEXT_SET_SIZES); break;
		case 3: e->sw_isize1 = cpu_to_le64((u64)-5); break;
		case 4: e->sw_gen2 = cpu_to_le64(le64_to_cpu(e->sw_gen2) + 1); break;
		case 5: e->sw_ino1 = cpu_to_le64(1); break;
		case 6: e->sw_startoff1 = cpu_to_le64(~0ull - 2); break;
		case 7: sxi->sxi_hdr.li_nitems = cpu_to_le32(2); break;
		case 8: e->sw_flags = cpu_to_le64(0); break;	/* sizes without SET_SIZES */
		/* two ranges of one file: one generation, and they may not overlap */
		case 9:
			e->sw_ino2 = e->sw_ino1;
			e->sw_gen2 = cpu_to_le64(le64_to_cpu(e->sw_gen1) + 1);
			break;
		case 10:
			e->sw_ino2 = e->sw_ino1;
			e->sw_gen2 = e->sw_gen1;
			e->sw_startoff2 = e->sw_startoff1;
			break;
		/* the inode found is no longer a regular file */
		case 11: a->mi_mode = SX_HS_IFDIR | 0755; break;
		/* below 2^63 in blocks of one byte, past it in the file's blocks */
		case 12: e->sw_startoff1 = cpu_to_le64((~0ull >> 1) / B + 1); break;
		}
		last_warn[0] = 0;
		sx_set_log_callback(keep_warn, NULL);
		if (mh_recover(&host) != -EFSCORRUPTED)
			fail_msg("bad SXI %u was accepted", i);
		sx_set_log_callback(NULL, NULL);
		a->mi_mode = mode;
		/* the report says which host handed the core the bad item */
		assert_non_null(strstr(last_warn, "swapext(memhost): corruption: "));
		if (i >= 9) {
			/* and which check failed */
			static const char *const why[] = {
				"si->si_gen1 != si->si_gen2",
				"si->si_startoff1 < si->si_startoff2 + si->si_blockcount",
				"(st1.hs_mode & SX_HS_IFMT) != SX_HS_IFREG",
				"!sx_swapext_range_ok(si->si_startoff1, si->si_blockcount, st1.hs_blksize)",
			};

			if (!strstr(last_warn, why[i - 9]))
				fail_msg("bad SXI %u: \"%s\" is not the report of %s", i, last_warn,
					 why[i - 9]);
		}
		{
			u32 j;

			for (j = 0; j < MH_NINODES; j++)
				assert_int_equal(host.mh_inodes[j].mi_refs, 0);
		}
		mh_crash(&host, cut + 4);
		sxi = mh_unfinished_sxi(&host);
	}
	/*
	 * A memory shortage looking up either inode is not corruption: the
	 * error is passed on, the inode found first is let go, and the next
	 * try recovers.
	 */
	*sxi = good;
	for (i = 1; i <= 2; i++) {
		u32 j;

		iget_nomem_at = i;
		iget_calls = 0;
		host.mh_ops.ho_iget = iget_nomem;
		assert_int_equal(mh_recover(&host), -ENOMEM);
		host.mh_ops.ho_iget = mh_iget_saved;
		assert_int_equal(iget_calls, i);
		for (j = 0; j < MH_NINODES; j++)
			assert_int_equal(host.mh_inodes[j].mi_refs, 0);
		mh_crash(&host, cut + 4);
		sxi = mh_unfinished_sxi(&host);
		*sxi = good;
	}
	assert_int_equal(mh_recover(&host), 0);
	check_no_leftovers();
	mh_destroy(&host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_extent),
		cmocka_unit_test(test_64_extents_holes),
		cmocka_unit_test(test_unequal_to_eof),
		cmocka_unit_test(test_one_file_two_ranges),
		cmocka_unit_test(test_three_algorithms),
		cmocka_unit_test(test_reflink_flags),
		cmocka_unit_test(test_crash_64),
		cmocka_unit_test(test_crash_to_eof),
		cmocka_unit_test(test_crash_one_file),
		cmocka_unit_test(test_crash_xfs_shaped_host),
		cmocka_unit_test(test_queue),
		cmocka_unit_test(test_crash_direct),
		cmocka_unit_test(test_direct_batches),
		cmocka_unit_test(test_readahead),
		cmocka_unit_test(test_readahead_nomem),
		cmocka_unit_test(test_fail_mid_chain),
		cmocka_unit_test(test_recover_bad_sxi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
