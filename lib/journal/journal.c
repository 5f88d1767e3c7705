/*
 * journal.c: the journal's life cycle — start (wrap the image's I/O),
 * operation boundaries and the commit policy, revokes, stop and abort.
 * Commit and checkpoint are in journal_commit.c, the I/O layer in
 * journal_io.c, recovery in recovery.c.
 *
 * LOCKING. Everything here runs under the image's fs_lock (image.h): the
 * running transaction is filled by libext2fs calls, which all hold it.
 * The fields touched without it are the fault counters (atomic), because
 * file data writers call e3_journal_fault_write() holding no lock, and
 * what an op_end commit uses while it writes the log with fs_lock
 * released (journal_int.h, [commit]; journal_commit.c, phase 2). One
 * commit is in flight at a time: whoever needs the log quiet waits on
 * j->quiet (with fs_lock, p.lock) until cm_busy drops.
 *
 * STATES of the journal (j->state) and of what the log holds:
 *
 *   RUNNING/empty     log empty: jsb.s_start == 0, ckpt set empty.
 *                     RECOVER may still be set in the home superblock
 *                     (it is cleared only by stop: clearing it costs an
 *                     fsync, and RECOVER with an empty log is harmless).
 *   RUNNING/live      tail != 0: log blocks [tail, head) hold committed,
 *                     un-checkpointed transactions jsb.s_sequence..tid-1,
 *                     jsb.s_start == tail; the newest images of their
 *                     blocks are in the ckpt set or were written home
 *                     after their commit (write_home, once the set held
 *                     ckpt_max blocks; not flushed, the log still covers
 *                     them, and their numbers stay in the homed set so
 *                     that freeing one still revokes it), and the home
 *                     superblock has RECOVER set (written and flushed
 *                     before jsb.s_start became non-zero).
 *   ABORTED           a disk write failed, or a caller poisoned the
 *                     running transaction: nothing more is written; the
 *                     image is as of the last commit (replay restores it).
 *
 * TRANSITIONS
 *   e3_journal_start   -> RUNNING/empty (refuses a non-empty log, and a
 *                      log smaller than the largest transaction the fs
 *                      geometry allows: worst_txn)
 *   jc_commit          RUNNING/any -> RUNNING/live: blocks and descriptors,
 *                      flush (also makes file data durable: ordered mode),
 *                      then commit block (+jsb when the log was empty),
 *                      flush. Checkpoints first when the log lacks room.
 *                      In three phases (journal_commit.c); from op_end,
 *                      the I/O runs without fs_lock while a new running
 *                      transaction fills. Head, tail and used change only
 *                      in phase 3, so the invariants below hold whenever
 *                      fs_lock is free.
 *   jc_checkpoint      RUNNING/live -> RUNNING/empty: home writes of the
 *                      ckpt set, flush,
 *                      jsb.s_start = 0 / s_sequence = tid, flush.
 *   e3_journal_stop    commit everything (full ext2fs_flush through the
 *                      journal), checkpoint, scrub the log (jc_scrub_log:
 *                      zero what we wrote, so that the image's bytes do
 *                      not depend on commit timing — reproducible builds),
 *                      clear RECOVER home, unwrap.
 *   any write error    -> ABORTED (e3_journal_abort unwraps, frees).
 *   e3_journal_poison  -> ABORTED: an operation could not be undone, its
 *                      half must never commit (namei.c, file.c, remove,
 *                      htree.c).
 *
 * E3_JOURNAL=bypass (benchmarks only, to measure what journaling costs):
 * start wraps nothing, commits only release deferred frees, metadata goes
 * home unjournaled as plain libext2fs would write it. Not crash-safe, so
 * it works only together with the test switch E3_TEST_KNOBS=1: any program
 * linking the library reads the environment, and a stray E3_JOURNAL=bypass
 * must not switch its crash safety off. Without the switch it is refused
 * (E3_KNOB_NEEDS_TEST), never silently ignored, so a benchmark cannot
 * measure the journaled path while believing it measures the bypass. Any
 * other value of E3_JOURNAL is refused too (E3_BAD_JOURNAL_KNOB).
 *
 * E3_JOURNAL_MEM=KiB (tests only): JNL_TXN_MEM and JNL_CKPT_MEM (see
 * journal_int.h) for this journal, so that small test images write
 * committed blocks home before a checkpoint, as big copies do. It changes
 * when blocks go home, not what a replay gives (the crash sweep in
 * tests/journal.bats runs with it), so it needs no switch; but it must be
 * decimal KiB in 1..JNL_MEM_MAX_KIB, else E3_BAD_JOURNAL_MEM.
 *
 * INVARIANTS (assert_journal_state)
 *   - tail == 0 <=> used == 0; tail == 0 => ckpt and homed sets empty
 *     (not the converse: a transaction of revokes alone leaves the log
 *     live and the ckpt set empty)
 *   - used < log capacity; head, tail inside [first, maxlen)
 *   - tail != 0 => recover_home
 *   - no block is both in the running set and in the revoked set
 *   - no journal block is in the running or ckpt sets
 *   - !cm_busy => the committing sets are empty
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "journal_int.h"
#include "e3_err.h"

uint64_t jnl_now_ns(void)
{
	struct timespec ts;

	/* asked at the end of every operation, for an interval of seconds:
	 * the coarse clock (a tick's resolution) costs a fifth as much */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#ifdef E3_DEBUG
#include <assert.h>
void assert_journal_state(const struct e3_journal *j)
{
	struct e3_journal *mj = (struct e3_journal *)j;
	uint32_t cap = j->log.maxlen - j->log.first;
	struct jbuf *b;

	if (j->state == JS_ABORTED)
		return;
	assert(j->wrap && j->fs->io == j->wrap);
	assert(j->head >= j->log.first && j->head < j->log.maxlen);
	assert(j->used < cap);
	assert((j->tail == 0) == (j->used == 0));
	assert(j->tail == 0 || (j->tail >= j->log.first && j->tail < j->log.maxlen));
	assert(j->tail != 0 || j->ckpt.n == 0);
	assert(j->tail != 0 || j->homed.n == 0);
	assert(j->tail == 0 || j->recover_home);
	RB_FOREACH(b, jbuf_tree, &mj->run.tree) {
		assert(!jset_find(&mj->revoked, b->blk));
		assert(!jbd2_log_owns(&j->log, b->blk));
	}
	RB_FOREACH(b, jbuf_tree, &mj->ckpt.tree)
		assert(!jbd2_log_owns(&j->log, b->blk));
	assert(j->cm_busy || (j->cm_run.n == 0 && j->cm_revoked.n == 0));
}
#endif

void jnl_abort_with(struct e3_journal *j, errcode_t err)
{
	if (j->state != JS_ABORTED) {
		j->state = JS_ABORTED;
		j->abort_err = err;
	}
}

static void free_journal(struct e3_journal *j)
{
	jset_clear(&j->run);
	jset_clear(&j->revoked);
	jset_clear(&j->cm_run);
	jset_clear(&j->cm_revoked);
	jset_clear(&j->ckpt);
	jset_clear(&j->homed);
	jbd2_log_close(&j->log);
	pthread_cond_destroy(&j->quiet);
	free(j);
}

/* The most blocks one operation adds to the running transaction whatever
 * the image holds: a mkdir whose parent grows through a new TIND chain
 * (two inode table blocks, the new directory's block, the parent's new
 * block, three new and two rewritten indirect blocks), a file's close
 * with its tail IND/DIND/TIND chain and inode. Operations whose size
 * depends on the content — the htree index of one huge directory, a
 * sparse file with many partial indirect blocks — can exceed it; their
 * commit still refuses with E3_JOURNAL_TOO_SMALL. */
#define JNL_OP_MAX 16

/* What libext2fs' state dump adds to any commit at most: every group's
 * block and inode bitmap, the primary descriptors and superblock. */
static uint64_t dump_max(uint64_t groups, uint64_t desc_blocks)
{
	return 2 * groups + desc_blocks + 1;
}

static uint64_t state_dump_max(const struct e3_journal *j)
{
	return dump_max(j->fs->group_desc_count, j->fs->desc_blocks);
}

/* The largest transaction this library can be made to commit on fs, from
 * its geometry alone, in log blocks. A commit holds what op_end left
 * below txn_max (blocks and revokes), one operation, and libext2fs'
 * state dump: at most every group's block and inode bitmap, the
 * descriptors and the superblock — and, in the final ext2fs_flush at
 * stop, the backup superblocks and descriptors too unless the handle has
 * EXT2_FLAG_MASTER_SB_ONLY (libext2fs 1.47 sets it at open, so flush
 * writes only the primary copies). */
static uint64_t worst_of(unsigned bs, uint64_t groups, uint64_t desc_blocks,
			 uint64_t copies, uint64_t txn_max)
{
	uint64_t blocks = (copies - 1) * (1 + desc_blocks) +
			  dump_max(groups, desc_blocks) +
			  (txn_max ? txn_max - 1 : 0) + JNL_OP_MAX;

	return jc_txn_log_blocks(bs, blocks, txn_max);
}

/* Blocks (and revokes) at which the running transaction commits, for a
 * log of cap blocks: a quarter of the log, as jbd2 bounds it, and at most
 * mem bytes of blocks. */
static uint64_t txn_max_of(unsigned bs, uint64_t cap, uint64_t mem)
{
	uint64_t by_mem = mem / bs;

	return cap / 4 < by_mem ? cap / 4 : by_mem;
}

static uint64_t worst_txn(const struct e3_journal *j)
{
	ext2_filsys fs = j->fs;
	uint64_t copies = 1;

	if (!(fs->flags & EXT2_FLAG_MASTER_SB_ONLY))
		for (dgrp_t g = 1; g < fs->group_desc_count; g++)
			if (ext2fs_bg_has_super(fs, g))
				copies++;
	return worst_of(j->bs, fs->group_desc_count, fs->desc_blocks, copies,
			j->txn_max);
}

errcode_t e3_journal_geometry_fits(unsigned block_size, uint64_t groups,
				   uint64_t desc_blocks,
				   uint64_t journal_blocks)
{
	/* the log starts after the journal superblock; writers open with
	 * libext2fs' MASTER_SB_ONLY, so only the primary copies count */
	uint64_t cap = journal_blocks > 1 ? journal_blocks - 1 : 0;

	if (!journal_blocks)
		return 0;
	return worst_of(block_size, groups, desc_blocks, 1,
			txn_max_of(block_size, cap, JNL_TXN_MEM)) >= cap ?
		E3_JOURNAL_TOO_SMALL : 0;
}

/* The environment knobs described at the top: E3_JOURNAL (only "bypass",
 * and only with E3_TEST_KNOBS=1) and E3_JOURNAL_MEM (0: unset). */
static errcode_t journal_knobs(int *bypass, uint64_t *mem_kib)
{
	const char *mode = getenv("E3_JOURNAL");
	const char *mem = getenv("E3_JOURNAL_MEM");
	const char *test = getenv("E3_TEST_KNOBS");

	*bypass = 0;
	*mem_kib = 0;
	if (mode && *mode) {
		if (strcmp(mode, "bypass") != 0)
			return E3_BAD_JOURNAL_KNOB;
		if (!test || strcmp(test, "1") != 0)
			return E3_KNOB_NEEDS_TEST;
		*bypass = 1;
	}
	if (mem && *mem) {
		for (const char *p = mem; *p; p++) {
			if (*p < '0' || *p > '9')
				return E3_BAD_JOURNAL_MEM;
			*mem_kib = *mem_kib * 10 + (uint64_t)(*p - '0');
			if (*mem_kib > JNL_MEM_MAX_KIB)
				return E3_BAD_JOURNAL_MEM;
		}
		if (*mem_kib == 0)
			return E3_BAD_JOURNAL_MEM;
	}
	return 0;
}

errcode_t e3_journal_start(ext2_filsys fs, const struct e3_journal_params *p,
			  struct e3_journal **ret)
{
	struct e3_journal *j;
	unsigned interval;
	uint64_t mem_kib;
	errcode_t err;

	j = calloc(1, sizeof(*j));
	if (!j)
		return ENOMEM;
	jset_init(&j->run);
	jset_init(&j->revoked);
	jset_init(&j->cm_run);
	jset_init(&j->cm_revoked);
	jset_init(&j->ckpt);
	jset_init(&j->homed);
	pthread_cond_init(&j->quiet, NULL);
	j->p = *p;
	j->fs = fs;
	j->bs = fs->blocksize;
	err = e3_fault_parse(&j->fault, getenv("E3_FAULT"));
	if (err)
		goto fail;
	err = jbd2_log_open(fs, fs->io, JBD2_LOG_WRITE, &j->log);
	if (err)
		goto fail;
	err = journal_knobs(&j->bypass, &mem_kib);
	if (err)
		goto fail;
	if (j->bypass) {
		*ret = j;
		return 0;
	}
	if (jbd2_get32(j->log.jsb->s_start) != 0) {
		err = E3_NEEDS_RECOVERY;	/* replay first */
		goto fail;
	}
	j->head = j->log.first;
	j->tid = jbd2_get32(j->log.jsb->s_sequence);
	j->start_seq = j->tid;
	j->recover_home = ext2fs_has_feature_journal_needs_recovery(fs->super);
	j->txn_max = (uint32_t)txn_max_of(j->bs, j->log.maxlen - j->log.first,
					  JNL_TXN_MAX_MEM);
	j->txn_aim = (uint32_t)txn_max_of(j->bs, j->log.maxlen - j->log.first,
					  JNL_TXN_MEM);
	j->ckpt_max = (uint32_t)(JNL_CKPT_MEM / j->bs);
	if (mem_kib) {
		uint64_t blocks = mem_kib * 1024 / j->bs;

		if (blocks < 1)
			blocks = 1;
		if (blocks > UINT32_MAX)
			blocks = UINT32_MAX;
		if (blocks < j->txn_max)
			j->txn_max = (uint32_t)blocks;
		if (blocks < j->txn_aim)
			j->txn_aim = (uint32_t)blocks;
		j->ckpt_max = (uint32_t)blocks;
	}
	/* the larger limit only where the worst case still fits with it:
	 * which logs are big enough (e3_journal_geometry_fits) is decided
	 * with txn_aim, as before there was a larger one */
	if (worst_txn(j) >= j->log.maxlen - j->log.first)
		j->txn_max = j->txn_aim;
	/* refuse now rather than fail the commit after the work is done */
	if (worst_txn(j) >= j->log.maxlen - j->log.first) {
		err = E3_JOURNAL_TOO_SMALL;
		goto fail;
	}
	interval = p->commit_interval ? p->commit_interval : 5;
	j->interval_ns = (uint64_t)interval * 1000000000ULL;
	j->last_commit_ns = jnl_now_ns();
	err = jio_wrap(j);
	if (err)
		goto fail;
	j->log.io = j->real;
	/* every superblock image we journal says "replay me": replaying any
	 * of them must not leave the flag clear with a live log behind it */
	ext2fs_set_feature_journal_needs_recovery(fs->super);
	assert_journal_state(j);
	*ret = j;
	return 0;
fail:
	free_journal(j);
	return err;
}

errcode_t e3_journal_commit(struct e3_journal *j, int checkpoint)
{
	errcode_t err;

	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	if (j->bypass) {
		if (j->p.seal)
			j->p.seal(j->p.arg);
		if (j->p.committed)
			j->p.committed(j->p.arg);
		return 0;
	}
	/* synchronous: the caller's durability point (defrag, the tools) */
	err = jc_commit(j, 0);
	if (!err && checkpoint)
		err = jc_checkpoint(j);
	assert_journal_state(j);
	return err;
}

static int txn_full(const struct e3_journal *j)
{
	/* the limit the worst case is computed from (worst_txn): never past */
	return j->run.n + j->revoked.n >= j->txn_max;
}

/* op_end's commit policy; held: e3_journal_op_end_held (only when full,
 * never early, never on time). With another thread's commit in flight:
 * nothing unless the running transaction is full; then wait for that
 * commit, and commit only if the transaction is still full (another
 * waiter may have committed it meanwhile). When an operation had to wait
 * so during the last commit (the running transaction filled before the
 * commit's flushes were done: many threads, a slow device), the next
 * commit starts at half the limit, so that the other half takes the
 * operations that come during its flushes; a single thread never waits,
 * and keeps its transactions whole, as does a fast device (tmpfs). */
static errcode_t op_end_commit(struct e3_journal *j, int held)
{
	uint64_t n;

	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	if (j->bypass)
		return e3_journal_commit(j, 0);
	assert_journal_state(j);
	while (j->cm_busy && txn_full(j)) {
		j->waited = 1;
		jc_wait_quiet(j);
	}
	if (j->cm_busy)
		return 0;
	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	n = j->run.n + j->revoked.n;
	if (txn_full(j) ||
	    (!held && j->hurry && n >= j->txn_max / 2) ||
	    (!held && jnl_now_ns() - j->last_commit_ns >= j->interval_ns))
		return jc_commit(j, 1);
	return 0;
}

void e3_journal_op_begin(struct e3_journal *j)
{
	if (j->bypass)
		return;
	while (j->state != JS_ABORTED && txn_full(j)) {
		if (j->cm_busy) {
			j->waited = 1;
			jc_wait_quiet(j);
		} else if (jc_commit(j, 1)) {
			return;		/* aborted: the op's writes say so */
		}
	}
}

void e3_journal_wait_quiet(struct e3_journal *j)
{
	jc_wait_quiet(j);
}

errcode_t e3_journal_op_end(struct e3_journal *j)
{
	return op_end_commit(j, 0);
}

errcode_t e3_journal_op_end_held(struct e3_journal *j)
{
	return op_end_commit(j, 1);
}

uint64_t e3_journal_txn_limit(const struct e3_journal *j)
{
	return j->bypass ? 0 : j->txn_aim;
}

int e3_journal_commit_wanted(const struct e3_journal *j, int by_time,
			     uint64_t pending)
{
	if (j->state == JS_ABORTED || j->bypass)
		return 0;
	/* three quarters of the limit: what is still to come, and what the
	 * caller does while finishing, fit before the limit forces a commit */
	if (j->run.n + j->revoked.n + pending >= j->txn_aim - j->txn_aim / 4)
		return 1;
	return by_time && j->run.n + j->revoked.n &&
	       jnl_now_ns() - j->last_commit_ns >= j->interval_ns;
}

errcode_t e3_journal_reserve(struct e3_journal *j, uint64_t nblocks)
{
	uint64_t cap = j->log.maxlen - j->log.first;
	errcode_t err;

	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	if (j->bypass)
		return 0;
	if (jc_txn_log_blocks(j->bs, nblocks + state_dump_max(j), nblocks) >= cap)
		return E3_JOURNAL_TOO_SMALL;
	if (jc_txn_log_blocks(j->bs, j->run.n + nblocks + state_dump_max(j),
			      j->revoked.n + nblocks) < cap)
		return 0;
	err = jc_commit(j, 0);
	assert_journal_state(j);
	return err;
}

int e3_journal_holds(const struct e3_journal *j, blk64_t blk)
{
	return jbd2_log_holds(&j->log, blk);
}

void e3_journal_revoke(struct e3_journal *j, blk64_t blk)
{
	struct jbuf *b;
	int created;

	if (j->state == JS_ABORTED || j->bypass)
		return;
	/* the freed block's copy in the running txn is dead */
	if ((b = jset_find(&j->run, blk)))
		jset_remove(&j->run, b);
	/* Only a block the live log holds can be replayed over its next
	 * owner; revoking others (file data freed through libext2fs) would
	 * only fill the log. The committing transaction's blocks will be in
	 * it: the revoke goes into the running set (the committing one is
	 * built already). */
	if (!jset_find(&j->ckpt, blk) && !jset_find(&j->homed, blk) &&
	    !jset_find(&j->cm_run, blk))
		return;
	if (!jset_get(&j->revoked, blk, j->bs, 0, &created))
		jnl_abort_with(j, ENOMEM);
}

errcode_t e3_journal_fault_write(struct e3_journal *j)
{
	return j ? e3_fault_write(&j->fault) : 0;
}

/* At stop ext2fs_flush goes into the last transaction: every group's
 * bitmaps when dirty, the descriptors, the superblock — and the backup
 * superblocks and descriptors only if the handle lacks
 * EXT2_FLAG_MASTER_SB_ONLY, which libext2fs 1.47's ext2fs_open2 sets
 * (measured: fs->flags 0x20201 right after open), so in practice the
 * backups keep what mke2fs wrote, as under the kernel. worst_txn counts
 * both cases. */
errcode_t e3_journal_stop(struct e3_journal *j)
{
	return e3_journal_stop_report(j, NULL);
}

errcode_t e3_journal_stop_report(struct e3_journal *j,
				 struct e3_journal_stop_report *r)
{
	struct e3_journal_stop_report dummy;
	ext2_filsys fs = j->fs;
	errcode_t err;

	if (!r)
		r = &dummy;
	jc_wait_quiet(j);
	r->stage = E3_JSTOP_ABORTED;
	r->live = j->live;
	r->commits = j->commits;
	if (j->state == JS_ABORTED) {
		err = j->abort_err ? j->abort_err : E3_JOURNAL_ABORTED;
		e3_journal_abort(j);
		return err;
	}
	if (j->bypass) {	/* e3_image_close's ext2fs_close2 flushes */
		e3_journal_abort(j);
		r->stage = E3_JSTOP_DONE;
		return 0;
	}
	/* the flush only captures into the running transaction: a failure
	 * there is the final commit's too */
	r->stage = E3_JSTOP_COMMIT;
	err = ext2fs_flush2(fs, 0);
	if (!err)
		err = jc_commit(j, 0);
	r->live = j->live;
	r->commits = j->commits;
	if (!err) {
		r->stage = E3_JSTOP_CHECKPOINT;
		err = jc_checkpoint(j);
	}
	if (!err) {
		r->stage = E3_JSTOP_FINISH;
		r->live = j->live;
		err = jc_scrub_log(j);
	}
	if (!err)
		err = jc_set_home_recover(j, 0);
	if (err) {
		e3_journal_abort(j);
		return err;
	}
	r->stage = E3_JSTOP_DONE;
	assert_journal_state(j);
	/* in memory too, without dirtying: the home superblock is final */
	ext2fs_clear_feature_journal_needs_recovery(fs->super);
	ext2fs_clear_feature_journal_needs_recovery(fs->orig_super);
	jio_unwrap(j);
	free_journal(j);
	return 0;
}

errcode_t e3_journal_poison(struct e3_journal *j, errcode_t err)
{
	if (j->bypass)
		return EXT2_ET_UNIMPLEMENTED;
	/* the running set is never written: stop sees ABORTED and unwraps */
	jnl_abort_with(j, err);
	return 0;
}

void e3_journal_abort(struct e3_journal *j)
{
	if (!j)
		return;
	jio_unwrap(j);
	free_journal(j);
}
