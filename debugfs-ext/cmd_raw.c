/*
 * cmd_raw.c: raw looks, in debugfs' text — imap FILE (where the inode
 * lives), idump FILE (the on-disk inode in hex), bd [-f FILE] BLOCK
 * (a block in hex; with -f, a logical block of FILE), dx_hash [-h ALG]
 * [-s SEED] NAME (a directory hash), params, rsv_check.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>
#include <e2p/e2p.h>

#include "dbg.h"

/* debugfs' hex dump: octal offsets, 16 bytes a line in pairs, the
 * printable bytes, a line equal to the one before shown once as '*' */
static void hexdump(FILE *f, const unsigned char *buf, size_t len)
{
	long suppress = -1;

	for (size_t i = 0; i < len; i += 16) {
		if (suppress < 0) {
			if (i && !memcmp(buf + i, buf + i - 16, 16)) {
				suppress = (long)i;
				fprintf(f, "*\n");
				continue;
			}
		} else {
			if (!memcmp(buf + i, buf + suppress, 16))
				continue;
			suppress = -1;
		}
		fprintf(f, "%04o  ", (unsigned)i);
		for (size_t j = 0; j < 16; j++) {
			fprintf(f, "%02x", buf[i + j]);
			if (j % 2)
				fputc(' ', f);
		}
		fputc(' ', f);
		for (size_t j = 0; j < 16; j++)
			fputc(isprint(buf[i + j]) ? buf[i + j] : '.', f);
		fputc('\n', f);
	}
	fputc('\n', f);
}

DBG_CMD(do_imap)
{
	struct dbg *d = dbg_of(info);
	ext2_filsys fs = d->fs;
	unsigned long group, off;
	blk64_t blk;
	ext2_ino_t ino;

	if (dbg_args(d, argc, 2, 2, "imap FILE"))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	group = (ino - 1) / fs->super->s_inodes_per_group;
	off = ((ino - 1) % fs->super->s_inodes_per_group) *
	      EXT2_INODE_SIZE(fs->super);
	blk = ext2fs_inode_table_loc(fs, (dgrp_t)group);
	if (!blk) {
		dbg_fail(d, 0, "inode table of group %lu is missing", group);
		return;
	}
	blk += off / fs->blocksize;
	off %= fs->blocksize;
	fprintf(d->out, "Inode %u is part of block group %lu\n"
		"\tlocated at block %llu, offset 0x%04lx\n", ino, group,
		(unsigned long long)blk, off);
}

DBG_CMD(do_idump)
{
	struct dbg *d = dbg_of(info);
	struct ext2_inode_large *in;
	ext2_ino_t ino;

	if (dbg_args(d, argc, 2, 2, "idump FILE"))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	if (!(in = dbg_inode_buf(d))) {
		dbg_fail(d, ENOMEM, NULL);
		return;
	}
	if (!dbg_read_inode(d, ino, argv[1], in))
		hexdump(d->out, (unsigned char *)in, EXT2_INODE_SIZE(d->fs->super));
	free(in);
}

DBG_CMD(do_bd)
{
	struct dbg *d = dbg_of(info);
	static const char usage[] = "block_dump [-f FILE] BLOCK";
	const char *file = NULL;
	unsigned long long blk;
	blk64_t pblk;
	unsigned char *buf;
	errcode_t err;
	int c;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "f:")) != -1) {
		if (c != 'f') {
			dbg_fail(d, 0, "usage: %s", usage);
			return;
		}
		file = optarg;
	}
	if (argc != optind + 1) {
		dbg_fail(d, 0, "usage: %s", usage);
		return;
	}
	if (dbg_number(d, argv[optind], "block", &blk))
		return;
	pblk = blk;
	if (file) {
		ext2_ino_t ino = dbg_inode(d, file);

		if (!ino)
			return;
		err = ext2fs_bmap2(d->fs, ino, NULL, NULL, 0, blk, NULL, &pblk);
		if (err) {
			dbg_fail(d, err, "%s: block %llu", file, blk);
			return;
		}
	}
	if (pblk >= ext2fs_blocks_count(d->fs->super)) {
		dbg_fail(d, 0, "block %llu is outside the filesystem",
			 (unsigned long long)pblk);
		return;
	}
	if (!(buf = malloc(d->fs->blocksize))) {
		dbg_fail(d, ENOMEM, NULL);
		return;
	}
	err = io_channel_read_blk64(d->fs->io, pblk, 1, buf);
	if (err)
		dbg_fail(d, err, "block %llu", (unsigned long long)pblk);
	else
		hexdump(d->out, buf, d->fs->blocksize);
	free(buf);
}

DBG_CMD(do_dx_hash)
{
	struct dbg *d = dbg_of(info);
	static const char usage[] = "dx_hash [-h ALG] [-s SEED] NAME";
	ext2_dirhash_t hash = 0, minor = 0;
	uint32_t seed[4] = { 0 };
	int c, alg = 0;
	errcode_t err;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "h:s:")) != -1) {
		if (c == 'h') {
			alg = e2p_string2hash(optarg);
			if (alg < 0) {
				dbg_fail(d, 0, "unknown hash algorithm: %s", optarg);
				return;
			}
		} else if (c == 's') {
			if (uuid_parse(optarg, (unsigned char *)seed)) {
				dbg_fail(d, 0, "bad hash seed: %s", optarg);
				return;
			}
		} else {
			dbg_fail(d, 0, "usage: %s", usage);
			return;
		}
	}
	if (argc != optind + 1) {
		dbg_fail(d, 0, "usage: %s", usage);
		return;
	}
	err = ext2fs_dirhash(alg, argv[optind], (int)strlen(argv[optind]), seed,
			     &hash, &minor);
	if (err)
		dbg_fail(d, err, "dx_hash");
	else
		fprintf(d->out, "Hash of %s is 0x%0x (minor 0x%0x)\n",
			argv[optind], hash, minor);
}

DBG_CMD(do_params)
{
	struct dbg *d = dbg_of(info);

	(void)argv;
	if (dbg_args(d, argc, 1, 1, "params"))
		return;
	fprintf(d->out, "Open mode: read-%s\nFilesystem in use: %s\n",
		d->img ? "write" : "only", d->image);
}

/* rsv_check: the reservation-tree validator (-w: only a writer has an
 * allocator); between requests no file is open, so no window is booked */
DBG_CMD(do_rsv_check)
{
	struct dbg *d = dbg_of(info);
	enum e3_alloc_mode mode;
	uint64_t windows = 0;
	char why[256];
	errcode_t err;

	(void)argv;
	if (dbg_args(d, argc, 1, 1, "rsv_check") || dbg_need_rw(d))
		return;
	err = e3_rsv_check(d->img, why, sizeof(why), &windows, &mode);
	if (err)
		dbg_fail(d, err, "%s", why);
	else
		fprintf(d->out, "Reservation windows (%s): %llu booked, tree valid\n",
			e3_alloc_mode_name(mode), (unsigned long long)windows);
}
