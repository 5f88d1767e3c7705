/*
 * file_int.h: an open file being loaded (lib/fs/file.c), shared with load.c
 * so that image close can find files left open.
 */
#ifndef E3_FILE_INT_H
#define E3_FILE_INT_H

#include <sys/queue.h>
#include "image.h"
#include "alloc/alloc.h"
#include "blockmap.h"

/* A run of blocks claimed from the allocator; [start, start + used) went
 * into the block map, the rest is still ours to use or give back. */
struct e3_run {
	blk64_t start, len, used;
};

struct e3_file {
	TAILQ_ENTRY(e3_file) link;	/* [load->lock] */
	struct e3_file *pool_next;	/* [load->lock] in load->pool */
	pthread_mutex_t lock;		/* this file's state below */
	struct e3_image *img;
	ext2_ino_t ino;
	int closed;			/* [lock] */
	int fs_held;			/* [lock] close holds fs_lock */
	struct e3_rsv rsv;		/* [lock] the allocator's part */
	struct e3_bmap bm;		/* [lock] */
	uint64_t size;			/* [lock] i_size written at close */
	uint64_t hint_blocks;		/* data blocks the size hint promises */
	struct e3_run *runs;		/* [lock] claimed runs, in order: in
					   run1 until a second one comes */
	size_t nruns, capruns;
	struct e3_run run1;		/* [lock] (most files take one run:
					   no allocation for it) */
	/* write-behind buffer: logical blocks [buf_lblk, buf_lblk + buf_n)
	 * at physical [buf_pblk, ...), contiguous both ways */
	char *buf;			/* [lock] */
	size_t buf_cap, buf_max;	/* blocks allocated / allowed */
	uint64_t buf_lblk;
	blk64_t buf_pblk;
	size_t buf_n;
	size_t buf_zero;		/* [lock] the last buf_zero bytes of the
					   buffer's last block are zeros still
					   to be written (from zero_block, not
					   memset: a small file's tail is half
					   a block on average) */
	/* the caller's read buffer (e3_file_wbuf): spare_bytes allocated,
	 * spare_len the most it may hand back, 0 once it has */
	char *spare;			/* [lock] */
	size_t spare_bytes, spare_len;
	errcode_t werr;			/* [lock] a data or indirect block
					   write failed: close must not give
					   the blocks to the inode */
};

/* Frees an open file without writing anything (image close/abort with
 * the file still open): its window is dropped, claimed blocks go back. */
void e3_file_drop(struct e3_file *f);
/* Frees a struct from load->pool (its read buffer, its lock). */
void e3_file_pool_free(struct e3_file *f);

#endif
