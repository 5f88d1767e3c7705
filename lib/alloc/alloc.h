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
 *
 * CONTRACT FOR THE LOAD LAYER
 *
 * One file, one e3_rsv, one thread at a time (its owner). Open: e3_rsv_init
 * (ino, hint, colour). Each allocation: e3_alloc_blocks(a, r,
 * e3_rsv_goal(a, r), count, ...) — the goal is the block after the file's
 * last one, else its inode's group (+ colour slice without a hint). Then,
 * under fs_lock, ext2fs_block_alloc_stats_range(fs, start, got, +1) when
 * the metadata that uses the blocks is written (our hook sees they are
 * already claimed). Close or error: e3_rsv_discard (its unused window goes
 * back); blocks claimed but never used: e3_alloc_unclaim.
 *
 * Indirect blocks in line (ext3-facts §2.2). When the next data block
 * needs k new indirect blocks (0..3), ask in ONE request for k + the data
 * blocks up to the end of what the deepest new indirect block maps (or
 * fewer, if that is all the data there is). The run returned is
 * contiguous: its first k blocks become the new indirect blocks, top level
 * first (TIND, DIND, IND), the rest data. If got <= k, use the blocks as
 * the first `got` of those indirect blocks and ask again for the rest
 * (the goal follows on). So a file reads D0-D11, IND, D12.., DIND, IND, ...
 *
 * Size hints. hint_blocks = every block the file will take, data plus
 * indirect (e3_map_blocks below computes it from the data block count).
 * The file's window is then one run of that many free blocks: inside one
 * group if it fits one (else crossing only group-head metadata), first
 * fit from the goal, wrapping. If no such run exists, the whole hint is
 * still booked at once as a few windows (the largest run, then the
 * largest for the rest, ...; up to 64), used in that order. A hint that
 * is too big leaves its unused blocks free at e3_rsv_discard; one too
 * small continues with ordinary windows. e3_rsv_discard is required for
 * every file that allocated (it frees those extra windows).
 *
 * DETERMINISM (same image at any thread count). Placement depends only on
 * the order of window bookings and of windowless allocations, so:
 *   - give every regular file an exact hint (a sparse file's counts the
 *     indirect blocks each data region needs: e3_create_blocks), and book
 *     its window with e3_rsv_book(a, r, e3_rsv_goal(a, r)) from ONE
 *     thread, in a fixed order (the creating thread, in sorted order),
 *     before any worker allocates for it — a window booked lazily by
 *     the first e3_alloc_blocks is booked in whatever order the workers
 *     get there;
 *   - allocate directory blocks, symlink blocks and anything else done
 *     through libext2fs (the hook: windowless) from that same thread, in
 *     that order;
 *   - derive the colour from the file (e.g. ino % 16), never the thread;
 *   - files without a hint (unknown size, e.g. a stream) and an image so
 *     full that allocations fall back outside windows give up this
 *     guarantee.
 * Workers may then allocate inside their windows in any order and with
 * any request sizes: a booked window is used only by its owner, so the
 * blocks each file gets do not depend on timing.
 */
#ifndef E3_ALLOC_H
#define E3_ALLOC_H

#include <stdbool.h>
#include <sys/tree.h>
#include <sys/queue.h>
#include <ext2fs/ext2fs.h>
#include "e3img.h"

/* A file's reservation window and allocation history. Embedded in the
 * caller's per-file struct and used by one thread at a time (its owner);
 * the window fields are also read by others under rsv_lock. */
struct e3_rsv {
	RB_ENTRY(e3_rsv) rb;		/* [rsv_lock] rbtree mode */
	TAILQ_ENTRY(e3_rsv) link;	/* [rsv_lock] list mode */
	blk64_t start, end;		/* [rsv_lock] inclusive; end == 0: none */
	int linked;			/* [rsv_lock] in the tree/list */
	uint32_t headroom;		/* [rsv_lock] blocks past end that this
					   window is expected to grow into (0:
					   hinted, it already holds the file) */
	uint32_t goal_size;		/* [owner] blocks wanted next window */
	uint32_t alloc_hit;		/* [owner] blocks used from this window */
	uint32_t full_windows;		/* [owner] windows of the 1027 cap that
					   filled (rbtree mode: 2 make the file
					   a long stream, alloc_window.c) */
	uint64_t hint_blocks;		/* [owner] blocks still expected (0: no hint) */
	blk64_t last_pblk;		/* [owner] last block handed out, 0: none */
	ext2_ino_t ino;			/* [owner] for the default goal */
	unsigned colour;		/* [owner] 0..15, ext3's per-writer slice */
	struct e3_rsv *chain;		/* [owner] further windows booked for
					   the hint when no single run held it
					   (allocated here, freed by discard) */
};

struct e3_alloc;

/* What the allocator needs from the layer above; it knows nothing of the
 * image struct or the journal.
 *
 * The libext2fs hooks receive only the ext2_filsys, so they find the
 * allocator through fs->priv_data: it must point to a struct whose FIRST
 * member is the struct e3_alloc * that e3_alloc_create returned (a
 * pointer to a struct is a pointer to its first member), or be NULL. */
struct e3_alloc_ops {
	/* blocks libext2fs frees (through its stats hooks) may hold
	 * journaled metadata: called before they join the deferred-free
	 * list, so the layer above can revoke them. May be NULL. */
	void (*freed)(void *arg, blk64_t start, blk64_t n);
	void *arg;
};

/* Mirrors fs->block_map, installs the libext2fs hooks. ops may be NULL.
 * Caller holds fs_lock (or is the only thread). */
errcode_t e3_alloc_create(ext2_filsys fs, enum e3_alloc_mode mode,
			  const struct e3_alloc_ops *ops,
			  struct e3_alloc **ret);
/* Removes the hooks and frees. All windows must have been discarded. */
void e3_alloc_destroy(struct e3_alloc *a);
enum e3_alloc_mode e3_alloc_mode(struct e3_alloc *a);

/* A fresh reservation for a file. hint_blocks: total blocks (data plus
 * indirect) the file will need, 0 when unknown. colour: ext3's per-writer
 * offset (0..15), used for the first goal when there is no hint. */
void e3_rsv_init(struct e3_alloc *a, struct e3_rsv *r, ext2_ino_t ino,
		 uint64_t hint_blocks, unsigned colour);
/* ext3's EXT3_IOC_SETRSVSZ: the size of r's next window, clamped to
 * 1027; 0 turns windows off for this file. ext3 starts every file at 8
 * and doubles; a writer that knows it will stream a lot can start big. */
void e3_rsv_set_goal_size(struct e3_rsv *r, uint32_t blocks);
/* The goal for the next block of this file: after its last block, else in
 * its inode's group (plus colour when there is no hint). */
blk64_t e3_rsv_goal(struct e3_alloc *a, struct e3_rsv *r);

/* Claims one contiguous run [*start, *start + *got) with 1 <= *got <= count,
 * as close after goal as the mode allows, and moves r's goal past it.
 * Thread-safe; takes no fs_lock, and may be called with or without it
 * (never with rsv_lock). r == NULL: no window (goal, then first free block
 * outside other windows) — what libext2fs' helpers get through the hook.
 * E3_IMAGE_FULL when no block is free (windows of other files are used as a
 * last resort, so a full image is never reported falsely). */
errcode_t e3_alloc_blocks(struct e3_alloc *a, struct e3_rsv *r, blk64_t goal,
			  blk64_t count, blk64_t *start, blk64_t *got);
/* Books a size-hinted file's window now (a no-op without a hint or in
 * `none` mode) instead of at its first e3_alloc_blocks: see DETERMINISM
 * above. E3_IMAGE_FULL if no block outside other windows is free (the
 * file's allocations will then fall back to windowless). */
errcode_t e3_rsv_book(struct e3_alloc *a, struct e3_rsv *r, blk64_t goal);
/* e3_rsv_book for a file that takes its blocks in order (a size-hinted
 * file being written, indirect blocks in line): when one free run inside
 * a group holds the whole hint, its blocks are claimed now — the same
 * blocks its first e3_alloc_blocks would have claimed from the window —
 * and returned in [*start, *start + *got), and no window is booked.
 * Otherwise *got = 0 and the hint is booked as e3_rsv_book does. The
 * caller uses the run before asking e3_alloc_blocks for more, and gives
 * back what it does not use (e3_alloc_unclaim). */
errcode_t e3_rsv_book_claim(struct e3_alloc *a, struct e3_rsv *r,
			    blk64_t goal, blk64_t *start, blk64_t *got);
/* Drops r's window (file closed or failed); unused reserved blocks return
 * to the pool. */
void e3_rsv_discard(struct e3_alloc *a, struct e3_rsv *r);

/* Gives back claimed blocks that never became part of the image (error
 * paths): reusable at once. */
void e3_alloc_unclaim(struct e3_alloc *a, blk64_t start, blk64_t n);
/* Blocks freed by the running transaction: reusable only after it commits.
 * The journal seals the list when the running transaction becomes the
 * committing one (e3_alloc_seal: later frees belong to the next
 * transaction) and releases the sealed blocks once that commit is durable
 * (e3_alloc_committed). Without a journal: seal, then committed. */
void e3_alloc_free_deferred(struct e3_alloc *a, blk64_t start, blk64_t n);
void e3_alloc_seal(struct e3_alloc *a);
void e3_alloc_committed(struct e3_alloc *a);
/* b holds group metadata: a superblock or descriptor copy, reserved GDT,
 * a bitmap or an inode table (blocks outside the filesystem count too). */
bool e3_alloc_is_meta(const struct e3_alloc *a, blk64_t b);
/* Free blocks right now (claimed ones excluded). */
blk64_t e3_alloc_free_count(struct e3_alloc *a);
/* Blocks freed and not yet reusable (running and committing
 * transactions), waiting for their commits. */
blk64_t e3_alloc_deferred_count(struct e3_alloc *a);

/* Inode for a new entry in parent: directories spread over groups by an
 * Orlov-like rule, other files in their parent's group. Marks it in use
 * (ext2fs_inode_alloc_stats2). Caller holds fs_lock. */
errcode_t e3_ialloc(ext2_filsys fs, ext2_ino_t parent, int is_dir,
		    ext2_ino_t *ino);
/* Gives an inode back (ext2fs_inode_alloc_stats2), and lets e3_ialloc's
 * search see it again: every inode this library frees goes through here.
 * Caller holds fs_lock. */
void e3_ifree_ino(ext2_filsys fs, ext2_ino_t ino, int is_dir);

/* The validator: windows ordered, not overlapping, inside the filesystem,
 * counts consistent. Always compiled. On failure writes the reason into
 * why (if not NULL) and returns false. Takes rsv_lock itself. */
bool rsv_tree_check(struct e3_alloc *a, char *why, size_t whylen);

/* Blocks a block-mapped file of data_blocks dense blocks occupies: the
 * data plus its IND, DIND and TIND blocks — the size hint to give. */
uint64_t e3_map_blocks(unsigned blocksize, uint64_t data_blocks);

/* Numbers for tests, benchmarks and e3debugfs. */
struct e3_alloc_stats {
	uint64_t windows;		/* windows currently booked */
	uint64_t window_allocs;		/* new windows made */
	uint64_t window_fallbacks;	/* allocations that had to go windowless */
	uint64_t blocks_claimed;
};
void e3_alloc_get_stats(struct e3_alloc *a, struct e3_alloc_stats *st);

#endif
