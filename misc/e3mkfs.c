/*
 * e3mkfs.c: make an ext3 filesystem in an image file (or on a device) with
 * the geometry `mke2fs -t ext3` would give it. A thin CLI over the mkfs
 * pipeline in lib/e3_mkfs.h: parse options into one struct, validate,
 * compute the geometry, print it (-n stops here), apply.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "util.h"

/* configure.ac's AC_INIT version */
#define E3IMG_VERSION "0.1.0"

/* Everything one run needs; filled by parse_args, read by the rest. */
struct mkfs_opts {
	struct e3_mkfs_params params;
	const char *image;
	const char *size_arg;
	int force, quiet, dry_run, version, help;
	/* The first bad option, reported once IMAGE is known. */
	errcode_t err;
	char err_detail[160];
	/* -d SRC (repeatable): filled through e3cp's engine after apply;
	 * SIZE "auto" or "auto+N%" sizes the image from the sources */
	const char *srcs[64];
	size_t nsrcs;
	int auto_size;
	unsigned slack;
	enum e3_alloc_mode alloc;	/* --alloc, for -d */
	unsigned jobs;			/* -j, for -d; 0: number of CPUs */
	int no_unpack, keep_zeros;	/* --no-unpack, --keep-zeros */
	const char *file_contexts;	/* --file-contexts */
	const char *selinux_root;	/* --selinux-root */
};

enum { OPT_NO_UNPACK = 256, OPT_KEEP_ZEROS, OPT_FILE_CONTEXTS,
       OPT_SELINUX_ROOT };

static void usage(FILE *f)
{
	fprintf(f,
"Usage: e3mkfs [options] IMAGE [SIZE]\n"
"       e3mkfs [options] -d SRC... IMAGE [SIZE|auto|auto+N%%]\n"
"Make an ext3 filesystem in IMAGE (a sparse file, created if missing, or a\n"
"block device) with the geometry mke2fs -t ext3 gives it. SIZE takes K, M,\n"
"G or T (powers of 1024); without SIZE, IMAGE's current size is used.\n"
"\n"
"  -b SIZE        block size: 1024, 2048 or 4096 (default: by size)\n"
"  -I SIZE        inode size: 128 or 256 (default 256)\n"
"  -i BYTES       bytes per inode (default: by size, as mke2fs.conf)\n"
"  -N COUNT       number of inodes (overrides -i)\n"
"  -m PERCENT     blocks reserved for root (default 5)\n"
"  -g BLOCKS      blocks per group (multiple of 8, 256..8*block size)\n"
"  -L LABEL       volume label (at most 16 bytes)\n"
"  -U UUID        random, time, clear, or a UUID\n"
"  -J size=MiB    journal size (default: from the filesystem size)\n"
"  -E OPTS        hash_seed=UUID, root_owner[=UID:GID]\n"
"  -O FEATURES    switch ext3 features on (name) or off (^name):\n"
"                 has_journal ext_attr resize_inode dir_index filetype\n"
"                 sparse_super large_file\n"
"  -d SRC         fill the image from SRC (tree, file or archive; repeatable)\n"
"  -j N           with -d: worker threads (default: number of CPUs)\n"
"  --alloc=MODE   with -d: rbtree (default), list or none\n"
"                 through e3cp's engine; SIZE auto[+N%%] fits it to the input\n"
"  --no-unpack    with -d: archive SRCs are files to copy, not unpacked\n"
"  --keep-zeros   with -d: write all-zero blocks (default: holes)\n"
"  --file-contexts FILE  with -d: label every entry from an SELinux\n"
"                 file_contexts file (--selinux-root PATH: the image's\n"
"                 mount point for the lookups)\n"
"  -n             print the geometry, write nothing\n"
"  -q             quiet\n"
"  -F             overwrite an IMAGE that holds data\n"
"  -V             print the version\n"
"  --help         this text\n"
"\n"
"With SOURCE_DATE_EPOCH set, all times are that epoch and the UUID and hash\n"
"seed are derived from it and the label: the same command gives the same\n"
"bytes.\n");
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

static void parse_extended(struct mkfs_opts *o, const char *arg)
{
	char *buf = strdup(arg), *tok, *save = NULL;

	if (!buf) {
		opt_error(o, ENOMEM, "-E %s", arg);
		return;
	}
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *val = strchr(tok, '=');

		if (val)
			*val++ = '\0';
		if (!strcmp(tok, "hash_seed")) {
			if (!val || uuid_parse(val, o->params.hash_seed))
				opt_error(o, E3_BAD_OPTION,
					  "-E hash_seed=%s: not a UUID",
					  val ? val : "");
			else
				o->params.hash_seed_given = 1;
		} else if (!strcmp(tok, "root_owner")) {
			parse_root_owner(o, val);
		} else {
			opt_error(o, E3_BAD_OPTION,
				  "-E %s: unknown extended option (hash_seed, root_owner)",
				  tok);
		}
	}
	free(buf);
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
	case 'J': parse_journal(o, arg); break;
	case 'E': parse_extended(o, arg); break;
	case 'O': {
		errcode_t err = e3_mkfs_edit_features(p, arg);

		if (err == E3_EXT4_FEATURE)
			opt_error(o, err, "feature '%s' is ext4-only; ext3 cannot have it",
				  p->bad_feature);
		else if (err)
			opt_error(o, err, "-O %s: unknown feature (ext3's: has_journal ext_attr resize_inode dir_index filetype sparse_super large_file)",
				  p->bad_feature);
		break;
	}
	case 'd':
		if (o->nsrcs == sizeof(o->srcs) / sizeof(*o->srcs))
			opt_error(o, E3_BAD_OPTION, "-d %s: at most 64 sources", arg);
		else
			o->srcs[o->nsrcs++] = arg;
		break;
	case 'j': {
		uint64_t v;

		if (parse_uint(arg, 1, 4096, &v))
			opt_error(o, E3_BAD_OPTION, "-j %s: a number of threads, 1..4096", arg);
		else
			o->jobs = (unsigned)v;
		break;
	}
	case 'A':
		if (e3_alloc_mode_parse(arg, &o->alloc))
			opt_error(o, E3_BAD_ALLOC_MODE, "--alloc=%s: rbtree, list or none", arg);
		break;
	case OPT_NO_UNPACK: o->no_unpack = 1; break;
	case OPT_KEEP_ZEROS: o->keep_zeros = 1; break;
	case OPT_FILE_CONTEXTS: o->file_contexts = arg; break;
	case OPT_SELINUX_ROOT: o->selinux_root = arg; break;
	case 'n': o->dry_run = 1; break;
	case 'q': o->quiet = 1; break;
	case 'F': o->force = 1; break;
	case 'V': o->version = 1; break;
	case 'h': o->help = 1; break;
	}
}

/* Returns 0, or 2 for a usage error already reported. */
static int parse_args(int argc, char **argv, struct mkfs_opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "alloc", required_argument, NULL, 'A' },
		{ "no-unpack", no_argument, NULL, OPT_NO_UNPACK },
		{ "keep-zeros", no_argument, NULL, OPT_KEEP_ZEROS },
		{ "file-contexts", required_argument, NULL, OPT_FILE_CONTEXTS },
		{ "selinux-root", required_argument, NULL, OPT_SELINUX_ROOT },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	e3_mkfs_params_init(&o->params);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":b:d:E:Fg:hi:I:j:J:L:m:nN:O:qU:V",
				longopts, NULL)) != -1) {
		if (c == '?' || c == ':') {
			tool_getopt_error(argv, c);
			return 2;
		}
		parse_option(o, c, optarg);
	}
	if (o->help || o->version)
		return 0;
	if (optind >= argc) {
		tool_usage_error("no IMAGE given");
		return 2;
	}
	o->image = argv[optind++];
	if (optind < argc)
		o->size_arg = argv[optind++];
	if (optind < argc) {
		tool_usage_error("unexpected argument '%s'", argv[optind]);
		return 2;
	}
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

/* SIZE "auto" / "auto+N%": the sources' exact need plus N%, printed. */
static int parse_auto(struct mkfs_opts *o)
{
	struct e3_copyin_need need;
	struct e3_mkfs_geometry g;
	const char *rest = o->size_arg + 4;
	uint64_t pct = 0;
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
		return 1;
	}
	struct e3_copyin_opts co = { .no_unpack = o->no_unpack,
				     .keep_zeros = o->keep_zeros };
	int bs_given = o->params.block_size != 0;

	err = e3_copyin_auto_size(o->srcs, o->nsrcs, &co, (unsigned)pct,
				  &o->params, &g, &need);
	if (err) {
		tool_measure_error(o->image, err, &need);
		return 1;
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
	return 1;
}

static void on_copy_event(void *ctx, enum e3_copyin_event ev, const char *path,
			  errcode_t err, const struct e3_copyin_stats *st)
{
	char **fatal_path = ctx;

	if (ev == E3_CP_SKIP)
		tool_error(path, err, "skipped");
	else if (ev == E3_CP_ERROR)
		tool_copy_error(path, err, st);
	else if (ev == E3_CP_FATAL && !*fatal_path)
		*fatal_path = strdup(path);	/* told with the image's error */
}

/* -d: the new image filled through the copy-in engine. */
static int fill(struct mkfs_opts *o)
{
	struct e3_open_opts oo = { .flags = E3_OPEN_WRITE, .alloc = o->alloc };
	struct e3_copyin_opts co = { .dest = "/", .clamp_time = -1,
				     .event = on_copy_event };
	struct e3_copyin_stats st = { 0 };
	char *fatal_path = NULL;
	uint64_t more = 0, free_now = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	e3_image_t *img;
	errcode_t err, err2;

	co.threads = o->jobs ? o->jobs : ncpu > 0 ? (unsigned)ncpu : 1;
	co.no_unpack = o->no_unpack;
	co.keep_zeros = o->keep_zeros;
	co.file_contexts = o->file_contexts;
	co.selinux_root = o->selinux_root;
	/* the tree is measured (again, after auto sizing) before anything
	 * is written: a SIZE too small is refused up front rather than
	 * found full half way, and the measure pass's listings let the
	 * workers open files and the scanner skip a stat per entry, which
	 * more than pays for it (small corpus on tmpfs 0.66 -> 0.50 s) */
	co.check_space = 1;
	if (o->params.have_epoch) {
		co.clamp_time = o->params.epoch;
		co.reproducible = 1;
		oo.commit_interval = 1000000;
	}
	err = e3_image_open(o->image, &oo, &img);
	if (err) {
		tool_error(o->image, err, NULL);
		return 1;
	}
	co.event_ctx = &fatal_path;
	err = e3_copyin_run(img, o->srcs, o->nsrcs, &co, &st, &more,
			    &free_now);
	if (err == E3_NO_SPACE_KNOWN || err == E3_NO_INODES_KNOWN) {
		/* nothing copied: the image stays as formatted, empty */
		e3_image_abort(img);
		tool_error(o->image, 0, "image full: the input needs %" PRIu64
			   " more %s (%" PRIu64 " free); %s fits it", more,
			   err == E3_NO_SPACE_KNOWN ? "blocks" : "inodes",
			   free_now, err == E3_NO_SPACE_KNOWN ? "SIZE auto" :
			   "a larger -N or SIZE auto");
		return 1;
	}
	if (err == E3_SOURCE_REFUSED) {
		/* told already, naming the source: nothing copied */
		e3_image_abort(img);
		return 1;
	}
	err2 = e3_image_close(img);
	if (err || err2) {
		if (err && fatal_path)
			tool_error(o->image, err, "copying in %s", fatal_path);
		else
			tool_error(o->image, err ? err : err2, "copying in");
		free(fatal_path);
		return 1;
	}
	if (!o->quiet)
		printf("%s: %" PRIu64 " entries, %" PRIu64 " bytes copied in\n",
		       o->image, st.files, st.bytes);
	return st.skipped || st.errors ? 1 : 0;
}

/* validate → check the target → compute; returns the exit status. */
static int plan(struct mkfs_opts *o, struct e3_mkfs_geometry *g)
{
	struct e3_mkfs_params *p = &o->params;
	const char *why = NULL;
	int64_t epoch;
	errcode_t err;

	if (o->err) {
		tool_error(o->image, 0, "%s", o->err_detail);
		return 1;
	}
	if (o->size_arg && strncmp(o->size_arg, "auto", 4) == 0) {
		if (parse_auto(o))
			return 1;
	} else if (o->size_arg && (parse_size(o->size_arg, &p->size) || !p->size)) {
		tool_error(o->image, 0, "bad size '%s' (a number with K, M, G or T)",
			   o->size_arg);
		return 1;
	}
	if (tool_source_date_epoch(&epoch))
		return 1;
	if (epoch >= 0) {
		p->have_epoch = 1;
		p->epoch = epoch;
	}
	err = e3_mkfs_validate(p, &why);
	if (err) {
		report_plan_error(o, err, why);
		return 1;
	}
	/* -n writes nothing, so only needs the target for its size */
	if (!o->dry_run || !p->size)
		err = e3_mkfs_check_target(o->image, o->force || o->dry_run, p);
	if (err == E3_BAD_SIZE) {
		tool_error(o->image, 0, "no SIZE given and IMAGE has no size");
		return 1;
	}
	if (!err)
		err = e3_mkfs_compute(p, g, &why);
	if (err) {
		report_plan_error(o, err, why);
		return 1;
	}
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
		return rc;
	if (o.help) {
		usage(stdout);
		return 0;
	}
	if (o.version) {
		const char *ver = "?", *date = "?";

		ext2fs_get_library_version(&ver, &date);
		printf("e3mkfs (e3img) %s, libext2fs %s (%s)\n", E3IMG_VERSION,
		       ver, date);
		return 0;
	}
	if (tool_check_sources(o.srcs, o.nsrcs))
		return 1;
	rc = plan(&o, &g);
	if (rc)
		return rc;
	if (o.dry_run || !o.quiet)
		print_geometry(&o, &g);
	if (o.dry_run)
		return 0;
	/* e3cp would refuse the image: say so before formatting it */
	if (o.nsrcs && (err = e3_mkfs_check_journal(&g))) {
		tool_error(o.image, err, NULL);
		return 1;
	}
	err = e3_mkfs_apply(o.image, &o.params, &g, NULL);
	if (err) {
		/* our codes say it all; I/O and libext2fs ones need context */
		if ((err & ~(errcode_t)0xff) == ERROR_TABLE_BASE_e3im)
			tool_error(o.image, err, NULL);
		else
			tool_error(o.image, err, "writing the filesystem");
		return 1;
	}
	if (!o.quiet)
		printf("%s: ext3 filesystem written\n", o.image);
	return o.nsrcs ? fill(&o) : 0;
}
