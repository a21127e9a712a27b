// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Open files and names: the mount's descriptor table and the name
 * operations of the file API (create, open, tmpfile, close, link, unlink,
 * rename, readdir, fstat, setflags).  The data path is in file_io.c.
 *
 * Descriptors are small integers from 0, the lowest free one first.  Each
 * open slot holds a reference to its inode and counts in the inode's
 * i_opens.  A slot is reserved before an operation that creates a file, so
 * that once the file exists, opening it cannot fail.
 *
 * Every name operation is one transaction: the directory change, the link
 * count and the unlinked list move together, so after a crash a file has
 * exactly as many names as its link count says, and a file with none is on
 * the unlinked list (freed at its last close, or by recovery).  An open file
 * with no name (a tmpfile, or a file whose last name was removed) can be
 * given one again with sx_link().
 *
 * Locking: the directory's ilock serialises all name operations and is
 * taken before any file's ilock (files among themselves in inode-number
 * order, sx_ilock_two); the table lock is innermost and never held across
 * I/O.  A file that is immutable, append-only or in use as swap cannot gain
 * or lose a name (-EPERM, as Linux's may_delete and vfs_link).
 *
 * Errors are checked in this order: -EIO after a shutdown, -EBADF, the
 * names (-ENAMETOOLONG, -EISDIR for a name of the root directory itself:
 * "/", "." or "..", -EINVAL for any other bad name), -EROFS, and then what
 * the operation finds.
 */
#include "util.h"
#include "file.h"
#include "dir.h"
#include "inode.h"
#include "fork.h"
#include "trans.h"
#include "alloc.h"
#include "mount.h"
#include "dev.h"
#include "file_io.h"
#include "btree.h"
#include "bmap.h"
#include "defer.h"
#include "reflink.h"
#include "swap_host.h"
#include <swapext/swapext.h>

/* Slots of a new table; it doubles when full. */
#define SX_FD_INITIAL		16
/* The largest table (descriptors are ints). */
#define SX_FD_MAX		(1u << 20)

/* One descriptor. */
struct sx_fd_slot {
	struct sx_inode	*fs_ip;		/* referenced; NULL when free or reserved */
	bool		fs_busy;	/* open or reserved */
};

/* The mount's descriptor table. */
struct sx_files {
	struct sx_mutex	f_lock;
	struct sx_fd_slot *f_slots;
	u32		f_nslots;
	u32		f_nbusy;
};

/* The user-settable inode flags. */
#define SX_FILE_USER_FLAGS	(SX_DIFLAG_IMMUTABLE | SX_DIFLAG_APPEND | SX_DIFLAG_SWAPFILE)
/* Flags that keep a file from gaining or losing a name. */
#define SX_FILE_NAME_LOCKED	(SX_DIFLAG_IMMUTABLE | SX_DIFLAG_APPEND | SX_DIFLAG_SWAPFILE)

/*
 * Descriptor table.
 */

/* Set up the mount's empty descriptor table. */
int sx_files_init(struct sx_mount *mp)
{
	struct sx_files *ft;

	ft = sx_zalloc(sizeof(*ft), 0);
	if (!ft)
		return -ENOMEM;
	ft->f_slots = sx_zalloc(SX_FD_INITIAL * sizeof(*ft->f_slots), 0);
	if (!ft->f_slots) {
		sx_free(ft);
		return -ENOMEM;
	}
	ft->f_nslots = SX_FD_INITIAL;
	sx_mutex_init(&ft->f_lock);
	mp->m_files = ft;
	return 0;
}

/* Drop an open file's count and reference (the last close of a nameless file frees it). */
static int sx_file_release(struct sx_inode *ip)
{
	sx_ilock(ip, SX_ILOCK_EXCL);
	ASSERT(ip->i_opens > 0);
	ip->i_opens--;
	sx_iunlock(ip, SX_ILOCK_EXCL);
	return sx_irele(ip);
}

/* Close every descriptor still open and free the table (unmount). */
void sx_files_destroy(struct sx_mount *mp)
{
	struct sx_files *ft = mp->m_files;
	u32 i;

	if (!ft)
		return;
	for (i = 0; i < ft->f_nslots; i++) {
		struct sx_inode *ip = ft->f_slots[i].fs_ip;

		ASSERT(ip || !ft->f_slots[i].fs_busy);
		if (!ip)
			continue;
		ft->f_slots[i].fs_ip = NULL;
		ft->f_slots[i].fs_busy = false;
		/* an error leaves a nameless file on the unlinked list, for recovery */
		sx_file_release(ip);
	}
	sx_mutex_destroy(&ft->f_lock);
	sx_free(ft->f_slots);
	sx_free(ft);
	mp->m_files = NULL;
}

/* Double the table (table lock held). */
static int sx_fd_grow(struct sx_files *ft)
{
	struct sx_fd_slot *slots;
	u32 n = ft->f_nslots * 2;

	ASSERT(sx_mutex_is_held(&ft->f_lock));
	if (n > SX_FD_MAX)
		return -EMFILE;
	slots = sx_zalloc((size_t)n * sizeof(*slots), 0);
	if (!slots)
		return -ENOMEM;
	memcpy(slots, ft->f_slots, (size_t)ft->f_nslots * sizeof(*slots));
	sx_free(ft->f_slots);
	ft->f_slots = slots;
	ft->f_nslots = n;
	return 0;
}

/* Reserve the lowest free descriptor. */
static int sx_fd_reserve(struct sx_mount *mp, int *fdp)
{
	struct sx_files *ft = mp->m_files;
	u32 i;
	int error = 0;

	sx_mutex_lock(&ft->f_lock);
	if (ft->f_nbusy == ft->f_nslots)
		error = sx_fd_grow(ft);
	if (!error) {
		for (i = 0; i < ft->f_nslots; i++)
			if (!ft->f_slots[i].fs_busy)
				break;
		ASSERT(i < ft->f_nslots);
		ft->f_slots[i].fs_busy = true;
		ft->f_nbusy++;
		*fdp = (int)i;
	}
	sx_mutex_unlock(&ft->f_lock);
	return error;
}

/* Give back a reserved descriptor that was not used. */
static void sx_fd_unreserve(struct sx_mount *mp, int fd)
{
	struct sx_files *ft = mp->m_files;

	sx_mutex_lock(&ft->f_lock);
	ASSERT(ft->f_slots[fd].fs_busy && !ft->f_slots[fd].fs_ip);
	ft->f_slots[fd].fs_busy = false;
	ft->f_nbusy--;
	sx_mutex_unlock(&ft->f_lock);
}

/* Open @ip in the reserved slot @fd; the slot takes over the caller's reference. */
static void sx_fd_install(struct sx_mount *mp, int fd, struct sx_inode *ip)
{
	struct sx_files *ft = mp->m_files;

	sx_ilock(ip, SX_ILOCK_EXCL);
	ip->i_opens++;
	sx_iunlock(ip, SX_ILOCK_EXCL);
	sx_mutex_lock(&ft->f_lock);
	ASSERT(ft->f_slots[fd].fs_busy && !ft->f_slots[fd].fs_ip);
	ft->f_slots[fd].fs_ip = ip;
	sx_mutex_unlock(&ft->f_lock);
}

/* The inode of descriptor @fd, with a reference the caller drops with sx_irele(). */
int sx_fd_get(struct sx_mount *mp, int fd, struct sx_inode **ipp)
{
	struct sx_files *ft = mp->m_files;
	struct sx_inode *ip = NULL;

	if (!ft)
		return -EBADF;
	sx_mutex_lock(&ft->f_lock);
	if (fd >= 0 && (u32)fd < ft->f_nslots)
		ip = ft->f_slots[fd].fs_ip;
	if (ip)
		sx_ihold(ip);
	sx_mutex_unlock(&ft->f_lock);
	if (!ip)
		return -EBADF;
	*ipp = ip;
	return 0;
}

/*
 * Freeing a file that has no link and no open, for the inode layer
 * (sx_file_inode_ops): a directory's entries go with their B+tree blocks,
 * a regular file's blocks through the data path (a shared block loses one
 * reference).
 */
static u32 sx_file_fork_free_res(const struct sx_mount *mp, const struct sx_inode *ip)
{
	if ((ip->i_mode & SX_IFMT) == SX_IFDIR)
		return 4 * sx_fork_res_bytes(mp, ip) + sx_inode_res_bytes(mp);
	return sx_file_free_res(mp, ip);
}

static int sx_file_fork_free(struct sx_trans **tpp, struct sx_inode *ip)
{
	if ((ip->i_mode & SX_IFMT) == SX_IFDIR)
		return sx_fork_free_all(*tpp, ip, &sx_dir_fork_ops);
	return sx_file_free_blocks(tpp, ip, 0, ~0ull);
}

/* The reservation of freeing a fork: a file's batches as large as the log allows. */
static u32 sx_file_fork_free_batch_res(const struct sx_mount *mp, const struct sx_inode *ip)
{
	if ((ip->i_mode & SX_IFMT) == SX_IFDIR)
		return sx_file_fork_free_res(mp, ip);
	return sx_file_free_batch_res(mp, ip);
}

const struct sx_inode_ops sx_file_inode_ops = {
	.iop_free_res	= sx_file_fork_free_batch_res,
	.iop_free_fork	= sx_file_fork_free,
};

/*
 * Checks and helpers shared by the operations.
 */

/* -EIO once the mount has shut down. */
static int sx_file_alive(struct sx_mount *mp)
{
	return sx_is_shutdown(mp) ? -EIO : 0;
}

/* -EROFS on a read-only mount. */
static int sx_file_writable(struct sx_mount *mp)
{
	return (mp->m_flags & SX_MF_RDONLY) ? -EROFS : 0;
}

/* Check a name given to the API (see the order at the top of the file). */
static int sx_file_check_name(const char *name)
{
	u32 len = 0, slashes = 0;

	if (!name)
		return -EINVAL;
	while (len <= SX_NAME_MAX && name[len]) {
		if (name[len] == '/')
			slashes++;
		len++;
	}
	if (len > SX_NAME_MAX)
		return -ENAMETOOLONG;
	if ((len > 0 && slashes == len) || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EISDIR;
	return sx_dir_check_name(name);
}

/* The root directory, referenced. */
static int sx_file_root(struct sx_mount *mp, struct sx_inode **dpp)
{
	return sx_iget(mp, mp->m_rootino, 0, dpp);
}

/* Log bytes of putting an inode on or taking it off the unlinked list. */
static u32 sx_file_unlinked_res(const struct sx_mount *mp)
{
	/* the fsinfo block, the inode and its neighbour on the list */
	return sx_trans_buf_bytes(mp) + 2 * sx_inode_res_bytes(mp);
}

/* Log bytes of allocating an inode. */
static u32 sx_file_ialloc_res(const struct sx_mount *mp)
{
	/* its block (allocated, initialised whole) and the fsinfo block */
	return sx_alloc_res_bytes(mp) + 2 * sx_trans_buf_bytes(mp);
}

/*
 * The largest reservation of the store: the file operations below and the
 * data path's, with a file's and the directory's fork at the greatest height
 * their records can reach (a mapping or an entry per block), every deferred
 * chain (the refcount tree's height is the mount's m_refc_nlevels, which the
 * caller sets to the worst case), a swap's transaction.  A transaction that
 * does not fit the log's largest record fails with -EINVAL.
 */
u32 sx_file_res_largest(const struct sx_mount *mp)
{
	u64 nrecs = mp->m_sb.sb_dblocks;
	struct sx_inode file, dir;
	u32 ino = sx_inode_res_bytes(mp), res;

	memset(&file, 0, sizeof(file));
	file.i_mode = SX_IFREG;
	file.i_format = SX_DIF_BTREE;
	file.i_broot = mp->m_sb.sb_datastart;
	file.i_nrecs = nrecs;
	dir = file;
	dir.i_mode = SX_IFDIR;
	file.i_blevel = sx_btree_max_levels(mp, &sx_bmbt_ops, nrecs) - 1;
	dir.i_blevel = sx_btree_max_levels(mp, &sx_dirbt_ops, nrecs) - 1;

	res = sx_max(sx_defer_largest_res(mp), sx_swap_host_res(mp));
	/* writing, copy-on-write, freeing blocks (file_io.c, reflink.c) */
	res = sx_max(res, sx_bmap_res_bytes(mp, &file) + sx_alloc_res_bytes(mp) + ino);
	res = sx_max(res, sx_reflink_cow_res_bytes(mp, &file));
	res = sx_max(res, sx_file_fork_free_res(mp, &file));
	/*
	 * Names: create, and rename (the largest of link, unlink and rename).
	 * The root is the only directory and is never freed.
	 */
	res = sx_max(res, sx_file_ialloc_res(mp) + sx_dir_res_bytes(mp, &dir) + ino);
	res = sx_max(res, 3 * sx_dir_res_bytes(mp, &dir) + 2 * ino + sx_file_unlinked_res(mp));
	return res;
}

/* Look @name up; the inode is referenced; -EISDIR for a directory. */
static int sx_file_lookup(struct sx_trans *tp, struct sx_inode *dp, const char *name,
			  struct sx_inode **ipp)
{
	struct sx_inode *ip;
	u64 ino;
	int error;

	error = sx_dir_lookup(tp, dp, name, &ino);
	if (error)
		return error;
	error = sx_iget(dp->i_mp, ino, 0, &ip);
	if (error == -ENOENT)
		error = -EFSCORRUPTED;	/* a name of a free inode */
	if (error)
		return error;
	if ((ip->i_mode & SX_IFMT) != SX_IFREG) {
		/* the answer first: the reference is all that keeps @ip */
		error = (ip->i_mode & SX_IFMT) == SX_IFDIR ? -EISDIR : -EFSCORRUPTED;
		sx_irele(ip);
		return error;
	}
	/*
	 * A name of an inode without links: damage (names and links change
	 * together, under the directory's lock).  Released as it is, the
	 * inode would be freed under its name.
	 */
	if (SX_IS_CORRUPT(dp->i_mp, ip->i_nlink == 0)) {
		sx_inode_mark_damaged(ip);
		sx_irele(ip);
		return -EFSCORRUPTED;
	}
	*ipp = ip;
	return 0;
}

/* @ip loses one name in @tp; the last one puts it on the unlinked list. */
static int sx_file_droplink(struct sx_trans *tp, struct sx_inode *ip, s64 now)
{
	struct sx_buf *bp;
	int error;

	if (SX_IS_CORRUPT(ip->i_mp, ip->i_nlink == 0))
		return -EFSCORRUPTED;
	/*
	 * The inode's block joins before the core changes, so that a cancel
	 * after any failure below puts the core back with the block.
	 */
	error = sx_inode_get_buf(tp->t_mp, tp, ip, &bp);
	if (error)
		return error;
	ip->i_nlink--;
	ip->i_ctime = now;
	if (ip->i_nlink == 0) {
		error = sx_iunlink(tp, ip);
		if (error)
			return error;
	}
	return sx_inode_log(tp, ip);
}

/*
 * The operations.
 */

/* Create a regular file @name and open it (O_CREAT | O_EXCL). */
SX_API int sx_create(struct sx_mount *mp, const char *name, u32 mode, int *fdp)
{
	struct sx_inode *dp, *ip;
	struct sx_trans *tp;
	u64 ino;
	int fd, error;

	error = sx_file_alive(mp);
	if (!error)
		error = sx_file_check_name(name);
	if (!error && ((mode & ~(SX_IFMT | 07777u)) ||
		       ((mode & SX_IFMT) && (mode & SX_IFMT) != SX_IFREG)))
		error = -EINVAL;
	if (!error)
		error = sx_file_writable(mp);
	if (error)
		return error;
	error = sx_fd_reserve(mp, &fd);
	if (error)
		return error;
	error = sx_file_root(mp, &dp);
	if (error)
		goto out_unreserve;
	sx_ilock(dp, SX_ILOCK_EXCL);
	error = sx_trans_alloc(mp, sx_file_ialloc_res(mp) + sx_dir_res_bytes(mp, dp) +
			       sx_inode_res_bytes(mp), 0, &tp);
	if (error)
		goto out_unlock;
	error = sx_dir_lookup(tp, dp, name, &ino);
	if (!error)
		error = -EEXIST;
	if (error != -ENOENT)
		goto out_cancel;
	error = sx_inode_alloc(tp, (u16)(SX_IFREG | (mode & 07777u)), 1, &ip);
	if (error)
		goto out_cancel;
	error = sx_dir_add(tp, dp, name, ip->i_ino);
	if (error)
		goto out_cancel_inode;
	error = sx_trans_commit(tp);
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
	if (error) {
		sx_irele(ip);
		goto out_unreserve;
	}
	sx_fd_install(mp, fd, ip);
	*fdp = fd;
	return 0;

out_cancel_inode:
	sx_trans_cancel(tp);
	sx_irele(ip);
	goto out_unlock;
out_cancel:
	sx_trans_cancel(tp);
out_unlock:
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
out_unreserve:
	sx_fd_unreserve(mp, fd);
	return error;
}

/* Open the file @name. */
SX_API int sx_open(struct sx_mount *mp, const char *name, int *fdp)
{
	struct sx_inode *dp, *ip;
	int fd, error;

	error = sx_file_alive(mp);
	if (!error)
		error = sx_file_check_name(name);
	if (error)
		return error;
	error = sx_fd_reserve(mp, &fd);
	if (error)
		return error;
	error = sx_file_root(mp, &dp);
	if (error)
		goto out_unreserve;
	sx_ilock(dp, SX_ILOCK_EXCL);
	error = sx_file_lookup(NULL, dp, name, &ip);
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
	if (error)
		goto out_unreserve;
	sx_fd_install(mp, fd, ip);
	*fdp = fd;
	return 0;

out_unreserve:
	sx_fd_unreserve(mp, fd);
	return error;
}

/* Create and open a file with no name, on the unlinked list until it gets one. */
SX_API int sx_open_tmpfile(struct sx_mount *mp, u32 mode, int *fdp)
{
	struct sx_inode *ip;
	struct sx_trans *tp;
	int fd, error;

	error = sx_file_alive(mp);
	if (!error && ((mode & ~(SX_IFMT | 07777u)) ||
		       ((mode & SX_IFMT) && (mode & SX_IFMT) != SX_IFREG)))
		error = -EINVAL;
	if (!error)
		error = sx_file_writable(mp);
	if (error)
		return error;
	error = sx_fd_reserve(mp, &fd);
	if (error)
		return error;
	error = sx_trans_alloc(mp, sx_file_ialloc_res(mp) + sx_file_unlinked_res(mp), 0, &tp);
	if (error)
		goto out_unreserve;
	error = sx_inode_alloc(tp, (u16)(SX_IFREG | (mode & 07777u)), 0, &ip);
	if (error)
		goto out_cancel;
	error = sx_trans_commit(tp);
	if (error) {
		sx_irele(ip);
		goto out_unreserve;
	}
	sx_fd_install(mp, fd, ip);
	*fdp = fd;
	return 0;

out_cancel:
	sx_trans_cancel(tp);
out_unreserve:
	sx_fd_unreserve(mp, fd);
	return error;
}

/* Close @fd; the last close of a file with no name frees it. */
SX_API int sx_close(struct sx_mount *mp, int fd)
{
	struct sx_files *ft = mp->m_files;
	struct sx_inode *ip = NULL;

	if (!ft)
		return -EBADF;
	sx_mutex_lock(&ft->f_lock);
	if (fd >= 0 && (u32)fd < ft->f_nslots && ft->f_slots[fd].fs_ip) {
		ip = ft->f_slots[fd].fs_ip;
		ft->f_slots[fd].fs_ip = NULL;
		ft->f_slots[fd].fs_busy = false;
		ft->f_nbusy--;
	}
	sx_mutex_unlock(&ft->f_lock);
	if (!ip)
		return -EBADF;
	return sx_file_release(ip);
}

/* Give the open file @fd the name @name (a second name, or a tmpfile's first). */
SX_API int sx_link(struct sx_mount *mp, int fd, const char *name)
{
	struct sx_inode *dp, *ip;
	struct sx_trans *tp;
	u64 ino;
	int error;

	error = sx_file_alive(mp);
	if (error)
		return error;
	error = sx_fd_get(mp, fd, &ip);
	if (error)
		return error;
	error = sx_file_check_name(name);
	if (!error)
		error = sx_file_writable(mp);
	if (error)
		goto out_rele;
	error = sx_file_root(mp, &dp);
	if (error)
		goto out_rele;
	sx_ilock(dp, SX_ILOCK_EXCL);
	error = sx_trans_alloc(mp, sx_dir_res_bytes(mp, dp) + sx_inode_res_bytes(mp) +
			       sx_file_unlinked_res(mp), 0, &tp);
	if (error)
		goto out_unlock_dir;
	sx_ilock(ip, SX_ILOCK_EXCL);
	if (ip->i_flags & SX_FILE_NAME_LOCKED) {
		error = -EPERM;
		goto out_cancel;
	}
	if (ip->i_nlink == ~0u) {
		error = -EMLINK;
		goto out_cancel;
	}
	error = sx_dir_lookup(tp, dp, name, &ino);
	if (!error)
		error = -EEXIST;
	if (error != -ENOENT)
		goto out_cancel;
	if (ip->i_nlink == 0) {
		error = sx_iunlink_remove(tp, ip);
		if (error)
			goto out_cancel;
	}
	ip->i_nlink++;
	ip->i_ctime = (s64)sx_wall_ns();
	error = sx_inode_log(tp, ip);
	if (!error)
		error = sx_dir_add(tp, dp, name, ip->i_ino);
	if (error)
		goto out_cancel;
	error = sx_trans_commit(tp);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	goto out_unlock_dir;

out_cancel:
	sx_trans_cancel(tp);
	sx_iunlock(ip, SX_ILOCK_EXCL);
out_unlock_dir:
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
out_rele:
	sx_irele(ip);
	return error;
}

/* Remove the name @name; a file left with no name is freed at its last close. */
SX_API int sx_unlink(struct sx_mount *mp, const char *name)
{
	struct sx_inode *dp, *ip;
	struct sx_trans *tp;
	u64 ino;
	int error;

	error = sx_file_alive(mp);
	if (!error)
		error = sx_file_check_name(name);
	if (!error)
		error = sx_file_writable(mp);
	if (error)
		return error;
	error = sx_file_root(mp, &dp);
	if (error)
		return error;
	sx_ilock(dp, SX_ILOCK_EXCL);
	error = sx_trans_alloc(mp, sx_dir_res_bytes(mp, dp) + sx_inode_res_bytes(mp) +
			       sx_file_unlinked_res(mp), 0, &tp);
	if (error)
		goto out_unlock_dir;
	error = sx_file_lookup(tp, dp, name, &ip);
	if (error)
		goto out_cancel_dir;
	sx_ilock(ip, SX_ILOCK_EXCL);
	if (ip->i_flags & SX_FILE_NAME_LOCKED) {
		error = -EPERM;
		goto out_cancel;
	}
	error = sx_dir_remove(tp, dp, name, &ino);
	if (!error && SX_IS_CORRUPT(mp, ino != ip->i_ino))
		error = -EFSCORRUPTED;
	if (!error)
		error = sx_file_droplink(tp, ip, dp->i_mtime);
	if (error)
		goto out_cancel;
	error = sx_trans_commit(tp);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
	/* with no name and no opener left this frees the file */
	if (!error)
		return sx_irele(ip);
	sx_irele(ip);
	return error;

out_cancel:
	/* under the ilock: the cancel puts the in-core inode back from its block */
	sx_trans_cancel(tp);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	sx_irele(ip);
	goto out_unlock_dir;
out_cancel_dir:
	sx_trans_cancel(tp);
out_unlock_dir:
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
	return error;
}

/*
 * The body of a rename in @tp, directory locked: @src is named @from; @tgt,
 * if not NULL, is named @to and loses that name.  The one step that may
 * need a block (adding @to when it does not exist) goes first, so that
 * -ENOSPC leaves nothing else to undo.
 */
static int sx_rename_names(struct sx_trans *tp, struct sx_inode *dp, const char *from,
			   const char *to, struct sx_inode *src, struct sx_inode *tgt)
{
	struct sx_mount *mp = dp->i_mp;
	u64 ino;
	int error;

	if ((src->i_flags & SX_FILE_NAME_LOCKED) || (tgt && (tgt->i_flags & SX_FILE_NAME_LOCKED)))
		return -EPERM;
	if (tgt) {
		error = sx_dir_replace(tp, dp, to, src->i_ino, &ino);
		if (!error && SX_IS_CORRUPT(mp, ino != tgt->i_ino))
			error = -EFSCORRUPTED;
	} else {
		error = sx_dir_add(tp, dp, to, src->i_ino);
	}
	if (error)
		return error;
	error = sx_dir_remove(tp, dp, from, &ino);
	if (error)
		return error;
	if (SX_IS_CORRUPT(mp, ino != src->i_ino))
		return -EFSCORRUPTED;
	if (tgt) {
		error = sx_file_droplink(tp, tgt, dp->i_mtime);
		if (error)
			return error;
	}
	src->i_ctime = dp->i_mtime;
	return sx_inode_log(tp, src);
}

/* Rename @from to @to in one transaction, replacing @to if it exists. */
SX_API int sx_rename(struct sx_mount *mp, const char *from, const char *to)
{
	struct sx_inode *dp, *src = NULL, *tgt = NULL;
	struct sx_trans *tp;
	int error;

	error = sx_file_alive(mp);
	if (!error)
		error = sx_file_check_name(from);
	if (!error)
		error = sx_file_check_name(to);
	if (!error)
		error = sx_file_writable(mp);
	if (error)
		return error;
	error = sx_file_root(mp, &dp);
	if (error)
		return error;
	sx_ilock(dp, SX_ILOCK_EXCL);
	error = sx_trans_alloc(mp, 3 * sx_dir_res_bytes(mp, dp) + 2 * sx_inode_res_bytes(mp) +
			       sx_file_unlinked_res(mp), 0, &tp);
	if (error)
		goto out_unlock_dir;
	error = sx_file_lookup(tp, dp, from, &src);
	if (error)
		goto out_cancel;
	error = sx_file_lookup(tp, dp, to, &tgt);
	if (error == -ENOENT) {
		tgt = NULL;
		error = 0;
	}
	if (error)
		goto out_cancel;
	if (tgt == src) {
		/* two names of one file (or one name twice): nothing to do */
		sx_irele(tgt);
		tgt = NULL;
		goto out_cancel;
	}
	if (tgt)
		sx_ilock_two(src, tgt, SX_ILOCK_EXCL);
	else
		sx_ilock(src, SX_ILOCK_EXCL);
	error = sx_rename_names(tp, dp, from, to, src, tgt);
	if (error)
		sx_trans_cancel(tp);
	else
		error = sx_trans_commit(tp);
	if (tgt)
		sx_iunlock_two(src, tgt, SX_ILOCK_EXCL);
	else
		sx_iunlock(src, SX_ILOCK_EXCL);
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
	sx_irele(src);
	/* a replaced file with no name and no opener is freed here */
	if (tgt) {
		int error2 = sx_irele(tgt);

		if (!error)
			error = error2;
	}
	return error;

out_cancel:
	sx_trans_cancel(tp);
	if (src)
		sx_irele(src);
out_unlock_dir:
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
	return error;
}

/* Names of one piece of a readdir walk. */
struct sx_readdir_ent {
	u64	re_ino;
	char	re_name[SX_NAME_MAX + 1];
};

/* Readdir entries gathered per directory lock hold (more for a group of equal hashes). */
#define SX_READDIR_BATCH	64

/* One piece of a readdir walk. */
struct sx_readdir_batch {
	struct sx_readdir_ent *rb_ents;
	u32	rb_n;
	u32	rb_max;
	u64	rb_last_hash;	/* hash of the last entry taken */
	u64	rb_next;	/* where the next piece starts */
	bool	rb_more;	/* the walk stopped before the end */
};

/* sx_dir_iterate callback: gather entries, stopping between two hashes when full. */
static int sx_readdir_gather(void *arg, const char *name, u32 len, u64 hash, u64 ino)
{
	struct sx_readdir_batch *rb = arg;

	if (rb->rb_n > 0 && hash != rb->rb_last_hash && rb->rb_n >= SX_READDIR_BATCH) {
		rb->rb_next = hash;
		rb->rb_more = true;
		return 1;
	}
	if (rb->rb_n == rb->rb_max) {
		/* a long run of equal hashes must come out in one piece */
		struct sx_readdir_ent *ents;
		u32 n = rb->rb_max * 2;

		ents = sx_alloc((size_t)n * sizeof(*ents), 0);
		if (!ents)
			return -ENOMEM;
		memcpy(ents, rb->rb_ents, (size_t)rb->rb_n * sizeof(*ents));
		sx_free(rb->rb_ents);
		rb->rb_ents = ents;
		rb->rb_max = n;
	}
	rb->rb_ents[rb->rb_n].re_ino = ino;
	memcpy(rb->rb_ents[rb->rb_n].re_name, name, len + 1);
	rb->rb_n++;
	rb->rb_last_hash = hash;
	return 0;
}

/*
 * Call @fn for each name, in hash order.  The directory is read in pieces
 * that end between two hashes, and @fn runs with no lock held (it may use
 * the API): a name present during the whole walk comes exactly once, one
 * added or removed meanwhile at most once.
 */
SX_API int sx_readdir(struct sx_mount *mp, int (*fn)(void *arg, const char *name, u64 ino),
		      void *arg)
{
	struct sx_readdir_batch rb = { 0 };
	struct sx_inode *dp;
	u32 i;
	int error;

	error = sx_file_alive(mp);
	if (error)
		return error;
	rb.rb_max = SX_READDIR_BATCH;
	rb.rb_ents = sx_alloc(rb.rb_max * sizeof(*rb.rb_ents), 0);
	if (!rb.rb_ents)
		return -ENOMEM;
	error = sx_file_root(mp, &dp);
	if (error)
		goto out_free;
	for (;;) {
		rb.rb_n = 0;
		rb.rb_more = false;
		sx_ilock(dp, SX_ILOCK_EXCL);
		error = sx_dir_iterate(dp, rb.rb_next, sx_readdir_gather, &rb);
		sx_iunlock(dp, SX_ILOCK_EXCL);
		if (error < 0)
			break;
		error = 0;
		for (i = 0; i < rb.rb_n && !error; i++)
			error = fn(arg, rb.rb_ents[i].re_name, rb.rb_ents[i].re_ino);
		if (error || !rb.rb_more)
			break;
		if (sx_is_shutdown(mp)) {
			error = -EIO;
			break;
		}
	}
	sx_irele(dp);
out_free:
	sx_free(rb.rb_ents);
	return error;
}

/* Describe the open file @fd. */
SX_API int sx_fstat(struct sx_mount *mp, int fd, struct sx_stat *st)
{
	struct sx_inode *ip;
	int error;

	error = sx_file_alive(mp);
	if (error)
		return error;
	error = sx_fd_get(mp, fd, &ip);
	if (error)
		return error;
	memset(st, 0, sizeof(*st));
	sx_ilock(ip, SX_ILOCK_EXCL);
	st->st_ino = ip->i_ino;
	st->st_gen = ip->i_gen;
	st->st_size = ip->i_size;
	st->st_blocks = ip->i_nblocks;
	st->st_blksize = mp->m_bsize;
	st->st_mode = ip->i_mode;
	st->st_nlink = ip->i_nlink;
	st->st_uid = ip->i_uid;
	st->st_gid = ip->i_gid;
	st->st_flags = ip->i_flags;
	st->st_atime_ns = ip->i_atime;
	st->st_mtime_ns = ip->i_mtime;
	st->st_ctime_ns = ip->i_ctime;
	sx_iunlock(ip, SX_ILOCK_EXCL);
	sx_irele(ip);
	return 0;
}

/*
 * Set the user flags of @fd (IMMUTABLE, APPEND, SWAPFILE).  REFLINK belongs
 * to the engine: it stays as it is whether @flags carries it or not, and
 * asking for it on a file that does not have it is -EINVAL.  The flags
 * change under both locks, the iolock exclusive: the data path, clone and
 * swap read them holding the iolock only.
 */
SX_API int sx_setflags(struct sx_mount *mp, int fd, u32 flags)
{
	struct sx_inode *ip;
	struct sx_trans *tp;
	int error;

	error = sx_file_alive(mp);
	if (error)
		return error;
	error = sx_fd_get(mp, fd, &ip);
	if (error)
		return error;
	if (flags & ~SX_DIFLAG_ALL)
		error = -EINVAL;
	if (!error)
		error = sx_file_writable(mp);
	if (error)
		goto out_rele;
	sx_ilock(ip, SX_IOLOCK_EXCL);
	error = sx_trans_alloc(mp, sx_inode_res_bytes(mp), 0, &tp);
	if (error)
		goto out_iounlock;
	sx_ilock(ip, SX_ILOCK_EXCL);
	if (flags & ~SX_FILE_USER_FLAGS & ~ip->i_flags) {
		error = -EINVAL;
		sx_trans_cancel(tp);
		goto out_unlock;
	}
	ip->i_flags = (ip->i_flags & ~SX_FILE_USER_FLAGS) | (flags & SX_FILE_USER_FLAGS);
	ip->i_ctime = (s64)sx_wall_ns();
	error = sx_inode_log(tp, ip);
	if (error)
		sx_trans_cancel(tp);
	else
		error = sx_trans_commit(tp);
out_unlock:
	sx_iunlock(ip, SX_ILOCK_EXCL);
out_iounlock:
	sx_iunlock(ip, SX_IOLOCK_EXCL);
out_rele:
	sx_irele(ip);
	return error;
}
