/*
 * check_journal.c: pass 7 — the internal journal: its inode (a regular
 * file, big enough, no holes in the log), its superblock (magic, type,
 * block size, length, features) and whether a replay is pending. The
 * replay itself is lib/journal/recovery.c's e3_journal_replay. An invalid
 * internal journal is cleared by the round's fixes (the passes ignore
 * inode 8 meanwhile) and recreated (lib/journal/mkjournal.c) at the end of a
 * later round. It runs first, as e2fsck's journal check does, so that a
 * replayed image, or one without the invalid journal, is what the other
 * passes see.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <et/com_err.h>
#include <uuid/uuid.h>

#include "check.h"
#include "journal/jbd2_log.h"
#include "journal/mkjournal.h"

#define JBD_MAGIC 0xC03B3998u
#define JBD_SB_V1 3
#define JBD_SB_V2 4
#define JBD_MIN_BLOCKS 1024

/* chk_journal_state; JNL_MOVE: valid, nothing pending, but in an
 * ordinary inode (an old-style journal, see move_journal) */
enum { JNL_OK = 0, JNL_PENDING, JNL_INVALID, JNL_UNSUPP, JNL_MOVE };

struct jsb {			/* the fields read here, big-endian on disk */
	uint32_t magic, blocktype, sequence;
	uint32_t blocksize, maxlen, first, s_sequence, start, errno_;
	uint32_t compat, incompat, ro_compat;
};

/* Reports an invalid journal; returns what chk_journal_state returns
 * for one: JNL_INVALID, or 0 for unknown features (never touched). */
static int jbad(struct chk_ctx *ctx, int code, const char *why)
{
	struct e3_finding *f = chk_add(ctx, NULL, code);

	if (f) {
		f->ino = EXT2_JOURNAL_INO;
		f->name = strdup(why);
	}
	return code == E3P_JNL_UNSUPPORTED ? 0 : JNL_INVALID;
}

/* Journal block 0 into raw (ctx->bs bytes) and its fields into j. */
static int read_jsb_raw(struct chk_ctx *ctx, struct ext2_inode *in,
			struct jsb *j, unsigned char *raw)
{
	blk64_t pblk = 0;
	const uint32_t *w = (const uint32_t *)raw;
	int i;

	if (ext2fs_bmap2(ctx->fs, ctx->fs->super->s_journal_inum, in, NULL, 0,
			 0, NULL, &pblk) ||
	    !pblk || pblk >= ctx->nblocks)
		return -1;
	if (chk_read_block(ctx, ctx->fd, pblk, raw))
		return -1;
	for (i = 0; i < 12; i++)
		((uint32_t *)j)[i] = ext2fs_be32_to_cpu(w[i]);
	return 0;
}

static int read_jsb(struct chk_ctx *ctx, struct ext2_inode *in, struct jsb *j)
{
	unsigned char *buf = malloc(ctx->bs);
	int rc = buf ? read_jsb_raw(ctx, in, j, buf) : -1;

	free(buf);
	return rc;
}

/* The journal superblock judged by the library's own rules (lib/journal/jbd2_log.c
 * jbd2_super_check: what replay and writers refuse), so e3fsck reports
 * exactly the superblocks the other tools will not replay. JNL_OK, or
 * what jbad returns. */
static int judge_jsb(struct chk_ctx *ctx, struct ext2_inode *in, uint64_t size,
		     struct jsb *j)
{
	unsigned char *buf = malloc(ctx->bs > 1024 ? ctx->bs : 1024);
	const char *why = NULL;
	errcode_t err;
	int rc;

	if (!buf)
		return jbad(ctx, E3P_JNL_INODE_BAD, "no memory to read its first block");
	if (read_jsb_raw(ctx, in, j, buf)) {
		free(buf);
		return jbad(ctx, E3P_JNL_INODE_BAD, "no first block");
	}
	err = jbd2_super_check((const struct jbd2_superblock *)buf, ctx->bs,
			       size / ctx->bs, JBD2_LOG_READ, &why);
	free(buf);
	if (!err)
		return JNL_OK;
	/* only the geometry wrong, and a committed log: -p/-y replay it
	 * (salvage_replay) rather than lose it */
	if ((err == E3_JOURNAL_SB_LENGTH || err == E3_JOURNAL_SB_FIRST) &&
	    j->start && j->start < size / ctx->bs)
		return jbad(ctx, E3P_JNL_SB_GEOMETRY, why ? why : error_message(err));
	rc = jbad(ctx, err == E3_JOURNAL_UNSUPPORTED ? E3P_JNL_UNSUPPORTED :
		  E3P_JNL_SB_BAD, why ? why : error_message(err));
	/* unsupported: reported, never touched, no replay either */
	return err == E3_JOURNAL_UNSUPPORTED ? JNL_UNSUPP : rc;
}

/* The log's block map as recovery and writers use it (lib/journal/jbd2_log.c):
 * every block inside the filesystem, none twice, no hole. A log that
 * fails this is not replayed (recovery would refuse it) but reported as
 * invalid; e2fsck reports the first two, and the kernel cannot write a
 * log block that is a hole either. */
static int map_bad(struct chk_ctx *ctx)
{
	struct jbd2_log log;
	errcode_t err = jbd2_log_open(ctx->fs, ctx->fs->io, JBD2_LOG_READ, &log);

	if (!err)
		jbd2_log_close(&log);
	return err == E3_JOURNAL_MAP_BAD;
}

/* The external journal -j names, opened for reading (or for the replay
 * with rw); 0 and *jio set, or the error. */
static errcode_t open_ext(struct chk_ctx *ctx, int rw, io_channel *jio)
{
	return unix_io_manager->open(ctx->opts.journal_dev,
				     rw ? IO_FLAG_RW | IO_FLAG_EXCLUSIVE : 0, jio);
}

/* An external journal given with -j: its device's superblock and the
 * journal superblock judged as jbd2_log_open_dev does (the filesystem's
 * journal UUID, block size, fields); JNL_PENDING when needs_recovery is
 * set. A journal that fails is reported and never touched: it is not
 * ours to clear, and the filesystem's journal fields stay. */
static int ext_state(struct chk_ctx *ctx)
{
	struct ext2_super_block *sb = ctx->fs->super;
	struct jbd2_log log;
	struct e3_finding *f;
	io_channel jio;
	char why[200];
	uint32_t start, seq;
	errcode_t err = open_ext(ctx, 0, &jio);

	if (!err) {
		err = jbd2_log_open_dev(ctx->fs, jio, JBD2_LOG_READ, &log);
		io_channel_close(jio);
	}
	if (err) {
		snprintf(why, sizeof(why), "external journal %s: %s",
			 ctx->opts.journal_dev, error_message(err));
		jbad(ctx, E3P_JNL_UNSUPPORTED, why);
		return 0;
	}
	start = jbd2_get32(log.jsb->s_start);
	seq = jbd2_get32(log.jsb->s_sequence);
	jbd2_log_close(&log);
	if (ext2fs_has_feature_journal_needs_recovery(sb) || start) {
		if ((f = chk_add(ctx, NULL, ext2fs_has_feature_journal_needs_recovery(sb) ?
				 E3P_JNL_PENDING : E3P_JNL_DATA_NO_RECOVER))) {
			f->num = start;
			f->num2 = seq;
		}
		return JNL_PENDING;
	}
	return JNL_OK;
}

static int is_external(const struct ext2_super_block *sb)
{
	return !uuid_is_null(sb->s_journal_uuid) || sb->s_journal_dev;
}

/* JNL_PENDING when a replay is pending, JNL_INVALID when the internal
 * journal is invalid (both reported), else JNL_OK. */
static int chk_journal_state(struct chk_ctx *ctx)
{
	struct ext2_super_block *sb = ctx->fs->super;
	struct ext2_inode in;
	struct e3_finding *f;
	struct jsb j;
	uint64_t size;
	ext2_ino_t jino = sb->s_journal_inum;
	int st;

	if (!ext2fs_has_feature_journal(sb))
		return 0;
	if (is_external(sb)) {
		if (ctx->opts.journal_dev)
			return ext_state(ctx);
		chk_add(ctx, NULL, E3P_JNL_EXTERNAL);
		return 0;
	}
	/* inode 8, or an ordinary inode: what tune2fs -j on a mounted
	 * filesystem makes (a visible /.journal), replayed through it and
	 * then moved, as e2fsck does */
	if ((jino != EXT2_JOURNAL_INO &&
	     (jino < EXT2_FIRST_INO(sb) || jino > ctx->ninodes)) ||
	    ext2fs_read_inode(ctx->fs, jino, &in))
		return jbad(ctx, E3P_JNL_INODE_BAD, "journal inode number");
	size = EXT2_I_SIZE(&in);
	if (!LINUX_S_ISREG(in.i_mode) || !in.i_links_count)
		return jbad(ctx, E3P_JNL_INODE_BAD, "not a regular file in use");
	if (size / ctx->bs < JBD_MIN_BLOCKS)
		return jbad(ctx, E3P_JNL_INODE_BAD, "too small");
	st = judge_jsb(ctx, &in, size, &j);
	if (st == JNL_UNSUPP)
		return 0;
	if (st != JNL_OK)
		return st;
	if (map_bad(ctx))
		return jbad(ctx, E3P_JNL_INODE_BAD, "block map leaves the "
		     "filesystem, names a block twice or has a hole");
	/* before any pending-replay finding: chk_pass_journal acts on the
	 * last one */
	if (j.errno_ && (f = chk_add(ctx, NULL, E3P_JNL_ERRNO)))
		f->num = (int32_t)j.errno_ < 0 ? -(int64_t)(int32_t)j.errno_ : j.errno_;
	if (ext2fs_has_feature_journal_needs_recovery(sb)) {
		if ((f = chk_add(ctx, NULL, E3P_JNL_PENDING))) {
			f->num = j.start;
			f->num2 = j.s_sequence;
		}
		return JNL_PENDING;
	}
	if (j.start) {
		if ((f = chk_add(ctx, NULL, E3P_JNL_DATA_NO_RECOVER))) {
			f->num = j.start;
			f->num2 = j.s_sequence;
		}
		return JNL_PENDING;
	}
	return jino == EXT2_JOURNAL_INO ? JNL_OK : JNL_MOVE;
}

/* The old-style journal in ordinary inode jino becomes inode 8's, as
 * e2fsck moves it: inode 8 takes its map and size, the root's
 * ".journal" entry naming it goes, jino is freed, and the superblock
 * names inode 8 and keeps the backup of its map. The blocks never move;
 * they change owner, so the block bitmap stays right. */
static errcode_t move_journal(struct chk_ctx *ctx)
{
	ext2_filsys fs = ctx->fs;
	struct ext2_super_block *sb = fs->super;
	ext2_ino_t jino = sb->s_journal_inum, named = 0;
	struct ext2_inode in, gone;
	errcode_t err;

	err = ext2fs_read_inode(fs, jino, &in);
	if (!err && (!fs->inode_map || !fs->block_map))
		err = ext2fs_read_bitmaps(fs);
	if (err)
		return err;
	if (!ext2fs_lookup(fs, EXT2_ROOT_INO, ".journal", 8, NULL, &named) &&
	    named == jino) {
		err = ext2fs_unlink(fs, EXT2_ROOT_INO, ".journal", jino, 0);
		if (err)
			return err;
	}
	in.i_mode = LINUX_S_IFREG | 0600;
	in.i_links_count = 1;
	in.i_dtime = 0;
	err = chk_zero_journal_inode(ctx);	/* no stale large fields */
	if (!err)
		err = ext2fs_write_inode(fs, EXT2_JOURNAL_INO, &in);
	if (err)
		return err;
	memset(&gone, 0, sizeof(gone));
	gone.i_dtime = (uint32_t)(fs->now ? fs->now : time(NULL));
	err = ext2fs_write_inode(fs, jino, &gone);
	if (err)
		return err;
	ext2fs_inode_alloc_stats2(fs, jino, -1, 0);
	sb->s_journal_inum = EXT2_JOURNAL_INO;
	memcpy(sb->s_jnl_blocks, in.i_block, sizeof(in.i_block));
	sb->s_jnl_blocks[15] = in.i_size_high;
	sb->s_jnl_blocks[16] = in.i_size;
	sb->s_jnl_backup_type = EXT3_JNL_BACKUP_BLOCKS;
	ext2fs_mark_super_dirty(fs);
	return 0;
}

struct mapped {
	struct chk_ctx *ctx;
	blk_t n;
};

static int count_cb(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t cnt,
		    blk64_t ref_blk, int ref_off, void *priv)
{
	struct mapped *m = priv;

	(void)ref_blk;
	(void)ref_off;
	if (cnt >= 0 && *blocknr >= fs->super->s_first_data_block &&
	    *blocknr < m->ctx->nblocks)
		m->n++;
	return 0;
}

static int sane_size(struct chk_ctx *ctx, uint64_t n)
{
	return n >= JBD_MIN_BLOCKS && n <= ctx->nblocks / 2;
}

/* The size to recreate, from what the invalid journal still says that
 * can be trusted: its superblock's length when that superblock is one
 * (magic, type, block size), else the count of blocks its map names
 * inside the filesystem; never i_size, the field most likely to be the
 * damage (a bogus one asked for half the filesystem). e2fsck 1.47 always
 * recreates at the default size (seen: a 2 MiB journal on a 64 MiB
 * filesystem came back as 4 MiB); the old size is the better guess of
 * what the user wanted. 0 = the default. chk_recreate_journal falls back
 * to the default when the old size does not fit. */
static blk_t old_size(struct chk_ctx *ctx)
{
	struct mapped m = { ctx, 0 };
	struct ext2_inode in;
	struct jsb j;

	if (ext2fs_read_inode(ctx->fs, EXT2_JOURNAL_INO, &in))
		return 0;
	if (LINUX_S_ISREG(in.i_mode) && ext2fs_inode_has_valid_blocks2(ctx->fs, &in) &&
	    !(in.i_flags & (EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL)))
		ext2fs_block_iterate3(ctx->fs, EXT2_JOURNAL_INO,
				      BLOCK_FLAG_READ_ONLY | BLOCK_FLAG_DATA_ONLY,
				      NULL, count_cb, &m);
	/* the length can be the damage too ("length or log bounds"): it
	 * counts only up to what the map names (a 1024-block journal whose
	 * s_maxlen said 4096 came back 4096 blocks long) */
	if (!read_jsb(ctx, &in, &j) && j.magic == JBD_MAGIC &&
	    (j.blocktype == JBD_SB_V1 || j.blocktype == JBD_SB_V2) &&
	    j.blocksize == ctx->bs && sane_size(ctx, j.maxlen) &&
	    j.maxlen <= m.n)
		return j.maxlen;
	return sane_size(ctx, m.n) ? m.n : 0;
}

errcode_t chk_zero_journal_inode(struct chk_ctx *ctx)
{
	unsigned char *raw = calloc(1, ctx->isize);
	errcode_t err;

	if (!raw)
		return ENOMEM;
	err = ext2fs_write_inode_full(ctx->fs, EXT2_JOURNAL_INO, (void *)raw,
				      ctx->isize);
	free(raw);
	return err;
}

/* inode 8 zeroed, has_journal and needs_recovery cleared, and (until a
 * new journal sets them again) s_journal_inum and the s_jnl_blocks
 * backup, so that the filesystem is a valid one without a journal. */
static errcode_t drop_journal(struct chk_ctx *ctx)
{
	struct ext2_super_block *sb = ctx->fs->super;
	errcode_t err = chk_zero_journal_inode(ctx);

	if (err)
		return err;
	ext2fs_clear_feature_journal(sb);
	ext2fs_clear_feature_journal_needs_recovery(sb);
	sb->s_journal_inum = 0;
	memset(sb->s_jnl_blocks, 0, sizeof(sb->s_jnl_blocks));
	sb->s_jnl_backup_type = 0;
	ext2fs_mark_super_dirty(ctx->fs);
	return 0;
}

/* Clears the invalid internal journal, as e2fsck -p/-y do, as one of the
 * round's fixes (chk_apply_fixes), not at once in pass 7: so that -p,
 * when a later finding needs -y and no fix is applied, leaves the image
 * as it found it (and "nothing was fixed" stays true), and so that the
 * clearing and the bitmaps are written by the same round. The round's
 * passes ran with inode 8 ignored (ctx->jnl_clear), so the computed
 * bitmaps, written just before, already give its blocks back; none is
 * freed here by its map, which may name blocks another file owns. The
 * new journal comes at the end of a later round (chk_recreate_journal).
 *
 * e2fsck differs in two ways, both ending in an empty valid journal of
 * the size: a superblock with a bad block size or length is rewritten
 * in place ("Journal superblock is corrupt. Fix?"), and a bad journal
 * inode (mode, links, size, hole in the map) is restored from the
 * s_jnl_blocks backup. We recreate in all these cases: one path, and no
 * trust in a backup whose blocks the damage may have given to others.
 * e2fsck -p also clears the journal even when it then stops at a problem
 * that needs -y; we do not (see above). */
errcode_t chk_clear_journal(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	errcode_t err;
	size_t i;

	if (!ctx->jnl_clear)
		return 0;
	ctx->jnl_clear = 0;
	err = drop_journal(ctx);
	if (err)
		return err;
	for (i = 0; i < rep->n_findings; i++)
		if (rep->findings[i].code == E3P_JNL_INODE_BAD ||
		    rep->findings[i].code == E3P_JNL_SB_BAD ||
		    rep->findings[i].code == E3P_JNL_SB_GEOMETRY)
			rep->findings[i].fixed = 1;
	ctx->jnl_recreate = 1;
	if (ctx->jnl_rounds < 2)
		ctx->jnl_rounds++;
	ctx->changed++;
	return 0;
}

static void not_recreated(struct chk_ctx *ctx, const char *why)
{
	struct e3_finding *f = chk_add(ctx, NULL, E3P_JNL_NOT_RECREATED);

	if (f)
		f->name = strdup(why);
}

/* The size that fits in the free blocks: the one asked for, else the
 * default; 0 (and the reason reported) when neither does. */
static blk_t fitting_size(struct chk_ctx *ctx, blk_t want)
{
	blk64_t nfree = ext2fs_free_blocks_count(ctx->fs->super);
	blk_t def = 0;
	errcode_t err = e3_journal_default_blocks(ctx->fs, &def);
	char why[160];

	if (want && e3_journal_fs_blocks(ctx->fs, want) <= nfree)
		return want;
	if (err) {
		not_recreated(ctx, error_message(err));
		return 0;
	}
	if (e3_journal_fs_blocks(ctx->fs, def) <= nfree)
		return def;
	snprintf(why, sizeof(why), "not enough free blocks: a journal of "
		 "%u blocks needs %llu, %llu are free", (unsigned)def,
		 (unsigned long long)e3_journal_fs_blocks(ctx->fs, def),
		 (unsigned long long)nfree);
	not_recreated(ctx, why);
	return 0;
}

/* A creation that failed half way (libext2fs writes inode 8 as it
 * allocates) is undone: whatever inode 8 got freed, inode 8 zeroed and
 * the superblock without a journal again, so the image stays valid. */
static void undo_make(struct chk_ctx *ctx)
{
	struct ext2_inode in;

	if (!ext2fs_read_inode(ctx->fs, EXT2_JOURNAL_INO, &in) &&
	    ext2fs_inode_has_valid_blocks2(ctx->fs, &in))
		ext2fs_punch(ctx->fs, EXT2_JOURNAL_INO, &in, NULL, 0, ~0ULL);
	drop_journal(ctx);
	ext2fs_mark_bb_dirty(ctx->fs);
}

void chk_recreate_journal(struct chk_ctx *ctx)
{
	struct e3_finding *f;
	blk_t got = 0, n;
	errcode_t err;
	size_t i;

	if (!ctx->jnl_recreate || ctx->changed)
		return;
	ctx->jnl_recreate = 0;
	/* errors left: the bitmaps may not be what the passes would compute
	 * once they are fixed, so allocate nothing (the filesystem stays a
	 * valid one without a journal) */
	for (i = 0; i < ctx->rep->n_findings; i++)
		if (chk_finding_is_error(&ctx->rep->findings[i])) {
			not_recreated(ctx, "errors are left");
			return;
		}
	/* libext2fs does not look at the free count first: check it here
	 * (the round found the counts right) */
	n = fitting_size(ctx, ctx->jnl_blocks);
	if (!n)
		return;
	err = e3_make_journal(ctx->fs, n, 0, &got);
	if (err) {
		undo_make(ctx);
		not_recreated(ctx, error_message(err));
		ctx->changed++;		/* the undo wrote: check it */
		return;
	}
	f = chk_add(ctx, NULL, E3P_JNL_RECREATED);
	if (f) {
		f->fixed = 1;
		f->num = got;
		f->num2 = (uint64_t)got * ctx->bs / 1024;
	}
	if (ctx->jnl_rounds < 2)
		ctx->jnl_rounds++;
	ctx->changed++;
}

/* The run ended with the cleared journal not made anew: say so. */
void chk_journal_left(struct chk_ctx *ctx)
{
	char why[120];

	if (!ctx->jnl_recreate)
		return;
	ctx->jnl_recreate = 0;
	if (ctx->preen_refused)
		snprintf(why, sizeof(why), "-p stopped at a problem that needs -y");
	else
		snprintf(why, sizeof(why), "the check stopped after %u rounds "
			 "with fixes still to check", ctx->rep->rounds);
	not_recreated(ctx, why);
}

/* s_errno cleared in the journal superblock, as e2fsck clears it (the
 * filesystem is being checked, which is what the error asked for). */
static errcode_t clear_errno(struct chk_ctx *ctx)
{
	ext2_filsys fs = ctx->fs;
	struct ext2_inode in;
	blk64_t pblk = 0;
	unsigned char *buf;
	errcode_t err;

	err = ext2fs_read_inode(fs, fs->super->s_journal_inum, &in);
	if (!err)
		err = ext2fs_bmap2(fs, fs->super->s_journal_inum, &in, NULL, 0,
				   0, NULL, &pblk);
	if (err)
		return err;
	buf = malloc(ctx->bs);
	if (!buf)
		return ENOMEM;
	err = io_channel_read_blk64(fs->io, pblk, 1, buf);
	if (!err) {
		memset(buf + 32, 0, 4);		/* s_errno, big-endian */
		err = io_channel_write_blk64(fs->io, pblk, 1, buf);
	}
	if (!err)
		err = io_channel_flush(fs->io);
	free(buf);
	return err;
}

/* What a replay did, as findings: the transactions and blocks it wrote,
 * and why it stopped early when it did (a corrupt transaction, a log
 * claiming more than the journal holds). The next round checks the
 * result. */
static void note_replay(struct chk_ctx *ctx, const struct e3_replay_report *rr,
			errcode_t err)
{
	struct e3_finding *f;

	ctx->rep->journal_replayed = 1;
	if ((f = chk_add(ctx, NULL, E3P_JNL_REPLAYED))) {
		f->fixed = 1;
		f->num = rr->transactions;
		f->num2 = rr->blocks;
	}
	if (err && (f = chk_add(ctx, NULL, E3P_JNL_REPLAY_STOPPED))) {
		f->fixed = 1;
		f->name = strdup(error_message(err));
	}
	ctx->changed++;
}

/* A superblock that is invalid only by its s_first or s_maxlen, over a
 * committed log: replayed with those two taken from the journal inode
 * (lib/journal's JBD2_LOG_SALVAGE), which also writes the mended
 * superblock, rather than cleared with the transactions in it (e2fsck
 * -fy replays such a log too). 0 when replayed (the finding fixed, the
 * round ends so the next one checks the result); anything else leaves
 * the journal to be cleared and recreated. */
static int salvage_replay(struct chk_ctx *ctx, struct e3_finding *bad)
{
	struct e3_replay_report rr;
	errcode_t err;

	memset(&rr, 0, sizeof(rr));
	err = e3_journal_replay_salvage(ctx->fs, &rr);
	if (err && err != E3_JOURNAL_CORRUPT && err != E3_JOURNAL_LOG_OVERRUN)
		return -1;
	bad->fixed = 1;
	note_replay(ctx, &rr, err);
	return 0;
}

/* With -p/-y a pending log is replayed through lib/journal/recovery.c and the
 * round ends, so the next one reopens the replayed image. An invalid
 * journal is marked to be cleared by this round's fixes
 * (chk_clear_journal), and the passes go on without inode 8. With -n the
 * image is checked as it is and the problem reported. */
errcode_t chk_pass_journal(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	struct e3_replay_report rr;
	struct e3_finding *f;
	errcode_t err;
	int st, may;

	chk_progress(ctx, 7, 0, 1);
	st = chk_journal_state(ctx);
	if (st == JNL_MOVE &&
	    (f = chk_add(ctx, NULL, E3P_JNL_OLD_STYLE)))
		f->ino = ctx->fs->super->s_journal_inum;
	for (size_t i = 0; i < rep->n_findings; i++) {
		f = &rep->findings[i];
		if (f->code != E3P_JNL_ERRNO || f->fixed)
			continue;
		ctx->fixing = 1;
		may = chk_may_fix(ctx, f->code);
		ctx->fixing = 0;
		if (may) {
			err = clear_errno(ctx);
			if (err)
				return err;
			f->fixed = 1;
			ctx->changed++;
		}
	}
	if (st == JNL_OK || !rep->n_findings)
		goto out;
	f = &rep->findings[rep->n_findings - 1];
	ctx->fixing = 1;
	may = chk_may_fix(ctx, f->code);
	ctx->fixing = 0;
	if (!may) {
		if (st == JNL_PENDING)
			rep->journal_pending = 1;
		goto out;
	}
	if (st == JNL_INVALID && f->code == E3P_JNL_SB_GEOMETRY &&
	    salvage_replay(ctx, f) == 0)
		goto out;
	if (st == JNL_INVALID) {
		ctx->jnl_blocks = old_size(ctx);
		ctx->jnl_clear = 1;
		goto out;
	}
	if (st == JNL_MOVE) {
		err = move_journal(ctx);
		if (err)
			return err;
		f->fixed = 1;
		ctx->changed++;		/* the next round checks the result */
		goto out;
	}
	memset(&rr, 0, sizeof(rr));
	if (is_external(ctx->fs->super) && ctx->opts.journal_dev) {
		io_channel jio;

		err = open_ext(ctx, 1, &jio);
		if (err) {
			rep->journal_pending = 1;
			return err;
		}
		err = e3_journal_replay_dev(ctx->fs, jio, &rr);
		io_channel_close(jio);
	} else {
		err = e3_journal_replay(ctx->fs, &rr);
	}
	/* a corrupt transaction, or a log that claims more than the journal
	 * holds: the replay still wrote what was committed before it, emptied
	 * the log and marked the filesystem for a check, which the next
	 * rounds make, as e2fsck goes on after "Journal corrupted" */
	if (err && err != E3_JOURNAL_CORRUPT && err != E3_JOURNAL_LOG_OVERRUN) {
		rep->journal_pending = 1;
		return err;
	}
	f->fixed = 1;
	note_replay(ctx, &rr, err);
out:
	chk_progress(ctx, 7, 1, 1);
	return 0;
}
