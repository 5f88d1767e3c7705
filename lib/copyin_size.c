/*
 * copyin_size.c: what a source needs in an image — data blocks (holes
 * excluded: SEEK_DATA/SEEK_HOLE), indirect blocks, directory blocks
 * (entries packed as ext2fs_link packs them, plus the htree root and
 * index nodes of directories over one block), slow symlink blocks, xattr
 * blocks (when they do not fit in the inode), and inodes (hard links once).
 * Used for the early "image full" check and by e3mkfs' auto size.
 * Counts err on the high side where the layout is not known in advance
 * (shared xattr blocks are counted once per file).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "copyin.h"

#define NDIR_BLOCKS 12

/* Blocks (data + indirect) of a file of bs-byte blocks [0, nblocks). */
static uint64_t dense_blocks(unsigned bs, uint64_t nblocks)
{
	struct cp_ind_state s = { 0 };

	return nblocks + cp_ind_blocks(bs, 0, nblocks, &s);
}

/* Same for a file that may have holes: its data regions one by one. */
static uint64_t sparse_blocks(int fd, unsigned bs, uint64_t size)
{
	struct cp_ind_state s = { 0 };
	uint64_t n = 0, last = 0;
	off_t off = 0, data, hole;

	while ((uint64_t)off < size) {
		data = lseek(fd, off, SEEK_DATA);
		if (data < 0)
			break;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > size)
			hole = (off_t)size;
		uint64_t b0 = (uint64_t)data / bs;
		uint64_t b1 = ((uint64_t)hole + bs - 1) / bs;

		if (n && b0 < last)
			b0 = last;	/* region edges inside one block */
		if (b1 > b0) {
			n += (b1 - b0) + cp_ind_blocks(bs, b0, b1 - b0, &s);
			last = b1;
		}
		off = hole;
	}
	return n;
}

static uint64_t rec_len(size_t name_len)
{
	return (8 + name_len + 3) & ~(uint64_t)3;
}

/* Room for xattrs inside a large inode (after the 32-byte extra fields
 * mke2fs asks for and the 4-byte header). */
static uint64_t xattr_blocks(int fd, const char *path, unsigned inode_size)
{
	char names[4096];
	ssize_t len, v;
	uint64_t need = 4;

	len = fd >= 0 ? flistxattr(fd, names, sizeof(names))
		      : llistxattr(path, names, sizeof(names));
	if (len <= 0)
		return 0;
	for (char *p = names; p < names + len; p += strlen(p) + 1) {
		const char *dot = strchr(p, '.');

		v = fd >= 0 ? fgetxattr(fd, p, NULL, 0) : lgetxattr(path, p, NULL, 0);
		if (v < 0)
			continue;
		need += 16 + ((strlen(dot ? dot + 1 : p) + 3) & ~3u) +
			(((size_t)v + 3) & ~(size_t)3);
	}
	if (need <= 4)
		return 0;
	if (inode_size > EXT2_GOOD_OLD_INODE_SIZE + 32 + 4 &&
	    need <= inode_size - EXT2_GOOD_OLD_INODE_SIZE - 32 - 4)
		return 0;
	return 1;
}

struct measure {
	unsigned bs, isz;
	struct e3_copyin_need *need;
	struct cp_linkmap *links;
};

static errcode_t measure_dir(struct measure *m, int dirfd, const char *path);

static errcode_t measure_entry(struct measure *m, int dirfd, const char *name,
			       const char *path)
{
	struct stat st;
	uint64_t nb;
	int fd;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;	/* the copy will report it */
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
		if (cp_linkmap_get(m->links, st.st_dev, st.st_ino))
			return 0;
		cp_linkmap_put(m->links, st.st_dev, st.st_ino, 1);
	}
	m->need->inodes++;
	if (S_ISDIR(st.st_mode)) {
		m->need->dirs++;
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		if (fd < 0)
			return 0;
		m->need->blocks += xattr_blocks(fd, path, m->isz);
		errcode_t err = measure_dir(m, fd, path);

		close(fd);
		return err;
	}
	m->need->files++;
	if (S_ISREG(st.st_mode)) {
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return 0;
		nb = ((uint64_t)st.st_size + m->bs - 1) / m->bs;
		/* fewer blocks on disk than the size says: look for holes */
		if ((uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size)
			nb = sparse_blocks(fd, m->bs, (uint64_t)st.st_size);
		else
			nb = dense_blocks(m->bs, nb);
		m->need->blocks += nb + xattr_blocks(fd, path, m->isz);
		m->need->bytes += (uint64_t)st.st_size;
		close(fd);
		return 0;
	}
	if (S_ISLNK(st.st_mode) && st.st_size >= 60)
		m->need->blocks += ((uint64_t)st.st_size + m->bs - 1) / m->bs;
	m->need->blocks += xattr_blocks(-1, path, m->isz);
	return 0;
}

/* Blocks of one directory of these entries, as the copy will lay it out. */
static uint64_t dir_blocks(unsigned bs, char **names, size_t n)
{
	uint64_t used = 24, blocks = 1, bytes = 0, leaves, idx = 0;
	struct cp_ind_state s = { 0 };

	for (size_t i = 0; i < n; i++) {
		uint64_t r = rec_len(strlen(names[i]));

		bytes += r;
		if (used + r > bs) {
			blocks++;
			used = r;
		} else {
			used += r;
		}
	}
	if (blocks > 1) {
		/* htree: a root block, then leaves; index nodes when the root
		 * cannot point at every leaf */
		leaves = blocks;
		if (leaves > (bs - 32) / 8)
			idx = (leaves + (bs - 8) / 8 - 1) / ((bs - 8) / 8);
		blocks = 1 + leaves + idx;
	}
	return blocks + cp_ind_blocks(bs, 0, blocks, &s);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static errcode_t measure_dir(struct measure *m, int dirfd, const char *path)
{
	char **names = NULL, **nn, *sub;
	size_t n = 0, cap = 0;
	struct dirent *de;
	errcode_t err = 0;
	DIR *d;
	int dfd = dup(dirfd);

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				err = ENOMEM;
				break;
			}
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name))) {
			err = ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (!err)
		m->need->blocks += dir_blocks(m->bs, names, n);
	for (size_t i = 0; i < n && !err; i++) {
		size_t len = strlen(path) + strlen(names[i]) + 2;

		sub = malloc(len);
		if (!sub) {
			err = ENOMEM;
			break;
		}
		snprintf(sub, len, "%s/%s", path, names[i]);
		err = measure_entry(m, dirfd, names[i], sub);
		free(sub);
	}
	free_names(names, n);
	return err;
}

errcode_t cp_measure_tree(const char *src, unsigned blocksize,
			  unsigned inode_size, struct e3_copyin_need *need)
{
	struct measure m = { .bs = blocksize, .isz = inode_size, .need = need };
	struct stat st;
	errcode_t err;
	int fd;

	memset(need, 0, sizeof(*need));
	if (stat(src, &st) < 0)
		return errno;
	err = cp_linkmap_create(&m.links);
	if (err)
		return err;
	if (S_ISDIR(st.st_mode)) {
		fd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			err = errno;
		} else {
			err = measure_dir(&m, fd, src);
			close(fd);
		}
	} else {
		char *d1 = strdup(src), *d2 = strdup(src);

		if (!d1 || !d2) {
			err = ENOMEM;
		} else {
			fd = open(dirname(d1), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			err = fd < 0 ? errno : measure_entry(&m, fd, basename(d2), src);
			if (fd >= 0)
				close(fd);
		}
		free(d1);
		free(d2);
	}
	cp_linkmap_free(m.links);
	return err;
}

errcode_t e3_copyin_measure(const char *const *srcs, size_t nsrcs,
			    unsigned blocksize, unsigned inode_size,
			    struct e3_copyin_need *need)
{
	struct e3_copyin_need n;
	errcode_t err;

	memset(need, 0, sizeof(*need));
	for (size_t i = 0; i < nsrcs; i++) {
		if (strcmp(srcs[i], "-") == 0 || cp_is_archive(srcs[i]))
			return E3_SOURCE_TYPE;	/* streams are not measured */
		err = cp_measure_tree(srcs[i], blocksize, inode_size, &n);
		if (err)
			return err;
		need->blocks += n.blocks;
		need->inodes += n.inodes;
		need->files += n.files;
		need->dirs += n.dirs;
		need->bytes += n.bytes;
	}
	return 0;
}
