/*
 * defrag_int.h: what the defragmenter's planner (defrag_plan.c), mover
 * (defrag_move.c) and driver (defrag_run.c) share. Not for tools.
 *
 * One run has one struct df_ctx, used by one thread: the driver's. It
 * takes fs_lock around every libext2fs call as lib/'s other layers do
 * (lock order in image.h), and never holds it while copying file data.
 */
#ifndef E3_DEFRAG_INT_H
#define E3_DEFRAG_INT_H

#include "fs/image.h"
#include "alloc/alloc.h"

/* A file the planner chose: enough to find it again and to judge a move. */
struct df_cand {
	ext2_ino_t ino;
	ext2_ino_t parent;		/* a directory naming it, 0: unknown */
	uint64_t blocks;		/* data + indirect, e2fsck's sequence */
	uint32_t runs, groups;		/* in e2fsck's block order */
	int ordered;			/* placed in the move order */
	int left;			/* left fragmented */
	int no_room;			/* ...for want of room */
	blk64_t goal;			/* the hole to move into, 0: none */
	blk64_t moved_to;		/* DF_MOVED: the first block booked */
	int packed;			/* moved by defrag_pack.c: done */
};

/* A contiguous file under a group's worth of blocks: one the compaction
 * may slide elsewhere whole. */
struct df_contig {
	blk64_t lo;			/* lowest block */
	uint64_t blocks;
	ext2_ino_t ino;
};

/* One block map in e2fsck's order, as the mover needs it. */
struct df_map {
	uint64_t *lblk;			/* data blocks: logical numbers... */
	blk64_t *pblk;			/* ...and where they are, lblk order */
	size_t ndata, capdata;
	blk64_t *meta;			/* indirect blocks, pre-order */
	size_t nmeta, capmeta;
	uint32_t runs, groups;		/* in e2fsck's block order */
	uint32_t group_changes;		/* moves from one group to another */
};

struct df_ctx {
	struct e3_image *img;
	ext2_filsys fs;
	struct e3_alloc *alloc;		/* img->alloc, or a dry run's own */
	const struct e3_defrag_opts *o;
	struct e3_defrag_report *rep;
	struct df_cand *cand;		/* sorted by inode number */
	size_t ncand, capcand;
	size_t *order;			/* indices into cand, move order */
	size_t norder;
	unsigned char *buf;		/* data copy buffer, DF_COPY bytes */
	/* --verify: the image opened again with O_DIRECT (-1: the image's
	 * filesystem has none), and a DF_COPY buffer aligned for it */
	int dfd;
	unsigned char *vbuf;
	double t0;			/* monotonic start of the moves */
	double last_progress;
	uint64_t moves;			/* moves made (commit_every) */
	unsigned char *emptying;	/* per group: being emptied
					   (defrag_compact.c), or NULL */
	/* the stretch being emptied for a large file (defrag_room.c):
	 * no DF_COMPACT move lands in [keep_lo, keep_hi); both 0: none */
	blk64_t keep_lo, keep_hi;
	ext2fs_block_bitmap soft;	/* defrag_room.c: blocks of the files
					   it may move out of the way */
	struct df_owners *owners;	/* defrag_room.c: who owns those
					   blocks (defrag_owners.c), or NULL */
	ext2_ino_t room_self;		/* defrag_room.c: the file room was
					   last made for (its map in owners
					   to refresh: it may have moved) */
	int fix_whole;			/* DF_FIX of a file under a group's
					   worth: one run or no move (the
					   first fix pass, defrag_run.c) */
};

#define DF_COPY (1u << 20)		/* bytes per pread/pwrite */

double df_now(void);

/* defrag_plan.c */
/* Walks ino's map (READ ONLY) into m. Caller holds fs_lock. */
errcode_t df_map_read(struct df_ctx *c, ext2_ino_t ino, struct df_map *m);
/* The lowest block m names, data or map (m names at least one). */
blk64_t df_map_lowest(const struct df_map *m);
void df_map_free(struct df_map *m);
/* Whether a map of blocks in e2fsck's order with these runs and groups
 * is one the planner would move (the --min-runs rule or the default). */
int df_wants(const struct df_ctx *c, uint64_t blocks, uint32_t runs,
	     uint32_t groups);
/* The inode scan and the directory walk: c->cand and c->order. */
errcode_t df_plan(struct df_ctx *c);
struct df_cand *df_find_cand(struct df_ctx *c, ext2_ino_t ino);

/* defrag_move.c */
enum df_outcome {
	DF_MOVED,		/* (dry run: would move) */
	DF_SKIPPED,		/* left fragmented; why says why */
	DF_UNCHANGED,		/* not fragmented after all: nothing to do */
};
#define DF_WHY_FINE ((errcode_t)-1)	/* plan_one: DF_UNCHANGED */
enum df_mode {
	DF_FIX,			/* a fragmented file into fewer runs */
	DF_COMPACT,		/* a contiguous file out of a group being
				   emptied, into the free extent at cd->goal
				   (defrag_compact.c) */
	DF_EVICT,		/* a file under a group's worth of blocks out
				   of [keep_lo, keep_hi), in no more runs
				   than it has (defrag_room.c) */
	DF_PLACE,		/* a file under a group's worth of blocks,
				   fragmented or not, into exactly one run
				   starting at cd->goal (defrag_pack.c) */
};
/* Moves one candidate (or, dry run, books its target and reports what
 * would happen). A returned error ends the run: the running transaction
 * has been poisoned when it held part of this move. */
errcode_t df_move(struct df_ctx *c, struct df_cand *cd, enum df_mode mode,
		  enum df_outcome *out, errcode_t *why, uint32_t *runs_after);

/* defrag_plan.c: a file the defragmenter may move at all */
int df_movable(ext2_filsys fs, ext2_ino_t ino, struct ext2_inode *in);
typedef errcode_t df_free_fn(void *arg, blk64_t start, blk64_t len);
errcode_t df_each_free(ext2_filsys fs, df_free_fn *fn, void *arg);
typedef errcode_t df_small_fn(void *arg, ext2_ino_t ino, const struct df_map *m);
errcode_t df_each_small(struct df_ctx *c, df_small_fn *fn, void *arg);

/* defrag_compact.c: after the fragmented files, the groups whose free
 * space is in the most pieces are emptied of their contiguous small
 * files into the large free extents elsewhere, so free space gathers
 * into a few large extents; then the files left for want of room are
 * tried again (defrag_run.c). */
errcode_t df_compact(struct df_ctx *c);
/* The small contiguous files, lowest block first. Caller holds
 * fs_lock; *out is the caller's to free. */
errcode_t df_collect_contig(struct df_ctx *c, struct df_contig **out,
			    size_t *n);

/* defrag_room.c: for cd, left for want of room, empty the stretch of
 * blocks that costs the fewest moves; *ready 1 (and cd->goal the
 * stretch, free and committed) when cd may now move there. */
errcode_t df_room_make(struct df_ctx *c, struct df_cand *cd, int *ready);
void df_room_free(struct df_ctx *c);

/* defrag_owners.c: the block-to-owner map of the files room-making may
 * move out of the way (movable, under a group's worth of blocks). All
 * calls under fs_lock. */
struct df_owners;
struct df_owner {
	ext2_ino_t ino;
	uint32_t runs;
	uint64_t blocks;		/* data + indirect */
};
/* From one inode scan. */
errcode_t df_owners_build(struct df_ctx *c, struct df_owners **out);
/* ino's entries from its map as it is now (after a move). */
errcode_t df_owners_update(struct df_ctx *c, struct df_owners *o,
			   ext2_ino_t ino);
/* Marks in bm the blocks of the files other than self of at most limit
 * blocks. */
void df_owners_mark(const struct df_owners *o, ext2fs_block_bitmap bm,
		    ext2_ino_t self, uint64_t limit);
/* The files other than self of at most limit blocks with a block in
 * [lo, hi), each once, in inode order, into *v (n used, cap allocated;
 * the caller's to free). */
errcode_t df_owners_in(struct df_owners *o, blk64_t lo, blk64_t hi,
		       ext2_ino_t self, uint64_t limit,
		       struct df_owner **v, size_t *n, size_t *cap);
/* *ok 1 when [lo, hi) is exactly the blocks of some of these files,
 * each wholly inside it (no block of anything else, none free); they
 * are then in *v as df_owners_in gives them. */
errcode_t df_owners_gap(struct df_owners *o, blk64_t lo, blk64_t hi,
			struct df_owner **v, size_t *n, size_t *cap, int *ok);
void df_owners_free(struct df_owners *o);

/* defrag_pack.c: the placement plan, before the per-file passes. In
 * rounds, each from a commit and one inode scan: the holes, lowest
 * first, are filled best fit with the fragmented files and with the
 * contiguous files above the packing frontier (where the movable data
 * would end if packed). Free space so gathers above the frontier, and
 * each block moves about once. settle (after the per-file passes): also
 * any contiguous file whose move leaves free space in fewer extents. */
errcode_t df_pack(struct df_ctx *c, int settle);

/* defrag_merge.c: last, free extents joined: the stretches of small
 * files between two neighbouring free extents of a group, cheapest
 * first, emptied into other holes while a stretch costs no more blocks
 * than the free space it joins; then holes closed exactly by files
 * peeled off the edges of larger free extents. */
errcode_t df_merge(struct df_ctx *c);

/* defrag_run.c, for both passes */
/* A fragmented candidate moved by another pass than the fix pass:
 * counted and reported as the fix pass would. */
void df_fixed(struct df_ctx *c, struct df_cand *cd, uint32_t runs_after);
int df_should_stop(const struct df_ctx *c);
void df_progress(struct df_ctx *c, int force);
/* df_commit: the running transaction now; df_maybe_commit: after every
 * commit_every moves, by default every DF_BATCH_FILES (none in a dry
 * run) */
errcode_t df_commit(struct df_ctx *c);
errcode_t df_maybe_commit(struct df_ctx *c);

#endif
