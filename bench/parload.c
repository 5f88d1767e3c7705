/*
 * parload.c: the parallel-load driver, used by the load tests and by the
 * 2004 thread-scaling benchmark (bench/parload.sh).
 *
 *   parload [--alloc=MODE] [--threads N] [--total SIZE] [--append SIZE]
 *           [--hint] [--mixed] [--verify] IMAGE
 *       N threads each stream their own file into IMAGE through the
 *       public API in appends of SIZE (4 KiB), with or without a size
 *       hint; --mixed writes the mixed-size set instead (empty, 1, 12, 13,
 *       1036, 1037 blocks, 100 MiB, a sparse file, a sparse one past
 *       4 GiB, then small odd sizes up to one file per thread). Prints
 *       MB/s and the files; --verify reads every file back through
 *       libext2fs and compares it with the generator. --open K: each
 *       thread keeps K streams open and appends to them in turn.
 *   parload --report IMAGE
 *       Runs per regular file in e2fsck's block order (an in-line
 *       indirect block does not break a run; holes do not either), worst,
 *       and excess runs beyond 1 + block groups crossed.
 *   parload --posix DIR [--threads N] [--total SIZE] [--append SIZE]
 *       The same writer pattern with write(2) into a mounted directory
 *       (the kernel's ext3 in the benchmark).
 *   parload --expect NAME [--range OFF:LEN] [job options, --bs B]
 *       Writes to stdout the bytes file NAME of that run must hold (or a
 *       range of them); tests compare it with debugfs' dump and with a
 *       loop mount.
 *   parload --ops IMAGE < SCRIPT
 *       Runs one namespace operation per line (mkdir, create, symlink,
 *       link, mknod, setxattr, setacl, setattr, files, mkdirs, links,
 *       leave-open, ready), for the tests.
 *
 * File contents are a function of (file id, offset), so any reader can
 * check them without keeping a copy.
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
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "e3img.h"
#include "../misc/util.h"

#define MiB (1024ULL * 1024)
#define GiB (1024ULL * MiB)

struct piece {
	uint64_t off, len;
};

/* One file to write. Pieces empty: streamed from 0 to size. */
struct job {
	char name[64];
	unsigned id;
	uint64_t size;
	struct piece pieces[4];
	unsigned npieces;
	ext2_ino_t ino;
	errcode_t err;
};

struct opts {
	enum e3_alloc_mode alloc;
	unsigned threads;
	uint64_t total, append;
	int hint, mixed, verify;
	unsigned open;			/* files each thread keeps open at once */
	const char *image, *posix_dir;
};

struct run {
	struct opts *o;
	e3_image_t *img;
	struct job *jobs;
	unsigned njobs;
	unsigned bs;
	pthread_barrier_t start;
};

/* ---- contents ------------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ULL;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	return x ^ (x >> 31);
}

static void fill(unsigned id, uint64_t off, unsigned char *buf, size_t len)
{
	uint64_t seed = (uint64_t)id << 44;

	for (size_t i = 0; i < len;) {
		uint64_t pos = off + i, w = mix64(seed ^ (pos >> 3));
		unsigned b = (unsigned)(pos & 7);

		for (; b < 8 && i < len; b++, i++)
			buf[i] = (unsigned char)(w >> (8 * b));
	}
}

/* The expected byte range of a job (zero in holes). */
static void expect(const struct job *j, uint64_t off, unsigned char *buf,
		   size_t len)
{
	if (!j->npieces) {
		fill(j->id, off, buf, len);
		return;
	}
	memset(buf, 0, len);
	for (unsigned p = 0; p < j->npieces; p++) {
		uint64_t a = j->pieces[p].off, b = a + j->pieces[p].len;

		if (b <= off || a >= off + len)
			continue;
		if (a < off)
			a = off;
		if (b > off + len)
			b = off + len;
		fill(j->id, a, buf + (a - off), (size_t)(b - a));
	}
}

/* ---- the job lists ------------------------------------------------------- */

static void add_job(struct job *j, unsigned id, const char *name, uint64_t size)
{
	memset(j, 0, sizeof(*j));
	j->id = id;
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->size = size;
}

/* The mixed-size set; then small files of odd sizes, one per thread. */
static unsigned mixed_jobs(unsigned threads, unsigned bs, struct job **ret)
{
	static const unsigned small[] = { 0, 1, 12, 13, 1036, 1037 };
	unsigned n = threads > 9 ? threads : 9, i;
	struct job *j = calloc(n, sizeof(*j));
	char name[64];

	if (!j)
		return 0;
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "m%03u_%ublocks", i, small[i]);
		add_job(&j[i], i + 1, name, (uint64_t)small[i] * bs);
	}
	add_job(&j[6], 7, "m006_100MiB", 100 * MiB);
	add_job(&j[7], 8, "m007_sparse", 20 * MiB);
	j[7].pieces[0] = (struct piece){ 0, bs };
	j[7].pieces[1] = (struct piece){ 100ULL * bs, 3ULL * bs };
	j[7].pieces[2] = (struct piece){ 5000ULL * bs + 100, 5000 };
	j[7].npieces = 3;
	/* past 4 GiB and into the triple-indirect range at 4 KiB blocks,
	 * without writing 4 GiB: data at both ends */
	add_job(&j[8], 9, "m008_over4GiB", 4 * GiB + 8 * MiB);
	j[8].pieces[0] = (struct piece){ 0, MiB };
	j[8].pieces[1] = (struct piece){ 4 * GiB - MiB, 9 * MiB };
	j[8].npieces = 2;
	for (i = 9; i < n; i++) {
		snprintf(name, sizeof(name), "m%03u_small", i);
		add_job(&j[i], i + 1, name,
			(uint64_t)small[i % 6] * bs + (i % 3 ? 17 * i : 0));
	}
	*ret = j;
	return n;
}

static unsigned stream_jobs(unsigned threads, uint64_t total, struct job **ret)
{
	struct job *j = calloc(threads, sizeof(*j));
	char name[64];

	if (!j)
		return 0;
	for (unsigned i = 0; i < threads; i++) {
		snprintf(name, sizeof(name), "f%03u", i);
		add_job(&j[i], 1000 + i, name, total / threads);
	}
	*ret = j;
	return threads;
}

/* ---- writing through the library ----------------------------------------- */

static void now_attr(struct e3_attr *a, uint32_t mode);

static errcode_t write_range(e3_file_t *f, const struct job *j, uint64_t off,
			     uint64_t len, uint64_t append, unsigned char *buf,
			     int at_offset)
{
	errcode_t err = 0;

	while (len && !err) {
		size_t n = len < append ? (size_t)len : (size_t)append;

		fill(j->id, off, buf, n);
		err = at_offset ? e3_file_pwrite(f, buf, n, off)
				: e3_file_write(f, buf, n);
		off += n;
		len -= n;
	}
	return err;
}

static errcode_t load_job(struct run *r, struct job *j, unsigned char *buf)
{
	struct timespec now;
	struct e3_attr a;
	e3_file_t *f;
	errcode_t err, err2;

	clock_gettime(CLOCK_REALTIME, &now);
	memset(&a, 0, sizeof(a));
	a.mode = S_IFREG | 0644;
	a.atime = a.mtime = a.ctime = now;
	err = e3_create(r->img, EXT2_ROOT_INO, j->name, &a,
			r->o->hint ? j->size : E3_SIZE_UNKNOWN, &f);
	if (err)
		return err;
	j->ino = e3_file_ino(f);
	if (!j->npieces) {
		err = write_range(f, j, 0, j->size, r->o->append, buf, 0);
	} else {
		for (unsigned p = 0; p < j->npieces && !err; p++)
			err = write_range(f, j, j->pieces[p].off,
					  j->pieces[p].len, r->o->append, buf, 1);
		if (!err)
			err = e3_file_set_size(f, j->size);
	}
	err2 = e3_file_close(f);
	return err ? err : err2;
}

/* --open K: thread t creates its K streams, appends to each in turn,
 * then closes them — many open files per thread. */
static void interleave(struct run *r, unsigned t, unsigned char *buf)
{
	unsigned k = r->o->open, n = 0;
	e3_file_t **f = calloc(k, sizeof(*f));
	struct job **j = calloc(k, sizeof(*j));
	uint64_t off;
	int more = 1;

	for (unsigned i = t; f && j && i < r->njobs && n < k; i += r->o->threads) {
		struct e3_attr a;

		j[n] = &r->jobs[i];
		now_attr(&a, S_IFREG | 0644);
		j[n]->err = e3_create(r->img, EXT2_ROOT_INO, j[n]->name, &a,
				      r->o->hint ? j[n]->size : E3_SIZE_UNKNOWN, &f[n]);
		if (!j[n]->err) {
			j[n]->ino = e3_file_ino(f[n]);
			n++;
		}
	}
	for (off = 0; more; off += r->o->append) {
		more = 0;
		for (unsigned m = 0; m < n; m++) {
			uint64_t len = j[m]->size > off ? j[m]->size - off : 0;

			if (len > r->o->append)
				len = r->o->append;
			if (!len || j[m]->err)
				continue;
			more = 1;
			fill(j[m]->id, off, buf, (size_t)len);
			j[m]->err = e3_file_write(f[m], buf, (size_t)len);
		}
	}
	for (unsigned m = 0; m < n; m++) {
		errcode_t err = e3_file_close(f[m]);

		if (!j[m]->err)
			j[m]->err = err;
	}
	free(f);
	free(j);
}

static void *lib_worker(void *arg)
{
	struct run *r = ((void **)arg)[0];
	unsigned t = (unsigned)(uintptr_t)((void **)arg)[1];
	unsigned char *buf = malloc(r->o->append);

	pthread_barrier_wait(&r->start);
	if (buf && r->o->open > 1) {
		interleave(r, t, buf);
		free(buf);
		return NULL;
	}
	for (unsigned i = t; i < r->njobs; i += r->o->threads) {
		if (!buf) {
			r->jobs[i].err = ENOMEM;
			continue;
		}
		r->jobs[i].err = load_job(r, &r->jobs[i], buf);
	}
	free(buf);
	return NULL;
}

/* ---- the kernel writer ----------------------------------------------------- */

static void *posix_worker(void *arg)
{
	struct run *r = ((void **)arg)[0];
	unsigned t = (unsigned)(uintptr_t)((void **)arg)[1];
	unsigned char *buf = malloc(r->o->append);
	char path[4096];

	pthread_barrier_wait(&r->start);
	for (unsigned i = t; i < r->njobs; i += r->o->threads) {
		struct job *j = &r->jobs[i];
		uint64_t off = 0;
		int fd;

		snprintf(path, sizeof(path), "%s/%s", r->o->posix_dir, j->name);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || !buf) {
			j->err = fd < 0 ? errno : ENOMEM;
			continue;
		}
		while (off < j->size) {
			size_t n = j->size - off < r->o->append ?
				   (size_t)(j->size - off) : (size_t)r->o->append;
			ssize_t w;

			fill(j->id, off, buf, n);
			w = write(fd, buf, n);
			if (w < 0) {
				j->err = errno;
				break;
			}
			off += (uint64_t)w;
		}
		if (close(fd) < 0 && !j->err)
			j->err = errno;
	}
	free(buf);
	return NULL;
}

static int run_threads(struct run *r, void *(*fn)(void *))
{
	unsigned n = r->o->threads;
	pthread_t *th = calloc(n, sizeof(*th));
	void **args = calloc(2 * (size_t)n, sizeof(*args));

	if (!th || !args) {
		free(th);
		free(args);
		return -1;
	}
	pthread_barrier_init(&r->start, NULL, n);
	for (unsigned t = 0; t < n; t++) {
		args[2 * t] = r;
		args[2 * t + 1] = (void *)(uintptr_t)t;
		if (pthread_create(&th[t], NULL, fn, &args[2 * t]) != 0) {
			fprintf(stderr, "%s: cannot start thread %u\n",
				tool_name(), t);
			exit(1);
		}
	}
	for (unsigned t = 0; t < n; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&r->start);
	free(th);
	free(args);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int report_jobs(struct run *r, double secs, const char *what)
{
	uint64_t bytes = 0;
	int bad = 0;

	for (unsigned i = 0; i < r->njobs; i++) {
		struct job *j = &r->jobs[i];

		if (j->err) {
			tool_error(j->name, j->err, NULL);
			bad = 1;
			continue;
		}
		for (unsigned p = 0; p < j->npieces; p++)
			bytes += j->pieces[p].len;
		if (!j->npieces)
			bytes += j->size;
		printf("file %s ino %u size %" PRIu64 "\n", j->name, j->ino,
		       j->size);
	}
	printf("%s threads %u bytes %" PRIu64 " seconds %.3f MB/s %.1f\n",
	       what, r->o->threads, bytes, secs, bytes / 1e6 / secs);
	return bad;
}

/* ---- verification through libext2fs ---------------------------------------- */

/* Compares [from, to) of an open file with the generator. */
static int compare_range(ext2_file_t file, const struct job *j, uint64_t from,
			 uint64_t to, unsigned char *got, unsigned char *want,
			 size_t chunk)
{
	unsigned int n;
	errcode_t err;

	err = ext2fs_file_llseek(file, from, EXT2_SEEK_SET, NULL);
	for (uint64_t off = from; !err && off < to;) {
		size_t len = to - off < chunk ? (size_t)(to - off) : chunk;

		err = ext2fs_file_read(file, got, (unsigned)len, &n);
		if (err || n != len) {
			tool_error(j->name, err, "verify: short read at %" PRIu64, off);
			return 1;
		}
		expect(j, off, want, len);
		if (memcmp(got, want, len) != 0) {
			tool_error(j->name, 0, "verify: contents differ in [%" PRIu64
				   ", +%zu)", off, len);
			return 1;
		}
		off += len;
	}
	if (err)
		tool_error(j->name, err, "verify: seek to %" PRIu64, from);
	return err != 0;
}

/* A sparse job: its pieces hold their data and the blocks around them
 * that no piece touches are holes, not allocated zeros. */
static int verify_sparse(ext2_filsys fs, ext2_ino_t ino, ext2_file_t file,
			 const struct job *j, unsigned char *got,
			 unsigned char *want, size_t chunk)
{
	uint64_t bs = fs->blocksize;

	for (unsigned p = 0; p < j->npieces; p++) {
		const struct piece *pc = &j->pieces[p];
		uint64_t probe[2] = { pc->off / bs - 1, (pc->off + pc->len + bs - 1) / bs };

		if (compare_range(file, j, pc->off, pc->off + pc->len, got, want, chunk))
			return 1;
		for (int k = 0; k < 2; k++) {
			blk64_t pblk = 0;
			int inside = 0;

			if (pc->off / bs == 0 && k == 0)
				continue;
			for (unsigned q = 0; q < j->npieces; q++)
				inside |= probe[k] >= j->pieces[q].off / bs &&
					  probe[k] * bs < j->pieces[q].off + j->pieces[q].len;
			if (inside || probe[k] * bs >= j->size)
				continue;
			if (ext2fs_bmap2(fs, ino, NULL, NULL, 0, probe[k], NULL, &pblk) ||
			    pblk) {
				tool_error(j->name, 0, "verify: block %" PRIu64
					   " should be a hole", probe[k]);
				return 1;
			}
		}
	}
	return 0;
}

static int verify_job(ext2_filsys fs, const struct job *j, unsigned char *got,
		      unsigned char *want, size_t chunk)
{
	ext2_ino_t ino;
	ext2_file_t file;
	errcode_t err;
	__u64 fsize = 0;
	int bad;

	err = ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, j->name, &ino);
	if (!err)
		err = ext2fs_file_open(fs, ino, 0, &file);
	if (err) {
		tool_error(j->name, err, "verify");
		return 1;
	}
	if (ext2fs_file_get_lsize(file, &fsize) || fsize != j->size) {
		tool_error(j->name, 0, "verify: size %llu, expected %" PRIu64,
			   (unsigned long long)fsize, j->size);
		ext2fs_file_close(file);
		return 1;
	}
	if (j->npieces)
		bad = verify_sparse(fs, ino, file, j, got, want, chunk);
	else
		bad = compare_range(file, j, 0, j->size, got, want, chunk);
	ext2fs_file_close(file);
	return bad;
}

static int verify(struct run *r)
{
	struct e3_open_opts oo = { 0 };
	size_t chunk = 1 << 20;
	unsigned char *got = malloc(chunk), *want = malloc(chunk);
	e3_image_t *img;
	errcode_t err;
	int bad = 0;

	err = e3_image_open(r->o->image, &oo, &img);
	if (err || !got || !want) {
		tool_error(r->o->image, err ? err : ENOMEM, "verify");
		return 1;
	}
	for (unsigned i = 0; i < r->njobs; i++)
		bad |= verify_job(e3_image_fs(img), &r->jobs[i], got, want, chunk);
	e3_image_close(img);
	free(got);
	free(want);
	if (!bad)
		printf("verify %u files ok\n", r->njobs);
	return bad;
}

/* ---- layout report ----------------------------------------------------------- */

struct runs_state {
	ext2_filsys fs;
	blk64_t prev, nblocks;
	uint64_t runs;
	dgrp_t gmin, gmax;
};

static int runs_cb(ext2_filsys fs, blk64_t *blk, e2_blkcnt_t cnt,
		   blk64_t ref, int off, void *priv)
{
	struct runs_state *s = priv;
	dgrp_t g = ext2fs_group_of_blk2(fs, *blk);

	(void)cnt; (void)ref; (void)off;
	if (!s->nblocks || *blk != s->prev + 1)
		s->runs++;
	if (!s->nblocks || g < s->gmin)
		s->gmin = g;
	if (!s->nblocks || g > s->gmax)
		s->gmax = g;
	s->prev = *blk;
	s->nblocks++;
	return 0;
}

static int report(const char *image)
{
	struct e3_open_opts oo = { 0 };
	ext2_inode_scan scan = NULL;
	struct ext2_inode inode;
	ext2_ino_t ino;
	e3_image_t *img;
	ext2_filsys fs;
	uint64_t files = 0, runs = 0, worst = 0, excess = 0;
	errcode_t err;

	err = e3_image_open(image, &oo, &img);
	if (err) {
		tool_error(image, err, NULL);
		return 1;
	}
	fs = e3_image_fs(img);
	err = ext2fs_open_inode_scan(fs, 0, &scan);
	while (!err && !(err = ext2fs_get_next_inode(scan, &ino, &inode)) && ino) {
		struct runs_state s = { .fs = fs };
		uint64_t ex;

		if (ino < EXT2_FIRST_INODE(fs->super) || !inode.i_links_count ||
		    !LINUX_S_ISREG(inode.i_mode) || !ext2fs_inode_data_blocks2(fs, &inode))
			continue;
		err = ext2fs_block_iterate3(fs, ino, BLOCK_FLAG_READ_ONLY, NULL,
					    runs_cb, &s);
		if (err || !s.nblocks)
			continue;
		ex = s.runs > 1 + (s.gmax - s.gmin) ? s.runs - 1 - (s.gmax - s.gmin) : 0;
		files++;
		runs += s.runs;
		excess += ex;
		if (s.runs > worst)
			worst = s.runs;
	}
	if (scan)
		ext2fs_close_inode_scan(scan);
	if (err)
		tool_error(image, err, "scanning inodes");
	else
		printf("report files %" PRIu64 " avg_runs %.2f worst_runs %" PRIu64
		       " excess_total %" PRIu64 " excess_avg %.2f\n", files,
		       files ? (double)runs / files : 0.0, worst, excess,
		       files ? (double)excess / files : 0.0);
	e3_image_close(img);
	return err ? 1 : 0;
}

/* ---- --ops: namespace operations from a script ------------------------------ */

/* Splits "/a/b/c" into the parent's inode and "c". */
static errcode_t parent_of(e3_image_t *img, const char *path, ext2_ino_t *dir,
			   const char **name)
{
	const char *slash = strrchr(path, '/');
	char *ppath;
	errcode_t err;

	if (!slash || path[0] != '/')
		return E3_BAD_NAME;
	*name = slash + 1;
	ppath = strndup(path, (size_t)(slash - path) + (slash == path));
	if (!ppath)
		return ENOMEM;
	err = e3_namei(img, ppath, dir);
	free(ppath);
	return err;
}

/* "u::rw-,u:1000:r--,g::r-x,g:50:rwx,m::rwx,o::---" → Linux xattr ACL. */
static size_t acl_from_text(const char *text, unsigned char *out, size_t max)
{
	char *copy = strdup(text), *save = NULL, *tok;
	size_t n = 4;

	if (!copy)
		return 0;
	out[0] = 2; out[1] = out[2] = out[3] = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char kind = tok[0], *id = strchr(tok, ':'), *perm;
		unsigned tag, p = 0;
		unsigned long q = 0xffffffffUL;

		if (!id || n + 8 > max)
			goto bad;
		perm = strchr(id + 1, ':');
		if (!perm)
			goto bad;
		if (perm > id + 1)
			q = strtoul(id + 1, NULL, 10);
		switch (kind) {
		case 'u': tag = perm > id + 1 ? 2 : 1; break;
		case 'g': tag = perm > id + 1 ? 8 : 4; break;
		case 'm': tag = 0x10; break;
		case 'o': tag = 0x20; break;
		default: goto bad;
		}
		for (const char *c = perm + 1; *c; c++)
			p |= *c == 'r' ? 4 : *c == 'w' ? 2 : *c == 'x' ? 1 : 0;
		out[n] = (unsigned char)tag; out[n + 1] = (unsigned char)(tag >> 8);
		out[n + 2] = (unsigned char)p; out[n + 3] = 0;
		for (int b = 0; b < 4; b++)
			out[n + 4 + b] = (unsigned char)(q >> (8 * b));
		n += 8;
	}
	free(copy);
	return n;
bad:
	free(copy);
	return 0;
}

static void now_attr(struct e3_attr *a, uint32_t mode)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	memset(a, 0, sizeof(*a));
	a->mode = mode;
	a->atime = a->mtime = a->ctime = now;
}

/* Bulk commands for the limit tests: COUNT entries named PREFIXnnnnn. */
static errcode_t op_bulk(e3_image_t *img, const char *what, const char *dirpath,
			 unsigned long count, const char *target)
{
	ext2_ino_t dir, ino = 0;
	struct e3_attr a;
	char name[64];
	errcode_t err;

	err = e3_namei(img, dirpath, &dir);
	if (!err && target)
		err = e3_namei(img, target, &ino);
	for (unsigned long i = 0; i < count && !err; i++) {
		snprintf(name, sizeof(name), "%s%05lu", what, i);
		if (strcmp(what, "dir") == 0) {
			now_attr(&a, S_IFDIR | 0755);
			err = e3_mkdir(img, dir, name, &a, NULL);
		} else if (strcmp(what, "file") == 0) {
			e3_file_t *f;

			now_attr(&a, S_IFREG | 0644);
			err = e3_create(img, dir, name, &a, 0, &f);
			if (!err)
				err = e3_file_close(f);
		} else {
			err = e3_link(img, dir, name, ino);
		}
	}
	return err;
}

static errcode_t run_op(e3_image_t *img, char **av, int ac)
{
	const char *cmd = av[0], *name;
	struct e3_attr a;
	ext2_ino_t dir, ino;
	unsigned char val[4096];
	errcode_t err;

#define NEED(n) do { if (ac < (n)) return E3_BAD_OPTION; } while (0)
	if (strcmp(cmd, "ready") == 0) {
		printf("ready\n");
		fflush(stdout);
		return 0;
	}
	NEED(2);
	if (strcmp(cmd, "mkdirs") == 0 || strcmp(cmd, "files") == 0) {
		NEED(3);
		return op_bulk(img, cmd[0] == 'm' ? "dir" : "file", av[1],
			       strtoul(av[2], NULL, 10), NULL);
	}
	if (strcmp(cmd, "links") == 0) {
		NEED(4);
		return op_bulk(img, "link", av[1], strtoul(av[2], NULL, 10), av[3]);
	}
	if (strcmp(cmd, "setxattr") == 0 || strcmp(cmd, "setacl") == 0 ||
	    strcmp(cmd, "setattr") == 0) {
		err = e3_namei(img, av[1], &ino);
		if (err)
			return err;
		if (cmd[3] == 'x') {
			NEED(4);
			if (strncmp(av[3], "0x", 2) == 0) {
				size_t n = 0;

				for (const char *h = av[3] + 2; h[0] && h[1] &&
				     n < sizeof(val); h += 2) {
					unsigned v;

					sscanf(h, "%2x", &v);
					val[n++] = (unsigned char)v;
				}
				return e3_setxattr(img, ino, av[2], val, n);
			}
			return e3_setxattr(img, ino, av[2], av[3], strlen(av[3]));
		}
		if (cmd[3] == 'a' && cmd[4] == 'c') {
			char xname[64];
			size_t n;

			NEED(4);
			n = acl_from_text(av[3], val, sizeof(val));
			snprintf(xname, sizeof(xname), "system.posix_acl_%s", av[2]);
			return e3_setxattr(img, ino, xname, val, n);
		}
		NEED(7);
		memset(&a, 0, sizeof(a));
		a.mode = (uint32_t)strtoul(av[2], NULL, 8);
		a.uid = (uint32_t)strtoul(av[3], NULL, 10);
		a.gid = (uint32_t)strtoul(av[4], NULL, 10);
		a.atime.tv_sec = a.mtime.tv_sec = a.ctime.tv_sec = strtoll(av[5], NULL, 10);
		a.atime.tv_nsec = a.mtime.tv_nsec = a.ctime.tv_nsec = strtol(av[6], NULL, 10);
		return e3_setattr(img, ino, &a);
	}
	err = parent_of(img, av[1], &dir, &name);
	if (err)
		return err;
	if (strcmp(cmd, "mkdir") == 0) {
		now_attr(&a, S_IFDIR | (ac > 2 ? (uint32_t)strtoul(av[2], NULL, 8) : 0755));
		return e3_mkdir(img, dir, name, &a, &ino);
	}
	if (strcmp(cmd, "create") == 0) {	/* create PATH SIZE ID [hint] */
		struct job j;
		unsigned char *buf = malloc(65536);
		e3_file_t *f;
		errcode_t err2;

		NEED(4);
		add_job(&j, (unsigned)strtoul(av[3], NULL, 10), name,
			strtoull(av[2], NULL, 10));
		now_attr(&a, S_IFREG | 0644);
		err = buf ? e3_create(img, dir, name, &a,
				      ac > 4 ? j.size : E3_SIZE_UNKNOWN, &f) : ENOMEM;
		if (!err) {
			err = write_range(f, &j, 0, j.size, 65536, buf, 0);
			err2 = e3_file_close(f);
			err = err ? err : err2;
		}
		free(buf);
		return err;
	}
	if (strcmp(cmd, "leave-open") == 0) {	/* a file never closed */
		e3_file_t *f;

		now_attr(&a, S_IFREG | 0644);
		err = e3_create(img, dir, name, &a, E3_SIZE_UNKNOWN, &f);
		return err ? err : e3_file_write(f, "abc", 3);
	}
	if (strcmp(cmd, "symlink") == 0) {
		NEED(3);
		now_attr(&a, S_IFLNK | 0777);
		return e3_symlink(img, dir, name, av[2], &a, &ino);
	}
	if (strcmp(cmd, "link") == 0) {
		NEED(3);
		err = e3_namei(img, av[2], &ino);
		return err ? err : e3_link(img, dir, name, ino);
	}
	if (strcmp(cmd, "mknod") == 0) {	/* mknod PATH c|b|p|s [MAJ MIN] */
		uint32_t type = av[2][0] == 'c' ? S_IFCHR : av[2][0] == 'b' ?
				S_IFBLK : av[2][0] == 'p' ? S_IFIFO : S_IFSOCK;
		dev_t rdev = 0;

		NEED(3);
		if (ac >= 5)
			rdev = makedev(strtoul(av[3], NULL, 0), strtoul(av[4], NULL, 0));
		now_attr(&a, type | 0644);
		return e3_mknod(img, dir, name, &a, rdev, &ino);
	}
	return E3_BAD_OPTION;
#undef NEED
}

static int ops(const char *image, enum e3_alloc_mode mode)
{
	struct e3_open_opts oo = { .flags = E3_OPEN_WRITE, .alloc = mode };
	char line[8192];
	unsigned lineno = 0;
	e3_image_t *img;
	errcode_t err;
	int bad = 0;

	err = e3_image_open(image, &oo, &img);
	if (err) {
		tool_error(image, err, NULL);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char *av[16], *save = NULL, *tok;
		int ac = 0;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		for (tok = strtok_r(line, " \t", &save); tok && ac < 16;
		     tok = strtok_r(NULL, " \t", &save))
			av[ac++] = tok;
		if (!ac || av[0][0] == '#')
			continue;
		err = run_op(img, av, ac);
		if (err) {
			char subject[64];

			snprintf(subject, sizeof(subject), "line %u: %s", lineno, av[0]);
			tool_error(subject, err, NULL);
			bad = 1;
		}
	}
	err = e3_image_close(img);
	if (err) {
		tool_error(image, err, "close");
		return 1;
	}
	return bad;
}

/* ---- main ------------------------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr,
		"usage: %s [--alloc=rbtree|list|none] [--threads N] [--total SIZE]\n"
		"          [--append SIZE] [--hint] [--mixed] [--open K] [--verify] IMAGE\n"
		"       %s --report IMAGE\n"
		"       %s --posix DIR [--threads N] [--total SIZE] [--append SIZE]\n"
		"       %s --expect NAME [--range OFF:LEN] [--mixed --threads N --bs B |\n"
		"                 --threads N --total SIZE]\n"
		"       %s --ops IMAGE < SCRIPT\n",
		tool_name(), tool_name(), tool_name(), tool_name(), tool_name());
	return 2;
}

/* The bytes [from, from + len) of file name (len 0: to its end). */
static int expect_out(struct run *r, const char *name, uint64_t from,
		      uint64_t len)
{
	unsigned char *buf = malloc(MiB);

	for (unsigned i = 0; i < r->njobs && buf; i++) {
		struct job *j = &r->jobs[i];
		uint64_t end = j->size;

		if (strcmp(j->name, name) != 0)
			continue;
		if (len && from + len < end)
			end = from + len;
		for (uint64_t off = from; off < end;) {
			size_t n = end - off < MiB ? (size_t)(end - off) : MiB;

			expect(j, off, buf, n);
			if (fwrite(buf, 1, n, stdout) != n)
				return 1;
			off += n;
		}
		free(buf);
		return fflush(stdout) != 0;
	}
	free(buf);
	tool_error(name, E3_NOT_FOUND, NULL);
	return 1;
}

int main(int argc, char **argv)
{
	struct opts o = { .alloc = E3_ALLOC_RBTREE, .threads = 1,
			  .total = 64 * MiB, .append = 4096 };
	const char *expect_name = NULL;
	struct e3_open_opts oo = { .flags = E3_OPEN_WRITE };
	struct run r = { .o = &o };
	int do_report = 0, do_ops = 0, bad;
	uint64_t v, bs = 4096, range_off = 0, range_len = 0;
	double t0, secs;
	errcode_t err;

	tool_init(argv[0]);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strncmp(a, "--alloc=", 8) == 0) {
			if (e3_alloc_mode_parse(a + 8, &o.alloc))
				return tool_usage_error("bad --alloc: %s", a + 8), 2;
		} else if (strcmp(a, "--threads") == 0 && val) {
			if (parse_uint(val, 1, 65536, &v))
				return tool_usage_error("bad --threads: %s", val), 2;
			o.threads = (unsigned)v;
			i++;
		} else if ((strcmp(a, "--total") == 0 || strcmp(a, "--append") == 0) && val) {
			if (parse_size(val, &v) || (a[2] == 'a' && (v == 0 || v > 64 * MiB)))
				return tool_usage_error("bad %s: %s", a, val), 2;
			*(a[2] == 't' ? &o.total : &o.append) = v;
			i++;
		} else if (strcmp(a, "--open") == 0 && val) {
			if (parse_uint(val, 1, 4096, &v))
				return tool_usage_error("bad --open: %s", val), 2;
			o.open = (unsigned)v;
			i++;
		} else if (strcmp(a, "--bs") == 0 && val) {
			if (parse_uint(val, 1024, 65536, &bs))
				return tool_usage_error("bad --bs: %s", val), 2;
			i++;
		} else if (strcmp(a, "--hint") == 0) {
			o.hint = 1;
		} else if (strcmp(a, "--mixed") == 0) {
			o.mixed = 1;
		} else if (strcmp(a, "--verify") == 0) {
			o.verify = 1;
		} else if (strcmp(a, "--report") == 0) {
			do_report = 1;
		} else if (strcmp(a, "--ops") == 0) {
			do_ops = 1;
		} else if (strcmp(a, "--posix") == 0 && val) {
			o.posix_dir = val;
			i++;
		} else if (strcmp(a, "--range") == 0 && val) {
			if (sscanf(val, "%" SCNu64 ":%" SCNu64, &range_off,
				   &range_len) != 2)
				return tool_usage_error("bad --range: %s", val), 2;
			i++;
		} else if (strcmp(a, "--expect") == 0 && val) {
			expect_name = val;
			i++;
		} else if (a[0] == '-') {
			return usage();
		} else if (!o.image) {
			o.image = a;
		} else {
			return usage();
		}
	}
	if (do_report)
		return o.image ? report(o.image) : usage();
	if (do_ops)
		return o.image ? ops(o.image, o.alloc) : usage();
	if (!expect_name && !o.posix_dir && !o.image)
		return usage();

	if (!expect_name && !o.posix_dir) {
		oo.alloc = o.alloc;
		err = e3_image_open(o.image, &oo, &r.img);
		if (err) {
			tool_error(o.image, err, NULL);
			return 1;
		}
		bs = e3_image_fs(r.img)->blocksize;
	}
	r.njobs = o.mixed ? mixed_jobs(o.threads, (unsigned)bs, &r.jobs)
			  : stream_jobs(o.threads * (o.open > 1 ? o.open : 1),
					o.total, &r.jobs);
	if (!r.njobs)
		return tool_error(NULL, ENOMEM, NULL), 1;
	if (expect_name) {
		bad = expect_out(&r, expect_name, range_off, range_len);
		free(r.jobs);
		return bad;
	}

	t0 = now_s();
	if (o.posix_dir) {
		int dfd;

		run_threads(&r, posix_worker);
		dfd = open(o.posix_dir, O_RDONLY | O_DIRECTORY);
		if (dfd >= 0) {
			syncfs(dfd);
			close(dfd);
		}
		secs = now_s() - t0;
		bad = report_jobs(&r, secs, "posix");
		free(r.jobs);
		return bad;
	}
	run_threads(&r, lib_worker);
	err = e3_image_close(r.img);
	secs = now_s() - t0;
	bad = report_jobs(&r, secs, e3_alloc_mode_name(o.alloc));
	if (err) {
		tool_error(o.image, err, "close");
		return 1;
	}
	if (!bad && o.verify)
		bad = verify(&r);
	free(r.jobs);
	return bad;
}
