/*
 * test_mkjournal.c: lib/journal/mkjournal.c's arithmetic against libext2fs — the
 * blocks e3_journal_fs_blocks says a journal takes must be the blocks
 * ext2fs_add_journal_inode3 allocates (the checker refuses to recreate a
 * journal that would not fit by this count, so an undercount would let
 * a creation fail half way), and the default size is libext2fs's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>

#include "e3img.h"
#include "journal/mkjournal.h"
#include "unit.h"

/* A fresh filesystem of nblocks blocks of bs bytes in a sparse file. */
static ext2_filsys new_fs(const char *path, blk64_t nblocks, unsigned bs)
{
	struct ext2_super_block param;
	ext2_filsys fs = NULL;
	unsigned log = 0;

	while ((1024u << log) < bs)
		log++;
	memset(&param, 0, sizeof(param));
	ext2fs_blocks_count_set(&param, nblocks);
	param.s_log_block_size = log;
	param.s_rev_level = EXT2_DYNAMIC_REV;
	if (ext2fs_initialize(path, EXT2_FLAG_RW | EXT2_FLAG_64BITS, &param,
			      unix_io_manager, &fs))
		return NULL;
	if (ext2fs_allocate_tables(fs)) {
		ext2fs_free(fs);
		return NULL;
	}
	return fs;
}

static void one(blk64_t fsblocks, unsigned bs, blk_t n)
{
	char path[] = "/tmp/test_mkjournal.XXXXXX";
	int fd = mkstemp(path);
	ext2_filsys fs;
	blk64_t before;
	blk_t got = 0;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(ftruncate(fd, (off_t)(fsblocks * bs)) == 0);
	close(fd);
	fs = new_fs(path, fsblocks, bs);
	CHECK(fs != NULL);
	if (fs) {
		before = ext2fs_free_blocks_count(fs->super);
		CHECK_OK(e3_make_journal(fs, n, 1, &got));
		CHECK(got == n);
		if (before - ext2fs_free_blocks_count(fs->super) !=
		    e3_journal_fs_blocks(fs, n))
			fprintf(stderr, "  bs %u, %u blocks: took %llu, counted %llu\n",
				bs, (unsigned)n, (unsigned long long)
				(before - ext2fs_free_blocks_count(fs->super)),
				(unsigned long long)e3_journal_fs_blocks(fs, n));
		CHECK(before - ext2fs_free_blocks_count(fs->super) ==
		      e3_journal_fs_blocks(fs, n));
		ext2fs_free(fs);
	}
	unlink(path);
}

static void test_fs_blocks_as_libext2fs(void)
{
	one(16384, 1024, 1024);		/* direct, single, double indirect */
	one(16384, 1024, 1300);
	one(262144, 1024, 12 + 256 + 65536 + 300);	/* triple indirect */
	one(32768, 4096, 1024);		/* direct and single only */
	one(32768, 4096, 1036);		/* exactly direct + single */
	one(32768, 4096, 4096);		/* double indirect */
}

static void test_default(void)
{
	char path[] = "/tmp/test_mkjournal.XXXXXX";
	int fd = mkstemp(path);
	ext2_filsys fs;
	blk_t n = 1;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	fs = new_fs(path, 8192, 1024);
	CHECK(fs != NULL);
	if (fs) {
		CHECK_OK(e3_journal_default_blocks(fs, &n));
		CHECK(n == (blk_t)ext2fs_default_journal_size(8192));
		CHECK(n == 1024);	/* mke2fs -t ext3 on 8 MiB: 1024k */
		ext2fs_free(fs);
	}
	fs = new_fs(path, 1500, 1024);
	CHECK(fs != NULL);
	if (fs) {
		CHECK(e3_journal_default_blocks(fs, &n) ==
		      EXT2_ET_JOURNAL_TOO_SMALL);
		CHECK(n == 0);
		ext2fs_free(fs);
	}
	unlink(path);
}

int main(void)
{
	e3_init_errors();
	RUN(test_fs_blocks_as_libext2fs);
	RUN(test_default);
	return unit_done();
}
