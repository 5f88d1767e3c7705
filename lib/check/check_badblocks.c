/*
 * check_badblocks.c: the bad-block inode (inode 1) in pass 2, and its
 * fixes. Its block map is the list of blocks no file may use. What
 * e2fsck -fn calls an error, and so do we:
 *   - fields a list has no use for (mode, owner, links, an EA block);
 *   - a listed block outside the filesystem;
 *   - a listed block holding the primary superblock or descriptors, a
 *     bitmap or an inode table (backup superblocks and descriptors and
 *     reserved GDT blocks only draw a warning from e2fsck: not errors);
 *   - an indirect block of the list lying in group metadata.
 * Listed blocks are claimed as used, so a bitmap that shows one free, or
 * a file that owns one (a block claimed twice, found by the usual owner
 * scan), is an error too. i_blocks and i_size are not checked: e2fsck
 * does not either.
 *
 * Inode 1 is the first inode of group 0, so the worker of group 0 walks
 * it before any file: a block it meets again in its own list is a repeat
 * within the list (no error), not a second owner.
 */
#include <stdlib.h>
#include <string.h>

#include "check_walk.h"

struct bbwalk {
	struct chk_worker *w;
	unsigned reported;		/* findings made, capped */
};

#define BB_MAX_REPORTS 32

static void bb_add(struct bbwalk *bw, int code, blk64_t b, const char *what)
{
	struct e3_finding *f;

	if (bw->reported++ >= BB_MAX_REPORTS)
		return;
	f = chk_add(bw->w->ctx, &bw->w->findings, code);
	if (f) {
		f->ino = EXT2_BAD_INO;
		f->blk = b;
		if (what)
			f->name = strdup(what);
	}
}

/* What group metadata block b holds, when a list naming it is an error
 * to e2fsck; NULL for the rest. */
static const char *meta_kind(struct chk_ctx *ctx, blk64_t b)
{
	ext2_filsys fs = ctx->fs;
	blk64_t first = fs->super->s_first_data_block, it;
	dgrp_t g = (b - first) / fs->super->s_blocks_per_group;

	if (g >= fs->group_desc_count)
		return NULL;
	if (g == 0 && b == first)
		return "the primary superblock";
	if (g == 0 && b > first && b <= first + fs->desc_blocks)
		return "the primary group descriptors";
	/* a location dropped as outside its group is 0 (check_relocate.c) */
	if (b == ext2fs_block_bitmap_loc(fs, g))
		return "a block bitmap";
	if (b == ext2fs_inode_bitmap_loc(fs, g))
		return "an inode bitmap";
	it = ext2fs_inode_table_loc(fs, g);
	if (!chk_dropped(ctx, g, CHK_RELOC_IT) && b >= it &&
	    b < it + fs->inode_blocks_per_group)
		return "an inode table";
	return NULL;
}

static int bb_visit(struct chk_walk *wk, blk64_t b, e2_blkcnt_t lblk)
{
	struct bbwalk *bw = wk->arg;
	struct chk_worker *w = bw->w;
	struct chk_ctx *ctx = w->ctx;
	const char *what;

	if (chk_bit(&ctx->meta, b)) {
		if (lblk < 0) {
			bb_add(bw, E3P_BB_METADATA, b,
			       "group metadata, as an indirect block of the list");
			wk->skip_children = 1;	/* never read it as pointers */
		} else if ((what = meta_kind(ctx, b))) {
			bb_add(bw, E3P_BB_METADATA, b, what);
		}
		return 0;
	}
	chk_set(&w->used, b);
	ctx->ist[EXT2_BAD_INO] |= CI_HAS_BLOCKS;
	return 0;
}

static void bb_illegal(struct chk_walk *wk, blk64_t b, e2_blkcnt_t lblk)
{
	(void)lblk;
	bb_add(wk->arg, E3P_BB_ILLEGAL, b, NULL);
}

/* e2fsck's test of the inode itself: the fields a list leaves zero. */
static const char *bb_fields_bad(const struct ext2_inode *in)
{
	if (in->i_mode)
		return "mode set";
	if (in->i_uid || in->i_gid || in->osd2.linux2.l_i_uid_high ||
	    in->osd2.linux2.l_i_gid_high)
		return "owner set";
	if (in->i_links_count)
		return "link count set";
	if (in->i_file_acl)
		return "extended attribute block set";
	if (in->i_flags & 0x00080000)
		return "extents flag set";
	return NULL;
}

void chk_badblocks_inode(struct chk_worker *w, const struct ext2_inode *in)
{
	struct chk_ctx *ctx = w->ctx;
	struct bbwalk bw = { w, 0 };
	struct chk_walk wk;
	const char *why = bb_fields_bad(in);
	struct e3_finding *f;

	if (why && (f = chk_add(ctx, &w->findings, E3P_BB_INODE_INVALID))) {
		f->ino = EXT2_BAD_INO;
		f->name = strdup(why);
	}
	memset(&wk, 0, sizeof(wk));
	wk.fd = w->fd;
	wk.bs = ctx->bs;
	wk.first_data = ctx->fs->super->s_first_data_block;
	wk.nblocks = ctx->nblocks;
	wk.buf[0] = w->bbuf[0];
	wk.buf[1] = w->bbuf[1];
	wk.buf[2] = w->bbuf[2];
	wk.visit = bb_visit;
	wk.on_illegal = bb_illegal;
	wk.arg = &bw;
	/* the list, whatever the mode says (e2fsck iterates it regardless);
	 * past e2fsck's limit of illegal blocks the walk stops, reported */
	chk_walk_blocks(&wk, in);
}

/* ---- fixes (from check_fix.c, -y) ---- */

struct bbfix {
	struct chk_ctx *ctx;
	const blk64_t *drop;		/* blocks to take off the list */
	size_t ndrop;
};

static int bb_fix_cb(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t cnt,
		     blk64_t ref_blk, int ref_off, void *priv)
{
	struct bbfix *bf = priv;
	blk64_t b = *blocknr;
	size_t i;

	(void)ref_blk;
	(void)ref_off;
	if (b < fs->super->s_first_data_block ||
	    b >= ext2fs_blocks_count(fs->super) ||
	    (cnt < 0 && chk_bit(&bf->ctx->meta, b))) {
		*blocknr = 0;
		return BLOCK_CHANGED;
	}
	for (i = 0; i < bf->ndrop; i++)
		if (bf->drop[i] == b) {
			*blocknr = 0;
			return BLOCK_CHANGED;
		}
	return 0;
}

/* Every bad-block finding at once: an invalid inode is zeroed (as
 * e2fsck does, list and all); otherwise the illegal blocks and those in
 * metadata are dropped from the list (e2fsck would move the metadata
 * off the block instead; the metadata has been in use there all along,
 * so taking the block off the list leaves a consistent filesystem). The
 * next round's bitmaps give the dropped blocks back. Returns the number
 * of findings fixed. */
unsigned chk_fix_badblocks(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	struct bbfix bf = { ctx, NULL, 0 };
	blk64_t *drop;
	int invalid = 0, any = 0;
	unsigned fixed = 0;
	size_t i;

	for (i = 0; i < rep->n_findings; i++) {
		int c = rep->findings[i].code;

		if (rep->findings[i].fixed || !chk_may_fix(ctx, c))
			continue;
		if (c == E3P_BB_INODE_INVALID)
			invalid = 1;
		if (c == E3P_BB_INODE_INVALID || c == E3P_BB_ILLEGAL ||
		    c == E3P_BB_METADATA)
			any = 1;
	}
	if (!any)
		return 0;
	drop = malloc(sizeof(*drop) * rep->n_findings);
	if (!drop)
		return 0;
	for (i = 0; i < rep->n_findings; i++)
		if (rep->findings[i].code == E3P_BB_METADATA)
			drop[bf.ndrop++] = rep->findings[i].blk;
	bf.drop = drop;
	if (invalid) {
		struct ext2_inode in;

		memset(&in, 0, sizeof(in));
		if (ext2fs_write_inode(ctx->fs, EXT2_BAD_INO, &in))
			goto out;
	} else if (ext2fs_block_iterate3(ctx->fs, EXT2_BAD_INO, 0, NULL,
					 bb_fix_cb, &bf)) {
		goto out;
	}
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (f->fixed || (f->code != E3P_BB_INODE_INVALID &&
				 f->code != E3P_BB_ILLEGAL &&
				 f->code != E3P_BB_METADATA))
			continue;
		f->fixed = 1;
		fixed++;
	}
out:
	free(drop);
	return fixed;
}
