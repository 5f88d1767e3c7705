/*
 * copyin_label.c: SELinux labels from a file_contexts file
 * (--file-contexts, as e2fsdroid -S and setfiles -r give them): once
 * everything is copied, every entry under each source's destination (the
 * destination itself included; for a file copied to a name, that file)
 * gets security.selinux from
 * selabel_lookup of its path in the image, prefixed with --selinux-root
 * for an image that is mounted elsewhere than at /, and its mode. The
 * label replaces one copied from the source; a path the file does not
 * match keeps what it has. Directories are walked in name order, so the
 * image is the same for the same input (a hard link gets the label of
 * its last path in that order).
 *
 * The value is stored with its terminating NUL, as setfiles and the
 * kernel store it.
 *
 * The measure pass counts the labels ahead (so that a tree that fits
 * only without them is refused before anything is written): each
 * source entry's label is added to its xattrs (cp_label_entry_bytes,
 * called by copyin_size.c and copyin_archsize.c), and the entries the
 * image already holds under a destination are walked as they will be
 * labelled (cp_label_tree with c->label_need set): one that has no xattr
 * block and no room left in its inode for the label will get a block,
 * and so will one whose block other inodes share (the write copies it). Shared xattr
 * blocks are counted once per inode, as copyin_size.c counts them: the
 * count errs high.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <selinux/label.h>
#include <selinux/selinux.h>

#include "fs/image.h"
#include "copyin.h"

/* libselinux logs bad lines and contexts to stderr by default; the
 * library never prints (the tool reports the errcode_t it gets). */
static int quiet_log(int type, const char *fmt, ...)
{
	(void)type;
	(void)fmt;
	return 0;
}

errcode_t cp_label_open(const char *file, struct selabel_handle **ret)
{
	struct selinux_opt opt = { SELABEL_OPT_PATH, file };
	union selinux_callback cb = { .func_log = quiet_log };

	/* process-wide in libselinux: set, never restored, so two images
	 * labelled at once see the same (silent) logger */
	selinux_set_callback(SELINUX_CB_LOG, cb);
	*ret = selabel_open(SELABEL_CTX_FILE, &opt, 1);
	if (*ret)
		return 0;
	return errno ? (errcode_t)errno : E3_FILE_CONTEXTS_BAD;
}

void cp_label_close(struct selabel_handle *h)
{
	if (h)
		selabel_close(h);
}

struct lent {
	char *name;
	ext2_ino_t ino;
};

struct lents {
	struct lent *v;
	size_t n, cap;
	errcode_t err;
};

static int collect(struct ext2_dir_entry *d, int offset, int blocksize,
		   char *buf, void *priv)
{
	struct lents *l = priv;
	size_t len = ext2fs_dirent_name_len(d);
	struct lent *v;

	(void)offset; (void)blocksize; (void)buf;
	if ((len == 1 && d->name[0] == '.') ||
	    (len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;

		v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			l->err = ENOMEM;
			return DIRENT_ABORT;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].name = strndup(d->name, len);
	if (!l->v[l->n].name) {
		l->err = ENOMEM;
		return DIRENT_ABORT;
	}
	l->v[l->n++].ino = d->inode;
	return 0;
}

static int lent_cmp(const void *x, const void *y)
{
	return strcmp(((const struct lent *)x)->name,
		      ((const struct lent *)y)->name);
}

/* An xattr entry of the label con: header, name "selinux" (the prefix
 * is an index), value with its NUL, each rounded up to 4 bytes. */
static uint64_t label_bytes(const char *con)
{
	return 16 + 8 + ((strlen(con) + 1 + 3) & ~(uint64_t)3);
}

/* The index of con among the labels met. l->lock held. */
static size_t label_id(struct cp_lmeasure *l, const char *con)
{
	size_t i;

	for (i = 0; i < l->nshared; i++)
		if (!strcmp(l->shared[i].con, con))
			return i;
	if (l->nshared == l->capshared) {
		size_t cap = l->capshared ? l->capshared * 2 : 16;
		struct cp_lshare *v = realloc(l->shared, cap * sizeof(*v));

		if (!v)
			return SIZE_MAX;
		l->shared = v;
		l->capshared = cap;
	}
	l->shared[i].con = strdup(con);
	if (!l->shared[i].con)
		return SIZE_MAX;
	l->shared[i].n = 0;
	l->nshared++;
	return i;
}

uint64_t cp_label_entry_bytes(struct cp_lmeasure *l, const char *rel,
			      uint32_t mode, size_t *id)
{
	const char *root = l->root && strcmp(l->root, "/") ? l->root : "";
	char *key = NULL, *con = NULL;
	uint64_t n = 0;

	*id = SIZE_MAX;
	while (*rel == '/')
		rel++;
	if (asprintf(&key, "%s%s%s%s", root, l->dest_path, *rel ? "/" : "",
		     rel) < 0)
		return 0;
	pthread_mutex_lock(&l->lock);
	if (selabel_lookup(l->h, &con, key[0] ? key : "/", mode) == 0) {
		n = label_bytes(con);
		*id = label_id(l, con);
		freecon(con);
	}
	pthread_mutex_unlock(&l->lock);
	free(key);
	return n;
}

/* The copy (fs/xattr.c) shares identical xattr blocks up to the
 * kernel's refcount limit (1024 inodes a block). */
#define LABEL_SHARE_MAX 1024

uint64_t cp_label_room(struct cp_lmeasure *l, unsigned inode_size,
		       uint64_t others, uint64_t label, size_t id)
{
	uint64_t b = cp_xattr_room_blocks(inode_size, 4 + others + label);

	if (b && !others && label && id != SIZE_MAX) {
		pthread_mutex_lock(&l->lock);
		l->shared[id].n++;
		pthread_mutex_unlock(&l->lock);
		return 0;		/* counted in cp_label_shared_blocks */
	}
	return b;
}

uint64_t cp_label_shared_blocks(struct cp_lmeasure *l)
{
	uint64_t b = 0;

	for (size_t i = 0; i < l->nshared; i++)
		b += (l->shared[i].n + LABEL_SHARE_MAX - 1) / LABEL_SHARE_MAX;
	return b;
}

void cp_lmeasure_free(struct cp_lmeasure *l)
{
	for (size_t i = 0; i < l->nshared; i++)
		free(l->shared[i].con);
	free(l->shared);
	l->shared = NULL;
	l->nshared = l->capshared = 0;
}

struct xsum {
	uint64_t bytes;
};

static int xsum_one(char *name, char *value, size_t len, void *priv)
{
	struct xsum *x = priv;
	const char *dot = strchr(name, '.');

	(void)value;
	if (strcmp(name, "security.selinux"))	/* the label replaces it */
		x->bytes += 16 + ((strlen(dot ? dot + 1 : name) + 3) & ~3u) +
			    ((len + 3) & ~(size_t)3);
	return 0;
}

/* The measure's count for one entry the image holds: a block when the
 * label pushes its xattrs out of an inode that has no xattr block, or
 * when its block is shared with other inodes (the write copies it). */
static errcode_t measure_one(struct cp_ctx *c, ext2_ino_t ino,
			     const char *con)
{
	struct cp_lmeasure *l = c->label_need;
	ext2_filsys fs = c->img->fs;
	struct ext2_ext_attr_header *hdr = NULL;
	struct ext2_xattr_handle *h;
	struct ext2_inode in;
	struct xsum x = { 0 };
	int shared = 0;
	blk64_t ea = 0;
	errcode_t err;
	size_t id;

	e3_fs_lock(c->img);
	err = ext2fs_read_inode(fs, ino, &in);
	if (!err && (ea = ext2fs_file_acl_block(fs, &in)) &&
	    !(err = ext2fs_get_mem(fs->blocksize, &hdr))) {
		err = ext2fs_read_ext_attr3(fs, ea, hdr, ino);
		shared = !err && hdr->h_refcount > 1;
		ext2fs_free_mem(&hdr);
	}
	if (!err && (!ea || shared)) {
		err = ext2fs_xattrs_open(fs, ino, &h);
		if (!err) {
			err = ext2fs_xattrs_read(h);
			if (!err)
				err = ext2fs_xattrs_iterate(h, xsum_one, &x);
			ext2fs_xattrs_close(&h);
		}
	}
	e3_fs_unlock(c->img);
	if (err)
		return err;
	if (ea && !shared)
		return 0;		/* the label joins its own block */
	pthread_mutex_lock(&l->lock);
	id = label_id(l, con);
	pthread_mutex_unlock(&l->lock);
	/* a shared block is copied on write: a block of its own, unless
	 * the label alone is left to share */
	l->blocks += shared && x.bytes ? 1 :
		     cp_label_room(l, EXT2_INODE_SIZE(fs->super), x.bytes,
				   label_bytes(con), id);
	return 0;
}

/* One entry: its label looked up and set (measure: counted). */
static errcode_t label_one(struct cp_ctx *c, ext2_ino_t ino, const char *path,
			   uint16_t mode)
{
	const char *root = c->o->selinux_root;
	char *key = NULL, *con = NULL;
	errcode_t err = 0;

	if (asprintf(&key, "%s%s", root && strcmp(root, "/") ? root : "",
		     path) < 0)
		return ENOMEM;
	if (selabel_lookup(c->label, &con, key, mode) < 0) {
		err = errno == ENOENT ? 0 : errno ? (errcode_t)errno :
						   E3_FILE_CONTEXTS_BAD;
	} else if (c->label_need) {
		err = measure_one(c, ino, con);
		freecon(con);
	} else {
		/* the write takes a new xattr block before fs/xattr.c finds
		 * its shared twin and frees it again, and a freed block is
		 * reusable only once the journal commits: near the end of
		 * the free space (where the measure let the copy go), the
		 * blocks so freed are committed first */
		err = cp_release_freed(c, 2);
		if (!err)
			err = e3_setxattr(c->img, ino, "security.selinux",
					  con, strlen(con) + 1);
		freecon(con);
	}
	free(key);
	return err;
}

/* dir (at path, "" for the root) and everything under it. */
static errcode_t label_dir(struct cp_ctx *c, ext2_ino_t dir, const char *path,
			   unsigned depth)
{
	struct lents l = { 0 };
	errcode_t err;
	uint16_t mode;
	char *sub;

	if (depth > 4096)
		return E3_PATH_ESCAPES;	/* a loop the image should not have */
	e3_fs_lock(c->img);
	err = ext2fs_dir_iterate(c->img->fs, dir, 0, NULL, collect, &l);
	e3_fs_unlock(c->img);
	if (!err)
		err = l.err;
	if (!err && l.n)
		qsort(l.v, l.n, sizeof(*l.v), lent_cmp);
	for (size_t i = 0; !err && i < l.n; i++) {
		if (asprintf(&sub, "%s/%s", path, l.v[i].name) < 0) {
			err = ENOMEM;
			break;
		}
		err = cp_ino_mode(c, l.v[i].ino, &mode);
		if (!err)
			err = label_one(c, l.v[i].ino, sub, mode);
		if (!err && LINUX_S_ISDIR(mode))
			err = label_dir(c, l.v[i].ino, sub, depth + 1);
		free(sub);
	}
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i].name);
	free(l.v);
	return err;
}

/* One destination: the entry at dest_path (a directory, or the file one
 * SRC was copied to by name) and, for a directory, all under it. */
static errcode_t label_root(struct cp_ctx *c, const char *dest_path)
{
	char *dest = strdup(dest_path ? dest_path : "/"), *path = NULL;
	ext2_ino_t ino;
	uint16_t mode;
	errcode_t err;

	if (!dest)
		return ENOMEM;
	err = cp_path_clean(dest);	/* "a/b", or "" for the root */
	if (!err && asprintf(&path, "%s%s", dest[0] ? "/" : "", dest) < 0) {
		path = NULL;
		err = ENOMEM;
	}
	if (!err)
		err = e3_namei(c->img, path[0] ? path : "/", &ino);
	if (err && c->label_need && cp_is_missing(err)) {
		err = 0;	/* measure: made by the copy, counted there */
		goto out;
	}
	if (!err)
		err = cp_ino_mode(c, ino, &mode);
	if (!err)
		err = label_one(c, ino, path[0] ? path : "/", mode);
	if (!err && LINUX_S_ISDIR(mode))
		err = label_dir(c, ino, path, 0);
out:
	free(path);
	free(dest);
	return err;
}

errcode_t cp_label_tree(struct cp_ctx *c, const char *const *roots,
			size_t n)
{
	errcode_t err = 0;

	for (size_t i = 0; !err && i < n; i++) {
		size_t j;

		for (j = 0; j < i && strcmp(roots[j], roots[i]); j++)
			;
		if (j == i)	/* each destination once */
			err = label_root(c, roots[i]);
	}
	return err;
}
