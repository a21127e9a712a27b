/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * `swapext demo`: the two demos (the atomic swap, the journal) and what
 * they share.
 */
#ifndef SX_TOOL_DEMO_H
#define SX_TOOL_DEMO_H

#include "tool.h"

#define DEMO_IMAGE		"build/demo.img"
#define DEMO_DEFAULT_SEED	4

/* demo_swap() - the atomic update and the crashed large swap; exit status */
int demo_swap(const char *path, u64 seed);

/* demo_journal() - the metadata workload cut by a power loss; exit status */
int demo_journal(const char *path, u64 seed);

/* demo_rand() - the next number of the splitmix64 sequence in @s */
u64 demo_rand(u64 *s);

/* demo_log() / demo_log_quiet() - engine messages shown indented, or dropped */
void demo_log(void *arg, enum sx_log_level level, const char *msg);
void demo_log_quiet(void *arg, enum sx_log_level level, const char *msg);

/* demo_mkdir_for() - make the directory that will hold @path (one level) */
int demo_mkdir_for(const char *path);

/* The checker's report, printed indented. */
struct demo_check {
	u64	dc_lines;
};
void demo_check_line(void *arg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* SX_TOOL_DEMO_H */
