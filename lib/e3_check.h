/*
 * e3_check.h: public API of the checker (e3fsck): consistency passes,
 * journal handling and layout analysis, with findings returned in a report.
 *
 * The library detects and (when asked) repairs; it never prints. Every
 * finding carries a problem code; e3_problem() gives the message template
 * and what -p/-y do about it, so "would fix" and "fixed" wording comes from
 * one table (lib/check/check_problem.c).
 */
#ifndef E3_CHECK_H
#define E3_CHECK_H

#include <stdint.h>
#include <ext2fs/ext2fs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How far the checker may go. */
enum e3_check_mode {
	E3_CHECK_READONLY = 0,	/* -n: report only, never write */
	E3_CHECK_PREEN,		/* -p: replay, fix what is safe without asking */
	E3_CHECK_YES,		/* -y: fix everything that can be fixed */
};

/* What a problem's fix needs: the mode from which it is applied. */
enum e3_fix_level {
	E3_FIX_NEVER = 0,	/* reported only (layout gates, fatal damage) */
	E3_FIX_PREEN,		/* counts, bitmaps, orphans, dtime: -p and -y */
	E3_FIX_YES,		/* structural repairs: -y only */
};

/* Exit bits, as e2fsck's, plus the layout gate. */
#define E3_EXIT_OK		0
#define E3_EXIT_FIXED		1
#define E3_EXIT_REBOOT		2
#define E3_EXIT_UNCORRECTED	4
#define E3_EXIT_ERROR		8
#define E3_EXIT_USAGE		16
#define E3_EXIT_CANCELED	32
#define E3_EXIT_LAYOUT		64	/* a --max-* layout gate failed */

struct e3_check_progress {
	int pass;			/* 1..8 */
	uint64_t done, total;
};
typedef void (*e3_check_progress_fn)(const struct e3_check_progress *p,
				     void *arg);

struct e3_check_opts {
	enum e3_check_mode mode;
	blk64_t superblock;		/* -b: backup superblock, 0 = primary */
	unsigned blocksize;		/* with -b: 0 = try 1024..4096 */
	int threads;			/* inode-table scan workers, 0 = auto */
	const char *journal_dev;	/* -j: an external journal, or NULL */
	int layout;			/* compute layout figures (pass 8) */
	/* gates; negative = off */
	double max_noncontig;		/* percent, as e2fsck's summary */
	int64_t max_runs;		/* runs of any one file */
	int64_t max_excess_runs;	/* excess runs of any one file */
	unsigned worst;			/* worst files to name, 0 = 10 */
	/* -n on an image that is mounted or that another e3img process
	 * holds: read it anyway (else refused, as -p and -y always are) */
	int force_read;
	/* read-only checks for a caller that holds the image itself (open
	 * through e3_image_open, nothing pending: e3defrag's before-figures):
	 * take and test no lock, and no mount check, which its own open made;
	 * E3_BAD_OPTION with -p or -y */
	int lock_held;
	e3_check_progress_fn progress;	/* may be NULL; called from the
					   calling thread only */
	void *progress_arg;
};
void e3_check_opts_init(struct e3_check_opts *o);

/* One problem found. Which fields mean something depends on the code
 * (the message template names them). */
struct e3_finding {
	int code;			/* E3P_* */
	ext2_ino_t ino, ino2;
	blk64_t blk, blk2;
	uint64_t num, num2;
	dgrp_t group;
	char *name;			/* entry name or feature name, or NULL */
	int fixed;			/* the fix was applied */
};

/* One file in the layout's worst-of lists. */
struct e3_layout_file {
	ext2_ino_t ino;
	uint64_t blocks;		/* blocks in e2fsck's sequence */
	uint32_t runs;			/* physically contiguous runs */
	uint32_t groups;		/* block groups touched */
	uint32_t excess;		/* runs - 1 - (groups - 1), >= 0 */
	char *path;			/* or NULL if not reachable */
};

/* Free-space histogram buckets: [2^i, 2^(i+1)) blocks. */
#define E3_FREEFRAG_BUCKETS 40
#define E3_RUNS_HIST 1024

struct e3_layout {
	/* e2fsck's figures */
	uint32_t inodes_used, inodes_count;	/* from the superblock */
	uint64_t blocks_used, blocks_count;	/* from the superblock */
	uint32_t fragmented_files, fragmented_dirs;
	unsigned noncontig_permille;	/* e2fsck's rounding: 12 = "1.2%" */
	uint32_t ind_files, dind_files, tind_files;
	/* ours, over files with blocks */
	uint64_t files_with_blocks;
	uint64_t total_runs, total_excess;
	uint32_t max_runs, max_excess;
	uint32_t files_with_excess;
	/* files with blocks by runs: [i] has i runs, the last bucket
	 * E3_RUNS_HIST - 1 runs or more (percentiles: e3_layout_runs_pct) */
	uint64_t runs_hist[E3_RUNS_HIST];
	struct e3_layout_file *worst_runs, *worst_excess;
	unsigned n_worst_runs, n_worst_excess;
	/* free space, like e2freefrag */
	uint64_t free_blocks, free_extents;
	uint64_t free_min, free_max;	/* extent sizes in blocks */
	uint64_t hist_extents[E3_FREEFRAG_BUCKETS];
	uint64_t hist_blocks[E3_FREEFRAG_BUCKETS];
	/* gates */
	int gate_failed;		/* bit set: 1 noncontig, 2 runs, 4 excess */
};

#define E3_MOUNT_RO	1
#define E3_MOUNT_RW	2

struct e3_check_report {
	struct e3_finding *findings;
	size_t n_findings, cap_findings;
	size_t n_fixed;			/* findings whose fix was applied */
	size_t n_unfixed;		/* findings left (errors) */
	int journal_replayed;		/* a pending journal was replayed */
	int journal_pending;		/* a replay is pending (-n) */
	int fatal;			/* the check could not complete */
	errcode_t fatal_err;
	char *fatal_what;		/* e.g. the unsupported feature's name */
	blk64_t used_superblock;	/* 0 = primary */
	unsigned rounds;		/* fix rounds run */
	int preen_refused;		/* -p met a problem that needs -y:
					   nothing was fixed */
	int state_changed;		/* -p/-y marked the filesystem clean
					   (or, errors left, not clean) */
	int write_failed;		/* a repair's write failed: that
					   round's findings are not fixed */
	/* what the image lock and the mount table said: refused (fatal,
	 * E3_MOUNTED / E3_IMAGE_LOCKED) or, with force_read, read anyway */
	int mounted;			/* 0, E3_MOUNT_RO or E3_MOUNT_RW */
	int in_use;			/* another e3img process holds it */
	struct e3_layout layout;
	int exit_code;			/* E3_EXIT_* bits */
};

/* Checks (and with mode PREEN/YES repairs) the image at path. Returns 0
 * when the check ran (whatever it found: see rep->exit_code), or an error
 * when it could not run at all (then *ret still holds a report whose
 * fatal fields say why, unless ENOMEM). */
errcode_t e3_check_image(const char *path, const struct e3_check_opts *opts,
			 struct e3_check_report **ret);
void e3_check_report_free(struct e3_check_report *rep);

/* ---- the problem table ------------------------------------------------ */

struct e3_problem {
	int code;
	const char *id;			/* stable short name, for --json */
	int pass;			/* 1..8 */
	enum e3_fix_level fix;
	const char *msg;		/* template: {ino} {ino2} {blk} {blk2}
					   {num} {num2} {grp} {name} */
	const char *fix_msg;		/* "fix", "clear", ... (question) */
};

/* NULL for an unknown code. */
const struct e3_problem *e3_problem(int code);
/* Fills in a finding's message; returns the length it would have had. */
size_t e3_finding_format(const struct e3_finding *f, char *buf, size_t len);

/* Problem codes. Numbers are stable (JSON consumers see the id). */
enum e3_problem_code {
	/* pass 1: superblock and group descriptors */
	E3P_SB_UNUSABLE = 100,		/* primary unusable, backup used */
	E3P_SB_FEATURE_EXT4,
	E3P_SB_GEOMETRY,
	E3P_SB_FREE_BLOCKS,
	E3P_SB_FREE_INODES,
	E3P_SB_INODES_COUNT,
	E3P_SB_FIRST_DATA_BLOCK,
	E3P_GD_BLOCK_BITMAP,
	E3P_GD_INODE_BITMAP,
	E3P_GD_INODE_TABLE,
	E3P_GD_OVERLAP,
	E3P_SB_ERROR_STATE,
	E3P_SB_JOURNAL_FIELDS,
	E3P_SB_LAST_ORPHAN,
	E3P_SB_REV_LEVEL,
	E3P_SB_TRUNCATED,		/* the image is shorter than the fs */
	/* pass 2: inodes */
	E3P_INO_BAD_MODE = 200,
	E3P_INO_RESERVED_MODE,
	E3P_INO_DTIME,
	E3P_INO_ILLEGAL_BLOCK,
	E3P_INO_METADATA_BLOCK,
	E3P_INO_DUP_BLOCK,
	E3P_INO_I_BLOCKS,
	E3P_INO_I_SIZE,
	E3P_INO_BAD_IND,
	E3P_INO_TOO_MANY_BAD,
	E3P_INO_FAST_SYMLINK,
	E3P_INO_DEVICE,
	E3P_INO_ORPHAN,
	E3P_INO_EA_BLOCK_RANGE,
	E3P_INO_EA_HEADER,
	E3P_INO_EA_REFCOUNT,
	E3P_INO_EA_ENTRY,
	E3P_INO_DIR_SIZE,
	E3P_INO_DIR_HOLE,
	E3P_INO_FLAGS_EXTENTS,
	E3P_INO_BAD_SYMLINK_SIZE,
	E3P_INO_IMAGIC,
	E3P_INO_RESIZE_BAD,
	E3P_INO_JOURNAL_MODE,
	E3P_INO_ZERO_DTIME,
	E3P_INO_FIELD,
	E3P_INO_LOW_DTIME,
	E3P_INO_FLAG,
	E3P_INO_EXTRA_ISIZE,
	E3P_INO_EA_IN_INODE,
	E3P_INO_SPECIAL_SIZE,
	E3P_INO_JOURNAL_NOT_CLEAR,	/* inode 8 has data, no journal uses it */
	E3P_INO_QUOTA_NOT_CLEAR,	/* inode 3 or 4 has data (no quota) */
	E3P_INO_EA_NO_FEATURE,		/* an EA block without ext_attr */
	E3P_BB_INODE_INVALID,		/* inode 1's fields are not a list's */
	E3P_BB_ILLEGAL,			/* the bad-block list names a block
					   outside the filesystem */
	E3P_BB_METADATA,		/* ... or group metadata */
	E3P_INO_DIR_EMPTY,		/* a directory without a block */
	E3P_INO_REALLY_DIR,		/* a special file whose block is a
					   directory's first */
	/* pass 3: directories */
	E3P_DIR_BAD_REC_LEN = 300,
	E3P_DIR_BAD_NAME_LEN,
	E3P_DIR_INODE_RANGE,
	E3P_DIR_INODE_UNUSED,
	E3P_DIR_FILETYPE,
	E3P_DIR_MISSING_DOT,
	E3P_DIR_MISSING_DOTDOT,
	E3P_DIR_DUP_NAME,
	E3P_DIR_DOT_ENTRY_OTHER,
	E3P_DIR_NAME_ZERO,
	E3P_DIR_LINK_TO_DIR,
	E3P_DIR_LINK_ROOT,
	E3P_DIR_BAD_NAME,
	E3P_HTREE_ROOT,
	E3P_HTREE_LIMIT,
	E3P_HTREE_COUNT,
	E3P_HTREE_ORDER,
	E3P_HTREE_DEPTH,
	E3P_HTREE_BLOCK,
	E3P_HTREE_NO_FEATURE,
	E3P_HTREE_HASH,
	E3P_HTREE_UNREF,
	E3P_DIR_SET_FILETYPE,
	E3P_DIR_DOT_NUL,		/* '.' or '..' not NUL-terminated */
	E3P_HTREE_NODE,			/* a child of the root is no index node */
	/* pass 4: connectivity */
	E3P_CONN_UNREACHABLE = 400,
	E3P_CONN_DOTDOT,
	E3P_CONN_NO_LOSTFOUND,
	E3P_CONN_ROOT_NOT_DIR,
	E3P_CONN_ROOT_MISSING,
	E3P_CONN_LOSTFOUND_NOT_DIR,
	/* pass 5: reference counts */
	E3P_REF_LINKS = 500,
	E3P_REF_UNATTACHED,
	E3P_REF_UNATTACHED_EMPTY,
	E3P_REF_DIR_NLINK,		/* over 65,000 subdirectories, and
					   no dir_nlink feature */
	/* pass 6: bitmaps and summaries */
	E3P_BMAP_BLOCK_USED = 600,	/* used but marked free */
	E3P_BMAP_BLOCK_FREE,		/* free but marked used */
	E3P_BMAP_INODE_USED,
	E3P_BMAP_INODE_FREE,
	E3P_BMAP_GROUP_FREE_BLOCKS,
	E3P_BMAP_GROUP_FREE_INODES,
	E3P_BMAP_GROUP_DIRS,
	E3P_BMAP_PADDING,
	/* pass 7: journal */
	E3P_JNL_INODE_BAD = 700,
	E3P_JNL_SB_BAD,
	E3P_JNL_PENDING,
	E3P_JNL_DATA_NO_RECOVER,
	E3P_JNL_UNSUPPORTED,
	E3P_JNL_REPLAYED,
	E3P_JNL_EXTERNAL,
	E3P_JNL_RECREATED,		/* after an invalid one was cleared */
	E3P_JNL_NOT_RECREATED,
	E3P_JNL_REPLAY_STOPPED,		/* at a corrupt transaction */
	E3P_JNL_OLD_STYLE,		/* in an ordinary inode, not inode 8 */
	E3P_JNL_ERRNO,			/* s_errno set: an aborted journal */
	E3P_JNL_SB_GEOMETRY,		/* s_first/s_maxlen bad, a log to replay */
	/* pass 8: layout gates */
	E3P_LAYOUT_NONCONTIG = 800,
	E3P_LAYOUT_RUNS,
	E3P_LAYOUT_EXCESS,
};

#ifdef __cplusplus
}
#endif

#endif
