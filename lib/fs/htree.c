/*
 * htree.c: once a copy-in has put every entry in place, each listed
 * directory is rewritten exactly as `e2fsck -fD` (e2fsprogs 1.47.0,
 * e2fsck/rehash.c, default configuration) would rewrite it, so that a
 * later `e2fsck -fD` finds nothing to change. With dir_index, directories
 * of more than one block get an htree index the kernel reads; the others
 * (and all of them without dir_index) get e2fsck's packed entry order.
 *
 * WHAT e2fsck -fD DOES (the facts this file relies on, read from rehash.c):
 *  - Every directory is rebuilt. It is "compressed" (no index) when the
 *    filesystem lacks dir_index, when the directory is under two blocks
 *    long, or when its entries other than "." and ".." would take less
 *    than blocksize - 24 bytes at their minimal record lengths (8 + name,
 *    rounded up to 4); otherwise it is indexed.
 *  - Entries with inode 0 are dropped. Indexed: "." and ".." are left out
 *    of the leaves (".."'s inode becomes the root's parent) and the rest is
 *    sorted by hash, then minor hash, then name (bytes of the common
 *    length, then the shorter name first; equal names: higher inode
 *    first). The hash is the superblock's default one with its seed,
 *    switched to the unsigned variant when s_flags says so.
 *  - Compressed: the first two entries read ("." and "..") stay first; the
 *    others are ordered by inode number, ties in name order (a name sort,
 *    then glibc's stable qsort by inode).
 *  - Filling: entries go in order at their minimal record length. An entry
 *    that does not fit in what is left of the block starts a new one, and
 *    the previous entry's record stretches to the block's end. After an
 *    entry, when less than `slack` bytes are left, that entry's record
 *    takes the rest and the block is closed. slack is 20% of the block
 *    (e2fsck.conf indexed_dir_slack_percentage, default 20; rounded down)
 *    for indexed directories and one minimal record (12 bytes) for
 *    compressed ones. The last entry takes whatever is left of its block.
 *  - Hash runs may be split between leaves: a leaf whose first entry has
 *    the same hash as the previous leaf's last entry is indexed by that
 *    hash with the low ("continued") bit set; otherwise by its first hash.
 *  - Indexed layout: block 0 is the root, the leaves follow as blocks
 *    1..n, then the interior nodes if any. Root: "." (record 12) and ".."
 *    (record blocksize - 12), both typed directory when the filetype
 *    feature is on; the root info (hash version = s_def_hash_version,
 *    info length 8, indirect levels); limit (blocksize - 32) / 8 entries.
 *    One level when the root can point at every leaf. Otherwise nodes (an
 *    empty entry of record blocksize, then limit (blocksize - 8) / 8)
 *    are filled to their limit in leaf order, each root entry pointing at
 *    one node with the hash of the node's first leaf. (A third level is
 *    largedir's, which ext3 lacks: such a directory is left linear, which
 *    is valid ext3.) Entry 0 of every index block carries count/limit
 *    instead of a hash. Everything else is zero.
 *  - The blocks are written in place over the directory's own blocks in
 *    logical order; missing ones are added; the size becomes blocks *
 *    blocksize, the index flag is set or cleared, extra blocks are punched
 *    away - except in lost+found, whose extra blocks stay as empty ones.
 *
 * Everything goes through libext2fs and the image's io channel (so the
 * journal captures it) under fs_lock, one directory per atomic operation.
 * Nothing is written before the new blocks are built in memory; a
 * directory already in e2fsck's form is not written at all. A failure
 * after the first write puts the old blocks back (those blocks are then
 * in the running transaction, so rewriting them allocates nothing) and
 * gives back added blocks; when that cannot be done cleanly the journal
 * is failed, so the half-built state is never committed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "alloc/alloc.h"
#include "blockmap.h"
#include "journal/journal.h"
#include "load_int.h"
#include "util/grow.h"

#define SLACK_PERCENT	20	/* e2fsck's indexed_dir_slack_percentage */

struct hent {
	uint32_t hash, minor;
	ext2_ino_t ino;
	uint8_t type, len;
	const char *name;		/* in hdir.old */
};

struct hdir {
	ext2_filsys fs;
	unsigned bs;
	ext2_ino_t ino, parent;
	int compress, keep_size;	/* keep_size: lost+found */
	int hash_alg;
	struct hent *e;
	size_t n, cap;
	uint64_t dir_size;		/* minimal records, dots left out */
	blk64_t *blk;			/* the directory's blocks, lblk order */
	size_t nblk, capblk, had;
	int holes;
	char *old;			/* the had blocks as read */
	char *out;			/* the blocks e2fsck would write */
	uint32_t *lhash;		/* per out block: its index hash */
	size_t nout, capout;
};

static unsigned rec_len(unsigned len)
{
	return (8 + len + 3) & ~3u;
}

/* ---- reading ---------------------------------------------------------- */

static errcode_t push_blk(struct hdir *d, blk64_t pblk)
{
	blk64_t *nb = e3_grow(d->blk, d->nblk, &d->capblk, sizeof(*nb), 64);

	if (!nb)
		return ENOMEM;
	d->blk = nb;
	d->blk[d->nblk++] = pblk;
	return 0;
}

static int collect_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t cnt,
			 blk64_t ref, int off, void *priv)
{
	struct hdir *d = priv;

	(void)fs; (void)ref; (void)off;
	if (cnt < 0)
		return 0;
	if ((size_t)cnt != d->nblk)
		d->holes = 1;
	return push_blk(d, *blocknr) ? BLOCK_ABORT : 0;
}

static int is_dot(const char *name, unsigned len)
{
	return name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.'));
}

static errcode_t add_entry(struct hdir *d, struct ext2_dir_entry *de)
{
	unsigned len = ext2fs_dirent_name_len(de);
	struct hent *h, *ne;

	if (len == 0)
		return EXT2_ET_DIR_CORRUPTED;
	if (is_dot(de->name, len)) {
		if (len == 2)
			d->parent = de->inode;
	} else {
		d->dir_size += rec_len(len);
	}
	ne = e3_grow(d->e, d->n, &d->cap, sizeof(*ne), 256);
	if (!ne)
		return ENOMEM;
	d->e = ne;
	h = &d->e[d->n++];
	h->ino = de->inode;
	h->len = (uint8_t)len;
	h->type = (uint8_t)ext2fs_dirent_file_type(de);
	h->name = de->name;
	h->hash = h->minor = 0;
	return 0;
}

static errcode_t read_entries(struct hdir *d)
{
	unsigned bs = d->bs, off, rl;
	struct ext2_dir_entry *de;
	errcode_t err;

	d->old = malloc(d->nblk * bs);
	if (!d->old)
		return ENOMEM;
	for (size_t i = 0; i < d->nblk; i++) {
		char *b = d->old + i * bs;

		err = ext2fs_read_dir_block4(d->fs, d->blk[i], b, 0, d->ino);
		if (err)
			return err;
		for (off = 0; off < bs; off += rl) {
			de = (struct ext2_dir_entry *)(b + off);
			err = ext2fs_get_rec_len(d->fs, de, &rl);
			if (err)
				return err;
			if (rl < 8 || rl % 4 || off + rl > bs ||
			    ext2fs_dirent_name_len(de) + 8u > rl)
				return EXT2_ET_DIR_CORRUPTED;
			if (de->inode && (err = add_entry(d, de)))
				return err;
		}
	}
	return 0;
}

/* ---- ordering ----------------------------------------------------------- */

static int name_cmp(const struct hent *a, const struct hent *b)
{
	int r = memcmp(a->name, b->name, a->len < b->len ? a->len : b->len);

	if (r)
		return r;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->ino == b->ino ? 0 : a->ino > b->ino ? -1 : 1;
}

static int hash_cmp(const void *x, const void *y)
{
	const struct hent *a = x, *b = y;

	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (a->minor != b->minor)
		return a->minor < b->minor ? -1 : 1;
	return name_cmp(a, b);
}

static int ino_cmp(const void *x, const void *y)
{
	const struct hent *a = x, *b = y;

	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return name_cmp(a, b);
}

/* Indexed: the dots leave the list, the rest is hashed and sorted.
 * Compressed: the first two stay, the rest goes in inode order. */
static errcode_t order_entries(struct hdir *d)
{
	size_t i, k = 0;
	errcode_t err;

	if (d->compress) {
		if (d->n > 2)
			qsort(d->e + 2, d->n - 2, sizeof(*d->e), ino_cmp);
		return 0;
	}
	for (i = 0; i < d->n; i++) {
		struct hent *h = &d->e[i];

		if (is_dot(h->name, h->len))
			continue;
		err = ext2fs_dirhash2(d->hash_alg, h->name, h->len, NULL, 0,
				      d->fs->super->s_hash_seed, &h->hash,
				      &h->minor);
		if (err)
			return err;
		d->e[k++] = *h;
	}
	d->n = k;
	qsort(d->e, d->n, sizeof(*d->e), hash_cmp);
	return 0;
}

/* ---- building the new blocks in memory ---------------------------------- */

static errcode_t new_block(struct hdir *d)
{
	if (d->nout == d->capout) {
		size_t cap = d->capout ? d->capout * 2 : d->nblk + 16;
		char *no = realloc(d->out, cap * d->bs);
		uint32_t *nh;

		if (!no)
			return ENOMEM;
		d->out = no;
		nh = realloc(d->lhash, cap * sizeof(*nh));
		if (!nh)
			return ENOMEM;
		d->lhash = nh;
		d->capout = cap;
	}
	memset(d->out + d->nout * d->bs, 0, d->bs);
	d->lhash[d->nout++] = 0;
	return 0;
}

static struct ext2_dir_entry_2 *dirent_at(struct hdir *d, size_t blk,
					  unsigned off)
{
	return (struct ext2_dir_entry_2 *)(d->out + blk * d->bs + off);
}

static void put_dirent(struct ext2_dir_entry_2 *de, ext2_ino_t ino,
		       unsigned rl, const char *name, unsigned len,
		       unsigned type)
{
	de->inode = ino;
	de->rec_len = (uint16_t)rl;
	de->name_len = (uint8_t)len;
	de->file_type = (uint8_t)type;
	memcpy(de->name, name, len);
}

/* e2fsck's fill: see the top comment. last is the offset of the current
 * block's last entry, or -1 while the block is empty. */
static errcode_t fill_blocks(struct hdir *d)
{
	unsigned bs = d->bs, off = 0, left = bs, slack;
	struct ext2_dir_entry_2 *de;
	uint32_t prev_hash = 1;
	long last = -1;
	errcode_t err;

	slack = d->compress ? rec_len(1) : bs * SLACK_PERCENT / 100;
	if (slack < rec_len(1))
		slack = rec_len(1);
	d->nout = 0;
	if (!d->compress && (err = new_block(d)))	/* the root's place */
		return err;
	if ((err = new_block(d)))
		return err;
	for (size_t i = 0; i < d->n; i++) {
		const struct hent *h = &d->e[i];
		unsigned r = rec_len(h->len);

		if (r > left) {
			if (last >= 0 && left)
				dirent_at(d, d->nout - 1, last)->rec_len +=
					(uint16_t)left;
			if ((err = new_block(d)))
				return err;
			off = 0;
			last = -1;
		}
		left = bs - off;
		if (off == 0)
			d->lhash[d->nout - 1] = h->hash == prev_hash ?
						h->hash | 1 : h->hash;
		de = dirent_at(d, d->nout - 1, off);
		put_dirent(de, h->ino, r, h->name, h->len, h->type);
		last = off;
		off += r;
		left -= r;
		if (left < slack) {
			de->rec_len += (uint16_t)left;
			off += left;
			left = 0;
		}
		prev_hash = h->hash;
	}
	if (last < 0)
		dirent_at(d, d->nout - 1, 0)->rec_len = (uint16_t)bs;
	else if (left)
		dirent_at(d, d->nout - 1, last)->rec_len += (uint16_t)left;
	return 0;
}

static void put_countlimit(char *p, unsigned limit, unsigned count)
{
	struct ext2_dx_countlimit *cl = (struct ext2_dx_countlimit *)p;

	cl->limit = ext2fs_cpu_to_le16((uint16_t)limit);
	cl->count = ext2fs_cpu_to_le16((uint16_t)count);
}

/* Index entry i of the block at p (entry 0 holds count/limit instead of a
 * hash). */
static void put_dx(char *p, size_t i, uint32_t hash, size_t block)
{
	struct ext2_dx_entry *ent = (struct ext2_dx_entry *)p + i;

	if (i)
		ent->hash = ext2fs_cpu_to_le32(hash);
	ent->block = ext2fs_cpu_to_le32((uint32_t)block);
}

static void put_root(struct hdir *d, unsigned levels, unsigned limit,
		     size_t count)
{
	unsigned ft = ext2fs_has_feature_filetype(d->fs->super) ?
		      EXT2_FT_DIR : 0;
	struct ext2_dx_root_info *info;

	put_dirent(dirent_at(d, 0, 0), d->ino, 12, ".", 1, ft);
	put_dirent(dirent_at(d, 0, 12), d->parent, d->bs - 12, "..", 2, ft);
	info = (struct ext2_dx_root_info *)(d->out + 24);
	info->hash_version = d->fs->super->s_def_hash_version;
	info->info_length = 8;
	info->indirect_levels = (uint8_t)levels;
	put_countlimit(d->out + 32, limit, (unsigned)count);
}

/* Block 0 and, when the root cannot point at every leaf, one level of
 * nodes appended after the leaves. */
static errcode_t build_index(struct hdir *d)
{
	unsigned root_limit = (d->bs - 32) / 8, node_limit = (d->bs - 8) / 8;
	size_t nl = d->nout - 1, nn, k, i;
	errcode_t err;

	if (nl <= root_limit) {
		put_root(d, 0, root_limit, nl);
		for (i = 0; i < nl; i++)
			put_dx(d->out + 32, i, d->lhash[1 + i], 1 + i);
		return 0;
	}
	nn = (nl + node_limit - 1) / node_limit;
	if (nn > root_limit)
		return EXT2_ET_DIR_NO_SPACE;	/* would need largedir */
	for (k = 0; k < nn; k++) {
		size_t lo = 1 + k * node_limit, cnt = nl + 1 - lo;
		char *p;

		if (cnt > node_limit)
			cnt = node_limit;
		if ((err = new_block(d)))
			return err;
		p = d->out + (d->nout - 1) * d->bs;
		put_dirent((struct ext2_dir_entry_2 *)p, 0, d->bs, "", 0, 0);
		put_countlimit(p + 8, node_limit, (unsigned)cnt);
		for (i = 0; i < cnt; i++)
			put_dx(p + 8, i, d->lhash[lo + i], lo + i);
	}
	put_root(d, 1, root_limit, nn);
	for (k = 0; k < nn; k++)
		put_dx(d->out + 32, k, d->lhash[1 + k * node_limit],
		       nl + 1 + k);
	return 0;
}

/* lost+found keeps its blocks: the extra ones as empty blocks. */
static errcode_t pad_blocks(struct hdir *d)
{
	errcode_t err;

	while (d->keep_size && d->nout < d->had) {
		if ((err = new_block(d)))
			return err;
		dirent_at(d, d->nout - 1, 0)->rec_len = (uint16_t)d->bs;
	}
	return 0;
}

static errcode_t build(struct hdir *d, uint64_t isize)
{
	errcode_t err;

	d->compress = !ext2fs_has_feature_dir_index(d->fs->super) ||
		      isize / d->bs < 2 ||
		      d->dir_size < (uint64_t)d->bs - 24;
	err = order_entries(d);
	if (!err)
		err = fill_blocks(d);
	if (!err && !d->compress)
		err = build_index(d);
	if (!err)
		err = pad_blocks(d);
	return err;
}

/* Every leaf but the last is closed either by the slack rule (what its
 * entries take exceeds blocksize - slack) or by an entry that does not fit
 * (then they take more than blocksize - that entry's record). */
uint64_t cp_htree_blocks_max(unsigned bs, uint64_t bytes, unsigned rmax)
{
	unsigned slack = bs * SLACK_PERCENT / 100, m;
	unsigned root_limit = (bs - 32) / 8, node_limit = (bs - 8) / 8;
	uint64_t leaves, nodes = 0;

	if (slack < rec_len(1))
		slack = rec_len(1);
	m = slack > rmax ? slack : rmax;
	leaves = 1 + bytes / (bs - m);
	if (leaves > root_limit)
		nodes = (leaves + node_limit - 1) / node_limit;
	return 1 + leaves + nodes;
}

/* ---- writing ------------------------------------------------------------- */


/* Adds blocks had..nout-1; all or nothing as far as space goes. */
static errcode_t grow(struct e3_image *img, struct hdir *d)
{
	ext2_filsys fs = d->fs;
	blk64_t pblk;
	errcode_t err = 0;

	/* Growth that runs out of space half way cannot be undone cleanly:
	 * a failed ext2fs_bmap2 keeps the indirect block it marked but never
	 * wrote into the inode. So every block (and the indirect blocks above
	 * them) must be there first. */
	if (img->alloc && e3_alloc_free_count(img->alloc) < (d->nout - d->had) +
	    bm_meta_between(fs->blocksize / 4, d->had - 1, d->nout))
		return E3_IMAGE_FULL;
	while (!err && d->nblk < d->nout) {
		err = ext2fs_bmap2(fs, d->ino, NULL, NULL, BMAP_ALLOC,
				   d->nblk, NULL, &pblk);
		if (!err)
			err = push_blk(d, pblk);
	}
	if (err) {
		/* the free hook revokes; a block bmap2 kept is not ours to
		 * find, so the journal must not commit this */
		ext2fs_punch(fs, d->ino, NULL, NULL, d->had, ~0ULL);
		d->nblk = d->had;
		e3_op_poison(img, err);
	}
	return err;
}

/* Puts blocks [0, upto) back as they were read and gives back the added
 * ones. The blocks were written in this operation, so the journal holds
 * them already and rewriting them needs no memory. */
static void undo(struct e3_image *img, struct hdir *d, size_t upto,
		 errcode_t why)
{
	errcode_t err = 0;

	for (size_t i = 0; i < upto && i < d->had; i++) {
		char *o = d->old + i * d->bs;

		if (memcmp(o, d->out + i * d->bs, d->bs) == 0)
			continue;	/* never written */
		if ((err = ext2fs_write_dir_block4(d->fs, d->blk[i], o, 0,
						   d->ino)))
			break;
	}
	if (!err && d->nblk > d->had)
		err = ext2fs_punch(d->fs, d->ino, NULL, NULL, d->had, ~0ULL);
	if (err)
		e3_op_poison(img, why);
}

static errcode_t write_dir(struct e3_image *img, struct hdir *d)
{
	ext2_filsys fs = d->fs;
	struct ext2_inode inode;
	size_t i;
	errcode_t err = 0;

	if (d->nout > d->had && (err = grow(img, d)))
		return err;
	for (i = 0; i < d->nout; i++) {
		const char *b = d->out + i * d->bs;

		if (i < d->had && !memcmp(b, d->old + i * d->bs, d->bs))
			continue;
		err = ext2fs_write_dir_block4(fs, d->blk[i], (void *)b, 0,
					      d->ino);
		if (err)
			break;	/* a failed whole-block write changed nothing */
	}
	if (err) {
		undo(img, d, i, err);
		return err;
	}
	err = ext2fs_read_inode(fs, d->ino, &inode);
	if (!err) {
		if (d->compress)
			inode.i_flags &= ~EXT2_INDEX_FL;
		else
			inode.i_flags |= EXT2_INDEX_FL;
		err = ext2fs_inode_size_set(fs, &inode,
					    (uint64_t)d->nout * d->bs);
	}
	if (!err)
		err = ext2fs_write_inode(fs, d->ino, &inode);
	if (err) {
		/* the inode cache may hold the new inode already */
		undo(img, d, d->nout, err);
		e3_op_poison(img, err);
		return err;
	}
	if (d->nout < d->had) {
		for (i = d->nout; i < d->had && img->journal; i++)
			e3_journal_revoke(img->journal, d->blk[i]);
		err = ext2fs_punch(fs, d->ino, NULL, NULL, d->nout, ~0ULL);
		if (err)
			e3_op_poison(img, err);
	}
	return err;
}

/* build's verdict for a directory that cannot be indexed (nothing written
 * yet): it stays linear, which is valid ext3. Never leaves this file. */
#define E3_LEAVE_AS_IS ((errcode_t)-1)

/* The rewrite is one transaction, its size known only now: room in the
 * journal (committing first if need be), or E3_JOURNAL_TOO_SMALL when
 * even a transaction of its own could not hold it. */
static errcode_t reserve_room(struct e3_image *img, const struct hdir *d)
{
	uint64_t n = d->nout > d->had ? d->nout : d->had;

	if (!img->journal)
		return 0;
	/* directory blocks, their indirect blocks, the inode's block */
	return e3_journal_reserve(img->journal,
				  n + 2 * (n / (d->bs / 4) + 1) + 4);
}

/* Already what e2fsck would write: same blocks, size and index flag. */
static int unchanged(struct hdir *d, const struct ext2_inode *inode)
{
	int indexed = !!(inode->i_flags & EXT2_INDEX_FL);

	return d->nout == d->had && indexed == !d->compress &&
	       EXT2_I_SIZE(inode) == (uint64_t)d->had * d->bs &&
	       memcmp(d->out, d->old, d->had * d->bs) == 0;
}

static errcode_t rebuild_one(struct e3_image *img, ext2_ino_t ino,
			     ext2_ino_t lost_found)
{
	ext2_filsys fs = img->fs;
	struct ext2_inode inode;
	struct hdir d = { .fs = fs, .bs = fs->blocksize, .ino = ino };
	errcode_t err;

	/* read, rebuilt and written under one hold of fs_lock: with no
	 * commit in flight, reserve_room never has to wait for one */
	if (img->journal)
		e3_journal_wait_quiet(img->journal);
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (!LINUX_S_ISDIR(inode.i_mode) ||
	    (inode.i_flags & EXT4_INLINE_DATA_FL))
		return 0;
	err = e3_dc_dir_owned(img, ino);	/* all its blocks are rewritten */
	if (err)
		return err;
	d.keep_size = ino == lost_found;
	d.hash_alg = fs->super->s_def_hash_version;
	if (d.hash_alg <= EXT2_HASH_TEA &&
	    (fs->super->s_flags & EXT2_FLAGS_UNSIGNED_HASH))
		d.hash_alg += 3;
	err = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY |
				    BLOCK_FLAG_DATA_ONLY, NULL, collect_block,
				    &d);
	d.had = d.nblk;
	/* only whole directories whose size matches their blocks */
	if (!err && !d.holes && d.nblk &&
	    EXT2_I_SIZE(&inode) == (uint64_t)d.nblk * d.bs) {
		err = read_entries(&d);
		if (!err) {
			err = build(&d, EXT2_I_SIZE(&inode));
			/* more leaves than two index levels can point at
			 * (a third needs largedir, not ext3) */
			if (err == EXT2_ET_DIR_NO_SPACE)
				err = E3_LEAVE_AS_IS;
		}
		if (!err && !unchanged(&d, &inode))
			err = reserve_room(img, &d);
		if (err == E3_JOURNAL_TOO_SMALL || err == E3_LEAVE_AS_IS) {
			err = 0;	/* left as it is: still valid ext3 */
		} else if (!err && !unchanged(&d, &inode)) {
			e3_dc_forget(img, ino);	/* its blocks change */
			err = write_dir(img, &d);
		}
	}
	free(d.e);
	free(d.blk);
	free(d.old);
	free(d.out);
	free(d.lhash);
	return err;
}

errcode_t e3_htree_build_all(e3_image_t *img, const ext2_ino_t *dirs,
			     size_t ndirs)
{
	ext2_ino_t lost_found = 0;
	errcode_t err, err2;

	if ((err = e3_check_writable(img)))	/* as every other change */
		return err;
	e3_fs_lock(img);
	if (ext2fs_lookup(img->fs, EXT2_ROOT_INO, "lost+found", 10, NULL,
			  &lost_found))
		lost_found = 0;
	e3_fs_unlock(img);
	for (size_t i = 0; !err && i < ndirs; i++) {
		e3_fs_lock(img);
		err = rebuild_one(img, dirs[i], lost_found);
		if (img->journal) {
			err2 = e3_journal_op_end(img->journal);
			if (!err)
				err = err2;
		}
		e3_fs_unlock(img);
	}
	return err;
}
