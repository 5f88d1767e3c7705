/*
 * mkfs_apply.c: the last mkfs step — writing the filesystem e3_mkfs_compute
 * described, with the same libext2fs calls in the same order as mke2fs'
 * main(), so the result matches `mke2fs -t ext3` block for block (apart
 * from UUIDs and times). With SOURCE_DATE_EPOCH every timestamp is the
 * epoch and the UUID and hash seed are name-based, so two runs give
 * byte-identical images.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "e3img.h"
#include "fs/fixed_clock.h"
#include "mkfs_target.h"
#include "mkfs_zeroio.h"
#include "journal/mkjournal.h"

#define BSD_DISKMAGIC 0x82564557U
#define BSD_MAGICDISK 0x57455682U
#define BSD_LABEL_OFFSET 64

/* A name-based (SHA-1) UUID from the epoch, the label and what it is for,
 * so different images built at one epoch still differ by label. */
static void derived_uuid(const struct e3_mkfs_params *p, const char *what,
			 unsigned char out[16])
{
	char name[128];
	int n;

	n = snprintf(name, sizeof(name), "e3img:mkfs:%s:%lld:%s", what,
		     (long long)p->epoch, p->label);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(name))
		n = sizeof(name) - 1;
	uuid_generate_sha1(out, *uuid_get_template("url"), name, (size_t)n);
}

static void set_identity(ext2_filsys fs, const struct e3_mkfs_params *p)
{
	struct ext2_super_block *s = fs->super;

	switch (p->uuid_mode) {
	case E3_UUID_CLEAR:
		uuid_clear(s->s_uuid);
		break;
	case E3_UUID_TIME:
		uuid_generate_time(s->s_uuid);
		break;
	case E3_UUID_GIVEN:
		memcpy(s->s_uuid, p->uuid, sizeof(s->s_uuid));
		break;
	case E3_UUID_RANDOM:
		uuid_generate(s->s_uuid);
		break;
	case E3_UUID_DEFAULT:
		if (p->have_epoch)
			derived_uuid(p, "uuid", s->s_uuid);
		else
			uuid_generate(s->s_uuid);
		break;
	}
	ext2fs_init_csum_seed(fs);
	s->s_def_hash_version = EXT2_HASH_HALF_MD4;
	if (p->hash_seed_given)
		memcpy(s->s_hash_seed, p->hash_seed, sizeof(s->s_hash_seed));
	else if (p->have_epoch)
		derived_uuid(p, "hash_seed", (unsigned char *)s->s_hash_seed);
	else
		uuid_generate((unsigned char *)s->s_hash_seed);
	s->s_max_mnt_count = -1;	/* enable_periodic_fsck = 0 */
	memset(s->s_volume_name, 0, sizeof(s->s_volume_name));
	memcpy(s->s_volume_name, p->label, strnlen(p->label, EXT2_LABEL_LEN));
	/* -M fills the field; 64 bytes leave no NUL, as in mke2fs */
	memcpy(s->s_last_mounted, p->last_mounted,
	       strnlen(p->last_mounted, sizeof(s->s_last_mounted)));
	if (p->test_fs)
		s->s_flags |= EXT2_FLAGS_TEST_FILESYS;
	if (p->have_epoch) {
		/* libext2fs stamps every inode it writes with fs->now */
		fs->now = (time_t)p->epoch;
		s->s_mkfs_time = s->s_wtime = s->s_lastcheck = (uint32_t)p->epoch;
	}
}

/* Zeroes nsect 512-byte sectors from sect; sector 0 is left alone when it
 * holds a BSD disklabel (mke2fs' zap_sector). */
static errcode_t zap_sectors(ext2_filsys fs, int sect, int nsect)
{
	char buf[512 * 8];
	uint32_t magic;
	errcode_t err;

	if (sect == 0) {
		io_channel_set_blksize(fs->io, 512);
		err = io_channel_read_blk64(fs->io, 0, -512, buf);
		io_channel_set_blksize(fs->io, fs->blocksize);
		if (err)
			return err;
		memcpy(&magic, buf + BSD_LABEL_OFFSET, sizeof(magic));
		if (magic == BSD_DISKMAGIC || magic == BSD_MAGICDISK)
			return 0;
	}
	memset(buf, 0, sizeof(buf));
	io_channel_set_blksize(fs->io, 512);
	err = io_channel_write_blk64(fs->io, sect, -512 * nsect, buf);
	io_channel_set_blksize(fs->io, fs->blocksize);
	return err;
}

/* A device keeps its old contents unless discard works; mke2fs discards
 * in 2 GiB steps and still zeroes the inode tables afterwards. */
static void discard_device(ext2_filsys fs)
{
	blk64_t blocks = ext2fs_blocks_count(fs->super);
	blk64_t step = (2048ULL << 20) / fs->blocksize, cur;

	if (io_channel_discard(fs->io, 0, fs->blocksize))
		return;
	for (cur = fs->blocksize; cur < blocks; cur += step)
		if (io_channel_discard(fs->io, cur,
				       cur + step > blocks ? blocks - cur : step))
			return;
}

/* Old RAID or other metadata near the end of a device goes too. */
static errcode_t zero_tail(ext2_filsys fs)
{
	blk64_t rsv = 65536 / fs->blocksize;
	blk64_t blocks = ext2fs_blocks_count(fs->super);
	blk64_t start = blocks & ~(rsv - 1);

	if (start > rsv)
		start -= rsv;
	if (start == 0)
		return 0;
	return ext2fs_zero_blocks2(fs, start, (int)(blocks - start), NULL, NULL);
}

/* What mke2fs zeroes before it writes: old superblocks, boot sectors, the
 * device's tail. A file that already reads as zeros needs none of it (and
 * stays sparse); the bytes come out the same. */
static errcode_t wipe_old(ext2_filsys fs, const struct e3_mkfs_target *t)
{
	errcode_t err;

	if (t->zeroed)
		return 0;
	err = zap_sectors(fs, 2, 6);
	if (!err)
		err = zap_sectors(fs, 0, 2);
	if (!err)
		err = zero_tail(fs);
	return err;
}

/* ext3 has no uninit_bg, so every inode table is whole and must read as
 * zeros: write them unless the file already does. mke2fs (lazy_itable_init
 * on, as on any kernel since 2.6.37) marks the groups ITABLE_ZEROED only
 * when its discard zeroed the target, which for a file means the file had
 * a size, and always with lazy_itable_init=0; the flag follows that rule
 * so the bytes match mke2fs'. */
static errcode_t write_inode_tables(ext2_filsys fs,
				    const struct e3_mkfs_params *p,
				    const struct e3_mkfs_target *t)
{
	for (dgrp_t i = 0; i < fs->group_desc_count; i++) {
		blk64_t blk = ext2fs_inode_table_loc(fs, i);
		errcode_t err;

		if (t->discarded || !p->lazy_itable_init) {
			ext2fs_bg_flags_set(fs, i, EXT2_BG_INODE_ZEROED);
			ext2fs_group_desc_csum_set(fs, i);
		}
		if (t->zeroed)
			continue;
		err = ext2fs_zero_blocks2(fs, blk, (int)fs->inode_blocks_per_group,
					  NULL, NULL);
		if (err)
			return err;
	}
	return 0;
}

static errcode_t set_root_owner(ext2_filsys fs, const struct e3_mkfs_params *p)
{
	struct ext2_inode inode;
	errcode_t err;

	if (p->root_uid == 0 && p->root_gid == 0)
		return 0;
	err = ext2fs_read_inode(fs, EXT2_ROOT_INO, &inode);
	if (err)
		return err;
	inode.i_uid = (uint16_t)p->root_uid;
	ext2fs_set_i_uid_high(inode, p->root_uid >> 16);
	inode.i_gid = (uint16_t)p->root_gid;
	ext2fs_set_i_gid_high(inode, p->root_gid >> 16);
	return ext2fs_write_new_inode(fs, EXT2_ROOT_INO, &inode);
}

/* lost+found gets blocks until it has 16 KiB and at least two blocks, so
 * e2fsck never has to grow it while reconnecting files. */
static errcode_t make_lost_found(ext2_filsys fs)
{
	static const char name[] = "lost+found";
	unsigned size = 0;
	ext2_ino_t ino;
	errcode_t err;

	fs->umask = 077;
	err = ext2fs_mkdir(fs, EXT2_ROOT_INO, 0, name);
	if (!err)
		err = ext2fs_lookup(fs, EXT2_ROOT_INO, name, sizeof(name) - 1,
				    NULL, &ino);
	fs->umask = 022;
	for (int i = 1; !err && i < EXT2_NDIR_BLOCKS; i++) {
		size += fs->blocksize;
		if (size >= 16 * 1024 && size >= 2 * fs->blocksize)
			break;
		err = ext2fs_expand_dir(fs, ino);
	}
	return err;
}

static errcode_t make_special_inodes(ext2_filsys fs,
				     const struct e3_mkfs_params *p)
{
	errcode_t err;

	err = ext2fs_mkdir(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, NULL);
	if (!err)
		err = set_root_owner(fs, p);
	if (!err)
		err = make_lost_found(fs);
	if (err)
		return err;
	/* inodes 3..10 are reserved: marked in use, left zeroed */
	for (ext2_ino_t i = EXT2_ROOT_INO + 1; i < EXT2_FIRST_INODE(fs->super); i++)
		ext2fs_inode_alloc_stats2(fs, i, +1, 0);
	ext2fs_mark_ib_dirty(fs);
	/* the bad blocks inode, empty */
	ext2fs_mark_inode_bitmap2(fs->inode_map, EXT2_BAD_INO);
	ext2fs_inode_alloc_stats2(fs, EXT2_BAD_INO, +1, 0);
	err = ext2fs_update_bb_inode(fs, NULL);
	if (!err && ext2fs_has_feature_resize_inode(fs->super))
		err = ext2fs_create_resize_inode(fs);
	return err;
}

/* On a zeroed file the journal already reads as zeros (mkjournal.c);
 * lazy_journal_init leaves old data in it, as mke2fs does (the journal
 * superblock's sequence keeps replay from reading it as log). */
static errcode_t make_journal(ext2_filsys fs, const struct e3_mkfs_params *p,
			      const struct e3_mkfs_geometry *g,
			      const struct e3_mkfs_target *t)
{
	if (!g->journal_blocks) {
		ext2fs_clear_feature_journal(fs->super);
		return 0;
	}
	return e3_make_journal(fs, g->journal_blocks,
			       t->zeroed || p->lazy_journal_init, NULL);
}

static errcode_t build(ext2_filsys fs, const struct e3_mkfs_params *p,
		       const struct e3_mkfs_geometry *g,
		       const struct e3_mkfs_target *t)
{
	blk64_t overhead;
	errcode_t err;

	if (t->is_device && !p->nodiscard)
		discard_device(fs);
	set_identity(fs, p);
	/* mke2fs staggers each group's bitmaps by the RAID stride */
	fs->stride = p->raid_stride;
	err = t->zeroed ? e3_zeroio_arm(fs) : 0;
	if (!err)
		err = ext2fs_allocate_tables(fs);
	if (!err)
		err = ext2fs_count_used_clusters(fs, fs->super->s_first_data_block,
						 ext2fs_blocks_count(fs->super) - 1,
						 &overhead);
	if (!err)
		err = wipe_old(fs, t);
	if (!err)
		err = write_inode_tables(fs, p, t);
	if (!err)
		err = make_special_inodes(fs, p);
	if (!err)
		err = make_journal(fs, p, g, t);
	if (!err && p->have_epoch && p->epoch == 0)
		err = e3_zero_special_inode_times(fs);
	if (err)
		return err;
	overhead += g->journal_blocks + fs->super->s_first_data_block;
	fs->super->s_overhead_clusters = (uint32_t)overhead;
	return 0;
}

/* Writes and, without ret_fs, closes the filesystem. */
static errcode_t write_fs(const char *path, const struct e3_mkfs_params *p,
			  const struct e3_mkfs_geometry *g,
			  const struct e3_mkfs_target *t, ext2_filsys *ret_fs)
{
	struct ext2_super_block param = g->param;
	struct e3_sb_copies sbc = { 0 };
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_initialize(path, EXT2_FLAG_EXCLUSIVE | EXT2_FLAG_64BITS,
				&param, e3_zeroio_manager(), &fs);
	if (err)
		return err;
	err = build(fs, p, g, t);
	/* the flush stamps the real time for epoch 0: taken out after it */
	if (!err && p->have_epoch && p->epoch == 0)
		err = e3_sb_copies_get(fs, &sbc);
	if (err) {
		ext2fs_free(fs);
		return err;
	}
	if (!ret_fs) {
		err = ext2fs_close_free(&fs);
	} else {
		/* The caller may write behind libext2fs' back from here on. */
		err = ext2fs_flush(fs);
		e3_zeroio_disarm(fs);
		if (err)
			ext2fs_free(fs);
		else
			*ret_fs = fs;
	}
	if (!err && sbc.off) {
		err = e3_sb_copies_zero_wtime(t->lock_fd, &sbc);
		if (!err && fsync(t->lock_fd) < 0)
			err = errno;
		if (err && ret_fs) {
			ext2fs_free(*ret_fs);
			*ret_fs = NULL;
		}
	}
	e3_sb_copies_free(&sbc);
	return err;
}

errcode_t e3_mkfs_apply(const char *path, const struct e3_mkfs_params *p,
			const struct e3_mkfs_geometry *g, ext2_filsys *ret_fs)
{
	struct e3_mkfs_target t;
	errcode_t err;

	err = e3_mkfs_prepare_file(path, g->blocks * g->block_size,
				   p->nodiscard, &t);
	if (err)
		return err;
	err = write_fs(path, p, g, &t, ret_fs);
	close(t.lock_fd);
	return err;
}
