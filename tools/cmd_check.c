// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext check [-s] IMAGE: verify everything on disk; exit 1 on any
 * problem.  -s leaves out the walk of every file (who owns each block), for
 * images whose blocks were allocated below the file layer.
 */
#include <stdio.h>
#include <string.h>
#include "tool.h"

/* Check @path and print the report to stdout. */
int cmd_check(int argc, char **argv)
{
	struct sx_bdev *bd;
	u64 problems = 0;
	u32 flags = 0;
	int error;

	if (argc > 1 && !strcmp(argv[1], "-s")) {
		flags |= SX_CHECK_SPACE_ONLY;
		argc--;
		argv++;
	}
	error = tool_open_image(argc, argv, "check", &bd);
	if (error)
		return error;
	error = sx_check_flags(bd, flags, tool_print_line, stdout, &problems);
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
