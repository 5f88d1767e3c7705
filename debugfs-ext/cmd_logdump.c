/*
 * cmd_logdump.c: logdump [-a] [-c] [-b BLOCK] [-O] [-S] [OUTFILE] in
 * debugfs' text — the internal journal's transactions from the log's
 * start: each descriptor, commit and revoke block; with -a every logged
 * block and revoke record, with -b only those of one filesystem block
 * (and whether its group's logged bitmaps mark it), -c the logged
 * contents in hex, -O on past the log's end into old transactions, -S
 * the journal superblock first (libe2p's listing). External journals,
 * -i and -s are not read (ext3 images made by e3img have neither), nor
 * the ext4 fast-commit area. The format is read here from the bytes
 * (big-endian, JBD2), so no private library header is needed. It reads
 * the log as it is on disk, also when the rest of the view shows the
 * journal replayed (dbg_disk_fs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <e2p/e2p.h>

#include "dbg.h"
#include "open.h"

#define J_MAGIC		0xC03B3998U
#define J_DESCRIPTOR	1
#define J_COMMIT	2
#define J_SUPER_V1	3
#define J_SUPER_V2	4
#define J_REVOKE	5
#define J_INCOMPAT_64BIT	0x2
#define J_INCOMPAT_CSUM_V2	0x8
#define J_INCOMPAT_CSUM_V3	0x10
#define J_FLAG_SAME_UUID	0x2
#define J_FLAG_LAST_TAG		0x8
#define ANY_BLOCK	(~0ULL)

struct logdump {
	struct dbg *d;
	ext2_filsys fs;			/* the image as on disk */
	FILE *out;
	ext2_file_t file;
	int all, contents, old, super;
	unsigned long long block, bitmap;	/* -b, and its group's bitmap */
	unsigned bs, maxlen, first, incompat;
	unsigned char *buf, *data;
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint16_t be16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static errcode_t read_log(struct logdump *l, unsigned blk, void *buf,
			  unsigned size)
{
	unsigned got = 0;
	errcode_t err = ext2fs_file_llseek(l->file, (uint64_t)blk * l->bs,
					   EXT2_SEEK_SET, NULL);

	if (!err)
		err = ext2fs_file_read(l->file, buf, size, &got);
	if (!err && got != size)
		err = EXT2_ET_SHORT_READ;
	if (err)
		dbg_fail(l->d, err, "reading journal block %u", blk);
	return err;
}

static unsigned wrap(const struct logdump *l, unsigned blk)
{
	return blk >= l->maxlen ? blk - (l->maxlen - l->first) : blk;
}

static const char *type_name(uint32_t t)
{
	switch (t) {
	case J_DESCRIPTOR: return "descriptor block";
	case J_COMMIT: return "commit block";
	case J_SUPER_V1: return "V1 superblock";
	case J_SUPER_V2: return "V2 superblock";
	case J_REVOKE: return "revoke table";
	}
	return "unrecognised type";
}

/* debugfs' logdump -c: the native-endian words, then the bytes */
static void hex_words(FILE *f, const unsigned char *buf, unsigned len)
{
	for (unsigned i = 0; i < len; i += 16) {
		fprintf(f, "    %04x:  ", i);
		for (unsigned j = 0; j < 16; j += 4) {
			uint32_t w;

			memcpy(&w, buf + i + j, 4);
			fprintf(f, "%08x ", w);
		}
		for (unsigned j = 0; j < 16; j++) {
			unsigned char c = buf[i + j];

			fputc(c < ' ' || c >= 127 ? '.' : c, f);
		}
		fputc('\n', f);
	}
}

static void logged_block(struct logdump *l, unsigned log_blk, uint32_t fs_blk,
			 unsigned flags, uint32_t tid)
{
	if (!l->all && fs_blk != l->block && fs_blk != l->bitmap)
		return;
	fprintf(l->out, "  FS block %u logged at ", fs_blk);
	if (!l->all)
		fprintf(l->out, "sequence %u, ", tid);
	fprintf(l->out, "journal block %u (flags 0x%x)\n", log_blk, flags);
	if (!(l->contents && l->all) && fs_blk != l->block && fs_blk != l->bitmap)
		return;
	if (read_log(l, log_blk, l->data, l->bs))
		return;
	if (fs_blk == l->bitmap) {
		struct ext2_super_block *sb = l->fs->super;
		unsigned long long bit = (l->block - sb->s_first_data_block) %
					 sb->s_blocks_per_group;

		fprintf(l->out, "    (block bitmap for block %llu: block is %s)\n",
			l->block, ext2fs_test_bit((unsigned)bit, (char *)l->data) ?
			"SET" : "CLEAR");
	}
	if (l->contents)
		hex_words(l->out, l->data, l->bs);
}

static unsigned tag_bytes(const struct logdump *l)
{
	if (l->incompat & J_INCOMPAT_CSUM_V3)
		return 16;
	return 8 + (l->incompat & J_INCOMPAT_CSUM_V2 ? 2 : 0) +
	       (l->incompat & J_INCOMPAT_64BIT ? 4 : 0);
}

static unsigned descriptor(struct logdump *l, unsigned blk, uint32_t tid)
{
	unsigned off = 12, size = tag_bytes(l), flags;
	unsigned tail = l->incompat & (J_INCOMPAT_CSUM_V2 | J_INCOMPAT_CSUM_V3) ? 4 : 0;

	if (l->all)
		fprintf(l->out, "Dumping descriptor block, sequence %u, at "
			"block %u:\n", tid, blk);
	blk = wrap(l, blk + 1);
	do {
		const unsigned char *tag = l->buf + off;

		off += size;
		if (off > l->bs - tail)
			break;
		flags = be16(tag + 6);
		if (!(flags & J_FLAG_SAME_UUID))
			off += 16;
		logged_block(l, blk, be32(tag), flags, tid);
		blk = wrap(l, blk + 1);
	} while (!(flags & J_FLAG_LAST_TAG));
	return blk;
}

static void revokes(struct logdump *l, unsigned blk, uint32_t tid)
{
	unsigned rec = l->incompat & J_INCOMPAT_64BIT ? 8 : 4;
	unsigned max = be32(l->buf + 12);

	if (l->all)
		fprintf(l->out, "Dumping revoke block, sequence %u, at block %u:\n",
			tid, blk);
	if (max > l->bs)
		max = l->bs;
	for (unsigned off = 16; off + rec <= max; off += rec) {
		unsigned long long r = be32(l->buf + off);

		if (rec == 8)
			r = r << 32 | be32(l->buf + off + 4);
		if (!l->all && r != l->block)
			continue;
		fprintf(l->out, "  Revoke FS block %llu", r);
		if (l->all)
			fputc('\n', l->out);
		else
			fprintf(l->out, " at block %u, sequence %u\n", blk, tid);
	}
}

static void walk(struct logdump *l)
{
	unsigned char jsb[1024];
	uint32_t tid;
	unsigned blk;

	if (read_log(l, 0, jsb, sizeof(jsb)))
		return;
	if (l->super) {
		e2p_list_journal_super(l->out, (char *)jsb, (int)l->fs->blocksize, 0);
		fputc('\n', l->out);
	}
	if (be32(jsb) != J_MAGIC) {
		fprintf(l->out, "Journal superblock magic number invalid!\n");
		return;
	}
	l->bs = be32(jsb + 12);
	l->maxlen = be32(jsb + 16);
	l->first = be32(jsb + 20);
	tid = be32(jsb + 24);
	blk = be32(jsb + 28);
	l->incompat = be32(jsb + 40);
	fprintf(l->out, "Journal starts at block %u, transaction %u\n", blk, tid);
	if (l->bs != l->fs->blocksize || l->first == 0 || l->first >= l->maxlen) {
		dbg_fail(l->d, E3_JOURNAL_BAD, NULL);
		return;
	}
	if (!blk) {
		if (!l->old)
			return;
		blk = 1;
	}
	l->buf = malloc(l->bs);
	l->data = malloc(l->bs);
	if (!l->buf || !l->data) {
		dbg_fail(l->d, ENOMEM, NULL);
		return;
	}
	/* at most one pass over the log: an -O walk of a log whose every
	 * block looks valid must end */
	for (unsigned seen = 0; seen <= l->maxlen; seen++) {
		uint32_t type, seq;

		if (read_log(l, blk, l->buf, l->bs))
			return;
		if (be32(l->buf) != J_MAGIC) {
			fprintf(l->out, "No magic number at block %u: end of journal.\n",
				blk);
			return;
		}
		type = be32(l->buf + 4);
		seq = be32(l->buf + 8);
		if (seq != tid) {
			fprintf(l->out, "Found sequence %u (not %u) at block %u: "
				"end of journal.\n", seq, tid, blk);
			if (!l->old)
				return;
		}
		if (l->block == ANY_BLOCK)
			fprintf(l->out, "Found expected sequence %u, type %u (%s) "
				"at block %u\n", seq, type, type_name(type), blk);
		switch (type) {
		case J_DESCRIPTOR:
			blk = descriptor(l, blk, tid);
			break;
		case J_COMMIT:
			tid++;
			blk = wrap(l, blk + 1);
			break;
		case J_REVOKE:
			revokes(l, blk, tid);
			blk = wrap(l, blk + 1);
			break;
		default:
			fprintf(l->out, "Unexpected block type %u at block %u.\n",
				type, blk);
			return;
		}
	}
}

DBG_CMD(do_logdump)
{
	struct dbg *d = dbg_of(info);
	struct logdump l = { .d = d, .block = ANY_BLOCK, .bitmap = ANY_BLOCK };
	static const char usage[] = "logdump [-acOS] [-b BLOCK] [OUTFILE]";
	ext2_ino_t jino;
	errcode_t err;
	int c;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "ab:cOS")) != -1) {
		switch (c) {
		case 'a': l.all = 1; break;
		case 'c': l.contents = 1; break;
		case 'O': l.old = 1; break;
		case 'S': l.super = 1; break;
		case 'b':
			if (dbg_number(d, optarg, "block", &l.block))
				return;
			break;
		default:
			dbg_fail(d, 0, "usage: %s", usage);
			return;
		}
	}
	if (argc > optind + 1) {
		dbg_fail(d, 0, "usage: %s", usage);
		return;
	}
	if (!(l.fs = dbg_disk_fs(d)))
		return;
	jino = l.fs->super->s_journal_inum;
	if (!ext2fs_has_feature_journal(l.fs->super) || !jino) {
		dbg_fail(d, E3_NO_JOURNAL, NULL);
		return;
	}
	if (l.block != ANY_BLOCK) {
		struct ext2_super_block *sb = l.fs->super;

		if (l.block < sb->s_first_data_block ||
		    l.block >= ext2fs_blocks_count(sb)) {
			dbg_fail(d, 0, "block %llu is outside the filesystem", l.block);
			return;
		}
		l.bitmap = ext2fs_block_bitmap_loc(l.fs, (dgrp_t)
			((l.block - sb->s_first_data_block) / sb->s_blocks_per_group));
	}
	l.out = d->out;
	if (argc == optind + 1 && !(l.out = fopen(argv[optind], "w"))) {
		dbg_fail(d, errno, "%s", argv[optind]);
		return;
	}
	err = ext2fs_file_open(l.fs, jino, 0, &l.file);
	if (err)
		dbg_fail(d, err, "journal inode %u", jino);
	else {
		walk(&l);
		ext2fs_file_close(l.file);
	}
	if (l.out != d->out && fclose(l.out))
		dbg_fail(d, errno, "%s", argv[optind]);
	free(l.buf);
	free(l.data);
}
