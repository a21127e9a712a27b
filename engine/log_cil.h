/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The log's queue of committed transactions (log_cil.c): what the
 * transaction code asks of it, and what the log's writer and forces
 * (log.c, log_force.c) do with its groups.
 */
#ifndef SX_LOG_CIL_H
#define SX_LOG_CIL_H

#include "log_priv.h"

/**
 * sx_log_cil_group() - the queue's open group (0 if none); a buffer whose
 * newest queued op is there may have that op dropped if its next op covers
 * the same bytes (sx_trans_cover_queued)
 */
u64 sx_log_cil_group(struct sx_mount *mp);

/**
 * sx_log_cil_push() - write the queue if it holds more than the mount lets
 * it keep in memory (a force; cheap when it does not)
 */
int sx_log_cil_push(struct sx_mount *mp);

/** sx_cil_insert() - put a parsed transaction into the open group */
void sx_cil_insert(struct sx_mount *mp, struct sx_cil_trans *ct, struct sx_cil_group **spare,
		   struct sx_log_intent **lis);
/** sx_cil_parse() - fill ct_opv from ct_ops (no lock needed) */
int sx_cil_parse(struct sx_mount *mp, struct sx_cil_trans *ct);
/** sx_cil_take() - move every queued group onto @groups and close the open one */
void sx_cil_take(struct sx_log *log, struct sx_list *groups);
/** sx_cil_format() - copy a group's live ops to @dst; returns their first tid */
u64 sx_cil_format(const struct sx_cil_group *g, u8 *dst);
/** sx_cil_trans_free() - drop a transaction's pins at @lsn and free it */
void sx_cil_trans_free(struct sx_mount *mp, struct sx_cil_trans *ct, u64 lsn);

#endif /* SX_LOG_CIL_H */
