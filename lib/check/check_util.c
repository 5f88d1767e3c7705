/*
 * check_util.c: the checker's small helpers — growable arrays, bit arrays,
 * raw reads, and adding findings to the report.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

int chk_vec_push(struct chk_vec *v, const void *item)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		void *n = realloc(v->v, cap * v->size);

		if (!n)
			return ENOMEM;
		v->v = n;
		v->cap = cap;
	}
	memcpy((char *)v->v + v->n * v->size, item, v->size);
	v->n++;
	return 0;
}

void chk_vec_free(struct chk_vec *v)
{
	free(v->v);
	v->v = NULL;
	v->n = v->cap = 0;
}

int chk_bits_init(struct chk_bits *b, uint64_t nbits)
{
	b->nbits = nbits;
	b->w = calloc(nbits / 64 + 2, sizeof(uint64_t));	/* chk_bits64 reads one past */
	return b->w ? 0 : ENOMEM;
}

void chk_bits_free(struct chk_bits *b)
{
	free(b->w);
	b->w = NULL;
	b->nbits = 0;
}

struct e3_finding *chk_add(struct chk_ctx *ctx, struct chk_vec *v, int code)
{
	struct e3_check_report *rep = ctx->rep;
	struct e3_finding f;

	memset(&f, 0, sizeof(f));
	f.code = code;
	if (v) {
		if (chk_vec_push(v, &f))
			return NULL;
		return (struct e3_finding *)v->v + v->n - 1;
	}
	if (rep->n_findings == rep->cap_findings) {
		size_t cap = rep->cap_findings ? rep->cap_findings * 2 : 32;
		struct e3_finding *n = realloc(rep->findings, cap * sizeof(*n));

		if (!n)
			return NULL;
		rep->findings = n;
		rep->cap_findings = cap;
	}
	rep->findings[rep->n_findings] = f;
	return &rep->findings[rep->n_findings++];
}

int chk_pread(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0) {	/* past the end of a truncated image: zeros */
			memset((char *)buf + done, 0, len - done);
			return EXT2_ET_SHORT_READ;
		}
		done += n;
	}
	return 0;
}

int chk_read_block(struct chk_ctx *ctx, int fd, blk64_t blk, void *buf)
{
	return chk_pread(fd, buf, ctx->bs, (uint64_t)blk * ctx->bs);
}

int chk_may_fix(struct chk_ctx *ctx, int code)
{
	const struct e3_problem *p = e3_problem(code);

	if (!ctx->fixing || !p || p->fix == E3_FIX_NEVER)
		return 0;
	if (p->fix == E3_FIX_PREEN)
		return ctx->opts.mode >= E3_CHECK_PREEN;
	return ctx->opts.mode >= E3_CHECK_YES;
}

void chk_progress(struct chk_ctx *ctx, int pass, uint64_t done, uint64_t total)
{
	struct e3_check_progress p = { pass, done, total };

	if (ctx->opts.progress)
		ctx->opts.progress(&p, ctx->opts.progress_arg);
}
