/*
 * mkfs_target.c: what e3mkfs may write to. Refuses directories, mounted
 * devices, non-empty files (unless forced) and read-only targets; finds the
 * size when none was given; and gets a file ready to hold the filesystem
 * (sparse, and all zeros, so inode tables need no writing — as mke2fs gets
 * by discarding a regular file before it starts).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/falloc.h>
#include <linux/fs.h>

#include "e3img.h"
#include "mkfs_target.h"

static errcode_t open_error(int e)
{
	switch (e) {
	case EROFS: case EACCES: case EPERM: case ETXTBSY:
		return E3_IMAGE_READONLY;
	case EISDIR:
		return E3_IS_DIRECTORY;
	default:
		return e;
	}
}

/* Nonzero when the device's first 64 KiB hold anything but zeros. */
static errcode_t device_has_data(int fd, int *has)
{
	static const size_t len = 65536;
	unsigned char buf[4096];

	*has = 0;
	for (size_t off = 0; off < len; off += sizeof(buf)) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);

		if (n < 0)
			return errno;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i]) {
				*has = 1;
				return 0;
			}
		if ((size_t)n < sizeof(buf))
			break;
	}
	return 0;
}

static errcode_t check_device(const char *path, int force, uint64_t *size)
{
	int fd, has = 0;
	errcode_t err = 0;

	fd = open(path, O_RDWR | O_EXCL);
	if (fd < 0)
		return errno == EBUSY ? E3_MOUNTED : open_error(errno);
	if (ioctl(fd, BLKGETSIZE64, size) < 0)
		err = errno;
	if (!err && !force)
		err = device_has_data(fd, &has);
	close(fd);
	if (!err && has)
		err = E3_NOT_EMPTY;
	return err;
}

/* A file "has data" unless it is all hole: `truncate -s 1G img` followed
 * by `e3mkfs img` needs no -F, a file holding anything does. */
static int file_has_data(int fd, const struct stat *st)
{
	if (st->st_size == 0)
		return 0;
	if (lseek(fd, 0, SEEK_DATA) < 0)
		return errno != ENXIO;	/* no SEEK_DATA here: assume data */
	return 1;
}

/* A new file goes into a directory we must be able to write. */
static errcode_t check_new_file(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	size_t len;

	if (!slash) {
		strcpy(dir, ".");
	} else {
		len = (size_t)(slash - path);
		if (len == 0)
			len = 1;
		if (len >= sizeof(dir))
			return ENAMETOOLONG;
		memcpy(dir, path, len);
		dir[len] = '\0';
	}
	if (access(dir, W_OK) < 0)
		return open_error(errno);
	return 0;
}

errcode_t e3_mkfs_check_target(const char *path, int force,
			       struct e3_mkfs_params *p)
{
	struct stat st;
	int mount_flags = 0;
	uint64_t size = 0;
	errcode_t err;
	int fd;

	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return errno;
		if (!p->size)
			return E3_BAD_SIZE;
		return check_new_file(path);
	}
	if (S_ISDIR(st.st_mode))
		return E3_IS_DIRECTORY;
	err = ext2fs_check_if_mounted(path, &mount_flags);
	if (err)
		return err;
	if (mount_flags & (EXT2_MF_MOUNTED | EXT2_MF_SWAP))
		return E3_MOUNTED;
	if (S_ISBLK(st.st_mode)) {
		err = check_device(path, force, &size);
		if (err)
			return err;
	} else if (S_ISREG(st.st_mode)) {
		fd = open(path, O_RDWR);
		if (fd < 0)
			return open_error(errno);
		if (!force && file_has_data(fd, &st)) {
			close(fd);
			return E3_NOT_EMPTY;
		}
		close(fd);
		size = (uint64_t)st.st_size;
	} else {
		return E3_BAD_FILE_TYPE;
	}
	if (!p->size) {
		if (!size)
			return E3_BAD_SIZE;
		p->size = size;
		p->size_from_target = 1;
	}
	return 0;
}

errcode_t e3_mkfs_prepare_file(const char *path, uint64_t bytes, int nodiscard,
			       struct e3_mkfs_target *t)
{
	struct stat st;
	int fd;
	errcode_t err = 0;

	memset(t, 0, sizeof(*t));
	t->lock_fd = -1;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return open_error(errno);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? E3_IMAGE_LOCKED : (errcode_t)errno;
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		err = errno;
		goto out;
	}
	if (S_ISBLK(st.st_mode)) {
		t->is_device = 1;
		goto out;
	}
	if (nodiscard) {
		/* -E nodiscard: nothing is dropped; only a file without data
		 * (new, or all holes) reads as zeros */
		if ((uint64_t)st.st_size < bytes &&
		    ftruncate(fd, (off_t)bytes) < 0)
			err = errno == EFBIG ? E3_TOO_LARGE : (errcode_t)errno;
		t->zeroed = !err && st.st_blocks == 0;
		goto out;
	}
	t->discarded = st.st_size > 0;
	/* Old contents become holes: one punch instead of mke2fs' discard
	 * loop; a fresh file has nothing to punch. */
	if (st.st_blocks > 0 &&
	    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		      (off_t)bytes) < 0) {
		/* No hole punching here: drop the old contents the slow way. */
		if (ftruncate(fd, 0) < 0) {
			err = errno;
			goto out;
		}
		st.st_size = 0;
		t->discarded = 0;	/* as when mke2fs' discard fails */
	}
	if ((uint64_t)st.st_size < bytes && ftruncate(fd, (off_t)bytes) < 0)
		err = errno == EFBIG ? E3_TOO_LARGE : (errcode_t)errno;
	t->zeroed = !err;
out:
	if (err)
		close(fd);
	else
		t->lock_fd = fd;
	return err;
}
