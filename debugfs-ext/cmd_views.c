/*
 * cmd_views.c: views debugfs lacks, from the inspection layer
 * (e3_inspect.h), so they count exactly as e3fsck --layout and e3defrag:
 *
 *   runs FILE      the file's runs in e2fsck's block order (indirect
 *                  blocks included, in line), each with its logical and
 *                  physical start, length, block group and why it ends:
 *                  a hole in the file, or what holds the block after it
 *                  (free space, group metadata, another block in use);
 *                  then its blocks, runs, groups crossed, excess runs
 *                  and e2fsck's non-contiguous verdict.
 *   map [--text] [-o FILE | FILE]
 *                  the block-map picture of the whole volume: one band
 *                  per block group, coloured by what the blocks hold, as
 *                  SVG, or PNG for a FILE.png (the same cell grid);
 *                  prints the block count of each colour; --text draws
 *                  it in the terminal, one character a cell.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dbg.h"

struct run {
	e2_blkcnt_t lblk;	/* first logical block; < 0: an indirect one */
	blk64_t start, len;
	e2_blkcnt_t next_lblk;	/* the logical block that did not follow */
};

struct runs_walk {
	struct run *v;
	size_t n, cap;
	e2_blkcnt_t last_data;	/* last data block's logical number */
	struct e3_runs fig;
	blk64_t first, nblocks;
	errcode_t err;
};

static int visit(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		 blk64_t ref_blk, int ref_offset, void *priv)
{
	struct runs_walk *w = priv;
	blk64_t b = *blocknr;
	struct run *r;

	(void)fs; (void)ref_blk; (void)ref_offset;
	e3_runs_step(&w->fig, b);
	if (b < w->first || b >= w->nblocks)
		return 0;
	e3_runs_add(&w->fig, b);
	r = w->n ? &w->v[w->n - 1] : NULL;
	if (r && r->start + r->len == b) {
		r->len++;
	} else {
		if (r)
			r->next_lblk = blockcnt;
		if (w->n == w->cap) {
			size_t cap = w->cap ? w->cap * 2 : 16;
			struct run *v = realloc(w->v, cap * sizeof(*v));

			if (!v) {
				w->err = ENOMEM;
				return BLOCK_ABORT;
			}
			w->v = v;
			w->cap = cap;
		}
		w->v[w->n++] = (struct run){ blockcnt, b, 1, 0 };
	}
	if (blockcnt >= 0)
		w->last_data = blockcnt;
	return 0;
}

/* b holds group metadata (lib/inspect's classification). */
static int is_group_meta(ext2_filsys fs, blk64_t b)
{
	struct e3_meta_owner m;

	return !e3_meta_owner(fs, b, &m) && m.kind != E3_META_NONE;
}

/* Why run i ends (the next run does not start at its last block + 1). */
static const char *break_cause(struct dbg *d, const struct runs_walk *w,
			       size_t i, const struct run *r)
{
	blk64_t after = r->start + r->len;
	e2_blkcnt_t last;

	if (i + 1 == w->n)
		return "end of file";
	/* the run's last logical data block, and the next run's first */
	last = r->lblk >= 0 ? r->lblk + (e2_blkcnt_t)r->len - 1 : -1;
	if (r->next_lblk >= 0 && last >= 0 && r->next_lblk > last + 1)
		return "hole in the file";
	if (after >= w->nblocks)
		return "end of the filesystem";
	if (!d->fs->block_map)
		return "next block: bitmaps not loaded (-c)";
	if (!ext2fs_test_block_bitmap2(d->fs->block_map, after))
		return "next block free";
	if (is_group_meta(d->fs, after))
		return "next block is group metadata";
	return "next block in use (another file or the journal)";
}

DBG_CMD(do_runs)
{
	struct dbg *d = dbg_of(info);
	struct runs_walk w;
	struct e3_layout_file lf;
	struct ext2_inode in;
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 2, 2, "runs FILE"))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	if ((err = ext2fs_read_inode(d->fs, ino, &in))) {
		dbg_fail(d, err, "%s", argv[1]);
		return;
	}
	memset(&w, 0, sizeof(w));
	w.first = d->fs->super->s_first_data_block;
	w.nblocks = ext2fs_blocks_count(d->fs->super);
	e3_runs_init(&w.fig, d->fs->super);
	if (ext2fs_inode_has_valid_blocks2(d->fs, &in)) {
		err = ext2fs_block_iterate3(d->fs, ino, BLOCK_FLAG_READ_ONLY,
					    NULL, visit, &w);
		if (!err)
			err = w.err;
		if (err) {
			dbg_fail(d, err, "%s", argv[1]);
			free(w.v);
			return;
		}
	}
	fprintf(d->out, "%4s %10s %12s %8s %6s  %s\n", "RUN", "LOGICAL",
		"PHYSICAL", "LENGTH", "GROUP", "ENDS BECAUSE");
	for (size_t i = 0; i < w.n; i++) {
		const struct run *r = &w.v[i];
		char lbuf[24];

		if (r->lblk >= 0)
			snprintf(lbuf, sizeof(lbuf), "%lld", (long long)r->lblk);
		else
			snprintf(lbuf, sizeof(lbuf), "(%s)", r->lblk == -1 ? "IND" :
				 r->lblk == -2 ? "DIND" : "TIND");
		fprintf(d->out, "%4zu %10s %12llu %8llu %6u  %s\n", i + 1, lbuf,
			(unsigned long long)r->start, (unsigned long long)r->len,
			ext2fs_group_of_blk2(d->fs, r->start),
			break_cause(d, &w, i, r));
	}
	e3_runs_figures(&w.fig, &lf);
	fprintf(d->out, "%llu blocks in %u runs over %u groups: %u excess; "
		"e2fsck: %s\n", (unsigned long long)lf.blocks, lf.runs,
		lf.groups, lf.excess,
		w.fig.fragmented ? "non-contiguous" : "contiguous");
	free(w.v);
}

#define MAP_USAGE "map [--text] [-o FILE.svg|FILE.png | FILE.svg|FILE.png]"

/* map's arguments: --text, and -o FILE or FILE at most once; at least
 * one of them. Returns 1 (and fails with the usage) when they are bad. */
static int map_args(struct dbg *d, int argc, const char *const *argv,
		    int *text, const char **file)
{
	*text = 0;
	*file = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--text")) {
			*text = 1;
			continue;
		}
		if (!strcmp(a, "-o") && i + 1 < argc)
			a = argv[++i];
		else if (a[0] == '-')
			goto usage;
		if (*file)
			goto usage;
		*file = a;
	}
	if (*text || *file)
		return 0;
usage:
	dbg_fail(d, 0, "usage: " MAP_USAGE);
	return 1;
}

static void map_report(struct dbg *d, const char *file,
		       const struct e3_map_stats *st)
{
	fprintf(d->out, "%s: %u bands, %llu blocks a cell\n", file, st->bands,
		(unsigned long long)st->cell_blocks);
	for (int c = 0; c < E3_MAP_NCLASS; c++)
		fprintf(d->out, "%s: %llu blocks\n", e3_map_class_name(c),
			(unsigned long long)st->blocks[c]);
	fprintf(d->out, "fragmented files: %llu\n",
		(unsigned long long)st->fragmented_files);
}

/* FILE.png (any case) is a PNG; any other name an SVG. */
static int is_png(const char *path)
{
	size_t n = strlen(path);

	return n >= 4 && !strcasecmp(path + n - 4, ".png");
}

/* The picture to path, as SVG or PNG by its name. */
static int map_file(struct dbg *d, const char *path, struct e3_map_stats *st)
{
	errcode_t err;
	FILE *out = fopen(path, "w");

	if (!out) {
		dbg_fail(d, errno, "%s", path);
		return 1;
	}
	err = is_png(path) ? e3_map_png(d->fs, out, st) :
	      e3_map_svg(d->fs, out, d->image, st);
	if (fclose(out) && !err)
		err = errno;
	if (err) {
		dbg_fail(d, err, "%s", path);
		return 1;
	}
	return 0;
}

DBG_CMD(do_map)
{
	struct dbg *d = dbg_of(info);
	struct e3_map_stats st;
	const char *file;
	errcode_t err;
	int text;

	if (map_args(d, argc, argv, &text, &file) || dbg_need_bitmaps(d))
		return;
	if (file && map_file(d, file, &st))
		return;
	if (text && (err = e3_map_text(d->fs, d->out, &st))) {
		dbg_fail(d, err, "map --text");
		return;
	}
	if (file && !text)
		map_report(d, file, &st);
	else if (file)
		fprintf(d->out, "%s: written\n", file);
}
