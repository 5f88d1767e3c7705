/*
 * e3_journal_view.h: the internal journal's log read without writing —
 * the transactions a replay would meet, and what it would do with each
 * logged block (lib/journal/recovery.c runs the replay's own scan and
 * revoke passes, then a walk of the replay pass that writes nothing).
 * For e3debugfs' jtrans and jreplay -n; what each home block *is* comes
 * from the inspection layer (e3_meta_owner) and the caller's inode walk.
 */
#ifndef E3_JOURNAL_VIEW_H
#define E3_JOURNAL_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <ext2fs/ext2fs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a replay does with one logged block. */
enum e3_jblock_fate {
	E3_JB_REPLAYED = 0,	/* copied to its home block */
	E3_JB_REVOKED,		/* skipped: a revoke record of its own or a
				   later committed transaction names it */
	E3_JB_UNCOMMITTED,	/* its transaction has no valid commit block */
	E3_JB_BAD,		/* unreadable, a bad tag checksum or a home
				   past the filesystem: skipped, and the
				   replay reports the journal corrupt */
};

struct e3_jlog_block {
	uint32_t tid;			/* its transaction */
	uint32_t log_block;		/* position in the log (journal block) */
	blk64_t log_fsblk;		/* the filesystem block holding that */
	blk64_t home;			/* where a replay writes it */
	enum e3_jblock_fate fate;
	uint32_t revoke_tid;		/* E3_JB_REVOKED: the revoking one */
	int escaped;			/* its first word was the JBD2 magic */
};

struct e3_jtxn {
	uint32_t tid;
	int committed;			/* a valid commit block: replayed */
	uint32_t first_log_block;	/* where it starts in the log */
	uint32_t blocks;		/* tagged blocks */
	uint32_t revokes;		/* revoke records */
	size_t first;			/* its blocks: view->blocks[first..] */
};

struct e3_jview {
	int empty;			/* s_start 0: nothing to replay */
	uint32_t sequence;		/* the journal superblock's s_sequence */
	uint32_t start;			/* its s_start */
	uint32_t start_tid, end_tid;	/* committed: [start_tid, end_tid) */
	struct e3_jtxn *txns;
	size_t ntxns;
	struct e3_jlog_block *blocks;	/* in log (= replay) order */
	size_t nblocks;
	errcode_t problem;		/* what the replay would report beside
					   replaying (E3_JOURNAL_CORRUPT,
					   E3_JOURNAL_LOG_OVERRUN, EIO); 0 */
};

/* Reads fs's internal journal as a replay would and fills v; writes
 * nothing (fs may be read-only). Errors as e3_journal_replay's for a
 * journal that cannot be read at all. Free v with e3_journal_view_free
 * (also after an error). */
errcode_t e3_journal_view(ext2_filsys fs, struct e3_jview *v);
void e3_journal_view_free(struct e3_jview *v);
const char *e3_jblock_fate_name(enum e3_jblock_fate f);

#ifdef __cplusplus
}
#endif

#endif
