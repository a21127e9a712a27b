// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The checker's walk of every file: a filesystem built through the file
 * API is clean, and each kind of damage to who owns which block is found
 * and named: a leaked block, a block mapped twice without a refcount, a
 * refcount that is wrong, a mapped block that is free, wrong link, block
 * and inode counts, overlapping mappings; a damaged pointer hides neither
 * the structure that owns the block it aims at nor that block's data, and
 * makes no free block look like lost metadata; a mapping with a flag no
 * mapping has, a fork root at another level than its inode says, and an
 * unlinked list that reaches a named file, a name of the root directory or
 * of no inode.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include "sxcrash.h"
#include "inode.h"
#include "fsinfo.h"

#define MIB		(1ull << 20)
#define BS		4096u

/* Run the checker: the problems, each of which is one report line. */
static u64 check(struct sx_bdev *bd, struct sxt_text *r)
{
	s64 problems = sxc_checker(bd, 0, r);

	assert_true(problems >= 0);
	assert_int_equal(problems, r->problem_lines);
	return problems;
}

static void put(struct sx_mount *mp, int fd, u64 off, u64 len, u8 byte)
{
	u8 *buf = malloc(len);

	memset(buf, byte, len);
	assert_int_equal(sx_pwrite(mp, fd, buf, len, off), (s64)len);
	free(buf);
}

/*
 * Two files: a with 3 mappings (4 + 1 + 2 blocks), b a clone of a's first
 * 4 blocks.  Returns the device; *@ino_a, *@ino_b their inode numbers.
 */
static struct sx_bdev *build(u64 *ino_a, u64 *ino_b)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_stat st;
	int a, b;

	assert_int_equal(sx_create(mp, "a", 0644, &a), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &b), 0);
	put(mp, a, 0, 4 * BS, 1);
	put(mp, a, 10 * BS, BS, 2);
	put(mp, a, 20 * BS, 2 * BS, 3);
	assert_int_equal(sx_clone_range(mp, b, 0, a, 0, 4 * BS), 0);
	assert_int_equal(sx_fstat(mp, a, &st), 0);
	*ino_a = st.st_ino;
	assert_int_equal(sx_fstat(mp, b, &st), 0);
	*ino_b = st.st_ino;
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_unmount(mp), 0);
	return bd;
}

/* Read block @bno, let @fn change it, stamp a good CRC and write it back. */
static void patch(struct sx_bdev *bd, u64 bno, void (*fn)(u8 *blk, void *arg), void *arg)
{
	struct sx_mount *mp = sxt_mount(bd);
	u8 *blk = malloc(BS);

	assert_int_equal(sx_unmount(mp), 0);
	sxt_bdev_peek(bd, bno * BS, blk, BS);
	fn(blk, arg);
	mp = sxt_mount(bd);
	sx_buf_stamp(mp, blk, le64_to_cpu(((struct sx_dblk_hdr *)blk)->bh_lsn));
	assert_int_equal(sx_unmount(mp), 0);
	sxt_bdev_poke(bd, bno * BS, blk, BS);
	free(blk);
}

static struct sx_dbmap_rec *inline_rec(u8 *blk, u32 i)
{
	return (struct sx_dbmap_rec *)(blk + SX_DINODE_CORE) + i;
}

static void set_nlink(u8 *blk, void *arg)
{
	((struct sx_dinode *)blk)->di_nlink = cpu_to_le32(*(u32 *)arg);
}

static void add_nblocks(u8 *blk, void *arg)
{
	struct sx_dinode *di = (void *)blk;

	di->di_nblocks = cpu_to_le64(le64_to_cpu(di->di_nblocks) + 1);
}

/* Point a's second mapping (1 block) at the first block of its first one. */
static void alias_mapping(u8 *blk, void *arg)
{
	inline_rec(blk, 1)->br_startblock = inline_rec(blk, 0)->br_startblock;
}

/* Make a's third mapping start inside its second. */
static void overlap_mapping(u8 *blk, void *arg)
{
	inline_rec(blk, 2)->br_startoff = inline_rec(blk, 1)->br_startoff;
}

static void bump_icount(u8 *blk, void *arg)
{
	struct sx_dfsinfo *fi = (void *)blk;

	fi->fi_icount = cpu_to_le64(le64_to_cpu(fi->fi_icount) + 1);
}

static void test_clean(void **state)
{
	struct sxt_text r;
	u64 a, b;
	struct sx_bdev *bd = build(&a, &b);

	assert_int_equal(check(bd, &r), 0);
	assert_true(sxt_text_has(&r, "note: files: 3 inodes, 11 mapped blocks"));
	sx_bdev_destroy(bd);
}

static void test_leak(void **state)
{
	struct sxt_text r;
	u64 a, b, bno;
	u32 len;
	struct sx_bdev *bd = build(&a, &b);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 2, 2, &bno, &len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, &r), 2);
	assert_true(sxt_text_has(&r, "is in use but nothing owns it (leaked)"));
	sx_bdev_destroy(bd);
}

static void test_double_mapping(void **state)
{
	struct sxt_text r;
	u64 a, b;
	struct sx_bdev *bd = build(&a, &b);

	patch(bd, a, alias_mapping, NULL);
	check(bd, &r);
	/* the aliased block: 3 users (a twice, b) but a refcount of 2 */
	assert_true(sxt_text_has(&r, "is mapped 3 times, but its refcount is 2"));
	/* and a's old block for that mapping is now owned by nothing */
	assert_true(sxt_text_has(&r, "(leaked)"));
	sx_bdev_destroy(bd);
}

static void test_overlap(void **state)
{
	struct sxt_text r;
	u64 a, b;
	struct sx_bdev *bd = build(&a, &b);

	patch(bd, a, overlap_mapping, NULL);
	check(bd, &r);
	assert_true(sxt_text_has(&r, "overlaps or is out of order"));
	sx_bdev_destroy(bd);
}

static void test_counts(void **state)
{
	struct sxt_text r;
	u32 two = 2;
	u64 a, b;
	struct sx_bdev *bd = build(&a, &b);

	patch(bd, b, set_nlink, &two);
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "has 2 links but 1 names"));
	sx_bdev_destroy(bd);

	bd = build(&a, &b);
	patch(bd, a, add_nblocks, NULL);
	assert_int_equal(check(bd, &r), 1);
	assert_true(sxt_text_has(&r, "counts 8 blocks, but maps 7"));
	sx_bdev_destroy(bd);

	bd = build(&a, &b);
	{
		struct sx_mount *mp = sxt_mount(bd);
		u64 fsino = mp->m_sb.sb_fsinfo;

		assert_int_equal(sx_unmount(mp), 0);
		patch(bd, fsino, bump_icount, NULL);
	}
	check(bd, &r);
	assert_true(sxt_text_has(&r, "fsinfo counts 4 inodes, 3 were found"));
	sx_bdev_destroy(bd);
}

/* A block a file maps, marked free in the bitmap. */
static void test_mapped_but_free(void **state)
{
	struct sxt_text r;
	u64 a, b, bno;
	struct sx_bdev *bd = build(&a, &b);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_extent ext[4];
	struct sx_trans *tp;
	u32 n;
	int fd;

	assert_int_equal(sx_open(mp, "a", &fd), 0);
	assert_int_equal(sx_fiemap(mp, fd, 10 * BS, BS, ext, 4, &n), 0);
	assert_int_equal(n, 1);
	bno = ext[0].ex_physical / BS;
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_free_extent(tp, bno, 1), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_unmount(mp), 0);
	check(bd, &r);
	assert_true(sxt_text_has(&r, "is free but mapped"));
	sx_bdev_destroy(bd);
}

/* Make a's fork a B+tree whose root is block *@arg (a damaged pointer). */
static void broot_at(u8 *blk, void *arg)
{
	struct sx_dinode *di = (void *)blk;

	/* the verifier wants a B+tree fork to hold records: keep a's count */
	di->di_format = cpu_to_le16(SX_DIF_BTREE);
	di->di_broot = cpu_to_le64(*(u64 *)arg);
	di->di_blevel = 0;
}

/* The root of the refcount tree and the first block b maps. */
static void roots(struct sx_bdev *bd, u64 *refc_root, u64 *b_block)
{
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_extent ext[1];
	u8 *blk = malloc(BS);
	u32 n;
	int fd;

	sxt_bdev_peek(bd, mp->m_sb.sb_fsinfo * BS, blk, BS);
	*refc_root = le64_to_cpu(((struct sx_dfsinfo *)blk)->fi_refc_root);
	assert_int_not_equal(*refc_root, 0);
	assert_int_equal(sx_open(mp, "b", &fd), 0);
	assert_int_equal(sx_fiemap(mp, fd, 0, BS, ext, 1, &n), 0);
	assert_int_equal(n, 1);
	*b_block = ext[0].ex_physical / BS;
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	free(blk);
}

/*
 * A damaged fork root aimed at the refcount tree's root: the file's walk
 * reaches it first and finds no bmbt block there, but the refcount tree
 * still owns it and is walked, so the refcounts left without their second
 * owner are reported (they were hidden behind "already used as
 * metadata" when a block that failed to verify kept its claim).
 */
static void test_bad_pointer_to_refcbt(void **state)
{
	struct sxt_text r;
	u64 a, b, root, data;
	struct sx_bdev *bd = build(&a, &b);

	roots(bd, &root, &data);
	patch(bd, a, broot_at, &root);
	check(bd, &r);
	assert_true(sxt_text_has(&r, "is bad"));
	assert_false(sxt_text_has(&r, "already used as metadata"));
	assert_true(sxt_text_has(&r, "is mapped 1 time, but has a refcount record of 2"));
	sx_bdev_destroy(bd);
}

/*
 * A damaged fork root aimed at a block another file maps: the pointer is
 * reported as bad, and the block is that file's data, not metadata also
 * mapped (which would make the block's owner look cross-linked).
 */
static void test_bad_pointer_to_data(void **state)
{
	struct sxt_text r;
	u64 a, b, root, data;
	struct sx_bdev *bd = build(&a, &b);

	roots(bd, &root, &data);
	patch(bd, a, broot_at, &data);
	check(bd, &r);
	assert_true(sxt_text_has(&r, "is bad"));
	assert_false(sxt_text_has(&r, "is metadata and also mapped"));
	sx_bdev_destroy(bd);
}

/*
 * A damaged fork root aimed at a free block: the pointer is reported as
 * bad, and the free block is not called metadata the bitmap lost.
 */
static void test_bad_pointer_to_free(void **state)
{
	struct sxt_text r;
	u64 a, b, free_blk = 16 * MIB / BS - 1;
	struct sx_bdev *bd = build(&a, &b);

	patch(bd, a, broot_at, &free_blk);
	check(bd, &r);
	assert_true(sxt_text_has(&r, "is bad"));
	assert_false(sxt_text_has(&r, "is free but holds metadata"));
	sx_bdev_destroy(bd);
}

/* Give a's second mapping a flag no mapping has. */
static void bad_flag_mapping(u8 *blk, void *arg)
{
	inline_rec(blk, 1)->br_flags = cpu_to_le32(0x80);
}

static void bump_blevel(u8 *blk, void *arg)
{
	struct sx_dinode *di = (void *)blk;

	di->di_blevel = cpu_to_le32(le32_to_cpu(di->di_blevel) + 1);
}

/*
 * A mapping the engine can never have written (an unknown flag) is named
 * with its place and not counted: the block it held is then owned by
 * nothing.
 */
static void test_impossible_mapping(void **state)
{
	struct sxt_text r;
	char want[128];
	u64 a, b, bno;
	struct sx_bdev *bd = build(&a, &b);

	sxt_bdev_peek(bd, a * BS + SX_DINODE_CORE + sizeof(struct sx_dbmap_rec) +
		      offsetof(struct sx_dbmap_rec, br_startblock), &bno, sizeof(bno));
	bno = le64_to_cpu(bno);
	patch(bd, a, bad_flag_mapping, NULL);
	assert_int_equal(check(bd, &r), 3);
	snprintf(want, sizeof(want), "inode %llu maps [10, +1) at %llu, which is impossible",
		 (unsigned long long)a, (unsigned long long)bno);
	assert_true(sxt_text_has(&r, want));
	snprintf(want, sizeof(want), "block %llu is in use but nothing owns it (leaked)",
		 (unsigned long long)bno);
	assert_true(sxt_text_has(&r, want));
	sx_bdev_destroy(bd);
}

/*
 * A B+tree fork whose inode says it is one level taller than its root
 * block: the root is named with the level it has and the one expected.
 */
static void test_btree_level(void **state)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_stat st;
	struct sxt_text r;
	char want[160];
	u16 fmt;
	u64 off, ino, root;
	u32 level;
	int fd;

	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	for (off = 0; off < 512; off += 2)
		put(mp, fd, off * BS, BS, 7);
	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	ino = st.st_ino;
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(check(bd, &r), 0);
	sxt_bdev_peek(bd, ino * BS + offsetof(struct sx_dinode, di_format), &fmt, sizeof(fmt));
	assert_int_equal(le16_to_cpu(fmt), SX_DIF_BTREE);
	sxt_bdev_peek(bd, ino * BS + offsetof(struct sx_dinode, di_broot), &root, sizeof(root));
	root = le64_to_cpu(root);
	sxt_bdev_peek(bd, ino * BS + offsetof(struct sx_dinode, di_blevel), &level, sizeof(level));
	level = le32_to_cpu(level);
	patch(bd, ino, bump_blevel, NULL);
	/* (the file's 256 blocks are then owned by nothing: more than are listed) */
	assert_true(sxc_checker(bd, 0, &r) > 256);
	snprintf(want, sizeof(want), "block %llu (owner %llu) is at level %u, expected %u",
		 (unsigned long long)root, (unsigned long long)ino, level, level + 1);
	assert_true(sxt_text_has(&r, want));
	sx_bdev_destroy(bd);
}

static void set_unlinked_head(u8 *blk, void *arg)
{
	((struct sx_dfsinfo *)blk)->fi_unlinked = cpu_to_le64(*(u64 *)arg);
}

static void set_next_unlinked(u8 *blk, void *arg)
{
	((struct sx_dinode *)blk)->di_next_unlinked = cpu_to_le64(*(u64 *)arg);
}

/*
 * The unlinked list is for files with no name: a list that starts at a
 * named file reaches it a second time, and a named file that links to the
 * list is named with what it links to.
 */
static void test_unlinked_list_damage(void **state)
{
	struct sxt_text r;
	char want[128];
	u64 a, b, fsino, root;
	struct sx_bdev *bd = build(&a, &b);
	struct sx_mount *mp = sxt_mount(bd);

	fsino = mp->m_sb.sb_fsinfo;
	assert_int_equal(sx_unmount(mp), 0);
	patch(bd, fsino, set_unlinked_head, &a);
	check(bd, &r);
	snprintf(want, sizeof(want),
		 "unlinked list: inode %llu is reached twice (a cycle, or it also has a name)",
		 (unsigned long long)a);
	assert_true(sxt_text_has(&r, want));
	snprintf(want, sizeof(want), "unlinked list: inode %llu has 1 links", (unsigned long long)a);
	assert_true(sxt_text_has(&r, want));
	/* the walk stops there: a is counted once */
	assert_false(sxt_text_has(&r, "fsinfo counts"));
	sx_bdev_destroy(bd);

	bd = build(&a, &b);
	patch(bd, a, set_next_unlinked, &b);
	check(bd, &r);
	snprintf(want, sizeof(want), "inode %llu has a name but links to %llu on the unlinked list",
		 (unsigned long long)a, (unsigned long long)b);
	assert_true(sxt_text_has(&r, want));
	sx_bdev_destroy(bd);

	/* a list that loops (a to b to a): its walk stops at the inode count */
	bd = build(&a, &b);
	patch(bd, a, set_next_unlinked, &b);
	patch(bd, b, set_next_unlinked, &a);
	patch(bd, fsino, set_unlinked_head, &a);
	check(bd, &r);
	assert_true(sxt_text_has(&r, "unlinked list: more entries than the 3 inodes in use (a cycle?)"));
	sx_bdev_destroy(bd);

	/* the root directory on the list */
	bd = build(&a, &b);
	mp = sxt_mount(bd);
	root = mp->m_rootino;
	assert_int_equal(sx_unmount(mp), 0);
	patch(bd, fsino, set_unlinked_head, &root);
	check(bd, &r);
	snprintf(want, sizeof(want), "unlinked list: holds the root inode %llu",
		 (unsigned long long)root);
	assert_true(sxt_text_has(&r, want));
	sx_bdev_destroy(bd);
}

static void set_dirent_ino(u8 *blk, void *arg)
{
	((struct sx_ddir_rec *)(blk + SX_DINODE_CORE))->de_ino = cpu_to_le64(*(u64 *)arg);
}

/*
 * A name that leads to the root directory or off the data area is named,
 * and the file it named is then missing from the counts.
 */
static void test_impossible_names(void **state)
{
	struct sxt_text r;
	u64 a, b, root, ino;
	struct sx_bdev *bd = build(&a, &b);
	struct sx_mount *mp = sxt_mount(bd);

	root = mp->m_rootino;
	assert_int_equal(sx_unmount(mp), 0);
	patch(bd, root, set_dirent_ino, &root);
	check(bd, &r);
	assert_true(sxt_text_has(&r, "the root directory names itself"));
	assert_true(sxt_text_has(&r, "fsinfo counts 3 inodes, 2 were found"));
	sx_bdev_destroy(bd);

	bd = build(&a, &b);
	ino = 5;
	patch(bd, root, set_dirent_ino, &ino);
	check(bd, &r);
	assert_true(sxt_text_has(&r, "inode number 5 is not on the data area"));
	assert_true(sxt_text_has(&r, "fsinfo counts 3 inodes, 2 were found"));
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_leak),
		cmocka_unit_test(test_double_mapping),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_mapped_but_free),
		cmocka_unit_test(test_bad_pointer_to_refcbt),
		cmocka_unit_test(test_bad_pointer_to_data),
		cmocka_unit_test(test_bad_pointer_to_free),
		cmocka_unit_test(test_impossible_mapping),
		cmocka_unit_test(test_btree_level),
		cmocka_unit_test(test_unlinked_list_damage),
		cmocka_unit_test(test_impossible_names),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
