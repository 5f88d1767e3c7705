/*
 * e3img.h: the public API of libe3img — open an ext3 image, load files into
 * it from many threads at once through the reservation allocator, close it.
 * Tools include only this header (and e3_err.h, which it pulls in).
 *
 * Every function returns an errcode_t: 0, a libext2fs code, an errno value or
 * one of ours from e3_err.et. Nothing here prints or exits.
 */
#ifndef E3IMG_H
#define E3IMG_H

#include <stdint.h>
#include <stddef.h>
#include <time.h>
#include <sys/types.h>
#include <ext2fs/ext2fs.h>
#include "e3_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers the com_err tables (ours and libext2fs') so error_message()
 * names every code. Call once at start-up. */
void e3_init_errors(void);

/* ---- SOURCE_DATE_EPOCH (lib/fixed_clock.c) ----------------------------- */

/* The largest epoch ext3's unsigned 32-bit superblock times hold. */
#define E3_EPOCH_MAX 4294967295ULL
/* The one parser for every tool and the library: unset or "" gives
 * *epoch = -1 and 0; decimal digits worth 0..E3_EPOCH_MAX give the value;
 * anything else (a sign, spaces, garbage, past E3_EPOCH_MAX) gives
 * E3_BAD_EPOCH and *epoch = -1. */
errcode_t e3_epoch_parse(const char *s, int64_t *epoch);
/* e3_epoch_parse(getenv("SOURCE_DATE_EPOCH"), epoch). */
errcode_t e3_source_date_epoch(int64_t *epoch);
/* E3_EPOCH_INODE when inodes of inode_size bytes cannot hold a time of
 * epoch (128-byte inodes: signed 32 bits, so past 2038-01-19), else 0. */
errcode_t e3_epoch_fits_inodes(int64_t epoch, unsigned inode_size);

/* ---- allocation modes ------------------------------------------------- */

enum e3_alloc_mode {
	E3_ALLOC_RBTREE = 0,	/* windows in a red-black tree (default) */
	E3_ALLOC_LIST,		/* windows in a sorted list, as 2.6.8-mm4 */
	E3_ALLOC_NONE,		/* no windows: goal, then first free block */
};
errcode_t e3_alloc_mode_parse(const char *name, enum e3_alloc_mode *mode);
const char *e3_alloc_mode_name(enum e3_alloc_mode mode);

/* ---- images ------------------------------------------------------------ */

typedef struct e3_image e3_image_t;

#define E3_OPEN_WRITE	0x1	/* read-write and exclusive (a lock on the file) */
#define E3_OPEN_REPLAY	0x2	/* read-only open: replay a pending journal
				   instead of refusing (writers always replay) */
#define E3_OPEN_FORCE	0x4	/* write even when the superblock says the
				   filesystem has errors or is not clean
				   (otherwise E3_FS_NOT_CLEAN) */

struct e3_open_opts {
	unsigned flags;			/* E3_OPEN_* */
	enum e3_alloc_mode alloc;
	unsigned commit_interval;	/* seconds between timed commits; 0 = 5 */
};

/* What happened while opening: a writer replays a pending journal first. */
struct e3_open_report {
	int replayed;			/* a journal replay ran */
	unsigned transactions;		/* transactions replayed */
	unsigned blocks;		/* blocks written by the replay */
};

errcode_t e3_image_open(const char *path, const struct e3_open_opts *opts,
			e3_image_t **ret);
/* Commits, checkpoints, flushes and unlocks; frees img even on error.
 * Close every e3_file first: files still open make it fail with
 * E3_FILES_OPEN; their inodes stay as created (empty) and their handles
 * are invalid afterwards. */
errcode_t e3_image_close(e3_image_t *img);
/* e3_image_close, saying in *r (not NULL) how far it got, so that a
 * tool can tell what state a failed close left the image in. */
enum e3_close_stage {
	E3_CLOSE_DONE = 0,
	E3_CLOSE_FILES,		/* files were still open (E3_FILES_OPEN) */
	E3_CLOSE_EARLIER,	/* the journal had failed before the close (an
				   operation failed): the image is as of the
				   last commit, which a replay brings back */
	E3_CLOSE_COMMIT,	/* the final commit failed: what was committed
				   before it (journal_txns transactions in
				   the log) is replayed by the next open or
				   e3fsck; the rest is not in the image */
	E3_CLOSE_CHECKPOINT,	/* the final commit is durable, writing it
				   home failed: a replay gives everything */
	E3_CLOSE_FINISH,	/* all written home; clearing the log failed:
				   a replay rewrites the same blocks */
	E3_CLOSE_FS,		/* after the journal (no-journal images, the
				   last flush): the message says */
};
struct e3_close_report {
	enum e3_close_stage stage;
	unsigned journal_txns;	/* committed transactions left in the log */
	uint64_t commits;	/* commits this session made */
};
errcode_t e3_image_close_report(e3_image_t *img, struct e3_close_report *r);
/* Frees img without writing anything more: the image stays as of the last
 * commit (journal replay brings it back to that). */
void e3_image_abort(e3_image_t *img);
const struct e3_open_report *e3_image_open_report(e3_image_t *img);
const char *e3_image_path(e3_image_t *img);
/* The libext2fs handle, for single-threaded readers (e3fsck, e3debugfs).
 * Not to be used while loader threads run. */
ext2_filsys e3_image_fs(e3_image_t *img);

/* ---- bulk load (thread-safe: any thread, any number of open files) ------ */

struct e3_attr {
	uint32_t mode;			/* S_IF* type and 07777 bits */
	uint32_t uid, gid;
	struct timespec atime, mtime, ctime;
};

typedef struct e3_file e3_file_t;

#define E3_SIZE_UNKNOWN UINT64_MAX

errcode_t e3_lookup(e3_image_t *img, ext2_ino_t dir, const char *name,
		    ext2_ino_t *ino);
/* Absolute path inside the image; symlinks are not followed. */
errcode_t e3_namei(e3_image_t *img, const char *path, ext2_ino_t *ino);

errcode_t e3_mkdir(e3_image_t *img, ext2_ino_t parent, const char *name,
		   const struct e3_attr *attr, ext2_ino_t *ino);
/* size_hint: the bytes the file will hold, or E3_SIZE_UNKNOWN. With a hint
 * the file's reservation window is its whole size. */
errcode_t e3_create(e3_image_t *img, ext2_ino_t parent, const char *name,
		    const struct e3_attr *attr, uint64_t size_hint,
		    e3_file_t **ret);
/* e3_create for a file with holes, whose layout the caller knows: blocks
 * is every block the file will take in the image, its data blocks plus the
 * IND/DIND/TIND blocks that map them, counted per data region (a hole
 * does not spare the indirect blocks above the data after it). The window
 * holds all of them, booked now: a hint that falls short leaves the rest
 * to be booked by whichever thread writes the file, when it gets there,
 * and the image then depends on timing. 0: the file has no data. */
errcode_t e3_create_blocks(e3_image_t *img, ext2_ino_t parent,
			   const char *name, const struct e3_attr *attr,
			   uint64_t blocks, e3_file_t **ret);
errcode_t e3_file_write(e3_file_t *f, const void *buf, size_t len);
/* Writes at an offset; the blocks skipped over stay holes. */
errcode_t e3_file_pwrite(e3_file_t *f, const void *buf, size_t len,
			 uint64_t offset);
/* For loaders that read file data in: a buffer for the next write of up
 * to len bytes, owned by f and valid until the next call on f. Fill it
 * and hand it back with e3_file_pwrite_wbuf, which writes it like
 * e3_file_pwrite but without copying it when it can become the file's
 * write buffer as it is: offset a multiple of the block size, the blocks
 * it covers back to back on disk, at most E3_WRITE_BUFFER bytes, and not
 * a continuation of what the write buffer holds. */
errcode_t e3_file_wbuf(e3_file_t *f, size_t len, void **buf);
errcode_t e3_file_pwrite_wbuf(e3_file_t *f, size_t len, uint64_t offset);
/* Sets the size (e.g. a trailing hole) without allocating. */
errcode_t e3_file_set_size(e3_file_t *f, uint64_t size);
ext2_ino_t e3_file_ino(e3_file_t *f);
/* Writes the block map and inode, drops the window; frees f even on error. */
errcode_t e3_file_close(e3_file_t *f);
/* Closes n files (NULLs skipped; each file at most once, like free)
 * taking the image's lock once, not n times: for loaders that finish
 * files in bunches. Their last buffered data goes out in disk order, in
 * one write for files whose buffers meet; when such a write fails, each
 * of its files fails (and is left empty). errs[i] is file i's result,
 * the first error is returned; every file is freed. */
errcode_t e3_file_close_many(e3_file_t **files, size_t n, errcode_t *errs);
/* Writes out what n open files hold in their write buffers (disk order,
 * one write where buffers meet, like close_many) and frees the buffers,
 * leaving the files open: for loaders whose closes come later, in an
 * order of their own (NULLs skipped). A failed write fails the file at
 * its close; the first error is returned. */
errcode_t e3_file_flush_many(e3_file_t **files, size_t n);

errcode_t e3_symlink(e3_image_t *img, ext2_ino_t parent, const char *name,
		     const char *target, const struct e3_attr *attr,
		     ext2_ino_t *ino);
/* A hard link: a new entry for an existing non-directory inode. */
errcode_t e3_link(e3_image_t *img, ext2_ino_t parent, const char *name,
		  ext2_ino_t ino);
/* Character/block devices (rdev), FIFOs and sockets (rdev ignored). */
errcode_t e3_mknod(e3_image_t *img, ext2_ino_t parent, const char *name,
		   const struct e3_attr *attr, dev_t rdev, ext2_ino_t *ino);
/* Extended attribute by its full Linux name ("user.x", "security.selinux",
 * "system.posix_acl_access" with the value in the Linux xattr ACL format). */
errcode_t e3_setxattr(e3_image_t *img, ext2_ino_t ino, const char *name,
		      const void *value, size_t size);
/* Mode bits, owner and times of an existing inode (directories are created
 * first and get their final times after their contents). */
errcode_t e3_setattr(e3_image_t *img, ext2_ino_t ino,
		     const struct e3_attr *attr);

/* ---- copy-in (lib/copyin*.c; branch cp) --------------------------------
 * Fills an open image from directory trees, single files, archives
 * (anything libarchive reads; "-" is stdin) and a genext2fs device table.
 * A scanner thread walks the sources in sorted order and creates every
 * inode and entry; workers copy file contents. Events (each file with -v,
 * skips, progress) come back through a callback; nothing here prints. */

enum e3_copyin_event {
	E3_CP_FILE,		/* an entry was copied (for -v) */
	E3_CP_SKIP,		/* an entry was skipped; err says why */
	E3_CP_ERROR,		/* an entry failed; err says why */
	E3_CP_PROGRESS,		/* counters moved (called at most ~10/s) */
	E3_CP_FATAL,		/* the image failed while copying this entry
				   (full, I/O, corrupt): the run stops and
				   returns err, which is the image's error */
};

struct e3_idmap {
	uint32_t from, to;
};

struct e3_copyin_stats {
	uint64_t files;		/* entries of every type created */
	uint64_t bytes;		/* file data bytes copied */
	uint64_t total_files;	/* expected (tree input; 0 when unknown) */
	uint64_t total_bytes;
	uint64_t skipped;	/* entries not copied (bad path, unreadable) */
	uint64_t errors;	/* entries that failed (e.g. name exists) */
	uint64_t uptodate;	/* entries left as they were (update) */
	uint64_t exists;	/* of errors: names that exist (no
				   overwrite nor update asked) */
	unsigned devtab_line;	/* device table lines read (the bad one
				   on E3_DEVTAB_SYNTAX) */
	int devtab_failed;	/* the error is the device table's: it
				   cannot be read, or line devtab_line is
				   bad; found before anything is written */
	/* E3_XATTR_TOO_BIG told by the measure (E3_SOURCE_REFUSED): the
	 * entry's xattr bytes and the image's block size */
	uint64_t bad_xattr_bytes;
	unsigned bad_block;
};

struct e3_copyin_opts {
	const char *dest;		/* directory in the image; NULL = "/" */
	/* per source (NULL, or dests[i] NULL: dest): where srcs[i] goes,
	 * as genext2fs' -d dir:path */
	const char *const *dests;
	unsigned threads;		/* workers; 0 = 1 */
	int overwrite;			/* replace existing non-directories */
	int update;			/* replace only those whose type, size
					   or mtime differ from the source's;
					   leave the others as they are */
	int set_owner;			/* force owner to uid:gid below */
	uint32_t owner_uid, owner_gid;
	const struct e3_idmap *uid_map, *gid_map;
	size_t n_uid_map, n_gid_map;
	int64_t clamp_time;		/* SOURCE_DATE_EPOCH; -1: none */
	const char *devtab;		/* genext2fs device table, or NULL */
	int reproducible;		/* close files in creation order so
					   the layout never depends on which
					   worker finishes first */
	int check_space;		/* refuse before writing if trees
					   do not fit (E3_NO_SPACE_KNOWN,
					   E3_NO_INODES_KNOWN) */
	int no_unpack;			/* a SRC archive is a file to copy */
	int keep_zeros;			/* write all-zero blocks (default:
					   they stay holes) */
	const char *file_contexts;	/* SELinux file_contexts: label
					   every entry copied, or NULL */
	const char *selinux_root;	/* where the image is mounted, for
					   the lookups; NULL: "/" */
	void (*event)(void *ctx, enum e3_copyin_event ev, const char *path,
		      errcode_t err, const struct e3_copyin_stats *st);
	void *event_ctx;
	int no_file_events;		/* no E3_CP_FILE events: a caller
					   that lists nothing (no -v) saves
					   making each entry's path */
};

/* What a set of sources needs, for auto-sizing and the early "image full"
 * check. Archives are read (and decompressed) once to count. */
struct e3_copyin_need {
	uint64_t blocks;	/* data, indirect, directory, xattr, symlink */
	uint64_t inodes;
	uint64_t files, dirs, bytes;
	/* when the measure fails over one source or entry: its path
	 * (malloc'd, the caller frees it; NULL when the error is not one
	 * entry's) and, for E3_XATTR_TOO_BIG, its xattr bytes */
	char *bad_path;
	uint64_t bad_size;
	unsigned bad_block;	/* the block size it was measured for */
};
/* opts (may be NULL): no_unpack is honoured. */
errcode_t e3_copyin_measure(const char *const *srcs, size_t nsrcs,
			    unsigned blocksize, unsigned inode_size,
			    const struct e3_copyin_opts *opts,
			    struct e3_copyin_need *need);

struct e3_mkfs_params;
struct e3_mkfs_geometry;
/* e3mkfs -d ... auto[+N%]: fills p->size (and p->inode_count when unset;
 * p->block_size becomes 4096 when unset) with the smallest image whose
 * room after mkfs' own metadata and root's reserve holds need plus
 * slack_percent (and 64 inodes at least when slack_percent > 0), and g with
 * its geometry. Archive files are read once ahead for it; stdin ("-")
 * cannot be: E3_AUTO_NEEDS_TREE. */
errcode_t e3_copyin_auto_size(const char *const *srcs, size_t nsrcs,
			      const struct e3_copyin_opts *opts,
			      unsigned slack_percent,
			      struct e3_mkfs_params *p,
			      struct e3_mkfs_geometry *g,
			      struct e3_copyin_need *need);

/* Copies srcs (in order) into img under opts->dest. Returns 0 when
 * everything was copied (stats->skipped may still be nonzero: those were
 * reported through the callback), else the error that stopped it; the
 * image is left consistent either way once e3_image_close runs. When
 * opts->check_space refuses (E3_NO_SPACE_KNOWN: blocks;
 * E3_NO_INODES_KNOWN: inodes), *need_more and *free_now (if not NULL) say
 * by how much, nothing has been written, and the caller should
 * e3_image_abort to leave the image untouched. */
errcode_t e3_copyin_run(e3_image_t *img, const char *const *srcs,
			size_t nsrcs, const struct e3_copyin_opts *opts,
			struct e3_copyin_stats *stats, uint64_t *need_more,
			uint64_t *free_now);

/* Removes the entry path (any type but a non-empty directory), freeing
 * the inode and its blocks when its last link goes. For --overwrite.
 * E3_FILE_BUSY: that last link is a file still open (e3_create'd, not
 * yet closed); E3_FILE_BLOCKS_BAD: its blocks are not all its own (its
 * map or EA block names metadata, the journal, a free block, one block
 * twice, or an EA block that is not one). Either way nothing is changed. */
errcode_t e3_remove(e3_image_t *img, ext2_ino_t dir, const char *name);

/* Rewrites each listed directory as `e2fsck -fD` would: with dir_index,
 * those over one block get an htree index (kernel-readable), the others
 * e2fsck's entry order; without it, all are packed in e2fsck's order
 * (htree.c says exactly how). No file may be open. */
errcode_t e3_htree_build_all(e3_image_t *img, const ext2_ino_t *dirs,
			     size_t ndirs);


/* ---- journal recovery (for readers that replay: e3fsck, e3debugfs) ---- */

struct e3_replay_report {
	unsigned transactions;		/* committed transactions replayed */
	unsigned blocks;		/* blocks copied to their home */
	unsigned revoked;		/* blocks skipped because revoked */
	uint32_t first_tid, last_tid;
};
/* Nonzero when fs has an internal journal with needs_recovery set or a
 * non-empty log. */
int e3_journal_pending(ext2_filsys fs);
/* Replays fs's internal journal (scan, revoke, replay as e2fsck does), then
 * clears needs_recovery and empties the log. fs must be open read-write
 * through the plain unix I/O manager; callers reopen fs afterwards, since
 * the superblock and group descriptors may have changed under it. */
errcode_t e3_journal_replay(ext2_filsys fs, struct e3_replay_report *rep);


/* ---- e3debugfs' needs (lib/view_open.c, lib/shell_ops.c; branch debugfs)
 * A view for readers that never write, and the journaled changes the
 * shell makes that the load API above lacks. */

#define E3_VIEW_NO_BITMAPS	0x1	/* do not read the bitmaps (debugfs -c) */
#define E3_VIEW_NO_REPLAY	0x2	/* show the image as it is on disk even
					   with a pending journal */
/* Opens path read-only under a shared lock (never beside an e3img
 * writer). A pending journal is replayed in memory: *fs shows the
 * replayed filesystem, *replayed is 1 and rep says what was replayed,
 * and nothing is written to the image. superblock and blocksize are
 * ext2fs_open2's (0, 0: the primary). Close *fs with ext2fs_close_free;
 * no other thread may use it. */
errcode_t e3_view_open(const char *path, unsigned flags, blk64_t superblock,
		       unsigned blocksize, ext2_filsys *fs,
		       struct e3_replay_report *rep, int *replayed);
/* Removes the empty directory name from dir (its ".." link from dir
 * too): ENOTEMPTY, E3_NOT_DIR, E3_NOT_FOUND, or E3_FILE_BLOCKS_BAD when
 * its map is damaged; nothing changed then. */
errcode_t e3_rmdir(e3_image_t *img, ext2_ino_t dir, const char *name);
/* Writes inode ino as given (size bytes of it, at most the image's inode
 * size), journaled: for field edits (set_inode_field). */
errcode_t e3_inode_write(e3_image_t *img, ext2_ino_t ino,
			 const struct ext2_inode *inode, size_t size);
/* Removes the extended attribute name of ino (ENODATA: it has none such),
 * journaled; an EA block left empty is freed. */
errcode_t e3_removexattr(e3_image_t *img, ext2_ino_t ino, const char *name);
/* Replaces the primary superblock's fields with sb's, journaled (the
 * backups are not rewritten): for set_super_value. A change to what the
 * image is made of (counts, sizes, features, the journal inode) is
 * refused with E3_BAD_OPTION. */
errcode_t e3_super_write(e3_image_t *img, const struct ext2_super_block *sb);
/* Frees the blocks of a regular file from logical block
 * start to end (inclusive; ~0 for "to the end") and any map blocks left
 * empty, as ext2fs_punch does, journaled. The size stays. E3_FILE_BUSY
 * for a file still open, E3_FILE_BLOCKS_BAD for a damaged map. */
errcode_t e3_punch(e3_image_t *img, ext2_ino_t ino, uint64_t start,
		   uint64_t end);
/* The allocator's validator (windows ordered, not overlapping, inside
 * the filesystem, counts consistent): 0, or E3_RSV_TREE_BAD with the
 * reason in why; *windows: windows booked now; *mode: the allocation
 * mode. E3_IMAGE_READONLY for an image not open for writing. */
errcode_t e3_rsv_check(e3_image_t *img, char *why, size_t whylen,
		       uint64_t *windows, enum e3_alloc_mode *mode);
/* Replaces group g's descriptor with gd as given, journaled: for
 * set_bg, which may write any value (an inconsistent one is e3fsck's to
 * find). set_csum: recompute its checksum where the filesystem keeps one
 * (gdt_csum). EXT2_ET_INVALID_ARGUMENT past the last group. */
errcode_t e3_group_desc_write(e3_image_t *img, dgrp_t g,
			      const struct ext2_group_desc *gd, int set_csum);
/* debugfs' kill_file: frees inode ino and its blocks (data, map, its
 * share of an EA block), journaled, and leaves every directory entry
 * naming it (e3fsck then finds entries pointing at a deleted inode).
 * E3_BAD_OPTION for a reserved inode (the root and the journal among
 * them), E3_NOT_FOUND for one not in use, E3_FILE_BUSY for a file still
 * open, E3_FILE_BLOCKS_BAD for a damaged map; nothing changed then. */
errcode_t e3_kill_file(e3_image_t *img, ext2_ino_t ino);
/* Commits the running transaction now (no checkpoint): what was done so
 * far survives a kill. */
errcode_t e3_image_commit(e3_image_t *img);

#ifdef __cplusplus
}
#endif

#include "e3_mkfs.h"
#include "e3_check.h"
#include "e3_inspect.h"
#include "e3_defrag.h"
#endif
