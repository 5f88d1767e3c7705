/*
 * check_refs.c: pass 5 — each inode's i_links_count against the entries
 * that name it (a directory's '.' and its subdirectories' '..' included);
 * inodes in use that nothing names are unattached.
 *
 * A directory with more links than i_links_count may hold past
 * EXT2_LINK_MAX (65,000: the kernel's ext4 driver stops there) counts 1,
 * which needs the dir_nlink feature, as e2fsck 1.47 judges it (learned
 * from its behaviour on ext3 images without the feature: it sets
 * dir_nlink and the count to 1). Our writers never get there: they stop
 * at the kernel ext3 driver's 32,000 (lib/fs/load_int.h).
 */
#include "check.h"

#define CHK_LINK_MAX 65000	/* EXT2_LINK_MAX */

void chk_pass_refs(struct chk_ctx *ctx)
{
	ext2_ino_t ino, first = EXT2_FIRST_INO(ctx->fs->super);
	struct e3_finding *f;
	int nlink_reported = 0;

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
		if ((st & CI_DIR) && refs > CHK_LINK_MAX) {
			if (!nlink_reported &&
			    !ext2fs_has_feature_dir_nlink(ctx->fs->super) &&
			    (f = chk_add(ctx, NULL, E3P_REF_DIR_NLINK))) {
				f->ino = ino;
				f->num = refs;
				nlink_reported = 1;	/* one feature for all */
			}
			refs = 1;
		}
		if (refs != links && (f = chk_add(ctx, NULL, E3P_REF_LINKS))) {
			f->ino = ino;
			f->num = links;
			f->num2 = refs;
		}
	}
	chk_progress(ctx, 5, ctx->ninodes, ctx->ninodes);
}
