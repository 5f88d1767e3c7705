/*
 * cmd_dump.c: file contents out of the image — cat FILE, dump [-p] FILE
 * HOSTFILE. rdump lives in cmd_rdump.c; both share dbg_copy_out.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "dbg.h"
#include "dump.h"

static errcode_t write_at(int fd, const char *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

struct copy {
	int fd;
	char *buf;
	errcode_t err;
};

/* each mapped data block to its offset: holes stay holes, and a sparse
 * 5 GiB file costs what its data costs */
static int copy_block(ext2_filsys fs, blk64_t *blk, e2_blkcnt_t cnt,
		      blk64_t ref, int ref_off, void *priv)
{
	struct copy *c = priv;

	(void)ref;
	(void)ref_off;
	if (cnt < 0)
		return 0;
	c->err = io_channel_read_blk64(fs->io, *blk, 1, c->buf);
	if (!c->err)
		c->err = write_at(c->fd, c->buf, fs->blocksize,
				  (off_t)cnt * fs->blocksize);
	return c->err ? BLOCK_ABORT : 0;
}

static errcode_t copy_to_fd(struct dbg *d, ext2_ino_t ino, int fd)
{
	struct copy c = { .fd = fd };
	struct ext2_inode inode;
	errcode_t err;

	if ((err = ext2fs_read_inode(d->fs, ino, &inode)))
		return err;
	if (LINUX_S_ISLNK(inode.i_mode) && !ext2fs_inode_has_valid_blocks2(d->fs, &inode))
		return write_at(fd, (const char *)inode.i_block,
				EXT2_I_SIZE(&inode), 0);
	if (!(c.buf = malloc(d->fs->blocksize)))
		return ENOMEM;
	if (ext2fs_inode_has_valid_blocks2(d->fs, &inode))
		err = ext2fs_block_iterate3(d->fs, ino, BLOCK_FLAG_READ_ONLY |
					    BLOCK_FLAG_DATA_ONLY, NULL,
					    copy_block, &c);
	free(c.buf);
	if (!err)
		err = c.err;
	/* the last block's tail past i_size goes, and a trailing hole
	 * becomes the file's length */
	if (!err && ftruncate(fd, (off_t)EXT2_I_SIZE(&inode)) < 0)
		err = errno;
	return err;
}

errcode_t dbg_copy_out(struct dbg *d, ext2_ino_t ino, int fd, FILE *f)
{
	ext2_file_t ef;
	unsigned bs = d->fs->blocksize, got;
	char *buf;
	errcode_t err;

	if (!f)
		return copy_to_fd(d, ino, fd);
	if (!(buf = malloc(bs)))
		return ENOMEM;
	err = ext2fs_file_open(d->fs, ino, 0, &ef);
	if (err) {
		free(buf);
		return err;
	}
	for (;;) {
		err = ext2fs_file_read(ef, buf, bs, &got);
		if (err || !got)
			break;
		if (fwrite(buf, 1, got, f) != got) {
			err = EIO;
			break;
		}
	}
	ext2fs_file_close(ef);
	free(buf);
	return err;
}

DBG_CMD(do_cat)
{
	struct dbg *d = dbg_of(info);
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 2, 2, "cat FILE"))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	fflush(d->out);
	err = dbg_copy_out(d, ino, -1, d->out);
	if (err)
		dbg_fail(d, err, "%s", argv[1]);
}

DBG_CMD(do_dump)
{
	struct dbg *d = dbg_of(info);
	struct ext2_inode_large *in;
	ext2_ino_t ino;
	int c, preserve = 0, fd;
	errcode_t err;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "p")) != -1) {
		if (c != 'p') {
			dbg_fail(d, 0, "usage: dump [-p] FILE HOSTFILE");
			return;
		}
		preserve = 1;
	}
	if (argc != optind + 2) {
		dbg_fail(d, 0, "usage: dump [-p] FILE HOSTFILE");
		return;
	}
	if (!(ino = dbg_inode(d, argv[optind])))
		return;
	if (!(in = dbg_inode_buf(d))) {
		dbg_fail(d, ENOMEM, NULL);
		return;
	}
	if (dbg_read_inode(d, ino, argv[optind], in))
		goto out;
	fd = open(argv[optind + 1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		dbg_fail(d, errno, "%s", argv[optind + 1]);
		goto out;
	}
	err = dbg_copy_out(d, ino, fd, NULL);
	if (!err && preserve)
		err = dbg_fix_perms(d, fd, argv[optind + 1], in, 0);
	if (close(fd) < 0 && !err)
		err = errno;
	if (err)
		dbg_fail(d, err, "%s", argv[optind + 1]);
out:
	free(in);
}
