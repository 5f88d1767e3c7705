/*
 * cmd_journal.c: the journal read as a replay reads it
 * (e3_journal_view.h: the library's own scan and revoke passes), with
 * what each logged block is:
 *
 *   jtrans         one line per transaction from the log's start: tid,
 *                  tagged blocks, revoke records, committed or not (the
 *                  first transaction without a valid commit is shown too,
 *                  never replayed); under it each logged block: its home
 *                  block and what that is, and whether a revoke
 *                  suppresses it.
 *   jreplay -n     what a replay would do, block by block in replay
 *                  order: "write HOME" or "skip HOME" (revoked, not
 *                  committed, bad), from which transaction and log block,
 *                  what the block is; then the totals. Writes nothing.
 *   jreplay        with -w: the replay ran when the image was opened (a
 *                  writer always replays first, through the library's
 *                  e3_journal_replay); says what it did. Read-only: refused.
 *
 * The log is read from the image as it is on disk (dbg_disk_fs), also
 * when the rest of a read-only session shows the journal replayed; what a
 * block *is* is named from d->fs, i.e. the state after the replay.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"
#include "e3_journal_view.h"
#include "open.h"
#include "owners.h"

/* The log of the image and the names of the blocks it logs; 1 (and the
 * request failed) when they cannot be had. */
static int load(struct dbg *d, struct e3_jview *v, char ***text)
{
	ext2_filsys disk = dbg_disk_fs(d);
	blk64_t *homes;
	errcode_t err;

	*text = NULL;
	if (!disk)
		return 1;
	if (!ext2fs_has_feature_journal(d->fs->super) ||
	    !d->fs->super->s_journal_inum) {
		dbg_fail(d, 0, "the filesystem has no internal journal");
		return 1;
	}
	if ((err = e3_journal_view(disk, v))) {
		dbg_fail(d, err, "reading the journal");
		e3_journal_view_free(v);
		return 1;
	}
	homes = calloc(v->nblocks ? v->nblocks : 1, sizeof(*homes));
	if (!homes) {
		dbg_fail(d, ENOMEM, "jtrans");
		e3_journal_view_free(v);
		return 1;
	}
	/* a home past the filesystem cannot be named (and is BAD) */
	for (size_t i = 0; i < v->nblocks; i++)
		homes[i] = v->blocks[i].home < ext2fs_blocks_count(d->fs->super) ?
			   v->blocks[i].home : 0;
	*text = dbg_owners(d, d->fs, homes, v->nblocks);
	free(homes);
	if (!*text) {
		e3_journal_view_free(v);
		return 1;
	}
	return 0;
}

static void fate_text(const struct e3_jlog_block *b, char *buf, size_t len)
{
	if (b->fate == E3_JB_REVOKED)
		snprintf(buf, len, "revoked by tid %u", b->revoke_tid);
	else
		snprintf(buf, len, "%s", e3_jblock_fate_name(b->fate));
}

static void print_head(struct dbg *d, const struct e3_jview *v)
{
	if (v->empty) {
		fprintf(d->out, "journal empty (s_start 0, s_sequence %u): "
			"nothing to replay\n", v->sequence);
		return;
	}
	fprintf(d->out, "journal from log block %u, s_sequence %u: %u "
		"committed transactions", v->start, v->sequence,
		v->end_tid - v->start_tid);
	if (v->end_tid != v->start_tid)
		fprintf(d->out, " (%u-%u)", v->start_tid, v->end_tid - 1);
	fputc('\n', d->out);
	if (v->problem)
		fprintf(d->out, "a replay would report: %s\n",
			error_message(v->problem));
}

DBG_CMD(do_jtrans)
{
	struct dbg *d = dbg_of(info);
	struct e3_jview v;
	char **text, fate[48];

	(void)argv;
	if (dbg_args(d, argc, 1, 1, "jtrans") || load(d, &v, &text))
		return;
	print_head(d, &v);
	for (size_t t = 0; t < v.ntxns; t++) {
		const struct e3_jtxn *x = &v.txns[t];

		fprintf(d->out, "tid %u: %u blocks, %u revokes, %s, at log "
			"block %u\n", x->tid, x->blocks, x->revokes,
			x->committed ? "committed" : "not committed",
			x->first_log_block);
		for (size_t i = x->first; i < x->first + x->blocks; i++) {
			const struct e3_jlog_block *b = &v.blocks[i];

			fate_text(b, fate, sizeof(fate));
			fprintf(d->out, "  %llu: %s", (unsigned long long)b->home,
				b->home < ext2fs_blocks_count(d->fs->super) ?
				text[i] : "past the filesystem's end");
			if (b->fate != E3_JB_REPLAYED)
				fprintf(d->out, " [%s]", fate);
			fputc('\n', d->out);
		}
	}
	dbg_owners_free(text, v.nblocks);
	e3_journal_view_free(&v);
}

static int blk_cmp(const void *a, const void *b)
{
	blk64_t x = *(const blk64_t *)a, y = *(const blk64_t *)b;

	return x < y ? -1 : x > y;
}

static void replay_dry(struct dbg *d)
{
	struct e3_jview v;
	char **text, fate[48];
	size_t writes = 0, skips = 0, distinct = 0;
	blk64_t *seen;

	if (load(d, &v, &text))
		return;
	print_head(d, &v);
	seen = calloc(v.nblocks ? v.nblocks : 1, sizeof(*seen));
	if (!seen) {
		dbg_fail(d, ENOMEM, "jreplay -n");
		goto out;
	}
	for (size_t i = 0; i < v.nblocks; i++) {
		const struct e3_jlog_block *b = &v.blocks[i];
		const char *w = b->home < ext2fs_blocks_count(d->fs->super) ?
				text[i] : "past the filesystem's end";

		if (b->fate == E3_JB_REPLAYED) {
			seen[writes++] = b->home;
			fprintf(d->out, "write %llu from tid %u (log block %u): "
				"%s\n", (unsigned long long)b->home, b->tid,
				b->log_block, w);
		} else {
			skips++;
			fate_text(b, fate, sizeof(fate));
			fprintf(d->out, "skip %llu from tid %u (log block %u): "
				"%s: %s\n", (unsigned long long)b->home, b->tid,
				b->log_block, fate, w);
		}
	}
	/* a block logged by several transactions is written each time */
	qsort(seen, writes, sizeof(*seen), blk_cmp);
	for (size_t i = 0; i < writes; i++)
		distinct += !i || seen[i] != seen[i - 1];
	fprintf(d->out, "would write %zu blocks (%zu distinct), skip %zu; "
		"nothing written\n", writes, distinct, skips);
	free(seen);
out:
	dbg_owners_free(text, v.nblocks);
	e3_journal_view_free(&v);
}

DBG_CMD(do_jreplay)
{
	struct dbg *d = dbg_of(info);
	const struct e3_open_report *rep;
	int dry = 0, c;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "n")) != -1) {
		if (c != 'n') {
			dbg_fail(d, 0, "usage: jreplay [-n]");
			return;
		}
		dry = 1;
	}
	if (optind != argc) {
		dbg_fail(d, 0, "usage: jreplay [-n]");
		return;
	}
	if (dry) {
		replay_dry(d);
		return;
	}
	if (!d->img) {
		dbg_fail(d, 0, "read-only: open with -w to replay (a writer "
			 "replays the journal when it opens the image); "
			 "jreplay -n shows what a replay would write");
		return;
	}
	rep = e3_image_open_report(d->img);
	if (rep->replayed)
		fprintf(d->out, "the journal was replayed when the image was "
			"opened: %u transactions, %u blocks\n",
			rep->transactions, rep->blocks);
	else
		fprintf(d->out, "nothing to replay: the journal was empty "
			"when the image was opened\n");
}
