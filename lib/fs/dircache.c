/*
 * dircache.c: what the load API remembers about the directories it adds
 * names to, so that the n-th name costs a hash probe and a look along a
 * per-block array (no directory block read but the one written) rather
 * than two scans of the whole directory (ext2fs_lookup for "is it
 * there?", ext2fs_link for "where does it fit?"): O(n^2) per directory, a
 * third of e3cp's time on a tree of small files.
 *
 * Per directory: a set of 64-bit hashes of its names, each with how many
 * names have it and the block the last of them went into (or was met
 * in); and per block its address, the largest entry that still fits in
 * it ("room") and where the first entry with any slack is, so that
 * appending does not walk the whole block. Looking a name up
 * (e3_dc_find) reads that one block; removing one (e3_dc_unlinked)
 * measures its block again. Without this, replacing every name of a big
 * directory that has no htree index (one made by mke2fs -d or genext2fs)
 * read the whole directory four times per name.
 *
 * The cache only steers; it is never trusted with the image's contents:
 * - A hash that is absent means the name is absent: a directory is read
 *   whole when first met, and every name this image adds goes through
 *   e3_dc_link (the one funnel, e3_dir_add), and every removal this
 *   image makes goes through e3_dc_unlinked or e3_dc_forget. A hash that
 *   is present is confirmed in its block; not found there (two names of
 *   one hash), by a full lookup.
 * - A name goes into the first block whose room says it fits, the block
 *   is read and parsed, and the entry is placed by the rule ext2fs_link
 *   follows (first entry, in order, with enough slack), so the images are
 *   the same as before. A block that turns out fuller is re-measured and
 *   the search goes on.
 * - A directory block the map names is checked before it is read
 *   (e3_block_owned): a name is never written into group metadata, the
 *   journal or a free block through a damaged map (E3_FILE_BLOCKS_BAD).
 *   Directories whose blocks libext2fs writes get the same check once,
 *   whole (e3_dc_dir_owned).
 * - A directory that grew behind the cache's back gets its new blocks
 *   read; one that shrank, or was indexed, is dropped. A name removed
 *   from a known block has that block measured again (e3_dc_unlinked);
 *   any other removal forgets the directory (e3_dc_forget).
 *
 * Everything here runs under fs_lock (the cache hangs off img->load).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "load_int.h"
#include "dirfind.h"
#include "itable.h"
#include "journal/journal.h"

/* The names of one 64-bit hash in a directory (almost always one). */
struct dc_name {
	uint64_t h;			/* 0 = empty slot */
	uint32_t blk;			/* block the last one went into or
					   was met in */
	uint32_t n;			/* names with this hash */
};

struct dc_dir {
	ext2_ino_t ino;
	uint64_t nblocks;		/* blocks measured */
	size_t cap;			/* of pblk and room */
	blk64_t *pblk;			/* 0: a hole, never used */
	uint32_t *room;			/* largest rec_len a new entry gets */
	uint32_t *from;			/* first entry with room for any name:
					   the ones before it stay full */
	struct dc_name *names;		/* open addressing by hash */
	size_t hcap, hn;
	int bypass;			/* not a directory the cache handles:
					   libext2fs' way until forgotten */
};

/* measure_block's "leave this directory to libext2fs" */
#define DC_BYPASS ((errcode_t)-1)

struct e3_dcache {
	struct dc_dir **slot;		/* open addressing by inode number */
	size_t cap, n;
	char *buf;			/* one directory block */
	blk64_t buf_blk;		/* the block buf holds as the image
					   has it, written by e3_dc_link; 0:
					   none (see buf_drop) */
	ext2_ino_t *owned;		/* directories whose whole map was
					   found their own (e3_dc_dir_owned);
					   open addressing, 0 = empty */
	size_t ocap, on;
};

static uint64_t name_hash(const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 0x100000001b3ULL;
	}
#ifdef E3_DC_TEST_HASH_VALUES
	/* tests/unit/test_dircache_collide.c: names share hashes */
	h %= E3_DC_TEST_HASH_VALUES;
#endif
	return h ? h : 1;
}

static errcode_t hash_add(struct dc_dir *d, uint64_t h, uint32_t blk,
			 uint32_t n);

static errcode_t hash_grow(struct dc_dir *d)
{
	struct dc_name *old = d->names;
	/* small first: most directories hold a few names, and every one
	 * met stays cached until the image closes */
	size_t oldcap = d->hcap, cap = oldcap ? oldcap * 2 : 16;

	d->names = calloc(cap, sizeof(*d->names));
	if (!d->names) {
		d->names = old;
		return ENOMEM;
	}
	d->hcap = cap;
	d->hn = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].h)
			hash_add(d, old[i].h, old[i].blk, old[i].n);
	free(old);
	return 0;
}

/* n more names of hash h, the last one in block blk. */
static errcode_t hash_add(struct dc_dir *d, uint64_t h, uint32_t blk,
			  uint32_t n)
{
	size_t i;

	if ((d->hn + 1) * 2 > d->hcap) {
		errcode_t err = hash_grow(d);

		if (err)
			return err;
	}
	for (i = h & (d->hcap - 1); d->names[i].h;
	     i = (i + 1) & (d->hcap - 1))
		if (d->names[i].h == h)
			break;
	if (!d->names[i].h)
		d->hn++;
	d->names[i].h = h;
	d->names[i].blk = blk;
	d->names[i].n += n;
	return 0;
}

/* The slot of h, or -1. */
static ssize_t hash_slot(const struct dc_dir *d, uint64_t h)
{
	if (!d->hcap)
		return -1;
	for (size_t i = h & (d->hcap - 1); d->names[i].h;
	     i = (i + 1) & (d->hcap - 1))
		if (d->names[i].h == h)
			return (ssize_t)i;
	return -1;
}

/* One name of hash h is gone; with the last, the slot is emptied and the
 * ones after it moved up so that linear probing still finds them. */
static void hash_drop(struct dc_dir *d, uint64_t h)
{
	ssize_t s = hash_slot(d, h);
	size_t i, j, home;

	if (s < 0 || --d->names[s].n > 0)
		return;
	i = j = (size_t)s;
	d->names[i] = (struct dc_name){ 0 };
	d->hn--;
	for (;;) {
		j = (j + 1) & (d->hcap - 1);
		if (!d->names[j].h)
			return;
		home = d->names[j].h & (d->hcap - 1);
		/* j stays unless its home lies cyclically outside (i, j] */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && (home <= i && home > j))) {
			d->names[i] = d->names[j];
			d->names[j] = (struct dc_name){ 0 };
			i = j;
		}
	}
}

static void dir_free(struct dc_dir *d)
{
	if (d) {
		free(d->pblk);
		free(d->room);
		free(d->from);
		free(d->names);
		free(d);
	}
}

/* ---- the per-image table ----------------------------------------------- */

static size_t ino_slot(const struct e3_dcache *c, ext2_ino_t ino)
{
	return (size_t)(ino * 0x9e3779b97f4a7c15ULL >> 20) & (c->cap - 1);
}

static struct dc_dir **table_find(struct e3_dcache *c, ext2_ino_t ino)
{
	if (!c->cap)
		return NULL;
	for (size_t i = ino_slot(c, ino); c->slot[i]; i = (i + 1) & (c->cap - 1))
		if (c->slot[i]->ino == ino)
			return &c->slot[i];
	return NULL;
}

static errcode_t table_put(struct e3_dcache *c, struct dc_dir *d)
{
	size_t i;

	if ((c->n + 1) * 2 > c->cap) {
		struct dc_dir **old = c->slot;
		size_t oldcap = c->cap, cap = oldcap ? oldcap * 2 : 64;

		c->slot = calloc(cap, sizeof(*c->slot));
		if (!c->slot) {
			c->slot = old;
			return ENOMEM;
		}
		c->cap = cap;
		for (size_t j = 0; j < oldcap; j++) {
			if (!old[j])
				continue;
			for (i = ino_slot(c, old[j]->ino); c->slot[i];
			     i = (i + 1) & (c->cap - 1))
				;
			c->slot[i] = old[j];
		}
		free(old);
	}
	for (i = ino_slot(c, d->ino); c->slot[i]; i = (i + 1) & (c->cap - 1))
		;
	c->slot[i] = d;
	c->n++;
	return 0;
}

/* buf no longer stands for any block. The next name added to a
 * directory usually goes into the block the last one went into, so
 * e3_dc_link keeps what it wrote instead of reading the block back (a
 * read through the journal's capture per name copied in). That is only
 * right while no one else writes the block: every path that can change a
 * directory block behind e3_dc_link (removals, undo, a directory
 * forgotten or dropped, its blocks freed) comes through here first. */
static void buf_drop(struct e3_dcache *c)
{
	c->buf_blk = 0;
}

/* Removes *p from the table, re-placing the entries after it so that
 * linear probing still finds them. */
static void table_del(struct e3_dcache *c, struct dc_dir **p)
{
	size_t i = (size_t)(p - c->slot), j = i;

	buf_drop(c);

	dir_free(c->slot[i]);
	c->slot[i] = NULL;
	c->n--;
	for (;;) {
		struct dc_dir *d;
		size_t home;

		j = (j + 1) & (c->cap - 1);
		d = c->slot[j];
		if (!d)
			return;
		home = ino_slot(c, d->ino);
		/* d stays unless its home lies cyclically outside (i, j] */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && (home <= i && home > j))) {
			c->slot[i] = d;
			c->slot[j] = NULL;
			i = j;
		}
	}
}

void e3_dc_free(struct e3_image *img)
{
	struct e3_dcache *c = img->load ? img->load->dcache : NULL;

	if (!c)
		return;
	for (size_t i = 0; i < c->cap; i++)
		dir_free(c->slot[i]);
	free(c->slot);
	free(c->buf);
	free(c->owned);
	free(c);
	img->load->dcache = NULL;
}

void e3_dc_forget(struct e3_image *img, ext2_ino_t dir)
{
	struct e3_dcache *c = img->load ? img->load->dcache : NULL;
	struct dc_dir **p = c ? table_find(c, dir) : NULL;

	if (c)
		buf_drop(c);
	if (p)
		table_del(c, p);
}

void e3_dc_drop_block(struct e3_image *img)
{
	struct e3_dcache *c = img->load ? img->load->dcache : NULL;

	if (c)
		buf_drop(c);
}

/* ---- directories whose blocks are their own ------------------------------ */

static size_t owned_find(const struct e3_dcache *c, ext2_ino_t dir)
{
	size_t i = (size_t)(dir * 0x9e3779b97f4a7c15ULL >> 20) & (c->ocap - 1);

	while (c->owned[i] && c->owned[i] != dir)
		i = (i + 1) & (c->ocap - 1);
	return i;
}

static errcode_t owned_put(struct e3_dcache *c, ext2_ino_t dir)
{
	if ((c->on + 1) * 2 > c->ocap) {
		ext2_ino_t *old = c->owned;
		size_t oldcap = c->ocap;

		c->owned = calloc(oldcap ? oldcap * 2 : 64, sizeof(*old));
		if (!c->owned) {
			c->owned = old;
			return ENOMEM;
		}
		c->ocap = oldcap ? oldcap * 2 : 64;
		for (size_t j = 0; j < oldcap; j++)
			if (old[j])
				c->owned[owned_find(c, old[j])] = old[j];
		free(old);
	}
	c->owned[owned_find(c, dir)] = dir;
	c->on++;
	return 0;
}

errcode_t e3_dc_dir_owned(struct e3_image *img, ext2_ino_t dir)
{
	struct e3_load *l = img->load;
	struct ext2_inode di;
	struct e3_dcache *c;
	errcode_t err;

	if (!l)
		return 0;
	if (!l->dcache && !(l->dcache = calloc(1, sizeof(*l->dcache))))
		return ENOMEM;
	c = l->dcache;
	if (c->ocap && c->owned[owned_find(c, dir)])
		return 0;
	err = ext2fs_read_inode(img->fs, dir, &di);
	if (!err)
		err = e3_map_owned(img, dir, &di, 0);
	return err ? err : owned_put(c, dir);
}

/* ---- reading a directory block ------------------------------------------ */

/* What a new entry can take from this one: an unused entry's whole
 * length, a used one's slack. */
static unsigned entry_room(const struct ext2_dir_entry *de, unsigned rec_len)
{
	unsigned min;

	if (!de->inode)
		return rec_len;
	min = EXT2_DIR_REC_LEN(ext2fs_dirent_name_len(de));
	return rec_len > min ? rec_len - min : 0;
}

/* Walks one block from offset off: room (largest entry_room), *from
 * (first entry with room for the shortest name, else the block size) and,
 * with d, every name hashed into d as block blk's. EXT2_ET_DIR_CORRUPTED
 * on a malformed block; DC_BYPASS on an unused entry after a block's
 * first, which ext2fs_link would merge into the entry before it (a rule
 * this cache does not follow: such directories, left by e2fsck or by
 * removals elsewhere, are left to libext2fs). */
static errcode_t measure_block(ext2_filsys fs, char *buf, unsigned off,
			       struct dc_dir *d, uint32_t blk, uint32_t *room,
			       uint32_t *from)
{
	unsigned rec_len, best = 0, r;
	errcode_t err;

	*from = fs->blocksize;
	while (off < fs->blocksize) {
		struct ext2_dir_entry *de = (struct ext2_dir_entry *)(buf + off);

		if (off + 8 > fs->blocksize)
			return EXT2_ET_DIR_CORRUPTED;
		err = ext2fs_get_rec_len(fs, de, &rec_len);
		if (err)
			return err;
		if (rec_len < 8 || rec_len % 4 || off + rec_len > fs->blocksize ||
		    (unsigned)ext2fs_dirent_name_len(de) + 8 > rec_len)
			return EXT2_ET_DIR_CORRUPTED;
		if (!de->inode && off)
			return DC_BYPASS;
		r = entry_room(de, rec_len);
		if (r > best)
			best = r;
		if (r >= EXT2_DIR_REC_LEN(1) && *from == fs->blocksize)
			*from = off;
		if (d && de->inode) {
			err = hash_add(d, name_hash(de->name,
					ext2fs_dirent_name_len(de)), blk, 1);
			if (err)
				return err;
		}
		off += rec_len;
	}
	*room = best;
	return 0;
}

struct map_walk {
	blk64_t *pblk;
	uint64_t from, n;
};

static int map_cb(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		  blk64_t ref_blk, int ref_offset, void *priv)
{
	struct map_walk *m = priv;

	(void)fs; (void)ref_blk; (void)ref_offset;
	if (blockcnt >= 0 && (uint64_t)blockcnt >= m->from &&
	    (uint64_t)blockcnt < m->from + m->n)
		m->pblk[blockcnt - m->from] = *blocknr;
	return 0;
}

/* Reads blocks [d->nblocks, n) of the directory into the cache. */
static errcode_t extend(ext2_filsys fs, struct e3_dcache *c, struct dc_dir *d,
			uint64_t n)
{
	struct map_walk m;
	errcode_t err;

	if (n > d->cap) {
		size_t cap = d->cap ? d->cap : 4;
		blk64_t *p;
		uint32_t *r;

		while (cap < n)
			cap *= 2;
		p = realloc(d->pblk, cap * sizeof(*p));
		if (!p)
			return ENOMEM;
		d->pblk = p;
		r = realloc(d->room, cap * sizeof(*r));
		if (!r)
			return ENOMEM;
		d->room = r;
		r = realloc(d->from, cap * sizeof(*r));
		if (!r)
			return ENOMEM;
		d->from = r;
		d->cap = cap;
	}
	m = (struct map_walk){ d->pblk + d->nblocks, d->nblocks, n - d->nblocks };
	memset(m.pblk, 0, m.n * sizeof(*m.pblk));
	if (m.n == 1) {
		err = ext2fs_bmap2(fs, d->ino, NULL, NULL, 0, d->nblocks, NULL,
				   m.pblk);
	} else {
		err = ext2fs_block_iterate3(fs, d->ino, BLOCK_FLAG_READ_ONLY |
					    BLOCK_FLAG_DATA_ONLY, NULL, map_cb, &m);
	}
	if (err)
		return err;
	buf_drop(c);
	for (uint64_t b = d->nblocks; b < n; b++) {
		d->room[b] = 0;
		d->from[b] = fs->blocksize;
		if (!d->pblk[b])
			continue;
		/* a damaged map can name an inode table block that parses as
		 * a directory block (an inode of size bs reads as one entry
		 * spanning it): names must never be written there */
		if (!e3_block_owned(e3_image_of(fs), d->pblk[b]))
			return E3_FILE_BLOCKS_BAD;
		err = ext2fs_read_dir_block4(fs, d->pblk[b], c->buf, 0, d->ino);
		if (!err)
			err = measure_block(fs, c->buf, 0, d, (uint32_t)b,
					    &d->room[b], &d->from[b]);
		if (err)
			return err;
	}
	d->nblocks = n;
	return 0;
}

/* Keeps only the mark: what was read of the directory is dropped. */
static void mark_bypass(struct dc_dir *d)
{
	free(d->pblk);
	free(d->room);
	free(d->from);
	free(d->names);
	d->pblk = NULL;
	d->room = d->from = NULL;
	d->names = NULL;
	d->nblocks = d->cap = d->hcap = d->hn = 0;
	d->bypass = 1;
}

/* The cache of dir, brought up to date with its inode (known: as the
 * caller read it under this fs_lock hold, else read here); NULL (and 0) when
 * the directory is not one the cache handles: indexed, checksummed, or
 * malformed — the caller then goes the slow, libext2fs way. */
static errcode_t dc_get_known(struct e3_image *img, ext2_ino_t dir,
			      const struct ext2_inode *known,
			      struct dc_dir **ret)
{
	ext2_filsys fs = img->fs;
	struct e3_load *l = img->load;
	struct e3_dcache *c;
	struct dc_dir **p, *d;
	struct ext2_inode di;
	uint64_t n;
	errcode_t err;

	*ret = NULL;
	if (!l || ext2fs_has_feature_metadata_csum(fs->super) ||
	    ext2fs_has_feature_inline_data(fs->super))
		return 0;
	if (known) {
		di = *known;
	} else {
		err = ext2fs_read_inode(fs, dir, &di);
		if (err)
			return err;
	}
	if (!l->dcache) {
		l->dcache = calloc(1, sizeof(*l->dcache));
		if (!l->dcache)
			return ENOMEM;
	}
	c = l->dcache;
	p = table_find(c, dir);
	n = EXT2_I_SIZE(&di) / fs->blocksize;
	if (!LINUX_S_ISDIR(di.i_mode) || (di.i_flags & EXT2_INDEX_FL) ||
	    EXT2_I_SIZE(&di) % fs->blocksize || n > (1u << 24)) {
		if (p)
			table_del(c, p);
		return 0;
	}
	if (p && (*p)->bypass)
		return 0;
	if (p && (*p)->nblocks > n) {
		table_del(c, p);
		p = NULL;
	}
	if (!c->buf && !(c->buf = malloc(fs->blocksize)))
		return ENOMEM;
	if (p) {
		d = *p;
	} else {
		d = calloc(1, sizeof(*d));
		if (!d)
			return ENOMEM;
		d->ino = dir;
		err = table_put(c, d);
		if (err) {
			dir_free(d);
			return err;
		}
		p = table_find(c, dir);
	}
	if (d->nblocks < n) {
		err = extend(fs, c, d, n);
		if (err == DC_BYPASS) {
			buf_drop(c);
			mark_bypass(d);
			return 0;
		}
		if (err) {
			table_del(c, p);
			return err == EXT2_ET_DIR_CORRUPTED ? 0 : err;
		}
	}
	*ret = d;
	return 0;
}

/* ---- the two questions ----------------------------------------------------- */

errcode_t e3_dc_find_known(struct e3_image *img, ext2_ino_t dir,
			   const struct ext2_inode *di, const char *name,
			   ext2_ino_t *ino, blk64_t *lblk)
{
	struct dc_dir *d;
	errcode_t err;
	ssize_t i;

	*lblk = E3_DIR_BLOCK_UNKNOWN;
	err = dc_get_known(img, dir, di, &d);
	if (err)
		return err;
	if (d) {
		i = hash_slot(d, name_hash(name, strlen(name)));
		if (i < 0)
			return EXT2_ET_FILE_NOT_FOUND;
		err = e3_dir_find_in(img->fs, dir, d->names[i].blk, name, ino);
		if (!err) {
			*lblk = d->names[i].blk;
			return 0;
		}
		if (err != EXT2_ET_FILE_NOT_FOUND &&
		    err != EXT2_ET_DIR_CORRUPTED)
			return err;
	}
	return e3_dir_find(img->fs, dir, name, ino, lblk);
}

errcode_t e3_dc_find(struct e3_image *img, ext2_ino_t dir, const char *name,
		     ext2_ino_t *ino, blk64_t *lblk)
{
	return e3_dc_find_known(img, dir, NULL, name, ino, lblk);
}

void e3_dc_unlinked(struct e3_image *img, ext2_ino_t dir, const char *name,
		    blk64_t lblk)
{
	struct e3_dcache *c = img->load ? img->load->dcache : NULL;
	struct dc_dir **p = c ? table_find(c, dir) : NULL;
	struct dc_dir *d = p ? *p : NULL;

	if (c)
		buf_drop(c);
	if (!d || d->bypass)
		return;
	hash_drop(d, name_hash(name, strlen(name)));
	/* the entry's room went to the one before it, or its record became
	 * an unused first entry: the block offers more now */
	if (lblk >= d->nblocks || !d->pblk[lblk] ||
	    ext2fs_read_dir_block4(img->fs, d->pblk[lblk], c->buf, 0, dir) ||
	    measure_block(img->fs, c->buf, 0, NULL, 0, &d->room[lblk],
			  &d->from[lblk]))
		table_del(c, p);
}

/* Puts the entry into the first entry of buf (from offset off) with room
 * for need bytes, as ext2fs_link would; 0 when none has. [*lo, *hi): the
 * bytes it changed (the split entry's rec_len to the new name's end). */
static int place(ext2_filsys fs, char *buf, unsigned off, const char *name,
		 size_t len, ext2_ino_t ino, int ft, unsigned need,
		 unsigned *lo, unsigned *hi)
{
	unsigned rec_len;

	while (off < fs->blocksize) {
		struct ext2_dir_entry *de = (struct ext2_dir_entry *)(buf + off);

		if (off + 8 > fs->blocksize ||
		    ext2fs_get_rec_len(fs, de, &rec_len) || rec_len < 8 ||
		    off + rec_len > fs->blocksize)
			return 0;
		if (entry_room(de, rec_len) >= need) {
			if (de->inode) {	/* split: de keeps its minimum */
				unsigned min = EXT2_DIR_REC_LEN(
					ext2fs_dirent_name_len(de));

				ext2fs_set_rec_len(fs, min, de);
				de = (struct ext2_dir_entry *)(buf + off + min);
				ext2fs_set_rec_len(fs, rec_len - min, de);
			}
			de->inode = ino;
			ext2fs_dirent_set_name_len(de, (int)len);
			ext2fs_dirent_set_file_type(de, ft);
			memcpy(de->name, name, len);
			*lo = off;
			*hi = (unsigned)((char *)de->name + len - buf);
			return 1;
		}
		off += rec_len;
	}
	return 0;
}

/* The new entry into the image: only the bytes place changed when the
 * journal captures and the block needs no checksum or byte swap (a 4 KiB
 * block copied into the transaction per name was a tenth of a small
 * file's user-space copy-in work), else the whole block as libext2fs
 * writes it. buf is the block as the image holds it but for those bytes
 * (the cache's copy, dropped whenever the block changes behind it), so
 * both leave the same block. */
static errcode_t write_entry(struct e3_image *img, blk64_t pblk,
			     const char *buf, unsigned lo, unsigned hi,
			     ext2_ino_t dir)
{
	ext2_filsys fs = img->fs;
	uint64_t off = (uint64_t)pblk * fs->blocksize + lo;

	if (e3_itab_usable(fs) && e3_journal_captures(img->journal, fs->io) &&
	    off <= ULONG_MAX && hi > lo)
		return io_channel_write_byte(fs->io, (unsigned long)off,
					     (int)(hi - lo), buf + lo);
	return ext2fs_write_dir_block4(fs, pblk, (void *)buf, 0, dir);
}

errcode_t e3_dc_link(struct e3_image *img, ext2_ino_t dir, const char *name,
		     ext2_ino_t ino, int ft, int *handled)
{
	return e3_dc_link_known(img, dir, NULL, name, ino, ft, handled);
}

errcode_t e3_dc_link_known(struct e3_image *img, ext2_ino_t dir,
			   const struct ext2_inode *di, const char *name,
			   ext2_ino_t ino, int ft, int *handled)
{
	ext2_filsys fs = img->fs;
	size_t len = strlen(name);
	unsigned need = EXT2_DIR_REC_LEN(len);
	struct e3_dcache *c;
	struct dc_dir *d;
	unsigned lo = 0, hi = 0;
	errcode_t err;
	char *buf;

	*handled = 0;
	err = dc_get_known(img, dir, di, &d);
	if (err || !d)
		return err;
	*handled = 1;
	c = img->load->dcache;
	buf = c->buf;
	for (uint64_t b = 0; b < d->nblocks; b++) {
		if (d->room[b] < need)
			continue;
		if (c->buf_blk != d->pblk[b]) {
			buf_drop(c);
			err = ext2fs_read_dir_block4(fs, d->pblk[b], buf, 0,
						     dir);
			if (err)
				return err;
			c->buf_blk = d->pblk[b];
		}
		if (place(fs, buf, d->from[b], name, len, ino, ft, need,
			  &lo, &hi)) {
			/* buf differs from the image until this succeeds */
			buf_drop(c);
			err = write_entry(img, d->pblk[b], buf, lo, hi, dir);
			if (err)
				return err;
			c->buf_blk = d->pblk[b];
			err = hash_add(d, name_hash(name, len), (uint32_t)b, 1);
			if (!err)
				err = measure_block(fs, buf, d->from[b], NULL, 0,
						    &d->room[b], &d->from[b]);
			if (err)	/* the entry is written: forget, stay right */
				e3_dc_forget(img, dir);
			return 0;
		}
		err = measure_block(fs, buf, d->from[b], NULL, 0, &d->room[b],
				    &d->from[b]);
		if (err) {
			e3_dc_forget(img, dir);
			*handled = 0;
			return 0;
		}
	}
	return EXT2_ET_DIR_NO_SPACE;
}
