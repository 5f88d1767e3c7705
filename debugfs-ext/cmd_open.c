/*
 * cmd_open.c: open [-w] [-c] [-b BS -s SB] IMAGE and close — another
 * image in the same session, as debugfs' open_filesys/close_filesys. The
 * image open so far is closed first (a writer's close commits). An open
 * that fails leaves no image open and makes the run exit 8; requests
 * other than open, lr and quit then fail until one succeeds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"
#include "open.h"

DBG_CMD(do_open)
{
	struct dbg *d = dbg_of(info);
	static const char usage[] = "open [-w] [-c] [-b BLOCKSIZE -s SUPERBLOCK] IMAGE";
	unsigned long long bs = 0, sb = 0;
	int c, write = 0, catastrophic = 0;
	char *path;
	errcode_t err;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "wcb:s:")) != -1) {
		switch (c) {
		case 'w': write = 1; break;
		case 'c': catastrophic = 1; break;
		case 'b':
			if (dbg_number(d, optarg, "block size", &bs))
				return;
			break;
		case 's':
			if (dbg_number(d, optarg, "superblock", &sb))
				return;
			break;
		default:
			dbg_fail(d, 0, "usage: %s", usage);
			return;
		}
	}
	if (argc != optind + 1 || (sb && !bs) ||
	    (bs && bs != 1024 && bs != 2048 && bs != 4096)) {
		dbg_fail(d, 0, "usage: %s", usage);
		return;
	}
	if (sb && write && !catastrophic) {
		dbg_fail(d, 0, "-s (a backup superblock) is read-only: drop -w");
		return;
	}
	if (!(path = strdup(argv[optind]))) {
		dbg_fail(d, ENOMEM, NULL);
		return;
	}
	if ((d->fs || d->img) && dbg_close(d))
		dbg_fail(d, 0, "closing %s failed", d->image);
	err = dbg_open(d, path, write, catastrophic, (unsigned long)sb,
		       (unsigned)bs);
	if (err) {
		d->open_failed = 1;
		dbg_fail(d, err, "%s", path);
	}
	free(path);
}

DBG_CMD(do_close)
{
	struct dbg *d = dbg_of(info);

	(void)argv;
	if (dbg_args(d, argc, 1, 1, "close"))
		return;
	if (dbg_close(d))
		dbg_fail(d, 0, "closing %s failed", d->image);
}
