/*
 * mkfs.c: the first three steps of making an ext3 filesystem — defaults,
 * validation and geometry — mirroring what `mke2fs -t ext3` (e2fsprogs
 * 1.47.0 with its stock mke2fs.conf) decides for the same size and options.
 * Writing the result is mkfs_apply.c's job; the image path is
 * mkfs_target.c's.
 *
 * The mke2fs.conf values are built in rather than read from
 * /etc/mke2fs.conf: an image must not depend on how the host that built it
 * was configured (reproducible builds).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

#include "e3img.h"
#include "mkfs_nullio.h"
#include "journal/journal.h"

#define MIB (1024ULL * 1024)
#define MAX_32 0xffffffffULL
/* ext2fs_default_journal_size gives no journal below this many blocks. */
#define MIN_JOURNAL_FS_BLOCKS 2048

/* mke2fs.conf's [fs_types]. By size: "floppy" below 3 MiB, "small" below
 * 512 MiB, "default" below 4 TiB, "big" below 16 TiB, else "huge"; -T
 * names these or the others. A 0 leaves [defaults]' value (4096-byte
 * blocks, 16384 bytes per inode, 256-byte inodes); largefile's
 * "blocksize = -1" means the page size, 4096 on the hosts we build for. */
struct usage_type {
	const char *name;
	uint64_t below;			/* bytes; 0: only by name (-T) */
	unsigned block_size;
	unsigned inode_ratio;
	unsigned inode_size;
};

static const struct usage_type usage_types[] = {
	{ "floppy",  3 * MIB,              1024, 8192, 0 },
	{ "small",   512 * MIB,            1024, 4096, 0 },
	{ "default", 4 * 1024 * 1024 * MIB, 0, 0, 0 },
	{ "big",     16 * 1024 * 1024 * MIB, 0, 32768, 0 },
	{ "huge",    UINT64_MAX,           0, 65536, 0 },
	{ "news",       0, 0, 4096, 0 },
	{ "largefile",  0, 4096, 1048576, 0 },
	{ "largefile4", 0, 4096, 4194304, 0 },
	{ "hurd",       0, 4096, 0, 128 },
};
#define N_USAGE_TYPES (sizeof(usage_types) / sizeof(*usage_types))
#define DEFAULT_BLOCK_SIZE 4096
#define DEFAULT_INODE_RATIO 16384
#define DEFAULT_INODE_SIZE 256
#define DEFAULT_RESERVED_PERCENT 5.0

/* The features ext3 may carry, and ext4's, named so a refusal can say
 * which one. */
struct feature {
	const char *name;
	int word;			/* 0 compat, 1 incompat, 2 ro_compat */
	uint32_t mask;
};

static const struct feature ext3_features[] = {
	{ "has_journal",  0, EXT3_FEATURE_COMPAT_HAS_JOURNAL },
	{ "ext_attr",     0, EXT2_FEATURE_COMPAT_EXT_ATTR },
	{ "resize_inode", 0, EXT2_FEATURE_COMPAT_RESIZE_INODE },
	{ "dir_index",    0, EXT2_FEATURE_COMPAT_DIR_INDEX },
	{ "filetype",     1, EXT2_FEATURE_INCOMPAT_FILETYPE },
	{ "sparse_super", 2, EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER },
	{ "large_file",   2, EXT2_FEATURE_RO_COMPAT_LARGE_FILE },
};
#define N_EXT3_FEATURES (sizeof(ext3_features) / sizeof(*ext3_features))

static const char *const ext4_features[] = {
	"extent", "extents", "flex_bg", "64bit", "metadata_csum", "huge_file",
	"dir_nlink", "extra_isize", "uninit_bg", "gdt_csum", "meta_bg",
	"mmp", "bigalloc", "inline_data", "encrypt", "casefold", "fname_encoding",
	"ea_inode", "quota", "project", "sparse_super2", "fast_commit",
	"stable_inodes", "metadata_csum_seed", "largedir", "large_dir",
	"verity", "journal_dev", "lazy_bg", "snapshot_bitmap",
	"exclude_bitmap", "exclude_inode", "dirdata", "orphan_file",
	"orphan_present", "encoding",
};

void e3_mkfs_params_init(struct e3_mkfs_params *p)
{
	memset(p, 0, sizeof(*p));
	p->reserved_percent = DEFAULT_RESERVED_PERCENT;
	p->lazy_itable_init = 1;	/* what mke2fs picks on any kernel
					   since 2.6.37 */
	/* base_features of the stock mke2fs.conf, plus ext3's has_journal */
	p->features[0] = EXT3_FEATURE_COMPAT_HAS_JOURNAL |
		EXT2_FEATURE_COMPAT_EXT_ATTR | EXT2_FEATURE_COMPAT_RESIZE_INODE |
		EXT2_FEATURE_COMPAT_DIR_INDEX;
	p->features[1] = EXT2_FEATURE_INCOMPAT_FILETYPE;
	p->features[2] = EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER |
		EXT2_FEATURE_RO_COMPAT_LARGE_FILE;
}

errcode_t e3_mkfs_epoch_from_env(struct e3_mkfs_params *p)
{
	int64_t v;
	errcode_t err = e3_source_date_epoch(&v);

	if (err || v < 0)
		return err;
	p->have_epoch = 1;
	p->epoch = v;
	return 0;
}

static void set_bad_feature(struct e3_mkfs_params *p, const char *name,
			    size_t len)
{
	if (len >= sizeof(p->bad_feature))
		len = sizeof(p->bad_feature) - 1;
	memcpy(p->bad_feature, name, len);
	p->bad_feature[len] = '\0';
}

static errcode_t edit_one_feature(struct e3_mkfs_params *p, const char *tok,
				  size_t len)
{
	int off = 0;

	if (len && (*tok == '^' || *tok == '-' || *tok == '+')) {
		off = *tok == '^' || *tok == '-';
		tok++;
		len--;
	}
	if (len == 0)
		return 0;
	for (size_t i = 0; i < N_EXT3_FEATURES; i++) {
		const struct feature *f = &ext3_features[i];

		if (strlen(f->name) != len || strncasecmp(f->name, tok, len))
			continue;
		if (off)
			p->features[f->word] &= ~f->mask;
		else
			p->features[f->word] |= f->mask;
		return 0;
	}
	set_bad_feature(p, tok, len);
	for (size_t i = 0; i < sizeof(ext4_features) / sizeof(*ext4_features); i++)
		if (strlen(ext4_features[i]) == len &&
		    !strncasecmp(ext4_features[i], tok, len))
			/* switching an ext4 feature off is what ext3 has anyway */
			return off ? 0 : E3_EXT4_FEATURE;
	return E3_UNKNOWN_FEATURE;
}

errcode_t e3_mkfs_edit_features(struct e3_mkfs_params *p, const char *list)
{
	const char *s = list;

	while (*s) {
		size_t len = strcspn(s, ", \t");
		errcode_t err = edit_one_feature(p, s, len);

		if (err)
			return err;
		s += len;
		if (*s)
			s++;
	}
	return 0;
}

void e3_mkfs_feature_string(const uint32_t words[3], char *buf, size_t len)
{
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < N_EXT3_FEATURES; i++) {
		const struct feature *f = &ext3_features[i];
		int w;

		if (!(words[f->word] & f->mask))
			continue;
		w = snprintf(buf + n, len > n ? len - n : 0, "%s%s",
			     n ? " " : "", f->name);
		if (w > 0)
			n += (size_t)w;
	}
}

errcode_t e3_mkfs_parse_uuid(const char *s, struct e3_mkfs_params *p)
{
	if (!strcasecmp(s, "random"))
		p->uuid_mode = E3_UUID_RANDOM;
	else if (!strcasecmp(s, "time"))
		p->uuid_mode = E3_UUID_TIME;
	else if (!strcasecmp(s, "clear") || !strcasecmp(s, "null"))
		p->uuid_mode = E3_UUID_CLEAR;
	else if (uuid_parse(s, p->uuid) == 0)
		p->uuid_mode = E3_UUID_GIVEN;
	else
		return E3_BAD_OPTION;
	return 0;
}

/* Sets *why and returns err. */
static errcode_t refuse(const char **why, errcode_t err, const char *reason)
{
	if (why)
		*why = reason;
	return err;
}

static const struct usage_type *usage_named(const char *name, size_t len)
{
	for (size_t i = 0; i < N_USAGE_TYPES; i++)
		if (strlen(usage_types[i].name) == len &&
		    !strncmp(usage_types[i].name, name, len))
			return &usage_types[i];
	return NULL;
}

static void usage_apply(struct usage_type *u, const struct usage_type *t)
{
	if (t->block_size)
		u->block_size = t->block_size;
	if (t->inode_ratio)
		u->inode_ratio = t->inode_ratio;
	if (t->inode_size)
		u->inode_size = t->inode_size;
}

/* The values in effect: [defaults], then the size's type or -T's list in
 * order, as mke2fs reads its profile. Unknown names were refused by
 * e3_mkfs_validate. */
static struct usage_type usage_for(const struct e3_mkfs_params *p,
				   uint64_t bytes)
{
	struct usage_type u = { NULL, 0, DEFAULT_BLOCK_SIZE,
				DEFAULT_INODE_RATIO, DEFAULT_INODE_SIZE };
	const char *s = p->usage_types;
	size_t i = 0;

	if (!*s) {
		while (bytes >= usage_types[i].below)
			i++;
		u.name = usage_types[i].name;
		usage_apply(&u, &usage_types[i]);
		return u;
	}
	u.name = s;
	while (*s) {
		size_t len = strcspn(s, ",");
		const struct usage_type *t = usage_named(s, len);

		if (t)
			usage_apply(&u, t);
		s += len + (s[len] == ',');
	}
	return u;
}

static errcode_t check_usage_types(const struct e3_mkfs_params *p,
				   const char **why)
{
	const char *s = p->usage_types;

	while (*s) {
		size_t len = strcspn(s, ",");

		if (!usage_named(s, len))
			return refuse(why, E3_BAD_OPTION,
				      "unknown usage type (-T): floppy small default big huge news largefile largefile4 hurd");
		s += len + (s[len] == ',');
	}
	return 0;
}

/* The block size in effect: given, or the usage type's. */
static unsigned block_size_for(const struct e3_mkfs_params *p, uint64_t bytes)
{
	return p->block_size ? p->block_size : usage_for(p, bytes).block_size;
}

errcode_t e3_mkfs_validate(const struct e3_mkfs_params *p, const char **why)
{
	unsigned bs = p->block_size;

	if (why)
		*why = NULL;
	if (check_usage_types(p, why))
		return E3_BAD_OPTION;
	if (bs && bs != 1024 && bs != 2048 && bs != 4096)
		return E3_BAD_BLOCK_SIZE;
	if (p->inode_size && p->inode_size != 128 && p->inode_size != 256)
		return E3_BAD_INODE_SIZE;
	if (p->inode_ratio && (p->inode_ratio < EXT2_MIN_BLOCK_SIZE ||
			       p->inode_ratio > EXT2_MAX_BLOCK_SIZE * 1024ULL))
		return refuse(why, E3_BAD_OPTION,
			      "bytes per inode must be 1024..65536K");
	if (p->inode_count > MAX_32)
		return E3_BAD_INODE_COUNT;
	if (!(p->reserved_percent >= 0.0 && p->reserved_percent <= 50.0))
		return refuse(why, E3_BAD_OPTION, "reserved percent must be 0..50");
	if (p->blocks_per_group && (p->blocks_per_group % 8 ||
				    p->blocks_per_group < 256 ||
				    p->blocks_per_group > 8 * (bs ? bs : 4096)))
		return refuse(why, E3_BAD_OPTION,
			      "blocks per group must be a multiple of 8 in 256..8*block size");
	if ((p->features[0] & EXT2_FEATURE_COMPAT_RESIZE_INODE) &&
	    !(p->features[2] & EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER))
		return refuse(why, E3_BAD_OPTION,
			      "resize_inode needs sparse_super (add -O ^resize_inode)");
	if (p->journal_mib && !(p->features[0] & EXT3_FEATURE_COMPAT_HAS_JOURNAL))
		return refuse(why, E3_BAD_OPTION,
			      "a journal size was given without has_journal");
	if (p->have_epoch)
		/* -T hurd brings 128-byte inodes */
		return e3_epoch_fits_inodes(p->epoch, p->inode_size ?
					    p->inode_size :
					    usage_for(p, p->size).inode_size);
	return 0;
}

uint64_t e3_mkfs_min_size(const struct e3_mkfs_params *p)
{
	/* Below 3 MiB the usage type is "floppy" with 1 KiB blocks. */
	unsigned bs = p->block_size ? p->block_size : 1024;

	return (uint64_t)MIN_JOURNAL_FS_BLOCKS * bs;
}

/* The blocks mke2fs would use for p->size bytes: a size taken from the
 * device is rounded down to whole pages first, as mke2fs does. */
static uint64_t blocks_for(const struct e3_mkfs_params *p, unsigned bs)
{
	uint64_t bytes = p->size;

	if (p->size_from_target) {
		unsigned first = p->block_size ? p->block_size : 1024;

		if (first < 4096)
			bytes &= ~(uint64_t)4095;
	}
	return bytes / bs;
}

/* The superblock template of mke2fs' PRS(), for ext2fs_initialize. */
static errcode_t make_template(const struct e3_mkfs_params *p,
			       struct e3_mkfs_geometry *g, const char **why)
{
	struct ext2_super_block *s = &g->param;
	const struct usage_type u = usage_for(p, p->size);
	unsigned bs = block_size_for(p, p->size);
	uint64_t blocks = blocks_for(p, bs), ratio, inodes;
	unsigned isize = p->inode_size ? p->inode_size : u.inode_size;

	if (blocks > MAX_32)
		return E3_TOO_LARGE;
	if (blocks < MIN_JOURNAL_FS_BLOCKS)
		return E3_TOO_SMALL;
	if (p->blocks_per_group > 8 * bs)
		return refuse(why, E3_BAD_OPTION,
			      "blocks per group (-g) must be at most 8*block size");
	if (isize > bs)
		return E3_BAD_INODE_SIZE;
	ratio = p->inode_ratio ? p->inode_ratio : u.inode_ratio;
	if (!p->inode_ratio && ratio < bs)
		ratio = bs;
	inodes = p->inode_count ? p->inode_count : blocks * bs / ratio;
	if (inodes > MAX_32)
		return refuse(why, E3_BAD_INODE_COUNT,
			      "more than 2^32-1 inodes (raise -i)");
	if (inodes * isize >= blocks * bs)
		return refuse(why, E3_BAD_INODE_COUNT,
			      "the inode tables would fill the filesystem (raise -i or lower -N)");

	memset(g, 0, sizeof(*g));
	g->usage_type = u.name;
	g->block_size = bs;
	g->inode_size = isize;
	g->inode_ratio = ratio;
	s->s_rev_level = EXT2_DYNAMIC_REV;
	s->s_log_block_size = (bs == 1024) ? 0 : (bs == 2048) ? 1 : 2;
	s->s_log_cluster_size = s->s_log_block_size;
	s->s_feature_compat = p->features[0];
	s->s_feature_incompat = p->features[1];
	s->s_feature_ro_compat = p->features[2];
	s->s_default_mount_opts = EXT2_DEFM_XATTR_USER | EXT2_DEFM_ACL;
	s->s_errors = p->errors;	/* 0: ext2fs_initialize's default */
	s->s_raid_stride = p->raid_stride;
	s->s_raid_stripe_width = p->raid_stripe_width;
	ext2fs_blocks_count_set(s, blocks);
	s->s_blocks_per_group = p->blocks_per_group;
	s->s_inode_size = isize;
	s->s_inodes_count = (uint32_t)inodes;
	/* the same double arithmetic as mke2fs, so rounding agrees */
	ext2fs_r_blocks_count_set(s, (blk64_t)(p->reserved_percent *
					       (double)blocks / 100.0));
	return 0;
}

/* ext2fs_initialize's refusals, in our words. */
static errcode_t map_init_error(errcode_t err)
{
	switch (err) {
	case EXT2_ET_TOO_MANY_INODES:
		return E3_BAD_INODE_COUNT;
	case EXT2_ET_TOOSMALL:
		return E3_TOO_SMALL;
	default:
		return err;
	}
}

/* Journal size: ext2fs_get_journal_params, or -J size=MiB with mke2fs'
 * limits (1024..10240000 blocks, at most half the free blocks). */
static errcode_t journal_blocks(const struct e3_mkfs_params *p, ext2_filsys fs,
				uint32_t *ret, const char **why)
{
	struct ext2fs_journal_params jp;
	uint64_t n;

	*ret = 0;
	if (!ext2fs_has_feature_journal(fs->super))
		return 0;
	if (ext2fs_get_journal_params(&jp, fs))
		return E3_TOO_SMALL;
	n = jp.num_journal_blocks;
	if (p->journal_mib) {
		n = (uint64_t)p->journal_mib * 1024 / (fs->blocksize / 1024);
		if (n < 1024 || n > 10240000 ||
		    n > ext2fs_free_blocks_count(fs->super) / 2)
			return refuse(why, E3_BAD_OPTION,
				      "journal size must be 1024..10240000 blocks and at most half the free blocks");
	}
	*ret = (uint32_t)n;
	return 0;
}

errcode_t e3_mkfs_compute(const struct e3_mkfs_params *p,
			  struct e3_mkfs_geometry *g, const char **why)
{
	ext2_filsys fs;
	errcode_t err;

	err = e3_mkfs_validate(p, why);
	if (err)
		return err;
	err = make_template(p, g, why);
	if (err)
		return err;
	err = ext2fs_initialize("e3mkfs-geometry", EXT2_FLAG_64BITS, &g->param,
				e3_null_io_manager(), &fs);
	if (err == EXT2_ET_TOO_MANY_INODES)
		return refuse(why, E3_BAD_INODE_COUNT,
			      "more inodes per group than a bitmap block holds (lower -N or raise -g)");
	if (err)
		return map_init_error(err);
	g->blocks = ext2fs_blocks_count(fs->super);
	g->reserved_blocks = ext2fs_r_blocks_count(fs->super);
	g->first_data_block = fs->super->s_first_data_block;
	g->inodes = fs->super->s_inodes_count;
	g->groups = fs->group_desc_count;
	g->blocks_per_group = fs->super->s_blocks_per_group;
	g->inodes_per_group = fs->super->s_inodes_per_group;
	g->inode_blocks_per_group = fs->inode_blocks_per_group;
	g->desc_blocks = fs->desc_blocks;
	g->reserved_gdt_blocks = fs->super->s_reserved_gdt_blocks;
	g->features[0] = fs->super->s_feature_compat;
	g->features[1] = fs->super->s_feature_incompat;
	g->features[2] = fs->super->s_feature_ro_compat;
	err = journal_blocks(p, fs, &g->journal_blocks, why);
	ext2fs_free(fs);
	return err;
}

errcode_t e3_mkfs_check_journal(const struct e3_mkfs_geometry *g)
{
	return e3_journal_geometry_fits(g->block_size, g->groups,
					g->desc_blocks, g->journal_blocks);
}
