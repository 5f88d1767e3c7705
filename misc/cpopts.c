/*
 * cpopts.c: parsing of the copy-in options e3cp and e3mkfs share
 * (cpopts.h). Values are checked here so that a bad one is a usage error
 * before any image is touched.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpopts.h"
#include "util.h"

/* "X:Y", two numbers 0..2^32-1. */
static int parse_pair(const char *s, uint32_t *x, uint32_t *y)
{
	const char *colon = strchr(s, ':');
	uint64_t a, b;
	char first[16];
	size_t len;

	if (!colon)
		return -1;
	len = (size_t)(colon - s);
	if (len == 0 || len >= sizeof(first))
		return -1;
	memcpy(first, s, len);
	first[len] = '\0';
	if (parse_uint(first, 0, UINT32_MAX, &a) ||
	    parse_uint(colon + 1, 0, UINT32_MAX, &b))
		return -1;
	*x = (uint32_t)a;
	*y = (uint32_t)b;
	return 0;
}

static int add_map(struct e3_idmap **m, size_t *n, const char *s)
{
	struct e3_idmap *nm = realloc(*m, (*n + 1) * sizeof(**m));

	if (!nm)
		return -1;
	*m = nm;
	if (parse_pair(s, &nm[*n].from, &nm[*n].to))
		return -1;
	(*n)++;
	return 0;
}

int cpopts_parse(struct cpopts *c, struct e3_copyin_opts *o, int opt,
		 const char *arg)
{
	switch (opt) {
	case CPOPT_OWNER:
		o->set_owner = 1;
		if (parse_pair(arg, &o->owner_uid, &o->owner_gid) == 0)
			return 1;
		tool_usage_error("bad --owner '%s' (UID:GID)", arg);
		return -1;
	case CPOPT_UIDMAP:
	case CPOPT_GIDMAP:
		if (opt == CPOPT_UIDMAP ? add_map(&c->uid_map, &c->n_uid, arg) == 0
					: add_map(&c->gid_map, &c->n_gid, arg) == 0)
			return 1;
		tool_usage_error("bad map '%s' (FROM:TO)", arg);
		return -1;
	case 'D':
		o->devtab = arg;
		return 1;
	case CPOPT_OVERWRITE:
		o->overwrite = 1;
		return 1;
	case 'v':
		c->verbose = 1;
		return 1;
	case CPOPT_NO_UNPACK:
		o->no_unpack = 1;
		return 1;
	case CPOPT_KEEP_ZEROS:
		o->keep_zeros = 1;
		return 1;
	case CPOPT_FILE_CONTEXTS:
		o->file_contexts = arg;
		return 1;
	case CPOPT_SELINUX_ROOT:
		o->selinux_root = arg;
		return 1;
	default:
		return 0;
	}
}

void cpopts_finish(struct cpopts *c, struct e3_copyin_opts *o)
{
	o->uid_map = c->uid_map;
	o->n_uid_map = c->n_uid;
	o->gid_map = c->gid_map;
	o->n_gid_map = c->n_gid;
}

void cpopts_free(struct cpopts *c)
{
	free(c->uid_map);
	free(c->gid_map);
	c->uid_map = c->gid_map = NULL;
	c->n_uid = c->n_gid = 0;
}

int cpopts_show_progress(const struct e3_copyin_stats *st, double elapsed)
{
	double rate = elapsed > 0 ? (double)st->bytes / elapsed : 0;
	char of_files[32] = "", of_mib[32] = "", eta[32] = "";

	if (st->total_files)
		snprintf(of_files, sizeof(of_files), " of %" PRIu64,
			 st->total_files);
	if (st->total_bytes) {
		snprintf(of_mib, sizeof(of_mib), " of %.1f",
			 (double)st->total_bytes / 1048576.0);
		if (rate > 0 && st->bytes <= st->total_bytes)
			snprintf(eta, sizeof(eta), ", ETA %.0fs",
				 (double)(st->total_bytes - st->bytes) / rate);
	}
	fprintf(stderr, "\r%" PRIu64 "%s files, %.1f%s MiB, %.1f MiB/s%s   ",
		st->files, of_files, (double)st->bytes / 1048576.0, of_mib,
		rate / 1048576.0, eta);
	return 1;
}

void cpopts_report_skip(const char *path, errcode_t err)
{
	/* a directory made empty is not skipped: its error says it */
	if (err == E3_DIR_UNREADABLE)
		tool_error(path, err, NULL);
	else
		tool_error(path, err, "skipped");
}
