// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xfscheck: the guest program of `make xfscheck` (tests/xfs/xfscheck.sh),
 * linked -static so the busybox initramfs needs nothing else.  It runs on
 * an XFS filesystem the guest mounted, one part per invocation:
 *
 *   xfscheck errtab DIR             the seed's errno table (fsr_cases.h, the
 *                                   one the store passes) and the rows only a
 *                                   real filesystem can set up (open modes,
 *                                   file types, two filesystems)
 *   xfscheck swaps DIR N            swaps of 1, 64 and N extents, shared
 *                                   extents, one file, TO_EOF
 *   xfscheck scen DIR SEED OPS      the differential scenario's transcript
 *   xfscheck shutdown DEV MNT P N   P shutdowns over a swap of N extents
 *   xfscheck quota DEV MNT          quota moves with the blocks; EDQUOT
 *   xfscheck misc DEV MNT           the geometry flag, unwritten extents in
 *                                   FIEMAP, setuid/setgid, a remount
 *
 * Each test prints "XFSCHECK PASS name" or "XFSCHECK FAIL name: why"; the
 * scenario prints "XSCEN " lines.  The host counts and compares them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "sxb_posix.h"
#include "xfscheck.h"

uint64_t xc_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Rows of the seed's table a real filesystem can set up and the store's
 * descriptors cannot: how a file is open, what kind of file it is, files
 * of two filesystems.  file1 is opened as @how1 names, file2 as @how2.
 */
struct open_case {
	const char	*name;
	int		err;
	const char	*kind1, *kind2;	/* "file", "dir", "fifo", "other-fs" */
	int		flags1, flags2;	/* open(2) flags */
};

static const struct open_case open_cases[] = {
	{ "file1 not open for reading", EBADF, "file", "file", O_WRONLY, O_RDWR },
	{ "file1 not open for writing", EBADF, "file", "file", O_RDONLY, O_RDWR },
	{ "file2 not open for writing", EBADF, "file", "file", O_RDWR, O_RDONLY },
	{ "file2 O_APPEND", EBADF, "file", "file", O_RDWR, O_RDWR | O_APPEND },
	{ "file1 O_APPEND", EBADF, "file", "file", O_RDWR | O_APPEND, O_RDWR },
	{ "file1 a directory", EISDIR, "dir", "file", O_RDONLY, O_RDWR },
	{ "file2 a directory", EISDIR, "file", "dir", O_RDWR, O_RDONLY },
	{ "file1 a fifo", EINVAL, "fifo", "file", O_RDWR, O_RDWR },
	{ "files of two filesystems", EXDEV, "other-fs", "file", O_RDWR, O_RDWR },
};

static int open_kind(const struct sxb *b, const char *dir, const char *kind, const char *name,
		     int flags)
{
	char path[512];
	int fd;

	if (!strcmp(kind, "dir")) {
		snprintf(path, sizeof(path), "%s/%s.d", dir, name);
		mkdir(path, 0755);
		return open(path, O_RDONLY | O_DIRECTORY);
	}
	if (!strcmp(kind, "fifo")) {
		snprintf(path, sizeof(path), "%s/%s.p", dir, name);
		mkfifo(path, 0644);
		return open(path, flags | O_NONBLOCK);
	}
	if (!strcmp(kind, "other-fs"))
		snprintf(path, sizeof(path), "/tmp/%s", name);
	else
		snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	if (sxb_write_tags(b, fd, 0, 16, 0, 1)) {
		close(fd);
		return -1;
	}
	close(fd);
	return open(path, flags);
}

static void run_open_cases(const struct sxb *b, struct sxb_report *r, const char *dir)
{
	struct file_swap_range fsr;
	size_t i;
	int fd1, fd2, error;

	for (i = 0; i < sizeof(open_cases) / sizeof(open_cases[0]); i++) {
		const struct open_case *c = &open_cases[i];

		fd1 = open_kind(b, dir, c->kind1, "open1", c->flags1);
		fd2 = open_kind(b, dir, c->kind2, "open2", c->flags2);
		if (fd1 < 0 || fd2 < 0) {
			sxb_result(r, 0, c->name, "setup: %s", strerror(errno));
		} else {
			memset(&fsr, 0, sizeof(fsr));
			fsr.file1_fd = fd1;
			fsr.length = XC_BS;
			error = ioctl(fd2, FISWAPRANGE, &fsr) ? -errno : 0;
			if (-error == c->err)
				sxb_result(r, 1, c->name, "%s", sxb_errname(error));
			else
				sxb_result(r, 0, c->name, "got %s, expected %s", sxb_errname(error),
					   sxb_errname(c->err));
		}
		if (fd1 >= 0)
			close(fd1);
		if (fd2 >= 0)
			close(fd2);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: xfscheck errtab DIR | swaps DIR N | scen DIR SEED OPS |\n"
			"       shutdown DEV MNT POINTS EXTENTS | quota DEV MNT | misc DEV MNT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sxb_report r = { .prefix = "XFSCHECK", .out = stdout };
	struct sxb_posix px;
	struct sxb b;
	uint64_t t0 = xc_now_us();

	if (argc < 3)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "errtab")) {
		mkdir(argv[2], 0755);
		sxb_posix_init(&b, &px, argv[2], XC_BS);
		sxb_errtab_run(&b, &r);
		run_open_cases(&b, &r, argv[2]);
	} else if (!strcmp(argv[1], "swaps") && argc == 4) {
		mkdir(argv[2], 0755);
		sxb_posix_init(&b, &px, argv[2], XC_BS);
		sxb_swaps_run(&b, &r, strtoull(argv[3], NULL, 0));
	} else if (!strcmp(argv[1], "scen") && argc == 5) {
		FILE *out;
		char *buf = NULL;
		size_t len = 0;
		int error;

		mkdir(argv[2], 0755);
		sxb_posix_init(&b, &px, argv[2], XC_BS);
		/* every transcript line carries the prefix the host greps for */
		out = open_memstream(&buf, &len);
		error = sxb_scen_run(&b, strtoull(argv[3], NULL, 0),
				     (uint32_t)strtoul(argv[4], NULL, 0), out);
		fclose(out);
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
			printf("XSCEN %s\n", line);
		free(buf);
		sxb_result(&r, !error, "scenario-ran", NULL);
	} else if (!strcmp(argv[1], "shutdown") && argc == 6) {
		xc_shutdown_run(&r, argv[2], argv[3], (uint32_t)strtoul(argv[4], NULL, 0),
				strtoull(argv[5], NULL, 0));
	} else if (!strcmp(argv[1], "quota") && argc == 4) {
		xc_quota_run(&r, argv[2], argv[3]);
	} else if (!strcmp(argv[1], "misc") && argc == 4) {
		xc_misc_run(&r, argv[2], argv[3]);
	} else {
		usage();
	}
	printf("XFSCHECK-INFO %s: %u passed, %u failed in %.1f s\n", argv[1], r.passed, r.failed,
	       (double)(xc_now_us() - t0) / 1e6);
	return r.failed ? 1 : 0;
}
