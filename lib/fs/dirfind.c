/*
 * dirfind.c: one name in a directory through its htree index, as the
 * kernel finds it: the name's hash picks one leaf (and the next ones while
 * a run of that hash continues into them). libext2fs' ext2fs_lookup and
 * ext2fs_unlink read every block of the directory, so replacing each of
 * 20,000 names in one directory (e3cp --overwrite) took 21 s, and every
 * name added to a big existing directory paid a full scan to learn it was
 * not there.
 *
 * The index is followed only as far as it is recognisably well formed:
 * the root's info (reserved field zero, info length 8, a hash version
 * libext2fs knows, at most one indirect level — ext3 has no largedir),
 * counts within limits, limits within the block, hashes in order, child
 * blocks inside the directory, leaves that parse. Anything else falls
 * back to the full scan, so a damaged index costs time, never a name.
 * A name the index says is absent is not taken on its word: a writer
 * would add it a second time. The leaf searched, and the leaves just
 * before and after it, must hold only hashes inside the ranges the keys
 * give them; a key its node contradicts (a root key raised past the
 * hashes of the leaves below it, e2fsck's "bad min hash") sends the
 * lookup to the full scan. A name found is found, wherever it is filed.
 *
 * Index blocks are read raw (little-endian fields decoded here), leaves
 * with ext2fs_read_dir_block4; everything through the image's io channel,
 * so the running transaction's blocks are what is seen.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dirfind.h"

#define DX_INFO		0x18	/* root: after "." (12) and 12 bytes of ".." */
#define DX_ROOT_ENT	0x20	/* root: the count/limit and entries */
#define DX_NODE_ENT	8	/* node: after a fake entry of record bs */
#define DX_BLOCK_MASK	0x0fffffffu	/* the kernel's: high bits reserved */

/* One index block on the way down: its entries and the one followed. */
struct dx_frame {
	const unsigned char *ent;
	unsigned count, at;
};

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return ext2fs_le32_to_cpu(v);
}

static unsigned get16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return ext2fs_le16_to_cpu(v);
}

/* Directory block lblk (of nblk) into buf, raw; 1: it cannot be. */
static int read_raw(ext2_filsys fs, ext2_ino_t dir, struct ext2_inode *di,
		    uint64_t nblk, uint32_t lblk, unsigned char *buf,
		    errcode_t *err)
{
	blk64_t pblk = 0;

	if (lblk >= nblk)
		return 1;
	*err = ext2fs_bmap2(fs, dir, di, NULL, 0, lblk, NULL, &pblk);
	if (*err || !pblk || pblk >= ext2fs_blocks_count(fs->super))
		return 1;
	*err = io_channel_read_blk64(fs->io, pblk, 1, buf);
	return *err != 0;
}

/* The entries of an index block at off: count/limit in entry 0's hash
 * field. 1 when they are not sane. */
static int frame_at(const unsigned char *blk, unsigned off, unsigned bs,
		    struct dx_frame *f)
{
	unsigned limit = get16(blk + off), count = get16(blk + off + 2);

	if (!count || count > limit || off + (size_t)limit * 8 > bs)
		return 1;
	f->ent = blk + off;
	f->count = count;
	return 0;
}

/* f->at: the last entry whose hash is at most hash (entry 0 stands for
 * everything below entry 1's). 1 when the hashes go down. */
static int frame_pick(struct dx_frame *f, uint32_t hash)
{
	uint32_t prev = 0;

	f->at = 0;
	for (unsigned i = 1; i < f->count; i++) {
		uint32_t h = get32(f->ent + 8 * i);

		if (h < prev)
			return 1;
		if (h > hash)
			break;
		prev = h;
		f->at = i;
	}
	return 0;
}

static uint32_t frame_block(const struct dx_frame *f)
{
	return get32(f->ent + 8 * f->at + 4) & DX_BLOCK_MASK;
}

/* The index node the root's current entry points at, read into node
 * (its fake entry spanning the block) and framed in *f; 1: it cannot be. */
static int read_node(ext2_filsys fs, ext2_ino_t dir, struct ext2_inode *di,
		     uint64_t nblk, const struct dx_frame *root,
		     unsigned char *node, struct dx_frame *f, errcode_t *err)
{
	return read_raw(fs, dir, di, nblk, frame_block(root), node, err) ||
	       get16(node + 4) != fs->blocksize ||
	       frame_at(node, DX_NODE_ENT, fs->blocksize, f);
}

/* Looks for name in a leaf: 1 found (*ino), 0 not there, -1 the leaf
 * does not parse. */
static int leaf_find(ext2_filsys fs, char *buf, const char *name,
		     unsigned len, ext2_ino_t *ino)
{
	unsigned off = 0, rec;

	while (off + 8 <= fs->blocksize) {
		struct ext2_dir_entry *de = (void *)(buf + off);
		unsigned nlen = ext2fs_dirent_name_len(de);

		if (ext2fs_get_rec_len(fs, de, &rec) || rec < 8 || rec % 4 ||
		    off + rec > fs->blocksize || 8 + nlen > rec)
			return -1;
		if (de->inode && nlen == len && !memcmp(de->name, name, len)) {
			*ino = de->inode;
			return 1;
		}
		off += rec;
	}
	return 0;
}

static uint32_t frame_key(const struct dx_frame *f, unsigned i)
{
	return i ? get32(f->ent + 8 * i) & ~1u : 0;
}

/* Every live entry of the leaf in buf hashes into [lo, hi]. */
static int leaf_in_range(ext2_filsys fs, const char *buf, int version,
			 uint32_t lo, uint32_t hi)
{
	unsigned off = 0, rec;

	while (off + 8 <= fs->blocksize) {
		const struct ext2_dir_entry *de = (const void *)(buf + off);
		unsigned nlen = ext2fs_dirent_name_len(de);
		ext2_dirhash_t h = 0;

		if (ext2fs_get_rec_len(fs, (struct ext2_dir_entry *)de, &rec) ||
		    rec < 8 || rec % 4 || off + rec > fs->blocksize ||
		    8 + nlen > rec)
			return 0;
		if (de->inode && nlen &&
		    (ext2fs_dirhash2(version, de->name, (int)nlen, NULL, 0,
				     fs->super->s_hash_seed, &h, NULL) ||
		     h < lo || h > hi))
			return 0;
		off += rec;
	}
	return 1;
}

/* Leaf lblk b of dir read into buf and checked against [lo, hi]. */
static int leaf_at_ok(ext2_filsys fs, ext2_ino_t dir, struct ext2_inode *di,
		      uint64_t nblk, uint32_t b, char *buf, int version,
		      uint32_t lo, uint32_t hi, errcode_t *err)
{
	blk64_t pblk = 0;

	if (b == 0 || b >= nblk)
		return 0;
	*err = ext2fs_bmap2(fs, dir, di, NULL, 0, b, NULL, &pblk);
	if (*err || !pblk)
		return 0;
	*err = ext2fs_read_dir_block4(fs, pblk, buf, 0, dir);
	return !*err && leaf_in_range(fs, buf, version, lo, hi);
}

/* After a miss in the leaf fr[] points at (in leaf, read already): that
 * leaf, the one before and the one after keep the ranges the keys give
 * them. 1 when they do; node and tmp are scratch blocks. */
static int miss_trusted(ext2_filsys fs, ext2_ino_t dir, struct ext2_inode *di,
			uint64_t nblk, const struct dx_frame *fr,
			unsigned levels, const char *leaf, int version,
			unsigned char *node, char *tmp, errcode_t *err)
{
	const struct dx_frame *lf = &fr[levels];
	struct dx_frame side = fr[0], sub;
	uint32_t lo = frame_key(lf, lf->at), hi = 0xffffffffu;
	int last = lf->at + 1 >= lf->count;

	if (levels && !lf->at)
		lo = frame_key(&fr[0], fr[0].at);
	if (!last)
		hi = frame_key(lf, lf->at + 1);
	else if (levels && fr[0].at + 1 < fr[0].count)
		hi = frame_key(&fr[0], fr[0].at + 1);
	if (!leaf_in_range(fs, leaf, version, lo, hi))
		return 0;
	/* the next leaf holds nothing below hi */
	if (!last) {
		if (!leaf_at_ok(fs, dir, di, nblk, frame_block(&(struct dx_frame)
				{ lf->ent, lf->count, lf->at + 1 }), tmp,
				version, hi, 0xffffffffu, err))
			return 0;
	} else if (levels && fr[0].at + 1 < fr[0].count) {
		side.at = fr[0].at + 1;
		if (read_node(fs, dir, di, nblk, &side, node, &sub, err))
			return 0;
		sub.at = 0;
		if (!leaf_at_ok(fs, dir, di, nblk, frame_block(&sub), tmp,
				version, hi, 0xffffffffu, err))
			return 0;
	}
	/* the leaf before holds nothing above lo */
	if (lf->at) {
		return leaf_at_ok(fs, dir, di, nblk, frame_block(&(struct dx_frame)
				  { lf->ent, lf->count, lf->at - 1 }), tmp,
				  version, 0, lo, err);
	} else if (levels && fr[0].at) {
		side.at = fr[0].at - 1;
		if (read_node(fs, dir, di, nblk, &side, node, &sub, err))
			return 0;
		sub.at = sub.count - 1;
		return leaf_at_ok(fs, dir, di, nblk, frame_block(&sub), tmp,
				  version, 0, lo, err);
	}
	return 1;
}

/* The walk. *unusable set: the index cannot be followed (err is 0 then,
 * unless an I/O error said so). */
static errcode_t dx_find(ext2_filsys fs, ext2_ino_t dir, struct ext2_inode *di,
			 const char *name, unsigned len, ext2_ino_t *ino,
			 blk64_t *lblk, int *unusable)
{
	unsigned bs = fs->blocksize, levels, version, depth;
	uint64_t nblk = EXT2_I_SIZE(di) / bs;
	struct dx_frame fr[2];
	unsigned char *root, *node;
	char *leaf;
	ext2_dirhash_t hash = 0;
	errcode_t err = 0;
	int r;

	*unusable = 1;
	root = malloc((size_t)bs * 5);
	if (!root)
		return ENOMEM;
	node = root + bs;
	leaf = (char *)root + 2 * bs;
	if (read_raw(fs, dir, di, nblk, 0, root, &err) ||
	    get32(root + DX_INFO) != 0 || root[DX_INFO + 5] != 8)
		goto out;
	version = root[DX_INFO + 4];
	levels = root[DX_INFO + 6];
	/* only the versions a root may hold (the unsigned ones come from
	 * s_flags), as the kernel and libext2fs' dx lookup accept */
	if (version > EXT2_HASH_TEA || levels > 1)
		goto out;
	if (fs->super->s_flags & EXT2_FLAGS_UNSIGNED_HASH)
		version += 3;
	if (ext2fs_dirhash2((int)version, name, (int)len, NULL, 0,
			    fs->super->s_hash_seed, &hash, NULL))
		goto out;
	if (frame_at(root, DX_ROOT_ENT, bs, &fr[0]) || frame_pick(&fr[0], hash))
		goto out;
	if (levels && (read_node(fs, dir, di, nblk, &fr[0], node, &fr[1],
				 &err) || frame_pick(&fr[1], hash)))
		goto out;
	for (;;) {
		uint32_t b = frame_block(&fr[levels]), next;
		blk64_t pblk = 0;

		if (b == 0 || b >= nblk)
			goto out;
		err = ext2fs_bmap2(fs, dir, di, NULL, 0, b, NULL, &pblk);
		if (err || !pblk)
			goto out;
		err = ext2fs_read_dir_block4(fs, pblk, leaf, 0, dir);
		if (err)
			goto out;
		r = leaf_find(fs, leaf, name, len, ino);
		if (r < 0)
			goto out;
		*unusable = 0;
		if (r) {
			*lblk = b;
			break;
		}
		/* the next leaf, when the run of this hash goes on in it:
		 * its index entry's hash, continuation bit aside, is ours */
		for (depth = levels + 1; depth-- > 0;)
			if (fr[depth].at + 1 < fr[depth].count)
				break;
		if (depth <= levels) {
			next = get32(fr[depth].ent + 8 * (fr[depth].at + 1));
			if ((next & ~1u) == hash)
				goto on;
		}
		/* a miss: believed only when the keys around it hold */
		if (!miss_trusted(fs, dir, di, nblk, fr, levels, leaf,
				  (int)version, root + 3 * bs,
				  (char *)root + 4 * bs, &err)) {
			*unusable = 1;
			goto out;
		}
		err = EXT2_ET_FILE_NOT_FOUND;
		break;
on:
		fr[depth].at++;
		*unusable = 1;
		if (depth < levels &&
		    read_node(fs, dir, di, nblk, &fr[0], node, &fr[1], &err))
			goto out;
		if (depth < levels)
			fr[1].at = 0;
	}
out:
	free(root);
	return err;
}

errcode_t e3_dir_find(ext2_filsys fs, ext2_ino_t dir, const char *name,
		      ext2_ino_t *ino, blk64_t *lblk)
{
	struct ext2_inode di;
	size_t len = strlen(name);
	int unusable = 1;
	errcode_t err;

	*lblk = E3_DIR_BLOCK_UNKNOWN;
	err = ext2fs_read_inode(fs, dir, &di);
	if (err)
		return err;
	/* "." and ".." live in block 0, outside every leaf */
	if (len && len <= EXT2_NAME_LEN && LINUX_S_ISDIR(di.i_mode) &&
	    strcmp(name, ".") && strcmp(name, "..") &&
	    (di.i_flags & EXT2_INDEX_FL) &&
	    ext2fs_has_feature_dir_index(fs->super) &&
	    !ext2fs_has_feature_metadata_csum(fs->super)) {
		err = dx_find(fs, dir, &di, name, (unsigned)len, ino, lblk,
			      &unusable);
		if (!unusable || err == ENOMEM)
			return err;
		*lblk = E3_DIR_BLOCK_UNKNOWN;
	}
	return ext2fs_lookup(fs, dir, name, (int)len, NULL, ino);
}

/* Directory block lblk of dir (di: its inode, or NULL) into a new buffer
 * (*buf, the caller frees it) and its address: EXT2_ET_FILE_NOT_FOUND for
 * a hole. */
static errcode_t read_lblk(ext2_filsys fs, ext2_ino_t dir,
			   struct ext2_inode *di, blk64_t lblk, char **buf,
			   blk64_t *pblk)
{
	errcode_t err;

	*buf = NULL;
	*pblk = 0;
	err = ext2fs_bmap2(fs, dir, di, NULL, 0, lblk, NULL, pblk);
	if (err || !*pblk)
		return err ? err : EXT2_ET_FILE_NOT_FOUND;
	*buf = malloc(fs->blocksize);
	if (!*buf)
		return ENOMEM;
	err = ext2fs_read_dir_block4(fs, *pblk, *buf, 0, dir);
	if (err) {
		free(*buf);
		*buf = NULL;
	}
	return err;
}

errcode_t e3_dir_find_in(ext2_filsys fs, ext2_ino_t dir, blk64_t lblk,
			 const char *name, ext2_ino_t *ino)
{
	size_t len = strlen(name);
	struct ext2_inode di;
	blk64_t pblk;
	errcode_t err;
	char *buf;
	int r;

	if (!len || len > EXT2_NAME_LEN)
		return EXT2_ET_FILE_NOT_FOUND;
	err = ext2fs_read_inode(fs, dir, &di);
	if (err)
		return err;
	if (lblk >= EXT2_I_SIZE(&di) / fs->blocksize)
		return EXT2_ET_FILE_NOT_FOUND;
	err = read_lblk(fs, dir, &di, lblk, &buf, &pblk);
	if (err)
		return err;
	r = leaf_find(fs, buf, name, (unsigned)len, ino);
	free(buf);
	return r > 0 ? 0 : r < 0 ? EXT2_ET_DIR_CORRUPTED : EXT2_ET_FILE_NOT_FOUND;
}

errcode_t e3_dir_unlink_at(ext2_filsys fs, ext2_ino_t dir, blk64_t lblk,
			   const char *name, ext2_ino_t ino)
{
	unsigned off = 0, rec, prec, len = (unsigned)strlen(name);
	struct ext2_dir_entry *prev = NULL;
	blk64_t pblk;
	errcode_t err;
	char *buf;

	err = read_lblk(fs, dir, NULL, lblk, &buf, &pblk);
	while (!err && off + 8 <= fs->blocksize) {
		struct ext2_dir_entry *de = (void *)(buf + off);
		unsigned nlen = ext2fs_dirent_name_len(de);

		if (ext2fs_get_rec_len(fs, de, &rec) || rec < 8 || rec % 4 ||
		    off + rec > fs->blocksize || 8 + nlen > rec) {
			err = EXT2_ET_DIR_CORRUPTED;
			break;
		}
		if (de->inode == ino && nlen == len &&
		    !memcmp(de->name, name, len)) {
			if (prev && !ext2fs_get_rec_len(fs, prev, &prec))
				err = ext2fs_set_rec_len(fs, prec + rec, prev);
			else
				de->inode = 0;
			if (!err)
				err = ext2fs_write_dir_block4(fs, pblk, buf, 0,
							      dir);
			free(buf);
			return err;
		}
		prev = de;
		off += rec;
	}
	free(buf);
	return err ? err : EXT2_ET_FILE_NOT_FOUND;
}
