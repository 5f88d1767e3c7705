/*
 * defrag_run.c: e3_defrag_image — one defragmentation run from open to
 * close: refusals, the layout figures before (and a read-only check that
 * must find nothing wrong), the plan, the moves one file at a time with
 * a look at the clock and the stop flag between files (every file's
 * switch is a whole journaled operation, so any point between two files
 * is a transaction boundary), the final commit, the figures after.
 *
 * A dry run opens the image read-only, so not one byte of it changes;
 * its targets are booked in an allocator of its own that dies with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e3img.h"
#include "defrag_int.h"
#include "journal/journal.h"

void e3_defrag_opts_init(struct e3_defrag_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_time = -1;
}

void e3_defrag_report_free(struct e3_defrag_report *rep)
{
	e3_layout_free(&rep->before);
	e3_layout_free(&rep->after);
}

static char *path_of(struct df_ctx *c, const struct df_cand *cd)
{
	char *name = NULL, *s = NULL;
	struct ext2_inode in;
	errcode_t err;

	e3_fs_lock(c->img);
	if (!ext2fs_read_inode(c->fs, cd->ino, &in) && LINUX_S_ISDIR(in.i_mode))
		err = ext2fs_get_pathname(c->fs, cd->ino, 0, &name);
	else if (cd->parent)
		err = ext2fs_get_pathname(c->fs, cd->parent, cd->ino, &name);
	else
		err = ENOENT;
	e3_fs_unlock(c->img);
	if (!err && name) {
		s = strdup(name);
		ext2fs_free_mem(&name);
	}
	return s;
}

static void emit(struct df_ctx *c, enum e3_defrag_event_kind kind,
		 const struct df_cand *cd, errcode_t why, uint32_t runs_after)
{
	struct e3_defrag_event ev;
	char *path = NULL;

	if (!c->o->event)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.kind = kind;
	ev.st = &c->rep->st;
	if (cd) {
		path = path_of(c, cd);
		ev.ino = cd->ino;
		ev.path = path;
		ev.blocks = cd->blocks;
		ev.runs_before = cd->runs;
		ev.runs_after = runs_after;
		ev.err = why;
	}
	c->o->event(c->o->event_ctx, &ev);
	free(path);
}

void df_progress(struct df_ctx *c, int force)
{
	double now = df_now();

	if (!force && now - c->last_progress < 0.1)
		return;
	c->last_progress = now;
	emit(c, E3_DF_PROGRESS, NULL, 0, 0);
}

int df_should_stop(const struct df_ctx *c)
{
	if (c->o->stop && *c->o->stop)
		return 1;
	return c->o->max_time >= 0 && df_now() - c->t0 >= c->o->max_time;
}

/* retry: 0 the first pass, 1 after the compaction, 2 after room was
 * made for this file, 3 the last try of those left */
static void account(struct df_ctx *c, struct df_cand *cd,
		    enum df_outcome out, uint32_t runs_after, int retry)
{
	struct e3_defrag_stats *st = &c->rep->st;

	if (!retry)
		st->files_done++;
	if (out == DF_UNCHANGED || (retry && out != DF_MOVED))
		return;
	if (out != DF_MOVED) {
		st->files_skipped++;
		cd->left = 1;
		return;
	}
	if (retry) {
		st->files_skipped--;
		if (retry == 2)
			st->files_made_room++;
		else if (retry == 1)
			st->files_retried++;
		cd->left = 0;
	}
	st->files_moved++;
	st->blocks_moved += cd->blocks;
	st->runs_before += cd->runs;
	st->runs_after += runs_after;
	/* e2fsck's rule: any break, in a file under a group's worth */
	if (cd->runs > 1 && runs_after == 1 &&
	    cd->blocks < c->fs->super->s_blocks_per_group)
		st->noncontig_fixed++;
}

void df_fixed(struct df_ctx *c, struct df_cand *cd, uint32_t runs_after)
{
	account(c, cd, DF_MOVED, runs_after, 0);
	emit(c, E3_DF_MOVED, cd, 0, runs_after);
}

errcode_t df_commit(struct df_ctx *c)
{
	errcode_t err;

	if (!c->img->journal)
		return 0;
	e3_fs_lock(c->img);
	err = e3_journal_commit(c->img->journal, 0);
	e3_fs_unlock(c->img);
	return err;
}

/* Files per transaction by default. The blocks a move frees can be
 * handed out only once its switch commits (the allocator's deferred
 * list), so the longer a batch runs the fewer free extents the next
 * files see, and the more often room has to be made for them by moving
 * other files out of the way (defrag_room.c).
 * Measured on the 1 GiB aged image (bench/results/defrag-profile.md):
 * with the journal's 5 s policy alone 201 files needed room and the run
 * took 12-21 s of CPU; committing every 4 / 20 / 64 files, 39 / 68 / 107
 * files and 4.5 / 5.7 / 7.0 s, for 2 fsyncs per commit at ~3.5 ms. */
#define DF_BATCH_FILES 8

errcode_t df_maybe_commit(struct df_ctx *c)
{
	unsigned every = c->o->commit_every ? c->o->commit_every
					    : DF_BATCH_FILES;

	c->moves++;
	if (c->o->dry_run || c->moves % every)
		return 0;
	return df_commit(c);
}

/* The fragmented files in plan order; retry: only those left for want
 * of room, after the compaction made some (1) or, with a move into
 * fewer runs allowed, after room-making (3). */
static errcode_t fix_pass(struct df_ctx *c, int retry)
{
	enum df_outcome out;
	errcode_t err = 0, why;
	uint32_t runs_after;

	for (size_t i = 0; i < c->norder; i++) {
		struct df_cand *cd = &c->cand[c->order[i]];

		if ((retry && !cd->left) || cd->packed)
			continue;
		if (df_should_stop(c)) {
			c->rep->interrupted = 1;
			break;
		}
		err = df_move(c, cd, DF_FIX, &out, &why, &runs_after);
		if (err)
			break;
		cd->no_room = out == DF_SKIPPED && why == E3_DEFRAG_NO_ROOM;
		account(c, cd, out, runs_after, retry);
		if (out == DF_MOVED && (err = df_maybe_commit(c)))
			break;
		if (out != DF_UNCHANGED && !(retry && out != DF_MOVED))
			emit(c, out == DF_MOVED ? (c->o->dry_run ?
				E3_DF_PLANNED : E3_DF_MOVED) : E3_DF_SKIPPED,
			     cd, why, runs_after);
		df_progress(c, 0);
	}
	return err;
}

/* The files still left for want of room, each after other files were
 * moved out of the way (defrag_room.c). */
static errcode_t room_pass(struct df_ctx *c)
{
	enum df_outcome out;
	errcode_t err = 0, why;
	uint32_t runs_after;
	int ready;

	for (size_t i = 0; i < c->norder && !err; i++) {
		struct df_cand *cd = &c->cand[c->order[i]];

		if (!cd->left || !cd->no_room)
			continue;
		if (df_should_stop(c)) {
			c->rep->interrupted = 1;
			break;
		}
		err = df_room_make(c, cd, &ready);
		if (err || c->rep->interrupted)
			break;
		if (!ready)
			continue;
		err = df_move(c, cd, DF_FIX, &out, &why, &runs_after);
		if (err || out != DF_MOVED)
			continue;
		account(c, cd, out, runs_after, 2);
		err = df_maybe_commit(c);
		emit(c, E3_DF_MOVED, cd, 0, runs_after);
		df_progress(c, 0);
	}
	return err;
}

static errcode_t move_all(struct df_ctx *c)
{
	const struct e3_defrag_opts *o = c->o;
	errcode_t err;

	df_progress(c, 1);
	/* the placement plan first (not in a dry run, which moves nothing
	 * and so frees nothing, nor for PATHs: other files would move);
	 * the fix pass then takes what it left */
	err = 0;
	if (!o->dry_run && !o->no_plan && !(o->paths && o->npaths))
		err = df_pack(c, 0);
	/* one run or no move yet (not for PATHs, where no room is made,
	 * nor in a dry run): a file no free extent holds whole would
	 * otherwise move into fewer runs now and whole again once room
	 * is made for it (on the aged 4 GiB image 94 files moved 2-4
	 * times, a million blocks) */
	c->fix_whole = !o->dry_run && !(o->paths && o->npaths);
	if (!err && !c->rep->interrupted)
		err = fix_pass(c, 0);
	if (!err && !c->rep->interrupted && !o->dry_run && o->compact &&
	    !(o->paths && o->npaths)) {
		err = df_compact(c);
		if (!err && !c->rep->interrupted && c->rep->st.files_skipped)
			err = fix_pass(c, 1);
	}
	c->fix_whole = 0;
	/* room made for the files still left: not in a dry run (it moves
	 * nothing, so makes no room) nor for PATHs (other files would
	 * move); each round's moves free blocks the next may use, so
	 * rounds go on while one helps (three at most) */
	for (int round = 0; round < 3 && !err && !c->rep->interrupted &&
	     !o->dry_run && !(o->paths && o->npaths) &&
	     c->rep->st.files_skipped; round++) {
		uint64_t before = c->rep->st.files_made_room;

		err = room_pass(c);
		if (c->rep->st.files_made_room == before)
			break;
	}
	df_room_free(c);
	/* what room could not be made for: into fewer runs, at least
	 * (only where the first try was one run or nothing) */
	if (!err && !c->rep->interrupted && !o->dry_run &&
	    !(o->paths && o->npaths) && c->rep->st.files_skipped)
		err = fix_pass(c, 3);
	/* the holes the fix and room passes left, filled */
	if (!err && !c->rep->interrupted && !o->dry_run && !o->no_plan &&
	    !(o->paths && o->npaths))
		err = df_pack(c, 1);
	df_progress(c, 1);
	return err;
}

static void predict(struct df_ctx *c)
{
	const struct e3_layout *b = &c->rep->before;
	uint64_t frag = b->fragmented_files + b->fragmented_dirs;

	frag -= c->rep->st.noncontig_fixed < frag ? c->rep->st.noncontig_fixed
						  : frag;
	c->rep->predicted_noncontig_permille = b->inodes_used ?
		(unsigned)(((10000 * frag) / b->inodes_used + 5) / 10) : 0;
}

/* Plan and move; then, while the last pass moved files out of the way
 * (some of them fragmented: they moved whole, in as many runs) plan and
 * move again from a fresh inode scan, at most DF_PASSES times. Measured
 * on a 1 GiB aged image: 59.1% non-contiguous after one pass 9.2%, after
 * a second 0.4%. Files planned and done add up over the passes (a file
 * planned again counts again, so progress stays within 100%); the files
 * left are the last pass's. */
#define DF_PASSES 3

static errcode_t passes(struct df_ctx *c)
{
	struct e3_defrag_stats *st = &c->rep->st;
	uint64_t evicted = 0;
	errcode_t err = 0;

	for (int pass = 0; pass < DF_PASSES && !err; pass++) {
		if (pass) {
			if (st->files_evicted == evicted || c->rep->interrupted ||
			    c->o->dry_run || (c->o->paths && c->o->npaths))
				break;
			free(c->cand);
			free(c->order);
			c->cand = NULL;
			c->order = NULL;
			c->ncand = c->capcand = c->norder = 0;
			st->files_skipped = 0;
		}
		evicted = st->files_evicted;
		if ((err = df_plan(c)))
			break;
		if (!pass)
			st->blocks_fragmented = st->blocks_planned;
		if (pass && !c->norder)
			break;
		err = move_all(c);
	}
	/* last, the free extents the passes left, joined: once, after
	 * the last pass (an earlier one's would be undone by the next) */
	if (!err && !c->rep->interrupted && !c->o->dry_run && !c->o->no_plan &&
	    !(c->o->paths && c->o->npaths))
		err = df_merge(c);
	return err;
}

/* Refusals before anything is read for the plan. */
static errcode_t open_image(const char *path, const struct e3_defrag_opts *o,
			    e3_image_t **img)
{
	struct e3_open_opts oo = { 0 };
	int mflags = 0;
	errcode_t err;

	/* a dry run opens read-only, which does not look at mounts itself */
	if (!ext2fs_check_if_mounted(path, &mflags) &&
	    (mflags & EXT2_MF_MOUNTED))
		return E3_MOUNTED;
	oo.flags = o->dry_run ? 0 : E3_OPEN_WRITE;
	oo.alloc = E3_ALLOC_RBTREE;
	/* commits by count only (df_maybe_commit: every DF_BATCH_FILES or
	 * commit_every files, and the journal's size limit), never by the
	 * 5 s timer: blocks a move frees are reusable only after a commit,
	 * so a timer would make the plan — and the image a run leaves —
	 * depend on how loaded the machine was (tests saw 2 or 12 free
	 * extents from the same image); by count, the same run commits at
	 * the same writes, which the crash sweeps rely on too, and at most
	 * a batch of moves is redone after a crash */
	oo.commit_interval = 1000000;
	err = e3_image_open(path, &oo, img);
	if (err)
		return err;
	if (!o->dry_run && !(*img)->journal && !o->force) {
		e3_image_abort(*img);
		return E3_DEFRAG_NO_JOURNAL;
	}
	return 0;
}

/* The block-map picture of the image as it stands (lib/inspect). */
static errcode_t draw_map(e3_image_t *img, FILE *out, const char *path,
			  const char *when)
{
	char title[512];
	errcode_t err;

	snprintf(title, sizeof(title), "%s, %s e3defrag", path, when);
	e3_fs_lock(img);
	err = e3_map_svg(img->fs, out, title, NULL);
	e3_fs_unlock(img);
	return err;
}

static errcode_t run(struct df_ctx *c)
{
	errcode_t err;

	c->buf = malloc(DF_COPY);
	if (!c->buf)
		return ENOMEM;
	if (c->o->verify && !c->o->dry_run) {
		if (posix_memalign((void **)&c->vbuf, 4096, DF_COPY))
			return ENOMEM;
		/* a second descriptor, read-only: the reads that must miss
		 * the page cache; where O_DIRECT is refused (tmpfs)
		 * verify_chunk drops the range from the cache instead */
		c->dfd = open(c->img->path, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (c->dfd < 0 && errno != EINVAL)
			return errno;
	}
	if (c->o->dry_run) {
		e3_fs_lock(c->img);
		err = e3_alloc_create(c->img->fs, E3_ALLOC_RBTREE, NULL, &c->alloc);
		e3_fs_unlock(c->img);
		if (err)
			return err;
	} else {
		c->alloc = c->img->alloc;
		if (!c->img->journal && (err = e3_image_mark_unclean(c->img)))
			return err;
	}
	c->t0 = df_now();
	err = passes(c);
	c->rep->seconds = df_now() - c->t0;
	if (!err && !c->o->dry_run && c->img->journal) {
		/* the boundary the run stops at: everything moved so far
		 * is committed before the close checkpoints it */
		e3_fs_lock(c->img);
		err = e3_journal_commit(c->img->journal, 0);
		e3_fs_unlock(c->img);
	}
	if (!err && !c->o->dry_run && c->o->map_after)
		err = draw_map(c->img, c->o->map_after, c->img->path, "after");
	return err;
}

errcode_t e3_defrag_image(const char *path, const struct e3_defrag_opts *o,
			  struct e3_defrag_report *rep)
{
	struct df_ctx c;
	e3_image_t *img;
	errcode_t err, err2;
	int bad = 0;

	memset(rep, 0, sizeof(*rep));
	if (o->min_runs == 1)
		return E3_BAD_OPTION;
	if ((err = open_image(path, o, &img)))
		return err;
	rep->replayed = img->report.replayed;
	/* the image on disk is whole now (replayed, nothing pending): the
	 * checker's figures, and its verdict */
	err = e3_layout_measure(path, &rep->before, &bad);
	if (!err && bad)
		err = E3_DEFRAG_FS_ERRORS;
	if (err) {
		e3_image_abort(img);
		return err;
	}
	rep->have_before = 1;
	if (o->map_before && (err = draw_map(img, o->map_before, path, "before"))) {
		e3_image_abort(img);
		return err;
	}
	memset(&c, 0, sizeof(c));
	c.dfd = -1;
	c.img = img;
	c.fs = img->fs;
	c.o = o;
	c.rep = rep;
	err = run(&c);
	if (o->dry_run) {
		if (c.alloc)
			e3_alloc_destroy(c.alloc);
		e3_image_abort(img);	/* read-only: nothing to write */
		predict(&c);
	} else {
		err2 = e3_image_close(img);
		if (!err)
			err = err2;
	}
	if (c.dfd >= 0)
		close(c.dfd);
	free(c.vbuf);
	free(c.buf);
	free(c.cand);
	free(c.order);
	if (!o->dry_run && !err &&
	    !e3_layout_measure(path, &rep->after, &bad))
		rep->have_after = 1;
	return err;
}

