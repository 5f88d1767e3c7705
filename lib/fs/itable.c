/*
 * itable.c: inodes changed in their inode-table block in memory and the
 * block written once for all of them. ext2fs_write_inode_full reads the
 * block and writes it whole for every inode (through the journal: a
 * lookup and a block copy each way); closing a batch of files made one
 * after the other touches one or two blocks, so the closes of a batch
 * read and write each block once (file.c commit_many).
 *
 * Only for little-endian hosts, where the on-disk inode is the in-memory
 * one (e3_itab_usable); a big-endian build keeps libext2fs' own path,
 * which swaps. libext2fs' inode cache may hold an older copy of an inode
 * changed here: e3_itab_flush empties it. Caller holds fs_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "itable.h"

int e3_itab_usable(ext2_filsys fs)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* checksummed inodes would need their checksum set; ext3 has none,
	 * but an image with the feature must not be written wrongly */
	return !ext2fs_has_feature_metadata_csum(fs->super);
#else
	(void)fs;
	return 0;
#endif
}

void e3_itab_init(struct e3_itab *t, ext2_filsys fs)
{
	t->fs = fs;
	t->blk = 0;
	t->buf = NULL;
	t->dirty = 0;
}

errcode_t e3_itab_place(ext2_filsys fs, ext2_ino_t ino, blk64_t *blk,
			unsigned *off)
{
	uint64_t ipg = fs->super->s_inodes_per_group, byte;
	dgrp_t g;
	blk64_t b;

	if (ino < 1 || ino > fs->super->s_inodes_count)
		return EXT2_ET_BAD_INODE_NUM;
	g = (dgrp_t)((ino - 1) / ipg);
	byte = (uint64_t)((ino - 1) % ipg) * EXT2_INODE_SIZE(fs->super);
	b = ext2fs_inode_table_loc(fs, g);
	if (!b)
		return EXT2_ET_MISSING_INODE_TABLE;
	*blk = b + byte / fs->blocksize;
	*off = (unsigned)(byte % fs->blocksize);
	return 0;
}

errcode_t e3_itab_load(struct e3_itab *t, blk64_t blk)
{
	errcode_t err;

	if (t->dirty)
		return EINVAL;	/* flush first: its changes would be lost */
	if (!t->buf && !(t->buf = malloc(t->fs->blocksize)))
		return ENOMEM;
	t->blk = 0;
	err = io_channel_read_blk64(t->fs->io, blk, 1, t->buf);
	if (!err)
		t->blk = blk;
	return err;
}

errcode_t e3_itab_flush(struct e3_itab *t)
{
	errcode_t err = 0;

	if (!t->dirty)
		return 0;
	err = io_channel_write_blk64(t->fs->io, t->blk, 1, t->buf);
	t->dirty = 0;
	if (err)
		t->blk = 0;	/* the image may not hold what buf does */
	/* whatever libext2fs cached of these inodes is older */
	ext2fs_flush_icache(t->fs);
	return err;
}

void e3_itab_free(struct e3_itab *t)
{
	free(t->buf);
	t->buf = NULL;
	t->blk = 0;
	t->dirty = 0;
}
