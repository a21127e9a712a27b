// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * In-memory capture of report lines (see sxtext.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxtext.h"

/* Append one formatted line; a line holding a newline is a caller bug. */
void sxt_text_line(void *arg, const char *fmt, ...)
{
	struct sxt_text *t = arg;
	char line[2048];
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (strchr(line, '\n')) {
		fprintf(stderr, "report line holds a newline: %s\n", line);
		abort();
	}
	n = strlen(line);
	if (t->len + n + 2 > t->cap) {
		t->cap = (t->len + n + 2) * 2;
		t->text = realloc(t->text, t->cap);
		if (!t->text)
			abort();
	}
	memcpy(t->text + t->len, line, n);
	t->len += n;
	t->text[t->len++] = '\n';
	t->text[t->len] = '\0';
	t->lines++;
	if (!strncmp(line, "problem: ", 9))
		t->problem_lines++;
}

/* True if the text holds @s. */
bool sxt_text_has(const struct sxt_text *t, const char *s)
{
	return t->text && strstr(t->text, s) != NULL;
}

/* Free the text. */
void sxt_text_free(struct sxt_text *t)
{
	free(t->text);
	memset(t, 0, sizeof(*t));
}
