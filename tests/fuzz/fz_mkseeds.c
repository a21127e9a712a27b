// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The seed generator: writes tests/fuzz/corpus/<target>/ from images and
 * logs the engine itself makes, so that every seed is something a real
 * filesystem holds and fuzzing starts from inputs that reach deep.
 *
 *   fz-mkseeds DIR      (make fuzz-seeds: DIR = tests/fuzz/corpus)
 *
 * The log seeds are the records of workloads run on a copy of the golden
 * image through the crash-emulating device, cut at a quarter, half and
 * three quarters of their device writes with a record per transaction,
 * so that they end with chains (BUI, EFI, CUI, SXI) left unfinished.  The
 * item seeds are the intents and done items of those records.  The tree
 * seeds are the blocks of the golden trees, the image seeds sparse images
 * of four geometries, clean and crashed, each with an operation sequence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "fz.h"
#include "fz_tree.h"
#include "item.h"

static const char *seed_dir;
static u32 seed_count;

static void seed_write(const char *target, const char *name, const void *a, size_t alen,
		       const void *b, size_t blen)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", seed_dir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", seed_dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(a, 1, alen, f) != alen || (blen && fwrite(b, 1, blen, f) != blen)) {
		fprintf(stderr, "fz-mkseeds: cannot write %s\n", path);
		exit(1);
	}
	fclose(f);
	seed_count++;
}

/* ------------------------------------------------------------ sb */

static void seeds_sb(const struct fz_image *g)
{
	static const u8 flags[] = { 0x00, 0x01, 0x03, 0x05, 0x09, 0x11, 0x31, 0x41 };
	char name[32];
	u8 copy[1 + SX_SB_SIZE];
	u32 i;

	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		copy[0] = flags[i];
		memcpy(copy + 1, g->im_data + ((flags[i] & 2) ? g->im_bsize : 0), SX_SB_SIZE);
		snprintf(name, sizeof(name), "golden-%02x", flags[i]);
		seed_write("sb", name, copy, sizeof(copy), NULL, 0);
	}
}

/* ------------------------------------------------------------ log and items */

/* A workload that a crash will cut; fds in @fd, files of the golden image. */
typedef void (*seed_work_fn)(struct sx_mount *mp);

static void work_writes(struct sx_mount *mp)
{
	static u8 buf[4096];
	int fd;

	if (sx_open(mp, "c", &fd))
		return;
	memset(buf, 0x33, sizeof(buf));
	sx_pwrite(mp, fd, buf, sizeof(buf), 40000);
	sx_truncate(mp, fd, 1000);
	sx_fsync(mp, fd);
	sx_close(mp, fd);
}

static void work_cow(struct sx_mount *mp)
{
	static u8 buf[8192];
	int a, e;

	if (sx_open(mp, "a", &a))
		return;
	if (!sx_create(mp, "e", SX_IFREG | 0644, &e)) {
		sx_clone(mp, e, a);
		memset(buf, 0x44, sizeof(buf));
		sx_pwrite(mp, e, buf, sizeof(buf), 0);
		sx_punch(mp, a, 4096, 8192);
		sx_close(mp, e);
	}
	sx_unlink(mp, "b");
	sx_close(mp, a);
}

static void work_swap(struct sx_mount *mp)
{
	struct file_swap_range fsr = { 0 };
	int a, b;

	if (sx_open(mp, "a", &a))
		return;
	if (!sx_open(mp, "b", &b)) {
		fsr.file1_fd = a;
		fsr.flags = FILE_SWAP_RANGE_TO_EOF;
		sx_swap_file_range(mp, b, &fsr);
		sx_close(mp, b);
	}
	sx_close(mp, a);
}

static void work_update(struct sx_mount *mp)
{
	static u8 buf[3000];
	struct sx_update upd;
	int c, t;

	if (sx_open(mp, "c", &c))
		return;
	if (!sx_update_start(mp, c, &upd)) {
		memset(buf, 0x55, sizeof(buf));
		sx_pwrite(mp, upd.su_fd_tmp, buf, sizeof(buf), 700);
		sx_truncate(mp, upd.su_fd_tmp, 50000);
		sx_update_commit(mp, &upd, 0);
	}
	/* a file with no name, open at the crash: the unlinked list */
	if (!sx_open_tmpfile(mp, SX_IFREG | 0600, &t)) {
		sx_pwrite(mp, t, buf, sizeof(buf), 0);
		sx_fsync(mp, t);
	}
	sx_sync(mp);
}

/*
 * Run @work on a copy of @g through the crash device, cut at write @cut
 * (0: never); returns the device writes it made, and the device in *@out.
 */
static u64 seed_crash_run(const struct fz_image *g, seed_work_fn work, u64 cut, bool each,
			  struct sx_bdev **out)
{
	struct sx_mount_opts mo = { .mo_flags = each ? SX_MOUNT_LOG_EACH : 0 };
	struct sx_crashdev_stats st;
	struct sx_crashdev *cd;
	struct sx_bdev *lower, *bd;
	struct sx_mount *mp;

	lower = fz_dev_from(g->im_data, g->im_size);
	if (!lower || sx_crashdev_create(lower, 1, &bd, &cd))
		exit(1);
	if (sx_mount(bd, &mo, &mp))
		exit(1);
	if (cut)
		sx_crashdev_cut_at_write(cd, cut, SX_CRASH_KEEP);
	work(mp);
	if (!cut)
		sx_shutdown(mp);
	sx_unmount(mp);
	sx_crashdev_get_stats(cd, &st);
	sx_bdev_destroy(bd);
	*out = lower;
	return st.cs_writes;
}

/* Pick the intents and done items out of framed records: item seeds. */
static void seeds_items_from(const u8 *fr, size_t len, const char *tag)
{
	static const u16 types[] = {
		SX_LOG_OP_BUI, SX_LOG_OP_BUD, SX_LOG_OP_EFI, SX_LOG_OP_EFD,
		SX_LOG_OP_CUI, SX_LOG_OP_CUD, SX_LOG_OP_SXI, SX_LOG_OP_SXD,
	};
	static u32 per_type[ARRAY_SIZE(types)];
	char name[128];

	while (len >= sizeof(struct fz_rec_hdr)) {
		const struct fz_rec_hdr *h = (const struct fz_rec_hdr *)fr;
		u32 olen = sx_min((u32)le16_to_cpu(h->fr_len), (u32)(len - sizeof(*h)));
		const u8 *p = fr + sizeof(*h), *end = p + olen;

		while (end - p >= (long)sizeof(struct sx_dlog_op)) {
			const struct sx_dlog_op *op = (const struct sx_dlog_op *)p;
			u32 plen = le32_to_cpu(op->lo_len), i;
			u8 head[2];

			if (sx_roundup((u64)plen, SX_LOG_OP_ALIGN) > (u64)(end - p) - sizeof(*op))
				break;
			for (i = 0; i < ARRAY_SIZE(types); i++) {
				if (le16_to_cpu(op->lo_type) != types[i] || per_type[i] >= 6)
					continue;
				head[0] = (u8)i;
				/* recover it alone, with its done item, and in two records */
				head[1] = (u8)(per_type[i] % 3 == 0 ? 1 : per_type[i] % 3 == 1 ? 3 : 7);
				snprintf(name, sizeof(name), "%s-%s-%u", tag,
					 sx_item_name(types[i]), per_type[i]);
				seed_write("items", name, head, 2, op + 1, plen);
				per_type[i]++;
			}
			p += sizeof(*op) + sx_roundup(plen, SX_LOG_OP_ALIGN);
		}
		fr += sizeof(*h) + olen;
		len -= sizeof(*h) + olen;
	}
}

/* Sparse image seeds of a crashed device: its log is what the image needs. */
static void seeds_image_dev(struct sx_bdev *bd, u32 blocklog, const char *name)
{
	size_t len;
	u8 *s = fz_simg_save(fz_dev_data(bd), bd->bd_size, blocklog, 0, fz_short_ops,
			     fz_short_ops_len, &len);

	if (s)
		seed_write("image", name, s, len, NULL, 0);
	free(s);
}

/* The framed records of the first @max bytes of @fr: a log cut short. */
static size_t seed_trim(const u8 *fr, size_t len, size_t max)
{
	size_t at = 0;

	while (len - at >= sizeof(struct fz_rec_hdr)) {
		size_t rl = sizeof(struct fz_rec_hdr) +
			    le16_to_cpu(((const struct fz_rec_hdr *)(fr + at))->fr_len);

		if (at + rl > max)
			break;
		at += rl;
	}
	return at;
}

/*
 * Each workload: its log with the queue (records as the log writes them,
 * small) and with a record per transaction (every intent and done item
 * of its chains: the item seeds), uncut and cut at a quarter, half and
 * three quarters of its writes.
 */
static void seeds_log(const struct fz_image *g)
{
	static const struct {
		const char	*name;
		seed_work_fn	fn;
	} works[] = {
		{ "writes", work_writes },
		{ "cow", work_cow },
		{ "swap", work_swap },
		{ "update", work_update },
	};
	static const u8 modes[] = { 0x02, 0x00, 0x01, 0x06 };
	struct sx_bdev *bd;
	char name[64];
	u32 i, q, each;
	u64 writes;

	for (i = 0; i < ARRAY_SIZE(works); i++) {
		for (each = 0; each < 2; each++) {
			writes = seed_crash_run(g, works[i].fn, 0, each, &bd);
			for (q = 0; q < 4; q++) {
				size_t len;
				u8 *fr;

				if (q) {
					fz_dev_free(bd);
					seed_crash_run(g, works[i].fn, sx_max(writes * q / 4, (u64)1),
						       each, &bd);
				}
				fr = fz_unframe_log(bd, &len);
				if (!fr || !len) {
					free(fr);
					continue;
				}
				snprintf(name, sizeof(name), "%s-%s-%u", works[i].name,
					 each ? "each" : "queued", q);
				seed_write("log", name, &modes[q], 1, fr, seed_trim(fr, len, 16384));
				if (each)
					seeds_items_from(fr, len, name);
				if (!each && q == 2) {
					snprintf(name, sizeof(name), "crash-%s", works[i].name);
					seeds_image_dev(bd, 9, name);
				}
				free(fr);
			}
			fz_dev_free(bd);
		}
	}
}

/* ------------------------------------------------------------ trees */

/* The level of B+tree block @bno of the golden image. */
static u32 seed_tree_level(const struct fz_tree *t, u64 bno)
{
	const struct sx_dbtree_block *b = (const struct sx_dbtree_block *)
		(t->tr_img.im_data + bno * t->tr_img.im_bsize);

	return le16_to_cpu(b->bt_level);
}

/*
 * Every node above the leaves (there are few, and a damaged one misleads
 * every lookup beneath it) and six leaves spread over each tree, with the
 * header fix-ups in turn; one leaf also carries the heavier short
 * workload, so that the operations part of the input has a seed.
 */
static void seeds_tree(struct fz_tree *t, const char *target, void (*owners)(struct fz_tree *))
{
	static const u8 fixes[] = { 0x3f, 0x20, 0x00 };
	u32 bs, w, idx, n, leaves, level;
	char name[64];
	u8 head[2];

	if (fz_tree_init(t, owners)) {
		fprintf(stderr, "fz-mkseeds: %s: no golden tree\n", target);
		exit(1);
	}
	bs = t->tr_img.im_bsize;
	for (w = 0; w < t->tr_nowners; w++) {
		/* the selector byte reaches the first 128 blocks */
		n = sx_min(t->tr_nblocks[w], 128u);
		for (idx = 0, leaves = 0; idx < n; idx++) {
			u64 bno = t->tr_blocks[w][idx];
			u8 *blk;

			level = seed_tree_level(t, bno);
			if (level == 0 && idx % sx_max(n / 6, 1u))
				continue;
			head[0] = (u8)((w << 7) | idx);
			head[1] = fixes[idx % ARRAY_SIZE(fixes)];
			snprintf(name, sizeof(name), "tree%u-blk%u-level%u", w, idx, level);
			if (level || leaves++ != 1) {
				seed_write(target, name, head, 2, t->tr_img.im_data + bno * bs, bs);
				continue;
			}
			blk = malloc(bs + fz_short_ops_len);
			if (!blk)
				exit(1);
			memcpy(blk, t->tr_img.im_data + bno * bs, bs);
			memcpy(blk + bs, fz_short_ops, fz_short_ops_len);
			seed_write(target, name, head, 2, blk, bs + fz_short_ops_len);
			free(blk);
		}
	}
	sx_unmount(t->tr_mp);
	fz_dev_free(t->tr_bd);
	fz_image_free(&t->tr_img);
}

static void bmbt_owners(struct fz_tree *t)
{
	t->tr_magic = SX_BMBT_MAGIC;
	t->tr_owner[0] = t->tr_img.im_ino_a;
	t->tr_owner[1] = t->tr_img.im_ino_b;
	t->tr_nowners = 2;
}

static void refc_owners(struct fz_tree *t)
{
	t->tr_magic = SX_REFCBT_MAGIC;
	t->tr_owner[0] = 0;
	t->tr_nowners = 1;
}

/* ------------------------------------------------------------ images */

/* More operations: swaps, an update, a crash, a check. */
static const u8 seed_ops_swap[] = {
	FZ_OP_OPEN, 0, 0, FZ_OP_OPEN, 1, 1, FZ_OP_OPEN, 2, 2,
	FZ_OP_SWAP, 1, 0, 0, 0, 0, 0x08,
	FZ_OP_SWAP, 2, 1, 1, 2, 3, 0x01,
	FZ_OP_UPDATE, 0, 2, FZ_OP_PWRITE, 3, 3, 0, 0x00, 0x03, 0x66,
	FZ_OP_UPDATE, 1, 0,
	FZ_OP_TMPFILE, 3, FZ_OP_PWRITE, 3, 0, 0, 0x00, 0x08, 0x77, FZ_OP_FSYNC, 3,
	FZ_OP_SHUTDOWN,
	FZ_OP_OPEN, 0, 3, FZ_OP_FALLOC, 0, 0, 0, 0x00, 0x10,
	FZ_OP_RENAME, 3, 5, FZ_OP_CHECK,
};

static void seeds_image(void)
{
	static const struct {
		const char	*name;
		struct fz_golden_opts o;
	} geo[] = {
		{ "b512", { .go_bsize = 512, .go_size = 1u << 20, .go_extents = 30 } },
		{ "b1k", { .go_bsize = 1024, .go_size = 1u << 20, .go_extents = 80 } },
		{ "b4k", { .go_bsize = 4096, .go_size = 4u << 20, .go_extents = 300 } },
		{ "smalllog", { .go_bsize = 512, .go_size = 512u << 10, .go_logblocks = 400,
				.go_small_log = true, .go_extents = 20 } },
	};
	struct fz_image g;
	char name[64];
	size_t len;
	u32 i, k;
	u8 *s;

	for (i = 0; i < ARRAY_SIZE(geo); i++) {
		int error = fz_golden(&geo[i].o, &g);

		if (error) {
			fprintf(stderr, "fz-mkseeds: golden %s failed: %d\n", geo[i].name, error);
			exit(1);
		}
		/* a clean log holds nothing a mount reads: leave it out */
		memset(g.im_data + g.im_sb.sb_logstart * g.im_bsize, 0,
		       (size_t)g.im_sb.sb_logblocks * g.im_bsize);
		for (k = 0; k < 2; k++) {
			s = fz_simg_save(g.im_data, g.im_size, sx_ilog2(g.im_bsize), 0,
					 k ? seed_ops_swap : fz_short_ops,
					 k ? sizeof(seed_ops_swap) : fz_short_ops_len, &len);
			if (!s)
				exit(1);
			snprintf(name, sizeof(name), "%s-%s", geo[i].name, k ? "swap" : "short");
			seed_write("image", name, s, len, NULL, 0);
			free(s);
		}
		fz_image_free(&g);
	}
}

int main(int argc, char **argv)
{
	static struct fz_tree bmbt, refc;
	struct fz_image g;

	if (argc != 2) {
		fprintf(stderr, "usage: fz-mkseeds DIR\n");
		return 2;
	}
	seed_dir = argv[1];
	mkdir(seed_dir, 0755);
	if (fz_setup(NULL) || fz_golden(&fz_golden_std, &g))
		return 1;
	seeds_sb(&g);
	seeds_log(&g);
	fz_image_free(&g);
	bmbt.tr_name = "bmbt";
	refc.tr_name = "refcount";
	seeds_tree(&bmbt, "bmbt", bmbt_owners);
	seeds_tree(&refc, "refcount", refc_owners);
	seeds_image();
	printf("fz-mkseeds: %u seeds in %s\n", seed_count, seed_dir);
	return 0;
}
