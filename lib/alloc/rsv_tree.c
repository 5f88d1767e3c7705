/*
 * rsv_tree.c: the reservation window set in its two forms. The tree finds
 * "the window at or before block b" in O(log n) (RB_NFIND, then RB_PREV);
 * the list walks to it from the head, which is the O(n) cost per new
 * window that the 2004 rbtree patch removed and that bench/alloc_cost
 * measures. Windows are inclusive [start, end] and never overlap.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>

#include "rsv_tree.h"

static int rsv_cmp(struct e3_rsv *a, struct e3_rsv *b)
{
	return a->start < b->start ? -1 : a->start > b->start;
}

RB_GENERATE_INTERNAL(rsv_rb, e3_rsv, rb, rsv_cmp, static __attribute__((unused)))

#ifdef E3_DEBUG
#define RSV_DEBUG_CHECK(s) assert(rsv_set_check((s), NULL, 0))
#else
#define RSV_DEBUG_CHECK(s) do { } while (0)
#endif

static bool is_list(const struct rsv_set *s)
{
	return s->mode == E3_ALLOC_LIST;
}

void rsv_set_init(struct rsv_set *s, enum e3_alloc_mode mode,
		  blk64_t first, blk64_t last)
{
	s->mode = mode;
	RB_INIT(&s->rb);
	TAILQ_INIT(&s->list);
	s->dummy = (struct e3_rsv){ .start = 0, .end = 0, .linked = 1 };
	if (is_list(s))
		TAILQ_INSERT_HEAD(&s->list, &s->dummy, link);
	else
		RB_INSERT(rsv_rb, &s->rb, &s->dummy);
	s->count = 0;
	s->headroom = 0;
	s->first = first;
	s->last = last;
}

struct e3_rsv *rsv_set_find(struct rsv_set *s, blk64_t blk,
			    struct e3_rsv *from)
{
	struct e3_rsv key, *r, *n;

	if (is_list(s)) {
		r = (from && from->linked && from->start <= blk) ? from
			: TAILQ_FIRST(&s->list);
		while ((n = TAILQ_NEXT(r, link)) && n->start <= blk)
			r = n;
		return r;
	}
	/* walks step forward window by window: blk is usually in the hint
	 * or the one after it, two pointer steps instead of a descent */
	if (from && from->linked && from->start <= blk) {
		for (int i = 0; i < 2; i++) {
			n = RB_NEXT(rsv_rb, &s->rb, from);
			if (!n || n->start > blk)
				return from;
			from = n;
		}
	}
	key.start = blk;
	r = RB_NFIND(rsv_rb, &s->rb, &key);
	if (r && r->start == blk)
		return r;
	r = r ? RB_PREV(rsv_rb, &s->rb, r) : RB_MAX(rsv_rb, &s->rb);
	return r ? r : &s->dummy;
}

struct e3_rsv *rsv_set_next(struct rsv_set *s, struct e3_rsv *r)
{
	if (is_list(s))
		return TAILQ_NEXT(r, link);
	return RB_NEXT(rsv_rb, &s->rb, r);
}

errcode_t rsv_set_insert(struct rsv_set *s, struct e3_rsv *r,
			 struct e3_rsv *prev)
{
	struct e3_rsv *next;

	if (r->linked || r->end < r->start || r->start == 0)
		return E3_RSV_TREE_BAD;
	/* A caller's hint is trusted only if it really is the predecessor. */
	if (!prev || !prev->linked || prev->start > r->start ||
	    ((next = rsv_set_next(s, prev)) && next->start <= r->start))
		prev = rsv_set_find(s, r->start, NULL);
	next = rsv_set_next(s, prev);
	if (prev->end >= r->start || (next && next->start <= r->end))
		return E3_RSV_TREE_BAD;
	if (is_list(s))
		TAILQ_INSERT_AFTER(&s->list, prev, r, link);
	else
		RB_INSERT(rsv_rb, &s->rb, r);
	r->linked = 1;
	s->count++;
	s->headroom += r->headroom;
	RSV_DEBUG_CHECK(s);
	return 0;
}

void rsv_set_remove(struct rsv_set *s, struct e3_rsv *r)
{
	if (!r->linked || r == &s->dummy)
		return;
	if (is_list(s))
		TAILQ_REMOVE(&s->list, r, link);
	else
		RB_REMOVE(rsv_rb, &s->rb, r);
	r->linked = 0;
	s->count--;
	s->headroom -= r->headroom;
	RSV_DEBUG_CHECK(s);
}

void rsv_set_headroom(struct rsv_set *s, struct e3_rsv *r, uint32_t h)
{
	if (r->linked && r != &s->dummy)
		s->headroom = s->headroom - r->headroom + h;
	r->headroom = h;
}

static bool __attribute__((format(printf, 3, 4)))
fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return false;
}

bool rsv_set_check(struct rsv_set *s, char *why, size_t whylen)
{
	struct e3_rsv *r, *prev = NULL;
	unsigned long long n = 0, h = 0;

	r = is_list(s) ? TAILQ_FIRST(&s->list) : RB_MIN(rsv_rb, &s->rb);
	if (r != &s->dummy)
		return fail(why, whylen, "dummy window is not first");
	for (; r; prev = r, r = rsv_set_next(s, r)) {
		if (!r->linked)
			return fail(why, whylen, "window [%llu, %llu] linked "
				    "but not marked", r->start, r->end);
		if (r == &s->dummy)
			continue;
		n++;
		h += r->headroom;
		if (r->end < r->start || r->start < s->first || r->end > s->last)
			return fail(why, whylen, "window [%llu, %llu] outside "
				    "the filesystem [%llu, %llu]", r->start,
				    r->end, s->first, s->last);
		if (prev->end >= r->start)
			return fail(why, whylen, "window at %llu overlaps or "
				    "precedes the one ending at %llu",
				    r->start, prev->end);
	}
	if (n != s->count)
		return fail(why, whylen, "%llu windows linked, count says %llu",
			    n, (unsigned long long)s->count);
	if (h != s->headroom)
		return fail(why, whylen, "linked windows' headroom %llu, sum "
			    "says %llu", h, (unsigned long long)s->headroom);
	return true;
}
