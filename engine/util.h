/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small helpers shared by every engine file: lists, arithmetic, checksums,
 * logging and corruption reports.  Only platform-contract calls are used.
 */
#ifndef SX_UTIL_H
#define SX_UTIL_H

#include "sx_platform.h"
#include <swapext/format.h>

struct sx_mount;

#define sx_min(a, b)	((a) < (b) ? (a) : (b))
#define sx_max(a, b)	((a) > (b) ? (a) : (b))

/*
 * Population count without __builtin_popcountll, which becomes a libgcc call
 * that a kernel module cannot link.
 */
static inline u32 sx_popcount64(u64 x)
{
	x = x - ((x >> 1) & 0x5555555555555555ull);
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (u32)((x * 0x0101010101010101ull) >> 56);
}
#define sx_roundup(x, y)	((((x) + (y) - 1) / (y)) * (y))
#define sx_howmany(x, y)	(((x) + (y) - 1) / (y))
#define sx_is_pow2(x)	((x) != 0 && ((x) & ((x) - 1)) == 0)

#define sx_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Doubly linked circular list (the engine cannot use the kernel's list.h). */
struct sx_list {
	struct sx_list *next, *prev;
};

#define SX_LIST_INIT(name)	{ &(name), &(name) }

/* sx_list_init() - make @l an empty list */
static inline void sx_list_init(struct sx_list *l)
{
	l->next = l;
	l->prev = l;
}

/* sx_list_empty() - true if @l has no entries */
static inline bool sx_list_empty(const struct sx_list *l)
{
	return l->next == l;
}

/* sx_list_insert_between() - link @n between two adjacent entries */
static inline void sx_list_insert_between(struct sx_list *n, struct sx_list *prev,
					  struct sx_list *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

/* sx_list_add() - add @n at the head of @head */
static inline void sx_list_add(struct sx_list *n, struct sx_list *head)
{
	sx_list_insert_between(n, head, head->next);
}

/* sx_list_add_tail() - add @n at the tail of @head */
static inline void sx_list_add_tail(struct sx_list *n, struct sx_list *head)
{
	sx_list_insert_between(n, head->prev, head);
}

/* sx_list_del() - unlink @n and leave it an empty list */
static inline void sx_list_del(struct sx_list *n)
{
	n->next->prev = n->prev;
	n->prev->next = n->next;
	sx_list_init(n);
}

#define sx_list_entry(ptr, type, member) sx_container_of(ptr, type, member)
#define sx_list_first(head, type, member) \
	(sx_list_empty(head) ? NULL : sx_list_entry((head)->next, type, member))
#define sx_list_for_each_safe(pos, n, head) \
	for (pos = (head)->next, n = pos->next; pos != (head); pos = n, n = pos->next)
#define sx_list_for_each(pos, head) \
	for (pos = (head)->next; pos != (head); pos = pos->next)

/* sx_cksum() - the on-disk checksum of @len bytes: inverted crc32c */
static inline u32 sx_cksum(const void *buf, size_t len)
{
	return ~sx_crc32c(~0u, buf, len);
}

/*
 * sx_cksum_skip() - checksum of @len bytes at @buf as if the 4-byte field at
 * @crc_off were zero, so a CRC can live inside the bytes it covers.
 */
static inline u32 sx_cksum_skip(const void *buf, size_t len, size_t crc_off)
{
	static const u8 zero[4];
	u32 crc;

	crc = sx_crc32c(~0u, buf, crc_off);
	crc = sx_crc32c(crc, zero, sizeof(zero));
	crc = sx_crc32c(crc, (const u8 *)buf + crc_off + 4, len - crc_off - 4);
	return ~crc;
}

/* sx_ilog2() - log2 of a power of two */
static inline u32 sx_ilog2(u64 v)
{
	u32 l = 0;

	while (v > 1) {
		v >>= 1;
		l++;
	}
	return l;
}

/* Logging with the mount's name; mp may be NULL. */
void sx_msg(const struct sx_mount *mp, enum sx_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define sx_err(mp, ...)		sx_msg((mp), SX_LOG_ERR, __VA_ARGS__)
#define sx_warn(mp, ...)	sx_msg((mp), SX_LOG_WARN, __VA_ARGS__)
#define sx_info(mp, ...)	sx_msg((mp), SX_LOG_INFO, __VA_ARGS__)
#define sx_debug(mp, ...)	sx_msg((mp), SX_LOG_DEBUG, __VA_ARGS__)

/* sx_corruption_report() - log which check found bad metadata, and where */
void sx_corruption_report(const struct sx_mount *mp, const char *what,
			  const char *func, int line);

/*
 * SX_IS_CORRUPT() - evaluate @expr; if it is true, report the failed check
 * with function and line, and yield true.  Verifiers are written as
 * "if (SX_IS_CORRUPT(mp, x > limit)) return -EFSCORRUPTED;".
 */
#define SX_IS_CORRUPT(mp, expr) \
	(unlikely(expr) ? (sx_corruption_report((mp), #expr, __func__, __LINE__), true) : false)

#endif /* SX_UTIL_H */
