/*
 * test_copyin.c: copy-in pieces that need no image — path cleaning (the
 * safety rule for archive paths), device-table parsing, the indirect
 * block count behind auto-size, the hard-link map, and listing a source
 * entry's xattrs relative to its directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/xattr.h>
#include "unit.h"
#include "copyin/copyin.h"

static int clean_is(const char *in, const char *want)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", in);
	return cp_path_clean(buf) == 0 && strcmp(buf, want) == 0;
}

static int clean_refused(const char *in)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", in);
	return cp_path_clean(buf) == E3_PATH_ESCAPES;
}

static void test_path_clean(void)
{
	CHECK(clean_is("a/b/c", "a/b/c"));
	CHECK(clean_is("./a//b/./c/", "a/b/c"));
	CHECK(clean_is("/etc/passwd", "etc/passwd"));
	CHECK(clean_is(".", ""));
	CHECK(clean_is("...", "..."));
	CHECK(clean_is("a/..b", "a/..b"));
	CHECK(clean_refused(".."));
	CHECK(clean_refused("../x"));
	CHECK(clean_refused("a/../../x"));
	CHECK(clean_refused("a/.."));
}

static void test_devtab_lines(void)
{
	struct cp_devtab_entry e;
	char l1[] = "/dev/hda\tb 640 0 6 3 1 1 1 16\n";
	char l2[] = "/dev d 755 0 0 - - - - -   # comment";
	char l3[] = "   # only a comment";
	char l4[] = "/dev/x q 640 0 0 1 1 0 0 -";
	char l5[] = "/dev/x c 640 0 0 1";
	char l6[] = "/dev/x c 9999 0 0 1 1 0 0 -";
	int skip;

	CHECK_OK(cp_devtab_parse_line(l1, &e, &skip));
	CHECK(!skip && e.type == 'b' && e.mode == 0640 && e.gid == 6);
	CHECK(e.major == 3 && e.minor == 1 && e.start == 1 && e.inc == 1);
	CHECK(e.has_count && e.count == 16 && strcmp(e.path, "/dev/hda") == 0);
	CHECK_OK(cp_devtab_parse_line(l2, &e, &skip));
	CHECK(!skip && e.type == 'd' && e.mode == 0755 && !e.has_count);
	CHECK_OK(cp_devtab_parse_line(l3, &e, &skip));
	CHECK(skip);
	CHECK(cp_devtab_parse_line(l4, &e, &skip) == E3_DEVTAB_SYNTAX);
	CHECK(cp_devtab_parse_line(l5, &e, &skip) == E3_DEVTAB_SYNTAX);
	CHECK(cp_devtab_parse_line(l6, &e, &skip) == E3_DEVTAB_SYNTAX);
}

static uint64_t dense(unsigned bs, uint64_t n)
{
	struct cp_ind_state s = { 0 };

	return cp_ind_blocks(bs, 0, n, &s);
}

static void test_indirect_counts(void)
{
	/* 4 KiB blocks: P = 1024 */
	CHECK(dense(4096, 12) == 0);
	CHECK(dense(4096, 13) == 1);
	CHECK(dense(4096, 12 + 1024) == 1);
	CHECK(dense(4096, 12 + 1024 + 1) == 3);		/* + DIND + IND */
	CHECK(dense(4096, 12 + 1024 + 2048) == 4);
	/* 1 KiB blocks: P = 256; a file needing the TIND */
	uint64_t n = 12 + 256 + 256 * 256 + 1;
	CHECK(dense(1024, n) == 1 + (1 + 256) + 3);
	/* runs counted in pieces share their indirect blocks */
	struct cp_ind_state s = { 0 };
	uint64_t a = cp_ind_blocks(4096, 0, 20, &s);
	uint64_t b = cp_ind_blocks(4096, 30, 10, &s);
	CHECK(a == 1 && b == 0);
	/* a hole over a whole IND range does not need that IND */
	struct cp_ind_state t = { 0 };
	CHECK(cp_ind_blocks(4096, 0, 1, &t) == 0);
	CHECK(cp_ind_blocks(4096, 12 + 1024 + 5000, 1, &t) == 2);
}

static void test_linkmap(void)
{
	struct cp_linkmap *m;

	CHECK_OK(cp_linkmap_create(&m));
	for (uint64_t i = 1; i <= 5000; i++)
		CHECK_OK(cp_linkmap_put(m, i % 3, i * 7, (ext2_ino_t)i + 10));
	for (uint64_t i = 1; i <= 5000; i++)
		CHECK(cp_linkmap_get(m, i % 3, i * 7) == i + 10);
	CHECK(cp_linkmap_get(m, 1, 3) == 0);
	cp_linkmap_free(m);
}

/* Both ways of listing (the dirfd-relative call and the path fallback)
 * give the same names; a missing entry is an error either way. */
static void test_listxattr_at(void)
{
	char dir[] = "/tmp/e3-unit-xattr-XXXXXX", path[64], a[256], b[256];
	ssize_t na, nb;
	int dfd, fb0 = 0, fb1 = 1, fd;

	if (!mkdtemp(dir))
		FAIL("no temporary directory");
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	if (setxattr(path, "user.one", "1", 1, 0) < 0 ||
	    setxattr(path, "user.two", "22", 2, 0) < 0) {
		unlink(path);
		rmdir(dir);
		close(dfd);
		SKIP("no user xattrs on /tmp");
	}
	na = cp_llistxattr_at(dfd, "f", path, a, sizeof(a), &fb0);
	nb = cp_llistxattr_at(dfd, "f", path, b, sizeof(b), &fb1);
	CHECK(na == (ssize_t)sizeof("user.one") + (ssize_t)sizeof("user.two"));
	CHECK(na == nb && memcmp(a, b, (size_t)na) == 0);
	CHECK(fb1 == 1);
	if (fb0)
		printf("# no listxattrat here: the fallback was compared "
		       "with itself\n");
	errno = 0;
	CHECK(cp_llistxattr_at(dfd, "nope", "/nonexistent/nope", a, sizeof(a),
			       &fb0) < 0 && errno == ENOENT);
	unlink(path);
	rmdir(dir);
	close(dfd);
}

int main(void)
{
	RUN(test_path_clean);
	RUN(test_devtab_lines);
	RUN(test_indirect_counts);
	RUN(test_linkmap);
	RUN(test_listxattr_at);
	return unit_done();
}
