/*
 * blockmap.h: one file's ext3 block map (i_block[15] and the IND/DIND/TIND
 * blocks below it) built in memory while the file is written, so that no
 * indirect block is read and rewritten per data block as ext2fs_bmap2
 * would. Indirect blocks are written once, when the last slot of their
 * range is filled (sequential writers), or at close; a later write into
 * a range already written reads it back.
 *
 * Not thread-safe: the owner (struct e3_file, under file->lock) calls it.
 * The I/O callbacks are where fs_lock is taken.
 */
#ifndef E3_BLOCKMAP_H
#define E3_BLOCKMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <ext2fs/ext2fs.h>

struct bm_node;

struct bm_io {
	/* read/write one indirect block (little-endian pointers) */
	errcode_t (*read)(void *ctx, blk64_t blk, void *buf);
	errcode_t (*write)(void *ctx, blk64_t blk, const void *buf);
	void *ctx;
};

struct e3_bmap {
	unsigned bs;			/* block size */
	unsigned P;			/* pointers per indirect block */
	uint32_t iblock[EXT2_N_BLOCKS];	/* the inode's i_block[] (cpu order) */
	struct bm_node *top[3];		/* in-memory IND, DIND, TIND or NULL */
	uint64_t nblocks;		/* data + indirect blocks mapped */
	blk64_t *written;		/* indirect blocks written at least once */
	size_t nwritten, capwritten;
	struct bm_io io;
};

void bm_init(struct e3_bmap *bm, unsigned blocksize, const struct bm_io *io);
void bm_free(struct e3_bmap *bm);

/* Largest logical block an ext3 block map can hold, plus one. */
uint64_t bm_max_blocks(const struct e3_bmap *bm);

/* Physical block of lblk, 0 for a hole. */
errcode_t bm_lookup(struct e3_bmap *bm, uint64_t lblk, blk64_t *pblk);

/* How many indirect blocks mapping lblk would need to create (0..3). */
errcode_t bm_missing(struct e3_bmap *bm, uint64_t lblk, unsigned *n);

/* Indirect blocks that a sequential write of lblks [lo, hi) creates
 * after the ones lo itself needs: one at every IND/DIND/TIND range start
 * inside (lo, hi). */
uint64_t bm_meta_between(unsigned P, uint64_t lo, uint64_t hi);

/* Indirect + data blocks of a file holding nblocks data blocks from 0. */
uint64_t bm_blocks_for(unsigned P, uint64_t nblocks);

/* Maps lblk to pblk; meta[0..n) are the new indirect blocks bm_missing
 * asked for, outermost first. Writes indirect blocks whose range became
 * full. An error that leaves nblocks unchanged mapped nothing; one that
 * grew it came after (part of) the mapping, whose blocks the map holds. */
errcode_t bm_set(struct e3_bmap *bm, uint64_t lblk, blk64_t pblk,
		 const blk64_t *meta, unsigned n);

/* Writes every indirect block still in memory. */
errcode_t bm_flush(struct e3_bmap *bm);

/* Whether blk is an indirect block written at least once. */
bool bm_was_written(struct e3_bmap *bm, blk64_t blk);

#endif
