/*
 * shell.c: e3debugfs' main — options, opening the image, running each
 * request through the libss table (e3debugfs_cmds.ct), and the exit
 * status: 0 every request succeeded, 1 one failed (named on stderr as
 * "e3debugfs: IMAGE: request: reason"), 8 the image cannot be opened,
 * 16 usage.
 *
 * Requests come from -R (repeatable), -f FILE (or - for stdin) or, with
 * neither, standard input: on a terminal with a prompt and, when a
 * readline library is present, line editing and history (readline.c
 * loads it as libss would). Blank lines and lines starting with '#' are
 * skipped; a line starting with '!' (libss' shell escape) is refused: no
 * script and no terminal session ever runs a shell. Lines are run with
 * ss_execute_line; ss_listen is not used, because it would run the
 * escape.
 *
 * -J: one JSON object per request on stdout, {"request", "ok", "error",
 * "result"}, result being the text the request printed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ss/ss.h>

#include "dbg.h"
#include "open.h"
#include "readline.h"

#define E3IMG_VERSION "0.1.0"

extern ss_request_table e3debugfs_cmds;

static void usage(void)
{
	fprintf(stderr,
		"usage: e3debugfs [-w] [-c] [-b BLOCKSIZE -s SUPERBLOCK] "
		"[-R REQUEST]... [-f FILE|-] [-J] [-e] IMAGE\n");
}

static void json_string(FILE *f, const char *s, size_t len)
{
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else if (c < 0x80)
			fputc(c, f);
		else	/* not necessarily UTF-8: keep JSON valid */
			fprintf(f, "\\u%04x", c);
	}
	fputc('"', f);
}

static void trim(char *s)
{
	size_t n = strlen(s);
	char *p = s;

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' ||
		     s[n - 1] == '\t'))
		s[--n] = '\0';
	while (*p == ' ' || *p == '\t')
		p++;
	memmove(s, p, strlen(p) + 1);
}

/* the requests that run without an open image (after close) */
static int needs_no_image(const char *line)
{
	static const char *const names[] = { "open", "open_filesys", "lr",
		"list_requests", "?", "help", "quit", "q", NULL };
	size_t n = strcspn(line, " \t");

	for (const char *const *p = names; *p; p++)
		if (strlen(*p) == n && !strncmp(line, *p, n))
			return 1;
	return 0;
}

static void execute(struct dbg *d, int sci, char *line)
{
	int code;

	if (line[0] == '!') {
		dbg_fail(d, 0, "the shell escape '!' is disabled");
		return;
	}
	if (!d->fs && !needs_no_image(line)) {
		dbg_fail(d, 0, "no image is open (open one with \"open IMAGE\")");
		return;
	}
	code = ss_execute_line(sci, line);
	if (code == SS_ET_COMMAND_NOT_FOUND)
		dbg_fail(d, 0, "unknown request (try \"lr\")");
	else if (code)
		dbg_fail(d, code, NULL);
}

static void finish_request(struct dbg *d, const char *line, char *buf,
			   size_t len)
{
	errcode_t err;

	if (!d->failed && d->changed && d->img) {
		/* a finished request survives a kill */
		err = e3_image_commit(d->img);
		if (err)
			dbg_fail(d, err, "commit");
	}
	if (d->failed) {
		d->any_failed = 1;
		fprintf(stderr, "e3debugfs: %s: %s: %s\n", d->image, line,
			d->errmsg);
	}
	if (d->json) {
		fputs("{\"request\": ", stdout);
		json_string(stdout, line, strlen(line));
		fprintf(stdout, ", \"ok\": %s, \"error\": ",
			d->failed ? "false" : "true");
		if (d->failed)
			json_string(stdout, d->errmsg, strlen(d->errmsg));
		else
			fputs("null", stdout);
		fputs(", \"result\": ", stdout);
		json_string(stdout, buf ? buf : "", buf ? len : 0);
		fputs("}\n", stdout);
	}
	fflush(stdout);
}

void dbg_run_line(struct dbg *d, int sci, const char *text)
{
	char *line = strdup(text), *buf = NULL;
	size_t len = 0;

	if (!line) {
		fprintf(stderr, "e3debugfs: out of memory\n");
		exit(DBG_EXIT_FAILED);
	}
	trim(line);
	if (!*line || line[0] == '#') {
		free(line);
		return;
	}
	d->request = line;
	d->failed = 0;
	d->changed = 0;
	d->errmsg[0] = '\0';
	if (d->json) {
		d->out = open_memstream(&buf, &len);
		if (!d->out) {
			fprintf(stderr, "e3debugfs: out of memory\n");
			exit(DBG_EXIT_FAILED);
		}
	} else {
		d->out = stdout;
	}
	{
		/* ss_execute_line takes the line apart in place */
		char *copy = strdup(line);

		if (copy)
			execute(d, sci, copy);
		else
			dbg_fail(d, ENOMEM, NULL);
		free(copy);
	}
	if (d->json) {
		fclose(d->out);
		d->out = stdout;
	}
	finish_request(d, line, buf, len);
	free(buf);
	free(line);
	d->request = NULL;
}

static int stop(const struct dbg *d)
{
	return d->quit || (d->stop_on_error && d->any_failed);
}

static void run_stream(struct dbg *d, int sci, FILE *f, int echo, int prompt)
{
	char *line = NULL;
	size_t cap = 0;

	for (;;) {
		if (prompt) {
			fputs("e3debugfs:  ", stdout);
			fflush(stdout);
		}
		if (getline(&line, &cap, f) < 0)
			break;
		if (echo) {
			char *t = strdup(line);

			if (t) {
				trim(t);
				/* as debugfs -f: each request echoed */
				if (*t && *t != '#' && !d->json) {
					printf("e3debugfs: %s\n", t);
					fflush(stdout);
				}
				free(t);
			}
		}
		dbg_run_line(d, sci, line);
		if (stop(d))
			break;
	}
	free(line);
}

/* A terminal session with line editing: readline's prompt and history. */
static void run_readline(struct dbg *d, int sci, struct dbg_rl *rl)
{
	char *line;

	while ((line = rl->readline("e3debugfs:  "))) {
		if (*line && rl->add_history)
			rl->add_history(line);
		dbg_run_line(d, sci, line);
		free(line);
		if (stop(d))
			break;
	}
}

struct opts {
	int write, catastrophic, json, stop_on_error;
	unsigned long blocksize, superblock;
	const char **requests;
	size_t nrequests;
	const char *file, *image;
};

static int parse(int argc, char **argv, struct opts *o)
{
	int c;
	char *end;

	o->requests = calloc((size_t)argc, sizeof(*o->requests));
	if (!o->requests)
		return 1;
	opterr = 0;
	while ((c = getopt(argc, argv, "wcb:s:R:f:JeV")) != -1) {
		switch (c) {
		case 'w': o->write = 1; break;
		case 'c': o->catastrophic = 1; break;
		case 'J': o->json = 1; break;
		case 'e': o->stop_on_error = 1; break;
		case 'R': o->requests[o->nrequests++] = optarg; break;
		case 'f':
			if (o->file) {
				fprintf(stderr, "e3debugfs: -f given twice\n");
				return 1;
			}
			o->file = optarg;
			break;
		case 'b':
			o->blocksize = strtoul(optarg, &end, 0);
			if (*end || (o->blocksize != 1024 && o->blocksize != 2048 &&
				     o->blocksize != 4096)) {
				fprintf(stderr, "e3debugfs: bad block size: %s\n", optarg);
				return 1;
			}
			break;
		case 's':
			o->superblock = strtoul(optarg, &end, 0);
			if (*end || !o->superblock) {
				fprintf(stderr, "e3debugfs: bad superblock: %s\n", optarg);
				return 1;
			}
			break;
		case 'V':
			printf("e3debugfs (e3img) %s\n", E3IMG_VERSION);
			exit(0);
		default:
			fprintf(stderr, "e3debugfs: bad option -%c\n", optopt);
			return 1;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "e3debugfs: %s\n", optind >= argc ?
			"no image given" : "one image only");
		return 1;
	}
	if (o->superblock && !o->blocksize) {
		fprintf(stderr, "e3debugfs: -s needs -b\n");
		return 1;
	}
	if (o->superblock && o->write && !o->catastrophic) {
		fprintf(stderr, "e3debugfs: -s (a backup superblock) is read-only: "
			"drop -w\n");
		return 1;
	}
	o->image = argv[optind];
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct dbg d = { 0 };
	int sci, code, status;
	errcode_t err;

	e3_init_errors();
	if (parse(argc, argv, &o)) {
		usage();
		free(o.requests);
		return DBG_EXIT_USAGE;
	}
	d.json = o.json;
	d.stop_on_error = o.stop_on_error;
	d.out = stdout;
	err = dbg_open(&d, o.image, o.write, o.catastrophic, o.superblock,
		       (unsigned)o.blocksize);
	if (err) {
		fprintf(stderr, "e3debugfs: %s: %s\n", o.image, error_message(err));
		free(d.image);
		free(o.requests);
		return DBG_EXIT_OPEN;
	}
	sci = ss_create_invocation("e3debugfs", "0.1", &d, &e3debugfs_cmds,
				   &code);
	if (code) {
		fprintf(stderr, "e3debugfs: %s\n", error_message(code));
		dbg_close(&d);
		free(d.image);
		free(o.requests);
		return DBG_EXIT_FAILED;
	}
	for (size_t i = 0; i < o.nrequests && !stop(&d); i++)
		dbg_run_line(&d, sci, o.requests[i]);
	if (o.file && !stop(&d)) {
		FILE *f = strcmp(o.file, "-") ? fopen(o.file, "r") : stdin;

		if (!f) {
			fprintf(stderr, "e3debugfs: %s: %s\n", o.file, strerror(errno));
			d.any_failed = 1;
		} else {
			run_stream(&d, sci, f, 1, 0);
			if (f != stdin)
				fclose(f);
		}
	}
	if (!o.nrequests && !o.file) {
		struct dbg_rl rl;

		if (isatty(0) && dbg_rl_load(&rl)) {
			run_readline(&d, sci, &rl);
			dbg_rl_unload(&rl);
		} else {
			run_stream(&d, sci, stdin, 0, isatty(0));
		}
	}
	ss_delete_invocation(sci);
	status = d.any_failed ? DBG_EXIT_FAILED : DBG_EXIT_OK;
	if (dbg_close(&d) && status == DBG_EXIT_OK)
		status = DBG_EXIT_FAILED;
	if (d.open_failed)
		status = DBG_EXIT_OPEN;
	free(d.image);
	free(o.requests);
	return status;
}
