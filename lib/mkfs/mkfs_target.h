/*
 * mkfs_target.h: private to the mkfs steps — getting the image file ready
 * before ext2fs_initialize opens it.
 */
#ifndef E3_MKFS_TARGET_H
#define E3_MKFS_TARGET_H

#include <stdint.h>
#include <ext2fs/ext2fs.h>

/* What e3_mkfs_prepare_file found and did. */
struct e3_mkfs_target {
	int is_device;		/* a block device: old contents still there */
	int zeroed;		/* [0, bytes) reads as zeros (holes) */
	int discarded;		/* it had a size, and was discarded (punched)
				   as mke2fs discards a device it can size */
	int lock_fd;		/* holds the exclusive e3img lock (flock, as
				   e3_image_open takes it); -1 when closed */
};

/* Creates path if missing, takes the e3img writer lock (E3_IMAGE_LOCKED if
 * another process holds it); for a regular file makes [0, bytes) read as
 * zeros (holes) and at least bytes long — unless nodiscard, when old
 * contents stay (t->zeroed only for a file with no data). The caller
 * closes t->lock_fd. */
errcode_t e3_mkfs_prepare_file(const char *path, uint64_t bytes, int nodiscard,
			       struct e3_mkfs_target *t);

#endif
