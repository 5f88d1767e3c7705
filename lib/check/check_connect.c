/*
 * check_connect.c: pass 4 — every directory reachable from the root
 * through the entries that name it, no loops, each '..' naming the parent,
 * and /lost+found present.
 */
#include <stdlib.h>

#include "check.h"

static struct e3_finding *cadd(struct chk_ctx *ctx, int code, ext2_ino_t ino)
{
	struct e3_finding *f = chk_add(ctx, NULL, code);

	if (f)
		f->ino = ino;
	return f;
}

static int is_dir(struct chk_ctx *ctx, ext2_ino_t ino)
{
	return (ctx->ist[ino] & (CI_USED | CI_DIR | CI_BAD)) == (CI_USED | CI_DIR);
}

/* Walks up from dir d through parents; marks the path reached when it
 * ends at the root or at a reached directory, else reports the top of the
 * chain (no parent, or a loop) once. */
static void reach(struct chk_ctx *ctx, ext2_ino_t d, ext2_ino_t *path)
{
	ext2_ino_t cur = d, n = 0;
	struct e3_finding *f;

	while (n <= ctx->ninodes) {
		ext2_ino_t parent = chk_parent(ctx, cur);

		if (cur == EXT2_ROOT_INO || (ctx->ist[cur] & CI_REACHED))
			break;
		path[n++] = cur;
		ctx->ist[cur] |= CI_REACHED;	/* visited: stops loops */
		if (!parent || !is_dir(ctx, parent)) {
			if ((f = cadd(ctx, E3P_CONN_UNREACHABLE, cur)))
				f->ino2 = parent;
			break;
		}
		cur = parent;
	}
}

void chk_pass_connect(struct chk_ctx *ctx)
{
	ext2_ino_t ino, *path;
	struct e3_finding *f;

	chk_progress(ctx, 4, 0, 1);
	if (!(ctx->ist[EXT2_ROOT_INO] & CI_USED) || !chk_dir(ctx, EXT2_ROOT_INO)) {
		cadd(ctx, CI_TYPE(ctx->ist[EXT2_ROOT_INO]) == EXT2_FT_DIR ?
		     E3P_CONN_ROOT_MISSING : E3P_CONN_ROOT_NOT_DIR, EXT2_ROOT_INO);
		return;
	}
	path = malloc(sizeof(*path) * ((size_t)ctx->ninodes + 1));
	if (!path)
		return;
	ctx->ist[EXT2_ROOT_INO] |= CI_REACHED;
	chk_dir(ctx, EXT2_ROOT_INO)->parent = EXT2_ROOT_INO;
	for (ino = 1; ino <= ctx->ninodes; ino++) {
		if (!is_dir(ctx, ino))
			continue;
		if (!(ctx->ist[ino] & CI_HAS_BLOCKS)) {
			cadd(ctx, E3P_DIR_MISSING_DOT, ino);
			continue;
		}
		if (!(ctx->ist[ino] & CI_REACHED))
			reach(ctx, ino, path);
	}
	free(path);
	/* a loop leaves every member marked but with the top reported; '..'
	 * is checked for every directory that has a parent entry */
	for (ino = 1; ino <= ctx->ninodes; ino++) {
		struct chk_dir *d = chk_dir(ctx, ino);

		if (!d || !is_dir(ctx, ino) || !(ctx->ist[ino] & CI_HAS_BLOCKS) ||
		    !d->parent)
			continue;
		if (d->dotdot != d->parent && (f = cadd(ctx, E3P_CONN_DOTDOT, ino))) {
			f->ino2 = d->dotdot;
			f->num = d->parent;
		}
	}
	if (!ctx->lost_found)
		cadd(ctx, E3P_CONN_NO_LOSTFOUND, 0);
	else if (!is_dir(ctx, ctx->lost_found))
		cadd(ctx, E3P_CONN_LOSTFOUND_NOT_DIR, ctx->lost_found);
	chk_progress(ctx, 4, 1, 1);
}
