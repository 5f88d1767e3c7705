/*
 * util.c: the tools' shared helpers (see util.h). The program name is the
 * one piece of process-wide state, set once at start-up.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <getopt.h>
#include <sys/stat.h>

#include "util.h"

static const char *prog = "e3img";

void tool_init(const char *argv0)
{
	const char *slash = strrchr(argv0, '/');

	prog = slash ? slash + 1 : argv0;
	e3_init_errors();
}

const char *tool_name(void)
{
	return prog;
}

void tool_error(const char *subject, errcode_t err, const char *fmt, ...)
{
	const char *why = err ? error_message(err) : "";
	char msg[1024] = "";
	size_t n, w = strlen(why);
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	}
	n = strlen(msg);
	/* a message that already ends with the error's text (a report that
	 * carries it, "%s" of a library string) does not get it twice */
	if (!fmt || (w && n >= w && strcmp(msg + n - w, why) == 0))
		w = 0;
	fprintf(stderr, "%s: ", prog);
	if (subject)
		fprintf(stderr, "%s: ", tool_quote(subject));
	fprintf(stderr, "%s%s%s\n", fmt ? msg : error_message(err),
		w ? ": " : "", w ? why : "");
}

/* Quoting is needed for a control character (a newline would start a
 * forged line, an escape sequence would reach the terminal); bytes of
 * 0x80 and up are left to the terminal, as UTF-8 names are. */
static int needs_quote(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

const char *tool_quote(const char *s)
{
	/* a few results live at once (one message may quote several
	 * names); each thread has its own */
	static _Thread_local char *ring[4];
	static _Thread_local unsigned next;
	char *out, *p;
	int in_quotes = 0;

	if (!s || !needs_quote(s))
		return s;
	/* worst case per byte: '\'' (4) or $'\ooo' with quotes closed (9) */
	out = malloc(strlen(s) * 9 + 3);
	if (!out)
		return "(name not shown: out of memory)";
	p = out;
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < 0x20 || ch == 0x7f) {
			static const char esc[] = "abtnvfr";

			if (in_quotes)
				*p++ = '\'', in_quotes = 0;
			if (ch >= 7 && ch <= 13)
				p += sprintf(p, "$'\\%c'", esc[ch - 7]);
			else
				p += sprintf(p, "$'\\%03o'", ch);
			continue;
		}
		if (!in_quotes)
			*p++ = '\'', in_quotes = 1;
		if (ch == '\'')
			p += sprintf(p, "'\\''");
		else
			*p++ = (char)ch;
	}
	if (in_quotes)
		*p++ = '\'';
	*p = '\0';
	free(ring[next]);
	ring[next] = out;
	next = (next + 1) % 4;
	return out;
}

void tool_version(void)
{
	const char *ver, *date;

	ext2fs_get_library_version(&ver, &date);
	printf("%s (e3img) %s, libext2fs %s (%s)\n", prog, E3IMG_VERSION, ver,
	       date);
}

void tool_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see '%s --help')\n", prog);
}

void tool_getopt_error(char *const *argv, int c)
{
	/* the argument getopt stopped at, when it has moved past it: a long
	 * option ("--name[=value]") always, a short one at the end of its
	 * group (-vZ: optind still points at the group, so optopt is used) */
	const char *arg = optind > 0 ? argv[optind - 1] : NULL;
	int is_long = arg && strncmp(arg, "--", 2) == 0 && arg[2] &&
		      (c == ':' || optopt == 0 || strchr(arg, '='));
	int len = is_long ? (int)strcspn(arg, "=") : 0;

	if (c == ':' && is_long)
		tool_usage_error("option '%.*s' needs a value", len, arg);
	else if (c == ':')
		tool_usage_error("option -%c needs a value", optopt);
	else if (is_long && optopt)
		tool_usage_error("option '%.*s' takes no value", len, arg);
	else if (is_long)
		tool_usage_error("unknown option '%.*s'", len, arg);
	else if (optopt)
		tool_usage_error("option -%c is unknown", optopt);
	else
		tool_usage_error("unknown option '%s'", arg ? arg : "?");
}

int tool_source_date_epoch(int64_t *epoch)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char shown[48];
	size_t i;

	if (!e3_source_date_epoch(epoch))
		return 0;
	/* the value as given, but never more than one line of it */
	for (i = 0; s[i] && i < sizeof(shown) - 4; i++)
		shown[i] = s[i] >= ' ' && s[i] < 0x7f ? s[i] : '?';
	strcpy(shown + i, s[i] ? "..." : "");
	tool_error(NULL, 0, "%s, not '%s'", error_message(E3_BAD_EPOCH), shown);
	return -1;
}

errcode_t parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (!s || !*s || *s == '-')
		return E3_BAD_OPTION;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || *end || x < min || x > max)
		return E3_BAD_OPTION;
	*v = x;
	return 0;
}

errcode_t parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	unsigned long long x;
	unsigned shift = 0;

	if (!s || !*s || *s == '-')
		return E3_BAD_SIZE;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || end == s)
		return E3_BAD_SIZE;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: return E3_BAD_SIZE;
	}
	if (*end && end[1] != '\0' && !((end[1] == 'i' || end[1] == 'B') &&
	    (end[2] == '\0' || (end[1] == 'i' && end[2] == 'B' && end[3] == '\0'))))
		return E3_BAD_SIZE;
	if (shift && x > (UINT64_MAX >> shift))
		return E3_BAD_SIZE;
	*bytes = (uint64_t)x << shift;
	return 0;
}

void tool_copy_error(const char *path, errcode_t err,
		     const struct e3_copyin_stats *st)
{
	if (err == E3_XATTR_TOO_BIG && st && st->bad_xattr_bytes)
		tool_error(path, 0, "%" PRIu64 " bytes of extended attributes, "
			   "more than a %u-byte block holds (make the image "
			   "with -b 4096)", st->bad_xattr_bytes, st->bad_block);
	else
		tool_error(path, err, NULL);
}

int tool_check_sources(const char *const *srcs, size_t n)
{
	struct stat st;
	int bad = 0;

	for (size_t i = 0; i < n; i++)
		if (strcmp(srcs[i], "-") != 0 && stat(srcs[i], &st) < 0) {
			tool_error(srcs[i], (errcode_t)errno, NULL);
			bad = 1;
		}
	return bad;
}
