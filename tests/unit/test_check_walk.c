// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The checker's walk of every file on records no block verifier judges:
 * the mappings and directory entries held inline in an inode.  Each kind
 * of damage is named exactly: a mapping of no blocks, of more blocks than
 * a mapping holds, past the end of the filesystem or running off it; a
 * file whose mappings are out of order twice (named once); entries whose
 * name and hash disagree or that are out of hash order; a second
 * directory; a name of a metadata block, and a fork root at one; a
 * metadata block mapped twice.
 * Then how the verdicts on blocks are given: at most 20 listed unless
 * every block is asked for, and, when the bitmap cannot be read, the
 * refcounts still judged but not the bitmap's bits; an unlinked list that
 * starts at a block of data, in the fsinfo check and in the walk, and a
 * root inode that is a file without links.  Last, every allocation of a
 * walk through a B+tree fork fails in turn.
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
#define NBLOCKS		(16 * MIB / BS)

/* Run the checker with @flags: the problems, each of which is one report line. */
static u64 check_flags(struct sx_bdev *bd, u32 flags, struct sxt_text *r)
{
	s64 problems = sxc_checker(bd, flags, r);

	assert_true(problems >= 0);
	assert_int_equal(problems, r->problem_lines);
	return problems;
}

static u64 check(struct sx_bdev *bd, struct sxt_text *r)
{
	return check_flags(bd, 0, r);
}

/* Assert that @r holds the line made of @fmt. */
static void __attribute__((format(printf, 2, 3)))
has(const struct sxt_text *r, const char *fmt, ...)
{
	char want[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	if (!sxt_text_has(r, want))
		fail_msg("report lacks \"%s\":\n%s", want, r->text ? r->text : "");
}

/* How many times @s occurs in @r. */
static u32 count(const struct sxt_text *r, const char *s)
{
	const char *p = r->text;
	u32 n = 0;

	while (p && (p = strstr(p, s))) {
		n++;
		p += strlen(s);
	}
	return n;
}

static void put(struct sx_mount *mp, int fd, u64 off, u64 len, u8 byte)
{
	u8 *buf = malloc(len);

	memset(buf, byte, len);
	assert_int_equal(sx_pwrite(mp, fd, buf, len, off), (s64)len);
	free(buf);
}

/* What build() made. */
struct fs {
	struct sx_bdev	*bd;
	u64		a, b, root, fsinfo;
	u64		a_blk[3];	/* where a's three mappings start */
};

/*
 * Two files named "a" and "b" in the root directory: a with 3 inline
 * mappings (4 blocks at file block 0, 1 at 10, 2 at 20), b a clone of a's
 * first 4 blocks.
 */
static void build(struct fs *fs)
{
	struct sx_mount *mp;
	struct sx_stat st;
	int a, b, i;

	fs->bd = sxt_memfs(16 * MIB, BS, 0);
	mp = sxt_mount(fs->bd);
	assert_int_equal(sx_create(mp, "a", 0644, &a), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &b), 0);
	put(mp, a, 0, 4 * BS, 1);
	put(mp, a, 10 * BS, BS, 2);
	put(mp, a, 20 * BS, 2 * BS, 3);
	assert_int_equal(sx_clone_range(mp, b, 0, a, 0, 4 * BS), 0);
	assert_int_equal(sx_fstat(mp, a, &st), 0);
	fs->a = st.st_ino;
	assert_int_equal(sx_fstat(mp, b, &st), 0);
	fs->b = st.st_ino;
	fs->root = mp->m_rootino;
	fs->fsinfo = mp->m_sb.sb_fsinfo;
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_unmount(mp), 0);
	for (i = 0; i < 3; i++) {
		__le64 v;

		sxt_bdev_peek(fs->bd, fs->a * BS + SX_DINODE_CORE +
			      i * sizeof(struct sx_dbmap_rec) +
			      offsetof(struct sx_dbmap_rec, br_startblock), &v, sizeof(v));
		fs->a_blk[i] = le64_to_cpu(v);
	}
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

static struct sx_dbmap_rec *map_rec(u8 *blk, u32 i)
{
	return (struct sx_dbmap_rec *)(blk + SX_DINODE_CORE) + i;
}

static struct sx_ddir_rec *dir_rec(u8 *blk, u32 i)
{
	return (struct sx_ddir_rec *)(blk + SX_DINODE_CORE) + i;
}

/* A change to a's second mapping (1 block at file block 10). */
struct map_change {
	u64	start;
	u32	len;
};

static void change_map1(u8 *blk, void *arg)
{
	const struct map_change *c = arg;

	map_rec(blk, 1)->br_startblock = cpu_to_le64(c->start);
	map_rec(blk, 1)->br_blockcount = cpu_to_le32(c->len);
}

/*
 * Mappings no verifier sees, each impossible: named with the file, its
 * place and its blocks, and not counted, so the block the mapping had is
 * owned by nothing and the file's count is one more than what it maps.
 */
static void test_impossible_inline_mappings(void **state)
{
	struct fs fs;
	struct sxt_text r;
	struct map_change c;
	int i;

	for (i = 0; i < 4; i++) {
		build(&fs);
		switch (i) {
		case 0:		/* no blocks */
			c.start = fs.a_blk[1];
			c.len = 0;
			break;
		case 1:		/* more than a mapping may hold */
			c.start = fs.a_blk[1];
			c.len = SX_BMAP_MAXLEN + 1;
			break;
		case 2:		/* past the end */
			c.start = NBLOCKS;
			c.len = 1;
			break;
		default:	/* from the last block, off the end */
			c.start = NBLOCKS - 1;
			c.len = 2;
			break;
		}
		patch(fs.bd, fs.a, change_map1, &c);
		assert_int_equal(check(fs.bd, &r), 3);
		has(&r, "problem: inode %llu maps [10, +%u) at %llu, which is impossible\n",
		    (unsigned long long)fs.a, c.len, (unsigned long long)c.start);
		has(&r, "problem: block %llu is in use but nothing owns it (leaked)\n",
		    (unsigned long long)fs.a_blk[1]);
		has(&r, "problem: inode %llu counts 7 blocks, but maps 6 and has 0 B+tree blocks\n",
		    (unsigned long long)fs.a);
		sxt_text_free(&r);
		sx_bdev_destroy(fs.bd);
	}
}

/* Put a's second and third mappings at file block 0, where the first is. */
static void overlap_twice(u8 *blk, void *arg)
{
	map_rec(blk, 1)->br_startoff = map_rec(blk, 0)->br_startoff;
	map_rec(blk, 2)->br_startoff = map_rec(blk, 0)->br_startoff;
}

/* A fork out of order is named once, however many mappings are out of place. */
static void test_unsorted_named_once(void **state)
{
	struct fs fs;
	struct sxt_text r;

	build(&fs);
	patch(fs.bd, fs.a, overlap_twice, NULL);
	assert_int_equal(check(fs.bd, &r), 1);
	has(&r, "problem: inode %llu: mapping at file block 0 overlaps or is out of order\n",
	    (unsigned long long)fs.a);
	assert_int_equal(count(&r, "overlaps or is out of order"), 1);
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

static void entry0_namelen(u8 *blk, void *arg)
{
	dir_rec(blk, 0)->de_namelen = cpu_to_le16(*(u16 *)arg);
}

static void swap_entries(u8 *blk, void *arg)
{
	struct sx_ddir_rec t = *dir_rec(blk, 0);

	*dir_rec(blk, 0) = *dir_rec(blk, 1);
	*dir_rec(blk, 1) = t;
}

/*
 * The root directory's inline entries: a name of no bytes or longer than
 * a name may be does not agree with its hash; entries swapped are out of
 * hash order.  The files are still reached by them, so nothing else is
 * wrong.
 */
static void test_inline_entries(void **state)
{
	static const u16 lens[] = { 0, SX_NAME_MAX + 1 };
	struct fs fs;
	struct sxt_text r;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		build(&fs);
		patch(fs.bd, fs.root, entry0_namelen, (void *)&lens[i]);
		assert_int_equal(check(fs.bd, &r), 1);
		has(&r, "problem: directory %llu: an entry's name and hash do not agree\n",
		    (unsigned long long)fs.root);
		sxt_text_free(&r);
		sx_bdev_destroy(fs.bd);
	}

	build(&fs);
	patch(fs.bd, fs.root, swap_entries, NULL);
	assert_int_equal(check(fs.bd, &r), 1);
	has(&r, "problem: directory %llu: entries out of hash order\n",
	    (unsigned long long)fs.root);
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

static void make_dir(u8 *blk, void *arg)
{
	((struct sx_dinode *)blk)->di_mode = cpu_to_le16(SX_IFDIR | 0755);
}

/*
 * A file that became a directory: the root is the only one there can be.
 * Its mapping is then not walked, so the blocks it shared with a have two
 * refcounts and one user.
 */
static void test_second_directory(void **state)
{
	struct fs fs;
	struct sxt_text r;
	u32 i;

	build(&fs);
	patch(fs.bd, fs.b, make_dir, NULL);
	assert_int_equal(check(fs.bd, &r), 5);
	has(&r, "problem: inode %llu: a directory where none can be\n", (unsigned long long)fs.b);
	for (i = 0; i < 4; i++)
		has(&r, "problem: block %llu is mapped 1 time, but has a refcount record of 2\n",
		    (unsigned long long)(fs.a_blk[0] + i));
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

static void entry0_ino(u8 *blk, void *arg)
{
	dir_rec(blk, 0)->de_ino = cpu_to_le64(*(u64 *)arg);
}

/*
 * A name of the fsinfo block: that block is fsinfo's, so the name cannot
 * claim it as an inode, and the file it named is missing from the count.
 */
static void test_name_of_metadata(void **state)
{
	struct fs fs;
	struct sxt_text r;

	build(&fs);
	patch(fs.bd, fs.root, entry0_ino, &fs.fsinfo);
	check(fs.bd, &r);
	has(&r, "problem: inode block %llu (owner %llu) is already used as metadata\n",
	    (unsigned long long)fs.fsinfo, (unsigned long long)fs.fsinfo);
	has(&r, "problem: fsinfo counts 3 inodes, 2 were found\n");
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

/* a's second and third mappings both at b's inode block. */
static void map_onto_inode(u8 *blk, void *arg)
{
	u64 ino = *(u64 *)arg;

	map_rec(blk, 1)->br_startblock = cpu_to_le64(ino);
	map_rec(blk, 2)->br_startblock = cpu_to_le64(ino);
	map_rec(blk, 2)->br_blockcount = cpu_to_le32(1);
}

/* An inode block mapped by two mappings: metadata mapped twice, without a refcount. */
static void test_metadata_mapped_twice(void **state)
{
	struct fs fs;
	struct sxt_text r;

	build(&fs);
	patch(fs.bd, fs.a, map_onto_inode, &fs.b);
	check(fs.bd, &r);
	has(&r, "problem: block %llu is metadata and also mapped 2 times\n",
	    (unsigned long long)fs.b);
	has(&r, "problem: block %llu is mapped 2 times, but its refcount is 1\n",
	    (unsigned long long)fs.b);
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

/*
 * 30 blocks allocated and owned by nothing: 20 are listed and the rest
 * counted in a note; with SX_CHECK_ALL_BLOCKS all 30 are listed.
 */
static void test_block_detail(void **state)
{
	struct fs fs;
	struct sxt_text r;
	struct sx_mount *mp;
	struct sx_trans *tp;
	u64 bno;
	u32 len;

	build(&fs);
	mp = sxt_mount(fs.bd);
	assert_int_equal(sx_trans_alloc(mp, sx_alloc_res_bytes(mp), 0, &tp), 0);
	assert_int_equal(sx_alloc_extent(tp, 0, 30, 30, &bno, &len), 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	assert_int_equal(sx_unmount(mp), 0);

	/* the ten not listed are counted all the same */
	assert_int_equal(sxc_checker(fs.bd, 0, &r), 30);
	assert_int_equal(r.problem_lines, 20);
	assert_int_equal(count(&r, "(leaked)"), 20);
	has(&r, "note: 10 more problem blocks not listed\n");
	sxt_text_free(&r);

	assert_int_equal(check_flags(fs.bd, SX_CHECK_ALL_BLOCKS, &r), 30);
	assert_int_equal(count(&r, "(leaked)"), 30);
	has(&r, "problem: block %llu is in use but nothing owns it (leaked)\n",
	    (unsigned long long)(bno + 29));
	assert_false(sxt_text_has(&r, "more problem blocks not listed"));
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

/* Point a's second mapping at the first block of its first one. */
static void alias_mapping(u8 *blk, void *arg)
{
	map_rec(blk, 1)->br_startblock = map_rec(blk, 0)->br_startblock;
}

/*
 * The bitmap block fails its CRC, and a mapping is aliased: the count of
 * users is still judged against the refcounts, but no block is called
 * leaked or free, since the bitmap's bits cannot be trusted.
 */
static void test_unjudged_bitmap(void **state)
{
	struct fs fs;
	struct sxt_text r;
	struct sx_sb sb;
	u8 byte;

	build(&fs);
	patch(fs.bd, fs.a, alias_mapping, NULL);
	assert_int_equal(sx_sb_read(NULL, fs.bd, &sb, NULL), 0);
	sxt_bdev_peek(fs.bd, sb.sb_bmapstart * BS + BS - 1, &byte, 1);
	byte ^= 0x80;
	sxt_bdev_poke(fs.bd, sb.sb_bmapstart * BS + BS - 1, &byte, 1);

	check(fs.bd, &r);
	has(&r, "problem: bitmap block 0 (block %llu): bad CRC: stored 0x",
	    (unsigned long long)sb.sb_bmapstart);
	has(&r, "problem: block %llu is mapped 3 times, but its refcount is 2\n",
	    (unsigned long long)fs.a_blk[0]);
	assert_false(sxt_text_has(&r, "(leaked)"));
	assert_false(sxt_text_has(&r, "is free but"));
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

static void unlinked_head(u8 *blk, void *arg)
{
	((struct sx_dfsinfo *)blk)->fi_unlinked = cpu_to_le64(*(u64 *)arg);
}

/*
 * An unlinked list that starts at a block of file data: the fsinfo check
 * (also run alone, with SX_CHECK_SPACE_ONLY) names the entry that fails
 * to verify as an inode and stops there; the walk of the files says the
 * same of the inode it cannot read.
 */
static void test_unlinked_entry_not_an_inode(void **state)
{
	struct fs fs;
	struct sxt_text r;

	build(&fs);
	patch(fs.bd, fs.fsinfo, unlinked_head, &fs.a_blk[2]);
	assert_int_equal(check_flags(fs.bd, SX_CHECK_SPACE_ONLY, &r), 1);
	has(&r, "problem: unlinked list entry 1 (block %llu): bad CRC (-74)\n",
	    (unsigned long long)fs.a_blk[2]);
	has(&r, "note: fsinfo: root inode %llu, 3 inodes in use, 1 on the unlinked list\n",
	    (unsigned long long)fs.root);
	sxt_text_free(&r);

	/* and the block stays a's data, not metadata also mapped */
	assert_int_equal(check(fs.bd, &r), 2);
	has(&r, "problem: unlinked list entry 1 (block %llu): bad CRC (-74)\n",
	    (unsigned long long)fs.a_blk[2]);
	has(&r, "problem: inode block %llu (owner %llu) is bad: bad CRC (-74)\n",
	    (unsigned long long)fs.a_blk[2], (unsigned long long)fs.a_blk[2]);
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

/* Make a's fork a B+tree whose root is block *@arg. */
static void broot_at(u8 *blk, void *arg)
{
	struct sx_dinode *di = (void *)blk;

	di->di_format = cpu_to_le16(SX_DIF_BTREE);
	di->di_broot = cpu_to_le64(*(u64 *)arg);
	di->di_blevel = 0;
}

/*
 * A fork root aimed at the fsinfo block, which the walk claimed first:
 * the fork's root cannot be claimed again, the walk of a stops there, and
 * what a mapped is then owned by nothing (or one user short of its
 * refcount, where b shares it).
 */
static void test_fork_root_at_fsinfo(void **state)
{
	struct fs fs;
	struct sxt_text r;

	build(&fs);
	patch(fs.bd, fs.a, broot_at, &fs.fsinfo);
	check(fs.bd, &r);
	has(&r, "problem: bmbt block %llu (owner %llu) is already used as metadata\n",
	    (unsigned long long)fs.fsinfo, (unsigned long long)fs.a);
	has(&r, "problem: block %llu is mapped 1 time, but has a refcount record of 2\n",
	    (unsigned long long)fs.a_blk[0]);
	has(&r, "problem: block %llu is in use but nothing owns it (leaked)\n",
	    (unsigned long long)fs.a_blk[1]);
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

static void root_unlinked_file(u8 *blk, void *arg)
{
	struct sx_dinode *di = (void *)blk;

	di->di_mode = cpu_to_le16(SX_IFREG | 0644);
	di->di_nlink = 0;
}

/*
 * The root inode made a regular file with no links, which the inode
 * verifier allows of a file: the fsinfo check names both faults.
 */
static void test_root_not_a_directory(void **state)
{
	struct fs fs;
	struct sxt_text r;

	build(&fs);
	patch(fs.bd, fs.root, root_unlinked_file, NULL);
	assert_int_equal(check_flags(fs.bd, SX_CHECK_SPACE_ONLY, &r), 2);
	has(&r, "problem: root inode %llu is not a directory (mode 0100644)\n",
	    (unsigned long long)fs.root);
	has(&r, "problem: root inode %llu has no links\n", (unsigned long long)fs.root);
	sxt_text_free(&r);
	sx_bdev_destroy(fs.bd);
}

/*
 * A file whose fork is a B+tree of two levels: each allocation of the
 * checker fails in turn, and each time it returns -ENOMEM, reports no
 * damage it did not look at, and keeps nothing it allocated.
 */
static void test_enomem_btree_walk(void **state)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_alloc_stats a0, a1;
	struct sxt_text r;
	bool hit = true;
	u64 off, n;
	u32 fails = 0;
	s64 ret;
	int fd;

	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	for (off = 0; off < 512; off += 2)
		put(mp, fd, off * BS, BS, 7);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	/* the inodes unmount let go are freed after a grace period: not during the count */
	sx_rcu_barrier();
	assert_int_equal(check(bd, &r), 0);
	sxt_text_free(&r);
	for (n = 1; hit; n++) {
		assert_true(n < 10000);
		sx_alloc_get_stats(&a0);
		sx_alloc_fail(n, false);
		memset(&r, 0, sizeof(r));
		ret = sxc_checker(bd, 0, &r);
		sx_alloc_fail(0, false);
		sx_alloc_get_stats(&a1);
		hit = a1.as_failed != a0.as_failed;
		assert_int_equal(ret, hit ? -ENOMEM : 0);
		if (r.problem_lines) {
			assert_int_equal(r.problem_lines, 1);
			assert_true(sxt_text_has(&r, "out of memory (-12)"));
		}
		assert_int_equal(a1.as_live, a0.as_live);
		fails += hit;
		sxt_text_free(&r);
	}
	/* the walk's copies of a node's pointers and of each leaf's records too */
	assert_true(fails > 5);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_impossible_inline_mappings),
		cmocka_unit_test(test_unsorted_named_once),
		cmocka_unit_test(test_inline_entries),
		cmocka_unit_test(test_second_directory),
		cmocka_unit_test(test_name_of_metadata),
		cmocka_unit_test(test_metadata_mapped_twice),
		cmocka_unit_test(test_block_detail),
		cmocka_unit_test(test_unjudged_bitmap),
		cmocka_unit_test(test_unlinked_entry_not_an_inode),
		cmocka_unit_test(test_root_not_a_directory),
		cmocka_unit_test(test_fork_root_at_fsinfo),
		cmocka_unit_test(test_enomem_btree_walk),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
