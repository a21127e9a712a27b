/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Counters the kernel keeps for a filesystem, read around a timed run by
 * the libc-only peer programs (xfs_exchange.c, xfs_update.c): XFS's
 * transactions and log bytes (/sys/fs/xfs/<dev>/stats/stats) and the block
 * device's completed flush requests (/sys/dev/block/M:m/stat, field 16).
 * Header only, static functions: each peer program is one source file.
 */
#ifndef BENCH_SYSSTAT_H
#define BENCH_SYSSTAT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

struct sysstat {
	uint64_t	trans;		/* XFS: sync + async + empty transactions committed */
	uint64_t	log_bytes;	/* XFS: bytes written to the log */
	int		per_fs;		/* XFS counters of this filesystem, not system-wide */
	uint64_t	flushes;	/* flush requests the device completed */
	int		have_flushes;
};

/* The block device name (loop0, vda) under /sys of the filesystem holding @dir. */
static int sysstat_devname(const char *dir, char *name, size_t len)
{
	char path[128], link[512];
	struct stat sb;
	ssize_t n;
	char *base;

	if (stat(dir, &sb))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(sb.st_dev), minor(sb.st_dev));
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return -1;
	link[n] = 0;
	base = strrchr(link, '/');
	snprintf(name, len, "%s", base ? base + 1 : link);
	return 0;
}

static void sysstat_read(const char *dir, struct sysstat *st)
{
	char path[1024], line[512], dev[512];
	struct stat sb;
	FILE *fp = NULL;

	memset(st, 0, sizeof(*st));
	if (sysstat_devname(dir, dev, sizeof(dev)) == 0) {
		snprintf(path, sizeof(path), "/sys/fs/xfs/%s/stats/stats", dev);
		fp = fopen(path, "r");
		st->per_fs = fp != NULL;
	}
	if (!fp)
		fp = fopen("/sys/fs/xfs/stats/stats", "r");
	if (fp) {
		while (fgets(line, sizeof(line), fp)) {
			unsigned long long a, b, c;

			if (sscanf(line, "trans %llu %llu %llu", &a, &b, &c) == 3)
				st->trans = a + b + c;
			else if (sscanf(line, "log %llu %llu", &a, &b) == 2)
				st->log_bytes = b * 512;	/* 512-byte basic blocks */
		}
		fclose(fp);
	}
	if (stat(dir, &sb) == 0) {
		unsigned long long f[17];

		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat",
			 major(sb.st_dev), minor(sb.st_dev));
		fp = fopen(path, "r");
		if (fp) {
			/* 17 fields since Linux 5.5; the 16th counts flushes */
			if (fscanf(fp, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
				   "%llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3],
				   &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &f[11],
				   &f[12], &f[13], &f[14], &f[15], &f[16]) == 17) {
				st->flushes = f[15];
				st->have_flushes = 1;
			}
			fclose(fp);
		}
	}
}

#endif /* BENCH_SYSSTAT_H */
