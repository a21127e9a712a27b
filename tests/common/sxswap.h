/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Swap tests on the store: files modelled block by block with tags (every
 * 8-byte word of a block holds its tag; tag 0 is a hole or zeroes), so that
 * after swaps, crashes and recovery each block's contents say exactly which
 * block of which file it came from.
 */
#ifndef SXSWAP_H
#define SXSWAP_H

#include "sxtest.h"

#define SXS_MAXB	4096u		/* blocks of a modelled file */

struct sxs_file {
	int	sf_fd;
	u64	sf_size;		/* bytes */
	u64	sf_nblk;		/* blocks the model holds */
	u64	*sf_tag;
};

/* sxs_file_new() / sxs_file_free() / sxs_file_copy() - a model of @nblk blocks */
struct sxs_file *sxs_file_new(u64 nblk);
void sxs_file_free(struct sxs_file *f);
void sxs_file_copy(struct sxs_file *dst, const struct sxs_file *src);

/*
 * sxs_mkimg() - a memory device of @size bytes, mkfs'd with @bs blocks
 * (+atomic_swap); a @logblocks given is taken even if too small
 */
struct sx_bdev *sxs_mkimg(u64 size, u32 bs, u32 logblocks, bool atomic);
/* sxs_tag() - a unique tag for block @blk of file @id at version @ver */
static inline u64 sxs_tag(u32 id, u64 blk, u32 ver)
{
	return ((u64)(id + 1) << 48) | (blk << 8) | (ver & 0xff);
}
/* sxs_write() - write block @blk of @f with @tag (0: zeroes), model too; 0 or -errno */
int sxs_write(struct sx_mount *mp, u32 bs, struct sxs_file *f, u64 blk, u64 tag);
/* sxs_verify() - compare @f with the model: size and every block; 0, or -1 with @msg */
int sxs_verify(struct sx_mount *mp, u32 bs, const struct sxs_file *f, char *msg, size_t len);
/* sxs_tag_of() - the tag a read block holds: its tag, 0 for zeroes, ~0 if mixed */
u64 sxs_tag_of(const void *blk, u32 bs);
/* sxs_model_swap() - swap blocks [@o1, +@n) of @f1 with [@o2, +@n) of @f2 in the model */
void sxs_model_swap(struct sxs_file *f1, u64 o1, struct sxs_file *f2, u64 o2, u64 n);
/* sxs_swap() - sx_swap_file_range() of bytes [@o1, +@len) of @f1 with [@o2, +@len) of @f2 */
int sxs_swap(struct sx_mount *mp, struct sxs_file *f1, u64 o1, struct sxs_file *f2, u64 o2,
	     u64 len, u64 flags);

#endif /* SXSWAP_H */
