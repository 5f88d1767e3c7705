/*
 * alloc_bitmap.c: the allocator's mirror of the block bitmap. One bit per
 * block from s_first_data_block, in 64-bit words claimed with atomic
 * fetch-or, so threads claim blocks without any lock and a block can be
 * won by one thread only. A second, read-only bitmap marks the metadata
 * at the head of each group, which lets a size-hinted window span group
 * boundaries (the metadata is unavoidable, the data either side is one
 * run in e2fsck's eyes apart from that jump).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_int.h"

static inline uint64_t wload(const uint64_t *w)
{
	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

static uint64_t nbits(const struct e3_alloc *a)
{
	return a->nblocks - a->first;
}

static size_t nwords(const struct e3_alloc *a)
{
	return (size_t)((nbits(a) + 63) / 64);
}

/* Copies an ext2fs bitmap's bits [first, nblocks) into words. */
static errcode_t copy_bits(struct e3_alloc *a, ext2fs_block_bitmap bm,
			   uint64_t *words)
{
	size_t nbytes = (size_t)((nbits(a) + 7) / 8);
	unsigned char *buf = calloc(nbytes ? nbytes : 1, 1);
	errcode_t err;

	if (!buf)
		return ENOMEM;
	err = ext2fs_get_block_bitmap_range2(bm, a->first, nbits(a), buf);
	if (!err)
		for (size_t i = 0; i < nbytes; i++)
			words[i / 8] |= (uint64_t)buf[i] << (8 * (i % 8));
	free(buf);
	return err;
}

static errcode_t load_meta(struct e3_alloc *a)
{
	ext2_filsys fs = a->fs;
	ext2fs_block_bitmap m;
	errcode_t err;

	err = ext2fs_allocate_block_bitmap(fs, "e3 group metadata", &m);
	if (err)
		return err;
	for (dgrp_t g = 0; g < a->ngroups; g++) {
		ext2fs_reserve_super_and_bgd(fs, g, m);
		ext2fs_mark_block_bitmap2(m, ext2fs_block_bitmap_loc(fs, g));
		ext2fs_mark_block_bitmap2(m, ext2fs_inode_bitmap_loc(fs, g));
		ext2fs_mark_block_bitmap_range2(m, ext2fs_inode_table_loc(fs, g),
						fs->inode_blocks_per_group);
	}
	err = copy_bits(a, m, a->meta);
	ext2fs_free_block_bitmap(m);
	return err;
}

/* The blocks inode 1 lists as bad are in use, whatever the bitmap says:
 * a bitmap that shows one free (a list planted by debugfs or badblocks
 * without the bitmap, or an old kernel's) must not hand it to a file.
 * libext2fs reads the list, skipping blocks outside the filesystem. */
static errcode_t mark_bad_blocks(struct e3_alloc *a)
{
	ext2_badblocks_list bb = NULL;
	ext2_badblocks_iterate it;
	blk_t b;
	errcode_t err;

	/* an unreadable list (damaged inode 1) is the checker's to mend:
	 * a writer that cannot know which blocks are bad must not write */
	err = ext2fs_read_bb_inode(a->fs, &bb);
	if (err)
		return err == ENOMEM ? err : E3_BADBLOCKS_UNREADABLE;
	if (ext2fs_badblocks_list_iterate_begin(bb, &it) == 0) {
		while (ext2fs_badblocks_list_iterate(it, &b))
			if (b >= a->first && b < a->nblocks)
				a->used[(b - a->first) / 64] |=
					1ULL << ((b - a->first) % 64);
		ext2fs_badblocks_list_iterate_end(it);
	}
	ext2fs_badblocks_list_free(bb);
	return 0;
}

errcode_t bm_load(struct e3_alloc *a)
{
	size_t n = nwords(a);
	uint64_t tail = nbits(a) % 64;
	errcode_t err;

	a->used = calloc(n + 1, sizeof(uint64_t));
	a->meta = calloc(n + 1, sizeof(uint64_t));
	a->gfree = calloc(a->ngroups, sizeof(uint32_t));
	if (!a->used || !a->meta || !a->gfree)
		return ENOMEM;
	err = copy_bits(a, a->fs->block_map, a->used);
	if (!err)
		err = mark_bad_blocks(a);
	if (!err)
		err = load_meta(a);
	if (err)
		return err;
	/* Bits past the last block are permanently "in use", so scans stop. */
	if (tail)
		a->used[n - 1] |= ~0ULL << tail;
	for (dgrp_t g = 0; g < a->ngroups; g++)
		a->gfree[g] = (uint32_t)bm_count_free(a, grp_first(a, g),
						      grp_last(a, g));
	return 0;
}

bool bm_used(const struct e3_alloc *a, blk64_t b)
{
	uint64_t i = b - a->first;

	return (wload(&a->used[i / 64]) >> (i % 64)) & 1;
}

bool e3_alloc_is_meta(const struct e3_alloc *a, blk64_t b)
{
	uint64_t i = b - a->first;

	if (b < a->first || b >= a->nblocks)
		return true;
	return (a->meta[i / 64] >> (i % 64)) & 1;	/* read-only after load */
}

bool bm_claim(struct e3_alloc *a, blk64_t b)
{
	uint64_t i = b - a->first, bit = 1ULL << (i % 64);

	if (__atomic_fetch_or(&a->used[i / 64], bit, __ATOMIC_ACQ_REL) & bit)
		return false;
	__atomic_fetch_sub(&a->gfree[grp_of(a, b)], 1, __ATOMIC_RELAXED);
	return true;
}

void bm_release(struct e3_alloc *a, blk64_t b, blk64_t n)
{
	bool freed = false;

	for (; n; n--, b++) {
		uint64_t i = b - a->first, bit = 1ULL << (i % 64);

		if (b < a->first || b >= a->nblocks)
			continue;
		if (__atomic_fetch_and(&a->used[i / 64], ~bit,
				       __ATOMIC_ACQ_REL) & bit) {
			__atomic_fetch_add(&a->gfree[grp_of(a, b)], 1,
					   __ATOMIC_RELAXED);
			freed = true;
		}
	}
	/* after the bits: a search that reads the new count sees them
	 * cleared; one that overlaps this release may miss them, as a
	 * search that ran just before it would have (alloc_int.h) */
	if (freed)
		__atomic_fetch_add(&a->free_gen, 1, __ATOMIC_RELEASE);
}

/* Shared word scan: the first set bit of f(k) at index >= i and <= e. */
#define SCAN_WORDS(EXPR)						\
	do {								\
		uint64_t i_ = from - a->first, e_ = to - a->first;	\
		size_t k = (size_t)(i_ / 64);				\
		uint64_t w;						\
		if (from > to)						\
			return E3_NOBLK;				\
		w = (EXPR) & (~0ULL << (i_ % 64));			\
		for (;;) {						\
			if (w) {					\
				uint64_t x = (uint64_t)k * 64 +		\
					(uint64_t)__builtin_ctzll(w);	\
				return x <= e_ ? a->first + x : E3_NOBLK; \
			}						\
			if ((uint64_t)++k * 64 > e_)			\
				return E3_NOBLK;			\
			w = (EXPR);					\
		}							\
	} while (0)

blk64_t bm_next_free(const struct e3_alloc *a, blk64_t from, blk64_t to)
{
	SCAN_WORDS(~wload(&a->used[k]));
}

blk64_t bm_next_used(const struct e3_alloc *a, blk64_t from, blk64_t to)
{
	SCAN_WORDS(wload(&a->used[k]));
}

blk64_t bm_next_obstacle(const struct e3_alloc *a, blk64_t from, blk64_t to)
{
	SCAN_WORDS(wload(&a->used[k]) & ~a->meta[k]);
}

/* Mask of the bits of word k that lie in [i, e]. */
static uint64_t range_mask(size_t k, uint64_t i, uint64_t e)
{
	uint64_t lo = (uint64_t)k * 64, m = ~0ULL;

	if (i > lo)
		m &= ~0ULL << (i - lo);
	if (e < lo + 63)
		m &= ~0ULL >> (63 - (e - lo));
	return m;
}

blk64_t bm_count_free(const struct e3_alloc *a, blk64_t from, blk64_t to)
{
	uint64_t i = from - a->first, e = to - a->first, n = 0;

	if (from > to)
		return 0;
	for (size_t k = (size_t)(i / 64); (uint64_t)k * 64 <= e; k++)
		n += (uint64_t)__builtin_popcountll(~wload(&a->used[k]) &
						    range_mask(k, i, e));
	return n;
}

blk64_t bm_nth_free(const struct e3_alloc *a, blk64_t from, blk64_t to,
		    blk64_t n)
{
	uint64_t i = from - a->first, e = to - a->first;

	if (from > to || n == 0)
		return E3_NOBLK;
	for (size_t k = (size_t)(i / 64); (uint64_t)k * 64 <= e; k++) {
		uint64_t w = ~wload(&a->used[k]) & range_mask(k, i, e);
		uint64_t c = (uint64_t)__builtin_popcountll(w);

		if (c < n) {
			n -= c;
			continue;
		}
		while (--n)
			w &= w - 1;
		return a->first + (uint64_t)k * 64 +
			(uint64_t)__builtin_ctzll(w);
	}
	return E3_NOBLK;
}

/* First block of a wholly free, byte-aligned group of 8 in [from, to]. */
static blk64_t next_free_byte(const struct e3_alloc *a, blk64_t from,
			      blk64_t to)
{
	uint64_t i = from - a->first, e = to - a->first;

	for (size_t k = (size_t)(i / 64); (uint64_t)k * 64 <= e; k++) {
		uint64_t w = ~wload(&a->used[k]) & range_mask(k, i, e);

		if (!w)
			continue;
		for (unsigned j = 0; j < 8; j++)
			if (((w >> (8 * j)) & 0xff) == 0xff)
				return a->first + (uint64_t)k * 64 + 8 * j;
	}
	return E3_NOBLK;
}

blk64_t bm_find_usable(const struct e3_alloc *a, blk64_t goal,
		       blk64_t from, blk64_t to)
{
	blk64_t b;

	if (goal != E3_NOBLK && goal >= from && goal <= to) {
		blk64_t chunk_end = a->first + ((goal - a->first) | 63);

		if (!bm_used(a, goal))
			return goal;
		b = bm_next_free(a, goal, chunk_end < to ? chunk_end : to);
		if (b != E3_NOBLK)
			return b;
		from = goal;
	}
	b = next_free_byte(a, from, to);
	if (b != E3_NOBLK)
		return b;
	return bm_next_free(a, from, to);
}

blk64_t bm_claim_run(struct e3_alloc *a, blk64_t b, blk64_t to,
		     blk64_t count)
{
	blk64_t n;

	if (!bm_claim(a, b))
		return 0;
	for (n = 1; n < count && b + n <= to && bm_claim(a, b + n); n++)
		;
	return n;
}
