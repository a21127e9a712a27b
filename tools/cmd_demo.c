// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext demo [-j] [-S SEED] [IMAGE]: the headline of swapext in one run
 * (demo_swap.c), or with -j what the journal underneath does
 * (demo_journal.c).  Both write their image to IMAGE so that it can be
 * looked at afterwards.
 */
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "demo.h"

u64 demo_rand(u64 *s)
{
	u64 z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void demo_log(void *arg, enum sx_log_level level, const char *msg)
{
	if (level <= SX_LOG_INFO)
		printf("    | %s\n", msg);
}

/* For runs whose engine messages are expected and not worth showing. */
void demo_log_quiet(void *arg, enum sx_log_level level, const char *msg)
{
}

int demo_mkdir_for(const char *path)
{
	char *copy = strdup(path), *dir;
	int error = 0;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	if (strcmp(dir, ".") && strcmp(dir, "/") && mkdir(dir, 0777) < 0 && errno != EEXIST)
		error = -errno;
	free(copy);
	return error;
}

void demo_check_line(void *arg, const char *fmt, ...)
{
	struct demo_check *dc = arg;
	va_list ap;

	dc->dc_lines++;
	fputs("    ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

/* Parse the demo's arguments. */
static int demo_args(int argc, char **argv, const char **path, u64 *seed, bool *journal)
{
	char *end;
	int c;

	*path = DEMO_IMAGE;
	*seed = DEMO_DEFAULT_SEED;
	*journal = false;
	optind = 1;
	while ((c = getopt(argc, argv, "jS:")) != -1) {
		switch (c) {
		case 'j':
			*journal = true;
			break;
		case 'S':
			errno = 0;
			*seed = strtoull(optarg, &end, 0);
			if (errno || !*optarg || *end) {
				tool_fail("demo: bad seed '%s'", optarg);
				return -EINVAL;
			}
			break;
		default:
			return -EINVAL;
		}
	}
	if (optind < argc - 1) {
		tool_fail("demo: too many arguments");
		return -EINVAL;
	}
	if (optind == argc - 1)
		*path = argv[optind];
	return 0;
}

int cmd_demo(int argc, char **argv)
{
	const char *path;
	bool journal;
	u64 seed;
	int error;

	if (demo_args(argc, argv, &path, &seed, &journal))
		return tool_usage("demo");
	error = demo_mkdir_for(path);
	if (error)
		return tool_error(error, "demo: cannot make the directory for %s", path);
	/* line-buffered, so that the output interleaves right with stderr */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return journal ? demo_journal(path, seed) : demo_swap(path, seed);
}
