// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The Linux XFS counterpart of bench/bench_swap.c: one XFS_IOC_EXCHANGE_RANGE
 * of two whole files of N single-block extents, made durable by fsync.
 *
 * Run by scripts/bench-xfs.sh (make bench-xfs), which makes and mounts the
 * filesystem; the three steps are separate commands so that the script can
 * remount between them and check the extent counts with xfs_bmap:
 *
 *   xfs_exchange sb-exchrange IMAGE  set XFS_SB_FEAT_INCOMPAT_EXCHRANGE in the
 *                                    primary superblock of an unmounted image
 *   xfs_exchange mkfiles DIR N       DIR/a: a data block at every even file
 *                                    block, DIR/b at every odd one, N each
 *   xfs_exchange swap DIR N          time the exchange plus both fsyncs, then
 *                                    check the extents and the data moved
 *
 * Layout of the files, sizes and the rate (extents of one side per second)
 * are those of bench_swap, so the two lines can be read side by side.
 *
 * This program talks to the kernel's ABI directly (struct xfs_exchange_range
 * is not in Debian's xfslibs-dev 6.1), so it needs nothing but libc and the
 * Linux uapi headers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include "sysstat.h"

/* ---------------------------------------------------------------- ABI */

/* XFS_IOC_EXCHANGE_RANGE's argument (Linux 6.10+, fs/xfs/libxfs/xfs_fs.h). */
struct xchg_range {
	int32_t		file1_fd;
	uint32_t	pad;		/* must be zero */
	uint64_t	file1_offset;
	uint64_t	file2_offset;
	uint64_t	length;
	uint64_t	flags;
};
_Static_assert(sizeof(struct xchg_range) == 40, "xfs_exchange_range is 40 bytes");

#define XCHG_TO_EOF		(1ULL << 0)
#define XCHG_IOC_EXCHANGE_RANGE	_IOW('X', 129, struct xchg_range)

/* Primary superblock (struct xfs_dsb, fs/xfs/libxfs/xfs_format.h). */
#define SB_MAGIC		0x58465342u	/* "XFSB" */
#define SB_OFF_MAGIC		0
#define SB_OFF_VERSIONNUM	100		/* be16 */
#define SB_OFF_SECTSIZE		102		/* be16 */
#define SB_OFF_FEAT_INCOMPAT	216		/* be32 */
#define SB_OFF_CRC		224		/* le32 */
#define SB_VERSION_5		5
#define SB_FEAT_INCOMPAT_EXCHRANGE (1u << 6)

/* ---------------------------------------------------------------- helpers */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("xfs_exchange: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* CRC32c (Castagnoli, reflected), the standard form: seed ~0, result inverted. */
static uint32_t crc32c(const uint8_t *p, size_t len)
{
	uint32_t crc = ~0u;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return ~crc;
}

/*
 * XFS stores the standard CRC32c of the sector taken with the crc field as
 * zeroes, little-endian (xfs_cksum.h: seed ~0, then the inverted value).
 */
static uint32_t sb_crc(const uint8_t *sec, size_t len)
{
	uint8_t *tmp = malloc(len);
	uint32_t crc;

	if (!tmp)
		die("out of memory");
	memcpy(tmp, sec, len);
	put_le32(tmp + SB_OFF_CRC, 0);
	crc = crc32c(tmp, len);
	free(tmp);
	return crc;
}

/* ---------------------------------------------------------------- sb-exchrange */

static int cmd_sb_exchrange(const char *image)
{
	uint8_t head[512], *sec;
	uint32_t incompat, stored, crc;
	unsigned int sectsize;
	int fd = open(image, O_RDWR);

	if (fd < 0)
		die("%s: %s", image, strerror(errno));
	if (pread(fd, head, sizeof(head), 0) != (ssize_t)sizeof(head))
		die("%s: cannot read the superblock", image);
	if (get_be32(head + SB_OFF_MAGIC) != SB_MAGIC)
		die("%s: not an XFS image (no XFSB magic)", image);
	if ((get_be16(head + SB_OFF_VERSIONNUM) & 0xf) != SB_VERSION_5)
		die("%s: not a v5 (crc=1) superblock", image);
	sectsize = get_be16(head + SB_OFF_SECTSIZE);
	if (sectsize < 512 || sectsize > 32768 || (sectsize & (sectsize - 1)))
		die("%s: bad sector size %u", image, sectsize);

	sec = malloc(sectsize);
	if (!sec)
		die("out of memory");
	if (pread(fd, sec, sectsize, 0) != (ssize_t)sectsize)
		die("%s: cannot read the %u-byte superblock sector", image, sectsize);

	/* Proves the offsets and the CRC convention before anything is written. */
	stored = get_le32(sec + SB_OFF_CRC);
	crc = sb_crc(sec, sectsize);
	if (stored != crc)
		die("%s: the superblock CRC does not verify (stored 0x%08x, computed 0x%08x); "
		    "not patching", image, stored, crc);

	incompat = get_be32(sec + SB_OFF_FEAT_INCOMPAT);
	if (incompat & SB_FEAT_INCOMPAT_EXCHRANGE) {
		printf("superblock: exchange-range already set (incompat 0x%x)\n", incompat);
		free(sec);
		close(fd);
		return 0;
	}
	put_be32(sec + SB_OFF_FEAT_INCOMPAT, incompat | SB_FEAT_INCOMPAT_EXCHRANGE);
	crc = sb_crc(sec, sectsize);
	put_le32(sec + SB_OFF_CRC, crc);
	if (pwrite(fd, sec, sectsize, 0) != (ssize_t)sectsize)
		die("%s: cannot write the superblock: %s", image, strerror(errno));
	if (fsync(fd))
		die("%s: fsync: %s", image, strerror(errno));

	if (pread(fd, sec, sectsize, 0) != (ssize_t)sectsize ||
	    get_le32(sec + SB_OFF_CRC) != sb_crc(sec, sectsize) ||
	    !(get_be32(sec + SB_OFF_FEAT_INCOMPAT) & SB_FEAT_INCOMPAT_EXCHRANGE))
		die("%s: the superblock did not read back as written", image);
	printf("superblock: incompat 0x%x -> 0x%x, crc 0x%08x -> 0x%08x (%u-byte sector)\n",
	       incompat, incompat | SB_FEAT_INCOMPAT_EXCHRANGE, stored, crc, sectsize);
	free(sec);
	close(fd);
	return 0;
}

/* ---------------------------------------------------------------- files */

/* The 16-byte tag at the start of every data block: which file wrote it and where. */
struct tag {
	uint64_t	magic;		/* TAG_MAGIC ^ file */
	uint64_t	block;		/* file block it was written at */
};
#define TAG_MAGIC	0x78636867626e6368ull

static void fill_block(uint8_t *buf, uint32_t bs, int file, uint64_t block)
{
	struct tag t = { TAG_MAGIC ^ (uint64_t)file, block };

	memset(buf, (int)(block * 7 + 1), bs);
	memcpy(buf, &t, sizeof(t));
}

static uint32_t fs_blocksize(const char *dir)
{
	struct statvfs sv;

	if (statvfs(dir, &sv))
		die("%s: %s", dir, strerror(errno));
	if (sv.f_bsize < 512 || sv.f_bsize > 65536)
		die("%s: odd block size %lu", dir, (unsigned long)sv.f_bsize);
	return (uint32_t)sv.f_bsize;
}

static uint64_t parse_n(const char *s)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno || *end || n == 0 || n > (1ull << 32))
		die("N must be a number of extents from 1 to 2^32, not '%s'", s);
	return n;
}

static int open_file(const char *dir, const char *name, int flags)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, flags, 0644);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	return fd;
}

/*
 * Checks that @fd maps exactly @n single-block written extents, at file blocks
 * @first, @first + 2, ... (and nothing else); returns the number of extents
 * FIEMAP reports, and sets *@ok.
 */
static uint64_t fiemap_check(int fd, uint32_t bs, uint64_t n, uint64_t first, int *ok)
{
	enum { BATCH = 1024 };
	size_t sz = sizeof(struct fiemap) + BATCH * sizeof(struct fiemap_extent);
	struct fiemap *fm = malloc(sz);
	uint64_t start = 0, count = 0;
	int last = 0;
	unsigned int i;

	if (!fm)
		die("out of memory");
	*ok = 1;
	while (!last) {
		memset(fm, 0, sz);
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_flags = FIEMAP_FLAG_SYNC;
		fm->fm_extent_count = BATCH;
		if (ioctl(fd, FS_IOC_FIEMAP, fm))
			die("FIEMAP: %s", strerror(errno));
		if (fm->fm_mapped_extents == 0)
			break;
		for (i = 0; i < fm->fm_mapped_extents; i++) {
			struct fiemap_extent *fe = &fm->fm_extents[i];
			uint64_t want = (first + 2 * count) * bs;

			if (fe->fe_logical != want || fe->fe_length != bs ||
			    (fe->fe_flags & (FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_DELALLOC |
					     FIEMAP_EXTENT_UNKNOWN)))
				*ok = 0;
			count++;
			if (fe->fe_flags & FIEMAP_EXTENT_LAST)
				last = 1;
			start = fe->fe_logical + fe->fe_length;
		}
	}
	free(fm);
	if (count != n)
		*ok = 0;
	return count;
}

static int cmd_mkfiles(const char *dir, uint64_t n)
{
	uint32_t bs = fs_blocksize(dir);
	uint8_t *buf = malloc(bs);
	int fd[2], f, ok[2];
	uint64_t i, got[2];
	double t0 = now();

	if (!buf)
		die("out of memory");
	fd[0] = open_file(dir, "a", O_RDWR | O_CREAT | O_EXCL);
	fd[1] = open_file(dir, "b", O_RDWR | O_CREAT | O_EXCL);
	/*
	 * Sized first, so that no write extends EOF: an extending write gets
	 * speculative preallocation past EOF, and writeback would then turn the
	 * holes between our blocks into unwritten extents (2N mappings, not N).
	 */
	for (f = 0; f < 2; f++)
		if (ftruncate(fd[f], (off_t)(2 * n * bs)))
			die("ftruncate: %s", strerror(errno));
	for (i = 0; i < 2 * n; i++) {
		f = (int)(i & 1);
		fill_block(buf, bs, f, i);
		if (pwrite(fd[f], buf, bs, (off_t)(i * bs)) != (ssize_t)bs)
			die("pwrite %s block %" PRIu64 ": %s", f ? "b" : "a", i, strerror(errno));
	}
	for (f = 0; f < 2; f++)
		if (fsync(fd[f]))
			die("fsync: %s", strerror(errno));
	for (f = 0; f < 2; f++)
		got[f] = fiemap_check(fd[f], bs, n, (uint64_t)f, &ok[f]);
	printf("files: a and b, %" PRIu64 " extents of 1 block each (%u-byte blocks), written in %.2f s; "
	       "FIEMAP: a %" PRIu64 ", b %" PRIu64 " extents\n", n, bs, now() - t0, got[0], got[1]);
	if (!ok[0] || !ok[1])
		die("the files are not %" PRIu64 " interleaved single-block written extents each", n);
	for (f = 0; f < 2; f++)
		close(fd[f]);
	free(buf);
	return 0;
}

/* ---------------------------------------------------------------- swap */

/* After the exchange, a holds b's old blocks (odd) and b holds a's (even). */
static void check_data(int fd, const char *name, int from, uint64_t n, uint32_t bs)
{
	uint8_t *got = malloc(bs), *want = malloc(bs);
	uint64_t k;

	if (!got || !want)
		die("out of memory");
	for (k = 0; k < n; k++) {
		uint64_t block = 2 * k + (uint64_t)from;

		fill_block(want, bs, from, block);
		if (pread(fd, got, bs, (off_t)(block * bs)) != (ssize_t)bs)
			die("pread %s: %s", name, strerror(errno));
		if (memcmp(got, want, bs))
			die("%s block %" PRIu64 " does not hold the other file's data after the exchange",
			    name, block);
	}
	free(got);
	free(want);
}

static int cmd_swap(const char *dir, uint64_t n)
{
	uint32_t bs = fs_blocksize(dir);
	int fa = open_file(dir, "a", O_RDWR), fb = open_file(dir, "b", O_RDWR);
	struct xchg_range xr = {
		.file1_fd = fa,
		.length = 2 * n * bs,
		.flags = XCHG_TO_EOF,
	};
	struct sysstat s0, s1;
	uint64_t got_a, got_b, pa = 0;
	int ok_a, ok_b;
	double t0, t;

	/*
	 * a holds the even blocks as mkfiles left it, the odd ones after an odd
	 * number of swaps (scripts/bench.sh swaps the same files several times)
	 */
	got_a = fiemap_check(fa, bs, n, 0, &ok_a);
	if (!ok_a) {
		pa = 1;
		got_a = fiemap_check(fa, bs, n, 1, &ok_a);
	}
	got_b = fiemap_check(fb, bs, n, pa ^ 1, &ok_b);
	printf("before: FIEMAP a %" PRIu64 " extents (%s blocks), b %" PRIu64 " (the others)\n",
	       got_a, pa ? "odd" : "even", got_b);
	if (!ok_a || !ok_b)
		die("the files are not as mkfiles left them, or swapped whole");

	sysstat_read(dir, &s0);
	t0 = now();
	/* Issued on file2 (b); file1 (a) is named in the argument. */
	if (ioctl(fb, XCHG_IOC_EXCHANGE_RANGE, &xr)) {
		int e = errno;

		if (e == EOPNOTSUPP || e == ENOTTY)
			die("XFS_IOC_EXCHANGE_RANGE: %s (kernel older than 6.10, or the "
			    "filesystem lacks the exchange-range feature bit)", strerror(e));
		die("XFS_IOC_EXCHANGE_RANGE: %s", strerror(e));
	}
	if (fsync(fa) || fsync(fb))
		die("fsync: %s", strerror(errno));
	t = now() - t0;
	sysstat_read(dir, &s1);

	got_a = fiemap_check(fa, bs, n, pa ^ 1, &ok_a);
	got_b = fiemap_check(fb, bs, n, pa, &ok_b);
	printf("after:  FIEMAP a %" PRIu64 " extents, b %" PRIu64 " (each the other's old blocks)\n",
	       got_a, got_b);
	if (!ok_a || !ok_b)
		die("after the exchange the files do not map each other's old blocks");
	check_data(fa, "a", (int)(pa ^ 1), n, bs);
	check_data(fb, "b", (int)pa, n, bs);

	printf("xfs      : %" PRIu64 " extents each side in %.3f s: %.0f extents/s, "
	       "%.2f transactions and %.0f log bytes per extent (%s counters)\n",
	       n, t, n / t, (double)(s1.trans - s0.trans) / n,
	       (double)(s1.log_bytes - s0.log_bytes) / n,
	       s1.per_fs ? "this filesystem's" : "system-wide");
	printf("RESULT workload=swap impl=xfs n=%" PRIu64 " secs=%.4f extents_s=%.0f "
	       "flushes=%lld trans_ext=%.2f logbytes_ext=%.1f\n", n, t, n / t,
	       s1.have_flushes ? (long long)(s1.flushes - s0.flushes) : -1LL,
	       (double)(s1.trans - s0.trans) / n, (double)(s1.log_bytes - s0.log_bytes) / n);
	close(fa);
	close(fb);
	return 0;
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
	fprintf(stderr,
		"usage: xfs_exchange sb-exchrange IMAGE\n"
		"       xfs_exchange mkfiles DIR N\n"
		"       xfs_exchange swap DIR N\n");
	exit(2);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "sb-exchrange"))
		return cmd_sb_exchrange(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "mkfiles"))
		return cmd_mkfiles(argv[2], parse_n(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "swap"))
		return cmd_swap(argv[2], parse_n(argv[3]));
	usage();
}
