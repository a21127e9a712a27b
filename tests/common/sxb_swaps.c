// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Atomic swaps on any sxb backend, checked block by block against a model:
 * one extent; 64 extents with holes and unwritten extents (over blocks a
 * deleted file left full of data, so an unwritten extent that came out of
 * a swap written would show it); @big extents a side; shared (cloned)
 * extents, then a write that must copy on write; two ranges of one file;
 * TO_EOF with unequal sizes and a partial EOF block.  Every block holds a
 * tag (file id, block number, generation) in each of its words.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sxb.h"

#define NF	4

struct swt {
	const struct sxb	*b;
	struct sxb_report	*r;
	int			fd[NF];
	struct sxb_model	m[NF];
	char			msg[320];
};

static int open_all(struct swt *t, uint64_t nblk)
{
	static const char *const names[NF] = { "sw0", "sw1", "sw2", "sw3" };
	int i, error;

	for (i = 0; i < NF; i++) {
		error = t->b->create(t->b->ctx, names[i], &t->fd[i]);
		if (error) {
			snprintf(t->msg, sizeof(t->msg), "create %s: %s", names[i],
				 sxb_errname(error));
			return error;
		}
		sxb_model_init(&t->m[i], nblk);
	}
	return 0;
}

static void close_all(struct swt *t)
{
	int i;

	for (i = 0; i < NF; i++) {
		t->b->close(t->b->ctx, t->fd[i]);
		sxb_model_free(&t->m[i]);
	}
}

/* Write blocks [@from, +@n) of file @i with tags of generation @gen (step @step). */
static int wr(struct swt *t, int i, uint64_t from, uint64_t n, uint64_t step, uint32_t gen)
{
	uint64_t k, blk;
	int error = 0;

	if (step == 1) {
		error = sxb_write_tags(t->b, t->fd[i], from, n, (uint32_t)i, gen);
		for (k = 0; !error && k < n; k++)
			t->m[i].tag[from + k] = sxb_tag((uint32_t)i, from + k, gen);
	} else {
		for (k = 0; !error && k < n; k++) {
			blk = from + k * step;
			error = sxb_write_tag(t->b, t->fd[i], blk, sxb_tag((uint32_t)i, blk, gen));
			t->m[i].tag[blk] = sxb_tag((uint32_t)i, blk, gen);
		}
		n = (n - 1) * step + 1;
	}
	if (!error && (from + n) * t->b->bs > t->m[i].size)
		t->m[i].size = (from + n) * t->b->bs;
	if (error)
		snprintf(t->msg, sizeof(t->msg), "write file %d: %s", i, sxb_errname(error));
	return error;
}

static int set_size(struct swt *t, int i, uint64_t size)
{
	uint64_t k;
	int error = t->b->truncate(t->b->ctx, t->fd[i], size);

	if (error) {
		snprintf(t->msg, sizeof(t->msg), "truncate: %s", sxb_errname(error));
		return error;
	}
	/* blocks wholly past the new size are gone */
	for (k = (size + t->b->bs - 1) / t->b->bs; k < t->m[i].nblk; k++)
		t->m[i].tag[k] = 0;
	t->m[i].size = size;
	return 0;
}

static int verify_all(struct swt *t, const char *when)
{
	char m[256];
	int i;

	for (i = 0; i < NF; i++) {
		if (sxb_verify_diag(t->b, t->fd[i], &t->m[i], m, sizeof(m))) {
			snprintf(t->msg, sizeof(t->msg), "%s: file %d: %s", when, i, m);
			return -1;
		}
	}
	return 0;
}

/* Swap blocks [@o1, +@n) of file @a with [@o2, +@n) of file @c, in the model too. */
static int swapm(struct swt *t, int a, uint64_t o1, int c, uint64_t o2, uint64_t n,
		 uint64_t flags)
{
	struct file_swap_range fsr;
	int error;

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = t->fd[a];
	fsr.file1_offset = (int64_t)(o1 * t->b->bs);
	fsr.file2_offset = (int64_t)(o2 * t->b->bs);
	fsr.length = (int64_t)(n * t->b->bs);
	fsr.flags = flags;
	error = t->b->swap(t->b->ctx, t->fd[c], &fsr);
	if (error) {
		snprintf(t->msg, sizeof(t->msg), "swap %d[%llu] %d[%llu] %llu: %s", a,
			 (unsigned long long)o1, c, (unsigned long long)o2,
			 (unsigned long long)n, sxb_errname(error));
		return error;
	}
	sxb_model_swap(&t->m[a], o1, &t->m[c], o2, n);
	return 0;
}

static int t_one_extent(struct swt *t)
{
	if (wr(t, 0, 0, 8, 1, 1) || wr(t, 1, 0, 8, 1, 1))
		return -1;
	if (swapm(t, 0, 0, 1, 0, 8, 0) || verify_all(t, "swapped"))
		return -1;
	if (swapm(t, 0, 0, 1, 0, 8, 0) || verify_all(t, "back"))
		return -1;
	/* part of it, inside the extent */
	if (swapm(t, 0, 3, 1, 1, 4, 0) || verify_all(t, "part"))
		return -1;
	return 0;
}

static int t_64_extents(struct swt *t)
{
	const uint64_t n = 192;
	uint64_t i, k;
	int error;

	/* a deleted file's blocks full of data, for the fallocates to reuse */
	if (wr(t, 3, 0, 2 * n, 1, 7) || t->b->fsync(t->b->ctx, t->fd[3]))
		return -1;
	t->b->close(t->b->ctx, t->fd[3]);
	t->b->unlink(t->b->ctx, "sw3");
	error = t->b->create(t->b->ctx, "sw3", &t->fd[3]);
	memset(t->m[3].tag, 0, t->m[3].nblk * 8);
	t->m[3].size = 0;
	if (error)
		return -1;
	/* a: 64 written extents of 2 blocks, with 1-block holes between */
	for (i = 0; i < 64; i++)
		if (wr(t, 0, 3 * i, 2, 1, 1))
			return -1;
	/* b: unwritten over all of it, every 4th block written */
	error = t->b->fallocate(t->b->ctx, t->fd[1], 0, n * t->b->bs);
	if (error) {
		snprintf(t->msg, sizeof(t->msg), "fallocate: %s", sxb_errname(error));
		return -1;
	}
	t->m[1].size = n * t->b->bs;
	for (i = 0; i < n; i += 4)
		if (wr(t, 1, i, 1, 1, 1))
			return -1;
	/* some unwritten extents in a's holes too, and a's size covers n */
	for (k = 0; k < 8; k++) {
		error = t->b->fallocate(t->b->ctx, t->fd[0], (3 * (8 * k) + 2) * t->b->bs,
					t->b->bs);
		if (error)
			return -1;
	}
	if (set_size(t, 0, n * t->b->bs) || verify_all(t, "before"))
		return -1;
	if (swapm(t, 0, 0, 1, 0, n, 0) || verify_all(t, "swapped"))
		return -1;
	/* unaligned to the extents, and back part way */
	if (swapm(t, 0, 7, 1, 50, 100, 0) || verify_all(t, "part"))
		return -1;
	/* the unwritten blocks still read as zeroes after writes next to them */
	if (wr(t, 0, 1, 1, 1, 2) || wr(t, 1, 2, 1, 1, 2) || verify_all(t, "written"))
		return -1;
	return 0;
}

static int t_big(struct swt *t, uint64_t big)
{
	/* every other block: each written block is an extent of its own */
	if (wr(t, 0, 0, big, 2, 1) || wr(t, 1, 1, big, 2, 1))
		return -1;
	if (set_size(t, 0, 2 * big * t->b->bs) || set_size(t, 1, 2 * big * t->b->bs))
		return -1;
	if (t->b->fsync(t->b->ctx, t->fd[0]) || t->b->fsync(t->b->ctx, t->fd[1]))
		return -1;
	if (swapm(t, 0, 0, 1, 0, 2 * big, 0) || verify_all(t, "swapped"))
		return -1;
	return 0;
}

static int t_shared(struct swt *t)
{
	int error;

	if (wr(t, 0, 0, 16, 1, 1) || wr(t, 1, 0, 16, 1, 1))
		return -1;
	if (t->b->fsync(t->b->ctx, t->fd[0]))
		return -1;
	error = t->b->clone_range(t->b->ctx, t->fd[2], 0, t->fd[0], 0, 16 * t->b->bs);
	if (error) {
		snprintf(t->msg, sizeof(t->msg), "clone: %s", sxb_errname(error));
		return -1;
	}
	sxb_model_copy(&t->m[2], &t->m[0]);
	/* part of the clone to b: a keeps its blocks, the shared ones go to b */
	if (swapm(t, 2, 4, 1, 0, 8, 0) || verify_all(t, "swapped"))
		return -1;
	/* a write to b copies on write: a and c unchanged */
	if (wr(t, 1, 2, 1, 1, 9) || verify_all(t, "cow"))
		return -1;
	/* a with c where they still share */
	if (swapm(t, 0, 0, 2, 0, 16, 0) || verify_all(t, "shared both"))
		return -1;
	return 0;
}

/*
 * A write into shared blocks that has not reached the disk when the swap
 * runs, and a swap of another range of the same file: the write must
 * still copy on write when it is written back, leaving the clone as it
 * was.  Read from the disk where the backend can drop its caches.  Found
 * by the differential scenario (seed 20261205, operations 135-171) on XFS
 * with the module of xfs-bind at 4fc7d86: the written data landed in the
 * clone's block and the file read zeroes there.
 */
static int t_cow_write_then_swap(struct swt *t)
{
	int error;

	if (wr(t, 0, 0, 16, 1, 1) || wr(t, 1, 0, 16, 1, 1) || t->b->fsync(t->b->ctx, t->fd[0]))
		return -1;
	error = t->b->clone_range(t->b->ctx, t->fd[2], 0, t->fd[0], 0, 16 * t->b->bs);
	if (error) {
		snprintf(t->msg, sizeof(t->msg), "clone: %s", sxb_errname(error));
		return -1;
	}
	sxb_model_copy(&t->m[2], &t->m[0]);
	/* into shared blocks, not written back */
	if (wr(t, 0, 4, 3, 1, 2))
		return -1;
	if (swapm(t, 0, 10, 1, 10, 6, 0) || verify_all(t, "swapped"))
		return -1;
	if (t->b->drop_caches && t->b->drop_caches(t->b->ctx)) {
		snprintf(t->msg, sizeof(t->msg), "drop_caches failed");
		return -1;
	}
	return verify_all(t, "from the disk");
}

static int t_one_file(struct swt *t)
{
	if (wr(t, 0, 0, 60, 1, 1))
		return -1;
	if (swapm(t, 0, 0, 0, 20, 10, 0) || verify_all(t, "first"))
		return -1;
	if (swapm(t, 0, 45, 0, 5, 15, 0) || verify_all(t, "second"))
		return -1;
	/* adjacent ranges */
	if (swapm(t, 0, 0, 0, 30, 30, 0) || verify_all(t, "adjacent"))
		return -1;
	return 0;
}

static int t_to_eof(struct swt *t)
{
	struct file_swap_range fsr;
	uint64_t bs = t->b->bs, s0, s1, n;
	int error;

	if (wr(t, 0, 0, 50, 1, 1) || wr(t, 1, 0, 20, 1, 1) || set_size(t, 1, 19 * bs + 200))
		return -1;
	/* set_size dropped block 19's tag from the model: its first 200 bytes remain */
	t->m[1].tag[19] = sxb_tag(1, 19, 1);
	s0 = t->m[0].size;
	s1 = t->m[1].size;
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = t->fd[0];
	fsr.file1_offset = (int64_t)(5 * bs);
	fsr.file2_offset = (int64_t)(5 * bs);
	fsr.length = 1ll << 40;
	fsr.flags = FILE_SWAP_RANGE_TO_EOF;
	error = t->b->swap(t->b->ctx, t->fd[1], &fsr);
	if (error || (uint64_t)fsr.length != s0 - 5 * bs) {
		snprintf(t->msg, sizeof(t->msg), "TO_EOF: %s, length %lld", sxb_errname(error),
			 (long long)fsr.length);
		return -1;
	}
	sxb_model_swap(&t->m[0], 5, &t->m[1], 5, 45);
	t->m[0].size = 5 * bs + (s1 - 5 * bs);
	t->m[1].size = 5 * bs + (s0 - 5 * bs);
	if (verify_all(t, "TO_EOF"))
		return -1;
	/* unequal offsets */
	s0 = t->m[0].size;
	s1 = t->m[1].size;
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = t->fd[0];
	fsr.file1_offset = (int64_t)(2 * bs);
	fsr.file2_offset = (int64_t)(30 * bs);
	fsr.flags = FILE_SWAP_RANGE_TO_EOF;
	error = t->b->swap(t->b->ctx, t->fd[1], &fsr);
	if (error) {
		snprintf(t->msg, sizeof(t->msg), "TO_EOF 2: %s", sxb_errname(error));
		return -1;
	}
	n = ((uint64_t)fsr.length + bs - 1) / bs;
	sxb_model_swap(&t->m[0], 2, &t->m[1], 30, n);
	t->m[0].size = 2 * bs + (s1 - 30 * bs);
	t->m[1].size = 30 * bs + (s0 - 2 * bs);
	return verify_all(t, "TO_EOF unequal offsets");
}

int sxb_swaps_run(const struct sxb *b, struct sxb_report *r, uint64_t big)
{
	static const struct {
		const char *name;
		int (*fn)(struct swt *t);
	} tests[] = {
		{ "swap-1-extent", t_one_extent },
		{ "swap-64-extents-holes-unwritten", t_64_extents },
		{ "swap-shared-extents", t_shared },
		{ "swap-after-unflushed-cow-write", t_cow_write_then_swap },
		{ "swap-two-ranges-of-one-file", t_one_file },
		{ "swap-to-eof-unequal-sizes", t_to_eof },
	};
	struct swt t;
	unsigned failed = r->failed;
	size_t i;
	char name[64];

	memset(&t, 0, sizeof(t));
	t.b = b;
	t.r = r;
	for (i = 0; i <= sizeof(tests) / sizeof(tests[0]); i++) {
		int ok;

		t.msg[0] = 0;
		if (open_all(&t, 2 * big + 512)) {
			sxb_result(r, 0, "swap-setup", "%s", t.msg);
			return -1;
		}
		if (i < sizeof(tests) / sizeof(tests[0])) {
			ok = tests[i].fn(&t) == 0;
			sxb_result(r, ok, tests[i].name, ok ? NULL : "%s", t.msg);
		} else {
			snprintf(name, sizeof(name), "swap-%llu-extents", (unsigned long long)big);
			ok = t_big(&t, big) == 0;
			sxb_result(r, ok, name, ok ? NULL : "%s", t.msg);
		}
		close_all(&t);
	}
	return r->failed == failed ? 0 : -1;
}
