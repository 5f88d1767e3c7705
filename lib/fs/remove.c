/*
 * remove.c: e3_remove, for e3cp --overwrite, device tables that replace
 * entries and e3debugfs' rm; and e3_inode_release, the last-link part
 * that e3debugfs' rmdir (shell_ops.c) shares. One atomic operation under fs_lock: the entry goes, the
 * link count drops, and on the last link the blocks (data, indirect, EA)
 * and the inode are freed. Freed blocks reach the allocator's deferred
 * list through its libext2fs stats hook (reusable after the commit),
 * which also revokes each, so a replay never writes an old metadata copy
 * over a block that has since become file data.
 * A file still open (created by e3_create, not closed) is refused on its
 * last link: E3_FILE_BUSY.
 * A failure after the entry went takes it back (a file with other links)
 * or, when that cannot be done, poisons the running transaction
 * (e3_op_poison) so that no half removal is ever committed.
 * Before a last link goes, the file's block map is checked (e3_inode_owns_blocks):
 * a damaged one would have punch free a bitmap, an inode table or a
 * journal block (or a free block, or one block twice), and the allocator
 * hand it to the next file to be overwritten with its data. Such a
 * removal is refused with nothing changed. (A block shared with another
 * file is e3fsck's to find: it needs every inode read.)
 */
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "image.h"
#include "journal/journal.h"
#include "load_int.h"
#include "dirfind.h"

/* The EA block has the header ext2fs_adjust_ea_refcount3 wants (else
 * e3_inode_release would fail after punch, half way through the removal). */
static errcode_t ea_sound(ext2_filsys fs, blk64_t ea, ext2_ino_t ino)
{
	struct ext2_ext_attr_header *h;
	errcode_t err = ext2fs_get_mem(fs->blocksize, &h);

	if (err)
		return err;
	err = ext2fs_read_ext_attr3(fs, ea, h, ino);
	/* libext2fs checks the magic too, by version */
	if (err == EXT2_ET_BAD_EA_HEADER ||
	    err == EXT2_ET_EXT_ATTR_CSUM_INVALID ||
	    (!err && h->h_magic != EXT2_EXT_ATTR_MAGIC))
		err = E3_FILE_BLOCKS_BAD;
	ext2fs_free_mem(&h);
	return err;
}

/* The blocks a last unlink would free are all the file's own, each named
 * once (its EA block included: shared with other inodes by its reference
 * count, never with its own map), and the EA block is one: else
 * E3_FILE_BLOCKS_BAD, and nothing has been changed. */
errcode_t e3_inode_owns_blocks(struct e3_image *img, ext2_ino_t ino,
			       struct ext2_inode *inode)
{
	blk64_t ea = ext2fs_file_acl_block(img->fs, inode);
	errcode_t err = e3_map_owned(img, ino, inode, ea);

	return !err && ea ? ea_sound(img->fs, ea, ino) : err;
}

errcode_t e3_inode_release(struct e3_image *img, ext2_ino_t ino,
			   struct ext2_inode *inode, int is_dir)
{
	ext2_filsys fs = img->fs;
	blk64_t ea = ext2fs_file_acl_block(fs, inode);
	__u32 refs = 0;
	errcode_t err = 0;

	/* Every block punch frees is revoked by the allocator's stats hook
	 * as it goes, after punch has read it: revoking an indirect block
	 * first would drop its copy in the running transaction, and punch
	 * would then read it from the disk (zeros, if this session wrote
	 * it) and leak the blocks below it. */
	if (is_dir)	/* its blocks may hold another's names next */
		e3_dc_forget(img, ino);
	if (ext2fs_inode_has_valid_blocks2(fs, inode)) {
		err = ext2fs_punch(fs, ino, inode, NULL, 0, ~0ULL);
		if (err)
			return err;
	}
	if (ea) {
		err = ext2fs_adjust_ea_refcount3(fs, ea, NULL, -1, &refs, ino);
		if (err)
			return err;
		if (refs == 0) {
			if (img->journal)
				e3_journal_revoke(img->journal, ea);
			ext2fs_block_alloc_stats2(fs, ea, -1);
		}
		ext2fs_file_acl_block_set(fs, inode, 0);
	}
	inode->i_links_count = 0;
	if (is_dir)
		inode->i_size = 0;
	/* the image's clock when fixed. At 0 e2fsck would take dtime 0 for
	 * a deleted inode nobody stamped, and one below the inode count for
	 * an orphan-list link (unless the superblock's times are that low,
	 * which 0 does not count as): the inode count is the smallest that
	 * reads as a time. */
	inode->i_dtime = img->clock > 0 ? (__u32)img->clock :
			 img->clock == 0 ? fs->super->s_inodes_count :
			 (__u32)time(NULL);
	err = ext2fs_write_inode(fs, ino, inode);
	if (!err)
		e3_ifree(fs, ino, is_dir);
	return err;
}

static errcode_t remove_locked(struct e3_image *img, ext2_ino_t dir,
			       const char *name)
{
	ext2_filsys fs = img->fs;
	struct ext2_inode inode;
	ext2_ino_t ino;
	blk64_t lblk;
	errcode_t err;

	err = e3_dc_find(img, dir, name, &ino, &lblk);
	if (err)
		return err == EXT2_ET_FILE_NOT_FOUND ? E3_NOT_FOUND : err;
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (LINUX_S_ISDIR(inode.i_mode))
		return E3_IS_DIR;
	/* its close would commit blocks and a size into a freed inode */
	if (inode.i_links_count <= 1 && e3_load_file_is_open(img, ino))
		return E3_FILE_BUSY;
	if (inode.i_links_count <= 1 && (err = e3_inode_owns_blocks(img, ino, &inode)))
		return err;
	if ((err = e3_dc_dir_owned(img, dir)))	/* its block is written */
		return err;
	/* the entry was found in its block (by the htree, or the dircache's
	 * hint): only that block is read again */
	if (lblk != E3_DIR_BLOCK_UNKNOWN) {
		err = e3_dir_unlink_at(fs, dir, lblk, name, ino);
		if (!err)
			e3_dc_unlinked(img, dir, name, lblk);
		else
			e3_dc_forget(img, dir);
	} else {
		err = ext2fs_unlink(fs, dir, name, ino, 0);
		e3_dc_forget(img, dir);
	}
	if (err)
		return err;
	if (inode.i_links_count > 1) {
		inode.i_links_count--;
		err = ext2fs_write_inode(fs, ino, &inode);
		if (err) {
			/* the entry comes back, or the removal never commits */
			e3_undo_begin(img);
			if (e3_dir_add(fs, dir, name, ino, inode.i_mode))
				e3_op_poison(img, err);
		}
		return err;
	}
	err = e3_inode_release(img, ino, &inode, 0);
	if (err) {
		/* Half freed, and its blocks revoked: the revokes drop them
		 * from the checkpoint, so the file cannot simply come back
		 * under its name. Never commit any of it. */
		e3_undo_begin(img);
		e3_op_poison(img, err);
	}
	return err;
}

errcode_t e3_remove(e3_image_t *img, ext2_ino_t dir, const char *name)
{
	errcode_t err, err2 = 0;

	if (!name || !*name || strchr(name, '/'))
		return E3_BAD_NAME;
	if ((err = e3_check_writable(img)))	/* also: not clean on disk
						   first (no journal) */
		return err;
	e3_fs_lock(img);
	err = remove_locked(img, dir, name);
	/* e3_op_end, not the journal's own: while files are being written
	 * its hold keeps timed commits from making them durable empty */
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}
