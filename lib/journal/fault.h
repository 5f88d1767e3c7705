/*
 * fault.h: crash and error injection for the crash tests (STYLE habit 11).
 * Read once from the environment when a journal starts:
 *   E3_FAULT=kill:N               SIGKILL the process at the N-th write
 *   E3_FAULT=eio:N | enospc:N     the N-th write fails with EIO / ENOSPC
 *   E3_FAULT=stop-after-commit:N  SIGKILL the process right after the
 *                                 N-th commit, leaving it un-checkpointed
 *                                 in the log (fault.c: why a kill)
 *   E3_FAULT=capture-enomem:N     the N-th metadata write libext2fs makes
 *                                 through the journal's channel fails with
 *                                 ENOMEM, as capturing it into the running
 *                                 transaction would without memory; this
 *                                 is how a step fails mid-operation (the
 *                                 others only fail at commit time)
 *   E3_FAULT=kill-commit:N        SIGKILL the process at the N-th write
 *                                 a commit makes to the log or the
 *                                 superblocks while it is in flight (the
 *                                 window in which op_end's commits run
 *                                 without fs_lock and other threads go
 *                                 on): log blocks, RECOVER, journal sb,
 *                                 commit block — not checkpoints, not
 *                                 file data
 *   E3_FAULT=stop-when-locked:1   SIGSTOP the process as soon as it holds
 *                                 the image lock (e3_image_flock), so a
 *                                 test can start another tool against an
 *                                 image known to be held, then SIGCONT it
 * Any N may be written N*K: the K writes from the N-th on fail (an undo
 * that meets the same shortage as the step it undoes).
 * "Writes" are every write that reaches the image file: the journal's log,
 * checkpoint and superblock writes, and file data written by the load
 * layer, which calls e3_journal_fault_write() before each pwrite. The
 * state lives in the journal (no globals); the counter is atomic because
 * data writers run without fs_lock.
 */
#ifndef E3_FAULT_H
#define E3_FAULT_H

#include <stdint.h>
#include <ext2fs/ext2fs.h>

enum e3_fault_kind {
	E3_FAULT_NONE = 0,
	E3_FAULT_KILL,
	E3_FAULT_EIO,
	E3_FAULT_ENOSPC,
	E3_FAULT_STOP_AFTER_COMMIT,
	E3_FAULT_CAPTURE_ENOMEM,
	E3_FAULT_STOP_WHEN_LOCKED,
	E3_FAULT_KILL_COMMIT,
};

struct e3_fault {
	enum e3_fault_kind kind;
	uint64_t at;			/* the N of the spec, >= 1 */
	uint64_t count;			/* the K of N*K (1 without) */
	uint64_t writes;		/* [atomic] writes seen so far */
	uint64_t commit_writes;		/* [atomic] of them, a commit's */
	uint64_t captures;		/* [fs_lock] metadata writes captured */
};

/* Parses spec (NULL or "" = no fault). E3_BAD_OPTION when malformed. */
errcode_t e3_fault_parse(struct e3_fault *f, const char *spec);
/* Call before a write reaches the disk: kills, or returns the injected
 * error for the N-th write, else 0. Thread-safe. */
errcode_t e3_fault_write(struct e3_fault *f);
/* Call before each write of a commit (besides e3_fault_write, which
 * counts every write): kills for kill-commit. Thread-safe. */
errcode_t e3_fault_commit_write(struct e3_fault *f);
/* Call before a metadata write is captured into the running transaction
 * (under fs_lock): the injected ENOMEM for capture-enomem, else 0. */
errcode_t e3_fault_capture(struct e3_fault *f);
/* Call after a commit is durable (commit number n, from 1). */
void e3_fault_committed(struct e3_fault *f, uint64_t n);
/* Call once the image lock is held: stops the process for
 * stop-when-locked (read from E3_FAULT here, no journal needed). */
void e3_fault_locked(void);

#endif
