/*
 * shmwrite.c: what the kernel lets N writers do with one image file, the
 * bound under e3cp -jN's data writes (bench/results/copyin-profile.md).
 * N threads pwrite disjoint 1 MiB pieces (interleaved: thread i writes
 * pieces i, i+N, ...) of SIZE MiB into one new file, optionally after one
 * fallocate of the whole range; prints wall and CPU seconds (user + sys
 * of the process) for the fallocate and the writes.
 *     shmwrite [-j N] [-f] SIZE_MIB FILE      (FILE is created, removed)
 * On tmpfs each write holds the inode's i_rwsem across page allocation
 * and copy, so -j2 takes as long as -j1 and the waiter's spinning shows
 * as extra CPU; -f moves the page allocation into the fallocate (which
 * holds the same lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#define PIECE (1u << 20)
#define MAX_THREADS 64

/* fixed before the threads start, read-only after */
static int out_fd, nthreads;
static size_t npieces;

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

static void *writer(void *arg)
{
	long id = (long)arg;
	char *buf = malloc(PIECE);

	if (!buf)
		return (void *)(long)ENOMEM;
	memset(buf, 0x5a, PIECE);	/* no zero pages: every byte copied */
	for (size_t i = (size_t)id; i < npieces; i += (size_t)nthreads) {
		off_t off = (off_t)i * PIECE;
		size_t done = 0;

		while (done < PIECE) {
			ssize_t n = pwrite(out_fd, buf + done, PIECE - done,
					   off + (off_t)done);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				free(buf);
				return (void *)(long)(n < 0 ? errno : EIO);
			}
			done += (size_t)n;
		}
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tid[MAX_THREADS];
	double t0, t1, t2, c0, c1, c2;
	int opt, falloc = 0, bad = 0, started = 0;
	long mib;

	nthreads = 1;
	while ((opt = getopt(argc, argv, "j:f")) != -1) {
		if (opt == 'j')
			nthreads = atoi(optarg);
		else if (opt == 'f')
			falloc = 1;
		else
			bad = 1;
	}
	if (bad || argc - optind != 2 || nthreads < 1 ||
	    nthreads > MAX_THREADS || (mib = atol(argv[optind])) < 1) {
		fprintf(stderr, "usage: shmwrite [-j N] [-f] SIZE_MIB FILE\n");
		return 2;
	}
	npieces = (size_t)mib;
	out_fd = open(argv[optind + 1], O_RDWR | O_CREAT | O_EXCL, 0600);
	if (out_fd < 0) {
		fprintf(stderr, "shmwrite: %s: %s\n", argv[optind + 1],
			strerror(errno));
		return 1;
	}
	t0 = now();
	c0 = cpu_now();
	if (falloc && fallocate(out_fd, 0, 0, (off_t)npieces * PIECE) < 0) {
		fprintf(stderr, "shmwrite: %s: fallocate: %s\n",
			argv[optind + 1], strerror(errno));
		bad = 1;
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
			fprintf(stderr, "shmwrite: %s: %s\n", argv[optind + 1],
				strerror((int)(long)ret));
			bad = 1;
		}
	}
	t2 = now();
	c2 = cpu_now();
	close(out_fd);
	unlink(argv[optind + 1]);
	if (bad)
		return 1;
	printf("-j%d%s %ld MiB: fallocate %.3f s wall %.3f s CPU, "
	       "writes %.3f s wall %.3f s CPU\n", nthreads, falloc ? " -f" : "",
	       mib, t1 - t0, c1 - c0, t2 - t1, c2 - c1);
	return 0;
}
