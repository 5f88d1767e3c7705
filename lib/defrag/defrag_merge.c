/*
 * defrag_merge.c: the last step of a whole-filesystem run — free space
 * in fewer extents, by two kinds of small moves that each remove one.
 *
 * What the placement plan and the per-file passes leave is free space in
 * a few extents per group, neighbours split by stretches of small
 * contiguous files, and a few small holes no file fitted. The settling
 * in defrag_pack.c moves one file at a time and only when that alone
 * leaves fewer extents, so a stretch of two or more files never goes,
 * nor a hole that only two files together fill.
 *
 * Joining. A stretch between two extents of one group — a gap — goes
 * whole: every file in it moves into a hole elsewhere, at the hole's
 * start (which borders data or the group's metadata, so no new extent
 * appears), and the two extents around the gap become one. The cheapest
 * gaps first, each only if the blocks it costs are at most the free
 * blocks it joins (its two neighbours): every block copied makes at
 * least one block of free space contiguous. A gap qualifies only if it is
 * exactly tiled by small movable one-run files lying wholly inside it
 * (no group metadata, EA block or large file), none moved in this round
 * already (the next plans from where it went), and its right neighbour
 * has taken no file
 * this round (a file at that hole's start would split the joined extent
 * again). Every file's destination is chosen before the first move, so a
 * gap is emptied whole or not at all: an exact fit first (one hole
 * fewer), else the smallest hole that holds it.
 *
 * Filling. Then each hole, smallest first, is closed exactly by files
 * peeled off the edges of larger extents: a chain of up to DF_CHAIN
 * one-run files outwards from an extent's edge, moved nearest first, only
 * makes that extent larger, so a set of chain prefixes whose blocks add
 * up to the hole exactly (subset sums, one prefix per chain) removes the
 * hole for its own size in blocks moved. Free space so goes from smaller
 * extents to larger ones, never the other way.
 *
 * Each emptied gap and each closed hole is one extent fewer, so the step
 * ends: DF_MERGE_ROUNDS at most, while a round moves something. Measured
 * on the aged images (bench/results/defrag-4g.md, F): after the passes
 * 56 free extents on the 4 GiB one and 35 on the 1 GiB one; after this
 * step 8 and 4 (a rebuild with mke2fs -d: 7), for 62,555 and 17,413
 * blocks moved (3.4% and 3.5% of the run's).
 *
 * Rounds, each from a commit: the holes are the block bitmap right after
 * it, and the blocks a round frees are free only at the next commit, so
 * they join in the next round (the allocator's deferred list keeps them
 * from any other use meanwhile).
 *
 * Crash safety: every move is an ordinary DF_PLACE move (defrag_move.c:
 * copy, flush, one journaled switch, the target exactly the planned run
 * or nothing), so a stop or a kill between two moves leaves a gap half
 * emptied or a hole half filled: consistent, with free space in as many
 * extents as before the step at worst. A move that does not happen ends
 * its gap's or its hole's moves.
 *
 * Memory: the owner map (defrag_owners.c), 32 bytes per free extent, 40
 * per chain file (16 per extent at most), and 4 per block of the largest
 * hole filled (under a group's worth).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e3img.h"
#include "defrag_int.h"
#include "util/grow.h"

#define DF_MERGE_ROUNDS 16

struct mg_hole {
	blk64_t start, len;
	int took;			/* a file was placed in it */
	int keep;			/* the right side of a gap being
					   emptied: its start stays free */
	int grew;			/* joined, or a file peeled off its
					   edge: larger at the next commit */
	int closed;			/* being filled whole */
};

/* A file at the edge of a free extent, or next to one that is (a
 * chain, outwards from the hole): moving it, and the ones between it and
 * the hole, makes that extent larger, no new one. */
struct mg_edge {
	struct df_owner o;
	size_t src;			/* the hole its chain borders */
	uint32_t chain;			/* its chain's first entry in e */
	int used;
};

#define DF_CHAIN 8			/* files per chain at most */

struct mg_gap {
	blk64_t cost;
	size_t left;			/* holes[left] | gap | holes[left+1] */
};

struct merge {
	struct df_ctx *c;
	struct df_owners *own;
	ext2fs_inode_bitmap moved;	/* moved (or tried) this round: not
					   again until the next, whose plan
					   starts from where it went */
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
	struct mg_edge *e;		/* the filling's edge files */
	size_t ne, cape;
	struct df_owner *w;		/* one edge lookup */
	size_t nw, capw;
	uint32_t *from;			/* the filling's subset sums */
	size_t capfrom;
	uint64_t fill_work;		/* subset-sum steps so far, all rounds */
};

/* The subset sums cost a hole's length times the edge files looked at;
 * on a volume left with many large holes that is quadratic. Past this
 * many steps in one run the filling stops (a hole left open is only an
 * extent more, never wrong): about a second of CPU here. */
#define MG_FILL_WORK_MAX ((uint64_t)1 << 28)

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
	if (m->ng)	/* (no array at all when there is none) */
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

/* Whether gap g may go (*ok), with its files in m->v, largest first, and
 * for each a hole in m->dest and a start in m->goal (the holes shrunk by
 * them; not when it may not). Caller holds fs_lock. */
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
	ext2fs_mark_inode_bitmap2(m->moved, o->ino);	/* tried */
	err = df_move(c, &cd, DF_PLACE, &out, &why, &runs_after);
	if (err || out != DF_MOVED)
		return err;
	*moved = 1;
	m->moves++;
	c->rep->st.files_compacted++;
	c->rep->st.blocks_compacted += o->blocks;
	c->rep->st.files_joined++;
	c->rep->st.blocks_joined += o->blocks;
	c->rep->st.blocks_moved += o->blocks;
	e3_fs_lock(c->img);
	err = df_owners_update(c, m->own, o->ino);
	e3_fs_unlock(c->img);
	if (!err)
		err = df_maybe_commit(c);
	df_progress(c, 0);
	return err;
}

/* ---- filling: a hole closed by files peeled off larger ones' edges ---- */

/* The one-run file of the owner map whose blocks are [lo, lo + n) for
 * some n, ending at end (end set) or starting at lo; *ok 0: none (free,
 * not a small movable file, moved this round, or more than one run).
 * Caller holds fs_lock. */
static errcode_t edge_file(struct merge *m, blk64_t b, int end,
			   struct df_owner *out, int *ok)
{
	blk64_t lo;
	errcode_t err;

	*ok = 0;
	if ((err = df_owners_in(m->own, b, b + 1, 0, UINT64_MAX, &m->w, &m->nw,
				&m->capw)) || m->nw != 1)
		return err;
	*out = m->w[0];
	if (out->runs != 1 || ext2fs_test_inode_bitmap2(m->moved, out->ino))
		return 0;
	lo = end ? b + 1 - out->blocks : b;
	if (end && b + 1 < out->blocks)
		return 0;
	if ((err = df_owners_gap(m->own, lo, lo + out->blocks, &m->w, &m->nw,
				 &m->capw, ok)))
		return err;
	*ok = *ok && m->nw == 1 && m->w[0].ino == out->ino;
	return 0;
}

static int in_edges(const struct merge *m, ext2_ino_t ino)
{
	for (size_t i = 0; i < m->ne; i++)
		if (m->e[i].o.ino == ino)
			return 1;
	return 0;
}

/* The chain outwards from block b (end: the files end there, going
 * down; else they start there, going up), up to DF_CHAIN files, to the
 * first block not of a one-run small file. Caller holds fs_lock. */
static errcode_t add_chain(struct merge *m, blk64_t b, int end, size_t src)
{
	ext2_filsys fs = m->c->fs;
	uint32_t first = (uint32_t)m->ne;
	struct df_owner o;
	errcode_t err;
	int ok;

	for (int k = 0; k < DF_CHAIN; k++) {
		struct mg_edge *v;

		if (b < fs->super->s_first_data_block ||
		    b >= ext2fs_blocks_count(fs->super))
			break;
		if ((err = edge_file(m, b, end, &o, &ok)))
			return err;
		/* a file between two holes is in one chain only */
		if (!ok || in_edges(m, o.ino))
			break;
		if (!(v = e3_grow(m->e, m->ne, &m->cape, sizeof(*v), 64)))
			return ENOMEM;
		m->e = v;
		m->e[m->ne++] = (struct mg_edge){ .o = o, .src = src,
						  .chain = first };
		if (end && b < o.blocks)
			break;
		b = end ? b - o.blocks : b + o.blocks;
	}
	return 0;
}

/* The chains at the two edges of every hole that may give one. Caller
 * holds fs_lock. */
static errcode_t find_edges(struct merge *m)
{
	errcode_t err = 0;

	m->ne = 0;
	for (size_t i = 0; i < m->nh && !err; i++) {
		const struct mg_hole *h = &m->h[i];

		if (h->keep || !h->len)
			continue;
		if (h->start)
			err = add_chain(m, h->start - 1, 1, i);
		if (!err)
			err = add_chain(m, h->start + h->len, 0, i);
	}
	return err;
}

/* Chain prefixes (at most one per chain) whose blocks add up to hole
 * t's exactly, each from a hole at least as large as t (free space goes
 * from the smaller extent to the larger, never the other way), found by
 * subset sums; their files marked used 2, *ok 1. */
static errcode_t pick_fill(struct merge *m, size_t t, int *ok)
{
	blk64_t len = m->h[t].len;
	const uint32_t none = UINT32_MAX;

	*ok = 0;
	if (len + 1 > m->capfrom) {
		uint32_t *f = realloc(m->from, (len + 1) * sizeof(*f));

		if (!f)
			return ENOMEM;
		m->from = f;
		m->capfrom = len + 1;
	}
	for (blk64_t s = 0; s <= len; s++)
		m->from[s] = none;
	m->from[0] = 0;
	/* from[s]: the last file of the prefix that first reached sum s.
	 * Chain by chain, sums are extended downwards from the sums of
	 * the chains before (below s: not yet touched by this chain), so
	 * each chain adds one prefix at most. */
	for (size_t c0 = 0; c0 < m->ne && m->from[len] == none; ) {
		const struct mg_hole *src = &m->h[m->e[c0].src];
		size_t c1 = c0;
		int usable = m->e[c0].src != t && !src->closed &&
			     src->len >= len;

		while (c1 < m->ne && m->e[c1].chain == c0)
			c1++;
		for (size_t i = c0; i < c1 && usable; i++)
			usable = !m->e[i].used;
		for (blk64_t s = len; usable && s; s--) {
			uint64_t p = 0;

			if (m->from[s] != none)
				continue;
			if (++m->fill_work > MG_FILL_WORK_MAX)
				return 0;
			for (size_t i = c0; i < c1; i++) {
				m->fill_work++;
				p += m->e[i].o.blocks;
				if (p > s)
					break;
				if (m->from[s - p] != none &&
				    (s == p || m->e[m->from[s - p]].chain != c0)) {
					m->from[s] = (uint32_t)i;
					break;
				}
			}
		}
		c0 = c1;
	}
	if (m->from[len] == none)
		return 0;
	for (blk64_t s = len; s; ) {
		size_t i = m->from[s], c0 = m->e[i].chain;

		for (size_t j = c0; j <= i; j++) {
			m->e[j].used = 2;	/* this fill's */
			s -= m->e[j].o.blocks;
		}
	}
	*ok = 1;
	return 0;
}

static int cmp_len(const void *x, const void *y, void *arg)
{
	const struct mg_hole *h = arg;
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	if (h[a].len != h[b].len)
		return h[a].len < h[b].len ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* The holes, smallest first, each closed exactly by edge files of
 * larger ones when some add up to it: one extent fewer for the hole's
 * blocks moved. */
static errcode_t fill_holes(struct merge *m)
{
	struct df_ctx *c = m->c;
	size_t *idx;
	errcode_t err;
	int ok, moved;

	e3_fs_lock(c->img);
	err = find_edges(m);
	e3_fs_unlock(c->img);
	if (err || !m->ne)
		return err;
	if (!(idx = malloc(m->nh * sizeof(*idx))))
		return ENOMEM;
	for (size_t i = 0; i < m->nh; i++)
		idx[i] = i;
	qsort_r(idx, m->nh, sizeof(*idx), cmp_len, m->h);
	for (size_t k = 0; k < m->nh && !err; k++) {
		struct mg_hole *t = &m->h[idx[k]];

		if (t->keep || t->grew || t->took || !t->len)
			continue;
		if ((err = pick_fill(m, idx[k], &ok)) || !ok)
			continue;
		t->closed = 1;
		moved = 1;
		for (size_t i = 0; i < m->ne && !err; i++) {
			struct mg_edge *e = &m->e[i];

			if (e->used != 2)
				continue;
			e->used = 1;
			m->h[e->src].grew = 1;
			if (!moved)
				continue;	/* the fill failed: the rest stay */
			if (df_should_stop(c)) {
				c->rep->interrupted = 1;
				break;
			}
			err = place(m, &e->o, t->start, &moved);
			if (!err && moved) {
				t->start += e->o.blocks;
				t->len -= e->o.blocks;
			}
		}
	}
	free(idx);
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
	ext2fs_clear_inode_bitmap(m->moved);
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
		m->h[g->left].grew = m->h[g->left + 1].grew = 1;
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
	if (!err && !c->rep->interrupted)
		err = fill_holes(m);
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
	free(m.e);
	free(m.w);
	free(m.from);
	return err;
}
