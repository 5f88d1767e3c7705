/*
 * mkfs_nullio.c: the null io_manager (see mkfs_nullio.h). Geometry is
 * computed by the same ext2fs_initialize call that later writes the image,
 * so the two cannot disagree; this manager lets that call run without
 * touching any file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs_nullio.h"

static errcode_t null_close(io_channel ch)
{
	if (--ch->refcount > 0)
		return 0;
	free(ch->name);
	free(ch);
	return 0;
}

static errcode_t null_set_blksize(io_channel ch, int blksize)
{
	ch->block_size = blksize;
	return 0;
}

static size_t null_bytes(io_channel ch, int count)
{
	return count < 0 ? (size_t)-count : (size_t)count * ch->block_size;
}

static errcode_t null_read_blk64(io_channel ch, unsigned long long blk,
				 int count, void *data)
{
	(void)blk;
	memset(data, 0, null_bytes(ch, count));
	return 0;
}

static errcode_t null_read_blk(io_channel ch, unsigned long blk, int count,
			       void *data)
{
	return null_read_blk64(ch, blk, count, data);
}

static errcode_t null_write_blk64(io_channel ch, unsigned long long blk,
				  int count, const void *data)
{
	(void)ch; (void)blk; (void)count; (void)data;
	return 0;
}

static errcode_t null_write_blk(io_channel ch, unsigned long blk, int count,
				const void *data)
{
	return null_write_blk64(ch, blk, count, data);
}

static errcode_t null_write_byte(io_channel ch, unsigned long off, int size,
				 const void *data)
{
	(void)ch; (void)off; (void)size; (void)data;
	return 0;
}

static errcode_t null_flush(io_channel ch)
{
	(void)ch;
	return 0;
}

static errcode_t null_set_option(io_channel ch, const char *opt,
				 const char *arg)
{
	(void)ch; (void)opt; (void)arg;
	return 0;
}

static errcode_t null_open(const char *name, int flags, io_channel *ret);

/* Never written after initialisation: the manager is a table of functions,
 * not state. libext2fs wants a non-const pointer. */
static struct struct_io_manager null_manager = {
	.magic = EXT2_ET_MAGIC_IO_MANAGER,
	.name = "e3img null I/O manager",
	.open = null_open,
	.close = null_close,
	.set_blksize = null_set_blksize,
	.read_blk = null_read_blk,
	.write_blk = null_write_blk,
	.flush = null_flush,
	.write_byte = null_write_byte,
	.set_option = null_set_option,
	.read_blk64 = null_read_blk64,
	.write_blk64 = null_write_blk64,
};

static errcode_t null_open(const char *name, int flags, io_channel *ret)
{
	io_channel ch;

	(void)flags;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return ENOMEM;
	ch->name = strdup(name ? name : "");
	if (!ch->name) {
		free(ch);
		return ENOMEM;
	}
	ch->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	ch->manager = &null_manager;
	ch->block_size = 1024;
	ch->refcount = 1;
	*ret = ch;
	return 0;
}

io_manager e3_null_io_manager(void)
{
	return &null_manager;
}
