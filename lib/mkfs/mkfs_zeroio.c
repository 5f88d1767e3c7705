/*
 * mkfs_zeroio.c: an io_manager layered over libext2fs' unix I/O that drops
 * writes of zeros to blocks still reading as zeros.
 *
 * Why: libext2fs zeroes every block it allocates for a block-mapped file
 * (ext2fs_alloc_block3 writes a zeroed buffer), so creating the 1 GiB
 * journal of a large ext3 image costs 262144 one-block writes and a GiB of
 * page cache to flush — in mke2fs too. When mkfs starts on a file that
 * reads as zeros (new, or hole-punched), a block nobody has written
 * non-zero data to still reads as zeros, and writing zeros there changes
 * nothing. The result is byte-for-byte the same; the file stays sparse.
 *
 * The layer is armed (e3_zeroio_arm) once the filesystem is initialised
 * and its geometry known, and disarmed before the caller gets the
 * filesystem back: from then on others may write to the file behind
 * libext2fs' back (e3cp's data path), which would break the invariant.
 * Disarmed or unarmed, it passes everything through.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs_zeroio.h"

struct zeroio {
	io_channel child;		/* the unix I/O channel underneath */
	ext2fs_block_bitmap written;	/* fs blocks that got non-zero data;
					   NULL = pass everything through */
	unsigned fs_blocksize;
	blk64_t first, end;		/* the bitmap's range [first, end) */
	unsigned long long dropped;	/* blocks not written, for tests */
};

static struct zeroio *zio(io_channel ch)
{
	return ch->private_data;
}

static int all_zero(const void *data, size_t len)
{
	const unsigned char *p = data;

	return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

/* Bytes from blk in channel units (count < 0: -count bytes). */
static size_t io_bytes(io_channel ch, int count)
{
	return count < 0 ? (size_t)-count : (size_t)count * ch->block_size;
}

/* Records a write; returns 1 when it can be dropped. */
static int note_write(io_channel ch, unsigned long long off, size_t len,
		      const void *data)
{
	struct zeroio *z = zio(ch);
	blk64_t b0, b1;

	if (!z->written || len == 0)
		return 0;
	b0 = off / z->fs_blocksize;
	b1 = (off + len - 1) / z->fs_blocksize + 1;
	if (b0 < z->first || b1 > z->end)
		return 0;		/* outside the bitmap: just write */
	if (all_zero(data, len) &&
	    ext2fs_test_block_bitmap_range2(z->written, b0, (unsigned)(b1 - b0))) {
		z->dropped += b1 - b0;
		return 1;
	}
	ext2fs_mark_block_bitmap_range2(z->written, b0, (unsigned)(b1 - b0));
	return 0;
}

static errcode_t zio_write_blk64(io_channel ch, unsigned long long blk,
				 int count, const void *data)
{
	if (note_write(ch, blk * ch->block_size, io_bytes(ch, count), data))
		return 0;
	return io_channel_write_blk64(zio(ch)->child, blk, count, data);
}

static errcode_t zio_write_blk(io_channel ch, unsigned long blk, int count,
			       const void *data)
{
	return zio_write_blk64(ch, blk, count, data);
}

static errcode_t zio_write_byte(io_channel ch, unsigned long off, int size,
				const void *data)
{
	if (size > 0 && note_write(ch, off, (size_t)size, data))
		return 0;
	return io_channel_write_byte(zio(ch)->child, off, size, data);
}

static errcode_t zio_read_blk64(io_channel ch, unsigned long long blk,
				int count, void *data)
{
	return io_channel_read_blk64(zio(ch)->child, blk, count, data);
}

static errcode_t zio_read_blk(io_channel ch, unsigned long blk, int count,
			      void *data)
{
	return zio_read_blk64(ch, blk, count, data);
}

static errcode_t zio_set_blksize(io_channel ch, int blksize)
{
	ch->block_size = blksize;
	return io_channel_set_blksize(zio(ch)->child, blksize);
}

static errcode_t zio_flush(io_channel ch)
{
	return io_channel_flush(zio(ch)->child);
}

static errcode_t zio_set_option(io_channel ch, const char *opt,
				const char *arg)
{
	return zio(ch)->child->manager->set_option ?
		zio(ch)->child->manager->set_option(zio(ch)->child, opt, arg) :
		EXT2_ET_INVALID_ARGUMENT;
}

static errcode_t zio_get_stats(io_channel ch, io_stats *stats)
{
	io_channel c = zio(ch)->child;

	return c->manager->get_stats ? c->manager->get_stats(c, stats) :
		EXT2_ET_OP_NOT_SUPPORTED;
}

static errcode_t zio_discard(io_channel ch, unsigned long long blk,
			     unsigned long long count)
{
	return io_channel_discard(zio(ch)->child, blk, count);
}

/* Zeroing never-written blocks is the same no-op; on a file, passing it
 * down would make the host allocate unwritten extents for them. */
static errcode_t zio_zeroout(io_channel ch, unsigned long long blk,
			     unsigned long long count)
{
	struct zeroio *z = zio(ch);
	unsigned long long off = blk * ch->block_size;
	unsigned long long len = count * ch->block_size;
	blk64_t b0, b1;

	if (z->written && count) {
		b0 = off / z->fs_blocksize;
		b1 = (off + len - 1) / z->fs_blocksize + 1;
		if (b0 >= z->first && b1 <= z->end &&
		    ext2fs_test_block_bitmap_range2(z->written, b0,
						    (unsigned)(b1 - b0))) {
			z->dropped += b1 - b0;
			return 0;
		}
	}
	return io_channel_zeroout(z->child, blk, count);
}

static errcode_t zio_close(io_channel ch)
{
	struct zeroio *z = zio(ch);
	errcode_t err;

	if (--ch->refcount > 0)
		return 0;
	if (z->written)
		ext2fs_free_block_bitmap(z->written);
	err = io_channel_close(z->child);
	free(ch->name);
	free(z);
	free(ch);
	return err;
}

static errcode_t zio_open(const char *name, int flags, io_channel *ret);

/* A table of functions, never written; libext2fs wants it non-const. */
static struct struct_io_manager zeroio_manager = {
	.magic = EXT2_ET_MAGIC_IO_MANAGER,
	.name = "e3img zero-eliding I/O manager",
	.open = zio_open,
	.close = zio_close,
	.set_blksize = zio_set_blksize,
	.read_blk = zio_read_blk,
	.write_blk = zio_write_blk,
	.flush = zio_flush,
	.write_byte = zio_write_byte,
	.set_option = zio_set_option,
	.get_stats = zio_get_stats,
	.read_blk64 = zio_read_blk64,
	.write_blk64 = zio_write_blk64,
	.discard = zio_discard,
	.zeroout = zio_zeroout,
};

static errcode_t zio_open(const char *name, int flags, io_channel *ret)
{
	io_channel ch = NULL;
	struct zeroio *z = NULL;
	errcode_t err = ENOMEM;

	ch = calloc(1, sizeof(*ch));
	z = calloc(1, sizeof(*z));
	if (!ch || !z || !(ch->name = strdup(name)))
		goto fail;
	err = unix_io_manager->open(name, flags, &z->child);
	if (err)
		goto fail;
	ch->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	ch->manager = &zeroio_manager;
	ch->block_size = z->child->block_size;
	ch->refcount = 1;
	ch->flags = z->child->flags;
	ch->private_data = z;
	*ret = ch;
	return 0;
fail:
	if (ch)
		free(ch->name);
	free(ch);
	free(z);
	return err;
}

io_manager e3_zeroio_manager(void)
{
	return &zeroio_manager;
}

errcode_t e3_zeroio_arm(ext2_filsys fs)
{
	struct zeroio *z;
	errcode_t err;

	if (fs->io->manager != &zeroio_manager)
		return EXT2_ET_INVALID_ARGUMENT;
	z = zio(fs->io);
	err = ext2fs_allocate_block_bitmap(fs, "blocks written by mkfs",
					   &z->written);
	if (err)
		return err;
	z->fs_blocksize = fs->blocksize;
	z->first = fs->super->s_first_data_block;
	z->end = ext2fs_blocks_count(fs->super);
	return 0;
}

unsigned long long e3_zeroio_disarm(ext2_filsys fs)
{
	struct zeroio *z;

	if (fs->io->manager != &zeroio_manager)
		return 0;
	z = zio(fs->io);
	if (z->written) {
		ext2fs_free_block_bitmap(z->written);
		z->written = NULL;
	}
	return z->dropped;
}
