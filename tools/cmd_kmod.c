// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext kmod ...: load and unload the kernel module with libkmod and
 * drive its control device /dev/swapext-ctl (include/swapext/kctl.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <libkmod.h>
#include "kmod.h"
#include <swapext/kctl.h>

/* The tool and the module agree on the encoding (kctl.h spells it out). */
_Static_assert(FISWAPRANGE == _IOWR('X', 129, struct file_swap_range), "FISWAPRANGE");
_Static_assert(sizeof(struct file_swap_range) == 120, "struct file_swap_range");
_Static_assert(SX_KCTL_ATTACH == _IOWR(SX_KCTL_TYPE, 1, struct sx_kctl_attach), "ATTACH");
_Static_assert(XFS_IOC_SWAPEXT == _IOWR('X', 109, struct sx_xfs_swapext), "XFS_IOC_SWAPEXT");

#define KMOD_DEFAULT_PATH	"swapext.ko"

static const char kmod_usage[] =
	"usage: swapext kmod load [MODULE.ko] [PARAM=VALUE...]   (default $SWAPEXT_KO or " KMOD_DEFAULT_PATH ")\n"
	"       swapext kmod unload [NAME]                (default swapext)\n"
	"       swapext kmod version | selftest\n"
	"       swapext kmod attach [-r] [-n] [-e] [-o] [-c] DEVICE (prints the instance id)\n"
	"       swapext kmod detach|shutdown|sync|checkpoint|info ID\n"
	"       swapext kmod alloc [-s] ID MINLEN MAXLEN [HINT]   (prints BNO LEN)\n"
	"       swapext kmod free [-s] ID BNO LEN\n"
	"       swapext kmod isfree ID BNO [LEN]         (free or used; with LEN: used N free M)\n"
	"       swapext kmod work [-s] ID COUNT          (COUNT allocations of 1..4 blocks)\n"
	"       swapext kmod fault NAME NTH ERRNO [forever] | fault-clear\n"
	"       swapext kmod create|open ID NAME | close|fsync ID FD\n"
	"       swapext kmod pwrite ID FD OFF TEXT | pread ID FD OFF LEN\n"
	"       swapext kmod awrite [-n] ID FD OFF TEXT [FD OFF TEXT]...   (one atomic write)\n"
	"       swapext kmod awrite-abi ID FD            (malformed AWRITEs must be refused)\n"
	"       swapext kmod logstats ID\n"
	"       swapext kmod writers [-o] [-c | -r SEED] [-s N | -f N] [-b KIB] DEVICE THREADS COUNT\n"
	"       swapext kmod clone ID DST_FD SRC_FD\n"
	"       swapext kmod swaprange ID FILE2_FD FILE1_FD OFF1 OFF2 LEN [FLAGS]\n"
	"       swapext kmod swapext [-s] ID TARGET_FD TMP_FD LEN   (-s: a stale record)\n";

bool kmod_num(const char *s, u64 *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && !*end;
}

int kmod_ctl_open(void)
{
	int fd = open(SX_KCTL_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		tool_error(-errno, "%s (is the module loaded?)", SX_KCTL_PATH);
	return fd;
}

int kmod_ioctl(unsigned long cmd, void *arg, const char *what)
{
	int fd = kmod_ctl_open(), ret;

	if (fd < 0)
		return -ENODEV;
	ret = ioctl(fd, cmd, arg) < 0 ? -errno : 0;
	close(fd);
	if (ret && what)
		tool_error(ret, "%s", what);
	return ret;
}

/* load [MODULE.ko] [PARAM=VALUE...]: insert the module with libkmod. */
static int kmod_load(int argc, char **argv)
{
	const char *path = getenv("SWAPEXT_KO");
	char opts[1024] = "";
	struct kmod_ctx *ctx;
	struct kmod_module *mod;
	int i = 0, error;

	if (argc > 0 && !strchr(argv[0], '=')) {
		path = argv[0];
		i = 1;
	}
	if (!path)
		path = KMOD_DEFAULT_PATH;
	for (; i < argc; i++) {
		if (strlen(opts) + strlen(argv[i]) + 2 > sizeof(opts))
			return tool_fail("module parameters too long");
		if (opts[0])
			strcat(opts, " ");
		strcat(opts, argv[i]);
	}
	ctx = kmod_new(NULL, NULL);
	if (!ctx)
		return tool_fail("kmod_new failed");
	error = kmod_module_new_from_path(ctx, path, &mod);
	if (error) {
		kmod_unref(ctx);
		return tool_error(error, "%s", path);
	}
	error = kmod_module_insert_module(mod, 0, opts);
	kmod_module_unref(mod);
	kmod_unref(ctx);
	if (error)
		return tool_error(error, "insert %s", path);
	printf("loaded %s%s%s\n", path, opts[0] ? " " : "", opts);
	return 0;
}

/* unload [NAME]: remove the module (default swapext) with libkmod. */
static int kmod_unload(int argc, char **argv)
{
	const char *name = argc > 0 ? argv[0] : "swapext";
	struct kmod_ctx *ctx = kmod_new(NULL, NULL);
	struct kmod_module *mod;
	int error;

	if (!ctx)
		return tool_fail("kmod_new failed");
	error = kmod_module_new_from_name(ctx, name, &mod);
	if (!error) {
		error = kmod_module_remove_module(mod, 0);
		kmod_module_unref(mod);
	}
	kmod_unref(ctx);
	if (error)
		return tool_error(error, "remove %s", name);
	printf("unloaded %s\n", name);
	return 0;
}

/*
 * attach [-r] [-n] [-e] [-o] [-c] DEVICE; -e: a log record per transaction,
 * -o: forces in flight, -c: shutdown loses the writes not flushed (tests)
 */
static int kmod_attach(int argc, char **argv)
{
	struct sx_kctl_attach ka;
	int i;

	memset(&ka, 0, sizeof(ka));
	for (i = 0; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-r"))
			ka.ka_flags |= SX_KCTL_ATTACH_RDONLY;
		else if (!strcmp(argv[i], "-n"))
			ka.ka_flags |= SX_KCTL_ATTACH_NORECOVERY;
		else if (!strcmp(argv[i], "-e"))
			ka.ka_flags |= SX_KCTL_ATTACH_LOG_EACH;
		else if (!strcmp(argv[i], "-o"))
			ka.ka_flags |= SX_KCTL_ATTACH_OVERLAP;
		else if (!strcmp(argv[i], "-c"))
			ka.ka_flags |= SX_KCTL_ATTACH_VOLATILE;
		else
			return tool_fail("attach: unknown option %s", argv[i]);
	}
	if (i != argc - 1 || strlen(argv[i]) >= sizeof(ka.ka_path))
		return tool_fail("attach: one DEVICE expected");
	strcpy(ka.ka_path, argv[i]);
	if (kmod_ioctl(SX_KCTL_ATTACH, &ka, argv[i]))
		return 1;
	printf("%u\n", ka.ka_id);
	fprintf(stderr, "attached %s as %u; recovery: %llu records, %llu ops, %llu buffers replayed, %llu skipped, %llu intents\n",
		ka.ka_path, ka.ka_id, (unsigned long long)ka.ka_rs_records,
		(unsigned long long)ka.ka_rs_ops, (unsigned long long)ka.ka_rs_bufs_replayed,
		(unsigned long long)ka.ka_rs_bufs_skipped, (unsigned long long)ka.ka_rs_intents);
	return 0;
}

/* detach, shutdown, sync, checkpoint ID */
static int kmod_simple(const char *cmd, int argc, char **argv)
{
	struct sx_kctl_id kid;
	unsigned long nr;
	u64 id;

	if (argc != 1 || !kmod_num(argv[0], &id))
		return tool_fail("%s: one ID expected", cmd);
	memset(&kid, 0, sizeof(kid));
	kid.ki_id = (u32)id;
	if (!strcmp(cmd, "detach"))
		nr = SX_KCTL_DETACH;
	else if (!strcmp(cmd, "shutdown"))
		nr = SX_KCTL_SHUTDOWN;
	else if (!strcmp(cmd, "sync"))
		nr = SX_KCTL_SYNC_FS;
	else
		nr = SX_KCTL_CHECKPOINT;
	if (kmod_ioctl(nr, &kid, cmd))
		return 1;
	if (nr == SX_KCTL_DETACH) {
		printf("detached %u: unmount %s\n", kid.ki_id,
		       kid.ki_result ? tool_strerror(kid.ki_result) : "clean");
	}
	return 0;
}

/* info ID */
static int kmod_info(int argc, char **argv)
{
	struct sx_kctl_info kn;
	u64 id;

	if (argc != 1 || !kmod_num(argv[0], &id))
		return tool_fail("info: one ID expected");
	memset(&kn, 0, sizeof(kn));
	kn.ki_id = (u32)id;
	if (kmod_ioctl(SX_KCTL_INFO, &kn, "info"))
		return 1;
	printf("blocksize %u\ndblocks %llu\ndatastart %llu\nfree %llu\nlog_head %llu\nlog_tail %llu\nlabel %s\nshutdown %u\n",
	       kn.ki_blocksize, (unsigned long long)kn.ki_dblocks,
	       (unsigned long long)kn.ki_datastart, (unsigned long long)kn.ki_free_blocks,
	       (unsigned long long)kn.ki_log_head, (unsigned long long)kn.ki_log_tail,
	       kn.ki_label, kn.ki_shutdown);
	return 0;
}

/* alloc/free/isfree/work: the allocator through the control device. */
static int kmod_extent(const char *cmd, int argc, char **argv)
{
	struct sx_kctl_extent ke;
	u64 id, a = 0, b = 0, c = 0, i;
	u32 flags = 0;
	int fd, ret = 0;

	if (argc > 0 && !strcmp(argv[0], "-s")) {
		flags = SX_KCTL_SYNC;
		argc--;
		argv++;
	}
	if (argc < 2 || !kmod_num(argv[0], &id) || !kmod_num(argv[1], &a) ||
	    (argc > 2 && !kmod_num(argv[2], &b)) || (argc > 3 && !kmod_num(argv[3], &c)))
		return tool_fail("%s: bad arguments (see swapext kmod help)", cmd);
	memset(&ke, 0, sizeof(ke));
	ke.ke_id = (u32)id;
	ke.ke_flags = flags;
	if (!strcmp(cmd, "alloc")) {
		if (argc < 3)
			return tool_fail("alloc: ID MINLEN MAXLEN expected");
		ke.ke_minlen = (u32)a;
		ke.ke_maxlen = (u32)b;
		ke.ke_hint = c;
		if (kmod_ioctl(SX_KCTL_ALLOC, &ke, "alloc"))
			return 1;
		printf("%llu %llu\n", (unsigned long long)ke.ke_bno, (unsigned long long)ke.ke_len);
		return 0;
	}
	if (!strcmp(cmd, "free")) {
		if (argc != 3)
			return tool_fail("free: ID BNO LEN expected");
		ke.ke_bno = a;
		ke.ke_len = b;
		return kmod_ioctl(SX_KCTL_FREE, &ke, "free") ? 1 : 0;
	}
	if (!strcmp(cmd, "isfree")) {
		u64 nfree = 0, n = argc > 2 ? b : 1;

		fd = kmod_ctl_open();
		if (fd < 0)
			return 1;
		for (i = 0; i < n; i++) {
			ke.ke_bno = a + i;
			if (ioctl(fd, SX_KCTL_ISFREE, &ke) < 0) {
				ret = -errno;
				break;
			}
			nfree += ke.ke_len;
		}
		close(fd);
		if (ret)
			return tool_error(ret, "isfree");
		if (argc > 2)
			printf("used %llu free %llu\n", (unsigned long long)(n - nfree),
			       (unsigned long long)nfree);
		else
			printf("%s\n", nfree ? "free" : "used");
		return 0;
	}
	/*
	 * work: COUNT allocations of 1..4 blocks, each in a transaction of its
	 * own, and after each the free of the one before (so the device never
	 * fills), until COUNT or the first error
	 */
	fd = kmod_ctl_open();
	if (fd < 0)
		return 1;
	for (i = 0; i < a; i++) {
		struct sx_kctl_extent prev = ke;

		ke.ke_minlen = 1;
		ke.ke_maxlen = 1 + (u32)(i % 4);
		ke.ke_hint = 0;
		if (ioctl(fd, SX_KCTL_ALLOC, &ke) < 0) {
			ret = -errno;
			break;
		}
		if (i && ioctl(fd, SX_KCTL_FREE, &prev) < 0) {
			ret = -errno;
			break;
		}
	}
	close(fd);
	printf("work: %llu transactions done%s%s\n", (unsigned long long)(2 * i),
	       ret ? ", then: " : "", ret ? tool_strerror(ret) : "");
	return ret ? 2 : 0;
}

/* fault NAME NTH ERRNO [forever] | fault-clear */
static int kmod_fault(int argc, char **argv)
{
	struct sx_kctl_fault kf;
	u64 nth, err;

	memset(&kf, 0, sizeof(kf));
	if (argc == 0)
		return kmod_ioctl(SX_KCTL_FAULT, &kf, "fault-clear") ? 1 : 0;
	if (argc < 3 || strlen(argv[0]) >= sizeof(kf.kf_name) || !kmod_num(argv[1], &nth) ||
	    !kmod_num(argv[2], &err))
		return tool_fail("fault: NAME NTH ERRNO [forever] expected");
	strcpy(kf.kf_name, argv[0]);
	kf.kf_nth = nth;
	kf.kf_error = -(s32)err;
	if (argc > 3 && !strcmp(argv[3], "forever"))
		kf.kf_flags = SX_KCTL_FAULT_FOREVER;
	if (kmod_ioctl(SX_KCTL_FAULT, &kf, "fault"))
		return 1;
	printf("%s: %llu calls so far\n", kf.kf_name, (unsigned long long)kf.kf_hits);
	return 0;
}

/* create|open ID NAME, close|fsync ID FD */
static int kmod_file(const char *cmd, int argc, char **argv)
{
	struct sx_kctl_file kf;
	unsigned long nr;
	u64 id, fd = 0;

	if (argc != 2 || !kmod_num(argv[0], &id))
		return tool_fail("%s: ID and NAME or FD expected", cmd);
	memset(&kf, 0, sizeof(kf));
	kf.kf_id = (u32)id;
	if (!strcmp(cmd, "create") || !strcmp(cmd, "open")) {
		if (strlen(argv[1]) >= sizeof(kf.kf_name))
			return tool_fail("%s: name too long", cmd);
		strcpy(kf.kf_name, argv[1]);
		kf.kf_mode = 0644;
		nr = !strcmp(cmd, "create") ? SX_KCTL_CREATE : SX_KCTL_OPEN;
	} else {
		if (!kmod_num(argv[1], &fd))
			return tool_fail("%s: FD expected", cmd);
		kf.kf_fd = (s32)fd;
		nr = !strcmp(cmd, "close") ? SX_KCTL_CLOSE : SX_KCTL_FSYNC;
	}
	if (kmod_ioctl(nr, &kf, cmd))
		return 1;
	if (nr == SX_KCTL_CREATE || nr == SX_KCTL_OPEN)
		printf("%d\n", kf.kf_fd);
	return 0;
}

s64 kmod_rw_at(u32 id, s32 fd, unsigned long cmd, void *buf, u64 len, u64 off, const char *what)
{
	struct sx_kctl_rw kr;
	int ret;

	memset(&kr, 0, sizeof(kr));
	kr.kr_id = id;
	kr.kr_fd = fd;
	kr.kr_buf = (u64)(uintptr_t)buf;
	kr.kr_len = len;
	kr.kr_off = off;
	ret = kmod_ioctl(cmd, &kr, what);
	return ret ? ret : kr.kr_result;
}

/* pwrite ID FD OFF TEXT | pread ID FD OFF LEN */
static int kmod_rw(const char *cmd, int argc, char **argv)
{
	u64 id, fd, off, len = 0;
	s64 n;
	char *buf = NULL;
	bool wr = !strcmp(cmd, "pwrite");
	int ret;

	if (argc != 4 || !kmod_num(argv[0], &id) || !kmod_num(argv[1], &fd) ||
	    !kmod_num(argv[2], &off) || (!wr && !kmod_num(argv[3], &len)))
		return tool_fail("%s: bad arguments", cmd);
	if (wr) {
		buf = argv[3];
		len = strlen(buf);
	} else {
		buf = calloc(1, len + 1);
		if (!buf)
			return tool_error(-ENOMEM, "pread");
	}
	n = kmod_rw_at((u32)id, (s32)fd, wr ? SX_KCTL_PWRITE : SX_KCTL_PREAD, buf, len, off, cmd);
	ret = n < 0 ? (int)n : 0;
	if (!ret) {
		if (wr)
			printf("%lld\n", (long long)n);
		else
			printf("%.*s\n", (int)n, buf);
	}
	if (!wr)
		free(buf);
	return ret ? 1 : 0;
}

/*
 * awrite [-n] ID FD OFF TEXT [FD OFF TEXT]...: the ranges as one atomic
 * write (sx_atomic_writev()), durable on return unless -n; prints the bytes
 */
static int kmod_awrite(int argc, char **argv)
{
	struct sx_kctl_aiov iov[SX_ATOMIC_IOV_MAX];
	struct sx_kctl_awrite ka;
	u64 id, fd, off, total = 0;
	int i, n = 0;

	memset(&ka, 0, sizeof(ka));
	if (argc > 0 && !strcmp(argv[0], "-n")) {
		ka.ka_flags |= SX_ATOMIC_NOSYNC;
		argc--;
		argv++;
	}
	if (argc < 4 || (argc - 1) % 3 || (argc - 1) / 3 > SX_ATOMIC_IOV_MAX ||
	    !kmod_num(argv[0], &id))
		return tool_fail("awrite: ID and FD OFF TEXT triples expected (at most %d)",
				 SX_ATOMIC_IOV_MAX);
	memset(iov, 0, sizeof(iov));
	for (i = 1; i < argc; i += 3, n++) {
		if (!kmod_num(argv[i], &fd) || fd > INT32_MAX || !kmod_num(argv[i + 1], &off))
			return tool_fail("awrite: bad FD or OFF in range %d", n + 1);
		iov[n].ai_fd = (s32)fd;
		iov[n].ai_buf = (u64)(uintptr_t)argv[i + 2];
		iov[n].ai_len = strlen(argv[i + 2]);
		iov[n].ai_off = off;
		total += iov[n].ai_len;
	}
	ka.ka_id = (u32)id;
	ka.ka_n = (u32)n;
	ka.ka_iov = (u64)(uintptr_t)iov;
	if (kmod_ioctl(SX_KCTL_AWRITE, &ka, "awrite"))
		return 1;
	printf("%llu\n", (unsigned long long)total);
	return 0;
}

/* logstats ID: what the instance's log did since it was attached */
static int kmod_logstats(int argc, char **argv)
{
	struct sx_kctl_logstats kl;
	u64 id;

	if (argc != 1 || !kmod_num(argv[0], &id))
		return tool_fail("logstats: one ID expected");
	memset(&kl, 0, sizeof(kl));
	kl.kl_id = (u32)id;
	if (kmod_ioctl(SX_KCTL_LOGSTATS, &kl, "logstats"))
		return 1;
	printf("transactions %llu\nforces %llu\nflights %llu\nrecords %llu\nbytes %llu\n"
	       "waits %llu\ncheckpoints %llu\ncut-lost %llu\n",
	       (unsigned long long)kl.kl_trans, (unsigned long long)kl.kl_forces,
	       (unsigned long long)kl.kl_flights, (unsigned long long)kl.kl_records,
	       (unsigned long long)kl.kl_bytes, (unsigned long long)kl.kl_waits,
	       (unsigned long long)kl.kl_checkpoints, (unsigned long long)kl.kl_cut_lost);
	return 0;
}

/* clone ID DST SRC */
static int kmod_clone(int argc, char **argv)
{
	struct sx_kctl_clone kc;
	u64 id, dst, src;

	if (argc != 3 || !kmod_num(argv[0], &id) || !kmod_num(argv[1], &dst) ||
	    !kmod_num(argv[2], &src))
		return tool_fail("clone: ID DST_FD SRC_FD expected");
	memset(&kc, 0, sizeof(kc));
	kc.kc_id = (u32)id;
	kc.kc_dst_fd = (s32)dst;
	kc.kc_src_fd = (s32)src;
	return kmod_ioctl(SX_KCTL_CLONE, &kc, "clone") ? 1 : 0;
}

/* swaprange ID FILE2_FD FILE1_FD OFF1 OFF2 LEN [FLAGS]: FISWAPRANGE on a SELECTed file */
static int kmod_swaprange(int argc, char **argv)
{
	struct file_swap_range fsr;
	struct sx_kctl_select ks;
	u64 id, f2, f1, o1, o2, len, flags = 0;
	int fd, ret = 0;

	if (argc < 6 || !kmod_num(argv[0], &id) || !kmod_num(argv[1], &f2) ||
	    !kmod_num(argv[2], &f1) || !kmod_num(argv[3], &o1) || !kmod_num(argv[4], &o2) ||
	    !kmod_num(argv[5], &len) || (argc > 6 && !kmod_num(argv[6], &flags)))
		return tool_fail("swaprange: bad arguments");
	fd = kmod_ctl_open();
	if (fd < 0)
		return 1;
	ks.ks_id = (u32)id;
	ks.ks_fd = (s32)f2;
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = (s64)f1;
	fsr.file1_offset = (s64)o1;
	fsr.file2_offset = (s64)o2;
	fsr.length = (s64)len;
	fsr.flags = flags;
	if (ioctl(fd, SX_KCTL_SELECT, &ks) < 0 || ioctl(fd, FISWAPRANGE, &fsr) < 0)
		ret = -errno;
	close(fd);
	if (ret)
		return tool_error(ret, "swaprange");
	return 0;
}

/*
 * swapext [-s] ID TARGET_FD TMP_FD LEN: XFS_IOC_SWAPEXT as xfs_fsr issues
 * it, with the target's bulkstat record taken just before (-s: one made
 * stale by a changed mtime, which the module must refuse with EBUSY)
 */
static int kmod_swapext(int argc, char **argv)
{
	struct sx_kctl_bulkstat kb;
	struct sx_kctl_select ks;
	struct sx_xfs_swapext sx;
	bool stale = argc > 0 && !strcmp(argv[0], "-s");
	u64 id, target, tmp, len;
	int fd, ret = 0;

	if (stale) {
		argc--;
		argv++;
	}
	if (argc != 4 || !kmod_num(argv[0], &id) || !kmod_num(argv[1], &target) ||
	    !kmod_num(argv[2], &tmp) || !kmod_num(argv[3], &len) || len > INT64_MAX ||
	    target > INT32_MAX || tmp > INT32_MAX)
		return tool_fail("swapext: ID TARGET_FD TMP_FD LEN expected");
	memset(&kb, 0, sizeof(kb));
	kb.kb_id = (u32)id;
	kb.kb_fd = (s32)target;
	if (kmod_ioctl(SX_KCTL_BULKSTAT, &kb, "swapext: bulkstat"))
		return 1;
	memset(&sx, 0, sizeof(sx));
	sx.sx_version = SX_XFS_SX_VERSION;
	sx.sx_fdtarget = (s64)target;
	sx.sx_fdtmp = (s64)tmp;
	sx.sx_length = (s64)len;
	sx.sx_stat = kb.kb_stat;
	if (stale)
		sx.sx_stat.bs_mtime.tv_nsec ^= 1;
	fd = kmod_ctl_open();
	if (fd < 0)
		return 1;
	ks.ks_id = (u32)id;
	ks.ks_fd = (s32)target;
	if (ioctl(fd, SX_KCTL_SELECT, &ks) < 0 || ioctl(fd, XFS_IOC_SWAPEXT, &sx) < 0)
		ret = -errno;
	close(fd);
	if (ret)
		return tool_error(ret, "swapext");
	return 0;
}

/* swapext kmod SUBCOMMAND ... */
int cmd_kmod(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "-h")) {
		fputs(kmod_usage, argc < 2 ? stderr : stdout);
		return argc < 2;
	}
	cmd = argv[1];
	argc -= 2;
	argv += 2;
	if (!strcmp(cmd, "load"))
		return kmod_load(argc, argv);
	if (!strcmp(cmd, "unload"))
		return kmod_unload(argc, argv);
	if (!strcmp(cmd, "version")) {
		struct sx_kctl_version kv;

		memset(&kv, 0, sizeof(kv));
		if (kmod_ioctl(SX_KCTL_VERSION, &kv, "version"))
			return 1;
		printf("abi %u features 0x%x%s%s%s%s%s%s instances %u\n", kv.kv_abi, kv.kv_features,
		       kv.kv_features & SX_KCTL_FEAT_FILES ? " files" : "",
		       kv.kv_features & SX_KCTL_FEAT_CLONE ? " clone" : "",
		       kv.kv_features & SX_KCTL_FEAT_SWAPRANGE ? " swaprange" : "",
		       kv.kv_features & SX_KCTL_FEAT_SWAPEXT ? " swapext" : "",
		       kv.kv_features & SX_KCTL_FEAT_FAULTS ? " faults" : "",
		       kv.kv_features & SX_KCTL_FEAT_ATOMIC ? " atomic" : "", kv.kv_instances);
		return 0;
	}
	if (!strcmp(cmd, "selftest")) {
		struct sx_kctl_selftest ks;

		memset(&ks, 0, sizeof(ks));
		if (kmod_ioctl(SX_KCTL_SELFTEST, &ks, "selftest"))
			return 1;
		printf("%u passed, %u failed\n", ks.ks_passed, ks.ks_failed);
		return ks.ks_failed ? 1 : 0;
	}
	if (!strcmp(cmd, "attach"))
		return kmod_attach(argc, argv);
	if (!strcmp(cmd, "detach") || !strcmp(cmd, "shutdown") || !strcmp(cmd, "sync") ||
	    !strcmp(cmd, "checkpoint"))
		return kmod_simple(cmd, argc, argv);
	if (!strcmp(cmd, "info"))
		return kmod_info(argc, argv);
	if (!strcmp(cmd, "alloc") || !strcmp(cmd, "free") || !strcmp(cmd, "isfree") ||
	    !strcmp(cmd, "work"))
		return kmod_extent(cmd, argc, argv);
	if (!strcmp(cmd, "fault"))
		return kmod_fault(argc, argv);
	if (!strcmp(cmd, "fault-clear"))
		return kmod_fault(0, argv);
	if (!strcmp(cmd, "create") || !strcmp(cmd, "open") || !strcmp(cmd, "close") ||
	    !strcmp(cmd, "fsync"))
		return kmod_file(cmd, argc, argv);
	if (!strcmp(cmd, "pwrite") || !strcmp(cmd, "pread"))
		return kmod_rw(cmd, argc, argv);
	if (!strcmp(cmd, "awrite"))
		return kmod_awrite(argc, argv);
	if (!strcmp(cmd, "awrite-abi"))
		return kmod_awrite_abi(argc, argv);
	if (!strcmp(cmd, "logstats"))
		return kmod_logstats(argc, argv);
	if (!strcmp(cmd, "writers"))
		return kmod_writers(argc, argv);
	if (!strcmp(cmd, "clone"))
		return kmod_clone(argc, argv);
	if (!strcmp(cmd, "swaprange"))
		return kmod_swaprange(argc, argv);
	if (!strcmp(cmd, "swapext"))
		return kmod_swapext(argc, argv);
	fprintf(stderr, "swapext kmod: unknown subcommand '%s'\n%s", cmd, kmod_usage);
	return 1;
}
