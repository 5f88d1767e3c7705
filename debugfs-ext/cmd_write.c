/*
 * cmd_write.c: the requests that change the image (-w only), each one
 * library call through the journal: mkdir, write HOSTFILE PATH, symlink
 * PATH TARGET, mknod PATH p|c|b [MAJOR MINOR], link/ln FILE PATH, rm,
 * unlink, rmdir.
 *
 * A creator given a path creates in the directory the path names, never
 * an entry with a '/' in its name (dbg_parent). Where debugfs would
 * leave the filesystem inconsistent we differ: ln raises the link count
 * (debugfs' does not), unlink is rm (debugfs' leaves the inode's count
 * as it was), and rm refuses a directory (rmdir removes an empty one).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "dbg.h"

#define PATH_BUF 4096

static void wrote(struct dbg *d)
{
	d->changed = 1;
}

DBG_CMD(do_mkdir)
{
	struct dbg *d = dbg_of(info);
	char buf[PATH_BUF];
	const char *name;
	struct e3_attr a;
	ext2_ino_t dir, ino;
	errcode_t err;

	if (dbg_args(d, argc, 2, 2, "mkdir PATH") || dbg_need_rw(d))
		return;
	if (!(dir = dbg_parent(d, argv[1], buf, sizeof(buf), &name)))
		return;
	dbg_new_attr(&a, LINUX_S_IFDIR | 0755);
	err = e3_mkdir(d->img, dir, name, &a, &ino);
	if (err)
		dbg_fail(d, err, "%s", argv[1]);
	else
		wrote(d);
}

static errcode_t copy_in(int fd, e3_file_t *f)
{
	char *buf = malloc(1 << 20);
	errcode_t err = 0;

	if (!buf)
		return ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf, 1 << 20);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			break;
		}
		if (n == 0)
			break;
		if ((err = e3_file_write(f, buf, (size_t)n)))
			break;
	}
	free(buf);
	return err;
}

DBG_CMD(do_write)
{
	struct dbg *d = dbg_of(info);
	char buf[PATH_BUF];
	const char *name;
	struct e3_attr a;
	struct stat st;
	e3_file_t *f;
	ext2_ino_t dir, ino;
	errcode_t err, err2;
	int fd;

	if (dbg_args(d, argc, 3, 3, "write HOSTFILE PATH") || dbg_need_rw(d))
		return;
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		dbg_fail(d, errno, "%s", argv[1]);
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		dbg_fail(d, 0, "%s: not a regular file", argv[1]);
		close(fd);
		return;
	}
	if (!(dir = dbg_parent(d, argv[2], buf, sizeof(buf), &name))) {
		close(fd);
		return;
	}
	/* as debugfs: the host file's permission bits, owner root */
	dbg_new_attr(&a, LINUX_S_IFREG | (st.st_mode & 07777));
	err = e3_create(d->img, dir, name, &a, (uint64_t)st.st_size, &f);
	if (err) {
		dbg_fail(d, err, "%s", argv[2]);
		close(fd);
		return;
	}
	ino = e3_file_ino(f);
	err = copy_in(fd, f);
	err2 = e3_file_close(f);
	close(fd);
	wrote(d);
	if (err || err2) {
		dbg_fail(d, err ? err : err2, "%s", argv[2]);
		return;
	}
	fprintf(d->out, "Allocated inode: %u\n", ino);
}

DBG_CMD(do_symlink)
{
	struct dbg *d = dbg_of(info);
	char buf[PATH_BUF];
	const char *name;
	struct e3_attr a;
	ext2_ino_t dir, ino;
	errcode_t err;

	if (dbg_args(d, argc, 3, 3, "symlink PATH TARGET") || dbg_need_rw(d))
		return;
	if (!(dir = dbg_parent(d, argv[1], buf, sizeof(buf), &name)))
		return;
	dbg_new_attr(&a, LINUX_S_IFLNK | 0777);
	err = e3_symlink(d->img, dir, name, argv[2], &a, &ino);
	if (err)
		dbg_fail(d, err, "%s", argv[1]);
	else
		wrote(d);
}

DBG_CMD(do_mknod)
{
	struct dbg *d = dbg_of(info);
	static const char usage[] = "mknod PATH [p| [c|b] MAJOR MINOR]";
	unsigned long long major = 0, minor = 0;
	char buf[PATH_BUF];
	const char *name;
	struct e3_attr a;
	ext2_ino_t dir, ino;
	uint32_t type;
	int want;
	errcode_t err;

	if (argc < 3 || argv[2][1]) {
		dbg_fail(d, 0, "usage: %s", usage);
		return;
	}
	switch (argv[2][0]) {
	case 'p': type = LINUX_S_IFIFO; want = 3; break;
	case 'c': type = LINUX_S_IFCHR; want = 5; break;
	case 'b': type = LINUX_S_IFBLK; want = 5; break;
	default: type = 0; want = 0; break;
	}
	if (!want || argc != want) {
		dbg_fail(d, 0, "usage: %s", usage);
		return;
	}
	if (want == 5 && (dbg_number(d, argv[3], "major", &major) ||
			  dbg_number(d, argv[4], "minor", &minor)))
		return;
	if (major > 4095 || minor > 1048575) {
		dbg_fail(d, 0, "device number out of range: %llu %llu", major, minor);
		return;
	}
	if (dbg_need_rw(d))
		return;
	if (!(dir = dbg_parent(d, argv[1], buf, sizeof(buf), &name)))
		return;
	dbg_new_attr(&a, type | 0644);
	err = e3_mknod(d->img, dir, name, &a,
		       makedev((unsigned)major, (unsigned)minor), &ino);
	if (err) {
		dbg_fail(d, err, "%s", argv[1]);
		return;
	}
	wrote(d);
	fprintf(d->out, "Allocated inode: %u\n", ino);
}

DBG_CMD(do_link)
{
	struct dbg *d = dbg_of(info);
	char buf[PATH_BUF];
	const char *name;
	ext2_ino_t ino, dir, existing;
	errcode_t err;

	if (dbg_args(d, argc, 3, 3, "link FILE PATH") || dbg_need_rw(d))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	/* as debugfs: into PATH when it is a directory, under FILE's name */
	if (!ext2fs_namei(d->fs, d->root, d->cwd, argv[2], &existing) &&
	    !ext2fs_check_directory(d->fs, existing)) {
		const char *base = strrchr(argv[1], '/');

		dir = existing;
		name = base ? base + 1 : argv[1];
		if (argv[1][0] == '<') {
			dbg_fail(d, 0, "%s: give the new name (PATH/NAME)", argv[2]);
			return;
		}
	} else if (!(dir = dbg_parent(d, argv[2], buf, sizeof(buf), &name))) {
		return;
	}
	err = e3_link(d->img, dir, name, ino);
	if (err)
		dbg_fail(d, err, "%s", argv[2]);
	else
		wrote(d);
}

static void remove_entry(struct dbg *d, int argc, const char *const *argv,
			 int is_dir)
{
	char buf[PATH_BUF];
	const char *name;
	ext2_ino_t dir;
	errcode_t err;

	if (dbg_args(d, argc, 2, 2, is_dir ? "rmdir DIR" : "rm FILE") ||
	    dbg_need_rw(d))
		return;
	if (!(dir = dbg_parent(d, argv[1], buf, sizeof(buf), &name)))
		return;
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		dbg_fail(d, E3_BAD_NAME, "%s", argv[1]);
		return;
	}
	err = is_dir ? e3_rmdir(d->img, dir, name) : e3_remove(d->img, dir, name);
	if (err)
		dbg_fail(d, err, "%s", argv[1]);
	else
		wrote(d);
}

DBG_CMD(do_rm)
{
	remove_entry(dbg_of(info), argc, argv, 0);
}

DBG_CMD(do_unlink)
{
	remove_entry(dbg_of(info), argc, argv, 0);
}

DBG_CMD(do_rmdir)
{
	remove_entry(dbg_of(info), argc, argv, 1);
}

/* punch FILE START [END]: frees logical blocks START..END (to the end
 * without END); the size stays, the range reads back as a hole */
DBG_CMD(do_punch)
{
	struct dbg *d = dbg_of(info);
	unsigned long long start, end = ~0ULL;
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 3, 4, "punch FILE START [END]") || dbg_need_rw(d))
		return;
	if (!(ino = dbg_inode(d, argv[1])) ||
	    dbg_number(d, argv[2], "start block", &start) ||
	    (argc == 4 && dbg_number(d, argv[3], "end block", &end)))
		return;
	if (end < start) {
		dbg_fail(d, 0, "end block %llu before start block %llu", end, start);
		return;
	}
	err = e3_punch(d->img, ino, start, end);
	if (err)
		dbg_fail(d, err, "%s", argv[1]);
	else
		wrote(d);
}

/* kill_file FILE: as debugfs, the inode and its blocks are freed and
 * every entry naming it stays (e3fsck then finds them pointing at a
 * deleted inode); unlike debugfs', its xattr block share goes too and
 * its map is emptied, through the journal */
DBG_CMD(do_kill_file)
{
	struct dbg *d = dbg_of(info);
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 2, 2, "kill_file FILE") || dbg_need_rw(d))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	err = e3_kill_file(d->img, ino);
	if (err == E3_BAD_OPTION)
		dbg_fail(d, 0, "inode %u is reserved (the root, the journal"
			 "...): not killed", ino);
	else if (err == E3_NOT_FOUND)
		dbg_fail(d, 0, "inode %u is not in use", ino);
	else if (err)
		dbg_fail(d, err, "%s", argv[1]);
	else
		wrote(d);
}
