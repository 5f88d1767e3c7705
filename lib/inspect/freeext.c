/*
 * freeext.c: free-space fragmentation like e2freefrag — free extents,
 * their count, sizes and a power-of-two histogram.
 */
#include <string.h>

#include "e3_inspect.h"

void e3_free_extent_add(struct e3_layout *lay, blk64_t len)
{
	int i;

	if (!len)
		return;
	lay->free_extents++;
	lay->free_blocks += len;
	if (!lay->free_min || len < lay->free_min)
		lay->free_min = len;
	if (len > lay->free_max)
		lay->free_max = len;
	i = 63 - __builtin_clzll(len);
	if (i >= E3_FREEFRAG_BUCKETS)
		i = E3_FREEFRAG_BUCKETS - 1;
	lay->hist_extents[i]++;
	lay->hist_blocks[i] += len;
}

errcode_t e3_free_scan(ext2_filsys fs, struct e3_layout *lay)
{
	blk64_t end = ext2fs_blocks_count(fs->super) - 1;
	blk64_t b = fs->super->s_first_data_block, zero, set;
	errcode_t err;

	if (!fs->block_map) {
		err = ext2fs_read_block_bitmap(fs);
		if (err)
			return err;
	}
	lay->free_blocks = lay->free_extents = 0;
	lay->free_min = lay->free_max = 0;
	memset(lay->hist_extents, 0, sizeof(lay->hist_extents));
	memset(lay->hist_blocks, 0, sizeof(lay->hist_blocks));
	while (b <= end) {
		if (ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, end,
							 &zero))
			break;		/* ENOENT: no free block left */
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, zero,
							end, &set))
			set = end + 1;
		e3_free_extent_add(lay, set - zero);
		b = set;
	}
	return 0;
}
