/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for sx_crc32c(): published check values, the kernel's
 * no-inversion convention, incremental use, unaligned buffers, and random
 * buffers against a bitwise reference.  Every test runs once per
 * implementation (slice-by-8, and SSE4.2 where the CPU has it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "sx_platform.h"

/* The on-disk checksum: inverted crc32c, as sx_cksum() in engine/util.h. */
static u32 cksum(const void *buf, size_t len)
{
	return ~sx_crc32c(~0u, buf, len);
}

/* Bitwise reference: one polynomial division step per bit. */
static u32 ref_crc32c(u32 crc, const void *buf, size_t len)
{
	const u8 *p = buf;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return crc;
}

/* Deterministic xorshift64 for test data. */
static u64 rnd(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Fill @buf with pseudo-random bytes from seed @seed. */
static void fill_random(u8 *buf, size_t len, u64 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)rnd(&seed);
}

/* Select the implementation named by the test's state, or skip. */
static int setup_impl(void **state)
{
	int error = sx_crc32c_select(*state);

	if (error == -EOPNOTSUPP) {
		print_message("crc32c implementation %s not on this CPU\n",
			      (const char *)*state);
		/* the test body skips when it sees the NULL state */
		*state = NULL;
		return 0;
	}
	return error;
}

/* Back to the default implementation. */
static int teardown_impl(void **state)
{
	return sx_crc32c_select(NULL);
}

#define SKIP_IF_UNAVAILABLE(state) do { if (!*(state)) skip(); } while (0)

/* The standard check value and the RFC 3720 (iSCSI) vectors. */
static void test_known_answers(void **state)
{
	static const u8 iscsi_read[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	u8 buf[32];
	int i;

	SKIP_IF_UNAVAILABLE(state);
	assert_int_equal(cksum("123456789", 9), 0xE3069283u);

	memset(buf, 0, sizeof(buf));
	assert_int_equal(cksum(buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(cksum(buf, 32), 0x62A8AB43u);
	for (i = 0; i < 32; i++)
		buf[i] = i;
	assert_int_equal(cksum(buf, 32), 0x46DD794Eu);
	for (i = 0; i < 32; i++)
		buf[i] = 31 - i;
	assert_int_equal(cksum(buf, 32), 0x113FDB5Cu);
	assert_int_equal(cksum(iscsi_read, sizeof(iscsi_read)), 0xD9963A56u);
}

/* The kernel's convention: the running value goes in and out untouched. */
static void test_no_inversion(void **state)
{
	SKIP_IF_UNAVAILABLE(state);
	/* nothing to add: the running value comes back as it went in */
	assert_int_equal(sx_crc32c(0, "", 0), 0);
	assert_int_equal(sx_crc32c(0x12345678u, "", 0), 0x12345678u);
	assert_int_equal(cksum("", 0), 0);
	/* raw value of the check string, before the caller's final inversion */
	assert_int_equal(sx_crc32c(~0u, "123456789", 9), ~0xE3069283u);
	/* zeros through a zero register stay zero: no hidden pre-inversion */
	assert_int_equal(sx_crc32c(0, "\0\0\0\0\0\0\0\0\0\0\0\0", 12), 0);
	assert_int_equal(sx_crc32c(0, "123456789", 9), ref_crc32c(0, "123456789", 9));
}

/* Any split of a buffer gives the one-shot result. */
static void test_incremental(void **state)
{
	static u8 buf[4096];
	u64 seed = 0x1234;
	u32 whole, crc;
	size_t pos, n;
	int round;

	SKIP_IF_UNAVAILABLE(state);
	fill_random(buf, sizeof(buf), 99);
	whole = sx_crc32c(~0u, buf, sizeof(buf));
	assert_int_equal(whole, ref_crc32c(~0u, buf, sizeof(buf)));

	for (pos = 0; pos <= 64; pos++) {
		crc = sx_crc32c(~0u, buf, pos);
		crc = sx_crc32c(crc, buf + pos, sizeof(buf) - pos);
		assert_int_equal(crc, whole);
	}
	for (round = 0; round < 200; round++) {
		crc = ~0u;
		pos = 0;
		while (pos < sizeof(buf)) {
			n = rnd(&seed) % 77;
			if (n > sizeof(buf) - pos)
				n = sizeof(buf) - pos;
			crc = sx_crc32c(crc, buf + pos, n);
			pos += n;
		}
		assert_int_equal(crc, whole);
	}
}

/* Buffers starting at every alignment give the same checksum. */
static void test_unaligned(void **state)
{
	static u8 src[1024], shifted[1024 + 16];
	size_t lens[] = { 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 1024 };
	size_t li, shift;

	SKIP_IF_UNAVAILABLE(state);
	fill_random(src, sizeof(src), 7);
	for (li = 0; li < ARRAY_SIZE(lens); li++) {
		u32 want = ref_crc32c(~0u, src, lens[li]);

		for (shift = 0; shift < 16; shift++) {
			memcpy(shifted + shift, src, lens[li]);
			assert_int_equal(sx_crc32c(~0u, shifted + shift, lens[li]), want);
		}
	}
}

/* Random lengths, offsets and seeds against the bitwise reference. */
static void test_random_vs_reference(void **state)
{
	size_t size = 1 << 17;
	u8 *buf = malloc(size);
	u64 seed = 0xC0FFEE;
	int round;

	SKIP_IF_UNAVAILABLE(state);
	assert_non_null(buf);
	fill_random(buf, size, 3);
	for (round = 0; round < 3000; round++) {
		size_t off = rnd(&seed) % 64;
		size_t len = rnd(&seed) % (round < 2900 ? 600 : size - 64);
		u32 init = (u32)rnd(&seed);

		assert_int_equal(sx_crc32c(init, buf + off, len),
				 ref_crc32c(init, buf + off, len));
	}
	free(buf);
}

/* A checksum stored inside the bytes it covers, as metadata headers do. */
static void test_cksum_field(void **state)
{
	u8 block[512];
	u32 crc, stored;

	SKIP_IF_UNAVAILABLE(state);
	fill_random(block, sizeof(block), 11);
	memset(block + 8, 0, 4);
	crc = cksum(block, sizeof(block));
	stored = cpu_to_le32(crc);
	memcpy(block + 8, &stored, 4);
	/* verification: zero the field again and recompute */
	memcpy(&stored, block + 8, 4);
	memset(block + 8, 0, 4);
	assert_int_equal(le32_to_cpu(stored), cksum(block, sizeof(block)));
	/* one flipped bit anywhere changes it */
	block[300] ^= 0x10;
	assert_int_not_equal(le32_to_cpu(stored), cksum(block, sizeof(block)));
}

/* The selector refuses names it does not know. */
static void test_select(void **state)
{
	assert_int_equal(sx_crc32c_select("no-such-impl"), -ENOENT);
	assert_int_equal(sx_crc32c_select("sw"), 0);
	assert_int_equal(sx_crc32c_select(NULL), 0);
}

#define IMPL_TEST(impl, f) { impl ": " #f, f, setup_impl, teardown_impl, impl }
#define IMPL_TESTS(impl) \
	IMPL_TEST(impl, test_known_answers), \
	IMPL_TEST(impl, test_no_inversion), \
	IMPL_TEST(impl, test_incremental), \
	IMPL_TEST(impl, test_unaligned), \
	IMPL_TEST(impl, test_random_vs_reference), \
	IMPL_TEST(impl, test_cksum_field)

/* Run every test in this file. */
int main(void)
{
	const struct CMUnitTest tests[] = {
		IMPL_TESTS("sw"),
		IMPL_TESTS("sse4.2"),
		cmocka_unit_test(test_select),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
