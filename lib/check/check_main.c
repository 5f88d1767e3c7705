/*
 * check_main.c: e3_check_image — runs the passes in order over one open
 * of the image, and in -p/-y mode repeats "check, fix" rounds until a
 * round fixes nothing (each fix can expose the next: a cleared entry
 * leaves an unattached inode, a reconnected inode a wrong link count),
 * then keeps the last round's findings as what is left.
 *
 * Round states: OPEN (fs open, nothing read) -> CHECKED (passes ran,
 * findings in rep) -> FIXED (fixes written, fs closed) -> OPEN again; or
 * CHECKED -> DONE when no fix applies.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fs/image.h"

void e3_check_opts_init(struct e3_check_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_noncontig = -1;
	o->max_runs = -1;
	o->max_excess_runs = -1;
}

static void free_findings(struct e3_finding *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(f[i].name);
}

static void free_layout(struct e3_layout *lay)
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

void e3_check_report_free(struct e3_check_report *rep)
{
	if (!rep)
		return;
	free_findings(rep->findings, rep->n_findings);
	free(rep->findings);
	free(rep->fatal_what);
	free_layout(&rep->layout);
	free(rep);
}

static void ctx_close(struct chk_ctx *ctx)
{
	if (ctx->fs)
		chk_close_fs(ctx);
	if (ctx->fd >= 0)
		close(ctx->fd);
	ctx->fd = -1;
	free(ctx->ist);
	ctx->ist = NULL;
	chk_vec_free(&ctx->links);
	chk_refmap_free(&ctx->refs);
	chk_vec_free(&ctx->dirs);
	chk_vec_free(&ctx->named);
	chk_bits_free(&ctx->meta);
	chk_bits_free(&ctx->used);
	chk_bits_free(&ctx->dup);
	chk_vec_free(&ctx->dblks);
	chk_vec_free(&ctx->ea);
	free(ctx->dropped);
	ctx->dropped = NULL;
	ctx->lost_found = 0;
}

/* The passes over the open image, in e2fsck's order. */
static errcode_t run_passes(struct chk_ctx *ctx)
{
	errcode_t err;

	chk_pass_super(ctx);
	err = chk_mark_metadata(ctx);
	if (!err)
		err = chk_pass_inodes(ctx);
	if (!err)
		err = chk_pass_dirs(ctx);
	if (err)
		return err;
	chk_pass_connect(ctx);
	chk_pass_refs(ctx);
	err = chk_pass_bitmaps(ctx);
	if (!err)
		chk_pass_layout(ctx);
	return err;
}

int chk_finding_is_error(const struct e3_finding *f)
{
	const struct e3_problem *p = e3_problem(f->code);

	/* an unset file type is no error (e2fsck sets it silently); the
	 * error state is why the check runs, not an error of its own; a
	 * journal not recreated leaves a valid filesystem without one. As
	 * e2fsck -n, a read-only check that had to use a backup superblock,
	 * that skipped a pending replay (or a log needs_recovery does not
	 * announce), or that found the image shorter than the filesystem
	 * says so and judges the rest (exit 0 if clean) */
	return !f->fixed && p && p->pass != 8 && f->code != E3P_JNL_EXTERNAL &&
	       f->code != E3P_JNL_NOT_RECREATED &&
	       f->code != E3P_JNL_OLD_STYLE &&	/* valid: e2fsck -n is clean */
	       f->code != E3P_DIR_SET_FILETYPE &&
	       f->code != E3P_SB_ERROR_STATE && f->code != E3P_JNL_ERRNO &&
	       f->code != E3P_SB_UNUSABLE && f->code != E3P_JNL_PENDING &&
	       f->code != E3P_JNL_DATA_NO_RECOVER &&
	       /* e2fsck's PR_NO_OK: a wrong total in the superblock alone
	        * leaves -n's verdict clean (the group counts do not) */
	       f->code != E3P_SB_FREE_BLOCKS && f->code != E3P_SB_FREE_INODES &&
	       f->code != E3P_SB_TRUNCATED;
}

/* Moves the fixed findings of a round into keep, drops the rest (the
 * next round finds again whatever is left). */
static int keep_fixed(struct e3_check_report *rep, struct chk_vec *keep)
{
	size_t i;

	for (i = 0; i < rep->n_findings; i++) {
		if (rep->findings[i].fixed) {
			if (chk_vec_push(keep, &rep->findings[i]))
				return ENOMEM;
		} else {
			free(rep->findings[i].name);
		}
	}
	rep->n_findings = 0;
	free_layout(&rep->layout);
	return 0;
}

static errcode_t prepend(struct e3_check_report *rep, struct chk_vec *keep)
{
	struct e3_finding *n;

	if (!keep->n)
		return 0;
	n = malloc((keep->n + rep->n_findings + 1) * sizeof(*n));
	if (!n)
		return ENOMEM;
	memcpy(n, keep->v, keep->n * sizeof(*n));
	if (rep->n_findings)
		memcpy(n + keep->n, rep->findings, rep->n_findings * sizeof(*n));
	free(rep->findings);
	rep->findings = n;
	rep->n_findings += keep->n;
	rep->cap_findings = rep->n_findings + 1;
	chk_vec_free(keep);
	return 0;
}

static void exit_code(struct e3_check_report *rep)
{
	size_t i;

	rep->n_fixed = rep->n_unfixed = 0;
	for (i = 0; i < rep->n_findings; i++) {
		/* clearing the error state alone is no repair (e2fsck
		 * exits 0 then) */
		if (rep->findings[i].fixed &&
		    rep->findings[i].code != E3P_SB_ERROR_STATE &&
		    rep->findings[i].code != E3P_JNL_ERRNO)
			rep->n_fixed++;
		else if (chk_finding_is_error(&rep->findings[i]))
			rep->n_unfixed++;
	}
	rep->exit_code = 0;
	if (rep->fatal)
		rep->exit_code |= E3_EXIT_ERROR;
	if (rep->n_fixed || rep->state_changed)
		rep->exit_code |= E3_EXIT_FIXED;
	/* -p stopped at a problem that needs -y: that problem is left,
	 * whether or not it is one -n would call an error */
	if (rep->n_unfixed || rep->preen_refused)
		rep->exit_code |= E3_EXIT_UNCORRECTED;
	if (rep->layout.gate_failed)
		rep->exit_code |= E3_EXIT_LAYOUT;
	/* e2fsck: errors left after a failed write clear "fixed" (12) */
	if (rep->write_failed && (rep->exit_code & E3_EXIT_UNCORRECTED))
		rep->exit_code &= ~E3_EXIT_FIXED;
}

/* A write of this round failed (check_io.c): none of its fixes can be
 * trusted to be on disk, so none is reported fixed, and the run stops
 * with an operational error, as e2fsck's does when a write fails (its
 * fatal_error: exit 8, 12 with errors left). Earlier rounds' fixes were
 * written out before this round opened the image again, and stay fixed. */
static void round_not_written(struct chk_ctx *ctx, errcode_t err)
{
	struct e3_check_report *rep = ctx->rep;

	for (size_t i = 0; i < rep->n_findings; i++)
		rep->findings[i].fixed = 0;
	rep->state_changed = 0;
	rep->write_failed = 1;
	if (!rep->fatal) {
		rep->fatal = 1;
		rep->fatal_err = err;
		free(rep->fatal_what);
		rep->fatal_what = strdup("writing the repairs");
	}
}

#define MAX_ROUNDS 6

static errcode_t check_rounds(struct chk_ctx *ctx)
{
	struct e3_check_report *rep = ctx->rep;
	struct chk_vec keep = { NULL, 0, 0, sizeof(struct e3_finding) };
	errcode_t err = 0, werr;

	for (rep->rounds = 1;; rep->rounds++) {
		/* past MAX_ROUNDS, one more look that fixes nothing, so what
		 * the fixes could not settle is still reported. The rounds
		 * that clear and recreate an invalid journal are not counted:
		 * other fixes cannot use them up and leave the journal not
		 * recreated (if they do not settle, chk_journal_left says so) */
		int last = rep->rounds > MAX_ROUNDS + ctx->jnl_rounds;

		ctx->fd = -1;
		ctx->changed = 0;
		ctx->io.write_err = 0;
		ctx->jnl_clear = 0;
		err = chk_open(ctx);
		if (err)
			break;
		err = chk_pass_journal(ctx);
		if (last)	/* fixes nothing: see inode 8 as it is */
			ctx->jnl_clear = 0;
		if (!err && !ctx->changed)
			err = run_passes(ctx);
		if (!err && ctx->opts.mode != E3_CHECK_READONLY && !ctx->changed) {
			ctx->fixing = 1;
			if (last)
				chk_mark_state(ctx);
			else
				err = chk_apply_fixes(ctx);
			ctx->fixing = 0;
		}
		werr = chk_close_fs(ctx);
		ctx_close(ctx);
		if (werr) {
			round_not_written(ctx, werr);
			break;
		}
		if (err || !ctx->changed || last)
			break;
		err = keep_fixed(rep, &keep);
		if (err)
			break;
		/* the round wrote the primary superblock and descriptors
		 * (from the backup -b named): check what it wrote */
		ctx->opts.superblock = 0;
		ctx->opts.blocksize = 0;
	}
	if (!err)
		chk_journal_left(ctx);
	if (!err)
		err = prepend(rep, &keep);
	chk_vec_free(&keep);
	return err;
}

/* The image lock, held from before the first read to after the last
 * write of every round, as e3cp and e3mkfs hold theirs: -p/-y take the
 * writer's (exclusive) and refuse a mounted image, -n the reader's
 * (shared with other readers, never with a writer) and refuses a mounted
 * one too — unless force_read: a live filesystem, or one an e3cp is half
 * way through, reads as damage that is not there (or hides some), and a
 * verdict on it means nothing. The report says what was found. */
static errcode_t lock_image(struct chk_ctx *ctx)
{
	int write = ctx->opts.mode != E3_CHECK_READONLY;
	int anyway = !write && ctx->opts.force_read;
	int ro = 0;
	errcode_t err;

	if (ctx->opts.lock_held)
		return write ? E3_BAD_OPTION : 0;
	ctx->lock_fd = open(ctx->path, O_RDONLY | O_CLOEXEC);
	if (ctx->lock_fd < 0)
		return errno;
	err = e3_image_flock(ctx->lock_fd, write);
	if (err == E3_IMAGE_LOCKED) {
		ctx->rep->in_use = 1;
		if (anyway)
			err = 0;
	}
	if (err)
		return err;
	err = e3_image_check_mounted(ctx->path, &ro);
	if (err == E3_MOUNTED) {
		ctx->rep->mounted = ro ? E3_MOUNT_RO : E3_MOUNT_RW;
		if (anyway)
			err = 0;
	}
	return err;
}

errcode_t e3_check_image(const char *path, const struct e3_check_opts *opts,
			 struct e3_check_report **ret)
{
	struct chk_ctx ctx;
	errcode_t err;

	*ret = NULL;
	memset(&ctx, 0, sizeof(ctx));
	ctx.fd = -1;
	ctx.lock_fd = -1;
	ctx.path = path;
	ctx.opts = *opts;
	ctx.rep = calloc(1, sizeof(*ctx.rep));
	if (!ctx.rep)
		return ENOMEM;
	err = e3_fault_parse(&ctx.io.fault, getenv("E3_FAULT"));
	if (!err)
		err = lock_image(&ctx);
	if (!err)
		err = check_rounds(&ctx);
	ctx_close(&ctx);
	if (ctx.lock_fd >= 0)
		close(ctx.lock_fd);	/* drops the lock, after the last write */
	if (err && !ctx.rep->fatal) {
		ctx.rep->fatal = 1;
		ctx.rep->fatal_err = err;
	}
	ctx.rep->preen_refused = ctx.preen_refused;
	exit_code(ctx.rep);
	*ret = ctx.rep;
	return err;
}
