/*
 * copyin_devtab.c: genext2fs device tables (-D FILE), applied after the
 * sources. Each line is
 *     path type mode uid gid major minor start inc count
 * with type f (regular file), d (directory), c, b (devices), p (FIFO) or
 * s (socket); "-" for fields that do not apply; '#' starts a comment.
 * With a count above 0, one entry path<i> is made for each i with
 * start <= i < count (count is where the numbering stops, not how many:
 * /dev/hda b 640 0 0 3 1 1 1 16 makes hda1..hda15), and entry i gets the
 * minor number minor + i * inc - start. That is genext2fs' own expression
 * (in its add2fs_from_file(); Debian's genext2fs 1.5.0 makes the same
 * numbers). It is not minor + (i - start) * inc, and the two differ
 * once start is not 0 and inc is not 1: /dev/x c 600 0 0 5 0 1 2 4 makes
 * x1, x2, x3 with minors 1, 3, 5. Tables are written against genext2fs'
 * output, so we follow its arithmetic rather than the tidier formula.
 * Where we part from it: genext2fs stores major and minor in 8 bits each
 * and silently keeps the low byte of a larger number (major 300 becomes
 * 44); we keep the number when the inode's device encoding can hold it
 * (12-bit major, 20-bit minor) and refuse the line otherwise, which also
 * catches a minor that inc 0 with start > minor sends below zero.
 * Paths are the image's (from its root), as in genext2fs, whatever the
 * destination of the sources. An entry creates what is missing and
 * overrides what exists (devices are replaced; files and directories get
 * the new mode and owner).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fs/image.h"
#include "copyin.h"

static uint32_t type_bits(char type)
{
	switch (type) {
	case 'f': return S_IFREG;
	case 'd': return S_IFDIR;
	case 'c': return S_IFCHR;
	case 'b': return S_IFBLK;
	case 'p': return S_IFIFO;
	default: return S_IFSOCK;
	}
}

/* The existing inode's times, so an override only changes mode and owner. */
static errcode_t read_times(struct cp_ctx *c, ext2_ino_t ino, struct e3_attr *a)
{
	struct ext2_inode inode;
	errcode_t err;

	e3_fs_lock(c->img);
	err = ext2fs_read_inode(c->img->fs, ino, &inode);
	e3_fs_unlock(c->img);
	if (err)
		return err;
	a->atime = (struct timespec){ .tv_sec = (int32_t)inode.i_atime };
	a->mtime = (struct timespec){ .tv_sec = (int32_t)inode.i_mtime };
	a->ctime = (struct timespec){ .tv_sec = (int32_t)inode.i_ctime };
	return 0;
}

static errcode_t apply_one(struct cp_ctx *c, const struct cp_devtab_entry *e,
			   const char *rel, uint32_t minor)
{
	ext2_ino_t parent, ino;
	const char *leaf;
	struct e3_attr a;
	e3_file_t *f;
	errcode_t err;

	memset(&a, 0, sizeof(a));
	a.mode = type_bits(e->type) | e->mode;
	a.uid = e->uid;
	a.gid = e->gid;
	cp_now(c, &a.atime);
	a.mtime = a.ctime = a.atime;
	if (rel[0] == '\0')
		return e->type == 'd' ? cp_defer_dirattr(c, c->dest, &a)
				      : E3_IS_DIR;
	err = cp_resolve_parent(c, rel, &parent, &leaf);
	if (err)
		return err;
	err = e3_lookup(c->img, parent, leaf, &ino);
	if (err == 0 && (e->type == 'd' || e->type == 'f')) {
		err = read_times(c, ino, &a);
		if (!err && e->type == 'd')
			return cp_defer_dirattr(c, ino, &a);
		return err ? err : e3_setattr(c->img, ino, &a);
	}
	if (err == 0)
		err = e3_remove(c->img, parent, leaf);
	else if (err == E3_NOT_FOUND || err == EXT2_ET_FILE_NOT_FOUND)
		err = 0;
	if (err)
		return err;
	switch (e->type) {
	case 'd':
		return cp_make_dir(c, parent, leaf, &a, rel, &ino, NULL);
	case 'f':
		err = e3_create(c->img, parent, leaf, &a, 0, &f);
		return err ? err : e3_file_close(f);
	default:
		return e3_mknod(c->img, parent, leaf, &a,
				makedev(e->major, minor), &ino);
	}
}

/* Entry i's minor number, by genext2fs' expression (see the top), in 64
 * bits: minor + i * inc cannot overflow there (32-bit fields), so a
 * result below zero or too large is seen, not wrapped. -1: below zero. */
static int64_t entry_minor(const struct cp_devtab_entry *e, uint32_t i)
{
	uint64_t v = (uint64_t)e->minor + (uint64_t)i * e->inc;

	if (v < e->start)
		return -1;
	v -= e->start;
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Whether every device the line makes has numbers the inode can hold: the
 * kernel's new encoding (what make_node falls back to past 8 bits) has 12
 * bits of major and 20 of minor, and a larger number would be stored
 * mangled. Checked when the table is loaded, before anything is
 * written; inc is never negative, so the first and last entries bound
 * the rest. */
static int devs_fit(const struct cp_devtab_entry *e)
{
	int64_t lo = e->minor, hi = e->minor;

	if (e->type != 'c' && e->type != 'b')
		return 1;
	if (e->has_count && e->start < e->count) {
		lo = entry_minor(e, e->start);
		hi = entry_minor(e, e->count - 1);
	}
	return e->major <= 0xfff && lo >= 0 && hi <= 0xfffff;
}

static errcode_t apply_entry(struct cp_ctx *c, const struct cp_devtab_entry *e)
{
	size_t len = strlen(e->path) + 16;
	char *rel;
	errcode_t err = 0;

	rel = malloc(len);
	if (!rel)
		return ENOMEM;
	if (!e->has_count) {
		snprintf(rel, len, "%s", e->path);
		err = cp_path_clean(rel);
		if (!err)
			err = apply_one(c, e, rel, e->minor);
		err = cp_entry_result(c, e->path, err);
	}
	/* count is where the numbering stops: start >= count makes nothing */
	for (uint32_t i = e->start; e->has_count && !err && i < e->count; i++) {
		snprintf(rel, len, "%s%u", e->path, i);
		err = cp_path_clean(rel);
		if (!err)
			err = apply_one(c, e, rel, (uint32_t)entry_minor(e, i));
		err = cp_entry_result(c, rel, err);
	}
	free(rel);
	return err;
}

/* Every line parsed and its device numbers checked; *line: lines read
 * (the bad one on E3_DEVTAB_SYNTAX, 0 when the file cannot be read). */
errcode_t cp_devtab_load(const char *file, struct cp_devtab *t,
			 unsigned *line)
{
	struct cp_devtab_entry e, *ne;
	char *buf = NULL;
	size_t cap = 0, room = 0;
	errcode_t err = 0;
	int skip;
	FILE *fp;

	*line = 0;
	t->e = NULL;
	t->n = 0;
	fp = fopen(file, "re");
	if (!fp)
		return errno;
	while (!err && getline(&buf, &cap, fp) >= 0) {
		++*line;
		err = cp_devtab_parse_line(buf, &e, &skip);
		if (err || skip)
			continue;
		if (!devs_fit(&e)) {
			err = E3_DEVTAB_SYNTAX;
			break;
		}
		if (t->n == room) {
			room = room ? room * 2 : 16;
			ne = realloc(t->e, room * sizeof(*ne));
			if (!ne) {
				err = ENOMEM;
				break;
			}
			t->e = ne;
		}
		e.path = strdup(e.path);	/* it points into buf */
		if (!e.path) {
			err = ENOMEM;
			break;
		}
		t->e[t->n++] = e;
	}
	if (!err && ferror(fp)) {
		err = errno ? errno : EIO;
		*line = 0;
	}
	free(buf);
	fclose(fp);
	if (err)
		cp_devtab_free(t);
	return err;
}

void cp_devtab_free(struct cp_devtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->e[i].path);
	free(t->e);
	t->e = NULL;
	t->n = 0;
}

/* Paths in the table are the image's own (genext2fs' meaning), whatever
 * the destination of the sources. */
errcode_t cp_devtab_apply(struct cp_ctx *c, const struct cp_devtab *t)
{
	ext2_ino_t saved = c->dest;
	errcode_t err = 0;

	c->dest = EXT2_ROOT_INO;
	free(c->cache_path);
	c->cache_path = NULL;
	for (size_t i = 0; !err && i < t->n; i++)
		err = apply_entry(c, &t->e[i]);
	c->dest = saved;
	free(c->cache_path);
	c->cache_path = NULL;
	return err;
}
