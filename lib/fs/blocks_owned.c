/*
 * blocks_owned.c: whether the blocks an inode's map names are its own,
 * before anything writes or frees through that map. A damaged map can
 * name group metadata, the journal or a free block; freeing it hands it
 * to the next file, and writing a directory entry into it overwrites
 * whatever it holds (an inode table block whose first inode has size bs
 * even parses as an empty directory block). One block named twice would
 * be freed twice. A block shared with another inode is not looked for:
 * that needs every inode read (e3fsck).
 */
#include <errno.h>
#include <stdlib.h>

#include "image.h"
#include "alloc/alloc.h"
#include "journal/journal.h"
#include "util/grow.h"
#include "e3_err.h"

int e3_block_owned(struct e3_image *img, blk64_t b)
{
	ext2_filsys fs = img->fs;

	if (b < fs->super->s_first_data_block ||
	    b >= ext2fs_blocks_count(fs->super))
		return 0;
	if (img->alloc && e3_alloc_is_meta(img->alloc, b))
		return 0;
	if (img->journal && e3_journal_holds(img->journal, b))
		return 0;
	return ext2fs_test_block_bitmap2(fs->block_map, b);
}

struct blk_run {
	blk64_t start, n;
};

/* The map's blocks as runs, in map order, to find one named twice. */
struct own_walk {
	struct e3_image *img;
	struct blk_run *runs;
	size_t nruns, cap;
	int bad;			/* a block not the inode's own met */
	errcode_t err;
};

/* Called for an indirect block before it is read as pointers, so a bad
 * one stops the walk before its contents are trusted. */
static int own_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t cnt,
		     blk64_t ref, int off, void *priv)
{
	struct own_walk *w = priv;
	struct blk_run *last = w->nruns ? &w->runs[w->nruns - 1] : NULL;
	blk64_t b = *blocknr;

	(void)fs; (void)cnt; (void)ref; (void)off;
	if (!e3_block_owned(w->img, b)) {
		w->bad = 1;
		return BLOCK_ABORT;
	}
	if (last && b == last->start + last->n) {
		last->n++;
		return 0;
	}
	last = e3_grow(w->runs, w->nruns, &w->cap, sizeof(*w->runs), 16);
	if (!last) {
		w->err = ENOMEM;
		return BLOCK_ABORT;
	}
	w->runs = last;
	w->runs[w->nruns++] = (struct blk_run){ b, 1 };
	return 0;
}

static int cmp_run(const void *x, const void *y)
{
	const struct blk_run *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

errcode_t e3_map_owned(struct e3_image *img, ext2_ino_t ino,
		       struct ext2_inode *inode, blk64_t extra)
{
	ext2_filsys fs = img->fs;
	struct own_walk w = { .img = img };
	errcode_t err = 0;

	if (extra)
		own_block(fs, &extra, 0, 0, 0, &w);
	if (!w.bad && !w.err && ext2fs_inode_has_valid_blocks2(fs, inode))
		err = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY,
					    NULL, own_block, &w);
	if (!err)
		err = w.err;
	if (!err && w.bad)
		err = E3_FILE_BLOCKS_BAD;
	if (err == EXT2_ET_BAD_IND_BLOCK || err == EXT2_ET_BAD_DIND_BLOCK ||
	    err == EXT2_ET_BAD_TIND_BLOCK)
		err = E3_FILE_BLOCKS_BAD;
	if (!err && w.nruns > 1) {
		qsort(w.runs, w.nruns, sizeof(*w.runs), cmp_run);
		for (size_t i = 1; i < w.nruns; i++)
			if (w.runs[i].start <
			    w.runs[i - 1].start + w.runs[i - 1].n)
				err = E3_FILE_BLOCKS_BAD;
	}
	free(w.runs);
	return err;
}
