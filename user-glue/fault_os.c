/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Named fault-injection sites.
 *
 * Every site that is ever called or armed gets a slot in a fixed hash table
 * (open addressing, never deleted), so a test can count how often a
 * workload passes each site and then arm the nth pass.  Slots hold a copy
 * of the name: a test may arm a site with a name built in a stack buffer.
 */
#define _GNU_SOURCE
#include "sx_platform.h"
#include <swapext/device.h>

#define SX_FAULT_SLOTS		1024	/* a power of two */
#define SX_FAULT_NAME_MAX	64

struct sx_fault_site {
	char	fs_name[SX_FAULT_NAME_MAX];
	bool	fs_used;
	bool	fs_armed;
	bool	fs_forever;	/* keep failing once the nth call is reached */
	u64	fs_hits;	/* calls of sx_fault() for this site, ever */
	u64	fs_countdown;	/* calls left until the first failure */
	int	fs_error;
};

static pthread_mutex_t sx_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sx_fault_site sx_fault_sites[SX_FAULT_SLOTS];
static bool sx_fault_full_warned;
/* sx_fault_set_hook()'s function and argument (under the lock) */
static void (*sx_fault_hook_fn)(void *arg, const char *site);
static void *sx_fault_hook_arg;

/* FNV-1a: short names, cheap and well spread. */
static u32 sx_fault_hash(const char *s)
{
	u32 h = 2166136261u;

	while (*s) {
		h ^= (u8)*s++;
		h *= 16777619u;
	}
	return h;
}

/*
 * Find the slot of @site, taking a free one if @create; NULL if it is not
 * there (or, with @create, the table is full).  Called with the lock held.
 */
static struct sx_fault_site *sx_fault_lookup(const char *site, bool create)
{
	u32 h = sx_fault_hash(site);
	unsigned int i;

	for (i = 0; i < SX_FAULT_SLOTS; i++) {
		struct sx_fault_site *fs;

		fs = &sx_fault_sites[(h + i) & (SX_FAULT_SLOTS - 1)];
		if (!fs->fs_used) {
			if (!create)
				return NULL;
			memset(fs, 0, sizeof(*fs));
			strcpy(fs->fs_name, site);
			fs->fs_used = true;
			return fs;
		}
		if (!strcmp(fs->fs_name, site))
			return fs;
	}
	return NULL;
}

/* Return 0, or the error armed for @site, and count the call. */
int sx_fault(const char *site)
{
	void (*hook)(void *arg, const char *site);
	struct sx_fault_site *fs;
	void *hook_arg;
	int error = 0;

	/* the hook runs unlocked: it may do work that passes other sites */
	pthread_mutex_lock(&sx_fault_lock);
	hook = sx_fault_hook_fn;
	hook_arg = sx_fault_hook_arg;
	pthread_mutex_unlock(&sx_fault_lock);
	if (hook)
		hook(hook_arg, site);

	/* longer names could never have been armed */
	if (strlen(site) >= SX_FAULT_NAME_MAX)
		return 0;

	pthread_mutex_lock(&sx_fault_lock);
	fs = sx_fault_lookup(site, true);
	if (!fs) {
		if (!sx_fault_full_warned) {
			sx_fault_full_warned = true;
			sx_log_emit(SX_LOG_WARN,
				    "swapext: fault table full, not counting \"%s\"", site);
		}
		goto out_unlock;
	}
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
	pthread_mutex_unlock(&sx_fault_lock);
	return error;
}

/* Arm @site to fail its @nth call from now; @nth 0 disarms it. */
int sx_fault_arm(const char *site, u64 nth, bool forever, int error)
{
	struct sx_fault_site *fs;
	int ret = 0;

	if (!site || strlen(site) >= SX_FAULT_NAME_MAX)
		return -EINVAL;
	if (nth && (error >= 0 || error < -4095))
		return -EINVAL;

	pthread_mutex_lock(&sx_fault_lock);
	fs = sx_fault_lookup(site, true);
	if (!fs) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	fs->fs_armed = nth != 0;
	fs->fs_countdown = nth;
	fs->fs_forever = forever;
	fs->fs_error = error;
out_unlock:
	pthread_mutex_unlock(&sx_fault_lock);
	return ret;
}

/* Disarm every site; hit counts are kept. */
void sx_fault_disarm_all(void)
{
	unsigned int i;

	pthread_mutex_lock(&sx_fault_lock);
	for (i = 0; i < SX_FAULT_SLOTS; i++)
		sx_fault_sites[i].fs_armed = false;
	pthread_mutex_unlock(&sx_fault_lock);
}

/* How often sx_fault(@site) has been called since the program started. */
u64 sx_fault_hits(const char *site)
{
	struct sx_fault_site *fs;
	u64 hits = 0;

	if (!site || strlen(site) >= SX_FAULT_NAME_MAX)
		return 0;
	pthread_mutex_lock(&sx_fault_lock);
	fs = sx_fault_lookup(site, false);
	if (fs)
		hits = fs->fs_hits;
	pthread_mutex_unlock(&sx_fault_lock);
	return hits;
}

/* Call @fn(@arg, site) at every sx_fault() call from now on (NULL: none). */
void sx_fault_set_hook(void (*fn)(void *arg, const char *site), void *arg)
{
	pthread_mutex_lock(&sx_fault_lock);
	sx_fault_hook_fn = fn;
	sx_fault_hook_arg = arg;
	pthread_mutex_unlock(&sx_fault_lock);
}
