/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers of `swapext kmod ...` (cmd_kmod.c) shared with its subcommands
 * in files of their own (cmd_kmod_writers.c, cmd_kmod_abi.c).
 */
#ifndef SX_TOOL_KMOD_H
#define SX_TOOL_KMOD_H

#include "tool.h"

/* kmod_num() - parse an unsigned number (any base strtoull takes); false if it is not one */
bool kmod_num(const char *s, u64 *v);

/* kmod_ctl_open() - open the control device; prints why it cannot (-1) */
int kmod_ctl_open(void);

/*
 * kmod_ioctl() - issue one ioctl on a fresh control file; 0 or -errno,
 * printed as @what unless @what is NULL
 */
int kmod_ioctl(unsigned long cmd, void *arg, const char *what);

/*
 * kmod_rw_at() - PREAD or PWRITE (@cmd) of @len bytes at @off of descriptor
 * @fd of instance @id: the bytes moved or -errno (printed as @what unless NULL)
 */
s64 kmod_rw_at(u32 id, s32 fd, unsigned long cmd, void *buf, u64 len, u64 off, const char *what);

/* kmod_writers() - `swapext kmod writers ...` (cmd_kmod_writers.c) */
int kmod_writers(int argc, char **argv);

/* kmod_awrite_abi() - `swapext kmod awrite-abi ID FD` (cmd_kmod_abi.c) */
int kmod_awrite_abi(int argc, char **argv);

#endif /* SX_TOOL_KMOD_H */
