// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext defrag IMAGE [-n MAXFILES] [-t THRESHOLD] [-v]: mount IMAGE,
 * find its most fragmented files and rewrite each into contiguous space
 * through XFS_IOC_SWAPEXT (sx_defrag_file()), as xfs_fsr does.
 *
 * Every regular file of the root directory with at least THRESHOLD extents
 * (default 2) is a candidate; candidates go most extents first, at most
 * MAXFILES of them (default all).  One line per candidate says what became
 * of it, and a summary ends the run.  A file that fails (say -ENOSPC) is
 * reported and the run goes on with the next; the exit status is 1 if any
 * file failed or the image could not be mounted or unmounted cleanly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tool.h"
#include <swapext/swapext_compat.h>

/* A file of the image and its extent count. */
struct defrag_file {
	char	*df_name;
	u32	df_extents;
};

/* The names and counts gathered by readdir. */
struct defrag_list {
	struct defrag_file *dl_files;
	size_t		dl_n;
	size_t		dl_cap;
	int		dl_error;
};

/* Remember one name of the root directory. */
static int defrag_gather(void *arg, const char *name, u64 ino)
{
	struct defrag_list *dl = arg;
	struct defrag_file *f;

	if (dl->dl_n == dl->dl_cap) {
		size_t cap = dl->dl_cap ? dl->dl_cap * 2 : 64;

		f = realloc(dl->dl_files, cap * sizeof(*f));
		if (!f) {
			dl->dl_error = -ENOMEM;
			return 1;
		}
		dl->dl_files = f;
		dl->dl_cap = cap;
	}
	f = &dl->dl_files[dl->dl_n];
	f->df_name = strdup(name);
	if (!f->df_name) {
		dl->dl_error = -ENOMEM;
		return 1;
	}
	f->df_extents = 0;
	dl->dl_n++;
	return 0;
}

/* Most extents first; equal counts by name, so the order is stable. */
static int defrag_cmp(const void *a, const void *b)
{
	const struct defrag_file *x = a, *y = b;

	if (x->df_extents != y->df_extents)
		return x->df_extents > y->df_extents ? -1 : 1;
	return strcmp(x->df_name, y->df_name);
}

/* The extent count of regular file @name; *@regp false for anything else. */
static int defrag_measure(struct sx_mount *mp, const char *name, u32 *extents, bool *regp)
{
	struct sx_stat st;
	int fd, error;

	*regp = false;
	*extents = 0;
	error = sx_open(mp, name, &fd);
	if (error)
		return error;
	error = sx_fstat(mp, fd, &st);
	if (!error && (st.st_mode & SX_IFMT) == SX_IFREG) {
		*regp = true;
		if (st.st_size)
			error = sx_fiemap(mp, fd, 0, st.st_size, NULL, 0, extents);
	}
	sx_close(mp, fd);
	return error;
}

/* Parse the value of -n or -t. */
static int defrag_count_arg(const char *opt, const char *arg, u64 *v)
{
	if (!arg || tool_parse_size(arg, v) || *v > 0xffffffffull) {
		tool_fail("defrag: %s needs a count", opt);
		return tool_usage("defrag");
	}
	return 0;
}

/* Totals for the summary line. */
struct defrag_totals {
	u64	t_files;		/* regular files seen */
	u64	t_candidates;		/* of those, at or over the threshold */
	u64	t_done;
	u64	t_skipped;
	u64	t_failed;
	u64	t_before;		/* extents of the defragmented files, before */
	u64	t_after;		/* and after */
	u64	t_bytes;
};

/* Defragment one candidate and print what happened. */
static void defrag_one(struct sx_mount *mp, const struct defrag_file *f, bool verbose,
		       struct defrag_totals *t)
{
	struct sx_defrag_result res;
	int fd, error;

	error = sx_open(mp, f->df_name, &fd);
	if (!error) {
		error = sx_defrag_file(mp, fd, 0, &res);
		sx_close(mp, fd);
	}
	if (error) {
		tool_error(error, "defrag: %s", f->df_name);
		t->t_failed++;
		return;
	}
	t->t_bytes += res.dr_bytes;
	if (res.dr_skipped == SX_DEFRAG_DONE) {
		t->t_done++;
		t->t_before += res.dr_before;
		t->t_after += res.dr_after;
		printf("%s: %u -> %u extents", f->df_name, res.dr_before, res.dr_after);
	} else {
		t->t_skipped++;
		printf("%s: %u extents, skipped: %s", f->df_name, res.dr_before,
		       sx_defrag_skip_name(res.dr_skipped));
		if (res.dr_skipped == SX_DEFRAG_SKIP_NOTBETTER)
			printf(" (the copy had %u)", res.dr_after);
	}
	if (verbose)
		printf(" [fewest possible %u, %llu bytes copied]", res.dr_ideal,
		       (unsigned long long)res.dr_bytes);
	putchar('\n');
}

/* The scan and the rewrites, on a mounted image. */
static int defrag_run(struct sx_mount *mp, u64 maxfiles, u64 threshold, bool verbose,
		      struct defrag_totals *t)
{
	struct defrag_list dl = { 0 };
	struct defrag_file cand;
	size_t i, ncand = 0;
	bool reg;
	int error;

	error = sx_readdir(mp, defrag_gather, &dl);
	if (!error)
		error = dl.dl_error;
	if (error) {
		tool_error(error, "defrag: reading the directory");
		goto out_free;
	}
	/* keep the candidates at the front of the array */
	for (i = 0; i < dl.dl_n; i++) {
		struct defrag_file *f = &dl.dl_files[i];

		error = defrag_measure(mp, f->df_name, &f->df_extents, &reg);
		if (error) {
			tool_error(error, "defrag: %s", f->df_name);
			t->t_failed++;
			continue;
		}
		if (!reg)
			continue;
		t->t_files++;
		if (f->df_extents < threshold || f->df_extents < 2) {
			if (verbose)
				printf("%s: %u extent%s, below the threshold\n", f->df_name,
				       f->df_extents, f->df_extents == 1 ? "" : "s");
			continue;
		}
		/* a swap, so that every name stays in the array to be freed */
		cand = *f;
		dl.dl_files[i] = dl.dl_files[ncand];
		dl.dl_files[ncand++] = cand;
	}
	qsort(dl.dl_files, ncand, sizeof(dl.dl_files[0]), defrag_cmp);
	t->t_candidates = ncand;
	for (i = 0; i < ncand && i < maxfiles; i++)
		defrag_one(mp, &dl.dl_files[i], verbose, t);
	error = 0;
out_free:
	for (i = 0; i < dl.dl_n; i++)
		free(dl.dl_files[i].df_name);
	free(dl.dl_files);
	return error;
}

/* swapext defrag IMAGE [-n MAXFILES] [-t THRESHOLD] [-v] */
int cmd_defrag(int argc, char **argv)
{
	struct sx_mount_opts mo = { .mo_name = "defrag" };
	struct defrag_totals t = { 0 };
	const char *image = NULL;
	u64 maxfiles = ~0ull, threshold = 2;
	struct sx_mount *mp;
	struct sx_bdev *bd;
	bool verbose = false;
	int i, status, error;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "-t")) {
			status = defrag_count_arg(argv[i], i + 1 < argc ? argv[i + 1] : NULL,
						  argv[i][1] == 'n' ? &maxfiles : &threshold);
			if (status)
				return status;
			i++;
		} else if (!strcmp(argv[i], "-v")) {
			verbose = true;
		} else if (argv[i][0] == '-' || image) {
			tool_fail("defrag: unexpected argument '%s'", argv[i]);
			return tool_usage("defrag");
		} else {
			image = argv[i];
		}
	}
	if (!image)
		return tool_usage("defrag");
	error = sx_filedev_open(image, 0, 0, &bd);
	if (error)
		return tool_error(error, "defrag: cannot open %s", image);
	error = sx_mount(bd, &mo, &mp);
	if (error) {
		sx_bdev_destroy(bd);
		return tool_error(error, "defrag: cannot mount %s", image);
	}
	status = defrag_run(mp, maxfiles, threshold, verbose, &t) ? 1 : 0;
	printf("defrag: %llu files, %llu candidates: %llu defragmented (%llu -> %llu extents), "
	       "%llu skipped, %llu failed; %llu bytes copied\n",
	       (unsigned long long)t.t_files, (unsigned long long)t.t_candidates,
	       (unsigned long long)t.t_done, (unsigned long long)t.t_before,
	       (unsigned long long)t.t_after, (unsigned long long)t.t_skipped,
	       (unsigned long long)t.t_failed, (unsigned long long)t.t_bytes);
	fflush(stdout);
	if (t.t_failed)
		status = 1;
	error = sx_unmount(mp);
	if (error)
		status = tool_error(error, "defrag: unmount");
	sx_bdev_destroy(bd);
	return status;
}
