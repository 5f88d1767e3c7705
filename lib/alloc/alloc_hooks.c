/*
 * alloc_hooks.c: plugging the allocator into libext2fs, so that blocks
 * libext2fs picks by itself (ext2fs_mkdir, ext2fs_expand_dir, bmap with
 * BMAP_ALLOC, symlinks) come from our bitmap mirror and avoid the blocks
 * our callers have claimed but not yet marked, and so that frees made
 * through libext2fs reach the deferred-free list.
 *
 * Every hook runs inside a libext2fs call, hence under fs_lock; they take
 * only rsv_lock / defer_lock, which come after fs_lock in the order.
 */
#include "alloc_int.h"

/* get_alloc_block2: choose one block near goal, claimed in our mirror.
 * libext2fs then marks it in fs->block_map through
 * ext2fs_block_alloc_stats2, which stats_hook below sees as ours. The
 * ctx says nothing useful for block-mapped files (facts §5.1), so the
 * block goes windowless, around other files' windows when possible. */
static errcode_t alloc_hook(ext2_filsys fs, blk64_t goal, blk64_t *ret,
			    struct blk_alloc_ctx *ctx)
{
	struct e3_alloc *a = alloc_of(fs);
	blk64_t got;
	errcode_t err;

	if (!a)
		return EXT2_ET_BLOCK_ALLOC_FAIL;
	(void)ctx;
	err = e3_alloc_blocks(a, NULL, goal, 1, ret, &got);
	return err == E3_IMAGE_FULL ? EXT2_ET_BLOCK_ALLOC_FAIL : err;
}

/* A block libext2fs marks in use is normally one we handed out; if it is
 * not (a caller searched fs->block_map itself), claim it so we never give
 * it away. Frees wait for the commit. */
static void note_range(ext2_filsys fs, struct e3_alloc *a, blk64_t blk,
		       blk64_t n, int inuse)
{
	(void)fs;
	if (blk < a->first || blk >= a->nblocks)
		return;
	if (blk + n > a->nblocks)
		n = a->nblocks - blk;
	if (inuse > 0) {
		for (blk64_t b = blk; b < blk + n; b++)
			bm_claim(a, b);
	} else if (inuse < 0) {
		/* a freed block may be in the live log: the layer above
		 * revokes it before anyone can reuse it */
		if (a->ops.freed)
			a->ops.freed(a->ops.arg, blk, n);
		e3_alloc_free_deferred(a, blk, n);
	}
}

static void stats_hook(ext2_filsys fs, blk64_t blk, int inuse)
{
	struct e3_alloc *a = alloc_of(fs);

	if (!a)
		return;
	note_range(fs, a, blk, 1, inuse);
	if (a->old_stats)
		a->old_stats(fs, blk, inuse);
}

static void stats_range_hook(ext2_filsys fs, blk64_t blk, blk_t num,
			     int inuse)
{
	struct e3_alloc *a = alloc_of(fs);

	if (!a)
		return;
	note_range(fs, a, blk, num, inuse);
	if (a->old_stats_range)
		a->old_stats_range(fs, blk, num, inuse);
}

void alloc_hooks_install(struct e3_alloc *a)
{
	ext2_filsys fs = a->fs;

	/* No setter exists for the context-aware hook: assign the field. */
	a->old_alloc2 = fs->get_alloc_block2;
	fs->get_alloc_block2 = alloc_hook;
	ext2fs_set_block_alloc_stats_callback(fs, stats_hook, &a->old_stats);
	ext2fs_set_block_alloc_stats_range_callback(fs, stats_range_hook,
						    &a->old_stats_range);
}

void alloc_hooks_remove(struct e3_alloc *a)
{
	ext2_filsys fs = a->fs;

	fs->get_alloc_block2 = a->old_alloc2;
	ext2fs_set_block_alloc_stats_callback(fs, a->old_stats, NULL);
	ext2fs_set_block_alloc_stats_range_callback(fs, a->old_stats_range,
						    NULL);
}
