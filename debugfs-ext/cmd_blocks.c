/*
 * cmd_blocks.c: blocks and inodes by number — bmap FILE LBLK, icheck
 * BLOCK... (which inode owns each), ncheck [-c] INODE... (the names of
 * each), testb BLOCK [COUNT], testi FILE, ffb [COUNT [GOAL]], ffi [DIR
 * [MODE]]. Text as debugfs prints it, except that ncheck names an entry
 * of the root "/name" where debugfs prints "//name".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"

DBG_CMD(do_bmap)
{
	struct dbg *d = dbg_of(info);
	unsigned long long lblk;
	blk64_t pblk = 0;
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 3, 3, "bmap FILE LOGICAL_BLOCK"))
		return;
	if (!(ino = dbg_inode(d, argv[1])) || dbg_number(d, argv[2], "block", &lblk))
		return;
	err = ext2fs_bmap2(d->fs, ino, NULL, NULL, 0, lblk, NULL, &pblk);
	if (err)
		dbg_fail(d, err, "%s: block %llu", argv[1], lblk);
	else
		fprintf(d->out, "%llu\n", (unsigned long long)pblk);
}

/* ---- icheck: one pass over every inode's blocks ---- */

struct icheck {
	blk64_t *blocks;
	ext2_ino_t *owner;
	size_t n, left;
	ext2_ino_t ino;
};

static void icheck_mark(struct icheck *ic, blk64_t blk)
{
	for (size_t i = 0; i < ic->n; i++)
		if (ic->blocks[i] == blk && !ic->owner[i]) {
			ic->owner[i] = ic->ino;
			ic->left--;
		}
}

static int icheck_proc(ext2_filsys fs, blk64_t *blk, e2_blkcnt_t cnt,
		       blk64_t ref, int ref_off, void *priv)
{
	struct icheck *ic = priv;

	(void)fs;
	(void)cnt;
	(void)ref;
	(void)ref_off;
	icheck_mark(ic, *blk);
	return ic->left ? 0 : BLOCK_ABORT;
}

static errcode_t icheck_scan(struct dbg *d, struct icheck *ic)
{
	ext2_inode_scan scan;
	struct ext2_inode inode;
	ext2_ino_t ino;
	errcode_t err = ext2fs_open_inode_scan(d->fs, 0, &scan);

	if (err)
		return err;
	while (ic->left && !(err = ext2fs_get_next_inode(scan, &ino, &inode)) && ino) {
		blk64_t ea = ext2fs_file_acl_block(d->fs, &inode);

		if (!inode.i_links_count || inode.i_dtime)
			continue;
		ic->ino = ino;
		if (ea)
			icheck_mark(ic, ea);
		if (!ext2fs_inode_has_valid_blocks2(d->fs, &inode))
			continue;
		err = ext2fs_block_iterate3(d->fs, ino, BLOCK_FLAG_READ_ONLY,
					    NULL, icheck_proc, ic);
		if (err)
			break;
	}
	ext2fs_close_inode_scan(scan);
	return err;
}

DBG_CMD(do_icheck)
{
	struct dbg *d = dbg_of(info);
	struct icheck ic = { 0 };
	errcode_t err;

	if (dbg_args(d, argc, 2, 1 << 20, "icheck BLOCK..."))
		return;
	ic.n = (size_t)argc - 1;
	ic.blocks = calloc(ic.n, sizeof(*ic.blocks));
	ic.owner = calloc(ic.n, sizeof(*ic.owner));
	if (!ic.blocks || !ic.owner) {
		dbg_fail(d, ENOMEM, NULL);
		goto out;
	}
	for (size_t i = 0; i < ic.n; i++) {
		unsigned long long b;

		if (dbg_number(d, argv[i + 1], "block", &b))
			goto out;
		ic.blocks[i] = b;
	}
	ic.left = ic.n;
	err = icheck_scan(d, &ic);
	if (err) {
		dbg_fail(d, err, "inode scan");
		goto out;
	}
	fprintf(d->out, "Block\tInode number\n");
	for (size_t i = 0; i < ic.n; i++) {
		if (ic.owner[i])
			fprintf(d->out, "%llu\t%u\n",
				(unsigned long long)ic.blocks[i], ic.owner[i]);
		else
			fprintf(d->out, "%llu\t<block not found>\n",
				(unsigned long long)ic.blocks[i]);
	}
out:
	free(ic.blocks);
	free(ic.owner);
}

/* ---- ncheck: every directory's entries, in inode order ---- */

struct ncheck {
	struct dbg *d;
	ext2_ino_t *want;
	size_t n;
	int check_type;
	ext2_ino_t dir;
	errcode_t err;
};

static int file_type(uint16_t mode)
{
	if (LINUX_S_ISREG(mode)) return EXT2_FT_REG_FILE;
	if (LINUX_S_ISDIR(mode)) return EXT2_FT_DIR;
	if (LINUX_S_ISCHR(mode)) return EXT2_FT_CHRDEV;
	if (LINUX_S_ISBLK(mode)) return EXT2_FT_BLKDEV;
	if (LINUX_S_ISLNK(mode)) return EXT2_FT_SYMLINK;
	if (LINUX_S_ISFIFO(mode)) return EXT2_FT_FIFO;
	if (LINUX_S_ISSOCK(mode)) return EXT2_FT_SOCK;
	return 0;
}

static int ncheck_proc(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
		       int offset, int blocksize, char *buf, void *priv)
{
	struct ncheck *nc = priv;
	int len = ext2fs_dirent_name_len(de);
	char *path = NULL;

	(void)dir;
	(void)offset;
	(void)blocksize;
	(void)buf;
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE)
		return 0;
	for (size_t i = 0; i < nc->n; i++) {
		if (nc->want[i] != de->inode)
			continue;
		nc->err = ext2fs_get_pathname(nc->d->fs, nc->dir, 0, &path);
		if (nc->err)
			return DIRENT_ABORT;
		fprintf(nc->d->out, "%u\t%s%s%.*s", de->inode,
			strcmp(path, "/") ? path : "", "/", len, de->name);
		if (nc->check_type) {
			struct ext2_inode in;

			if (!ext2fs_read_inode(nc->d->fs, de->inode, &in) &&
			    ext2fs_dirent_file_type(de) != file_type(in.i_mode))
				fprintf(nc->d->out, "  <--- BAD FILETYPE");
		}
		fputc('\n', nc->d->out);
		ext2fs_free_mem(&path);
		break;
	}
	return 0;
}

static errcode_t ncheck_scan(struct ncheck *nc)
{
	ext2_filsys fs = nc->d->fs;
	ext2_inode_scan scan;
	struct ext2_inode inode;
	ext2_ino_t ino;
	errcode_t err = ext2fs_open_inode_scan(fs, 0, &scan);

	if (err)
		return err;
	while (!(err = ext2fs_get_next_inode(scan, &ino, &inode)) && ino) {
		if (!inode.i_links_count || inode.i_dtime ||
		    !LINUX_S_ISDIR(inode.i_mode))
			continue;
		nc->dir = ino;
		err = ext2fs_dir_iterate2(fs, ino, 0, NULL, ncheck_proc, nc);
		if (!err)
			err = nc->err;
		if (err)
			break;
	}
	ext2fs_close_inode_scan(scan);
	return err;
}

DBG_CMD(do_ncheck)
{
	struct dbg *d = dbg_of(info);
	struct ncheck nc = { .d = d };
	int c;
	errcode_t err;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "c")) != -1) {
		if (c != 'c') {
			dbg_fail(d, 0, "usage: ncheck [-c] INODE...");
			return;
		}
		nc.check_type = 1;
	}
	if (optind >= argc) {
		dbg_fail(d, 0, "usage: ncheck [-c] INODE...");
		return;
	}
	nc.n = (size_t)(argc - optind);
	nc.want = calloc(nc.n, sizeof(*nc.want));
	if (!nc.want) {
		dbg_fail(d, ENOMEM, NULL);
		return;
	}
	for (size_t i = 0; i < nc.n; i++) {
		unsigned long long v;

		if (dbg_number(d, argv[optind + (int)i], "inode number", &v)) {
			free(nc.want);
			return;
		}
		nc.want[i] = (ext2_ino_t)v;
	}
	fprintf(d->out, "Inode\tPathname\n");
	err = ncheck_scan(&nc);
	if (err)
		dbg_fail(d, err, "directory scan");
	free(nc.want);
}

/* ---- bitmaps ---- */

DBG_CMD(do_testb)
{
	struct dbg *d = dbg_of(info);
	unsigned long long blk, count = 1;

	if (dbg_args(d, argc, 2, 3, "testb BLOCK [COUNT]") || dbg_need_bitmaps(d))
		return;
	if (dbg_number(d, argv[1], "block", &blk) ||
	    (argc == 3 && dbg_number(d, argv[2], "count", &count)))
		return;
	if (blk < d->fs->super->s_first_data_block ||
	    blk + count > ext2fs_blocks_count(d->fs->super)) {
		dbg_fail(d, 0, "block %llu (count %llu) is outside the filesystem",
			 blk, count);
		return;
	}
	for (; count; count--, blk++)
		fprintf(d->out, "Block %llu %s\n", blk,
			ext2fs_test_block_bitmap2(d->fs->block_map, blk) ?
			"marked in use" : "not in use");
}

DBG_CMD(do_testi)
{
	struct dbg *d = dbg_of(info);
	ext2_ino_t ino;

	if (dbg_args(d, argc, 2, 2, "testi FILE") || dbg_need_bitmaps(d))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	fprintf(d->out, "Inode %u is %s\n", ino,
		ext2fs_test_inode_bitmap2(d->fs->inode_map, ino) ?
		"marked in use" : "not in use");
}

DBG_CMD(do_ffb)
{
	struct dbg *d = dbg_of(info);
	unsigned long long count = 1, goal = d->fs->super->s_first_data_block;
	blk64_t blk;
	errcode_t err;

	if (dbg_args(d, argc, 1, 3, "ffb [COUNT [GOAL]]") || dbg_need_bitmaps(d))
		return;
	if ((argc > 1 && dbg_number(d, argv[1], "count", &count)) ||
	    (argc > 2 && dbg_number(d, argv[2], "goal", &goal)))
		return;
	fprintf(d->out, "Free blocks found: ");
	blk = goal ? goal - 1 : 0;
	while (count--) {
		err = ext2fs_new_block2(d->fs, blk + 1, NULL, &blk);
		if (err) {
			fputc('\n', d->out);
			dbg_fail(d, err, "find a free block");
			return;
		}
		fprintf(d->out, "%llu ", (unsigned long long)blk);
	}
	fputc('\n', d->out);
}

DBG_CMD(do_ffi)
{
	struct dbg *d = dbg_of(info);
	unsigned long long dir = d->root, mode = 010755;
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 1, 3, "ffi [DIR [MODE]]") || dbg_need_bitmaps(d))
		return;
	if ((argc > 1 && dbg_number(d, argv[1], "dir", &dir)) ||
	    (argc > 2 && dbg_number(d, argv[2], "mode", &mode)))
		return;
	err = ext2fs_new_inode(d->fs, (ext2_ino_t)dir, (int)mode, NULL, &ino);
	if (err)
		dbg_fail(d, err, "find a free inode");
	else
		fprintf(d->out, "Free inode found: %u\n", ino);
}
