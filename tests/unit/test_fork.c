// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Inode fork tests, on a test record type laid out as an extent record:
 * the inline <-> B+tree transition in both directions a hundred times over
 * (insert to the inline maximum + 1, delete to half of it), contents,
 * format, block count and the on-disk inode checked after every step, and
 * after unmount/mount and after a crash and recovery; lookups, update and
 * free_all on both forms.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include "sxtest.h"
#include "btree.h"
#include "fork.h"
#include "inode.h"

#define MIB		(1ull << 20)
#define TFK_MAGIC	0x4b465854u	/* "TXFK" */

/*
 * A test record laid out as an extent record, and a valid one: the inode
 * block verifier checks a regular file's inline records as extents.  Its
 * length ties the key and the block together, which the test's own
 * verifier checks.
 */
struct frec {
	__le64	key;
	__le64	blk;
	__le32	len;
	__le32	flags;
};

/* Blocks of the data area the records point at: [tfk_base, +tfk_span) */
static u64 tfk_base, tfk_span;

/* Records name blocks of @mp's data area. */
static void tfk_setup(struct sx_mount *mp)
{
	tfk_base = mp->m_sb.sb_datastart;
	tfk_span = mp->m_sb.sb_dblocks - tfk_base - 64;
}

static u32 fchk(u64 key, u64 blk)
{
	return 1 + (u32)(((key * 31 + blk) ^ 0x5a5a5a5a5a5a5a5aull) % 64);
}

static u64 frec_key(const void *rec)
{
	return le64_to_cpu(((const struct frec *)rec)->key);
}

static int frec_verify(struct sx_mount *mp, const void *rec)
{
	const struct frec *r = rec;

	if (SX_IS_CORRUPT(mp, le32_to_cpu(r->len) !=
			  fchk(le64_to_cpu(r->key), le64_to_cpu(r->blk))) ||
	    SX_IS_CORRUPT(mp, r->flags != 0))
		return -EFSCORRUPTED;
	return 0;
}

static const struct sx_btree_ops tfk_btree_ops;

static int tfk_verify(struct sx_mount *mp, const void *data)
{
	return sx_btree_verify_block(mp, data, &tfk_btree_ops);
}

static const struct sx_buf_ops tfk_buf_ops = {
	.bo_name = "testfork",
	.bo_magic = TFK_MAGIC,
	.bo_verify = tfk_verify,
};

static const struct sx_btree_ops tfk_btree_ops = {
	.bo_name = "testfork",
	.bo_magic = TFK_MAGIC,
	.bo_recsize = sizeof(struct frec),
	.bo_buf_ops = &tfk_buf_ops,
	.bo_key = frec_key,
	.bo_verify_rec = frec_verify,
	.bo_set_root = sx_fork_btree_set_root,
	.bo_charge = sx_fork_btree_charge,
};

static const struct sx_fork_ops tfk_ops = {
	.fo_btree = &tfk_btree_ops,
};

static void mkfrec(struct frec *r, u64 key, u64 val)
{
	u64 blk = tfk_base + val % tfk_span;

	r->key = cpu_to_le64(key);
	r->blk = cpu_to_le64(blk);
	r->len = cpu_to_le32(fchk(key, blk));
	r->flags = 0;
}

/* The model: records sorted by (key, insertion order). */
struct fmodel {
	struct frec	*a;
	u64		n, cap;
	u64		nextval;
};

static void fm_insert(struct fmodel *m, u64 key, u64 val)
{
	u64 lo = 0, hi = m->n;

	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 256;
		m->a = realloc(m->a, sizeof(*m->a) * m->cap);
	}
	while (lo < hi) {
		u64 mid = (lo + hi) / 2;

		if (le64_to_cpu(m->a[mid].key) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&m->a[lo + 1], &m->a[lo], sizeof(*m->a) * (m->n - lo));
	mkfrec(&m->a[lo], key, val);
	m->n++;
}

/* Count (and verify) the blocks of the inode's tree. */
static u64 tree_blocks(struct sx_mount *mp, u64 ino, u64 bno, u32 level)
{
	struct sx_dbtree_block *b;
	struct sx_buf *bp;
	u32 nmax = sx_btree_maxrecs(mp, &tfk_btree_ops, false), n, i;
	u64 *ptrs, total = 1;

	assert_int_equal(sx_buf_read(mp, bno, &tfk_buf_ops, ino, &bp), 0);
	b = bp->b_data;
	assert_int_equal(le16_to_cpu(b->bt_level), level);
	n = le16_to_cpu(b->bt_numrecs);
	if (level == 0) {
		sx_buf_relse(bp);
		return 1;
	}
	ptrs = calloc(n + 1, sizeof(u64));
	for (i = 0; i < n; i++)
		ptrs[i] = le64_to_cpu(((__le64 *)((u8 *)b + sizeof(*b)))[nmax + i]);
	sx_buf_relse(bp);
	for (i = 0; i < n; i++)
		total += tree_blocks(mp, ino, ptrs[i], level - 1);
	free(ptrs);
	return total;
}

/*
 * Check the fork against the model: records through a read-only cursor
 * forwards and backwards, lookups, the in-core and on-disk fork fields,
 * the inline area, and the tree's blocks (all charged to the inode).
 */
static void check_fork(struct sx_inode *ip, const struct fmodel *m, u64 data_blocks)
{
	struct sx_mount *mp = ip->i_mp;
	u32 max = sx_fork_inline_max(mp, &tfk_ops);
	struct sx_fork_cur fc;
	const struct sx_dinode *di;
	struct sx_buf *bp;
	struct frec got;
	bool found;
	u64 i, blocks = 0;

	assert_int_equal(ip->i_nrecs, m->n);
	sx_ilock(ip, SX_ILOCK_EXCL);
	sx_fork_cur_init(&fc, ip, NULL, &tfk_ops);
	assert_int_equal(sx_fork_first(&fc, &found), 0);
	for (i = 0; found; i++) {
		assert_true(i < m->n);
		assert_int_equal(sx_fork_get(&fc, &got), 0);
		assert_memory_equal(&got, &m->a[i], sizeof(got));
		assert_int_equal(sx_fork_next(&fc, &found), 0);
	}
	assert_int_equal(i, m->n);
	if (m->n) {
		assert_int_equal(sx_fork_lookup(&fc, ~0ull, SX_BT_LE, &found), 0);
		for (i = m->n; found; ) {
			assert_true(i > 0);
			i--;
			assert_int_equal(sx_fork_get(&fc, &got), 0);
			assert_memory_equal(&got, &m->a[i], sizeof(got));
			assert_int_equal(sx_fork_prev(&fc, &found), 0);
		}
		assert_int_equal(i, 0);
		/* GE of each key finds its first record, LE of it its last */
		for (i = 0; i < m->n; i += 3) {
			u64 k = le64_to_cpu(m->a[i].key), j = i, e = i;

			while (j > 0 && le64_to_cpu(m->a[j - 1].key) == k)
				j--;
			while (e + 1 < m->n && le64_to_cpu(m->a[e + 1].key) == k)
				e++;
			assert_int_equal(sx_fork_lookup(&fc, k, SX_BT_GE, &found), 0);
			assert_true(found);
			assert_int_equal(sx_fork_get(&fc, &got), 0);
			assert_memory_equal(&got, &m->a[j], sizeof(got));
			assert_int_equal(sx_fork_lookup(&fc, k, SX_BT_LE, &found), 0);
			assert_true(found);
			assert_int_equal(sx_fork_get(&fc, &got), 0);
			assert_memory_equal(&got, &m->a[e], sizeof(got));
		}
	}
	sx_fork_cur_release(&fc);

	/* the inode block says the same */
	assert_int_equal(sx_inode_get_buf(mp, NULL, ip, &bp), 0);
	di = bp->b_data;
	assert_int_equal(le16_to_cpu(di->di_format), ip->i_format);
	assert_int_equal(le64_to_cpu(di->di_nrecs), m->n);
	assert_int_equal(le64_to_cpu(di->di_nblocks), ip->i_nblocks);
	if (ip->i_format == SX_DIF_INLINE) {
		const u8 *area = (const u8 *)bp->b_data + SX_DINODE_CORE;

		assert_true(m->n <= max);
		if (m->n)
			assert_memory_equal(area, m->a, m->n * sizeof(struct frec));
		for (i = m->n * sizeof(struct frec); i < SX_FORK_BYTES(mp->m_bsize); i++)
			assert_int_equal(area[i], 0);
		assert_int_equal(ip->i_broot, 0);
	} else {
		const u8 *area = (const u8 *)bp->b_data + SX_DINODE_CORE;

		assert_int_equal(ip->i_format, SX_DIF_BTREE);
		assert_true(m->n > max / 2);
		assert_int_equal(le64_to_cpu(di->di_broot), ip->i_broot);
		assert_int_equal(le32_to_cpu(di->di_blevel), ip->i_blevel);
		for (i = 0; i < SX_FORK_BYTES(mp->m_bsize); i++)
			assert_int_equal(area[i], 0);
	}
	sx_buf_relse(bp);
	if (ip->i_format == SX_DIF_BTREE)
		blocks = tree_blocks(mp, ip->i_ino, ip->i_broot, ip->i_blevel);
	assert_int_equal(ip->i_nblocks, data_blocks + blocks);
	sx_iunlock(ip, SX_ILOCK_EXCL);
}

/* Insert one record in its own transaction; the cursor must be on it. */
static void f_insert(struct sx_inode *ip, struct fmodel *m, u64 key)
{
	struct sx_mount *mp = ip->i_mp;
	struct sx_fork_cur fc;
	struct sx_trans *tp;
	struct frec r, got;
	u64 val = m->nextval++;

	sx_ilock(ip, SX_ILOCK_EXCL);
	assert_int_equal(sx_trans_alloc(mp, sx_fork_res_bytes(mp, ip), 0, &tp), 0);
	sx_fork_cur_init(&fc, ip, tp, &tfk_ops);
	mkfrec(&r, key, val);
	assert_int_equal(sx_fork_insert(&fc, &r), 0);
	assert_int_equal(sx_fork_get(&fc, &got), 0);
	assert_memory_equal(&got, &r, sizeof(r));
	sx_fork_cur_release(&fc);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_iunlock(ip, SX_ILOCK_EXCL);
	fm_insert(m, key, val);
}

/* Delete model record @idx in its own transaction; the cursor must be on its follower. */
static void f_delete(struct sx_inode *ip, struct fmodel *m, u64 idx)
{
	struct sx_mount *mp = ip->i_mp;
	u64 key = le64_to_cpu(m->a[idx].key), j;
	struct sx_fork_cur fc;
	struct sx_trans *tp;
	struct frec got;
	bool found;

	for (j = idx; j > 0 && le64_to_cpu(m->a[j - 1].key) == key; j--)
		;
	sx_ilock(ip, SX_ILOCK_EXCL);
	assert_int_equal(sx_trans_alloc(mp, sx_fork_res_bytes(mp, ip), 0, &tp), 0);
	sx_fork_cur_init(&fc, ip, tp, &tfk_ops);
	assert_int_equal(sx_fork_lookup(&fc, key, SX_BT_GE, &found), 0);
	for (; j < idx; j++) {
		assert_true(found);
		assert_int_equal(sx_fork_next(&fc, &found), 0);
	}
	assert_true(found);
	assert_int_equal(sx_fork_get(&fc, &got), 0);
	assert_memory_equal(&got, &m->a[idx], sizeof(got));
	assert_int_equal(sx_fork_delete(&fc, &found), 0);
	memmove(&m->a[idx], &m->a[idx + 1], sizeof(*m->a) * (m->n - idx - 1));
	m->n--;
	assert_int_equal(found, idx < m->n);
	if (found) {
		assert_int_equal(sx_fork_get(&fc, &got), 0);
		assert_memory_equal(&got, &m->a[idx], sizeof(got));
	}
	sx_fork_cur_release(&fc);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_iunlock(ip, SX_ILOCK_EXCL);
}

/* A new regular file, committed. */
static struct sx_inode *new_inode(struct sx_mount *mp)
{
	struct sx_inode *ip;
	struct sx_trans *tp;

	assert_int_equal(sx_trans_alloc(mp, 4 * sx_trans_buf_bytes(mp) + 4 * sx_alloc_res_bytes(mp),
					0, &tp), 0);
	assert_int_equal(sx_inode_alloc(tp, SX_IFREG | 0644, 1, &ip), 0);
	assert_int_equal(ip->i_format, SX_DIF_INLINE);
	assert_int_equal(ip->i_nrecs, 0);
	assert_int_equal(sx_trans_commit(tp), 0);
	return ip;
}

/* Drop @ip, remount @bd (cleanly or after a crash) and get the inode back. */
static struct sx_mount *remount(struct sx_mount *mp, struct sx_bdev *bd, struct sx_inode **ipp,
				bool crash)
{
	u64 ino = (*ipp)->i_ino, gen = (*ipp)->i_gen;

	if (crash)
		assert_int_equal(sx_sync(mp), 0);
	assert_int_equal(sx_irele(*ipp), 0);
	if (crash) {
		sx_shutdown(mp);
		assert_int_equal(sx_unmount(mp), -EIO);
	} else {
		assert_int_equal(sx_unmount(mp), 0);
	}
	mp = sxt_mount(bd);
	assert_int_equal(sx_iget(mp, ino, gen, ipp), 0);
	return mp;
}

/*
 * A hundred times: grow past the inline maximum (to a tree) and shrink to
 * half of it (back inline), checking after every step; every tenth time
 * grow to a multi-level tree first; remount every ten cycles, crash and
 * recover every ten others.
 */
static void transitions(u32 bsize)
{
	struct sx_bdev *bd = sxt_memfs(64 * MIB, bsize, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_inode *ip;
	u32 max = sx_fork_inline_max(mp, &tfk_ops);
	u32 leaf = sx_btree_maxrecs(mp, &tfk_btree_ops, true);
	struct fmodel m = { 0 };
	u64 rs = 0x243f6a8885a308d3ull ^ bsize, free0, top;
	u32 cycle, to_btree = 0, to_inline = 0;

	tfk_setup(mp);
	ip = new_inode(mp);
	m.nextval = 1;
	free0 = sx_alloc_free_blocks(mp);
	check_fork(ip, &m, 0);
	for (cycle = 0; cycle < 100; cycle++) {
		top = cycle % 10 == 9 ? (u64)leaf * 40 : max + 1;
		while (m.n < top) {
			bool was_inline = ip->i_format == SX_DIF_INLINE;

			/* few distinct keys: plenty of equal ones */
			f_insert(ip, &m, sxt_rand(&rs) % (max + 7) * 1000);
			if (was_inline && ip->i_format == SX_DIF_BTREE)
				to_btree++;
			assert_int_equal(ip->i_format, m.n > max ? SX_DIF_BTREE : SX_DIF_INLINE);
			if (m.n <= 3 * (u64)max || m.n % 50 == 0)
				check_fork(ip, &m, 0);
		}
		check_fork(ip, &m, 0);
		assert_int_equal(ip->i_format, SX_DIF_BTREE);
		if (top > max + 1)
			assert_true(ip->i_blevel >= 1);
		if (cycle % 20 == 4)
			mp = remount(mp, bd, &ip, false);
		if (cycle % 20 == 14)
			mp = remount(mp, bd, &ip, true);
		check_fork(ip, &m, 0);
		while (m.n > max / 2) {
			f_delete(ip, &m, sxt_rand(&rs) % m.n);
			if (ip->i_format == SX_DIF_INLINE)
				to_inline++;
			assert_int_equal(ip->i_format, m.n > max / 2 ? SX_DIF_BTREE : SX_DIF_INLINE);
			if (m.n <= 3 * (u64)max || m.n % 50 == 0)
				check_fork(ip, &m, 0);
		}
		check_fork(ip, &m, 0);
		assert_int_equal(ip->i_nblocks, 0);
		assert_int_equal(sx_alloc_free_blocks(mp), free0);
		if (cycle % 20 == 9)
			mp = remount(mp, bd, &ip, cycle % 40 == 29);
		/* an inline delete or two at the bottom too */
		if (m.n && cycle % 3 == 0)
			f_delete(ip, &m, sxt_rand(&rs) % m.n);
	}
	assert_int_equal(to_btree, 100);
	assert_int_equal(to_inline, 100);
	mp = remount(mp, bd, &ip, true);
	check_fork(ip, &m, 0);
	printf("# fork bs=%u: inline max %u, %u conversions each way\n", bsize, max, to_btree);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);
	free(m.a);
	sx_bdev_destroy(bd);
}

static void test_transitions_512(void **state)
{
	transitions(512);
}

static void test_transitions_4096(void **state)
{
	transitions(4096);
}

/* Update in both forms, refusals, and free_all from both forms. */
static void test_update_free_all(void **state)
{
	struct sx_bdev *bd = sxt_memfs(64 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_inode *ip;
	u32 max = sx_fork_inline_max(mp, &tfk_ops);
	struct fmodel m = { 0 };
	struct sx_fork_cur fc;
	struct sx_trans *tp;
	struct frec r, got;
	u64 free0, i, target;
	bool found;
	int form;

	tfk_setup(mp);
	ip = new_inode(mp);
	free0 = sx_alloc_free_blocks(mp);
	m.nextval = 1;
	for (form = 0; form < 2; form++) {
		target = form ? (u64)max * 3 : max;
		for (i = m.n; i < target; i++)
			f_insert(ip, &m, i * 10);
		assert_int_equal(ip->i_format, form ? SX_DIF_BTREE : SX_DIF_INLINE);
		/* move every other record's key within its gap */
		for (i = 1; i + 1 < m.n; i += 2) {
			u64 k = le64_to_cpu(m.a[i].key) + 3;

			sx_ilock(ip, SX_ILOCK_EXCL);
			assert_int_equal(sx_trans_alloc(mp, sx_fork_res_bytes(mp, ip), 0, &tp), 0);
			sx_fork_cur_init(&fc, ip, tp, &tfk_ops);
			assert_int_equal(sx_fork_lookup(&fc, le64_to_cpu(m.a[i].key), SX_BT_GE,
							&found), 0);
			assert_true(found);
			mkfrec(&r, le64_to_cpu(m.a[i + 1].key) + 1, 0);
			assert_int_equal(sx_fork_update(&fc, &r), -EINVAL);
			mkfrec(&r, k, i + 77);
			assert_int_equal(sx_fork_update(&fc, &r), 0);
			assert_int_equal(sx_fork_get(&fc, &got), 0);
			assert_memory_equal(&got, &r, sizeof(r));
			sx_fork_cur_release(&fc);
			assert_int_equal(sx_trans_commit(tp), 0);
			sx_iunlock(ip, SX_ILOCK_EXCL);
			m.a[i] = r;
		}
		check_fork(ip, &m, 0);
		/* a read-only cursor changes nothing */
		sx_ilock(ip, SX_ILOCK_EXCL);
		sx_fork_cur_init(&fc, ip, NULL, &tfk_ops);
		assert_int_equal(sx_fork_first(&fc, &found), 0);
		assert_int_equal(sx_fork_insert(&fc, &r), -EINVAL);
		assert_int_equal(sx_fork_delete(&fc, &found), -EINVAL);
		assert_int_equal(sx_fork_update(&fc, &r), -EINVAL);
		sx_fork_cur_release(&fc);
		sx_iunlock(ip, SX_ILOCK_EXCL);
	}
	/* free_all of the tree form, then of an inline fork */
	for (form = 0; form < 2; form++) {
		sx_ilock(ip, SX_ILOCK_EXCL);
		/* the inode block, and a cancel and a free for each of a few tree blocks */
		assert_int_equal(sx_trans_alloc(mp, sx_trans_buf_bytes(mp) +
						6 * (sx_alloc_res_bytes(mp) + 64), 0, &tp), 0);
		assert_int_equal(sx_fork_free_all(tp, ip, &tfk_ops), 0);
		assert_int_equal(sx_trans_commit(tp), 0);
		sx_iunlock(ip, SX_ILOCK_EXCL);
		m.n = 0;
		check_fork(ip, &m, 0);
		assert_int_equal(sx_alloc_free_blocks(mp), free0);
		for (i = 0; i < max / 2; i++)
			f_insert(ip, &m, i);
	}
	mp = remount(mp, bd, &ip, true);
	check_fork(ip, &m, 0);
	assert_int_equal(sx_irele(ip), 0);
	assert_int_equal(sx_unmount(mp), 0);
	free(m.a);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transitions_512),
		cmocka_unit_test(test_transitions_4096),
		cmocka_unit_test(test_update_free_all),
	};

	sx_thread_enter();
	sxt_quiet();
	/* recovery verifies the blocks it rebuilds by their registered type */
	assert_int_equal(sx_buf_type_register(&tfk_buf_ops), 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
