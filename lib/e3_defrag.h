/*
 * e3_defrag.h: public API of the defragmenter (e3defrag): in place on an
 * unmounted image, one file at a time, each file's data copied to one
 * free run and its block map switched in one journaled transaction.
 *
 * The library plans and moves and fills a report; it never prints. The
 * layout figures before and after are e3fsck's own (e3_layout_measure
 * runs the checker's read-only passes), so e3fsck --layout and e3defrag
 * never disagree about how fragmented an image is.
 */
#ifndef E3_DEFRAG_H
#define E3_DEFRAG_H

#include <signal.h>
#include <stdint.h>
#include <ext2fs/ext2fs.h>
#include "e3_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- layout figures (defrag_layout.c) ---------------------------------
 * A read-only check of the image at path with the layout pass on: lay
 * gets the checker's figures (the caller frees them with
 * e3_layout_free), *errors (if not NULL) whether the check found
 * anything wrong or could not finish. Reads the image only; takes no
 * lock (e3_check_opts.lock_held), so a writer holding the image open
 * must have nothing pending. */
errcode_t e3_layout_measure(const char *path, struct e3_layout *lay,
			    int *errors);
void e3_layout_free(struct e3_layout *lay);
/* The runs per file that pct percent of the files with blocks have or
 * fewer (the nearest-rank percentile; 90: the report's p90); 0 when no
 * file has blocks. At E3_RUNS_HIST - 1 it means "that many or more". */
uint32_t e3_layout_runs_pct(const struct e3_layout *lay, unsigned pct);

/* ---- the defragmenter (defrag_*.c) --------------------------------- */

enum e3_defrag_event_kind {
	E3_DF_MOVED,		/* a file now lives in new blocks (-v) */
	E3_DF_SKIPPED,		/* a file was left as it is; err says why */
	E3_DF_PLANNED,		/* dry run: a file would move (-v) */
	E3_DF_PROGRESS,		/* counters moved (at most ~10 a second) */
};

struct e3_defrag_stats {
	uint64_t files_planned;		/* candidates found by the planner */
	uint64_t blocks_planned;	/* their blocks (data and indirect) */
	uint64_t files_done;		/* candidates dealt with so far */
	uint64_t files_moved;		/* (dry run: would move) */
	uint64_t files_skipped;		/* left fragmented: no room, ... */
	uint64_t blocks_moved;		/* (dry run: would move) */
	uint64_t runs_before;		/* sum of runs of the files moved... */
	uint64_t runs_after;		/* ...before and after their move */
	uint64_t noncontig_fixed;	/* of them, files e2fsck counted as
					   non-contiguous and now does not */
	uint64_t files_compacted;	/* contiguous files slid down into a
					   hole to gather free space */
	uint64_t blocks_compacted;	/* (counted in blocks_moved too) */
	uint64_t files_retried;		/* left for want of room, then moved
					   into space the compaction made */
	uint64_t files_evicted;		/* small contiguous files moved out
					   of the way of a large one */
	uint64_t blocks_evicted;	/* (counted in blocks_moved too) */
	uint64_t files_made_room;	/* left for want of room, then moved
					   into a stretch emptied for them */
	uint64_t blocks_fragmented;	/* the fragmented payload: blocks of
					   the files the first plan found
					   (blocks_moved / this: how often
					   each was moved, in effect) */
	uint64_t files_joined;		/* of files_compacted, those moved
					   to join or close free extents
					   (the last step, defrag_merge.c) */
	uint64_t blocks_joined;		/* (counted in blocks_moved too) */
};

struct e3_defrag_event {
	enum e3_defrag_event_kind kind;
	ext2_ino_t ino;
	const char *path;		/* or NULL when not known */
	uint64_t blocks;
	uint32_t runs_before, runs_after;
	errcode_t err;			/* E3_DF_SKIPPED: the reason */
	const struct e3_defrag_stats *st;
};

struct e3_defrag_opts {
	int dry_run;			/* plan only: the image is opened
					   read-only and never written */
	int force;			/* defragment an image without a
					   journal (not crash-safe) */
	int compact;			/* after the moves, gather free space
					   (defrag_compact.c; never in a dry
					   run or for PATHs) */
	/* read every copy back from the medium before its switch (written
	 * back first, then O_DIRECT) and compare; off by default: a read
	 * from the page cache the copy just filled proves nothing */
	int verify;
	unsigned min_runs;		/* 0: files with more runs than e2fsck
					   or 1 + groups crossed allow; N >= 2:
					   every file of at least N runs */
	const char *const *paths;	/* NULL: the whole filesystem; else
					   these files and directory trees */
	size_t npaths;
	double max_time;		/* seconds; < 0: no limit */
	/* commit after every N files moved; 0: every 8 (defrag_run.c
	 * says why), or sooner when the journal's own policy says (a
	 * quarter of the log, or the 5 s commit interval). Crash tests set
	 * 1 so that kills land between many transactions. With N set the
	 * commit interval's timer is off: commits come after every N files
	 * (or when the log is a quarter full), the same writes on every
	 * run. */
	unsigned commit_every;
	/* no placement plan (defrag_pack.c): the per-file passes alone, as
	 * before it existed; tests set it to reach making room */
	int no_plan;
	/* set (e.g. by a signal handler) to stop at the next boundary */
	volatile sig_atomic_t *stop;
	void (*event)(void *ctx, const struct e3_defrag_event *ev);
	void *event_ctx;
	/* the block-map pictures (e3_map_svg): before any move, and after
	 * the last commit (not in a dry run: nothing moves); NULL: none.
	 * The caller opens and closes the streams. */
	FILE *map_before, *map_after;
};
void e3_defrag_opts_init(struct e3_defrag_opts *o);

struct e3_defrag_report {
	struct e3_layout before;	/* e3fsck's figures before the run */
	struct e3_layout after;		/* after (not for a dry run) */
	int have_before, have_after;
	/* dry run: e2fsck's non-contiguous share if the plan were carried
	 * out, from before's figures and the plan's moves */
	unsigned predicted_noncontig_permille;
	struct e3_defrag_stats st;
	int interrupted;		/* stopped by max_time or *stop */
	int replayed;			/* a pending journal was replayed */
	double seconds;			/* wall time of the moves */
};

/* Defragments the image at path. Returns 0 when the run finished or was
 * stopped at a boundary (rep->interrupted), else the error that ended it:
 * refusals (mounted, busy, not ext3, errors, no journal without force)
 * come before anything is written; a failure mid-run leaves the image as
 * of its last commit, which replay makes consistent with every file's
 * old or new blocks — never a mix. Free rep with e3_defrag_report_free. */
errcode_t e3_defrag_image(const char *path, const struct e3_defrag_opts *o,
			  struct e3_defrag_report *rep);
void e3_defrag_report_free(struct e3_defrag_report *rep);

#ifdef __cplusplus
}
#endif

#endif
