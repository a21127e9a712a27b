
/* ------------------------------------------------ block usage and refcounts */

/*
 * Who uses each data block: the walk of every file's mappings (from the
 * root directory's names and the unlinked list) counts the mappings of each
 * block, and marks the metadata blocks (fsinfo, inodes, fork and refcount
 * B+tree blocks).  Then every block must be used the way the refcount tree
 * and the bitmap say: a block mapped k >= 2 times has a record of count k,
 * a block mapped once has none, a metadata block is used once and never
 * mapped, a block in use has a user, and a free block has none.
 */
struct ck_usage {
	struct sx_checker *cu_ck;
	u64		cu_base;	/* sb_datastart */
	u64		cu_n;		/* data blocks */
	u32		*cu_count;	/* mappings of each data block */
	u8		*cu_meta;	/* a bit per data block: metadata */
	u8		*cu_inode;	/* a bit per data block: an inode walked */
	u32		*cu_refc;	/* the refcount tree's count, 0 = no record */
	u8		*cu_buf;	/* one block */
	u64		cu_inodes;
	u64		cu_mapped;	/* mapped blocks, with repeats */
};

/* Test and set bit @i of @map. */
static bool ck_bit_set(u8 *map, u64 i)
{
	bool was = map[i / 8] & (1u << (i % 8));

	map[i / 8] |= (u8)(1u << (i % 8));
	return was;
}

/* Test bit @i of @map. */
static bool ck_bit(const u8 *map, u64 i)
{
	return map[i / 8] & (1u << (i % 8));
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
		ck_problem(cu->cu_ck, "%s block %llu (owner %llu) is outside the data area",
			   what, (sx_ull)bno, (sx_ull)owner);
		return false;
	}
	if (ck_bit_set(cu->cu_meta, bno - cu->cu_base)) {
		ck_problem(cu->cu_ck, "%s block %llu (owner %llu) is already used as metadata",
			   what, (sx_ull)bno, (sx_ull)owner);
		return false;
	}
	return true;
}

/* Read and verify metadata block @bno into the usage buffer. */
static bool ck_read_meta(struct ck_usage *cu, u64 bno, const struct sx_buf_ops *ops,
			 u64 owner, const char *what)
{
	struct sx_mount *mp = cu->cu_ck->ck_mp;
	int error;

	error = sx_dev_read(mp, bno, 1, cu->cu_buf);
	if (!error)
		error = sx_buf_verify(mp, cu->cu_buf, bno, ops, owner);
	if (error) {
		ck_problem(cu->cu_ck, "%s block %llu (owner %llu) is bad: %s (%d)", what,
			   (sx_ull)bno, (sx_ull)owner, sx_offline_errname(error), error);
		return false;
	}
	return true;
}

/* What a fork walk does with each record. */
typedef void (*ck_rec_fn)(struct ck_usage *cu, u64 owner, const void *rec, void *arg);

/*
 * Walk the B+tree at @bno (level @level) of type @ops: claim and verify
 * every block, hand every leaf record to @fn.  Blocks are read one at a
 * time; a node's child pointers are copied out first.
 */
static void ck_walk_btree(struct ck_usage *cu, const struct sx_btree_ops *ops, u64 owner,
			  u64 bno, u32 level, ck_rec_fn fn, void *arg, u32 depth)
{
	struct sx_mount *mp = cu->cu_ck->ck_mp;
	const struct sx_dbtree_block *blk = (const void *)cu->cu_buf;
	u32 n, i, nmax = sx_btree_maxrecs(mp, ops, false);
	u64 *ptrs;
	u8 *rec;

	if (depth >= SX_BTREE_MAXLEVELS || !ck_claim_meta(cu, bno, ops->bo_name, owner) ||
	    !ck_read_meta(cu, bno, ops->bo_buf_ops, owner, ops->bo_name))
		return;
	n = le16_to_cpu(blk->bt_numrecs);
	if (le16_to_cpu(blk->bt_level) != level) {
		ck_problem(cu->cu_ck, "%s block %llu (owner %llu) is at level %u, expected %u",
			   ops->bo_name, (sx_ull)bno, (sx_ull)owner,
			   le16_to_cpu(blk->bt_level), level);
		return;
	}
	if (level == 0) {
		rec = sx_alloc((size_t)n * ops->bo_recsize + 1, 0);
		if (!rec)
			return;
		memcpy(rec, cu->cu_buf + sizeof(*blk), (size_t)n * ops->bo_recsize);
		for (i = 0; i < n; i++)
			fn(cu, owner, rec + (size_t)i * ops->bo_recsize, arg);
		sx_free(rec);
		return;
	}
	ptrs = sx_alloc(sizeof(*ptrs) * (n + 1), 0);
	if (!ptrs)
		return;
	for (i = 0; i < n; i++)
		ptrs[i] = le64_to_cpu(*(const __le64 *)(cu->cu_buf + sizeof(*blk) +
							(size_t)(nmax + i) * sizeof(__le64)));
	for (i = 0; i < n; i++)
		ck_walk_btree(cu, ops, owner, ptrs[i], level - 1, fn, arg, depth + 1);
	sx_free(ptrs);
}

/* One mapping of a file: count its blocks. */
static void ck_bmap_rec(struct ck_usage *cu, u64 ino, const void *rec, void *arg)
{
	const struct sx_dbmap_rec *d = rec;
	u64 bno = le64_to_cpu(d->br_startblock), b;
	u32 len = le32_to_cpu(d->br_blockcount);

	if (len == 0 || !ck_in_data(cu, bno, len)) {
		ck_problem(cu->cu_ck, "inode %llu maps [%llu, +%u), which is not on the data area",
			   (sx_ull)ino, (sx_ull)bno, len);
		return;
	}
	for (b = bno - cu->cu_base; b < bno - cu->cu_base + len; b++)
		if (cu->cu_count[b] != ~0u)
			cu->cu_count[b]++;
	cu->cu_mapped += len;
}

/* Names found in the directory, to walk after it. */
struct ck_names {
	u64	*cn_ino;
	u64	cn_n;
	u64	cn_cap;
};

/* One directory entry: remember its inode. */
static void ck_dir_rec(struct ck_usage *cu, u64 dino, const void *rec, void *arg)
{
	const struct sx_ddir_rec *de = rec;
	struct ck_names *cn = arg;

	if (cn->cn_n == cn->cn_cap) {
		u64 cap = cn->cn_cap ? 2 * cn->cn_cap : 64;
		u64 *n = sx_alloc(sizeof(*n) * cap, 0);

		if (!n)
			return;
		if (cn->cn_n)
			memcpy(n, cn->cn_ino, sizeof(*n) * cn->cn_n);
		sx_free(cn->cn_ino);
		cn->cn_ino = n;
		cn->cn_cap = cap;
	}
	cn->cn_ino[cn->cn_n++] = le64_to_cpu(de->de_ino);
}

/*
 * Walk inode @ino once: claim it, count what its fork maps (a regular
 * file) or collect its names into @cn (a directory).  *@next: its
 * di_next_unlinked.
 */
static void ck_walk_inode(struct ck_usage *cu, u64 ino, struct ck_names *cn, u64 *next)
{
	struct sx_mount *mp = cu->cu_ck->ck_mp;
	const struct sx_dinode *di = (const void *)cu->cu_buf;
	const struct sx_btree_ops *ops;
	u64 nrecs, root, i;
	u32 mode, fmt, level, recsize;
	ck_rec_fn fn;
	u8 *recs;

	*next = 0;
	if (!ck_in_data(cu, ino, 1)) {
		ck_problem(cu->cu_ck, "inode number %llu is not on the data area", (sx_ull)ino);
		return;
	}
	if (ck_bit_set(cu->cu_inode, ino - cu->cu_base))
		return;
	if (!ck_claim_meta(cu, ino, "inode", ino) ||
	    !ck_read_meta(cu, ino, &sx_inode_buf_ops, ino, "inode"))
		return;
	cu->cu_inodes++;
	*next = le64_to_cpu(di->di_next_unlinked);
	mode = le16_to_cpu(di->di_mode) & SX_IFMT;
	fmt = le16_to_cpu(di->di_format);
	nrecs = le64_to_cpu(di->di_nrecs);
	root = le64_to_cpu(di->di_broot);
	level = le32_to_cpu(di->di_blevel);
	if (mode == SX_IFREG) {
		ops = &sx_bmbt_ops;
		fn = ck_bmap_rec;
	} else if (mode == SX_IFDIR) {
		if (!cn) {
			ck_problem(cu->cu_ck, "inode %llu is a directory other than the root",
				   (sx_ull)ino);
			return;
		}
		ops = &sx_dirbt_ops;
		fn = ck_dir_rec;
	} else {
		return;
	}
	recsize = ops->bo_recsize;
	if (fmt == SX_DIF_BTREE) {
		if (root)
			ck_walk_btree(cu, ops, ino, root, level, fn, cn, 0);
		return;
	}
	if (nrecs > SX_FORK_BYTES(mp->m_bsize) / recsize) {
		ck_problem(cu->cu_ck, "inode %llu: %llu inline records do not fit its fork",
			   (sx_ull)ino, (sx_ull)nrecs);
		return;
	}
	recs = sx_alloc((size_t)nrecs * recsize + 1, 0);
	if (!recs)
		return;
	memcpy(recs, cu->cu_buf + SX_DINODE_CORE, (size_t)nrecs * recsize);
	for (i = 0; i < nrecs; i++)
		fn(cu, ino, recs + i * recsize, cn);
	sx_free(recs);
}

/* One refcount record: note its count on its blocks. */
static void ck_refc_rec(struct ck_usage *cu, u64 owner, const void *rec, void *arg)
{
	const struct sx_drefc_rec *d = rec;
	u64 bno = le64_to_cpu(d->rc_startblock), b, *prev_end = arg;
	u32 len = le32_to_cpu(d->rc_blockcount), count = le32_to_cpu(d->rc_refcount);

	if (len == 0 || count < 2 || !ck_in_data(cu, bno, len)) {
		ck_problem(cu->cu_ck, "refcount record [%llu, +%u) x%u is impossible",
			   (sx_ull)bno, len, count);
		return;
	}
	if (bno < *prev_end)
		ck_problem(cu->cu_ck, "refcount record [%llu, +%u) overlaps the one before it",
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
	u64 nbits = SX_BITMAP_BITS(mp->m_bsize), b, idx = ~0ull, shown = 0;
	bool have = false;

	for (b = 0; b < cu->cu_n; b++) {
		u64 bno = cu->cu_base + b, i = bno / nbits, bit = bno % nbits;
		u32 count = cu->cu_count[b], refc = cu->cu_refc[b];
		bool meta = ck_bit(cu->cu_meta, b), used;
		u64 before = ck->ck_problems;

		if (i != idx) {
			idx = i;
			have = !sx_dev_read(mp, sb->sb_bmapstart + i, 1, cu->cu_buf) &&
			       le32_to_cpu(((struct sx_dbitmap *)cu->cu_buf)->bm_hdr.bh_magic) ==
			       SX_BITMAP_MAGIC;
		}
		used = have && (cu->cu_buf[SX_BITMAP_HDR_SIZE + bit / 8] & (1u << (bit % 8)));
		if (shown >= 20) {
			/* enough detail: count the rest quietly */
			if ((meta && count) || (count >= 2 && refc != count) ||
			    (count < 2 && refc) || (have && used != (meta || count)))
				ck->ck_problems++;
			continue;
		}
		if (meta && count)
			ck_problem(ck, "block %llu is metadata and also mapped %u time%s",
				   (sx_ull)bno, count, count == 1 ? "" : "s");
		if (count >= 2 && refc != count)
			ck_problem(ck, "block %llu is mapped %u times, but its refcount is %u",
				   (sx_ull)bno, count, refc ? refc : 1);
		else if (count < 2 && refc)
			ck_problem(ck, "block %llu is mapped %u time%s, but has a refcount record of %u",
				   (sx_ull)bno, count, count == 1 ? "" : "s", refc);
		if (have && used && !meta && !count)
			ck_problem(ck, "block %llu is in use but nothing owns it (leaked)",
				   (sx_ull)bno);
		if (have && !used && (meta || count))
			ck_problem(ck, "block %llu is free but %s", (sx_ull)bno,
				   meta ? "holds metadata" : "mapped");
		if (ck->ck_problems != before)
			shown++;
	}
}

/* Walk every file and the refcount tree and judge every data block's use. */
static int ck_usage(struct sx_checker *ck, const struct sx_sb *sb)
{
	struct sx_mount *mp = ck->ck_mp;
	const struct sx_dfsinfo *fi;
	struct ck_usage cu;
	struct ck_names cn = { 0 };
	u64 fsino = sb->sb_fsinfo, root_ino, unl, next, refc_root, prev_end = 0, i, steps;
	u32 refc_level;
	int error = -ENOMEM;

	memset(&cu, 0, sizeof(cu));
	cu.cu_ck = ck;
	cu.cu_base = sb->sb_datastart;
	cu.cu_n = sb->sb_dblocks - sb->sb_datastart;
	cu.cu_count = sx_zalloc(sizeof(u32) * cu.cu_n, 0);
	cu.cu_refc = sx_zalloc(sizeof(u32) * cu.cu_n, 0);
	cu.cu_meta = sx_zalloc(cu.cu_n / 8 + 1, 0);
	cu.cu_inode = sx_zalloc(cu.cu_n / 8 + 1, 0);
	cu.cu_buf = sx_alloc(mp->m_bsize, 0);
	if (!cu.cu_count || !cu.cu_refc || !cu.cu_meta || !cu.cu_inode || !cu.cu_buf)
		goto out_free;
	error = 0;

	if (!ck_claim_meta(&cu, fsino, "fsinfo", 0) ||
	    !ck_read_meta(&cu, fsino, &sx_fsinfo_buf_ops, 0, "fsinfo")) {
		ck_note(ck, "files and refcounts not checked: no good fsinfo block");
		goto out_free;
	}
	fi = (const void *)cu.cu_buf;
	root_ino = le64_to_cpu(fi->fi_rootino);
	unl = le64_to_cpu(fi->fi_unlinked);
	refc_root = le64_to_cpu(fi->fi_refc_root);
	refc_level = le32_to_cpu(fi->fi_refc_level);

	/* the root directory, its names, then the files with no name */
	ck_walk_inode(&cu, root_ino, &cn, &next);
	for (i = 0; i < cn.cn_n; i++)
		ck_walk_inode(&cu, cn.cn_ino[i], NULL, &next);
	for (steps = 0; unl && steps < cu.cu_n; steps++) {
		if (ck_in_data(&cu, unl, 1) && ck_bit(cu.cu_inode, unl - cu.cu_base)) {
			ck_problem(ck, "unlinked list: inode %llu is reached twice (a cycle, or it also has a name)",
				   (sx_ull)unl);
			break;
		}
		ck_walk_inode(&cu, unl, NULL, &next);
		unl = next;
	}

	if (refc_root)
		ck_walk_btree(&cu, &sx_refcbt_ops, 0, refc_root, refc_level, ck_refc_rec,
			      &prev_end, 0);
	ck_usage_judge(&cu);
	ck_note(ck, "files: %llu inodes, %llu mapped blocks", (sx_ull)cu.cu_inodes,
		(sx_ull)cu.cu_mapped);
out_free:
	sx_free(cn.cn_ino);
	sx_free(cu.cu_buf);
	sx_free(cu.cu_inode);
	sx_free(cu.cu_meta);
	sx_free(cu.cu_refc);
	sx_free(cu.cu_count);
	return error;
}
