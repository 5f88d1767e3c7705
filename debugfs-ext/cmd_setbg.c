/*
 * cmd_setbg.c: set_bg GROUP FIELD VALUE — one field of an ext3 group
 * descriptor, by debugfs' names (block_bitmap, inode_bitmap,
 * inode_table, free_blocks_count, free_inodes_count, used_dirs_count,
 * flags, itable_unused, checksum), written as given through the journal
 * (e3_group_desc_write). As debugfs: any value is taken, so set_bg can
 * make the filesystem inconsistent on purpose (e3fsck finds it); the
 * descriptor's checksum is recomputed after any other field where the
 * filesystem keeps one, and "checksum calc" recomputes it alone.
 */
#include <stddef.h>
#include <string.h>

#include "dbg.h"

struct bgfield {
	const char *name;
	size_t off, size;
};

#define BF(n, m) { n, offsetof(struct ext2_group_desc, m), \
		   sizeof(((struct ext2_group_desc *)0)->m) }

static const struct bgfield bgfields[] = {
	BF("block_bitmap", bg_block_bitmap),
	BF("inode_bitmap", bg_inode_bitmap),
	BF("inode_table", bg_inode_table),
	BF("free_blocks_count", bg_free_blocks_count),
	BF("free_inodes_count", bg_free_inodes_count),
	BF("used_dirs_count", bg_used_dirs_count),
	BF("flags", bg_flags),
	BF("itable_unused", bg_itable_unused),
	BF("checksum", bg_checksum),
};

#define NFIELDS (sizeof(bgfields) / sizeof(*bgfields))

static void list_fields(struct dbg *d)
{
	fputs("set_bg fields:\n", d->out);
	for (size_t i = 0; i < NFIELDS; i++)
		fprintf(d->out, "\t%s\t%s\n", bgfields[i].name,
			bgfields[i].size == 2 ? "unsigned 16-bit" :
			"unsigned 32-bit");
}

DBG_CMD(do_set_bg)
{
	struct dbg *d = dbg_of(info);
	const struct bgfield *f = NULL;
	struct ext2_group_desc gd;
	unsigned char *base = (unsigned char *)&gd;
	unsigned long long g, v = 0;
	int calc = 0;
	errcode_t err;

	if (argc == 2 && !strcmp(argv[1], "-l")) {
		list_fields(d);
		return;
	}
	if (dbg_args(d, argc, 4, 4, "set_bg GROUP FIELD VALUE | set_bg -l") ||
	    dbg_need_rw(d))
		return;
	if (dbg_number(d, argv[1], "group", &g))
		return;
	if (g >= d->fs->group_desc_count) {
		dbg_fail(d, 0, "group %s: only %u groups", argv[1],
			 d->fs->group_desc_count);
		return;
	}
	for (size_t i = 0; i < NFIELDS; i++)
		if (!strcmp(argv[2], bgfields[i].name) ||
		    (!strncmp(argv[2], "bg_", 3) &&
		     !strcmp(argv[2] + 3, bgfields[i].name)))
			f = &bgfields[i];
	if (!f) {
		dbg_fail(d, 0, "%s: not a group descriptor field of ext3 "
			 "(set_bg -l lists them)", argv[2]);
		return;
	}
	memcpy(&gd, ext2fs_group_desc(d->fs, d->fs->group_desc, (dgrp_t)g),
	       sizeof(gd));
	if (!strcmp(f->name, "checksum") && !strcmp(argv[3], "calc")) {
		calc = 1;
	} else {
		if (dbg_number(d, argv[3], f->name, &v))
			return;
		if (v >> (8 * f->size)) {
			dbg_fail(d, 0, "%s: value out of range: %s", f->name,
				 argv[3]);
			return;
		}
		if (f->size == 2) {
			uint16_t x = (uint16_t)v;
			memcpy(base + f->off, &x, 2);
		} else {
			uint32_t x = (uint32_t)v;
			memcpy(base + f->off, &x, 4);
		}
	}
	err = e3_group_desc_write(d->img, (dgrp_t)g, &gd,
				  calc || strcmp(f->name, "checksum"));
	if (err)
		dbg_fail(d, err, "group %llu %s", g, f->name);
	else
		d->changed = 1;
}
