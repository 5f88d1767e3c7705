/*
 * shell_ops.c: the few journaled changes e3debugfs needs that the load
 * API lacks — removing an empty directory, writing an inode's fields
 * (set_inode_field), removing an extended attribute, superblock fields
 * (set_super_value), a group descriptor (set_bg), debugfs' kill_file,
 * punching blocks out of a file, committing at the
 * end of a request so that a finished request survives a kill, and the
 * reservation-tree validator as a request (STYLE.md habit 6). Each is one atomic operation under
 * fs_lock ending with e3_op_end, like e3_remove (remove.c), whose
 * error discipline (undo, else poison the transaction) they follow.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "image.h"
#include "journal/journal.h"
#include "load_int.h"
#include "dirfind.h"
#include "alloc/alloc.h"

struct empty_scan {
	int others;			/* entries besides . and .. */
};

static int empty_proc(struct ext2_dir_entry *de, int offset, int blocksize,
		      char *buf, void *priv)
{
	struct empty_scan *s = priv;
	int len = ext2fs_dirent_name_len(de);

	(void)offset;
	(void)blocksize;
	(void)buf;
	if (de->inode == 0)
		return 0;
	if ((len == 1 && de->name[0] == '.') ||
	    (len == 2 && de->name[0] == '.' && de->name[1] == '.'))
		return 0;
	s->others++;
	return DIRENT_ABORT;
}

static errcode_t rmdir_locked(struct e3_image *img, ext2_ino_t dir,
			      const char *name)
{
	ext2_filsys fs = img->fs;
	struct ext2_inode inode, parent;
	struct empty_scan scan = { 0 };
	ext2_ino_t ino;
	blk64_t lblk;
	errcode_t err;

	err = e3_dc_find(img, dir, name, &ino, &lblk);
	if (err)
		return err == EXT2_ET_FILE_NOT_FOUND ? E3_NOT_FOUND : err;
	if ((err = ext2fs_read_inode(fs, ino, &inode)))
		return err;
	if (!LINUX_S_ISDIR(inode.i_mode))
		return E3_NOT_DIR;
	if (ino == EXT2_ROOT_INO)
		return EBUSY;
	err = ext2fs_dir_iterate(fs, ino, 0, NULL, empty_proc, &scan);
	if (err)
		return err;
	if (scan.others)
		return ENOTEMPTY;
	if ((err = e3_map_owned(img, ino, &inode,
				ext2fs_file_acl_block(fs, &inode))))
		return err;
	if ((err = e3_dc_dir_owned(img, dir)))
		return err;
	if ((err = ext2fs_read_inode(fs, dir, &parent)))
		return err;
	if (lblk != E3_DIR_BLOCK_UNKNOWN)
		err = e3_dir_unlink_at(fs, dir, lblk, name, ino);
	else
		err = ext2fs_unlink(fs, dir, name, ino, 0);
	e3_dc_forget(img, dir);
	e3_dc_forget(img, ino);
	if (err)
		return err;
	/* the ".." of the directory going; a count of 1 means "too many
	 * to count" (dir_nlink) and stays */
	if (parent.i_links_count > 2)
		parent.i_links_count--;
	err = ext2fs_write_inode(fs, dir, &parent);
	if (!err)
		err = e3_inode_release(img, ino, &inode, 1);
	if (err) {
		/* part of it done: never commit any of it */
		e3_undo_begin(img);
		e3_op_poison(img, err);
	}
	return err;
}

errcode_t e3_rmdir(e3_image_t *img, ext2_ino_t dir, const char *name)
{
	errcode_t err, err2;

	if ((err = e3_check_name(name)))
		return err;
	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	err = rmdir_locked(img, dir, name);
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

errcode_t e3_inode_write(e3_image_t *img, ext2_ino_t ino,
			 const struct ext2_inode *inode, size_t size)
{
	errcode_t err, err2;
	ext2_filsys fs;

	if ((err = e3_check_writable(img)))
		return err;
	fs = img->fs;
	if (ino < EXT2_ROOT_INO || ino > fs->super->s_inodes_count)
		return EXT2_ET_BAD_INODE_NUM;
	if (size > EXT2_INODE_SIZE(fs->super))
		size = EXT2_INODE_SIZE(fs->super);
	e3_fs_lock(img);
	err = ext2fs_write_inode_full(fs, ino, (struct ext2_inode *)inode,
				      (int)size);
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

errcode_t e3_image_commit(e3_image_t *img)
{
	errcode_t err = 0;

	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	if (img->journal)
		err = e3_journal_commit(img->journal, 0);
	e3_fs_unlock(img);
	return err;
}

errcode_t e3_removexattr(e3_image_t *img, ext2_ino_t ino, const char *name)
{
	struct ext2_xattr_handle *h = NULL;
	struct ext2_inode inode;
	errcode_t err, err2;
	ext2_filsys fs;

	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	fs = img->fs;
	if (ino < EXT2_ROOT_INO || ino > fs->super->s_inodes_count)
		err = E3_NOT_FOUND;
	else if (!(err = ext2fs_read_inode(fs, ino, &inode)) &&
		 inode.i_links_count == 0)
		err = E3_NOT_FOUND;
	if (!err)
		err = ext2fs_xattrs_open(fs, ino, &h);
	if (!err) {
		err = ext2fs_xattrs_read(h);
		if (!err) {
			/* libext2fs says nothing when the name is absent */
			void *v = NULL;
			size_t len;

			err = ext2fs_xattr_get(h, name, &v, &len);
			ext2fs_free_mem(&v);
			if (err == EXT2_ET_EA_KEY_NOT_FOUND)
				err = ENODATA;
		}
		/* a freed EA block reaches the allocator's stats hook, which
		 * revokes it (see remove.c) */
		if (!err)
			err = ext2fs_xattr_remove(h, name);
		err2 = ext2fs_xattrs_close(&h);
		if (!err)
			err = err2;
	}
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

errcode_t e3_super_write(e3_image_t *img, const struct ext2_super_block *sb)
{
	errcode_t err, err2;
	ext2_filsys fs;

	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	fs = img->fs;
	/* what the image is made of is not the caller's to change here */
	if (sb->s_blocks_count != fs->super->s_blocks_count ||
	    sb->s_blocks_count_hi != fs->super->s_blocks_count_hi ||
	    sb->s_inodes_count != fs->super->s_inodes_count ||
	    sb->s_log_block_size != fs->super->s_log_block_size ||
	    sb->s_blocks_per_group != fs->super->s_blocks_per_group ||
	    sb->s_inodes_per_group != fs->super->s_inodes_per_group ||
	    sb->s_first_data_block != fs->super->s_first_data_block ||
	    sb->s_inode_size != fs->super->s_inode_size ||
	    sb->s_magic != fs->super->s_magic ||
	    sb->s_feature_compat != fs->super->s_feature_compat ||
	    sb->s_feature_incompat != fs->super->s_feature_incompat ||
	    sb->s_feature_ro_compat != fs->super->s_feature_ro_compat ||
	    sb->s_journal_inum != fs->super->s_journal_inum) {
		err = E3_BAD_OPTION;
	} else {
		/* the next commit journals the primary superblock from here */
		memcpy(fs->super, sb, sizeof(*sb));
		ext2fs_mark_super_dirty(fs);
	}
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

errcode_t e3_punch(e3_image_t *img, ext2_ino_t ino, uint64_t start,
		   uint64_t end)
{
	struct ext2_inode inode;
	errcode_t err, err2;
	ext2_filsys fs;

	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	fs = img->fs;
	if (ino < EXT2_FIRST_INODE(fs->super) && ino != EXT2_ROOT_INO)
		err = E3_BAD_FILE_TYPE;	/* the journal, resize inode... */
	else if (ino > fs->super->s_inodes_count)
		err = E3_NOT_FOUND;
	else if (!(err = ext2fs_read_inode(fs, ino, &inode)) &&
		 inode.i_links_count == 0)
		err = E3_NOT_FOUND;
	/* a hole in a directory is damage (e2fsck's pass 2 says so) */
	else if (!err && !LINUX_S_ISREG(inode.i_mode))
		err = E3_BAD_FILE_TYPE;
	else if (!err && e3_load_file_is_open(img, ino))
		err = E3_FILE_BUSY;
	/* a damaged map would have punch free what is not the file's */
	if (!err)
		err = e3_map_owned(img, ino, &inode, 0);
	/* freed blocks reach the allocator's stats hook, which revokes
	 * each (see remove.c); punch writes the inode */
	if (!err && ext2fs_inode_has_valid_blocks2(fs, &inode)) {
		err = ext2fs_punch(fs, ino, &inode, NULL, start, end);
		if (err) {
			e3_undo_begin(img);
			e3_op_poison(img, err);
		}
	}
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

errcode_t e3_rsv_check(e3_image_t *img, char *why, size_t whylen,
		       uint64_t *windows, enum e3_alloc_mode *mode)
{
	struct e3_alloc_stats st;

	if (why && whylen)
		why[0] = '\0';
	if (!img->alloc)
		return E3_IMAGE_READONLY;
	e3_alloc_get_stats(img->alloc, &st);
	*windows = st.windows;
	*mode = img->opts.alloc;
	return rsv_tree_check(img->alloc, why, whylen) ? 0 : E3_RSV_TREE_BAD;
}

errcode_t e3_group_desc_write(e3_image_t *img, dgrp_t g,
			      const struct ext2_group_desc *gd, int set_csum)
{
	errcode_t err, err2;
	ext2_filsys fs;

	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	fs = img->fs;
	if (g >= fs->group_desc_count) {
		err = EXT2_ET_INVALID_ARGUMENT;
	} else {
		/* ext3's 32-byte descriptor; the next commit journals the
		 * descriptor block from here */
		memcpy(ext2fs_group_desc(fs, fs->group_desc, g), gd,
		       sizeof(*gd));
		if (set_csum)
			ext2fs_group_desc_csum_set(fs, g);
		ext2fs_mark_super_dirty(fs);
	}
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

errcode_t e3_kill_file(e3_image_t *img, ext2_ino_t ino)
{
	struct ext2_inode inode;
	errcode_t err, err2;
	ext2_filsys fs;
	int is_dir;

	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	fs = img->fs;
	if (ino < EXT2_FIRST_INODE(fs->super) ||
	    ino > fs->super->s_inodes_count) {
		err = E3_BAD_OPTION;	/* the root, the journal... */
		goto out;
	}
	if (!ext2fs_test_inode_bitmap2(fs->inode_map, ino)) {
		err = E3_NOT_FOUND;
		goto out;
	}
	if ((err = ext2fs_read_inode(fs, ino, &inode)))
		goto out;
	if (e3_load_file_is_open(img, ino)) {
		err = E3_FILE_BUSY;
		goto out;
	}
	/* a damaged map would free metadata into the allocator */
	if ((err = e3_inode_owns_blocks(img, ino, &inode)))
		goto out;
	is_dir = LINUX_S_ISDIR(inode.i_mode);
	err = e3_inode_release(img, ino, &inode, is_dir);
	if (err) {
		/* half freed, its blocks revoked: never commit any of it */
		e3_undo_begin(img);
		e3_op_poison(img, err);
	} else if (is_dir) {
		e3_dc_forget(img, ino);
	}
out:
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}
