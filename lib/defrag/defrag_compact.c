/*
 * defrag_compact.c: free-space consolidation. Moving fragmented files
 * out leaves their old runs behind as holes between the files that were
 * already contiguous, so free space ends up in more pieces than before.
 * This pass empties the groups whose free space is in the most pieces:
 * their contiguous files under a group's worth of blocks move, one by
 * one and packed back to back, into the largest free extents of the
 * other groups, so each emptied group's holes merge into one extent
 * (what stays — group metadata, large files, the journal, EA blocks —
 * bounds it) and the extents filled stay whole. Groups are chosen by
 * number of holes, as long as the free extents elsewhere hold what they
 * contain. The files left fragmented for want of room then get another
 * try in the space made (defrag_run.c).
 *
 * Each move is an ordinary one — copy, flush, one journaled switch
 * (DF_COMPACT in defrag_move.c: taken only when the allocator's run is
 * whole and outside the groups being emptied) — so everything
 * defrag_move.c says about crash safety holds. Destinations are free in
 * the committed image (the pass starts with a commit), so no move waits
 * for another's blocks.
 * Memory: 24 bytes per contiguous file, 16 per large free extent, a few
 * bytes per group.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e3img.h"
#include "defrag_int.h"
#include "journal/journal.h"
#include "util/grow.h"

static int cmp_lo(const void *x, const void *y)
{
	const struct df_contig *a = x, *b = y;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

struct contig_list {
	struct df_contig *v;
	size_t n, cap;
};

static errcode_t add_contig(void *arg, ext2_ino_t ino, const struct df_map *m)
{
	struct contig_list *l = arg;
	struct df_contig *nv;

	if (m->runs != 1)
		return 0;
	if (!(nv = e3_grow(l->v, l->n, &l->cap, sizeof(*nv), 256)))
		return ENOMEM;
	l->v = nv;
	l->v[l->n++] = (struct df_contig){ df_map_lowest(m), m->ndata + m->nmeta, ino };
	return 0;
}

errcode_t df_collect_contig(struct df_ctx *c, struct df_contig **out,
			    size_t *n)
{
	struct contig_list l = { 0 };
	errcode_t err;

	*n = 0;
	if ((err = df_each_small(c, add_contig, &l))) {
		free(l.v);
		return err;
	}
	qsort(l.v, l.n, sizeof(*l.v), cmp_lo);
	*out = l.v;
	*n = l.n;
	return 0;
}

/* One move of f into the extent at goal; 1 in *moved when it went. */
static errcode_t slide(struct df_ctx *c, const struct df_contig *f, blk64_t goal,
		       int *moved)
{
	struct df_cand cd = { .ino = f->ino, .blocks = f->blocks,
			      .runs = 1, .groups = 1, .goal = goal };
	enum df_outcome out;
	errcode_t err, why;
	uint32_t runs_after;

	*moved = 0;
	err = df_move(c, &cd, DF_COMPACT, &out, &why, &runs_after);
	if (err || out != DF_MOVED)
		return err;
	*moved = 1;
	c->rep->st.files_compacted++;
	c->rep->st.blocks_compacted += f->blocks;
	c->rep->st.blocks_moved += f->blocks;
	return df_maybe_commit(c);
}

struct hole {
	blk64_t start, len;
};

#define DF_BIG_EXTENT 32	/* blocks: a free extent worth filling */

struct groups {
	uint64_t *holes;		/* free extents in the group */
	uint64_t *movable;		/* blocks of its contiguous files */
	uint64_t *big;			/* blocks in its large free extents */
	struct hole *dest;		/* large free extents, all groups */
	size_t ndest, capdest;
	ext2_filsys fs;			/* for the walk's callback */
};

static void groups_free(struct groups *gs)
{
	free(gs->holes);
	free(gs->movable);
	free(gs->big);
	free(gs->dest);
}

/* One free extent into its group's figures (extents are counted per
 * group) and, when large, into the destinations. */
static errcode_t note_free(void *arg, blk64_t s, blk64_t len)
{
	struct groups *gs = arg;
	dgrp_t g = ext2fs_group_of_blk2(gs->fs, s);
	struct hole *v;

	gs->holes[g]++;
	if (len >= DF_BIG_EXTENT) {
		gs->big[g] += len;
		if (!(v = e3_grow(gs->dest, gs->ndest, &gs->capdest,
				  sizeof(*v), 64)))
			return ENOMEM;
		gs->dest = v;
		gs->dest[gs->ndest++] = (struct hole){ s, len };
	}
	return 0;
}

/* Every group's free extents from the bitmap. Caller holds fs_lock. */
static errcode_t survey(struct df_ctx *c, const struct df_contig *f, size_t n,
			struct groups *gs)
{
	ext2_filsys fs = c->fs;
	dgrp_t ng = fs->group_desc_count;

	gs->holes = calloc(ng, sizeof(*gs->holes));
	gs->movable = calloc(ng, sizeof(*gs->movable));
	gs->big = calloc(ng, sizeof(*gs->big));
	if (!gs->holes || !gs->movable || !gs->big)
		return ENOMEM;
	for (size_t i = 0; i < n; i++)
		gs->movable[ext2fs_group_of_blk2(fs, f[i].lo)] += f[i].blocks;
	gs->fs = fs;
	return df_each_free(fs, note_free, gs);
}

static const uint64_t *sort_key;

static int cmp_holes(const void *x, const void *y)
{
	dgrp_t a = *(const dgrp_t *)x, b = *(const dgrp_t *)y;

	if (sort_key[a] != sort_key[b])
		return sort_key[a] < sort_key[b] ? 1 : -1;
	return a < b ? -1 : a > b;
}

static int cmp_len(const void *x, const void *y)
{
	const struct hole *a = x, *b = y;

	if (a->len != b->len)
		return a->len < b->len ? 1 : -1;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* Which groups to empty: the most holes first (three or more), while
 * the large extents of the groups kept hold what the emptied ones have. */
static errcode_t choose(struct df_ctx *c, struct groups *gs)
{
	dgrp_t ng = c->fs->group_desc_count, *order;
	uint64_t room = 0, load = 0;
	size_t i, k;

	c->emptying = calloc(ng, 1);
	order = malloc(ng * sizeof(*order));
	if (!c->emptying || !order) {
		free(order);
		return ENOMEM;
	}
	for (dgrp_t g = 0; g < ng; g++) {
		order[g] = g;
		room += gs->big[g];
	}
	sort_key = gs->holes;	/* single-threaded: the run's own thread */
	qsort(order, ng, sizeof(*order), cmp_holes);
	sort_key = NULL;
	for (i = 0; i < ng && gs->holes[order[i]] >= 3; i++) {
		dgrp_t g = order[i];

		if (!gs->movable[g])
			continue;
		/* what is left fits in a tenth less room: packing is not
		 * perfect */
		if (load + gs->movable[g] > (room - gs->big[g]) * 9 / 10)
			continue;
		c->emptying[g] = 1;
		room -= gs->big[g];
		load += gs->movable[g];
	}
	free(order);
	/* the destinations: large extents outside the emptied groups,
	 * largest first so files pack into few of them */
	for (i = k = 0; i < gs->ndest; i++)
		if (!c->emptying[ext2fs_group_of_blk2(c->fs, gs->dest[i].start)])
			gs->dest[k++] = gs->dest[i];
	gs->ndest = k;
	qsort(gs->dest, gs->ndest, sizeof(*gs->dest), cmp_len);
	return 0;
}

/* Moves one file of an emptied group into the first destination that
 * holds it. A move the allocator places elsewhere is not taken (the
 * file stays). */
static errcode_t place(struct df_ctx *c, struct groups *gs,
		       const struct df_contig *f)
{
	errcode_t err = 0;
	int moved;

	for (size_t k = 0; k < gs->ndest; k++) {
		struct hole *d = &gs->dest[k];

		if (d->len < f->blocks)
			continue;
		err = slide(c, f, d->start, &moved);
		if (!err && moved) {
			d->start += f->blocks;
			d->len -= f->blocks;
		}
		return err;
	}
	return 0;
}

static errcode_t compact_round(struct df_ctx *c)
{
	struct groups gs = { 0 };
	struct df_contig *v = NULL;
	size_t n = 0;
	errcode_t err;

	/* the holes the first pass left are free once it commits */
	if ((err = df_commit(c)))
		return err;
	e3_fs_lock(c->img);
	err = df_collect_contig(c, &v, &n);
	if (!err)
		err = survey(c, v, n, &gs);
	e3_fs_unlock(c->img);
	if (!err)
		err = choose(c, &gs);
	for (size_t i = 0; !err && i < n; i++) {
		if (!c->emptying[ext2fs_group_of_blk2(c->fs, v[i].lo)])
			continue;
		if (df_should_stop(c)) {
			c->rep->interrupted = 1;
			break;
		}
		err = place(c, &gs, &v[i]);
		df_progress(c, 0);
	}
	if (!err)
		err = df_commit(c);	/* the emptied groups free for the retry */
	free(c->emptying);
	c->emptying = NULL;
	groups_free(&gs);
	free(v);
	return err;
}

/* A round's destinations fill extents that were large; the groups they
 * were in may then be worth emptying in turn. Rounds go on while one
 * moves something (three at most: each costs an inode scan). */
errcode_t df_compact(struct df_ctx *c)
{
	errcode_t err = 0;

	for (int round = 0; round < 3 && !err && !c->rep->interrupted; round++) {
		uint64_t before = c->rep->st.files_compacted;

		err = compact_round(c);
		if (c->rep->st.files_compacted == before)
			break;
	}
	return err;
}
