/*
 * copyin_archsize.c: what an archive file needs in an image, for
 * "e3mkfs -d ARCHIVE IMAGE auto". The archive is read once ahead of the
 * copy, headers only (compressed data is still decompressed to skip it),
 * and counted as copyin_size.c counts a tree: data and indirect blocks
 * (holes from the archive's sparse map), slow symlinks, xattr blocks, one
 * inode per entry that is not a hard link, and every directory's blocks
 * with its names packed in archive order — directories the archive only
 * implies included, as the copy makes them. Paths the copy refuses for
 * ".." are left out; those it refuses for passing through a symlink in
 * the image cannot be told here and are counted: the count errs high.
 *
 * For e3cp (cp_measure_archive's x), each entry is also handed to the
 * --overwrite/--update credit (copyin_credit.c) with what was counted for
 * it, and its --file-contexts label is counted with its xattrs
 * (copyin_label.c); nothing of the archive is kept but its directories'
 * packing state.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/tree.h>
#include <archive.h>
#include <archive_entry.h>

#include "copyin.h"

/* One directory: its names as ext2fs_link will pack them. */
struct adir {
	RB_ENTRY(adir) link;
	char *path;			/* cleaned, relative; "" the top */
	uint64_t used, blocks;		/* packing: bytes in the last block */
	uint64_t bytes;			/* every record's length */
	unsigned rmax;			/* the longest record */
};

RB_HEAD(adir_tree, adir);

static int adir_cmp(struct adir *a, struct adir *b)
{
	return strcmp(a->path, b->path);
}
RB_GENERATE_INTERNAL(adir_tree, adir, link, adir_cmp,
		     static __attribute__((unused)))

struct asize {
	struct adir_tree dirs;
	struct archive *ar;
	int keep_zeros;
	unsigned bs, isz;
	struct e3_copyin_need *need;
	struct cp_xattrs x;
	const struct cp_ameasure *ext;	/* credit and labels, or NULL */
};

static void add_name(struct asize *m, struct adir *d, size_t name_len)
{
	uint64_t r = (8 + name_len + 3) & ~(uint64_t)3;

	d->bytes += r;
	if (r > d->rmax)
		d->rmax = (unsigned)r;
	if (d->used + r > m->bs) {
		d->blocks++;
		d->used = r;
	} else {
		d->used += r;
	}
}

/* The directory at path (len bytes of it), made (and named in its
 * parent, recursively) when first met. */
static errcode_t get_dir(struct asize *m, const char *path, size_t len,
			 struct adir **ret)
{
	struct adir key, *d, *parent;
	const char *slash;
	errcode_t err;
	char *p = strndup(path, len);

	if (!p)
		return ENOMEM;
	key.path = p;
	d = RB_FIND(adir_tree, &m->dirs, &key);
	if (d) {
		free(p);
		*ret = d;
		return 0;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		free(p);
		return ENOMEM;
	}
	d->path = p;
	d->used = 24;			/* "." and ".." */
	d->blocks = 1;
	RB_INSERT(adir_tree, &m->dirs, d);
	if (len == 0) {			/* the top: the destination */
		*ret = d;
		return 0;
	}
	m->need->inodes++;
	m->need->dirs++;
	if (m->ext && m->ext->credit)	/* merged if the image has it */
		cp_acredit_entry(m->ext->credit, p, 1, 0, 0);
	slash = memrchr(p, '/', len);
	err = get_dir(m, p, slash ? (size_t)(slash - p) : 0, &parent);
	if (err)
		return err;
	add_name(m, parent, slash ? len - (size_t)(slash - p) - 1 : len);
	*ret = d;
	return 0;
}

/* Room for xattrs as copyin_size.c reckons it: in a large inode after
 * its extra fields, else one block; E3_XATTR_TOO_BIG (the entry named in
 * need) when they cannot fit at all. */
static errcode_t xattr_blocks(struct asize *m, const char *path,
			      uint64_t label, size_t id, uint64_t *blocks)
{
	const struct cp_xattrs *x = &m->x;
	uint64_t need = 4, one, largest = label;
	errcode_t err;

	for (size_t i = 0; i < x->n; i++) {
		const char *dot = strchr(x->v[i].name, '.');

		if (label && !strcmp(x->v[i].name, "security.selinux"))
			continue;	/* the label replaces it */
		one = 16 + ((strlen(dot ? dot + 1 : x->v[i].name) + 3) & ~3u) +
		      ((x->v[i].size + 3) & ~(size_t)3);
		need += one;
		if (one > largest)
			largest = one;
	}
	err = cp_xattr_check(m->bs, m->isz, need + label, largest);
	if (err) {
		m->need->bad_path = strdup(path);
		m->need->bad_size = need + label - 4;
		m->need->bad_block = m->bs;
		return err;
	}
	*blocks = label ? cp_label_room(m->ext->label, m->isz, need - 4,
					label, id) :
			  cp_xattr_room_blocks(m->isz, need);
	return 0;
}

/* The blocks of an entry's data that hold a non-zero byte, as the copy
 * (copyin_zero.c) writes them: the data is read (it is decompressed to
 * be skipped anyway) and each image block judged whole, across chunk
 * edges. A read error leaves the rest counted as data. */
static void nonzero_blocks(struct archive *ar, unsigned bs, uint64_t size,
			   struct cp_regions *r)
{
	const unsigned char *buf;
	uint64_t cur = UINT64_MAX, end = 0;	/* the block being judged */
	int cur_data = 0;
	la_int64_t off;
	size_t len;
	int rc;

	while ((rc = archive_read_data_block(ar, (const void **)&buf, &len,
					     &off)) == ARCHIVE_OK) {
		for (size_t at = 0; at < len;) {
			uint64_t pos = (uint64_t)off + at, b = pos / bs;
			size_t n = bs - (size_t)(pos % bs);

			if (n > len - at)
				n = len - at;
			if (b != cur) {
				if (cur_data)
					cp_regions_add(r, bs, cur * bs,
						       (cur + 1) * bs);
				cur = b;
				cur_data = 0;
			}
			if (!cur_data && !cp_zero(buf + at, n))
				cur_data = 1;
			at += n;
		}
		end = (uint64_t)off + len;
	}
	if (cur_data)
		cp_regions_add(r, bs, cur * bs, (cur + 1) * bs);
	if (rc != ARCHIVE_EOF && end < size)
		cp_regions_add(r, bs, end, size);
}

/* Data and indirect blocks of a regular file: its sparse map's regions
 * when it has one, else every block of its size, or (zeros left as
 * holes) those that hold data. */
static uint64_t file_blocks(struct archive *ar, unsigned bs, int keep_zeros,
			    struct archive_entry *e)
{
	uint64_t size = (uint64_t)archive_entry_size(e);
	struct cp_regions r = { 0 };
	la_int64_t off, len;

	if (archive_entry_sparse_reset(e) > 0) {
		while (archive_entry_sparse_next(e, &off, &len) == ARCHIVE_OK)
			if (off >= 0 && len > 0)
				cp_regions_add(&r, bs, (uint64_t)off,
					       (uint64_t)off + (uint64_t)len);
	} else if (!keep_zeros) {
		nonzero_blocks(ar, bs, size, &r);
	} else {
		cp_regions_add(&r, bs, 0, size);
	}
	return r.n;
}

static errcode_t count_entry(struct asize *m, struct archive_entry *e)
{
	struct e3_copyin_need *need = m->need;
	const char *name = archive_entry_pathname(e);
	struct adir *parent, *self;
	const char *slash;
	mode_t type = archive_entry_filetype(e);
	int link = archive_entry_hardlink(e) != NULL;
	uint64_t xb, label = 0, nb = 0;
	size_t id = SIZE_MAX;
	errcode_t err;
	size_t len;
	char *rel;

	if (!name)
		return 0;		/* the copy reports it */
	rel = strdup(name);
	if (!rel)
		return ENOMEM;
	if (cp_path_clean(rel) || rel[0] == '\0') {
		free(rel);		/* refused, or the top's own attributes */
		return 0;
	}
	len = strlen(rel);
	if (type == AE_IFDIR && !archive_entry_hardlink(e)) {
		err = get_dir(m, rel, len, &self);
	} else {
		slash = strrchr(rel, '/');
		err = get_dir(m, rel, slash ? (size_t)(slash - rel) : 0,
			      &parent);
		if (!err)
			add_name(m, parent, slash ? strlen(slash + 1) : len);
	}
	if (err || link) {
		free(rel);
		return err;		/* a link: a name, no inode (and, as
					   for trees, no credit) */
	}
	if (m->ext && m->ext->label)
		label = cp_label_entry_bytes(m->ext->label, rel,
					     archive_entry_mode(e), &id);
	err = cp_archive_xattrs(e, &m->x);
	if (!err)
		err = xattr_blocks(m, name, label, id, &xb);
	if (err) {
		free(rel);
		return err;
	}
	need->blocks += xb;
	if (type == AE_IFDIR) {
		free(rel);
		return 0;		/* counted by get_dir */
	}
	need->inodes++;
	need->files++;
	if (type == AE_IFREG) {
		nb = file_blocks(m->ar, m->bs, m->keep_zeros, e);
		need->bytes += (uint64_t)archive_entry_size(e);
	} else if (type == AE_IFLNK) {
		const char *t = archive_entry_symlink(e);
		size_t tl = t ? strlen(t) : 0;

		if (tl >= 60)
			nb = (tl + m->bs - 1) / m->bs;
	}
	need->blocks += nb;
	if (m->ext && m->ext->credit)
		cp_acredit_entry(m->ext->credit, rel, 0, 0, nb + xb);
	free(rel);
	return 0;
}

errcode_t cp_measure_archive(const char *src, unsigned blocksize,
			     unsigned inode_size, int keep_zeros,
			     const struct cp_ameasure *x,
			     struct e3_copyin_need *need)
{
	struct asize m = { .bs = blocksize, .isz = inode_size, .need = need,
			   .keep_zeros = keep_zeros, .ext = x };
	struct archive_entry *e;
	struct archive *ar;
	struct adir *d, *next;
	errcode_t err;
	int r;

	memset(need, 0, sizeof(*need));
	RB_INIT(&m.dirs);
	err = x && x->fd >= 0 ? cp_archive_open_fd(x->fd, x->off, &ar) :
				cp_archive_open(src, &ar);
	m.ar = ar;
	while (!err) {
		r = archive_read_next_header(ar, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r == ARCHIVE_RETRY)
			continue;
		if (r == ARCHIVE_FATAL) {
			/* the copy would stop here too, naming it */
			err = E3_ARCHIVE_BAD;
			break;
		}
		err = count_entry(&m, e);
	}
	if (ar)
		archive_read_free(ar);
	RB_FOREACH_SAFE(d, adir_tree, &m.dirs, next) {
		struct cp_ind_state s = { 0 };
		uint64_t blocks = d->blocks, ht;

		if (blocks > 1) {
			ht = cp_htree_blocks_max(blocksize, d->bytes, d->rmax);
			if (ht > blocks)
				blocks = ht;
		}
		need->blocks += blocks + cp_ind_blocks(blocksize, 0, blocks, &s);
		RB_REMOVE(adir_tree, &m.dirs, d);
		free(d->path);
		free(d);
	}
	cp_xattrs_clear(&m.x);
	free(m.x.v);
	return err;
}
