/*
 * alloc_int.h: the allocator's private state and the helpers its files
 * share (alloc.c: life cycle and accounting; alloc_bitmap.c: the atomic
 * bitmap mirror; alloc_window.c: placement and windows; alloc_hooks.c:
 * libext2fs hooks). The locking rules are in alloc.c's head comment.
 */
#ifndef E3_ALLOC_INT_H
#define E3_ALLOC_INT_H

#include <pthread.h>
#include "alloc.h"
#include "rsv_tree.h"

#define E3_RSV_DEFAULT	8	/* first window of a file */
#define E3_RSV_MAX	1027	/* 1024 pointers of a 4 KiB IND + 3 */
#define E3_NOBLK	((blk64_t)-1)

struct e3_extent {
	blk64_t start, n;
};

struct e3_alloc {
	/* Read-only after e3_alloc_create. */
	struct e3_alloc_ops ops;	/* from the layer above */
	ext2_filsys fs;
	enum e3_alloc_mode mode;
	blk64_t first;			/* s_first_data_block */
	blk64_t nblocks;		/* s_blocks_count: blocks are < nblocks */
	blk64_t bpg;			/* blocks per group */
	dgrp_t ngroups;
	uint64_t *meta;			/* group-head metadata (superblock,
					   descriptors, bitmaps, inode table) */

	/* Atomics: no lock. */
	uint64_t *used;			/* [atomic] bit i: block first + i
					   claimed (in use, handed out, or
					   freed but not yet committed) */
	uint32_t *gfree;		/* [atomic] unclaimed blocks per group */
	uint64_t n_window_allocs;	/* [atomic] */
	uint64_t n_fallbacks;		/* [atomic] */
	uint64_t n_claimed;		/* [atomic] */

	pthread_mutex_t rsv_lock;
	struct rsv_set set;		/* [rsv_lock] */

	/* Where a size-hinted search from a goal may start (find_run): no
	 * block in [goal, resume) was free and outside every window when the
	 * search that recorded it began, and free_gen is bumped after every
	 * release and every window that leaves with free blocks, which voids
	 * the point (a search that overlaps a release may still miss its
	 * blocks, as one that ran just before it would). A bulk load's
	 * searches start at their group's first block and would otherwise
	 * step over every file written and every window booked since, on
	 * each booking. */
	uint64_t free_gen;		/* [atomic] bumped after blocks are
					   released or leave a window */
	struct e3_resume {
		blk64_t goal, resume;
		uint64_t gen;
	} resume[16];			/* [rsv_lock] by goal's group */

	pthread_mutex_t defer_lock;	/* leaf lock */
	struct e3_extent *defer;	/* [defer_lock] freed, not committed */
	size_t ndefer, capdefer;	/* [defer_lock] */
	struct e3_extent *sealed;	/* [defer_lock] freed in the
					   committing transaction: released
					   by e3_alloc_committed */
	size_t nsealed;			/* [defer_lock] */

	/* Where e3_ialloc's search of group g may start (0: the group's
	 * first inode): no inode of g below ifloor[g] is free. [fs_lock] */
	ext2_ino_t *ifloor;

	/* Hooks we replaced, restored by e3_alloc_destroy. [fs_lock] */
	errcode_t (*old_alloc2)(ext2_filsys, blk64_t, blk64_t *,
				struct blk_alloc_ctx *);
	void (*old_stats)(ext2_filsys, blk64_t, int);
	void (*old_stats_range)(ext2_filsys, blk64_t, blk_t, int);
};

/* See struct e3_alloc_ops: fs->priv_data leads to the allocator. */
static inline struct e3_alloc *alloc_of(ext2_filsys fs)
{
	return fs->priv_data ? *(struct e3_alloc **)fs->priv_data : NULL;
}

static inline dgrp_t grp_of(const struct e3_alloc *a, blk64_t b)
{
	return (dgrp_t)((b - a->first) / a->bpg);
}
static inline blk64_t grp_first(const struct e3_alloc *a, dgrp_t g)
{
	return a->first + (blk64_t)g * a->bpg;
}
static inline blk64_t grp_last(const struct e3_alloc *a, dgrp_t g)
{
	blk64_t l = grp_first(a, g) + a->bpg - 1;
	return l < a->nblocks ? l : a->nblocks - 1;
}

/* alloc_bitmap.c */
errcode_t bm_load(struct e3_alloc *a);
bool bm_used(const struct e3_alloc *a, blk64_t b);
bool bm_claim(struct e3_alloc *a, blk64_t b);
void bm_release(struct e3_alloc *a, blk64_t b, blk64_t n);
/* First unclaimed block in [from, to], or E3_NOBLK. */
blk64_t bm_next_free(const struct e3_alloc *a, blk64_t from, blk64_t to);
/* First claimed block in [from, to], or E3_NOBLK. */
blk64_t bm_next_used(const struct e3_alloc *a, blk64_t from, blk64_t to);
/* First block in [from, to] that is claimed and not group metadata. */
blk64_t bm_next_obstacle(const struct e3_alloc *a, blk64_t from, blk64_t to);
/* Unclaimed blocks in [from, to]. */
blk64_t bm_count_free(const struct e3_alloc *a, blk64_t from, blk64_t to);
/* The n-th (1-based) unclaimed block at or after from; E3_NOBLK. */
blk64_t bm_nth_free(const struct e3_alloc *a, blk64_t from, blk64_t to,
		    blk64_t n);
/* ext3's find_next_usable_block: goal, then the rest of goal's 64-block
 * chunk, then a fully free aligned byte, then any free bit. */
blk64_t bm_find_usable(const struct e3_alloc *a, blk64_t goal,
		       blk64_t from, blk64_t to);
/* Claims b and the blocks after it while free, up to count and to `to`. */
blk64_t bm_claim_run(struct e3_alloc *a, blk64_t b, blk64_t to,
		     blk64_t count);

/* alloc_window.c */
blk64_t alloc_clamp_goal(const struct e3_alloc *a, blk64_t goal);
errcode_t alloc_windowless(struct e3_alloc *a, blk64_t goal, blk64_t count,
			   bool polite, blk64_t *start, blk64_t *got);

/* Unlinks r's window and frees the further windows of its hint. */
void alloc_discard(struct e3_alloc *a, struct e3_rsv *r);

/* alloc_hooks.c */
void alloc_hooks_install(struct e3_alloc *a);
void alloc_hooks_remove(struct e3_alloc *a);

#endif
