/*
 * shmwrite.c: what the kernel lets N writers do with one image file, the
 * bound under e3cp -jN's data writes (bench/results/copyin-profile.md).
 * N threads fill disjoint 1 MiB pieces (interleaved: thread i takes
 * pieces i, i+N, ...) of SIZE MiB of one new file; prints wall and CPU
 * seconds (user + sys of the process) for the set-up (fallocate, or
 * ftruncate + mmap) and for the fill (munmap included).
 *     shmwrite [-j N] [-f] [-m write|map|read] [-s SRC] SIZE_MIB FILE
 * FILE is created and removed. Modes:
 *   write  pwrite each piece;
 *   map    the file mapped MAP_SHARED, each piece populated with
 *          MADV_POPULATE_WRITE, then memcpy'd in;
 *   read   mapped and populated as map, then the source pread straight
 *          into the mapping (one copy where the others make two).
 * -f: one fallocate of the whole file first, in any mode.
 * -s SRC: each piece is first pread from SRC (at the same offset; SRC
 * must be SIZE MiB or more, and in the page cache to measure copies, not
 * a disk) into the thread's buffer, as e3cp reads a source file; without
 * it the buffer is a fixed pattern (read needs -s).
 * On tmpfs each write holds the inode's i_rwsem across page allocation
 * and copy, so write -j2 takes as long as -j1; page faults and
 * MADV_POPULATE_WRITE on a shared mapping do not take it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23	/* Linux 5.14 */
#endif

#define PIECE (1u << 20)
#define MAX_THREADS 64

enum mode { M_WRITE, M_MAP, M_READ };

/* fixed before the threads start, read-only after */
static int out_fd, src_fd = -1, nthreads;
static size_t npieces;
static enum mode mode;
static char *map;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* pread or pwrite of all len bytes; 0 or an errno */
static int io_all(int out, int fd, char *p, size_t len, off_t off)
{
	while (len) {
		ssize_t n = out ? pwrite(fd, p, len, off) :
				    pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int fill_piece(char *buf, off_t off)
{
	int err = 0;

	if (src_fd >= 0 && mode != M_READ)
		err = io_all(0, src_fd, buf, PIECE, off);
	if (err)
		return err;
	if (mode == M_WRITE)
		return io_all(1, out_fd, buf, PIECE, off);
	if (madvise(map + off, PIECE, MADV_POPULATE_WRITE) < 0)
		return errno;
	if (mode == M_READ)
		return io_all(0, src_fd, map + off, PIECE, off);
	memcpy(map + off, buf, PIECE);
	return 0;
}

static void *writer(void *arg)
{
	long id = (long)arg;
	char *buf = malloc(PIECE);
	int err = 0;

	if (!buf)
		return (void *)(long)ENOMEM;
	memset(buf, 0x5a, PIECE);	/* no zero pages: every byte copied */
	for (size_t i = (size_t)id; !err && i < npieces;
	     i += (size_t)nthreads)
		err = fill_piece(buf, (off_t)i * PIECE);
	free(buf);
	return (void *)(long)err;
}

int main(int argc, char **argv)
{
	pthread_t tid[MAX_THREADS];
	double t0, t1, t2, c0, c1, c2;
	int opt, falloc = 0, bad = 0, started = 0;
	const char *src = NULL, *mname = "write", *path;
	long mib;
	off_t size;

	nthreads = 1;
	while ((opt = getopt(argc, argv, "j:fm:s:")) != -1) {
		if (opt == 'j')
			nthreads = atoi(optarg);
		else if (opt == 'f')
			falloc = 1;
		else if (opt == 'm')
			mname = optarg;
		else if (opt == 's')
			src = optarg;
		else
			bad = 1;
	}
	if (!strcmp(mname, "write"))
		mode = M_WRITE;
	else if (!strcmp(mname, "map"))
		mode = M_MAP;
	else if (!strcmp(mname, "read") && src)
		mode = M_READ;
	else
		bad = 1;
	if (bad || argc - optind != 2 || nthreads < 1 ||
	    nthreads > MAX_THREADS || (mib = atol(argv[optind])) < 1 ||
	    0) {
		fprintf(stderr, "usage: shmwrite [-j N] [-f] "
			"[-m write|map|read] [-s SRC] SIZE_MIB FILE\n");
		return 2;
	}
	npieces = (size_t)mib;
	size = (off_t)npieces * PIECE;
	path = argv[optind + 1];
	if (src && (src_fd = open(src, O_RDONLY)) < 0) {
		fprintf(stderr, "shmwrite: %s: %s\n", src, strerror(errno));
		return 1;
	}
	out_fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (out_fd < 0) {
		fprintf(stderr, "shmwrite: %s: %s\n", path, strerror(errno));
		return 1;
	}
	t0 = now();
	c0 = cpu_now();
	if (falloc && fallocate(out_fd, 0, 0, size) < 0) {
		fprintf(stderr, "shmwrite: %s: fallocate: %s\n", path,
			strerror(errno));
		bad = 1;
	}
	if (mode != M_WRITE) {
		if (ftruncate(out_fd, size) < 0 ||
		    (map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
				MAP_SHARED, out_fd, 0)) == MAP_FAILED) {
			fprintf(stderr, "shmwrite: %s: map: %s\n", path,
				strerror(errno));
			map = NULL;
			bad = 1;
		}
	}
	t1 = now();
	c1 = cpu_now();
	for (long i = 0; !bad && i < nthreads; i++) {
		if (pthread_create(&tid[i], NULL, writer, (void *)i)) {
			fprintf(stderr, "shmwrite: cannot start a thread\n");
			bad = 1;
		} else {
			started++;
		}
	}
	for (int i = 0; i < started; i++) {
		void *ret;

		pthread_join(tid[i], &ret);
		if (ret) {
			fprintf(stderr, "shmwrite: %s: %s\n", path,
				strerror((int)(long)ret));
			bad = 1;
		}
	}
	if (map)
		munmap(map, (size_t)size);
	t2 = now();
	c2 = cpu_now();
	close(out_fd);
	unlink(path);
	if (bad)
		return 1;
	printf("%s -j%d%s%s %ld MiB: set-up %.3f s wall %.3f s CPU, "
	       "fill %.3f s wall %.3f s CPU\n", mname, nthreads,
	       falloc ? " -f" : "", src ? " -s" : "", mib, t1 - t0, c1 - c0,
	       t2 - t1, c2 - c1);
	return 0;
}
