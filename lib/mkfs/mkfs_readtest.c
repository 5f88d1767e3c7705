/*
 * mkfs_readtest.c: e3mkfs -c, the read-only bad-block scan mke2fs -c runs
 * through badblocks(8). e3mkfs keeps no bad-block list (the bad-block
 * inode stays empty), so a block that cannot be read makes it refuse the
 * target instead of formatting around it. Holes of a sparse image have no
 * medium under them and are skipped (SEEK_DATA), so the scan of a fresh
 * sparse file costs nothing and that of a device reads all of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "e3img.h"

#define CHUNK (1024 * 1024)

/* Reads [off, end) in CHUNK pieces; on a failure retries block by block so
 * the first bad block can be named. */
static errcode_t read_range(int fd, char *buf, uint64_t off, uint64_t end,
			    unsigned bs, uint64_t *bad, uint64_t *tested)
{
	while (off < end) {
		size_t want = end - off < CHUNK ? (size_t)(end - off) : CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)off);

		if (n > 0) {
			off += (uint64_t)n;
			*tested += (uint64_t)n;
			continue;
		}
		if (n == 0)
			return 0;	/* the file ends here */
		if (errno == EINTR)
			continue;
		if (errno != EIO)
			return errno;
		for (uint64_t b = off / bs; b * bs < off + want; b++)
			if (pread(fd, buf, bs, (off_t)(b * bs)) < 0) {
				*bad = b;
				return E3_BAD_BLOCK;
			}
		off += want;	/* the whole-chunk error did not recur */
	}
	return 0;
}

errcode_t e3_mkfs_read_test(const char *path, uint64_t bytes, unsigned bs,
			    uint64_t *bad, uint64_t *tested)
{
	errcode_t err = 0;
	off_t data = 0, hole;
	char *buf;
	int fd;

	*tested = 0;
	*bad = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : (errcode_t)errno;
	buf = malloc(CHUNK);
	if (!buf) {
		close(fd);
		return ENOMEM;
	}
	while (!err && (uint64_t)data < bytes) {
		data = lseek(fd, data, SEEK_DATA);
		if (data < 0) {
			/* ENXIO: no data past here; EINVAL: no SEEK_DATA
			 * (a device, or an old filesystem) reads it all */
			if (errno == EINVAL)
				err = read_range(fd, buf, 0, bytes, bs, bad, tested);
			else if (errno != ENXIO)
				err = errno;
			break;
		}
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > bytes)
			hole = (off_t)bytes;
		err = read_range(fd, buf, (uint64_t)data, (uint64_t)hole, bs,
				 bad, tested);
		data = hole;
	}
	free(buf);
	close(fd);
	return err;
}
