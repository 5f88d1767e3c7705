/*
 * cmd_filefrag.c: filefrag [-d] [-v] [-r] [FILE] in debugfs' text — a
 * file's contiguous extents (a run breaks where the next logical block
 * is not the next physical one; indirect blocks are not counted, so a
 * file whose map blocks sit in line with its data still counts one
 * break per indirect block), or each entry of a directory (-d: the
 * directory itself; -r: into subdirectories, breadth first). The
 * e2fsck-order runs with their break causes are a later view (runs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"

#define FF_VERBOSE	0x1
#define FF_DIR		0x2
#define FF_RECURSE	0x4

struct ff_dir {
	char *name;
	ext2_ino_t ino;
	struct ff_dir *next;
};

struct ff {
	struct dbg *d;
	int opts;
	int lwidth, pwidth;
	const char *name, *dir_name;
	int ext;
	e2_blkcnt_t num, lstart;
	blk64_t pstart, expected;
	struct ff_dir *queue, *last;
};

static int digits(unsigned long long v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

static void flush_run(struct ff *f)
{
	if (!f->num)
		return;
	if (f->opts & FF_VERBOSE) {
		fprintf(f->d->out, "%4d %*lu %*llu ", f->ext, f->lwidth,
			(unsigned long)f->lstart, f->pwidth,
			(unsigned long long)f->pstart);
		if (f->expected)
			fprintf(f->d->out, "%*llu", f->pwidth,
				(unsigned long long)f->expected);
		else
			fprintf(f->d->out, "%*s", f->pwidth, "");
		fprintf(f->d->out, " %*lu\n", f->lwidth, (unsigned long)f->num);
	}
	f->ext++;
}

static int run_proc(ext2_filsys fs, blk64_t *blk, e2_blkcnt_t cnt,
		    blk64_t ref, int ref_off, void *priv)
{
	struct ff *f = priv;

	(void)fs;
	(void)ref;
	(void)ref_off;
	if (cnt < 0 || !*blk)
		return 0;
	if (f->num && cnt == f->lstart + f->num && *blk == f->pstart + (blk64_t)f->num) {
		f->num++;
		return 0;
	}
	flush_run(f);
	f->expected = f->num && cnt == f->lstart + f->num ?
		      f->pstart + (blk64_t)f->num : 0;
	f->lstart = cnt;
	f->pstart = *blk;
	f->num = 1;
	return 0;
}

static void one_file(struct ff *f, ext2_ino_t ino, struct ext2_inode *in)
{
	unsigned bs = f->d->fs->blocksize;
	errcode_t err;

	f->lwidth = digits((EXT2_I_SIZE(in) + bs - 1) / bs);
	if (f->lwidth < 7)
		f->lwidth = 7;
	f->ext = 0;
	f->num = 0;
	f->lstart = 0;
	f->pstart = 0;
	if (f->opts & FF_VERBOSE) {
		fprintf(f->d->out, "\n%s has %llu block(s), i_size is %llu\n",
			f->name, (unsigned long long)
			(ext2fs_inode_i_blocks(f->d->fs, in) / (bs / 512)),
			(unsigned long long)EXT2_I_SIZE(in));
		fprintf(f->d->out, "%4s %*s %*s %*s %*s\n", "ext", f->lwidth,
			"logical", f->pwidth, "physical", f->pwidth, "expected",
			f->lwidth, "length");
	}
	/* a fast symlink's i_block holds its target, not blocks */
	err = !ext2fs_inode_has_valid_blocks2(f->d->fs, in) ? 0 :
	      ext2fs_block_iterate3(f->d->fs, ino, BLOCK_FLAG_READ_ONLY, NULL,
				    run_proc, f);
	if (err)
		dbg_fail(f->d, err, "%s", f->name);
	flush_run(f);
	fprintf(f->d->out, "%s: %d contiguous extents%s\n", f->name, f->ext,
		LINUX_S_ISDIR(in->i_mode) ? " (dir)" : "");
}

static int dir_proc(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
		    int offset, int blocksize, char *buf, void *priv)
{
	struct ff *f = priv;
	struct ext2_inode in;
	int len = ext2fs_dirent_name_len(de);
	char *path;

	(void)dir;
	(void)offset;
	(void)blocksize;
	(void)buf;
	if (entry == DIRENT_DELETED_FILE || entry == DIRENT_DOT_FILE ||
	    entry == DIRENT_DOT_DOT_FILE)
		return 0;
	if (asprintf(&path, "%s/%.*s", f->dir_name, len, de->name) < 0)
		return DIRENT_ABORT;
	if (ext2fs_read_inode(f->d->fs, de->inode, &in)) {
		dbg_fail(f->d, EXT2_ET_BAD_INODE_NUM, "%s", path);
		free(path);
		return 0;
	}
	f->name = path;
	one_file(f, de->inode, &in);
	if ((f->opts & FF_RECURSE) && LINUX_S_ISDIR(in.i_mode)) {
		struct ff_dir *q = calloc(1, sizeof(*q));

		if (q) {
			q->name = path;
			q->ino = de->inode;
			if (f->last)
				f->last->next = q;
			else
				f->queue = q;
			f->last = q;
			return 0;
		}
	}
	free(path);
	return 0;
}

static void each_entry(struct ff *f, ext2_ino_t ino)
{
	char *owned = NULL;	/* the queued path being listed */
	errcode_t err;

	f->dir_name = f->name;
	for (;;) {
		struct ff_dir *q;

		err = ext2fs_dir_iterate2(f->d->fs, ino, 0, NULL, dir_proc, f);
		if (err)
			dbg_fail(f->d, err, "%s", f->dir_name);
		free(owned);
		if (!(q = f->queue))
			break;
		f->queue = q->next;
		if (!f->queue)
			f->last = NULL;
		ino = q->ino;
		f->dir_name = owned = q->name;
		free(q);
	}
}

DBG_CMD(do_filefrag)
{
	struct dbg *d = dbg_of(info);
	struct ff f = { .d = d };
	struct ext2_inode in;
	ext2_ino_t ino;
	int c;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "dvr")) != -1) {
		switch (c) {
		case 'd': f.opts |= FF_DIR; break;
		case 'v': f.opts |= FF_VERBOSE; break;
		case 'r': f.opts |= FF_RECURSE; break;
		default:
			dbg_fail(d, 0, "usage: filefrag [-dvr] [FILE]");
			return;
		}
	}
	if (argc > optind + 1) {
		dbg_fail(d, 0, "usage: filefrag [-dvr] [FILE]");
		return;
	}
	f.name = argc == optind ? "." : argv[optind];
	ino = argc == optind ? d->cwd : dbg_inode(d, argv[optind]);
	if (!ino)
		return;
	if (ext2fs_read_inode(d->fs, ino, &in)) {
		dbg_fail(d, EXT2_ET_BAD_INODE_NUM, "%s", f.name);
		return;
	}
	f.pwidth = digits(ext2fs_blocks_count(d->fs->super));
	if (f.pwidth < 8)
		f.pwidth = 8;
	if (!LINUX_S_ISDIR(in.i_mode) || (f.opts & FF_DIR))
		one_file(&f, ino, &in);
	else
		each_entry(&f, ino);
	fprintf(d->out, "\n");
}
