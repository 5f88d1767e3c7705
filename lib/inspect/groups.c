/*
 * groups.c: per-group figures and the free extents of a block range, read
 * from the descriptors and the block bitmap (e3debugfs' `groups` and
 * `freemap`). Free extents are clipped to the range asked for, so a group's
 * list is what dumpe2fs prints as "Free blocks: a-b, ...".
 */
#include <string.h>

#include "e3_inspect.h"

static errcode_t need_block_bitmap(ext2_filsys fs)
{
	return fs->block_map ? 0 : ext2fs_read_block_bitmap(fs);
}

errcode_t e3_free_extents(ext2_filsys fs, blk64_t first, blk64_t last,
			  e3_free_extent_fn fn, void *priv)
{
	blk64_t b = first, zero, set;
	errcode_t err;

	if ((err = need_block_bitmap(fs)))
		return err;
	while (b <= last) {
		if (ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, last,
							 &zero))
			break;		/* ENOENT: no free block left */
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, zero,
							last, &set))
			set = last + 1;
		if (fn(zero, set - zero, priv))
			break;
		b = set;
	}
	return 0;
}

/* Group g's first and last block. */
static void group_range(ext2_filsys fs, dgrp_t g, blk64_t *first,
			blk64_t *last)
{
	*first = ext2fs_group_first_block2(fs, g);
	*last = ext2fs_group_last_block2(fs, g);
}

errcode_t e3_group_free_extents(ext2_filsys fs, dgrp_t g,
				e3_free_extent_fn fn, void *priv)
{
	blk64_t first, last;

	if (g >= fs->group_desc_count)
		return EXT2_ET_INVALID_ARGUMENT;
	group_range(fs, g, &first, &last);
	return e3_free_extents(fs, first, last, fn, priv);
}

static int count_extent(blk64_t start, blk64_t len, void *priv)
{
	struct e3_group_info *gi = priv;

	(void)start;
	gi->free_extents++;
	gi->bitmap_free += len;
	if (len > gi->largest_free)
		gi->largest_free = len;
	return 0;
}

errcode_t e3_group_info(ext2_filsys fs, dgrp_t g, struct e3_group_info *gi)
{
	memset(gi, 0, sizeof(*gi));
	if (g >= fs->group_desc_count)
		return EXT2_ET_INVALID_ARGUMENT;
	gi->group = g;
	group_range(fs, g, &gi->first, &gi->last);
	gi->free_blocks = ext2fs_bg_free_blocks_count(fs, g);
	gi->free_inodes = ext2fs_bg_free_inodes_count(fs, g);
	gi->dirs = ext2fs_bg_used_dirs_count(fs, g);
	return e3_group_free_extents(fs, g, count_extent, gi);
}
