/*
 * owner.c: which metadata structure of which block group holds a block
 * (superblock or descriptor copy, reserved GDT, a bitmap, the inode table
 * with the inodes that table block holds), from the geometry and the
 * descriptors only, so e3debugfs' `owner`, e3defrag and e3fsck classify
 * blocks the same way. Files (the journal among them) are the caller's:
 * that needs a walk of the inodes.
 */
#include <string.h>

#include "e3_inspect.h"

/* The superblock, descriptor and reserved GDT blocks at g's head. */
static int head_meta(ext2_filsys fs, dgrp_t g, blk64_t b,
		     struct e3_meta_owner *m)
{
	blk64_t super = 0, old_desc = 0, new_desc = 0;
	blk_t used = 0;
	int has_super = ext2fs_bg_has_super(fs, g);

	ext2fs_super_and_bgd_loc2(fs, g, &super, &old_desc, &new_desc, &used);
	if (has_super && b == super) {
		m->kind = E3_META_SUPER;
		return 1;
	}
	if (old_desc && b >= old_desc && b < old_desc + fs->desc_blocks) {
		m->kind = E3_META_DESC;
		m->index = b - old_desc;
		return 1;
	}
	if (new_desc && b == new_desc) {
		m->kind = E3_META_DESC;
		m->index = g / EXT2_DESC_PER_BLOCK(fs->super);
		return 1;
	}
	if (old_desc && b >= old_desc + fs->desc_blocks &&
	    b < old_desc + fs->desc_blocks + fs->super->s_reserved_gdt_blocks) {
		m->kind = E3_META_RESERVED_GDT;
		m->index = b - old_desc - fs->desc_blocks;
		return 1;
	}
	return 0;
}

/* A bitmap or inode table block of group g. */
static int table_meta(ext2_filsys fs, dgrp_t g, blk64_t b,
		      struct e3_meta_owner *m)
{
	blk64_t it = ext2fs_inode_table_loc(fs, g);
	uint32_t ipb = fs->blocksize / EXT2_INODE_SIZE(fs->super);

	if (b == ext2fs_block_bitmap_loc(fs, g)) {
		m->kind = E3_META_BLOCK_BITMAP;
		return 1;
	}
	if (b == ext2fs_inode_bitmap_loc(fs, g)) {
		m->kind = E3_META_INODE_BITMAP;
		return 1;
	}
	if (it && b >= it && b < it + fs->inode_blocks_per_group) {
		m->kind = E3_META_INODE_TABLE;
		m->index = b - it;
		m->ino_first = g * fs->super->s_inodes_per_group +
			       (ext2_ino_t)m->index * ipb + 1;
		m->ino_last = m->ino_first + ipb - 1;
		if (m->ino_last > (g + 1) * fs->super->s_inodes_per_group)
			m->ino_last = (g + 1) * fs->super->s_inodes_per_group;
		return 1;
	}
	return 0;
}

errcode_t e3_meta_owner(ext2_filsys fs, blk64_t b, struct e3_meta_owner *m)
{
	dgrp_t g;

	memset(m, 0, sizeof(*m));
	if (b >= ext2fs_blocks_count(fs->super))
		return EXT2_ET_BAD_BLOCK_NUM;
	if (b < fs->super->s_first_data_block) {
		m->kind = E3_META_BOOT;	/* block 0 of a 1 KiB filesystem */
		return 0;
	}
	g = ext2fs_group_of_blk2(fs, b);
	m->group = g;
	if (head_meta(fs, g, b, m))
		return 0;
	/* without flex_bg a group's tables are its own; with it they may lie
	 * in another group, so look through all of them */
	for (dgrp_t i = 0; i < fs->group_desc_count; i++) {
		if (table_meta(fs, i, b, m)) {
			m->group = i;
			return 0;
		}
	}
	m->kind = E3_META_NONE;
	return 0;
}

const char *e3_meta_kind_name(enum e3_meta_kind k)
{
	switch (k) {
	case E3_META_NONE:		return "none";
	case E3_META_BOOT:		return "boot block";
	case E3_META_SUPER:		return "superblock";
	case E3_META_DESC:		return "group descriptors";
	case E3_META_RESERVED_GDT:	return "reserved GDT";
	case E3_META_BLOCK_BITMAP:	return "block bitmap";
	case E3_META_INODE_BITMAP:	return "inode bitmap";
	case E3_META_INODE_TABLE:	return "inode table";
	}
	return "?";
}
