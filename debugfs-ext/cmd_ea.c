/*
 * cmd_ea.c: extended attributes in debugfs' text — ea_list FILE, ea_get
 * [-f OUTFILE] [-V] FILE NAME, and the "Extended attributes:" part of
 * stat. A value mostly printable is shown quoted with octal escapes,
 * else as hex bytes (debugfs' 7/8 rule).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbg.h"

static void print_value(FILE *f, const char *v, size_t len, int quote)
{
	size_t printable = 0;

	for (size_t i = 0; i < len; i++)
		if (isprint((unsigned char)v[i]))
			printable++;
	if (printable <= len * 7 / 8) {
		for (size_t i = 0; i < len; i++)
			fprintf(f, "%02x ", (unsigned char)v[i]);
		return;
	}
	if (quote)
		fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (isprint(c) && c != '\\')
			fputc(c, f);
		else
			fprintf(f, "\\%03o", c);
	}
	if (quote)
		fputc('"', f);
}

struct ea_print {
	struct dbg *d;
	int statfmt;
	int count;
};

static void print_attr(FILE *f, const char *name, const char *value,
		       size_t len, int statfmt)
{
	fprintf(f, "%s (%zu)", name, len);
	if (len && (!statfmt || len < 40)) {
		fputs(" = ", f);
		print_value(f, value, len, 1);
	}
	fputc('\n', f);
}

static int list_proc(char *name, char *value, size_t len, void *priv)
{
	struct ea_print *p = priv;

	if (!p->count++)
		fprintf(p->d->out, "Extended attributes:\n");
	fputs("  ", p->d->out);
	print_attr(p->d->out, name, value, len, p->statfmt);
	return 0;
}

static errcode_t open_xattrs(struct dbg *d, ext2_ino_t ino,
			     struct ext2_xattr_handle **h)
{
	errcode_t err = ext2fs_xattrs_open(d->fs, ino, h);

	if (err)
		return err;
	err = ext2fs_xattrs_read(*h);
	if (err)
		ext2fs_xattrs_close(h);
	return err;
}

void dbg_print_xattrs(struct dbg *d, ext2_ino_t ino, int statfmt)
{
	struct ext2_xattr_handle *h;
	struct ea_print p = { .d = d, .statfmt = statfmt };

	if (!ext2fs_has_feature_xattr(d->fs->super) || open_xattrs(d, ino, &h))
		return;
	ext2fs_xattrs_iterate(h, list_proc, &p);
	ext2fs_xattrs_close(&h);
}

DBG_CMD(do_ea_list)
{
	struct dbg *d = dbg_of(info);
	struct ext2_xattr_handle *h;
	struct ea_print p = { .d = d };
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 2, 2, "ea_list FILE"))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	if ((err = open_xattrs(d, ino, &h))) {
		dbg_fail(d, err, "%s", argv[1]);
		return;
	}
	ext2fs_xattrs_iterate(h, list_proc, &p);
	ext2fs_xattrs_close(&h);
}

static int write_all(FILE *f, const void *buf, size_t len)
{
	return len && fwrite(buf, len, 1, f) != 1;
}

DBG_CMD(do_ea_get)
{
	struct dbg *d = dbg_of(info);
	const char *outfile = NULL;
	struct ext2_xattr_handle *h;
	int c, raw = 0;
	ext2_ino_t ino;
	void *value = NULL;
	size_t len = 0;
	errcode_t err;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "f:V")) != -1) {
		if (c == 'f')
			outfile = optarg;
		else if (c == 'V')
			raw = 1;
		else
			goto usage;
	}
	if (argc != optind + 2)
		goto usage;
	if (!(ino = dbg_inode(d, argv[optind])))
		return;
	if ((err = open_xattrs(d, ino, &h))) {
		dbg_fail(d, err, "%s", argv[optind]);
		return;
	}
	err = ext2fs_xattr_get(h, argv[optind + 1], &value, &len);
	ext2fs_xattrs_close(&h);
	if (err) {
		dbg_fail(d, err == EXT2_ET_EA_KEY_NOT_FOUND ? ENODATA : err,
			 "%s: %s", argv[optind], argv[optind + 1]);
		return;
	}
	if (outfile) {
		FILE *f = fopen(outfile, "w");

		if (!f || write_all(f, value, len) || fclose(f)) {
			dbg_fail(d, errno, "%s", outfile);
			if (f)
				fclose(f);
		}
	} else if (raw) {
		fwrite(value, len, 1, d->out);
		fputc('\n', d->out);
	} else {
		print_attr(d->out, argv[optind + 1], value, len, 0);
		fputc('\n', d->out);
	}
	ext2fs_free_mem(&value);
	return;
usage:
	dbg_fail(d, 0, "usage: ea_get [-f OUTFILE] [-V] FILE NAME");
}

/* ea_set [-f HOSTFILE] FILE NAME [VALUE]: the value from the command
 * line or, with -f, a host file's bytes */
DBG_CMD(do_ea_set)
{
	struct dbg *d = dbg_of(info);
	const char *file = NULL;
	char *value = NULL;
	size_t len = 0;
	ext2_ino_t ino;
	errcode_t err;
	int c;

	optind = 0;
	while ((c = dbg_getopt(argc, argv, "f:")) != -1) {
		if (c != 'f')
			goto usage;
		file = optarg;
	}
	if (argc != optind + (file ? 2 : 3))
		goto usage;
	if (dbg_need_rw(d) || !(ino = dbg_inode(d, argv[optind])))
		return;
	if (file) {
		FILE *f = fopen(file, "r");
		size_t cap = 65536;

		value = f ? malloc(cap) : NULL;
		if (value)
			len = fread(value, 1, cap, f);
		if (!f || !value || ferror(f) || !feof(f)) {
			dbg_fail(d, !f ? errno : !value ? ENOMEM : E3_XATTR_TOO_BIG,
				 "%s", file);
			if (f)
				fclose(f);
			free(value);
			return;
		}
		fclose(f);
	} else {
		len = strlen(argv[optind + 2]);
	}
	err = e3_setxattr(d->img, ino, argv[optind + 1],
			  file ? value : argv[optind + 2], len);
	free(value);
	if (err)
		dbg_fail(d, err, "%s: %s", argv[optind], argv[optind + 1]);
	else
		d->changed = 1;
	return;
usage:
	dbg_fail(d, 0, "usage: ea_set [-f HOSTFILE] FILE NAME [VALUE]");
}

DBG_CMD(do_ea_rm)
{
	struct dbg *d = dbg_of(info);
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 3, 1 << 20, "ea_rm FILE NAME...") || dbg_need_rw(d))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	for (int i = 2; i < argc; i++) {
		err = e3_removexattr(d->img, ino, argv[i]);
		if (err) {
			dbg_fail(d, err, "%s: %s", argv[1], argv[i]);
			return;
		}
		d->changed = 1;
	}
}
