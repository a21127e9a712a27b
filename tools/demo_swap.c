// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * swapext demo [-S SEED] [IMAGE]: the headline of swapext in one run.
 *
 * Part 1, the atomic file update: a file of known text is updated in part
 * through a clone (sx_update_start, writes into the clone, sx_update_commit
 * with FILE2_FRESH); then a second update loses to a concurrent write into
 * the original, and its commit must fail with EBUSY and change nothing.
 * The free block count must come back to what it was, and the checker must
 * be clean.
 *
 * Part 2, a large atomic swap cut by a power loss: two files of some 20,000
 * single-block extents each (written interleaved, with holes) are swapped
 * whole (TO_EOF, unequal sizes) on a crash-emulating device that cuts the
 * power in the middle of the swap, between two of its log flushes.  The
 * cut write is taken from a dry run
 * of the same swap on a copy of the image, so a seed gives the same run
 * every time.  The next mount's log recovery must finish the swap (or, if
 * the cut fell before the swap's intent reached the disk, leave both files
 * as they were): every block of both files is read back and its tag
 * compared, both sizes too, and the checker must be clean.
 *
 * The image stays at IMAGE, with both parts' files on it, for `swapext
 * check`, `logprint` and `io`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "demo.h"
#include "mount.h"
#include "log.h"
#include "log_recover.h"

#define SW_SIZE		(64ull << 20)
#define SW_BS		1024u

/* Part 1: a 64-block text file, of which blocks 16..23 are rewritten. */
#define UP_NAME		"report"
#define UP_BLOCKS	64u
#define UP_FIRST	16u
#define UP_COUNT	8u
#define UP_OTHER	40u	/* the block the concurrent writer changes */

/* Part 2: block i of file f is a hole when (i + f) % BIG_HOLE == 0. */
#define BIG_HOLE	6u
#define BIG_CHUNK	1024u	/* blocks read at a time when verifying */

static const char *const big_names[2] = { "big-a", "big-b" };
static const u64 big_blocks[2] = { 26400, 25200 };

static double demo_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------- image helpers */

static int sw_mkfs(const char *path)
{
	struct sx_mkfs_opts opts = {
		.mk_blocksize = SW_BS,
		.mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP,
		.mk_label = "swapext-demo",
	};
	struct sx_bdev *bd;
	int error;

	error = sx_filedev_open(path, SX_FILEDEV_CREATE, SW_SIZE, &bd);
	if (error)
		return tool_error(error, "demo: cannot create %s", path);
	error = sx_mkfs(bd, &opts);
	sx_bdev_destroy(bd);
	if (error)
		return tool_error(error, "demo: mkfs %s", path);
	return 0;
}

/* Mount the image file @path; on success the caller owns *@bdp and *@mpp. */
static int sw_mount(const char *path, const char *name, struct sx_bdev **bdp,
		    struct sx_mount **mpp)
{
	struct sx_mount_opts mo = { .mo_name = name };
	int error;

	error = sx_filedev_open(path, 0, 0, bdp);
	if (error)
		return tool_error(error, "demo: cannot open %s", path);
	error = sx_mount(*bdp, &mo, mpp);
	if (error) {
		sx_bdev_destroy(*bdp);
		*bdp = NULL;
		return tool_error(error, "demo: cannot mount %s", path);
	}
	return 0;
}

static int sw_unmount(struct sx_mount *mp, struct sx_bdev *bd, const char *what)
{
	int error = sx_unmount(mp);

	sx_bdev_destroy(bd);
	if (error)
		return tool_error(error, "demo: unmount after %s", what);
	return 0;
}

/* Run the full checker on the unmounted image @path; 0 if it is clean. */
static int sw_check(const char *path, u64 *problems)
{
	struct demo_check dc = { 0 };
	struct sx_bdev *bd;
	int error;

	error = sx_filedev_open(path, SX_FILEDEV_RDONLY, 0, &bd);
	if (error)
		return tool_error(error, "demo: cannot open %s", path);
	error = sx_check(bd, demo_check_line, &dc, problems);
	sx_bdev_destroy(bd);
	if (error)
		return tool_error(error, "demo: the checker could not run");
	if (*problems)
		return tool_fail("demo: the checker found %llu problem%s",
				 (unsigned long long)*problems, *problems == 1 ? "" : "s");
	return 0;
}

static u64 sw_free_blocks(struct sx_mount *mp)
{
	struct sx_info in;

	sx_get_info(mp, &in);
	return in.in_free_blocks;
}

/*
 * A copy of the image file @path in memory, for the dry run: it must start
 * from the same bytes to make the same writes, and need not wait for a disk.
 */
static int sw_load_memdev(const char *path, struct sx_bdev **bdp)
{
	static char buf[1 << 20];
	struct sx_bdev *file, *mem;
	u64 off, len;
	int error;

	error = sx_filedev_open(path, SX_FILEDEV_RDONLY, 0, &file);
	if (error)
		return error;
	error = sx_memdev_create(file->bd_size, file->bd_sectsize, &mem);
	if (error) {
		sx_bdev_destroy(file);
		return error;
	}
	for (off = 0; off < file->bd_size && !error; off += len) {
		len = sx_min((u64)sizeof(buf), file->bd_size - off);
		error = file->bd_ops->read(file, off, buf, (size_t)len);
		if (!error)
			error = mem->bd_ops->write(mem, off, buf, (size_t)len, 0);
	}
	sx_bdev_destroy(file);
	if (error) {
		sx_bdev_destroy(mem);
		return error;
	}
	*bdp = mem;
	return 0;
}

/* ------------------------------------------------- part 1: atomic update */

/* Block @blk of the report at @version: one line of text, repeated. */
static void up_fill(char *buf, u32 blk, u32 version)
{
	char line[64];
	u32 len, off;

	len = (u32)snprintf(line, sizeof(line), "report block %2u, version %u\n", blk, version);
	for (off = 0; off < SW_BS; off += len)
		memcpy(buf + off, line, sx_min(len, SW_BS - off));
}

/*
 * Compare the report with the versions @ver[] of its blocks; prints the
 * first difference.  Return: 0 if equal, 1 if not, or a negative errno.
 */
static int up_verify(struct sx_mount *mp, int fd, const u32 *ver, const char *what)
{
	static char got[UP_BLOCKS * SW_BS], want[SW_BS];
	struct sx_stat st;
	s64 n;
	u32 b;
	int error;

	error = sx_fstat(mp, fd, &st);
	if (error)
		return error;
	if (st.st_size != UP_BLOCKS * SW_BS) {
		tool_fail("demo: %s: the report is %llu bytes, not %u", what,
			  (unsigned long long)st.st_size, UP_BLOCKS * SW_BS);
		return 1;
	}
	n = sx_pread(mp, fd, got, sizeof(got), 0);
	if (n < 0)
		return (int)n;
	if (n != (s64)sizeof(got)) {
		tool_fail("demo: %s: short read of the report (%lld bytes)", what, (long long)n);
		return 1;
	}
	for (b = 0; b < UP_BLOCKS; b++) {
		up_fill(want, b, ver[b]);
		if (memcmp(got + b * SW_BS, want, SW_BS)) {
			tool_fail("demo: %s: block %u of the report is not version %u; it starts \"%.28s\"",
				  what, b, ver[b], got + b * SW_BS);
			return 1;
		}
	}
	return 0;
}

/* Write blocks [@first, +@count) of @fd at @version; model in @ver (or NULL). */
static int up_write(struct sx_mount *mp, int fd, u32 first, u32 count, u32 version, u32 *ver)
{
	static char buf[UP_BLOCKS * SW_BS];
	s64 n;
	u32 b;

	for (b = 0; b < count; b++)
		up_fill(buf + b * SW_BS, first + b, version);
	n = sx_pwrite(mp, fd, buf, (u64)count * SW_BS, (u64)first * SW_BS);
	if (n < 0)
		return (int)n;
	if (n != (s64)count * SW_BS)
		return -EIO;
	for (b = 0; ver && b < count; b++)
		ver[first + b] = version;
	return 0;
}

/* Print the first line of block @b as the file holds it now. */
static void up_show(struct sx_mount *mp, int fd, u32 b)
{
	char line[40] = "";
	s64 n = sx_pread(mp, fd, line, 29, (u64)b * SW_BS);

	if (n > 0)
		line[strcspn(line, "\n")] = '\0';
	printf("     block %2u: \"%s\"\n", b, n > 0 ? line : "(unreadable)");
}

static int demo_update(const char *path)
{
	struct sx_update upd = { 0 };
	struct sx_bdev *bd;
	struct sx_mount *mp;
	struct sx_stat st;
	u32 ver[UP_BLOCKS], after_first[UP_BLOCKS];
	u64 free0, free1, free2, free3, problems = 0;
	int fd = -1, error, bad;

	if (sw_mount(path, "demo", &bd, &mp))
		return 1;
	printf("1.1 create '%s': %u blocks of text, every line \"report block N, version 1\"\n",
	       UP_NAME, UP_BLOCKS);
	error = sx_create(mp, UP_NAME, 0644, &fd);
	if (!error)
		error = up_write(mp, fd, 0, UP_BLOCKS, 1, ver);
	if (!error)
		error = sx_fsync(mp, fd);
	if (error) {
		tool_error(error, "demo: writing %s", UP_NAME);
		goto fail;
	}
	free0 = sw_free_blocks(mp);
	printf("    %llu blocks free\n", (unsigned long long)free0);

	printf("1.2 sx_update_start: a file with no name shares all of the report's blocks (tmpfile + clone)\n");
	error = sx_update_start(mp, fd, &upd);
	if (error) {
		tool_error(error, "demo: sx_update_start");
		goto fail;
	}
	error = sx_fstat(mp, upd.su_fd_tmp, &st);
	if (error) {
		tool_error(error, "demo: stat of the clone");
		goto fail;
	}
	free1 = sw_free_blocks(mp);
	printf("    clone: inode %llu, %llu bytes, %llu of its blocks shared with the report; %llu blocks free (%llu taken, for metadata: no data is copied)\n",
	       (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
	       (unsigned long long)st.st_blocks, (unsigned long long)free1,
	       (unsigned long long)(free0 - free1));
	if (free0 - free1 >= UP_BLOCKS) {
		tool_fail("demo: the clone took %llu blocks; it should share the report's %u",
			  (unsigned long long)(free0 - free1), UP_BLOCKS);
		goto fail;
	}
	printf("1.3 write version 2 into blocks %u..%u of the clone; the report does not see it\n",
	       UP_FIRST, UP_FIRST + UP_COUNT - 1);
	memcpy(after_first, ver, sizeof(ver));
	error = up_write(mp, upd.su_fd_tmp, UP_FIRST, UP_COUNT, 2, after_first);
	if (error) {
		tool_error(error, "demo: writing into the clone");
		goto fail;
	}
	bad = up_verify(mp, fd, ver, "before the commit");
	if (bad)
		goto fail_bad;

	printf("1.4 sx_update_commit: swap the clone's contents into the report (FILE2_FRESH: only if the report is unchanged)\n");
	error = sx_update_commit(mp, &upd, 0);
	if (error) {
		tool_error(error, "demo: sx_update_commit");
		goto fail;
	}
	error = sx_fsync(mp, fd);
	if (error) {
		tool_error(error, "demo: fsync after the commit");
		goto fail;
	}
	memcpy(ver, after_first, sizeof(ver));
	bad = up_verify(mp, fd, ver, "after the commit");
	if (bad)
		goto fail_bad;
	up_show(mp, fd, UP_FIRST - 1);
	up_show(mp, fd, UP_FIRST);
	up_show(mp, fd, UP_FIRST + UP_COUNT - 1);
	up_show(mp, fd, UP_FIRST + UP_COUNT);
	free2 = sw_free_blocks(mp);
	printf("    verified: all %u blocks read back, %u..%u are version 2, the rest version 1; %llu blocks free (before the update: %llu)\n",
	       UP_BLOCKS, UP_FIRST, UP_FIRST + UP_COUNT - 1, (unsigned long long)free2,
	       (unsigned long long)free0);
	if (free2 != free0) {
		tool_fail("demo: the update changed the free count by %lld blocks",
			  (long long)(free2 - free0));
		goto fail;
	}

	printf("1.5 a second update: version 3 into block 0 of a new clone, but meanwhile someone writes version 9 into block %u of the report\n",
	       UP_OTHER);
	error = sx_update_start(mp, fd, &upd);
	if (!error)
		error = up_write(mp, upd.su_fd_tmp, 0, 1, 3, NULL);
	if (!error)
		error = up_write(mp, fd, UP_OTHER, 1, 9, ver);
	if (error) {
		tool_error(error, "demo: the second update");
		goto fail;
	}
	error = sx_update_commit(mp, &upd, 0);
	if (error != -EBUSY) {
		tool_error(error, "demo: the second commit should fail with EBUSY, but returned");
		goto fail;
	}
	printf("    sx_update_commit: %s (the report changed since the update started)\n",
	       tool_strerror(error));
	error = sx_update_cancel(mp, &upd);
	if (error) {
		tool_error(error, "demo: sx_update_cancel");
		goto fail;
	}
	bad = up_verify(mp, fd, ver, "after the refused commit");
	if (bad)
		goto fail_bad;
	free3 = sw_free_blocks(mp);
	printf("    verified: the report is untouched by the refused commit (block 0 version 1, block %u version 9); after the cancel %llu blocks free (before: %llu)\n",
	       UP_OTHER, (unsigned long long)free3, (unsigned long long)free0);
	if (free3 != free0) {
		tool_fail("demo: the refused update changed the free count by %lld blocks",
			  (long long)(free3 - free0));
		goto fail;
	}
	error = sx_close(mp, fd);
	fd = -1;
	if (error) {
		tool_error(error, "demo: close %s", UP_NAME);
		goto fail;
	}
	if (sw_unmount(mp, bd, "the update"))
		return 1;
	printf("1.6 check the image (every block owned once, counts exact, nothing leaked):\n");
	if (sw_check(path, &problems))
		return 1;
	printf("    part 1 verified: the update committed, the stale one was refused, no block leaked, the checker is clean\n");
	return 0;

fail_bad:
	if (bad < 0)
		tool_error(bad, "demo: reading the report");
fail:
	if (sx_update_active(&upd))
		sx_update_cancel(mp, &upd);
	if (fd >= 0)
		sx_close(mp, fd);
	sx_unmount(mp);
	sx_bdev_destroy(bd);
	return 1;
}

/* ------------------------------------ part 2: a large swap cut by a power loss */

/* What block @b of file @f held before the swap: its tag, 0 for a hole. */
static u64 big_tag(u32 f, u64 b)
{
	if (b >= big_blocks[f] || (b + f) % BIG_HOLE == 0)
		return 0;
	return ((u64)(f + 1) << 48) | (b << 8) | 0x5a;
}

static u64 big_size(u32 f)
{
	return big_blocks[f] * SW_BS;
}

/* Every 8-byte word of a block holds its tag. */
static void big_fill(u64 *blk, u64 tag)
{
	u32 i;

	for (i = 0; i < SW_BS / 8; i++)
		blk[i] = tag;
}

/* True if every word of @blk is @tag. */
static bool big_holds(const u64 *blk, u64 tag)
{
	u32 i;

	for (i = 0; i < SW_BS / 8; i++)
		if (blk[i] != tag)
			return false;
	return true;
}

/* The number of mappings of @fd (holes between them: each is an extent). */
static int big_extents(struct sx_mount *mp, int fd, u64 nblk, u32 *n)
{
	struct sx_extent *ext = calloc(nblk, sizeof(*ext));
	int error;

	if (!ext)
		return -ENOMEM;
	error = sx_fiemap(mp, fd, 0, nblk * SW_BS, ext, (u32)nblk, n);
	free(ext);
	return error;
}

/* Make big-a and big-b: single-block extents written a, b, a, b, ... with holes. */
static int big_populate(const char *path, u32 *next)
{
	static u64 blk[SW_BS / 8];
	struct sx_bdev *bd;
	struct sx_mount *mp;
	int fd[2] = { -1, -1 }, error = 0;
	double t0 = demo_now();
	u64 b, written = 0;
	u32 f;
	s64 n;

	if (sw_mount(path, "demo", &bd, &mp))
		return 1;
	for (f = 0; f < 2 && !error; f++)
		error = sx_create(mp, big_names[f], 0644, &fd[f]);
	for (b = 0; b < big_blocks[0] && !error; b++) {
		for (f = 0; f < 2 && !error; f++) {
			u64 tag = big_tag(f, b);

			if (!tag)
				continue;
			big_fill(blk, tag);
			n = sx_pwrite(mp, fd[f], blk, SW_BS, b * SW_BS);
			if (n != SW_BS)
				error = n < 0 ? (int)n : -EIO;
			written++;
		}
	}
	for (f = 0; f < 2 && !error; f++)
		error = sx_truncate(mp, fd[f], big_size(f));
	for (f = 0; f < 2 && !error; f++)
		error = big_extents(mp, fd[f], big_blocks[f], &next[f]);
	for (f = 0; f < 2; f++)
		if (fd[f] >= 0)
			sx_close(mp, fd[f]);
	if (error) {
		tool_error(error, "demo: writing %s and %s", big_names[0], big_names[1]);
		sx_unmount(mp);
		sx_bdev_destroy(bd);
		return 1;
	}
	if (sw_unmount(mp, bd, "writing the files"))
		return 1;
	printf("    wrote %llu tagged blocks in %.1f s: %s has %u extents in %llu blocks, %s %u extents in %llu blocks (every block records its file, its offset and a version)\n",
	       (unsigned long long)written, demo_now() - t0, big_names[0], next[0],
	       (unsigned long long)big_blocks[0], big_names[1], next[1],
	       (unsigned long long)big_blocks[1]);
	return 0;
}

/* Flushes seen before each device write of a dry run. */
struct big_flushes {
	struct sx_crashdev	*bf_cd;
	u64			*bf_at;		/* [n]: flushes before write n */
	u64			bf_cap;
};

static void big_note_write(void *arg, u64 n)
{
	struct big_flushes *bf = arg;
	struct sx_crashdev_stats st;

	if (n >= bf->bf_cap) {
		u64 cap = sx_max(bf->bf_cap * 2, n + 1024);
		u64 *at = realloc(bf->bf_at, sizeof(*at) * cap);

		if (!at)
			return;		/* the cut then falls back to the plain middle */
		memset(at + bf->bf_cap, 0, sizeof(*at) * (cap - bf->bf_cap));
		bf->bf_at = at;
		bf->bf_cap = cap;
	}
	sx_crashdev_get_stats(bf->bf_cd, &st);
	bf->bf_at[n] = st.cs_flushes;
}

/* What one run of the swap through a crash device did. */
struct big_run {
	struct big_flushes	br_flushes;		/* dry run only */
	u64			br_flushes_before;	/* device flushes before the swap */
	u64			br_flushes_after;
	u64			br_writes_before;	/* device writes before the swap */
	u64			br_writes_after;
	int			br_error;		/* of the swap */
	int			br_unmount_error;
	double			br_seconds;
	struct sx_log_stats	br_log;			/* the swap's share */
	struct sx_crashdev_stats br_st;
};

/*
 * Mount @lower through a crash device and swap the two files whole; with
 * @cut, the power goes at that device write.  @lower stays open.
 */
static int big_swap_run(struct sx_bdev *lower, u64 seed, u64 cut, struct big_run *r)
{
	struct sx_mount_opts mo = { .mo_name = "demo" };
	struct sx_bdev *bd;
	struct sx_crashdev *cd;
	struct sx_mount *mp;
	struct sx_log_stats l0;
	struct file_swap_range fsr;
	int fd[2] = { -1, -1 }, error = 0;
	double t0;
	u32 f;

	sx_set_log_callback(cut ? demo_log : demo_log_quiet, NULL);
	error = sx_crashdev_create(lower, seed, &bd, &cd);
	if (error) {
		sx_set_log_callback(demo_log, NULL);
		return tool_error(error, "demo: cannot make a crash device");
	}
	if (cut) {
		sx_crashdev_cut_at_write(cd, cut, SX_CRASH_TEAR);
	} else {
		r->br_flushes.bf_cd = cd;
		sx_crashdev_set_write_hook(cd, big_note_write, &r->br_flushes);
	}
	error = sx_mount(bd, &mo, &mp);
	if (error) {
		sx_bdev_destroy(bd);
		sx_set_log_callback(demo_log, NULL);
		return tool_error(error, "demo: cannot mount the image");
	}
	for (f = 0; f < 2 && !error; f++)
		error = sx_open(mp, big_names[f], &fd[f]);
	if (error) {
		tool_error(error, "demo: cannot open the files");
		goto out;
	}
	sx_crashdev_get_stats(cd, &r->br_st);
	r->br_writes_before = r->br_st.cs_writes;
	r->br_flushes_before = r->br_st.cs_flushes;
	sx_log_get_stats(mp, &l0);
	memset(&fsr, 0, sizeof(fsr));
	fsr.file1_fd = fd[0];
	fsr.flags = FILE_SWAP_RANGE_TO_EOF;
	t0 = demo_now();
	r->br_error = sx_swap_file_range(mp, fd[1], &fsr);
	r->br_seconds = demo_now() - t0;
	sx_log_get_stats(mp, &r->br_log);
	r->br_log.ls_trans -= l0.ls_trans;
	r->br_log.ls_bytes -= l0.ls_bytes;
	r->br_log.ls_records -= l0.ls_records;
	r->br_log.ls_checkpoints -= l0.ls_checkpoints;
	sx_crashdev_get_stats(cd, &r->br_st);
	r->br_writes_after = r->br_st.cs_writes;
	r->br_flushes_after = r->br_st.cs_flushes;
	sx_crashdev_set_write_hook(cd, NULL, NULL);
out:
	for (f = 0; f < 2; f++)
		if (fd[f] >= 0)
			sx_close(mp, fd[f]);
	r->br_unmount_error = sx_unmount(mp);
	sx_bdev_destroy(bd);
	sx_set_log_callback(demo_log, NULL);
	return error ? 1 : 0;
}

enum big_state { BIG_MIXED, BIG_OLD, BIG_NEW };

static const char *const big_state_names[] = { "MIXED", "all old", "all new" };

/*
 * Read every block of file @f and compare it with what it held before the
 * swap (old) and with what the other file held (new).  Sets *@state, and
 * counts the blocks read and the data blocks (not holes) among them.
 */
static int big_verify(struct sx_mount *mp, u32 f, enum big_state *state, u64 *nread,
		      u64 *ndata, u64 *size)
{
	u64 *buf = malloc((size_t)BIG_CHUNK * SW_BS), bad_old = 0, bad_new = 0;
	u64 first_bad = ~0ull, nblk, b, i, got_tag;
	struct sx_stat st;
	int fd = -1, error;
	bool size_old, size_new;
	s64 n;

	*state = BIG_MIXED;
	*nread = *ndata = *size = 0;
	if (!buf)
		return tool_error(-ENOMEM, "demo");
	error = sx_open(mp, big_names[f], &fd);
	if (!error)
		error = sx_fstat(mp, fd, &st);
	if (error)
		goto out;
	*size = st.st_size;
	size_old = st.st_size == big_size(f);
	size_new = st.st_size == big_size(1 - f);
	nblk = sx_howmany(st.st_size, SW_BS);
	for (b = 0; b < nblk; b += BIG_CHUNK) {
		u64 cnt = sx_min((u64)BIG_CHUNK, nblk - b);

		n = sx_pread(mp, fd, buf, cnt * SW_BS, b * SW_BS);
		if (n < 0) {
			error = (int)n;
			goto out;
		}
		if ((u64)n != cnt * SW_BS) {
			error = -EIO;
			goto out;
		}
		for (i = 0; i < cnt; i++) {
			const u64 *blk = buf + i * (SW_BS / 8);
			bool old = big_holds(blk, big_tag(f, b + i));
			bool new = big_holds(blk, big_tag(1 - f, b + i));

			if (!old && !new && first_bad == ~0ull)
				first_bad = b + i;
			bad_old += !old;
			bad_new += !new;
			got_tag = blk[0];
			*ndata += got_tag != 0;
		}
		*nread += cnt;
	}
	if (!bad_new && size_new)
		*state = BIG_NEW;
	else if (!bad_old && size_old)
		*state = BIG_OLD;
	else if (first_bad != ~0ull)
		printf("    %s: %llu bytes; %llu blocks differ from the old contents and %llu from the new; block %llu is neither\n",
		       big_names[f], (unsigned long long)st.st_size, (unsigned long long)bad_old,
		       (unsigned long long)bad_new, (unsigned long long)first_bad);
	else
		printf("    %s: %llu bytes; %llu blocks differ from the old contents and %llu from the new\n",
		       big_names[f], (unsigned long long)st.st_size, (unsigned long long)bad_old,
		       (unsigned long long)bad_new);
out:
	if (fd >= 0)
		sx_close(mp, fd);
	free(buf);
	if (error)
		return tool_error(error, "demo: reading %s", big_names[f]);
	return 0;
}

/*
 * The write to cut at, @pct% of the way through the dry run's candidates.
 * The log queues the swap's transactions and writes them a few records per
 * flush, so most writes are not worth cutting at: a cut before the swap's
 * first flush loses every record of it (nothing to finish), one after its
 * last flush loses nothing.  A candidate has a flush between the swap's
 * first write and itself, and another one still to come.
 */
static u64 big_pick_cut(const struct big_run *dry, u64 pct)
{
	const struct big_flushes *bf = &dry->br_flushes;
	u64 first = dry->br_writes_before + 1, last = dry->br_writes_after, n, k = 0, i;

	if (last < bf->bf_cap && first <= last) {
		for (n = first; n <= last; n++)
			if (bf->bf_at[n] > bf->bf_at[first] && bf->bf_at[n] < dry->br_flushes_after)
				k++;
		if (k) {
			u64 want = sx_min(k - 1, k * pct / 100);

			for (n = first, i = 0; n <= last; n++) {
				if (!(bf->bf_at[n] > bf->bf_at[first] &&
				      bf->bf_at[n] < dry->br_flushes_after))
					continue;
				if (i++ == want)
					return n;
			}
		}
	}
	return dry->br_writes_before + sx_max((last - dry->br_writes_before) * pct / 100, 1ull);
}

static int demo_big_swap(const char *path, u64 seed, u64 *cut_out, struct big_run *dry_out,
			 u32 *next, bool *finished)
{
	struct big_run dry = { { 0 } }, run = { { 0 } };
	struct sx_recovery_stats rs;
	struct sx_bdev *bd, *lower;
	struct sx_mount *mp;
	enum big_state state[2];
	char s1[48], s2[48];
	u64 swap_writes, cut, cut_flushes, pct, rng, nread[2], ndata[2], size[2], problems = 0;
	u32 f;
	int error;

	printf("2.1 write two fragmented files, interleaved block by block, with a hole every %u blocks\n",
	       BIG_HOLE);
	if (big_populate(path, next))
		return 1;

	/* the dry run: the same swap on a copy, to count its device writes */
	error = sw_load_memdev(path, &lower);
	if (error)
		return tool_error(error, "demo: cannot copy %s into memory", path);
	error = big_swap_run(lower, seed, 0, &dry);
	sx_bdev_destroy(lower);
	if (error)
		return 1;
	if (dry.br_error)
		return tool_error(dry.br_error, "demo: the dry run's swap failed");
	if (dry.br_unmount_error)
		return tool_error(dry.br_unmount_error, "demo: the dry run's unmount failed");
	swap_writes = dry.br_writes_after - dry.br_writes_before;
	printf("2.2 dry run on a copy of the image in memory: the atomic swap of all of %s with all of %s (TO_EOF) took %.2f s (%.0f extents/s), %llu transactions, %llu log bytes (%llu records, %llu checkpoints), %llu device writes\n",
	       big_names[0], big_names[1], dry.br_seconds, next[0] / dry.br_seconds,
	       (unsigned long long)dry.br_log.ls_trans, (unsigned long long)dry.br_log.ls_bytes,
	       (unsigned long long)dry.br_log.ls_records,
	       (unsigned long long)dry.br_log.ls_checkpoints, (unsigned long long)swap_writes);
	if (swap_writes < 4)
		return tool_fail("demo: the swap made only %llu device writes; nothing to cut",
				 (unsigned long long)swap_writes);
	rng = seed ^ 0x2545f4914f6cdd1dull;
	pct = 40 + demo_rand(&rng) % 21;
	cut = big_pick_cut(&dry, pct);
	cut_flushes = cut < dry.br_flushes.bf_cap ?
		      dry.br_flushes.bf_at[cut] - dry.br_flushes_before : 0;
	free(dry.br_flushes.bf_at);
	dry.br_flushes.bf_at = NULL;
	*cut_out = cut;
	*dry_out = dry;

	printf("2.3 the same swap on the image, the power cut armed at device write %llu: write %llu of the swap's %llu, after %llu of its %llu flushes; writes not yet flushed are torn at random sector boundaries\n",
	       (unsigned long long)cut, (unsigned long long)(cut - dry.br_writes_before),
	       (unsigned long long)swap_writes, (unsigned long long)cut_flushes,
	       (unsigned long long)(dry.br_flushes_after - dry.br_flushes_before));
	error = sx_filedev_open(path, 0, 0, &lower);
	if (error)
		return tool_error(error, "demo: cannot open %s", path);
	error = big_swap_run(lower, seed, cut, &run);
	sx_bdev_destroy(lower);
	if (error)
		return 1;
	if (!run.br_st.cs_dead || !run.br_error)
		return tool_fail("demo: the power cut did not stop the swap (swap: %s, %llu writes)",
				 tool_strerror(run.br_error),
				 (unsigned long long)run.br_st.cs_writes);
	printf("    the swap returned: %s, after %.2f s; the dead mount's unmount said: %s\n",
	       tool_strerror(run.br_error), run.br_seconds, tool_strerror(run.br_unmount_error));

	printf("2.4 mount the image again (log recovery runs)\n");
	if (sw_mount(path, "demo-recover", &bd, &mp))
		return 1;
	sx_get_recovery_stats(mp, &rs);
	printf("    recovery: %llu log records (%llu ops) from tail %s to head %s; %llu block changes replayed, %llu skipped (the block on disk was newer), %llu cancelled; %llu unfinished intents finished; %llu nameless files freed; the log ended with: %s\n",
	       (unsigned long long)rs.rs_records, (unsigned long long)rs.rs_ops,
	       tool_format_lsn(rs.rs_tail_lsn, s1, sizeof(s1)),
	       tool_format_lsn(rs.rs_head_lsn, s2, sizeof(s2)),
	       (unsigned long long)rs.rs_bufs_replayed, (unsigned long long)rs.rs_bufs_skipped,
	       (unsigned long long)rs.rs_bufs_cancelled, (unsigned long long)rs.rs_intents,
	       (unsigned long long)rs.rs_unlinked, sx_log_stop_name(rs.rs_stop_reason));

	printf("2.5 verify every block of both files against the tags written in 2.1\n");
	for (f = 0; f < 2; f++) {
		if (big_verify(mp, f, &state[f], &nread[f], &ndata[f], &size[f])) {
			sx_unmount(mp);
			sx_bdev_destroy(bd);
			return 1;
		}
		if (state[f] == BIG_MIXED)
			printf("    %s: MIXED: %llu blocks read, size %llu bytes\n", big_names[f],
			       (unsigned long long)nread[f], (unsigned long long)size[f]);
		else
			printf("    %s: %s: %llu blocks read, each as expected (%llu of data, %llu holes); size %llu bytes (before the swap: %llu)\n",
			       big_names[f], big_state_names[state[f]], (unsigned long long)nread[f],
			       (unsigned long long)ndata[f], (unsigned long long)(nread[f] - ndata[f]),
			       (unsigned long long)size[f], (unsigned long long)big_size(f));
	}
	if (sw_unmount(mp, bd, "recovery"))
		return 1;
	if (state[0] == BIG_MIXED || state[1] == BIG_MIXED || state[0] != state[1])
		return tool_fail("demo: the swap is not atomic: %s is %s, %s is %s",
				 big_names[0], big_state_names[state[0]], big_names[1],
				 big_state_names[state[1]]);
	*finished = state[0] == BIG_NEW;
	if (*finished)
		printf("    verified: both files hold all of the other's old data and size: recovery finished the swap\n");
	else
		printf("    verified: both files hold all of their old data and size: the cut came before the swap's intent was on the disk, so there was nothing to finish\n");

	printf("2.6 check the image:\n");
	if (sw_check(path, &problems))
		return 1;
	return 0;
}

int demo_swap(const char *path, u64 seed)
{
	struct big_run dry = { 0 };
	double t0 = demo_now();
	char sz[48];
	u64 cut = 0;
	u32 next[2] = { 0, 0 };
	bool finished = false;
	int status = 1;

	sx_set_log_callback(demo_log, NULL);
	printf("swapext demo: the atomic swap; image %s, seed %llu\n", path,
	       (unsigned long long)seed);
	if (sw_mkfs(path))
		goto out;
	printf("mkfs: %s, blocks of %u bytes, feature atomic_swap (swaps are chains of logged intents that recovery finishes)\n",
	       tool_format_size(SW_SIZE, sz, sizeof(sz)), SW_BS);

	printf("\nPart 1: an atomic update of part of a file\n");
	if (demo_update(path))
		goto out;

	printf("\nPart 2: a large atomic swap cut short by a power loss, finished by recovery\n");
	if (demo_big_swap(path, seed, &cut, &dry, next, &finished))
		goto out;

	printf("\nWhat happened:\n");
	printf("  Part 1: the report's blocks %u..%u were rewritten in a clone and swapped in at once; a second update, overtaken by a write into the report, was refused with EBUSY and changed nothing; no block leaked.\n",
	       UP_FIRST, UP_FIRST + UP_COUNT - 1);
	printf("  Part 2: the atomic swap of two files of %u and %u extents makes %llu device writes; the power went at write %llu, in the middle of it.\n",
	       next[0], next[1],
	       (unsigned long long)(dry.br_writes_after - dry.br_writes_before),
	       (unsigned long long)(cut - dry.br_writes_before));
	if (finished)
		printf("  Log recovery found the swap's unfinished intent and finished it: both files are all new, block by block and in size.\n");
	else
		printf("  The swap's intent had not reached the disk: both files are all old, block by block and in size.\n");
	printf("  The checker found no problems, after either part.\n");
	printf("Look at the image:\n");
	printf("  swapext check %s\n", path);
	printf("  swapext logprint %s\n", path);
	printf("  swapext io %s -c 'open %s' -c stat -c 'pread -v 16k 1k'\n", path, UP_NAME);
	printf("  swapext io %s -c 'open %s' -c stat -c bmap\n", path, big_names[0]);
	printf("(run 'swapext demo -j' for the journal demo: a metadata workload cut by a power loss)\n");
	printf("Result: PASS (%.1f s)\n", demo_now() - t0);
	status = 0;
out:
	sx_set_log_callback(NULL, NULL);
	return status;
}
