/*
 * copyin_size.c: what a source needs in an image — data blocks (holes
 * excluded: SEEK_DATA/SEEK_HOLE), indirect blocks, directory blocks
 * (entries packed as ext2fs_link packs them; over one block, htree.c's
 * bound on the layout e2fsck -fD would give), slow symlink blocks, xattr
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
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "copyin.h"
#include "util/grow.h"

#define NDIR_BLOCKS 12

/* Blocks (data + indirect) of a file of bs-byte blocks [0, nblocks). */
static uint64_t dense_blocks(unsigned bs, uint64_t nblocks)
{
	struct cp_ind_state s = { 0 };

	return nblocks + cp_ind_blocks(bs, 0, nblocks, &s);
}

void cp_regions_add(struct cp_regions *r, unsigned bs, uint64_t start,
		    uint64_t end)
{
	uint64_t b0 = start / bs, b1 = (end + bs - 1) / bs;

	if (r->n && b0 < r->last)
		b0 = r->last;	/* region edges inside one block */
	if (b1 > b0) {
		r->n += (b1 - b0) + cp_ind_blocks(bs, b0, b1 - b0, &r->ind);
		r->last = b1;
	}
}

uint64_t cp_xattr_room_blocks(unsigned inode_size, uint64_t need)
{
	if (need <= 4)
		return 0;
	if (inode_size > EXT2_GOOD_OLD_INODE_SIZE + 32 + 4 &&
	    need <= inode_size - EXT2_GOOD_OLD_INODE_SIZE - 32 - 4)
		return 0;
	return 1;
}

/* An inode body's room for xattr entries and values (after the 32 extra
 * bytes, the 4-byte magic and the 4-byte end of entries), and a block's
 * (after its 32-byte header and the end of entries). */
static uint64_t ibody_room(unsigned isz)
{
	return isz > EXT2_GOOD_OLD_INODE_SIZE + 32 + 8 ?
	       isz - EXT2_GOOD_OLD_INODE_SIZE - 32 - 8 : 0;
}

errcode_t cp_xattr_check(unsigned bs, unsigned isz, uint64_t need,
			 uint64_t largest)
{
	uint64_t body = ibody_room(isz), block = bs - 32 - 4;

	/* each entry lies whole in the inode or in the block: these are
	 * bounds, so what fails them fails the copy for sure */
	if (need > 4 + body + block)
		return E3_XATTR_TOO_BIG;
	if (largest > body && largest > block)
		return E3_XATTR_TOO_BIG;
	return 0;
}

int cp_next_region(int fd, off_t off, uint64_t size, off_t *data,
		   off_t *hole)
{
	if ((uint64_t)off >= size)
		return 1;
	*data = lseek(fd, off, SEEK_DATA);
	if (*data < 0) {
		if (errno == ENXIO)
			return 1;		/* a hole to the end */
		*data = off;			/* no SEEK_DATA here */
		*hole = (off_t)size;
	} else {
		*hole = lseek(fd, *data, SEEK_HOLE);
		if (*hole < 0)
			*hole = (off_t)size;
	}
	if ((uint64_t)*hole > size)
		*hole = (off_t)size;
	return 0;
}

uint64_t cp_sparse_blocks(int fd, unsigned bs, uint64_t size)
{
	struct cp_regions r = { 0 };
	off_t off = 0, data, hole;

	/* the regions copy_regions (copyin_tree.c) will copy, found the
	 * same way: the file's window is this count, exactly */
	while (!cp_next_region(fd, off, size, &data, &hole)) {
		if (data < hole)
			cp_regions_add(&r, bs, (uint64_t)data, (uint64_t)hole);
		off = hole;
		if ((uint64_t)data >= size)
			break;
	}
	return r.n;
}

static uint64_t rec_len(size_t name_len)
{
	return (8 + name_len + 3) & ~(uint64_t)3;
}

/*
 * The walk runs on several threads (it is a stat of every entry, and the
 * copy cannot start before it ends): a shared stack of directories still
 * to read; each thread pops one, reads and measures its entries, and
 * pushes the subdirectories it found. Sums do not depend on the order.
 *
 * LOCKING: m->lock guards the stack, busy, err, the totals and the
 * hard-link map; a thread measures one directory without it.
 */
struct measure {
	unsigned bs, isz;
	const char *root;		/* the source directory itself */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct mdir *stack;		/* [lock] directories to read */
	size_t n, cap;			/* [lock] */
	unsigned busy;			/* [lock] threads reading a directory */
	errcode_t err;			/* [lock] first error: everyone stops */
	struct e3_copyin_need total;	/* [lock] */
	struct cp_linkmap *links;	/* [lock] */
	ext2_ino_t nlinked;		/* [lock] sources in links */
	struct cp_listings *keep;	/* own lock; NULL: listings dropped */
	size_t kept;			/* [lock] bytes of listings kept */
	int no_xattrat;			/* [atomic] see cp_llistxattr_at */
	struct cp_noatime noatime;	/* for cp_openat */
	char *bad_path;			/* [lock] xattrs too big: who */
	uint64_t bad_size;		/* [lock] and their bytes */
	struct cp_lmeasure *label;	/* own lock; NULL: no labels */
};

/* Room for xattrs inside a large inode (after the 32-byte extra fields
 * mke2fs asks for and the 4-byte header): those of fd (fd >= 0), or of
 * the entry name in dirfd, whose path is path. Xattrs that cannot fit
 * at all are E3_XATTR_TOO_BIG, the first such entry kept in m. */
static errcode_t xattr_blocks(struct measure *m, int fd, int dirfd,
			      const char *name, const char *path,
			      uint32_t mode, unsigned char *none,
			      uint64_t *blocks)
{
	char names[4096];
	const char *rel;
	ssize_t len, v;
	uint64_t need = 4, one, largest = 0, label = 0;
	size_t id = SIZE_MAX;
	errcode_t err;

	*blocks = 0;
	len = fd >= 0 ? flistxattr(fd, names, sizeof(names))
		      : cp_llistxattr_at(dirfd, name, path, names,
					 sizeof(names), &m->no_xattrat);
	*none = len == 0;
	/* --file-contexts: the label this entry will get, at its path
	 * under the destination (a file source: its own name there) */
	rel = strlen(path) > strlen(m->root) ? path + strlen(m->root) :
	      strrchr(path, '/') ? strrchr(path, '/') : path;
	if (m->label)
		label = cp_label_entry_bytes(m->label, rel, mode, &id);
	if (len <= 0 && !label)
		return 0;
	for (char *p = names; len > 0 && p < names + len;
	     p += strlen(p) + 1) {
		const char *dot = strchr(p, '.');

		if (label && !strcmp(p, "security.selinux"))
			continue;	/* the label replaces it */
		v = fd >= 0 ? fgetxattr(fd, p, NULL, 0) : lgetxattr(path, p, NULL, 0);
		if (v < 0)
			continue;
		one = 16 + ((strlen(dot ? dot + 1 : p) + 3) & ~3u) +
		      (((size_t)v + 3) & ~(size_t)3);
		need += one;
		if (one > largest)
			largest = one;
	}
	err = cp_xattr_check(m->bs, m->isz, need + label,
			     label > largest ? label : largest);
	if (err) {
		pthread_mutex_lock(&m->lock);
		if (!m->bad_path) {
			m->bad_path = strdup(path);
			m->bad_size = need + label - 4;
		}
		pthread_mutex_unlock(&m->lock);
		return err;
	}
	*blocks = label ? cp_label_room(m->label, m->isz, need - 4, label, id) :
			  cp_xattr_room_blocks(m->isz, need);
	return 0;
}

/* A directory to read: its path, and its identity for the listing. */
struct mdir {
	char *path;
	uint64_t dev, ino;
	uid_t uid;			/* its owner, for cp_noatime_for */
};

/* One directory's worth, summed without the lock. */
struct dir_sum {
	struct e3_copyin_need need;
	struct mdir *subdirs;
	size_t nsub, capsub;
};

static errcode_t add_subdir(struct dir_sum *ds, const char *path,
			    const struct stat *st)
{
	struct mdir *p = e3_grow(ds->subdirs, ds->nsub, &ds->capsub,
				 sizeof(*p), 16);

	if (!p)
		return ENOMEM;
	ds->subdirs = p;
	ds->subdirs[ds->nsub].path = strdup(path);
	if (!ds->subdirs[ds->nsub].path)
		return ENOMEM;
	ds->subdirs[ds->nsub].dev = st->st_dev;
	ds->subdirs[ds->nsub].ino = st->st_ino;
	ds->subdirs[ds->nsub].uid = st->st_uid;
	ds->nsub++;
	return 0;
}

/* Hard links count once: 1 when (dev, ino) was met before. */
static int seen_link(struct measure *m, const struct stat *st)
{
	int seen;

	pthread_mutex_lock(&m->lock);
	seen = cp_linkmap_get(m->links, st->st_dev, st->st_ino) != 0;
	/* each source its own number: the map keeps one source per number */
	if (!seen)
		cp_linkmap_put(m->links, st->st_dev, st->st_ino, ++m->nlinked);
	pthread_mutex_unlock(&m->lock);
	return seen;
}

/* d->st is filled here (or d->stat_err): the copy pass reuses it. */
static errcode_t measure_entry(struct measure *m, struct dir_sum *ds,
			       int dirfd, struct cp_dent *d, const char *path)
{
	struct e3_copyin_need *need = &ds->need;
	struct stat sbuf, *st = &sbuf;
	uint64_t nb, xb;
	errcode_t err;
	int fd;

	d->measured = 1;
	d->no_xattrs = 0;
	d->counted = 0;
	d->need_blocks = 0;
	if (fstatat(dirfd, d->name, st, AT_SYMLINK_NOFOLLOW) < 0) {
		d->stat_err = errno;
		return 0;	/* the copy will report it */
	}
	cp_stat_pack(&d->st, st);
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1 && seen_link(m, st))
		return 0;
	need->inodes++;
	d->counted = 1;
	if (S_ISDIR(st->st_mode)) {
		need->dirs++;
		return add_subdir(ds, path, st); /* its xattrs when it is read */
	}
	need->files++;
	if (S_ISREG(st->st_mode)) {
		nb = ((uint64_t)st->st_size + m->bs - 1) / m->bs;
		nb = dense_blocks(m->bs, nb);
		/* fewer blocks on disk than the size says: look for holes
		 * (the only case that needs the file opened) */
		if ((uint64_t)st->st_blocks * 512 < (uint64_t)st->st_size &&
		    (fd = cp_openat(dirfd, d->name, O_RDONLY | O_NOFOLLOW,
				    cp_noatime_for(&m->noatime, st->st_uid))) >= 0) {
			nb = cp_sparse_blocks(fd, m->bs,
					      (uint64_t)st->st_size);
			close(fd);
		}
		err = xattr_blocks(m, -1, dirfd, d->name, path, st->st_mode,
				   &d->no_xattrs, &xb);
		if (err)
			return err;
		nb += xb;
		need->blocks += nb;
		/* data, as the copy counts it: a sparse file's holes are
		 * not bytes copied (its allocated bytes stand for its data) */
		need->bytes += (uint64_t)st->st_blocks * 512 <
			       (uint64_t)st->st_size ?
			       (uint64_t)st->st_blocks * 512 :
			       (uint64_t)st->st_size;
		d->need_blocks = nb > UINT32_MAX ? UINT32_MAX : (uint32_t)nb;
		return 0;
	}
	nb = 0;
	if (S_ISLNK(st->st_mode) && st->st_size >= 60)
		nb = ((uint64_t)st->st_size + m->bs - 1) / m->bs;
	err = xattr_blocks(m, -1, dirfd, d->name, path, st->st_mode,
			   &d->no_xattrs, &xb);
	if (err)
		return err;
	nb += xb;
	need->blocks += nb;
	d->need_blocks = (uint32_t)nb;
	return 0;
}

/* Blocks of one directory of these entries, as the copy will lay it out:
 * packed as ext2fs_link packs them, then, over one block, as the htree
 * pass rewrites it (the larger of the two). */
static uint64_t dir_blocks(unsigned bs, const struct cp_listing *l)
{
	uint64_t used = 24, blocks = 1, bytes = 0, ht;
	unsigned rmax = 0;
	struct cp_ind_state s = { 0 };

	for (size_t i = 0; i < l->n; i++) {
		uint64_t r = rec_len(strlen(l->e[i].name));

		bytes += r;
		if (r > rmax)
			rmax = (unsigned)r;
		if (used + r > bs) {
			blocks++;
			used = r;
		} else {
			used += r;
		}
	}
	if (blocks > 1) {
		ht = cp_htree_blocks_max(bs, bytes, rmax);
		if (ht > blocks)
			blocks = ht;
	}
	return blocks + cp_ind_blocks(bs, 0, blocks, &s);
}

/* Whether bytes more of listings may be kept (CP_LISTING_BUDGET). */
static int keep_within_budget(struct measure *m, size_t bytes)
{
	int ok;

	pthread_mutex_lock(&m->lock);
	ok = m->kept + bytes <= CP_LISTING_BUDGET;
	if (ok)
		m->kept += bytes;
	pthread_mutex_unlock(&m->lock);
	return ok;
}

/* Reads one directory: its own xattr blocks (top: the source root, which
 * is not copied as an entry), its blocks and every entry's needs. */
static errcode_t measure_dir(struct measure *m, const struct mdir *md,
			     int top, struct dir_sum *ds)
{
	struct cp_listing *l = NULL;
	errcode_t err = 0;
	unsigned char none;
	char *sub;
	size_t plen, nmax = 0;
	int fd;

	fd = cp_openat(AT_FDCWD, md->path, O_RDONLY | O_DIRECTORY |
		       (top ? 0 : O_NOFOLLOW),
		       cp_noatime_for(&m->noatime, md->uid));
	if (fd < 0) {
		/* the copy makes it empty (copy_entry): its one block */
		if (!top && (errno == EACCES || errno == EPERM))
			ds->need.blocks++;
		return 0;	/* the copy will report it */
	}
	if (!top) {
		uint64_t xb;

		err = xattr_blocks(m, fd, -1, NULL, md->path,
				   S_IFDIR | 0755, &none, &xb);
		if (err) {
			close(fd);
			return err;
		}
		ds->need.blocks += xb;
	}
	if (cp_listing_read(fd, &l)) {
		close(fd);
		return 0;	/* the copy will report it */
	}
	ds->need.blocks += dir_blocks(m->bs, l);
	/* one path buffer for the directory, the name copied in after its
	 * path for each entry (measure_entry copies what it keeps): an
	 * allocation and a snprintf per entry were 4% of the copy's
	 * instructions in user space */
	plen = strlen(md->path);
	for (size_t i = 0; i < l->n; i++) {
		size_t nl = strlen(l->e[i].name);

		if (nl > nmax)
			nmax = nl;
	}
	sub = l->n ? malloc(plen + nmax + 2) : NULL;
	if (l->n && !sub)
		err = ENOMEM;
	else if (sub) {
		memcpy(sub, md->path, plen);
		sub[plen] = '/';
	}
	for (size_t i = 0; i < l->n && !err; i++) {
		memcpy(sub + plen + 1, l->e[i].name, strlen(l->e[i].name) + 1);
		err = measure_entry(m, ds, fd, &l->e[i], sub);
	}
	free(sub);
	close(fd);
	if (!err && m->keep && keep_within_budget(m, l->bytes)) {
		l->dev = md->dev;
		l->ino = md->ino;
		cp_listings_put(m->keep, l);
	} else {
		cp_listing_free(l);
	}
	return err;
}

static void sum_into(struct e3_copyin_need *t, const struct e3_copyin_need *a)
{
	t->blocks += a->blocks;
	t->inodes += a->inodes;
	t->files += a->files;
	t->dirs += a->dirs;
	t->bytes += a->bytes;
}

/* Takes the pushed paths over from ds. m->lock held. */
static errcode_t push_subdirs(struct measure *m, struct dir_sum *ds)
{
	if (m->n + ds->nsub > m->cap) {
		size_t cap = m->cap ? m->cap : 64;
		struct mdir *p;

		while (cap < m->n + ds->nsub)
			cap *= 2;
		p = realloc(m->stack, cap * sizeof(*p));
		if (!p)
			return ENOMEM;
		m->stack = p;
		m->cap = cap;
	}
	/* reversed, so that popping visits them in listing order */
	for (size_t i = ds->nsub; i > 0; i--)
		m->stack[m->n++] = ds->subdirs[i - 1];
	ds->nsub = 0;
	return 0;
}

static void *measure_thread(void *arg)
{
	struct measure *m = arg;
	struct dir_sum ds = { 0 };
	struct mdir md;
	errcode_t err;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (!m->n && m->busy && !m->err)
			pthread_cond_wait(&m->cond, &m->lock);
		if (!m->n || m->err)
			break;
		md = m->stack[--m->n];
		m->busy++;
		pthread_mutex_unlock(&m->lock);

		memset(&ds.need, 0, sizeof(ds.need));
		err = measure_dir(m, &md, strcmp(md.path, m->root) == 0, &ds);
		free(md.path);

		pthread_mutex_lock(&m->lock);
		m->busy--;
		sum_into(&m->total, &ds.need);
		if (!err)
			err = push_subdirs(m, &ds);
		if (err && !m->err)
			m->err = err;
		for (size_t i = 0; i < ds.nsub; i++)	/* not pushed */
			free(ds.subdirs[i].path);
		ds.nsub = 0;
		pthread_cond_broadcast(&m->cond);
	}
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	free(ds.subdirs);
	return NULL;
}

/* A source that is not a directory: the one entry. */
static errcode_t measure_file(struct measure *m, const char *src,
			      struct e3_copyin_need *need)
{
	struct dir_sum ds = { 0 };
	char *d1 = strdup(src), *d2 = strdup(src);
	errcode_t err;
	int fd;

	if (!d1 || !d2) {
		err = ENOMEM;
	} else {
		struct cp_dent d = { .name = basename(d2) };

		fd = cp_openat(AT_FDCWD, dirname(d1), O_RDONLY | O_DIRECTORY,
			       NULL);
		err = fd < 0 ? errno : measure_entry(m, &ds, fd, &d, src);
		if (fd >= 0)
			close(fd);
	}
	*need = ds.need;
	free(ds.subdirs);
	free(d1);
	free(d2);
	return err;
}

errcode_t cp_measure_tree(const char *src, unsigned blocksize,
			  unsigned inode_size, unsigned threads,
			  struct cp_listings *keep, struct cp_lmeasure *label,
			  struct e3_copyin_need *need)
{
	struct measure m = { .bs = blocksize, .isz = inode_size, .root = src,
			     .keep = keep, .label = label };
	pthread_t *tids = NULL;
	unsigned started = 0;
	struct stat st;
	errcode_t err;

	cp_noatime_init(&m.noatime);
	memset(need, 0, sizeof(*need));
	if (stat(src, &st) < 0)
		return errno;
	err = cp_linkmap_create(&m.links);
	if (err)
		return err;
	pthread_mutex_init(&m.lock, NULL);
	pthread_cond_init(&m.cond, NULL);
	if (!S_ISDIR(st.st_mode)) {
		err = measure_file(&m, src, need);
		goto out;
	}
	m.stack = malloc(sizeof(*m.stack));
	if (!m.stack || !(m.stack[0].path = strdup(src))) {
		err = ENOMEM;
		goto out;
	}
	m.stack[0].dev = st.st_dev;
	m.stack[0].uid = st.st_uid;
	m.stack[0].ino = st.st_ino;
	m.n = m.cap = 1;
	if (threads > 1)
		tids = calloc(threads - 1, sizeof(*tids));
	for (unsigned i = 0; tids && i < threads - 1; i++, started++)
		if (pthread_create(&tids[i], NULL, measure_thread, &m))
			break;		/* fewer helpers: still correct */
	measure_thread(&m);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	err = m.err;
	*need = m.total;
out:
	if (err && m.bad_path) {
		need->bad_path = m.bad_path;	/* the caller's now */
		need->bad_size = m.bad_size;
		need->bad_block = blocksize;
		m.bad_path = NULL;
	}
	free(m.bad_path);
	while (m.stack && m.n)
		free(m.stack[--m.n].path);
	free(m.stack);
	free(tids);
	pthread_cond_destroy(&m.cond);
	pthread_mutex_destroy(&m.lock);
	cp_linkmap_free(m.links);
	return err;
}

errcode_t e3_copyin_measure(const char *const *srcs, size_t nsrcs,
			    unsigned blocksize, unsigned inode_size,
			    const struct e3_copyin_opts *o,
			    struct e3_copyin_need *need)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = cpus > 1 ? (unsigned)(cpus > 16 ? 16 : cpus) : 1;
	struct e3_copyin_need n;
	struct stat st;
	errcode_t err;
	int archive;

	memset(need, 0, sizeof(*need));
	for (size_t i = 0; i < nsrcs; i++) {
		if (strcmp(srcs[i], "-") == 0)
			return E3_AUTO_NEEDS_TREE;	/* read once, as it
							   is copied */
		archive = 0;
		err = 0;
		if (stat(srcs[i], &st) == 0 && S_ISREG(st.st_mode))
			err = cp_source_kind(srcs[i], o && o->no_unpack,
					     &archive);
		memset(&n, 0, sizeof(n));
		if (!err && archive)
			err = cp_measure_archive(srcs[i], blocksize,
						 inode_size,
						 o && o->keep_zeros, NULL,
						 &n);
		else if (!err)
			err = cp_measure_tree(srcs[i], blocksize, inode_size,
					      threads, NULL, NULL, &n);
		if (err) {
			need->bad_path = n.bad_path;
			/* inside an archive: "SRC: entry" */
			if (archive && n.bad_path &&
			    asprintf(&need->bad_path, "%s: %s", srcs[i],
				     n.bad_path) < 0)
				need->bad_path = NULL;
			if (need->bad_path != n.bad_path)
				free(n.bad_path);
			if (!need->bad_path)
				need->bad_path = strdup(srcs[i]);
			need->bad_size = n.bad_size;
			need->bad_block = n.bad_block;
			return err;
		}
		need->blocks += n.blocks;
		need->inodes += n.inodes;
		need->files += n.files;
		need->dirs += n.dirs;
		need->bytes += n.bytes;
	}
	return 0;
}
