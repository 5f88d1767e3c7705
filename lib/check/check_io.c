/*
 * check_io.c: the checker's writes, watched. A read-write check (-p, -y)
 * installs this pass-through io_manager over the image's unix_io channel
 * (as journal_io.c does for writers), for two reasons:
 *   - a repair whose write fails must not be reported as fixed. Many
 *     writes are not the fix function's own (bitmaps, descriptors and the
 *     superblock go out when the round closes the filesystem, and unix_io
 *     caches single blocks until a flush), so each fix cannot see its own
 *     failure; the channel records the first write error of the round
 *     instead (chk_io.write_err), whoever issued the write and whenever
 *     the cache let it out, and check_main.c takes back the round's fixes;
 *   - E3_FAULT (fault.h) reaches the checker: its N-th write fails with
 *     EIO/ENOSPC (or the process is killed), so the tests can make a
 *     repair's write fail.
 * Reads, options and stats pass straight through. The channel owns the
 * real one: closing it closes both. The struct chk_io lives in the check
 * context, across rounds (the fault counter counts the whole run).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static struct chk_io *cio(io_channel ch)
{
	return ch->private_data;
}

/* Every write ends here: the fault first, then the real channel; the
 * first failure is kept. */
static errcode_t noted(struct chk_io *io, errcode_t err)
{
	if (err && !io->write_err)
		io->write_err = err;
	return err;
}

static errcode_t cio_open(const char *name, int flags, io_channel *ret)
{
	(void)name; (void)flags; (void)ret;
	return EXT2_ET_UNIMPLEMENTED;	/* only installed by chk_io_wrap */
}

static errcode_t cio_close(io_channel ch)
{
	struct chk_io *io = cio(ch);
	errcode_t err;

	if (--ch->refcount > 0)
		return 0;
	err = noted(io, io_channel_close(io->real));	/* flushes its cache */
	io->real = NULL;
	free(ch->manager);
	free(ch->name);
	free(ch);
	return err;
}

static errcode_t cio_set_blksize(io_channel ch, int blksize)
{
	ch->block_size = blksize;
	return io_channel_set_blksize(cio(ch)->real, blksize);
}

static errcode_t cio_read_blk64(io_channel ch, unsigned long long block,
				int count, void *data)
{
	return io_channel_read_blk64(cio(ch)->real, block, count, data);
}

static errcode_t cio_read_blk(io_channel ch, unsigned long block, int count,
			      void *data)
{
	return cio_read_blk64(ch, block, count, data);
}

static errcode_t cio_write_blk64(io_channel ch, unsigned long long block,
				 int count, const void *data)
{
	struct chk_io *io = cio(ch);
	errcode_t err = e3_fault_write(&io->fault);

	if (!err)
		err = io_channel_write_blk64(io->real, block, count, data);
	return noted(io, err);
}

static errcode_t cio_write_blk(io_channel ch, unsigned long block, int count,
			       const void *data)
{
	return cio_write_blk64(ch, block, count, data);
}

static errcode_t cio_write_byte(io_channel ch, unsigned long offset, int count,
				const void *data)
{
	struct chk_io *io = cio(ch);
	errcode_t err = e3_fault_write(&io->fault);

	if (!err)
		err = io_channel_write_byte(io->real, offset, count, data);
	return noted(io, err);
}

static errcode_t cio_flush(io_channel ch)
{
	return noted(cio(ch), io_channel_flush(cio(ch)->real));
}

static errcode_t cio_zeroout(io_channel ch, unsigned long long block,
			     unsigned long long count)
{
	struct chk_io *io = cio(ch);
	errcode_t err = e3_fault_write(&io->fault);

	if (!err)
		err = io_channel_zeroout(io->real, block, count);
	return noted(io, err);
}

static errcode_t cio_discard(io_channel ch, unsigned long long block,
			     unsigned long long count)
{
	struct chk_io *io = cio(ch);
	errcode_t err = e3_fault_write(&io->fault);

	if (!err)
		err = io_channel_discard(io->real, block, count);
	return noted(io, err);
}

static errcode_t cio_set_option(io_channel ch, const char *option,
				const char *arg)
{
	io_channel real = cio(ch)->real;

	if (!real->manager->set_option)
		return EXT2_ET_INVALID_ARGUMENT;
	return real->manager->set_option(real, option, arg);
}

static errcode_t cio_get_stats(io_channel ch, io_stats *stats)
{
	io_channel real = cio(ch)->real;

	if (!real->manager->get_stats)
		return EXT2_ET_UNIMPLEMENTED;
	return real->manager->get_stats(real, stats);
}

static errcode_t cio_cache_readahead(io_channel ch, unsigned long long block,
				     unsigned long long count)
{
	return io_channel_cache_readahead(cio(ch)->real, block, count);
}

static struct struct_io_manager *cio_manager(void)
{
	struct struct_io_manager *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->magic = EXT2_ET_MAGIC_IO_MANAGER;
	m->name = "e3img check I/O manager";
	m->open = cio_open;
	m->close = cio_close;
	m->set_blksize = cio_set_blksize;
	m->read_blk = cio_read_blk;
	m->write_blk = cio_write_blk;
	m->flush = cio_flush;
	m->write_byte = cio_write_byte;
	m->set_option = cio_set_option;
	m->get_stats = cio_get_stats;
	m->read_blk64 = cio_read_blk64;
	m->write_blk64 = cio_write_blk64;
	m->discard = cio_discard;
	m->cache_readahead = cio_cache_readahead;
	m->zeroout = cio_zeroout;
	return m;
}

errcode_t chk_io_wrap(struct chk_ctx *ctx)
{
	ext2_filsys fs = ctx->fs;
	struct chk_io *io = &ctx->io;
	io_channel ch;

	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return ENOMEM;
	ch->manager = cio_manager();
	ch->name = strdup(fs->io->name ? fs->io->name : "");
	if (!ch->manager || !ch->name) {
		free(ch->manager);
		free(ch->name);
		free(ch);
		return ENOMEM;
	}
	ch->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	ch->block_size = fs->io->block_size;
	ch->refcount = 1;
	ch->flags = fs->io->flags;
	ch->private_data = io;
	ch->align = fs->io->align;
	io->real = fs->io;
	if (fs->image_io == fs->io)
		fs->image_io = ch;
	fs->io = ch;
	return 0;
}

/* On disk, say that the filesystem has errors: writers refuse it until a
 * check that can write has run. */
static void mark_errors(ext2_filsys fs)
{
	fs->super->s_state |= EXT2_ERROR_FS;
	fs->super->s_state &= (uint16_t)~EXT2_VALID_FS;
	ext2fs_mark_super_dirty(fs);
}

errcode_t chk_close_fs(struct chk_ctx *ctx)
{
	ext2_filsys fs = ctx->fs;
	errcode_t err;

	if (!fs)
		return 0;
	/* descriptor locations dropped in memory and not moved are written
	 * back as they were found, never as 0 */
	chk_relocate_undo(ctx);
	ctx->fs = NULL;
	if (!(fs->flags & EXT2_FLAG_RW)) {
		ext2fs_close_free(&fs);
		return 0;
	}
	/* what the fixes wrote one by one reaches the disk (or fails) now,
	 * not silently in the close below */
	io_channel_flush(fs->io);
	if (ctx->io.write_err)
		mark_errors(fs);
	/* the bitmaps, descriptors and superblock; on failure fs is still
	 * ours (ext2fs_close2 frees only on success) */
	err = ext2fs_close2(fs, 0);
	if (!err)
		return ctx->io.write_err;
	noted(&ctx->io, err);
	/* one more try at the superblock alone, so that it says "errors" */
	mark_errors(fs);
	fs->flags |= EXT2_FLAG_SUPER_ONLY;
	fs->flags &= ~(EXT2_FLAG_BB_DIRTY | EXT2_FLAG_IB_DIRTY);
	ext2fs_flush(fs);
	ext2fs_free(fs);
	return ctx->io.write_err;
}
