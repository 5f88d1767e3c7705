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
#include <unistd.h>
#include "unit.h"
#include "alloc.h"
#include "rsv_tree.h"

static char img_path[64];

/* 8 MiB, 1 KiB blocks, groups of 1024 blocks, 32 inodes per group, no
 * resize inode. Group 2 = blocks 2049-3072: bitmaps 2049-2050, inode table
 * 2051-2054, data 2055-3072. Group 4 data 4103-5120; group 5 has a backup
 * superblock, data 5129-6144; group 6 data 6151-7168; group 7 7177-8191.
 * Group 0 data 22-1024 (root and lost+found use 9-21), group 1 1033-2048,
 * group 3 3081-4096. */
static int make_image(const char *extra, const char *size)
{
	char cmd[512];

	snprintf(img_path, sizeof(img_path), "/tmp/alloc-test-%d.img",
		 (int)getpid());
	snprintf(cmd, sizeof(cmd), "rm -f %s && mke2fs -q -F -t ext2 -b 1024 "
		 "-g 1024 -N 256 -I 128 -O ^resize_inode %s %s %s >/dev/null 2>&1",
		 img_path, extra, img_path, size);
	return system(cmd);
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
	err = e3_alloc_create(img, mode, &img->alloc);
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

static const struct cmd script[] = {
	/* A: inode 65 (group 2), colour 0, goal 2049. First window [2049,
	 * 2056]; its first free block is 2055 (2049-2054 are metadata). */
	{ NEW, 0, 65, 0, 0, 0, 0 },
	{ ALLOC, 0, 1, 0, 0, 2055, 1 },
	/* Goal 2056 is the window's last block, 4 wanted: the window is
	 * extended by 3 (no window after it) to [2049, 2059]. */
	{ ALLOC, 0, 4, 0, 0, 2056, 4 },
	/* Goal 2060 is past the window: hit 5 is not > 11/2, so the size
	 * stays 8 and the window slides to [2060, 2067]. */
	{ ALLOC, 0, 4, 0, 0, 2060, 4 },
	/* B: inode 66, colour 1: goal 2049 + 1024/16 = 2113, window
	 * [2113, 2120] after A's. */
	{ NEW, 1, 66, 0, 1, 0, 0 },
	{ ALLOC, 1, 2, 0, 0, 2113, 2 },
	/* C: inode 67, colour 0, goal 2049: the gap before A fits 8 blocks
	 * ([2049, 2056]) but its first free block is 2064, beyond it; the
	 * search restarts at 2064, skips A and books [2068, 2075]. */
	{ NEW, 2, 67, 0, 0, 0, 0 },
	{ ALLOC, 2, 3, 0, 0, 2068, 3 },
	/* A fills the rest of its window ... */
	{ ALLOC, 0, 4, 0, 0, 2064, 4 },
	/* ... so hit 8 > 8/2 doubles the next window to 16: after C,
	 * [2076, 2091], which fits before B's 2113. */
	{ ALLOC, 0, 1, 0, 0, 2076, 1 },
	/* B closes: its window goes, its two blocks stay. */
	{ DISCARD, 1, 0, 0, 0, 0, 0 },
	/* A wants 40 from 2077 with 15 left: extended to 2116 (nothing
	 * after it now); the run stops at B's block 2113. */
	{ ALLOC, 0, 40, 0, 0, 2077, 36 },
	/* Goal 2113 is taken: 9 wanted, 4 left, extended to 2121; first
	 * free in the window is 2115, so 2115-2121. */
	{ ALLOC, 0, 9, 0, 0, 2115, 7 },
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
	 * metadata: 4203-5120 (918 blocks) then 5129-5710 (582). */
	{ NEW, 4, 130, 1500, 0, 0, 0 },
	{ ALLOC, 4, 1500, 0, 0, 4203, 918 },
	{ ALLOC, 4, 1500, 0, 0, 5129, 582 },
	/* H3: hint 600 fits a group: not the 434 left in group 5 but group
	 * 6's free run, 6151-6750. */
	{ NEW, 5, 131, 600, 0, 0, 0 },
	{ ALLOC, 5, 600, 0, 0, 6151, 600 },
	/* H4: hint 5000 fits nowhere: the largest run, searched from 4097
	 * and wrapping, is group 0's 22-1024 with group 1's 1033-2048 (2019
	 * free blocks; 5711-6150 has 434, 6751-8191 1433, 2122-4096 1967). */
	{ NEW, 6, 132, 5000, 0, 0, 0 },
	{ ALLOC, 6, 5000, 0, 0, 22, 1003 },
	{ ALLOC, 6, 5000, 0, 0, 1033, 1016 },
	/* That window is used up; the 2981 still hinted get the next
	 * largest run from the goal 2049 on: 2122-4096 (1967 blocks). */
	{ ALLOC, 6, 5000, 0, 0, 2122, 951 },
	{ ALLOC, 6, 5000, 0, 0, 3081, 1016 },
};

static void run_script(enum e3_alloc_mode mode)
{
	struct e3_rsv files[8];
	struct e3_image *img;
	blk64_t free0, claimed = 0;
	int bad = 0;

	if (make_image("", "8M")) {
		CHECK(!"mke2fs failed");
		return;
	}
	img = open_image(mode);
	CHECK(img != NULL);
	if (!img)
		return;
	free0 = e3_alloc_free_count(img->alloc);
	CHECK(free0 == ext2fs_free_blocks_count(img->fs->super));
	for (size_t i = 0; i < sizeof(script) / sizeof(*script); i++) {
		const struct cmd *c = &script[i];
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
	drop_image(img);
}

static void test_script_rbtree(void)
{
	run_script(E3_ALLOC_RBTREE);
}

/* The list walks differently but must book exactly the same windows. */
static void test_script_list(void)
{
	run_script(E3_ALLOC_LIST);
}

int main(void)
{
	RUN(test_script_rbtree);
	RUN(test_script_list);
	return unit_done();
}
