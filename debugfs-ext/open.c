/*
 * open.c: how e3debugfs opens an image.
 *
 * -w: e3_image_open(E3_OPEN_WRITE) — the library refuses a mounted image
 * and one another e3img process has open (its flock), and replays a
 * pending journal first; we say so. Every change then goes through the
 * library's journal.
 * Otherwise (and always with -c): e3_view_open, read-only under a shared
 * lock; a pending journal is replayed in memory only, so what is shown
 * is what a replay would give while the image keeps its journal; we say
 * so once. -c skips the bitmaps, as debugfs' catastrophic mode does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "open.h"

static errcode_t open_writer(struct dbg *d, const char *path)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	const struct e3_open_report *rep;
	errcode_t err = e3_image_open(path, &opts, &d->img);

	if (err)
		return err;
	d->fs = e3_image_fs(d->img);
	d->writable = 1;
	rep = e3_image_open_report(d->img);
	if (rep->replayed)
		fprintf(stderr, "e3debugfs: %s: journal replayed before writing "
			"(%u transactions, %u blocks)\n", path,
			rep->transactions, rep->blocks);
	return 0;
}

static errcode_t open_view(struct dbg *d, const char *path, int catastrophic,
			   unsigned long superblock, unsigned blocksize)
{
	struct e3_replay_report rep;
	int replayed = 0;
	unsigned flags = catastrophic ? E3_VIEW_NO_BITMAPS : 0;
	errcode_t err;

	memset(&rep, 0, sizeof(rep));
	err = e3_view_open(path, flags, superblock, blocksize, &d->fs, &rep,
			   &replayed);
	if (err)
		return err;
	d->view_replayed = replayed;
	if (replayed && rep.transactions)
		fprintf(stderr, "e3debugfs: %s: the journal needs recovery: "
			"showing the replayed state (%u transactions), "
			"the image is not written\n", path, rep.transactions);
	else if (replayed)
		fprintf(stderr, "e3debugfs: %s: the journal is marked for "
			"recovery but holds no committed transaction (mounted, "
			"or killed before its first commit)\n", path);
	return 0;
}

errcode_t dbg_open(struct dbg *d, const char *path, int write,
		   int catastrophic, unsigned long superblock, unsigned blocksize)
{
	char *copy = strdup(path);
	errcode_t err;

	if (!copy)
		return ENOMEM;
	free(d->image);
	d->image = copy;
	d->catastrophic = catastrophic;
	d->superblock = superblock;
	d->blocksize = blocksize;
	d->view_replayed = 0;
	if (write && catastrophic)
		fprintf(stderr, "e3debugfs: %s: -c is read-only: -w ignored\n",
			path);
	if (catastrophic)
		fprintf(stderr, "e3debugfs: %s: catastrophic mode - not "
			"reading inode or group bitmaps\n", path);
	if (write && !catastrophic)
		err = open_writer(d, path);
	else
		err = open_view(d, path, catastrophic, superblock, blocksize);
	if (err)
		return err;
	d->root = d->cwd = EXT2_ROOT_INO;
	return 0;
}

ext2_filsys dbg_disk_fs(struct dbg *d)
{
	struct e3_replay_report rep;
	int replayed;
	errcode_t err;

	if (!d->view_replayed)
		return d->fs;
	if (!d->disk_fs) {
		err = e3_view_open(d->image, E3_VIEW_NO_REPLAY | E3_VIEW_NO_BITMAPS,
				   d->superblock, d->blocksize, &d->disk_fs,
				   &rep, &replayed);
		if (err) {
			dbg_fail(d, err, "the image as on disk");
			return NULL;
		}
	}
	return d->disk_fs;
}

int dbg_close(struct dbg *d)
{
	errcode_t err;

	if (d->disk_fs)
		ext2fs_close_free(&d->disk_fs);
	if (d->img) {
		err = e3_image_close(d->img);
		d->img = NULL;
		d->fs = NULL;
		if (err) {
			fprintf(stderr, "e3debugfs: %s: close: %s\n", d->image,
				error_message(err));
			return 1;
		}
		return 0;
	}
	if (d->fs)
		ext2fs_close_free(&d->fs);
	return 0;
}
