/*
 * check_journal.c: pass 7 — the internal journal: its inode (a regular
 * file, big enough, no holes in the log), its superblock (magic, type,
 * block size, length, features) and whether a replay is pending. The
 * replay itself is lib/recovery.c's e3_journal_replay; this file only
 * decides and reports. It runs first, as e2fsck's journal check does, so
 * that a replayed image is what the other passes see.
 */
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "check.h"
#include "jbd2_log.h"

#define JBD_MAGIC 0xC03B3998u
#define JBD_SB_V1 3
#define JBD_SB_V2 4
#define JBD_MIN_BLOCKS 1024
#define JBD_KNOWN_INCOMPAT 0x1fu	/* revoke 64bit async csum2 csum3 */
#define JBD_KNOWN_COMPAT 0x1u

struct jsb {			/* the fields read here, big-endian on disk */
	uint32_t magic, blocktype, sequence;
	uint32_t blocksize, maxlen, first, s_sequence, start, errno_;
	uint32_t compat, incompat, ro_compat;
};

static void jbad(struct chk_ctx *ctx, int code, const char *why)
{
	struct e3_finding *f = chk_add(ctx, NULL, code);

	if (f) {
		f->ino = EXT2_JOURNAL_INO;
		f->name = strdup(why);
	}
}

static int read_jsb(struct chk_ctx *ctx, struct ext2_inode *in, struct jsb *j)
{
	blk64_t pblk = 0;
	unsigned char *buf;
	const uint32_t *w;
	int i;

	if (ext2fs_bmap2(ctx->fs, EXT2_JOURNAL_INO, in, NULL, 0, 0, NULL, &pblk) ||
	    !pblk || pblk >= ctx->nblocks)
		return -1;
	buf = malloc(ctx->bs);
	if (!buf || chk_read_block(ctx, ctx->fd, pblk, buf)) {
		free(buf);
		return -1;
	}
	w = (const uint32_t *)buf;
	for (i = 0; i < 12; i++)
		((uint32_t *)j)[i] = ext2fs_be32_to_cpu(w[i]);
	free(buf);
	return 0;
}

/* The log's block map as recovery and writers use it (lib/jbd2_log.c):
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

/* Returns 1 when a replay is pending (reported), 0 otherwise. */
int chk_journal_state(struct chk_ctx *ctx)
{
	struct ext2_super_block *sb = ctx->fs->super;
	struct ext2_inode in;
	struct e3_finding *f;
	struct jsb j;
	uint64_t size;

	if (!ext2fs_has_feature_journal(sb))
		return 0;
	if (!uuid_is_null(sb->s_journal_uuid) || sb->s_journal_dev) {
		chk_add(ctx, NULL, E3P_JNL_EXTERNAL);
		return 0;
	}
	if (sb->s_journal_inum != EXT2_JOURNAL_INO ||
	    ext2fs_read_inode(ctx->fs, EXT2_JOURNAL_INO, &in)) {
		jbad(ctx, E3P_JNL_INODE_BAD, "journal inode number");
		return 0;
	}
	size = EXT2_I_SIZE(&in);
	if (!LINUX_S_ISREG(in.i_mode) || !in.i_links_count) {
		jbad(ctx, E3P_JNL_INODE_BAD, "not a regular file in use");
		return 0;
	}
	if (size / ctx->bs < JBD_MIN_BLOCKS) {
		jbad(ctx, E3P_JNL_INODE_BAD, "too small");
		return 0;
	}
	if (read_jsb(ctx, &in, &j)) {
		jbad(ctx, E3P_JNL_INODE_BAD, "no first block");
		return 0;
	}
	if (j.magic != JBD_MAGIC ||
	    (j.blocktype != JBD_SB_V1 && j.blocktype != JBD_SB_V2)) {
		jbad(ctx, E3P_JNL_SB_BAD, "bad magic or type");
		return 0;
	}
	if (j.blocksize != ctx->bs) {
		jbad(ctx, E3P_JNL_SB_BAD, "block size differs from the filesystem's");
		return 0;
	}
	if (j.maxlen > size / ctx->bs || j.maxlen < JBD_MIN_BLOCKS ||
	    !j.first || j.first >= j.maxlen || (j.start && (j.start < j.first ||
							     j.start >= j.maxlen))) {
		jbad(ctx, E3P_JNL_SB_BAD, "length or log bounds");
		return 0;
	}
	if (j.blocktype == JBD_SB_V2 &&
	    ((j.incompat & ~JBD_KNOWN_INCOMPAT) || j.ro_compat ||
	     (j.compat & ~JBD_KNOWN_COMPAT))) {
		jbad(ctx, E3P_JNL_UNSUPPORTED, "unknown feature bits");
		return 0;
	}
	if (map_bad(ctx)) {
		jbad(ctx, E3P_JNL_INODE_BAD, "block map leaves the "
		     "filesystem, names a block twice or has a hole");
		return 0;
	}
	if (ext2fs_has_feature_journal_needs_recovery(sb)) {
		if ((f = chk_add(ctx, NULL, E3P_JNL_PENDING))) {
			f->num = j.start;
			f->num2 = j.s_sequence;
		}
		return 1;
	}
	if (j.start) {
		if ((f = chk_add(ctx, NULL, E3P_JNL_DATA_NO_RECOVER))) {
			f->num = j.start;
			f->num2 = j.s_sequence;
		}
		return 1;
	}
	return 0;
}

/* With -p/-y a pending log is replayed through lib/recovery.c, then the
 * round ends so the next one reopens the replayed image; with -n the
 * unreplayed image is checked and the pending replay reported. */
errcode_t chk_pass_journal(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	struct e3_replay_report rr;
	struct e3_finding *f;
	errcode_t err;

	chk_progress(ctx, 7, 0, 1);
	if (!chk_journal_state(ctx) || !rep->n_findings)
		goto out;
	f = &rep->findings[rep->n_findings - 1];
	ctx->fixing = 1;
	if (!chk_may_fix(ctx, f->code)) {
		ctx->fixing = 0;
		rep->journal_pending = 1;
		goto out;
	}
	ctx->fixing = 0;
	memset(&rr, 0, sizeof(rr));
	err = e3_journal_replay(ctx->fs, &rr);
	if (err) {
		rep->journal_pending = 1;
		return err;
	}
	f->fixed = 1;
	rep->journal_replayed = 1;
	if ((f = chk_add(ctx, NULL, E3P_JNL_REPLAYED))) {
		f->fixed = 1;
		f->num = rr.transactions;
		f->num2 = rr.blocks;
	}
	ctx->changed++;
out:
	chk_progress(ctx, 7, 1, 1);
	return 0;
}
