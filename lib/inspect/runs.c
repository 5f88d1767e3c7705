/*
 * runs.c: a file's runs, groups crossed and e2fsck's fragmented flag,
 * fed block by block in e2fsck's order (see e3_inspect.h). The checker
 * feeds it from its own walk, which also judges the blocks; tools that
 * only want the figures use e3_runs_of_inode.
 */
#include <string.h>

#include "e3_inspect.h"

void e3_runs_init(struct e3_runs *r, const struct ext2_super_block *sb)
{
	memset(r, 0, sizeof(*r));
	r->first_data_block = sb->s_first_data_block;
	r->blocks_per_group = sb->s_blocks_per_group;
}

void e3_runs_step(struct e3_runs *r, blk64_t b)
{
	if (r->prev && r->prev + 1 != b)
		r->fragmented = 1;
}

static void note_group(struct e3_runs *r, blk64_t b)
{
	dgrp_t g = (dgrp_t)((b - r->first_data_block) / r->blocks_per_group);
	unsigned i;

	if (r->groups && g == r->lastg)
		return;
	r->lastg = g;
	for (i = 0; i < r->nseen; i++)
		if (r->seen[i] == g)
			return;
	if (r->nseen < E3_RUNS_GROUPS_SEEN)
		r->seen[r->nseen++] = g;
	r->groups++;
}

void e3_runs_add(struct e3_runs *r, blk64_t b)
{
	if (!r->nblocks || b != r->prev + 1)
		r->runs++;
	note_group(r, b);
	r->prev = b;
	r->nblocks++;
}

void e3_runs_figures(const struct e3_runs *r, struct e3_layout_file *lf)
{
	lf->blocks = r->nblocks;
	lf->runs = r->runs;
	lf->groups = r->groups ? r->groups : 1;
	lf->excess = lf->runs > lf->groups ? lf->runs - lf->groups : 0;
}

struct walk {
	ext2_filsys fs;
	struct e3_runs *r;
};

static int visit(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		 blk64_t ref_blk, int ref_offset, void *priv)
{
	struct walk *w = priv;
	blk64_t b = *blocknr;

	(void)fs; (void)ref_blk; (void)ref_offset;
	(void)blockcnt;
	e3_runs_step(w->r, b);
	if (b >= w->fs->super->s_first_data_block &&
	    b < ext2fs_blocks_count(w->fs->super))
		e3_runs_add(w->r, b);
	return 0;
}

errcode_t e3_runs_of_inode(ext2_filsys fs, ext2_ino_t ino,
			   struct ext2_inode *inode, struct e3_runs *r)
{
	struct ext2_inode in;
	struct walk w = { fs, r };
	errcode_t err;

	e3_runs_init(r, fs->super);
	if (!inode) {
		err = ext2fs_read_inode(fs, ino, &in);
		if (err)
			return err;
		inode = &in;
	}
	if (!ext2fs_inode_has_valid_blocks2(fs, inode))
		return 0;
	if (inode->i_flags & EXT4_EXTENTS_FL)
		return EXT2_ET_INODE_NOT_EXTENT;	/* ext3 has none */
	err = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY, NULL,
				    visit, &w);
	return err;
}
