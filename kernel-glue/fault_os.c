// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Named fault-injection sites for the kernel build.
 *
 * A small table of sites that the control device has named (armed, or
 * registered for counting with nth 0).  sx_fault() on a site that is not in
 * the table costs one atomic read and returns 0; a named site counts its
 * calls and fails its nth call from the moment it was armed, once or from
 * then on.  Built with SX_FAULT_INJECTION (the default of `make kmod`);
 * without it sx_fault() is always 0 and arming says -EOPNOTSUPP.
 */
#include "sx_platform.h"
#include "sx_kglue.h"

#ifdef SX_FAULT_INJECTION

#define SX_KFAULT_SLOTS		32

struct sx_kfault_site {
	char	fs_name[SX_KFAULT_NAME_MAX];
	bool	fs_used;
	bool	fs_armed;
	bool	fs_forever;
	u64	fs_hits;
	u64	fs_countdown;
	int	fs_error;
};

static DEFINE_SPINLOCK(sx_kfault_lock);
static struct sx_kfault_site sx_kfault_sites[SX_KFAULT_SLOTS];
static atomic_t sx_kfault_nused = ATOMIC_INIT(0);

/* The slot named @site, or NULL; called with the lock held. */
static struct sx_kfault_site *sx_kfault_find(const char *site)
{
	int i;

	for (i = 0; i < SX_KFAULT_SLOTS; i++)
		if (sx_kfault_sites[i].fs_used &&
		    !strcmp(sx_kfault_sites[i].fs_name, site))
			return &sx_kfault_sites[i];
	return NULL;
}

/* Return 0, or the error armed for @site, and count the call of a named site. */
int sx_fault(const char *site)
{
	struct sx_kfault_site *fs;
	unsigned long flags;
	int error = 0;

	if (!atomic_read(&sx_kfault_nused))
		return 0;
	spin_lock_irqsave(&sx_kfault_lock, flags);
	fs = sx_kfault_find(site);
	if (!fs)
		goto out_unlock;
	fs->fs_hits++;
	if (!fs->fs_armed)
		goto out_unlock;
	if (fs->fs_countdown > 1) {
		fs->fs_countdown--;
		goto out_unlock;
	}
	error = fs->fs_error;
	if (!fs->fs_forever)
		fs->fs_armed = false;
out_unlock:
	spin_unlock_irqrestore(&sx_kfault_lock, flags);
	return error;
}

/* Name @site; make its @nth call from now fail with @error (@nth 0: count only). */
int sx_kfault_arm(const char *site, u64 nth, bool forever, int error)
{
	struct sx_kfault_site *fs;
	unsigned long flags;
	int i, ret = 0;

	if (!site[0] || strnlen(site, SX_KFAULT_NAME_MAX) >= SX_KFAULT_NAME_MAX)
		return -EINVAL;
	if (nth && (error >= 0 || error < -MAX_ERRNO))
		return -EINVAL;

	spin_lock_irqsave(&sx_kfault_lock, flags);
	fs = sx_kfault_find(site);
	for (i = 0; !fs && i < SX_KFAULT_SLOTS; i++) {
		if (sx_kfault_sites[i].fs_used)
			continue;
		fs = &sx_kfault_sites[i];
		memset(fs, 0, sizeof(*fs));
		strscpy(fs->fs_name, site, sizeof(fs->fs_name));
		fs->fs_used = true;
		atomic_inc(&sx_kfault_nused);
	}
	if (!fs) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	fs->fs_armed = nth != 0;
	fs->fs_countdown = nth;
	fs->fs_forever = forever;
	fs->fs_error = error;
out_unlock:
	spin_unlock_irqrestore(&sx_kfault_lock, flags);
	return ret;
}

/* How often sx_fault(@site) was called since @site was named (0 if it is not). */
u64 sx_kfault_hits(const char *site)
{
	struct sx_kfault_site *fs;
	unsigned long flags;
	u64 hits = 0;

	spin_lock_irqsave(&sx_kfault_lock, flags);
	fs = sx_kfault_find(site);
	if (fs)
		hits = fs->fs_hits;
	spin_unlock_irqrestore(&sx_kfault_lock, flags);
	return hits;
}

/* Forget every site: nothing is armed or counted any more. */
void sx_kfault_clear(void)
{
	unsigned long flags;

	spin_lock_irqsave(&sx_kfault_lock, flags);
	memset(sx_kfault_sites, 0, sizeof(sx_kfault_sites));
	atomic_set(&sx_kfault_nused, 0);
	spin_unlock_irqrestore(&sx_kfault_lock, flags);
}

#else /* !SX_FAULT_INJECTION */

/* Fault injection is compiled out: no site ever fails. */
int sx_fault(const char *site)
{
	return 0;
}

/* Fault injection is compiled out: nothing can be armed. */
int sx_kfault_arm(const char *site, u64 nth, bool forever, int error)
{
	return -EOPNOTSUPP;
}

/* Fault injection is compiled out: no site is counted. */
u64 sx_kfault_hits(const char *site)
{
	return 0;
}

/* Fault injection is compiled out: nothing to forget. */
void sx_kfault_clear(void)
{
}

#endif /* SX_FAULT_INJECTION */
