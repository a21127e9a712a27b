/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sxb backend of a real filesystem (tests/common/sxb.h). */
#ifndef SXB_POSIX_H
#define SXB_POSIX_H

#include "sxb.h"

struct sxb_posix {
	const char	*dir;		/* where the files are */
};

/* sxb_posix_init() - @b drives files in @dir (block size @bs) */
void sxb_posix_init(struct sxb *b, struct sxb_posix *px, const char *dir, uint32_t bs);

#endif /* SXB_POSIX_H */
