// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Where the objects of a golden image are: a walk of the image as the
 * format describes it (superblocks, bitmap, fsinfo, the root directory and
 * every file it names, the unlinked list, the refcount tree, the valid
 * log), which also marks every metadata block, of the golden image and of
 * its older version, for the lost writes.  Of the instances of each kind
 * of object, an even sample is fuzzed: the first, the last and as many
 * between as asked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ffz.h"
#include "check.h"
#include "log_recover.h"

#define L_MAXDEPTH	SX_BTREE_MAXLEVELS

/* A candidate object and its sampling group. */
struct l_cand {
	struct ffz_obj	lc_obj;
	u32		lc_group;	/* sampled apart: an op type, finished or not */
};

struct l_ctx {
	struct ffz_image *lc_im;
	struct sx_bdev	*lc_bd;		/* the image walked */
	u32		lc_index;
	bool		lc_objects;	/* false: only mark the metadata */
	struct sx_sb	lc_sb;
	struct l_cand	*lc_cand;
	u32		lc_ncand;
	u32		lc_cap;
	/* the log walk */
	u64		lc_done[1024];	/* ids of done items */
	u32		lc_ndone;
	u64		lc_rec_off;
	const u8	*lc_rec_buf;
	u32		lc_rec;
	/*
	 * References the walk did not follow: in a crash image the blocks on
	 * the disk lag the log, so a name can lead to an inode (or a fork to
	 * a block) that only the log holds yet.
	 */
	u32		lc_skipped;
};

void ffz_read(struct sx_bdev *bd, u64 off, void *buf, u32 len)
{
	sxt_bdev_peek(bd, off, buf, len);
}

void ffz_write(struct sx_bdev *bd, u64 off, const void *buf, u32 len)
{
	sxt_bdev_poke(bd, off, buf, len);
}

static void l_mark(struct l_ctx *lc, u64 blk, u8 what)
{
	if (blk < FFZ_NBLOCKS)
		lc->lc_im->fi_meta[blk] = what;
}

/* A new candidate of @type at byte @off, its CRC that of the block @blk. */
static struct ffz_obj *l_add(struct l_ctx *lc, const struct ffz_otype *type, u32 group,
			     enum ffz_crc crc, u64 off, u64 unit, u32 unit_len)
{
	struct ffz_obj *o;

	if (!lc->lc_objects)
		return NULL;
	if (lc->lc_ncand == lc->lc_cap) {
		lc->lc_cap = lc->lc_cap ? 2 * lc->lc_cap : 256;
		lc->lc_cand = realloc(lc->lc_cand, lc->lc_cap * sizeof(*lc->lc_cand));
		if (!lc->lc_cand)
			abort();
	}
	memset(&lc->lc_cand[lc->lc_ncand], 0, sizeof(lc->lc_cand[0]));
	lc->lc_cand[lc->lc_ncand].lc_group = group;
	o = &lc->lc_cand[lc->lc_ncand++].lc_obj;
	o->o_type = type;
	o->o_image = lc->lc_index;
	o->o_crc = crc;
	o->o_off = off;
	o->o_unit = unit;
	o->o_unit_len = unit_len;
	return o;
}

/* An object inside metadata block @blk (or the block itself, @off 0). */
static struct ffz_obj *l_add_blk(struct l_ctx *lc, const struct ffz_otype *type, u64 blk,
				 u32 off)
{
	struct ffz_obj *o = l_add(lc, type, 0, FFZ_CRC_BLOCK, blk * FFZ_BS + off, blk * FFZ_BS,
				  FFZ_BS);

	if (o)
		snprintf(o->o_where, sizeof(o->o_where), "block %llu+%u", (unsigned long long)blk,
			 off);
	return o;
}

static void l_read_blk(struct l_ctx *lc, u64 blk, void *buf)
{
	ffz_read(lc->lc_bd, blk * FFZ_BS, buf, FFZ_BS);
}

/* ------------------------------------------------------------ on disk */

/* The header fields of a bitmap block and four bytes of its bits. */
static void l_bitmap(struct l_ctx *lc, u32 i)
{
	u64 blk = lc->lc_sb.sb_bmapstart + i, bits = SX_BITMAP_BITS(FFZ_BS);
	u64 first = i * bits, end = sx_min(first + bits, lc->lc_sb.sb_dblocks), b;
	u32 hdr = SX_BITMAP_HDR_SIZE, nhdr = ffz_ot_bitmap.ot_nfields, used = ~0u, free = ~0u;
	struct ffz_field *f;
	struct ffz_obj *o;
	u8 buf[FFZ_BS];

	l_mark(lc, blk, FFZ_M_BITMAP);
	o = l_add_blk(lc, &ffz_ot_bitmap, blk, 0);
	if (!o)
		return;
	if (nhdr + 4 > ARRAY_SIZE(o->o_fields))
		abort();
	l_read_blk(lc, blk, buf);
	for (b = sx_max(first, lc->lc_sb.sb_datastart); b < end; b++) {
		bool set = buf[hdr + (b - first) / 8] & (1u << ((b - first) % 8));

		if (set && used == ~0u)
			used = hdr + (u32)((b - first) / 8);
		if (!set && free == ~0u)
			free = hdr + (u32)((b - first) / 8);
	}
	f = o->o_fields;
	memcpy(f, ffz_ot_bitmap.ot_fields, nhdr * sizeof(*f));
	o->o_nfields = nhdr;
	/* the first and last bytes: fixed areas or the end of the device */
	f[o->o_nfields++] = (struct ffz_field){ "bm_bits[first]", hdr, 1, 0 };
	if (used != ~0u)
		f[o->o_nfields++] = (struct ffz_field){ "bm_bits[in use]", used, 1, 0 };
	if (free != ~0u)
		f[o->o_nfields++] = (struct ffz_field){ "bm_bits[free]", free, 1, 0 };
	f[o->o_nfields++] = (struct ffz_field){ "bm_bits[last]", FFZ_BS - 1, 1, 0 };
}

struct l_tree {
	const struct ffz_otype	*lt_leaf;
	const struct ffz_otype	*lt_node;
	const struct ffz_otype	*lt_rec;
	const struct ffz_otype	*lt_ent;
	u32			lt_recsize;
	/* called for each record: a directory's names lead to files */
	void			(*lt_fn)(struct l_ctx *lc, const void *rec);
};

static void l_inode(struct l_ctx *lc, u64 ino, const struct ffz_otype *type);

static void l_dir_rec(struct l_ctx *lc, const void *rec)
{
	const struct sx_ddir_rec *de = rec;

	l_inode(lc, le64_to_cpu(de->de_ino), NULL);
}

static const struct l_tree l_bmbt = {
	&ffz_ot_bmbt_leaf, &ffz_ot_bmbt_node, &ffz_ot_bmbt_rec, &ffz_ot_bmbt_ent,
	sizeof(struct sx_dbmap_rec), NULL,
};
static const struct l_tree l_dirbt = {
	&ffz_ot_dirbt_leaf, &ffz_ot_dirbt_node, &ffz_ot_dirbt_rec, &ffz_ot_dirbt_ent,
	sizeof(struct sx_ddir_rec), l_dir_rec,
};
static const struct l_tree l_refcbt = {
	&ffz_ot_refcbt_leaf, &ffz_ot_refcbt_node, &ffz_ot_refcbt_rec, &ffz_ot_refcbt_ent,
	sizeof(struct sx_drefc_rec), NULL,
};

static bool l_tree_magic(u32 magic)
{
	return magic == SX_BMBT_MAGIC || magic == SX_DIRBT_MAGIC || magic == SX_REFCBT_MAGIC;
}

/* Walk the tree block @blk at @level, and everything below it. */
static void l_tree(struct l_ctx *lc, const struct l_tree *t, u64 blk, u32 level, u32 depth)
{
	u32 hdr = sizeof(struct sx_dbtree_block), i, n;
	struct sx_dbtree_block *bt;
	struct ffz_obj *o;
	u8 *buf;

	if (blk < lc->lc_sb.sb_datastart || blk >= lc->lc_sb.sb_dblocks || depth > L_MAXDEPTH) {
		lc->lc_skipped++;
		return;
	}
	buf = malloc(FFZ_BS);
	if (!buf)
		abort();
	l_read_blk(lc, blk, buf);
	bt = (struct sx_dbtree_block *)buf;
	n = le16_to_cpu(bt->bt_numrecs);
	if (le16_to_cpu(bt->bt_level) != level || !l_tree_magic(le32_to_cpu(bt->bt_hdr.bh_magic)) ||
	    n > (level ? ffz_node_maxkeys() : (FFZ_BS - hdr) / t->lt_recsize)) {
		lc->lc_skipped++;
		free(buf);
		return;
	}
	l_mark(lc, blk, FFZ_M_BTREE);
	l_add_blk(lc, level ? t->lt_node : t->lt_leaf, blk, 0);
	for (i = 0; i < n; i++) {
		if (level) {
			struct ffz_field f[2];
			__le64 ptr;

			ffz_node_fields(i, f);
			o = l_add_blk(lc, t->lt_ent, blk, f[0].f_off);
			if (o) {
				o->o_off = blk * FFZ_BS;
				memcpy(o->o_fields, f, sizeof(f));
				o->o_nfields = 2;
			}
			memcpy(&ptr, buf + f[1].f_off, sizeof(ptr));
			l_tree(lc, t, le64_to_cpu(ptr), level - 1, depth + 1);
		} else {
			l_add_blk(lc, t->lt_rec, blk, hdr + i * t->lt_recsize);
			if (t->lt_fn)
				t->lt_fn(lc, buf + hdr + i * t->lt_recsize);
		}
	}
	free(buf);
}

/* An inode, its fork, and for the root directory every file it names. */
static void l_inode(struct l_ctx *lc, u64 ino, const struct ffz_otype *type)
{
	const struct l_tree *t;
	struct sx_dinode *di;
	u8 buf[FFZ_BS];
	u64 i, n;
	bool dir;

	if (ino < lc->lc_sb.sb_datastart || ino >= lc->lc_sb.sb_dblocks) {
		lc->lc_skipped++;
		return;
	}
	l_read_blk(lc, ino, buf);
	di = (struct sx_dinode *)buf;
	if (le32_to_cpu(di->di_hdr.bh_magic) != SX_INODE_MAGIC) {
		lc->lc_skipped++;
		return;
	}
	l_mark(lc, ino, FFZ_M_INODE);
	dir = (le16_to_cpu(di->di_mode) & SX_IFMT) == SX_IFDIR;
	n = le64_to_cpu(di->di_nrecs);
	if (!type)
		type = le16_to_cpu(di->di_format) == SX_DIF_BTREE ? &ffz_ot_inode_btree :
								    &ffz_ot_inode_inline;
	l_add_blk(lc, type, ino, 0);
	t = dir ? &l_dirbt : &l_bmbt;
	if (le16_to_cpu(di->di_format) == SX_DIF_BTREE) {
		l_tree(lc, t, le64_to_cpu(di->di_broot), le32_to_cpu(di->di_blevel), 0);
		return;
	}
	if (n > SX_FORK_BYTES(FFZ_BS) / t->lt_recsize) {
		lc->lc_skipped++;
		return;
	}
	for (i = 0; i < n; i++) {
		u32 off = SX_DINODE_CORE + (u32)i * t->lt_recsize;

		l_add_blk(lc, dir ? &ffz_ot_dir_inline : &ffz_ot_bmap_inline, ino, off);
		if (t->lt_fn)
			t->lt_fn(lc, buf + off);
	}
}

static void l_ondisk(struct l_ctx *lc)
{
	struct sx_dfsinfo *fi;
	struct sx_dinode *di;
	struct ffz_obj *o;
	u8 buf[FFZ_BS];
	u64 blk, ino;
	u32 k, n = 0;

	for (k = 0; k < 2; k++) {
		l_mark(lc, k, FFZ_M_SB);
		o = l_add(lc, &ffz_ot_sb, 0, FFZ_CRC_SB, k * FFZ_BS, k * FFZ_BS, SX_SB_SIZE);
		if (o)
			snprintf(o->o_where, sizeof(o->o_where), "copy %u", k);
	}
	for (blk = 0; blk < lc->lc_sb.sb_logblocks; blk++)
		l_mark(lc, lc->lc_sb.sb_logstart + blk, FFZ_M_LOG);
	for (k = 0; k < lc->lc_sb.sb_bmapblocks; k++)
		l_bitmap(lc, k);
	l_mark(lc, lc->lc_sb.sb_fsinfo, FFZ_M_FSINFO);
	l_add_blk(lc, &ffz_ot_fsinfo, lc->lc_sb.sb_fsinfo, 0);
	l_read_blk(lc, lc->lc_sb.sb_fsinfo, buf);
	fi = (struct sx_dfsinfo *)buf;
	l_inode(lc, le64_to_cpu(fi->fi_rootino), &ffz_ot_inode_dir);
	if (fi->fi_refc_root)
		l_tree(lc, &l_refcbt, le64_to_cpu(fi->fi_refc_root),
		       le32_to_cpu(fi->fi_refc_level), 0);
	for (ino = le64_to_cpu(fi->fi_unlinked); ino && n < 64; n++) {
		u8 ibuf[FFZ_BS];

		l_inode(lc, ino, &ffz_ot_inode_unlinked);
		l_read_blk(lc, ino, ibuf);
		di = (struct sx_dinode *)ibuf;
		ino = le64_to_cpu(di->di_next_unlinked);
	}
}

/* ------------------------------------------------------------ the log */

/* The object type of an intent or done op, or NULL. */
static const struct ffz_otype *l_item_type(u32 type)
{
	switch (type) {
	case SX_LOG_OP_BUI:	return &ffz_ot_bui;
	case SX_LOG_OP_BUD:	return &ffz_ot_bud;
	case SX_LOG_OP_EFI:	return &ffz_ot_efi;
	case SX_LOG_OP_EFD:	return &ffz_ot_efd;
	case SX_LOG_OP_CUI:	return &ffz_ot_cui;
	case SX_LOG_OP_CUD:	return &ffz_ot_cud;
	case SX_LOG_OP_SXI:	return &ffz_ot_sxi;
	case SX_LOG_OP_SXD:	return &ffz_ot_sxd;
	default:		return NULL;
	}
}

/* The object type of a block logged whole, by its magic, or NULL. */
static const struct ffz_otype *l_image_type(u32 magic)
{
	switch (magic) {
	case SX_INODE_MAGIC:	return &ffz_ot_img_inode;
	case SX_BMBT_MAGIC:
	case SX_DIRBT_MAGIC:
	case SX_REFCBT_MAGIC:	return &ffz_ot_img_btree;
	case SX_BITMAP_MAGIC:	return &ffz_ot_img_bitmap;
	case SX_FSINFO_MAGIC:	return &ffz_ot_img_fsinfo;
	default:		return NULL;
	}
}

static int l_done_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	struct l_ctx *lc = arg;
	u32 type = le16_to_cpu(op->lo_type);

	/* done types are the odd ones from SX_LOG_OP_BUD */
	if (l_item_type(type) && ((type - SX_LOG_OP_BUI) & 1) &&
	    lc->lc_ndone < ARRAY_SIZE(lc->lc_done))
		lc->lc_done[lc->lc_ndone++] =
			le64_to_cpu(((const struct sx_dlog_intent *)payload)->li_id);
	return 0;
}

static int l_done_rec(void *arg, const struct sx_log_scan_rec *r)
{
	const char *why;

	return sx_log_rec_walk_ops(r->sr_buf, r->sr_blocks * FFZ_BS, l_done_op, arg, &why);
}

static bool l_is_done(const struct l_ctx *lc, u64 id)
{
	u32 i;

	for (i = 0; i < lc->lc_ndone; i++)
		if (lc->lc_done[i] == id)
			return true;
	return false;
}

/* An object in the record being walked, at @p. */
static struct ffz_obj *l_add_log(struct l_ctx *lc, const struct ffz_otype *type, u32 group,
				 const void *p, const char *what)
{
	const struct ffz_logrec *r = &lc->lc_im->fi_recs[lc->lc_rec];
	u64 off = r->lr_off + (u64)((const u8 *)p - lc->lc_rec_buf);
	struct ffz_obj *o = l_add(lc, type, group, FFZ_CRC_LOG, off, r->lr_off,
				  r->lr_blocks * FFZ_BS);

	if (!o)
		abort();
	o->o_rec = lc->lc_rec;
	snprintf(o->o_where, sizeof(o->o_where), "record %u +%llu %s", lc->lc_rec,
		 (unsigned long long)(off - r->lr_off), what);
	return o;
}

static int l_log_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	struct l_ctx *lc = arg;
	u32 type = le16_to_cpu(op->lo_type), len = le32_to_cpu(op->lo_len);
	const struct ffz_otype *ot = l_item_type(type);
	char what[32];

	snprintf(what, sizeof(what), "op 0x%x", type);
	l_add_log(lc, &ffz_ot_op, type, op, what);
	if (ot) {
		u64 id = le64_to_cpu(((const struct sx_dlog_intent *)payload)->li_id);
		bool intent = !((type - SX_LOG_OP_BUI) & 1), open = intent && !l_is_done(lc, id);

		l_add_log(lc, ot, open, payload, open ? "unfinished" : "");
		return 0;
	}
	if (type == SX_LOG_OP_BUF && len >= sizeof(struct sx_dlog_buf)) {
		const struct sx_dlog_buf *lb = payload;
		const struct sx_dlog_region *rg = (const void *)(lb + 1);
		u32 nreg = le16_to_cpu(lb->lb_nregions), flags = le32_to_cpu(lb->lb_flags);
		const u8 *data = (const u8 *)(rg + nreg);
		u32 magic = 0, group;

		if (nreg && le32_to_cpu(rg[0].lg_off) == 0 && le32_to_cpu(rg[0].lg_len) == FFZ_BS)
			magic = le32_to_cpu(((const struct sx_dblk_hdr *)data)->bh_magic);
		/* apart: cancels, whole blocks of each kind, partial changes */
		group = (flags & SX_LB_CANCEL) ? 1 : magic ? magic : 2;
		l_add_log(lc, &ffz_ot_buf, group, lb, "");
		if (nreg)
			l_add_log(lc, &ffz_ot_region, group, rg, "");
		if (magic && l_image_type(magic))
			l_add_log(lc, l_image_type(magic), magic, data, "");
	}
	return 0;
}

static int l_log_rec(void *arg, const struct sx_log_scan_rec *r)
{
	struct l_ctx *lc = arg;
	struct ffz_image *im = lc->lc_im;
	struct ffz_logrec *lr;
	struct ffz_obj *o;
	const char *why;

	im->fi_recs = realloc(im->fi_recs, (im->fi_nrecs + 1) * sizeof(*im->fi_recs));
	if (!im->fi_recs)
		abort();
	lr = &im->fi_recs[im->fi_nrecs];
	lr->lr_off = (lc->lc_sb.sb_logstart + SX_LSN_BLOCK(r->sr_lsn)) * FFZ_BS;
	lr->lr_blocks = r->sr_blocks;
	lc->lc_rec = im->fi_nrecs++;
	lc->lc_rec_buf = r->sr_buf;
	o = l_add_log(lc, &ffz_ot_logrec, 0, r->sr_buf, "");
	snprintf(o->o_where, sizeof(o->o_where), "record %u (LSN %u/%u, %u blocks)", lc->lc_rec,
		 SX_LSN_CYCLE(r->sr_lsn), SX_LSN_BLOCK(r->sr_lsn), r->sr_blocks);
	return sx_log_rec_walk_ops(r->sr_buf, r->sr_blocks * FFZ_BS, l_log_op, lc, &why);
}

static void l_log(struct l_ctx *lc)
{
	struct sx_mount *mp = sx_offline_mount_alloc(lc->lc_bd, "fieldfuzz");
	struct sx_log_scan scan;

	if (!mp)
		abort();
	sx_offline_mount_set_sb(mp, &lc->lc_sb);
	if (sx_log_scan(mp, l_done_rec, lc, &scan) || sx_log_scan(mp, l_log_rec, lc, &scan))
		abort();
	sx_offline_mount_free(mp);
}

/* ------------------------------------------------------------ sampling */

/*
 * Of the candidates of each type and group, in walk order, keep @per_type
 * spread evenly from the first to the last.
 */
static void l_sample(struct l_ctx *lc, struct ffz_obj **objs, u32 *nobjs, u32 per_type)
{
	u8 *seen = calloc(lc->lc_ncand ? lc->lc_ncand : 1, 1);
	u32 *idx = malloc((lc->lc_ncand ? lc->lc_ncand : 1) * sizeof(*idx));
	u32 i, j, n, k;

	if (!seen || !idx)
		abort();
	for (i = 0; i < lc->lc_ncand; i++) {
		const struct l_cand *c = &lc->lc_cand[i];

		if (seen[i])
			continue;
		for (n = 0, j = i; j < lc->lc_ncand; j++) {
			if (lc->lc_cand[j].lc_obj.o_type == c->lc_obj.o_type &&
			    lc->lc_cand[j].lc_group == c->lc_group) {
				seen[j] = 1;
				idx[n++] = j;
			}
		}
		k = sx_min(n, per_type);
		for (j = 0; j < k; j++) {
			u32 pick = k == 1 ? 0 : (u32)((u64)j * (n - 1) / (k - 1));

			*objs = realloc(*objs, (*nobjs + 1) * sizeof(**objs));
			if (!*objs)
				abort();
			(*objs)[(*nobjs)++] = lc->lc_cand[idx[pick]].lc_obj;
		}
	}
	free(seen);
	free(idx);
}

void ffz_locate(struct ffz_image *im, u32 index, struct ffz_obj **objs, u32 *nobjs,
		u32 per_type)
{
	struct l_ctx lc;

	memset(&lc, 0, sizeof(lc));
	lc.lc_im = im;
	lc.lc_index = index;
	im->fi_meta = calloc(FFZ_NBLOCKS, 1);
	if (!im->fi_meta || sx_sb_read(NULL, im->fi_bd, &im->fi_sb, NULL))
		abort();
	lc.lc_sb = im->fi_sb;
	im->fi_log_end = (im->fi_sb.sb_logstart + im->fi_sb.sb_logblocks) * FFZ_BS;

	/* the older version first: what is metadata in either is marked */
	lc.lc_bd = im->fi_old;
	if (sx_sb_read(NULL, im->fi_old, &lc.lc_sb, NULL))
		abort();
	l_ondisk(&lc);
	lc.lc_sb = im->fi_sb;
	lc.lc_bd = im->fi_bd;
	lc.lc_objects = true;
	l_ondisk(&lc);
	l_log(&lc);
	if (lc.lc_skipped)
		printf("fieldfuzz: golden \"%s\": %u references not followed (blocks only its log holds)\n",
		       im->fi_name, lc.lc_skipped);
	l_sample(&lc, objs, nobjs, per_type);
	free(lc.lc_cand);
}
