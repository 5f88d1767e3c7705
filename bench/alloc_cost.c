/*
 * alloc_cost.c: the allocator's cost alone — new reservation windows per
 * second with 1, 16, 256, 4096 and 65536 windows open at once, for the
 * sorted list (2.6.8-mm4) and the red-black tree, printed as a Markdown
 * table. This is the measurement behind the 2004 list -> rbtree patch:
 * a file with no window yet walks the list from its head to its goal.
 *
 * Usage: bench/alloc_cost [-t seconds-per-cell] [-k] [image]
 * Without an image it makes a sparse 8 GiB ext2 image (4 KiB blocks, 64
 * groups) under /tmp and removes it afterwards (-k keeps it). Nothing is
 * written to the image: blocks are only claimed in the allocator.
 *
 * Each cell: open N files spread over every group and colour, each with
 * one block allocated (so one 8-block window booked), then repeat for the
 * cell's time: pick a file, close it (discard), reopen it as a new file
 * and allocate its first block — one new window each time. Blocks are
 * given back at once, so the bitmap stays as it was.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/image.h"
#include "alloc/alloc.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct bench {
	struct e3_image img;
	ext2_ino_t ipg;
	dgrp_t ngroups;
};

/* File i lives in group i mod groups with colour (i / groups) mod 16,
 * as a mix of writers of different files would. */
static void open_file(struct bench *b, struct e3_rsv *r, uint64_t i)
{
	dgrp_t g = (dgrp_t)(i % b->ngroups);
	ext2_ino_t ino = g * b->ipg + 1 + (g == 0 ? 11 : 0);

	e3_rsv_init(b->img.alloc, r, ino, 0, (unsigned)((i / b->ngroups) % 16));
}

static errcode_t first_block(struct bench *b, struct e3_rsv *r)
{
	blk64_t s, got;
	errcode_t err;

	err = e3_alloc_blocks(b->img.alloc, r, e3_rsv_goal(b->img.alloc, r), 1,
			      &s, &got);
	if (!err)
		e3_alloc_unclaim(b->img.alloc, s, got);
	return err;
}

static errcode_t run_cell(struct bench *b, enum e3_alloc_mode mode,
			  uint64_t nwin, double secs, double *rate)
{
	struct e3_rsv *files = calloc(nwin, sizeof(*files));
	struct e3_alloc_stats st0, st1;
	uint64_t seed = 88172645463325252ULL, ops = 0;
	double t0, t;
	errcode_t err;

	if (!files)
		return ENOMEM;
	err = e3_alloc_create(b->img.fs, mode, NULL, &b->img.alloc);
	if (err) {
		free(files);
		return err;
	}
	for (uint64_t i = 0; i < nwin && !err; i++) {
		open_file(b, &files[i], i);
		err = first_block(b, &files[i]);
	}
	e3_alloc_get_stats(b->img.alloc, &st0);
	t0 = t = now();
	while (!err && t - t0 < secs) {
		for (int k = 0; k < 64 && !err; k++, ops++) {
			uint64_t i;

			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			i = seed % nwin;
			e3_rsv_discard(b->img.alloc, &files[i]);
			open_file(b, &files[i], i);
			err = first_block(b, &files[i]);
		}
		t = now();
	}
	e3_alloc_get_stats(b->img.alloc, &st1);
	if (!err && st1.windows != nwin)
		err = E3_RSV_TREE_BAD;
	if (!err && !rsv_tree_check(b->img.alloc, NULL, 0))
		err = E3_RSV_TREE_BAD;
	*rate = (double)(st1.window_allocs - st0.window_allocs) / (t - t0);
	for (uint64_t i = 0; i < nwin; i++)
		e3_rsv_discard(b->img.alloc, &files[i]);
	e3_alloc_destroy(b->img.alloc);
	b->img.alloc = NULL;
	free(files);
	(void)ops;
	return err;
}

static int make_image(const char *path)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "rm -f %s && truncate -s 8G %s && "
		 "mke2fs -q -F -t ext2 -b 4096 -N 131072 -O ^resize_inode "
		 "-E lazy_itable_init=1 %s >/dev/null 2>&1", path, path, path);
	return system(cmd);
}

int main(int argc, char **argv)
{
	static const uint64_t counts[] = { 1, 16, 256, 4096, 65536 };
	static const enum e3_alloc_mode modes[] = { E3_ALLOC_LIST, E3_ALLOC_RBTREE };
	char path[256];
	double secs = 1.0, rate[5][2];
	int keep = 0, opt, made = 0;
	struct bench b;
	errcode_t err;

	while ((opt = getopt(argc, argv, "t:k")) != -1) {
		if (opt == 't')
			secs = atof(optarg);
		else if (opt == 'k')
			keep = 1;
		else {
			fprintf(stderr, "usage: alloc_cost [-t secs] [-k] [image]\n");
			return 2;
		}
	}
	if (optind < argc) {
		snprintf(path, sizeof(path), "%s", argv[optind]);
	} else {
		snprintf(path, sizeof(path), "/tmp/alloc-cost-%d.img", (int)getpid());
		if (make_image(path)) {
			fprintf(stderr, "alloc_cost: %s: mke2fs failed\n", path);
			return 1;
		}
		made = 1;
	}
	memset(&b, 0, sizeof(b));
	b.img.fd = -1;
	b.img.path = path;
	pthread_mutex_init(&b.img.fs_lock, NULL);
	err = ext2fs_open(path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &b.img.fs);
	if (!err)
		err = ext2fs_read_block_bitmap(b.img.fs);
	if (err) {
		fprintf(stderr, "alloc_cost: %s: %s\n", path, error_message(err));
		return 1;
	}
	b.img.fs->priv_data = &b.img;
	b.ipg = b.img.fs->super->s_inodes_per_group;
	b.ngroups = b.img.fs->group_desc_count;

	for (size_t c = 0; c < 5; c++)
		for (size_t m = 0; m < 2; m++) {
			err = run_cell(&b, modes[m], counts[c], secs, &rate[c][m]);
			if (err) {
				fprintf(stderr, "alloc_cost: %llu windows: %s\n",
					(unsigned long long)counts[c],
					error_message(err));
				return 1;
			}
		}
	printf("Window allocations per second (new file's first window), "
	       "%u groups of %u blocks, %.1f s per cell\n\n",
	       b.ngroups, b.img.fs->super->s_blocks_per_group, secs);
	printf("| open windows | list (allocs/s) | rbtree (allocs/s) | rbtree / list |\n");
	printf("| ---: | ---: | ---: | ---: |\n");
	for (size_t c = 0; c < 5; c++)
		printf("| %llu | %.0f | %.0f | %.1f× |\n",
		       (unsigned long long)counts[c], rate[c][0], rate[c][1],
		       rate[c][1] / rate[c][0]);
	ext2fs_free(b.img.fs);
	if (made && !keep)
		unlink(path);
	return 0;
}
