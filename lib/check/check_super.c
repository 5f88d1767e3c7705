/*
 * check_super.c: pass 1 — open the image (falling back to a backup
 * superblock when the primary or its group descriptors are unusable),
 * refuse ext4-only features by name, and check the superblock and each
 * group's bitmaps and inode table: inside the group, not overlapping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

struct feat_name {
	int type;		/* 0 compat, 1 incompat, 2 ro_compat */
	uint32_t mask;
	const char *name;
};

/* Features ext2/ext3 may carry; the rest are named when refused. */
#define OK_COMPAT (EXT2_FEATURE_COMPAT_DIR_PREALLOC | \
	EXT2_FEATURE_COMPAT_IMAGIC_INODES | EXT3_FEATURE_COMPAT_HAS_JOURNAL | \
	EXT2_FEATURE_COMPAT_EXT_ATTR | EXT2_FEATURE_COMPAT_RESIZE_INODE | \
	EXT2_FEATURE_COMPAT_DIR_INDEX | EXT2_FEATURE_COMPAT_LAZY_BG)
#define OK_INCOMPAT (EXT2_FEATURE_INCOMPAT_FILETYPE | \
	EXT3_FEATURE_INCOMPAT_RECOVER)
/* dir_nlink is no ext3 feature, but e2fsck sets it on a directory with
 * more than 65,000 subdirectories and so do we (check_refs.c): such an
 * image is checked (the writers still refuse it) */
#define OK_RO_COMPAT (EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER | \
	EXT2_FEATURE_RO_COMPAT_LARGE_FILE | EXT4_FEATURE_RO_COMPAT_DIR_NLINK)

static const struct feat_name feat_names[] = {
	{ 0, 0x0200, "sparse_super2" }, { 0, 0x0400, "fast_commit" },
	{ 0, 0x0800, "stable_inodes" }, { 0, 0x1000, "orphan_file" },
	{ 0, 0x0040, "lazy_bg" }, { 0, 0x0080, "snapshot_bitmap" },
	{ 0, 0x0100, "exclude_bitmap" },
	{ 1, 0x0001, "compression" }, { 1, 0x0008, "journal_dev" },
	{ 1, 0x0010, "meta_bg" }, { 1, 0x0040, "extent" },
	{ 1, 0x0080, "64bit" }, { 1, 0x0100, "mmp" },
	{ 1, 0x0200, "flex_bg" }, { 1, 0x0400, "ea_inode" },
	{ 1, 0x1000, "dirdata" }, { 1, 0x2000, "metadata_csum_seed" },
	{ 1, 0x4000, "large_dir" }, { 1, 0x8000, "inline_data" },
	{ 1, 0x10000, "encrypt" }, { 1, 0x20000, "casefold" },
	{ 2, 0x0004, "btree_dir" }, { 2, 0x0008, "huge_file" },
	{ 2, 0x0010, "uninit_bg" }, { 2, 0x0020, "dir_nlink" },
	{ 2, 0x0040, "extra_isize" }, { 2, 0x0080, "has_snapshot" },
	{ 2, 0x0100, "quota" }, { 2, 0x0200, "bigalloc" },
	{ 2, 0x0400, "metadata_csum" }, { 2, 0x0800, "replica" },
	{ 2, 0x1000, "read-only" }, { 2, 0x2000, "project" },
	{ 2, 0x4000, "shared_blocks" }, { 2, 0x8000, "verity" },
	{ 2, 0x10000, "orphan_present" },
};

/* The first feature ext2/ext3 cannot have, by name, or NULL. */
static const char *bad_feature(const struct ext2_super_block *sb, char *buf,
			       size_t len)
{
	uint32_t bad[3];
	size_t i;
	int t;

	bad[0] = sb->s_feature_compat & ~OK_COMPAT;
	bad[1] = sb->s_feature_incompat & ~OK_INCOMPAT;
	bad[2] = sb->s_feature_ro_compat & ~OK_RO_COMPAT;
	/* lazy_bg is harmless (old mke2fs); tolerated above */
	for (i = 0; i < sizeof(feat_names) / sizeof(feat_names[0]); i++)
		if (bad[feat_names[i].type] & feat_names[i].mask)
			return feat_names[i].name;
	for (t = 0; t < 3; t++)
		if (bad[t]) {
			snprintf(buf, len, "FEATURE_%c%d",
				 "CIR"[t], __builtin_ctz(bad[t]));
			return buf;
		}
	return NULL;
}

static int fatal(struct chk_ctx *ctx, errcode_t err, const char *what)
{
	ctx->rep->fatal = 1;
	ctx->rep->fatal_err = err;
	free(ctx->rep->fatal_what);
	ctx->rep->fatal_what = what ? strdup(what) : NULL;
	return 1;
}

/* Reads the raw superblock at byte offset off into sb; 0 if it has the
 * magic. */
static int raw_super(int fd, uint64_t off, struct ext2_super_block *sb)
{
	if (chk_pread(fd, sb, sizeof(*sb), off))
		return -1;
	return sb->s_magic == EXT2_SUPER_MAGIC ? 0 : -1;
}

/* Looks for a backup superblock: the standard places for each block size,
 * then any 1 KiB-aligned copy with s_block_group_nr >= 1 in the first
 * 64 MiB (small groups made with mke2fs -g). */
static int find_backup(int fd, blk64_t *blk, unsigned *bs)
{
	struct ext2_super_block sb;
	uint64_t off;
	unsigned b;

	for (b = 1024; b <= 4096; b *= 2) {
		blk64_t cand = (blk64_t)b * 8 + (b == 1024);

		if (!raw_super(fd, cand * b, &sb) &&
		    (unsigned)EXT2_BLOCK_SIZE(&sb) == b && sb.s_block_group_nr) {
			*blk = cand;
			*bs = b;
			return 0;
		}
	}
	for (off = 2048; off < ((uint64_t)64 << 20); off += 1024) {
		if (raw_super(fd, off, &sb) || !sb.s_block_group_nr ||
		    sb.s_log_block_size > 2)
			continue;
		b = EXT2_BLOCK_SIZE(&sb);
		if (off % b)
			continue;
		*blk = off / b;
		*bs = b;
		return 0;
	}
	return -1;
}

static errcode_t open_at(struct chk_ctx *ctx, blk64_t super, unsigned bs,
			 ext2_filsys *ret)
{
	int flags = EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS |
		    EXT2_FLAG_SKIP_MMP;

	if (ctx->opts.mode != E3_CHECK_READONLY)
		flags |= EXT2_FLAG_RW | EXT2_FLAG_EXCLUSIVE;
	if (super && !bs) {
		errcode_t err = EXT2_ET_BAD_MAGIC;

		for (bs = 1024; bs <= 4096 && err; bs *= 2)
			err = ext2fs_open2(ctx->path, NULL, flags, super, bs,
					   unix_io_manager, ret);
		return err;
	}
	return ext2fs_open2(ctx->path, NULL, flags, super, bs,
			    unix_io_manager, ret);
}

/* Group-descriptor sanity needed before anything else can be read, as
 * e2fsck judges it (libext2fs' ext2fs_check_desc: each group's bitmaps
 * and inode table inside the group and on blocks no other metadata
 * holds), so that a backup is used exactly when e2fsck uses one. Returns
 * the first problem as text, or NULL. */
static const char *desc_unusable(ext2_filsys fs)
{
	errcode_t err = ext2fs_check_desc(fs);

	return err ? error_message(err) : NULL;
}

static errcode_t open_backup(struct chk_ctx *ctx, const char *why)
{
	struct e3_finding *f;
	blk64_t blk;
	unsigned bs;
	errcode_t err;

	if (find_backup(ctx->fd, &blk, &bs))
		return EXT2_ET_BAD_MAGIC;
	err = open_at(ctx, blk, bs, &ctx->fs);
	if (err)
		return err;
	if (desc_unusable(ctx->fs)) {
		ext2fs_close_free(&ctx->fs);
		return EXT2_ET_GDESC_BAD_BLOCK_MAP;
	}
	ctx->rep->used_superblock = blk;
	f = chk_add(ctx, NULL, E3P_SB_UNUSABLE);
	if (f) {
		f->blk = blk;
		f->name = strdup(why);
	}
	return 0;
}

static errcode_t check_size(struct chk_ctx *ctx);

errcode_t chk_open(struct chk_ctx *ctx)
{
	struct ext2_super_block sb;
	const char *bad, *why = NULL;
	char buf[32];
	int64_t epoch;
	int primary_read = 0;	/* opened, but its descriptors are bad */
	errcode_t err;

	ctx->fd = open(ctx->path, O_RDONLY | O_CLOEXEC);
	if (ctx->fd < 0)
		return fatal(ctx, errno, NULL), errno;
	/* name an ext4 feature before libext2fs refuses or accepts it */
	if (!ctx->opts.superblock && !raw_super(ctx->fd, 1024, &sb) &&
	    (bad = bad_feature(&sb, buf, sizeof(buf)))) {
		fatal(ctx, E3_UNSUPPORTED_FEATURE, bad);
		return E3_UNSUPPORTED_FEATURE;
	}
	err = open_at(ctx, ctx->opts.superblock, ctx->opts.blocksize, &ctx->fs);
	if (!err && !ctx->opts.superblock && (why = desc_unusable(ctx->fs))) {
		ext2fs_close_free(&ctx->fs);
		primary_read = 1;
	} else if (err && !ctx->opts.superblock && err != EXT2_ET_UNSUPP_FEATURE &&
		 err != EXT2_ET_RO_UNSUPP_FEATURE && err != EBUSY &&
		 err != EACCES && err != EROFS) {
		why = error_message(err);
	}
	if (why)
		err = open_backup(ctx, why);
	/* no backup with sound descriptors: as e2fsck, the primary's are
	 * used, the pieces outside their group dropped and reported (to be
	 * relocated: check_relocate.c) */
	if (err && primary_read)
		err = open_at(ctx, 0, 0, &ctx->fs);
	if (err) {
		fatal(ctx, err, why);
		return err;
	}
	if (ctx->opts.superblock)
		ctx->rep->used_superblock = ctx->opts.superblock;
	if ((bad = bad_feature(ctx->fs->super, buf, sizeof(buf)))) {
		fatal(ctx, E3_UNSUPPORTED_FEATURE, bad);
		return E3_UNSUPPORTED_FEATURE;
	}
	if (desc_unusable(ctx->fs) && (err = chk_drop_outside(ctx))) {
		fatal(ctx, err, NULL);
		return err;
	}
	/* a repair's times (superblock, dtime) are SOURCE_DATE_EPOCH's when
	 * set; libext2fs takes fs->now == 0 as "the real clock" */
	err = e3_source_date_epoch(&epoch);
	if (err) {
		fatal(ctx, err, NULL);
		return err;
	}
	if (epoch > 0)
		ctx->fs->now = (time_t)epoch;
	if ((ctx->fs->flags & EXT2_FLAG_RW) && (err = chk_io_wrap(ctx))) {
		fatal(ctx, err, NULL);
		return err;
	}
	ctx->bs = ctx->fs->blocksize;
	ctx->nblocks = ext2fs_blocks_count(ctx->fs->super);
	ctx->ninodes = ctx->fs->super->s_inodes_count;
	ctx->isize = EXT2_INODE_SIZE(ctx->fs->super);
	return check_size(ctx);
}

/* e2fsck's first look: the superblock's block count against the image's
 * (or device's) size. A read-only check says so and goes on, as e2fsck
 * -n does (answering no to "Abort?"); a repair stops before any write,
 * as e2fsck -y does (yes to "Abort?"): blocks past the end cannot be
 * read, and fixes computed without them would free what files own. */
static errcode_t check_size(struct chk_ctx *ctx)
{
	blk64_t have = 0;
	struct e3_finding *f;
	char what[96];

	if (ext2fs_get_device_size2(ctx->path, ctx->bs, &have) || !have ||
	    have >= ctx->nblocks)
		return 0;
	if (ctx->opts.mode == E3_CHECK_READONLY) {
		if ((f = chk_add(ctx, NULL, E3P_SB_TRUNCATED))) {
			f->num = ctx->nblocks;
			f->num2 = have;
		}
		return 0;
	}
	snprintf(what, sizeof(what), "the superblock says %llu blocks, "
		 "the image holds %llu", (unsigned long long)ctx->nblocks,
		 (unsigned long long)have);
	fatal(ctx, E3_IMAGE_TRUNCATED, what);
	return E3_IMAGE_TRUNCATED;
}

/* Claims blocks [blk, blk + n) for group g's metadata piece what
 * (CHK_RELOC_*, or -1: a superblock copy or descriptors); a block already
 * claimed is reported once per piece, and the piece's other blocks are
 * still claimed, as e2fsck's pass 1 claims them. */
static void mark_range(struct chk_ctx *ctx, dgrp_t g, int what, blk64_t blk,
		       blk64_t n)
{
	struct e3_finding *f;
	int reported = 0;
	blk64_t b;

	for (b = blk; b < blk + n && b < ctx->nblocks; b++) {
		if (!chk_bit(&ctx->meta, b)) {
			chk_set(&ctx->meta, b);
			continue;
		}
		if (reported++)
			continue;
		if (what >= 0) {
			chk_meta_conflict(ctx, g, what, b);
		} else if ((f = chk_add(ctx, NULL, E3P_GD_OVERLAP))) {
			f->group = g;
			f->blk = f->blk2 = b;
			f->num = (uint64_t)-1;
			f->name = strdup("superblock or descriptors");
		}
	}
}

/* Marks every group's superblock copy, descriptors (and reserved GDT
 * blocks), then per group its inode table and bitmaps, in ctx->meta,
 * reporting overlaps (e2fsck's order: check_relocate.c). A location
 * dropped because it was outside its group claims nothing. */
errcode_t chk_mark_metadata(struct chk_ctx *ctx)
{
	ext2_filsys fs = ctx->fs;
	blk64_t super, old_desc, new_desc, n;
	blk_t used;
	dgrp_t g;

	if (chk_bits_init(&ctx->meta, ctx->nblocks))
		return ENOMEM;
	for (g = 0; g < fs->group_desc_count; g++) {
		ext2fs_super_and_bgd_loc2(fs, g, &super, &old_desc, &new_desc,
					  &used);
		if (super || g == 0)
			mark_range(ctx, g, -1, super, 1);
		if (old_desc) {
			n = fs->desc_blocks + fs->super->s_reserved_gdt_blocks;
			mark_range(ctx, g, -1, old_desc, n);
		}
		if (new_desc)
			mark_range(ctx, g, -1, new_desc, 1);
	}
	for (g = 0; g < fs->group_desc_count; g++) {
		if (!chk_dropped(ctx, g, CHK_RELOC_IT))
			mark_range(ctx, g, CHK_RELOC_IT,
				   ext2fs_inode_table_loc(fs, g),
				   fs->inode_blocks_per_group);
		if (!chk_dropped(ctx, g, CHK_RELOC_BB))
			mark_range(ctx, g, CHK_RELOC_BB,
				   ext2fs_block_bitmap_loc(fs, g), 1);
		if (!chk_dropped(ctx, g, CHK_RELOC_IB))
			mark_range(ctx, g, CHK_RELOC_IB,
				   ext2fs_inode_bitmap_loc(fs, g), 1);
	}
	return 0;
}

void chk_pass_super(struct chk_ctx *ctx)
{
	struct ext2_super_block *sb = ctx->fs->super;
	struct e3_finding *f;
	uint64_t want;

	chk_progress(ctx, 1, 0, 1);
	if (sb->s_rev_level > EXT2_DYNAMIC_REV && (f = chk_add(ctx, NULL,
						    E3P_SB_REV_LEVEL)))
		f->num = sb->s_rev_level;
	want = (uint64_t)sb->s_inodes_per_group * ctx->fs->group_desc_count;
	if (sb->s_inodes_count != want &&
	    (f = chk_add(ctx, NULL, E3P_SB_INODES_COUNT))) {
		f->num = sb->s_inodes_count;
		f->num2 = want;
	}
	want = ctx->bs == 1024;
	if (sb->s_first_data_block != want &&
	    (f = chk_add(ctx, NULL, E3P_SB_FIRST_DATA_BLOCK))) {
		f->num = sb->s_first_data_block;
		f->num2 = want;
	}
	if ((sb->s_state & EXT2_ERROR_FS))
		chk_add(ctx, NULL, E3P_SB_ERROR_STATE);
	if (!ext2fs_has_feature_journal(sb) &&
	    (ext2fs_has_feature_journal_needs_recovery(sb) ||
	     sb->s_journal_inum || sb->s_journal_dev))
		chk_add(ctx, NULL, E3P_SB_JOURNAL_FIELDS);
	if (sb->s_last_orphan && (f = chk_add(ctx, NULL, E3P_SB_LAST_ORPHAN)))
		f->ino = sb->s_last_orphan;
	chk_progress(ctx, 1, 1, 1);
}
