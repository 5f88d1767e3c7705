/*
 * test_state.c: what the superblock's state means to a writer, and how a
 * failed data write in e3_file_close_many lands.
 *
 * - Writers refuse an image marked with errors or not clean
 *   (E3_FS_NOT_CLEAN), leaving it byte for byte; E3_OPEN_FORCE lets them
 *   in and leaves the state as it found it.
 * - Without a journal the on-disk state turns "not clean" at the first
 *   change (not at open: a refused or read-only session writes nothing)
 *   and back to clean at a successful close; an aborted session leaves
 *   it not clean, so the next writer is refused.
 * - close_many writes the buffers of files that meet on disk in one
 *   pwritev; when that write fails (E3_FAULT=eio:1, the session's first
 *   write), the files of that write fail together and are left empty,
 *   files of another image closed in the same call keep their data, and
 *   e2fsck finds both images clean.
 * The on-disk state is read with a fresh ext2fs_open each time, never
 * from the writer's memory.
 */
#include <unistd.h>
#include <sys/stat.h>
#include "unit.h"
#include "e3img.h"

static char img_path[64];

static int sh(const char *cmd)
{
	return system(cmd);
}

static int make_image(const char *type, const char *state)
{
	char cmd[512];
	int n;

	n = snprintf(cmd, sizeof(cmd), "rm -f %s && mke2fs -q -F -t %s -b 1024 "
		     "-N 256 %s 8M >/dev/null 2>&1", img_path, type, img_path);
	if (state)
		snprintf(cmd + n, sizeof(cmd) - (size_t)n, " && debugfs -w -R "
			 "'ssv state %s' %s >/dev/null 2>&1", state, img_path);
	return sh(cmd);
}

/* s_state as on disk now; -1 when the image cannot be read. */
static int disk_state(void)
{
	ext2_filsys fs;
	int st;

	if (ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &fs))
		return -1;
	st = fs->super->s_state;
	ext2fs_close_free(&fs);
	return st;
}

static int fsck_clean(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", img_path);
	return sh(cmd) == 0;
}

static int file_md5(char *out, size_t n)
{
	char cmd[256];
	FILE *p;
	int ok;

	snprintf(cmd, sizeof(cmd), "md5sum < %s", img_path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	ok = fgets(out, (int)n, p) != NULL;
	pclose(p);
	return ok;
}

static errcode_t open_rw(unsigned extra, e3_image_t **img)
{
	struct e3_open_opts o = { .flags = E3_OPEN_WRITE | extra };

	return e3_image_open(img_path, &o, img);
}

static struct e3_attr dir_attr(void)
{
	struct e3_attr a = { .mode = LINUX_S_IFDIR | 0755 };

	a.atime.tv_sec = a.mtime.tv_sec = a.ctime.tv_sec = 1700000000;
	return a;
}

static void test_refused_untouched(void)
{
	static const char *const states[] = { "3", "0", "2" };
	char before[64], after[64];
	e3_image_t *img = NULL;

	for (size_t i = 0; i < sizeof(states) / sizeof(*states); i++) {
		CHECK(make_image("ext3", states[i]) == 0);
		CHECK(file_md5(before, sizeof(before)));
		CHECK(open_rw(0, &img) == E3_FS_NOT_CLEAN);
		CHECK(file_md5(after, sizeof(after)));
		CHECK(strcmp(before, after) == 0);
		/* readers are not refused */
		{
			struct e3_open_opts o = { .flags = 0 };

			CHECK_OK(e3_image_open(img_path, &o, &img));
			e3_image_close(img);
		}
	}
	unlink(img_path);
}

static void test_force_keeps_state(void)
{
	struct e3_attr da = dir_attr();
	e3_image_t *img = NULL;
	ext2_ino_t d;

	CHECK(make_image("ext2", "0") == 0);
	CHECK_OK(open_rw(E3_OPEN_FORCE, &img));
	if (!img)
		return;
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "d", &da, &d));
	CHECK_OK(e3_image_close(img));
	CHECK(disk_state() == 0);	/* not made clean by a forced writer */
	CHECK(fsck_clean());
	unlink(img_path);
}

static void test_ext2_unclean_while_changing(void)
{
	struct e3_attr da = dir_attr();
	e3_image_t *img = NULL;
	ext2_ino_t d;

	CHECK(make_image("ext2", NULL) == 0);
	CHECK(disk_state() == EXT2_VALID_FS);
	CHECK_OK(open_rw(0, &img));
	if (!img)
		return;
	CHECK(disk_state() == EXT2_VALID_FS);	/* opening changes nothing */
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "d", &da, &d));
	CHECK(disk_state() == 0);
	CHECK_OK(e3_mkdir(img, d, "e", &da, &d));
	CHECK_OK(e3_image_close(img));
	CHECK(disk_state() == EXT2_VALID_FS);
	CHECK(fsck_clean());

	/* a session that ends without a proper close stays not clean */
	CHECK_OK(open_rw(0, &img));
	if (!img)
		return;
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "f", &da, &d));
	e3_image_abort(img);
	CHECK(disk_state() == 0);
	CHECK(open_rw(0, &img) == E3_FS_NOT_CLEAN);
	unlink(img_path);
}

/* ---- a failed joined write in close_many -------------------------------- */

#define NJOINED 3
#define NOTHER 2
#define NF (NJOINED + NOTHER)

static void fill(char *buf, size_t n, int i)
{
	for (size_t k = 0; k < n; k++)
		buf[k] = (char)('a' + (k + (size_t)i * 5) % 26);
}

static size_t len_of(int i)
{
	return 1000 + (size_t)i * 300;
}

/* Size and contents of /name in path, read back through libext2fs. */
static uint64_t read_back(const char *path, const char *name, char *got,
			  size_t cap, unsigned *n)
{
	ext2_filsys fs;
	ext2_ino_t ino;
	ext2_file_t file;
	uint64_t size = UINT64_MAX;

	*n = 0;
	if (ext2fs_open(path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &fs))
		return size;
	if (!ext2fs_lookup(fs, EXT2_ROOT_INO, name, (int)strlen(name), NULL,
			   &ino) && !ext2fs_file_open(fs, ino, 0, &file)) {
		size = ext2fs_file_get_size(file);
		if (ext2fs_file_read(file, got, (unsigned)cap, n))
			*n = 0;
		ext2fs_file_close(file);
	}
	ext2fs_close_free(&fs);
	return size;
}

/* Image A's first write fails (E3_FAULT=eio:1). Its three hinted files are
 * booked back to back, so close_many writes them in one pwritev and all
 * three fail together; image B's files, closed in the same call, are
 * written and kept. */
static void test_close_many_write_error(void)
{
	struct e3_attr fa = { .mode = LINUX_S_IFREG | 0644 };
	char other[80], path[256], want[3000], got[3000], name[16];
	e3_image_t *a = NULL, *b = NULL;
	e3_file_t *files[NF];
	errcode_t errs[NF];

	snprintf(other, sizeof(other), "%s-b", img_path);
	CHECK(make_image("ext3", NULL) == 0);
	snprintf(path, sizeof(path), "cp %s %s", img_path, other);
	CHECK(sh(path) == 0);
	setenv("E3_FAULT", "eio:1", 1);
	CHECK_OK(open_rw(0, &a));
	unsetenv("E3_FAULT");
	{
		struct e3_open_opts o = { .flags = E3_OPEN_WRITE };

		CHECK_OK(e3_image_open(other, &o, &b));
	}
	if (!a || !b)
		return;
	for (int i = 0; i < NF; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		fill(want, len_of(i), i);
		files[i] = NULL;
		CHECK_OK(e3_create(i < NJOINED ? a : b, EXT2_ROOT_INO, name, &fa,
				   i < NJOINED ? len_of(i) : E3_SIZE_UNKNOWN,
				   &files[i]));
		if (files[i])
			CHECK_OK(e3_file_write(files[i], want, len_of(i)));
	}
	CHECK(e3_file_close_many(files, NF, errs) != 0);
	for (int i = 0; i < NF; i++)
		CHECK(i < NJOINED ? errs[i] != 0 : errs[i] == 0);
	CHECK_OK(e3_image_close(b));
	e3_image_close(a);

	for (int i = 0; i < NF; i++) {
		const char *p = i < NJOINED ? img_path : other;
		unsigned n;
		uint64_t size;

		snprintf(name, sizeof(name), "f%d", i);
		size = read_back(p, name, got, sizeof(got), &n);
		fill(want, len_of(i), i);
		if (i < NJOINED) {
			CHECK(size == 0);	/* an empty inode, as created */
		} else {
			CHECK(size == len_of(i));
			CHECK(n == len_of(i) && memcmp(got, want, n) == 0);
		}
	}
	CHECK(fsck_clean());
	snprintf(path, sizeof(path), "e2fsck -fn %s >/dev/null 2>&1", other);
	CHECK(sh(path) == 0);
	unlink(img_path);
	unlink(other);
}

int main(void)
{
	snprintf(img_path, sizeof(img_path), "/tmp/statetest-%d.img",
		 (int)getpid());
	unsetenv("E3_FAULT");
	RUN(test_refused_untouched);
	RUN(test_force_keeps_state);
	RUN(test_ext2_unclean_while_changing);
	RUN(test_close_many_write_error);
	return unit_done();
}
