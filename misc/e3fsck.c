/*
 * e3fsck.c: check (and with -p/-y repair) an ext2/ext3 image, verify its
 * layout against gates, and report in e2fsck's words and exit codes, or
 * as JSON. The checking itself is lib/check_*.c; this file parses options
 * and prints.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

struct args {
	struct e3_check_opts o;
	const char *image;
	int verbose, json, layout;
};

static void usage(FILE *to)
{
	fprintf(to,
"usage: %s [-n|-p|-a|-y] [-f] [-v] [-b SUPERBLOCK] [-B BLOCKSIZE]\n"
"       [-j EXTERNAL_JOURNAL] [--jobs N]\n"
"       [--layout] [--json] [--max-noncontig PCT] [--max-runs N]\n"
"       [--max-excess-runs N] [--worst N] [--force-read] IMAGE\n"
"  -n  check only, never write (the default)\n"
"  --force-read  with -n: check a mounted or busy image anyway\n"
"  -p  replay the journal and fix what is safe without asking (-a: same)\n"
"  -y  fix everything that can be fixed\n"
"  -f  accepted for compatibility (every run is a full check)\n"
"  -j  the external journal's device or image (as e2fsck's -j)\n"
"  --jobs N  inode-table scan workers, 1 to 8 (default: up to 2)\n"
"  --layout  print the layout figures (runs per file, excess runs, free\n"
"            space fragmentation, the worst files)\n"
"  --json    one JSON object on stdout instead of text\n"
"  --max-noncontig PCT  layout gate: fail (64) above PCT%% non-contiguous\n"
"  --max-runs N         layout gate: fail when a file has over N runs\n"
"  --max-excess-runs N  layout gate: fail when a file has over N excess runs\n"
"  --worst N            how many of the worst files to name (default 10)\n"
"  --version            print the version\n"
"exit: 0 clean, 1 fixed, 4 errors left, 8 operational error, 16 usage,\n"
"      64 a layout gate failed (bits are ORed)\n", tool_name());
}

enum { OPT_LAYOUT = 256, OPT_JSON, OPT_NONCONTIG, OPT_RUNS, OPT_EXCESS,
       OPT_WORST, OPT_FORCE_READ, OPT_JOBS };

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option lopts[] = {
		{ "layout", no_argument, NULL, OPT_LAYOUT },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "max-noncontig", required_argument, NULL, OPT_NONCONTIG },
		{ "max-runs", required_argument, NULL, OPT_RUNS },
		{ "max-excess-runs", required_argument, NULL, OPT_EXCESS },
		{ "worst", required_argument, NULL, OPT_WORST },
		{ "force-read", no_argument, NULL, OPT_FORCE_READ },
		{ "jobs", required_argument, NULL, OPT_JOBS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t v;
	char *end;
	int c, modes = 0;

	e3_check_opts_init(&a->o);
	opterr = 0;	/* tool_getopt_error says it, on one line */
	while ((c = getopt_long(argc, argv, ":npayfvb:B:j:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'n': a->o.mode = E3_CHECK_READONLY; modes++; break;
		case 'p': case 'a': a->o.mode = E3_CHECK_PREEN; modes++; break;
		case 'y': a->o.mode = E3_CHECK_YES; modes++; break;
		case 'f': break;
		case 'v': a->verbose = 1; break;
		case OPT_LAYOUT: a->layout = 1; break;
		case OPT_JSON: a->json = 1; break;
		case OPT_FORCE_READ: a->o.force_read = 1; break;
		case 'b':
			if (parse_uint(optarg, 1, UINT32_MAX, &v))
				goto bad;
			a->o.superblock = v;
			break;
		case 'B':
			if (parse_uint(optarg, 1024, 65536, &v) || (v & (v - 1)))
				goto bad;
			a->o.blocksize = v;
			break;
		case 'j':	/* e2fsck's meaning: the journal's device */
			a->o.journal_dev = optarg;
			break;
		case OPT_JOBS:
			if (parse_uint(optarg, 1, 8, &v))
				goto bad;
			a->o.threads = v;
			break;
		case OPT_NONCONTIG:
			a->o.max_noncontig = strtod(optarg, &end);
			if (*end || end == optarg || a->o.max_noncontig < 0 ||
			    a->o.max_noncontig > 100)
				goto bad;
			break;
		case OPT_RUNS: case OPT_EXCESS:
			if (parse_uint(optarg, 0, UINT32_MAX, &v))
				goto bad;
			if (c == OPT_RUNS)
				a->o.max_runs = v;
			else
				a->o.max_excess_runs = v;
			break;
		case OPT_WORST:
			if (parse_uint(optarg, 1, 1000, &v))
				goto bad;
			a->o.worst = v;
			break;
		case 'h': usage(stdout); exit(0);
		case 'V': tool_version(); exit(0);
		default: tool_getopt_error(argv, c); return -1;
		}
	}
	if (modes > 1) {
		tool_usage_error("only one of -n, -p/-a and -y");
		return -1;
	}
	/* a repair never writes under a kernel or another e3img process */
	if (a->o.force_read && a->o.mode != E3_CHECK_READONLY) {
		tool_usage_error("--force-read goes with -n only");
		return -1;
	}
	if (optind != argc - 1) {
		tool_usage_error("one image expected");
		return -1;
	}
	a->image = argv[optind];
	a->o.layout = 1;
	return 0;
bad:
	if (c == OPT_JOBS)
		tool_usage_error("bad value for --jobs: '%s'", optarg);
	else
		tool_usage_error("bad value for -%c: '%s'", c < 256 ? c : '-', optarg);
	return -1;
}

static void progress(const struct e3_check_progress *p, void *arg)
{
	static const char *names[] = { "", "superblock", "inodes",
		"directories", "connectivity", "reference counts", "bitmaps",
		"journal", "layout" };
	(void)arg;
	fprintf(stderr, "\rPass %d (%s): %3u%%\033[K", p->pass,
		names[p->pass < 9 ? p->pass : 0],
		p->total ? (unsigned)(p->done * 100 / p->total) : 100);
	if (p->pass == 8 && p->done == p->total)
		fputs("\r\033[K", stderr);
}

static const char *fix_word(const struct e3_finding *f, enum e3_check_mode m)
{
	const struct e3_problem *p = e3_problem(f->code);

	if (!p || p->fix == E3_FIX_NEVER || !p->fix_msg)
		return NULL;
	(void)m;
	return p->fix_msg;
}

static void print_findings(const struct args *a, const struct e3_check_report *r)
{
	char msg[512];
	size_t i;

	for (i = 0; i < r->n_findings; i++) {
		const struct e3_finding *f = &r->findings[i];
		const struct e3_problem *p = e3_problem(f->code);
		const char *fix = fix_word(f, a->o.mode);

		e3_finding_format(f, msg, sizeof(msg));
		printf("%s: pass %d: %s", a->image, p ? p->pass : 0, msg);
		if (f->fixed)
			printf(": fixed (%s)", fix ? fix : "done");
		else if (fix && p->pass != 8 && (a->o.mode == E3_CHECK_READONLY ||
			 (a->o.mode == E3_CHECK_PREEN && p->fix == E3_FIX_YES)))
			printf(": not fixed (%s with -%s)", fix,
			       p->fix == E3_FIX_PREEN ? "p or -y" : "y");
		else if (fix && p->pass != 8)	/* the mode's fix did not take */
			printf(": not fixed");
		putchar('\n');
	}
}

static void print_layout(const struct e3_layout *l)
{
	unsigned i;

	printf("\n%8u inodes used (%.2f%%)\n", l->inodes_used,
	       l->inodes_count ? 100.0 * l->inodes_used / l->inodes_count : 0);
	printf("%8u non-contiguous files, %u non-contiguous directories\n",
	       l->fragmented_files, l->fragmented_dirs);
	printf("         # of inodes with ind/dind/tind blocks: %u/%u/%u\n",
	       l->ind_files, l->dind_files, l->tind_files);
	printf("%8" PRIu64 " files with blocks: %.2f runs per file, worst %u\n",
	       l->files_with_blocks, l->files_with_blocks ?
	       (double)l->total_runs / l->files_with_blocks : 0, l->max_runs);
	printf("%8u files with excess runs (%" PRIu64 " in all), worst %u\n",
	       l->files_with_excess, l->total_excess, l->max_excess);
	for (i = 0; i < l->n_worst_runs; i++)
		printf("         runs %u, groups %u, blocks %" PRIu64 ": inode %u %s\n",
		       l->worst_runs[i].runs, l->worst_runs[i].groups,
		       l->worst_runs[i].blocks, l->worst_runs[i].ino,
		       l->worst_runs[i].path ? l->worst_runs[i].path : "");
	printf("%8" PRIu64 " free blocks in %" PRIu64 " free extents "
	       "(min %" PRIu64 ", max %" PRIu64 ", avg %.1f blocks)\n",
	       l->free_blocks, l->free_extents, l->free_min, l->free_max,
	       l->free_extents ? (double)l->free_blocks / l->free_extents : 0);
	printf("         free extent sizes (blocks): extents / blocks / %%\n");
	for (i = 0; i < E3_FREEFRAG_BUCKETS; i++)
		if (l->hist_extents[i])
			printf("         %10" PRIu64 "-%-10" PRIu64 ": %8" PRIu64
			       " %10" PRIu64 " %6.2f%%\n", (uint64_t)1 << i,
			       ((uint64_t)2 << i) - 1, l->hist_extents[i],
			       l->hist_blocks[i], l->free_blocks ?
			       100.0 * l->hist_blocks[i] / l->free_blocks : 0);
}

/* ---- --json ---- */

static void jstr(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void json_files(FILE *out, const char *key,
		       const struct e3_layout_file *f, unsigned n)
{
	unsigned i;

	fprintf(out, ",\n    \"%s\": [", key);
	for (i = 0; i < n; i++) {
		fprintf(out, "%s\n      {\"ino\": %u, \"path\": ", i ? "," : "",
			f[i].ino);
		if (f[i].path)
			jstr(out, f[i].path);
		else
			fputs("null", out);
		fprintf(out, ", \"blocks\": %" PRIu64 ", \"runs\": %u, "
			"\"groups\": %u, \"excess_runs\": %u}", f[i].blocks,
			f[i].runs, f[i].groups, f[i].excess);
	}
	fputs(n ? "\n    ]" : "]", out);
}

static void json_layout(FILE *out, const struct e3_layout *l)
{
	unsigned i, first = 1;

	fprintf(out, "  \"layout\": {\n    \"inodes_used\": %u, \"inodes_count\": %u,"
		" \"blocks_used\": %" PRIu64 ", \"blocks_count\": %" PRIu64 ",\n",
		l->inodes_used, l->inodes_count, l->blocks_used, l->blocks_count);
	fprintf(out, "    \"noncontig_files\": %u, \"noncontig_dirs\": %u, "
		"\"noncontig_percent\": %u.%u,\n", l->fragmented_files,
		l->fragmented_dirs, l->noncontig_permille / 10,
		l->noncontig_permille % 10);
	fprintf(out, "    \"ind_files\": %u, \"dind_files\": %u, \"tind_files\": %u,\n",
		l->ind_files, l->dind_files, l->tind_files);
	fprintf(out, "    \"files_with_blocks\": %" PRIu64 ", \"total_runs\": %"
		PRIu64 ", \"avg_runs\": %.3f, \"max_runs\": %u,\n",
		l->files_with_blocks, l->total_runs, l->files_with_blocks ?
		(double)l->total_runs / l->files_with_blocks : 0, l->max_runs);
	fprintf(out, "    \"files_with_excess_runs\": %u, \"total_excess_runs\": %"
		PRIu64 ", \"max_excess_runs\": %u,\n", l->files_with_excess,
		l->total_excess, l->max_excess);
	fprintf(out, "    \"free_blocks\": %" PRIu64 ", \"free_extents\": %" PRIu64
		", \"free_extent_min\": %" PRIu64 ", \"free_extent_max\": %" PRIu64
		",\n    \"free_histogram\": [", l->free_blocks, l->free_extents,
		l->free_min, l->free_max);
	for (i = 0; i < E3_FREEFRAG_BUCKETS; i++) {
		if (!l->hist_extents[i])
			continue;
		fprintf(out, "%s{\"min\": %" PRIu64 ", \"max\": %" PRIu64
			", \"extents\": %" PRIu64 ", \"blocks\": %" PRIu64 "}",
			first ? "" : ", ", (uint64_t)1 << i, ((uint64_t)2 << i) - 1,
			l->hist_extents[i], l->hist_blocks[i]);
		first = 0;
	}
	fprintf(out, "],\n    \"gates_failed\": [%s%s%s%s%s]",
		l->gate_failed & 1 ? "\"max-noncontig\"" : "",
		(l->gate_failed & 1) && (l->gate_failed & 6) ? ", " : "",
		l->gate_failed & 2 ? "\"max-runs\"" : "",
		(l->gate_failed & 2) && (l->gate_failed & 4) ? ", " : "",
		l->gate_failed & 4 ? "\"max-excess-runs\"" : "");
	json_files(out, "worst_runs", l->worst_runs, l->n_worst_runs);
	json_files(out, "worst_excess_runs", l->worst_excess, l->n_worst_excess);
	fputs("\n  }\n", out);
}

static void json_finding(FILE *out, const struct e3_finding *f)
{
	const struct e3_problem *p = e3_problem(f->code);
	char msg[512];

	e3_finding_format(f, msg, sizeof(msg));
	fprintf(out, "    {\"code\": %d, \"id\": ", f->code);
	jstr(out, p ? p->id : "unknown");
	fprintf(out, ", \"pass\": %d, \"message\": ", p ? p->pass : 0);
	jstr(out, msg);
	fprintf(out, ", \"fix\": ");
	jstr(out, !p || p->fix == E3_FIX_NEVER ? "none" :
	     p->fix == E3_FIX_PREEN ? "preen" : "yes");
	fprintf(out, ", \"fixed\": %s", f->fixed ? "true" : "false");
	if (f->ino)
		fprintf(out, ", \"ino\": %u", f->ino);
	if (f->ino2)
		fprintf(out, ", \"ino2\": %u", f->ino2);
	if (f->blk)
		fprintf(out, ", \"blk\": %llu", (unsigned long long)f->blk);
	if (f->blk2)
		fprintf(out, ", \"blk2\": %llu", (unsigned long long)f->blk2);
	if (f->name) {
		fputs(", \"name\": ", out);
		jstr(out, f->name);
	}
	fputc('}', out);
}

static void print_json(FILE *out, const char *image,
		       const struct e3_check_report *r, int mode)
{
	static const char *modes[] = { "check", "preen", "yes" };
	size_t i;

	fputs("{\n  \"image\": ", out);
	jstr(out, image);
	fprintf(out, ",\n  \"mode\": \"%s\", \"exit_code\": %d, \"fixed\": %zu,"
		" \"errors\": %zu, \"rounds\": %u,\n", modes[mode], r->exit_code,
		r->n_fixed, r->n_unfixed, r->rounds);
	fprintf(out, "  \"mounted\": %s, \"in_use\": %s,\n",
		!r->mounted ? "null" : r->mounted == E3_MOUNT_RO ?
		"\"read-only\"" : "\"read-write\"", r->in_use ? "true" : "false");
	fprintf(out, "  \"journal_pending\": %s, \"journal_replayed\": %s,"
		" \"superblock\": %llu,\n", r->journal_pending ? "true" : "false",
		r->journal_replayed ? "true" : "false",
		(unsigned long long)r->used_superblock);
	fputs("  \"fatal\": ", out);
	if (r->fatal) {
		fputs("{\"error\": ", out);
		jstr(out, error_message(r->fatal_err));
		fputs(", \"what\": ", out);
		if (r->fatal_what)
			jstr(out, r->fatal_what);
		else
			fputs("null", out);
		fputs("}", out);
	} else {
		fputs("null", out);
	}
	fputs(",\n  \"findings\": [", out);
	for (i = 0; i < r->n_findings; i++) {
		fputs(i ? ",\n" : "\n", out);
		json_finding(out, &r->findings[i]);
	}
	fputs(r->n_findings ? "\n  ],\n" : "],\n", out);
	json_layout(out, &r->layout);
	fputs("}\n", out);
}

static const char *mount_word(int mounted)
{
	return mounted == E3_MOUNT_RO ? "read-only" : "read-write";
}

/* A mounted or busy image: refused (one line), or with --force-read read
 * anyway (a warning first). 1 when refused. */
static int say_busy(const struct args *a, const struct e3_check_report *r)
{
	int ro = a->o.mode == E3_CHECK_READONLY;
	const char *anyway = "not checked (--force-read checks it anyway)";

	if (r->fatal && r->fatal_err == E3_MOUNTED) {
		tool_error(a->image, 0, "image is mounted %s: %s",
			   mount_word(r->mounted),
			   ro ? anyway : "not checked (unmount it first)");
		return 1;
	}
	if (r->fatal && r->fatal_err == E3_IMAGE_LOCKED) {
		tool_error(a->image, 0, "%s: %s", error_message(E3_IMAGE_LOCKED),
			   ro ? anyway : "not checked (let it finish first)");
		return 1;
	}
	if (r->mounted)
		printf("%s: warning: image is mounted %s: checked anyway "
		       "(--force-read); a live filesystem may read as damaged\n",
		       a->image, mount_word(r->mounted));
	if (r->in_use)
		printf("%s: warning: image is in use by another e3img process: "
		       "checked anyway (--force-read); it may be half written\n",
		       a->image);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a;
	struct e3_check_report *r = NULL;
	const struct e3_layout *l;
	int64_t epoch;
	errcode_t err;

	memset(&a, 0, sizeof(a));
	tool_init(argv[0]);
	if (parse_args(argc, argv, &a) || tool_source_date_epoch(&epoch))
		return E3_EXIT_USAGE;
	if (!a.json && isatty(STDERR_FILENO))
		a.o.progress = progress;
	err = e3_check_image(a.image, &a.o, &r);
	if (!r) {
		tool_error(a.image, err, NULL);
		return E3_EXIT_ERROR;
	}
	if (a.json) {
		print_json(stdout, a.image, r, a.o.mode);
		err = r->exit_code;
		e3_check_report_free(r);
		return (int)err;
	}
	if (say_busy(&a, r)) {
		err = r->exit_code;
		e3_check_report_free(r);
		return (int)err;
	}
	if (r->fatal) {
		if (r->fatal_err == E3_UNSUPPORTED_FEATURE && r->fatal_what)
			tool_error(a.image, 0, "filesystem has feature %s, which "
				   "ext2/ext3 do not have", r->fatal_what);
		else if (r->fatal_what)
			tool_error(a.image, r->fatal_err, "%s", r->fatal_what);
		else
			tool_error(a.image, r->fatal_err, NULL);
	}
	if (r->journal_pending && a.o.mode == E3_CHECK_READONLY)
		printf("%s: warning: journal replay skipped: read-only check "
		       "of the unreplayed image\n", a.image);
	print_findings(&a, r);
	/* -p applies a round's fixes all or none; earlier rounds may have
	 * applied theirs before a later one stopped */
	if (r->preen_refused)
		printf("%s: UNEXPECTED INCONSISTENCY; run e3fsck -y "
		       "(%s; the filesystem is marked as having errors)\n",
		       a.image, r->n_fixed ? "only the fixes listed as fixed "
		       "were made" : "nothing was fixed");
	l = &r->layout;
	if (!r->fatal) {
		if ((a.verbose || a.layout) && l->inodes_count)
			print_layout(l);
		printf("%s: %u/%u files (%u.%u%% non-contiguous), "
		       "%" PRIu64 "/%" PRIu64 " blocks\n", a.image,
		       l->inodes_used, l->inodes_count,
		       l->noncontig_permille / 10, l->noncontig_permille % 10,
		       l->blocks_used, l->blocks_count);
	}
	if (r->exit_code & E3_EXIT_FIXED)
		printf("%s: ***** FILE SYSTEM WAS MODIFIED *****\n", a.image);
	if (r->exit_code & E3_EXIT_UNCORRECTED)
		printf("%s: ********** WARNING: Filesystem still has errors "
		       "**********\n", a.image);
	err = r->exit_code;
	e3_check_report_free(r);
	return (int)err;
}
