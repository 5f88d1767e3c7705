/*
 * image_sane.c: what a writer checks before it trusts an image's
 * metadata. libext2fs opens an image whose group descriptors point
 * outside their group, and hands back bitmaps whatever they hold; a
 * writer that believed them would read inode tables from the wrong place
 * or give a new file blocks and inodes that are in use (two owners for
 * one block: worse than the damage it started with). So a writer refuses
 * an image that e2fsck would have to fix in these places first. (The
 * descriptors are checked by ext2fs_check_desc, in image.c.)
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "image_sane.h"

/* Set bits among the first nbits of b. */
static uint64_t count_set(const unsigned char *b, uint64_t nbits)
{
	uint64_t c = 0;

	for (uint64_t i = 0; i < nbits / 8; i++)
		c += (unsigned)__builtin_popcount(b[i]);
	if (nbits % 8)
		c += (unsigned)__builtin_popcount(b[nbits / 8] &
						  ((1u << (nbits % 8)) - 1));
	return c;
}

/* ext3 keeps each group's free counts exact in the same transaction as
 * its bitmaps (only the superblock's totals lag), so a mismatch means a
 * damaged bitmap or descriptor. */
errcode_t e3_image_check_bitmaps(ext2_filsys fs)
{
	struct ext2_super_block *sb = fs->super;
	unsigned bpg = sb->s_blocks_per_group, ipg = sb->s_inodes_per_group;
	size_t len = (bpg > ipg ? bpg : ipg) / 8 + 1;
	unsigned char *buf = malloc(len);
	errcode_t err = 0;

	if (!buf)
		return ENOMEM;
	for (dgrp_t g = 0; g < fs->group_desc_count && !err; g++) {
		blk64_t first = ext2fs_group_first_block2(fs, g);
		blk64_t n = ext2fs_group_last_block2(fs, g) - first + 1;

		err = ext2fs_get_block_bitmap_range2(fs->block_map, first,
						     (unsigned)n, buf);
		if (err)
			break;
		if (n - count_set(buf, n) != ext2fs_bg_free_blocks_count(fs, g)) {
			err = E3_BLOCK_BITMAP_BAD;
			break;
		}
		err = ext2fs_get_inode_bitmap_range2(fs->inode_map,
						     (ext2_ino_t)g * ipg + 1,
						     ipg, buf);
		if (err)
			break;
		if (ipg - count_set(buf, ipg) != ext2fs_bg_free_inodes_count(fs, g))
			err = E3_INODE_BITMAP_BAD;
	}
	free(buf);
	return err;
}


/* What ext2fs_open2 lets through but e2fsck refuses to check: the first
 * data block that places group 0 (a wrong one shifts every group's
 * metadata by a block), and a first non-reserved inode that would hand
 * the reserved ones out. */
errcode_t e3_image_check_super(ext2_filsys fs)
{
	const struct ext2_super_block *sb = fs->super;

	if (sb->s_first_data_block != (fs->blocksize == 1024 ? 1u : 0u))
		return E3_SUPER_BAD;
	if (sb->s_rev_level > EXT2_GOOD_OLD_REV &&
	    (sb->s_first_ino < EXT2_GOOD_OLD_FIRST_INO ||
	     sb->s_first_ino >= sb->s_inodes_count))
		return E3_SUPER_BAD;
	return 0;
}

/* Every path a writer resolves starts at the root: one that is not a
 * live directory would fail each entry separately (or be written into
 * as if it were one). */
errcode_t e3_image_check_root(ext2_filsys fs)
{
	struct ext2_inode in;
	errcode_t err = ext2fs_read_inode(fs, EXT2_ROOT_INO, &in);

	if (err)
		return err;
	if (!LINUX_S_ISDIR(in.i_mode) || !in.i_links_count || in.i_dtime)
		return E3_ROOT_BAD;
	return 0;
}
