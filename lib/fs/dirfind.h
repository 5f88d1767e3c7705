/*
 * dirfind.h: finding and removing one name in a directory without reading
 * all of it when the directory has an htree index (lib/fs/dirfind.c).
 * Callers hold fs_lock.
 */
#ifndef E3_DIRFIND_H
#define E3_DIRFIND_H
#include <ext2fs/ext2fs.h>

/* *lblk when the entry's block is not known (found by a full scan). */
#define E3_DIR_BLOCK_UNKNOWN ((blk64_t)~0ULL)

/* Like ext2fs_lookup (0 and *ino, or EXT2_ET_FILE_NOT_FOUND), through
 * the htree index when dir has a usable one; *lblk is then the
 * directory block holding the entry. */
errcode_t e3_dir_find(ext2_filsys fs, ext2_ino_t dir, const char *name,
		      ext2_ino_t *ino, blk64_t *lblk);

/* name in directory block lblk only: 0 and *ino, EXT2_ET_FILE_NOT_FOUND
 * (also for a block past the end or a hole), EXT2_ET_DIR_CORRUPTED when
 * the block does not parse. */
errcode_t e3_dir_find_in(ext2_filsys fs, ext2_ino_t dir, blk64_t lblk,
			 const char *name, ext2_ino_t *ino);

/* Removes name (of inode ino) from directory block lblk as ext2fs_unlink
 * would: the entry's record goes to the one before it, or, first in its
 * block, its inode number becomes 0. EXT2_ET_DIR_NO_SPACE_FOR_CSUM never;
 * EXT2_ET_FILE_NOT_FOUND when the block does not hold it. */
errcode_t e3_dir_unlink_at(ext2_filsys fs, ext2_ino_t dir, blk64_t lblk,
			   const char *name, ext2_ino_t ino);

#endif
