// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Replay driver: every fuzz target linked into one program that needs no
 * libFuzzer, for make check and for machines without clang's.
 *
 *   fz-replay DIR               the harness's self-test (fz_selftest.c), then
 *                               DIR/corpus/<target>/ and DIR/crashers/<target>/
 *                               through each target
 *   fz-replay -t TARGET PATH... files (or every file of a folder) through one
 *
 * Each target runs in a child process of its own, so that a crash is
 * charged to the input that caused it and the other targets still run.
 * An input passes when its run returns; the closing line counts inputs:
 * "N passed, N failed".
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fz.h"
#include "fz_selftest.h"

extern const struct fz_target fz_target_sb, fz_target_log, fz_target_items,
	fz_target_bmbt, fz_target_refcount, fz_target_image;

static const struct fz_target *const fz_targets[] = {
	&fz_target_sb, &fz_target_log, &fz_target_items,
	&fz_target_bmbt, &fz_target_refcount, &fz_target_image,
};

struct fz_list {
	char	**fl_path;
	u32	fl_n;
	u32	fl_cap;
};

static int fz_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void fz_add(struct fz_list *l, const char *path)
{
	if (l->fl_n == l->fl_cap) {
		l->fl_cap = l->fl_cap ? 2 * l->fl_cap : 64;
		l->fl_path = realloc(l->fl_path, l->fl_cap * sizeof(*l->fl_path));
		if (!l->fl_path)
			abort();
	}
	l->fl_path[l->fl_n] = strdup(path);
	if (!l->fl_path[l->fl_n++])
		abort();
}

/* A file, or the regular files of a folder (sorted); a missing path adds nothing. */
static void fz_collect(struct fz_list *l, const char *path)
{
	struct dirent *de;
	struct stat st;
	char buf[4096];
	u32 first = l->fl_n;
	DIR *d;

	if (stat(path, &st))
		return;
	if (!S_ISDIR(st.st_mode)) {
		fz_add(l, path);
		return;
	}
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(buf, sizeof(buf), "%s/%s", path, de->d_name);
		if (!stat(buf, &st) && S_ISREG(st.st_mode))
			fz_add(l, buf);
	}
	closedir(d);
	qsort(l->fl_path + first, l->fl_n - first, sizeof(*l->fl_path), fz_cmp);
}

static u8 *fz_slurp(const char *path, size_t *lenp)
{
	size_t cap = 1 << 16, len = 0, n;
	FILE *f = fopen(path, "rb");
	u8 *buf;

	if (!f)
		return NULL;
	buf = malloc(cap);
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			u8 *more = realloc(buf, cap * 2);

			if (!more) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = more;
			cap *= 2;
		}
	}
	fclose(f);
	*lenp = len;
	return buf;
}

/*
 * In a child: run every input.  The child writes the index of each input
 * before it starts it, and the count once all are done, so that the parent
 * can name the input that killed it (by a signal, a sanitizer's exit or an
 * abort) and tell a finished run from one cut short.
 */
static int fz_child(const struct fz_target *t, struct fz_list *l, int fd)
{
	u32 i;

	if (fz_setup(t->ft_init))
		return 0;
	for (i = 0; i < l->fl_n; i++) {
		size_t len = 0;
		u8 *buf = fz_slurp(l->fl_path[i], &len);

		if (!buf) {
			fprintf(stderr, "%s: cannot read %s\n", t->ft_name, l->fl_path[i]);
			continue;
		}
		if (write(fd, &i, sizeof(i)) != sizeof(i))
			abort();
		t->ft_run(buf, len);
		free(buf);
	}
	i = l->fl_n;
	if (write(fd, &i, sizeof(i)) != sizeof(i))
		abort();
	return 0;
}

/* Run @l through @t in a child; add to the totals. */
static void fz_run_target(const struct fz_target *t, struct fz_list *l, u32 *passed,
			  u32 *failed)
{
	int pfd[2], status;
	u32 at = 0, v, done;
	pid_t pid;

	if (!l->fl_n) {
		printf("%-9s no inputs\n", t->ft_name);
		return;
	}
	fflush(stdout);
	if (pipe(pfd))
		abort();
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		close(pfd[0]);
		fz_child(t, l, pfd[1]);
		/*
		 * exit(), not _exit(): LeakSanitizer (make asan) and gcov
		 * run from the exit handlers; stdout was flushed before fork
		 */
		exit(0);
	}
	close(pfd[1]);
	done = 0;
	while (read(pfd[0], &v, sizeof(v)) == sizeof(v)) {
		if (v == l->fl_n)
			done = 1;
		else
			at = v;
	}
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (done && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("%-9s %u inputs passed\n", t->ft_name, l->fl_n);
		*passed += l->fl_n;
		return;
	}
	/* the inputs before the one that failed passed; the rest did not run */
	printf("%-9s FAILED on %s (%s %d); %u inputs before it passed, %u not run\n",
	       t->ft_name, l->fl_path[at], WIFSIGNALED(status) ? "signal" : "exit status",
	       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), at,
	       l->fl_n - at - 1);
	*passed += at;
	*failed += 1;
}

/* The harness's self-test (fz_selftest.c) in a child: one more passed or failed. */
static void fz_run_selftest(u32 *passed, u32 *failed)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0)
		exit(fz_setup(NULL) || fz_selftest() ? 1 : 0);
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		printf("%-9s self-test passed\n", "harness");
		*passed += 1;
	} else {
		printf("%-9s self-test FAILED\n", "harness");
		*failed += 1;
	}
}

static void fz_free_list(struct fz_list *l)
{
	u32 i;

	for (i = 0; i < l->fl_n; i++)
		free(l->fl_path[i]);
	free(l->fl_path);
	memset(l, 0, sizeof(*l));
}

static const struct fz_target *fz_find(const char *name)
{
	u32 i;

	for (i = 0; i < ARRAY_SIZE(fz_targets); i++)
		if (!strcmp(fz_targets[i]->ft_name, name))
			return fz_targets[i];
	return NULL;
}

int main(int argc, char **argv)
{
	struct fz_list l = { 0 };
	u32 passed = 0, failed = 0, i;
	char buf[4096];

	if (argc >= 3 && !strcmp(argv[1], "-t")) {
		const struct fz_target *t = fz_find(argv[2]);

		if (!t) {
			fprintf(stderr, "fz-replay: no target '%s'\n", argv[2]);
			return 2;
		}
		for (i = 3; i < (u32)argc; i++)
			fz_collect(&l, argv[i]);
		fz_run_target(t, &l, &passed, &failed);
		fz_free_list(&l);
	} else if (argc == 2) {
		fz_run_selftest(&passed, &failed);
		for (i = 0; i < ARRAY_SIZE(fz_targets); i++) {
			snprintf(buf, sizeof(buf), "%s/corpus/%s", argv[1], fz_targets[i]->ft_name);
			fz_collect(&l, buf);
			snprintf(buf, sizeof(buf), "%s/crashers/%s", argv[1], fz_targets[i]->ft_name);
			fz_collect(&l, buf);
			fz_run_target(fz_targets[i], &l, &passed, &failed);
			fz_free_list(&l);
		}
	} else {
		fprintf(stderr, "usage: fz-replay DIR | fz-replay -t TARGET PATH...\n");
		return 2;
	}
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
