/*
 * exit.h: the one exit-status table of e3mkfs, e3cp, e3defrag and
 * e3debugfs (e3fsck keeps e2fsck's, which scripts already test for).
 * The values are bits, as fsck's are, so a wrapper can test them the same
 * way; the README's "Exit codes" table is this one.
 */
#ifndef E3_MISC_EXIT_H
#define E3_MISC_EXIT_H

/* Everything asked for was done. */
#define E3_EXIT_OK	0
/* Done, but something was left out and named on stderr: entries skipped
 * (e3cp, e3mkfs -d), files left fragmented (e3defrag), a request that
 * failed (e3debugfs). The image is consistent. */
#define E3_EXIT_PARTIAL	1
/* The job could not be done: the image cannot be opened or made, it is
 * full, a source is missing, I/O failed. The image is as it was, or
 * consistent (the message says which). */
#define E3_EXIT_ERROR	8
/* Bad command line; nothing was touched. */
#define E3_EXIT_USAGE	16
/* Stopped by a signal; the image is consistent after journal replay. */
#define E3_EXIT_INTR	32

#endif
