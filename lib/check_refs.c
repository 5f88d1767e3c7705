/*
 * check_refs.c: pass 5 — each inode's i_links_count against the entries
 * that name it (a directory's '.' and its subdirectories' '..' included);
 * inodes in use that nothing names are unattached.
 */
#include "check.h"

void chk_pass_refs(struct chk_ctx *ctx)
{
	ext2_ino_t ino, first = EXT2_FIRST_INO(ctx->fs->super);
	struct e3_finding *f;

	chk_progress(ctx, 5, 0, ctx->ninodes);
	for (ino = EXT2_ROOT_INO; ino <= ctx->ninodes; ino++) {
		struct chk_ino *ci = &ctx->ino[ino];

		if (ino < first && ino != EXT2_ROOT_INO)
			continue;
		if ((ci->flags & (CI_USED | CI_BAD)) != CI_USED)
			continue;
		if (!ci->refs) {
			if (ci->flags & CI_DIR)
				continue;	/* pass 4 reported it */
			f = chk_add(ctx, NULL, ((ci->flags & CI_HAS_BLOCKS) ||
					   !LINUX_S_ISREG(ci->mode)) ?
				    E3P_REF_UNATTACHED : E3P_REF_UNATTACHED_EMPTY);
			if (f) {
				f->ino = ino;
				f->num = ci->links;
			}
			continue;
		}
		if ((ci->flags & CI_DIR) && !(ci->flags & CI_REACHED))
			continue;
		if (ci->refs != ci->links && (f = chk_add(ctx, NULL, E3P_REF_LINKS))) {
			f->ino = ino;
			f->num = ci->links;
			f->num2 = ci->refs;
		}
	}
	chk_progress(ctx, 5, ctx->ninodes, ctx->ninodes);
}
