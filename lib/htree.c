/*
 * htree.c: htree (dir_index) indexes for directories that outgrew one
 * block, built once their entries are all in, as the kernel lays them out:
 * block 0 holds ".", ".." and the dx_root; leaves hold the entries sorted
 * by hash (the filesystem's default hash, with its seed, signed or
 * unsigned as s_flags says); when the root cannot point at every leaf, a
 * level of dx_node blocks sits between (indirect_levels 1). Leaves are
 * filled to the brim; a hash run split over two leaves marks the second
 * leaf's index hash with the low "continued" bit, as the kernel does.
 *
 * Everything goes through libext2fs and the image's io channel (so the
 * journal captures it) under fs_lock, one directory per atomic operation.
 * Blocks the directory no longer needs are revoked and freed; missing
 * ones come through the allocator's hook.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "alloc.h"
#include "blockmap.h"
#include "journal.h"
#include "copyin.h"
#include "load_int.h"

struct hent {
	uint32_t hash, minor;
	ext2_ino_t ino;
	uint8_t type, len;
	char name[EXT2_NAME_LEN + 1];
};

struct hdir {
	ext2_filsys fs;
	ext2_ino_t ino, parent;
	struct hent *e;
	size_t n, cap;
	blk64_t *blk;			/* the directory's blocks, lblk order */
	size_t nblk, capblk;
	int hash_alg, hash_version;
	char *buf;
};

static unsigned rec_len(unsigned len)
{
	return (8 + len + 3) & ~3u;
}

static int hent_cmp(const void *x, const void *y)
{
	const struct hent *a = x, *b = y;

	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (a->minor != b->minor)
		return a->minor < b->minor ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int collect_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t cnt,
			 blk64_t ref, int off, void *priv)
{
	struct hdir *d = priv;

	(void)fs; (void)ref; (void)off;
	if (cnt < 0)
		return 0;
	if (d->nblk == d->capblk) {
		size_t cap = d->capblk ? d->capblk * 2 : 64;
		blk64_t *nb = realloc(d->blk, cap * sizeof(*nb));

		if (!nb)
			return BLOCK_ABORT;
		d->blk = nb;
		d->capblk = cap;
	}
	d->blk[d->nblk++] = *blocknr;
	return 0;
}

static errcode_t add_entry(struct hdir *d, struct ext2_dir_entry *de)
{
	unsigned len = ext2fs_dirent_name_len(de);
	struct hent *h;
	errcode_t err;

	if (len == 1 && de->name[0] == '.')
		return 0;
	if (len == 2 && de->name[0] == '.' && de->name[1] == '.') {
		d->parent = de->inode;
		return 0;
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;
		struct hent *ne = realloc(d->e, cap * sizeof(*ne));

		if (!ne)
			return ENOMEM;
		d->e = ne;
		d->cap = cap;
	}
	h = &d->e[d->n];
	h->ino = de->inode;
	h->len = (uint8_t)len;
	h->type = (uint8_t)ext2fs_dirent_file_type(de);
	memcpy(h->name, de->name, len);
	h->name[len] = '\0';
	err = ext2fs_dirhash2(d->hash_alg, h->name, (int)len, NULL, 0,
			      d->fs->super->s_hash_seed, &h->hash, &h->minor);
	if (!err)
		d->n++;
	return err;
}

static errcode_t read_entries(struct hdir *d)
{
	unsigned bs = d->fs->blocksize, off, rl;
	struct ext2_dir_entry *de;
	errcode_t err;

	for (size_t i = 0; i < d->nblk; i++) {
		err = ext2fs_read_dir_block4(d->fs, d->blk[i], d->buf, 0, d->ino);
		if (err)
			return err;
		for (off = 0; off < bs; off += rl) {
			de = (struct ext2_dir_entry *)(d->buf + off);
			err = ext2fs_get_rec_len(d->fs, de, &rl);
			if (err)
				return err;
			if (rl < 8 || off + rl > bs)
				return EXT2_ET_DIR_CORRUPTED;
			if (de->inode && (err = add_entry(d, de)))
				return err;
		}
	}
	return 0;
}

/* Leaf boundaries: first[i] is the index of leaf i's first entry. */
static size_t plan_leaves(struct hdir *d, size_t **first)
{
	unsigned bs = d->fs->blocksize, used = 0;
	size_t nl = 0, *f = malloc((d->n + 1) * sizeof(*f));

	if (!f)
		return 0;
	for (size_t i = 0; i < d->n; i++) {
		unsigned r = rec_len(d->e[i].len);

		if (nl == 0 || used + r > bs) {
			f[nl++] = i;
			used = 0;
		}
		used += r;
	}
	*first = f;
	return nl;
}

/* The directory becomes exactly want blocks long. */
static errcode_t resize_dir(struct e3_image *img, struct hdir *d, size_t want)
{
	ext2_filsys fs = d->fs;
	size_t had = d->nblk;
	blk64_t pblk;
	errcode_t err;

	/* Growth that runs out of space half way cannot be undone: a failed
	 * ext2fs_bmap2 keeps the indirect block it marked but never wrote
	 * into the inode (a leaked block), and the operation's end commits
	 * it. So the blocks (and the new indirect blocks above them) must
	 * all be there first; the directory then stays linear and whole. */
	if (want > had && img->alloc &&
	    e3_alloc_free_count(img->alloc) < (want - had) +
	    bm_meta_between(fs->blocksize / 4, had - 1, want))
		return E3_IMAGE_FULL;
	while (d->nblk < want) {
		err = ext2fs_bmap2(fs, d->ino, NULL, NULL, BMAP_ALLOC,
				   d->nblk, NULL, &pblk);
		if (!err && collect_block(fs, &pblk, (e2_blkcnt_t)d->nblk,
					  0, 0, d))
			err = ENOMEM;
		if (err) {
			/* best effort: give back what this growth added (the
			 * free hook revokes) */
			ext2fs_punch(fs, d->ino, NULL, NULL, had, ~0ULL);
			d->nblk = had;
			return err;
		}
	}
	if (d->nblk > want) {
		for (size_t i = want; i < d->nblk && img->journal; i++)
			e3_journal_revoke(img->journal, d->blk[i]);
		err = ext2fs_punch(fs, d->ino, NULL, NULL, want, ~0ULL);
		if (err)
			return err;
		d->nblk = want;
	}
	return 0;
}

static void put_dirent(char *p, ext2_ino_t ino, unsigned rl, const char *name,
		       unsigned len, unsigned type)
{
	struct ext2_dir_entry_2 *de = (struct ext2_dir_entry_2 *)p;

	de->inode = ino;
	de->rec_len = (uint16_t)rl;
	de->name_len = (uint8_t)len;
	de->file_type = (uint8_t)type;
	memcpy(de->name, name, len);
}

static errcode_t write_leaf(struct hdir *d, blk64_t pblk, size_t from,
			    size_t to)
{
	unsigned bs = d->fs->blocksize, off = 0;

	memset(d->buf, 0, bs);
	for (size_t i = from; i < to; i++) {
		unsigned r = rec_len(d->e[i].len);

		put_dirent(d->buf + off, d->e[i].ino,
			   i + 1 == to ? bs - off : r, d->e[i].name,
			   d->e[i].len, d->e[i].type);
		off += r;
	}
	return ext2fs_write_dir_block4(d->fs, pblk, d->buf, 0, d->ino);
}

/* The index hash of leaf i: its first hash, with the low bit set when the
 * previous leaf ends inside the same hash. */
static uint32_t leaf_hash(struct hdir *d, size_t *first, size_t i)
{
	uint32_t h = d->e[first[i]].hash;

	if (i > 0 && d->e[first[i] - 1].hash == h)
		h |= 1;
	return h;
}

static void put_entries(char *p, unsigned limit, size_t count,
			const uint32_t *hash, const uint32_t *block)
{
	struct ext2_dx_countlimit *cl = (struct ext2_dx_countlimit *)p;
	struct ext2_dx_entry *ent = (struct ext2_dx_entry *)p;

	cl->limit = (uint16_t)limit;
	cl->count = (uint16_t)count;
	ent[0].block = block[0];
	for (size_t i = 1; i < count; i++) {
		ent[i].hash = hash[i];
		ent[i].block = block[i];
	}
}

static errcode_t write_index(struct hdir *d, size_t *first, size_t nl,
			     size_t nn, unsigned root_limit,
			     unsigned node_limit)
{
	unsigned bs = d->fs->blocksize;
	struct ext2_dx_root_info *info;
	uint32_t *hash, *block;
	size_t nroot = nn ? nn : nl;
	errcode_t err = 0;

	hash = calloc(nl + 1, sizeof(*hash));
	block = calloc(nl + 1, sizeof(*block));
	if (!hash || !block) {
		err = ENOMEM;
		goto out;
	}
	/* the root: ".", "..", info, then entries for leaves or nodes */
	memset(d->buf, 0, bs);
	put_dirent(d->buf, d->ino, 12, ".", 1, EXT2_FT_DIR);
	put_dirent(d->buf + 12, d->parent, bs - 12, "..", 2, EXT2_FT_DIR);
	info = (struct ext2_dx_root_info *)(d->buf + 24);
	info->hash_version = (uint8_t)d->hash_version;
	info->info_length = 8;
	info->indirect_levels = nn ? 1 : 0;
	for (size_t i = 0; i < nroot; i++) {
		size_t leaf = nn ? i * node_limit : i;

		hash[i] = leaf_hash(d, first, leaf);
		block[i] = (uint32_t)(nn ? 1 + nl + i : 1 + i);
	}
	put_entries(d->buf + 32, root_limit, nroot, hash, block);
	err = ext2fs_write_dir_block4(d->fs, d->blk[0], d->buf, 0, d->ino);
	/* the nodes, each for up to node_limit leaves */
	for (size_t k = 0; !err && k < nn; k++) {
		size_t lo = k * node_limit, cnt = nl - lo;

		if (cnt > node_limit)
			cnt = node_limit;
		for (size_t i = 0; i < cnt; i++) {
			hash[i] = leaf_hash(d, first, lo + i);
			block[i] = (uint32_t)(1 + lo + i);
		}
		memset(d->buf, 0, bs);
		put_dirent(d->buf, 0, bs, "", 0, 0);
		put_entries(d->buf + 8, node_limit, cnt, hash, block);
		err = ext2fs_write_dir_block4(d->fs, d->blk[1 + nl + k], d->buf,
					      0, d->ino);
	}
out:
	free(hash);
	free(block);
	return err;
}

static errcode_t build(struct e3_image *img, struct hdir *d,
		       struct ext2_inode *inode)
{
	unsigned bs = d->fs->blocksize;
	unsigned root_limit = (bs - 32) / 8, node_limit = (bs - 8) / 8;
	size_t *first = NULL, nl, nn = 0;
	errcode_t err;

	err = read_entries(d);
	if (err)
		return err;
	if (d->n)
		qsort(d->e, d->n, sizeof(*d->e), hent_cmp);
	nl = plan_leaves(d, &first);
	if (!first)
		return ENOMEM;
	if (nl == 0)
		goto out;	/* nothing but "." and "..": leave it */
	if (nl > root_limit)
		nn = (nl + node_limit - 1) / node_limit;
	if (nn > root_limit) {
		err = EXT2_ET_DIR_NO_SPACE;	/* would need a third level */
		goto out;
	}
	err = resize_dir(img, d, 1 + nl + nn);
	for (size_t i = 0; !err && i < nl; i++)
		err = write_leaf(d, d->blk[1 + i], first[i],
				 i + 1 < nl ? first[i + 1] : d->n);
	if (!err)
		err = write_index(d, first, nl, nn, root_limit, node_limit);
	if (!err)
		err = ext2fs_read_inode(d->fs, d->ino, inode);
	if (!err) {
		inode->i_flags |= EXT2_INDEX_FL;
		err = ext2fs_inode_size_set(d->fs, inode,
					    (uint64_t)(1 + nl + nn) * bs);
	}
	if (!err)
		err = ext2fs_write_inode(d->fs, d->ino, inode);
out:
	free(first);
	return err;
}

static errcode_t index_one(struct e3_image *img, ext2_ino_t ino, char *buf)
{
	ext2_filsys fs = img->fs;
	struct ext2_inode inode;
	struct hdir d = { .fs = fs, .ino = ino, .buf = buf };
	errcode_t err;

	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (!LINUX_S_ISDIR(inode.i_mode) || (inode.i_flags & EXT2_INDEX_FL) ||
	    EXT2_I_SIZE(&inode) <= fs->blocksize)
		return 0;
	e3_dc_forget(img, ino);		/* its blocks are about to move */
	d.hash_version = fs->super->s_def_hash_version;
	d.hash_alg = d.hash_version;
	if (d.hash_alg <= EXT2_HASH_TEA &&
	    (fs->super->s_flags & EXT2_FLAGS_UNSIGNED_HASH))
		d.hash_alg += 3;
	err = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY |
				    BLOCK_FLAG_DATA_ONLY, NULL, collect_block,
				    &d);
	if (!err)
		err = build(img, &d, &inode);
	free(d.e);
	free(d.blk);
	return err;
}

errcode_t e3_htree_build_all(e3_image_t *img, const ext2_ino_t *dirs,
			     size_t ndirs)
{
	errcode_t err = 0, err2;
	char *buf;

	if (!ext2fs_has_feature_dir_index(img->fs->super))
		return 0;
	buf = malloc(img->fs->blocksize);
	if (!buf)
		return ENOMEM;
	for (size_t i = 0; !err && i < ndirs; i++) {
		e3_fs_lock(img);
		err = index_one(img, dirs[i], buf);
		if (img->journal) {
			err2 = e3_journal_op_end(img->journal);
			if (!err)
				err = err2;
		}
		e3_fs_unlock(img);
	}
	free(buf);
	return err;
}
