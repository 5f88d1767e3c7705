/*
 * check_walk.h: the block-map walker shared by pass 2 and the owner scan
 * for blocks claimed twice (see check_walk.c).
 */
#ifndef E3_CHECK_WALK_H
#define E3_CHECK_WALK_H

#include "check.h"

/* e2fsck's MAX_ILLEGAL_BLOCKS: past this, the inode is beyond repair */
#define CHK_MAX_ILLEGAL 12

struct chk_walk {
	int fd;
	unsigned bs;
	blk64_t first_data, nblocks;
	unsigned char *buf[3];		/* one block buffer per depth */
	/* returns nonzero to stop; lblk < 0 for indirect blocks */
	int (*visit)(struct chk_walk *wk, blk64_t blk, e2_blkcnt_t lblk);
	void (*on_illegal)(struct chk_walk *wk, blk64_t blk, e2_blkcnt_t lblk);
	void *arg;
	unsigned illegal;
	unsigned read_errors;
	int skip_children;		/* set by visit: don't read this
					   indirect block's entries */
};

int chk_walk_blocks(struct chk_walk *wk, const struct ext2_inode *inode);

#endif
