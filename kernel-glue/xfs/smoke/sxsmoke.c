// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sxsmoke: the guest's tool for the XFS smoke run (kernel-glue/xfs/smoke/).
 * Built static on the host; every file block is tagged with its file's id
 * and its index, so a check tells old from new block by block.
 *
 *   sxsmoke write FILE ID NBLOCKS STEP PHASE   write blocks i with
 *                        i % STEP == PHASE (the others stay holes), fsync
 *   sxsmoke check FILE ID NBLOCKS STEP PHASE   exit 0 if FILE reads so
 *   sxsmoke falloc FILE BLOCK COUNT            preallocate (unwritten)
 *   sxsmoke unwritten FILE BLOCK COUNT         print the unwritten blocks
 *                        FIEMAP reports in the range
 *   sxsmoke extents FILE                       print FILE's extent count (FIEMAP)
 *   sxsmoke geom FILE                          exit 0 if XFS_IOC_FSGEOMETRY has
 *                        the patch's XFS_FSOP_GEOM_FLAGS_ATOMIC_SWAP (bit 24)
 *   sxsmoke swap FILE1 FILE2                   FISWAPRANGE of the whole
 *                        files (file2's length) on FILE2 with file1_fd;
 *                        prints the milliseconds it took
 *   sxsmoke swapas UID FILE1 FILE2             swap as user UID (no capabilities)
 *   sxsmoke range FILE1 BLK1 FILE2 BLK2 COUNT [FLAGS]
 *                        FISWAPRANGE of COUNT blocks (FLAGS: FILE_SWAP_RANGE_*)
 *   sxsmoke size FILE BYTES                    truncate FILE to BYTES
 *   sxsmoke blk FILE BLK ID SRC                exit 0 if block BLK of FILE
 *                        holds block SRC of file ID
 *   sxsmoke clone SRC DST                      FICLONE: DST shares SRC's blocks
 *   sxsmoke quota DEV UID                      print UID's block usage (4 KiB
 *                        blocks, Q_XGETQUOTA)
 *   sxsmoke qlimit DEV UID BLOCKS              set UID's hard block limit
 *   sxsmoke crash FILE1 FILE2 DELAY_MS FLAG    the same swap while a child
 *                        shuts the filesystem down (XFS_IOC_GOINGDOWN with
 *                        FLAG: 1 log flush, 2 none) after DELAY_MS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/dqblk_xfs.h>
#include <sys/quota.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <swapext/fsr.h>

#define BS		4096
#define GOINGDOWN	_IOR('X', 125, uint32_t)
/* XFS_IOC_FSGEOMETRY: struct xfs_fsop_geom is 256 bytes, flags at 92 */
#define FSGEOMETRY	_IOR('X', 126, char[256])
#define GEOM_FLAGS_OFF	92
#define GEOM_ATOMIC_SWAP (1u << 24)

static void tag(uint64_t *buf, unsigned int id, uint64_t blk)
{
	for (unsigned int i = 0; i < BS / 8; i++)
		buf[i] = ((uint64_t)id << 48) | (blk << 12) | i;
}

static int do_write(const char *path, unsigned int id, uint64_t n, uint64_t step, uint64_t phase)
{
	uint64_t buf[BS / 8];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return perror(path), 1;
	for (uint64_t b = 0; b < n; b++) {
		if (b % step != phase)
			continue;
		tag(buf, id, b);
		if (pwrite(fd, buf, BS, (off_t)(b * BS)) != BS)
			return perror("pwrite"), 1;
	}
	if (ftruncate(fd, (off_t)(n * BS)) || fsync(fd))
		return perror("ftruncate/fsync"), 1;
	return close(fd);
}

static int do_check(const char *path, unsigned int id, uint64_t n, uint64_t step, uint64_t phase)
{
	uint64_t buf[BS / 8], want[BS / 8];
	int fd = open(path, O_RDONLY);
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		return perror(path), 1;
	if ((uint64_t)st.st_size != n * BS) {
		printf("%s: size %lld, want %llu\n", path, (long long)st.st_size,
		       (unsigned long long)(n * BS));
		return 1;
	}
	for (uint64_t b = 0; b < n; b++) {
		if (pread(fd, buf, BS, (off_t)(b * BS)) != BS)
			return perror("pread"), 1;
		if (b % step == phase)
			tag(want, id, b);
		else
			memset(want, 0, sizeof(want));
		if (memcmp(buf, want, BS)) {
			printf("%s: block %llu: word0 %#llx, want %#llx\n", path,
			       (unsigned long long)b, (unsigned long long)buf[0],
			       (unsigned long long)want[0]);
			return 1;
		}
	}
	return close(fd);
}

static int do_falloc(const char *path, uint64_t blk, uint64_t n)
{
	int fd = open(path, O_RDWR);

	if (fd < 0 || fallocate(fd, 0, (off_t)(blk * BS), (off_t)(n * BS)) || fsync(fd))
		return perror(path), 1;
	return close(fd);
}

static int do_unwritten(const char *path, uint64_t blk, uint64_t n)
{
	size_t sz = sizeof(struct fiemap) + 256 * sizeof(struct fiemap_extent);
	struct fiemap *fm = calloc(1, sz);
	uint64_t start = blk * BS, end = (blk + n) * BS, total = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || !fm)
		return perror(path), 1;
	fm->fm_start = start;
	fm->fm_length = end - start;
	fm->fm_flags = FIEMAP_FLAG_SYNC;
	fm->fm_extent_count = 256;
	if (ioctl(fd, FS_IOC_FIEMAP, fm))
		return perror("FIEMAP"), 1;
	for (unsigned int i = 0; i < fm->fm_mapped_extents; i++) {
		struct fiemap_extent *fe = &fm->fm_extents[i];
		uint64_t s = fe->fe_logical > start ? fe->fe_logical : start;
		uint64_t e = fe->fe_logical + fe->fe_length < end ? fe->fe_logical + fe->fe_length : end;

		if ((fe->fe_flags & FIEMAP_EXTENT_UNWRITTEN) && e > s)
			total += (e - s) / BS;
	}
	printf("%llu\n", (unsigned long long)total);
	free(fm);
	return close(fd);
}

static int do_extents(const char *path)
{
	struct fiemap fm;
	int fd = open(path, O_RDONLY);

	memset(&fm, 0, sizeof(fm));
	fm.fm_length = FIEMAP_MAX_OFFSET;
	fm.fm_flags = FIEMAP_FLAG_SYNC;
	if (fd < 0 || ioctl(fd, FS_IOC_FIEMAP, &fm))
		return perror(path), 1;
	printf("%u\n", fm.fm_mapped_extents);
	return close(fd);
}

static int do_geom(const char *path)
{
	unsigned char geo[256];
	uint32_t flags;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || ioctl(fd, FSGEOMETRY, geo))
		return perror("XFS_IOC_FSGEOMETRY"), 1;
	memcpy(&flags, geo + GEOM_FLAGS_OFF, sizeof(flags));
	printf("flags %#x\n", flags);
	close(fd);
	return (flags & GEOM_ATOMIC_SWAP) ? 0 : 1;
}

static int swap_files(const char *p1, const char *p2)
{
	int fd1 = open(p1, O_RDWR), fd2 = open(p2, O_RDWR);
	struct file_swap_range fsr;
	struct stat st;

	if (fd1 < 0 || fd2 < 0 || fstat(fd2, &st))
		return perror("open"), -EBADF;
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fd1;
	fsr.length = st.st_size;
	if (ioctl(fd2, FISWAPRANGE, &fsr))
		return -errno;
	close(fd1);
	close(fd2);
	return 0;
}

static int do_range(const char *p1, uint64_t b1, const char *p2, uint64_t b2, uint64_t n,
		    uint64_t flags)
{
	int fd1 = open(p1, O_RDWR), fd2 = open(p2, O_RDWR);
	struct file_swap_range fsr;

	if (fd1 < 0 || fd2 < 0)
		return perror("open"), 1;
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fd1;
	fsr.file1_offset = (int64_t)(b1 * BS);
	fsr.file2_offset = (int64_t)(b2 * BS);
	fsr.length = (int64_t)(n * BS);
	fsr.flags = flags;
	if (ioctl(fd2, FISWAPRANGE, &fsr))
		return printf("FISWAPRANGE: %s\n", strerror(errno)), 1;
	close(fd1);
	return close(fd2);
}

static int do_blk(const char *path, uint64_t blk, unsigned int id, uint64_t src)
{
	uint64_t buf[BS / 8], want[BS / 8];
	int fd = open(path, O_RDONLY);

	if (fd < 0 || pread(fd, buf, BS, (off_t)(blk * BS)) != BS)
		return perror(path), 1;
	tag(want, id, src);
	if (memcmp(buf, want, BS))
		return printf("%s: block %llu: word0 %#llx, want %#llx\n", path,
			      (unsigned long long)blk, (unsigned long long)buf[0],
			      (unsigned long long)want[0]), 1;
	return close(fd);
}

static int do_clone(const char *src, const char *dst)
{
	int sfd = open(src, O_RDONLY), dfd = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (sfd < 0 || dfd < 0 || ioctl(dfd, FICLONE, sfd) || fsync(dfd))
		return perror("FICLONE"), 1;
	close(sfd);
	return close(dfd);
}

static int do_crash(const char *p1, const char *p2, unsigned int ms, uint32_t flag)
{
	int dfd = open(p2, O_RDONLY), status, err;
	pid_t pid;

	if (dfd < 0)
		return perror(p2), 1;
	pid = fork();
	if (pid == 0) {
		usleep(ms * 1000);
		if (ioctl(dfd, GOINGDOWN, &flag))
			perror("XFS_IOC_GOINGDOWN");
		_exit(0);
	}
	err = swap_files(p1, p2);
	waitpid(pid, &status, 0);
	printf("swap: %s\n", err ? strerror(-err) : "ok");
	return 0;
}

static int do_quota(const char *dev, unsigned int uid)
{
	struct fs_disk_quota d;

	memset(&d, 0, sizeof(d));
	if (quotactl(QCMD(Q_XGETQUOTA, USRQUOTA), dev, uid, (caddr_t)&d))
		return perror("Q_XGETQUOTA"), 1;
	printf("%llu\n", (unsigned long long)d.d_bcount / (BS / 512));
	return 0;
}

static int do_qlimit(const char *dev, unsigned int uid, uint64_t blocks)
{
	struct fs_disk_quota d;

	memset(&d, 0, sizeof(d));
	d.d_version = FS_DQUOT_VERSION;
	d.d_id = uid;
	d.d_flags = FS_USER_QUOTA;
	d.d_fieldmask = FS_DQ_BHARD;
	d.d_blk_hardlimit = blocks * (BS / 512);
	if (quotactl(QCMD(Q_XSETQLIM, USRQUOTA), dev, uid, (caddr_t)&d))
		return perror("Q_XSETQLIM"), 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	int err;

	if (!strcmp(cmd, "write") && argc == 7)
		return do_write(argv[2], atoi(argv[3]), strtoull(argv[4], 0, 0),
				strtoull(argv[5], 0, 0), strtoull(argv[6], 0, 0));
	if (!strcmp(cmd, "check") && argc == 7)
		return do_check(argv[2], atoi(argv[3]), strtoull(argv[4], 0, 0),
				strtoull(argv[5], 0, 0), strtoull(argv[6], 0, 0));
	if (!strcmp(cmd, "falloc") && argc == 5)
		return do_falloc(argv[2], strtoull(argv[3], 0, 0), strtoull(argv[4], 0, 0));
	if (!strcmp(cmd, "unwritten") && argc == 5)
		return do_unwritten(argv[2], strtoull(argv[3], 0, 0), strtoull(argv[4], 0, 0));
	if (!strcmp(cmd, "geom") && argc == 3)
		return do_geom(argv[2]);
	if (!strcmp(cmd, "swapas") && argc == 5) {
		if (setgid(atoi(argv[2])) || setuid(atoi(argv[2])))
			return perror("setuid"), 1;
		err = swap_files(argv[3], argv[4]);
		if (err)
			printf("FISWAPRANGE: %s\n", strerror(-err));
		return err ? 1 : 0;
	}
	if (!strcmp(cmd, "extents") && argc == 3)
		return do_extents(argv[2]);
	if (!strcmp(cmd, "swap") && argc == 4) {
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		err = swap_files(argv[2], argv[3]);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (err)
			printf("FISWAPRANGE: %s\n", strerror(-err));
		else
			printf("%ld\n", (long)((t1.tv_sec - t0.tv_sec) * 1000 +
					       (t1.tv_nsec - t0.tv_nsec) / 1000000));
		return err ? 1 : 0;
	}
	if (!strcmp(cmd, "range") && (argc == 7 || argc == 8))
		return do_range(argv[2], strtoull(argv[3], 0, 0), argv[4], strtoull(argv[5], 0, 0),
				strtoull(argv[6], 0, 0), argc == 8 ? strtoull(argv[7], 0, 0) : 0);
	if (!strcmp(cmd, "size") && argc == 4)
		return truncate(argv[2], strtoll(argv[3], 0, 0)) ? perror(argv[2]), 1 : 0;
	if (!strcmp(cmd, "blk") && argc == 6)
		return do_blk(argv[2], strtoull(argv[3], 0, 0), atoi(argv[4]), strtoull(argv[5], 0, 0));
	if (!strcmp(cmd, "clone") && argc == 4)
		return do_clone(argv[2], argv[3]);
	if (!strcmp(cmd, "quota") && argc == 4)
		return do_quota(argv[2], atoi(argv[3]));
	if (!strcmp(cmd, "qlimit") && argc == 5)
		return do_qlimit(argv[2], atoi(argv[3]), strtoull(argv[4], 0, 0));
	if (!strcmp(cmd, "crash") && argc == 6)
		return do_crash(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	fprintf(stderr, "usage: see the head of kernel-glue/xfs/smoke/sxsmoke.c\n");
	return 2;
}
