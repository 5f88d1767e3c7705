/*
 * journal_commit.c: turning the running transaction into a JBD2 commit,
 * and checkpointing committed transactions to their home locations.
 *
 * What goes into a commit besides the blocks libext2fs wrote: its dirty
 * in-memory state — bitmaps, the primary group descriptors and the primary
 * superblock. Not ext2fs_flush: that also rewrites the backup superblock and
 * descriptors of every sparse group, which on a big image is hundreds of
 * blocks per commit. The backups carry nothing the live fs needs between
 * commits (the kernel's ext3 never updates them outside resize either;
 * e2fsck compares only geometry and features with them). The
 * ext2fs_flush journaled at stop would rewrite them, but libext2fs 1.47
 * opens with EXT2_FLAG_MASTER_SB_ONLY, so it writes only the primaries
 * (see e3_journal_stop).
 *
 * Write order of one commit (each arrow is a flush = fsync of the image):
 *   revoke blocks + descriptors + data + [RECOVER in the home sb, first
 *   commit only]  ->  [jsb when the log was empty] + commit block  ->
 * File data written with pwrite(img->fd) is the same file, so the first
 * fsync makes it durable before the commit block: ordered mode.
 *
 * A commit runs in three phases, as jbd2 keeps one committing
 * transaction beside the running one:
 *   1 (fs_lock)  the state dump, the log image of the transaction built
 *                into a staging buffer (a snapshot: every block copied),
 *                its place in the log chosen, the journal sb and home sb
 *                images prepared; the running sets become the committing
 *                ones, a fresh running transaction (tid + 1) starts, and
 *                the allocator seals its deferred frees.
 *   2 (unlocked, when the caller allows it: op_end's commits) the writes
 *                and flushes above, from the staging buffer only. Other
 *                threads meanwhile fill the new running transaction; their
 *                reads see running, then committing, then ckpt, then disk.
 *   3 (fs_lock)  on success the committing blocks become the newest
 *                committed images (ckpt), its revokes apply, the log
 *                space is taken, the sealed frees are released; on error
 *                the journal aborts (the running transaction never commits).
 * Ordered data still holds: phase 1 runs at an operation boundary, where
 * every data block the transaction names was pwritten already, so the
 * first flush of phase 2 covers it. One commit is in flight at a time
 * (cm_busy; the rest wait on `quiet`).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "journal_int.h"
#include "e3_err.h"

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#error "journal_commit.c copies libext2fs' in-memory (host order) group descriptors and superblock as on-disk (little-endian) bytes"
#endif

#define RUN_MAX 256	/* blocks per disk write (also the fault granularity) */

/* bitmaps, primary descriptors, primary superblock into the running txn;
 * unchanged blocks are skipped (j->dedupe) */
static errcode_t dump_fs_state(struct e3_journal *j)
{
	ext2_filsys fs = j->fs;
	errcode_t err;

	j->dedupe = 1;
	err = ext2fs_write_bitmaps(fs);
	for (dgrp_t i = 0; !err && i < fs->desc_blocks; i++) {
		blk64_t blk = ext2fs_descriptor_block_loc2(fs,
				fs->super->s_first_data_block, i);

		err = io_channel_write_blk64(fs->io, blk, 1,
				(char *)fs->group_desc + (size_t)i * fs->blocksize);
	}
	if (!err)
		err = jio_capture(j, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE, fs->super);
	j->dedupe = 0;
	return err;
}

/* n blocks of buf to the log from log block lb on, wrapping, in runs of
 * physically contiguous blocks */
static void note_dirty(struct e3_journal *j, uint32_t lb, uint32_t n)
{
	if (j->dirty_hi == 0) {
		j->dirty_lo = lb;
		j->dirty_hi = lb;
	}
	if (lb + n > j->log.maxlen)
		j->dirty_wrapped = 1;
	if (lb < j->dirty_lo)
		j->dirty_lo = lb;
	if (lb + n > j->dirty_hi)
		j->dirty_hi = lb + n > j->log.maxlen ? j->log.maxlen : lb + n;
}

/* [commit]: touches only the log geometry and the real channel */
static errcode_t write_log(struct e3_journal *j, uint32_t lb, uint32_t n,
			   const unsigned char *buf)
{
	uint32_t i = 0;
	errcode_t err = 0;

	while (i < n && !err) {
		uint32_t l0 = jbd2_log_wrap(&j->log, (uint64_t)lb + i), cnt = 1;
		blk64_t p0 = j->log.map[l0];

		while (i + cnt < n && cnt < RUN_MAX && l0 + cnt < j->log.maxlen &&
		       j->log.map[l0 + cnt] == p0 + cnt)
			cnt++;
		err = e3_fault_commit_write(&j->fault);
		if (!err)
			err = jio_write_real(j, p0, cnt, buf + (size_t)i * j->bs);
		i += cnt;
	}
	return err;
}

static void put_header(unsigned char *blk, uint32_t type, uint32_t tid)
{
	struct jbd2_header h;

	h.h_magic = jbd2_be32(JBD2_MAGIC);
	h.h_blocktype = jbd2_be32(type);
	h.h_sequence = jbd2_be32(tid);
	memcpy(blk, &h, sizeof(h));
}

/* the layout of the running transaction in the log */
struct txn_shape {
	uint32_t rev_blocks, desc_blocks, data_blocks, total;
	unsigned per_rev, per_desc;
};

/* The log blocks a transaction of nblocks blocks and nrevokes revokes
 * takes (revoke, descriptor, data and commit blocks). */
static void shape_of(unsigned bs, uint64_t nblocks, uint64_t nrevokes,
		     struct txn_shape *s)
{
	s->per_rev = (bs - sizeof(struct jbd2_revoke_header)) / 4;
	/* the first tag carries the 16-byte UUID, the others SAME_UUID */
	s->per_desc = 1 + (bs - sizeof(struct jbd2_header) - 8 - 16) / 8;
	s->rev_blocks = (uint32_t)((nrevokes + s->per_rev - 1) / s->per_rev);
	s->desc_blocks = (uint32_t)((nblocks + s->per_desc - 1) / s->per_desc);
	s->data_blocks = (uint32_t)nblocks;
	s->total = s->rev_blocks + s->desc_blocks + s->data_blocks + 1;
}

static void shape_txn(const struct e3_journal *j, struct txn_shape *s)
{
	shape_of(j->bs, j->run.n, j->revoked.n, s);
}

uint64_t jc_txn_log_blocks(unsigned bs, uint64_t nblocks, uint64_t nrevokes)
{
	struct txn_shape s;

	shape_of(bs, nblocks, nrevokes, &s);
	return (uint64_t)s.rev_blocks + s.desc_blocks + s.data_blocks + 1;
}

/* revoke blocks, then descriptor + data groups, then the commit block */
static void build_txn(struct e3_journal *j, const struct txn_shape *s,
		      unsigned char *out)
{
	unsigned bs = j->bs;
	unsigned char *p = out;
	struct jbuf *b;
	unsigned k = 0;

	RB_FOREACH(b, jbuf_tree, &j->revoked.tree) {
		if (k == 0)
			put_header(p, JBD2_REVOKE_BLOCK, j->tid);
		jbd2_store32(p + sizeof(struct jbd2_revoke_header) + 4 * k,
			     (uint32_t)b->blk);
		k++;
		jbd2_store32(p + offsetof(struct jbd2_revoke_header, r_count),
			     (uint32_t)(sizeof(struct jbd2_revoke_header) + 4 * k));
		if (k == s->per_rev) {
			p += bs;
			k = 0;
		}
	}
	if (k)
		p += bs;

	unsigned char *desc = NULL, *tag = NULL;
	unsigned ntag = 0;

	RB_FOREACH(b, jbuf_tree, &j->run.tree) {
		uint16_t flags = 0;

		if (ntag == 0) {
			desc = p;
			p += bs;
			put_header(desc, JBD2_DESCRIPTOR_BLOCK, j->tid);
			tag = desc + sizeof(struct jbd2_header);
		} else
			flags |= JBD2_FLAG_SAME_UUID;
		memcpy(p, b->data, bs);
		if (jbd2_load32(p) == JBD2_MAGIC) {
			flags |= JBD2_FLAG_ESCAPE;
			memset(p, 0, 4);
		}
		p += bs;
		jbd2_store32(tag + JBD2_TAG_BLOCKNR, (uint32_t)b->blk);
		jbd2_store16(tag + JBD2_TAG_CSUM16, 0);
		jbd2_store16(tag + JBD2_TAG_FLAGS16, flags);
		tag += 8;
		if (ntag == 0) {
			memcpy(tag, j->log.jsb->s_uuid, 16);
			tag += 16;
		}
		if (++ntag == s->per_desc || !RB_NEXT(jbuf_tree, &j->run.tree, b)) {
			/* mark the last tag of this descriptor */
			unsigned char *last = tag - 8 - (ntag == 1 ? 16 : 0);

			jbd2_store16(last + JBD2_TAG_FLAGS16,
				     jbd2_load16(last + JBD2_TAG_FLAGS16) |
				     JBD2_FLAG_LAST_TAG);
			ntag = 0;
		}
	}

	struct jbd2_commit c;
	struct timespec ts;

	memset(&c, 0, sizeof(c));
	c.c_header.h_magic = jbd2_be32(JBD2_MAGIC);
	c.c_header.h_blocktype = jbd2_be32(JBD2_COMMIT_BLOCK);
	c.c_header.h_sequence = jbd2_be32(j->tid);
	/* SOURCE_DATE_EPOCH keeps the log bytes reproducible (the image's
	 * clock: fs->now cannot say 0) */
	if (j->p.clock >= 0) {
		ts.tv_sec = (time_t)j->p.clock;
		ts.tv_nsec = 0;
	} else
		clock_gettime(CLOCK_REALTIME, &ts);
	c.c_commit_sec = jbd2_be64((uint64_t)ts.tv_sec);
	c.c_commit_nsec = jbd2_be32((uint32_t)ts.tv_nsec);
	memcpy(p, &c, sizeof(c));
}

/* The committed txn's blocks become the newest committed images; revoked
 * blocks stop being checkpoint candidates (they may be reused now). A
 * block captured again meanwhile stays in the running set too: reads
 * look there first. */
static void retire_txn(struct e3_journal *j)
{
	struct jbuf *b, *next, *old;
	int created;

	RB_FOREACH_SAFE(b, jbuf_tree, &j->cm_revoked.tree, next) {
		if ((old = jset_find(&j->ckpt, b->blk)))
			jset_remove(&j->ckpt, old);
		if ((old = jset_find(&j->homed, b->blk)))
			jset_remove(&j->homed, old);
		jset_remove(&j->cm_revoked, b);
	}
	RB_FOREACH_SAFE(b, jbuf_tree, &j->cm_run.tree, next) {
		jset_detach(&j->cm_run, b);
		old = jset_get(&j->ckpt, b->blk, j->bs, 0, &created);
		if (!old) {		/* keep b itself then */
			jset_attach(&j->ckpt, b);
			continue;
		}
		free(old->data);
		old->data = b->data;
		free(b);
	}
	/* empty now, but each may still hold its table: the next commit
	 * takes the running sets over these by assignment */
	jset_clear(&j->cm_revoked);
	jset_clear(&j->cm_run);
}

static errcode_t write_home(struct e3_journal *j);

/* What phase 1 hands to phase 2 and 3: the commit's own, so phase 2
 * needs nothing else guarded by fs_lock. */
struct jc_staged {
	unsigned char *buf;		/* the whole transaction's log blocks */
	unsigned char *home_sb;		/* RECOVER set, or NULL */
	uint32_t start, total;		/* its place in the log */
	int write_jsb;			/* the journal sb goes out before the
					   commit block */
};

void jc_wait_quiet(struct e3_journal *j)
{
	while (j->cm_busy && j->p.lock)
		pthread_cond_wait(&j->quiet, j->p.lock);
}

/* The home superblock with RECOVER set, from its newest committed
 * image: nothing uncommitted leaks, and it is written beside the log
 * blocks, flushed by the commit's first flush. */
static errcode_t home_sb_image(struct e3_journal *j, unsigned char **ret)
{
	unsigned char *buf = malloc(j->bs);
	errcode_t err;

	if (!buf)
		return ENOMEM;
	err = jio_read_committed(j, SUPERBLOCK_OFFSET / j->bs, buf);
	if (err) {
		free(buf);
		return err;
	}
	ext2fs_set_feature_journal_needs_recovery(
		(struct ext2_super_block *)(buf + SUPERBLOCK_OFFSET % j->bs));
	*ret = buf;
	return 0;
}

/* Phase 1, under fs_lock, no commit in flight. st->total == 0: nothing
 * to commit. */
static errcode_t commit_stage(struct e3_journal *j, struct jc_staged *st)
{
	uint32_t cap = j->log.maxlen - j->log.first;
	struct txn_shape s;
	errcode_t err;

	memset(st, 0, sizeof(*st));
	err = dump_fs_state(j);
	if (err)
		return err;
	if (j->run.n == 0 && j->revoked.n == 0) {
		j->last_commit_ns = jnl_now_ns();
		return 0;
	}
	shape_txn(j, &s);
	if (s.total >= cap)
		return E3_JOURNAL_TOO_SMALL;
	if (j->used + s.total >= cap && (err = jc_checkpoint(j)))
		return err;
	st->buf = calloc(s.total, j->bs);
	if (!st->buf)
		return ENOMEM;
	if (!j->recover_home && (err = home_sb_image(j, &st->home_sb))) {
		free(st->buf);
		return err;
	}
	build_txn(j, &s, st->buf);
	st->start = j->head;
	st->total = s.total;
	note_dirty(j, jbd2_log_wrap(&j->log, st->start), s.total);
	/* the journal sb image: written only after the first flush, so no
	 * s_start reaches the disk before the blocks it points at */
	if (j->tail == 0) {
		j->log.jsb->s_start = jbd2_be32(st->start);
		j->log.jsb->s_sequence = jbd2_be32(j->tid);
		j->jsb_dirty = 1;
	}
	if (j->revoked.n && !(j->log.incompat & JBD2_INCOMPAT_REVOKE)) {
		j->log.incompat |= JBD2_INCOMPAT_REVOKE;
		j->log.jsb->s_feature_incompat = jbd2_be32(j->log.incompat);
		j->jsb_dirty = 1;
	}
	st->write_jsb = j->jsb_dirty;
	/* the running transaction becomes the committing one */
	j->cm_run = j->run;
	j->cm_revoked = j->revoked;
	jset_init(&j->run);
	jset_init(&j->revoked);
	j->tid++;
	if (j->p.seal)
		j->p.seal(j->p.arg);
	return 0;
}

/* Phase 2: with or without fs_lock, touching only [commit] state. */
static errcode_t commit_write(struct e3_journal *j, const struct jc_staged *st)
{
	errcode_t err;

	err = write_log(j, st->start, st->total - 1, st->buf);
	if (!err && st->home_sb && !(err = e3_fault_commit_write(&j->fault)))
		err = jio_write_real(j, SUPERBLOCK_OFFSET / j->bs, 1, st->home_sb);
	if (!err)
		err = jio_flush_real(j);	/* + ordered file data */
	if (!err && st->write_jsb && !(err = e3_fault_commit_write(&j->fault)) &&
	    !(err = e3_fault_write(&j->fault)))
		err = jbd2_log_write_super(&j->log);
	if (!err)
		err = write_log(j, st->start + st->total - 1, 1,
				st->buf + (size_t)(st->total - 1) * j->bs);
	if (!err)
		err = jio_flush_real(j);
	return err;
}

/* Phase 3, under fs_lock again. */
static errcode_t commit_finish(struct e3_journal *j, struct jc_staged *st,
			       errcode_t err)
{
	free(st->buf);
	free(st->home_sb);
	if (err) {
		/* never committed: the image stays as of the last commit,
		 * and nothing more is written */
		jset_clear(&j->cm_run);
		jset_clear(&j->cm_revoked);
		jnl_abort_with(j, err);
		return err;
	}
	/* committed */
	if (st->home_sb)
		j->recover_home = 1;
	if (st->write_jsb)
		j->jsb_dirty = 0;
	if (j->tail == 0)
		j->tail = st->start;
	j->used += st->total;
	j->head = jbd2_log_wrap(&j->log, (uint64_t)st->start + st->total);
	retire_txn(j);
	j->hurry = j->waited;
	j->waited = 0;
	j->commits++;
	j->live++;
	j->last_commit_ns = jnl_now_ns();
	if (j->p.committed)
		j->p.committed(j->p.arg);
	e3_fault_committed(&j->fault, j->commits);
	/* poisoned while in flight: this commit (whole operations only) is
	 * durable, but nothing more may be written; the poisoner reports */
	if (j->state == JS_ABORTED)
		return 0;
	/* what is held for the checkpoint is bounded, not the log's size */
	return j->ckpt.n >= j->ckpt_max ? write_home(j) : 0;
}

errcode_t jc_commit(struct e3_journal *j, int unlocked)
{
	struct jc_staged st;
	errcode_t err;

	jc_wait_quiet(j);
	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	err = commit_stage(j, &st);
	if (err) {
		jnl_abort_with(j, err);
		return err;
	}
	if (st.total == 0)
		return 0;
	unlocked = unlocked && j->p.lock;
	j->cm_busy = 1;
	if (unlocked)
		pthread_mutex_unlock(j->p.lock);
	err = commit_write(j, &st);
	if (unlocked)
		pthread_mutex_lock(j->p.lock);
	j->cm_busy = 0;
	err = commit_finish(j, &st, err);
	pthread_cond_broadcast(&j->quiet);
	if (err && j->state != JS_ABORTED)
		jnl_abort_with(j, err);
	return err;
}

/* The committed blocks held in memory go to their home locations, in
 * runs of contiguous blocks, and are freed. No flush: the log still holds
 * them until a checkpoint has flushed and moved the tail. Safe once their
 * commit is durable, and every journaled superblock image keeps RECOVER
 * set, so a home superblock written here never hides the live log. */
static errcode_t write_home(struct e3_journal *j)
{
	unsigned char *stage;
	struct jbuf *b;
	blk64_t run0 = 0;
	unsigned cnt = 0;
	errcode_t err = 0;

	if (j->ckpt.n == 0)
		return 0;
	stage = malloc((size_t)RUN_MAX * j->bs);
	if (!stage)
		return ENOMEM;
	RB_FOREACH(b, jbuf_tree, &j->ckpt.tree) {
		int created;

		if (!jset_get(&j->homed, b->blk, j->bs, 0, &created)) {
			err = ENOMEM;
			break;
		}
		if (cnt && (b->blk != run0 + cnt || cnt == RUN_MAX)) {
			if ((err = jio_write_real(j, run0, cnt, stage)))
				break;
			cnt = 0;
		}
		if (cnt == 0)
			run0 = b->blk;
		memcpy(stage + (size_t)cnt * j->bs, b->data, j->bs);
		cnt++;
	}
	if (!err && cnt)
		err = jio_write_real(j, run0, cnt, stage);
	free(stage);
	if (!err)
		jset_clear(&j->ckpt);
	return err;
}

errcode_t jc_checkpoint(struct e3_journal *j)
{
	errcode_t err;

	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	if (j->tail == 0)
		return 0;
	err = write_home(j);
	if (!err)
		err = jio_flush_real(j);
	if (!err) {
		j->log.jsb->s_start = jbd2_be32(0);
		j->log.jsb->s_sequence = jbd2_be32(j->tid);
		if (!(err = e3_fault_write(&j->fault)))
			err = jbd2_log_write_super(&j->log);
	}
	if (!err)
		err = jio_flush_real(j);
	if (err) {
		jnl_abort_with(j, err);
		return err;
	}
	jset_clear(&j->homed);
	j->tail = 0;
	j->used = 0;
	j->live = 0;
	return 0;
}

/* RECOVER in the home superblock only (a read-modify-write of the newest
 * committed image of the block, nothing uncommitted leaks). Setting it is
 * flushed by the commit that needs it; clearing is flushed here. */
errcode_t jc_set_home_recover(struct e3_journal *j, int on)
{
	blk64_t blk = SUPERBLOCK_OFFSET / j->bs;
	unsigned off = SUPERBLOCK_OFFSET % j->bs;
	struct ext2_super_block *sb;
	unsigned char *buf;
	errcode_t err;

	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	if (!on && !j->recover_home)
		return 0;
	buf = malloc(j->bs);
	if (!buf)
		return ENOMEM;
	err = jio_read_committed(j, blk, buf);
	if (!err) {
		sb = (struct ext2_super_block *)(buf + off);
		if (on)
			ext2fs_set_feature_journal_needs_recovery(sb);
		else
			ext2fs_clear_feature_journal_needs_recovery(sb);
		err = jio_write_real(j, blk, 1, buf);
	}
	free(buf);
	if (!err && !on)
		err = jio_flush_real(j);
	if (err) {
		jnl_abort_with(j, err);
		return err;
	}
	j->recover_home = on;
	return 0;
}

/* zeros over log blocks [lo, hi): punched holes where unix_io can (cheap
 * and sparse, as mke2fs leaves a fresh journal), written zeros elsewhere */
static errcode_t zero_log(struct e3_journal *j, uint32_t lo, uint32_t hi)
{
	unsigned char *zero = NULL;
	errcode_t err = 0;

	while (lo < hi && !err) {
		blk64_t p0 = j->log.map[lo];
		uint32_t cnt = 1;

		while (lo + cnt < hi && cnt < RUN_MAX && j->log.map[lo + cnt] == p0 + cnt)
			cnt++;
		if (!(err = e3_fault_write(&j->fault)))
			err = io_channel_zeroout(j->real, p0, cnt);
		if (err == EXT2_ET_UNIMPLEMENTED || err == EOPNOTSUPP) {
			if (!zero && !(zero = calloc(RUN_MAX, j->bs)))
				return ENOMEM;
			err = jio_write_real(j, p0, cnt, zero);
		}
		lo += cnt;
	}
	free(zero);
	return err;
}

/* After the final checkpoint (s_start == 0): erase this session's log, so
 * that where commits happened to fall leaves no trace in the image, then
 * give s_sequence a value that depends only on the number of sessions.
 * Safe in any order of crash: until the zeros are flushed the journal sb
 * keeps the real next tid (above every stale tid), and once they are, no
 * block of ours is left to be mistaken for a live one. */
errcode_t jc_scrub_log(struct e3_journal *j)
{
	uint32_t lo = j->dirty_wrapped ? j->log.first : j->dirty_lo;
	uint32_t hi = j->dirty_wrapped ? j->log.maxlen : j->dirty_hi;
	errcode_t err;

	if (j->state == JS_ABORTED)
		return E3_JOURNAL_ABORTED;
	if (j->tail != 0 || j->dirty_hi == 0)
		return 0;
	err = zero_log(j, lo, hi);
	if (!err)
		err = jio_flush_real(j);
	if (!err) {
		j->log.jsb->s_sequence = jbd2_be32(j->start_seq + 1);
		if (!(err = e3_fault_write(&j->fault)))
			err = jbd2_log_write_super(&j->log);
	}
	if (err) {
		jnl_abort_with(j, err);
		return err;
	}
	j->dirty_hi = 0;
	j->dirty_wrapped = 0;
	return 0;
}
