// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The pass criterion's comparison: which problems the checker finds after
 * the workload (P1) the damage had not already caused (P0).
 *
 * An exact match of lines is too strict: the workload's legitimate work
 * changes the numbers in a problem the damage caused (a clone of a file
 * whose blocks have a refcount one too high turns "mapped 1 time, but has
 * a refcount record of 2" into "mapped 2 times, but its refcount is 3";
 * a new file turns "fsinfo counts 17 inodes, 16 were found" into "18 ...,
 * 17 ...").  What must not happen is damage spreading to what was sound,
 * or a block becoming cross-linked.  So a P1 problem is known when:
 *   - it names a subject (block N, inode N, directory N, superblock copy
 *     N, refcount record [N; an inode's number is its block's, so inode
 *     N is block N) that some P0 problem names too, and if it is
 *     a cross-link (below), that P0 problem is one too (a block the damage
 *     left mapped twice with a refcount of 1 is freed by the first unmap:
 *     "free but mapped" is the same damage); or
 *   - it names none, and a P0 problem reads the same but for its digits.
 * A cross-link is a block free but in use, metadata also mapped, a block
 * used twice, an inode reached twice, or a block mapped more times than
 * its refcount (the next free of it frees a block still mapped): the
 * allocator handing out what something owns, which the damage may cause
 * only where the checker already saw it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ffz.h"
#include "sxtext.h"

#define C_PROBLEM	"problem: "

/*
 * The subjects a problem line can name, each followed by a number, and the
 * name the subject goes by: an inode's number is its block's, and the
 * root directory is an inode, so "inode block 7", "inode 7", "directory 7"
 * and "block 7" are one subject.
 */
static const struct {
	const char	*key;
	const char	*as;
} c_keys[] = {
	{ "block ", "block " }, { "inode ", "block " }, { "inode number ", "block " },
	{ "directory ", "block " }, { "copy ", "superblock copy " },
	{ "record [", "refcount record [" },
};

/* The subject of @line: its name and number, in @buf; false if none. */
static bool c_subject(const char *line, size_t len, char *buf, size_t blen)
{
	size_t i, k, kl, n;

	for (i = 0; i < len; i++) {
		for (k = 0; k < ARRAY_SIZE(c_keys); k++) {
			kl = strlen(c_keys[k].key);
			if (i + kl >= len || memcmp(line + i, c_keys[k].key, kl) ||
			    line[i + kl] < '0' || line[i + kl] > '9')
				continue;
			for (n = i + kl; n < len && line[n] >= '0' && line[n] <= '9'; n++)
				;
			snprintf(buf, blen, "%s%.*s", c_keys[k].as, (int)(n - i - kl), line + i + kl);
			return true;
		}
	}
	return false;
}

/*
 * @line with each run of digits made '#' and "times" made "time", so that
 * two problems that differ only in their counts read the same.
 */
static void c_mask(const char *line, size_t len, char *out, size_t olen)
{
	size_t i = 0, o = 0;

	while (i < len && o + 1 < olen) {
		if (line[i] >= '0' && line[i] <= '9') {
			while (i < len && line[i] >= '0' && line[i] <= '9')
				i++;
			out[o++] = '#';
			continue;
		}
		if (i + 5 <= len && o + 5 < olen && !memcmp(line + i, "times", 5)) {
			memcpy(out + o, "time", 4);
			o += 4;
			i += 5;
			continue;
		}
		out[o++] = line[i++];
	}
	out[o] = 0;
}

/* True if the @alen bytes at @a and the @blen at @b read the same but for their counts. */
static bool c_same_but_digits(const char *a, size_t alen, const char *b, size_t blen)
{
	char ma[256], mb[256];

	c_mask(a, alen, ma, sizeof(ma));
	c_mask(b, blen, mb, sizeof(mb));
	return !strcmp(ma, mb);
}

/* True if @line reports a cross-link (see the top of this file). */
static bool c_crosslink(const char *line, size_t len)
{
	static const char *const words[] = {
		"is free but", "is metadata and also mapped", "is already used as metadata",
		"is reached twice",
	};
	unsigned long long mapped, refc;
	const char *p;
	char tmp[256];
	size_t i;

	snprintf(tmp, sizeof(tmp), "%.*s", (int)len, line);
	for (i = 0; i < ARRAY_SIZE(words); i++)
		if (strstr(tmp, words[i]))
			return true;
	p = strstr(tmp, " is mapped ");
	if (p && sscanf(p, " is mapped %llu times, but its refcount is %llu", &mapped, &refc) == 2)
		return mapped > refc;
	return false;
}

/* The next problem line of @t from *@pos, or NULL; its length in *@len. */
static const char *c_next(const struct sxt_text *t, size_t *pos, size_t *len)
{
	const char *s = t->text ? t->text : "";

	while (s[*pos]) {
		const char *p = s + *pos, *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		*pos += l + (e ? 1 : 0);
		if (l > strlen(C_PROBLEM) && !memcmp(p, C_PROBLEM, strlen(C_PROBLEM))) {
			*len = l;
			return p;
		}
	}
	return NULL;
}

/* True if problem @line of P1 is one P0 (@p0) already accounts for. */
static bool c_known(const struct sxt_text *p0, const char *line, size_t len)
{
	char subj[64], s0[64];
	bool has = c_subject(line, len, subj, sizeof(subj)), cross = c_crosslink(line, len);
	const char *q;
	size_t pos = 0, l;

	while ((q = c_next(p0, &pos, &l)) != NULL) {
		if (l == len && !memcmp(q, line, len))
			return true;
		if (!has) {
			if (c_same_but_digits(q, l, line, len))
				return true;
			continue;
		}
		if (cross && !c_crosslink(q, l))
			continue;
		if (c_subject(q, l, s0, sizeof(s0)) && !strcmp(s0, subj))
			return true;
	}
	return false;
}

u32 ffz_new_problems(const struct sxt_text *p0, const struct sxt_text *p1, char *first,
		     size_t flen)
{
	const char *line;
	size_t pos = 0, len;
	u32 n = 0;

	while ((line = c_next(p1, &pos, &len)) != NULL) {
		if (c_known(p0, line, len))
			continue;
		if (!n++)
			snprintf(first, flen, "%.*s", (int)len, line);
	}
	return n;
}

u32 ffz_new_crosslinks(const struct sxt_text *p0, const struct sxt_text *p1, char *first,
		       size_t flen)
{
	const char *line;
	size_t pos = 0, len;
	u32 n = 0;

	while ((line = c_next(p1, &pos, &len)) != NULL) {
		if (!c_crosslink(line, len) || c_known(p0, line, len))
			continue;
		if (!n++)
			snprintf(first, flen, "%.*s", (int)len, line);
	}
	return n;
}
