/*
 * mkfs_nullio.h: an io_manager that writes nothing and reads zeros, so
 * ext2fs_initialize can compute a geometry (e3mkfs -n) without a file.
 */
#ifndef E3_MKFS_NULLIO_H
#define E3_MKFS_NULLIO_H

#include <ext2fs/ext2fs.h>

io_manager e3_null_io_manager(void);

#endif
