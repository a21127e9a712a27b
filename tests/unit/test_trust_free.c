// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Freeing file data must not free metadata.  Found by field fuzzing (make
 * fieldfuzz): an extent record's br_blockcount one higher, with its CRC
 * made right, made the extent cover the file's own B+tree leaf; the next
 * unmap freed the leaf, and the allocator could hand it out as data.
 * Here a file's one-block extent is made to cover the next file's inode,
 * which is open (so the mount knows it at no cost), and the file is
 * truncated: the free must fail, and the inode must stay in use.
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

#define MIB		(1ull << 20)
#define BS		1024u

/* Make inode @ino's first inline extent one block longer, with a good CRC. */
static void grow_first_extent(struct sx_bdev *bd, u64 ino)
{
	u8 blk[BS];
	struct sx_dbmap_rec *rec = (struct sx_dbmap_rec *)(blk + SX_DINODE_CORE);

	sxt_bdev_peek(bd, ino * BS, blk, BS);
	rec->br_blockcount = cpu_to_le32(le32_to_cpu(rec->br_blockcount) + 1);
	((struct sx_dblk_hdr *)blk)->bh_crc =
		cpu_to_le32(sx_cksum_skip(blk, BS, offsetof(struct sx_dblk_hdr, bh_crc)));
	sxt_bdev_poke(bd, ino * BS, blk, BS);
}

static void test_free_of_data_covering_an_inode(void **state)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, BS, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_extent ext[1];
	struct sx_stat st;
	struct sxt_text r;
	u8 buf[BS];
	u64 a_ino, a_blk, b_ino;
	u32 n;
	int a, b, error;

	memset(buf, 0x5a, sizeof(buf));
	assert_int_equal(sx_create(mp, "a", 0644, &a), 0);
	assert_int_equal(sx_pwrite(mp, a, buf, BS, 0), (s64)BS);
	assert_int_equal(sx_fstat(mp, a, &st), 0);
	a_ino = st.st_ino;
	assert_int_equal(sx_fiemap(mp, a, 0, BS, ext, 1, &n), 0);
	assert_int_equal(n, 1);
	a_blk = ext[0].ex_physical / BS;
	assert_int_equal(sx_close(mp, a), 0);
	assert_int_equal(sx_create(mp, "b", 0644, &b), 0);
	assert_int_equal(sx_fstat(mp, b, &st), 0);
	b_ino = st.st_ino;
	assert_int_equal(sx_close(mp, b), 0);
	assert_int_equal(sx_unmount(mp), 0);
	/* the allocator goes up from the last block it gave out */
	assert_int_equal(b_ino, a_blk + 1);

	grow_first_extent(bd, a_ino);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "b", &b), 0);
	assert_int_equal(sx_open(mp, "a", &a), 0);
	error = sx_truncate(mp, a, 0);
	assert_int_equal(error, -EFSCORRUPTED);
	sx_close(mp, a);
	sx_close(mp, b);
	sx_unmount(mp);

	/* b's inode is still in use: only a's damaged extent is reported */
	memset(&r, 0, sizeof(r));
	assert_true(sxc_checker(bd, 0, &r) > 0);
	assert_false(sxt_text_has(&r, "is free but holds metadata"));
	assert_true(sxt_text_has(&r, "is metadata and also mapped"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_free_of_data_covering_an_inode),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
