// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Helpers of the swapext tool: size parsing and the formatting of sizes,
 * LSNs, uuids and feature words.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "tool.h"

/* Parse a byte count with an optional k/m/g/t suffix. */
int tool_parse_size(const char *s, u64 *bytesp)
{
	u64 v = 0, mult = 1;
	const char *p = s;

	if (!s || !isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (~0ull - (u64)(*p - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (u64)(*p - '0');
	}
	switch (tolower((unsigned char)*p)) {
	case '\0':
		break;
	case 'k':
		mult = 1ull << 10;
		break;
	case 'm':
		mult = 1ull << 20;
		break;
	case 'g':
		mult = 1ull << 30;
		break;
	case 't':
		mult = 1ull << 40;
		break;
	default:
		return -EINVAL;
	}
	if (*p) {
		p++;
		/* allow "64m", "64mb", "64MiB" */
		if (!strcasecmp(p, "b") || !strcasecmp(p, "ib"))
			p += strlen(p);
		if (*p)
			return -EINVAL;
	}
	if (v > ~0ull / mult)
		return -ERANGE;
	*bytesp = v * mult;
	return 0;
}

/* "64.0 MiB" for @bytes. */
const char *tool_format_size(u64 bytes, char *buf, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024.0 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

/* "cycle/block" for @lsn. */
const char *tool_format_lsn(u64 lsn, char *buf, size_t len)
{
	snprintf(buf, len, "%u/%u", SX_LSN_CYCLE(lsn), SX_LSN_BLOCK(lsn));
	return buf;
}

/* The canonical text form of a uuid. */
const char *tool_format_uuid(const u8 *u, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		 u[12], u[13], u[14], u[15]);
	return buf;
}

/* An sx_report_fn writing one line to a stdio stream. */
void tool_print_line(void *arg, const char *fmt, ...)
{
	FILE *f = arg ? arg : stdout;
	va_list ap;

	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

/* Names of the set bits of a feature word; unknown bits in hex. */
const char *tool_features(u32 word, int which, char *buf, size_t len)
{
	u32 known = 0;
	size_t used = 0;

	buf[0] = '\0';
	if (which == TOOL_FEAT_LOG_INCOMPAT && (word & SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP)) {
		used += snprintf(buf + used, len - used, "atomic_swap");
		known |= SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
	}
	if (word & ~known && used < len)
		used += snprintf(buf + used, len - used, "%sunknown 0x%x", used ? ", " : "",
				 word & ~known);
	if (!word)
		snprintf(buf, len, "none");
	return buf;
}

/* Open the single IMAGE argument of a read-only subcommand. */
int tool_open_image(int argc, char **argv, const char *cmd, struct sx_bdev **bdp)
{
	int error;

	if (argc != 2 || argv[1][0] == '-') {
		if (argc > 1 && argv[1][0] == '-')
			tool_fail("%s: unknown option '%s'", cmd, argv[1]);
		return tool_usage(cmd);
	}
	error = sx_filedev_open(argv[1], SX_FILEDEV_RDONLY, 0, bdp);
	if (error)
		return tool_error(error, "%s: cannot open %s", cmd, argv[1]);
	return 0;
}
