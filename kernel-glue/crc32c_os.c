// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * crc32c through the kernel's library (lib/libcrc32c, which picks the
 * fastest crypto driver: crc32c-intel where the CPU has it).  The module
 * therefore depends on libcrc32c and, through it, a crc32c crypto driver
 * such as crc32c_generic.
 */
#include "sx_platform.h"
#include <linux/crc32c.h>

/* Update a running crc32c with @len bytes at @buf, no inversions. */
u32 sx_crc32c(u32 crc, const void *buf, size_t len)
{
	const u8 *p = buf;

	/* crc32c() takes an unsigned int length */
	while (len > UINT_MAX) {
		crc = crc32c(crc, p, UINT_MAX);
		p += UINT_MAX;
		len -= UINT_MAX;
	}
	return crc32c(crc, p, (unsigned int)len);
}
