/*
 * test_mkfs.c: the mkfs pipeline's library steps without the CLI — feature
 * editing, validation, geometry against numbers mke2fs 1.47.0 gives
 * (`mke2fs -n -v -t ext3`), and that apply leaves a fresh file sparse.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include "e3img.h"
#include "unit.h"

static void test_features(void)
{
	struct e3_mkfs_params p;
	char buf[256];

	e3_mkfs_params_init(&p);
	e3_mkfs_feature_string(p.features, buf, sizeof(buf));
	CHECK(!strcmp(buf, "has_journal ext_attr resize_inode dir_index "
		      "filetype sparse_super large_file"));
	CHECK_OK(e3_mkfs_edit_features(&p, "^dir_index,^has_journal"));
	e3_mkfs_feature_string(p.features, buf, sizeof(buf));
	CHECK(!strcmp(buf, "ext_attr resize_inode filetype sparse_super large_file"));
	CHECK_OK(e3_mkfs_edit_features(&p, "dir_index,^extents,^64bit"));
	CHECK(p.features[0] & EXT2_FEATURE_COMPAT_DIR_INDEX);
	CHECK(e3_mkfs_edit_features(&p, "filetype,flex_bg") == E3_EXT4_FEATURE);
	CHECK(!strcmp(p.bad_feature, "flex_bg"));
	CHECK(e3_mkfs_edit_features(&p, "frob") == E3_UNKNOWN_FEATURE);
	CHECK(!strcmp(p.bad_feature, "frob"));
}

static void test_validate(void)
{
	struct e3_mkfs_params p;
	const char *why;

	e3_mkfs_params_init(&p);
	CHECK_OK(e3_mkfs_validate(&p, &why));
	p.block_size = 3000;
	CHECK(e3_mkfs_validate(&p, &why) == E3_BAD_BLOCK_SIZE);
	e3_mkfs_params_init(&p);
	p.inode_size = 512;
	CHECK(e3_mkfs_validate(&p, &why) == E3_BAD_INODE_SIZE);
	e3_mkfs_params_init(&p);
	p.reserved_percent = 51;
	CHECK(e3_mkfs_validate(&p, &why) == E3_BAD_OPTION && why);
	e3_mkfs_params_init(&p);
	p.blocks_per_group = 1004;
	CHECK(e3_mkfs_validate(&p, &why) == E3_BAD_OPTION && why);
	e3_mkfs_params_init(&p);
	CHECK_OK(e3_mkfs_edit_features(&p, "^sparse_super"));
	CHECK(e3_mkfs_validate(&p, &why) == E3_BAD_OPTION && why);
}

static errcode_t compute(uint64_t size, unsigned bs, struct e3_mkfs_geometry *g)
{
	struct e3_mkfs_params p;
	const char *why;

	e3_mkfs_params_init(&p);
	p.size = size;
	p.block_size = bs;
	return e3_mkfs_compute(&p, g, &why);
}

/* The numbers `mke2fs -n -v -t ext3` prints for these sizes. */
static void test_geometry_as_mke2fs(void)
{
	struct e3_mkfs_geometry g;

	CHECK_OK(compute(8ULL << 20, 0, &g));
	CHECK(g.block_size == 1024 && g.blocks == 8192 && g.inodes == 2048);
	CHECK(g.groups == 1 && g.reserved_gdt_blocks == 31);
	CHECK(g.journal_blocks == 1024 && g.reserved_blocks == 409);
	CHECK(!strcmp(g.usage_type, "small"));

	CHECK_OK(compute(1ULL << 30, 0, &g));
	CHECK(g.block_size == 4096 && g.blocks == 262144 && g.inodes == 65536);
	CHECK(g.groups == 8 && g.inodes_per_group == 8192);
	CHECK(g.inode_blocks_per_group == 512 && g.reserved_gdt_blocks == 63);
	CHECK(g.journal_blocks == 8192 && g.reserved_blocks == 13107);

	CHECK_OK(compute(2ULL << 40, 0, &g));
	CHECK(g.blocks == 536870912 && g.inodes == 134217728);
	CHECK(g.groups == 16384 && g.blocks_per_group == 32768);
	CHECK(g.journal_blocks == 262144 && g.reserved_blocks == 26843545);
	/* Maximum filesystem blocks=4294967296 = (gdt + desc) * 128 * bpg */
	CHECK((uint64_t)(g.reserved_gdt_blocks + g.desc_blocks) * 128 *
	      g.blocks_per_group == 4294967296ULL);
}

static void test_refusals(void)
{
	struct e3_mkfs_geometry g;
	struct e3_mkfs_params p;
	const char *why = NULL;

	CHECK(compute(1ULL << 20, 0, &g) == E3_TOO_SMALL);
	CHECK(compute(4ULL << 20, 4096, &g) == E3_TOO_SMALL);
	CHECK(compute(17ULL << 40, 0, &g) == E3_TOO_LARGE);
	e3_mkfs_params_init(&p);
	p.size = 8ULL << 20;
	p.inode_count = 32000;
	CHECK(e3_mkfs_compute(&p, &g, &why) == E3_BAD_INODE_COUNT && why);
}

/* A new file: only metadata is written, the rest stays hole. */
static void test_apply_sparse(void)
{
	char path[] = "/tmp/test_mkfs.XXXXXX";
	struct e3_mkfs_params p;
	struct e3_mkfs_geometry g;
	ext2_filsys fs = NULL;
	ext2_ino_t ino;
	struct stat st;
	char cmd[256];
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	e3_mkfs_params_init(&p);
	p.size = 64ULL << 20;
	CHECK_OK(e3_mkfs_compute(&p, &g, NULL));
	CHECK_OK(e3_mkfs_apply(path, &p, &g, &fs));
	if (fs) {
		CHECK(ext2fs_has_feature_journal(fs->super));
		CHECK_OK(ext2fs_lookup(fs, EXT2_ROOT_INO, "lost+found", 10,
				       NULL, &ino));
		CHECK_OK(ext2fs_close_free(&fs));
	}
	CHECK(stat(path, &st) == 0);
	CHECK(st.st_size == 64 << 20);
	/* 8 inode tables (4 MiB) and the journal (4 MiB) are holes */
	CHECK((uint64_t)st.st_blocks * 512 < (4ULL << 20));
	/* and e2fsck calls it clean, like every image a test writes */
	snprintf(cmd, sizeof(cmd),
		 "PATH=/sbin:/usr/sbin:$PATH e2fsck -fn %s >/dev/null 2>&1", path);
	CHECK(system(cmd) == 0);
	unlink(path);
}

int main(void)
{
	e3_init_errors();
	RUN(test_features);
	RUN(test_validate);
	RUN(test_geometry_as_mke2fs);
	RUN(test_refusals);
	RUN(test_apply_sparse);
	return unit_done();
}
