// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Inodes: the inode block verifier, the in-core inode cache, allocation,
 * logging, locking, the unlinked list and the freeing of inodes.
 *
 * The cache.  In-core inodes are hashed by number.  Lookups walk a hash
 * chain under RCU and take a reference only if the count is not zero; the
 * chains change under the cache mutex.  An inode stays cached while it is
 * referenced: the last sx_irele() marks it SX_IF_FREEING, frees it on disk
 * if it has no links and no opens, then unhashes it and frees the memory
 * after a grace period.  Keeping nothing unreferenced means a later
 * sx_iget() always decodes the inode block as committed, so in-core fields
 * that a cancelled transaction changed can never outlive the references
 * that saw them.  A lookup that finds only an inode being freed waits for
 * it to go (sx_iget() of an inode being freed then sees its block free).
 *
 * The unlinked list.  Every inode with no links (a tmpfile, or a file
 * whose last name went while it was open) is on a singly linked list from
 * fsinfo fi_unlinked through di_next_unlinked, newest first, so recovery
 * can free them after a crash.  Insertion changes only the fsinfo head and
 * the new entry; removal walks the list for the predecessor (the directory
 * is flat and the list short) under m_unlinked_lock, which serialises
 * removals, and changes the predecessor's link.  di_next_unlinked belongs
 * to the list code: sx_inode_log() never writes it from the in-core copy,
 * which is only a hint.
 *
 * Lock order: iolock, ilock (two inodes in inode-number order), then the
 * buffers: inode blocks, the fsinfo block, B+tree blocks, bitmap blocks.
 * An inode's ilock keeps everyone off its block but the walk that removes
 * another inode from the unlinked list: it holds the blocks of inodes on
 * the list without their ilocks, then waits for the fsinfo and bitmap
 * blocks.  So a transaction that changes an inode on the list (a tmpfile,
 * such as an update's clone) joins the inode's block before fsinfo and
 * bitmap blocks even where it logs the inode last (a B+tree fork's split,
 * an allocation first); sx_inode_get_buf() asserts it.
 */
#include "util.h"
#include "inode.h"
#include "log.h"
#include "fsinfo.h"
#include "fork.h"
#include "buf.h"
#include "trans.h"
#include "alloc.h"
#include "mount.h"
#include "dev.h"
#include "btree.h"
#include "bmap.h"
#include "dir.h"

/* Hash chains of the inode cache (a power of two). */
#define SX_ICACHE_BUCKETS	1024

struct sx_icache {
	const struct sx_inode_ops *ic_ops;	/* the file layer's, for freeing */
	struct sx_mutex	ic_lock;	/* chain changes, i_iflags */
	struct sx_cond	ic_wait;	/* an inode being freed left the cache */
	u64		ic_count;	/* inodes cached */
	struct sx_list	ic_buckets[SX_ICACHE_BUCKETS];
};

/*
 * Inode block verifier.
 */

/* True if every byte of @len bytes at @p is zero. */
static bool ino_all_zero(const void *p, size_t len)
{
	const u8 *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* True if @bno is a block of the data area. */
static bool ino_data_block(const struct sx_mount *mp, u64 bno)
{
	return bno >= mp->m_sb.sb_datastart && bno < mp->m_sb.sb_dblocks;
}

/* Records the inline fork of a file of mode @mode holds (its on-disk record size). */
static u32 ino_inline_max(const struct sx_mount *mp, u16 mode)
{
	size_t recsize = (mode & SX_IFMT) == SX_IFDIR ? sizeof(struct sx_ddir_rec) :
							sizeof(struct sx_dbmap_rec);

	return (u32)(SX_FORK_BYTES(mp->m_bsize) / recsize);
}

/*
 * Structure checks of an inode block (after magic, CRC, blkno, uuid,
 * owner), all but those of its inline records.
 */
static int sx_inode_verify_core(struct sx_mount *mp, const void *data)
{
	const struct sx_dinode *di = data;
	u64 ino = le64_to_cpu(di->di_hdr.bh_blkno);
	u16 mode = le16_to_cpu(di->di_mode);
	u16 format = le16_to_cpu(di->di_format);
	u64 nrecs = le64_to_cpu(di->di_nrecs);
	u64 broot = le64_to_cpu(di->di_broot);
	u64 next = le64_to_cpu(di->di_next_unlinked);
	u32 blevel = le32_to_cpu(di->di_blevel);

	if (SX_IS_CORRUPT(mp, le64_to_cpu(di->di_hdr.bh_owner) != ino) ||
	    SX_IS_CORRUPT(mp, (mode & SX_IFMT) != SX_IFREG && (mode & SX_IFMT) != SX_IFDIR) ||
	    /* the root is the only directory and is never unlinked */
	    SX_IS_CORRUPT(mp, (mode & SX_IFMT) == SX_IFDIR && di->di_nlink == 0) ||
	    SX_IS_CORRUPT(mp, le32_to_cpu(di->di_flags) & ~SX_DIFLAG_ALL) ||
	    SX_IS_CORRUPT(mp, le64_to_cpu(di->di_nblocks) > mp->m_sb.sb_dblocks) ||
	    SX_IS_CORRUPT(mp, next != 0 && (!ino_data_block(mp, next) || next == ino)) ||
	    SX_IS_CORRUPT(mp, di->di_pad != 0 || di->di_pad2 != 0) ||
	    SX_IS_CORRUPT(mp, !ino_all_zero(di->di_reserved, sizeof(di->di_reserved))))
		return -EFSCORRUPTED;
	switch (format) {
	case SX_DIF_INLINE:
		if (SX_IS_CORRUPT(mp, nrecs > ino_inline_max(mp, mode)) ||
		    SX_IS_CORRUPT(mp, broot != 0 || blevel != 0))
			return -EFSCORRUPTED;
		break;
	case SX_DIF_BTREE:
		if (SX_IS_CORRUPT(mp, !ino_data_block(mp, broot) || broot == ino) ||
		    SX_IS_CORRUPT(mp, blevel >= SX_BTREE_MAXLEVELS) ||
		    SX_IS_CORRUPT(mp, nrecs == 0))
			return -EFSCORRUPTED;
		break;
	default:
		sx_corruption_report(mp, "unknown inode format", __func__, __LINE__);
		return -EFSCORRUPTED;
	}
	return 0;
}

/*
 * Every check of an inode block, its inline records included: those are
 * checked as the block is read or written, as a B+tree leaf's are, and the
 * fork's lookups trust them.
 */
static int sx_inode_verify(struct sx_mount *mp, const void *data)
{
	const struct sx_dinode *di = data;
	u16 mode = le16_to_cpu(di->di_mode);
	int error;

	error = sx_inode_verify_core(mp, data);
	if (error || le16_to_cpu(di->di_format) != SX_DIF_INLINE)
		return error;
	return sx_btree_verify_recs(mp, (mode & SX_IFMT) == SX_IFDIR ? &sx_dirbt_ops : &sx_bmbt_ops,
				    (const u8 *)data + SX_DINODE_CORE, le64_to_cpu(di->di_nrecs));
}

static void sx_inode_buf_cancel(struct sx_mount *mp, struct sx_buf *bp);

const struct sx_buf_ops sx_inode_buf_ops = {
	.bo_name = "inode",
	.bo_magic = SX_INODE_MAGIC,
	.bo_verify = sx_inode_verify,
	.bo_cancel = sx_inode_buf_cancel,
};

const struct sx_buf_ops sx_inode_core_buf_ops = {
	.bo_name = "inode",
	.bo_magic = SX_INODE_MAGIC,
	.bo_verify = sx_inode_verify_core,
};

/*
 * Core encoding.
 */

/* Fill the in-core core fields from an inode block. */
static void ino_decode(struct sx_inode *ip, const struct sx_dinode *di)
{
	ip->i_mode = le16_to_cpu(di->di_mode);
	ip->i_format = le16_to_cpu(di->di_format);
	ip->i_nlink = le32_to_cpu(di->di_nlink);
	ip->i_uid = le32_to_cpu(di->di_uid);
	ip->i_gid = le32_to_cpu(di->di_gid);
	ip->i_size = le64_to_cpu(di->di_size);
	ip->i_nblocks = le64_to_cpu(di->di_nblocks);
	ip->i_gen = le64_to_cpu(di->di_gen);
	ip->i_flags = le32_to_cpu(di->di_flags);
	ip->i_atime = (s64)le64_to_cpu(di->di_atime);
	ip->i_mtime = (s64)le64_to_cpu(di->di_mtime);
	ip->i_ctime = (s64)le64_to_cpu(di->di_ctime);
	ip->i_next_unlinked = le64_to_cpu(di->di_next_unlinked);
	ip->i_nrecs = le64_to_cpu(di->di_nrecs);
	ip->i_broot = le64_to_cpu(di->di_broot);
	ip->i_blevel = le32_to_cpu(di->di_blevel);
}

/*
 * Give the in-core core of a cached inode back what its block says, after
 * a transaction that changed the core was cancelled.  Only the fields that
 * differ are written: a field the transaction changed was changed under
 * the locks its readers take (the ilock, and the iolock too for the
 * flags), which this thread still holds; one it did not change may be
 * read by another thread without the ilock (the mode, by every call on an
 * open file), and rewriting it, even with its own value, would race.
 */
#define INO_RESTORE(field, val)			\
	do {					\
		if (ip->field != (val))		\
			ip->field = (val);	\
	} while (0)

static void ino_restore(struct sx_inode *ip, const struct sx_dinode *di)
{
	INO_RESTORE(i_mode, le16_to_cpu(di->di_mode));
	INO_RESTORE(i_format, le16_to_cpu(di->di_format));
	INO_RESTORE(i_nlink, le32_to_cpu(di->di_nlink));
	INO_RESTORE(i_uid, le32_to_cpu(di->di_uid));
	INO_RESTORE(i_gid, le32_to_cpu(di->di_gid));
	INO_RESTORE(i_size, le64_to_cpu(di->di_size));
	INO_RESTORE(i_nblocks, le64_to_cpu(di->di_nblocks));
	INO_RESTORE(i_gen, le64_to_cpu(di->di_gen));
	INO_RESTORE(i_flags, le32_to_cpu(di->di_flags));
	INO_RESTORE(i_atime, (s64)le64_to_cpu(di->di_atime));
	INO_RESTORE(i_mtime, (s64)le64_to_cpu(di->di_mtime));
	INO_RESTORE(i_ctime, (s64)le64_to_cpu(di->di_ctime));
	INO_RESTORE(i_next_unlinked, le64_to_cpu(di->di_next_unlinked));
	INO_RESTORE(i_nrecs, le64_to_cpu(di->di_nrecs));
	INO_RESTORE(i_broot, le64_to_cpu(di->di_broot));
	INO_RESTORE(i_blevel, le32_to_cpu(di->di_blevel));
}

/* Write the in-core core fields into an inode block (not di_next_unlinked). */
static void ino_encode(const struct sx_inode *ip, struct sx_dinode *di)
{
	di->di_mode = cpu_to_le16(ip->i_mode);
	di->di_format = cpu_to_le16(ip->i_format);
	di->di_nlink = cpu_to_le32(ip->i_nlink);
	di->di_uid = cpu_to_le32(ip->i_uid);
	di->di_gid = cpu_to_le32(ip->i_gid);
	di->di_size = cpu_to_le64(ip->i_size);
	di->di_nblocks = cpu_to_le64(ip->i_nblocks);
	di->di_gen = cpu_to_le64(ip->i_gen);
	di->di_flags = cpu_to_le32(ip->i_flags);
	di->di_atime = cpu_to_le64((u64)ip->i_atime);
	di->di_mtime = cpu_to_le64((u64)ip->i_mtime);
	di->di_ctime = cpu_to_le64((u64)ip->i_ctime);
	di->di_nrecs = cpu_to_le64(ip->i_nrecs);
	di->di_broot = cpu_to_le64(ip->i_broot);
	di->di_blevel = cpu_to_le32(ip->i_blevel);
}

/* Format a whole new inode block image (mkfs; sx_inode_alloc does it in a buffer). */
void sx_inode_init_block(const struct sx_sb *sb, u64 ino, u16 mode, u32 nlink, u64 gen,
			 s64 now, void *data)
{
	struct sx_dinode *di = data;

	memset(data, 0, sb->sb_blocksize);
	di->di_hdr.bh_magic = cpu_to_le32(SX_INODE_MAGIC);
	di->di_hdr.bh_blkno = cpu_to_le64(ino);
	di->di_hdr.bh_owner = cpu_to_le64(ino);
	memcpy(di->di_hdr.bh_uuid, sb->sb_uuid, SX_UUID_SIZE);
	di->di_mode = cpu_to_le16(mode);
	di->di_format = cpu_to_le16(SX_DIF_INLINE);
	di->di_nlink = cpu_to_le32(nlink);
	di->di_gen = cpu_to_le64(gen);
	di->di_atime = cpu_to_le64((u64)now);
	di->di_mtime = cpu_to_le64((u64)now);
	di->di_ctime = cpu_to_le64((u64)now);
	di->di_hdr.bh_crc = cpu_to_le32(sx_cksum_skip(data, sb->sb_blocksize,
					offsetof(struct sx_dblk_hdr, bh_crc)));
}

static bool ino_tp_has(struct sx_trans *tp, u64 blkno);

/* The inode's block, joined to @tp, or read locked if @tp is NULL. */
int sx_inode_get_buf(struct sx_mount *mp, struct sx_trans *tp, struct sx_inode *ip,
		     struct sx_buf **bpp)
{
	int error;

	if (!tp)
		return sx_buf_read(mp, ip->i_ino, &sx_inode_buf_ops, ip->i_ino, bpp);
	/*
	 * The unlinked list's walk holds the blocks of inodes on the list
	 * without their ilocks while it waits for the fsinfo and bitmap
	 * blocks: a transaction that logs such an inode must take its block
	 * before those (the lock order above).
	 */
	ASSERT(!ip->i_unlinked || ino_tp_has(tp, ip->i_ino) ||
	       (!ino_tp_has(tp, mp->m_sb.sb_fsinfo) && !sx_alloc_owned(mp)));
	error = sx_trans_read_buf(tp, ip->i_ino, &sx_inode_buf_ops, ip->i_ino, bpp);
	if (!error)
		sx_trans_note_inode(tp, ip);
	return error;
}


/* How far the log must be durable for every change of @ip to be. */
u64 sx_inode_sync_seq(struct sx_inode *ip)
{
	u64 seq = (u64)sx_atomic64_read(&ip->i_commit_seq);

	return sx_max(seq, (u64)sx_atomic64_read(&ip->i_mp->m_inodes_lost_seq));
}

/* Write the core into the inode block and log the core's bytes. */
int sx_inode_log(struct sx_trans *tp, struct sx_inode *ip)
{
	struct sx_buf *bp;
	int error, error2;

	ASSERT(sx_mutex_is_held(&ip->i_ilock));
	error = sx_inode_get_buf(tp->t_mp, tp, ip, &bp);
	if (error) {
		/*
		 * The core may have changed in memory, and the cancel that
		 * follows restores only the blocks it holds: put the core
		 * back from the block now.  Only a block not joined yet can
		 * fail for memory (and so is not locked by this transaction);
		 * one that cannot be read, or is not what it should be,
		 * leaves a core nothing can vouch for: stop.
		 */
		error2 = error;
		if (error == -ENOMEM)
			error2 = sx_inode_get_buf(tp->t_mp, NULL, ip, &bp);
		if (error2) {
			sx_force_shutdown(tp->t_mp, error2,
					  "inode %llu could not be logged or restored",
					  (unsigned long long)ip->i_ino);
			return error;
		}
		ino_restore(ip, bp->b_data);
		sx_buf_relse(bp);
		return error;
	}
	ino_encode(ip, bp->b_data);
	return sx_trans_log_buf(tp, bp, sizeof(struct sx_dblk_hdr), SX_DINODE_CORE - 1);
}

/* Log bytes of logging one inode core: the chunks the core spans. */
u32 sx_inode_res_bytes(const struct sx_mount *mp)
{
	u32 bytes = sizeof(struct sx_dlog_buf) + sizeof(struct sx_dlog_region) +
		    (u32)sx_roundup(SX_DINODE_CORE, (size_t)SX_BUF_CHUNK);

	return sx_min(sx_trans_op_bytes(bytes), sx_trans_buf_bytes(mp));
}

/* Log bytes of the last transaction of freeing an inode. */
static u32 ino_free_res(const struct sx_mount *mp)
{
	/* off the list (predecessor, itself), invalidated, fsinfo, its block freed */
	return 2 * sx_inode_res_bytes(mp) + sx_trans_op_bytes(sizeof(struct sx_dlog_buf)) +
	       sx_fsinfo_res_bytes(mp) + sx_alloc_res_bytes(mp);
}

/*
 * The cache.
 */

/* The hash chain of @ino. */
static struct sx_list *ic_bucket(struct sx_icache *ic, u64 ino)
{
	u64 h = ino * 0x9e3779b97f4a7c15ull;

	return &ic->ic_buckets[(h >> 32) & (SX_ICACHE_BUCKETS - 1)];
}

/* Add @n at the head of chain @head, published for RCU readers. */
static void ic_hash_add(struct sx_list *n, struct sx_list *head)
{
	struct sx_list *first = head->next;

	n->next = first;
	n->prev = head;
	sx_rcu_assign_pointer(head->next, n);
	first->prev = n;
}

/*
 * Unlink @n from its chain.  Its next pointer stays, so that a reader
 * standing on it goes on to the rest of the chain.
 */
static void ic_hash_del(struct sx_list *n)
{
	n->next->prev = n->prev;
	sx_rcu_assign_pointer(n->prev->next, n->next);
	n->prev = NULL;
}

/* Take a reference unless the count is zero (the inode is going away). */
static bool ic_get_not_zero(struct sx_atomic *a)
{
	s32 c = sx_atomic_read(a);

	while (c > 0) {
		s32 old = sx_atomic_cmpxchg(a, c, c + 1);

		if (old == c)
			return true;
		c = old;
	}
	return false;
}

/*
 * A cancelled transaction restored an inode block: the in-core core, which
 * the transaction changed in memory before logging it (sx_inode_log()),
 * must say what the block says again, or the file would show, and a later
 * transaction log, a change that never happened.  Only an inode whose
 * ilock this thread holds can have been changed by the transaction (every
 * change of a core is made under it); any other, like an unlinked list
 * neighbour whose block was joined for its link, may be in the middle of
 * a change of its own holder's, and is left alone.
 */
static void sx_inode_buf_cancel(struct sx_mount *mp, struct sx_buf *bp)
{
	struct sx_icache *ic = mp->m_icache;
	struct sx_list *head, *pos;

	if (!ic)
		return;
	head = ic_bucket(ic, bp->b_blkno);
	sx_rcu_read_lock();
	for (pos = sx_rcu_dereference(head->next); pos != head;
	     pos = sx_rcu_dereference(pos->next)) {
		struct sx_inode *ip = sx_list_entry(pos, struct sx_inode, i_hash);

		if (ip->i_ino != bp->b_blkno ||
		    (sx_load_acquire(ip->i_iflags) & SX_IF_FREEING))
			continue;
		if (sx_mutex_is_held(&ip->i_ilock))
			ino_restore(ip, bp->b_data);
		break;
	}
	sx_rcu_read_unlock();
}

/* Set up the mount's inode cache and the unlinked list lock. */
int sx_icache_init(struct sx_mount *mp, const struct sx_inode_ops *ops)
{
	struct sx_icache *ic;
	u32 i;

	ic = sx_zalloc(sizeof(*ic), 0);
	if (!ic)
		return -ENOMEM;
	ic->ic_ops = ops;
	sx_mutex_init(&ic->ic_lock);
	sx_cond_init(&ic->ic_wait);
	for (i = 0; i < SX_ICACHE_BUCKETS; i++)
		sx_list_init(&ic->ic_buckets[i]);
	sx_mutex_init(&mp->m_unlinked_lock);
	mp->m_icache = ic;
	return 0;
}

/* Free an in-core inode's memory. */
static void ic_free_inode(struct sx_inode *ip)
{
	sx_free(ip->i_swap_cur);		/* a swap host's cursor, if one is left */
	sx_rwsem_destroy(&ip->i_iolock);
	sx_mutex_destroy(&ip->i_ilock);
	sx_free(ip);
}

/* RCU callback: the grace period after unhashing is over. */
static void ic_free_rcu(struct sx_rcu_head *head)
{
	ic_free_inode(sx_container_of(head, struct sx_inode, i_rcu));
}

/* Free the cache; every inode should have been released. */
void sx_icache_destroy(struct sx_mount *mp)
{
	struct sx_icache *ic = mp->m_icache;
	u32 i;

	if (!ic)
		return;
	for (i = 0; i < SX_ICACHE_BUCKETS; i++) {
		struct sx_list *head = &ic->ic_buckets[i];

		while (head->next != head) {
			struct sx_inode *ip = sx_list_entry(head->next, struct sx_inode, i_hash);

			sx_warn(mp, "inode %llu still referenced (%d) at unmount",
				(unsigned long long)ip->i_ino, sx_atomic_read(&ip->i_count));
			ic_hash_del(&ip->i_hash);
			sx_synchronize_rcu();
			ic_free_inode(ip);
		}
	}
	/*
	 * Inodes freed before wait for a grace period in sx_call_rcu(); their
	 * callback touches nothing but the inode, so unmount need not wait for
	 * it (an RCU barrier costs a call_rcu thread's wake-up, ~10 ms, per
	 * unmount).  sx_exit() waits for them all, before the module's code
	 * goes.
	 */
	sx_cond_destroy(&ic->ic_wait);
	sx_mutex_destroy(&ic->ic_lock);
	sx_mutex_destroy(&mp->m_unlinked_lock);
	sx_free(ic);
	mp->m_icache = NULL;
}

/* A new in-core inode @ino with one reference, not yet hashed. */
static struct sx_inode *ic_new_inode(struct sx_mount *mp, u64 ino)
{
	struct sx_inode *ip = sx_zalloc(sizeof(*ip), SX_NOFS);

	if (!ip)
		return NULL;
	ip->i_mp = mp;
	ip->i_ino = ino;
	ip->i_hinode.hi_host = &mp->m_host;
	sx_atomic_set(&ip->i_count, 1);
	sx_rwsem_init(&ip->i_iolock);
	sx_mutex_init(&ip->i_ilock);
	return ip;
}

/*
 * Remember in the in-core copy of @ino the latest commit sequence of a
 * transaction that changed it.  Under RCU and without a reference: a copy
 * being freed may be stamped too, harmlessly.  A copy read from the disk
 * later starts from the commit count when it was read (ic_read_inode()).
 */
void sx_icache_committed(struct sx_mount *mp, u64 ino, u64 seq)
{
	struct sx_icache *ic = mp->m_icache;
	struct sx_list *head, *pos;
	s64 old;

	if (!ic)
		return;
	head = ic_bucket(ic, ino);
	sx_rcu_read_lock();
	for (pos = sx_rcu_dereference(head->next); pos != head;
	     pos = sx_rcu_dereference(pos->next)) {
		struct sx_inode *ip = sx_list_entry(pos, struct sx_inode, i_hash);

		if (ip->i_ino != ino)
			continue;
		do {
			old = sx_atomic64_read(&ip->i_commit_seq);
			if ((u64)old >= seq)
				break;
		} while (sx_atomic64_cmpxchg(&ip->i_commit_seq, old, (s64)seq) != old);
	}
	sx_rcu_read_unlock();
}

/* RCU lookup: a referenced live inode @ino, or NULL. */
static struct sx_inode *ic_lookup_rcu(struct sx_icache *ic, u64 ino)
{
	struct sx_list *head = ic_bucket(ic, ino), *pos;
	struct sx_inode *found = NULL;

	sx_rcu_read_lock();
	for (pos = sx_rcu_dereference(head->next); pos != head;
	     pos = sx_rcu_dereference(pos->next)) {
		struct sx_inode *ip = sx_list_entry(pos, struct sx_inode, i_hash);

		if (ip->i_ino != ino)
			continue;
		if (sx_load_acquire(ip->i_iflags) & SX_IF_FREEING)
			continue;
		if (ic_get_not_zero(&ip->i_count)) {
			found = ip;
			break;
		}
	}
	sx_rcu_read_unlock();
	return found;
}

/* Whether a live inode numbered in [@ino, +@len) is cached (RCU, no reference). */
bool sx_icache_range_has(struct sx_mount *mp, u64 ino, u64 len, u64 *hit)
{
	struct sx_icache *ic = mp->m_icache;
	bool found = false;
	u64 n;

	sx_rcu_read_lock();
	for (n = ino; n - ino < len && !found; n++) {
		struct sx_list *head = ic_bucket(ic, n), *pos;

		for (pos = sx_rcu_dereference(head->next); pos != head;
		     pos = sx_rcu_dereference(pos->next)) {
			struct sx_inode *ip = sx_list_entry(pos, struct sx_inode, i_hash);

			if (ip->i_ino == n && !(sx_load_acquire(ip->i_iflags) & SX_IF_FREEING)) {
				*hit = n;
				found = true;
				break;
			}
		}
	}
	sx_rcu_read_unlock();
	return found;
}

/*
 * Under the cache lock: the live inode @ino, referenced, or NULL; *@freeing
 * says whether an inode @ino is being freed.  (A count only reaches zero
 * under this lock, in the same hold that marks the inode SX_IF_FREEING.)
 */
static struct sx_inode *ic_lookup_locked(struct sx_icache *ic, u64 ino, bool *freeing)
{
	struct sx_list *head = ic_bucket(ic, ino), *pos;

	ASSERT(sx_mutex_is_held(&ic->ic_lock));
	*freeing = false;
	for (pos = head->next; pos != head; pos = pos->next) {
		struct sx_inode *ip = sx_list_entry(pos, struct sx_inode, i_hash);

		if (ip->i_ino != ino)
			continue;
		if (ip->i_iflags & SX_IF_FREEING) {
			*freeing = true;
			continue;
		}
		sx_atomic_add_return(&ip->i_count, 1);
		return ip;
	}
	return NULL;
}

/* Hash a new inode (cache lock held). */
static void ic_insert_locked(struct sx_icache *ic, struct sx_inode *ip)
{
	ASSERT(sx_mutex_is_held(&ic->ic_lock));
	ic_hash_add(&ip->i_hash, ic_bucket(ic, ip->i_ino));
	ic->ic_count++;
}

/* Read inode @ino from its block into a new in-core inode. */
static int ic_read_inode(struct sx_mount *mp, u64 ino, struct sx_inode **ipp)
{
	struct sx_inode *ip;
	struct sx_buf *bp;
	bool isfree;
	int error;

	if (!ino_data_block(mp, ino) || ino == mp->m_sb.sb_fsinfo)
		return -ENOENT;
	error = sx_alloc_is_free(mp, ino, &isfree);
	if (error)
		return error;
	if (isfree)
		return -ENOENT;
	error = sx_buf_read(mp, ino, &sx_inode_buf_ops, ino, &bp);
	if (error)
		return error;
	ip = ic_new_inode(mp, ino);
	if (!ip) {
		sx_buf_relse(bp);
		return -ENOMEM;
	}
	ino_decode(ip, bp->b_data);
	/*
	 * Its changes are in the log up to now at most: a transaction that
	 * joined the block stamped the copy it changed, which is gone, and
	 * committed before it let go of the block we hold.  Until this copy
	 * is cached nobody can change the inode (changes go through the
	 * in-core copy), so none can slip in before its first stamp.
	 */
	if (mp->m_log)
		sx_atomic64_set(&ip->i_commit_seq, (s64)sx_log_commit_seq(mp));
	sx_buf_relse(bp);
	if (ip->i_nlink == 0)
		ip->i_unlinked = true;
	*ipp = ip;
	return 0;
}

/* The in-core inode @ino, read if not cached; @gen nonzero must match. */
int sx_iget(struct sx_mount *mp, u64 ino, u64 gen, struct sx_inode **ipp)
{
	struct sx_icache *ic = mp->m_icache;
	struct sx_inode *ip, *nip = NULL;
	bool freeing;
	int error;

	ip = ic_lookup_rcu(ic, ino);
	if (ip)
		goto out_found;

	for (;;) {
		sx_mutex_lock(&ic->ic_lock);
		ip = ic_lookup_locked(ic, ino, &freeing);
		if (ip)
			break;
		if (freeing) {
			sx_cond_wait(&ic->ic_wait, &ic->ic_lock);
			sx_mutex_unlock(&ic->ic_lock);
			continue;
		}
		if (nip) {
			ic_insert_locked(ic, nip);
			ip = nip;
			nip = NULL;
			break;
		}
		sx_mutex_unlock(&ic->ic_lock);
		/* read it unlocked, then look again: someone may have been faster */
		error = ic_read_inode(mp, ino, &nip);
		if (error)
			return error;
	}
	sx_mutex_unlock(&ic->ic_lock);
	if (nip)
		ic_free_inode(nip);
out_found:
	if (gen && ip->i_gen != gen) {
		sx_irele(ip);
		return -ESTALE;
	}
	*ipp = ip;
	return 0;
}

/* Take another reference. */
void sx_ihold(struct sx_inode *ip)
{
	VERIFY(sx_atomic_add_return(&ip->i_count, 1) > 1 ||
	       (ip->i_iflags & SX_IF_FREEING));
}

/*
 * An inode with no links and no opens lost its last reference: free it on
 * disk if it really is such an inode there (an in-core change that was
 * cancelled must not free a file that still has a name) and the mount can
 * write.  Anything not done stays on the unlinked list for recovery.
 */
static int ino_inactive(struct sx_inode *ip)
{
	struct sx_mount *mp = ip->i_mp;
	const struct sx_dinode *di;
	struct sx_buf *bp;
	bool isfree, doomed;
	int error;

	/*
	 * Not on a read-only or dead mount, and not during recovery: an
	 * intent being finished may drop the last reference inside its own
	 * transaction; sx_recover_unlinked() frees what is left afterwards.
	 */
	if (sx_is_shutdown(mp) || (mp->m_flags & (SX_MF_RDONLY | SX_MF_RECOVERY)))
		return 0;
	/* a new inode whose transaction was cancelled: nothing on disk */
	error = sx_alloc_is_free(mp, ip->i_ino, &isfree);
	if (error || isfree)
		return error;
	error = sx_buf_read(mp, ip->i_ino, &sx_inode_buf_ops, ip->i_ino, &bp);
	if (error)
		return error;
	di = bp->b_data;
	doomed = le32_to_cpu(di->di_nlink) == 0 && le64_to_cpu(di->di_gen) == ip->i_gen;
	sx_buf_relse(bp);
	if (!doomed)
		return 0;
	return sx_inode_free(ip);
}

void sx_inode_mark_damaged(struct sx_inode *ip)
{
	struct sx_icache *ic = ip->i_mp->m_icache;

	sx_mutex_lock(&ic->ic_lock);
	sx_store_release(ip->i_iflags, ip->i_iflags | SX_IF_DAMAGED);
	sx_mutex_unlock(&ic->ic_lock);
}

/* Drop a reference; the last one of an inode with no links and no opens frees it. */
int sx_irele(struct sx_inode *ip)
{
	struct sx_mount *mp = ip->i_mp;
	struct sx_icache *ic = mp->m_icache;
	s32 c;
	int error = 0;

	/* not the last reference: drop it without the lock */
	for (;;) {
		c = sx_atomic_read(&ip->i_count);
		VERIFY(c > 0);
		if (c == 1)
			break;
		if (sx_atomic_cmpxchg(&ip->i_count, c, c - 1) == c)
			return 0;
	}
	/* a hold and release by the code freeing it (nobody else can get one) */
	if (sx_load_acquire(ip->i_iflags) & SX_IF_FREEING) {
		sx_atomic_add_return(&ip->i_count, -1);
		return 0;
	}
	/*
	 * The last one goes under the cache lock, so that a lookup under the
	 * lock cannot take the inode back between the drop and the marking;
	 * an RCU lookup that got in first keeps it alive.
	 */
	sx_mutex_lock(&ic->ic_lock);
	if (sx_atomic_add_return(&ip->i_count, -1) != 0) {
		sx_mutex_unlock(&ic->ic_lock);
		return 0;
	}
	sx_store_release(ip->i_iflags, ip->i_iflags | SX_IF_FREEING);
	sx_mutex_unlock(&ic->ic_lock);

	if (ip->i_nlink == 0 && ip->i_opens == 0 && !(ip->i_iflags & SX_IF_DAMAGED)) {
		error = ino_inactive(ip);
		if (error)
			sx_warn(mp, "inode %llu not freed (error %d); left on the unlinked list",
				(unsigned long long)ip->i_ino, error);
	}

	sx_mutex_lock(&ic->ic_lock);
	ic_hash_del(&ip->i_hash);
	ic->ic_count--;
	sx_cond_broadcast(&ic->ic_wait);
	sx_mutex_unlock(&ic->ic_lock);
	sx_call_rcu(&ip->i_rcu, ic_free_rcu);
	return error;
}

/*
 * Locking.
 */

/* Take @ip's locks in @mode (iolock before ilock). */
void sx_ilock(struct sx_inode *ip, u32 mode)
{
	ASSERT(!((mode & SX_IOLOCK_SHARED) && (mode & SX_IOLOCK_EXCL)));
	if (mode & SX_IOLOCK_EXCL)
		sx_rwsem_down_write(&ip->i_iolock);
	else if (mode & SX_IOLOCK_SHARED)
		sx_rwsem_down_read(&ip->i_iolock);
	if (mode & SX_ILOCK_EXCL)
		sx_mutex_lock(&ip->i_ilock);
}

/* Drop @ip's locks in @mode. */
void sx_iunlock(struct sx_inode *ip, u32 mode)
{
	if (mode & SX_ILOCK_EXCL)
		sx_mutex_unlock(&ip->i_ilock);
	if (mode & SX_IOLOCK_EXCL)
		sx_rwsem_up_write(&ip->i_iolock);
	else if (mode & SX_IOLOCK_SHARED)
		sx_rwsem_up_read(&ip->i_iolock);
}

/* Lock two inodes: both iolocks, then both ilocks, each pair lowest number first. */
void sx_ilock_two(struct sx_inode *a, struct sx_inode *b, u32 mode)
{
	u32 io = mode & (SX_IOLOCK_SHARED | SX_IOLOCK_EXCL);
	u32 il = mode & SX_ILOCK_EXCL;

	if (a == b) {
		sx_ilock(a, mode);
		return;
	}
	if (a->i_ino > b->i_ino) {
		struct sx_inode *t = a;

		a = b;
		b = t;
	}
	if (io) {
		sx_ilock(a, io);
		sx_ilock(b, io);
	}
	if (il) {
		sx_ilock(a, il);
		sx_ilock(b, il);
	}
}

/* Unlock what sx_ilock_two() locked. */
void sx_iunlock_two(struct sx_inode *a, struct sx_inode *b, u32 mode)
{
	sx_iunlock(a, mode);
	if (a != b)
		sx_iunlock(b, mode);
}

/*
 * Allocation.
 */

/* Allocate and initialise a new inode in @tp, referenced and cached. */
int sx_inode_alloc(struct sx_trans *tp, u16 mode, u32 nlink, struct sx_inode **ipp)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_icache *ic = mp->m_icache;
	struct sx_inode *ip;
	struct sx_dinode *di;
	struct sx_buf *bp;
	u64 gen, bno, head = 0;
	u32 len;
	s64 now;
	int error;

	if ((mode & SX_IFMT) != SX_IFREG && (mode & SX_IFMT) != SX_IFDIR)
		return -EINVAL;
	if (mp->m_flags & SX_MF_RDONLY)
		return -EROFS;
	error = sx_fault("inode_alloc");
	if (error)
		return error;
	/* the fsinfo block before the bitmap (lock order) */
	error = sx_fsinfo_next_gen(tp, &gen);
	if (!error)
		error = sx_fsinfo_mod_icount(tp, 1);
	if (!error && nlink == 0)
		error = sx_fsinfo_get_unlinked(tp, &head);
	if (error)
		return error;
	/* near the root: inodes gather at the start of the data area */
	error = sx_alloc_extent(tp, mp->m_rootino, 1, 1, &bno, &len);
	if (error)
		return error;
	error = sx_trans_get_buf(tp, bno, &sx_inode_buf_ops, bno, &bp);
	if (error)
		return error;
	ip = ic_new_inode(mp, bno);
	if (!ip)
		return -ENOMEM;
	now = (s64)sx_wall_ns();
	ip->i_mode = mode;
	ip->i_format = SX_DIF_INLINE;
	ip->i_nlink = nlink;
	ip->i_gen = gen;
	ip->i_atime = now;
	ip->i_mtime = now;
	ip->i_ctime = now;

	sx_inode_init_block(&mp->m_sb, bno, mode, nlink, gen, now, bp->b_data);
	di = bp->b_data;
	ino_encode(ip, di);
	if (nlink == 0) {
		/* a tmpfile: at the head of the unlinked list from the start */
		di->di_next_unlinked = cpu_to_le64(head);
		ip->i_next_unlinked = head;
		ip->i_unlinked = true;
		error = sx_fsinfo_set_unlinked(tp, bno);
	}
	if (!error)
		error = sx_trans_log_buf(tp, bp, 0, mp->m_bsize - 1);
	if (error) {
		ic_free_inode(ip);
		return error;
	}

	sx_mutex_lock(&ic->ic_lock);
	ic_insert_locked(ic, ip);
	sx_mutex_unlock(&ic->ic_lock);
	sx_trans_note_inode(tp, ip);
	*ipp = ip;
	return 0;
}

/*
 * The unlinked list.
 */

/* True if block @blkno is joined to @tp already. */
static bool ino_tp_has(struct sx_trans *tp, u64 blkno)
{
	struct sx_list *pos;

	sx_list_for_each(pos, &tp->t_bufs) {
		if (sx_list_entry(pos, struct sx_buf, b_tlist)->b_blkno == blkno)
			return true;
	}
	return false;
}

/* Put @ip (no links) at the head of the unlinked list. */
int sx_iunlink(struct sx_trans *tp, struct sx_inode *ip)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_dinode *di;
	struct sx_buf *bp;
	u64 head;
	int error;

	ASSERT(sx_mutex_is_held(&ip->i_ilock));
	if (SX_IS_CORRUPT(mp, ip->i_nlink != 0))
		return -EFSCORRUPTED;
	/* the inode's block before the fsinfo block (lock order) */
	error = sx_inode_get_buf(mp, tp, ip, &bp);
	if (!error)
		error = sx_fsinfo_get_unlinked(tp, &head);
	if (error)
		return error;
	di = bp->b_data;
	if (SX_IS_CORRUPT(mp, head == ip->i_ino || di->di_next_unlinked != 0))
		return -EFSCORRUPTED;	/* on the list already */
	di->di_next_unlinked = cpu_to_le64(head);
	error = sx_trans_log_buf(tp, bp, offsetof(struct sx_dinode, di_next_unlinked),
				 offsetof(struct sx_dinode, di_next_unlinked) + 7);
	if (!error)
		error = sx_fsinfo_set_unlinked(tp, ip->i_ino);
	if (error)
		return error;
	ip->i_next_unlinked = head;
	ip->i_unlinked = true;
	return 0;
}

/*
 * Read inode block @ino of the list into @tp; a block this call joined
 * itself is released again by ino_walk_put() unless it was changed.
 */
static int ino_walk_get(struct sx_trans *tp, u64 ino, struct sx_buf **bpp, bool *joined)
{
	*joined = ino_tp_has(tp, ino);
	return sx_trans_read_buf(tp, ino, &sx_inode_buf_ops, ino, bpp);
}

/* Release a block ino_walk_get() joined. */
static void ino_walk_put(struct sx_trans *tp, struct sx_buf *bp, bool joined)
{
	if (!joined)
		sx_trans_brelse(tp, bp);
}

/*
 * Find the predecessor of @ino on the unlinked list: *@pred is 0 for the
 * fsinfo block (@ino is the head) or the inode whose link points at @ino,
 * whose block is left joined to @tp.
 */
static int ino_find_pred(struct sx_trans *tp, u64 ino, u64 *pred, struct sx_buf **pbpp)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_buf *bp;
	u64 cur, next, steps = 0;
	bool joined;
	int error;

	ASSERT(sx_mutex_is_held(&mp->m_unlinked_lock));
	joined = ino_tp_has(tp, mp->m_sb.sb_fsinfo);
	error = sx_fsinfo_get(tp, &bp);
	if (error)
		return error;
	cur = le64_to_cpu(((struct sx_dfsinfo *)bp->b_data)->fi_unlinked);
	ino_walk_put(tp, bp, joined);
	*pbpp = NULL;
	if (cur == ino) {
		*pred = 0;
		return 0;
	}
	while (cur) {
		const struct sx_dinode *di;

		if (SX_IS_CORRUPT(mp, ++steps > mp->m_sb.sb_dblocks))
			return -EFSCORRUPTED;	/* a cycle */
		error = ino_walk_get(tp, cur, &bp, &joined);
		if (error)
			return error;
		di = bp->b_data;
		next = le64_to_cpu(di->di_next_unlinked);
		if (SX_IS_CORRUPT(mp, di->di_nlink != 0)) {
			ino_walk_put(tp, bp, joined);
			return -EFSCORRUPTED;
		}
		if (next == ino) {
			*pred = cur;
			*pbpp = bp;
			return 0;
		}
		ino_walk_put(tp, bp, joined);
		cur = next;
	}
	sx_err(mp, "inode %llu is not on the unlinked list", (unsigned long long)ino);
	return -EFSCORRUPTED;
}

/* Take @ip off the unlinked list. */
int sx_iunlink_remove(struct sx_trans *tp, struct sx_inode *ip)
{
	struct sx_mount *mp = tp->t_mp;
	struct sx_buf *bp, *pbp;
	u64 pred, next, head;
	bool fi_joined;
	int error;

	ASSERT(sx_mutex_is_held(&ip->i_ilock));
	sx_mutex_lock(&mp->m_unlinked_lock);
	error = sx_inode_get_buf(mp, tp, ip, &bp);
	if (error)
		goto out_unlock;
	next = le64_to_cpu(((struct sx_dinode *)bp->b_data)->di_next_unlinked);
	for (;;) {
		error = ino_find_pred(tp, ip->i_ino, &pred, &pbp);
		if (error)
			goto out_unlock;
		if (pred) {
			/*
			 * Only removals change an entry's link and they are
			 * serialised: the predecessor stays what it is.
			 */
			((struct sx_dinode *)pbp->b_data)->di_next_unlinked = cpu_to_le64(next);
			error = sx_trans_log_buf(tp, pbp,
						 offsetof(struct sx_dinode, di_next_unlinked),
						 offsetof(struct sx_dinode, di_next_unlinked) + 7);
			break;
		}
		/* the head: unless an insertion got in first, then look again */
		fi_joined = ino_tp_has(tp, mp->m_sb.sb_fsinfo);
		error = sx_fsinfo_get_unlinked(tp, &head);
		if (error)
			goto out_unlock;
		if (head == ip->i_ino) {
			error = sx_fsinfo_set_unlinked(tp, next);
			break;
		}
		if (!fi_joined) {
			struct sx_buf *fbp;

			if (!sx_fsinfo_get(tp, &fbp))
				sx_trans_brelse(tp, fbp);
		}
	}
	if (error)
		goto out_unlock;
	((struct sx_dinode *)bp->b_data)->di_next_unlinked = 0;
	error = sx_trans_log_buf(tp, bp, offsetof(struct sx_dinode, di_next_unlinked),
				 offsetof(struct sx_dinode, di_next_unlinked) + 7);
	if (!error) {
		ip->i_next_unlinked = 0;
		ip->i_unlinked = false;
	}
out_unlock:
	sx_mutex_unlock(&mp->m_unlinked_lock);
	return error;
}

/*
 * Freeing.
 */

/*
 * Free the blocks of @ip's fork: a chain of transactions, run by the file
 * layer's operations (the inode layer knows no fork's records).
 */
static int ino_free_fork(struct sx_inode *ip)
{
	struct sx_mount *mp = ip->i_mp;
	const struct sx_inode_ops *ops = mp->m_icache->ic_ops;
	struct sx_trans *tp;
	int error;

	if (ip->i_nrecs == 0 && ip->i_format == SX_DIF_INLINE)
		return 0;
	error = sx_trans_alloc(mp, ops->iop_free_res(mp, ip), 0, &tp);
	if (error)
		return error;
	sx_ilock(ip, SX_ILOCK_EXCL);
	error = ops->iop_free_fork(&tp, ip);
	if (error)
		sx_trans_cancel(tp);
	else
		error = sx_trans_commit(tp);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	return error;
}

/*
 * Free an unlinked inode: its blocks first, in as many transactions as it
 * takes, the inode staying on the unlinked list; then, in one transaction,
 * off the list, its block invalidated and freed, and the inode count down.
 * A crash anywhere leaves it on the list, for sx_recover_unlinked().
 */
int sx_inode_free(struct sx_inode *ip)
{
	struct sx_mount *mp = ip->i_mp;
	struct sx_trans *tp;
	struct sx_buf *bp;
	int error;

	if (SX_IS_CORRUPT(mp, ip->i_nlink != 0))
		return -EFSCORRUPTED;
	error = sx_fault("inode_free");
	if (!error)
		error = ino_free_fork(ip);
	if (error)
		return error;
	error = sx_fault("inode_free_last");
	if (error)
		return error;
	error = sx_trans_alloc(mp, ino_free_res(mp), 0, &tp);
	if (error)
		return error;
	sx_ilock(ip, SX_ILOCK_EXCL);
	/* inode blocks, then fsinfo, then bitmap (lock order) */
	error = sx_iunlink_remove(tp, ip);
	if (!error)
		error = sx_inode_get_buf(mp, tp, ip, &bp);
	if (!error)
		error = sx_trans_binval(tp, bp);
	if (!error)
		error = sx_fsinfo_mod_icount(tp, -1);
	if (!error)
		error = sx_free_extent(tp, ip->i_ino, 1);
	if (error)
		sx_trans_cancel(tp);
	else
		error = sx_trans_commit(tp);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	return error;
}

/* Free every inode left on the unlinked list (mount, after log recovery). */
int sx_recover_unlinked(struct sx_mount *mp)
{
	struct sx_inode *ip;
	u64 head, prev = 0, n = 0;
	int error;

	for (;;) {
		error = sx_fsinfo_read_unlinked(mp, &head);
		if (error || head == 0)
			return error;
		if (SX_IS_CORRUPT(mp, head == prev || ++n > mp->m_sb.sb_dblocks))
			return -EFSCORRUPTED;	/* freeing it did not take it off */
		error = sx_iget(mp, head, 0, &ip);
		if (error) {
			sx_err(mp, "unlinked inode %llu unreadable (error %d)",
			       (unsigned long long)head, error);
			return error == -ENOENT ? -EFSCORRUPTED : error;
		}
		if (SX_IS_CORRUPT(mp, ip->i_nlink != 0 || ip->i_opens != 0)) {
			sx_irele(ip);
			return -EFSCORRUPTED;
		}
		/* freed here, not by the release (nothing is freed while recovering) */
		error = sx_inode_free(ip);
		sx_irele(ip);
		if (error)
			return error;
		mp->m_rstats.rs_unlinked++;
		prev = head;
	}
}
