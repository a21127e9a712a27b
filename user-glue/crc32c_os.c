/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * crc32c (Castagnoli, reflected polynomial 0x82F63B78) with the kernel's
 * crc32c() convention: the caller passes the running value and no
 * inversion happens here.
 *
 * Two implementations: slice-by-8 tables (portable) and the SSE4.2 crc32
 * instruction, which computes exactly the same reflected remainder.  The
 * best one available is chosen on first use.
 */
#define _GNU_SOURCE
#include "sx_platform.h"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define SX_CRC32C_HAVE_SSE42	1
#else
#define SX_CRC32C_HAVE_SSE42	0
#endif

#define SX_CRC32C_POLY	0x82F63B78u

static u32 sx_crc32c_table[8][256];
static pthread_once_t sx_crc32c_once = PTHREAD_ONCE_INIT;

typedef u32 (*sx_crc32c_fn)(u32 crc, const u8 *p, size_t len);
static sx_crc32c_fn sx_crc32c_impl_fn;

/* Load 8 bytes as a little-endian word, whatever their alignment. */
static inline u64 sx_crc32c_load64(const u8 *p)
{
	u64 v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* Byte-at-a-time step: the tail and the unaligned head of a buffer. */
static inline u32 sx_crc32c_byte(u32 crc, u8 b)
{
	return sx_crc32c_table[0][(crc ^ b) & 0xff] ^ (crc >> 8);
}

/*
 * Slice-by-8: the crc of eight bytes is the xor of eight table lookups,
 * table k giving the effect of a byte followed by k zero bytes.
 */
static u32 sx_crc32c_sw(u32 crc, const u8 *p, size_t len)
{
	while (len >= 8) {
		u64 w = sx_crc32c_load64(p) ^ crc;

		crc = sx_crc32c_table[7][w & 0xff] ^
		      sx_crc32c_table[6][(w >> 8) & 0xff] ^
		      sx_crc32c_table[5][(w >> 16) & 0xff] ^
		      sx_crc32c_table[4][(w >> 24) & 0xff] ^
		      sx_crc32c_table[3][(w >> 32) & 0xff] ^
		      sx_crc32c_table[2][(w >> 40) & 0xff] ^
		      sx_crc32c_table[1][(w >> 48) & 0xff] ^
		      sx_crc32c_table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = sx_crc32c_byte(crc, *p++);
	return crc;
}

#if SX_CRC32C_HAVE_SSE42
/* The crc32 instruction, eight bytes at a time. */
__attribute__((target("sse4.2")))
static u32 sx_crc32c_sse42(u32 crc, const u8 *p, size_t len)
{
#ifdef __x86_64__
	u64 c = crc;

	while (len >= 8) {
		u64 w;

		memcpy(&w, p, sizeof(w));
		c = _mm_crc32_u64(c, w);
		p += 8;
		len -= 8;
	}
	crc = (u32)c;
#endif
	while (len >= 4) {
		u32 w;

		memcpy(&w, p, sizeof(w));
		crc = _mm_crc32_u32(crc, w);
		p += 4;
		len -= 4;
	}
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}

/* The crc32-instruction implementation, if this CPU has it. */
static sx_crc32c_fn sx_crc32c_hw(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2") ? sx_crc32c_sse42 : NULL;
}
#else
/* No crc32 instruction on this architecture. */
static sx_crc32c_fn sx_crc32c_hw(void)
{
	return NULL;
}
#endif

/* Build the slice-by-8 tables and pick the fastest implementation. */
static void sx_crc32c_init(void)
{
	unsigned int i, j, k;

	for (i = 0; i < 256; i++) {
		u32 c = i;

		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ ((c & 1) ? SX_CRC32C_POLY : 0);
		sx_crc32c_table[0][i] = c;
	}
	for (k = 1; k < 8; k++)
		for (i = 0; i < 256; i++) {
			u32 c = sx_crc32c_table[k - 1][i];

			sx_crc32c_table[k][i] = (c >> 8) ^ sx_crc32c_table[0][c & 0xff];
		}

	sx_crc32c_impl_fn = sx_crc32c_hw() ?: sx_crc32c_sw;
}

/* Update a running crc32c with @len bytes at @buf. */
u32 sx_crc32c(u32 crc, const void *buf, size_t len)
{
	sx_crc32c_fn fn;

	pthread_once(&sx_crc32c_once, sx_crc32c_init);
	fn = __atomic_load_n(&sx_crc32c_impl_fn, __ATOMIC_RELAXED);
	return fn(crc, buf, len);
}

/* Choose the implementation by name ("sw", "sse4.2"; NULL: the best). */
int sx_crc32c_select(const char *name)
{
	sx_crc32c_fn fn;

	pthread_once(&sx_crc32c_once, sx_crc32c_init);
	if (!name)
		fn = sx_crc32c_hw() ?: sx_crc32c_sw;
	else if (!strcmp(name, "sw"))
		fn = sx_crc32c_sw;
	else if (!strcmp(name, "sse4.2"))
		fn = sx_crc32c_hw();
	else
		return -ENOENT;
	if (!fn)
		return -EOPNOTSUPP;
	__atomic_store_n(&sx_crc32c_impl_fn, fn, __ATOMIC_RELAXED);
	return 0;
}
