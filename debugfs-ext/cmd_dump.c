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

/* Writes len bytes to fd, or seeks over them when they are all zero and
 * sparse is set (the file is truncated to its size at the end). */
static errcode_t put(int fd, FILE *f, const char *buf, size_t len, int sparse)
{
	if (f)
		return fwrite(buf, 1, len, f) == len ? 0 : EIO;
	if (sparse) {
		size_t i = 0;

		while (i < len && !buf[i])
			i++;
		if (i == len)
			return lseek(fd, (off_t)len, SEEK_CUR) < 0 ? errno : 0;
	}
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

errcode_t dbg_copy_out(struct dbg *d, ext2_ino_t ino, int fd, FILE *f)
{
	ext2_file_t ef;
	unsigned bs = d->fs->blocksize, got;
	char *buf = malloc(bs);
	struct ext2_inode inode;
	errcode_t err;

	if (!buf)
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
		err = put(fd, f, buf, got, !f);
		if (err)
			break;
	}
	ext2fs_file_close(ef);
	free(buf);
	if (!err && !f && !(err = ext2fs_read_inode(d->fs, ino, &inode)) &&
	    ftruncate(fd, (off_t)EXT2_I_SIZE(&inode)) < 0)
		err = errno;
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
