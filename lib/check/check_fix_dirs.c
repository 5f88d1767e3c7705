/*
 * check_fix_dirs.c: directory fixes for -y — salvage blocks whose entries
 * are broken, clear entries naming bad inodes or repeating a name, fix
 * file types, '.' and '..', drop broken htree indexes (the directory
 * stays readable as a linear one), create /lost+found and reconnect
 * unreachable directories and unattached inodes into it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void done(struct chk_ctx *ctx, struct e3_finding *f)
{
	f->fixed = 1;
	ctx->changed++;
}

static ext2_ino_t parent_of(struct chk_ctx *ctx, ext2_ino_t dir)
{
	ext2_ino_t p = chk_parent(ctx, dir);

	if (dir == EXT2_ROOT_INO)
		return EXT2_ROOT_INO;
	return p ? p : (ctx->lost_found ? ctx->lost_found : EXT2_ROOT_INO);
}

static void put_entry(unsigned char *at, ext2_ino_t ino, unsigned rec_len,
		      const char *name, int nlen, int ftype)
{
	struct ext2_dir_entry *de = (void *)at;

	de->inode = ext2fs_cpu_to_le32(ino);
	de->rec_len = ext2fs_cpu_to_le16(rec_len);
	de->name_len = (uint16_t)(nlen | (ftype << 8));
	memcpy(de->name, name, nlen);
}

/* The block's broken entries salvaged as pass 3 salvaged its copy
 * (check_dirent.c): the entries after a broken one stay. Every finding on
 * the same block is settled by the one write. */
static void salvage(struct chk_ctx *ctx, struct e3_finding *f)
{
	struct e3_check_report *rep = ctx->rep;
	ext2_filsys fs = ctx->fs;
	unsigned char *buf;
	unsigned off = 0, guard = 0, rec_len;
	int prev = -1;
	blk64_t pblk = 0;
	size_t i;

	if (ext2fs_bmap2(fs, f->ino, NULL, NULL, 0, f->num, NULL, &pblk) || !pblk)
		return;
	buf = malloc(ctx->bs);
	if (!buf)
		return;
	if (io_channel_read_blk64(fs->io, pblk, 1, buf))
		goto out;
	while (off < ctx->bs && guard <= ctx->bs) {
		if (chk_dirent_bad(fs, buf, off, ctx->bs)) {
			off = chk_dirent_salvage(fs, buf, off, prev, ctx->bs);
			guard++;
			continue;
		}
		ext2fs_get_rec_len(fs, (struct ext2_dir_entry *)(buf + off), &rec_len);
		prev = off;
		off += rec_len;
	}
	if (guard > ctx->bs || io_channel_write_blk64(fs->io, pblk, 1, buf))
		goto out;
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *g = &rep->findings[i];

		if (!g->fixed && g->ino == f->ino && g->num == f->num &&
		    (g->code == E3P_DIR_BAD_REC_LEN ||
		     g->code == E3P_DIR_BAD_NAME_LEN))
			done(ctx, g);
	}
out:
	free(buf);
}

struct dirfix {
	struct chk_ctx *ctx;
	ext2_ino_t dir;
	int fix_dot, fix_dotdot;
	ext2_ino_t dotdot;		/* what '..' should name */
	char **dups;			/* names to keep once */
	int *dup_seen;
	size_t ndups;
	ext2_ino_t *dirs_seen;		/* directories named here */
	size_t ndirs;
};

static int bad_target(struct dirfix *df, ext2_ino_t t)
{
	struct chk_ctx *ctx = df->ctx;
	uint16_t st;
	size_t i;

	if (t > ctx->ninodes || t == EXT2_ROOT_INO ||
	    t < EXT2_FIRST_INO(ctx->fs->super))
		return 1;
	st = ctx->ist[t];
	if (!(st & CI_USED) || (st & CI_BAD))
		return 1;
	if (!(st & CI_DIR))
		return 0;
	if (chk_parent(ctx, t) != df->dir)
		return 1;		/* a second link to a directory */
	for (i = 0; i < df->ndirs; i++)
		if (df->dirs_seen[i] == t)
			return 1;
	if (df->ndirs < 4096)
		df->dirs_seen[df->ndirs++] = t;
	return 0;
}

static int is_dup(struct dirfix *df, const char *name, int nlen)
{
	size_t i;

	for (i = 0; i < df->ndups; i++)
		if ((int)strlen(df->dups[i]) == nlen && !memcmp(df->dups[i], name, nlen))
			return df->dup_seen[i]++ > 0;
	return 0;
}

/* The later of two entries with one name gets a new one, as e2fsck
 * renames it rather than lose the file: the name cut to fit the padded
 * room it already has, plus "~N" with the first N (0-9) not in the
 * directory. 0, or -1 when every N is taken (the entry is cleared then;
 * the inode goes to lost+found). */
static int rename_dup(struct chk_ctx *ctx, ext2_ino_t dir,
		      struct ext2_dir_entry *de, int nlen)
{
	int keep = (nlen + 3) / 4 * 4 < nlen + 2 ? (nlen + 3) / 4 * 4 - 2 : nlen;
	char name[EXT2_NAME_LEN + 1];
	ext2_ino_t found;
	int n;

	if (keep > EXT2_NAME_LEN - 2)
		keep = EXT2_NAME_LEN - 2;
	memcpy(name, de->name, keep);
	for (n = 0; n < 10; n++) {
		name[keep] = '~';
		name[keep + 1] = (char)('0' + n);
		if (ext2fs_lookup(ctx->fs, dir, name, keep + 2, NULL, &found))
			break;
	}
	if (n == 10)
		return -1;
	memcpy(de->name, name, keep + 2);
	ext2fs_dirent_set_name_len(de, keep + 2);
	return 0;
}

/* A '.' record of 24 bytes or more leaves '..' no entry of its own:
 * cut it to 12. When the rest of the record is a chain of good entries
 * starting with '..' (a damaged rec_len took them in), they are given
 * back as they are, as e2fsck's split keeps them: 2. Otherwise the rest
 * becomes an empty record, which dir_iterate (reading the changed
 * rec_len again) hands over next as '..': 1. 0 if not split. */
static int split_dot(struct chk_ctx *ctx, struct ext2_dir_entry *de,
		     int offset, int blocksize)
{
	unsigned rec_len = 0, p, r = 0;
	const unsigned char *buf = (const unsigned char *)de - offset;
	struct ext2_dir_entry *n = (void *)((char *)de + 12);

	if (ext2fs_get_rec_len(ctx->fs, de, &rec_len) || rec_len < 24 ||
	    offset + rec_len > (unsigned)blocksize)
		return 0;
	for (p = offset + 12; p < offset + rec_len; p += r) {
		if (chk_dirent_bad(ctx->fs, buf, p, offset + rec_len))
			break;
		if (ext2fs_get_rec_len(ctx->fs, (void *)(buf + p), &r))
			break;
	}
	ext2fs_set_rec_len(ctx->fs, 12, de);
	if (p == offset + rec_len && n->inode &&
	    ext2fs_dirent_name_len(n) == 2 && n->name[0] == '.' &&
	    n->name[1] == '.')
		return 2;
	memset(n, 0, 8);
	ext2fs_set_rec_len(ctx->fs, rec_len - 12, n);
	return 1;
}

static int entry_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
		    int offset, int blocksize, char *buf, void *priv)
{
	struct dirfix *df = priv;
	struct chk_ctx *ctx = df->ctx;
	int nlen = ext2fs_dirent_name_len(de), ft = ext2fs_dirent_file_type(de);
	int has_ft = ext2fs_has_feature_filetype(ctx->fs->super);
	int changed = 0;

	(void)dir; (void)buf;
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE) {
		int want = has_ft ? EXT2_FT_DIR : 0;

		if (ft != want) {
			ext2fs_dirent_set_file_type(de, want);
			changed = DIRENT_CHANGED;
		}
		/* a good '.' whose record took in the '..' after it (e2fsck:
		 * "Directory entry for '.' is big"): split it so the '..'
		 * fix has an entry to set */
		if (entry == DIRENT_DOT_FILE && !df->fix_dot && df->fix_dotdot &&
		    split_dot(ctx, de, offset, blocksize))
			return DIRENT_CHANGED;
		if (!(entry == DIRENT_DOT_FILE ? df->fix_dot : df->fix_dotdot))
			return changed;
	}
	if (entry == DIRENT_DOT_FILE) {
		de->inode = df->dir;
		ext2fs_dirent_set_name_len(de, 1);
		ext2fs_dirent_set_file_type(de, has_ft ? EXT2_FT_DIR : 0);
		de->name[0] = '.';
		de->name[1] = de->name[2] = de->name[3] = 0;
		if (split_dot(ctx, de, offset, blocksize) == 1)
			df->fix_dotdot = 1;
		return DIRENT_CHANGED;
	}
	if (entry == DIRENT_DOT_DOT_FILE) {
		de->inode = df->dotdot;
		ext2fs_dirent_set_name_len(de, 2);
		ext2fs_dirent_set_file_type(de, has_ft ? EXT2_FT_DIR : 0);
		de->name[0] = de->name[1] = '.';
		de->name[2] = de->name[3] = 0;
		return DIRENT_CHANGED;
	}
	if (!de->inode)
		return 0;
	if (memchr(de->name, '/', nlen) || memchr(de->name, 0, nlen)) {
		/* e2fsck keeps the file and mends the name */
		int i;

		for (i = 0; i < nlen; i++)
			if (de->name[i] == '/' || !de->name[i])
				de->name[i] = '.';
		changed = DIRENT_CHANGED;
	}
	if (!nlen || (nlen == 1 && de->name[0] == '.') ||
	    (nlen == 2 && de->name[0] == '.' && de->name[1] == '.') ||
	    bad_target(df, de->inode)) {
		de->inode = 0;
		return DIRENT_CHANGED;
	}
	if (is_dup(df, de->name, nlen)) {
		if (rename_dup(ctx, dir, de, nlen))
			de->inode = 0;
		changed = DIRENT_CHANGED;
		nlen = ext2fs_dirent_name_len(de);
		if (!de->inode)
			return changed;
	}
	if (has_ft && ft != CI_TYPE(ctx->ist[de->inode])) {
		ext2fs_dirent_set_file_type(de, CI_TYPE(ctx->ist[de->inode]));
		return DIRENT_CHANGED;
	}
	if (!has_ft && ft) {
		ext2fs_dirent_set_file_type(de, 0);
		return DIRENT_CHANGED;
	}
	return changed;
}

static int entry_code(int code)
{
	switch (code) {
	case E3P_DIR_INODE_RANGE: case E3P_DIR_INODE_UNUSED:
	case E3P_DIR_FILETYPE: case E3P_DIR_SET_FILETYPE: case E3P_DIR_MISSING_DOT:
	case E3P_DIR_MISSING_DOTDOT: case E3P_DIR_DUP_NAME:
	case E3P_DIR_DOT_ENTRY_OTHER: case E3P_DIR_NAME_ZERO:
	case E3P_DIR_LINK_TO_DIR: case E3P_DIR_LINK_ROOT:
	case E3P_DIR_BAD_NAME: case E3P_CONN_DOTDOT: case E3P_DIR_DOT_NUL:
		return 1;
	}
	return 0;
}

/* All entry fixes of one directory in one pass over its blocks. */
static void fix_dir_entries(struct chk_ctx *ctx, ext2_ino_t dir)
{
	struct e3_check_report *rep = ctx->rep;
	struct dirfix df;
	size_t i, n = 0;

	memset(&df, 0, sizeof(df));
	df.ctx = ctx;
	df.dir = dir;
	df.dotdot = parent_of(ctx, dir);
	df.dups = calloc(rep->n_findings, sizeof(*df.dups));
	df.dup_seen = calloc(rep->n_findings, sizeof(*df.dup_seen));
	df.dirs_seen = calloc(4096, sizeof(*df.dirs_seen));
	if (!df.dups || !df.dup_seen || !df.dirs_seen)
		goto out;
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (f->ino != dir || f->fixed || !entry_code(f->code) ||
		    !chk_may_fix(ctx, f->code))
			continue;
		if (f->code == E3P_DIR_MISSING_DOT ||
		    (f->code == E3P_DIR_DOT_NUL && f->name && !f->name[1]))
			df.fix_dot = 1;
		if (f->code == E3P_DIR_DOT_NUL && f->name && f->name[1])
			df.fix_dotdot = 1;
		if (f->code == E3P_DIR_MISSING_DOTDOT || f->code == E3P_CONN_DOTDOT)
			df.fix_dotdot = 1;
		if (f->code == E3P_CONN_DOTDOT)
			df.dotdot = f->num;
		if (f->code == E3P_DIR_DUP_NAME && f->name)
			df.dups[df.ndups++] = f->name;
		n++;
	}
	if (!n || !(ctx->ist[dir] & CI_HAS_BLOCKS))
		goto out;
	/* empty entries too: a '.' with inode 0 skipped would make '..'
	 * the "dot" entry and the fix would rename it, round after round */
	if (ext2fs_dir_iterate2(ctx->fs, dir, DIRENT_FLAG_INCLUDE_EMPTY, NULL,
				entry_cb, &df))
		goto out;
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (f->ino == dir && !f->fixed && entry_code(f->code) &&
		    chk_may_fix(ctx, f->code))
			done(ctx, f);
	}
out:
	free(df.dups);
	free(df.dup_seen);
	free(df.dirs_seen);
}

static int set_dotdot_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
			 int offset, int blocksize, char *buf, void *priv)
{
	(void)dir; (void)offset; (void)blocksize; (void)buf;
	if (entry != DIRENT_DOT_DOT_FILE)
		return 0;
	de->inode = *(ext2_ino_t *)priv;
	return DIRENT_CHANGED | DIRENT_ABORT;
}

/* A hole in a directory gets a fresh empty block, as e2fsck fills it. */
static void fill_hole(struct chk_ctx *ctx, struct e3_finding *f)
{
	ext2_filsys fs = ctx->fs;
	struct ext2_inode in;
	unsigned char *buf;
	blk64_t pblk = 0;

	if (ext2fs_read_inode(fs, f->ino, &in))
		return;
	buf = calloc(1, ctx->bs);
	if (!buf)
		return;
	put_entry(buf, 0, ctx->bs, "", 0, 0);
	if (!ext2fs_bmap2(fs, f->ino, &in, NULL, BMAP_ALLOC, f->num, NULL, &pblk) &&
	    pblk && !io_channel_write_blk64(fs->io, pblk, 1, buf) &&
	    !ext2fs_write_inode(fs, f->ino, &in))
		done(ctx, f);
	free(buf);
}

/* A new, empty root in inode 2, as e2fsck's pass 3 makes it: whatever
 * the old inode held becomes nobody's (the bitmap pass frees it), the
 * directories it named are unreachable next round and go to a new
 * /lost+found with the files. */
static void make_root(struct chk_ctx *ctx, struct e3_finding *f)
{
	if (ext2fs_mkdir(ctx->fs, EXT2_ROOT_INO, EXT2_ROOT_INO, NULL))
		return;
	ctx->lost_found = 0;
	done(ctx, f);
}

static errcode_t make_lost_found(struct chk_ctx *ctx)
{
	errcode_t err;

	err = ext2fs_mkdir(ctx->fs, EXT2_ROOT_INO, 0, "lost+found");
	if (err)
		return err;
	return ext2fs_lookup(ctx->fs, EXT2_ROOT_INO, "lost+found", 10, NULL,
			     &ctx->lost_found);
}

static void reconnect(struct chk_ctx *ctx, struct e3_finding *f)
{
	ext2_filsys fs = ctx->fs;
	uint16_t st = ctx->ist[f->ino];
	char name[32];
	errcode_t err;
	int ft = ext2fs_has_feature_filetype(fs->super) ? CI_TYPE(st) : 0;

	if (!ctx->lost_found)
		return;
	snprintf(name, sizeof(name), "#%u", f->ino);
	err = ext2fs_link(fs, ctx->lost_found, name, f->ino, ft);
	if (err == EXT2_ET_DIR_NO_SPACE) {
		if (ext2fs_expand_dir(fs, ctx->lost_found))
			return;
		err = ext2fs_link(fs, ctx->lost_found, name, f->ino, ft);
	}
	if (err)
		return;
	if (st & CI_DIR)
		ext2fs_dir_iterate2(fs, f->ino, 0, NULL, set_dotdot_cb,
				    &ctx->lost_found);
	done(ctx, f);
}

void chk_fix_dirs(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	int wait = chk_dir_repairs_pending(ctx);	/* before they are made */
	size_t i;

	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (!f->fixed && chk_may_fix(ctx, f->code) &&
		    (f->code == E3P_DIR_BAD_REC_LEN || f->code == E3P_DIR_BAD_NAME_LEN))
			salvage(ctx, f);
	}
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (!f->fixed && f->code == E3P_INO_DIR_HOLE && chk_may_fix(ctx, f->code))
			fill_hole(ctx, f);
	}
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (!f->fixed && entry_code(f->code) && chk_may_fix(ctx, f->code))
			fix_dir_entries(ctx, f->ino);
	}
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (f->fixed || !chk_may_fix(ctx, f->code))
			continue;
		if (f->code == E3P_CONN_ROOT_MISSING ||
		    f->code == E3P_CONN_ROOT_NOT_DIR)
			make_root(ctx, f);
	}
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (f->fixed || !chk_may_fix(ctx, f->code))
			continue;
		if (f->code == E3P_CONN_NO_LOSTFOUND && !make_lost_found(ctx))
			done(ctx, f);
		/* as e2fsck: the entry goes, the inode it named is then
		 * unattached and lands in the new directory next round */
		if (f->code == E3P_CONN_LOSTFOUND_NOT_DIR &&
		    !ext2fs_unlink(ctx->fs, EXT2_ROOT_INO, "lost+found", f->ino, 0) &&
		    !make_lost_found(ctx))
			done(ctx, f);
	}
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (!f->fixed && chk_may_fix(ctx, f->code) && !wait &&
		    (f->code == E3P_CONN_UNREACHABLE || f->code == E3P_REF_UNATTACHED))
			reconnect(ctx, f);
	}
}
