/*
 * cmd_groups.c: views of the block groups, from lib/inspect (groups.c,
 * owner.c):
 *
 *   groups          one row per group: free blocks, free inodes and
 *                   directories (the descriptors' counts, as dumpe2fs),
 *                   the largest free extent in the bitmap, used %; then
 *                   a totals line.
 *   freemap [GROUP] the free extents (start, length) of one group or of
 *                   each, clipped at group ends as dumpe2fs lists them,
 *                   with their count, total and largest.
 *   owner BLOCK...  what holds each block: group metadata (which group's
 *                   superblock, descriptors, reserved GDT, bitmap, inode
 *                   table block and its inodes), the journal, an inode's
 *                   data or map block (with its path and logical block),
 *                   or free.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"
#include "owners.h"

static unsigned used_pct(blk64_t free, blk64_t total)
{
	return total ? (unsigned)((total - free) * 100 / total) : 0;
}

DBG_CMD(do_groups)
{
	struct dbg *d = dbg_of(info);
	struct e3_group_info gi;
	blk64_t fb = 0, largest = 0, total = 0;
	uint64_t fi = 0, dirs = 0;
	errcode_t err;

	(void)argv;
	if (dbg_args(d, argc, 1, 1, "groups") || dbg_need_bitmaps(d))
		return;
	fprintf(d->out, "%6s %12s %10s %10s %6s %13s %6s\n", "GROUP", "FIRST",
		"FREE_BLKS", "FREE_INOS", "DIRS", "LARGEST_FREE", "USED%");
	for (dgrp_t g = 0; g < d->fs->group_desc_count; g++) {
		if ((err = e3_group_info(d->fs, g, &gi))) {
			dbg_fail(d, err, "group %u", g);
			return;
		}
		fprintf(d->out, "%6u %12llu %10llu %10u %6u %13llu %5u%%\n", g,
			(unsigned long long)gi.first,
			(unsigned long long)gi.free_blocks, gi.free_inodes,
			gi.dirs, (unsigned long long)gi.largest_free,
			used_pct(gi.free_blocks, gi.last - gi.first + 1));
		fb += gi.free_blocks;
		fi += gi.free_inodes;
		dirs += gi.dirs;
		total += gi.last - gi.first + 1;
		if (gi.largest_free > largest)
			largest = gi.largest_free;
	}
	fprintf(d->out, "total: %u groups, %llu free blocks, %llu free inodes, "
		"%llu directories, largest free extent %llu, %u%% used\n",
		d->fs->group_desc_count, (unsigned long long)fb,
		(unsigned long long)fi, (unsigned long long)dirs,
		(unsigned long long)largest, used_pct(fb, total));
}

struct freemap_sum {
	FILE *out;
	blk64_t extents, blocks, largest;
};

static int print_extent(blk64_t start, blk64_t len, void *priv)
{
	struct freemap_sum *s = priv;

	fprintf(s->out, "%12llu %10llu\n", (unsigned long long)start,
		(unsigned long long)len);
	s->extents++;
	s->blocks += len;
	if (len > s->largest)
		s->largest = len;
	return 0;
}

DBG_CMD(do_freemap)
{
	struct dbg *d = dbg_of(info);
	struct freemap_sum s = { d->out, 0, 0, 0 };
	unsigned long long g = 0;
	dgrp_t from = 0, to;
	errcode_t err;

	if (dbg_args(d, argc, 1, 2, "freemap [GROUP]") || dbg_need_bitmaps(d))
		return;
	to = d->fs->group_desc_count - 1;
	if (argc == 2) {
		if (dbg_number(d, argv[1], "group", &g))
			return;
		if (g >= d->fs->group_desc_count) {
			dbg_fail(d, 0, "group %llu: only %u groups", g,
				 d->fs->group_desc_count);
			return;
		}
		from = to = (dgrp_t)g;
	}
	fprintf(d->out, "%12s %10s\n", "START", "LENGTH");
	for (dgrp_t i = from; i <= to; i++) {
		if (from != to)
			fprintf(d->out, "group %u:\n", i);
		if ((err = e3_group_free_extents(d->fs, i, print_extent, &s))) {
			dbg_fail(d, err, "group %u", i);
			return;
		}
	}
	fprintf(d->out, "%llu free extents, %llu free blocks, largest %llu\n",
		(unsigned long long)s.extents, (unsigned long long)s.blocks,
		(unsigned long long)s.largest);
}

DBG_CMD(do_owner)
{
	struct dbg *d = dbg_of(info);
	blk64_t *b;
	char **text;
	unsigned long long v;
	size_t n;

	if (dbg_args(d, argc, 2, 10000, "owner BLOCK...") ||
	    dbg_need_bitmaps(d))
		return;
	n = argc - 1;
	if (!(b = calloc(n, sizeof(*b)))) {
		dbg_fail(d, ENOMEM, "owner");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (dbg_number(d, argv[i + 1], "block", &v))
			goto out;
		if (v >= ext2fs_blocks_count(d->fs->super)) {
			dbg_fail(d, EXT2_ET_BAD_BLOCK_NUM, "block %s", argv[i + 1]);
			goto out;
		}
		b[i] = v;
	}
	if (!(text = dbg_owners(d, d->fs, b, n)))
		goto out;
	for (size_t i = 0; i < n; i++)
		fprintf(d->out, "%llu: %s\n", (unsigned long long)b[i], text[i]);
	dbg_owners_free(text, n);
out:
	free(b);
}
