// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The flat root directory.
 *
 * Entries (struct sx_ddir_rec: hash, inode number, name) are the records of
 * the root inode's fork, keyed by sx_dir_hash() of the name: inline in the
 * inode while few, in a B+tree of SX_DIRBT_MAGIC blocks when many (fork.c
 * converts in both directions).  Different names may share a hash; the tree
 * keeps records with equal keys in insertion order, and a lookup walks every
 * record with the name's hash comparing names.
 *
 * The directory inode's di_size is the number of entries (not bytes): it
 * equals di_nrecs, and the checker holds the two to each other.  Adding or
 * removing an entry updates the directory's mtime and ctime.
 *
 * Every function here expects the caller to hold the directory's ilock.
 */
#include "util.h"
#include "dir.h"
#include "fork.h"
#include "btree.h"
#include "inode.h"
#include "buf.h"
#include "trans.h"
#include "mount.h"

/*
 * The name hash.  It is on-disk format: it orders the directory's records
 * and the record verifier recomputes it.  Never change it.
 *
 * The name's @len bytes are read as little-endian 64-bit words, the last
 * one padded with zero bytes (names hold no NUL, and the length is mixed
 * in first, so the padding is unambiguous):
 *
 *	h = SX_DIR_HASH_SEED ^ (len * SX_DIR_HASH_K1)
 *	for each word w:	h = sx_dir_hash_mix(h ^ w)
 *	hash = fmix64(h)		(MurmurHash3's finaliser)
 *
 * sx_dir_hash_mix(x): x *= K1; x ^= x >> 32; x *= K2; x ^= x >> 29.
 * Each step is a bijection of 64-bit values, so every input bit reaches
 * every output bit and distinct states never merge by themselves.  No
 * secret seed: names are not chosen against a key, and colliding names
 * cost only a longer walk over equal keys, never a failure.
 */
#define SX_DIR_HASH_SEED	0x53584449524e4d31ull	/* "1MNRIDXS" */
#define SX_DIR_HASH_K1		0x9e3779b97f4a7c15ull
#define SX_DIR_HASH_K2		0xd6e8feb86659fd93ull

/* One bijective mixing step of the name hash. */
static inline u64 sx_dir_hash_mix(u64 x)
{
	x *= SX_DIR_HASH_K1;
	x ^= x >> 32;
	x *= SX_DIR_HASH_K2;
	x ^= x >> 29;
	return x;
}

/* The key of a name: see the comment above. */
u64 sx_dir_hash(const char *name, u32 len)
{
	const u8 *p = (const u8 *)name;
	u64 h = SX_DIR_HASH_SEED ^ ((u64)len * SX_DIR_HASH_K1);
	u32 i, j;

	for (i = 0; i < len; i += 8) {
		u64 w = 0;

		for (j = 0; j < 8 && i + j < len; j++)
			w |= (u64)p[i + j] << (8 * j);
		h = sx_dir_hash_mix(h ^ w);
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* Length of @name, or SX_NAME_MAX + 1 if it is longer than a name may be. */
static u32 sx_dir_name_len(const char *name)
{
	u32 len = 0;

	while (len <= SX_NAME_MAX && name[len])
		len++;
	return len;
}

/* True if @len bytes at @name are "." or "..". */
static bool sx_dir_is_dot(const char *name, u32 len)
{
	return (len == 1 && name[0] == '.') ||
	       (len == 2 && name[0] == '.' && name[1] == '.');
}

/* -EINVAL unless @name can be an entry's name. */
int sx_dir_check_name(const char *name)
{
	u32 len, i;

	if (!name)
		return -EINVAL;
	len = sx_dir_name_len(name);
	if (len == 0 || len > SX_NAME_MAX || sx_dir_is_dot(name, len))
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (name[i] == '/')
			return -EINVAL;
	return 0;
}

/* The key of an on-disk entry. */
static u64 sx_dirbt_key(const void *rec)
{
	return le64_to_cpu(((const struct sx_ddir_rec *)rec)->de_hash);
}

/* An entry read from disk: a valid name, zero padding, its hash, a possible inode. */
static int sx_dirbt_verify_rec(struct sx_mount *mp, const void *rec)
{
	const struct sx_ddir_rec *de = rec;
	u32 len = le16_to_cpu(de->de_namelen), i;
	u64 ino = le64_to_cpu(de->de_ino);

	if (SX_IS_CORRUPT(mp, len == 0 || len > SX_NAME_MAX))
		return -EFSCORRUPTED;
	for (i = 0; i < sizeof(de->de_pad); i++)
		if (SX_IS_CORRUPT(mp, de->de_pad[i] != 0))
			return -EFSCORRUPTED;
	for (i = 0; i < len; i++)
		if (SX_IS_CORRUPT(mp, de->de_name[i] == 0 || de->de_name[i] == '/'))
			return -EFSCORRUPTED;
	for (; i < sizeof(de->de_name); i++)
		if (SX_IS_CORRUPT(mp, de->de_name[i] != 0))
			return -EFSCORRUPTED;
	if (SX_IS_CORRUPT(mp, sx_dir_is_dot(de->de_name, len)) ||
	    SX_IS_CORRUPT(mp, ino < mp->m_sb.sb_datastart || ino >= mp->m_sb.sb_dblocks) ||
	    SX_IS_CORRUPT(mp, le64_to_cpu(de->de_hash) != sx_dir_hash(de->de_name, len)))
		return -EFSCORRUPTED;
	return 0;
}

/* Verifier of directory B+tree blocks. */
static int sx_dirbt_verify(struct sx_mount *mp, const void *data)
{
	return sx_btree_verify_block(mp, data, &sx_dirbt_ops);
}

static const struct sx_buf_ops sx_dirbt_buf_ops = {
	.bo_name = "dirbt",
	.bo_magic = SX_DIRBT_MAGIC,
	.bo_verify = sx_dirbt_verify,
};

const struct sx_btree_ops sx_dirbt_ops = {
	.bo_name = "dirbt",
	.bo_magic = SX_DIRBT_MAGIC,
	.bo_recsize = sizeof(struct sx_ddir_rec),
	.bo_buf_ops = &sx_dirbt_buf_ops,
	.bo_key = sx_dirbt_key,
	.bo_verify_rec = sx_dirbt_verify_rec,
	.bo_set_root = sx_fork_btree_set_root,
	.bo_charge = sx_fork_btree_charge,
};

const struct sx_fork_ops sx_dir_fork_ops = {
	.fo_btree = &sx_dirbt_ops,
};

/* Copy the entry at the cursor into @de and check it. */
static int sx_dir_get(struct sx_fork_cur *fc, struct sx_ddir_rec *de)
{
	int error;

	error = sx_fork_get(fc, de);
	if (error)
		return error;
	return sx_dirbt_verify_rec(fc->fc_ip->i_mp, de);
}

/*
 * Position @fc on the entry named @name (@len bytes, hash @hash); *@found
 * says whether there is one, and @de holds it.
 */
static int sx_dir_find(struct sx_fork_cur *fc, const char *name, u32 len, u64 hash,
		       struct sx_ddir_rec *de, bool *found)
{
	bool more;
	int error;

	*found = false;
	error = sx_fork_lookup(fc, hash, SX_BT_GE, &more);
	while (!error && more) {
		error = sx_dir_get(fc, de);
		if (error || le64_to_cpu(de->de_hash) != hash)
			break;
		if (le16_to_cpu(de->de_namelen) == len && !memcmp(de->de_name, name, len)) {
			*found = true;
			break;
		}
		error = sx_fork_next(fc, &more);
	}
	return error;
}

/* Check @name and return its length, for the entry operations. */
static int sx_dir_name(const char *name, u32 *len)
{
	int error = sx_dir_check_name(name);

	if (!error)
		*len = sx_dir_name_len(name);
	return error;
}

/* Look @name up in @dp. */
int sx_dir_lookup(struct sx_trans *tp, struct sx_inode *dp, const char *name, u64 *ino)
{
	struct sx_fork_cur fc;
	struct sx_ddir_rec de;
	bool found;
	u32 len;
	int error;

	error = sx_dir_name(name, &len);
	if (error)
		return error;
	sx_fork_cur_init(&fc, dp, tp, &sx_dir_fork_ops);
	error = sx_dir_find(&fc, name, len, sx_dir_hash(name, len), &de, &found);
	sx_fork_cur_release(&fc);
	if (error)
		return error;
	if (!found)
		return -ENOENT;
	*ino = le64_to_cpu(de.de_ino);
	return 0;
}

/* The directory changed by @delta entries: size, times, logged. */
static int sx_dir_changed(struct sx_trans *tp, struct sx_inode *dp, s64 delta)
{
	s64 now = (s64)sx_wall_ns();

	dp->i_size += delta;
	dp->i_mtime = now;
	dp->i_ctime = now;
	return sx_inode_log(tp, dp);
}

/*
 * Join @dp's inode block before its fork changes: a cancel after a failure
 * halfway through a change puts the in-core inode (the fork's root, height
 * and record count) back from that block only if it is in the transaction.
 */
static int sx_dir_join(struct sx_trans *tp, struct sx_inode *dp)
{
	struct sx_buf *bp;

	return sx_inode_get_buf(dp->i_mp, tp, dp, &bp);
}

/* Add the entry @name -> @ino to @dp. */
int sx_dir_add(struct sx_trans *tp, struct sx_inode *dp, const char *name, u64 ino)
{
	struct sx_mount *mp = dp->i_mp;
	struct sx_fork_cur fc;
	struct sx_ddir_rec de;
	bool found;
	u64 hash;
	u32 len;
	int error;

	error = sx_dir_name(name, &len);
	if (error)
		return error;
	if (ino < mp->m_sb.sb_datastart || ino >= mp->m_sb.sb_dblocks)
		return -EINVAL;
	error = sx_dir_join(tp, dp);
	if (error)
		return error;
	hash = sx_dir_hash(name, len);
	sx_fork_cur_init(&fc, dp, tp, &sx_dir_fork_ops);
	error = sx_dir_find(&fc, name, len, hash, &de, &found);
	if (error)
		goto out_release;
	if (found) {
		error = -EEXIST;
		goto out_release;
	}
	memset(&de, 0, sizeof(de));
	de.de_hash = cpu_to_le64(hash);
	de.de_ino = cpu_to_le64(ino);
	de.de_namelen = cpu_to_le16((u16)len);
	memcpy(de.de_name, name, len);
	error = sx_fork_insert(&fc, &de);
out_release:
	sx_fork_cur_release(&fc);
	if (error)
		return error;
	return sx_dir_changed(tp, dp, 1);
}

/* Remove the entry @name from @dp. */
int sx_dir_remove(struct sx_trans *tp, struct sx_inode *dp, const char *name, u64 *ino)
{
	struct sx_fork_cur fc;
	struct sx_ddir_rec de;
	bool found;
	u32 len;
	int error;

	error = sx_dir_name(name, &len);
	if (!error)
		error = sx_dir_join(tp, dp);
	if (error)
		return error;
	sx_fork_cur_init(&fc, dp, tp, &sx_dir_fork_ops);
	error = sx_dir_find(&fc, name, len, sx_dir_hash(name, len), &de, &found);
	if (!error && !found)
		error = -ENOENT;
	if (!error)
		error = sx_fork_delete(&fc, &found);
	sx_fork_cur_release(&fc);
	if (error)
		return error;
	if (SX_IS_CORRUPT(dp->i_mp, dp->i_size == 0))
		return -EFSCORRUPTED;
	*ino = le64_to_cpu(de.de_ino);
	return sx_dir_changed(tp, dp, -1);
}

/* Point the entry @name of @dp at @ino. */
int sx_dir_replace(struct sx_trans *tp, struct sx_inode *dp, const char *name, u64 ino,
		   u64 *oldino)
{
	struct sx_mount *mp = dp->i_mp;
	struct sx_fork_cur fc;
	struct sx_ddir_rec de;
	bool found;
	u32 len;
	int error;

	error = sx_dir_name(name, &len);
	if (error)
		return error;
	if (ino < mp->m_sb.sb_datastart || ino >= mp->m_sb.sb_dblocks)
		return -EINVAL;
	error = sx_dir_join(tp, dp);
	if (error)
		return error;
	sx_fork_cur_init(&fc, dp, tp, &sx_dir_fork_ops);
	error = sx_dir_find(&fc, name, len, sx_dir_hash(name, len), &de, &found);
	if (!error && !found)
		error = -ENOENT;
	if (!error) {
		*oldino = le64_to_cpu(de.de_ino);
		de.de_ino = cpu_to_le64(ino);
		error = sx_fork_update(&fc, &de);
	}
	sx_fork_cur_release(&fc);
	if (error)
		return error;
	return sx_dir_changed(tp, dp, 0);
}

/* Walk the entries with a hash >= @start, in order, calling @fn for each. */
int sx_dir_iterate(struct sx_inode *dp, u64 start,
		   int (*fn)(void *arg, const char *name, u32 len, u64 hash, u64 ino),
		   void *arg)
{
	struct sx_fork_cur fc;
	struct sx_ddir_rec *de;
	bool more;
	int error;

	/* one record is 280 bytes: keep it off the (kernel) stack */
	de = sx_alloc(sizeof(*de), SX_NOFS);
	if (!de)
		return -ENOMEM;
	sx_fork_cur_init(&fc, dp, NULL, &sx_dir_fork_ops);
	error = sx_fork_lookup(&fc, start, SX_BT_GE, &more);
	while (!error && more) {
		u32 len;

		error = sx_dir_get(&fc, de);
		if (error)
			break;
		len = le16_to_cpu(de->de_namelen);
		de->de_name[len] = '\0';	/* verified: len <= SX_NAME_MAX */
		error = fn(arg, de->de_name, len, le64_to_cpu(de->de_hash),
			   le64_to_cpu(de->de_ino));
		if (error)
			break;
		error = sx_fork_next(&fc, &more);
	}
	sx_fork_cur_release(&fc);
	sx_free(de);
	return error;
}

/* Log bytes of one sx_dir_add() or sx_dir_remove(): the fork change and the inode. */
u32 sx_dir_res_bytes(const struct sx_mount *mp, const struct sx_inode *dp)
{
	return sx_fork_res_bytes(mp, dp) + sx_inode_res_bytes(mp);
}
