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

	error = tool_open_image(argc, argv, "logprint", &bd);
	if (error)
		return error;
	error = sx_logprint(bd, tool_print_line, stdout);
	sx_bdev_destroy(bd);
	if (error)
		return tool_error(error, "logprint: %s", argv[1]);
	return 0;
}
