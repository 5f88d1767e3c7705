/*
 * check_layout.c: pass 8 — the layout figures: e2fsck's summary (files,
 * non-contiguous share with e2fsck's rounding, blocks), runs and excess
 * runs per file (summed in pass 2), free-space fragmentation like
 * e2freefrag, and the --max-* gates naming the worst files.
 *
 * The figures themselves (runs, groups crossed, free extents) are
 * lib/inspect's, shared with e3defrag and e3debugfs (e3_inspect.h); the
 * walk that feeds them is pass 2's, and the free-space scan reads this
 * check's own block map, not the image's bitmap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "e3_inspect.h"

static void free_space(struct chk_ctx *ctx, struct e3_layout *lay)
{
	blk64_t b, first = ctx->fs->super->s_first_data_block, len = 0;

	lay->free_min = 0;
	for (b = first; b <= ctx->nblocks; b++) {
		if (b + 64 <= ctx->nblocks) {	/* whole words at a time */
			uint64_t w = chk_bits64(&ctx->used, b);

			if (!w) {
				len += 64;
				b += 63;
				continue;
			}
			if (w == ~0ull && !len) {
				b += 63;
				continue;
			}
		}
		if (b < ctx->nblocks && !chk_bit(&ctx->used, b)) {
			len++;
			continue;
		}
		e3_free_extent_add(lay, len);
		len = 0;
	}
}

static void name_files(struct chk_ctx *ctx, struct e3_layout_file *lf,
		       unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		ext2_ino_t parent = chk_parent(ctx, lf[i].ino);
		char *name = NULL;

		if (lf[i].path)
			continue;
		if (lf[i].ino == EXT2_JOURNAL_INO)
			lf[i].path = strdup("<journal>");
		else if (parent && !ext2fs_get_pathname(ctx->fs, parent,
						       lf[i].ino, &name)) {
			lf[i].path = strdup(name);
			ext2fs_free_mem(&name);
		}
	}
}

static void gate(struct chk_ctx *ctx, int code, const struct e3_layout_file *lf,
		 uint64_t have, uint64_t limit)
{
	struct e3_finding *f = chk_add(ctx, NULL, code);

	if (!f)
		return;
	f->ino = lf->ino;
	f->num = have;
	f->num2 = limit;
	f->name = strdup(lf->path ? lf->path : "?");
}

static void gates(struct chk_ctx *ctx, struct e3_layout *lay)
{
	const struct e3_check_opts *o = &ctx->opts;
	struct e3_finding *f;
	unsigned i;
	char pct[32];

	if (o->max_noncontig >= 0 &&
	    lay->noncontig_permille > o->max_noncontig * 10 + 1e-9) {
		lay->gate_failed |= 1;
		if ((f = chk_add(ctx, NULL, E3P_LAYOUT_NONCONTIG))) {
			snprintf(pct, sizeof(pct), "%u.%u",
				 lay->noncontig_permille / 10,
				 lay->noncontig_permille % 10);
			f->num = lay->fragmented_files + lay->fragmented_dirs;
			f->name = strdup(pct);
		}
		for (i = 0; i < lay->n_worst_runs && i < 10; i++)
			gate(ctx, E3P_LAYOUT_RUNS, &lay->worst_runs[i],
			     lay->worst_runs[i].runs, 1);
	}
	if (o->max_runs >= 0 && lay->max_runs > o->max_runs) {
		lay->gate_failed |= 2;
		for (i = 0; i < lay->n_worst_runs; i++)
			if (lay->worst_runs[i].runs > o->max_runs)
				gate(ctx, E3P_LAYOUT_RUNS, &lay->worst_runs[i],
				     lay->worst_runs[i].runs, o->max_runs);
	}
	if (o->max_excess_runs >= 0 && lay->max_excess > o->max_excess_runs) {
		lay->gate_failed |= 4;
		for (i = 0; i < lay->n_worst_excess; i++)
			if (lay->worst_excess[i].excess > o->max_excess_runs)
				gate(ctx, E3P_LAYOUT_EXCESS, &lay->worst_excess[i],
				     lay->worst_excess[i].excess,
				     o->max_excess_runs);
	}
}

void chk_pass_layout(struct chk_ctx *ctx)
{
	struct e3_layout *lay = &ctx->rep->layout;
	struct ext2_super_block *sb = ctx->fs->super;
	uint64_t frag;

	chk_progress(ctx, 8, 0, 1);
	lay->inodes_count = sb->s_inodes_count;
	lay->inodes_used = sb->s_inodes_count - sb->s_free_inodes_count;
	lay->blocks_count = ext2fs_blocks_count(sb);
	lay->blocks_used = lay->blocks_count - ext2fs_free_blocks_count(sb);
	frag = lay->fragmented_files + lay->fragmented_dirs;
	/* e2fsck's show_stats: per ten-thousand, then rounded to per mille */
	lay->noncontig_permille = lay->inodes_used ?
		(unsigned)(((10000 * frag) / lay->inodes_used + 5) / 10) : 0;
	free_space(ctx, lay);
	name_files(ctx, lay->worst_runs, lay->n_worst_runs);
	name_files(ctx, lay->worst_excess, lay->n_worst_excess);
	gates(ctx, lay);
	chk_progress(ctx, 8, 1, 1);
}
