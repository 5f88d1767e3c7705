/*
 * mixload.c: a dbench-like mixed load of many clients, offline (through
 * lib/e3img.h) or through a mounted directory (the kernel's ext3).
 *
 *   mixload [--threads N] [--ops K] [--seed S] [--alloc=MODE] IMAGE
 *   mixload --posix DIR [--threads N] [--ops K] [--seed S]
 *
 * N client threads, each in a directory of its own, each run K operations
 * drawn from a seeded generator (client i's seed is S + i, so a run is
 * the same sequence of operations whatever the timing): create a file
 * with a size hint and write it whole; create one without a hint (a
 * stream, left open); append to an open stream; rewrite a block in place
 * in an open stream; close a stream; unlink a name (e3_remove, or
 * unlink(2)); mkdir; a hard link to a closed file. File sizes are 1-64 KiB
 * (log-uniform), appends 4-16 KiB, rewrites 4 KiB; a client keeps at most
 * 4 streams and 64 names, unlinking when it has more, so the image holds
 * a few MiB per client whatever K is. dbench's reads have no counterpart
 * here (the library writes; it has no read path for loaders).
 *
 * Prints one line: threads, ops, seconds (first operation to the image
 * closed, or syncfs for --posix), ops/s, MB/s written, and voluntary and
 * involuntary context switches per operation and CPU time (user + system)
 * per operation (getrusage RUSAGE_SELF over the same span: the whole
 * process, every thread), and the journal commits the run made (the
 * library; the close's included): a run that fills transactions
 * commits while it runs (since issue 21 the commit's flushes run without
 * the image's fs_lock: only the client whose operation started it waits
 * for them), where a short one (few clients) commits only at the close.
 * CPU per operation is what the other jobs on a
 * busy machine disturb least: it grows with contention (spinning, futex
 * wake-ups, cache misses on shared state), not with time spent waiting
 * for a core.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "e3img.h"
#include "../misc/util.h"

#define MAX_STREAMS	4
#define MAX_NAMES	64
#define STREAM_MAX	(256 * 1024)	/* a stream is closed past this */

enum op { OP_CREATE_HINT, OP_CREATE_STREAM, OP_APPEND, OP_REWRITE,
	  OP_CLOSE, OP_UNLINK, OP_MKDIR, OP_LINK, OP_N };

/* Out of 100: the mix. */
static const unsigned op_weight[OP_N] = {
	[OP_CREATE_HINT] = 25, [OP_CREATE_STREAM] = 10, [OP_APPEND] = 25,
	[OP_REWRITE] = 10, [OP_CLOSE] = 5, [OP_UNLINK] = 15, [OP_MKDIR] = 3,
	[OP_LINK] = 7,
};

struct stream {
	e3_file_t *f;		/* library */
	int fd;			/* --posix */
	char path[64];		/* --posix: relative to the client dir */
	uint32_t dir;		/* index into the client's dirs */
	char name[32];
	ext2_ino_t ino;
	uint64_t size;
};

struct name {
	uint32_t dir;
	char name[32];
	ext2_ino_t ino;		/* library: the inode, for links */
};

struct client {
	struct run *run;
	unsigned id;
	uint64_t rng;
	ext2_ino_t dirs[64];	/* library: the client dir and its subdirs */
	unsigned ndirs;
	struct stream s[MAX_STREAMS];
	unsigned ns;
	struct name n[MAX_NAMES + MAX_STREAMS];	/* closing streams at the end
						   may pass MAX_NAMES */
	unsigned nn;
	unsigned serial;
	uint64_t bytes, ops;
	errcode_t err;
	const char *what;	/* the operation that failed */
	unsigned char buf[64 * 1024];
};

struct run {
	e3_image_t *img;
	const char *posix;	/* the mounted directory, or NULL */
	unsigned threads;
	uint64_t ops;
	pthread_barrier_t start;
};

static uint64_t next_rand(struct client *c)
{
	uint64_t x = (c->rng += 0x9E3779B97F4A7C15ULL);

	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

static unsigned below(struct client *c, unsigned n)
{
	return (unsigned)(next_rand(c) % n);
}

/* 1-64 KiB, log-uniform: most files small, as in a build tree. */
static size_t file_size(struct client *c)
{
	unsigned shift = 10 + below(c, 6);

	return ((size_t)1 << shift) + below(c, 1u << shift);
}

static void fill(struct client *c, size_t len)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = next_rand(c);

		memcpy(c->buf + i, &w, len - i < 8 ? len - i : 8);
	}
}

static void now_attr(struct e3_attr *a, uint32_t mode)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	memset(a, 0, sizeof(*a));
	a->mode = mode;
	a->atime = a->mtime = a->ctime = t;
}

/* --posix paths: DIR/cID/dJ/name (d0 is the client dir itself). */
static void posix_path(struct client *c, uint32_t dir, const char *name,
		       char *out, size_t len)
{
	if (dir)
		snprintf(out, len, "%s/c%u/d%u%s%s", c->run->posix, c->id, dir,
			 name ? "/" : "", name ? name : "");
	else
		snprintf(out, len, "%s/c%u%s%s", c->run->posix, c->id,
			 name ? "/" : "", name ? name : "");
}

static errcode_t write_all(int fd, const void *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t w = off < 0 ? write(fd, buf, len) : pwrite(fd, buf, len, off);

		if (w < 0)
			return errno;
		buf = (const char *)buf + w;
		len -= (size_t)w;
		if (off >= 0)
			off += w;
	}
	return 0;
}

static void remember(struct client *c, uint32_t dir, const char *name,
		     ext2_ino_t ino)
{
	struct name *n = &c->n[c->nn++];

	n->dir = dir;
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->ino = ino;
}

/* A new file of size bytes with a hint (stream: no hint, left open). */
static errcode_t op_create(struct client *c, int stream)
{
	struct run *r = c->run;
	uint32_t dir = below(c, c->ndirs);
	size_t size = stream ? 4096 * (1 + below(c, 4)) : file_size(c);
	struct e3_attr a;
	char name[32], path[4096];
	errcode_t err = 0;
	e3_file_t *f = NULL;
	ext2_ino_t ino = 0;
	int fd = -1;

	snprintf(name, sizeof(name), "f%u", c->serial++);
	fill(c, size);
	if (r->posix) {
		posix_path(c, dir, name, path, sizeof(path));
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			return errno;
		err = write_all(fd, c->buf, size, -1);
	} else {
		now_attr(&a, S_IFREG | 0644);
		err = e3_create(r->img, c->dirs[dir], name, &a,
				stream ? E3_SIZE_UNKNOWN : size, &f);
		if (err)
			return err;
		ino = e3_file_ino(f);
		err = e3_file_write(f, c->buf, size);
	}
	c->bytes += size;
	if (stream && !err) {
		struct stream *s = &c->s[c->ns++];

		s->f = f;
		s->fd = fd;
		s->dir = dir;
		s->ino = ino;
		s->size = size;
		snprintf(s->name, sizeof(s->name), "%s", name);
		return 0;
	}
	if (r->posix) {
		if (close(fd) && !err)
			err = errno;
	} else {
		errcode_t e2 = e3_file_close(f);

		err = err ? err : e2;
	}
	if (!err)
		remember(c, dir, name, ino);
	return err;
}

static errcode_t close_stream(struct client *c, unsigned i)
{
	struct stream s = c->s[i];
	errcode_t err;

	c->s[i] = c->s[--c->ns];
	if (c->run->posix)
		err = close(s.fd) ? errno : 0;
	else
		err = e3_file_close(s.f);
	if (!err)
		remember(c, s.dir, s.name, s.ino);
	return err;
}

static errcode_t op_append(struct client *c)
{
	struct stream *s = &c->s[below(c, c->ns)];
	size_t len = 4096 * (1 + below(c, 4));
	errcode_t err;

	fill(c, len);
	err = c->run->posix ? write_all(s->fd, c->buf, len, -1)
			    : e3_file_write(s->f, c->buf, len);
	s->size += len;
	c->bytes += len;
	if (!err && s->size > STREAM_MAX)
		err = close_stream(c, (unsigned)(s - c->s));
	return err;
}

static errcode_t op_rewrite(struct client *c)
{
	struct stream *s = &c->s[below(c, c->ns)];
	uint64_t off = 4096ULL * below(c, (unsigned)(s->size / 4096));

	fill(c, 4096);
	c->bytes += 4096;
	return c->run->posix ? write_all(s->fd, c->buf, 4096, (off_t)off)
			     : e3_file_pwrite(s->f, c->buf, 4096, off);
}

static errcode_t op_unlink(struct client *c)
{
	unsigned i = below(c, c->nn);
	struct name n = c->n[i];
	char path[4096];

	c->n[i] = c->n[--c->nn];
	if (c->run->posix) {
		posix_path(c, n.dir, n.name, path, sizeof(path));
		return unlink(path) ? errno : 0;
	}
	return e3_remove(c->run->img, c->dirs[n.dir], n.name);
}

static errcode_t op_mkdir(struct client *c)
{
	char name[32], path[4096];
	struct e3_attr a;
	uint32_t d = c->ndirs;

	snprintf(name, sizeof(name), "d%u", d);
	c->ndirs++;
	if (c->run->posix) {
		posix_path(c, d, NULL, path, sizeof(path));
		return mkdir(path, 0755) ? errno : 0;
	}
	now_attr(&a, S_IFDIR | 0755);
	/* every subdirectory in the client dir, like dbench's clients */
	return e3_mkdir(c->run->img, c->dirs[0], name, &a, &c->dirs[d]);
}

static errcode_t op_link(struct client *c)
{
	struct name *n = &c->n[below(c, c->nn)];
	uint32_t dir = below(c, c->ndirs);
	char name[32], from[4096], to[4096];
	errcode_t err;

	snprintf(name, sizeof(name), "l%u", c->serial++);
	if (c->run->posix) {
		posix_path(c, n->dir, n->name, from, sizeof(from));
		posix_path(c, dir, name, to, sizeof(to));
		err = link(from, to) ? errno : 0;
	} else {
		err = e3_link(c->run->img, c->dirs[dir], name, n->ino);
	}
	if (!err)
		remember(c, dir, name, n->ino);
	return err;
}

/* Draws the next operation, turning one that cannot run now into one
 * that can (nothing to append to: create a stream; too many names:
 * unlink), so every client runs exactly K operations. */
static enum op pick(struct client *c)
{
	unsigned x = below(c, 100), sum = 0;
	enum op o = OP_CREATE_HINT;

	for (int i = 0; i < OP_N; i++) {
		sum += op_weight[i];
		if (x < sum) {
			o = (enum op)i;
			break;
		}
	}
	if (c->nn >= MAX_NAMES - 1)
		return OP_UNLINK;
	if ((o == OP_APPEND || o == OP_REWRITE || o == OP_CLOSE) && !c->ns)
		o = OP_CREATE_STREAM;
	if (o == OP_CREATE_STREAM && c->ns == MAX_STREAMS)
		o = OP_APPEND;
	if ((o == OP_UNLINK || o == OP_LINK) && !c->nn)
		o = OP_CREATE_HINT;
	if (o == OP_MKDIR && c->ndirs == 64)
		o = OP_CREATE_HINT;
	return o;
}

static const char *const op_name[OP_N] = {
	"create (hint)", "create (stream)", "append", "rewrite", "close",
	"unlink", "mkdir", "link",
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct run *r = c->run;

	pthread_barrier_wait(&r->start);
	for (uint64_t k = 0; k < r->ops && !c->err; k++) {
		enum op o = pick(c);

		switch (o) {
		case OP_CREATE_HINT: c->err = op_create(c, 0); break;
		case OP_CREATE_STREAM: c->err = op_create(c, 1); break;
		case OP_APPEND: c->err = op_append(c); break;
		case OP_REWRITE: c->err = op_rewrite(c); break;
		case OP_CLOSE: c->err = close_stream(c, below(c, c->ns)); break;
		case OP_UNLINK: c->err = op_unlink(c); break;
		case OP_MKDIR: c->err = op_mkdir(c); break;
		default: c->err = op_link(c); break;
		}
		if (c->err)
			c->what = op_name[o];
		c->ops++;
	}
	while (c->ns && !c->err)
		if ((c->err = close_stream(c, c->ns - 1)))
			c->what = "close";
	return NULL;
}

/* Each client's own directory, made before the clock starts. */
static errcode_t client_dir(struct client *c)
{
	struct run *r = c->run;
	char name[32], path[4096];
	struct e3_attr a;

	c->ndirs = 1;
	if (r->posix) {
		posix_path(c, 0, NULL, path, sizeof(path));
		return mkdir(path, 0755) ? errno : 0;
	}
	snprintf(name, sizeof(name), "c%u", c->id);
	now_attr(&a, S_IFDIR | 0755);
	return e3_mkdir(r->img, EXT2_ROOT_INO, name, &a, &c->dirs[0]);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static double tv_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

static int usage(void)
{
	fprintf(stderr, "usage: %s [--threads N] [--ops K] [--seed S] "
		"[--alloc=MODE] IMAGE | --posix DIR [--threads N] [--ops K] "
		"[--seed S]\n", tool_name());
	return 2;
}

int main(int argc, char **argv)
{
	struct run r = { .threads = 1, .ops = 1000 };
	struct e3_open_opts oo = { .flags = E3_OPEN_WRITE };
	const char *image = NULL, *subject;
	uint64_t seed = 1, v, bytes = 0, ops = 0;
	struct rusage ru0, ru1;
	struct e3_close_report cr = { 0 };
	struct client *cl;
	pthread_t *th;
	errcode_t err = 0;
	double t0, secs;
	int bad = 0;

	tool_init(argv[0]);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strncmp(a, "--alloc=", 8)) {
			if (e3_alloc_mode_parse(a + 8, &oo.alloc))
				return tool_usage_error("bad --alloc: %s", a + 8), 2;
		} else if (!strcmp(a, "--threads") && val) {
			if (parse_uint(val, 1, 4096, &v))
				return tool_usage_error("bad --threads: %s", val), 2;
			r.threads = (unsigned)v;
			i++;
		} else if (!strcmp(a, "--ops") && val) {
			if (parse_uint(val, 1, 100000000, &r.ops))
				return tool_usage_error("bad --ops: %s", val), 2;
			i++;
		} else if (!strcmp(a, "--seed") && val) {
			if (parse_uint(val, 0, UINT32_MAX, &seed))
				return tool_usage_error("bad --seed: %s", val), 2;
			i++;
		} else if (!strcmp(a, "--posix") && val) {
			r.posix = val;
			i++;
		} else if (a[0] != '-' && !image) {
			image = a;
		} else {
			return usage();
		}
	}
	if (!!image == !!r.posix)
		return usage();
	subject = image ? image : r.posix;
	if (image && (err = e3_image_open(image, &oo, &r.img))) {
		tool_error(image, err, NULL);
		return 1;
	}
	cl = calloc(r.threads, sizeof(*cl));
	th = calloc(r.threads, sizeof(*th));
	if (!cl || !th) {
		tool_error(subject, ENOMEM, NULL);
		return 1;
	}
	for (unsigned t = 0; t < r.threads && !err; t++) {
		cl[t].run = &r;
		cl[t].id = t;
		cl[t].rng = seed + t;
		err = client_dir(&cl[t]);
	}
	if (err) {
		tool_error(subject, err, "client directory");
		return 1;
	}
	pthread_barrier_init(&r.start, NULL, r.threads + 1);
	for (unsigned t = 0; t < r.threads; t++)
		if (pthread_create(&th[t], NULL, client_main, &cl[t])) {
			tool_error(subject, EAGAIN, "cannot start thread %u", t);
			return 1;
		}
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now_s();
	pthread_barrier_wait(&r.start);
	for (unsigned t = 0; t < r.threads; t++)
		pthread_join(th[t], NULL);
	if (r.img) {
		err = e3_image_close_report(r.img, &cr);
	} else {
		int dfd = open(r.posix, O_RDONLY | O_DIRECTORY);

		err = dfd < 0 || syncfs(dfd) ? errno : 0;
		if (dfd >= 0)
			close(dfd);
	}
	secs = now_s() - t0;
	getrusage(RUSAGE_SELF, &ru1);
	for (unsigned t = 0; t < r.threads; t++) {
		if (cl[t].err) {
			tool_error(subject, cl[t].err, "client %u: %s", t,
				   cl[t].what ? cl[t].what : "?");
			bad = 1;
		}
		bytes += cl[t].bytes;
		ops += cl[t].ops;
	}
	if (err) {
		tool_error(subject, err, r.img ? "close" : "syncfs");
		bad = 1;
	}
	printf("%s threads %u ops %" PRIu64 " seconds %.3f ops/s %.0f MB/s %.1f "
	       "vcsw/op %.3f ivcsw/op %.3f cpu_us/op %.2f commits %" PRIu64 "\n",
	       r.posix ? "posix" : e3_alloc_mode_name(oo.alloc), r.threads, ops,
	       secs, ops / secs, bytes / secs / 1e6,
	       (double)(ru1.ru_nvcsw - ru0.ru_nvcsw) / (double)ops,
	       (double)(ru1.ru_nivcsw - ru0.ru_nivcsw) / (double)ops,
	       (tv_s(&ru1.ru_utime) + tv_s(&ru1.ru_stime) -
		tv_s(&ru0.ru_utime) - tv_s(&ru0.ru_stime)) * 1e6 / (double)ops,
	       cr.commits);
	pthread_barrier_destroy(&r.start);
	free(cl);
	free(th);
	return bad;
}
