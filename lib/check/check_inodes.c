/*
 * check_inodes.c: pass 2 — every inode: mode, reserved inodes, dtime and
 * link count, fast symlinks, device inodes, block pointers (in range, not
 * group metadata, claimed once), i_blocks and i_size, EA blocks, and the
 * per-file layout figures that pass 8 sums up.
 *
 * The inode tables are read raw with pread by up to two workers, each over
 * its own range of groups with its own fd and bitmaps (libext2fs is not
 * thread-safe, so workers never touch ctx->fs). Their results are merged
 * by the calling thread: blocks claimed by both workers are blocks claimed
 * twice. Owners of blocks claimed twice are found by a second, serial walk
 * (only when there are any), as e2fsck's pass 1b does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_walk.h"
#include "e3_inspect.h"

#define EXT4_EXTENTS_FL_ 0x00080000
#define EXT4_INLINE_FL_ 0x10000000

#define CHK_DIR_HOLES_MAX 1024	/* per directory and round */

struct fstate {			/* one file's walk in pass 2 */
	struct chk_worker *w;
	ext2_ino_t ino;
	int is_dir;
	e2_blkcnt_t last_lblk;
	e2_blkcnt_t next_dir;	/* directories: next logical block expected */
	unsigned holes;		/* directory holes reported */
	struct e3_runs runs;	/* the layout figures (lib/inspect) */
};

static struct e3_finding *wadd(struct chk_worker *w, int code,
			       ext2_ino_t ino)
{
	struct e3_finding *f = chk_add(w->ctx, &w->findings, code);

	if (f)
		f->ino = ino;
	return f;
}

static void on_illegal(struct chk_walk *wk, blk64_t b, e2_blkcnt_t lblk)
{
	struct fstate *st = wk->arg;
	struct e3_finding *f;

	e3_runs_step(&st->runs, b);
	if (wk->illegal > CHK_MAX_ILLEGAL)
		return;
	f = wadd(st->w, lblk < 0 ? E3P_INO_BAD_IND : E3P_INO_ILLEGAL_BLOCK,
		 st->ino);
	if (f) {
		f->blk = b;
		f->num = lblk < 0 ? 0 : (uint64_t)lblk;
	}
}

static int visit(struct chk_walk *wk, blk64_t b, e2_blkcnt_t lblk)
{
	struct fstate *st = wk->arg;
	struct chk_worker *w = st->w;
	struct chk_ctx *ctx = w->ctx;
	struct e3_finding *f;

	e3_runs_step(&st->runs, b);
	if (chk_bit(&ctx->meta, b)) {
		f = wadd(w, E3P_INO_METADATA_BLOCK, st->ino);
		if (f) {
			f->blk = b;
			f->num = lblk < 0 ? 0 : (uint64_t)lblk;
		}
		if (lblk < 0) {		/* never read metadata as pointers */
			wk->skip_children = 1;
			return 0;
		}
	} else if (chk_bit(&w->used, b)) {
		chk_set(&w->dup, b);
	} else {
		chk_set(&w->used, b);
	}
	e3_runs_add(&st->runs, b);
	if (lblk < 0)
		return 0;
	st->last_lblk = lblk;
	if (st->is_dir) {
		struct chk_dblk d = { st->ino, b, (uint32_t)lblk };

		/* every missing block, as e2fsck allocates each ("unallocated
		 * block #N"): one a round left a 16-block gap to the round
		 * limit. A cap, so that a pointer far out (garbage) costs
		 * rounds rather than memory */
		for (; lblk > st->next_dir && st->holes < CHK_DIR_HOLES_MAX;
		     st->next_dir++, st->holes++)
			if ((f = wadd(w, E3P_INO_DIR_HOLE, st->ino)))
				f->num = st->next_dir;
		st->next_dir = lblk + 1;
		if (chk_vec_push(&w->dblks, &d))
			w->err = ENOMEM;
	}
	return 0;
}

/* ext2fs_inode_has_valid_blocks2's rule, without touching the shared fs */
static int has_valid_blocks(const struct ext2_inode *in)
{
	if (!LINUX_S_ISDIR(in->i_mode) && !LINUX_S_ISREG(in->i_mode) &&
	    !LINUX_S_ISLNK(in->i_mode))
		return 0;
	if (LINUX_S_ISLNK(in->i_mode)) {
		if (!in->i_file_acl) {
			if (!in->i_blocks)
				return 0;
		} else {
			if (in->i_size >= EXT2_N_BLOCKS * 4)
				return 1;
			if (in->i_size > 4 && !in->i_block[1])
				return 1;
			return 0;
		}
	}
	return !(in->i_flags & EXT4_INLINE_FL_);
}

static int valid_type(uint16_t mode)
{
	return LINUX_S_ISDIR(mode) || LINUX_S_ISREG(mode) ||
	       LINUX_S_ISCHR(mode) || LINUX_S_ISBLK(mode) ||
	       LINUX_S_ISLNK(mode) || LINUX_S_ISFIFO(mode) ||
	       LINUX_S_ISSOCK(mode);
}

/* Counts the EA block towards i_blocks when its header is sane (as
 * e2fsck's check_ext_attr accepts it); the block itself is checked once
 * per block after the merge. */
static int ea_block_ok(struct chk_worker *w, ext2_ino_t ino, blk64_t b)
{
	struct chk_ctx *ctx = w->ctx;
	struct ext2_ext_attr_header *h = (void *)w->bbuf[3];
	struct chk_ea_ref r = { b, ino };
	struct e3_finding *f;

	if (b < ctx->fs->super->s_first_data_block || b >= ctx->nblocks ||
	    chk_bit(&ctx->meta, b)) {
		if ((f = wadd(w, E3P_INO_EA_BLOCK_RANGE, ino)))
			f->blk = b;
		return 0;
	}
	if (chk_vec_push(&w->ea, &r))
		w->err = ENOMEM;
	if (chk_pread(w->fd, h, sizeof(*h), (uint64_t)b * ctx->bs))
		return 0;
	return ext2fs_le32_to_cpu(h->h_magic) == EXT2_EXT_ATTR_MAGIC &&
	       ext2fs_le32_to_cpu(h->h_blocks) == 1;
}

static void keep_worst(struct chk_vec *v, const struct e3_layout_file *lf,
		       unsigned n, int by_excess);

static void account_layout(struct chk_worker *w, struct fstate *st,
			   uint64_t counted)
{
	struct chk_ctx *ctx = w->ctx;
	struct e3_layout *lay = &w->lay;
	struct e3_layout_file lf;
	unsigned worst = ctx->opts.worst ? ctx->opts.worst : 10;

	if (st->runs.fragmented && st->ino != EXT2_RESIZE_INO &&
	    counted < ctx->fs->super->s_blocks_per_group) {
		if (st->is_dir)
			lay->fragmented_dirs++;
		else
			lay->fragmented_files++;
	}
	if (!st->runs.nblocks || st->ino == EXT2_RESIZE_INO)
		return;
	memset(&lf, 0, sizeof(lf));
	lf.ino = st->ino;
	e3_runs_figures(&st->runs, &lf);
	lay->files_with_blocks++;
	lay->total_runs += lf.runs;
	lay->runs_hist[lf.runs < E3_RUNS_HIST ? lf.runs : E3_RUNS_HIST - 1]++;
	lay->total_excess += lf.excess;
	if (lf.runs > lay->max_runs)
		lay->max_runs = lf.runs;
	if (lf.excess > lay->max_excess)
		lay->max_excess = lf.excess;
	if (lf.excess)
		lay->files_with_excess++;
	if (lf.runs > 1)
		keep_worst(&w->worst_runs, &lf, worst, 0);
	if (lf.excess)
		keep_worst(&w->worst_excess, &lf, worst, 1);
}

static int cmp_runs(const void *a, const void *b)
{
	const struct e3_layout_file *x = a, *y = b;

	if (x->runs != y->runs)
		return x->runs < y->runs ? 1 : -1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int cmp_excess(const void *a, const void *b)
{
	const struct e3_layout_file *x = a, *y = b;

	if (x->excess != y->excess)
		return x->excess < y->excess ? 1 : -1;
	return cmp_runs(a, b);
}

void chk_trim_worst(struct chk_vec *v, unsigned n, int by_excess)
{
	if (!v->n)
		return;
	qsort(v->v, v->n, v->size, by_excess ? cmp_excess : cmp_runs);
	if (v->n > n)
		v->n = n;
}

static void keep_worst(struct chk_vec *v, const struct e3_layout_file *lf,
		       unsigned n, int by_excess)
{
	if (chk_vec_push(v, lf))
		return;
	if (v->n >= 4 * (size_t)n + 64)
		chk_trim_worst(v, n, by_excess);
}

/* The largest size a block-mapped file can have (e2fsck's ext2_max_sizes) */
static uint64_t max_size(unsigned bs)
{
	uint64_t apb = bs / 4;

	return (EXT2_NDIR_BLOCKS + apb + apb * apb + apb * apb * apb) * bs;
}

static void check_sizes(struct chk_worker *w, const struct ext2_inode *in,
			struct fstate *st, int ea_ok)
{
	struct chk_ctx *ctx = w->ctx;
	uint64_t want_iblocks = (st->runs.nblocks + (ea_ok ? 1 : 0)) * (ctx->bs / 512);
	uint64_t size = EXT2_I_SIZE(in), want;
	struct e3_finding *f;

	if (in->i_blocks != want_iblocks &&
	    (f = wadd(w, E3P_INO_I_BLOCKS, st->ino))) {
		f->num = in->i_blocks;
		f->num2 = want_iblocks;
	}
	if (st->is_dir) {
		uint64_t nblock = size / ctx->bs;

		if (size & (ctx->bs - 1)) {
			if ((f = wadd(w, E3P_INO_DIR_SIZE, st->ino)))
				f->num = size;
			return;
		}
		if (nblock == (uint64_t)(st->last_lblk + 1))
			return;
		want = (uint64_t)(st->last_lblk + 1) * ctx->bs;
	} else {
		if ((st->last_lblk < 0 ||
		     size >= (uint64_t)st->last_lblk * ctx->bs) &&
		    size <= max_size(ctx->bs))
			return;
		want = (uint64_t)(st->last_lblk + 1) * ctx->bs;
	}
	if ((f = wadd(w, E3P_INO_I_SIZE, st->ino))) {
		f->num = size;
		f->num2 = want;
	}
}

/* A block walk over one inode with this worker's fd and buffers. */
static void walk_setup(struct chk_worker *w, struct chk_walk *wk,
		       int (*fn)(struct chk_walk *, blk64_t, e2_blkcnt_t),
		       void *arg)
{
	struct chk_ctx *ctx = w->ctx;

	memset(wk, 0, sizeof(*wk));
	wk->fd = w->fd;
	wk->bs = ctx->bs;
	wk->first_data = ctx->fs->super->s_first_data_block;
	wk->nblocks = ctx->nblocks;
	wk->buf[0] = w->bbuf[0];
	wk->buf[1] = w->bbuf[1];
	wk->buf[2] = w->bbuf[2];
	wk->visit = fn;
	wk->arg = arg;
}

/* Returns whether the inode's EA block counts towards i_blocks. */
static int walk_file(struct chk_worker *w, ext2_ino_t ino,
		     const struct ext2_inode *in, int check)
{
	struct chk_ctx *ctx = w->ctx;
	struct fstate st;
	struct chk_walk wk;
	int ea_ok = 0, valid = has_valid_blocks(in);

	memset(&st, 0, sizeof(st));
	st.w = w;
	st.ino = ino;
	st.is_dir = LINUX_S_ISDIR(in->i_mode);
	st.last_lblk = -1;
	e3_runs_init(&st.runs, ctx->fs->super);
	walk_setup(w, &wk, visit, &st);
	wk.on_illegal = on_illegal;
	/* without ext_attr an EA block is the inode's damage (e2fsck:
	 * i_file_acl should be zero), and the block nobody's. e2fsck only
	 * marks the inode bad for that (or for a block outside the
	 * filesystem) and reports it when an entry names the inode: never,
	 * for the reserved inodes but the root, whose EA block then is
	 * just nobody's */
	if (in->i_file_acl && ino < EXT2_FIRST_INO(ctx->fs->super) &&
	    ino != EXT2_ROOT_INO &&
	    (!ext2fs_has_feature_xattr(ctx->fs->super) ||
	     in->i_file_acl < ctx->fs->super->s_first_data_block ||
	     in->i_file_acl >= ctx->nblocks)) {
		;
	} else if (in->i_file_acl && !ext2fs_has_feature_xattr(ctx->fs->super)) {
		struct e3_finding *f = wadd(w, E3P_INO_EA_NO_FEATURE, ino);

		if (f)
			f->blk = in->i_file_acl;
	} else if (in->i_file_acl) {
		ea_ok = ea_block_ok(w, ino, in->i_file_acl);
	}
	if (valid) {
		/* e2fsck counts these for ordinary inodes only */
		int counted = ino >= EXT2_FIRST_INO(ctx->fs->super);

		if (counted && in->i_block[EXT2_IND_BLOCK])
			w->lay.ind_files++;
		if (counted && in->i_block[EXT2_DIND_BLOCK])
			w->lay.dind_files++;
		if (counted && in->i_block[EXT2_TIND_BLOCK])
			w->lay.tind_files++;
		if (chk_walk_blocks(&wk, in)) {
			struct e3_finding *f = wadd(w, E3P_INO_TOO_MANY_BAD, ino);

			if (f)
				f->num = wk.illegal;
			ctx->ist[ino] |= CI_BAD;
		}
	}
	if (st.runs.nblocks)
		ctx->ist[ino] |= CI_HAS_BLOCKS;
	account_layout(w, &st, st.runs.nblocks + (ea_ok ? 1 : 0));
	/* e2fsck clears a directory with no block at all (no '.' to
	 * mend); the entries naming it go with it. The root is pass 4's */
	if (st.is_dir && check && !st.runs.nblocks && ino != EXT2_ROOT_INO &&
	    !(ctx->ist[ino] & CI_BAD)) {
		wadd(w, E3P_INO_DIR_EMPTY, ino);
		ctx->ist[ino] |= CI_BAD;
	}
	if (check && !(ctx->ist[ino] & CI_BAD))
		check_sizes(w, in, &st, ea_ok);
	if (LINUX_S_ISLNK(in->i_mode) && valid && check) {
		uint64_t size = EXT2_I_SIZE(in);

		/* e2fsck 1.47 takes every symlink shorter than i_block for a
		 * fast one, whatever i_blocks says (ext2fs_is_fast_symlink):
		 * its text must then be i_block's (a file whose mode bit
		 * flipped to symlink fails this, as e2fsck finds) */
		if (size && size < sizeof(in->i_block)) {
			if (strnlen((const char *)in->i_block,
				    sizeof(in->i_block)) != size) {
				struct e3_finding *f = wadd(w, E3P_INO_FAST_SYMLINK, ino);

				if (f)
					f->num = size;
				ctx->ist[ino] |= CI_BAD;
			}
		} else if (st.runs.nblocks != 1 || size >= ctx->bs || !size) {
			struct e3_finding *f = wadd(w, E3P_INO_BAD_SYMLINK_SIZE, ino);

			if (f) {
				f->num = size;
				f->num2 = st.runs.nblocks;
			}
			ctx->ist[ino] |= CI_BAD;
		}
	}
	return ea_ok;
}

static void check_special(struct chk_worker *w, ext2_ino_t ino,
			  const struct ext2_inode *in)
{
	struct chk_ctx *ctx = w->ctx;
	struct e3_finding *f;
	int i, bad = 0;

	if (!LINUX_S_ISLNK(in->i_mode) && EXT2_I_SIZE(in) &&
	    (f = wadd(w, E3P_INO_SPECIAL_SIZE, ino)))
		f->num = EXT2_I_SIZE(in);
	/* no data blocks: i_blocks counts the EA block at most (with one,
	 * walk_file's EA check owns the count); clearing the size alone
	 * left e2fsck an i_blocks to fix */
	if (!in->i_file_acl && in->i_blocks &&
	    (f = wadd(w, E3P_INO_I_BLOCKS, ino))) {
		f->num = in->i_blocks;
		f->num2 = 0;
	}
	/* e2fsck clears immutable and append-only on devices, sockets,
	 * fifos and symlinks (no data a flag could protect) */
	if ((in->i_flags & (EXT2_IMMUTABLE_FL | EXT2_APPEND_FL)) &&
	    (f = wadd(w, E3P_INO_FLAG, ino))) {
		f->num = in->i_flags & (EXT2_IMMUTABLE_FL | EXT2_APPEND_FL);
		f->name = strdup("immutable or append-only (special file)");
	}
	if (LINUX_S_ISLNK(in->i_mode)) {	/* fast symlink */
		uint64_t size = EXT2_I_SIZE(in);

		if (size >= sizeof(in->i_block) || !size ||
		    strnlen((const char *)in->i_block, sizeof(in->i_block)) != size ||
		    (in->i_flags & EXT2_INDEX_FL)) {
			if ((f = wadd(w, E3P_INO_FAST_SYMLINK, ino)))
				f->num = size;
			ctx->ist[ino] |= CI_BAD;
		}
		return;
	}
	/* e2fsck's check_device_inode: the pointers past i_block[3] only
	 * matter on immutable or append-only inodes */
	if (in->i_flags & (EXT2_IMMUTABLE_FL | EXT2_APPEND_FL))
		for (i = 4; i < EXT2_N_BLOCKS; i++)
			if (in->i_block[i])
				bad = 1;
	if (in->i_flags & (EXT2_INDEX_FL | EXT4_EXTENTS_FL_))
		bad = 1;
	if (bad) {
		wadd(w, E3P_INO_DEVICE, ino);
		ctx->ist[ino] |= CI_BAD;
	}
}

/* Each reserved GDT block doubles as an indirect block of the resize
 * inode, mapping its copies in the groups that hold a backup superblock. */
static int resize_backups_bad(struct chk_worker *w, blk64_t pblk)
{
	struct chk_ctx *ctx = w->ctx;
	ext2_filsys fs = ctx->fs;
	const uint32_t *ind = (const uint32_t *)w->bbuf[1];
	unsigned off = 0, apb = ctx->bs / 4;
	dgrp_t g;

	if (chk_read_block(ctx, w->fd, pblk, w->bbuf[1]))
		return 1;
	for (g = 1; g < fs->group_desc_count && off < apb; g++) {
		if (!ext2fs_bg_has_super(fs, g))
			continue;
		if (ext2fs_le32_to_cpu(ind[off++]) !=
		    pblk + (blk64_t)g * fs->super->s_blocks_per_group)
			return 1;
	}
	return 0;
}

struct rcount {
	uint64_t n;		/* blocks, indirect ones included */
	e2_blkcnt_t last;	/* last data block's logical number, or -1 */
};

static int count_visit(struct chk_walk *wk, blk64_t b, e2_blkcnt_t lblk)
{
	struct rcount *rc = wk->arg;

	(void)b;
	rc->n++;
	if (lblk > rc->last)
		rc->last = lblk;
	return 0;
}

/* e2fsck walks the resize inode like any file: every pointer in range,
 * i_blocks counting them all. */
static const char *resize_count_bad(struct chk_worker *w,
				    const struct ext2_inode *in)
{
	struct chk_ctx *ctx = w->ctx;
	struct chk_walk wk;
	struct rcount rc = { 0, -1 };

	walk_setup(w, &wk, count_visit, &rc);
	chk_walk_blocks(&wk, in);
	if (wk.illegal)
		return "illegal block pointers";
	if (in->i_blocks != rc.n * (ctx->bs / 512))
		return "i_blocks wrong";
	/* e2fsck's size rule for a regular file: no block past i_size */
	if (rc.last >= 0 && EXT2_I_SIZE(in) < (uint64_t)rc.last * ctx->bs)
		return "i_size short of its last block";
	return NULL;
}

/* The resize inode as e2fsck's check_resize_inode wants it: a regular
 * file whose only pointer is the DIND block, which maps each reserved GDT
 * block at its place after the primary descriptors. */
static const char *resize_bad(struct chk_worker *w, const struct ext2_inode *in)
{
	struct chk_ctx *ctx = w->ctx;
	ext2_filsys fs = ctx->fs;
	blk64_t dind = in->i_block[EXT2_DIND_BLOCK];
	unsigned apb = ctx->bs / 4, i;
	const uint32_t *tab = (const uint32_t *)w->bbuf[0];

	for (i = 0; i < EXT2_N_BLOCKS; i++)
		if (i != EXT2_DIND_BLOCK && in->i_block[i])
			return "pointers other than the double indirect one";
	if (!ext2fs_has_feature_resize_inode(fs->super))
		return in->i_block[EXT2_DIND_BLOCK] || in->i_mode ?
			"in use without the resize_inode feature" : NULL;
	if (!LINUX_S_ISREG(in->i_mode))
		return "not a regular file";
	if (!dind)
		return fs->super->s_reserved_gdt_blocks ? "no double indirect block" : NULL;
	if (dind < fs->super->s_first_data_block || dind >= ctx->nblocks ||
	    chk_bit(&ctx->meta, dind))
		return "double indirect block out of range";
	if (chk_read_block(ctx, w->fd, dind, w->bbuf[0]))
		return "double indirect block unreadable";
	for (i = 0; i < fs->super->s_reserved_gdt_blocks; i++) {
		blk64_t want = fs->super->s_first_data_block + 1 + fs->desc_blocks + i;

		if (ext2fs_le32_to_cpu(tab[(fs->desc_blocks + i) % apb]) != want)
			return "reserved GDT blocks not mapped";
		if (resize_backups_bad(w, want))
			return "backup reserved GDT blocks not mapped";
	}
	return resize_count_bad(w, in);
}

/* What e2fsck's check_blocks looks at in every inode it walks, reserved
 * ones included: the index and casefold flags on what is not a
 * directory. */
static void check_dir_flags(struct chk_worker *w, ext2_ino_t ino,
			    const struct ext2_inode *in)
{
	static const struct { uint32_t fl; const char *name; } fl[] = {
		{ EXT2_INDEX_FL, "index (not a directory)" },
		{ 0x40000000, "casefold (not a directory)" },
	};
	struct e3_finding *f;
	size_t i;

	if (LINUX_S_ISDIR(in->i_mode))
		return;
	for (i = 0; i < sizeof(fl) / sizeof(fl[0]); i++)
		if ((in->i_flags & fl[i].fl) && (f = wadd(w, E3P_INO_FLAG, ino))) {
			f->num = fl[i].fl;
			f->name = strdup(fl[i].name);
		}
}

/* The resize inode's EA block, as e2fsck's check_ext_attr reads it: one
 * inside the filesystem (with ext_attr) is checked as any file's (the
 * merge reads each EA block once), one in group metadata cannot have an
 * EA header; one outside only marks the inode bad, which e2fsck never
 * reports for a reserved inode. */
static void check_resize_ea(struct chk_worker *w, const struct ext2_inode *in)
{
	struct chk_ctx *ctx = w->ctx;
	struct chk_ea_ref r = { in->i_file_acl, EXT2_RESIZE_INO };
	struct e3_finding *f;

	if (!r.blk || !ext2fs_has_feature_xattr(ctx->fs->super) ||
	    r.blk < ctx->fs->super->s_first_data_block || r.blk >= ctx->nblocks)
		return;
	if (chk_bit(&ctx->meta, r.blk)) {
		if ((f = wadd(w, E3P_INO_EA_BLOCK_RANGE, EXT2_RESIZE_INO)))
			f->blk = r.blk;
		return;
	}
	if (chk_vec_push(&w->ea, &r))
		w->err = ENOMEM;
}

/* The reserved inodes with no job on ext3 (3 and 4 are quota inodes,
 * which need the quota feature ext3 lacks; 5, 6, 9, 10 and up to
 * s_first_ino), as e2fsck's pass 1 judges them: a quota inode with links,
 * blocks or a first block is "not in use, but contains data"; the others
 * may have no mode (5, the boot loader's, may be anything but a
 * directory), and whatever mode they have, their blocks are walked and
 * i_blocks, i_size and the index and casefold flags checked as a
 * file's. */
static void check_other_reserved(struct chk_worker *w, ext2_ino_t ino,
				 const struct ext2_inode *in)
{
	struct e3_finding *f;

	if (ino == 3 || ino == 4) {
		if (in->i_links_count || in->i_blocks || in->i_block[0])
			wadd(w, E3P_INO_QUOTA_NOT_CLEAR, ino);
		return;
	}
	if ((ino == 5 ? LINUX_S_ISDIR(in->i_mode) : in->i_mode != 0) &&
	    (f = wadd(w, E3P_INO_RESERVED_MODE, ino)))
		f->num = in->i_mode;
	check_dir_flags(w, ino, in);
	walk_file(w, ino, in, 1);
}

static void check_reserved(struct chk_worker *w, ext2_ino_t ino,
			   const struct ext2_inode *in)
{
	struct chk_ctx *ctx = w->ctx;
	uint16_t *ci = &ctx->ist[ino];
	struct e3_finding *f;

	*ci |= CI_USED;
	if (ino == EXT2_BAD_INO) {
		chk_badblocks_inode(w, in);
		return;
	}
	/* e2fsck's test for the extents flag without the feature: on any
	 * inode with links, and on the root and the journal inode */
	if ((in->i_flags & EXT4_EXTENTS_FL_) &&
	    (in->i_links_count || ino == EXT2_ROOT_INO || ino == EXT2_JOURNAL_INO) &&
	    (f = wadd(w, E3P_INO_FLAG, ino))) {
		f->num = EXT4_EXTENTS_FL_;
		f->name = strdup("extents");
	}
	if (ino == EXT2_ROOT_INO) {
		if (!LINUX_S_ISDIR(in->i_mode) || !in->i_links_count) {
			*ci &= ~CI_USED;
			return;		/* pass 4 reports it */
		}
		*ci |= CI_DIR;
		if (in->i_flags & EXT2_INDEX_FL)
			*ci |= CI_INDEX;
		/* e2fsck: "Root inode has dtime set"; the fix clears it */
		if (in->i_dtime)
			wadd(w, E3P_INO_DTIME, ino);
		walk_file(w, ino, in, 1);
		return;
	}
	if (ino == EXT2_RESIZE_INO) {
		const char *why = resize_bad(w, in);
		blk64_t b = in->i_block[EXT2_DIND_BLOCK];

		if (why && (f = wadd(w, E3P_INO_RESIZE_BAD, ino)))
			f->name = strdup(why);
		check_dir_flags(w, ino, in);
		check_resize_ea(w, in);
		/* its DIND block is its own even when the rest is bad */
		if (b >= ctx->fs->super->s_first_data_block && b < ctx->nblocks &&
		    !chk_bit(&ctx->meta, b)) {
			if (chk_bit(&w->used, b))
				chk_set(&w->dup, b);
			else
				chk_set(&w->used, b);
		}
		return;
	}
	/* the invalid journal this round's fixes clear: its blocks are
	 * nobody's (so that the computed bitmaps free them, and a block its
	 * map shares with a file is no duplicate) */
	if (ino == EXT2_JOURNAL_INO && ctx->jnl_clear)
		return;
	/* an external journal leaves inode 8 unused, as any reserved one */
	if (ino == EXT2_JOURNAL_INO &&
	    ext2fs_has_feature_journal(ctx->fs->super) &&
	    ctx->fs->super->s_journal_inum == EXT2_JOURNAL_INO) {
		if (!LINUX_S_ISREG(in->i_mode)) {
			wadd(w, E3P_INO_JOURNAL_MODE, ino);
			return;
		}
		/* sizes too, as e2fsck: a pointer cleared as illegal must
		 * take its block out of i_blocks */
		walk_file(w, ino, in, 1);
		return;
	}
	/* e2fsck's test (pass 1): links, i_blocks or a first block. Its
	 * blocks stay claimed until the fix zeroes it, as with e2fsck -n */
	if (ino == EXT2_JOURNAL_INO && !ext2fs_has_feature_journal(ctx->fs->super) &&
	    (in->i_links_count || in->i_blocks || in->i_block[0]))
		wadd(w, E3P_INO_JOURNAL_NOT_CLEAR, ino);
	if (ino == EXT2_JOURNAL_INO) {
		if (in->i_mode && !LINUX_S_ISREG(in->i_mode) &&
		    (f = wadd(w, E3P_INO_RESERVED_MODE, ino))) {
			f->num = in->i_mode;
			return;
		}
		if (in->i_mode && LINUX_S_ISREG(in->i_mode))
			walk_file(w, ino, in, 0);
		return;
	}
	check_other_reserved(w, ino, in);
}

/* Fields ext3 leaves zero (e2fsck's process_bad_inode): fragments, the
 * high halves of features this filesystem lacks. */
static void check_fields(struct chk_worker *w, ext2_ino_t ino,
			 const struct ext2_inode *in)
{
	struct ext2_super_block *sb = w->ctx->fs->super;
	struct { const char *name; uint64_t v; } f[4] = {
		{ "i_faddr", in->i_faddr },
		{ "i_blocks_hi", ext2fs_has_feature_huge_file(sb) ? 0 :
		  in->osd2.linux2.l_i_blocks_hi },
		{ "i_file_acl_high", ext2fs_has_feature_64bit(sb) ? 0 :
		  in->osd2.linux2.l_i_file_acl_high },
		{ "i_size_high", LINUX_S_ISDIR(in->i_mode) &&
		  !ext2fs_has_feature_largedir(sb) ? in->i_size_high : 0 },
	};
	struct e3_finding *e;
	int i;

	for (i = 0; i < 4; i++)
		if (f[i].v && (e = wadd(w, E3P_INO_FIELD, ino))) {
			e->num = f[i].v;
			e->name = strdup(f[i].name);
		}
}

/* Flags of ext4 features this filesystem lacks that e2fsck calls errors
 * (encryption without its attribute, casefold), and the index flag on
 * anything but a directory: e2fsck clears them. */
static void check_flags(struct chk_worker *w, ext2_ino_t ino,
			const struct ext2_inode *in)
{
	static const struct { uint32_t fl; const char *name; } fl[] = {
		{ 0x00000800, "encrypt" }, { 0x40000000, "casefold" },
	};
	struct e3_finding *f;
	size_t i;

	for (i = 0; i < sizeof(fl) / sizeof(fl[0]); i++)
		if ((in->i_flags & fl[i].fl) && (f = wadd(w, E3P_INO_FLAG, ino))) {
			f->num = fl[i].fl;
			f->name = strdup(fl[i].name);
		}
	if ((in->i_flags & EXT2_INDEX_FL) && !LINUX_S_ISDIR(in->i_mode) &&
	    (f = wadd(w, E3P_INO_FLAG, ino))) {
		f->num = EXT2_INDEX_FL;
		f->name = strdup("index (not a directory)");
	}
}

/* A device, FIFO or socket whose first block is a directory's first
 * block ("." naming the inode, then ".."): a directory whose mode was
 * damaged, as e2fsck 1.47 judges it (learned from its behaviour). Every
 * block pointer must be a block that can hold data; a device with one
 * link and pointers only where a device number may sit is a device.
 * Returns the type's name, or NULL. */
static const char *really_dir(struct chk_worker *w, ext2_ino_t ino,
			      const struct ext2_inode *in)
{
	struct chk_ctx *ctx = w->ctx;
	const unsigned char *buf = w->bbuf[0];
	int dev = LINUX_S_ISCHR(in->i_mode) || LINUX_S_ISBLK(in->i_mode);
	int not_device = 0;
	unsigned i, rec, rec2, bs = ctx->bs;

	if ((!dev && !LINUX_S_ISFIFO(in->i_mode) &&
	     !LINUX_S_ISSOCK(in->i_mode)) || !in->i_block[0])
		return NULL;
	for (i = 0; i < EXT2_N_BLOCKS; i++) {
		blk64_t b = in->i_block[i];

		if (!b)
			continue;
		if (i >= 4)
			not_device = 1;
		if (b < ctx->fs->super->s_first_data_block ||
		    b >= ctx->nblocks || chk_bit(&ctx->meta, b))
			return NULL;
	}
	if (dev && in->i_links_count == 1 && !not_device)
		return NULL;
	if (chk_read_block(ctx, w->fd, in->i_block[0], w->bbuf[0]))
		return NULL;
	rec = buf[4] | buf[5] << 8;
	if (buf[6] != 1 || buf[8] != '.' || rec < 12 || rec % 4 ||
	    rec >= bs - 12 ||
	    (buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24) != ino)
		return NULL;
	rec2 = buf[rec + 4] | buf[rec + 5] << 8;
	if (buf[rec + 6] != 2 || buf[rec + 8] != '.' || buf[rec + 9] != '.' ||
	    rec2 < 12 || rec2 % 4)
		return NULL;
	return LINUX_S_ISCHR(in->i_mode) ? "character device" :
	       LINUX_S_ISBLK(in->i_mode) ? "block device" :
	       LINUX_S_ISFIFO(in->i_mode) ? "named pipe" : "socket";
}

static void check_inode(struct chk_worker *w, ext2_ino_t ino,
			const struct ext2_inode *in)
{
	struct ext2_inode as_dir;
	const char *was;
	struct chk_ctx *ctx = w->ctx;
	uint16_t *ci = &ctx->ist[ino];
	struct e3_finding *f;

	*ci |= chk_ftype(in->i_mode) << CI_TYPE_SHIFT;
	/* an orphan-list link left behind (e2fsck's low dtime check) */
	if (in->i_dtime && ctx->low_dtime_check && !(*ci & CI_ORPHAN) &&
	    in->i_dtime < ctx->ninodes) {
		if ((f = wadd(w, E3P_INO_LOW_DTIME, ino)))
			f->num = in->i_dtime;
		*ci |= CI_ORPHAN;	/* reported: not also as dtime */
	}
	if (in->i_links_count == 1) {
		*ci |= CI_LINK1;
	} else if (in->i_links_count) {
		struct chk_link l = { ino, in->i_links_count };

		if (chk_vec_push(&w->links, &l))
			w->err = ENOMEM;
	}
	if (ino < EXT2_FIRST_INO(ctx->fs->super)) {
		check_reserved(w, ino, in);
		return;
	}
	if (!in->i_links_count) {
		if (in->i_mode && !in->i_dtime && !(*ci & CI_ORPHAN))
			wadd(w, E3P_INO_ZERO_DTIME, ino);
		return;
	}
	*ci |= CI_USED;
	if (in->i_dtime && !(*ci & CI_ORPHAN))
		wadd(w, E3P_INO_DTIME, ino);
	if (!valid_type(in->i_mode)) {
		if ((f = wadd(w, E3P_INO_BAD_MODE, ino)))
			f->num = in->i_mode;
		*ci |= CI_BAD;
		return;
	}
	if (in->i_flags & (EXT4_EXTENTS_FL_ | EXT4_INLINE_FL_)) {
		if ((f = wadd(w, E3P_INO_FLAGS_EXTENTS, ino)))
			f->num = in->i_flags;
		*ci |= CI_BAD;
		return;
	}
	if ((was = really_dir(w, ino, in))) {
		if ((f = wadd(w, E3P_INO_REALLY_DIR, ino)))
			f->name = strdup(was);
		/* -y makes it a directory (check_fix.c): the passes judge it
		 * as one from here on, as e2fsck does once it said yes */
		if (ctx->opts.mode == E3_CHECK_YES) {
			as_dir = *in;
			as_dir.i_mode = (in->i_mode & 07777) | LINUX_S_IFDIR;
			in = &as_dir;
			*ci = (*ci & ~(7u << CI_TYPE_SHIFT)) |
			      EXT2_FT_DIR << CI_TYPE_SHIFT;
		}
	}
	check_fields(w, ino, in);
	check_flags(w, ino, in);
	if (in->i_flags & EXT2_IMAGIC_FL &&
	    !ext2fs_has_feature_imagic_inodes(ctx->fs->super))
		wadd(w, E3P_INO_IMAGIC, ino);
	if (LINUX_S_ISDIR(in->i_mode)) {
		*ci |= CI_DIR;
		if (in->i_flags & EXT2_INDEX_FL) {
			if (ext2fs_has_feature_dir_index(ctx->fs->super))
				*ci |= CI_INDEX;
			else
				wadd(w, E3P_HTREE_NO_FEATURE, ino);
		}
	}
	if (!has_valid_blocks(in) && !LINUX_S_ISDIR(in->i_mode) &&
	    !LINUX_S_ISREG(in->i_mode)) {
		int ea_ok;

		check_special(w, ino, in);
		ea_ok = walk_file(w, ino, in, 0);	/* EA only */
		/* no blocks but the EA block: e2fsck checks i_blocks of
		 * devices, FIFOs, sockets and fast symlinks too */
		if (in->i_blocks != (ea_ok ? ctx->bs / 512 : 0u) &&
		    (f = wadd(w, E3P_INO_I_BLOCKS, ino))) {
			f->num = in->i_blocks;
			f->num2 = ea_ok ? ctx->bs / 512 : 0;
		}
		return;
	}
	walk_file(w, ino, in, 1);
}

/* The part of a large inode past the first 128 bytes (e2fsck's
 * check_inode_extra_space): i_extra_isize in range and a multiple of 4,
 * and any in-inode extended attributes inside the inode. */
static void check_extra(struct chk_worker *w, ext2_ino_t ino,
			const unsigned char *raw)
{
	unsigned isize = w->ctx->isize, room = isize - EXT2_GOOD_OLD_INODE_SIZE;
	unsigned extra = raw[128] | raw[129] << 8, start, off;
	const unsigned char *ea;
	struct e3_finding *f;

	if (!extra)
		return;
	if (extra < 4 || extra > room || (extra & 3)) {
		if ((f = wadd(w, E3P_INO_EXTRA_ISIZE, ino)))
			f->num = extra;
		return;
	}
	start = EXT2_GOOD_OLD_INODE_SIZE + extra;
	if (start + 4 > isize)
		return;
	ea = raw + start;
	if (ext2fs_le32_to_cpu(*(const uint32_t *)ea) != EXT2_EXT_ATTR_MAGIC)
		return;
	/* entries from after the magic; values are relative to it too */
	for (off = 4; off + 4 <= isize - start &&
	     *(const uint32_t *)(ea + off);) {
		const struct ext2_ext_attr_entry *e = (const void *)(ea + off);
		unsigned voff, vsize;

		if (off + sizeof(*e) > isize - start ||
		    off + EXT2_EXT_ATTR_LEN(e->e_name_len) > isize - start)
			goto bad;
		voff = ext2fs_le16_to_cpu(e->e_value_offs);
		vsize = ext2fs_le32_to_cpu(e->e_value_size);
		if (e->e_value_inum || voff + 4 > isize - start ||
		    vsize > isize - start - 4 - voff)
			goto bad;
		off += EXT2_EXT_ATTR_LEN(e->e_name_len);
	}
	return;
bad:
	wadd(w, E3P_INO_EA_IN_INODE, ino);
}

/* Reads one group's inode table in chunks and checks each inode. */
static void scan_group(struct chk_worker *w, dgrp_t g)
{
	struct chk_ctx *ctx = w->ctx;
	ext2_filsys fs = ctx->fs;
	unsigned ipg = fs->super->s_inodes_per_group;
	unsigned per_block = ctx->bs / ctx->isize;
	unsigned chunk = CHK_ITABLE_CHUNK, b, i;
	blk64_t it = ext2fs_inode_table_loc(fs, g);

	for (b = 0; b < fs->inode_blocks_per_group; b += chunk) {
		unsigned n = fs->inode_blocks_per_group - b;

		if (n > chunk)
			n = chunk;
		/* a table dropped for lying outside its group reads as
		 * unused inodes, as e2fsck skips it (check_relocate.c) */
		if (chk_dropped(ctx, g, CHK_RELOC_IT))
			memset(w->ibuf, 0, (size_t)n * ctx->bs);
		else if (chk_pread(w->fd, w->ibuf, (size_t)n * ctx->bs,
				   (uint64_t)(it + b) * ctx->bs) == EIO) {
			w->err = EIO;
			return;
		}
		for (i = 0; i < n * per_block; i++) {
			unsigned idx = b * per_block + i;
			ext2_ino_t ino = g * ipg + idx + 1;
			struct ext2_inode in;

			if (idx >= ipg || ino > ctx->ninodes)
				break;
			memcpy(&in, w->ibuf + (size_t)i * ctx->isize, sizeof(in));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
			ext2fs_swap_inode(fs, &in, &in, 0);
#endif
			check_inode(w, ino, &in);
			if (ctx->isize > EXT2_GOOD_OLD_INODE_SIZE &&
			    (ctx->ist[ino] & CI_USED))
				check_extra(w, ino, w->ibuf + (size_t)i * ctx->isize);
		}
	}
}

static void *worker_main(void *arg)
{
	struct chk_worker *w = arg;
	dgrp_t g;

	for (g = w->g_first; g < w->g_end && !w->err; g++)
		scan_group(w, g);
	return NULL;
}

static errcode_t worker_init(struct chk_ctx *ctx, struct chk_worker *w)
{
	int i;

	memset(w, 0, sizeof(*w));
	w->ctx = ctx;
	w->findings.size = sizeof(struct e3_finding);
	w->dblks.size = sizeof(struct chk_dblk);
	w->ea.size = sizeof(struct chk_ea_ref);
	w->links.size = sizeof(struct chk_link);
	w->worst_runs.size = w->worst_excess.size = sizeof(struct e3_layout_file);
	w->fd = open(ctx->path, O_RDONLY | O_CLOEXEC);
	if (w->fd < 0)
		return errno;
	if (chk_bits_init(&w->used, ctx->nblocks) ||
	    chk_bits_init(&w->dup, ctx->nblocks))
		return ENOMEM;
	w->ibuf = malloc((size_t)CHK_ITABLE_CHUNK * ctx->bs);
	for (i = 0; i < 4; i++)
		w->bbuf[i] = malloc(ctx->bs);
	if (!w->ibuf || !w->bbuf[0] || !w->bbuf[1] || !w->bbuf[2] || !w->bbuf[3])
		return ENOMEM;
	return 0;
}

void chk_worker_free(struct chk_worker *w)
{
	int i;

	if (w->fd > 0)
		close(w->fd);
	chk_bits_free(&w->used);
	chk_bits_free(&w->dup);
	chk_vec_free(&w->findings);
	chk_vec_free(&w->dblks);
	chk_vec_free(&w->ea);
	chk_vec_free(&w->links);
	chk_vec_free(&w->worst_runs);
	chk_vec_free(&w->worst_excess);
	free(w->ibuf);
	for (i = 0; i < 4; i++)
		free(w->bbuf[i]);
}

/* Walks the orphan list (serially, bounded) so pass 2 does not call its
 * members' dtime an error. */
static void mark_orphans(struct chk_ctx *ctx)
{
	ext2_ino_t ino = ctx->fs->super->s_last_orphan;
	struct ext2_inode in;
	struct e3_finding *f;
	ext2_ino_t steps = 0;

	while (ino) {
		const char *why = NULL;

		if (ino < EXT2_FIRST_INO(ctx->fs->super) || ino > ctx->ninodes)
			why = "inode number out of range";
		else if (ctx->ist[ino] & CI_ORPHAN || ++steps > ctx->ninodes)
			why = "the list loops";
		else if (ext2fs_read_inode(ctx->fs, ino, &in))
			why = "unreadable";
		if (why) {
			if ((f = chk_add(ctx, NULL, E3P_INO_ORPHAN))) {
				f->ino = ino;
				f->name = strdup(why);
			}
			return;
		}
		ctx->ist[ino] |= CI_ORPHAN;
		ino = in.i_dtime;
	}
}

static int worker_count(struct chk_ctx *ctx)
{
	long n = ctx->opts.threads;

	if (n <= 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		if (n > 2)
			n = 2;
	}
	if (n < 1)
		n = 1;
	if ((dgrp_t)n > ctx->fs->group_desc_count)
		n = ctx->fs->group_desc_count;
	return n > CHK_MAX_WORKERS ? CHK_MAX_WORKERS : (int)n;
}

errcode_t chk_pass_inodes(struct chk_ctx *ctx)
{
	struct chk_worker w[CHK_MAX_WORKERS];
	pthread_t tid[CHK_MAX_WORKERS];
	int nw = worker_count(ctx), i, started = 0;
	dgrp_t ng = ctx->fs->group_desc_count;
	errcode_t err = 0;

	ctx->ist = calloc((size_t)ctx->ninodes + 1, sizeof(*ctx->ist));
	if (!ctx->ist)
		return ENOMEM;
	mark_orphans(ctx);
	{
		struct ext2_super_block *sb = ctx->fs->super;

		ctx->low_dtime_check =
			!((sb->s_wtime && sb->s_wtime < sb->s_inodes_count) ||
			  (sb->s_mtime && sb->s_mtime < sb->s_inodes_count) ||
			  (sb->s_mkfs_time && sb->s_mkfs_time < sb->s_inodes_count));
	}
	chk_progress(ctx, 2, 0, ng);
	for (i = 0; i < nw && !err; i++) {
		err = worker_init(ctx, &w[i]);
		w[i].g_first = (dgrp_t)((uint64_t)ng * i / nw);
		w[i].g_end = (dgrp_t)((uint64_t)ng * (i + 1) / nw);
	}
	if (err) {
		nw = i;
		goto out;
	}
	for (i = 1; i < nw; i++) {
		if (pthread_create(&tid[i], NULL, worker_main, &w[i]))
			break;
		started = i;
	}
	for (i = started + 1; i < nw; i++)	/* threads refused: run here */
		worker_main(&w[i]);
	worker_main(&w[0]);
	for (i = 1; i <= started; i++)
		pthread_join(tid[i], NULL);
	chk_progress(ctx, 2, ng, ng);
	for (i = 0; i < nw && !err; i++)
		err = w[i].err;
	if (!err)
		err = chk_merge_workers(ctx, w, nw);
out:
	for (i = 0; i < nw; i++)
		chk_worker_free(&w[i]);
	return err;
}
