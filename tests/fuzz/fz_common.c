// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the fuzz targets share (see fz.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "fz.h"
#include "sb.h"
#include "log.h"

const u8 fz_uuid[SX_UUID_SIZE] = {
	0x66, 0x75, 0x7a, 0x7a, 0x73, 0x77, 0x61, 0x70,
	0x45, 0x78, 0x74, 0x2d, 0x47, 0x6f, 0x6c, 0x64,
};

const struct fz_golden_opts fz_golden_std = {
	.go_bsize = 512,
	.go_size = 2u << 20,
	.go_extents = 40,
};

/* Engine messages cost more than a run; FZ_VERBOSE=1 shows them. */
static void fz_log_quiet(void *arg, enum sx_log_level level, const char *msg)
{
}

static void fz_log_loud(void *arg, enum sx_log_level level, const char *msg)
{
	fprintf(stderr, "%s\n", msg);
}

int fz_setup(int (*init)(void))
{
	const char *v = getenv("FZ_VERBOSE");
	int error;

	sx_set_log_callback(v && *v == '1' ? fz_log_loud : fz_log_quiet, NULL);
	error = sx_init();
	if (error) {
		fprintf(stderr, "fuzz: sx_init: %d\n", error);
		return error;
	}
	error = init ? init() : 0;
	if (error)
		fprintf(stderr, "fuzz: target setup failed: %d\n", error);
	return error;
}

void fz_bug(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz: engine invariant broken: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* ------------------------------------------------------------ devices */

/*
 * A memory device of our own rather than sx_memdev_create(): the targets
 * lay images into its bytes directly and the seed generator reads them
 * back, without a copy either way.
 */
struct fz_dev {
	struct sx_bdev	fd_bdev;
	u8		*fd_data;
};

static int fz_dev_range(struct sx_bdev *bd, u64 off, size_t len)
{
	if (off % bd->bd_sectsize || len % bd->bd_sectsize)
		return -EINVAL;
	if (off > bd->bd_size || len > bd->bd_size - off)
		return -EIO;
	return 0;
}

static int fz_dev_read(struct sx_bdev *bd, u64 off, void *buf, size_t len)
{
	int error = fz_dev_range(bd, off, len);

	if (!error)
		memcpy(buf, fz_dev_data(bd) + off, len);
	return error;
}

static int fz_dev_write(struct sx_bdev *bd, u64 off, const void *buf, size_t len,
			unsigned int flags)
{
	int error = fz_dev_range(bd, off, len);

	if (!error)
		memcpy(fz_dev_data(bd) + off, buf, len);
	return error;
}

static int fz_dev_flush(struct sx_bdev *bd)
{
	return 0;
}

static int fz_dev_discard(struct sx_bdev *bd, u64 off, u64 len)
{
	int error = fz_dev_range(bd, off, len);

	if (!error)
		memset(fz_dev_data(bd) + off, 0, len);
	return error;
}

/*
 * One device's bytes kept for the next device of the same size: under ASan
 * a buffer of megabytes is mmap()ed and unmapped at every run, and the page
 * faults of a fresh 2 MiB image cost more system time than the run itself.
 * The bytes are the harness's, never the engine's, so reusing them hides
 * no use-after-free of the engine's.
 */
static u8 *fz_spare;
static u64 fz_spare_size;

static void fz_dev_destroy(struct sx_bdev *bd)
{
	struct fz_dev *d = bd->bd_ctx;

	free(fz_spare);
	fz_spare = d->fd_data;
	fz_spare_size = bd->bd_size;
	free(d);
}

static const struct sx_bdev_ops fz_dev_ops = {
	.read		= fz_dev_read,
	.write		= fz_dev_write,
	.flush		= fz_dev_flush,
	.discard	= fz_dev_discard,
	.destroy	= fz_dev_destroy,
};

/* A device of @size bytes whose contents the caller sets (@zero: to zero). */
static struct sx_bdev *fz_dev_alloc(u64 size, bool zero)
{
	struct fz_dev *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (fz_spare && fz_spare_size == size) {
		d->fd_data = fz_spare;
		fz_spare = NULL;
		if (zero)
			memset(d->fd_data, 0, size);
	} else {
		d->fd_data = zero ? calloc(1, size ? size : 1) : malloc(size ? size : 1);
	}
	if (!d->fd_data) {
		free(d);
		return NULL;
	}
	d->fd_bdev.bd_ops = &fz_dev_ops;
	d->fd_bdev.bd_ctx = d;
	d->fd_bdev.bd_size = size;
	d->fd_bdev.bd_sectsize = 512;
	return &d->fd_bdev;
}

struct sx_bdev *fz_dev_new(u64 size)
{
	return fz_dev_alloc(size, true);
}

struct sx_bdev *fz_dev_from(const u8 *data, u64 size)
{
	struct sx_bdev *bd = fz_dev_alloc(size, false);

	if (bd)
		memcpy(fz_dev_data(bd), data, size);
	return bd;
}

u8 *fz_dev_data(struct sx_bdev *bd)
{
	return ((struct fz_dev *)bd->bd_ctx)->fd_data;
}

void fz_dev_free(struct sx_bdev *bd)
{
	if (bd)
		bd->bd_ops->destroy(bd);
}

/* ------------------------------------------------------------ golden images */

static int fz_create(struct sx_mount *mp, const char *name, int *fd)
{
	return sx_create(mp, name, SX_IFREG | 0644, fd);
}

static int fz_write_zero(struct sx_mount *mp, int fd, u64 off, u64 len)
{
	static const u8 zero[SX_MAX_BLOCKSIZE];
	int64_t n = sx_pwrite(mp, fd, zero, len, off);

	if (n < 0)
		return (int)n;
	return n == (int64_t)len ? 0 : -EIO;
}

static u64 fz_ino(struct sx_mount *mp, int fd)
{
	struct sx_stat st;

	if (sx_fstat(mp, fd, &st))
		return 0;
	return st.st_ino;
}

/*
 * File a: one-block extents at every other block, so none merge and the
 * fork becomes a B+tree.  File b: a clone of a whose every other extent is
 * rewritten, so shared and unshared runs alternate and the refcount tree
 * gets a record per shared run.  File c: a few extents in the inode, an
 * unwritten one and a size past them.  File d: written and unlinked.
 * File data is zero, so a sparse image holds metadata only.
 */
static int fz_populate(struct sx_mount *mp, const struct fz_golden_opts *o,
		       struct fz_image *img)
{
	u32 bs = o->go_bsize, i;
	int a = -1, b = -1, c = -1, d = -1, error;

	error = fz_create(mp, "a", &a);
	for (i = 0; !error && i < o->go_extents; i++)
		error = fz_write_zero(mp, a, 2ull * i * bs, bs);
	if (!error)
		error = fz_create(mp, "b", &b);
	/* a log below the smallest has no room for a clone's reservation */
	if (!error && !o->go_small_log)
		error = sx_clone(mp, b, a);
	for (i = 0; !error && i < o->go_extents; i += 2)
		error = fz_write_zero(mp, b, 2ull * i * bs, bs);
	if (!error)
		error = fz_create(mp, "c", &c);
	if (!error)
		error = fz_write_zero(mp, c, 0, 3ull * bs);
	if (!error)
		error = fz_write_zero(mp, c, 5ull * bs, bs);
	if (!error)
		error = sx_fallocate(mp, c, 8ull * bs, 4ull * bs);
	if (!error)
		error = sx_truncate(mp, c, 20ull * bs + 7);
	if (!error)
		error = fz_create(mp, "d", &d);
	if (!error)
		error = fz_write_zero(mp, d, 0, 2ull * bs);
	if (!error)
		error = sx_unlink(mp, "d");
	if (!error) {
		img->im_ino_a = fz_ino(mp, a);
		img->im_ino_b = fz_ino(mp, b);
		img->im_ino_c = fz_ino(mp, c);
	}
	if (a >= 0)
		sx_close(mp, a);
	if (b >= 0)
		sx_close(mp, b);
	if (c >= 0)
		sx_close(mp, c);
	if (d >= 0)
		sx_close(mp, d);
	return error;
}

int fz_golden(const struct fz_golden_opts *o, struct fz_image *img)
{
	struct sx_mkfs_opts mo = {
		.mk_blocksize = o->go_bsize,
		.mk_logblocks = o->go_logblocks,
		.mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP,
		.mk_uuid = fz_uuid,
		.mk_label = "fuzz",
		.mk_flags = o->go_small_log ? SX_MKFS_SMALL_LOG : 0,
	};
	struct sx_mount *mp;
	struct sx_bdev *bd;
	int error;

	memset(img, 0, sizeof(*img));
	bd = fz_dev_new(o->go_size);
	if (!bd)
		return -ENOMEM;
	error = sx_mkfs(bd, &mo);
	if (error)
		goto out;
	error = sx_mount(bd, NULL, &mp);
	if (error)
		goto out;
	error = fz_populate(mp, o, img);
	if (error) {
		sx_unmount(mp);
		goto out;
	}
	error = sx_unmount(mp);
	if (error)
		goto out;
	error = sx_sb_read(NULL, bd, &img->im_sb, NULL);
	if (error)
		goto out;
	img->im_size = o->go_size;
	img->im_bsize = o->go_bsize;
	img->im_data = malloc(o->go_size);
	if (!img->im_data) {
		error = -ENOMEM;
		goto out;
	}
	memcpy(img->im_data, fz_dev_data(bd), o->go_size);
out:
	fz_dev_free(bd);
	return error;
}

void fz_image_free(struct fz_image *img)
{
	free(img->im_data);
	img->im_data = NULL;
}

/* True if bit @bno of the image's bitmap says the block is in use. */
static bool fz_in_use(const u8 *data, const struct sx_sb *sb, u64 bno)
{
	u64 bits = SX_BITMAP_BITS(sb->sb_blocksize);
	const u8 *blk = data + (sb->sb_bmapstart + bno / bits) * sb->sb_blocksize;
	u64 bit = bno % bits;

	return blk[SX_BITMAP_HDR_SIZE + bit / 8] & (1u << (bit % 8));
}

u32 fz_tree_blocks(const struct fz_image *img, u32 magic, u64 owner, u64 *blocks, u32 max)
{
	const struct sx_sb *sb = &img->im_sb;
	u32 bs = img->im_bsize, n = 0;
	u64 bno;

	for (bno = sb->sb_datastart; bno < sb->sb_dblocks && n < max; bno++) {
		const u8 *blk = img->im_data + bno * bs;
		const struct sx_dblk_hdr *h = (const struct sx_dblk_hdr *)blk;

		if (le32_to_cpu(h->bh_magic) != magic || le64_to_cpu(h->bh_owner) != owner ||
		    le64_to_cpu(h->bh_blkno) != bno || !fz_in_use(img->im_data, sb, bno))
			continue;
		if (le32_to_cpu(h->bh_crc) !=
		    sx_cksum_skip(blk, bs, offsetof(struct sx_dblk_hdr, bh_crc)))
			continue;
		blocks[n++] = bno;
	}
	return n;
}

/* ------------------------------------------------------------ fix-ups */

static bool fz_is_meta_magic(u32 magic)
{
	switch (magic) {
	case SX_BITMAP_MAGIC:
	case SX_FSINFO_MAGIC:
	case SX_INODE_MAGIC:
	case SX_BMBT_MAGIC:
	case SX_DIRBT_MAGIC:
	case SX_REFCBT_MAGIC:
		return true;
	}
	return false;
}

void fz_seal_block(void *blk, u32 bsize)
{
	struct sx_dblk_hdr *h = blk;

	h->bh_crc = cpu_to_le32(sx_cksum_skip(blk, bsize, offsetof(struct sx_dblk_hdr, bh_crc)));
}

static void fz_seal_sb(u8 *p)
{
	struct sx_dsb *dsb = (struct sx_dsb *)p;

	dsb->sb_crc = cpu_to_le32(sx_cksum_skip(p, SX_SB_SIZE, offsetof(struct sx_dsb, sb_crc)));
}

/*
 * The superblock a mount would take: the valid copy (copy 1 lives at the
 * block size copy 0 or its own field names) with the higher sequence.
 * Writes alternate between the copies, so after an even number of them the
 * newer log tail is in copy 1; framing records at copy 0's tail would
 * write them where recovery never looks.  With no valid copy, copy 0 as
 * it is, so that the fix-ups still have a geometry to walk.
 */
static void fz_best_sb(const u8 *img, u64 size, struct sx_sb *sb)
{
	struct sx_sb c0, c1;
	bool ok0, ok1 = false;
	u64 off;

	ok0 = !sx_sb_decode(NULL, img, &c0);
	for (off = SX_MIN_BLOCKSIZE; !ok1 && off <= SX_MAX_BLOCKSIZE; off <<= 1) {
		if (off + SX_SB_SIZE > size || (ok0 && off != c0.sb_blocksize))
			continue;
		ok1 = !sx_sb_decode(NULL, img + off, &c1) && c1.sb_blocksize == off;
	}
	if (ok1 && (!ok0 || c1.sb_seq > c0.sb_seq))
		*sb = c1;
	else if (ok0)
		*sb = c0;
	else
		sx_sb_from_disk(img, sb);
}

/*
 * The geometry the image's superblock claims, if it is one the fix-ups can
 * walk: blocks, log and bitmap inside the image.
 */
static bool fz_geometry(const u8 *img, u64 size, struct sx_sb *sb)
{
	if (size < SX_SB_SIZE)
		return false;
	fz_best_sb(img, size, sb);
	if (!sx_is_pow2(sb->sb_blocksize) || sb->sb_blocksize < SX_MIN_BLOCKSIZE ||
	    sb->sb_blocksize > SX_MAX_BLOCKSIZE)
		return false;
	if (sb->sb_dblocks > size / sb->sb_blocksize || sb->sb_dblocks < 4)
		return false;
	if (sb->sb_logstart < 2 || sb->sb_logblocks < 2 || sb->sb_logstart >= sb->sb_dblocks ||
	    sb->sb_logblocks > sb->sb_dblocks - sb->sb_logstart)
		return false;
	return true;
}

/* Re-seal the log from the tail: each record that still looks like one. */
static void fz_fix_log(u8 *img, const struct sx_sb *sb, bool chain)
{
	u32 bs = sb->sb_blocksize, lb = sb->sb_logblocks;
	u32 max = sx_log_rec_max_blocks(lb, bs);
	u32 block = SX_LSN_BLOCK(sb->sb_log_tail), prev = sb->sb_log_tail_prev_crc;
	u64 walked = 0;

	if (block >= lb)
		return;
	while (walked < lb) {
		struct sx_dlog_rec *rec = (struct sx_dlog_rec *)(img + (sb->sb_logstart + block) *
								 (u64)bs);
		u32 blocks = le32_to_cpu(rec->lr_blocks), crc;

		if (le32_to_cpu(rec->lr_magic) != SX_LOG_MAGIC || blocks == 0 || blocks > max ||
		    block + blocks > lb)
			break;
		if (chain)
			rec->lr_prev_crc = cpu_to_le32(prev);
		crc = sx_cksum_skip(rec, (size_t)blocks * bs, offsetof(struct sx_dlog_rec, lr_crc));
		rec->lr_crc = cpu_to_le32(crc);
		prev = crc;
		if (le32_to_cpu(rec->lr_flags) & SX_LR_WRAP) {
			walked += lb - block;
			block = 0;
		} else {
			walked += blocks;
			block += blocks;
			if (block == lb)
				block = 0;
		}
	}
}

/* Re-seal every superblock copy: copy 0 and one at each possible block size. */
static void fz_fix_sb(u8 *img, u64 size)
{
	u64 off;

	if (size >= SX_SB_SIZE && le32_to_cpu(((struct sx_dsb *)img)->sb_magic) == SX_SB_MAGIC)
		fz_seal_sb(img);
	for (off = SX_MIN_BLOCKSIZE; off <= SX_MAX_BLOCKSIZE && off + SX_SB_SIZE <= size;
	     off <<= 1) {
		if (le32_to_cpu(((struct sx_dsb *)(img + off))->sb_magic) == SX_SB_MAGIC)
			fz_seal_sb(img + off);
	}
}

void fz_fix(u8 *img, u64 size, u32 flags)
{
	struct sx_sb sb;
	u64 bno;

	/* first, so that the geometry comes from the copy a mount takes */
	if (flags & FZ_FIX_SB)
		fz_fix_sb(img, size);
	if (!fz_geometry(img, size, &sb))
		return;
	if (flags & FZ_FIX_BLOCKS) {
		for (bno = sb.sb_logstart + sb.sb_logblocks; bno < sb.sb_dblocks; bno++) {
			u8 *blk = img + bno * sb.sb_blocksize;

			if (fz_is_meta_magic(le32_to_cpu(((struct sx_dblk_hdr *)blk)->bh_magic)))
				fz_seal_block(blk, sb.sb_blocksize);
		}
	}
	if (flags & (FZ_FIX_LOG | FZ_FIX_CHAIN))
		fz_fix_log(img, &sb, flags & FZ_FIX_CHAIN);
}

/* ------------------------------------------------------------ sparse images */

struct sx_bdev *fz_simg_load(const u8 *data, size_t size, const u8 **rest, size_t *restlen)
{
	struct fz_simg_hdr hdr, *h = &hdr;
	struct sx_bdev *bd;
	u32 bs, n, i;
	u64 devsize;
	u8 *img;

	if (size < sizeof(*h))
		return NULL;
	memcpy(h, data, sizeof(*h));
	if (h->sh_blocklog < 9 || h->sh_blocklog > 16)
		return NULL;
	bs = 1u << h->sh_blocklog;
	devsize = (u64)le32_to_cpu(h->sh_devblocks) << h->sh_blocklog;
	if (devsize < 4 * bs || devsize > FZ_MAX_DEV)
		return NULL;
	bd = fz_dev_new(devsize);
	if (!bd)
		return NULL;
	img = fz_dev_data(bd);
	data += sizeof(*h);
	size -= sizeof(*h);
	n = le16_to_cpu(h->sh_nblocks);
	for (i = 0; i < n && size >= 4 + (size_t)bs; i++) {
		u64 bno = (u64)data[0] | (u64)data[1] << 8 | (u64)data[2] << 16 |
			  (u64)data[3] << 24;

		if (bno < devsize >> h->sh_blocklog)
			memcpy(img + (bno << h->sh_blocklog), data + 4, bs);
		data += 4 + bs;
		size -= 4 + bs;
	}
	fz_fix(img, devsize, h->sh_fix);
	*rest = data;
	*restlen = size;
	return bd;
}

static bool fz_all_zero(const u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

u8 *fz_simg_save(const u8 *img, u64 size, u32 blocklog, u8 fix, const u8 *ops, size_t oplen,
		 size_t *lenp)
{
	u32 bs = 1u << blocklog, n = 0;
	u64 nblk = size >> blocklog, bno;
	struct fz_simg_hdr *h;
	u8 *out, *p;

	for (bno = 0; bno < nblk; bno++)
		n += !fz_all_zero(img + (bno << blocklog), bs);
	if (n > 0xffff)
		return NULL;
	out = malloc(sizeof(*h) + (size_t)n * (4 + bs) + oplen);
	if (!out)
		return NULL;
	h = (struct fz_simg_hdr *)out;
	h->sh_blocklog = (u8)blocklog;
	h->sh_fix = fix;
	h->sh_nblocks = cpu_to_le16((u16)n);
	h->sh_devblocks = cpu_to_le32((u32)nblk);
	p = out + sizeof(*h);
	for (bno = 0; bno < nblk; bno++) {
		if (fz_all_zero(img + (bno << blocklog), bs))
			continue;
		p[0] = (u8)bno;
		p[1] = (u8)(bno >> 8);
		p[2] = (u8)(bno >> 16);
		p[3] = (u8)(bno >> 24);
		memcpy(p + 4, img + (bno << blocklog), bs);
		p += 4 + bs;
	}
	if (oplen)
		memcpy(p, ops, oplen);
	*lenp = (size_t)(p - out) + oplen;
	return out;
}

/* ------------------------------------------------------------ log records */

/* Ops that fit wholly in @len bytes, and the transaction id of the first. */
static u32 fz_count_ops(const u8 *p, u32 len, u64 *first_tid)
{
	u32 n = 0, off = 0;

	*first_tid = 0;
	while (len - off >= sizeof(struct sx_dlog_op)) {
		struct sx_dlog_op op;
		u64 sz;

		memcpy(&op, p + off, sizeof(op));
		sz = sizeof(op) + sx_roundup((u64)le32_to_cpu(op.lo_len), SX_LOG_OP_ALIGN);
		if (sz > len - off)
			break;
		if (n == 0)
			*first_tid = le64_to_cpu(op.lo_tid);
		n++;
		off += (u32)sz;
	}
	return n;
}

/* Write one record at @block of the log; returns its true CRC. */
static u32 fz_put_record(u8 *img, const struct sx_sb *sb, u32 cycle, u32 block, u32 blocks,
			 u32 flags, u32 prev, u32 epoch, const u8 *ops, u32 olen, u8 fz)
{
	u32 bs = sb->sb_blocksize, crc, nops;
	struct sx_dlog_rec *rec = (struct sx_dlog_rec *)(img + (sb->sb_logstart + block) *
							 (u64)bs);
	u64 tid;

	memset(rec, 0, (size_t)blocks * bs);
	nops = fz_count_ops(ops, olen, &tid);
	rec->lr_magic = cpu_to_le32(SX_LOG_MAGIC);
	rec->lr_lsn = cpu_to_le64(SX_LSN(cycle, block));
	rec->lr_tail_lsn = cpu_to_le64(sb->sb_log_tail);
	rec->lr_cycle = cpu_to_le32(cycle);
	rec->lr_epoch = cpu_to_le32((fz & FZ_REC_OLDEPOCH) && epoch ? epoch - 1 : epoch);
	rec->lr_blocks = cpu_to_le32(blocks);
	rec->lr_len = cpu_to_le32(olen);
	rec->lr_nops = cpu_to_le32(nops + !!(fz & FZ_REC_NOPS));
	rec->lr_flags = cpu_to_le32(flags);
	rec->lr_prev_crc = cpu_to_le32((fz & FZ_REC_BADCHAIN) ? ~prev : prev);
	rec->lr_version = cpu_to_le32(SX_VERSION);
	rec->lr_first_tid = cpu_to_le64(tid);
	memcpy(rec->lr_uuid, sb->sb_uuid, SX_UUID_SIZE);
	/* every record is a force of its own */
	rec->lr_force_lsn = rec->lr_lsn;
	if (olen)
		memcpy(rec + 1, ops, olen);
	crc = sx_cksum_skip(rec, (size_t)blocks * bs, offsetof(struct sx_dlog_rec, lr_crc));
	rec->lr_crc = cpu_to_le32((fz & FZ_REC_BADCRC) ? crc ^ 1 : crc);
	return crc;
}

/*
 * What a mount writes before its first record, in both superblock copies:
 * the records' epoch, and a free count no longer known (the log is not
 * empty).
 */
static void fz_sb_dirty_log(u8 *img, const struct sx_sb *sb, u32 epoch)
{
	u64 off[2] = { 0, sb->sb_blocksize };
	int i;

	for (i = 0; i < 2; i++) {
		struct sx_dsb *dsb = (struct sx_dsb *)(img + off[i]);

		if (le32_to_cpu(dsb->sb_magic) != SX_SB_MAGIC)
			continue;
		dsb->sb_clean_free = 0;
		dsb->sb_log_epoch = cpu_to_le32(epoch);
		fz_seal_sb(img + off[i]);
	}
}

u32 fz_frame_log(u8 *img, u64 size, const u8 *data, size_t len)
{
	struct sx_sb sb;
	u32 bs, lb, max, cycle, block, prev, epoch, n = 0;
	u64 walked = 0;

	if (!fz_geometry(img, size, &sb))
		return 0;
	bs = sb.sb_blocksize;
	lb = sb.sb_logblocks;
	max = sx_log_rec_max_blocks(lb, bs);
	cycle = SX_LSN_CYCLE(sb.sb_log_tail);
	block = SX_LSN_BLOCK(sb.sb_log_tail);
	prev = sb.sb_log_tail_prev_crc;
	epoch = sb.sb_log_epoch + 1;
	if (block >= lb || cycle == 0)
		return 0;
	while (len >= sizeof(struct fz_rec_hdr)) {
		struct fz_rec_hdr h;
		const u8 *ops = data + sizeof(h);
		u32 olen, blocks, flags = 0;

		/* input bytes have no alignment: copy what is read as fields */
		memcpy(&h, data, sizeof(h));
		olen = sx_min((u32)le16_to_cpu(h.fr_len), (u32)(len - sizeof(h)));
		data += sizeof(h) + olen;
		len -= sizeof(h) + olen;
		if (h.fr_flags & FZ_REC_WRAP) {
			blocks = 1;
			flags = SX_LR_WRAP;
			olen = 0;
		} else {
			blocks = sx_howmany((u32)sizeof(struct sx_dlog_rec) + olen, bs) +
				 ((h.fr_flags >> 5) & 3);
			if (blocks > max) {
				blocks = max;
				olen = sx_min(olen, max * bs - (u32)sizeof(struct sx_dlog_rec));
			}
			if (block + blocks > lb) {
				/* what the writer does: a wrap record, then block 0 */
				if (walked + lb - block + blocks >= lb)
					break;
				prev = fz_put_record(img, &sb, cycle, block, 1, SX_LR_WRAP, prev,
						     epoch, NULL, 0, 0);
				walked += lb - block;
				block = 0;
				cycle++;
				n++;
			}
		}
		if (walked + blocks >= lb)
			break;
		prev = fz_put_record(img, &sb, cycle, block, blocks, flags, prev, epoch, ops, olen,
				     h.fr_flags);
		n++;
		if (flags & SX_LR_WRAP) {
			walked += lb - block;
			block = 0;
			cycle++;
		} else {
			walked += blocks;
			block += blocks;
			if (block == lb) {
				block = 0;
				cycle++;
			}
		}
	}
	/* whatever an earlier pass left at the head must not continue the chain */
	memset(img + (sb.sb_logstart + block) * (u64)bs, 0, bs);
	if (n)
		fz_sb_dirty_log(img, &sb, epoch);
	return n;
}

u8 *fz_unframe_log(struct sx_bdev *bd, size_t *lenp)
{
	const u8 *img = fz_dev_data(bd);
	struct sx_sb sb;
	u32 bs, lb, cycle, block, prev, epoch = 0;
	size_t len = 0, cap = 1 << 16;
	u64 walked = 0;
	u8 *out;

	if (!fz_geometry(img, bd->bd_size, &sb))
		return NULL;
	bs = sb.sb_blocksize;
	lb = sb.sb_logblocks;
	cycle = SX_LSN_CYCLE(sb.sb_log_tail);
	block = SX_LSN_BLOCK(sb.sb_log_tail);
	prev = sb.sb_log_tail_prev_crc;
	out = malloc(cap);
	if (!out)
		return NULL;
	while (walked < lb) {
		const struct sx_dlog_rec *rec = (const struct sx_dlog_rec *)
			(img + (sb.sb_logstart + block) * (u64)bs);
		u32 blocks = le32_to_cpu(rec->lr_blocks), olen = le32_to_cpu(rec->lr_len), crc;
		struct fz_rec_hdr h = { 0 };
		const char *why;

		if (sx_log_rec_check_header(rec, sb.sb_uuid, SX_LSN(cycle, block), lb, bs, &why) ||
		    le32_to_cpu(rec->lr_prev_crc) != prev || le32_to_cpu(rec->lr_epoch) < epoch)
			break;
		crc = sx_cksum_skip(rec, (size_t)blocks * bs, offsetof(struct sx_dlog_rec, lr_crc));
		if (crc != le32_to_cpu(rec->lr_crc) || olen > 0xffff)
			break;
		if (le32_to_cpu(rec->lr_flags) & SX_LR_WRAP) {
			h.fr_flags = FZ_REC_WRAP;
			olen = 0;
		} else {
			h.fr_len = cpu_to_le16((u16)olen);
		}
		while (len + sizeof(h) + olen > cap) {
			u8 *n = realloc(out, cap * 2);

			if (!n) {
				free(out);
				return NULL;
			}
			out = n;
			cap *= 2;
		}
		memcpy(out + len, &h, sizeof(h));
		memcpy(out + len + sizeof(h), rec + 1, olen);
		len += sizeof(h) + olen;
		prev = crc;
		epoch = le32_to_cpu(rec->lr_epoch);
		if (le32_to_cpu(rec->lr_flags) & SX_LR_WRAP) {
			walked += lb - block;
			block = 0;
			cycle++;
		} else {
			walked += blocks;
			block += blocks;
			if (block == lb) {
				block = 0;
				cycle++;
			}
		}
	}
	*lenp = len;
	return out;
}

/* ------------------------------------------------------------ checking */

static void fz_report_none(void *arg, const char *fmt, ...)
{
}

static void fz_report_loud(void *arg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

static sx_report_fn fz_reporter(void)
{
	const char *v = getenv("FZ_VERBOSE");

	return v && *v == '1' ? fz_report_loud : fz_report_none;
}

u64 fz_check(struct sx_bdev *bd)
{
	u64 problems = 0;

	if (sx_check(bd, fz_reporter(), NULL, &problems))
		return ~0ull;
	return problems;
}

void fz_logprint(struct sx_bdev *bd)
{
	sx_logprint(bd, fz_report_none, NULL);
}

void fz_read_tools(struct sx_bdev *bd)
{
	fz_logprint(bd);
	fz_check(bd);
}

/* ------------------------------------------------------------ operations */

#define FZ_NSLOT	4
#define FZ_NNAME	6
#define FZ_MAX_IO	(64u << 10)

struct fz_ops {
	struct sx_bdev	*o_bd;
	struct sx_mount	*o_mp;
	int		o_fd[FZ_NSLOT];
	struct sx_update o_upd;
	const u8	*o_p;
	size_t		o_len;
	u8		*o_buf;
};

static u8 fz_u8(struct fz_ops *o)
{
	if (!o->o_len)
		return 0;
	o->o_len--;
	return *o->o_p++;
}

static u16 fz_u16(struct fz_ops *o)
{
	u16 lo = fz_u8(o);

	return lo | (u16)fz_u8(o) << 8;
}

/* The golden images' files first, so that operations find them. */
static const char *fz_name(struct fz_ops *o)
{
	static const char *const names[FZ_NNAME] = { "a", "b", "c", "d", "e", "f" };

	return names[fz_u8(o) % FZ_NNAME];
}

/* A slot's descriptor, or -1 (the engine then says -EBADF). */
static int fz_slot(struct fz_ops *o)
{
	return o->o_fd[fz_u8(o) % FZ_NSLOT];
}

static void fz_forget_fds(struct fz_ops *o)
{
	int i;

	for (i = 0; i < FZ_NSLOT; i++)
		o->o_fd[i] = -1;
	memset(&o->o_upd, 0, sizeof(o->o_upd));
}

static void fz_unmount(struct fz_ops *o)
{
	if (o->o_mp)
		sx_unmount(o->o_mp);
	o->o_mp = NULL;
	fz_forget_fds(o);
}

static void fz_mount(struct fz_ops *o)
{
	if (!o->o_mp && sx_mount(o->o_bd, NULL, &o->o_mp))
		o->o_mp = NULL;
}

static void fz_set_slot(struct fz_ops *o, u8 slot, int fd)
{
	slot %= FZ_NSLOT;
	if (o->o_fd[slot] >= 0)
		sx_close(o->o_mp, o->o_fd[slot]);
	o->o_fd[slot] = fd;
}

static int fz_readdir_cb(void *arg, const char *name, uint64_t ino)
{
	return 0;
}

/* Run one operation; false when nothing more can run. */
static bool fz_op(struct fz_ops *o)
{
	struct sx_mount *mp = o->o_mp;
	u8 code = fz_u8(o) % FZ_OP_NR, slot;
	const char *name, *name2;
	struct file_swap_range fsr;
	struct sx_extent ext[8];
	struct sx_stat st;
	u64 off, len;
	u32 n, bs;
	int fd, fd2, error;

	if (!mp)
		return false;
	bs = mp->m_bsize;
	switch (code) {
	case FZ_OP_OPEN:
		slot = fz_u8(o);
		name = fz_name(o);
		error = sx_open(mp, name, &fd);
		if (error == -ENOENT)
			error = sx_create(mp, name, SX_IFREG | 0644, &fd);
		if (!error)
			fz_set_slot(o, slot, fd);
		break;
	case FZ_OP_CLOSE:
		slot = fz_u8(o) % FZ_NSLOT;
		if (o->o_fd[slot] >= 0 && !sx_close(mp, o->o_fd[slot]))
			o->o_fd[slot] = -1;
		break;
	case FZ_OP_PWRITE:
		fd = fz_slot(o);
		off = (u64)fz_u16(o) * FZ_OP_UNIT;
		len = fz_u16(o) % FZ_MAX_IO + 1;
		memset(o->o_buf, fz_u8(o), len);
		sx_pwrite(mp, fd, o->o_buf, len, off);
		break;
	case FZ_OP_PREAD:
		fd = fz_slot(o);
		off = (u64)fz_u16(o) * FZ_OP_UNIT;
		len = fz_u16(o) % FZ_MAX_IO + 1;
		sx_pread(mp, fd, o->o_buf, len, off);
		break;
	case FZ_OP_TRUNCATE:
		fd = fz_slot(o);
		sx_truncate(mp, fd, (u64)fz_u16(o) * FZ_OP_UNIT + fz_u8(o));
		break;
	case FZ_OP_FALLOC:
	case FZ_OP_PUNCH:
		fd = fz_slot(o);
		off = (u64)fz_u16(o) * FZ_OP_UNIT;
		len = (u64)fz_u16(o) * FZ_OP_UNIT / 16 + 1;
		if (code == FZ_OP_FALLOC)
			sx_fallocate(mp, fd, off, len);
		else
			sx_punch(mp, fd, off, len);
		break;
	case FZ_OP_FSYNC:
		sx_fsync(mp, fz_slot(o));
		break;
	case FZ_OP_CLONE:
		fd = fz_slot(o);
		sx_clone(mp, fd, fz_slot(o));
		break;
	case FZ_OP_CLONERANGE:
		fd = fz_slot(o);
		off = (u64)fz_u8(o) * bs;
		fd2 = fz_slot(o);
		len = (u64)fz_u8(o) * bs;	/* the source offset */
		sx_clone_range(mp, fd, off, fd2, len, (u64)fz_u8(o) * bs);
		break;
	case FZ_OP_SWAP:
		memset(&fsr, 0, sizeof(fsr));
		fd2 = fz_slot(o);
		fsr.file1_fd = fz_slot(o);
		fsr.file1_offset = (s64)fz_u8(o) * bs;
		fsr.file2_offset = (s64)fz_u8(o) * bs;
		fsr.length = (s64)fz_u8(o) * bs;
		fsr.flags = fz_u8(o) & FILE_SWAP_RANGE_ALL_FLAGS;
		if (fsr.flags & FILE_SWAP_RANGE_FILE2_FRESH) {
			if (!sx_fstat(mp, fd2, &st)) {
				fsr.file2_ino = (s64)st.st_ino;
				fsr.file2_mtime = st.st_mtime_ns / 1000000000;
				fsr.file2_mtime_nsec = (s32)(st.st_mtime_ns % 1000000000);
				fsr.file2_ctime = st.st_ctime_ns / 1000000000;
				fsr.file2_ctime_nsec = (s32)(st.st_ctime_ns % 1000000000);
			}
		}
		sx_swap_file_range(mp, fd2, &fsr);
		break;
	case FZ_OP_UNLINK:
		name = fz_name(o);
		sx_unlink(mp, name);
		break;
	case FZ_OP_RENAME:
		name = fz_name(o);
		name2 = fz_name(o);
		sx_rename(mp, name, name2);
		break;
	case FZ_OP_TMPFILE:
		slot = fz_u8(o);
		if (!sx_open_tmpfile(mp, SX_IFREG | 0600, &fd))
			fz_set_slot(o, slot, fd);
		break;
	case FZ_OP_LINK:
		fd = fz_slot(o);
		name = fz_name(o);
		sx_link(mp, fd, name);
		break;
	case FZ_OP_SYNC:
		if (fz_u8(o) & 1)
			sx_checkpoint(mp);
		else
			sx_sync(mp);
		break;
	case FZ_OP_UPDATE:
		switch (fz_u8(o) % 3) {
		case 0:
			fd = fz_slot(o);
			if (!sx_update_active(&o->o_upd) && !sx_update_start(mp, fd, &o->o_upd)) {
				/* the clone's descriptor: slot 3, for writes to reach it */
				if (o->o_fd[FZ_NSLOT - 1] >= 0 && o->o_fd[FZ_NSLOT - 1] != fd)
					sx_close(mp, o->o_fd[FZ_NSLOT - 1]);
				o->o_fd[FZ_NSLOT - 1] = o->o_upd.su_fd_tmp;
			}
			break;
		case 1:
			if (sx_update_active(&o->o_upd) &&
			    !sx_update_commit(mp, &o->o_upd, fz_u8(o) & SX_UPDATE_ALL_FLAGS))
				o->o_fd[FZ_NSLOT - 1] = -1;
			break;
		default:
			if (sx_update_active(&o->o_upd) && sx_update_cancel(mp, &o->o_upd) != -EINVAL)
				o->o_fd[FZ_NSLOT - 1] = -1;
			break;
		}
		break;
	case FZ_OP_REMOUNT:
		fz_unmount(o);
		fz_mount(o);
		break;
	case FZ_OP_SHUTDOWN:
		sx_shutdown(mp);
		fz_unmount(o);
		fz_mount(o);
		break;
	case FZ_OP_FIEMAP:
		fd = fz_slot(o);
		sx_fiemap(mp, fd, (u64)fz_u16(o) * FZ_OP_UNIT, ~0ull >> 12, ext, ARRAY_SIZE(ext),
			  &n);
		break;
	case FZ_OP_READDIR:
		sx_readdir(mp, fz_readdir_cb, NULL);
		break;
	case FZ_OP_SETFLAGS:
		fd = fz_slot(o);
		sx_setflags(mp, fd, fz_u8(o) & SX_DIFLAG_ALL);
		break;
	case FZ_OP_CHECK:
		fz_unmount(o);
		fz_check(o->o_bd);
		fz_mount(o);
		break;
	}
	return o->o_mp != NULL;
}

void fz_ops_run(struct sx_bdev *bd, struct sx_mount **mpp, const u8 *ops, size_t len)
{
	struct fz_ops o;
	u32 i;

	memset(&o, 0, sizeof(o));
	o.o_bd = bd;
	o.o_mp = *mpp;
	o.o_p = ops;
	o.o_len = len;
	fz_forget_fds(&o);
	o.o_buf = malloc(FZ_MAX_IO);
	if (!o.o_buf)
		return;
	fz_mount(&o);
	for (i = 0; i < FZ_MAX_OPS && o.o_len && fz_op(&o); i++)
		;
	if (o.o_mp && sx_update_active(&o.o_upd))
		sx_update_cancel(o.o_mp, &o.o_upd);
	for (i = 0; o.o_mp && i < FZ_NSLOT; i++)
		if (o.o_fd[i] >= 0)
			sx_close(o.o_mp, o.o_fd[i]);
	free(o.o_buf);
	*mpp = o.o_mp;
}

/*
 * What the targets that damage one structure do once a mount took it: a
 * little of everything that reads and changes files a, b and c.
 */
const u8 fz_short_ops[] = {
	FZ_OP_OPEN, 0, 0,			/* a in slot 0 */
	FZ_OP_OPEN, 1, 1,			/* b in slot 1 */
	FZ_OP_OPEN, 2, 4,			/* a new file e in slot 2 */
	FZ_OP_FIEMAP, 0, 0, 0,
	FZ_OP_PREAD, 1, 0, 0, 0x00, 0x40,
	FZ_OP_PWRITE, 2, 0, 0, 0xd0, 0x07, 0x5a,
	FZ_OP_PWRITE, 0, 1, 0, 0x00, 0x04, 0x11,
	FZ_OP_PWRITE, 1, 8, 0, 0x00, 0x02, 0x22,
	FZ_OP_PUNCH, 0, 4, 0, 64, 0,
	FZ_OP_CLONERANGE, 2, 8, 0, 2, 4,
	FZ_OP_SWAP, 1, 2, 0, 0, 4, 0,
	FZ_OP_FSYNC, 1,
	FZ_OP_TRUNCATE, 0, 20, 0, 3,
	FZ_OP_CLONE, 2, 1,
	FZ_OP_UNLINK, 2,
	FZ_OP_SYNC, 1,
};
const size_t fz_short_ops_len = sizeof(fz_short_ops);

struct sx_bdev *fz_replace_block(const struct fz_image *img, u64 bno, const u8 *data,
				 size_t len, u8 fix)
{
	u32 bs = img->im_bsize;
	struct sx_dblk_hdr *h;
	struct sx_bdev *bd;
	u8 *blk;

	bd = fz_dev_from(img->im_data, img->im_size);
	if (!bd)
		return NULL;
	blk = fz_dev_data(bd) + bno * bs;
	h = (struct sx_dblk_hdr *)blk;
	/* what the input does not cover stays as it was */
	memcpy(blk, data, sx_min(len, (size_t)bs));
	if (fix & FZ_BLK_MAGIC)
		h->bh_magic = ((const struct sx_dblk_hdr *)(img->im_data + bno * bs))->bh_magic;
	if (fix & FZ_BLK_WHERE)
		h->bh_blkno = cpu_to_le64(bno);
	if (fix & FZ_BLK_UUID)
		memcpy(h->bh_uuid, fz_uuid, SX_UUID_SIZE);
	if (fix & FZ_BLK_OWNER)
		h->bh_owner = ((const struct sx_dblk_hdr *)(img->im_data + bno * bs))->bh_owner;
	if (fix & FZ_BLK_LSN)
		h->bh_lsn = ((const struct sx_dblk_hdr *)(img->im_data + bno * bs))->bh_lsn;
	if (fix & FZ_BLK_CRC)
		fz_seal_block(blk, bs);
	return bd;
}
