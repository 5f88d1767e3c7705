/*
 * defrag_layout.c: e3_layout_measure — the layout figures e3fsck --layout
 * prints, for e3defrag's before/after report. It runs the checker itself
 * (read-only, layout pass on) and keeps only the layout part of its
 * report: the runs of every file are counted in the checker's pass 2, in
 * e2fsck's block order, and nowhere else, so the two tools cannot drift
 * apart. A full read-only check also tells the defragmenter whether the
 * image is sound enough to move blocks around in (blocks claimed twice,
 * say, would be copied into one place and freed twice).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e3img.h"

void e3_layout_free(struct e3_layout *lay)
{
	unsigned i;

	for (i = 0; i < lay->n_worst_runs; i++)
		free(lay->worst_runs[i].path);
	for (i = 0; i < lay->n_worst_excess; i++)
		free(lay->worst_excess[i].path);
	free(lay->worst_runs);
	free(lay->worst_excess);
	memset(lay, 0, sizeof(*lay));
}

uint32_t e3_layout_runs_pct(const struct e3_layout *lay, unsigned pct)
{
	uint64_t n = 0, rank, seen = 0;

	for (int i = 0; i < E3_RUNS_HIST; i++)
		n += lay->runs_hist[i];
	if (!n)
		return 0;
	/* nearest rank: the smallest value with at least pct% at or below */
	rank = (n * pct + 99) / 100;
	if (!rank)
		rank = 1;
	for (uint32_t i = 0; i < E3_RUNS_HIST; i++) {
		seen += lay->runs_hist[i];
		if (seen >= rank)
			return i;
	}
	return E3_RUNS_HIST - 1;
}

errcode_t e3_layout_measure(const char *path, struct e3_layout *lay,
			    int *errors)
{
	struct e3_check_opts o;
	struct e3_check_report *rep = NULL;
	errcode_t err;

	memset(lay, 0, sizeof(*lay));
	e3_check_opts_init(&o);
	o.mode = E3_CHECK_READONLY;
	o.layout = 1;
	o.lock_held = 1;	/* see e3_defrag.h: the caller's to hold */
	err = e3_check_image(path, &o, &rep);
	if (!rep)
		return err ? err : ENOMEM;
	if (errors)
		*errors = rep->fatal || rep->n_unfixed || rep->journal_pending;
	if (!err && rep->fatal)
		err = rep->fatal_err ? rep->fatal_err : E3_CORRUPT;
	/* the layout moves out of the report: its arrays are ours now */
	*lay = rep->layout;
	memset(&rep->layout, 0, sizeof(rep->layout));
	e3_check_report_free(rep);
	return err;
}
