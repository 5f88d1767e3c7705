/*
 * cmd_ssv.c: set_super_value (ssv) FIELD VALUE for the superblock fields
 * that are policy, not structure — volume_name, last_mounted, mnt_count,
 * max_mnt_count, state, errors, lastcheck, checkinterval, mtime, wtime,
 * def_resuid, def_resgid, r_blocks_count, def_hash_version — journaled
 * through e3_super_write (the library refuses any change to counts,
 * sizes or features). The backups keep their old values, as the kernel
 * leaves them.
 */
#include <stddef.h>
#include <string.h>

#include "dbg.h"

enum skind { S_U16, S_U32, S_U8, S_STR };

struct sfield {
	const char *name;
	enum skind kind;
	size_t off, size;
};

#define SF(n, k, m) { n, k, offsetof(struct ext2_super_block, m), \
		      sizeof(((struct ext2_super_block *)0)->m) }

static const struct sfield sfields[] = {
	SF("volume_name", S_STR, s_volume_name),
	SF("last_mounted", S_STR, s_last_mounted),
	SF("mnt_count", S_U16, s_mnt_count),
	SF("max_mnt_count", S_U16, s_max_mnt_count),
	SF("state", S_U16, s_state),
	SF("errors", S_U16, s_errors),
	SF("lastcheck", S_U32, s_lastcheck),
	SF("checkinterval", S_U32, s_checkinterval),
	SF("mtime", S_U32, s_mtime),
	SF("wtime", S_U32, s_wtime),
	SF("def_resuid", S_U16, s_def_resuid),
	SF("def_resgid", S_U16, s_def_resgid),
	SF("r_blocks_count", S_U32, s_r_blocks_count),
	SF("def_hash_version", S_U8, s_def_hash_version),
};

DBG_CMD(do_ssv)
{
	struct dbg *d = dbg_of(info);
	const struct sfield *f = NULL;
	struct ext2_super_block sb;
	unsigned char *base = (unsigned char *)&sb;
	unsigned long long v = 0;
	errcode_t err;

	if (dbg_args(d, argc, 3, 3, "set_super_value FIELD VALUE") || dbg_need_rw(d))
		return;
	for (size_t i = 0; i < sizeof(sfields) / sizeof(*sfields); i++)
		if (!strcmp(argv[1], sfields[i].name))
			f = &sfields[i];
	if (!f) {
		dbg_fail(d, 0, "%s: unknown or structural field (volume_name, "
			 "last_mounted, mnt_count, max_mnt_count, state, errors, "
			 "lastcheck, checkinterval, mtime, wtime, def_resuid, "
			 "def_resgid, r_blocks_count, def_hash_version)", argv[1]);
		return;
	}
	memcpy(&sb, d->fs->super, sizeof(sb));
	if (f->kind == S_STR) {
		if (strlen(argv[2]) > f->size) {
			dbg_fail(d, 0, "%s: at most %zu bytes", f->name, f->size);
			return;
		}
		memset(base + f->off, 0, f->size);
		memcpy(base + f->off, argv[2], strlen(argv[2]));
	} else {
		if (dbg_number(d, argv[2], f->name, &v))
			return;
		if (v >> (8 * f->size)) {
			dbg_fail(d, 0, "%s: value out of range: %s", f->name, argv[2]);
			return;
		}
		if (f->kind == S_U8) {
			uint8_t x = (uint8_t)v;
			memcpy(base + f->off, &x, 1);
		} else if (f->kind == S_U16) {
			uint16_t x = (uint16_t)v;
			memcpy(base + f->off, &x, 2);
		} else {
			uint32_t x = (uint32_t)v;
			memcpy(base + f->off, &x, 4);
		}
	}
	err = e3_super_write(d->img, &sb);
	if (err)
		dbg_fail(d, err, "%s", f->name);
	else
		d->changed = 1;
}
