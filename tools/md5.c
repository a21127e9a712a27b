// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * MD5 (RFC 1321) for `swapext io ... -c md5`: a digest of a file's
 * contents to compare with md5sum of the same bytes elsewhere.
 */
#include <string.h>
#include "tool.h"

/* Per-round shift amounts. */
static const u8 md5_shift[64] = {
	7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
	5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
	4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
	6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

/* floor(abs(sin(i + 1)) * 2^32), from the RFC. */
static const u32 md5_k[64] = {
	0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
	0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
	0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
	0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
	0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
	0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
	0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
	0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
	0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
	0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
	0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

/* Rotate left. */
static inline u32 md5_rol(u32 x, u32 n)
{
	return (x << n) | (x >> (32 - n));
}

/* Mix one 64-byte block into the state. */
static void md5_block(struct tool_md5 *m, const u8 *p)
{
	u32 w[16], a = m->m_state[0], b = m->m_state[1], c = m->m_state[2],
	    d = m->m_state[3], f, t;
	int i, g;

	for (i = 0; i < 16; i++)
		w[i] = (u32)p[4 * i] | (u32)p[4 * i + 1] << 8 | (u32)p[4 * i + 2] << 16 |
		       (u32)p[4 * i + 3] << 24;
	for (i = 0; i < 64; i++) {
		if (i < 16) {
			f = (b & c) | (~b & d);
			g = i;
		} else if (i < 32) {
			f = (d & b) | (~d & c);
			g = (5 * i + 1) % 16;
		} else if (i < 48) {
			f = b ^ c ^ d;
			g = (3 * i + 5) % 16;
		} else {
			f = c ^ (b | ~d);
			g = (7 * i) % 16;
		}
		t = d;
		d = c;
		c = b;
		b = b + md5_rol(a + f + md5_k[i] + w[g], md5_shift[i]);
		a = t;
	}
	m->m_state[0] += a;
	m->m_state[1] += b;
	m->m_state[2] += c;
	m->m_state[3] += d;
}

/* Start a digest. */
void tool_md5_init(struct tool_md5 *m)
{
	m->m_state[0] = 0x67452301;
	m->m_state[1] = 0xefcdab89;
	m->m_state[2] = 0x98badcfe;
	m->m_state[3] = 0x10325476;
	m->m_bytes = 0;
}

/* Add @len bytes. */
void tool_md5_update(struct tool_md5 *m, const void *data, size_t len)
{
	const u8 *p = data;
	size_t have = (size_t)(m->m_bytes % 64), take;

	m->m_bytes += len;
	if (have) {
		take = 64 - have < len ? 64 - have : len;
		memcpy(m->m_buf + have, p, take);
		p += take;
		len -= take;
		if (have + take < 64)
			return;
		md5_block(m, m->m_buf);
	}
	for (; len >= 64; p += 64, len -= 64)
		md5_block(m, p);
	memcpy(m->m_buf, p, len);
}

/* Finish: pad, add the bit length, and write the 16-byte digest. */
void tool_md5_final(struct tool_md5 *m, u8 digest[16])
{
	u64 bits = m->m_bytes * 8;
	u8 pad[72];
	size_t have = (size_t)(m->m_bytes % 64), n = have < 56 ? 56 - have : 120 - have;
	int i;

	memset(pad, 0, sizeof(pad));
	pad[0] = 0x80;
	for (i = 0; i < 8; i++)
		pad[n + i] = (u8)(bits >> (8 * i));
	tool_md5_update(m, pad, n + 8);
	for (i = 0; i < 16; i++)
		digest[i] = (u8)(m->m_state[i / 4] >> (8 * (i % 4)));
}
