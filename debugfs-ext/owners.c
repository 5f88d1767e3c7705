/*
 * owners.c: what holds each of a list of blocks, in words. Group
 * metadata is the inspection layer's (e3_meta_owner, no inode read); the
 * rest takes one pass over the inodes, looking each block met up in the
 * list sorted by block number, so a long list (a journal's worth of
 * logged blocks for jtrans) costs a search per block, not a scan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "owners.h"

/* A block asked about and, once the inodes are walked, who maps it. */
struct want {
	blk64_t blk;
	ext2_ino_t ino;		/* 0: no inode maps it (yet) */
	e2_blkcnt_t lblk;	/* its logical number; < 0: a map block */
	int ea;			/* the inode's xattr block */
	int dir;		/* the inode is a directory */
};

struct owner_walk {
	struct want *w;		/* sorted by blk */
	size_t n, left;
	ext2_ino_t ino;
	int dir;
};

static int want_cmp(const void *a, const void *b)
{
	const struct want *x = a, *y = b;

	return x->blk < y->blk ? -1 : x->blk > y->blk;
}

static void found(struct owner_walk *o, blk64_t b, e2_blkcnt_t lblk, int ea)
{
	size_t lo = 0, hi = o->n;

	while (lo < hi) {	/* the first entry >= b */
		size_t mid = lo + (hi - lo) / 2;

		if (o->w[mid].blk < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < o->n && o->w[lo].blk == b; lo++) {
		if (o->w[lo].ino)
			continue;
		o->w[lo] = (struct want){ b, o->ino, lblk, ea, o->dir };
		o->left--;
	}
}

static int owner_visit(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		       blk64_t ref_blk, int ref_offset, void *priv)
{
	struct owner_walk *o = priv;

	(void)fs; (void)ref_blk; (void)ref_offset;
	found(o, *blocknr, blockcnt, 0);
	return o->left ? 0 : BLOCK_ABORT;
}

/* One pass over the inodes for every block still unexplained. */
static errcode_t walk_inodes(ext2_filsys fs, struct owner_walk *o)
{
	ext2_inode_scan scan;
	struct ext2_inode in;
	ext2_ino_t ino;
	errcode_t err;

	if ((err = ext2fs_open_inode_scan(fs, 0, &scan)))
		return err;
	while (o->left && !(err = ext2fs_get_next_inode(scan, &ino, &in)) &&
	       ino) {
		if (!in.i_links_count && ino != fs->super->s_journal_inum &&
		    ino != EXT2_RESIZE_INO)
			continue;
		o->ino = ino;
		o->dir = LINUX_S_ISDIR(in.i_mode);
		if (ext2fs_file_acl_block(fs, &in))
			found(o, ext2fs_file_acl_block(fs, &in), 0, 1);
		if (o->left && ext2fs_inode_has_valid_blocks2(fs, &in) &&
		    (err = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY,
						 NULL, owner_visit, o)))
			break;
	}
	ext2fs_close_inode_scan(scan);
	return err;
}

static char *meta_text(const struct e3_meta_owner *m)
{
	char idx[64] = "", grp[32] = "", it[80] = "", *s = NULL;

	if (m->kind == E3_META_DESC || m->kind == E3_META_RESERVED_GDT)
		snprintf(idx, sizeof(idx), " block %llu",
			 (unsigned long long)m->index);
	if (m->kind != E3_META_BOOT)
		snprintf(grp, sizeof(grp), " of group %u", m->group);
	if (m->kind == E3_META_INODE_TABLE)
		snprintf(it, sizeof(it), " (block %llu, inodes %u-%u)",
			 (unsigned long long)m->index, m->ino_first,
			 m->ino_last);
	if (asprintf(&s, "%s%s%s%s", e3_meta_kind_name(m->kind), idx, grp,
		     it) < 0)
		return NULL;
	return s;
}

static char *inode_text(ext2_filsys fs, const struct want *w)
{
	static const char *const map[] = { "IND", "DIND", "TIND" };
	char who[64], role[64], *name = NULL, *s = NULL;
	int r;

	if (w->ea)
		snprintf(role, sizeof(role), "xattr block");
	else if (w->lblk < 0)
		snprintf(role, sizeof(role), "indirect block %s",
			 w->lblk >= -3 ? map[-w->lblk - 1] : "?");
	else
		snprintf(role, sizeof(role), "data block, logical %lld",
			 (long long)w->lblk);
	if (w->ino == fs->super->s_journal_inum ||
	    w->ino == EXT2_RESIZE_INO) {
		snprintf(who, sizeof(who), "%s (inode %u, ",
			 w->ino == EXT2_RESIZE_INO ? "reserved GDT map" :
			 "journal", w->ino);
		r = asprintf(&s, "%s%s)", who, role);
	} else {
		name = dbg_path_of(fs, w->ino);
		r = asprintf(&s, "%s %u %s (%s)", w->dir ? "directory" : "inode",
			     w->ino, name ? name : "?", role);
		ext2fs_free_mem(&name);
	}
	return r < 0 ? NULL : s;
}

void dbg_owners_free(char **text, size_t n)
{
	if (!text)
		return;
	for (size_t i = 0; i < n; i++)
		free(text[i]);
	free(text);
}

char **dbg_owners(struct dbg *d, ext2_filsys fs, const blk64_t *b, size_t n)
{
	struct owner_walk o = { 0 };
	struct e3_meta_owner *m = calloc(n ? n : 1, sizeof(*m));
	char **text = calloc(n ? n : 1, sizeof(*text));
	errcode_t err = ENOMEM;

	o.w = calloc(n ? n : 1, sizeof(*o.w));
	if (!m || !text || !o.w)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		if ((err = e3_meta_owner(fs, b[i], &m[i])))
			goto fail;
		if (m[i].kind != E3_META_NONE ||
		    (fs->block_map && !ext2fs_test_block_bitmap2(fs->block_map,
								 b[i])))
			continue;	/* nothing to look for */
		o.w[o.n++].blk = b[i];
	}
	o.left = o.n;
	qsort(o.w, o.n, sizeof(*o.w), want_cmp);
	if (o.left && (err = walk_inodes(fs, &o))) {
		dbg_fail(d, err, "reading the inodes");
		goto out;
	}
	err = ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct want key = { .blk = b[i] }, *w;

		if (m[i].kind != E3_META_NONE)
			text[i] = meta_text(&m[i]);
		else if (fs->block_map &&
			 !ext2fs_test_block_bitmap2(fs->block_map, b[i]))
			text[i] = strdup("free");
		else if ((w = bsearch(&key, o.w, o.n, sizeof(*o.w), want_cmp)) &&
			 w->ino)
			text[i] = inode_text(fs, w);
		else
			text[i] = strdup(fs->block_map ?
					 "in use, owned by no inode" :
					 "owned by no inode");
		if (!text[i])
			goto fail;
	}
	free(m);
	free(o.w);
	return text;
fail:
	dbg_fail(d, err, "what holds the blocks");
out:
	dbg_owners_free(text, n);
	free(m);
	free(o.w);
	return NULL;
}
