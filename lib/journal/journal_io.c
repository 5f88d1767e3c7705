/*
 * journal_io.c: the io_manager layer that makes libext2fs journal without
 * knowing it. Installed as fs->io over the image's unix_io channel (kept
 * as j->real, the channel's private_data is the struct e3_journal), it
 * captures every write — write_blk(64), write_byte (the superblock's path),
 * zeroout and discard — into the running transaction, coalescing rewrites
 * of a block, and answers reads from the running transaction, then from
 * the committed-but-not-checkpointed set, then from the disk. Writes to
 * the journal's own blocks pass straight through: the log is written by
 * journal_commit.c, never captured.
 *
 * Every entry point runs under fs_lock (only libext2fs calls them). A
 * commit may be in flight meanwhile, writing the log through j->real
 * without fs_lock: reads here only pread the real channel (unix_io with
 * its cache off keeps no state a concurrent write would change but its
 * byte counters, bytes_read here, bytes_written there), and the
 * committing set they look in is not changed until the commit retakes
 * fs_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "journal_int.h"
#include "e3_err.h"

static int jbuf_cmp(struct jbuf *a, struct jbuf *b)
{
	return a->blk < b->blk ? -1 : a->blk > b->blk;
}

RB_GENERATE(jbuf_tree, jbuf, rb, jbuf_cmp)

void jset_init(struct jset *s)
{
	RB_INIT(&s->tree);
	s->n = 0;
	s->slot = NULL;
	s->mask = 0;
	s->no_table = 0;
}

static size_t jset_home(const struct jset *s, blk64_t blk)
{
	uint64_t h = (uint64_t)blk * 0x9e3779b97f4a7c15ull;

	return (size_t)(h ^ (h >> 29)) & s->mask;
}

static void table_put(struct jset *s, struct jbuf *b)
{
	size_t i = jset_home(s, b->blk);

	while (s->slot[i])
		i = (i + 1) & s->mask;
	s->slot[i] = b;
}

/* Room for one more at a load of at most a half; on ENOMEM the set goes
 * on without a table (lookups walk the tree), so nothing fails here. */
static void table_grow(struct jset *s)
{
	size_t cap = s->mask + 1, ncap;
	struct jbuf **old = s->slot, **nt, *b;

	if (s->no_table || (s->slot && (s->n + 1) * 2 <= cap))
		return;
	ncap = s->slot ? cap * 2 : 64;
	while ((s->n + 1) * 2 > ncap)
		ncap *= 2;
	nt = calloc(ncap, sizeof(*nt));
	if (!nt) {
		free(old);
		s->slot = NULL;
		s->mask = 0;
		s->no_table = 1;
		return;
	}
	s->slot = nt;
	s->mask = ncap - 1;
	free(old);
	RB_FOREACH(b, jbuf_tree, &s->tree)
		table_put(s, b);
}

/* Linear probing's deletion: the entries after the hole that may not
 * stay behind it (their home is not in (hole, here]) move into it. */
static void table_del(struct jset *s, struct jbuf *b)
{
	size_t i = jset_home(s, b->blk), j, k;

	while (s->slot[i] != b)
		i = (i + 1) & s->mask;
	for (j = i;;) {
		j = (j + 1) & s->mask;
		if (!s->slot[j])
			break;
		k = jset_home(s, s->slot[j]->blk);
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		s->slot[i] = s->slot[j];
		i = j;
	}
	s->slot[i] = NULL;
}

struct jbuf *jset_find(struct jset *s, blk64_t blk)
{
	struct jbuf key;

	if (s->slot) {
		size_t i = jset_home(s, blk);
		struct jbuf *b;

		while ((b = s->slot[i])) {
			if (b->blk == blk)
				return b;
			i = (i + 1) & s->mask;
		}
		return NULL;
	}
	if (!s->n)
		return NULL;
	key.blk = blk;
	return RB_FIND(jbuf_tree, &s->tree, &key);
}

void jset_attach(struct jset *s, struct jbuf *b)
{
	table_grow(s);
	RB_INSERT(jbuf_tree, &s->tree, b);
	s->n++;
	if (s->slot)
		table_put(s, b);
}

void jset_detach(struct jset *s, struct jbuf *b)
{
	if (s->slot)
		table_del(s, b);
	RB_REMOVE(jbuf_tree, &s->tree, b);
	s->n--;
}

struct jbuf *jset_get(struct jset *s, blk64_t blk, unsigned bs, int with_data,
		      int *created)
{
	struct jbuf *b = jset_find(s, blk);

	*created = 0;
	if (b)
		return b;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	if (with_data && !(b->data = malloc(bs))) {
		free(b);
		return NULL;
	}
	b->blk = blk;
	jset_attach(s, b);
	*created = 1;
	return b;
}

void jset_remove(struct jset *s, struct jbuf *b)
{
	jset_detach(s, b);
	free(b->data);
	free(b);
}

void jset_clear(struct jset *s)
{
	struct jbuf *b, *next;

	RB_FOREACH_SAFE(b, jbuf_tree, &s->tree, next) {
		RB_REMOVE(jbuf_tree, &s->tree, b);
		free(b->data);
		free(b);
	}
	free(s->slot);
	jset_init(s);
}

static struct e3_journal *jof(io_channel ch)
{
	return ch->private_data;
}

errcode_t jio_write_real(struct e3_journal *j, blk64_t blk, unsigned n,
			 const void *buf)
{
	errcode_t err = e3_fault_write(&j->fault);

	if (err)
		return err;
	return io_channel_write_blk64(j->real, blk, (int)n, buf);
}

errcode_t jio_flush_real(struct e3_journal *j)
{
	return io_channel_flush(j->real);
}

errcode_t jio_read_committed(struct e3_journal *j, blk64_t blk, void *buf)
{
	struct jbuf *b = jset_find(&j->cm_run, blk);

	if (!b)
		b = jset_find(&j->ckpt, blk);

	if (b) {
		memcpy(buf, b->data, j->bs);
		return 0;
	}
	return io_channel_read_blk64(j->real, blk, 1, buf);
}

/* the newest contents the fs would see: running txn, then committing,
 * then committed */
static const unsigned char *newest(struct e3_journal *j, blk64_t blk)
{
	struct jbuf *b = jset_find(&j->run, blk);

	if (!b)
		b = jset_find(&j->cm_run, blk);
	if (!b)
		b = jset_find(&j->ckpt, blk);
	return b ? b->data : NULL;
}

static errcode_t read_range(struct e3_journal *j, uint64_t off, uint64_t len,
			    unsigned char *out)
{
	uint64_t pos = off, end = off + len;
	unsigned bs = j->bs;
	unsigned char *tmp = NULL;
	errcode_t err = 0;

	while (pos < end && !err) {
		blk64_t b = pos / bs;
		uint64_t boff = pos % bs, seg = bs - boff;
		const unsigned char *src;

		if (seg > end - pos)
			seg = end - pos;
		src = jbd2_log_owns(&j->log, b) ? NULL : newest(j, b);
		if (src) {
			memcpy(out + (pos - off), src + boff, seg);
			pos += seg;
		} else if (boff == 0 && seg == bs) {
			unsigned n = 1;	/* batch the following misses */

			while (pos + (uint64_t)(n + 1) * bs <= end && n < 1024 &&
			       !newest(j, b + n))
				n++;
			err = io_channel_read_blk64(j->real, b, (int)n,
						    out + (pos - off));
			pos += (uint64_t)n * bs;
		} else {
			if (!tmp && !(tmp = malloc(bs)))
				return ENOMEM;
			err = io_channel_read_blk64(j->real, b, 1, tmp);
			if (!err)
				memcpy(out + (pos - off), tmp + boff, seg);
			pos += seg;
		}
	}
	free(tmp);
	return err;
}

/* a write into the journal's own blocks: straight to the disk */
static errcode_t write_through(struct e3_journal *j, blk64_t b, uint64_t boff,
			       uint64_t seg, const unsigned char *src)
{
	unsigned char *tmp;
	errcode_t err;

	if (boff == 0 && seg == j->bs)
		return jio_write_real(j, b, 1, src);
	tmp = malloc(j->bs);
	if (!tmp)
		return ENOMEM;
	err = io_channel_read_blk64(j->real, b, 1, tmp);
	if (!err) {
		memcpy(tmp + boff, src, seg);
		err = jio_write_real(j, b, 1, tmp);
	}
	free(tmp);
	return err;
}

static errcode_t capture_block(struct e3_journal *j, blk64_t b, uint64_t boff,
			       uint64_t seg, const unsigned char *src)
{
	int full = boff == 0 && seg == j->bs, created;
	struct jbuf *rb, *rv;
	unsigned char *cur = NULL;
	errcode_t err;

	if (jbd2_log_owns(&j->log, b))
		return write_through(j, b, boff, seg, src);
	rb = jset_find(&j->run, b);
	if (!rb && (j->dedupe || !full)) {
		/* the committed contents: to merge a partial write into, and
		 * to see that a commit-time rewrite changes nothing */
		if (!(cur = malloc(j->bs)))
			return ENOMEM;
		err = jio_read_committed(j, b, cur);
		if (err) {
			free(cur);
			return err;
		}
		if (j->dedupe && memcmp(cur + boff, src, seg) == 0) {
			free(cur);
			return 0;
		}
	}
	if (!rb) {
		rb = jset_get(&j->run, b, j->bs, cur == NULL, &created);
		if (!rb) {
			free(cur);
			return ENOMEM;
		}
		if (cur)
			rb->data = cur;
	}
	memcpy(rb->data + boff, src, seg);
	/* rewritten after being revoked: the revoke no longer holds */
	if ((rv = jset_find(&j->revoked, b)))
		jset_remove(&j->revoked, rv);
	return 0;
}

errcode_t jio_capture(struct e3_journal *j, uint64_t off, uint64_t len,
		      const void *buf)
{
	const unsigned char *in = buf;
	uint64_t pos = off, end = off + len;
	errcode_t err = 0;

	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	if ((err = e3_fault_capture(&j->fault)))
		return err;
	while (pos < end && !err) {
		blk64_t b = pos / j->bs;
		uint64_t boff = pos % j->bs, seg = j->bs - boff;

		if (seg > end - pos)
			seg = end - pos;
		err = capture_block(j, b, boff, seg, in + (pos - off));
		pos += seg;
	}
	return err;
}

int e3_journal_captures(const struct e3_journal *j, io_channel io)
{
	return j && !j->bypass && j->wrap && io == j->wrap;
}

/* ---- the io_manager entry points ------------------------------------- */

static uint64_t ch_bytes(io_channel ch, int count)
{
	return count < 0 ? (uint64_t)-(int64_t)count
			 : (uint64_t)count * (uint64_t)ch->block_size;
}

static errcode_t jio_open(const char *name, int flags, io_channel *ret)
{
	(void)name; (void)flags; (void)ret;
	return EXT2_ET_UNIMPLEMENTED;	/* only installed by jio_wrap */
}

static errcode_t jio_close(io_channel ch)
{
	struct e3_journal *j = jof(ch);

	if (--ch->refcount > 0)
		return 0;
	/* libext2fs closed us while still wrapped: hand back the real one */
	if (j && j->wrap == ch) {
		j->wrap = NULL;
		io_channel_close(j->real);
		j->real = NULL;
	}
	free(ch->manager);
	free(ch->name);
	free(ch);
	return 0;
}

static errcode_t jio_set_blksize(io_channel ch, int blksize)
{
	/* the real channel stays at the fs block size: we only ever read and
	 * write it in whole fs blocks */
	ch->block_size = blksize;
	return 0;
}

static errcode_t jio_read_blk64(io_channel ch, unsigned long long block,
				int count, void *data)
{
	return read_range(jof(ch), block * (uint64_t)ch->block_size,
			  ch_bytes(ch, count), data);
}

static errcode_t jio_read_blk(io_channel ch, unsigned long block, int count,
			      void *data)
{
	return jio_read_blk64(ch, block, count, data);
}

static errcode_t jio_write_blk64(io_channel ch, unsigned long long block,
				 int count, const void *data)
{
	return jio_capture(jof(ch), block * (uint64_t)ch->block_size,
			   ch_bytes(ch, count), data);
}

static errcode_t jio_write_blk(io_channel ch, unsigned long block, int count,
			       const void *data)
{
	return jio_write_blk64(ch, block, count, data);
}

static errcode_t jio_write_byte(io_channel ch, unsigned long offset, int count,
				const void *data)
{
	if (count < 0)
		return EINVAL;
	return jio_capture(jof(ch), offset, (uint64_t)count, data);
}

/* zeroout and discard both leave zeros (unix_io punches holes in a file) */
static errcode_t jio_zeroout(io_channel ch, unsigned long long block,
			     unsigned long long count)
{
	struct e3_journal *j = jof(ch);
	uint64_t off = block * (uint64_t)ch->block_size;
	uint64_t len = count * (uint64_t)ch->block_size;
	unsigned char *zero = calloc(1, j->bs);
	errcode_t err = 0;

	if (!zero)
		return ENOMEM;
	while (len && !err) {
		uint64_t seg = j->bs - off % j->bs;

		if (seg > len)
			seg = len;
		err = jio_capture(j, off, seg, zero);
		off += seg;
		len -= seg;
	}
	free(zero);
	return err;
}

static errcode_t jio_flush(io_channel ch)
{
	struct e3_journal *j = jof(ch);

	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	return 0;	/* durability comes from commits, not from flushes */
}

static errcode_t jio_set_option(io_channel ch, const char *option,
				const char *arg)
{
	struct e3_journal *j = jof(ch);

	if (!j->real->manager->set_option)
		return EXT2_ET_INVALID_ARGUMENT;
	return j->real->manager->set_option(j->real, option, arg);
}

static errcode_t jio_get_stats(io_channel ch, io_stats *stats)
{
	struct e3_journal *j = jof(ch);

	if (!j->real->manager->get_stats)
		return EXT2_ET_UNIMPLEMENTED;
	return j->real->manager->get_stats(j->real, stats);
}

static errcode_t jio_cache_readahead(io_channel ch, unsigned long long block,
				     unsigned long long count)
{
	(void)ch; (void)block; (void)count;
	return 0;
}

errcode_t jio_wrap(struct e3_journal *j)
{
	ext2_filsys fs = j->fs;
	struct struct_io_manager *m;
	io_channel ch;
	errcode_t err;

	/* data is written behind the channel's back with pwrite, and write
	 * order must be ours: no write-back cache underneath */
	err = io_channel_set_options(fs->io, "cache=off");
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	ch = calloc(1, sizeof(*ch));
	if (!m || !ch || !(ch->name = strdup(fs->io->name ? fs->io->name : ""))) {
		free(m);
		free(ch);
		return ENOMEM;
	}
	m->magic = EXT2_ET_MAGIC_IO_MANAGER;
	m->name = "e3img journal I/O manager";
	m->open = jio_open;
	m->close = jio_close;
	m->set_blksize = jio_set_blksize;
	m->read_blk = jio_read_blk;
	m->write_blk = jio_write_blk;
	m->flush = jio_flush;
	m->write_byte = jio_write_byte;
	m->set_option = jio_set_option;
	m->get_stats = jio_get_stats;
	m->read_blk64 = jio_read_blk64;
	m->write_blk64 = jio_write_blk64;
	m->discard = jio_zeroout;
	m->cache_readahead = jio_cache_readahead;
	m->zeroout = jio_zeroout;

	ch->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	ch->manager = m;
	ch->block_size = fs->io->block_size;
	ch->refcount = 1;
	ch->flags = fs->io->flags & ~CHANNEL_FLAGS_DISCARD_ZEROES;
	ch->private_data = j;
	ch->align = fs->io->align;
	j->real = fs->io;
	j->wrap = ch;
	j->wrapped_image_io = fs->image_io == fs->io;
	fs->io = ch;
	if (j->wrapped_image_io)
		fs->image_io = ch;
	return 0;
}

void jio_unwrap(struct e3_journal *j)
{
	ext2_filsys fs = j->fs;
	io_channel ch = j->wrap;

	if (!ch)
		return;	/* never wrapped (bypass) */
	if (fs->io == ch)
		fs->io = j->real;
	if (j->wrapped_image_io && fs->image_io == ch)
		fs->image_io = j->real;
	j->wrap = NULL;
	free(ch->manager);
	free(ch->name);
	free(ch);
}
