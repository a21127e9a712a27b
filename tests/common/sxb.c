// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sxb helpers shared by every backend: tagged blocks, hashes, the block
 * model of a file, result lines.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "sxb.h"

#define SXB_RUN		64u	/* blocks per read or write */

int sxb_write_tag(const struct sxb *b, int fd, uint64_t blk, uint64_t tag)
{
	uint64_t *buf = malloc(b->bs);
	uint32_t i;
	int64_t n;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < b->bs / 8; i++)
		buf[i] = tag;
	n = b->pwrite(b->ctx, fd, buf, b->bs, blk * b->bs);
	free(buf);
	if (n < 0)
		return (int)n;
	return n == b->bs ? 0 : -EIO;
}

int sxb_write_tags(const struct sxb *b, int fd, uint64_t blk, uint64_t n, uint32_t id,
		   uint32_t gen)
{
	uint32_t per = b->bs / 8, i, k;
	uint64_t *buf = malloc((size_t)SXB_RUN * b->bs);
	uint64_t done;
	int64_t w;

	if (!buf)
		return -ENOMEM;
	for (done = 0; done < n; done += k) {
		k = n - done < SXB_RUN ? (uint32_t)(n - done) : SXB_RUN;
		for (i = 0; i < k * per; i++)
			buf[i] = sxb_tag(id, blk + done + i / per, gen);
		w = b->pwrite(b->ctx, fd, buf, (uint64_t)k * b->bs, (blk + done) * b->bs);
		if (w != (int64_t)k * b->bs) {
			free(buf);
			return w < 0 ? (int)w : -EIO;
		}
	}
	free(buf);
	return 0;
}

/* The tag of one block read into @p. */
static uint64_t tag_of(const uint64_t *p, uint32_t words)
{
	uint32_t i;

	for (i = 1; i < words; i++)
		if (p[i] != p[0])
			return SXB_TAG_MIXED;
	return p[0];
}

int sxb_read_tags(const struct sxb *b, int fd, uint64_t blk, uint64_t n, uint64_t *tags)
{
	uint32_t per = b->bs / 8, i, k;
	uint64_t *buf = malloc((size_t)SXB_RUN * b->bs);
	uint64_t done;
	int64_t r;

	if (!buf)
		return -ENOMEM;
	for (done = 0; done < n; done += k) {
		k = n - done < SXB_RUN ? (uint32_t)(n - done) : SXB_RUN;
		r = b->pread(b->ctx, fd, buf, (uint64_t)k * b->bs, (blk + done) * b->bs);
		if (r < 0) {
			free(buf);
			return (int)r;
		}
		for (i = 0; i < k; i++)
			tags[done + i] = (uint64_t)r >= (uint64_t)(i + 1) * b->bs ?
					 tag_of(buf + (size_t)i * per, per) : SXB_TAG_SHORT;
	}
	free(buf);
	return 0;
}

int sxb_hash(const struct sxb *b, int fd, uint64_t *size, uint64_t *hash)
{
	struct sxb_stat st;
	uint64_t h = 0xcbf29ce484222325ull, off, *buf;
	size_t chunk = (size_t)SXB_RUN * b->bs, i;
	int64_t r;
	int error;

	error = b->fstat(b->ctx, fd, &st);
	if (error)
		return error;
	buf = malloc(chunk);
	if (!buf)
		return -ENOMEM;
	/* word by word: byte-wise FNV is too slow under software emulation */
	for (off = 0; off < st.size; off += chunk) {
		memset(buf, 0, chunk);
		r = b->pread(b->ctx, fd, buf, chunk, off);
		if (r < 0) {
			free(buf);
			return (int)r;
		}
		if ((uint64_t)r != (st.size - off < chunk ? st.size - off : chunk)) {
			free(buf);
			return -EIO;
		}
		for (i = 0; i < ((size_t)r + 7) / 8; i++)
			h = (h ^ buf[i]) * 0x100000001b3ull;
	}
	free(buf);
	*size = st.size;
	*hash = h ^ st.size;
	return 0;
}

const char *sxb_errname(int error)
{
	static const struct { int e; const char *n; } names[] = {
		{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EIO, "EIO" }, { EBADF, "EBADF" },
		{ ENOMEM, "ENOMEM" }, { EBUSY, "EBUSY" }, { EEXIST, "EEXIST" }, { EXDEV, "EXDEV" },
		{ EISDIR, "EISDIR" }, { EINVAL, "EINVAL" }, { ETXTBSY, "ETXTBSY" },
		{ EFBIG, "EFBIG" }, { ENOSPC, "ENOSPC" }, { EROFS, "EROFS" }, { EDOM, "EDOM" },
		{ ENOTTY, "ENOTTY" }, { EOPNOTSUPP, "EOPNOTSUPP" }, { EDQUOT, "EDQUOT" },
		{ EUCLEAN, "EFSCORRUPTED" }, { EBADMSG, "EFSBADCRC" }, { EAGAIN, "EAGAIN" },
		{ EINTR, "EINTR" }, { EACCES, "EACCES" }, { ENOSYS, "ENOSYS" },
	};
	static char other[24];
	size_t i;

	if (error < 0)
		error = -error;
	if (!error)
		return "0";
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == error)
			return names[i].n;
	snprintf(other, sizeof(other), "errno%d", error);
	return other;
}

void sxb_model_init(struct sxb_model *m, uint64_t nblk)
{
	m->size = 0;
	m->nblk = nblk;
	m->tag = calloc(nblk ? nblk : 1, sizeof(uint64_t));
	if (!m->tag)
		abort();
}

void sxb_model_free(struct sxb_model *m)
{
	free(m->tag);
	m->tag = NULL;
}

void sxb_model_copy(struct sxb_model *dst, const struct sxb_model *src)
{
	dst->size = src->size;
	memcpy(dst->tag, src->tag, (src->nblk < dst->nblk ? src->nblk : dst->nblk) * 8);
}

void sxb_model_swap(struct sxb_model *a, uint64_t o1, struct sxb_model *b, uint64_t o2,
		    uint64_t n)
{
	uint64_t i, t;

	for (i = 0; i < n; i++) {
		t = a->tag[o1 + i];
		a->tag[o1 + i] = b->tag[o2 + i];
		b->tag[o2 + i] = t;
	}
}

int sxb_verify(const struct sxb *b, int fd, const struct sxb_model *m, char *msg, size_t len)
{
	struct sxb_stat st;
	uint64_t nb, i, *got;
	int error;

	error = b->fstat(b->ctx, fd, &st);
	if (error) {
		snprintf(msg, len, "fstat: %s", sxb_errname(error));
		return -1;
	}
	if (st.size != m->size) {
		snprintf(msg, len, "size %llu, expected %llu", (unsigned long long)st.size,
			 (unsigned long long)m->size);
		return -1;
	}
	/* whole blocks only: a partial EOF block is checked up to the size */
	nb = m->size / b->bs;
	got = malloc((nb ? nb : 1) * sizeof(*got));
	if (!got)
		return -1;
	error = sxb_read_tags(b, fd, 0, nb, got);
	if (error) {
		snprintf(msg, len, "read: %s", sxb_errname(error));
		free(got);
		return -1;
	}
	for (i = 0; i < nb; i++) {
		if (got[i] != m->tag[i]) {
			snprintf(msg, len, "block %llu: tag %llx, expected %llx",
				 (unsigned long long)i, (unsigned long long)got[i],
				 (unsigned long long)m->tag[i]);
			free(got);
			return -1;
		}
	}
	free(got);
	if (m->size % b->bs) {
		uint64_t *buf = calloc(1, b->bs), words = (m->size % b->bs) / 8, k;
		int64_t r = b->pread(b->ctx, fd, buf, b->bs, nb * b->bs);

		if (r != (int64_t)(m->size % b->bs)) {
			snprintf(msg, len, "EOF block: read %lld", (long long)r);
			free(buf);
			return -1;
		}
		for (k = 0; k < words; k++) {
			if (buf[k] != m->tag[nb]) {
				snprintf(msg, len, "EOF block %llu: word %llx, expected %llx",
					 (unsigned long long)nb, (unsigned long long)buf[k],
					 (unsigned long long)m->tag[nb]);
				free(buf);
				return -1;
			}
		}
		free(buf);
	}
	return 0;
}

int sxb_verify_diag(const struct sxb *b, int fd, const struct sxb_model *m, char *msg,
		    size_t len)
{
	char again[160];
	size_t n;

	if (!sxb_verify(b, fd, m, msg, len))
		return 0;
	if (!b->drop_caches || b->drop_caches(b->ctx))
		return -1;
	n = strlen(msg);
	if (!sxb_verify(b, fd, m, again, sizeof(again)))
		snprintf(msg + n, len - n, " (from the disk: right: stale cache)");
	else if (!strcmp(again, msg))
		snprintf(msg + n, len - n, " (from the disk: the same)");
	else
		snprintf(msg + n, len - n, " (from the disk: %s)", again);
	return -1;
}

void sxb_result(struct sxb_report *r, int ok, const char *name, const char *fmt, ...)
{
	char why[512] = "";
	va_list ap;

	if (ok)
		r->passed++;
	else
		r->failed++;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
	}
	/* "name (detail)" on a pass, "name: why" on a failure, the name alone if nothing */
	if (!why[0])
		fprintf(r->out, "%s %s %s\n", r->prefix, ok ? "PASS" : "FAIL", name);
	else
		fprintf(r->out, "%s %s %s%s%s%s\n", r->prefix, ok ? "PASS" : "FAIL", name,
			ok ? " (" : ": ", why, ok ? ")" : "");
	fflush(r->out);
}
