// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The crash-test harness (see sxcrash.h).
 */
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sxcrash.h"

/* Problem lines printed with a failed clean check; the rest are counted. */
#define SXC_PROBLEM_LINES	20

struct sxc_count sxc_count;
static const enum sx_crash_mode sxc_modes[3] = { SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR };

static enum sxc_level sxc_lvl = SXC_NORMAL;

void sxc_fail_at(const char *func, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s:%d: %s: ", func, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

enum sxc_level sxc_start(void)
{
	const char *lv = getenv("SX_CRASH_LEVEL");

	sxc_lvl = SXC_NORMAL;
	if (lv && !strcmp(lv, "quick"))
		sxc_lvl = SXC_QUICK;
	else if (lv && !strcmp(lv, "long"))
		sxc_lvl = SXC_LONG;
	sx_thread_enter();
	sxt_quiet();
	return sxc_lvl;
}

enum sxc_level sxc_level(void)
{
	return sxc_lvl;
}

u64 sxc_pick(u64 quick, u64 normal, u64 slow)
{
	return sxc_lvl == SXC_QUICK ? quick : sxc_lvl == SXC_LONG ? slow : normal;
}

int sxc_tally(int ret)
{
	if (ret < 0)
		sxc_count.failed++;
	else
		sxc_count.passed++;
	return ret;
}

void sxc_fail(const char *fmt, ...)
{
	va_list ap;

	sxc_count.failed++;
	fputs("FAIL ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int sxc_end(void)
{
	printf("%llu passed, %llu failed\n", (unsigned long long)sxc_count.passed,
	       (unsigned long long)sxc_count.failed);
	return sxc_count.failed ? 1 : 0;
}

s64 sxc_checker(struct sx_bdev *bd, u32 flags, struct sxt_text *r)
{
	struct sxt_text own;
	u64 problems = 0;
	int error;

	if (!r)
		r = &own;
	memset(r, 0, sizeof(*r));
	error = sx_check_flags(bd, flags, sxt_text_line, r, &problems);
	if (getenv("SX_TEST_VERBOSE") && r->text)
		fputs(r->text, stderr);
	if (r == &own)
		sxt_text_free(r);
	return error ? error : (s64)problems;
}

int sxc_check_clean(struct sx_bdev *bd, u32 flags, const char *what)
{
	struct sxt_text r;
	s64 problems = sxc_checker(bd, flags, &r);
	const char *line = r.text, *end;
	u32 shown = 0;

	if (problems == 0) {
		sxt_text_free(&r);
		return 0;
	}
	if (problems < 0)
		fprintf(stderr, "FAIL %s: the checker could not run: %s\n", what,
			sx_strerror((int)problems));
	else
		fprintf(stderr, "FAIL %s: the checker found %lld problems\n", what,
			(long long)problems);
	/* the problems themselves, unless SX_TEST_VERBOSE printed every line already */
	if (getenv("SX_TEST_VERBOSE"))
		line = NULL;
	for (; line && (end = strchr(line, '\n')); line = end + 1) {
		if (strncmp(line, "problem: ", 9) || shown++ >= SXC_PROBLEM_LINES)
			continue;
		fprintf(stderr, "  %.*s\n", (int)(end - line), line);
	}
	if (shown > SXC_PROBLEM_LINES)
		fprintf(stderr, "  (%u more)\n", shown - SXC_PROBLEM_LINES);
	sxt_text_free(&r);
	return -1;
}

/*
 * The device a second recovery runs on: over the recovered image, it keeps
 * the bytes each sector held before its first write (or discard), so that
 * after the mount and unmount those sectors can be seen to hold them again.
 * Exact, and it costs what the mount writes, not the size of the image.
 */
struct sxc_keep {
	struct sx_bdev	k_bdev;
	struct sx_bdev	*k_lower;
	pthread_mutex_t	k_lock;
	u8		*k_saved;	/* a bit per sector: its old bytes are kept */
	u64		*k_sect;	/* the sectors kept, in order */
	u8		*k_old;		/* and their bytes */
	u64		k_n;
	u64		k_cap;
	int		k_error;	/* a read of the old bytes failed */
};

static struct sxc_keep *sxc_keep_of(struct sx_bdev *bd)
{
	return bd->bd_ctx;
}

/* Keep the old bytes of the sectors of [@off, +@len) not kept yet. */
static void sxc_keep_old(struct sxc_keep *k, u64 off, u64 len)
{
	u32 ss = k->k_bdev.bd_sectsize;
	u64 s;

	for (s = off / ss; s < sx_howmany(off + len, ss); s++) {
		if (k->k_saved[s / 8] & (1u << (s % 8)))
			continue;
		if (k->k_n == k->k_cap) {
			k->k_cap = k->k_cap ? 2 * k->k_cap : 64;
			k->k_sect = realloc(k->k_sect, k->k_cap * sizeof(*k->k_sect));
			k->k_old = realloc(k->k_old, k->k_cap * ss);
			if (!k->k_sect || !k->k_old)
				abort();
		}
		if (k->k_lower->bd_ops->read(k->k_lower, s * ss, k->k_old + k->k_n * ss, ss))
			k->k_error = -EIO;
		k->k_saved[s / 8] |= 1u << (s % 8);
		k->k_sect[k->k_n++] = s;
	}
}

static int sxc_keep_read(struct sx_bdev *bd, u64 off, void *buf, size_t len)
{
	struct sxc_keep *k = sxc_keep_of(bd);

	return k->k_lower->bd_ops->read(k->k_lower, off, buf, len);
}

static int sxc_keep_write(struct sx_bdev *bd, u64 off, const void *buf, size_t len,
			  unsigned int flags)
{
	struct sxc_keep *k = sxc_keep_of(bd);
	int error;

	pthread_mutex_lock(&k->k_lock);
	sxc_keep_old(k, off, len);
	error = k->k_lower->bd_ops->write(k->k_lower, off, buf, len, flags);
	pthread_mutex_unlock(&k->k_lock);
	return error;
}

static int sxc_keep_flush(struct sx_bdev *bd)
{
	struct sxc_keep *k = sxc_keep_of(bd);

	return k->k_lower->bd_ops->flush(k->k_lower);
}

static int sxc_keep_discard(struct sx_bdev *bd, u64 off, u64 len)
{
	struct sxc_keep *k = sxc_keep_of(bd);
	int error;

	if (!k->k_lower->bd_ops->discard)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&k->k_lock);
	sxc_keep_old(k, off, len);
	error = k->k_lower->bd_ops->discard(k->k_lower, off, len);
	pthread_mutex_unlock(&k->k_lock);
	return error;
}

static void sxc_keep_destroy(struct sx_bdev *bd)
{
	struct sxc_keep *k = sxc_keep_of(bd);

	pthread_mutex_destroy(&k->k_lock);
	free(k->k_saved);
	free(k->k_sect);
	free(k->k_old);
	free(k);
}

static const struct sx_bdev_ops sxc_keep_ops = {
	.read		= sxc_keep_read,
	.write		= sxc_keep_write,
	.flush		= sxc_keep_flush,
	.discard	= sxc_keep_discard,
	.destroy	= sxc_keep_destroy,
};

static struct sx_bdev *sxc_keep_create(struct sx_bdev *lower)
{
	struct sxc_keep *k = calloc(1, sizeof(*k));
	u64 nsect = lower->bd_size / lower->bd_sectsize;

	if (!k || !(k->k_saved = calloc(sx_howmany(nsect, 8), 1)))
		abort();
	pthread_mutex_init(&k->k_lock, NULL);
	k->k_lower = lower;
	k->k_bdev.bd_ops = &sxc_keep_ops;
	k->k_bdev.bd_ctx = k;
	k->k_bdev.bd_size = lower->bd_size;
	k->k_bdev.bd_sectsize = lower->bd_sectsize;
	return &k->k_bdev;
}

/* True if every sector written since sxc_keep_create() holds its old bytes again. */
static bool sxc_keep_same(struct sx_bdev *bd)
{
	struct sxc_keep *k = sxc_keep_of(bd);
	u32 ss = bd->bd_sectsize;
	u8 *now = malloc(ss);
	bool same = !k->k_error;
	u64 i;

	if (!now)
		abort();
	for (i = 0; i < k->k_n && same; i++)
		same = !k->k_lower->bd_ops->read(k->k_lower, k->k_sect[i] * ss, now, ss) &&
		       !memcmp(now, k->k_old + i * ss, ss);
	free(now);
	return same;
}

int sxc_recover_verify(struct sx_bdev *bd, u32 check_flags, sxc_ok_fn ok, const void *arg,
		       const char *what)
{
	struct sx_bdev *keep;
	struct sx_mount *mp;
	int error, ret = 0;
	bool same;

	error = sx_mount(bd, NULL, &mp);
	SXC_CHECK(error == 0, "%s: mount after crash: %s", what, sx_strerror(error));
	if (ok)
		ret = ok(mp, arg, what);
	error = sx_unmount(mp);
	if (ret < 0)
		return -1;
	SXC_CHECK(error == 0, "%s: unmount after recovery: %s", what, sx_strerror(error));
	if (sxc_check_clean(bd, check_flags, what))
		return -1;
	/* a recovered image holds nothing to recover: mounting again writes the same bytes */
	keep = sxc_keep_create(bd);
	error = sx_mount(keep, NULL, &mp);
	if (!error)
		error = sx_unmount(mp);
	same = sxc_keep_same(keep);
	sx_bdev_destroy(keep);
	SXC_CHECK(error == 0, "%s: second mount and unmount: %s", what, sx_strerror(error));
	SXC_CHECK(same, "%s: second recovery changed the image", what);
	return ret;
}

u64 sxc_cut_writes(const struct sxc_cuts *c, sxc_cut_fn cut, void *arg)
{
	const enum sx_crash_mode *modes = c->modes ? c->modes : sxc_modes;
	u32 nmodes = c->modes ? c->nmodes : ARRAY_SIZE(sxc_modes);
	u32 per_point = c->per_point ? c->per_point : 1, m;
	u64 step = c->step ? c->step : 1, w, turn = 0, cuts = 0;

	for (w = c->first ? c->first : 1; w <= c->last; w += step) {
		for (m = 0; m < per_point; m++, cuts++)
			sxc_tally(cut(arg, w, modes[turn++ % nmodes]));
	}
	return cuts;
}

struct sx_bdev *sxc_cut_dev(struct sx_bdev *img, u64 seed, u64 w, enum sx_crash_mode mode,
			    struct sx_crashdev **cd)
{
	struct sx_crashdev *ctl;
	struct sx_bdev *cbd;

	VERIFY(sx_crashdev_create(img, seed, &cbd, &ctl) == 0);
	if (w)
		sx_crashdev_cut_at_write(ctl, w, mode);
	if (cd)
		*cd = ctl;
	return cbd;
}

/* What sxc_cut_recovery() hands to each cut. */
struct sxc_rcut {
	struct sx_bdev	*crashed;
	u64		seed;
	u64		nwrites;
	u32		check_flags;
	sxc_ok_fn	ok;
	const void	*arg;
	int		ref;
};

/* Mount and unmount @bd: a recovery, cut or not (a cut mount may fail). */
static void sxc_recover(struct sx_bdev *bd)
{
	struct sx_mount *mp;

	if (sx_mount(bd, NULL, &mp) == 0)
		sx_unmount(mp);
}

static int sxc_cut_one_recovery(void *arg, u64 w, enum sx_crash_mode mode)
{
	struct sxc_rcut *rc = arg;
	struct sx_bdev *copy = sxt_bdev_copy(rc->crashed);
	struct sx_bdev *cbd = sxc_cut_dev(copy, rc->seed + w, w, mode, NULL);
	char what[96];
	int got;

	sxc_recover(cbd);
	sx_bdev_destroy(cbd);
	snprintf(what, sizeof(what), "recovery crash at write %llu/%llu %s",
		 (unsigned long long)w, (unsigned long long)rc->nwrites, sxf_mode_name(mode));
	got = sxc_recover_verify(copy, rc->check_flags, rc->ok, rc->arg, what);
	sx_bdev_destroy(copy);
	if (got < 0)
		return -1;
	SXC_CHECK(got == rc->ref, "%s: state %d, uninterrupted recovery gave %d", what, got,
		  rc->ref);
	return 0;
}

u64 sxc_cut_recovery(struct sx_bdev *crashed, const struct sxc_cuts *c, u64 seed,
		     u32 check_flags, sxc_ok_fn ok, const void *arg, int ref)
{
	struct sxc_rcut rc = { crashed, seed, c->last, check_flags, ok, arg, ref };
	struct sxc_cuts cuts = *c;

	if (!cuts.last) {
		struct sx_bdev *copy = sxt_bdev_copy(crashed), *cbd;
		struct sx_crashdev_stats st;
		struct sx_crashdev *cd;

		cbd = sxc_cut_dev(copy, 1, 0, 0, &cd);
		sxc_recover(cbd);
		sx_crashdev_get_stats(cd, &st);
		sx_bdev_destroy(cbd);
		sx_bdev_destroy(copy);
		cuts.last = rc.nwrites = st.cs_writes;
	}
	return sxc_cut_writes(&cuts, sxc_cut_one_recovery, &rc);
}
