/*
 * cmd_rdump.c: rdump DIR... HOSTDIR — a tree out of the image, keeping
 * what debugfs' rdump drops: FIFOs, sockets and devices (devices need
 * root; where the host refuses one the request fails at the end, after
 * dumping the rest), hard links (the second name of an inode becomes a
 * link to the first), extended attributes and ACLs, owners (as root),
 * modes and times to the nanosecond (directories' after their
 * contents). A name that would escape the target (".", "..", or one
 * holding a '/') is refused. DIR lands as HOSTDIR/basename(DIR); "/" as
 * HOSTDIR itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "dbg.h"
#include "dump.h"

struct seen {
	ext2_ino_t ino;
	char *path;
};

struct rdump {
	struct dbg *d;
	struct seen *seen;		/* inodes with more than one link */
	size_t nseen, capseen;
	errcode_t first_err;
	char first_path[512];
};

static void note_err(struct rdump *r, const char *path, errcode_t err)
{
	if (r->first_err)
		return;
	r->first_err = err;
	snprintf(r->first_path, sizeof(r->first_path), "%s", path);
}

static int64_t time_ns(uint32_t extra, int has)
{
	return has ? (int64_t)(extra >> EXT4_EPOCH_BITS) : 0;
}

errcode_t dbg_fix_perms(struct dbg *d, int fd, const char *path,
			const struct ext2_inode_large *in, int is_link)
{
	const struct ext2_inode *i = (const struct ext2_inode *)in;
	int extra = EXT2_INODE_SIZE(d->fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
		    in->i_extra_isize >= 24;
	struct timespec ts[2];
	int rc;

	rc = fd >= 0 ? fchown(fd, inode_uid(*i), inode_gid(*i)) :
		       lchown(path, inode_uid(*i), inode_gid(*i));
	if (rc < 0 && !(errno == EPERM && geteuid() != 0))
		return errno;
	if (!is_link) {
		rc = fd >= 0 ? fchmod(fd, i->i_mode & 07777) :
			       chmod(path, i->i_mode & 07777);
		if (rc < 0)
			return errno;
	}
	ts[0].tv_sec = (time_t)dbg_inode_time(i->i_atime, in->i_atime_extra, extra);
	ts[0].tv_nsec = (long)time_ns(in->i_atime_extra, extra);
	ts[1].tv_sec = (time_t)dbg_inode_time(i->i_mtime, in->i_mtime_extra, extra);
	ts[1].tv_nsec = (long)time_ns(in->i_mtime_extra, extra);
	rc = fd >= 0 ? futimens(fd, ts) :
		       utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
	return rc < 0 ? errno : 0;
}

struct xa_ctx {
	const char *path;
	errcode_t err;
};

static int xattr_out(char *name, char *value, size_t len, void *priv)
{
	struct xa_ctx *x = priv;

	if (lsetxattr(x->path, name, value, len, 0) < 0 && !x->err &&
	    errno != ENOTSUP)
		x->err = errno;
	return 0;
}

static errcode_t copy_xattrs(struct dbg *d, ext2_ino_t ino, const char *path)
{
	struct ext2_xattr_handle *h;
	struct xa_ctx x = { .path = path };
	errcode_t err;

	if (!ext2fs_has_feature_xattr(d->fs->super))
		return 0;
	if ((err = ext2fs_xattrs_open(d->fs, ino, &h)))
		return err;
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattrs_iterate(h, xattr_out, &x);
	ext2fs_xattrs_close(&h);
	return err ? err : x.err;
}

static errcode_t read_link(struct dbg *d, ext2_ino_t ino,
			   struct ext2_inode *i, char *buf, size_t len)
{
	ext2_file_t ef;
	unsigned got = 0;
	errcode_t err;
	size_t size = EXT2_I_SIZE(i);

	if (size >= len)
		return ENAMETOOLONG;
	if (ext2fs_is_fast_symlink(i)) {
		memcpy(buf, i->i_block, size);
		buf[size] = '\0';
		return 0;
	}
	if ((err = ext2fs_file_open(d->fs, ino, 0, &ef)))
		return err;
	err = ext2fs_file_read(ef, buf, (unsigned)size, &got);
	ext2fs_file_close(ef);
	buf[got] = '\0';
	return err;
}

static const char *seen_path(struct rdump *r, ext2_ino_t ino)
{
	for (size_t i = 0; i < r->nseen; i++)
		if (r->seen[i].ino == ino)
			return r->seen[i].path;
	return NULL;
}

static void remember(struct rdump *r, ext2_ino_t ino, const char *path)
{
	if (r->nseen == r->capseen) {
		size_t cap = r->capseen ? 2 * r->capseen : 64;
		struct seen *n = realloc(r->seen, cap * sizeof(*n));

		if (!n)
			return;
		r->seen = n;
		r->capseen = cap;
	}
	r->seen[r->nseen].ino = ino;
	r->seen[r->nseen].path = strdup(path);
	if (r->seen[r->nseen].path)
		r->nseen++;
}

static errcode_t dump_file(struct rdump *r, ext2_ino_t ino,
			   struct ext2_inode_large *in, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	errcode_t err;

	if (fd < 0)
		return errno;
	err = dbg_copy_out(r->d, ino, fd, NULL);
	if (!err)
		err = dbg_fix_perms(r->d, fd, path, in, 0);
	if (close(fd) < 0 && !err)
		err = errno;
	return err;
}

static dev_t inode_dev(const struct ext2_inode *i)
{
	if (i->i_block[0])
		return makedev((i->i_block[0] >> 8) & 255, i->i_block[0] & 255);
	return makedev((i->i_block[1] & 0xfff00) >> 8,
		       (i->i_block[1] & 0xff) | ((i->i_block[1] >> 12) & 0xfff00));
}

static void dump_tree(struct rdump *r, ext2_ino_t ino, const char *path);

static void dump_one(struct rdump *r, ext2_ino_t ino, const char *path)
{
	struct ext2_inode_large *in = dbg_inode_buf(r->d);
	struct ext2_inode *i = (struct ext2_inode *)in;
	const char *first;
	char target[4096];
	errcode_t err = 0;
	int is_link = 0;

	if (!in) {
		note_err(r, path, ENOMEM);
		return;
	}
	err = ext2fs_read_inode_full(r->d->fs, ino, i,
				     EXT2_INODE_SIZE(r->d->fs->super));
	if (err)
		goto out;
	if (!LINUX_S_ISDIR(i->i_mode) && i->i_links_count > 1) {
		if ((first = seen_path(r, ino))) {
			if (link(first, path) < 0)
				err = errno;
			goto out;
		}
		remember(r, ino, path);
	}
	if (LINUX_S_ISDIR(i->i_mode)) {
		if (mkdir(path, 0700) < 0 && errno != EEXIST) {
			err = errno;
			goto out;
		}
		dump_tree(r, ino, path);
	} else if (LINUX_S_ISREG(i->i_mode)) {
		err = dump_file(r, ino, in, path);
		if (err)
			goto out;
	} else if (LINUX_S_ISLNK(i->i_mode)) {
		is_link = 1;
		err = read_link(r->d, ino, i, target, sizeof(target));
		if (!err && symlink(target, path) < 0)
			err = errno;
	} else if (LINUX_S_ISFIFO(i->i_mode) || LINUX_S_ISSOCK(i->i_mode) ||
		   LINUX_S_ISCHR(i->i_mode) || LINUX_S_ISBLK(i->i_mode)) {
		mode_t type = LINUX_S_ISFIFO(i->i_mode) ? S_IFIFO :
			      LINUX_S_ISSOCK(i->i_mode) ? S_IFSOCK :
			      LINUX_S_ISCHR(i->i_mode) ? S_IFCHR : S_IFBLK;

		if (mknod(path, type | 0600, inode_dev(i)) < 0)
			err = errno;
	} else {
		err = E3_BAD_FILE_TYPE;
	}
	if (err)
		goto out;
	err = copy_xattrs(r->d, ino, path);
	if (!err && !LINUX_S_ISREG(i->i_mode))
		err = dbg_fix_perms(r->d, -1, path, in, is_link);
out:
	if (err)
		note_err(r, path, err);
	free(in);
}

struct walk {
	struct rdump *r;
	const char *dir;
};

static int entry_proc(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
		      int offset, int blocksize, char *buf, void *priv)
{
	struct walk *w = priv;
	int len = ext2fs_dirent_name_len(de);
	char name[EXT2_NAME_LEN + 1], *path;

	(void)dir;
	(void)offset;
	(void)blocksize;
	(void)buf;
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE || !de->inode)
		return 0;
	memcpy(name, de->name, (size_t)len);
	name[len] = '\0';
	if (!strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/') ||
	    !*name) {
		note_err(w->r, name, E3_PATH_ESCAPES);
		return 0;
	}
	if (asprintf(&path, "%s/%s", w->dir, name) < 0) {
		note_err(w->r, name, ENOMEM);
		return DIRENT_ABORT;
	}
	dump_one(w->r, de->inode, path);
	free(path);
	return 0;
}

static void dump_tree(struct rdump *r, ext2_ino_t ino, const char *path)
{
	struct walk w = { .r = r, .dir = path };
	struct ext2_inode_large *in = dbg_inode_buf(r->d);
	errcode_t err;

	err = ext2fs_dir_iterate2(r->d->fs, ino, 0, NULL, entry_proc, &w);
	if (err)
		note_err(r, path, err);
	/* the directory's own attributes last: its times after its
	 * contents were written */
	if (!in) {
		note_err(r, path, ENOMEM);
		return;
	}
	if (!ext2fs_read_inode_full(r->d->fs, ino, (struct ext2_inode *)in,
				    EXT2_INODE_SIZE(r->d->fs->super))) {
		err = copy_xattrs(r->d, ino, path);
		if (!err)
			err = dbg_fix_perms(r->d, -1, path, in, 0);
		if (err)
			note_err(r, path, err);
	}
	free(in);
}

DBG_CMD(do_rdump)
{
	struct dbg *d = dbg_of(info);
	struct rdump r = { .d = d };
	const char *dest;
	struct stat st;

	if (dbg_args(d, argc, 3, 1 << 20, "rdump DIR... HOSTDIR"))
		return;
	dest = argv[argc - 1];
	if (stat(dest, &st) < 0 || !S_ISDIR(st.st_mode)) {
		dbg_fail(d, stat(dest, &st) < 0 ? errno : ENOTDIR, "%s", dest);
		return;
	}
	for (int a = 1; a < argc - 1 && !d->failed; a++) {
		ext2_ino_t ino = dbg_inode(d, argv[a]);
		const char *base;
		char *path;

		if (!ino)
			break;
		base = strrchr(argv[a], '/');
		base = base ? base + 1 : argv[a];
		if (ino == d->root || !*base) {
			dump_tree(&r, ino, dest);
			continue;
		}
		if (!strcmp(base, ".") || !strcmp(base, "..")) {
			dbg_fail(d, E3_PATH_ESCAPES, "%s", argv[a]);
			break;
		}
		if (asprintf(&path, "%s/%s", dest, base) < 0) {
			dbg_fail(d, ENOMEM, NULL);
			break;
		}
		dump_one(&r, ino, path);
		free(path);
	}
	if (r.first_err)
		dbg_fail(d, r.first_err, "%s", r.first_path);
	for (size_t i = 0; i < r.nseen; i++)
		free(r.seen[i].path);
	free(r.seen);
}
