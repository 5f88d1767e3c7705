/*
 * copyin_util.c: copy-in helpers that touch no image — xattr lists, the
 * hard-link map, path cleaning, device-table line parsing and indirect
 * block counting — kept apart so unit tests link them alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include "copyin.h"
#include "util/grow.h"

#define NDIR_BLOCKS 12

/* ---- small containers ------------------------------------------------- */

errcode_t cp_xattrs_add(struct cp_xattrs *x, const char *name,
			const void *value, size_t size)
{
	struct cp_xattr *e, *v = e3_grow(x->v, x->n, &x->cap, sizeof(*v), 8);

	if (!v)
		return ENOMEM;
	x->v = v;
	e = &x->v[x->n];
	e->name = strdup(name);
	e->value = malloc(size ? size : 1);
	if (!e->name || !e->value) {
		free(e->name);
		free(e->value);
		return ENOMEM;
	}
	memcpy(e->value, value, size);
	e->size = size;
	x->n++;
	return 0;
}

void cp_xattrs_clear(struct cp_xattrs *x)
{
	for (size_t i = 0; i < x->n; i++) {
		free(x->v[i].name);
		free(x->v[i].value);
	}
	x->n = 0;
}

/* Open addressing on (dev, ino); only sources with st_nlink > 1 go in, so
 * this is the one per-file state besides pending directory entries.
 * A second table, on the image inode, names the source that inode was
 * made from: --overwrite can free an inode and a later file reuse its
 * number, and a mapping is good only while its inode's owner is still
 * the same source (cp_linkmap_forget). */
struct cp_link_slot {
	uint64_t dev, ino;
	ext2_ino_t to;			/* 0: empty slot */
};

#define LINK_GONE UINT64_MAX		/* owner slot of a freed inode */

struct cp_linkmap {
	struct cp_link_slot *slots;	/* on (dev, ino) */
	struct cp_link_slot *owner;	/* on to */
	size_t cap;			/* a power of two; both tables */
	size_t used, owners;		/* slots taken in each */
};

errcode_t cp_linkmap_create(struct cp_linkmap **ret)
{
	struct cp_linkmap *m = calloc(1, sizeof(*m));

	if (!m)
		return ENOMEM;
	m->cap = 256;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	m->owner = calloc(m->cap, sizeof(*m->owner));
	if (!m->slots || !m->owner) {
		cp_linkmap_free(m);
		return ENOMEM;
	}
	*ret = m;
	return 0;
}

void cp_linkmap_free(struct cp_linkmap *m)
{
	if (m) {
		free(m->slots);
		free(m->owner);
		free(m);
	}
}

static size_t link_hash(uint64_t dev, uint64_t ino)
{
	uint64_t h = (dev * 0x9E3779B97F4A7C15ULL) ^ (ino * 0xC2B2AE3D27D4EB4FULL);

	return (size_t)(h ^ (h >> 29));
}

static struct cp_link_slot *link_find(struct cp_link_slot *slots, size_t cap,
				      uint64_t dev, uint64_t ino)
{
	size_t i = link_hash(dev, ino) & (cap - 1);

	while (slots[i].to && !(slots[i].dev == dev && slots[i].ino == ino))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static struct cp_link_slot *owner_find(struct cp_link_slot *slots, size_t cap,
				       ext2_ino_t to)
{
	size_t i = link_hash(0, to) & (cap - 1);

	while (slots[i].to && slots[i].to != to)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

ext2_ino_t cp_linkmap_get(struct cp_linkmap *m, uint64_t dev, uint64_t ino)
{
	ext2_ino_t to = link_find(m->slots, m->cap, dev, ino)->to;
	struct cp_link_slot *o;

	if (!to)
		return 0;
	o = owner_find(m->owner, m->cap, to);
	return o->dev == dev && o->ino == ino ? to : 0;
}

void cp_linkmap_forget(struct cp_linkmap *m, ext2_ino_t to)
{
	struct cp_link_slot *o = owner_find(m->owner, m->cap, to);

	if (o->to)
		o->dev = o->ino = LINK_GONE;
}

static errcode_t linkmap_grow(struct cp_linkmap *m)
{
	size_t cap = m->cap * 2;
	struct cp_link_slot *n = calloc(cap, sizeof(*n));
	struct cp_link_slot *o = calloc(cap, sizeof(*o));

	if (!n || !o) {
		free(n);
		free(o);
		return ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (m->slots[i].to)
			*link_find(n, cap, m->slots[i].dev,
				   m->slots[i].ino) = m->slots[i];
		if (m->owner[i].to)
			*owner_find(o, cap, m->owner[i].to) = m->owner[i];
	}
	free(m->slots);
	free(m->owner);
	m->slots = n;
	m->owner = o;
	m->cap = cap;
	return 0;
}

errcode_t cp_linkmap_put(struct cp_linkmap *m, uint64_t dev, uint64_t ino,
			 ext2_ino_t to)
{
	struct cp_link_slot *s, *o;
	errcode_t err;

	if (((m->used > m->owners ? m->used : m->owners) + 1) * 2 > m->cap &&
	    (err = linkmap_grow(m)))
		return err;
	s = link_find(m->slots, m->cap, dev, ino);
	if (!s->to)
		m->used++;
	*s = (struct cp_link_slot){ .dev = dev, .ino = ino, .to = to };
	o = owner_find(m->owner, m->cap, to);
	if (!o->to)
		m->owners++;
	*o = *s;
	return 0;
}

errcode_t cp_path_clean(char *path)
{
	char *r = path, *w = path;

	while (*r) {
		char *end = strchr(r, '/');
		size_t len = end ? (size_t)(end - r) : strlen(r);

		if (len == 0 || (len == 1 && r[0] == '.')) {
			/* "", "." : dropped */
		} else if (len == 2 && r[0] == '.' && r[1] == '.') {
			return E3_PATH_ESCAPES;
		} else {
			if (w != path)
				*w++ = '/';
			memmove(w, r, len);
			w += len;
		}
		r += len;
		if (*r == '/')
			r++;
	}
	*w = '\0';
	return 0;
}

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

/* Indirect-block ids: 0 none, else a number unique to each IND/DIND/TIND
 * block of one file. */
static void ind_ids(uint64_t p, uint64_t l, uint64_t *ind, uint64_t *dind,
		    uint64_t *tind)
{
	*ind = *dind = *tind = 0;
	if (l < NDIR_BLOCKS)
		return;
	l -= NDIR_BLOCKS;
	if (l < p) {
		*ind = 1;
		return;
	}
	l -= p;
	if (l < p * p) {
		*dind = 1;
		*ind = 2 + l / p;
		return;
	}
	l -= p * p;
	*tind = 1;
	*dind = 2 + l / (p * p);
	*ind = 2 + p + l / p;
}

uint64_t cp_ind_blocks(unsigned blocksize, uint64_t first, uint64_t count,
		       struct cp_ind_state *s)
{
	uint64_t p = blocksize / 4, n = 0, l = first, end = first + count;
	uint64_t ind, dind, tind;

	if (l < NDIR_BLOCKS)
		l = NDIR_BLOCKS;
	while (l < end) {
		ind_ids(p, l, &ind, &dind, &tind);
		if (ind && ind != s->last_ind) {
			n++;
			s->last_ind = ind;
		}
		if (dind && dind != s->last_dind) {
			n++;
			s->last_dind = dind;
		}
		if (tind && tind != s->last_tind) {
			n++;
			s->last_tind = tind;
		}
		/* on to the first block of the next indirect block */
		l = NDIR_BLOCKS + ((l - NDIR_BLOCKS) / p + 1) * p;
	}
	return n;
}


/* listxattrat arrived in Linux 6.13 with the number the architectures
 * of the common syscall table share for new calls (alpha and MIPS add
 * their own offsets, so they keep the path); glibc 2.36 has no wrapper. */
#if defined(__NR_listxattrat)
#define CP_NR_LISTXATTRAT __NR_listxattrat
#elif defined(__linux__) && !defined(__alpha__) && !defined(__mips__)
#define CP_NR_LISTXATTRAT 465
#endif

ssize_t cp_llistxattr_at(int dirfd, const char *name, const char *path,
			 char *list, size_t size, int *fallback)
{
#ifdef CP_NR_LISTXATTRAT
	if (!__atomic_load_n(fallback, __ATOMIC_RELAXED)) {
		long n = syscall(CP_NR_LISTXATTRAT, dirfd, name,
				 AT_SYMLINK_NOFOLLOW, list, size);

		/* an older kernel, or a seccomp filter that refuses it */
		if (n >= 0 || (errno != ENOSYS && errno != EPERM))
			return (ssize_t)n;
		__atomic_store_n(fallback, 1, __ATOMIC_RELAXED);
	}
#else
	(void)dirfd;
	(void)name;
	(void)fallback;
#endif
	return llistxattr(path, list, size);
}

int cp_mode_readable(const struct cp_ctx *c, const struct stat *st)
{
	uid_t euid = c->noatime.euid;
	int member = st->st_gid == c->egid;

	if (euid == 0)
		return 1;
	if (st->st_uid == euid)
		return (st->st_mode & S_IRUSR) != 0;
	for (int i = 0; !member && i < c->ngroups; i++)
		member = st->st_gid == c->groups[i];
	return (st->st_mode & (member ? S_IRGRP : S_IROTH)) != 0;
}

/* Reading a source must not change it: a second copy of the same tree
 * would see other atimes. O_NOATIME is refused unless we own the file. */
int cp_openat(int dirfd, const char *name, int flags, int *latch)
{
	int ask = !latch || __atomic_load_n(latch, __ATOMIC_RELAXED);
	int fd = -1;

	if (ask)
		fd = openat(dirfd, name, flags | O_NOATIME | O_CLOEXEC);
	if (!ask || (fd < 0 && errno == EPERM)) {
		if (ask && latch)
			__atomic_store_n(latch, 0, __ATOMIC_RELAXED);
		fd = openat(dirfd, name, flags | O_CLOEXEC);
	}
	return fd;
}

void cp_stat_pack(struct cp_stat *p, const struct stat *st)
{
	p->dev = st->st_dev;
	p->ino = st->st_ino;
	p->rdev = st->st_rdev;
	p->size = st->st_size;
	p->blocks = st->st_blocks;
	p->atime = st->st_atim.tv_sec;
	p->mtime = st->st_mtim.tv_sec;
	p->ctime = st->st_ctim.tv_sec;
	p->atime_ns = (uint32_t)st->st_atim.tv_nsec;
	p->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	p->ctime_ns = (uint32_t)st->st_ctim.tv_nsec;
	p->mode = st->st_mode;
	p->nlink = (uint32_t)st->st_nlink;
	p->uid = st->st_uid;
	p->gid = st->st_gid;
}

void cp_stat_unpack(struct stat *st, const struct cp_stat *p)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = p->dev;
	st->st_ino = p->ino;
	st->st_rdev = p->rdev;
	st->st_size = p->size;
	st->st_blocks = p->blocks;
	st->st_atim.tv_sec = p->atime;
	st->st_mtim.tv_sec = p->mtime;
	st->st_ctim.tv_sec = p->ctime;
	st->st_atim.tv_nsec = p->atime_ns;
	st->st_mtim.tv_nsec = p->mtime_ns;
	st->st_ctim.tv_nsec = p->ctime_ns;
	st->st_mode = p->mode;
	st->st_nlink = p->nlink;
	st->st_uid = p->uid;
	st->st_gid = p->gid;
}
