// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Extent maps: mappings of file blocks to device blocks in a regular file's
 * fork.  Every call changes at most one piece (with the merge or split it
 * implies), so a caller bounds its transactions by the number of calls.
 *
 * A change is worked out first (which records it leaves, which neighbours
 * it absorbs) and then applied as at most three fork operations, each of
 * which finds its record again by key.  A fork operation may convert the
 * fork between its inline and B+tree forms, which moves every record, so
 * no position is carried from one operation to the next; a lookup is
 * O(log n), so this costs little.  Keys only ever change in place to a
 * value between the neighbours' keys, which is what a fork update allows.
 */
#include "util.h"
#include "bmap.h"
#include "btree.h"
#include "fork.h"
#include "inode.h"
#include "buf.h"
#include "trans.h"
#include "alloc.h"
#include "mount.h"

/* The key of an on-disk mapping. */
static u64 sx_bmbt_key(const void *rec)
{
	return le64_to_cpu(((const struct sx_dbmap_rec *)rec)->br_startoff);
}

/* Decode an on-disk mapping. */
static void sx_bmap_decode(const struct sx_dbmap_rec *d, struct sx_bmap_irec *irec)
{
	irec->br_startoff = le64_to_cpu(d->br_startoff);
	irec->br_startblock = le64_to_cpu(d->br_startblock);
	irec->br_blockcount = le32_to_cpu(d->br_blockcount);
	irec->br_state = le32_to_cpu(d->br_flags) & SX_BMAP_UNWRITTEN;
}

/* Encode a mapping. */
static void sx_bmap_encode(const struct sx_bmap_irec *irec, struct sx_dbmap_rec *d)
{
	d->br_startoff = cpu_to_le64(irec->br_startoff);
	d->br_startblock = cpu_to_le64(irec->br_startblock);
	d->br_blockcount = cpu_to_le32(irec->br_blockcount);
	d->br_flags = cpu_to_le32(irec->br_state);
}

/* A mapping read from disk must lie in the data area and not wrap. */
static int sx_bmbt_verify_rec(struct sx_mount *mp, const void *rec)
{
	const struct sx_dbmap_rec *d = rec;
	u64 off = le64_to_cpu(d->br_startoff), bno = le64_to_cpu(d->br_startblock);
	u32 len = le32_to_cpu(d->br_blockcount);

	if (SX_IS_CORRUPT(mp, len == 0 || len > SX_BMAP_MAXLEN) ||
	    SX_IS_CORRUPT(mp, le32_to_cpu(d->br_flags) & ~SX_BMAP_UNWRITTEN) ||
	    SX_IS_CORRUPT(mp, off + len < off) ||
	    SX_IS_CORRUPT(mp, bno < mp->m_sb.sb_datastart) ||
	    SX_IS_CORRUPT(mp, bno >= mp->m_sb.sb_dblocks ||
			      len > mp->m_sb.sb_dblocks - bno))
		return -EFSCORRUPTED;
	return 0;
}

/* Verifier of extent map B+tree blocks. */
static int sx_bmbt_verify(struct sx_mount *mp, const void *data)
{
	return sx_btree_verify_block(mp, data, &sx_bmbt_ops);
}

static const struct sx_buf_ops sx_bmbt_buf_ops = {
	.bo_name = "bmbt",
	.bo_magic = SX_BMBT_MAGIC,
	.bo_verify = sx_bmbt_verify,
};

const struct sx_btree_ops sx_bmbt_ops = {
	.bo_name = "bmbt",
	.bo_magic = SX_BMBT_MAGIC,
	.bo_recsize = sizeof(struct sx_dbmap_rec),
	.bo_buf_ops = &sx_bmbt_buf_ops,
	.bo_key = sx_bmbt_key,
	.bo_verify_rec = sx_bmbt_verify_rec,
	.bo_set_root = sx_fork_btree_set_root,
	.bo_charge = sx_fork_btree_charge,
};

const struct sx_fork_ops sx_bmap_fork_ops = {
	.fo_btree = &sx_bmbt_ops,
};

/* The number of mappings in the fork. */
u64 sx_bmap_count(const struct sx_inode *ip)
{
	return ip->i_nrecs;
}

/*
 * Log bytes of allocating or freeing one block (a B+tree block): one bit
 * and the free count, at most two chunks of one bitmap block.  Several such
 * changes to one bitmap block add at most a region and a chunk each, so
 * summing this per block is an upper bound of what the bitmap costs.
 * (sx_alloc_res_bytes() covers an extent of up to a bitmap block's worth.)
 */
static u32 sx_bmap_block_alloc_bytes(const struct sx_mount *mp)
{
	u32 bytes = sx_trans_op_bytes(sizeof(struct sx_dlog_buf) +
				      2 * (sizeof(struct sx_dlog_region) + SX_BUF_CHUNK));

	return sx_min(bytes, sx_alloc_res_bytes(mp));
}

/*
 * Log bytes of one fork insert, delete or update in the B+tree form with
 * @levels levels, without the inode block: what sx_btree_res_bytes()
 * counts (per level the path block and its sibling whole, the far
 * neighbour's header, a cancel and an allocation; at the top a new root
 * or the freed old one), with single-block allocations, plus freeing what
 * is left of the tree when a delete turns the fork inline.
 */
static u32 sx_bmap_tree_op_bytes(const struct sx_mount *mp, u32 levels)
{
	u32 blk = sx_trans_buf_bytes(mp);
	u32 hdr = sx_trans_op_bytes(sizeof(struct sx_dlog_buf) + sizeof(struct sx_dlog_region) +
				    SX_BUF_CHUNK);
	u32 inval = sx_trans_op_bytes(sizeof(struct sx_dlog_buf));
	u32 alloc = sx_bmap_block_alloc_bytes(mp);

	levels = sx_max(levels, 1u);
	return levels * (2 * blk + hdr + inval + alloc) + blk + inval + alloc +
	       levels * (inval + alloc);
}

/*
 * Log bytes of one call.  A call is at most three fork operations (of
 * which at most two inserts), all in one transaction, where each buffer
 * is charged once however often it is logged: the inode block (core and
 * inline records) once, plus
 *  - inline, with room for two more records: nothing else, the fork
 *    cannot convert;
 *  - inline, nearly full: one operation may convert it (the new tree is
 *    at most three blocks, see sx_fork_res_bytes()), the other two work on
 *    a tree of at most two levels;
 *  - B+tree of L levels: the first operation on L levels, the other two
 *    on at most L + 1 (a root split leaves a root of two entries, which
 *    the next operation cannot split again).
 */
u32 sx_bmap_res_bytes(const struct sx_mount *mp, const struct sx_inode *ip)
{
	u32 ino = sx_max(sx_trans_buf_bytes(mp), sx_inode_res_bytes(mp));
	u32 blk = sx_trans_buf_bytes(mp);
	u32 inl = sx_fork_inline_max(mp, &sx_bmap_fork_ops);
	u32 levels;

	if (ip->i_format != SX_DIF_BTREE) {
		if (ip->i_nrecs + 2 <= inl)
			return ino;
		return ino + 3 * (blk + sx_bmap_block_alloc_bytes(mp)) +
		       2 * sx_bmap_tree_op_bytes(mp, 2);
	}
	levels = ip->i_broot ? ip->i_blevel + 1 : 1;
	return ino + sx_bmap_tree_op_bytes(mp, levels) +
	       2 * sx_bmap_tree_op_bytes(mp, sx_min(levels + 1, (u32)SX_BTREE_MAXLEVELS));
}

/* The end (first file block after) of a mapping. */
static inline u64 sx_bmap_end(const struct sx_bmap_irec *irec)
{
	return irec->br_startoff + irec->br_blockcount;
}

/* Read the record at the cursor. */
static int sx_bmap_get(struct sx_fork_cur *fc, struct sx_bmap_irec *irec)
{
	struct sx_dbmap_rec d;
	int error;

	error = sx_fork_get(fc, &d);
	if (!error)
		sx_bmap_decode(&d, irec);
	return error;
}

/* Move to the next record and read it; *@found false at the end. */
static int sx_bmap_next_rec(struct sx_fork_cur *fc, struct sx_bmap_irec *irec, bool *found)
{
	int error;

	error = sx_fork_next(fc, found);
	if (error || !*found)
		return error;
	return sx_bmap_get(fc, irec);
}

/* Move to the previous record and read it; *@found false at the start. */
static int sx_bmap_prev_rec(struct sx_fork_cur *fc, struct sx_bmap_irec *irec, bool *found)
{
	int error;

	error = sx_fork_prev(fc, found);
	if (error || !*found)
		return error;
	return sx_bmap_get(fc, irec);
}

/*
 * sx_bmap_find() without a lookup, if the cursor stands on the mapping that
 * contains @off or on one before it whose successor is the answer: changes
 * made one after another along a file (a swap's steps) find each next
 * place there, and a lookup costs a few hundred instructions even when the
 * cursor's path is the one it would walk.  False: look it up.
 */
static bool sx_bmap_find_near(struct sx_fork_cur *fc, u64 off, struct sx_bmap_irec *got,
			      bool *found)
{
	if (sx_bmap_get(fc, got) || got->br_startoff > off)
		return false;
	if (sx_bmap_end(got) > off) {
		*found = true;
		return true;
	}
	if (sx_bmap_next_rec(fc, got, found))
		return false;
	/* the last mapping ends before @off; or the next one is the answer */
	return !*found || sx_bmap_end(got) > off;
}

/*
 * Position @fc on the mapping that contains @off, or else on the first one
 * after it.  *@found is false if there is neither; then the cursor is
 * wherever the search left it.
 */
static int sx_bmap_find(struct sx_fork_cur *fc, u64 off, struct sx_bmap_irec *got,
			bool *found)
{
	int error;

	if (sx_bmap_find_near(fc, off, got, found))
		return 0;
	error = sx_fork_lookup(fc, off, SX_BT_LE, found);
	if (error)
		return error;
	if (*found) {
		error = sx_bmap_get(fc, got);
		if (error || sx_bmap_end(got) > off)
			return error;
		return sx_bmap_next_rec(fc, got, found);
	}
	error = sx_fork_lookup(fc, off, SX_BT_GE, found);
	if (error || !*found)
		return error;
	return sx_bmap_get(fc, got);
}

/*
 * Position @fc on the record that starts at @off, which must exist.  The
 * callers have mostly just read that record or its neighbour through @fc:
 * a cursor on one of them moves there without a lookup.
 */
static int sx_bmap_seek(struct sx_fork_cur *fc, u64 off)
{
	struct sx_bmap_irec got;
	bool found;
	int error;

	if (sx_bmap_get(fc, &got) == 0) {
		if (got.br_startoff == off)
			return 0;
		if (got.br_startoff < off && sx_bmap_next_rec(fc, &got, &found) == 0 && found &&
		    got.br_startoff == off)
			return 0;
	}
	error = sx_fork_lookup(fc, off, SX_BT_LE, &found);
	if (error)
		return error;
	if (SX_IS_CORRUPT(fc->fc_ip->i_mp, !found))
		return -EFSCORRUPTED;
	error = sx_bmap_get(fc, &got);
	if (error)
		return error;
	if (SX_IS_CORRUPT(fc->fc_ip->i_mp, got.br_startoff != off))
		return -EFSCORRUPTED;
	return 0;
}

/* Replace the record that starts at @key with @irec. */
static int sx_bmap_update_at(struct sx_fork_cur *fc, u64 key, const struct sx_bmap_irec *irec)
{
	struct sx_dbmap_rec d;
	int error;

	error = sx_bmap_seek(fc, key);
	if (error)
		return error;
	sx_bmap_encode(irec, &d);
	return sx_fork_update(fc, &d);
}

/* Delete the record that starts at @key. */
static int sx_bmap_delete_at(struct sx_fork_cur *fc, u64 key)
{
	bool found;
	int error;

	error = sx_bmap_seek(fc, key);
	if (error)
		return error;
	return sx_fork_delete(fc, &found);
}

/* Insert @irec as a new record. */
static int sx_bmap_insert(struct sx_fork_cur *fc, const struct sx_bmap_irec *irec)
{
	struct sx_dbmap_rec d;

	sx_bmap_encode(irec, &d);
	return sx_fork_insert(fc, &d);
}

/* Find what covers @off: a mapping, or the hole up to the next one. */
int sx_bmap_lookup(struct sx_trans *tp, struct sx_inode *ip, u64 off,
		   struct sx_bmap_irec *irec)
{
	struct sx_fork_cur fc;
	struct sx_bmap_irec got;
	bool found;
	u64 end = off + SX_BMAP_MAXLEN;
	int error;

	if (end < off)
		end = ~0ull;
	sx_fork_cur_init(&fc, ip, tp, &sx_bmap_fork_ops);
	error = sx_bmap_find(&fc, off, &got, &found);
	if (error)
		goto out;
	if (found && got.br_startoff <= off) {
		*irec = got;
		goto out;
	}
	if (found && got.br_startoff < end)
		end = got.br_startoff;
	irec->br_startoff = off;
	irec->br_startblock = SX_HOLE;
	irec->br_blockcount = (u32)(end - off);
	irec->br_state = 0;
out:
	sx_fork_cur_release(&fc);
	return error;
}

/* The mapping that contains @off or, failing that, the first one after it. */
int sx_bmap_next(struct sx_trans *tp, struct sx_inode *ip, u64 off,
		 struct sx_bmap_irec *irec, bool *found)
{
	struct sx_fork_cur fc;
	int error;

	sx_fork_cur_init(&fc, ip, tp, &sx_bmap_fork_ops);
	error = sx_bmap_find(&fc, off, irec, found);
	sx_fork_cur_release(&fc);
	return error;
}

/* Records sx_bmap_next_n() copies out of a block at once. */
#define SX_BMAP_RUN	16

/*
 * The mapping that contains @off or, failing that, the first one after it,
 * and the ones that follow it, up to @n in all, in one walk of the fork.
 * *@got: how many (0 if none is at or after @off).
 */
int sx_bmap_next_n(struct sx_trans *tp, struct sx_inode *ip, u64 off,
		   struct sx_bmap_irec *irecs, u32 n, u32 *got)
{
	struct sx_fork_cur fc;
	struct sx_bmap_irec first;	/* read again below, with the rest */
	bool found;
	int error;

	*got = 0;
	if (n == 0)
		return 0;
	sx_fork_cur_init(&fc, ip, tp, &sx_bmap_fork_ops);
	error = sx_bmap_find(&fc, off, &first, &found);
	/* a leaf's records at once: a get and a next per record cost ~330 instructions */
	while (!error && found) {
		struct sx_dbmap_rec d[SX_BMAP_RUN];
		u32 k, m;

		error = sx_fork_get_run(&fc, d, sx_min(n - *got, (u32)SX_BMAP_RUN), &m);
		if (error)
			break;
		for (k = 0; k < m; k++)
			sx_bmap_decode(&d[k], &irecs[*got + k]);
		*got += m;
		if (*got == n)
			break;
		error = sx_fork_next(&fc, &found);
	}
	sx_fork_cur_release(&fc);
	return error;
}

/* True if @b continues @a in the file and on disk, with the same state. */
static bool sx_bmap_contiguous(const struct sx_bmap_irec *a, const struct sx_bmap_irec *b)
{
	return sx_bmap_end(a) == b->br_startoff &&
	       a->br_startblock + a->br_blockcount == b->br_startblock &&
	       a->br_state == b->br_state &&
	       (u64)a->br_blockcount + b->br_blockcount <= SX_BMAP_MAXLEN;
}

/* Check the fields of a mapping passed in by a caller. */
static int sx_bmap_check_irec(struct sx_mount *mp, const struct sx_bmap_irec *irec)
{
	if (irec->br_blockcount == 0 || irec->br_blockcount > SX_BMAP_MAXLEN ||
	    (irec->br_state & ~SX_BMAP_UNWRITTEN) ||
	    sx_bmap_end(irec) < irec->br_startoff)
		return -EINVAL;
	if (irec->br_startblock < mp->m_sb.sb_datastart ||
	    irec->br_startblock >= mp->m_sb.sb_dblocks ||
	    irec->br_blockcount > mp->m_sb.sb_dblocks - irec->br_startblock)
		return -EINVAL;
	return 0;
}

/*
 * Work out and apply the merge of @new into the hole it lies in: it may
 * grow the mapping before it (@left), the one after it (@right), join
 * both, or become a record of its own.
 */
static int sx_bmap_add(struct sx_fork_cur *fc, const struct sx_bmap_irec *new,
		       const struct sx_bmap_irec *left, bool have_left,
		       const struct sx_bmap_irec *right, bool have_right)
{
	struct sx_bmap_irec m = *new;
	bool merge_left = have_left && sx_bmap_contiguous(left, &m);
	bool merge_right;
	int error;

	if (merge_left) {
		m.br_startoff = left->br_startoff;
		m.br_startblock = left->br_startblock;
		m.br_blockcount += left->br_blockcount;
	}
	merge_right = have_right && sx_bmap_contiguous(&m, right);
	if (merge_right)
		m.br_blockcount += right->br_blockcount;

	if (merge_left && merge_right) {
		/* left, new and right become one: drop right, grow left */
		error = sx_bmap_delete_at(fc, right->br_startoff);
		if (error)
			return error;
		return sx_bmap_update_at(fc, left->br_startoff, &m);
	}
	if (merge_left)
		return sx_bmap_update_at(fc, left->br_startoff, &m);
	if (merge_right)
		/* right starts earlier now, still after left */
		return sx_bmap_update_at(fc, right->br_startoff, &m);
	return sx_bmap_insert(fc, &m);
}

/*
 * Map @irec into a hole through cursor @fc, merging with its neighbours;
 * @charge: add its blocks to i_nblocks; @log_ino: log the inode core at
 * the end (see sx_bmap_map_nocharge_cur() for why it may be left out).
 */
static int sx_bmap_map_fc(struct sx_fork_cur *fc, const struct sx_bmap_irec *irec, bool charge,
			  bool log_ino)
{
	struct sx_trans *tp = fc->fc_tp;
	struct sx_inode *ip = fc->fc_ip;
	struct sx_mount *mp = ip->i_mp;
	struct sx_bmap_irec left = { 0 }, right = { 0 };
	bool have_left = false, have_right;
	int error;

	error = sx_bmap_check_irec(mp, irec);
	if (error)
		return error;
	error = sx_bmap_find(fc, irec->br_startoff, &right, &have_right);
	if (error)
		return error;
	if (have_right && SX_IS_CORRUPT(mp, right.br_startoff < sx_bmap_end(irec)))
		return -EFSCORRUPTED;		/* the range is not a hole */
	/* the mapping before the hole, if any */
	if (have_right) {
		error = sx_bmap_prev_rec(fc, &left, &have_left);
	} else {
		error = sx_fork_lookup(fc, irec->br_startoff, SX_BT_LE, &have_left);
		if (!error && have_left)
			error = sx_bmap_get(fc, &left);
	}
	if (error)
		return error;
	if (have_left && SX_IS_CORRUPT(mp, sx_bmap_end(&left) > irec->br_startoff))
		return -EFSCORRUPTED;
	error = sx_bmap_add(fc, irec, &left, have_left, &right, have_right);
	if (error)
		return error;
	if (charge)
		ip->i_nblocks += irec->br_blockcount;
	return log_ino ? sx_inode_log(tp, ip) : 0;
}

/* sx_bmap_map_fc() with a cursor of its own. */
static int sx_bmap_map_charge(struct sx_trans *tp, struct sx_inode *ip,
			      const struct sx_bmap_irec *irec, bool charge)
{
	struct sx_fork_cur fc;
	int error;

	sx_fork_cur_init(&fc, ip, tp, &sx_bmap_fork_ops);
	error = sx_bmap_map_fc(&fc, irec, charge, true);
	sx_fork_cur_release(&fc);
	return error;
}

/* Map @irec into a hole and charge its blocks to the inode. */
int sx_bmap_map(struct sx_trans *tp, struct sx_inode *ip, const struct sx_bmap_irec *irec)
{
	return sx_bmap_map_charge(tp, ip, irec, true);
}

/* Map @irec into a hole; the caller moves the block count itself. */
int sx_bmap_map_nocharge(struct sx_trans *tp, struct sx_inode *ip,
			 const struct sx_bmap_irec *irec)
{
	return sx_bmap_map_charge(tp, ip, irec, false);
}

/* sx_bmap_map_nocharge() through the caller's cursor. */
int sx_bmap_map_nocharge_cur(struct sx_fork_cur *fc, const struct sx_bmap_irec *irec)
{
	return sx_bmap_map_fc(fc, irec, false, false);
}

/*
 * Find the first mapping that overlaps [@off, @end); *@found false if none
 * does.  The cursor is left on it.
 */
static int sx_bmap_first_in(struct sx_fork_cur *fc, u64 off, u64 end,
			    struct sx_bmap_irec *got, bool *found)
{
	int error;

	error = sx_bmap_find(fc, off, got, found);
	if (!error && *found && got->br_startoff >= end)
		*found = false;
	return error;
}

/* The pieces a change leaves of one mapping. */
struct sx_bmap_pieces {
	struct sx_bmap_irec	bp_left;	/* before the range (may be empty) */
	struct sx_bmap_irec	bp_mid;		/* the part inside the range */
	struct sx_bmap_irec	bp_right;	/* after the range (may be empty) */
};

/* Split @got at the bounds of [@off, @end). */
static void sx_bmap_split(const struct sx_bmap_irec *got, u64 off, u64 end,
			  struct sx_bmap_pieces *p)
{
	u64 gend = sx_bmap_end(got);
	u64 cstart = sx_max(off, got->br_startoff), cend = sx_min(end, gend);

	p->bp_left = *got;
	p->bp_left.br_blockcount = (u32)(cstart - got->br_startoff);
	p->bp_mid = *got;
	p->bp_mid.br_startoff = cstart;
	p->bp_mid.br_startblock = got->br_startblock + (cstart - got->br_startoff);
	p->bp_mid.br_blockcount = (u32)(cend - cstart);
	p->bp_right = *got;
	p->bp_right.br_startoff = cend;
	p->bp_right.br_startblock = got->br_startblock + (cend - got->br_startoff);
	p->bp_right.br_blockcount = (u32)(gend - cend);
}

/*
 * Unmap the first mapped piece of [@off, @off + @len) through cursor @fc;
 * @charge: take it off i_nblocks; @log_ino: log the inode core at the end.
 */
static int sx_bmap_unmap_fc(struct sx_fork_cur *fc, u64 off, u64 len,
			    struct sx_bmap_irec *removed, bool charge, bool log_ino)
{
	struct sx_trans *tp = fc->fc_tp;
	struct sx_inode *ip = fc->fc_ip;
	struct sx_bmap_pieces p;
	struct sx_bmap_irec got;
	u64 end = off + len;
	bool found;
	int error;

	if (end < off)
		end = ~0ull;
	removed->br_startoff = off;
	removed->br_startblock = SX_HOLE;
	removed->br_blockcount = 0;
	removed->br_state = 0;
	if (len == 0)
		return 0;
	error = sx_bmap_first_in(fc, off, end, &got, &found);
	if (error || !found)
		return error;
	sx_bmap_split(&got, off, end, &p);
	if (p.bp_left.br_blockcount) {
		/* the record keeps its key and shrinks to the left piece */
		error = sx_bmap_update_at(fc, got.br_startoff, &p.bp_left);
		if (!error && p.bp_right.br_blockcount)
			error = sx_bmap_insert(fc, &p.bp_right);
	} else if (p.bp_right.br_blockcount) {
		/* its key moves up to the right piece, still before the next */
		error = sx_bmap_update_at(fc, got.br_startoff, &p.bp_right);
	} else {
		error = sx_bmap_delete_at(fc, got.br_startoff);
	}
	if (error)
		return error;
	*removed = p.bp_mid;
	if (charge)
		ip->i_nblocks -= p.bp_mid.br_blockcount;
	return log_ino ? sx_inode_log(tp, ip) : 0;
}

/* sx_bmap_unmap_fc() with a cursor of its own. */
static int sx_bmap_unmap_charge(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
				struct sx_bmap_irec *removed, bool charge)
{
	struct sx_fork_cur fc;
	int error;

	sx_fork_cur_init(&fc, ip, tp, &sx_bmap_fork_ops);
	error = sx_bmap_unmap_fc(&fc, off, len, removed, charge, true);
	sx_fork_cur_release(&fc);
	return error;
}

/* Unmap the first mapped piece of [@off, @off + @len) and uncharge its blocks. */
int sx_bmap_unmap_one(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
		      struct sx_bmap_irec *removed)
{
	return sx_bmap_unmap_charge(tp, ip, off, len, removed, true);
}

/* Unmap the first mapped piece; the caller moves the block count itself. */
int sx_bmap_unmap_one_nocharge(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
			       struct sx_bmap_irec *removed)
{
	return sx_bmap_unmap_charge(tp, ip, off, len, removed, false);
}

/* sx_bmap_unmap_one_nocharge() through the caller's cursor. */
int sx_bmap_unmap_one_nocharge_cur(struct sx_fork_cur *fc, u64 off, u64 len,
				   struct sx_bmap_irec *removed)
{
	return sx_bmap_unmap_fc(fc, off, len, removed, false, false);
}

/*
 * Give the middle piece of @got (per @p) its new state or blocks, merging
 * it with the mapping before (@prev) or after (@next) when it now
 * continues them.
 */
static int sx_bmap_restate(struct sx_fork_cur *fc, const struct sx_bmap_irec *got,
			   struct sx_bmap_pieces *p,
			   const struct sx_bmap_irec *prev, bool have_prev,
			   const struct sx_bmap_irec *next, bool have_next)
{
	struct sx_bmap_irec m = p->bp_mid;
	bool has_left = p->bp_left.br_blockcount != 0;
	bool has_right = p->bp_right.br_blockcount != 0;
	bool merge_prev = !has_left && have_prev && sx_bmap_contiguous(prev, &m);
	bool merge_next;
	int error;

	if (merge_prev) {
		m.br_startoff = prev->br_startoff;
		m.br_startblock = prev->br_startblock;
		m.br_blockcount += prev->br_blockcount;
	}
	merge_next = !has_right && have_next && sx_bmap_contiguous(&m, next);
	if (merge_next) {
		m.br_blockcount += next->br_blockcount;
		error = sx_bmap_delete_at(fc, next->br_startoff);
		if (error)
			return error;
	}
	if (merge_prev) {
		error = sx_bmap_update_at(fc, prev->br_startoff, &m);
		if (error)
			return error;
		/* what is left of got is its right piece, or nothing */
		if (has_right)
			return sx_bmap_update_at(fc, got->br_startoff, &p->bp_right);
		return sx_bmap_delete_at(fc, got->br_startoff);
	}
	if (has_left) {
		error = sx_bmap_update_at(fc, got->br_startoff, &p->bp_left);
		if (!error)
			error = sx_bmap_insert(fc, &m);
	} else {
		/* m starts where got did */
		error = sx_bmap_update_at(fc, got->br_startoff, &m);
	}
	if (!error && has_right)
		error = sx_bmap_insert(fc, &p->bp_right);
	return error;
}

/*
 * Put p->bp_mid, the new contents of the middle piece of @got (the cursor
 * stands on @got), in the fork: find the neighbours it may now continue,
 * then let sx_bmap_restate() apply it.
 */
static int sx_bmap_change_mid(struct sx_fork_cur *fc, const struct sx_bmap_irec *got,
			      struct sx_bmap_pieces *p)
{
	struct sx_bmap_irec prev = { 0 }, next = { 0 };
	bool have_prev = false, have_next = false;
	int error = 0;

	if (!p->bp_right.br_blockcount) {
		error = sx_bmap_next_rec(fc, &next, &have_next);
		if (!error)
			error = sx_bmap_seek(fc, got->br_startoff);
	}
	if (!error && !p->bp_left.br_blockcount)
		error = sx_bmap_prev_rec(fc, &prev, &have_prev);
	if (error)
		return error;
	return sx_bmap_restate(fc, got, p, &prev, have_prev, &next, have_next);
}

/* Change the state of the first piece in range whose state differs. */
int sx_bmap_set_state_one(struct sx_trans *tp, struct sx_inode *ip, u64 off, u64 len,
			  u32 state, struct sx_bmap_irec *changed)
{
	struct sx_bmap_irec got;
	struct sx_bmap_pieces p;
	struct sx_fork_cur fc;
	u64 end = off + len;
	bool found;
	int error;

	if (state & ~SX_BMAP_UNWRITTEN)
		return -EINVAL;
	if (end < off)
		end = ~0ull;
	changed->br_startoff = off;
	changed->br_startblock = SX_HOLE;
	changed->br_blockcount = 0;
	changed->br_state = 0;
	if (len == 0)
		return 0;
	sx_fork_cur_init(&fc, ip, tp, &sx_bmap_fork_ops);
	error = sx_bmap_first_in(&fc, off, end, &got, &found);
	while (!error && found && got.br_state == state) {
		if (sx_bmap_end(&got) >= end) {
			found = false;
			break;
		}
		error = sx_bmap_next_rec(&fc, &got, &found);
		if (!error && found && got.br_startoff >= end)
			found = false;
	}
	if (error || !found)
		goto out;
	sx_bmap_split(&got, off, end, &p);
	p.bp_mid.br_state = state;
	error = sx_bmap_change_mid(&fc, &got, &p);
	if (error)
		goto out;
	*changed = p.bp_mid;
	error = sx_inode_log(tp, ip);
out:
	sx_fork_cur_release(&fc);
	return error;
}

/*
 * New blocks where one mapping was: the mapping's piece gets them in place,
 * so a file rewritten out of place a block at a time changes one record
 * (and its neighbours' when the new blocks continue them), where an unmap
 * and a map would delete the record and insert it again, each shifting and
 * logging every record after it in the leaf.
 */
int sx_bmap_replace_one(struct sx_trans *tp, struct sx_inode *ip,
			const struct sx_bmap_irec *irec, struct sx_bmap_irec *removed)
{
	u64 off = irec->br_startoff, end = sx_bmap_end(irec);
	struct sx_bmap_irec got, old;
	struct sx_bmap_pieces p;
	struct sx_fork_cur fc;
	bool found;
	int error;

	removed->br_startoff = off;
	removed->br_startblock = SX_HOLE;
	removed->br_blockcount = 0;
	removed->br_state = 0;
	error = sx_bmap_check_irec(ip->i_mp, irec);
	if (error)
		return error;
	sx_fork_cur_init(&fc, ip, tp, &sx_bmap_fork_ops);
	error = sx_bmap_first_in(&fc, off, end, &got, &found);
	if (error || !found || got.br_startoff > off || sx_bmap_end(&got) < end)
		goto out;
	/*
	 * The new blocks cannot continue what is left of the old mapping on
	 * either side: those are the old blocks next to the ones replaced,
	 * still allocated, so the new ones lie elsewhere.  Only the neighbour
	 * records can join them, which sx_bmap_change_mid() looks at.
	 */
	sx_bmap_split(&got, off, end, &p);
	if (irec->br_startblock < p.bp_mid.br_startblock + p.bp_mid.br_blockcount &&
	    p.bp_mid.br_startblock < irec->br_startblock + irec->br_blockcount) {
		error = -EINVAL;	/* the new blocks overlap the ones they replace */
		goto out;
	}
	old = p.bp_mid;
	p.bp_mid = *irec;
	error = sx_bmap_change_mid(&fc, &got, &p);
	if (!error)
		error = sx_inode_log(tp, ip);
	if (!error)
		*removed = old;
out:
	sx_fork_cur_release(&fc);
	return error;
}
