/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The checker's internals, shared by its parts: check.c (superblocks, log,
 * bitmap, fsinfo) and check_files.c (the walk of every file's blocks).
 */
#ifndef SX_CHECK_PRIV_H
#define SX_CHECK_PRIV_H

#include "util.h"
#include "sb.h"

typedef unsigned long long sx_ull;

struct sx_checker {
	struct sx_mount	*ck_mp;
	struct sx_bdev	*ck_bd;
	sx_report_fn	ck_report;
	void		*ck_arg;
	u64		ck_problems;
	u32		ck_flags;	/* SX_CHECK_* */
	u64		ck_head;	/* LSN after the valid log; 0 if unknown */
	u32		ck_records;	/* valid records past the tail */
	u32		ck_rec_problems; /* records with a bad op */
	/* the op walk of the record being checked */
	u64		ck_rec_lsn;
	u32		ck_opno;
	bool		ck_op_bad;
};

/* Report and count one problem; a line starting "problem: ". */
void sx_check_problem(struct sx_checker *ck, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Report a fact; a line starting "note: ". */
void sx_check_note(struct sx_checker *ck, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * sx_check_lsn() - report a metadata block image whose LSN is not a log
 * position or is not behind the log head; @what names the block
 */
void sx_check_lsn(struct sx_checker *ck, const void *data, const char *what);

/**
 * sx_check_files() - walk the root directory, every file it names and the
 * unlinked list, and the refcount tree; judge every data block's use
 * against the bitmap and the refcounts (check_files.c)
 */
int sx_check_files(struct sx_checker *ck, const struct sx_sb *sb);

#endif /* SX_CHECK_PRIV_H */
