/*
 * check_relocate.c: group bitmaps and inode tables in bad locations —
 * outside their group, or on blocks other group metadata holds — and
 * their -y repair, which gives them a new place inside the group.
 *
 * What e2fsck 1.47 does, and so what we do (learned by running it on
 * images damaged with debugfs set_bg, primary and backup descriptors
 * alike; where a backup's descriptors are sound both checkers use them
 * instead, check_super.c):
 *   - a location outside the group cannot be read as what it claims to
 *     be: it is dropped (0 in memory) before any pass runs, so the inode
 *     scan sees that group's inodes as unused and the bitmap pass reads
 *     zeros. The repair writes a zeroed block (a bitmap: pass 6 of the
 *     next round rebuilds it) or a zeroed inode table: the group's inodes
 *     are lost, as e2fsck loses them ("SEVERE DATA LOSS POSSIBLE"); the
 *     next round clears the entries that named them and frees their
 *     blocks;
 *   - a location inside the group on blocks that other metadata holds is
 *     read as it is (its garbage inodes are found by pass 2); the repair
 *     moves it: a bitmap to a zeroed block, an inode table to new blocks
 *     holding a copy of the old ones, which the next round checks.
 * Metadata is claimed in e2fsck's order (superblocks and descriptors of
 * every group, then per group the inode table, the block bitmap, the
 * inode bitmap), so the same one of two overlapping pieces is moved.
 * New places are the first free blocks of the group (free: no file
 * claims them and no metadata sits there); ext3 has no flex_bg, so a
 * group without room keeps its finding, and then the round writes
 * nothing at all (its other fixes assumed the move).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static blk64_t get_loc(ext2_filsys fs, dgrp_t g, int what)
{
	switch (what) {
	case CHK_RELOC_BB: return ext2fs_block_bitmap_loc(fs, g);
	case CHK_RELOC_IB: return ext2fs_inode_bitmap_loc(fs, g);
	default: return ext2fs_inode_table_loc(fs, g);
	}
}

static void set_loc(ext2_filsys fs, dgrp_t g, int what, blk64_t b)
{
	switch (what) {
	case CHK_RELOC_BB: ext2fs_block_bitmap_loc_set(fs, g, b); break;
	case CHK_RELOC_IB: ext2fs_inode_bitmap_loc_set(fs, g, b); break;
	default: ext2fs_inode_table_loc_set(fs, g, b);
	}
}

static const char *what_name(int what)
{
	return what == CHK_RELOC_BB ? "block bitmap" :
	       what == CHK_RELOC_IB ? "inode bitmap" : "inode table";
}

static int outside_code(int what)
{
	return what == CHK_RELOC_BB ? E3P_GD_BLOCK_BITMAP :
	       what == CHK_RELOC_IB ? E3P_GD_INODE_BITMAP : E3P_GD_INODE_TABLE;
}

int chk_desc_outside(ext2_filsys fs, dgrp_t g, int what)
{
	blk64_t first = ext2fs_group_first_block2(fs, g);
	blk64_t last = ext2fs_group_last_block2(fs, g);
	blk64_t b = get_loc(fs, g, what);
	blk64_t n = what == CHK_RELOC_IT ? fs->inode_blocks_per_group : 1;

	return b < first || b > last || b + n - 1 > last;
}

int chk_dropped(const struct chk_ctx *ctx, dgrp_t g, int what)
{
	return ctx->dropped && (ctx->dropped[g] >> what) & 1;
}

errcode_t chk_drop_outside(struct chk_ctx *ctx)
{
	ext2_filsys fs = ctx->fs;
	struct e3_finding *f;
	dgrp_t g;
	int what;

	free(ctx->dropped);
	ctx->dropped = calloc(fs->group_desc_count, 1);
	if (!ctx->dropped)
		return ENOMEM;
	for (g = 0; g < fs->group_desc_count; g++) {
		for (what = CHK_RELOC_BB; what <= CHK_RELOC_IT; what++) {
			if (!chk_desc_outside(fs, g, what))
				continue;
			f = chk_add(ctx, NULL, outside_code(what));
			if (!f)
				return ENOMEM;
			f->group = g;
			f->blk = get_loc(fs, g, what);
			f->num = what;
			/* never read: the passes see "no such block" */
			set_loc(fs, g, what, 0);
			ctx->dropped[g] |= 1 << what;
		}
	}
	return 0;
}

void chk_meta_conflict(struct chk_ctx *ctx, dgrp_t g, int what, blk64_t b)
{
	struct e3_finding *f = chk_add(ctx, NULL, E3P_GD_OVERLAP);

	if (!f)
		return;
	f->group = g;
	f->blk = b;
	f->blk2 = get_loc(ctx->fs, g, what);
	f->num = what;
	f->name = strdup(what_name(what));
}

/* The first n blocks in a row of group g that nothing uses: no file (as
 * this round's passes computed) and no metadata. 0 if none. */
static blk64_t find_room(struct chk_ctx *ctx, dgrp_t g, blk64_t n)
{
	blk64_t b = ext2fs_group_first_block2(ctx->fs, g);
	blk64_t last = ext2fs_group_last_block2(ctx->fs, g), run = 0;

	for (; b <= last; b++) {
		if (chk_bit(&ctx->used, b) || chk_bit(&ctx->meta, b))
			run = 0;
		else if (++run == n)
			return b - n + 1;
	}
	return 0;
}

/* Writes the piece's new blocks: a copy of the old ones when they could
 * be read (an inode table that overlapped), else zeros. */
static errcode_t fill(struct chk_ctx *ctx, blk64_t old, blk64_t nb,
		      blk64_t n, int copy)
{
	unsigned char *buf = calloc(1, ctx->bs);
	errcode_t err = buf ? 0 : ENOMEM;
	blk64_t i;

	for (i = 0; i < n && !err; i++) {
		if (copy) {
			memset(buf, 0, ctx->bs);
			if (old + i < ctx->nblocks &&
			    io_channel_read_blk64(ctx->fs->io, old + i, 1, buf))
				memset(buf, 0, ctx->bs);
		}
		err = io_channel_write_blk64(ctx->fs->io, nb + i, 1, buf);
	}
	free(buf);
	return err;
}

static int reloc_code(int code)
{
	return code == E3P_GD_BLOCK_BITMAP || code == E3P_GD_INODE_BITMAP ||
	       code == E3P_GD_INODE_TABLE || code == E3P_GD_OVERLAP;
}

int chk_relocate(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	ext2_filsys fs = ctx->fs;
	size_t i;
	int failed = 0, pass;

	/* the block bitmaps, then the inode bitmaps, then the tables, as
	 * e2fsck places them (first free blocks of the group) */
	for (pass = CHK_RELOC_BB; pass <= CHK_RELOC_IT; pass++)
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];
		int what = (int)f->num, moved = f->code == E3P_GD_OVERLAP;
		blk64_t n = what == CHK_RELOC_IT ? fs->inode_blocks_per_group : 1;
		blk64_t nb, b;

		/* a superblock copy or descriptors (what < 0) sit where the
		 * geometry puts them: nothing to move */
		if (f->fixed || !reloc_code(f->code) || what != pass ||
		    !chk_may_fix(ctx, f->code))
			continue;
		nb = find_room(ctx, f->group, n);
		/* an overlapping inode table is copied; one outside its
		 * group was never read (its inodes are lost, as in e2fsck) */
		if (!nb || fill(ctx, moved ? f->blk2 : f->blk, nb, n,
				moved && what == CHK_RELOC_IT)) {
			failed = 1;
			continue;
		}
		for (b = nb; b < nb + n; b++)
			chk_set(&ctx->meta, b);
		set_loc(fs, f->group, what, nb);
		ext2fs_group_desc_csum_set(fs, f->group);
		ext2fs_mark_super_dirty(fs);
		f->num2 = nb;
		f->fixed = 1;
		ctx->changed++;
	}
	return failed;
}

void chk_relocate_undo(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	size_t i;

	/* the dropped locations go back as they were found, so that a
	 * round which writes nothing leaves the descriptors untouched */
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (!f->fixed && reloc_code(f->code) && f->code != E3P_GD_OVERLAP)
			set_loc(ctx->fs, f->group, (int)f->num, f->blk);
	}
}
