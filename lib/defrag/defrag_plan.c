/*
 * defrag_plan.c: the defragmenter's planner — which files to move, in
 * which order.
 *
 * One inode scan finds the files with blocks (regular files, directories,
 * symlinks with a block) and walks each block map once, counting runs in
 * e2fsck's order (ext3-facts §3.1: indirect blocks in pre-order, holes
 * skipped) and the groups they touch; only the candidates are kept
 * (struct df_cand: 32 bytes each), so the plan grows with the number of
 * fragmented files, not with the volume. A breadth-first walk of the
 * directory tree from the root (or from the PATHs given) then orders them
 * as a reader meets them: a directory before its entries, entries in
 * their directory's order. Candidates the walk does not reach (none in a
 * sound image) follow in inode order in a whole-filesystem run.
 *
 * The run counts here choose candidates only; every figure in the report
 * comes from the checker (defrag_layout.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e3img.h"
#include "defrag_int.h"
#include "util/grow.h"

double df_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- one block map ----------------------------------------------------- */

#define DF_GROUPS_SEEN 64

struct map_walk {
	struct df_map *m;
	ext2_filsys fs;
	blk64_t prev;
	uint64_t n;
	dgrp_t seen[DF_GROUPS_SEEN];
	unsigned nseen;
	dgrp_t lastg;
	errcode_t err;
};

static void note_group(struct map_walk *w, blk64_t b)
{
	dgrp_t g = ext2fs_group_of_blk2(w->fs, b);
	unsigned i;

	if (w->n && g == w->lastg)
		return;
	if (w->n)
		w->m->group_changes++;
	w->lastg = g;
	for (i = 0; i < w->nseen; i++)
		if (w->seen[i] == g)
			return;
	if (w->nseen < DF_GROUPS_SEEN)
		w->seen[w->nseen++] = g;
	w->m->groups++;
}

static int map_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t cnt,
		     blk64_t ref, int off, void *priv)
{
	struct map_walk *w = priv;
	struct df_map *m = w->m;
	blk64_t b = *blocknr;
	void *v;

	(void)fs; (void)ref; (void)off;
	if (!b)
		return 0;
	if (!w->n || b != w->prev + 1)
		m->runs++;
	note_group(w, b);
	w->prev = b;
	w->n++;
	if (cnt < 0) {
		v = e3_grow(m->meta, m->nmeta, &m->capmeta, sizeof(*m->meta), 16);
		if (!v)
			goto nomem;
		m->meta = v;
		m->meta[m->nmeta++] = b;
		return 0;
	}
	if (m->ndata == m->capdata) {
		size_t cap = m->capdata;

		v = e3_grow(m->lblk, m->ndata, &cap, sizeof(*m->lblk), 64);
		if (!v)
			goto nomem;
		m->lblk = v;
		cap = m->capdata;
		v = e3_grow(m->pblk, m->ndata, &cap, sizeof(*m->pblk), 64);
		if (!v)
			goto nomem;
		m->pblk = v;
		m->capdata = cap;
	}
	m->lblk[m->ndata] = (uint64_t)cnt;
	m->pblk[m->ndata++] = b;
	return 0;
nomem:
	w->err = ENOMEM;
	return BLOCK_ABORT;
}

errcode_t df_map_read(struct df_ctx *c, ext2_ino_t ino, struct df_map *m)
{
	struct map_walk w;
	errcode_t err;

	m->ndata = m->nmeta = 0;
	m->runs = m->groups = m->group_changes = 0;
	memset(&w, 0, sizeof(w));
	w.m = m;
	w.fs = c->fs;
	/* no BLOCK_FLAG_DEPTH_TRAVERSE: indirect blocks come before the
	 * blocks they map, which is e2fsck's order and ext3's layout */
	err = ext2fs_block_iterate3(c->fs, ino, BLOCK_FLAG_READ_ONLY, NULL,
				    map_block, &w);
	return err ? err : w.err;
}

void df_map_free(struct df_map *m)
{
	free(m->lblk);
	free(m->pblk);
	free(m->meta);
	memset(m, 0, sizeof(*m));
}

int df_wants(const struct df_ctx *c, uint64_t blocks, uint32_t runs,
	     uint32_t groups)
{
	if (c->o->min_runs)
		return runs >= c->o->min_runs && runs > 1;
	/* e2fsck counts a file under a group's worth of blocks with any
	 * break; larger ones are fragmented past 1 + the groups crossed */
	if (blocks < c->fs->super->s_blocks_per_group && runs > 1)
		return 1;
	return runs > groups;
}

/* ---- the inode scan ---------------------------------------------------- */

int df_movable(ext2_filsys fs, ext2_ino_t ino, struct ext2_inode *in)
{
	if (!in->i_links_count || in->i_dtime)
		return 0;
	if (ino != EXT2_ROOT_INO && ino < EXT2_FIRST_INO(fs->super))
		return 0;	/* the journal, resize inode, ... stay */
	if (!LINUX_S_ISREG(in->i_mode) && !LINUX_S_ISDIR(in->i_mode) &&
	    !LINUX_S_ISLNK(in->i_mode))
		return 0;
	if (in->i_flags & (EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL))
		return 0;
	return in->i_blocks && ext2fs_inode_has_valid_blocks2(fs, in);
}

/* Every free extent of the block bitmap, split at group ends (the
 * figures count extents per group, and no target crosses group
 * metadata), to fn lowest first; fn's non-zero return stops the walk and
 * is returned. Caller holds fs_lock. */
errcode_t df_each_free(ext2_filsys fs, df_free_fn *fn, void *arg)
{
	blk64_t b = fs->super->s_first_data_block;
	blk64_t end = ext2fs_blocks_count(fs->super) - 1, s, e;
	errcode_t err;

	while (b <= end &&
	       !ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, end, &s)) {
		blk64_t gend = ext2fs_group_last_block2(fs,
						ext2fs_group_of_blk2(fs, s));

		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, s, gend, &e))
			e = gend + 1;
		if ((err = fn(arg, s, e - s)))
			return err;
		b = e;
	}
	return 0;
}

/* fn for each movable inode with its map: the one inode scan both the
 * candidates and the small files come from. */
static errcode_t each_movable(struct df_ctx *c, df_small_fn *fn, void *arg)
{
	ext2_inode_scan scan;
	struct ext2_inode inode;
	struct df_map m = { 0 };
	ext2_ino_t ino;
	errcode_t err;

	if ((err = ext2fs_open_inode_scan(c->fs, 0, &scan)))
		return err;
	for (;;) {
		err = ext2fs_get_next_inode(scan, &ino, &inode);
		if (err || !ino)
			break;
		if (!df_movable(c->fs, ino, &inode))
			continue;
		if ((err = df_map_read(c, ino, &m)))
			break;
		if ((err = fn(arg, ino, &m)))
			break;
	}
	ext2fs_close_inode_scan(scan);
	df_map_free(&m);
	return err;
}

struct small_walk {
	blk64_t bpg;
	df_small_fn *fn;
	void *arg;
};

static errcode_t small_one(void *arg, ext2_ino_t ino, const struct df_map *m)
{
	struct small_walk *w = arg;
	uint64_t n = m->ndata + m->nmeta;

	return n && n < w->bpg ? w->fn(w->arg, ino, m) : 0;
}

/* Every movable file under a group's worth of blocks, with its map, to
 * fn in inode order; fn's non-zero return stops the walk and is
 * returned. The files that can go elsewhere whole: the placement plan,
 * the compaction and the owner map choose among them. One inode scan;
 * caller holds fs_lock. */
errcode_t df_each_small(struct df_ctx *c, df_small_fn *fn, void *arg)
{
	struct small_walk w = { c->fs->super->s_blocks_per_group, fn, arg };

	return each_movable(c, small_one, &w);
}

static errcode_t add_cand(struct df_ctx *c, ext2_ino_t ino,
			  const struct df_map *m)
{
	struct df_cand *v = e3_grow(c->cand, c->ncand, &c->capcand,
				    sizeof(*c->cand), 256);

	if (!v)
		return ENOMEM;
	c->cand = v;
	memset(&v[c->ncand], 0, sizeof(*v));
	v[c->ncand].ino = ino;
	v[c->ncand].blocks = m->ndata + m->nmeta;
	v[c->ncand].runs = m->runs;
	v[c->ncand].groups = m->groups ? m->groups : 1;
	c->ncand++;
	return 0;
}

static errcode_t cand_one(void *arg, ext2_ino_t ino, const struct df_map *m)
{
	struct df_ctx *c = arg;

	if (!df_wants(c, m->ndata + m->nmeta, m->runs, m->groups ? m->groups : 1))
		return 0;
	return add_cand(c, ino, m);
}

static errcode_t scan_inodes(struct df_ctx *c)
{
	return each_movable(c, cand_one, c);
}

/* ---- the directory walk ------------------------------------------------ */

/* The candidate of inode ino, or NULL: c->cand is sorted by inode number. */
struct df_cand *df_find_cand(struct df_ctx *c, ext2_ino_t ino)
{
	size_t lo = 0, hi = c->ncand;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->cand[mid].ino == ino)
			return &c->cand[mid];
		if (c->cand[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void order_ino(struct df_ctx *c, ext2_ino_t ino, ext2_ino_t parent)
{
	struct df_cand *cd = df_find_cand(c, ino);

	if (!cd || cd->ordered)
		return;
	cd->ordered = 1;
	cd->parent = parent;
	c->order[c->norder++] = (size_t)(cd - c->cand);
}

struct dir_walk {
	struct df_ctx *c;
	ext2fs_inode_bitmap seen;		/* directories queued */
	ext2_ino_t *queue;
	size_t head, n, cap;
	ext2_ino_t dir;
	errcode_t err;
};

static errcode_t enqueue(struct dir_walk *w, ext2_ino_t dir)
{
	ext2_ino_t *v;

	if (ext2fs_test_inode_bitmap2(w->seen, dir))
		return 0;
	ext2fs_mark_inode_bitmap2(w->seen, dir);
	v = e3_grow(w->queue, w->n, &w->cap, sizeof(*w->queue), 64);
	if (!v)
		return ENOMEM;
	w->queue = v;
	w->queue[w->n++] = dir;
	return 0;
}

static int is_dir_entry(ext2_filsys fs, struct ext2_dir_entry *d)
{
	struct ext2_inode in;

	if (ext2fs_has_feature_filetype(fs->super))
		return ext2fs_dirent_file_type(d) == EXT2_FT_DIR;
	return !ext2fs_read_inode(fs, d->inode, &in) &&
	       LINUX_S_ISDIR(in.i_mode);
}

static int dir_entry(struct ext2_dir_entry *d, int off, int bs, char *buf,
		     void *priv)
{
	struct dir_walk *w = priv;
	struct df_ctx *c = w->c;
	int len = ext2fs_dirent_name_len(d);

	(void)off; (void)bs; (void)buf;
	if (!d->inode || d->inode > c->fs->super->s_inodes_count)
		return 0;
	if ((len == 1 && d->name[0] == '.') ||
	    (len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	order_ino(c, d->inode, w->dir);
	if (is_dir_entry(c->fs, d) && (w->err = enqueue(w, d->inode)))
		return DIRENT_ABORT;
	return 0;
}

/* Breadth first from the queued directories. */
static errcode_t walk_queue(struct dir_walk *w)
{
	errcode_t err;

	while (w->head < w->n) {
		w->dir = w->queue[w->head++];
		err = ext2fs_dir_iterate(w->c->fs, w->dir, 0, NULL, dir_entry, w);
		if (w->err)
			return w->err;
		/* a directory the check passed is readable; a failure here
		 * leaves its entries out of the plan, never moves them */
		(void)err;
	}
	return 0;
}

static errcode_t start_path(struct dir_walk *w, const char *path)
{
	struct df_ctx *c = w->c;
	struct ext2_inode in;
	ext2_ino_t ino, parent = 0;
	errcode_t err;
	const char *slash;

	err = ext2fs_namei(c->fs, EXT2_ROOT_INO, EXT2_ROOT_INO, path, &ino);
	if (err)
		return E3_DEFRAG_BAD_PATH;
	if ((err = ext2fs_read_inode(c->fs, ino, &in)))
		return err;
	if (LINUX_S_ISDIR(in.i_mode)) {
		order_ino(c, ino, 0);
		return enqueue(w, ino);
	}
	/* a file: its directory names it in -v */
	slash = strrchr(path, '/');
	if (slash && slash != path) {
		char *dir = strndup(path, (size_t)(slash - path));

		if (!dir)
			return ENOMEM;
		if (ext2fs_namei(c->fs, EXT2_ROOT_INO, EXT2_ROOT_INO, dir,
				 &parent))
			parent = 0;
		free(dir);
	} else {
		parent = EXT2_ROOT_INO;
	}
	order_ino(c, ino, parent);
	return 0;
}

static errcode_t order_cands(struct df_ctx *c)
{
	struct dir_walk w = { .c = c };
	errcode_t err;
	size_t i;

	c->order = malloc((c->ncand + 1) * sizeof(*c->order));
	if (!c->order)
		return ENOMEM;
	err = ext2fs_allocate_inode_bitmap(c->fs, "defrag walk", &w.seen);
	if (err)
		return err;
	if (!c->o->paths || !c->o->npaths) {
		order_ino(c, EXT2_ROOT_INO, 0);
		err = enqueue(&w, EXT2_ROOT_INO);
	}
	for (i = 0; !err && c->o->paths && i < c->o->npaths; i++)
		err = start_path(&w, c->o->paths[i]);
	if (!err)
		err = walk_queue(&w);
	/* unreachable candidates: only when the whole filesystem is asked */
	for (i = 0; !err && (!c->o->paths || !c->o->npaths) && i < c->ncand; i++)
		order_ino(c, c->cand[i].ino, 0);
	ext2fs_free_inode_bitmap(w.seen);
	free(w.queue);
	return err;
}

errcode_t df_plan(struct df_ctx *c)
{
	errcode_t err;
	size_t i;

	e3_fs_lock(c->img);
	err = scan_inodes(c);
	if (!err)
		err = order_cands(c);
	e3_fs_unlock(c->img);
	if (err)
		return err;
	for (i = 0; i < c->norder; i++) {
		c->rep->st.files_planned++;
		c->rep->st.blocks_planned += c->cand[c->order[i]].blocks;
	}
	return 0;
}
