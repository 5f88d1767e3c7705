/*
 * alloc.c: the block allocator's life cycle and accounting — creating the
 * bitmap mirror, per-file reservations, frees deferred to the next commit,
 * statistics. Placement itself is in alloc_window.c, the bitmap words in
 * alloc_bitmap.c, the libext2fs hooks in alloc_hooks.c.
 *
 * LOCKING (the order is the one in image.h: file->lock -> fs_lock ->
 * rsv_lock; defer_lock is a leaf taken under any of them).
 *
 *   rsv_lock    guards the window set (tree or list) and the start, end
 *               and linked fields of every e3_rsv in it. A window is moved
 *               only by its owner (the thread writing that file, which the
 *               load layer serialises with file->lock), so the owner may
 *               read its own start/end without the lock; everyone else
 *               reads them under rsv_lock. As in ext3, the lock covers the
 *               search and the insert/erase, never the bitmap scan of a
 *               non-hinted window; a size-hinted window is booked with the
 *               lock held across its free-run search, so that concurrent
 *               bookings cannot pick the same run.
 *   (atomics)   the bitmap words and the per-group free counters: a block
 *               is claimed by an atomic fetch-or of its bit, and whoever
 *               sets the bit owns the block. No lock at all, so claiming
 *               inside one's own window never contends.
 *   defer_lock  the lists of blocks freed by the running transaction
 *               and by the committing one (sealed, see e3_alloc_seal).
 *   fs_lock     (the image's) is never taken here. e3_alloc_blocks must not be
 *               called with rsv_lock held; it may be called with or
 *               without fs_lock. The libext2fs hooks run under fs_lock
 *               (libext2fs is only ever called under it) and take
 *               rsv_lock or defer_lock inside it, which is the order above.
 *   [owner]     e3_rsv fields used only by the thread that owns the file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"

errcode_t e3_alloc_create(ext2_filsys fs, enum e3_alloc_mode mode,
			  const struct e3_alloc_ops *ops,
			  struct e3_alloc **ret)
{
	struct e3_alloc *a;
	errcode_t err;

	if ((unsigned)mode > E3_ALLOC_NONE)
		return E3_BAD_ALLOC_MODE;
	if (!fs->block_map) {
		err = ext2fs_read_block_bitmap(fs);
		if (err)
			return err;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return ENOMEM;
	if (ops)
		a->ops = *ops;
	a->fs = fs;
	a->mode = mode;
	a->first = fs->super->s_first_data_block;
	a->nblocks = ext2fs_blocks_count(fs->super);
	a->bpg = EXT2_BLOCKS_PER_GROUP(fs->super);
	a->ngroups = fs->group_desc_count;
	a->ifloor = calloc(a->ngroups ? a->ngroups : 1, sizeof(*a->ifloor));
	err = a->ifloor ? bm_load(a) : ENOMEM;
	if (err) {
		free(a->ifloor);
		free(a->used);
		free(a->meta);
		free(a->gfree);
		free(a);
		return err;
	}
	pthread_mutex_init(&a->rsv_lock, NULL);
	pthread_mutex_init(&a->defer_lock, NULL);
	rsv_set_init(&a->set, mode, a->first, a->nblocks - 1);
	alloc_hooks_install(a);
	*ret = a;
	return 0;
}

void e3_alloc_destroy(struct e3_alloc *a)
{
	if (!a)
		return;
	alloc_hooks_remove(a);
	pthread_mutex_destroy(&a->rsv_lock);
	pthread_mutex_destroy(&a->defer_lock);
	free(a->defer);
	free(a->sealed);
	free(a->used);
	free(a->meta);
	free(a->gfree);
	free(a->ifloor);
	free(a);
}

enum e3_alloc_mode e3_alloc_mode(struct e3_alloc *a)
{
	return a->mode;
}

void e3_rsv_init(struct e3_alloc *a, struct e3_rsv *r, ext2_ino_t ino,
		 uint64_t hint_blocks, unsigned colour)
{
	memset(r, 0, sizeof(*r));
	r->goal_size = a->mode == E3_ALLOC_NONE ? 0 : E3_RSV_DEFAULT;
	r->hint_blocks = a->mode == E3_ALLOC_NONE ? 0 : hint_blocks;
	r->ino = ino;
	r->colour = colour % 16;
}

void e3_rsv_set_goal_size(struct e3_rsv *r, uint32_t blocks)
{
	r->goal_size = blocks > E3_RSV_MAX ? E3_RSV_MAX : blocks;
}

blk64_t e3_rsv_goal(struct e3_alloc *a, struct e3_rsv *r)
{
	blk64_t b;
	dgrp_t g;

	if (r->last_pblk)
		return alloc_clamp_goal(a, r->last_pblk + 1);
	g = r->ino ? (dgrp_t)((r->ino - 1) / a->fs->super->s_inodes_per_group) : 0;
	if (g >= a->ngroups)
		g = 0;
	b = grp_first(a, g);
	if (!r->hint_blocks)
		b += (blk64_t)r->colour * (a->bpg / 16);
	return b <= grp_last(a, g) ? b : grp_first(a, g);
}

uint64_t e3_map_blocks(unsigned blocksize, uint64_t n)
{
	uint64_t p = blocksize / 4, total = n, rest;

	if (n <= EXT2_NDIR_BLOCKS)
		return total;
	rest = n - EXT2_NDIR_BLOCKS;
	total += 1;					/* IND */
	if (rest <= p)
		return total;
	rest -= p;
	if (rest <= p * p)				/* DIND + its INDs */
		return total + 1 + (rest + p - 1) / p;
	total += 1 + p;
	rest -= p * p;					/* TIND, DINDs, INDs */
	return total + 1 + (rest + p * p - 1) / (p * p) + (rest + p - 1) / p;
}

void e3_rsv_discard(struct e3_alloc *a, struct e3_rsv *r)
{
	alloc_discard(a, r);
}

void e3_alloc_unclaim(struct e3_alloc *a, blk64_t start, blk64_t n)
{
	bm_release(a, start, n);
}

/* The blocks stay claimed in the mirror until the commit: nobody can be
 * handed a block whose old contents the journal may still need. */
void e3_alloc_free_deferred(struct e3_alloc *a, blk64_t start, blk64_t n)
{
	pthread_mutex_lock(&a->defer_lock);
	if (a->ndefer && a->defer[a->ndefer - 1].start +
	    a->defer[a->ndefer - 1].n == start) {
		a->defer[a->ndefer - 1].n += n;
	} else {
		if (a->ndefer == a->capdefer) {
			size_t cap = a->capdefer ? 2 * a->capdefer : 64;
			struct e3_extent *d = realloc(a->defer, cap * sizeof(*d));

			if (!d) {
				/* Out of memory: the blocks stay claimed until
				 * the image is closed — safe, merely unused. */
				pthread_mutex_unlock(&a->defer_lock);
				return;
			}
			a->defer = d;
			a->capdefer = cap;
		}
		a->defer[a->ndefer++] = (struct e3_extent){ start, n };
	}
	pthread_mutex_unlock(&a->defer_lock);
}

/* The running transaction's frees become the committing one's: from now
 * on a free belongs to the next transaction, and must not be released by
 * this commit (a crash would replay the committing transaction, which
 * still gives the block to its old owner, over the new owner's data).
 * One commit is in flight at a time, so the sealed list is empty here
 * unless a commit failed (then nothing is released until close). */
void e3_alloc_seal(struct e3_alloc *a)
{
	pthread_mutex_lock(&a->defer_lock);
	if (!a->sealed) {
		a->sealed = a->defer;
		a->nsealed = a->ndefer;
		a->defer = NULL;
		a->ndefer = a->capdefer = 0;
	} else if (a->ndefer) {
		/* a failed commit left its seal: keep both, released by no one
		 * (the journal is aborted) but freed at destroy */
		struct e3_extent *d = realloc(a->sealed, (a->nsealed + a->ndefer) *
					      sizeof(*d));

		if (d) {
			memcpy(d + a->nsealed, a->defer, a->ndefer * sizeof(*d));
			a->sealed = d;
			a->nsealed += a->ndefer;
			free(a->defer);
			a->defer = NULL;
			a->ndefer = a->capdefer = 0;
		}
	}
	pthread_mutex_unlock(&a->defer_lock);
}

void e3_alloc_committed(struct e3_alloc *a)
{
	struct e3_extent *d;
	size_t n;

	pthread_mutex_lock(&a->defer_lock);
	d = a->sealed;
	n = a->nsealed;
	a->sealed = NULL;
	a->nsealed = 0;
	pthread_mutex_unlock(&a->defer_lock);
	for (size_t i = 0; i < n; i++)
		bm_release(a, d[i].start, d[i].n);
	free(d);
}

blk64_t e3_alloc_deferred_count(struct e3_alloc *a)
{
	blk64_t n = 0;

	pthread_mutex_lock(&a->defer_lock);
	for (size_t i = 0; i < a->ndefer; i++)
		n += a->defer[i].n;
	for (size_t i = 0; i < a->nsealed; i++)
		n += a->sealed[i].n;
	pthread_mutex_unlock(&a->defer_lock);
	return n;
}

blk64_t e3_alloc_free_count(struct e3_alloc *a)
{
	blk64_t n = 0;

	for (dgrp_t g = 0; g < a->ngroups; g++)
		n += __atomic_load_n(&a->gfree[g], __ATOMIC_RELAXED);
	return n;
}

bool rsv_tree_check(struct e3_alloc *a, char *why, size_t whylen)
{
	bool ok;

	pthread_mutex_lock(&a->rsv_lock);
	ok = rsv_set_check(&a->set, why, whylen);
	pthread_mutex_unlock(&a->rsv_lock);
	return ok;
}

void e3_alloc_get_stats(struct e3_alloc *a, struct e3_alloc_stats *st)
{
	pthread_mutex_lock(&a->rsv_lock);
	st->windows = a->set.count;
	pthread_mutex_unlock(&a->rsv_lock);
	st->window_allocs = __atomic_load_n(&a->n_window_allocs, __ATOMIC_RELAXED);
	st->window_fallbacks = __atomic_load_n(&a->n_fallbacks, __ATOMIC_RELAXED);
	st->blocks_claimed = __atomic_load_n(&a->n_claimed, __ATOMIC_RELAXED);
}
