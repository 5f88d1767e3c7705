/*
 * e3defrag: defragment an unmounted ext3 image or volume in place.
 * Parses options, hands the run to e3_defrag_image (lib/defrag_*.c),
 * shows progress, prints the before/after report (e3fsck's layout
 * figures) as text or JSON, and turns the outcome into an exit status:
 * 0 done, 1 done but some files were left fragmented (no free run would
 * hold them in fewer pieces; each counted), 8 operational error, 16
 * usage, 32 interrupted (--max-time, SIGINT, SIGTERM) at a transaction
 * boundary — the image is consistent and a rerun continues.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "e3img.h"
#include "exit.h"
#include "util.h"

struct args {
	int dry_run, verbose, json, progress, quiet, force;
	struct e3_defrag_opts o;
	const char *image;
	const char *map_before, *map_after;	/* SVG or PNG files to write */
	FILE *png_before, *png_after;	/* those that are PNG: drawn here */
	int bar_shown;
	FILE *files;			/* --json -v: the file list, buffered */
	char *files_buf;
	size_t files_len;
	int nfiles;
	uint64_t sigint_after;		/* E3_DEFRAG_SIGINT_AFTER */
	double t0;			/* first progress event */
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
"usage: %s [-n] [-v] [--json] [--progress|--quiet] [--max-time SECS]\n"
"       [--min-runs N] [--compact] [--verify] [--map-before FILE.svg|FILE.png]\n"
"       [--map-after FILE.svg|FILE.png] [-f] IMAGE [PATH...]\n"
"  -n, --dry-run     plan only: predicted figures, the image untouched\n"
"  -v, --verbose     list each file moved (runs before -> after) or left\n"
"  --json            the report as JSON on stdout\n"
"  --progress, -q, --quiet  progress bar on/off (default: on a terminal)\n"
"  --max-time SECS   stop at the first transaction boundary after SECS\n"
"  --min-runs N      move every file of at least N runs (N >= 2)\n"
"  --compact         then gather free space: empty the groups whose free\n"
"                    space is in the most pieces into large free extents\n"
"  --verify          read every copy back from the disk (written back,\n"
"                    then O_DIRECT) and compare it before switching to it\n"
"  --map-before SVG, --map-after SVG  the block-map picture of the volume\n"
"                    before the first move, after the last (one band per\n"
"                    block group, fragmented file data in red); SVG, or\n"
"                    PNG for a name ending in .png\n"
"  -f, --force       defragment an image without a journal (not crash-safe)\n"
"  PATH              only these files and directory trees (absolute paths\n"
"                    inside the image)\n"
"exit: 0 done, 1 files left fragmented for want of free space, 8 error,\n"
"      16 usage, 32 interrupted (consistent; run again to continue)\n",
		tool_name());
}

enum { OPT_JSON = 256, OPT_PROGRESS, OPT_QUIET, OPT_MAX_TIME, OPT_MIN_RUNS,
       OPT_COMPACT, OPT_MAP_BEFORE, OPT_MAP_AFTER, OPT_VERIFY };

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option lo[] = {
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "quiet", no_argument, NULL, 'q' },
		{ "max-time", required_argument, NULL, OPT_MAX_TIME },
		{ "min-runs", required_argument, NULL, OPT_MIN_RUNS },
		{ "compact", no_argument, NULL, OPT_COMPACT },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "map-before", required_argument, NULL, OPT_MAP_BEFORE },
		{ "map-after", required_argument, NULL, OPT_MAP_AFTER },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	char *end;
	int c;

	e3_defrag_opts_init(&a->o);
	while ((c = getopt_long(argc, argv, "nvfhq", lo, NULL)) != -1) {
		switch (c) {
		case 'n': a->dry_run = 1; break;
		case 'v': a->verbose = 1; break;
		case 'f': a->force = 1; break;
		case 'h': usage(stdout); exit(E3_EXIT_OK);
		case OPT_JSON: a->json = 1; break;
		case OPT_COMPACT: a->o.compact = 1; break;
		case OPT_VERIFY: a->o.verify = 1; break;
		case OPT_MAP_BEFORE: a->map_before = optarg; break;
		case OPT_MAP_AFTER: a->map_after = optarg; break;
		case OPT_PROGRESS: a->progress = 1; a->quiet = 0; break;
		case 'q':
		case OPT_QUIET: a->quiet = 1; a->progress = 0; break;
		case OPT_MAX_TIME:
			a->o.max_time = strtod(optarg, &end);
			if (end == optarg || *end || a->o.max_time < 0) {
				tool_usage_error("--max-time: not a number of seconds: '%s'",
						 optarg);
				return -1;
			}
			break;
		case OPT_MIN_RUNS:
			if (parse_uint(optarg, 2, UINT32_MAX, &v)) {
				tool_usage_error("--min-runs: not a number of runs >= 2: '%s'",
						 optarg);
				return -1;
			}
			a->o.min_runs = (unsigned)v;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind >= argc) {
		tool_usage_error("no image given");
		usage(stderr);
		return -1;
	}
	a->image = argv[optind++];
	for (int i = optind; i < argc; i++)
		if (argv[i][0] != '/') {
			tool_usage_error("PATH must be absolute inside the image: '%s'",
					 argv[i]);
			return -1;
		}
	a->o.paths = (const char *const *)&argv[optind];
	a->o.npaths = (size_t)(argc - optind);
	a->o.dry_run = a->dry_run;
	a->o.force = a->force;
	if (a->dry_run && a->map_after) {
		tool_usage_error("--map-after with -n: a dry run moves nothing "
				 "(--map-before draws the image as it is)");
		return -1;
	}
	if (!a->quiet && !a->json && (a->progress || isatty(2)))
		a->progress = 1;
	else
		a->progress = 0;
	return 0;
}

/* ---- events ---- */

static void jstr(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* files done of planned, blocks moved, the rate, and an ETA from the
 * planned blocks not moved yet (the fragmented files; --compact's moves
 * come on top) */
static void show_bar(struct args *a, const struct e3_defrag_stats *st)
{
	double t = now_s() - a->t0;
	double rate = t > 0 ? st->blocks_moved / t : 0;
	uint64_t left = st->blocks_planned > st->blocks_moved ?
			st->blocks_planned - st->blocks_moved : 0;
	uint64_t pct = st->files_planned ?
		100 * st->files_done / st->files_planned : 100;

	if (!a->t0) {
		a->t0 = now_s();
		return;
	}
	fprintf(stderr, "\r%s: %" PRIu64 "/%" PRIu64 " files (%" PRIu64
		"%%), %" PRIu64 " blocks moved, %.0f blocks/s", tool_name(),
		st->files_done, st->files_planned, pct, st->blocks_moved, rate);
	if (rate > 0 && left)
		fprintf(stderr, ", ETA %.0f s", left / rate);
	fputs("   ", stderr);
	a->bar_shown = 1;
}

static void file_line(struct args *a, const struct e3_defrag_event *ev)
{
	const char *what = ev->kind == E3_DF_MOVED ? "moved" :
			   ev->kind == E3_DF_PLANNED ? "would move" : "left";

	if (a->json) {
		fprintf(a->files, "%s\n    {\"ino\": %u, \"path\": ",
			a->nfiles++ ? "," : "", ev->ino);
		jstr(a->files, ev->path);
		fprintf(a->files, ", \"blocks\": %" PRIu64 ", \"runs_before\": %u, "
			"\"action\": \"%s\"", ev->blocks, ev->runs_before,
			ev->kind == E3_DF_SKIPPED ? "left" :
			ev->kind == E3_DF_PLANNED ? "planned" : "moved");
		if (ev->kind == E3_DF_SKIPPED) {
			fprintf(a->files, ", \"reason\": ");
			jstr(a->files, error_message(ev->err));
		} else {
			fprintf(a->files, ", \"runs_after\": %u", ev->runs_after);
		}
		fputc('}', a->files);
		return;
	}
	if (a->bar_shown)
		fputc('\n', stderr), a->bar_shown = 0;
	printf("%s %s (inode %u, %" PRIu64 " blocks): runs %u", what,
	       ev->path ? ev->path : "?", ev->ino, ev->blocks, ev->runs_before);
	if (ev->kind == E3_DF_SKIPPED)
		printf(": %s\n", error_message(ev->err));
	else
		printf(" -> %u\n", ev->runs_after);
}

static void on_event(void *ctx, const struct e3_defrag_event *ev)
{
	struct args *a = ctx;

	switch (ev->kind) {
	case E3_DF_PROGRESS:
		if (a->progress)
			show_bar(a, ev->st);
		break;
	case E3_DF_SKIPPED:
	case E3_DF_MOVED:
	case E3_DF_PLANNED:
		if (a->verbose)
			file_line(a, ev);
		/* for tests: a real SIGINT, through the handler, after the
		 * N-th file */
		if (a->sigint_after && ev->st->files_done == a->sigint_after)
			raise(SIGINT);
		break;
	}
}

/* ---- the report ---- */

static double avg_runs(const struct e3_layout *l)
{
	return l->files_with_blocks ?
		(double)l->total_runs / l->files_with_blocks : 0;
}

static void text_row(const char *what, const char *b, const char *af)
{
	printf("  %-28s %14s %14s\n", what, b, af);
}

static double avg_excess(const struct e3_layout *l)
{
	return l->files_with_blocks ?
		(double)l->total_excess / l->files_with_blocks : 0;
}

/* The free-extent histogram, one row per size bucket that has extents
 * before or after (e3fsck's buckets: [2^i, 2^(i+1)) blocks). */
static void print_hist(const struct e3_layout *b, const struct e3_layout *af)
{
	char what[64], x[64], y[64];

	printf("  free extents by size (blocks): extents before, after\n");
	for (int i = 0; i < E3_FREEFRAG_BUCKETS; i++) {
		if (!b->hist_extents[i] && !(af && af->hist_extents[i]))
			continue;
		snprintf(what, sizeof(what), "    %" PRIu64 "-%" PRIu64,
			 (uint64_t)1 << i, ((uint64_t)2 << i) - 1);
		snprintf(x, sizeof(x), "%" PRIu64, b->hist_extents[i]);
		snprintf(y, sizeof(y), af ? "%" PRIu64 : "-",
			 af ? af->hist_extents[i] : 0);
		text_row(what, x, y);
	}
}

static void print_text(const struct args *a, const struct e3_defrag_report *r)
{
	const struct e3_layout *b = &r->before, *af = &r->after;
	const struct e3_defrag_stats *st = &r->st;
	int have = r->have_after;
	char x[64], y[64];

	printf("%s: %" PRIu64 " files to defragment (%" PRIu64 " blocks); %s %"
	       PRIu64 " (%" PRIu64 " blocks), %" PRIu64 " left fragmented%s\n",
	       a->image, st->files_planned, st->blocks_planned,
	       a->dry_run ? "would move" : "moved", st->files_moved,
	       st->blocks_moved, st->files_skipped,
	       r->interrupted ? "; interrupted (run again to continue)" : "");
	text_row("", "before", a->dry_run ? "after (plan)" : "after");
	snprintf(x, sizeof(x), "%u.%u%%", b->noncontig_permille / 10,
		 b->noncontig_permille % 10);
	if (a->dry_run)
		snprintf(y, sizeof(y), "%u.%u%%", r->predicted_noncontig_permille / 10,
			 r->predicted_noncontig_permille % 10);
	else
		snprintf(y, sizeof(y), have ? "%u.%u%%" : "-",
			 af->noncontig_permille / 10, af->noncontig_permille % 10);
	text_row("non-contiguous (e2fsck)", x, y);
	snprintf(x, sizeof(x), "%u", b->fragmented_files + b->fragmented_dirs);
	snprintf(y, sizeof(y), have ? "%u" : "-",
		 af->fragmented_files + af->fragmented_dirs);
	text_row("non-contiguous files+dirs", x, y);
	snprintf(x, sizeof(x), "%.3f", avg_runs(b));
	if (a->dry_run && b->files_with_blocks)
		snprintf(y, sizeof(y), "%.3f", (double)(b->total_runs -
			 st->runs_before + st->runs_after) / b->files_with_blocks);
	else
		snprintf(y, sizeof(y), have ? "%.3f" : "-", avg_runs(af));
	text_row("runs per file (avg)", x, y);
	snprintf(x, sizeof(x), "%u", e3_layout_runs_pct(b, 90));
	snprintf(y, sizeof(y), have ? "%u" : "-", e3_layout_runs_pct(af, 90));
	text_row("runs per file (p90)", x, y);
	snprintf(x, sizeof(x), "%u", b->max_runs);
	snprintf(y, sizeof(y), have ? "%u" : "-", af->max_runs);
	text_row("runs per file (max)", x, y);
	snprintf(x, sizeof(x), "%" PRIu64, b->total_excess);
	snprintf(y, sizeof(y), have ? "%" PRIu64 : "-", af->total_excess);
	text_row("excess runs (all files)", x, y);
	snprintf(x, sizeof(x), "%.4f", avg_excess(b));
	snprintf(y, sizeof(y), have ? "%.4f" : "-", avg_excess(af));
	text_row("excess runs per file", x, y);
	snprintf(x, sizeof(x), "%u", b->files_with_excess);
	snprintf(y, sizeof(y), have ? "%u" : "-", af->files_with_excess);
	text_row("files with excess runs", x, y);
	snprintf(x, sizeof(x), "%" PRIu64, b->free_extents);
	snprintf(y, sizeof(y), have ? "%" PRIu64 : "-", af->free_extents);
	text_row("free extents", x, y);
	snprintf(x, sizeof(x), "%" PRIu64, b->free_max);
	snprintf(y, sizeof(y), have ? "%" PRIu64 : "-", af->free_max);
	text_row("largest free extent (blocks)", x, y);
	if (st->files_compacted || st->files_retried)
		printf("  free space gathered: %" PRIu64 " contiguous files (%"
		       PRIu64 " blocks) moved into holes; %" PRIu64 " files moved "
		       "into the room made\n", st->files_compacted,
		       st->blocks_compacted, st->files_retried);
	if (st->files_joined)
		printf("  of those, to join and close free extents: %" PRIu64
		       " files (%" PRIu64 " blocks)\n", st->files_joined,
		       st->blocks_joined);
	if (st->files_evicted || st->files_made_room)
		printf("  room made: %" PRIu64 " small files (%" PRIu64
		       " blocks) moved out of the way; %" PRIu64 " large files "
		       "moved into it\n", st->files_evicted, st->blocks_evicted,
		       st->files_made_room);
	print_hist(b, have ? af : NULL);
	printf("  blocks moved %" PRIu64 " in %.2f s", st->blocks_moved,
	       r->seconds);
	if (st->blocks_fragmented)
		printf(" (%.2f x the %" PRIu64 " blocks of the fragmented files)",
		       (double)st->blocks_moved / st->blocks_fragmented,
		       st->blocks_fragmented);
	printf("\n");
}

static void json_layout(FILE *out, const char *name, const struct e3_layout *l)
{
	fprintf(out, "  \"%s\": {\"noncontig_percent\": %u.%u, "
		"\"noncontig_files\": %u, \"noncontig_dirs\": %u, "
		"\"inodes_used\": %u, \"files_with_blocks\": %" PRIu64 ", "
		"\"runs_total\": %" PRIu64 ", \"runs_avg\": %.4f, "
		"\"runs_p90\": %u, \"runs_max\": %u, "
		"\"excess_runs\": %" PRIu64 ", \"excess_avg\": %.4f, "
		"\"files_with_excess\": %u, \"excess_max\": %u, "
		"\"free_blocks\": %" PRIu64 ", \"free_extents\": %" PRIu64 ", "
		"\"free_largest\": %" PRIu64 ",\n    \"free_histogram\": [", name,
		l->noncontig_permille / 10, l->noncontig_permille % 10,
		l->fragmented_files, l->fragmented_dirs, l->inodes_used,
		l->files_with_blocks, l->total_runs, avg_runs(l),
		e3_layout_runs_pct(l, 90), l->max_runs,
		l->total_excess, avg_excess(l), l->files_with_excess, l->max_excess,
		l->free_blocks, l->free_extents, l->free_max);
	/* e3fsck's buckets: [2^i, 2^(i+1)) blocks, the ones with extents */
	for (int i = 0, first = 1; i < E3_FREEFRAG_BUCKETS; i++)
		if (l->hist_extents[i]) {
			fprintf(out, "%s{\"from\": %" PRIu64 ", \"extents\": %"
				PRIu64 ", \"blocks\": %" PRIu64 "}", first ? "" : ", ",
				(uint64_t)1 << i, l->hist_extents[i],
				l->hist_blocks[i]);
			first = 0;
		}
	fprintf(out, "]},\n");
}

static void print_json(struct args *a, const struct e3_defrag_report *r,
		       errcode_t err, int code)
{
	const struct e3_defrag_stats *st = &r->st;

	printf("{\n  \"image\": ");
	jstr(stdout, a->image);
	printf(",\n  \"dry_run\": %s, \"interrupted\": %s, \"replayed\": %s,\n",
	       a->dry_run ? "true" : "false", r->interrupted ? "true" : "false",
	       r->replayed ? "true" : "false");
	if (r->have_before)
		json_layout(stdout, "before", &r->before);
	if (r->have_after)
		json_layout(stdout, "after", &r->after);
	if (a->dry_run && r->have_before)
		printf("  \"predicted\": {\"noncontig_percent\": %u.%u, "
		       "\"runs_avg\": %.4f},\n",
		       r->predicted_noncontig_permille / 10,
		       r->predicted_noncontig_permille % 10,
		       r->before.files_with_blocks ? (double)(r->before.total_runs -
			st->runs_before + st->runs_after) /
			r->before.files_with_blocks : 0);
	printf("  \"files_planned\": %" PRIu64 ", \"blocks_planned\": %" PRIu64
	       ", \"files_moved\": %" PRIu64 ", \"files_left\": %" PRIu64
	       ", \"blocks_moved\": %" PRIu64 ", \"runs_before\": %" PRIu64
	       ", \"runs_after\": %" PRIu64 ", \"files_compacted\": %" PRIu64
	       ", \"blocks_compacted\": %" PRIu64 ", \"files_retried\": %" PRIu64
	       ", \"files_evicted\": %" PRIu64 ", \"blocks_evicted\": %" PRIu64
	       ", \"files_made_room\": %" PRIu64
	       ", \"blocks_fragmented\": %" PRIu64
	       ", \"files_joined\": %" PRIu64 ", \"blocks_joined\": %" PRIu64
	       ", \"moved_per_fragmented\": %.3f"
	       ", \"seconds\": %.3f,\n",
	       st->files_planned, st->blocks_planned, st->files_moved,
	       st->files_skipped, st->blocks_moved, st->runs_before,
	       st->runs_after, st->files_compacted, st->blocks_compacted,
	       st->files_retried, st->files_evicted, st->blocks_evicted,
	       st->files_made_room, st->blocks_fragmented,
	       st->files_joined, st->blocks_joined,
	       st->blocks_fragmented ? (double)st->blocks_moved /
				       st->blocks_fragmented : 0.0,
	       r->seconds);
	if (a->files) {
		fclose(a->files);
		a->files = NULL;
		printf("  \"files\": [%s\n  ],\n", a->files_buf ? a->files_buf : "");
	}
	printf("  \"error\": ");
	if (err)
		jstr(stdout, error_message(err));
	else
		printf("null");
	printf(",\n  \"exit\": %d\n}\n", code);
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static int is_png(const char *path)
{
	size_t n = strlen(path);

	return n >= 4 && !strcasecmp(path + n - 4, ".png");
}

/* The picture files are opened before the run, so that a bad path is
 * refused before anything moves. An SVG goes to the library's run (it
 * draws it under its lock); a PNG the run cannot draw, so it is drawn
 * here from a read-only view, just before the run opens the image and
 * just after it closed it: the same states. */
static int open_maps(struct args *a)
{
	FILE *f;

	if (a->map_before) {
		if (!(f = fopen(a->map_before, "w"))) {
			tool_error(a->map_before, errno, NULL);
			return -1;
		}
		*(is_png(a->map_before) ? &a->png_before : &a->o.map_before) = f;
	}
	if (a->map_after) {
		if (!(f = fopen(a->map_after, "w"))) {
			tool_error(a->map_after, errno, NULL);
			if (a->map_before)
				fclose(a->png_before ? a->png_before :
				       a->o.map_before);
			return -1;
		}
		*(is_png(a->map_after) ? &a->png_after : &a->o.map_after) = f;
	}
	return 0;
}

static int close_maps(struct args *a)
{
	FILE *f[] = { a->o.map_before, a->o.map_after, a->png_before,
		      a->png_after };
	int bad = 0;

	errno = 0;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i] && fclose(f[i]))
			bad = -1;
	return bad;
}

/* A PNG picture of the image as it is on disk now (a pending journal
 * shown replayed, as the run's writer will replay it). */
static errcode_t draw_png(const char *image, FILE *out)
{
	struct e3_replay_report rep;
	ext2_filsys fs;
	int replayed;
	errcode_t err = e3_view_open(image, 0, 0, 0, &fs, &rep, &replayed);

	if (err)
		return err;
	err = e3_map_png(fs, out, NULL);
	ext2fs_close_free(&fs);
	return err;
}

int main(int argc, char **argv)
{
	struct args a;
	struct e3_defrag_report r;
	uint64_t every;
	errcode_t err;
	int code;

	tool_init(argv[0]);
	memset(&a, 0, sizeof(a));
	if (parse_args(argc, argv, &a))
		return E3_EXIT_USAGE;
	if (a.json && a.verbose)
		a.files = open_memstream(&a.files_buf, &a.files_len);
	a.o.event = on_event;
	a.o.event_ctx = &a;
	a.o.stop = &stop_flag;
	if (getenv("E3_DEFRAG_SIGINT_AFTER"))
		(void)parse_uint(getenv("E3_DEFRAG_SIGINT_AFTER"), 1, UINT64_MAX,
				 &a.sigint_after);
	/* for crash tests: a commit after every N files moved */
	if (getenv("E3_DEFRAG_COMMIT_EVERY") &&
	    !parse_uint(getenv("E3_DEFRAG_COMMIT_EVERY"), 0, UINT32_MAX, &every))
		a.o.commit_every = (unsigned)every;
	/* for tests: the per-file passes alone (making room reached) */
	a.o.no_plan = getenv("E3_DEFRAG_NO_PLAN") != NULL;
	catch_signals();
	if (open_maps(&a))
		return E3_EXIT_ERROR;
	memset(&r, 0, sizeof(r));
	err = a.png_before ? draw_png(a.image, a.png_before) : 0;
	if (!err)
		err = e3_defrag_image(a.image, &a.o, &r);
	if (!err && a.png_after && !a.dry_run)
		err = draw_png(a.image, a.png_after);
	if (close_maps(&a) && !err)
		err = errno ? errno : EIO;
	if (a.bar_shown)
		fputc('\n', stderr);
	if (err)
		code = E3_EXIT_ERROR;
	else if (r.interrupted)
		code = E3_EXIT_INTR;
	else
		code = r.st.files_skipped ? E3_EXIT_PARTIAL : E3_EXIT_OK;
	if (err)
		tool_error(a.image, err, NULL);
	if (a.json)
		print_json(&a, &r, err, code);
	else if (!err && !a.quiet)
		print_text(&a, &r);
	else if (!err && a.quiet && r.interrupted)
		fprintf(stderr, "%s: %s: interrupted; run again to continue\n",
			tool_name(), a.image);
	if (a.files)
		fclose(a.files);
	free(a.files_buf);
	e3_defrag_report_free(&r);
	return code;
}
