/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the unit and crash tests: images in memory, a test
 * metadata block type whose every byte is checkable, and a test-only intent.
 */
#ifndef SXTEST_H
#define SXTEST_H

#include "sx_platform.h"
#include <swapext/swapext.h>
#include <swapext/device.h>
#include "util.h"
#include "mount.h"
#include "buf.h"
#include "trans.h"
#include "log.h"
#include "item.h"
#include "alloc.h"

#define SXT_TB_MAGIC	0x42545853u	/* "SXTB": test block */

/* A test metadata block: header, generation, then bytes derived from both. */
struct sxt_dtblock {
	struct sx_dblk_hdr tb_hdr;
	__le64	tb_gen;
	__le64	tb_pad;
};

extern const struct sx_buf_ops sxt_tblock_ops;

/* sxt_tblock_fill() - fill a whole test block image for (@blkno, @gen) */
void sxt_tblock_fill(void *data, u32 bsize, u64 blkno, u64 gen);
/* sxt_tblock_gen() - the generation of a verified test block image, or -1 */
s64 sxt_tblock_check(const void *data, u32 bsize, u64 blkno);

/* sxt_tblock_write() - (re)initialise test block @blkno at @gen in @tp */
int sxt_tblock_write(struct sx_trans *tp, u64 blkno, u64 gen);
/* sxt_tblock_update() - change test block @blkno to @gen, logging only what changed */
int sxt_tblock_update(struct sx_trans *tp, u64 blkno, u64 gen);
/* sxt_tblock_read() - read test block @blkno through the cache: its gen, or error */
int sxt_tblock_read(struct sx_mount *mp, u64 blkno, u64 *gen);

/*
 * sxt_memfs() - a memory device of @size bytes with a new filesystem on it;
 * a @logblocks given is taken even if too small for the largest transaction
 */
struct sx_bdev *sxt_memfs(u64 size, u32 blocksize, u32 logblocks);
/* sxt_bdev_copy() - a new memory device holding the contents of @src */
struct sx_bdev *sxt_bdev_copy(struct sx_bdev *src);
/* sxt_bdev_equal() - true if two devices hold the same bytes */
bool sxt_bdev_equal(struct sx_bdev *a, struct sx_bdev *b);
/* sxt_bdev_digest() - a 64-bit digest of a device's bytes (to see it did not change) */
u64 sxt_bdev_digest(struct sx_bdev *bd);
/* sxt_bdev_poke() - overwrite @len bytes at @off of a device */
void sxt_bdev_poke(struct sx_bdev *bd, u64 off, const void *buf, u32 len);
void sxt_bdev_peek(struct sx_bdev *bd, u64 off, void *buf, u32 len);

/* sxt_mount() - mount, failing the test on error */
struct sx_mount *sxt_mount(struct sx_bdev *bd);

/* The test-only intent: set test block ti_blkno to generation ti_gen. */
struct sxt_dtest_intent {
	struct sx_dlog_intent ti_hdr;
	__le64	ti_blkno;
	__le64	ti_gen;
};

/* Recovery callbacks seen, in order, for ordering tests. */
extern u64 sxt_recovered_ids[64];
extern u32 sxt_nrecovered;
extern bool sxt_fail_validate;

/* sxt_register_test_intent() - register TEST_INTENT/TEST_DONE (idempotent) */
void sxt_register_test_intent(void);
/* sxt_log_test_intent() - log an intent to set @blkno to @gen; returns its id */
int sxt_log_test_intent(struct sx_trans *tp, u64 blkno, u64 gen, u64 *id);
/* sxt_finish_test_intent() - do the work of an intent and log its done item */
int sxt_finish_test_intent(struct sx_trans *tp, u64 id, u64 blkno, u64 gen);

/*
 * sxt_seeds() - the seeds a randomized test runs: the one SX_TEST_SEED
 * gives when it is set (make soak passes fresh ones), else the first @n of
 * @fixed (make check is deterministic).  Prints "PROG: seeds ..." so the
 * log names them.  Returns how many; *@seeds points at them.
 */
u32 sxt_seeds(const char *prog, const u64 *fixed, u32 n, const u64 **seeds);

/* sxt_quiet() - silence engine messages below ERR (tests provoke many) */
void sxt_quiet(void);

/* xorshift RNG for reproducible workloads */
static inline u64 sxt_rand(u64 *s)
{
	u64 x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

#endif /* SXTEST_H */
