/*
 * e3cp: copy directory trees, files and archives into an ext3 image.
 *     e3cp [options] SRC... IMAGE[:/dest/dir]
 * The work is lib/copyin's (e3_copyin_run); this file parses options,
 * shows progress and turns the outcome into messages and an exit status
 * (misc/exit.h): 0 all copied, 1 some entries left out (each reported),
 * 8 the copy failed, 16 bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cpopts.h"
#include "util.h"
#include "exit.h"

/* "name exists" lines shown before the rest are only counted: a rerun
 * over a full image would print one per entry */
#define EXISTS_SHOWN 5

struct cp_args {
	struct e3_copyin_opts o;
	struct e3_open_opts open;
	const char **srcs;
	size_t nsrcs;
	char **src_bufs;		/* SRC=/dest split copies */
	const char **dests;		/* per SRC, NULL: IMAGE's :/dest */
	const char *image;
	char *image_buf;
	struct cpopts cpo;	/* --owner, maps, -D, --overwrite, -v */
	int quiet, progress, reproducible;
	double t0;
	int bar_shown;
	uint64_t exists_seen;
	char *fatal_path;	/* the entry the image failed on */
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: %s [options] SRC[=/dest]... IMAGE[:/dest]\n"
"       %s [options] -D FILE IMAGE[:/dest]\n"
"  SRC: a directory (its contents), a file, an archive (tar, pax, cpio, zip;\n"
"       gzip, xz, zstd, bzip2), or - for an archive on stdin\n"
"  /dest: a directory in the image (made if missing); for one SRC that is\n"
"       a file, a name that is not a directory is the copy's name, as cp\n"
"  SRC=/dest: where that SRC goes, instead of IMAGE's :/dest\n"
CPOPTS_HELP
"  --update             replace only entries whose type, size or mtime\n"
"                       differ from the source's; add what is missing\n"
"  --force              write into an image marked as having errors or\n"
"                       not checked since a crash, or whose bitmaps\n"
"                       disagree with their counts (risks shared blocks)\n"
"  -j, --jobs N         worker threads (default: number of CPUs)\n"
"  --progress, --quiet  progress bar on/off (default: on a terminal)\n"
"  --reproducible       same image for the same input (also implied by\n"
"                       SOURCE_DATE_EPOCH, which clamps every timestamp)\n"
"  --alloc=MODE         rbtree (default), list or none\n"
"  --version            print the version\n"
"exit: 0 copied, 1 some entries left out (named), 8 failed, 16 usage\n",
		tool_name(), tool_name());
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void show_bar(struct cp_args *a, const struct e3_copyin_stats *st)
{
	double t = now() - a->t0, rate = t > 0 ? st->bytes / t : 0;
	char eta[32] = "", of_files[32] = "", of_mib[32] = "";

	/* the totals are the measure pass's (trees and plain files) */
	if (st->total_files)
		snprintf(of_files, sizeof(of_files), " of %" PRIu64,
			 st->total_files);
	if (st->total_bytes)
		snprintf(of_mib, sizeof(of_mib), " of %.1f",
			 st->total_bytes / 1048576.0);
	if (st->total_bytes && rate > 0 && st->bytes <= st->total_bytes)
		snprintf(eta, sizeof(eta), " ETA %.0fs",
			 (st->total_bytes - st->bytes) / rate + 0.5);
	fprintf(stderr, "\r%" PRIu64 "%s files, %.1f%s MiB, %.1f MiB/s%s   ",
		st->files, of_files, st->bytes / 1048576.0, of_mib,
		rate / 1048576.0, eta);
	a->bar_shown = 1;
}

static void on_event(void *ctx, enum e3_copyin_event ev, const char *path,
		     errcode_t err, const struct e3_copyin_stats *st)
{
	struct cp_args *a = ctx;

	switch (ev) {
	case E3_CP_FILE:
		if (a->cpo.verbose)
			printf("%s\n", tool_quote(path));
		break;
	case E3_CP_SKIP:
		if (a->bar_shown)
			fputc('\n', stderr), a->bar_shown = 0;
		cpopts_report_skip(path, err);
		break;
	case E3_CP_ERROR:
		if (err == E3_NAME_EXISTS && ++a->exists_seen > EXISTS_SHOWN)
			break;		/* counted, summed up at the end */
		if (a->bar_shown)
			fputc('\n', stderr), a->bar_shown = 0;
		tool_copy_error(path, err, st);
		break;
	case E3_CP_PROGRESS:
		if (a->progress)
			show_bar(a, st);
		break;
	case E3_CP_FATAL:
		/* told once, with the image's error, when the run returns */
		if (!a->fatal_path)
			a->fatal_path = strdup(path);
		break;
	}
}

enum { OPT_PROGRESS = 256, OPT_QUIET, OPT_REPRO, OPT_ALLOC, OPT_FORCE,
       OPT_UPDATE };

static const struct option long_opts[] = {
	CPOPTS_LONG_OPTIONS,
	{ "update", no_argument, NULL, OPT_UPDATE },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "jobs", required_argument, NULL, 'j' },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "reproducible", no_argument, NULL, OPT_REPRO },
	{ "alloc", required_argument, NULL, OPT_ALLOC },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static int parse_opt(struct cp_args *a, int c, const char *arg,
		     char *const *optv)
{
	uint64_t v;
	int mine = cpopts_parse(&a->cpo, &a->o, c, arg);

	if (mine)
		return mine < 0 ? -1 : 0;
	switch (c) {
	case OPT_UPDATE: a->o.update = 1; return 0;
	case OPT_FORCE: a->open.flags |= E3_OPEN_FORCE; return 0;
	case 'j':
		if (parse_uint(arg, 1, 1024, &v) == 0) {
			a->o.threads = (unsigned)v;
			return 0;
		}
		tool_usage_error("bad -j '%s' (1..1024)", arg);
		return -1;
	case OPT_PROGRESS: a->progress = 1; return 0;
	case OPT_QUIET: a->quiet = 1; return 0;
	case OPT_REPRO: a->reproducible = 1; return 0;
	case OPT_ALLOC:
		if (e3_alloc_mode_parse(arg, &a->open.alloc) == 0)
			return 0;
		tool_usage_error("unknown --alloc '%s' (rbtree, list or none)", arg);
		return -1;
	case 'h': usage(stdout); exit(E3_EXIT_OK);
	case 'V': tool_version(); exit(E3_EXIT_OK);
	default: tool_getopt_error(optv, c); return -1;
	}
}

/* IMAGE[:/dest]: split at ":/" unless the whole argument names a file.
 * IMAGE:dest with a relative dest, IMAGE being a file, is refused: -1. */
static int split_image(struct cp_args *a, const char *arg)
{
	struct stat st;
	char *sep;

	a->image_buf = strdup(arg);
	a->image = a->image_buf;
	a->o.dest = "/";
	if (!a->image_buf || stat(arg, &st) == 0)
		return 0;
	sep = strstr(a->image_buf, ":/");
	if (sep) {
		*sep = '\0';
		a->o.dest = sep + 1;
		return 0;
	}
	for (sep = strchr(a->image_buf, ':'); sep; sep = strchr(sep + 1, ':')) {
		*sep = '\0';
		if (stat(a->image_buf, &st) == 0 && !S_ISDIR(st.st_mode)) {
			tool_usage_error("%s: the destination must be absolute "
					 "(%s:/%s)", tool_quote(arg),
					 tool_quote(a->image_buf),
					 tool_quote(sep + 1));
			return -1;
		}
		*sep = ':';
	}
	return 0;
}

/* SRC=/dest: split at the last "=/" unless the whole argument names a
 * source that exists (a path through a directory called "x=" is taken
 * whole). */
static int split_sources(struct cp_args *a)
{
	struct stat st;

	a->dests = calloc(a->nsrcs, sizeof(*a->dests));
	a->src_bufs = calloc(a->nsrcs, sizeof(*a->src_bufs));
	if (!a->dests || !a->src_bufs)
		return -1;
	for (size_t i = 0; i < a->nsrcs; i++) {
		const char *s = a->srcs[i], *eq = NULL;
		char *buf;

		for (const char *p = strstr(s, "=/"); p; p = strstr(p + 1, "=/"))
			eq = p;
		if (!eq || eq == s || strcmp(s, "-") == 0 || stat(s, &st) == 0)
			continue;
		buf = strdup(s);
		if (!buf)
			return -1;
		buf[eq - s] = '\0';
		a->src_bufs[i] = buf;
		a->srcs[i] = buf;
		a->dests[i] = buf + (eq - s) + 1;
	}
	a->o.dests = a->dests;
	return 0;
}

/* SOURCE_DATE_EPOCH clamps times; --reproducible alone fixes the image
 * clock at 0 (for the times the library itself stamps) but keeps the
 * sources' times. */
static int setup_time(struct cp_args *a)
{
	int64_t v;

	a->o.clamp_time = -1;
	if (tool_source_date_epoch(&v))
		return -1;
	if (v >= 0) {
		a->o.clamp_time = v;
		a->reproducible = 1;
	} else if (a->reproducible) {
		setenv("SOURCE_DATE_EPOCH", "0", 1);
	}
	return 0;
}

static int parse_args(struct cp_args *a, int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int c;

	a->o.threads = ncpu > 0 ? (unsigned)ncpu : 1;
	opterr = 0;	/* tool_getopt_error says it, on one line */
	while ((c = getopt_long(argc, argv, ":D:j:vh", long_opts, NULL)) != -1)
		if (parse_opt(a, c, optarg, argv))
			return -1;
	/* a device table alone is a source, as in genext2fs */
	if (argc - optind < (a->o.devtab ? 1 : 2)) {
		tool_usage_error(a->o.devtab ? "need an IMAGE"
				 : "need at least one SRC and an IMAGE");
		return -1;
	}
	a->srcs = (const char **)argv + optind;
	a->nsrcs = (size_t)(argc - optind - 1);
	if (split_image(a, argv[argc - 1]) || !a->image_buf ||
	    split_sources(a))
		return -1;
	if (!a->quiet && (a->progress || isatty(2)))
		a->progress = 1;
	else
		a->progress = 0;
	cpopts_finish(&a->cpo, &a->o);
	a->o.check_space = 1;
	a->o.event = on_event;
	a->o.event_ctx = a;
	a->o.no_file_events = !a->cpo.verbose;	/* on_event lists them */
	a->open.flags |= E3_OPEN_WRITE;
	if (setup_time(a))
		return -1;
	a->o.reproducible = a->reproducible;
	if (a->reproducible)	/* commits at fixed points, not on a timer */
		a->open.commit_interval = 1000000;
	return 0;
}

/* The closing lines: names that exist, beyond the few shown, as one
 * count with the way out; then, after a progress line, what was copied. */
static void summary(struct cp_args *a, const struct e3_copyin_stats *st)
{
	if (st->exists > EXISTS_SHOWN)
		tool_error(a->image, 0, "%" PRIu64 " more names exist (%" PRIu64
			   " in all) and were left as they are: --update copies "
			   "what differs or is missing, --overwrite replaces "
			   "them all", st->exists - EXISTS_SHOWN, st->exists);
	else if (st->exists)
		tool_error(a->image, 0, "names exist and were left as they "
			   "are: --update copies what differs or is missing, "
			   "--overwrite replaces them all");
	if (!a->progress)	/* the progress line's last word */
		return;
	fprintf(stderr, "%s: %s: %" PRIu64 " entries, %.1f MiB of data copied",
		tool_name(), tool_quote(a->image), st->files,
		st->bytes / 1048576.0);
	if (st->uptodate)
		fprintf(stderr, ", %" PRIu64 " up to date", st->uptodate);
	if (st->skipped + st->errors)
		fprintf(stderr, ", %" PRIu64 " left out", st->skipped + st->errors);
	fputc('\n', stderr);
}

/* A close that failed after the copy itself went well: what the image
 * holds now and what a replay will give, not just the error. */
static void close_failed(struct cp_args *a, errcode_t err,
			 const struct e3_close_report *r)
{
	const char *why = error_message(err);

	switch (r->stage) {
	case E3_CLOSE_COMMIT:
		tool_error(a->image, 0, "the final commit failed (%s): the "
			   "image is as of the last commit before it; its "
			   "journal holds %u committed transaction%s, which the "
			   "next open or e3fsck replays (all data committed by "
			   "then survives), and what came after is not in it: "
			   "copy again with --update", why, r->journal_txns,
			   r->journal_txns == 1 ? "" : "s");
		break;
	case E3_CLOSE_CHECKPOINT:
		tool_error(a->image, 0, "writing the final commit home failed "
			   "(%s): everything copied is committed, %u "
			   "transaction%s in the journal; the next open or "
			   "e3fsck replays %s and the image is complete", why,
			   r->journal_txns, r->journal_txns == 1 ? "" : "s",
			   r->journal_txns == 1 ? "it" : "them");
		break;
	case E3_CLOSE_FINISH:
		tool_error(a->image, 0, "clearing the journal after the final "
			   "commit failed (%s): everything copied is in place; "
			   "the next open or e3fsck replays the log again, "
			   "which changes nothing", why);
		break;
	case E3_CLOSE_EARLIER:
		tool_error(a->image, 0, "the journal failed during the copy "
			   "(%s): the image is as of the last commit, which the "
			   "next open or e3fsck replays; copy again with "
			   "--update", why);
		break;
	default:
		tool_error(a->image, err, NULL);
	}
}

static int run(struct cp_args *a)
{
	struct e3_close_report cr;
	struct e3_copyin_stats st = { 0 };
	uint64_t more = 0, free_now = 0;
	e3_image_t *img;
	errcode_t err, err2;

	if (tool_check_sources(a->srcs, a->nsrcs))
		return E3_EXIT_ERROR;
	err = e3_image_open(a->image, &a->open, &img);
	if (err) {
		tool_error(a->image, err, NULL);
		return E3_EXIT_ERROR;
	}
	if (e3_image_open_report(img)->replayed && !a->quiet)
		fprintf(stderr, "%s: %s: journal replayed (%u transactions)\n",
			tool_name(), a->image,
			e3_image_open_report(img)->transactions);
	a->t0 = now();
	err = e3_copyin_run(img, a->srcs, a->nsrcs, &a->o, &st, &more,
			    &free_now);
	if (a->bar_shown)
		fputc('\n', stderr);
	if (st.devtab_failed) {
		/* read before anything was written: leave it untouched */
		e3_image_abort(img);
		if (err == E3_DEVTAB_SYNTAX)
			tool_error(a->o.devtab, 0, "line %u: bad device table "
				   "line (path type mode uid gid major minor "
				   "start inc count; major <= 4095, minor <= "
				   "1048575)", st.devtab_line);
		else
			tool_error(a->o.devtab, err, NULL);
		return E3_EXIT_ERROR;
	}
	if (err == E3_NO_SPACE_KNOWN || err == E3_NO_INODES_KNOWN) {
		/* refused before anything was written: leave it untouched */
		e3_image_abort(img);
		tool_error(a->image, 0, "image full: need %" PRIu64
			   " more %s (%" PRIu64 " free)", more,
			   err == E3_NO_SPACE_KNOWN ? "blocks" : "inodes",
			   free_now);
		return E3_EXIT_ERROR;
	}
	if (err == E3_SOURCE_TYPE || err == E3_SOURCE_REFUSED) {
		/* an archive that gave no entry, before anything was
		 * written: told already, naming it; leave the image as it was */
		e3_image_abort(img);
		return E3_EXIT_ERROR;
	}
	err2 = e3_image_close_report(img, &cr);
	if (err && a->fatal_path) {
		tool_error(a->image, err, "copying %s",
			   tool_quote(a->fatal_path));
		return E3_EXIT_ERROR;
	}
	if (err) {
		tool_error(a->image, err, NULL);
		return E3_EXIT_ERROR;
	}
	if (err2) {
		close_failed(a, err2, &cr);
		return E3_EXIT_ERROR;
	}
	summary(a, &st);
	return st.errors || st.skipped ? E3_EXIT_PARTIAL : E3_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct cp_args a;
	int rc;

	memset(&a, 0, sizeof(a));
	tool_init(argv[0]);
	if (parse_args(&a, argc, argv)) {
		for (size_t i = 0; a.src_bufs && i < a.nsrcs; i++)
			free(a.src_bufs[i]);
		free(a.src_bufs);
		free(a.dests);
		cpopts_free(&a.cpo);
		free(a.image_buf);
		return E3_EXIT_USAGE;
	}
	rc = run(&a);
	for (size_t i = 0; a.src_bufs && i < a.nsrcs; i++)
		free(a.src_bufs[i]);
	free(a.src_bufs);
	free(a.dests);
	cpopts_free(&a.cpo);
	free(a.image_buf);
	free(a.fatal_path);
	return rc;
}
