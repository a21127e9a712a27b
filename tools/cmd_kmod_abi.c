// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext kmod awrite-abi ID FD: the module's refusals of malformed AWRITE
 * and LOGSTATS requests, which `kmod awrite` cannot send: each request is
 * made by hand, its error compared with what include/swapext/kctl.h
 * promises, and the file FD is read before and after to show that no
 * refused request wrote anything.  One line per request; exit status 0
 * only if every one got its error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kmod.h"
#include <swapext/kctl.h>

#define ABI_PEEK	64	/* bytes of the file compared before and after */

struct abi_case {
	const char	*name;
	int		want;		/* 0 or -errno */
	u32		n;		/* ranges */
	u32		flags;
	u32		pad;
	u32		ai_pad;
	u64		len;		/* of the first range */
	bool		bad_iov;	/* ka_iov points nowhere */
	bool		bad_buf;	/* the first range's bytes are nowhere */
	bool		bad_id;
};

static const struct abi_case abi_cases[] = {
	{ "no-ranges", -EINVAL, 0, 0, 0, 0, 4, false, false, false },
	{ "too-many-ranges", -EINVAL, SX_ATOMIC_IOV_MAX + 1, 0, 0, 0, 4, false, false, false },
	{ "unknown-flag", -EINVAL, 1, 1u << 30, 0, 0, 4, false, false, false },
	{ "pad-set", -EINVAL, 1, 0, 1, 0, 4, false, false, false },
	{ "range-pad-set", -EINVAL, 1, 0, 0, 1, 4, false, false, false },
	{ "over-16-mib", -E2BIG, 1, 0, 0, 0, SX_KCTL_AWRITE_MAX + 1ull, false, false, false },
	{ "ranges-nowhere", -EFAULT, 1, 0, 0, 0, 4, true, false, false },
	{ "bytes-nowhere", -EFAULT, 1, 0, 0, 0, 4, false, true, false },
	{ "no-instance", -ENOENT, 1, 0, 0, 0, 4, false, false, true },
	{ "empty-range", 0, 1, 0, 0, 0, 0, false, false, false },
};

/* A user address that is never mapped: below mmap_min_addr. */
#define ABI_NOWHERE	((u64)16)

/* Issue case @c against descriptor @fd of instance @id; its error. */
static int abi_issue(const struct abi_case *c, u32 id, s32 fd)
{
	static struct sx_kctl_aiov iov[SX_ATOMIC_IOV_MAX + 1];
	static const char bytes[] = "refused";
	struct sx_kctl_awrite ka;
	u32 i;

	memset(iov, 0, sizeof(iov));
	for (i = 0; i < SX_ATOMIC_IOV_MAX + 1; i++) {
		iov[i].ai_fd = fd;
		iov[i].ai_buf = (u64)(uintptr_t)bytes;
		iov[i].ai_len = 4;
		iov[i].ai_off = (u64)i * 8;
	}
	iov[0].ai_pad = c->ai_pad;
	iov[0].ai_len = c->len;
	if (c->bad_buf)
		iov[0].ai_buf = ABI_NOWHERE;
	memset(&ka, 0, sizeof(ka));
	ka.ka_id = c->bad_id ? SX_KCTL_MAX_INSTANCES : id;
	ka.ka_flags = c->flags;
	ka.ka_n = c->n;
	ka.ka_pad = c->pad;
	ka.ka_iov = c->bad_iov ? ABI_NOWHERE : (u64)(uintptr_t)iov;
	return kmod_ioctl(SX_KCTL_AWRITE, &ka, NULL);
}

/* LOGSTATS with its pad set, and of no instance. */
static int abi_logstats(u32 id)
{
	struct sx_kctl_logstats kl;
	int bad = 0, ret;

	memset(&kl, 0, sizeof(kl));
	kl.kl_id = id;
	kl.kl_pad = 1;
	ret = kmod_ioctl(SX_KCTL_LOGSTATS, &kl, NULL);
	printf("logstats-pad-set: %s%s\n", tool_strerror(ret), ret == -EINVAL ? "" : " (WRONG)");
	bad += ret != -EINVAL;
	memset(&kl, 0, sizeof(kl));
	kl.kl_id = SX_KCTL_MAX_INSTANCES;
	ret = kmod_ioctl(SX_KCTL_LOGSTATS, &kl, NULL);
	printf("logstats-no-instance: %s%s\n", tool_strerror(ret), ret == -ENOENT ? "" : " (WRONG)");
	return bad + (ret != -ENOENT);
}

int kmod_awrite_abi(int argc, char **argv)
{
	u8 before[ABI_PEEK], after[ABI_PEEK];
	s64 n0, n1;
	u64 id, fd;
	size_t i;
	int bad = 0, ret;

	if (argc != 2 || !kmod_num(argv[0], &id) || !kmod_num(argv[1], &fd) || fd > INT32_MAX)
		return tool_fail("awrite-abi: ID FD expected");
	n0 = kmod_rw_at((u32)id, (s32)fd, SX_KCTL_PREAD, before, ABI_PEEK, 0, "pread");
	if (n0 < 0)
		return 1;
	for (i = 0; i < sizeof(abi_cases) / sizeof(abi_cases[0]); i++) {
		const struct abi_case *c = &abi_cases[i];

		ret = abi_issue(c, (u32)id, (s32)fd);
		printf("%s: %s%s\n", c->name, ret ? tool_strerror(ret) : "done",
		       ret == c->want ? "" : " (WRONG)");
		bad += ret != c->want;
	}
	bad += abi_logstats((u32)id);
	n1 = kmod_rw_at((u32)id, (s32)fd, SX_KCTL_PREAD, after, ABI_PEEK, 0, "pread");
	if (n1 != n0 || memcmp(before, after, (size_t)n0)) {
		printf("the file changed\n");
		bad++;
	}
	return bad ? 1 : 0;
}
