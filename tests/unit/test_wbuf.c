/*
 * test_wbuf.c: writing through a file's own buffer (e3_file_wbuf and
 * e3_file_pwrite_wbuf), which copy-in reads source data straight into.
 *
 * - The usual case: the buffer becomes the write-behind buffer as it is;
 *   the file reads back whole and the last block's tail is zeros. The
 *   tail's zeros are written from a zero block at the flush: a write
 *   that continues into that last block, or adds blocks right after it,
 *   still finds zeros there.
 * - A write whose blocks are not back to back (the indirect block sits
 *   between block 11 and block 12 of a 1 KiB-block image) still lands
 *   whole: the head goes out at once, the rest is copied — and when that
 *   rest is a last, partial block, its tail is zeros, not what the free
 *   block held before (the image's free blocks are filled with 0xff).
 * - Writing over blocks written before keeps the old bytes past the end
 *   of the new write in its last block, also when that block comes after
 *   an indirect block (the split's second piece).
 * - A write that runs out of space keeps what it wrote, and the size
 *   says exactly that much.
 * - e3_file_flush_many writes buffers out and leaves the files open (and
 *   a failed write fails them at close, empty).
 * - Unaligned offsets and writes that continue the buffer take the
 *   copying path and land too; handing back a buffer that was not asked
 *   for, or more bytes than asked for, is EINVAL.
 * Everything is read back with a fresh ext2fs_open; e2fsck -fn stays clean.
 */
#include <unistd.h>
#include "unit.h"
#include "e3img.h"

static char img_path[64];

/* A small ext3 image whose free blocks are not zeros (a 4 MiB file of
 * 0xff bytes written and removed), so that a block's tail that is not
 * filled in shows. */
static int make_image_bs(unsigned bs)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "rm -f %s && mke2fs -q -F -t ext3 -b %u "
		 "-N 256 %s 8M >/dev/null 2>&1 && "
		 "head -c 4194304 /dev/zero | tr '\\0' '\\377' > %s.ff && "
		 "debugfs -w -R 'write %s.ff junk' %s >/dev/null 2>&1 && "
		 "debugfs -w -R 'rm junk' %s >/dev/null 2>&1 && rm -f %s.ff",
		 img_path, bs, img_path, img_path, img_path, img_path, img_path,
		 img_path);
	return system(cmd);
}

static int make_image(void)
{
	return make_image_bs(1024);
}

static int fsck_clean(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", img_path);
	return system(cmd) == 0;
}

static void fill(char *buf, size_t n, int seed)
{
	for (size_t k = 0; k < n; k++)
		buf[k] = (char)('a' + (k * 7 + (size_t)seed) % 26);
}

static struct e3_attr file_attr(void)
{
	struct e3_attr a = { .mode = LINUX_S_IFREG | 0644 };

	a.atime.tv_sec = a.mtime.tv_sec = a.ctime.tv_sec = 1700000000;
	return a;
}

static e3_file_t *create(e3_image_t *img, const char *name, uint64_t hint)
{
	struct e3_attr a = file_attr();
	e3_file_t *f = NULL;

	CHECK_OK(e3_create(img, EXT2_ROOT_INO, name, &a, hint, &f));
	return f;
}

/* len bytes of fill(seed) written at off through the file's buffer. */
static errcode_t wbuf_write(e3_file_t *f, size_t len, uint64_t off, int seed)
{
	void *buf;
	errcode_t err = e3_file_wbuf(f, len, &buf);

	if (err)
		return err;
	fill(buf, len, seed);
	return e3_file_pwrite_wbuf(f, len, off);
}

/* /name read back: its size, up to cap bytes into got, and whether the
 * rest of its last block (past the size) is zeros. */
static uint64_t read_back(const char *name, char *got, size_t cap,
			  int *tail_zero)
{
	ext2_filsys fs;
	ext2_ino_t ino;
	ext2_file_t file;
	uint64_t size = UINT64_MAX;
	unsigned n;

	*tail_zero = 0;
	if (ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &fs))
		return size;
	if (!ext2fs_lookup(fs, EXT2_ROOT_INO, name, (int)strlen(name), NULL,
			   &ino) && !ext2fs_file_open(fs, ino, 0, &file)) {
		unsigned bs = fs->blocksize;
		blk64_t pblk = 0;
		char *blk = malloc(bs);

		size = ext2fs_file_get_size(file);
		if (ext2fs_file_read(file, got, (unsigned)cap, &n) || n != size)
			size = UINT64_MAX;
		ext2fs_file_close(file);
		if (blk && size && size % bs &&
		    !ext2fs_bmap2(fs, ino, NULL, NULL, 0, (size - 1) / bs,
				  NULL, &pblk) && pblk &&
		    !io_channel_read_blk64(fs->io, pblk, 1, blk)) {
			*tail_zero = 1;
			for (unsigned k = size % bs; k < bs; k++)
				if (blk[k])
					*tail_zero = 0;
		}
		free(blk);
	}
	ext2fs_close_free(&fs);
	return size;
}

/* Writes the same bytes into want that wbuf_write(len, off, seed) does. */
static void expect(char *want, size_t len, uint64_t off, int seed)
{
	fill(want + off, len, seed);
}

/* A new image of bs-byte blocks, open for writing; NULL (a failed
 * check) when it cannot be. */
static e3_image_t *new_image(unsigned bs)
{
	e3_image_t *img = NULL;

	CHECK(make_image_bs(bs) == 0);
	CHECK_OK(e3_image_open(img_path, &(struct e3_open_opts){
				       .flags = E3_OPEN_WRITE }, &img));
	return img;
}

/* /name reads back as want[0..size) (and, with tail, the rest of its
 * last block is zeros). */
static void check_file(const char *name, const char *want, uint64_t size,
		       int tail)
{
	static char got[8 << 20];
	int tz;

	CHECK(read_back(name, got, sizeof(got), &tz) == size);
	CHECK(size <= sizeof(got) && memcmp(got, want, size) == 0);
	CHECK(tz || !tail);
}

/* 5000 bytes of pattern seed written through the read buffer, whose
 * last block's other 120 bytes are garbage (0xff) */
static void adopt_garbage_tail(e3_file_t *f, int seed)
{
	void *buf = NULL;

	CHECK_OK(e3_file_wbuf(f, 5000, &buf));
	if (!buf)
		return;
	memset(buf, 0xff, 5120);
	fill(buf, 5000, seed);
	CHECK_OK(e3_file_pwrite_wbuf(f, 5000, 0));
}

static void test_adopted(void)
{
	static char want[8192];
	e3_image_t *img = NULL;
	e3_file_t *f;

	img = new_image(1024);
	if (!img)
		return;
	/* the buffer is dirtied past len first: the tail must still be 0 */
	f = create(img, "a", 5000);
	if (f) {
		adopt_garbage_tail(f, 1);
		CHECK_OK(e3_file_close(f));
	}
	CHECK_OK(e3_image_close(img));
	expect(want, 5000, 0, 1);
	check_file("a", want, 5000, 1);
	CHECK(fsck_clean());
}

/* The adopted buffer's last block is partial and its tail goes out as
 * zeros at the flush; a write that then continues into that block, or
 * one that adds blocks after it, must find those bytes zero (their
 * garbage, 0xff here, would land inside the file or past its end). */
static void test_adopted_then_continued(void)
{
	static char want[16384];
	e3_image_t *img = NULL;
	e3_file_t *f;

	img = new_image(1024);
	if (!img)
		return;
	memset(want, 0, sizeof(want));
	f = create(img, "b", 0);
	if (f) {
		char more[3000];

		adopt_garbage_tail(f, 2);
		/* 5100..5110 inside block 4, whose 5000..5120 was pending;
		 * then 5120.. in new blocks right after it */
		fill(more, 10, 3);
		CHECK_OK(e3_file_pwrite(f, more, 10, 5100));
		fill(more, sizeof(more), 4);
		CHECK_OK(e3_file_pwrite(f, more, sizeof(more), 5120));
		CHECK_OK(e3_file_close(f));
	}
	/* and blocks added right after the pending tail, nothing between */
	f = create(img, "c", 0);
	if (f) {
		char more[3000];

		adopt_garbage_tail(f, 2);
		fill(more, sizeof(more), 4);
		CHECK_OK(e3_file_pwrite(f, more, sizeof(more), 5120));
		CHECK_OK(e3_file_close(f));
	}
	CHECK_OK(e3_image_close(img));
	expect(want, 5000, 0, 2);
	expect(want, 3000, 5120, 4);
	check_file("c", want, 5120 + 3000, 1);
	expect(want, 10, 5100, 3);
	check_file("b", want, 5120 + 3000, 1);
	CHECK(fsck_clean());
}

static void test_split_at_indirect(void)
{
	static char want[40000];
	e3_image_t *img = NULL;
	e3_file_t *f;

	img = new_image(1024);
	if (!img)
		return;
	/* 1 KiB blocks: blocks 0-11, the indirect block, then 12-19 */
	f = create(img, "b", 20000);
	if (f) {
		CHECK_OK(wbuf_write(f, 20000, 0, 2));
		CHECK_OK(e3_file_close(f));
	}
	/* the block past the indirect one is the last and partial */
	f = create(img, "f", 12300);
	if (f) {
		CHECK_OK(wbuf_write(f, 12300, 0, 5));
		CHECK_OK(e3_file_close(f));
	}
	/* no hint, two writes across the boundary, the second unaligned */
	f = create(img, "c", E3_SIZE_UNKNOWN);
	if (f) {
		CHECK_OK(wbuf_write(f, 11000, 0, 3));
		CHECK_OK(wbuf_write(f, 9000, 11000, 4));
		CHECK_OK(e3_file_close(f));
	}
	CHECK_OK(e3_image_close(img));
	expect(want, 20000, 0, 2);
	check_file("b", want, 20000, 1);
	expect(want, 12300, 0, 5);
	check_file("f", want, 12300, 1);
	expect(want, 11000, 0, 3);
	expect(want, 9000, 11000, 4);
	check_file("c", want, 20000, 1);
	CHECK(fsck_clean());
}

static void test_overwrite_keeps_tail(void)
{
	static char want[8192];
	e3_image_t *img = NULL;
	e3_file_t *f;
	int tz;

	img = new_image(1024);
	if (!img)
		return;
	f = create(img, "d", E3_SIZE_UNKNOWN);
	if (f) {
		char buf[3000];

		fill(buf, sizeof(buf), 5);
		CHECK_OK(e3_file_pwrite(f, buf, sizeof(buf), 0));
		/* over blocks 0 and 1; block 1 keeps bytes 1500-2047 */
		CHECK_OK(wbuf_write(f, 1500, 0, 6));
		/* then a write that continues the buffer (blocks 2-3) */
		CHECK_OK(wbuf_write(f, 2000, 2048, 7));
		CHECK_OK(e3_file_close(f));
	}
	/* over a file's first 20000 bytes, through the buffer: 12300 of
	 * them, so the last block written (12, after the indirect block,
	 * the split's second piece) keeps its old bytes past 12300 */
	f = create(img, "g", E3_SIZE_UNKNOWN);
	if (f) {
		static char old[20000];

		fill(old, sizeof(old), 10);
		CHECK_OK(e3_file_pwrite(f, old, sizeof(old), 0));
		CHECK_OK(wbuf_write(f, 12300, 0, 11));
		CHECK_OK(e3_file_close(f));
	}
	CHECK_OK(e3_image_close(img));
	{
		static char g[20000], gw[20000];

		fill(gw, sizeof(gw), 10);
		fill(gw, 12300, 11);
		CHECK(read_back("g", g, sizeof(g), &tz) == 20000);
		CHECK(memcmp(g, gw, sizeof(g)) == 0);
	}
	expect(want, 3000, 0, 5);
	expect(want, 1500, 0, 6);
	expect(want, 2000, 2048, 7);
	check_file("d", want, 4048, 1);
	CHECK(fsck_clean());
}

/* 1 MiB writes until the image is full: the one that fails keeps what
 * it wrote before the failure, the size covers exactly that (e2fsck would
 * find blocks past the end otherwise), the bytes are right. */
static void test_full_midway(void)
{
	static char got[8 << 20], want[8 << 20];
	e3_image_t *img = NULL;
	e3_file_t *f;
	uint64_t off = 0, size;
	errcode_t err = 0;
	int tz, seed = 20;

	/* 4 KiB blocks: past block 12 the next indirect block is 4 MiB on,
	 * so the write that fails is one whose blocks run back to back */
	img = new_image(4096);
	if (!img)
		return;
	f = create(img, "h", E3_SIZE_UNKNOWN);
	while (f && !err && off < sizeof(want)) {
		err = wbuf_write(f, 1 << 20, off, seed);
		if (!err) {
			expect(want, 1 << 20, off, seed++);
			off += 1 << 20;
		}
	}
	CHECK(err == E3_IMAGE_FULL);
	if (f)
		CHECK_OK(e3_file_close(f));
	CHECK_OK(e3_image_close(img));
	size = read_back("h", got, sizeof(got), &tz);
	CHECK(size > off && size < off + (1 << 20));
	expect(want, 1 << 20, off, seed);
	CHECK(size <= sizeof(want) && memcmp(got, want, size) == 0);
	CHECK(fsck_clean());
}

/* e3_file_flush_many: the data goes out, the files stay open and take
 * more; with the write failing (E3_FAULT=eio:1), both files fail at
 * close and are left empty. */
static void test_flush_many(void)
{
	static char got[20000], want[20000];
	e3_image_t *img = NULL;
	e3_file_t *f[3] = { NULL, NULL, NULL };
	int tz;

	for (int fault = 0; fault < 2; fault++) {
		CHECK(make_image() == 0);
		if (fault)
			setenv("E3_FAULT", "eio:1", 1);
		CHECK_OK(e3_image_open(img_path, &(struct e3_open_opts){
					       .flags = E3_OPEN_WRITE }, &img));
		unsetenv("E3_FAULT");
		if (!img)
			return;
		f[0] = create(img, "p", 7000);
		f[2] = create(img, "q", 5000);
		if (!f[0] || !f[2])
			return;
		CHECK_OK(wbuf_write(f[0], 7000, 0, 30));
		CHECK_OK(wbuf_write(f[2], 5000, 0, 31));
		if (fault) {
			CHECK(e3_file_flush_many(f, 3) != 0);
			CHECK(e3_file_close(f[0]) != 0);
			CHECK(e3_file_close(f[2]) != 0);
			e3_image_close(img);
			CHECK(read_back("p", got, sizeof(got), &tz) == 0);
			CHECK(read_back("q", got, sizeof(got), &tz) == 0);
		} else {
			CHECK_OK(e3_file_flush_many(f, 3));
			CHECK_OK(wbuf_write(f[0], 9000, 7168, 32));
			CHECK_OK(e3_file_close(f[0]));
			CHECK_OK(e3_file_close(f[2]));
			CHECK_OK(e3_image_close(img));
			expect(want, 7000, 0, 30);
			memset(want + 7000, 0, 168);
			expect(want, 9000, 7168, 32);
			CHECK(read_back("p", got, sizeof(got), &tz) == 16168);
			CHECK(memcmp(got, want, 16168) == 0);
			expect(want, 5000, 0, 31);
			CHECK(read_back("q", got, sizeof(got), &tz) == 5000);
			CHECK(memcmp(got, want, 5000) == 0 && tz);
		}
		CHECK(fsck_clean());
	}
}

static void test_misuse(void)
{
	static char want[4096];
	e3_image_t *img = NULL;
	e3_file_t *f;
	void *buf;

	img = new_image(1024);
	if (!img)
		return;
	f = create(img, "e", E3_SIZE_UNKNOWN);
	if (f) {
		CHECK(e3_file_pwrite_wbuf(f, 10, 0) == EINVAL);
		CHECK_OK(e3_file_wbuf(f, 100, &buf));
		CHECK(e3_file_pwrite_wbuf(f, 101, 0) == EINVAL);
		/* the failed call used the buffer up: ask again */
		CHECK(e3_file_pwrite_wbuf(f, 100, 0) == EINVAL);
		CHECK_OK(wbuf_write(f, 100, 0, 8));
		CHECK(e3_file_pwrite_wbuf(f, 100, 100) == EINVAL);
		CHECK_OK(wbuf_write(f, 100, 100, 9));	/* unaligned */
		CHECK_OK(e3_file_close(f));
	}
	CHECK_OK(e3_image_close(img));
	expect(want, 100, 0, 8);
	expect(want, 100, 100, 9);
	check_file("e", want, 200, 1);
	CHECK(fsck_clean());
}

/* A closed file's struct and write buffer are kept for the next file
 * (load.c, E3_LOAD_POOL; compiled out in ASan builds, so only this
 * build sees the reuse): the next file gets that buffer back as its read
 * buffer, full of the last file's bytes past what it fills, and must
 * write none of them — its last block's tail is zeros — and carry
 * nothing else over (size, blocks, the claimed run). */
static void test_reused_struct_and_buffer(void)
{
	static char want_a[10000], want_b[3000];
	e3_image_t *img;
	e3_file_t *f;
	void *buf_a = NULL, *buf_b = NULL;

	img = new_image(1024);
	if (!img)
		return;
	f = create(img, "a", sizeof(want_a));
	if (f) {
		CHECK_OK(e3_file_wbuf(f, sizeof(want_a), &buf_a));
		CHECK_OK(wbuf_write(f, sizeof(want_a), 0, 1));
		CHECK_OK(e3_file_close(f));
	}
	f = create(img, "b", sizeof(want_b));
	if (f) {
		CHECK_OK(e3_file_wbuf(f, sizeof(want_b), &buf_b));
		CHECK_OK(wbuf_write(f, sizeof(want_b), 0, 2));
		CHECK_OK(e3_file_close(f));
	}
#if !defined(__SANITIZE_ADDRESS__)
	CHECK(buf_a && buf_b == buf_a);	/* the reuse happened */
#endif
	CHECK_OK(e3_image_close(img));
	expect(want_a, sizeof(want_a), 0, 1);
	expect(want_b, sizeof(want_b), 0, 2);
	check_file("a", want_a, sizeof(want_a), 1);
	check_file("b", want_b, sizeof(want_b), 1);
	CHECK(fsck_clean());
}

int main(void)
{
	snprintf(img_path, sizeof(img_path), "/tmp/wbuftest-%d.img",
		 (int)getpid());
	unsetenv("E3_FAULT");
	RUN(test_adopted);
	RUN(test_adopted_then_continued);
	RUN(test_split_at_indirect);
	RUN(test_overwrite_keeps_tail);
	RUN(test_full_midway);
	RUN(test_flush_many);
	RUN(test_misuse);
	RUN(test_reused_struct_and_buffer);
	unlink(img_path);
	return unit_done();
}
