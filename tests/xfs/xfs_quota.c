// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Quota and swaps on XFS (mounted with uquota,gquota): two files of
 * different owners (user and group), one with 64 blocks written in the
 * range, the other with 16 and holes.  A swap of the range moves 48
 * blocks of usage from one owner to the other, users and groups alike.
 * Then a hard block limit just above one owner's usage: the swap that
 * would give it the blocks back must fail with EDQUOT and change neither
 * the files nor the usage; with the limit lifted it runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/quota.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/dqblk_xfs.h>
#include "sxb_posix.h"
#include "xfscheck.h"

#define NB	64u
#define UID_A	1001u
#define UID_B	1002u
#define GID_A	2001u
#define GID_B	2002u
#define BB	(XC_BS / 512)	/* quota counts 512-byte basic blocks */

struct qt {
	struct sxb		b;
	struct sxb_posix	px;
	const char		*dev;
	char			dir[256];
	int			fd[2];
	struct sxb_model	m[2];
};

/* Blocks (in 512-byte units) charged to @id of @type (USRQUOTA, GRPQUOTA). */
static int64_t usage(struct qt *q, int type, unsigned id)
{
	struct fs_disk_quota d;

	memset(&d, 0, sizeof(d));
	if (quotactl(QCMD(Q_XGETQUOTA, type), q->dev, (int)id, (caddr_t)&d))
		return -errno;
	return (int64_t)d.d_bcount;
}

static int set_hard(struct qt *q, unsigned id, uint64_t bbs)
{
	struct fs_disk_quota d;

	memset(&d, 0, sizeof(d));
	d.d_version = FS_DQUOT_VERSION;
	d.d_id = id;
	d.d_flags = FS_USER_QUOTA;
	d.d_fieldmask = FS_DQ_BHARD;
	d.d_blk_hardlimit = bbs;
	return quotactl(QCMD(Q_XSETQLIM, USRQUOTA), q->dev, (int)id, (caddr_t)&d) ? -errno : 0;
}

static int swap_range(struct qt *q)
{
	struct file_swap_range fsr;

	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = q->fd[0];
	fsr.length = NB * XC_BS;
	return ioctl(q->fd[1], FISWAPRANGE, &fsr) ? -errno : 0;
}

static int verify2(struct qt *q, char *why, size_t len)
{
	char m[160];
	int i;

	for (i = 0; i < 2; i++) {
		if (sxb_verify(&q->b, q->fd[i], &q->m[i], m, sizeof(m))) {
			snprintf(why, len, "file %d: %s", i, m);
			return -1;
		}
	}
	return 0;
}

static int setup(struct qt *q, char *why, size_t len)
{
	static const unsigned uids[2] = { UID_A, UID_B }, gids[2] = { GID_A, GID_B };
	uint64_t k;
	int i, error;

	sxb_posix_init(&q->b, &q->px, q->dir, XC_BS);
	for (i = 0; i < 2; i++) {
		sxb_model_init(&q->m[i], NB);
		error = q->b.create(q->b.ctx, i ? "qb" : "qa", &q->fd[i]);
		if (!error && fchown(q->fd[i], uids[i], gids[i]))
			error = -errno;
		if (error) {
			snprintf(why, len, "create/chown: %s", sxb_errname(error));
			return -1;
		}
		q->m[i].size = NB * XC_BS;
	}
	/*
	 * a: all 64 blocks; b: every 4th.  b is written whole and then
	 * punched: sparse extending writes would get speculative
	 * preallocation filling the holes.  fsync first, so that usage holds
	 * allocated blocks, not delayed-allocation reservations.
	 */
	error = sxb_write_tags(&q->b, q->fd[0], 0, NB, 0, 1);
	if (!error)
		error = sxb_write_tags(&q->b, q->fd[1], 0, NB, 1, 1);
	for (k = 0; k < NB; k++) {
		q->m[0].tag[k] = sxb_tag(0, k, 1);
		q->m[1].tag[k] = k % 4 ? 0 : sxb_tag(1, k, 1);
	}
	if (!error && (fsync(q->fd[0]) || fsync(q->fd[1])))
		error = -errno;
	for (k = 0; !error && k < NB; k += 4)
		error = q->b.punch(q->b.ctx, q->fd[1], (k + 1) * XC_BS, 3 * XC_BS);
	if (error) {
		snprintf(why, len, "write: %s", sxb_errname(error));
		return -1;
	}
	return 0;
}

void xc_quota_run(struct sxb_report *r, const char *dev, const char *mnt)
{
	struct qt q;
	char why[256];
	int64_t ua0, ub0, ga0, gb0, ua, ub, ga, gb, moved = (NB - NB / 4) * BB;
	int error;

	memset(&q, 0, sizeof(q));
	q.dev = dev;
	q.fd[0] = q.fd[1] = -1;
	snprintf(q.dir, sizeof(q.dir), "%s/quota", mnt);
	mkdir(q.dir, 0755);
	if (setup(&q, why, sizeof(why))) {
		sxb_result(r, 0, "quota-setup", "%s", why);
		goto out;
	}
	ua0 = usage(&q, USRQUOTA, UID_A);
	ub0 = usage(&q, USRQUOTA, UID_B);
	ga0 = usage(&q, GRPQUOTA, GID_A);
	gb0 = usage(&q, GRPQUOTA, GID_B);
	sxb_result(r, ua0 >= NB * BB && ub0 >= NB / 4 * BB && ga0 == ua0 && gb0 == ub0,
		   "quota-usage-before", "user %u: %lld, user %u: %lld, groups %lld %lld (512 B)",
		   UID_A, (long long)ua0, UID_B, (long long)ub0, (long long)ga0, (long long)gb0);

	error = swap_range(&q);
	if (error) {
		sxb_result(r, 0, "quota-swap", "FISWAPRANGE: %s", sxb_errname(error));
		goto out;
	}
	sxb_model_swap(&q.m[0], 0, &q.m[1], 0, NB);
	sxb_result(r, verify2(&q, why, sizeof(why)) == 0, "quota-swap-contents", "%s",
		   verify2(&q, why, sizeof(why)) ? why : "");
	ua = usage(&q, USRQUOTA, UID_A);
	ub = usage(&q, USRQUOTA, UID_B);
	ga = usage(&q, GRPQUOTA, GID_A);
	gb = usage(&q, GRPQUOTA, GID_B);
	sxb_result(r, ua == ua0 - moved && ub == ub0 + moved, "quota-user-usage-moves",
		   "user %u: %lld -> %lld, user %u: %lld -> %lld, expected %lld moved", UID_A,
		   (long long)ua0, (long long)ua, UID_B, (long long)ub0, (long long)ub,
		   (long long)moved);
	sxb_result(r, ga == ga0 - moved && gb == gb0 + moved, "quota-group-usage-moves",
		   "group %u: %lld -> %lld, group %u: %lld -> %lld", GID_A, (long long)ga0,
		   (long long)ga, GID_B, (long long)gb0, (long long)gb);

	/* a may grow by 8 blocks only: taking 48 back must fail whole */
	error = set_hard(&q, UID_A, (uint64_t)ua + 8 * BB);
	if (error) {
		sxb_result(r, 0, "quota-edquot", "Q_XSETQLIM: %s", sxb_errname(error));
		goto out;
	}
	error = swap_range(&q);
	sxb_result(r, error == -EDQUOT, "quota-edquot", "FISWAPRANGE past the hard limit: %s",
		   sxb_errname(error));
	if (!error)
		sxb_model_swap(&q.m[0], 0, &q.m[1], 0, NB);
	sxb_result(r, verify2(&q, why, sizeof(why)) == 0 && usage(&q, USRQUOTA, UID_A) == ua &&
		   usage(&q, USRQUOTA, UID_B) == ub, "quota-edquot-changed-nothing",
		   "usage %lld %lld, expected %lld %lld; %s",
		   (long long)usage(&q, USRQUOTA, UID_A), (long long)usage(&q, USRQUOTA, UID_B),
		   (long long)ua, (long long)ub, verify2(&q, why, sizeof(why)) ? why : "contents kept");
	/* no limit: it runs */
	set_hard(&q, UID_A, 0);
	error = swap_range(&q);
	if (!error)
		sxb_model_swap(&q.m[0], 0, &q.m[1], 0, NB);
	sxb_result(r, !error && !verify2(&q, why, sizeof(why)) && usage(&q, USRQUOTA, UID_A) == ua0,
		   "quota-swap-back-without-limit", "%s; user %u: %lld", sxb_errname(error), UID_A,
		   (long long)usage(&q, USRQUOTA, UID_A));
out:
	if (q.fd[0] >= 0)
		close(q.fd[0]);
	if (q.fd[1] >= 0)
		close(q.fd[1]);
	sxb_model_free(&q.m[0]);
	sxb_model_free(&q.m[1]);
}
