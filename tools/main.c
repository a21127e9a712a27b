// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext: make, inspect, check and demonstrate swapext filesystem images.
 *
 * This file holds the dispatch to the subcommands, their usage lines and
 * the error printing every subcommand shares.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tool.h"

struct tool_cmd {
	const char	*c_name;
	tool_cmd_fn	c_fn;
	const char	*c_args;
	const char	*c_help;
};

static const struct tool_cmd tool_cmds[] = {
	{ "mkfs", cmd_mkfs, "[-b BLOCKSIZE] [-s SIZE] [-l LOGSIZE] [-L LABEL] [-O atomic_swap] IMAGE",
	  "make a new filesystem (SIZE default 256m for a new or empty file)" },
	{ "info", cmd_info, "IMAGE", "describe a filesystem, without recovering its log" },
	{ "logprint", cmd_logprint, "IMAGE", "decode every record and item of the log" },
	{ "check", cmd_check, "[-s] IMAGE",
	  "verify everything on disk (-s: not who owns each block); exit 1 on any problem" },
	{ "io", cmd_io, "IMAGE -c CMD [-c CMD]...",
	  "run file commands on a mounted image, in order, like xfs_io (see README)" },
	{ "defrag", cmd_defrag, "IMAGE [-n MAXFILES] [-t THRESHOLD] [-v]",
	  "rewrite the most fragmented files (at least THRESHOLD extents, default 2; at most\n"
	  "      MAXFILES of them) into contiguous space through XFS_IOC_SWAPEXT, like xfs_fsr" },
	{ "demo", cmd_demo, "[-j] [-S SEED] [IMAGE]",
	  "an atomic file update, then a large swap cut by a power loss and finished by recovery (-j: a metadata workload instead; IMAGE default build/demo.img)" },
	{ "kmod", cmd_kmod, "load|unload|selftest|attach|detach|shutdown|... (kmod help)",
	  "load the kernel module (libkmod) and drive /dev/swapext-ctl" },
};

/* Print the usage line of @cmd, or of every subcommand, to stderr. */
int tool_usage(const char *cmd)
{
	size_t i;
	bool first = true;

	for (i = 0; i < ARRAY_SIZE(tool_cmds); i++) {
		if (cmd && strcmp(cmd, tool_cmds[i].c_name) != 0)
			continue;
		fprintf(stderr, "%s swapext %s %s\n", first ? "usage:" : "      ",
			tool_cmds[i].c_name, tool_cmds[i].c_args);
		first = false;
	}
	return 1;
}

/* Print the full help to stdout. */
static void tool_help(void)
{
	size_t i;

	printf("swapext %s: tools for swapext filesystem images\n\n", sx_version());
	printf("  swapext --version\n      print the library's version\n");
	for (i = 0; i < ARRAY_SIZE(tool_cmds); i++)
		printf("  swapext %s %s\n      %s\n", tool_cmds[i].c_name, tool_cmds[i].c_args,
		       tool_cmds[i].c_help);
	printf("\nSizes take k, m, g or t suffixes (powers of 1024).\n");
}

/* A message for a negative errno: swapext's own words, else the C library's. */
const char *tool_strerror(int error)
{
	const char *msg = sx_strerror(error);

	if (error < 0 && strcmp(msg, "Unknown error") == 0)
		return strerror(-error);
	return msg;
}

/* Print "swapext: WHAT: strerror" to stderr. */
int tool_error(int error, const char *fmt, ...)
{
	va_list ap;

	fputs("swapext: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", tool_strerror(error));
	return 1;
}

/* Print "swapext: WHAT" to stderr. */
int tool_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("swapext: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* Find the subcommand and run it. */
int main(int argc, char **argv)
{
	size_t i;
	int status;

	if (argc < 2)
		return tool_usage(NULL);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		tool_help();
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("swapext %s\n", sx_version());
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(tool_cmds); i++) {
		if (strcmp(argv[1], tool_cmds[i].c_name) != 0)
			continue;
		sx_thread_enter();
		status = tool_cmds[i].c_fn(argc - 1, argv + 1);
		fflush(stdout);
		sx_thread_exit();
		return status;
	}
	tool_fail("unknown command '%s'", argv[1]);
	return tool_usage(NULL);
}
