/*
 * test_journal.c: unit tests of lib/journal — the format header, the
 * fault spec parser, recovery of logs built here block by block (escape,
 * revokes before and after, uncommitted tails, log wrap, tid wrap,
 * refusals), and the writer's io layer (reads see captured writes, byte
 * writes merge, a commit without checkpoint replays to the same state,
 * a failed journal commits nothing more), and e3_journal_reserve's
 * commit-first / refuse decisions, and the bound on what the journal
 * holds in memory whatever the log's size, and that e3_remove keeps the
 * hold on timed commits while a file is being written.
 * Images come from mke2fs in /tmp.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "e3img.h"
#include "e3_journal_view.h"
#include "fs/image.h"
#include "journal/journal.h"
#include "journal/journal_int.h"
#include "journal/jbd2_format.h"
#include "journal/jbd2_log.h"
#include "journal/fault.h"

static char img_path[64];

/* img_path made by mke2fs -q -t ext3 ARGS -F img_path SIZE */
static int make_image_with(const char *args, const char *size)
{
	char cmd[320];

	snprintf(img_path, sizeof(img_path), "/tmp/journal-unit-%d.img", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "mke2fs -q -t ext3 %s -F %s %s >/dev/null 2>&1",
		 args, img_path, size);
	return system(cmd) == 0;
}

static int make_image(void)
{
	return make_image_with("-b 1024 -g 2048 -N 256", "8M");
}

/* ---- format ------------------------------------------------------------ */

static void test_format_layout(void)
{
	struct jbd2_superblock sb;
	unsigned char raw[4];

	memset(&sb, 0, sizeof(sb));
	sb.s_start = jbd2_be32(0x01020304);
	memcpy(raw, (unsigned char *)&sb + 0x1C, 4);
	CHECK(raw[0] == 1 && raw[3] == 4);		/* big-endian at 0x1C */
	CHECK(jbd2_get32(sb.s_start) == 0x01020304);
	CHECK(jbd2_tag_bytes(0) == 8);
	CHECK(jbd2_tag_bytes(JBD2_INCOMPAT_64BIT) == 12);
	CHECK(jbd2_tag_bytes(JBD2_INCOMPAT_CSUM_V2) == 10);
	CHECK(jbd2_tag_bytes(JBD2_INCOMPAT_CSUM_V2 | JBD2_INCOMPAT_64BIT) == 14);
	CHECK(jbd2_tag_bytes(JBD2_INCOMPAT_CSUM_V3) == 16);
	jbd2_store16(raw, 0x0a0b);
	CHECK(raw[0] == 0x0a && jbd2_load16(raw) == 0x0a0b);
	CHECK(jbd2_tid_gt(0, 0xffffffffU));	/* tids wrap */
	CHECK(!jbd2_tid_gt(0xffffffffU, 0));
	CHECK(jbd2_tid_geq(5, 5));
}

static void test_fault_parse(void)
{
	struct e3_fault f;

	CHECK_OK(e3_fault_parse(&f, NULL));
	CHECK(f.kind == E3_FAULT_NONE);
	CHECK_OK(e3_fault_parse(&f, "eio:3"));
	CHECK(f.kind == E3_FAULT_EIO && f.at == 3);
	CHECK(e3_fault_write(&f) == 0);
	CHECK(e3_fault_write(&f) == 0);
	CHECK(e3_fault_write(&f) == EIO);
	CHECK(e3_fault_write(&f) == 0);		/* only the N-th */
	CHECK_OK(e3_fault_parse(&f, "enospc:1"));
	CHECK(e3_fault_write(&f) == ENOSPC);
	CHECK_OK(e3_fault_parse(&f, "stop-after-commit:2"));
	CHECK(f.kind == E3_FAULT_STOP_AFTER_COMMIT);
	CHECK(e3_fault_parse(&f, "kill") == E3_BAD_OPTION);
	CHECK(e3_fault_parse(&f, "kill:0") == E3_BAD_OPTION);
	CHECK(e3_fault_parse(&f, "kill:x") == E3_BAD_OPTION);
	CHECK(e3_fault_parse(&f, "explode:3") == E3_BAD_OPTION);
	/* N*K: K failures in a row; capture-enomem counts captures only */
	CHECK_OK(e3_fault_parse(&f, "eio:2*2"));
	CHECK(e3_fault_write(&f) == 0);
	CHECK(e3_fault_write(&f) == EIO);
	CHECK(e3_fault_write(&f) == EIO);
	CHECK(e3_fault_write(&f) == 0);
	CHECK_OK(e3_fault_parse(&f, "capture-enomem:2*3"));
	CHECK(f.kind == E3_FAULT_CAPTURE_ENOMEM && f.at == 2 && f.count == 3);
	CHECK(e3_fault_write(&f) == 0);		/* disk writes: never */
	CHECK(e3_fault_capture(&f) == 0);
	CHECK(e3_fault_capture(&f) == ENOMEM);
	CHECK(e3_fault_capture(&f) == ENOMEM);
	CHECK(e3_fault_capture(&f) == ENOMEM);
	CHECK(e3_fault_capture(&f) == 0);
	CHECK_OK(e3_fault_parse(&f, "eio:3"));
	CHECK(e3_fault_capture(&f) == 0);	/* eio counts disk writes */
	CHECK(e3_fault_parse(&f, "eio:3*") == E3_BAD_OPTION);
	CHECK(e3_fault_parse(&f, "eio:3*0") == E3_BAD_OPTION);
	CHECK(e3_fault_parse(&f, "eio:3*2x") == E3_BAD_OPTION);
}

/* ---- a hand-made log ----------------------------------------------------- */

struct lb {
	ext2_filsys fs;
	struct jbd2_log log;
	uint32_t next;			/* next log block to write */
	unsigned bs;
};

static void lb_open(struct lb *b)
{
	memset(b, 0, sizeof(*b));
	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			     unix_io_manager, &b->fs));
	CHECK_OK(jbd2_log_open(b->fs, b->fs->io, JBD2_LOG_READ, &b->log));
	b->bs = b->fs->blocksize;
	b->next = b->log.first;
}

static void lb_put(struct lb *b, const void *blk)
{
	CHECK_OK(io_channel_write_blk64(b->fs->io, b->log.map[b->next], 1, blk));
	b->next = jbd2_log_wrap(&b->log, (uint64_t)b->next + 1);
}

static void hdr(unsigned char *blk, uint32_t type, uint32_t tid)
{
	jbd2_store32(blk, JBD2_MAGIC);
	jbd2_store32(blk + 4, type);
	jbd2_store32(blk + 8, tid);
}

/* one descriptor with n tags, then the blocks (escaped as needed) */
static void lb_blocks(struct lb *b, uint32_t tid, unsigned n,
		      const blk64_t *homes, unsigned char *const *datas)
{
	unsigned char *d = calloc(1, b->bs), *t = d + 12;

	hdr(d, JBD2_DESCRIPTOR_BLOCK, tid);
	for (unsigned i = 0; i < n; i++) {
		uint16_t fl = i ? JBD2_FLAG_SAME_UUID : 0;

		if (jbd2_load32(datas[i]) == JBD2_MAGIC)
			fl |= JBD2_FLAG_ESCAPE;
		if (i == n - 1)
			fl |= JBD2_FLAG_LAST_TAG;
		jbd2_store32(t, (uint32_t)homes[i]);
		jbd2_store16(t + 6, fl);
		t += 8 + (i ? 0 : 16);
	}
	lb_put(b, d);
	for (unsigned i = 0; i < n; i++) {
		memcpy(d, datas[i], b->bs);
		if (jbd2_load32(d) == JBD2_MAGIC)
			memset(d, 0, 4);
		lb_put(b, d);
	}
	free(d);
}

static void lb_revoke(struct lb *b, uint32_t tid, unsigned n, const blk64_t *blks)
{
	unsigned char *d = calloc(1, b->bs);

	hdr(d, JBD2_REVOKE_BLOCK, tid);
	for (unsigned i = 0; i < n; i++)
		jbd2_store32(d + 16 + 4 * i, (uint32_t)blks[i]);
	jbd2_store32(d + 12, 16 + 4 * n);
	lb_put(b, d);
	free(d);
}

static void lb_commit(struct lb *b, uint32_t tid)
{
	unsigned char *d = calloc(1, b->bs);

	hdr(d, JBD2_COMMIT_BLOCK, tid);
	lb_put(b, d);
	free(d);
}

/* s_start/s_sequence, RECOVER, close */
static void lb_close(struct lb *b, uint32_t start, uint32_t seq)
{
	b->log.jsb->s_start = jbd2_be32(start);
	b->log.jsb->s_sequence = jbd2_be32(seq);
	CHECK_OK(jbd2_log_write_super(&b->log));
	ext2fs_set_feature_journal_needs_recovery(b->fs->super);
	ext2fs_mark_super_dirty(b->fs);
	jbd2_log_close(&b->log);
	CHECK_OK(ext2fs_close_free(&b->fs));
}

static unsigned char *pattern(unsigned bs, unsigned seed)
{
	unsigned char *p = malloc(bs);

	for (unsigned i = 0; i < bs; i++)
		p[i] = (unsigned char)(seed * 31 + i * 7);
	return p;
}

/* replays img_path; reports; and reads back block blk (buf) */
static errcode_t replay(struct e3_replay_report *rep)
{
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_open(img_path, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			  unix_io_manager, &fs);
	if (err)
		return err;
	CHECK(e3_journal_pending(fs));
	err = e3_journal_replay(fs, rep);
	ext2fs_free(fs);
	return err;
}

static int home_is(blk64_t blk, const unsigned char *want, unsigned bs)
{
	unsigned char *got = malloc(bs);
	FILE *f = fopen(img_path, "rb");
	int same;

	fseek(f, (long)(blk * bs), SEEK_SET);
	same = fread(got, 1, bs, f) == bs && memcmp(got, want, bs) == 0;
	fclose(f);
	free(got);
	return same;
}

/* jsb and fs sb after a replay */
static void after_replay(uint32_t *seq, uint32_t *start, int *recover)
{
	struct jbd2_log log;
	ext2_filsys fs;

	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &fs));
	*recover = ext2fs_has_feature_journal_needs_recovery(fs->super);
	*seq = *start = UINT32_MAX;
	if (jbd2_log_open(fs, fs->io, JBD2_LOG_READ, &log) == 0) {
		*seq = jbd2_get32(log.jsb->s_sequence);
		*start = jbd2_get32(log.jsb->s_start);
		jbd2_log_close(&log);
	}
	ext2fs_close_free(&fs);
}

/* raw big-endian store into journal block 0 (no validation on the way) */
static void patch_jsb(unsigned off, uint32_t v)
{
	ext2_filsys fs;
	blk64_t pblk = 0;
	unsigned char buf[1024];

	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			     unix_io_manager, &fs));
	CHECK_OK(ext2fs_bmap2(fs, fs->super->s_journal_inum, NULL, NULL, 0, 0,
			      NULL, &pblk));
	CHECK_OK(io_channel_read_blk64(fs->io, pblk, 1, buf));
	jbd2_store32(buf + off, v);
	CHECK_OK(io_channel_write_blk64(fs->io, pblk, 1, buf));
	ext2fs_close_free(&fs);
}

static void set_recover(void)
{
	ext2_filsys fs;

	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			     unix_io_manager, &fs));
	ext2fs_set_feature_journal_needs_recovery(fs->super);
	ext2fs_mark_super_dirty(fs);
	ext2fs_close_free(&fs);
}

#define HOME 6000	/* free blocks in the data area of the 8M image */

/* e3_journal_view of test_replay_revoke_escape's log, read-only: each
 * block's fate as the replay will decide it. Returns the blocks it says
 * are written. */
static unsigned check_view_of_revoke_escape(void)
{
	struct e3_jview v;
	ext2_filsys fs;
	unsigned n = 0;

	if (ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager,
			&fs)) {
		CHECK(!"the image opens read-only");
		return 0;
	}
	CHECK_OK(e3_journal_view(fs, &v));
	CHECK(!v.empty && v.start_tid == 5 && v.end_tid == 9 && !v.problem);
	CHECK(v.ntxns == 5);
	CHECK(v.nblocks == 7);
	if (v.ntxns == 5 && v.nblocks == 7) {
		static const struct { uint32_t tid; blk64_t home; int fate; } want[] = {
			{ 5, HOME, E3_JB_REVOKED }, { 5, HOME + 1, E3_JB_REPLAYED },
			{ 5, HOME + 2, E3_JB_REPLAYED }, { 6, HOME + 1, E3_JB_REPLAYED },
			{ 7, HOME + 5, E3_JB_REPLAYED }, { 8, HOME + 3, E3_JB_REPLAYED },
			{ 9, HOME + 4, E3_JB_UNCOMMITTED },
		};
		for (size_t i = 0; i < 7; i++)
			CHECK(v.blocks[i].tid == want[i].tid &&
			      v.blocks[i].home == want[i].home &&
			      (int)v.blocks[i].fate == want[i].fate);
		CHECK(v.blocks[0].revoke_tid == 6);
		CHECK(v.blocks[2].escaped && !v.blocks[1].escaped);
		CHECK(v.txns[1].revokes == 1 && v.txns[2].revokes == 1 &&
		      v.txns[0].revokes == 0);
		CHECK(v.txns[3].committed && !v.txns[4].committed &&
		      v.txns[4].tid == 9);
		CHECK(v.txns[0].blocks == 3 && v.txns[0].first == 0 &&
		      v.txns[1].first == 3);
	}
	for (size_t i = 0; i < v.nblocks; i++)
		n += v.blocks[i].fate == E3_JB_REPLAYED;
	e3_journal_view_free(&v);
	ext2fs_close_free(&fs);
	return n;
}

static void test_replay_revoke_escape(void)
{
	struct e3_replay_report rep;
	struct lb b;
	unsigned char *a, *c, *m, *zero;
	uint32_t seq, start;
	int rec;

	if (!make_image())
		FAIL("mke2fs failed");
	lb_open(&b);
	a = pattern(b.bs, 1);
	c = pattern(b.bs, 2);
	m = pattern(b.bs, 3);
	jbd2_store32(m, JBD2_MAGIC);		/* must be escaped */
	zero = calloc(1, b.bs);
	/* tid 5: A->H, A->H+1, M->H+2; tid 6: revoke H, C->H+1;
	 * tid 7: revoke H+3 (a later block of tid 8), C->H; tid 8: C->H+3;
	 * tid 9: uncommitted C->H+4 */
	blk64_t h5[] = { HOME, HOME + 1, HOME + 2 };
	unsigned char *d5[] = { a, a, m };
	lb_blocks(&b, 5, 3, h5, d5);
	lb_commit(&b, 5);
	blk64_t r6[] = { HOME }, h6[] = { HOME + 1 };
	unsigned char *d6[] = { c };
	lb_revoke(&b, 6, 1, r6);
	lb_blocks(&b, 6, 1, h6, d6);
	lb_commit(&b, 6);
	blk64_t r7[] = { HOME + 3 }, h7[] = { HOME + 5 };
	lb_revoke(&b, 7, 1, r7);
	lb_blocks(&b, 7, 1, h7, d6);
	lb_commit(&b, 7);
	blk64_t h8[] = { HOME + 3 };
	lb_blocks(&b, 8, 1, h8, d6);
	lb_commit(&b, 8);
	blk64_t h9[] = { HOME + 4 };
	lb_blocks(&b, 9, 1, h9, d6);
	lb_close(&b, b.log.first, 5);

	/* the view (jtrans, jreplay -n) says what the replay then does */
	unsigned replayed = check_view_of_revoke_escape();
	CHECK_OK(replay(&rep));
	CHECK(rep.blocks == replayed);
	CHECK(rep.transactions == 4);
	CHECK(rep.first_tid == 5 && rep.last_tid == 8);
	CHECK(rep.revoked == 1);			/* H in tid 5 */
	CHECK(home_is(HOME, zero, b.bs));		/* revoked by tid 6 */
	CHECK(home_is(HOME + 1, c, b.bs));		/* tid 6 wins */
	CHECK(home_is(HOME + 2, m, b.bs));		/* magic restored */
	CHECK(home_is(HOME + 3, c, b.bs));		/* revoke was earlier */
	CHECK(home_is(HOME + 4, zero, b.bs));		/* never committed */
	after_replay(&seq, &start, &rec);
	CHECK(seq == 10 && start == 0 && !rec);		/* end (9) + 1 */
	free(a); free(c); free(m); free(zero);
	unlink(img_path);
}

static void test_replay_log_wrap_and_tid_wrap(void)
{
	struct e3_replay_report rep;
	struct lb b;
	unsigned char *p[4];
	uint32_t seq, start, s0;
	int rec;

	if (!make_image())
		FAIL("mke2fs failed");
	lb_open(&b);
	for (unsigned i = 0; i < 4; i++)
		p[i] = pattern(b.bs, 10 + i);
	/* start 3 blocks before the end: the txn's blocks wrap to s_first */
	s0 = b.log.maxlen - 3;
	b.next = s0;
	blk64_t h1[] = { HOME, HOME + 1, HOME + 2, HOME + 3 };
	lb_blocks(&b, 0xffffffffU, 4, h1, p);
	lb_commit(&b, 0xffffffffU);
	CHECK(b.next == b.log.first + 3);		/* wrapped */
	blk64_t r2[] = { HOME + 1 }, h2[] = { HOME + 2 };
	unsigned char *d2[] = { p[0] };
	lb_revoke(&b, 0, 1, r2);			/* tid 0 > 0xffffffff */
	lb_blocks(&b, 0, 1, h2, d2);
	lb_commit(&b, 0);
	lb_close(&b, s0, 0xffffffffU);

	unsigned char *zero = calloc(1, b.bs);
	CHECK_OK(replay(&rep));
	CHECK(rep.transactions == 2);
	CHECK(home_is(HOME, p[0], b.bs));
	CHECK(home_is(HOME + 1, zero, b.bs));		/* revoked across wrap */
	CHECK(home_is(HOME + 2, p[0], b.bs));
	CHECK(home_is(HOME + 3, p[3], b.bs));
	after_replay(&seq, &start, &rec);
	CHECK(seq == 2 && start == 0 && !rec);
	for (unsigned i = 0; i < 4; i++)
		free(p[i]);
	free(zero);
	unlink(img_path);
}

static void test_replay_empty_and_refusals(void)
{
	struct e3_replay_report rep;
	struct lb b;
	uint32_t seq, start;
	int rec;

	if (!make_image())
		FAIL("mke2fs failed");
	/* RECOVER with an empty log: nothing replayed, sequence + 1 */
	lb_open(&b);
	lb_close(&b, 0, 7);
	CHECK_OK(replay(&rep));
	CHECK(rep.transactions == 0 && rep.blocks == 0);
	after_replay(&seq, &start, &rec);
	CHECK(seq == 8 && start == 0 && !rec);

	/* an unknown incompat feature: refused, nothing touched */
	patch_jsb(0x1C, 1);		/* s_start */
	patch_jsb(0x28, 0x100);		/* s_feature_incompat */
	set_recover();
	CHECK(replay(&rep) == E3_JOURNAL_UNSUPPORTED);
	after_replay(&seq, &start, &rec);
	CHECK(rec);			/* still pending: nothing was touched */

	/* a bad magic */
	patch_jsb(0x28, 0);
	patch_jsb(0x00, 0x12345678);
	CHECK(replay(&rep) == E3_JOURNAL_BAD);
	unlink(img_path);
}

/* ---- the journal superblock validated before anything replays -------- */

/* patch one be32 of the journal superblock of a freshly made image with a
 * pending one-transaction log; replay must refuse with want and leave the
 * image pending and untouched */
static void sb_refused(unsigned off, uint32_t v, errcode_t want)
{
	struct e3_replay_report rep;
	uint32_t seq, start;
	unsigned char *a;
	errcode_t err;
	struct lb b;
	int rec;

	if (!make_image()) {
		CHECK(0);
		return;
	}
	lb_open(&b);
	a = pattern(b.bs, 7);
	blk64_t h[] = { HOME };
	unsigned char *d[] = { a };
	lb_blocks(&b, 3, 1, h, d);
	lb_commit(&b, 3);
	lb_close(&b, b.log.first, 3);
	patch_jsb(off, v);
	err = replay(&rep);
	CHECK(err == want);
	if (err != want)
		fprintf(stderr, "  offset 0x%x = %u: got %ld\n", off, v, (long)err);
	CHECK(rep.blocks == 0);
	after_replay(&seq, &start, &rec);
	CHECK(rec);			/* still pending: nothing was touched */
	free(a);
	unlink(img_path);
}

static void test_replay_refuses_bad_superblock_fields(void)
{
	/* the 8M image: 1 KiB blocks, a 1024-block journal inode */
	sb_refused(0x10, 2, E3_JOURNAL_SB_LENGTH);	/* the spin of issue 19 */
	sb_refused(0x10, 1000, E3_JOURNAL_SB_LENGTH);	/* under 1024 */
	sb_refused(0x10, 1025, E3_JOURNAL_SB_LENGTH);	/* past the inode */
	sb_refused(0x14, 0, E3_JOURNAL_SB_FIRST);
	sb_refused(0x14, 1024, E3_JOURNAL_SB_FIRST);	/* == s_maxlen */
	sb_refused(0x0C, 2048, E3_JOURNAL_SB_BLOCKSIZE);
	sb_refused(0x1C, 1024, E3_JOURNAL_SB_START);	/* == s_maxlen */
	sb_refused(0x1C, 5000, E3_JOURNAL_SB_START);
	sb_refused(0x40, 2, E3_JOURNAL_UNSUPPORTED);	/* s_nr_users */
	sb_refused(0x2C, 1, E3_JOURNAL_UNSUPPORTED);	/* ro_compat */
	sb_refused(0x04, JBD2_DESCRIPTOR_BLOCK, E3_JOURNAL_BAD);
	sb_refused(0x28, JBD2_INCOMPAT_CSUM_V2 | JBD2_INCOMPAT_CSUM_V3,
		   E3_JOURNAL_BAD);
}

static void test_super_check_alone(void)
{
	struct jbd2_superblock sb;
	const char *why = NULL;

	memset(&sb, 0, sizeof(sb));
	sb.s_header.h_magic = jbd2_be32(JBD2_MAGIC);
	sb.s_header.h_blocktype = jbd2_be32(JBD2_SUPERBLOCK_V2);
	sb.s_blocksize = jbd2_be32(4096);
	sb.s_maxlen = jbd2_be32(4096);
	sb.s_first = jbd2_be32(1);
	sb.s_nr_users = jbd2_be32(1);
	CHECK(jbd2_super_check(&sb, 4096, 4096, JBD2_LOG_READ, &why) == 0);
	CHECK(why == NULL);
	CHECK(jbd2_super_check(&sb, 4096, 4096, JBD2_LOG_WRITE, NULL) == 0);
	/* a journal inode longer than the log is fine, as for e2fsck */
	CHECK(jbd2_super_check(&sb, 4096, 8192, JBD2_LOG_READ, NULL) == 0);
	CHECK(jbd2_super_check(&sb, 4096, 4095, JBD2_LOG_READ, &why) ==
	      E3_JOURNAL_SB_LENGTH);
	CHECK(why && strstr(why, "s_maxlen"));
	CHECK(jbd2_super_check(&sb, 1024, 4096, JBD2_LOG_READ, NULL) ==
	      E3_JOURNAL_SB_BLOCKSIZE);
	sb.s_start = jbd2_be32(4095);		/* the last log block */
	CHECK(jbd2_super_check(&sb, 4096, 4096, JBD2_LOG_READ, NULL) == 0);
	sb.s_first = jbd2_be32(8);
	sb.s_start = jbd2_be32(7);		/* before s_first */
	/* replayed, as e2fsck replays it (fuzz_dirs: a dropped log lost
	 * 602 inodes e2fsck kept); never written from */
	CHECK(jbd2_super_check(&sb, 4096, 4096, JBD2_LOG_READ, NULL) == 0);
	CHECK(jbd2_super_check(&sb, 4096, 4096, JBD2_LOG_WRITE, NULL) ==
	      E3_JOURNAL_SB_START);
	sb.s_start = jbd2_be32(0);
	sb.s_sequence = jbd2_be32(0xffffffffU);	/* any tid */
	CHECK(jbd2_super_check(&sb, 4096, 4096, JBD2_LOG_READ, NULL) == 0);
	/* v1: no feature fields, whatever they hold; our writer wants v2 */
	sb.s_header.h_blocktype = jbd2_be32(JBD2_SUPERBLOCK_V1);
	sb.s_nr_users = jbd2_be32(7);
	CHECK(jbd2_super_check(&sb, 4096, 4096, JBD2_LOG_READ, NULL) == 0);
	CHECK(jbd2_super_check(&sb, 4096, 4096, JBD2_LOG_WRITE, NULL) ==
	      E3_JOURNAL_UNSUPPORTED);
}

static void test_log_wrap_arithmetic(void)
{
	struct jbd2_log log;

	memset(&log, 0, sizeof(log));
	log.first = 1;
	log.maxlen = 1024;
	CHECK(jbd2_log_wrap(&log, 1023) == 1023);
	CHECK(jbd2_log_wrap(&log, 1024) == 1);
	CHECK(jbd2_log_wrap(&log, 1024 + 1023 * 5 + 7) == 8);
	/* a corrupt count costs nothing more */
	CHECK(jbd2_log_wrap(&log, (uint64_t)UINT32_MAX + 1024) ==
	      1 + ((uint64_t)UINT32_MAX + 1023) % 1023);
}

/* a descriptor of tid with n tags at the next log block, its n data
 * blocks skipped, not written (what a corrupt descriptor claims) */
static void lb_desc_only(struct lb *b, uint32_t tid, unsigned n)
{
	unsigned char *d = calloc(1, b->bs), *t = d + 12;

	hdr(d, JBD2_DESCRIPTOR_BLOCK, tid);
	for (unsigned i = 0; i < n; i++) {
		jbd2_store32(t, HOME + i);
		jbd2_store16(t + 6, (i ? JBD2_FLAG_SAME_UUID : 0) |
			     (i == n - 1 ? JBD2_FLAG_LAST_TAG : 0));
		t += 8 + (i ? 0 : 16);
	}
	lb_put(b, d);
	b->next = jbd2_log_wrap(&b->log, (uint64_t)b->next + n);
	free(d);
}

static void test_replay_bounded_by_the_log(void)
{
	struct e3_replay_report rep;
	uint32_t seq, start;
	unsigned char *a, *zero;
	struct lb b;
	int rec;

	if (!make_image())
		SKIP("mke2fs failed");
	alarm(20);	/* a scan that goes round for ever fails the test */
	/* every log block a descriptor of tid 4 with one tag, no commit:
	 * the scan goes round and round the same transaction */
	lb_open(&b);
	for (uint32_t lb = b.log.first; lb < b.log.maxlen; lb++) {
		b.next = lb;
		lb_desc_only(&b, 4, 1);
	}
	lb_close(&b, b.log.first, 4);
	CHECK(replay(&rep) == E3_JOURNAL_LOG_OVERRUN);
	CHECK(rep.transactions == 0 && rep.blocks == 0);
	after_replay(&seq, &start, &rec);
	CHECK(start == 0 && !rec);		/* the log is emptied */
	unlink(img_path);

	/* tid 5 committed, then tid 6's descriptors claim blocks all the
	 * way round past s_start: tid 5 is replayed, tid 6 is not, and the
	 * replay says why */
	if (!make_image())
		SKIP("mke2fs failed");
	lb_open(&b);
	a = pattern(b.bs, 9);
	zero = calloc(1, b.bs);
	blk64_t h5[] = { HOME + 200 };
	unsigned char *d5[] = { a };
	lb_blocks(&b, 5, 1, h5, d5);
	lb_commit(&b, 5);
	while (b.next + 121 < b.log.maxlen)
		lb_desc_only(&b, 6, 120);
	lb_desc_only(&b, 6, 120);		/* its blocks wrap past s_start */
	lb_close(&b, b.log.first, 5);
	CHECK(replay(&rep) == E3_JOURNAL_LOG_OVERRUN);
	CHECK(rep.transactions == 1 && rep.blocks == 1);
	CHECK(home_is(HOME + 200, a, b.bs));
	CHECK(home_is(HOME, zero, b.bs));	/* tid 6: nothing */
	after_replay(&seq, &start, &rec);
	CHECK(start == 0 && !rec);
	alarm(0);
	free(a);
	free(zero);
	unlink(img_path);
}

/* ---- csum v3 logs, checked against e2fsck's replay -------------------- */

static uint32_t c32c(uint32_t crc, const void *p, size_t n)
{
	return ext2fs_crc32c_le(crc, p, n);
}

/* v3 descriptor: 16-byte tags with a crc32c each (v2: 10-byte tags with
 * its low 16 bits), block tail crc32c */
static int csum_v2, bits64;

static void lb3_blocks(struct lb *b, uint32_t seed, uint32_t tid, unsigned n,
		       const blk64_t *homes, unsigned char *const *datas, int bad)
{
	unsigned tb = csum_v2 ? 10 : 16;

	unsigned char *d = calloc(1, b->bs), *t = d + 12, *l = malloc(b->bs);
	unsigned char seq[4];

	jbd2_store32(seq, tid);
	hdr(d, JBD2_DESCRIPTOR_BLOCK, tid);
	for (unsigned i = 0; i < n; i++) {
		uint32_t fl = i ? JBD2_FLAG_SAME_UUID : 0;

		memcpy(l, datas[i], b->bs);
		if (jbd2_load32(l) == JBD2_MAGIC) {
			fl |= JBD2_FLAG_ESCAPE;
			memset(l, 0, 4);
		}
		if (i == n - 1)
			fl |= JBD2_FLAG_LAST_TAG;
		uint32_t c = c32c(c32c(seed, seq, 4), l, b->bs) ^ (bad && i == 0);

		jbd2_store32(t, (uint32_t)homes[i]);
		if (csum_v2) {
			jbd2_store16(t + 4, (uint16_t)c);
			jbd2_store16(t + 6, (uint16_t)fl);
		} else {
			jbd2_store32(t + 4, fl);
			jbd2_store32(t + 12, c);
		}
		t += tb + (i ? 0 : 16);
	}
	jbd2_store32(d + b->bs - 4, c32c(seed, d, b->bs));
	lb_put(b, d);
	for (unsigned i = 0; i < n; i++) {
		memcpy(l, datas[i], b->bs);
		if (jbd2_load32(l) == JBD2_MAGIC)
			memset(l, 0, 4);
		lb_put(b, l);
	}
	free(d);
	free(l);
}

static void lb3_revoke(struct lb *b, uint32_t seed, uint32_t tid, blk64_t blk)
{
	unsigned char *d = calloc(1, b->bs);

	hdr(d, JBD2_REVOKE_BLOCK, tid);
	if (bits64) {		/* be64 records */
		jbd2_store32(d + 20, (uint32_t)blk);
		jbd2_store32(d + 12, 24);
	} else {
		jbd2_store32(d + 16, (uint32_t)blk);
		jbd2_store32(d + 12, 20);
	}
	jbd2_store32(d + b->bs - 4, c32c(seed, d, b->bs));
	lb_put(b, d);
	free(d);
}

static void lb3_commit(struct lb *b, uint32_t seed, uint32_t tid, uint64_t sec,
		       int bad)
{
	unsigned char *d = calloc(1, b->bs);

	hdr(d, JBD2_COMMIT_BLOCK, tid);
	jbd2_store32(d + 0x30, (uint32_t)(sec >> 32));
	jbd2_store32(d + 0x34, (uint32_t)sec);
	jbd2_store32(d + 0x10, c32c(seed, d, b->bs) ^ (uint32_t)bad);
	lb_put(b, d);
	free(d);
}

/* equal but for s_wtime (bytes 0x430..0x433): what e2fsck's flush sets */
static int images_equal_but_wtime(const char *x, const char *y)
{
	FILE *a = fopen(x, "rb"), *b = fopen(y, "rb");
	long off = 0;
	int ca, cb, same = a && b;

	while (same && (ca = fgetc(a)) != EOF) {
		cb = fgetc(b);
		if (ca != cb && (off < 0x430 || off > 0x433)) {
			fprintf(stderr, "  differ at byte %ld\n", off);
			same = 0;
		}
		off++;
	}
	if (same && fgetc(b) != EOF)
		same = 0;
	if (a) fclose(a);
	if (b) fclose(b);
	return same;
}

enum csum_fault { CS_NONE, CS_BAD_TAG, CS_BAD_COMMIT };

/* three transactions in a v2/v3 log (async: ASYNC_COMMIT too), one fault
 * in the second; our replay must leave the image e2fsck's replay leaves */
static void csum_case(int v2, int async, enum csum_fault fault)
{
	struct e3_replay_report rep;
	struct lb b;
	unsigned char *p[3];
	uint32_t seed;
	char copy[80], cmd[400];
	errcode_t err;

	if (!make_image())
		FAIL("mke2fs failed");
	csum_v2 = v2;
	lb_open(&b);
	b.log.incompat = JBD2_INCOMPAT_REVOKE |
		(v2 ? JBD2_INCOMPAT_CSUM_V2 : JBD2_INCOMPAT_CSUM_V3) |
		(async ? JBD2_INCOMPAT_ASYNC_COMMIT : 0) |
		(bits64 ? JBD2_INCOMPAT_64BIT : 0);
	b.log.jsb->s_feature_incompat = jbd2_be32(b.log.incompat);
	b.log.jsb->s_checksum_type = JBD2_CRC32C_CHKSUM;
	seed = c32c(~0U, b.log.jsb->s_uuid, 16);
	for (unsigned i = 0; i < 3; i++)
		p[i] = pattern(b.bs, 20 + i);
	jbd2_store32(p[1], JBD2_MAGIC);
	blk64_t h1[] = { HOME, HOME + 1, HOME + 2 };
	lb3_blocks(&b, seed, 1, 3, h1, p, 0);
	lb3_commit(&b, seed, 1, 1000, 0);
	lb3_revoke(&b, seed, 2, HOME + 2);
	blk64_t h2[] = { HOME + 3 };
	lb3_blocks(&b, seed, 2, 1, h2, p, fault == CS_BAD_TAG);
	lb3_commit(&b, seed, 2, 1001, fault == CS_BAD_COMMIT);
	blk64_t h3[] = { HOME + 4 };
	lb3_blocks(&b, seed, 3, 1, h3, p + 2, 0);
	lb3_commit(&b, seed, 3, 1002, 0);
	lb_close(&b, b.log.first, 1);

	snprintf(copy, sizeof(copy), "%s.fsck", img_path);
	snprintf(cmd, sizeof(cmd), "cp %s %s && e2fsck -E journal_only -y %s >/dev/null 2>&1",
		 img_path, copy, copy);
	(void)!system(cmd);
	err = replay(&rep);
	if (fault == CS_NONE) {
		CHECK_OK(err);
		CHECK(rep.transactions == 3 && rep.revoked == 1);
		CHECK(home_is(HOME + 1, p[1], b.bs));	/* escape undone */
		CHECK(home_is(HOME + 4, p[2], b.bs));
	} else if (fault == CS_BAD_COMMIT && async) {
		/* async commits: a bad commit checksum just ends the log */
		CHECK_OK(err);
		CHECK(rep.transactions == 1);
	} else {
		CHECK(err == E3_JOURNAL_CORRUPT);
	}
	CHECK(images_equal_but_wtime(img_path, copy));
	for (unsigned i = 0; i < 3; i++)
		free(p[i]);
	unlink(copy);
	unlink(img_path);
}

static void test_replay_csum_v3_as_e2fsck(void)
{
	csum_case(0, 0, CS_NONE);
}

static void test_replay_csum_v3_bad_tag_as_e2fsck(void)
{
	csum_case(0, 0, CS_BAD_TAG);
}

static void test_replay_csum_v2_as_e2fsck(void)
{
	csum_case(1, 0, CS_NONE);
	csum_case(1, 0, CS_BAD_TAG);
}

/* 64-bit block numbers: v3 tags keep their size, revoke records grow */
static void test_replay_csum_v3_64bit_as_e2fsck(void)
{
	bits64 = 1;
	csum_case(0, 0, CS_NONE);
	bits64 = 0;
}

static void test_replay_bad_commit_sync_and_async_as_e2fsck(void)
{
	csum_case(0, 0, CS_BAD_COMMIT);
	csum_case(0, 1, CS_BAD_COMMIT);
}

/* ---- the writer ---------------------------------------------------------- */

static void test_writer_capture_and_replay(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct e3_image *img;
	unsigned char *p, *q;
	ext2_ino_t ino;
	blk64_t blk = HOME + 20;

	if (!make_image())
		FAIL("mke2fs failed");
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	if (!img)
		return;
	p = pattern(1024, 42);
	q = malloc(1024);
	e3_fs_lock(img);
	/* a captured write is read back, but the disk does not have it */
	CHECK_OK(io_channel_write_blk64(img->fs->io, blk, 1, p));
	CHECK_OK(io_channel_read_blk64(img->fs->io, blk, 1, q));
	CHECK(memcmp(p, q, 1024) == 0);
	CHECK(!home_is(blk, p, 1024));
	/* byte writes merge into the captured block */
	CHECK_OK(io_channel_write_byte(img->fs->io, blk * 1024 + 10, 3, "xyz"));
	CHECK_OK(io_channel_read_blk64(img->fs->io, blk, 1, q));
	CHECK(memcmp(q + 10, "xyz", 3) == 0 && q[9] == p[9] && q[13] == p[13]);
	memcpy(p + 10, "xyz", 3);
	CHECK_OK(ext2fs_mkdir(img->fs, EXT2_ROOT_INO, 0, "journaled"));
	CHECK_OK(e3_journal_commit(img->journal, 0));
	e3_fs_unlock(img);
	/* crash: nothing after the commit reaches the disk */
	e3_image_abort(img);
	CHECK(!home_is(blk, p, 1024));

	struct e3_replay_report rep;
	CHECK_OK(replay(&rep));
	CHECK(rep.transactions == 1);
	CHECK(home_is(blk, p, 1024));
	{
		ext2_filsys fs;

		CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0,
				     unix_io_manager, &fs));
		CHECK_OK(ext2fs_lookup(fs, EXT2_ROOT_INO, "journaled", 9, NULL, &ino));
		ext2fs_close_free(&fs);
	}
	free(p);
	free(q);
	unlink(img_path);
}

/* e3_journal_reserve: room for a big operation is made by committing
 * what runs; an operation bigger than the whole log is refused up front
 * and nothing reaches the disk. The 8M image: a 1024-block log, 4
 * groups, so the state dump adds at most 2*4 + 1 + 1 blocks. */
static void test_reserve(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct e3_image *img;
	unsigned char *p;

	if (!make_image())
		FAIL("mke2fs failed");
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	if (!img)
		return;
	p = pattern(1024, 7);
	e3_fs_lock(img);
	/* 200 blocks run; 600 more still fit beside them: no commit */
	for (blk64_t b = 0; b < 200; b++)
		CHECK_OK(io_channel_write_blk64(img->fs->io, HOME + b, 1, p));
	CHECK_OK(e3_journal_reserve(img->journal, 600));
	CHECK_OK(io_channel_write_blk64(img->fs->io, HOME + 500, 1, p));
	CHECK(!home_is(HOME, p, 1024));
	/* 900 do not: the 200 are committed first (and only committed: the
	 * home block is still old until a checkpoint) */
	CHECK_OK(e3_journal_reserve(img->journal, 900));
	CHECK(!home_is(HOME, p, 1024));
	/* more than a whole log holds: refused, nothing changes */
	CHECK(e3_journal_reserve(img->journal, 1100) == E3_JOURNAL_TOO_SMALL);
	e3_fs_unlock(img);
	e3_image_abort(img);		/* crash: only the commit survives */
	{
		struct e3_replay_report rep;

		CHECK_OK(replay(&rep));
		CHECK(rep.transactions == 1);
		CHECK(home_is(HOME, p, 1024) && home_is(HOME + 199, p, 1024));
		/* written after the first reserve: committed by the second */
		CHECK(home_is(HOME + 500, p, 1024));
	}
	free(p);
	unlink(img_path);
}

/* a metadata block that starts with the JBD2 magic is escaped in our log;
 * e2fsck's replay and ours both put the magic back */
static void test_writer_escape_replayed_by_e2fsck(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct e3_image *img;
	unsigned char *p;
	blk64_t blk = HOME + 40;
	char copy[80], cmd[400];

	if (!make_image())
		FAIL("mke2fs failed");
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	if (!img)
		return;
	p = pattern(1024, 9);
	jbd2_store32(p, JBD2_MAGIC);
	e3_fs_lock(img);
	CHECK_OK(io_channel_write_blk64(img->fs->io, blk, 1, p));
	CHECK_OK(e3_journal_commit(img->journal, 0));
	e3_fs_unlock(img);
	e3_image_abort(img);
	{	/* the log holds it with its first 4 bytes zeroed */
		struct lb b;
		unsigned char *l = malloc(1024);
		int escaped = 0, raw = 0;

		lb_open(&b);
		for (uint32_t n = b.log.first; n < b.log.first + 64; n++) {
			CHECK_OK(jbd2_log_read(&b.log, n, l));
			raw |= memcmp(l, p, 1024) == 0;
			escaped |= jbd2_load32(l) == 0 && memcmp(l + 4, p + 4, 1020) == 0;
		}
		CHECK(escaped && !raw);
		jbd2_log_close(&b.log);
		ext2fs_free(b.fs);
		free(l);
	}
	snprintf(copy, sizeof(copy), "%s.fsck", img_path);
	snprintf(cmd, sizeof(cmd), "cp %s %s && e2fsck -E journal_only -y %s >/dev/null 2>&1",
		 img_path, copy, copy);
	CHECK(system(cmd) == 0);
	struct e3_replay_report rep;
	CHECK_OK(replay(&rep));
	CHECK(home_is(blk, p, 1024));
	strcpy(cmd, img_path);
	strcpy(img_path, copy);
	CHECK(home_is(blk, p, 1024));		/* e2fsck restored it too */
	strcpy(img_path, cmd);
	unlink(copy);
	unlink(img_path);
	free(p);
}

static void test_writer_revoke_and_clean_close(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct e3_image *img;
	unsigned char *p;
	blk64_t blk = HOME + 30;
	uint32_t seq, start;
	int rec;

	if (!make_image())
		FAIL("mke2fs failed");
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	if (!img)
		return;
	p = pattern(1024, 7);
	e3_fs_lock(img);
	CHECK_OK(io_channel_write_blk64(img->fs->io, blk, 1, p));
	CHECK_OK(e3_journal_commit(img->journal, 0));
	/* freed metadata: the revoke keeps the committed copy from being
	 * replayed over whatever reuses the block */
	e3_journal_revoke(img->journal, blk);
	CHECK_OK(e3_journal_commit(img->journal, 0));
	e3_fs_unlock(img);
	e3_image_abort(img);

	struct e3_replay_report rep;
	CHECK_OK(replay(&rep));
	CHECK(rep.transactions == 2 && rep.revoked == 1);
	CHECK(!home_is(blk, p, 1024));

	/* a clean close: empty log, RECOVER clear */
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	e3_fs_lock(img);
	CHECK_OK(ext2fs_mkdir(img->fs, EXT2_ROOT_INO, 0, "clean"));
	e3_fs_unlock(img);
	CHECK_OK(e3_image_close(img));
	after_replay(&seq, &start, &rec);
	CHECK(start == 0 && !rec);
	free(p);
	unlink(img_path);
}

/* e3_journal_poison: an operation that cannot undo its half-done writes
 * stops every later commit; the image is as of the last commit, and a
 * replay gives exactly that */
static void test_writer_fail_commits_nothing(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct e3_image *img;
	struct e3_replay_report rep;
	ext2_filsys fs;
	ext2_ino_t ino;
	char cmd[160];

	if (!make_image())
		FAIL("mke2fs failed");
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	if (!img)
		return;
	e3_fs_lock(img);
	CHECK_OK(ext2fs_mkdir(img->fs, EXT2_ROOT_INO, 0, "committed"));
	CHECK_OK(e3_journal_commit(img->journal, 0));
	CHECK_OK(ext2fs_mkdir(img->fs, EXT2_ROOT_INO, 0, "half"));
	e3_journal_poison(img->journal, ENOMEM);
	CHECK(e3_journal_op_end(img->journal) == E3_JOURNAL_ABORTED);
	e3_fs_unlock(img);
	CHECK(e3_image_close(img) == ENOMEM);

	CHECK_OK(replay(&rep));
	CHECK(rep.transactions == 1);
	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager,
			     &fs));
	CHECK_OK(ext2fs_lookup(fs, EXT2_ROOT_INO, "committed", 9, NULL, &ino));
	CHECK(ext2fs_lookup(fs, EXT2_ROOT_INO, "half", 4, NULL, &ino) ==
	      EXT2_ET_FILE_NOT_FOUND);
	ext2fs_close_free(&fs);
	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", img_path);
	CHECK(system(cmd) == 0);
	unlink(img_path);
}

/* The journal's memory does not grow with its log: on a 128 MiB log,
 * transactions commit at JNL_TXN_MAX_MEM (loaders are told to aim at
 * JNL_TXN_MEM), and committed blocks are written
 * home once JNL_CKPT_MEM of them are held, long before the log fills. A
 * crash after that still replays to every block, and reads see the
 * blocks written home. */
static void test_writer_memory_bounded(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	const unsigned bs = 4096;
	const size_t n = (JNL_CKPT_MEM + 4 * JNL_TXN_MAX_MEM) / bs;
	struct e3_image *img;
	struct e3_journal *j;
	blk64_t *blks = calloc(n, sizeof(*blks));
	unsigned char *p = malloc(bs);
	size_t got = 0, peak = 0;

	if (!make_image_with("-b 4096 -J size=128 -N 1024", "512M"))
		FAIL("mke2fs failed");
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	if (!img)
		return;
	j = img->journal;
	CHECK(j->txn_max == JNL_TXN_MAX_MEM / bs && j->ckpt_max == JNL_CKPT_MEM / bs);
	CHECK(j->txn_aim == JNL_TXN_MEM / bs &&
	      e3_journal_txn_limit(j) == JNL_TXN_MEM / bs);
	e3_fs_lock(img);
	/* free blocks, written through the journal one "operation" each */
	for (blk64_t b = img->fs->super->s_first_data_block;
	     got < n && b < ext2fs_blocks_count(img->fs->super); b++)
		if (!ext2fs_test_block_bitmap2(img->fs->block_map, b))
			blks[got++] = b;
	CHECK(got == n);
	for (size_t i = 0; i < got; i++) {
		memset(p, 0, bs);
		memcpy(p, &blks[i], sizeof(blks[i]));
		CHECK_OK(io_channel_write_blk64(img->fs->io, blks[i], 1, p));
		CHECK_OK(e3_journal_op_end(j));
		if (j->run.n + j->ckpt.n > peak)
			peak = j->run.n + j->ckpt.n;
	}
	CHECK_OK(e3_journal_commit(j, 0));
	/* 68 MiB went through a 128 MiB log: without the bound, nothing
	 * would have gone home yet and all of it would be held */
	CHECK(j->commits >= 4);
	CHECK(peak <= j->ckpt_max + 2 * j->txn_max);
	CHECK(j->tail != 0);	/* written home, the log not yet freed */
	memset(p, 0, bs);
	memcpy(p, &blks[0], sizeof(blks[0]));
	CHECK(home_is(blks[0], p, bs));
	{
		unsigned char *q = malloc(bs);

		CHECK_OK(io_channel_read_blk64(img->fs->io, blks[0], 1, q));
		CHECK(memcmp(p, q, bs) == 0);
		free(q);
	}
	e3_fs_unlock(img);
	e3_image_abort(img);	/* crash: what is in the log is replayed */

	struct e3_replay_report rep;
	size_t bad = 0;

	CHECK_OK(replay(&rep));
	for (size_t i = 0; i < got; i++) {
		memset(p, 0, bs);
		memcpy(p, &blks[i], sizeof(blks[i]));
		bad += !home_is(blks[i], p, bs);
	}
	CHECK(bad == 0);
	free(blks);
	free(p);
	unlink(img_path);
}

/* The larger limit only where the worst case fits with it: a 20 MiB log
 * (a quarter: 1,279 blocks, above the 1,024 of JNL_TXN_MEM) under 1,950
 * groups, whose state dump (3,917 blocks) leaves room for a transaction
 * of 1,024 blocks but not of 1,279. The journal opens with txn_max =
 * txn_aim instead of refusing, as it did when there was one limit; and
 * its log, cut by 256-block groups, is not one run, so jbd2_log_owns
 * searches (and must say no to a block in one of its gaps). */
static void test_txn_max_falls_back(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct e3_image *img = NULL;
	struct e3_journal *j;
	char cmd[160];

	if (!make_image_with("-b 4096 -g 256 -N 20000 -J size=20 "
			     "-E resize=2000000", "1950M"))
		FAIL("mke2fs failed");
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	if (!img)
		return;
	j = img->journal;
	CHECK(img->fs->group_desc_count == 1950);
	CHECK((j->log.maxlen - j->log.first) / 4 > JNL_TXN_MEM / 4096);
	CHECK(j->txn_aim == JNL_TXN_MEM / 4096);
	CHECK(j->txn_max == j->txn_aim);
	CHECK(j->log.sorted[j->log.nmap - 1] - j->log.sorted[0] != j->log.nmap - 1);
	CHECK(jbd2_log_owns(&j->log, j->log.map[j->log.nmap / 2]));
	CHECK(!jbd2_log_owns(&j->log, j->log.sorted[0] - 1));
	for (uint32_t i = 1; i < j->log.nmap; i++)	/* a gap inside */
		if (j->log.sorted[i] != j->log.sorted[i - 1] + 1) {
			CHECK(!jbd2_log_owns(&j->log, j->log.sorted[i] - 1));
			break;
		}
	CHECK_OK(e3_image_close(img));
	snprintf(cmd, sizeof(cmd), "e2fsck -fn %s >/dev/null 2>&1", img_path);
	CHECK(system(cmd) == 0);
	unlink(img_path);
}

/* A block written home early (E3_JOURNAL_MEM) is still in the live log:
 * freed in a later transaction it must be revoked all the same, or a
 * replay puts the old metadata over the file data that reused it. */
static void test_writer_revoke_after_write_home(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct e3_replay_report rep;
	struct e3_image *img;
	unsigned char *p, *d;
	blk64_t blk = HOME + 50;
	FILE *f;

	if (!make_image())
		FAIL("mke2fs failed");
	setenv("E3_JOURNAL_MEM", "1", 1);	/* one block: home after each commit */
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	unsetenv("E3_JOURNAL_MEM");
	if (!img)
		return;
	p = pattern(1024, 11);
	d = pattern(1024, 12);
	e3_fs_lock(img);
	CHECK_OK(io_channel_write_blk64(img->fs->io, blk, 1, p));
	CHECK_OK(e3_journal_commit(img->journal, 0));
	CHECK(img->journal->tail != 0);		/* the log still holds it */
	/* freed: revoked and committed, so it may be reused... */
	e3_journal_revoke(img->journal, blk);
	CHECK_OK(e3_journal_commit(img->journal, 0));
	e3_fs_unlock(img);
	/* ...for file data, which never goes through the journal */
	f = fopen(img_path, "r+b");
	fseek(f, (long)(blk * 1024), SEEK_SET);
	CHECK(fwrite(d, 1, 1024, f) == 1024);
	fclose(f);
	e3_image_abort(img);	/* crash before the checkpoint */

	CHECK_OK(replay(&rep));
	CHECK(rep.transactions == 2 && rep.revoked == 1);
	CHECK(home_is(blk, d, 1024));		/* the file data survives */
	free(p);
	free(d);
	unlink(img_path);
}

/* name in the root, holding len bytes of buf, closed */
static void put_file(struct e3_image *img, const char *name,
		     const unsigned char *buf, size_t len)
{
	struct e3_attr attr = { .mode = S_IFREG | 0644 };
	e3_file_t *f;

	CHECK_OK(e3_create(img, EXT2_ROOT_INO, name, &attr, len, &f));
	CHECK_OK(e3_file_write(f, buf, len));
	CHECK_OK(e3_file_close(f));
}

/* The same through the library: a file's indirect block (journaled
 * metadata, written home early) is freed by e3_remove, and the next
 * file's data may take it. A crash before the checkpoint must leave the
 * new file's contents as written. */
static void test_writer_removed_ind_reused_by_data(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct e3_replay_report rep;
	struct e3_image *img;
	ext2_filsys fs;
	ext2_file_t ef;
	ext2_ino_t ino;
	struct ext2_inode in;
	blk64_t ind;
	size_t len = 300 * 1024;
	unsigned char *w = malloc(len), *r = malloc(len);
	unsigned got = 0;

	for (size_t i = 0; i < len; i++)
		w[i] = (unsigned char)(i * 13 + 5);
	if (!make_image())
		FAIL("mke2fs failed");
	setenv("E3_JOURNAL_MEM", "1", 1);
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	unsetenv("E3_JOURNAL_MEM");
	if (!img)
		return;
	/* "a": zeros, with IND and DIND blocks (metadata, journaled) */
	memset(r, 0, len);
	put_file(img, "a", r, len);
	CHECK_OK(e3_lookup(img, EXT2_ROOT_INO, "a", &ino));
	e3_fs_lock(img);
	CHECK_OK(ext2fs_read_inode(img->fs, ino, &in));
	ind = in.i_block[EXT2_IND_BLOCK];
	CHECK_OK(e3_journal_commit(img->journal, 0));
	e3_fs_unlock(img);
	CHECK_OK(e3_remove(img, EXT2_ROOT_INO, "a"));
	e3_fs_lock(img);
	CHECK_OK(e3_journal_commit(img->journal, 0));
	e3_fs_unlock(img);
	/* "c" and "b" take the freed blocks back: b's last direct block
	 * is where a's IND was */
	put_file(img, "c", w, 1024);
	len = 12 * 1024;
	put_file(img, "b", w, len);
	CHECK_OK(e3_lookup(img, EXT2_ROOT_INO, "b", &ino));
	e3_fs_lock(img);
	CHECK_OK(ext2fs_read_inode(img->fs, ino, &in));
	CHECK(in.i_block[11] == ind);	/* the case under test */
	CHECK_OK(e3_journal_commit(img->journal, 0));
	CHECK(img->journal->tail != 0);
	e3_fs_unlock(img);
	e3_image_abort(img);

	CHECK_OK(replay(&rep));
	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager,
			     &fs));
	CHECK_OK(ext2fs_lookup(fs, EXT2_ROOT_INO, "b", 1, NULL, &ino));
	CHECK_OK(ext2fs_file_open(fs, ino, 0, &ef));
	memset(r, 0, len);
	CHECK_OK(ext2fs_file_read(ef, r, (unsigned)len, &got));
	CHECK(got == len && memcmp(r, w, len) == 0);
	ext2fs_file_close(ef);
	ext2fs_close_free(&fs);
	free(w);
	free(r);
	unlink(img_path);
}

/* The hold on timed commits while a file is being written (e3_op_end:
 * its name and empty inode are in the running transaction) must hold
 * across every operation that ends with e3_op_end's policy, e3_remove
 * too: mixload's unlinks and e3cp --overwrite remove names while other
 * files are open. A timed commit there made the open file durable
 * with 0 bytes under its name, and its close, within the interval, did
 * not commit again: after a crash (e3_image_abort) and a replay it was
 * empty. Its contents must be whole. */
static void test_remove_keeps_the_hold(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE,
				     .commit_interval = 1 };
	struct e3_attr attr = { .mode = S_IFREG | 0644 };
	struct e3_replay_report rep;
	struct e3_image *img;
	e3_file_t *f;
	ext2_filsys fs;
	ext2_ino_t ino;
	struct ext2_inode in;
	uint64_t commits;
	unsigned char *w = pattern(4096, 7);

	if (!make_image())
		FAIL("mke2fs failed");
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	if (!img)
		return;
	CHECK_OK(e3_create(img, EXT2_ROOT_INO, "open", &attr, 4096, &f));
	CHECK_OK(e3_file_write(f, w, 4096));
	put_file(img, "gone", w, 1024);
	commits = img->journal->commits;
	usleep(1300 * 1000);	/* past the 1 s commit interval */
	CHECK_OK(e3_remove(img, EXT2_ROOT_INO, "gone"));
	CHECK(img->journal->commits == commits);
	/* its close ends the hold: the timed commit takes it whole */
	CHECK_OK(e3_file_close(f));
	CHECK(img->journal->commits == commits + 1);
	e3_image_abort(img);	/* crash */

	CHECK_OK(replay(&rep));
	CHECK_OK(ext2fs_open(img_path, EXT2_FLAG_64BITS, 0, 0, unix_io_manager,
			     &fs));
	CHECK_OK(ext2fs_lookup(fs, EXT2_ROOT_INO, "open", 4, NULL, &ino));
	CHECK_OK(ext2fs_read_inode(fs, ino, &in));
	CHECK(EXT2_I_SIZE(&in) == 4096);
	{
		unsigned char r[4096];
		ext2_file_t ef;
		unsigned got = 0;

		CHECK_OK(ext2fs_file_open(fs, ino, 0, &ef));
		CHECK_OK(ext2fs_file_read(ef, r, sizeof(r), &got));
		CHECK(got == sizeof(r) && memcmp(r, w, sizeof(r)) == 0);
		ext2fs_file_close(ef);
	}
	ext2fs_close_free(&fs);
	free(w);
	unlink(img_path);
}

/* The block sets' table beside the tree (journal_int.h, struct jset):
 * after every step of a seeded run of inserts, moves between two sets
 * and removals of random 40-bit blocks (so that the table's probe runs
 * are long and its deletions must move entries back), past several table
 * doublings, each set finds exactly the blocks a plain array says it
 * holds, misses the others, and its tree stays in block order with the
 * right count. */
static void test_jset_table(void)
{
	enum { KEYS = 3000 };
	static signed char where[KEYS];	/* 0: neither, 1: a, 2: b */
	static blk64_t key[KEYS];
	struct jset a, b;
	uint64_t x = 88172645463325252ull;
	int bad = 0;

	jset_init(&a);
	jset_init(&b);
	memset(where, 0, sizeof(where));
	for (unsigned i = 0; i < KEYS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		key[i] = ((x >> 8) & ((1ull << 40) - 1)) * KEYS + i;
	}
	for (int step = 0; step < 40000 && !bad; step++) {
		struct jset *s[3] = { NULL, &a, &b };
		unsigned k;
		struct jbuf *e;
		int created;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		k = (unsigned)(x % KEYS);
		switch (x >> 61) {
		case 0: case 1: case 2:	/* insert into a */
			if (where[k] == 2)
				break;
			e = jset_get(&a, key[k], 16, 1, &created);
			bad |= !e || created != (where[k] == 0);
			where[k] = 1;
			break;
		case 3: case 4:		/* move a -> b, as retire_txn */
			if (where[k] != 1)
				break;
			e = jset_find(&a, key[k]);
			bad |= !e;
			if (e) {
				jset_detach(&a, e);
				jset_attach(&b, e);
				where[k] = 2;
			}
			break;
		default:		/* remove from where it is */
			if (!where[k])
				break;
			e = jset_find(s[where[k]], key[k]);
			bad |= !e;
			if (e)
				jset_remove(s[where[k]], e);
			where[k] = 0;
			break;
		}
		if (step % 97 == 0 || step == 39999) {
			size_t na = 0, nb = 0;
			blk64_t prev = 0;
			struct jbuf *t;
			int first = 1;

			for (unsigned i = 0; i < KEYS; i++) {
				struct jbuf *fa = jset_find(&a, key[i]);
				struct jbuf *fb = jset_find(&b, key[i]);

				bad |= (fa != NULL) != (where[i] == 1);
				bad |= (fb != NULL) != (where[i] == 2);
				bad |= fa && fa->blk != key[i];
				na += where[i] == 1;
				nb += where[i] == 2;
			}
			bad |= a.n != na || b.n != nb;
			RB_FOREACH(t, jbuf_tree, &a.tree) {
				bad |= !first && t->blk <= prev;
				prev = t->blk;
				first = 0;
			}
		}
	}
	CHECK(!bad);
	CHECK(a.slot != NULL && a.mask + 1 >= 2 * a.n);
	jset_clear(&a);
	jset_clear(&b);
	CHECK(a.n == 0 && a.slot == NULL && RB_EMPTY(&a.tree));
	CHECK(jset_find(&a, key[0]) == NULL);
}

/* Each commit moves the committing sets' blocks on (retire_txn) and the
 * next commit takes the running sets over them by assignment, so a
 * committed transaction's sets must be left holding nothing, their
 * tables included: a table left behind is lost at the next commit, one
 * per commit without bound (e3cp makes thousands). */
static void test_commit_leaves_no_table(void)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct e3_image *img;
	struct e3_journal *j;
	unsigned char *p;
	int bad = 0;

	if (!make_image())
		FAIL("mke2fs failed");
	CHECK_OK(e3_image_open(img_path, &opts, &img));
	if (!img)
		return;
	j = img->journal;
	p = pattern(1024, 5);
	e3_fs_lock(img);
	for (int i = 0; i < 8 && !bad; i++) {
		/* a block written, and the one before it (logged by the
		 * previous commit) revoked: both sets of the commit fill */
		bad |= io_channel_write_blk64(img->fs->io, HOME + 40 + i, 1,
					      p) != 0;
		if (i)
			e3_journal_revoke(j, HOME + 40 + i - 1);
		bad |= e3_journal_commit(j, 0) != 0;
		bad |= j->cm_run.n != 0 || j->cm_revoked.n != 0;
		bad |= j->cm_run.slot != NULL || j->cm_revoked.slot != NULL;
	}
	e3_fs_unlock(img);
	CHECK(!bad);
	CHECK_OK(e3_image_close(img));
	free(p);
	unlink(img_path);
}

int main(void)
{
	e3_init_errors();
	RUN(test_format_layout);
	RUN(test_fault_parse);
	RUN(test_replay_revoke_escape);
	RUN(test_replay_log_wrap_and_tid_wrap);
	RUN(test_replay_empty_and_refusals);
	RUN(test_replay_refuses_bad_superblock_fields);
	RUN(test_super_check_alone);
	RUN(test_log_wrap_arithmetic);
	RUN(test_replay_bounded_by_the_log);
	RUN(test_replay_csum_v3_as_e2fsck);
	RUN(test_replay_csum_v3_bad_tag_as_e2fsck);
	RUN(test_replay_csum_v2_as_e2fsck);
	RUN(test_replay_csum_v3_64bit_as_e2fsck);
	RUN(test_replay_bad_commit_sync_and_async_as_e2fsck);
	RUN(test_writer_capture_and_replay);
	RUN(test_reserve);
	RUN(test_writer_escape_replayed_by_e2fsck);
	RUN(test_writer_revoke_and_clean_close);
	RUN(test_writer_fail_commits_nothing);
	RUN(test_writer_memory_bounded);
	RUN(test_txn_max_falls_back);
	RUN(test_writer_revoke_after_write_home);
	RUN(test_writer_removed_ind_reused_by_data);
	RUN(test_remove_keeps_the_hold);
	RUN(test_jset_table);
	RUN(test_commit_leaves_no_table);
	return unit_done();
}
