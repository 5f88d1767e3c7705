/*
 * copyfloor.c: the least work any tool that copies a tree into an image
 * file must do, for bench/copyin.sh's "copy floor" row: walk the tree
 * (getdents, fstatat of every entry), and for each regular file open,
 * read, close, and write its bytes rounded up to whole blocks into one
 * output file, with the same write-behind as e3cp (sync_file_range every
 * 8 MiB) and one fsync at the end. No metadata, no allocator, no journal:
 * what is left between this and e3cp is ours; what is between this and
 * the write bound is the kernel's per-file cost and the block rounding.
 *     copyfloor [-j N] [-b BLOCKSIZE] SRCDIR OUT
 * A walker thread lists, N threads copy; each gathers small files into
 * 160 KiB batches (the size e3cp's pwritev averages on small files) and
 * streams larger ones in 160 KiB pieces, at offsets taken from one
 * counter.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#define QLEN 4096
#define BATCH (160 << 10)
#define BEHIND (8 << 20)

struct job {
	char *path;
	off_t size;
};

/* q_lock protects the ring (q, head, tail, done); out_off and synced are
 * atomics */
static struct {
	pthread_mutex_t q_lock;
	pthread_cond_t q_nonempty, q_nonfull;
	struct job q[QLEN];
	size_t head, tail;
	int done;
	int out;
	unsigned bs;
	atomic_ullong out_off, synced;
	atomic_int failed;
} g = {
	.q_lock = PTHREAD_MUTEX_INITIALIZER,
	.q_nonempty = PTHREAD_COND_INITIALIZER,
	.q_nonfull = PTHREAD_COND_INITIALIZER,
};

static void push(char *path, off_t size)
{
	pthread_mutex_lock(&g.q_lock);
	while (g.tail - g.head == QLEN)
		pthread_cond_wait(&g.q_nonfull, &g.q_lock);
	g.q[g.tail % QLEN] = (struct job){ path, size };
	g.tail++;
	pthread_cond_signal(&g.q_nonempty);
	pthread_mutex_unlock(&g.q_lock);
}

static int pop(struct job *j)
{
	pthread_mutex_lock(&g.q_lock);
	while (g.tail == g.head && !g.done)
		pthread_cond_wait(&g.q_nonempty, &g.q_lock);
	if (g.tail == g.head) {
		pthread_mutex_unlock(&g.q_lock);
		return 0;
	}
	*j = g.q[g.head % QLEN];
	g.head++;
	pthread_cond_signal(&g.q_nonfull);
	pthread_mutex_unlock(&g.q_lock);
	return 1;
}

static void fail(const char *path)
{
	fprintf(stderr, "copyfloor: %s: %s\n", path, strerror(errno));
	g.failed = 1;
}

/* Writes len bytes of buf at off, whole. */
static void write_at(const char *buf, size_t len, unsigned long long off)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pwrite(g.out, buf + done, len - done, off + done);

		if (n <= 0) {
			fail("output");
			return;
		}
		done += n;
	}
}

/* Room for len bytes in the output; whoever moves `synced` past a whole
 * 8 MiB window behind the end starts its writeback, once. */
static unsigned long long take(size_t len)
{
	unsigned long long off = atomic_fetch_add(&g.out_off, len), s;

	s = atomic_load(&g.synced);
	while (off >= s + BEHIND) {
		if (atomic_compare_exchange_weak(&g.synced, &s, s + BEHIND))
			sync_file_range(g.out, s, BEHIND, SYNC_FILE_RANGE_WRITE);
		s = atomic_load(&g.synced);
	}
	return off;
}

/* Reads up to want bytes of fd from off into buf, zero-filling the rest
 * (a file that shrank). */
static void read_fill(int fd, const char *path, char *buf, size_t want,
		      off_t off)
{
	size_t n = 0;

	while (n < want) {
		ssize_t r = pread(fd, buf + n, want - n, off + (off_t)n);

		if (r < 0)
			fail(path);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	memset(buf + n, 0, want - n);
}

/* Small files gather into a batch; a file larger than a batch streams
 * through the buffer in BATCH pieces into its own reserved range. */
static void *copier(void *arg)
{
	size_t fill = 0;
	char *buf = malloc(BATCH);
	struct job j;

	(void)arg;
	while (buf && pop(&j)) {
		size_t want = ((size_t)j.size + g.bs - 1) / g.bs * g.bs;
		int fd = open(j.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0) {
			fail(j.path);
		} else if (want > BATCH) {
			unsigned long long off = take(want);

			for (size_t pos = 0; pos < want; pos += BATCH) {
				size_t n = want - pos < BATCH ? want - pos : BATCH;

				read_fill(fd, j.path, buf, n, (off_t)pos);
				write_at(buf, n, off + pos);
			}
			close(fd);
		} else {
			if (fill + want > BATCH) {
				write_at(buf, fill, take(fill));
				fill = 0;
			}
			read_fill(fd, j.path, buf + fill, want, 0);
			fill += want;
			close(fd);
		}
		free(j.path);
	}
	if (buf && fill)
		write_at(buf, fill, take(fill));
	free(buf);
	return NULL;
}

/* depth first, names in readdir order: the order does not change the work */
static void walk(int dirfd, const char *path)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;

	if (!d) {
		fail(path);
		close(dirfd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			fail(de->d_name);
			continue;
		}
		if (asprintf(&sub, "%s/%s", path, de->d_name) < 0) {
			fail(de->d_name);
			break;
		}
		if (S_ISREG(st.st_mode)) {
			push(sub, st.st_size);
		} else if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd, de->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd < 0)
				fail(sub);
			else
				walk(fd, sub);
			free(sub);
		} else {
			free(sub);
		}
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	int nthreads = 2, opt, fd;
	pthread_t th[256];

	g.bs = 4096;
	while ((opt = getopt(argc, argv, "j:b:")) != -1) {
		if (opt == 'j')
			nthreads = atoi(optarg);
		else if (opt == 'b')
			g.bs = (unsigned)atoi(optarg);
		else
			goto usage;
	}
	if (argc - optind != 2 || nthreads < 1 || nthreads > 256 ||
	    g.bs < 512 || (g.bs & (g.bs - 1)))
		goto usage;
	g.out = open(argv[optind + 1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (g.out < 0) {
		perror(argv[optind + 1]);
		return 2;
	}
	fd = open(argv[optind], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[optind]);
		return 2;
	}
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, copier, NULL);
	walk(fd, argv[optind]);
	pthread_mutex_lock(&g.q_lock);
	g.done = 1;
	pthread_cond_broadcast(&g.q_nonempty);
	pthread_mutex_unlock(&g.q_lock);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	if (fsync(g.out) < 0) {
		perror("fsync");
		return 2;
	}
	close(g.out);
	return g.failed ? 1 : 0;
usage:
	fprintf(stderr, "usage: copyfloor [-j N] [-b BLOCKSIZE] SRCDIR OUT\n");
	return 2;
}
