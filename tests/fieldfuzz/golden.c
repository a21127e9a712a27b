// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The golden images of field fuzzing, built in memory by the engine.
 *
 * Both have 8 MiB of 1 KiB blocks (two bitmap blocks), the atomic_swap
 * feature, a fixed uuid, and every structure the format has:
 *
 *	big, pad	100 single-block extents each, written interleaved:
 *			two-level extent B+trees
 *	share		a clone of big: 100 shared blocks, a two-level refcount tree
 *	small		three one-block extents and an unwritten one: an inline fork
 *	c, d		c: an extent of 10 blocks and one of 2; d shares 5 of the 10
 *	a, b		8 blocks each
 *	f00..f07, g	more names: the root directory is a two-level B+tree
 *
 * "clean" is that, unmounted cleanly after a last batch of changes (a
 * copy-on-write of big, an unlink, a new file, a punch of share); its
 * older version, for the lost writes, is the image before that batch.
 *
 * "log" is "clean" mounted with a log record per transaction, given an
 * open unlinked file (checkpointed: on the disk's unlinked list too), a
 * new file, a copy-on-write, a punch, a swap and a clone, and
 * then one chain of deferred work: an unmap of all of c (BUI), which drops
 * references (CUI) and frees what had no other owner (EFI), in front of a
 * swap of a and b (SXI).  The power is cut at the first device write of
 * the chain after which the log holds all four kinds unfinished.  Its
 * older version is "clean".
 *
 * The engine reads the clock for timestamps; the fuzz program links with
 * --wrap=sx_wall_ns so that it reads a counter instead, and the images
 * come out the same on every run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ffz.h"
#include "sxswap.h"
#include "check.h"
#include "log_recover.h"
#include "file.h"
#include "inode.h"
#include "trans.h"
#include "defer.h"
#include "bmap.h"
#include "item_bmap.h"
#include "item_efi.h"
#include "reflink.h"
#include "mount.h"

#define G_NAMES		8u	/* f00..f07 */

/* A fixed clock: the engine's timestamps are the same in every run. */
static u64 ffz_clock = 1700000000ull * 1000000000ull;

u64 __wrap_sx_wall_ns(void)
{
	ffz_clock += 1000;
	return ffz_clock;
}

static void g_ok(int error, const char *what)
{
	if (error) {
		fprintf(stderr, "fieldfuzz: golden image: %s: %s\n", what, sx_strerror(error));
		abort();
	}
}

static int g_open(struct sx_mount *mp, const char *name)
{
	int fd;

	g_ok(sx_open(mp, name, &fd), name);
	return fd;
}

static int g_create(struct sx_mount *mp, const char *name)
{
	int fd;

	g_ok(sx_create(mp, name, 0644, &fd), name);
	return fd;
}

/* Write @n blocks at block @blk of @fd, each word a tag of the file and block. */
static void g_put(struct sx_mount *mp, int fd, u64 blk, u32 n, u32 id)
{
	u64 *buf = malloc((size_t)n * FFZ_BS);
	u32 i;

	if (!buf)
		abort();
	for (i = 0; i < n * FFZ_BS / 8; i++)
		buf[i] = sxs_tag(id, blk + i / (FFZ_BS / 8), 1);
	if (sx_pwrite(mp, fd, buf, (u64)n * FFZ_BS, blk * FFZ_BS) != (s64)n * FFZ_BS)
		g_ok(-EIO, "pwrite");
	free(buf);
}

static struct sx_bdev *g_mkfs(void)
{
	static const u8 uuid[16] = { 0xf1, 0xe1, 0xdf, 0x22, 0x2a, 0x11, 0x47, 0x0e,
				     0x9b, 0x3c, 0x5d, 0x6e, 0x7f, 0x80, 0x91, 0xa2 };
	struct sx_mkfs_opts mo = {
		.mk_blocksize = FFZ_BS,
		.mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP,
		.mk_uuid = uuid,
		.mk_label = "fieldfuzz",
	};
	struct sx_bdev *bd;

	g_ok(sx_memdev_create(FFZ_SIZE, 512, &bd), "memdev");
	g_ok(sx_mkfs(bd, &mo), "mkfs");
	return bd;
}

/* Every file, every structure. */
static void g_files(struct sx_mount *mp)
{
	int big = g_create(mp, FFZ_BIG), pad = g_create(mp, FFZ_PAD);
	int share, small, c, d, a, b, fd;
	char name[8];
	u32 i;

	/* interleaved, so that no two blocks of one file touch */
	for (i = 0; i < FFZ_NBIG; i++) {
		g_put(mp, big, i, 1, 1);
		g_put(mp, pad, i, 1, 2);
	}
	share = g_create(mp, FFZ_SHARE);
	g_ok(sx_clone(mp, share, big), "clone");

	small = g_create(mp, "small");
	g_put(mp, small, 0, 1, 4);
	g_put(mp, small, 2, 1, 4);
	g_put(mp, small, 4, 1, 4);
	g_ok(sx_fallocate(mp, small, 6 * FFZ_BS, 2 * FFZ_BS), "fallocate");

	c = g_create(mp, "c");
	g_put(mp, c, 0, 10, 5);
	g_put(mp, c, 12, 2, 5);
	d = g_create(mp, "d");
	g_ok(sx_clone_range(mp, d, 0, c, 5 * FFZ_BS, 5 * FFZ_BS), "clone_range");

	a = g_create(mp, "a");
	g_put(mp, a, 0, 8, 6);
	b = g_create(mp, "b");
	g_put(mp, b, 0, 8, 7);
	for (i = 0; i < G_NAMES; i++) {
		snprintf(name, sizeof(name), "f%02u", i);
		fd = g_create(mp, name);
		g_ok(sx_close(mp, fd), "close");
	}
	for (fd = big; fd <= b; fd++)
		g_ok(sx_close(mp, fd), "close");
}

/* The last batch of changes of "clean": what its older version lacks. */
static void g_last(struct sx_mount *mp)
{
	int big = g_open(mp, FFZ_BIG), share = g_open(mp, FFZ_SHARE), g;

	g_put(mp, big, 5, 1, 1);
	g_ok(sx_unlink(mp, "f07"), "unlink");
	g = g_create(mp, "g");
	g_put(mp, g, 0, 1, 8);
	g_ok(sx_punch(mp, share, 20 * FFZ_BS, FFZ_BS), "punch");
	g_ok(sx_close(mp, g), "close");
	g_ok(sx_close(mp, share), "close");
	g_ok(sx_close(mp, big), "close");
}

/* The log's variety before the chain: each kind of item done, a cancel. */
static int g_before_chain(struct sx_mount *mp)
{
	struct file_swap_range fsr;
	int tmp, big, pad, a, b, g;

	/*
	 * Open and unlinked when the power goes: on the unlinked list, which
	 * a checkpoint puts on the disk too (else only the log would hold it).
	 */
	g_ok(sx_open_tmpfile(mp, 0644, &tmp), "tmpfile");
	g_put(mp, tmp, 0, 3, 9);
	g_ok(sx_unlink(mp, "f06"), "unlink");
	g_ok(sx_checkpoint(mp), "checkpoint");
	/* a new inode: its block logged whole */
	g = g_create(mp, "h");
	g_ok(sx_close(mp, g), "close");
	big = g_open(mp, FFZ_BIG);
	/* a punch of blocks no other file shares: an EFI and its EFD */
	pad = g_open(mp, FFZ_PAD);
	g_ok(sx_punch(mp, pad, 40 * FFZ_BS, 2 * FFZ_BS), "punch");
	g_ok(sx_close(mp, pad), "close");
	g_put(mp, big, 7, 1, 1);
	a = g_open(mp, "a");
	b = g_open(mp, "b");
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = a;
	fsr.length = 2 * FFZ_BS;
	g_ok(sx_swap_file_range(mp, b, &fsr), "swap");
	g = g_open(mp, "g");
	g_ok(sx_clone_range(mp, g, FFZ_BS, big, 30 * FFZ_BS, FFZ_BS), "clone_range");
	g_ok(sx_close(mp, g), "close");
	g_ok(sx_close(mp, b), "close");
	g_ok(sx_close(mp, a), "close");
	g_ok(sx_close(mp, big), "close");
	g_ok(sx_sync(mp), "sync");
	return tmp;
}

/* The inode of file @name, referenced. */
static struct sx_inode *g_inode(struct sx_mount *mp, const char *name, int *fdp)
{
	struct sx_inode *ip;

	*fdp = g_open(mp, name);
	g_ok(sx_fd_get(mp, *fdp, &ip), "fd_get");
	return ip;
}

/* @n inodes in inode-number order: the order their ilocks are taken. */
static void g_sort(struct sx_inode **v, u32 n)
{
	u32 i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1]->i_ino > v[j]->i_ino; j--) {
			struct sx_inode *t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

/*
 * One chain: unmap all of c (a BUI; each piece drops a reference with a
 * CUI, whose step frees the blocks no other file owns), queued in front
 * of a swap of blocks 2..7 of a and b (an SXI, decoded from a log item as
 * recovery does, then run as the front end runs one), and two blocks of
 * pad unmapped at once with an EFI to free them, as a free that does not
 * fit its transaction is.  The swap and the free wait behind the unmap's
 * work.  Returns the chain's error (the power cut).
 */
static int g_chain(struct sx_mount *mp)
{
	struct sx_inode *c, *a, *b, *pd, *locked[4];
	struct sx_bmap_irec got;
	struct sx_dlog_swapext dl;
	struct sx_swapext_intent si;
	struct sx_trans *tp;
	int fc, fa, fb, fp, error, i;

	c = g_inode(mp, "c", &fc);
	pd = g_inode(mp, FFZ_PAD, &fp);
	a = g_inode(mp, "a", &fa);
	b = g_inode(mp, "b", &fb);
	memset(&dl, 0, sizeof(dl));
	dl.sw_ino1 = cpu_to_le64(a->i_ino);
	dl.sw_ino2 = cpu_to_le64(b->i_ino);
	dl.sw_gen1 = cpu_to_le64(a->i_gen);
	dl.sw_gen2 = cpu_to_le64(b->i_gen);
	dl.sw_startoff1 = cpu_to_le64(2);
	dl.sw_startoff2 = cpu_to_le64(2);
	dl.sw_blockcount = cpu_to_le64(6);
	dl.sw_isize1 = cpu_to_le64((u64)-1);
	dl.sw_isize2 = cpu_to_le64((u64)-1);

	g_ok(sx_trans_alloc(mp, sx_defer_largest_res(mp), 0, &tp), "trans_alloc");
	/*
	 * The chain's steps change all three files: hold what their callers
	 * hold in normal operation.  For a and b that is what swap_file_range
	 * holds through the store's host (swap_host.c): both iolocks, the
	 * files paired, and the ilocks marked as the swap's; every ilock in
	 * inode-number order, after the transaction.
	 */
	sx_ilock_two(a, b, SX_IOLOCK_EXCL);
	a->i_swap_peer = b;
	b->i_swap_peer = a;
	locked[0] = c;
	locked[1] = a;
	locked[2] = b;
	locked[3] = pd;
	g_sort(locked, 4);
	for (i = 0; i < 4; i++)
		sx_ilock(locked[i], SX_ILOCK_EXCL);
	a->i_swap_ilocked = true;
	b->i_swap_ilocked = true;
	error = sx_bmap_unmap_later(tp, c, 0, 14, 0);
	if (!error)
		error = sx_bmap_unmap_one(tp, pd, 44, 2, &got);
	if (!error && got.br_startblock == SX_HOLE)
		error = -EIO;
	if (!error)
		error = sx_efi_free_later(tp, got.br_startblock, got.br_blockcount);
	if (!error)
		error = sx_inode_log(tp, pd);
	if (!error)
		error = sx_swapext_item_decode(&mp->m_host, &dl, &si);
	if (!error) {
		/*
		 * Run it as the front end's swap, under the locks and the
		 * references held here: a recovered item would lock per step,
		 * which only a recovering mount's bmap items follow.
		 */
		si.si_iflags &= ~SX_SI_RECOVERED;
		sx_irele(a);
		sx_irele(b);
		error = sx_defer_add(tp, &sx_sxi_defer_ops, &si);
	}
	g_ok(error, "queue the chain");
	error = sx_trans_commit(tp);
	a->i_swap_ilocked = false;
	b->i_swap_ilocked = false;
	for (i = 4; i-- > 0;)
		sx_iunlock(locked[i], SX_ILOCK_EXCL);
	a->i_swap_peer = NULL;
	b->i_swap_peer = NULL;
	sx_iunlock_two(a, b, SX_IOLOCK_EXCL);
	sx_irele(c);
	sx_irele(a);
	sx_irele(b);
	sx_irele(pd);
	sx_close(mp, fp);
	sx_close(mp, fc);
	sx_close(mp, fa);
	sx_close(mp, fb);
	return error;
}

/* Unfinished intents of each kind in a log: [0] BUI, [1] EFI, [2] CUI, [3] SXI. */
struct g_intents {
	u32	gi_open[4];
	u64	gi_ids[256];
	u8	gi_kind[256];
	u32	gi_n;
};

static int g_scan_op(void *arg, const struct sx_dlog_op *op, const void *payload)
{
	struct g_intents *gi = arg;
	u32 type = le16_to_cpu(op->lo_type), i;
	u64 id;

	if (type < SX_LOG_OP_BUI || type > SX_LOG_OP_SXD)
		return 0;
	id = le64_to_cpu(((const struct sx_dlog_intent *)payload)->li_id);
	if (!((type - SX_LOG_OP_BUI) & 1)) {
		if (gi->gi_n < ARRAY_SIZE(gi->gi_ids)) {
			gi->gi_ids[gi->gi_n] = id;
			gi->gi_kind[gi->gi_n++] = (type - SX_LOG_OP_BUI) / 2;
		}
		return 0;
	}
	for (i = 0; i < gi->gi_n; i++)
		if (gi->gi_ids[i] == id)
			gi->gi_ids[i] = 0;
	return 0;
}

static int g_scan_rec(void *arg, const struct sx_log_scan_rec *r)
{
	const char *why;

	return sx_log_rec_walk_ops(r->sr_buf, r->sr_blocks * FFZ_BS, g_scan_op, arg, &why);
}

static void g_unfinished(struct sx_bdev *bd, struct g_intents *gi)
{
	struct sx_mount *mp = sx_offline_mount_alloc(bd, "golden");
	struct sx_log_scan scan;
	struct sx_sb sb;
	u32 i;

	memset(gi, 0, sizeof(*gi));
	g_ok(sx_sb_read(NULL, bd, &sb, NULL), "sb_read");
	sx_offline_mount_set_sb(mp, &sb);
	g_ok(sx_log_scan(mp, g_scan_rec, gi, &scan), "log scan");
	for (i = 0; i < gi->gi_n; i++)
		if (gi->gi_ids[i])
			gi->gi_open[gi->gi_kind[i]]++;
	sx_offline_mount_free(mp);
}

/*
 * "log": @clean with the work above cut at device write @w (0: not cut).
 * Returns the image; *@writes is the count of device writes done.
 */
static struct sx_bdev *g_log_image(struct sx_bdev *clean, u64 w, u64 *writes)
{
	static const struct sx_mount_opts each = { .mo_flags = SX_MOUNT_LOG_EACH };
	struct sx_bdev *img = sxt_bdev_copy(clean), *cbd;
	struct sx_crashdev_stats st;
	struct sx_crashdev *cd;
	struct sx_mount *mp;
	int tmp;

	g_ok(sx_crashdev_create(img, 1, &cbd, &cd), "crashdev");
	g_ok(sx_mount(cbd, &each, &mp), "mount");
	tmp = g_before_chain(mp);
	sx_crashdev_get_stats(cd, &st);
	*writes = st.cs_writes;
	if (w)
		sx_crashdev_cut_at_write(cd, st.cs_writes + w, SX_CRASH_DROP);
	if (g_chain(mp) && getenv("FFZ_DEBUG"))
		fprintf(stderr, "chain failed\n");
	sx_crashdev_get_stats(cd, &st);
	*writes = st.cs_writes - *writes;
	sx_close(mp, tmp);
	sx_unmount(mp);
	sx_bdev_destroy(cbd);
	return img;
}

void ffz_golden_build(struct ffz_image img[FFZ_NIMG])
{
	struct g_intents gi;
	struct sx_mount *mp;
	struct sx_bdev *bd, *old;
	u64 w, writes, cut_writes;

	bd = g_mkfs();
	mp = sxt_mount(bd);
	g_files(mp);
	g_ok(sx_unmount(mp), "unmount");
	old = sxt_bdev_copy(bd);
	mp = sxt_mount(bd);
	g_last(mp);
	g_ok(sx_unmount(mp), "unmount");
	img[FFZ_IMG_CLEAN].fi_name = "clean";
	img[FFZ_IMG_CLEAN].fi_bd = bd;
	img[FFZ_IMG_CLEAN].fi_old = old;

	/* the first cut of the chain that leaves every kind unfinished */
	sx_bdev_destroy(g_log_image(bd, 0, &writes));
	for (w = 1; w <= writes; w++) {
		struct sx_bdev *cut = g_log_image(bd, w, &cut_writes);

		g_unfinished(cut, &gi);
		if (getenv("FFZ_DEBUG"))
			fprintf(stderr, "w %llu/%llu: %u %u %u %u\n", (unsigned long long)w, (unsigned long long)writes, gi.gi_open[0], gi.gi_open[1], gi.gi_open[2], gi.gi_open[3]);
		if (gi.gi_open[0] && gi.gi_open[1] && gi.gi_open[2] && gi.gi_open[3]) {
			img[FFZ_IMG_LOG].fi_name = "log";
			img[FFZ_IMG_LOG].fi_bd = cut;
			img[FFZ_IMG_LOG].fi_old = sxt_bdev_copy(bd);
			printf("fieldfuzz: golden \"log\": cut at write %llu of the chain's %llu; unfinished: %u BUI, %u EFI, %u CUI, %u SXI\n",
			       (unsigned long long)w, (unsigned long long)writes, gi.gi_open[0],
			       gi.gi_open[1], gi.gi_open[2], gi.gi_open[3]);
			return;
		}
		sx_bdev_destroy(cut);
	}
	fprintf(stderr, "fieldfuzz: no cut of the chain leaves SXI, BUI, EFI and CUI unfinished\n");
	abort();
}
