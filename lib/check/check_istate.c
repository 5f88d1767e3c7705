/*
 * check_istate.c: the per-inode state kept across passes, compactly —
 * 16 flag bits per inode, link counts other than 1 in a sorted table,
 * reference counts above 1 in an open-addressing map, and one record per
 * directory for the tree (parent and '..'). e2fsck keeps the same facts
 * in bitmaps and its icount; this keeps e3fsck's memory at its level.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int chk_ftype(uint16_t mode)
{
	switch (mode & LINUX_S_IFMT) {
	case LINUX_S_IFREG: return EXT2_FT_REG_FILE;
	case LINUX_S_IFDIR: return EXT2_FT_DIR;
	case LINUX_S_IFCHR: return EXT2_FT_CHRDEV;
	case LINUX_S_IFBLK: return EXT2_FT_BLKDEV;
	case LINUX_S_IFLNK: return EXT2_FT_SYMLINK;
	case LINUX_S_IFIFO: return EXT2_FT_FIFO;
	case LINUX_S_IFSOCK: return EXT2_FT_SOCK;
	}
	return 0;
}

uint32_t chk_links(struct chk_ctx *ctx, ext2_ino_t ino)
{
	const struct chk_link *l = ctx->links.v;
	size_t lo = 0, hi = ctx->links.n;

	if (ctx->ist[ino] & CI_LINK1)
		return 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (l[mid].ino == ino)
			return l[mid].links;
		if (l[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static size_t slot(const struct chk_refmap *m, uint32_t key)
{
	size_t i = (key * 2654435761u) & (m->cap - 1);

	while (m->key[i] && m->key[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int grow(struct chk_refmap *m)
{
	struct chk_refmap n = { NULL, NULL, m->cap ? m->cap * 2 : 1024, m->n };
	size_t i;

	n.key = calloc(n.cap, sizeof(*n.key));
	n.val = calloc(n.cap, sizeof(*n.val));
	if (!n.key || !n.val) {
		free(n.key);
		free(n.val);
		return ENOMEM;
	}
	for (i = 0; i < m->cap; i++)
		if (m->key[i]) {
			size_t j = slot(&n, m->key[i]);

			n.key[j] = m->key[i];
			n.val[j] = m->val[i];
		}
	chk_refmap_free(m);
	*m = n;
	return 0;
}

void chk_refmap_free(struct chk_refmap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

int chk_ref_inc(struct chk_ctx *ctx, ext2_ino_t ino)
{
	struct chk_refmap *m = &ctx->refs;
	uint16_t *st = &ctx->ist[ino];
	size_t i;

	if (!(*st & CI_REF1)) {
		*st |= CI_REF1;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap && grow(m))
		return ENOMEM;
	i = slot(m, ino);
	if (!(*st & CI_REFN)) {
		*st |= CI_REFN;
		m->key[i] = ino;
		m->val[i] = 1;
		m->n++;
	}
	if (m->val[i] < UINT32_MAX)
		m->val[i]++;
	return 0;
}

uint32_t chk_refs(struct chk_ctx *ctx, ext2_ino_t ino)
{
	uint16_t st = ctx->ist[ino];

	if (!(st & CI_REF1))
		return 0;
	if (!(st & CI_REFN))
		return 1;
	return ctx->refs.val[slot(&ctx->refs, ino)];
}

errcode_t chk_build_dirs(struct chk_ctx *ctx)
{
	ext2_ino_t ino;

	ctx->dirs.size = sizeof(struct chk_dir);
	ctx->named.size = sizeof(struct chk_dir);
	for (ino = 1; ino <= ctx->ninodes; ino++) {
		struct chk_dir d = { ino, 0, 0 };

		if ((ctx->ist[ino] & CI_DIR) && chk_vec_push(&ctx->dirs, &d))
			return ENOMEM;
	}
	return 0;
}

static struct chk_dir *find(struct chk_vec *v, ext2_ino_t ino)
{
	struct chk_dir *d = v->v;
	size_t lo = 0, hi = v->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d[mid].ino == ino)
			return &d[mid];
		if (d[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct chk_dir *chk_dir(struct chk_ctx *ctx, ext2_ino_t ino)
{
	return find(&ctx->dirs, ino);
}

struct chk_dir *chk_named(struct chk_ctx *ctx, ext2_ino_t ino)
{
	return find(&ctx->named, ino);
}

ext2_ino_t chk_parent(struct chk_ctx *ctx, ext2_ino_t ino)
{
	struct chk_dir *d = chk_dir(ctx, ino);

	if (!d)
		d = chk_named(ctx, ino);
	return d ? d->parent : 0;
}
