/*
 * test_undo.c: operations that fail half way must leave no trace. Each
 * name-making operation (mkdir, link, slow symlink, mknod, create) and
 * e3_remove runs on a copy of a small journaled image while the fault
 * layer (E3_FAULT=capture-enomem:N*K) makes the N-th to N+K-1-th metadata
 * writes of the session fail, for every N until the session goes through
 * untouched: with K = 1 a step fails and its undo runs; with K = 2 and 3
 * the undo meets the same shortage. After close (and a replay if a log
 * was left), e2fsck -fn must pass, and the name must be there exactly
 * when the operation and the close both succeeded (for a removal: gone).
 * Oracle: e2fsck. Images: mke2fs, 1 KiB blocks, under /tmp.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "unit.h"
#include "e3img.h"
#include "e3_err.h"

#define MAX_N 400

static char tmpl[64], work[64];

enum op { OP_MKDIR, OP_MKDIR_GROW, OP_LINK, OP_SYMLINK, OP_MKNOD, OP_CREATE,
	  OP_CREATE_GROW, OP_REMOVE_LAST, OP_REMOVE_LINK, OP_CLOSE_MANY,
	  OP_COUNT };

static const char *const op_names[OP_COUNT] = {
	"mkdir", "mkdir (parent grows)", "link", "symlink (slow)", "mknod",
	"create", "create (parent grows)", "remove (last link)",
	"remove (one of two links)", "two files closed together",
};

static struct e3_attr attr_of(uint32_t mode)
{
	struct e3_attr a;

	memset(&a, 0, sizeof(a));
	a.mode = mode;
	a.atime.tv_sec = a.mtime.tv_sec = a.ctime.tv_sec = 1700000000;
	return a;
}

static int sh(const char *fmt, const char *arg)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), fmt, arg, arg);
	return system(cmd);
}

/* 0 or e3_create's error; *cerr: the write's or the file close's (a file
 * whose close failed stays, empty: e3img.h) */
static errcode_t create_file(e3_image_t *img, ext2_ino_t dir, const char *name,
			     size_t len, errcode_t *cerr)
{
	struct e3_attr a = attr_of(S_IFREG | 0644);
	char *buf = malloc(len);
	e3_file_t *f;
	errcode_t err;

	*cerr = 0;
	if (!buf)
		return ENOMEM;
	memset(buf, 'x', len);
	err = e3_create(img, dir, name, &a, len, &f);
	if (!err) {
		*cerr = e3_file_write(f, buf, len);
		if (*cerr)
			e3_file_close(f);
		else
			*cerr = e3_file_close(f);
	}
	free(buf);
	return err;
}

/* create_file with one result: the create's, else the write's or close's */
static errcode_t write_file(e3_image_t *img, ext2_ino_t dir, const char *name,
			    size_t len)
{
	errcode_t cerr, err = create_file(img, dir, name, len, &cerr);

	return err ? err : cerr;
}

/* "new" and "new2" in dir, closed by one e3_file_close_many: when one
 * close fails at its inode write, the other (same inode table block) must
 * not carry the failed one's block map into the image. */
static errcode_t close_two(e3_image_t *img, ext2_ino_t dir, errcode_t *cerr)
{
	struct e3_attr a = attr_of(S_IFREG | 0644);
	e3_file_t *f[2] = { NULL, NULL };
	errcode_t err, errs[2];
	char buf[3000];

	memset(buf, 'x', sizeof(buf));
	err = e3_create(img, dir, "new", &a, sizeof(buf), &f[0]);
	if (err)
		return err;	/* "new" is there exactly when this worked */
	*cerr = e3_create(img, dir, "new2", &a, sizeof(buf), &f[1]);
	for (int i = 0; i < 2 && !*cerr; i++)
		*cerr = e3_file_write(f[i], buf, sizeof(buf));
	err = e3_file_close_many(f, 2, errs);
	if (!*cerr)
		*cerr = err;
	return 0;
}

/* /d: a file g (one link, with an indirect block), f and its second link
 * f2; /full: a directory whose one block is full, so that one more name
 * grows it. */
static int make_template(void)
{
	struct e3_open_opts o = { .flags = E3_OPEN_WRITE };
	struct e3_attr da = attr_of(S_IFDIR | 0755);
	ext2_ino_t d, full, f;
	e3_image_t *img;
	errcode_t err;
	char name[64];

	if (sh("mke2fs -q -F -t ext3 -b 1024 -N 512 %s 8M >/dev/null 2>&1", tmpl))
		return -1;
	if (e3_image_open(tmpl, &o, &img))
		return -1;
	err = e3_mkdir(img, EXT2_ROOT_INO, "d", &da, &d);
	if (!err)
		err = e3_mkdir(img, EXT2_ROOT_INO, "full", &da, &full);
	if (!err)
		err = write_file(img, d, "g", 20 * 1024);
	if (!err)
		err = write_file(img, d, "f", 3000);
	if (!err)
		err = e3_lookup(img, d, "f", &f);
	if (!err)
		err = e3_link(img, d, "f2", f);
	/* "." and ".." take 24 bytes, each entry-NNNN 20: 50 fill the block */
	for (int i = 0; i < 50 && !err; i++) {
		struct e3_attr fa = attr_of(S_IFIFO | 0644);
		ext2_ino_t ino;

		snprintf(name, sizeof(name), "entry-%04d", i);
		err = e3_mknod(img, full, name, &fa, 0, &ino);
	}
	if (err) {
		e3_image_abort(img);
		return -1;
	}
	return e3_image_close(img) ? -1 : 0;
}

static int fsck_clean(const char *path)
{
	return sh("e2fsck -fn %s >/dev/null 2>&1", path) == 0;
}

static int dir_blocks(const char *path, const char *dir)
{
	char cmd[512];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "debugfs -R 'stat %s' %s 2>/dev/null | "
		 "sed -n 's/.*Size: \\([0-9]*\\).*/\\1/p' | head -1", dir, path);
	p = popen(cmd, "r");
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	return n < 0 ? -1 : n / 1024;
}

static errcode_t run_op(e3_image_t *img, enum op op, errcode_t *ferr)
{
	struct e3_attr da = attr_of(S_IFDIR | 0755);
	struct e3_attr fifo = attr_of(S_IFIFO | 0644);
	struct e3_attr ln = attr_of(S_IFLNK | 0777);
	char target[300];
	ext2_ino_t d, full, f, ino;
	errcode_t err;

	err = e3_namei(img, "/d", &d);
	if (!err)
		err = e3_namei(img, "/full", &full);
	if (!err)
		err = e3_namei(img, "/d/f", &f);
	if (err)
		return err;
	memset(target, 't', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	switch (op) {
	case OP_MKDIR:
		return e3_mkdir(img, d, "new", &da, &ino);
	case OP_MKDIR_GROW:
		return e3_mkdir(img, full, "new", &da, &ino);
	case OP_LINK:
		return e3_link(img, d, "new", f);
	case OP_SYMLINK:
		return e3_symlink(img, d, "new", target, &ln, &ino);
	case OP_MKNOD:
		return e3_mknod(img, d, "new", &fifo, 0, &ino);
	case OP_CREATE:
		return create_file(img, d, "new", 2000, ferr);
	case OP_CREATE_GROW:
		return create_file(img, full, "new", 2000, ferr);
	case OP_REMOVE_LAST:
		return e3_remove(img, d, "g");
	case OP_REMOVE_LINK:
		return e3_remove(img, d, "f2");
	case OP_CLOSE_MANY:
		return close_two(img, d, ferr);
	default:
		return EINVAL;
	}
}

static const char *op_path(enum op op)
{
	switch (op) {
	case OP_MKDIR_GROW: case OP_CREATE_GROW:
		return "/full/new";
	case OP_REMOVE_LAST:
		return "/d/g";
	case OP_REMOVE_LINK:
		return "/d/f2";
	default:
		return "/d/new";
	}
}

/* whether path names something, after replaying a log left behind */
static int exists(const char *img_path, const char *path, int *replayed)
{
	struct e3_open_opts o = { .flags = E3_OPEN_REPLAY };
	e3_image_t *img;
	ext2_ino_t ino;
	int r;

	if (e3_image_open(img_path, &o, &img))
		return -1;
	*replayed = e3_image_open_report(img)->replayed;
	r = e3_namei(img, path, &ino) == 0;
	e3_image_close(img);
	return r;
}

struct tally {
	unsigned runs, op_failed, close_failed, replayed, bad;
};

/* Mkdirs before the operation, enough to fill a quarter of the log
 * (about 1.2 blocks each: the new directory's block, its share of an
 * inode table block and of the root directory) and force a commit: a
 * poisoned session then leaves that commit in the log, and the image
 * after replay must be as of it. 0: none. */
static unsigned pre_ops;

static errcode_t pre_phase(e3_image_t *img)
{
	struct e3_attr da = attr_of(S_IFDIR | 0755);
	errcode_t err = 0;
	char name[16];
	ext2_ino_t ino;

	for (unsigned i = 0; i < pre_ops && !err; i++) {
		snprintf(name, sizeof(name), "p%03u", i);
		err = e3_mkdir(img, EXT2_ROOT_INO, name, &da, &ino);
	}
	return err;
}

/* One session with the K writes from the n-th on failing: 1 when it went
 * through without meeting the fault, 0 when it met it, 2 when the fault
 * hit the mkdirs before the operation, -1 on a setup failure. */
static int one(enum op op, unsigned n, unsigned k, struct tally *t)
{
	/* no timed commits: where commits fall must not depend on speed */
	struct e3_open_opts o = { .flags = E3_OPEN_WRITE,
				  .commit_interval = 100000 };
	int removal = op == OP_REMOVE_LAST || op == OP_REMOVE_LINK;
	errcode_t err, cerr, ferr = 0;
	e3_image_t *img;
	char spec[64];
	int there, replayed = 0, again = 0, clean;

	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", tmpl, work);
		if (system(cmd) != 0)
			return -1;
	}
	snprintf(spec, sizeof(spec), "capture-enomem:%u*%u", n, k);
	setenv("E3_FAULT", spec, 1);
	err = e3_image_open(work, &o, &img);
	if (err) {
		unsetenv("E3_FAULT");
		return -1;
	}
	if (pre_phase(img)) {
		e3_image_close(img);
		unsetenv("E3_FAULT");
		return 2;
	}
	err = run_op(img, op, &ferr);
	cerr = e3_image_close(img);
	unsetenv("E3_FAULT");
	there = exists(work, op_path(op), &replayed);
	clean = fsck_clean(work);
	if (pre_ops && exists(work, "/p000", &again) != 1) {
		fprintf(stderr, "  E3_FAULT=%s: /p000, committed before the "
			"operation, is gone\n", spec);
		clean = 0;
	}
	t->runs++;
	t->op_failed += err != 0 || ferr != 0;
	t->close_failed += cerr != 0;
	t->replayed += replayed != 0;
	if (!clean || there < 0 ||
	    (err && there != removal) ||
	    (!err && !cerr && there == removal)) {
		t->bad++;
		fprintf(stderr, "  %s, E3_FAULT=%s: op %ld, close %ld, %s %s, "
			"e2fsck %s\n", op_names[op], spec, (long)err, (long)cerr,
			op_path(op), there ? "exists" : "absent",
			clean ? "clean" : "NOT clean");
	}
	return !err && !cerr && !ferr;
}

static void sweep(enum op op)
{
	for (unsigned k = 1; k <= 3; k++) {
		struct tally t = { 0 };
		unsigned n;
		int r = 0;

		unsigned ok_in_a_row = 0;

		/* until three sessions in a row went through: past the last
		 * write of the session (a single failed zeroout is absorbed
		 * by libext2fs, which writes zeros instead) */
		for (n = 1; n <= MAX_N && ok_in_a_row < 3; n++) {
			r = one(op, n, k, &t);
			CHECK(r >= 0);
			ok_in_a_row = r == 1 ? ok_in_a_row + 1 : 0;
		}
		CHECK(ok_in_a_row == 3);	/* the sweep got past the session */
		CHECK(t.op_failed > 0);	/* and the fault did hit the op */
		CHECK(t.bad == 0);
		printf("# %s, K=%u: %u sessions, the operation failed in %u, "
		       "close in %u, %u replays, %u bad\n", op_names[op], k,
		       t.runs, t.op_failed, t.close_failed, t.replayed, t.bad);
	}
}

/* The first n at which the session's fault (K = 2) misses the mkdirs
 * before the operation. */
static unsigned first_after_pre(void)
{
	struct tally t = { 0 };
	unsigned lo = 1, hi = 1;

	while (one(OP_MKDIR, hi, 2, &t) == 2)
		hi *= 2;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (one(OP_MKDIR, mid, 2, &t) == 2)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A mkdir that fails and cannot be undone after the session committed
 * once: close fails, the log holds that commit, replay brings the image
 * back to it — the mkdirs before it, not the failed one. */
static void test_after_commit(void)
{
	unsigned n0;

	pre_ops = 260;
	n0 = first_after_pre();
	printf("# the 260 mkdirs before the operation make %u metadata "
	       "writes\n", n0 - 1);
	for (unsigned k = 1; k <= 2; k++) {
		struct tally t = { 0 };
		unsigned ok_in_a_row = 0;

		for (unsigned n = n0; n < n0 + MAX_N && ok_in_a_row < 3; n++) {
			int r = one(OP_MKDIR, n, k, &t);

			CHECK(r == 0 || r == 1);
			ok_in_a_row = r == 1 ? ok_in_a_row + 1 : 0;
		}
		CHECK(ok_in_a_row == 3);
		CHECK(t.op_failed > 0);
		CHECK(t.bad == 0);
		if (k == 2)	/* an undo failed: the log was left to replay */
			CHECK(t.replayed > 0);
		printf("# mkdir after a commit, K=%u: %u sessions, the operation "
		       "failed in %u, close in %u, %u replays, %u bad\n", k,
		       t.runs, t.op_failed, t.close_failed, t.replayed, t.bad);
	}
	pre_ops = 0;
}

static void test_mkdir(void) { sweep(OP_MKDIR); }
static void test_mkdir_grow(void) { sweep(OP_MKDIR_GROW); }
static void test_link(void) { sweep(OP_LINK); }
static void test_symlink(void) { sweep(OP_SYMLINK); }
static void test_mknod(void) { sweep(OP_MKNOD); }
static void test_create(void) { sweep(OP_CREATE); }
static void test_create_grow(void) { sweep(OP_CREATE_GROW); }
static void test_remove_last(void) { sweep(OP_REMOVE_LAST); }
static void test_remove_link(void) { sweep(OP_REMOVE_LINK); }
static void test_close_many(void) { sweep(OP_CLOSE_MANY); }

int main(void)
{
	snprintf(tmpl, sizeof(tmpl), "/tmp/undo-unit-%d.tmpl", (int)getpid());
	snprintf(work, sizeof(work), "/tmp/undo-unit-%d.img", (int)getpid());
	unsetenv("E3_FAULT");
	unsetenv("E3_JOURNAL");
	/* a fixed clock: the superblock's changed bytes, and so the number
	 * of metadata writes, are the same in every run */
	setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
	if (make_template() != 0 || !fsck_clean(tmpl)) {
		printf("not ok 1 - template image\n1..1\n");
		unlink(tmpl);
		return 1;
	}
	printf("# /full holds %d block(s) before the sweep\n",
	       dir_blocks(tmpl, "/full"));
	if (getenv("UNDO_KEEP_TEMPLATE")) {
		printf("# template kept: %s\n", tmpl);
		return 0;
	}
	RUN(test_mkdir);
	RUN(test_mkdir_grow);
	RUN(test_link);
	RUN(test_symlink);
	RUN(test_mknod);
	RUN(test_create);
	RUN(test_create_grow);
	RUN(test_remove_last);
	RUN(test_close_many);
	RUN(test_remove_link);
	RUN(test_after_commit);
	unlink(tmpl);
	unlink(work);
	return unit_done();
}
