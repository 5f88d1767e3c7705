/*
 * copyin_credit.c: --overwrite measured as replacement. The measure
 * (copyin_size.c) counts every source entry as new; an entry that replaces
 * one the image already holds at the same path gives back what e3_remove
 * frees. The credit is careful on three counts:
 *   - only entries that will really be replaced: same path, the image's
 *     entry not a directory and the source's not one either (a directory
 *     merges: only its inode is credited, since none is made; its blocks
 *     stay counted, as the merge may add to them), and the image's inode
 *     on its last link (a file with other names keeps its blocks);
 *   - per entry, never more than the measure counted for its replacement
 *     (min(freed, needed)), so every prefix of the copy fits whenever the
 *     total does, whatever the order: an entry never borrows from one
 *     replaced later;
 *   - freed blocks are reusable only after the running transaction
 *     commits (the journal may still need their old contents), so when
 *     the check passed only thanks to the credit, each removal commits at
 *     once (cp_release_freed, c->release_frees).
 * What it frees: i_blocks in filesystem blocks (data, indirect blocks and
 * the EA block), less the EA block when other inodes share it. Entries
 * the measure did not keep a listing for (past CP_LISTING_BUDGET), single
 * file sources and hard links get no credit: counted as new, as before.
 *
 * Archives are credited entry by entry as the archive measure
 * (copyin_archsize.c) streams them (cp_acredit_entry): nothing of the
 * archive is kept, only the set of image inodes already credited, so
 * that a path the archive names twice, or a directory it both names and
 * implies, is credited once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/image.h"
#include "alloc/alloc.h"
#include "journal/journal.h"
#include "copyin.h"

/* The destination directory if it exists, without making it (0 if not). */
ext2_ino_t cp_find_dest(struct cp_ctx *c, const char *dest)
{
	ext2_ino_t dir = EXT2_ROOT_INO;
	char *buf = strdup(dest ? dest : "/"), *p, *next;

	if (!buf || cp_path_clean(buf)) {
		free(buf);
		return 0;
	}
	for (p = buf; dir && p && *p; p = next) {
		uint16_t mode;

		next = strchr(p, '/');
		if (next)
			*next++ = '\0';
		if (e3_lookup(c->img, dir, p, &dir) ||
		    cp_ino_mode(c, dir, &mode) || !LINUX_S_ISDIR(mode))
			dir = 0;
	}
	free(buf);
	return dir;
}

/* What removing inode ino (its last link) frees, in blocks. */
static uint64_t freed_blocks(ext2_filsys fs, ext2_ino_t ino,
			     struct ext2_inode *in)
{
	uint64_t n = ext2fs_get_stat_i_blocks(fs, (struct ext2_inode *)in) /
		     (fs->blocksize / 512);
	blk64_t ea = ext2fs_file_acl_block(fs, in);
	struct ext2_ext_attr_header *h;

	if (!ea || !n)
		return n;
	/* a shared EA block only loses a reference */
	if (ext2fs_get_mem(fs->blocksize, &h))
		return n - 1;
	if (ext2fs_read_ext_attr3(fs, ea, h, ino) || h->h_refcount != 1)
		n--;
	ext2fs_free_mem(&h);
	return n;
}

/* The image's entry at name in dir: its inode, read (0: none). */
static ext2_ino_t image_entry(struct cp_ctx *c, ext2_ino_t dir,
			      const char *name, struct ext2_inode *in)
{
	ext2_ino_t ino;
	errcode_t err;

	if (e3_lookup(c->img, dir, name, &ino))
		return 0;
	e3_fs_lock(c->img);
	err = ext2fs_read_inode(c->img->fs, ino, in);
	e3_fs_unlock(c->img);
	return err ? 0 : ino;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void credit_entry(struct cp_ctx *c, ext2_ino_t ino,
			 struct ext2_inode *in, const struct cp_dent *d,
			 struct e3_copyin_need *credit)
{
	uint64_t freed;

	if (in->i_links_count != 1 || !d->counted)
		return;
	e3_fs_lock(c->img);
	freed = freed_blocks(c->img->fs, ino, in);
	e3_fs_unlock(c->img);
	credit->inodes++;
	credit->blocks += min64(freed, d->need_blocks);
}

/* One source directory (its measured listing) against image dir. Depth
 * is bounded by the source tree's, which the measure walked already. */
static void credit_dir(struct cp_ctx *c, const struct cp_listing *l,
		       ext2_ino_t dir, struct e3_copyin_need *credit)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct cp_dent *d = &l->e[i];
		const struct cp_listing *sub;
		struct ext2_inode in;
		ext2_ino_t ino;

		if (!d->measured || d->stat_err)
			continue;
		ino = image_entry(c, dir, d->name, &in);
		if (!ino)
			continue;
		if (S_ISDIR(d->st.mode)) {
			if (!LINUX_S_ISDIR(in.i_mode))
				continue;	/* refused: E3_NOT_DIR */
			if (d->counted)
				credit->inodes++;	/* merged, not made */
			sub = cp_listings_find(c->listings, d->st.dev, d->st.ino);
			if (sub)
				credit_dir(c, sub, ino, credit);
		} else if (!LINUX_S_ISDIR(in.i_mode)) {
			credit_entry(c, ino, &in, d, credit);
		}
	}
}

errcode_t cp_overwrite_credit(struct cp_ctx *c, const char *src,
			      const char *to, struct e3_copyin_need *credit)
{
	const struct cp_listing *l;
	struct stat st;
	ext2_ino_t dest;

	if (stat(src, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;	/* a single file: counted as new */
	dest = cp_find_dest(c, to);
	l = cp_listings_find(c->listings, st.st_dev, st.st_ino);
	if (dest && l)
		credit_dir(c, l, dest, credit);
	return 0;
}

/* The set of image inodes credited: open addressing, 0 the empty slot. */
static int inoset_add(struct cp_acredit *a, ext2_ino_t ino)
{
	size_t i;

	if (2 * (a->nset + 1) > a->capset) {
		size_t cap = a->capset ? a->capset * 2 : 256;
		ext2_ino_t *v = calloc(cap, sizeof(*v)), *old = a->set;

		if (!v)
			return -1;
		for (size_t j = 0; j < a->capset; j++) {
			if (!old[j])
				continue;
			for (i = old[j] * 2654435761u % cap; v[i];
			     i = (i + 1) % cap)
				;
			v[i] = old[j];
		}
		free(old);
		a->set = v;
		a->capset = cap;
	}
	for (i = ino * 2654435761u % a->capset; a->set[i];
	     i = (i + 1) % a->capset)
		if (a->set[i] == ino)
			return 0;	/* credited before */
	a->set[i] = ino;
	a->nset++;
	return 1;
}

/* The image directory that holds rel's last component (rel cleaned,
 * relative to a->dest), following only directories as cp_resolve_parent
 * does (a symlink on the way is refused by the copy: nothing credited);
 * 0 when it is not there. The last parent is kept: archives list a
 * directory's entries together. */
static ext2_ino_t acredit_parent(struct cp_acredit *a, const char *rel,
				 const char **leaf)
{
	const char *slash = strrchr(rel, '/');
	size_t plen = slash ? (size_t)(slash - rel) : 0;
	ext2_ino_t dir = a->dest;
	char *buf, *p, *next;

	*leaf = slash ? slash + 1 : rel;
	if (a->last_path && strlen(a->last_path) == plen &&
	    !strncmp(a->last_path, rel, plen))
		return a->last_ino;
	buf = strndup(rel, plen);
	if (!buf)
		return 0;
	for (p = buf; dir && *p; p = next) {
		uint16_t mode;

		next = strchr(p, '/');
		if (next)
			*next++ = '\0';
		else
			next = p + strlen(p);
		if (e3_lookup(a->c->img, dir, p, &dir) ||
		    cp_ino_mode(a->c, dir, &mode) || !LINUX_S_ISDIR(mode))
			dir = 0;
	}
	free(a->last_path);
	a->last_path = strndup(rel, plen);
	a->last_ino = a->last_path ? dir : 0;
	free(buf);
	return dir;
}

void cp_acredit_entry(struct cp_acredit *a, const char *rel, int is_dir,
		      int link, uint64_t need_blocks)
{
	struct cp_ctx *c = a->c;
	struct ext2_inode in;
	const char *leaf;
	ext2_ino_t dir, ino;
	uint64_t freed;

	if (!a->dest || !*rel || link)
		return;		/* hard links make no inode: as for trees */
	dir = acredit_parent(a, rel, &leaf);
	if (!dir || !(ino = image_entry(c, dir, leaf, &in)))
		return;
	if (is_dir != LINUX_S_ISDIR(in.i_mode))
		return;		/* a directory is never replaced by a file,
				   nor a file by a directory */
	if (!is_dir && in.i_links_count != 1)
		return;		/* its other names keep its blocks */
	if (inoset_add(a, ino) != 1)
		return;		/* credited once (or no memory: none) */
	a->credit.inodes++;	/* replaced, or merged and not made */
	if (is_dir)
		return;		/* its blocks stay counted: a merge adds */
	e3_fs_lock(c->img);
	freed = freed_blocks(c->img->fs, ino, &in);
	e3_fs_unlock(c->img);
	a->credit.blocks += min64(freed, need_blocks);
}

void cp_acredit_free(struct cp_acredit *a)
{
	free(a->set);
	free(a->last_path);
	a->set = NULL;
	a->last_path = NULL;
	a->nset = a->capset = 0;
}

errcode_t cp_release_freed(struct cp_ctx *c, uint64_t want)
{
	struct e3_image *img = c->img;
	errcode_t err = 0;
	int need;

	if (!img->alloc)
		return 0;
	e3_fs_lock(img);
	need = e3_alloc_deferred_count(img->alloc) &&
	       (want == UINT64_MAX || e3_alloc_free_count(img->alloc) < want);
	e3_fs_unlock(img);
	if (!need)
		return 0;
	/* the commit must not take files still being written (their names
	 * would survive a crash empty): they are finished first */
	if (img->journal && (err = cp_drain(c)))
		return err;
	e3_fs_lock(img);
	/* without a journal nothing replays an old copy: release */
	if (img->journal)
		err = e3_journal_commit(img->journal, 0);
	else {
		e3_alloc_seal(img->alloc);
		e3_alloc_committed(img->alloc);
	}
	e3_fs_unlock(img);
	return err;
}
