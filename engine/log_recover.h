/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading the log back (log_recover.c): the scan of valid records, which
 * the checker and the log printer use too, and mount's recovery.
 */
#ifndef SX_LOG_RECOVER_H
#define SX_LOG_RECOVER_H

#include "log.h"

/* Why a log scan stopped. */
enum sx_log_stop {
	SX_LOG_STOP_NONE = 0,		/* the scan went all the way round */
	SX_LOG_STOP_HEADER,		/* no valid header where one was expected */
	SX_LOG_STOP_CHAIN,		/* header valid, prev CRC does not chain */
	SX_LOG_STOP_EPOCH,		/* epoch went backwards */
	SX_LOG_STOP_CRC,		/* torn or damaged record */
	SX_LOG_STOP_IO,			/* read error */
	SX_LOG_STOP_DATA,		/* the last force's data does not match its manifest */
};

/* One valid record found by a scan. */
struct sx_log_scan_rec {
	u64		sr_lsn;
	u32		sr_blocks;
	u32		sr_crc;
	u32		sr_prev_crc;
	u32		sr_epoch;
	const void	*sr_buf;	/* the whole record, sr_blocks blocks */
};

struct sx_log_scan {
	u64		sc_head;	/* LSN after the last valid record */
	u32		sc_head_prev_crc; /* CRC of the last valid record */
	u32		sc_records;
	u32		sc_epoch;	/* epoch of the last valid record */
	u64		sc_max_tid;
	enum sx_log_stop sc_stop;
	const char	*sc_why;	/* what was wrong where it stopped */
	/*
	 * SX_LOG_STOP_DATA: the records of the last force, dropped (the head
	 * is its first record), and the first of its blocks that did not match
	 */
	u32		sc_dropped;
	u64		sc_bad_bno;
	u32		sc_manifest;	/* entries of the last force's manifest, checked */
};

/**
 * sx_log_scan() - walk the valid log from the superblock's tail
 * @fn: called for each valid record; a nonzero return stops the scan
 *
 * Return: 0 (the scan result says where and why it ended), -EFSCORRUPTED
 * if a record with a good CRC holds malformed ops, an I/O error, -ENOMEM.
 */
int sx_log_scan(struct sx_mount *mp, int (*fn)(void *arg, const struct sx_log_scan_rec *r),
		void *arg, struct sx_log_scan *res);

/**
 * sx_log_scan_to() - sx_log_scan(), but the log ends at @limit (a head an
 * earlier scan found, SX_LOG_STOP_DATA), with no manifest check
 */
int sx_log_scan_to(struct sx_mount *mp, u64 limit,
		   int (*fn)(void *arg, const struct sx_log_scan_rec *r), void *arg,
		   struct sx_log_scan *res);

/** sx_log_stop_name() - a word for a scan's stop reason */
const char *sx_log_stop_name(enum sx_log_stop stop);

/**
 * sx_log_recover() - replay the log and finish unfinished intents (mount)
 *
 * Sets up mp->m_log at the end of the valid log.  @recovered says whether
 * anything was replayed or finished, so that mount checkpoints.
 */
int sx_log_recover_replay(struct sx_mount *mp, bool *dirty);
int sx_log_recover_intents(struct sx_mount *mp);

/**
 * sx_log_recover_cancel() - free the unfinished intents replay left for
 * sx_log_recover_intents(), on a mount that fails before it runs them
 */
void sx_log_recover_cancel(struct sx_mount *mp);

#endif /* SX_LOG_RECOVER_H */
