/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for the crash-emulating device: pass-through, the fates of
 * volatile writes (kept, dropped, torn at an exact sector prefix),
 * overlapping writes resolved per sector, flush and FUA durability, power
 * cuts at a write number, counters, injected I/O errors, and
 * reproducibility from the seed.
 *
 * Sector contents are patterns unique to (tag, sector), tag 0 being the
 * zeroes a fresh memory device holds, so each sector of the post-crash
 * image can be traced to the write that left it.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "sx_platform.h"
#include <swapext/device.h>

#define SECT		512u
#define NSECT		256u		/* sectors in the test device */
#define DEVSIZE		(NSECT * SECT)
#define MAXTAG		255

struct fixture {
	struct sx_bdev		*fx_lower;
	struct sx_bdev		*fx_bd;
	struct sx_crashdev	*fx_cd;
};

/* Fill one sector's worth of @buf with the pattern of (@tag, @sector). */
static void fill_sector(u8 *buf, u32 sectsize, int tag, u64 sector)
{
	u32 j;

	for (j = 0; j < sectsize; j++)
		buf[j] = tag ? (u8)(tag * 37 + sector * 11 + j * 3 + (j >> 8)) : 0;
}

/* Create a memory device and a crash device over it with @seed. */
static void fx_open(struct fixture *fx, u64 size, u32 sectsize, u64 seed)
{
	assert_int_equal(sx_memdev_create(size, sectsize, &fx->fx_lower), 0);
	assert_int_equal(sx_crashdev_create(fx->fx_lower, seed, &fx->fx_bd, &fx->fx_cd), 0);
	assert_non_null(fx->fx_bd);
	assert_non_null(fx->fx_cd);
	assert_int_equal(fx->fx_bd->bd_size, size);
	assert_int_equal(fx->fx_bd->bd_sectsize, sectsize);
}

/* Destroy both devices of a fixture. */
static void fx_close(struct fixture *fx)
{
	sx_bdev_destroy(fx->fx_bd);
	sx_bdev_destroy(fx->fx_lower);
	fx->fx_bd = fx->fx_lower = NULL;
	fx->fx_cd = NULL;
}

/* cmocka setup: the default 512-byte-sector fixture with seed 1. */
static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	fx_open(fx, DEVSIZE, SECT, 1);
	*state = fx;
	return 0;
}

/* cmocka teardown. */
static int teardown(void **state)
{
	struct fixture *fx = *state;

	if (fx->fx_bd)
		fx_close(fx);
	free(fx);
	return 0;
}

/* Write @n sectors from @sector, each with the pattern of @tag. */
static int wr(struct sx_bdev *bd, u64 sector, u64 n, int tag, unsigned int flags)
{
	u32 ss = bd->bd_sectsize;
	u8 *buf = malloc(n * ss);
	u64 i;
	int error;

	assert_non_null(buf);
	for (i = 0; i < n; i++)
		fill_sector(buf + i * ss, ss, tag, sector + i);
	error = bd->bd_ops->write(bd, sector * ss, buf, n * ss, flags);
	free(buf);
	return error;
}

/* Which tag's pattern sector @sector of @bd holds; -1 if none. */
static int tag_of(struct sx_bdev *bd, u64 sector)
{
	u32 ss = bd->bd_sectsize;
	u8 got[65536], want[65536];
	int tag;

	assert_int_equal(bd->bd_ops->read(bd, sector * ss, got, ss), 0);
	for (tag = 0; tag <= MAXTAG; tag++) {
		fill_sector(want, ss, tag, sector);
		if (!memcmp(got, want, ss))
			return tag;
	}
	return -1;
}

/* Assert that sectors [@first, @first + @n) of @bd all hold @tag. */
static void assert_tags(struct sx_bdev *bd, u64 first, u64 n, int tag)
{
	u64 s;

	for (s = first; s < first + n; s++) {
		int got = tag_of(bd, s);

		if (got != tag)
			fail_msg("sector %llu holds tag %d, expected %d",
				 (unsigned long long)s, got, tag);
	}
}

/* Number of leading sectors of [first, first + n) holding @tag. */
static u64 prefix_with(struct sx_bdev *bd, u64 first, u64 n, int tag)
{
	u64 k = 0;

	while (k < n && tag_of(bd, first + k) == tag)
		k++;
	return k;
}

/* Every write reaches the lower device at once and reads back. */
static void test_passthrough(void **state)
{
	struct fixture *fx = *state;
	struct sx_crashdev_stats st;

	assert_int_equal(wr(fx->fx_bd, 10, 4, 7, 0), 0);
	assert_tags(fx->fx_lower, 10, 4, 7);
	assert_tags(fx->fx_bd, 10, 4, 7);
	assert_tags(fx->fx_bd, 9, 1, 0);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_volatile, 1);
	assert_false(st.cs_dead);
}

/* Base image: tag 1 on sectors 0..15, made durable. */
static void base_image(struct fixture *fx)
{
	assert_int_equal(wr(fx->fx_bd, 0, 16, 1, 0), 0);
	assert_int_equal(fx->fx_bd->bd_ops->flush(fx->fx_bd), 0);
}

/* Check that every I/O of a dead device fails with -EIO. */
static void assert_dead(struct fixture *fx)
{
	struct sx_crashdev_stats st;
	u8 buf[SECT];

	assert_int_equal(fx->fx_bd->bd_ops->read(fx->fx_bd, 0, buf, SECT), -EIO);
	assert_int_equal(wr(fx->fx_bd, 0, 1, 9, 0), -EIO);
	assert_int_equal(wr(fx->fx_bd, 0, 1, 9, SX_BDEV_FUA), -EIO);
	assert_int_equal(fx->fx_bd->bd_ops->flush(fx->fx_bd), -EIO);
	assert_int_equal(fx->fx_bd->bd_ops->discard(fx->fx_bd, 0, SECT), -EIO);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_true(st.cs_dead);
	assert_int_equal(st.cs_volatile, 0);
}

/* KEEP: every volatile write is in the post-crash image. */
static void test_keep(void **state)
{
	struct fixture *fx = *state;

	base_image(fx);
	assert_int_equal(wr(fx->fx_bd, 0, 8, 2, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 8, 4, 3, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 40, 2, 4, 0), 0);
	sx_crashdev_cut_now(fx->fx_cd, SX_CRASH_KEEP);
	assert_tags(fx->fx_lower, 0, 8, 2);
	assert_tags(fx->fx_lower, 8, 4, 3);
	assert_tags(fx->fx_lower, 12, 4, 1);
	assert_tags(fx->fx_lower, 40, 2, 4);
	assert_tags(fx->fx_lower, 42, 1, 0);
	assert_dead(fx);
	/* a second cut changes nothing */
	sx_crashdev_cut_now(fx->fx_cd, SX_CRASH_DROP);
	assert_tags(fx->fx_lower, 0, 8, 2);
}

/* DROP: the image is exactly what the last flush made durable. */
static void test_drop(void **state)
{
	struct fixture *fx = *state;

	base_image(fx);
	assert_int_equal(wr(fx->fx_bd, 0, 8, 2, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 4, 8, 3, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 40, 2, 4, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 0, 1, 5, 0), 0);
	sx_crashdev_cut_now(fx->fx_cd, SX_CRASH_DROP);
	assert_tags(fx->fx_lower, 0, 16, 1);
	assert_tags(fx->fx_lower, 40, 2, 0);
	assert_dead(fx);
}

/* TEAR: a multi-sector write keeps an exact prefix of 1..n-1 sectors. */
static void test_tear_prefix(void **state)
{
	bool seen[8] = { false };
	int distinct = 0;
	u64 seed, k;

	for (seed = 1; seed <= 64; seed++) {
		struct fixture fx;

		fx_open(&fx, DEVSIZE, SECT, seed);
		base_image(&fx);
		assert_int_equal(wr(fx.fx_bd, 2, 8, 2, 0), 0);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_TEAR);
		k = prefix_with(fx.fx_lower, 2, 8, 2);
		assert_true(k >= 1 && k <= 7);
		/* after the prefix: exactly the old content, nothing else */
		assert_tags(fx.fx_lower, 2 + k, 8 - k, 1);
		assert_tags(fx.fx_lower, 0, 2, 1);
		assert_tags(fx.fx_lower, 10, 6, 1);
		if (!seen[k]) {
			seen[k] = true;
			distinct++;
		}
		fx_close(&fx);
	}
	/* the tear point is chosen, not fixed */
	assert_true(distinct >= 4);
}

/* TEAR of a one-sector write: kept or dropped whole, both happen. */
static void test_tear_one_sector(void **state)
{
	int kept = 0, dropped = 0;
	u64 seed;

	for (seed = 1; seed <= 64; seed++) {
		struct fixture fx;
		int t;

		fx_open(&fx, DEVSIZE, SECT, seed);
		base_image(&fx);
		assert_int_equal(wr(fx.fx_bd, 5, 1, 2, 0), 0);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_TEAR);
		t = tag_of(fx.fx_lower, 5);
		assert_true(t == 1 || t == 2);
		if (t == 2)
			kept++;
		else
			dropped++;
		fx_close(&fx);
	}
	assert_true(kept > 0);
	assert_true(dropped > 0);
}

/* A tear size larger than the sector: tears only at its boundaries. */
static void test_tear_large_unit(void **state)
{
	bool seen[16] = { false };
	u64 seed, k;
	int t;

	for (seed = 1; seed <= 64; seed++) {
		struct fixture fx;

		fx_open(&fx, DEVSIZE, SECT, seed);
		sx_crashdev_set_sectsize(fx.fx_cd, 2048);
		base_image(&fx);
		/* sectors 1..16: tear boundaries inside are sectors 4, 8, 12, 16 */
		assert_int_equal(wr(fx.fx_bd, 1, 16, 2, 0), 0);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_TEAR);
		k = prefix_with(fx.fx_lower, 1, 16, 2);
		assert_true(k == 3 || k == 7 || k == 11 || k == 15);
		/* the rest is old: tag 1 up to sector 15, never written after */
		assert_tags(fx.fx_lower, 1 + k, 15 - k, 1);
		assert_tags(fx.fx_lower, 16, 1, 0);
		seen[k] = true;
		fx_close(&fx);

		/* a write inside one tear unit cannot tear */
		fx_open(&fx, DEVSIZE, SECT, seed);
		sx_crashdev_set_sectsize(fx.fx_cd, 4096);
		base_image(&fx);
		assert_int_equal(wr(fx.fx_bd, 1, 3, 2, 0), 0);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_TEAR);
		t = tag_of(fx.fx_lower, 1);
		assert_true(t == 1 || t == 2);
		assert_tags(fx.fx_lower, 1, 3, t);
		fx_close(&fx);
	}
	assert_true(seen[3] && seen[7] && seen[11] && seen[15]);
}

/* A tear size smaller than the lower sector tears inside a sector. */
static void test_tear_small_unit(void **state)
{
	static u8 old[8192], new[8192], img[8192];
	bool inside_sector = false;
	u64 seed;
	size_t i;

	for (i = 0; i < sizeof(old); i++) {
		old[i] = (u8)(i * 5 + 1);
		new[i] = (u8)(i * 7 + 2);
	}
	for (seed = 1; seed <= 64; seed++) {
		struct fixture fx;
		size_t keep;

		fx_open(&fx, 65536, 4096, seed);
		sx_crashdev_set_sectsize(fx.fx_cd, 256);
		assert_int_equal(fx.fx_bd->bd_ops->write(fx.fx_bd, 8192, old, 8192, 0), 0);
		assert_int_equal(fx.fx_bd->bd_ops->flush(fx.fx_bd), 0);
		assert_int_equal(fx.fx_bd->bd_ops->write(fx.fx_bd, 8192, new, 8192, 0), 0);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_TEAR);
		assert_int_equal(fx.fx_lower->bd_ops->read(fx.fx_lower, 8192, img, 8192), 0);
		keep = 0;
		while (keep < sizeof(img) && img[keep] == new[keep] && img[keep] != old[keep])
			keep++;
		assert_true(keep > 0 && keep < sizeof(img));
		assert_int_equal(keep % 256, 0);
		assert_memory_equal(img + keep, old + keep, sizeof(img) - keep);
		if (keep % 4096)
			inside_sector = true;
		fx_close(&fx);
	}
	assert_true(inside_sector);
}

/*
 * Whether the image of overlapping writes W1 (tag 1, sectors 0..7) and W2
 * (tag 2, sectors 4..11) is explained by W1 keeping @k1 and W2 @k2 sectors.
 */
static bool overlap_explained(const int *img, int k1, int k2)
{
	int s;

	for (s = 0; s < 12; s++) {
		int want = 0;

		if (s >= 4 && s - 4 < k2)
			want = 2;
		else if (s < 8 && s < k1)
			want = 1;
		if (img[s] != want)
			return false;
	}
	return true;
}

/* Overlapping writes: each sector holds the latest write that kept it. */
static void test_overlap(void **state)
{
	bool w1_only = false, w2_only = false, both_torn = false;
	int img[12], s, k1, k2;
	u64 seed;

	/* deterministic modes first */
	{
		struct fixture fx;

		fx_open(&fx, DEVSIZE, SECT, 5);
		assert_int_equal(wr(fx.fx_bd, 0, 8, 1, 0), 0);
		assert_int_equal(wr(fx.fx_bd, 4, 8, 2, 0), 0);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_KEEP);
		assert_tags(fx.fx_lower, 0, 4, 1);
		assert_tags(fx.fx_lower, 4, 8, 2);
		fx_close(&fx);

		fx_open(&fx, DEVSIZE, SECT, 5);
		assert_int_equal(wr(fx.fx_bd, 0, 8, 1, 0), 0);
		assert_int_equal(wr(fx.fx_bd, 4, 8, 2, 0), 0);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_DROP);
		assert_tags(fx.fx_lower, 0, 12, 0);
		fx_close(&fx);

		/* a newer write inside an older one */
		fx_open(&fx, DEVSIZE, SECT, 5);
		assert_int_equal(wr(fx.fx_bd, 0, 8, 1, 0), 0);
		assert_int_equal(wr(fx.fx_bd, 2, 2, 2, 0), 0);
		assert_int_equal(wr(fx.fx_bd, 0, 8, 3, 0), 0);
		assert_int_equal(wr(fx.fx_bd, 3, 1, 4, 0), 0);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_KEEP);
		assert_tags(fx.fx_lower, 0, 3, 3);
		assert_tags(fx.fx_lower, 3, 1, 4);
		assert_tags(fx.fx_lower, 4, 4, 3);
		fx_close(&fx);
	}

	for (seed = 1; seed <= 300; seed++) {
		struct fixture fx;
		bool ok = false;

		fx_open(&fx, DEVSIZE, SECT, seed);
		assert_int_equal(wr(fx.fx_bd, 0, 8, 1, 0), 0);
		assert_int_equal(wr(fx.fx_bd, 4, 8, 2, 0), 0);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_RANDOM);
		for (s = 0; s < 12; s++)
			img[s] = tag_of(fx.fx_lower, s);
		for (k1 = 0; k1 <= 8 && !ok; k1++)
			for (k2 = 0; k2 <= 8 && !ok; k2++)
				ok = overlap_explained(img, k1, k2);
		if (!ok)
			fail_msg("seed %llu: image not explained by any pair of fates",
				 (unsigned long long)seed);
		/* W2 dropped reveals W1 underneath, not the pre-flush zeroes */
		if (overlap_explained(img, 8, 0))
			w1_only = true;
		if (overlap_explained(img, 0, 8))
			w2_only = true;
		for (k1 = 1; k1 < 8; k1++)
			for (k2 = 1; k2 < 8; k2++)
				if (overlap_explained(img, k1, k2) &&
				    !overlap_explained(img, 8, k2) &&
				    !overlap_explained(img, 0, k2))
					both_torn = true;
		fx_close(&fx);
	}
	assert_true(w1_only);
	assert_true(w2_only);
	assert_true(both_torn);
}

/* Writes made durable by a flush survive every mode. */
static void test_flush_durable(void **state)
{
	enum sx_crash_mode modes[] = {
		SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR, SX_CRASH_RANDOM,
	};
	struct sx_crashdev_stats st;
	size_t m;
	u64 seed, s;

	for (m = 0; m < ARRAY_SIZE(modes); m++) {
		for (seed = 1; seed <= 16; seed++) {
			struct fixture fx;

			fx_open(&fx, DEVSIZE, SECT, seed);
			assert_int_equal(wr(fx.fx_bd, 0, 16, 1, 0), 0);
			assert_int_equal(wr(fx.fx_bd, 30, 1, 3, 0), 0);
			assert_int_equal(fx.fx_bd->bd_ops->flush(fx.fx_bd), 0);
			sx_crashdev_get_stats(fx.fx_cd, &st);
			assert_int_equal(st.cs_volatile, 0);
			assert_int_equal(wr(fx.fx_bd, 8, 16, 2, 0), 0);
			sx_crashdev_cut_now(fx.fx_cd, modes[m]);
			assert_tags(fx.fx_lower, 0, 8, 1);
			assert_tags(fx.fx_lower, 30, 1, 3);
			for (s = 8; s < 24; s++) {
				int t = tag_of(fx.fx_lower, s);

				if (modes[m] == SX_CRASH_DROP)
					assert_int_equal(t, s < 16 ? 1 : 0);
				else if (modes[m] == SX_CRASH_KEEP)
					assert_int_equal(t, 2);
				else
					assert_true(t == 2 || t == (s < 16 ? 1 : 0));
			}
			fx_close(&fx);
		}
	}
}

/* FUA writes are durable at once and survive DROP. */
static void test_fua(void **state)
{
	struct fixture *fx = *state;
	struct sx_crashdev_stats st;
	u64 seed;

	assert_int_equal(wr(fx->fx_bd, 20, 4, 5, SX_BDEV_FUA), 0);
	/* volatile, then FUA over part of it, then volatile over the FUA */
	assert_int_equal(wr(fx->fx_bd, 0, 8, 1, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 2, 2, 2, SX_BDEV_FUA), 0);
	assert_int_equal(wr(fx->fx_bd, 3, 3, 3, 0), 0);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_fua_writes, 2);
	assert_int_equal(st.cs_volatile, 2);
	sx_crashdev_cut_now(fx->fx_cd, SX_CRASH_DROP);
	assert_tags(fx->fx_lower, 20, 4, 5);
	assert_tags(fx->fx_lower, 0, 2, 0);
	assert_tags(fx->fx_lower, 2, 2, 2);
	assert_tags(fx->fx_lower, 4, 4, 0);

	/* the same sequence kept: the FUA write shows only where nothing newer is */
	{
		struct fixture k;

		fx_open(&k, DEVSIZE, SECT, 1);
		assert_int_equal(wr(k.fx_bd, 0, 8, 1, 0), 0);
		assert_int_equal(wr(k.fx_bd, 2, 2, 2, SX_BDEV_FUA), 0);
		assert_int_equal(wr(k.fx_bd, 3, 3, 3, 0), 0);
		sx_crashdev_cut_now(k.fx_cd, SX_CRASH_KEEP);
		assert_tags(k.fx_lower, 0, 2, 1);
		assert_tags(k.fx_lower, 2, 1, 2);
		assert_tags(k.fx_lower, 3, 3, 3);
		assert_tags(k.fx_lower, 6, 2, 1);
		fx_close(&k);
	}

	/* whatever the fates, the older volatile write never covers the FUA */
	for (seed = 1; seed <= 40; seed++) {
		struct fixture r;
		int t;

		fx_open(&r, DEVSIZE, SECT, seed);
		assert_int_equal(wr(r.fx_bd, 0, 8, 1, 0), 0);
		assert_int_equal(wr(r.fx_bd, 2, 2, 2, SX_BDEV_FUA), 0);
		assert_int_equal(wr(r.fx_bd, 3, 3, 3, 0), 0);
		sx_crashdev_cut_now(r.fx_cd, SX_CRASH_RANDOM);
		assert_tags(r.fx_lower, 2, 1, 2);
		t = tag_of(r.fx_lower, 3);
		assert_true(t == 2 || t == 3);
		fx_close(&r);
	}
}

/* Power lost during write N: it fails, and so does all I/O after it. */
static void test_cut_at_write_drop(void **state)
{
	struct fixture *fx = *state;
	struct sx_crashdev_stats st;

	base_image(fx);				/* write 1 */
	sx_crashdev_cut_at_write(fx->fx_cd, 4, SX_CRASH_DROP);
	assert_int_equal(wr(fx->fx_bd, 0, 1, 2, 0), 0);	/* 2 */
	assert_int_equal(wr(fx->fx_bd, 1, 1, 3, 0), 0);	/* 3 */
	assert_int_equal(wr(fx->fx_bd, 2, 1, 4, 0), -EIO);	/* 4: the cut */
	assert_dead(fx);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_writes, 4);
	assert_tags(fx->fx_lower, 0, 16, 1);
}

/* The write hook: sees each write's number before it is issued, and may cut at it. */
struct hook_rec {
	struct sx_crashdev *hr_cd;
	u64	hr_seen[8];
	u32	hr_n;
	u64	hr_cut;		/* arm a cut at this write from the hook */
};

static void record_hook(void *arg, u64 n)
{
	struct hook_rec *hr = arg;

	if (hr->hr_n < 8)
		hr->hr_seen[hr->hr_n++] = n;
	if (n == hr->hr_cut)
		sx_crashdev_cut_at_write(hr->hr_cd, n, SX_CRASH_DROP);
}

static void test_write_hook(void **state)
{
	struct fixture *fx = *state;
	struct hook_rec hr = { .hr_cd = fx->fx_cd, .hr_cut = 5 };
	struct sx_crashdev_stats st;

	base_image(fx);				/* write 1, before the hook */
	sx_crashdev_set_write_hook(fx->fx_cd, record_hook, &hr);
	assert_int_equal(wr(fx->fx_bd, 0, 1, 2, 0), 0);		/* 2 */
	assert_int_equal(tag_of(fx->fx_bd, 0), 2);		/* reads do not call it */
	assert_int_equal(wr(fx->fx_bd, 1, 1, 3, 0), 0);		/* 3 */
	sx_crashdev_set_write_hook(fx->fx_cd, NULL, NULL);
	assert_int_equal(wr(fx->fx_bd, 2, 1, 4, 0), 0);		/* 4: no hook */
	sx_crashdev_set_write_hook(fx->fx_cd, record_hook, &hr);
	assert_int_equal(wr(fx->fx_bd, 3, 1, 5, 0), -EIO);	/* 5: cut from the hook */
	assert_int_equal(hr.hr_n, 3);
	assert_int_equal(hr.hr_seen[0], 2);
	assert_int_equal(hr.hr_seen[1], 3);
	assert_int_equal(hr.hr_seen[2], 5);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_writes, 5);
	/* the cut at write 5, dropping: only the base image survives */
	assert_tags(fx->fx_lower, 0, 16, 1);
	/* a dead device issues no writes, so the hook is not called */
	assert_dead(fx);
	assert_int_equal(hr.hr_n, 3);
}

/* With KEEP the in-flight write may land too. */
static void test_cut_at_write_keep(void **state)
{
	struct fixture *fx = *state;

	sx_crashdev_cut_at_write(fx->fx_cd, 3, SX_CRASH_KEEP);
	assert_int_equal(wr(fx->fx_bd, 0, 1, 2, 0), 0);
	assert_int_equal(fx->fx_bd->bd_ops->flush(fx->fx_bd), 0);
	assert_int_equal(wr(fx->fx_bd, 1, 1, 3, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 2, 4, 4, 0), -EIO);
	assert_dead(fx);
	assert_tags(fx->fx_lower, 0, 1, 2);
	assert_tags(fx->fx_lower, 1, 1, 3);
	assert_tags(fx->fx_lower, 2, 4, 4);
}

/*
 * Only the newest: the write in flight reaches the media and every earlier
 * volatile write is lost, even one under it; flushed and FUA writes stay.
 */
static void test_cut_at_write_newest(void **state)
{
	struct fixture *fx = *state;

	sx_crashdev_cut_at_write(fx->fx_cd, 5, SX_CRASH_NEWEST);
	assert_int_equal(wr(fx->fx_bd, 0, 1, 2, 0), 0);
	assert_int_equal(fx->fx_bd->bd_ops->flush(fx->fx_bd), 0);
	assert_int_equal(wr(fx->fx_bd, 1, 2, 3, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 8, 1, 5, SX_BDEV_FUA), 0);
	assert_int_equal(wr(fx->fx_bd, 4, 2, 6, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 2, 3, 4, 0), -EIO);
	assert_dead(fx);
	assert_tags(fx->fx_lower, 0, 1, 2);
	assert_tags(fx->fx_lower, 1, 1, 0);
	assert_tags(fx->fx_lower, 2, 3, 4);
	assert_tags(fx->fx_lower, 5, 1, 0);
	assert_tags(fx->fx_lower, 8, 1, 5);
}

/* An in-flight FUA write gets a fate like any other; earlier FUA stays. */
static void test_cut_at_fua_write(void **state)
{
	struct fixture *fx = *state;

	sx_crashdev_cut_at_write(fx->fx_cd, 2, SX_CRASH_DROP);
	assert_int_equal(wr(fx->fx_bd, 0, 2, 2, SX_BDEV_FUA), 0);
	assert_int_equal(wr(fx->fx_bd, 1, 2, 3, SX_BDEV_FUA), -EIO);
	assert_dead(fx);
	assert_tags(fx->fx_lower, 0, 2, 2);
	assert_tags(fx->fx_lower, 2, 1, 0);
}

/* Torn in-flight write; flushes between writes do not reset the count. */
static void test_cut_at_write_tear(void **state)
{
	u64 seed, k;

	for (seed = 1; seed <= 16; seed++) {
		struct fixture fx;

		fx_open(&fx, DEVSIZE, SECT, seed);
		sx_crashdev_cut_at_write(fx.fx_cd, 3, SX_CRASH_TEAR);
		assert_int_equal(wr(fx.fx_bd, 0, 16, 1, 0), 0);
		assert_int_equal(fx.fx_bd->bd_ops->flush(fx.fx_bd), 0);
		assert_int_equal(wr(fx.fx_bd, 40, 1, 9, 0), 0);
		assert_int_equal(fx.fx_bd->bd_ops->flush(fx.fx_bd), 0);
		assert_int_equal(wr(fx.fx_bd, 0, 16, 2, 0), -EIO);
		k = prefix_with(fx.fx_lower, 0, 16, 2);
		assert_true(k >= 1 && k <= 15);
		assert_tags(fx.fx_lower, k, 16 - k, 1);
		assert_tags(fx.fx_lower, 40, 1, 9);
		fx_close(&fx);
	}
}

/* cut_at_write 0 disarms; a number already passed never fires. */
static void test_cut_at_write_disarm(void **state)
{
	struct fixture *fx = *state;
	struct sx_crashdev_stats st;

	sx_crashdev_cut_at_write(fx->fx_cd, 2, SX_CRASH_DROP);
	sx_crashdev_cut_at_write(fx->fx_cd, 0, SX_CRASH_DROP);
	assert_int_equal(wr(fx->fx_bd, 0, 1, 1, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 1, 1, 1, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 2, 1, 1, 0), 0);
	sx_crashdev_cut_at_write(fx->fx_cd, 2, SX_CRASH_DROP);
	assert_int_equal(wr(fx->fx_bd, 3, 1, 1, 0), 0);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_false(st.cs_dead);
	assert_int_equal(st.cs_writes, 4);
}

/* Counters: reads, writes, FUA writes, flushes, bytes, volatile writes. */
static void test_stats(void **state)
{
	struct fixture *fx = *state;
	struct sx_crashdev_stats st;
	u8 buf[4 * SECT];

	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_reads + st.cs_writes + st.cs_flushes, 0);

	assert_int_equal(wr(fx->fx_bd, 0, 4, 1, 0), 0);
	assert_int_equal(wr(fx->fx_bd, 8, 2, 1, SX_BDEV_FUA), 0);
	assert_int_equal(wr(fx->fx_bd, 16, 1, 1, 0), 0);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_volatile, 2);
	assert_int_equal(fx->fx_bd->bd_ops->flush(fx->fx_bd), 0);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_volatile, 0);
	assert_int_equal(wr(fx->fx_bd, 20, 1, 1, 0), 0);
	assert_int_equal(fx->fx_bd->bd_ops->read(fx->fx_bd, 0, buf, 4 * SECT), 0);
	assert_int_equal(fx->fx_bd->bd_ops->read(fx->fx_bd, SECT, buf, SECT), 0);
	assert_int_equal(fx->fx_bd->bd_ops->read(fx->fx_bd, 0, buf, 2 * SECT), 0);
	assert_int_equal(fx->fx_bd->bd_ops->flush(fx->fx_bd), 0);
	/* refused requests are not I/O */
	assert_int_equal(fx->fx_bd->bd_ops->read(fx->fx_bd, 1, buf, SECT), -EINVAL);
	assert_int_equal(fx->fx_bd->bd_ops->write(fx->fx_bd, DEVSIZE, buf, SECT, 0), -EINVAL);
	assert_int_equal(fx->fx_bd->bd_ops->write(fx->fx_bd, 0, buf, SECT + 1, 0), -EINVAL);

	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_reads, 3);
	assert_int_equal(st.cs_writes, 4);
	assert_int_equal(st.cs_fua_writes, 1);
	assert_int_equal(st.cs_flushes, 2);
	assert_int_equal(st.cs_bytes_read, 7 * SECT);
	assert_int_equal(st.cs_bytes_written, 8 * SECT);
	assert_int_equal(st.cs_volatile, 0);
	assert_int_equal(st.cs_injected_errors, 0);
	assert_false(st.cs_dead);
}

/* Injected read errors: nth once, forever, counted from the arm call. */
static void test_inject_read(void **state)
{
	struct fixture *fx = *state;
	struct sx_crashdev_stats st;
	struct sx_bdev *bd = fx->fx_bd;
	u8 buf[SECT];
	int i;

	for (i = 0; i < 5; i++)
		assert_int_equal(bd->bd_ops->read(bd, 0, buf, SECT), 0);
	sx_crashdev_fail(fx->fx_cd, SX_IO_READ, 2, false, -EIO);
	assert_int_equal(bd->bd_ops->read(bd, 0, buf, SECT), 0);
	assert_int_equal(bd->bd_ops->read(bd, 0, buf, SECT), -EIO);
	assert_int_equal(bd->bd_ops->read(bd, 0, buf, SECT), 0);
	assert_int_equal(bd->bd_ops->read(bd, 0, buf, SECT), 0);
	/* writes and flushes are not affected by a read fault */
	sx_crashdev_fail(fx->fx_cd, SX_IO_READ, 1, true, -ENODATA);
	assert_int_equal(wr(bd, 0, 1, 1, 0), 0);
	assert_int_equal(bd->bd_ops->flush(bd), 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(bd->bd_ops->read(bd, 0, buf, SECT), -ENODATA);
	sx_crashdev_clear_faults(fx->fx_cd);
	assert_int_equal(bd->bd_ops->read(bd, 0, buf, SECT), 0);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_injected_errors, 6);
	assert_int_equal(st.cs_reads, 15);
	assert_false(st.cs_dead);
}

/* An injected write error leaves the media as it was and is not volatile. */
static void test_inject_write(void **state)
{
	struct fixture *fx = *state;
	struct sx_crashdev_stats st;
	struct sx_bdev *bd = fx->fx_bd;

	base_image(fx);
	sx_crashdev_fail(fx->fx_cd, SX_IO_WRITE, 3, false, -EIO);
	assert_int_equal(wr(bd, 20, 1, 2, 0), 0);
	assert_int_equal(wr(bd, 21, 1, 2, 0), 0);
	assert_int_equal(wr(bd, 0, 4, 3, 0), -EIO);
	assert_tags(fx->fx_lower, 0, 4, 1);
	assert_int_equal(wr(bd, 22, 1, 2, 0), 0);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_volatile, 3);

	/* forever, FUA included */
	sx_crashdev_fail(fx->fx_cd, SX_IO_WRITE, 1, true, -ENOSPC);
	assert_int_equal(wr(bd, 4, 2, 4, SX_BDEV_FUA), -ENOSPC);
	assert_int_equal(wr(bd, 6, 2, 4, 0), -ENOSPC);
	assert_int_equal(wr(bd, 8, 2, 4, 0), -ENOSPC);
	assert_tags(fx->fx_lower, 4, 6, 1);
	sx_crashdev_clear_faults(fx->fx_cd);

	/* the failed writes are not part of what a cut can keep */
	sx_crashdev_cut_now(fx->fx_cd, SX_CRASH_KEEP);
	assert_tags(fx->fx_lower, 0, 16, 1);
	assert_tags(fx->fx_lower, 20, 3, 2);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_injected_errors, 4);
	assert_int_equal(st.cs_writes, 1 + 7);
}

/* An injected flush error makes nothing durable. */
static void test_inject_flush(void **state)
{
	struct fixture *fx = *state;
	struct sx_crashdev_stats st;
	struct sx_bdev *bd = fx->fx_bd;

	base_image(fx);
	assert_int_equal(wr(bd, 0, 4, 2, 0), 0);
	sx_crashdev_fail(fx->fx_cd, SX_IO_FLUSH, 1, false, -EIO);
	assert_int_equal(bd->bd_ops->flush(bd), -EIO);
	sx_crashdev_get_stats(fx->fx_cd, &st);
	assert_int_equal(st.cs_volatile, 1);
	assert_int_equal(st.cs_injected_errors, 1);
	assert_int_equal(wr(bd, 4, 4, 3, 0), 0);
	/* once only: this flush works, then a forever fault from the second on */
	sx_crashdev_fail(fx->fx_cd, SX_IO_FLUSH, 2, true, -EROFS);
	assert_int_equal(bd->bd_ops->flush(bd), 0);
	assert_int_equal(wr(bd, 8, 4, 4, 0), 0);
	assert_int_equal(bd->bd_ops->flush(bd), -EROFS);
	assert_int_equal(bd->bd_ops->flush(bd), -EROFS);
	sx_crashdev_cut_now(fx->fx_cd, SX_CRASH_DROP);
	assert_tags(fx->fx_lower, 0, 4, 2);
	assert_tags(fx->fx_lower, 4, 4, 3);
	assert_tags(fx->fx_lower, 8, 4, 1);
}

/* Deterministic pseudo-random numbers for workloads. */
static u64 rnd(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * A random workload of overlapping writes, FUA writes and flushes, with a
 * shadow model: @cur is what the device shows, @dur what would survive
 * dropping every volatile write.
 */
static void workload(struct fixture *fx, u64 wseed, int nwrites, u8 *cur, u8 *dur)
{
	u8 *buf = malloc(32 * SECT);
	int i;

	assert_non_null(buf);
	memset(cur, 0, DEVSIZE);
	memset(dur, 0, DEVSIZE);
	for (i = 0; i < nwrites; i++) {
		u64 r = rnd(&wseed);
		u64 n = 1 + r % 32, s = (r >> 8) % (NSECT - n + 1);
		unsigned int flags = (r >> 20) % 8 == 0 ? SX_BDEV_FUA : 0;
		u64 j;

		for (j = 0; j < n * SECT; j++)
			buf[j] = (u8)rnd(&wseed);
		assert_int_equal(fx->fx_bd->bd_ops->write(fx->fx_bd, s * SECT, buf,
							  n * SECT, flags), 0);
		memcpy(cur + s * SECT, buf, n * SECT);
		if (flags & SX_BDEV_FUA)
			memcpy(dur + s * SECT, buf, n * SECT);
		if ((r >> 24) % 16 == 0) {
			assert_int_equal(fx->fx_bd->bd_ops->flush(fx->fx_bd), 0);
			memcpy(dur, cur, DEVSIZE);
		}
	}
	free(buf);
}

/* Read the whole lower device into @img. */
static void lower_image(struct fixture *fx, u8 *img)
{
	assert_int_equal(fx->fx_lower->bd_ops->read(fx->fx_lower, 0, img, DEVSIZE), 0);
}

/* Against the shadow model: KEEP gives what the device showed, DROP what was durable. */
static void test_model_keep_drop(void **state)
{
	u8 *cur = malloc(DEVSIZE), *dur = malloc(DEVSIZE), *img = malloc(DEVSIZE);
	u64 wseed;

	assert_non_null(cur);
	assert_non_null(dur);
	assert_non_null(img);
	for (wseed = 1; wseed <= 20; wseed++) {
		struct fixture fx;

		fx_open(&fx, DEVSIZE, SECT, wseed);
		workload(&fx, wseed * 7919, 200, cur, dur);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_KEEP);
		lower_image(&fx, img);
		assert_memory_equal(img, cur, DEVSIZE);
		fx_close(&fx);

		fx_open(&fx, DEVSIZE, SECT, wseed);
		workload(&fx, wseed * 7919, 200, cur, dur);
		sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_DROP);
		lower_image(&fx, img);
		assert_memory_equal(img, dur, DEVSIZE);
		fx_close(&fx);
	}
	free(cur);
	free(dur);
	free(img);
}

/* Run the workload under @seed and return the post-crash image in @img. */
static void crash_image(u64 seed, enum sx_crash_mode mode, u64 cut_at, u8 *img)
{
	u8 *cur = malloc(DEVSIZE), *dur = malloc(DEVSIZE);
	struct fixture fx;

	assert_non_null(cur);
	assert_non_null(dur);
	fx_open(&fx, DEVSIZE, SECT, seed);
	if (cut_at) {
		u8 buf[SECT];

		/* the workload must not reach the cut itself */
		workload(&fx, 424242, cut_at - 1, cur, dur);
		sx_crashdev_cut_at_write(fx.fx_cd, cut_at, mode);
		memset(buf, 0xab, sizeof(buf));
		assert_int_equal(fx.fx_bd->bd_ops->write(fx.fx_bd, 0, buf, SECT, 0), -EIO);
	} else {
		workload(&fx, 424242, 300, cur, dur);
		sx_crashdev_cut_now(fx.fx_cd, mode);
	}
	lower_image(&fx, img);
	fx_close(&fx);
	free(cur);
	free(dur);
}

/* The seed alone decides the fates: same seed, same image; others differ. */
static void test_seed_reproducible(void **state)
{
	u8 *a = malloc(DEVSIZE), *b = malloc(DEVSIZE), *c = malloc(DEVSIZE);

	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);

	crash_image(1234, SX_CRASH_RANDOM, 0, a);
	crash_image(1234, SX_CRASH_RANDOM, 0, b);
	crash_image(1235, SX_CRASH_RANDOM, 0, c);
	assert_memory_equal(a, b, DEVSIZE);
	assert_memory_not_equal(a, c, DEVSIZE);

	crash_image(99, SX_CRASH_TEAR, 150, a);
	crash_image(99, SX_CRASH_TEAR, 150, b);
	crash_image(100, SX_CRASH_TEAR, 150, c);
	assert_memory_equal(a, b, DEVSIZE);
	assert_memory_not_equal(a, c, DEVSIZE);

	free(a);
	free(b);
	free(c);
}

/* Destroying the crash device leaves the lower device and its data. */
static void test_destroy_keeps_lower(void **state)
{
	struct fixture *fx = *state;
	struct sx_bdev *bd2;
	struct sx_crashdev *cd2;

	assert_int_equal(wr(fx->fx_bd, 3, 2, 6, 0), 0);	/* volatile, never cut */
	sx_bdev_destroy(fx->fx_bd);
	fx->fx_bd = NULL;
	assert_tags(fx->fx_lower, 3, 2, 6);

	/* a new wrapper over the same device works; its cut leaves the image */
	assert_int_equal(sx_crashdev_create(fx->fx_lower, 3, &bd2, &cd2), 0);
	assert_int_equal(wr(bd2, 3, 2, 7, 0), 0);
	sx_crashdev_cut_now(cd2, SX_CRASH_DROP);
	sx_bdev_destroy(bd2);
	assert_tags(fx->fx_lower, 3, 2, 6);
	sx_bdev_destroy(fx->fx_lower);
	fx->fx_lower = NULL;
}

/* A file device underneath: the file holds the post-crash image. */
static void test_over_filedev(void **state)
{
	char path[] = "/tmp/sx_test_crashdev_XXXXXX";
	struct fixture fx;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_CREATE, DEVSIZE, &fx.fx_lower), 0);
	assert_int_equal(sx_crashdev_create(fx.fx_lower, 8, &fx.fx_bd, &fx.fx_cd), 0);
	base_image(&fx);
	assert_int_equal(wr(fx.fx_bd, 0, 8, 2, 0), 0);
	assert_int_equal(wr(fx.fx_bd, 10, 1, 3, SX_BDEV_FUA), 0);
	sx_crashdev_cut_now(fx.fx_cd, SX_CRASH_DROP);
	fx_close(&fx);

	assert_int_equal(sx_filedev_open(path, SX_FILEDEV_RDONLY, 0, &fx.fx_lower), 0);
	assert_tags(fx.fx_lower, 0, 10, 1);
	assert_tags(fx.fx_lower, 10, 1, 3);
	assert_tags(fx.fx_lower, 11, 5, 1);
	sx_bdev_destroy(fx.fx_lower);
	unlink(path);
}

/* Bad arguments to create. */
static void test_create_errors(void **state)
{
	struct sx_bdev *bd;
	struct sx_crashdev *cd;

	assert_int_equal(sx_crashdev_create(NULL, 1, &bd, &cd), -EINVAL);
	assert_null(bd);
	assert_null(cd);
}

/* Run every test in this file. */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_passthrough, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop, setup, teardown),
		cmocka_unit_test(test_tear_prefix),
		cmocka_unit_test(test_tear_one_sector),
		cmocka_unit_test(test_tear_large_unit),
		cmocka_unit_test(test_tear_small_unit),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_flush_durable),
		cmocka_unit_test_setup_teardown(test_fua, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_at_write_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_at_write_keep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_at_write_newest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_at_fua_write, setup, teardown),
		cmocka_unit_test(test_cut_at_write_tear),
		cmocka_unit_test_setup_teardown(test_cut_at_write_disarm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_hook, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inject_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inject_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inject_flush, setup, teardown),
		cmocka_unit_test(test_model_keep_drop),
		cmocka_unit_test(test_seed_reproducible),
		cmocka_unit_test_setup_teardown(test_destroy_keeps_lower, setup, teardown),
		cmocka_unit_test(test_over_filedev),
		cmocka_unit_test(test_create_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
