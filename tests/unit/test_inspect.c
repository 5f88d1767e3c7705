/*
 * test_inspect.c: the inspection layer's figures (lib/inspect) — runs,
 * groups crossed and excess runs on made-up block sequences, the free
 * extent histogram, and, on a fragmented image made by debugfs, that the
 * per-file walk (e3_runs_of_inode) and the free-space scan (e3_free_scan)
 * add up to exactly what e3fsck's layout pass reports from its own walk;
 * the per-group figures and metadata owners (groups.c, owner.c) against
 * the superblock and descriptors, and the text picture's counts against
 * the SVG's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e3img.h"
#include "unit.h"

static char img_path[64], dat_path[64], cmd_path[64];

static void feed(struct e3_runs *r, blk64_t from, blk64_t n)
{
	for (blk64_t b = from; b < from + n; b++) {
		e3_runs_step(r, b);
		e3_runs_add(r, b);
	}
}

static void test_runs_sequences(void)
{
	struct ext2_super_block sb;
	struct e3_layout_file lf;
	struct e3_runs r;

	memset(&sb, 0, sizeof(sb));
	sb.s_first_data_block = 1;
	sb.s_blocks_per_group = 8192;

	e3_runs_init(&r, &sb);		/* one run in one group */
	feed(&r, 100, 10);
	e3_runs_figures(&r, &lf);
	CHECK(lf.blocks == 10 && lf.runs == 1 && lf.groups == 1 &&
	      lf.excess == 0 && !r.fragmented);

	e3_runs_init(&r, &sb);		/* a gap: two runs, one excess */
	feed(&r, 100, 5);
	feed(&r, 200, 5);
	e3_runs_figures(&r, &lf);
	CHECK(lf.runs == 2 && lf.groups == 1 && lf.excess == 1 &&
	      r.fragmented);

	e3_runs_init(&r, &sb);		/* one run across a group boundary */
	feed(&r, 8190, 5);		/* groups 0 and 1 (8193 starts 1) */
	e3_runs_figures(&r, &lf);
	CHECK(lf.runs == 1 && lf.groups == 2 && lf.excess == 0);

	e3_runs_init(&r, &sb);		/* back to a group already seen */
	feed(&r, 100, 2);
	feed(&r, 9000, 2);
	feed(&r, 200, 2);
	e3_runs_figures(&r, &lf);
	CHECK(lf.runs == 3 && lf.groups == 2 && lf.excess == 1);

	e3_runs_init(&r, &sb);		/* a block stepped over, not counted */
	feed(&r, 100, 3);
	e3_runs_step(&r, 5000);
	feed(&r, 103, 3);
	e3_runs_figures(&r, &lf);
	CHECK(lf.runs == 1 && lf.blocks == 6 && r.fragmented);

	e3_runs_init(&r, &sb);		/* no blocks: one group, no runs */
	e3_runs_figures(&r, &lf);
	CHECK(lf.runs == 0 && lf.groups == 1 && lf.excess == 0);
}

static void test_free_histogram(void)
{
	struct e3_layout lay;

	memset(&lay, 0, sizeof(lay));
	e3_free_extent_add(&lay, 0);	/* not an extent */
	e3_free_extent_add(&lay, 1);
	e3_free_extent_add(&lay, 2);
	e3_free_extent_add(&lay, 3);
	e3_free_extent_add(&lay, 1024);
	CHECK(lay.free_extents == 4 && lay.free_blocks == 1030);
	CHECK(lay.free_min == 1 && lay.free_max == 1024);
	CHECK(lay.hist_extents[0] == 1 && lay.hist_blocks[0] == 1);
	CHECK(lay.hist_extents[1] == 2 && lay.hist_blocks[1] == 5);
	CHECK(lay.hist_extents[10] == 1 && lay.hist_blocks[10] == 1024);
}

/* 8 MiB, 1 KiB blocks, 1024 blocks a group (so files cross groups): 300
 * files of 3 KiB, every other one removed, then files of 150-600 KiB
 * written into the holes. */
static int make_fragmented(void)
{
	FILE *f;
	char cmd[1024];
	int i;

	snprintf(img_path, sizeof(img_path), "/tmp/inspect-unit-%d.img", (int)getpid());
	snprintf(dat_path, sizeof(dat_path), "/tmp/inspect-unit-%d.dat", (int)getpid());
	snprintf(cmd_path, sizeof(cmd_path), "/tmp/inspect-unit-%d.cmd", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "PATH=/usr/sbin:/sbin:$PATH; rm -f %s && "
		 "head -c 614400 /dev/urandom > %s && "
		 "mke2fs -q -F -t ext3 -b 1024 -g 1024 -N 2048 %s 8M >/dev/null",
		 img_path, dat_path, img_path);
	if (system(cmd) != 0)
		return -1;
	f = fopen(cmd_path, "w");
	if (!f)
		return -1;
	for (i = 0; i < 300; i++)
		fprintf(f, "write %s s%d\n", dat_path, i);
	for (i = 0; i < 300; i += 2)
		fprintf(f, "rm s%d\n", i);
	for (i = 0; i < 4; i++)
		fprintf(f, "write %s big%d\n", dat_path, i);
	fprintf(f, "mkdir d\n");
	for (i = 0; i < 80; i++)
		fprintf(f, "write %s d/name-long-enough-to-grow-the-directory-%d\n",
			"/dev/null", i);
	fclose(f);
	/* debugfs writes a 600 KiB file for "write": cut the small ones */
	snprintf(cmd, sizeof(cmd),
		 "PATH=/usr/sbin:/sbin:$PATH; head -c 3072 %s > %s.s && "
		 "sed -i 's|^write %s s|write %s.s s|' %s && "
		 "debugfs -w -f %s %s >/dev/null 2>&1",
		 dat_path, dat_path, dat_path, dat_path, cmd_path, cmd_path,
		 img_path);
	return system(cmd) == 0 ? 0 : -1;
}

static void cleanup(void)
{
	char p[80];

	unlink(img_path);
	unlink(dat_path);
	unlink(cmd_path);
	snprintf(p, sizeof(p), "%s.s", dat_path);
	unlink(p);
}

static void test_matches_check(void)
{
	struct e3_check_opts o;
	struct e3_check_report *rep = NULL;
	struct e3_layout mine;
	ext2_filsys fs;
	ext2_inode_scan scan;
	struct ext2_inode in;
	ext2_ino_t ino;
	uint64_t files = 0, runs = 0, excess = 0, frag = 0;
	uint32_t max_runs = 0;

	if (make_fragmented()) {
		CHECK(!"mke2fs/debugfs could not make the test image");
		cleanup();
		return;
	}
	e3_check_opts_init(&o);
	o.layout = 1;
	CHECK_OK(e3_check_image(img_path, &o, &rep));
	if (!rep) {
		cleanup();
		return;
	}
	CHECK(rep->exit_code == 0);

	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0,
			     unix_io_manager, &fs));
	CHECK_OK(ext2fs_read_bitmaps(fs));
	CHECK_OK(ext2fs_open_inode_scan(fs, 0, &scan));
	while (!ext2fs_get_next_inode(scan, &ino, &in) && ino) {
		struct e3_layout_file lf;
		struct e3_runs r;

		if (!ext2fs_test_inode_bitmap2(fs->inode_map, ino) ||
		    ino == EXT2_RESIZE_INO)
			continue;
		if (ino >= EXT2_FIRST_INO(fs->super) && !in.i_links_count)
			continue;
		CHECK_OK(e3_runs_of_inode(fs, ino, &in, &r));
		if (r.fragmented && r.nblocks < fs->super->s_blocks_per_group)
			frag++;
		if (!r.nblocks)
			continue;
		e3_runs_figures(&r, &lf);
		files++;
		runs += lf.runs;
		excess += lf.excess;
		if (lf.runs > max_runs)
			max_runs = lf.runs;
	}
	ext2fs_close_inode_scan(scan);
	memset(&mine, 0, sizeof(mine));
	CHECK_OK(e3_free_scan(fs, &mine));
	ext2fs_close_free(&fs);

	/* the image must really be fragmented for this to mean anything */
	CHECK(rep->layout.max_runs > 3 && rep->layout.total_excess > 10);
	CHECK(files == rep->layout.files_with_blocks);
	CHECK(runs == rep->layout.total_runs);
	CHECK(excess == rep->layout.total_excess);
	CHECK(max_runs == rep->layout.max_runs);
	CHECK(frag == rep->layout.fragmented_files + rep->layout.fragmented_dirs);
	CHECK(mine.free_extents == rep->layout.free_extents);
	CHECK(mine.free_blocks == rep->layout.free_blocks);
	CHECK(mine.free_min == rep->layout.free_min &&
	      mine.free_max == rep->layout.free_max);
	CHECK(!memcmp(mine.hist_extents, rep->layout.hist_extents,
		      sizeof(mine.hist_extents)));
	e3_check_report_free(rep);
	cleanup();
}

/* The block-map picture of a fragmented image: every block drawn in
 * exactly one class, the free ones as free, the fragmented files named,
 * and the SVG renders (rsvg-convert, from librsvg2-bin) to a PNG. */
static void test_map_svg(void)
{
	struct e3_map_stats st;
	char svg[80], png[96], cmd[256];
	uint64_t sum = 0;
	ext2_filsys fs;
	FILE *out, *p;
	unsigned char magic[8] = { 0 };

	if (make_fragmented()) {
		CHECK(!"mke2fs/debugfs could not make the test image");
		cleanup();
		return;
	}
	snprintf(svg, sizeof(svg), "%s.svg", img_path);
	snprintf(png, sizeof(png), "%s.png", img_path);
	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0,
			     unix_io_manager, &fs));
	out = fopen(svg, "w");
	CHECK(out != NULL);
	if (out) {
		CHECK_OK(e3_map_svg(fs, out, "test <image> & more", &st));
		CHECK(fclose(out) == 0);
		for (int c = 0; c < E3_MAP_NCLASS; c++) {
			sum += st.blocks[c];
			fprintf(stderr, "  # %s: %llu blocks\n",
				e3_map_class_name(c),
				(unsigned long long)st.blocks[c]);
		}
		CHECK(sum == ext2fs_blocks_count(fs->super) -
			     fs->super->s_first_data_block);
		CHECK(st.blocks[E3_MAP_FREE] ==
		      ext2fs_free_blocks_count(fs->super));
		CHECK(st.blocks[E3_MAP_JOURNAL] >= 1024);
		CHECK(st.blocks[E3_MAP_META] > 0 && st.blocks[E3_MAP_DIR] > 0);
		CHECK(st.blocks[E3_MAP_FRAG] > 0 && st.fragmented_files >= 1);
		CHECK(st.bands == fs->group_desc_count);
		snprintf(cmd, sizeof(cmd), "rsvg-convert -o %s %s", png, svg);
		CHECK(system(cmd) == 0);
		p = fopen(png, "rb");
		CHECK(p && fread(magic, 1, 8, p) == 8 &&
		      !memcmp(magic, "\x89PNG\r\n\x1a\n", 8));
		if (p)
			fclose(p);
	}
	ext2fs_close_free(&fs);
	unlink(svg);
	unlink(png);
	cleanup();
}

static int count_free(blk64_t start, blk64_t len, void *priv)
{
	(void)start;
	*(blk64_t *)priv += len;
	return 0;
}

static void check_owner(ext2_filsys fs)
{
	struct e3_meta_owner m;
	uint32_t ipg = fs->super->s_inodes_per_group;
	blk64_t it = ext2fs_inode_table_loc(fs, 2);

	CHECK_OK(e3_meta_owner(fs, 1, &m));
	CHECK(m.kind == E3_META_SUPER && m.group == 0);
	CHECK_OK(e3_meta_owner(fs, 2, &m));
	CHECK(m.kind == E3_META_DESC && m.group == 0 && m.index == 0);
	CHECK_OK(e3_meta_owner(fs, ext2fs_block_bitmap_loc(fs, 3), &m));
	CHECK(m.kind == E3_META_BLOCK_BITMAP && m.group == 3);
	CHECK_OK(e3_meta_owner(fs, ext2fs_inode_bitmap_loc(fs, 3), &m));
	CHECK(m.kind == E3_META_INODE_BITMAP && m.group == 3);
	CHECK_OK(e3_meta_owner(fs, it, &m));
	CHECK(m.kind == E3_META_INODE_TABLE && m.group == 2 && m.index == 0 &&
	      m.ino_first == 2 * ipg + 1);
	CHECK_OK(e3_meta_owner(fs, it + fs->inode_blocks_per_group - 1, &m));
	CHECK(m.kind == E3_META_INODE_TABLE && m.ino_last == 3 * ipg);
	CHECK_OK(e3_meta_owner(fs, ext2fs_blocks_count(fs->super) - 1, &m));
	CHECK(m.kind == E3_META_NONE);
	CHECK(e3_meta_owner(fs, ext2fs_blocks_count(fs->super), &m) ==
	      EXT2_ET_BAD_BLOCK_NUM);
}

static void test_groups_owner(void)
{
	struct e3_group_info gi;
	struct e3_map_stats svg, text;
	blk64_t sum = 0, all = 0;
	ext2_filsys fs;
	FILE *out;

	if (make_fragmented()) {
		CHECK(!"mke2fs/debugfs could not make the test image");
		cleanup();
		return;
	}
	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0,
			     unix_io_manager, &fs));
	for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
		CHECK_OK(e3_group_info(fs, g, &gi));
		CHECK(gi.bitmap_free == gi.free_blocks);
		CHECK(gi.largest_free <= gi.bitmap_free);
		CHECK(!gi.free_blocks || gi.free_extents >= 1);
		sum += gi.free_blocks;
	}
	CHECK(sum == ext2fs_free_blocks_count(fs->super));
	CHECK(e3_group_info(fs, fs->group_desc_count, &gi) ==
	      EXT2_ET_INVALID_ARGUMENT);
	CHECK_OK(e3_free_extents(fs, fs->super->s_first_data_block,
				 ext2fs_blocks_count(fs->super) - 1,
				 count_free, &all));
	CHECK(all == sum);
	check_owner(fs);
	out = fopen("/dev/null", "w");
	CHECK(out != NULL);
	if (out) {
		CHECK_OK(e3_map_svg(fs, out, NULL, &svg));
		CHECK_OK(e3_map_text(fs, out, &text));
		CHECK(!memcmp(&svg, &text, sizeof(svg)));
		fclose(out);
	}
	ext2fs_close_free(&fs);
	cleanup();
}

int main(void)
{
	e3_init_errors();
	RUN(test_runs_sequences);
	RUN(test_free_histogram);
	RUN(test_matches_check);
	RUN(test_map_svg);
	RUN(test_groups_owner);
	return unit_done();
}
