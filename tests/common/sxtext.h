/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Capture of line-oriented output (checker reports, log printer lines) in
 * memory, for tests that search it.
 */
#ifndef SXTEXT_H
#define SXTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sxt_text {
	char		*text;		/* every line, each ended by '\n' */
	size_t		len;
	size_t		cap;
	uint64_t	lines;
	uint64_t	problem_lines;	/* lines starting with "problem: " */
};

/* sxt_text_line() - an sx_report_fn that appends one line to a struct sxt_text */
void sxt_text_line(void *arg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* sxt_text_has() - true if the captured text holds @s */
bool sxt_text_has(const struct sxt_text *t, const char *s);
/* sxt_text_free() - free the text and reset @t */
void sxt_text_free(struct sxt_text *t);

#endif /* SXTEXT_H */
