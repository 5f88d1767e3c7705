/*
 * cmd_super.c: stats [-h] — the superblock as libe2p lists it (the same
 * text as debugfs and dumpe2fs), the directory count, and a line pair
 * per group.
 */
#include <unistd.h>
#include <e2p/e2p.h>

#include "dbg.h"

static void group_lines(struct dbg *d, ext2_filsys fs, dgrp_t g)
{
	unsigned fb = ext2fs_bg_free_blocks_count(fs, g);
	unsigned fi = ext2fs_bg_free_inodes_count(fs, g);
	unsigned ud = ext2fs_bg_used_dirs_count(fs, g);

	fprintf(d->out, " Group %2u: block bitmap at %llu, inode bitmap at %llu, "
		"inode table at %llu\n"
		"           %u free block%s, %u free %s, %u used %s\n", g,
		(unsigned long long)ext2fs_block_bitmap_loc(fs, g),
		(unsigned long long)ext2fs_inode_bitmap_loc(fs, g),
		(unsigned long long)ext2fs_inode_table_loc(fs, g),
		fb, fb != 1 ? "s" : "", fi, fi != 1 ? "inodes" : "inode",
		ud, ud != 1 ? "directories" : "directory");
}

DBG_CMD(do_show_super_stats)
{
	struct dbg *d = dbg_of(info);
	ext2_filsys fs = d->fs;
	unsigned dirs = 0;
	int c, header_only = 0;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "h")) != -1) {
		if (c != 'h') {
			dbg_fail(d, 0, "usage: stats [-h]");
			return;
		}
		header_only = 1;
	}
	if (optind != argc) {
		dbg_fail(d, 0, "usage: stats [-h]");
		return;
	}
	list_super2(fs->super, d->out);
	for (dgrp_t g = 0; g < fs->group_desc_count; g++)
		dirs += ext2fs_bg_used_dirs_count(fs, g);
	fprintf(d->out, "Directories:              %u\n", dirs);
	if (header_only)
		return;
	for (dgrp_t g = 0; g < fs->group_desc_count; g++)
		group_lines(d, fs, g);
}
