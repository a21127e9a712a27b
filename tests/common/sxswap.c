// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Swap test helpers: tagged blocks and the block model of files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxswap.h"

#define SXS_VERIFY_RUN	256u	/* blocks read at once */

struct sx_bdev *sxs_mkimg(u64 size, u32 bs, u32 logblocks, bool atomic)
{
	static const u8 uuid[16] = { 0x5a, 0x4b, 0xe5, 0x7e, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	struct sx_mkfs_opts mo = { .mk_blocksize = bs, .mk_logblocks = logblocks };
	struct sx_bdev *bd;

	mo.mk_uuid = uuid;
	/* a test that picks the log's size picks it for the log's sake */
	if (logblocks)
		mo.mk_flags = SX_MKFS_SMALL_LOG;
	if (atomic)
		mo.mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP;
	if (sx_memdev_create(size, 512, &bd) || sx_mkfs(bd, &mo)) {
		fprintf(stderr, "sxs_mkimg failed\n");
		abort();
	}
	return bd;
}

struct sxs_file *sxs_file_new(u64 nblk)
{
	struct sxs_file *f = calloc(1, sizeof(*f));

	f->sf_nblk = nblk;
	f->sf_tag = calloc(nblk, sizeof(u64));
	f->sf_fd = -1;
	return f;
}

void sxs_file_free(struct sxs_file *f)
{
	if (f)
		free(f->sf_tag);
	free(f);
}

void sxs_file_copy(struct sxs_file *dst, const struct sxs_file *src)
{
	dst->sf_size = src->sf_size;
	memcpy(dst->sf_tag, src->sf_tag, src->sf_nblk * sizeof(u64));
}

int sxs_write(struct sx_mount *mp, u32 bs, struct sxs_file *f, u64 blk, u64 tag)
{
	u64 *buf = malloc(bs);
	u32 i;
	s64 n;

	for (i = 0; i < bs / 8; i++)
		buf[i] = tag;
	n = sx_pwrite(mp, f->sf_fd, buf, bs, blk * bs);
	free(buf);
	if (n != (s64)bs)
		return n < 0 ? (int)n : -EIO;
	f->sf_tag[blk] = tag;
	if ((blk + 1) * bs > f->sf_size)
		f->sf_size = (blk + 1) * bs;
	return 0;
}

u64 sxs_tag_of(const void *blk, u32 bs)
{
	const u64 *w = blk;
	u32 i;

	for (i = 1; i < bs / 8; i++)
		if (w[i] != w[0])
			return ~0ull;
	return w[0];
}

int sxs_verify(struct sx_mount *mp, u32 bs, const struct sxs_file *f, char *msg, size_t len)
{
	struct sx_stat st;
	u8 *buf;
	u64 b, nb, t;
	int error;

	error = sx_fstat(mp, f->sf_fd, &st);
	if (error) {
		snprintf(msg, len, "fstat: %s", sx_strerror(error));
		return -1;
	}
	if (st.st_size != f->sf_size) {
		snprintf(msg, len, "size %llu, model %llu", (unsigned long long)st.st_size,
			 (unsigned long long)f->sf_size);
		return -1;
	}
	nb = sx_howmany(f->sf_size, bs);
	/* read in runs of blocks: one pread per block made large files slow to check */
	buf = malloc((size_t)SXS_VERIFY_RUN * bs);
	for (b = 0; b < nb; b++) {
		u64 want = f->sf_tag[b];
		u64 got_len = sx_min((u64)bs, f->sf_size - b * bs);
		const u8 *blk;

		if (b % SXS_VERIFY_RUN == 0) {
			u64 run = sx_min(f->sf_size - b * bs, (u64)SXS_VERIFY_RUN * bs);

			if (sx_pread(mp, f->sf_fd, buf, run, b * bs) != (s64)run) {
				snprintf(msg, len, "read of blocks from %llu",
					 (unsigned long long)b);
				free(buf);
				return -1;
			}
		}
		blk = buf + (b % SXS_VERIFY_RUN) * bs;
		if (got_len < bs) {
			/* a partial EOF block: compare what is inside EOF */
			const u64 *w = (const u64 *)blk;
			u32 i;

			for (i = 0; i < got_len / 8; i++)
				if (w[i] != want)
					break;
			t = i == got_len / 8 ? want : w[i];
		} else {
			t = sxs_tag_of(blk, bs);
		}
		if (t != want) {
			snprintf(msg, len, "block %llu holds tag %llx, model %llx",
				 (unsigned long long)b, (unsigned long long)t,
				 (unsigned long long)want);
			free(buf);
			return -1;
		}
	}
	free(buf);
	return 0;
}

void sxs_model_swap(struct sxs_file *f1, u64 o1, struct sxs_file *f2, u64 o2, u64 n)
{
	u64 i, t;

	for (i = 0; i < n; i++) {
		t = f1->sf_tag[o1 + i];
		f1->sf_tag[o1 + i] = f2->sf_tag[o2 + i];
		f2->sf_tag[o2 + i] = t;
	}
}

int sxs_swap(struct sx_mount *mp, struct sxs_file *f1, u64 o1, struct sxs_file *f2, u64 o2,
	     u64 len, u64 flags)
{
	struct file_swap_range fsr;

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = f1->sf_fd;
	fsr.file1_offset = (s64)o1;
	fsr.file2_offset = (s64)o2;
	fsr.length = (s64)len;
	fsr.flags = flags;
	return sx_swap_file_range(mp, f2->sf_fd, &fsr);
}
