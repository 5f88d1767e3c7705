/*
 * dbg.h: what e3debugfs' files share — the one context of a run (the
 * open image, cwd, where a request prints, whether it failed), and the
 * helpers every request uses: argument checks, path and inode parsing,
 * reporting a failure once.
 *
 * A request is a libss command: do_<name>(argc, argv, sci_idx, info)
 * with info the struct dbg. It prints its result to d->out (stdout, or a
 * buffer that becomes the "result" field under -J) and reports a failure
 * with dbg_fail; shell.c prints it as "e3debugfs: IMAGE: request: reason"
 * and turns it into the exit status.
 */
#ifndef E3_DBG_H
#define E3_DBG_H

#include <stdio.h>
#include <unistd.h>	/* getopt for the requests */
#include "e3img.h"
#include "../misc/exit.h"	/* the suite's one exit-status table */

#define DBG_EXIT_OK	E3_EXIT_OK
#define DBG_EXIT_FAILED	E3_EXIT_PARTIAL	/* a request failed */
#define DBG_EXIT_OPEN	E3_EXIT_ERROR	/* the image cannot be opened */
#define DBG_EXIT_USAGE	E3_EXIT_USAGE

struct dbg {
	char *image;			/* the path as given (the last opened) */
	e3_image_t *img;		/* -w: the open image (writes); else NULL */
	ext2_filsys fs;			/* what reads use */
	int view_replayed;		/* fs shows a journal replayed in memory */
	ext2_filsys disk_fs;		/* then, for logdump: the image as on
					   disk, opened when first needed */
	unsigned long superblock;	/* -s, -b: how fs was opened */
	unsigned blocksize;
	int writable;			/* -w (and not -c) */
	int catastrophic;		/* -c: no bitmaps */
	int json, stop_on_error;
	int quit;			/* the quit request ran */
	ext2_ino_t root, cwd;
	FILE *out;			/* where the current request prints */
	/* the current request */
	const char *request;
	int failed;
	int changed;			/* wrote something: commit after it */
	char errmsg[1024];
	int any_failed;
	int open_failed;		/* an open request failed: exit 8 */
};

static inline struct dbg *dbg_of(void *info)
{
	return (struct dbg *)info;
}

/* Records the current request's failure: "fmt: error_message(err)", or
 * just one of them (fmt NULL, or err 0). Only the first one counts. */
void dbg_fail(struct dbg *d, errcode_t err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* argc outside [min, max]: fails with "usage: USAGE", returns 1. */
int dbg_args(struct dbg *d, int argc, int min, int max, const char *usage);
/* Not opened with -w: fails ("read-only: open with -w"), returns 1. */
int dbg_need_rw(struct dbg *d);
/* Opened with -c: fails ("bitmaps not loaded (-c)"), returns 1. */
int dbg_need_bitmaps(struct dbg *d);

/* "<12>" or a path (absolute, or relative to cwd; symlinks followed
 * except in the last component, as debugfs). Fails and returns 0 when
 * it names nothing. */
ext2_ino_t dbg_inode(struct dbg *d, const char *spec);
/* For creators: the directory path names ("a/b/c" → a/b, or cwd) and
 * the new entry's name (c), never containing a '/'. *name points into
 * buf (size len). Returns 0 (and fails) when the directory is missing
 * or the name empty. */
ext2_ino_t dbg_parent(struct dbg *d, const char *path, char *buf, size_t len,
		      const char **name);
/* A number (0x.., 0.. accepted); fails naming what ("block") when bad. */
int dbg_number(struct dbg *d, const char *s, const char *what,
	       unsigned long long *v);
/* The whole on-disk inode (large where the image has room). Fails with
 * the spec in the message. buf must hold EXT2_INODE_SIZE bytes and
 * struct ext2_inode_large. */
int dbg_read_inode(struct dbg *d, ext2_ino_t ino, const char *spec,
		   struct ext2_inode_large *buf);
/* A zeroed inode buffer of the image's inode size (free() it). */
struct ext2_inode_large *dbg_inode_buf(struct dbg *d);

/* debugfs' time text: asctime() in the local zone (TZ) — with a
 * trailing newline, as debugfs prints it. */
const char *dbg_time(int64_t t, char buf[64]);
/* An inode time with the epoch bits of its _extra word. */
int64_t dbg_inode_time(uint32_t lo, uint32_t extra, int has_extra);

/* Every request has this shape (libss' __SS_PROTO). */
#define DBG_CMD(name) \
	void name(int argc, const char *const *argv, \
		  int sci_idx __attribute__((unused)), void *info)

/* getopt over a request's arguments (GNU getopt restarts at optind 0);
 * returns -1 at the end, '?' on a bad option. */
int dbg_getopt(int argc, const char *const *argv, const char *opts);

/* Attributes for a new inode: mode, owner root, times now (or
 * SOURCE_DATE_EPOCH). */
void dbg_new_attr(struct e3_attr *a, uint32_t mode);

/* The extended attributes of ino as debugfs' stat lists them
 * ("Extended attributes:" then "  name (len) = \"value\"" lines), nothing
 * when it has none (cmd_ea.c). statfmt: stat's form (long values only
 * counted). */
void dbg_print_xattrs(struct dbg *d, ext2_ino_t ino, int statfmt);

/* ino's path, found as ncheck finds it (the first directory naming it)
 * then ext2fs_get_pathname; NULL when unreachable. ext2fs_free_mem it. */
char *dbg_path_of(ext2_filsys fs, ext2_ino_t ino);

/* The shell (shell.c) */
void dbg_run_line(struct dbg *d, int sci, const char *line);

#endif
