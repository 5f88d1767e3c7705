/*
 * cmd_sif.c: set_inode_field (sif) FILE FIELD VALUE for the fields that
 * matter on ext3 — mode, uid, gid, size, links_count, atime, ctime,
 * mtime, crtime, dtime, flags, generation, blocks (i_blocks, 512-byte
 * units). The inode is written whole through the journal
 * (e3_inode_write). Like debugfs it writes what it is told: a wrong
 * size or link count is for e2fsck to find.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"

enum kind { U16, U32, UID, GID, SIZE, BLOCKS, TIME };

struct field {
	const char *name;
	enum kind kind;
	size_t off;		/* in struct ext2_inode_large */
	size_t extra_off;	/* TIME: its _extra word (0: none) */
};

#define F(n, k, m) { n, k, offsetof(struct ext2_inode_large, m), 0 }
#define T(n, m, x) { n, TIME, offsetof(struct ext2_inode_large, m), \
		     offsetof(struct ext2_inode_large, x) }

static const struct field fields[] = {
	F("mode", U16, i_mode),
	F("uid", UID, i_uid),
	F("gid", GID, i_gid),
	F("size", SIZE, i_size),
	F("links_count", U16, i_links_count),
	T("atime", i_atime, i_atime_extra),
	T("ctime", i_ctime, i_ctime_extra),
	T("mtime", i_mtime, i_mtime_extra),
	T("crtime", i_crtime, i_crtime_extra),
	F("dtime", U32, i_dtime),
	F("flags", U32, i_flags),
	F("generation", U32, i_generation),
	F("blocks", BLOCKS, i_blocks),
};

static void put16(void *p, uint64_t v)
{
	uint16_t x = (uint16_t)v;

	memcpy(p, &x, 2);
}

static void put32(void *p, uint64_t v)
{
	uint32_t x = (uint32_t)v;

	memcpy(p, &x, 4);
}

static int set(struct dbg *d, struct ext2_inode_large *in,
	       const struct field *f, const char *s)
{
	struct ext2_inode *i = (struct ext2_inode *)in;
	unsigned char *base = (unsigned char *)in;
	unsigned long long v;
	int big = EXT2_INODE_SIZE(d->fs->super) > EXT2_GOOD_OLD_INODE_SIZE;

	if (f->kind == TIME && s[0] == '@')
		s++;
	if (dbg_number(d, s, f->name, &v))
		return 1;
	switch (f->kind) {
	case U16:
		if (v > 0xffff)
			goto range;
		put16(base + f->off, v);
		break;
	case U32:
		if (v > 0xffffffffULL)
			goto range;
		put32(base + f->off, v);
		break;
	case UID:
		if (v > 0xffffffffULL)
			goto range;
		i->i_uid = (uint16_t)v;
		i->osd2.linux2.l_i_uid_high = (uint16_t)(v >> 16);
		break;
	case GID:
		if (v > 0xffffffffULL)
			goto range;
		i->i_gid = (uint16_t)v;
		i->osd2.linux2.l_i_gid_high = (uint16_t)(v >> 16);
		break;
	case SIZE:
		i->i_size = (uint32_t)v;
		i->i_size_high = (uint32_t)(v >> 32);
		break;
	case BLOCKS:
		if (v >> 48)
			goto range;
		i->i_blocks = (uint32_t)v;
		i->osd2.linux2.l_i_blocks_hi = (uint16_t)(v >> 32);
		break;
	case TIME:
		if (v > 0x3ffffffffULL)
			goto range;
		if (!big || f->extra_off >= EXT2_GOOD_OLD_INODE_SIZE +
					    (size_t)in->i_extra_isize) {
			if (v > 0xffffffffULL || f->extra_off ==
			    offsetof(struct ext2_inode_large, i_crtime_extra)) {
				dbg_fail(d, 0, "%s: no room for it in this inode",
					 f->name);
				return 1;
			}
			put32(base + f->off, v);
			break;
		}
		put32(base + f->off, v);
		{
			uint32_t extra;

			memcpy(&extra, base + f->extra_off, 4);
			extra = (extra & ~(uint32_t)EXT4_EPOCH_MASK) |
				(uint32_t)(v >> 32);
			put32(base + f->extra_off, extra);
		}
		break;
	}
	return 0;
range:
	dbg_fail(d, 0, "%s: value out of range: %s", f->name, s);
	return 1;
}

DBG_CMD(do_sif)
{
	struct dbg *d = dbg_of(info);
	const struct field *f = NULL;
	struct ext2_inode_large *in;
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 4, 4, "set_inode_field FILE FIELD VALUE") ||
	    dbg_need_rw(d))
		return;
	for (size_t k = 0; k < sizeof(fields) / sizeof(*fields); k++)
		if (!strcmp(argv[2], fields[k].name))
			f = &fields[k];
	if (!f) {
		dbg_fail(d, 0, "%s: unknown field (mode, uid, gid, size, "
			 "links_count, atime, ctime, mtime, crtime, dtime, "
			 "flags, generation, blocks)", argv[2]);
		return;
	}
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	if (!(in = dbg_inode_buf(d))) {
		dbg_fail(d, ENOMEM, NULL);
		return;
	}
	if (!dbg_read_inode(d, ino, argv[1], in) && !set(d, in, f, argv[3])) {
		err = e3_inode_write(d->img, ino, (struct ext2_inode *)in,
				     EXT2_INODE_SIZE(d->fs->super));
		if (err)
			dbg_fail(d, err, "%s", argv[1]);
		else
			d->changed = 1;
	}
	free(in);
}
