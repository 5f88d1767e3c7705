/*
 * util.c: the helpers every request uses (dbg.h): failures recorded
 * once, argument counts, read-only and -c refusals, inode specs and
 * paths, numbers, inode reads, debugfs' time text.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dbg.h"

void dbg_fail(struct dbg *d, errcode_t err, const char *fmt, ...)
{
	char msg[768] = "";
	va_list ap;

	if (d->failed)
		return;
	d->failed = 1;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	if (fmt && err)
		snprintf(d->errmsg, sizeof(d->errmsg), "%s: %s", msg,
			 error_message(err));
	else if (fmt)
		snprintf(d->errmsg, sizeof(d->errmsg), "%s", msg);
	else
		snprintf(d->errmsg, sizeof(d->errmsg), "%s", error_message(err));
}

int dbg_args(struct dbg *d, int argc, int min, int max, const char *usage)
{
	if (argc >= min && argc <= max)
		return 0;
	dbg_fail(d, 0, "usage: %s", usage);
	return 1;
}

int dbg_need_rw(struct dbg *d)
{
	if (d->img)
		return 0;
	dbg_fail(d, 0, d->catastrophic ?
		 "read-only: -c (catastrophic mode) never writes" :
		 "read-only: open the image with -w");
	return 1;
}

int dbg_need_bitmaps(struct dbg *d)
{
	if (!d->catastrophic)
		return 0;
	dbg_fail(d, 0, "bitmaps not loaded (-c)");
	return 1;
}

ext2_ino_t dbg_inode(struct dbg *d, const char *spec)
{
	size_t len = strlen(spec);
	ext2_ino_t ino;
	errcode_t err;

	if (len > 2 && spec[0] == '<' && spec[len - 1] == '>') {
		char *end;
		unsigned long v = strtoul(spec + 1, &end, 0);

		if (end != spec + len - 1 || v < 1 ||
		    v > d->fs->super->s_inodes_count) {
			dbg_fail(d, 0, "%s: bad inode number", spec);
			return 0;
		}
		return (ext2_ino_t)v;
	}
	err = ext2fs_namei(d->fs, d->root, d->cwd, spec, &ino);
	if (err) {
		dbg_fail(d, err == EXT2_ET_FILE_NOT_FOUND ? E3_NOT_FOUND : err,
			 "%s", spec);
		return 0;
	}
	return ino;
}

ext2_ino_t dbg_parent(struct dbg *d, const char *path, char *buf, size_t len,
		      const char **name)
{
	char *slash;
	ext2_ino_t dir;

	if (strlen(path) >= len) {
		dbg_fail(d, 0, "%s: path too long", path);
		return 0;
	}
	strcpy(buf, path);
	/* "a/b/" names b */
	while (strlen(buf) > 1 && buf[strlen(buf) - 1] == '/')
		buf[strlen(buf) - 1] = '\0';
	slash = strrchr(buf, '/');
	if (!slash) {
		*name = buf;
		dir = d->cwd;
	} else {
		*slash = '\0';
		*name = slash + 1;
		dir = dbg_inode(d, slash == buf ? "/" : buf);
		if (!dir)
			return 0;
	}
	if (!**name) {
		dbg_fail(d, E3_BAD_NAME, "%s", path);
		return 0;
	}
	return dir;
}

int dbg_number(struct dbg *d, const char *s, const char *what,
	       unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (!*s || *end || errno || *s == '-') {
		dbg_fail(d, 0, "bad %s: %s", what, s);
		return 1;
	}
	return 0;
}

struct ext2_inode_large *dbg_inode_buf(struct dbg *d)
{
	size_t size = EXT2_INODE_SIZE(d->fs->super);

	if (size < sizeof(struct ext2_inode_large))
		size = sizeof(struct ext2_inode_large);
	return calloc(1, size);
}

int dbg_read_inode(struct dbg *d, ext2_ino_t ino, const char *spec,
		   struct ext2_inode_large *buf)
{
	errcode_t err = ext2fs_read_inode_full(d->fs, ino,
					       (struct ext2_inode *)buf,
					       EXT2_INODE_SIZE(d->fs->super));

	if (err) {
		dbg_fail(d, err, "%s", spec);
		return 1;
	}
	return 0;
}

int64_t dbg_inode_time(uint32_t lo, uint32_t extra, int has_extra)
{
	int64_t t = (int32_t)lo;

	if (has_extra)
		t += (int64_t)(extra & EXT4_EPOCH_MASK) << 32;
	return t;
}

const char *dbg_time(int64_t t, char buf[64])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm) || !asctime_r(&tm, buf))
		snprintf(buf, 64, "%lld\n", (long long)t);
	return buf;
}

int dbg_getopt(int argc, const char *const *argv, const char *opts)
{
	opterr = 0;
	return getopt(argc, (char *const *)argv, opts);
}

void dbg_new_attr(struct e3_attr *a, uint32_t mode)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	if (sde && *sde) {
		now.tv_sec = (time_t)strtoll(sde, NULL, 10);
		now.tv_nsec = 0;
	}
	memset(a, 0, sizeof(*a));
	a->mode = mode;
	a->atime = a->mtime = a->ctime = now;
}

struct parent_find {
	ext2_ino_t ino, dir, found;
};

static int parent_entry(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
			int offset, int blocksize, char *buf, void *priv)
{
	struct parent_find *p = priv;
	int len = ext2fs_dirent_name_len(de);

	(void)dir; (void)entry; (void)offset; (void)blocksize; (void)buf;
	if (de->inode != p->ino || (len == 1 && de->name[0] == '.') ||
	    (len == 2 && de->name[0] == '.' && de->name[1] == '.'))
		return 0;
	p->found = p->dir;
	return DIRENT_ABORT;
}

/* The first directory with an entry naming ino (0: none), as ncheck. */
static ext2_ino_t parent_of(ext2_filsys fs, ext2_ino_t ino)
{
	struct parent_find p = { ino, 0, 0 };
	ext2_inode_scan scan;
	struct ext2_inode in;
	ext2_ino_t dir;

	if (ext2fs_open_inode_scan(fs, 0, &scan))
		return 0;
	while (!p.found && !ext2fs_get_next_inode(scan, &dir, &in) && dir) {
		if (!in.i_links_count || !LINUX_S_ISDIR(in.i_mode))
			continue;
		p.dir = dir;
		ext2fs_dir_iterate2(fs, dir, 0, NULL, parent_entry, &p);
	}
	ext2fs_close_inode_scan(scan);
	return p.found;
}

/* ino's path (ext2fs_get_pathname from its directory); NULL if none. */
char *dbg_path_of(ext2_filsys fs, ext2_ino_t ino)
{
	struct ext2_inode in;
	ext2_ino_t dir;
	char *name = NULL;

	if (ext2fs_read_inode(fs, ino, &in))
		return NULL;
	if (LINUX_S_ISDIR(in.i_mode))
		dir = ino, ino = 0;
	else if (!(dir = parent_of(fs, ino)))
		return NULL;
	if (ext2fs_get_pathname(fs, dir, ino, &name))
		return NULL;
	return name;
}
