/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The data path (file_io.c): what the rest of the store uses of it besides
 * the public calls (sx_pread(), sx_pwrite(), sx_truncate(), ...).
 */
#ifndef SX_FILE_IO_H
#define SX_FILE_IO_H

#include "util.h"

struct sx_inode;
struct sx_trans;

/**
 * sx_file_write_data() - write data blocks in place (no journal)
 * @fresh: the blocks' mapping is not durable yet (new blocks): the force
 *	that writes their mapping lists them in its manifest, so that the
 *	mapping is never durable without the data (sx_log_write_data())
 */
int sx_file_write_data(struct sx_mount *mp, u64 bno, u32 count, const void *buf, bool fresh);

/**
 * sx_file_free_blocks() - unmap and free (or drop a reference to, for a
 * file that may share blocks) every mapped block of file blocks
 * [@fb, @fb + @nb) of the regular file @ip
 * @tpp: the caller's transaction, of at least sx_file_free_res() bytes;
 *       rolled once per batch of mapped pieces (each a complete step, its
 *       blocks freed in it or by its EFI or CUI work finished after it);
 *       on return a fresh transaction for the caller to commit, or on
 *       error the caller's to cancel (it may be NULL)
 *
 * The caller holds @ip's ilock.  Used by truncate/punch and by the freeing
 * of an unlinked inode.
 */
int sx_file_free_blocks(struct sx_trans **tpp, struct sx_inode *ip, u64 fb, u64 nb);

/** sx_file_trim_eof() - free the blocks mapped past EOF (caller holds the iolock) */
int sx_file_trim_eof(struct sx_inode *ip);

/**
 * sx_file_prepare_grow() - before the regular file @ip grows to @newsize
 * other than by the data path (a clone past EOF): free the blocks a crash
 * may have left past EOF and zero the tail of the EOF block, so that no
 * old bytes show in the grown part; the caller holds the iolock exclusive
 */
int sx_file_prepare_grow(struct sx_inode *ip, u64 newsize);

/**
 * sx_file_read() - sx_pread() of the regular file @ip for a caller that
 * holds its iolock (shared or exclusive): bytes read, or -errno
 */
s64 sx_file_read(struct sx_inode *ip, void *buf, u64 len, u64 off);
/** sx_file_free_res() - log bytes of one step of sx_file_free_blocks() */
u32 sx_file_free_res(const struct sx_mount *mp, const struct sx_inode *ip);
/** sx_file_free_batch_res() - the reservation that lets sx_file_free_blocks() batch */
u32 sx_file_free_batch_res(const struct sx_mount *mp, const struct sx_inode *ip);

#endif /* SX_FILE_IO_H */
