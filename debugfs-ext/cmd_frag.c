/*
 * cmd_frag.c: `frag [-n N] [DIR]` — the worst N files (default 10) by
 * excess runs, then runs, with the totals e3fsck --layout prints (files
 * with blocks, total runs, excess runs, non-contiguous files and
 * directories), all counted by lib/inspect's e3_runs so the figures are
 * e3fsck's. Without DIR every inode in use is counted, as e3fsck does
 * (the journal among them, the resize inode not); with DIR, the inodes
 * under it, each once however many links it has.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"

struct frag_file {
	struct e3_layout_file lf;
	char *path;			/* NULL: found later, if wanted */
};

struct frag {
	struct dbg *d;
	struct frag_file *worst;	/* sorted, at most n */
	unsigned n, have;
	uint64_t files, runs, excess;
	uint32_t noncontig_files, noncontig_dirs;
	ext2fs_inode_bitmap seen;	/* DIR: inodes counted */
	errcode_t err;
};

/* a before b in the list: more excess runs, then more runs */
static int worse(const struct e3_layout_file *a, const struct e3_layout_file *b)
{
	return a->excess != b->excess ? a->excess > b->excess : a->runs > b->runs;
}

static void keep(struct frag *f, const struct e3_layout_file *lf,
		 const char *path)
{
	unsigned i = f->have;

	if (!f->n || lf->runs < 2 || (i == f->n && !worse(lf, &f->worst[i - 1].lf)))
		return;
	if (i == f->n)
		free(f->worst[--i].path);
	else
		f->have++;
	for (; i > 0 && worse(lf, &f->worst[i - 1].lf); i--)
		f->worst[i] = f->worst[i - 1];
	f->worst[i].lf = *lf;
	f->worst[i].path = path ? strdup(path) : NULL;
}

/* One inode's runs into the totals, as e3fsck's account_layout. */
static void count(struct frag *f, ext2_ino_t ino, struct ext2_inode *in,
		  const char *path)
{
	ext2_filsys fs = f->d->fs;
	struct e3_runs r;
	struct e3_layout_file lf;

	if (ino == EXT2_RESIZE_INO || !ext2fs_inode_has_valid_blocks2(fs, in))
		return;
	e3_runs_init(&r, fs->super);
	if (e3_runs_of_inode(fs, ino, in, &r))
		return;		/* a damaged map: e3fsck's business */
	if (r.fragmented && r.nblocks < fs->super->s_blocks_per_group) {
		if (LINUX_S_ISDIR(in->i_mode))
			f->noncontig_dirs++;
		else
			f->noncontig_files++;
	}
	if (!r.nblocks)
		return;
	memset(&lf, 0, sizeof(lf));
	lf.ino = ino;
	e3_runs_figures(&r, &lf);
	f->files++;
	f->runs += lf.runs;
	f->excess += lf.excess;
	keep(f, &lf, path);
}

/* Whole filesystem: every inode in use. */
static errcode_t scan_all(struct frag *f)
{
	ext2_filsys fs = f->d->fs;
	ext2_inode_scan scan;
	struct ext2_inode in;
	ext2_ino_t ino;
	errcode_t err;

	if ((err = ext2fs_open_inode_scan(fs, 0, &scan)))
		return err;
	while (!(err = ext2fs_get_next_inode(scan, &ino, &in)) && ino) {
		if (ino >= EXT2_FIRST_INO(fs->super) &&
		    (!in.i_links_count || in.i_dtime))
			continue;
		if (ino < EXT2_FIRST_INO(fs->super) && ino != EXT2_ROOT_INO &&
		    ino != fs->super->s_journal_inum)
			continue;
		count(f, ino, &in, NULL);
	}
	ext2fs_close_inode_scan(scan);
	return err;
}

struct tree {
	struct frag *f;
	char *path;
};

static errcode_t walk_dir(struct frag *f, ext2_ino_t dir, const char *path);

static int tree_entry(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
		      int offset, int blocksize, char *buf, void *priv)
{
	struct tree *t = priv;
	struct frag *f = t->f;
	int len = ext2fs_dirent_name_len(de);
	struct ext2_inode in;
	char *path;

	(void)dir; (void)entry; (void)offset; (void)blocksize; (void)buf;
	if ((len == 1 && de->name[0] == '.') ||
	    (len == 2 && de->name[0] == '.' && de->name[1] == '.') ||
	    !de->inode || ext2fs_test_inode_bitmap2(f->seen, de->inode))
		return 0;
	ext2fs_mark_inode_bitmap2(f->seen, de->inode);
	if (ext2fs_read_inode(f->d->fs, de->inode, &in))
		return 0;
	if (asprintf(&path, "%s/%.*s", strcmp(t->path, "/") ? t->path : "",
		     len, de->name) < 0) {
		f->err = ENOMEM;
		return DIRENT_ABORT;
	}
	count(f, de->inode, &in, path);
	if (LINUX_S_ISDIR(in.i_mode))
		f->err = walk_dir(f, de->inode, path);
	free(path);
	return f->err ? DIRENT_ABORT : 0;
}

static errcode_t walk_dir(struct frag *f, ext2_ino_t dir, const char *path)
{
	struct tree t = { f, (char *)path };
	errcode_t err;

	err = ext2fs_dir_iterate2(f->d->fs, dir, 0, NULL, tree_entry, &t);
	return err ? err : f->err;
}

/* DIR: itself and everything under it. */
static errcode_t scan_tree(struct frag *f, ext2_ino_t dir, const char *path)
{
	struct ext2_inode in;
	errcode_t err;

	if ((err = ext2fs_read_inode(f->d->fs, dir, &in)))
		return err;
	if (!LINUX_S_ISDIR(in.i_mode))
		return EXT2_ET_NO_DIRECTORY;
	if ((err = ext2fs_allocate_inode_bitmap(f->d->fs, "frag", &f->seen)))
		return err;
	ext2fs_mark_inode_bitmap2(f->seen, dir);
	count(f, dir, &in, path);
	err = walk_dir(f, dir, path);
	ext2fs_free_inode_bitmap(f->seen);
	return err;
}

static void print_frag(struct frag *f)
{
	FILE *out = f->d->out;

	fprintf(out, "%7s %6s %6s %10s %10s  %s\n", "EXCESS", "RUNS", "GROUPS",
		"BLOCKS", "INODE", "PATH");
	for (unsigned i = 0; i < f->have; i++) {
		struct frag_file *w = &f->worst[i];

		if (!w->path)
			w->path = dbg_path_of(f->d->fs, w->lf.ino);
		fprintf(out, "%7u %6u %6u %10llu %10u  %s\n", w->lf.excess,
			w->lf.runs, w->lf.groups, (unsigned long long)w->lf.blocks,
			w->lf.ino, w->path ? w->path : "?");
	}
	fprintf(out, "files with blocks: %llu, total runs: %llu, excess runs: "
		"%llu, non-contiguous: %u files, %u directories\n",
		(unsigned long long)f->files, (unsigned long long)f->runs,
		(unsigned long long)f->excess, f->noncontig_files,
		f->noncontig_dirs);
}

DBG_CMD(do_frag)
{
	struct dbg *d = dbg_of(info);
	struct frag f = { .d = d, .n = 10 };
	unsigned long long n;
	ext2_ino_t dir = 0;
	errcode_t err;
	int c;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "n:")) != -1) {
		if (c != 'n' || dbg_number(d, optarg, "count", &n) ||
		    n > 100000) {
			if (!d->failed)
				dbg_fail(d, 0, "usage: frag [-n N] [DIR]");
			return;
		}
		f.n = (unsigned)n;
	}
	if (dbg_args(d, argc - optind + 1, 1, 2, "frag [-n N] [DIR]"))
		return;
	if (optind < argc && !(dir = dbg_inode(d, argv[optind])))
		return;
	if (!(f.worst = calloc(f.n + 1, sizeof(*f.worst)))) {
		dbg_fail(d, ENOMEM, "frag");
		return;
	}
	err = dir ? scan_tree(&f, dir, argv[optind]) : scan_all(&f);
	if (err)
		dbg_fail(d, err, "%s", dir ? argv[optind] : "reading the inodes");
	else
		print_frag(&f);
	for (unsigned i = 0; i < f.have; i++)
		ext2fs_free_mem(&f.worst[i].path);
	free(f.worst);
}
