/*
 * test_dircache.c: the load API's directory cache (lib/fs/dircache.c) and
 * e3_file_close_many, on small real images made by mke2fs (1 KiB blocks,
 * so directories grow a block every few names).
 *
 * Oracle for placement: a twin image. The same script of operations
 * (create, mkdir, symlink, mknod, remove, duplicate attempts) runs on
 * image A through the e3img load API, and on image B, made by the same
 * mke2fs command, through plain libext2fs: ext2fs_link, and on
 * EXT2_ET_DIR_NO_SPACE ext2fs_expand_dir and ext2fs_link again, with
 * ext2fs_unlink for removals. Inode numbers and block addresses differ
 * between the two (different allocators), but every directory's entries
 * must be the same: per logical block, the same sequence of rec_len,
 * name, file type and used/unused. This was chosen over checking "first
 * fit" with a parser of our own because it needs no second statement of
 * ext2fs_link's rule (which could share the cache's mistake): libext2fs
 * itself decides, so a cache that skips a block with room, trusts stale
 * room after a removal, or splits an entry differently makes the test
 * fail. The script is deterministic (a fixed-seed xorshift), so a failure
 * reproduces. e2fsck -fn must pass on both images.
 *
 * The rest: names that exist are refused (in session, after reopening,
 * where the cache is built from disk), near misses accepted; remove then
 * re-add; several directories used alternately; close_many of 100
 * files, out of order, with one NULL slot, read back through libext2fs;
 * and a name removed by another thread while its file is created (busy
 * until closed, never freed under the writer).
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "unit.h"
#include "e3img.h"

#define MAXDIRS 8
#define MAXENT 6000

static char path_a[64], path_b[64];

static int make_image(const char *path)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -f %s && truncate -s 32M %s && "
		 "mke2fs -q -F -t ext3 -b 1024 -N 8192 %s >/dev/null 2>&1",
		 path, path, path);
	return system(cmd);
}

static int fsck_clean(const char *path)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", path);
	return system(cmd) == 0;
}

static void set_paths(void)
{
	snprintf(path_a, sizeof(path_a), "/tmp/dctest-%d-a.img", (int)getpid());
	snprintf(path_b, sizeof(path_b), "/tmp/dctest-%d-b.img", (int)getpid());
}

static e3_image_t *open_a(void)
{
	struct e3_open_opts o = { .flags = E3_OPEN_WRITE };
	e3_image_t *img = NULL;
	errcode_t err = e3_image_open(path_a, &o, &img);

	if (err)
		fprintf(stderr, "  open %s: %s\n", path_a, error_message(err));
	return err ? NULL : img;
}

static ext2_filsys open_b(int rw)
{
	ext2_filsys fs = NULL;
	const char *p = rw ? path_b : path_a;
	errcode_t err = ext2fs_open(p, (rw ? EXT2_FLAG_RW : 0) |
				    EXT2_FLAG_64BITS, 0, 0, unix_io_manager,
				    &fs);

	if (!err)
		err = ext2fs_read_bitmaps(fs);
	if (err) {
		fprintf(stderr, "  ext2fs_open %s: %s\n", p, error_message(err));
		return NULL;
	}
	return fs;
}

/* ---- the script and its two executors --------------------------------- */

static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

enum kind { K_FILE, K_DIR, K_LINK, K_CHR, K_FIFO, NKIND };

struct ent {
	int dir;			/* index into twin.dir */
	char name[EXT2_NAME_LEN + 1];
	enum kind kind;
	int gone;			/* removed */
};

struct twin {
	e3_image_t *a;
	ext2_filsys b;
	ext2_ino_t dir_a[MAXDIRS], dir_b[MAXDIRS];
	int ndirs;
	struct ent *ent;
	int nent;
	int mismatches;			/* A and B disagreed on an outcome */
	int nadd, ndup, nrm;		/* what the script did, for the log */
};

static struct e3_attr attr_of(enum kind k)
{
	static const uint32_t modes[NKIND] = {
		LINUX_S_IFREG | 0644, LINUX_S_IFDIR | 0755,
		LINUX_S_IFLNK | 0777, LINUX_S_IFCHR | 0600,
		LINUX_S_IFIFO | 0600,
	};
	struct e3_attr at = { .mode = modes[k] };

	at.atime.tv_sec = at.mtime.tv_sec = at.ctime.tv_sec = 1700000000;
	return at;
}

static const char *target_of(const char *name)
{
	return name[0] & 1 ? "short-target" : "a/somewhat/longer/target";
}

static errcode_t add_a(struct twin *t, int dir, const char *name,
		       enum kind k, ext2_ino_t *ino)
{
	struct e3_attr at = attr_of(k);
	ext2_ino_t p = t->dir_a[dir];
	e3_file_t *f;
	errcode_t err;

	switch (k) {
	case K_FILE:
		err = e3_create(t->a, p, name, &at, E3_SIZE_UNKNOWN, &f);
		if (!err) {
			*ino = e3_file_ino(f);
			err = e3_file_close(f);
		}
		return err;
	case K_DIR:
		return e3_mkdir(t->a, p, name, &at, ino);
	case K_LINK:
		return e3_symlink(t->a, p, name, target_of(name), &at, ino);
	case K_CHR:
		return e3_mknod(t->a, p, name, &at, makedev(4, 7), ino);
	default:
		return e3_mknod(t->a, p, name, &at, 0, ino);
	}
}

static errcode_t link_b(ext2_filsys fs, ext2_ino_t dir, const char *name,
			ext2_ino_t ino, int ft)
{
	errcode_t err = ext2fs_link(fs, dir, name, ino, ft);

	if (err == EXT2_ET_DIR_NO_SPACE) {
		err = ext2fs_expand_dir(fs, dir);
		if (!err)
			err = ext2fs_link(fs, dir, name, ino, ft);
	}
	return err;
}

static errcode_t add_b(struct twin *t, int dir, const char *name,
		       enum kind k, ext2_ino_t *ret)
{
	static const int ft[NKIND] = { EXT2_FT_REG_FILE, EXT2_FT_DIR,
		EXT2_FT_SYMLINK, EXT2_FT_CHRDEV, EXT2_FT_FIFO };
	struct e3_attr at = attr_of(k);
	ext2_filsys fs = t->b;
	ext2_ino_t p = t->dir_b[dir], ino;
	struct ext2_inode in;
	errcode_t err;

	err = ext2fs_new_inode(fs, p, (int)at.mode, 0, &ino);
	if (err)
		return err;
	if (k == K_DIR) {
		err = ext2fs_mkdir(fs, p, ino, NULL);
	} else {
		memset(&in, 0, sizeof(in));
		in.i_mode = (uint16_t)at.mode;
		in.i_links_count = 1;
		in.i_atime = in.i_mtime = in.i_ctime = 1700000000;
		if (k == K_LINK) {
			const char *tg = target_of(name);

			in.i_size = (uint32_t)strlen(tg);
			memcpy(in.i_block, tg, strlen(tg));
		} else if (k == K_CHR) {
			in.i_block[0] = (4 << 8) | 7;
		}
		err = ext2fs_write_new_inode(fs, ino, &in);
		if (!err)
			ext2fs_inode_alloc_stats2(fs, ino, +1, 0);
	}
	if (!err)
		err = link_b(fs, p, name, ino, ft[k]);
	*ret = ino;
	return err;
}

static errcode_t remove_b(struct twin *t, int dir, const char *name)
{
	ext2_filsys fs = t->b;
	struct ext2_inode in;
	ext2_ino_t ino;
	errcode_t err;

	err = ext2fs_lookup(fs, t->dir_b[dir], name, (int)strlen(name), NULL,
			    &ino);
	if (!err)
		err = ext2fs_unlink(fs, t->dir_b[dir], name, ino, 0);
	if (!err)
		err = ext2fs_read_inode(fs, ino, &in);
	if (err)
		return err;
	memset(&in, 0, sizeof(in));
	in.i_dtime = 1700000000;
	err = ext2fs_write_inode(fs, ino, &in);
	if (!err)
		ext2fs_inode_alloc_stats2(fs, ino, -1, 0);
	return err;
}

static int find_ent(const struct twin *t, int dir, const char *name)
{
	for (int i = 0; i < t->nent; i++)
		if (t->ent[i].dir == dir && !t->ent[i].gone &&
		    strcmp(t->ent[i].name, name) == 0)
			return i;
	return -1;
}

/* Adds to both images; a new directory becomes a target when there is
 * room in the table. Returns 0 on success in both. */
static int add_both(struct twin *t, int dir, const char *name, enum kind k)
{
	ext2_ino_t ia = 0, ib = 0;
	errcode_t ea, eb;

	ea = add_a(t, dir, name, k, &ia);
	eb = add_b(t, dir, name, k, &ib);
	if (ea || eb) {
		fprintf(stderr, "  add %s (len %zu) to dir %d: A %s, B %s\n",
			name, strlen(name), dir, error_message(ea),
			error_message(eb));
		t->mismatches++;
		return -1;
	}
	t->nadd++;
	if (t->nent < MAXENT) {
		struct ent *e = &t->ent[t->nent++];

		e->dir = dir;
		e->kind = k;
		e->gone = 0;
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	if (k == K_DIR && t->ndirs < MAXDIRS) {
		t->dir_a[t->ndirs] = ia;
		t->dir_b[t->ndirs] = ib;
		t->ndirs++;
	}
	return 0;
}

static void random_name(char *buf)
{
	static const char cs[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
	/* short names often (they pack into slack), long ones sometimes */
	size_t len = rnd() % 4 ? 1 + rnd() % 40 : 1 + rnd() % 255;

	for (size_t i = 0; i < len; i++)
		buf[i] = cs[rnd() % (sizeof(cs) - 1)];
	buf[len] = '\0';
	if (strcmp(buf, ".") == 0 || strcmp(buf, "..") == 0)
		buf[0] = 'x';
}

/* A name close to an existing one: a prefix, or one byte changed, or one
 * byte more. */
static void near_name(const char *from, char *buf)
{
	size_t len = strlen(from);

	snprintf(buf, EXT2_NAME_LEN + 1, "%s", from);
	switch (rnd() % 3) {
	case 0:
		if (len > 1)
			buf[len - 1 - rnd() % (len - 1)] = '\0';
		else
			buf[0] = buf[0] == 'q' ? 'r' : 'q';
		break;
	case 1:
		buf[rnd() % len] ^= 0x01;	/* '.' becomes '/' */
		for (char *c = strchr(buf, '/'); c; c = strchr(c, '/'))
			*c = 'y';
		break;
	default:
		if (len < EXT2_NAME_LEN) {
			buf[len] = 'Q';
			buf[len + 1] = '\0';
		} else {
			buf[len - 1] = buf[len - 1] == 'Q' ? 'R' : 'Q';
		}
	}
	if (strcmp(buf, ".") == 0 || strcmp(buf, "..") == 0)
		buf[0] = 'w';
}

/* n steps of the script over directories [0, t->ndirs): adds (some
 * close to existing names), duplicates that A must refuse, removals. */
static void run_script(struct twin *t, int n, int mkdirs)
{
	char name[EXT2_NAME_LEN + 2];

	for (int s = 0; s < n; s++) {
		int dir = (int)(rnd() % (unsigned)t->ndirs);
		unsigned r = (unsigned)(rnd() % 100);

		if (r < 6 && t->nent) {		/* duplicate: refused */
			struct ent *e = &t->ent[rnd() % (unsigned)t->nent];
			ext2_ino_t ino;
			errcode_t err;

			if (e->gone)
				continue;
			t->ndup++;
			err = add_a(t, e->dir, e->name,
				    (enum kind)(rnd() % NKIND), &ino);
			if (err != E3_NAME_EXISTS) {
				fprintf(stderr, "  duplicate %s in dir %d: %s\n",
					e->name, e->dir, error_message(err));
				t->mismatches++;
			}
			continue;
		}
		if (r < 10 && t->nent) {	/* remove a non-directory */
			int i = (int)(rnd() % (unsigned)t->nent);
			struct ent *e = &t->ent[i];
			errcode_t ea, eb;

			if (e->gone || e->kind == K_DIR)
				continue;
			ea = e3_remove(t->a, t->dir_a[e->dir], e->name);
			eb = remove_b(t, e->dir, e->name);
			if (ea || eb) {
				fprintf(stderr, "  remove %s: A %s B %s\n",
					e->name, error_message(ea),
					error_message(eb));
				t->mismatches++;
			}
			e->gone = 1;
			t->nrm++;
			/* half the time, the same name again at once */
			if (rnd() % 2 && t->nent < MAXENT)
				add_both(t, e->dir, e->name, K_FILE);
			continue;
		}
		if (r < 25 && t->nent) {	/* near an existing name */
			struct ent *e = &t->ent[rnd() % (unsigned)t->nent];

			near_name(e->name, name);
			dir = e->dir;
		} else {
			random_name(name);
		}
		if (find_ent(t, dir, name) >= 0)
			continue;
		add_both(t, dir, name, mkdirs && rnd() % 8 == 0 ? K_DIR :
			 (enum kind)(rnd() % 5 == 0 ? 2 + rnd() % 3 : 0));
	}
}

/* Every live name is found in A, every removed one (not re-added) not. */
static void check_lookups(struct twin *t)
{
	for (int i = 0; i < t->nent; i++) {
		struct ent *e = &t->ent[i];
		ext2_ino_t ino;
		errcode_t err;

		err = e3_lookup(t->a, t->dir_a[e->dir], e->name, &ino);
		if (!e->gone && err) {
			fprintf(stderr, "  lookup %s: %s\n", e->name,
				error_message(err));
			t->mismatches++;
		}
		if (e->gone && find_ent(t, e->dir, e->name) < 0 &&
		    err != E3_NOT_FOUND) {
			fprintf(stderr, "  removed %s still found\n", e->name);
			t->mismatches++;
		}
	}
}

/* ---- comparing the directories of A and B ------------------------------- */

static int compare_block(ext2_filsys fa, const char *ba, const char *bb,
			 uint64_t lblk)
{
	unsigned off = 0, la, lb;

	while (off < fa->blocksize) {
		const struct ext2_dir_entry *da = (const void *)(ba + off);
		const struct ext2_dir_entry *db = (const void *)(bb + off);

		if (ext2fs_get_rec_len(fa, (struct ext2_dir_entry *)da, &la) ||
		    ext2fs_get_rec_len(fa, (struct ext2_dir_entry *)db, &lb) ||
		    la < 8 || la != lb || !da->inode != !db->inode ||
		    da->name_len != db->name_len ||
		    memcmp(da->name, db->name, ext2fs_dirent_name_len(da))) {
			fprintf(stderr, "  block %llu offset %u differs: "
				"A rec_len %u name '%.*s', B rec_len %u "
				"name '%.*s'\n", (unsigned long long)lblk, off,
				la, ext2fs_dirent_name_len(da), da->name, lb,
				ext2fs_dirent_name_len(db), db->name);
			return -1;
		}
		off += la;
	}
	return 0;
}

static int compare_dir(ext2_filsys fa, ext2_ino_t ia, ext2_filsys fb,
		       ext2_ino_t ib)
{
	struct ext2_inode a, b;
	char *ba = malloc(fa->blocksize), *bb = malloc(fa->blocksize);
	int bad = 0;

	if (ext2fs_read_inode(fa, ia, &a) || ext2fs_read_inode(fb, ib, &b) ||
	    EXT2_I_SIZE(&a) != EXT2_I_SIZE(&b)) {
		fprintf(stderr, "  dir %u/%u: sizes %llu/%llu\n", ia, ib,
			(unsigned long long)EXT2_I_SIZE(&a),
			(unsigned long long)EXT2_I_SIZE(&b));
		bad = 1;
	}
	for (uint64_t l = 0; !bad && l < EXT2_I_SIZE(&a) / fa->blocksize; l++) {
		blk64_t pa = 0, pb = 0;

		if (ext2fs_bmap2(fa, ia, NULL, NULL, 0, l, NULL, &pa) ||
		    ext2fs_bmap2(fb, ib, NULL, NULL, 0, l, NULL, &pb) ||
		    !pa || !pb ||
		    ext2fs_read_dir_block4(fa, pa, ba, 0, ia) ||
		    ext2fs_read_dir_block4(fb, pb, bb, 0, ib) ||
		    compare_block(fa, ba, bb, l))
			bad = 1;
	}
	free(ba);
	free(bb);
	return bad ? -1 : 0;
}

/* Closes both images and compares every directory of the script. */
static void close_and_compare(struct twin *t, unsigned min_blocks)
{
	ext2_filsys fa;
	struct ext2_inode in;

	CHECK_OK(e3_image_close(t->a));
	t->a = NULL;
	CHECK_OK(ext2fs_close_free(&t->b));
	fa = open_b(0);
	t->b = open_b(1);
	CHECK(fa && t->b);
	if (!fa || !t->b)
		return;
	for (int d = 0; d < t->ndirs; d++)
		CHECK(compare_dir(fa, t->dir_a[d], t->b, t->dir_b[d]) == 0);
	/* the script really grew the first directory over many blocks */
	CHECK_OK(ext2fs_read_inode(fa, t->dir_a[0], &in));
	CHECK(EXT2_I_SIZE(&in) / fa->blocksize >= min_blocks);
	printf("# %d names added, %d duplicates refused, %d removed, %d "
	       "directories; the first is %u blocks\n", t->nadd, t->ndup,
	       t->nrm, t->ndirs, (unsigned)(EXT2_I_SIZE(&in) / fa->blocksize));
	ext2fs_close_free(&fa);
	CHECK_OK(ext2fs_close_free(&t->b));
	CHECK(fsck_clean(path_a));
	CHECK(fsck_clean(path_b));
}

static int twin_start(struct twin *t, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	rng = seed;
	set_paths();
	t->ent = calloc(MAXENT, sizeof(*t->ent));
	if (!t->ent || make_image(path_a) || make_image(path_b))
		return -1;
	t->a = open_a();
	t->b = open_b(1);
	if (!t->a || !t->b)
		return -1;
	t->dir_a[0] = t->dir_b[0] = EXT2_ROOT_INO;
	t->ndirs = 1;
	return 0;
}

static void twin_end(struct twin *t)
{
	if (t->a)
		e3_image_abort(t->a);
	if (t->b)
		ext2fs_close_free(&t->b);
	free(t->ent);
	unlink(path_a);
	unlink(path_b);
}

/* 1-3: one directory, a few thousand names, removals and duplicates; then
 * a second session on both images, where A's cache starts from disk. */
static void test_one_dir_twin(void)
{
	struct twin t;

	if (twin_start(&t, 0x9e3779b97f4a7c15ULL)) {
		CHECK(!"images");
		twin_end(&t);
		return;
	}
	run_script(&t, 4000, 0);
	check_lookups(&t);
	CHECK(t.mismatches == 0);
	close_and_compare(&t, 100);

	/* second session: the cache is built from the blocks on disk */
	t.a = open_a();
	CHECK(t.a != NULL);
	if (t.a && t.b == NULL)
		t.b = open_b(1);
	if (t.a && t.b) {
		check_lookups(&t);
		run_script(&t, 1500, 0);
		check_lookups(&t);
		CHECK(t.mismatches == 0);
		close_and_compare(&t, 130);
	}
	twin_end(&t);
}

/* 4: new subdirectories interleaved with names in the parent, and names
 * spread over several directories alternately. */
static void test_many_dirs_twin(void)
{
	struct twin t;

	if (twin_start(&t, 0x2545f4914f6cdd1dULL)) {
		CHECK(!"images");
		twin_end(&t);
		return;
	}
	run_script(&t, 4000, 1);
	CHECK(t.ndirs == MAXDIRS);
	check_lookups(&t);
	CHECK(t.mismatches == 0);
	close_and_compare(&t, 20);
	twin_end(&t);
}

/* ---- existence, near misses, remove and re-add, on one image ----------- */

static void test_exists_exact(void)
{
	static const char *const names[] = { "a", "ab", "abc", "abd", "b",
		"file.txt", "file.txu", "file.tx", "file.txt~", "A" };
	struct e3_attr fa = attr_of(K_FILE), da = attr_of(K_DIR);
	e3_image_t *img;
	e3_file_t *f;
	ext2_ino_t ino, d;
	char buf[300];

	set_paths();
	if (make_image(path_a) || !(img = open_a())) {
		CHECK(!"image");
		unlink(path_a);
		return;
	}
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "d", &da, &d));
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		CHECK_OK(e3_create(img, d, names[i], &fa, 0, &f));
		CHECK_OK(e3_file_close(f));
	}
	/* 300 more so the directory has several blocks */
	for (int i = 0; i < 300; i++) {
		snprintf(buf, sizeof(buf), "n%04d-%0*d", i, i % 200, 0);
		CHECK_OK(e3_create(img, d, buf, &fa, 0, &f));
		CHECK_OK(e3_file_close(f));
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
			CHECK(e3_create(img, d, names[i], &fa, 0, &f) ==
			      E3_NAME_EXISTS);
			CHECK(e3_mkdir(img, d, names[i], &da, &ino) ==
			      E3_NAME_EXISTS);
		}
		snprintf(buf, sizeof(buf), "n0199-%0*d", 199, 0);
		CHECK(e3_mkdir(img, d, buf, &da, &ino) == E3_NAME_EXISTS);
		CHECK(e3_mkdir(img, EXT2_ROOT_INO, "d", &da, &ino) ==
		      E3_NAME_EXISTS);
		CHECK(e3_mkdir(img, EXT2_ROOT_INO, "lost+found", &da, &ino) ==
		      E3_NAME_EXISTS);
		if (pass == 0) {	/* again with the cache built from disk */
			CHECK_OK(e3_image_close(img));
			img = open_a();
			CHECK(img != NULL);
			if (!img) {
				unlink(path_a);
				return;
			}
		}
	}
	/* near misses of names that exist are new names */
	CHECK_OK(e3_create(img, d, "abe", &fa, 0, &f));
	CHECK_OK(e3_file_close(f));
	CHECK_OK(e3_mkdir(img, d, "file.t", &da, &ino));
	snprintf(buf, sizeof(buf), "n0199-%0*d", 198, 0);
	CHECK_OK(e3_mkdir(img, d, buf, &da, &ino));
	CHECK_OK(e3_lookup(img, d, buf, &ino));
	CHECK(e3_lookup(img, d, "file.s", &ino) == E3_NOT_FOUND);

	/* remove, re-add, then a different name */
	CHECK_OK(e3_remove(img, d, "abc"));
	CHECK(e3_lookup(img, d, "abc", &ino) == E3_NOT_FOUND);
	CHECK_OK(e3_create(img, d, "abc", &fa, 0, &f));
	CHECK_OK(e3_file_close(f));
	CHECK(e3_create(img, d, "abc", &fa, 0, &f) == E3_NAME_EXISTS);
	CHECK_OK(e3_remove(img, d, "n0000-0"));
	CHECK_OK(e3_symlink(img, d, "after-remove", "abc", &fa, &ino));
	CHECK_OK(e3_lookup(img, d, "after-remove", &ino));
	CHECK_OK(e3_lookup(img, d, "abc", &ino));
	CHECK(e3_lookup(img, d, "n0000-0", &ino) == E3_NOT_FOUND);
	CHECK_OK(e3_image_close(img));
	CHECK(fsck_clean(path_a));
	unlink(path_a);
}

/* ---- a name removed while its file is being created ------------------- */

/* e3_remove of a file still open is E3_FILE_BUSY: its close would write a
 * map and a size into a freed inode. The file went on the open list only
 * after e3_create let fs_lock go, and its e3_op_end can commit, letting
 * fs_lock go in the middle: with transactions of one block
 * (E3_JOURNAL_MEM=1) every create commits, and a thread removing the
 * name as soon as it appears removed most files while they were written
 * (e2fsck then found their blocks marked in use and owned by no inode). */
static volatile int race_cur = -1, race_stop;
static e3_image_t *race_img;

static void *race_remover(void *arg)
{
	char name[32];

	(void)arg;
	while (!race_stop) {
		int i = race_cur;

		if (i < 0)
			continue;
		snprintf(name, sizeof(name), "r%03d", i);
		(void)e3_remove(race_img, EXT2_ROOT_INO, name);
	}
	return NULL;
}

static void test_remove_while_created(void)
{
	struct e3_attr fa = attr_of(K_FILE);
	static unsigned char data[8192];
	pthread_t t;
	e3_file_t *f = NULL;
	ext2_ino_t ino;
	char name[32];

	set_paths();
	if (make_image(path_a) || !(race_img = open_a()))
		FAIL("image");
	/* one thread: open, busy; closed, gone */
	CHECK_OK(e3_create(race_img, EXT2_ROOT_INO, "busy", &fa, 0, &f));
	CHECK(e3_remove(race_img, EXT2_ROOT_INO, "busy") == E3_FILE_BUSY);
	CHECK_OK(e3_file_close(f));
	CHECK_OK(e3_remove(race_img, EXT2_ROOT_INO, "busy"));
	CHECK(e3_lookup(race_img, EXT2_ROOT_INO, "busy", &ino) == E3_NOT_FOUND);
	CHECK_OK(e3_image_close(race_img));

	setenv("E3_JOURNAL_MEM", "1", 1);
	race_img = open_a();
	unsetenv("E3_JOURNAL_MEM");
	if (!race_img)
		FAIL("reopen");
	memset(data, 'r', sizeof(data));
	race_stop = 0;
	race_cur = -1;
	if (pthread_create(&t, NULL, race_remover, NULL))
		FAIL("pthread_create");
	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof(name), "r%03d", i);
		race_cur = i;
		if (e3_create(race_img, EXT2_ROOT_INO, name, &fa, sizeof(data),
			      &f))
			continue;
		CHECK_OK(e3_file_write(f, data, sizeof(data)));
		CHECK_OK(e3_file_close(f));
	}
	race_stop = 1;
	pthread_join(t, NULL);
	CHECK_OK(e3_image_close(race_img));
	CHECK(fsck_clean(path_a));
	unlink(path_a);
}

/* ---- e3_file_close_many ------------------------------------------------- */

/* more than close_many sorts on its stack (64): the rest go out alone */
#define NCLOSE 100

static size_t close_size(int i)
{
	return i % 3 == 0 ? 0 : (size_t)(i * 1777) % 9000 + 1;
}

static void fill(unsigned char *buf, size_t n, int i)
{
	for (size_t k = 0; k < n; k++)
		buf[k] = (unsigned char)(k * 31 + (size_t)i * 7 + k / 251);
}

static void test_close_many(void)
{
	struct e3_attr fa = attr_of(K_FILE);
	e3_file_t *files[NCLOSE], *shuffled[NCLOSE];
	errcode_t errs[NCLOSE];
	unsigned char want[9001], got[9001];
	e3_image_t *img;
	ext2_filsys fs;
	char name[32];

	set_paths();
	if (make_image(path_a) || !(img = open_a())) {
		CHECK(!"image");
		unlink(path_a);
		return;
	}
	for (int i = 0; i < NCLOSE; i++) {
		files[i] = NULL;
		errs[i] = -1;
		if (i == 17)
			continue;
		snprintf(name, sizeof(name), "f%02d", i);
		CHECK_OK(e3_create(img, EXT2_ROOT_INO, name, &fa,
				   i % 2 ? close_size(i) : E3_SIZE_UNKNOWN,
				   &files[i]));
		fill(want, close_size(i), i);
		/* in two writes, so the file's buffer is appended to */
		if (close_size(i) && files[i]) {
			size_t h = close_size(i) / 2;

			CHECK_OK(e3_file_write(files[i], want, h));
			CHECK_OK(e3_file_write(files[i], want + h,
					       close_size(i) - h));
		}
	}
	/* handed over out of creation order: the buffers that meet on disk
	 * are written together, in disk order, whatever the array's */
	for (int i = 0; i < NCLOSE; i++)
		shuffled[i] = files[(i * 37) % NCLOSE];
	CHECK_OK(e3_file_close_many(shuffled, NCLOSE, errs));
	for (int i = 0; i < NCLOSE; i++)
		CHECK(errs[i] == 0);
	/* nothing in the array: nothing to do */
	for (int i = 0; i < NCLOSE; i++)
		files[i] = NULL;
	CHECK_OK(e3_file_close_many(files, NCLOSE, errs));
	CHECK_OK(e3_image_close(img));	/* E3_FILES_OPEN if one was left */

	fs = open_b(0);
	CHECK(fs != NULL);
	for (int i = 0; fs && i < NCLOSE; i++) {
		ext2_ino_t ino;
		ext2_file_t file;
		unsigned n = 0;

		snprintf(name, sizeof(name), "f%02d", i);
		errcode_t err = ext2fs_lookup(fs, EXT2_ROOT_INO, name,
					      (int)strlen(name), NULL, &ino);
		if (i == 17) {
			CHECK(err == EXT2_ET_FILE_NOT_FOUND);
			continue;
		}
		CHECK_OK(err);
		if (err)
			continue;
		fill(want, close_size(i), i);
		CHECK_OK(ext2fs_file_open(fs, ino, 0, &file));
		CHECK_OK(ext2fs_file_read(file, got, sizeof(got), &n));
		CHECK((size_t)ext2fs_file_get_size(file) == close_size(i));
		CHECK(n == close_size(i) && memcmp(got, want, n) == 0);
		ext2fs_file_close(file);
	}
	if (fs)
		ext2fs_close_free(&fs);
	CHECK(fsck_clean(path_a));
	unlink(path_a);
}

/* Directory block 0 of /d in path, as bytes. */
static int read_d_block(const char *path, ext2_ino_t d, char *buf)
{
	ext2_filsys fs;
	blk64_t pb = 0;
	int ok;

	if (ext2fs_open(path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &fs))
		return 0;
	ok = !ext2fs_bmap2(fs, d, NULL, NULL, 0, 0, NULL, &pb) &&
	     !ext2fs_read_dir_block4(fs, pb, buf, 0, d);
	ext2fs_close_free(&fs);
	return ok;
}

/* An unused entry after a block's first one (e2fsck clears bad entries
 * in place): ext2fs_link merges it into the entry before it when placing
 * a name there; the cache must not place the name elsewhere. Setup: x y z
 * w in /d, z unlinked by libext2fs (y takes its room), w cleared in place;
 * then one name added through e3img (A) and through ext2fs_link (B). */
static void test_unused_entry_after_first(void)
{
	struct e3_attr at = { .mode = LINUX_S_IFDIR | 0755 };
	const char *names[] = { "x", "y", "z", "w" };
	char ba[1024], bb[1024], cmd[200];
	ext2_ino_t d = 0, ino = 0;
	e3_image_t *img;
	ext2_filsys fs;
	blk64_t pb;

	if (make_image(path_a) != 0)
		FAIL("mke2fs failed");
	img = open_a();
	if (!img)
		return;
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "d", &at, &d));
	at.mode = LINUX_S_IFIFO | 0600;
	for (int i = 0; i < 4; i++)
		CHECK_OK(e3_mknod(img, d, names[i], &at, 0, &ino));
	CHECK_OK(e3_image_close(img));

	fs = open_b(0);
	CHECK(fs != NULL);
	if (!fs)
		return;
	ext2fs_close_free(&fs);
	CHECK_OK(ext2fs_open(path_a, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			     unix_io_manager, &fs));
	CHECK_OK(ext2fs_read_bitmaps(fs));
	CHECK_OK(ext2fs_unlink(fs, d, "z", 0, 0));
	CHECK_OK(ext2fs_bmap2(fs, d, NULL, NULL, 0, 0, NULL, &pb));
	CHECK_OK(ext2fs_read_dir_block4(fs, pb, ba, 0, d));
	for (unsigned off = 0, rl; off < fs->blocksize; off += rl) {
		struct ext2_dir_entry *de = (void *)(ba + off);

		CHECK_OK(ext2fs_get_rec_len(fs, de, &rl));
		if (rl < 8)
			break;
		if (ext2fs_dirent_name_len(de) == 1 && de->name[0] == 'w')
			de->inode = 0;
	}
	CHECK_OK(ext2fs_write_dir_block4(fs, pb, ba, 0, d));
	ext2fs_close_free(&fs);
	snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s", path_a, path_b);
	CHECK(system(cmd) == 0);

	img = open_a();
	if (!img)
		return;
	CHECK_OK(e3_mknod(img, d, "newname1", &at, 0, &ino));
	CHECK_OK(e3_image_close(img));
	fs = open_b(1);
	if (!fs)
		return;
	CHECK_OK(ext2fs_link(fs, d, "newname1", ino, EXT2_FT_FIFO));
	ext2fs_close_free(&fs);

	CHECK(read_d_block(path_a, d, ba) && read_d_block(path_b, d, bb));
	/* (no e2fsck here: w's inode, orphaned by the setup, is left as is) */
	CHECK(memcmp(ba, bb, sizeof(ba)) == 0);
	unlink(path_a);
	unlink(path_b);
}

/* The cache keeps the last directory block it wrote instead of reading it
 * back: every other writer of a directory block must make it read again.
 * Here: names removed from the block between two adds (e3_remove), then
 * the directory removed and its block, once free, taken by a new
 * directory (e3_rmdir, a commit in between so the free is final): the
 * new directory must hold its own "." and ".." and the one name added,
 * not the old block's names written back. */
static int dir_names(const char *path, ext2_ino_t d, char *out, size_t n,
		     blk64_t *pblk)
{
	char buf[1024];
	ext2_filsys fs;
	blk64_t pb = 0;
	size_t at = 0;
	int ok;

	out[0] = '\0';
	if (ext2fs_open(path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &fs))
		return 0;
	ok = !ext2fs_bmap2(fs, d, NULL, NULL, 0, 0, NULL, &pb) &&
	     !ext2fs_read_dir_block4(fs, pb, buf, 0, d);
	for (unsigned off = 0, rl; ok && off < fs->blocksize; off += rl) {
		struct ext2_dir_entry *de = (void *)(buf + off);
		int len = ext2fs_dirent_name_len(de);

		if (ext2fs_get_rec_len(fs, de, &rl) || rl < 8) {
			ok = 0;
			break;
		}
		if (de->inode && at + (size_t)len + 2 < n) {
			memcpy(out + at, de->name, (size_t)len);
			at += (size_t)len;
			out[at++] = ' ';
			out[at] = '\0';
		}
	}
	ext2fs_close_free(&fs);
	*pblk = pb;
	return ok;
}

static void test_block_written_elsewhere(void)
{
	struct e3_attr dat = { .mode = LINUX_S_IFDIR | 0755 };
	struct e3_attr fat = { .mode = LINUX_S_IFIFO | 0600 };
	char names[256];
	ext2_ino_t d = 0, e = 0, ino = 0;
	blk64_t dblk = 0, eblk = 0;
	e3_image_t *img;

	if (make_image(path_a) != 0)
		FAIL("mke2fs failed");
	img = open_a();
	if (!img)
		return;
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "d", &dat, &d));
	CHECK_OK(e3_mknod(img, d, "a", &fat, 0, &ino));
	CHECK_OK(e3_mknod(img, d, "b", &fat, 0, &ino));
	CHECK_OK(e3_remove(img, d, "a"));
	CHECK_OK(e3_mknod(img, d, "c", &fat, 0, &ino));
	CHECK_OK(e3_image_close(img));
	CHECK(dir_names(path_a, d, names, sizeof(names), &dblk));
	if (strcmp(names, ". .. b c ") != 0 &&
	    strcmp(names, ". .. c b ") != 0) {
		fprintf(stderr, "  /d holds: %s\n", names);
		FAIL("a name removed between two adds came back");
	}
	CHECK(fsck_clean(path_a));

	img = open_a();
	if (!img)
		return;
	/* d's block is the one the cache keeps */
	CHECK_OK(e3_mknod(img, d, "x", &fat, 0, &ino));
	CHECK_OK(e3_remove(img, d, "b"));
	CHECK_OK(e3_remove(img, d, "c"));
	CHECK_OK(e3_remove(img, d, "x"));
	CHECK_OK(e3_rmdir(img, EXT2_ROOT_INO, "d"));
	CHECK_OK(e3_image_commit(img));
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "e", &dat, &e));
	CHECK_OK(e3_mknod(img, e, "y", &fat, 0, &ino));
	CHECK_OK(e3_image_close(img));
	CHECK(dir_names(path_a, e, names, sizeof(names), &eblk));
	/* the case this is about: the freed block was taken again */
	CHECK(eblk == dblk);
	if (strcmp(names, ". .. y ") != 0) {
		fprintf(stderr, "  /e holds: %s\n", names);
		FAIL("a new directory's block holds another's names");
	}
	CHECK(fsck_clean(path_a));
	unlink(path_a);
}

#ifdef E3_DC_TEST_HASH_VALUES
/* test_dircache_collide.c only (name_hash is dircache.c's, compiled in):
 * removing one of several names of a hash keeps the hash, so the others
 * are still found and still refused as duplicates, in the same block and
 * in others. */
static void test_shared_hash(void)
{
	struct e3_attr fa = attr_of(K_FILE), da = attr_of(K_DIR);
	char names[40][16];
	int n = 0;
	e3_image_t *img;
	e3_file_t *f;
	ext2_ino_t ino, d;

	/* names of one hash, spread over blocks by fillers between them */
	for (int i = 0; n < 40 && i < 100000; i++) {
		char buf[16];

		snprintf(buf, sizeof(buf), "s%05d", i);
		if (name_hash(buf, strlen(buf)) == name_hash("s00000", 6))
			snprintf(names[n++], sizeof(names[0]), "%s", buf);
	}
	CHECK(n == 40);
	set_paths();
	if (n < 40 || make_image(path_a) || !(img = open_a())) {
		CHECK(!"image");
		unlink(path_a);
		return;
	}
	CHECK_OK(e3_mkdir(img, EXT2_ROOT_INO, "d", &da, &d));
	for (int i = 0; i < n; i++) {
		char fill[32];

		CHECK_OK(e3_create(img, d, names[i], &fa, 0, &f));
		CHECK_OK(e3_file_close(f));
		snprintf(fill, sizeof(fill), "filler-%02d-%0*d", i, 12, 0);
		CHECK_OK(e3_create(img, d, fill, &fa, 0, &f));
		CHECK_OK(e3_file_close(f));
	}
	/* every other one goes; the rest stay found and refused */
	for (int i = 0; i < n; i += 2)
		CHECK_OK(e3_remove(img, d, names[i]));
	for (int i = 0; i < n; i++) {
		if (i % 2) {
			CHECK_OK(e3_lookup(img, d, names[i], &ino));
			CHECK(e3_create(img, d, names[i], &fa, 0, &f) ==
			      E3_NAME_EXISTS);
			CHECK(e3_mkdir(img, d, names[i], &da, &ino) ==
			      E3_NAME_EXISTS);
		} else {
			CHECK(e3_lookup(img, d, names[i], &ino) ==
			      E3_NOT_FOUND);
		}
	}
	/* the last of the hash gone: absent, and then new again */
	for (int i = 1; i < n; i += 2)
		CHECK_OK(e3_remove(img, d, names[i]));
	for (int i = 0; i < n; i++)
		CHECK(e3_lookup(img, d, names[i], &ino) == E3_NOT_FOUND);
	CHECK_OK(e3_create(img, d, names[3], &fa, 0, &f));
	CHECK_OK(e3_file_close(f));
	CHECK(e3_create(img, d, names[3], &fa, 0, &f) == E3_NAME_EXISTS);
	CHECK_OK(e3_image_close(img));
	CHECK(fsck_clean(path_a));
	unlink(path_a);
}
#endif

int main(void)
{
	e3_init_errors();
	RUN(test_one_dir_twin);
	RUN(test_many_dirs_twin);
	RUN(test_exists_exact);
	RUN(test_remove_while_created);
	RUN(test_close_many);
	RUN(test_block_written_elsewhere);
	RUN(test_unused_entry_after_first);
#ifdef E3_DC_TEST_HASH_VALUES
	RUN(test_shared_hash);
#endif
	return unit_done();
}
