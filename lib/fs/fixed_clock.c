/*
 * fixed_clock.c: SOURCE_DATE_EPOCH=0. libext2fs 1.47 stamps the
 * superblock's write time and the inodes it creates with fs->now, but
 * takes fs->now == 0 to mean "the current time" — so a clock fixed at
 * the epoch itself would leave the wall clock in the image, and two runs
 * a second apart would differ. For that one value the real time is taken
 * back out where libext2fs put it: after the last flush (whose copies
 * are listed while fs is still open) and in mkfs' special inodes.
 *
 * Also the one parser of SOURCE_DATE_EPOCH, for every tool and for the
 * library's own reads of it (image open, mkfs, the checker). The range is
 * what ext3 can store: the superblock's times (s_mkfs_time, s_wtime,
 * s_mtime, s_lastcheck) are unsigned 32-bit seconds, so 0..4294967295
 * (up to 2106-02-07 06:28:15 UTC). Inode times are signed 32-bit seconds
 * in the 128-byte ext3 inode, so a 128-byte inode holds only up to
 * 2147483647 (2038-01-19 03:14:07 UTC) — past that the kernel and e2fsck
 * read a date before 1970; a 256-byte inode (the default) holds the
 * whole range through ext4's epoch bits in its *_extra fields
 * (e3_epoch_fits_inodes). Written in decimal digits only: no sign, no
 * space, no hex; unset or empty means "not set".
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixed_clock.h"
#include "e3img.h"
#include "e3_err.h"

errcode_t e3_epoch_parse(const char *s, int64_t *epoch)
{
	uint64_t v = 0;

	*epoch = -1;
	if (!s || !*s)
		return 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return E3_BAD_EPOCH;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > E3_EPOCH_MAX)
			return E3_BAD_EPOCH;
	}
	*epoch = (int64_t)v;
	return 0;
}

errcode_t e3_source_date_epoch(int64_t *epoch)
{
	return e3_epoch_parse(getenv("SOURCE_DATE_EPOCH"), epoch);
}

errcode_t e3_epoch_fits_inodes(int64_t epoch, unsigned inode_size)
{
	if (epoch > INT32_MAX && inode_size <= EXT2_GOOD_OLD_INODE_SIZE)
		return E3_EPOCH_INODE;
	return 0;
}

errcode_t e3_sb_copies_get(ext2_filsys fs, struct e3_sb_copies *c)
{
	dgrp_t groups = fs->group_desc_count;
	size_t n = 0;

	c->n = 0;
	/* backups only when the flush writes them (not after ext2fs_open2,
	 * which keeps to the primary) */
	if (fs->flags & EXT2_FLAG_MASTER_SB_ONLY)
		groups = 1;
	c->off = malloc((size_t)groups * sizeof(*c->off));
	if (!c->off)
		return ENOMEM;
	c->off[n++] = SUPERBLOCK_OFFSET;
	for (dgrp_t g = 1; g < groups; g++) {
		blk64_t sb = 0;

		ext2fs_super_and_bgd_loc2(fs, g, &sb, NULL, NULL, NULL);
		if (sb)
			c->off[n++] = (uint64_t)sb * fs->blocksize;
	}
	c->n = n;
	return 0;
}

void e3_sb_copies_free(struct e3_sb_copies *c)
{
	free(c->off);
	c->off = NULL;
	c->n = 0;
}

errcode_t e3_sb_copies_zero_wtime(int fd, struct e3_sb_copies *c)
{
	const uint32_t zero = 0;	/* the same in either byte order */
	errcode_t err = 0;

	for (size_t i = 0; i < c->n && !err; i++) {
		off_t at = (off_t)(c->off[i] +
				   offsetof(struct ext2_super_block, s_wtime));

		if (pwrite(fd, &zero, sizeof(zero), at) != sizeof(zero))
			err = errno ? errno : EIO;
	}
	e3_sb_copies_free(c);
	return err;
}

errcode_t e3_zero_special_inode_times(ext2_filsys fs)
{
	ext2_ino_t last = EXT2_FIRST_INODE(fs->super);	/* lost+found */
	int size = EXT2_INODE_SIZE(fs->super);
	struct ext2_inode_large *in;
	errcode_t err = 0;

	in = calloc(1, (size_t)size);
	if (!in)
		return ENOMEM;
	for (ext2_ino_t ino = 1; ino <= last && !err; ino++) {
		err = ext2fs_read_inode_full(fs, ino, (struct ext2_inode *)in,
					     size);
		if (err || !(in->i_atime | in->i_ctime | in->i_mtime))
			continue;
		in->i_atime = in->i_ctime = in->i_mtime = 0;
		/* the extra times only where the inode has room for them
		 * (beyond it may lie in-inode xattrs) */
		if (size > EXT2_GOOD_OLD_INODE_SIZE &&
		    (size_t)EXT2_GOOD_OLD_INODE_SIZE + in->i_extra_isize >=
		    offsetof(struct ext2_inode_large, i_crtime_extra) +
		    sizeof(in->i_crtime_extra)) {
			in->i_crtime = 0;
			in->i_ctime_extra = in->i_mtime_extra = 0;
			in->i_atime_extra = in->i_crtime_extra = 0;
		}
		err = ext2fs_write_inode_full(fs, ino, (struct ext2_inode *)in,
					      size);
	}
	free(in);
	return err;
}
