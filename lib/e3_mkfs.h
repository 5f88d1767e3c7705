/*
 * e3_mkfs.h: public API for making an ext3 filesystem in an image file
 * (used by e3mkfs and e3cp): parameters, geometry computed as mke2fs would,
 * and applying it.
 *
 * The pipeline, one call per step:
 *   e3_mkfs_params_init()      defaults (what `mke2fs -t ext3` would use)
 *   ... the caller fills the params from its options; e3_mkfs_edit_features()
 *       for "-O feat,^feat" lists ...
 *   e3_mkfs_validate()         values that are wrong whatever the size
 *   e3_mkfs_check_target()     the image path: directory, mounted, not empty,
 *                              read-only; and its size when none was given
 *   e3_mkfs_compute()          the geometry (nothing is written)
 *   e3_mkfs_apply()            writes the filesystem
 * Every step returns an errcode_t; nothing prints.
 */
#ifndef E3_MKFS_H
#define E3_MKFS_H

#include <stdint.h>
#include <ext2fs/ext2fs.h>

#ifdef __cplusplus
extern "C" {
#endif

enum e3_uuid_mode {
	E3_UUID_DEFAULT = 0,	/* random, or derived from SOURCE_DATE_EPOCH */
	E3_UUID_RANDOM,
	E3_UUID_TIME,
	E3_UUID_CLEAR,
	E3_UUID_GIVEN,		/* the bytes in params.uuid */
};

struct e3_mkfs_params {
	uint64_t size;			/* bytes; 0 = the target's size */
	int size_from_target;		/* set by e3_mkfs_check_target */
	unsigned block_size;		/* 0 = by size, as mke2fs.conf says */
	unsigned inode_size;		/* 0 = 256 */
	uint64_t inode_ratio;		/* bytes per inode; 0 = by size */
	uint64_t inode_count;		/* 0 = from the ratio */
	double reserved_percent;	/* blocks reserved for root, 0..50 */
	unsigned blocks_per_group;	/* 0 = 8 * block size */
	char label[EXT2_LABEL_LEN + 1];
	enum e3_uuid_mode uuid_mode;
	unsigned char uuid[16];
	int hash_seed_given;
	unsigned char hash_seed[16];
	uint32_t root_uid, root_gid;
	unsigned journal_mib;		/* 0 = sized from the fs as mke2fs does */
	/* feature words (compat, incompat, ro_compat) */
	uint32_t features[3];
	/* SOURCE_DATE_EPOCH: every timestamp is this, and UUID and hash seed
	 * are derived from it (and the label) unless given */
	int have_epoch;
	int64_t epoch;
	/* The feature name e3_mkfs_edit_features refused, for the message. */
	char bad_feature[32];
	/* mke2fs -T: usage types of the stock mke2fs.conf, comma separated,
	 * applied in order (a later one's values win); "" = by size */
	char usage_types[64];
	uint16_t errors;		/* -e: EXT2_ERRORS_*; 0 = continue */
	char last_mounted[64];		/* -M (64 bytes fill the field, no NUL) */
	uint32_t raid_stride;		/* -E stride=: also staggers the
					   bitmaps across groups, as mke2fs */
	uint32_t raid_stripe_width;	/* -E stripe_width= */
	int test_fs;			/* -E test_fs: the test-filesystem flag */
	/* -E lazy_itable_init=0: every group is flagged ITABLE_ZEROED (the
	 * tables are written out either way: ext3 has no uninit_bg) */
	int lazy_itable_init;		/* 1 by default */
	/* -E lazy_journal_init=1: a target holding old data keeps it in the
	 * journal's blocks instead of having them zeroed */
	int lazy_journal_init;
	int nodiscard;			/* -E nodiscard: old contents are not
					   punched out first */
};

/* What e3_mkfs_compute found: the numbers dumpe2fs -h shows, plus the
 * superblock template e3_mkfs_apply hands to ext2fs_initialize. */
struct e3_mkfs_geometry {
	const char *usage_type;		/* floppy, small, default, big, huge */
	unsigned block_size;
	unsigned inode_size;
	uint64_t inode_ratio;
	uint64_t blocks;
	uint64_t reserved_blocks;
	uint32_t first_data_block;
	uint32_t inodes;
	uint32_t groups;
	uint32_t blocks_per_group;
	uint32_t inodes_per_group;
	uint32_t inode_blocks_per_group;
	uint32_t desc_blocks;
	uint32_t reserved_gdt_blocks;
	uint32_t journal_blocks;	/* 0 = no journal */
	uint32_t features[3];
	struct ext2_super_block param;	/* template for ext2fs_initialize */
};

void e3_mkfs_params_init(struct e3_mkfs_params *p);
/* Reads SOURCE_DATE_EPOCH into p (unset or empty: leaves p alone).
 * E3_BAD_EPOCH unless it is 0..E3_EPOCH_MAX (e3_epoch_parse). */
errcode_t e3_mkfs_epoch_from_env(struct e3_mkfs_params *p);
/* Applies "feat,^feat,..." to p->features. Only ext3's features may be
 * switched; on E3_EXT4_FEATURE or E3_UNKNOWN_FEATURE the name is in
 * p->bad_feature. */
errcode_t e3_mkfs_edit_features(struct e3_mkfs_params *p, const char *list);
/* Names of the feature bits in words[3], space separated, into buf. */
void e3_mkfs_feature_string(const uint32_t words[3], char *buf, size_t len);
errcode_t e3_mkfs_parse_uuid(const char *s, struct e3_mkfs_params *p);
/* validate and compute set *why (if why is not NULL) to a one-line reason
 * more precise than the code's message, or NULL. */
errcode_t e3_mkfs_validate(const struct e3_mkfs_params *p, const char **why);

/* Refuses a directory (E3_IS_DIRECTORY), a mounted device (E3_MOUNTED), a
 * file holding data (not just holes) or a device whose first 64 KiB are
 * not all zeros, without force (E3_NOT_EMPTY), a read-only
 * target (E3_IMAGE_READONLY). A missing path is fine when p->size is set.
 * With p->size 0 it takes the file's or device's size. */
errcode_t e3_mkfs_check_target(const char *path, int force,
			       struct e3_mkfs_params *p);
/* The smallest size (bytes) e3_mkfs_compute accepts for p's block size. */
uint64_t e3_mkfs_min_size(const struct e3_mkfs_params *p);
/* Geometry for p->size, as mke2fs -t ext3 computes it. */
errcode_t e3_mkfs_compute(const struct e3_mkfs_params *p,
			  struct e3_mkfs_geometry *g, const char **why);
/* E3_JOURNAL_TOO_SMALL when g's journal cannot hold the largest
 * transaction this library's writers build on g (they would refuse to
 * open the image): for e3mkfs -d, to say so before formatting. */
errcode_t e3_mkfs_check_journal(const struct e3_mkfs_geometry *g);
/* mke2fs -c: reads the first bytes of path as badblocks' read-only test
 * does, skipping holes (no medium under them). 0 when all read; E3_BAD_BLOCK
 * with *bad the first unreadable block (units of bs). A missing path is
 * nothing to test (*tested 0). *tested: bytes that held data and were read. */
errcode_t e3_mkfs_read_test(const char *path, uint64_t bytes, unsigned bs,
			    uint64_t *bad, uint64_t *tested);
/* Creates (sparse) or overwrites path and writes the filesystem, holding
 * the e3img writer lock meanwhile (E3_IMAGE_LOCKED if another process has
 * the image open for writing). With ret_fs the filesystem stays open
 * read-write for the caller (e3cp fills it, then ext2fs_close_free) but
 * the lock is released: the caller takes its own. Without, it is closed. */
errcode_t e3_mkfs_apply(const char *path, const struct e3_mkfs_params *p,
			const struct e3_mkfs_geometry *g, ext2_filsys *ret_fs);

#ifdef __cplusplus
}
#endif

#endif
