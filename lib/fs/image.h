/*
 * image.h: the private state of an open image, shared by the files of
 * lib/fs/ and by the engines above (mkfs, copyin, defrag). The allocator
 * and the journal below never see it: the image hands them what they need
 * (struct e3_alloc_ops, struct e3_journal_params). Tools never include
 * this.
 *
 * LOCKING — the one place where lock order is written down.
 *
 *   fs_lock      (struct e3_image)  every call into libext2fs on img->fs,
 *                                   every field tagged [fs_lock], and the
 *                                   journal's running transaction.
 *   rsv_lock     (struct e3_alloc)  the reservation window tree/list.
 *   group bitmap (struct e3_alloc)  bits are claimed with atomic ops; no lock.
 *   file->lock   (struct e3_file)   one open file's block map and buffers
 *                                   (a file is normally used by one thread).
 *
 *   defer_lock   (struct e3_alloc)  blocks freed in the running transaction
 *                                   (a leaf, taken under any of the above).
 *   data_lock    (struct e3_image)  one long pwritev of file data into
 *                                   img->fd at a time, short ones behind
 *                                   it (a leaf, taken under any of the
 *                                   above or none).
 *
 *   Order: file->lock  ->  fs_lock  ->  rsv_lock  (-> defer_lock).
 *   Never take fs_lock while holding rsv_lock. Loaded files' data is
 *   written with pwritev(img->fd) under data_lock, never under fs_lock
 *   (file.c: data_pwritev).
 *
 *   The journal's commit (lib/journal, given &fs_lock in its params):
 *   e3_op_end may release fs_lock and take it back before it returns — a
 *   commit it starts writes and flushes the log unlocked while the other
 *   threads' operations fill the next transaction — so after e3_op_end
 *   nothing read under fs_lock before it may be trusted. Calls that need
 *   the log quiet (e3_op_end with a full transaction, e3_journal_commit,
 *   e3_journal_reserve, stop at close) wait for that commit on a
 *   condition variable with fs_lock, releasing it meanwhile: call them
 *   at operation boundaries only (reserve: before the operation writes).
 *   e3_fs_lock itself, when the running transaction is full, waits the
 *   same way for the commit in flight (or starts the commit) before it
 *   returns, so that no operation adds to a full transaction. Locks held
 *   above fs_lock (file->lock) stay held across the wait. One commit is
 *   in flight at a time.
 */
#ifndef E3_IMAGE_H
#define E3_IMAGE_H

#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>
#include "e3img.h"

struct e3_alloc;
struct e3_journal;
struct e3_load;

struct e3_image {
	/* First member: the allocator's libext2fs hooks find it from
	 * fs->priv_data (see struct e3_alloc_ops). */
	struct e3_alloc *alloc;		/* own locks; NULL when read-only */
	char *path;
	int fd;				/* O_RDWR (or O_RDONLY) image file:
					   holds the flock, file data pwrite */
	unsigned flags;			/* E3_OPEN_* */
	struct e3_open_opts opts;
	struct e3_open_report report;

	/* SOURCE_DATE_EPOCH: the clock every time the image gets is fixed
	 * at (fs->now too, but 0 there means the real clock); -1: none */
	int64_t clock;
	pthread_mutex_t fs_lock;
	ext2_filsys fs;			/* [fs_lock]; fs->priv_data == this */
	struct e3_journal *journal;	/* [fs_lock]; NULL without a journal */
	struct e3_load *load;		/* load-layer state, own locks */
	/* file data written since the kernel was last told to start writing
	 * it back (atomic); wb_step 0: the image lives in memory (tmpfs) */
	uint64_t wb_pending;
	uint64_t wb_step;		/* fixed at open */
	/* Without a journal the superblock says "not clean" on disk from the
	 * first change to a successful close, as the kernel's ext2 does while
	 * mounted: a writer killed half way leaves an image that writers
	 * refuse until it is checked. */
	int was_valid;			/* fixed at open: VALID_FS then */
	int unclean_on_disk;		/* [fs_lock] (read unlocked: set once) */
	/* held across each long pwritev of file data (file.c,
	 * data_pwritev), and across a short one while a long one is in
	 * flight, and nothing else: the kernel serialises writes into one
	 * file, and a waiter here sleeps where the kernel's would spin. A
	 * leaf: nothing is taken under it. Only where data_serial (fixed at
	 * open: a regular file; a block device takes parallel writes).
	 * data_long: set by the holder while its write is a long one; read
	 * without the lock (a short writer that misses it only spins in the
	 * kernel, as it would without data_lock). */
	pthread_mutex_t data_lock;
	atomic_int data_long;
	int data_serial;
};

_Static_assert(offsetof(struct e3_image, alloc) == 0,
	       "the allocator's hooks read fs->priv_data as struct e3_alloc **");

static inline struct e3_image *e3_image_of(ext2_filsys fs)
{
	return (struct e3_image *)fs->priv_data;
}

void e3_fs_lock(struct e3_image *img);
void e3_fs_unlock(struct e3_image *img);

/* blocks_owned.c. b may be one of a file's or a directory's blocks:
 * inside the filesystem, not group metadata or the journal's, and marked
 * in use. A block map that names any other is damaged, and writing or
 * freeing through it would hit what the block really holds. Caller holds
 * fs_lock. */
int e3_block_owned(struct e3_image *img, blk64_t b);
/* Every block inode ino's map names (indirect ones included, checked
 * before they are read), and extra when not 0 (its EA block), is its own
 * and named once: else E3_FILE_BLOCKS_BAD. Caller holds fs_lock. */
errcode_t e3_map_owned(struct e3_image *img, ext2_ino_t ino,
		       struct ext2_inode *inode, blk64_t extra);

/* The lock every e3img tool holds on an image while it works, on an fd
 * of the image file: a writer's is exclusive, a reader's shared, so
 * readers share an image but never meet a writer (flock: it ends with
 * the process). E3_IMAGE_LOCKED when another process holds one that
 * conflicts. E3_FAULT=stop-when-locked stops the process here. */
errcode_t e3_image_flock(int fd, int write);
/* E3_MOUNTED when the kernel has path mounted, read-only (*ro set, when
 * ro is not NULL) or read-write; 0 otherwise, or when it cannot tell. A
 * writer refuses a mounted image: the kernel caches what it read and
 * writes its own view back. */
errcode_t e3_image_check_mounted(const char *path, int *ro);

/* Before the first change to an image without a journal: VALID_FS off on
 * disk (see unclean_on_disk). Takes fs_lock; a no-op after the first. */
errcode_t e3_image_mark_unclean(struct e3_image *img);

/* load.c. Files being written hold back timed commits (e3_op_end): a
 * loader that keeps files open all along asks here, under fs_lock,
 * whether the running transaction wants a commit (nearly full or, with
 * by_time, the interval passed; pending: blocks the closes of its open
 * files will add, counted in) while some file is unfinished; if so it
 * closes every file it has open and calls e3_load_commit, which commits
 * when no file is left unfinished (else nothing: 0). */
int e3_load_commit_wanted(struct e3_image *img, int by_time,
			  uint64_t pending);
errcode_t e3_load_commit(struct e3_image *img);
/* The journal's transaction limit in blocks (0: none), for a loader
 * that must decide when to finish its files from its own count. */
uint64_t e3_load_txn_limit(struct e3_image *img);

/* bytes of file data were written to the image with pwrite: every
 * wb_step bytes the kernel is asked to start writing them out, so that a
 * journal commit's fsync (which stops every writer) finds most of the
 * data on disk already. Any thread, no lock. */
void e3_image_wrote(struct e3_image *img, uint64_t bytes);

#endif
