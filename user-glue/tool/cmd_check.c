// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext check IMAGE: verify everything on disk; exit 1 on any problem.
 */
#include <stdio.h>
#include "tool.h"

/* Check @path and print the report to stdout. */
int cmd_check(int argc, char **argv)
{
	struct sx_bdev *bd;
	u64 problems = 0;
	int error;

	error = tool_open_image(argc, argv, "check", &bd);
	if (error)
		return error;
	error = sx_check(bd, tool_print_line, stdout, &problems);
	sx_bdev_destroy(bd);
	fflush(stdout);
	if (error)
		return tool_error(error, "check: %s", argv[1]);
	if (problems) {
		tool_fail("check: %s: %llu problem%s found", argv[1],
			  (unsigned long long)problems, problems == 1 ? "" : "s");
		return 1;
	}
	printf("%s: no problems found\n", argv[1]);
	return 0;
}
