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

/* A block asked about and, once the inodes are walked, who maps it. */
struct want {
	blk64_t blk;
	ext2_ino_t ino;		/* 0: no inode maps it */
	e2_blkcnt_t lblk;	/* its logical number; < 0: a map block */
	int ea;			/* the inode's xattr block */
};

struct owner_walk {
	struct want *w;
	size_t n, left;
	ext2_ino_t ino;
};

static void found(struct owner_walk *o, blk64_t b, e2_blkcnt_t lblk, int ea)
{
	for (size_t i = 0; i < o->n; i++) {
		if (o->w[i].blk == b && !o->w[i].ino) {
			o->w[i] = (struct want){ b, o->ino, lblk, ea };
			o->left--;
		}
	}
}

static int owner_visit(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		       blk64_t ref_blk, int ref_offset, void *priv)
{
	struct owner_walk *o = priv;

	(void)fs; (void)ref_blk; (void)ref_offset;
	found(o, *blocknr, blockcnt, 0);
	return o->left ? 0 : BLOCK_ABORT;
}

/* One pass over the inodes for every block still unexplained. */
static errcode_t walk_inodes(ext2_filsys fs, struct owner_walk *o)
{
	ext2_inode_scan scan;
	struct ext2_inode in;
	ext2_ino_t ino;
	errcode_t err;

	if ((err = ext2fs_open_inode_scan(fs, 0, &scan)))
		return err;
	while (o->left && !(err = ext2fs_get_next_inode(scan, &ino, &in)) &&
	       ino) {
		if (!in.i_links_count && ino != fs->super->s_journal_inum &&
		    ino != EXT2_RESIZE_INO)
			continue;
		o->ino = ino;
		if (ext2fs_file_acl_block(fs, &in))
			found(o, ext2fs_file_acl_block(fs, &in), 0, 1);
		if (o->left && ext2fs_inode_has_valid_blocks2(fs, &in) &&
		    (err = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY,
						 NULL, owner_visit, o)))
			break;
	}
	ext2fs_close_inode_scan(scan);
	return err;
}

static void print_meta(struct dbg *d, const struct e3_meta_owner *m)
{
	fprintf(d->out, "%s", e3_meta_kind_name(m->kind));
	if (m->kind == E3_META_DESC || m->kind == E3_META_RESERVED_GDT)
		fprintf(d->out, " block %llu", (unsigned long long)m->index);
	if (m->kind != E3_META_BOOT)
		fprintf(d->out, " of group %u", m->group);
	if (m->kind == E3_META_INODE_TABLE)
		fprintf(d->out, " (block %llu, inodes %u-%u)",
			(unsigned long long)m->index, m->ino_first, m->ino_last);
	fputc('\n', d->out);
}

static void print_inode_owner(struct dbg *d, const struct want *w)
{
	char *name = NULL;
	static const char *const map[] = { "IND", "DIND", "TIND" };

	if (w->ino == d->fs->super->s_journal_inum)
		fprintf(d->out, "journal (inode %u", w->ino);
	else if (w->ino == EXT2_RESIZE_INO)
		fprintf(d->out, "reserved GDT map (inode %u", w->ino);
	else {
		name = dbg_path_of(d->fs, w->ino);
		fprintf(d->out, "inode %u %s (", w->ino, name ? name : "?");
		ext2fs_free_mem(&name);
	}
	if (w->ino == d->fs->super->s_journal_inum || w->ino == EXT2_RESIZE_INO)
		fputs(", ", d->out);
	if (w->ea)
		fputs("xattr block)\n", d->out);
	else if (w->lblk < 0)
		fprintf(d->out, "indirect block %s)\n",
			w->lblk >= -3 ? map[-w->lblk - 1] : "?");
	else
		fprintf(d->out, "data block, logical %lld)\n",
			(long long)w->lblk);
}

DBG_CMD(do_owner)
{
	struct dbg *d = dbg_of(info);
	struct owner_walk o = { 0 };
	struct e3_meta_owner *m;
	unsigned long long v;
	errcode_t err;

	if (dbg_args(d, argc, 2, 10000, "owner BLOCK...") ||
	    dbg_need_bitmaps(d))
		return;
	o.n = argc - 1;
	o.w = calloc(o.n, sizeof(*o.w));
	m = calloc(o.n, sizeof(*m));
	if (!o.w || !m) {
		dbg_fail(d, ENOMEM, "owner");
		goto out;
	}
	for (size_t i = 0; i < o.n; i++) {
		if (dbg_number(d, argv[i + 1], "block", &v))
			goto out;
		if ((err = e3_meta_owner(d->fs, v, &m[i]))) {
			dbg_fail(d, err, "block %s", argv[i + 1]);
			goto out;
		}
		o.w[i].blk = v;
		if (m[i].kind == E3_META_NONE &&
		    ext2fs_test_block_bitmap2(d->fs->block_map, v))
			o.left++;
		else
			o.w[i].ino = (ext2_ino_t)-1;	/* nothing to look for */
	}
	if (o.left && (err = walk_inodes(d->fs, &o))) {
		dbg_fail(d, err, "reading the inodes");
		goto out;
	}
	for (size_t i = 0; i < o.n; i++) {
		fprintf(d->out, "%llu: ", (unsigned long long)o.w[i].blk);
		if (m[i].kind != E3_META_NONE)
			print_meta(d, &m[i]);
		else if (!ext2fs_test_block_bitmap2(d->fs->block_map, o.w[i].blk))
			fputs("free\n", d->out);
		else if (o.w[i].ino && o.w[i].ino != (ext2_ino_t)-1)
			print_inode_owner(d, &o.w[i]);
		else
			fputs("in use, owned by no inode\n", d->out);
	}
out:
	free(o.w);
	free(m);
}
