/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The swapext command-line tool: shared helpers of the subcommands.
 */
#ifndef SX_TOOL_H
#define SX_TOOL_H

#include "sx_platform.h"
#include <swapext/swapext.h>
#include <swapext/device.h>
#include <swapext/format.h>

/* What every subcommand's entry point looks like; returns the exit status. */
typedef int (*tool_cmd_fn)(int argc, char **argv);

int cmd_kmod(int argc, char **argv);
int cmd_mkfs(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_logprint(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_io(int argc, char **argv);
int cmd_defrag(int argc, char **argv);

/* tool_usage() - print the usage line of @cmd (NULL: all) to stderr; returns 1 */
int tool_usage(const char *cmd);

/* tool_error() - print "swapext: WHAT: strerror(@error)" to stderr; returns 1 */
int tool_error(int error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * tool_open_image() - open the one IMAGE argument of "swapext @cmd IMAGE"
 * read-only; returns 0, or the exit status after printing usage or the error
 */
int tool_open_image(int argc, char **argv, const char *cmd, struct sx_bdev **bdp);

/* tool_fail() - print "swapext: WHAT" to stderr; returns 1 */
int tool_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* tool_strerror() - a message for a negative errno */
const char *tool_strerror(int error);

/*
 * tool_parse_size() - parse "123", "4k", "64m", "1g", "2t" (powers of 1024,
 * either case) into bytes.  Return: 0, or -EINVAL (not a size) or -ERANGE.
 */
int tool_parse_size(const char *s, u64 *bytesp);

/* tool_format_size() - "64.0 MiB" style text for @bytes into @buf */
const char *tool_format_size(u64 bytes, char *buf, size_t len);

/* tool_format_lsn() - "cycle/block" text for @lsn into @buf */
const char *tool_format_lsn(u64 lsn, char *buf, size_t len);

/* tool_format_uuid() - the canonical 36-character form of @uuid into @buf */
const char *tool_format_uuid(const u8 *uuid, char *buf, size_t len);

/* tool_print_line() - an sx_report_fn that writes one line to the FILE @arg */
void tool_print_line(void *arg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tool_features() - names of the bits of one feature word, into @buf */
const char *tool_features(u32 word, int which, char *buf, size_t len);

/* An MD5 digest in progress (md5.c). */
struct tool_md5 {
	u32	m_state[4];
	u64	m_bytes;
	u8	m_buf[64];
};

/* tool_md5_init/update/final() - RFC 1321 MD5 of a stream of bytes */
void tool_md5_init(struct tool_md5 *m);
void tool_md5_update(struct tool_md5 *m, const void *data, size_t len);
void tool_md5_final(struct tool_md5 *m, u8 digest[16]);

enum { TOOL_FEAT_COMPAT, TOOL_FEAT_RO_COMPAT, TOOL_FEAT_INCOMPAT, TOOL_FEAT_LOG_INCOMPAT };

#endif /* SX_TOOL_H */
