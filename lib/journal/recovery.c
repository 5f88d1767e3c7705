/*
 * recovery.c: replaying an internal JBD2 journal the way e2fsck (and the
 * kernel, same algorithm) does: three passes over the log from s_start —
 * SCAN finds the first transaction without a valid commit block, REVOKE
 * collects revoke records (block -> newest revoking tid), REPLAY copies
 * every tagged block of every committed transaction home unless a
 * transaction at or after it revoked the block. Then, as e2fsck does: the
 * log is emptied (s_start = 0, s_sequence = end + 1), needs_recovery is
 * cleared, a failed commit or a recorded journal error becomes ERROR_FS.
 * Written from the format facts (ext3-facts §4.8), not from e2fsck's code.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/tree.h>

#include "e3img.h"
#include "e3_journal_view.h"
#include "jbd2_log.h"

/* PASS_VIEW is e3_journal_view's: REPLAY's walk that writes nothing,
 * recording each transaction and tagged block, and going on into the
 * first transaction without a commit (never replayed) to show it too. */
enum pass { PASS_SCAN, PASS_REVOKE, PASS_REPLAY, PASS_VIEW };

struct revoke_rec {
	RB_ENTRY(revoke_rec) rb;
	blk64_t blk;
	uint32_t tid;			/* newest transaction revoking blk */
};
RB_HEAD(revoke_tree, revoke_rec);

static int revoke_cmp(struct revoke_rec *a, struct revoke_rec *b)
{
	return a->blk < b->blk ? -1 : a->blk > b->blk;
}
RB_GENERATE_INTERNAL(revoke_tree, revoke_rec, rb, revoke_cmp,
		     static __attribute__((unused)))

struct recovery {
	struct jbd2_log *log;
	ext2_filsys fs;
	struct revoke_tree revokes;
	uint32_t start_tid, end_tid;	/* end: first tid not committed */
	int end_known;
	uint32_t failed_commit;		/* tid whose commit checksum failed */
	int have_failed_commit;
	unsigned tag_bytes;
	unsigned char *blk, *data;	/* scratch blocks */
	struct e3_replay_report *rep;
	errcode_t soft_err;		/* replay went on, but report this */
	struct e3_jview *view;		/* PASS_VIEW: what is recorded */
	size_t cap_txns, cap_blocks;
};

static errcode_t set_revoke(struct recovery *r, blk64_t blk, uint32_t tid)
{
	struct revoke_rec key, *rec;

	key.blk = blk;
	rec = RB_FIND(revoke_tree, &r->revokes, &key);
	if (rec) {
		if (jbd2_tid_gt(tid, rec->tid))
			rec->tid = tid;
		return 0;
	}
	rec = malloc(sizeof(*rec));
	if (!rec)
		return ENOMEM;
	rec->blk = blk;
	rec->tid = tid;
	RB_INSERT(revoke_tree, &r->revokes, rec);
	return 0;
}

/* revoked by tid itself or a later transaction */
static int test_revoke(struct recovery *r, blk64_t blk, uint32_t tid)
{
	struct revoke_rec key, *rec;

	key.blk = blk;
	rec = RB_FIND(revoke_tree, &r->revokes, &key);
	return rec && !jbd2_tid_gt(tid, rec->tid);
}

/* as test_revoke, and which transaction revoked it (the newest) */
static int revoked_by(struct recovery *r, blk64_t blk, uint32_t tid,
		      uint32_t *by)
{
	struct revoke_rec key, *rec;

	key.blk = blk;
	rec = RB_FIND(revoke_tree, &r->revokes, &key);
	if (!rec || jbd2_tid_gt(tid, rec->tid))
		return 0;
	*by = rec->tid;
	return 1;
}

static void free_revokes(struct recovery *r)
{
	struct revoke_rec *rec, *next;

	RB_FOREACH_SAFE(rec, revoke_tree, &r->revokes, next) {
		RB_REMOVE(revoke_tree, &r->revokes, rec);
		free(rec);
	}
}

static uint64_t tag_blocknr(const struct recovery *r, const unsigned char *tag)
{
	uint64_t b = jbd2_load32(tag + JBD2_TAG_BLOCKNR);

	if (r->log->incompat & JBD2_INCOMPAT_64BIT)
		b |= (uint64_t)jbd2_load32(tag + JBD2_TAG_HIGH) << 32;
	return b;
}

/* bytes of a descriptor that may hold tags */
static unsigned desc_space(const struct recovery *r)
{
	return r->log->bs - (jbd2_has_csum_v2v3(r->log->incompat) ?
			     JBD2_TAIL_BYTES : 0);
}

/* tags in a descriptor: stop at LAST_TAG or when the next would not fit */
static uint32_t count_tags(const struct recovery *r, const unsigned char *d)
{
	unsigned off = sizeof(struct jbd2_header), space = desc_space(r);
	uint32_t n = 0;

	while (off + r->tag_bytes <= space) {
		uint16_t flags = jbd2_load16(d + off + JBD2_TAG_FLAGS16);

		n++;
		off += r->tag_bytes;
		if (!(flags & JBD2_FLAG_SAME_UUID))
			off += 16;
		if (flags & JBD2_FLAG_LAST_TAG)
			break;
	}
	return n;
}

static int tag_csum_ok(const struct recovery *r, const unsigned char *tag,
		       const unsigned char *data, uint32_t tid)
{
	unsigned char seq[4];
	uint32_t c;

	if (!jbd2_has_csum_v2v3(r->log->incompat))
		return 1;
	jbd2_store32(seq, tid);
	c = jbd2_csum(r->log, r->log->csum_seed, seq, 4);
	c = jbd2_csum(r->log, c, data, r->log->bs);
	if (r->log->incompat & JBD2_INCOMPAT_CSUM_V3)
		return jbd2_load32(tag + JBD2_TAG3_CSUM) == c;
	return jbd2_load16(tag + JBD2_TAG_CSUM16) == (uint16_t)c;
}

/* PASS_REPLAY of one descriptor: its tagged blocks follow it in the log */
static errcode_t replay_desc(struct recovery *r, const unsigned char *d,
			     uint32_t *next, uint32_t tid)
{
	unsigned off = sizeof(struct jbd2_header), space = desc_space(r);
	errcode_t err;

	while (off + r->tag_bytes <= space) {
		const unsigned char *tag = d + off;
		uint16_t flags = jbd2_load16(tag + JBD2_TAG_FLAGS16);
		uint32_t lb = *next;
		uint64_t home = tag_blocknr(r, tag);

		*next = jbd2_log_wrap(r->log, (uint64_t)lb + 1);
		err = jbd2_log_read(r->log, lb, r->data);
		if (err) {
			r->soft_err = err;	/* recover what we can */
		} else if (test_revoke(r, home, tid)) {
			r->rep->revoked++;
		} else if (!tag_csum_ok(r, tag, r->data, tid)) {
			r->soft_err = E3_JOURNAL_CORRUPT;
		} else if (home >= ext2fs_blocks_count(r->fs->super)) {
			r->soft_err = E3_JOURNAL_CORRUPT;
		} else {
			if (flags & JBD2_FLAG_ESCAPE)
				jbd2_store32(r->data, JBD2_MAGIC);
			err = io_channel_write_blk64(r->fs->io, home, 1, r->data);
			if (err)
				return err;
			r->rep->blocks++;
		}
		off += r->tag_bytes;
		if (!(flags & JBD2_FLAG_SAME_UUID))
			off += 16;
		if (flags & JBD2_FLAG_LAST_TAG)
			break;
	}
	return 0;
}

/* PASS_VIEW: the record of transaction tid (the last one, or a new one
 * starting at log block lb) */
static struct e3_jtxn *view_txn(struct recovery *r, uint32_t tid, uint32_t lb)
{
	struct e3_jview *v = r->view;

	if (v->ntxns && v->txns[v->ntxns - 1].tid == tid)
		return &v->txns[v->ntxns - 1];
	if (v->ntxns == r->cap_txns) {
		size_t cap = r->cap_txns ? 2 * r->cap_txns : 16;
		struct e3_jtxn *t = realloc(v->txns, cap * sizeof(*t));

		if (!t)
			return NULL;
		v->txns = t;
		r->cap_txns = cap;
	}
	v->txns[v->ntxns] = (struct e3_jtxn){ .tid = tid,
		.first_log_block = lb, .first = v->nblocks };
	return &v->txns[v->ntxns++];
}

/* PASS_VIEW of one descriptor: replay_desc's decisions, recorded */
static errcode_t view_desc(struct recovery *r, const unsigned char *d,
			   uint32_t *next, uint32_t tid, struct e3_jtxn *t)
{
	unsigned off = sizeof(struct jbd2_header), space = desc_space(r);
	struct e3_jview *v = r->view;
	int committed = jbd2_tid_gt(r->end_tid, tid);

	while (off + r->tag_bytes <= space) {
		const unsigned char *tag = d + off;
		uint16_t flags = jbd2_load16(tag + JBD2_TAG_FLAGS16);
		struct e3_jlog_block b = { .tid = tid, .log_block = *next,
			.home = tag_blocknr(r, tag),
			.escaped = !!(flags & JBD2_FLAG_ESCAPE) };

		b.log_fsblk = b.log_block < r->log->nmap ?
			      r->log->map[b.log_block] : 0;
		*next = jbd2_log_wrap(r->log, (uint64_t)b.log_block + 1);
		if (!committed)
			b.fate = E3_JB_UNCOMMITTED;
		else if (jbd2_log_read(r->log, b.log_block, r->data))
			b.fate = E3_JB_BAD;
		else if (revoked_by(r, b.home, tid, &b.revoke_tid))
			b.fate = E3_JB_REVOKED;
		else if (!tag_csum_ok(r, tag, r->data, tid) ||
			 b.home >= ext2fs_blocks_count(r->fs->super))
			b.fate = E3_JB_BAD;
		else
			b.fate = E3_JB_REPLAYED;
		if (v->nblocks == r->cap_blocks) {
			size_t cap = r->cap_blocks ? 2 * r->cap_blocks : 64;
			struct e3_jlog_block *nb = realloc(v->blocks,
							   cap * sizeof(*nb));

			if (!nb)
				return ENOMEM;
			v->blocks = nb;
			r->cap_blocks = cap;
		}
		v->blocks[v->nblocks++] = b;
		t->blocks++;
		off += r->tag_bytes;
		if (!(flags & JBD2_FLAG_SAME_UUID))
			off += 16;
		if (flags & JBD2_FLAG_LAST_TAG)
			break;
	}
	return 0;
}

/* PASS_VIEW: the records a revoke block holds */
static uint32_t count_revokes(const struct recovery *r, const unsigned char *b)
{
	unsigned rec = (r->log->incompat & JBD2_INCOMPAT_64BIT) ? 8 : 4;
	uint32_t max = jbd2_load32(b + offsetof(struct jbd2_revoke_header, r_count));

	if (max > r->log->bs || max < sizeof(struct jbd2_revoke_header))
		return 0;
	return (max - sizeof(struct jbd2_revoke_header)) / rec;
}

static errcode_t scan_revokes(struct recovery *r, const unsigned char *b,
			      uint32_t tid)
{
	unsigned rec = (r->log->incompat & JBD2_INCOMPAT_64BIT) ? 8 : 4;
	unsigned max = jbd2_load32(b + offsetof(struct jbd2_revoke_header, r_count));
	unsigned limit = r->log->bs - (jbd2_has_csum_v2v3(r->log->incompat) ?
				       JBD2_TAIL_BYTES : 0);
	errcode_t err;

	if (max > limit)
		return E3_JOURNAL_CORRUPT;
	for (unsigned off = sizeof(struct jbd2_revoke_header); off + rec <= max;
	     off += rec) {
		uint64_t blk = jbd2_load32(b + off);

		if (rec == 8)
			blk = blk << 32 | jbd2_load32(b + off + 4);
		if ((err = set_revoke(r, blk, tid)))
			return err;
	}
	return 0;
}

/* v1 CHECKSUM: crc32_be over every block of the transaction */
static errcode_t sum_desc(struct recovery *r, const unsigned char *d,
			  uint32_t *next, uint32_t *crc)
{
	uint32_t n = count_tags(r, d);
	errcode_t err;

	*crc = ext2fs_crc32_be(*crc, d, r->log->bs);
	for (uint32_t i = 0; i < n; i++) {
		err = jbd2_log_read(r->log, *next, r->data);
		if (err)
			return err;
		*crc = ext2fs_crc32_be(*crc, r->data, r->log->bs);
		*next = jbd2_log_wrap(r->log, (uint64_t)*next + 1);
	}
	return 0;
}

/* SCAN's verdict on a commit block: 1 counts, 0 ends the log */
static int commit_ok(struct recovery *r, const unsigned char *b,
		     uint32_t tid, uint32_t *crc, uint64_t *last_time,
		     int *need_time_check, int *stop)
{
	struct jbd2_commit c;
	int bad = 0;

	memcpy(&c, b, sizeof(c));
	if (r->log->compat & JBD2_COMPAT_CHECKSUM) {
		uint32_t found = jbd2_get32(c.c_chksum[0]);

		if (r->end_known) {
			r->failed_commit = r->end_tid;
			r->have_failed_commit = 1;
			*stop = 1;
			return 0;
		}
		if (!((*crc == found && c.c_chksum_type == JBD2_CRC32_CHKSUM &&
		       c.c_chksum_size == JBD2_CRC32_CHKSUM_SIZE) ||
		      (c.c_chksum_type == 0 && c.c_chksum_size == 0 && found == 0)))
			bad = 1;
		*crc = ~0U;
	}
	if (!bad && !jbd2_commit_verify(r->log, b))
		bad = 1;
	uint64_t t = jbd2_get64(c.c_commit_sec);
	if (bad) {
		if (t < *last_time) {	/* stale block of an older log */
			*stop = 2;
			return 0;
		}
		r->end_tid = tid;
		r->end_known = 1;
		if (!(r->log->incompat & JBD2_INCOMPAT_ASYNC_COMMIT)) {
			r->failed_commit = tid;
			r->have_failed_commit = 1;
			*stop = 1;
			return 0;
		}
	}
	if (*need_time_check) {
		if (t >= *last_time) {
			r->soft_err = E3_JOURNAL_CORRUPT;
			*stop = 3;
			return 0;
		}
		*stop = 2;	/* an older journal's leftovers: clean end */
		return 0;
	}
	*last_time = t;
	return 1;
}

/* A pass reads each log position once at most. The live log is shorter
 * than the log area (s_maxlen - s_first blocks, or from s_start when the
 * log begins below s_first): a pass that would come
 * round to where it began has met descriptors that claim more blocks than
 * the journal holds, or a log that wraps onto itself, and without this
 * bound it would go round for ever (a transaction's own descriptor read
 * again carries the same tid). walked: positions consumed so far. */
static int overruns(const struct recovery *r, uint64_t walked, uint64_t more)
{
	/* a log that begins below s_first reads s_start..s_maxlen-1 before
	 * the wrap brings it back to s_first, which it has read already */
	uint32_t lo = r->log->first, start = jbd2_get32(r->log->jsb->s_start);

	if (start && start < lo)
		lo = start;
	return walked + more > (uint64_t)r->log->maxlen - lo;
}

static errcode_t do_pass(struct recovery *r, enum pass pass)
{
	struct jbd2_superblock *jsb = r->log->jsb;
	uint32_t tid = jbd2_get32(jsb->s_sequence);
	uint32_t next = jbd2_get32(jsb->s_start);
	uint32_t crc = ~0U;
	uint64_t last_time = 0, walked = 0;
	int need_time_check = 0;
	struct e3_jtxn *t = NULL;	/* PASS_VIEW: the current one */
	errcode_t err;

	if (pass == PASS_SCAN)
		r->start_tid = tid;
	for (;;) {
		struct jbd2_header h;
		uint32_t type, here;
		int stop = 0;

		if ((pass == PASS_REVOKE || pass == PASS_REPLAY) &&
		    jbd2_tid_geq(tid, r->end_tid))
			break;
		/* the view goes on into the first uncommitted transaction */
		if (pass == PASS_VIEW && jbd2_tid_gt(tid, r->end_tid))
			break;
		if (overruns(r, walked, 1)) {
			/* a whole turn read: the next block is s_start's,
			 * which ends the log unless no commit came since */
			if (pass == PASS_SCAN && tid != r->start_tid)
				goto done;
			goto overrun;
		}
		walked++;
		here = next;
		err = jbd2_log_read(r->log, next, r->blk);
		if (err)
			return err;
		next = jbd2_log_wrap(r->log, (uint64_t)next + 1);
		memcpy(&h, r->blk, sizeof(h));
		if (jbd2_get32(h.h_magic) != JBD2_MAGIC ||
		    jbd2_get32(h.h_sequence) != tid)
			break;
		type = jbd2_get32(h.h_blocktype);
		if (pass == PASS_VIEW && (type == JBD2_DESCRIPTOR_BLOCK ||
		    type == JBD2_COMMIT_BLOCK || type == JBD2_REVOKE_BLOCK) &&
		    !(t = view_txn(r, tid, here)))
			return ENOMEM;
		if (type == JBD2_DESCRIPTOR_BLOCK) {
			uint32_t ntags = count_tags(r, r->blk);

			/* its blocks follow it: all inside one turn */
			if (overruns(r, walked, ntags))
				goto overrun;
			walked += ntags;
			if (!jbd2_tail_verify(r->log, r->blk)) {
				if (pass == PASS_VIEW &&
				    jbd2_tid_geq(tid, r->end_tid))
					break;	/* past the log's end */
				if (pass != PASS_SCAN)
					return E3_JOURNAL_CORRUPT;
				need_time_check = 1;
			}
			if (pass == PASS_VIEW) {
				err = view_desc(r, r->blk, &next, tid, t);
			} else if (pass == PASS_REPLAY) {
				err = replay_desc(r, r->blk, &next, tid);
			} else if (pass == PASS_SCAN && !r->end_known &&
				   !need_time_check &&
				   (r->log->compat & JBD2_COMPAT_CHECKSUM)) {
				err = sum_desc(r, r->blk, &next, &crc);
				if (err)
					break;
			} else {
				next = jbd2_log_wrap(r->log, (uint64_t)next +
						     ntags);
			}
			if (err)
				return err;
		} else if (type == JBD2_COMMIT_BLOCK) {
			if (pass == PASS_SCAN &&
			    !commit_ok(r, r->blk, tid, &crc, &last_time,
				       &need_time_check, &stop)) {
				if (stop == 3)
					return r->soft_err;
				if (stop == 2)
					goto done;
				break;
			}
			if (pass == PASS_VIEW) {
				if (jbd2_tid_geq(tid, r->end_tid))
					break;	/* a commit the scan refused */
				t->committed = 1;
			}
			tid++;
		} else if (type == JBD2_REVOKE_BLOCK) {
			if (pass == PASS_SCAN && !jbd2_tail_verify(r->log, r->blk))
				need_time_check = 1;
			if (pass == PASS_REVOKE && (err = scan_revokes(r, r->blk, tid)))
				return err;
			if (pass == PASS_VIEW)
				t->revokes += count_revokes(r, r->blk);
		} else {
			goto done;	/* unknown block type ends the log */
		}
	}
	goto done;
overrun:
	/* SCAN: the log ends before the transaction that overran (the ones
	 * before it committed inside the log and are replayed), and the
	 * replay reports it; the later passes stop before it */
	if (pass == PASS_VIEW && jbd2_tid_geq(tid, r->end_tid))
		return 0;	/* the uncommitted tail overran: it ends there */
	if (pass != PASS_SCAN)
		return E3_JOURNAL_LOG_OVERRUN;
	r->soft_err = E3_JOURNAL_LOG_OVERRUN;
done:
	if (pass == PASS_SCAN) {
		if (!r->end_known) {
			r->end_tid = tid;
			r->end_known = 1;
		}
	} else if (pass != PASS_VIEW && r->end_tid != tid && !r->soft_err) {
		r->soft_err = EIO;	/* passes disagree: I/O trouble */
	}
	return 0;
}

static int fs_has_journal_fields(ext2_filsys fs)
{
	return ext2fs_has_feature_journal(fs->super);
}

int e3_journal_pending(ext2_filsys fs)
{
	struct jbd2_log log;
	int pending;

	if (!fs_has_journal_fields(fs))
		return 0;
	if (ext2fs_has_feature_journal_needs_recovery(fs->super))
		return 1;
	if (jbd2_log_open(fs, fs->io, JBD2_LOG_READ, &log))
		return 0;
	pending = jbd2_get32(log.jsb->s_start) != 0;
	jbd2_log_close(&log);
	return pending;
}

/* The primary superblock on disk, as a raw read-modify-write: the
 * in-memory fs->super is stale once blocks were replayed. */
static errcode_t finish_super(ext2_filsys fs, int failed, int fs_error)
{
	blk64_t blk = SUPERBLOCK_OFFSET / fs->blocksize;
	unsigned off = SUPERBLOCK_OFFSET % fs->blocksize;
	struct ext2_super_block *sb;
	unsigned char *buf;
	errcode_t err;

	buf = malloc(fs->blocksize);
	if (!buf)
		return ENOMEM;
	err = io_channel_read_blk64(fs->io, blk, 1, buf);
	if (!err) {
		sb = (struct ext2_super_block *)(buf + off);
		ext2fs_clear_feature_journal_needs_recovery(sb);
		if (failed)	/* a full check is needed */
			sb->s_state &= ~EXT2_VALID_FS;
		if (fs_error)
			sb->s_state |= EXT2_ERROR_FS;
		err = io_channel_write_blk64(fs->io, blk, 1, buf);
	}
	free(buf);
	/* the caller reopens; make sure closing this handle writes nothing
	 * stale over what was replayed */
	ext2fs_clear_feature_journal_needs_recovery(fs->super);
	fs->flags &= ~(EXT2_FLAG_DIRTY | EXT2_FLAG_CHANGED |
		       EXT2_FLAG_BB_DIRTY | EXT2_FLAG_IB_DIRTY);
	return err;
}

/* A walk over log: what every pass starts from (blk and data may come
 * back NULL: the caller says ENOMEM) and what it leaves to free. */
static void recovery_init(struct recovery *r, ext2_filsys fs,
			  struct jbd2_log *log)
{
	memset(r, 0, sizeof(*r));
	r->log = log;
	r->fs = fs;
	RB_INIT(&r->revokes);
	r->tag_bytes = jbd2_tag_bytes(log->incompat);
	r->blk = malloc(log->bs);
	r->data = malloc(log->bs);
}

static void recovery_free(struct recovery *r)
{
	free_revokes(r);
	free(r->blk);
	free(r->data);
}

/* The three passes over an open log (internal or external), then the
 * empty log and the superblock written. */
static errcode_t replay_log(ext2_filsys fs, struct jbd2_log *log,
			    struct e3_replay_report *rep)
{
	struct recovery r;
	errcode_t err, rerr = 0;
	uint32_t next_seq;
	int fs_error = 0;

	recovery_init(&r, fs, log);
	r.rep = rep;
	if (!r.blk || !r.data) {
		err = ENOMEM;
		goto out;
	}
	next_seq = jbd2_get32(log->jsb->s_sequence);
	if (jbd2_get32(log->jsb->s_start) == 0) {
		next_seq++;
	} else {
		rerr = do_pass(&r, PASS_SCAN);
		if (!rerr)
			rerr = do_pass(&r, PASS_REVOKE);
		if (!rerr)
			rerr = do_pass(&r, PASS_REPLAY);
		rep->first_tid = r.start_tid;
		rep->last_tid = r.end_tid - 1;
		rep->transactions = r.end_tid - r.start_tid;
		next_seq = r.end_tid + 1;
		/* as e2fsck: a recovery that failed (a bad block checksum or
		 * an I/O error included) leaves s_sequence where it was */
		if (rerr || r.soft_err)
			next_seq = jbd2_get32(log->jsb->s_sequence);
	}
	err = io_channel_flush(fs->io);
	if (err)
		goto out;
	if (r.have_failed_commit)
		log->jsb->s_errno = jbd2_be32((uint32_t)-EINVAL);
	/* a recorded journal error becomes the fs's error state */
	if (jbd2_get32(log->jsb->s_errno)) {
		fs_error = 1;
		log->jsb->s_errno = jbd2_be32(0);
	}
	log->jsb->s_start = jbd2_be32(0);
	log->jsb->s_sequence = jbd2_be32(next_seq);
	err = jbd2_log_write_super(log);
	/* an external log's superblock is on its own device: durable there
	 * before the fs stops saying it needs recovery */
	if (!err && log->io != fs->io)
		err = io_channel_flush(log->io);
	if (!err)
		err = finish_super(fs, rerr != 0 || r.soft_err != 0, fs_error);
	if (!err)
		err = io_channel_flush(fs->io);
out:
	recovery_free(&r);
	jbd2_log_close(log);
	if (!err)
		err = rerr ? rerr : r.soft_err;
	if (!err && r.have_failed_commit)
		err = E3_JOURNAL_CORRUPT;
	return err;
}

errcode_t e3_journal_view(ext2_filsys fs, struct e3_jview *v)
{
	struct recovery r;
	struct jbd2_log log;
	errcode_t err;

	memset(v, 0, sizeof(*v));
	err = jbd2_log_open(fs, fs->io, JBD2_LOG_READ, &log);
	if (err)
		return err;
	recovery_init(&r, fs, &log);
	r.view = v;
	v->sequence = jbd2_get32(log.jsb->s_sequence);
	v->start = jbd2_get32(log.jsb->s_start);
	if (!r.blk || !r.data) {
		err = ENOMEM;
	} else if (!v->start) {
		v->empty = 1;
		v->start_tid = v->end_tid = v->sequence;
	} else {
		/* the replay's own passes, then the walk that records */
		err = do_pass(&r, PASS_SCAN);
		if (!err)
			err = do_pass(&r, PASS_REVOKE);
		if (!err)
			err = do_pass(&r, PASS_VIEW);
		v->start_tid = r.start_tid;
		v->end_tid = r.end_tid;
		v->problem = r.soft_err;
		if (!v->problem && r.have_failed_commit)
			v->problem = E3_JOURNAL_CORRUPT;
		for (size_t i = 0; !v->problem && i < v->nblocks; i++)
			if (v->blocks[i].fate == E3_JB_BAD)
				v->problem = E3_JOURNAL_CORRUPT;
	}
	recovery_free(&r);
	jbd2_log_close(&log);
	if (err)	/* nothing half-filled for the caller to free */
		e3_journal_view_free(v);
	return err;
}

void e3_journal_view_free(struct e3_jview *v)
{
	free(v->txns);
	free(v->blocks);
	memset(v, 0, sizeof(*v));
}

const char *e3_jblock_fate_name(enum e3_jblock_fate f)
{
	switch (f) {
	case E3_JB_REPLAYED:	return "replayed";
	case E3_JB_REVOKED:	return "revoked";
	case E3_JB_UNCOMMITTED:	return "uncommitted";
	case E3_JB_BAD:		return "bad";
	}
	return "?";
}

/* jio: an external journal's device, or NULL for the fs's own journal */
static errcode_t replay_from(ext2_filsys fs, io_channel jio, int mode,
			     struct e3_replay_report *rep)
{
	struct e3_replay_report dummy;
	struct jbd2_log log;
	errcode_t err;

	if (!rep)
		rep = &dummy;
	memset(rep, 0, sizeof(*rep));
	if (!(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	err = jio ? jbd2_log_open_dev(fs, jio, mode, &log) :
		    jbd2_log_open(fs, fs->io, mode, &log);
	if (err)
		return err;
	err = replay_log(fs, &log, rep);
	if (!err && jio)
		err = io_channel_flush(jio);
	return err;
}

errcode_t e3_journal_replay(ext2_filsys fs, struct e3_replay_report *rep)
{
	return replay_from(fs, NULL, JBD2_LOG_READ, rep);
}

errcode_t e3_journal_replay_salvage(ext2_filsys fs,
				    struct e3_replay_report *rep)
{
	return replay_from(fs, NULL, JBD2_LOG_SALVAGE, rep);
}

errcode_t e3_journal_replay_dev(ext2_filsys fs, io_channel jio,
				struct e3_replay_report *rep)
{
	return replay_from(fs, jio, JBD2_LOG_READ, rep);
}
