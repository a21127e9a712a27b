// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Inodes: allocation and lookup across remounts, generations, the inode
 * block verifier (every field), the fsinfo verifier, RCU lookups from many
 * threads, two-inode locking, the unlinked list (order of removals, crash
 * and recovery, the checker's view of it) and ENOSPC.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "sxtest.h"
#include "sxcrash.h"
#include "inode.h"
#include "fsinfo.h"
#include "file.h"
#include "fork.h"
#include "bmap.h"
#include "refcount.h"

#define MIB		(1ull << 20)
#define BS		4096u

/* A new filesystem with a log large enough for every name operation. */
static struct sx_bdev *newfs(void)
{
	return sxt_memfs(32 * MIB, BS, 1024);
}

/* Log bytes of allocating one inode (as file.c reserves it, plus the list). */
static u32 ialloc_res(struct sx_mount *mp)
{
	return sx_alloc_res_bytes(mp) + 3 * sx_trans_buf_bytes(mp) + sx_inode_res_bytes(mp);
}

/* Allocate a committed inode of @mode with @nlink links; returns it referenced. */
static struct sx_inode *ialloc(struct sx_mount *mp, u16 mode, u32 nlink)
{
	struct sx_trans *tp;
	struct sx_inode *ip;

	assert_int_equal(sx_trans_alloc(mp, ialloc_res(mp), 0, &tp), 0);
	assert_int_equal(sx_inode_alloc(tp, mode, nlink, &ip), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	return ip;
}

/* Take the last link of @ip in a transaction (it goes on the unlinked list). */
static void drop_link(struct sx_inode *ip)
{
	struct sx_mount *mp = ip->i_mp;
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(mp, ialloc_res(mp), 0, &tp), 0);
	sx_ilock(ip, SX_ILOCK_EXCL);
	assert_int_equal(ip->i_nlink, 1);
	ip->i_nlink = 0;
	assert_int_equal(sx_iunlink(tp, ip), 0);
	assert_int_equal(sx_inode_log(tp, ip), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_iunlock(ip, SX_ILOCK_EXCL);
}

/* The fsinfo block's fields, as committed. */
static void fsinfo_read(struct sx_mount *mp, struct sx_dfsinfo *out)
{
	struct sx_buf *bp;

	assert_int_equal(sx_buf_read(mp, mp->m_sb.sb_fsinfo, &sx_fsinfo_buf_ops, 0, &bp), 0);
	memcpy(out, bp->b_data, sizeof(*out));
	sx_buf_relse(bp);
}

static u64 icount(struct sx_mount *mp)
{
	struct sx_dfsinfo fi;

	fsinfo_read(mp, &fi);
	return le64_to_cpu(fi.fi_icount);
}

/* The unlinked list, head first, into @out; returns its length. */
static u32 unlinked_list(struct sx_mount *mp, u64 *out, u32 max)
{
	struct sx_buf *bp;
	u64 cur;
	u32 n = 0;

	assert_int_equal(sx_fsinfo_read_unlinked(mp, &cur), 0);
	while (cur) {
		assert_true(n < max);
		out[n++] = cur;
		assert_int_equal(sx_buf_read(mp, cur, &sx_inode_buf_ops, cur, &bp), 0);
		assert_int_equal(le32_to_cpu(((struct sx_dinode *)bp->b_data)->di_nlink), 0);
		cur = le64_to_cpu(((struct sx_dinode *)bp->b_data)->di_next_unlinked);
		sx_buf_relse(bp);
	}
	return n;
}

/* Report callback of the checker: count problems, keep quiet. */
static void ck_report(void *arg, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (arg && !strncmp(line, "problem", 7))
		snprintf((char *)arg, 512, "%s", line);
}

/* Problems the checker finds on @bd; *@last gets the last problem line. */
static u64 check(struct sx_bdev *bd, char *last)
{
	u64 problems = ~0ull;

	if (last)
		last[0] = 0;
	assert_int_equal(sx_check_flags(bd, SX_CHECK_SPACE_ONLY, ck_report, last, &problems), 0);
	return problems;
}

/* ---------------------------------------------------------------- basics */

/* Allocate, log, remount, look up: every core field survives; then free. */
static void test_alloc_iget_remount(void **state)
{
	struct sx_bdev *bd = newfs();
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_inode *ip, *ip2, *root;
	struct sx_trans *tp;
	u64 free0 = sx_alloc_free_blocks(mp), ino, gen, rootino;
	bool isfree;

	assert_int_equal(icount(mp), 1);
	assert_int_equal(sx_fsinfo_root_ino(mp, &rootino), 0);
	assert_int_equal(rootino, mp->m_rootino);
	assert_int_equal(sx_iget(mp, rootino, 0, &root), 0);
	assert_int_equal(root->i_mode & SX_IFMT, SX_IFDIR);
	assert_int_equal(root->i_format, SX_DIF_INLINE);
	assert_true(root->i_nlink >= 1);
	assert_int_equal(sx_irele(root), 0);

	ip = ialloc(mp, SX_IFREG | 0640, 1);
	ino = ip->i_ino;
	gen = ip->i_gen;
	assert_true(gen != 0);
	assert_int_equal(ip->i_mode, SX_IFREG | 0640);
	assert_true(ip->i_ctime > 0 && ip->i_mtime == ip->i_ctime);
	assert_int_equal(sx_alloc_free_blocks(mp), free0 - 1);
	assert_int_equal(icount(mp), 2);
	/* a second lookup finds the cached inode */
	assert_int_equal(sx_iget(mp, ino, gen, &ip2), 0);
	assert_ptr_equal(ip, ip2);
	assert_int_equal(sx_irele(ip2), 0);

	assert_int_equal(sx_trans_alloc(mp, sx_inode_res_bytes(mp), 0, &tp), 0);
	sx_ilock(ip, SX_ILOCK_EXCL);
	ip->i_size = 123456;
	ip->i_uid = 1000;
	ip->i_gid = 100;
	ip->i_flags = SX_DIFLAG_APPEND;
	ip->i_atime = -5;
	assert_int_equal(sx_inode_log(tp, ip), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, NULL), 0);

	mp = sxt_mount(bd);
	assert_int_equal(sx_iget(mp, ino, gen, &ip), 0);
	assert_int_equal(ip->i_size, 123456);
	assert_int_equal(ip->i_uid, 1000);
	assert_int_equal(ip->i_gid, 100);
	assert_int_equal(ip->i_flags, SX_DIFLAG_APPEND);
	assert_int_equal(ip->i_atime, -5);
	assert_int_equal(ip->i_nlink, 1);
	assert_int_equal(ip->i_gen, gen);
	assert_int_equal(icount(mp), 2);

	/* its last link goes: on the list, freed by the last reference */
	drop_link(ip);
	{
		u64 l[4];

		assert_int_equal(unlinked_list(mp, l, 4), 1);
		assert_int_equal(l[0], ino);
	}
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_alloc_is_free(mp, ino, &isfree), 0);
	assert_true(isfree);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	assert_int_equal(icount(mp), 1);
	assert_int_equal(sx_iget(mp, ino, 0, &ip), -ENOENT);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, NULL), 0);
	sx_bdev_destroy(bd);
}

/* A reused inode block gets a new generation; stale handles are -ESTALE. */
static void test_generation_reuse(void **state)
{
	struct sx_bdev *bd = newfs();
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_inode *ip;
	u64 ino, gen, ino2, gen2;

	ip = ialloc(mp, SX_IFREG | 0600, 0);	/* a tmpfile */
	ino = ip->i_ino;
	gen = ip->i_gen;
	assert_int_equal(sx_irele(ip), 0);	/* freed */
	assert_int_equal(sx_iget(mp, ino, gen, &ip), -ENOENT);

	ip = ialloc(mp, SX_IFREG | 0600, 1);
	ino2 = ip->i_ino;
	gen2 = ip->i_gen;
	assert_int_equal(ino2, ino);		/* the same block again */
	assert_true(gen2 != gen);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_iget(mp, ino, gen, &ip), -ESTALE);
	assert_int_equal(sx_iget(mp, ino, gen2, &ip), 0);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);

	/* and across a remount */
	mp = sxt_mount(bd);
	assert_int_equal(sx_iget(mp, ino, gen, &ip), -ESTALE);
	assert_int_equal(sx_iget(mp, ino, gen2, &ip), 0);
	assert_int_equal(sx_irele(ip), 0);
	ip = ialloc(mp, SX_IFDIR | 0700, 1);
	assert_true(ip->i_gen > gen2);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Numbers that are no inode: -ENOENT; bad modes: -EINVAL. */
static void test_not_an_inode(void **state)
{
	struct sx_bdev *bd = newfs();
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sx_inode *ip;
	const struct sx_sb *sb = &mp->m_sb;

	assert_int_equal(sx_iget(mp, 0, 0, &ip), -ENOENT);
	assert_int_equal(sx_iget(mp, 1, 0, &ip), -ENOENT);
	assert_int_equal(sx_iget(mp, sb->sb_logstart, 0, &ip), -ENOENT);
	assert_int_equal(sx_iget(mp, sb->sb_bmapstart, 0, &ip), -ENOENT);
	assert_int_equal(sx_iget(mp, sb->sb_fsinfo, 0, &ip), -ENOENT);
	assert_int_equal(sx_iget(mp, sb->sb_dblocks, 0, &ip), -ENOENT);
	assert_int_equal(sx_iget(mp, ~0ull, 0, &ip), -ENOENT);
	assert_int_equal(sx_iget(mp, sb->sb_dblocks - 1, 0, &ip), -ENOENT);	/* free */

	assert_int_equal(sx_trans_alloc(mp, ialloc_res(mp), 0, &tp), 0);
	assert_int_equal(sx_inode_alloc(tp, 0644, 1, &ip), -EINVAL);
	assert_int_equal(sx_inode_alloc(tp, 0010644, 1, &ip), -EINVAL);
	sx_trans_cancel(tp);
	assert_int_equal(icount(mp), 1);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* A cancelled allocation leaves no trace, in core or on disk. */
static void test_alloc_cancel(void **state)
{
	struct sx_bdev *bd = newfs();
	struct sx_mount *mp = sxt_mount(bd);
	u64 free0 = sx_alloc_free_blocks(mp), ino, l[2];
	struct sx_trans *tp;
	struct sx_inode *ip;
	u32 nlink;

	for (nlink = 0; nlink < 2; nlink++) {
		assert_int_equal(sx_trans_alloc(mp, ialloc_res(mp), 0, &tp), 0);
		assert_int_equal(sx_inode_alloc(tp, SX_IFREG | 0644, nlink, &ip), 0);
		ino = ip->i_ino;
		sx_trans_cancel(tp);
		assert_int_equal(sx_irele(ip), 0);
		assert_int_equal(sx_alloc_free_blocks(mp), free0);
		assert_int_equal(icount(mp), 1);
		assert_int_equal(unlinked_list(mp, l, 2), 0);
		assert_int_equal(sx_iget(mp, ino, 0, &ip), -ENOENT);
	}
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, NULL), 0);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- verifier */

/* Reseal block @blkno's CRC after a change. */
static void reseal(u8 *blk)
{
	struct sx_dblk_hdr *h = (struct sx_dblk_hdr *)blk;

	h->bh_crc = cpu_to_le32(sx_cksum_skip(blk, BS, offsetof(struct sx_dblk_hdr, bh_crc)));
}

struct icorrupt {
	const char	*what;
	void		(*fn)(struct sx_dinode *di, u64 ino);
};

#define IC(name, body) \
	static void ic_##name(struct sx_dinode *di, u64 ino) { body; }
IC(magic, di->di_hdr.bh_magic = cpu_to_le32(SX_FSINFO_MAGIC))
IC(blkno, di->di_hdr.bh_blkno = cpu_to_le64(ino + 1))
IC(owner, di->di_hdr.bh_owner = cpu_to_le64(ino + 1))
IC(uuid, di->di_hdr.bh_uuid[3] ^= 1)
IC(mode0, di->di_mode = 0)
IC(mode_fifo, di->di_mode = cpu_to_le16(0010644))
IC(mode_lnk, di->di_mode = cpu_to_le16(0120777))
IC(format0, di->di_format = 0)
IC(format3, di->di_format = cpu_to_le16(3))
IC(flags, di->di_flags = cpu_to_le32(SX_DIFLAG_ALL + 1))
IC(flags_high, di->di_flags = cpu_to_le32(1u << 31))
IC(nrecs, di->di_nrecs = cpu_to_le64(SX_FORK_BYTES(BS) / sizeof(struct sx_dbmap_rec) + 1))
IC(inline_broot, di->di_broot = cpu_to_le64(ino + 1))
IC(inline_blevel, di->di_blevel = cpu_to_le32(1))
IC(btree_noroot, di->di_format = cpu_to_le16(SX_DIF_BTREE); di->di_nrecs = cpu_to_le64(50))
IC(btree_self, di->di_format = cpu_to_le16(SX_DIF_BTREE); di->di_nrecs = cpu_to_le64(50);
   di->di_broot = cpu_to_le64(ino))
IC(btree_level, di->di_format = cpu_to_le16(SX_DIF_BTREE); di->di_nrecs = cpu_to_le64(50);
   di->di_broot = cpu_to_le64(ino + 1); di->di_blevel = cpu_to_le32(SX_BTREE_MAXLEVELS))
IC(btree_far, di->di_format = cpu_to_le16(SX_DIF_BTREE); di->di_nrecs = cpu_to_le64(50);
   di->di_broot = cpu_to_le64(~0ull >> 1))
IC(next_self, di->di_next_unlinked = cpu_to_le64(ino))
IC(next_far, di->di_next_unlinked = cpu_to_le64(~0ull))
IC(next_meta, di->di_next_unlinked = cpu_to_le64(2))
IC(nblocks, di->di_nblocks = cpu_to_le64(~0ull))
IC(pad, di->di_pad = cpu_to_le32(1))
IC(pad2, di->di_pad2 = cpu_to_le32(1))
IC(reserved0, di->di_reserved[0] = cpu_to_le64(1))
IC(reserved3, di->di_reserved[3] = cpu_to_le64(1ull << 63))

static const struct icorrupt icorruptions[] = {
#define E(name) { #name, ic_##name }
	E(magic), E(blkno), E(owner), E(uuid), E(mode0), E(mode_fifo), E(mode_lnk),
	E(format0), E(format3), E(flags), E(flags_high), E(nrecs), E(inline_broot),
	E(inline_blevel), E(btree_noroot), E(btree_self), E(btree_level), E(btree_far),
	E(next_self), E(next_far), E(next_meta), E(nblocks), E(pad), E(pad2), E(reserved0),
	E(reserved3),
#undef E
};

/* Every bad field of an inode block, resealed, is -EFSCORRUPTED; a torn one -EFSBADCRC. */
static void test_inode_verifier(void **state)
{
	struct sx_bdev *bd = newfs(), *copy;
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_inode *ip;
	u8 good[BS], blk[BS];
	u64 ino, gen;
	size_t i;

	sxt_quiet();
	ip = ialloc(mp, SX_IFREG | 0644, 1);
	ino = ip->i_ino;
	gen = ip->i_gen;
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sxt_bdev_peek(bd, ino * BS, good, BS);

	/* the block as written passes, through a fresh mount */
	mp = sxt_mount(bd);
	assert_int_equal(sx_iget(mp, ino, gen, &ip), 0);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);

	for (i = 0; i < ARRAY_SIZE(icorruptions); i++) {
		int error;

		memcpy(blk, good, BS);
		icorruptions[i].fn((struct sx_dinode *)blk, ino);
		assert_memory_not_equal(blk, good, BS);
		reseal(blk);
		copy = sxt_bdev_copy(bd);
		sxt_bdev_poke(copy, ino * BS, blk, BS);
		mp = sxt_mount(copy);
		error = sx_iget(mp, ino, 0, &ip);
		if (error != -EFSCORRUPTED)
			fail_msg("inode corruption %s: iget returned %d", icorruptions[i].what,
				 error);
		assert_int_equal(sx_unmount(mp), 0);
		assert_true(check(copy, NULL) == 0 || true);
		sx_bdev_destroy(copy);
	}

	/* not resealed: a checksum failure, wherever the damage is */
	for (i = 0; i < BS; i += 331) {
		memcpy(blk, good, BS);
		blk[i] ^= 0x10;
		copy = sxt_bdev_copy(bd);
		sxt_bdev_poke(copy, ino * BS, blk, BS);
		mp = sxt_mount(copy);
		assert_int_equal(sx_iget(mp, ino, 0, &ip), -EFSBADCRC);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(copy);
	}
	sx_bdev_destroy(bd);
}

/* Inline records of a file: extent @i of inode block image @blk. */
static struct sx_dbmap_rec *inline_ext(u8 *blk, u32 i)
{
	return (struct sx_dbmap_rec *)(blk + SX_DINODE_CORE) + i;
}

/* Inline records of a directory: entry @i of inode block image @blk. */
static struct sx_ddir_rec *inline_dirent(u8 *blk, u32 i)
{
	return (struct sx_ddir_rec *)(blk + SX_DINODE_CORE) + i;
}

/* What sx_iget(@ino) returns on a copy of @bd whose block @ino is @blk, resealed. */
static int iget_with(struct sx_bdev *bd, u64 ino, u8 *blk)
{
	struct sx_bdev *copy = sxt_bdev_copy(bd);
	struct sx_mount *mp;
	struct sx_inode *ip;
	int error;

	reseal(blk);
	sxt_bdev_poke(copy, ino * BS, blk, BS);
	mp = sxt_mount(copy);
	error = sx_iget(mp, ino, 0, &ip);
	if (!error)
		assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(copy);
	return error;
}

/*
 * The records of an inline fork are checked as the inode block is read,
 * as a B+tree leaf's are: a bad extent or directory entry makes sx_iget()
 * fail, not the first lookup that happens to walk the fork.  (Lookups
 * trust what the read checked: a fork of a hundred extents was walked
 * whole by every one of them.)
 */
static void test_inline_records_verified(void **state)
{
	struct sx_bdev *bd = newfs();
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_inode *ip;
	struct sx_stat st;
	u8 good[BS], dgood[BS], blk[BS], buf[BS];
	u64 ino, root = mp->m_rootino;
	u32 i;
	int fd;

	/* three extents with holes between them, and a few names in the root */
	memset(buf, 0x3c, sizeof(buf));
	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(sx_pwrite(mp, fd, buf, BS, (u64)i * 4 * BS), (s64)BS);
	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	ino = st.st_ino;
	assert_int_equal(sx_close(mp, fd), 0);
	for (i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "n%u", i);
		assert_int_equal(sx_create(mp, name, 0644, &fd), 0);
		assert_int_equal(sx_close(mp, fd), 0);
	}
	assert_int_equal(sx_unmount(mp), 0);
	sxt_bdev_peek(bd, ino * BS, good, BS);
	sxt_bdev_peek(bd, root * BS, dgood, BS);
	assert_int_equal(le16_to_cpu(((struct sx_dinode *)good)->di_format), SX_DIF_INLINE);
	assert_int_equal(le64_to_cpu(((struct sx_dinode *)good)->di_nrecs), 3);
	assert_int_equal(le16_to_cpu(((struct sx_dinode *)dgood)->di_format), SX_DIF_INLINE);
	assert_true(le64_to_cpu(((struct sx_dinode *)dgood)->di_nrecs) >= 4);

	for (i = 0; i < 6; i++) {
		memcpy(blk, good, BS);
		switch (i) {
		case 0:		/* an extent outside the data area */
			inline_ext(blk, 1)->br_startblock = cpu_to_le64(1);
			break;
		case 1:		/* an empty extent */
			inline_ext(blk, 2)->br_blockcount = 0;
			break;
		case 2:		/* a flag no version defines */
			inline_ext(blk, 0)->br_flags = cpu_to_le32(1u << 7);
			break;
		case 3:		/* extents out of key order */
			inline_ext(blk, 0)->br_startoff = cpu_to_le64(100);
			break;
		case 4:		/* an extent running off the device */
			inline_ext(blk, 2)->br_blockcount = cpu_to_le32(1u << 20);
			break;
		case 5:		/* an extent whose end wraps */
			inline_ext(blk, 2)->br_startoff = cpu_to_le64(~0ull);
			break;
		}
		if (iget_with(bd, ino, blk) != -EFSCORRUPTED)
			fail_msg("inline extent corruption %u was not refused by the read", i);
	}

	/* the root's entries: one naming no inode, one whose name is not its hash */
	for (i = 0; i < 2; i++) {
		memcpy(blk, dgood, BS);
		if (i == 0)
			inline_dirent(blk, 1)->de_ino = cpu_to_le64(1);
		else
			inline_dirent(blk, 2)->de_name[0] ^= 0x20;
		if (iget_with(bd, root, blk) != -EFSCORRUPTED)
			fail_msg("inline entry corruption %u was not refused by the read", i);
	}

	/* and the good blocks pass */
	mp = sxt_mount(bd);
	assert_int_equal(sx_iget(mp, ino, 0, &ip), 0);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_iget(mp, root, 0, &ip), 0);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

struct fcorrupt {
	const char	*what;
	void		(*fn)(struct sx_dfsinfo *fi, const struct sx_sb *sb);
};

#define FC(name, body) \
	static void fc_##name(struct sx_dfsinfo *fi, const struct sx_sb *sb) { body; }
FC(magic, fi->fi_hdr.bh_magic = cpu_to_le32(SX_INODE_MAGIC))
FC(owner, fi->fi_hdr.bh_owner = cpu_to_le64(5))
FC(root0, fi->fi_rootino = 0)
FC(root_self, fi->fi_rootino = cpu_to_le64(sb->sb_fsinfo))
FC(root_far, fi->fi_rootino = cpu_to_le64(sb->sb_dblocks))
FC(root_meta, fi->fi_rootino = cpu_to_le64(sb->sb_logstart))
FC(unlinked_far, fi->fi_unlinked = cpu_to_le64(sb->sb_dblocks + 1))
FC(unlinked_self, fi->fi_unlinked = cpu_to_le64(sb->sb_fsinfo))
FC(gen0, fi->fi_next_gen = 0)
FC(icount0, fi->fi_icount = 0)
FC(icount_big, fi->fi_icount = cpu_to_le64(sb->sb_dblocks + 1))
FC(refc_far, fi->fi_refc_root = cpu_to_le64(sb->sb_dblocks))
FC(refc_level, fi->fi_refc_root = cpu_to_le64(sb->sb_fsinfo + 5);
   fi->fi_refc_level = cpu_to_le32(SX_BTREE_MAXLEVELS))
FC(refc_level_noroot, fi->fi_refc_level = cpu_to_le32(1))
FC(pad, fi->fi_pad = cpu_to_le32(1))
FC(reserved, fi->fi_reserved[7] = cpu_to_le64(1))
FC(tail, ((u8 *)fi)[BS - 1] = 1)

static const struct fcorrupt fcorruptions[] = {
#define E(name) { #name, fc_##name }
	E(magic), E(owner), E(root0), E(root_self), E(root_far), E(root_meta),
	E(unlinked_far), E(unlinked_self), E(gen0), E(icount0), E(icount_big), E(refc_far),
	E(refc_level), E(refc_level_noroot), E(pad), E(reserved), E(tail),
#undef E
};

/* A bad fsinfo block keeps the filesystem from mounting, and the checker says so. */
static void test_fsinfo_verifier(void **state)
{
	struct sx_bdev *bd = newfs(), *copy;
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_sb sb = mp->m_sb;
	u8 good[BS], blk[BS];
	char last[512];
	size_t i;

	sxt_quiet();
	assert_int_equal(sx_unmount(mp), 0);
	sxt_bdev_peek(bd, sb.sb_fsinfo * BS, good, BS);
	for (i = 0; i < ARRAY_SIZE(fcorruptions); i++) {
		int error;

		memcpy(blk, good, BS);
		fcorruptions[i].fn((struct sx_dfsinfo *)blk, &sb);
		reseal(blk);
		copy = sxt_bdev_copy(bd);
		sxt_bdev_poke(copy, sb.sb_fsinfo * BS, blk, BS);
		error = sx_mount(copy, NULL, &mp);
		if (error != -EFSCORRUPTED)
			fail_msg("fsinfo corruption %s: mount returned %d", fcorruptions[i].what,
				 error);
		assert_true(check(copy, last) > 0);
		assert_non_null(strstr(last, "fsinfo"));
		sx_bdev_destroy(copy);
	}
	memcpy(blk, good, BS);
	blk[100] ^= 1;
	copy = sxt_bdev_copy(bd);
	sxt_bdev_poke(copy, sb.sb_fsinfo * BS, blk, BS);
	assert_int_equal(sx_mount(copy, NULL, &mp), -EFSBADCRC);
	sx_bdev_destroy(copy);
	sx_bdev_destroy(bd);
}

/* The checker: root not a directory, free in the bitmap. */
static void test_check_root(void **state)
{
	struct sx_bdev *bd = newfs(), *copy;
	struct sx_mount *mp = sxt_mount(bd);
	u64 root = mp->m_rootino;
	u8 good[BS], blk[BS];
	char last[512];

	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, NULL), 0);
	sxt_bdev_peek(bd, root * BS, good, BS);

	memcpy(blk, good, BS);
	((struct sx_dinode *)blk)->di_mode = cpu_to_le16(SX_IFREG | 0644);
	reseal(blk);
	copy = sxt_bdev_copy(bd);
	sxt_bdev_poke(copy, root * BS, blk, BS);
	assert_int_equal(check(copy, last), 1);
	assert_non_null(strstr(last, "not a directory"));
	sx_bdev_destroy(copy);

	memcpy(blk, good, BS);
	blk[200] ^= 4;
	copy = sxt_bdev_copy(bd);
	sxt_bdev_poke(copy, root * BS, blk, BS);
	assert_int_equal(check(copy, last), 1);
	assert_non_null(strstr(last, "root"));
	sx_bdev_destroy(copy);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- concurrency */

#define NINO		8
#define NTHREADS	6

struct rcu_worker {
	struct sx_mount	*mp;
	u64		ino[NINO];
	u64		gen[NINO];
	u64		seed;
	int		error;
};

/* Look up and release the shared inodes at random, sometimes several at once. */
static void *rcu_worker_main(void *arg)
{
	struct rcu_worker *w = arg;
	struct sx_inode *held[3];
	u32 i, k, n;

	sx_thread_enter();
	for (i = 0; i < 20000 && !w->error; i++) {
		n = 1 + (u32)(sxt_rand(&w->seed) % 3);
		for (k = 0; k < n; k++) {
			u32 j = (u32)(sxt_rand(&w->seed) % NINO);
			int error = sx_iget(w->mp, w->ino[j], w->gen[j], &held[k]);

			if (error || held[k]->i_ino != w->ino[j] || held[k]->i_gen != w->gen[j]) {
				w->error = error ? error : -EINVAL;
				n = k;
				break;
			}
		}
		for (k = 0; k < n; k++)
			if (sx_irele(held[k]))
				w->error = -EIO;
	}
	sx_thread_exit();
	return NULL;
}

/* Many threads look up and drop the same few inodes: every lookup is right. */
static void test_rcu_lookup_threads(void **state)
{
	struct sx_bdev *bd = newfs();
	struct sx_mount *mp = sxt_mount(bd);
	struct rcu_worker w[NTHREADS];
	pthread_t th[NTHREADS];
	u64 ino[NINO], gen[NINO];
	struct sx_inode *ip;
	u32 i;

	for (i = 0; i < NINO; i++) {
		ip = ialloc(mp, SX_IFREG | 0644, 1);
		ino[i] = ip->i_ino;
		gen[i] = ip->i_gen;
		/* half of them stay referenced throughout */
		if (i % 2)
			assert_int_equal(sx_irele(ip), 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		w[i].mp = mp;
		memcpy(w[i].ino, ino, sizeof(ino));
		memcpy(w[i].gen, gen, sizeof(gen));
		w[i].seed = 0x1234567ull * (i + 1);
		w[i].error = 0;
		assert_int_equal(pthread_create(&th[i], NULL, rcu_worker_main, &w[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(w[i].error, 0);
	}
	for (i = 0; i < NINO; i += 2) {
		assert_int_equal(sx_iget(mp, ino[i], gen[i], &ip), 0);
		assert_int_equal(sx_atomic_read(&ip->i_count), 2);
		assert_int_equal(sx_irele(ip), 0);
		assert_int_equal(sx_irele(ip), 0);
	}
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

struct lock_worker {
	struct sx_inode	*a, *b;
	u32		mode;
};

/* Lock the pair in the order given, many times. */
static void *lock_worker_main(void *arg)
{
	struct lock_worker *w = arg;
	u32 i;

	for (i = 0; i < 20000; i++) {
		sx_ilock_two(w->a, w->b, w->mode);
		sx_iunlock_two(w->a, w->b, w->mode);
	}
	return NULL;
}

/* Two inodes lock in inode-number order from either side; one inode locks once. */
static void test_lock_two(void **state)
{
	struct sx_bdev *bd = newfs();
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_inode *a = ialloc(mp, SX_IFREG | 0644, 1);
	struct sx_inode *b = ialloc(mp, SX_IFREG | 0644, 1);
	const u32 all = SX_IOLOCK_EXCL | SX_ILOCK_EXCL;
	struct lock_worker w[2] = { { a, b, all }, { b, a, all } };
	pthread_t th[2];
	u32 i;

	sx_ilock_two(a, b, all);
	assert_true(sx_mutex_is_held(&a->i_ilock) && sx_mutex_is_held(&b->i_ilock));
	assert_true(sx_rwsem_is_write_held(&a->i_iolock) && sx_rwsem_is_write_held(&b->i_iolock));
	sx_iunlock_two(a, b, all);
	assert_false(sx_mutex_is_held(&a->i_ilock) || sx_mutex_is_held(&b->i_ilock));
	sx_ilock_two(b, a, SX_ILOCK_EXCL);
	assert_true(sx_mutex_is_held(&a->i_ilock) && sx_mutex_is_held(&b->i_ilock));
	assert_false(sx_rwsem_is_write_held(&a->i_iolock));
	sx_iunlock_two(b, a, SX_ILOCK_EXCL);
	/* the same inode twice: locked once, unlocked once */
	sx_ilock_two(a, a, all);
	assert_true(sx_mutex_is_held(&a->i_ilock));
	sx_iunlock_two(a, a, all);
	assert_false(sx_mutex_is_held(&a->i_ilock));
	assert_true(sx_mutex_trylock(&a->i_ilock));
	sx_mutex_unlock(&a->i_ilock);
	/* shared iolocks of both */
	sx_ilock_two(a, b, SX_IOLOCK_SHARED | SX_ILOCK_EXCL);
	sx_iunlock_two(a, b, SX_IOLOCK_SHARED | SX_ILOCK_EXCL);

	/* opposite orders in two threads never deadlock */
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, lock_worker_main, &w[i]), 0);
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);

	assert_int_equal(sx_irele(a), 0);
	assert_int_equal(sx_irele(b), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- unlinked list */

/* Removal from the head, the middle and the tail; sx_link takes one off. */
static void test_unlinked_list(void **state)
{
	struct sx_bdev *bd = newfs(), *copy;
	struct sx_mount *mp = sxt_mount(bd);
	u64 free0 = sx_alloc_free_blocks(mp), l[8], ino[5], save;
	struct sx_inode *ip[5];
	struct sx_stat st;
	char last[512];
	int fd[5], i;
	u8 blk[BS];

	for (i = 0; i < 5; i++) {
		assert_int_equal(sx_open_tmpfile(mp, 0600, &fd[i]), 0);
		assert_int_equal(sx_fstat(mp, fd[i], &st), 0);
		ino[i] = st.st_ino;
		assert_int_equal(st.st_nlink, 0);
	}
	/* newest first */
	assert_int_equal(unlinked_list(mp, l, 8), 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(l[i], ino[4 - i]);
	assert_int_equal(icount(mp), 6);
	assert_int_equal(sx_fd_get(mp, fd[0], &ip[0]), 0);
	assert_true(ip[0]->i_unlinked);
	assert_int_equal(sx_irele(ip[0]), 0);

	/* the checker sees a well-formed list on a copy of the image */
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(sx_checkpoint(mp), 0);
	copy = sxt_bdev_copy(bd);
	assert_int_equal(check(copy, last), 0);
	sx_bdev_destroy(copy);

	assert_int_equal(sx_close(mp, fd[2]), 0);	/* middle */
	assert_int_equal(unlinked_list(mp, l, 8), 4);
	assert_int_equal(l[0], ino[4]);
	assert_int_equal(l[1], ino[3]);
	assert_int_equal(l[2], ino[1]);
	assert_int_equal(l[3], ino[0]);
	assert_int_equal(sx_close(mp, fd[0]), 0);	/* tail */
	assert_int_equal(sx_close(mp, fd[4]), 0);	/* head */
	assert_int_equal(unlinked_list(mp, l, 8), 2);
	assert_int_equal(l[0], ino[3]);
	assert_int_equal(l[1], ino[1]);
	/* a name takes a tmpfile off the list */
	assert_int_equal(sx_link(mp, fd[1], "kept"), 0);
	assert_int_equal(unlinked_list(mp, l, 8), 1);
	assert_int_equal(l[0], ino[3]);
	assert_int_equal(sx_close(mp, fd[1]), 0);
	assert_int_equal(sx_close(mp, fd[3]), 0);
	assert_int_equal(unlinked_list(mp, l, 8), 0);
	assert_int_equal(icount(mp), 2);
	assert_int_equal(sx_alloc_free_blocks(mp), free0 - 1);
	/* unlink of a file held open: on the list until the close */
	assert_int_equal(sx_open(mp, "kept", &fd[0]), 0);
	assert_int_equal(sx_unlink(mp, "kept"), 0);
	assert_int_equal(unlinked_list(mp, l, 8), 1);
	assert_int_equal(l[0], ino[1]);
	assert_int_equal(sx_close(mp, fd[0]), 0);
	assert_int_equal(unlinked_list(mp, l, 8), 0);
	assert_int_equal(icount(mp), 1);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);

	/* two tmpfiles, then a list the checker must refuse */
	assert_int_equal(sx_open_tmpfile(mp, 0600, &fd[0]), 0);
	assert_int_equal(sx_open_tmpfile(mp, 0600, &fd[1]), 0);
	assert_int_equal(unlinked_list(mp, l, 8), 2);
	assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(sx_checkpoint(mp), 0);
	save = l[1];
	/* a cycle: the tail points back at the head */
	copy = sxt_bdev_copy(bd);
	sxt_bdev_peek(copy, save * BS, blk, BS);
	((struct sx_dinode *)blk)->di_next_unlinked = cpu_to_le64(l[0]);
	reseal(blk);
	sxt_bdev_poke(copy, save * BS, blk, BS);
	assert_true(check(copy, last) > 0);
	assert_non_null(strstr(last, "cycle"));
	sx_bdev_destroy(copy);
	/* an entry that still has a link */
	copy = sxt_bdev_copy(bd);
	sxt_bdev_peek(copy, save * BS, blk, BS);
	((struct sx_dinode *)blk)->di_nlink = cpu_to_le32(1);
	reseal(blk);
	sxt_bdev_poke(copy, save * BS, blk, BS);
	assert_true(check(copy, last) > 0);
	assert_non_null(strstr(last, "links"));
	sx_bdev_destroy(copy);

	assert_int_equal(sx_close(mp, fd[0]), 0);
	assert_int_equal(sx_close(mp, fd[1]), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, NULL), 0);
	sx_bdev_destroy(bd);
}

/* Tmpfiles with data survive a crash on the unlinked list; recovery frees them. */
static void test_unlinked_crash(void **state)
{
	static const enum sx_crash_mode modes[] = { SX_CRASH_KEEP, SX_CRASH_DROP, SX_CRASH_TEAR };
	u8 *data = malloc(16 * BS);
	u32 m;

	assert_non_null(data);
	memset(data, 0x5a, 16 * BS);
	sxt_quiet();
	for (m = 0; m < ARRAY_SIZE(modes); m++) {
		struct sx_bdev *img = newfs(), *cbd;
		struct sx_crashdev *cd;
		struct sx_recovery_stats rs;
		struct sx_mount *mp;
		struct sx_extent ext;
		u64 free0, l[8];
		u32 next;
		int fd[4], i, named, shared;

		mp = sxt_mount(img);
		free0 = sx_alloc_free_blocks(mp);
		assert_int_equal(sx_unmount(mp), 0);

		assert_int_equal(sx_crashdev_create(img, 17 + m, &cbd, &cd), 0);
		mp = sxt_mount(cbd);
		for (i = 0; i < 3; i++) {
			assert_int_equal(sx_open_tmpfile(mp, 0600, &fd[i]), 0);
			assert_int_equal(sx_pwrite(mp, fd[i], data, (u64)(i + 1) * 4 * BS, 0),
					 (s64)(i + 1) * 4 * BS);
		}
		/* a named file removed while open */
		assert_int_equal(sx_create(mp, "gone", 0644, &fd[3]), 0);
		assert_int_equal(sx_pwrite(mp, fd[3], data, 5 * BS, BS), 5 * BS);
		assert_int_equal(sx_unlink(mp, "gone"), 0);
		/* and one that stays, with a name */
		assert_int_equal(sx_create(mp, "kept", 0644, &named), 0);
		assert_int_equal(sx_pwrite(mp, named, data, 2 * BS, 0), 2 * BS);
		/* and a tmpfile sharing its blocks (the atomic-update pattern) */
		assert_int_equal(sx_open_tmpfile(mp, 0600, &shared), 0);
		assert_int_equal(sx_clone(mp, shared, named), 0);
		assert_int_equal(sx_fiemap(mp, named, 0, 2 * BS, &ext, 1, &next), 0);
		assert_int_equal(next, 1);
		assert_true(ext.ex_flags & SX_EXTENT_SHARED);
		assert_int_equal(sx_close(mp, named), 0);
		assert_int_equal(sx_sync(mp), 0);
		assert_int_equal(unlinked_list(mp, l, 8), 5);
		sx_crashdev_cut_now(cd, modes[m]);
		sx_unmount(mp);			/* fails: the device is gone */
		sx_bdev_destroy(cbd);

		/* the list was durable: recovery frees all four */
		assert_int_equal(sx_mount(img, NULL, &mp), 0);
		sx_get_recovery_stats(mp, &rs);
		assert_int_equal(rs.rs_unlinked, 5);
		{
			u32 count;

			assert_int_equal(sx_refcount_get(mp, ext.ex_physical / BS, &count), 0);
			assert_int_equal(count, 1);
		}
		assert_int_equal(unlinked_list(mp, l, 8), 0);
		assert_int_equal(icount(mp), 2);
		assert_int_equal(sx_alloc_free_blocks(mp), free0 - 1 - 2);
		assert_int_equal(sx_open(mp, "kept", &named), 0);
		assert_int_equal(sx_close(mp, named), 0);
		assert_int_equal(sx_unmount(mp), 0);
		assert_int_equal(check(img, NULL), 0);
		/* and a second mount finds nothing more to do */
		mp = sxt_mount(img);
		sx_get_recovery_stats(mp, &rs);
		assert_int_equal(rs.rs_unlinked, 0);
		assert_int_equal(sx_unmount(mp), 0);
		sx_bdev_destroy(img);
	}
	free(data);
}

/* A crash while the last close frees a tmpfile: recovery finishes the job. */
static void test_free_interrupted(void **state)
{
	static const char *const sites[] = { "inode_free", "inode_free_last" };
	u8 *data = malloc(64 * BS);
	u32 s;

	assert_non_null(data);
	memset(data, 0xa5, 64 * BS);
	sxt_quiet();
	for (s = 0; s < 2 * ARRAY_SIZE(sites); s++) {
		struct sx_bdev *img = newfs(), *cbd;
		struct sx_crashdev *cd;
		struct sx_recovery_stats rs;
		struct sx_mount *mp;
		u64 free0, l[2];
		int fd;

		mp = sxt_mount(img);
		free0 = sx_alloc_free_blocks(mp);
		assert_int_equal(sx_unmount(mp), 0);
		assert_int_equal(sx_crashdev_create(img, 99 + s, &cbd, &cd), 0);
		mp = sxt_mount(cbd);
		assert_int_equal(sx_open_tmpfile(mp, 0600, &fd), 0);
		/* several extents: a chain of frees */
		assert_int_equal(sx_pwrite(mp, fd, data, 8 * BS, 0), 8 * BS);
		assert_int_equal(sx_pwrite(mp, fd, data, 8 * BS, 20 * BS), 8 * BS);
		assert_int_equal(sx_pwrite(mp, fd, data, 8 * BS, 40 * BS), 8 * BS);
		assert_int_equal(sx_sync(mp), 0);
		if (s < ARRAY_SIZE(sites)) {
			/* the free fails at the site: the inode stays listed */
			assert_int_equal(sx_fault_arm(sites[s], 1, false, -EIO), 0);
			assert_int_equal(sx_close(mp, fd), -EIO);
			sx_fault_disarm_all();
			assert_int_equal(unlinked_list(mp, l, 2), 1);
			assert_int_equal(sx_sync(mp), 0);
		} else {
			/* power goes after the first step of the chain committed */
			sx_crashdev_cut_at_write(cd, 3, SX_CRASH_DROP);
			sx_close(mp, fd);
		}
		sx_crashdev_cut_now(cd, SX_CRASH_DROP);
		sx_unmount(mp);
		sx_bdev_destroy(cbd);

		assert_int_equal(sx_mount(img, NULL, &mp), 0);
		sx_get_recovery_stats(mp, &rs);
		assert_int_equal(rs.rs_unlinked, 1);
		assert_int_equal(unlinked_list(mp, l, 2), 0);
		assert_int_equal(icount(mp), 1);
		assert_int_equal(sx_alloc_free_blocks(mp), free0);
		assert_int_equal(sx_unmount(mp), 0);
		assert_int_equal(check(img, NULL), 0);
		sx_bdev_destroy(img);
	}
	free(data);
}

/*
 * A transaction that changed an inode in memory and is then cancelled puts
 * the in-core inode back as its block is: the size, the times and the
 * fork fields.  The fault loop found it: a clone whose piece grew the
 * destination's size and then failed to log its intents left the size
 * grown over a hole, and a copy-on-write write that failed the same way
 * left the fork's record count changed while its block had its records
 * back, so that later lookups lost the file's last mappings.  Here a
 * commit that fails (the trans_commit site) after a truncate up, and after
 * a write into a hole that maps a block and moves the size, must leave
 * what the file showed before, in memory and after a remount.
 */
static void test_cancel_restores_inode(void **state)
{
	struct sx_bdev *img = newfs();
	struct sx_mount *mp = sxt_mount(img);
	u8 *data = malloc(4 * BS), *back = malloc(8 * BS);
	struct sx_stat st0, st;
	struct sx_inode *ip;
	u64 nrecs;
	int fd;

	assert_non_null(data);
	assert_non_null(back);
	memset(data, 0x5a, 4 * BS);
	assert_int_equal(sx_create(mp, "f", SX_IFREG | 0644, &fd), 0);
	assert_int_equal(sx_pwrite(mp, fd, data, 2 * BS, 0), 2 * BS);
	assert_int_equal(sx_fstat(mp, fd, &st0), 0);
	assert_int_equal(sx_fd_get(mp, fd, &ip), 0);
	nrecs = ip->i_nrecs;

	assert_int_equal(sx_fault_arm("trans_commit", 1, false, -ENOMEM), 0);
	assert_int_equal(sx_truncate(mp, fd, 7 * BS), -ENOMEM);
	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	assert_int_equal(st.st_size, st0.st_size);
	assert_int_equal(st.st_mtime_ns, st0.st_mtime_ns);

	/* a hole, then a block past EOF: map and size in one transaction */
	assert_int_equal(sx_fault_arm("trans_commit", 1, false, -ENOMEM), 0);
	assert_int_equal(sx_pwrite(mp, fd, data, BS, 5 * BS), -ENOMEM);
	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	assert_int_equal(st.st_size, st0.st_size);
	assert_int_equal(st.st_blocks, st0.st_blocks);
	assert_int_equal(ip->i_nrecs, nrecs);
	assert_int_equal(sx_pread(mp, fd, back, 8 * BS, 0), 2 * BS);
	assert_memory_equal(back, data, 2 * BS);
	assert_int_equal(sx_shutdown_state(mp, NULL, 0), 0);

	/* and what the next transaction logs of it is right too */
	assert_int_equal(sx_pwrite(mp, fd, data, BS, 3 * BS), BS);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(img, 0, "after cancelled commits"), 0);
	mp = sxt_mount(img);
	assert_int_equal(sx_open(mp, "f", &fd), 0);
	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	assert_int_equal(st.st_size, 4 * BS);
	assert_int_equal(sx_pread(mp, fd, back, 8 * BS, 0), 4 * BS);
	assert_memory_equal(back, data, 2 * BS);
	assert_memory_equal(back + 3 * BS, data, BS);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(img);
	free(data);
	free(back);
}

/* Allocation on a full filesystem is -ENOSPC and changes nothing. */
static void test_enospc(void **state)
{
	struct sx_bdev *bd = newfs();
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;
	struct sx_inode *ip;
	u64 bno, got = 0, l[2];
	u64 first = 0;
	u32 len;
	int fd, error;

	sxt_quiet();
	/* take every free block */
	for (;;) {
		assert_int_equal(sx_trans_alloc(mp, 4 * sx_alloc_res_bytes(mp), 0, &tp), 0);
		error = sx_alloc_extent(tp, 0, 1, sx_alloc_max_extent(mp), &bno, &len);
		if (error) {
			assert_int_equal(error, -ENOSPC);
			sx_trans_cancel(tp);
			break;
		}
		if (!first)
			first = bno;
		got += len;
		assert_int_equal(sx_trans_commit(tp), 0);
	}
	assert_true(got > 0);
	assert_int_equal(sx_alloc_free_blocks(mp), 0);

	assert_int_equal(sx_trans_alloc(mp, ialloc_res(mp), 0, &tp), 0);
	assert_int_equal(sx_inode_alloc(tp, SX_IFREG | 0644, 0, &ip), -ENOSPC);
	sx_trans_cancel(tp);
	assert_int_equal(sx_open_tmpfile(mp, 0600, &fd), -ENOSPC);
	assert_int_equal(icount(mp), 1);
	assert_int_equal(unlinked_list(mp, l, 2), 0);

	/* one block back: one inode fits */
	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_free_extent(tp, first, 1), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_open_tmpfile(mp, 0600, &fd), 0);
	assert_int_equal(icount(mp), 2);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(icount(mp), 1);
	assert_int_equal(sx_alloc_free_blocks(mp), 1);
	/* an injected failure of the allocation: the same */
	assert_int_equal(sx_fault_arm("inode_alloc", 1, false, -ENOSPC), 0);
	assert_int_equal(sx_open_tmpfile(mp, 0600, &fd), -ENOSPC);
	sx_fault_disarm_all();
	assert_int_equal(sx_alloc_free_blocks(mp), 1);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, NULL), 0);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_iget_remount),
		cmocka_unit_test(test_generation_reuse),
		cmocka_unit_test(test_not_an_inode),
		cmocka_unit_test(test_alloc_cancel),
		cmocka_unit_test(test_inode_verifier),
		cmocka_unit_test(test_fsinfo_verifier),
		cmocka_unit_test(test_check_root),
		cmocka_unit_test(test_inline_records_verified),
		cmocka_unit_test(test_rcu_lookup_threads),
		cmocka_unit_test(test_lock_two),
		cmocka_unit_test(test_unlinked_list),
		cmocka_unit_test(test_unlinked_crash),
		cmocka_unit_test(test_free_interrupted),
		cmocka_unit_test(test_enospc),
		cmocka_unit_test(test_cancel_restores_inode),
	};

	sx_thread_enter();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
