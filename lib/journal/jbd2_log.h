/*
 * jbd2_log.h: an internal journal's geometry as both the writer
 * (journal*.c) and recovery (recovery.c) see it — the log block → fs block
 * map of inode 8, the journal superblock and its validation, checksums.
 */
#ifndef E3_JBD2_LOG_H
#define E3_JBD2_LOG_H

#include <ext2fs/ext2fs.h>
#include "jbd2_format.h"

struct e3_replay_report;

struct jbd2_log {
	ext2_filsys fs;
	io_channel io;			/* where the log is read and written */
	unsigned bs;			/* journal block size = fs block size */
	uint32_t maxlen;		/* log blocks: [first, maxlen) */
	uint32_t first;
	blk64_t *map;			/* map[n]: fs block of log block n */
	blk64_t *sorted;		/* map sorted, for "is a journal block" */
	uint32_t nmap;			/* entries in map and sorted */
	blk64_t *ind;			/* inode 8's indirect blocks, sorted */
	uint32_t nind;
	unsigned char *sbuf;		/* journal block 0, bs bytes */
	struct jbd2_superblock *jsb;	/* == sbuf */
	int v2;				/* superblock v2 (features valid) */
	uint32_t compat, incompat;	/* 0 for a v1 superblock */
	uint32_t csum_seed;		/* crc32c of s_uuid (csum v2/v3) */
};

#define JBD2_LOG_READ	0	/* recovery: every feature recovery knows */
#define JBD2_LOG_WRITE	1	/* our writer: ext3's feature set only */
/* e3fsck -p/-y replaying a log whose superblock has a damaged s_first or
 * s_maxlen: those two are taken from the journal inode as a journal is
 * made (1, and the inode's length) instead, in memory, so the committed
 * transactions e2fsck would replay are not lost; the replay then writes
 * the mended superblock. Every other rule stays. */
#define JBD2_LOG_SALVAGE	2

/* Loads and validates fs's internal journal. io: the channel to use. */
errcode_t jbd2_log_open(ext2_filsys fs, io_channel io, int mode,
			struct jbd2_log *log);
/* Loads and validates fs's external journal on jio (jbd2_log.c). */
errcode_t jbd2_log_open_dev(ext2_filsys fs, io_channel jio, int mode,
			    struct jbd2_log *log);
/* Replays the journal on jio into fs, as e3_journal_replay replays the
 * internal one (recovery.c). */
errcode_t e3_journal_replay_dev(ext2_filsys fs, io_channel jio,
				struct e3_replay_report *rep);
/* The internal journal replayed with JBD2_LOG_SALVAGE (recovery.c). */
errcode_t e3_journal_replay_salvage(ext2_filsys fs,
				    struct e3_replay_report *rep);
void jbd2_log_close(struct jbd2_log *log);
/* Every check a journal superblock must pass before anything trusts it
 * (what e2fsck's journal load and the kernel's superblock check refuse),
 * on its own: jsb is journal block 0, bs the filesystem's block size,
 * nblocks the journal inode's size in blocks. 0, E3_JOURNAL_BAD (magic,
 * block type, checksums), E3_JOURNAL_UNSUPPORTED (features, shared
 * journal, a v1 superblock for a writer) or an E3_JOURNAL_SB_* field
 * error. *why (when why is not NULL): a few words for e3fsck's report. */
errcode_t jbd2_super_check(const struct jbd2_superblock *jsb, unsigned bs,
			   uint64_t nblocks, int mode, const char **why);
/* Log block lb (>= first; lb - first may be any number of turns), wrapped
 * into [first, maxlen): arithmetic, so a count a corrupt descriptor gives
 * costs no more than a small one. */
static inline uint32_t jbd2_log_wrap(const struct jbd2_log *log, uint64_t lb)
{
	if (lb >= log->maxlen)
		lb = log->first + (lb - log->first) % (log->maxlen - log->first);
	return (uint32_t)lb;
}
errcode_t jbd2_log_read(struct jbd2_log *log, uint32_t lb, void *buf);
/* Writes the in-memory journal superblock (checksum refreshed). */
errcode_t jbd2_log_write_super(struct jbd2_log *log);
/* Whether fs block blk belongs to the journal inode's data. */
int jbd2_log_owns(const struct jbd2_log *log, blk64_t blk);
/* blk is one of inode 8's blocks: a log block or an indirect block. */
int jbd2_log_holds(const struct jbd2_log *log, blk64_t blk);
/* crc32c over buf (csum v2/v3), seeded from the journal's UUID. */
uint32_t jbd2_csum(const struct jbd2_log *log, uint32_t crc,
		   const void *buf, size_t len);
uint32_t jbd2_super_csum(const struct jbd2_superblock *jsb);
/* Checksummed descriptor/revoke block tails and commit blocks. */
int jbd2_tail_verify(const struct jbd2_log *log, const unsigned char *blk);
int jbd2_commit_verify(const struct jbd2_log *log, const unsigned char *blk);

#endif
