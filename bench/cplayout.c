/*
 * cplayout.c: layout numbers for bench/copyin.sh — for every regular file
 * of an image, its runs of blocks in e2fsck's order (indirect blocks
 * included, so an in-line IND does not break a run; holes skipped) and its
 * excess runs: runs beyond one plus the block-group boundaries the file
 * must cross.
 *     cplayout IMAGE   ->  "files N runs_per_file X excess_runs E files_with_excess F"
 */
#include <stdio.h>
#include <stdlib.h>
#include <ext2fs/ext2fs.h>

struct walk {
	blk64_t prev, first, last, nblocks;
	uint64_t runs;
};

static int count_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t cnt,
		       blk64_t ref, int off, void *priv)
{
	struct walk *w = priv;

	(void)fs; (void)cnt; (void)ref; (void)off;
	if (!*blocknr)
		return 0;
	if (!w->prev || *blocknr != w->prev + 1)
		w->runs++;
	if (!w->first)
		w->first = *blocknr;
	w->prev = w->last = *blocknr;
	w->nblocks++;
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t files = 0, runs = 0, excess = 0, with_excess = 0;
	ext2_inode_scan scan;
	struct ext2_inode inode;
	ext2_filsys fs;
	ext2_ino_t ino;

	if (argc != 2) {
		fprintf(stderr, "usage: cplayout IMAGE\n");
		return 2;
	}
	if (ext2fs_open(argv[1], 0, 0, 0, unix_io_manager, &fs) ||
	    ext2fs_open_inode_scan(fs, 0, &scan)) {
		fprintf(stderr, "cplayout: cannot open %s\n", argv[1]);
		return 2;
	}
	while (ext2fs_get_next_inode(scan, &ino, &inode) == 0 && ino) {
		struct walk w = { 0 };
		uint64_t need;

		if (ino < EXT2_FIRST_INO(fs->super) || !inode.i_links_count ||
		    !LINUX_S_ISREG(inode.i_mode) ||
		    !ext2fs_inode_has_valid_blocks2(fs, &inode))
			continue;
		ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY, NULL,
				      count_block, &w);
		if (!w.nblocks)
			continue;
		files++;
		runs += w.runs;
		/* one run, plus one per group boundary the blocks must cross */
		need = 1 + ext2fs_group_of_blk2(fs, w.first + w.nblocks - 1) -
		       ext2fs_group_of_blk2(fs, w.first);
		if (w.runs > need) {
			excess += w.runs - need;
			with_excess++;
		}
	}
	ext2fs_close_inode_scan(scan);
	ext2fs_close_free(&fs);
	printf("files %llu runs_per_file %.3f excess_runs %llu files_with_excess %llu\n",
	       (unsigned long long)files, files ? (double)runs / files : 0.0,
	       (unsigned long long)excess, (unsigned long long)with_excess);
	return 0;
}
