// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Field fuzzing of golden images (make fieldfuzz; a sample in make check).
 *
 * Each case damages one field of one object of a golden image (ffz.h) in
 * one of eight ways (zero, all ones, high/middle/low bit flipped, +1, -1,
 * random bytes from the fixed seed), with the CRC that covers it made right
 * again or left stale, or restores one metadata block to its older version
 * (a lost write).  A forked child then runs the checker on the damaged
 * image (P0), mounts it (log recovery runs), runs a short workload (a
 * copy-on-write, a clone, an atomic swap, fsyncs, a read of a whole file,
 * unmount) and runs the checker again (P1).
 *
 * A case passes when:
 *   - the mount fails with an error (a negative errno), or
 *   - an operation or the unmount fails with -EFSCORRUPTED, -EFSBADCRC or
 *     -EIO, or the mount shuts down: the engine noticed and stopped, or
 *   - everything else succeeds (an operation may be refused with another
 *     error, say -ENOENT for a name the damage took away; the workload
 *     goes on without it), and every problem line of P1 is a line of P0:
 *     the workload added no problem the damage had not already caused.
 * It fails when the child dies (signal, assertion), runs past the timeout,
 * exits without finishing (a sanitizer report), leaks memory (under ASan),
 * or the workload succeeds and P1 has a line P0 lacks.
 *
 * Every case runs in a child forked from the process holding the golden
 * images, so the damage lands in the child's copy-on-write copy of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "ffz.h"
#include "sxfork.h"
#include "sxtext.h"
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

/* Options. */
static u64 o_seed = 0x5eedf1e1dull;
static u32 o_every = 40;	/* make check: a sample; --all: 1 */
static u32 o_jobs;
static u32 o_per_type = 3;
static u32 o_timeout = 120;
static const char *o_only;
static const char *o_logdir;
static const char *o_report;
static s64 o_case = -1;
static bool o_list;
static bool o_fields = true;

static struct ffz_image images[FFZ_NIMG];
static struct ffz_obj *objects;
static u32 nobjects;
static struct ffz_case *cases;
static u32 ncases;
static struct ffz_res *results;
/* the same, for damage.c and report.c */
static struct ffz_set set;

/* ------------------------------------------------------------ a case */

static struct ffz_res *w_res;

/* A step's error: true if the workload stops (the engine noticed damage). */
static bool w_err(struct sx_mount *mp, u32 step, s64 error)
{
	if (error >= 0 && !sx_shutdown_state(mp, NULL, 0))
		return false;
	if (error == -EFSCORRUPTED || error == -EFSBADCRC || error == -EIO ||
	    sx_shutdown_state(mp, w_res->r_line, sizeof(w_res->r_line))) {
		w_res->r_err_step = step;
		w_res->r_error = (s32)error;
		return true;
	}
	if (!w_res->r_refused++) {
		w_res->r_err_step = step;
		w_res->r_error = (s32)error;
	}
	return false;
}

static void w_phase(u32 step)
{
	w_res->r_phase = step;
}

/*
 * The workload: a copy-on-write into big (its blocks are shared with
 * share), a clone of big, an atomic swap of 16 blocks of big and pad,
 * fsyncs, a read of all of big.  Returns true if it stopped on damage.
 */
static bool ffz_workload(struct sx_mount *mp)
{
	struct file_swap_range fsr;
	int big = -1, pad = -1, nu = -1, error;
	u64 off, *buf = malloc(16 * FFZ_BS);
	struct sx_stat st;
	bool stop = false;
	s64 n;
	u32 i;

	if (!buf)
		abort();
	w_phase(W_OPEN);
	error = sx_open(mp, FFZ_BIG, &big);
	if (w_err(mp, W_OPEN, error))
		goto out;
	if (error)
		big = -1;
	error = sx_open(mp, FFZ_PAD, &pad);
	if (w_err(mp, W_OPEN, error))
		goto out;
	if (error)
		pad = -1;

	w_phase(W_WRITE);
	for (i = 0; i < 2 * FFZ_BS / 8; i++)
		buf[i] = 0xf1e1d000 + i;
	n = big < 0 ? -EBADF : sx_pwrite(mp, big, buf, 2 * FFZ_BS, 3 * FFZ_BS);
	if (w_err(mp, W_WRITE, n == 2 * FFZ_BS ? 0 : n < 0 ? n : -ENOSPC))
		goto out;

	w_phase(W_CLONE);
	error = sx_create(mp, "new", 0644, &nu);
	if (w_err(mp, W_CLONE, error))
		goto out;
	if (error)
		nu = -1;
	error = nu < 0 || big < 0 ? -EBADF : sx_clone(mp, nu, big);
	if (w_err(mp, W_CLONE, error))
		goto out;

	w_phase(W_SWAP);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = big;
	fsr.file1_offset = 16 * FFZ_BS;
	fsr.file2_offset = 16 * FFZ_BS;
	fsr.length = 16 * FFZ_BS;
	error = big < 0 || pad < 0 ? -EBADF : sx_swap_file_range(mp, pad, &fsr);
	if (w_err(mp, W_SWAP, error))
		goto out;

	w_phase(W_FSYNC);
	if ((big >= 0 && w_err(mp, W_FSYNC, sx_fsync(mp, big))) ||
	    (nu >= 0 && w_err(mp, W_FSYNC, sx_fsync(mp, nu))) ||
	    (pad >= 0 && w_err(mp, W_FSYNC, sx_fsync(mp, pad))))
		goto out;

	w_phase(W_READ);
	if (big >= 0) {
		error = sx_fstat(mp, big, &st);
		if (w_err(mp, W_READ, error))
			goto out;
		/* damage may make the size anything: read what the device could hold */
		for (off = 0; !error && off < sx_min(st.st_size, FFZ_SIZE); off += (u64)n) {
			n = sx_pread(mp, big, buf, 16 * FFZ_BS, off);
			if (w_err(mp, W_READ, n <= 0 ? (n ? n : -ENODATA) : 0))
				goto out;
			if (n <= 0)
				break;
		}
	}
	w_phase(W_CLOSE);
	free(buf);
	buf = NULL;
	if ((big >= 0 && w_err(mp, W_CLOSE, sx_close(mp, big))) ||
	    (pad >= 0 && w_err(mp, W_CLOSE, sx_close(mp, pad))) ||
	    (nu >= 0 && w_err(mp, W_CLOSE, sx_close(mp, nu))))
		stop = true;
	return stop;
out:
	free(buf);
	/* the unmount closes what is left open */
	return true;
}

/* The problem lines of a checker report, each ending in '\n'. */
static u32 ffz_problems(const struct sxt_text *t)
{
	return (u32)t->problem_lines;
}

static s64 ffz_check(struct sx_bdev *bd, struct sxt_text *t, bool verbose, const char *what)
{
	u64 problems = 0;
	int error;

	memset(t, 0, sizeof(*t));
	error = sx_check_flags(bd, SX_CHECK_ALL_BLOCKS, sxt_text_line, t, &problems);
	if (verbose && t->text)
		printf("--- checker %s:\n%s", what, t->text);
	return error ? error : (s64)problems;
}

/* True if case @c is a log record forged with a valid CRC (see O_FORGED). */
static bool ffz_forged(const struct ffz_case *c)
{
	const struct ffz_obj *o;

	if (!c || c->c_x == X_LOST)
		return false;
	o = &objects[c->c_obj];
	return o->o_crc == FFZ_CRC_LOG && !c->c_stale &&
	       !(ffz_obj_field(o, c->c_field)->f_flags & FFZ_F_CRC);
}

/* Append the lines of @from to @to. */
static void ffz_text_add(struct sxt_text *to, const struct sxt_text *from)
{
	const char *p = from->text;

	while (p && *p) {
		const char *e = strchr(p, '\n');
		int l = e ? (int)(e - p) : (int)strlen(p);

		sxt_text_line(to, "%.*s", l, p);
		p += l + (e ? 1 : 0);
	}
}

/*
 * Recovery alone, for an image whose log needs it: mount and unmount, and
 * check.  Before recovery the checker sees a crash image whose blocks lag
 * the log, so what the damage caused is what it reports before and after
 * recovery together (added to @p0).  Recovery must not make a cross-link
 * of the damage (compare.c): the first such problem fails the case.
 * Returns false if the case ended here.
 */
static bool ffz_recover(struct sx_bdev *bd, const struct ffz_case *c, struct sxt_text *p0,
			struct ffz_res *r, bool verbose)
{
	struct sxt_text pr;
	struct sx_mount *mp;
	int error;
	s64 n;

	w_phase(W_RECOVER);
	error = sx_mount(bd, NULL, &mp);
	if (error) {
		r->r_outcome = O_MOUNT_ERR;
		r->r_err_step = W_RECOVER;
		r->r_error = error;
		return false;
	}
	error = sx_unmount(mp);
	if (error) {
		r->r_outcome = O_OP_ERR;
		r->r_err_step = W_RECOVER;
		r->r_error = error;
		return false;
	}
	n = ffz_check(bd, &pr, verbose, "after recovery alone");
	if (n < 0) {
		r->r_outcome = O_FAIL_CHECK;
		r->r_error = (s32)n;
		sxt_text_free(&pr);
		return false;
	}
	/* a forged record's every effect is counted apart; otherwise cross-links fail */
	r->r_prec = ffz_forged(c) ? ffz_new_problems(p0, &pr, r->r_line, sizeof(r->r_line)) :
				    ffz_new_crosslinks(p0, &pr, r->r_line, sizeof(r->r_line));
	ffz_text_add(p0, &pr);
	sxt_text_free(&pr);
	if (r->r_prec) {
		r->r_outcome = ffz_forged(c) ? O_FORGED : O_FAIL_RECOVERY;
		return false;
	}
	return true;
}

/* Run case @c (NULL: undamaged) on @bd, a copy of image @img; fills @r. */
static void ffz_run(struct sx_bdev *bd, u32 img, const struct ffz_case *c, struct ffz_res *r,
		    bool verbose)
{
	struct sxt_text p0, p1;
	struct sx_mount *mp;
	bool stop;
	s64 n;
	int error;

	w_res = r;
	w_phase(W_DAMAGE);
	if (c)
		ffz_damage(&set, bd, c);
	w_phase(W_CHECK0);
	n = ffz_check(bd, &p0, verbose, "before the mount");
	if (n < 0) {
		r->r_outcome = O_FAIL_CHECK;
		r->r_error = (s32)n;
		goto out_p0;
	}
	r->r_p0 = ffz_problems(&p0);
	if (img == FFZ_IMG_LOG && !ffz_recover(bd, c, &p0, r, verbose))
		goto out_p0;

	w_phase(W_MOUNT);
	error = sx_mount(bd, NULL, &mp);
	if (error) {
		r->r_outcome = O_MOUNT_ERR;
		r->r_err_step = W_MOUNT;
		r->r_error = error;
		goto out_p0;
	}
	stop = ffz_workload(mp);
	w_phase(W_UNMOUNT);
	error = sx_unmount(mp);
	if (stop || error) {
		if (!stop) {
			r->r_err_step = W_UNMOUNT;
			r->r_error = error;
		}
		r->r_outcome = O_OP_ERR;
		goto out_p0;
	}

	w_phase(W_CHECK1);
	n = ffz_check(bd, &p1, verbose, "after the workload");
	if (n < 0) {
		r->r_outcome = O_FAIL_CHECK;
		r->r_error = (s32)n;
		sxt_text_free(&p1);
		goto out_p0;
	}
	r->r_p1 = ffz_problems(&p1);
	r->r_pnew = ffz_new_problems(&p0, &p1, r->r_line, sizeof(r->r_line));
	r->r_outcome = r->r_pnew ? (ffz_forged(c) ? O_FORGED : O_FAIL_NEW) :
		       r->r_p1 ? O_OK_KNOWN : O_OK_CLEAN;
	sxt_text_free(&p1);
out_p0:
	sxt_text_free(&p0);
	w_phase(W_DONE);
}

/* The child of one case: run it, report in @r, exit. */
static void ffz_child(const struct ffz_case *c, struct ffz_res *r, u32 id)
{
	struct timespec t0, t1;
	char path[512];
	int fd;

	if (o_logdir) {
		snprintf(path, sizeof(path), "%s/case-%u.log", o_logdir, id);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
	}
	alarm(o_timeout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ffz_run(images[c->c_image].fi_bd, c->c_image, c, r, false);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->r_ms = (u32)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
#if defined(__SANITIZE_ADDRESS__)
	if (__lsan_do_recoverable_leak_check())
		r->r_outcome = O_FAIL_LEAK;
#endif
	r->r_done = 1;
	fflush(stdout);
	fflush(stderr);
	_exit(0);
}

/* ------------------------------------------------------------ the cases */

static void ffz_add_case(const struct ffz_case *c)
{
	static u32 cap;

	if (ncases == cap) {
		cap = cap ? 2 * cap : 4096;
		cases = realloc(cases, cap * sizeof(*cases));
		if (!cases)
			abort();
	}
	cases[ncases++] = *c;
}

/* Every case: each field of each object, each transform, both CRC modes; lost writes. */
static void ffz_cases(void)
{
	struct ffz_case c;
	u32 i, k, x, s, img;
	u64 blk;

	for (i = 0; i < nobjects; i++) {
		const struct ffz_obj *o = &objects[i];

		if (o_only && !strstr(o->o_type->ot_name, o_only))
			continue;
		for (k = 0; k < ffz_obj_nfields(o); k++) {
			bool crc = ffz_obj_field(o, k)->f_flags & FFZ_F_CRC;

			for (x = 0; x < FFZ_NX; x++) {
				for (s = 0; s < (crc ? 1u : 2u); s++) {
					memset(&c, 0, sizeof(c));
					c.c_obj = i;
					c.c_field = (u16)k;
					c.c_x = (u8)x;
					c.c_stale = (u8)(s || crc);
					c.c_image = o->o_image;
					ffz_add_case(&c);
				}
			}
		}
	}
	if (o_only && !strstr("lost write", o_only))
		return;
	for (img = 0; img < FFZ_NIMG; img++) {
		struct ffz_image *im = &images[img];
		u8 a[FFZ_BS], b[FFZ_BS];

		for (blk = 0; blk < FFZ_NBLOCKS; blk++) {
			if (!im->fi_meta[blk] && blk >= im->fi_sb.sb_datastart)
				continue;
			ffz_read(im->fi_bd, blk * FFZ_BS, a, FFZ_BS);
			ffz_read(im->fi_old, blk * FFZ_BS, b, FFZ_BS);
			if (!memcmp(a, b, FFZ_BS))
				continue;
			memset(&c, 0, sizeof(c));
			c.c_obj = ~0u;
			c.c_x = X_LOST;
			c.c_image = img;
			c.c_blk = blk;
			ffz_add_case(&c);
		}
	}
}

/* ------------------------------------------------------------ running */

struct ffz_kid {
	pid_t	k_pid;
	u32	k_case;
};

static void ffz_reap(struct ffz_kid *kids, u32 *nkids)
{
	struct ffz_res *r;
	int status;
	pid_t pid;
	u32 i;

	pid = waitpid(-1, &status, 0);
	if (pid < 0)
		abort();
	for (i = 0; i < *nkids && kids[i].k_pid != pid; i++)
		;
	if (i == *nkids)
		return;
	r = &results[kids[i].k_case];
	if (WIFSIGNALED(status)) {
		r->r_sig = WTERMSIG(status);
		r->r_outcome = r->r_sig == SIGALRM ? O_FAIL_HANG : O_FAIL_CRASH;
	} else if (!r->r_done) {
		r->r_outcome = O_FAIL_SAN;
		r->r_sig = WEXITSTATUS(status);
	}
	if (o_logdir && !ffz_failed(r->r_outcome)) {
		char path[512];

		snprintf(path, sizeof(path), "%s/case-%u.log", o_logdir, kids[i].k_case);
		unlink(path);
	}
	kids[i] = kids[--*nkids];
}

/* Run the cases whose index is a multiple of o_every, o_jobs at a time. */
static void ffz_run_all(void)
{
	struct ffz_kid kids[64];
	u32 nkids = 0, i, done = 0, total = 0;
	time_t last = time(NULL);

	for (i = 0; i < ncases; i += o_every)
		total++;
	for (i = 0; i < ncases; i += o_every) {
		pid_t pid;

		if (!ffz_damage(&set, NULL, &cases[i])) {
			results[i].r_outcome = O_UNCHANGED;
			done++;
			continue;
		}
		while (nkids >= o_jobs)
			ffz_reap(kids, &nkids), done++;
		pid = sxf_fork();
		if (pid < 0)
			abort();
		if (pid == 0)
			ffz_child(&cases[i], &results[i], i);
		kids[nkids].k_pid = pid;
		kids[nkids++].k_case = i;
		if (time(NULL) - last >= 30) {
			last = time(NULL);
			printf("fieldfuzz: %u of %u cases done\n", done, total);
			fflush(stdout);
		}
	}
	while (nkids)
		ffz_reap(kids, &nkids);
}

/* The undamaged images must come through the workload without any problem. */
static bool ffz_baseline(void)
{
	struct ffz_res *r = mmap(NULL, sizeof(*r) * FFZ_NIMG, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	bool ok = true;
	u32 img;

	if (r == MAP_FAILED)
		abort();
	for (img = 0; img < FFZ_NIMG; img++) {
		int status;
		pid_t pid = sxf_fork();

		if (pid == 0) {
			w_res = &r[img];
			ffz_run(images[img].fi_bd, img, NULL, &r[img], getenv("SX_TEST_VERBOSE") != NULL);
			r[img].r_done = 1;
			fflush(stdout);
			_exit(0);
		}
		waitpid(pid, &status, 0);
		if (!r[img].r_done || r[img].r_outcome != O_OK_CLEAN || r[img].r_refused) {
			printf("FAIL: golden image \"%s\" undamaged: %s at %s (%d, %u refused) %s\n",
			       images[img].fi_name, ffz_o_names[r[img].r_outcome],
			       ffz_w_names[r[img].r_phase], r[img].r_error, r[img].r_refused,
			       r[img].r_line);
			ok = false;
		}
	}
	munmap(r, sizeof(*r) * FFZ_NIMG);
	return ok;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
	fprintf(stderr,
		"usage: fieldfuzz [--all | --every N] [--jobs N] [--seed N] [--per-type N]\n"
		"                 [--only WORD] [--timeout S] [--logdir DIR] [--report FILE]\n"
		"                 [--no-fields] [--list] [--case ID]\n");
	exit(2);
}

static void ffz_args(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--all")) {
			o_every = 1;
		} else if (!strcmp(a, "--list")) {
			o_list = true;
		} else if (!strcmp(a, "--no-fields")) {
			o_fields = false;
		} else if (!v) {
			usage();
		} else if (!strcmp(a, "--every")) {
			o_every = (u32)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--jobs")) {
			o_jobs = (u32)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--seed")) {
			o_seed = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--per-type")) {
			o_per_type = (u32)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--only")) {
			o_only = v;
			i++;
		} else if (!strcmp(a, "--timeout")) {
			o_timeout = (u32)strtoul(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--logdir")) {
			o_logdir = v;
			i++;
		} else if (!strcmp(a, "--report")) {
			o_report = v;
			i++;
		} else if (!strcmp(a, "--case")) {
			o_case = strtoll(v, NULL, 0);
			i++;
		} else {
			usage();
		}
	}
	if (!o_every || !o_per_type)
		usage();
	if (!o_jobs)
		o_jobs = sxf_jobs();
	if (o_jobs > 64)
		o_jobs = 64;
}

int main(int argc, char **argv)
{
	struct ffz_tally total;
	struct timespec t0, t1;
	char name[256];
	u32 img, i;

	ffz_args(argc, argv);
	sx_thread_enter();
	sxt_quiet();
	setvbuf(stdout, NULL, _IOLBF, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("fieldfuzz: seed 0x%llx (--seed N), %u objects of each kind, every %u%s case\n",
	       (unsigned long long)o_seed, o_per_type, o_every,
	       o_every == 1 ? "st" : o_every == 2 ? "nd" : o_every == 3 ? "rd" : "th");
	ffz_golden_build(images);
	for (img = 0; img < FFZ_NIMG; img++) {
		ffz_locate(&images[img], img, &objects, &nobjects, o_per_type);
		printf("fieldfuzz: golden \"%s\": digest %016llx, %u log records\n",
		       images[img].fi_name, (unsigned long long)sxt_bdev_digest(images[img].fi_bd),
		       images[img].fi_nrecs);
	}
	ffz_cases();
	set = (struct ffz_set){
		.s_images = images, .s_objects = objects, .s_cases = cases, .s_ncases = ncases,
		.s_every = o_every, .s_seed = o_seed, .s_fields = o_fields,
	};
	printf("fieldfuzz: %u objects, %u cases (8 transforms, CRC recomputed and stale, lost writes)\n",
	       nobjects, ncases);
	if (o_list) {
		for (i = 0; i < ncases; i++)
			printf("%u %s\n", i, ffz_case_name(&set, &cases[i], name, sizeof(name)));
		return 0;
	}
	results = mmap(NULL, sizeof(*results) * (ncases ? ncases : 1), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (results == MAP_FAILED)
		abort();
	set.s_results = results;
	if (o_case >= 0) {
		struct ffz_res r;

		if ((u64)o_case >= ncases)
			usage();
		memset(&r, 0, sizeof(r));
		printf("case %lld: %s\n", (long long)o_case,
		       ffz_case_name(&set, &cases[o_case], name, sizeof(name)));
		if (getenv("SX_TEST_VERBOSE") == NULL)
			setenv("SX_TEST_VERBOSE", "1", 1);
		ffz_run(images[cases[o_case].c_image].fi_bd, cases[o_case].c_image, &cases[o_case], &r,
			true);
		printf("outcome: %s at %s, error %d (%s), %u refused, problems %u before, %u after, %u new %s\n",
		       ffz_o_names[r.r_outcome], ffz_w_names[r.r_err_step], r.r_error,
		       r.r_error ? sx_strerror(r.r_error) : "", r.r_refused, r.r_p0, r.r_p1,
		       r.r_pnew, r.r_line);
		return ffz_failed(r.r_outcome);
	}
	if (!ffz_baseline()) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	ffz_run_all();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ffz_figures(&set, stdout, &total);
	if (o_report) {
		FILE *f = fopen(o_report, "w");

		if (f) {
			fprintf(f, "fieldfuzz: seed 0x%llx, %u objects of each kind, every %u case(s)\n",
				(unsigned long long)o_seed, o_per_type, o_every);
			ffz_figures(&set, f, &total);
			fclose(f);
		}
	}
	ffz_failures(&set);
	printf("fieldfuzz: %.0f s with %u jobs\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, o_jobs);
	printf("%u passed, %u failed\n", total.t_run - ffz_tally_failed(&total), ffz_tally_failed(&total));
	return ffz_tally_failed(&total) ? 1 : 0;
}
