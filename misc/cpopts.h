/*
 * cpopts.h: the copy-in options e3cp and e3mkfs -d share — owner, id
 * maps, device table, --overwrite, -v, archive and zero-block handling,
 * SELinux labels — parsed in one place so both tools
 * spell, check and explain them the same way.
 */
#ifndef E3_MISC_CPOPTS_H
#define E3_MISC_CPOPTS_H

#include <getopt.h>
#include "e3img.h"

/* getopt_long values; short options -D and -v are their own letters. */
enum {
	CPOPT_OWNER = 0x1000, CPOPT_UIDMAP, CPOPT_GIDMAP, CPOPT_OVERWRITE,
	CPOPT_NO_UNPACK, CPOPT_KEEP_ZEROS, CPOPT_FILE_CONTEXTS,
	CPOPT_SELINUX_ROOT,
};

/* Entries for a tool's struct option table. */
#define CPOPTS_LONG_OPTIONS \
	{ "owner", required_argument, NULL, CPOPT_OWNER }, \
	{ "uid-map", required_argument, NULL, CPOPT_UIDMAP }, \
	{ "gid-map", required_argument, NULL, CPOPT_GIDMAP }, \
	{ "devtab", required_argument, NULL, 'D' }, \
	{ "overwrite", no_argument, NULL, CPOPT_OVERWRITE }, \
	{ "verbose", no_argument, NULL, 'v' }, \
	{ "no-unpack", no_argument, NULL, CPOPT_NO_UNPACK }, \
	{ "keep-zeros", no_argument, NULL, CPOPT_KEEP_ZEROS }, \
	{ "file-contexts", required_argument, NULL, CPOPT_FILE_CONTEXTS }, \
	{ "selinux-root", required_argument, NULL, CPOPT_SELINUX_ROOT }

/* Lines for a tool's --help. */
#define CPOPTS_HELP \
"  --owner UID:GID      owner of everything copied\n" \
"  --uid-map FROM:TO    map a source uid (repeatable); --gid-map likewise\n" \
"  -D, --devtab FILE    genext2fs device table applied after the sources\n" \
"  --overwrite          replace existing entries (not directories)\n" \
"  -v, --verbose        list each entry (its path in the image)\n" \
"  --no-unpack          copy archive SRCs as files, not their contents\n" \
"  --keep-zeros         write all-zero blocks (default: they stay holes)\n" \
"  --file-contexts FILE label every entry copied (security.selinux) from\n" \
"                       an SELinux file_contexts file\n" \
"  --selinux-root PATH  where the image is mounted, for those lookups\n"

struct cpopts {
	struct e3_idmap *uid_map, *gid_map;	/* grown by each --*-map */
	size_t n_uid, n_gid;
	int verbose;
};

/* Applies option opt (a getopt_long value) to c and o: 1 when it was one
 * of these, 0 when it is not (the tool handles it), -1 when its value is
 * bad (told on one usage line). */
int cpopts_parse(struct cpopts *c, struct e3_copyin_opts *o, int opt,
		 const char *arg);
/* Points o at c's maps; call once parsing is over. */
void cpopts_finish(struct cpopts *c, struct e3_copyin_opts *o);
void cpopts_free(struct cpopts *c);

/* One progress line on stderr (rewritten in place with \r): files and
 * MiB so far, "of" the totals when the measure pass knew them, the rate
 * over elapsed seconds and an ETA. Returns 1: a line is showing, to be
 * ended with a newline before any other message. */
int cpopts_show_progress(const struct e3_copyin_stats *st, double elapsed);
/* The line for an entry left out (E3_CP_SKIP), the same in both tools. */
void cpopts_report_skip(const char *path, errcode_t err);

#endif
