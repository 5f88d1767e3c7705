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
		uint16_t st = ctx->ist[ino];
		uint32_t refs, links;

		if (ino < first && ino != EXT2_ROOT_INO)
			continue;
		if ((st & (CI_USED | CI_BAD)) != CI_USED)
			continue;
		refs = chk_refs(ctx, ino);
		links = chk_links(ctx, ino);
		if (!refs) {
			if (st & CI_DIR)
				continue;	/* pass 4 reported it */
			f = chk_add(ctx, NULL, ((st & CI_HAS_BLOCKS) ||
					   CI_TYPE(st) != EXT2_FT_REG_FILE) ?
				    E3P_REF_UNATTACHED : E3P_REF_UNATTACHED_EMPTY);
			if (f) {
				f->ino = ino;
				f->num = links;
			}
			continue;
		}
		if ((st & CI_DIR) && !(st & CI_REACHED))
			continue;
		if (refs != links && (f = chk_add(ctx, NULL, E3P_REF_LINKS))) {
			f->ino = ino;
			f->num = links;
			f->num2 = refs;
		}
	}
	chk_progress(ctx, 5, ctx->ninodes, ctx->ninodes);
}
