// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The checker's walk of every file: who uses each data block.
 *
 * From the fsinfo block: the root directory and its names, every file they
 * name, the files on the unlinked list, and the refcount B+tree.  Every
 * metadata block (fsinfo, inodes, fork and refcount B+tree blocks) is
 * claimed once; every mapping adds one to the count of each of its blocks.
 * Per file: its mappings are sorted and do not overlap, its block count is
 * what it maps plus its B+tree blocks, its link count is the number of
 * names it has (zero on the unlinked list, which it must then be on); the
 * directory's size is its number of entries; fsinfo's inode count is the
 * number of inodes found.  Then every data block is judged: a block mapped
 * k >= 2 times has a refcount record of k, a block mapped once has none, a
 * metadata block is never also mapped, and the bitmap says "in use" for
 * exactly the blocks that have a user (else: leaked, or free but in use).
 *
 * Memory: a count, a refcount and three bits per data block, and one block
 * buffer; B+tree nodes are read one at a time.
 */
#include "util.h"
#include "sb.h"
#include "buf.h"
#include "alloc.h"
#include "btree.h"
#include "bmap.h"
#include "dir.h"
#include "refcount.h"
#include "fsinfo.h"
#include "inode.h"
#include "mount.h"
#include "check.h"
#include "check_priv.h"
#include "dev.h"

/* Problems reported one by one about data blocks; the rest are only counted. */
#define CK_BLOCK_DETAIL		20

struct ck_usage {
	struct sx_checker *cu_ck;
	u64		cu_base;	/* sb_datastart */
	u64		cu_n;		/* data blocks */
	u32		*cu_count;	/* mappings of each data block */
	u32		*cu_refc;	/* the refcount tree's count; 0 = no record */
	u8		*cu_meta;	/* a bit per data block: metadata */
	/*
	 * A bit per data block: claimed as metadata by a pointer whose block
	 * then failed to verify.  A corrupt pointer may aim at a block that
	 * another structure really owns; when that structure reaches it, it
	 * takes the block over, so that its walk goes on and the problems it
	 * would find are not hidden behind the damaged pointer's.
	 */
	u8		*cu_weak;
	u8		*cu_inode;	/* a bit per data block: an inode walked */
	u8		*cu_buf;	/* one block */
	u64		cu_inodes;
	u64		cu_mapped;	/* mapped blocks, with repeats */
	u64		cu_claimed;	/* metadata blocks claimed */
	/* an allocation failed: some records went unwalked, judge nothing */
	bool		cu_nomem;
};

/* One file's walk. */
struct ck_file {
	u64		cf_ino;
	u64		cf_prev_end;	/* end of the previous mapping */
	u64		cf_mapped;
	bool		cf_unsorted;
};

/* The names of the directory. */
struct ck_names {
	u64		*cn_ino;
	u64		cn_n;
	u64		cn_cap;
	u64		cn_prev_hash;
	bool		cn_nomem;
};

static bool ck_bit_set(u8 *map, u64 i)
{
	bool was = map[i / 8] & (1u << (i % 8));

	map[i / 8] |= (u8)(1u << (i % 8));
	return was;
}

static bool ck_bit(const u8 *map, u64 i)
{
	return map[i / 8] & (1u << (i % 8));
}

static void ck_bit_clear(u8 *map, u64 i)
{
	map[i / 8] &= (u8)~(1u << (i % 8));
}

/* True if [@bno, +@len) lies on the data area. */
static bool ck_in_data(const struct ck_usage *cu, u64 bno, u64 len)
{
	return bno >= cu->cu_base && bno - cu->cu_base < cu->cu_n &&
	       len <= cu->cu_n - (bno - cu->cu_base);
}

/* Claim @bno as a metadata block of @what; false if it cannot be. */
static bool ck_claim_meta(struct ck_usage *cu, u64 bno, const char *what, u64 owner)
{
	if (!ck_in_data(cu, bno, 1)) {
		sx_check_problem(cu->cu_ck, "%s block %llu (owner %llu) is outside the data area",
			   what, (sx_ull)bno, (sx_ull)owner);
		return false;
	}
	if (ck_bit_set(cu->cu_meta, bno - cu->cu_base)) {
		if (ck_bit(cu->cu_weak, bno - cu->cu_base)) {
			ck_bit_clear(cu->cu_weak, bno - cu->cu_base);
			return true;
		}
		sx_check_problem(cu->cu_ck, "%s block %llu (owner %llu) is already used as metadata",
			   what, (sx_ull)bno, (sx_ull)owner);
		return false;
	}
	cu->cu_claimed++;
	return true;
}

/* Read and verify metadata block @bno into the usage buffer. */
static bool ck_read_meta(struct ck_usage *cu, u64 bno, const struct sx_buf_ops *ops,
			 u64 owner, const char *what)
{
	struct sx_mount *mp = cu->cu_ck->ck_mp;
	char name[96];
	int error;

	error = sx_dev_read(mp, bno, 1, cu->cu_buf);
	if (!error)
		error = sx_buf_verify(mp, cu->cu_buf, bno, ops, owner);
	if (error) {
		sx_check_problem(cu->cu_ck, "%s block %llu (owner %llu) is bad: %s (%d)", what,
			   (sx_ull)bno, (sx_ull)owner, sx_offline_errname(error), error);
		if (ck_in_data(cu, bno, 1))
			ck_bit_set(cu->cu_weak, bno - cu->cu_base);
		return false;
	}
	snprintf(name, sizeof(name), "%s block %llu (owner %llu)", what, (sx_ull)bno,
		 (sx_ull)owner);
	sx_check_lsn(cu->cu_ck, cu->cu_buf, name);
	return true;
}

/* What a walk does with each record. */
typedef void (*ck_rec_fn)(struct ck_usage *cu, u64 owner, const void *rec, void *arg);

/*
 * Walk the B+tree at @bno (level @level) of type @ops: claim and verify
 * every block, hand every leaf record to @fn in key order.  A node's child
 * pointers are copied out before its children are read.
 */
static void ck_walk_btree(struct ck_usage *cu, const struct sx_btree_ops *ops, u64 owner,
			  u64 bno, u32 level, ck_rec_fn fn, void *arg, u32 depth)
{
	struct sx_mount *mp = cu->cu_ck->ck_mp;
	const struct sx_dbtree_block *blk = (const void *)cu->cu_buf;
	u32 n, i, nmax = sx_btree_maxrecs(mp, ops, false);
	u64 *ptrs;
	u8 *rec;

	if (depth >= SX_BTREE_MAXLEVELS) {
		sx_check_problem(cu->cu_ck, "%s of owner %llu is deeper than %u levels", ops->bo_name,
			   (sx_ull)owner, SX_BTREE_MAXLEVELS);
		return;
	}
	if (!ck_claim_meta(cu, bno, ops->bo_name, owner) ||
	    !ck_read_meta(cu, bno, ops->bo_buf_ops, owner, ops->bo_name))
		return;
	n = le16_to_cpu(blk->bt_numrecs);
	if (le16_to_cpu(blk->bt_level) != level) {
		sx_check_problem(cu->cu_ck, "%s block %llu (owner %llu) is at level %u, expected %u",
			   ops->bo_name, (sx_ull)bno, (sx_ull)owner,
			   le16_to_cpu(blk->bt_level), level);
		return;
	}
	if (level == 0) {
		rec = sx_alloc((size_t)n * ops->bo_recsize + 1, 0);
		if (!rec) {
			cu->cu_nomem = true;
			return;
		}
		memcpy(rec, cu->cu_buf + sizeof(*blk), (size_t)n * ops->bo_recsize);
		for (i = 0; i < n; i++)
			fn(cu, owner, rec + (size_t)i * ops->bo_recsize, arg);
		sx_free(rec);
		return;
	}
	ptrs = sx_alloc(sizeof(*ptrs) * (n + 1), 0);
	if (!ptrs) {
		cu->cu_nomem = true;
		return;
	}
	for (i = 0; i < n; i++)
		ptrs[i] = le64_to_cpu(*(const __le64 *)(cu->cu_buf + sizeof(*blk) +
							(size_t)(nmax + i) * sizeof(__le64)));
	for (i = 0; i < n; i++)
		ck_walk_btree(cu, ops, owner, ptrs[i], level - 1, fn, arg, depth + 1);
	sx_free(ptrs);
}

/* One mapping of a file: in order, on the data area; count its blocks. */
static void ck_bmap_rec(struct ck_usage *cu, u64 ino, const void *rec, void *arg)
{
	const struct sx_dbmap_rec *d = rec;
	struct ck_file *cf = arg;
	u64 off = le64_to_cpu(d->br_startoff), bno = le64_to_cpu(d->br_startblock), b;
	u32 len = le32_to_cpu(d->br_blockcount);

	if (len == 0 || len > SX_BMAP_MAXLEN || !ck_in_data(cu, bno, len) ||
	    (le32_to_cpu(d->br_flags) & ~SX_BMAP_UNWRITTEN)) {
		sx_check_problem(cu->cu_ck, "inode %llu maps [%llu, +%u) at %llu, which is impossible",
			   (sx_ull)ino, (sx_ull)off, len, (sx_ull)bno);
		return;
	}
	if (off < cf->cf_prev_end && !cf->cf_unsorted) {
		sx_check_problem(cu->cu_ck, "inode %llu: mapping at file block %llu overlaps or is out of order",
			   (sx_ull)ino, (sx_ull)off);
		cf->cf_unsorted = true;
	}
	cf->cf_prev_end = off + len;
	for (b = bno - cu->cu_base; b < bno - cu->cu_base + len; b++)
		if (cu->cu_count[b] != ~0u)
			cu->cu_count[b]++;
	cf->cf_mapped += len;
	cu->cu_mapped += len;
}

/* One directory entry: in hash order; remember its inode. */
static void ck_dir_rec(struct ck_usage *cu, u64 dino, const void *rec, void *arg)
{
	const struct sx_ddir_rec *de = rec;
	struct ck_names *cn = arg;
	u64 hash = le64_to_cpu(de->de_hash);
	u32 len = le16_to_cpu(de->de_namelen);

	if (len == 0 || len > SX_NAME_MAX || sx_dir_hash(de->de_name, len) != hash)
		sx_check_problem(cu->cu_ck, "directory %llu: an entry's name and hash do not agree",
			   (sx_ull)dino);
	if (cn->cn_n && hash < cn->cn_prev_hash)
		sx_check_problem(cu->cu_ck, "directory %llu: entries out of hash order", (sx_ull)dino);
	cn->cn_prev_hash = hash;
	if (cn->cn_n == cn->cn_cap) {
		u64 cap = cn->cn_cap ? 2 * cn->cn_cap : 64;
		u64 *n = sx_alloc(sizeof(*n) * cap, 0);

		if (!n) {
			cn->cn_nomem = true;
			cu->cu_nomem = true;
			return;
		}
		if (cn->cn_n)
			memcpy(n, cn->cn_ino, sizeof(*n) * cn->cn_n);
		sx_free(cn->cn_ino);
		cn->cn_ino = n;
		cn->cn_cap = cap;
	}
	cn->cn_ino[cn->cn_n++] = le64_to_cpu(de->de_ino);
}

/*
 * Walk inode @ino once: claim it, check what its fork maps (a regular
 * file) or collect its names into @cn (the root directory).  @names: the
 * links it should have.  *@next: its di_next_unlinked.
 */
static void ck_walk_inode(struct ck_usage *cu, u64 ino, struct ck_names *cn, u32 names,
			  u64 *next)
{
	struct sx_mount *mp = cu->cu_ck->ck_mp;
	const struct sx_dinode *di = (const void *)cu->cu_buf;
	const struct sx_btree_ops *ops;
	struct ck_file cf = { .cf_ino = ino };
	u64 nrecs, root, i, nblocks, size, claimed0;
	u32 mode, fmt, level, recsize, nlink;
	ck_rec_fn fn;
	void *arg;
	u8 *recs;

	*next = 0;
	if (!ck_in_data(cu, ino, 1)) {
		sx_check_problem(cu->cu_ck, "inode number %llu is not on the data area", (sx_ull)ino);
		return;
	}
	if (ck_bit_set(cu->cu_inode, ino - cu->cu_base)) {
		sx_check_problem(cu->cu_ck, "inode %llu is reached twice", (sx_ull)ino);
		return;
	}
	if (!ck_claim_meta(cu, ino, "inode", ino) ||
	    !ck_read_meta(cu, ino, &sx_inode_core_buf_ops, ino, "inode"))
		return;
	cu->cu_inodes++;
	*next = le64_to_cpu(di->di_next_unlinked);
	mode = le16_to_cpu(di->di_mode) & SX_IFMT;
	fmt = le16_to_cpu(di->di_format);
	nrecs = le64_to_cpu(di->di_nrecs);
	root = le64_to_cpu(di->di_broot);
	level = le32_to_cpu(di->di_blevel);
	nblocks = le64_to_cpu(di->di_nblocks);
	size = le64_to_cpu(di->di_size);
	nlink = le32_to_cpu(di->di_nlink);
	if (mode == SX_IFREG) {
		ops = &sx_bmbt_ops;
		fn = ck_bmap_rec;
		arg = &cf;
		if (nlink != names)
			sx_check_problem(cu->cu_ck, "inode %llu has %u links but %u names", (sx_ull)ino,
				   nlink, names);
	} else if (mode == SX_IFDIR && cn) {
		ops = &sx_dirbt_ops;
		fn = ck_dir_rec;
		arg = cn;
	} else {
		sx_check_problem(cu->cu_ck, "inode %llu: a %s where none can be", (sx_ull)ino,
			   mode == SX_IFDIR ? "directory" : "file of unknown type");
		return;
	}
	recsize = ops->bo_recsize;
	claimed0 = cu->cu_claimed;
	if (fmt == SX_DIF_BTREE) {
		/* the inode verifier refused a B+tree fork without a root block */
		ck_walk_btree(cu, ops, ino, root, level, fn, arg, 0);
	} else {
		/* (the verifier refused this too; the check guards the copy below) */
		if (nrecs > SX_FORK_BYTES(mp->m_bsize) / recsize) {
			sx_check_problem(cu->cu_ck, "inode %llu: %llu inline records do not fit its fork",
				   (sx_ull)ino, (sx_ull)nrecs);
			return;
		}
		recs = sx_alloc((size_t)nrecs * recsize + 1, 0);
		if (!recs) {
			cu->cu_nomem = true;
			return;
		}
		memcpy(recs, cu->cu_buf + SX_DINODE_CORE, (size_t)nrecs * recsize);
		for (i = 0; i < nrecs; i++)
			fn(cu, ino, recs + i * recsize, arg);
		sx_free(recs);
	}
	if (cu->cu_nomem)
		return;
	if (cf.cf_mapped + (cu->cu_claimed - claimed0) != nblocks)
		sx_check_problem(cu->cu_ck, "inode %llu counts %llu blocks, but maps %llu and has %llu B+tree blocks",
			   (sx_ull)ino, (sx_ull)nblocks, (sx_ull)cf.cf_mapped,
			   (sx_ull)(cu->cu_claimed - claimed0));
	if (cn && size != cn->cn_n)
		sx_check_problem(cu->cu_ck, "directory %llu has size %llu but %llu entries", (sx_ull)ino,
			   (sx_ull)size, (sx_ull)cn->cn_n);
}

/* One refcount record: in order, at least 2, on the data area; note its count. */
static void ck_refc_rec(struct ck_usage *cu, u64 owner, const void *rec, void *arg)
{
	const struct sx_drefc_rec *d = rec;
	u64 bno = le64_to_cpu(d->rc_startblock), b, *prev_end = arg;
	u32 len = le32_to_cpu(d->rc_blockcount), count = le32_to_cpu(d->rc_refcount);

	if (len == 0 || count < 2 || !ck_in_data(cu, bno, len)) {
		sx_check_problem(cu->cu_ck, "refcount record [%llu, +%u) x%u is impossible",
			   (sx_ull)bno, len, count);
		return;
	}
	if (bno < *prev_end)
		sx_check_problem(cu->cu_ck, "refcount record [%llu, +%u) overlaps the one before it",
			   (sx_ull)bno, len);
	*prev_end = bno + len;
	for (b = bno - cu->cu_base; b < bno - cu->cu_base + len; b++)
		cu->cu_refc[b] = count;
}

/* Read the bitmap bit of every data block and judge each block's use. */
static void ck_usage_judge(struct ck_usage *cu)
{
	struct sx_checker *ck = cu->cu_ck;
	struct sx_mount *mp = ck->ck_mp;
	const struct sx_sb *sb = &mp->m_sb;
	u64 nbits = SX_BITMAP_BITS(mp->m_bsize), b, idx = ~0ull, shown = 0, hidden = 0;
	bool have = false;

	for (b = 0; b < cu->cu_n; b++) {
		u64 bno = cu->cu_base + b, i = bno / nbits, bit = bno % nbits;
		u32 count = cu->cu_count[b], refc = cu->cu_refc[b];
		bool weak = ck_bit(cu->cu_weak, b), meta = ck_bit(cu->cu_meta, b) && !weak, used, bad;
		u64 before = ck->ck_problems;

		/*
		 * A block only damaged pointers claim (reported as bad) is
		 * nobody's metadata: if files map it, it is their data; if
		 * not, whether it should be in use is unknown.
		 */
		if (weak && !count)
			continue;

		if (i != idx) {
			int error;

			idx = i;
			error = sx_dev_read(mp, sb->sb_bmapstart + i, 1, cu->cu_buf);
			/*
			 * The bitmap pass read this block, but a read can fail
			 * now: say so, or its blocks would pass unjudged.  (One
			 * that fails to verify, the bitmap pass reported.)
			 */
			if (error)
				sx_check_problem(ck, "bitmap block %llu (block %llu): cannot read: %s (%d); the use of its blocks is not judged",
					   (sx_ull)i, (sx_ull)(sb->sb_bmapstart + i),
					   sx_offline_errname(error), error);
			have = !error && !sx_buf_verify(mp, cu->cu_buf, sb->sb_bmapstart + i,
							&sx_bitmap_buf_ops, 0);
		}
		used = have && (cu->cu_buf[SX_BITMAP_HDR_SIZE + bit / 8] & (1u << (bit % 8)));
		bad = (meta && count) || (count >= 2 && refc != count) || (count < 2 && refc) ||
		      (have && used != (meta || count));
		if (!bad)
			continue;
		if (shown >= CK_BLOCK_DETAIL && !(ck->ck_flags & SX_CHECK_ALL_BLOCKS)) {
			/* enough detail: count the rest quietly */
			ck->ck_problems++;
			hidden++;
			continue;
		}
		if (meta && count)
			sx_check_problem(ck, "block %llu is metadata and also mapped %u time%s",
				   (sx_ull)bno, count, count == 1 ? "" : "s");
		if (count >= 2 && refc != count)
			sx_check_problem(ck, "block %llu is mapped %u times, but its refcount is %u",
				   (sx_ull)bno, count, refc ? refc : 1);
		else if (count < 2 && refc)
			sx_check_problem(ck, "block %llu is mapped %u time%s, but has a refcount record of %u",
				   (sx_ull)bno, count, count == 1 ? "" : "s", refc);
		if (have && used && !meta && !count)
			sx_check_problem(ck, "block %llu is in use but nothing owns it (leaked)",
				   (sx_ull)bno);
		if (have && !used && (meta || count))
			sx_check_problem(ck, "block %llu is free but %s", (sx_ull)bno,
				   meta ? "holds metadata" : "mapped");
		if (ck->ck_problems != before)
			shown++;
	}
	if (hidden)
		sx_check_note(ck, "%llu more problem blocks not listed", (sx_ull)hidden);
}

/* Sort @v (n entries) in place: a heap sort, no recursion, no extra memory. */
static void ck_sort_u64(u64 *v, u64 n)
{
	u64 start = n / 2, end = n, root, child, t;

	while (end > 1) {
		if (start > 0) {
			start--;
		} else {
			end--;
			t = v[end];
			v[end] = v[0];
			v[0] = t;
		}
		root = start;
		while ((child = 2 * root + 1) < end) {
			if (child + 1 < end && v[child] < v[child + 1])
				child++;
			if (v[root] >= v[child])
				break;
			t = v[root];
			v[root] = v[child];
			v[child] = t;
			root = child;
		}
	}
}

/* Walk every file and the refcount tree and judge every data block's use. */
int sx_check_files(struct sx_checker *ck, const struct sx_sb *sb)
{
	struct sx_mount *mp = ck->ck_mp;
	const struct sx_dfsinfo *fi;
	struct ck_usage cu;
	struct ck_names cn;
	u64 root_ino, unl, next, refc_root, prev_end = 0, icount, i, j, steps;
	u32 refc_level;
	int error = -ENOMEM;

	memset(&cu, 0, sizeof(cu));
	memset(&cn, 0, sizeof(cn));
	cu.cu_ck = ck;
	cu.cu_base = sb->sb_datastart;
	cu.cu_n = sb->sb_dblocks - sb->sb_datastart;
	cu.cu_count = sx_zalloc(sizeof(u32) * cu.cu_n, 0);
	cu.cu_refc = sx_zalloc(sizeof(u32) * cu.cu_n, 0);
	cu.cu_meta = sx_zalloc(cu.cu_n / 8 + 1, 0);
	cu.cu_weak = sx_zalloc(cu.cu_n / 8 + 1, 0);
	cu.cu_inode = sx_zalloc(cu.cu_n / 8 + 1, 0);
	cu.cu_buf = sx_alloc(mp->m_bsize, 0);
	if (!cu.cu_count || !cu.cu_refc || !cu.cu_meta || !cu.cu_weak || !cu.cu_inode || !cu.cu_buf)
		goto out_free;
	error = 0;

	if (!ck_claim_meta(&cu, sb->sb_fsinfo, "fsinfo", 0) ||
	    !ck_read_meta(&cu, sb->sb_fsinfo, &sx_fsinfo_buf_ops, 0, "fsinfo")) {
		sx_check_note(ck, "files and refcounts not checked: no good fsinfo block");
		goto out_free;
	}
	fi = (const void *)cu.cu_buf;
	root_ino = le64_to_cpu(fi->fi_rootino);
	unl = le64_to_cpu(fi->fi_unlinked);
	refc_root = le64_to_cpu(fi->fi_refc_root);
	refc_level = le32_to_cpu(fi->fi_refc_level);
	icount = le64_to_cpu(fi->fi_icount);

	/* the root directory, then each file it names, once, with its name count */
	ck_walk_inode(&cu, root_ino, &cn, 1, &next);
	if (cn.cn_nomem) {
		error = -ENOMEM;
		goto out_free;
	}
	ck_sort_u64(cn.cn_ino, cn.cn_n);
	for (i = 0; i < cn.cn_n; i = j) {
		for (j = i + 1; j < cn.cn_n && cn.cn_ino[j] == cn.cn_ino[i]; j++)
			;
		if (cn.cn_ino[i] == root_ino) {
			sx_check_problem(ck, "the root directory names itself");
			continue;
		}
		ck_walk_inode(&cu, cn.cn_ino[i], NULL, (u32)(j - i), &next);
		if (next)
			sx_check_problem(ck, "inode %llu has a name but links to %llu on the unlinked list",
				   (sx_ull)cn.cn_ino[i], (sx_ull)next);
	}
	/* the files with no name */
	for (steps = 0; unl && steps < cu.cu_n; steps++) {
		if (ck_in_data(&cu, unl, 1) && ck_bit(cu.cu_inode, unl - cu.cu_base)) {
			sx_check_problem(ck, "unlinked list: inode %llu is reached twice (a cycle, or it also has a name)",
				   (sx_ull)unl);
			break;
		}
		ck_walk_inode(&cu, unl, NULL, 0, &next);
		unl = next;
	}
	if (cu.cu_nomem) {
		error = -ENOMEM;
		goto out_free;
	}
	if (cu.cu_inodes != icount)
		sx_check_problem(ck, "fsinfo counts %llu inodes, %llu were found", (sx_ull)icount,
			   (sx_ull)cu.cu_inodes);

	if (refc_root)
		ck_walk_btree(&cu, &sx_refcbt_ops, 0, refc_root, refc_level, ck_refc_rec,
			      &prev_end, 0);
	if (cu.cu_nomem) {
		error = -ENOMEM;
		goto out_free;
	}
	ck_usage_judge(&cu);
	sx_check_note(ck, "files: %llu inodes, %llu mapped blocks, %llu metadata blocks",
		(sx_ull)cu.cu_inodes, (sx_ull)cu.cu_mapped, (sx_ull)cu.cu_claimed);
out_free:
	sx_free(cn.cn_ino);
	sx_free(cu.cu_buf);
	sx_free(cu.cu_inode);
	sx_free(cu.cu_meta);
	sx_free(cu.cu_weak);
	sx_free(cu.cu_refc);
	sx_free(cu.cu_count);
	return error;
}
