// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Run the FISWAPRANGE errno table (fsr_cases.h) on any sxb backend: for
 * each row make two tagged files of the row's sizes, set its inode flags,
 * issue its request, and check the errno; a refused request must leave
 * both files and the caller's structure as they were, an accepted one must
 * have swapped exactly the blocks (and, with TO_EOF, the sizes) it named.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sxb.h"
#include "fsr_cases.h"

#define NBLK(sz)	(((uint64_t)(sz) + FSRC_B - 1) / FSRC_B)

/* A file of @size bytes, every block tagged with @id. */
static int make_file(const struct sxb *b, const char *name, uint32_t id, int64_t size,
		     struct sxb_model *m, int *fd)
{
	uint64_t nb = NBLK(size), i;
	int error;

	error = b->create(b->ctx, name, fd);
	if (error)
		return error;
	error = sxb_write_tags(b, *fd, 0, nb, id, 1);
	if (!error)
		error = b->truncate(b->ctx, *fd, (uint64_t)size);
	sxb_model_init(m, nb + 64);
	for (i = 0; i < nb; i++)
		m->tag[i] = sxb_tag(id, i, 1);
	m->size = (uint64_t)size;
	return error;
}

static void fill_fresh(const struct fsr_case *c, const struct sxb_stat *st,
		       struct file_swap_range *fsr)
{
	if (c->fresh == FSRC_FR_NONE)
		return;
	fsr->file2_ino = (int64_t)st->ino;
	fsr->file2_mtime = st->mtime_sec;
	fsr->file2_mtime_nsec = st->mtime_nsec;
	fsr->file2_ctime = st->ctime_sec;
	fsr->file2_ctime_nsec = st->ctime_nsec;
	switch (c->fresh) {
	case FSRC_FR_INO:
		fsr->file2_ino++;
		break;
	case FSRC_FR_MTIME:
		fsr->file2_mtime--;
		break;
	case FSRC_FR_MTIME_NSEC:
		fsr->file2_mtime_nsec = (fsr->file2_mtime_nsec + 1) % 1000000000;
		break;
	case FSRC_FR_CTIME:
		fsr->file2_ctime++;
		break;
	case FSRC_FR_CTIME_NSEC:
		fsr->file2_ctime_nsec = (fsr->file2_ctime_nsec + 999999999) % 1000000000;
		break;
	default:
		break;
	}
}

/* What an accepted request did to the models. */
static void model_apply(const struct fsr_case *c, const struct file_swap_range *fsr,
			struct sxb_model *m1, struct sxb_model *m2)
{
	uint64_t n = NBLK(fsr->length);
	uint64_t s1 = m1->size, s2 = m2->size;

	if (!n)
		return;
	sxb_model_swap(m1, (uint64_t)c->off1 / FSRC_B, m2, (uint64_t)c->off2 / FSRC_B, n);
	if (c->flags & FILE_SWAP_RANGE_TO_EOF) {
		m1->size = (uint64_t)c->off1 + (s2 - (uint64_t)c->off2);
		m2->size = (uint64_t)c->off2 + (s1 - (uint64_t)c->off1);
	}
}

static void run_case(const struct sxb *b, struct sxb_report *r, const struct fsr_case *c)
{
	struct sxb_model m1, m2;
	struct file_swap_range fsr, orig;
	struct sxb_stat st;
	char msg[320] = "";
	int fd1 = -1, fd2 = -1, error, ok = 1;
	int64_t size1 = c->size1 ? c->size1 : FSRC_SIZE;
	int64_t size2 = c->size2 ? c->size2 : FSRC_SIZE;

	memset(&m1, 0, sizeof(m1));
	memset(&m2, 0, sizeof(m2));
	error = make_file(b, "errtab1", 0, size1, &m1, &fd1);
	if (!error && !c->same)
		error = make_file(b, "errtab2", 1, size2, &m2, &fd2);
	if (c->same)
		fd2 = fd1;
	/* flags after opening: an append-only file cannot be opened for writing */
	if (!error && c->iflags1)
		error = b->setflags(b->ctx, fd1, (c->iflags1 & FSRC_IMMUTABLE ? SXB_IMMUTABLE : 0) |
				    (c->iflags1 & FSRC_APPEND ? SXB_APPEND : 0));
	if (!error && c->iflags2)
		error = b->setflags(b->ctx, fd2, (c->iflags2 & FSRC_IMMUTABLE ? SXB_IMMUTABLE : 0) |
				    (c->iflags2 & FSRC_APPEND ? SXB_APPEND : 0));
	if (!error)
		error = b->fstat(b->ctx, fd2, &st);
	if (error) {
		sxb_result(r, 0, c->name, "setup: %s", sxb_errname(error));
		goto out;
	}
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = c->fd1 == FSRC_FD_BAD ? b->bad_fd : c->fd1 == FSRC_FD_NEG ? -1 : fd1;
	fsr.file1_offset = c->off1;
	fsr.file2_offset = c->off2;
	fsr.length = c->len;
	fsr.flags = c->flags;
	if (c->pad)
		fsr.pad[c->pad - 1] = 1;
	fill_fresh(c, &st, &fsr);
	orig = fsr;

	error = b->swap(b->ctx, fd2, &fsr);
	if (-error != c->err) {
		snprintf(msg, sizeof(msg), "got %s, expected %s", sxb_errname(error),
			 sxb_errname(c->err));
		ok = 0;
	} else if (error && memcmp(&fsr, &orig, sizeof(fsr))) {
		snprintf(msg, sizeof(msg), "a refused request changed the caller's structure");
		ok = 0;
	} else if (!error && c->len_out_set && fsr.length != c->len_out) {
		snprintf(msg, sizeof(msg), "length %lld copied back, expected %lld",
			 (long long)fsr.length, (long long)c->len_out);
		ok = 0;
	}
	if (ok && !error)
		model_apply(c, &fsr, &m1, c->same ? &m1 : &m2);
	/* flags off before reading back (and before the next row reuses the names) */
	if (c->iflags1)
		b->setflags(b->ctx, fd1, 0);
	if (c->iflags2)
		b->setflags(b->ctx, fd2, 0);
	if (ok && sxb_verify_diag(b, fd1, &m1, msg, sizeof(msg)))
		ok = 0, memmove(msg + 7, msg, sizeof(msg) - 7), memcpy(msg, "file1: ", 7);
	if (ok && !c->same && sxb_verify_diag(b, fd2, &m2, msg, sizeof(msg)))
		ok = 0, memmove(msg + 7, msg, sizeof(msg) - 7), memcpy(msg, "file2: ", 7);
	msg[sizeof(msg) - 1] = 0;
	sxb_result(r, ok, c->name, ok ? "%s" : "%s", ok ? sxb_errname(error) : msg);
out:
	if (c->iflags1 && fd1 >= 0)
		b->setflags(b->ctx, fd1, 0);
	if (c->iflags2 && fd2 >= 0)
		b->setflags(b->ctx, fd2, 0);
	if (fd1 >= 0)
		b->close(b->ctx, fd1);
	if (fd2 >= 0 && !c->same)
		b->close(b->ctx, fd2);
	sxb_model_free(&m1);
	if (!c->same)
		sxb_model_free(&m2);
}

int sxb_errtab_run(const struct sxb *b, struct sxb_report *r)
{
	unsigned failed = r->failed;
	size_t i;

	for (i = 0; i < sizeof(fsr_cases) / sizeof(fsr_cases[0]); i++)
		run_case(b, r, &fsr_cases[i]);
	return r->failed == failed ? 0 : -1;
}
