/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Field fuzzing of golden images (make fieldfuzz), in the manner of
 * xfstests' "fuzzing with xfs_db": every field of every on-disk and log
 * object of two golden images is damaged in eight ways, with its CRC made
 * right again and with it left stale, and each damaged image is mounted,
 * worked on and checked.
 *
 *	golden.c	the golden images, built by the engine itself
 *	fields.c	the field tables, from format.h and swap_log.h
 *	locate.c	the objects of an image, found by walking it
 *	compare.c	which problems after the workload the damage did not cause
 *	fieldfuzz.c	the cases, the runs in forked children, the figures
 */
#ifndef FFZ_H
#define FFZ_H

#include "sxtest.h"
#include "sb.h"

#define FFZ_BS		1024u
#define FFZ_SIZE	(8ull << 20)
#define FFZ_NBLOCKS	(FFZ_SIZE / FFZ_BS)

/* Blocks of "big" and "pad", written interleaved: an extent each. */
#define FFZ_NBIG	100u

/* The golden images. */
enum {
	FFZ_IMG_CLEAN,		/* unmounted cleanly: an empty log */
	FFZ_IMG_LOG,		/* cut mid-chain: unfinished SXI, BUI, EFI and CUI */
	FFZ_NIMG,
};

/* What a block of an image is, as the walk of locate.c found it. */
enum {
	FFZ_M_DATA = 0,		/* file data, free, or nothing known */
	FFZ_M_SB,
	FFZ_M_LOG,
	FFZ_M_BITMAP,
	FFZ_M_FSINFO,
	FFZ_M_INODE,
	FFZ_M_BTREE,
};

/* A valid log record of an image, in scan order from the tail. */
struct ffz_logrec {
	u64	lr_off;			/* byte offset on the device */
	u32	lr_blocks;
	u32	lr_pad;
};

struct ffz_image {
	const char	*fi_name;
	struct sx_bdev	*fi_bd;		/* the golden image */
	struct sx_bdev	*fi_old;	/* an older version, for the lost writes */
	struct sx_sb	fi_sb;
	u8		*fi_meta;	/* FFZ_M_* of each block, golden or old */
	struct ffz_logrec *fi_recs;
	u32		fi_nrecs;
	u64		fi_log_end;	/* byte offset just past the log area */
};

/* ------------------------------------------------------------ fields */

enum {
	FFZ_F_CRC	= (1u << 0),	/* the CRC itself: only ever stale */
};

struct ffz_field {
	const char	*f_name;
	u32		f_off;		/* from the object's start */
	u32		f_size;
	u32		f_flags;	/* FFZ_F_* */
};

struct ffz_otype {
	const char		*ot_name;
	const struct ffz_field	*ot_fields;
	u32			ot_nfields;
};

/* The object types (fields.c). */
extern const struct ffz_otype ffz_ot_sb;
extern const struct ffz_otype ffz_ot_bitmap;
extern const struct ffz_otype ffz_ot_fsinfo;
extern const struct ffz_otype ffz_ot_inode_dir;
extern const struct ffz_otype ffz_ot_inode_btree;
extern const struct ffz_otype ffz_ot_inode_inline;
extern const struct ffz_otype ffz_ot_inode_unlinked;
extern const struct ffz_otype ffz_ot_bmap_inline;
extern const struct ffz_otype ffz_ot_dir_inline;
extern const struct ffz_otype ffz_ot_bmbt_leaf;
extern const struct ffz_otype ffz_ot_bmbt_node;
extern const struct ffz_otype ffz_ot_bmbt_rec;
extern const struct ffz_otype ffz_ot_bmbt_ent;
extern const struct ffz_otype ffz_ot_dirbt_leaf;
extern const struct ffz_otype ffz_ot_dirbt_node;
extern const struct ffz_otype ffz_ot_dirbt_rec;
extern const struct ffz_otype ffz_ot_dirbt_ent;
extern const struct ffz_otype ffz_ot_refcbt_leaf;
extern const struct ffz_otype ffz_ot_refcbt_node;
extern const struct ffz_otype ffz_ot_refcbt_rec;
extern const struct ffz_otype ffz_ot_refcbt_ent;
extern const struct ffz_otype ffz_ot_logrec;
extern const struct ffz_otype ffz_ot_op;
extern const struct ffz_otype ffz_ot_buf;
extern const struct ffz_otype ffz_ot_region;
extern const struct ffz_otype ffz_ot_bui;
extern const struct ffz_otype ffz_ot_efi;
extern const struct ffz_otype ffz_ot_cui;
extern const struct ffz_otype ffz_ot_sxi;
extern const struct ffz_otype ffz_ot_bud;
extern const struct ffz_otype ffz_ot_efd;
extern const struct ffz_otype ffz_ot_cud;
extern const struct ffz_otype ffz_ot_sxd;
/* a block logged whole by a BUF op, its fields in the log */
extern const struct ffz_otype ffz_ot_img_inode;
extern const struct ffz_otype ffz_ot_img_btree;
extern const struct ffz_otype ffz_ot_img_bitmap;
extern const struct ffz_otype ffz_ot_img_fsinfo;

/*
 * ffz_node_fields() - the key and pointer of entry @i of a B+tree node of
 * FFZ_BS bytes (where the engine puts them: keys after the header, the
 * pointers after room for the most keys a node holds)
 */
void ffz_node_fields(u32 i, struct ffz_field f[2]);
/* ffz_node_maxkeys() - keys a node block of FFZ_BS bytes holds */
u32 ffz_node_maxkeys(void);

/* ------------------------------------------------------------ objects */

/* What a CRC covers and where it is. */
enum ffz_crc {
	FFZ_CRC_SB,		/* SX_SB_SIZE bytes, sb_crc */
	FFZ_CRC_BLOCK,		/* the block, bh_crc */
	FFZ_CRC_LOG,		/* the record, lr_crc, and the chain after it */
};

struct ffz_obj {
	const struct ffz_otype	*o_type;
	u32			o_image;
	enum ffz_crc		o_crc;
	u64			o_off;		/* byte offset of the object */
	u64			o_unit;		/* byte offset of what its CRC covers */
	u32			o_unit_len;
	u32			o_rec;		/* FFZ_CRC_LOG: index in fi_recs */
	/* fields of this instance if o_nfields (bitmap bytes, node entries), else its type's */
	struct ffz_field	o_fields[16];
	u32			o_nfields;
	char			o_where[64];
};

/* ffz_obj_field() - field @i of @o, and how many it has */
const struct ffz_field *ffz_obj_field(const struct ffz_obj *o, u32 i);
u32 ffz_obj_nfields(const struct ffz_obj *o);

/* ------------------------------------------------------------ golden.c */

/* Names of the files of the golden images. */
#define FFZ_BIG		"big"		/* B+tree extent map, shared with "share" */
#define FFZ_PAD		"pad"		/* B+tree too, interleaved with "big" */
#define FFZ_SHARE	"share"		/* a clone of "big": the refcount tree */

/*
 * ffz_golden_build() - build both golden images and their older versions
 * (deterministic: fixed uuid, fixed clock, no randomness); prints what the
 * log image's log holds
 */
void ffz_golden_build(struct ffz_image img[FFZ_NIMG]);

/* The clock the engine reads while the golden images are built and fuzzed. */
u64 __wrap_sx_wall_ns(void);

/* ------------------------------------------------------------ locate.c */

/* ffz_locate() - mark the metadata of @im and append its objects to *@objs */
void ffz_locate(struct ffz_image *im, u32 index, struct ffz_obj **objs, u32 *nobjs,
		u32 per_type);

/* ffz_read()/ffz_write() - bytes of a device, aborting on error */
void ffz_read(struct sx_bdev *bd, u64 off, void *buf, u32 len);
void ffz_write(struct sx_bdev *bd, u64 off, const void *buf, u32 len);

/* ------------------------------------------------------------ compare.c */

struct sxt_text;

/*
 * ffz_new_problems() - the problems of checker report @p1 that report @p0
 * does not account for (compare.c says how); the first in @first
 */
u32 ffz_new_problems(const struct sxt_text *p0, const struct sxt_text *p1, char *first,
		     size_t flen);

/* ffz_new_crosslinks() - the same, counting only cross-links (compare.c) */
u32 ffz_new_crosslinks(const struct sxt_text *p0, const struct sxt_text *p1, char *first,
		       size_t flen);

#endif /* FFZ_H */
