// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What only XFS itself can show (these came from the module's first smoke
 * harness): the geometry flag the patch sets on a V5 filesystem; that a
 * preallocated (unwritten) extent swapped in is still unwritten in FIEMAP,
 * not just read as zeroes; that a swap by a caller without CAP_FSETID
 * drops setuid and setgid from both files, as a write would, and one by
 * root keeps them; and that the swapped contents survive an unmount.
 *
 * Two files of 64 blocks: a all written (id 1), b with its odd blocks
 * written (id 2) and blocks 0-7 preallocated, so 4 of them unwritten.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include "sxb_posix.h"
#include "xfscheck.h"

#define NB		64u
#define NPRE		8u	/* b's preallocated blocks 0-7: the even ones unwritten */
#define USER		1000u
/* XFS_IOC_FSGEOMETRY: struct xfs_fsop_geom is 256 bytes, its flags at 92 */
#define FSGEOMETRY	_IOR('X', 126, char[256])
#define GEOM_FLAGS_OFF	92
#define GEOM_ATOMIC_SWAP (1u << 24)	/* XFS_FSOP_GEOM_FLAGS_ATOMIC_SWAP */

struct mt {
	struct sxb		b;
	struct sxb_posix	px;
	char			dir[256];
	char			path[2][300];
	int			fd[2];
	uint64_t		want[2][NB];	/* the tags each file holds now */
};

static void geometry(struct sxb_report *r, const char *mnt)
{
	unsigned char geo[256];
	uint32_t flags;
	int fd = open(mnt, O_RDONLY | O_DIRECTORY);

	if (fd < 0 || ioctl(fd, FSGEOMETRY, geo)) {
		sxb_result(r, 0, "xfs-geometry-atomic-swap-flag", "XFS_IOC_FSGEOMETRY: %s",
			   strerror(errno));
	} else {
		memcpy(&flags, geo + GEOM_FLAGS_OFF, sizeof(flags));
		sxb_result(r, !!(flags & GEOM_ATOMIC_SWAP), "xfs-geometry-atomic-swap-flag",
			   "flags %#x", flags);
	}
	if (fd >= 0)
		close(fd);
}

/* Unwritten blocks FIEMAP reports in blocks [0, NPRE) of @fd, or -1. */
static int unwritten(int fd)
{
	struct {
		struct fiemap		fm;
		struct fiemap_extent	fe[32];
	} f;
	uint64_t end = NPRE * XC_BS, total = 0;

	memset(&f, 0, sizeof(f));
	f.fm.fm_length = end;
	f.fm.fm_flags = FIEMAP_FLAG_SYNC;
	f.fm.fm_extent_count = 32;
	if (ioctl(fd, FS_IOC_FIEMAP, &f.fm))
		return -1;
	for (unsigned i = 0; i < f.fm.fm_mapped_extents; i++) {
		struct fiemap_extent *fe = &f.fe[i];
		uint64_t e = fe->fe_logical + fe->fe_length;

		if (fe->fe_flags & FIEMAP_EXTENT_UNWRITTEN)
			total += ((e < end ? e : end) - fe->fe_logical) / XC_BS;
	}
	return (int)total;
}

/* Both files hold what want[] says; 0, or -1 with the first difference in @why. */
static int verify(struct mt *t, char *why, size_t len)
{
	uint64_t tags[NB];

	for (int i = 0; i < 2; i++) {
		if (sxb_read_tags(&t->b, t->fd[i], 0, NB, tags)) {
			snprintf(why, len, "read file %d: %s", i, strerror(errno));
			return -1;
		}
		for (unsigned k = 0; k < NB; k++) {
			if (tags[k] != t->want[i][k]) {
				snprintf(why, len, "file %d block %u: tag %#llx, want %#llx", i, k,
					 (unsigned long long)tags[k],
					 (unsigned long long)t->want[i][k]);
				return -1;
			}
		}
	}
	return 0;
}

/* FISWAPRANGE of the whole files; 0 or -errno.  The model follows a success. */
static int swap_whole(struct mt *t, int fd1, int fd2)
{
	struct file_swap_range fsr;
	uint64_t tmp[NB];

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fd1;
	fsr.length = NB * XC_BS;
	if (ioctl(fd2, FISWAPRANGE, &fsr))
		return -errno;
	memcpy(tmp, t->want[0], sizeof(tmp));
	memcpy(t->want[0], t->want[1], sizeof(tmp));
	memcpy(t->want[1], tmp, sizeof(tmp));
	return 0;
}

static int setup(struct mt *t, const char *mnt, char *why, size_t len)
{
	snprintf(t->dir, sizeof(t->dir), "%s/misc", mnt);
	mkdir(t->dir, 0755);
	sxb_posix_init(&t->b, &t->px, t->dir, XC_BS);
	for (int i = 0; i < 2; i++) {
		snprintf(t->path[i], sizeof(t->path[i]), "%s/%c", t->dir, 'a' + i);
		t->fd[i] = open(t->path[i], O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (t->fd[i] < 0) {
			snprintf(why, len, "open %s: %s", t->path[i], strerror(errno));
			return -1;
		}
	}
	for (unsigned k = 0; k < NB; k++) {
		t->want[0][k] = sxb_tag(1, k, 1);
		t->want[1][k] = k & 1 ? sxb_tag(2, k, 1) : 0;
		if (sxb_write_tag(&t->b, t->fd[0], k, t->want[0][k]) ||
		    ((k & 1) && sxb_write_tag(&t->b, t->fd[1], k, t->want[1][k]))) {
			snprintf(why, len, "write block %u: %s", k, strerror(errno));
			return -1;
		}
	}
	if (ftruncate(t->fd[1], NB * XC_BS) || fsync(t->fd[0]) || fsync(t->fd[1]) ||
	    fallocate(t->fd[1], 0, 0, NPRE * XC_BS) || fsync(t->fd[1])) {
		snprintf(why, len, "truncate/fallocate: %s", strerror(errno));
		return -1;
	}
	if (unwritten(t->fd[1]) != NPRE / 2) {
		snprintf(why, len, "FIEMAP: %d unwritten blocks before the swap, want %u",
			 unwritten(t->fd[1]), NPRE / 2);
		return -1;
	}
	return 0;
}

/* A swap of a and b by @uid (0: root as it is); both files' modes after it in @mode. */
static int swap_as(struct mt *t, unsigned uid, mode_t mode[2])
{
	struct stat st;
	pid_t pid;
	int status, err = 0;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* a uid other than 0 leaves no capabilities: CAP_FSETID is gone */
		if (uid && (setgid(uid) || setuid(uid)))
			_exit(100);
		_exit(-swap_whole(t, t->fd[0], t->fd[1]));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -ECHILD;
	err = -WEXITSTATUS(status);
	if (!err) {	/* the child's model is gone with it: swap ours */
		uint64_t tmp[NB];

		memcpy(tmp, t->want[0], sizeof(tmp));
		memcpy(t->want[0], t->want[1], sizeof(tmp));
		memcpy(t->want[1], tmp, sizeof(tmp));
	}
	for (int i = 0; i < 2; i++) {
		if (fstat(t->fd[i], &st))
			return -errno;
		mode[i] = st.st_mode & 07777;
	}
	return err;
}

/* Both files owned by @uid with mode 6775, a swap as @run_uid; the modes after it. */
static int priv_case(struct mt *t, unsigned uid, unsigned run_uid, mode_t mode[2], char *why,
		     size_t len)
{
	int err;

	for (int i = 0; i < 2; i++) {
		if (fchown(t->fd[i], uid, uid) || fchmod(t->fd[i], 06775)) {
			snprintf(why, len, "fchown/fchmod: %s", strerror(errno));
			return -1;
		}
	}
	err = swap_as(t, run_uid, mode);
	if (err) {
		snprintf(why, len, "FISWAPRANGE as uid %u: %s", run_uid, sxb_errname(err));
		return -1;
	}
	return verify(t, why, len);
}

void xc_misc_run(struct sxb_report *r, const char *dev, const char *mnt)
{
	struct mt t;
	char why[320];
	mode_t mode[2];
	int err, n0, n1, holder;

	geometry(r, mnt);
	memset(&t, 0, sizeof(t));
	t.fd[0] = t.fd[1] = -1;
	if (setup(&t, mnt, why, sizeof(why))) {
		sxb_result(r, 0, "misc-setup", "%s", why);
		goto out;
	}

	/* b's unwritten blocks go to a and stay unwritten; a's written ones stay written */
	err = swap_whole(&t, t.fd[0], t.fd[1]);
	n0 = unwritten(t.fd[0]);
	n1 = unwritten(t.fd[1]);
	if (err)
		sxb_result(r, 0, "swap-unwritten-stays-unwritten", "FISWAPRANGE: %s",
			   sxb_errname(err));
	else if (verify(&t, why, sizeof(why)))
		sxb_result(r, 0, "swap-unwritten-stays-unwritten", "%s", why);
	else
		sxb_result(r, n0 == NPRE / 2 && n1 == 0, "swap-unwritten-stays-unwritten",
			   "FIEMAP: %d unwritten blocks in a's 0-%u (want %u), %d in b's (want 0)",
			   n0, NPRE - 1, NPRE / 2, n1);

	/* as root (CAP_FSETID) the bits stay, as they do for a write */
	if (priv_case(&t, 0, 0, mode, why, sizeof(why)))
		sxb_result(r, 0, "swap-by-root-keeps-setuid-setgid", "%s", why);
	else
		sxb_result(r, mode[0] == 06775 && mode[1] == 06775,
			   "swap-by-root-keeps-setuid-setgid", "modes %o %o, want 6775", mode[0],
			   mode[1]);
	/* as the owner without CAP_FSETID both files lose them */
	if (priv_case(&t, USER, USER, mode, why, sizeof(why)))
		sxb_result(r, 0, "swap-by-user-drops-setuid-setgid", "%s", why);
	else
		sxb_result(r, mode[0] == 0775 && mode[1] == 0775,
			   "swap-by-user-drops-setuid-setgid", "modes %o %o, want 775", mode[0],
			   mode[1]);

	/* what the swaps left is on the disk, unwritten extents too */
	close(t.fd[0]);
	close(t.fd[1]);
	t.fd[0] = t.fd[1] = -1;
	if (umount(mnt) || mount(dev, mnt, "xfs", 0, NULL)) {
		sxb_result(r, 0, "swap-contents-after-remount", "umount/mount: %s", strerror(errno));
		goto out;
	}
	for (int i = 0; i < 2; i++)
		t.fd[i] = open(t.path[i], O_RDWR);
	if (t.fd[0] < 0 || t.fd[1] < 0) {
		sxb_result(r, 0, "swap-contents-after-remount", "open: %s", strerror(errno));
		goto out;
	}
	/* the preallocated blocks are wherever b's first contents are now */
	n0 = unwritten(t.fd[0]);
	n1 = unwritten(t.fd[1]);
	holder = t.want[0][1] == sxb_tag(2, 1, 1) ? 0 : 1;
	if (verify(&t, why, sizeof(why)))
		sxb_result(r, 0, "swap-contents-after-remount", "%s", why);
	else
		sxb_result(r, (holder ? n1 : n0) == NPRE / 2 && (holder ? n0 : n1) == 0,
			   "swap-contents-after-remount",
			   "FIEMAP: %d and %d unwritten blocks in a's and b's 0-%u, want %u in %c's",
			   n0, n1, NPRE - 1, NPRE / 2, 'a' + holder);
out:
	for (int i = 0; i < 2; i++)
		if (t.fd[i] >= 0)
			close(t.fd[i]);
}
