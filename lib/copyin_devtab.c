/*
 * copyin_devtab.c: genext2fs device tables (-D FILE), applied after the
 * sources. Each line is
 *     path type mode uid gid major minor start inc count
 * with type f (regular file), d (directory), c, b (devices), p (FIFO) or
 * s (socket); "-" for fields that do not apply; '#' starts a comment.
 * With a count, entries path<start> .. path<count - 1> are made, the minor
 * number growing by inc for each (genext2fs' rule: /dev/hda b ... 3 1 1 1
 * 16 makes hda1..hda15). Paths are taken relative to the destination
 * directory. An entry creates what is missing and overrides what exists
 * (devices are replaced; files and directories get the new mode and owner).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "image.h"
#include "copyin.h"

static errcode_t field_u32(const char *s, int base, uint32_t *v, int *dash)
{
	char *end;
	unsigned long x;

	if (dash)
		*dash = 0;
	if (strcmp(s, "-") == 0) {
		if (dash)
			*dash = 1;
		*v = 0;
		return 0;
	}
	errno = 0;
	x = strtoul(s, &end, base);
	if (errno || *end || end == s || x > UINT32_MAX)
		return E3_DEVTAB_SYNTAX;
	*v = (uint32_t)x;
	return 0;
}

errcode_t cp_devtab_parse_line(char *line, struct cp_devtab_entry *e,
			       int *skip)
{
	char *f[10], *save = NULL, *tok, *hash;
	int n = 0, dash;
	errcode_t err = 0;

	memset(e, 0, sizeof(*e));
	*skip = 0;
	hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	for (tok = strtok_r(line, " \t\r\n", &save); tok && n < 10;
	     tok = strtok_r(NULL, " \t\r\n", &save))
		f[n++] = tok;
	if (n == 0) {
		*skip = 1;
		return 0;
	}
	if (n != 10 || tok || strlen(f[1]) != 1 || !strchr("fdcbps", f[1][0]))
		return E3_DEVTAB_SYNTAX;
	e->path = f[0];
	e->type = f[1][0];
	err = field_u32(f[2], 8, &e->mode, &dash);
	if (!err && (dash || e->mode > 07777))
		err = E3_DEVTAB_SYNTAX;
	if (!err)
		err = field_u32(f[3], 10, &e->uid, NULL);
	if (!err)
		err = field_u32(f[4], 10, &e->gid, NULL);
	if (!err)
		err = field_u32(f[5], 10, &e->major, NULL);
	if (!err)
		err = field_u32(f[6], 10, &e->minor, NULL);
	if (!err)
		err = field_u32(f[7], 10, &e->start, NULL);
	if (!err)
		err = field_u32(f[8], 10, &e->inc, NULL);
	if (!err)
		err = field_u32(f[9], 10, &e->count, &dash);
	if (!err)
		e->has_count = !dash && e->count > 0;
	return err;
}

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
	if (c->epoch >= 0)
		a.atime.tv_sec = (time_t)c->epoch;
	else
		clock_gettime(CLOCK_REALTIME, &a.atime);
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
		return cp_make_dir(c, parent, leaf, &a, rel, &ino);
	case 'f':
		err = e3_create(c->img, parent, leaf, &a, 0, &f);
		return err ? err : e3_file_close(f);
	default:
		return e3_mknod(c->img, parent, leaf, &a,
				makedev(e->major, minor), &ino);
	}
}

static errcode_t apply_entry(struct cp_ctx *c, const struct cp_devtab_entry *e)
{
	size_t len = strlen(e->path) + 16;
	char *rel = malloc(len);
	errcode_t err = 0;

	if (!rel)
		return ENOMEM;
	if (!e->has_count) {
		snprintf(rel, len, "%s", e->path);
		err = cp_path_clean(rel);
		if (!err)
			err = apply_one(c, e, rel, e->minor);
		err = cp_entry_result(c, e->path, err);
	}
	for (uint32_t i = e->start; e->has_count && !err && i < e->count; i++) {
		snprintf(rel, len, "%s%u", e->path, i);
		err = cp_path_clean(rel);
		if (!err)
			err = apply_one(c, e, rel,
					e->minor + (i - e->start) * e->inc);
		err = cp_entry_result(c, rel, err);
	}
	free(rel);
	return err;
}

errcode_t cp_devtab_apply(struct cp_ctx *c, const char *file)
{
	struct cp_devtab_entry e;
	char *line = NULL;
	size_t cap = 0;
	errcode_t err = 0;
	int skip;
	FILE *fp;

	fp = fopen(file, "re");
	if (!fp)
		return errno;
	while (!err && getline(&line, &cap, fp) >= 0) {
		err = cp_devtab_parse_line(line, &e, &skip);
		if (!err && !skip)
			err = apply_entry(c, &e);
	}
	free(line);
	fclose(fp);
	return err;
}
