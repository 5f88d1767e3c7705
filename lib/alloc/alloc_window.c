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
 *
 * Growth headroom (ours, not ext3's). ext3 books a new file's first window
 * in the first gap after the goal that holds it, which is usually right
 * behind another file's window; when that neighbour fills its window and
 * doubles, the space after it is taken, so it jumps, and with many
 * streaming writers every file ends up in pieces (256 writers of 4 MiB:
 * ~4 runs per file in our ext3 walk, ~9 in the kernel's). So the gap walk
 * first runs with headroom: every other file's window counts as reaching
 * past its end by what that file is expected to grow into (unhinted: the
 * windows it books while doubling up to and including its first 1027-block
 * window, 3059 blocks from a window of 8, 1027 once at the cap; hinted: 0,
 * its window already holds the file), and a gap must hold our window plus
 * our own headroom — except the gap right after our own window, where we
 * grow in place into our own headroom. If no such gap turns up within a
 * budget of ROOM_WALK_MAX windows stepped over (the goal group, then the
 * others), or if the headroom of all open windows plus ours is more than
 * the free blocks (then no gap can hold it; the set keeps the sum, so this
 * costs O(groups) and keeps crowded images at ext3's cost), the walk is
 * redone exactly as ext3 (headroom 0), then windowless: the policy only
 * spaces windows out, it never reports the image full. Window sizes stay
 * ext3's (8, doubling when more than half used, cap 1027), and list and
 * rbtree run the same walk. Limits: the walk looks at the headroom
 * of the windows it meets from the one at or before the goal, not of
 * earlier windows whose headroom reaches further; hinted runs (find_run)
 * avoid windows but not headroom, so booked hinted placement does not
 * depend on unhinted files' growth estimates.
 *
 * Long streams (ours, rbtree mode only; list keeps the 2004 behaviour as
 * the comparison row). Headroom keeps a file whole while it doubles up to
 * the cap, but a file that goes on streaming books a 1027-block window
 * after every 1027 blocks, and with a few such writers each next window
 * lands behind a neighbour's: 4 writers of 256 MiB without hints ended
 * in ~21 pieces each. So once a file has filled two capped windows (4094
 * blocks, 16 MiB at 4 KiB) its windows reach to the end of a group: the
 * rest of the group it is in when no other window lies ahead there (it
 * grows in place), else the free part of the first group after it that
 * holds no window and no claimed block but its metadata — a group of its
 * own, as mballoc gives streams. Such a window has no headroom (it already
 * holds all the group can give). If no unused group turns up within
 * STREAM_SCAN groups, the file carries on with ext3's 1027-block windows.
 * Held free blocks go back at e3_rsv_discard, and other files use them as
 * the last resort, as with any window.
 */
#include <errno.h>

#include "alloc_int.h"

/* A window search that keeps losing races gives up after this many new
 * windows and lets the caller fall back to windowless allocation. */
#define MAX_WINDOW_RETRIES 1000

/* The walk with headroom gives up (and plain ext3 runs) after stepping
 * over this many windows, summed over the groups it tries: it bounds the
 * cost of a new window when every group is crowded (65536 open windows)
 * while letting a new file pass a few hundred growing neighbours. */
#define ROOM_WALK_MAX 512

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

/* How far past a window of `size` blocks an unhinted file is expected to
 * grow: the windows that follow it while it keeps doubling, up to and
 * including the first full-size one (from 8: 16 + 32 + ... + 1024 + 1027
 * = 3059; from 1027 on: 1027). */
static uint32_t growth_headroom(uint64_t size)
{
	uint64_t h = 0, w = size;

	if (!size)
		return 0;
	do {
		w = w * 2 > E3_RSV_MAX ? E3_RSV_MAX : w * 2;
		h += w;
	} while (w < E3_RSV_MAX);
	return (uint32_t)h;
}

/* [start, end] stops being reserved: its blocks still free become free
 * and outside every window, which voids the resume points of hinted
 * searches (alloc_int.h). rsv_lock held. */
static void range_unreserved(struct e3_alloc *a, blk64_t start, blk64_t end)
{
	if (bm_next_free(a, start, end) != E3_NOBLK)
		__atomic_fetch_add(&a->free_gen, 1, __ATOMIC_RELEASE);
}

/* r's range is about to leave the set (or change). rsv_lock held. */
static void window_leaves(struct e3_alloc *a, struct e3_rsv *r)
{
	if (r->linked && r != &a->set.dummy)
		range_unreserved(a, r->start, r->end);
}

static void window_unlink(struct e3_alloc *a, struct e3_rsv *r)
{
	window_leaves(a, r);
	rsv_set_remove(&a->set, r);
}

/* ext3's alloc_new_reservation + find_next_reservable_window: book a window
 * in group [gs, ge] from goal (or the group start) in the first gap big
 * enough, then check the bitmap has a free block in it; if the first free
 * block lies beyond the window, search again from there. With room, every
 * other window counts as reaching its headroom past its end, and a gap
 * must hold our window plus our own headroom, except the gap right after
 * our own window, where we grow in place into our headroom. room: NULL
 * for plain ext3, else what is left of the walk's budget (windows). */
static int new_window(struct e3_alloc *a, struct e3_rsv *r, blk64_t gs,
		      blk64_t ge, blk64_t goal, int *room)
{
	blk64_t search = goal != E3_NOBLK ? goal : gs, size, cur, b, reach, free;
	struct e3_rsv *rsv, *prev, *next;
	uint32_t own;

	/* A window running on into the next group: keep its tail. */
	if (r->linked && r->start <= ge && r->end > ge && search >= r->start)
		return -1;
	size = r->goal_size;
	if (r->linked && r->alloc_hit > (r->end - r->start + 1) / 2) {
		size = size * 2 > E3_RSV_MAX ? E3_RSV_MAX : size * 2;
		r->goal_size = (uint32_t)size;
	}
	own = growth_headroom(size);
	free = room ? e3_alloc_free_count(a) : 0;
	pthread_mutex_lock(&a->rsv_lock);
	/* More headroom promised than free blocks: no gap will have room. */
	if (room && a->set.headroom - (r->linked ? r->headroom : 0) + own +
	    size > free) {
		*room = 0;
		goto fail;
	}
	for (;;) {
		rsv = rsv_set_find(&a->set, search, r);
		cur = search;
		for (;;) {
			if (room && --*room <= 0)
				goto fail;
			reach = rsv->end + (room && rsv != r ? rsv->headroom : 0);
			if (cur <= reach)
				cur = reach + 1;
			if (cur > ge)
				goto fail;
			prev = rsv;
			next = rsv_set_next(&a->set, rsv);
			if (!next || cur + size + (room && prev != r ? own : 0)
			    <= next->start)
				break;
			rsv = next;
		}
		if (prev != r) {
			window_unlink(a, r);
			r->start = cur;
			r->end = cur + size - 1 < a->nblocks ? cur + size - 1
				: a->nblocks - 1;
			if (rsv_set_insert(&a->set, r, prev))
				goto fail;
		} else {	/* our own window slides forward */
			window_leaves(a, r);
			r->start = cur;
			r->end = cur + size - 1 < a->nblocks ? cur + size - 1
				: a->nblocks - 1;
		}
		rsv_set_headroom(&a->set, r, own);
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
	window_unlink(a, r);
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
			    blk64_t goal, blk64_t count, int *room,
			    blk64_t *start)
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
			if (new_window(a, r, gs, ge, goal, room))
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

/* ---- long streams (rbtree mode) -------------------------------------------- */

/* A file becomes a long stream when this many of its 1027-block windows
 * have filled (from 8: 8 + 16 + ... + 1024 + 2 x 1027 = 4094 blocks). */
#define STREAM_AFTER 2

/* Groups a long stream looks at for one of its own before it gives up and
 * carries on with ext3's windows: bounds the cost on a big, busy image. */
#define STREAM_SCAN 64

/* The rest of group g from `from` on holds no window but r's. rsv_lock
 * held. */
static bool rest_unreserved(struct e3_alloc *a, struct e3_rsv *r,
			    blk64_t from, blk64_t ge)
{
	struct e3_rsv *w = rsv_set_find(&a->set, from, r), *next;

	if (w != &a->set.dummy && w != r && w->end >= from)
		return false;
	next = rsv_set_next(&a->set, w);
	if (next == r)
		next = rsv_set_next(&a->set, r);
	return !next || next->start > ge;
}

/* A group of its own for a long stream: no window in it and nothing
 * claimed but its metadata. rsv_lock held. */
static bool group_unused(struct e3_alloc *a, dgrp_t g)
{
	blk64_t gs = grp_first(a, g), ge = grp_last(a, g);
	struct e3_rsv *w;

	if (__atomic_load_n(&a->gfree[g], __ATOMIC_RELAXED) < (ge - gs + 1) / 2)
		return false;
	w = rsv_set_find(&a->set, ge, NULL);
	if (w != &a->set.dummy && w->end >= gs)
		return false;
	return bm_next_obstacle(a, gs, ge) == E3_NOBLK;
}

/* Books a long stream's next window to the end of a group: the rest of
 * the goal's group if no other window lies ahead in it (the file grows in
 * place), else the free part of the first unused group after it. 0, or -1
 * if neither exists (the caller goes on with ext3's windows). */
static int stream_book(struct e3_alloc *a, struct e3_rsv *r, blk64_t goal)
{
	dgrp_t g0 = grp_of(a, goal), g = g0;
	blk64_t s = E3_NOBLK, ge = grp_last(a, g0);
	int scanned = 0;

	pthread_mutex_lock(&a->rsv_lock);
	if (rest_unreserved(a, r, goal, ge))
		s = bm_next_free(a, goal, ge);
	for (dgrp_t i = 1; s == E3_NOBLK && i < a->ngroups &&
	     scanned < STREAM_SCAN; i++) {
		g = (dgrp_t)((g0 + i) % a->ngroups);
		if (__atomic_load_n(&a->gfree[g], __ATOMIC_RELAXED) == 0)
			continue;
		scanned++;
		if (group_unused(a, g))
			s = bm_next_free(a, grp_first(a, g), grp_last(a, g));
	}
	if (s == E3_NOBLK) {
		pthread_mutex_unlock(&a->rsv_lock);
		return -1;
	}
	window_unlink(a, r);
	r->start = s;
	r->end = grp_last(a, g);
	r->alloc_hit = 0;
	rsv_set_headroom(&a->set, r, 0);	/* it holds the group already */
	if (rsv_set_insert(&a->set, r, NULL)) {
		r->start = r->end = 0;
		pthread_mutex_unlock(&a->rsv_lock);
		return -1;
	}
	__atomic_fetch_add(&a->n_window_allocs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&a->rsv_lock);
	return 0;
}

/* Before ext3's path: once r's window is used up, count it if it was a
 * full 1027-block one, and if r has become a long stream, book its next
 * window to the end of a group and claim from it. Returns blocks claimed
 * (0: carry on as ext3, in r's window or with a new ext3 window). */
static blk64_t try_stream(struct e3_alloc *a, struct e3_rsv *r, blk64_t goal,
			  blk64_t count, blk64_t *start)
{
	blk64_t len, b, n;

	if (a->mode != E3_ALLOC_RBTREE)
		return 0;
	if (r->linked) {
		if (goal >= r->start && goal <= r->end &&
		    bm_next_free(a, goal, r->end) != E3_NOBLK)
			return 0;	/* still filling this window */
		len = r->end - r->start + 1;
		if (len >= E3_RSV_MAX && r->alloc_hit > len / 2 &&
		    r->full_windows < STREAM_AFTER)
			r->full_windows++;
	}
	if (r->full_windows < STREAM_AFTER || stream_book(a, r, goal))
		return 0;
	b = bm_next_free(a, goal >= r->start && goal <= r->end ? goal
			 : r->start, r->end);
	if (b == E3_NOBLK)
		return 0;
	n = bm_claim_run(a, b, r->end, count);
	if (n) {
		r->alloc_hit += (uint32_t)n;
		*start = b;
	}
	return n;
}

/* ext3_new_blocks with a window: goal group, then the others; first with
 * growth headroom, then (no such gap anywhere) as plain ext3. A long
 * stream in rbtree mode first gets a window to the end of a group. */
static errcode_t alloc_ext3(struct e3_alloc *a, struct e3_rsv *r,
			    blk64_t goal, blk64_t count, blk64_t *start,
			    blk64_t *got)
{
	uint32_t windowsz = r->goal_size, fg;
	dgrp_t g0 = grp_of(a, goal);

	fg = __atomic_load_n(&a->gfree[g0], __ATOMIC_RELAXED);
	if (windowsz == 0 || (fg > 0 && fg < windowsz && !r->linked))
		return alloc_windowless(a, goal, count, true, start, got);
	if ((*got = try_stream(a, r, goal, count, start)))
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		int budget = ROOM_WALK_MAX, *room = pass ? NULL : &budget;

		fg = __atomic_load_n(&a->gfree[g0], __ATOMIC_RELAXED);
		if (fg > 0 && (*got = try_with_rsv(a, r, g0, goal, count,
						   room, start)))
			return 0;
		for (dgrp_t i = 1; i <= a->ngroups; i++) {
			dgrp_t g = (dgrp_t)((g0 + i) % a->ngroups);

			if (room && budget <= 0)
				break;
			fg = __atomic_load_n(&a->gfree[g], __ATOMIC_RELAXED);
			if (fg == 0 || fg <= windowsz / 2)
				continue;
			if ((*got = try_with_rsv(a, r, g, E3_NOBLK, count,
						 room, start)))
				return 0;
		}
	}
	return E3_IMAGE_FULL;
}

/* ---- size-hinted windows --------------------------------------------------- */

/* First run of `want` free blocks from goal, wrapping, that no window
 * touches, else the largest such run (in *best). With cross_meta, group-head
 * metadata inside a run does not end it. rsv_lock held.
 *
 * Windows and the bitmap are walked forward together: each free stretch is
 * cut at the next window before the bitmap is scanned, so a bulk load
 * whose booked windows still read as free costs one window step each, not
 * a scan of all the free space behind them per window; and the search
 * starts at the goal's resume point (alloc_int.h) when it still holds,
 * which skips only blocks that cannot be candidates: the result is the
 * same. */
static bool find_run(struct e3_alloc *a, blk64_t goal, blk64_t want,
		     bool cross_meta, struct e3_extent *best)
{
	uint64_t gen = __atomic_load_n(&a->free_gen, __ATOMIC_ACQUIRE);
	struct e3_resume *rp = &a->resume[grp_of(a, goal) % 16];
	blk64_t first = E3_NOBLK;	/* pass 0's first candidate */
	bool found = false;

	best->n = 0;
	for (int pass = 0; pass < 2 && !found; pass++) {
		blk64_t cur = pass ? a->first : goal;
		blk64_t limit = pass ? goal - 1 : a->nblocks - 1;
		struct e3_rsv *w = NULL;

		if (pass && goal == a->first)
			break;
		if (!pass && rp->gen == gen && rp->goal == goal &&
		    rp->resume > cur)
			cur = rp->resume;
		while (cur <= limit) {
			blk64_t s = bm_next_free(a, cur, limit), o, e, wl, ol, n;
			struct e3_rsv *nx;

			if (s == E3_NOBLK)
				break;
			w = rsv_set_find(&a->set, s, w);
			if (w != &a->set.dummy && w->end >= s) {
				/* s is inside a window; so is everything up to
				 * the end of the windows that follow it back to
				 * back (files booked one after another) */
				while ((nx = rsv_set_next(&a->set, w)) &&
				       nx->start == w->end + 1)
					w = nx;
				cur = w->end + 1;
				continue;
			}
			if (!pass && first == E3_NOBLK)
				first = s;
			nx = rsv_set_next(&a->set, w);
			wl = nx && nx->start <= limit ? nx->start - 1 : limit;
			/* without metadata to cross, want blocks past s are
			 * all that need looking at */
			if (cross_meta)
				ol = wl;
			else
				ol = want - 1 < wl - s ? s + want - 1 : wl;
			o = cross_meta ? bm_next_obstacle(a, s, wl)
				: bm_next_used(a, s, ol);
			e = o == E3_NOBLK ? ol : o - 1;
			/* [s, e] is all free unless metadata is crossed; the
			 * count stops at want, a fresh image's free stretch
			 * can be the rest of the disk */
			if (!cross_meta) {
				n = e - s + 1;
				o = n >= want ? s + want - 1 : e;
			} else {
				o = bm_nth_free(a, s, e, want);
				n = o == E3_NOBLK ? bm_count_free(a, s, e) : want;
				if (o == E3_NOBLK && n)
					o = bm_nth_free(a, s, e, n);
			}
			if (n > best->n || n >= want) {
				best->start = s;
				best->n = o - s + 1;
			}
			if (n >= want) {
				found = true;
				break;
			}
			cur = e + 1;
		}
		if (!pass) {	/* nothing before first, or to the end */
			rp->goal = goal;
			rp->gen = gen;
			rp->resume = first != E3_NOBLK ? first : a->nblocks;
		}
	}
	return found;
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
		window_unlink(a, c);
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
	window_unlink(a, r);
	r->start = r->end = 0;
	rsv_set_headroom(&a->set, r, 0);
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
	window_unlink(a, r);
	/* c's range stays reserved, under r, unless that fails */
	rsv_set_remove(&a->set, c);
	r->start = c->start;
	r->end = c->end;
	r->chain = c->chain;
	r->alloc_hit = 0;
	if (rsv_set_insert(&a->set, r, NULL)) {
		range_unreserved(a, r->start, r->end);
		r->start = r->end = 0;
	}
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
	/* linked and chain change only by r's owner, the caller: a file
	 * that booked no window (claimed at once, or none mode) needs no
	 * lock round trip */
	if (!r->linked && !r->chain)
		return;
	pthread_mutex_lock(&a->rsv_lock);
	drop_chain(a, r);
	window_unlink(a, r);
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

/* The window book_hinted would book first is, for a hint that fits one
 * group and a free run that holds it whole, exactly the run the file's
 * first e3_alloc_blocks then claims from it: claimed here at once, with
 * no window to insert into the set now and remove again at close (a
 * tenth of a small file's per-file instructions in copy-in profiles).
 * The blocks are the same, and so is every later search: claimed blocks
 * and booked ones are both skipped by find_run and by windowless
 * allocation (which only takes windowed blocks on a nearly full image,
 * where DETERMINISM does not hold anyway). Anything else books windows
 * as e3_rsv_book does. */
errcode_t e3_rsv_book_claim(struct e3_alloc *a, struct e3_rsv *r,
			    blk64_t goal, blk64_t *start, blk64_t *got)
{
	struct e3_extent run;
	blk64_t n = 0;

	*got = 0;
	if (a->mode == E3_ALLOC_NONE || !r->hint_blocks)
		return 0;
	goal = alloc_clamp_goal(a, goal);
	if (r->hint_blocks > a->bpg || r->linked || r->chain)
		return e3_rsv_book(a, r, goal);
	pthread_mutex_lock(&a->rsv_lock);
	if (find_run(a, goal, r->hint_blocks, false, &run)) {
		/* under rsv_lock no one books over the run; a windowless
		 * allocation (libext2fs' hook, not under it) may still take
		 * one of its blocks first: then windows as usual */
		n = bm_claim_run(a, run.start, run.start + run.n - 1, run.n);
		if (n && n < run.n) {
			bm_release(a, run.start, n);
			n = 0;
		}
	}
	pthread_mutex_unlock(&a->rsv_lock);
	if (!n)
		return e3_rsv_book(a, r, goal);
	__atomic_fetch_add(&a->n_claimed, n, __ATOMIC_RELAXED);
	r->last_pblk = run.start + n - 1;
	r->hint_blocks = 0;
	*start = run.start;
	*got = n;
	return 0;
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
