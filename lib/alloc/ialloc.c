/*
 * ialloc.c: choosing a new inode's group the way ext3 does (ialloc.c;
 * ext3-facts.md §2.3) — Orlov for directories, so top-level directories
 * spread over the disk and deeper ones stay near their parent; other files
 * in their parent's group. libext2fs' ext2fs_new_inode does none of this.
 * ext3 starts the top-level search at a random group; we start at
 * (directories so far) mod groups instead, so that the same sequence of
 * calls gives the same image. Caller holds fs_lock.
 */
#include <errno.h>

#include "alloc_int.h"

struct grp_view {
	ext2_filsys fs;
	dgrp_t n;
	uint64_t free_inodes, free_blocks, dirs;	/* totals */
};

/* libext2fs' count, not the allocator's (which includes blocks workers
 * have claimed for open files): in a reproducible load libext2fs' counts
 * change only on the creating thread, in order (closes, directory and
 * symlink blocks), so the group an inode goes to does not depend on how
 * far the workers have got. With claims counted, a group's blocks all
 * claimed a moment earlier or later sent an inode elsewhere (seen on the
 * real corpus: different images at -j1, -j2, -j8). */
static uint64_t g_free_blocks(const struct grp_view *v, dgrp_t g)
{
	return ext2fs_bg_free_blocks_count(v->fs, g);
}

static uint64_t g_free_inodes(const struct grp_view *v, dgrp_t g)
{
	return ext2fs_bg_free_inodes_count(v->fs, g);
}

/* The totals are Orlov's (directories); a file's search needs none. */
static void view_init(struct grp_view *v, ext2_filsys fs, int totals)
{
	v->fs = fs;
	v->n = fs->group_desc_count;
	v->free_inodes = v->free_blocks = v->dirs = 0;
	for (dgrp_t g = 0; totals && g < v->n; g++) {
		v->free_inodes += g_free_inodes(v, g);
		v->free_blocks += g_free_blocks(v, g);
		v->dirs += ext2fs_bg_used_dirs_count(v->fs, g);
	}
}

/* Top-level directory: the group with the fewest directories among those
 * with at least average free inodes and free blocks. */
static long orlov_top(const struct grp_view *v)
{
	uint64_t avei = v->free_inodes / v->n, aveb = v->free_blocks / v->n;
	dgrp_t start = (dgrp_t)(v->dirs % v->n);
	long best = -1;
	uint64_t best_dirs = UINT64_MAX;

	for (dgrp_t i = 0; i < v->n; i++) {
		dgrp_t g = (start + i) % v->n;
		uint64_t d = ext2fs_bg_used_dirs_count(v->fs, g);

		if (d >= best_dirs || g_free_inodes(v, g) == 0 ||
		    g_free_inodes(v, g) < avei || g_free_blocks(v, g) < aveb)
			continue;
		best = g;
		best_dirs = d;
	}
	return best;
}

/* Deeper directory: the first group from the parent's that is not crowded
 * with directories and not short of inodes or blocks. */
static long orlov_near(const struct grp_view *v, dgrp_t pg)
{
	uint64_t ipg = v->fs->super->s_inodes_per_group;
	uint64_t bpg = v->fs->super->s_blocks_per_group;
	uint64_t avei = v->free_inodes / v->n, aveb = v->free_blocks / v->n;
	uint64_t max_dirs = v->dirs / v->n + ipg / 16;
	uint64_t min_i = avei > ipg / 4 ? avei - ipg / 4 : 1;
	uint64_t min_b = aveb > bpg / 4 ? aveb - bpg / 4 : 1;

	for (dgrp_t i = 0; i < v->n; i++) {
		dgrp_t g = (pg + i) % v->n;

		if (ext2fs_bg_used_dirs_count(v->fs, g) < max_dirs &&
		    g_free_inodes(v, g) >= min_i && g_free_blocks(v, g) >= min_b)
			return g;
	}
	return -1;
}

/* Orlov's fallback: from the parent's group, at least average free
 * inodes; then any free inode. */
static long orlov_fallback(const struct grp_view *v, dgrp_t pg)
{
	uint64_t avei = v->free_inodes / v->n;

	for (int pass = 0; pass < 2; pass++, avei = 0)
		for (dgrp_t i = 0; i < v->n; i++) {
			dgrp_t g = (pg + i) % v->n;

			if (g_free_inodes(v, g) && g_free_inodes(v, g) >= avei)
				return g;
		}
	return -1;
}

/* Files: the parent's group, then quadratic probing, then linear. */
static long find_group_other(const struct grp_view *v, dgrp_t pg,
			     ext2_ino_t parent)
{
	dgrp_t g = pg;

	if (g_free_inodes(v, g) && g_free_blocks(v, g))
		return g;
	g = (dgrp_t)((pg + parent) % v->n);
	for (dgrp_t i = 1; i < v->n; i <<= 1) {
		g = (g + i) % v->n;
		if (g_free_inodes(v, g) && g_free_blocks(v, g))
			return g;
	}
	for (dgrp_t i = 1; i <= v->n; i++) {
		g = (pg + i) % v->n;
		if (g_free_inodes(v, g))
			return g;
	}
	return -1;
}

errcode_t e3_ialloc(ext2_filsys fs, ext2_ino_t parent, int is_dir,
		    ext2_ino_t *ino)
{
	uint64_t ipg = fs->super->s_inodes_per_group;
	struct e3_alloc *a = alloc_of(fs);
	struct grp_view v;
	dgrp_t pg;
	long g;
	errcode_t err;

	if (!fs->inode_map) {
		err = ext2fs_read_inode_bitmap(fs);
		if (err)
			return err;
	}
	view_init(&v, fs, is_dir);
	pg = (parent >= 1 && parent <= fs->super->s_inodes_count) ?
		(dgrp_t)((parent - 1) / ipg) : 0;
	if (!is_dir)
		g = find_group_other(&v, pg, parent);
	else if (parent == EXT2_ROOT_INO)
		g = orlov_top(&v);
	else
		g = orlov_near(&v, pg);
	if (g < 0 && is_dir)
		g = orlov_fallback(&v, pg);
	if (g < 0)
		return E3_NO_INODES;
	/* First free inode of the chosen group; the next groups if that one
	 * turns out full (its counter can lag behind the bitmap). The search
	 * starts at the group's floor (struct e3_alloc): a load fills a
	 * group from its front, and searching from the group's first inode
	 * stepped over every inode made so far for each one made (5% of a
	 * copy-in's instructions in user space). The inode found is the one
	 * a search from the group's start finds. */
	for (dgrp_t i = 0; i < v.n; i++) {
		dgrp_t gg = (dgrp_t)((g + i) % v.n);
		ext2_ino_t s = (ext2_ino_t)(gg * ipg + 1);
		ext2_ino_t e = (ext2_ino_t)((gg + 1) * ipg), found;

		if (s < EXT2_FIRST_INO(fs->super))
			s = EXT2_FIRST_INO(fs->super);
		if (a && a->ifloor[gg] > s)
			s = a->ifloor[gg];
		if (s > e)
			continue;
		err = ext2fs_find_first_zero_inode_bitmap2(fs->inode_map, s, e,
							   &found);
		if (err == ENOENT) {
			if (a)
				a->ifloor[gg] = e + 1;
			continue;
		}
		if (err)
			return err;
		ext2fs_inode_alloc_stats2(fs, found, +1, is_dir ? 1 : 0);
		if (a)
			a->ifloor[gg] = found + 1;
		*ino = found;
		return 0;
	}
	return E3_NO_INODES;
}

void e3_ifree_ino(ext2_filsys fs, ext2_ino_t ino, int is_dir)
{
	struct e3_alloc *a = alloc_of(fs);
	dgrp_t g = (dgrp_t)((ino - 1) / fs->super->s_inodes_per_group);

	ext2fs_inode_alloc_stats2(fs, ino, -1, is_dir);
	if (a && g < a->ngroups && a->ifloor[g] > ino)
		a->ifloor[g] = ino;
}
