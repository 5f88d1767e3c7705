/*
 * cmd_nav.c: moving around — cd, pwd, dirsearch DIR NAME (which block
 * and offset of the directory hold the name), list_requests, quit.
 */
#include <ss/ss.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"

DBG_CMD(do_cd)
{
	struct dbg *d = dbg_of(info);
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 2, 2, "cd DIR"))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	err = ext2fs_check_directory(d->fs, ino);
	if (err)
		dbg_fail(d, err == EXT2_ET_NO_DIRECTORY ? E3_NOT_DIR : err,
			 "%s", argv[1]);
	else
		d->cwd = ino;
}

static void pwd_line(struct dbg *d, const char *label, ext2_ino_t ino)
{
	char *path = NULL;
	errcode_t err = ext2fs_get_pathname(d->fs, ino, 0, &path);

	if (err)
		dbg_fail(d, err, "pathname of inode %u", ino);
	fprintf(d->out, "%s INODE: %6u  PATH: %s\n", label, ino,
		path ? path : "NULL");
	ext2fs_free_mem(&path);
}

DBG_CMD(do_pwd)
{
	struct dbg *d = dbg_of(info);

	(void)argv;
	if (dbg_args(d, argc, 1, 1, "pwd"))
		return;
	pwd_line(d, "[pwd]  ", d->cwd);
	pwd_line(d, "[root] ", d->root);
}

struct search {
	struct dbg *d;
	const char *name;
	size_t len;
	char *buf;
	int found;
	errcode_t err;
};

static int search_block(ext2_filsys fs, blk64_t *blk, e2_blkcnt_t cnt,
			blk64_t ref, int ref_off, void *priv)
{
	struct search *s = priv;
	unsigned off = 0;

	(void)ref;
	(void)ref_off;
	if (cnt < 0)
		return 0;
	s->err = ext2fs_read_dir_block4(fs, *blk, s->buf, 0, 0);
	if (s->err)
		return BLOCK_ABORT;
	while (off + 8 <= fs->blocksize) {
		struct ext2_dir_entry *de = (struct ext2_dir_entry *)(s->buf + off);
		unsigned rec_len;

		if (ext2fs_get_rec_len(fs, de, &rec_len) || rec_len < 8 ||
		    off + rec_len > fs->blocksize)
			break;
		if (de->inode && (size_t)ext2fs_dirent_name_len(de) == s->len &&
		    memcmp(de->name, s->name, s->len) == 0) {
			/* debugfs prints the offset twice */
			fprintf(s->d->out, "Entry found at logical block %lld, "
				"phys %llu, offset %u\noffset %u\n", (long long)cnt,
				(unsigned long long)*blk, off, off);
			s->found = 1;
			return BLOCK_ABORT;
		}
		off += rec_len;
	}
	return 0;
}

DBG_CMD(do_dirsearch)
{
	struct dbg *d = dbg_of(info);
	struct search s = { .d = d };
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 3, 3, "dirsearch DIR NAME"))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	if ((err = ext2fs_check_directory(d->fs, ino))) {
		dbg_fail(d, err == EXT2_ET_NO_DIRECTORY ? E3_NOT_DIR : err,
			 "%s", argv[1]);
		return;
	}
	s.name = argv[2];
	s.len = strlen(argv[2]);
	s.buf = malloc(d->fs->blocksize);
	if (!s.buf) {
		dbg_fail(d, ENOMEM, NULL);
		return;
	}
	err = ext2fs_block_iterate3(d->fs, ino, BLOCK_FLAG_READ_ONLY, NULL,
				    search_block, &s);
	free(s.buf);
	if (err || s.err)
		dbg_fail(d, err ? err : s.err, "%s", argv[1]);
	else if (!s.found)
		dbg_fail(d, E3_NOT_FOUND, "%s: %s", argv[1], argv[2]);
}

DBG_CMD(do_quit)
{
	struct dbg *d = dbg_of(info);

	(void)argc;
	(void)argv;
	d->quit = 1;
}

extern ss_request_table e3debugfs_cmds;

/* libss' own list_requests prints to stdout, past -J's capture */
DBG_CMD(do_lr)
{
	struct dbg *d = dbg_of(info);

	(void)argc;
	(void)argv;
	fprintf(d->out, "Available e3debugfs requests:\n\n");
	for (ss_request_entry *r = e3debugfs_cmds.requests; r->command_names; r++) {
		char names[128] = "";

		for (const char *const *n = r->command_names; *n; n++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names),
				 "%s%s", n == r->command_names ? "" : ", ", *n);
		fprintf(d->out, "%-24s %s\n", names, r->info_string);
	}
}
