/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inodes: allocation and freeing, the in-core inode cache (RCU lookup),
 * locking, logging, and the unlinked list of files with no name.
 *
 * An inode is one metadata block; its number is the block number.  The
 * in-core inode caches the core fields; sx_inode_log() writes them into the
 * inode block in a transaction.  The fork area is read and changed in the
 * inode block itself by fork.c (through sx_inode_get_buf()).
 */
#ifndef SX_INODE_H
#define SX_INODE_H

#include "util.h"
#include <swapext/host.h>

struct sx_trans;
struct sx_buf;
struct sx_sb;
struct sx_shost_cur;

/* Lock modes of sx_ilock(). */
enum {
	SX_IOLOCK_SHARED	= (1u << 0),	/* I/O: readers */
	SX_IOLOCK_EXCL		= (1u << 1),	/* I/O: writers, truncate, swap */
	SX_ILOCK_EXCL		= (1u << 2),	/* metadata (core and fork) */
};

struct sx_inode {
	struct sx_mount	*i_mp;
	u64		i_ino;
	/* cache linkage (under the cache lock; lookups under RCU) */
	struct sx_list	i_hash;
	struct sx_rcu_head i_rcu;
	struct sx_atomic i_count;
	u32		i_iflags;		/* SX_IF_* (under the cache lock) */
	/* locks */
	struct sx_rwsem	i_iolock;
	struct sx_mutex	i_ilock;
	/* core, as on disk (under i_ilock) */
	u16		i_mode;
	u16		i_format;		/* SX_DIF_* */
	u32		i_nlink;
	u32		i_uid;
	u32		i_gid;
	u64		i_size;
	u64		i_nblocks;
	u64		i_gen;
	u32		i_flags;		/* SX_DIFLAG_* */
	s64		i_atime;
	s64		i_mtime;
	s64		i_ctime;
	u64		i_next_unlinked;
	u64		i_nrecs;
	u64		i_broot;
	u32		i_blevel;
	u32		i_opens;		/* open descriptors (file.c) */
	bool		i_unlinked;		/* on the on-disk unlinked list */
	/* the swap core's view (swap_host.c) */
	struct sx_hinode i_hinode;		/* hi_host: the mount's m_host */
	struct sx_inode	*i_swap_peer;		/* set by the swap holding the iolock */
	bool		i_swap_ilocked;		/* that swap holds the ilock too */
	struct sx_shost_cur *i_swap_cur;	/* its direct steps' fork cursor (swap_host.c) */
	/* commit sequence of the last transaction that changed it (trans.c) */
	struct sx_atomic64 i_commit_seq;
};

/*
 * i_iflags.  Whether an inode is on the unlinked list is i_unlinked, under
 * the ilock: a word that two locks change would lose updates.
 */
enum {
	SX_IF_FREEING	= (1u << 0),	/* being torn down: lookups skip it */
	/*
	 * Found by a name with no links on disk: damage.  Never freed when
	 * the last reference goes, which would free a named file (and for
	 * the root directory, every file).  Set under the cache lock, as
	 * SX_IF_FREEING.
	 */
	SX_IF_DAMAGED	= (1u << 1),
};

/*
 * What freeing an inode needs of the layers above it (the data path, the
 * directory), passed in by the mount so that the inode layer calls nothing
 * above it.
 */
struct sx_inode_ops {
	/* log bytes of the first transaction of freeing @ip's fork */
	u32	(*iop_free_res)(const struct sx_mount *mp, const struct sx_inode *ip);
	/*
	 * Free every block of @ip's fork in *@tpp (of iop_free_res() bytes;
	 * the ilock held), rolling it as needed.
	 */
	int	(*iop_free_fork)(struct sx_trans **tpp, struct sx_inode *ip);
};

/** sx_icache_init() / sx_icache_destroy() - the mount's inode cache, freeing by @ops */
int sx_icache_init(struct sx_mount *mp, const struct sx_inode_ops *ops);
void sx_icache_destroy(struct sx_mount *mp);

/**
 * sx_iget() - the in-core inode @ino, read and verified if not cached
 * @gen: if nonzero, the generation it must have (else -ESTALE)
 *
 * Return: 0, -EFSCORRUPTED/-EFSBADCRC for a bad inode block, -ENOENT for
 * a free inode number, -ESTALE, -ENOMEM, -EIO.
 */
int sx_iget(struct sx_mount *mp, u64 ino, u64 gen, struct sx_inode **ipp);
/** sx_ihold() - take another reference */
void sx_ihold(struct sx_inode *ip);
/**
 * sx_inode_mark_damaged() - keep @ip from being freed at its last release
 *
 * For an inode found to be damaged (a name leads to it but it has no
 * links): freeing it would spread the damage to everything it holds.
 */
void sx_inode_mark_damaged(struct sx_inode *ip);

/**
 * sx_irele() - drop a reference; the last one of an inode with no links and
 * no opens frees it (its blocks, then the inode)
 */
int sx_irele(struct sx_inode *ip);

/**
 * sx_inode_alloc() - allocate and initialise a new inode in @tp
 * @mode: SX_IFREG or SX_IFDIR with permission bits
 * @nlink: 0 for a temporary file (it goes on the unlinked list), else 1
 */
int sx_inode_alloc(struct sx_trans *tp, u16 mode, u32 nlink, struct sx_inode **ipp);

/** sx_inode_log() - write the in-core core fields into the inode block and log them */
int sx_inode_log(struct sx_trans *tp, struct sx_inode *ip);

/**
 * sx_icache_committed() - a transaction that changed inode @ino reached the
 * log as commit sequence @seq: tell its in-core copy, if there is one
 */
void sx_icache_committed(struct sx_mount *mp, u64 ino, u64 seq);

/**
 * sx_inode_sync_seq() - the log must be durable up to this commit sequence
 * for every change of @ip so far to be (what its fsync forces)
 */
u64 sx_inode_sync_seq(struct sx_inode *ip);

/** sx_inode_get_buf() - the inode's block, joined to @tp (or read-only if @tp is NULL) */
int sx_inode_get_buf(struct sx_mount *mp, struct sx_trans *tp, struct sx_inode *ip,
		     struct sx_buf **bpp);

/** sx_inode_buf_ops - verifier of inode blocks */
extern const struct sx_buf_ops sx_inode_buf_ops;
/**
 * sx_inode_core_buf_ops - the same checks but those of the inline records,
 * for the checker, which reports each bad record itself
 */
extern const struct sx_buf_ops sx_inode_core_buf_ops;

/**
 * sx_icache_range_has() - whether an inode numbered in [@ino, +@len) is
 * cached and not being freed; *@hit gets the first (no reference taken)
 */
bool sx_icache_range_has(struct sx_mount *mp, u64 ino, u64 len, u64 *hit);

/* Locking: the order is iolock before ilock; two inodes lock in inode-number order. */
void sx_ilock(struct sx_inode *ip, u32 mode);
void sx_iunlock(struct sx_inode *ip, u32 mode);
/** sx_ilock_two() - lock two inodes (which may be the same) in a fixed order */
void sx_ilock_two(struct sx_inode *a, struct sx_inode *b, u32 mode);
void sx_iunlock_two(struct sx_inode *a, struct sx_inode *b, u32 mode);

/**
 * sx_iunlink() - put @ip (nlink just became 0, or a new tmpfile) on the
 * unlinked list; sx_iunlink_remove() takes it off (link of a tmpfile, or
 * just before it is freed)
 */
int sx_iunlink(struct sx_trans *tp, struct sx_inode *ip);
int sx_iunlink_remove(struct sx_trans *tp, struct sx_inode *ip);

/** sx_recover_unlinked() - free every inode left on the unlinked list (mount) */
int sx_recover_unlinked(struct sx_mount *mp);

/** sx_inode_free() - free an unlinked inode's blocks and the inode itself */
int sx_inode_free(struct sx_inode *ip);

/**
 * sx_inode_init_block() - format a whole new inode block image: core as
 * given, empty inline fork, sealed with its CRC (mkfs writes the root
 * directory with it)
 */
void sx_inode_init_block(const struct sx_sb *sb, u64 ino, u16 mode, u32 nlink, u64 gen,
			 s64 now, void *data);

/** sx_inode_res_bytes() - log bytes for logging one inode core */
u32 sx_inode_res_bytes(const struct sx_mount *mp);

#endif /* SX_INODE_H */
