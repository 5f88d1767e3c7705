/*
 * util.h: small helpers shared by the command-line tools: error reporting
 * in the house format ("prog: image: message"), size parsing.
 */
#ifndef E3_MISC_UTIL_H
#define E3_MISC_UTIL_H

#include <stdint.h>
#include "e3img.h"

/* Sets the program name used in messages and registers the error tables. */
void tool_init(const char *argv0);
const char *tool_name(void);
/* "prog: subject: message[: detail]" on stderr; subject and detail may be
 * NULL. The message is error_message(err) when fmt is NULL. */
void tool_error(const char *subject, errcode_t err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A name as messages show it: as it is when it holds no control
 * character, else shell-quoted as GNU tools' shell-escape style does
 * ('a'$'\n''b'), so a newline or an escape sequence in a name can
 * neither forge a line nor reach the terminal. tool_error quotes its
 * subject with it; pass any other name in a message through it. The
 * result lives until four more quoted names were asked for by the same
 * thread. */
const char *tool_quote(const char *s);
/* configure.ac's AC_INIT version */
#define E3IMG_VERSION "0.1.0"
/* --version: "prog (e3img) VERSION, libext2fs VERSION (DATE)" on stdout. */
void tool_version(void);
/* "prog: message (see 'prog --help')" for usage errors: one line. */
void tool_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reports what getopt_long returned for a bad command line, as one
 * tool_usage_error line: c is '?' (unknown option) or ':' (missing
 * value). The tools call getopt_long with opterr = 0 and an optstring
 * that starts with ':', so getopt itself prints nothing. */
void tool_getopt_error(char *const *argv, int c);

/* An entry's error from the copy-in engine (E3_CP_ERROR): one line
 * naming it; xattrs the measure found too big for the block size say by
 * how much, with the way out. */
void tool_copy_error(const char *path, errcode_t err,
		     const struct e3_copyin_stats *st);

/* Says which of the sources ("-" is stdin) cannot be found or reached,
 * naming it; 0 when all can. Checked before the image is touched. */
int tool_check_sources(const char *const *srcs, size_t n);

/* SOURCE_DATE_EPOCH through the library's one parser: 0 with *epoch the
 * value (-1 when unset or empty), or -1 after one line naming the
 * variable, its value and the range. */
int tool_source_date_epoch(int64_t *epoch);

/* Parses "123", "64K", "8M", "1G", "2T" (powers of 1024) into bytes.
 * Returns 0 or E3_BAD_SIZE. */
errcode_t parse_size(const char *s, uint64_t *bytes);
/* Parses an unsigned integer that must lie in [min, max]. */
errcode_t parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *v);

#endif
