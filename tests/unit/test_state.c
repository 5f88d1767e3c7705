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
 * - A crash right after any commit that comes in the middle of one
 *   close_many (small transactions: its ends of operation commit) replays
 *   to a clean image: no inode is committed without its blocks' bitmap
 *   bits. And close_many on inodes of 2048 bytes (mke2fs -I 2048) keeps
 *   every byte of them but the map, size and block count it sets.
 * The on-disk state is read with a fresh ext2fs_open each time, never
 * from the writer's memory.
 */
#include <signal.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* ---- a crash in the middle of close_many -------------------------------- */

/* Files of 14 KiB: at 1 KiB blocks each needs an indirect block, written
 * at its close. */
#define NCRASH 40
#define CRASH_LEN (14 * 1024)

/* The child of test_close_many_crash: creates and writes NCRASH files,
 * closes them in one e3_file_close_many, closes the image. 0 when all of
 * that worked (and the fault never came). */
static int crash_child(void)
{
	struct e3_open_opts o = { .flags = E3_OPEN_WRITE };
	struct e3_attr fa = { .mode = LINUX_S_IFREG | 0644 };
	static char buf[CRASH_LEN];
	e3_file_t *files[NCRASH];
	errcode_t errs[NCRASH];
	e3_image_t *img;
	char name[16];

	if (e3_image_open(img_path, &o, &img))
		return 2;
	for (int i = 0; i < NCRASH; i++) {
		fill(buf, sizeof(buf), i);
		snprintf(name, sizeof(name), "c%02d", i);
		if (e3_create(img, EXT2_ROOT_INO, name, &fa, sizeof(buf),
			      &files[i]) ||
		    e3_file_write(files[i], buf, sizeof(buf)))
			return 3;
	}
	if (e3_file_close_many(files, NCRASH, errs))
		return 4;
	return e3_image_close(img) ? 5 : 0;
}

/* Transactions of 8 blocks (E3_JOURNAL_MEM=8), so the ends of operation of
 * one close_many commit between its files; killed right after commit n
 * for every n until a run gets to the end. close_many once ended every
 * file's operation only after writing all inodes, one file's block
 * counts after another's end: the commit that end made held inodes whose
 * blocks the bitmap called free ("Block bitmap differences" after the
 * replay). */
static void test_close_many_crash(void)
{
	char base[80], cmd[512];
	int n, killed = 0;

	snprintf(base, sizeof(base), "%s-base", img_path);
	CHECK(make_image("ext3", NULL) == 0);
	snprintf(cmd, sizeof(cmd), "cp %s %s", img_path, base);
	CHECK(sh(cmd) == 0);
	for (n = 1; n < 200; n++) {
		char fault[40];
		int st = 0;
		pid_t pid;

		snprintf(cmd, sizeof(cmd), "cp %s %s", base, img_path);
		if (sh(cmd) != 0)
			FAIL("cp");
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			FAIL("fork");
		if (pid == 0) {
			snprintf(fault, sizeof(fault), "stop-after-commit:%d", n);
			setenv("E3_FAULT", fault, 1);
			setenv("E3_JOURNAL_MEM", "8", 1);
			_exit(crash_child());
		}
		if (waitpid(pid, &st, 0) != pid)
			FAIL("waitpid");
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			break;		/* no commit n: the run finished */
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		if (!WIFSIGNALED(st))
			break;
		killed++;
		snprintf(cmd, sizeof(cmd), "e2fsck -E journal_only -y %s "
			 ">/dev/null 2>&1; e2fsck -fn %s >/dev/null 2>&1",
			 img_path, img_path);
		if (sh(cmd) != 0) {
			fprintf(stderr, "  killed after commit %d: e2fsck -fn "
				"finds the replayed image unclean\n", n);
			CHECK(!"clean after the replay");
		}
	}
	/* the creates commit too; the closes' commits came after them */
	CHECK(killed >= 3);
	CHECK(fsck_clean());		/* the run that finished */
	unlink(img_path);
	unlink(base);
}

/* ---- close_many on 2048-byte inodes ------------------------------------- */

/* mke2fs -I 2048 (4 KiB blocks) makes inodes larger than any buffer
 * close_many keeps on its stack: it changed them through a copy of 1024
 * bytes, and copied the whole inode in (and back). */
static void test_close_many_big_inodes(void)
{
	struct e3_open_opts o = { .flags = E3_OPEN_WRITE };
	struct e3_attr fa = { .mode = LINUX_S_IFREG | 0644 };
	char cmd[512], want[3000], got[3000], name[16];
	e3_file_t *files[NF];
	errcode_t errs[NF];
	e3_image_t *img = NULL;

	snprintf(cmd, sizeof(cmd), "rm -f %s && mke2fs -q -F -t ext3 -b 4096 "
		 "-I 2048 -N 256 %s 16M >/dev/null 2>&1", img_path, img_path);
	if (sh(cmd) != 0)
		FAIL("mke2fs -I 2048");
	CHECK_OK(e3_image_open(img_path, &o, &img));
	if (!img)
		return;
	for (int i = 0; i < NF; i++) {
		snprintf(name, sizeof(name), "b%d", i);
		fill(want, len_of(i), i);
		files[i] = NULL;
		CHECK_OK(e3_create(img, EXT2_ROOT_INO, name, &fa, len_of(i),
				   &files[i]));
		if (files[i])
			CHECK_OK(e3_file_write(files[i], want, len_of(i)));
	}
	CHECK_OK(e3_file_close_many(files, NF, errs));
	for (int i = 0; i < NF; i++)
		CHECK(errs[i] == 0);
	CHECK_OK(e3_image_close(img));
	for (int i = 0; i < NF; i++) {
		unsigned n;

		snprintf(name, sizeof(name), "b%d", i);
		fill(want, len_of(i), i);
		CHECK(read_back(img_path, name, got, sizeof(got), &n) ==
		      len_of(i));
		CHECK(n == len_of(i) && memcmp(got, want, n) == 0);
	}
	CHECK(fsck_clean());
	unlink(img_path);
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
	RUN(test_close_many_crash);
	RUN(test_close_many_big_inodes);
	return unit_done();
}
