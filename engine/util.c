// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Engine-wide helpers: messages and corruption reports.
 */
#include "util.h"
#include "mount.h"

/* Format a message prefixed with the mount's name and hand it to the platform. */
void sx_msg(const struct sx_mount *mp, enum sx_log_level level, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sx_log_emit(level, "swapext(%s): %s", mp ? mp->m_name : "-", buf);
}

/* Say which verifier check failed; the caller returns -EFSCORRUPTED. */
void sx_corruption_report(const struct sx_mount *mp, const char *what,
			  const char *func, int line)
{
	sx_msg(mp, SX_LOG_WARN, "corruption: \"%s\" failed in %s:%d", what, func, line);
}
