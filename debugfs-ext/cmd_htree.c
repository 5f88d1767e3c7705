/*
 * cmd_htree.c: htree [DIR] in debugfs' text — an indexed
 * directory's root (hash version, levels), each index node's entries
 * (hash, block; "(**)" marks a hash continued from the block before),
 * and each leaf block's names with their hashes as the index computes
 * them (the superblock's seed; the unsigned variant when the superblock
 * says so).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"

struct ht {
	struct dbg *d;
	ext2_ino_t ino;
	struct ext2_inode inode;
	int hash_alg;
};

static void leaf(struct ht *h, blk64_t lblk)
{
	ext2_filsys fs = h->d->fs;
	unsigned off = 0, rec_len;
	char *buf = malloc(fs->blocksize);
	int col = 0;
	blk64_t pblk;
	errcode_t err;

	if (!buf) {
		dbg_fail(h->d, ENOMEM, NULL);
		return;
	}
	err = ext2fs_bmap2(fs, h->ino, &h->inode, NULL, 0, lblk, NULL, &pblk);
	if (err) {
		dbg_fail(h->d, err, "mapping directory block %llu",
			 (unsigned long long)lblk);
		goto out;
	}
	fprintf(h->d->out, "Reading directory block %llu, phys %llu\n",
		(unsigned long long)lblk, (unsigned long long)pblk);
	err = ext2fs_read_dir_block4(fs, pblk, buf, 0, h->ino);
	if (err) {
		dbg_fail(h->d, err, "reading directory block %llu",
			 (unsigned long long)lblk);
		goto out;
	}
	while (off < fs->blocksize) {
		struct ext2_dir_entry *de = (struct ext2_dir_entry *)(buf + off);
		ext2_dirhash_t hash = 0, minor = 0;
		char item[EXT2_NAME_LEN + 64];
		int len;

		if (ext2fs_get_rec_len(fs, de, &rec_len) ||
		    off + rec_len > fs->blocksize || rec_len < 8 ||
		    rec_len % 4 || (unsigned)ext2fs_dirent_name_len(de) + 8 > rec_len) {
			fprintf(h->d->out, "Corrupted directory block (%llu)!\n",
				(unsigned long long)lblk);
			break;
		}
		len = ext2fs_dirent_name_len(de);
		(void)ext2fs_dirhash(h->hash_alg, de->name, len,
				     fs->super->s_hash_seed, &hash, &minor);
		snprintf(item, sizeof(item), "%u 0x%08x-%08x (%u) %.*s   ",
			 de->inode, hash, minor, rec_len, len, de->name);
		if (col + (int)strlen(item) > 80) {
			fputc('\n', h->d->out);
			col = 0;
		}
		fputs(item, h->d->out);
		col += (int)strlen(item);
		off += rec_len;
	}
	fputc('\n', h->d->out);
out:
	free(buf);
}

static void node(struct ht *h, const unsigned char *ents, int level);

static void index_block(struct ht *h, blk64_t lblk, int level)
{
	ext2_filsys fs = h->d->fs;
	unsigned char *buf = malloc(fs->blocksize);
	blk64_t pblk;
	errcode_t err;

	if (!buf) {
		dbg_fail(h->d, ENOMEM, NULL);
		return;
	}
	err = ext2fs_bmap2(fs, h->ino, &h->inode, NULL, 0, lblk, NULL, &pblk);
	if (!err)
		err = io_channel_read_blk64(fs->io, pblk, 1, buf);
	if (err)
		dbg_fail(h->d, err, "reading index block %llu",
			 (unsigned long long)lblk);
	else	/* a node block: a fake dirent of 8 bytes, then the entries */
		node(h, buf + 8, level);
	free(buf);
}

static uint32_t le32_at(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* ents: the count/limit header (in entry 0's hash field), then entries
 * of (hash, block), 8 bytes each */
static void node(struct ht *h, const unsigned char *ents, int level)
{
	unsigned limit = ents[0] | ents[1] << 8, count = ents[2] | ents[3] << 8;
	unsigned room = h->d->fs->blocksize / 8;

	fprintf(h->d->out, "Number of entries (count): %u\n", count);
	fprintf(h->d->out, "Number of entries (limit): %u\n", limit);
	if (count > room)	/* a damaged count: stay inside the block */
		count = room;
	for (unsigned i = 0; i < count; i++) {
		uint32_t hash = i ? le32_at(ents + 8 * i) : 0;

		fprintf(h->d->out, "Entry #%u: Hash 0x%08x%s, block %u\n", i, hash,
			hash & 1 ? " (**)" : "", le32_at(ents + 8 * i + 4));
	}
	fputc('\n', h->d->out);
	for (unsigned i = 0; i < count; i++) {
		uint32_t hash = i ? le32_at(ents + 8 * i) : 0;
		uint32_t blk = le32_at(ents + 8 * i + 4);

		fprintf(h->d->out, "Entry #%u: Hash 0x%08x, block %u\n", i, hash, blk);
		if (level)
			index_block(h, blk, level - 1);
		else
			leaf(h, blk);
	}
	fprintf(h->d->out, "---------------------\n");
}

DBG_CMD(do_htree)
{
	struct dbg *d = dbg_of(info);
	struct ht h = { .d = d };
	unsigned char *buf;
	struct ext2_dx_root_info *root;
	blk64_t blk;
	errcode_t err;

	if (dbg_args(d, argc, 1, 2, "htree [DIR]"))
		return;
	h.ino = argc == 1 ? d->cwd : dbg_inode(d, argv[1]);
	if (!h.ino)
		return;
	if ((err = ext2fs_read_inode(d->fs, h.ino, &h.inode))) {
		dbg_fail(d, err, NULL);
		return;
	}
	if (!LINUX_S_ISDIR(h.inode.i_mode)) {
		dbg_fail(d, E3_NOT_DIR, NULL);
		return;
	}
	if (!(h.inode.i_flags & EXT2_INDEX_FL)) {
		dbg_fail(d, 0, "not a hash-indexed directory");
		return;
	}
	if (!(buf = malloc(d->fs->blocksize))) {
		dbg_fail(d, ENOMEM, NULL);
		return;
	}
	err = ext2fs_bmap2(d->fs, h.ino, &h.inode, NULL, 0, 0, NULL, &blk);
	if (!err)
		err = io_channel_read_blk64(d->fs->io, blk, 1, buf);
	if (err) {
		dbg_fail(d, err, "reading the root block");
		free(buf);
		return;
	}
	/* the root block: "." (12 bytes), ".." (12), then the root info */
	root = (struct ext2_dx_root_info *)(buf + 24);
	fprintf(d->out, "Root node dump:\n");
	fprintf(d->out, "\t Reserved zero: %u\n", root->reserved_zero);
	fprintf(d->out, "\t Hash Version: %d\n", root->hash_version);
	fprintf(d->out, "\t Info length: %d\n", root->info_length);
	fprintf(d->out, "\t Indirect levels: %d\n", root->indirect_levels);
	fprintf(d->out, "\t Flags: %d\n", root->unused_flags);
	h.hash_alg = root->hash_version;
	if (h.hash_alg <= EXT2_HASH_TEA &&
	    (d->fs->super->s_flags & EXT2_FLAGS_UNSIGNED_HASH))
		h.hash_alg += 3;
	if (24u + root->info_length + 8 > d->fs->blocksize)
		dbg_fail(d, 0, "root info length %d runs past the block",
			 root->info_length);
	else
		node(&h, buf + 24 + root->info_length, root->indirect_levels);
	free(buf);
}
