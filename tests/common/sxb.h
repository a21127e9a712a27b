/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sxb: one set of file operations over two hosts of the swap core, so the
 * same test code runs on the store (the library's public API,
 * tests/common/sxb_store.c) and on a real filesystem through POSIX calls
 * and the FISWAPRANGE ioctl (XFS in the qemu guest, tests/xfs/sxb_posix.c).
 *
 * Everything here uses only the C library and <swapext/fsr.h>: the guest
 * program is linked -static without libswapext.  Every operation returns 0
 * (or a byte count) or a negative errno, as the store's API does.
 */
#ifndef SXB_H
#define SXB_H

#include <stdint.h>
#include <stdio.h>
#include <swapext/fsr.h>

/* Inode flags a test sets (immutable, append-only). */
#define SXB_IMMUTABLE	(1u << 0)
#define SXB_APPEND	(1u << 1)

struct sxb_stat {
	uint64_t	ino;
	uint64_t	size;
	uint64_t	blocks;		/* 512-byte units */
	int64_t		mtime_sec, ctime_sec;
	int32_t		mtime_nsec, ctime_nsec;
};

struct sxb {
	const char	*name;		/* "store", "xfs" */
	void		*ctx;
	uint32_t	bs;		/* block size */
	/* create (truncated to 0) or open a file read-write */
	int	(*create)(void *ctx, const char *name, int *fd);
	int	(*close)(void *ctx, int fd);
	int	(*unlink)(void *ctx, const char *name);
	int64_t	(*pwrite)(void *ctx, int fd, const void *buf, uint64_t len, uint64_t off);
	int64_t	(*pread)(void *ctx, int fd, void *buf, uint64_t len, uint64_t off);
	int	(*truncate)(void *ctx, int fd, uint64_t size);
	/* allocate unwritten blocks and grow the size (fallocate mode 0) */
	int	(*fallocate)(void *ctx, int fd, uint64_t off, uint64_t len);
	/* free the blocks of a range, size kept */
	int	(*punch)(void *ctx, int fd, uint64_t off, uint64_t len);
	int	(*clone_range)(void *ctx, int dst, uint64_t doff, int src, uint64_t soff,
			       uint64_t len);
	/* FISWAPRANGE on @fd2; fsr->file1_fd is a descriptor of this backend */
	int	(*swap)(void *ctx, int fd2, struct file_swap_range *fsr);
	int	(*fstat)(void *ctx, int fd, struct sxb_stat *st);
	int	(*setflags)(void *ctx, int fd, uint32_t flags);	/* SXB_* */
	int	(*fsync)(void *ctx, int fd);
	/*
	 * optional: write back and drop every cached page, so that reads
	 * come from the disk (a failed check says whether the cache was stale)
	 */
	int	(*drop_caches)(void *ctx);
	/* a descriptor number that names no open file */
	int	bad_fd;
};

/* Tags: every 8-byte word of a block holds its tag; 0 is a hole or zeroes. */
static inline uint64_t sxb_tag(uint32_t id, uint64_t blk, uint32_t gen)
{
	return ((uint64_t)(id + 1) << 48) | ((blk & 0xffffffffffull) << 8) | (gen & 0xff);
}

#define SXB_TAG_MIXED	(~0ull)		/* a block of no single tag */
#define SXB_TAG_SHORT	(~0ull - 1)	/* a read came back short */

/* sxb_write_tag() - write block @blk of @fd full of @tag */
int sxb_write_tag(const struct sxb *b, int fd, uint64_t blk, uint64_t tag);
/* sxb_write_tags() - write blocks [@blk, +@n) with tags (@id, blk, @gen), in large writes */
int sxb_write_tags(const struct sxb *b, int fd, uint64_t blk, uint64_t n, uint32_t id,
		   uint32_t gen);
/* sxb_read_tags() - the tags of blocks [@blk, +@n) into @tags (see SXB_TAG_*) */
int sxb_read_tags(const struct sxb *b, int fd, uint64_t blk, uint64_t n, uint64_t *tags);
/* sxb_hash() - size and a 64-bit hash of the contents of @fd */
int sxb_hash(const struct sxb *b, int fd, uint64_t *size, uint64_t *hash);
/* sxb_errname() - "EINVAL" for -EINVAL or EINVAL, "0" for 0 */
const char *sxb_errname(int error);

/* A model of a file: its size and the tag of each block. */
struct sxb_model {
	uint64_t	size;
	uint64_t	nblk;
	uint64_t	*tag;
};

void sxb_model_init(struct sxb_model *m, uint64_t nblk);
void sxb_model_free(struct sxb_model *m);
void sxb_model_copy(struct sxb_model *dst, const struct sxb_model *src);
/* swap blocks [@o1, +@n) of @a with [@o2, +@n) of @b (@a may be @b) */
void sxb_model_swap(struct sxb_model *a, uint64_t o1, struct sxb_model *b, uint64_t o2,
		    uint64_t n);
/*
 * sxb_verify() - compare @fd with @m block by block (size, then each
 * block's tag; blocks past the size are not read); 0, or -1 with the first
 * difference in @msg
 */
int sxb_verify(const struct sxb *b, int fd, const struct sxb_model *m, char *msg, size_t len);
/*
 * sxb_verify_diag() - sxb_verify(), and on a difference, where the backend
 * can drop its caches, verify again from the disk and say so in @msg:
 * "... (from the disk: the same)" or "(from the disk: right: stale cache)"
 */
int sxb_verify_diag(const struct sxb *b, int fd, const struct sxb_model *m, char *msg,
		    size_t len);

/*
 * Results: each test prints "<prefix> PASS name" or "<prefix> FAIL name:
 * why" and is counted here.
 */
struct sxb_report {
	const char	*prefix;
	FILE		*out;
	unsigned	passed, failed;
};

void sxb_result(struct sxb_report *r, int ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The table of fsr_cases.h on @b: one result per case; 0 if all passed */
int sxb_errtab_run(const struct sxb *b, struct sxb_report *r);
/* The swap tests (1, 64, @big extents, shared, one file, TO_EOF); 0 if all passed */
int sxb_swaps_run(const struct sxb *b, struct sxb_report *r, uint64_t big);

/*
 * The differential scenario: @nops random operations from @seed on files
 * "d0".."d3" of @b, one transcript line per operation (the operation, its
 * result, size and hash of each file it touched) to @out.  The transcript
 * must be the same on every host.
 */
int sxb_scen_run(const struct sxb *b, uint64_t seed, uint32_t nops, FILE *out);

#endif /* SXB_H */
