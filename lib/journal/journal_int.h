/*
 * journal_int.h: the journal's private state, shared by journal.c (life
 * cycle and state machine), journal_io.c (the io_manager layer and the
 * in-memory block sets) and journal_commit.c (commit and checkpoint).
 * Every field is guarded by the image's fs_lock ([fs_lock]), except the
 * fault counters, which are atomic. While a commit is in flight
 * (cm_busy), its thread runs without fs_lock and touches only what is
 * tagged [commit] below: the staged transaction (struct jc_staged, its
 * own), the log geometry (fixed), the journal superblock buffer and the
 * real channel's writes and flushes; the others leave those alone until
 * cm_busy drops (they wait on `quiet`). The committing sets cm_run and
 * cm_revoked are read by the others (the read chain, revokes) and
 * written by no one while in flight.
 */
#ifndef E3_JOURNAL_INT_H
#define E3_JOURNAL_INT_H

#include <sys/tree.h>
#include "journal.h"
#include "jbd2_log.h"
#include "fault.h"

/* One fs block's newest contents, in the running transaction or in the
 * committed-but-not-checkpointed set; data == NULL in the revoke set. */
struct jbuf {
	RB_ENTRY(jbuf) rb;
	blk64_t blk;
	unsigned char *data;
};
RB_HEAD(jbuf_tree, jbuf);
RB_PROTOTYPE(jbuf_tree, jbuf, rb, jbuf_cmp)

/* How much memory the journal holds, whatever the log's size (up to
 * 1 GiB on big images): the running transaction commits once it holds
 * JNL_TXN_MAX_MEM of blocks (or a quarter of the log, if less: txn_max),
 * and the committed blocks kept for the checkpoint are written home
 * (without a flush: the log keeps them until the checkpoint) once they
 * reach JNL_CKPT_MEM. The commit stages a copy of its transaction, and a
 * new running transaction fills while it is in flight, so the peak is
 * about CKPT + 3 * TXN_MAX: the running, the committing and its staged
 * copy (the committing set then joins ckpt, which write_home bounds).
 *
 * Loaders that commit themselves (copy-in: e3_journal_txn_limit,
 * e3_journal_commit_wanted) aim at the smaller JNL_TXN_MEM (txn_aim),
 * which also places the close points of reproducible builds. Only the
 * commits op_end and op_begin start on their own use the whole txn_max:
 * many clients that each touch their own inode table, bitmap and
 * directory blocks fill 4 MiB in a few thousand operations (bench/
 * mixload at 64 clients: 20-40 commits a run where 4 clients make one),
 * and every commit then pays the state dump, the staging copy and the
 * write home of blocks the next transaction dirties again. */
#define JNL_TXN_MEM ((uint64_t)4 << 20)
#define JNL_TXN_MAX_MEM ((uint64_t)16 << 20)
#define JNL_CKPT_MEM ((uint64_t)4 << 20)
/* E3_JOURNAL_MEM's ceiling, in KiB: 4 GiB, far above any use and below
 * every overflow (KiB * 1024 / block size, then capped at UINT32_MAX) */
#define JNL_MEM_MAX_KIB ((uint64_t)4 << 20)

/* A set of blocks: the tree keeps them in block order (the commit writes
 * them so), and an open-addressed table beside it answers "is blk in
 * here?", which every read through the channel asks of three sets
 * (journal_io.c: newest) — a tree walk of cache misses on a transaction
 * of thousands of blocks. slot == NULL: no table (none needed yet, or
 * one could not grow: lookups then walk the tree). */
struct jset {
	struct jbuf_tree tree;
	size_t n;
	struct jbuf **slot;	/* mask + 1 entries, linear probing */
	size_t mask;
	int no_table;		/* a table failed to grow: tree only */
};

enum e3_jstate {
	JS_RUNNING,	/* capturing; the log may hold committed txns */
	JS_ABORTED,	/* a write failed: nothing more reaches the disk */
};

struct e3_journal {
	struct e3_journal_params p;	/* from the layer above, fixed */
	ext2_filsys fs;
	io_channel real;		/* unix_io channel underneath */
	io_channel wrap;		/* ours, installed as fs->io */
	int wrapped_image_io;		/* fs->image_io was fs->io too */
	struct jbd2_log log;		/* geometry; log.io == real */
	unsigned bs;

	enum e3_jstate state;
	errcode_t abort_err;		/* the error that aborted */

	/* the log: [tail, head) holds committed, un-checkpointed txns */
	uint32_t head;			/* next log block to write */
	uint32_t tail;			/* oldest live log block; 0 = empty */
	uint32_t used;			/* log blocks in [tail, head) */
	uint32_t tid;			/* the running transaction's id */
	int recover_home;		/* RECOVER is set in the home sb */
	uint32_t start_seq;		/* jsb s_sequence when we started */
	uint32_t dirty_lo, dirty_hi;	/* log blocks written: [lo, hi) */
	int dirty_wrapped;		/* ... or the whole log */
	int jsb_dirty;			/* journal sb to write at next commit */
	/* log.jsb / log.sbuf: [fs_lock], and [commit] while cm_busy */

	struct jset run;		/* running transaction's blocks */
	struct jset revoked;		/* revoked in the running txn */
	struct jset cm_run;		/* the committing transaction's
					   blocks (empty unless cm_busy) */
	struct jset cm_revoked;		/* ... and its revokes */
	int cm_busy;			/* a commit is in flight: its thread
					   may be running without fs_lock */
	pthread_cond_t quiet;		/* broadcast when cm_busy drops;
					   waited on with p.lock */
	int waited;			/* an operation waited for the commit
					   in flight (a full running txn) */
	int hurry;			/* ... during the last one: the next
					   commit starts at half txn_max */
	struct jset ckpt;		/* committed, not checkpointed */
	struct jset homed;		/* written home early (no data), the
					   live log still holds them: bounded
					   by the log, not by JNL_CKPT_MEM */
	int dedupe;			/* skip captured writes that change
					   nothing (commit-time state dump) */

	uint64_t commits;		/* commits since start */
	uint32_t live;			/* committed txns in [tail, head) */
	uint64_t last_commit_ns;	/* CLOCK_MONOTONIC_COARSE of the last one */
	uint64_t interval_ns;
	uint32_t txn_max;		/* commit when run.n reaches this */
	uint32_t txn_aim;		/* what self-committing loaders aim
					   at (<= txn_max) */
	uint32_t ckpt_max;		/* write_home when ckpt.n reaches it */
	struct e3_fault fault;		/* E3_FAULT */
	int bypass;			/* E3_JOURNAL=bypass: benchmarks only,
					   metadata straight home, no log */
};

/* journal_io.c */
void jset_init(struct jset *s);
struct jbuf *jset_find(struct jset *s, blk64_t blk);
/* Inserts blk (data allocated when with_data), or returns the present one */
struct jbuf *jset_get(struct jset *s, blk64_t blk, unsigned bs, int with_data,
		      int *created);
void jset_remove(struct jset *s, struct jbuf *b);
/* b joins s / leaves s, kept (not freed): for moving a block between sets */
void jset_attach(struct jset *s, struct jbuf *b);
void jset_detach(struct jset *s, struct jbuf *b);
void jset_clear(struct jset *s);
errcode_t jio_wrap(struct e3_journal *j);
void jio_unwrap(struct e3_journal *j);
/* The newest contents of blk that will be committed before the running
 * transaction: the committing set, then ckpt, else the disk. */
errcode_t jio_read_committed(struct e3_journal *j, blk64_t blk, void *buf);
/* A disk write of n blocks at blk through the fault layer. */
errcode_t jio_write_real(struct e3_journal *j, blk64_t blk, unsigned n,
			 const void *buf);
errcode_t jio_flush_real(struct e3_journal *j);
/* Captures bytes [off, off + len) of the fs into the running txn. */
errcode_t jio_capture(struct e3_journal *j, uint64_t off, uint64_t len,
		      const void *buf);

/* journal_commit.c */
/* Commits the running transaction (waits for one in flight first). With
 * unlocked (and p.lock set) the log writes and flushes run with p.lock
 * released. */
errcode_t jc_commit(struct e3_journal *j, int unlocked);
/* Waits, releasing p.lock, until no commit is in flight. */
void jc_wait_quiet(struct e3_journal *j);
errcode_t jc_checkpoint(struct e3_journal *j);
errcode_t jc_set_home_recover(struct e3_journal *j, int on);
errcode_t jc_scrub_log(struct e3_journal *j);
/* Log blocks a transaction of nblocks blocks and nrevokes revokes takes
 * (the commit refuses one that needs the whole log: E3_JOURNAL_TOO_SMALL). */
uint64_t jc_txn_log_blocks(unsigned bs, uint64_t nblocks, uint64_t nrevokes);

/* journal.c */
void jnl_abort_with(struct e3_journal *j, errcode_t err);
uint64_t jnl_now_ns(void);
#ifdef E3_DEBUG
void assert_journal_state(const struct e3_journal *j);
#else
static inline void assert_journal_state(const struct e3_journal *j) { (void)j; }
#endif

#endif
