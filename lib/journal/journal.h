/*
 * journal.h: lib/'s journaling layer — an io_manager wrapped around the
 * image's unix I/O channel that captures every metadata write into the
 * running JBD2 transaction; commit, checkpoint; recovery is public
 * (e3_journal_replay in e3img.h).
 *
 * This layer knows nothing of the image struct, files or the allocator
 * (the kernel's split between fs/jbd2 and fs/ext3): what it needs from
 * above comes in struct e3_journal_params at start. Callers serialise
 * every call with the lock that guards the ext2_filsys (fs_lock).
 *
 * The one exception to "every call runs under fs_lock, start to end": a
 * commit started by e3_journal_op_end / e3_journal_op_end_held releases
 * that lock (params.lock) while it writes and flushes the log, and takes
 * it again to finish, so other threads' operations go on meanwhile, into
 * a new running transaction (journal_commit.c: the three phases). The
 * caller gets the lock back held, but other threads may have run in
 * between. Whatever needs the log quiet (another commit, a checkpoint,
 * stop) waits for that commit, also releasing the lock while it waits:
 * e3_journal_op_end(_held) when the running transaction is full,
 * e3_journal_commit, e3_journal_reserve when it must commit, and
 * e3_journal_stop. They are all called at operation boundaries (reserve:
 * before the operation writes anything), as is e3_journal_op_begin, which
 * holds new operations back while the running transaction is full.
 */
#ifndef E3_JOURNAL_H
#define E3_JOURNAL_H

#include <pthread.h>
#include <stdint.h>
#include <ext2fs/ext2fs.h>

struct e3_journal;

/* What the layer above tells the journal when it starts. */
struct e3_journal_params {
	/* commit block times: seconds of a fixed clock (SOURCE_DATE_EPOCH),
	 * so the log's bytes are reproducible; -1 for the real clock */
	int64_t clock;
	/* seconds between time-driven commits; 0: 5, as ext3's default */
	unsigned commit_interval;
	/* after every commit (bypass mode: every commit call): blocks freed
	 * in the committed transaction may be reused now. May be NULL. */
	void (*committed)(void *arg);
	/* when the running transaction becomes the committing one: what was
	 * freed so far is released by that commit's `committed`, what is
	 * freed from now on by the next one's. May be NULL. */
	void (*seal)(void *arg);
	void *arg;
	/* the mutex every call is made under (fs_lock): released during a
	 * commit's log writes and flushes, and waited on (a condition
	 * variable) by whatever needs the log quiet. NULL: commits keep the
	 * caller's lock throughout (single-threaded users). */
	pthread_mutex_t *lock;
};

/* Starts journaling fs: wraps fs->io. The journal must be empty (replay
 * first). Caller holds fs_lock. */
errcode_t e3_journal_start(ext2_filsys fs, const struct e3_journal_params *p,
			  struct e3_journal **ret);
/* Start of whatever is done under one hold of fs_lock (the layer above
 * calls it right after taking the lock): when the running transaction is
 * full, waits for the commit in flight, or commits it (as op_end would)
 * when none is, so that it never grows past its limit by more than the
 * one operation that filled it (worst_txn). An error aborts the journal;
 * the operation's writes then fail with E3_JOURNAL_ABORTED. Caller holds
 * fs_lock. */
void e3_journal_op_begin(struct e3_journal *j);
/* Waits, releasing fs_lock meanwhile, until no commit is in flight. An
 * operation that reads what it will rewrite before it knows its size
 * (e3_journal_reserve after the read) calls this first: holding fs_lock
 * from here on, no other commit can be put in flight, so the reserve
 * never releases the lock between the read and the write. Caller holds
 * fs_lock. */
void e3_journal_wait_quiet(struct e3_journal *j);
/* End of one atomic operation (mkdir, a file's close...): commits when the
 * running transaction has reached a quarter of the journal (at most
 * JNL_TXN_MAX_MEM of blocks, 16 MiB) or the commit interval has passed.
 * The commit lets fs_lock go while its I/O runs (see the top). While another
 * thread's commit is in flight it does not commit unless the running
 * transaction has reached its limit, and then waits for that commit
 * first. Caller holds fs_lock. */
errcode_t e3_journal_op_end(struct e3_journal *j);
/* e3_journal_op_end while the layer above has work in flight whose
 * metadata must not commit half done (files created, their data not yet
 * written): commits only when the running transaction has reached the
 * limit the journal's worst case allows, never on time. Caller holds
 * fs_lock. */
errcode_t e3_journal_op_end_held(struct e3_journal *j);
/* 1 when the running transaction and pending blocks still to come are
 * near that limit (three quarters of it) or, with by_time, when it holds
 * something and the commit interval has passed: a loader holding work in
 * flight should finish it and commit. Caller holds fs_lock. */
int e3_journal_commit_wanted(const struct e3_journal *j, int by_time,
			     uint64_t pending);
/* The running transaction's size a loader that commits itself should aim
 * at, in blocks (at most JNL_TXN_MEM of them, 4 MiB: below the limit at
 * which op_end commits on its own; 0: no limit applies, bypass mode).
 * e3_journal_commit_wanted asks at three quarters of it. Caller holds
 * fs_lock. */
uint64_t e3_journal_txn_limit(const struct e3_journal *j);
/* Writes libext2fs' dirty state (bitmaps, group descriptors, superblock)
 * into the running transaction and commits it; checkpoints too if asked.
 * Ordered mode: file data written with pwrite() to the image before this call is
 * made durable before the commit block. Waits for a commit in flight,
 * then commits holding fs_lock throughout: durable when it returns.
 * Caller holds fs_lock. */
errcode_t e3_journal_commit(struct e3_journal *j, int checkpoint);
/* Before an operation whose size depends on the content (the htree index
 * of one directory, say) and may be far above the usual few blocks: it
 * will write at most nblocks metadata blocks and revoke at most as many.
 * Commits the running transaction first when they might not fit after
 * it; E3_JOURNAL_TOO_SMALL when they cannot fit even in a transaction of
 * their own — nothing is written then, and the caller should do without
 * the operation (a directory left linear is valid ext3). When it must
 * commit while another commit is in flight it waits for that one,
 * releasing fs_lock: call e3_journal_wait_quiet before reading what the
 * operation rewrites. Caller holds fs_lock. */
errcode_t e3_journal_reserve(struct e3_journal *j, uint64_t nblocks);
/* A journaled metadata block was freed: revoke it in the running
 * transaction (only there, also while a commit is in flight). Caller
 * holds fs_lock. */
void e3_journal_revoke(struct e3_journal *j, blk64_t blk);
/* blk is one of the journal inode's blocks (log or indirect): never a
 * file's. */
int e3_journal_holds(const struct e3_journal *j, blk64_t blk);
/* io is this journal's capturing channel: a write_byte through it of a
 * few bytes of a block changes only those bytes of the running
 * transaction's copy (a partial capture), so callers may write what they
 * changed instead of the whole block. 0 for NULL, bypass, or another
 * channel. Caller holds fs_lock. */
int e3_journal_captures(const struct e3_journal *j, io_channel io);
/* Final commit and checkpoint, needs_recovery cleared, I/O unwrapped,
 * freed (even on error). Waits for a commit in flight first. Caller holds
 * fs_lock. */
errcode_t e3_journal_stop(struct e3_journal *j);
/* Where a stop that failed was, so the caller can say what state the
 * image is in: the journal had failed before (ABORTED: the image is as
 * of the last commit), the final commit failed (what was committed
 * before it is in the log, live transactions, and is replayed), writing
 * the committed blocks home failed (everything is committed: replay
 * gives it all), or clearing the log after that (nothing is lost). */
enum e3_jstop_stage {
	E3_JSTOP_DONE = 0, E3_JSTOP_ABORTED, E3_JSTOP_COMMIT,
	E3_JSTOP_CHECKPOINT, E3_JSTOP_FINISH,
};
struct e3_journal_stop_report {
	enum e3_jstop_stage stage;
	unsigned live;			/* committed transactions the log
					   holds for a replay */
	uint64_t commits;		/* commits this session made */
};
/* e3_journal_stop, saying in *r where it got to. */
errcode_t e3_journal_stop_report(struct e3_journal *j,
				 struct e3_journal_stop_report *r);
/* An operation failed half way and its undo failed too: the running
 * transaction must never commit. Drops it (and refuses every later write,
 * like a failed disk write: ABORTED); stop then returns err and the image
 * stays as of the last commit. EXT2_ET_UNIMPLEMENTED under
 * E3_JOURNAL=bypass, whose metadata is already home. Does not wait for
 * a commit in flight (the caller is half way through an operation and
 * must not let others in): that commit holds whole operations only and
 * may still complete; stop then reports it. Caller holds fs_lock. */
errcode_t e3_journal_poison(struct e3_journal *j, errcode_t err);
/* Whether a filesystem of this geometry with a journal of journal_blocks
 * (0: none) can hold the largest transaction a writer builds: 0, or
 * E3_JOURNAL_TOO_SMALL — what e3_journal_start would say, before the
 * filesystem exists (e3mkfs -d). */
errcode_t e3_journal_geometry_fits(unsigned block_size, uint64_t groups,
				   uint64_t desc_blocks,
				   uint64_t journal_blocks);
/* Unwraps and frees without writing: the image is as of the last commit.
 * No commit may be in flight (the threads that operate on the image have
 * returned: a commit is in flight only inside someone's op_end). */
void e3_journal_abort(struct e3_journal *j);
/* The fault layer (E3_FAULT, see fault.h) for writes that bypass the
 * journal's channel: the load layer calls it before each pwrite of file
 * data, so crash sweeps cover data writes too. 0, or the injected error
 * (EIO/ENOSPC), or the process dies. j may be NULL (no journal: 0).
 * Thread-safe, needs no lock. */
errcode_t e3_journal_fault_write(struct e3_journal *j);

#endif
