/*
 * jload.c: the journal's crash-test driver. Loads a deterministic tree
 * into an image from several threads through the bulk-load API, logging
 * which files were committed, and verifies an image against that log
 * after a crash and a replay:
 *
 *   jload load IMAGE NFILES THREADS LOG   files /dT/fI (I % THREADS == T)
 *   jload verify IMAGE NFILES THREADS LOG
 *
 * load appends "C I" to LOG for every file whose close was made durable
 * by a commit (the driver forces a commit every 8 closes, besides the
 * journal's own policy). verify prints "present P lost L wrong W": lost =
 * logged as committed but missing or short; wrong = a file whose bytes are
 * not a prefix of what it was given (ordered mode forbids that). Exit 0
 * only when L == W == 0. Run under E3_FAULT=kill:N for crash sweeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e3img.h"
#include "fs/image.h"
#include "journal/journal.h"
#include "../misc/util.h"

/* forced commits: every 8 closes, or JLOAD_COMMIT_EVERY (0: never, only
 * the journal's own policy — for benchmarks) */
static unsigned commit_every = 8;

struct shared {
	e3_image_t *img;
	unsigned nfiles, threads;
	int logfd;
	ext2_ino_t *dirs;
	unsigned char *closed;		/* [lock] closed, not yet logged */
	unsigned nclosed;		/* [lock] */
	pthread_mutex_t lock;
	errcode_t err;			/* [lock] first error */
};

/* size and bytes of file i: a function of i alone */
static size_t file_size(unsigned i)
{
	static const size_t sizes[] = { 0, 1, 1000, 4096, 5000, 13000, 70000,
					300000 };
	return sizes[(i * 7 + i / 3) % 8] + i % 13;
}

static unsigned char file_byte(unsigned i, size_t off)
{
	uint32_t x = (uint32_t)(off / 64) * 2654435761u ^ (i + 1) * 40503u;

	x ^= x >> 13;
	x *= 0x5bd1e995u;
	return (unsigned char)((x >> 16) + off % 64);
}

static void fill(unsigned i, size_t off, unsigned char *buf, size_t len)
{
	for (size_t k = 0; k < len; k++)
		buf[k] = file_byte(i, off + k);
}

/* the first error, but not a consequence of another thread's */
static void set_err(struct shared *s, errcode_t err)
{
	pthread_mutex_lock(&s->lock);
	if (!s->err || s->err == E3_JOURNAL_ABORTED)
		s->err = err;
	pthread_mutex_unlock(&s->lock);
}

/* commit now and log every file closed before the commit began */
static errcode_t commit_and_log(struct shared *s)
{
	struct e3_image *img = s->img;
	unsigned char *snap;
	errcode_t err;

	snap = calloc(s->nfiles, 1);
	if (!snap)
		return ENOMEM;
	e3_fs_lock(img);
	pthread_mutex_lock(&s->lock);
	memcpy(snap, s->closed, s->nfiles);
	memset(s->closed, 0, s->nfiles);
	s->nclosed = 0;
	pthread_mutex_unlock(&s->lock);
	err = img->journal ? e3_journal_commit(img->journal, 0) : 0;
	if (!err) {
		char line[32];

		for (unsigned i = 0; i < s->nfiles; i++)
			if (snap[i]) {
				int n = snprintf(line, sizeof(line), "C %u\n", i);

				if (write(s->logfd, line, (size_t)n) != n)
					err = errno;
			}
	}
	e3_fs_unlock(img);
	free(snap);
	return err;
}

static errcode_t load_one(struct shared *s, unsigned i, unsigned char *buf)
{
	struct e3_attr attr;
	e3_file_t *f;
	char name[32];
	size_t size = file_size(i), off = 0;
	errcode_t err;
	int do_commit;

	memset(&attr, 0, sizeof(attr));
	attr.mode = 0100644;
	attr.mtime.tv_sec = attr.atime.tv_sec = attr.ctime.tv_sec = 1700000000;
	snprintf(name, sizeof(name), "f%u", i);
	err = e3_create(s->img, s->dirs[i % s->threads], name, &attr, size, &f);
	if (err)
		return err;
	while (off < size) {
		size_t n = size - off < 65536 ? size - off : 65536;

		fill(i, off, buf, n);
		err = e3_file_write(f, buf, n);
		if (err) {
			e3_file_close(f);
			return err;
		}
		off += n;
	}
	err = e3_file_close(f);
	if (err)
		return err;
	pthread_mutex_lock(&s->lock);
	s->closed[i] = 1;
	do_commit = commit_every && ++s->nclosed >= commit_every;
	pthread_mutex_unlock(&s->lock);
	return do_commit ? commit_and_log(s) : 0;
}

struct worker {
	struct shared *s;
	unsigned t;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct shared *s = w->s;
	unsigned char *buf = malloc(65536);
	errcode_t err = buf ? 0 : ENOMEM;

	for (unsigned i = w->t; !err && i < s->nfiles; i += s->threads)
		err = load_one(s, i, buf);
	if (err)
		set_err(s, err);
	free(buf);
	return NULL;
}

static int do_load(const char *image, unsigned nfiles, unsigned threads,
		   const char *logpath)
{
	struct e3_open_opts opts = { .flags = E3_OPEN_WRITE };
	struct shared s;
	pthread_t tid[64];
	struct worker w[64];
	errcode_t err;

	memset(&s, 0, sizeof(s));
	pthread_mutex_init(&s.lock, NULL);
	s.nfiles = nfiles;
	s.threads = threads;
	s.logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	s.dirs = calloc(threads, sizeof(*s.dirs));
	s.closed = calloc(nfiles, 1);
	if (s.logfd < 0 || !s.dirs || !s.closed) {
		tool_error(logpath, errno, NULL);
		return 1;
	}
	err = e3_image_open(image, &opts, &s.img);
	if (err) {
		tool_error(image, err, NULL);
		return 1;
	}
	for (unsigned t = 0; t < threads && !err; t++) {
		struct e3_attr attr = { .mode = 040755 };
		char name[16];

		snprintf(name, sizeof(name), "d%u", t);
		err = e3_mkdir(s.img, EXT2_ROOT_INO, name, &attr, &s.dirs[t]);
	}
	for (unsigned t = 0; t < threads && !err; t++) {
		w[t].s = &s;
		w[t].t = t;
		pthread_create(&tid[t], NULL, work, &w[t]);
	}
	for (unsigned t = 0; t < threads && !err; t++)
		pthread_join(tid[t], NULL);
	if (!err)
		err = s.err;
	if (!err)
		err = commit_and_log(&s);
	if (err) {
		tool_error(image, err, NULL);
		e3_image_abort(s.img);
		return 1;
	}
	err = e3_image_close(s.img);
	free(s.dirs);
	free(s.closed);
	close(s.logfd);
	if (err) {
		tool_error(image, err, "while closing");
		return 1;
	}
	return 0;
}

/* 0 fine, 1 missing, 2 short (a prefix), 3 wrong bytes */
static int check_file(ext2_filsys fs, unsigned i, unsigned threads)
{
	char path[48];
	ext2_ino_t ino;
	ext2_file_t file;
	unsigned char buf[8192];
	size_t size = file_size(i), off = 0;
	unsigned got;
	int rc = 0;

	snprintf(path, sizeof(path), "/d%u/f%u", i % threads, i);
	if (ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, path, &ino))
		return 1;
	if (ext2fs_file_open(fs, ino, 0, &file))
		return 3;
	__u64 isize = 0;

	if (ext2fs_file_get_lsize(file, &isize) || isize > size)
		rc = 3;
	while (!rc && !ext2fs_file_read(file, buf, sizeof(buf), &got) && got) {
		for (unsigned k = 0; k < got; k++)
			if (buf[k] != file_byte(i, off + k))
				rc = 3;
		off += got;
	}
	if (!rc && off < size)
		rc = 2;
	ext2fs_file_close(file);
	return rc;
}

static int do_verify(const char *image, unsigned nfiles, unsigned threads,
		     const char *logpath)
{
	unsigned char *committed = calloc(nfiles, 1);
	unsigned present = 0, lost = 0, wrong = 0, i;
	ext2_filsys fs;
	FILE *log;
	errcode_t err;

	log = fopen(logpath, "r");
	if (!committed || !log) {
		tool_error(logpath, errno, NULL);
		return 2;
	}
	while (fscanf(log, "C %u\n", &i) == 1)
		if (i < nfiles)
			committed[i] = 1;
	fclose(log);
	err = ext2fs_open(image, EXT2_FLAG_64BITS, 0, 0, unix_io_manager, &fs);
	if (err) {
		tool_error(image, err, NULL);
		return 2;
	}
	for (i = 0; i < nfiles; i++) {
		int rc = check_file(fs, i, threads);

		if (rc != 1)
			present++;
		if (rc == 3)
			wrong++;
		if (committed[i] && rc != 0)
			lost++;
	}
	ext2fs_close_free(&fs);
	free(committed);
	printf("present %u lost %u wrong %u\n", present, lost, wrong);
	return lost || wrong;
}

int main(int argc, char **argv)
{
	uint64_t nfiles, threads;

	tool_init(argv[0]);
	if (getenv("JLOAD_COMMIT_EVERY"))
		commit_every = (unsigned)atoi(getenv("JLOAD_COMMIT_EVERY"));
	if (argc != 6 || parse_uint(argv[3], 1, 1000000, &nfiles) ||
	    parse_uint(argv[4], 1, 64, &threads)) {
		tool_usage_error("usage: jload load|verify IMAGE NFILES THREADS LOG");
		return 2;
	}
	if (strcmp(argv[1], "load") == 0)
		return do_load(argv[2], (unsigned)nfiles, (unsigned)threads, argv[5]);
	if (strcmp(argv[1], "verify") == 0)
		return do_verify(argv[2], (unsigned)nfiles, (unsigned)threads, argv[5]);
	tool_usage_error("unknown mode %s", argv[1]);
	return 2;
}
