/*
 * defrag_room.c: making room for a file that no free extent holds.
 *
 * On an aged volume the largest free extent is often far smaller than
 * the files that most need moving. For such a file (left for want of
 * room by the first pass) this finds the stretch of blocks, as long as
 * the file, that holds no block that cannot move and the fewest blocks
 * of files that can (the "occupants": files under a group's worth of
 * blocks, contiguous or not, other than the file itself), and moves
 * each occupant out of it, whole; then the file moves into the stretch,
 * which the occupants' commit left free.
 *
 * Which stretch. An occupant moves whole, so what a stretch costs is
 * every block of every occupant, not its blocks inside. Occupants are
 * first only files no larger than the largest free extent (each then
 * goes into one hole, contiguous, and stays); only when no stretch is
 * found so are larger ones allowed (they move in as many runs as they
 * have, and again when their own turn comes). Of the DF_ROOM_TRY
 * stretches with the fewest occupant blocks inside, the one whose
 * occupants hold the fewest blocks in all is taken (a lookup each in
 * the block-to-owner map, defrag_owners.c).
 * Measured on an aged 1 GiB image: blocks moved out of the way 280,834
 * (one stretch, the fewest inside) -> 197,847 (the best of eight).
 *
 * A stretch for a file under a group's worth of blocks lies in one
 * group's data; a larger file's may cross group metadata (e2fsck allows
 * such a file one run per group it touches). Blocks that never move:
 * group metadata (for the small file), the journal and other reserved
 * inodes, EA blocks, files of a group's worth or more, the file's own.
 *
 * While the occupants move, the stretch's free blocks are claimed in
 * the allocator (never in the image), so no occupant lands in them;
 * they are given back before the file's own move. An occupant goes into
 * the smallest free extent outside the stretch that holds it whole, else
 * wherever the allocator puts it in no more runs than it has now.
 *
 * Crash safety. Every occupant's move is an ordinary one (DF_EVICT in
 * defrag_move.c: copy, flush, one journaled switch, old blocks reusable
 * only after the commit); the file's own move is the ordinary DF_FIX
 * move with the stretch as its goal. A kill between or inside any of
 * them leaves files that are each whole in their old or their new
 * blocks. A stretch half emptied (an occupant with no place, a stop) is
 * left so: what moved is whole where it went, in no more runs.
 *
 * Memory: a bitmap of the occupants' blocks (a bit per block, as
 * libext2fs' own block bitmap), the owner map (16 bytes per extent and
 * per file, defrag_owners.c), the free extents outside the stretch (16
 * bytes each), the occupants of one stretch (16 bytes each) and, while
 * a small file's stretch is searched, a byte per block of one group.
 * Time: one inode scan per room pass (the owner map's); per file that
 * needs room, up to 2 x (DF_ROOM_TRY + 2) lookups and marks in the map,
 * two passes over the volume's blocks, and a map re-read per file moved.
 * Measured on the 1 GiB aged image: CPU 5.56 s -> 2.74 s for the run,
 * the same moves (the occupants come out in the same inode order).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e3img.h"
#include "defrag_int.h"
#include "journal/journal.h"
#include "util/grow.h"

struct hole {
	blk64_t start, len;
};

struct room {
	struct df_ctx *c;
	ext2_ino_t self;		/* the file room is made for */
	blk64_t lo, hi;			/* the stretch [lo, hi) */
	struct hole *dest;		/* free extents outside it */
	size_t ndest, capdest;
	struct df_owner *occ;
	size_t nocc, capocc;
	struct hole *held;		/* its free runs, claimed meanwhile */
	size_t nheld, capheld;
};

static void room_free(struct room *r)
{
	free(r->dest);
	free(r->occ);
	free(r->held);
}

/* The blocks of the files that may move out of the way (mark), or the
 * occupants of [lo, hi) (list), from the owner map. Caller holds
 * fs_lock. */
static errcode_t scan(struct room *r, int list, uint64_t limit)
{
	struct df_ctx *c = r->c;

	if (!list) {
		df_owners_mark(c->owners, c->soft, r->self, limit);
		return 0;
	}
	return df_owners_in(c->owners, r->lo, r->hi, r->self, limit,
			    &r->occ, &r->nocc, &r->capocc);
}

/* ---- the stretch -------------------------------------------------------- */

enum { B_FREE, B_SOFT, B_META, B_HARD };

static int kind(struct df_ctx *c, blk64_t b)
{
	if (e3_alloc_is_meta(c->alloc, b))
		return B_META;
	if (!ext2fs_fast_test_block_bitmap2(c->fs->block_map, b))
		return B_FREE;
	return ext2fs_fast_test_block_bitmap2(c->soft, b) ? B_SOFT : B_HARD;
}

/* The stretches of need usable blocks with the fewest occupant blocks:
 * up to DF_ROOM_TRY of them that do not overlap, in cand[] (lo, hi);
 * their number is returned. big: group metadata may lie inside (skipped
 * over, not counted). One pass, two cursors. Caller holds fs_lock;
 * nothing is uncommitted (free means free). */
#define DF_ROOM_TRY 8

struct stretch {
	blk64_t lo, hi;
	uint64_t soft;
};

static void keep_best(struct stretch *cand, size_t *n, blk64_t lo, blk64_t hi,
		      uint64_t soft)
{
	size_t worst = 0;

	for (size_t i = 0; i < *n; i++) {
		if (lo < cand[i].hi && hi > cand[i].lo) {
			/* overlapping: the better of the two */
			if (soft < cand[i].soft)
				cand[i] = (struct stretch){ lo, hi, soft };
			return;
		}
		if (cand[i].soft > cand[worst].soft)
			worst = i;
	}
	if (*n < DF_ROOM_TRY)
		cand[(*n)++] = (struct stretch){ lo, hi, soft };
	else if (soft < cand[worst].soft)
		cand[worst] = (struct stretch){ lo, hi, soft };
}

/* The same for a file under a group's worth (no group metadata inside),
 * group by group: each block's kind is taken once into k (a group's
 * worth of bytes) and the two cursors read k, where the walk over the
 * volume below asks kind() of most blocks three times (measured on the
 * aged 4 GiB image: a third of the run's CPU was that walk). The same
 * stretches, in the same order. */
static size_t find_small(struct room *r, uint64_t need, struct stretch *cand,
			 unsigned char *k)
{
	struct df_ctx *c = r->c;
	ext2_filsys fs = c->fs;
	size_t n = 0;

	for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
		blk64_t first = ext2fs_group_first_block2(fs, g);
		blk64_t last = ext2fs_group_last_block2(fs, g);
		uint64_t usable = 0, soft = 0;
		size_t len, s = 0;

		if (first < fs->super->s_first_data_block)
			first = fs->super->s_first_data_block;
		len = (size_t)(last - first + 1);
		for (size_t i = 0; i < len; i++)
			k[i] = (unsigned char)kind(c, first + i);
		for (size_t b = 0; b < len; b++) {
			if (k[b] == B_HARD || k[b] == B_META) {
				s = b + 1;
				usable = soft = 0;
				continue;
			}
			usable++;
			soft += k[b] == B_SOFT;
			if (usable > need) {
				usable--;
				soft -= k[s++] == B_SOFT;
			}
			if (usable == need) {
				keep_best(cand, &n, first + s, first + b + 1, soft);
				if (!soft)
					return n;
			}
		}
	}
	return n;
}

static size_t find_stretches(struct room *r, uint64_t need, int big,
			     struct stretch *cand)
{
	struct df_ctx *c = r->c;
	blk64_t end = ext2fs_blocks_count(c->fs->super);
	blk64_t s = c->fs->super->s_first_data_block, b;
	uint64_t usable = 0, soft = 0;
	size_t n = 0;
	unsigned char *k;

	if (!big && (k = malloc(c->fs->super->s_blocks_per_group))) {
		n = find_small(r, need, cand, k);
		free(k);
		return n;
	}
	/* (without the buffer, the walk below finds the same) */

	for (b = s; b < end; b++) {
		int k = kind(c, b);

		if (k == B_HARD || (k == B_META && !big)) {
			s = b + 1;
			usable = soft = 0;
			continue;
		}
		if (k == B_META) {
			if (!usable)
				s = b + 1;	/* a stretch starts on data */
			continue;
		}
		usable++;
		soft += k == B_SOFT;
		while (usable > need) {
			int ks = kind(c, s++);

			if (ks != B_META) {
				usable--;
				soft -= ks == B_SOFT;
			}
		}
		while (kind(c, s) == B_META)
			s++;
		if (usable == need) {
			keep_best(cand, &n, s, b + 1, soft);
			if (!soft)
				break;
		}
	}
	return n;
}

/* ---- the occupants' new places ------------------------------------------ */

static errcode_t add_hole(struct hole **v, size_t *n, size_t *cap,
			  blk64_t s, blk64_t len)
{
	struct hole *nv = e3_grow(*v, *n, cap, sizeof(**v), 64);

	if (!nv)
		return ENOMEM;
	*v = nv;
	(*v)[(*n)++] = (struct hole){ s, len };
	return 0;
}

/* The free extents outside [lo, hi), per group. Caller holds fs_lock. */
struct survey {
	struct room *r;
	uint64_t free;
};

static errcode_t survey_one(void *arg, blk64_t s, blk64_t len)
{
	struct survey *sv = arg;
	struct room *r = sv->r;
	blk64_t e = s + len;
	errcode_t err;

	/* the part before the stretch, then the part after it */
	for (int part = 0; part < 2; part++) {
		blk64_t ps = part ? (s > r->hi ? s : r->hi) : s;
		blk64_t pe = part ? e : (e < r->lo ? e : r->lo);

		if (ps >= pe)
			continue;
		if ((err = add_hole(&r->dest, &r->ndest, &r->capdest,
				    ps, pe - ps)))
			return err;
		sv->free += pe - ps;
	}
	return 0;
}

static errcode_t survey(struct room *r, uint64_t *free_out)
{
	struct survey sv = { r, 0 };
	errcode_t err;

	r->ndest = 0;
	err = df_each_free(r->c->fs, survey_one, &sv);
	*free_out = sv.free;
	return err;
}

/* The stretch's free runs claimed in the allocator, so that no occupant
 * is placed there. Caller holds fs_lock. */
static errcode_t hold(struct room *r)
{
	struct df_ctx *c = r->c;
	blk64_t b = r->lo, s, got;
	errcode_t err;

	while (b < r->hi) {
		if (ext2fs_fast_test_block_bitmap2(c->fs->block_map, b) ||
		    e3_alloc_is_meta(c->alloc, b)) {
			b++;
			continue;
		}
		if (e3_alloc_blocks(c->alloc, NULL, b, r->hi - b, &s, &got))
			return 0;	/* nothing: merely unprotected */
		if (s != b || s + got > r->hi) {
			e3_alloc_unclaim(c->alloc, s, got);
			b++;
			continue;
		}
		if ((err = add_hole(&r->held, &r->nheld, &r->capheld, s, got))) {
			e3_alloc_unclaim(c->alloc, s, got);
			return err;
		}
		b = s + got;
	}
	return 0;
}

static void release(struct room *r)
{
	for (size_t i = 0; i < r->nheld; i++)
		e3_alloc_unclaim(r->c->alloc, r->held[i].start, r->held[i].len);
	r->nheld = 0;
}

/* The smallest free extent that holds n blocks, or NULL. */
static struct hole *best_fit(struct room *r, uint64_t n)
{
	struct hole *best = NULL;

	for (size_t i = 0; i < r->ndest; i++)
		if (r->dest[i].len >= n && (!best || r->dest[i].len < best->len))
			best = &r->dest[i];
	return best;
}

/* Moves occupant o out of the stretch; *moved 0 when it stayed. */
static errcode_t evict(struct room *r, const struct df_owner *o, int *moved)
{
	struct df_ctx *c = r->c;
	struct hole *d = best_fit(r, o->blocks);
	struct df_cand cd = { .ino = o->ino, .blocks = o->blocks,
			      .runs = o->runs, .groups = 1 };
	enum df_outcome out;
	errcode_t err, why;
	uint32_t runs_after;

	*moved = 0;
	cd.goal = d ? d->start : 0;
	err = df_move(c, &cd, DF_EVICT, &out, &why, &runs_after);
	if (err || out != DF_MOVED)
		return err;
	*moved = 1;
	/* the map follows the move: its next lookups see the new blocks */
	e3_fs_lock(c->img);
	err = df_owners_update(c, c->owners, o->ino);
	e3_fs_unlock(c->img);
	if (err)
		return err;
	if (d && cd.moved_to == d->start) {
		d->start += o->blocks;
		d->len -= o->blocks;
	} else if (d) {
		d->len = 0;	/* placed elsewhere: trust this one no more */
	}
	c->rep->st.files_evicted++;
	c->rep->st.blocks_evicted += o->blocks;
	c->rep->st.blocks_moved += o->blocks;
	return df_maybe_commit(c);
}

static errcode_t empty_stretch(struct room *r)
{
	struct df_ctx *c = r->c;
	errcode_t err = 0;
	int moved = 1;

	c->keep_lo = r->lo;
	c->keep_hi = r->hi;
	e3_fs_lock(c->img);
	err = hold(r);
	e3_fs_unlock(c->img);
	for (size_t i = 0; !err && moved && i < r->nocc; i++) {
		if (df_should_stop(c)) {
			c->rep->interrupted = 1;
			break;
		}
		err = evict(r, &r->occ[i], &moved);
		df_progress(c, 0);
	}
	release(r);
	c->keep_lo = c->keep_hi = 0;
	return err;
}

/* The largest free extent, within a group. Caller holds fs_lock. */
static errcode_t note_largest(void *arg, blk64_t start, blk64_t len)
{
	uint64_t *big = arg;

	(void)start;
	if (len > *big)
		*big = len;
	return 0;
}

static uint64_t largest_free(ext2_filsys fs)
{
	uint64_t big = 0;

	df_each_free(fs, note_largest, &big);
	return big;
}

/* The stretch and its occupants, under fs_lock. Occupants are first only
 * files no larger than the largest free extent: each then moves whole
 * into one hole, where it is contiguous and stays. A larger one, moved
 * out of the way in as many runs as it has, costs all its blocks for the
 * few it had in the stretch and is moved again when its own turn comes;
 * so files of any size are occupants only when no stretch is found
 * without them. */
static errcode_t choose_stretch(struct room *r, uint64_t need, int *found)
{
	struct df_ctx *c = r->c;
	int big = need >= c->fs->super->s_blocks_per_group;
	uint64_t limits[2] = { largest_free(c->fs), UINT64_MAX };
	struct stretch cand[DF_ROOM_TRY] = { { 0, 0, 0 } };
	uint64_t cost, free_out, best_cost = UINT64_MAX;
	size_t n, best = 0;
	errcode_t err = 0;

	*found = 0;
	for (int t = 0; t < 2 && !err && !*found; t++) {
		ext2fs_clear_block_bitmap(c->soft);
		if ((err = scan(r, 0, limits[t])))
			break;
		n = find_stretches(r, need, big, cand);
		/* what a stretch costs is every block of every file that
		 * has one in it (each moves whole), not its blocks inside:
		 * one more inode scan per stretch tried tells */
		for (size_t i = 0; i < n && !err; i++) {
			r->lo = cand[i].lo;
			r->hi = cand[i].hi;
			if ((err = scan(r, 1, limits[t])))
				break;
			cost = 0;
			for (size_t k = 0; k < r->nocc; k++)
				cost += r->occ[k].blocks;
			if (cost < best_cost) {
				best_cost = cost;
				best = i;
			}
		}
		if (err || !n)
			continue;
		r->lo = cand[best].lo;
		r->hi = cand[best].hi;
		if ((err = survey(r, &free_out)))
			break;
		if (best_cost > free_out)
			continue;
		*found = 1;
		err = scan(r, 1, limits[t]);
	}
	return err;
}

errcode_t df_room_make(struct df_ctx *c, struct df_cand *cd, int *ready)
{
	struct room r = { .c = c, .self = cd->ino };
	int found = 0;
	errcode_t err;

	*ready = 0;
	/* the blocks earlier moves freed are free once committed */
	if ((err = df_commit(c)))
		return err;
	e3_fs_lock(c->img);
	if (!c->soft)
		err = ext2fs_allocate_block_bitmap(c->fs, "defrag room", &c->soft);
	/* one inode scan for the whole room pass; after that only the
	 * file room was last made for (moved by the caller since) is read
	 * again, and each occupant as it moves (evict) */
	if (!err && !c->owners)
		err = df_owners_build(c, &c->owners);
	else if (!err && c->room_self)
		err = df_owners_update(c, c->owners, c->room_self);
	c->room_self = 0;
	if (!err) {
		c->room_self = cd->ino;
		err = choose_stretch(&r, cd->blocks, &found);
	}
	e3_fs_unlock(c->img);
	if (err || !found)
		goto out;
	if ((err = empty_stretch(&r)) || c->rep->interrupted)
		goto out;
	/* free once the evictions commit, unless an occupant found no
	 * place (group metadata in a big file's stretch is expected) */
	if ((err = df_commit(c)))
		goto out;
	e3_fs_lock(c->img);
	*ready = 1;
	for (blk64_t b = r.lo; b < r.hi && *ready; b++)
		if (ext2fs_fast_test_block_bitmap2(c->fs->block_map, b) &&
		    !e3_alloc_is_meta(c->alloc, b))
			*ready = 0;
	e3_fs_unlock(c->img);
	if (*ready)
		cd->goal = r.lo;
out:
	room_free(&r);
	return err;
}

void df_room_free(struct df_ctx *c)
{
	if (c->soft)
		ext2fs_free_block_bitmap(c->soft);
	c->soft = NULL;
	df_owners_free(c->owners);
	c->owners = NULL;
	c->room_self = 0;
}
