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
static ext2_ino_t find_dest(struct cp_ctx *c, const char *dest)
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
	dest = find_dest(c, to);
	l = cp_listings_find(c->listings, st.st_dev, st.st_ino);
	if (dest && l)
		credit_dir(c, l, dest, credit);
	return 0;
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
	else
		e3_alloc_committed(img->alloc);
	e3_fs_unlock(img);
	return err;
}
