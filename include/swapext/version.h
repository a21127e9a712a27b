/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The library's version, in one place: the Makefile reads it for the
 * shared library's SONAME and swapext.pc, the kernel module for
 * MODULE_VERSION, and sx_version() and `swapext --version` print it.
 * (SX_VERSION in the engine's format.h is the on-disk format's version.)
 */
#ifndef SWAPEXT_VERSION_H
#define SWAPEXT_VERSION_H

#define SX_LIB_VERSION_MAJOR	0
#define SX_LIB_VERSION_MINOR	1
#define SX_LIB_VERSION_PATCH	0
#define SX_LIB_VERSION		"0.1.0"
/* The shared library's ABI: libswapext.so.N; raised when the ABI breaks. */
#define SX_LIB_SOVERSION	1

#endif /* SWAPEXT_VERSION_H */
