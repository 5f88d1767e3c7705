/*
 * defrag_pack.c: the placement plan — where files go so that free space
 * ends up in a few large extents and each block moves about once.
 *
 * Moving fragmented files one by one into whatever free extent holds
 * them, then moving small files out of the way of the large ones, then
 * files again, copies the data several times over and leaves their old
 * runs behind as holes. This pass plans the volume as a whole instead.
 *
 * The frontier. Packed back to back, the movable data (files under a
 * group's worth of blocks) would end at some block B: the first free
 * extent at which the free blocks below it are at least the blocks that
 * must still come down (the contiguous files above it and every
 * fragmented file). Below B every hole is a destination; above B every
 * contiguous file is a source. Files below B that are whole stay where
 * they are: they are already where the layout wants them.
 *
 * A round, from one commit and one inode scan: the holes, lowest first,
 * are filled back to back, best fit: the largest file that still fits, a
 * fragmented one (which must move anyway) before a contiguous one from
 * above B of the same size, the highest contiguous one among equals (its
 * old place then joins the free space at the top). A file moved once is
 * not moved again by the same pass. The blocks a round frees are free
 * only once it commits, so they are destinations of the next round.
 * Rounds go on while one moves something (DF_PACK_ROUNDS at most). What
 * this leaves — a fragmented file larger than any hole, a file of a
 * group's worth or more — goes to the fix and room passes (defrag_run.c).
 *
 * Settling (the same pass again after those, settle set): what they
 * left behind are holes no file above B fits. Each round then also moves
 * a contiguous file, wherever it is, into a hole (not next to it) when
 * free space ends in fewer extents for it: the hole filled exactly, or
 * free space on both sides of the file's old place, which joins. Measured
 * on an aged 1 GiB image (bench/age.sh 1G 1 80, free space in 2,626
 * extents): 222-322 extents after the per-file passes alone, 45-88 with
 * the plan and the settling; blocks moved about the same (474,592 to
 * 635,575 against 587,001 to 628,092: runs differ with the journal's
 * commit timing). bench/defrag_plan.sh compares two builds.
 *
 * Crash safety. Every move is an ordinary one (DF_PLACE in
 * defrag_move.c: copy, flush, one journaled switch; the target is taken
 * only if it is exactly the planned run). Destinations come from the
 * block bitmap as it stands right after a commit, and a hole is shrunk
 * by what is placed in it, so every target is free in the committed
 * image before data is written to it; the blocks a move frees are in no
 * hole of this round (and the allocator's deferred list keeps them from
 * any other use) until the next round's commit.
 * A stop (max-time, signal) ends the round after the move in flight; a
 * rerun plans again from the image and continues where it stands.
 *
 * Memory: 32 bytes per movable file and 16 per free extent, per round;
 * an inode bitmap (the files moved). Time: per round an inode scan and,
 * per hole, a look at every movable file (files x holes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e3img.h"
#include "defrag_int.h"
#include "util/grow.h"

#define DF_PACK_ROUNDS 40

struct pk_file {
	blk64_t lo;			/* lowest block */
	uint64_t blocks;		/* data + indirect */
	ext2_ino_t ino;
	uint32_t runs;
	unsigned frag:1;		/* a candidate of the fix pass */
	unsigned done:1;		/* placed, or tried, this round */
};

struct pk_hole {
	blk64_t start, len;
};

struct pack {
	struct df_ctx *c;
	struct pk_file *f;
	size_t nf, capf;
	struct pk_hole *h;		/* free extents, ascending, each
					   inside one group */
	size_t nh, caph;
	blk64_t frontier;		/* B above */
	ext2fs_inode_bitmap settled;	/* moved by this pass: not again */
	int settle;			/* settling: the gain moves too */
	uint64_t moved;			/* files moved this round */
};

static void pack_free(struct pack *p)
{
	free(p->f);
	free(p->h);
	p->f = NULL;
	p->h = NULL;
	p->nf = p->capf = p->nh = p->caph = 0;
}

/* Every movable file under a group's worth of blocks that is either
 * whole or one the fix pass wants (others — a file crossing group
 * metadata in as many runs as groups, say — stay put). Caller holds
 * fs_lock. */
static errcode_t add_file(void *arg, ext2_ino_t ino, const struct df_map *m)
{
	struct pack *p = arg;
	struct df_cand *cd = m->runs > 1 ? df_find_cand(p->c, ino) : NULL;
	struct pk_file *v;

	if (m->runs > 1 && (!cd || cd->packed))
		return 0;
	if (!(v = e3_grow(p->f, p->nf, &p->capf, sizeof(*v), 256)))
		return ENOMEM;
	p->f = v;
	p->f[p->nf++] = (struct pk_file){
		.lo = df_map_lowest(m), .blocks = m->ndata + m->nmeta,
		.ino = ino, .runs = m->runs, .frag = m->runs > 1 };
	return 0;
}

static errcode_t scan_files(struct pack *p)
{
	return df_each_small(p->c, add_file, p);
}

/* The free extents of the bitmap, split at group ends. Caller holds
 * fs_lock. */
static errcode_t add_hole(void *arg, blk64_t start, blk64_t len)
{
	struct pack *p = arg;
	struct pk_hole *v;

	if (!(v = e3_grow(p->h, p->nh, &p->caph, sizeof(*v), 256)))
		return ENOMEM;
	p->h = v;
	p->h[p->nh++] = (struct pk_hole){ start, len };
	return 0;
}

static errcode_t scan_holes(struct pack *p)
{
	return df_each_free(p->c->fs, add_hole, p);
}

static int cmp_lo(const void *x, const void *y)
{
	const struct pk_file *a = x, *b = y;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* B: the start of the first hole at which the free blocks below are at
 * least what must still come down. Files sorted by lo. */
static void find_frontier(struct pack *p)
{
	uint64_t above = 0, below = 0;
	size_t k = 0;

	for (size_t i = 0; i < p->nf; i++)
		above += p->f[i].blocks;
	p->frontier = ext2fs_blocks_count(p->c->fs->super);
	for (size_t i = 0; i < p->nh; i++) {
		/* files below this hole count as below (a fragmented file
		 * by its lowest block: its runs free up where it is) */
		for (; k < p->nf && p->f[k].lo < p->h[i].start; k++)
			above -= p->f[k].blocks;
		if (below >= above) {
			p->frontier = p->h[i].start;
			return;
		}
		below += p->h[i].len;
	}
}

/* The largest file that fits len blocks for the hole ending at hend:
 * fragmented files anywhere, contiguous ones above the frontier and the
 * hole; NULL: none. */
static struct pk_file *best_for(struct pack *p, blk64_t hend, blk64_t len)
{
	struct pk_file *best = NULL;

	for (size_t i = 0; i < p->nf; i++) {
		struct pk_file *f = &p->f[i];

		if (f->done || f->blocks > len)
			continue;
		if (!f->frag && (f->lo < hend || f->lo < p->frontier ||
				 ext2fs_test_inode_bitmap2(p->settled, f->ino)))
			continue;
		if (!best || f->blocks > best->blocks ||
		    (f->blocks == best->blocks &&
		     (f->frag > best->frag ||
		      (f->frag == best->frag && f->lo > best->lo))))
			best = f;
	}
	return best;
}

/* One move of f to [goal, goal + f->blocks); *moved 1 when it went
 * there. */
static errcode_t place(struct pack *p, struct pk_file *f, blk64_t goal,
		       int *moved)
{
	struct df_ctx *c = p->c;
	struct df_cand tmp = { .ino = f->ino, .blocks = f->blocks,
			       .runs = f->runs, .groups = 1 };
	struct df_cand *cd = f->frag ? df_find_cand(c, f->ino) : &tmp;
	enum df_outcome out;
	errcode_t err, why;
	uint32_t runs_after;

	*moved = 0;
	f->done = 1;		/* tried: not again this round */
	if (!cd)
		return 0;
	cd->goal = goal;
	err = df_move(c, cd, DF_PLACE, &out, &why, &runs_after);
	cd->goal = 0;
	if (err || out != DF_MOVED)
		return err;
	*moved = 1;
	p->moved++;
	ext2fs_mark_inode_bitmap2(p->settled, f->ino);
	if (f->frag) {
		cd->packed = 1;
		df_fixed(c, cd, runs_after);
	} else {
		c->rep->st.files_compacted++;
		c->rep->st.blocks_compacted += f->blocks;
		c->rep->st.blocks_moved += f->blocks;
	}
	err = df_maybe_commit(c);
	df_progress(c, 0);
	return err;
}

static int stop(struct pack *p)
{
	if (!df_should_stop(p->c))
		return 0;
	p->c->rep->interrupted = 1;
	return 1;
}

/* The holes, lowest first, back to back. */
static errcode_t fill_low(struct pack *p)
{
	errcode_t err = 0;
	int moved;

	for (size_t i = 0; i < p->nh && !err; i++) {
		struct pk_hole *h = &p->h[i];
		blk64_t hend = h->start + h->len;
		struct pk_file *f;

		while (h->len && !err && (f = best_for(p, hend, h->len))) {
			if (stop(p))
				return 0;
			err = place(p, f, h->start, &moved);
			if (!err && moved) {
				h->start += f->blocks;
				h->len -= f->blocks;
			}
		}
	}
	return err;
}

/* Whether block b is free and data (not group metadata): as the bitmap
 * stands, blocks this round freed included (they are free at its
 * commit). Caller is the run's only thread. */
static int free_data(struct pack *p, blk64_t b)
{
	ext2_filsys fs = p->c->fs;

	if (b < fs->super->s_first_data_block ||
	    b >= ext2fs_blocks_count(fs->super))
		return 0;
	return !ext2fs_test_block_bitmap2(fs->block_map, b) &&
	       !e3_alloc_is_meta(p->c->alloc, b);
}

/* Free extents fewer by moving contiguous f into h (not next to it): h
 * filled exactly is one fewer; f's old place is one more, less one for
 * each free neighbour it merges with. */
static int gain(struct pack *p, const struct pk_file *f, const struct pk_hole *h)
{
	return (h->len == f->blocks) + free_data(p, f->lo - 1) +
	       free_data(p, f->lo + f->blocks) - 1;
}

/* Settling (after the fix and room passes): each hole, lowest first,
 * takes the contiguous file, wherever it is, whose move leaves free
 * space in the fewest extents, while one leaves it in fewer. */
static errcode_t settle(struct pack *p)
{
	errcode_t err = 0;
	int moved;

	for (size_t i = 0; i < p->nh && !err; i++) {
		struct pk_hole *h = &p->h[i];

		while (h->len && !err) {
			struct pk_file *best = NULL;
			int bg = 0, g;

			for (size_t k = 0; k < p->nf; k++) {
				struct pk_file *f = &p->f[k];

				if (f->done || f->frag || f->blocks > h->len ||
				    f->lo + f->blocks == h->start ||
				    h->start + h->len == f->lo)
					continue;
				g = gain(p, f, h);
				if (g > bg || (best && g == bg &&
					       (f->blocks > best->blocks ||
						(f->blocks == best->blocks &&
						 f->lo > best->lo)))) {
					if (g <= 0)
						continue;
					best = f;
					bg = g;
				}
			}
			if (!best)
				break;
			if (stop(p))
				return 0;
			err = place(p, best, h->start, &moved);
			if (!err && moved) {
				h->start += best->blocks;
				h->len -= best->blocks;
			}
		}
	}
	return err;
}

static errcode_t round_once(struct pack *p)
{
	struct df_ctx *c = p->c;
	errcode_t err;

	/* what the last round (or pass) freed is free once committed */
	if ((err = df_commit(c)))
		return err;
	e3_fs_lock(c->img);
	err = scan_files(p);
	if (!err)
		err = scan_holes(p);
	e3_fs_unlock(c->img);
	if (err)
		return err;
	qsort(p->f, p->nf, sizeof(*p->f), cmp_lo);
	find_frontier(p);
	err = fill_low(p);
	if (!err && !c->rep->interrupted && p->settle)
		err = settle(p);
	return err;
}

errcode_t df_pack(struct df_ctx *c, int settle)
{
	struct pack p = { .c = c, .settle = settle };
	errcode_t err;

	e3_fs_lock(c->img);
	err = ext2fs_allocate_inode_bitmap(c->fs, "defrag pack", &p.settled);
	e3_fs_unlock(c->img);
	if (err)
		return err;
	for (int r = 0; r < DF_PACK_ROUNDS && !err && !c->rep->interrupted;
	     r++) {
		p.moved = 0;
		err = round_once(&p);
		pack_free(&p);
		if (!p.moved)
			break;
	}
	ext2fs_free_inode_bitmap(p.settled);
	if (!err)
		err = df_commit(c);
	return err;
}
