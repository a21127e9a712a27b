// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Generic B+tree of fixed-size records keyed by a u64.
 *
 * Block layout (struct sx_dbtree_block header first): a leaf holds
 * bt_numrecs records back to back; a node holds bt_numrecs keys from the
 * end of the header and as many child pointers from a fixed offset, the
 * header plus room for the maximum number of keys.  The key of a node entry
 * is the smallest key in the subtree below it; equal keys may span blocks.
 *
 * The cursor keeps the whole path from the root to a leaf (block and entry
 * index at each level).  Moving to the next or previous record goes up the
 * path to the first level that can move and back down, so a walk costs O(1)
 * blocks per record on average and can never loop, whatever the sibling
 * pointers say; the sibling pointers are kept right at every level and are
 * checked against the path whenever the walk crosses from one block to the
 * next.  Every child read is checked against its parent entry (level, key
 * bounds), and a block already on the path is never read again, so a cyclic
 * pointer is reported as corruption instead of deadlocking or looping.
 *
 * Insert into a full leaf first hands records to a sibling under the same
 * parent that has room, so that records inserted in order fill the leaves;
 * otherwise, and in nodes, it splits the full block in two halves (a new
 * right sibling), and grows a new root when the root splits.  Delete keeps
 * every non-root block at least half full: an underfull block takes
 * entries from a sibling under the same parent, or merges with it and
 * removes the parent's entry, and a root node left with one child is
 * replaced by that child.  The cursor is kept on the right entry through
 * all of it, at every level.
 *
 * Logging: every change logs exactly the header field or entry range that
 * changed; a new block is logged whole (it is initialised in the
 * transaction).  A cursor with a transaction leaves its buffers joined; the
 * ones it did not change are released when the cursor leaves them.
 */
#include "util.h"
#include "btree.h"
#include "buf.h"
#include "trans.h"
#include "alloc.h"
#include "mount.h"

#define BT_HDR		((u32)sizeof(struct sx_dbtree_block))
#define BT_PTRSIZE	((u32)sizeof(__le64))

/* One node entry, for building and inserting. */
struct bt_ent {
	u64	be_key;
	u64	be_ptr;
};

/* Where an insert's new entry went when a block split. */
struct bt_split {
	struct sx_buf	*bs_left;	/* the block that split */
	struct sx_buf	*bs_right;	/* its new right sibling */
	u32		bs_idx;		/* index of the new entry */
	bool		bs_in_right;	/* in bs_right rather than bs_left */
};

/* The tree block of a buffer. */
static inline struct sx_dbtree_block *bt_blk(const struct sx_buf *bp)
{
	return bp->b_data;
}

/* Entries in a block. */
static inline u32 bt_nrecs(const struct sx_buf *bp)
{
	return le16_to_cpu(bt_blk(bp)->bt_numrecs);
}

/* Level of a block (0 = leaf). */
static inline u32 bt_level(const struct sx_buf *bp)
{
	return le16_to_cpu(bt_blk(bp)->bt_level);
}

/* Records (leaf) or keys (node) a block can hold. */
u32 sx_btree_maxrecs(const struct sx_mount *mp, const struct sx_btree_ops *ops, bool leaf)
{
	u32 size = leaf ? ops->bo_recsize : 2 * BT_PTRSIZE;
	u32 n;

	if (size == 0 || mp->m_bsize <= BT_HDR)
		return 0;
	n = (mp->m_bsize - BT_HDR) / size;
	return sx_min(n, 0xffffu);
}

/* Maximum entries at @level for the cursor's tree. */
static inline u32 bt_max(const struct sx_btree_cur *cur, u32 level)
{
	return sx_btree_maxrecs(cur->bc_mp, cur->bc_ops, level == 0);
}

/* Fewest entries a non-root block at @level should have. */
static inline u32 bt_min(const struct sx_btree_cur *cur, u32 level)
{
	return sx_max(bt_max(cur, level) / 2, 1u);
}

/* Record @i of a leaf image. */
static inline u8 *bt_rec(const struct sx_btree_ops *ops, const void *blk, u32 i)
{
	return (u8 *)blk + BT_HDR + (size_t)i * ops->bo_recsize;
}

/* Key slot @i of a node image. */
static inline __le64 *bt_keyp(const void *blk, u32 i)
{
	return (__le64 *)((u8 *)blk + BT_HDR) + i;
}

/* Child pointer slot @i of a node image whose blocks hold @nmax keys. */
static inline __le64 *bt_ptrp(u32 nmax, const void *blk, u32 i)
{
	return (__le64 *)((u8 *)blk + BT_HDR) + nmax + i;
}

/* Child pointer @i of a node buffer. */
static inline u64 bt_child(const struct sx_btree_cur *cur, const struct sx_buf *bp, u32 i)
{
	return le64_to_cpu(*bt_ptrp(bt_max(cur, 1), bp->b_data, i));
}

/* Key of entry @i of a block at @level. */
static inline u64 bt_key_at(const struct sx_btree_ops *ops, const void *blk, u32 level, u32 i)
{
	if (level == 0)
		return ops->bo_key(bt_rec(ops, blk, i));
	return le64_to_cpu(*bt_keyp(blk, i));
}

/* Key of entry @i of a buffer. */
static inline u64 bt_key(const struct sx_btree_cur *cur, const struct sx_buf *bp, u32 i)
{
	return bt_key_at(cur->bc_ops, bp->b_data, bt_level(bp), i);
}

/*
 * Byte regions of entries [@first, @first + @count) of a block at @level:
 * one for a leaf, two (keys, pointers) for a node.
 */
static u32 bt_regions(const struct sx_btree_cur *cur, u32 level, u32 first, u32 count,
		      u32 off[2], u32 len[2])
{
	u32 nmax;

	if (level == 0) {
		off[0] = BT_HDR + first * cur->bc_ops->bo_recsize;
		len[0] = count * cur->bc_ops->bo_recsize;
		return 1;
	}
	nmax = bt_max(cur, level);
	off[0] = BT_HDR + first * BT_PTRSIZE;
	len[0] = count * BT_PTRSIZE;
	off[1] = BT_HDR + (nmax + first) * BT_PTRSIZE;
	len[1] = count * BT_PTRSIZE;
	return 2;
}

/* Copy @count entries from @src[@si] to @dst[@di] (same block allowed). */
static void bt_copy(const struct sx_btree_cur *cur, u32 level, void *dst, u32 di,
		    const void *src, u32 si, u32 count)
{
	u32 doff[2], dlen[2], soff[2], slen[2], n, i;

	if (!count)
		return;
	n = bt_regions(cur, level, di, count, doff, dlen);
	bt_regions(cur, level, si, count, soff, slen);
	for (i = 0; i < n; i++)
		memmove((u8 *)dst + doff[i], (const u8 *)src + soff[i], dlen[i]);
}

/* Zero @count entries of @blk from @first (vacated slots stay clean). */
static void bt_zero(const struct sx_btree_cur *cur, u32 level, void *blk, u32 first, u32 count)
{
	u32 off[2], len[2], n, i;

	if (!count)
		return;
	n = bt_regions(cur, level, first, count, off, len);
	for (i = 0; i < n; i++)
		memset((u8 *)blk + off[i], 0, len[i]);
}

/* Log entries [@first, @first + @count) of @bp. */
static int bt_log_ents(struct sx_btree_cur *cur, struct sx_buf *bp, u32 first, u32 count)
{
	u32 off[2], len[2], n, i;
	int error;

	if (!count)
		return 0;
	n = bt_regions(cur, bt_level(bp), first, count, off, len);
	for (i = 0; i < n; i++) {
		error = sx_trans_log_buf(cur->bc_tp, bp, off[i], off[i] + len[i] - 1);
		if (error)
			return error;
	}
	return 0;
}

/* Log the key slot @i of node @bp. */
static int bt_log_key(struct sx_btree_cur *cur, struct sx_buf *bp, u32 i)
{
	u32 off = BT_HDR + i * BT_PTRSIZE;

	return sx_trans_log_buf(cur->bc_tp, bp, off, off + BT_PTRSIZE - 1);
}

/* Log one header field of @bp. */
static int bt_log_field(struct sx_btree_cur *cur, struct sx_buf *bp, u32 off, u32 size)
{
	return sx_trans_log_buf(cur->bc_tp, bp, off, off + size - 1);
}

#define BT_LOG_NUMRECS(cur, bp) \
	bt_log_field((cur), (bp), offsetof(struct sx_dbtree_block, bt_numrecs), sizeof(__le16))
#define BT_LOG_LEFTSIB(cur, bp) \
	bt_log_field((cur), (bp), offsetof(struct sx_dbtree_block, bt_leftsib), sizeof(__le64))
#define BT_LOG_RIGHTSIB(cur, bp) \
	bt_log_field((cur), (bp), offsetof(struct sx_dbtree_block, bt_rightsib), sizeof(__le64))

/* Set the entry count of @bp and log it. */
static int bt_set_nrecs(struct sx_btree_cur *cur, struct sx_buf *bp, u32 n)
{
	bt_blk(bp)->bt_numrecs = cpu_to_le16(n);
	return BT_LOG_NUMRECS(cur, bp);
}

/* Tell the owner about a block allocated (+1) or freed (-1). */
static inline void bt_charge(struct sx_btree_cur *cur, s64 delta)
{
	if (cur->bc_ops->bo_charge)
		cur->bc_ops->bo_charge(cur, delta);
}

/* Tell the owner the root moved. */
static int bt_set_root(struct sx_btree_cur *cur)
{
	if (!cur->bc_ops->bo_set_root)
		return 0;
	return cur->bc_ops->bo_set_root(cur, cur->bc_root, cur->bc_nlevels);
}

/* Release a buffer the cursor is done with (kept if its transaction changed it). */
static void bt_relse(struct sx_btree_cur *cur, struct sx_buf *bp)
{
	if (cur->bc_tp)
		sx_trans_brelse(cur->bc_tp, bp);
	else
		sx_buf_relse(bp);
}

/* Release every buffer on the path. */
static void bt_release_path(struct sx_btree_cur *cur)
{
	u32 l;

	for (l = 0; l < SX_BTREE_MAXLEVELS; l++) {
		if (cur->bc_levels[l].bl_bp)
			bt_relse(cur, cur->bc_levels[l].bl_bp);
		cur->bc_levels[l].bl_bp = NULL;
		cur->bc_levels[l].bl_ptr = 0;
	}
}

/* Set up a cursor. */
void sx_btree_cur_init(struct sx_btree_cur *cur, struct sx_mount *mp, struct sx_trans *tp,
		       const struct sx_btree_ops *ops, u64 owner, u64 root, u32 nlevels,
		       void *priv)
{
	memset(cur, 0, sizeof(*cur));
	cur->bc_mp = mp;
	cur->bc_tp = tp;
	cur->bc_ops = ops;
	cur->bc_owner = owner;
	cur->bc_root = root;
	cur->bc_nlevels = nlevels;
	cur->bc_priv = priv;
}

/* Drop the cursor's buffers. */
void sx_btree_cur_release(struct sx_btree_cur *cur)
{
	bt_release_path(cur);
}

/* Check the root pointer and height the owner gave. */
static int bt_check_root(struct sx_btree_cur *cur)
{
	struct sx_mount *mp = cur->bc_mp;

	if (SX_IS_CORRUPT(mp, cur->bc_nlevels > SX_BTREE_MAXLEVELS) ||
	    SX_IS_CORRUPT(mp, (cur->bc_nlevels == 0) != (cur->bc_root == 0)))
		return -EFSCORRUPTED;
	return 0;
}

/*
 * Read tree block @bno, which must be at @level.  A block already on the
 * cursor's path is refused: locking it twice would deadlock, and a tree
 * that points back into its own path is corrupt.
 */
static int bt_read(struct sx_btree_cur *cur, u64 bno, u32 level, struct sx_buf **bpp)
{
	struct sx_mount *mp = cur->bc_mp;
	struct sx_buf *bp;
	u32 l;
	int error;

	if (SX_IS_CORRUPT(mp, bno < mp->m_sb.sb_datastart || bno >= mp->m_sb.sb_dblocks))
		return -EFSCORRUPTED;
	for (l = 0; l < SX_BTREE_MAXLEVELS; l++) {
		struct sx_buf *held = cur->bc_levels[l].bl_bp;

		if (SX_IS_CORRUPT(mp, held && held->b_blkno == bno))
			return -EFSCORRUPTED;
	}
	if (cur->bc_tp)
		error = sx_trans_read_buf(cur->bc_tp, bno, cur->bc_ops->bo_buf_ops,
					  cur->bc_owner, &bp);
	else
		error = sx_buf_read(mp, bno, cur->bc_ops->bo_buf_ops, cur->bc_owner, &bp);
	if (error)
		return error;
	if (SX_IS_CORRUPT(mp, bt_level(bp) != level)) {
		bt_relse(cur, bp);
		return -EFSCORRUPTED;
	}
	*bpp = bp;
	return 0;
}

/*
 * Read the child at entry @i of node @pbp: one level down, not empty, its
 * keys within the parent's key and the next one.
 */
static int bt_read_child(struct sx_btree_cur *cur, struct sx_buf *pbp, u32 i,
			 struct sx_buf **bpp)
{
	struct sx_mount *mp = cur->bc_mp;
	u32 plevel = bt_level(pbp), n;
	struct sx_buf *bp;
	int error;

	if (SX_IS_CORRUPT(mp, plevel == 0 || i >= bt_nrecs(pbp)))
		return -EFSCORRUPTED;
	error = bt_read(cur, bt_child(cur, pbp, i), plevel - 1, &bp);
	if (error)
		return error;
	n = bt_nrecs(bp);
	if (SX_IS_CORRUPT(mp, n == 0) ||
	    SX_IS_CORRUPT(mp, bt_key(cur, bp, 0) < bt_key(cur, pbp, i)) ||
	    SX_IS_CORRUPT(mp, i + 1 < bt_nrecs(pbp) &&
			  bt_key(cur, bp, n - 1) > bt_key(cur, pbp, i + 1))) {
		bt_relse(cur, bp);
		return -EFSCORRUPTED;
	}
	*bpp = bp;
	return 0;
}

/* First index in @bp whose key is >= @key (@upper: > @key). */
static u32 bt_search(const struct sx_btree_cur *cur, const struct sx_buf *bp, u64 key,
		     bool upper)
{
	const struct sx_btree_ops *ops = cur->bc_ops;
	u32 level = bt_level(bp), lo = 0, hi = bt_nrecs(bp);

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		u64 k = bt_key_at(ops, bp->b_data, level, mid);

		if (k < key || (upper && k == key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Walk from the root to a leaf.  At each node take the last child whose key
 * is < @key (@upper false: where the first record >= @key can be) or <=
 * @key (@upper true: where the last record <= @key is), or the first child.
 * The leaf's index is left for the caller.
 */
static int bt_descend(struct sx_btree_cur *cur, u64 key, bool upper)
{
	struct sx_mount *mp = cur->bc_mp;
	u32 top, l;
	int error;

	bt_release_path(cur);
	error = bt_check_root(cur);
	if (error || cur->bc_nlevels == 0)
		return error;
	top = cur->bc_nlevels - 1;
	for (l = top; ; l--) {
		struct sx_buf *bp;
		u32 i;

		if (l == top) {
			error = bt_read(cur, cur->bc_root, top, &bp);
			if (!error && SX_IS_CORRUPT(mp, top > 0 && bt_nrecs(bp) == 0)) {
				bt_relse(cur, bp);
				error = -EFSCORRUPTED;
			}
		} else {
			error = bt_read_child(cur, cur->bc_levels[l + 1].bl_bp,
					      cur->bc_levels[l + 1].bl_ptr, &bp);
		}
		if (error)
			return error;
		cur->bc_levels[l].bl_bp = bp;
		cur->bc_levels[l].bl_ptr = 0;
		if (l == 0)
			break;
		i = bt_search(cur, bp, key, upper);
		cur->bc_levels[l].bl_ptr = i ? i - 1 : 0;
	}
	return 0;
}

/*
 * True if the path the cursor holds is the one bt_descend(@key, @upper)
 * would walk: it starts at the root, each block is the child its parent's
 * entry points at, and at each node that entry is the one the descent
 * would take.  Changes made one after another near one place (a swap's
 * exchanges, or a seek after a find) then skip the walk from the root
 * and its block lookups; the comparisons read only blocks the cursor
 * holds.
 */
static bool bt_path_leads_to(const struct sx_btree_cur *cur, u64 key, bool upper)
{
	u32 top = cur->bc_nlevels - 1, l;

	if (cur->bc_nlevels == 0 || !cur->bc_levels[top].bl_bp ||
	    cur->bc_levels[top].bl_bp->b_blkno != cur->bc_root)
		return false;
	for (l = top; l > 0; l--) {
		const struct sx_btree_level *lv = &cur->bc_levels[l];
		const struct sx_buf *child = cur->bc_levels[l - 1].bl_bp;
		u32 n = bt_nrecs(lv->bl_bp), p = lv->bl_ptr;
		u64 k;

		if (!child || bt_level(lv->bl_bp) != l || p >= n ||
		    bt_child(cur, lv->bl_bp, p) != child->b_blkno)
			return false;
		/* the descent takes the last entry below (upper: not above) @key, or the first */
		k = bt_key(cur, lv->bl_bp, p);
		if (p > 0 && (upper ? k > key : k >= key))
			return false;
		if (p + 1 < n) {
			k = bt_key(cur, lv->bl_bp, p + 1);
			if (upper ? k <= key : k < key)
				return false;
		}
	}
	return bt_level(cur->bc_levels[0].bl_bp) == 0;
}

/* bt_descend(), unless the cursor already holds the path it would walk. */
static int bt_descend_near(struct sx_btree_cur *cur, u64 key, bool upper)
{
	if (bt_path_leads_to(cur, key, upper))
		return 0;
	return bt_descend(cur, key, upper);
}

/*
 * Move the cursor to the next entry at @level, going up the path as far as
 * needed and back down to @level (levels below are the caller's).
 */
static int bt_increment(struct sx_btree_cur *cur, u32 level, bool *found)
{
	struct sx_mount *mp = cur->bc_mp;
	struct sx_btree_level *lv = &cur->bc_levels[level];
	u32 top = cur->bc_nlevels - 1, l;
	int error;

	*found = false;
	if (lv->bl_ptr + 1 < bt_nrecs(lv->bl_bp)) {
		lv->bl_ptr++;
		*found = true;
		return 0;
	}
	for (l = level + 1; l <= top; l++)
		if (cur->bc_levels[l].bl_ptr + 1 < bt_nrecs(cur->bc_levels[l].bl_bp))
			break;
	if (l > top) {
		/* the last entry of the tree: nothing may be to the right */
		if (SX_IS_CORRUPT(mp, bt_blk(lv->bl_bp)->bt_rightsib != 0))
			return -EFSCORRUPTED;
		return 0;
	}
	cur->bc_levels[l].bl_ptr++;
	while (l-- > level) {
		struct sx_buf *old = cur->bc_levels[l].bl_bp, *bp;

		error = bt_read_child(cur, cur->bc_levels[l + 1].bl_bp,
				      cur->bc_levels[l + 1].bl_ptr, &bp);
		if (error)
			return error;
		if (SX_IS_CORRUPT(mp, le64_to_cpu(bt_blk(bp)->bt_leftsib) != old->b_blkno ||
				  le64_to_cpu(bt_blk(old)->bt_rightsib) != bp->b_blkno)) {
			bt_relse(cur, bp);
			return -EFSCORRUPTED;
		}
		bt_relse(cur, old);
		cur->bc_levels[l].bl_bp = bp;
		cur->bc_levels[l].bl_ptr = 0;
	}
	*found = true;
	return 0;
}

/* Move the cursor to the previous entry at @level (see bt_increment()). */
static int bt_decrement(struct sx_btree_cur *cur, u32 level, bool *found)
{
	struct sx_mount *mp = cur->bc_mp;
	struct sx_btree_level *lv = &cur->bc_levels[level];
	u32 top = cur->bc_nlevels - 1, l;
	int error;

	*found = false;
	if (lv->bl_ptr > 0) {
		lv->bl_ptr--;
		*found = true;
		return 0;
	}
	for (l = level + 1; l <= top; l++)
		if (cur->bc_levels[l].bl_ptr > 0)
			break;
	if (l > top) {
		if (SX_IS_CORRUPT(mp, bt_blk(lv->bl_bp)->bt_leftsib != 0))
			return -EFSCORRUPTED;
		return 0;
	}
	cur->bc_levels[l].bl_ptr--;
	while (l-- > level) {
		struct sx_buf *old = cur->bc_levels[l].bl_bp, *bp;

		error = bt_read_child(cur, cur->bc_levels[l + 1].bl_bp,
				      cur->bc_levels[l + 1].bl_ptr, &bp);
		if (error)
			return error;
		if (SX_IS_CORRUPT(mp, le64_to_cpu(bt_blk(bp)->bt_rightsib) != old->b_blkno ||
				  le64_to_cpu(bt_blk(old)->bt_leftsib) != bp->b_blkno)) {
			bt_relse(cur, bp);
			return -EFSCORRUPTED;
		}
		bt_relse(cur, old);
		cur->bc_levels[l].bl_bp = bp;
		cur->bc_levels[l].bl_ptr = bt_nrecs(bp) - 1;
	}
	*found = true;
	return 0;
}

/* Position at the record nearest @key in direction @dir. */
int sx_btree_lookup(struct sx_btree_cur *cur, u64 key, enum sx_btree_dir dir, bool *found)
{
	struct sx_btree_level *leaf = &cur->bc_levels[0];
	u32 n, i;
	int error;

	*found = false;
	error = bt_descend_near(cur, key, dir == SX_BT_LE);
	if (error || cur->bc_nlevels == 0)
		return error;
	n = bt_nrecs(leaf->bl_bp);
	if (dir == SX_BT_GE) {
		i = bt_search(cur, leaf->bl_bp, key, false);
		if (i < n) {
			leaf->bl_ptr = i;
			*found = true;
			return 0;
		}
		if (n == 0)
			return 0;
		/* every record here is smaller: the answer starts the next leaf */
		leaf->bl_ptr = n - 1;
		return bt_increment(cur, 0, found);
	}
	i = bt_search(cur, leaf->bl_bp, key, true);
	if (i > 0) {
		leaf->bl_ptr = i - 1;
		*found = true;
		return 0;
	}
	leaf->bl_ptr = 0;
	return bt_decrement(cur, 0, found);
}

/* Position at the first record. */
int sx_btree_first(struct sx_btree_cur *cur, bool *found)
{
	return sx_btree_lookup(cur, 0, SX_BT_GE, found);
}

/* True if the cursor stands on a record. */
static bool bt_positioned(const struct sx_btree_cur *cur)
{
	const struct sx_btree_level *leaf = &cur->bc_levels[0];

	return cur->bc_nlevels > 0 && leaf->bl_bp && leaf->bl_ptr < bt_nrecs(leaf->bl_bp);
}

/* Copy the record at the cursor. */
int sx_btree_get(struct sx_btree_cur *cur, void *rec)
{
	const struct sx_btree_level *leaf = &cur->bc_levels[0];

	if (!bt_positioned(cur))
		return -EINVAL;
	memcpy(rec, bt_rec(cur->bc_ops, leaf->bl_bp->b_data, leaf->bl_ptr),
	       cur->bc_ops->bo_recsize);
	return 0;
}

int sx_btree_get_run(struct sx_btree_cur *cur, void *recs, u32 max, u32 *n)
{
	struct sx_btree_level *leaf = &cur->bc_levels[0];
	u32 k;

	*n = 0;
	if (!bt_positioned(cur) || max == 0)
		return -EINVAL;
	k = sx_min(max, bt_nrecs(leaf->bl_bp) - leaf->bl_ptr);
	memcpy(recs, bt_rec(cur->bc_ops, leaf->bl_bp->b_data, leaf->bl_ptr),
	       (size_t)k * cur->bc_ops->bo_recsize);
	leaf->bl_ptr += k - 1;
	*n = k;
	return 0;
}

/* Move to the next record. */
int sx_btree_next(struct sx_btree_cur *cur, bool *found)
{
	*found = false;
	if (!bt_positioned(cur))
		return -EINVAL;
	return bt_increment(cur, 0, found);
}

/* Move to the previous record. */
int sx_btree_prev(struct sx_btree_cur *cur, bool *found)
{
	*found = false;
	if (!bt_positioned(cur))
		return -EINVAL;
	return bt_decrement(cur, 0, found);
}

/*
 * The first key of the block at @level changed: copy it into the parent
 * entries above, as far up as it is the first key there too.
 */
static int bt_update_keys(struct sx_btree_cur *cur, u32 level)
{
	u32 l;
	int error;

	for (l = level; l + 1 < cur->bc_nlevels; l++) {
		struct sx_buf *bp = cur->bc_levels[l].bl_bp;
		struct sx_buf *pbp = cur->bc_levels[l + 1].bl_bp;
		u32 pi = cur->bc_levels[l + 1].bl_ptr;
		__le64 *kp = bt_keyp(pbp->b_data, pi);
		u64 key;

		if (bt_nrecs(bp) == 0)
			return 0;
		key = bt_key(cur, bp, 0);
		if (le64_to_cpu(*kp) == key)
			return 0;
		*kp = cpu_to_le64(key);
		error = bt_log_key(cur, pbp, pi);
		if (error)
			return error;
		if (pi != 0)
			return 0;
	}
	return 0;
}

/* Set the key of entry @i of node @pbp to the first key of @bp. */
static int bt_set_parent_key(struct sx_btree_cur *cur, struct sx_buf *pbp, u32 i,
			     struct sx_buf *bp)
{
	*bt_keyp(pbp->b_data, i) = cpu_to_le64(bt_key(cur, bp, 0));
	return bt_log_key(cur, pbp, i);
}

/* Allocate and initialise an empty block at @level (logged whole). */
static int bt_alloc_block(struct sx_btree_cur *cur, u32 level, struct sx_buf **bpp)
{
	struct sx_mount *mp = cur->bc_mp;
	struct sx_buf *bp;
	u64 bno;
	u32 len;
	int error;

	error = sx_alloc_extent(cur->bc_tp, cur->bc_hint, 1, 1, &bno, &len);
	if (error)
		return error;
	error = sx_trans_get_buf(cur->bc_tp, bno, cur->bc_ops->bo_buf_ops, cur->bc_owner, &bp);
	if (error)
		return error;
	memset(bp->b_data, 0, mp->m_bsize);
	sx_buf_init_hdr(mp, bp, cur->bc_ops->bo_magic, cur->bc_owner);
	bt_blk(bp)->bt_level = cpu_to_le16(level);
	error = sx_trans_log_buf(cur->bc_tp, bp, 0, mp->m_bsize - 1);
	if (error)
		return error;
	bt_charge(cur, 1);
	*bpp = bp;
	return 0;
}

/* Free a tree block in the cursor's transaction. */
static int bt_free_block(struct sx_btree_cur *cur, struct sx_buf *bp)
{
	u64 bno = bp->b_blkno;
	int error;

	error = sx_trans_binval(cur->bc_tp, bp);
	if (error)
		return error;
	error = sx_free_extent(cur->bc_tp, bno, 1);
	if (error)
		return error;
	bt_charge(cur, -1);
	return 0;
}

/* Write one entry (@rec for a leaf, @ent for a node) at slot @i of @bp. */
static void bt_put_entry(struct sx_btree_cur *cur, struct sx_buf *bp, u32 i, const void *rec,
			 const struct bt_ent *ent)
{
	if (bt_level(bp) == 0) {
		memcpy(bt_rec(cur->bc_ops, bp->b_data, i), rec, cur->bc_ops->bo_recsize);
		return;
	}
	*bt_keyp(bp->b_data, i) = cpu_to_le64(ent->be_key);
	*bt_ptrp(bt_max(cur, 1), bp->b_data, i) = cpu_to_le64(ent->be_ptr);
}

/* Insert an entry at index @i of a block with room, and log it. */
static int bt_insert_entry(struct sx_btree_cur *cur, struct sx_buf *bp, u32 i, const void *rec,
			   const struct bt_ent *ent)
{
	u32 level = bt_level(bp), n = bt_nrecs(bp);
	int error;

	bt_copy(cur, level, bp->b_data, i + 1, bp->b_data, i, n - i);
	bt_put_entry(cur, bp, i, rec, ent);
	error = bt_set_nrecs(cur, bp, n + 1);
	if (error)
		return error;
	return bt_log_ents(cur, bp, i, n + 1 - i);
}

/*
 * Move @count entries from the start of @rbp to the end of @bp (its left
 * neighbour at the same level), logging both.
 */
static int bt_move_left(struct sx_btree_cur *cur, struct sx_buf *bp, struct sx_buf *rbp,
			u32 count)
{
	u32 level = bt_level(bp), n = bt_nrecs(bp), rn = bt_nrecs(rbp);
	int error;

	bt_copy(cur, level, bp->b_data, n, rbp->b_data, 0, count);
	bt_copy(cur, level, rbp->b_data, 0, rbp->b_data, count, rn - count);
	bt_zero(cur, level, rbp->b_data, rn - count, count);
	error = bt_set_nrecs(cur, bp, n + count);
	if (!error)
		error = bt_log_ents(cur, bp, n, count);
	if (!error)
		error = bt_set_nrecs(cur, rbp, rn - count);
	if (!error)
		error = bt_log_ents(cur, rbp, 0, rn);
	return error;
}

/*
 * Move @count entries from the end of @lbp to the start of @bp (its right
 * neighbour at the same level), logging both.
 */
static int bt_move_right(struct sx_btree_cur *cur, struct sx_buf *lbp, struct sx_buf *bp,
			 u32 count)
{
	u32 level = bt_level(bp), n = bt_nrecs(bp), ln = bt_nrecs(lbp);
	int error;

	bt_copy(cur, level, bp->b_data, count, bp->b_data, 0, n);
	bt_copy(cur, level, bp->b_data, 0, lbp->b_data, ln - count, count);
	bt_zero(cur, level, lbp->b_data, ln - count, count);
	error = bt_set_nrecs(cur, bp, n + count);
	if (!error)
		error = bt_log_ents(cur, bp, 0, n + count);
	if (!error)
		error = bt_set_nrecs(cur, lbp, ln - count);
	if (!error)
		error = bt_log_ents(cur, lbp, ln - count, count);
	return error;
}

/*
 * Read the sibling of the path block at @level under the same parent, at
 * parent entry @pi, and check that the sibling pointers agree.
 */
static int bt_read_sibling(struct sx_btree_cur *cur, u32 level, u32 pi, bool right,
			   struct sx_buf **bpp)
{
	struct sx_mount *mp = cur->bc_mp;
	struct sx_buf *bp = cur->bc_levels[level].bl_bp, *sbp;
	const struct sx_dbtree_block *b, *s;
	int error;

	error = bt_read_child(cur, cur->bc_levels[level + 1].bl_bp, pi, &sbp);
	if (error)
		return error;
	b = bt_blk(bp);
	s = bt_blk(sbp);
	if (SX_IS_CORRUPT(mp, right ? (le64_to_cpu(b->bt_rightsib) != sbp->b_blkno ||
				       le64_to_cpu(s->bt_leftsib) != bp->b_blkno)
				    : (le64_to_cpu(b->bt_leftsib) != sbp->b_blkno ||
				       le64_to_cpu(s->bt_rightsib) != bp->b_blkno))) {
		bt_relse(cur, sbp);
		return -EFSCORRUPTED;
	}
	*bpp = sbp;
	return 0;
}

/*
 * Split the full block at @level of the path in two, its upper half going to
 * a new right sibling, and insert the entry at @idx into whichever half it
 * belongs in.  The path is not changed; @sp says where the entry went.
 */
static int bt_split(struct sx_btree_cur *cur, u32 level, u32 idx, const void *rec,
		    const struct bt_ent *ent, struct bt_split *sp)
{
	struct sx_mount *mp = cur->bc_mp;
	struct sx_buf *bp = cur->bc_levels[level].bl_bp, *nbp, *rbp;
	u32 n = bt_nrecs(bp), lcount = (n + 2) / 2, from, move;
	u64 right = le64_to_cpu(bt_blk(bp)->bt_rightsib);
	int error;

	error = bt_alloc_block(cur, level, &nbp);
	if (error)
		return error;
	/* the left half keeps lcount entries counting the new one */
	from = idx < lcount ? lcount - 1 : lcount;
	move = n - from;
	bt_copy(cur, level, nbp->b_data, 0, bp->b_data, from, move);
	bt_zero(cur, level, bp->b_data, from, move);
	bt_blk(nbp)->bt_numrecs = cpu_to_le16(move);
	error = bt_set_nrecs(cur, bp, from);
	if (!error)
		error = bt_log_ents(cur, bp, from, move);
	if (error)
		return error;

	/* link the new block in on the right */
	if (right) {
		error = bt_read(cur, right, level, &rbp);
		if (error)
			return error;
		if (SX_IS_CORRUPT(mp, le64_to_cpu(bt_blk(rbp)->bt_leftsib) != bp->b_blkno)) {
			bt_relse(cur, rbp);
			return -EFSCORRUPTED;
		}
		bt_blk(rbp)->bt_leftsib = cpu_to_le64(nbp->b_blkno);
		error = BT_LOG_LEFTSIB(cur, rbp);
		if (error)
			return error;
	}
	bt_blk(nbp)->bt_leftsib = cpu_to_le64(bp->b_blkno);
	bt_blk(nbp)->bt_rightsib = cpu_to_le64(right);
	bt_blk(bp)->bt_rightsib = cpu_to_le64(nbp->b_blkno);
	error = BT_LOG_RIGHTSIB(cur, bp);
	if (error)
		return error;

	sp->bs_left = bp;
	sp->bs_right = nbp;
	sp->bs_in_right = idx >= lcount;
	sp->bs_idx = sp->bs_in_right ? idx - lcount : idx;
	return bt_insert_entry(cur, sp->bs_in_right ? nbp : bp, sp->bs_idx, rec, ent);
}

/* The root at the top level split: put a new root above its two halves. */
static int bt_new_root(struct sx_btree_cur *cur, struct sx_buf *lbp, struct sx_buf *rbp)
{
	u32 level = cur->bc_nlevels;
	struct bt_ent ent;
	struct sx_buf *bp;
	int error;

	error = bt_alloc_block(cur, level, &bp);
	if (error)
		return error;
	ent.be_key = bt_key(cur, lbp, 0);
	ent.be_ptr = lbp->b_blkno;
	bt_put_entry(cur, bp, 0, NULL, &ent);
	ent.be_key = bt_key(cur, rbp, 0);
	ent.be_ptr = rbp->b_blkno;
	bt_put_entry(cur, bp, 1, NULL, &ent);
	bt_blk(bp)->bt_numrecs = cpu_to_le16(2);
	/* the new root points at the right half; the caller moves it if needed */
	cur->bc_levels[level].bl_bp = bp;
	cur->bc_levels[level].bl_ptr = 1;
	cur->bc_nlevels++;
	cur->bc_root = bp->b_blkno;
	return bt_set_root(cur);
}

/* Insert the first record of an empty tree: a root leaf. */
static int bt_insert_first(struct sx_btree_cur *cur, const void *rec)
{
	struct sx_buf *bp;
	int error;

	bt_release_path(cur);
	error = bt_alloc_block(cur, 0, &bp);
	if (error)
		return error;
	bt_put_entry(cur, bp, 0, rec, NULL);
	bt_blk(bp)->bt_numrecs = cpu_to_le16(1);
	cur->bc_levels[0].bl_bp = bp;
	cur->bc_levels[0].bl_ptr = 0;
	cur->bc_nlevels = 1;
	cur->bc_root = bp->b_blkno;
	return bt_set_root(cur);
}

/*
 * The new record of a shift goes to the leaf's sibling @sbp, at parent
 * entry @spi: the cursor moves there, and lets go of the leaf if it gave
 * the sibling no record (@moved 0), since nothing in it changed.
 */
static void bt_shift_cursor(struct sx_btree_cur *cur, struct sx_buf *sbp, u32 spi, u32 moved)
{
	if (!moved)
		bt_relse(cur, cur->bc_levels[0].bl_bp);
	cur->bc_levels[0].bl_bp = sbp;
	cur->bc_levels[1].bl_ptr = spi;
}

/*
 * Make room for @rec at @idx of the full leaf on the path by handing
 * records to a sibling under the same parent that has room (the right one
 * first), so that the two end about equally full, instead of splitting.
 * A split leaves two half-full leaves behind, so records that come in
 * order (a file written from start to end) would leave every leaf half
 * empty: twice the blocks to read, write and log for every walk of the
 * tree.  Of the leaf's records with @rec in its place, the last (or first)
 * m go to the sibling; @rec lands in whichever block its place fell to, and
 * the cursor ends on it.  Both blocks stay at least half full.  *@done is
 * false, and nothing changed, when neither sibling has room.
 */
static int bt_shift_insert(struct sx_btree_cur *cur, u32 idx, const void *rec, bool *done)
{
	struct sx_btree_level *lv = &cur->bc_levels[0], *plv = &cur->bc_levels[1];
	struct sx_buf *bp = lv->bl_bp, *pbp = plv->bl_bp, *sbp;
	u32 pi = plv->bl_ptr, n = bt_nrecs(bp), max = bt_max(cur, 0), m, k, sn;
	bool moves;		/* @rec goes to the sibling */
	int error;

	*done = false;
	if (pi + 1 < bt_nrecs(pbp)) {
		error = bt_read_sibling(cur, 0, pi + 1, true, &sbp);
		if (error)
			return error;
		if (bt_nrecs(sbp) < max) {
			m = (n + 1 - bt_nrecs(sbp)) / 2;
			moves = idx >= n + 1 - m;
			k = m - moves;
			error = k ? bt_move_right(cur, bp, sbp, k) : 0;
			if (error)
				return error;
			if (moves) {
				bt_shift_cursor(cur, sbp, pi + 1, k);
				idx -= n + 1 - m;
			}
			error = bt_insert_entry(cur, lv->bl_bp, idx, rec, NULL);
			if (!error)
				error = bt_set_parent_key(cur, pbp, pi + 1, sbp);
			if (error)
				return error;
			lv->bl_ptr = idx;
			*done = true;
			/* @rec first in the leaf: keys above may change, as in a plain insert */
			return !moves && idx == 0 ? bt_update_keys(cur, 0) : 0;
		}
		bt_relse(cur, sbp);
	}
	if (pi > 0) {
		error = bt_read_sibling(cur, 0, pi - 1, false, &sbp);
		if (error)
			return error;
		sn = bt_nrecs(sbp);
		if (sn < max) {
			m = (n + 1 - sn) / 2;
			moves = idx < m;
			k = m - moves;
			error = k ? bt_move_left(cur, sbp, bp, k) : 0;
			if (error)
				return error;
			if (moves) {
				bt_shift_cursor(cur, sbp, pi - 1, k);
				idx += sn;
			} else {
				idx -= k;
			}
			error = bt_insert_entry(cur, lv->bl_bp, idx, rec, NULL);
			/* the leaf's first record changed unless it gave none */
			if (!error && k)
				error = bt_set_parent_key(cur, pbp, pi, bp);
			if (error)
				return error;
			lv->bl_ptr = idx;
			*done = true;
			return 0;
		}
		bt_relse(cur, sbp);
	}
	return 0;
}

/* Insert @rec after any records with an equal key; the cursor ends on it. */
int sx_btree_insert(struct sx_btree_cur *cur, const void *rec)
{
	const struct sx_btree_ops *ops = cur->bc_ops;
	struct bt_split sp[SX_BTREE_MAXLEVELS];
	u64 key = ops->bo_key(rec);
	struct bt_ent ent = { 0, 0 };
	u32 l, top, idx;
	bool found;
	int error;

	if (!cur->bc_tp || bt_max(cur, 0) == 0 || bt_max(cur, 1) < 2)
		return -EINVAL;
	error = bt_check_root(cur);
	if (error)
		return error;
	if (cur->bc_nlevels == 0)
		return bt_insert_first(cur, rec);
	error = bt_descend_near(cur, key, true);
	if (error)
		return error;
	top = cur->bc_nlevels - 1;
	cur->bc_levels[0].bl_ptr = bt_search(cur, cur->bc_levels[0].bl_bp, key, true);

	/* a tree of the greatest height whose whole path is full cannot grow */
	if (cur->bc_nlevels == SX_BTREE_MAXLEVELS) {
		for (l = 0; l <= top; l++)
			if (bt_nrecs(cur->bc_levels[l].bl_bp) < bt_max(cur, l))
				break;
		if (l > top)
			return -ENOSPC;
	}

	idx = cur->bc_levels[0].bl_ptr;
	for (l = 0; ; l++) {
		struct sx_buf *bp = cur->bc_levels[l].bl_bp;

		if (bt_nrecs(bp) < bt_max(cur, l)) {
			error = bt_insert_entry(cur, bp, idx, rec, &ent);
			if (error)
				return error;
			cur->bc_levels[l].bl_ptr = idx;
			if (idx == 0) {
				error = bt_update_keys(cur, l);
				if (error)
					return error;
			}
			break;
		}
		if (l == 0 && top > 0) {
			bool done;

			error = bt_shift_insert(cur, idx, rec, &done);
			if (error || done)
				return error;
		}
		error = bt_split(cur, l, idx, rec, &ent, &sp[l]);
		if (error)
			return error;
		if (!sp[l].bs_in_right && sp[l].bs_idx == 0) {
			/* the left half's first key changed; the path still leads to it */
			error = bt_update_keys(cur, l);
			if (error)
				return error;
		}
		ent.be_key = bt_key(cur, sp[l].bs_right, 0);
		ent.be_ptr = sp[l].bs_right->b_blkno;
		if (l == top) {
			error = bt_new_root(cur, sp[l].bs_left, sp[l].bs_right);
			if (error)
				return error;
			l++;
			break;
		}
		idx = cur->bc_levels[l + 1].bl_ptr + 1;
	}

	/*
	 * Levels below l split.  Each level above now points at the new right
	 * half's entry; where the new entry went into the left half, step the
	 * level above back to the left half's entry.
	 */
	while (l-- > 0) {
		if (!sp[l].bs_in_right) {
			error = bt_decrement(cur, l + 1, &found);
			if (error)
				return error;
			if (SX_IS_CORRUPT(cur->bc_mp, !found))
				return -EFSCORRUPTED;
		}
		cur->bc_levels[l].bl_bp = sp[l].bs_in_right ? sp[l].bs_right : sp[l].bs_left;
		cur->bc_levels[l].bl_ptr = sp[l].bs_idx;
	}
	return 0;
}

/*
 * Merge @rbp into its left neighbour @bp: copy all of its entries over,
 * unlink it from the sibling chain and free it (its contents stay as they
 * were: the block stops being metadata).
 */
static int bt_merge(struct sx_btree_cur *cur, struct sx_buf *bp, struct sx_buf *rbp)
{
	struct sx_mount *mp = cur->bc_mp;
	u64 right = le64_to_cpu(bt_blk(rbp)->bt_rightsib);
	u32 n = bt_nrecs(bp), rn = bt_nrecs(rbp);
	struct sx_buf *rrbp;
	int error;

	bt_copy(cur, bt_level(bp), bp->b_data, n, rbp->b_data, 0, rn);
	error = bt_set_nrecs(cur, bp, n + rn);
	if (!error)
		error = bt_log_ents(cur, bp, n, rn);
	if (error)
		return error;
	if (right) {
		error = bt_read(cur, right, bt_level(bp), &rrbp);
		if (error)
			return error;
		if (SX_IS_CORRUPT(mp, le64_to_cpu(bt_blk(rrbp)->bt_leftsib) != rbp->b_blkno)) {
			bt_relse(cur, rrbp);
			return -EFSCORRUPTED;
		}
		bt_blk(rrbp)->bt_leftsib = cpu_to_le64(bp->b_blkno);
		error = BT_LOG_LEFTSIB(cur, rrbp);
		if (error)
			return error;
	}
	bt_blk(bp)->bt_rightsib = cpu_to_le64(right);
	error = BT_LOG_RIGHTSIB(cur, bp);
	if (error)
		return error;
	return bt_free_block(cur, rbp);
}

/*
 * The root lost an entry: free an empty root leaf, or replace a root node
 * left with one child by that child (the path already leads to it).
 */
static int bt_shrink_root(struct sx_btree_cur *cur)
{
	struct sx_mount *mp = cur->bc_mp;
	int error;

	for (;;) {
		u32 top = cur->bc_nlevels - 1;
		struct sx_buf *bp = cur->bc_levels[top].bl_bp;
		u64 child;

		if (top == 0) {
			if (bt_nrecs(bp) > 0)
				return 0;
			cur->bc_levels[0].bl_bp = NULL;
			error = bt_free_block(cur, bp);
			if (error)
				return error;
			cur->bc_nlevels = 0;
			cur->bc_root = 0;
			return bt_set_root(cur);
		}
		if (bt_nrecs(bp) != 1)
			return 0;
		child = bt_child(cur, bp, 0);
		if (SX_IS_CORRUPT(mp, !cur->bc_levels[top - 1].bl_bp ||
				  cur->bc_levels[top - 1].bl_bp->b_blkno != child))
			return -EFSCORRUPTED;
		cur->bc_levels[top].bl_bp = NULL;
		cur->bc_levels[top].bl_ptr = 0;
		error = bt_free_block(cur, bp);
		if (error)
			return error;
		cur->bc_nlevels--;
		cur->bc_root = child;
		error = bt_set_root(cur);
		if (error)
			return error;
	}
}

/*
 * Remove the entry at the path's index at @level and rebalance upwards.
 * At the leaf the cursor then tracks the entry that followed (its index may
 * be one past the block's end); at a node, deletes come from merges and
 * always take an entry after the survivor's, which the cursor then tracks.
 */
static int bt_delrec(struct sx_btree_cur *cur, u32 level)
{
	struct sx_mount *mp = cur->bc_mp;
	int error;

	for (;;) {
		struct sx_btree_level *lv = &cur->bc_levels[level];
		struct sx_buf *bp = lv->bl_bp, *pbp, *lbp = NULL, *rbp = NULL;
		u32 idx = lv->bl_ptr, n = bt_nrecs(bp), min, pi, pn, k;

		if (SX_IS_CORRUPT(mp, idx >= n || (level > 0 && idx == 0)))
			return -EFSCORRUPTED;
		bt_copy(cur, level, bp->b_data, idx, bp->b_data, idx + 1, n - idx - 1);
		bt_zero(cur, level, bp->b_data, n - 1, 1);
		error = bt_set_nrecs(cur, bp, n - 1);
		if (!error)
			error = bt_log_ents(cur, bp, idx, n - idx);
		if (error)
			return error;
		n--;
		lv->bl_ptr = level == 0 ? idx : idx - 1;

		if (level == cur->bc_nlevels - 1)
			return bt_shrink_root(cur);
		if (idx == 0) {
			error = bt_update_keys(cur, level);
			if (error)
				return error;
		}
		min = bt_min(cur, level);
		if (n >= min)
			return 0;

		pbp = cur->bc_levels[level + 1].bl_bp;
		pi = cur->bc_levels[level + 1].bl_ptr;
		pn = bt_nrecs(pbp);
		if (pi + 1 >= pn && pi == 0) {
			/* no sibling under this parent: only an invariant break */
			if (SX_IS_CORRUPT(mp, n == 0))
				return -EFSCORRUPTED;
			return 0;
		}
		if (pi + 1 < pn) {
			error = bt_read_sibling(cur, level, pi + 1, true, &rbp);
			if (error)
				return error;
			if (bt_nrecs(rbp) > min) {
				/* take half the difference from the right */
				k = (bt_nrecs(rbp) - n + 1) / 2;
				error = bt_move_left(cur, bp, rbp, k);
				if (!error)
					error = bt_set_parent_key(cur, pbp, pi + 1, rbp);
				if (!error && n == 0)
					error = bt_update_keys(cur, level);
				return error;
			}
		}
		if (pi > 0) {
			if (rbp) {
				bt_relse(cur, rbp);
				rbp = NULL;
			}
			error = bt_read_sibling(cur, level, pi - 1, false, &lbp);
			if (error)
				return error;
			if (bt_nrecs(lbp) > min) {
				k = (bt_nrecs(lbp) - n + 1) / 2;
				error = bt_move_right(cur, lbp, bp, k);
				if (!error)
					error = bt_set_parent_key(cur, pbp, pi, bp);
				lv->bl_ptr += k;
				return error;
			}
			/* merge this block into its left neighbour */
			k = bt_nrecs(lbp);
			lv->bl_bp = lbp;
			lv->bl_ptr += k;
			error = bt_merge(cur, lbp, bp);
			if (error)
				return error;
			cur->bc_levels[level + 1].bl_ptr = pi;
		} else {
			/* merge the right neighbour into this block */
			error = bt_merge(cur, bp, rbp);
			if (error)
				return error;
			if (n == 0) {
				error = bt_update_keys(cur, level);
				if (error)
					return error;
			}
			cur->bc_levels[level + 1].bl_ptr = pi + 1;
		}
		level++;
	}
}

/* Delete the record at the cursor; the cursor ends on the one that followed. */
int sx_btree_delete(struct sx_btree_cur *cur, bool *found)
{
	struct sx_btree_level *leaf = &cur->bc_levels[0];
	u32 n;
	int error;

	*found = false;
	if (!cur->bc_tp || !bt_positioned(cur))
		return -EINVAL;
	error = bt_delrec(cur, 0);
	if (error || cur->bc_nlevels == 0)
		return error;
	n = bt_nrecs(leaf->bl_bp);
	if (leaf->bl_ptr < n) {
		*found = true;
		return 0;
	}
	if (n == 0)
		return 0;
	leaf->bl_ptr = n - 1;
	return bt_increment(cur, 0, found);
}

/*
 * Key of the record next to the cursor's in the leaf's left (@right false)
 * or right neighbour; *@has is false at the tree's edge.
 */
static int bt_neighbour_key(struct sx_btree_cur *cur, bool right, u64 *key, bool *has)
{
	struct sx_mount *mp = cur->bc_mp;
	struct sx_buf *bp = cur->bc_levels[0].bl_bp, *sbp;
	u64 sib = le64_to_cpu(right ? bt_blk(bp)->bt_rightsib : bt_blk(bp)->bt_leftsib);
	u64 back;
	int error;

	*has = false;
	if (!sib)
		return 0;
	error = bt_read(cur, sib, 0, &sbp);
	if (error)
		return error;
	back = le64_to_cpu(right ? bt_blk(sbp)->bt_leftsib : bt_blk(sbp)->bt_rightsib);
	if (SX_IS_CORRUPT(mp, back != bp->b_blkno || bt_nrecs(sbp) == 0)) {
		bt_relse(cur, sbp);
		return -EFSCORRUPTED;
	}
	*key = bt_key(cur, sbp, right ? 0 : bt_nrecs(sbp) - 1);
	*has = true;
	bt_relse(cur, sbp);
	return 0;
}

/* Overwrite the record at the cursor; its key must stay in order. */
int sx_btree_update(struct sx_btree_cur *cur, const void *rec)
{
	const struct sx_btree_ops *ops = cur->bc_ops;
	struct sx_btree_level *leaf = &cur->bc_levels[0];
	struct sx_buf *bp = leaf->bl_bp;
	u32 i = leaf->bl_ptr, n;
	u64 key, old, nb;
	bool has;
	int error;

	if (!cur->bc_tp || !bt_positioned(cur))
		return -EINVAL;
	n = bt_nrecs(bp);
	key = ops->bo_key(rec);
	old = bt_key(cur, bp, i);
	if (key != old) {
		if (i > 0) {
			nb = bt_key(cur, bp, i - 1);
			has = true;
		} else {
			error = bt_neighbour_key(cur, false, &nb, &has);
			if (error)
				return error;
		}
		if (has && key < nb)
			return -EINVAL;
		if (i + 1 < n) {
			nb = bt_key(cur, bp, i + 1);
			has = true;
		} else {
			error = bt_neighbour_key(cur, true, &nb, &has);
			if (error)
				return error;
		}
		if (has && key > nb)
			return -EINVAL;
	}
	memcpy(bt_rec(ops, bp->b_data, i), rec, ops->bo_recsize);
	error = bt_log_ents(cur, bp, i, 1);
	if (error)
		return error;
	if (i == 0 && key != old)
		return bt_update_keys(cur, 0);
	return 0;
}

/*
 * Build one level of a new tree from @count entries: @recs (leaf) or @ents
 * (node), spread evenly over as few blocks as hold them.  The first key
 * and block of each new block go to @out[0..*@nout) (may be @ents itself).
 */
static int bt_build_level(struct sx_btree_cur *cur, u32 level, const void *recs,
			  const struct bt_ent *ents, u64 count, struct bt_ent *out, u64 *nout)
{
	const struct sx_btree_ops *ops = cur->bc_ops;
	u32 max = bt_max(cur, level), nmax = bt_max(cur, 1);
	u64 nb = sx_howmany(count, max), base = count / nb, extra = count % nb, pos = 0, b;
	struct sx_buf *prev = NULL;
	int error;

	for (b = 0; b < nb; b++) {
		u32 cnt = (u32)(base + (b < extra)), i;
		struct sx_buf *bp;

		error = bt_alloc_block(cur, level, &bp);
		if (error)
			return error;
		if (level == 0) {
			memcpy(bt_rec(ops, bp->b_data, 0),
			       (const u8 *)recs + pos * ops->bo_recsize,
			       (size_t)cnt * ops->bo_recsize);
		} else {
			for (i = 0; i < cnt; i++) {
				*bt_keyp(bp->b_data, i) = cpu_to_le64(ents[pos + i].be_key);
				*bt_ptrp(nmax, bp->b_data, i) = cpu_to_le64(ents[pos + i].be_ptr);
			}
		}
		bt_blk(bp)->bt_numrecs = cpu_to_le16(cnt);
		if (prev) {
			bt_blk(prev)->bt_rightsib = cpu_to_le64(bp->b_blkno);
			bt_blk(bp)->bt_leftsib = cpu_to_le64(prev->b_blkno);
		}
		/* out[b] overwrites an input entry that is already consumed */
		out[b].be_key = bt_key(cur, bp, 0);
		out[b].be_ptr = bp->b_blkno;
		prev = bp;
		pos += cnt;
	}
	*nout = nb;
	return 0;
}

/* Make a new tree holding @n sorted records. */
int sx_btree_build(struct sx_trans *tp, const struct sx_btree_ops *ops, u64 owner,
		   void *priv, u64 hint, const void *recs, u64 n, u64 *root, u32 *nlevels)
{
	struct sx_btree_cur cur;
	struct bt_ent *ents;
	u64 i, nb;
	u32 level;
	int error;

	*root = 0;
	*nlevels = 0;
	if (n == 0)
		return 0;
	sx_btree_cur_init(&cur, tp->t_mp, tp, ops, owner, 0, 0, priv);
	cur.bc_hint = hint;
	if (bt_max(&cur, 0) == 0 || bt_max(&cur, 1) < 2)
		return -EINVAL;
	for (i = 1; i < n; i++)
		if (ops->bo_key((const u8 *)recs + (i - 1) * ops->bo_recsize) >
		    ops->bo_key((const u8 *)recs + i * ops->bo_recsize))
			return -EINVAL;
	nb = sx_howmany(n, bt_max(&cur, 0));
	ents = sx_alloc(sizeof(*ents) * nb, SX_NOFS);
	if (!ents)
		return -ENOMEM;
	error = bt_build_level(&cur, 0, recs, NULL, n, ents, &nb);
	for (level = 1; !error && nb > 1; level++) {
		if (level >= SX_BTREE_MAXLEVELS) {
			error = -EFBIG;
			break;
		}
		error = bt_build_level(&cur, level, NULL, ents, nb, ents, &nb);
	}
	if (!error) {
		*root = ents[0].be_ptr;
		*nlevels = level;
	}
	sx_free(ents);
	return error;
}

/* Free every block of a tree, children before their parents. */
int sx_btree_free_all(struct sx_trans *tp, const struct sx_btree_ops *ops, u64 owner,
		      void *priv, u64 root, u32 nlevels)
{
	struct sx_btree_cur cur;
	struct sx_buf *bp;
	u32 l, top;
	int error;

	sx_btree_cur_init(&cur, tp->t_mp, tp, ops, owner, root, nlevels, priv);
	error = bt_check_root(&cur);
	if (error || nlevels == 0)
		return error;
	top = nlevels - 1;
	error = bt_read(&cur, root, top, &bp);
	if (error)
		return error;
	cur.bc_levels[top].bl_bp = bp;
	l = top;
	for (;;) {
		struct sx_btree_level *lv = &cur.bc_levels[l];

		if (l > 0 && lv->bl_ptr < bt_nrecs(lv->bl_bp)) {
			error = bt_read_child(&cur, lv->bl_bp, lv->bl_ptr, &bp);
			if (error)
				break;
			l--;
			cur.bc_levels[l].bl_bp = bp;
			cur.bc_levels[l].bl_ptr = 0;
			continue;
		}
		bp = lv->bl_bp;
		lv->bl_bp = NULL;
		error = bt_free_block(&cur, bp);
		if (error || l == top)
			break;
		l++;
		cur.bc_levels[l].bl_ptr++;
	}
	sx_btree_cur_release(&cur);
	return error;
}

/* Copy every record of a tree into @recs, at most @max (-EFBIG if more). */
int sx_btree_collect(struct sx_mount *mp, struct sx_trans *tp, const struct sx_btree_ops *ops,
		     u64 owner, u64 root, u32 nlevels, void *recs, u64 max, u64 *n)
{
	struct sx_btree_cur cur;
	bool found;
	int error;

	*n = 0;
	sx_btree_cur_init(&cur, mp, tp, ops, owner, root, nlevels, NULL);
	error = sx_btree_first(&cur, &found);
	while (!error && found) {
		if (*n >= max) {
			error = -EFBIG;
			break;
		}
		error = sx_btree_get(&cur, (u8 *)recs + *n * ops->bo_recsize);
		if (error)
			break;
		(*n)++;
		error = sx_btree_next(&cur, &found);
	}
	sx_btree_cur_release(&cur);
	return error;
}

/* A sibling pointer is 0 or another block of the data area. */
static bool bt_bad_ptr(const struct sx_mount *mp, u64 ptr, u64 self, bool zero_ok)
{
	if (ptr == 0)
		return !zero_ok;
	return ptr < mp->m_sb.sb_datastart || ptr >= mp->m_sb.sb_dblocks || ptr == self;
}

/* Each of @n records at @recs valid, and their keys in order. */
int sx_btree_verify_recs(struct sx_mount *mp, const struct sx_btree_ops *ops, const void *recs,
			 u64 n)
{
	const u8 *rec = recs;
	u64 i;
	int error;

	for (i = 0; i < n; i++, rec += ops->bo_recsize) {
		if (ops->bo_verify_rec) {
			error = ops->bo_verify_rec(mp, rec);
			if (error)
				return error;
		}
		if (SX_IS_CORRUPT(mp, i > 0 && ops->bo_key(rec - ops->bo_recsize) > ops->bo_key(rec)))
			return -EFSCORRUPTED;
	}
	return 0;
}

/* Structure checks of one tree block. */
int sx_btree_verify_block(struct sx_mount *mp, const void *data, const struct sx_btree_ops *ops)
{
	const struct sx_dbtree_block *blk = data;
	u32 level = le16_to_cpu(blk->bt_level), n = le16_to_cpu(blk->bt_numrecs), i, nmax;
	u64 self = le64_to_cpu(blk->bt_hdr.bh_blkno);
	u64 left = le64_to_cpu(blk->bt_leftsib), right = le64_to_cpu(blk->bt_rightsib);

	if (SX_IS_CORRUPT(mp, le32_to_cpu(blk->bt_hdr.bh_magic) != ops->bo_magic) ||
	    SX_IS_CORRUPT(mp, level > SX_BTREE_MAXLEVELS - 1) ||
	    SX_IS_CORRUPT(mp, n > sx_btree_maxrecs(mp, ops, level == 0)) ||
	    SX_IS_CORRUPT(mp, blk->bt_pad != 0) ||
	    SX_IS_CORRUPT(mp, bt_bad_ptr(mp, left, self, true)) ||
	    SX_IS_CORRUPT(mp, bt_bad_ptr(mp, right, self, true)) ||
	    SX_IS_CORRUPT(mp, left != 0 && left == right) ||
	    SX_IS_CORRUPT(mp, n == 0 && (level != 0 || left != 0 || right != 0)))
		return -EFSCORRUPTED;
	if (level == 0)
		return sx_btree_verify_recs(mp, ops, bt_rec(ops, data, 0), n);
	nmax = sx_btree_maxrecs(mp, ops, false);
	for (i = 0; i < n; i++) {
		if (SX_IS_CORRUPT(mp, i > 0 && le64_to_cpu(*bt_keyp(data, i - 1)) >
					   le64_to_cpu(*bt_keyp(data, i))) ||
		    SX_IS_CORRUPT(mp, bt_bad_ptr(mp, le64_to_cpu(*bt_ptrp(nmax, data, i)),
						 self, false)))
			return -EFSCORRUPTED;
	}
	return 0;
}

/*
 * The greatest height a tree of @nrecs records can have.  Every block but
 * the root is at least half full and a root node has two children at
 * least, so the smallest tree of h >= 2 levels holds 2 * leaf * node^(h-2)
 * records (leaf and node: half a block's worth).
 */
u32 sx_btree_max_levels(const struct sx_mount *mp, const struct sx_btree_ops *ops, u64 nrecs)
{
	u64 leaf = sx_max(sx_btree_maxrecs(mp, ops, true) / 2, 1u);
	u64 node = sx_max(sx_btree_maxrecs(mp, ops, false) / 2, 2u);
	u64 least = 2 * leaf;
	u32 levels = 1;

	while (levels < SX_BTREE_MAXLEVELS && nrecs >= least) {
		levels++;
		if (least > nrecs / node)
			break;
		least *= node;
	}
	return levels;
}

/*
 * Worst-case log bytes of one insert or delete in a tree of @nlevels.  Per
 * level: the path block and its sibling (new on a split, the partner of a
 * rebalance or merge) logged whole, the far neighbour whose sibling pointer
 * changes (one chunk of header), the cancel of a freed block and one
 * allocator change.  The parent of each level is the next level's path
 * block or, at the top, a new root: one more block and allocation, or the
 * freed old root.
 */
u32 sx_btree_res_bytes(const struct sx_mount *mp, u32 nlevels)
{
	u32 blk = sx_trans_buf_bytes(mp);
	u32 hdr = sx_trans_op_bytes(sizeof(struct sx_dlog_buf) + sizeof(struct sx_dlog_region) +
				    SX_BUF_CHUNK);
	u32 inval = sx_trans_op_bytes(sizeof(struct sx_dlog_buf));
	u32 alloc = sx_alloc_res_bytes(mp);
	u32 levels = sx_max(nlevels, 1u);

	return levels * (2 * blk + hdr + inval + alloc) + blk + inval + alloc;
}
