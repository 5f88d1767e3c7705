/*
 * mkjournal.c: adds an internal journal with libext2fs, for mkfs and for
 * the checker's journal recreation (see mkjournal.h).
 */
#include "mkjournal.h"

errcode_t e3_make_journal(ext2_filsys fs, blk_t nblocks, int lazy,
			  blk_t *ret_blocks)
{
	struct ext2fs_journal_params jp;
	errcode_t err;

	err = ext2fs_get_journal_params(&jp, fs);
	if (err)
		return err;
	if (nblocks)
		jp.num_journal_blocks = nblocks;
	jp.num_fc_blocks = 0;		/* ext3: no fast-commit area */
	/* the journal must read as zeros: a stale block that looks like a
	 * descriptor would be replayed */
	err = ext2fs_add_journal_inode3(fs, &jp, ~0ULL,
					EXT2_MKJOURNAL_NO_MNT_CHECK |
					(lazy ? EXT2_MKJOURNAL_LAZYINIT : 0));
	if (!err && ret_blocks)
		*ret_blocks = jp.num_journal_blocks;
	return err;
}

errcode_t e3_journal_default_blocks(ext2_filsys fs, blk_t *ret_blocks)
{
	struct ext2fs_journal_params jp;
	errcode_t err = ext2fs_get_journal_params(&jp, fs);

	*ret_blocks = err ? 0 : jp.num_journal_blocks;
	return err;
}

static blk64_t div_up(blk64_t a, blk64_t b)
{
	return (a + b - 1) / b;
}

blk64_t e3_journal_fs_blocks(ext2_filsys fs, blk_t nblocks)
{
	blk64_t a = fs->blocksize / 4, rem = nblocks, n = nblocks, part;

	rem -= rem < EXT2_NDIR_BLOCKS ? rem : EXT2_NDIR_BLOCKS;
	if (rem) {			/* single indirect */
		part = rem < a ? rem : a;
		n += 1;
		rem -= part;
	}
	if (rem) {			/* double: itself and its indirects */
		part = rem < a * a ? rem : a * a;
		n += 1 + div_up(part, a);
		rem -= part;
	}
	if (rem)			/* triple */
		n += 1 + div_up(div_up(rem, a), a) + div_up(rem, a);
	return n;
}
