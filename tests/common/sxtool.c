// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The tool harness of the test_tool* programs (sxtool.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "sxtool.h"

static char sxt_tool[1024];
static char sxt_dir[1024];

/* Read a whole file into a new string. */
static char *sxt_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t cap = 4096, len = 0, n;
	char *buf = malloc(cap);

	assert_non_null(f);
	assert_non_null(buf);
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

int sxt_tool_setup(const char *who)
{
	const char *t = getenv("SX_TOOL"), *d = getenv("SX_TEST_TMPDIR");

	snprintf(sxt_tool, sizeof(sxt_tool), "%s", t && *t ? t : "build/swapext");
	if (access(sxt_tool, X_OK) != 0) {
		fprintf(stderr, "test_%s: %s is not built\n", who, sxt_tool);
		return -1;
	}
	if (!d || !*d)
		d = getenv("TMPDIR");
	snprintf(sxt_dir, sizeof(sxt_dir), "%s/sx-%s-XXXXXX", d && *d ? d : "/tmp", who);
	assert_non_null(mkdtemp(sxt_dir));
	return 0;
}

int sxt_tool_teardown(void)
{
	char cmd[1100];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sxt_dir);
	return system(cmd) == 0 ? 0 : -1;
}

const char *sxt_tool_dir(void)
{
	return sxt_dir;
}

const char *sxt_path(const char *name)
{
	static char paths[4][1100];
	static unsigned int next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s", sxt_dir, name);
	return p;
}

void sxt_tool_run(struct sxt_run *r, const char *fmt, ...)
{
	/* static: io scripts of a few hundred commands are long */
	static char args[65536], cmd[70000];
	char outp[1100], errp[1100];
	va_list ap;
	int st, n;

	va_start(ap, fmt);
	n = vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(args));
	snprintf(outp, sizeof(outp), "%s/out.txt", sxt_dir);
	snprintf(errp, sizeof(errp), "%s/err.txt", sxt_dir);
	snprintf(cmd, sizeof(cmd), "'%s' %s >'%s' 2>'%s' </dev/null", sxt_tool, args, outp, errp);
	st = system(cmd);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	r->out = sxt_slurp(outp);
	r->err = sxt_slurp(errp);
	if (getenv("SX_TEST_VERBOSE"))
		fprintf(stderr, "$ swapext %.200s -> %d\n%s%s", args, r->status, r->out, r->err);
}

void sxt_run_free(struct sxt_run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}
