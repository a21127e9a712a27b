// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Compile-time checks that every on-disk and log structure has the size the
 * format says, in every build: a padding change here is a format change.
 */
#include "util.h"

#define SX_SIZE(type, bytes) \
	_Static_assert(sizeof(struct type) == (bytes), #type " changed size")

SX_SIZE(sx_dsb, 480);
SX_SIZE(sx_dblk_hdr, 48);
SX_SIZE(sx_dbitmap, 64);
SX_SIZE(sx_dlog_rec, 88);
SX_SIZE(sx_dlog_mfent, 16);
SX_SIZE(sx_dlog_op, 16);
SX_SIZE(sx_dlog_buf, 16);
SX_SIZE(sx_dlog_region, 8);
SX_SIZE(sx_dlog_intent, 16);
SX_SIZE(sx_dfsinfo, 160);
SX_SIZE(sx_dinode, 184);
SX_SIZE(sx_dbmap_rec, 24);
SX_SIZE(sx_ddir_rec, 280);
SX_SIZE(sx_drefc_rec, 16);
SX_SIZE(sx_dbtree_block, 72);
SX_SIZE(sx_dlog_bmap, 40);
SX_SIZE(sx_dlog_efi, 16);
SX_SIZE(sx_dlog_cui, 16);
SX_SIZE(sx_dlog_swapext, 80);
SX_SIZE(sx_dlog_sxi, 96);

/* field offsets that moved out of a reserved area must stay where they are */
#define SX_OFF(type, field, off) \
	_Static_assert(offsetof(struct type, field) == (off), #type "." #field " moved")

SX_OFF(sx_dsb, sb_label, 128);
SX_OFF(sx_dsb, sb_fsinfo, 160);
SX_OFF(sx_dsb, sb_clean_free, 168);
SX_OFF(sx_dsb, sb_reserved, 176);
SX_OFF(sx_dfsinfo, fi_rootino, 48);
SX_OFF(sx_dfsinfo, fi_unlinked, 56);
SX_OFF(sx_dfsinfo, fi_next_gen, 64);
SX_OFF(sx_dfsinfo, fi_icount, 72);
SX_OFF(sx_dlog_rec, lr_force_lsn, 80);
SX_OFF(sx_dfsinfo, fi_refc_root, 80);
SX_OFF(sx_dfsinfo, fi_refc_level, 88);
SX_OFF(sx_dinode, di_next_unlinked, 120);
_Static_assert(sizeof(((struct sx_dsb *)0)->sb_reserved) == 38 * 8, "sb_reserved size");

_Static_assert(sizeof(struct sx_dsb) <= SX_SB_SIZE, "superblock exceeds its sector");
_Static_assert(SX_DINODE_CORE + sizeof(struct sx_ddir_rec) <= SX_MIN_BLOCKSIZE,
	       "a 512-byte inode must hold one directory entry inline");
_Static_assert(offsetof(struct sx_dlog_swapext, sw_gen1) == 16 &&
	       offsetof(struct sx_dlog_swapext, sw_blockcount) == 48 &&
	       offsetof(struct sx_dlog_swapext, sw_isize2) == 72, "SXI item layout");
_Static_assert(SX_BMI_MAP == 1 && SX_BMI_UNWRITTEN == 2 && SX_BMI_SWAP == 4 &&
	       SX_BMI_FLAGS_ALL == (SX_BMI_MAP | SX_BMI_UNWRITTEN | SX_BMI_SWAP),
	       "BUI flags are a log format");
_Static_assert(offsetof(struct sx_dlog_sxi, sxi_ext) == sizeof(struct sx_dlog_intent),
	       "SXI payload: header, then the one item");
