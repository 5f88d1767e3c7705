/*
 * mkfs_zeroio.h: an io_manager over unix I/O that, once armed, drops
 * writes of zeros to blocks that still read as zeros (see mkfs_zeroio.c).
 * Only for files known to read as zeros when armed.
 */
#ifndef E3_MKFS_ZEROIO_H
#define E3_MKFS_ZEROIO_H

#include <ext2fs/ext2fs.h>

io_manager e3_zeroio_manager(void);
/* Starts eliding; fs must have been opened through e3_zeroio_manager. */
errcode_t e3_zeroio_arm(ext2_filsys fs);
/* Back to plain pass-through; returns how many block writes were dropped. */
unsigned long long e3_zeroio_disarm(ext2_filsys fs);

#endif
