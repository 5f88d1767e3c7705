/*
 * test_alloc.c: the block allocator on small real images made by mke2fs
 * (1 KiB blocks, 1024-block groups, so cross-group paths run on 8 MiB).
 * A command script at one thread with every placement compared against
 * numbers worked out by hand from ext3's rules (the reasoning is in the
 * comments); the same kind of load at 8 threads checked by invariants; window
 * growth, discard, size hints, the fallback into other files' windows,
 * deferred frees, the libext2fs hooks and inode spreading.
 *
 * The struct e3_image is filled here (fs, fs_lock, priv_data) so the test
 * needs no load or journal layer.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include "unit.h"
#include "fs/image.h"
#include "alloc/alloc.h"
#include "alloc/rsv_tree.h"

static char img_path[64];

/* 8 MiB, 1 KiB blocks, groups of 1024 blocks, 32 inodes per group, no
 * resize inode. Group 2 = blocks 2049-3072: bitmaps 2049-2050, inode table
 * 2051-2054, data 2055-3072. Group 4 data 4103-5120; group 5 has a backup
 * superblock, data 5129-6144; group 6 data 6151-7168; group 7 7177-8191.
 * Group 0 data 22-1024 (root and lost+found use 9-21), group 1 1033-2048,
 * group 3 3081-4096. */
static int make_image_g(unsigned bpg, unsigned inodes, const char *size)
{
	char cmd[512];

	snprintf(img_path, sizeof(img_path), "/tmp/alloc-test-%d.img",
		 (int)getpid());
	snprintf(cmd, sizeof(cmd), "rm -f %s && truncate -s %s %s && "
		 "mke2fs -q -F -t ext2 -b 1024 -g %u -N %u -I 128 "
		 "-O ^resize_inode %s >/dev/null 2>&1",
		 img_path, size, img_path, bpg, inodes, img_path);
	return system(cmd);
}

/* The same with 4 KiB blocks and groups of 32768 (mke2fs' default). */
static int make_image_4k(const char *size)
{
	char cmd[512];

	snprintf(img_path, sizeof(img_path), "/tmp/alloc-test-%d.img",
		 (int)getpid());
	snprintf(cmd, sizeof(cmd), "rm -f %s && truncate -s %s %s && "
		 "mke2fs -q -F -t ext2 -b 4096 -N 1024 -O ^resize_inode %s "
		 ">/dev/null 2>&1", img_path, size, img_path, img_path);
	return system(cmd);
}

static int make_image(const char *size)
{
	return make_image_g(1024, 256, size);
}

static struct e3_image *open_image(enum e3_alloc_mode mode)
{
	struct e3_image *img = calloc(1, sizeof(*img));
	errcode_t err;

	img->fd = -1;
	img->path = img_path;
	pthread_mutex_init(&img->fs_lock, NULL);
	err = ext2fs_open(img_path, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			  unix_io_manager, &img->fs);
	if (!err)
		err = ext2fs_read_bitmaps(img->fs);
	if (err) {
		fprintf(stderr, "  open %s: %ld\n", img_path, (long)err);
		free(img);
		return NULL;
	}
	img->fs->priv_data = img;
	err = e3_alloc_create(img->fs, mode, NULL, &img->alloc);
	if (err) {
		fprintf(stderr, "  e3_alloc_create: %ld\n", (long)err);
		ext2fs_free(img->fs);
		free(img);
		return NULL;
	}
	return img;
}

/* Discards every change (nothing was written through libext2fs). */
static void drop_image(struct e3_image *img)
{
	e3_alloc_destroy(img->alloc);
	ext2fs_free(img->fs);
	pthread_mutex_destroy(&img->fs_lock);
	free(img);
	unlink(img_path);
}

static bool tree_ok(struct e3_image *img)
{
	char why[200];

	if (rsv_tree_check(img->alloc, why, sizeof(why)))
		return true;
	fprintf(stderr, "  rsv_tree_check: %s\n", why);
	return false;
}

/* ---- the one-thread script ---------------------------------------------- */

enum { NEW, ALLOC, DISCARD };
struct cmd {
	int op, file;
	uint64_t x, y;		/* NEW: ino, hint; ALLOC: count */
	unsigned colour;
	blk64_t start, got;	/* ALLOC: expected */
};

/* Growth headroom (alloc_window.c): an unhinted window of 8 counts as
 * reaching 3059 blocks past its end (the doubling windows up to the cap),
 * three groups of this image; a new window's gap must hold 8 + 3059, else
 * the walk is redone as plain ext3. */
static const struct cmd script[] = {
	/* A: inode 65 (group 2), colour 0, goal 2049. First window [2049,
	 * 2056] (no other window: headroom changes nothing); its first free
	 * block is 2055 (2049-2054 are metadata). */
	{ NEW, 0, 65, 0, 0, 0, 0 },
	{ ALLOC, 0, 1, 0, 0, 2055, 1 },
	/* Goal 2056 is the window's last block, 4 wanted: the window is
	 * extended by 3 (no window after it) to [2049, 2059]. */
	{ ALLOC, 0, 4, 0, 0, 2056, 4 },
	/* Goal 2060 is past the window: hit 5 is not > 11/2, so the size
	 * stays 8 and the window slides to [2060, 2067] (our own headroom
	 * does not push us). */
	{ ALLOC, 0, 4, 0, 0, 2060, 4 },
	/* B: inode 66, colour 1: goal 2049 + 1024/16 = 2113, inside A's
	 * headroom (A reaches 2067 + 3059 = 5126). Groups 2-4 start inside
	 * it; group 5's walk starts at 5127, nothing after: window [5127,
	 * 5134], first free 5129 (5121-5128: backup superblock and group
	 * metadata). */
	{ NEW, 1, 66, 0, 1, 0, 0 },
	{ ALLOC, 1, 2, 0, 0, 5129, 2 },
	/* C: inode 67, colour 0, goal 2049. A's and B's headroom (2 x 3059)
	 * plus C's window and headroom (8 + 3059) is more than the image's
	 * free blocks (under 8192), so no walk with headroom: plain ext3.
	 * The gap before A fits 8 ([2049, 2056]) but its first free block is
	 * 2064, beyond it; the search restarts at 2064, skips A and books
	 * [2068, 2075]. */
	{ NEW, 2, 67, 0, 0, 0, 0 },
	{ ALLOC, 2, 3, 0, 0, 2068, 3 },
	/* A fills the rest of its window ... */
	{ ALLOC, 0, 4, 0, 0, 2064, 4 },
	/* ... so hit 8 > 8/2 doubles the next window to 16. Headroom again
	 * exceeds the free blocks (B's and C's 3059 each, A's new 3043 + 16),
	 * so plain ext3: C right after A is in the way; after C, [2076,
	 * 2091]. */
	{ ALLOC, 0, 1, 0, 0, 2076, 1 },
	/* B closes: its window goes, its two blocks stay. */
	{ DISCARD, 1, 0, 0, 0, 0, 0 },
	/* A wants 40 from 2077 with 15 left: extended to 2116 (nothing
	 * after it now), all free. */
	{ ALLOC, 0, 40, 0, 0, 2077, 40 },
	/* Goal 2117 is past the window; hit 41 > 41/2: the next window is
	 * 32. With B gone the headroom fits (C's 3059 + A's 3011 + 32), and
	 * the gap right after our own window needs no headroom (we grow in
	 * place): [2117, 2148]. */
	{ ALLOC, 0, 9, 0, 0, 2117, 9 },
	/* C continues in its own window. */
	{ ALLOC, 2, 5, 0, 0, 2071, 5 },
	{ DISCARD, 0, 0, 0, 0, 0, 0 },
	{ DISCARD, 2, 0, 0, 0, 0, 0 },
	/* H: inode 129 (group 4), hint 100, no colour: goal 4097. Fits one
	 * group, so the first free run of 100 inside a group: 4103-4202. */
	{ NEW, 3, 129, 100, 5, 0, 0 },
	{ ALLOC, 3, 10, 0, 0, 4103, 10 },
	{ ALLOC, 3, 90, 0, 0, 4113, 90 },
	/* H2: hint 1500 is more than a group holds: the run may cross group
	 * metadata, not B's blocks 5129-5130: 4203-5128 holds only 918, so
	 * from 5131: 5131-6144 (1014 blocks) then 6151-6636 (486). */
	{ NEW, 4, 130, 1500, 0, 0, 0 },
	{ ALLOC, 4, 1500, 0, 0, 5131, 1014 },
	{ ALLOC, 4, 1500, 0, 0, 6151, 486 },
	/* H3: hint 600 fits a group: the first free run of 600 from 4097
	 * that crosses nothing: 4203-5120 (918). */
	{ NEW, 5, 131, 600, 0, 0, 0 },
	{ ALLOC, 5, 600, 0, 0, 4203, 600 },
	/* H4: hint 5000 fits nowhere: the largest run, searched from 4097
	 * and wrapping, is group 0's 22-1024 with group 1's 1033-2048 (2019
	 * free blocks; 4803-5120 has 318, 6637-8191 1547, 2126-4102 1963). */
	{ NEW, 6, 132, 5000, 0, 0, 0 },
	{ ALLOC, 6, 5000, 0, 0, 22, 1003 },
	{ ALLOC, 6, 5000, 0, 0, 1033, 1016 },
	/* The rest was booked with the first window: the largest run left,
	 * searched from 4097 again, is 2126-4102 (1963 blocks). */
	{ ALLOC, 6, 5000, 0, 0, 2126, 947 },
	{ ALLOC, 6, 5000, 0, 0, 3081, 1016 },
	{ DISCARD, 3, 0, 0, 0, 0, 0 },
	{ DISCARD, 4, 0, 0, 0, 0, 0 },
	{ DISCARD, 5, 0, 0, 0, 0, 0 },
	{ DISCARD, 6, 0, 0, 0, 0, 0 },
};

static void run_script(enum e3_alloc_mode mode, const struct cmd *sc, size_t n)
{
	struct e3_rsv files[8];
	struct e3_image *img;
	blk64_t free0, claimed = 0;
	int bad = 0;

	if (make_image("8M")) {
		CHECK(!"mke2fs failed");
		return;
	}
	img = open_image(mode);
	CHECK(img != NULL);
	if (!img)
		return;
	free0 = e3_alloc_free_count(img->alloc);
	CHECK(free0 == ext2fs_free_blocks_count(img->fs->super));
	for (size_t i = 0; i < n; i++) {
		const struct cmd *c = &sc[i];
		struct e3_rsv *r = &files[c->file];
		blk64_t start = 0, got = 0;
		errcode_t err;

		switch (c->op) {
		case NEW:
			e3_rsv_init(img->alloc, r, (ext2_ino_t)c->x, c->y,
				    c->colour);
			break;
		case DISCARD:
			e3_rsv_discard(img->alloc, r);
			CHECK(!r->linked);
			break;
		case ALLOC:
			err = e3_alloc_blocks(img->alloc, r,
					      e3_rsv_goal(img->alloc, r), c->x,
					      &start, &got);
			if (err || start != c->start || got != c->got) {
				bad++;
				fprintf(stderr, "  step %zu: got %llu+%llu (err "
					"%ld), expected %llu+%llu\n", i,
					start, got, (long)err, c->start, c->got);
			}
			claimed += got;
			break;
		}
		if (!tree_ok(img))
			bad++;
	}
	CHECK(bad == 0);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - claimed);
	{
		struct e3_alloc_stats st;

		e3_alloc_get_stats(img->alloc, &st);
		CHECK(st.windows == 0);
	}
	if (mode == E3_ALLOC_NONE) {
		struct e3_alloc_stats st;

		e3_alloc_get_stats(img->alloc, &st);
		CHECK(st.windows == 0 && st.window_allocs == 0);
	}
	drop_image(img);
}

static void test_script_rbtree(void)
{
	run_script(E3_ALLOC_RBTREE, script, sizeof(script) / sizeof(*script));
}

/* The list walks differently but must book exactly the same windows. */
static void test_script_list(void)
{
	run_script(E3_ALLOC_LIST, script, sizeof(script) / sizeof(*script));
}

/* `none`: goal, then ext3's search (rest of the goal's 64-block chunk, a
 * free aligned byte, any bit), walking back up to 7 free blocks. */
static const struct cmd none_script[] = {
	/* Goal 2049 is metadata; the chunk 2049-2112 gives 2055. */
	{ NEW, 0, 65, 0, 0, 0, 0 },
	{ ALLOC, 0, 3, 0, 0, 2055, 3 },
	{ NEW, 1, 66, 0, 1, 0, 0 },
	{ ALLOC, 1, 2, 0, 0, 2113, 2 },
	{ ALLOC, 0, 5, 0, 0, 2058, 5 },
	/* Without windows a second file from the same goal lands right
	 * after the first one's blocks ... */
	{ NEW, 2, 67, 0, 0, 0, 0 },
	{ ALLOC, 2, 4, 0, 0, 2063, 4 },
	/* ... and the first file continues after it: fragmented. */
	{ ALLOC, 0, 2, 0, 0, 2067, 2 },
	/* Goal 2113 is taken; 2115 is the next free block in its chunk;
	 * 130 blocks: 2115-2244. Size hints mean nothing in `none`. */
	{ NEW, 3, 68, 5000, 1, 0, 0 },
	{ ALLOC, 3, 130, 0, 0, 2115, 130 },
	/* Colour 2: goal 2049 + 128 = 2177, in a wholly used chunk
	 * (2177-2240). The first free aligned byte is 2249-2256; walking
	 * back over the free 2245-2248 starts the run at 2245. */
	{ NEW, 4, 69, 0, 2, 0, 0 },
	{ ALLOC, 4, 3, 0, 0, 2245, 3 },
};

static void test_script_none(void)
{
	run_script(E3_ALLOC_NONE, none_script,
		   sizeof(none_script) / sizeof(*none_script));
}

/* A file written block by block fills every window, so each next window
 * doubles: 8, 16, ..., 1024, then the cap 1027. Each slides on from the
 * last, so the file is one run. */
static void test_window_growth(void)
{
	static const blk64_t want[] = { 8, 16, 32, 64, 128, 256, 512, 1024,
					1027, 1027 };
	struct e3_image *img;
	struct e3_rsv r;
	blk64_t free0, first = 0, last = 0, sizes[16], prev_start = 0;
	size_t nsizes = 0;
	int bad = 0;

	CHECK(make_image_g(8192, 256, "16M") == 0);
	img = open_image(E3_ALLOC_RBTREE);
	if (!img)
		return;
	free0 = e3_alloc_free_count(img->alloc);
	e3_rsv_init(img->alloc, &r, 12, 0, 0);
	for (blk64_t i = 0; i < 8 + 4086; i++) {
		blk64_t s, got;

		CHECK_OK(e3_alloc_blocks(img->alloc, &r,
					 e3_rsv_goal(img->alloc, &r), 1, &s, &got));
		if (i == 0)
			first = s;
		else if (s != last + 1)
			bad++;
		last = s;
		if (r.start != prev_start && nsizes < 16) {
			sizes[nsizes++] = r.end - r.start + 1;
			prev_start = r.start;
		}
		if (!tree_ok(img))
			bad++;
	}
	CHECK(bad == 0);
	CHECK(last - first + 1 == 8 + 4086);
	/* The very first window (at the goal, block 1) held no free block
	 * and was moved: the sizes seen after allocations start at 8. */
	CHECK(nsizes == 10);
	for (size_t i = 0; i < nsizes && i < 10; i++)
		if (sizes[i] != want[i]) {
			fprintf(stderr, "  window %zu: %llu blocks, want %llu\n",
				i, sizes[i], want[i]);
			bad++;
		}
	CHECK(bad == 0);
	e3_rsv_discard(img->alloc, &r);
	CHECK(!r.linked && r.start == 0 && r.end == 0);
	CHECK(tree_ok(img));
	/* The unused rest of the last window is free again. */
	CHECK(e3_alloc_free_count(img->alloc) == free0 - (8 + 4086));
	{
		struct e3_alloc_stats st;

		e3_alloc_get_stats(img->alloc, &st);
		CHECK(st.windows == 0);
		CHECK(st.blocks_claimed == 8 + 4086);
	}
	drop_image(img);
}

/* Two hinted files book windows over all the free space; an unhinted file
 * still gets blocks (from inside their windows), and the image fills to
 * the last block before "image full". */
static void test_fallback_into_windows(void)
{
	struct e3_image *img;
	struct e3_rsv w1, w2, x;
	struct e3_alloc_stats st;
	blk64_t free0, s, got, total = 0;
	errcode_t err;

	CHECK(make_image("8M") == 0);
	img = open_image(E3_ALLOC_RBTREE);
	if (!img)
		return;
	free0 = e3_alloc_free_count(img->alloc);
	e3_rsv_init(img->alloc, &w1, 129, 100000, 0);
	e3_rsv_init(img->alloc, &w2, 129, 100000, 0);
	/* The hint is more than the image: from 4097 the largest run
	 * crossing only metadata is 4103-8191 (4067 blocks), then 22-4096
	 * (4053), both booked at once. Nothing is left for a second file. */
	CHECK_OK(e3_rsv_book(img->alloc, &w1, e3_rsv_goal(img->alloc, &w1)));
	CHECK(w1.start == 4103 && w1.end == 8191);
	CHECK(w1.chain && w1.chain->start == 22 && w1.chain->end == 4096 &&
	      !w1.chain->chain);
	CHECK(e3_rsv_book(img->alloc, &w2, e3_rsv_goal(img->alloc, &w2)) ==
	      E3_IMAGE_FULL);
	CHECK(!w2.linked);
	e3_rsv_init(img->alloc, &x, 65, 0, 0);
	err = e3_alloc_blocks(img->alloc, &x, e3_rsv_goal(img->alloc, &x), 5,
			      &s, &got);
	CHECK(err == 0 && s == 2055 && got == 5);
	e3_alloc_get_stats(img->alloc, &st);
	CHECK(st.window_fallbacks == 1);
	total = got;
	while ((err = e3_alloc_blocks(img->alloc, &x, e3_rsv_goal(img->alloc, &x),
				      1000, &s, &got)) == 0)
		total += got;
	CHECK(err == E3_IMAGE_FULL);
	CHECK(total == free0);
	CHECK(e3_alloc_free_count(img->alloc) == 0);
	/* Even the hinted files get nothing now, with a clear error. */
	CHECK(e3_alloc_blocks(img->alloc, &w1, 4103, 1, &s, &got) == E3_IMAGE_FULL);
	e3_rsv_discard(img->alloc, &w1);
	e3_rsv_discard(img->alloc, &w2);
	e3_rsv_discard(img->alloc, &x);
	CHECK(tree_ok(img));
	drop_image(img);
}

/* A hinted search resumes where the last one from the same goal found
 * its first free block, until blocks are released or leave a window:
 * first fit must still find them. */
static void test_resume_point(void)
{
	struct e3_image *img;
	struct e3_rsv r[8];
	blk64_t s, got, b_start, f_start;

	CHECK(make_image("8M") == 0);
	img = open_image(E3_ALLOC_RBTREE);
	if (!img)
		return;
	/* a, b, c written whole and closed; d booked after them */
	for (int i = 0; i < 3; i++) {
		e3_rsv_init(img->alloc, &r[i], 12, 10, 0);
		CHECK_OK(e3_rsv_book(img->alloc, &r[i],
				     e3_rsv_goal(img->alloc, &r[i])));
		CHECK_OK(e3_alloc_blocks(img->alloc, &r[i], r[i].start, 10,
					 &s, &got));
		CHECK(got == 10);
		if (i > 0)
			CHECK(r[i].start == r[i - 1].end + 1);
	}
	b_start = r[1].start;
	for (int i = 0; i < 3; i++)
		e3_rsv_discard(img->alloc, &r[i]);
	e3_rsv_init(img->alloc, &r[3], 12, 10, 0);
	CHECK_OK(e3_rsv_book(img->alloc, &r[3], e3_rsv_goal(img->alloc, &r[3])));
	CHECK(r[3].start == b_start + 20);
	/* b's blocks come back: the next file fills them */
	e3_alloc_unclaim(img->alloc, b_start, 10);
	e3_rsv_init(img->alloc, &r[4], 12, 10, 0);
	CHECK_OK(e3_rsv_book(img->alloc, &r[4], e3_rsv_goal(img->alloc, &r[4])));
	CHECK(r[4].start == b_start);
	/* f books 5 blocks and h the next 5 (the resume point moves past
	 * f); f goes without using its blocks: g gets them */
	e3_rsv_init(img->alloc, &r[5], 12, 5, 0);
	CHECK_OK(e3_rsv_book(img->alloc, &r[5], e3_rsv_goal(img->alloc, &r[5])));
	f_start = r[5].start;
	e3_rsv_init(img->alloc, &r[6], 12, 5, 0);
	CHECK_OK(e3_rsv_book(img->alloc, &r[6], e3_rsv_goal(img->alloc, &r[6])));
	CHECK(r[6].start == f_start + 5);
	e3_rsv_discard(img->alloc, &r[5]);
	e3_rsv_init(img->alloc, &r[7], 12, 5, 0);
	CHECK_OK(e3_rsv_book(img->alloc, &r[7], e3_rsv_goal(img->alloc, &r[7])));
	CHECK(r[7].start == f_start);
	for (int i = 3; i < 8; i++)
		e3_rsv_discard(img->alloc, &r[i]);
	CHECK(tree_ok(img));
	drop_image(img);
}

/* e3_rsv_book_claim hands out the blocks that booking a window and then
 * claiming it whole gives, with no window; a hint larger than a group is
 * booked as a window (got 0). Checked on two fresh images, the same
 * script each way, including a run given back and then reused. */
static void claim_script(int claim, blk64_t starts[6], int *windows)
{
	struct e3_image *img;
	struct e3_alloc_stats st;
	struct e3_rsv r[6];
	uint64_t hint[6] = { 10, 3, 7, 10, 5, 9000 };
	blk64_t s = 0, got = 0;

	CHECK(make_image("64M") == 0);
	img = open_image(E3_ALLOC_RBTREE);
	if (!img)
		return;
	for (int i = 0; i < 6; i++) {
		e3_rsv_init(img->alloc, &r[i], 12, hint[i], 0);
		if (claim) {
			CHECK_OK(e3_rsv_book_claim(img->alloc, &r[i],
						   e3_rsv_goal(img->alloc, &r[i]),
						   &s, &got));
			CHECK(i == 5 ? got == 0 && r[i].linked
				     : got == hint[i] && !r[i].linked);
		}
		if (!got) {
			if (!claim)
				CHECK_OK(e3_rsv_book(img->alloc, &r[i],
						     e3_rsv_goal(img->alloc,
								 &r[i])));
			CHECK_OK(e3_alloc_blocks(img->alloc, &r[i],
						 e3_rsv_goal(img->alloc, &r[i]),
						 hint[i], &s, &got));
		}
		CHECK(got == hint[i] || i == 5);
		starts[i] = s;
		got = 0;
		if (i == 1) {	/* the second file goes (as a close does:
				   blocks back, then the window) */
			e3_alloc_unclaim(img->alloc, s, hint[i]);
			e3_rsv_discard(img->alloc, &r[i]);
		}
	}
	CHECK(starts[2] == starts[1]);
	e3_alloc_get_stats(img->alloc, &st);
	*windows = (int)st.window_allocs;
	for (int i = 0; i < 6; i++)
		e3_rsv_discard(img->alloc, &r[i]);
	CHECK(tree_ok(img));
	drop_image(img);
}

static void test_book_claim(void)
{
	blk64_t booked[6], claimed[6];
	int wb = -1, wc = -1;

	claim_script(0, booked, &wb);
	claim_script(1, claimed, &wc);
	for (int i = 0; i < 6; i++)
		CHECK(booked[i] == claimed[i]);
	/* the big hint's windows alike, none for the five small ones */
	CHECK(wc >= 1 && wb == wc + 5);
}

/* Blocks freed in a transaction come back only after its seal and
 * e3_alloc_committed, whether freed directly or through libext2fs (the stats hook). */
static void test_deferred_free(void)
{
	struct e3_image *img;
	ext2_filsys fs;
	blk64_t free0, s, got, s2, got2, b, b2;

	CHECK(make_image("8M") == 0);
	img = open_image(E3_ALLOC_RBTREE);
	if (!img)
		return;
	fs = img->fs;
	free0 = e3_alloc_free_count(img->alloc);
	CHECK_OK(e3_alloc_blocks(img->alloc, NULL, 2055, 10, &s, &got));
	CHECK(s == 2055 && got == 10);
	e3_alloc_free_deferred(img->alloc, 2055, 10);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 10);
	CHECK_OK(e3_alloc_blocks(img->alloc, NULL, 2055, 10, &s2, &got2));
	CHECK(s2 == 2065 && got2 == 10);
	e3_alloc_seal(img->alloc);
	e3_alloc_committed(img->alloc);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 10);
	CHECK_OK(e3_alloc_blocks(img->alloc, NULL, 2055, 10, &s2, &got2));
	CHECK(s2 == 2055 && got2 == 10);

	/* Through libext2fs: new_block2 with no map asks our hook, the
	 * stats calls mark and free it; the free waits for the commit. */
	pthread_mutex_lock(&img->fs_lock);
	CHECK_OK(ext2fs_new_block2(fs, 3081, NULL, &b));
	CHECK(b == 3081);
	ext2fs_block_alloc_stats2(fs, b, +1);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 21);
	ext2fs_block_alloc_stats2(fs, b, -1);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 21);
	CHECK_OK(ext2fs_new_block2(fs, 3081, NULL, &b2));
	CHECK(b2 == 3082);
	e3_alloc_unclaim(img->alloc, b2, 1);
	e3_alloc_seal(img->alloc);
	e3_alloc_committed(img->alloc);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 20);
	CHECK_OK(ext2fs_new_block2(fs, 3081, NULL, &b2));
	CHECK(b2 == 3081);
	/* A block libext2fs marks behind our back is claimed too. */
	ext2fs_block_alloc_stats2(fs, 4103, +1);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 22);
	CHECK_OK(ext2fs_new_block2(fs, 4103, NULL, &b2));
	CHECK(b2 == 4104);
	pthread_mutex_unlock(&img->fs_lock);
	drop_image(img);
}

/* The seal (issue 21): with a commit in flight, blocks freed after the
 * running transaction became the committing one belong to the next
 * transaction. The committing one's commit must not hand them out: a
 * crash would replay it, giving the block to its old owner over the new
 * owner's data. */
static void test_deferred_seal(void)
{
	struct e3_image *img;
	blk64_t free0, s, got;

	CHECK(make_image("8M") == 0);
	img = open_image(E3_ALLOC_RBTREE);
	if (!img)
		return;
	free0 = e3_alloc_free_count(img->alloc);
	CHECK_OK(e3_alloc_blocks(img->alloc, NULL, 2055, 20, &s, &got));
	CHECK(s == 2055 && got == 20);
	/* freed in transaction T, then T starts committing (sealed) */
	e3_alloc_free_deferred(img->alloc, 2055, 5);
	e3_alloc_seal(img->alloc);
	/* freed while T is in flight: transaction T+1's */
	e3_alloc_free_deferred(img->alloc, 2060, 5);
	CHECK(e3_alloc_deferred_count(img->alloc) == 10);
	/* T commits: only its own frees come back */
	e3_alloc_committed(img->alloc);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 15);
	CHECK(e3_alloc_deferred_count(img->alloc) == 5);
	CHECK_OK(e3_alloc_blocks(img->alloc, NULL, 2055, 10, &s, &got));
	CHECK(s == 2055 && got == 5);	/* 2055..2059, never 2060.. */
	CHECK_OK(e3_alloc_blocks(img->alloc, NULL, 2055, 5, &s, &got));
	CHECK(s == 2075 && got == 5);
	/* a second release without a seal gives nothing back either */
	e3_alloc_committed(img->alloc);
	CHECK(e3_alloc_deferred_count(img->alloc) == 5);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 25);
	/* T+1 starts committing and commits: now they come back */
	e3_alloc_seal(img->alloc);
	e3_alloc_committed(img->alloc);
	CHECK(e3_alloc_deferred_count(img->alloc) == 0);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 20);
	CHECK_OK(e3_alloc_blocks(img->alloc, NULL, 2055, 5, &s, &got));
	CHECK(s == 2060 && got == 5);
	drop_image(img);
}

/* ext2fs_mkdir allocates through our hook: the directory block avoids a
 * hinted file's window, and the image written is clean for e2fsck. */
static void test_hook_mkdir(void)
{
	struct e3_image *img;
	struct e3_rsv w;
	struct ext2_inode inode;
	ext2_ino_t ino = 0;
	blk64_t free0;
	char cmd[256];

	CHECK(make_image("8M") == 0);
	img = open_image(E3_ALLOC_RBTREE);
	if (!img)
		return;
	free0 = e3_alloc_free_count(img->alloc);
	/* Inode 12's group 0: a 50-block hinted window from 22. */
	e3_rsv_init(img->alloc, &w, 12, 50, 0);
	CHECK_OK(e3_rsv_book(img->alloc, &w, e3_rsv_goal(img->alloc, &w)));
	CHECK(w.start == 22 && w.end == 71);
	pthread_mutex_lock(&img->fs_lock);
	CHECK_OK(ext2fs_mkdir(img->fs, EXT2_ROOT_INO, 0, "d1"));
	CHECK_OK(ext2fs_lookup(img->fs, EXT2_ROOT_INO, "d1", 2, NULL, &ino));
	CHECK_OK(ext2fs_read_inode(img->fs, ino, &inode));
	pthread_mutex_unlock(&img->fs_lock);
	/* Goal is group 0's first block; 22-71 are reserved: 72. */
	CHECK(inode.i_block[0] == 72);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - 1);
	e3_rsv_discard(img->alloc, &w);
	e3_alloc_destroy(img->alloc);
	CHECK(img->fs->get_alloc_block2 == NULL);
	CHECK_OK(ext2fs_close_free(&img->fs));
	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", img_path);
	CHECK(system(cmd) == 0);
	pthread_mutex_destroy(&img->fs_lock);
	free(img);
	unlink(img_path);
}

/* Orlov: top-level directories go to the group with fewest directories
 * among those with at least average free inodes and blocks, starting at
 * (directories so far) mod 8 — 2 at first (root, lost+found). Group 0 is
 * below average (21 free inodes), so: groups 2..7, then 1. A deeper
 * directory and a file stay in their parent's group. */
static void test_ialloc_spread(void)
{
	static const ext2_ino_t want[] = { 65, 97, 129, 161, 193, 225, 33 };
	struct e3_image *img;
	ext2_ino_t ino;

	CHECK(make_image("8M") == 0);
	img = open_image(E3_ALLOC_RBTREE);
	if (!img)
		return;
	pthread_mutex_lock(&img->fs_lock);
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		CHECK_OK(e3_ialloc(img->fs, EXT2_ROOT_INO, 1, &ino));
		if (ino != want[i])
			fprintf(stderr, "  dir %zu: inode %u, want %u\n", i,
				ino, want[i]);
		CHECK(ino == want[i]);
	}
	CHECK_OK(e3_ialloc(img->fs, 97, 1, &ino));
	CHECK(ino == 98);
	CHECK_OK(e3_ialloc(img->fs, 98, 0, &ino));
	CHECK(ino == 99);
	CHECK(ext2fs_bg_used_dirs_count(img->fs, 3) == 2);
	/* Files fill the parent's group, then move on. */
	for (int i = 0; i < 29; i++)
		CHECK_OK(e3_ialloc(img->fs, 98, 0, &ino));
	CHECK(ino == 128);
	CHECK_OK(e3_ialloc(img->fs, 98, 0, &ino));
	CHECK(ino / 32 != 3);
	pthread_mutex_unlock(&img->fs_lock);
	drop_image(img);
}

/* 16 files of 200 blocks written round-robin one block at a time (what
 * interleaved appenders look like to the allocator): average runs per
 * file. */
static double interleaved_runs(enum e3_alloc_mode mode, uint32_t goal_size)
{
	enum { NF = 16, PER = 200 };
	static blk64_t bl[NF][PER];
	struct e3_rsv r[NF];
	struct e3_image *img;
	double runs = 0;

	if (make_image("8M"))
		return -1;
	img = open_image(mode);
	if (!img)
		return -1;
	for (int i = 0; i < NF; i++) {
		e3_rsv_init(img->alloc, &r[i], 12, 0, (unsigned)i);
		if (goal_size)
			e3_rsv_set_goal_size(&r[i], goal_size);
	}
	for (int k = 0; k < PER; k++)
		for (int i = 0; i < NF; i++) {
			blk64_t s = 0, got;

			CHECK_OK(e3_alloc_blocks(img->alloc, &r[i],
						 e3_rsv_goal(img->alloc, &r[i]),
						 1, &s, &got));
			bl[i][k] = s;
		}
	for (int i = 0; i < NF; i++) {
		runs += 1;
		for (int k = 1; k < PER; k++)
			runs += bl[i][k] != bl[i][k - 1] + 1;
		e3_rsv_discard(img->alloc, &r[i]);
	}
	drop_image(img);
	return runs / NF;
}

/* Windows are what keeps interleaved writers apart: none interleaves them
 * block by block, ext3's growing windows give a handful of runs each, and
 * a window started big (SETRSVSZ; 256, as groups here are 1024) keeps
 * each file nearly whole.
 * 1024-block groups: 200 blocks can cross a group boundary once. */
static void test_interleaved_writers(void)
{
	double none = interleaved_runs(E3_ALLOC_NONE, 0);
	double ext3 = interleaved_runs(E3_ALLOC_RBTREE, 0);
	double list = interleaved_runs(E3_ALLOC_LIST, 0);
	double big = interleaved_runs(E3_ALLOC_RBTREE, 256);

	fprintf(stderr, "  # runs per file: none %.2f, rbtree %.2f, list %.2f, "
		"rbtree from 256: %.2f\n", none, ext3, list, big);
	CHECK(none > 100);
	CHECK(ext3 > 1.5 && ext3 < 10);
	CHECK(list == ext3);
	CHECK(big <= 2.0);
	{
		struct e3_rsv r;

		e3_rsv_set_goal_size(&r, 5000);
		CHECK(r.goal_size == 1027);
	}
}

/* Growth headroom: 16 unhinted files written round-robin one block at a
 * time, on an image with room for their headroom (16 x (8 + 3059) blocks
 * < 64 MiB of 1 KiB blocks). Each new window is booked past the others'
 * headroom, so each file's doubling windows 8 + 16 + ... + 512 (1016
 * blocks) follow one another in place: every file is one run of 1000
 * blocks, broken only where it runs into the next group's metadata
 * (groups of 8192 here). Without headroom (plain ext3) each window after
 * the first lands behind the neighbour's, as in test_interleaved_writers.
 * list and rbtree book the same windows. */
static void interleaved_place(enum e3_alloc_mode mode, blk64_t bl[16][1000])
{
	struct e3_rsv r[16];
	struct e3_image *img;

	if (make_image_g(8192, 256, "64M")) {
		CHECK(!"mke2fs failed");
		return;
	}
	img = open_image(mode);
	CHECK(img != NULL);
	if (!img)
		return;
	for (int i = 0; i < 16; i++)
		e3_rsv_init(img->alloc, &r[i], 12, 0, (unsigned)i);
	for (int k = 0; k < 1000; k++)
		for (int i = 0; i < 16; i++) {
			blk64_t s = 0, got;

			CHECK_OK(e3_alloc_blocks(img->alloc, &r[i],
						 e3_rsv_goal(img->alloc, &r[i]),
						 1, &s, &got));
			bl[i][k] = s;
		}
	CHECK(tree_ok(img));
	for (int i = 0; i < 16; i++)
		e3_rsv_discard(img->alloc, &r[i]);
	drop_image(img);
}

static void test_interleaved_grow_in_place(void)
{
	static blk64_t rb[16][1000], li[16][1000];
	int breaks = 0, gbreaks = 0;

	interleaved_place(E3_ALLOC_RBTREE, rb);
	interleaved_place(E3_ALLOC_LIST, li);
	CHECK(memcmp(rb, li, sizeof(rb)) == 0);
	for (int i = 0; i < 16; i++)
		for (int k = 1; k < 1000; k++) {
			blk64_t p = rb[i][k - 1], b = rb[i][k];

			if (b == p + 1)
				continue;
			/* 1 KiB blocks: group g is [1 + 8192 g, 8192 (g + 1)] */
			if ((p - 1) / 8192 + 1 == (b - 1) / 8192 &&
			    p % 8192 == 0)
				gbreaks++;
			else
				breaks++;
		}
	fprintf(stderr, "  # 16 interleaved files of 1000 blocks: %d breaks, "
		"%d at group metadata\n", breaks, gbreaks);
	CHECK(breaks == 0);
	CHECK(gbreaks <= 7);
}

/* Long hint-less streams: 4 files of 49152 blocks (1.5 groups) written
 * round-robin one block at a time (4 appenders of unknown size, as
 * bench/parload's 4 writers, colours 12-15) on 1 GiB of 4 KiB blocks,
 * groups of 32768. Excess runs of a file: runs beyond one per block group
 * it touches. With ext3's cap alone every 1027-block window lands behind
 * the neighbours' and each file is in ~17 pieces; in rbtree mode a file
 * that has filled two capped windows gets windows to the end of a group
 * (the rest of its own, else an unused one), so each file is one run per
 * group. list mode keeps the 2004 behaviour (the comparison row). */
static double stream_excess(enum e3_alloc_mode mode, double *worst)
{
	enum { NF = 4, PER = 49152, BPG = 32768, NG = 8 };
	static blk64_t bl[NF][PER];
	struct e3_rsv r[NF];
	struct e3_image *img;
	double sum = 0;

	*worst = 0;
	if (make_image_4k("1G"))
		return -1;
	img = open_image(mode);
	if (!img)
		return -1;
	for (int i = 0; i < NF; i++)
		e3_rsv_init(img->alloc, &r[i], 12 + i, 0, (unsigned)(12 + i));
	for (int k = 0; k < PER; k++)
		for (int i = 0; i < NF; i++) {
			blk64_t s = 0, got = 0;

			CHECK_OK(e3_alloc_blocks(img->alloc, &r[i],
						 e3_rsv_goal(img->alloc, &r[i]),
						 1, &s, &got));
			bl[i][k] = s;
		}
	CHECK(tree_ok(img));
	for (int i = 0; i < NF; i++) {
		bool seen[NG] = { false };
		int runs = 1, groups = 0;

		for (int k = 0; k < PER; k++) {
			unsigned g = (unsigned)(bl[i][k] / BPG);

			if (g < NG && !seen[g]) {
				seen[g] = true;
				groups++;
			}
			if (k && bl[i][k] != bl[i][k - 1] + 1)
				runs++;
		}
		sum += runs - groups;
		if (runs - groups > *worst)
			*worst = runs - groups;
		e3_rsv_discard(img->alloc, &r[i]);
	}
	CHECK(tree_ok(img));
	drop_image(img);
	return sum / NF;
}

static void test_streams_without_hints(void)
{
	double worst_rb, worst_li;
	double rb = stream_excess(E3_ALLOC_RBTREE, &worst_rb);
	double li = stream_excess(E3_ALLOC_LIST, &worst_li);

	fprintf(stderr, "  # 4 hint-less streams of 49152 blocks, excess runs "
		"per file: rbtree %.2f (worst %.0f), list %.2f (worst %.0f)\n",
		rb, worst_rb, li, worst_li);
	CHECK(rb >= 0 && worst_rb <= 1);
	CHECK(li > 2);
}

/* Hint sizes: data plus indirect blocks, 4 KiB (P = 1024) and 1 KiB
 * (P = 256) blocks, at each level's edges. */
static void test_map_blocks(void)
{
	CHECK(e3_map_blocks(4096, 0) == 0);
	CHECK(e3_map_blocks(4096, 12) == 12);
	CHECK(e3_map_blocks(4096, 13) == 14);		/* + IND */
	CHECK(e3_map_blocks(4096, 1036) == 1037);
	CHECK(e3_map_blocks(4096, 1037) == 1040);	/* + DIND + IND */
	CHECK(e3_map_blocks(4096, 1036 + 1024) == 1036 + 1024 + 3);
	CHECK(e3_map_blocks(4096, 1036 + 1024 + 1) == 1036 + 1025 + 4);
	/* 1 KiB: 12 + 256 + 65536 direct-to-DIND data, then TIND. */
	CHECK(e3_map_blocks(1024, 12 + 256 + 65536) == 12 + 256 + 65536 + 1 + 1 + 256);
	CHECK(e3_map_blocks(1024, 12 + 256 + 65536 + 1) ==
	      12 + 256 + 65536 + 1 + 1 + 1 + 256 + 1 + 1 + 1);
}

/* ---- eight threads ------------------------------------------------------- */

struct mt_ctx {
	struct e3_image *img;
	uint32_t *owner;		/* file id per block, claimed by CAS */
	int tid;
	uint64_t seed;
	uint64_t handed, unclaimed, doubles, bad_runs, bad_trees, files;
};

static uint64_t mt_rand(struct mt_ctx *c)
{
	c->seed ^= c->seed << 13;
	c->seed ^= c->seed >> 7;
	c->seed ^= c->seed << 17;
	return c->seed;
}

/* One writer: files of 1-400 blocks, a third of them size-hinted, asked
 * for in pieces of 1-64 blocks; every eighth file "fails" and gives its
 * blocks back. Runs until the image is full. */
static void *mt_worker(void *p)
{
	struct mt_ctx *c = p;
	struct e3_alloc *a = c->img->alloc;
	ext2_filsys fs = c->img->fs;
	blk64_t nblocks = ext2fs_blocks_count(fs->super);
	bool full = false;

	for (uint32_t n = 1; !full; n++) {
		uint32_t id = (uint32_t)c->tid * 1000000u + n;
		blk64_t size = 1 + mt_rand(c) % 400, left = size;
		bool hinted = mt_rand(c) % 3 == 0;
		ext2_ino_t ino = (ext2_ino_t)(11 + mt_rand(c) %
					      (fs->super->s_inodes_count - 11));
		struct { blk64_t start, n; } ext[512];
		size_t next = 0;
		struct e3_rsv r;

		e3_rsv_init(a, &r, ino, hinted ? size : 0, (unsigned)c->tid);
		while (left && next < 512) {
			blk64_t want = 1 + mt_rand(c) % 64, s, got;
			errcode_t err;

			if (want > left)
				want = left;
			err = e3_alloc_blocks(a, &r, e3_rsv_goal(a, &r), want,
					      &s, &got);
			if (err) {
				full = true;
				if (err != E3_IMAGE_FULL)
					c->bad_runs++;
				break;
			}
			if (got < 1 || got > want || s < fs->super->s_first_data_block ||
			    s + got > nblocks) {
				c->bad_runs++;
				break;
			}
			for (blk64_t b = s; b < s + got; b++) {
				uint32_t zero = 0;

				if (!__atomic_compare_exchange_n(&c->owner[b], &zero,
					id, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
					c->doubles++;
			}
			ext[next].start = s;
			ext[next++].n = got;
			c->handed += got;
			left -= got;
			if (next % 8 == 0 && !rsv_tree_check(a, NULL, 0))
				c->bad_trees++;
		}
		e3_rsv_discard(a, &r);
		c->files++;
		if (n % 8 == 0)
			for (size_t i = 0; i < next; i++) {
				for (blk64_t b = ext[i].start;
				     b < ext[i].start + ext[i].n; b++)
					__atomic_store_n(&c->owner[b], 0,
							 __ATOMIC_RELEASE);
				e3_alloc_unclaim(a, ext[i].start, ext[i].n);
				c->unclaimed += ext[i].n;
			}
	}
	return NULL;
}

static void run_threads(enum e3_alloc_mode mode)
{
	enum { NT = 8 };
	struct mt_ctx ctx[NT];
	pthread_t th[NT];
	struct e3_image *img;
	struct e3_alloc_stats st;
	blk64_t free0, nblocks, net = 0, owned = 0, s, got, drained = 0;
	uint64_t doubles = 0, bad = 0, files = 0, not_free = 0;
	uint32_t *owner;

	CHECK(make_image_g(1024, 1024, "32M") == 0);
	img = open_image(mode);
	if (!img)
		return;
	nblocks = ext2fs_blocks_count(img->fs->super);
	owner = calloc(nblocks, sizeof(*owner));
	free0 = e3_alloc_free_count(img->alloc);
	for (int t = 0; t < NT; t++) {
		ctx[t] = (struct mt_ctx){ .img = img, .owner = owner, .tid = t,
					  .seed = 0x1234567ULL * (t + 1) };
		pthread_create(&th[t], NULL, mt_worker, &ctx[t]);
	}
	for (int t = 0; t < NT; t++) {
		pthread_join(th[t], NULL);
		net += ctx[t].handed - ctx[t].unclaimed;
		doubles += ctx[t].doubles;
		bad += ctx[t].bad_runs + ctx[t].bad_trees;
		files += ctx[t].files;
	}
	for (blk64_t b = 0; b < nblocks; b++)
		if (owner[b]) {
			owned++;
			if (ext2fs_test_block_bitmap2(img->fs->block_map, b))
				not_free++;
		}
	CHECK(doubles == 0);
	CHECK(bad == 0);
	CHECK(not_free == 0);
	CHECK(owned == net);
	CHECK(files > 50);
	CHECK(e3_alloc_free_count(img->alloc) == free0 - net);
	CHECK(tree_ok(img));
	e3_alloc_get_stats(img->alloc, &st);
	CHECK(st.windows == 0);
	/* Whatever is left can still be had, to the last block. */
	while (e3_alloc_blocks(img->alloc, NULL, 1, 4096, &s, &got) == 0) {
		drained += got;
		for (blk64_t b = s; b < s + got; b++)
			if (owner[b]++)
				doubles++;
	}
	CHECK(drained == free0 - net);
	CHECK(doubles == 0);
	CHECK(e3_alloc_free_count(img->alloc) == 0);
	free(owner);
	drop_image(img);
}

/* ---- determinism ------------------------------------------------------------ */

#define DF 200			/* files */

struct det_file {
	struct e3_rsv r;
	blk64_t size, *blocks;	/* the blocks it got, in order */
	blk64_t n;
};

struct det_run {
	struct e3_alloc *a;
	struct det_file *f;
	unsigned booked, next;	/* [atomic] */
	uint64_t seed;
	int bad;
};

/* A worker takes the next booked file and fills it in random pieces. */
static void *det_worker(void *p)
{
	struct det_run *d = p;
	uint64_t seed = __atomic_add_fetch(&d->seed, 0x9e3779b97f4a7c15ULL,
					   __ATOMIC_RELAXED);

	for (;;) {
		unsigned i = __atomic_fetch_add(&d->next, 1, __ATOMIC_ACQ_REL);
		struct det_file *f = &d->f[i < DF ? i : 0];

		if (i >= DF)
			return NULL;
		while (__atomic_load_n(&d->booked, __ATOMIC_ACQUIRE) <= i)
			sched_yield();
		while (f->n < f->size) {
			blk64_t s, got, want;

			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			want = 1 + seed % 50;
			if (want > f->size - f->n)
				want = f->size - f->n;
			if (e3_alloc_blocks(d->a, &f->r, e3_rsv_goal(d->a, &f->r),
					    want, &s, &got)) {
				__atomic_fetch_add(&d->bad, 1, __ATOMIC_RELAXED);
				break;
			}
			for (blk64_t b = s; b < s + got; b++)
				f->blocks[f->n++] = b;
		}
		e3_rsv_discard(d->a, &f->r);
	}
}

/* Books every file in order from this thread while `threads` workers
 * write them; returns the files (caller frees). */
static struct det_file *det_load(int threads, int *bad)
{
	struct e3_image *img;
	struct det_run d = { .seed = (uint64_t)threads };
	pthread_t th[8];
	uint64_t rng = 42;

	if (make_image_g(1024, 1024, "32M"))
		return NULL;
	img = open_image(E3_ALLOC_RBTREE);
	if (!img)
		return NULL;
	d.a = img->alloc;
	d.f = calloc(DF, sizeof(*d.f));
	for (int t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, det_worker, &d);
	for (unsigned i = 0; i < DF; i++) {
		struct det_file *f = &d.f[i];

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		f->size = 1 + rng % 150 + (i % 50 == 0 ? 1500 : 0);
		f->blocks = calloc(f->size, sizeof(blk64_t));
		e3_rsv_init(d.a, &f->r, (ext2_ino_t)(12 + (i * 37) % 1000),
			    f->size, i % 16);
		if (e3_rsv_book(d.a, &f->r, e3_rsv_goal(d.a, &f->r)))
			d.bad++;
		__atomic_store_n(&d.booked, i + 1, __ATOMIC_RELEASE);
	}
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	*bad = d.bad;
	drop_image(img);
	return d.f;
}

/* Hinted files booked in order by one thread land on the same blocks
 * whether 1 or 8 workers write them, in whatever pieces; and each is one
 * run per group it crosses. */
static void test_hinted_deterministic(void)
{
	int bad1 = 0, bad8 = 0, diff = 0, extra_runs = 0;
	struct det_file *one = det_load(1, &bad1), *eight = det_load(8, &bad8);

	CHECK(one && eight);
	if (!one || !eight)
		return;
	CHECK(bad1 == 0 && bad8 == 0);
	for (int i = 0; i < DF; i++) {
		blk64_t runs = 1;

		if (one[i].n != one[i].size || eight[i].n != eight[i].size ||
		    memcmp(one[i].blocks, eight[i].blocks,
			   one[i].n * sizeof(blk64_t))) {
			if (!diff)
				fprintf(stderr, "  file %d (%llu blocks): %llu.. vs %llu..\n",
					i, one[i].size, one[i].blocks[0], eight[i].blocks[0]);
			diff++;
		}
		for (blk64_t k = 1; k < one[i].n; k++)
			if (one[i].blocks[k] != one[i].blocks[k - 1] + 1)
				runs++;
		/* 1 KiB blocks, 1024 per group, first data block 1: one
		 * run per group crossed, or per group's worth of data (at
		 * most 1018 free blocks in a group) when a file needs more
		 * than one run in any case. */
		if (one[i].n) {
			blk64_t g0 = (one[i].blocks[0] - 1) / 1024;
			blk64_t g1 = (one[i].blocks[one[i].n - 1] - 1) / 1024;
			blk64_t allowed = 1 + (g1 > g0 ? g1 - g0 : 0);

			if (allowed < (one[i].n + 1017) / 1018)
				allowed = (one[i].n + 1017) / 1018;
			if (runs > allowed) {
				fprintf(stderr, "  file %d: %llu blocks in %llu runs\n",
					i, one[i].n, runs);
				extra_runs++;
			}
		}
		free(one[i].blocks);
		free(eight[i].blocks);
	}
	CHECK(diff == 0);
	CHECK(extra_runs == 0);
	free(one);
	free(eight);
}

static void test_threads_rbtree(void)
{
	run_threads(E3_ALLOC_RBTREE);
}

static void test_threads_list(void)
{
	run_threads(E3_ALLOC_LIST);
}

static void test_threads_none(void)
{
	run_threads(E3_ALLOC_NONE);
}

int main(void)
{
	RUN(test_script_rbtree);
	RUN(test_script_list);
	RUN(test_script_none);
	RUN(test_window_growth);
	RUN(test_fallback_into_windows);
	RUN(test_resume_point);
	RUN(test_book_claim);
	RUN(test_deferred_free);
	RUN(test_deferred_seal);
	RUN(test_hook_mkdir);
	RUN(test_ialloc_spread);
	RUN(test_map_blocks);
	RUN(test_interleaved_writers);
	RUN(test_interleaved_grow_in_place);
	RUN(test_streams_without_hints);
	RUN(test_hinted_deterministic);
	RUN(test_threads_rbtree);
	RUN(test_threads_list);
	RUN(test_threads_none);
	return unit_done();
}
