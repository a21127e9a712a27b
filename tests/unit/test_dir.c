// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the root directory (engine/dir.c) and the name operations
 * and descriptor table (engine/file.c), through the public file API on a
 * mounted memory device, checked against an in-memory model of the names:
 * the hash's documented format, name validation, create/open/close, many
 * names crossing the inline <-> B+tree boundary of the directory again and
 * again, names with equal hashes (constructed from the hash's structure),
 * link, unlink of open files, rename over existing names, tmpfiles freed on
 * close and by recovery, persistence across remount and crash, descriptor
 * errors, fstat fields, setflags, read-only and shut-down mounts, ENOSPC,
 * the record verifier, and the checker's view of names and link counts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "sxcrash.h"
#include "dir.h"
#include "file.h"
#include "fork.h"
#include "inode.h"

#define MIB		(1ull << 20)

/* ---------------------------------------------------------------- model */

/* A name and the inode it should lead to. */
struct ment {
	char	name[SX_NAME_MAX + 1];
	u64	ino;
};

/* The names the directory should hold. */
struct model {
	struct ment	*e;
	u32		n;
	u32		cap;
};

/* Index of @name in @m, or -1. */
static int model_find(const struct model *m, const char *name)
{
	u32 i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->e[i].name, name))
			return (int)i;
	return -1;
}

/* Add @name -> @ino to @m. */
static void model_add(struct model *m, const char *name, u64 ino)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->e = realloc(m->e, m->cap * sizeof(*m->e));
		assert_non_null(m->e);
	}
	snprintf(m->e[m->n].name, sizeof(m->e[m->n].name), "%s", name);
	m->e[m->n].ino = ino;
	m->n++;
}

/* Remove entry @i of @m. */
static void model_del(struct model *m, int i)
{
	m->e[i] = m->e[--m->n];
}

/* Names of inode @ino in @m. */
static u32 model_links(const struct model *m, u64 ino)
{
	u32 i, n = 0;

	for (i = 0; i < m->n; i++)
		n += m->e[i].ino == ino;
	return n;
}

/* readdir callback: collect into a model. */
static int collect_cb(void *arg, const char *name, u64 ino)
{
	model_add(arg, name, ino);
	return 0;
}

/* Compare two entries by name, for qsort. */
static int ment_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ment *)a)->name, ((const struct ment *)b)->name);
}

/* The directory as readdir sees it equals @m exactly (names and inodes, no duplicates). */
static void assert_dir_is(struct sx_mount *mp, struct model *m)
{
	struct model got = { 0 };
	u32 i;

	assert_int_equal(sx_readdir(mp, collect_cb, &got), 0);
	if (got.n != m->n)
		fail_msg("readdir: %u names, model has %u", got.n, m->n);
	qsort(got.e, got.n, sizeof(*got.e), ment_cmp);
	qsort(m->e, m->n, sizeof(*m->e), ment_cmp);
	for (i = 0; i < m->n; i++) {
		if (strcmp(got.e[i].name, m->e[i].name) || got.e[i].ino != m->e[i].ino)
			fail_msg("readdir entry %u: '%s' -> %llu, model '%s' -> %llu", i,
				 got.e[i].name, (unsigned long long)got.e[i].ino, m->e[i].name,
				 (unsigned long long)m->e[i].ino);
	}
	free(got.e);
}

/* ---------------------------------------------------------------- helpers */

/* The root directory inode, referenced. */
static struct sx_inode *root_inode(struct sx_mount *mp)
{
	struct sx_inode *dp;

	assert_int_equal(sx_iget(mp, mp->m_rootino, 0, &dp), 0);
	return dp;
}

/* The root directory's fork form and entry count. */
static void root_state(struct sx_mount *mp, u16 *format, u64 *nrecs, u64 *size)
{
	struct sx_inode *dp = root_inode(mp);

	sx_ilock(dp, SX_ILOCK_EXCL);
	*format = dp->i_format;
	*nrecs = dp->i_nrecs;
	*size = dp->i_size;
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
}

/* Look @name up in the directory directly. */
static int dir_lookup(struct sx_mount *mp, const char *name, u64 *ino)
{
	struct sx_inode *dp = root_inode(mp);
	int error;

	sx_ilock(dp, SX_ILOCK_EXCL);
	error = sx_dir_lookup(NULL, dp, name, ino);
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
	return error;
}

/* fstat of @fd, asserting success. */
static struct sx_stat fstat_ok(struct sx_mount *mp, int fd)
{
	struct sx_stat st;

	assert_int_equal(sx_fstat(mp, fd, &st), 0);
	return st;
}

/* Create @name (mode 0644) and return its inode number, closed. */
static u64 create_closed(struct sx_mount *mp, const char *name)
{
	struct sx_stat st;
	int fd, error;

	error = sx_create(mp, name, 0644, &fd);
	if (error)
		fail_msg("create '%s': %s", name, sx_strerror(error));
	st = fstat_ok(mp, fd);
	assert_int_equal(sx_close(mp, fd), 0);
	return st.st_ino;
}

/* Unmount @mp and assert the checker finds nothing on @bd. */
static void unmount_check(struct sx_mount *mp, struct sx_bdev *bd)
{
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sxc_check_clean(bd, 0, "unmount"), 0);
}

/* True if inode @ino is in use (an iget succeeds). */
static bool inode_exists(struct sx_mount *mp, u64 ino)
{
	struct sx_inode *ip;
	int error = sx_iget(mp, ino, 0, &ip);

	if (error == 0) {
		sx_irele(ip);
		return true;
	}
	assert_int_equal(error, -ENOENT);
	return false;
}

/* A name of @len bytes from @seed, any byte but NUL and '/'. */
static void random_name(u64 *seed, char *name, u32 len)
{
	u32 i;

	do {
		for (i = 0; i < len; i++) {
			u8 c;

			do {
				c = (u8)sxt_rand(seed);
			} while (c == 0 || c == '/');
			name[i] = (char)c;
		}
		name[len] = 0;
	} while (sx_dir_check_name(name) != 0);
}

/* ---------------------------------------------------------------- the hash */

/* The hash as dir.c documents it, written again from the comment. */
static u64 ref_mix(u64 x)
{
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 29;
	return x;
}

/* The state of the documented hash before the finaliser, after @len bytes. */
static u64 ref_state(const u8 *p, u32 len, u32 total)
{
	u64 h = 0x53584449524e4d31ull ^ ((u64)total * 0x9e3779b97f4a7c15ull);
	u32 i, j;

	for (i = 0; i < len; i += 8) {
		u64 w = 0;

		for (j = 0; j < 8 && i + j < len; j++)
			w |= (u64)p[i + j] << (8 * j);
		h = ref_mix(h ^ w);
	}
	return h;
}

/* MurmurHash3's fmix64. */
static u64 ref_fmix(u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* The documented hash of a whole name. */
static u64 ref_hash(const char *name, u32 len)
{
	return ref_fmix(ref_state((const u8 *)name, len, len));
}

/* The hash is exactly the documented function, and spreads names well. */
static void test_hash_format(void **state)
{
	static char names[20000][24];
	u64 seed = 42, *h = malloc(20000 * sizeof(*h));
	char buf[SX_NAME_MAX + 1];
	u32 i, len, top = 0;

	assert_non_null(h);
	for (len = 1; len <= SX_NAME_MAX; len++) {
		random_name(&seed, buf, len);
		assert_true(sx_dir_hash(buf, len) == ref_hash(buf, len));
	}
	/* the length takes part: a name and its extension differ */
	assert_true(sx_dir_hash("ab", 2) != sx_dir_hash("ab", 1));
	assert_true(sx_dir_hash("a", 1) != sx_dir_hash("b", 1));
	/* 20000 similar names: no two share a hash, every top byte is used */
	for (i = 0; i < 20000; i++) {
		u32 j;

		snprintf(names[i], sizeof(names[i]), "file%05u", i);
		h[i] = sx_dir_hash(names[i], (u32)strlen(names[i]));
		for (j = 0; j < i; j += 97)
			assert_true(h[j] != h[i]);
	}
	{
		bool seen[256] = { false };

		for (i = 0; i < 20000; i++)
			seen[h[i] >> 56] = true;
		for (i = 0; i < 256; i++)
			top += seen[i];
		assert_int_equal(top, 256);
	}
	free(h);
}

/*
 * Names of @len >= 16 bytes that all hash to the same value: the first word
 * differs, the second is chosen so that the state after it is the same
 * (each step of the hash is h = mix(h ^ w), so equal h ^ w means equal
 * states from then on).
 */
static u32 colliding_names(u64 *seed, u32 len, u32 count, char (*out)[SX_NAME_MAX + 1])
{
	u8 tail[SX_NAME_MAX + 1];
	u64 target = sxt_rand(seed), s, w2;
	u32 n = 0, i;

	assert_true(len >= 16);
	random_name(seed, (char *)tail, len);
	while (n < count) {
		u8 *p = (u8 *)out[n];
		bool ok = true;

		random_name(seed, (char *)p, 8);
		s = ref_state(p, 8, len);
		w2 = s ^ target;
		for (i = 0; i < 8; i++) {
			u8 c = (u8)(w2 >> (8 * i));

			if (c == 0 || c == '/')
				ok = false;
			p[8 + i] = c;
		}
		if (!ok)
			continue;
		memcpy(p + 16, tail + 16, len - 16);
		p[len] = 0;
		for (i = 0; i < n; i++)
			if (!memcmp(out[i], p, len))
				ok = false;
		if (!ok || sx_dir_check_name((char *)p))
			continue;
		n++;
	}
	for (i = 1; i < n; i++)
		assert_true(sx_dir_hash(out[i], len) == sx_dir_hash(out[0], len));
	return n;
}

/* ---------------------------------------------------------------- names */

/* Name checks of the directory and of the API, with their errors. */
static void test_name_checks(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	char longname[SX_NAME_MAX + 2];
	int fd, fd2;

	assert_int_equal(sx_dir_check_name(""), -EINVAL);
	assert_int_equal(sx_dir_check_name("."), -EINVAL);
	assert_int_equal(sx_dir_check_name(".."), -EINVAL);
	assert_int_equal(sx_dir_check_name("a/b"), -EINVAL);
	assert_int_equal(sx_dir_check_name("/"), -EINVAL);
	assert_int_equal(sx_dir_check_name(NULL), -EINVAL);
	assert_int_equal(sx_dir_check_name("..."), 0);
	assert_int_equal(sx_dir_check_name(".a"), 0);
	assert_int_equal(sx_dir_check_name("\xff\x01"), 0);
	memset(longname, 'x', sizeof(longname));
	longname[SX_NAME_MAX] = 0;
	assert_int_equal(sx_dir_check_name(longname), 0);
	longname[SX_NAME_MAX] = 'x';
	longname[SX_NAME_MAX + 1] = 0;
	assert_int_equal(sx_dir_check_name(longname), -EINVAL);

	/* the API: too long, the root's own names, bad names */
	assert_int_equal(sx_create(mp, longname, 0644, &fd), -ENAMETOOLONG);
	assert_int_equal(sx_open(mp, longname, &fd), -ENAMETOOLONG);
	assert_int_equal(sx_unlink(mp, longname), -ENAMETOOLONG);
	assert_int_equal(sx_create(mp, "", 0644, &fd), -EINVAL);
	assert_int_equal(sx_create(mp, "a/b", 0644, &fd), -EINVAL);
	assert_int_equal(sx_create(mp, ".", 0644, &fd), -EISDIR);
	assert_int_equal(sx_create(mp, "..", 0644, &fd), -EISDIR);
	assert_int_equal(sx_create(mp, "/", 0644, &fd), -EISDIR);
	assert_int_equal(sx_open(mp, ".", &fd), -EISDIR);
	assert_int_equal(sx_open(mp, "//", &fd), -EISDIR);
	assert_int_equal(sx_unlink(mp, ".."), -EISDIR);
	assert_int_equal(sx_rename(mp, ".", "x"), -EISDIR);
	assert_int_equal(sx_open(mp, "/x", &fd), -EINVAL);
	/* bad modes */
	assert_int_equal(sx_create(mp, "m", SX_IFDIR | 0755, &fd), -EINVAL);
	assert_int_equal(sx_create(mp, "m", 01000000, &fd), -EINVAL);
	assert_int_equal(sx_open_tmpfile(mp, SX_IFDIR | 0755, &fd), -EINVAL);

	/* the longest name works everywhere */
	longname[SX_NAME_MAX] = 0;
	assert_int_equal(sx_create(mp, longname, SX_IFREG | 0600, &fd), 0);
	assert_int_equal(sx_open(mp, longname, &fd2), 0);
	assert_int_equal(sx_link(mp, fd, "short"), 0);
	assert_int_equal(sx_link(mp, fd, ""), -EINVAL);
	assert_int_equal(sx_link(mp, fd, "."), -EISDIR);
	assert_int_equal(sx_link(mp, fd, "a/"), -EINVAL);
	longname[SX_NAME_MAX] = 'y';
	assert_int_equal(sx_link(mp, fd, longname), -ENAMETOOLONG);
	assert_int_equal(sx_rename(mp, "short", longname), -ENAMETOOLONG);
	longname[SX_NAME_MAX] = 0;
	assert_int_equal(sx_unlink(mp, "short"), 0);
	assert_int_equal(sx_rename(mp, longname, "z"), 0);
	assert_int_equal(fstat_ok(mp, fd).st_mode, SX_IFREG | 0600);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_close(mp, fd2), 0);
	unmount_check(mp, bd);
	sx_bdev_destroy(bd);
}

/* Create, open, close and the descriptor table. */
/*
 * The directory operations check what they are given even where the file
 * API has already looked: adding a name that exists or an inode number off
 * the data area, removing or repointing a name that is not there, or
 * repointing at a bad inode number, fails and leaves the directory as it was.
 */
static void test_dir_op_refusals(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_inode *dp;
	struct sx_trans *tp;
	u64 ino, old = 0, size0, nrecs0, size, nrecs;
	u16 format;
	int fd;

	assert_int_equal(sx_create(mp, "a", 0644, &fd), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(dir_lookup(mp, "a", &ino), 0);
	root_state(mp, &format, &nrecs0, &size0);

	dp = root_inode(mp);
	assert_int_equal(sx_trans_alloc(mp, 65536, 0, &tp), 0);
	sx_ilock(dp, SX_ILOCK_EXCL);
	assert_int_equal(sx_dir_add(tp, dp, "a", ino), -EEXIST);
	assert_int_equal(sx_dir_add(tp, dp, "b", 1), -EINVAL);
	assert_int_equal(sx_dir_add(tp, dp, "b", mp->m_sb.sb_dblocks), -EINVAL);
	assert_int_equal(sx_dir_remove(tp, dp, "b", &old), -ENOENT);
	assert_int_equal(sx_dir_replace(tp, dp, "b", ino, &old), -ENOENT);
	assert_int_equal(sx_dir_replace(tp, dp, "a", 1, &old), -EINVAL);
	sx_iunlock(dp, SX_ILOCK_EXCL);
	assert_int_equal(sx_trans_commit(tp), 0);
	sx_irele(dp);

	root_state(mp, &format, &nrecs, &size);
	assert_int_equal(nrecs, nrecs0);
	assert_int_equal(size, size0);
	assert_int_equal(dir_lookup(mp, "a", &old), 0);
	assert_int_equal(old, ino);
	assert_int_equal(dir_lookup(mp, "b", &old), -ENOENT);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

static void test_create_open_close(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_stat st, st2;
	int fd, fd2, fd3, i, fds[300];

	assert_int_equal(sx_create(mp, "a", 0644, &fd), 0);
	assert_int_equal(fd, 0);
	assert_int_equal(sx_create(mp, "a", 0644, &fd2), -EEXIST);
	assert_int_equal(sx_open(mp, "a", &fd2), 0);
	assert_int_equal(fd2, 1);
	assert_int_equal(sx_open(mp, "b", &fd3), -ENOENT);
	st = fstat_ok(mp, fd);
	st2 = fstat_ok(mp, fd2);
	assert_true(st.st_ino == st2.st_ino && st.st_gen == st2.st_gen);
	/* the lowest free descriptor is reused */
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_close(mp, fd), -EBADF);
	assert_int_equal(sx_fstat(mp, fd, &st), -EBADF);
	assert_int_equal(sx_open(mp, "a", &fd3), 0);
	assert_int_equal(fd3, 0);
	/* bad descriptors */
	assert_int_equal(sx_close(mp, -1), -EBADF);
	assert_int_equal(sx_close(mp, 1000000), -EBADF);
	assert_int_equal(sx_fstat(mp, -5, &st), -EBADF);
	assert_int_equal(sx_link(mp, 77, "x"), -EBADF);
	assert_int_equal(sx_setflags(mp, 77, 0), -EBADF);
	assert_int_equal(sx_close(mp, 2), -EBADF);
	/* the table grows: 300 descriptors of one file, 0..301 in order */
	for (i = 0; i < 300; i++) {
		assert_int_equal(sx_open(mp, "a", &fds[i]), 0);
		assert_int_equal(fds[i], i + 2);
	}
	for (i = 0; i < 300; i += 2)
		assert_int_equal(sx_close(mp, fds[i]), 0);
	for (i = 0; i < 300; i += 2) {
		assert_int_equal(sx_open(mp, "a", &fd), 0);
		assert_int_equal(fd, fds[i]);
	}
	for (i = 0; i < 300; i++)
		assert_int_equal(sx_close(mp, fds[i]), 0);
	assert_int_equal(sx_close(mp, 0), 0);
	assert_int_equal(sx_close(mp, 1), 0);
	for (i = 0; i < 302; i++)
		assert_int_equal(sx_fstat(mp, i, &st), -EBADF);
	/* descriptors left open are closed by unmount */
	assert_int_equal(sx_open(mp, "a", &fd), 0);
	assert_int_equal(sx_open_tmpfile(mp, 0600, &fd2), 0);
	unmount_check(mp, bd);
	mp = sxt_mount(bd);
	assert_int_equal(sx_fstat(mp, 0, &st), -EBADF);
	assert_int_equal(sx_open(mp, "a", &fd), 0);
	assert_int_equal(fd, 0);
	unmount_check(mp, bd);
	sx_bdev_destroy(bd);
}

/* sx_fstat of a new file, and times that move. */
static void test_fstat(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	s64 before = (s64)sx_wall_ns(), after;
	struct sx_stat st, st2, st3;
	int fd, fd2;

	assert_int_equal(sx_create(mp, "f", 0640, &fd), 0);
	after = (s64)sx_wall_ns();
	st = fstat_ok(mp, fd);
	assert_true(st.st_ino >= mp->m_sb.sb_datastart && st.st_ino < mp->m_sb.sb_dblocks);
	assert_true(st.st_gen != 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_blocks, 0);
	assert_int_equal(st.st_blksize, 4096);
	assert_int_equal(st.st_mode, SX_IFREG | 0640);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);
	assert_int_equal(st.st_flags, 0);
	assert_true(st.st_mtime_ns >= before && st.st_mtime_ns <= after);
	assert_true(st.st_ctime_ns >= before && st.st_ctime_ns <= after);
	assert_true(st.st_atime_ns >= before && st.st_atime_ns <= after);
	/* a second file is another inode with another generation */
	assert_int_equal(sx_create(mp, "g", 0600, &fd2), 0);
	st2 = fstat_ok(mp, fd2);
	assert_true(st2.st_ino != st.st_ino);
	/* link: nlink and ctime move, mtime does not */
	assert_int_equal(sx_link(mp, fd, "f2"), 0);
	st3 = fstat_ok(mp, fd);
	assert_int_equal(st3.st_nlink, 2);
	assert_true(st3.st_ctime_ns > st.st_ctime_ns);
	assert_true(st3.st_mtime_ns == st.st_mtime_ns);
	/* everything survives a remount, to the nanosecond */
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_close(mp, fd2), 0);
	unmount_check(mp, bd);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "f2", &fd), 0);
	st = fstat_ok(mp, fd);
	assert_memory_equal(&st, &st3, sizeof(st));
	assert_int_equal(sx_close(mp, fd), 0);
	unmount_check(mp, bd);
	sx_bdev_destroy(bd);
}

/* Generation numbers change when an inode block is reused. */
static void test_generation(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ino[64], gen[64];
	struct sx_stat st;
	int fd, i, reused = 0;

	for (i = 0; i < 64; i++) {
		char name[16];

		snprintf(name, sizeof(name), "g%d", i);
		assert_int_equal(sx_create(mp, name, 0644, &fd), 0);
		st = fstat_ok(mp, fd);
		ino[i] = st.st_ino;
		gen[i] = st.st_gen;
		assert_int_equal(sx_close(mp, fd), 0);
		assert_int_equal(sx_unlink(mp, name), 0);
	}
	for (i = 1; i < 64; i++) {
		int j;

		for (j = 0; j < i; j++)
			if (ino[j] == ino[i]) {
				reused++;
				assert_true(gen[j] != gen[i]);
			}
	}
	assert_true(reused > 0);
	unmount_check(mp, bd);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- many names */

/* Create @name in @m (asserting the API agrees with the model). */
static void m_create(struct sx_mount *mp, struct model *m, const char *name)
{
	int fd, error = sx_create(mp, name, 0644, &fd);

	if (model_find(m, name) >= 0) {
		assert_int_equal(error, -EEXIST);
		return;
	}
	if (error)
		fail_msg("create: %s", sx_strerror(error));
	model_add(m, name, fstat_ok(mp, fd).st_ino);
	assert_int_equal(sx_close(mp, fd), 0);
}

/* Unlink entry @i of @m. */
static void m_unlink(struct sx_mount *mp, struct model *m, int i)
{
	u64 ino = m->e[i].ino;
	int error = sx_unlink(mp, m->e[i].name);

	if (error)
		fail_msg("unlink '%s': %s", m->e[i].name, sx_strerror(error));
	model_del(m, i);
	/* the last name of a closed file: the inode is freed at once */
	assert_true(inode_exists(mp, ino) == (model_links(m, ino) > 0));
}

/* Rename entry @i of @m to @to. */
static void m_rename(struct sx_mount *mp, struct model *m, int i, const char *to)
{
	int j = model_find(m, to);
	u64 ino = m->e[i].ino, old = j >= 0 ? m->e[j].ino : 0;
	char from[SX_NAME_MAX + 1];

	snprintf(from, sizeof(from), "%s", m->e[i].name);
	assert_int_equal(sx_rename(mp, from, to), 0);
	if (j == i || (j >= 0 && old == ino))
		return;		/* the same file: nothing happens */
	if (j >= 0) {
		model_del(m, j);
		i = model_find(m, from);
	}
	snprintf(m->e[i].name, sizeof(m->e[i].name), "%s", to);
	if (old)
		assert_true(inode_exists(mp, old) == (model_links(m, old) > 0));
}

/* Give the file of entry @i a second name @to. */
static void m_link(struct sx_mount *mp, struct model *m, int i, const char *to)
{
	int fd, error;
	u64 ino = m->e[i].ino;

	assert_int_equal(sx_open(mp, m->e[i].name, &fd), 0);
	error = sx_link(mp, fd, to);
	if (model_find(m, to) >= 0) {
		assert_int_equal(error, -EEXIST);
	} else {
		assert_int_equal(error, 0);
		model_add(m, to, ino);
	}
	assert_int_equal(fstat_ok(mp, fd).st_nlink, model_links(m, ino));
	assert_int_equal(sx_close(mp, fd), 0);
}

/* Every model name looks up to its inode, and the link counts agree. */
static void assert_lookups(struct sx_mount *mp, struct model *m)
{
	u32 i;

	for (i = 0; i < m->n; i++) {
		u64 ino;
		int fd;

		assert_int_equal(dir_lookup(mp, m->e[i].name, &ino), 0);
		assert_true(ino == m->e[i].ino);
		if (i % 7 == 0) {
			assert_int_equal(sx_open(mp, m->e[i].name, &fd), 0);
			assert_int_equal(fstat_ok(mp, fd).st_nlink, model_links(m, ino));
			assert_int_equal(sx_close(mp, fd), 0);
		}
	}
}

/* The name of file number @k. */
static void nth_name(u64 k, char *buf, size_t len)
{
	snprintf(buf, len, "name-%llu-%s", (unsigned long long)k,
		 k % 3 ? "x" : "a-longer-name-to-vary-the-lengths-of-entries");
}

/*
 * Grow the directory far past the inline area and shrink it back, several
 * times, with creates, links, renames and unlinks mixed in, against the
 * model; count the conversions in each direction.
 */
static void many_names(u32 bsize, u32 nmax, u32 rounds)
{
	struct sx_bdev *bd = sxt_memfs(bsize == 512 ? 32 * MIB : 64 * MIB, bsize, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct model m = { 0 };
	u32 inl = sx_fork_inline_max(mp, &sx_dir_fork_ops), r, to_btree = 0, to_inline = 0;
	u64 seed = bsize, k = 0, nrecs, size;
	u16 fmt, last = SX_DIF_INLINE;
	char name[300];

	assert_true(inl >= 1);
	for (r = 0; r < rounds; r++) {
		u32 target = r % 2 ? inl / 2 - (inl >= 4) : (r % 4 == 0 ? nmax : inl + 3);

		if (r == rounds - 1)
			target = nmax;
		while (m.n != target) {
			u32 op = (u32)(sxt_rand(&seed) % 10);

			if (m.n < target) {
				nth_name(k++, name, sizeof(name));
				if (op < 8 || m.n == 0)
					m_create(mp, &m, name);
				else
					m_link(mp, &m, (int)(sxt_rand(&seed) % m.n), name);
			} else if (op < 7) {
				m_unlink(mp, &m, (int)(sxt_rand(&seed) % m.n));
			} else if (op < 9) {
				/* rename onto a fresh name or over an existing one */
				int i = (int)(sxt_rand(&seed) % m.n);

				if (op == 7) {
					nth_name(k++, name, sizeof(name));
				} else {
					snprintf(name, sizeof(name), "%s",
						 m.e[sxt_rand(&seed) % m.n].name);
				}
				m_rename(mp, &m, i, name);
			} else {
				m_unlink(mp, &m, (int)(sxt_rand(&seed) % m.n));
			}
			root_state(mp, &fmt, &nrecs, &size);
			assert_int_equal(nrecs, m.n);
			assert_int_equal(size, m.n);
			if (fmt != last) {
				if (fmt == SX_DIF_BTREE)
					to_btree++;
				else
					to_inline++;
				last = fmt;
			}
			/* the form follows the fork's rules */
			if (m.n > inl)
				assert_int_equal(fmt, SX_DIF_BTREE);
			if (m.n <= inl / 2)
				assert_int_equal(fmt, SX_DIF_INLINE);
		}
		assert_lookups(mp, &m);
		assert_dir_is(mp, &m);
		if (r % 3 == 2) {
			unmount_check(mp, bd);
			mp = sxt_mount(bd);
			assert_dir_is(mp, &m);
		}
	}
	assert_true(to_btree >= rounds / 2 && to_inline >= rounds / 2 - 1);
	unmount_check(mp, bd);
	mp = sxt_mount(bd);
	assert_lookups(mp, &m);
	assert_dir_is(mp, &m);
	unmount_check(mp, bd);
	free(m.e);
	sx_bdev_destroy(bd);
}

/* Thousands of names on 4 KiB blocks (13 entries inline, 14 per leaf). */
static void test_many_names_4k(void **state)
{
	many_names(4096, 3000, 16);
}

/* 512-byte blocks: one entry inline and one per leaf, a tall tree. */
static void test_many_names_512(void **state)
{
	many_names(512, 1200, 12);
}

/* A random mix of every name operation against the model, with remounts. */
static void test_random_ops(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 1024, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct model m = { 0 };
	u64 seed = 7;
	u32 i;
	char name[SX_NAME_MAX + 1];

	for (i = 0; i < 6000; i++) {
		u32 op = (u32)(sxt_rand(&seed) % 16);
		u32 len = 1 + (u32)(sxt_rand(&seed) % (op == 0 ? SX_NAME_MAX : 12));

		random_name(&seed, name, len);
		/* small names collide with the model now and then */
		if (len < 3 && m.n)
			snprintf(name, sizeof(name), "%s", m.e[sxt_rand(&seed) % m.n].name);
		if (op < 6 || m.n == 0)
			m_create(mp, &m, name);
		else if (op < 9)
			m_unlink(mp, &m, (int)(sxt_rand(&seed) % m.n));
		else if (op < 12)
			m_rename(mp, &m, (int)(sxt_rand(&seed) % m.n), name);
		else if (op < 14)
			m_link(mp, &m, (int)(sxt_rand(&seed) % m.n), name);
		else {
			u64 ino;
			int j = model_find(&m, name);

			assert_int_equal(dir_lookup(mp, name, &ino), j >= 0 ? 0 : -ENOENT);
			if (j >= 0)
				assert_true(ino == m.e[j].ino);
		}
		if (i % 1500 == 1499) {
			assert_dir_is(mp, &m);
			unmount_check(mp, bd);
			mp = sxt_mount(bd);
		}
	}
	assert_lookups(mp, &m);
	assert_dir_is(mp, &m);
	unmount_check(mp, bd);
	free(m.e);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- collisions */

/* Names with one hash: lookup, unlink, rename and link tell them apart. */
static void collisions(u32 count, u32 len)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	char (*names)[SX_NAME_MAX + 1] = calloc(count + 8, sizeof(*names));
	struct model m = { 0 };
	u64 seed = count * 31 + len, ino;
	u32 i;

	assert_non_null(names);
	assert_int_equal(colliding_names(&seed, len, count + 8, names), count + 8);
	for (i = 0; i < count; i++)
		m_create(mp, &m, names[i]);
	/* an unlisted name with the same hash is not found, nor can it be unlinked */
	assert_int_equal(dir_lookup(mp, names[count], &ino), -ENOENT);
	assert_int_equal(sx_unlink(mp, names[count]), -ENOENT);
	assert_lookups(mp, &m);
	assert_dir_is(mp, &m);
	/* remove every third, then the first and the last of the run */
	for (i = 0; i < count; i += 3)
		m_unlink(mp, &m, model_find(&m, names[i]));
	assert_lookups(mp, &m);
	/* rename colliding names onto each other, and to new colliding names */
	for (i = 1; i + 1 < count; i += 5) {
		int a = model_find(&m, names[i]);

		if (a >= 0)
			m_rename(mp, &m, a, names[i + 1]);
	}
	for (i = 0; i < 4; i++) {
		int a = (int)(sxt_rand(&seed) % m.n);

		m_rename(mp, &m, a, names[count + i]);
		m_link(mp, &m, (int)(sxt_rand(&seed) % m.n), names[count + 4 + i]);
	}
	assert_lookups(mp, &m);
	assert_dir_is(mp, &m);
	unmount_check(mp, bd);
	mp = sxt_mount(bd);
	assert_lookups(mp, &m);
	assert_dir_is(mp, &m);
	while (m.n)
		m_unlink(mp, &m, (int)(sxt_rand(&seed) % m.n));
	assert_dir_is(mp, &m);
	unmount_check(mp, bd);
	free(m.e);
	free(names);
	sx_bdev_destroy(bd);
}

/* A few colliding names: all inline. */
static void test_collisions_inline(void **state)
{
	collisions(6, 16);
}

/* 150 colliding names: a run of equal keys over many leaves, longer than a readdir batch. */
static void test_collisions_btree(void **state)
{
	collisions(150, 40);
}

/* ---------------------------------------------------------------- link, unlink, rename */

/* Unlink of an open file: it lives on without a name, can be linked again. */
static void test_unlink_open(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	u64 free0, ino;
	int fd, fd2;

	assert_int_equal(sx_create(mp, "keep", 0644, &fd), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	free0 = sx_alloc_free_blocks(mp);
	assert_int_equal(sx_create(mp, "x", 0644, &fd), 0);
	ino = fstat_ok(mp, fd).st_ino;
	assert_int_equal(sx_unlink(mp, "x"), 0);
	assert_int_equal(sx_unlink(mp, "x"), -ENOENT);
	assert_int_equal(sx_open(mp, "x", &fd2), -ENOENT);
	assert_int_equal(fstat_ok(mp, fd).st_nlink, 0);
	assert_true(inode_exists(mp, ino));
	/* a file with no name can get one back */
	assert_int_equal(sx_link(mp, fd, "y"), 0);
	assert_int_equal(fstat_ok(mp, fd).st_nlink, 1);
	assert_int_equal(sx_unlink(mp, "y"), 0);
	assert_int_equal(fstat_ok(mp, fd).st_nlink, 0);
	/* the last close frees it */
	assert_int_equal(sx_close(mp, fd), 0);
	assert_false(inode_exists(mp, ino));
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	unmount_check(mp, bd);
	sx_bdev_destroy(bd);
}

/* Links: counts, -EEXIST, and freeing only with the last name. */
static void test_link(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	u64 ino, ino2;
	int fd;

	assert_int_equal(sx_create(mp, "a", 0644, &fd), 0);
	ino = fstat_ok(mp, fd).st_ino;
	assert_int_equal(sx_link(mp, fd, "b"), 0);
	assert_int_equal(sx_link(mp, fd, "c"), 0);
	assert_int_equal(sx_link(mp, fd, "a"), -EEXIST);
	assert_int_equal(fstat_ok(mp, fd).st_nlink, 3);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(dir_lookup(mp, "c", &ino2), 0);
	assert_true(ino2 == ino);
	assert_int_equal(sx_unlink(mp, "a"), 0);
	assert_int_equal(sx_unlink(mp, "c"), 0);
	assert_true(inode_exists(mp, ino));
	unmount_check(mp, bd);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "b", &fd), 0);
	assert_int_equal(fstat_ok(mp, fd).st_nlink, 1);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unlink(mp, "b"), 0);
	assert_false(inode_exists(mp, ino));
	unmount_check(mp, bd);
	sx_bdev_destroy(bd);
}

/* Rename: to a new name, over an existing one (closed and open), onto itself. */
static void test_rename(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	u64 a, b, c, ino;
	int fd;

	a = create_closed(mp, "a");
	b = create_closed(mp, "b");
	assert_int_equal(sx_rename(mp, "a", "a2"), 0);
	assert_int_equal(dir_lookup(mp, "a", &ino), -ENOENT);
	assert_int_equal(dir_lookup(mp, "a2", &ino), 0);
	assert_true(ino == a);
	assert_int_equal(sx_rename(mp, "nothing", "z"), -ENOENT);
	assert_int_equal(sx_rename(mp, "nothing", "a2"), -ENOENT);
	/* over a closed file: it is freed */
	assert_int_equal(sx_rename(mp, "a2", "b"), 0);
	assert_int_equal(dir_lookup(mp, "b", &ino), 0);
	assert_true(ino == a);
	assert_int_equal(dir_lookup(mp, "a2", &ino), -ENOENT);
	assert_false(inode_exists(mp, b));
	/* over an open file: it lives on, nameless, until closed */
	c = create_closed(mp, "c");
	assert_int_equal(sx_open(mp, "c", &fd), 0);
	assert_int_equal(sx_rename(mp, "b", "c"), 0);
	assert_int_equal(fstat_ok(mp, fd).st_nlink, 0);
	assert_true(inode_exists(mp, c));
	assert_int_equal(dir_lookup(mp, "c", &ino), 0);
	assert_true(ino == a);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_false(inode_exists(mp, c));
	/* onto itself, and between two names of one file: nothing changes */
	assert_int_equal(sx_rename(mp, "c", "c"), 0);
	assert_int_equal(sx_open(mp, "c", &fd), 0);
	assert_int_equal(sx_link(mp, fd, "d"), 0);
	assert_int_equal(sx_rename(mp, "c", "d"), 0);
	assert_int_equal(dir_lookup(mp, "c", &ino), 0);
	assert_int_equal(dir_lookup(mp, "d", &ino), 0);
	assert_int_equal(fstat_ok(mp, fd).st_nlink, 2);
	assert_int_equal(sx_close(mp, fd), 0);
	unmount_check(mp, bd);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- tmpfiles */

/* A tmpfile: no name, freed at close; linked, it is an ordinary file. */
static void test_tmpfile(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct model m = { 0 };
	struct sx_stat st;
	u64 free0 = sx_alloc_free_blocks(mp);
	int fd, fd2, i;

	assert_int_equal(sx_open_tmpfile(mp, 0600, &fd), 0);
	st = fstat_ok(mp, fd);
	assert_int_equal(st.st_nlink, 0);
	assert_int_equal(st.st_mode, SX_IFREG | 0600);
	assert_true(free0 > sx_alloc_free_blocks(mp));
	assert_dir_is(mp, &m);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_false(inode_exists(mp, st.st_ino));
	assert_int_equal(sx_alloc_free_blocks(mp), free0);

	/* several at once, some linked */
	for (i = 0; i < 10; i++) {
		assert_int_equal(sx_open_tmpfile(mp, 0644, &fd), 0);
		if (i % 3 == 0) {
			char name[8];

			snprintf(name, sizeof(name), "t%d", i);
			assert_int_equal(sx_link(mp, fd, name), 0);
			st = fstat_ok(mp, fd);
			assert_int_equal(st.st_nlink, 1);
			model_add(&m, name, st.st_ino);
			assert_int_equal(sx_link(mp, fd, name), -EEXIST);
		}
	}
	assert_dir_is(mp, &m);
	for (i = 0; i < 10; i++)
		assert_int_equal(sx_close(mp, i), 0);
	assert_dir_is(mp, &m);
	/* a linked tmpfile stays; opening it finds the same inode */
	assert_int_equal(sx_open(mp, "t3", &fd2), 0);
	assert_true(fstat_ok(mp, fd2).st_ino == m.e[model_find(&m, "t3")].ino);
	assert_int_equal(sx_close(mp, fd2), 0);
	unmount_check(mp, bd);
	mp = sxt_mount(bd);
	assert_dir_is(mp, &m);
	for (i = 0; i < (int)m.n; i++)
		assert_int_equal(sx_unlink(mp, m.e[i].name), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	unmount_check(mp, bd);
	free(m.e);
	sx_bdev_destroy(bd);
}

/* After a crash, recovery frees tmpfiles and unlinked open files; synced names stay. */
static void test_crash_recovery(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct model m = { 0 }, got = { 0 };
	u64 free0, tino, uino, lino;
	int fd, tfd, ufd, lfd, i;
	char name[16];

	free0 = sx_alloc_free_blocks(mp);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		model_add(&m, name, create_closed(mp, name));
	}
	/* a tmpfile, an unlinked open file, and a tmpfile that got a name */
	assert_int_equal(sx_open_tmpfile(mp, 0600, &tfd), 0);
	tino = fstat_ok(mp, tfd).st_ino;
	assert_int_equal(sx_open(mp, "s5", &ufd), 0);
	uino = fstat_ok(mp, ufd).st_ino;
	assert_int_equal(sx_unlink(mp, "s5"), 0);
	model_del(&m, model_find(&m, "s5"));
	assert_int_equal(sx_open_tmpfile(mp, 0600, &lfd), 0);
	lino = fstat_ok(mp, lfd).st_ino;
	assert_int_equal(sx_link(mp, lfd, "linked"), 0);
	model_add(&m, "linked", lino);
	assert_int_equal(sx_sync(mp), 0);
	/* names after the sync may be lost, but only as a tail, and atomically */
	for (i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "late%d", i);
		assert_int_equal(sx_create(mp, name, 0644, &fd), 0);
		assert_int_equal(sx_close(mp, fd), 0);
	}
	sx_shutdown(mp);
	assert_int_equal(sx_create(mp, "dead", 0644, &fd), -EIO);
	assert_int_equal(sx_fstat(mp, tfd, &(struct sx_stat){ 0 }), -EIO);
	assert_int_not_equal(sx_unmount(mp), 0);

	mp = sxt_mount(bd);
	assert_false(inode_exists(mp, tino));
	assert_false(inode_exists(mp, uino));
	assert_true(inode_exists(mp, lino));
	assert_int_equal(sx_readdir(mp, collect_cb, &got), 0);
	{
		u32 late = 0, k;

		for (k = 0; k < got.n; k++)
			if (!strncmp(got.e[k].name, "late", 4))
				late++;
		for (k = 0; k < late; k++) {
			u64 ino;

			snprintf(name, sizeof(name), "late%u", k);
			assert_int_equal(dir_lookup(mp, name, &ino), 0);
			model_add(&m, name, ino);
		}
	}
	assert_dir_is(mp, &m);
	/* every file left is a named one: unlinking them all gives back all space */
	for (i = 0; i < (int)m.n; i++)
		assert_int_equal(sx_unlink(mp, m.e[i].name), 0);
	assert_int_equal(sx_alloc_free_blocks(mp), free0);
	unmount_check(mp, bd);
	free(m.e);
	free(got.e);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- flags and mounts */

/* setflags: the user flags, REFLINK refused, persistence, what the flags forbid. */
static void test_setflags(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_stat st, st2;
	int fd, fd2;

	assert_int_equal(sx_create(mp, "f", 0644, &fd), 0);
	assert_int_equal(sx_create(mp, "g", 0644, &fd2), 0);
	st = fstat_ok(mp, fd);
	assert_int_equal(sx_setflags(mp, fd, SX_DIFLAG_REFLINK), -EINVAL);
	assert_int_equal(sx_setflags(mp, fd, 0x100), -EINVAL);
	assert_int_equal(sx_setflags(mp, fd, SX_DIFLAG_IMMUTABLE), 0);
	st2 = fstat_ok(mp, fd);
	assert_int_equal(st2.st_flags, SX_DIFLAG_IMMUTABLE);
	assert_true(st2.st_ctime_ns > st.st_ctime_ns);
	/* immutable, append-only or swap files cannot gain or lose names */
	assert_int_equal(sx_link(mp, fd, "f2"), -EPERM);
	assert_int_equal(sx_unlink(mp, "f"), -EPERM);
	assert_int_equal(sx_rename(mp, "f", "h"), -EPERM);
	assert_int_equal(sx_rename(mp, "g", "f"), -EPERM);
	assert_int_equal(sx_setflags(mp, fd, SX_DIFLAG_APPEND | SX_DIFLAG_SWAPFILE), 0);
	assert_int_equal(sx_unlink(mp, "f"), -EPERM);
	assert_int_equal(sx_close(mp, fd), 0);
	unmount_check(mp, bd);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "f", &fd), 0);
	assert_int_equal(fstat_ok(mp, fd).st_flags, SX_DIFLAG_APPEND | SX_DIFLAG_SWAPFILE);
	assert_int_equal(sx_setflags(mp, fd, 0), 0);
	assert_int_equal(sx_unlink(mp, "f"), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	unmount_check(mp, bd);
	sx_bdev_destroy(bd);
}

/* A read-only mount: lookups work, changes give -EROFS. */
static void test_rdonly(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_RDONLY };
	struct sx_mount *mp = sxt_mount(bd);
	struct model m = { 0 };
	int fd;

	model_add(&m, "a", create_closed(mp, "a"));
	assert_int_equal(sx_unmount(mp), 0);
	assert_int_equal(sx_mount(bd, &mo, &mp), 0);
	assert_dir_is(mp, &m);
	assert_int_equal(sx_create(mp, "b", 0644, &fd), -EROFS);
	assert_int_equal(sx_create(mp, "b/", 0644, &fd), -EINVAL);
	assert_int_equal(sx_open_tmpfile(mp, 0644, &fd), -EROFS);
	assert_int_equal(sx_unlink(mp, "a"), -EROFS);
	assert_int_equal(sx_rename(mp, "a", "b"), -EROFS);
	assert_int_equal(sx_open(mp, "a", &fd), 0);
	assert_int_equal(sx_link(mp, fd, "c"), -EROFS);
	assert_int_equal(sx_setflags(mp, fd, SX_DIFLAG_APPEND), -EROFS);
	assert_int_equal(fstat_ok(mp, fd).st_nlink, 1);
	assert_int_equal(sx_close(mp, fd), 0);
	assert_int_equal(sx_unmount(mp), 0);
	free(m.e);
	sx_bdev_destroy(bd);
}

/* After a shutdown every operation gives -EIO (close still releases). */
static void test_shutdown(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_stat st;
	struct model m = { 0 };
	int fd, fd2;

	create_closed(mp, "a");
	assert_int_equal(sx_open(mp, "a", &fd), 0);
	assert_int_equal(sx_sync(mp), 0);
	sx_shutdown(mp);
	assert_int_equal(sx_create(mp, "b", 0644, &fd2), -EIO);
	assert_int_equal(sx_open(mp, "a", &fd2), -EIO);
	assert_int_equal(sx_open_tmpfile(mp, 0644, &fd2), -EIO);
	assert_int_equal(sx_unlink(mp, "a"), -EIO);
	assert_int_equal(sx_rename(mp, "a", "b"), -EIO);
	assert_int_equal(sx_link(mp, fd, "c"), -EIO);
	assert_int_equal(sx_fstat(mp, fd, &st), -EIO);
	assert_int_equal(sx_setflags(mp, fd, 0), -EIO);
	assert_int_equal(sx_readdir(mp, collect_cb, &m), -EIO);
	sx_close(mp, fd);
	assert_int_equal(sx_close(mp, fd), -EBADF);
	assert_int_not_equal(sx_unmount(mp), 0);
	mp = sxt_mount(bd);
	assert_int_equal(sx_open(mp, "a", &fd), 0);
	unmount_check(mp, bd);
	sx_bdev_destroy(bd);
}

/* readdir: stopping early, and a callback that changes the directory. */
static int stop_cb(void *arg, const char *name, u64 ino)
{
	u32 *n = arg;

	return ++*n == 5 ? 42 : 0;
}

struct unlink_walk {
	struct sx_mount	*mp;
	struct model	seen;
};

/* readdir callback that unlinks every name it is given. */
static int unlink_cb(void *arg, const char *name, u64 ino)
{
	struct unlink_walk *w = arg;

	model_add(&w->seen, name, ino);
	return sx_unlink(w->mp, name);
}

/* sx_readdir's stop value, and removing names from inside the walk. */
static void test_readdir(void **state)
{
	struct sx_bdev *bd = sxt_memfs(16 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct unlink_walk w = { .mp = mp };
	struct model m = { 0 };
	u32 n = 0, i;
	char name[16];

	for (i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "r%u", i);
		model_add(&m, name, create_closed(mp, name));
	}
	assert_int_equal(sx_readdir(mp, stop_cb, &n), 42);
	assert_int_equal(n, 5);
	/* each name exactly once, although the walk unlinks as it goes */
	assert_int_equal(sx_readdir(mp, unlink_cb, &w), 0);
	assert_int_equal(w.seen.n, m.n);
	qsort(w.seen.e, w.seen.n, sizeof(*w.seen.e), ment_cmp);
	qsort(m.e, m.n, sizeof(*m.e), ment_cmp);
	for (i = 0; i < m.n; i++) {
		assert_string_equal(w.seen.e[i].name, m.e[i].name);
		assert_int_equal(w.seen.e[i].ino, m.e[i].ino);
	}
	/* and the directory is empty */
	free(w.seen.e);
	w.seen = (struct model){ 0 };
	assert_dir_is(mp, &w.seen);
	unmount_check(mp, bd);
	free(m.e);
	sx_bdev_destroy(bd);
}

/* ENOSPC from creates and tmpfiles is clean: nothing half made, earlier names intact. */
static void test_enospc(void **state)
{
	/* a 1 MiB log: a tall tree of 3-entry leaves needs big reservations */
	struct sx_bdev *bd = sxt_memfs(3 * MIB, 1024, 1024);
	struct sx_mount *mp = sxt_mount(bd);
	struct model m = { 0 };
	u64 k = 0, free_before = 0, ino, ntmp = 0;
	char name[64];
	int error = 0, fd;

	while (!error) {
		nth_name(k++, name, sizeof(name));
		free_before = sx_alloc_free_blocks(mp);
		error = sx_create(mp, name, 0644, &fd);
		if (!error) {
			model_add(&m, name, fstat_ok(mp, fd).st_ino);
			assert_int_equal(sx_close(mp, fd), 0);
		}
	}
	assert_int_equal(error, -ENOSPC);
	assert_int_equal(sx_alloc_free_blocks(mp), free_before);
	assert_int_equal(dir_lookup(mp, name, &ino), -ENOENT);
	/* use up what is left with tmpfiles, then they fail cleanly too */
	while ((error = sx_open_tmpfile(mp, 0644, &fd)) == 0)
		ntmp++;
	assert_int_equal(error, -ENOSPC);
	assert_int_equal(sx_alloc_free_blocks(mp), 0);
	/* a new name may need a block: -ENOSPC and no change, or success */
	error = sx_rename(mp, m.e[0].name, "renamed-x");
	if (error == 0)
		snprintf(m.e[0].name, sizeof(m.e[0].name), "renamed-x");
	else
		assert_int_equal(error, -ENOSPC);
	assert_lookups(mp, &m);
	assert_dir_is(mp, &m);
	/* unmount closes the tmpfiles and frees them */
	unmount_check(mp, bd);
	mp = sxt_mount(bd);
	assert_dir_is(mp, &m);
	/* the tmpfiles' blocks came back (there may have been no room for any) */
	assert_int_equal(sx_alloc_free_blocks(mp) >= ntmp, true);
	/* space comes back */
	while (m.n > 10)
		m_unlink(mp, &m, 0);
	assert_true(sx_alloc_free_blocks(mp) > 0);
	m_create(mp, &m, "after");
	assert_dir_is(mp, &m);
	unmount_check(mp, bd);
	free(m.e);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- verifier and checker */

/* A directory B+tree block (an entry page) of the mounted fs. */
static u64 some_dirbt_leaf(struct sx_mount *mp)
{
	struct sx_inode *dp = root_inode(mp);
	u64 bno;

	sx_ilock(dp, SX_ILOCK_EXCL);
	assert_int_equal(dp->i_format, SX_DIF_BTREE);
	bno = dp->i_broot;
	sx_iunlock(dp, SX_ILOCK_EXCL);
	sx_irele(dp);
	return bno;
}

/* The record verifier rejects each kind of bad entry. */
static void test_record_verifier(void **state)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct sx_ddir_rec de, bad;
	const char *nm = "entry";

	memset(&de, 0, sizeof(de));
	de.de_namelen = cpu_to_le16(5);
	memcpy(de.de_name, nm, 5);
	de.de_hash = cpu_to_le64(sx_dir_hash(nm, 5));
	de.de_ino = cpu_to_le64(mp->m_sb.sb_datastart);
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &de), 0);
	assert_true(sx_dirbt_ops.bo_key(&de) == sx_dir_hash(nm, 5));
	assert_int_equal(sx_dirbt_ops.bo_recsize, sizeof(struct sx_ddir_rec));

	bad = de;
	bad.de_namelen = 0;
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	bad = de;
	bad.de_namelen = cpu_to_le16(256);
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	bad = de;
	bad.de_name[2] = '/';
	bad.de_hash = cpu_to_le64(sx_dir_hash(bad.de_name, 5));
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	bad = de;
	bad.de_name[2] = 0;
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	bad = de;
	bad.de_name[7] = 'z';		/* past the length */
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	bad = de;
	bad.de_pad[3] = 1;
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	bad = de;
	bad.de_hash = cpu_to_le64(sx_dir_hash(nm, 5) ^ 1);
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	bad = de;
	bad.de_ino = cpu_to_le64(mp->m_sb.sb_datastart - 1);
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	bad = de;
	bad.de_ino = cpu_to_le64(mp->m_sb.sb_dblocks);
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	bad = de;
	memset(bad.de_name, 0, sizeof(bad.de_name));
	bad.de_name[0] = bad.de_name[1] = '.';
	bad.de_namelen = cpu_to_le16(2);
	bad.de_hash = cpu_to_le64(sx_dir_hash("..", 2));
	assert_int_equal(sx_dirbt_ops.bo_verify_rec(mp, &bad), -EFSCORRUPTED);
	assert_int_equal(sx_unmount(mp), 0);
	sx_bdev_destroy(bd);
}

/* Read block @blkno of @bd. */
static u8 *get_block(struct sx_bdev *bd, u32 bs, u64 blkno)
{
	u8 *buf = malloc(bs);

	assert_non_null(buf);
	sxt_bdev_peek(bd, blkno * bs, buf, bs);
	return buf;
}

/* Write block @blkno back with a fresh CRC. */
static void put_block(struct sx_bdev *bd, u32 bs, u64 blkno, u8 *buf)
{
	struct sx_dblk_hdr *hdr = (struct sx_dblk_hdr *)buf;

	hdr->bh_crc = cpu_to_le32(sx_cksum_skip(buf, bs, offsetof(struct sx_dblk_hdr, bh_crc)));
	sxt_bdev_poke(bd, blkno * bs, buf, bs);
	free(buf);
}

/* A filesystem with @n names ("c0".."c<n-1>") of which c1 has two names; unmounted. */
static struct sx_bdev *names_fs(u32 n, u64 *root, u64 *ino1)
{
	struct sx_bdev *bd = sxt_memfs(8 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	char name[16];
	u32 i;
	int fd;

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		create_closed(mp, name);
	}
	assert_int_equal(sx_open(mp, "c1", &fd), 0);
	*ino1 = fstat_ok(mp, fd).st_ino;
	assert_int_equal(sx_link(mp, fd, "c1-again"), 0);
	assert_int_equal(sx_close(mp, fd), 0);
	*root = mp->m_rootino;
	unmount_check(mp, bd);
	return bd;
}

/* The checker: names against link counts, bad entries, bad directory blocks. */
static void test_checker(void **state)
{
	struct sxt_text r;
	struct sx_bdev *bd;
	struct sx_dinode *di;
	u64 root, ino1;
	u8 *blk;
	u32 bs = 4096;

	/* a link count one too high */
	bd = names_fs(5, &root, &ino1);
	blk = get_block(bd, bs, ino1);
	di = (struct sx_dinode *)blk;
	di->di_nlink = cpu_to_le32(3);
	put_block(bd, bs, ino1, blk);
	assert_true(sxc_checker(bd, 0, &r) > 0);
	assert_true(sxt_text_has(&r, "link"));
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* an inline entry whose name no longer matches its hash */
	bd = names_fs(5, &root, &ino1);
	blk = get_block(bd, bs, root);
	{
		struct sx_ddir_rec *de = (struct sx_ddir_rec *)(blk + SX_DINODE_CORE);

		assert_int_equal(le16_to_cpu(((struct sx_dinode *)blk)->di_format), SX_DIF_INLINE);
		de[2].de_name[0] ^= 0x20;
	}
	put_block(bd, bs, root, blk);
	assert_true(sxc_checker(bd, 0, &r) > 0);
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* an entry pointing at a block that is no inode */
	bd = names_fs(5, &root, &ino1);
	blk = get_block(bd, bs, root);
	{
		struct sx_ddir_rec *de = (struct sx_ddir_rec *)(blk + SX_DINODE_CORE);

		de[0].de_ino = cpu_to_le64(le64_to_cpu(de[0].de_ino) + 500);
	}
	put_block(bd, bs, root, blk);
	assert_true(sxc_checker(bd, 0, &r) > 0);
	sxt_text_free(&r);
	sx_bdev_destroy(bd);

	/* a damaged directory B+tree block */
	bd = names_fs(100, &root, &ino1);
	{
		struct sx_mount *mp = sxt_mount(bd);
		u64 bno = some_dirbt_leaf(mp);

		assert_int_equal(sx_unmount(mp), 0);
		blk = get_block(bd, bs, bno);
		((struct sx_dbtree_block *)blk)->bt_numrecs = cpu_to_le16(0xfff);
		put_block(bd, bs, bno, blk);
	}
	assert_true(sxc_checker(bd, 0, &r) > 0);
	sxt_text_free(&r);
	sx_bdev_destroy(bd);
}

/* ---------------------------------------------------------------- threads */

struct worker {
	struct sx_mount	*mp;
	u32		id;
	int		error;
};

/* Create, link, rename and unlink names of one's own while others do too. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char a[32], b[32], c[32];
	u32 i;
	int fd, error = 0;

	sx_thread_enter();
	for (i = 0; i < 300 && !error; i++) {
		snprintf(a, sizeof(a), "w%u-%u", w->id, i);
		snprintf(b, sizeof(b), "w%u-%u-b", w->id, i);
		snprintf(c, sizeof(c), "w%u-%u-c", w->id, i);
		error = sx_create(w->mp, a, 0644, &fd);
		if (!error)
			error = sx_link(w->mp, fd, b);
		if (!error)
			error = sx_close(w->mp, fd);
		if (!error && i % 2)
			error = sx_rename(w->mp, b, c);
		if (!error && i % 3 == 0)
			error = sx_unlink(w->mp, a);
	}
	w->error = error;
	sx_thread_exit();
	return NULL;
}

/* Four threads of name operations at once end in the expected directory. */
static void test_threads(void **state)
{
	struct sx_bdev *bd = sxt_memfs(32 * MIB, 4096, 0);
	struct sx_mount *mp = sxt_mount(bd);
	struct worker w[4];
	pthread_t th[4];
	struct model m = { 0 };
	u32 t, i;

	for (t = 0; t < 4; t++) {
		w[t] = (struct worker){ .mp = mp, .id = t };
		assert_int_equal(pthread_create(&th[t], NULL, worker_main, &w[t]), 0);
	}
	for (t = 0; t < 4; t++) {
		pthread_join(th[t], NULL);
		assert_int_equal(w[t].error, 0);
	}
	assert_int_equal(sx_readdir(mp, collect_cb, &m), 0);
	assert_int_equal(m.n, 4 * (200 + 150 + 150));
	for (t = 0; t < 4; t++)
		for (i = 0; i < 300; i++) {
			char a[32], b[32], c[32];

			snprintf(a, sizeof(a), "w%u-%u", t, i);
			snprintf(b, sizeof(b), "w%u-%u-b", t, i);
			snprintf(c, sizeof(c), "w%u-%u-c", t, i);
			assert_int_equal(model_find(&m, a) >= 0, i % 3 != 0);
			assert_int_equal(model_find(&m, b) >= 0, i % 2 == 0);
			assert_int_equal(model_find(&m, c) >= 0, i % 2 == 1);
		}
	unmount_check(mp, bd);
	free(m.e);
	sx_bdev_destroy(bd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_format),
		cmocka_unit_test(test_name_checks),
		cmocka_unit_test(test_create_open_close),
		cmocka_unit_test(test_dir_op_refusals),
		cmocka_unit_test(test_fstat),
		cmocka_unit_test(test_generation),
		cmocka_unit_test(test_many_names_4k),
		cmocka_unit_test(test_many_names_512),
		cmocka_unit_test(test_random_ops),
		cmocka_unit_test(test_collisions_inline),
		cmocka_unit_test(test_collisions_btree),
		cmocka_unit_test(test_unlink_open),
		cmocka_unit_test(test_link),
		cmocka_unit_test(test_rename),
		cmocka_unit_test(test_tmpfile),
		cmocka_unit_test(test_crash_recovery),
		cmocka_unit_test(test_setflags),
		cmocka_unit_test(test_rdonly),
		cmocka_unit_test(test_shutdown),
		cmocka_unit_test(test_readdir),
		cmocka_unit_test(test_enospc),
		cmocka_unit_test(test_record_verifier),
		cmocka_unit_test(test_checker),
		cmocka_unit_test(test_threads),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
