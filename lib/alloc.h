/*
 * alloc.h: the block allocator — an in-memory mirror of the block bitmap
 * whose bits are claimed atomically, per-file reservation windows kept in a
 * red-black tree (or a sorted list, or none), ext3's goal rules, in-line
 * indirect blocks, and inode placement (Orlov-like for directories).
 *
 * Blocks handed out here are claimed in the allocator's bitmap only; the
 * caller makes them count in libext2fs (ext2fs_block_alloc_stats_range,
 * under fs_lock) when it writes the metadata that uses them. Blocks that
 * libext2fs allocates by itself (directory growth, mkdir) come through the
 * get_alloc_block2 hook installed by e3_alloc_create, so they are claimed
 * here too.
 */
#ifndef E3_ALLOC_H
#define E3_ALLOC_H

#include <stdbool.h>
#include <sys/tree.h>
#include <sys/queue.h>
#include "image.h"

/* A file's reservation window and allocation history. Embedded in the
 * caller's per-file struct and used by one thread at a time (its owner);
 * the window fields are also read by others under rsv_lock. */
struct e3_rsv {
	RB_ENTRY(e3_rsv) rb;		/* [rsv_lock] rbtree mode */
	TAILQ_ENTRY(e3_rsv) link;	/* [rsv_lock] list mode */
	blk64_t start, end;		/* [rsv_lock] inclusive; end == 0: none */
	int linked;			/* [rsv_lock] in the tree/list */
	uint32_t goal_size;		/* [owner] blocks wanted next window */
	uint32_t alloc_hit;		/* [owner] blocks used from this window */
	uint64_t hint_blocks;		/* [owner] blocks still expected (0: no hint) */
	blk64_t last_pblk;		/* [owner] last block handed out, 0: none */
	ext2_ino_t ino;			/* [owner] for the default goal */
	unsigned colour;		/* [owner] 0..15, ext3's per-writer slice */
};

struct e3_alloc;

/* Mirrors fs->block_map, installs the libext2fs hooks. Caller holds
 * fs_lock (or is the only thread). */
errcode_t e3_alloc_create(struct e3_image *img, enum e3_alloc_mode mode,
			  struct e3_alloc **ret);
/* Removes the hooks and frees. All windows must have been discarded. */
void e3_alloc_destroy(struct e3_alloc *a);
enum e3_alloc_mode e3_alloc_mode(struct e3_alloc *a);

/* A fresh reservation for a file. hint_blocks: total blocks (data plus
 * indirect) the file will need, 0 when unknown. colour: ext3's per-writer
 * offset (0..15), used for the first goal when there is no hint. */
void e3_rsv_init(struct e3_alloc *a, struct e3_rsv *r, ext2_ino_t ino,
		 uint64_t hint_blocks, unsigned colour);
/* The goal for the next block of this file: after its last block, else in
 * its inode's group (plus colour when there is no hint). */
blk64_t e3_rsv_goal(struct e3_alloc *a, struct e3_rsv *r);

/* Claims one contiguous run [*start, *start + *got) with 1 <= *got <= count,
 * as close after goal as the mode allows. Thread-safe; holds no fs_lock.
 * E3_IMAGE_FULL when no block is free (windows of other files are used as a
 * last resort, so a full image is never reported falsely). */
errcode_t e3_alloc_blocks(struct e3_alloc *a, struct e3_rsv *r, blk64_t goal,
			  blk64_t count, blk64_t *start, blk64_t *got);
/* Books a size-hinted file's window now (a no-op without a hint or in
 * `none` mode) instead of at its first e3_alloc_blocks: see DETERMINISM
 * above. E3_IMAGE_FULL if no block outside other windows is free (the
 * file's allocations will then fall back to windowless). */
errcode_t e3_rsv_book(struct e3_alloc *a, struct e3_rsv *r, blk64_t goal);
/* Drops r's window (file closed or failed); unused reserved blocks return
 * to the pool. */
void e3_rsv_discard(struct e3_alloc *a, struct e3_rsv *r);

/* Gives back claimed blocks that never became part of the image (error
 * paths): reusable at once. */
void e3_alloc_unclaim(struct e3_alloc *a, blk64_t start, blk64_t n);
/* Blocks freed by the running transaction: reusable only after it commits
 * (the journal calls e3_alloc_committed). */
void e3_alloc_free_deferred(struct e3_alloc *a, blk64_t start, blk64_t n);
void e3_alloc_committed(struct e3_alloc *a);
/* Free blocks right now (claimed ones excluded). */
blk64_t e3_alloc_free_count(struct e3_alloc *a);

/* Inode for a new entry in parent: directories spread over groups by an
 * Orlov-like rule, other files in their parent's group. Marks it in use
 * (ext2fs_inode_alloc_stats2). Caller holds fs_lock. */
errcode_t e3_ialloc(struct e3_image *img, ext2_ino_t parent, int is_dir,
		    ext2_ino_t *ino);

/* The validator: windows ordered, not overlapping, inside the filesystem,
 * counts consistent. Always compiled. On failure writes the reason into
 * why (if not NULL) and returns false. Takes rsv_lock itself. */
bool rsv_tree_check(struct e3_alloc *a, char *why, size_t whylen);

/* Numbers for tests, benchmarks and e3debugfs. */
struct e3_alloc_stats {
	uint64_t windows;		/* windows currently booked */
	uint64_t window_allocs;		/* new windows made */
	uint64_t window_fallbacks;	/* allocations that had to go windowless */
	uint64_t blocks_claimed;
};
void e3_alloc_get_stats(struct e3_alloc *a, struct e3_alloc_stats *st);

#endif
