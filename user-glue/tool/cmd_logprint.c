// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext logprint IMAGE: decode every record and item of the log.
 */
#include <stdio.h>
#include "tool.h"

/* Print the log of @path to stdout. */
int cmd_logprint(int argc, char **argv)
{
	struct sx_bdev *bd;
	int error;

	if (argc != 2 || argv[1][0] == '-') {
		if (argc > 1 && argv[1][0] == '-')
			tool_fail("logprint: unknown option '%s'", argv[1]);
		return tool_usage("logprint");
	}
	error = sx_filedev_open(argv[1], SX_FILEDEV_RDONLY, 0, &bd);
	if (error)
		return tool_error(error, "logprint: cannot open %s", argv[1]);
	error = sx_logprint(bd, tool_print_line, stdout);
	sx_bdev_destroy(bd);
	if (error)
		return tool_error(error, "logprint: %s", argv[1]);
	return 0;
}
