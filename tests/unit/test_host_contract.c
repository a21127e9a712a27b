// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The parts of the host contract (include/swapext/host.h) that a real
 * filesystem host needs and the store does not use, on the in-memory host:
 * a lock that fails (XFS's -EINTR) at the front end and at a recovered
 * step; the per-file block totals of the reservation and the quota they
 * let a host reserve (-EDQUOT with nothing changed); and the estimate of a
 * recovered item, which must describe exactly what is left of the chain
 * and whose failure fails the recovery cleanly.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <string.h>
#include "memhost.h"

#define B	4096
#define RW	(SX_HF_READ | SX_HF_WRITE)

static struct mh_host host;

static int swap_range(struct mh_inode *a, struct mh_inode *b, u64 off1, u64 off2, u64 len,
		      u64 flags)
{
	struct sx_hfile f1 = mh_hfile(a, RW), f2 = mh_hfile(b, RW);
	struct file_swap_range fsr;

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_offset = (s64)(off1 * B);
	fsr.file2_offset = (s64)(off2 * B);
	fsr.length = (s64)(len * B);
	fsr.flags = flags;
	return sx_swap_core_range(&f1, &f2, &fsr);
}

static void check_idle(void)
{
	u32 i;

	for (i = 0; i < MH_NINODES; i++) {
		assert_int_equal(host.mh_inodes[i].mi_locked, 0);
		assert_int_equal(host.mh_inodes[i].mi_refs, 0);
	}
	assert_int_equal(host.mh_open_trans, 0);
}

/*
 * Eight blocks each.  a: [0,4) written, [4,6) blocks shared with b at the
 * same offsets, [6,8) unwritten.  b: [0,2) written, [4,6) the shared blocks,
 * the rest holes.  Swapping [0,8) moves 6 of a's blocks (the shared piece
 * stays) and 2 of b's, in 3 steps.
 */
static void build_layout(u32 features, struct mh_inode **a, struct mh_inode **b)
{
	u64 shared;

	mh_init(&host, B, features);
	*a = mh_create(&host, 8 * B);
	*b = mh_create(&host, 8 * B);
	mh_add_extent(*a, 0, 4, false);
	shared = mh_alloc(&host, 2);
	mh_add_mapping(*a, 4, shared, 2, false);
	mh_add_extent(*a, 6, 2, true);
	mh_add_extent(*b, 0, 2, false);
	mh_add_mapping(*b, 4, shared, 2, false);
	(*a)->mi_flags |= SX_HSTAT_REFLINK;
	(*b)->mi_flags |= SX_HSTAT_REFLINK;
}

/* A lock that fails at the front end: the error, and nothing changed. */
static void test_lock_fails(void **state)
{
	struct mh_inode *a, *b, *before;

	(void)state;
	build_layout(SX_HOST_ATOMIC_SWAP, &a, &b);
	before = mh_snapshot(&host);
	host.mh_fail_lock = 1;
	host.mh_fail_error = -EINTR;
	assert_int_equal(swap_range(a, b, 0, 0, 8, 0), -EINTR);
	assert_true(mh_same_all(before, host.mh_inodes));
	assert_int_equal(host.mh_nalloc, 0);
	assert_int_equal(host.mh_nflush, 0);
	assert_int_equal(host.mh_nrec, 0);
	assert_false(host.mh_shutdown);
	check_idle();
	/* the next call locks and swaps */
	assert_int_equal(swap_range(a, b, 0, 0, 8, 0), 0);
	assert_int_equal(mh_check(&host, MH_CHECK_SHARED | MH_CHECK_EOF), 0);
	check_idle();
	free(before);
	mh_destroy(&host);
}

/* A 64-extent swap whose log is cut after its third commit, mid-chain. */
static void cut_mid_chain(u32 features, struct mh_inode **after)
{
	struct mh_inode *a, *b;
	u64 i;

	mh_init(&host, B, SX_HOST_ATOMIC_SWAP | features);
	a = mh_create(&host, 128 * B);
	b = mh_create(&host, 128 * B);
	for (i = 0; i < 64; i++) {
		mh_add_extent(a, 2 * i, 1, i % 5 == 0);
		mh_add_extent(b, 2 * i + 1, 1, false);
	}
	mh_checkpoint(&host);
	assert_int_equal(swap_range(a, b, 0, 0, 128, 0), 0);
	*after = mh_snapshot(&host);
	mh_crash(&host, 3);
	assert_non_null(mh_unfinished_sxi(&host));
}

/*
 * A recovered step whose lock fails fails the recovery, which leaves the
 * host shut down and the intent in the log; the next recovery finishes the
 * swap.  Either the core's per-step lock or the host's whole-chain lock.
 */
static void test_recovered_lock_fails(void **state)
{
	u32 features[] = { 0, SX_HOST_RECOVERY_LOCKS };
	u32 i;

	(void)state;
	for (i = 0; i < 2; i++) {
		struct mh_inode *after;

		cut_mid_chain(features[i], &after);
		host.mh_fail_lock = 1;
		host.mh_fail_error = -EINTR;
		assert_int_equal(mh_recover(&host), -EINTR);
		check_idle();
		assert_int_equal(host.mh_fail_lock, 0);
		mh_crash(&host, host.mh_nrec);
		assert_non_null(mh_unfinished_sxi(&host));
		assert_int_equal(mh_recover(&host), 0);
		check_idle();
		assert_int_equal(mh_unfinished(&host), 0);
		assert_true(mh_same_all(after, host.mh_inodes));
		free(after);
		mh_destroy(&host);
	}
}

/*
 * A recovered item whose estimate fails (here: the forks may no longer
 * grow as far as the rest of the chain needs) fails the recovery with that
 * error and releases its inodes; with the limit back, recovery finishes.
 */
static void test_recovered_estimate_fails(void **state)
{
	struct mh_inode *after;
	struct sx_dlog_sxi *sxi;
	struct sx_swapext_intent si;
	struct sx_hres res;

	(void)state;
	cut_mid_chain(0, &after);
	host.mh_max_extents = 8;
	sxi = mh_unfinished_sxi(&host);
	assert_non_null(sxi);
	assert_int_equal(sx_swapext_item_decode(&host.mh_host, &sxi->sxi_ext, &si), 0);
	assert_int_equal(sx_swapext_item_estimate(&si, &res), -EFBIG);
	sx_swapext_item_cancel(&si);
	check_idle();
	assert_int_equal(mh_recover(&host), -EFBIG);
	check_idle();
	host.mh_max_extents = MH_MAX_EXT;
	mh_crash(&host, host.mh_nrec);
	assert_int_equal(mh_recover(&host), 0);
	assert_true(mh_same_all(after, host.mh_inodes));
	check_idle();
	free(after);
	mh_destroy(&host);
}

/* The reservation names both inodes and the blocks each range gives away. */
static void test_reservation_blocks(void **state)
{
	struct mh_inode *a, *b;
	u32 features[] = { SX_HOST_ATOMIC_SWAP, SX_HOST_DEFER_BMAP, SX_HOST_ATOMIC_SWAP |
			   SX_HOST_MAP_NBLOCKS };
	u32 i;

	(void)state;
	for (i = 0; i < 3; i++) {
		u64 flags = features[i] & SX_HOST_ATOMIC_SWAP ? 0 : FILE_SWAP_RANGE_NONATOMIC;

		build_layout(features[i], &a, &b);
		assert_int_equal(swap_range(a, b, 0, 0, 8, flags), 0);
		assert_int_equal(host.mh_last_res.hr_algo, flags ? SX_SWAP_BMAP : SX_SWAP_ATOMIC);
		assert_ptr_equal(host.mh_last_res.hr_ip1, &a->mi_hi);
		assert_ptr_equal(host.mh_last_res.hr_ip2, &b->mi_hi);
		assert_int_equal(host.mh_last_res.hr_blocks1, 6);
		assert_int_equal(host.mh_last_res.hr_blocks2, 2);
		assert_int_equal(host.mh_last_res.hr_steps, 3);
		/* and the files' counts moved by exactly that */
		assert_int_equal(a->mi_nblocks, 8 - 6 + 2);
		assert_int_equal(b->mi_nblocks, 4 - 2 + 6);
		assert_int_equal(a->mi_qused, a->mi_nblocks);
		assert_int_equal(b->mi_qused, b->mi_nblocks);
		assert_int_equal(mh_check(&host, MH_CHECK_SHARED | MH_CHECK_EOF), 0);
		check_idle();
		mh_destroy(&host);
	}
	/* two ranges of one file: both inodes are the file */
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 8 * B);
	mh_add_extent(a, 0, 3, false);
	assert_int_equal(swap_range(a, a, 0, 4, 4, 0), 0);
	assert_ptr_equal(host.mh_last_res.hr_ip1, &a->mi_hi);
	assert_ptr_equal(host.mh_last_res.hr_ip2, &a->mi_hi);
	assert_int_equal(host.mh_last_res.hr_blocks1, 3);
	assert_int_equal(host.mh_last_res.hr_blocks2, 0);
	assert_int_equal(a->mi_nblocks, 3);
	mh_destroy(&host);
}

/*
 * Quota: b gains 4 blocks.  A hard limit one short refuses the swap with
 * -EDQUOT before anything changes; at the limit it goes through and both
 * owners' usage moves with the blocks.  The loser's limit does not matter.
 */
static void test_quota(void **state)
{
	struct mh_inode *a, *b, *before;
	u32 features[] = { SX_HOST_ATOMIC_SWAP, SX_HOST_ATOMIC_SWAP | SX_HOST_MAP_NBLOCKS };
	u32 i;

	(void)state;
	for (i = 0; i < 2; i++) {
		build_layout(features[i], &a, &b);
		before = mh_snapshot(&host);
		b->mi_qlimit = b->mi_qused + 3;
		a->mi_qlimit = 1;
		assert_int_equal(swap_range(a, b, 0, 0, 8, 0), -EDQUOT);
		assert_true(mh_same_all(before, host.mh_inodes));
		assert_int_equal(host.mh_nrec, 0);
		assert_false(host.mh_shutdown);
		check_idle();
		b->mi_qlimit = b->mi_qused + 4;
		assert_int_equal(swap_range(a, b, 0, 0, 8, 0), 0);
		assert_int_equal(b->mi_qused, before[1].mi_qused + 4);
		assert_int_equal(a->mi_qused, before[0].mi_qused - 4);
		assert_int_equal(mh_check(&host, MH_CHECK_SHARED | MH_CHECK_EOF), 0);
		free(before);
		mh_destroy(&host);
	}
}

/* The whole-fork swap moves whole block counts: quota is reserved on those. */
static void test_quota_forks(void **state)
{
	struct mh_inode *a, *b;

	(void)state;
	mh_init(&host, B, 0);
	a = mh_create(&host, 8 * B);
	b = mh_create(&host, 8 * B);
	mh_add_extent(a, 0, 8, false);
	mh_add_extent(b, 0, 3, false);
	b->mi_qlimit = 7;
	assert_int_equal(swap_range(a, b, 0, 0, 8,
				    FILE_SWAP_RANGE_NONATOMIC | FILE_SWAP_RANGE_FULL_FILES),
			 -EDQUOT);
	assert_int_equal(host.mh_last_res.hr_algo, SX_SWAP_FORKS);
	assert_int_equal(b->mi_nblocks, 3);
	b->mi_qlimit = 8;
	assert_int_equal(swap_range(a, b, 0, 0, 8,
				    FILE_SWAP_RANGE_NONATOMIC | FILE_SWAP_RANGE_FULL_FILES), 0);
	assert_int_equal(a->mi_qused, 3);
	assert_int_equal(b->mi_qused, 8);
	assert_int_equal(mh_check(&host, MH_CHECK_EOF), 0);
	check_idle();
	mh_destroy(&host);
}

/* Blocks each range gives away from the cursors of @si on, block by block. */
static void count_left(const struct sx_swapext_intent *si, u64 *blocks1, u64 *blocks2)
{
	const struct mh_inode *a = mh_container_of(si->si_ip1, struct mh_inode, mi_hi);
	const struct mh_inode *b = mh_container_of(si->si_ip2, struct mh_inode, mi_hi);
	u64 o;

	*blocks1 = *blocks2 = 0;
	for (o = 0; o < si->si_blockcount; o++) {
		u64 x = mh_block_at(a, si->si_startoff1 + o, NULL);
		u64 y = mh_block_at(b, si->si_startoff2 + o, NULL);

		if (x == y)
			continue;
		*blocks1 += x != SX_HOLESTARTBLOCK;
		*blocks2 += y != SX_HOLESTARTBLOCK;
	}
}

/*
 * A long range of many mappings is estimated in 16 pieces (the last first,
 * for the host's cache): the blocks each range gives away are counted
 * exactly, the steps and incoming mappings at least as they are and at
 * most one more per edge between pieces (@slack: 0 where the range is
 * walked whole).  a holds @n extents of @ext blocks, every other one, and
 * b those between: each extent that reaches into the range [0, @len) is
 * a step, whose blocks inside it move.
 */
static void long_estimate(u64 n, u64 ext, u64 len, u64 slack)
{
	struct mh_inode *a, *b;
	struct sx_hres *res = &host.mh_last_res;
	u64 i, steps = 0, in[2] = { 0, 0 }, blocks[2] = { 0, 0 };

	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, (s64)(2 * n * ext * B));
	b = mh_create(&host, (s64)(2 * n * ext * B));
	for (i = 0; i < 2 * n; i++) {
		u64 off = i * ext;

		mh_add_extent(i % 2 ? b : a, off, ext, false);
		if (off < len) {
			steps++;
			/* b's extents come into a (in[0]), a's into b */
			in[(i + 1) % 2]++;
			blocks[i % 2] += len - off < ext ? len - off : ext;
		}
	}
	assert_int_equal(swap_range(a, b, 0, 0, len, 0), 0);
	assert_int_equal(res->hr_blocks1, blocks[0]);
	assert_int_equal(res->hr_blocks2, blocks[1]);
	assert_in_range(res->hr_steps, steps, steps + slack);
	assert_in_range(res->hr_nrext1, n + 3 + in[0], n + 3 + in[0] + slack);
	assert_in_range(res->hr_nrext2, n + 3 + in[1], n + 3 + in[1] + slack);
	assert_int_equal(mh_check(&host, MH_CHECK_EOF), 0);
	check_idle();
	mh_destroy(&host);
}

static void test_long_estimate(void **state)
{
	(void)state;
	/* 400 mappings over 400,000 blocks: pieces of 25,000 */
	long_estimate(200, 1000, 400000, 15);
	/* a last piece shorter than the others, and data past the range */
	long_estimate(200, 1000, 390003, 15);
	/* 400 mappings, 65,536 blocks: the shortest range walked in pieces */
	long_estimate(200, 164, 65536, 15);
	/* one block shorter, or 200 mappings: walked whole, exact */
	long_estimate(200, 164, 65535, 0);
	long_estimate(100, 1000, 200000, 0);
}

/*
 * At every cut of a swap's chain, the estimate of the unfinished intent
 * counts exactly the blocks still to move, and recovery reserves that.
 */
static void test_recovered_estimate(void **state)
{
	struct mh_inode *a, *b;
	struct mh_tape *tape;
	struct sx_hres first;
	u32 n, cut, checked = 0;
	u64 i;

	(void)state;
	mh_init(&host, B, SX_HOST_ATOMIC_SWAP);
	a = mh_create(&host, 100 * B);
	b = mh_create(&host, 100 * B);
	for (i = 0; i < 30; i++) {
		mh_add_extent(a, 3 * i, 2, i % 4 == 0);
		mh_add_extent(b, 3 * i + 1, 1 + i % 2, false);
	}
	mh_checkpoint(&host);
	assert_int_equal(swap_range(a, b, 0, 5, 90, 0), 0);
	first = host.mh_last_res;
	n = host.mh_nrec;
	tape = mh_tape_save(&host);
	for (cut = 1; cut < n; cut++) {
		struct sx_dlog_sxi *sxi;
		struct sx_swapext_intent si;
		struct sx_hres res;
		u64 left1, left2;

		mh_tape_load(&host, tape);
		mh_crash(&host, cut);
		sxi = mh_unfinished_sxi(&host);
		if (!sxi)
			continue;
		assert_int_equal(sx_swapext_item_decode(&host.mh_host, &sxi->sxi_ext, &si), 0);
		assert_int_equal(sx_swapext_item_estimate(&si, &res), 0);
		count_left(&si, &left1, &left2);
		assert_int_equal(res.hr_algo, SX_SWAP_ATOMIC);
		assert_ptr_equal(res.hr_ip1, &a->mi_hi);
		assert_ptr_equal(res.hr_ip2, &b->mi_hi);
		assert_int_equal(res.hr_blocks1, left1);
		assert_int_equal(res.hr_blocks2, left2);
		assert_true(res.hr_steps <= si.si_blockcount);
		assert_true(res.hr_steps > 0 || left1 + left2 == 0);
		if (cut == 1) {
			/* nothing done yet: what the call itself reserved */
			assert_int_equal(res.hr_blocks1, first.hr_blocks1);
			assert_int_equal(res.hr_blocks2, first.hr_blocks2);
			assert_int_equal(res.hr_steps, first.hr_steps);
		}
		sx_swapext_item_cancel(&si);
		check_idle();
		memset(&host.mh_last_res, 0, sizeof(host.mh_last_res));
		assert_int_equal(mh_recover(&host), 0);
		assert_true(memcmp(&host.mh_last_res, &res, sizeof(res)) == 0);
		assert_int_equal(mh_check(&host, MH_CHECK_EOF), 0);
		check_idle();
		checked++;
	}
	assert_true(checked > 20);
	mh_tape_free(tape);
	mh_destroy(&host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lock_fails),
		cmocka_unit_test(test_recovered_lock_fails),
		cmocka_unit_test(test_recovered_estimate_fails),
		cmocka_unit_test(test_reservation_blocks),
		cmocka_unit_test(test_quota),
		cmocka_unit_test(test_quota_forks),
		cmocka_unit_test(test_recovered_estimate),
		cmocka_unit_test(test_long_estimate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
