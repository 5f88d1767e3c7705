/*
 * alloc_window.c: where blocks go. ext3's reservation-window algorithm
 * (fs/ext3/balloc.c, final form; see ext3-facts.md §1.4-1.5) for files of
 * unknown size, a whole-file window placed on a free run for size-hinted
 * files, and plain goal-then-first-free allocation for `none` mode, for
 * libext2fs' own helpers, and as the last resort when every free block
 * is inside somebody's window.
 *
 * Differences from ext3, on purpose: root-reserved blocks are not held
 * back (an offline tool writes as the image's owner); windows are not
 * clipped to a group, since our bitmap is one array (group metadata in a
 * window is simply in use); windowless allocation first steps around
 * other files' windows and only then takes blocks inside them; and the
 * hinted whole-file windows. Booking a hinted window scans the bitmap
 * under rsv_lock (bounded by the first fitting run; on a nearly full,
 * fragmented image it can scan the whole bitmap a few times).
 */
#include <errno.h>

#include "alloc_int.h"

/* A window search that keeps losing races gives up after this many new
 * windows and lets the caller fall back to windowless allocation. */
#define MAX_WINDOW_RETRIES 1000

blk64_t alloc_clamp_goal(const struct e3_alloc *a, blk64_t goal)
{
	return (goal < a->first || goal >= a->nblocks) ? a->first : goal;
}

/* ---- windowless --------------------------------------------------------- */

/* One group without a window: ext3's ext3_try_to_allocate(my_rsv = NULL),
 * optionally stepping around other files' windows (polite). */
static blk64_t try_windowless(struct e3_alloc *a, dgrp_t g, blk64_t goal,
			      blk64_t count, bool polite, blk64_t *start)
{
	blk64_t gs = grp_first(a, g), ge = grp_last(a, g);
	blk64_t from = goal != E3_NOBLK ? goal : gs;

	while (from <= ge) {
		blk64_t b = bm_find_usable(a, goal, from, ge);
		blk64_t lo = from, hi = ge, n;
		int back;

		if (b == E3_NOBLK)
			return 0;
		if (polite) {
			struct e3_rsv *w, *next;

			pthread_mutex_lock(&a->rsv_lock);
			w = rsv_set_find(&a->set, b, NULL);
			if (w != &a->set.dummy && w->end >= b) {
				from = w->end + 1;
				pthread_mutex_unlock(&a->rsv_lock);
				goal = E3_NOBLK;
				continue;
			}
			if (w->end + 1 > lo)
				lo = w->end + 1;
			next = rsv_set_next(&a->set, w);
			if (next && next->start - 1 < hi)
				hi = next->start - 1;
			pthread_mutex_unlock(&a->rsv_lock);
		}
		/* Start at the front of the free run, as ext3 does. */
		if (b != goal)
			for (back = 0; back < 7 && b > lo && !bm_used(a, b - 1);
			     back++)
				b--;
		n = bm_claim_run(a, b, hi, count);
		if (n) {
			*start = b;
			return n;
		}
		from = b + 1;		/* lost a race: move on by one */
		goal = E3_NOBLK;
	}
	return 0;
}

errcode_t alloc_windowless(struct e3_alloc *a, blk64_t goal, blk64_t count,
			   bool polite, blk64_t *start, blk64_t *got)
{
	dgrp_t g0 = grp_of(a, goal);

	/* The goal group first from the goal, then every group from its
	 * start, the goal group coming round again last. */
	for (dgrp_t i = 0; i <= a->ngroups; i++) {
		dgrp_t g = (dgrp_t)((g0 + i) % a->ngroups);

		if (!__atomic_load_n(&a->gfree[g], __ATOMIC_RELAXED))
			continue;
		*got = try_windowless(a, g, i == 0 ? goal : E3_NOBLK, count,
				      polite, start);
		if (*got)
			return 0;
	}
	return E3_IMAGE_FULL;
}

/* ---- ext3 windows (no size hint) ----------------------------------------- */

/* ext3's alloc_new_reservation + find_next_reservable_window: book a window
 * in group [gs, ge] from goal (or the group start) in the first gap big
 * enough, then check the bitmap has a free block in it; if the first free
 * block lies beyond the window, search again from there. */
static int new_window(struct e3_alloc *a, struct e3_rsv *r, blk64_t gs,
		      blk64_t ge, blk64_t goal)
{
	blk64_t search = goal != E3_NOBLK ? goal : gs, size, cur, b;
	struct e3_rsv *rsv, *prev, *next;

	/* A window running on into the next group: keep its tail. */
	if (r->linked && r->start <= ge && r->end > ge && search >= r->start)
		return -1;
	size = r->goal_size;
	if (r->linked && r->alloc_hit > (r->end - r->start + 1) / 2) {
		size = size * 2 > E3_RSV_MAX ? E3_RSV_MAX : size * 2;
		r->goal_size = (uint32_t)size;
	}
	pthread_mutex_lock(&a->rsv_lock);
	for (;;) {
		rsv = rsv_set_find(&a->set, search, r);
		cur = search;
		for (;;) {
			if (cur <= rsv->end)
				cur = rsv->end + 1;
			if (cur > ge)
				goto fail;
			prev = rsv;
			next = rsv_set_next(&a->set, rsv);
			if (!next || cur + size <= next->start)
				break;
			rsv = next;
		}
		if (prev != r) {
			rsv_set_remove(&a->set, r);
			r->start = cur;
			r->end = cur + size - 1 < a->nblocks ? cur + size - 1
				: a->nblocks - 1;
			if (rsv_set_insert(&a->set, r, prev))
				goto fail;
		} else {	/* our own window slides forward */
			r->start = cur;
			r->end = cur + size - 1 < a->nblocks ? cur + size - 1
				: a->nblocks - 1;
		}
		r->alloc_hit = 0;
		__atomic_fetch_add(&a->n_window_allocs, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&a->rsv_lock);

		b = bm_next_free(a, cur, ge);
		if (b != E3_NOBLK && b <= r->end)
			return 0;
		pthread_mutex_lock(&a->rsv_lock);
		if (b == E3_NOBLK)
			goto fail;
		search = b;
	}
fail:
	rsv_set_remove(&a->set, r);
	r->start = r->end = 0;
	pthread_mutex_unlock(&a->rsv_lock);
	return -1;
}

/* Best effort: grow the window's end by need, up to the next window. */
static void try_extend(struct e3_alloc *a, struct e3_rsv *r, blk64_t need)
{
	struct e3_rsv *next;
	blk64_t end = r->end + need;

	if (pthread_mutex_trylock(&a->rsv_lock))
		return;
	next = rsv_set_next(&a->set, r);
	if (next && end >= next->start)
		end = next->start - 1;
	if (end >= a->nblocks)
		end = a->nblocks - 1;
	if (end > r->end)
		r->end = end;
	pthread_mutex_unlock(&a->rsv_lock);
}

/* ext3_try_to_allocate_with_rsv for group g. Returns blocks claimed. */
static blk64_t try_with_rsv(struct e3_alloc *a, struct e3_rsv *r, dgrp_t g,
			    blk64_t goal, blk64_t count, blk64_t *start)
{
	blk64_t gs = grp_first(a, g), ge = grp_last(a, g);
	bool fail = false;

	for (int tries = 0; tries < MAX_WINDOW_RETRIES; tries++) {
		bool usable = r->linked && r->start <= ge && r->end >= gs &&
			(goal == E3_NOBLK || (goal >= r->start && goal <= r->end));
		blk64_t from, b, n;

		if (!usable || fail) {
			if (r->goal_size < count)
				r->goal_size = (uint32_t)(count < UINT32_MAX ? count : UINT32_MAX);
			if (new_window(a, r, gs, ge, goal))
				return 0;
			if (goal != E3_NOBLK && (goal < r->start || goal > r->end))
				goal = E3_NOBLK;
		} else if (goal != E3_NOBLK && r->end - goal + 1 < count) {
			try_extend(a, r, count - (r->end - goal + 1));
		}
		from = goal != E3_NOBLK ? goal : (r->start > gs ? r->start : gs);
		b = bm_next_free(a, from, r->end);
		if (b != E3_NOBLK) {
			n = bm_claim_run(a, b, r->end, count);
			if (n) {
				r->alloc_hit += (uint32_t)n;
				*start = b;
				return n;
			}
		}
		fail = true;
	}
	return 0;
}

/* ext3_new_blocks with a window: goal group, then the others. */
static errcode_t alloc_ext3(struct e3_alloc *a, struct e3_rsv *r,
			    blk64_t goal, blk64_t count, blk64_t *start,
			    blk64_t *got)
{
	uint32_t windowsz = r->goal_size, fg;
	dgrp_t g0 = grp_of(a, goal);

	fg = __atomic_load_n(&a->gfree[g0], __ATOMIC_RELAXED);
	if (windowsz == 0 || (fg > 0 && fg < windowsz && !r->linked))
		return alloc_windowless(a, goal, count, true, start, got);
	if (fg > 0 && (*got = try_with_rsv(a, r, g0, goal, count, start)))
		return 0;
	for (dgrp_t i = 1; i <= a->ngroups; i++) {
		dgrp_t g = (dgrp_t)((g0 + i) % a->ngroups);

		fg = __atomic_load_n(&a->gfree[g], __ATOMIC_RELAXED);
		if (fg == 0 || fg <= windowsz / 2)
			continue;
		if ((*got = try_with_rsv(a, r, g, E3_NOBLK, count, start)))
			return 0;
	}
	return E3_IMAGE_FULL;
}

/* ---- size-hinted windows --------------------------------------------------- */

/* Trims [s, *e] so that no window overlaps it. Returns false (and sets
 * *skip past the window) when a window covers s itself. rsv_lock held. */
static bool clear_of_windows(struct e3_alloc *a, blk64_t s, blk64_t *e,
			     blk64_t *skip)
{
	for (;;) {
		struct e3_rsv *w = rsv_set_find(&a->set, *e, NULL);

		if (w == &a->set.dummy || w->end < s)
			return true;
		if (w->start <= s) {
			*skip = w->end + 1;
			return false;
		}
		*e = w->start - 1;
	}
}

/* First run of `want` free blocks from goal, wrapping, that no window
 * touches, else the largest such run (in *best). With cross_meta, group-head
 * metadata inside a run does not end it. rsv_lock held. */
static bool find_run(struct e3_alloc *a, blk64_t goal, blk64_t want,
		     bool cross_meta, struct e3_extent *best)
{
	best->n = 0;
	for (int pass = 0; pass < 2; pass++) {
		blk64_t cur = pass ? a->first : goal;
		blk64_t limit = pass ? goal - 1 : a->nblocks - 1;

		if (pass && goal == a->first)
			break;
		while (cur <= limit) {
			blk64_t s = bm_next_free(a, cur, limit), o, e, n;

			if (s == E3_NOBLK)
				break;
			o = cross_meta ? bm_next_obstacle(a, s, limit)
				: bm_next_used(a, s, limit);
			e = o == E3_NOBLK ? limit : o - 1;
			if (!clear_of_windows(a, s, &e, &cur))
				continue;
			n = bm_count_free(a, s, e);
			if (n >= want) {
				best->start = s;
				best->n = bm_nth_free(a, s, e, want) - s + 1;
				return true;
			}
			if (n > best->n) {
				best->start = s;
				best->n = bm_nth_free(a, s, e, n) - s + 1;
			}
			cur = e + 1;
		}
	}
	return false;
}

/* The next run for a hinted file: inside one group if the file (or what
 * is left of it) fits one, else one that only crosses group-head metadata;
 * failing both, the largest run (clamped to want). rsv_lock held. */
static bool pick_run(struct e3_alloc *a, blk64_t goal, blk64_t want,
		     blk64_t *rs, blk64_t *re)
{
	struct e3_extent strict = { 0, 0 }, cross, *best = &strict;

	if (!(want <= a->bpg && find_run(a, goal, want, false, &strict)) &&
	    (find_run(a, goal, want, true, &cross) || cross.n > strict.n))
		best = &cross;
	if (!best->n)
		return false;
	*rs = best->start;
	*re = best->start + best->n - 1;
	return true;
}

/* Frees the windows booked after r's current one. rsv_lock held. */
static void drop_chain(struct e3_alloc *a, struct e3_rsv *r)
{
	while (r->chain) {
		struct e3_rsv *c = r->chain;

		r->chain = c->chain;
		rsv_set_remove(&a->set, c);
		free(c);
	}
}

/* Books the whole hint now: the best run, and if it holds less than the
 * hint, the best run for the rest, and so on (each booked as a window, so
 * the next search skips it; the later ones hang off r->chain). The runs
 * chosen depend only on which blocks are claimed or reserved, never on
 * how far other files have got, so placement does not depend on timing.
 * After MAX_CHAIN runs the rest is booked when it is needed. */
#define MAX_CHAIN 64

static int book_hinted(struct e3_alloc *a, struct e3_rsv *r, blk64_t goal)
{
	struct e3_rsv **tail = &r->chain, *w = r;
	blk64_t left = r->hint_blocks, s, e;
	int booked = 0;

	pthread_mutex_lock(&a->rsv_lock);
	drop_chain(a, r);
	rsv_set_remove(&a->set, r);
	r->start = r->end = 0;
	while (left && booked < MAX_CHAIN && pick_run(a, goal, left, &s, &e)) {
		if (booked && !(w = calloc(1, sizeof(*w))))
			break;
		w->start = s;
		w->end = e;
		if (rsv_set_insert(&a->set, w, NULL)) {
			if (w != r)
				free(w);
			break;
		}
		if (w != r) {
			*tail = w;
			tail = &w->chain;
		}
		left -= bm_count_free(a, s, e);
		booked++;
	}
	r->alloc_hit = 0;
	__atomic_fetch_add(&a->n_window_allocs, (uint64_t)booked, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&a->rsv_lock);
	return booked ? 0 : -1;
}

/* r's window is used up: move it onto the next booked run. */
static void next_in_chain(struct e3_alloc *a, struct e3_rsv *r)
{
	struct e3_rsv *c = r->chain;

	pthread_mutex_lock(&a->rsv_lock);
	rsv_set_remove(&a->set, r);
	rsv_set_remove(&a->set, c);
	r->start = c->start;
	r->end = c->end;
	r->chain = c->chain;
	r->alloc_hit = 0;
	if (rsv_set_insert(&a->set, r, NULL))
		r->start = r->end = 0;
	pthread_mutex_unlock(&a->rsv_lock);
	free(c);
}

static errcode_t alloc_hinted(struct e3_alloc *a, struct e3_rsv *r,
			      blk64_t goal, blk64_t count, blk64_t *start,
			      blk64_t *got)
{
	for (int tries = 0; tries < MAX_WINDOW_RETRIES; tries++) {
		if (r->linked) {
			blk64_t b = (goal >= r->start && goal <= r->end) ? goal
				: r->start;

			while ((b = bm_next_free(a, b, r->end)) != E3_NOBLK) {
				blk64_t n = bm_claim_run(a, b, r->end, count);

				if (n) {
					r->alloc_hit += (uint32_t)n;
					*start = b;
					*got = n;
					return 0;
				}
				b++;
			}
		}
		if (r->chain)
			next_in_chain(a, r);
		else if (book_hinted(a, r, goal))
			return E3_IMAGE_FULL;
	}
	return E3_IMAGE_FULL;
}

void alloc_discard(struct e3_alloc *a, struct e3_rsv *r)
{
	pthread_mutex_lock(&a->rsv_lock);
	drop_chain(a, r);
	rsv_set_remove(&a->set, r);
	r->start = r->end = 0;
	pthread_mutex_unlock(&a->rsv_lock);
}

/* ---- the entry points ------------------------------------------------------ */

errcode_t e3_rsv_book(struct e3_alloc *a, struct e3_rsv *r, blk64_t goal)
{
	if (a->mode == E3_ALLOC_NONE || !r->hint_blocks)
		return 0;
	return book_hinted(a, r, alloc_clamp_goal(a, goal)) ? E3_IMAGE_FULL : 0;
}

errcode_t e3_alloc_blocks(struct e3_alloc *a, struct e3_rsv *r, blk64_t goal,
			  blk64_t count, blk64_t *start, blk64_t *got)
{
	errcode_t err;

	if (!count || !start || !got)
		return EINVAL;
	goal = alloc_clamp_goal(a, goal);
	*got = 0;
	if (a->mode == E3_ALLOC_NONE) {
		err = alloc_windowless(a, goal, count, false, start, got);
	} else {
		if (!r)
			err = E3_IMAGE_FULL;
		else if (r->hint_blocks)
			err = alloc_hinted(a, r, goal, count, start, got);
		else
			err = alloc_ext3(a, r, goal, count, start, got);
		if (err == E3_IMAGE_FULL) {
			if (r)
				__atomic_fetch_add(&a->n_fallbacks, 1,
						   __ATOMIC_RELAXED);
			err = alloc_windowless(a, goal, count, true, start, got);
			if (err == E3_IMAGE_FULL)
				err = alloc_windowless(a, goal, count, false,
						       start, got);
		}
	}
	if (err)
		return err;
	__atomic_fetch_add(&a->n_claimed, *got, __ATOMIC_RELAXED);
	if (r) {
		r->last_pblk = *start + *got - 1;
		r->hint_blocks -= r->hint_blocks < *got ? r->hint_blocks : *got;
	}
	return 0;
}
