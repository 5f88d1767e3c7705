/*
 * cmd_ls.c: ls [-l] [-p] [-d] [-r] [DIR] in debugfs' three formats: the
 * default (inode, record length, name; wrapped at 80 columns), -l (inode,
 * mode, file type, owner, size, mtime, name) and -p (slash-separated
 * fields for scripts). -d adds deleted entries in <brackets>; -r (raw
 * names of encrypted directories) changes nothing on ext3.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dbg.h"

#define LS_LONG		0x1
#define LS_DELETED	0x2
#define LS_PARSE	0x4

struct ls_ctx {
	struct dbg *d;
	int opts;
	int col;
};

static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May",
	"Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

static void long_line(struct ls_ctx *ls, ext2_ino_t ino, int deleted,
		      struct ext2_dir_entry *de, const char *name)
{
	struct ext2_inode inode;
	char date[40] = "                 ";

	memset(&inode, 0, sizeof(inode));
	if (ino) {
		time_t t;
		struct tm tm;

		if (ext2fs_read_inode(ls->d->fs, ino, &inode))
			return;
		t = (time_t)(int32_t)inode.i_mtime;
		if (localtime_r(&t, &tm))
			snprintf(date, sizeof(date), "%2d-%s-%4d %02d:%02d",
				 tm.tm_mday, months[tm.tm_mon],
				 1900 + tm.tm_year, tm.tm_hour, tm.tm_min);
	}
	fprintf(ls->d->out, "%c%6u%c %6o ", deleted ? '<' : ' ', ino,
		deleted ? '>' : ' ', inode.i_mode);
	fprintf(ls->d->out, "(%d)  %5d  %5d   ", ext2fs_dirent_file_type(de),
		inode_uid(inode), inode_gid(inode));
	if (LINUX_S_ISDIR(inode.i_mode))
		fprintf(ls->d->out, "%5u", inode.i_size);
	else
		fprintf(ls->d->out, "%5llu",
			(unsigned long long)EXT2_I_SIZE(&inode));
	fprintf(ls->d->out, " %s %s\n", date, name);
}

static void parse_line(struct ls_ctx *ls, ext2_ino_t ino, const char *name)
{
	struct ext2_inode inode;

	memset(&inode, 0, sizeof(inode));
	if (ino && ext2fs_read_inode(ls->d->fs, ino, &inode))
		return;
	fprintf(ls->d->out, "/%u/%06o/%d/%d/%s/", ino, inode.i_mode,
		inode_uid(inode), inode_gid(inode), name);
	if (LINUX_S_ISDIR(inode.i_mode))
		fprintf(ls->d->out, "/");
	else
		fprintf(ls->d->out, "%llu/", (unsigned long long)EXT2_I_SIZE(&inode));
	fprintf(ls->d->out, "\n");
}

static int ls_proc(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
		   int offset, int blocksize, char *buf, void *priv)
{
	struct ls_ctx *ls = priv;
	int deleted = entry == DIRENT_DELETED_FILE;
	ext2_ino_t ino = deleted ? 0 : de->inode;
	char name[EXT2_NAME_LEN + 1], item[EXT2_NAME_LEN + 40];
	unsigned rec_len = 0;
	int len = ext2fs_dirent_name_len(de);

	(void)dir;
	(void)offset;
	(void)buf;
	memcpy(name, de->name, (size_t)len);
	name[len] = '\0';
	if (ls->opts & LS_PARSE) {
		parse_line(ls, ino, name);
	} else if (ls->opts & LS_LONG) {
		long_line(ls, ino, deleted, de, name);
	} else {
		(void)ext2fs_get_rec_len(ls->d->fs, de, &rec_len);
		(void)blocksize;
		snprintf(item, sizeof(item), "%c%u%c (%u) %s   ",
			 deleted ? '<' : ' ', de->inode, deleted ? '>' : ' ',
			 rec_len, name);
		if (ls->col + (int)strlen(item) > 80) {
			fprintf(ls->d->out, "\n");
			ls->col = 0;
		}
		fprintf(ls->d->out, "%s", item);
		ls->col += (int)strlen(item);
	}
	return 0;
}

DBG_CMD(do_list_dir)
{
	struct dbg *d = dbg_of(info);
	struct ls_ctx ls = { .d = d };
	ext2_ino_t ino;
	int c, flags = DIRENT_FLAG_INCLUDE_EMPTY;
	errcode_t err;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "cdlpr")) != -1) {
		switch (c) {
		case 'l': ls.opts |= LS_LONG; break;
		case 'd': ls.opts |= LS_DELETED; break;
		case 'p': ls.opts |= LS_PARSE; break;
		case 'c': case 'r': break;
		default:
			dbg_fail(d, 0, "usage: ls [-l] [-d] [-p] [-r] [DIR]");
			return;
		}
	}
	if (argc > optind + 1) {
		dbg_fail(d, 0, "usage: ls [-l] [-d] [-p] [-r] [DIR]");
		return;
	}
	ino = argc == optind ? d->cwd : dbg_inode(d, argv[optind]);
	if (!ino)
		return;
	if (ls.opts & LS_DELETED)
		flags |= DIRENT_FLAG_INCLUDE_REMOVED;
	err = ext2fs_dir_iterate2(d->fs, ino, flags, NULL, ls_proc, &ls);
	fprintf(d->out, "\n");
	if (err)
		dbg_fail(d, err, "%s", argc == optind ? "." : argv[optind]);
}
