// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A program of its own, built against the *installed* headers and library
 * (tests/install/install-check.sh): it defines names the engine's platform
 * layer also uses, which must not clash, and it fails to compile if any of
 * that layer (sx_platform.h, u8, ASSERT, likely, pthread, liburcu) comes in
 * with the public headers.  Then it uses the library for real: a filesystem on
 * a memory device, a file written, swapped with another and read back.
 */
typedef int u8;
typedef long long u64;
#define ASSERT(x)	consumer_assert((x), #x)
#define VERIFY(x)	consumer_assert((x), #x)
#define likely(x)	(x)
#define unlikely(x)	(x)

#include <swapext/swapext.h>
#include <swapext/device.h>
#include <swapext/fsr.h>
#include <swapext/swapext_compat.h>
#include <swapext/kctl.h>
#include <swapext/selftest.h>

#ifdef SX_PLATFORM_USER_H
#error "sx_platform.h came in with the public headers"
#endif
#ifdef SWAPEXT_PLATFORM_H
#error "the platform contract came in with the public headers"
#endif
#if defined(_PTHREAD_H) || defined(PTHREAD_MUTEX_INITIALIZER)
#error "pthread.h came in with the public headers"
#endif
#if defined(_URCU_H) || defined(_URCU_MEMB_H) || defined(URCU_MEMB_H)
#error "liburcu came in with the public headers"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void consumer_assert(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "consumer: failed: %s\n", what);
		failures++;
	}
}

int main(void)
{
	struct sx_mkfs_opts mo = { .mk_blocksize = 4096,
				   .mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP };
	struct file_swap_range fsr;
	struct sx_mount *mp = NULL;
	struct sx_bdev *bd = NULL;
	static char a[8192], b[8192], got[8192];
	uint64_t problems = 1;
	int fa = -1, fb = -1;
	u8 mine = 7;		/* the program's own u8 is an int */

	VERIFY(sizeof(mine) == sizeof(int));
	/* one version: the numbers, the string and the library that runs agree */
	snprintf(got, sizeof(got), "%d.%d.%d", SX_LIB_VERSION_MAJOR, SX_LIB_VERSION_MINOR,
		 SX_LIB_VERSION_PATCH);
	VERIFY(strcmp(got, SX_LIB_VERSION) == 0);
	VERIFY(strcmp(sx_version(), SX_LIB_VERSION) == 0);
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	VERIFY(sx_memdev_create(16u << 20, 512, &bd) == 0);
	VERIFY(sx_mkfs(bd, &mo) == 0);
	VERIFY(sx_mount(bd, NULL, &mp) == 0);
	if (failures)
		return 1;
	VERIFY(sx_create(mp, "a", SX_IFREG | 0644, &fa) == 0);
	VERIFY(sx_create(mp, "b", SX_IFREG | 0644, &fb) == 0);
	VERIFY(sx_pwrite(mp, fa, a, sizeof(a), 0) == (int64_t)sizeof(a));
	VERIFY(sx_pwrite(mp, fb, b, sizeof(b), 0) == (int64_t)sizeof(b));
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fa;
	fsr.length = sizeof(a);
	VERIFY(sx_swap_file_range(mp, fb, &fsr) == 0);
	VERIFY(sx_pread(mp, fa, got, sizeof(got), 0) == (int64_t)sizeof(got));
	ASSERT(memcmp(got, b, sizeof(b)) == 0);
	VERIFY(sx_close(mp, fa) == 0);
	VERIFY(sx_close(mp, fb) == 0);
	VERIFY(sx_unmount(mp) == 0);
	VERIFY(sx_check(bd, NULL, NULL, &problems) == 0 && problems == 0);
	sx_bdev_destroy(bd);
	printf("consumer: %s, version %s\n", failures ? "FAILED" : "ok", sx_version());
	return failures ? 1 : 0;
}
