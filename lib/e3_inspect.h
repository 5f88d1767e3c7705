/*
 * e3_inspect.h: public API of the inspection layer (lib/inspect/) — the
 * layout figures that e3fsck --layout, e3defrag and e3debugfs share, so
 * that all three count a file's runs and the free space the same way.
 *
 * A run is a stretch of physically consecutive blocks in e2fsck's block
 * order: ext2fs_block_iterate3's order without BLOCK_FLAG_DEPTH_TRAVERSE,
 * an indirect block before the blocks it maps, holes skipped. A file that
 * touches G block groups needs at least G runs; runs beyond that are
 * excess. "Fragmented" is e2fsck's own rule (a block that does not follow
 * the previous one), which also counts blocks the runs leave out.
 */
#ifndef E3_INSPECT_H
#define E3_INSPECT_H

#include <stdint.h>
#include <stdio.h>
#include <ext2fs/ext2fs.h>
#include "e3_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Distinct block groups remembered per file; a file crossing more is
 * still counted, but may count a group it comes back to twice. */
#define E3_RUNS_GROUPS_SEEN 64

/* One file's walk: feed every block in e2fsck's order. */
struct e3_runs {
	blk64_t first_data_block, blocks_per_group;	/* geometry */
	blk64_t prev;			/* last block counted; 0: none yet */
	uint64_t nblocks;		/* blocks counted */
	uint32_t runs;			/* physically contiguous runs */
	uint32_t groups;		/* block groups touched */
	int fragmented;			/* e2fsck's "non-contiguous" */
	dgrp_t seen[E3_RUNS_GROUPS_SEEN];
	unsigned nseen;
	dgrp_t lastg;
};

void e3_runs_init(struct e3_runs *r, const struct ext2_super_block *sb);
/* e2fsck's previous_block test for a block met in the walk, counted or
 * not (an illegal block, a metadata block not followed as a map). */
void e3_runs_step(struct e3_runs *r, blk64_t b);
/* Counts b as the file's next block (call e3_runs_step first). */
void e3_runs_add(struct e3_runs *r, blk64_t b);
/* The per-file figures (ino and path left to the caller). */
void e3_runs_figures(const struct e3_runs *r, struct e3_layout_file *lf);

/* Walks ino's block map (block-mapped files; directories and symlinks
 * with blocks too) read-only in e2fsck's order into r. Data blocks outside
 * the filesystem are stepped over, not counted; an indirect block outside
 * it ends the walk with EXT2_ET_BAD_IND_BLOCK (the map is damaged: ask
 * e3fsck). inode may be NULL (then it is read). */
errcode_t e3_runs_of_inode(ext2_filsys fs, ext2_ino_t ino,
			   struct ext2_inode *inode, struct e3_runs *r);

/* Free-space figures (the free_* and hist_* fields of struct e3_layout),
 * like e2freefrag. Adds one free extent of len blocks. */
void e3_free_extent_add(struct e3_layout *lay, blk64_t len);
/* Zeroes the free-space figures and fills them from fs->block_map (read
 * first if need be). */
errcode_t e3_free_scan(ext2_filsys fs, struct e3_layout *lay);

/* ---- block groups and free extents (groups.c) ---------------------- */

/* Called for each free extent found; non-zero stops the scan. */
typedef int (*e3_free_extent_fn)(blk64_t start, blk64_t len, void *priv);

/* The free extents of blocks [first, last] from fs->block_map (read first
 * if need be), in order, clipped to the range. */
errcode_t e3_free_extents(ext2_filsys fs, blk64_t first, blk64_t last,
			  e3_free_extent_fn fn, void *priv);
/* Those of group g (dumpe2fs' "Free blocks:" list of the group). */
errcode_t e3_group_free_extents(ext2_filsys fs, dgrp_t g,
				e3_free_extent_fn fn, void *priv);

struct e3_group_info {
	dgrp_t group;
	blk64_t first, last;		/* the group's blocks */
	blk64_t free_blocks;		/* the descriptor's counts */
	uint32_t free_inodes, dirs;
	blk64_t bitmap_free;		/* free blocks in the bitmap */
	blk64_t free_extents;		/* free extents in the bitmap */
	blk64_t largest_free;		/* the longest of them */
};

/* Group g's figures. EXT2_ET_INVALID_ARGUMENT past the last group. */
errcode_t e3_group_info(ext2_filsys fs, dgrp_t g, struct e3_group_info *gi);

/* ---- which metadata holds a block (owner.c) ------------------------- */

enum e3_meta_kind {
	E3_META_NONE = 0,	/* not group metadata: a file's or free */
	E3_META_BOOT,		/* before s_first_data_block */
	E3_META_SUPER,		/* the superblock or a backup of it */
	E3_META_DESC,		/* a group descriptor block (index: which) */
	E3_META_RESERVED_GDT,	/* reserved for online resize (index) */
	E3_META_BLOCK_BITMAP,
	E3_META_INODE_BITMAP,
	E3_META_INODE_TABLE,	/* index: block in the table; ino_first..
				   ino_last: the inodes it holds */
};

struct e3_meta_owner {
	enum e3_meta_kind kind;
	dgrp_t group;		/* the group whose structure it is */
	blk64_t index;
	ext2_ino_t ino_first, ino_last;
};

/* Classifies block b from the geometry and descriptors (no inode read).
 * EXT2_ET_BAD_BLOCK_NUM past the filesystem's end. */
errcode_t e3_meta_owner(ext2_filsys fs, blk64_t b, struct e3_meta_owner *m);
const char *e3_meta_kind_name(enum e3_meta_kind k);

/* ---- the block-map picture ------------------------------------------ */

/* What a cell of the picture shows: the class most of its blocks have. */
enum e3_map_class {
	E3_MAP_FREE = 0,
	E3_MAP_META,		/* superblocks, descriptors, bitmaps, inode
				   tables, reserved GDT (the resize inode) */
	E3_MAP_JOURNAL,
	E3_MAP_DIR,
	E3_MAP_FILE,		/* regular files without excess runs */
	E3_MAP_FRAG,		/* regular files with excess runs */
	E3_MAP_OTHER,		/* symlinks, EA blocks, other inodes' blocks */
	E3_MAP_NCLASS
};
#define E3_MAP_CELLS 256	/* cells per band */
#define E3_MAP_MAX_BANDS 256	/* more groups than this share bands */

struct e3_map_stats {
	unsigned bands;			/* rows drawn */
	uint64_t cell_blocks;		/* blocks per cell */
	uint64_t blocks[E3_MAP_NCLASS];	/* blocks of each class */
	uint64_t fragmented_files;	/* regular files drawn as fragmented */
};

/* Writes an SVG picture of fs's blocks to out: one band per block group
 * (or per few, past E3_MAP_MAX_BANDS groups), a legend with the block
 * count of each class, title (may be NULL) at the top. Reads the bitmaps
 * and every inode's map; writes nothing to the image. st may be NULL.
 * EIO if writing to out failed. */
errcode_t e3_map_svg(ext2_filsys fs, FILE *out, const char *title,
		     struct e3_map_stats *st);
const char *e3_map_class_name(enum e3_map_class c);
/* The same picture as text to out: a line per band (its first group, then
 * one character a cell: e3_map_class_char of the cell's class, blank past
 * the last block), then a legend line per class with its block count. */
errcode_t e3_map_text(ext2_filsys fs, FILE *out, struct e3_map_stats *st);
char e3_map_class_char(enum e3_map_class c);
/* The same picture as a PNG to out (libpng): st->bands bands of
 * E3_MAP_CELLS cells, a cell E3_MAP_PNG_CELL_W x E3_MAP_PNG_CELL_H pixels
 * in the SVG's colours (white past the last block), a white pixel row
 * after each band: E3_MAP_CELLS * E3_MAP_PNG_CELL_W pixels wide,
 * bands * (E3_MAP_PNG_CELL_H + 1) high. No legend (no text): print st.
 * EIO if writing to out failed. */
#define E3_MAP_PNG_CELL_W 3
#define E3_MAP_PNG_CELL_H 9
errcode_t e3_map_png(ext2_filsys fs, FILE *out, struct e3_map_stats *st);

#ifdef __cplusplus
}
#endif

#endif
