/*
 * itable.h: inodes changed in place in their inode-table block, the
 * block written once for all of them (itable.c). Caller holds fs_lock.
 */
#ifndef E3_FS_ITABLE_H
#define E3_FS_ITABLE_H

#include <ext2fs/ext2fs.h>

struct e3_itab {
	ext2_filsys fs;
	blk64_t blk;		/* the block buf holds, 0: none */
	char *buf;
	int dirty;		/* buf changed since it was read */
};

/* Whether this image's inodes may be changed in place here (a
 * little-endian host, no inode checksums); else use libext2fs. */
int e3_itab_usable(ext2_filsys fs);
void e3_itab_init(struct e3_itab *t, ext2_filsys fs);
/* The inode-table block of ino and its offset in it. */
errcode_t e3_itab_place(ext2_filsys fs, ext2_ino_t ino, blk64_t *blk,
			unsigned *off);
/* Reads blk into t (t must not be dirty). */
errcode_t e3_itab_load(struct e3_itab *t, blk64_t blk);
/* Writes t's block if it was changed (set t->dirty after changing it),
 * and empties libext2fs' inode cache, which may hold older copies. */
errcode_t e3_itab_flush(struct e3_itab *t);
void e3_itab_free(struct e3_itab *t);

#endif
