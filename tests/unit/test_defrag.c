/*
 * test_defrag.c: the defragmenter through its library API. A file
 * written into the holes between small files is in some twenty runs;
 * e3_defrag_image must plan it in a dry run without changing the image's
 * bytes, then move it into one run,
 * with the checker's figures saying so and every byte read back the same.
 * Then an image of whole files with holes between them: the placement
 * plan (defrag_pack.c) fills the holes, each block moved once.
 * Oracle for consistency: e2fsck -fn. Image: mke2fs, 1 KiB blocks, /tmp.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e3img.h"
#include "unit.h"

#define PIECE 4096
#define PIECES 40

static char img_path[64];

static void fill(unsigned char *buf, int file, int piece)
{
	for (int i = 0; i < PIECE; i++)
		buf[i] = (unsigned char)(file * 131 + piece * 7 + i * 13);
}

/* Forty 4 KiB files in a row, every other one removed, then "a" written
 * by debugfs, whose allocator (goal, then the first free block) fills
 * the holes first: a file of some twenty runs. debugfs, not our tools:
 * the sanitized copy of the tree builds only the library and units. */
static int make_image(void)
{
	char cmd[512], src[80], small[80], cmds[80];
	unsigned char buf[PIECE];
	FILE *f;
	int rc;

	snprintf(src, sizeof(src), "%s.src", img_path);
	snprintf(small, sizeof(small), "%s.small", img_path);
	snprintf(cmds, sizeof(cmds), "%s.cmds", img_path);
	if (!(f = fopen(small, "wb")))
		return -1;
	for (int i = 0; i < PIECE; i++)
		fputc(i & 0xff, f);
	if (fclose(f) || !(f = fopen(src, "wb")))
		return -1;
	for (int p = 0; p < PIECES; p++) {
		fill(buf, 0, p);
		fwrite(buf, 1, PIECE, f);
	}
	if (fclose(f) || !(f = fopen(cmds, "w")))
		return -1;
	for (int i = 0; i < PIECES; i++)
		fprintf(f, "write %s s%d\n", small, i);
	for (int i = 1; i < PIECES; i += 2)
		fprintf(f, "rm s%d\n", i);
	fprintf(f, "write %s a\n", src);
	if (fclose(f))
		return -1;
	snprintf(cmd, sizeof(cmd), "mke2fs -q -F -t ext3 -b 1024 %s 8M "
		 ">/dev/null 2>&1 && debugfs -w -f %s %s >/dev/null 2>&1",
		 img_path, cmds, img_path);
	rc = system(cmd);
	unlink(src);
	unlink(small);
	unlink(cmds);
	return rc ? -1 : 0;
}

static int contents_ok(void)
{
	e3_image_t *img;
	struct e3_open_opts o = { 0 };
	unsigned char want[PIECE], got[PIECE];
	int ok = 1;

	if (e3_image_open(img_path, &o, &img))
		return 0;
	for (int i = 0; i < 1 && ok; i++) {
		ext2_file_t fh;
		ext2_ino_t ino;
		unsigned n;

		if (ext2fs_namei(e3_image_fs(img), EXT2_ROOT_INO, EXT2_ROOT_INO,
				 "a", &ino) ||
		    ext2fs_file_open(e3_image_fs(img), ino, 0, &fh)) {
			ok = 0;
			break;
		}
		for (int p = 0; p < PIECES && ok; p++) {
			fill(want, i, p);
			ok = !ext2fs_file_read(fh, got, PIECE, &n) && n == PIECE &&
			     !memcmp(want, got, PIECE);
		}
		ext2fs_file_close(fh);
	}
	e3_image_abort(img);
	return ok;
}

static uint64_t image_sum(void)
{
	FILE *f = fopen(img_path, "rb");
	uint64_t h = 1469598103934665603ull;
	int c;

	if (!f)
		return 0;
	while ((c = getc(f)) != EOF)
		h = (h ^ (unsigned)c) * 1099511628211ull;
	fclose(f);
	return h;
}

static void test_dry_run_then_move(void)
{
	struct e3_defrag_opts o;
	struct e3_defrag_report r;
	uint64_t sum;
	char cmd[128];

	if (make_image())
		SKIP("could not build the fragmented image (mke2fs?)");
	CHECK(contents_ok());
	e3_defrag_opts_init(&o);
	o.dry_run = 1;
	sum = image_sum();
	CHECK_OK(e3_defrag_image(img_path, &o, &r));
	CHECK(r.have_before && r.before.fragmented_files >= 1);
	CHECK(r.st.files_moved >= 1);
	CHECK(r.predicted_noncontig_permille < r.before.noncontig_permille);
	CHECK(image_sum() == sum);
	e3_defrag_report_free(&r);

	o.dry_run = 0;
	CHECK_OK(e3_defrag_image(img_path, &o, &r));
	CHECK(r.st.files_moved >= 1 && r.st.files_skipped == 0);
	CHECK(r.have_after && r.after.fragmented_files == 0);
	CHECK(r.after.total_excess == 0);
	CHECK(r.st.runs_after < r.st.runs_before);
	/* the checker's histogram: every file with blocks counted once,
	 * the fragmented one among them before, none after */
	{
		uint64_t nb = 0, na = 0;

		for (int i = 0; i < E3_RUNS_HIST; i++) {
			nb += r.before.runs_hist[i];
			na += r.after.runs_hist[i];
		}
		CHECK(nb == r.before.files_with_blocks);
		CHECK(na == r.after.files_with_blocks);
		CHECK(e3_layout_runs_pct(&r.before, 100) == r.before.max_runs);
		CHECK(e3_layout_runs_pct(&r.after, 100) == 1);
	}
	e3_defrag_report_free(&r);
	CHECK(contents_ok());
	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", img_path);
	CHECK(system(cmd) == 0);
}

/* Sixty 4 KiB files in a row, every other one removed: thirty holes of
 * four blocks between whole files, nothing fragmented. The placement
 * plan fills the holes with the files above them, each moved once, so
 * free space ends in a few extents; every remaining file reads back as
 * it was written. */
#define HOLEY 60

static int make_holey(void)
{
	char cmd[512], src[80], cmds[80];
	unsigned char buf[PIECE];
	FILE *f;
	int rc;

	snprintf(cmds, sizeof(cmds), "%s.cmds", img_path);
	if (!(f = fopen(cmds, "w")))
		return -1;
	for (int i = 0; i < HOLEY; i++) {
		FILE *g;

		snprintf(src, sizeof(src), "%s.h%d", img_path, i);
		if (!(g = fopen(src, "wb")))
			return -1;
		fill(buf, i + 1, 0);
		fwrite(buf, 1, PIECE, g);
		if (fclose(g))
			return -1;
		fprintf(f, "write %s h%d\n", src, i);
	}
	for (int i = 1; i < HOLEY; i += 2)
		fprintf(f, "rm h%d\n", i);
	if (fclose(f))
		return -1;
	snprintf(cmd, sizeof(cmd), "mke2fs -q -F -t ext3 -b 1024 %s 8M "
		 ">/dev/null 2>&1 && debugfs -w -f %s %s >/dev/null 2>&1",
		 img_path, cmds, img_path);
	rc = system(cmd);
	for (int i = 0; i < HOLEY; i++) {
		snprintf(src, sizeof(src), "%s.h%d", img_path, i);
		unlink(src);
	}
	unlink(cmds);
	return rc ? -1 : 0;
}

static int holey_ok(void)
{
	e3_image_t *img;
	struct e3_open_opts o = { 0 };
	unsigned char want[PIECE], got[PIECE];
	int ok = 1;

	if (e3_image_open(img_path, &o, &img))
		return 0;
	for (int i = 0; i < HOLEY && ok; i += 2) {
		ext2_file_t fh;
		ext2_ino_t ino;
		char name[16];
		unsigned n;

		snprintf(name, sizeof(name), "h%d", i);
		if (ext2fs_namei(e3_image_fs(img), EXT2_ROOT_INO, EXT2_ROOT_INO,
				 name, &ino) ||
		    ext2fs_file_open(e3_image_fs(img), ino, 0, &fh)) {
			ok = 0;
			break;
		}
		fill(want, i + 1, 0);
		ok = !ext2fs_file_read(fh, got, PIECE, &n) && n == PIECE &&
		     !memcmp(want, got, PIECE);
		ext2fs_file_close(fh);
	}
	e3_image_abort(img);
	return ok;
}

static void test_pack_gathers_free_space(void)
{
	struct e3_defrag_opts o;
	struct e3_defrag_report r;
	char cmd[128];

	if (make_holey())
		SKIP("could not build the holey image (mke2fs?)");
	CHECK(holey_ok());
	e3_defrag_opts_init(&o);
	CHECK_OK(e3_defrag_image(img_path, &o, &r));
	CHECK(r.have_before && r.have_after);
	/* thirty holes, and the free space after the last file */
	CHECK(r.before.free_extents >= HOLEY / 2);
	CHECK(r.before.fragmented_files == 0);
	/* one group: the holes filled, the rest in one or two extents */
	CHECK(r.after.free_extents <= 2);
	CHECK(r.after.free_blocks == r.before.free_blocks);
	/* the files of the upper half come down, the lower half stays */
	CHECK(r.st.files_compacted >= HOLEY / 5);
	/* each block moved once at most: no more than the holes held */
	CHECK(r.st.blocks_moved <= (uint64_t)(HOLEY / 2) * (PIECE / 1024));
	CHECK(r.after.fragmented_files == 0);
	e3_defrag_report_free(&r);
	CHECK(holey_ok());
	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", img_path);
	CHECK(system(cmd) == 0);
	/* nothing left to gain: a rerun moves nothing */
	CHECK_OK(e3_defrag_image(img_path, &o, &r));
	CHECK(r.st.blocks_moved == 0);
	e3_defrag_report_free(&r);
}

static void test_bad_min_runs(void)
{
	struct e3_defrag_opts o;
	struct e3_defrag_report r;

	e3_defrag_opts_init(&o);
	o.min_runs = 1;
	CHECK(e3_defrag_image(img_path, &o, &r) == E3_BAD_OPTION);
}

/* p90 by nearest rank, on a histogram made by hand: 100 files, 85 of
 * one run, 10 of 3, 4 of 7, 1 of 2000 (the last bucket) */
static void test_runs_pct(void)
{
	struct e3_layout l;

	memset(&l, 0, sizeof(l));
	CHECK(e3_layout_runs_pct(&l, 90) == 0);
	l.runs_hist[1] = 85;
	l.runs_hist[3] = 10;
	l.runs_hist[7] = 4;
	l.runs_hist[E3_RUNS_HIST - 1] = 1;
	CHECK(e3_layout_runs_pct(&l, 50) == 1);
	CHECK(e3_layout_runs_pct(&l, 85) == 1);
	CHECK(e3_layout_runs_pct(&l, 86) == 3);
	CHECK(e3_layout_runs_pct(&l, 90) == 3);
	CHECK(e3_layout_runs_pct(&l, 96) == 7);
	CHECK(e3_layout_runs_pct(&l, 100) == E3_RUNS_HIST - 1);
}

int main(void)
{
	e3_init_errors();
	snprintf(img_path, sizeof(img_path), "/tmp/defrag-unit-%d.img",
		 (int)getpid());
	RUN(test_dry_run_then_move);
	RUN(test_pack_gathers_free_space);
	RUN(test_bad_min_runs);
	RUN(test_runs_pct);
	if (!getenv("KEEP"))
		unlink(img_path);
	return unit_done();
}
