/*
 * check.h: the checker's private context, shared by the pass files
 * (lib/check_*.c). One struct per run; nothing global.
 *
 * Threads: only pass 2's inode-table scan runs in parallel. Each worker
 * owns a struct chk_worker (its own fd, bitmaps, findings and lists) and
 * writes the inode table entries (ctx->ino[]) of its own inode range only;
 * nothing is shared for writing, so there are no locks. The ext2_filsys is
 * used by the calling thread only, before and after the workers.
 */
#ifndef E3_CHECK_PRIV_H
#define E3_CHECK_PRIV_H

#include <stdint.h>
#include <stddef.h>
#include <pthread.h>
#include "e3img.h"
#include "journal/fault.h"

/* What the passes learned about one inode: 16 bits each, so that memory
 * stays at e2fsck's level on images with many inodes. Link counts other
 * than 1 and reference counts above 1 live in small side tables. */
#define CI_USED		0x0001	/* links_count != 0 (or reserved and valid) */
#define CI_DIR		0x0002
#define CI_BAD		0x0004	/* to be cleared: entries naming it are bad */
#define CI_REACHED	0x0008	/* pass 4: reachable from the root */
#define CI_HAS_BLOCKS	0x0010
#define CI_INDEX	0x0020	/* htree directory */
#define CI_ORPHAN	0x0040
#define CI_REF1		0x0080	/* named by at least one entry */
#define CI_REFN		0x0100	/* named more than once: count in refmap */
#define CI_LINK1	0x0200	/* i_links_count == 1, else in links[] */
#define CI_TYPE_SHIFT	12	/* bits 12-14: the EXT2_FT_* of its mode */
#define CI_TYPE(st)	(((st) >> CI_TYPE_SHIFT) & 7)

struct chk_link {		/* i_links_count other than 1 */
	ext2_ino_t ino;
	uint32_t links;
};

struct chk_dir {		/* one directory's place in the tree */
	ext2_ino_t ino;
	ext2_ino_t parent;	/* directory whose entry names it first */
	ext2_ino_t dotdot;	/* its '..' entry */
};

struct chk_refmap {		/* ino -> entries naming it, for counts > 1 */
	uint32_t *key, *val;
	size_t cap, n;
};

/* one directory block to read in pass 3 */
struct chk_dblk {
	ext2_ino_t ino;
	blk64_t blk;		/* physical, 0 = hole */
	uint32_t lblk;
};

struct chk_vec {		/* a growable array of fixed-size items */
	void *v;
	size_t n, cap, size;
};

struct chk_bits {		/* a plain bit array */
	uint64_t *w;
	uint64_t nbits;
};

struct chk_ctx;

struct chk_worker {
	struct chk_ctx *ctx;
	int fd;
	dgrp_t g_first, g_end;		/* groups [g_first, g_end) */
	struct chk_bits used;		/* blocks claimed by its inodes */
	struct chk_bits dup;		/* claimed twice */
	struct chk_vec findings;	/* struct e3_finding */
	struct chk_vec dblks;		/* struct chk_dblk */
	struct chk_vec ea;		/* struct chk_ea_ref */
	struct chk_vec links;		/* struct chk_link */
	struct chk_vec worst_runs, worst_excess; /* struct e3_layout_file */
	struct e3_layout lay;		/* partial sums */
	unsigned char *ibuf, *bbuf[4];	/* inode table chunk, block buffers */
	errcode_t err;
};

struct chk_ea_ref {
	blk64_t blk;
	ext2_ino_t ino;
};

/* The read-write check's channel over unix_io (check_io.c). */
struct chk_io {
	io_channel real;		/* unix_io underneath */
	struct e3_fault fault;		/* E3_FAULT, for the whole run */
	errcode_t write_err;		/* first failed write of the round */
};

struct chk_ctx {
	const char *path;
	struct e3_check_opts opts;
	struct e3_check_report *rep;
	ext2_filsys fs;
	int fd;				/* read-only fd for raw reads */
	int lock_fd;			/* holds the image lock for the whole
					   run (every round reopens fs) */
	unsigned bs;			/* block size */
	blk64_t nblocks;
	ext2_ino_t ninodes;
	unsigned isize;			/* on-disk inode size */
	uint16_t *ist;			/* [ninodes + 1] CI_* */
	struct chk_vec links;		/* struct chk_link, sorted by ino */
	struct chk_refmap refs;
	struct chk_vec dirs;		/* struct chk_dir, sorted by ino */
	struct chk_vec named;		/* struct chk_dir for worst files:
					   parent of each, for its path */
	struct chk_bits meta;		/* group metadata blocks */
	struct chk_bits used;		/* computed block use (meta included) */
	struct chk_bits dup;		/* blocks claimed twice */
	struct chk_vec dblks;		/* all directory blocks, sorted */
	struct chk_vec ea;		/* EA block references */
	int bad_geometry;		/* pass 1 found the groups unusable */
	int fixing;			/* this round may write */
	unsigned changed;		/* fixes applied this round */
	ext2_ino_t lost_found;
	int low_dtime_check;		/* fs times sane: small dtimes are
					   orphan links, as e2fsck judges */
	uint64_t computed_free_blocks, computed_free_inodes;
	int preen_refused;		/* -p met a problem that needs -y */
	/* an invalid journal was cleared this run: a new one is due once a
	 * round finds the bitmaps right (kept across rounds) */
	int jnl_recreate;
	blk_t jnl_blocks;		/* its size, 0 = the default */
	/* this round: the invalid journal is to be cleared by the round's
	 * fixes, and the passes ignore inode 8 (reset each round) */
	int jnl_clear;
	unsigned jnl_rounds;		/* rounds that cleared or recreated the
					   journal: not counted in MAX_ROUNDS */
	struct chk_io io;		/* read-write checks only */
	/* per group, the CHK_RELOC_* pieces (bit 1 << what) dropped this
	 * round for lying outside the group, or NULL (check_relocate.c) */
	unsigned char *dropped;
};

#define CHK_ITABLE_CHUNK 16	/* inode-table blocks per read */
#define CHK_MAX_WORKERS 8

/* ---- small helpers (check_util.c) ---- */
int chk_vec_push(struct chk_vec *v, const void *item);
void chk_vec_free(struct chk_vec *v);
int chk_bits_init(struct chk_bits *b, uint64_t nbits);
void chk_bits_free(struct chk_bits *b);
static inline int chk_bit(const struct chk_bits *b, uint64_t i)
{
	return i < b->nbits && (b->w[i >> 6] >> (i & 63)) & 1;
}
static inline void chk_set(struct chk_bits *b, uint64_t i)
{
	if (i < b->nbits)
		b->w[i >> 6] |= (uint64_t)1 << (i & 63);
}
/* The 64 bits from bit pos on (pos need not be aligned). */
static inline uint64_t chk_bits64(const struct chk_bits *b, uint64_t pos)
{
	unsigned sh = pos & 63;
	uint64_t lo = b->w[pos >> 6];

	return sh ? (lo >> sh) | (b->w[(pos >> 6) + 1] << (64 - sh)) : lo;
}
static inline void chk_clear(struct chk_bits *b, uint64_t i)
{
	if (i < b->nbits)
		b->w[i >> 6] &= ~((uint64_t)1 << (i & 63));
}
/* Adds a finding to the report (or to a worker's list when v != NULL). */
struct e3_finding *chk_add(struct chk_ctx *ctx, struct chk_vec *v, int code);
int chk_pread(int fd, void *buf, size_t len, uint64_t off);
int chk_read_block(struct chk_ctx *ctx, int fd, blk64_t blk, void *buf);
/* does the mode select fixes of this level (and may we write)? */
int chk_may_fix(struct chk_ctx *ctx, int code);
int chk_dir_repairs_pending(struct chk_ctx *ctx);

/* ---- per-inode state (check_istate.c) ---- */
int chk_ftype(uint16_t mode);			/* EXT2_FT_* of a mode */
uint32_t chk_links(struct chk_ctx *ctx, ext2_ino_t ino);
uint32_t chk_refs(struct chk_ctx *ctx, ext2_ino_t ino);
int chk_ref_inc(struct chk_ctx *ctx, ext2_ino_t ino);
void chk_refmap_free(struct chk_refmap *m);
errcode_t chk_build_dirs(struct chk_ctx *ctx);
struct chk_dir *chk_dir(struct chk_ctx *ctx, ext2_ino_t ino);
ext2_ino_t chk_parent(struct chk_ctx *ctx, ext2_ino_t ino);
struct chk_dir *chk_named(struct chk_ctx *ctx, ext2_ino_t ino);

/* ---- the watched channel (check_io.c) ---- */
/* Installs it over ctx->fs->io (a read-write open). */
errcode_t chk_io_wrap(struct chk_ctx *ctx);
/* Closes ctx->fs, writing out what the round changed; returns the first
 * write error of the round (0 if every write landed). After one, the
 * superblock is marked as having errors where it can still be written. */
errcode_t chk_close_fs(struct chk_ctx *ctx);

/* ---- the passes ---- */
errcode_t chk_open(struct chk_ctx *ctx);		/* check_super.c */
void chk_pass_super(struct chk_ctx *ctx);		/* check_super.c */
errcode_t chk_pass_inodes(struct chk_ctx *ctx);		/* check_inodes.c */
errcode_t chk_pass_dirs(struct chk_ctx *ctx);		/* check_dirs.c */
void chk_pass_connect(struct chk_ctx *ctx);		/* check_connect.c */
void chk_pass_refs(struct chk_ctx *ctx);		/* check_refs.c */
errcode_t chk_pass_bitmaps(struct chk_ctx *ctx);	/* check_bitmaps.c */
errcode_t chk_pass_journal(struct chk_ctx *ctx);	/* check_journal.c */
/* The journal an earlier round cleared, made anew: at the end of a round
 * that changed nothing (so the bitmaps are what the passes computed) and
 * left no error. check_journal.c */
void chk_recreate_journal(struct chk_ctx *ctx);
/* The invalid journal pass 7 marked (ctx->jnl_clear) cleared: one of the
 * round's fixes, applied only when the round's fixes are. check_journal.c */
errcode_t chk_clear_journal(struct chk_ctx *ctx);
/* After the last round: a cleared journal still due is reported as not
 * recreated. check_journal.c */
void chk_journal_left(struct chk_ctx *ctx);
/* Inode 8 written as zeros, whole (its large part too). check_journal.c */
errcode_t chk_zero_journal_inode(struct chk_ctx *ctx);
void chk_pass_layout(struct chk_ctx *ctx);		/* check_layout.c */
errcode_t chk_apply_fixes(struct chk_ctx *ctx);		/* check_fix.c */
/* Marks the filesystem clean, or not clean when errors are left, after a
 * round that changed nothing (part of chk_apply_fixes). check_fix.c */
void chk_mark_state(struct chk_ctx *ctx);
/* An unfixed finding that makes the image wrong (not a remark, not a
 * layout gate). check_main.c */
int chk_finding_is_error(const struct e3_finding *f);
void chk_fix_dirs(struct chk_ctx *ctx);			/* check_fix_dirs.c */
/* check_dirent.c: an entry breaking pass 3's rules, and its salvage in
 * buf (prev: offset of the last sound entry, -1 if none); returns the
 * offset to look at next */
int chk_dirent_bad(ext2_filsys fs, const unsigned char *buf, unsigned off,
		   unsigned len);
unsigned chk_dirent_salvage(ext2_filsys fs, unsigned char *buf, unsigned off,
			    int prev, unsigned len);

/* pass 2's merge, EA blocks and owners of blocks claimed twice
 * (check_merge.c) */
errcode_t chk_merge_workers(struct chk_ctx *ctx, struct chk_worker *w, int nw);
void chk_worker_free(struct chk_worker *w);
void chk_trim_worst(struct chk_vec *v, unsigned n, int by_excess);

int chk_inode_used(struct chk_ctx *ctx, ext2_ino_t ino);

/* the bad-block inode (check_badblocks.c): pass 2's check of inode 1, run
 * by the worker of group 0, and the -y fixes of its findings (returns how
 * many it fixed) */
void chk_badblocks_inode(struct chk_worker *w, const struct ext2_inode *in);
unsigned chk_fix_badblocks(struct chk_ctx *ctx);

/* bitmaps and inode tables in bad places (check_relocate.c). what is
 * one of: */
#define CHK_RELOC_BB	0	/* the block bitmap */
#define CHK_RELOC_IB	1	/* the inode bitmap */
#define CHK_RELOC_IT	2	/* the inode table */
/* is group g's piece (or any of its blocks) outside the group? */
int chk_desc_outside(ext2_filsys fs, dgrp_t g, int what);
/* Each piece outside its group: reported, and its location dropped (0)
 * in memory so that no pass reads it. */
errcode_t chk_drop_outside(struct chk_ctx *ctx);
/* was group g's piece dropped? (its location reads 0 then) */
int chk_dropped(const struct chk_ctx *ctx, dgrp_t g, int what);
/* Group g's piece claims block b, which other metadata holds. */
void chk_meta_conflict(struct chk_ctx *ctx, dgrp_t g, int what, blk64_t b);
/* -y: new places for the reported pieces (first of a round's fixes).
 * Non-zero when one could not be moved: the round applies no other fix. */
int chk_relocate(struct chk_ctx *ctx);
/* Before the round's close: dropped locations not moved go back as they
 * were, so the descriptors are never written with a 0. */
void chk_relocate_undo(struct chk_ctx *ctx);

/* group-metadata map (check_super.c) */
errcode_t chk_mark_metadata(struct chk_ctx *ctx);
void chk_progress(struct chk_ctx *ctx, int pass, uint64_t done, uint64_t total);

#endif
