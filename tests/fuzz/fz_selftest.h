/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The harness's own check (fz_selftest.c), run by fz-replay.
 */
#ifndef FZ_SELFTEST_H
#define FZ_SELFTEST_H

/*
 * fz_selftest() - check that the targets' inputs reach their structures:
 * framed log records are recovered, sparse images load back, the golden
 * trees have the depth the tree targets damage
 * Return: 0, or -1 after saying on stderr what did not hold.
 */
int fz_selftest(void);

#endif /* FZ_SELFTEST_H */
