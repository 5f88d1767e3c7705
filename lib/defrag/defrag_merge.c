/*
 * defrag_merge.c: the last step of a whole-filesystem run — free extents
 * joined by emptying the stretches of small files between them.
 *
 * What the placement plan and the per-file passes leave is free space in
 * few extents per group, each pair of neighbours split by a stretch of
 * small contiguous files (on the aged 4 GiB image, 85 such stretches in
 * 31 groups). The settling in defrag_pack.c moves one file at a time
 * and only when that alone leaves fewer extents, so a stretch of two or
 * more files never goes. Here a stretch — a gap — goes whole: every file
 * in it moves into a hole elsewhere, at the hole's start (which borders
 * data or the group's metadata, so no new extent appears) and the two
 * extents around the gap become one.
 *
 * Which gaps: the cheapest first, each only while the blocks it costs to
 * move are at most the free blocks it joins (its two neighbours): every
 * block copied makes at least one block of free space contiguous, so the
 * step never costs more than the gathering it buys. A gap qualifies only
 * if it is exactly tiled by small movable files lying wholly inside it
 * (no group metadata, EA block or large file) and each of them is one
 * run; none moved by this step before (no file bounces); and its right
 * neighbour has taken no file this round (a file at that hole's start
 * would split the joined extent again). Every file's destination is
 * chosen before the first moves, so a gap is emptied whole or not at
 * all: an exact fit first (one hole fewer), else the smallest hole that
 * holds it.
 *
 * Rounds, each from a commit: the holes are the block bitmap right after
 * it, and the blocks a round frees are free only at the next commit, so
 * they join in the next round (the allocator's deferred list keeps them
 * from any other use meanwhile). DF_MERGE_ROUNDS at most, while a round
 * moves something.
 *
 * Crash safety: every move is an ordinary DF_PLACE move (defrag_move.c:
 * copy, flush, one journaled switch, the target exactly the planned run
 * or nothing), so a stop or a kill between two moves leaves a gap half
 * emptied: consistent, only with free space in as many extents as before.
 *
 * Memory: the owner map (defrag_owners.c) and 24 bytes per free extent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e3img.h"
#include "defrag_int.h"
#include "util/grow.h"

#define DF_MERGE_ROUNDS 8

struct mg_hole {
	blk64_t start, len;
	int took;			/* a file was placed in it */
	int keep;			/* the right side of a gap being
					   emptied: its start stays free */
};

struct mg_gap {
	blk64_t cost;
	size_t left;			/* holes[left] | gap | holes[left+1] */
};

struct merge {
	struct df_ctx *c;
	struct df_owners *own;
	ext2fs_inode_bitmap moved;	/* moved by this step: not again */
	struct mg_hole *h;
	size_t nh, caph;
	struct mg_gap *g;
	size_t ng, capg;
	struct df_owner *v;		/* the files of one gap */
	size_t nv, capv;
	blk64_t *goal;			/* where each goes */
	size_t *dest;			/* in which hole */
	size_t capdest;
	uint64_t moves;			/* this round */
};

static errcode_t add_hole(void *arg, blk64_t start, blk64_t len)
{
	struct merge *m = arg;
	struct mg_hole *v;

	if (!(v = e3_grow(m->h, m->nh, &m->caph, sizeof(*v), 256)))
		return ENOMEM;
	m->h = v;
	m->h[m->nh++] = (struct mg_hole){ .start = start, .len = len };
	return 0;
}

static int cmp_gap(const void *x, const void *y)
{
	const struct mg_gap *a = x, *b = y;

	if (a->cost != b->cost)
		return a->cost < b->cost ? -1 : 1;
	return a->left < b->left ? -1 : a->left > b->left;
}

static int cmp_size(const void *x, const void *y)
{
	const struct df_owner *a = x, *b = y;

	return a->blocks > b->blocks ? -1 : a->blocks < b->blocks;
}

/* The gaps between neighbouring holes of one group, cheapest first. */
static errcode_t find_gaps(struct merge *m)
{
	ext2_filsys fs = m->c->fs;

	m->ng = 0;
	for (size_t i = 0; i + 1 < m->nh; i++) {
		struct mg_hole *a = &m->h[i], *b = &m->h[i + 1];
		struct mg_gap *v;

		if (ext2fs_group_of_blk2(fs, a->start) !=
		    ext2fs_group_of_blk2(fs, b->start))
			continue;
		if (!(v = e3_grow(m->g, m->ng, &m->capg, sizeof(*v), 64)))
			return ENOMEM;
		m->g = v;
		m->g[m->ng++] = (struct mg_gap){
			.cost = b->start - (a->start + a->len), .left = i };
	}
	qsort(m->g, m->ng, sizeof(*m->g), cmp_gap);
	return 0;
}

/* The hole for a file of n blocks: an exact fit, else the smallest that
 * holds it; never the gap's right neighbour (skip) nor a hole whose
 * start must stay free. (size_t)-1: none. */
static size_t hole_for(struct merge *m, uint64_t n, size_t skip)
{
	size_t best = (size_t)-1;

	for (size_t i = 0; i < m->nh; i++) {
		const struct mg_hole *h = &m->h[i];

		if (i == skip || h->keep || h->len < n)
			continue;
		if (h->len == n)
			return i;
		if (best == (size_t)-1 || h->len < m->h[best].len)
			best = i;
	}
	return best;
}

/* Whether gap g may go, with its files in m->v and a hole for each in
 * m->dest (the holes shrunk by them: undone by the caller on failure).
 * Caller holds fs_lock. */
static errcode_t plan_gap(struct merge *m, const struct mg_gap *g, int *ok)
{
	struct mg_hole *a = &m->h[g->left], *b = &m->h[g->left + 1];
	blk64_t lo = a->start + a->len, hi = b->start;
	errcode_t err;

	*ok = 0;
	if (b->took || b->keep || g->cost > a->len + b->len)
		return 0;
	if ((err = df_owners_gap(m->own, lo, hi, &m->v, &m->nv, &m->capv, ok)) ||
	    !*ok)
		return err;
	*ok = 0;
	for (size_t i = 0; i < m->nv; i++)
		if (m->v[i].runs != 1 ||
		    ext2fs_test_inode_bitmap2(m->moved, m->v[i].ino))
			return 0;
	if (m->nv > m->capdest) {
		size_t *d = realloc(m->dest, m->nv * sizeof(*d));
		blk64_t *t;

		if (!d)
			return ENOMEM;
		m->dest = d;
		if (!(t = realloc(m->goal, m->nv * sizeof(*t))))
			return ENOMEM;
		m->goal = t;
		m->capdest = m->nv;
	}
	/* the largest first: they have the fewest holes to choose from */
	qsort(m->v, m->nv, sizeof(*m->v), cmp_size);
	for (size_t i = 0; i < m->nv; i++) {
		size_t d = hole_for(m, m->v[i].blocks, g->left + 1);

		if (d == (size_t)-1) {
			/* give back what the earlier ones took */
			while (i--) {
				m->h[m->dest[i]].start -= m->v[i].blocks;
				m->h[m->dest[i]].len += m->v[i].blocks;
			}
			return 0;
		}
		m->dest[i] = d;
		m->goal[i] = m->h[d].start;
		m->h[d].start += m->v[i].blocks;
		m->h[d].len -= m->v[i].blocks;
	}
	for (size_t i = 0; i < m->nv; i++)
		m->h[m->dest[i]].took = 1;
	*ok = 1;
	return 0;
}

/* One move of o to goal; *moved 1 when it went there. */
static errcode_t place(struct merge *m, const struct df_owner *o,
		       blk64_t goal, int *moved)
{
	struct df_ctx *c = m->c;
	struct df_cand cd = { .ino = o->ino, .blocks = o->blocks,
			      .runs = o->runs, .groups = 1, .goal = goal };
	enum df_outcome out;
	errcode_t err, why;
	uint32_t runs_after;

	*moved = 0;
	ext2fs_mark_inode_bitmap2(m->moved, o->ino);	/* tried: not again */
	err = df_move(c, &cd, DF_PLACE, &out, &why, &runs_after);
	if (err || out != DF_MOVED)
		return err;
	*moved = 1;
	m->moves++;
	c->rep->st.files_compacted++;
	c->rep->st.blocks_compacted += o->blocks;
	c->rep->st.blocks_moved += o->blocks;
	e3_fs_lock(c->img);
	err = df_owners_update(c, m->own, o->ino);
	e3_fs_unlock(c->img);
	if (!err)
		err = df_maybe_commit(c);
	df_progress(c, 0);
	return err;
}

static errcode_t round_once(struct merge *m)
{
	struct df_ctx *c = m->c;
	errcode_t err;
	int ok, moved;

	/* what the last round freed is free once committed */
	if ((err = df_commit(c)))
		return err;
	m->nh = 0;
	e3_fs_lock(c->img);
	err = df_each_free(c->fs, add_hole, m);
	e3_fs_unlock(c->img);
	if (err || (err = find_gaps(m)))
		return err;
	for (size_t k = 0; k < m->ng && !err; k++) {
		const struct mg_gap *g = &m->g[k];

		e3_fs_lock(c->img);
		err = plan_gap(m, g, &ok);
		e3_fs_unlock(c->img);
		if (err || !ok)
			continue;
		m->h[g->left + 1].keep = 1;
		/* in order; a move that did not happen (its slot taken
		 * after all) leaves the gap: the rest stay where they are */
		moved = 1;
		for (size_t i = 0; i < m->nv && moved && !err; i++) {
			if (df_should_stop(c)) {
				c->rep->interrupted = 1;
				return 0;
			}
			err = place(m, &m->v[i], m->goal[i], &moved);
		}
	}
	return err;
}

errcode_t df_merge(struct df_ctx *c)
{
	struct merge m = { .c = c };
	errcode_t err;

	e3_fs_lock(c->img);
	err = ext2fs_allocate_inode_bitmap(c->fs, "defrag merge", &m.moved);
	if (!err)
		err = df_owners_build(c, &m.own);
	e3_fs_unlock(c->img);
	for (int r = 0; r < DF_MERGE_ROUNDS && !err && !c->rep->interrupted;
	     r++) {
		m.moves = 0;
		err = round_once(&m);
		if (!m.moves)
			break;
	}
	if (!err)
		err = df_commit(c);
	df_owners_free(m.own);
	if (m.moved)
		ext2fs_free_inode_bitmap(m.moved);
	free(m.h);
	free(m.g);
	free(m.v);
	free(m.goal);
	free(m.dest);
	return err;
}
