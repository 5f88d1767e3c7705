/*
 * e3mkfs.c: make an ext3 filesystem in an image file (or on a device) with
 * the geometry `mke2fs -t ext3` would give it. A thin CLI over the mkfs
 * pipeline in lib/e3_mkfs.h: parse options into one struct, validate,
 * compute the geometry, print it (-n stops here), apply.
 *
 * The command line is mke2fs' (so a pipeline can swap the name): -t, -T,
 * -j, -e, -M, -o, -c, -r, -E's ext3 options and SIZE as a block count are
 * read as mke2fs 1.47 reads them; what cannot be done for ext3 is refused
 * by name. -d SRC (repeatable, layered) fills the image through e3cp's
 * engine, with e3cp's copy options (cpopts.h). Exit codes: misc/exit.h.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <uuid/uuid.h>

#include "cpopts.h"
#include "exit.h"
#include "util.h"

/* configure.ac's AC_INIT version */
#define E3IMG_VERSION "0.1.0"

#define MAX_SRCS 64
/* auto without +N%: room for everyone, not only root (issue 20, item 6) */
#define E3_AUTO_DEFAULT_SLACK 10
#define MAX_FEATURE_EDITS 16

/* Everything one run needs; filled by parse_args, read by the rest. */
struct mkfs_opts {
	struct e3_mkfs_params params;
	const char *image;
	const char *size_arg;
	int force, quiet, dry_run, version, help;
	/* The first bad option, reported once IMAGE is known. */
	errcode_t err;
	char err_detail[200];
	/* -t ext2 drops the journal unless -j or -J asks for one; -O lists
	 * are applied after both, in order, as mke2fs applies them */
	int ext2, journal_asked;
	const char *feature_edits[MAX_FEATURE_EDITS];
	size_t nfeature_edits;
	int bad_block_scans;		/* -c given this many times */
	/* -d SRC (repeatable, later layers replace earlier files): filled
	 * through e3cp's engine after apply; SIZE "auto" or "auto+N%" sizes
	 * the image from the sources */
	const char *srcs[MAX_SRCS];
	size_t nsrcs;
	struct cpopts cpo;		/* --owner, maps, -D, --overwrite, -v */
	struct e3_copyin_opts co;
	int progress, no_progress;
	enum e3_alloc_mode alloc;	/* --alloc, for -d */
	unsigned jobs;			/* --jobs, for -d; 0: number of CPUs */
	/* progress bar state */
	double t0;
	int bar_shown;
	char *fatal_path;		/* the entry the image failed on */
};

enum { OPT_ALLOC = 256, OPT_JOBS, OPT_PROGRESS, OPT_NO_PROGRESS };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: e3mkfs [options] IMAGE [SIZE]\n"
"       e3mkfs [options] -d SRC [-d SRC]... IMAGE [SIZE|auto|auto+N%%]\n"
"Make an ext3 filesystem in IMAGE (a sparse file, created if missing, or a\n"
"block device) with the geometry mke2fs -t ext3 gives it; mke2fs' command\n"
"line works unchanged. SIZE is read as mke2fs reads it: a count of -b\n"
"blocks (of 1 KiB without -b), or with K, M, G, T (powers of 1024) or s\n"
"(512-byte sectors); without SIZE, IMAGE's current size is used.\n"
"\n"
"  -t TYPE        ext3 (default) or ext2 (no journal unless -j or -J)\n"
"  -T TYPES       usage types: floppy small default big huge news largefile\n"
"                 largefile4 hurd (default: by size)\n"
"  -b SIZE        block size: 1024, 2048 or 4096 (default: by size)\n"
"  -I SIZE        inode size: 128 or 256 (default 256)\n"
"  -i BYTES       bytes per inode (default: by size, as mke2fs.conf)\n"
"  -N COUNT       number of inodes (overrides -i)\n"
"  -m PERCENT     blocks reserved for root (default 5)\n"
"  -g BLOCKS      blocks per group (multiple of 8, 256..8*block size)\n"
"  -L LABEL       volume label (at most 16 bytes)\n"
"  -M DIR         last-mounted directory (at most 64 bytes)\n"
"  -U UUID        random, time, clear, or a UUID\n"
"  -e BEHAVIOUR   on errors: continue (default), remount-ro or panic\n"
"  -o OS          creator OS: linux only\n"
"  -r 1           revision (ext3 needs 1)\n"
"  -j             add a journal (ext3 has one; for -t ext2)\n"
"  -J size=MiB    journal size (default: from the filesystem size)\n"
"  -E OPTS        hash_seed=UUID, root_owner[=UID:GID], stride=N,\n"
"                 stripe_width=N, lazy_itable_init[=0|1],\n"
"                 lazy_journal_init[=0|1], discard, nodiscard, test_fs\n"
"  -O FEATURES    switch ext3 features on (name) or off (^name):\n"
"                 has_journal ext_attr resize_inode dir_index filetype\n"
"                 sparse_super large_file\n"
"  -c             read-test IMAGE for bad blocks first (refused if any)\n"
"  -n             print the geometry, write nothing\n"
"  -q             quiet\n"
"  -F             overwrite an IMAGE that holds data\n"
"  -V, --version  print the version\n"
"  --help         this text\n"
"\n"
"Filling the image (through e3cp's engine):\n"
"  -d SRC               a tree, file or archive; repeatable: later sources\n"
"                       are layered over earlier ones (their files replace,\n"
"                       their directories merge)\n"
CPOPTS_HELP
"  --jobs N             worker threads (default: number of CPUs)\n"
"  --alloc=MODE         rbtree (default), list or none\n"
"  --progress, --no-progress\n"
"                       progress line on/off (default: on a terminal,\n"
"                       never with -q)\n"
"  SIZE auto[+N%%]       fit the image to the input: its need plus N%%\n"
"                       (default 10%%, at least 64 inodes) of room above\n"
"                       root's reserve\n"
"\n"
"With SOURCE_DATE_EPOCH set, all times are that epoch and the UUID and hash\n"
"seed are derived from it and the label: the same command gives the same\n"
"bytes. Exit: 0 done, 1 entries skipped (each named), 8 error, 16 usage.\n");
}

/* Keeps the first error only: one run reports one reason. */
static void opt_error(struct mkfs_opts *o, errcode_t err, const char *fmt,
		      const char *arg)
{
	if (o->err)
		return;
	o->err = err;
	snprintf(o->err_detail, sizeof(o->err_detail), fmt, arg);
}

static void parse_journal(struct mkfs_opts *o, const char *arg)
{
	uint64_t v;

	if (strncmp(arg, "size=", 5) != 0 ||
	    parse_uint(arg + 5, 1, 10240000, &v))
		opt_error(o, E3_BAD_OPTION, "-J %s: only size=MiB is supported",
			  arg);
	else
		o->params.journal_mib = (unsigned)v;
}

static void parse_root_owner(struct mkfs_opts *o, const char *val)
{
	struct e3_mkfs_params *p = &o->params;
	const char *arg = val;
	char *end;
	unsigned long uid, gid;

	if (!val) {
		p->root_uid = getuid();
		p->root_gid = getgid();
		return;
	}
	errno = 0;
	uid = strtoul(val, &end, 10);
	if (end == val || *end != ':' || errno || uid > UINT32_MAX)
		goto bad;
	val = end + 1;
	gid = strtoul(val, &end, 10);
	if (end == val || *end || errno || gid > UINT32_MAX)
		goto bad;
	p->root_uid = (uint32_t)uid;
	p->root_gid = (uint32_t)gid;
	return;
bad:
	opt_error(o, E3_BAD_OPTION, "-E root_owner=%s: want UID:GID", arg);
}

/* "name" alone or "name=0|1", as mke2fs reads its boolean -E options. */
static int ext_bool(struct mkfs_opts *o, const char *name, const char *val)
{
	if (!val || !strcmp(val, "1"))
		return 1;
	if (!strcmp(val, "0"))
		return 0;
	opt_error(o, E3_BAD_OPTION, "-E %s: want 0 or 1", name);
	return 1;
}

/* mke2fs -E options that need what ext3 lacks or that e3mkfs does not
 * offer, each with its reason. */
static const struct {
	const char *name, *why;
} ext_refused[] = {
	{ "resize", "a custom resize limit is not offered; the reserved GDT blocks are sized as mke2fs sizes them by default" },
	{ "packed_meta_blocks", "needs flex_bg, an ext4 feature" },
	{ "num_backup_sb", "needs sparse_super2, an ext4 feature" },
	{ "quotatype", "needs quota, an ext4 feature" },
	{ "mmp_update_interval", "needs mmp, an ext4 feature" },
	{ "encoding", "needs casefold, an ext4 feature" },
	{ "encoding_flags", "needs casefold, an ext4 feature" },
	{ "orphan_file_size", "needs orphan_file, an ext4 feature" },
	{ "offset", "not offered: make the image in a file of its own and copy it into place" },
	{ "android_sparse", "not offered: the image is a sparse file already" },
	{ "no_copy_xattrs", "not offered: -d always copies extended attributes" },
	{ "assume_storage_prezeroed", "not offered: e3mkfs finds out itself whether an image file reads as zeros" },
};

static void parse_ext_number(struct mkfs_opts *o, const char *name,
			     const char *val, uint32_t *out)
{
	uint64_t v;

	if (!val || parse_uint(val, 0, UINT32_MAX, &v))
		opt_error(o, E3_BAD_OPTION, "-E %s: want a number of blocks", name);
	else
		*out = (uint32_t)v;
}

static void parse_ext_refused(struct mkfs_opts *o, const char *tok)
{
	for (size_t i = 0; i < sizeof(ext_refused) / sizeof(*ext_refused); i++)
		if (!strcmp(tok, ext_refused[i].name)) {
			if (!o->err) {
				o->err = E3_BAD_OPTION;
				snprintf(o->err_detail, sizeof(o->err_detail),
					 "-E %s: %s", tok, ext_refused[i].why);
			}
			return;
		}
	opt_error(o, E3_BAD_OPTION,
		  "-E %s: unknown extended option (hash_seed, root_owner, stride, stripe_width, lazy_itable_init, lazy_journal_init, discard, nodiscard, test_fs)",
		  tok);
}

static void parse_ext_one(struct mkfs_opts *o, char *tok)
{
	struct e3_mkfs_params *p = &o->params;
	char *val = strchr(tok, '=');

	if (val)
		*val++ = '\0';
	if (!strcmp(tok, "hash_seed")) {
		if (!val || uuid_parse(val, p->hash_seed))
			opt_error(o, E3_BAD_OPTION, "-E hash_seed=%s: not a UUID",
				  val ? val : "");
		else
			p->hash_seed_given = 1;
	} else if (!strcmp(tok, "root_owner")) {
		parse_root_owner(o, val);
	} else if (!strcmp(tok, "stride")) {
		parse_ext_number(o, tok, val, &p->raid_stride);
	} else if (!strcmp(tok, "stripe_width") || !strcmp(tok, "stripe-width")) {
		parse_ext_number(o, tok, val, &p->raid_stripe_width);
	} else if (!strcmp(tok, "lazy_itable_init")) {
		p->lazy_itable_init = ext_bool(o, tok, val);
	} else if (!strcmp(tok, "lazy_journal_init")) {
		p->lazy_journal_init = ext_bool(o, tok, val);
	} else if (!strcmp(tok, "discard") && !val) {
		p->nodiscard = 0;
	} else if (!strcmp(tok, "nodiscard") && !val) {
		p->nodiscard = 1;
	} else if (!strcmp(tok, "test_fs") && !val) {
		p->test_fs = 1;
	} else {
		parse_ext_refused(o, tok);
	}
}

static void parse_extended(struct mkfs_opts *o, const char *arg)
{
	char *buf = strdup(arg), *tok, *save = NULL;

	if (!buf) {
		opt_error(o, ENOMEM, "-E %s", arg);
		return;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		parse_ext_one(o, tok);
	free(buf);
}

/* -t: ext3, or ext2 (ext3 without the journal, as mke2fs makes it). */
static void parse_fs_type(struct mkfs_opts *o, const char *arg)
{
	if (!strcmp(arg, "ext3"))
		o->ext2 = 0;
	else if (!strcmp(arg, "ext2"))
		o->ext2 = 1;
	else if (!strncmp(arg, "ext4", 4))
		opt_error(o, E3_BAD_OPTION,
			  "-t %s: e3mkfs makes ext3 and ext2 only (ext4's features are refused by name)",
			  arg);
	else
		opt_error(o, E3_BAD_OPTION, "-t %s: unknown filesystem type (ext3 or ext2)",
			  arg);
}

/* -e: what the kernel does on an error it finds. */
static void parse_errors(struct mkfs_opts *o, const char *arg)
{
	if (!strcmp(arg, "continue"))
		o->params.errors = EXT2_ERRORS_CONTINUE;
	else if (!strcmp(arg, "remount-ro"))
		o->params.errors = EXT2_ERRORS_RO;
	else if (!strcmp(arg, "panic"))
		o->params.errors = EXT2_ERRORS_PANIC;
	else
		opt_error(o, E3_BAD_OPTION,
			  "-e %s: want continue, remount-ro or panic", arg);
}

/* -o: the creator OS. Another OS reads some inode fields differently, and
 * the copy-in writes Linux's layout: only linux (or 0) is taken. */
static void parse_creator_os(struct mkfs_opts *o, const char *arg)
{
	if (strcasecmp(arg, "linux") && strcmp(arg, "0"))
		opt_error(o, E3_BAD_OPTION,
			  "-o %s: e3mkfs writes Linux's ext3 only (another creator OS reads inodes differently)",
			  arg);
}

/* An unsigned option value in [min, max]; complaint otherwise. */
static uint64_t parse_number(struct mkfs_opts *o, const char *arg,
			     uint64_t min, uint64_t max, errcode_t bad,
			     const char *complaint)
{
	uint64_t v = 0;

	if (parse_uint(arg, min, max, &v))
		opt_error(o, bad, complaint, arg);
	return v;
}

static void parse_option(struct mkfs_opts *o, int c, const char *arg)
{
	struct e3_mkfs_params *p = &o->params;
	uint64_t v;
	char *end;

	switch (c) {
	case 'b':
		v = parse_number(o, arg, 1024, 4096, E3_BAD_BLOCK_SIZE,
				 "-b %s: block size must be 1024, 2048 or 4096");
		if (v && v != 1024 && v != 2048 && v != 4096)
			opt_error(o, E3_BAD_BLOCK_SIZE,
				  "-b %s: block size must be 1024, 2048 or 4096", arg);
		p->block_size = (unsigned)v;
		break;
	case 'I':
		v = parse_number(o, arg, 128, 256, E3_BAD_INODE_SIZE,
				 "-I %s: inode size must be 128 or 256");
		if (v && v != 128 && v != 256)
			opt_error(o, E3_BAD_INODE_SIZE,
				  "-I %s: inode size must be 128 or 256", arg);
		p->inode_size = (unsigned)v;
		break;
	case 'i':
		if (parse_size(arg, &v) || v < EXT2_MIN_BLOCK_SIZE ||
		    v > EXT2_MAX_BLOCK_SIZE * 1024ULL)
			opt_error(o, E3_BAD_OPTION,
				  "-i %s: bytes per inode must be 1024..65536K", arg);
		p->inode_ratio = v;
		break;
	case 'N':
		p->inode_count = parse_number(o, arg, 1, UINT32_MAX,
					      E3_BAD_INODE_COUNT,
					      "-N %s: inode count must be 1..4294967295");
		break;
	case 'm':
		errno = 0;
		p->reserved_percent = strtod(arg, &end);
		if (!*arg || *end || errno || !(p->reserved_percent >= 0 &&
						p->reserved_percent <= 50))
			opt_error(o, E3_BAD_OPTION,
				  "-m %s: reserved percent must be 0..50", arg);
		break;
	case 'g':
		v = parse_number(o, arg, 256, 32768, E3_BAD_OPTION,
				 "-g %s: blocks per group must be a multiple of 8 in 256..8*block size");
		if (v % 8)
			opt_error(o, E3_BAD_OPTION,
				  "-g %s: blocks per group must be a multiple of 8 in 256..8*block size", arg);
		p->blocks_per_group = (unsigned)v;
		break;
	case 'L':
		if (strlen(arg) > EXT2_LABEL_LEN)
			opt_error(o, E3_BAD_OPTION,
				  "-L %s: label longer than 16 bytes", arg);
		else
			strcpy(p->label, arg);
		break;
	case 'U':
		if (e3_mkfs_parse_uuid(arg, p))
			opt_error(o, E3_BAD_OPTION,
				  "-U %s: want random, time, clear or a UUID", arg);
		break;
	case 'J':
		parse_journal(o, arg);
		o->journal_asked = 1;	/* mke2fs -t ext2 -J adds one */
		break;
	case 'E': parse_extended(o, arg); break;
	case 'O':
		if (o->nfeature_edits == MAX_FEATURE_EDITS)
			opt_error(o, E3_BAD_OPTION, "-O %s: at most 16 -O options", arg);
		else
			o->feature_edits[o->nfeature_edits++] = arg;
		break;
	case 'd':
		if (o->nsrcs == MAX_SRCS)
			opt_error(o, E3_BAD_OPTION, "-d %s: at most 64 sources", arg);
		else
			o->srcs[o->nsrcs++] = arg;
		break;
	case OPT_JOBS: {
		uint64_t v;

		if (parse_uint(arg, 1, 4096, &v))
			opt_error(o, E3_BAD_OPTION, "--jobs %s: a number of threads, 1..4096", arg);
		else
			o->jobs = (unsigned)v;
		break;
	}
	case OPT_ALLOC:
		if (e3_alloc_mode_parse(arg, &o->alloc))
			opt_error(o, E3_BAD_ALLOC_MODE, "--alloc=%s: rbtree, list or none", arg);
		break;
	case 't': parse_fs_type(o, arg); break;
	case 'T':
		if (strlen(arg) >= sizeof(p->usage_types))
			opt_error(o, E3_BAD_OPTION, "-T %s: too long", arg);
		else
			strcpy(p->usage_types, arg);
		break;
	case 'e': parse_errors(o, arg); break;
	case 'M':
		if (strlen(arg) > sizeof(p->last_mounted))
			opt_error(o, E3_BAD_OPTION,
				  "-M %s: longer than 64 bytes", arg);
		else
			memcpy(p->last_mounted, arg, strlen(arg));
		break;
	case 'o': parse_creator_os(o, arg); break;
	case 'r':
		if (strcmp(arg, "1"))
			opt_error(o, E3_BAD_OPTION,
				  "-r %s: ext3 needs revision 1 (revision 0 has no journal or xattrs)",
				  arg);
		break;
	case 'j': o->journal_asked = 1; break;
	case 'c': o->bad_block_scans++; break;
	case OPT_PROGRESS: o->progress = 1; break;
	case OPT_NO_PROGRESS: o->no_progress = 1; break;
	case 'n': o->dry_run = 1; break;
	case 'q': o->quiet = 1; break;
	case 'F': o->force = 1; break;
	case 'V': o->version = 1; break;
	case 'h': o->help = 1; break;
	}
}

/* -t ext2 drops the journal unless -j/-J asked for one; then the -O lists,
 * in order. */
static void finish_features(struct mkfs_opts *o)
{
	struct e3_mkfs_params *p = &o->params;

	if (o->ext2 && !o->journal_asked)
		p->features[0] &= ~EXT3_FEATURE_COMPAT_HAS_JOURNAL;
	if (o->journal_asked)
		p->features[0] |= EXT3_FEATURE_COMPAT_HAS_JOURNAL;
	for (size_t i = 0; i < o->nfeature_edits; i++) {
		errcode_t err = e3_mkfs_edit_features(p, o->feature_edits[i]);

		if (err == E3_EXT4_FEATURE)
			opt_error(o, err, "feature '%s' is ext4-only; ext3 cannot have it",
				  p->bad_feature);
		else if (err)
			opt_error(o, err, "-O %s: unknown feature (ext3's: has_journal ext_attr resize_inode dir_index filetype sparse_super large_file)",
				  p->bad_feature);
	}
	if (o->ext2 && p->journal_mib)
		p->features[0] |= EXT3_FEATURE_COMPAT_HAS_JOURNAL;
}

/* Returns 0, or E3_EXIT_USAGE for a usage error already reported. */
static int parse_args(int argc, char **argv, struct mkfs_opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "alloc", required_argument, NULL, OPT_ALLOC },
		{ "jobs", required_argument, NULL, OPT_JOBS },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
		CPOPTS_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	e3_mkfs_params_init(&o->params);
	opterr = 0;
	while ((c = getopt_long(argc, argv,
				":b:cd:D:e:E:Fg:hi:I:jJ:L:m:M:nN:o:O:qr:t:T:U:vV",
				longopts, NULL)) != -1) {
		int mine;

		if (c == '?' || c == ':') {
			tool_getopt_error(argv, c);
			return E3_EXIT_USAGE;
		}
		mine = cpopts_parse(&o->cpo, &o->co, c, optarg);
		if (mine < 0)
			return E3_EXIT_USAGE;
		if (!mine)
			parse_option(o, c, optarg);
	}
	if (o->help || o->version)
		return 0;
	if (optind >= argc) {
		tool_usage_error("no IMAGE given");
		return E3_EXIT_USAGE;
	}
	o->image = argv[optind++];
	if (optind < argc)
		o->size_arg = argv[optind++];
	if (optind < argc) {
		tool_usage_error("unexpected argument '%s'", argv[optind]);
		return E3_EXIT_USAGE;
	}
	finish_features(o);
	cpopts_finish(&o->cpo, &o->co);
	return 0;
}

static void human_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
		bytes /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, bytes);
	else
		snprintf(buf, len, "%" PRIu64 "%c", bytes, units[u]);
}

/* One line for a refusal from validate or compute. */
static void report_plan_error(const struct mkfs_opts *o, errcode_t err,
			      const char *why)
{
	const struct e3_mkfs_params *p = &o->params;
	char have[32], min[32];

	switch (err) {
	case E3_TOO_SMALL:
		human_size(p->size, have, sizeof(have));
		human_size(e3_mkfs_min_size(p), min, sizeof(min));
		tool_error(o->image, 0, "image too small (%s): the minimum is %s",
			   have, min);
		break;
	case E3_TOO_LARGE:
		tool_error(o->image, 0,
			   "image too large for ext3: at most 2^32-1 blocks (16T with 4096-byte blocks)");
		break;
	case E3_BAD_INODE_COUNT:
		tool_error(o->image, 0, "inode count does not fit: %s",
			   why ? why : "raise -i or lower -N");
		break;
	default:
		if (why)
			tool_error(o->image, 0, "%s", why);
		else
			tool_error(o->image, err, NULL);
	}
}

static void print_geometry(const struct mkfs_opts *o,
			   const struct e3_mkfs_geometry *g)
{
	char feats[256];

	e3_mkfs_feature_string(g->features, feats, sizeof(feats));
	printf("Filesystem features:      %s\n", feats);
	printf("Usage type:               %s\n", g->usage_type);
	printf("Inode count:              %" PRIu32 "\n", g->inodes);
	printf("Block count:              %" PRIu64 "\n", g->blocks);
	printf("Reserved block count:     %" PRIu64 "\n", g->reserved_blocks);
	printf("First block:              %" PRIu32 "\n", g->first_data_block);
	printf("Block size:               %u\n", g->block_size);
	printf("Reserved GDT blocks:      %" PRIu32 "\n", g->reserved_gdt_blocks);
	printf("Block groups:             %" PRIu32 "\n", g->groups);
	printf("Blocks per group:         %" PRIu32 "\n", g->blocks_per_group);
	printf("Inodes per group:         %" PRIu32 "\n", g->inodes_per_group);
	printf("Inode blocks per group:   %" PRIu32 "\n", g->inode_blocks_per_group);
	printf("Inode size:               %u\n", g->inode_size);
	printf("Total journal blocks:     %" PRIu32 "\n", g->journal_blocks);
	if (o->params.label[0])
		printf("Filesystem volume name:   %s\n", o->params.label);
}

/* A failed measure of the sources, naming the entry it is about. */
static void tool_measure_error(const char *image, errcode_t err,
			       const struct e3_copyin_need *need)
{
	if (!need->bad_path)
		tool_error(image, err, "sizing for the sources");
	else if (err == E3_XATTR_TOO_BIG && need->bad_size)
		tool_error(need->bad_path, 0, "%" PRIu64 " bytes of "
			   "extended attributes, more than a %u-byte block "
			   "holds (make the image with -b 4096)",
			   need->bad_size, need->bad_block);
	else
		tool_error(need->bad_path, err, NULL);
	free(need->bad_path);
}

/* SIZE "auto" / "auto+N%": the sources' need plus N% (10 when not given)
 * of room above root's reserve, printed. */
static int parse_auto(struct mkfs_opts *o)
{
	struct e3_copyin_need need;
	struct e3_mkfs_geometry g;
	const char *rest = o->size_arg + 4;
	uint64_t pct = E3_AUTO_DEFAULT_SLACK;
	char num[16];
	errcode_t err;
	size_t len;

	if (*rest) {
		len = strlen(rest);
		if (rest[0] != '+' || len < 3 || len > 8 || rest[len - 1] != '%')
			goto bad;
		memcpy(num, rest + 1, len - 2);
		num[len - 2] = '\0';
		if (parse_uint(num, 0, 1000, &pct))
			goto bad;
	}
	if (!o->nsrcs) {
		tool_error(o->image, E3_BAD_SIZE, "'%s' needs -d SRC", o->size_arg);
		return E3_EXIT_USAGE;
	}
	int bs_given = o->params.block_size != 0;

	err = e3_copyin_auto_size(o->srcs, o->nsrcs, &o->co, (unsigned)pct,
				  &o->params, &g, &need);
	if (err) {
		tool_measure_error(o->image, err, &need);
		return E3_EXIT_ERROR;
	}
	if (!o->quiet)
		printf("auto size: %" PRIu64 " bytes (%" PRIu64 " blocks of %u%s) "
		       "for %" PRIu64 " blocks and %" PRIu64 " inodes of input "
		       "+ %" PRIu64 "%%\n", o->params.size, g.blocks,
		       g.block_size, bs_given ? "" : ": auto's block size, "
		       "whatever the size; -b sets another", need.blocks,
		       need.inodes, pct);
	return 0;
bad:
	tool_error(o->image, E3_BAD_SIZE, "'%s' (auto or auto+N%%)", o->size_arg);
	return E3_EXIT_USAGE;
}

/* SIZE as mke2fs 1.47 reads it (strtoull with base 0, so 0x.. is hex and
 * a leading 0 octal): a count of -b blocks, or of 1 KiB blocks without
 * -b; K, M, G, T (either case) make it bytes, s 512-byte sectors, each
 * rounded down to whole blocks of that unit as mke2fs rounds. */
static int parse_mke2fs_size(const char *arg, unsigned bs, uint64_t *bytes)
{
	unsigned unit = bs ? bs : 1024, log = unit == 4096 ? 2 : unit == 2048;
	unsigned shift = 0;
	unsigned long long num;
	uint64_t count;
	char *end;

	if (!*arg || *arg == '-' || *arg == '+' || *arg == ' ')
		return -1;
	errno = 0;
	num = strtoull(arg, &end, 0);
	if (end == arg || errno || (end[0] && end[1]))
		return -1;
	switch (*end) {
	case 'T': case 't': shift = 30; break;
	case 'G': case 'g': shift = 20; break;
	case 'M': case 'm': shift = 10; break;
	case 'K': case 'k': shift = 0; break;
	case 's': break;
	case '\0': break;
	default: return -1;
	}
	if (*end == 's')
		count = num >> (1 + log);
	else if (*end)
		count = num > (UINT64_MAX >> shift) ? UINT64_MAX
			: (uint64_t)(num << shift) >> log;
	else
		count = num;
	if (!count || count > UINT64_MAX / unit)
		return -1;
	*bytes = count * unit;
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void end_bar(struct mkfs_opts *o)
{
	if (o->bar_shown)
		fputc('\n', stderr);
	o->bar_shown = 0;
}

static void on_copy_event(void *ctx, enum e3_copyin_event ev, const char *path,
			  errcode_t err, const struct e3_copyin_stats *st)
{
	struct mkfs_opts *o = ctx;

	switch (ev) {
	case E3_CP_FILE:
		if (o->cpo.verbose)
			printf("%s\n", tool_quote(path));
		break;
	case E3_CP_SKIP:
		end_bar(o);
		cpopts_report_skip(path, err);
		break;
	case E3_CP_ERROR:
		end_bar(o);
		tool_copy_error(path, err, st);
		break;
	case E3_CP_PROGRESS:
		if (o->progress)
			o->bar_shown = cpopts_show_progress(st, now() - o->t0);
		break;
	case E3_CP_FATAL:
		/* told with the image's error, once the run returns */
		if (!o->fatal_path)
			o->fatal_path = strdup(path);
		break;
	}
}

/* The closing line: what was copied, and what is left for whom. Made
 * while the image is open, printed once its close has succeeded. */
static void format_summary(const struct mkfs_opts *o, e3_image_t *img,
			   const struct e3_copyin_stats *st, char *buf,
			   size_t size)
{
	ext2_filsys fs = e3_image_fs(img);
	uint64_t free_b = ext2fs_free_blocks_count(fs->super);
	uint64_t resv = ext2fs_r_blocks_count(fs->super);

	snprintf(buf, size, "%s: %" PRIu64 " entries, %" PRIu64 " bytes copied "
		 "in; free: %" PRIu64 " blocks (%" PRIu64 " for non-root users) "
		 "and %" PRIu32 " inodes\n", tool_quote(o->image), st->files,
		 st->bytes, free_b, free_b > resv ? free_b - resv : 0,
		 fs->super->s_free_inodes_count);
}

/* -d (and -D): the new image filled through the copy-in engine.
 * The fill is journaled like any e3cp run, on purpose: the format wrote
 * the primary superblock last, so a kill before here leaves an image
 * that e3cp, e3debugfs and e3defrag refuse (e3fsck -y restores it from
 * the backups when they were written); a kill from here on leaves, after replay, a
 * consistent image with every file whole or absent, which
 * `e3cp --update` finishes (tests/cp_kill.bats). Filling without the
 * journal would save at most its capture, commits and checkpoints (6%
 * of the copy's CPU samples, bench/results/copyin-profile.md) and turn
 * that into an image a kill leaves half-written. */
static int fill(struct mkfs_opts *o)
{
	struct e3_open_opts oo = { .flags = E3_OPEN_WRITE, .alloc = o->alloc };
	struct e3_copyin_opts *co = &o->co;
	struct e3_copyin_stats st = { 0 };
	uint64_t more = 0, free_now = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char summary[512] = "";
	e3_image_t *img;
	errcode_t err, err2;

	co->dest = "/";
	co->clamp_time = -1;
	co->event = on_copy_event;
	co->event_ctx = o;
	co->no_file_events = !o->cpo.verbose;	/* on_copy_event lists them */
	/* layers: a later -d replaces what an earlier one put at the same
	 * path, as e3cp --overwrite replaces (directories merge). One
	 * source on a new image replaces nothing, and without overwrite an
	 * archive that does not fit is refused before it is begun (the
	 * measure cannot credit what an archive would replace) */
	co->overwrite = o->nsrcs > 1 || co->overwrite;
	co->threads = o->jobs ? o->jobs : ncpu > 0 ? (unsigned)ncpu : 1;
	/* the tree is measured (again, after auto sizing) before anything
	 * is written: a SIZE too small is refused up front rather than
	 * found full half way, and the measure pass's listings let the
	 * workers open files and the scanner skip a stat per entry, which
	 * more than pays for it (small corpus on tmpfs 0.66 -> 0.50 s) */
	co->check_space = 1;
	if (o->params.have_epoch) {
		co->clamp_time = o->params.epoch;
		co->reproducible = 1;
		oo.commit_interval = 1000000;
	}
	err = e3_image_open(o->image, &oo, &img);
	if (err) {
		tool_error(o->image, err, NULL);
		return E3_EXIT_ERROR;
	}
	o->t0 = now();
	err = e3_copyin_run(img, o->srcs, o->nsrcs, co, &st, &more, &free_now);
	end_bar(o);
	if (st.devtab_failed) {
		/* read before anything was written: the image stays empty */
		e3_image_abort(img);
		if (err == E3_DEVTAB_SYNTAX)
			tool_error(co->devtab, 0, "line %u: bad device table line",
				   st.devtab_line);
		else
			tool_error(co->devtab, err, NULL);
		return E3_EXIT_ERROR;
	}
	if (err == E3_NO_SPACE_KNOWN || err == E3_NO_INODES_KNOWN) {
		/* nothing copied: the image stays as formatted, empty; auto
		 * cannot measure standard input (read only once) */
		int in = 0;

		for (size_t i = 0; i < o->nsrcs; i++)
			in |= strcmp(o->srcs[i], "-") == 0;
		e3_image_abort(img);
		tool_error(o->image, 0, "image full: the input needs %" PRIu64
			   " more %s (%" PRIu64 " free); %s fits it", more,
			   err == E3_NO_SPACE_KNOWN ? "blocks" : "inodes",
			   free_now, err == E3_NO_SPACE_KNOWN ?
			   (in ? "a larger SIZE" : "SIZE auto") :
			   (in ? "a larger -N" : "a larger -N or SIZE auto"));
		return E3_EXIT_ERROR;
	}
	if (err == E3_SOURCE_TYPE || err == E3_SOURCE_REFUSED) {
		/* told already, naming the source; nothing was written */
		e3_image_abort(img);
		return E3_EXIT_ERROR;
	}
	if (!err)
		format_summary(o, img, &st, summary, sizeof(summary));
	err2 = e3_image_close(img);
	if (err || err2) {
		if (err && o->fatal_path)
			tool_error(o->image, err, "copying in %s",
				   tool_quote(o->fatal_path));
		else
			tool_error(o->image, err ? err : err2, "copying in");
		return E3_EXIT_ERROR;
	}
	if (!o->quiet)
		fputs(summary, stdout);
	return st.skipped || st.errors ? E3_EXIT_PARTIAL : E3_EXIT_OK;
}

/* validate → check the target → compute; returns the exit status. */
static int plan(struct mkfs_opts *o, struct e3_mkfs_geometry *g)
{
	struct e3_mkfs_params *p = &o->params;
	const char *why = NULL;
	int64_t epoch;
	errcode_t err;
	int rc;

	if (o->err) {
		tool_error(o->image, 0, "%s", o->err_detail);
		return E3_EXIT_USAGE;
	}
	if (o->size_arg && strncmp(o->size_arg, "auto", 4) == 0) {
		if ((rc = parse_auto(o)))
			return rc;
	} else if (o->size_arg &&
		   parse_mke2fs_size(o->size_arg, p->block_size, &p->size)) {
		tool_error(o->image, 0, "bad size '%s' (a block count, or a number with K, M, G, T or s)",
			   o->size_arg);
		return E3_EXIT_USAGE;
	}
	if (tool_source_date_epoch(&epoch))
		return E3_EXIT_ERROR;
	if (epoch >= 0) {
		p->have_epoch = 1;
		p->epoch = epoch;
	}
	err = e3_mkfs_validate(p, &why);
	if (err && p->usage_types[0] && why &&
	    !strncmp(why, "unknown usage type", 18)) {
		tool_error(o->image, 0, "-T %s: %s", p->usage_types, why);
		return E3_EXIT_USAGE;
	}
	if (err) {
		report_plan_error(o, err, why);
		return E3_EXIT_USAGE;
	}
	/* -n writes nothing, so only needs the target for its size */
	if (!o->dry_run || !p->size)
		err = e3_mkfs_check_target(o->image, o->force || o->dry_run, p);
	if (err == E3_BAD_SIZE) {
		tool_error(o->image, 0, "no SIZE given and IMAGE has no size");
		return E3_EXIT_USAGE;
	}
	if (err) {
		report_plan_error(o, err, why);
		return E3_EXIT_ERROR;
	}
	/* what compute refuses is the command line's geometry */
	err = e3_mkfs_compute(p, g, &why);
	if (err) {
		report_plan_error(o, err, why);
		return E3_EXIT_USAGE;
	}
	return 0;
}

/* -c: badblocks' read-only test of what IMAGE holds, before any write. */
static int read_test(const struct mkfs_opts *o, const struct e3_mkfs_geometry *g)
{
	uint64_t bad, tested;
	errcode_t err;

	if (o->bad_block_scans > 1) {
		tool_error(o->image, 0, "-c -c: the read-write test is not offered (it would destroy what IMAGE holds); -c reads it");
		return E3_EXIT_USAGE;
	}
	err = e3_mkfs_read_test(o->image, g->blocks * g->block_size,
				g->block_size, &bad, &tested);
	if (err == E3_BAD_BLOCK) {
		tool_error(o->image, err, "block %" PRIu64, bad);
		return E3_EXIT_ERROR;
	}
	if (err) {
		tool_error(o->image, err, "reading it for bad blocks");
		return E3_EXIT_ERROR;
	}
	if (!o->quiet)
		printf("Checking for bad blocks (read-only test): done, %" PRIu64
		       " bytes of data read, none bad%s\n", tested,
		       tested ? "" : " (a sparse or new file has no blocks to test)");
	return 0;
}

int main(int argc, char **argv)
{
	struct mkfs_opts o;
	struct e3_mkfs_geometry g;
	errcode_t err;
	int rc;

	tool_init(argv[0]);
	rc = parse_args(argc, argv, &o);
	if (rc)
		goto out;
	if (o.help) {
		usage(stdout);
		goto out;
	}
	if (o.version) {
		const char *ver = "?", *date = "?";

		ext2fs_get_library_version(&ver, &date);
		printf("e3mkfs (e3img) %s, libext2fs %s (%s)\n", E3IMG_VERSION,
		       ver, date);
		goto out;
	}
	o.progress = !o.quiet && !o.no_progress && (o.progress || isatty(2));
	if (tool_check_sources(o.srcs, o.nsrcs)) {
		rc = E3_EXIT_ERROR;
		goto out;
	}
	rc = plan(&o, &g);
	if (rc)
		goto out;
	if (o.dry_run || !o.quiet)
		print_geometry(&o, &g);
	if (o.dry_run)
		goto out;
	if (o.bad_block_scans && (rc = read_test(&o, &g)))
		goto out;
	/* e3cp would refuse the image: say so before formatting it */
	if ((o.nsrcs || o.co.devtab) && (err = e3_mkfs_check_journal(&g))) {
		tool_error(o.image, err, NULL);
		rc = E3_EXIT_ERROR;
		goto out;
	}
	err = e3_mkfs_apply(o.image, &o.params, &g, NULL);
	if (err) {
		/* our codes say it all; I/O and libext2fs ones need context */
		if ((err & ~(errcode_t)0xff) == ERROR_TABLE_BASE_e3im)
			tool_error(o.image, err, NULL);
		else
			tool_error(o.image, err, "writing the filesystem");
		rc = E3_EXIT_ERROR;
		goto out;
	}
	if (!o.quiet)
		printf("%s: %s filesystem written\n", o.image,
		       g.journal_blocks ? "ext3" : "ext2");
	if (o.nsrcs || o.co.devtab)
		rc = fill(&o);
out:
	cpopts_free(&o.cpo);
	free(o.fatal_path);
	return rc;
}
