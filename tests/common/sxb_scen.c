// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The differential scenario: one list of random operations (writes, some
 * of them unaligned; truncates; fallocates; punches; clones; swaps with
 * random ranges and flags, of two files or two ranges of one) drawn from
 * a seed and run on any sxb backend.  Each operation prints one transcript
 * line: what it was, the errno it got (and the length a swap copied back),
 * and the size and hash of every file it may have changed.  The same seed
 * must give the same transcript on every host: tests/xfs/xfscheck.sh diffs
 * the store's against XFS's in the qemu guest.
 *
 * The operations other than swaps stay where POSIX and the store agree by
 * design (whole blocks for clones and punches inside the size), so a
 * difference points at the swap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sxb.h"

#define NF	4
#define MAXB	64u		/* blocks a file may reach */

struct scen {
	const struct sxb	*b;
	uint64_t		rng;
	int			fd[NF];
	FILE			*out;
};

/* splitmix64: the same sequence everywhere */
static uint64_t rnd(struct scen *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(struct scen *s, uint64_t n)
{
	return n ? rnd(s) % n : 0;
}

static int chance(struct scen *s, unsigned pct)
{
	return below(s, 100) < pct;
}

static uint64_t size_of(struct scen *s, int f)
{
	struct sxb_stat st;

	return s->b->fstat(s->b->ctx, s->fd[f], &st) ? 0 : st.size;
}

static void print_files(struct scen *s, int a, int c)
{
	uint64_t size, hash;
	int f, error;

	for (f = 0; f < NF; f++) {
		if (f != a && f != c)
			continue;
		error = sxb_hash(s->b, s->fd[f], &size, &hash);
		if (error)
			fprintf(s->out, " | d%d %s", f, sxb_errname(error));
		else
			fprintf(s->out, " | d%d %llu %016llx", f, (unsigned long long)size,
				(unsigned long long)hash);
	}
	fputc('\n', s->out);
}

/* A write of whole blocks, or now and then of bytes at any offset. */
static int op_write(struct scen *s, uint32_t op, int f)
{
	uint64_t bs = s->b->bs, off, len, i;
	uint8_t *buf;
	int64_t n;

	if (chance(s, 75)) {
		off = below(s, MAXB) * bs;
		len = (1 + below(s, 8)) * bs;
	} else {
		off = below(s, MAXB * bs);
		len = 1 + below(s, 2 * bs);
	}
	if (off + len > MAXB * bs)
		len = MAXB * bs - off;
	buf = malloc(len);
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)((op * 131 + (off + i) / 8 * 7 + (uint32_t)f) | 1);
	n = s->b->pwrite(s->b->ctx, s->fd[f], buf, len, off);
	free(buf);
	fprintf(s->out, "write d%d %llu+%llu = %s", f, (unsigned long long)off,
		(unsigned long long)len,
		n < 0 ? sxb_errname((int)n) : (uint64_t)n == len ? "0" : "short");
	return 0;
}

static void op_truncate(struct scen *s, int f)
{
	uint64_t bs = s->b->bs, size;
	int error;

	size = chance(s, 70) ? below(s, MAXB + 1) * bs : below(s, MAXB * bs);
	error = s->b->truncate(s->b->ctx, s->fd[f], size);
	fprintf(s->out, "truncate d%d %llu = %s", f, (unsigned long long)size,
		sxb_errname(error));
}

static void op_fallocate(struct scen *s, int f)
{
	uint64_t bs = s->b->bs, off = below(s, MAXB) * bs, len = (1 + below(s, 8)) * bs;
	int error;

	if (off + len > MAXB * bs)
		len = MAXB * bs - off;
	error = s->b->fallocate(s->b->ctx, s->fd[f], off, len);
	fprintf(s->out, "fallocate d%d %llu+%llu = %s", f, (unsigned long long)off,
		(unsigned long long)len, sxb_errname(error));
}

/* Whole blocks inside the size (a punch past EOF is a host's own business). */
static void op_punch(struct scen *s, int f)
{
	uint64_t bs = s->b->bs, nb = size_of(s, f) / bs, off, len;
	int error;

	if (!nb) {
		fprintf(s->out, "punch d%d nothing", f);
		return;
	}
	off = below(s, nb);
	len = 1 + below(s, nb - off);
	error = s->b->punch(s->b->ctx, s->fd[f], off * bs, len * bs);
	fprintf(s->out, "punch d%d %llu+%llu = %s", f, (unsigned long long)(off * bs),
		(unsigned long long)(len * bs), sxb_errname(error));
}

/* Whole blocks of the source inside its size, to a block at most at the target's EOF. */
static void op_clone(struct scen *s, int dst, int src)
{
	uint64_t bs = s->b->bs, sb = size_of(s, src) / bs, db = size_of(s, dst) / bs;
	uint64_t soff, doff, len;
	int error;

	if (!sb) {
		fprintf(s->out, "clone d%d d%d nothing", dst, src);
		return;
	}
	soff = below(s, sb);
	len = 1 + below(s, sb - soff);
	doff = below(s, db + 1);
	/* TO_EOF swaps can carry a file past MAXB: no clone lands there */
	if (doff >= MAXB)
		len = 0;
	else if (doff + len > MAXB)
		len = MAXB - doff;
	if (!len) {
		fprintf(s->out, "clone d%d d%d nothing", dst, src);
		return;
	}
	error = s->b->clone_range(s->b->ctx, s->fd[dst], doff * bs, s->fd[src], soff * bs,
				  len * bs);
	fprintf(s->out, "clone d%d %llu d%d %llu +%llu = %s", dst, (unsigned long long)(doff * bs),
		src, (unsigned long long)(soff * bs), (unsigned long long)(len * bs),
		sxb_errname(error));
}

/* An offset for a swap: a block inside the file mostly, its EOF, or anything. */
static int64_t swap_off(struct scen *s, uint64_t size)
{
	uint64_t bs = s->b->bs, nb = (size + bs - 1) / bs;

	if (chance(s, 80))
		return (int64_t)(below(s, nb + 1) * bs);
	if (chance(s, 50))
		return (int64_t)(nb * bs);
	return (int64_t)below(s, size + 2 * bs);
}

static void op_swap(struct scen *s, int f1, int f2)
{
	struct file_swap_range fsr;
	struct sxb_stat st;
	uint64_t bs = s->b->bs, s1 = size_of(s, f1), s2 = size_of(s, f2), room;
	int64_t o1, o2;
	int error;

	memset(&fsr, 0, sizeof(fsr));
	o1 = swap_off(s, s1);
	o2 = swap_off(s, s2);
	if (f1 == f2 && chance(s, 60)) {
		/* two ranges of one file that do not overlap, mostly */
		uint64_t nb = s1 / bs, n = nb / 2 ? 1 + below(s, nb / 2) : 0;

		o1 = (int64_t)(below(s, nb - 2 * n + 1) * bs);
		o2 = o1 + (int64_t)(n * bs) + (int64_t)(below(s, nb - (uint64_t)o1 / bs - 2 * n + 1) * bs);
		fsr.length = (int64_t)(n * bs);
	} else {
		room = (uint64_t)o1 < s1 && (uint64_t)o2 < s2 ?
		       (s1 - (uint64_t)o1 < s2 - (uint64_t)o2 ? s1 - (uint64_t)o1 : s2 - (uint64_t)o2) : 0;
		if (chance(s, 70))
			fsr.length = (int64_t)(below(s, room / bs + 1) * bs);
		else if (chance(s, 50))
			fsr.length = (int64_t)room;		/* to the nearer EOF */
		else
			fsr.length = (int64_t)below(s, (MAXB + 4) * bs);
	}
	fsr.file1_fd = s->fd[f1];
	fsr.file1_offset = o1;
	fsr.file2_offset = o2;
	if (chance(s, 30))
		fsr.flags |= FILE_SWAP_RANGE_NONATOMIC;
	if (chance(s, 10)) {
		fsr.flags |= FILE_SWAP_RANGE_FULL_FILES;
		if (chance(s, 70)) {
			fsr.file1_offset = fsr.file2_offset = 0;
			fsr.length = (int64_t)s1;
		}
	}
	if (chance(s, 20))
		fsr.flags |= FILE_SWAP_RANGE_TO_EOF;
	if (chance(s, 15)) {
		fsr.flags |= FILE_SWAP_RANGE_FILE2_FRESH;
		if (!s->b->fstat(s->b->ctx, s->fd[f2], &st)) {
			fsr.file2_ino = (int64_t)st.ino;
			fsr.file2_mtime = st.mtime_sec - (chance(s, 30) ? 1 : 0);
			fsr.file2_mtime_nsec = st.mtime_nsec;
			fsr.file2_ctime = st.ctime_sec;
			fsr.file2_ctime_nsec = st.ctime_nsec;
		}
	}
	if (chance(s, 3))
		fsr.flags |= 1ull << (4 + below(s, 60));
	fprintf(s->out, "swap d%d %lld d%d %lld +%lld flags %llx", f1, (long long)fsr.file1_offset,
		f2, (long long)fsr.file2_offset, (long long)fsr.length,
		(unsigned long long)fsr.flags);
	error = s->b->swap(s->b->ctx, s->fd[f2], &fsr);
	fprintf(s->out, " = %s", sxb_errname(error));
	if (!error)
		fprintf(s->out, " length %lld", (long long)fsr.length);
}

int sxb_scen_run(const struct sxb *b, uint64_t seed, uint32_t nops, FILE *out)
{
	static const char *const names[NF] = { "d0", "d1", "d2", "d3" };
	struct scen s;
	uint32_t op;
	int f, g, error;

	memset(&s, 0, sizeof(s));
	s.b = b;
	s.rng = seed;
	s.out = out;
	fprintf(out, "scenario seed %llu ops %u block %u\n", (unsigned long long)seed, nops,
		b->bs);
	for (f = 0; f < NF; f++) {
		error = b->create(b->ctx, names[f], &s.fd[f]);
		if (error) {
			fprintf(out, "create %s = %s\n", names[f], sxb_errname(error));
			return -1;
		}
	}
	for (op = 0; op < nops; op++) {
		uint64_t k = below(&s, 100);

		f = (int)below(&s, NF);
		g = chance(&s, 20) ? f : (int)((f + 1 + below(&s, NF - 1)) % NF);
		fprintf(out, "%u: ", op);
		if (k < 30) {
			op_write(&s, op, f);
			g = f;
		} else if (k < 38) {
			op_truncate(&s, f);
			g = f;
		} else if (k < 44) {
			op_fallocate(&s, f);
			g = f;
		} else if (k < 50) {
			op_punch(&s, f);
			g = f;
		} else if (k < 58) {
			if (g == f)
				g = (f + 1) % NF;
			op_clone(&s, f, g);
		} else {
			op_swap(&s, f, g);
		}
		print_files(&s, f, g);
	}
	fprintf(out, "end:");
	for (f = 0; f < NF; f++) {
		uint64_t size, hash;

		if (sxb_hash(b, s.fd[f], &size, &hash))
			fprintf(out, " d%d ?", f);
		else
			fprintf(out, " d%d %llu %016llx", f, (unsigned long long)size,
				(unsigned long long)hash);
		b->close(b->ctx, s.fd[f]);
	}
	fputc('\n', out);
	fflush(out);
	return 0;
}
