/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sxb backend of the store (tests/common/sxb.h). */
#ifndef SXB_STORE_H
#define SXB_STORE_H

#include "sxb.h"

struct sx_mount;

/* sxb_store_init() - @b drives the files of the mount @mp (block size @bs) */
void sxb_store_init(struct sxb *b, struct sx_mount *mp, uint32_t bs);

#endif /* SXB_STORE_H */
