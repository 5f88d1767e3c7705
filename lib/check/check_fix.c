/*
 * check_fix.c: applying fixes (-p: the preen-safe subset; -y: all). Runs
 * at the end of a round on the read-write ext2_filsys, from that round's
 * findings and computed state:
 *   1. bitmaps and counts := computed (so what this round allocates comes
 *      from blocks that are really free); then an invalid journal pass 7
 *      marked is cleared (check_journal.c: the passes already left inode
 *      8 out of the computed bitmaps);
 *   2. inode fixes (clear bad inodes, dtime, flags, block pointers: clear
 *      illegal ones, clone blocks claimed twice or lying in metadata), EA
 *      blocks, the orphan list, i_size/i_blocks, link counts;
 *   3. directory fixes (salvage broken blocks, clear bad entries, file
 *      types, '.', '..', htree flag), then lost+found and reconnection.
 * Whatever a fix disturbs (a cleared entry leaves an unattached inode, a
 * freed block a bitmap bit) is found by the next round and fixed there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static void done(struct chk_ctx *ctx, struct e3_finding *f)
{
	f->fixed = 1;
	ctx->changed++;
}

/* ---- 1. bitmaps and counts ---- */

static void fix_bitmaps(struct chk_ctx *ctx)
{
	ext2_filsys fs = ctx->fs;
	unsigned ipg = fs->super->s_inodes_per_group;
	blk64_t b, first = fs->super->s_first_data_block;
	uint32_t *bfree, *ifree, *dirs;
	ext2_ino_t ino;
	dgrp_t g;

	bfree = calloc(fs->group_desc_count, sizeof(*bfree));
	ifree = calloc(fs->group_desc_count, sizeof(*ifree));
	dirs = calloc(fs->group_desc_count, sizeof(*dirs));
	if (!bfree || !ifree || !dirs)
		goto out;
	for (b = first; b < ctx->nblocks; b++) {
		if (chk_bit(&ctx->used, b)) {
			ext2fs_mark_block_bitmap2(fs->block_map, b);
		} else {
			ext2fs_unmark_block_bitmap2(fs->block_map, b);
			bfree[(b - first) / fs->super->s_blocks_per_group]++;
		}
	}
	for (ino = 1; ino <= ctx->ninodes; ino++) {
		g = (ino - 1) / ipg;
		if (chk_inode_used(ctx, ino)) {
			ext2fs_mark_inode_bitmap2(fs->inode_map, ino);
			if ((ctx->ist[ino] & (CI_USED | CI_DIR)) ==
			    (CI_USED | CI_DIR))
				dirs[g]++;
		} else {
			ext2fs_unmark_inode_bitmap2(fs->inode_map, ino);
			ifree[g]++;
		}
	}
	for (g = 0; g < fs->group_desc_count; g++) {
		ext2fs_bg_free_blocks_count_set(fs, g, bfree[g]);
		ext2fs_bg_free_inodes_count_set(fs, g, ifree[g]);
		ext2fs_bg_used_dirs_count_set(fs, g, dirs[g]);
		ext2fs_group_desc_csum_set(fs, g);
	}
	ext2fs_free_blocks_count_set(fs->super, ctx->computed_free_blocks);
	fs->super->s_free_inodes_count = ctx->computed_free_inodes;
	ext2fs_mark_bb_dirty(fs);
	ext2fs_mark_ib_dirty(fs);
	ext2fs_mark_super_dirty(fs);
out:
	free(bfree);
	free(ifree);
	free(dirs);
}

/* ---- 2. inodes ---- */

/* The time a repair stamps: SOURCE_DATE_EPOCH's when set (chk_open). */
static uint32_t fix_now(const struct chk_ctx *ctx)
{
	return (uint32_t)(ctx->fs->now ? ctx->fs->now : time(NULL));
}

static int rw_inode(struct chk_ctx *ctx, ext2_ino_t ino, struct ext2_inode *in,
		    int write)
{
	if (!ino || ino > ctx->ninodes)
		return -1;
	return write ? (int)ext2fs_write_inode(ctx->fs, ino, in) :
		       (int)ext2fs_read_inode(ctx->fs, ino, in);
}

static int clear_inode(struct chk_ctx *ctx, ext2_ino_t ino)
{
	struct ext2_inode in;

	if (rw_inode(ctx, ino, &in, 0))
		return -1;
	in.i_links_count = 0;
	in.i_dtime = fix_now(ctx);
	if (!in.i_dtime)
		in.i_dtime = 1;
	ctx->ist[ino] |= CI_BAD;
	return rw_inode(ctx, ino, &in, 1);
}

struct blkfix {
	struct chk_ctx *ctx;
	ext2_ino_t ino;
	const blk64_t *clone;	/* blocks this inode must copy (sorted) */
	size_t nclone;
	int keep_first;		/* first owner: keep one occurrence */
	blk64_t kept;
	unsigned char *buf;
	errcode_t err;
};

static int in_list(const blk64_t *v, size_t n, blk64_t b)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == b)
			return 1;
	return 0;
}

static int fix_block_cb(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t cnt,
			blk64_t ref_blk, int ref_off, void *priv)
{
	struct blkfix *bf = priv;
	blk64_t b = *blocknr, nb;

	(void)ref_blk;
	(void)ref_off;
	if (b < fs->super->s_first_data_block || b >= ext2fs_blocks_count(fs->super)) {
		*blocknr = 0;
		return BLOCK_CHANGED;
	}
	if (chk_bit(&bf->ctx->meta, b) && cnt < 0) {
		*blocknr = 0;		/* never read metadata as pointers */
		return BLOCK_CHANGED;
	}
	if (!chk_bit(&bf->ctx->meta, b) && !in_list(bf->clone, bf->nclone, b))
		return 0;
	if (bf->keep_first && !chk_bit(&bf->ctx->meta, b) && bf->kept != b) {
		bf->kept = b;
		return 0;
	}
	if (ext2fs_new_block2(fs, b, fs->block_map, &nb) ||
	    io_channel_read_blk64(fs->io, b, 1, bf->buf) ||
	    io_channel_write_blk64(fs->io, nb, 1, bf->buf)) {
		*blocknr = 0;
		return BLOCK_CHANGED;
	}
	ext2fs_block_alloc_stats2(fs, nb, +1);
	*blocknr = nb;
	return BLOCK_CHANGED;
}

/* The inode's EA block, when it is one of the blocks to clone (another
 * inode's data, or on the bad-block list, also claims it): the inode
 * gets a copy of its own, as e2fsck's clone gives it one. The copy has
 * this one reference; the others keep the old block (and are cloned on
 * their own findings). */
static void clone_ea_block(struct chk_ctx *ctx, ext2_ino_t ino,
			   const blk64_t *clone, size_t nclone, unsigned char *buf)
{
	ext2_filsys fs = ctx->fs;
	struct ext2_ext_attr_header *h = (void *)buf;
	struct ext2_inode in;
	blk64_t old, nb;

	if (rw_inode(ctx, ino, &in, 0) || !(old = ext2fs_file_acl_block(fs, &in)) ||
	    !in_list(clone, nclone, old))
		return;
	if (ext2fs_new_block2(fs, old, fs->block_map, &nb) ||
	    io_channel_read_blk64(fs->io, old, 1, buf))
		return;
	h->h_refcount = ext2fs_cpu_to_le32(1);
	if (io_channel_write_blk64(fs->io, nb, 1, buf))
		return;
	ext2fs_block_alloc_stats2(fs, nb, +1);
	ext2fs_file_acl_block_set(fs, &in, nb);
	rw_inode(ctx, ino, &in, 1);
}

/* Rewrites one inode's block map: illegal pointers cleared, the listed
 * blocks (and any in group metadata) cloned into fresh blocks, its EA
 * block too when listed. */
static void fix_blocks(struct chk_ctx *ctx, ext2_ino_t ino, const blk64_t *clone,
		       size_t nclone, int keep_first)
{
	struct blkfix bf = { ctx, ino, clone, nclone, keep_first, 0, NULL, 0 };

	bf.buf = malloc(ctx->bs);
	if (!bf.buf)
		return;
	ext2fs_block_iterate3(ctx->fs, ino, 0, NULL, fix_block_cb, &bf);
	if (nclone && !keep_first)
		clone_ea_block(ctx, ino, clone, nclone, bf.buf);
	free(bf.buf);
}

static void fix_block_findings(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	size_t i, j;

	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];
		blk64_t *clone;
		size_t n = 0;
		int keep = 0;

		if (f->fixed || !chk_may_fix(ctx, f->code) ||
		    (f->code != E3P_INO_ILLEGAL_BLOCK && f->code != E3P_INO_BAD_IND &&
		     f->code != E3P_INO_METADATA_BLOCK && f->code != E3P_INO_DUP_BLOCK))
			continue;
		if (f->code == E3P_INO_DUP_BLOCK && (ctx->ist[f->ino2] & CI_BAD))
			continue;
		clone = malloc(sizeof(*clone) * rep->n_findings);
		if (!clone)
			return;
		/* every finding of this kind for the same inode, at once */
		for (j = i; j < rep->n_findings; j++) {
			struct e3_finding *g = &rep->findings[j];
			ext2_ino_t who = g->code == E3P_INO_DUP_BLOCK ? g->ino2 : g->ino;
			ext2_ino_t me = f->code == E3P_INO_DUP_BLOCK ? f->ino2 : f->ino;

			if (who != me || g->fixed)
				continue;
			if (g->code == E3P_INO_DUP_BLOCK) {
				clone[n++] = g->blk;
				if (g->ino == g->ino2)
					keep = 1;
			} else if (g->code != E3P_INO_ILLEGAL_BLOCK &&
				   g->code != E3P_INO_BAD_IND &&
				   g->code != E3P_INO_METADATA_BLOCK) {
				continue;
			}
			done(ctx, g);
		}
		fix_blocks(ctx, f->code == E3P_INO_DUP_BLOCK ? f->ino2 : f->ino,
			   clone, n, keep);
		free(clone);
	}
}

static void set_field(struct chk_ctx *ctx, struct e3_finding *f)
{
	struct ext2_inode in;

	if (rw_inode(ctx, f->ino, &in, 0))
		return;
	switch (f->code) {
	case E3P_INO_DTIME: in.i_dtime = 0; break;
	case E3P_INO_RESERVED_MODE: in.i_mode = 0; break;
	case E3P_INO_LOW_DTIME:
		in.i_dtime = in.i_links_count ? 0 : fix_now(ctx);
		break;
	case E3P_INO_ZERO_DTIME: in.i_dtime = fix_now(ctx); break;
	case E3P_INO_IMAGIC: in.i_flags &= ~EXT2_IMAGIC_FL; break;
	case E3P_INO_FLAG: in.i_flags &= ~(uint32_t)f->num; break;
	case E3P_INO_SPECIAL_SIZE: in.i_size = in.i_size_high = 0; break;
	case E3P_INO_I_BLOCKS: in.i_blocks = f->num2; break;
	case E3P_INO_I_SIZE:
		in.i_size = f->num2 & 0xffffffffu;
		in.i_size_high = f->num2 >> 32;
		break;
	case E3P_INO_REALLY_DIR:
		in.i_mode = (in.i_mode & 07777) | LINUX_S_IFDIR;
		break;
	case E3P_INO_DIR_SIZE:
		in.i_size = (f->num + ctx->bs - 1) / ctx->bs * ctx->bs;
		break;
	case E3P_REF_LINKS: in.i_links_count = f->num2; break;
	case E3P_INO_EA_BLOCK_RANGE: case E3P_INO_EA_NO_FEATURE:
		in.i_file_acl = 0; break;
	case E3P_INO_FIELD:
		if (!f->name)
			return;
		if (!strcmp(f->name, "i_faddr"))
			in.i_faddr = 0;
		else if (!strcmp(f->name, "i_blocks_hi"))
			in.osd2.linux2.l_i_blocks_hi = 0;
		else if (!strcmp(f->name, "i_file_acl_high"))
			in.osd2.linux2.l_i_file_acl_high = 0;
		else if (!strcmp(f->name, "i_size_high"))
			in.i_size_high = 0;
		break;
	case E3P_HTREE_ROOT: case E3P_HTREE_LIMIT: case E3P_HTREE_COUNT:
	case E3P_HTREE_ORDER: case E3P_HTREE_DEPTH: case E3P_HTREE_BLOCK:
	case E3P_HTREE_NO_FEATURE: case E3P_HTREE_HASH: case E3P_HTREE_UNREF:
	case E3P_HTREE_NODE:
		in.i_flags &= ~EXT2_INDEX_FL;
		break;
	default:
		return;
	}
	if (!rw_inode(ctx, f->ino, &in, 1))
		done(ctx, f);
}

static void fix_ea_block(struct chk_ctx *ctx, struct e3_finding *f)
{
	const struct chk_ea_ref *r = ctx->ea.v;
	struct ext2_ext_attr_header *h;
	unsigned char *buf;
	size_t i;

	if (f->code == E3P_INO_EA_REFCOUNT) {
		buf = malloc(ctx->bs);
		if (!buf || io_channel_read_blk64(ctx->fs->io, f->blk, 1, buf)) {
			free(buf);
			return;
		}
		h = (void *)buf;
		h->h_refcount = ext2fs_cpu_to_le32(f->num2);
		if (!io_channel_write_blk64(ctx->fs->io, f->blk, 1, buf))
			done(ctx, f);
		free(buf);
		return;
	}
	/* a bad EA block: every inode naming it drops it */
	for (i = 0; i < ctx->ea.n; i++) {
		struct ext2_inode in;

		if (r[i].blk != f->blk || rw_inode(ctx, r[i].ino, &in, 0))
			continue;
		in.i_file_acl = 0;
		rw_inode(ctx, r[i].ino, &in, 1);
	}
	done(ctx, f);
}

/* A bad resize inode is cleared and, with the feature, made anew by
 * libext2fs (as e2fsck does after its passes). */
static errcode_t fix_resize(struct chk_ctx *ctx)
{
	struct ext2_inode in;
	errcode_t err;

	memset(&in, 0, sizeof(in));
	err = ext2fs_write_inode(ctx->fs, EXT2_RESIZE_INO, &in);
	if (!err && ext2fs_has_feature_resize_inode(ctx->fs->super))
		err = ext2fs_create_resize_inode(ctx->fs);
	return err;
}

/* The large part of an inode: a bad i_extra_isize becomes the standard
 * 32 bytes; bad in-inode attributes are dropped (their magic zeroed). */
static void fix_extra(struct chk_ctx *ctx, struct e3_finding *f)
{
	unsigned isize = ctx->isize;
	unsigned char *raw = calloc(1, isize);
	struct ext2_inode_large *big = (void *)raw;

	if (!raw || ext2fs_read_inode_full(ctx->fs, f->ino, (void *)raw, isize))
		goto out;
	if (f->code == E3P_INO_EXTRA_ISIZE) {
		big->i_extra_isize = isize - EXT2_GOOD_OLD_INODE_SIZE >= 32 ? 32 : 4;
	} else {
		unsigned at = EXT2_GOOD_OLD_INODE_SIZE + big->i_extra_isize;

		if (at + 4 <= isize)
			memset(raw + at, 0, isize - at);
	}
	if (!ext2fs_write_inode_full(ctx->fs, f->ino, (void *)raw, isize))
		done(ctx, f);
out:
	free(raw);
}

/* Inode 8 with data while no internal journal uses it: zeroed whole, as
 * e2fsck does; the next round's bitmaps give its blocks back. */
static void fix_journal_inode(struct chk_ctx *ctx, struct e3_finding *f)
{
	if (!chk_zero_journal_inode(ctx))
		done(ctx, f);
}

/* A reserved inode with data nothing uses (quota inodes without the
 * quota feature): zeroed whole, as e2fsck does. */
static void fix_zero_inode(struct chk_ctx *ctx, struct e3_finding *f)
{
	unsigned char *raw = calloc(1, ctx->isize);

	if (raw && !ext2fs_write_inode_full(ctx->fs, f->ino, (void *)raw,
					    ctx->isize))
		done(ctx, f);
	free(raw);
}

static void fix_orphans(struct chk_ctx *ctx, struct e3_finding *f)
{
	ext2_ino_t ino = ctx->fs->super->s_last_orphan, steps = 0;
	struct ext2_inode in;

	while (ino && ino <= ctx->ninodes && steps++ < ctx->ninodes &&
	       ino >= EXT2_FIRST_INO(ctx->fs->super) && !rw_inode(ctx, ino, &in, 0)) {
		ext2_ino_t next = in.i_dtime;

		if (in.i_links_count) {
			in.i_dtime = 0;		/* pending truncate: sizes next */
			rw_inode(ctx, ino, &in, 1);
		} else {
			clear_inode(ctx, ino);
		}
		ino = next;
	}
	ctx->fs->super->s_last_orphan = 0;
	ext2fs_mark_super_dirty(ctx->fs);
	done(ctx, f);
}

/* This round rebuilds directory blocks or their '.'/'..' (a salvage, a
 * split '.' record): entries it gives back can name inodes the passes
 * found unattached, so those are left to the next round, which sees the
 * repaired directories (e2fsck counts references only after its pass 2
 * repairs). The last rounds do not wait. */
int chk_dir_repairs_pending(struct chk_ctx *ctx)
{
	const struct e3_check_report *rep = ctx->rep;

	if (rep->rounds >= 4)
		return 0;
	for (size_t i = 0; i < rep->n_findings; i++) {
		const struct e3_finding *f = &rep->findings[i];

		if (f->fixed || !chk_may_fix(ctx, f->code))
			continue;
		if (f->code == E3P_DIR_BAD_REC_LEN || f->code == E3P_DIR_BAD_NAME_LEN ||
		    f->code == E3P_DIR_MISSING_DOT || f->code == E3P_DIR_MISSING_DOTDOT)
			return 1;
	}
	return 0;
}

static void fix_inodes(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	int wait = chk_dir_repairs_pending(ctx);
	size_t i;

	fix_block_findings(ctx);
	ctx->changed += chk_fix_badblocks(ctx);
	for (i = 0; i < rep->n_findings; i++) {
		struct e3_finding *f = &rep->findings[i];

		if (f->fixed || !chk_may_fix(ctx, f->code))
			continue;
		switch (f->code) {
		case E3P_INO_BAD_MODE: case E3P_INO_TOO_MANY_BAD:
		case E3P_INO_FAST_SYMLINK: case E3P_INO_DEVICE:
		case E3P_INO_FLAGS_EXTENTS: case E3P_INO_BAD_SYMLINK_SIZE:
		case E3P_INO_DIR_EMPTY:
		case E3P_REF_UNATTACHED_EMPTY:
			if (f->code == E3P_REF_UNATTACHED_EMPTY && wait)
				break;
			if (!clear_inode(ctx, f->ino))
				done(ctx, f);
			break;
		case E3P_INO_EA_HEADER: case E3P_INO_EA_ENTRY:
		case E3P_INO_EA_REFCOUNT:
			fix_ea_block(ctx, f);
			break;
		case E3P_SB_LAST_ORPHAN: case E3P_INO_ORPHAN:
			fix_orphans(ctx, f);
			break;
		case E3P_INO_EXTRA_ISIZE: case E3P_INO_EA_IN_INODE:
			fix_extra(ctx, f);
			break;
		case E3P_INO_RESIZE_BAD:
			if (!fix_resize(ctx))
				done(ctx, f);
			break;
		case E3P_INO_JOURNAL_NOT_CLEAR:
			fix_journal_inode(ctx, f);
			break;
		case E3P_INO_QUOTA_NOT_CLEAR:
			fix_zero_inode(ctx, f);
			break;
		case E3P_SB_ERROR_STATE:
			ctx->fs->super->s_state &= ~EXT2_ERROR_FS;
			ext2fs_mark_super_dirty(ctx->fs);
			done(ctx, f);
			break;
		case E3P_SB_JOURNAL_FIELDS:
			ext2fs_clear_feature_journal_needs_recovery(ctx->fs->super);
			ctx->fs->super->s_journal_inum = 0;
			ctx->fs->super->s_journal_dev = 0;
			ext2fs_mark_super_dirty(ctx->fs);
			done(ctx, f);
			break;
		case E3P_REF_DIR_NLINK:	/* the count itself: E3P_REF_LINKS */
			ext2fs_set_feature_dir_nlink(ctx->fs->super);
			ext2fs_mark_super_dirty(ctx->fs);
			done(ctx, f);
			break;
		case E3P_SB_UNUSABLE:	/* the flush rewrites the primary */
			ext2fs_mark_super_dirty(ctx->fs);
			done(ctx, f);
			break;
		default:
			set_field(ctx, f);
		}
	}
}

/* ---- 3. directories and connectivity (check_fix_dirs.c) ---- */

static int bitmap_finding(int code)
{
	return (code >= E3P_BMAP_BLOCK_USED && code <= E3P_BMAP_PADDING) ||
	       code == E3P_SB_FREE_BLOCKS || code == E3P_SB_FREE_INODES;
}

/* -p stops, as e2fsck -p does, at the first problem that needs -y. */
static int preen_blocked(struct chk_ctx *ctx)
{
	size_t i;

	if (ctx->opts.mode != E3_CHECK_PREEN)
		return 0;
	for (i = 0; i < ctx->rep->n_findings; i++) {
		const struct e3_problem *p = e3_problem(ctx->rep->findings[i].code);

		if (p && p->pass != 8 && p->fix != E3_FIX_PREEN &&
		    !ctx->rep->findings[i].fixed)
			return 1;
	}
	return 0;
}

static int errors_left(const struct e3_check_report *rep)
{
	for (size_t i = 0; i < rep->n_findings; i++)
		if (chk_finding_is_error(&rep->findings[i]))
			return 1;
	return 0;
}

/* After the last round (one that changed nothing), as e2fsck does: a
 * filesystem with no error left is marked clean, one with errors left
 * not clean; writers refuse the latter (image.c). Rounds that fixed
 * something leave the state to the round that checks their result. */
void chk_mark_state(struct chk_ctx *ctx)
{
	struct ext2_super_block *sb = ctx->fs->super;
	uint16_t want;

	if (ctx->changed)
		return;
	want = errors_left(ctx->rep) ? (uint16_t)(sb->s_state & ~EXT2_VALID_FS)
				     : EXT2_VALID_FS;
	if (sb->s_state == want)
		return;
	/* only "clean" set or cleared counts as a change, as in e2fsck */
	if ((sb->s_state ^ want) & EXT2_VALID_FS)
		ctx->rep->state_changed = 1;
	sb->s_state = want;
	ext2fs_mark_super_dirty(ctx->fs);
}

errcode_t chk_apply_fixes(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	errcode_t err;
	size_t i;
	int bitmaps = 0;

	if (preen_blocked(ctx)) {
		/* nothing is fixed, but the superblock says what was found,
		 * as e2fsck's preen does: writers refuse it until -y */
		ctx->preen_refused = 1;
		if (!(ctx->fs->super->s_state & EXT2_ERROR_FS)) {
			ctx->fs->super->s_state |= EXT2_ERROR_FS;
			ext2fs_mark_super_dirty(ctx->fs);
		}
		return 0;
	}
	/* first, so that every later write (inodes, bitmaps at the close)
	 * goes to the new places; if a piece cannot move, the other fixes,
	 * computed as if it had, wait (check_relocate.c) */
	if (chk_relocate(ctx)) {
		chk_mark_state(ctx);	/* not clean, when nothing moved */
		return 0;
	}
	for (i = 0; i < rep->n_findings; i++)
		if (!rep->findings[i].fixed && bitmap_finding(rep->findings[i].code) &&
		    chk_may_fix(ctx, rep->findings[i].code))
			bitmaps = 1;
	if (bitmaps) {
		fix_bitmaps(ctx);
		for (i = 0; i < rep->n_findings; i++)
			if (bitmap_finding(rep->findings[i].code))
				done(ctx, &rep->findings[i]);
	}
	/* after the bitmaps, computed without inode 8 */
	err = chk_clear_journal(ctx);
	if (err)
		return err;
	fix_inodes(ctx);
	chk_fix_dirs(ctx);
	chk_recreate_journal(ctx);
	chk_mark_state(ctx);
	return 0;
}
