// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control device /dev/swapext-ctl (ABI: include/swapext/kctl.h).
 *
 * Instances live in a small table under sx_kctl_lock.  An ioctl that works
 * on an instance finds it under the table lock and takes the instance's
 * rwsem shared before dropping the table lock; DETACH first removes the
 * instance from the table and then takes the rwsem exclusive, so it waits
 * for operations in flight and none can start.  SHUTDOWN runs beside any
 * operation: it shuts the mount down and kills the device, so every later
 * I/O fails at once and the operations in flight end with -EIO.
 */
#include "sx_platform.h"
#include "sx_kglue.h"
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/ioctl.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <swapext/swapext.h>
#include <swapext/selftest.h>
#include <swapext/kctl.h>
#include <swapext/swapext_compat.h>
#include "mount.h"
#include "trans.h"
#include "alloc.h"
#include "log.h"
#include "sx_api.h"

/* The ABI's encoding is the kernel's. */
static_assert(FISWAPRANGE == _IOWR('X', 129, struct file_swap_range));
static_assert(sizeof(struct file_swap_range) == 120);
static_assert(XFS_IOC_SWAPEXT == _IOWR('X', 109, struct sx_xfs_swapext));
static_assert(sizeof(struct sx_xfs_swapext) == 192);
static_assert(SX_KCTL_ATTACH == _IOWR(SX_KCTL_TYPE, 1, struct sx_kctl_attach));
static_assert(SX_KCTL_SHUTDOWN == _IOW(SX_KCTL_TYPE, 3, struct sx_kctl_id));
static_assert(SX_KCTL_VERSION == _IOR(SX_KCTL_TYPE, 0, struct sx_kctl_version));
static_assert(SX_KCTL_BULKSTAT == _IOWR(SX_KCTL_TYPE, 28, struct sx_kctl_bulkstat));

struct sx_kinst {
	struct rw_semaphore	ki_rw;		/* shared: an op; exclusive: detach */
	struct sx_mount		*ki_mp;
	struct sx_bdev		*ki_bd;
	u32			ki_id;
	u32			ki_cut_lost;	/* writes the device lost at SHUTDOWN */
	char			ki_path[SX_KCTL_PATH_MAX];
};

/* What SELECT bound an open control file to (FISWAPRANGE's file2). */
struct sx_kctl_priv {
	bool	kp_bound;
	u32	kp_id;
	s32	kp_fd;
};

static DEFINE_MUTEX(sx_kctl_lock);
static struct sx_kinst *sx_kinsts[SX_KCTL_MAX_INSTANCES];

/* Find instance @id and take it shared; NULL if there is none. */
static struct sx_kinst *sx_kinst_get(u32 id)
{
	struct sx_kinst *ki = NULL;

	if (id >= SX_KCTL_MAX_INSTANCES)
		return NULL;
	mutex_lock(&sx_kctl_lock);
	ki = sx_kinsts[id];
	if (ki)
		down_read(&ki->ki_rw);
	mutex_unlock(&sx_kctl_lock);
	return ki;
}

/* Let an instance from sx_kinst_get() go. */
static void sx_kinst_put(struct sx_kinst *ki)
{
	up_read(&ki->ki_rw);
}

/* Report lines of the self-test go to the kernel log. */
static void sx_kctl_report(void *arg, const char *fmt, ...)
{
	struct va_format vaf;
	va_list ap;

	va_start(ap, fmt);
	vaf.fmt = fmt;
	vaf.va = &ap;
	pr_info("swapext: selftest: %pV\n", &vaf);
	va_end(ap);
}

/* Run the engine's scenarios and the glue's checks; print and return the counts. */
int sx_kctl_run_selftest(u32 *passed, u32 *failed)
{
	*passed = 0;
	*failed = 0;
	pr_info("swapext: selftest: starting\n");
	sx_selftest_run(sx_kmemdev_create, sx_kctl_report, NULL, passed, failed);
	sx_kglue_selftest(sx_kctl_report, NULL, passed, failed);
	pr_info("swapext: selftest: total: %u passed, %u failed\n", *passed, *failed);
	return *failed ? -EIO : 0;
}

/* ATTACH: open the block device and mount it (recovery runs). */
static long sx_kctl_attach(void __user *uarg)
{
	struct sx_kctl_attach *ka;
	struct sx_recovery_stats rs;
	struct sx_mount_opts mo = { 0 };
	struct sx_kinst *ki = NULL;
	struct sx_bdev *bd = NULL;
	long error;
	u32 id;

	ka = memdup_user(uarg, sizeof(*ka));
	if (IS_ERR(ka))
		return PTR_ERR(ka);
	error = -EINVAL;
	if ((ka->ka_flags & ~(SX_KCTL_ATTACH_RDONLY | SX_KCTL_ATTACH_NORECOVERY |
			      SX_KCTL_ATTACH_LOG_EACH | SX_KCTL_ATTACH_OVERLAP |
			      SX_KCTL_ATTACH_VOLATILE)) ||
	    ((ka->ka_flags & SX_KCTL_ATTACH_VOLATILE) && (ka->ka_flags & SX_KCTL_ATTACH_RDONLY)) ||
	    (ka->ka_seed && !(ka->ka_flags & SX_KCTL_ATTACH_VOLATILE)) ||
	    strnlen(ka->ka_path, sizeof(ka->ka_path)) >= sizeof(ka->ka_path))
		goto out_free;
	ki = kzalloc(sizeof(*ki), GFP_KERNEL);
	error = -ENOMEM;
	if (!ki)
		goto out_free;
	init_rwsem(&ki->ki_rw);
	strscpy(ki->ki_path, ka->ka_path, sizeof(ki->ki_path));

	error = sx_kbdev_open(ka->ka_path, ka->ka_flags & SX_KCTL_ATTACH_RDONLY, &bd);
	if (error)
		goto out_free;
	if (ka->ka_flags & SX_KCTL_ATTACH_VOLATILE) {
		error = sx_kbdev_set_volatile(bd, ka->ka_seed);
		if (error)
			goto out_bdev;
	}
	if (ka->ka_flags & SX_KCTL_ATTACH_RDONLY)
		mo.mo_flags |= SX_MOUNT_RDONLY;
	if (ka->ka_flags & SX_KCTL_ATTACH_NORECOVERY)
		mo.mo_flags |= SX_MOUNT_NORECOVERY;
	if (ka->ka_flags & SX_KCTL_ATTACH_LOG_EACH)
		mo.mo_flags |= SX_MOUNT_LOG_EACH;
	if (ka->ka_flags & SX_KCTL_ATTACH_OVERLAP)
		mo.mo_flags |= SX_MOUNT_OVERLAP_FORCES;
	mo.mo_name = ki->ki_path;
	error = sx_mount(bd, &mo, &ki->ki_mp);
	if (error)
		goto out_bdev;
	ki->ki_bd = bd;

	mutex_lock(&sx_kctl_lock);
	for (id = 0; id < SX_KCTL_MAX_INSTANCES && sx_kinsts[id]; id++)
		;
	if (id < SX_KCTL_MAX_INSTANCES) {
		ki->ki_id = id;
		sx_kinsts[id] = ki;
	}
	mutex_unlock(&sx_kctl_lock);
	if (id == SX_KCTL_MAX_INSTANCES) {
		error = -EMFILE;
		sx_unmount(ki->ki_mp);
		goto out_bdev;
	}

	sx_get_recovery_stats(ki->ki_mp, &rs);
	ka->ka_id = id;
	ka->ka_rs_records = rs.rs_records;
	ka->ka_rs_ops = rs.rs_ops;
	ka->ka_rs_bufs_replayed = rs.rs_bufs_replayed;
	ka->ka_rs_bufs_skipped = rs.rs_bufs_skipped;
	ka->ka_rs_bufs_cancelled = rs.rs_bufs_cancelled;
	ka->ka_rs_intents = rs.rs_intents;
	ka->ka_rs_head_lsn = rs.rs_head_lsn;
	ka->ka_rs_tail_lsn = rs.rs_tail_lsn;
	ka->ka_rs_stop_reason = rs.rs_stop_reason;
	pr_info("swapext: attached %s as instance %u (recovery: %llu records, %llu buffers replayed)\n",
		ki->ki_path, id, rs.rs_records, rs.rs_bufs_replayed);
	error = 0;
	if (copy_to_user(uarg, ka, sizeof(*ka)))
		error = -EFAULT;	/* attached all the same: DETACH by id works */
	kfree(ka);
	return error;

out_bdev:
	sx_kdev_destroy(bd);
out_free:
	kfree(ki);
	kfree(ka);
	return error;
}

/* Unmount and close instance @ki, which is no longer in the table. */
static int sx_kinst_destroy(struct sx_kinst *ki)
{
	int error;

	down_write(&ki->ki_rw);
	error = sx_unmount(ki->ki_mp);
	sx_kdev_destroy(ki->ki_bd);
	up_write(&ki->ki_rw);
	pr_info("swapext: detached instance %u (%s): %d\n", ki->ki_id, ki->ki_path, error);
	kfree(ki);
	return error;
}

/* DETACH: unmount (checkpoint unless shut down) and close the device. */
static long sx_kctl_detach(void __user *uarg)
{
	struct sx_kctl_id kid;
	struct sx_kinst *ki;

	if (copy_from_user(&kid, uarg, sizeof(kid)))
		return -EFAULT;
	if (kid.ki_flags || kid.ki_id >= SX_KCTL_MAX_INSTANCES)
		return -EINVAL;
	mutex_lock(&sx_kctl_lock);
	ki = sx_kinsts[kid.ki_id];
	sx_kinsts[kid.ki_id] = NULL;
	mutex_unlock(&sx_kctl_lock);
	if (!ki)
		return -ENOENT;
	kid.ki_result = sx_kinst_destroy(ki);
	if (copy_to_user(uarg, &kid, sizeof(kid)))
		return -EFAULT;
	return 0;
}

/* SHUTDOWN, SYNC_FS, CHECKPOINT: one call on one instance. */
static long sx_kctl_simple(unsigned int cmd, void __user *uarg)
{
	struct sx_kctl_id kid;
	struct sx_kinst *ki;
	long error = 0;

	if (copy_from_user(&kid, uarg, sizeof(kid)))
		return -EFAULT;
	if (kid.ki_flags)
		return -EINVAL;
	ki = sx_kinst_get(kid.ki_id);
	if (!ki)
		return -ENOENT;
	switch (cmd) {
	case SX_KCTL_SHUTDOWN:
		/* the device first: no write issued after this reaches it */
		error = sx_kdev_kill(ki->ki_bd);
		sx_shutdown(ki->ki_mp);
		if (error > 0)
			WRITE_ONCE(ki->ki_cut_lost, error);
		error = min(error, 0);
		pr_info("swapext: instance %u shut down\n", ki->ki_id);
		break;
	case SX_KCTL_SYNC_FS:
		error = sx_sync(ki->ki_mp);
		break;
	case SX_KCTL_CHECKPOINT:
		error = sx_checkpoint(ki->ki_mp);
		break;
	}
	sx_kinst_put(ki);
	return error;
}

/* INFO: describe an instance. */
static long sx_kctl_info(void __user *uarg)
{
	struct sx_kctl_info *kn;
	struct sx_info in;
	struct sx_kinst *ki;
	long error;
	u32 id;

	if (get_user(id, (u32 __user *)uarg))
		return -EFAULT;
	ki = sx_kinst_get(id);
	if (!ki)
		return -ENOENT;
	error = sx_get_info(ki->ki_mp, &in);
	kn = kzalloc(sizeof(*kn), GFP_KERNEL);
	if (!error && !kn)
		error = -ENOMEM;
	if (!error) {
		kn->ki_id = id;
		kn->ki_version = in.in_version;
		kn->ki_blocksize = in.in_blocksize;
		kn->ki_sectsize = in.in_sectsize;
		kn->ki_dblocks = in.in_dblocks;
		kn->ki_free_blocks = in.in_free_blocks;
		kn->ki_logstart = in.in_logstart;
		kn->ki_bmapstart = in.in_bmapstart;
		kn->ki_datastart = in.in_datastart;
		kn->ki_logblocks = in.in_logblocks;
		kn->ki_bmapblocks = in.in_bmapblocks;
		kn->ki_feat_compat = in.in_feat_compat;
		kn->ki_feat_ro_compat = in.in_feat_ro_compat;
		kn->ki_feat_incompat = in.in_feat_incompat;
		kn->ki_feat_log_incompat = in.in_feat_log_incompat;
		kn->ki_log_head = in.in_log_head;
		kn->ki_log_tail = in.in_log_tail;
		kn->ki_sb_seq = in.in_sb_seq;
		kn->ki_log_epoch = in.in_log_epoch;
		kn->ki_shutdown = sx_shutdown_state(ki->ki_mp, NULL, 0) != 0;
		memcpy(kn->ki_uuid, in.in_uuid, sizeof(kn->ki_uuid));
		strscpy(kn->ki_label, in.in_label, sizeof(kn->ki_label));
		if (copy_to_user(uarg, kn, sizeof(*kn)))
			error = -EFAULT;
	}
	kfree(kn);
	sx_kinst_put(ki);
	return error;
}

/* ALLOC, FREE, ISFREE: the allocator, each in a transaction of its own. */
static long sx_kctl_extent(unsigned int cmd, void __user *uarg)
{
	struct sx_kctl_extent ke;
	struct sx_trans *tp;
	struct sx_kinst *ki;
	u32 tflags = 0, len;
	bool isfree;
	long error;

	if (copy_from_user(&ke, uarg, sizeof(ke)))
		return -EFAULT;
	if (ke.ke_flags & ~SX_KCTL_SYNC)
		return -EINVAL;
	if (ke.ke_flags & SX_KCTL_SYNC)
		tflags |= SX_TRANS_SYNC;
	ki = sx_kinst_get(ke.ke_id);
	if (!ki)
		return -ENOENT;
	if (cmd == SX_KCTL_ISFREE) {
		error = sx_alloc_is_free(ki->ki_mp, ke.ke_bno, &isfree);
		ke.ke_len = isfree;
		goto out_copy;
	}
	error = sx_trans_alloc(ki->ki_mp, sx_alloc_res_bytes(ki->ki_mp), tflags, &tp);
	if (error)
		goto out_put;
	if (cmd == SX_KCTL_ALLOC) {
		error = sx_alloc_extent(tp, ke.ke_hint, ke.ke_minlen, ke.ke_maxlen,
					&ke.ke_bno, &len);
		ke.ke_len = len;
	} else {
		error = sx_free_extent(tp, ke.ke_bno, ke.ke_len);
	}
	if (error) {
		sx_trans_cancel(tp);
		goto out_put;
	}
	error = sx_trans_commit(tp);
out_copy:
	if (!error && cmd != SX_KCTL_FREE && copy_to_user(uarg, &ke, sizeof(ke)))
		error = -EFAULT;
out_put:
	sx_kinst_put(ki);
	return error;
}

/* SELFTEST: run the scenarios now. */
static long sx_kctl_selftest(void __user *uarg)
{
	struct sx_kctl_selftest ks;

	if (copy_from_user(&ks, uarg, sizeof(ks)))
		return -EFAULT;
	if (ks.ks_flags)
		return -EINVAL;
	sx_kctl_run_selftest(&ks.ks_passed, &ks.ks_failed);
	return copy_to_user(uarg, &ks, sizeof(ks)) ? -EFAULT : 0;
}

/* FAULT: arm, count or forget fault sites. */
static long sx_kctl_fault(void __user *uarg)
{
	struct sx_kctl_fault kf;
	long error = 0;

	if (copy_from_user(&kf, uarg, sizeof(kf)))
		return -EFAULT;
	if (kf.kf_flags & ~SX_KCTL_FAULT_FOREVER)
		return -EINVAL;
	kf.kf_name[sizeof(kf.kf_name) - 1] = '\0';
	if (!kf.kf_name[0]) {
		sx_kfault_clear();
		return 0;
	}
	error = sx_kfault_arm(kf.kf_name, kf.kf_nth, kf.kf_flags & SX_KCTL_FAULT_FOREVER,
			      kf.kf_error);
	kf.kf_hits = sx_kfault_hits(kf.kf_name);
	if (!error && copy_to_user(uarg, &kf, sizeof(kf)))
		error = -EFAULT;
	return error;
}

/* Files: each handler calls the engine's file API. */

/* CREATE, OPEN, CLOSE, FSYNC. */
static long sx_kctl_file(unsigned int cmd, void __user *uarg)
{
	struct sx_kctl_file *kf;
	struct sx_kinst *ki;
	long error;

	kf = memdup_user(uarg, sizeof(*kf));
	if (IS_ERR(kf))
		return PTR_ERR(kf);
	error = -EINVAL;
	if (kf->kf_flags)
		goto out_free;
	kf->kf_name[sizeof(kf->kf_name) - 1] = '\0';
	error = -ENOENT;
	ki = sx_kinst_get(kf->kf_id);
	if (!ki)
		goto out_free;
	error = -EOPNOTSUPP;
	switch (cmd) {
	case SX_KCTL_CREATE:
		error = sx_create(ki->ki_mp, kf->kf_name, kf->kf_mode, &kf->kf_fd);
		break;
	case SX_KCTL_OPEN:
		error = sx_open(ki->ki_mp, kf->kf_name, &kf->kf_fd);
		break;
	case SX_KCTL_CLOSE:
		error = sx_close(ki->ki_mp, kf->kf_fd);
		break;
	case SX_KCTL_FSYNC:
		error = sx_fsync(ki->ki_mp, kf->kf_fd);
		break;
	}
	sx_kinst_put(ki);
	if (!error && (cmd == SX_KCTL_CREATE || cmd == SX_KCTL_OPEN) &&
	    copy_to_user(uarg, kf, sizeof(*kf)))
		error = -EFAULT;
out_free:
	kfree(kf);
	return error;
}

#define SX_KCTL_RW_CHUNK	(1u << 20)

/* PREAD, PWRITE through a kernel buffer of at most SX_KCTL_RW_CHUNK bytes. */
static s64 sx_kctl_rw_engine(struct sx_kinst *ki, unsigned int cmd, struct sx_kctl_rw *kr)
{
	u8 __user *ubuf = u64_to_user_ptr(kr->kr_buf);
	u64 done = 0;
	size_t cap = min_t(u64, kr->kr_len, SX_KCTL_RW_CHUNK);
	u8 *kbuf;
	s64 n = 0;

	if (!kr->kr_len)
		return 0;
	kbuf = kvmalloc(cap, GFP_KERNEL);
	if (!kbuf)
		return -ENOMEM;
	while (done < kr->kr_len) {
		size_t chunk = min_t(u64, kr->kr_len - done, cap);

		if (cmd == SX_KCTL_PWRITE) {
			if (copy_from_user(kbuf, ubuf + done, chunk)) {
				n = -EFAULT;
				break;
			}
			n = sx_pwrite(ki->ki_mp, kr->kr_fd, kbuf, chunk, kr->kr_off + done);
		} else {
			n = sx_pread(ki->ki_mp, kr->kr_fd, kbuf, chunk, kr->kr_off + done);
			if (n > 0 && copy_to_user(ubuf + done, kbuf, n))
				n = -EFAULT;
		}
		if (n <= 0)
			break;
		done += n;
		if ((size_t)n < chunk)
			break;
	}
	kvfree(kbuf);
	return done ? (s64)done : n;
}

/* PREAD, PWRITE. */
static long sx_kctl_rw(unsigned int cmd, void __user *uarg)
{
	struct sx_kctl_rw kr;
	struct sx_kinst *ki;
	long error = 0;

	if (copy_from_user(&kr, uarg, sizeof(kr)))
		return -EFAULT;
	if (kr.kr_off > (u64)S64_MAX || kr.kr_len > (u64)S64_MAX - kr.kr_off)
		return -EINVAL;
	ki = sx_kinst_get(kr.kr_id);
	if (!ki)
		return -ENOENT;
	kr.kr_result = sx_kctl_rw_engine(ki, cmd, &kr);
	if (kr.kr_result < 0)
		error = kr.kr_result;
	sx_kinst_put(ki);
	if (!error && copy_to_user(uarg, &kr, sizeof(kr)))
		error = -EFAULT;
	return error;
}

/*
 * The ranges of an AWRITE in kernel memory: @iov (@n of them) point into
 * one buffer of every range's bytes, *@bufp.
 */
static long sx_kctl_awrite_copy(const struct sx_kctl_awrite *ka, struct sx_atomic_iov *iov,
				u8 **bufp)
{
	struct sx_kctl_aiov *uiov;
	u64 total = 0, done = 0;
	long error = 0;
	u32 i;
	u8 *buf;

	uiov = memdup_user(u64_to_user_ptr(ka->ka_iov), (size_t)ka->ka_n * sizeof(*uiov));
	if (IS_ERR(uiov))
		return PTR_ERR(uiov);
	for (i = 0; i < ka->ka_n; i++) {
		if (uiov[i].ai_pad) {
			error = -EINVAL;
			goto out;
		}
		if (uiov[i].ai_len > SX_KCTL_AWRITE_MAX - total) {
			error = -E2BIG;
			goto out;
		}
		total += uiov[i].ai_len;
	}
	buf = kvmalloc(total ? total : 1, GFP_KERNEL);
	if (!buf) {
		error = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ka->ka_n; i++) {
		if (copy_from_user(buf + done, u64_to_user_ptr(uiov[i].ai_buf), uiov[i].ai_len)) {
			kvfree(buf);
			error = -EFAULT;
			goto out;
		}
		iov[i].ai_fd = uiov[i].ai_fd;
		iov[i].ai_pad = 0;
		iov[i].ai_buf = buf + done;
		iov[i].ai_len = uiov[i].ai_len;
		iov[i].ai_off = uiov[i].ai_off;
		done += uiov[i].ai_len;
	}
	*bufp = buf;
out:
	kfree(uiov);
	return error;
}

/* AWRITE: an atomic write of one or several ranges (the engine checks the rest). */
static long sx_kctl_awrite(void __user *uarg)
{
	struct sx_kctl_awrite ka;
	struct sx_atomic_iov *iov;
	struct sx_kinst *ki;
	u8 *buf = NULL;
	long error;

	if (copy_from_user(&ka, uarg, sizeof(ka)))
		return -EFAULT;
	if (ka.ka_pad || !ka.ka_n || ka.ka_n > SX_ATOMIC_IOV_MAX ||
	    (ka.ka_flags & ~SX_ATOMIC_ALL_FLAGS))
		return -EINVAL;
	iov = kcalloc(ka.ka_n, sizeof(*iov), GFP_KERNEL);
	if (!iov)
		return -ENOMEM;
	error = sx_kctl_awrite_copy(&ka, iov, &buf);
	if (error)
		goto out;
	ki = sx_kinst_get(ka.ka_id);
	if (!ki) {
		error = -ENOENT;
		goto out;
	}
	error = sx_atomic_writev(ki->ki_mp, iov, ka.ka_n, ka.ka_flags);
	sx_kinst_put(ki);
out:
	kvfree(buf);
	kfree(iov);
	return error;
}

/* LOGSTATS. */
static long sx_kctl_logstats(void __user *uarg)
{
	struct sx_kctl_logstats kl;
	struct sx_log_stats st;
	struct sx_kinst *ki;

	if (copy_from_user(&kl, uarg, sizeof(kl)))
		return -EFAULT;
	if (kl.kl_pad)
		return -EINVAL;
	ki = sx_kinst_get(kl.kl_id);
	if (!ki)
		return -ENOENT;
	sx_log_get_stats(ki->ki_mp, &st);
	kl.kl_cut_lost = READ_ONCE(ki->ki_cut_lost);
	sx_kinst_put(ki);
	kl.kl_trans = st.ls_trans;
	kl.kl_forces = st.ls_forces;
	kl.kl_flights = st.ls_flights;
	kl.kl_records = st.ls_records;
	kl.kl_bytes = st.ls_bytes;
	kl.kl_waits = st.ls_waits;
	kl.kl_checkpoints = st.ls_checkpoints;
	return copy_to_user(uarg, &kl, sizeof(kl)) ? -EFAULT : 0;
}

/* CLONE. */
static long sx_kctl_clone(void __user *uarg)
{
	struct sx_kctl_clone kc;
	struct sx_kinst *ki;
	long error;

	if (copy_from_user(&kc, uarg, sizeof(kc)))
		return -EFAULT;
	if (kc.kc_flags)
		return -EINVAL;
	ki = sx_kinst_get(kc.kc_id);
	if (!ki)
		return -ENOENT;
	error = sx_clone(ki->ki_mp, kc.kc_dst_fd, kc.kc_src_fd);
	sx_kinst_put(ki);
	return error;
}

/* SELECT: bind this open control file to an instance and descriptor. */
static long sx_kctl_select(struct file *file, void __user *uarg)
{
	struct sx_kctl_priv *kp = file->private_data;
	struct sx_kctl_select ks;

	if (copy_from_user(&ks, uarg, sizeof(ks)))
		return -EFAULT;
	if (ks.ks_id >= SX_KCTL_MAX_INSTANCES || ks.ks_fd < 0)
		return -EINVAL;
	kp->kp_id = ks.ks_id;
	kp->kp_fd = ks.ks_fd;
	kp->kp_bound = true;
	return 0;
}

/*
 * FISWAPRANGE on a SELECTed control file: the ABI's own checks of the
 * request (pad, flags, file1_fd), then the engine's swap on file2 = the
 * SELECTed descriptor; the request is copied back on success (TO_EOF: the
 * length swapped).
 */
static long sx_kctl_swaprange(struct file *file, void __user *uarg)
{
	struct sx_kctl_priv *kp = file->private_data;
	struct file_swap_range fsr;
	struct sx_kinst *ki;
	long error;
	size_t i;

	if (copy_from_user(&fsr, uarg, sizeof(fsr)))
		return -EFAULT;
	if (!kp->kp_bound)
		return -EBADF;
	for (i = 0; i < ARRAY_SIZE(fsr.pad); i++)
		if (fsr.pad[i])
			return -EINVAL;
	if ((fsr.flags & ~FILE_SWAP_RANGE_ALL_FLAGS) ||
	    ((fsr.flags & FILE_SWAP_RANGE_FULL_FILES) && (fsr.flags & FILE_SWAP_RANGE_TO_EOF)))
		return -EINVAL;
	if (fsr.file1_fd < 0 || fsr.file1_fd > INT_MAX)
		return -EBADF;
	ki = sx_kinst_get(kp->kp_id);
	if (!ki)
		return -ENOENT;
	error = sx_swap_file_range(ki->ki_mp, kp->kp_fd, &fsr);
	if (!error && copy_to_user(uarg, &fsr, sizeof(fsr)))
		error = -EFAULT;
	sx_kinst_put(ki);
	return error;
}

/*
 * XFS_IOC_SWAPEXT on a SELECTed control file: the binding names the
 * instance; both descriptors come from the request, as XFS takes them.
 * Nothing is copied back (XFS copies nothing back either).
 */
static long sx_kctl_swapext(struct file *file, void __user *uarg)
{
	struct sx_kctl_priv *kp = file->private_data;
	struct sx_xfs_swapext *sx;
	struct sx_kinst *ki;
	long error;

	if (!kp->kp_bound)
		return -EBADF;
	/* 192 bytes: off the ioctl path's stack */
	sx = memdup_user(uarg, sizeof(*sx));
	if (IS_ERR(sx))
		return PTR_ERR(sx);
	ki = sx_kinst_get(kp->kp_id);
	if (!ki) {
		kfree(sx);
		return -ENOENT;
	}
	error = sx_swapext(ki->ki_mp, sx);
	sx_kinst_put(ki);
	kfree(sx);
	return error;
}

/* BULKSTAT: the freshness record XFS_IOC_SWAPEXT wants, from the engine. */
static long sx_kctl_bulkstat(void __user *uarg)
{
	struct sx_kctl_bulkstat *kb;
	struct sx_kinst *ki;
	long error;

	kb = memdup_user(uarg, sizeof(*kb));
	if (IS_ERR(kb))
		return PTR_ERR(kb);
	ki = sx_kinst_get(kb->kb_id);
	if (!ki) {
		kfree(kb);
		return -ENOENT;
	}
	error = sx_bulkstat(ki->ki_mp, kb->kb_fd, &kb->kb_stat);
	sx_kinst_put(ki);
	if (!error && copy_to_user(uarg, kb, sizeof(*kb)))
		error = -EFAULT;
	kfree(kb);
	return error;
}

/* The features the engine has today. */
static u32 sx_kctl_features(void)
{
	u32 f = 0;

	f |= SX_KCTL_FEAT_FILES;
	f |= SX_KCTL_FEAT_CLONE;
	f |= SX_KCTL_FEAT_SWAPRANGE;
	f |= SX_KCTL_FEAT_SWAPEXT;
	f |= SX_KCTL_FEAT_ATOMIC;
#ifdef SX_FAULT_INJECTION
	f |= SX_KCTL_FEAT_FAULTS;
#endif
	return f;
}

/* VERSION. */
static long sx_kctl_version(void __user *uarg)
{
	struct sx_kctl_version kv = { 0 };
	u32 id;

	kv.kv_abi = SX_KCTL_ABI_VERSION;
	kv.kv_features = sx_kctl_features();
	mutex_lock(&sx_kctl_lock);
	for (id = 0; id < SX_KCTL_MAX_INSTANCES; id++)
		kv.kv_instances += sx_kinsts[id] != NULL;
	mutex_unlock(&sx_kctl_lock);
	return copy_to_user(uarg, &kv, sizeof(kv)) ? -EFAULT : 0;
}

/* Every ioctl of the control device. */
static long sx_kctl_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	switch (cmd) {
	case SX_KCTL_VERSION:
		return sx_kctl_version(uarg);
	case SX_KCTL_ATTACH:
		return sx_kctl_attach(uarg);
	case SX_KCTL_DETACH:
		return sx_kctl_detach(uarg);
	case SX_KCTL_SHUTDOWN:
	case SX_KCTL_SYNC_FS:
	case SX_KCTL_CHECKPOINT:
		return sx_kctl_simple(cmd, uarg);
	case SX_KCTL_INFO:
		return sx_kctl_info(uarg);
	case SX_KCTL_ALLOC:
	case SX_KCTL_FREE:
	case SX_KCTL_ISFREE:
		return sx_kctl_extent(cmd, uarg);
	case SX_KCTL_SELFTEST:
		return sx_kctl_selftest(uarg);
	case SX_KCTL_FAULT:
		return sx_kctl_fault(uarg);
	case SX_KCTL_CREATE:
	case SX_KCTL_OPEN:
	case SX_KCTL_CLOSE:
	case SX_KCTL_FSYNC:
		return sx_kctl_file(cmd, uarg);
	case SX_KCTL_PREAD:
	case SX_KCTL_PWRITE:
		return sx_kctl_rw(cmd, uarg);
	case SX_KCTL_CLONE:
		return sx_kctl_clone(uarg);
	case SX_KCTL_SELECT:
		return sx_kctl_select(file, uarg);
	case FISWAPRANGE:
		return sx_kctl_swaprange(file, uarg);
	case XFS_IOC_SWAPEXT:
		return sx_kctl_swapext(file, uarg);
	case SX_KCTL_BULKSTAT:
		return sx_kctl_bulkstat(uarg);
	case SX_KCTL_AWRITE:
		return sx_kctl_awrite(uarg);
	case SX_KCTL_LOGSTATS:
		return sx_kctl_logstats(uarg);
	}
	return -ENOTTY;
}

/* Each open control file has its own SELECT binding. */
static int sx_kctl_open(struct inode *inode, struct file *file)
{
	file->private_data = kzalloc(sizeof(struct sx_kctl_priv), GFP_KERNEL);
	return file->private_data ? 0 : -ENOMEM;
}

/* Forget the binding. */
static int sx_kctl_release(struct inode *inode, struct file *file)
{
	kfree(file->private_data);
	return 0;
}

static const struct file_operations sx_kctl_fops = {
	.owner		= THIS_MODULE,
	.open		= sx_kctl_open,
	.release	= sx_kctl_release,
	.unlocked_ioctl	= sx_kctl_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

static struct miscdevice sx_kctl_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= SX_KCTL_NAME,
	.fops	= &sx_kctl_fops,
	.mode	= 0600,
};

/* Register /dev/swapext-ctl. */
int sx_kctl_init(void)
{
	return misc_register(&sx_kctl_misc);
}

/* Unregister the control device and detach every instance left. */
void sx_kctl_exit(void)
{
	u32 id;

	misc_deregister(&sx_kctl_misc);
	for (id = 0; id < SX_KCTL_MAX_INSTANCES; id++) {
		struct sx_kinst *ki;

		mutex_lock(&sx_kctl_lock);
		ki = sx_kinsts[id];
		sx_kinsts[id] = NULL;
		mutex_unlock(&sx_kctl_lock);
		if (ki)
			sx_kinst_destroy(ki);
	}
}
