/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Slabs for the buffer cache.  A buffer's head and block are taken when a
 * block is first read and given back when it is evicted: a bulk swap on a
 * cold cache takes a few thousand of each.  Memory fresh from the kernel
 * costs a page fault per 4 KiB at its first touch, and in a VM with shadow
 * page tables that is about 13 us (measured here: 16 MiB touched a page at
 * a time took 54 ms, and 1 ms on 2 MiB huge pages); from malloc(), the
 * swap of two files of 100,000 extents took some 1,500 of those faults.
 * So a slab carves its objects from chunks of 2 MiB, aligned to 2 MiB, and
 * asks for huge pages (MADV_HUGEPAGE, a hint: without transparent huge
 * pages a chunk is faulted in 4 KiB at a time, as malloc's memory is).
 *
 * A slab's first chunk uses only its first 128 KiB, in small pages, so that
 * a small mount (the tests make thousands) does not zero 2 MiB it never
 * uses.  A chunk's header sits at its start, and an object finds its chunk
 * by rounding its address down.  Freed objects are linked through their
 * first word.  A chunk that empties goes back to the kernel unless it is
 * the only empty one, which stays for the next allocation.
 *
 * Under AddressSanitizer each object is its own malloc(), so that a use of
 * an evicted buffer's block or an overrun of it is caught as before; so
 * is an object too large for eight to fit a chunk.  A munmap() here can
 * fail only at the process's limit of mappings, and would leave 2 MiB of
 * address space mapped, nothing else: it is not checked.
 */
#define _GNU_SOURCE
#include "sx_platform.h"
#include "mem_os.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SX_SLAB_CHUNK		((size_t)2 << 20)
#define SX_SLAB_FIRST		((size_t)128 << 10)	/* used of a slab's first chunk */
#define SX_SLAB_MAX_ALIGN	4096u

/* A link of a circular list of chunks; a link on no list points at itself. */
struct sx_slab_link {
	struct sx_slab_link	*l_prev, *l_next;
};

struct sx_slab_chunk {
	struct sx_slab_link	sc_avail;	/* on the slab's chunks with room, or none */
	struct sx_slab_link	sc_all;		/* on all the slab's chunks */
	void			*sc_free;	/* freed objects */
	size_t			sc_bump;	/* offset of the first object never used */
	size_t			sc_end;		/* end of the part in use */
	u32			sc_used;	/* objects handed out */
};

struct sx_slab {
	pthread_mutex_t		s_lock;
	size_t			s_size;		/* object stride */
	size_t			s_align;
	size_t			s_first;	/* offset of a chunk's first object */
	bool			s_malloc;	/* each object a malloc() of its own */
	struct sx_slab_link	s_avail;	/* chunks with room */
	struct sx_slab_link	s_all;
	struct sx_slab_chunk	*s_spare;	/* an empty chunk kept, on s_all only */
};

#define sx_slab_chunk_of(link, member) \
	((struct sx_slab_chunk *)((char *)(link) - offsetof(struct sx_slab_chunk, member)))

static void sx_slab_link_init(struct sx_slab_link *l)
{
	l->l_prev = l->l_next = l;
}

static bool sx_slab_link_empty(const struct sx_slab_link *l)
{
	return l->l_next == l;
}

/* Put @l first on the list at @head. */
static void sx_slab_link_add(struct sx_slab_link *head, struct sx_slab_link *l)
{
	l->l_prev = head;
	l->l_next = head->l_next;
	head->l_next->l_prev = l;
	head->l_next = l;
}

static void sx_slab_link_del(struct sx_slab_link *l)
{
	l->l_prev->l_next = l->l_next;
	l->l_next->l_prev = l->l_prev;
	sx_slab_link_init(l);
}

static size_t sx_slab_roundup(size_t x, size_t align)
{
	return (x + align - 1) & ~(align - 1);
}

struct sx_slab *sx_slab_create(size_t size)
{
	struct sx_slab *s;
	size_t align = 16;

	if (sx_mem_fault())
		return NULL;
	s = sx_mem_got(calloc(1, sizeof(*s)));
	if (!s)
		return NULL;
	if (!size)
		size = 1;
	if (!(size & (size - 1)) && size > align)
		align = size < SX_SLAB_MAX_ALIGN ? size : SX_SLAB_MAX_ALIGN;
	s->s_size = sx_slab_roundup(size, align);
	s->s_align = align;
	s->s_first = sx_slab_roundup(sizeof(struct sx_slab_chunk), align);
#ifdef SX_ASAN
	s->s_malloc = true;
#endif
	/* a chunk of a few objects would waste most of itself */
	if (size > SX_SLAB_CHUNK / 8 || s->s_first + 8 * s->s_size > SX_SLAB_CHUNK)
		s->s_malloc = true;
	sx_slab_link_init(&s->s_avail);
	sx_slab_link_init(&s->s_all);
	pthread_mutex_init(&s->s_lock, NULL);
	return s;
}

/*
 * A new chunk: 2 MiB of address space aligned to 2 MiB (mapped twice as
 * large, the ends cut off), the first of a slab small.
 */
static struct sx_slab_chunk *sx_slab_chunk_new(struct sx_slab *s)
{
	bool first = sx_slab_link_empty(&s->s_all);
	struct sx_slab_chunk *c;
	u8 *p, *start, *end;

	p = mmap(NULL, 2 * SX_SLAB_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	start = (u8 *)sx_slab_roundup((uintptr_t)p, SX_SLAB_CHUNK);
	end = start + SX_SLAB_CHUNK;
	if (start > p)
		munmap(p, start - p);
	if (p + 2 * SX_SLAB_CHUNK > end)
		munmap(end, p + 2 * SX_SLAB_CHUNK - end);
	c = (struct sx_slab_chunk *)start;
	c->sc_free = NULL;
	c->sc_bump = s->s_first;
	c->sc_end = first && s->s_first + s->s_size <= SX_SLAB_FIRST ? SX_SLAB_FIRST :
		    SX_SLAB_CHUNK;
	/* advice only: a kernel without THP ignores or refuses it alike */
	madvise(start, SX_SLAB_CHUNK,
		c->sc_end == SX_SLAB_CHUNK ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	c->sc_used = 0;
	sx_slab_link_add(&s->s_all, &c->sc_all);
	sx_slab_link_add(&s->s_avail, &c->sc_avail);
	return c;
}

static void sx_slab_chunk_unmap(struct sx_slab_chunk *c)
{
	sx_slab_link_del(&c->sc_avail);
	sx_slab_link_del(&c->sc_all);
	munmap(c, SX_SLAB_CHUNK);
}

/* True if @c has no object left to hand out. */
static bool sx_slab_chunk_full(const struct sx_slab *s, const struct sx_slab_chunk *c)
{
	return !c->sc_free && c->sc_bump + s->s_size > c->sc_end;
}

static void *sx_slab_take(struct sx_slab *s)
{
	struct sx_slab_chunk *c;
	void *p;

	pthread_mutex_lock(&s->s_lock);
	c = NULL;
	if (!sx_slab_link_empty(&s->s_avail)) {
		c = sx_slab_chunk_of(s->s_avail.l_next, sc_avail);
	} else if (s->s_spare) {
		c = s->s_spare;
		s->s_spare = NULL;
		sx_slab_link_add(&s->s_avail, &c->sc_avail);
	}
	if (!c)
		c = sx_slab_chunk_new(s);
	if (!c) {
		pthread_mutex_unlock(&s->s_lock);
		return NULL;
	}
	if (c->sc_free) {
		p = c->sc_free;
		c->sc_free = *(void **)p;
	} else {
		p = (u8 *)c + c->sc_bump;
		c->sc_bump += s->s_size;
	}
	c->sc_used++;
	if (sx_slab_chunk_full(s, c))
		sx_slab_link_del(&c->sc_avail);
	pthread_mutex_unlock(&s->s_lock);
	return p;
}

void *sx_slab_alloc(struct sx_slab *s, unsigned int flags)
{
	if (sx_mem_fault())
		return NULL;
	if (s->s_malloc)
		return sx_mem_got(aligned_alloc(s->s_align, s->s_size));
	return sx_mem_got(sx_slab_take(s));
}

void *sx_slab_zalloc(struct sx_slab *s, unsigned int flags)
{
	void *p = sx_slab_alloc(s, flags);

	if (p)
		memset(p, 0, s->s_size);
	return p;
}

void sx_slab_free(struct sx_slab *s, void *p)
{
	struct sx_slab_chunk *c;

	if (!p)
		return;
	sx_mem_gone();
	if (s->s_malloc) {
		free(p);
		return;
	}
	c = (struct sx_slab_chunk *)((uintptr_t)p & ~(SX_SLAB_CHUNK - 1));
	pthread_mutex_lock(&s->s_lock);
	ASSERT(c->sc_used > 0);
	*(void **)p = c->sc_free;
	c->sc_free = p;
	if (--c->sc_used == 0) {
		/*
		 * Keep one empty chunk, so that a take and a give at the edge do
		 * not map and unmap; the larger, if the spare is a first chunk.
		 */
		sx_slab_link_del(&c->sc_avail);
		if (s->s_spare && s->s_spare->sc_end < c->sc_end) {
			sx_slab_chunk_unmap(s->s_spare);
			s->s_spare = NULL;
		}
		if (s->s_spare)
			sx_slab_chunk_unmap(c);
		else
			s->s_spare = c;
	} else if (sx_slab_link_empty(&c->sc_avail)) {
		sx_slab_link_add(&s->s_avail, &c->sc_avail);
	}
	pthread_mutex_unlock(&s->s_lock);
}

void sx_slab_destroy(struct sx_slab *s)
{
	if (!s)
		return;
	s->s_spare = NULL;
	while (!sx_slab_link_empty(&s->s_all)) {
		struct sx_slab_chunk *c = sx_slab_chunk_of(s->s_all.l_next, sc_all);

		ASSERT(c->sc_used == 0);
		sx_slab_chunk_unmap(c);
	}
	pthread_mutex_destroy(&s->s_lock);
	sx_mem_gone();
	free(s);
}
