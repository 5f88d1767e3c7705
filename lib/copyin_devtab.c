/*
 * copyin_devtab.c: genext2fs device tables (-D FILE), applied after the
 * sources. Each line is
 *     path type mode uid gid major minor start inc count
 * with type f (regular file), d (directory), c, b (devices), p (FIFO) or
 * s (socket); "-" for fields that do not apply; '#' starts a comment.
 * With a count, entries path<start> .. path<count - 1> are made, the minor
 * number growing by inc for each (genext2fs' rule: /dev/hda b ... 3 1 1 1
 * 16 makes hda1..hda15). Paths are the image's (from its root), as in
 * genext2fs, whatever the destination of the sources. An entry creates what is missing and overrides what exists
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
		return cp_make_dir(c, parent, leaf, &a, rel, &ino, NULL);
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

/* Paths in the table are the image's own (genext2fs' meaning), whatever
 * the destination of the sources. */
errcode_t cp_devtab_apply(struct cp_ctx *c, const char *file)
{
	ext2_ino_t saved = c->dest;
	struct cp_devtab_entry e;
	char *line = NULL;
	size_t cap = 0;
	errcode_t err = 0;
	int skip;
	FILE *fp;

	fp = fopen(file, "re");
	if (!fp)
		return errno;
	c->dest = EXT2_ROOT_INO;
	free(c->cache_path);
	c->cache_path = NULL;
	while (!err && getline(&line, &cap, fp) >= 0) {
		err = cp_devtab_parse_line(line, &e, &skip);
		if (!err && !skip)
			err = apply_entry(c, &e);
	}
	free(line);
	fclose(fp);
	c->dest = saved;
	free(c->cache_path);
	c->cache_path = NULL;
	return err;
}
