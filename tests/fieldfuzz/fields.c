// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The field tables of field fuzzing: every field of every on-disk and log
 * object, its offset and size taken from the structures of format.h and
 * swap_log.h, so that a change of the format changes the tables too.
 */
#include <stddef.h>
#include "ffz.h"

#define FSZ(t, m)	((u32)sizeof(((t *)0)->m))
#define F(t, m)		{ #m, (u32)offsetof(t, m), FSZ(t, m), 0 }
/* a field of a structure that sits at @base of the object */
#define FB(t, m, base)	{ #m, (u32)(offsetof(t, m) + (base)), FSZ(t, m), 0 }
#define FCRC(t, m)	{ #m, (u32)offsetof(t, m), FSZ(t, m), FFZ_F_CRC }

#define OTYPE(var, name, tab) \
	const struct ffz_otype var = { name, tab, (u32)ARRAY_SIZE(tab) }

/* The header of every metadata block but the superblock, at offset 0. */
#define BLK_HDR(t, h)								\
	{ "bh_magic", (u32)offsetof(t, h.bh_magic), FSZ(t, h.bh_magic), 0 },	\
	{ "bh_crc", (u32)offsetof(t, h.bh_crc), FSZ(t, h.bh_crc), FFZ_F_CRC },	\
	{ "bh_blkno", (u32)offsetof(t, h.bh_blkno), FSZ(t, h.bh_blkno), 0 },	\
	{ "bh_owner", (u32)offsetof(t, h.bh_owner), FSZ(t, h.bh_owner), 0 },	\
	{ "bh_lsn", (u32)offsetof(t, h.bh_lsn), FSZ(t, h.bh_lsn), 0 },		\
	{ "bh_uuid", (u32)offsetof(t, h.bh_uuid), FSZ(t, h.bh_uuid), 0 }

/* The same header in a block image inside a log record: replay stamps the CRC. */
#define LOGGED_HDR(t, h)							\
	{ "bh_magic", (u32)offsetof(t, h.bh_magic), FSZ(t, h.bh_magic), 0 },	\
	{ "bh_crc", (u32)offsetof(t, h.bh_crc), FSZ(t, h.bh_crc), 0 },		\
	{ "bh_blkno", (u32)offsetof(t, h.bh_blkno), FSZ(t, h.bh_blkno), 0 },	\
	{ "bh_owner", (u32)offsetof(t, h.bh_owner), FSZ(t, h.bh_owner), 0 },	\
	{ "bh_lsn", (u32)offsetof(t, h.bh_lsn), FSZ(t, h.bh_lsn), 0 },		\
	{ "bh_uuid", (u32)offsetof(t, h.bh_uuid), FSZ(t, h.bh_uuid), 0 }

static const struct ffz_field sb_fields[] = {
	F(struct sx_dsb, sb_magic),
	FCRC(struct sx_dsb, sb_crc),
	F(struct sx_dsb, sb_version),
	F(struct sx_dsb, sb_blocksize),
	F(struct sx_dsb, sb_dblocks),
	F(struct sx_dsb, sb_seq),
	F(struct sx_dsb, sb_uuid),
	F(struct sx_dsb, sb_feat_compat),
	F(struct sx_dsb, sb_feat_ro_compat),
	F(struct sx_dsb, sb_feat_incompat),
	F(struct sx_dsb, sb_feat_log_incompat),
	F(struct sx_dsb, sb_logstart),
	F(struct sx_dsb, sb_logblocks),
	F(struct sx_dsb, sb_sectsize),
	F(struct sx_dsb, sb_log_tail),
	F(struct sx_dsb, sb_log_epoch),
	F(struct sx_dsb, sb_log_tail_prev_crc),
	F(struct sx_dsb, sb_bmapstart),
	F(struct sx_dsb, sb_bmapblocks),
	F(struct sx_dsb, sb_pad0),
	F(struct sx_dsb, sb_datastart),
	F(struct sx_dsb, sb_ctime),
	F(struct sx_dsb, sb_label),
	F(struct sx_dsb, sb_fsinfo),
	F(struct sx_dsb, sb_clean_free),
	F(struct sx_dsb, sb_reserved),
};
OTYPE(ffz_ot_sb, "superblock", sb_fields);

/* The bitmap's header; its bytes of bits are added per block by locate.c. */
static const struct ffz_field bitmap_fields[] = {
	BLK_HDR(struct sx_dbitmap, bm_hdr),
	F(struct sx_dbitmap, bm_index),
	F(struct sx_dbitmap, bm_nfree),
	F(struct sx_dbitmap, bm_pad),
};
OTYPE(ffz_ot_bitmap, "bitmap", bitmap_fields);

#define FSINFO_FIELDS(HDR)				\
	HDR(struct sx_dfsinfo, fi_hdr),			\
	F(struct sx_dfsinfo, fi_rootino),		\
	F(struct sx_dfsinfo, fi_unlinked),		\
	F(struct sx_dfsinfo, fi_next_gen),		\
	F(struct sx_dfsinfo, fi_icount),		\
	F(struct sx_dfsinfo, fi_refc_root),		\
	F(struct sx_dfsinfo, fi_refc_level),		\
	F(struct sx_dfsinfo, fi_pad),			\
	F(struct sx_dfsinfo, fi_reserved)

static const struct ffz_field fsinfo_fields[] = { FSINFO_FIELDS(BLK_HDR) };
OTYPE(ffz_ot_fsinfo, "fsinfo", fsinfo_fields);

#define INODE_FIELDS(HDR)				\
	HDR(struct sx_dinode, di_hdr),			\
	F(struct sx_dinode, di_mode),			\
	F(struct sx_dinode, di_format),			\
	F(struct sx_dinode, di_nlink),			\
	F(struct sx_dinode, di_uid),			\
	F(struct sx_dinode, di_gid),			\
	F(struct sx_dinode, di_size),			\
	F(struct sx_dinode, di_nblocks),		\
	F(struct sx_dinode, di_gen),			\
	F(struct sx_dinode, di_flags),			\
	F(struct sx_dinode, di_pad),			\
	F(struct sx_dinode, di_atime),			\
	F(struct sx_dinode, di_mtime),			\
	F(struct sx_dinode, di_ctime),			\
	F(struct sx_dinode, di_next_unlinked),		\
	F(struct sx_dinode, di_nrecs),			\
	F(struct sx_dinode, di_broot),			\
	F(struct sx_dinode, di_blevel),			\
	F(struct sx_dinode, di_pad2),			\
	F(struct sx_dinode, di_reserved)

static const struct ffz_field inode_fields[] = { INODE_FIELDS(BLK_HDR) };
OTYPE(ffz_ot_inode_dir, "inode (root dir)", inode_fields);
OTYPE(ffz_ot_inode_btree, "inode (B+tree fork)", inode_fields);
OTYPE(ffz_ot_inode_inline, "inode (inline fork)", inode_fields);
OTYPE(ffz_ot_inode_unlinked, "inode (unlinked)", inode_fields);

static const struct ffz_field bmap_rec_fields[] = {
	F(struct sx_dbmap_rec, br_startoff),
	F(struct sx_dbmap_rec, br_startblock),
	F(struct sx_dbmap_rec, br_blockcount),
	F(struct sx_dbmap_rec, br_flags),
};
OTYPE(ffz_ot_bmap_inline, "bmap rec (inline)", bmap_rec_fields);
OTYPE(ffz_ot_bmbt_rec, "bmap rec (bmbt leaf)", bmap_rec_fields);

static const struct ffz_field dir_rec_fields[] = {
	F(struct sx_ddir_rec, de_hash),
	F(struct sx_ddir_rec, de_ino),
	F(struct sx_ddir_rec, de_namelen),
	F(struct sx_ddir_rec, de_pad),
	F(struct sx_ddir_rec, de_name),
};
OTYPE(ffz_ot_dir_inline, "dir rec (inline)", dir_rec_fields);
OTYPE(ffz_ot_dirbt_rec, "dir rec (dirbt leaf)", dir_rec_fields);

static const struct ffz_field refc_rec_fields[] = {
	F(struct sx_drefc_rec, rc_startblock),
	F(struct sx_drefc_rec, rc_blockcount),
	F(struct sx_drefc_rec, rc_refcount),
};
OTYPE(ffz_ot_refcbt_rec, "refc rec", refc_rec_fields);

#define BTREE_FIELDS(HDR)				\
	HDR(struct sx_dbtree_block, bt_hdr),		\
	F(struct sx_dbtree_block, bt_level),		\
	F(struct sx_dbtree_block, bt_numrecs),		\
	F(struct sx_dbtree_block, bt_pad),		\
	F(struct sx_dbtree_block, bt_leftsib),		\
	F(struct sx_dbtree_block, bt_rightsib)

static const struct ffz_field btree_fields[] = { BTREE_FIELDS(BLK_HDR) };
OTYPE(ffz_ot_bmbt_leaf, "bmbt leaf", btree_fields);
OTYPE(ffz_ot_bmbt_node, "bmbt node", btree_fields);
OTYPE(ffz_ot_dirbt_leaf, "dirbt leaf", btree_fields);
OTYPE(ffz_ot_dirbt_node, "dirbt node", btree_fields);
OTYPE(ffz_ot_refcbt_leaf, "refcbt leaf", btree_fields);
OTYPE(ffz_ot_refcbt_node, "refcbt node", btree_fields);

/* Node entries: the fields are per entry (ffz_node_fields()). */
static const struct ffz_field node_ent_fields[] = {
	{ "key", 0, sizeof(__le64), 0 },
	{ "ptr", 0, sizeof(__le64), 0 },
};
OTYPE(ffz_ot_bmbt_ent, "bmbt node entry", node_ent_fields);
OTYPE(ffz_ot_dirbt_ent, "dirbt node entry", node_ent_fields);
OTYPE(ffz_ot_refcbt_ent, "refcbt node entry", node_ent_fields);

/*
 * The node layout of engine/btree.c, from the structure sizes: keys after
 * the header, then the pointers, after room for the most keys (a key and
 * a pointer per entry), at most 0xffff.
 */
u32 ffz_node_maxkeys(void)
{
	u32 n = (FFZ_BS - (u32)sizeof(struct sx_dbtree_block)) / (2 * (u32)sizeof(__le64));

	return n < 0xffff ? n : 0xffff;
}

void ffz_node_fields(u32 i, struct ffz_field f[2])
{
	u32 hdr = sizeof(struct sx_dbtree_block), w = sizeof(__le64);

	f[0] = node_ent_fields[0];
	f[0].f_off = hdr + i * w;
	f[1] = node_ent_fields[1];
	f[1].f_off = hdr + (ffz_node_maxkeys() + i) * w;
}

/* ------------------------------------------------------------ the log */

static const struct ffz_field logrec_fields[] = {
	F(struct sx_dlog_rec, lr_magic),
	FCRC(struct sx_dlog_rec, lr_crc),
	F(struct sx_dlog_rec, lr_lsn),
	F(struct sx_dlog_rec, lr_tail_lsn),
	F(struct sx_dlog_rec, lr_cycle),
	F(struct sx_dlog_rec, lr_epoch),
	F(struct sx_dlog_rec, lr_blocks),
	F(struct sx_dlog_rec, lr_len),
	F(struct sx_dlog_rec, lr_nops),
	F(struct sx_dlog_rec, lr_flags),
	F(struct sx_dlog_rec, lr_prev_crc),
	F(struct sx_dlog_rec, lr_version),
	F(struct sx_dlog_rec, lr_first_tid),
	F(struct sx_dlog_rec, lr_uuid),
	F(struct sx_dlog_rec, lr_force_lsn),
};
OTYPE(ffz_ot_logrec, "log record", logrec_fields);

static const struct ffz_field op_fields[] = {
	F(struct sx_dlog_op, lo_type),
	F(struct sx_dlog_op, lo_flags),
	F(struct sx_dlog_op, lo_len),
	F(struct sx_dlog_op, lo_tid),
};
OTYPE(ffz_ot_op, "op header", op_fields);

static const struct ffz_field buf_fields[] = {
	F(struct sx_dlog_buf, lb_blkno),
	F(struct sx_dlog_buf, lb_flags),
	F(struct sx_dlog_buf, lb_nregions),
	F(struct sx_dlog_buf, lb_pad),
};
OTYPE(ffz_ot_buf, "BUF", buf_fields);

static const struct ffz_field region_fields[] = {
	F(struct sx_dlog_region, lg_off),
	F(struct sx_dlog_region, lg_len),
};
OTYPE(ffz_ot_region, "BUF region", region_fields);

/* Every intent and done payload begins with struct sx_dlog_intent. */
#define INTENT_HDR					\
	F(struct sx_dlog_intent, li_id),		\
	F(struct sx_dlog_intent, li_nitems),		\
	F(struct sx_dlog_intent, li_pad)
#define ITEM(t, m)	FB(t, m, sizeof(struct sx_dlog_intent))

static const struct ffz_field bui_fields[] = {
	INTENT_HDR,
	ITEM(struct sx_dlog_bmap, bm_ino),
	ITEM(struct sx_dlog_bmap, bm_gen),
	ITEM(struct sx_dlog_bmap, bm_startoff),
	ITEM(struct sx_dlog_bmap, bm_startblock),
	ITEM(struct sx_dlog_bmap, bm_blockcount),
	ITEM(struct sx_dlog_bmap, bm_flags),
};
OTYPE(ffz_ot_bui, "BUI", bui_fields);

static const struct ffz_field efi_fields[] = {
	INTENT_HDR,
	ITEM(struct sx_dlog_efi, ef_startblock),
	ITEM(struct sx_dlog_efi, ef_blockcount),
	ITEM(struct sx_dlog_efi, ef_pad),
};
OTYPE(ffz_ot_efi, "EFI", efi_fields);

static const struct ffz_field cui_fields[] = {
	INTENT_HDR,
	ITEM(struct sx_dlog_cui, cu_startblock),
	ITEM(struct sx_dlog_cui, cu_blockcount),
	ITEM(struct sx_dlog_cui, cu_op),
};
OTYPE(ffz_ot_cui, "CUI", cui_fields);

/* An SXI is struct sx_dlog_sxi: the intent header and one swap. */
#define SXI(m)	{ #m, (u32)offsetof(struct sx_dlog_sxi, sxi_ext.m),		\
		  FSZ(struct sx_dlog_sxi, sxi_ext.m), 0 }
static const struct ffz_field sxi_fields[] = {
	INTENT_HDR,
	SXI(sw_ino1),
	SXI(sw_ino2),
	SXI(sw_gen1),
	SXI(sw_gen2),
	SXI(sw_startoff1),
	SXI(sw_startoff2),
	SXI(sw_blockcount),
	SXI(sw_flags),
	SXI(sw_isize1),
	SXI(sw_isize2),
};
OTYPE(ffz_ot_sxi, "SXI", sxi_fields);

static const struct ffz_field done_fields[] = { INTENT_HDR };
OTYPE(ffz_ot_bud, "BUD", done_fields);
OTYPE(ffz_ot_efd, "EFD", done_fields);
OTYPE(ffz_ot_cud, "CUD", done_fields);
OTYPE(ffz_ot_sxd, "SXD", done_fields);

/* Blocks logged whole by a BUF op: the same fields, in the record. */
static const struct ffz_field img_inode_fields[] = { INODE_FIELDS(LOGGED_HDR) };
OTYPE(ffz_ot_img_inode, "logged inode", img_inode_fields);
static const struct ffz_field img_btree_fields[] = { BTREE_FIELDS(LOGGED_HDR) };
OTYPE(ffz_ot_img_btree, "logged B+tree block", img_btree_fields);
static const struct ffz_field img_fsinfo_fields[] = { FSINFO_FIELDS(LOGGED_HDR) };
OTYPE(ffz_ot_img_fsinfo, "logged fsinfo", img_fsinfo_fields);
static const struct ffz_field img_bitmap_fields[] = {
	LOGGED_HDR(struct sx_dbitmap, bm_hdr),
	F(struct sx_dbitmap, bm_index),
	F(struct sx_dbitmap, bm_nfree),
	F(struct sx_dbitmap, bm_pad),
};
OTYPE(ffz_ot_img_bitmap, "logged bitmap", img_bitmap_fields);

const struct ffz_field *ffz_obj_field(const struct ffz_obj *o, u32 i)
{
	return o->o_nfields ? &o->o_fields[i] : &o->o_type->ot_fields[i];
}

u32 ffz_obj_nfields(const struct ffz_obj *o)
{
	return o->o_nfields ? o->o_nfields : o->o_type->ot_nfields;
}
