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
 *	damage.c	the transforms, applied with the CRC recomputed or stale
 *	report.c	the figures
 *	fieldfuzz.c	the cases, the runs in forked children, the figures
 */
#ifndef FFZ_H
#define FFZ_H

#include <stdio.h>
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

/* ------------------------------------------------------------ cases */

/* The transforms. */
enum {
	X_ZERO, X_ONES, X_HIGH, X_MID, X_LOW, X_INC, X_DEC, X_RAND,
	FFZ_NX,
	X_LOST = FFZ_NX,	/* a lost write: the block's older version */
};

/* Their names, and the names of the steps and outcomes below (report.c). */
extern const char *const ffz_x_names[];
extern const char *const ffz_w_names[];
extern const char *const ffz_o_names[];

/* The workload's steps, for the report. */
enum {
	W_CHECK0, W_DAMAGE, W_RECOVER, W_MOUNT, W_OPEN, W_WRITE, W_CLONE, W_SWAP, W_FSYNC, W_READ,
	W_CLOSE, W_UNMOUNT, W_CHECK1, W_DONE,
	FFZ_NW,
};

/* Outcomes. */
enum {
	O_NOTRUN,
	O_UNCHANGED,		/* the transform left the bytes as they were */
	O_MOUNT_ERR,		/* pass: the mount refused */
	O_OP_ERR,		/* pass: an operation or the unmount stopped on damage */
	O_OK_CLEAN,		/* pass: success, the checker then finds nothing */
	O_OK_KNOWN,		/* pass: success, the checker finds only what P0 found */
	/*
	 * Not a pass and not an engine failure: a log record forged with a
	 * valid CRC (the field damaged, the CRC recomputed) was replayed and
	 * the checker finds what it did.  No checksum can tell a forged
	 * record from a real one; counted apart, never hidden.
	 */
	O_FORGED,
	O_FAIL_NEW,		/* success, and the checker finds a new problem */
	O_FAIL_CRASH,		/* killed by a signal */
	O_FAIL_HANG,		/* ran past the timeout */
	O_FAIL_SAN,		/* exited without finishing: a sanitizer report, exit() */
	O_FAIL_LEAK,		/* LeakSanitizer found a leak */
	O_FAIL_CHECK,		/* the checker could not run */
	O_FAIL_RECOVERY,	/* recovery alone left a cross-link the damage had not */
	FFZ_NO,
};

/* ffz_failed() - true if outcome @o is a failure */
static inline bool ffz_failed(u32 o)
{
	return o >= O_FAIL_NEW;
}

struct ffz_case {
	u32	c_obj;		/* objects[] index; ~0 for a lost write */
	u16	c_field;
	u8	c_x;		/* X_* */
	u8	c_stale;	/* the CRC left as it was */
	u32	c_image;
	u64	c_blk;		/* a lost write: the block */
};

/* What a child reports, in memory shared with the parent. */
struct ffz_res {
	u8	r_outcome;
	u8	r_phase;	/* W_*: how far the child got */
	u8	r_done;		/* the child finished and wrote its outcome */
	u8	r_err_step;	/* W_* of the clean error, or of the first refusal */
	s32	r_error;	/* that error */
	u32	r_refused;	/* operations refused with another error */
	u32	r_p0;		/* problems before the mount */
	u32	r_p1;		/* after the workload */
	u32	r_pnew;		/* of them, not in P0 */
	u32	r_prec;		/* cross-links recovery alone made (the "log" image) */
	u32	r_ms;
	s32	r_sig;
	char	r_line[240];	/* the first new problem, or the shutdown's reason */
};

/* The cases of a run and their results, for damage.c and report.c. */
struct ffz_set {
	struct ffz_image	*s_images;	/* FFZ_NIMG of them */
	const struct ffz_obj	*s_objects;
	const struct ffz_case	*s_cases;
	u32			s_ncases;
	const struct ffz_res	*s_results;
	u32			s_every;	/* the cases run: each s_every-th */
	u64			s_seed;
	bool			s_fields;	/* report.c: tables by field too */
};

/* ------------------------------------------------------------ damage.c */

/*
 * ffz_damage() - damage @bd as case @c says; false if the bytes came out
 * as they were.  @bd may be NULL: only say whether the case changes them.
 */
bool ffz_damage(const struct ffz_set *s, struct sx_bdev *bd, const struct ffz_case *c);

/* ------------------------------------------------------------ report.c */

/* Outcomes counted. */
struct ffz_tally {
	u32	t_n[FFZ_NO];
	u32	t_run;
};

/* ffz_tally_failed() - the failures of @t */
u32 ffz_tally_failed(const struct ffz_tally *t);
/* ffz_case_name() - case @c in words, in @buf */
const char *ffz_case_name(const struct ffz_set *s, const struct ffz_case *c, char *buf,
			  size_t len);
/* ffz_figures() - the tables by object, field, transform and CRC mode; the total in *@total */
void ffz_figures(const struct ffz_set *s, FILE *f, struct ffz_tally *total);
/* ffz_failures() - the forged-log cases (the first 20) and the failures (the first 200) */
void ffz_failures(const struct ffz_set *s);

#endif /* FFZ_H */
