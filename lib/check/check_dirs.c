/*
 * check_dirs.c: pass 3 — every directory block: each entry's rec_len,
 * name_len and name, the inode it names (in range, in use, not bad), the
 * file type against the inode, '.' and '..' first, names appearing twice,
 * second links to directories; and the htree index (root, levels, limits,
 * counts, hash order, block numbers) when dir_index is set. It also counts
 * the entries naming each inode (pass 5) and records each directory's
 * parent and '..' (pass 4).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

struct dname {
	uint32_t hash;
	uint16_t len;
	const char *name;	/* into the directory's name arena */
};

struct dstate {			/* one directory being read */
	ext2_ino_t ino;
	struct chk_vec names;	/* struct dname */
	char *arena;
	size_t arena_n, arena_cap;
	unsigned char *buf, *buf2;
};

static struct e3_finding *dadd(struct chk_ctx *ctx, int code, ext2_ino_t dir,
			       ext2_ino_t ino, const char *name, int nlen)
{
	struct e3_finding *f = chk_add(ctx, NULL, code);

	if (f) {
		f->ino = dir;
		f->ino2 = ino;
		if (name)
			f->name = strndup(name, nlen);
	}
	return f;
}

static uint32_t name_hash(const char *s, int n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static int cmp_dname(const void *a, const void *b)
{
	const struct dname *x = a, *y = b;
	int c;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	c = memcmp(x->name, y->name, x->len);
	return c ? c : (x->name < y->name ? -1 : x->name > y->name);
}

static void remember_name(struct dstate *ds, const char *name, int len)
{
	struct dname d;

	if (ds->arena_n + len > ds->arena_cap) {
		size_t cap = (ds->arena_cap + len) * 2 + 4096;
		char *n = realloc(ds->arena, cap);

		if (!n)
			return;
		/* names hold offsets until the end: re-base below */
		ds->arena = n;
		ds->arena_cap = cap;
	}
	memcpy(ds->arena + ds->arena_n, name, len);
	d.hash = name_hash(name, len);
	d.len = len;
	d.name = (const char *)(uintptr_t)ds->arena_n;	/* offset for now */
	ds->arena_n += len;
	chk_vec_push(&ds->names, &d);
}

/* Reports names that appear twice once a directory is complete. */
static void finish_dir(struct chk_ctx *ctx, struct dstate *ds)
{
	struct dname *d = ds->names.v;
	size_t i;

	for (i = 0; i < ds->names.n; i++)
		d[i].name = ds->arena + (uintptr_t)d[i].name;
	if (ds->names.n)
		qsort(d, ds->names.n, sizeof(*d), cmp_dname);
	for (i = 1; i < ds->names.n; i++)
		if (d[i].hash == d[i - 1].hash && d[i].len == d[i - 1].len &&
		    !memcmp(d[i].name, d[i - 1].name, d[i].len))
			dadd(ctx, E3P_DIR_DUP_NAME, ds->ino, 0, d[i].name, d[i].len);
	ds->names.n = 0;
	ds->arena_n = 0;
}

/* Checks one entry naming inode t; returns nonzero if it counts as a
 * reference. */
static int check_target(struct chk_ctx *ctx, struct dstate *ds,
			const char *name, int nlen, ext2_ino_t t, int ftype)
{
	struct chk_dir *d;
	struct e3_finding *f;
	uint16_t st;
	int want;

	if (t > ctx->ninodes ||
	    (t < EXT2_FIRST_INO(ctx->fs->super) && t != EXT2_ROOT_INO)) {
		dadd(ctx, E3P_DIR_INODE_RANGE, ds->ino, t, name, nlen);
		return 0;
	}
	st = ctx->ist[t];
	if (!(st & CI_USED) || (st & CI_BAD)) {
		dadd(ctx, E3P_DIR_INODE_UNUSED, ds->ino, t, name, nlen);
		return 0;
	}
	if (t == EXT2_ROOT_INO) {
		dadd(ctx, E3P_DIR_LINK_ROOT, ds->ino, t, name, nlen);
		return 0;
	}
	if (ext2fs_has_feature_filetype(ctx->fs->super)) {
		want = CI_TYPE(st);
		if (ftype != want &&
		    (f = dadd(ctx, ftype ? E3P_DIR_FILETYPE : E3P_DIR_SET_FILETYPE,
			      ds->ino, t, name, nlen))) {
			f->num = ftype;
			f->num2 = want;
		}
	} else if (ftype && (f = dadd(ctx, E3P_DIR_FILETYPE, ds->ino, t,
				      name, nlen))) {
		f->num = ftype;
		f->num2 = 0;
	}
	d = (st & CI_DIR) ? chk_dir(ctx, t) : chk_named(ctx, t);
	if (d && d->parent && (st & CI_DIR)) {
		dadd(ctx, E3P_DIR_LINK_TO_DIR, ds->ino, t, name, nlen);
		return 0;
	}
	if (d && !d->parent)
		d->parent = ds->ino;
	if (ds->ino == EXT2_ROOT_INO && nlen == 10 &&
	    !memcmp(name, "lost+found", 10))
		ctx->lost_found = t;
	return 1;
}

static void check_dot(struct chk_ctx *ctx, struct dstate *ds, int idx,
		      const struct ext2_dir_entry *de, int nlen)
{
	ext2_ino_t t = de->inode;
	int ft = ext2fs_dirent_file_type(de);
	struct e3_finding *f;

	if (ext2fs_has_feature_filetype(ctx->fs->super) && ft != EXT2_FT_DIR &&
	    nlen == idx + 1 && !memcmp(de->name, "..", nlen) &&
	    (f = dadd(ctx, ft ? E3P_DIR_FILETYPE : E3P_DIR_SET_FILETYPE,
		      ds->ino, t, de->name, nlen))) {
		f->num = ft;
		f->num2 = EXT2_FT_DIR;
	}

	if (idx == 0) {
		if (nlen != 1 || de->name[0] != '.' || t != ds->ino)
			dadd(ctx, E3P_DIR_MISSING_DOT, ds->ino, 0, NULL, 0);
		else if (de->name[1])	/* inside its 12 bytes */
			dadd(ctx, E3P_DIR_DOT_NUL, ds->ino, 0, ".", 1);
		/* counted either way: the fix makes this entry name the
		 * directory, so the link count pass 5 wants is the one after
		 * it (else -y "fixes" the count down, then up, one round
		 * each) */
		chk_ref_inc(ctx, ds->ino);
		return;
	}
	if (nlen != 2 || memcmp(de->name, "..", 2)) {
		dadd(ctx, E3P_DIR_MISSING_DOTDOT, ds->ino, 0, NULL, 0);
		return;
	}
	if (de->name[2])
		dadd(ctx, E3P_DIR_DOT_NUL, ds->ino, 0, "..", 2);
	if (chk_dir(ctx, ds->ino))
		chk_dir(ctx, ds->ino)->dotdot = t;
	if (t && t <= ctx->ninodes)
		chk_ref_inc(ctx, t);
}

static void check_entry(struct chk_ctx *ctx, struct dstate *ds,
			const struct ext2_dir_entry *de, int nlen, int ftype)
{
	const char *name = de->name;

	if (!nlen) {
		dadd(ctx, E3P_DIR_NAME_ZERO, ds->ino, de->inode, NULL, 0);
		return;
	}
	if ((nlen == 1 && name[0] == '.') ||
	    (nlen == 2 && name[0] == '.' && name[1] == '.')) {
		dadd(ctx, E3P_DIR_DOT_ENTRY_OTHER, ds->ino, de->inode, name, nlen);
		return;
	}
	if (memchr(name, '/', nlen) || memchr(name, 0, nlen)) {
		/* the fix replaces each '/' and NUL by '.', as e2fsck does,
		 * and keeps the entry: count it under its new name */
		char fixed[256];
		int i;

		for (i = 0; i < nlen; i++)
			fixed[i] = name[i] == '/' || !name[i] ? '.' : name[i];
		dadd(ctx, E3P_DIR_BAD_NAME, ds->ino, de->inode, fixed, nlen);
		name = fixed;
		remember_name(ds, name, nlen);
		if (check_target(ctx, ds, name, nlen, de->inode, ftype))
			chk_ref_inc(ctx, de->inode);
		return;
	}
	remember_name(ds, name, nlen);
	if (check_target(ctx, ds, name, nlen, de->inode, ftype))
		chk_ref_inc(ctx, de->inode);
}

/* One block of entries. A broken entry is reported and salvaged in this
 * private copy as the fix will salvage it on disk (check_dirent.c), and
 * the walk goes on, so the entries after it are counted as named. */
static void check_block(struct chk_ctx *ctx, struct dstate *ds,
			const struct chk_dblk *db)
{
	unsigned off = 0, idx = 0, guard = 0;
	int prev = -1;
	unsigned char *buf = ds->buf;
	struct e3_finding *f;

	if (chk_read_block(ctx, ctx->fd, db->blk, buf))
		return;
	while (off < ctx->bs) {
		struct ext2_dir_entry *de = (void *)(buf + off);
		unsigned rec_len, nlen, ftype;

		if (chk_dirent_bad(ctx->fs, buf, off, ctx->bs)) {
			int code = E3P_DIR_BAD_REC_LEN;

			if (ctx->bs - off >= 8 &&
			    !ext2fs_get_rec_len(ctx->fs, de, &rec_len) &&
			    rec_len >= 12 && rec_len % 4 == 0 &&
			    off + rec_len <= ctx->bs)
				code = E3P_DIR_BAD_NAME_LEN;
			if ((f = dadd(ctx, code, ds->ino, 0, NULL, 0))) {
				f->num = db->lblk;
				f->num2 = off;
			}
			/* each salvage step shortens what is left or moves
			 * on; the guard only bounds a bug */
			if (++guard > ctx->bs)
				return;
			off = chk_dirent_salvage(ctx->fs, buf, off, prev, ctx->bs);
			continue;
		}
		ext2fs_get_rec_len(ctx->fs, de, &rec_len);
		nlen = ext2fs_dirent_name_len(de);
		ftype = ext2fs_dirent_file_type(de);
		if (!ext2fs_has_feature_filetype(ctx->fs->super) && ftype) {
			nlen = de->name_len;	/* 16-bit name length */
			ftype = 0;
		}
		if (db->lblk == 0 && idx < 2)
			check_dot(ctx, ds, idx, de, nlen);
		else if (de->inode)
			check_entry(ctx, ds, de, nlen, ftype);
		prev = off;
		off += rec_len;
		idx++;
	}
}

/* ---- htree ---- */

struct dx_countlimit_ {
	uint16_t limit, count;
	uint32_t block;
};

struct dx_entry_ {
	uint32_t hash, block;
};

static void htree_bad(struct chk_ctx *ctx, ext2_ino_t dir, int code,
		      uint64_t num, uint64_t num2, const char *why)
{
	struct e3_finding *f = chk_add(ctx, NULL, code);

	if (f) {
		f->ino = dir;
		f->num = num;
		f->num2 = num2;
		if (why)
			f->name = strdup(why);
	}
}

/* What the index says about each block of an htree directory. */
struct dx_blk {
	uint16_t refs;		/* index entries pointing here */
	uint8_t node;		/* an index node, not a leaf */
	uint32_t lo, hi;	/* hash range its parent gives it */
};

/* Checks one index node's limit, count and order, and records its
 * children's ranges (the low bit of each hash is a collision flag). The
 * node's own range [lo, hi], which its parent's keys give, bounds its
 * first and last child: a key in the root raised past the hashes of the
 * leaves below it is then caught at those leaves, as e2fsck's "bad min
 * hash" (it carries each first child's lowest hash up to the parent).
 * For the root, lo is 0 and hi 0xfffffffe. Returns 0 if sane. */
static int check_dx_node(struct chk_ctx *ctx, ext2_ino_t dir, uint32_t lblk,
			 const unsigned char *p, unsigned room, uint32_t nblk,
			 uint32_t lo, uint32_t hi,
			 struct dx_blk *dx, uint32_t *children, unsigned *nchild)
{
	const struct dx_countlimit_ *cl = (const void *)p;
	const struct dx_entry_ *e = (const void *)p;
	unsigned limit = ext2fs_le16_to_cpu(cl->limit);
	unsigned count = ext2fs_le16_to_cpu(cl->count), i;
	uint32_t prev = 0;

	if (limit != room / 8) {
		htree_bad(ctx, dir, E3P_HTREE_LIMIT, lblk, limit, NULL);
		return 1;
	}
	if (!count || count > limit) {
		htree_bad(ctx, dir, E3P_HTREE_COUNT, lblk, count, NULL);
		return 1;
	}
	for (i = 0; i < count; i++) {
		/* bits 28-31 are reserved; e2fsck (and the kernel) read 28
		 * bits, so a flipped bit 24-27 is a block past the end */
		uint32_t b = ext2fs_le32_to_cpu(e[i].block) & 0x0fffffff;
		uint32_t h = i ? ext2fs_le32_to_cpu(e[i].hash) & ~1u : 0;
		uint32_t next = i + 1 < count ?
			ext2fs_le32_to_cpu(e[i + 1].hash) & ~1u : hi;

		if (h < prev) {
			htree_bad(ctx, dir, E3P_HTREE_ORDER, lblk, 0, NULL);
			return 1;
		}
		prev = h;
		if (!b || b >= nblk) {
			htree_bad(ctx, dir, E3P_HTREE_BLOCK, b, 0, NULL);
			return 1;
		}
		dx[b].refs++;
		/* inside the node's own range too: a leaf whose hashes
		 * fall outside it is where the bad key shows */
		dx[b].lo = h > lo ? h : lo;
		dx[b].hi = next < hi ? next : hi;
		children[(*nchild)++] = b;
	}
	return 0;
}

static blk64_t dir_block(struct chk_ctx *ctx, size_t first, size_t n,
			 uint32_t lblk)
{
	const struct chk_dblk *d = (const struct chk_dblk *)ctx->dblks.v + first;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d[mid].lblk == lblk)
			return d[mid].blk;
		if (d[mid].lblk < lblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Every live entry of a leaf must hash into the range its index gives. */
static int check_leaf(struct chk_ctx *ctx, struct dstate *ds, uint32_t lblk,
		      blk64_t pblk, const struct dx_blk *dx, int version)
{
	unsigned off = 0;

	if (chk_read_block(ctx, ctx->fd, pblk, ds->buf2))
		return 0;
	while (off + 8 <= ctx->bs) {
		struct ext2_dir_entry *de = (void *)(ds->buf2 + off);
		unsigned rec_len, nlen;
		ext2_dirhash_t hash = 0;

		/* a rec_len off the 4-byte grid would make the next read
		 * misaligned: stop, check_block reports it */
		if (chk_dirent_bad(ctx->fs, ds->buf2, off, ctx->bs))
			return 0;
		ext2fs_get_rec_len(ctx->fs, de, &rec_len);
		nlen = ext2fs_dirent_name_len(de);
		if (de->inode && nlen &&
		    !ext2fs_dirhash2(version, de->name, nlen, NULL, 0,
				     ctx->fs->super->s_hash_seed, &hash, NULL) &&
		    (hash < dx->lo || hash > dx->hi)) {
			htree_bad(ctx, ds->ino, E3P_HTREE_HASH, lblk, hash, NULL);
			return 1;
		}
		off += rec_len;
	}
	return 0;
}

/* An index node starts with an empty entry spanning the block and
 * naming nothing, which is how e2fsck (and the kernel's readdir) tell
 * it from a leaf. */
static int dx_node_header(struct chk_ctx *ctx, const unsigned char *blk)
{
	struct ext2_dir_entry de;
	unsigned rec_len = 0;

	memcpy(&de, blk, 8);
	return !de.inode && !ext2fs_get_rec_len(ctx->fs, &de, &rec_len) &&
	       rec_len == ctx->bs && !ext2fs_dirent_name_len(&de);
}

/* The dx root sits in block 0 after '.' and '..'; with indirect_levels 1
 * its children are index nodes whose entries follow a fake empty dirent.
 * Every other block is a leaf referenced exactly once. */
static void check_htree(struct chk_ctx *ctx, struct dstate *ds, size_t first,
			size_t n)
{
	const unsigned char *p = ds->buf;
	const struct chk_dblk *d = (const struct chk_dblk *)ctx->dblks.v + first;
	unsigned bs = ctx->bs, levels, nchild = 0, nsub = 0, i;
	uint32_t nblk = n ? d[n - 1].lblk + 1 : 0, *children = NULL, *sub = NULL;
	struct dx_blk *dx = NULL;
	int version;

	if (!n || chk_read_block(ctx, ctx->fd, dir_block(ctx, first, n, 0), ds->buf))
		return;
	/* flags bit 0 is the incompatible one (e2fsck clears the index for
	 * it; the other bits it leaves alone, and so do we) */
	if (ext2fs_le32_to_cpu(*(const uint32_t *)(p + 0x18)) != 0 ||
	    p[0x1D] != 8 || p[0x1C] > 5 || (p[0x1F] & 1)) {
		htree_bad(ctx, ds->ino, E3P_HTREE_ROOT, 0, 0,
			  p[0x1D] != 8 ? "info length" : p[0x1C] > 5 ?
			  "hash version" : (p[0x1F] & 1) ?
			  "incompatible flag" : "reserved field");
		return;
	}
	version = p[0x1C];
	if (version <= EXT2_HASH_TEA &&
	    (ctx->fs->super->s_flags & EXT2_FLAGS_UNSIGNED_HASH))
		version += 3;
	levels = p[0x1E];
	if (levels > 1) {
		htree_bad(ctx, ds->ino, E3P_HTREE_DEPTH, levels, 0, NULL);
		return;
	}
	dx = calloc(nblk, sizeof(*dx));
	children = malloc(sizeof(*children) * (bs / 8 + 1));
	sub = malloc(sizeof(*sub) * (size_t)(bs / 8 + 1) * (bs / 8 + 1));
	if (!dx || !children || !sub)
		goto out;
	if (check_dx_node(ctx, ds->ino, 0, p + 0x20, bs - 0x20, nblk, 0,
			  0xfffffffe, dx, children, &nchild))
		goto out;
	for (i = 0; levels && i < nchild; i++) {
		blk64_t b = dir_block(ctx, first, n, children[i]);

		dx[children[i]].node = 1;
		if (b && !chk_read_block(ctx, ctx->fd, b, ds->buf2) &&
		    !dx_node_header(ctx, ds->buf2)) {
			htree_bad(ctx, ds->ino, E3P_HTREE_NODE, children[i], 0,
				  "its header entry");
			goto out;
		}
		if (!b || chk_read_block(ctx, ctx->fd, b, ds->buf2) ||
		    check_dx_node(ctx, ds->ino, children[i], ds->buf2 + 8, bs - 8,
				  nblk, dx[children[i]].lo, dx[children[i]].hi,
				  dx, sub, &nsub))
			goto out;
	}
	for (i = 0; i < n; i++) {
		uint32_t l = d[i].lblk;

		if (!l || dx[l].node)
			continue;
		if (dx[l].refs != 1) {
			htree_bad(ctx, ds->ino, E3P_HTREE_UNREF, l, 0, NULL);
			break;
		}
		/* one leaf out of range is enough: the fix drops the index */
		if (check_leaf(ctx, ds, l, d[i].blk, &dx[l], version))
			break;
	}
out:
	free(dx);
	free(children);
	free(sub);
}

errcode_t chk_pass_dirs(struct chk_ctx *ctx)
{
	const struct chk_dblk *d = ctx->dblks.v;
	struct dstate ds;
	size_t i, j;

	memset(&ds, 0, sizeof(ds));
	ds.names.size = sizeof(struct dname);
	ds.buf = malloc(ctx->bs);
	ds.buf2 = malloc(ctx->bs);
	if (!ds.buf || !ds.buf2) {
		free(ds.buf);
		free(ds.buf2);
		return ENOMEM;
	}
	for (i = 0; i < ctx->dblks.n; i = j) {
		ds.ino = d[i].ino;
		chk_progress(ctx, 3, i, ctx->dblks.n);
		for (j = i; j < ctx->dblks.n && d[j].ino == ds.ino; j++)
			if (!(ctx->ist[ds.ino] & CI_BAD))
				check_block(ctx, &ds, &d[j]);
		if (ctx->ist[ds.ino] & CI_BAD)
			continue;
		if (d[i].lblk != 0)
			dadd(ctx, E3P_DIR_MISSING_DOT, ds.ino, 0, NULL, 0);
		finish_dir(ctx, &ds);
		if (ctx->ist[ds.ino] & CI_INDEX)
			check_htree(ctx, &ds, i, j - i);
	}
	chk_progress(ctx, 3, ctx->dblks.n, ctx->dblks.n);
	chk_vec_free(&ds.names);
	free(ds.arena);
	free(ds.buf);
	free(ds.buf2);
	return 0;
}
