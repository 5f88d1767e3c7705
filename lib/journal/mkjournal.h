/*
 * mkjournal.h: one way to add an internal journal (inode 8) through
 * libext2fs, shared by mkfs (lib/mkfs/mkfs_apply.c) and by the checker when it
 * recreates an invalid journal (lib/check/check_journal.c).
 */
#ifndef E3_MKJOURNAL_H
#define E3_MKJOURNAL_H

#include <ext2fs/ext2fs.h>

/* Adds a journal of nblocks blocks (0: libext2fs's default for the
 * filesystem's size) as inode 8, which must be free of blocks. libext2fs
 * allocates and zeroes the blocks (unless lazy: they already read as
 * zeros), writes the journal superblock, sets has_journal, s_journal_inum
 * and the s_jnl_blocks backup. EXT2_ET_JOURNAL_TOO_SMALL when the
 * filesystem is too small for any journal (under 2048 blocks, as mke2fs
 * judges). *ret_blocks (may be NULL) gets the size used. */
errcode_t e3_make_journal(ext2_filsys fs, blk_t nblocks, int lazy,
			  blk_t *ret_blocks);

/* libext2fs's default journal size for the filesystem (what e2fsck and
 * mke2fs choose); EXT2_ET_JOURNAL_TOO_SMALL when it is too small for one. */
errcode_t e3_journal_default_blocks(ext2_filsys fs, blk_t *ret_blocks);

/* The filesystem blocks a block-mapped journal of nblocks takes: the log
 * and the indirect blocks that map it. */
blk64_t e3_journal_fs_blocks(ext2_filsys fs, blk_t nblocks);

#endif
