/*
 * defrag_owners.c: a block-to-owner map of the files that making room
 * (defrag_room.c) may move out of the way, so that choosing a stretch
 * and finding its occupants costs a lookup, not an inode scan.
 *
 * Built from one inode scan the first time room is made in a pass, then
 * kept up to date: after each move the room pass makes, the moved file's
 * entries are replaced by a fresh read of its map (one inode, not a
 * scan). It holds only files under a group's worth of blocks that
 * df_movable allows (the only ones that may be occupants); their block
 * counts never change by moving, so the set of files is fixed.
 *
 * What it is not: an authority on what is free. Every decision that
 * books blocks still tests the block bitmap and the allocator
 * (defrag_room.c's kind() and its ready check) and every move reads the
 * file's map afresh (df_move), so an entry gone stale can only make a
 * worse choice, never a move onto blocks in use.
 *
 * Memory: 16 bytes per extent (a run of consecutive blocks of one file,
 * data and indirect blocks alike) and 16 bytes per file; on the aged
 * 4 GiB image a few MiB. Time: an update is two linear passes over the
 * extents (filter out, merge in), a lookup a binary search.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e3img.h"
#include "defrag_int.h"
#include "util/grow.h"

struct own_file {
	ext2_ino_t ino;
	uint32_t runs;
	uint64_t blocks;
};

struct own_ext {
	blk64_t start;
	uint32_t len;
	uint32_t file;			/* index into files */
};

struct df_owners {
	struct own_file *files;		/* sorted by inode number */
	size_t nfiles, capfiles;
	struct own_ext *ext;		/* sorted by start, disjoint */
	size_t next, capext;
	blk64_t *tmp;			/* one file's blocks, sorted */
	size_t captmp;
	struct own_ext *add;		/* one file's extents */
	size_t nadd, capadd;
};

static int cmp_blk(const void *a, const void *b)
{
	blk64_t x = *(const blk64_t *)a, y = *(const blk64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_ext(const void *a, const void *b)
{
	const struct own_ext *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* m's blocks (data and indirect) as sorted extents of file f in o->add. */
static errcode_t to_extents(struct df_owners *o, const struct df_map *m,
			    uint32_t f)
{
	size_t n = m->ndata + m->nmeta;

	o->nadd = 0;
	if (n > o->captmp) {
		blk64_t *t = realloc(o->tmp, n * sizeof(*t));

		if (!t)
			return ENOMEM;
		o->tmp = t;
		o->captmp = n;
	}
	/* (a map without indirect blocks has no meta array at all) */
	if (m->ndata)
		memcpy(o->tmp, m->pblk, m->ndata * sizeof(blk64_t));
	if (m->nmeta)
		memcpy(o->tmp + m->ndata, m->meta, m->nmeta * sizeof(blk64_t));
	qsort(o->tmp, n, sizeof(blk64_t), cmp_blk);
	for (size_t i = 0; i < n; i++) {
		struct own_ext *v;

		if (o->nadd && o->add[o->nadd - 1].start +
		    o->add[o->nadd - 1].len == o->tmp[i]) {
			o->add[o->nadd - 1].len++;
			continue;
		}
		v = e3_grow(o->add, o->nadd, &o->capadd, sizeof(*v), 16);
		if (!v)
			return ENOMEM;
		o->add = v;
		o->add[o->nadd++] = (struct own_ext){ o->tmp[i], 1, f };
	}
	return 0;
}

/* Appends o->add to o->ext (unsorted: the build sorts once at the end). */
static errcode_t append(struct df_owners *o)
{
	if (o->next + o->nadd > o->capext) {
		size_t cap = o->capext ? o->capext : 1024;
		struct own_ext *v;

		while (cap < o->next + o->nadd)
			cap *= 2;
		if (!(v = realloc(o->ext, cap * sizeof(*v))))
			return ENOMEM;
		o->ext = v;
		o->capext = cap;
	}
	memcpy(o->ext + o->next, o->add, o->nadd * sizeof(*o->add));
	o->next += o->nadd;
	return 0;
}

void df_owners_free(struct df_owners *o)
{
	if (!o)
		return;
	free(o->files);
	free(o->ext);
	free(o->tmp);
	free(o->add);
	free(o);
}

static errcode_t add_owner(void *arg, ext2_ino_t ino, const struct df_map *m)
{
	struct df_owners *o = arg;
	struct own_file *v;
	errcode_t err;

	v = e3_grow(o->files, o->nfiles, &o->capfiles, sizeof(*v), 256);
	if (!v)
		return ENOMEM;
	o->files = v;
	o->files[o->nfiles] = (struct own_file){ ino, m->runs,
						 m->ndata + m->nmeta };
	if ((err = to_extents(o, m, o->nfiles)) || (err = append(o)))
		return err;
	o->nfiles++;
	return 0;
}

errcode_t df_owners_build(struct df_ctx *c, struct df_owners **out)
{
	struct df_owners *o = calloc(1, sizeof(*o));
	errcode_t err;

	*out = NULL;
	if (!o)
		return ENOMEM;
	if ((err = df_each_small(c, add_owner, o))) {
		df_owners_free(o);
		return err;
	}
	qsort(o->ext, o->next, sizeof(*o->ext), cmp_ext);
	*out = o;
	return 0;
}

static struct own_file *find_file(struct df_owners *o, ext2_ino_t ino)
{
	size_t lo = 0, hi = o->nfiles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (o->files[mid].ino == ino)
			return &o->files[mid];
		if (o->files[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

errcode_t df_owners_update(struct df_ctx *c, struct df_owners *o,
			   ext2_ino_t ino)
{
	struct own_file *f = find_file(o, ino);
	struct df_map m = { 0 };
	uint32_t fi;
	size_t n = 0, i, j, k;
	errcode_t err;

	if (!f)
		return 0;	/* not one that may move out of the way */
	fi = (uint32_t)(f - o->files);
	if ((err = df_map_read(c, ino, &m)))
		goto out;
	if ((err = to_extents(o, &m, fi)))
		goto out;
	f->runs = m.runs;
	f->blocks = m.ndata + m.nmeta;
	/* its old extents out... */
	for (i = 0; i < o->next; i++)
		if (o->ext[i].file != fi)
			o->ext[n++] = o->ext[i];
	o->next = n;
	if (o->next + o->nadd > o->capext) {
		size_t cap = o->capext ? o->capext * 2 : 1024;
		struct own_ext *v;

		while (cap < o->next + o->nadd)
			cap *= 2;
		if (!(v = realloc(o->ext, cap * sizeof(*v)))) {
			err = ENOMEM;
			goto out;
		}
		o->ext = v;
		o->capext = cap;
	}
	/* ...and its new ones merged in, from the back */
	i = o->next;
	j = o->nadd;
	k = o->next + o->nadd;
	while (j) {
		if (i && o->ext[i - 1].start > o->add[j - 1].start)
			o->ext[--k] = o->ext[--i];
		else
			o->ext[--k] = o->add[--j];
	}
	o->next += o->nadd;
out:
	df_map_free(&m);
	return err;
}

void df_owners_mark(const struct df_owners *o, ext2fs_block_bitmap bm,
		    ext2_ino_t self, uint64_t limit)
{
	for (size_t i = 0; i < o->next; i++) {
		const struct own_file *f = &o->files[o->ext[i].file];

		if (f->ino != self && f->blocks <= limit)
			ext2fs_mark_block_bitmap_range2(bm, o->ext[i].start,
							o->ext[i].len);
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The first extent ending after lo (the extents are disjoint, so their
 * ends ascend): a binary search. */
static size_t first_ending_after(const struct df_owners *o, blk64_t lo)
{
	size_t a = 0, b = o->next;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (o->ext[mid].start + o->ext[mid].len <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

errcode_t df_owners_in(struct df_owners *o, blk64_t lo, blk64_t hi,
		       ext2_ino_t self, uint64_t limit,
		       struct df_owner **v, size_t *n, size_t *cap)
{
	size_t a = first_ending_after(o, lo), nidx = 0, capidx = 0;
	uint32_t *idx = NULL;
	errcode_t err = 0;

	*n = 0;
	for (; a < o->next && o->ext[a].start < hi; a++) {
		const struct own_file *f = &o->files[o->ext[a].file];
		uint32_t *t;

		if (f->ino == self || f->blocks > limit)
			continue;
		if (!(t = e3_grow(idx, nidx, &capidx, sizeof(*t), 32))) {
			free(idx);
			return ENOMEM;
		}
		idx = t;
		idx[nidx++] = o->ext[a].file;
	}
	/* each file once, in inode order (files[] is sorted by inode) */
	if (nidx)	/* (idx is NULL when nothing was found) */
		qsort(idx, nidx, sizeof(*idx), cmp_u32);
	for (size_t i = 0; i < nidx; i++) {
		const struct own_file *f = &o->files[idx[i]];
		struct df_owner *t;

		if (i && idx[i] == idx[i - 1])
			continue;
		if (!(t = e3_grow(*v, *n, cap, sizeof(*t), 32))) {
			err = ENOMEM;
			break;
		}
		*v = t;
		(*v)[(*n)++] = (struct df_owner){ f->ino, f->runs, f->blocks };
	}
	free(idx);
	return err;
}

errcode_t df_owners_gap(struct df_owners *o, blk64_t lo, blk64_t hi,
			struct df_owner **v, size_t *n, size_t *cap, int *ok)
{
	size_t a = first_ending_after(o, lo);
	blk64_t at = lo;
	uint64_t sum = 0;
	errcode_t err;

	*ok = 0;
	*n = 0;
	/* the extents, back to back from lo to hi: every block owned */
	for (; at < hi; a++) {
		if (a >= o->next || o->ext[a].start != at ||
		    o->ext[a].start + o->ext[a].len > hi)
			return 0;
		at += o->ext[a].len;
	}
	if ((err = df_owners_in(o, lo, hi, 0, UINT64_MAX, v, n, cap)))
		return err;
	/* the files' blocks are hi - lo inside; as many in all only if
	 * none has a block outside */
	for (size_t i = 0; i < *n; i++)
		sum += (*v)[i].blocks;
	*ok = sum == hi - lo;
	return 0;
}
