// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Link counts against names: an inode a name leads to must have links.
 * Found by field fuzzing (make fieldfuzz): the root directory's di_nlink
 * set to 0 with its CRC made right was mounted, the first lookup's release
 * of the root freed it as an unlinked inode, and every file went with it;
 * a named file's di_nlink set to 0 was freed at its close under its name.
 * Each test damages one inode, lets the engine work on the image, puts the
 * inode block back as it was and runs the checker: nothing may be lost.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sxtest.h"
#include "sxtext.h"
#include "sxcrash.h"
#include "mount.h"

#define MIB		(1ull << 20)
#define BS		1024u

/* An image with files "a" (8 blocks) and "b"; *@a_ino is a's inode, *@root the root's. */
static struct sx_bdev *build(u64 *a_ino, u64 *root)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	u8 buf[8 * BS];
	struct sx_stat st;
	int a, b;

	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(sx_create(mp, "a", 0644, &a), 0);
	assert_int_equal(sx_pwrite(mp, a, buf, sizeof(buf), 0), (s64)sizeof(buf));
	assert_int_equal(sx_fstat(mp, a, &st), 0);
	*a_ino = st.st_ino;
	*root = mp->m_rootino;
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &b), 0);
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_unmount(mp), 0);
	return bd;
}

/* Set inode @ino's di_nlink to 0 with a good CRC; its block as it was in @saved. */
static void zero_nlink(struct sx_bdev *bd, u64 ino, u8 *saved)
{
	u8 blk[BS];
	struct sx_dinode *di = (struct sx_dinode *)blk;

	sxt_bdev_peek(bd, ino * BS, saved, BS);
	memcpy(blk, saved, BS);
	di->di_nlink = 0;
	di->di_hdr.bh_crc = cpu_to_le32(sx_cksum_skip(blk, BS, offsetof(struct sx_dblk_hdr,
									    bh_crc)));
	sxt_bdev_poke(bd, ino * BS, blk, BS);
}

/* Put the inode block back and check: the image must be as built. */
static void restore_and_check(struct sx_bdev *bd, u64 ino, const u8 *saved)
{
	struct sxt_text r;

	sxt_bdev_poke(bd, ino * BS, saved, BS);
	memset(&r, 0, sizeof(r));
	assert_int_equal(sxc_checker(bd, 0, &r), 0);
	assert_true(sxt_text_has(&r, "note: files: 3 inodes, 8 mapped blocks"));
	sxt_text_free(&r);
}

/* The root directory without links: refused, and nothing is freed. */
static void test_root_without_links(void **state)
{
	struct sx_mount *mp;
	u8 saved[BS];
	u64 a, root;
	struct sx_bdev *bd = build(&a, &root);
	int fd, error;

	zero_nlink(bd, root, saved);
	error = sx_mount(bd, NULL, &mp);
	if (!error) {
		assert_int_equal(sx_open(mp, "a", &fd), -EFSCORRUPTED);
		assert_int_equal(sx_create(mp, "c", 0644, &fd), -EFSCORRUPTED);
		sx_unmount(mp);
	} else {
		assert_int_equal(error, -EFSCORRUPTED);
	}
	restore_and_check(bd, root, saved);
	sx_bdev_destroy(bd);
}

/* A named file without links: its name is refused, and it is not freed. */
static void test_named_file_without_links(void **state)
{
	struct sx_mount *mp;
	u8 saved[BS];
	u64 a, root;
	struct sx_bdev *bd = build(&a, &root);
	int fd;

	zero_nlink(bd, a, saved);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &fd), -EFSCORRUPTED);
	/* again, now from the inode cache */
	assert_int_equal(sx_open(mp, "a", &fd), -EFSCORRUPTED);
	assert_int_equal(sx_open(mp, "b", &fd), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	restore_and_check(bd, a, saved);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_without_links),
		cmocka_unit_test(test_named_file_without_links),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
