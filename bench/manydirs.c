/*
 * manydirs.c: gives one directory of an unmounted image N empty
 * subdirectories, fast, through libext2fs directly — to build the
 * "more than 65,000 subdirectories" images e3fsck's link-count checks are
 * tested on (tests/fsck_repair.bats: 65,600 of them in about 2 s).
 * Our writers refuse a directory's 32,001st link, as the kernel's ext3
 * driver does, and mke2fs -d links each name by a linear scan (minutes
 * for 65,000); this writer appends the entries block after block.
 *   manydirs IMAGE DIR N [LINKS]
 * DIR must exist and not be indexed. Its i_links_count becomes LINKS
 * when given, else what a 16-bit counter holds after N more links (the
 * wrap a writer without a limit leaves: 65,602 stored as 66).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ext2fs/ext2fs.h>

static int fail(const char *img, const char *what, errcode_t err)
{
	fprintf(stderr, "manydirs: %s: %s: %s\n", img, what, error_message(err));
	return 8;
}

/* One new directory: inode and its block ('.' and '..'). */
static errcode_t new_dir(ext2_filsys fs, ext2_ino_t parent, blk64_t *goal,
			 ext2_ino_t *ret)
{
	struct ext2_inode in;
	char *buf = NULL;
	ext2_ino_t ino;
	blk64_t blk;
	errcode_t err;

	err = ext2fs_new_inode(fs, parent, LINUX_S_IFDIR | 0755, 0, &ino);
	if (!err)
		err = ext2fs_new_block2(fs, *goal, NULL, &blk);
	if (!err)
		err = ext2fs_new_dir_block(fs, ino, parent, &buf);
	if (!err)
		err = ext2fs_write_dir_block4(fs, blk, buf, 0, ino);
	ext2fs_free_mem(&buf);
	if (err)
		return err;
	ext2fs_inode_alloc_stats2(fs, ino, +1, 1);
	ext2fs_block_alloc_stats2(fs, blk, +1);
	memset(&in, 0, sizeof(in));
	in.i_mode = LINUX_S_IFDIR | 0755;
	in.i_links_count = 2;
	in.i_size = fs->blocksize;
	in.i_blocks = fs->blocksize / 512;
	in.i_block[0] = blk;
	in.i_atime = in.i_ctime = in.i_mtime = fs->now ? fs->now : 1;
	*goal = blk + 1;
	*ret = ino;
	return ext2fs_write_new_inode(fs, ino, &in);
}

int main(int argc, char **argv)
{
	const char *img, *dir;
	unsigned long n, i, links = 0;
	ext2_filsys fs;
	ext2_ino_t parent, ino;
	struct ext2_inode pin;
	blk64_t goal, lblk, blk;
	unsigned off = 0, last = 0;
	char *buf;
	errcode_t err;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: manydirs IMAGE DIR N [LINKS]\n");
		return 16;
	}
	img = argv[1];
	dir = argv[2];
	n = strtoul(argv[3], NULL, 10);
	if (argc == 5)
		links = strtoul(argv[4], NULL, 10);
	initialize_ext2_error_table();
	err = ext2fs_open(img, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			  unix_io_manager, &fs);
	if (err)
		return fail(img, "open", err);
	err = ext2fs_read_bitmaps(fs);
	if (!err)
		err = ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, dir, &parent);
	if (!err)
		err = ext2fs_read_inode(fs, parent, &pin);
	if (err)
		return fail(img, dir, err);
	if (!LINUX_S_ISDIR(pin.i_mode) || (pin.i_flags & EXT2_INDEX_FL)) {
		fprintf(stderr, "manydirs: %s: %s: not an unindexed directory\n",
			img, dir);
		return 8;
	}
	buf = calloc(1, fs->blocksize);
	if (!buf)
		return 8;
	lblk = EXT2_I_SIZE(&pin) / fs->blocksize;
	ext2fs_bmap2(fs, parent, &pin, NULL, 0, lblk - 1, NULL, &goal);
	for (i = 0; i < n; i++) {
		struct ext2_dir_entry *de;
		char name[16];
		unsigned len = snprintf(name, sizeof(name), "%lx", i);
		unsigned rec = EXT2_DIR_REC_LEN(len);

		err = new_dir(fs, parent, &goal, &ino);
		if (err)
			return fail(img, "new directory", err);
		if (off + rec > fs->blocksize) {
			/* the last entry takes the rest of the block */
			de = (void *)(buf + last);
			de->rec_len = fs->blocksize - last;
			/* claimed before bmap2 allocates an indirect block */
			err = ext2fs_new_block2(fs, goal, NULL, &blk);
			if (!err)
				ext2fs_block_alloc_stats2(fs, blk, +1);
			if (!err)
				err = ext2fs_write_dir_block4(fs, blk, buf, 0, parent);
			if (!err)
				err = ext2fs_bmap2(fs, parent, &pin, NULL, BMAP_SET | BMAP_ALLOC,
						   lblk, NULL, &blk);
			if (err)
				return fail(img, "directory block", err);
			ext2fs_iblk_add_blocks(fs, &pin, 1);
			goal = blk + 1;
			lblk++;
			memset(buf, 0, fs->blocksize);
			off = 0;
		}
		de = (void *)(buf + off);
		de->inode = ino;
		de->rec_len = rec;
		ext2fs_dirent_set_name_len(de, len);
		ext2fs_dirent_set_file_type(de, EXT2_FT_DIR);
		memcpy(de->name, name, len);
		last = off;
		off += rec;
	}
	if (off) {
		struct ext2_dir_entry *de = (void *)(buf + last);

		de->rec_len = fs->blocksize - last;
		err = ext2fs_new_block2(fs, goal, NULL, &blk);
		if (!err)
			ext2fs_block_alloc_stats2(fs, blk, +1);
		if (!err)
			err = ext2fs_write_dir_block4(fs, blk, buf, 0, parent);
		if (!err)
			err = ext2fs_bmap2(fs, parent, &pin, NULL, BMAP_SET | BMAP_ALLOC, lblk,
					   NULL, &blk);
		if (err)
			return fail(img, "directory block", err);
		ext2fs_iblk_add_blocks(fs, &pin, 1);
		lblk++;
	}
	/* pin has the pointers and the indirect blocks bmap2 added (and
	 * counted in i_blocks); the data blocks are counted above */
	pin.i_size = lblk * fs->blocksize;
	pin.i_links_count = argc == 5 ? (uint16_t)links :
			    (uint16_t)(pin.i_links_count + n);
	err = ext2fs_write_inode(fs, parent, &pin);
	if (!err)
		err = ext2fs_close_free(&fs);
	free(buf);
	if (err)
		return fail(img, "write", err);
	return 0;
}
