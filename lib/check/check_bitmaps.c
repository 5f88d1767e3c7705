/*
 * check_bitmaps.c: pass 6 — the on-disk block and inode bitmaps against
 * the use computed by passes 2-3, then each group's free-block, free-inode
 * and directory counts and the superblock totals. Differences are
 * reported as runs, as e2fsck prints them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

struct run {
	int code;		/* current run's problem, 0 = none */
	uint64_t start, end;
};

static void flush_run(struct chk_ctx *ctx, struct run *r, int inodes)
{
	struct e3_finding *f;

	if (!r->code)
		return;
	if ((f = chk_add(ctx, NULL, r->code))) {
		if (inodes) {
			f->ino = r->start;
			f->ino2 = r->end;
		} else {
			f->blk = r->start;
			f->blk2 = r->end;
		}
	}
	r->code = 0;
}

static void note(struct chk_ctx *ctx, struct run *r, int code, uint64_t i,
		 int inodes)
{
	if (r->code == code && r->end + 1 == i) {
		r->end = i;
		return;
	}
	flush_run(ctx, r, inodes);
	if (code) {
		r->code = code;
		r->start = r->end = i;
	}
}

int chk_inode_used(struct chk_ctx *ctx, ext2_ino_t ino)
{
	return ino < EXT2_FIRST_INO(ctx->fs->super) ||
	       (ctx->ist[ino] & CI_USED);
}

/* One group's on-disk block bitmap against the computed use, 64 blocks
 * at a time (the bitwise walk only where they differ). */
static void compare_group(struct chk_ctx *ctx, blk64_t start, unsigned n,
			  const unsigned char *disk, uint32_t *free_cnt,
			  struct run *r)
{
	unsigned i, k;

	for (i = 0; i < n; i += 64) {
		unsigned m = n - i < 64 ? n - i : 64;
		uint64_t mask = m == 64 ? ~0ull : ((1ull << m) - 1);
		uint64_t u = chk_bits64(&ctx->used, start + i) & mask, d = 0;

		for (k = 0; k < (m + 7) / 8; k++)
			d |= (uint64_t)disk[i / 8 + k] << (8 * k);
		d &= mask;
		*free_cnt += m - __builtin_popcountll(u);
		if (u == d) {
			note(ctx, r, 0, start + i, 0);
			continue;
		}
		for (k = 0; k < m; k++) {
			int du = (d >> k) & 1, uu = (u >> k) & 1;

			note(ctx, r, du == uu ? 0 : uu ? E3P_BMAP_BLOCK_USED :
			     E3P_BMAP_BLOCK_FREE, start + i + k, 0);
		}
	}
}

static void compare_blocks(struct chk_ctx *ctx, uint32_t *free_cnt)
{
	ext2_filsys fs = ctx->fs;
	struct run r = { 0, 0, 0 };
	unsigned bpg = fs->super->s_blocks_per_group;
	unsigned char *disk = malloc(bpg / 8 + 8);
	dgrp_t g;

	for (g = 0; g < fs->group_desc_count && disk; g++) {
		blk64_t start = ext2fs_group_first_block2(fs, g);
		unsigned n = ext2fs_group_last_block2(fs, g) - start + 1;

		free_cnt[g] = 0;
		memset(disk, 0, bpg / 8 + 8);
		ext2fs_get_block_bitmap_range2(fs->block_map, start, n, disk);
		compare_group(ctx, start, n, disk, &free_cnt[g], &r);
	}
	free(disk);
	flush_run(ctx, &r, 0);
}

static void compare_inodes(struct chk_ctx *ctx, uint32_t *free_cnt,
			   uint32_t *dirs)
{
	ext2_filsys fs = ctx->fs;
	struct run r = { 0, 0, 0 };
	unsigned ipg = fs->super->s_inodes_per_group;
	ext2_ino_t ino;
	dgrp_t g;

	unsigned char *map = malloc(ipg / 8 + 8);

	for (g = 0; g < fs->group_desc_count; g++)
		free_cnt[g] = dirs[g] = 0;
	for (ino = 1; ino <= ctx->ninodes && map; ino++) {
		unsigned idx = (ino - 1) % ipg;
		int disk, used = chk_inode_used(ctx, ino);

		if (!idx)
			ext2fs_get_inode_bitmap_range2(fs->inode_map, ino, ipg, map);
		disk = (map[idx / 8] >> (idx % 8)) & 1;
		g = (ino - 1) / ipg;
		if (!used)
			free_cnt[g]++;
		else if ((ctx->ist[ino] & (CI_USED | CI_DIR)) ==
			 (CI_USED | CI_DIR))
			dirs[g]++;
		note(ctx, &r, disk == used ? 0 : used ? E3P_BMAP_INODE_USED :
		     E3P_BMAP_INODE_FREE, ino, 1);
	}
	free(map);
	flush_run(ctx, &r, 1);
}

static void count(struct chk_ctx *ctx, int code, dgrp_t g, uint64_t have,
		  uint64_t want)
{
	struct e3_finding *f;

	if (have == want || !(f = chk_add(ctx, NULL, code)))
		return;
	f->group = g;
	f->num = have;
	f->num2 = want;
}

/* Bits of a bitmap block past its group (and past the end of the
 * filesystem) must be set. libext2fs notes unset ones while reading the
 * bitmaps (the flags e2fsck's pass 5 reports from); writing them back
 * sets them. */
static void check_padding(struct chk_ctx *ctx)
{
	struct e3_finding *f;

	if ((ctx->fs->flags & EXT2_FLAG_BBITMAP_TAIL_PROBLEM) &&
	    (f = chk_add(ctx, NULL, E3P_BMAP_PADDING)))
		f->name = strdup("block");
	if ((ctx->fs->flags & EXT2_FLAG_IBITMAP_TAIL_PROBLEM) &&
	    (f = chk_add(ctx, NULL, E3P_BMAP_PADDING)))
		f->name = strdup("inode");
}

errcode_t chk_pass_bitmaps(struct chk_ctx *ctx)
{
	ext2_filsys fs = ctx->fs;
	dgrp_t g, ng = fs->group_desc_count;
	uint32_t *bfree, *ifree, *dirs;
	uint64_t tb = 0, ti = 0;
	errcode_t err;

	chk_progress(ctx, 6, 0, 1);
	if (!fs->block_map || !fs->inode_map) {
		err = ext2fs_read_bitmaps(fs);
		if (err)
			return err;
	}
	bfree = calloc(ng, sizeof(*bfree));
	ifree = calloc(ng, sizeof(*ifree));
	dirs = calloc(ng, sizeof(*dirs));
	if (!bfree || !ifree || !dirs) {
		free(bfree);
		free(ifree);
		free(dirs);
		return ENOMEM;
	}
	compare_blocks(ctx, bfree);
	check_padding(ctx);
	compare_inodes(ctx, ifree, dirs);
	for (g = 0; g < ng; g++) {
		count(ctx, E3P_BMAP_GROUP_FREE_BLOCKS, g,
		      ext2fs_bg_free_blocks_count(fs, g), bfree[g]);
		count(ctx, E3P_BMAP_GROUP_FREE_INODES, g,
		      ext2fs_bg_free_inodes_count(fs, g), ifree[g]);
		count(ctx, E3P_BMAP_GROUP_DIRS, g,
		      ext2fs_bg_used_dirs_count(fs, g), dirs[g]);
		tb += bfree[g];
		ti += ifree[g];
	}
	count(ctx, E3P_SB_FREE_BLOCKS, 0, ext2fs_free_blocks_count(fs->super), tb);
	count(ctx, E3P_SB_FREE_INODES, 0, fs->super->s_free_inodes_count, ti);
	ctx->computed_free_blocks = tb;
	ctx->computed_free_inodes = ti;
	free(bfree);
	free(ifree);
	free(dirs);
	chk_progress(ctx, 6, 1, 1);
	return 0;
}
