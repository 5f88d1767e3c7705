/*
 * jbd2_log.c: loading an internal journal — inode 8's block map, the
 * journal superblock and the checks e2fsck makes before trusting it
 * (ext3-facts §4.1) — and the checksums csum v2/v3 journals carry.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jbd2_log.h"
#include "e3_err.h"
#include "util/grow.h"

struct map_ctx {
	blk64_t *map;
	uint64_t nblocks;
	uint64_t seen;
	blk64_t *ind;			/* indirect blocks met */
	size_t nind, capind;
	int nomem;
};

static int map_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		     blk64_t ref_blk, int ref_offset, void *priv)
{
	struct map_ctx *c = priv;

	(void)fs; (void)ref_blk; (void)ref_offset;
	if (blockcnt < 0) {
		blk64_t *p = e3_grow(c->ind, c->nind, &c->capind,
				     sizeof(*c->ind), 16);

		if (!p) {
			c->nomem = 1;
			return BLOCK_ABORT;
		}
		c->ind = p;
		c->ind[c->nind++] = *blocknr;
		return 0;
	}
	if ((uint64_t)blockcnt >= c->nblocks)
		return 0;
	c->map[blockcnt] = *blocknr;
	c->seen++;
	return 0;
}

static int cmp_blk(const void *a, const void *b)
{
	blk64_t x = *(const blk64_t *)a, y = *(const blk64_t *)b;

	return x < y ? -1 : x > y;
}

/* inode 8's logical blocks, all present (a journal has no holes) */
static errcode_t load_map(struct jbd2_log *log, uint64_t *nblocks)
{
	ext2_filsys fs = log->fs;
	struct ext2_inode inode;
	struct map_ctx c;
	errcode_t err;

	err = ext2fs_read_inode(fs, fs->super->s_journal_inum, &inode);
	if (err)
		return err;
	if (!LINUX_S_ISREG(inode.i_mode))
		return E3_JOURNAL_BAD;
	c.nblocks = EXT2_I_SIZE(&inode) / log->bs;
	if (c.nblocks < 2 || c.nblocks > UINT32_MAX)
		return E3_JOURNAL_BAD;
	c.map = calloc(c.nblocks, sizeof(*c.map));
	if (!c.map)
		return ENOMEM;
	c.seen = 0;
	c.ind = NULL;
	c.nind = c.capind = 0;
	c.nomem = 0;
	err = ext2fs_block_iterate3(fs, fs->super->s_journal_inum,
				    BLOCK_FLAG_READ_ONLY, NULL, map_block, &c);
	if (!err && c.nomem)
		err = ENOMEM;
	if (!err && c.seen != c.nblocks)
		err = E3_JOURNAL_MAP_BAD;	/* holes */
	if (err) {
		free(c.map);
		free(c.ind);
		return err;
	}
	if (c.nind)
		qsort(c.ind, c.nind, sizeof(*c.ind), cmp_blk);
	log->ind = c.ind;
	log->nind = (uint32_t)c.nind;
	log->map = c.map;
	*nblocks = c.nblocks;
	return 0;
}

/* crc32c of the whole 1024-byte superblock with s_checksum zeroed */
uint32_t jbd2_super_csum(const struct jbd2_superblock *jsb)
{
	struct jbd2_superblock copy = *jsb;

	copy.s_checksum = jbd2_be32(0);
	return ext2fs_crc32c_le(~0U, (const unsigned char *)&copy, sizeof(copy));
}

uint32_t jbd2_csum(const struct jbd2_log *log, uint32_t crc,
		   const void *buf, size_t len)
{
	(void)log;
	return ext2fs_crc32c_le(crc, buf, len);
}

/* Why each field is checked (ext3-facts §4.1; e2fsck's journal load and
 * the kernel's superblock check, which refuse the same superblocks):
 *  - magic and block type: anything else is not a journal superblock (a
 *    descriptor, commit or revoke block there is a corrupt journal);
 *  - features: one recovery does not know could change what a block
 *    means; csum v2 and v3 exclude each other and the v1 checksum; the
 *    superblock's own checksum, when it has one;
 *  - s_nr_users: an internal journal serves one filesystem;
 *  - s_blocksize: log blocks are filesystem blocks;
 *  - s_maxlen: the log fits in the journal inode and holds at least
 *    JBD2_MIN_JOURNAL_BLOCKS (the kernel's rule; a 2-block log made the
 *    scan go round one block for ever);
 *  - s_first: 1 or more (block 0 is this superblock) and below s_maxlen,
 *    else the wrap arithmetic has no log to wrap into;
 *  - s_start: 0 (empty) or below s_maxlen; a writer also wants it in
 *    [s_first, s_maxlen) (e2fsck and the kernel replay a log that begins
 *    below s_first: reads wrap at s_maxlen, so they stay in the journal);
 *  - s_sequence: any value is a valid tid (tids wrap), nothing to check;
 *    a log whose blocks do not carry it simply ends at s_start.
 * A v1 superblock has no feature fields; whatever is there is ignored. */
errcode_t jbd2_super_check(const struct jbd2_superblock *jsb, unsigned bs,
			   uint64_t nblocks, int mode, const char **why)
{
	uint32_t type = jbd2_get32(jsb->s_header.h_blocktype);
	uint32_t maxlen = jbd2_get32(jsb->s_maxlen);
	uint32_t first = jbd2_get32(jsb->s_first);
	uint32_t start = jbd2_get32(jsb->s_start);
	uint32_t compat = 0, incompat = 0;
	const char *dummy;

	if (!why)
		why = &dummy;
	*why = "bad magic or type";
	if (jbd2_get32(jsb->s_header.h_magic) != JBD2_MAGIC ||
	    (type != JBD2_SUPERBLOCK_V1 && type != JBD2_SUPERBLOCK_V2))
		return E3_JOURNAL_BAD;
	if (type == JBD2_SUPERBLOCK_V2) {
		compat = jbd2_get32(jsb->s_feature_compat);
		incompat = jbd2_get32(jsb->s_feature_incompat);
		*why = "shared by more than one filesystem (s_nr_users)";
		if (jbd2_get32(jsb->s_nr_users) > 1)
			return E3_JOURNAL_UNSUPPORTED;
		*why = "unknown feature bits";
		if ((incompat & ~JBD2_INCOMPAT_READ_OK) ||
		    jbd2_get32(jsb->s_feature_ro_compat))
			return E3_JOURNAL_UNSUPPORTED;
		*why = "checksum features or checksum";
		if ((incompat & JBD2_INCOMPAT_CSUM_V2) &&
		    (incompat & JBD2_INCOMPAT_CSUM_V3))
			return E3_JOURNAL_BAD;
		if (jbd2_has_csum_v2v3(incompat) &&
		    ((compat & JBD2_COMPAT_CHECKSUM) ||
		     jsb->s_checksum_type != JBD2_CRC32C_CHKSUM ||
		     jbd2_get32(jsb->s_checksum) != jbd2_super_csum(jsb)))
			return E3_JOURNAL_BAD;
	}
	*why = "block size differs from the filesystem's";
	if (jbd2_get32(jsb->s_blocksize) != bs)
		return E3_JOURNAL_SB_BLOCKSIZE;
	*why = "s_maxlen under 1024 blocks or past the journal inode's end";
	if (maxlen > nblocks || maxlen < JBD2_MIN_JOURNAL_BLOCKS)
		return E3_JOURNAL_SB_LENGTH;
	*why = "s_first is 0 or not below s_maxlen";
	if (first == 0 || first >= maxlen)
		return E3_JOURNAL_SB_FIRST;
	/* a log may begin below s_first: replay reads from s_start and
	 * wraps at s_maxlen back to s_first, as e2fsck and the kernel do,
	 * so every block it reads is still inside the journal (refusing it
	 * would drop committed transactions e2fsck replays) */
	*why = "s_start not below s_maxlen";
	if (start >= maxlen)
		return E3_JOURNAL_SB_START;
	*why = "s_start outside the log blocks [s_first, s_maxlen)";
	if (mode == JBD2_LOG_WRITE && start && start < first)
		return E3_JOURNAL_SB_START;
	*why = "a format our writer does not write";
	if (mode == JBD2_LOG_WRITE &&
	    (type == JBD2_SUPERBLOCK_V1 ||
	     (incompat & ~JBD2_INCOMPAT_WRITE_OK) || compat))
		return E3_JOURNAL_UNSUPPORTED;
	*why = NULL;
	return 0;
}

static errcode_t check_super(struct jbd2_log *log, uint64_t nblocks, int mode)
{
	struct jbd2_superblock *jsb = log->jsb;
	int salvage = mode == JBD2_LOG_SALVAGE;
	errcode_t err;

	if (salvage)
		mode = JBD2_LOG_READ;
	err = jbd2_super_check(jsb, log->bs, nblocks, mode, NULL);
	/* the geometry a journal inode of nblocks is made with; the log
	 * blocks it names are all inside that inode, so the walk stays
	 * bounded as for any valid superblock */
	if (salvage && (err == E3_JOURNAL_SB_LENGTH || err == E3_JOURNAL_SB_FIRST) &&
	    nblocks >= JBD2_MIN_JOURNAL_BLOCKS && nblocks <= UINT32_MAX) {
		jsb->s_maxlen = jbd2_be32((uint32_t)nblocks);
		jsb->s_first = jbd2_be32(1);
		err = jbd2_super_check(jsb, log->bs, nblocks, mode, NULL);
	}
	if (err)
		return err;
	log->maxlen = jbd2_get32(jsb->s_maxlen);
	log->first = jbd2_get32(jsb->s_first);
	log->v2 = jbd2_get32(jsb->s_header.h_blocktype) == JBD2_SUPERBLOCK_V2;
	log->compat = log->v2 ? jbd2_get32(jsb->s_feature_compat) : 0;
	log->incompat = log->v2 ? jbd2_get32(jsb->s_feature_incompat) : 0;
	if (jbd2_has_csum_v2v3(log->incompat))
		log->csum_seed = ext2fs_crc32c_le(~0U, jsb->s_uuid,
						  sizeof(jsb->s_uuid));
	return 0;
}

/* Every log block inside the filesystem and no two the same, as e2fsck
 * requires before it trusts a journal: a damaged indirect block of inode
 * 8 would otherwise have replay read, and the writer write, blocks past
 * the end of the image or another block of the log. */
static errcode_t check_map(const struct jbd2_log *log, uint64_t nblocks)
{
	struct ext2_super_block *sb = log->fs->super;

	if (log->sorted[0] < sb->s_first_data_block ||
	    log->sorted[nblocks - 1] >= ext2fs_blocks_count(sb))
		return E3_JOURNAL_MAP_BAD;
	for (uint64_t i = 1; i < nblocks; i++)
		if (log->sorted[i] == log->sorted[i - 1])
			return E3_JOURNAL_MAP_BAD;
	return 0;
}

errcode_t jbd2_log_open(ext2_filsys fs, io_channel io, int mode,
			struct jbd2_log *log)
{
	struct ext2_super_block *sb = fs->super;
	static const unsigned char zero_uuid[16];
	uint64_t nblocks;
	errcode_t err;

	memset(log, 0, sizeof(*log));
	if (!ext2fs_has_feature_journal(sb))
		return E3_NO_JOURNAL;
	if (sb->s_journal_inum == 0 || sb->s_journal_dev ||
	    memcmp(sb->s_journal_uuid, zero_uuid, 16) != 0)
		return E3_JOURNAL_UNSUPPORTED;	/* external journal */
	log->fs = fs;
	log->io = io;
	log->bs = fs->blocksize;
	err = load_map(log, &nblocks);
	if (err)
		return err;
	log->sbuf = malloc(log->bs);
	log->sorted = malloc(nblocks * sizeof(*log->sorted));
	if (!log->sbuf || !log->sorted) {
		err = ENOMEM;
		goto fail;
	}
	log->nmap = (uint32_t)nblocks;
	memcpy(log->sorted, log->map, nblocks * sizeof(*log->sorted));
	qsort(log->sorted, nblocks, sizeof(*log->sorted), cmp_blk);
	err = check_map(log, nblocks);
	if (err)
		goto fail;
	log->jsb = (struct jbd2_superblock *)log->sbuf;
	err = io_channel_read_blk64(io, log->map[0], 1, log->sbuf);
	if (err)
		goto fail;
	err = check_super(log, nblocks, mode);
	if (err)
		goto fail;
	return 0;
fail:
	jbd2_log_close(log);
	return err;
}

/* An external journal (mke2fs -O journal_dev): the device starts with
 * an ext2 superblock (journal_dev set, its UUID the one the filesystem's
 * s_journal_uuid names, the filesystem's block size), the journal
 * superblock follows it in the next block (block 2 with 1 KiB blocks,
 * else 1), and log block n is device block n, as the kernel and e2fsck
 * number them: map[] is the identity except map[0], the journal
 * superblock. Nothing in the filesystem belongs to it (sorted stays
 * NULL, so jbd2_log_owns is always false). */
errcode_t jbd2_log_open_dev(ext2_filsys fs, io_channel jio, int mode,
			    struct jbd2_log *log)
{
	struct ext2_super_block *sb = fs->super, *jsup;
	unsigned bs = fs->blocksize;
	uint64_t nblocks, i;
	blk64_t jsb_blk = bs == 1024 ? 2 : 1;
	unsigned char *buf;
	errcode_t err;

	memset(log, 0, sizeof(*log));
	if (!ext2fs_has_feature_journal(sb))
		return E3_NO_JOURNAL;
	log->fs = fs;
	log->io = jio;
	log->bs = bs;
	err = io_channel_set_blksize(jio, bs);
	if (err)
		return err;
	buf = malloc(bs < 2048 ? 2048 : bs);
	if (!buf)
		return ENOMEM;
	/* bytes 1024..2047: one block from 1 KiB up, inside block 0 above */
	err = io_channel_read_blk64(jio, 1024 / bs, 1, buf);
	if (err) {
		free(buf);
		return err;
	}
	jsup = (struct ext2_super_block *)(buf + 1024 % bs);
	if (ext2fs_le16_to_cpu(jsup->s_magic) != EXT2_SUPER_MAGIC ||
	    !(ext2fs_le32_to_cpu(jsup->s_feature_incompat) &
	      EXT3_FEATURE_INCOMPAT_JOURNAL_DEV) ||
	    memcmp(jsup->s_uuid, sb->s_journal_uuid, 16) ||
	    ((unsigned)EXT2_MIN_BLOCK_SIZE << ext2fs_le32_to_cpu(jsup->s_log_block_size)) != bs) {
		free(buf);
		return E3_JOURNAL_BAD;
	}
	nblocks = ext2fs_le32_to_cpu(jsup->s_blocks_count);
	free(buf);
	if (nblocks <= jsb_blk + 1 || nblocks > UINT32_MAX)
		return E3_JOURNAL_BAD;
	log->map = malloc(nblocks * sizeof(*log->map));
	log->sbuf = malloc(bs);
	if (!log->map || !log->sbuf) {
		err = ENOMEM;
		goto fail;
	}
	for (i = 0; i < nblocks; i++)
		log->map[i] = i;
	log->map[0] = jsb_blk;
	log->nmap = (uint32_t)nblocks;	/* no sorted[]: not the fs's blocks */
	log->jsb = (struct jbd2_superblock *)log->sbuf;
	err = io_channel_read_blk64(jio, jsb_blk, 1, log->sbuf);
	if (!err)
		err = check_super(log, nblocks, mode);
	/* the log may not reach back over the two superblocks */
	if (!err && log->first <= jsb_blk)
		err = E3_JOURNAL_SB_FIRST;
	if (!err)
		return 0;
fail:
	jbd2_log_close(log);
	return err;
}

void jbd2_log_close(struct jbd2_log *log)
{
	free(log->map);
	free(log->sorted);
	free(log->ind);
	free(log->sbuf);
	log->map = log->sorted = log->ind = NULL;
	log->nind = 0;
	log->sbuf = NULL;
	log->jsb = NULL;
}

errcode_t jbd2_log_read(struct jbd2_log *log, uint32_t lb, void *buf)
{
	if (lb >= log->maxlen)
		return E3_JOURNAL_CORRUPT;
	return io_channel_read_blk64(log->io, log->map[lb], 1, buf);
}

errcode_t jbd2_log_write_super(struct jbd2_log *log)
{
	if (jbd2_has_csum_v2v3(log->incompat))
		log->jsb->s_checksum = jbd2_be32(jbd2_super_csum(log->jsb));
	return io_channel_write_blk64(log->io, log->map[0], 1, log->sbuf);
}

/* v: n block numbers, ascending */
static int in_sorted(const blk64_t *v, size_t n, blk64_t blk)
{
	size_t lo = 0, hi = n;

	if (n == 0 || blk < v[0] || blk > v[n - 1])
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] == blk)
			return 1;
		if (v[mid] < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Asked for every block the capturing channel reads or writes. The map's
 * blocks are distinct (check_map), so a log that is one run of blocks,
 * as mke2fs makes it, is answered without the search. */
int jbd2_log_owns(const struct jbd2_log *log, blk64_t blk)
{
	const blk64_t *v = log->sorted;
	uint32_t n = log->nmap;

	if (!v || n == 0 || blk < v[0] || blk > v[n - 1])
		return 0;
	if (v[n - 1] - v[0] == n - 1)
		return 1;
	return in_sorted(v, n, blk);
}

int jbd2_log_holds(const struct jbd2_log *log, blk64_t blk)
{
	return jbd2_log_owns(log, blk) ||
	       (log->ind && in_sorted(log->ind, log->nind, blk));
}

/* descriptor and revoke blocks end with a be32 crc32c of the whole block
 * (tail zeroed while computing) */
/* The checksum of blk with the len bytes at off zeroed (where the block
 * keeps its own checksum); 0 on ENOMEM, with *ok cleared. */
static uint32_t csum_zeroed(const struct jbd2_log *log,
			    const unsigned char *blk, size_t off, size_t len,
			    int *ok)
{
	unsigned char *copy = malloc(log->bs);
	uint32_t got;

	*ok = copy != NULL;
	if (!copy)
		return 0;
	memcpy(copy, blk, log->bs);
	memset(copy + off, 0, len);
	got = jbd2_csum(log, log->csum_seed, copy, log->bs);
	free(copy);
	return got;
}

int jbd2_tail_verify(const struct jbd2_log *log, const unsigned char *blk)
{
	uint32_t want, got;
	int ok;

	if (!jbd2_has_csum_v2v3(log->incompat))
		return 1;
	want = jbd2_load32(blk + log->bs - JBD2_TAIL_BYTES);
	got = csum_zeroed(log, blk, log->bs - JBD2_TAIL_BYTES, JBD2_TAIL_BYTES, &ok);
	return ok && want == got;
}

int jbd2_commit_verify(const struct jbd2_log *log, const unsigned char *blk)
{
	struct jbd2_commit c;
	uint32_t want, got;
	int ok;

	if (!jbd2_has_csum_v2v3(log->incompat))
		return 1;
	memcpy(&c, blk, sizeof(c));
	want = jbd2_get32(c.c_chksum[0]);
	got = csum_zeroed(log, blk, offsetof(struct jbd2_commit, c_chksum), 4, &ok);
	return ok && want == got;
}
