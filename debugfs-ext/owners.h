/*
 * owners.h: what holds a block, in words (owners.c) — shared by owner,
 * jtrans and jreplay so the three name a block the same way.
 */
#ifndef E3_DBG_OWNERS_H
#define E3_DBG_OWNERS_H
#include "dbg.h"

/* One text per block of b[0..n) (all inside fs): group metadata from
 * e3_meta_owner; else, from one pass over fs's inodes, the journal, the
 * reserved GDT map, or "inode I PATH" / "directory I PATH" with the
 * block's role (data block and logical number, indirect block, xattr
 * block); else "free" or "in use, owned by no inode" (just "owned by no
 * inode" when fs has no bitmaps loaded, -c). NULL (and the request
 * failed) on an error. */
char **dbg_owners(struct dbg *d, ext2_filsys fs, const blk64_t *b, size_t n);
void dbg_owners_free(char **text, size_t n);

#endif
