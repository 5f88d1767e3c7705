/*
 * check_merge.c: the end of pass 2 — merge the workers' results, check
 * each extended-attribute block once (header, entries, reference count),
 * and name every owner of each block claimed twice (a serial re-walk of
 * the files that own such blocks, like e2fsck's pass 1b).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_walk.h"

static int cmp_dblk(const void *a, const void *b)
{
	const struct chk_dblk *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->lblk < y->lblk ? -1 : x->lblk > y->lblk;
}

static int cmp_ea(const void *a, const void *b)
{
	const struct chk_ea_ref *x = a, *y = b;

	if (x->blk != y->blk)
		return x->blk < y->blk ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int append(struct chk_vec *to, const struct chk_vec *from)
{
	size_t i;

	for (i = 0; i < from->n; i++)
		if (chk_vec_push(to, (const char *)from->v + i * from->size))
			return ENOMEM;
	return 0;
}

static void sum_layout(struct e3_layout *to, const struct e3_layout *l)
{
	to->fragmented_files += l->fragmented_files;
	to->fragmented_dirs += l->fragmented_dirs;
	to->ind_files += l->ind_files;
	to->dind_files += l->dind_files;
	to->tind_files += l->tind_files;
	to->files_with_blocks += l->files_with_blocks;
	to->total_runs += l->total_runs;
	for (int i = 0; i < E3_RUNS_HIST; i++)
		to->runs_hist[i] += l->runs_hist[i];
	to->total_excess += l->total_excess;
	to->files_with_excess += l->files_with_excess;
	if (l->max_runs > to->max_runs)
		to->max_runs = l->max_runs;
	if (l->max_excess > to->max_excess)
		to->max_excess = l->max_excess;
}

static int ea_entries_ok(const unsigned char *b, unsigned bs)
{
	unsigned off = sizeof(struct ext2_ext_attr_header);

	while (off + 4 <= bs && ext2fs_le32_to_cpu(*(const uint32_t *)(b + off))) {
		const struct ext2_ext_attr_entry *e = (const void *)(b + off);
		unsigned len = EXT2_EXT_ATTR_LEN(e->e_name_len);
		unsigned voff = ext2fs_le16_to_cpu(e->e_value_offs);
		unsigned vsize = ext2fs_le32_to_cpu(e->e_value_size);

		if (off + sizeof(*e) > bs || off + len > bs || !e->e_name_len)
			return 0;
		if (e->e_value_inum || voff > bs || vsize > bs - voff)
			return 0;
		off += len;
	}
	return off + 4 <= bs;
}

static void check_ea_block(struct chk_ctx *ctx, const struct chk_ea_ref *r,
			   size_t nrefs, unsigned char *buf)
{
	const struct ext2_ext_attr_header *h = (const void *)buf;
	struct e3_finding *f;
	blk64_t b = r->blk;

	if (chk_read_block(ctx, ctx->fd, b, buf) ||
	    ext2fs_le32_to_cpu(h->h_magic) != EXT2_EXT_ATTR_MAGIC ||
	    ext2fs_le32_to_cpu(h->h_blocks) != 1) {
		if ((f = chk_add(ctx, NULL, E3P_INO_EA_HEADER))) {
			f->ino = r->ino;
			f->blk = b;
		}
		return;
	}
	if (!ea_entries_ok(buf, ctx->bs) &&
	    (f = chk_add(ctx, NULL, E3P_INO_EA_ENTRY))) {
		f->ino = r->ino;
		f->blk = b;
	}
	if (ext2fs_le32_to_cpu(h->h_refcount) != nrefs &&
	    (f = chk_add(ctx, NULL, E3P_INO_EA_REFCOUNT))) {
		f->ino = r->ino;
		f->blk = b;
		f->num = ext2fs_le32_to_cpu(h->h_refcount);
		f->num2 = nrefs;
	}
	if (chk_bit(&ctx->used, b))
		chk_set(&ctx->dup, b);
	else
		chk_set(&ctx->used, b);
}

static errcode_t check_ea_blocks(struct chk_ctx *ctx)
{
	struct chk_ea_ref *r = ctx->ea.v;
	unsigned char *buf;
	size_t i, j;

	if (!ctx->ea.n)
		return 0;
	qsort(ctx->ea.v, ctx->ea.n, ctx->ea.size, cmp_ea);
	buf = malloc(ctx->bs);
	if (!buf)
		return ENOMEM;
	for (i = 0; i < ctx->ea.n; i = j) {
		for (j = i + 1; j < ctx->ea.n && r[j].blk == r[i].blk; j++)
			;
		check_ea_block(ctx, &r[i], j - i, buf);
	}
	free(buf);
	return 0;
}

/* ---- owners of blocks claimed twice ---- */

struct owner {
	blk64_t blk;
	ext2_ino_t ino;
};

struct owner_scan {
	struct chk_ctx *ctx;
	struct chk_vec owners;	/* struct owner */
	ext2_ino_t ino;
};

static int owner_visit(struct chk_walk *wk, blk64_t b, e2_blkcnt_t lblk)
{
	struct owner_scan *os = wk->arg;
	struct owner o = { b, os->ino };

	(void)lblk;
	if (chk_bit(&os->ctx->meta, b)) {
		if (lblk < 0)
			wk->skip_children = 1;
		return 0;
	}
	if (chk_bit(&os->ctx->dup, b))
		chk_vec_push(&os->owners, &o);
	return 0;
}

static int cmp_owner(const void *a, const void *b)
{
	const struct owner *x = a, *y = b;

	if (x->blk != y->blk)
		return x->blk < y->blk ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static void owners_of(struct owner_scan *os, struct chk_walk *wk,
		      ext2_ino_t ino, struct ext2_inode *in)
{
	struct owner o = { 0, ino };

	os->ino = ino;
	if (ino == EXT2_RESIZE_INO) {
		o.blk = in->i_block[EXT2_DIND_BLOCK];
		if (o.blk && chk_bit(&os->ctx->dup, o.blk))
			chk_vec_push(&os->owners, &o);
		return;
	}
	if (in->i_file_acl && chk_bit(&os->ctx->dup, in->i_file_acl)) {
		o.blk = in->i_file_acl;
		chk_vec_push(&os->owners, &o);
	}
	if (os->ctx->ist[ino] & CI_HAS_BLOCKS)
		chk_walk_blocks(wk, in);
}

static errcode_t find_dup_owners(struct chk_ctx *ctx)
{
	struct owner_scan os = { ctx, { NULL, 0, 0, sizeof(struct owner) }, 0 };
	struct chk_walk wk;
	struct owner *o;
	unsigned char *bufs;
	ext2_ino_t ino;
	size_t i, j, k;

	bufs = malloc((size_t)ctx->bs * 3);
	if (!bufs)
		return ENOMEM;
	memset(&wk, 0, sizeof(wk));
	wk.fd = ctx->fd;
	wk.bs = ctx->bs;
	wk.first_data = ctx->fs->super->s_first_data_block;
	wk.nblocks = ctx->nblocks;
	for (i = 0; i < 3; i++)
		wk.buf[i] = bufs + i * ctx->bs;
	wk.visit = owner_visit;
	wk.arg = &os;
	for (ino = 1; ino <= ctx->ninodes; ino++) {
		struct ext2_inode in;

		if (!(ctx->ist[ino] & CI_USED) ||
		    ext2fs_read_inode(ctx->fs, ino, &in))
			continue;
		if (!(ctx->ist[ino] & CI_HAS_BLOCKS) && !in.i_file_acl &&
		    ino != EXT2_RESIZE_INO)
			continue;
		owners_of(&os, &wk, ino, &in);
	}
	free(bufs);
	o = os.owners.v;
	if (os.owners.n)
		qsort(o, os.owners.n, sizeof(*o), cmp_owner);
	for (i = 0; i < os.owners.n; i = j) {
		for (j = i + 1; j < os.owners.n && o[j].blk == o[i].blk; j++)
			;
		for (k = i + 1; k < j; k++) {
			struct e3_finding *f = chk_add(ctx, NULL, E3P_INO_DUP_BLOCK);

			if (f) {
				f->blk = o[i].blk;
				f->ino = o[i].ino;
				f->ino2 = o[k].ino;
			}
		}
	}
	chk_vec_free(&os.owners);
	return 0;
}

static int any_bits(const struct chk_bits *b)
{
	uint64_t i;

	for (i = 0; i <= b->nbits / 64; i++)
		if (b->w[i])
			return 1;
	return 0;
}

static int cmp_named(const void *a, const void *b)
{
	const struct chk_dir *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The worst files' inode numbers, so pass 3 records their parents. */
static errcode_t name_worst(struct chk_ctx *ctx, const struct e3_layout *lay)
{
	unsigned i;

	for (i = 0; i < lay->n_worst_runs + lay->n_worst_excess; i++) {
		const struct e3_layout_file *lf = i < lay->n_worst_runs ?
			&lay->worst_runs[i] : &lay->worst_excess[i - lay->n_worst_runs];
		struct chk_dir d = { lf->ino, 0, 0 };

		if (!chk_dir(ctx, lf->ino) && !chk_named(ctx, lf->ino)) {
			if (chk_vec_push(&ctx->named, &d))
				return ENOMEM;
			qsort(ctx->named.v, ctx->named.n, ctx->named.size, cmp_named);
		}
	}
	return 0;
}

errcode_t chk_merge_workers(struct chk_ctx *ctx, struct chk_worker *w, int nw)
{
	struct e3_layout *lay = &ctx->rep->layout;
	uint64_t words = ctx->nblocks / 64 + 1, i;
	unsigned worst = ctx->opts.worst ? ctx->opts.worst : 10;
	struct chk_vec wr = { NULL, 0, 0, sizeof(struct e3_layout_file) };
	struct chk_vec we = wr;
	errcode_t err;
	int k, m;

	if (chk_bits_init(&ctx->used, ctx->nblocks) ||
	    chk_bits_init(&ctx->dup, ctx->nblocks))
		return ENOMEM;
	for (i = 0; i < words; i++) {
		uint64_t u = ctx->meta.w[i], d = 0;

		for (k = 0; k < nw; k++) {
			d |= w[k].dup.w[i];
			for (m = k + 1; m < nw; m++)
				d |= w[k].used.w[i] & w[m].used.w[i];
			u |= w[k].used.w[i];
		}
		ctx->used.w[i] = u;
		ctx->dup.w[i] = d;
	}
	ctx->dblks.size = sizeof(struct chk_dblk);
	ctx->ea.size = sizeof(struct chk_ea_ref);
	ctx->links.size = sizeof(struct chk_link);
	for (k = 0; k < nw; k++) {
		struct e3_finding *f = w[k].findings.v;
		size_t n;

		for (n = 0; n < w[k].findings.n; n++) {
			struct e3_finding *t = chk_add(ctx, NULL, f[n].code);

			if (t)
				*t = f[n];
		}
		if (append(&ctx->dblks, &w[k].dblks) || append(&ctx->ea, &w[k].ea) ||
		    append(&ctx->links, &w[k].links) ||
		    append(&wr, &w[k].worst_runs) || append(&we, &w[k].worst_excess))
			return ENOMEM;
		sum_layout(lay, &w[k].lay);
	}
	chk_trim_worst(&wr, worst, 0);
	chk_trim_worst(&we, worst, 1);
	lay->worst_runs = wr.v;
	lay->n_worst_runs = wr.n;
	lay->worst_excess = we.v;
	lay->n_worst_excess = we.n;
	err = chk_build_dirs(ctx);
	if (!err)
		err = name_worst(ctx, lay);
	if (err)
		return err;
	if (ctx->dblks.n)
		qsort(ctx->dblks.v, ctx->dblks.n, ctx->dblks.size, cmp_dblk);
	err = check_ea_blocks(ctx);
	if (!err && any_bits(&ctx->dup))
		err = find_dup_owners(ctx);
	return err;
}
