/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Crash-emulating block device.
 *
 * A disk with a volatile write cache may lose, keep or half-write every
 * write that completed since the last cache flush, in any combination.
 * This device wraps another one and passes every write through at once, so
 * the running system sees what it wrote; to be able to undo that at a power
 * cut it remembers, per unit (the lower device's sector), the durable
 * content of every unit written since the last flush (the "base"), and a
 * copy of each volatile write.  At the cut every volatile write is given a
 * fate (kept, dropped, or kept up to a tear boundary), and each touched
 * unit is rebuilt: its base, then the kept bytes of every later write over
 * it, in issue order.  A FUA write is durable at once, so it replaces the
 * base of the units it covers and hides every earlier write there.
 *
 * Fates come from a seeded splitmix64 generator consumed in write order,
 * so a run is reproduced exactly by its seed.
 */
#define _GNU_SOURCE
#include "sx_platform.h"
#include <swapext/device.h>
#include "bdev_os.h"

#include <stdlib.h>

#define SX_CD_HASH_MIN	64	/* initial buckets of the unit table */

/* The durable content of one unit touched since the last flush. */
struct sx_cd_unit {
	struct sx_cd_unit *cu_next;	/* hash chain */
	u64		cu_idx;		/* unit number (offset / unit size) */
	u64		cu_seq;		/* writes up to this number are hidden */
	u8		cu_data[];
};

/* A write that completed but is not yet durable. */
struct sx_cd_write {
	struct sx_cd_write *cw_next;	/* issue order */
	u64		cw_seq;		/* write number */
	u64		cw_off;
	size_t		cw_len;
	size_t		cw_keep;	/* bytes kept at the cut (a prefix) */
	u8		cw_data[];
};

/* An injected I/O error for one kind of I/O. */
struct sx_cd_fault {
	bool		cf_armed;
	bool		cf_forever;
	u64		cf_base;	/* I/O count of that kind when armed */
	u64		cf_nth;
	int		cf_error;
};

struct sx_crashdev {
	struct sx_bdev	cd_bdev;	/* what the engine uses */
	struct sx_bdev	*cd_lower;
	pthread_mutex_t	cd_lock;	/* serialises all I/O and control */
	u64		cd_rng;		/* splitmix64 state */
	u32		cd_unit;	/* tracking unit: lower's sector size */
	u32		cd_tsect;	/* tear granularity */

	struct sx_cd_write *cd_vhead;	/* volatile writes, oldest first */
	struct sx_cd_write **cd_vtail;
	struct sx_cd_unit **cd_hash;	/* units touched since the flush */
	size_t		cd_hash_size;	/* buckets, a power of two */
	size_t		cd_nunits;

	u64		cd_cut_at;	/* write number that cuts power, 0: none */
	enum sx_crash_mode cd_cut_mode;
	struct sx_cd_fault cd_fault[3];	/* by enum sx_io_kind */
	struct sx_crashdev_stats cd_stats;
	void		(*cd_hook)(void *arg, u64 n);	/* before write n */
	void		*cd_hook_arg;
};

/* Next value of the splitmix64 generator. */
static u64 sx_cd_rand(struct sx_crashdev *cd)
{
	u64 z = (cd->cd_rng += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The crash device behind @bd. */
static struct sx_crashdev *sx_cd_of(struct sx_bdev *bd)
{
	return bd->bd_ctx;
}

/* Bucket of unit @idx (Fibonacci hashing: units are often sequential). */
static size_t sx_cd_bucket(const struct sx_crashdev *cd, u64 idx)
{
	return (size_t)((idx * 0x9E3779B97F4A7C15ull) >> 32) & (cd->cd_hash_size - 1);
}

/* The base record of unit @idx, or NULL if it was not touched. */
static struct sx_cd_unit *sx_cd_unit_find(const struct sx_crashdev *cd, u64 idx)
{
	struct sx_cd_unit *cu;

	if (!cd->cd_hash)
		return NULL;
	for (cu = cd->cd_hash[sx_cd_bucket(cd, idx)]; cu; cu = cu->cu_next)
		if (cu->cu_idx == idx)
			return cu;
	return NULL;
}

/* Double the unit table (or create it) to keep chains short. */
static int sx_cd_hash_grow(struct sx_crashdev *cd)
{
	size_t oldsize = cd->cd_hash_size;
	struct sx_cd_unit **old = cd->cd_hash;
	size_t i;

	cd->cd_hash_size = oldsize ? oldsize * 2 : SX_CD_HASH_MIN;
	cd->cd_hash = calloc(cd->cd_hash_size, sizeof(*cd->cd_hash));
	if (!cd->cd_hash) {
		cd->cd_hash = old;
		cd->cd_hash_size = oldsize;
		return -ENOMEM;
	}
	for (i = 0; i < oldsize; i++) {
		struct sx_cd_unit *cu, *next;

		for (cu = old[i]; cu; cu = next) {
			size_t b = sx_cd_bucket(cd, cu->cu_idx);

			next = cu->cu_next;
			cu->cu_next = cd->cd_hash[b];
			cd->cd_hash[b] = cu;
		}
	}
	free(old);
	return 0;
}

/* Save the durable content of every unit in the range not yet saved. */
static int sx_cd_save_base(struct sx_crashdev *cd, u64 off, size_t len)
{
	u64 idx, end = (off + len) / cd->cd_unit;
	int error;

	for (idx = off / cd->cd_unit; idx < end; idx++) {
		struct sx_cd_unit *cu;
		size_t b;

		if (sx_cd_unit_find(cd, idx))
			continue;
		if (cd->cd_nunits >= cd->cd_hash_size) {
			error = sx_cd_hash_grow(cd);
			if (error)
				return error;
		}
		cu = malloc(sizeof(*cu) + cd->cd_unit);
		if (!cu)
			return -ENOMEM;
		error = cd->cd_lower->bd_ops->read(cd->cd_lower, idx * cd->cd_unit,
						   cu->cu_data, cd->cd_unit);
		if (error) {
			free(cu);
			return error;
		}
		cu->cu_idx = idx;
		cu->cu_seq = 0;
		b = sx_cd_bucket(cd, idx);
		cu->cu_next = cd->cd_hash[b];
		cd->cd_hash[b] = cu;
		cd->cd_nunits++;
	}
	return 0;
}

/* A durable (FUA) write replaces the base of the units it covers. */
static void sx_cd_update_base(struct sx_crashdev *cd, u64 seq, u64 off,
			      const u8 *buf, size_t len)
{
	u64 idx, first = off / cd->cd_unit, end = (off + len) / cd->cd_unit;

	for (idx = first; idx < end; idx++) {
		struct sx_cd_unit *cu = sx_cd_unit_find(cd, idx);

		if (!cu)
			continue;
		memcpy(cu->cu_data, buf + (idx - first) * cd->cd_unit, cd->cd_unit);
		cu->cu_seq = seq;
	}
}

/* Copy a write so that its fate can be decided at a cut. */
static struct sx_cd_write *sx_cd_new_write(u64 seq, u64 off, const void *buf,
					   size_t len)
{
	struct sx_cd_write *cw;

	cw = malloc(sizeof(*cw) + len);
	if (!cw)
		return NULL;
	cw->cw_next = NULL;
	cw->cw_seq = seq;
	cw->cw_off = off;
	cw->cw_len = len;
	cw->cw_keep = len;
	memcpy(cw->cw_data, buf, len);
	return cw;
}

/* Add a completed write to the volatile set, newest last. */
static void sx_cd_add_write(struct sx_crashdev *cd, struct sx_cd_write *cw)
{
	*cd->cd_vtail = cw;
	cd->cd_vtail = &cw->cw_next;
	cd->cd_stats.cs_volatile++;
}

/* Forget every volatile write and saved base: all of it is durable now. */
static void sx_cd_clear_volatile(struct sx_crashdev *cd)
{
	struct sx_cd_write *cw, *cwnext;
	size_t i;

	for (cw = cd->cd_vhead; cw; cw = cwnext) {
		cwnext = cw->cw_next;
		free(cw);
	}
	cd->cd_vhead = NULL;
	cd->cd_vtail = &cd->cd_vhead;
	cd->cd_stats.cs_volatile = 0;

	for (i = 0; i < cd->cd_hash_size; i++) {
		struct sx_cd_unit *cu, *cunext;

		for (cu = cd->cd_hash[i]; cu; cu = cunext) {
			cunext = cu->cu_next;
			free(cu);
		}
	}
	free(cd->cd_hash);
	cd->cd_hash = NULL;
	cd->cd_hash_size = 0;
	cd->cd_nunits = 0;
}

/*
 * Bytes of @cw that reach the media when torn: a prefix ending at a tear
 * boundary strictly inside the write.  A write no boundary crosses cannot
 * tear, so it is kept or dropped whole.
 */
static size_t sx_cd_tear(struct sx_crashdev *cd, const struct sx_cd_write *cw)
{
	u64 first = cw->cw_off / cd->cd_tsect + 1;	/* first boundary inside */
	u64 last = (cw->cw_off + cw->cw_len - 1) / cd->cd_tsect;
	u64 nbound, pick;

	if (last < first)
		return (sx_cd_rand(cd) & 1) ? cw->cw_len : 0;
	nbound = last - first + 1;
	pick = first + sx_cd_rand(cd) % nbound;
	return pick * cd->cd_tsect - cw->cw_off;
}

/* Decide how much of @cw survives under @mode. */
static size_t sx_cd_fate(struct sx_crashdev *cd, const struct sx_cd_write *cw,
			 enum sx_crash_mode mode)
{
	if (mode == SX_CRASH_RANDOM) {
		switch (sx_cd_rand(cd) % 3) {
		case 0:
			mode = SX_CRASH_KEEP;
			break;
		case 1:
			mode = SX_CRASH_DROP;
			break;
		default:
			mode = SX_CRASH_TEAR;
			break;
		}
	}
	switch (mode) {
	case SX_CRASH_KEEP:
		return cw->cw_len;
	case SX_CRASH_DROP:
		return 0;
	default:
		return sx_cd_tear(cd, cw);
	}
}

/* Lay the kept bytes of @cw over the saved units that it is newer than. */
static void sx_cd_apply_write(struct sx_crashdev *cd, const struct sx_cd_write *cw)
{
	u64 pos = cw->cw_off, end = cw->cw_off + cw->cw_keep;

	while (pos < end) {
		u64 idx = pos / cd->cd_unit;
		u64 ustart = idx * cd->cd_unit;
		u64 uend = ustart + cd->cd_unit;
		u64 stop = uend < end ? uend : end;
		struct sx_cd_unit *cu = sx_cd_unit_find(cd, idx);

		/* every unit of a volatile write had its base saved first */
		VERIFY(cu != NULL);
		if (cw->cw_seq > cu->cu_seq)
			memcpy(cu->cu_data + (pos - ustart),
			       cw->cw_data + (pos - cw->cw_off), stop - pos);
		pos = stop;
	}
}

/*
 * Power is lost: give every volatile write its fate, write the surviving
 * image of each touched unit to the lower device, and die.
 */
static void sx_cd_cut(struct sx_crashdev *cd, enum sx_crash_mode mode)
{
	struct sx_cd_write *cw;
	size_t i;

	if (cd->cd_stats.cs_dead)
		return;

	/* fates first, in issue order, so the seed alone decides them */
	for (cw = cd->cd_vhead; cw; cw = cw->cw_next) {
		if (mode == SX_CRASH_NEWEST)
			cw->cw_keep = cw->cw_next ? 0 : cw->cw_len;
		else
			cw->cw_keep = sx_cd_fate(cd, cw, mode);
	}
	for (cw = cd->cd_vhead; cw; cw = cw->cw_next)
		sx_cd_apply_write(cd, cw);

	for (i = 0; i < cd->cd_hash_size; i++) {
		struct sx_cd_unit *cu;

		for (cu = cd->cd_hash[i]; cu; cu = cu->cu_next) {
			int error;

			error = cd->cd_lower->bd_ops->write(cd->cd_lower,
					cu->cu_idx * cd->cd_unit, cu->cu_data,
					cd->cd_unit, 0);
			if (error)
				sx_log_emit(SX_LOG_ERR,
					    "swapext: crashdev: restoring unit %llu failed: %d",
					    (unsigned long long)cu->cu_idx, error);
		}
	}
	/* the post-crash image must survive the lower device's own cache */
	if (cd->cd_lower->bd_ops->flush(cd->cd_lower))
		sx_log_emit(SX_LOG_ERR, "swapext: crashdev: flushing the crash image failed");

	sx_cd_clear_volatile(cd);
	cd->cd_stats.cs_dead = true;
}

/*
 * Count an I/O of @kind and return the armed error if this one is chosen
 * to fail.
 */
static int sx_cd_injected(struct sx_crashdev *cd, enum sx_io_kind kind, u64 count)
{
	struct sx_cd_fault *cf = &cd->cd_fault[kind];
	u64 rel;

	if (!cf->cf_armed)
		return 0;
	rel = count - cf->cf_base;
	if (rel < cf->cf_nth)
		return 0;
	if (!cf->cf_forever)
		cf->cf_armed = false;
	cd->cd_stats.cs_injected_errors++;
	return cf->cf_error;
}

/* Read through to the lower device. */
static int sx_cd_read(struct sx_bdev *bd, u64 off, void *buf, size_t len)
{
	struct sx_crashdev *cd = sx_cd_of(bd);
	int error;

	error = sx_bdev_check_range(bd, off, len);
	if (error || !len)
		return error;

	pthread_mutex_lock(&cd->cd_lock);
	if (cd->cd_stats.cs_dead) {
		error = -EIO;
		goto out_unlock;
	}
	error = sx_cd_injected(cd, SX_IO_READ, ++cd->cd_stats.cs_reads);
	if (error)
		goto out_unlock;
	error = cd->cd_lower->bd_ops->read(cd->cd_lower, off, buf, len);
	if (!error)
		cd->cd_stats.cs_bytes_read += len;
out_unlock:
	pthread_mutex_unlock(&cd->cd_lock);
	return error;
}

/*
 * The write that is in flight when the power goes: it was never
 * acknowledged, so whatever the flags it is as volatile as the rest.
 */
static int sx_cd_write_cut(struct sx_crashdev *cd, u64 seq, u64 off,
			   const void *buf, size_t len)
{
	struct sx_cd_write *cw = NULL;
	int error;

	/*
	 * Nothing of it has reached the lower device, so without a record
	 * the write is simply lost, which is one of its possible fates.
	 */
	error = sx_cd_save_base(cd, off, len);
	if (!error) {
		cw = sx_cd_new_write(seq, off, buf, len);
		if (!cw)
			error = -ENOMEM;
	}
	if (error)
		sx_log_emit(SX_LOG_WARN,
			    "swapext: crashdev: in-flight write %llu not recorded: %d",
			    (unsigned long long)seq, error);
	else
		sx_cd_add_write(cd, cw);
	sx_cd_cut(cd, cd->cd_cut_mode);
	return -EIO;
}

/* Write through to the lower device, remembering what a cut could undo. */
static int sx_cd_write(struct sx_bdev *bd, u64 off, const void *buf, size_t len,
		       unsigned int flags)
{
	struct sx_crashdev *cd = sx_cd_of(bd);
	bool fua = flags & SX_BDEV_FUA;
	struct sx_cd_write *cw;
	u64 seq;
	int error;

	error = sx_bdev_check_range(bd, off, len);
	if (error || !len)
		return error;

	if (cd->cd_hook) {
		bool dead;

		/* outside the lock: the hook may fork, or arm a cut at this write */
		pthread_mutex_lock(&cd->cd_lock);
		seq = cd->cd_stats.cs_writes + 1;
		dead = cd->cd_stats.cs_dead;
		pthread_mutex_unlock(&cd->cd_lock);
		if (!dead)
			cd->cd_hook(cd->cd_hook_arg, seq);
	}

	pthread_mutex_lock(&cd->cd_lock);
	if (cd->cd_stats.cs_dead) {
		error = -EIO;
		goto out_unlock;
	}
	seq = ++cd->cd_stats.cs_writes;
	if (fua)
		cd->cd_stats.cs_fua_writes++;
	if (seq == cd->cd_cut_at) {
		error = sx_cd_write_cut(cd, seq, off, buf, len);
		goto out_unlock;
	}
	/* checked before anything is saved or written: the media stays as it was */
	error = sx_cd_injected(cd, SX_IO_WRITE, seq);
	if (error)
		goto out_unlock;

	if (fua) {
		error = cd->cd_lower->bd_ops->write(cd->cd_lower, off, buf, len, flags);
		if (error)
			goto out_unlock;
		sx_cd_update_base(cd, seq, off, buf, len);
		goto out_done;
	}

	/*
	 * A base saved for a write that then fails is harmless: the unit
	 * reverts to content it really had, one of the outcomes a failed
	 * write may have.
	 */
	error = sx_cd_save_base(cd, off, len);
	if (error)
		goto out_unlock;
	cw = sx_cd_new_write(seq, off, buf, len);
	if (!cw) {
		error = -ENOMEM;
		goto out_unlock;
	}
	error = cd->cd_lower->bd_ops->write(cd->cd_lower, off, buf, len, flags);
	if (error) {
		/* it never completed, so it has no fate to be given */
		free(cw);
		goto out_unlock;
	}
	sx_cd_add_write(cd, cw);
out_done:
	cd->cd_stats.cs_bytes_written += len;
out_unlock:
	pthread_mutex_unlock(&cd->cd_lock);
	return error;
}

/* Make every completed write durable. */
static int sx_cd_flush(struct sx_bdev *bd)
{
	struct sx_crashdev *cd = sx_cd_of(bd);
	int error;

	pthread_mutex_lock(&cd->cd_lock);
	if (cd->cd_stats.cs_dead) {
		error = -EIO;
		goto out_unlock;
	}
	/* a failed flush makes nothing durable: the volatile set stays */
	error = sx_cd_injected(cd, SX_IO_FLUSH, ++cd->cd_stats.cs_flushes);
	if (error)
		goto out_unlock;
	error = cd->cd_lower->bd_ops->flush(cd->cd_lower);
	if (error)
		goto out_unlock;
	sx_cd_clear_volatile(cd);
out_unlock:
	pthread_mutex_unlock(&cd->cd_lock);
	return error;
}

/*
 * Discard leaves the data in place: a discarded range may read back as
 * anything, including what it held, and leaving it costs no crash model.
 */
static int sx_cd_discard(struct sx_bdev *bd, u64 off, u64 len)
{
	struct sx_crashdev *cd = sx_cd_of(bd);
	int error;

	error = sx_bdev_check_range(bd, off, len);
	if (error)
		return error;
	pthread_mutex_lock(&cd->cd_lock);
	if (cd->cd_stats.cs_dead)
		error = -EIO;
	pthread_mutex_unlock(&cd->cd_lock);
	return error;
}

/* Free the wrapper; the lower device stays open and holds the image. */
static void sx_cd_destroy(struct sx_bdev *bd)
{
	struct sx_crashdev *cd = sx_cd_of(bd);

	sx_cd_clear_volatile(cd);
	pthread_mutex_destroy(&cd->cd_lock);
	free(cd);
}

static const struct sx_bdev_ops sx_crashdev_ops = {
	.read		= sx_cd_read,
	.write		= sx_cd_write,
	.flush		= sx_cd_flush,
	.discard	= sx_cd_discard,
	.destroy	= sx_cd_destroy,
};

/* Wrap @lower in a crash-emulating device. */
int sx_crashdev_create(struct sx_bdev *lower, u64 seed, struct sx_bdev **bdp,
		       struct sx_crashdev **cdp)
{
	struct sx_crashdev *cd;
	int error;

	*bdp = NULL;
	if (cdp)
		*cdp = NULL;
	if (!lower || !lower->bd_sectsize ||
	    (lower->bd_sectsize & (lower->bd_sectsize - 1)))
		return -EINVAL;

	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return -ENOMEM;
	error = -pthread_mutex_init(&cd->cd_lock, NULL);
	if (error)
		goto out_free;
	cd->cd_lower = lower;
	cd->cd_rng = seed;
	cd->cd_unit = lower->bd_sectsize;
	cd->cd_tsect = lower->bd_sectsize;
	cd->cd_vtail = &cd->cd_vhead;

	cd->cd_bdev.bd_ops = &sx_crashdev_ops;
	cd->cd_bdev.bd_ctx = cd;
	cd->cd_bdev.bd_size = lower->bd_size;
	cd->cd_bdev.bd_sectsize = lower->bd_sectsize;
	*bdp = &cd->cd_bdev;
	if (cdp)
		*cdp = cd;
	return 0;

out_free:
	free(cd);
	return error;
}

/* Lose power while write number @n is in flight; 0 disarms. */
void sx_crashdev_cut_at_write(struct sx_crashdev *cd, u64 n, enum sx_crash_mode mode)
{
	pthread_mutex_lock(&cd->cd_lock);
	cd->cd_cut_at = n;
	cd->cd_cut_mode = mode;
	pthread_mutex_unlock(&cd->cd_lock);
}

/* Lose power now. */
void sx_crashdev_cut_now(struct sx_crashdev *cd, enum sx_crash_mode mode)
{
	pthread_mutex_lock(&cd->cd_lock);
	sx_cd_cut(cd, mode);
	pthread_mutex_unlock(&cd->cd_lock);
}

/* Make the @nth I/O of @kind from now fail with @error. */
void sx_crashdev_fail(struct sx_crashdev *cd, enum sx_io_kind kind, u64 nth,
		      bool forever, int error)
{
	struct sx_cd_fault *cf;

	VERIFY(kind >= SX_IO_READ && kind <= SX_IO_FLUSH);
	pthread_mutex_lock(&cd->cd_lock);
	cf = &cd->cd_fault[kind];
	cf->cf_armed = nth != 0 && error < 0;
	cf->cf_forever = forever;
	cf->cf_nth = nth;
	cf->cf_error = error;
	switch (kind) {
	case SX_IO_READ:
		cf->cf_base = cd->cd_stats.cs_reads;
		break;
	case SX_IO_WRITE:
		cf->cf_base = cd->cd_stats.cs_writes;
		break;
	case SX_IO_FLUSH:
		cf->cf_base = cd->cd_stats.cs_flushes;
		break;
	}
	pthread_mutex_unlock(&cd->cd_lock);
}

/* Disarm every injected I/O error. */
void sx_crashdev_clear_faults(struct sx_crashdev *cd)
{
	pthread_mutex_lock(&cd->cd_lock);
	memset(cd->cd_fault, 0, sizeof(cd->cd_fault));
	pthread_mutex_unlock(&cd->cd_lock);
}

/* Copy the counters. */
void sx_crashdev_set_write_hook(struct sx_crashdev *cd, void (*fn)(void *arg, u64 n),
				void *arg)
{
	pthread_mutex_lock(&cd->cd_lock);
	cd->cd_hook = fn;
	cd->cd_hook_arg = arg;
	pthread_mutex_unlock(&cd->cd_lock);
}

void sx_crashdev_get_stats(struct sx_crashdev *cd, struct sx_crashdev_stats *st)
{
	pthread_mutex_lock(&cd->cd_lock);
	*st = cd->cd_stats;
	pthread_mutex_unlock(&cd->cd_lock);
}

/* Set the tear granularity; any power of two, smaller than a sector or not. */
void sx_crashdev_set_sectsize(struct sx_crashdev *cd, u32 sectsize)
{
	if (!sectsize || (sectsize & (sectsize - 1))) {
		sx_log_emit(SX_LOG_WARN,
			    "swapext: crashdev: tear size %u is not a power of two", sectsize);
		return;
	}
	pthread_mutex_lock(&cd->cd_lock);
	cd->cd_tsect = sectsize;
	pthread_mutex_unlock(&cd->cd_lock);
}
