/*
 * map.c: the block-map picture — an SVG of the whole volume, one band per
 * block group (or per few groups on a large volume), each cell coloured by
 * what most of its blocks hold: file data in as few runs as its groups
 * allow, fragmented file data (excess runs), directories, group metadata,
 * the journal, other used blocks (EA blocks, symlinks), or free space.
 * It is what a person looks at to see where fragmentation is, before and
 * after e3defrag, or from e3debugfs. The same cell grid is also drawn as
 * text, one character a cell (e3_map_text).
 *
 * Nothing is kept per block: each inode's runs are added to per-cell
 * counts as the inode is walked, so memory is bounded by the picture's
 * size (at most E3_MAP_MAX_BANDS x E3_MAP_CELLS cells), whatever the
 * volume's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e3_inspect.h"
#include "map_int.h"
#include "util/grow.h"

#define CELL_W 3		/* pixels */
#define CELL_H 9
#define LEFT 56			/* room for the group labels */
#define TOP 28

static const struct {
	const char *name, *colour;
	char ch;		/* the text picture's character */
} klass[E3_MAP_NCLASS] = {
	[E3_MAP_FREE] = { "free", "#f2f2f2", '.' },
	[E3_MAP_META] = { "group metadata", "#7f7f7f", 'M' },
	[E3_MAP_JOURNAL] = { "journal", "#9467bd", 'J' },
	[E3_MAP_DIR] = { "directories", "#1f77b4", 'D' },
	[E3_MAP_FILE] = { "file data, contiguous", "#2ca02c", 'f' },
	[E3_MAP_FRAG] = { "file data, fragmented", "#d62728", 'X' },
	[E3_MAP_OTHER] = { "other used", "#ff7f0e", 'o' },
};

struct run {
	blk64_t start, len;
};

struct map {
	ext2_filsys fs;
	blk64_t first, nblocks;
	blk64_t band_blocks, cell_blocks;
	unsigned bands, groups_per_band;
	uint32_t (*count)[E3_MAP_NCLASS];	/* per cell */
	uint64_t claimed;			/* blocks given a class */
	struct e3_map_stats *st;
	/* the inode being walked */
	struct run *runs;
	size_t nruns, cap;
	struct e3_runs fig;
	ext2fs_block_bitmap ea_seen;		/* EA blocks already counted */
};

const char *e3_map_class_name(enum e3_map_class c)
{
	return (unsigned)c < E3_MAP_NCLASS ? klass[c].name : "?";
}

char e3_map_class_char(enum e3_map_class c)
{
	return (unsigned)c < E3_MAP_NCLASS ? klass[c].ch : '?';
}

const char *e3_map_class_colour(enum e3_map_class c)
{
	return (unsigned)c < E3_MAP_NCLASS ? klass[c].colour : "#ffffff";
}

/* Adds [b, b + n) to the cells it covers, as class c. */
static void add_range(struct map *m, blk64_t b, blk64_t n, enum e3_map_class c)
{
	while (n && b < m->nblocks) {
		blk64_t rel, cell, in_cell, take;

		if (b < m->first) {
			take = m->first - b < n ? m->first - b : n;
			b += take;
			n -= take;
			continue;
		}
		rel = b - m->first;
		cell = (rel / m->band_blocks) * E3_MAP_CELLS +
		       (rel % m->band_blocks) / m->cell_blocks;
		in_cell = m->cell_blocks - (rel % m->band_blocks) % m->cell_blocks;
		take = n < in_cell ? n : in_cell;
		if (b + take > m->nblocks)
			take = m->nblocks - b;
		m->count[cell][c] += (uint32_t)take;
		m->st->blocks[c] += take;
		if (c != E3_MAP_FREE)
			m->claimed += take;
		b += take;
		n -= take;
	}
}

static int collect(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		   blk64_t ref_blk, int ref_offset, void *priv)
{
	struct map *m = priv;
	blk64_t b = *blocknr;
	struct run *v;

	(void)fs; (void)blockcnt; (void)ref_blk; (void)ref_offset;
	e3_runs_step(&m->fig, b);
	if (b < m->first || b >= m->nblocks)
		return 0;
	e3_runs_add(&m->fig, b);
	if (m->nruns && m->runs[m->nruns - 1].start +
			m->runs[m->nruns - 1].len == b) {
		m->runs[m->nruns - 1].len++;
		return 0;
	}
	v = e3_grow(m->runs, m->nruns, &m->cap, sizeof(*v), 64);
	if (!v)
		return BLOCK_ABORT;
	m->runs = v;
	m->runs[m->nruns++] = (struct run){ b, 1 };
	return 0;
}

static errcode_t add_inode(struct map *m, ext2_ino_t ino,
			   struct ext2_inode *in)
{
	struct e3_layout_file lf;
	enum e3_map_class c;
	errcode_t err;
	size_t i;

	blk64_t ea = ext2fs_file_acl_block(m->fs, in);

	if (ea >= m->first && ea < m->nblocks) {	/* shared: count once */
		if (!m->ea_seen) {
			err = ext2fs_allocate_block_bitmap(m->fs, "EA blocks",
							   &m->ea_seen);
			if (err)
				return err;
		}
		if (!ext2fs_test_block_bitmap2(m->ea_seen, ea)) {
			ext2fs_mark_block_bitmap2(m->ea_seen, ea);
			add_range(m, ea, 1, E3_MAP_OTHER);
		}
	}
	if (!ext2fs_inode_has_valid_blocks2(m->fs, in) ||
	    (in->i_flags & EXT4_EXTENTS_FL))
		return 0;
	if (ino == EXT2_RESIZE_INO) {
		/* its other blocks are the reserved GDT, drawn with each
		 * group's metadata */
		add_range(m, in->i_block[EXT2_DIND_BLOCK], 1, E3_MAP_META);
		return 0;
	}
	m->nruns = 0;
	e3_runs_init(&m->fig, m->fs->super);
	err = ext2fs_block_iterate3(m->fs, ino, BLOCK_FLAG_READ_ONLY, NULL,
				    collect, m);
	if (err == EXT2_ET_BAD_IND_BLOCK || err == EXT2_ET_BAD_DIND_BLOCK ||
	    err == EXT2_ET_BAD_TIND_BLOCK)
		err = 0;	/* a damaged map: draw what it names */
	if (err)
		return err;
	if (m->nruns && !m->runs)
		return ENOMEM;
	e3_runs_figures(&m->fig, &lf);
	if (ino == EXT2_JOURNAL_INO)
		c = E3_MAP_JOURNAL;
	else if (LINUX_S_ISDIR(in->i_mode))
		c = E3_MAP_DIR;
	else if (LINUX_S_ISREG(in->i_mode))
		c = lf.excess ? E3_MAP_FRAG : E3_MAP_FILE;
	else
		c = E3_MAP_OTHER;
	if (c == E3_MAP_FRAG)
		m->st->fragmented_files++;
	for (i = 0; i < m->nruns; i++)
		add_range(m, m->runs[i].start, m->runs[i].len, c);
	return 0;
}

static errcode_t add_inodes(struct map *m)
{
	ext2_inode_scan scan;
	struct ext2_inode in;
	ext2_ino_t ino;
	errcode_t err;

	err = ext2fs_open_inode_scan(m->fs, 0, &scan);
	if (err)
		return err;
	while (!(err = ext2fs_get_next_inode(scan, &ino, &in)) && ino) {
		if (!ext2fs_test_inode_bitmap2(m->fs->inode_map, ino))
			continue;
		if (ino >= EXT2_FIRST_INO(m->fs->super) && !in.i_links_count)
			continue;
		err = add_inode(m, ino, &in);
		if (err)
			break;
	}
	ext2fs_close_inode_scan(scan);
	return err;
}

static void add_metadata(struct map *m)
{
	ext2_filsys fs = m->fs;
	blk64_t itb = fs->inode_blocks_per_group;
	dgrp_t g;

	for (g = 0; g < fs->group_desc_count; g++) {
		blk64_t super = 0, old_desc = 0, new_desc = 0;
		blk_t used = 0;

		ext2fs_super_and_bgd_loc2(fs, g, &super, &old_desc, &new_desc,
					  &used);
		if (used)
			add_range(m, super, used, E3_MAP_META);
		add_range(m, ext2fs_block_bitmap_loc(fs, g), 1, E3_MAP_META);
		add_range(m, ext2fs_inode_bitmap_loc(fs, g), 1, E3_MAP_META);
		add_range(m, ext2fs_inode_table_loc(fs, g), itb, E3_MAP_META);
	}
}

static int add_free_extent(blk64_t start, blk64_t len, void *priv)
{
	add_range(priv, start, len, E3_MAP_FREE);
	return 0;
}

/* Free extents from the bitmap (groups.c's scan). */
static void add_free(struct map *m)
{
	e3_free_extents(m->fs, m->first, m->nblocks - 1, add_free_extent, m);
}

/* A cell's class: the one most of its blocks have; cells at the end of
 * the last band that hold no block stay blank. */
static int cell_class(const uint32_t *cnt)
{
	int best = -1;
	uint32_t most = 0;

	for (int c = 0; c < E3_MAP_NCLASS; c++)
		if (cnt[c] > most) {
			most = cnt[c];
			best = c;
		}
	return best;
}

static void draw(struct map *m, FILE *out, const char *title)
{
	ext2_filsys fs = m->fs;
	unsigned width = LEFT + E3_MAP_CELLS * CELL_W + 10;
	unsigned legend_y = TOP + m->bands * (CELL_H + 1) + 14;
	unsigned height = legend_y + E3_MAP_NCLASS * 16 + 10;
	unsigned band, cell, c;

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
		"height=\"%u\" viewBox=\"0 0 %u %u\" font-family=\"sans-serif\" "
		"font-size=\"10\">\n", width, height, width, height);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(out, "<text x=\"4\" y=\"14\" font-size=\"12\">");
	for (const char *s = title ? title : ""; *s; s++)	/* XML-escape */
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
	fprintf(out, "%s%llu blocks of %u bytes, %u groups; a band is %u "
		"group%s, a cell %llu block%s</text>\n", title && *title ? ": " : "",
		(unsigned long long)ext2fs_blocks_count(fs->super), fs->blocksize,
		fs->group_desc_count, m->groups_per_band,
		m->groups_per_band > 1 ? "s" : "",
		(unsigned long long)m->cell_blocks, m->cell_blocks > 1 ? "s" : "");
	for (band = 0; band < m->bands; band++) {
		unsigned y = TOP + band * (CELL_H + 1);
		int run_c = -1;
		unsigned run_x = 0;

		if (band % 8 == 0 || m->bands <= 16)
			fprintf(out, "<text x=\"4\" y=\"%u\">%u</text>\n",
				y + CELL_H - 1, band * m->groups_per_band);
		for (cell = 0; cell <= E3_MAP_CELLS; cell++) {
			int k = cell < E3_MAP_CELLS ?
				cell_class(m->count[band * E3_MAP_CELLS + cell]) : -2;

			if (k == run_c)
				continue;
			if (run_c >= 0)
				fprintf(out, "<rect x=\"%u\" y=\"%u\" width=\"%u\" "
					"height=\"%u\" fill=\"%s\"/>\n",
					LEFT + run_x * CELL_W, y,
					(cell - run_x) * CELL_W, CELL_H,
					klass[run_c].colour);
			run_c = k;
			run_x = cell;
		}
	}
	for (c = 0; c < E3_MAP_NCLASS; c++) {
		unsigned y = legend_y + c * 16;

		fprintf(out, "<rect x=\"%u\" y=\"%u\" width=\"12\" height=\"12\" "
			"fill=\"%s\" stroke=\"black\" stroke-width=\"0.5\"/>\n"
			"<text x=\"%u\" y=\"%u\">%s: %llu blocks</text>\n",
			LEFT, y, klass[c].colour, LEFT + 18, y + 10,
			klass[c].name, (unsigned long long)m->st->blocks[c]);
	}
	fprintf(out, "</svg>\n");
}

/* The cell grid both pictures draw: geometry, then every block's class
 * added to its cell (metadata, each inode's runs, free extents). */
static errcode_t build(ext2_filsys fs, struct e3_map_stats *st, struct map *m)
{
	uint64_t bpg = fs->super->s_blocks_per_group;
	errcode_t err;

	memset(st, 0, sizeof(*st));
	memset(m, 0, sizeof(*m));
	m->fs = fs;
	m->st = st;
	m->first = fs->super->s_first_data_block;
	m->nblocks = ext2fs_blocks_count(fs->super);
	m->groups_per_band = (fs->group_desc_count + E3_MAP_MAX_BANDS - 1) /
			     E3_MAP_MAX_BANDS;
	m->band_blocks = bpg * m->groups_per_band;
	m->bands = (unsigned)((m->nblocks - m->first + m->band_blocks - 1) /
			      m->band_blocks);
	m->cell_blocks = (m->band_blocks + E3_MAP_CELLS - 1) / E3_MAP_CELLS;
	st->bands = m->bands;
	st->cell_blocks = m->cell_blocks;
	if (!fs->block_map && (err = ext2fs_read_block_bitmap(fs)))
		return err;
	if (!fs->inode_map && (err = ext2fs_read_inode_bitmap(fs)))
		return err;
	m->count = calloc((size_t)m->bands * E3_MAP_CELLS, sizeof(*m->count));
	if (!m->count)
		return ENOMEM;
	add_metadata(m);
	err = add_inodes(m);
	if (!err)
		add_free(m);
	return err;
}

static void release(struct map *m)
{
	if (m->ea_seen)
		ext2fs_free_block_bitmap(m->ea_seen);
	free(m->runs);
	free(m->count);
}

errcode_t e3_map_svg(ext2_filsys fs, FILE *out, const char *title,
		     struct e3_map_stats *st)
{
	struct e3_map_stats local;
	struct map m;
	errcode_t err;

	err = build(fs, st ? st : &local, &m);
	if (!err) {
		draw(&m, out, title);
		if (ferror(out))
			err = EIO;
	}
	release(&m);
	return err;
}

/* The text picture: a band a line, its first group, one character a
 * cell (blank past the last block); then the legend with block counts. */
static void draw_text(struct map *m, FILE *out)
{
	fprintf(out, "%llu blocks, %u groups; a line is %u group%s, a "
		"character %llu block%s\n",
		(unsigned long long)ext2fs_blocks_count(m->fs->super),
		m->fs->group_desc_count, m->groups_per_band,
		m->groups_per_band > 1 ? "s" : "",
		(unsigned long long)m->cell_blocks, m->cell_blocks > 1 ? "s" : "");
	for (unsigned band = 0; band < m->bands; band++) {
		fprintf(out, "%6u ", band * m->groups_per_band);
		for (unsigned cell = 0; cell < E3_MAP_CELLS; cell++) {
			int k = cell_class(m->count[band * E3_MAP_CELLS + cell]);

			fputc(k < 0 ? ' ' : klass[k].ch, out);
		}
		fputc('\n', out);
	}
	for (int c = 0; c < E3_MAP_NCLASS; c++)
		fprintf(out, "%c %s: %llu blocks\n", klass[c].ch, klass[c].name,
			(unsigned long long)m->st->blocks[c]);
}

errcode_t e3_map_text(ext2_filsys fs, FILE *out, struct e3_map_stats *st)
{
	struct e3_map_stats local;
	struct map m;
	errcode_t err;

	err = build(fs, st ? st : &local, &m);
	if (!err) {
		draw_text(&m, out);
		if (ferror(out))
			err = EIO;
	}
	release(&m);
	return err;
}

errcode_t e3_map_grid(ext2_filsys fs, struct e3_map_stats *st,
		      signed char **cells)
{
	struct map m;
	errcode_t err;

	*cells = NULL;
	err = build(fs, st, &m);
	if (!err && !(*cells = malloc((size_t)m.bands * E3_MAP_CELLS)))
		err = ENOMEM;
	for (size_t i = 0; !err && i < (size_t)m.bands * E3_MAP_CELLS; i++)
		(*cells)[i] = (signed char)cell_class(m.count[i]);
	release(&m);
	return err;
}
