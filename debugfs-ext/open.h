/*
 * open.h: opening and closing the image for a run (open.c).
 */
#ifndef E3_DBG_OPEN_H
#define E3_DBG_OPEN_H
#include "dbg.h"

/* Opens path into d (d->image becomes a copy of it): with write (and
 * not catastrophic) through e3_image_open as the one writer, else as a
 * view (e3_view_open). Says on stderr what it notices (a replay, -c);
 * returns why it cannot open, for the caller to report. */
errcode_t dbg_open(struct dbg *d, const char *path, int write,
		   int catastrophic, unsigned long superblock,
		   unsigned blocksize);
/* The image as it is on disk: d->fs, or, when d->fs shows a journal
 * replayed in memory, a second view without the replay (for logdump).
 * NULL (and the request failed) when it cannot be opened. */
ext2_filsys dbg_disk_fs(struct dbg *d);
/* Closes what dbg_open opened; a writer's close commits and checkpoints.
 * Returns 1 (and says why) when that fails. */
int dbg_close(struct dbg *d);

#endif
