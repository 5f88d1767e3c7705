/*
 * defrag_room.c: making room for a file that no free extent holds.
 *
 * On an aged volume the largest free extent is often far smaller than
 * the files that most need moving. For such a file (left for want of
 * room by the first pass) this finds the stretch of blocks, as long as
 * the file, that holds no block that cannot move and the fewest blocks
 * of small contiguous files (the "occupants"), and moves each occupant,
 * whole, into the free extent elsewhere that fits it best; then the
 * file moves into the stretch, which its commit left free.
 *
 * A stretch for a file under a group's worth of blocks lies in one
 * group's data; a larger file's may cross group metadata (e2fsck allows
 * such a file one run per group it touches). Blocks that never move:
 * group metadata (for the small file), the journal and other reserved
 * inodes, EA blocks, fragmented or large files — the file's own blocks
 * included, since its copy must go to blocks that are free now.
 *
 * Crash safety. Every occupant's move is an ordinary one (DF_COMPACT in
 * defrag_move.c: copy, flush, one journaled switch, old blocks reusable
 * only after the commit), taken only when the allocator's run is whole
 * and outside the stretch; the file's own move is the ordinary DF_FIX
 * move with the stretch as its goal. A kill between any two of them
 * leaves files that are each whole in their old or their new blocks. A
 * stretch half emptied (an occupant that found no place, a stop) is
 * simply left so: what moved is contiguous where it went.
 *
 * Memory: a bitmap of the occupants' blocks (one bit per block, like
 * libext2fs' own block bitmap) and 24 bytes per small contiguous file.
 * Time: one pass over the volume's blocks per file that needs room.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e3img.h"
#include "defrag_int.h"
#include "journal/journal.h"
#include "util/grow.h"

struct df_room {
	struct df_contig *f;		/* the small contiguous files */
	size_t nf, capf;
	ext2fs_block_bitmap soft;	/* their blocks */
	struct df_hole *dest;		/* free extents outside the stretch */
	size_t ndest, capdest;
};

struct df_hole {
	blk64_t start, len;
};

void df_room_free(struct df_ctx *c)
{
	struct df_room *r = c->room;

	if (!r)
		return;
	if (r->soft)
		ext2fs_free_block_bitmap(r->soft);
	free(r->f);
	free(r->dest);
	free(r);
	c->room = NULL;
}

static errcode_t commit(struct df_ctx *c)
{
	errcode_t err;

	if (!c->img->journal)
		return 0;
	e3_fs_lock(c->img);
	err = e3_journal_commit(c->img->journal, 0);
	e3_fs_unlock(c->img);
	return err;
}

static errcode_t room_init(struct df_ctx *c)
{
	struct df_room *r = calloc(1, sizeof(*r));
	errcode_t err;

	if (!r)
		return ENOMEM;
	c->room = r;
	e3_fs_lock(c->img);
	err = df_collect_contig(c, &r->f, &r->nf);
	if (!err)
		err = ext2fs_allocate_block_bitmap(c->fs, "defrag room", &r->soft);
	for (size_t i = 0; !err && i < r->nf; i++)
		ext2fs_mark_block_bitmap_range2(r->soft, r->f[i].lo,
						(unsigned)r->f[i].blocks);
	e3_fs_unlock(c->img);
	r->capf = r->nf;
	return err;
}

/* ---- the stretch -------------------------------------------------------- */

enum { B_FREE, B_SOFT, B_META, B_HARD };

static int kind(struct df_ctx *c, blk64_t b)
{
	if (e3_alloc_is_meta(c->alloc, b))
		return B_META;
	if (!ext2fs_fast_test_block_bitmap2(c->fs->block_map, b))
		return B_FREE;
	return ext2fs_fast_test_block_bitmap2(c->room->soft, b) ? B_SOFT : B_HARD;
}

/* The stretch [*lo, *hi) of need usable blocks with the fewest occupant
 * blocks; 0 when there is none. big: group metadata may lie inside (it
 * is skipped over and not counted). One pass, two cursors. Caller holds
 * fs_lock; the image has nothing uncommitted (free means free). */
static int find_stretch(struct df_ctx *c, uint64_t need, int big,
			blk64_t *lo, blk64_t *hi, uint64_t *cost)
{
	ext2_filsys fs = c->fs;
	blk64_t end = ext2fs_blocks_count(fs->super);
	blk64_t s = fs->super->s_first_data_block, b;
	uint64_t usable = 0, soft = 0, best = UINT64_MAX;

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
		if (usable == need && soft < best) {
			best = soft;
			*lo = s;
			*hi = b + 1;
			if (!soft)
				break;
		}
	}
	*cost = best;
	return best != UINT64_MAX;
}

/* ---- the occupants' new places ------------------------------------------ */

/* The free extents outside [lo, hi). Caller holds fs_lock. */
static errcode_t survey(struct df_ctx *c, blk64_t lo, blk64_t hi)
{
	struct df_room *r = c->room;
	ext2_filsys fs = c->fs;
	blk64_t b = fs->super->s_first_data_block;
	blk64_t end = ext2fs_blocks_count(fs->super) - 1, s, e;
	struct df_hole *v;

	r->ndest = 0;
	while (b <= end &&
	       !ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, end, &s)) {
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, s, end, &e))
			e = end + 1;
		b = e;
		/* the part before the stretch, then the part after it */
		for (int part = 0; part < 2; part++) {
			blk64_t ps = part ? (s > hi ? s : hi) : s;
			blk64_t pe = part ? e : (e < lo ? e : lo);

			if (ps >= pe)
				continue;
			if (!(v = e3_grow(r->dest, r->ndest, &r->capdest,
					  sizeof(*v), 256)))
				return ENOMEM;
			r->dest = v;
			r->dest[r->ndest++] = (struct df_hole){ ps, pe - ps };
		}
	}
	return 0;
}

/* The smallest free extent that holds n blocks, or NULL. */
static struct df_hole *best_fit(struct df_room *r, uint64_t n)
{
	struct df_hole *best = NULL;

	for (size_t i = 0; i < r->ndest; i++)
		if (r->dest[i].len >= n && (!best || r->dest[i].len < best->len))
			best = &r->dest[i];
	return best;
}

/* Moves occupant f out of the stretch; *moved 0 when it stayed. */
static errcode_t evict(struct df_ctx *c, struct df_contig *f, int *moved)
{
	struct df_room *r = c->room;
	struct df_hole *d = best_fit(r, f->blocks);
	struct df_cand cd = { .ino = f->ino, .blocks = f->blocks,
			      .runs = 1, .groups = 1 };
	enum df_outcome out;
	errcode_t err, why;
	uint32_t runs_after;

	*moved = 0;
	if (!d)
		return 0;
	cd.goal = d->start;
	err = df_move(c, &cd, DF_COMPACT, &out, &why, &runs_after);
	if (err || out != DF_MOVED)
		return err;
	*moved = 1;
	e3_fs_lock(c->img);
	ext2fs_unmark_block_bitmap_range2(r->soft, f->lo, (unsigned)f->blocks);
	ext2fs_mark_block_bitmap_range2(r->soft, cd.moved_to,
					(unsigned)f->blocks);
	e3_fs_unlock(c->img);
	if (cd.moved_to == d->start) {
		d->start += f->blocks;
		d->len -= f->blocks;
	} else {
		d->len = 0;	/* placed elsewhere: trust this one no more */
	}
	f->lo = cd.moved_to;
	c->rep->st.files_evicted++;
	c->rep->st.blocks_evicted += f->blocks;
	c->rep->st.blocks_moved += f->blocks;
	return df_maybe_commit(c);
}

errcode_t df_room_make(struct df_ctx *c, struct df_cand *cd, int *ready)
{
	struct df_room *r;
	blk64_t lo = 0, hi = 0;
	uint64_t cost, free_out = 0;
	int found, moved;
	errcode_t err;

	*ready = 0;
	/* the blocks earlier moves freed are free once committed */
	if ((err = commit(c)))
		return err;
	if (!c->room && (err = room_init(c)))
		return err;
	r = c->room;
	e3_fs_lock(c->img);
	found = find_stretch(c, cd->blocks,
			     cd->blocks >= c->fs->super->s_blocks_per_group,
			     &lo, &hi, &cost);
	err = found ? survey(c, lo, hi) : 0;
	e3_fs_unlock(c->img);
	if (err || !found)
		return err;
	for (size_t i = 0; i < r->ndest; i++)
		free_out += r->dest[i].len;
	if (cost > free_out)
		return 0;	/* the occupants would not fit elsewhere */
	c->keep_lo = lo;
	c->keep_hi = hi;
	for (size_t i = 0; !err && i < r->nf; i++) {
		struct df_contig *f = &r->f[i];

		if (f->lo >= hi || f->lo + f->blocks <= lo)
			continue;
		if (df_should_stop(c)) {
			c->rep->interrupted = 1;
			break;
		}
		err = evict(c, f, &moved);
		if (!err && !moved)
			break;		/* no place for it: the stretch stays */
		df_progress(c, 0);
	}
	c->keep_lo = c->keep_hi = 0;
	if (err || c->rep->interrupted)
		return err;
	/* the stretch is free once the evictions commit, unless an
	 * occupant found no place (group metadata inside a big file's
	 * stretch is expected) */
	if ((err = commit(c)))
		return err;
	e3_fs_lock(c->img);
	*ready = 1;
	for (blk64_t b = lo; b < hi && *ready; b++)
		if (kind(c, b) != B_FREE && kind(c, b) != B_META)
			*ready = 0;
	e3_fs_unlock(c->img);
	if (*ready)
		cd->goal = lo;
	return 0;
}

/* After the file's own move: it is an occupant for the next file. */
errcode_t df_room_moved(struct df_ctx *c, const struct df_cand *cd,
			uint32_t runs_after)
{
	struct df_room *r = c->room;
	struct df_contig *v;

	if (!r || runs_after != 1 ||
	    cd->blocks >= c->fs->super->s_blocks_per_group)
		return 0;
	if (!(v = e3_grow(r->f, r->nf, &r->capf, sizeof(*v), 64)))
		return ENOMEM;
	r->f = v;
	r->f[r->nf++] = (struct df_contig){ cd->moved_to, cd->blocks, cd->ino };
	e3_fs_lock(c->img);
	ext2fs_mark_block_bitmap_range2(r->soft, cd->moved_to,
					(unsigned)cd->blocks);
	e3_fs_unlock(c->img);
	return 0;
}

