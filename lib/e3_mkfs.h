/*
 * e3_mkfs.h: public API for making an ext3 filesystem in an image file
 * (used by e3mkfs and e3cp): parameters, geometry computed as mke2fs would,
 * and applying it.
 */
#ifndef E3_MKFS_H
#define E3_MKFS_H

#endif
