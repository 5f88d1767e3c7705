/*
 * blockmap.c: a file's block map built in memory (see blockmap.h).
 * Indirect blocks hold little-endian pointers, kept in that form here so
 * that writing one out is a single call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e3_err.h"
#include "blockmap.h"
#include "util/grow.h"

struct bm_node {
	blk64_t pblk;			/* where this indirect block lives */
	uint32_t *ptrs;			/* P pointers, little-endian */
	struct bm_node **kids;		/* level > 1: children in memory */
	unsigned level;			/* 1 IND, 2 DIND, 3 TIND */
	bool dirty;
};

void bm_init(struct e3_bmap *bm, unsigned blocksize, const struct bm_io *io)
{
	memset(bm, 0, sizeof(*bm));
	bm->bs = blocksize;
	bm->P = blocksize / 4;
	bm->io = *io;
}

static void node_free(struct bm_node *n, unsigned P)
{
	if (!n)
		return;
	if (n->kids)
		for (unsigned i = 0; i < P; i++)
			node_free(n->kids[i], P);
	free(n->kids);
	free(n->ptrs);
	free(n);
}

void bm_free(struct e3_bmap *bm)
{
	for (int i = 0; i < 3; i++) {
		node_free(bm->top[i], bm->P);
		bm->top[i] = NULL;
	}
	free(bm->written);
	bm->written = NULL;
	bm->nwritten = bm->capwritten = 0;
}

uint64_t bm_max_blocks(const struct e3_bmap *bm)
{
	uint64_t P = bm->P;

	return EXT2_NDIR_BLOCKS + P + P * P + P * P * P;
}

/* Depth (0 = direct, 1..3 = under i_block[11 + depth]) and the slot at
 * each level, outermost first. */
static int path_of(unsigned P, uint64_t lblk, unsigned off[3])
{
	uint64_t p = P;

	if (lblk < EXT2_NDIR_BLOCKS) {
		off[0] = (unsigned)lblk;
		return 0;
	}
	lblk -= EXT2_NDIR_BLOCKS;
	if (lblk < p) {
		off[0] = (unsigned)lblk;
		return 1;
	}
	lblk -= p;
	if (lblk < p * p) {
		off[0] = (unsigned)(lblk / p);
		off[1] = (unsigned)(lblk % p);
		return 2;
	}
	lblk -= p * p;
	if (lblk < p * p * p) {
		off[0] = (unsigned)(lblk / (p * p));
		off[1] = (unsigned)((lblk / p) % p);
		off[2] = (unsigned)(lblk % p);
		return 3;
	}
	return -1;
}

static errcode_t node_new(struct e3_bmap *bm, blk64_t pblk, unsigned level,
			  int read, struct bm_node **ret)
{
	struct bm_node *n = calloc(1, sizeof(*n));
	errcode_t err;

	if (!n)
		return ENOMEM;
	n->pblk = pblk;
	n->level = level;
	n->ptrs = calloc(bm->P, sizeof(uint32_t));
	if (level > 1)
		n->kids = calloc(bm->P, sizeof(*n->kids));
	if (!n->ptrs || (level > 1 && !n->kids)) {
		node_free(n, bm->P);
		return ENOMEM;
	}
	if (read) {
		err = bm->io.read(bm->io.ctx, pblk, n->ptrs);
		if (err) {
			node_free(n, bm->P);
			return err;
		}
	}
	*ret = n;
	return 0;
}

/* The node behind pointer slot (*ptr, *mem), read from disk if it exists
 * there only; NULL when the slot is empty. */
static errcode_t node_get(struct e3_bmap *bm, blk64_t pblk, unsigned level,
			  struct bm_node **mem, struct bm_node **ret)
{
	errcode_t err;

	if (!*mem && pblk) {
		err = node_new(bm, pblk, level, 1, mem);
		if (err)
			return err;
	}
	*ret = *mem;
	return 0;
}

/* Walks to lblk's slot. Stops early (leaf = NULL) at an empty pointer.
 * nodes[i] is the node at depth i (outermost first). */
static errcode_t walk(struct e3_bmap *bm, uint64_t lblk, int *depth,
		      unsigned off[3], struct bm_node *nodes[3],
		      unsigned *missing)
{
	int d = path_of(bm->P, lblk, off);
	struct bm_node *n;
	blk64_t pblk;
	errcode_t err;

	*depth = d;
	*missing = 0;
	nodes[0] = nodes[1] = nodes[2] = NULL;
	if (d < 0)
		return E3_FILE_TOO_BIG;
	if (d == 0)
		return 0;
	pblk = bm->iblock[EXT2_NDIR_BLOCKS + d - 1];
	err = node_get(bm, pblk, (unsigned)d, &bm->top[d - 1], &n);
	for (int i = 0; i < d; i++) {
		if (err)
			return err;
		if (!n) {
			*missing = (unsigned)(d - i);
			return 0;
		}
		nodes[i] = n;
		if (i + 1 < d) {
			pblk = ext2fs_le32_to_cpu(n->ptrs[off[i]]);
			err = node_get(bm, pblk, n->level - 1, &n->kids[off[i]], &n);
		}
	}
	return err;
}

errcode_t bm_lookup(struct e3_bmap *bm, uint64_t lblk, blk64_t *pblk)
{
	struct bm_node *nodes[3];
	unsigned off[3], missing;
	int d;
	errcode_t err;

	err = walk(bm, lblk, &d, off, nodes, &missing);
	if (err)
		return err;
	if (d == 0)
		*pblk = bm->iblock[off[0]];
	else if (missing)
		*pblk = 0;
	else
		*pblk = ext2fs_le32_to_cpu(nodes[d - 1]->ptrs[off[d - 1]]);
	return 0;
}

errcode_t bm_missing(struct e3_bmap *bm, uint64_t lblk, unsigned *n)
{
	struct bm_node *nodes[3];
	unsigned off[3];
	int d;

	return walk(bm, lblk, &d, off, nodes, n);
}

/* Values s in [a, b) with s >= base and (s - base) % step == 0. */
static uint64_t count_steps(uint64_t a, uint64_t b, uint64_t base,
			    uint64_t step)
{
	uint64_t first, last;

	if (b <= base || a >= b)
		return 0;
	if (a < base)
		a = base;
	first = (a - base + step - 1) / step;
	last = (b - 1 - base) / step;
	return last >= first ? last - first + 1 : 0;
}

uint64_t bm_meta_between(unsigned P, uint64_t lo, uint64_t hi)
{
	uint64_t p = P, n = 0;
	uint64_t ind = EXT2_NDIR_BLOCKS, dind = ind + p, tind = dind + p * p;

	if (hi <= lo + 1)
		return 0;
	n += count_steps(lo + 1, hi, ind, p);		/* every IND */
	n += count_steps(lo + 1, hi, dind, p * p);	/* every DIND */
	n += count_steps(lo + 1, hi, tind, p * p * p);	/* the TIND */
	return n;
}

uint64_t bm_blocks_for(unsigned P, uint64_t nblocks)
{
	return nblocks + bm_meta_between(P, 0, nblocks);
}

bool bm_was_written(struct e3_bmap *bm, blk64_t blk)
{
	for (size_t i = 0; i < bm->nwritten; i++)
		if (bm->written[i] == blk)
			return true;
	return false;
}

static errcode_t node_write(struct e3_bmap *bm, struct bm_node *n)
{
	errcode_t err;

	if (!n->dirty)
		return 0;
	if (!bm_was_written(bm, n->pblk)) {
		blk64_t *w = e3_grow(bm->written, bm->nwritten,
				     &bm->capwritten, sizeof(*w), 16);

		if (!w)
			return ENOMEM;
		bm->written = w;
		/* recorded before the write: a failed write may still have
		 * reached the journal */
		bm->written[bm->nwritten++] = n->pblk;
	}
	err = bm->io.write(bm->io.ctx, n->pblk, n->ptrs);
	if (err)
		return err;
	n->dirty = false;
	return 0;
}

static errcode_t flush_node(struct e3_bmap *bm, struct bm_node *n)
{
	errcode_t err;

	if (!n)
		return 0;
	if (n->kids)
		for (unsigned i = 0; i < bm->P; i++) {
			err = flush_node(bm, n->kids[i]);
			if (err)
				return err;
		}
	return node_write(bm, n);
}

/* After filling the last slot of a range, write the nodes whose whole
 * range is now mapped and drop them from memory. */
static errcode_t retire_full(struct e3_bmap *bm, int d, unsigned off[3],
			     struct bm_node *nodes[3])
{
	errcode_t err;

	for (int i = d - 1; i >= 0; i--) {
		struct bm_node *n = nodes[i];

		if (off[i] != bm->P - 1)
			return 0;
		if (n->kids && n->kids[bm->P - 1])
			return 0;
		/* out-of-order writers may leave other children in memory */
		err = flush_node(bm, n);
		if (err)
			return err;
		if (i == 0)
			bm->top[d - 1] = NULL;
		else
			nodes[i - 1]->kids[off[i - 1]] = NULL;
		node_free(n, bm->P);
	}
	return 0;
}

errcode_t bm_set(struct e3_bmap *bm, uint64_t lblk, blk64_t pblk,
		 const blk64_t *meta, unsigned nmeta)
{
	struct bm_node *nodes[3], **slot, *n;
	unsigned off[3], missing, used = 0;
	uint32_t *ptr;
	int d;
	errcode_t err;

	err = walk(bm, lblk, &d, off, nodes, &missing);
	if (err)
		return err;
	if (missing != nmeta)
		return EINVAL;
	if (d == 0) {
		bm->iblock[off[0]] = (uint32_t)pblk;
		bm->nblocks++;
		return 0;
	}
	for (int i = 0; i < d; i++) {
		if (nodes[i])
			continue;
		if (i == 0) {
			ptr = &bm->iblock[EXT2_NDIR_BLOCKS + d - 1];
			slot = &bm->top[d - 1];
		} else {
			ptr = &nodes[i - 1]->ptrs[off[i - 1]];
			slot = &nodes[i - 1]->kids[off[i - 1]];
		}
		err = node_new(bm, meta[used], (unsigned)(d - i), 0, &n);
		if (err)
			return err;
		n->dirty = true;
		*slot = n;
		if (i == 0) {
			*ptr = (uint32_t)meta[used];
		} else {
			*ptr = ext2fs_cpu_to_le32((uint32_t)meta[used]);
			nodes[i - 1]->dirty = true;
		}
		nodes[i] = n;
		used++;
		bm->nblocks++;
	}
	nodes[d - 1]->ptrs[off[d - 1]] = ext2fs_cpu_to_le32((uint32_t)pblk);
	nodes[d - 1]->dirty = true;
	bm->nblocks++;
	return retire_full(bm, d, off, nodes);
}

errcode_t bm_flush(struct e3_bmap *bm)
{
	errcode_t err;

	for (int i = 0; i < 3; i++) {
		err = flush_node(bm, bm->top[i]);
		if (err)
			return err;
	}
	return 0;
}
