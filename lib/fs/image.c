/*
 * image.c: opening and closing an image — the exclusive lock, refusing
 * what ext3 cannot hold, replaying a pending journal, and wiring the
 * allocator and the journal onto the libext2fs handle.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "image.h"
#include "alloc/alloc.h"
#include "journal/journal.h"
#include "load.h"
#include "image_sane.h"
#include "fixed_clock.h"
#include "journal/fault.h"

/* The feature bits ext3 may carry; anything else is refused by writers. */
#define E3_COMPAT_OK (EXT2_FEATURE_COMPAT_DIR_PREALLOC | \
	EXT2_FEATURE_COMPAT_IMAGIC_INODES | EXT3_FEATURE_COMPAT_HAS_JOURNAL | \
	EXT2_FEATURE_COMPAT_EXT_ATTR | EXT2_FEATURE_COMPAT_RESIZE_INODE | \
	EXT2_FEATURE_COMPAT_DIR_INDEX)
#define E3_INCOMPAT_OK (EXT2_FEATURE_INCOMPAT_FILETYPE | \
	EXT3_FEATURE_INCOMPAT_RECOVER)
#define E3_RO_COMPAT_OK (EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER | \
	EXT2_FEATURE_RO_COMPAT_LARGE_FILE)

void e3_fs_lock(struct e3_image *img)
{
	pthread_mutex_lock(&img->fs_lock);
	/* every operation starts here: with the running transaction full
	 * (a commit in flight), it waits before adding to it */
	if (img->journal)
		e3_journal_op_begin(img->journal);
}

void e3_fs_unlock(struct e3_image *img)
{
	pthread_mutex_unlock(&img->fs_lock);
}

void e3_image_wrote(struct e3_image *img, uint64_t bytes)
{
	uint64_t before;

	if (!img->wb_step)
		return;
	before = __atomic_fetch_add(&img->wb_pending, bytes, __ATOMIC_RELAXED);
	if (before / img->wb_step != (before + bytes) / img->wb_step)
		/* asynchronous: starts writeback of what is dirty, waits
		 * for nothing; a failure only means the fsync does it all */
		(void)sync_file_range(img->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
}

/* Starting writeback early pays on a disk; on tmpfs or ramfs there is
 * nothing to write back. A block device's node lives on devtmpfs, which
 * says TMPFS_MAGIC: the device itself is what counts. Data writes are
 * serialised in user space only where the kernel serialises them anyway
 * (data_lock): a regular file's writes hold its inode lock, a block
 * device's buffered writes do not. */
static void setup_writeback(struct e3_image *img)
{
	struct statfs sf;
	struct stat st;
	int have_st = fstat(img->fd, &st) == 0;

	img->wb_step = 0;
	img->data_serial = have_st && S_ISREG(st.st_mode);
	if (have_st && S_ISBLK(st.st_mode))
		img->wb_step = 8u << 20;
	else if (fstatfs(img->fd, &sf) == 0 && sf.f_type != TMPFS_MAGIC &&
		 sf.f_type != RAMFS_MAGIC)
		img->wb_step = 8u << 20;
}

static const char *const alloc_mode_names[] = {
	[E3_ALLOC_RBTREE] = "rbtree",
	[E3_ALLOC_LIST] = "list",
	[E3_ALLOC_NONE] = "none",
};

errcode_t e3_alloc_mode_parse(const char *name, enum e3_alloc_mode *mode)
{
	for (size_t i = 0; i < sizeof(alloc_mode_names) / sizeof(*alloc_mode_names); i++)
		if (strcmp(name, alloc_mode_names[i]) == 0) {
			*mode = (enum e3_alloc_mode)i;
			return 0;
		}
	return E3_BAD_ALLOC_MODE;
}

const char *e3_alloc_mode_name(enum e3_alloc_mode mode)
{
	if ((unsigned)mode < sizeof(alloc_mode_names) / sizeof(*alloc_mode_names))
		return alloc_mode_names[mode];
	return "?";
}

/* ext4-only (or unknown) features: a writer would corrupt them. */
static errcode_t check_features(ext2_filsys fs)
{
	struct ext2_super_block *sb = fs->super;

	if ((sb->s_feature_compat & ~E3_COMPAT_OK) ||
	    (sb->s_feature_incompat & ~E3_INCOMPAT_OK) ||
	    (sb->s_feature_ro_compat & ~E3_RO_COMPAT_OK))
		return E3_UNSUPPORTED_FEATURE;
	return 0;
}

/* The kernel, e2fsck, e3fsck and our own journal recovery record in
 * s_state what they know: an image with errors, or not checked since a
 * crash, may have bitmaps that call in-use blocks free, and a writer
 * would hand those blocks to new files (two files sharing data). So a
 * writer refuses it, as resize2fs does, unless forced. */
static errcode_t check_clean(const struct e3_image *img)
{
	const struct ext2_super_block *sb = img->fs->super;

	if (!(img->flags & E3_OPEN_WRITE) || (img->flags & E3_OPEN_FORCE))
		return 0;
	if ((sb->s_state & EXT2_ERROR_FS) || !(sb->s_state & EXT2_VALID_FS))
		return E3_FS_NOT_CLEAN;
	return 0;
}

/* A superblock or descriptors that misplace a group's metadata would have
 * replay and the writer read and write the wrong blocks (ext2fs_open2
 * does not look), and an image shorter than its filesystem fails reads
 * half way through a copy; the kernel checks all three before it replays
 * or mounts, and so do we. */
static errcode_t check_layout(const struct e3_image *img)
{
	ext2_filsys fs = img->fs;
	blk64_t have;
	errcode_t err = e3_image_check_super(fs);

	if (err)
		return err;
	if (ext2fs_get_device_size2(img->path, fs->blocksize, &have) == 0 &&
	    have < ext2fs_blocks_count(fs->super))
		return E3_IMAGE_TRUNCATED;
	return ext2fs_check_desc(fs);
}

/* SOURCE_DATE_EPOCH makes every timestamp libext2fs writes reproducible
 * (0 with fixed_clock.c's help). A value ext3 cannot store is refused,
 * not wrapped, and a writer refuses one its inodes cannot hold. */
static errcode_t apply_source_date_epoch(struct e3_image *img, ext2_filsys fs)
{
	int64_t v;
	errcode_t err = e3_source_date_epoch(&v);

	if (err)
		return err;
	if (v < 0)
		return 0;
	if ((img->flags & E3_OPEN_WRITE) &&
	    (err = e3_epoch_fits_inodes(v, EXT2_INODE_SIZE(fs->super))))
		return err;
	fs->now = (time_t)v;
	img->clock = v;
	return 0;
}

static errcode_t open_fs(struct e3_image *img, int rw, ext2_filsys *ret)
{
	int flags = EXT2_FLAG_64BITS | (rw ? EXT2_FLAG_RW : 0);
	errcode_t err;

	err = ext2fs_open2(img->path, NULL, flags, 0, 0, unix_io_manager, ret);
	if (err == EXT2_ET_BAD_MAGIC || err == EXT2_ET_SB_CSUM_INVALID ||
	    err == EXT2_ET_CORRUPT_SUPERBLOCK)
		return E3_NOT_EXT3;
	/* the superblock or the descriptors lie past the file's end: an
	 * image cut short (a format killed before it was extended, a
	 * partial copy), which libext2fs reports as a bare short read */
	if (err == EXT2_ET_SHORT_READ)
		return E3_IMAGE_TRUNCATED;
	if (err)
		return err;
	err = apply_source_date_epoch(img, *ret);
	if (err)
		ext2fs_close_free(ret);
	return err;
}

errcode_t e3_image_check_mounted(const char *path, int *ro)
{
	int mflags = 0;
	errcode_t err = ext2fs_check_if_mounted(path, &mflags);

	if (ro)
		*ro = 0;
	if (err == 0 && (mflags & EXT2_MF_MOUNTED)) {
		if (ro)
			*ro = !!(mflags & EXT2_MF_READONLY);
		return E3_MOUNTED;
	}
	return 0;
}

static errcode_t refuse_mounted(struct e3_image *img)
{
	return e3_image_check_mounted(img->path, NULL);
}

errcode_t e3_image_flock(int fd, int write)
{
	if (flock(fd, (write ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? E3_IMAGE_LOCKED : errno;
	e3_fault_locked();
	return 0;
}

/* A pending journal is replayed by writers and, when asked, by readers;
 * otherwise a reader refuses rather than show a half-updated image. */
static errcode_t replay_if_needed(struct e3_image *img)
{
	struct e3_replay_report rep;
	int want_rw = img->flags & E3_OPEN_WRITE;
	errcode_t err;

	if (!e3_journal_pending(img->fs))
		return 0;
	if (!(img->flags & (E3_OPEN_WRITE | E3_OPEN_REPLAY)))
		return E3_NEEDS_RECOVERY;
	if (!want_rw) {
		/* read-only open that may replay: replaying writes, so it
		 * needs what a writer needs — the exclusive lock (no other
		 * reader is looking) and an unmounted image — then reopens
		 * read-write */
		if (flock(img->fd, LOCK_EX | LOCK_NB) < 0)
			return errno == EWOULDBLOCK ? E3_IMAGE_LOCKED : errno;
		err = refuse_mounted(img);
		if (err)
			return err;
		ext2fs_close_free(&img->fs);
		err = open_fs(img, 1, &img->fs);
		if (err == EACCES || err == EROFS || err == EPERM)
			return E3_IMAGE_READONLY;
		if (err)
			return err;
	}
	memset(&rep, 0, sizeof(rep));
	err = e3_journal_replay(img->fs, &rep);
	if (err)
		return err;
	img->report.replayed = 1;
	img->report.transactions = rep.transactions;
	img->report.blocks = rep.blocks;
	if (!want_rw && flock(img->fd, LOCK_SH | LOCK_NB) < 0)
		return errno;
	/* the superblock and descriptors may have changed under fs */
	ext2fs_close_free(&img->fs);
	return open_fs(img, want_rw, &img->fs);
}

static errcode_t lock_image(struct e3_image *img)
{
	int write = img->flags & E3_OPEN_WRITE;
	struct stat st;
	errcode_t err;

	if (stat(img->path, &st) < 0)
		return errno;
	if (S_ISDIR(st.st_mode))
		return E3_IS_DIRECTORY;
	img->fd = open(img->path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (img->fd < 0) {
		if (write && (errno == EACCES || errno == EROFS || errno == EPERM))
			return E3_IMAGE_READONLY;
		return errno;
	}
	err = e3_image_flock(img->fd, write);
	if (err)
		return err;
	return write ? refuse_mounted(img) : 0;
}

errcode_t e3_image_mark_unclean(struct e3_image *img)
{
	ext2_filsys fs = img->fs;
	errcode_t err = 0;

	e3_fs_lock(img);
	if (!img->unclean_on_disk && (fs->super->s_state & EXT2_VALID_FS)) {
		/* the primary superblock alone, now and durably: nothing
		 * else is dirty before the first change */
		fs->super->s_state &= ~EXT2_VALID_FS;
		err = io_channel_write_byte(fs->io, SUPERBLOCK_OFFSET,
					    SUPERBLOCK_SIZE, fs->super);
		if (!err)
			err = io_channel_flush(fs->io);
		if (err)
			fs->super->s_state |= EXT2_VALID_FS;
		else if (fs->orig_super)	/* libext2fs writes only what
						   differs from this copy */
			fs->orig_super->s_state = fs->super->s_state;
	}
	if (!err)
		__atomic_store_n(&img->unclean_on_disk, 1, __ATOMIC_RELEASE);
	e3_fs_unlock(img);
	return err;
}

/* The journal's seal callback, when the running transaction becomes the
 * committing one: what was freed so far is the committing one's. */
static void journal_seal(void *arg)
{
	struct e3_image *img = arg;

	if (img->alloc)
		e3_alloc_seal(img->alloc);
}

/* The journal's commit callback: blocks freed by the committed
 * transaction become allocatable. */
static void journal_committed(void *arg)
{
	struct e3_image *img = arg;

	if (img->alloc)
		e3_alloc_committed(img->alloc);
}

/* The allocator's free callback: blocks libext2fs freed may be in the
 * live log; revoke them before anyone can reuse them (the journal skips
 * blocks it never logged). */
static void alloc_freed(void *arg, blk64_t start, blk64_t n)
{
	struct e3_image *img = arg;

	if (img->journal)
		for (blk64_t b = start; b < start + n; b++)
			e3_journal_revoke(img->journal, b);
}

static errcode_t start_writer(struct e3_image *img)
{
	struct e3_alloc_ops ao = { .freed = alloc_freed, .arg = img };
	struct e3_journal_params jp = {
		.clock = img->clock,
		.commit_interval = img->opts.commit_interval,
		.seal = journal_seal,
		.committed = journal_committed,
		.arg = img,
		.lock = &img->fs_lock,
	};
	errcode_t err;

	err = e3_alloc_create(img->fs, img->opts.alloc, &ao, &img->alloc);
	if (err)
		return err;
	if (ext2fs_has_feature_journal(img->fs->super)) {
		err = e3_journal_start(img->fs, &jp, &img->journal);
		if (err)
			return err;
	}
	return e3_load_init(img);
}

errcode_t e3_image_open(const char *path, const struct e3_open_opts *opts,
			e3_image_t **ret)
{
	struct e3_image *img;
	errcode_t err;

	img = calloc(1, sizeof(*img));
	if (!img)
		return ENOMEM;
	img->fd = -1;
	img->clock = -1;
	if (opts)
		img->opts = *opts;
	img->flags = img->opts.flags;
	{
		/* fs_lock is held for microseconds at a time by many threads:
		 * spinning a little beats a futex sleep and a context switch */
		pthread_mutexattr_t ma;

		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
		pthread_mutex_init(&img->fs_lock, &ma);
		pthread_mutexattr_destroy(&ma);
		/* a plain mutex: its waiters sleep (see data_lock) */
		pthread_mutex_init(&img->data_lock, NULL);
	}
	img->path = strdup(path);
	if (!img->path) {
		err = ENOMEM;
		goto fail;
	}
	err = lock_image(img);
	if (err)
		goto fail;
	setup_writeback(img);
	err = open_fs(img, img->flags & E3_OPEN_WRITE, &img->fs);
	if (err)
		goto fail;
	if ((img->flags & E3_OPEN_WRITE) && (err = check_features(img->fs)))
		goto fail;
	if (((img->flags & E3_OPEN_WRITE) ||
	     ((img->flags & E3_OPEN_REPLAY) && e3_journal_pending(img->fs))) &&
	    (err = check_layout(img)))
		goto fail;
	err = replay_if_needed(img);
	if (!err)
		err = check_clean(img);
	/* a replay may have rewritten the superblock and descriptors */
	if (!err && (img->flags & E3_OPEN_WRITE) && img->report.replayed)
		err = check_layout(img);
	if (!err && (img->flags & E3_OPEN_WRITE))
		err = e3_image_check_root(img->fs);
	if (err)
		goto fail;
	img->fs->priv_data = img;
	img->was_valid = !!(img->fs->super->s_state & EXT2_VALID_FS);
	err = ext2fs_read_bitmaps(img->fs);
	if (err)
		goto fail;
	if (img->flags & E3_OPEN_WRITE) {
		/* --force takes the risk of a bitmap it cannot trust, as it
		 * does of an image marked with errors */
		if (!(img->flags & E3_OPEN_FORCE) &&
		    (err = e3_image_check_bitmaps(img->fs)))
			goto fail;
		err = start_writer(img);
		if (err)
			goto fail;
	}
	*ret = img;
	return 0;
fail:
	e3_image_abort(img);
	return err;
}

static void free_image(struct e3_image *img)
{
	if (img->fd >= 0)
		close(img->fd);	/* drops the flock */
	pthread_mutex_destroy(&img->fs_lock);
	pthread_mutex_destroy(&img->data_lock);
	free(img->path);
	free(img);
}

errcode_t e3_image_close(e3_image_t *img)
{
	return e3_image_close_report(img, NULL);
}

/* the journal's stage, as the public report names it */
static enum e3_close_stage close_stage(enum e3_jstop_stage s)
{
	switch (s) {
	case E3_JSTOP_ABORTED: return E3_CLOSE_EARLIER;
	case E3_JSTOP_COMMIT: return E3_CLOSE_COMMIT;
	case E3_JSTOP_CHECKPOINT: return E3_CLOSE_CHECKPOINT;
	case E3_JSTOP_FINISH: return E3_CLOSE_FINISH;
	default: return E3_CLOSE_DONE;
	}
}

errcode_t e3_image_close_report(e3_image_t *img, struct e3_close_report *r)
{
	struct e3_close_report dummy;
	errcode_t err = 0, err2;
	int lost = 0;	/* the journal failed: fs must not write */

	if (!r)
		r = &dummy;
	memset(r, 0, sizeof(*r));
	if (!img)
		return 0;
	e3_fs_lock(img);
	if (img->load)
		err = e3_load_fini(img);
	if (err)
		r->stage = E3_CLOSE_FILES;
	if (img->journal) {
		struct e3_journal_stop_report jr;

		err2 = e3_journal_stop_report(img->journal, &jr);
		img->journal = NULL;
		lost = err2 != 0;
		r->journal_txns = jr.live;
		r->commits = jr.commits;
		if (err2 && !err)
			r->stage = close_stage(jr.stage);
		if (!err)
			err = err2;
	}
	/* the allocator unhooks itself from fs: before fs is freed */
	if (img->alloc) {
		e3_alloc_destroy(img->alloc);
		img->alloc = NULL;
	}
	/* a clean end of a session without a journal: as clean as before,
	 * once everything else is on disk (flushed and synced first, so a
	 * power cut cannot leave "clean" over stale bitmaps) */
	if (img->fs && !err && !lost && img->unclean_on_disk && img->was_valid) {
		err = ext2fs_flush2(img->fs, 0);
		if (!err) {
			img->fs->super->s_state |= EXT2_VALID_FS;
			ext2fs_mark_super_dirty(img->fs);
		}
	}
	/* Files left open (E3_FILES_OPEN) still leave a consistent image:
	 * without a journal only ext2fs_close2 writes the bitmaps and counts
	 * that match the inodes and entries already on disk. */
	if (img->fs) {
		struct e3_sb_copies sbc = { 0 };

		/* libext2fs' last flush stamps the real time for clock 0 */
		if (!lost && !err && img->clock == 0 &&
		    (img->flags & E3_OPEN_WRITE))
			err = e3_sb_copies_get(img->fs, &sbc);
		err2 = lost ? (ext2fs_free(img->fs), 0) : ext2fs_close2(img->fs, 0);
		img->fs = NULL;
		if (!err2 && sbc.off)
			err2 = e3_sb_copies_zero_wtime(img->fd, &sbc);
		e3_sb_copies_free(&sbc);
		if (!err)
			err = err2;
	}
	if (!err && img->fd >= 0 && (img->flags & E3_OPEN_WRITE) &&
	    fsync(img->fd) < 0)
		err = errno;
	if (err && r->stage == E3_CLOSE_DONE)
		r->stage = E3_CLOSE_FS;
	e3_fs_unlock(img);
	free_image(img);
	return err;
}

void e3_image_abort(e3_image_t *img)
{
	if (!img)
		return;
	if (img->load)
		e3_load_abort(img);
	if (img->journal)
		e3_journal_abort(img->journal);
	if (img->alloc) {	/* unhooks from fs: before fs is freed */
		e3_alloc_destroy(img->alloc);
		img->alloc = NULL;
	}
	if (img->fs) {
		/* drop in-memory changes: nothing more reaches the image */
		img->fs->flags &= ~(EXT2_FLAG_DIRTY | EXT2_FLAG_IB_DIRTY |
				    EXT2_FLAG_BB_DIRTY | EXT2_FLAG_CHANGED);
		ext2fs_free(img->fs);
	}
	free_image(img);
}

const struct e3_open_report *e3_image_open_report(e3_image_t *img)
{
	return &img->report;
}

const char *e3_image_path(e3_image_t *img)
{
	return img->path;
}

ext2_filsys e3_image_fs(e3_image_t *img)
{
	return img->fs;
}
