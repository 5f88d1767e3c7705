/*
 * namei.c: names in the image — lookup, path walk, and every operation
 * that makes a new name without file data: directories, hard links,
 * symlinks, device nodes, FIFOs and sockets; plus setattr. Each one is an
 * atomic operation done entirely under fs_lock and closed with e3_op_end,
 * so the journal never commits half of one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "load_int.h"
#include "dirfind.h"
#include "alloc/alloc.h"
#include "journal/journal.h"

errcode_t e3_lookup(e3_image_t *img, ext2_ino_t dir, const char *name,
		    ext2_ino_t *ino)
{
	struct ext2_inode di;
	blk64_t lblk;
	errcode_t err;

	if (!name || !*name || strchr(name, '/'))
		return E3_BAD_NAME;
	if (strlen(name) > EXT2_NAME_LEN)
		return E3_NAME_TOO_LONG;
	e3_fs_lock(img);
	if (dir < EXT2_ROOT_INO || dir > img->fs->super->s_inodes_count) {
		err = E3_NOT_FOUND;
		goto out;
	}
	err = ext2fs_read_inode(img->fs, dir, &di);
	if (err)
		goto out;
	if (!LINUX_S_ISDIR(di.i_mode)) {
		err = E3_NOT_DIR;
		goto out;
	}
	err = e3_map_err(e3_dc_find(img, dir, name, ino, &lblk));
out:
	e3_fs_unlock(img);
	return err;
}

errcode_t e3_namei(e3_image_t *img, const char *path, ext2_ino_t *ino)
{
	ext2_ino_t cur = EXT2_ROOT_INO;
	const char *p = path, *end;
	char name[EXT2_NAME_LEN + 1];
	errcode_t err;

	if (!path || *path != '/')
		return E3_BAD_NAME;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchrnul(p, '/');
		if ((size_t)(end - p) > EXT2_NAME_LEN)
			return E3_NAME_TOO_LONG;
		memcpy(name, p, (size_t)(end - p));
		name[end - p] = '\0';
		err = e3_lookup(img, cur, name, &cur);
		if (err)
			return err;
		p = end;
	}
	*ino = cur;
	return 0;
}

/* Adds one to an inode's link count (E3_LINK_LIMIT at ext3's maximum). */
static errcode_t inc_links(ext2_filsys fs, ext2_ino_t ino)
{
	struct ext2_inode inode;
	errcode_t err;

	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (inode.i_links_count >= E3_LINK_MAX)
		return E3_LINK_LIMIT;
	inode.i_links_count++;
	return ext2fs_write_inode(fs, ino, &inode);
}

/* The first block of a directory: "." and "..", written through the I/O
 * channel (metadata, so the journal sees it). */
static errcode_t write_dir_block(ext2_filsys fs, ext2_ino_t ino,
				 ext2_ino_t parent, blk64_t blk)
{
	char *buf = NULL;
	errcode_t err;

	err = ext2fs_new_dir_block(fs, ino, parent, &buf);
	if (err)
		return err;
	err = ext2fs_write_dir_block4(fs, blk, buf, 0, ino);
	ext2fs_free_mem(&buf);
	return err;
}

/* An inode written in an operation that then failed: zero it, since
 * e2fsck judges inodes by their link count, not by the bitmap. */
static errcode_t clear_inode(ext2_filsys fs, ext2_ino_t ino,
			     struct ext2_inode_large *inode)
{
	memset(inode, 0, EXT2_INODE_SIZE(fs->super));
	return ext2fs_write_inode_full(fs, ino, EXT2_INODE(inode),
				       EXT2_INODE_SIZE(fs->super));
}

/* Takes back the entry name -> ino just added to dir. */
static errcode_t undo_entry(struct e3_image *img, ext2_ino_t dir,
			    const char *name, ext2_ino_t ino)
{
	errcode_t err = ext2fs_unlink(img->fs, dir, name, ino, 0);

	e3_dc_forget(img, dir);
	return err;
}

/* The first error of an undo is the one that counts */
static void undo_step(errcode_t *undo, errcode_t err)
{
	if (!*undo)
		*undo = err;
}

/* A metadata block that was allocated and written in this operation and
 * must go again (error path). The allocator's stats hook turns the
 * libext2fs free into a deferred free. */
static void free_meta_block(struct e3_image *img, blk64_t blk)
{
	ext2fs_block_alloc_stats2(img->fs, blk, -1);
	if (img->journal)
		e3_journal_revoke(img->journal, blk);
}

static errcode_t do_mkdir(struct e3_image *img, ext2_ino_t parent,
			  const char *name, const struct e3_attr *attr,
			  ext2_ino_t *ret)
{
	ext2_filsys fs = img->fs;
	struct ext2_inode_large *inode;
	struct blk_alloc_ctx ctx;
	struct e3_attr a = *attr;
	ext2_ino_t ino;
	blk64_t blk = 0;
	errcode_t err, undo = 0;

	a.mode = LINUX_S_IFDIR | (attr->mode & 07777);
	err = e3_inode_new(img, parent, name, &a, 2, &inode, &ino);
	if (err)
		return err;
	memset(&ctx, 0, sizeof(ctx));
	ctx.ino = ino;
	ctx.inode = EXT2_INODE(inode);
	ctx.flags = BLOCK_ALLOC_METADATA;
	err = ext2fs_alloc_block3(fs, ext2fs_find_inode_goal(fs, ino,
				  EXT2_INODE(inode), 0), NULL, &blk, &ctx);
	if (err)
		goto out_ino;
	err = write_dir_block(fs, ino, parent, blk);
	if (err)
		goto out_blk;
	inode->i_block[0] = (uint32_t)blk;
	inode->i_size = fs->blocksize;
	ext2fs_iblk_set(fs, EXT2_INODE(inode), 1);
	err = ext2fs_write_inode_full(fs, ino, EXT2_INODE(inode),
				      EXT2_INODE_SIZE(fs->super));
	if (err)
		goto out_blk;
	err = e3_dir_add(fs, parent, name, ino, LINUX_S_IFDIR);
	if (err)
		goto out_inode;
	err = inc_links(fs, parent);
	if (err) {
		e3_undo_begin(img);
		undo_step(&undo, undo_entry(img, parent, name, ino));
		goto out_inode;
	}
	*ret = ino;
	free(inode);
	return 0;
out_inode:
	e3_undo_begin(img);	/* before the undo reads anything back */
	undo_step(&undo, clear_inode(fs, ino, inode));
out_blk:
	e3_undo_begin(img);
	free_meta_block(img, blk);
out_ino:
	e3_ifree(fs, ino, 1);
	if (undo)
		e3_op_poison(img, err);
	free(inode);
	return err;
}

errcode_t e3_mkdir(e3_image_t *img, ext2_ino_t parent, const char *name,
		   const struct e3_attr *attr, ext2_ino_t *ino)
{
	errcode_t err, err2;
	ext2_ino_t dummy;

	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	err = do_mkdir(img, parent, name, attr, ino ? ino : &dummy);
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

errcode_t e3_link(e3_image_t *img, ext2_ino_t parent, const char *name,
		  ext2_ino_t ino)
{
	ext2_filsys fs;
	struct ext2_inode inode;
	errcode_t err, err2;

	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	fs = img->fs;
	err = e3_check_new_entry(fs, parent, name, 0);
	if (err)
		goto out;
	if (ino < EXT2_FIRST_INODE(fs->super) && ino != EXT2_ROOT_INO) {
		err = E3_NOT_FOUND;
		goto out;
	}
	if (ino > fs->super->s_inodes_count) {
		err = E3_NOT_FOUND;
		goto out;
	}
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		goto out;
	if (inode.i_links_count == 0) {
		err = E3_NOT_FOUND;
		goto out;
	}
	if (LINUX_S_ISDIR(inode.i_mode)) {
		err = E3_IS_DIR;
		goto out;
	}
	if (inode.i_links_count >= E3_LINK_MAX) {
		err = E3_LINK_LIMIT;
		goto out;
	}
	err = e3_dir_add(fs, parent, name, ino, inode.i_mode);
	if (err)
		goto out;
	err = inc_links(fs, ino);
	if (err) {
		e3_undo_begin(img);
		if (undo_entry(img, parent, name, ino))
			e3_op_poison(img, err);
	}
out:
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

/* Creates an inode without data blocks (fast symlink, device, FIFO,
 * socket) or with one block holding content (slow symlink). */
static errcode_t make_node(struct e3_image *img, ext2_ino_t parent,
			   const char *name, const struct e3_attr *attr,
			   const void *content, size_t len, dev_t rdev,
			   ext2_ino_t *ret)
{
	ext2_filsys fs = img->fs;
	struct ext2_inode_large *inode;
	ext2_ino_t ino;
	blk64_t blk = 0;
	char *buf = NULL;
	errcode_t err, undo = 0;

	err = e3_inode_new(img, parent, name, attr, 1, &inode, &ino);
	if (err)
		return err;
	if (LINUX_S_ISCHR(attr->mode) || LINUX_S_ISBLK(attr->mode)) {
		unsigned maj = major(rdev), min = minor(rdev);

		/* the kernel's old 16-bit encoding when it fits, else the
		 * new one in i_block[1] */
		if (maj < 256 && min < 256)
			inode->i_block[0] = (maj << 8) | min;
		else
			inode->i_block[1] = (min & 0xff) | (maj << 8) |
					    ((min & ~0xffu) << 12);
	} else if (LINUX_S_ISLNK(attr->mode)) {
		inode->i_size = (uint32_t)len;
		if (len < sizeof(inode->i_block)) {
			memcpy(inode->i_block, content, len);
		} else {
			struct blk_alloc_ctx ctx = { .ino = ino,
				.inode = EXT2_INODE(inode),
				.flags = BLOCK_ALLOC_DATA };

			err = ext2fs_get_memzero(fs->blocksize, &buf);
			if (err)
				goto out_ino;
			err = ext2fs_alloc_block3(fs, ext2fs_find_inode_goal(fs,
					ino, EXT2_INODE(inode), 0), NULL, &blk, &ctx);
			if (err)
				goto out_ino;
			memcpy(buf, content, len);
			err = io_channel_write_blk64(fs->io, blk, 1, buf);
			if (err)
				goto out_blk;
			inode->i_block[0] = (uint32_t)blk;
			ext2fs_iblk_set(fs, EXT2_INODE(inode), 1);
		}
	}
	err = ext2fs_write_inode_full(fs, ino, EXT2_INODE(inode),
				      EXT2_INODE_SIZE(fs->super));
	if (err)
		goto out_blk;
	err = e3_dir_add(fs, parent, name, ino, attr->mode);
	if (err) {
		e3_undo_begin(img);
		undo_step(&undo, clear_inode(fs, ino, inode));
		goto out_blk;
	}
	*ret = ino;
	ext2fs_free_mem(&buf);
	free(inode);
	return 0;
out_blk:
	e3_undo_begin(img);
	if (blk)
		free_meta_block(img, blk);
out_ino:
	e3_ifree(fs, ino, 0);
	if (undo)
		e3_op_poison(img, err);
	ext2fs_free_mem(&buf);
	free(inode);
	return err;
}

errcode_t e3_symlink(e3_image_t *img, ext2_ino_t parent, const char *name,
		     const char *target, const struct e3_attr *attr,
		     ext2_ino_t *ino)
{
	struct e3_attr a = *attr;
	ext2_ino_t dummy;
	errcode_t err, err2;
	size_t len;

	if ((err = e3_check_writable(img)))
		return err;
	if (!target || !*target)
		return E3_BAD_NAME;
	len = strlen(target);
	a.mode = LINUX_S_IFLNK | 0777;
	e3_fs_lock(img);
	/* the kernel's limit: the target and its NUL fit one block */
	if (len >= img->fs->blocksize)
		err = E3_SYMLINK_TOO_LONG;
	else
		err = make_node(img, parent, name, &a, target, len, 0,
				ino ? ino : &dummy);
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

errcode_t e3_mknod(e3_image_t *img, ext2_ino_t parent, const char *name,
		   const struct e3_attr *attr, dev_t rdev, ext2_ino_t *ino)
{
	ext2_ino_t dummy;
	errcode_t err, err2;

	switch (attr->mode & S_IFMT) {
	case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		break;
	default:
		return E3_BAD_FILE_TYPE;
	}
	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	err = make_node(img, parent, name, attr, NULL, 0, rdev,
			ino ? ino : &dummy);
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	return err ? err : err2;
}

errcode_t e3_setattr(e3_image_t *img, ext2_ino_t ino,
		     const struct e3_attr *attr)
{
	struct ext2_inode_large *inode;
	struct e3_attr a = *attr;
	errcode_t err, err2;
	ext2_filsys fs;

	if ((err = e3_check_writable(img)))
		return err;
	e3_fs_lock(img);
	fs = img->fs;
	inode = e3_inode_alloc(fs);
	if (!inode) {
		e3_fs_unlock(img);
		return ENOMEM;
	}
	if (ino < EXT2_ROOT_INO || ino > fs->super->s_inodes_count) {
		err = E3_NOT_FOUND;
		goto out;
	}
	err = ext2fs_read_inode_full(fs, ino, EXT2_INODE(inode),
				     EXT2_INODE_SIZE(fs->super));
	if (err)
		goto out;
	if (inode->i_links_count == 0) {
		err = E3_NOT_FOUND;
		goto out;
	}
	/* the file type never changes; only its permission bits do */
	a.mode = (inode->i_mode & LINUX_S_IFMT) | (attr->mode & 07777);
	e3_inode_set_attr(fs, inode, &a);
	err = ext2fs_write_inode_full(fs, ino, EXT2_INODE(inode),
				      EXT2_INODE_SIZE(fs->super));
out:
	err2 = e3_op_end(img);
	e3_fs_unlock(img);
	free(inode);
	return err ? err : err2;
}
