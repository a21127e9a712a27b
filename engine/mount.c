// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Mount and unmount, and what a mount reports: the top of the store, which
 * sets everything up and calls down into it.  Nothing below calls up here;
 * device I/O and shutdown, which every layer uses, are in dev.c.
 */
#include "util.h"
#include "mount.h"
#include "buf.h"
#include "log.h"
#include "alloc.h"
#include "file.h"
#include "inode.h"
#include "fsinfo.h"
#include "defer.h"
#include "item_efi.h"
#include "reflink.h"
#include "refcount.h"
#include "swap_host.h"
#include "dev.h"
#include "log_recover.h"

/* Free a mount and everything it set up. */
static void sx_mount_free(struct sx_mount *mp)
{
	/* a mount that failed after replay still holds the intents it found */
	sx_log_recover_cancel(mp);
	sx_files_destroy(mp);
	sx_icache_destroy(mp);
	sx_alloc_destroy(mp);
	sx_refcount_unshared_destroy(mp);
	sx_log_destroy(mp);
	sx_bcache_destroy(mp);
	sx_mutex_destroy(&mp->m_sb_lock);
	sx_mutex_destroy(&mp->m_shutdown_lock);
	sx_free(mp);
}

/*
 * The bitmap is the only record of free space, so a bitmap block that lost
 * a write (the disk kept its older version, checksum and all) would have
 * the allocator hand out blocks that live structures own.  Cross-check it
 * before anything is allocated:
 *  - when the log was found empty, the bitmap must show the free count the
 *    last clean unmount (or mkfs) recorded in the superblock;
 *  - the blocks fsinfo names (itself, the root directory, the refcount
 *    tree's root, the head of the unlinked list) must be in use;
 *  - every inode fsinfo counts takes a block, and so does fsinfo.
 * A NORECOVERY mount of a log that needs recovery sees an older state
 * that need not add up; it is read-only, so only the first check applies.
 */
static int sx_mount_check_space(struct sx_mount *mp, bool log_empty, bool replayed)
{
	u64 nfree = sx_alloc_free_blocks(mp), clean = mp->m_sb.sb_clean_free;
	u64 data = mp->m_sb.sb_dblocks - mp->m_sb.sb_datastart, icount, need;
	const struct sx_dfsinfo *fi;
	struct sx_buf *bp;
	struct {
		const char	*what;
		u64		bno;
	} owned[4];
	bool isfree;
	u32 i;
	int error;

	if (log_empty && clean && nfree != clean - 1) {
		sx_err(mp, "the bitmap shows %llu free blocks, but %llu were free when the log was last left empty: a bitmap block is stale (a lost write?)",
		       (unsigned long long)nfree, (unsigned long long)(clean - 1));
		return -EFSCORRUPTED;
	}
	if (!log_empty && !replayed)
		return 0;

	error = sx_buf_read(mp, mp->m_sb.sb_fsinfo, &sx_fsinfo_buf_ops, 0, &bp);
	if (error)
		return error;
	fi = bp->b_data;
	icount = le64_to_cpu(fi->fi_icount);
	owned[0].what = "the fsinfo block";
	owned[0].bno = mp->m_sb.sb_fsinfo;
	owned[1].what = "the root directory's inode";
	owned[1].bno = le64_to_cpu(fi->fi_rootino);
	owned[2].what = "the refcount tree's root";
	owned[2].bno = le64_to_cpu(fi->fi_refc_root);
	owned[3].what = "the first inode of the unlinked list";
	owned[3].bno = le64_to_cpu(fi->fi_unlinked);
	sx_buf_relse(bp);

	for (i = 0; i < ARRAY_SIZE(owned); i++) {
		if (!owned[i].bno)
			continue;
		error = sx_alloc_is_free(mp, owned[i].bno, &isfree);
		if (error)
			return error;
		if (isfree) {
			sx_err(mp, "%s (block %llu) is free in the bitmap: a bitmap block is stale (a lost write?)",
			       owned[i].what, (unsigned long long)owned[i].bno);
			return -EFSCORRUPTED;
		}
	}
	need = icount + 1 + (owned[2].bno ? 1 : 0);
	if (data - nfree < need) {
		sx_err(mp, "the bitmap shows %llu blocks in use, fewer than the %llu that fsinfo's %llu inodes and its own blocks take: a bitmap block is stale (a lost write?)",
		       (unsigned long long)(data - nfree), (unsigned long long)need,
		       (unsigned long long)icount);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* Open the filesystem on @bd. */
SX_API int sx_mount(struct sx_bdev *bd, const struct sx_mount_opts *opts,
		    struct sx_mount **mpp)
{
	static const struct sx_mount_opts defaults;
	struct sx_mount *mp;
	bool rdonly, dirty = false, log_empty = false;
	int error;

	if (!opts)
		opts = &defaults;
	error = sx_init();
	if (error)
		return error;
	if ((opts->mo_flags & SX_MOUNT_NORECOVERY) && !(opts->mo_flags & SX_MOUNT_RDONLY))
		return -EINVAL;
	rdonly = opts->mo_flags & SX_MOUNT_RDONLY;
	mp = sx_zalloc(sizeof(*mp), 0);
	if (!mp)
		return -ENOMEM;
	mp->m_bdev = bd;
	sx_mutex_init(&mp->m_sb_lock);
	sx_mutex_init(&mp->m_shutdown_lock);
	sx_list_init(&mp->m_rintents);
	sx_list_init(&mp->m_dcaptured);
	snprintf(mp->m_name, sizeof(mp->m_name), "%s", opts->mo_name ? opts->mo_name : "sx");
	if (rdonly)
		mp->m_flags |= SX_MF_RDONLY;
	if (opts->mo_flags & SX_MOUNT_LOG_EACH)
		mp->m_flags |= SX_MF_LOG_EACH;
	if (opts->mo_flags & SX_MOUNT_OVERLAP_FORCES)
		mp->m_flags |= SX_MF_OVERLAP;

	error = sx_sb_read(mp, bd, &mp->m_sb, NULL);
	if (error)
		goto out_free;
	error = sx_sb_check_features(mp, &mp->m_sb, rdonly);
	if (error)
		goto out_free;
	mp->m_bsize = mp->m_sb.sb_blocksize;
	mp->m_blog = mp->m_sb.sb_blocklog;
	sx_swap_host_init(mp);
	/*
	 * sx_sb_read() takes no copy that describes more blocks than the
	 * device holds (sb_read_copy() refuses it, saying so): a truncated
	 * image fails there, before anything past its end can be read.
	 */
	ASSERT(mp->m_sb.sb_dblocks <= bd->bd_size >> mp->m_blog);
	if (mp->m_bsize < bd->bd_sectsize) {
		error = -EINVAL;
		goto out_free;
	}
	error = sx_bcache_init(mp, opts->mo_bcache_max);
	if (error)
		goto out_free;
	error = sx_refcount_unshared_init(mp);
	if (error)
		goto out_free;

	mp->m_flags |= SX_MF_RECOVERY;
	if (opts->mo_flags & SX_MOUNT_NORECOVERY) {
		struct sx_log_scan scan;

		error = sx_log_scan(mp, NULL, NULL, &scan);
		if (!error)
			error = sx_log_init(mp, scan.sc_head, scan.sc_head_prev_crc,
					    scan.sc_max_tid + 1);
		log_empty = !error && scan.sc_records == 0;
	} else {
		error = sx_log_recover_replay(mp, &dirty);
		log_empty = mp->m_rstats.rs_records == 0;
	}
	if (error)
		goto out_free;
	error = sx_alloc_init(mp);
	if (error)
		goto out_free;
	error = sx_fsinfo_mount(mp);
	if (error)
		goto out_free;
	error = sx_mount_check_space(mp, log_empty, !(opts->mo_flags & SX_MOUNT_NORECOVERY));
	if (error)
		goto out_free;
	error = sx_icache_init(mp, &sx_file_inode_ops);
	if (error)
		goto out_free;
	error = sx_files_init(mp);
	if (error)
		goto out_free;
	if (!rdonly) {
		/* pass 3: unfinished intents, then the files left with no name */
		error = sx_log_recover_intents(mp);
		if (!error)
			error = sx_recover_unlinked(mp);
		if (!error && (dirty || mp->m_rstats.rs_unlinked))
			error = sx_log_checkpoint(mp);
		if (error)
			goto out_free;
	}
	mp->m_flags &= ~SX_MF_RECOVERY;
	*mpp = mp;
	return 0;

out_free:
	sx_mount_free(mp);
	return error;
}

/* Checkpoint and close. */
SX_API int sx_unmount(struct sx_mount *mp)
{
	int error = 0;

	if (!mp)
		return 0;
	/* last closes first: they free files with no name */
	sx_files_destroy(mp);
	if (!(mp->m_flags & SX_MF_RDONLY) && !sx_is_shutdown(mp)) {
		/* nothing changes the bitmap any more: its count is final */
		mp->m_clean_free = sx_alloc_free_blocks(mp) + 1;
		error = sx_log_checkpoint(mp);
	}
	if (sx_is_shutdown(mp)) {
		if (!error)
			error = mp->m_shutdown_error;
		sx_err(mp, "unmount of a shut-down filesystem (error %d): %s",
		       mp->m_shutdown_error, mp->m_shutdown_reason);
	}
	sx_mount_free(mp);
	return error;
}

/* Describe a mounted filesystem. */
SX_API int sx_get_info(struct sx_mount *mp, struct sx_info *in)
{
	const struct sx_sb *sb = &mp->m_sb;

	memset(in, 0, sizeof(*in));
	sx_mutex_lock(&mp->m_sb_lock);
	in->in_version = sb->sb_version;
	in->in_blocksize = sb->sb_blocksize;
	in->in_sectsize = sb->sb_sectsize;
	in->in_dblocks = sb->sb_dblocks;
	in->in_logstart = sb->sb_logstart;
	in->in_logblocks = sb->sb_logblocks;
	in->in_bmapstart = sb->sb_bmapstart;
	in->in_bmapblocks = sb->sb_bmapblocks;
	in->in_datastart = sb->sb_datastart;
	in->in_feat_compat = sb->sb_feat_compat;
	in->in_feat_ro_compat = sb->sb_feat_ro_compat;
	in->in_feat_incompat = sb->sb_feat_incompat;
	in->in_feat_log_incompat = sb->sb_feat_log_incompat;
	in->in_log_epoch = sb->sb_log_epoch;
	in->in_sb_seq = sb->sb_seq;
	memcpy(in->in_uuid, sb->sb_uuid, sizeof(in->in_uuid));
	memcpy(in->in_label, sb->sb_label, sizeof(in->in_label));
	sx_mutex_unlock(&mp->m_sb_lock);
	in->in_free_blocks = sx_alloc_free_blocks(mp);
	in->in_log_head = sx_log_head(mp);
	in->in_log_tail = sx_log_tail(mp);
	return 0;
}

/* What recovery did at mount. */
SX_API void sx_get_recovery_stats(struct sx_mount *mp, struct sx_recovery_stats *rs)
{
	*rs = mp->m_rstats;
}

/* A message for a negative errno, including the filesystem-specific ones. */
SX_API const char *sx_strerror(int error)
{
	switch (-error) {
	case 0:			return "Success";
	case EFSCORRUPTED:	return "Structure needs cleaning (metadata corrupted)";
	case EFSBADCRC:		return "Bad message (checksum mismatch)";
	case EIO:		return "Input/output error";
	case ENOMEM:		return "Cannot allocate memory";
	case ENOSPC:		return "No space left on device";
	case EINVAL:		return "Invalid argument";
	case EOPNOTSUPP:	return "Operation not supported";
	case EROFS:		return "Read-only file system";
	case EEXIST:		return "File exists";
	case ENOENT:		return "No such file or directory";
	case EBUSY:		return "Device or resource busy";
	case EFBIG:		return "File too large";
	case EPERM:		return "Operation not permitted";
	case EBADF:		return "Bad file descriptor";
	case ENAMETOOLONG:	return "File name too long";
	case EISDIR:		return "Is a directory";
	case EMFILE:		return "Too many open files";
	case EMLINK:		return "Too many links";
	default:		return "Unknown error";
	}
}
