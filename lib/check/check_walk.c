/*
 * check_walk.c: one inode's block map, walked in e2fsck's order (as
 * ext2fs_block_iterate3 with no flags gives it: i_block[0..11], then each
 * indirect block before the blocks it maps, pre-order). Indirect blocks
 * are read with pread on the caller's own fd, so pass 2's workers can walk
 * in parallel without touching the shared ext2_filsys.
 *
 * Every non-zero pointer goes to the visitor with its logical position
 * (>= 0 for data, BLOCK_COUNT_IND/DIND/TIND for indirect blocks). Pointers
 * outside the filesystem are reported as illegal and never followed.
 */
#include <string.h>

#include "check_walk.h"

static int legal(const struct chk_walk *wk, blk64_t b)
{
	return b >= wk->first_data && b < wk->nblocks;
}

/* Returns nonzero to stop the walk. */
static int visit(struct chk_walk *wk, blk64_t b, e2_blkcnt_t lblk)
{
	if (!legal(wk, b)) {
		wk->illegal++;
		if (wk->on_illegal)
			wk->on_illegal(wk, b, lblk);
		return wk->illegal > CHK_MAX_ILLEGAL;
	}
	return wk->visit(wk, b, lblk);
}

static int walk_ind(struct chk_walk *wk, blk64_t ind, int depth,
		    e2_blkcnt_t ind_count, e2_blkcnt_t *lblk)
{
	unsigned apb = wk->bs / 4, i;
	uint32_t *tab;
	e2_blkcnt_t span = 1;
	int d;

	for (d = 1; d < depth; d++)
		span *= apb;
	if (visit(wk, ind, ind_count))
		return 1;
	if (!legal(wk, ind) || wk->skip_children) {
		wk->skip_children = 0;
		*lblk += span * apb;
		return 0;
	}
	tab = (uint32_t *)wk->buf[depth - 1];
	if (chk_pread(wk->fd, tab, wk->bs, (uint64_t)ind * wk->bs))
		wk->read_errors++;
	for (i = 0; i < apb; i++) {
		blk64_t b = ext2fs_le32_to_cpu(tab[i]);

		if (!b) {
			*lblk += span;
			continue;
		}
		if (depth == 1) {
			if (visit(wk, b, *lblk))
				return 1;
			(*lblk)++;
		} else if (walk_ind(wk, b, depth - 1,
				    depth == 2 ? BLOCK_COUNT_IND :
				    BLOCK_COUNT_DIND, lblk)) {
			return 1;
		}
	}
	return 0;
}

int chk_walk_blocks(struct chk_walk *wk, const struct ext2_inode *inode)
{
	static const e2_blkcnt_t counts[3] = {
		BLOCK_COUNT_IND, BLOCK_COUNT_DIND, BLOCK_COUNT_TIND
	};
	unsigned apb = wk->bs / 4;
	e2_blkcnt_t lblk;
	int i;

	wk->illegal = 0;
	wk->skip_children = 0;
	for (i = 0; i < EXT2_NDIR_BLOCKS; i++)
		if (inode->i_block[i] && visit(wk, inode->i_block[i], i))
			return 1;
	lblk = EXT2_NDIR_BLOCKS;
	for (i = 0; i < 3; i++) {
		blk64_t b = inode->i_block[EXT2_IND_BLOCK + i];
		e2_blkcnt_t span = apb;
		int d;

		for (d = 0; d < i; d++)
			span *= apb;
		if (!b) {
			lblk += span;
			continue;
		}
		if (walk_ind(wk, b, i + 1, counts[i], &lblk))
			return 1;
	}
	return 0;
}
