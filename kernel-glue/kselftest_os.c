// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kernel glue's own checks, run with the engine's self-test: what the
 * engine scenarios cannot see from outside (lock ownership, condition
 * variables and events across tasks, RCU callbacks, the kernel's crc32c,
 * fault sites, the device kill switch).
 */
#include "sx_platform.h"
#include "sx_kglue.h"
#include <linux/kthread.h>
#include <linux/sched/task.h>
#include <linux/delay.h>
#include <linux/slab.h>

/*
 * A kernel thread for a check, pinned so that sx_kst_thread_end() may stop
 * it even after it returned: a check's state goes only once its thread
 * is gone (mutex_unlock(), for one, may touch the mutex after another
 * task took it).
 */
static struct task_struct *sx_kst_thread_start(int (*fn)(void *arg), void *arg,
					       const char *name)
{
	struct task_struct *t = kthread_run(fn, arg, "%s", name);

	if (!IS_ERR(t))
		get_task_struct(t);
	return t;
}

/* Wait until a thread of sx_kst_thread_start() is gone. */
static void sx_kst_thread_end(struct task_struct *t)
{
	kthread_stop(t);
	put_task_struct(t);
}

struct sx_kst_cond {
	struct sx_mutex	kc_lock;
	struct sx_cond	kc_cond;
	int		kc_state;
};

/* The other task of the condition variable check: wait for 1, answer 2. */
static int sx_kst_cond_thread(void *arg)
{
	struct sx_kst_cond *kc = arg;

	sx_mutex_lock(&kc->kc_lock);
	while (kc->kc_state != 1)
		sx_cond_wait(&kc->kc_cond, &kc->kc_lock);
	kc->kc_state = 2;
	sx_cond_broadcast(&kc->kc_cond);
	sx_mutex_unlock(&kc->kc_lock);
	return 0;
}

/* Locks know their holder; a condition variable hands over between tasks. */
static const char *sx_kst_locks(void)
{
	struct sx_kst_cond *kc;
	struct task_struct *t;
	struct sx_rwsem s;
	const char *why = NULL;

	kc = kzalloc(sizeof(*kc), GFP_KERNEL);
	if (!kc)
		return "no memory";
	sx_mutex_init(&kc->kc_lock);
	sx_cond_init(&kc->kc_cond);
	if (sx_mutex_is_held(&kc->kc_lock))
		why = "free mutex is held";
	sx_mutex_lock(&kc->kc_lock);
	if (!why && !sx_mutex_is_held(&kc->kc_lock))
		why = "locked mutex not held";
	if (!why && sx_mutex_trylock(&kc->kc_lock))
		why = "trylock of own mutex succeeded";
	sx_mutex_unlock(&kc->kc_lock);

	sx_rwsem_init(&s);
	sx_rwsem_down_write(&s);
	if (!why && !sx_rwsem_is_write_held(&s))
		why = "rwsem writer not recorded";
	sx_rwsem_up_write(&s);
	sx_rwsem_down_read(&s);
	if (!why && sx_rwsem_is_write_held(&s))
		why = "rwsem reader counted as writer";
	sx_rwsem_up_read(&s);
	sx_rwsem_destroy(&s);

	t = sx_kst_thread_start(sx_kst_cond_thread, kc, "sx-selftest");
	if (IS_ERR(t)) {
		why = why ? why : "kthread_run failed";
		goto out;
	}
	msleep(20);
	sx_mutex_lock(&kc->kc_lock);
	kc->kc_state = 1;
	sx_cond_broadcast(&kc->kc_cond);
	while (kc->kc_state != 2)
		sx_cond_wait(&kc->kc_cond, &kc->kc_lock);
	sx_mutex_unlock(&kc->kc_lock);
	sx_kst_thread_end(t);
out:
	sx_cond_destroy(&kc->kc_cond);
	sx_mutex_destroy(&kc->kc_lock);
	kfree(kc);
	return why;
}

struct sx_kst_rcu {
	struct sx_rcu_head	kr_head;
	struct sx_atomic	*kr_count;
};

/* The RCU callback of sx_kst_rcu(): count and free. */
static void sx_kst_rcu_cb(struct sx_rcu_head *head)
{
	struct sx_kst_rcu *kr = container_of(head, struct sx_kst_rcu, kr_head);

	sx_atomic_add_return(kr->kr_count, 1);
	kfree(kr);
}

/* Atomics; call_rcu callbacks all run by rcu_barrier. */
static const char *sx_kst_atomics_rcu(void)
{
	struct sx_atomic count;
	struct sx_atomic64 a64;
	int i;

	sx_atomic64_set(&a64, 1ll << 40);
	if (sx_atomic64_add_return(&a64, 5) != (1ll << 40) + 5)
		return "atomic64_add_return";
	if (sx_atomic64_cmpxchg(&a64, 0, 7) != (1ll << 40) + 5 ||
	    sx_atomic64_read(&a64) != (1ll << 40) + 5)
		return "atomic64_cmpxchg with a wrong old value changed it";
	sx_atomic_set(&count, 0);
	for (i = 0; i < 16; i++) {
		struct sx_kst_rcu *kr = kzalloc(sizeof(*kr), GFP_KERNEL);

		if (!kr)
			return "no memory";
		kr->kr_count = &count;
		sx_call_rcu(&kr->kr_head, sx_kst_rcu_cb);
	}
	sx_synchronize_rcu();
	sx_rcu_barrier();
	if (sx_atomic_read(&count) != 16)
		return "call_rcu callbacks missing after rcu_barrier";
	return NULL;
}

/* The kernel's crc32c agrees with the published check value. */
static const char *sx_kst_crc32c(void)
{
	static const char check[] = "123456789";

	if (~sx_crc32c(~0u, check, 9) != 0xe3069283u)
		return "crc32c(\"123456789\") != 0xe3069283";
	if (sx_crc32c(0, check, 0) != 0)
		return "crc32c of nothing changed the value";
	return NULL;
}

/* Memory: NOFS and large (vmalloc'd) allocations, zeroed when asked. */
static const char *sx_kst_memory(void)
{
	u8 *p = sx_zalloc(4u << 20, SX_NOFS);
	const char *why = NULL;
	size_t i;

	if (!p)
		return "4 MiB NOFS zalloc failed";
	for (i = 0; i < (4u << 20); i += 4096)
		if (p[i])
			why = "zalloc memory not zero";
	sx_free(p);
	sx_free(NULL);
	return why;
}

/* Fault sites fail their nth call once; a killed device fails every I/O. */
static const char *sx_kst_faults_kill(void)
{
	struct sx_bdev *bd;
	u8 buf[512];

#ifdef SX_FAULT_INJECTION
	if (sx_kfault_arm("kst.site", 2, false, -ENOSPC))
		return "arming a fault site failed";
	if (sx_fault("kst.site") != 0 || sx_fault("kst.site") != -ENOSPC ||
	    sx_fault("kst.site") != 0 || sx_kfault_hits("kst.site") != 3) {
		sx_kfault_clear();
		return "fault site did not fail its 2nd call only";
	}
	sx_kfault_clear();
#endif
	if (sx_kmemdev_create(1u << 20, 512, &bd))
		return "memory device";
	memset(buf, 0x5a, sizeof(buf));
	if (bd->bd_ops->write(bd, 512, buf, 512, SX_BDEV_FUA) ||
	    bd->bd_ops->read(bd, 512, buf, 512) || buf[0] != 0x5a) {
		sx_kdev_destroy(bd);
		return "memory device I/O";
	}
	sx_kdev_kill(bd);
	if (bd->bd_ops->read(bd, 0, buf, 512) != -EIO ||
	    bd->bd_ops->write(bd, 0, buf, 512, 0) != -EIO || bd->bd_ops->flush(bd) != -EIO) {
		sx_kdev_destroy(bd);
		return "killed device still does I/O";
	}
	sx_kdev_destroy(bd);
	return NULL;
}

#define SX_KST_EVENT_ROUNDS	1000

/* What the event check hands its setter task: the next event to set. */
struct sx_kst_event {
	struct sx_mutex	ke_lock;
	struct sx_cond	ke_cond;
	struct sx_event	*ke_next;	/* under ke_lock */
	int		*ke_value;	/* under ke_lock */
	bool		ke_done;
};

/* The setter: write the round's number, then set its event. */
static int sx_kst_event_thread(void *arg)
{
	struct sx_kst_event *ke = arg;
	int n = 0;

	sx_mutex_lock(&ke->ke_lock);
	for (;;) {
		struct sx_event *e;

		while (!ke->ke_next && !ke->ke_done)
			sx_cond_wait(&ke->ke_cond, &ke->ke_lock);
		if (!ke->ke_next)
			break;
		e = ke->ke_next;
		ke->ke_next = NULL;
		*ke->ke_value = ++n;
		sx_mutex_unlock(&ke->ke_lock);
		sx_event_set(e);	/* its waiter may be gone right after this */
		sx_mutex_lock(&ke->ke_lock);
	}
	sx_mutex_unlock(&ke->ke_lock);
	return 0;
}

/* One round: an event on this frame's stack, handed over and waited for. */
static noinline int sx_kst_event_round(struct sx_kst_event *ke)
{
	struct sx_event e;
	int value = 0;

	sx_event_init(&e);
	sx_mutex_lock(&ke->ke_lock);
	ke->ke_next = &e;
	ke->ke_value = &value;
	sx_cond_broadcast(&ke->ke_cond);
	sx_mutex_unlock(&ke->ke_lock);
	sx_event_wait(&e);
	return value;
}

/*
 * Events on the waiter's stack, as the log's waiters keep them: each round
 * ends with the value its setter wrote before the set; an event set before
 * its wait does not block it.
 */
static const char *sx_kst_events(void)
{
	struct sx_kst_event *ke;
	struct task_struct *t;
	struct sx_event e;
	const char *why = NULL;
	int i;

	sx_event_init(&e);
	sx_event_set(&e);
	sx_event_wait(&e);
	ke = kzalloc(sizeof(*ke), GFP_KERNEL);
	if (!ke)
		return "no memory";
	sx_mutex_init(&ke->ke_lock);
	sx_cond_init(&ke->ke_cond);
	t = sx_kst_thread_start(sx_kst_event_thread, ke, "sx-selftest-ev");
	if (IS_ERR(t)) {
		why = "kthread_run failed";
		goto out;
	}
	for (i = 1; i <= SX_KST_EVENT_ROUNDS; i++) {
		if (sx_kst_event_round(ke) != i && !why)
			why = "a wait ended without its setter's value";
	}
	sx_mutex_lock(&ke->ke_lock);
	ke->ke_done = true;
	sx_cond_broadcast(&ke->ke_cond);
	sx_mutex_unlock(&ke->ke_lock);
	sx_kst_thread_end(t);
out:
	sx_cond_destroy(&ke->ke_cond);
	sx_mutex_destroy(&ke->ke_lock);
	kfree(ke);
	return why;
}

static const struct {
	const char	*name;
	const char	*(*fn)(void);
} sx_kst_cases[] = {
	{ "kglue-locks-cond", sx_kst_locks },
	{ "kglue-events", sx_kst_events },
	{ "kglue-atomics-rcu", sx_kst_atomics_rcu },
	{ "kglue-crc32c", sx_kst_crc32c },
	{ "kglue-memory", sx_kst_memory },
	{ "kglue-faults-kill", sx_kst_faults_kill },
};

/* Run the glue's checks, one report line each, adding to the counts. */
void sx_kglue_selftest(sx_report_fn out, void *arg, u32 *passed, u32 *failed)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sx_kst_cases); i++) {
		const char *why = sx_kst_cases[i].fn();

		if (why) {
			(*failed)++;
			out(arg, "FAIL %s: %s", sx_kst_cases[i].name, why);
		} else {
			(*passed)++;
			out(arg, "PASS %s", sx_kst_cases[i].name);
		}
	}
}
