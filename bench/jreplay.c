/*
 * jreplay.c: our journal replay as a command, for the journal tests until
 * e3fsck carries it: opens IMAGE read-only through e3_image_open with
 * E3_OPEN_REPLAY (the path every tool takes) and prints what the replay
 * did. --raw calls e3_journal_replay on a plain libext2fs handle instead;
 * --write opens as a writer (which always replays), --no-replay as a
 * reader that was not asked to replay (refuses a pending journal).
 *   jreplay [--raw|--write|--no-replay] IMAGE
 */
#include <stdio.h>
#include <string.h>

#include "e3img.h"
#include "../misc/util.h"

static int raw_replay(const char *image)
{
	struct e3_replay_report rep;
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_open(image, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			  unix_io_manager, &fs);
	if (err) {
		tool_error(image, err, NULL);
		return 1;
	}
	if (!e3_journal_pending(fs)) {
		printf("nothing to replay\n");
		ext2fs_close_free(&fs);
		return 0;
	}
	err = e3_journal_replay(fs, &rep);
	ext2fs_free(fs);	/* stale after a replay: write nothing back */
	if (err) {
		tool_error(image, err, "while replaying the journal");
		return 1;
	}
	printf("replayed %u transactions (%u..%u), %u blocks, %u revoked\n",
	       rep.transactions, rep.first_tid, rep.last_tid, rep.blocks,
	       rep.revoked);
	return 0;
}

int main(int argc, char **argv)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_REPLAY };
	const struct e3_open_report *r;
	e3_image_t *img;
	errcode_t err;

	tool_init(argv[0]);
	if (argc == 3 && strcmp(argv[1], "--raw") == 0)
		return raw_replay(argv[2]);
	if (argc == 3 && strcmp(argv[1], "--write") == 0)
		opts.flags = E3_OPEN_WRITE;
	else if (argc == 3 && strcmp(argv[1], "--no-replay") == 0)
		opts.flags = 0;
	else if (argc != 2) {
		tool_usage_error("usage: jreplay [--raw|--write|--no-replay] IMAGE");
		return 2;
	}
	err = e3_image_open(argv[argc - 1], &opts, &img);
	if (err) {
		tool_error(argv[argc - 1], err, NULL);
		return 1;
	}
	r = e3_image_open_report(img);
	if (r->replayed)
		printf("replayed %u transactions, %u blocks\n", r->transactions,
		       r->blocks);
	else
		printf("nothing to replay\n");
	return e3_image_close(img) ? 1 : 0;
}
