/*
 * defrag_move.c: the defragmenter's mover — one file to new blocks.
 *
 * For one candidate:
 *   1. read its inode and block map (fs_lock), checking the map is the
 *      file's own (blocks_owned.c) before anything is trusted;
 *   2. book a target with the allocator: a size-hinted reservation for
 *      every block the file takes (data + indirect), which is one free
 *      run when free space has one; give up (skip) unless the target has
 *      fewer runs than the file has now — a move never makes a file
 *      worse;
 *   3. lay the map out in the target in e2fsck's / ext3's order
 *      (D0-D11, IND, D12.., DIND, IND, ..., blockmap.c does the
 *      bookkeeping), the new indirect blocks kept in memory;
 *   4. copy the data: regular files with pread/pwrite on the image fd,
 *      outside fs_lock, gathered into one write per stretch of the
 *      target (ordered mode: the commit that makes these blocks
 *      reachable fsyncs them first, once for all the files switched in
 *      its transaction); with --verify each stretch is written back and
 *      read again from the medium (verify_chunk says why not from the
 *      page cache); directories and symlinks are metadata to ext3 and
 *      go through the journal in step 5;
 *   5. switch, in ONE journaled operation under fs_lock: new indirect
 *      blocks and directory blocks written (captured), i_block[] set,
 *      the new blocks marked in use, the old ones freed — the allocator's
 *      deferred list keeps them from being reused before this commits —
 *      and the old metadata copies revoked so a replay never writes them
 *      over a later owner's data. i_blocks, i_size, the times (ctime
 *      included, as the kernel's EXT4_IOC_MOVE_EXT leaves them), links,
 *      xattrs and the inode number do not change.
 *
 * Crash safety. Until the operation's transaction commits, the committed
 * image knows nothing of the target: the file's old blocks and map are
 * intact and still in use, and the target blocks are free. Once it
 * commits, the data it points at was durable before the commit block
 * (journal_commit.c), the old blocks are free. A failure inside step 5
 * poisons the running transaction (it never commits), so no half switch
 * reaches the disk. In a dry run steps 4 and 5 are skipped: the target
 * stays booked so the next files plan around it, nothing is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e3img.h"
#include "defrag_int.h"
#include "fs/blockmap.h"
#include "journal/journal.h"
#include "fs/load_int.h"
#include "util/grow.h"

struct df_run {
	blk64_t start, len;
};

/* A new indirect block, built in memory, written at the switch. */
struct df_ind {
	blk64_t blk;
	unsigned char *data;
};

struct df_move {
	struct df_ctx *c;
	struct df_cand *cd;
	enum df_mode mode;
	blk64_t old_lo;			/* the file's lowest block now */
	struct ext2_inode_large inode;
	int isize;
	struct df_map old;
	blk64_t *newp;			/* new place of each data block */
	struct df_run *runs;		/* the target, in layout order */
	size_t nruns, caprun;
	uint64_t total, got;		/* blocks needed, booked */
	size_t cur;			/* layout cursor: run... */
	blk64_t used;			/* ...and blocks used of it */
	struct df_ind *ind;
	size_t nind, capind;
	struct e3_bmap bm;
	uint32_t new_runs, new_groups;
};

static void move_free(struct df_move *mv)
{
	for (size_t i = 0; i < mv->nind; i++)
		free(mv->ind[i].data);
	free(mv->ind);
	free(mv->runs);
	free(mv->newp);
	bm_free(&mv->bm);
	df_map_free(&mv->old);
}

static void unclaim_target(struct df_move *mv)
{
	for (size_t i = 0; i < mv->nruns; i++)
		e3_alloc_unclaim(mv->c->alloc, mv->runs[i].start,
				 mv->runs[i].len);
	mv->nruns = 0;
}

/* ---- 1. the file as it is ---------------------------------------------- */

static errcode_t read_file(struct df_move *mv)
{
	struct df_ctx *c = mv->c;
	errcode_t err;

	mv->isize = EXT2_INODE_SIZE(c->fs->super);
	if ((size_t)mv->isize > sizeof(mv->inode))
		mv->isize = sizeof(mv->inode);
	e3_fs_lock(c->img);
	err = ext2fs_read_inode_full(c->fs, mv->cd->ino,
				     (struct ext2_inode *)&mv->inode, mv->isize);
	if (!err)
		err = e3_map_owned(c->img, mv->cd->ino,
				   (struct ext2_inode *)&mv->inode, 0);
	if (!err)
		err = df_map_read(c, mv->cd->ino, &mv->old);
	e3_fs_unlock(c->img);
	return err;
}

/* ---- 2. the target ------------------------------------------------------ */

static errcode_t no_read(void *ctx, blk64_t blk, void *buf)
{
	(void)ctx; (void)blk; (void)buf;
	return EIO;	/* a sequential layout never reads a block back */
}

static errcode_t no_write(void *ctx, blk64_t blk, const void *buf)
{
	(void)ctx; (void)blk; (void)buf;
	return 0;
}

/* Blocks a sequential layout of these data blocks takes: the data plus
 * the indirect blocks blockmap.c creates for them (a hole's range gets
 * none, as under ext3). */
static errcode_t count_layout(struct df_move *mv, uint64_t *total)
{
	struct bm_io io = { no_read, no_write, NULL };
	struct e3_bmap sim;
	blk64_t fake[3] = { 1, 1, 1 };
	errcode_t err = 0;
	unsigned n;

	bm_init(&sim, mv->c->fs->blocksize, &io);
	for (size_t i = 0; i < mv->old.ndata && !err; i++) {
		err = bm_missing(&sim, mv->old.lblk[i], &n);
		if (!err)
			err = bm_set(&sim, mv->old.lblk[i], 1, fake, n);
	}
	*total = sim.nblocks;
	bm_free(&sim);
	return err;
}

static errcode_t add_run(struct df_move *mv, blk64_t start, blk64_t len)
{
	struct df_run *r = mv->nruns ? &mv->runs[mv->nruns - 1] : NULL;

	mv->got += len;
	if (r && r->start + r->len == start) {
		r->len += len;
		return 0;
	}
	r = e3_grow(mv->runs, mv->nruns, &mv->caprun, sizeof(*r), 4);
	if (!r) {
		e3_alloc_unclaim(mv->c->alloc, start, len);
		mv->got -= len;
		return ENOMEM;
	}
	mv->runs = r;
	mv->runs[mv->nruns++] = (struct df_run){ start, len };
	return 0;
}

/* Runs and groups of the target in e2fsck's terms: its blocks are used
 * in the order booked, so runs are the booked runs (a jump over group
 * metadata is a run of its own, as e2fsck sees it). */
static void target_shape(struct df_move *mv)
{
	ext2_filsys fs = mv->c->fs;
	dgrp_t last = 0;

	mv->new_runs = (uint32_t)mv->nruns;
	mv->new_groups = 0;
	for (size_t i = 0; i < mv->nruns; i++) {
		dgrp_t g0 = ext2fs_group_of_blk2(fs, mv->runs[i].start);
		dgrp_t g1 = ext2fs_group_of_blk2(fs, mv->runs[i].start +
						 mv->runs[i].len - 1);

		mv->new_groups += g1 - g0 + 1;
		if (i && g0 == last)
			mv->new_groups--;
		last = g1;
	}
}

/* A fix that must end in one run or not happen: a move into fewer runs
 * that are still more than one would be followed by another of the
 * whole file once room is made (defrag_run.c). */
static int whole_only(const struct df_move *mv)
{
	return mv->mode == DF_FIX && mv->c->fix_whole &&
	       mv->total < mv->c->fs->super->s_blocks_per_group;
}

/* Books the target; E3_DEFRAG_NO_ROOM (nothing booked) when free space
 * gives no layout with fewer runs than the file has. */
/* Whether the booked target is a move worth making: fewer runs (DF_FIX),
 * or one run outside the groups being emptied (DF_COMPACT). */
static int target_ok(const struct df_move *mv)
{
	const struct df_ctx *c = mv->c;

	if (mv->got < mv->total)
		return 0;
	if (mv->mode == DF_EVICT) {
		/* out of the stretch, and no worse than it was */
		if (mv->nruns > mv->old.runs)
			return 0;
		for (size_t i = 0; i < mv->nruns; i++)
			if (mv->runs[i].start < c->keep_hi &&
			    mv->runs[i].start + mv->runs[i].len > c->keep_lo)
				return 0;
		return 1;
	}
	if (mv->mode == DF_COMPACT) {
		blk64_t s = mv->runs[0].start, e = s + mv->total;

		if (mv->nruns != 1 || (!c->emptying && !c->keep_hi))
			return 0;
		if (c->emptying &&
		    (c->emptying[ext2fs_group_of_blk2(c->fs, s)] ||
		     c->emptying[ext2fs_group_of_blk2(c->fs, e - 1)]))
			return 0;
		/* never into the stretch being emptied (defrag_room.c) */
		return !c->keep_hi || e <= c->keep_lo || s >= c->keep_hi;
	}
	if (mv->mode == DF_PLACE)
		/* the planner's slot, exactly, or not at all */
		return mv->nruns == 1 && mv->runs[0].start == mv->cd->goal;
	if (whole_only(mv))
		return mv->nruns == 1;
	return mv->nruns < mv->old.runs;
}

static errcode_t book_target(struct df_move *mv)
{
	struct e3_alloc *a = mv->c->alloc;
	struct e3_rsv r;
	blk64_t start, got, goal;
	errcode_t err = 0;

	e3_rsv_init(a, &r, mv->cd->ino, mv->total, 0);
	/* the free extent chosen for it (compaction, room made) */
	goal = mv->cd->goal ? mv->cd->goal : e3_rsv_goal(a, &r);
	(void)e3_rsv_book(a, &r, goal);	/* full: windowless */
	while (mv->got < mv->total) {
		err = e3_alloc_blocks(a, &r, mv->got ? e3_rsv_goal(a, &r) : goal,
				      mv->total - mv->got, &start, &got);
		if (err)
			break;
		if ((err = add_run(mv, start, got)))
			break;
		/* no better than now: stop asking */
		if (mv->nruns >= mv->old.runs + (mv->mode != DF_FIX) ||
		    mv->mode == DF_PLACE || whole_only(mv))
			break;
	}
	e3_rsv_discard(a, &r);
	if (err == E3_IMAGE_FULL || (!err && !target_ok(mv)))
		err = E3_DEFRAG_NO_ROOM;
	if (err)
		unclaim_target(mv);
	else
		target_shape(mv);
	return err;
}

/* ---- 3. the new map ----------------------------------------------------- */

static blk64_t next_block(struct df_move *mv)
{
	struct df_run *r = &mv->runs[mv->cur];

	if (mv->used == r->len) {
		r = &mv->runs[++mv->cur];
		mv->used = 0;
	}
	return r->start + mv->used++;
}

static errcode_t keep_ind(void *ctx, blk64_t blk, const void *buf)
{
	struct df_move *mv = ctx;
	unsigned bs = mv->c->fs->blocksize;
	struct df_ind *v;

	for (size_t i = 0; i < mv->nind; i++)
		if (mv->ind[i].blk == blk) {
			memcpy(mv->ind[i].data, buf, bs);
			return 0;
		}
	v = e3_grow(mv->ind, mv->nind, &mv->capind, sizeof(*v), 8);
	if (!v)
		return ENOMEM;
	mv->ind = v;
	v[mv->nind].data = malloc(bs);
	if (!v[mv->nind].data)
		return ENOMEM;
	memcpy(v[mv->nind].data, buf, bs);
	v[mv->nind++].blk = blk;
	return 0;
}

static errcode_t layout(struct df_move *mv)
{
	struct bm_io io = { no_read, keep_ind, mv };
	blk64_t meta[3];
	errcode_t err = 0;
	unsigned n;

	mv->newp = malloc((mv->old.ndata + 1) * sizeof(*mv->newp));
	if (!mv->newp)
		return ENOMEM;
	bm_init(&mv->bm, mv->c->fs->blocksize, &io);
	mv->cur = 0;
	mv->used = 0;
	for (size_t i = 0; i < mv->old.ndata && !err; i++) {
		err = bm_missing(&mv->bm, mv->old.lblk[i], &n);
		if (err)
			break;
		/* the indirect blocks first, outermost first: each right
		 * before the data it maps (ext3-facts §2.2) */
		for (unsigned k = 0; k < n; k++)
			meta[k] = next_block(mv);
		mv->newp[i] = next_block(mv);
		err = bm_set(&mv->bm, mv->old.lblk[i], mv->newp[i], meta, n);
	}
	if (!err)
		err = bm_flush(&mv->bm);
	if (!err && mv->bm.nblocks != mv->total)
		err = EINVAL;	/* count_layout and layout disagree: a bug */
	return err;
}

/* ---- 4. the data -------------------------------------------------------- */

/* Blocks from i on that go back to back in the target, up to max: one
 * write. A target is mostly one run, broken only by the indirect blocks
 * laid between data blocks, so these are long even when the file is in
 * many pieces. */
static size_t target_chunk(const struct df_move *mv, size_t i, size_t max)
{
	size_t n = 1;

	while (i + n < mv->old.ndata && n < max &&
	       mv->newp[i + n] == mv->newp[i] + n)
		n++;
	return n;
}

/* Of the n blocks from i on, how many are back to back where they are
 * now: one read. */
static size_t source_piece(const struct df_move *mv, size_t i, size_t n)
{
	size_t k = 1;

	while (k < n && mv->old.pblk[i + k] == mv->old.pblk[i] + k)
		k++;
	return k;
}

static errcode_t full_io(int wr, int fd, unsigned char *buf, size_t len,
			 off_t off)
{
	while (len) {
		ssize_t k = wr ? pwrite(fd, buf, len, off) :
				 pread(fd, buf, len, off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno;
		if (k == 0)
			return EIO;	/* short image: never a silent zero */
		buf += k;
		len -= (size_t)k;
		off += k;
	}
	return 0;
}

/* n blocks from i on into buf, one read per piece of the source. */
static errcode_t read_source(struct df_move *mv, size_t i, size_t n,
			     unsigned char *buf)
{
	unsigned bs = mv->c->fs->blocksize;
	errcode_t err;

	for (size_t k = 0, p; k < n; k += p) {
		p = source_piece(mv, i + k, n - k);
		err = full_io(0, mv->c->img->fd, buf + k * bs, p * bs,
			      (off_t)mv->old.pblk[i + k] * bs);
		if (err)
			return err;
	}
	return 0;
}

/* The target read back from the medium and compared with the source
 * (--verify). A plain read after the write would come from the page
 * cache the write just filled: it compares memory with itself and finds
 * nothing a checked pwrite has not already ruled out. So the range is
 * written back and waited for first, then read with O_DIRECT (c->dfd),
 * or, where the image's filesystem has no O_DIRECT (tmpfs: the page
 * cache is its medium), after its clean pages were dropped. */
static errcode_t verify_chunk(struct df_move *mv, size_t i, size_t n,
			      const unsigned char *src)
{
	struct df_ctx *c = mv->c;
	unsigned bs = c->fs->blocksize;
	off_t off = (off_t)mv->newp[i] * bs;
	size_t len = n * bs;
	errcode_t err = EINVAL;

	if (sync_file_range(c->img->fd, off, (off_t)len,
			    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			    SYNC_FILE_RANGE_WAIT_AFTER) < 0 &&
	    fdatasync(c->img->fd) < 0)
		return errno;
	if (c->dfd >= 0)
		err = full_io(0, c->dfd, c->vbuf, len, off);
	if (err == EINVAL) {
		/* no O_DIRECT here, or blocks smaller than the device's
		 * sector (1 KiB blocks on a 4 KiB-sector disk): the range is
		 * clean now, so dropping it makes the read go to the disk */
		(void)posix_fadvise(c->img->fd, off, (off_t)len,
				    POSIX_FADV_DONTNEED);
		err = full_io(0, c->img->fd, c->vbuf, len, off);
	}
	if (err)
		return err;
	return memcmp(src, c->vbuf, len) ? E3_DEFRAG_VERIFY : 0;
}

/* Regular file data, outside fs_lock: gathered from the source's pieces
 * into one buffer per stretch of the target, then one write. Nothing
 * flushes here: the commit that makes these blocks reachable fsyncs the
 * image before its commit block (ordered mode, journal_commit.c), so one
 * flush covers every file switched in that transaction. */
static errcode_t copy_data(struct df_move *mv)
{
	struct df_ctx *c = mv->c;
	unsigned bs = c->fs->blocksize;
	size_t max = DF_COPY / bs, n;
	errcode_t err;

	for (size_t i = 0; i < mv->old.ndata; i += n) {
		n = target_chunk(mv, i, max);
		err = read_source(mv, i, n, c->buf);
		if (!err)	/* crash sweeps reach data writes too */
			err = e3_journal_fault_write(c->img->journal);
		if (!err)
			err = full_io(1, c->img->fd, c->buf, n * bs,
				      (off_t)mv->newp[i] * bs);
		if (!err && c->o->verify)
			err = verify_chunk(mv, i, n, c->buf);
		if (err)
			return err;
		e3_image_wrote(c->img, (uint64_t)n * bs);
	}
	return 0;
}

/* ---- 5. the switch ------------------------------------------------------ */

static int is_meta_data(const struct df_move *mv)
{
	/* directory and symlink blocks are journaled metadata to ext3 */
	return !LINUX_S_ISREG(mv->inode.i_mode);
}

/* Metadata blocks the switch writes or revokes, at most: the new
 * indirect (and directory) blocks, the inode's table block, a bitmap and
 * descriptor block for each group the old and new blocks touch, the
 * superblock. */
static uint64_t switch_size(const struct df_move *mv)
{
	uint64_t groups = mv->old.group_changes + 1 + mv->new_groups;
	uint64_t w = mv->nind + (is_meta_data(mv) ? mv->old.ndata : 0) + 2 +
		     2 * groups;
	uint64_t rv = mv->old.nmeta + (is_meta_data(mv) ? mv->old.ndata : 0);

	return w > rv ? w : rv;
}

/* The old blocks, freed; each one that was journaled metadata
 * is revoked first (the allocator's stats hook revokes too: this does
 * not depend on it). */
static errcode_t free_old(struct df_move *mv)
{
	struct df_ctx *c = mv->c;
	size_t n = mv->old.ndata + mv->old.nmeta, i;
	blk64_t *all = malloc((n + 1) * sizeof(*all));

	if (!all)
		return ENOMEM;
	/* a file of twelve blocks or fewer has no indirect blocks: meta is
	 * NULL then, and memcpy's source must never be, even for 0 bytes */
	if (mv->old.ndata)
		memcpy(all, mv->old.pblk, mv->old.ndata * sizeof(*all));
	if (mv->old.nmeta)
		memcpy(all + mv->old.ndata, mv->old.meta,
		       mv->old.nmeta * sizeof(*all));
	if (c->img->journal) {
		for (i = 0; i < mv->old.nmeta; i++)
			e3_journal_revoke(c->img->journal, mv->old.meta[i]);
		for (i = 0; is_meta_data(mv) && i < mv->old.ndata; i++)
			e3_journal_revoke(c->img->journal, mv->old.pblk[i]);
	}
	/* one block at a time: libext2fs 1.47.0's
	 * ext2fs_block_alloc_stats_range hands its callback the range's
	 * end and a count of 0, so the allocator would never hear of a
	 * range freed that way and its blocks would stay unusable for the
	 * rest of the run (the room a large file needs, above all) */
	for (i = 0; i < n; i++)
		ext2fs_block_alloc_stats2(c->fs, all[i], -1);
	free(all);
	return 0;
}

static errcode_t write_new_meta(struct df_move *mv)
{
	struct df_ctx *c = mv->c;
	errcode_t err = 0;

	for (size_t i = 0; is_meta_data(mv) && i < mv->old.ndata && !err; i++) {
		err = io_channel_read_blk64(c->fs->io, mv->old.pblk[i], 1, c->buf);
		if (!err)
			err = io_channel_write_blk64(c->fs->io, mv->newp[i], 1,
						     c->buf);
	}
	for (size_t i = 0; i < mv->nind && !err; i++)
		err = io_channel_write_blk64(c->fs->io, mv->ind[i].blk, 1,
					     mv->ind[i].data);
	return err;
}

/* Under fs_lock. Nothing written when it returns an error before
 * *wrote is set. */
static errcode_t do_switch(struct df_move *mv, int *wrote)
{
	struct df_ctx *c = mv->c;
	struct ext2_inode_large now;
	errcode_t err;

	*wrote = 0;
	if (c->img->journal &&
	    (err = e3_journal_reserve(c->img->journal, switch_size(mv))))
		return err == E3_JOURNAL_TOO_SMALL ? E3_DEFRAG_TXN_TOO_BIG : err;
	/* nothing else writes this image, but a map that changed since it
	 * was read would be switched away from data it never copied */
	err = ext2fs_read_inode_full(c->fs, mv->cd->ino,
				     (struct ext2_inode *)&now, mv->isize);
	if (err)
		return err;
	if (memcmp(now.i_block, mv->inode.i_block, sizeof(now.i_block)))
		return E3_CORRUPT;
	*wrote = 1;
	if ((err = write_new_meta(mv)))
		return err;
	for (int i = 0; i < EXT2_N_BLOCKS; i++)
		mv->inode.i_block[i] = mv->bm.iblock[i];
	for (size_t i = 0; i < mv->nruns; i++)
		ext2fs_block_alloc_stats_range(c->fs, mv->runs[i].start,
					       (blk_t)mv->runs[i].len, +1);
	if ((err = free_old(mv)))
		return err;
	err = ext2fs_write_inode_full(c->fs, mv->cd->ino,
				      (struct ext2_inode *)&mv->inode, mv->isize);
	if (err)
		return err;
	return e3_op_end(c->img);
}

static errcode_t switch_map(struct df_move *mv)
{
	struct df_ctx *c = mv->c;
	int wrote;
	errcode_t err;

	e3_fs_lock(c->img);
	err = do_switch(mv, &wrote);
	if (err && wrote)
		/* half a switch must never commit: the image stays as of
		 * the last commit, where the old map is whole */
		e3_op_poison(c->img, err);
	e3_fs_unlock(c->img);
	return err;
}

/* ---- one file ----------------------------------------------------------- */

blk64_t df_map_lowest(const struct df_map *m)
{
	blk64_t lo = m->ndata ? m->pblk[0] : m->meta[0];

	for (size_t i = 0; i < m->ndata; i++)
		if (m->pblk[i] < lo)
			lo = m->pblk[i];
	for (size_t i = 0; i < m->nmeta; i++)
		if (m->meta[i] < lo)
			lo = m->meta[i];
	return lo;
}

static errcode_t plan_one(struct df_move *mv, errcode_t *why)
{
	errcode_t err;

	*why = 0;
	if ((err = read_file(mv)))
		return err;
	/* the map the planner saw, still fragmented (a candidate met
	 * twice, say, is not); or for compaction, contiguous and small */
	if (mv->mode == DF_FIX &&
	    !df_wants(mv->c, mv->old.ndata + mv->old.nmeta, mv->old.runs,
		      mv->old.groups ? mv->old.groups : 1))
		return *why = DF_WHY_FINE, 0;
	if (mv->mode == DF_EVICT &&
	    mv->old.ndata + mv->old.nmeta >= mv->c->fs->super->s_blocks_per_group)
		return *why = DF_WHY_FINE, 0;
	if (mv->mode == DF_PLACE &&
	    mv->old.ndata + mv->old.nmeta >= mv->c->fs->super->s_blocks_per_group)
		return *why = DF_WHY_FINE, 0;
	if (mv->mode == DF_COMPACT &&
	    (mv->old.runs != 1 || mv->old.ndata + mv->old.nmeta >=
				  mv->c->fs->super->s_blocks_per_group))
		return *why = DF_WHY_FINE, 0;
	mv->old_lo = df_map_lowest(&mv->old);
	if ((err = count_layout(mv, &mv->total)))
		return err;
	/* i_blocks stays as it is only if the new map has as many blocks */
	if (mv->total != mv->old.ndata + mv->old.nmeta)
		return *why = E3_DEFRAG_MAP_ODD, 0;
	err = book_target(mv);
	if (err == E3_DEFRAG_NO_ROOM)
		return *why = err, 0;
	if (err)
		return err;
	if ((err = layout(mv)))
		unclaim_target(mv);
	return err;
}

errcode_t df_move(struct df_ctx *c, struct df_cand *cd, enum df_mode mode,
		  enum df_outcome *out, errcode_t *why, uint32_t *runs_after)
{
	struct df_move mv;
	errcode_t err;

	memset(&mv, 0, sizeof(mv));
	mv.c = c;
	mv.cd = cd;
	mv.mode = mode;
	*out = DF_SKIPPED;
	*runs_after = 0;
	err = plan_one(&mv, why);
	if (err || *why || c->o->dry_run)
		goto done;
	if (!is_meta_data(&mv) && (err = copy_data(&mv))) {
		unclaim_target(&mv);
		goto done;
	}
	err = switch_map(&mv);
	if (err == E3_DEFRAG_TXN_TOO_BIG) {
		unclaim_target(&mv);
		*why = err;
		err = 0;
		goto done;
	}
done:
	if (*why == DF_WHY_FINE) {
		*out = DF_UNCHANGED;
		*why = 0;
	}
	if (!err && !*why && *out != DF_UNCHANGED) {
		*out = DF_MOVED;
		*runs_after = mv.new_runs;
		cd->runs = mv.old.runs;
		cd->moved_to = mv.runs[0].start;
	}
	move_free(&mv);
	return err;
}
