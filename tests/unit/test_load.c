/*
 * test_load.c: unit tests of lib/load's pieces that need no image — the
 * in-memory block map (blockmap.c): range arithmetic against brute force,
 * the in-line layout of a sequentially written file, and a random-order
 * map that survives its indirect blocks being written out and read back.
 * The device behind the map's I/O callbacks is an array in memory.
 */
#include <stdint.h>
#include "unit.h"
#include "fs/blockmap.h"

#define DEV_BLOCKS 200000

struct memdev {
	unsigned bs;
	unsigned char *data;
	unsigned writes;
};

static errcode_t dev_read(void *ctx, blk64_t blk, void *buf)
{
	struct memdev *d = ctx;

	memcpy(buf, d->data + blk * d->bs, d->bs);
	return 0;
}

static errcode_t dev_write(void *ctx, blk64_t blk, const void *buf)
{
	struct memdev *d = ctx;

	memcpy(d->data + blk * d->bs, buf, d->bs);
	d->writes++;
	return 0;
}

/* Brute force: the indirect blocks a sequential write of [lo, hi) creates
 * after lo's own, by mapping block by block in a fresh map. */
static uint64_t brute_between(unsigned bs, uint64_t lo, uint64_t hi)
{
	static struct memdev d;
	struct bm_io io = { dev_read, dev_write, &d };
	struct e3_bmap bm;
	uint64_t n = 0, next = 1;
	unsigned miss;

	d.bs = bs;
	d.data = calloc(DEV_BLOCKS, bs);
	bm_init(&bm, bs, &io);
	for (uint64_t l = 0; l < hi; l++) {
		blk64_t meta[3];

		bm_missing(&bm, l, &miss);
		if (l > lo)
			n += miss;
		for (unsigned i = 0; i < miss; i++)
			meta[i] = next++;
		bm_set(&bm, l, next++, meta, miss);
	}
	bm_free(&bm);
	free(d.data);
	return n;
}

static void test_meta_between(void)
{
	/* block size 16: 4 pointers per block, so TIND starts at 12+4+16 */
	unsigned bs = 16;
	uint64_t max = 12 + 4 + 16 + 64;

	for (uint64_t lo = 0; lo < max; lo += 3)
		for (uint64_t hi = lo; hi <= max; hi += 5)
			CHECK(bm_meta_between(4, lo, hi) == brute_between(bs, lo, hi));
	/* 4 KiB blocks: a 100 MiB file needs 25 indirect blocks */
	CHECK(bm_blocks_for(1024, 25600) == 25600 + 1 + 1 + 24);
	CHECK(bm_blocks_for(1024, 12) == 12);
	CHECK(bm_blocks_for(1024, 13) == 14);
	CHECK(bm_blocks_for(1024, 1036) == 1037);
	CHECK(bm_blocks_for(1024, 1037) == 1040);
}

/* Pre-order (e2fsck's order): i_block[0..11], IND, its blocks, DIND, ... */
static void preorder(struct memdev *d, unsigned P, uint32_t blk, int level,
		     uint32_t *out, size_t *n)
{
	uint32_t *p = (uint32_t *)(d->data + (uint64_t)blk * d->bs);

	out[(*n)++] = blk;
	for (unsigned i = 0; i < P && p[i]; i++) {
		if (level == 1)
			out[(*n)++] = p[i];
		else
			preorder(d, P, p[i], level - 1, out, n);
	}
}

static void test_inline_layout(void)
{
	struct memdev d = { .bs = 16 };
	struct bm_io io = { dev_read, dev_write, &d };
	struct e3_bmap bm;
	uint64_t nblk = 12 + 4 + 16 + 40;	/* into the TIND range */
	uint32_t *seq;
	size_t n = 0;
	blk64_t next = 100;

	d.data = calloc(DEV_BLOCKS, d.bs);
	seq = calloc(DEV_BLOCKS, sizeof(*seq));
	bm_init(&bm, d.bs, &io);
	for (uint64_t l = 0; l < nblk; l++) {
		blk64_t meta[3];
		unsigned miss;

		CHECK_OK(bm_missing(&bm, l, &miss));
		for (unsigned i = 0; i < miss; i++)
			meta[i] = next++;
		CHECK_OK(bm_set(&bm, l, next++, meta, miss));
	}
	CHECK_OK(bm_flush(&bm));
	CHECK(bm.nblocks == next - 100);
	CHECK(bm.nblocks == bm_blocks_for(4, nblk));
	for (int i = 0; i < 12; i++)
		seq[n++] = bm.iblock[i];
	for (int t = 0; t < 3; t++)
		if (bm.iblock[12 + t])
			preorder(&d, 4, bm.iblock[12 + t], t + 1, seq, &n);
	CHECK(n == bm.nblocks);
	for (size_t i = 0; i < n; i++)
		CHECK(seq[i] == 100 + i);
	/* full ranges were written once as they filled, not per block */
	CHECK(d.writes <= bm_blocks_for(4, nblk) - nblk);
	bm_free(&bm);
	free(seq);
	free(d.data);
}

static void test_random_order(void)
{
	struct memdev d = { .bs = 16 };
	struct bm_io io = { dev_read, dev_write, &d };
	struct e3_bmap bm, bm2;
	uint64_t nblk = 12 + 4 + 16 + 64;
	blk64_t *want = calloc(nblk, sizeof(*want)), got, next = 10;
	unsigned seed = 12345;

	d.data = calloc(DEV_BLOCKS, d.bs);
	bm_init(&bm, d.bs, &io);
	for (int k = 0; k < 300; k++) {
		uint64_t l;
		blk64_t meta[3];
		unsigned miss;

		seed = seed * 1103515245 + 12345;
		l = (seed >> 8) % nblk;
		if (want[l] || l % 7 == 3)	/* leave some holes */
			continue;
		CHECK_OK(bm_missing(&bm, l, &miss));
		for (unsigned i = 0; i < miss; i++)
			meta[i] = next++;
		want[l] = next++;
		CHECK_OK(bm_set(&bm, l, want[l], meta, miss));
	}
	CHECK_OK(bm_flush(&bm));
	/* a second map that knows only i_block[] reads the rest back */
	bm_init(&bm2, d.bs, &io);
	memcpy(bm2.iblock, bm.iblock, sizeof(bm.iblock));
	for (uint64_t l = 0; l < nblk; l++) {
		CHECK_OK(bm_lookup(&bm2, l, &got));
		CHECK(got == want[l]);
	}
	CHECK(bm_lookup(&bm2, bm_max_blocks(&bm2), &got) != 0);
	bm_free(&bm);
	bm_free(&bm2);
	free(want);
	free(d.data);
}

int main(void)
{
	RUN(test_meta_between);
	RUN(test_inline_layout);
	RUN(test_random_order);
	return unit_done();
}
