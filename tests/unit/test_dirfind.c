/*
 * test_dirfind.c: e3_dir_find and e3_dir_unlink_at against libext2fs.
 *
 * Directories of 400 and 9,000 names on a 1 KiB-block image, indexed by
 * e2fsck -fD (one index level, then two):
 * - every name is found with the inode ext2fs_lookup gives, in a block
 *   the index led to; names that are not there are not found; "." and
 *   ".." (in block 0, in no leaf) are found too;
 * - unlinking 60 names with e3_dir_unlink_at leaves the directory's blocks
 *   byte for byte as ext2fs_unlink leaves them on a copy of the image;
 * - an index with a root it does not recognise, and a directory without
 *   the index flag, are scanned: same answers, no block given.
 */
#include <unistd.h>
#include "unit.h"
#include "e3img.h"
#include "fs/dirfind.h"

static char img[64], img2[80];

/* /d with n empty files f0..f(n-1), indexed by e2fsck -fD. */
static int make_image(unsigned n)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "rm -rf %s.src %s && mkdir -p %s.src/d && cd %s.src/d && "
		 "seq 0 %u | sed 's/^/f/' | xargs touch && cd / && "
		 "mke2fs -q -F -t ext3 -b 1024 -N 12000 -d %s.src %s 24M "
		 ">/dev/null 2>&1 && { e2fsck -fyD %s >/dev/null 2>&1; "
		 "[ $? -le 1 ]; } && rm -rf %s.src",
		 img, img, img, img, n - 1, img, img, img, img);
	return system(cmd);
}

static ext2_filsys open_fs(const char *path, int rw)
{
	ext2_filsys fs = NULL;

	if (ext2fs_open(path, EXT2_FLAG_64BITS | (rw ? EXT2_FLAG_RW : 0), 0, 0,
			unix_io_manager, &fs))
		return NULL;
	return fs;
}

static ext2_ino_t dir_d(ext2_filsys fs)
{
	ext2_ino_t d = 0;

	CHECK_OK(ext2fs_lookup(fs, EXT2_ROOT_INO, "d", 1, NULL, &d));
	return d;
}

/* The indirect levels of d's index, -1 when it has none. */
static int index_levels(ext2_filsys fs, ext2_ino_t d)
{
	struct ext2_inode di;
	blk64_t pblk = 0;
	unsigned char buf[1024];

	if (ext2fs_read_inode(fs, d, &di) || !(di.i_flags & EXT2_INDEX_FL) ||
	    ext2fs_bmap2(fs, d, &di, NULL, 0, 0, NULL, &pblk) ||
	    io_channel_read_blk64(fs->io, pblk, 1, buf))
		return -1;
	return buf[0x1E];
}

/* Every name as ext2fs_lookup has it; want_block: a block is named. */
static void same_answers(ext2_filsys fs, ext2_ino_t d, unsigned n,
			 int want_block)
{
	unsigned bad = 0, noblock = 0;
	char name[32];

	for (unsigned i = 0; i < n + 52; i++) {
		ext2_ino_t a = 0, b = 0;
		blk64_t lblk;
		errcode_t ea, eb;

		if (i < n + 50)
			snprintf(name, sizeof(name), i < n ? "f%u" : "g%u", i);
		else	/* in block 0, outside every leaf */
			strcpy(name, i == n + 50 ? "." : "..");
		ea = ext2fs_lookup(fs, d, name, (int)strlen(name), NULL, &a);
		eb = e3_dir_find(fs, d, name, &b, &lblk);
		if (ea != eb || a != b)
			bad++;
		if (!eb && i < n + 50 &&
		    (lblk == E3_DIR_BLOCK_UNKNOWN) == want_block)
			noblock++;
	}
	CHECK(bad == 0);
	CHECK(noblock == 0);
}

static void test_find(unsigned n, int levels)
{
	ext2_filsys fs;
	ext2_ino_t d;

	CHECK(make_image(n) == 0);
	fs = open_fs(img, 0);
	CHECK(fs != NULL);
	if (!fs)
		return;
	d = dir_d(fs);
	CHECK(index_levels(fs, d) == levels);
	same_answers(fs, d, n, 1);
	ext2fs_close_free(&fs);
}

static void test_find_one_level(void)
{
	test_find(400, 0);
}

static void test_find_two_levels(void)
{
	test_find(9000, 1);
}

/* 60 names unlinked both ways on two copies; d's blocks compared. */
static void test_unlink_same_bytes(void)
{
	ext2_filsys a, b;
	ext2_ino_t d;
	struct ext2_inode di;
	char cmd[256], name[32], *ba, *bb;
	unsigned diff = 0;

	CHECK(make_image(3000) == 0);
	snprintf(cmd, sizeof(cmd), "cp %s %s", img, img2);
	CHECK(system(cmd) == 0);
	a = open_fs(img, 1);
	b = open_fs(img2, 1);
	CHECK(a && b);
	if (!a || !b)
		goto out;
	d = dir_d(a);
	for (unsigned i = 0; i < 3000; i += 50) {
		ext2_ino_t ino = 0, ino2 = 0;
		blk64_t lblk;

		snprintf(name, sizeof(name), "f%u", i);
		CHECK_OK(ext2fs_lookup(a, d, name, (int)strlen(name), NULL,
				       &ino));
		CHECK_OK(ext2fs_unlink(a, d, name, ino, 0));
		CHECK_OK(e3_dir_find(b, d, name, &ino2, &lblk));
		CHECK(ino2 == ino && lblk != E3_DIR_BLOCK_UNKNOWN);
		CHECK_OK(e3_dir_unlink_at(b, d, lblk, name, ino2));
		CHECK(e3_dir_find(b, d, name, &ino2, &lblk) ==
		      EXT2_ET_FILE_NOT_FOUND);
	}
	/* a name not in the block given */
	CHECK(e3_dir_unlink_at(b, d, 1, "nope", 12) == EXT2_ET_FILE_NOT_FOUND);
	CHECK_OK(ext2fs_read_inode(a, d, &di));
	ba = malloc(a->blocksize);
	bb = malloc(b->blocksize);
	for (blk64_t l = 0; ba && bb && l < EXT2_I_SIZE(&di) / a->blocksize;
	     l++) {
		blk64_t pa = 0, pb = 0;

		CHECK_OK(ext2fs_bmap2(a, d, NULL, NULL, 0, l, NULL, &pa));
		CHECK_OK(ext2fs_bmap2(b, d, NULL, NULL, 0, l, NULL, &pb));
		if (pa != pb || io_channel_read_blk64(a->io, pa, 1, ba) ||
		    io_channel_read_blk64(b->io, pb, 1, bb) ||
		    memcmp(ba, bb, a->blocksize))
			diff++;
	}
	CHECK(diff == 0);
	free(ba);
	free(bb);
out:
	if (a)
		ext2fs_close_free(&a);
	if (b)
		ext2fs_close_free(&b);
	unlink(img2);
}

/* A root info length of 7: not an index this code follows. */
static void test_unrecognised_index_scans(void)
{
	ext2_filsys fs;
	ext2_ino_t d;
	struct ext2_inode di;
	blk64_t pblk = 0;
	unsigned char buf[1024];

	CHECK(make_image(400) == 0);
	fs = open_fs(img, 1);
	CHECK(fs != NULL);
	if (!fs)
		return;
	d = dir_d(fs);
	CHECK_OK(ext2fs_read_inode(fs, d, &di));
	CHECK_OK(ext2fs_bmap2(fs, d, &di, NULL, 0, 0, NULL, &pblk));
	CHECK_OK(io_channel_read_blk64(fs->io, pblk, 1, buf));
	buf[0x1D] = 7;
	CHECK_OK(io_channel_write_blk64(fs->io, pblk, 1, buf));
	same_answers(fs, d, 400, 0);
	/* and without the index flag at all */
	buf[0x1D] = 8;
	CHECK_OK(io_channel_write_blk64(fs->io, pblk, 1, buf));
	di.i_flags &= ~EXT2_INDEX_FL;
	CHECK_OK(ext2fs_write_inode(fs, d, &di));
	same_answers(fs, d, 400, 0);
	ext2fs_close_free(&fs);
}

int main(void)
{
	snprintf(img, sizeof(img), "/tmp/dirfind-%d.img", (int)getpid());
	snprintf(img2, sizeof(img2), "%s.2", img);
	RUN(test_find_one_level);
	RUN(test_find_two_levels);
	RUN(test_unlink_same_bytes);
	RUN(test_unrecognised_index_scans);
	unlink(img);
	return unit_done();
}
