/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the fuzz targets (tests/fuzz/fuzz_*.c) share: a memory device whose
 * bytes a target owns, the golden images the targets damage, the checksum
 * fix-ups that let mutated metadata get past its CRC to the checks behind
 * it, sparse images, log records framed from ops, and the interpreter of
 * the operation sequences that follow an image.
 *
 * A target file ends with FZ_TARGET(name, init, run).  Built with
 * FZ_LIBFUZZER it defines libFuzzer's entry points; otherwise it defines
 * struct fz_target fz_target_<name> for the replay driver (fz_replay.c),
 * which links every target into one program that needs no libFuzzer.
 */
#ifndef FZ_H
#define FZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "sx_platform.h"
#include <swapext/swapext.h>
#include <swapext/device.h>
#include <swapext/format.h>
#include "util.h"
#include "mount.h"

struct fz_target {
	const char	*ft_name;
	int		(*ft_init)(void);
	int		(*ft_run)(const u8 *data, size_t size);
};

/* fz_setup() - quiet the engine, register its types, then run @init (once) */
int fz_setup(int (*init)(void));

#ifdef FZ_LIBFUZZER
#define FZ_TARGET(name, init, run)						\
	int LLVMFuzzerInitialize(int *argc, char ***argv);			\
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);		\
	int LLVMFuzzerInitialize(int *argc, char ***argv)			\
	{									\
		if (fz_setup(init))						\
			abort();						\
		return 0;							\
	}									\
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)		\
	{									\
		return run(data, size);						\
	}
#else
#define FZ_TARGET(name, init, run)						\
	const struct fz_target fz_target_##name = { #name, init, run };
#endif

/* fz_bug() - an engine invariant broke on this input: report and abort */
void fz_bug(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ------------------------------------------------------------ devices */

/* The largest device a target builds (a sparse image may ask for more). */
#define FZ_MAX_DEV		(8u << 20)

/* fz_dev_new() - a zeroed memory device of @size bytes, 512-byte sectors */
struct sx_bdev *fz_dev_new(u64 size);
/* fz_dev_from() - a memory device holding a copy of @size bytes at @data */
struct sx_bdev *fz_dev_from(const u8 *data, u64 size);
/* fz_dev_data() - the bytes behind a device of fz_dev_new() */
u8 *fz_dev_data(struct sx_bdev *bd);
void fz_dev_free(struct sx_bdev *bd);

/* ------------------------------------------------------------ images */

/* A whole image in memory and what the golden builder put in it. */
struct fz_image {
	u8	*im_data;
	u64	im_size;
	u32	im_bsize;
	struct sx_sb im_sb;		/* as the image's superblock says */
	u64	im_ino_a;		/* many one-block extents: a B+tree fork */
	u64	im_ino_b;		/* a clone of a, every other block rewritten */
	u64	im_ino_c;		/* a few extents inline, some unwritten */
};

/* Golden images: geometry and how much to put in them. */
struct fz_golden_opts {
	u32	go_bsize;
	u64	go_size;
	u32	go_logblocks;		/* 0: the default (and smallest allowed) */
	bool	go_small_log;		/* take go_logblocks even below the minimum */
	u32	go_extents;		/* extents of file a */
};

/* The golden image most targets damage: 512-byte blocks, 2 MiB. */
extern const struct fz_golden_opts fz_golden_std;

/* The uuid of every image the fuzz targets and the seed generator make. */
extern const u8 fz_uuid[SX_UUID_SIZE];

/*
 * fz_golden() - a deterministic image: mkfs, files a, b (the refcount
 * tree) and c, named files and a clean unmount.  Identical at every call
 * with the same options, so seeds made on it fit the image a target
 * makes at start.
 */
int fz_golden(const struct fz_golden_opts *o, struct fz_image *img);
void fz_image_free(struct fz_image *img);

/*
 * fz_tree_blocks() - the live blocks of @img with metadata magic @magic and
 * owner @owner, in block order (at most @max): the targets that replace one
 * B+tree block pick it from here
 */
u32 fz_tree_blocks(const struct fz_image *img, u32 magic, u64 owner, u64 *blocks, u32 max);

/* Checksum fix-ups (fz_fix()): which checks a mutated image gets past. */
enum {
	FZ_FIX_SB	= (1u << 0),	/* both superblock copies' CRCs */
	FZ_FIX_BLOCKS	= (1u << 1),	/* the CRC of every block with a metadata magic */
	FZ_FIX_LOG	= (1u << 2),	/* log records from the tail: CRC */
	FZ_FIX_CHAIN	= (1u << 3),	/* ... and the chain of previous-record CRCs */
	FZ_FIX_ALL	= 0xf,
};

/* fz_fix() - recompute the checksums @flags names on an image of @size bytes */
void fz_fix(u8 *img, u64 size, u32 flags);

/* fz_seal_block() - recompute the CRC of one metadata block of @bsize bytes */
void fz_seal_block(void *blk, u32 bsize);

/*
 * Sparse images (the image target's input, and what the seed generator
 * writes): a header, then the blocks that are not all zero, each after
 * its block number; what follows the last block is the operations.
 */
struct fz_simg_hdr {
	u8	sh_blocklog;		/* blocks of 1 << sh_blocklog bytes, 9..16 */
	u8	sh_fix;			/* FZ_FIX_* to apply after loading */
	__le16	sh_nblocks;		/* blocks stored */
	__le32	sh_devblocks;		/* device size in blocks */
};

/*
 * fz_simg_load() - the device a sparse image describes
 * @rest, @restlen: set to the bytes after its last block
 * Return: the device, or NULL if the header cannot describe one.
 */
struct sx_bdev *fz_simg_load(const u8 *data, size_t size, const u8 **rest, size_t *restlen);

/*
 * fz_simg_save() - encode @size bytes of @img (blocks of 1 << @blocklog)
 * sparsely, then @ops: a malloc()ed buffer, its length in *@lenp
 */
u8 *fz_simg_save(const u8 *img, u64 size, u32 blocklog, u8 fix, const u8 *ops, size_t oplen,
		 size_t *lenp);

/* ------------------------------------------------------------ log records */

/*
 * Framed records (the log target's input): each record is a header of
 * struct fz_rec_hdr and fr_len bytes of ops.  fz_frame_log() writes them
 * as records from the tail of the image's log, with the position, cycle,
 * uuid, chain, op count and CRC a writer would give them; fr_flags asks
 * for what a writer would not do.
 */
struct fz_rec_hdr {
	__le16	fr_len;
	u8	fr_flags;		/* FZ_REC_* */
	u8	fr_pad;
};

enum {
	FZ_REC_WRAP	= (1u << 0),	/* a wrap record (no ops): the log goes on at 0 */
	FZ_REC_BADCRC	= (1u << 1),	/* the record's CRC is wrong: a torn write */
	FZ_REC_BADCHAIN	= (1u << 2),	/* it does not chain to the one before */
	FZ_REC_OLDEPOCH	= (1u << 3),	/* its epoch is older than the previous one's */
	FZ_REC_NOPS	= (1u << 4),	/* lr_nops one more than the ops it holds */
	/* bits 5-6: log blocks beyond what the ops need */
};

/*
 * fz_frame_log() - write framed records into the log of @img (size @size)
 * from its superblock's tail, then zero the block after the last one
 * Return: the records written.
 */
u32 fz_frame_log(u8 *img, u64 size, const u8 *data, size_t len);

/*
 * fz_unframe_log() - the framed form of the records of the log on @bd
 * from its tail to its head (the seed generator's inverse of
 * fz_frame_log): a malloc()ed buffer, its length in *@lenp, or NULL
 */
u8 *fz_unframe_log(struct sx_bdev *bd, size_t *lenp);

/* ------------------------------------------------------------ operations */

/* The most operations one input runs. */
#define FZ_MAX_OPS		64

/*
 * fz_ops_run() - mount @bd (unless *@mpp is already a mount of it) and run
 * the operations @ops encodes: file creation, writes, clones, swaps,
 * punches, fsync, updates, remounts, shutdowns and checks.  *@mpp is the
 * mount left at the end (NULL if a remount failed).
 */
void fz_ops_run(struct sx_bdev *bd, struct sx_mount **mpp, const u8 *ops, size_t len);

/* Opcodes of fz_ops_run(); the seed generator writes them. */
enum fz_opcode {
	FZ_OP_OPEN,		/* slot name: open, or create */
	FZ_OP_CLOSE,		/* slot */
	FZ_OP_PWRITE,		/* slot off16 len16 byte */
	FZ_OP_PREAD,		/* slot off16 len16 */
	FZ_OP_TRUNCATE,		/* slot size16 */
	FZ_OP_FALLOC,		/* slot off16 len16 */
	FZ_OP_PUNCH,		/* slot off16 len16 */
	FZ_OP_FSYNC,		/* slot */
	FZ_OP_CLONE,		/* dst src */
	FZ_OP_CLONERANGE,	/* dst dstblk src srcblk nblk */
	FZ_OP_SWAP,		/* fd2 fd1 blk1 blk2 nblk flags */
	FZ_OP_UNLINK,		/* name */
	FZ_OP_RENAME,		/* name name */
	FZ_OP_TMPFILE,		/* slot */
	FZ_OP_LINK,		/* slot name */
	FZ_OP_SYNC,		/* checkpoint? */
	FZ_OP_UPDATE,		/* what slot flags */
	FZ_OP_REMOUNT,		/* */
	FZ_OP_SHUTDOWN,		/* crash, then recover */
	FZ_OP_FIEMAP,		/* slot */
	FZ_OP_READDIR,		/* */
	FZ_OP_SETFLAGS,		/* slot flags */
	FZ_OP_CHECK,		/* unmount, check, mount */
	FZ_OP_NR,
};

/* Offsets and lengths of fz_ops_run() are 16-bit counts of this many bytes. */
#define FZ_OP_UNIT		256

/* A fixed workload: fz_ops_run() form, on files a, b and c of a golden image. */
extern const u8 fz_short_ops[];
extern const size_t fz_short_ops_len;

/* What fz_replace_block() restores from the golden block after the input. */
enum {
	FZ_BLK_MAGIC	= (1u << 0),
	FZ_BLK_WHERE	= (1u << 1),	/* bh_blkno */
	FZ_BLK_UUID	= (1u << 2),
	FZ_BLK_OWNER	= (1u << 3),
	FZ_BLK_LSN	= (1u << 4),
	FZ_BLK_CRC	= (1u << 5),	/* recomputed last */
};

/*
 * fz_replace_block() - a device holding @img with block @bno replaced by
 * the @len bytes at @data (the rest of the block as it was), then the
 * header fields @fix names restored and the CRC recomputed if it says so
 */
struct sx_bdev *fz_replace_block(const struct fz_image *img, u64 bno, const u8 *data,
				 size_t len, u8 fix);

/* ------------------------------------------------------------ checking */

/* fz_check() - run the checker on @bd: its problems, or ~0 if it could not run */
u64 fz_check(struct sx_bdev *bd);

/* fz_logprint() - the log printer on @bd, its lines thrown away */
void fz_logprint(struct sx_bdev *bd);

/* fz_read_tools() - the log printer and the checker on @bd, results ignored */
void fz_read_tools(struct sx_bdev *bd);

#endif /* FZ_H */
