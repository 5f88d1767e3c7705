/*
 * dump.h: copying out of the image, shared by cmd_dump.c and
 * cmd_rdump.c.
 */
#ifndef E3_DBG_DUMP_H
#define E3_DBG_DUMP_H
#include "dbg.h"

/* The contents of ino to fd (holes kept, size set) or, with f, to f. */
errcode_t dbg_copy_out(struct dbg *d, ext2_ino_t ino, int fd, FILE *f);
/* Owner (when allowed: root), mode (not for symlinks) and times with
 * nanoseconds of inode onto the host file (fd, or path when fd < 0).
 * An owner change refused to a non-root user is not an error. */
errcode_t dbg_fix_perms(struct dbg *d, int fd, const char *path,
			const struct ext2_inode_large *inode, int is_link);

#endif
