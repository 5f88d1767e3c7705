/*
 * cmd_freefrag.c: freefrag [-c CHUNK_KB] in e2freefrag's text (as debugfs
 * prints it) — free blocks, free extents (runs of free blocks in the
 * bitmap; a run is not broken at group boundaries), their smallest,
 * largest and mean size, and a histogram by powers of two; with -c, how
 * many aligned chunks of that size are wholly free. The per-group free
 * map with positions is a later view (freemap), from the inspection layer.
 */
#include <stdlib.h>
#include <string.h>

#include "dbg.h"

#define HIST 32
#define DEFAULT_CHUNK (1024 * 1024)

struct ffrag {
	unsigned long chunkbytes;	/* 0: no chunk report (-c not given) */
	int chunkbits, bsbits;
	unsigned long blks_in_chunk;
	unsigned long min, max, avg, extents, free_chunks;
	unsigned long hist_ext[HIST], hist_blk[HIST];
};

static int log2_floor(unsigned long v)
{
	int l = 0;

	while (v >>= 1)
		l++;
	return l;
}

static void one_extent(struct ffrag *f, unsigned long len)
{
	int i = log2_floor(len) + 1;

	if (i >= HIST)
		i = HIST - 1;
	f->hist_ext[i]++;
	f->hist_blk[i] += len;
	if (len > f->max)
		f->max = len;
	if (len < f->min)
		f->min = len;
	f->avg += len;
	f->extents++;
}

static void scan(ext2_filsys fs, struct ffrag *f)
{
	unsigned long long total = ext2fs_blocks_count(fs->super);
	unsigned long long chunks = (total + f->blks_in_chunk) >>
				    (f->chunkbits - f->bsbits);
	unsigned long long blk = 0;
	unsigned long run = 0;

	for (unsigned long long c = 0; c < chunks; c++) {
		unsigned long long n = blk + f->blks_in_chunk > total ?
				       total - blk : f->blks_in_chunk;
		unsigned long nfree = 0;

		for (unsigned long long i = 0; i < n; i++, blk++) {
			int used;

			/* block 0 of a 1 KiB filesystem is not in the bitmap */
			if (c == 0 && i == 0) {
				i = blk = fs->super->s_first_data_block;
				if (i >= n)
					break;
			}
			used = ext2fs_test_block_bitmap2(fs->block_map, blk);
			if (!used) {
				run++;
				nfree++;
			} else if (run) {
				one_extent(f, run);
				run = 0;
			}
		}
		if (nfree == f->blks_in_chunk)
			f->free_chunks++;
	}
	if (run)
		one_extent(f, run);
}

static void report(struct dbg *d, ext2_filsys fs, struct ffrag *f)
{
	unsigned long long total = ext2fs_blocks_count(fs->super);
	unsigned long long nfree = ext2fs_free_blocks_count(fs->super);
	const char *unit = "KMGTPEZY";
	unsigned long start = 0, end;
	int shift = 10;

	fprintf(d->out, "Total blocks: %llu\nFree blocks: %llu (%0.1f%%)\n", total,
		nfree, (double)nfree * 100 / (double)total);
	if (f->chunkbytes) {
		unsigned long chunks = (unsigned long)((total + f->blks_in_chunk) >>
					(f->chunkbits - f->bsbits));

		fprintf(d->out, "\nChunksize: %lu bytes (%lu blocks)\n",
			f->chunkbytes, f->blks_in_chunk);
		fprintf(d->out, "Total chunks: %lu\nFree chunks: %lu (%0.1f%%)\n",
			chunks, f->free_chunks,
			(double)f->free_chunks * 100 / (double)chunks);
	}
	if (f->extents) {
		unsigned long scale = fs->blocksize >> 10;

		f->min *= scale;
		f->max *= scale;
		f->avg = f->avg / f->extents * scale;
	} else {
		f->min = 0;
	}
	fprintf(d->out, "\nMin. free extent: %lu KB \nMax. free extent: %lu KB\n"
		"Avg. free extent: %lu KB\n", f->min, f->max, f->avg);
	fprintf(d->out, "Num. free extent: %lu\n", f->extents);
	fprintf(d->out, "\nHISTOGRAM OF FREE EXTENT SIZES:\n");
	fprintf(d->out, "%s :  %12s  %12s  %7s\n", "Extent Size Range",
		"Free extents", "Free Blocks", "Percent");
	for (int i = 0; i < HIST; i++) {
		end = 1UL << (i + f->bsbits - shift);
		if (f->hist_ext[i]) {
			char end_s[32];

			if (i == HIST - 1)
				strcpy(end_s, "max ");
			else
				snprintf(end_s, sizeof(end_s), "%5lu%c-", end, *unit);
			fprintf(d->out, "%5lu%c...%7s  :  %12lu  %12lu  %6.2f%%\n",
				start, *unit, end_s, f->hist_ext[i], f->hist_blk[i],
				(double)f->hist_blk[i] * 100 / (double)nfree);
		}
		start = end;
		if (start == 1UL << 10) {
			start = 1;
			shift += 10;
			unit++;
		}
	}
}

DBG_CMD(do_freefrag)
{
	struct dbg *d = dbg_of(info);
	struct ffrag f;
	unsigned long long kb;
	int c;

	memset(&f, 0, sizeof(f));
	optind = 0;
	while ((c = dbg_getopt(argc, argv, "c:")) != -1) {
		if (c != 'c') {
			dbg_fail(d, 0, "usage: freefrag [-c CHUNK_KB]");
			return;
		}
		if (dbg_number(d, optarg, "chunk size", &kb))
			return;
		if (!kb || (kb & (kb - 1)) || kb > (1ULL << 30)) {
			dbg_fail(d, 0, "chunk size must be a power of 2: %s", optarg);
			return;
		}
		f.chunkbytes = (unsigned long)kb * 1024;
	}
	if (argc != optind) {
		dbg_fail(d, 0, "usage: freefrag [-c CHUNK_KB]");
		return;
	}
	if (dbg_need_bitmaps(d))
		return;
	if (f.chunkbytes && f.chunkbytes < d->fs->blocksize) {
		dbg_fail(d, 0, "chunk size must be at least the block size");
		return;
	}
	f.bsbits = log2_floor(d->fs->blocksize);
	f.chunkbits = log2_floor(f.chunkbytes ? f.chunkbytes : DEFAULT_CHUNK);
	f.blks_in_chunk = (f.chunkbytes ? f.chunkbytes : DEFAULT_CHUNK) >> f.bsbits;
	f.min = ~0UL;
	fprintf(d->out, "Device: %s\nBlocksize: %u bytes\n", d->image,
		d->fs->blocksize);
	scan(d->fs, &f);
	report(d, d->fs, &f);
}
