/*
 * view_open.c: opening an image to look at it without ever writing it
 * (e3debugfs without -w). An io_manager keeps every write in memory —
 * 1 KiB chunks in a red-black tree over the image file — so that a
 * pending journal can be replayed by e3_journal_replay (recovery.c, the
 * same passes a writer runs) into that overlay: the reader sees the
 * replayed filesystem and the image keeps its journal for the next
 * writer or e2fsck. Like a read-only e3_image_open the file is opened
 * O_RDONLY under a shared flock, so a reader never meets an e3img writer.
 *
 * The overlay store is shared by the channels opened on it (the first
 * open replays, the second reads the result) and freed with the last.
 * Single-threaded: the store reaches the io_manager's open through
 * next_store, set and cleared around ext2fs_open2 under view_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/tree.h>

#include "e3img.h"

#define CHUNK 1024u

struct chunk {
	RB_ENTRY(chunk) rb;
	uint64_t idx;			/* byte offset / CHUNK */
	unsigned char data[CHUNK];
};
RB_HEAD(chunk_tree, chunk);

static int chunk_cmp(struct chunk *a, struct chunk *b)
{
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}
RB_GENERATE_INTERNAL(chunk_tree, chunk, rb, chunk_cmp,
		     static __attribute__((unused)))

struct store {
	int fd;				/* O_RDONLY, holds the shared flock */
	int refs;			/* channels open on it */
	struct chunk_tree chunks;
};

static pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;
static struct store *next_store;	/* [view_lock] for view_io_open */

static void store_put(struct store *s)
{
	struct chunk *c, *n;

	if (--s->refs > 0)
		return;
	RB_FOREACH_SAFE(c, chunk_tree, &s->chunks, n) {
		RB_REMOVE(chunk_tree, &s->chunks, c);
		free(c);
	}
	close(s->fd);			/* drops the flock */
	free(s);
}

static errcode_t pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0) {		/* past the end reads as zeros */
			memset(p, 0, len);
			return 0;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static errcode_t ov_read(struct store *s, uint64_t off, size_t len, void *buf)
{
	unsigned char *p = buf;

	while (len) {
		uint64_t idx = off / CHUNK;
		size_t in = off % CHUNK, n = CHUNK - in;
		struct chunk key, *c;
		errcode_t err;

		if (n > len)
			n = len;
		key.idx = idx;
		c = RB_FIND(chunk_tree, &s->chunks, &key);
		if (c)
			memcpy(p, c->data + in, n);
		else if ((err = pread_full(s->fd, p, n, off)))
			return err;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static errcode_t ov_write(struct store *s, uint64_t off, size_t len,
			  const void *buf)
{
	const unsigned char *p = buf;

	while (len) {
		uint64_t idx = off / CHUNK;
		size_t in = off % CHUNK, n = CHUNK - in;
		struct chunk key, *c;
		errcode_t err;

		if (n > len)
			n = len;
		key.idx = idx;
		c = RB_FIND(chunk_tree, &s->chunks, &key);
		if (!c) {
			c = malloc(sizeof(*c));
			if (!c)
				return ENOMEM;
			c->idx = idx;
			if (n < CHUNK &&
			    (err = pread_full(s->fd, c->data, CHUNK, idx * CHUNK))) {
				free(c);
				return err;
			}
			RB_INSERT(chunk_tree, &s->chunks, c);
		}
		memcpy(c->data + in, p, n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static size_t span(io_channel ch, int count)
{
	return count < 0 ? (size_t)-count : (size_t)count * (size_t)ch->block_size;
}

static errcode_t view_io_open(const char *name, int flags, io_channel *ret);

static errcode_t view_io_close(io_channel ch)
{
	if (--ch->refcount > 0)
		return 0;
	store_put(ch->private_data);
	free(ch->name);
	free(ch);
	return 0;
}

static errcode_t view_io_set_blksize(io_channel ch, int blksize)
{
	ch->block_size = blksize;
	return 0;
}

static errcode_t view_io_read64(io_channel ch, unsigned long long blk,
				int count, void *data)
{
	return ov_read(ch->private_data, blk * (uint64_t)ch->block_size,
		       span(ch, count), data);
}

static errcode_t view_io_write64(io_channel ch, unsigned long long blk,
				 int count, const void *data)
{
	return ov_write(ch->private_data, blk * (uint64_t)ch->block_size,
			span(ch, count), data);
}

static errcode_t view_io_read(io_channel ch, unsigned long blk, int count,
			      void *data)
{
	return view_io_read64(ch, blk, count, data);
}

static errcode_t view_io_write(io_channel ch, unsigned long blk, int count,
			       const void *data)
{
	return view_io_write64(ch, blk, count, data);
}

static errcode_t view_io_write_byte(io_channel ch, unsigned long off,
				    int count, const void *data)
{
	return ov_write(ch->private_data, off, (size_t)count, data);
}

static errcode_t view_io_flush(io_channel ch)
{
	(void)ch;
	return 0;
}

static errcode_t view_io_set_option(io_channel ch, const char *opt,
				    const char *arg)
{
	(void)ch;
	(void)opt;
	(void)arg;
	return EXT2_ET_INVALID_ARGUMENT;
}

static struct struct_io_manager view_io_manager = {
	.magic = EXT2_ET_MAGIC_IO_MANAGER,
	.name = "e3img view (writes kept in memory)",
	.open = view_io_open,
	.close = view_io_close,
	.set_blksize = view_io_set_blksize,
	.read_blk = view_io_read,
	.write_blk = view_io_write,
	.flush = view_io_flush,
	.write_byte = view_io_write_byte,
	.set_option = view_io_set_option,
	.read_blk64 = view_io_read64,
	.write_blk64 = view_io_write64,
};

static errcode_t view_io_open(const char *name, int flags, io_channel *ret)
{
	struct store *s = next_store;
	io_channel ch;

	(void)flags;
	if (!s)
		return EXT2_ET_BAD_DEVICE_NAME;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return ENOMEM;
	ch->name = strdup(name);
	if (!ch->name) {
		free(ch);
		return ENOMEM;
	}
	ch->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	ch->manager = &view_io_manager;
	ch->block_size = 1024;
	ch->refcount = 1;
	ch->private_data = s;
	s->refs++;
	*ret = ch;
	return 0;
}

static errcode_t open_on(struct store *s, const char *path, int flags,
			 blk64_t super, unsigned bs, ext2_filsys *fs)
{
	errcode_t err;

	pthread_mutex_lock(&view_lock);
	next_store = s;
	err = ext2fs_open2(path, NULL, flags | EXT2_FLAG_64BITS, (int)super,
			   bs, &view_io_manager, fs);
	next_store = NULL;
	pthread_mutex_unlock(&view_lock);
	if (err == EXT2_ET_BAD_MAGIC || err == EXT2_ET_SB_CSUM_INVALID ||
	    err == EXT2_ET_CORRUPT_SUPERBLOCK)
		return E3_NOT_EXT3;
	return err;
}

errcode_t e3_view_open(const char *path, unsigned flags, blk64_t superblock,
		       unsigned blocksize, ext2_filsys *ret,
		       struct e3_replay_report *rep, int *replayed)
{
	struct store *s;
	struct stat st;
	ext2_filsys fs = NULL;
	errcode_t err;

	*ret = NULL;
	*replayed = 0;
	if (stat(path, &st) < 0)
		return errno;
	if (S_ISDIR(st.st_mode))
		return E3_IS_DIRECTORY;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ENOMEM;
	RB_INIT(&s->chunks);
	s->refs = 1;			/* ours, until the end of this call */
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		err = errno;
		free(s);
		return err;
	}
	if (flock(s->fd, LOCK_SH | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? E3_IMAGE_LOCKED : errno;
		goto out;
	}
	err = open_on(s, path, 0, superblock, blocksize, &fs);
	if (err)
		goto out;
	if (!(flags & E3_VIEW_NO_REPLAY) && e3_journal_pending(fs)) {
		/* replay needs a read-write handle: its writes land in the
		 * overlay, and a fresh handle reads what they made */
		ext2fs_close_free(&fs);
		err = open_on(s, path, EXT2_FLAG_RW, superblock, blocksize, &fs);
		if (!err)
			err = e3_journal_replay(fs, rep);
		if (fs) {
			fs->flags &= ~EXT2_FLAG_DIRTY;
			ext2fs_close_free(&fs);
		}
		if (err)
			goto out;
		*replayed = 1;
		err = open_on(s, path, 0, superblock, blocksize, &fs);
		if (err)
			goto out;
	}
	if (!(flags & E3_VIEW_NO_BITMAPS) && (err = ext2fs_read_bitmaps(fs)))
		goto out;
	*ret = fs;
	fs = NULL;
out:
	if (fs)
		ext2fs_close_free(&fs);
	store_put(s);
	return err;
}
