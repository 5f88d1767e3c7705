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

static int add_extent(blk64_t start, blk64_t len, void *priv)
{
	(void)start;
	e3_free_extent_add(priv, len);
	return 0;
}

errcode_t e3_free_scan(ext2_filsys fs, struct e3_layout *lay)
{
	lay->free_blocks = lay->free_extents = 0;
	lay->free_min = lay->free_max = 0;
	memset(lay->hist_extents, 0, sizeof(lay->hist_extents));
	memset(lay->hist_blocks, 0, sizeof(lay->hist_blocks));
	return e3_free_extents(fs, fs->super->s_first_data_block,
			       ext2fs_blocks_count(fs->super) - 1, add_extent,
			       lay);
}
