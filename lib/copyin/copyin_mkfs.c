/*
 * copyin_mkfs.c: the size for "e3mkfs -d SRC IMAGE auto[+N%]" — the
 * smallest image whose free blocks and inodes, once mkfs has laid out its
 * metadata (superblock copies, descriptors, reserved GDT, bitmaps, inode
 * tables, journal, root and lost+found, root's reserve), hold what the
 * sources need (copyin_size.c), plus N% of slack (e3mkfs' plain "auto"
 * asks for 10%) above root's reserve, so that users other than root find
 * room too; any slack also brings at least 64 free inodes.
 *
 * libext2fs lays the metadata out: each candidate geometry is initialised
 * on the null I/O manager and its free counts read back; the size grows by
 * the shortfall until it fits.
 */
#include <errno.h>
#include <string.h>

#include "copyin.h"
#include "mkfs/mkfs_nullio.h"

/* Free inodes auto+N% (N > 0) leaves at the least. */
#define AUTO_MIN_FREE_INODES 64

/* Blocks mkfs itself uses besides the group metadata: root and lost+found
 * directories, the resize inode's DIND, the journal's indirect blocks. */
static uint64_t mkfs_extra(unsigned bs, uint64_t journal_blocks)
{
	struct cp_ind_state s = { 0 };
	uint64_t lf = 16384 / bs;

	return 1 + (lf < 2 ? 2 : lf) + 1 +
	       cp_ind_blocks(bs, 0, journal_blocks, &s);
}

/* Free blocks and inodes a geometry leaves for files. */
static errcode_t room(const struct e3_mkfs_geometry *g, uint64_t *blocks,
		      uint64_t *inodes)
{
	struct ext2_super_block param = g->param;
	uint64_t used;
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_initialize("e3mkfs-auto", EXT2_FLAG_64BITS, &param,
				e3_null_io_manager(), &fs);
	if (err)
		return err;
	*blocks = ext2fs_free_blocks_count(fs->super);
	*inodes = fs->super->s_free_inodes_count;
	ext2fs_free(fs);
	used = g->journal_blocks + mkfs_extra(g->block_size, g->journal_blocks) +
	       g->reserved_blocks;
	*blocks = *blocks > used ? *blocks - used : 0;
	*inodes = *inodes > 2 ? *inodes - 2 : 0;	/* root, lost+found */
	return 0;
}

errcode_t e3_copyin_auto_size(const char *const *srcs, size_t nsrcs,
			      const struct e3_copyin_opts *opts,
			      unsigned slack_percent,
			      struct e3_mkfs_params *p,
			      struct e3_mkfs_geometry *g,
			      struct e3_copyin_need *need)
{
	unsigned bs = p->block_size ? p->block_size : 4096;
	unsigned isz = p->inode_size ? p->inode_size : 256;
	uint64_t want_blocks, want_inodes, free_b, free_i, size;
	errcode_t err;

	err = e3_copyin_measure(srcs, nsrcs, bs, isz, opts, need);
	if (err)
		return err;
	/* the slack is room above root's reserve, so that every user can
	 * still write; inodes get at least AUTO_MIN_FREE_INODES of it when
	 * there is any slack, so a small tree does not leave 4 */
	want_blocks = need->blocks + need->blocks * slack_percent / 100;
	want_inodes = need->inodes + need->inodes * slack_percent / 100 + 1;
	if (slack_percent && want_inodes < need->inodes + AUTO_MIN_FREE_INODES)
		want_inodes = need->inodes + AUTO_MIN_FREE_INODES;
	p->block_size = bs;
	if (!p->inode_count)
		p->inode_count = want_inodes + EXT2_GOOD_OLD_FIRST_INO + 2;
	size = (want_blocks + want_blocks / 16 + 64) * bs;
	if (size < e3_mkfs_min_size(p))
		size = e3_mkfs_min_size(p);
	for (int tries = 0; tries < 64; tries++) {
		p->size = size;
		err = e3_mkfs_compute(p, g, NULL);
		if (err == E3_TOO_SMALL || err == E3_BAD_INODE_COUNT) {
			size += size / 8 + 64 * bs;
			continue;
		}
		if (err)
			return err;
		err = room(g, &free_b, &free_i);
		if (err)
			return err;
		if (free_b >= want_blocks && free_i >= want_inodes)
			return 0;
		if (free_b < want_blocks)
			size += (want_blocks - free_b) * bs;
		else
			size += (uint64_t)bs * 64;	/* inodes come with groups */
	}
	return E3_TOO_SMALL;
}
