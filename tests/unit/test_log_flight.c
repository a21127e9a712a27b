// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Forces in flight (SX_MOUNT_OVERLAP_FORCES): a leader whose force needs
 * nothing of the forces before it lets the force lock and the lead go once
 * its records are written, and the next leader writes while it flushes.
 *
 * What must hold: the next force writes and flushes while the first one's
 * flush has not returned (before, it waited behind the first one's leader
 * until that force was done); a force whose flush returned first still
 * completes after the force before it, so no caller hears "durable" while
 * a record before its own may be lost; a force before it that fails fails
 * it too; a power cut between two forces in flight loses only what no
 * caller was told was durable; a remap of data written in place waits for
 * the flush in flight, as it waited for a flush of its own when forces
 * were serial.  The last test cuts the power at fixed writes of four
 * threads' atomic writes and checks each file against what its thread was
 * told.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include <unistd.h>
#include "sxtest.h"
#include "sxshim.h"
#include "log_priv.h"
#include "dev.h"
#include <swapext/device.h>

#define MIB		(1ull << 20)
#define BS		4096u
#define NS_PER_S	1000000000ull

/* An atomic write of a block of @byte at offset 0 of @fd, in its own thread. */
struct aw {
	struct sx_mount	*mp;
	int		fd;
	u8		byte;
	int		error;
	bool		done;		/* atomic: the thread finished */
};

static void *aw_run(void *arg)
{
	struct aw *w = arg;
	u8 buf[BS];

	sx_thread_enter();
	memset(buf, w->byte, sizeof(buf));
	w->error = sx_atomic_write(w->mp, w->fd, buf, BS, 0, 0);
	__atomic_store_n(&w->done, true, __ATOMIC_SEQ_CST);
	sx_thread_exit();
	return NULL;
}

static bool aw_done(struct aw *w)
{
	return __atomic_load_n(&w->done, __ATOMIC_SEQ_CST);
}

/* A memory device with a new filesystem that has the atomic_swap feature. */
static struct sx_bdev *atomic_memfs(void)
{
	struct sx_mkfs_opts mo = {
		.mk_blocksize = BS,
		.mk_feat_log_incompat = SX_FEAT_LOG_INCOMPAT_ATOMIC_SWAP,
	};
	struct sx_bdev *bd;

	assert_int_equal(sx_memdev_create(16 * MIB, 512, &bd), 0);
	assert_int_equal(sx_mkfs(bd, &mo), 0);
	return bd;
}

static struct sx_mount *mount_overlap(struct sx_bdev *bd)
{
	struct sx_mount_opts mo = { .mo_flags = SX_MOUNT_OVERLAP_FORCES };
	struct sx_mount *mp;

	assert_int_equal(sx_mount(bd, &mo, &mp), 0);
	return mp;
}

/* Files a and b, block 0 of each durable with 0x10 and 0x11. */
static void two_files(struct sx_mount *mp, struct aw w[2])
{
	static const char *const names[] = { "a", "b" };
	int i;

	for (i = 0; i < 2; i++) {
		w[i] = (struct aw){ .mp = mp, .byte = (u8)(0x10 + i) };
		assert_int_equal(sx_create(mp, names[i], 0644, &w[i].fd), 0);
		aw_run(&w[i]);
		assert_int_equal(w[i].error, 0);
		w[i].done = false;
		w[i].byte = (u8)(0x20 + i);
	}
}

/* Block 0 of @name: its byte if all of it holds one, else -1. */
static int block_byte(struct sx_mount *mp, const char *name)
{
	u8 buf[BS];
	int fd;
	u32 i;

	assert_int_equal(sx_open(mp, name, &fd), 0);
	assert_int_equal(sx_pread(mp, fd, buf, BS, 0), (s64)BS);
	assert_int_equal(sx_close(mp, fd), 0);
	for (i = 1; i < BS; i++)
		if (buf[i] != buf[0])
			return -1;
	return buf[0];
}

static void check_clean(struct sx_bdev *bd)
{
	u64 problems = 1;

	assert_int_equal(sx_check(bd, NULL, NULL, &problems), 0);
	assert_int_equal(problems, 0);
}

/* What the hook inside A's flush saw of B. */
struct second {
	struct sxt_shim	*sh;
	struct sx_crashdev *cd;
	struct aw	*b;
	pthread_t	th;
	u64		f0;		/* flushes before A's */
	bool		cut;		/* cut the power at B's record write */
	bool		started;
	bool		b_flushed;	/* B's flush went through while A's had not returned */
	bool		b_waited;	/* B was not done 50 ms after */
	bool		b_done;		/* B returned while A's flush had not */
};

static bool flushes_past(struct second *s, u64 n)
{
	u64 start = sx_now_ns();

	do {
		if (sxt_shim_count(&s->sh->sh_flushes) >= n)
			return true;
		usleep(1000);
	} while (sx_now_ns() - start < 30 * NS_PER_S);
	return false;
}

static bool b_returns(struct second *s)
{
	u64 start = sx_now_ns();

	do {
		if (aw_done(s->b))
			return true;
		usleep(1000);
	} while (sx_now_ns() - start < 30 * NS_PER_S);
	return false;
}

/*
 * The hook, inside A's flush once the device's flush returned: B writes.
 * Its force must write and flush now (the flush count passes A's), and
 * then wait for A's.  No asserts here (not the main thread).
 */
static void start_b(void *arg)
{
	struct second *s = arg;

	if (s->cut) {
		struct sx_crashdev_stats st;

		sx_crashdev_get_stats(s->cd, &st);
		sx_crashdev_cut_at_write(s->cd, st.cs_writes + 1, SX_CRASH_DROP);
	}
	s->started = !pthread_create(&s->th, NULL, aw_run, s->b);
	if (!s->started)
		return;
	if (s->cut) {
		s->b_done = b_returns(s);
		return;
	}
	s->b_flushed = flushes_past(s, s->f0 + 2);
	usleep(50 * 1000);
	s->b_waited = !aw_done(s->b);
}

/* Two files on a crash device behind a shim, mounted with forces in flight. */
struct pair {
	struct sx_bdev	*mem, *cbd;
	struct sx_crashdev *cd;
	struct sxt_shim	sh;
	struct sx_mount	*mp;
	struct aw	w[2];
	struct second	s;
};

static void pair_setup(struct pair *p)
{
	p->mem = atomic_memfs();
	assert_int_equal(sx_crashdev_create(p->mem, 1, &p->cbd, &p->cd), 0);
	sxt_shim_init(&p->sh, p->cbd);
	p->mp = mount_overlap(&p->sh.sh_bdev);
	two_files(p->mp, p->w);
	p->s.sh = &p->sh;
	p->s.cd = p->cd;
	p->s.b = &p->w[1];
}

/* Run A's atomic write with start_b() armed inside its flush; join both. */
static void pair_run(struct pair *p)
{
	pthread_t ta;

	p->s.f0 = sxt_shim_count(&p->sh.sh_flushes);
	sxt_shim_hook_flush(&p->sh, start_b, &p->s);
	assert_int_equal(pthread_create(&ta, NULL, aw_run, &p->w[0]), 0);
	assert_int_equal(pthread_join(ta, NULL), 0);
	assert_true(p->s.started);
	assert_int_equal(pthread_join(p->s.th, NULL), 0);
}

/*
 * Unmount (shut down: the power may be gone), recover on the device
 * below, and check that block 0 of a holds one of @a and of b one of @b;
 * the checker is clean.
 */
static void pair_finish(struct pair *p, const int a[2], const int b[2])
{
	int got;

	sx_shutdown(p->mp);
	sx_unmount(p->mp);
	p->mp = sxt_mount(p->mem);
	got = block_byte(p->mp, "a");
	assert_true(got == a[0] || got == a[1]);
	got = block_byte(p->mp, "b");
	assert_true(got == b[0] || got == b[1]);
	assert_int_equal(sx_unmount(p->mp), 0);
	check_clean(p->mem);
	sx_bdev_destroy(p->cbd);
	sx_bdev_destroy(p->mem);
}

/*
 * B's force writes and flushes while A's flush is running, then waits
 * until A's force completed: both durable after a cut that keeps only
 * what was flushed.
 */
static void test_flight_overlaps_in_order(void **state)
{
	static const int a[2] = { 0x20, 0x20 }, b[2] = { 0x21, 0x21 };
	struct sx_log_stats s0, s1;
	struct pair p = { 0 };

	pair_setup(&p);
	sx_log_get_stats(p.mp, &s0);
	pair_run(&p);
	assert_true(p.s.b_flushed);
	assert_true(p.s.b_waited);
	assert_int_equal(p.w[0].error, 0);
	assert_int_equal(p.w[1].error, 0);
	sx_log_get_stats(p.mp, &s1);
	assert_int_equal(s1.ls_flights - s0.ls_flights, 2);
	assert_int_equal(sxt_shim_count(&p.sh.sh_flushes) - p.s.f0, 2);
	sx_crashdev_cut_now(p.cd, SX_CRASH_DROP);
	pair_finish(&p, a, b);
}

/*
 * A's flush fails; B's, begun after, succeeds, but B must not hear its
 * write is durable: a record before its own may be lost.  Both fail with
 * -EIO, and after a remount each file holds all its old block or all the
 * new one.
 */
static void test_flight_fails_after_failed(void **state)
{
	static const int a[2] = { 0x10, 0x20 }, b[2] = { 0x11, 0x21 };
	struct pair p = { 0 };

	pair_setup(&p);
	sx_crashdev_fail(p.cd, SX_IO_FLUSH, 1, false, -EIO);
	pair_run(&p);
	assert_true(p.s.b_flushed);
	assert_true(p.s.b_waited);
	assert_int_equal(p.w[0].error, -EIO);
	assert_int_equal(p.w[1].error, -EIO);
	assert_true(sx_is_shutdown(p.mp));
	sx_crashdev_clear_faults(p.cd);
	pair_finish(&p, a, b);
}

/*
 * The power goes at B's record write, after A's flush returned: B fails,
 * A (its force completes on a mount that is down) fails too; after
 * recovery A's write, which the device had flushed, is there and B's is
 * not.
 */
static void test_flight_cut_between(void **state)
{
	static const int a[2] = { 0x20, 0x20 }, b[2] = { 0x11, 0x11 };
	struct pair p = { 0 };

	pair_setup(&p);
	p.s.cut = true;
	pair_run(&p);
	assert_true(p.s.b_done);	/* B did not wait for A to fail */
	assert_int_equal(p.w[1].error, -EIO);
	assert_int_equal(p.w[0].error, -EIO);
	pair_finish(&p, a, b);
}

/*
 * A device that can lose one write: once armed, a block written full of
 * GATE_BYTE is volatile until a flush returns; the first flush runs a
 * hook before it goes down, and the second one begins with a power cut
 * that puts back what that block held before and fails every I/O after.
 */
#define GATE_BYTE	0x44

struct gate {
	struct sx_bdev	g_bdev;
	struct sx_bdev	*g_lower;
	pthread_mutex_t	g_lock;
	bool		g_armed;
	bool		g_dead;
	u8		*g_old;		/* the volatile block's old contents, or NULL */
	uint64_t	g_off;
	int		g_flushes;	/* atomic: flushes since armed */
	void		(*g_hook)(void *arg);
	void		*g_arg;
};

static int gate_read(struct sx_bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct gate *g = bd->bd_ctx;

	return g->g_lower->bd_ops->read(g->g_lower, off, buf, len);
}

static int gate_write(struct sx_bdev *bd, uint64_t off, const void *buf, size_t len,
		      unsigned int flags)
{
	struct gate *g = bd->bd_ctx;
	const u8 *p = buf;
	int error = -EIO;

	pthread_mutex_lock(&g->g_lock);
	if (g->g_dead)
		goto out;
	if (g->g_armed && !g->g_old && len == BS && p[0] == GATE_BYTE && p[BS - 1] == GATE_BYTE) {
		g->g_old = malloc(BS);
		if (!g->g_old || g->g_lower->bd_ops->read(g->g_lower, off, g->g_old, BS))
			goto out;
		g->g_off = off;
	}
	error = g->g_lower->bd_ops->write(g->g_lower, off, buf, len, flags);
out:
	pthread_mutex_unlock(&g->g_lock);
	return error;
}

static int gate_flush(struct sx_bdev *bd)
{
	struct gate *g = bd->bd_ctx;
	int n = 0, error = -EIO;

	if (__atomic_load_n(&g->g_armed, __ATOMIC_SEQ_CST))
		n = __atomic_add_fetch(&g->g_flushes, 1, __ATOMIC_SEQ_CST);
	if (n == 1)
		g->g_hook(g->g_arg);
	pthread_mutex_lock(&g->g_lock);
	if (n == 2 && !g->g_dead) {
		if (g->g_old)
			(void)g->g_lower->bd_ops->write(g->g_lower, g->g_off, g->g_old, BS, 0);
		g->g_dead = true;
	}
	if (!g->g_dead) {
		free(g->g_old);		/* a flush that returns makes it durable */
		g->g_old = NULL;
		error = g->g_lower->bd_ops->flush(g->g_lower);
	}
	pthread_mutex_unlock(&g->g_lock);
	return error;
}

static const struct sx_bdev_ops gate_ops = {
	.read	= gate_read,
	.write	= gate_write,
	.flush	= gate_flush,
};

/* The clone of src into dst and the fsync of dst, in their own thread. */
struct cloner {
	struct sx_mount	*mp;
	int		src, dst;
	int		error;
	pthread_t	th;
	struct gate	*g;
};

static void *cloner_run(void *arg)
{
	struct cloner *c = arg;

	sx_thread_enter();
	c->error = sx_clone(c->mp, c->dst, c->src);
	if (!c->error)
		c->error = sx_fsync(c->mp, c->dst);
	sx_thread_exit();
	return NULL;
}

/* Inside the first force's flush: the clone, and its force's flush (the cut), 1 s at most. */
static void start_cloner(void *arg)
{
	struct cloner *c = arg;
	int i;

	if (pthread_create(&c->th, NULL, cloner_run, c))
		return;
	for (i = 0; i < 1000 && __atomic_load_n(&c->g->g_flushes, __ATOMIC_SEQ_CST) < 2; i++)
		usleep(1000);
}

/*
 * Data written in place over a durable mapping must reach the media
 * before a record that maps it elsewhere.  src's block is rewritten in
 * place; a force without a remap (x's create) flies, and while its flush
 * runs, a clone of src into dst commits and its fsync forces.  That
 * force must not write its record before the flush in flight returned
 * (it flushed the data first when forces were serial).  It did: the
 * flight had cleared the "data in place since the last flush" flag as
 * its flush began, so the clone's force found nothing to flush, flew,
 * and a cut that kept only its record left dst mapping src's old bytes,
 * which dst never held.
 */
static void test_flight_remap_waits(void **state)
{
	struct sx_bdev *mem = sxt_memfs(16 * MIB, BS, 0);
	struct cloner c = { 0 };
	struct gate g = { 0 };
	struct sx_mount *mp;
	u8 buf[BS];
	int x, src, dst;
	s64 n;

	pthread_mutex_init(&g.g_lock, NULL);
	g.g_lower = mem;
	g.g_bdev.bd_ops = &gate_ops;
	g.g_bdev.bd_ctx = &g;
	g.g_bdev.bd_size = mem->bd_size;
	g.g_bdev.bd_sectsize = mem->bd_sectsize;
	mp = mount_overlap(&g.g_bdev);
	assert_int_equal(sx_create(mp, "src", 0644, &src), 0);
	assert_int_equal(sx_create(mp, "dst", 0644, &dst), 0);
	memset(buf, 0x11, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, src, buf, BS, 0), (s64)BS);
	assert_int_equal(sx_fsync(mp, src), 0);
	assert_int_equal(sx_checkpoint(mp), 0);

	__atomic_store_n(&g.g_armed, true, __ATOMIC_SEQ_CST);
	memset(buf, GATE_BYTE, sizeof(buf));
	assert_int_equal(sx_pwrite(mp, src, buf, BS, 0), (s64)BS);
	assert_non_null(g.g_old);	/* it went in place */
	c = (struct cloner){ .mp = mp, .src = src, .dst = dst, .g = &g };
	g.g_hook = start_cloner;
	g.g_arg = &c;
	assert_int_equal(sx_create(mp, "x", 0644, &x), 0);
	(void)sx_fsync(mp, x);		/* the cut may fail it */
	assert_int_equal(pthread_join(c.th, NULL), 0);
	assert_int_equal(g.g_flushes, 2);	/* the cut came */
	sx_shutdown(mp);
	sx_unmount(mp);

	mp = sxt_mount(mem);
	assert_int_equal(sx_open(mp, "dst", &dst), 0);
	memset(buf, 0, sizeof(buf));
	n = sx_pread(mp, dst, buf, BS, 0);
	/* the clone lost, or made with the new bytes; never src's old ones */
	assert_true(n == 0 || (n == (s64)BS && buf[0] == GATE_BYTE && buf[BS - 1] == GATE_BYTE));
	assert_int_equal(sx_close(mp, dst), 0);
	assert_int_equal(sx_unmount(mp), 0);
	check_clean(mem);
	free(g.g_old);
	pthread_mutex_destroy(&g.g_lock);
	sx_bdev_destroy(mem);
}

#define NTHREADS	4
#define NWRITES		150

/* One thread of the crash test: atomic writes of block 0 of its file, tagged 1, 2, ... */
struct tagger {
	struct sx_mount	*mp;
	int		fd;
	u64		acked;		/* the last tag whose write returned 0 */
	u64		tried;		/* the last tag written */
};

static void tag_fill(u8 *buf, u64 tag)
{
	u32 i;

	for (i = 0; i < BS; i += 8)
		memcpy(buf + i, &tag, 8);
}

static void *tagger_run(void *arg)
{
	struct tagger *t = arg;
	u8 buf[BS];
	u64 tag;

	sx_thread_enter();
	for (tag = 1; tag <= NWRITES; tag++) {
		tag_fill(buf, tag);
		t->tried = tag;
		if (sx_atomic_write(t->mp, t->fd, buf, BS, 0, 0))
			break;
		t->acked = tag;
	}
	sx_thread_exit();
	return NULL;
}

/* The tag block 0 of @fd holds all through, or ~0 if it is torn. */
static u64 tag_read(struct sx_mount *mp, int fd)
{
	u8 buf[BS], want[BS];
	s64 n = sx_pread(mp, fd, buf, BS, 0);
	u64 tag;

	if (n == 0)
		return 0;	/* no write of it survived */
	assert_int_equal(n, (s64)BS);
	memcpy(&tag, buf, 8);
	tag_fill(want, tag);
	return memcmp(buf, want, BS) ? ~0ull : tag;
}

/*
 * Four threads write their own files while forces fly; the power goes at
 * a fixed write after the files were made, each volatile write given a
 * random fate or all lost but the newest.  After recovery each file holds
 * one whole write, no older than the last its thread was told was durable
 * and no newer than the last it tried; the checker is clean.
 */
static void test_flight_crash_threads(void **state)
{
	static const u64 cuts[] = { 3, 17, 40, 77, 131 };
	static const enum sx_crash_mode modes[] = { SX_CRASH_RANDOM, SX_CRASH_NEWEST };
	u64 flights = 0;
	u32 c, m, i;

	for (c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
		for (m = 0; m < 2; m++) {
			struct sx_bdev *mem = atomic_memfs(), *cbd;
			struct tagger t[NTHREADS] = { 0 };
			struct sx_crashdev_stats st;
			struct sx_log_stats ls;
			pthread_t th[NTHREADS];
			struct sx_crashdev *cd;
			struct sx_mount *mp;
			char name[8];

			assert_int_equal(sx_crashdev_create(mem, cuts[c] * 2 + m, &cbd, &cd), 0);
			mp = mount_overlap(cbd);
			for (i = 0; i < NTHREADS; i++) {
				snprintf(name, sizeof(name), "f%u", i);
				t[i].mp = mp;
				assert_int_equal(sx_create(mp, name, 0644, &t[i].fd), 0);
			}
			assert_int_equal(sx_sync(mp), 0);
			sx_crashdev_get_stats(cd, &st);
			sx_crashdev_cut_at_write(cd, st.cs_writes + cuts[c], modes[m]);
			for (i = 0; i < NTHREADS; i++)
				assert_int_equal(pthread_create(&th[i], NULL, tagger_run, &t[i]), 0);
			for (i = 0; i < NTHREADS; i++)
				assert_int_equal(pthread_join(th[i], NULL), 0);
			sx_crashdev_get_stats(cd, &st);
			assert_true(st.cs_dead);
			sx_log_get_stats(mp, &ls);
			flights += ls.ls_flights;
			sx_shutdown(mp);
			sx_unmount(mp);

			mp = sxt_mount(mem);
			for (i = 0; i < NTHREADS; i++) {
				int fd;
				u64 tag;

				snprintf(name, sizeof(name), "f%u", i);
				assert_int_equal(sx_open(mp, name, &fd), 0);
				tag = tag_read(mp, fd);
				if (tag < t[i].acked || tag > t[i].tried)
					fail_msg("cut at %llu, mode %u: file %u holds %llu, told %llu, tried %llu",
						 (unsigned long long)cuts[c], m, i,
						 (unsigned long long)tag, (unsigned long long)t[i].acked,
						 (unsigned long long)t[i].tried);
				assert_int_equal(sx_close(mp, fd), 0);
			}
			assert_int_equal(sx_unmount(mp), 0);
			check_clean(mem);
			sx_bdev_destroy(cbd);
			sx_bdev_destroy(mem);
		}
	}
	/* forces flew in these runs (those a cut failed are not counted) */
	assert_true(flights > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flight_overlaps_in_order),
		cmocka_unit_test(test_flight_fails_after_failed),
		cmocka_unit_test(test_flight_cut_between),
		cmocka_unit_test(test_flight_remap_waits),
		cmocka_unit_test(test_flight_crash_threads),
	};

	sx_thread_enter();
	sxt_quiet();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
