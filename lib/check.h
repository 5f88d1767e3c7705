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

/* what pass 2 learned about one inode */
#define CI_USED		0x01	/* links_count != 0 (or reserved and valid) */
#define CI_DIR		0x02
#define CI_BAD		0x04	/* to be cleared: entries naming it are bad */
#define CI_REACHED	0x08	/* pass 4: reachable from the root */
#define CI_HAS_BLOCKS	0x10
#define CI_INDEX	0x20	/* htree directory */
#define CI_ORPHAN	0x40

struct chk_ino {
	uint16_t mode;
	uint16_t links;		/* i_links_count */
	uint8_t flags;		/* CI_* */
	uint32_t refs;		/* entries naming it (pass 3) */
	ext2_ino_t parent;	/* directory whose entry names it first */
	ext2_ino_t dotdot;	/* its '..' entry (directories) */
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
	struct chk_vec worst_runs, worst_excess; /* struct e3_layout_file */
	struct e3_layout lay;		/* partial sums */
	unsigned char *ibuf, *bbuf[4];	/* inode table chunk, block buffers */
	errcode_t err;
};

struct chk_ea_ref {
	blk64_t blk;
	ext2_ino_t ino;
};

struct chk_ctx {
	const char *path;
	struct e3_check_opts opts;
	struct e3_check_report *rep;
	ext2_filsys fs;
	int fd;				/* read-only fd for raw reads */
	unsigned bs;			/* block size */
	blk64_t nblocks;
	ext2_ino_t ninodes;
	unsigned isize;			/* on-disk inode size */
	struct chk_ino *ino;		/* [ninodes + 1] */
	struct chk_bits meta;		/* group metadata blocks */
	struct chk_bits used;		/* computed block use (meta included) */
	struct chk_bits dup;		/* blocks claimed twice */
	struct chk_vec dblks;		/* all directory blocks, sorted */
	struct chk_vec ea;		/* EA block references */
	int bad_geometry;		/* pass 1 found the groups unusable */
	int fixing;			/* this round may write */
	unsigned changed;		/* fixes applied this round */
	ext2_ino_t lost_found;
	uint64_t computed_free_blocks, computed_free_inodes;
	int preen_refused;		/* -p met a problem that needs -y */
};

#define CHK_ITABLE_CHUNK 64	/* inode-table blocks per read */
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

/* ---- the passes ---- */
errcode_t chk_open(struct chk_ctx *ctx);		/* check_super.c */
void chk_pass_super(struct chk_ctx *ctx);		/* check_super.c */
errcode_t chk_pass_inodes(struct chk_ctx *ctx);		/* check_inodes.c */
errcode_t chk_pass_dirs(struct chk_ctx *ctx);		/* check_dirs.c */
void chk_pass_connect(struct chk_ctx *ctx);		/* check_connect.c */
void chk_pass_refs(struct chk_ctx *ctx);		/* check_refs.c */
errcode_t chk_pass_bitmaps(struct chk_ctx *ctx);	/* check_bitmaps.c */
errcode_t chk_pass_journal(struct chk_ctx *ctx);	/* check_journal.c */
void chk_pass_layout(struct chk_ctx *ctx);		/* check_layout.c */
errcode_t chk_apply_fixes(struct chk_ctx *ctx);		/* check_fix.c */
void chk_fix_dirs(struct chk_ctx *ctx);			/* check_fix_dirs.c */

/* pass 2's merge, EA blocks and owners of blocks claimed twice
 * (check_merge.c) */
errcode_t chk_merge_workers(struct chk_ctx *ctx, struct chk_worker *w, int nw);
void chk_worker_free(struct chk_worker *w);
void chk_trim_worst(struct chk_vec *v, unsigned n, int by_excess);

int chk_inode_used(struct chk_ctx *ctx, ext2_ino_t ino);

/* group-metadata map (check_super.c) */
errcode_t chk_mark_metadata(struct chk_ctx *ctx);
void chk_progress(struct chk_ctx *ctx, int pass, uint64_t done, uint64_t total);

#endif
