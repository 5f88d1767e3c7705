/*
 * test_shell_ops.c: unit tests of what libe3img gives e3debugfs —
 * e3_view_open (a pending journal replayed in memory only: shown, and
 * the image file byte for byte as it was; a writer refused beside it),
 * and lib/shell_ops.c's journaled changes: e3_rmdir, e3_removexattr,
 * e3_punch, e3_super_write, e3_inode_write, e3_rsv_check, each checked
 * by e2fsck -fn afterwards. Images come from mke2fs in /tmp.
 */
#include <sys/stat.h>
#include <unistd.h>
#include "unit.h"
#include "e3img.h"

static char img_path[64];

static int make_image(void)
{
	char cmd[160];

	snprintf(img_path, sizeof(img_path), "/tmp/shellops-unit-%d.img", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "mke2fs -q -t ext3 -b 1024 -N 256 -F %s 8M >/dev/null 2>&1", img_path);
	return system(cmd) == 0;
}

static int fsck_clean(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", img_path);
	return system(cmd) == 0;
}

/* a cheap fingerprint of the whole file */
static unsigned long long file_sum(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned long long h = 1469598103934665603ULL;
	int c;

	if (!f)
		return 0;
	while ((c = getc(f)) != EOF)
		h = (h ^ (unsigned)c) * 1099511628211ULL;
	fclose(f);
	return h;
}

static e3_image_t *open_writer(void)
{
	struct e3_open_opts o = { .flags = E3_OPEN_WRITE };
	e3_image_t *img = NULL;

	CHECK_OK(e3_image_open(img_path, &o, &img));
	return img;
}

static struct e3_attr attr(uint32_t mode)
{
	struct e3_attr a;

	memset(&a, 0, sizeof(a));
	a.mode = mode;
	a.atime.tv_sec = a.mtime.tv_sec = a.ctime.tv_sec = 1700000000;
	return a;
}

static void test_view_replays_in_memory_only(void)
{
	struct e3_replay_report rep;
	struct e3_attr a = attr(LINUX_S_IFDIR | 0755);
	e3_image_t *img, *w = NULL;
	ext2_filsys fs = NULL;
	ext2_ino_t ino, found;
	unsigned long long before;
	int replayed = 0;

	if (!make_image())
		SKIP("mke2fs failed");
	img = open_writer();
	if (!img)
		return;
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "pending", &a, &ino));
	CHECK_OK(e3_image_commit(img));
	e3_image_abort(img);		/* committed, never checkpointed */
	before = file_sum(img_path);

	CHECK_OK(e3_view_open(img_path, 0, 0, 0, &fs, &rep, &replayed));
	CHECK(replayed == 1 && rep.transactions >= 1);
	if (fs) {
		CHECK(ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, "pending",
				   &found) == 0 && found == ino);
		CHECK(fs->inode_map != NULL);	/* bitmaps read */
		/* a reader shares the image with readers, never a writer */
		struct e3_open_opts o = { .flags = E3_OPEN_WRITE };
		CHECK(e3_image_open(img_path, &o, &w) == E3_IMAGE_LOCKED);
		ext2fs_close_free(&fs);
	}
	CHECK(file_sum(img_path) == before);

	/* without the replay: as on disk */
	CHECK_OK(e3_view_open(img_path, E3_VIEW_NO_REPLAY | E3_VIEW_NO_BITMAPS,
			      0, 0, &fs, &rep, &replayed));
	CHECK(replayed == 0);
	if (fs) {
		CHECK(ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, "pending",
				   &found) != 0);
		CHECK(fs->inode_map == NULL);
		ext2fs_close_free(&fs);
	}
	CHECK(file_sum(img_path) == before);
	unlink(img_path);
}

static void test_view_refuses_what_is_not_an_image(void)
{
	struct e3_replay_report rep;
	ext2_filsys fs = NULL;
	int replayed;

	CHECK(e3_view_open("/tmp", 0, 0, 0, &fs, &rep, &replayed) == E3_IS_DIRECTORY);
	CHECK(e3_view_open("/dev/null", 0, 0, 0, &fs, &rep, &replayed) != 0);
	CHECK(fs == NULL);
}

static void test_rmdir(void)
{
	struct e3_attr d = attr(LINUX_S_IFDIR | 0755);
	struct e3_attr s = attr(LINUX_S_IFLNK | 0777);
	struct ext2_inode root_before, root_after;
	e3_image_t *img;
	ext2_ino_t a, b, l;

	if (!make_image())
		SKIP("mke2fs failed");
	img = open_writer();
	if (!img)
		return;
	CHECK_OK(ext2fs_read_inode(e3_image_fs(img), EXT2_ROOT_INO, &root_before));
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "a", &d, &a));
	CHECK_OK(e3_mkdir(img, a, "b", &d, &b));
	CHECK_OK(e3_symlink(img, a, "l", "target", &s, &l));
	CHECK(e3_rmdir(img, EXT2_ROOT_INO, "a") == ENOTEMPTY);
	CHECK(e3_rmdir(img, a, "l") == E3_NOT_DIR);
	CHECK(e3_rmdir(img, a, "none") == E3_NOT_FOUND);
	CHECK(e3_rmdir(img, a, "..") == E3_BAD_NAME);
	CHECK_OK(e3_rmdir(img, a, "b"));
	CHECK_OK(e3_remove(img, a, "l"));
	CHECK_OK(e3_rmdir(img, EXT2_ROOT_INO, "a"));
	CHECK_OK(ext2fs_read_inode(e3_image_fs(img), EXT2_ROOT_INO, &root_after));
	CHECK(root_after.i_links_count == root_before.i_links_count);
	CHECK_OK(e3_image_close(img));
	CHECK(fsck_clean());
	unlink(img_path);
}

static void test_xattr_punch_super_inode(void)
{
	struct e3_attr f = attr(LINUX_S_IFREG | 0644);
	struct e3_attr d = attr(LINUX_S_IFDIR | 0755);
	struct ext2_super_block sb;
	struct ext2_inode in;
	enum e3_alloc_mode mode;
	uint64_t windows = 9;
	char why[128], *buf;
	e3_image_t *img;
	e3_file_t *file;
	ext2_ino_t ino, dir;

	if (!make_image())
		SKIP("mke2fs failed");
	img = open_writer();
	if (!img)
		return;
	buf = calloc(1, 40 * 1024);
	memset(buf, 'x', 40 * 1024);
	CHECK_OK(e3_create(img, EXT2_ROOT_INO, "f", &f, 40 * 1024, &file));
	ino = e3_file_ino(file);
	CHECK_OK(e3_file_write(file, buf, 40 * 1024));
	CHECK_OK(e3_file_close(file));
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "d", &d, &dir));

	CHECK_OK(e3_setxattr(img, ino, "user.a", "1", 1));
	CHECK_OK(e3_removexattr(img, ino, "user.a"));
	CHECK(e3_removexattr(img, ino, "user.a") == ENODATA);

	/* blocks 5..20 go (and the indirect block past 12 stays) */
	CHECK_OK(e3_punch(img, ino, 5, 20));
	CHECK_OK(ext2fs_read_inode(e3_image_fs(img), ino, &in));
	CHECK(EXT2_I_SIZE(&in) == 40 * 1024);
	CHECK(in.i_block[4] != 0 && in.i_block[5] == 0 && in.i_block[11] == 0);
	CHECK(e3_punch(img, dir, 0, ~0ULL) == E3_BAD_FILE_TYPE);
	CHECK(e3_punch(img, 8, 0, ~0ULL) == E3_BAD_FILE_TYPE);	/* journal */

	memcpy(&sb, e3_image_fs(img)->super, sizeof(sb));
	strcpy((char *)sb.s_volume_name, "shellops");
	CHECK_OK(e3_super_write(img, &sb));
	sb.s_blocks_count++;
	CHECK(e3_super_write(img, &sb) == E3_BAD_OPTION);

	CHECK_OK(ext2fs_read_inode(e3_image_fs(img), ino, &in));
	in.i_uid = 42;
	CHECK_OK(e3_inode_write(img, ino, &in, sizeof(in)));
	CHECK(e3_inode_write(img, 0, &in, sizeof(in)) == EXT2_ET_BAD_INODE_NUM);

	CHECK_OK(e3_rsv_check(img, why, sizeof(why), &windows, &mode));
	CHECK(windows == 0 && mode == E3_ALLOC_RBTREE);
	CHECK_OK(e3_image_close(img));
	free(buf);
	CHECK(fsck_clean());

	/* a reader has no allocator to check, and writes nothing */
	{
		struct e3_open_opts ro = { 0 };

		img = NULL;
		CHECK_OK(e3_image_open(img_path, &ro, &img));
		if (img) {
			CHECK(e3_rsv_check(img, why, sizeof(why), &windows, &mode) ==
			      E3_IMAGE_READONLY);
			CHECK(e3_image_commit(img) == E3_IMAGE_READONLY);
			CHECK(ext2fs_read_inode(e3_image_fs(img), ino, &in) == 0 &&
			      in.i_uid == 42);
			CHECK(!strcmp((char *)e3_image_fs(img)->super->s_volume_name,
				      "shellops"));
			CHECK_OK(e3_image_close(img));
		}
	}
	unlink(img_path);
}

int main(void)
{
	e3_init_errors();
	RUN(test_view_replays_in_memory_only);
	RUN(test_view_refuses_what_is_not_an_image);
	RUN(test_rmdir);
	RUN(test_xattr_punch_super_inode);
	return unit_done();
}
