/*
 * image_sane.h: a writer's checks of an image's metadata before it
 * trusts it (image_sane.c says why). Caller holds fs exclusively (open).
 */
#ifndef E3_IMAGE_SANE_H
#define E3_IMAGE_SANE_H

#include "e3img.h"

/* Each group's bitmaps (read in) agree with its descriptor's free block
 * and inode counts: E3_BLOCK_BITMAP_BAD, E3_INODE_BITMAP_BAD. */
errcode_t e3_image_check_bitmaps(ext2_filsys fs);

/* Superblock fields libext2fs does not check on open: E3_SUPER_BAD. */
errcode_t e3_image_check_super(ext2_filsys fs);

/* The root inode is a live directory: E3_ROOT_BAD. */
errcode_t e3_image_check_root(ext2_filsys fs);

#endif
