/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Running the swapext tool as a program from a cmocka test: the binary is
 * $SX_TOOL (else build/swapext), every run gets its stdout and stderr
 * captured into strings, and a scratch directory holds the images.
 */
#ifndef SX_TESTS_SXTOOL_H
#define SX_TESTS_SXTOOL_H

#include <string.h>

/* What one run of the tool did. */
struct sxt_run {
	int	status;		/* exit status, -1 if killed */
	char	*out;		/* all of stdout */
	char	*err;		/* all of stderr */
};

/*
 * sxt_tool_setup() - find the tool and make a scratch directory
 * "sx-@who-XXXXXX" under $SX_TEST_TMPDIR, $TMPDIR or /tmp.  Returns -1
 * (the group is skipped as failed setup, with a message) if the tool is
 * not built.
 */
int sxt_tool_setup(const char *who);
/* sxt_tool_teardown() - remove the scratch directory and all in it */
int sxt_tool_teardown(void);
/* sxt_tool_dir() - the scratch directory */
const char *sxt_tool_dir(void);
/*
 * sxt_path() - @name inside the scratch directory; the string lives
 * until the fourth call after this one, so one command line can name a few.
 */
const char *sxt_path(const char *name);

/*
 * sxt_tool_run() - run "TOOL ARGS" (ARGS as the shell reads them, stdin
 * from /dev/null); fails the test if the arguments do not fit in 64 KiB.
 * With SX_TEST_VERBOSE set the command and its output go to stderr.
 */
void sxt_tool_run(struct sxt_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* sxt_run_free() - free what a run captured */
void sxt_run_free(struct sxt_run *r);

/* Assert @s contains @sub, showing both if not. */
#define sxt_assert_has(s, sub) do { \
	if (!strstr((s), (sub))) \
		fail_msg("expected \"%s\" in:\n%s", (sub), (s)); \
} while (0)

#endif /* SX_TESTS_SXTOOL_H */
