/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control device of the swapext kernel module, /dev/swapext-ctl: the
 * ioctl ABI shared by the module (kernel-glue/ctl_os.c) and the tool
 * (`swapext kmod ...`).
 *
 * An engine instance is a mounted filesystem on a block device, named by a
 * small id that ATTACH returns.  Every structure has fixed-width fields and
 * explicit padding (same layout for 32- and 64-bit callers); padding and
 * reserved fields must be zero and come back zero.  Every ioctl needs
 * CAP_SYS_ADMIN.  Errors are negative errnos returned by ioctl() (so -1 and
 * errno in userspace).
 *
 * Files: a descriptor (kf_fd) is the engine's, valid in its instance until
 * CLOSE or DETACH.  FISWAPRANGE is the patch set's own number and struct:
 * it is issued on a control device file that SELECT bound to an instance and
 * a descriptor (file2), and file1_fd is another descriptor of that instance.
 * XFS_IOC_SWAPEXT (include/swapext/swapext_compat.h), XFS's number and
 * struct too, is issued on a SELECTed control file as well: the binding
 * only names the instance, sx_fdtarget and sx_fdtmp are its descriptors.
 */
#ifndef SWAPEXT_KCTL_H
#define SWAPEXT_KCTL_H

#include <swapext/types.h>
#include <swapext/fsr.h>
#include <swapext/swapext_compat.h>

#define SX_KCTL_NAME		"swapext-ctl"
#define SX_KCTL_PATH		"/dev/swapext-ctl"
#define SX_KCTL_ABI_VERSION	1
#define SX_KCTL_PATH_MAX	256
#define SX_KCTL_NAME_MAX	256
#define SX_KCTL_FAULT_NAME_MAX	48
#define SX_KCTL_MAX_INSTANCES	8

/* The ioctl type byte ('X' is FISWAPRANGE's; ours is 0xb7, unused in Linux 6.1). */
#define SX_KCTL_TYPE		0xb7

/* VERSION: what this module speaks and has. */
struct sx_kctl_version {
	uint32_t	kv_abi;		/* SX_KCTL_ABI_VERSION */
	uint32_t	kv_features;	/* SX_KCTL_FEAT_*: operations the engine has */
	uint32_t	kv_instances;	/* attached now */
	uint32_t	kv_pad;
};
#define SX_KCTL_FEAT_FILES	(1u << 0)	/* create/open/close/pread/pwrite/fsync */
#define SX_KCTL_FEAT_CLONE	(1u << 1)
#define SX_KCTL_FEAT_SWAPRANGE	(1u << 2)
#define SX_KCTL_FEAT_FAULTS	(1u << 3)	/* fault sites can be armed */
#define SX_KCTL_FEAT_SWAPEXT	(1u << 4)	/* XFS_IOC_SWAPEXT (swapext_compat.h) */
#define SX_KCTL_FEAT_ATOMIC	(1u << 5)	/* AWRITE, LOGSTATS, ATTACH_OVERLAP, _VOLATILE */

/* ATTACH: mount the filesystem on a block device (log recovery runs). */
struct sx_kctl_attach {
	char		ka_path[SX_KCTL_PATH_MAX];	/* in: block device, NUL-terminated */
	uint32_t	ka_flags;			/* in: SX_KCTL_ATTACH_* */
	uint32_t	ka_id;				/* out: the instance */
	/* out: what recovery did */
	uint64_t	ka_rs_records;
	uint64_t	ka_rs_ops;
	uint64_t	ka_rs_bufs_replayed;
	uint64_t	ka_rs_bufs_skipped;
	uint64_t	ka_rs_bufs_cancelled;
	uint64_t	ka_rs_intents;
	uint64_t	ka_rs_head_lsn;
	uint64_t	ka_rs_tail_lsn;
	int32_t		ka_rs_stop_reason;
	uint32_t	ka_seed;			/* in: with ATTACH_VOLATILE, see there */
};
#define SX_KCTL_ATTACH_RDONLY		(1u << 0)
#define SX_KCTL_ATTACH_NORECOVERY	(1u << 1)	/* with RDONLY */
#define SX_KCTL_ATTACH_LOG_EACH		(1u << 2)	/* SX_MOUNT_LOG_EACH */
#define SX_KCTL_ATTACH_OVERLAP		(1u << 3)	/* SX_MOUNT_OVERLAP_FORCES */
/*
 * For tests: the device keeps what each write overwrote until a flush
 * covers the write, and SHUTDOWN puts it back: a power cut that loses the
 * disk's write cache (not with RDONLY).  ka_seed 0 loses every write not
 * flushed; another seed a random choice of them (writes of the same
 * blocks together).  LOGSTATS then says how many were lost.
 */
#define SX_KCTL_ATTACH_VOLATILE		(1u << 4)

/* DETACH, SHUTDOWN, SYNC, CHECKPOINT: one instance. */
struct sx_kctl_id {
	uint32_t	ki_id;		/* in */
	uint32_t	ki_flags;	/* in: 0 */
	int32_t		ki_result;	/* out: DETACH: sx_unmount()'s result (the instance is gone anyway) */
	uint32_t	ki_pad;
};

/* INFO: describe an instance (the fields of struct sx_info). */
struct sx_kctl_info {
	uint32_t	ki_id;		/* in */
	uint32_t	ki_version;
	uint32_t	ki_blocksize;
	uint32_t	ki_sectsize;
	uint64_t	ki_dblocks;
	uint64_t	ki_free_blocks;
	uint64_t	ki_logstart;
	uint64_t	ki_bmapstart;
	uint64_t	ki_datastart;
	uint32_t	ki_logblocks;
	uint32_t	ki_bmapblocks;
	uint32_t	ki_feat_compat;
	uint32_t	ki_feat_ro_compat;
	uint32_t	ki_feat_incompat;
	uint32_t	ki_feat_log_incompat;
	uint64_t	ki_log_head;
	uint64_t	ki_log_tail;
	uint64_t	ki_sb_seq;
	uint32_t	ki_log_epoch;
	uint32_t	ki_shutdown;	/* 1 after SHUTDOWN or an I/O error */
	uint8_t		ki_uuid[16];
	char		ki_label[40];
};

/*
 * ALLOC, FREE, ISFREE: the allocator in transactions (what the engine has
 * below the file API): ALLOC takes one extent of @minlen..@maxlen blocks at
 * or after @hint in a transaction of its own, FREE returns one, ISFREE reads
 * whether block @bno is free (ke_len = 1 if it is, 0 if not).
 */
struct sx_kctl_extent {
	uint32_t	ke_id;		/* in */
	uint32_t	ke_flags;	/* in: SX_KCTL_SYNC */
	uint64_t	ke_hint;	/* in (ALLOC) */
	uint32_t	ke_minlen;	/* in (ALLOC) */
	uint32_t	ke_maxlen;	/* in (ALLOC) */
	uint64_t	ke_bno;		/* out (ALLOC), in (FREE, ISFREE) */
	uint64_t	ke_len;		/* out (ALLOC, ISFREE), in (FREE) */
};
#define SX_KCTL_SYNC		(1u << 0)	/* commit durably (SX_TRANS_SYNC) */

/* SELFTEST: run the engine's scenarios on memory devices (printk'd). */
struct sx_kctl_selftest {
	uint32_t	ks_passed;	/* out */
	uint32_t	ks_failed;	/* out */
	uint32_t	ks_flags;	/* in: 0 */
	uint32_t	ks_pad;
};

/*
 * FAULT: name a fault site and make its @nth call from now fail with @error
 * (negative errno), once or with SX_KCTL_FAULT_FOREVER from then on; @nth 0
 * only counts.  An empty name forgets every site.  kf_hits: calls so far.
 */
struct sx_kctl_fault {
	char		kf_name[SX_KCTL_FAULT_NAME_MAX];
	uint64_t	kf_nth;
	int32_t		kf_error;
	uint32_t	kf_flags;
	uint64_t	kf_hits;	/* out */
};
#define SX_KCTL_FAULT_FOREVER	(1u << 0)

/* CREATE, OPEN (kf_name), CLOSE, FSYNC (kf_fd). */
struct sx_kctl_file {
	uint32_t	kf_id;		/* in */
	uint32_t	kf_mode;	/* in: CREATE's mode bits */
	int32_t		kf_fd;		/* out: CREATE, OPEN; in: CLOSE, FSYNC */
	uint32_t	kf_flags;	/* in: 0 */
	char		kf_name[SX_KCTL_NAME_MAX];
};

/* PREAD, PWRITE: kr_len bytes at kr_off through the user buffer kr_buf. */
struct sx_kctl_rw {
	uint32_t	kr_id;
	int32_t		kr_fd;
	uint64_t	kr_buf;		/* user address */
	uint64_t	kr_len;
	uint64_t	kr_off;
	int64_t		kr_result;	/* out: bytes moved */
};

/* CLONE: make kc_dst_fd share all of kc_src_fd's blocks (FICLONE). */
struct sx_kctl_clone {
	uint32_t	kc_id;
	int32_t		kc_dst_fd;
	int32_t		kc_src_fd;
	uint32_t	kc_flags;	/* 0 */
};

/* SELECT: bind this open control file to an instance and descriptor (file2). */
struct sx_kctl_select {
	uint32_t	ks_id;
	int32_t		ks_fd;
};

/* BULKSTAT: the bulkstat record of descriptor kb_fd (sx_bulkstat()), for XFS_IOC_SWAPEXT. */
struct sx_kctl_bulkstat {
	uint32_t		kb_id;		/* in */
	int32_t			kb_fd;		/* in */
	struct sx_xfs_bstat	kb_stat;	/* out */
};

/*
 * AWRITE: sx_atomic_writev() of ka_n ranges (an array of struct
 * sx_kctl_aiov at the user address ka_iov) with ka_flags SX_ATOMIC_*: all
 * of them or none after a crash, durable on return without
 * SX_ATOMIC_NOSYNC.  The bytes are copied in first: at most
 * SX_KCTL_AWRITE_MAX in all (-E2BIG beyond).
 */
struct sx_kctl_aiov {
	int32_t		ai_fd;
	uint32_t	ai_pad;
	uint64_t	ai_buf;		/* user address */
	uint64_t	ai_len;
	uint64_t	ai_off;
};
struct sx_kctl_awrite {
	uint32_t	ka_id;
	uint32_t	ka_flags;	/* SX_ATOMIC_* */
	uint32_t	ka_n;		/* 1..SX_ATOMIC_IOV_MAX */
	uint32_t	ka_pad;
	uint64_t	ka_iov;		/* user address */
};
#define SX_KCTL_AWRITE_MAX	(16u << 20)

/* LOGSTATS: what an instance's log did since it was attached (and its device lost). */
struct sx_kctl_logstats {
	uint32_t	kl_id;		/* in */
	uint32_t	kl_pad;
	uint64_t	kl_trans;	/* transactions committed */
	uint64_t	kl_forces;	/* forces that wrote records */
	uint64_t	kl_flights;	/* of them, forces that flushed while the next wrote */
	uint64_t	kl_records;
	uint64_t	kl_bytes;	/* bytes of records written */
	uint64_t	kl_waits;	/* callers that slept while another thread forced */
	uint64_t	kl_checkpoints;
	uint64_t	kl_cut_lost;	/* writes a volatile device lost at SHUTDOWN */
};

#define SX_KCTL_VERSION		SX_IOR(SX_KCTL_TYPE, 0, struct sx_kctl_version)
#define SX_KCTL_ATTACH		SX_IOWR(SX_KCTL_TYPE, 1, struct sx_kctl_attach)
#define SX_KCTL_DETACH		SX_IOWR(SX_KCTL_TYPE, 2, struct sx_kctl_id)
#define SX_KCTL_SHUTDOWN	SX_IOW(SX_KCTL_TYPE, 3, struct sx_kctl_id)
#define SX_KCTL_SYNC_FS		SX_IOW(SX_KCTL_TYPE, 4, struct sx_kctl_id)
#define SX_KCTL_CHECKPOINT	SX_IOW(SX_KCTL_TYPE, 5, struct sx_kctl_id)
#define SX_KCTL_INFO		SX_IOWR(SX_KCTL_TYPE, 6, struct sx_kctl_info)
#define SX_KCTL_ALLOC		SX_IOWR(SX_KCTL_TYPE, 7, struct sx_kctl_extent)
#define SX_KCTL_FREE		SX_IOW(SX_KCTL_TYPE, 8, struct sx_kctl_extent)
#define SX_KCTL_ISFREE		SX_IOWR(SX_KCTL_TYPE, 9, struct sx_kctl_extent)
#define SX_KCTL_SELFTEST	SX_IOWR(SX_KCTL_TYPE, 10, struct sx_kctl_selftest)
#define SX_KCTL_FAULT		SX_IOWR(SX_KCTL_TYPE, 11, struct sx_kctl_fault)
#define SX_KCTL_CREATE		SX_IOWR(SX_KCTL_TYPE, 20, struct sx_kctl_file)
#define SX_KCTL_OPEN		SX_IOWR(SX_KCTL_TYPE, 21, struct sx_kctl_file)
#define SX_KCTL_CLOSE		SX_IOW(SX_KCTL_TYPE, 22, struct sx_kctl_file)
#define SX_KCTL_FSYNC		SX_IOW(SX_KCTL_TYPE, 23, struct sx_kctl_file)
#define SX_KCTL_PREAD		SX_IOWR(SX_KCTL_TYPE, 24, struct sx_kctl_rw)
#define SX_KCTL_PWRITE		SX_IOWR(SX_KCTL_TYPE, 25, struct sx_kctl_rw)
#define SX_KCTL_CLONE		SX_IOW(SX_KCTL_TYPE, 26, struct sx_kctl_clone)
#define SX_KCTL_SELECT		SX_IOW(SX_KCTL_TYPE, 27, struct sx_kctl_select)
#define SX_KCTL_BULKSTAT	SX_IOWR(SX_KCTL_TYPE, 28, struct sx_kctl_bulkstat)
#define SX_KCTL_AWRITE		SX_IOW(SX_KCTL_TYPE, 29, struct sx_kctl_awrite)
#define SX_KCTL_LOGSTATS	SX_IOWR(SX_KCTL_TYPE, 30, struct sx_kctl_logstats)
/* FISWAPRANGE (include/swapext/fsr.h) and XFS_IOC_SWAPEXT on a SELECTed control file */

/* The layouts are the ABI: same sizes for every caller, no implicit padding. */
_Static_assert(sizeof(struct sx_kctl_version) == 16, "sx_kctl_version changed size");
_Static_assert(sizeof(struct sx_kctl_attach) == 336, "sx_kctl_attach changed size");
_Static_assert(sizeof(struct sx_kctl_id) == 16, "sx_kctl_id changed size");
_Static_assert(sizeof(struct sx_kctl_info) == 168, "sx_kctl_info changed size");
_Static_assert(sizeof(struct sx_kctl_extent) == 40, "sx_kctl_extent changed size");
_Static_assert(sizeof(struct sx_kctl_selftest) == 16, "sx_kctl_selftest changed size");
_Static_assert(sizeof(struct sx_kctl_fault) == 72, "sx_kctl_fault changed size");
_Static_assert(sizeof(struct sx_kctl_file) == 272, "sx_kctl_file changed size");
_Static_assert(sizeof(struct sx_kctl_rw) == 40, "sx_kctl_rw changed size");
_Static_assert(sizeof(struct sx_kctl_clone) == 16, "sx_kctl_clone changed size");
_Static_assert(sizeof(struct sx_kctl_select) == 8, "sx_kctl_select changed size");
_Static_assert(sizeof(struct sx_kctl_bulkstat) == 144, "sx_kctl_bulkstat changed size");
_Static_assert(sizeof(struct sx_kctl_aiov) == 32, "sx_kctl_aiov changed size");
_Static_assert(sizeof(struct sx_kctl_awrite) == 24, "sx_kctl_awrite changed size");
_Static_assert(sizeof(struct sx_kctl_logstats) == 72, "sx_kctl_logstats changed size");

#endif /* SWAPEXT_KCTL_H */
