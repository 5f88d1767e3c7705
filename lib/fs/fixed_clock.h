/*
 * fixed_clock.h: a clock fixed at the epoch itself (SOURCE_DATE_EPOCH=0)
 * where libext2fs stamps the real time. See fixed_clock.c.
 */
#ifndef E3_FIXED_CLOCK_H
#define E3_FIXED_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <ext2fs/ext2fs.h>

/* The byte offsets of the superblock copies a flush of fs writes. */
struct e3_sb_copies {
	uint64_t *off;
	size_t n;
};

errcode_t e3_sb_copies_get(ext2_filsys fs, struct e3_sb_copies *c);
/* Writes 0 into s_wtime of each copy through fd, and frees c. */
errcode_t e3_sb_copies_zero_wtime(int fd, struct e3_sb_copies *c);
void e3_sb_copies_free(struct e3_sb_copies *c);

/* Zeroes the times of inodes 1 .. first_ino (lost+found included) that
 * libext2fs created and stamped: mkfs at epoch 0. */
errcode_t e3_zero_special_inode_times(ext2_filsys fs);

#endif
