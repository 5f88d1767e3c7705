/*
 * copyin_tree.c: copying a directory tree (or one file) into the image.
 * Directories are read whole, sorted bytewise and visited depth first
 * through openat/fstatat (never chdir), so the image does not depend on
 * readdir order or source inode numbers. Regular files are opened and
 * created here, in that order, then queued: a worker copies their data
 * region by region (SEEK_DATA/SEEK_HOLE), so holes stay holes.
 *
 * A worker also opens the source file: the scanner's thread is the one
 * every other waits on, and an open costs as much as a third of its work
 * per file. A file the worker cannot open is then closed empty and its
 * entry removed again, so the image ends as if it had been skipped. In
 * reproducible mode that removal is made by the scanner when it closes
 * the file, in creation order (cp_close_oldest), so it happens at the
 * same point of the walk whatever -j. That holds only where the name was
 * free: a file it would replace (--overwrite) must stay when the source
 * cannot be read, so the scanner opens those, and files with xattrs still
 * to read or with other links (a later name would be linked to it). So
 * does it those its mode says we cannot read: each removal reads the
 * whole directory again, and many unreadable files in one big directory
 * would cost O(n^2) (20,000 files, half of them mode 000: 1.85 s). And
 * sparse files: their windows are counted from their data regions, which
 * only an open file tells (they are few; a window short of the file would
 * make the image depend on timing, alloc.h DETERMINISM).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "fs/image.h"
#include "copyin.h"

/* A source directory open while its files wait for the workers to open
 * them: the last reference closes it. */
struct cp_dir {
	int fd;
	unsigned refs;			/* [atomic] */
};

static struct cp_dir *dir_new(int fd)
{
	struct cp_dir *d = malloc(sizeof(*d));

	if (d) {
		d->fd = fd;
		d->refs = 1;
	}
	return d;
}

static struct cp_dir *dir_get(struct cp_dir *d)
{
	__atomic_fetch_add(&d->refs, 1, __ATOMIC_RELAXED);
	return d;
}

static void dir_put(struct cp_dir *d)
{
	if (d && __atomic_sub_fetch(&d->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		close(d->fd);
		free(d);
	}
}

/* ---- xattrs ---------------------------------------------------------------- */

/* The namespaces ext3 stores; others (e.g. system.nfs4_acl) are left out. */
static int wanted_xattr(const char *name)
{
	return strncmp(name, "user.", 5) == 0 ||
	       strncmp(name, "trusted.", 8) == 0 ||
	       strncmp(name, "security.", 9) == 0 ||
	       strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

/* Reads every xattr of fd (fd >= 0) or of path (not followed). Names are
 * sorted so the image does not depend on the source's listing order. */
static errcode_t read_xattrs(int fd, const char *path, struct cp_xattrs *x)
{
	char small[1024], *list = small, *names = NULL, *val = NULL;
	char **sorted = NULL;
	ssize_t len, vlen;
	size_t n = 0;
	errcode_t err = 0;

	/* Most files have no xattrs or a short list: one call, not two. */
	len = fd >= 0 ? flistxattr(fd, small, sizeof(small))
		      : llistxattr(path, small, sizeof(small));
	if (len < 0 && errno == ERANGE) {
		len = fd >= 0 ? flistxattr(fd, NULL, 0)
			      : llistxattr(path, NULL, 0);
		if (len <= 0)
			return (len < 0 && errno != ENOTSUP) ? errno : 0;
		list = names = malloc(len + 1);
		if (!names)
			return ENOMEM;
		len = fd >= 0 ? flistxattr(fd, names, len)
			      : llistxattr(path, names, len);
	}
	if (len <= 0) {
		err = (len < 0 && errno != ENOTSUP) ? errno : 0;
		goto out;
	}
	sorted = malloc((len + 1) * sizeof(*sorted));
	if (!sorted) {
		err = ENOMEM;
		goto out;
	}
	for (char *p = list; p < list + len; p += strlen(p) + 1)
		if (wanted_xattr(p))
			sorted[n++] = p;
	qsort(sorted, n, sizeof(*sorted), cp_strcmp_ptr);
	val = malloc(XATTR_SIZE_MAX);
	if (!val) {
		err = ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && !err; i++) {
		vlen = fd >= 0 ? fgetxattr(fd, sorted[i], val, XATTR_SIZE_MAX)
			       : lgetxattr(path, sorted[i], val, XATTR_SIZE_MAX);
		if (vlen < 0) {
			if (errno == ENODATA)
				continue;	/* removed meanwhile */
			err = errno;
			break;
		}
		err = cp_xattrs_add(x, sorted[i], val, vlen);
	}
out:
	free(val);
	free(sorted);
	free(names);
	return err;
}

int cp_strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- file data (workers) --------------------------------------------------- */

/* A regular source file is opened by name long after it was stat'ed: if
 * a FIFO or device took its place meanwhile, the open must not block
 * (reading it then fails and is reported); O_NONBLOCK changes nothing
 * for a regular file. */
#define SRC_OPEN_FLAGS (O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK)

/* How a file's data copy ended (ordered mode). */
enum { JOB_OK = 1, JOB_SRC_ERR = 2, JOB_IMG_ERR = 3 };

struct file_job {
	struct cp_ctx *c;
	e3_file_t *f;
	int fd;				/* -1: the worker opens it */
	struct cp_dir *dir;		/* where, until it is opened */
	const char *name;		/* the last component of path */
	ext2_ino_t parent;		/* the image directory it is in */
	errcode_t open_err;		/* the worker could not open it */
	int *noatime;			/* cp_openat's latch */
	uint64_t size;
	int dense;			/* as many bytes on disk as in size */
	uint64_t close_blocks;		/* journal blocks its close may take */
	uint64_t copied;		/* data bytes (holes left out) */
	char *path;			/* in the same allocation, after it */
	/* ordered mode: the worker leaves the close to the scanner */
	int done;			/* [c->order_lock] 0 or a JOB_ state */
	errcode_t err;			/* [c->order_lock] */
	struct file_job *next;		/* scanner's FIFO; in c->job_pool */
	struct file_job *bnext;		/* the rest of its batch */
	int pooled;			/* room for JOB_PATH_ROOM path bytes:
					   goes back to c->job_pool */
};

/* Jobs whose path fits this many bytes come from and go back to
 * c->job_pool (at most JOB_POOL_MAX of them, 24 KiB); longer ones are
 * allocated to size and freed. */
#define JOB_PATH_ROOM 256
#define JOB_POOL_MAX 64

/* A job with room for plen path bytes; the journal blocks its close may
 * take join inflight_blocks in the same stat_lock hold. NULL: ENOMEM
 * (and nothing counted). */
static struct file_job *job_get(struct cp_ctx *c, size_t plen,
				uint64_t close_blocks)
{
	struct file_job *j = NULL;
	int pooled = plen <= JOB_PATH_ROOM;

	pthread_mutex_lock(&c->stat_lock);
	if (pooled && (j = c->job_pool)) {
		c->job_pool = j->next;
		c->njob_pool--;
	}
	c->inflight_blocks += close_blocks;
	pthread_mutex_unlock(&c->stat_lock);
	if (!j && !(j = malloc(sizeof(*j) + (pooled ? JOB_PATH_ROOM : plen)))) {
		pthread_mutex_lock(&c->stat_lock);
		c->inflight_blocks -= close_blocks;
		pthread_mutex_unlock(&c->stat_lock);
		return NULL;
	}
	j->pooled = pooled;
	return j;
}

/* Its close done: its blocks leave inflight_blocks, the file is counted
 * as copied (count: its data bytes, in the same hold), and the job goes
 * back to the pool or is freed. */
static void job_put(struct cp_ctx *c, struct file_job *j, int count)
{
	int keep;

	pthread_mutex_lock(&c->stat_lock);
	if (count)
		cp_count_file_locked(c, j->copied);
	c->inflight_blocks -= j->close_blocks;
	keep = j->pooled && c->njob_pool < JOB_POOL_MAX;
	if (keep) {
		j->next = c->job_pool;
		c->job_pool = j;
		c->njob_pool++;
	}
	pthread_mutex_unlock(&c->stat_lock);
	if (!keep)
		free(j);
}

void cp_tree_jobs_free(struct cp_ctx *c)
{
	struct file_job *j;

	while ((j = c->job_pool) != NULL) {
		c->job_pool = j->next;
		free(j);
	}
	c->njob_pool = 0;
}

/* Holes come in whole blocks of the source's filesystem, 512 bytes at
 * the least and aligned on their size: a stretch of data without one
 * aligned 512-byte run of zeros cannot hide a hole. buf holds the bytes
 * at file offset off; the pieces at either end that are not whole
 * 512-byte units are checked too (a short read can leave off unaligned). */
#define HOLE_MIN 512

static int may_hide_hole(const char *buf, size_t len, off_t off)
{
	size_t at = 0, end;

	while (at < len) {
		end = at + HOLE_MIN - (size_t)((off + (off_t)at) % HOLE_MIN);
		if (end > len)
			end = len;
		if (!buf[at] && !memcmp(buf + at, buf + at + 1, end - at - 1))
			return 1;
		at = end;
	}
	return 0;
}

/* One read's worth, in f's own buffer: written from there when it holds
 * no whole block of zeros (nearly always); otherwise copied out (the
 * buffer is f's until the next call on f) and written without them. */
static errcode_t write_chunk(struct cp_zw *z, void *buf, size_t n,
			     uint64_t off)
{
	void *copy;
	errcode_t err;

	if (z->keep || (!z->carry_len &&
			cp_zero_block_at(buf, n, off, z->bs) == n))
		return e3_file_pwrite_wbuf(z->f, n, off);
	copy = malloc(n);
	if (!copy)
		return ENOMEM;
	memcpy(copy, buf, n);
	err = cp_zw_write(z, copy, n, off);
	free(copy);
	return err;
}

/* Copies [from, to) of fd into f, each read straight into f's buffer
 * (e3_file_wbuf). With *probe set, each read that may hide a hole asks
 * where the next hole is (unless an earlier answer already lies past it):
 * none before the end clears *probe; one inside the read stops the copy
 * there, before that read is written, its offset left in *stopped (when
 * not NULL). Otherwise *stopped = to. */
static errcode_t copy_range(int fd, struct cp_zw *z, off_t from, off_t to,
			    int *probe, off_t *stopped, int *src_err)
{
	off_t off, hole, clear = from;	/* [from, clear): no hole */
	e3_file_t *f = z->f;
	errcode_t err;
	void *buf;
	ssize_t n;

	for (off = from; off < to; off += n) {
		size_t want = (size_t)(to - off);

		if (want > CP_BUF_SIZE)
			want = CP_BUF_SIZE;
		err = e3_file_wbuf(f, want, &buf);
		if (err)
			return err;
		n = pread(fd, buf, want, off);
		if (n <= 0) {
			*src_err = 1;
			return n < 0 ? errno : EIO;	/* shrank under us */
		}
		if (*probe && off + n > clear &&
		    may_hide_hole(buf, (size_t)n, off)) {
			hole = lseek(fd, off, SEEK_HOLE);
			if (hole < 0 || hole >= to)
				*probe = 0;	/* none, or no SEEK_HOLE here */
			else if (hole < off + n)
				break;
			else
				clear = hole;
		}
		err = write_chunk(z, buf, (size_t)n, (uint64_t)off);
		if (err)
			return err;
	}
	if (stopped)
		*stopped = off < to ? off : to;
	return 0;
}

/* Copies the data regions of fd into f, so holes stay holes. *src_err
 * tells a source failure (reported, the copy goes on) from an image
 * failure (fatal). A dense file (as many bytes allocated as its size:
 * tar's test for "not sparse") can still hide a hole behind blocks
 * preallocated past its end or counted for metadata; its data is read
 * as it comes and only where it shows a run of zeros are the holes
 * asked for, a SEEK_DATA/SEEK_HOLE pair per region from there on. */
static errcode_t copy_regions(int fd, e3_file_t *f, uint64_t size, int dense,
			      unsigned bs, int keep_zeros, int *src_err,
			      uint64_t *copied)
{
	off_t off = 0, data, hole;
	int probe = 1, no_probe = 0, all_data;
	struct cp_zw z;
	errcode_t err;

	*src_err = 0;
	*copied = 0;	/* the data, holes left out: what the user sees */
	err = cp_zw_init(&z, f, bs, keep_zeros);
	if (err)
		return err;
	if (dense) {
		err = copy_range(fd, &z, 0, (off_t)size, &probe, &off,
				 src_err);
		if (!err)
			*copied = (uint64_t)off;
	}
	while (!err && !cp_next_region(fd, off, size, &data, &hole)) {
		err = copy_range(fd, &z, data, hole, &no_probe, NULL,
				 src_err);
		if (!err && (uint64_t)data < size)
			*copied += ((uint64_t)hole < size ? (uint64_t)hole :
				    size) - (uint64_t)data;
		off = hole;
		if ((uint64_t)data >= size)
			break;
	}
	if (!err)
		err = cp_zw_finish(&z);
	/* every byte of [0, size) went out through the file's own buffer
	 * (no zero block was held back to become a hole: the carry is
	 * made by the first write that could): its size is size already,
	 * and setting it again is a lock round trip per file */
	all_data = !z.carry && *copied == size;
	cp_zw_free(&z);
	return err || all_data ? err : e3_file_set_size(f, size);
}

/* After the image file is closed (with close_err): the source closed,
 * the file counted, the job freed. err: how the copy went. */
static errcode_t file_job_done(struct file_job *j, errcode_t err,
			       int src_err, errcode_t err2)
{
	struct cp_ctx *c = j->c;

	if (j->fd >= 0)
		close(j->fd);
	dir_put(j->dir);
	if (j->open_err && !err && !err2) {
		/* closed empty: take the entry back, as if skipped */
		err = e3_remove(c->img, j->parent, j->name);
		if (!err)
			cp_skip(c, j->path, j->open_err);
		job_put(c, j, 0);
		return err;
	}
	if (err && src_err) {
		cp_error(c, j->path, err);	/* the entry stays, short */
		err = 0;
	}
	if (!err)
		err = err2;
	job_put(c, j, !err);
	return err;
}

/* A file the scanner left for the worker to open: opened now. Its data
 * copy is skipped when that fails (j->open_err). */
static void job_open(struct file_job *j)
{
	if (j->fd >= 0)
		return;
	j->fd = cp_openat(j->dir->fd, j->name, SRC_OPEN_FLAGS, j->noatime);
	if (j->fd < 0)
		j->open_err = errno;
	dir_put(j->dir);
	j->dir = NULL;
}

/* The end of a file: closed, counted, freed. */
static errcode_t file_job_finish(struct file_job *j, errcode_t err,
				 int src_err)
{
	return file_job_done(j, err, src_err, e3_file_close(j->f));
}

/* Ordered mode: the worker writes a batch's data out itself (one write
 * where files meet, their buffers freed) and hands the files to the
 * scanner, which closes them in creation order. So the scanner's close
 * only commits them, and no file's data waits in memory for it. A failed
 * write fails the file at that close. */
static void hand_over(struct file_job **jobs, size_t n, const errcode_t *errs,
		      const int *src)
{
	struct cp_ctx *c = jobs[0]->c;
	e3_file_t *files[CP_BATCH_FILES];

	for (size_t i = 0; i < n; i++) {
		files[i] = jobs[i]->f;
		if (jobs[i]->fd >= 0) {	/* read: not the scanner's work */
			close(jobs[i]->fd);
			jobs[i]->fd = -1;
		}
	}
	(void)e3_file_flush_many(files, n);
	pthread_mutex_lock(&c->order_lock);
	for (size_t i = 0; i < n; i++) {	/* the scanner may free them */
		jobs[i]->err = errs[i];
		jobs[i]->done = !errs[i] ? JOB_OK :
				src[i] ? JOB_SRC_ERR : JOB_IMG_ERR;
	}
	pthread_cond_broadcast(&c->order_cond);
	pthread_mutex_unlock(&c->order_lock);
}

/* Ordered mode (reproducible images): files are closed by the scanner in
 * creation order, at most CP_ORDER_LAG behind the newest, so the set of
 * live reservation windows at every placement decision — and with it the
 * whole layout — does not depend on which worker finished first. */
/* Small files travel to the workers in batches: one hand-off (a wake-up,
 * a context switch) per file cost more than copying a few KiB. */
/* Closes jobs[0..n) under one image lock, then finishes each: errs[i]
 * and src[i] say how its data copy went. The first error is returned. */
static errcode_t close_jobs(struct file_job **jobs, size_t n,
			    const errcode_t *errs, const int *src)
{
	e3_file_t *files[CP_BATCH_FILES];
	errcode_t cerrs[CP_BATCH_FILES], err = 0, e;

	for (size_t i = 0; i < n; i++)
		files[i] = jobs[i]->f;
	e3_file_close_many(files, n, cerrs);
	for (size_t i = 0; i < n; i++) {
		e = file_job_done(jobs[i], errs[i], src[i], cerrs[i]);
		if (!err)
			err = e;
	}
	return err;
}

static errcode_t batch_run(void *arg, unsigned worker)
{
	struct file_job *j = arg, *jobs[CP_BATCH_FILES];
	errcode_t err = 0, e, errs[CP_BATCH_FILES];
	int src_errs[CP_BATCH_FILES], ordered = j->c->ordered;

	(void)worker;		/* the data is read into each file's buffer */
	/* the data of a few files, then one close for them all: the image's
	 * lock once per batch instead of once per file */
	while (j) {
		size_t n = 0;

		for (; j && n < CP_BATCH_FILES; j = j->bnext, n++) {
			jobs[n] = j;
			job_open(j);
			src_errs[n] = 0;
			errs[n] = j->open_err ? 0 :
				copy_regions(j->fd, j->f, j->size, j->dense,
					     j->c->bs, j->c->o->keep_zeros,
					     &src_errs[n], &j->copied);
		}
		if (ordered) {		/* j was read before they are done */
			hand_over(jobs, n, errs, src_errs);
			continue;
		}
		e = close_jobs(jobs, n, errs, src_errs);
		if (!err)
			err = e;
	}
	return err;
}

/* The workers stopped on an error: the batch's files are closed short
 * (by the scanner in ordered mode, here otherwise), never left open. */
static void abandon_batch(struct cp_ctx *c, struct file_job *j, errcode_t err)
{
	struct file_job *next;

	for (; j; j = next) {
		next = j->bnext;
		if (!c->ordered) {
			file_job_finish(j, err, 0);
			continue;
		}
		pthread_mutex_lock(&c->order_lock);
		j->err = err;
		j->done = JOB_IMG_ERR;
		pthread_cond_broadcast(&c->order_cond);
		pthread_mutex_unlock(&c->order_lock);
	}
}

errcode_t cp_flush_batch(struct cp_ctx *c)
{
	struct file_job *head = c->batch_head;
	errcode_t err;

	if (!head)
		return 0;
	c->batch_head = c->batch_tail = NULL;
	c->batch_n = 0;
	c->batch_bytes = 0;
	err = e3_workq_add(c->wq, batch_run, head);
	if (err)
		abandon_batch(c, head, err);
	return err;
}

errcode_t cp_close_oldest(struct cp_ctx *c, size_t keep)
{
	struct file_job *j, *jobs[CP_BATCH_FILES];
	errcode_t err = 0, e, errs[CP_BATCH_FILES];
	int src[CP_BATCH_FILES];
	size_t n;

	if (c->order_len > keep) {
		err = cp_flush_batch(c);	/* the oldest may be in it */
		if (err)
			return err;
	}
	/* oldest first, a few at a time under one image lock */
	while (!err && c->order_len > keep) {
		pthread_mutex_lock(&c->order_lock);
		for (n = 0, j = c->order_head;
		     n < CP_BATCH_FILES && c->order_len - n > keep;
		     n++, j = j->next) {
			while (!j->done)
				pthread_cond_wait(&c->order_cond,
						  &c->order_lock);
			jobs[n] = j;
			errs[n] = j->err;
			src[n] = j->done == JOB_SRC_ERR;
		}
		pthread_mutex_unlock(&c->order_lock);
		c->order_head = j;
		if (!c->order_head)
			c->order_tail = NULL;
		c->order_len -= n;
		e = close_jobs(jobs, n, errs, src);
		if (!err)
			err = e;
	}
	return err;
}

errcode_t cp_drain(struct cp_ctx *c)
{
	errcode_t err;

	if (c->ordered)
		return cp_close_oldest(c, 0);
	err = cp_flush_batch(c);
	if (!err && c->wq)
		(void)e3_workq_wait(c->wq);	/* a job's error comes back
						   at the end of the run */
	return err;
}

/* Each file's name and empty inode wait in the running transaction until
 * its close gives it its data (e3_op_end holds timed commits back till
 * then), and files are open all along here: when the transaction wants a
 * commit, every file is closed first, so that the commit (and a replay
 * after a crash) holds only whole files. In ordered mode only the
 * transaction's size asks: the interval would make the close points, and
 * with them the layout, depend on timing. Nor does the transaction's
 * size there, which the workers' indirect blocks make grow whenever they
 * get to them: ordered mode counts what the files it made take (their
 * creation and close), the same at any -j, and finishes them at half
 * the limit. Directories, links and special files count too (they are
 * whole when made, but their blocks fill the same transaction). */
static errcode_t commit_point(struct cp_ctx *c, uint64_t close_blocks)
{
	uint64_t inflight, limit;
	errcode_t err;
	int want;

	if (c->ordered) {
		c->drain_est += 3 + close_blocks;	/* + inode, entry,
							   bitmap at create */
		e3_fs_lock(c->img);
		limit = e3_load_txn_limit(c->img);
		e3_fs_unlock(c->img);
		want = limit && c->drain_est >= limit / 2;
	} else {
		/* Asking takes both locks, and this runs once per file: the
		 * journal is asked again only when the files made since
		 * could have added a sixteenth of its limit (64 blocks at
		 * the most). e3_journal_commit_wanted answers yes at three
		 * quarters, so what comes between two asks stays well inside
		 * the quarter it leaves for what is in flight; a timed commit
		 * comes a few files later at the most. */
		if (!c->check_every) {
			e3_fs_lock(c->img);
			limit = e3_load_txn_limit(c->img);
			e3_fs_unlock(c->img);
			c->check_every = limit / 16 < 64 ? limit / 16 : 64;
			if (!c->check_every)
				c->check_every = 1;
		}
		c->check_est += 3 + close_blocks;
		if (c->check_est < c->check_every)
			return 0;
		c->check_est = 0;
		pthread_mutex_lock(&c->stat_lock);
		inflight = c->inflight_blocks;
		pthread_mutex_unlock(&c->stat_lock);
		e3_fs_lock(c->img);
		want = e3_load_commit_wanted(c->img, 1, inflight);
		e3_fs_unlock(c->img);
	}
	if (!want)
		return 0;
	c->drain_est = 0;
	err = cp_drain(c);
	if (err)
		return err;
	e3_fs_lock(c->img);
	err = e3_load_commit(c->img);
	e3_fs_unlock(c->img);
	return err;
}

static errcode_t queue_job(struct cp_ctx *c, struct file_job *j)
{
	uint64_t cost = j->close_blocks;	/* j may be freed once queued */
	errcode_t err;

	if (c->ordered) {
		if (c->order_tail)
			c->order_tail->next = j;
		else
			c->order_head = j;
		c->order_tail = j;
		c->order_len++;
	}
	if (c->batch_tail)
		c->batch_tail->bnext = j;
	else
		c->batch_head = j;
	c->batch_tail = j;
	c->batch_n++;
	c->batch_bytes += j->size;
	err = 0;
	if (c->batch_n >= CP_BATCH_FILES || c->batch_bytes >= CP_BATCH_BYTES)
		err = cp_flush_batch(c);
	/* closes come in bunches (one image lock each); when depends only on
	 * how many files were created, so the layout stays reproducible */
	if (!err && c->ordered && c->order_len >= c->order_lag + CP_BATCH_FILES)
		err = cp_close_oldest(c, c->order_lag);
	return err ? err : commit_point(c, cost);
}

/* ---- entries ------------------------------------------------------------------ */

struct walk {
	struct cp_ctx *c;
	struct cp_xattrs x;
	char *target;			/* readlink buffer */
	struct cp_dir *dir;		/* the directory walked, NULL: none */
	int deferred_opens;		/* files left for the workers to open */
	/* the entry being copied is a directory make_subdirs made: its
	 * inode, and whether this run created it (0: none made) */
	ext2_ino_t premade;
	int premade_created;
	/* the one entry of a file source copied under another name
	 * (c->dest_name, as cp does): its name in the image */
	const char *iname;
};

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p;

	while (a > 1 && dir[a - 1] == '/')	/* "src/" gives "src/x" */
		a--;
	p = malloc(a + b + 2);
	if (p && a == 1 && dir[0] == '/')
		a = 0;				/* "/" gives "/x" */
	if (p) {
		memcpy(p, dir, a);
		p[a] = '/';
		memcpy(p + a + 1, name, b + 1);
	}
	return p;
}

static errcode_t walk_dir(struct walk *w, struct cp_dir *dir, ext2_ino_t dino,
			  const char *path, int fresh);

/* join(dir, name) for every entry of a directory in one buffer: "dir/"
 * once (*at: where names go), then each name written after it (names
 * from readdir are at most NAME_MAX bytes; a longer one is refused by
 * join_name, the caller then uses join). A malloc and a free per entry
 * showed in copy-in profiles. Nothing keeps the path past the entry's
 * copy (jobs and messages copy it). */
static char *join_start(const char *dir, size_t *at)
{
	char *p = join(dir, ""), *q;

	if (!p)
		return NULL;
	*at = strlen(p);
	q = realloc(p, *at + NAME_MAX + 1);
	if (!q)
		free(p);
	return q;
}

static const char *join_name(char *p, size_t at, const char *name)
{
	size_t b = strlen(name);

	if (b > NAME_MAX)
		return NULL;
	memcpy(p + at, name, b + 1);
	return p;
}

/* In a directory this run created, sorted unique names cannot exist
 * yet: the lookup (a scan of the whole directory) is skipped. */
static errcode_t prepare(struct cp_ctx *c, ext2_ino_t parent, const char *name,
			 const char *path, int fresh)
{
	return fresh ? 0 : cp_prepare_name(c, parent, name, path);
}

/* As many bytes on disk as its size says (tar's test for "not sparse"):
 * its window is its size. A sparse file's is counted from its data
 * regions (cp_sparse_blocks), indirect blocks included: its bytes on disk
 * would leave out those above data past a hole, and the worker would
 * then book the rest itself, at a moment that depends on timing. */
static int is_dense(const struct stat *st)
{
	return (uint64_t)st->st_blocks * 512 >= (uint64_t)st->st_size;
}

static errcode_t copy_regular(struct walk *w, int dirfd, const char *name,
			      const struct stat *st, const struct e3_attr *a,
			      ext2_ino_t parent, const char *path,
			      ext2_ino_t *ino, int fresh, int no_xattrs)
{
	struct cp_ctx *c = w->c;
	struct file_job *j;
	ext2_ino_t old;
	char *pcopy;
	size_t plen;
	uint64_t close_blocks;
	int pooled;
	e3_file_t *f;
	errcode_t err;
	int fd, defer, dense = is_dense(st);
	const char *iname = w->iname ? w->iname : name;	/* in the image */

	/* the worker opens it when nothing here needs it open, the name is
	 * free and its mode lets us read it: see the top of the file */
	defer = dense && no_xattrs && st->st_nlink == 1 && w->dir &&
		cp_mode_readable(c, st);
	if (defer && !fresh) {
		err = e3_lookup(c->img, parent, iname, &old);
		if (!err)
			defer = 0;
		else if (cp_is_missing(err))
			fresh = 1;		/* nothing to prepare */
		else
			return err;
	}
	if (defer) {
		fd = -1;
	} else {
		fd = cp_openat(dirfd, name, SRC_OPEN_FLAGS,
			       cp_noatime_for(&c->noatime, st->st_uid));
		if (fd < 0) {
			cp_skip(c, path, errno);
			return 0;
		}
	}
	err = no_xattrs ? 0 : read_xattrs(fd, path, &w->x);
	if (!err)
		err = prepare(c, parent, iname, path, fresh);
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (dense)
		err = e3_create(c->img, parent, iname, a,
				(uint64_t)st->st_size, &f);
	else
		err = e3_create_blocks(c->img, parent, iname, a,
				       cp_sparse_blocks(fd, c->bs,
							(uint64_t)st->st_size),
				       &f);
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	*ino = e3_file_ino(f);
	err = cp_set_xattrs(c, *ino, &w->x, path);
	/* the job and its path in one allocation, from the pool when the
	 * path fits; its close writes its inode, indirect blocks and a
	 * bitmap block: the commit point must leave room for all in flight
	 * (inflight_blocks, counted by job_get) */
	plen = strlen(path) + 1;
	{
		struct cp_ind_state ist = { 0 };
		uint64_t nb = ((uint64_t)st->st_size + c->bs - 1) / c->bs;

		close_blocks = 2 + cp_ind_blocks(c->bs, 0, nb, &ist);
	}
	j = err ? NULL : job_get(c, plen, close_blocks);
	pcopy = j ? memcpy(j + 1, path, plen) : NULL;
	pooled = j ? j->pooled : 0;
	if (!pcopy) {
		e3_file_close(f);
		if (fd >= 0)
			close(fd);
		/* never a file that looks copied and is not */
		return cp_unmake(c, parent, iname, err ? err : ENOMEM);
	}
	*j = (struct file_job){ .c = c, .f = f, .fd = fd,
				.dir = fd < 0 ? dir_get(w->dir) : NULL,
				.parent = parent,
				.noatime = cp_noatime_for(&c->noatime, st->st_uid),
				.size = (uint64_t)st->st_size,
				.dense = dense,
				.close_blocks = close_blocks,
				.path = pcopy,
				.pooled = pooled };
	j->name = pcopy + plen - 1 - strlen(name);
	if (fd < 0)
		w->deferred_opens = 1;
	return queue_job(c, j);
}

static errcode_t copy_other(struct walk *w, int dirfd, const char *name,
			    const struct stat *st, const struct e3_attr *a,
			    ext2_ino_t parent, const char *path,
			    ext2_ino_t *ino, int fresh, int no_xattrs)
{
	struct cp_ctx *c = w->c;
	ssize_t n;
	errcode_t err;
	const char *iname = w->iname ? w->iname : name;	/* in the image */

	err = no_xattrs ? 0 : read_xattrs(-1, path, &w->x);
	if (err == ENAMETOOLONG)
		err = 0;	/* too deep for l*xattr: copy without them */
	if (!err)
		err = prepare(c, parent, iname, path, fresh);
	if (err)
		return err;
	if (S_ISLNK(st->st_mode)) {
		n = readlinkat(dirfd, name, w->target, PATH_MAX);
		if (n < 0) {
			cp_skip(c, path, errno);
			return 0;
		}
		w->target[n] = '\0';
		/* readlink itself moves a symlink's atime, so a second copy
		 * of the same tree would see another one */
		if (c->ordered) {
			struct e3_attr ra = *a;

			ra.atime = ra.mtime;
			err = e3_symlink(c->img, parent, iname, w->target, &ra, ino);
		} else {
			err = e3_symlink(c->img, parent, iname, w->target, a, ino);
		}
	} else {
		err = e3_mknod(c->img, parent, iname, a, st->st_rdev, ino);
	}
	if (!err && (err = cp_set_xattrs(c, *ino, &w->x, path)))
		return cp_unmake(c, parent, iname, err);
	if (!err) {
		cp_count_file(c, 0, path);
		err = commit_point(c, 1);	/* + a block or xattr block */
	}
	return err;
}

/* One directory entry of the source (stat'ed by the measure pass, or
 * now). Entry-level problems are reported and the walk goes on; image
 * problems stop it. */
static errcode_t copy_entry(struct walk *w, int dirfd, const struct cp_dent *d,
			    ext2_ino_t parent, const char *path, int fresh)
{
	int created = 0, no_xattrs = d->measured && d->no_xattrs;
	const char *name = d->name;
	const char *iname = w->iname ? w->iname : name;	/* in the image */
	struct cp_ctx *c = w->c;
	ext2_ino_t ino = 0, linked;
	struct cp_dir *sub;
	struct e3_attr a;
	struct stat st;
	errcode_t err;
	int fd;

	if (d->measured && d->stat_err) {
		cp_skip(c, path, d->stat_err);
		return 0;
	}
	if (d->measured) {
		cp_stat_unpack(&st, &d->st);
	} else if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		cp_skip(c, path, errno);
		return 0;
	}
	cp_attr_from_stat(&a, &st);
	cp_map_attr(c, &a);
	cp_xattrs_clear(&w->x);
	/* what --update compares an existing entry of this name with: a
	 * symlink's size is its target's length, in the image as here */
	c->want = (struct cp_want){ .set = 1, .mode = st.st_mode,
		.size = S_ISREG(st.st_mode) || S_ISLNK(st.st_mode) ?
			(uint64_t)st.st_size : 0,
		.mtime = a.mtime };
	if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 &&
	    cp_linkmap_get(c->links, st.st_dev, st.st_ino)) {
		err = prepare(c, parent, iname, path, fresh);
		if (err)
			goto out;
		fresh = 1;	/* the name is free now */
		/* again: replacing the name may have freed that very file
		 * (then this entry is copied anew) */
		linked = cp_linkmap_get(c->links, st.st_dev, st.st_ino);
		if (linked) {
			err = e3_link(c->img, parent, iname, linked);
			if (!err) {
				cp_count_file(c, 0, path);
				err = commit_point(c, 0);
			}
			goto out;
		}
	}
	switch (st.st_mode & S_IFMT) {
	case S_IFDIR:
		fd = cp_openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
			       cp_noatime_for(&c->noatime, st.st_uid));
		if (fd < 0 && errno != EACCES && errno != EPERM) {
			cp_skip(c, path, errno);
			return 0;
		}
		if (fd < 0) {
			/* its stat was readable, its entries are not: made
			 * empty with its mode, owner and times (as tar does),
			 * and named — a partial copy */
			err = 0;
			if (w->premade)
				ino = w->premade;
			else
				err = cp_make_dir(c, parent, iname, &a, path,
						  &ino, NULL);
			if (!err)
				cp_skip(c, path, E3_DIR_UNREADABLE);
			goto out;
		}
		sub = dir_new(fd);
		if (!sub) {
			close(fd);
			return ENOMEM;
		}
		err = read_xattrs(fd, path, &w->x);
		if (!err && w->premade) {
			ino = w->premade;
			created = w->premade_created;
		} else if (!err) {
			err = cp_make_dir(c, parent, iname, &a, path, &ino,
					  &created);
		}
		if (!err)
			err = cp_set_xattrs(c, ino, &w->x, path);
		if (!err) {
			cp_count_file(c, 0, path);
			/* its block, and the parent's link count */
			err = commit_point(c, 2);
		}
		if (!err)
			err = walk_dir(w, sub, ino, path, created);
		dir_put(sub);
		goto out;
	case S_IFREG:
		err = copy_regular(w, dirfd, name, &st, &a, parent, path, &ino,
				   fresh, no_xattrs);
		break;
	case S_IFLNK: case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		err = copy_other(w, dirfd, name, &st, &a, parent, path, &ino,
				 fresh, no_xattrs);
		break;
	default:
		cp_skip(c, path, E3_BAD_FILE_TYPE);
		return 0;
	}
	if (!err && ino && st.st_nlink > 1)
		err = cp_linkmap_put(c->links, st.st_dev, st.st_ino, ino);
	/* left as it was: its other names are linked to it */
	if (err == E3_UP_TO_DATE && st.st_nlink > 1 &&
	    cp_linkmap_put(c->links, st.st_dev, st.st_ino, c->want.ino))
		err = ENOMEM;
out:
	c->want.set = 0;
	if (!err)
		cp_event_made(c, c->src_single ? iname :
			      strlen(path) >= c->src_skip ? path + c->src_skip :
			      name);
	return cp_entry_result(c, path, err);
}

/* Which errors stop the copy: the image's (full, I/O, corrupt). What is
 * wrong with one entry is reported and counted. */
int cp_entry_error(errcode_t err)
{
	switch (err) {
	case E3_NAME_EXISTS: case E3_IS_DIR: case E3_NOT_DIR:
	case E3_SYMLINK_IN_PATH: case E3_NAME_TOO_LONG: case E3_BAD_NAME:
	case E3_LINK_LIMIT: case E3_XATTR_TOO_BIG: case E3_BAD_XATTR_NAME:
	case E3_BAD_ACL: case E3_FILE_TOO_BIG: case E3_PATH_ESCAPES:
	case E3_BAD_FILE_TYPE: case E3_NOT_EMPTY: case E3_ARCHIVE_BAD:
	case E3_LINK_TARGET_MISSING: case E3_ACL_UNKNOWN_NAME:
		return 1;
	default:
		return 0;
	}
}

errcode_t cp_entry_result(struct cp_ctx *c, const char *path, errcode_t err)
{
	if (!err)
		return 0;
	if (err == E3_UP_TO_DATE) {	/* --update: nothing to do */
		pthread_mutex_lock(&c->stat_lock);
		c->st->uptodate++;
		pthread_mutex_unlock(&c->stat_lock);
		return 0;
	}
	if (cp_entry_error(err)) {
		cp_error(c, path, err);
		return 0;
	}
	cp_event(c, E3_CP_FATAL, path, err);
	return err;
}

/* Ordered mode: the subdirectories of a listed directory are made first,
 * one after the other. Every mkdir there waits until the files in flight
 * are closed (ordered_mkdir: the directory's blocks must be placed the
 * same way at any -j), and one such wait per parent costs far less than
 * one per subdirectory: the small corpus' 300 directories in one parent
 * waited 300 times. An entry that fails here is left to copy_entry, which
 * fails it again and reports it in its place; only an image error stops.
 * ino[i] / created[i]: what was made for entry i (0: nothing). */
static errcode_t make_subdirs(struct walk *w, const struct cp_listing *l,
			      ext2_ino_t dino, const char *path,
			      ext2_ino_t *ino, unsigned char *created)
{
	struct cp_ctx *c = w->c;
	errcode_t err = 0;

	for (size_t i = 0; i < l->n && !err; i++) {
		const struct cp_dent *d = &l->e[i];
		struct e3_attr a;
		struct stat st;
		char *sub;
		int made = 0;

		ino[i] = 0;
		created[i] = 0;
		if (!d->measured || d->stat_err ||
		    !S_ISDIR(d->st.mode))
			continue;
		/* one that cannot be read is made too, empty (copy_entry) */
		cp_stat_unpack(&st, &d->st);
		cp_attr_from_stat(&a, &st);
		cp_map_attr(c, &a);
		sub = join(path, d->name);
		if (!sub)
			return ENOMEM;
		err = cp_make_dir(c, dino, d->name, &a, sub, &ino[i], &made);
		if (err && cp_entry_error(err)) {
			ino[i] = 0;
			err = 0;
		} else if (err) {	/* the image's: stops, naming it */
			err = cp_entry_result(c, sub, err);
		}
		free(sub);
		created[i] = (unsigned char)made;
	}
	return err;
}

static errcode_t walk_dir(struct walk *w, struct cp_dir *dir, ext2_ino_t dino,
			  const char *path, int fresh)
{
	struct cp_dir *outer = w->dir;
	struct cp_listing *l = NULL;
	ext2_ino_t *premade = NULL;
	unsigned char *made = NULL;
	int dirfd = dir->fd;
	errcode_t err = 0;
	struct stat now;
	char *sub, *base;
	size_t at = 0;

	/* the measure pass's sorted listing when it kept one for the
	 * directory open at dirfd (the one opened now, not one that was at
	 * this path then), else read now */
	if (w->c->listings && fstat(dirfd, &now) == 0)
		l = cp_listings_take(w->c->listings, now.st_dev, now.st_ino);
	if (!l && (err = cp_listing_read(dirfd, &l))) {
		cp_skip(w->c, path, err);
		return 0;
	}
	w->dir = dir;
	if (w->c->ordered && l->n) {
		premade = calloc(l->n, sizeof(*premade));
		made = calloc(l->n, 1);
		err = premade && made ? make_subdirs(w, l, dino, path, premade,
						     made) : ENOMEM;
	}
	base = err ? NULL : join_start(path, &at);
	if (!err && !base)
		err = ENOMEM;
	for (size_t i = 0; i < l->n && !err; i++) {
		const char *p = join_name(base, at, l->e[i].name);

		sub = p ? NULL : join(path, l->e[i].name);
		if (!p && !(p = sub)) {
			err = ENOMEM;
			break;
		}
		w->premade = premade ? premade[i] : 0;
		w->premade_created = made ? made[i] : 0;
		err = copy_entry(w, dirfd, &l->e[i], dino, p, fresh);
		w->premade = 0;
		free(sub);
	}
	free(base);
	w->dir = outer;
	free(premade);
	free(made);
	cp_listing_free(l);
	return err;
}

/* A directory source: its contents go into dest, and its own attributes
 * onto dest (as cp -a SRC/. DEST). Anything else: the entry itself. */
errcode_t cp_tree_copy(struct cp_ctx *c, const char *src, ext2_ino_t dest)
{
	struct walk w = { .c = c, .iname = c->dest_name };
	struct cp_dir *root;
	struct e3_attr a;
	struct stat st;
	errcode_t err, err2;
	int fd;

	w.target = malloc(PATH_MAX + 1);
	if (!w.target)
		return ENOMEM;
	/* a symlink named on the command line is followed */
	err = stat(src, &st) < 0 ? errno : 0;
	if (err)
		goto out;
	if (S_ISDIR(st.st_mode)) {
		size_t len = strlen(src);

		/* entries' paths are join(src, name): src, its trailing
		 * slashes left out, then '/' */
		while (len > 1 && src[len - 1] == '/')
			len--;
		c->src_skip = len == 1 && src[0] == '/' ? 1 : len + 1;
		c->src_single = 0;
		fd = cp_openat(AT_FDCWD, src, O_RDONLY | O_DIRECTORY,
			       cp_noatime_for(&c->noatime, st.st_uid));
		if (fd < 0) {
			err = errno;
			goto out;
		}
		root = dir_new(fd);
		if (!root) {
			close(fd);
			err = ENOMEM;
			goto out;
		}
		cp_attr_from_stat(&a, &st);
		cp_map_attr(c, &a);
		err = read_xattrs(fd, src, &w.x);
		if (!err)
			err = cp_set_xattrs(c, dest, &w.x, src);
		if (!err)
			err = cp_defer_dirattr(c, dest, &a);
		if (!err)
			err = walk_dir(&w, root, dest, src, 0);
		dir_put(root);
	} else {
		char *dup1 = strdup(src), *dup2 = strdup(src);
		char *dir, *base;

		c->src_single = 1;
		if (!dup1 || !dup2) {
			err = ENOMEM;
		} else {
			dir = dirname(dup1);
			base = basename(dup2);
			struct cp_dent d = { .name = base };

			fd = cp_openat(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY,
				       NULL);
			err = fd < 0 ? errno : copy_entry(&w, fd, &d, dest, src, 0);
			if (fd >= 0)
				close(fd);
		}
		free(dup1);
		free(dup2);
	}
	/* the entries of files the workers could not open go before the
	 * next source, which may bring the same names; in ordered mode the
	 * scanner removes them as it closes the files, so all are closed
	 * here (a point of the walk, the same at any -j) */
	if (w.deferred_opens) {
		if (c->ordered) {
			err2 = cp_close_oldest(c, 0);
		} else {
			err2 = cp_flush_batch(c);
			if (!err2)
				err2 = e3_workq_wait(c->wq);
		}
		if (!err)
			err = err2;
	}
out:
	cp_xattrs_clear(&w.x);
	free(w.x.v);
	free(w.target);
	return err;
}
