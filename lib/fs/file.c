/*
 * file.c: regular files being loaded — create, append, write at an offset
 * (holes stay unallocated), set the size, close.
 *
 * The data path never takes fs_lock: blocks come from the allocator
 * (which claims them in its own bitmap mirror), the block map grows in
 * memory (blockmap.c), and data goes out with pwrite(img->fd) in buffers
 * of up to E3_WRITE_BUFFER bytes that are contiguous on disk (files
 * closed together share one pwritev where they meet), one pwritev at a
 * time under the image's data_lock (data_pwritev says why). fs_lock is
 * taken to create the inode, to write out an indirect block whose range is
 * full, and at close, when the blocks are made to count in libext2fs and
 * the block map, size and block count reach the inode — one atomic
 * operation, so the image is consistent at every journal commit: before
 * close the file is an empty inode.
 *
 * Each request to the allocator covers the new indirect blocks and the
 * data blocks of the rest of the write (or of the size hint), and the
 * returned run is consumed in order — indirect blocks first — so every
 * IND/DIND/TIND block lands right before the data it maps (ext3-facts
 * §2.2).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "load_int.h"
#include "file_int.h"
#include "journal/journal.h"
#include "util/grow.h"
#include "itable.h"

/* Zeros for the tail of a file's last block past its end: written from
 * here by the kernel's copy, so the user-space memset of half a block per
 * small file goes. Never written to. */
static const char zero_block[EXT2_MAX_BLOCK_SIZE];

/* ---- indirect block I/O (blockmap callbacks) ------------------------- */

static errcode_t ind_read(void *ctx, blk64_t blk, void *buf)
{
	struct e3_file *f = ctx;
	errcode_t err;

	e3_fs_lock(f->img);
	err = io_channel_read_blk64(f->img->fs->io, blk, 1, buf);
	e3_fs_unlock(f->img);
	return err;
}

/* A full indirect block written while the file is still open: an atomic
 * operation of its own (nothing references it until close). At close
 * (fs_held) the caller holds fs_lock and ends the operation itself. */
static errcode_t ind_write(void *ctx, blk64_t blk, const void *buf)
{
	struct e3_file *f = ctx;
	errcode_t err;

	if (f->fs_held)
		return io_channel_write_blk64(f->img->fs->io, blk, 1, buf);
	e3_fs_lock(f->img);
	err = io_channel_write_blk64(f->img->fs->io, blk, 1, buf);
	if (!err)
		err = e3_op_end(f->img);
	e3_fs_unlock(f->img);
	return err;
}

/* ---- claimed runs ------------------------------------------------------ */

/* The next block of the current run; a new run of want blocks is asked
 * for when it is used up. */
static errcode_t take_block(struct e3_file *f, blk64_t want, blk64_t *blk)
{
	struct e3_alloc *a = f->img->alloc;
	struct e3_run *r = f->nruns ? &f->runs[f->nruns - 1] : NULL;
	blk64_t start, got;
	errcode_t err;

	if (!r || r->used == r->len) {
		if (want < 1)
			want = 1;
		err = e3_alloc_blocks(a, &f->rsv, e3_rsv_goal(a, &f->rsv),
				      want, &start, &got);
		if (err)
			return err;
		if (r && r->start + r->len == start) {
			r->len += got;		/* contiguous: one run */
		} else {
			struct e3_run *nr;

			if (f->runs == &f->run1 && f->nruns == f->capruns) {
				nr = malloc(8 * sizeof(*nr));
				if (nr) {
					memcpy(nr, f->runs,
					       f->nruns * sizeof(*nr));
					f->capruns = 8;
				}
			} else {
				nr = e3_grow(f->runs, f->nruns, &f->capruns,
					     sizeof(*nr), 8);
			}
			if (!nr) {
				e3_alloc_unclaim(a, start, got);
				return ENOMEM;
			}
			f->runs = nr;
			r = &f->runs[f->nruns++];
			r->start = start;
			r->len = got;
			r->used = 0;
		}
	}
	*blk = r->start + r->used++;
	return 0;
}

/* Puts the last n taken blocks back into their runs (a failed mapping). */
static void untake_blocks(struct e3_file *f, unsigned n)
{
	for (size_t i = f->nruns; n && i > 0; i--) {
		struct e3_run *r = &f->runs[i - 1];

		while (n && r->used) {
			r->used--;
			n--;
		}
	}
}

/* The physical block of lblk, allocating it (and the indirect blocks
 * above it) when it is a hole. ndata: data blocks this write (or the size
 * hint) still needs from lblk on, for sizing the allocator request. */
static errcode_t map_block(struct e3_file *f, uint64_t lblk, uint64_t ndata,
			   blk64_t *pblk, int *fresh)
{
	blk64_t meta[3], want;
	uint64_t before;
	unsigned nmeta, taken = 0;
	errcode_t err;

	if (lblk < EXT2_NDIR_BLOCKS) {
		/* a direct block: what the general path below does for one
		 * (no indirect block to make), without its three walks of
		 * the map — most files copied in have no other blocks */
		*pblk = f->bm.iblock[lblk];
		*fresh = 0;
		if (*pblk)
			return 0;
		if (ndata > bm_max_blocks(&f->bm) - lblk)
			ndata = bm_max_blocks(&f->bm) - lblk;
		want = ndata + bm_meta_between(f->bm.P, lblk, lblk + ndata);
		err = take_block(f, want, pblk);
		if (err) {
			*pblk = 0;
			return err;
		}
		f->bm.iblock[lblk] = (uint32_t)*pblk;
		f->bm.nblocks++;
		*fresh = 1;
		return 0;
	}
	err = bm_lookup(&f->bm, lblk, pblk);
	if (err || *pblk) {
		*fresh = 0;
		return err;
	}
	if (lblk >= bm_max_blocks(&f->bm))
		return E3_FILE_TOO_BIG;
	err = bm_missing(&f->bm, lblk, &nmeta);
	if (err)
		return err;
	if (ndata > bm_max_blocks(&f->bm) - lblk)
		ndata = bm_max_blocks(&f->bm) - lblk;
	want = nmeta + ndata + bm_meta_between(f->bm.P, lblk, lblk + ndata);
	for (unsigned i = 0; i < nmeta; i++, taken++) {
		err = take_block(f, want - taken, &meta[i]);
		if (err)
			goto fail;
	}
	err = take_block(f, want - taken, pblk);
	if (err)
		goto fail;
	taken++;
	before = f->bm.nblocks;
	err = bm_set(&f->bm, lblk, *pblk, meta, nmeta);
	if (err && f->bm.nblocks != before) {
		/* the map holds the blocks already (writing a full indirect
		 * block failed): giving them back would hand them out twice;
		 * the file is lost instead, close releases them */
		if (!f->werr)
			f->werr = err;
		*pblk = 0;
		return err;
	}
	if (err)
		goto fail;
	*fresh = 1;
	return 0;
fail:
	untake_blocks(f, taken);
	*pblk = 0;
	return err;
}

/* ---- write-behind buffer ----------------------------------------------- */

/* Writes every byte of iov[0..cnt) at off; iov is consumed. */
static errcode_t pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off)
{
	for (;;) {
		ssize_t n;

		while (cnt && !iov->iov_len) {	/* nothing to write there */
			iov++;
			cnt--;
		}
		if (!cnt)
			break;
		n = pwritev(fd, iov, cnt, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0)
			return EIO;
		off += (uint64_t)n;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* File data into the image. The kernel lets one write into a file at a
 * time (the inode's i_rwsem, held across tmpfs' page allocation and the
 * copy), and a writer that finds it taken spins while the holder runs.
 * For a short write that spin is the cheapest wait there is; behind a
 * long one it burns the core the scanner or a worker reading its source
 * needs: at -j2 on tmpfs a tenth of the samples of big files were
 * rwsem_spin_on_owner (bench/results/copyin-profile.md). So long writes
 * go one at a time under data_lock, whose waiters sleep, and a short
 * write takes data_lock only while a long one is in flight (data_long);
 * otherwise it goes straight to the kernel: many clients writing a few
 * KiB each (bench/mixload) would else pay two context switches a write
 * for a sleep where the kernel spins a few microseconds. "Long" is where
 * the copy takes about as long as those two switches: 64 KiB, 16 pages
 * of tmpfs. e3cp's batched small files (~125 KiB a pwritev on `small`)
 * and its 1 MiB pieces of big files stay long. A block device's writes
 * run in parallel in the kernel: they are left so (data_serial). */
#define DATA_LONG_BYTES (64u << 10)

static errcode_t data_pwritev(struct e3_image *img, struct iovec *iov, int cnt,
			      uint64_t off)
{
	size_t bytes = 0;
	errcode_t err;
	int is_long;

	if (!img->data_serial)
		return pwritev_all(img->fd, iov, cnt, off);
	for (int i = 0; i < cnt; i++)
		bytes += iov[i].iov_len;
	is_long = bytes >= DATA_LONG_BYTES;
	if (!is_long && !atomic_load_explicit(&img->data_long,
					      memory_order_relaxed))
		return pwritev_all(img->fd, iov, cnt, off);
	pthread_mutex_lock(&img->data_lock);
	if (is_long)
		atomic_store_explicit(&img->data_long, 1, memory_order_relaxed);
	err = pwritev_all(img->fd, iov, cnt, off);
	if (is_long)
		atomic_store_explicit(&img->data_long, 0, memory_order_relaxed);
	pthread_mutex_unlock(&img->data_lock);
	return err;
}

static errcode_t pread_all(int fd, char *p, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0) {		/* past the end of a sparse image */
			memset(p, 0, len);
			return 0;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Writes n blocks from p at pblk, the last zero bytes of them from
 * zero_block instead; a failure is kept in werr (close must not give the
 * blocks to the inode). */
static errcode_t write_out(struct e3_file *f, const char *p, size_t n,
			   size_t zero, blk64_t pblk)
{
	errcode_t err;

	/* crash and error sweeps (E3_FAULT) cover data writes too; the
	 * journal pointer is fixed while files are open */
	err = e3_journal_fault_write(f->img->journal);
	if (!err) {
		struct iovec iov[2] = {
			{ .iov_base = (void *)p, .iov_len = n * f->bm.bs - zero },
			{ .iov_base = (void *)zero_block, .iov_len = zero },
		};

		err = data_pwritev(f->img, iov, zero ? 2 : 1,
				   (uint64_t)pblk * f->bm.bs);
	}
	if (!err)
		e3_image_wrote(f->img, (uint64_t)n * f->bm.bs);
	if (err && !f->werr)
		f->werr = err;
	return err;
}

static errcode_t buf_flush(struct e3_file *f)
{
	errcode_t err;

	if (!f->buf_n)
		return 0;
	err = write_out(f, f->buf, f->buf_n, f->buf_zero, f->buf_pblk);
	f->buf_n = 0;
	f->buf_zero = 0;
	return err;
}

/* The buffer's pending zeros into it: before its last block is written
 * to or another block follows it. */
static void buf_zero_fill(struct e3_file *f)
{
	if (f->buf_zero) {
		memset(f->buf + f->buf_n * f->bm.bs - f->buf_zero, 0,
		       f->buf_zero);
		f->buf_zero = 0;
	}
}

/* Closing files whose buffers meet on disk: one pwritev for the lot
 * (two iovecs a file: its buffer, its tail's zeros). */
#define FLUSH_MANY_MAX 64
_Static_assert(2 * FLUSH_MANY_MAX <= IOV_MAX, "one run must fit one pwritev");

/* By image, then disk address: one image's runs must not be split by
 * another's files at nearby addresses. */
static int by_buf_pblk(const void *a, const void *b)
{
	const struct e3_file *x = *(struct e3_file *const *)a;
	const struct e3_file *y = *(struct e3_file *const *)b;

	if (x->img != y->img)
		return (uintptr_t)x->img < (uintptr_t)y->img ? -1 : 1;
	return x->buf_pblk < y->buf_pblk ? -1 : x->buf_pblk > y->buf_pblk;
}

/* list[0..n): same image, buffers back to back on disk. */
static void flush_run(struct e3_file **list, size_t n)
{
	struct e3_image *img = list[0]->img;
	struct iovec iov[2 * FLUSH_MANY_MAX];
	unsigned bs = list[0]->bm.bs;
	uint64_t bytes = 0;
	int cnt = 0;
	errcode_t err;

	for (size_t i = 0; i < n; i++) {
		size_t len = list[i]->buf_n * bs, zero = list[i]->buf_zero;

		iov[cnt].iov_base = list[i]->buf;
		iov[cnt++].iov_len = len - zero;
		if (zero) {
			iov[cnt].iov_base = (void *)zero_block;
			iov[cnt++].iov_len = zero;
		}
		bytes += len;
	}
	err = e3_journal_fault_write(img->journal);
	if (!err)
		err = data_pwritev(img, iov, cnt,
				   (uint64_t)list[0]->buf_pblk * bs);
	if (!err)
		e3_image_wrote(img, bytes);
	for (size_t i = 0; i < n; i++) {
		list[i]->buf_n = 0;
		list[i]->buf_zero = 0;
		if (err && !list[i]->werr)
			list[i]->werr = err;
	}
}

/* The buffers of files being closed together go out sorted by disk
 * address, and those that meet in one write: small files written one
 * pwrite each cost ext4 three times the CPU per byte that 64 KiB writes
 * do (large folios, one inode lock), and a batch's files usually sit
 * back to back. A failed write fails every file of its run (their blocks
 * go back at close, no data lands elsewhere). Errors land in each file's
 * werr; files closed before (errs[i] == E3_FILE_CLOSED) are not touched. */
static void flush_many(struct e3_file **files, size_t n,
		       const errcode_t *errs)
{
	struct e3_file *list[FLUSH_MANY_MAX];
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		struct e3_file *f = files[i];

		if (!f || errs[i] == E3_FILE_CLOSED || !f->buf_n)
			continue;
		if (m < FLUSH_MANY_MAX)
			list[m++] = f;
		else
			(void)buf_flush(f);
	}
	qsort(list, m, sizeof(*list), by_buf_pblk);
	for (size_t i = 0, k; i < m; i = k) {
		for (k = i + 1; k < m; k++) {
			struct e3_file *p = list[k - 1], *f = list[k];

			if (f->img != p->img ||
			    f->buf_pblk != p->buf_pblk + p->buf_n)
				break;
		}
		flush_run(list + i, k - i);
	}
}

/* A slot in the buffer for lblk at pblk, holding the block's current
 * contents when only part of it is about to be written. */
static errcode_t buf_slot(struct e3_file *f, uint64_t lblk, blk64_t pblk,
			  int fresh, int partial, char **slot)
{
	unsigned bs = f->bm.bs;
	errcode_t err;

	if (!(f->buf_n && lblk == f->buf_lblk + f->buf_n &&
	      pblk == f->buf_pblk + f->buf_n && f->buf_n < f->buf_max)) {
		err = buf_flush(f);
		if (err)
			return err;
		f->buf_lblk = lblk;
		f->buf_pblk = pblk;
	}
	buf_zero_fill(f);		/* its last block is last no more */
	if (f->buf_n == f->buf_cap) {
		size_t cap = f->buf_cap ? f->buf_cap * 2 : 16;
		char *nb;

		if (cap > f->buf_max)
			cap = f->buf_max;
		nb = realloc(f->buf, cap * bs);
		if (!nb)
			return ENOMEM;
		f->buf = nb;
		f->buf_cap = cap;
	}
	*slot = f->buf + f->buf_n * bs;
	if (partial) {
		if (fresh)
			memset(*slot, 0, bs);
		else if ((err = pread_all(f->img->fd, *slot, bs,
					  (uint64_t)pblk * bs)))
			return err;
	}
	f->buf_n++;
	return 0;
}

/* A block the caller has mapped already: map_block's answer for lblk. */
struct mapped {
	uint64_t lblk;
	blk64_t pblk;
	int fresh;
};

/* Copies [off, off + len) from src into the write-behind buffer, mapping
 * blocks as it goes (pm, when not NULL, is one mapped already). */
static errcode_t write_at(struct e3_file *f, const char *src, size_t len,
			  uint64_t off, const struct mapped *pm)
{
	unsigned bs = f->bm.bs;
	uint64_t end = off + len;
	uint64_t end_blk = (end + bs - 1) / bs;
	errcode_t err = 0;

	if (end < off)
		return E3_FILE_TOO_BIG;
	while (len) {
		uint64_t lblk = off / bs;
		size_t boff = off % bs, n = bs - boff;
		char *slot;

		if (n > len)
			n = len;
		if (f->buf_n && lblk >= f->buf_lblk &&
		    lblk < f->buf_lblk + f->buf_n) {
			if (lblk == f->buf_lblk + f->buf_n - 1)
				buf_zero_fill(f);
			slot = f->buf + (lblk - f->buf_lblk) * bs;
		} else {
			uint64_t ndata = end_blk - lblk;
			blk64_t pblk;
			int fresh = 0;

			if (f->hint_blocks > lblk && f->hint_blocks - lblk > ndata)
				ndata = f->hint_blocks - lblk;
			if (pm && pm->lblk == lblk) {
				pblk = pm->pblk;
				fresh = pm->fresh;
			} else {
				err = map_block(f, lblk, ndata, &pblk, &fresh);
				if (err)
					break;
			}
			err = buf_slot(f, lblk, pblk, fresh, n < bs, &slot);
			if (err) {
				/* a new block the map holds, never written:
				 * close must not give it to the inode */
				if (fresh && !f->werr)
					f->werr = err;
				break;
			}
		}
		memcpy(slot + boff, src, n);
		off += n;
		src += n;
		len -= n;
		if (off > f->size)
			f->size = off;
	}
	return err;
}

/* Writes [off, off + len) from f->spare, which the caller filled. When
 * its blocks lie back to back on disk — nearly always — the spare
 * becomes the write-behind buffer as it is: reading straight into it
 * saves write_at's copy, a tenth of the CPU of copying in small files.
 * Otherwise the contiguous head goes out at once and the rest is copied. */
static errcode_t write_spare(struct e3_file *f, size_t len, uint64_t off)
{
	unsigned bs = f->bm.bs;
	uint64_t lblk = off / bs, nblk = (len + bs - 1) / bs, i, ndata, end;
	size_t tail = len % bs;
	char *data = f->spare;
	blk64_t pblk0 = 0;
	size_t zero = 0;
	struct mapped m;
	errcode_t err;

	if (off % bs || !len || nblk > f->buf_max || off + len < off ||
	    (f->buf_n && lblk == f->buf_lblk + f->buf_n &&
	     f->buf_n + nblk <= f->buf_max))	/* it joins the buffer */
		return write_at(f, data, len, off, NULL);
	err = buf_flush(f);
	if (err)
		return err;
	for (i = 0; i < nblk; i++) {
		m.lblk = lblk + i;
		ndata = nblk - i;
		if (f->hint_blocks > m.lblk && f->hint_blocks - m.lblk > ndata)
			ndata = f->hint_blocks - m.lblk;
		err = map_block(f, m.lblk, ndata, &m.pblk, &m.fresh);
		if (err)
			break;
		if (!i)
			pblk0 = m.pblk;
		else if (m.pblk != pblk0 + i)
			break;
		if (i == nblk - 1 && tail) {	/* the rest of the last block */
			if (m.fresh)
				zero = bs - tail;	/* written as zeros */
			else if ((err = pread_all(f->img->fd, data + len,
						  bs - tail,
						  (uint64_t)m.pblk * bs + tail)))
				break;
		}
	}
	if (i == nblk) {
		free(f->buf);		/* empty: flushed above */
		f->buf = data;
		f->buf_cap = f->spare_bytes / bs;
		f->buf_lblk = lblk;
		f->buf_pblk = pblk0;
		f->buf_n = i;
		f->buf_zero = zero;
		f->spare = NULL;
		f->spare_bytes = 0;
		if (off + len > f->size)
			f->size = off + len;
		return 0;
	}
	if (i) {			/* whole blocks, the tail is not in it */
		errcode_t err2 = write_out(f, data, i, 0, pblk0);

		end = (lblk + i) * bs;
		if (!err2 && end > f->size)
			f->size = end;
		if (!err)
			err = err2;
	}
	if (err)
		return err;
	/* block i lies apart (an indirect block or another run between) */
	return write_at(f, data + i * bs, len - i * bs, off + i * bs, &m);
}

/* ---- the public calls ---------------------------------------------------- */

/* The in-memory side of a new file; its inode comes later (file_bind). */
static errcode_t file_new(struct e3_image *img, uint64_t size_hint,
			  struct e3_file **ret)
{
	struct e3_file *f = e3_load_file_reuse(img);
	struct bm_io io = { ind_read, ind_write, NULL };
	unsigned bs = img->fs->blocksize;	/* fixed for the image's life */

	if (f) {	/* from the pool: its lock and read buffer stay */
		char *spare = f->spare;
		size_t spare_bytes = f->spare_bytes;

		memset(&f->img, 0, sizeof(*f) - offsetof(struct e3_file, img));
		f->spare = spare;
		f->spare_bytes = spare_bytes;
	} else {
		if (!(f = calloc(1, sizeof(*f))))
			return ENOMEM;
		pthread_mutex_init(&f->lock, NULL);
	}
	f->img = img;
	f->runs = &f->run1;
	f->capruns = 1;
	io.ctx = f;
	bm_init(&f->bm, bs, &io);
	f->buf_max = img->load->write_buffer / bs;
	if (f->buf_max < 1)
		f->buf_max = 1;
	if (size_hint != E3_SIZE_UNKNOWN)
		f->hint_blocks = (size_hint + bs - 1) / bs;
	*ret = f;
	return 0;
}

/* Under fs_lock, right after the inode is made: the file's reservation
 * (its blocks claimed at once when one free run holds them: the run
 * becomes run1).
 * A hinted file books its whole window now, in create order, so its
 * layout does not depend on which thread writes first (alloc.h,
 * DETERMINISM); a full image only means the file goes windowless.
 * total: every block the file will take (e3_create_blocks), 0: a dense
 * file of the size hint. */
static errcode_t file_bind(struct e3_file *f, ext2_ino_t ino, uint64_t total)
{
	struct e3_alloc *a = f->img->alloc;
	uint64_t hint_total = total;
	blk64_t start = 0, got = 0;
	errcode_t err;

	f->ino = ino;
	if (!hint_total && f->hint_blocks)
		hint_total = bm_blocks_for(f->bm.P, f->hint_blocks);
	/* ext3 colours a writer's first goal by its process id; ours comes
	 * from the file, for the same reason */
	e3_rsv_init(a, &f->rsv, ino, hint_total, ino % 16);
	err = e3_rsv_book_claim(a, &f->rsv, e3_rsv_goal(a, &f->rsv),
				&start, &got);
	if (!err && got) {	/* take_block uses it first */
		f->run1.start = start;
		f->run1.len = got;
		f->run1.used = 0;
		f->nruns = 1;
	}
	return err == E3_IMAGE_FULL ? 0 : err;
}

/* file_new's reuse clears everything from img on and keeps the lock */
_Static_assert(offsetof(struct e3_file, lock) < offsetof(struct e3_file, img) &&
	       offsetof(struct e3_file, pool_next) < offsetof(struct e3_file, img),
	       "struct e3_file: link, pool_next and lock come first");

void e3_file_pool_free(struct e3_file *f)
{
	free(f->spare);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

/* A closed file's struct made ready for the pool: its write buffer (when
 * small) kept as the next user's read buffer, the rest freed. */
static void file_strip(struct e3_file *f)
{
	bm_free(&f->bm);
	if (f->runs != &f->run1)
		free(f->runs);
	free(f->spare);
	f->spare = NULL;
	f->spare_bytes = 0;
	if (f->buf && f->buf_cap * f->bm.bs <= E3_LOAD_POOL_BUF) {
		f->spare = f->buf;
		f->spare_bytes = f->buf_cap * f->bm.bs;
	} else {
		free(f->buf);
	}
	f->buf = NULL;
	f->buf_cap = 0;
}

/* Stripped files of one image leave the open list together and go into
 * the pool (or are freed when it is full). */
static void files_retire(struct e3_image *img, struct e3_file **files,
			 size_t n)
{
	unsigned char kept[FLUSH_MANY_MAX];

	e3_load_files_del_keep(img, files, n, kept);
	for (size_t i = 0; i < n; i++)
		if (!kept[i])
			e3_file_pool_free(files[i]);
}

static void file_free(struct e3_file *f)
{
	file_strip(f);
	e3_file_pool_free(f);
}

void e3_file_drop(struct e3_file *f)
{
	struct e3_alloc *a = f->img->alloc;

	for (size_t i = 0; i < f->nruns; i++)
		e3_alloc_unclaim(a, f->runs[i].start, f->runs[i].len);
	e3_rsv_discard(a, &f->rsv);
	file_free(f);
}

static errcode_t create_inode(struct e3_image *img, ext2_ino_t parent,
			      const char *name, const struct e3_attr *attr,
			      ext2_ino_t *ret)
{
	ext2_filsys fs = img->fs;
	/* on the stack for the inode sizes of commit_file's buffer: this
	 * runs once per file copied in */
	union {
		struct ext2_inode_large inode;
		char bytes[1024];
	} here;
	struct ext2_inode_large *inode = &here.inode;
	struct e3_attr a = *attr;
	struct ext2_inode pi;
	ext2_ino_t ino;
	errcode_t err;

	if (EXT2_INODE_SIZE(fs->super) > sizeof(here) &&
	    !(inode = e3_inode_alloc(fs)))
		return ENOMEM;
	a.mode = LINUX_S_IFREG | (attr->mode & 07777);
	err = e3_inode_new_in_pi(img, parent, name, &a, 1, inode, &ino, &pi);
	if (err)
		goto out;
	err = ext2fs_write_inode_full(fs, ino, EXT2_INODE(inode),
				      EXT2_INODE_SIZE(fs->super));
	/* the parent's inode as the check read it: an inode number and a
	 * new inode (not the parent's) were all that was written since */
	if (!err)
		err = e3_dir_add_known(fs, parent, &pi, name, ino, a.mode);
	if (err) {
		errcode_t undo;

		e3_undo_begin(img);
		memset(inode, 0, EXT2_INODE_SIZE(fs->super));
		undo = ext2fs_write_inode_full(fs, ino, EXT2_INODE(inode),
					       EXT2_INODE_SIZE(fs->super));
		e3_ifree(fs, ino, 0);
		/* a live inode no entry names would be committed */
		if (undo)
			e3_op_poison(img, err);
		goto out;
	}
	*ret = ino;
out:
	if (inode != &here.inode)
		free(inode);
	return err;
}

/* size_hint: bytes, for a dense file; blocks: every block, for a file
 * whose holes the caller knows (size_hint E3_SIZE_UNKNOWN then). */
static errcode_t create_file(e3_image_t *img, ext2_ino_t parent,
			     const char *name, const struct e3_attr *attr,
			     uint64_t size_hint, uint64_t blocks,
			     e3_file_t **ret)
{
	struct e3_file *f;
	ext2_ino_t ino = 0;
	errcode_t err, err2;

	if ((attr->mode & S_IFMT) && !S_ISREG(attr->mode))
		return E3_BAD_FILE_TYPE;
	err = e3_check_writable(img);
	if (err)
		return err;
	err = file_new(img, size_hint, &f);
	if (err)
		return err;
	e3_fs_lock(img);
	err = create_inode(img, parent, name, attr, &ino);
	if (!err)
		err = file_bind(f, ino, blocks);	/* the image keeps an
							   empty file if this
							   fails */
	if (!err) {	/* no timed commit until its close (e3_op_end) */
		img->load->unfinished++;
		/* open before the lock goes: e3_op_end may commit and let
		 * fs_lock go meanwhile, and a remove of the name must then
		 * find the file open (E3_FILE_BUSY), not free the inode its
		 * close writes a map and blocks into */
		e3_load_file_add(img, f);
	}
	err2 = e3_op_end(img);
	if (!err && err2) {	/* never closed: it holds nothing back */
		img->load->unfinished--;
		e3_load_file_del(img, f);
	}
	e3_fs_unlock(img);
	if (!err)
		err = err2;
	if (err) {
		if (ino)
			e3_file_drop(f);
		else
			file_free(f);
		return err;
	}
	*ret = f;
	return 0;
}

errcode_t e3_create(e3_image_t *img, ext2_ino_t parent, const char *name,
		    const struct e3_attr *attr, uint64_t size_hint,
		    e3_file_t **ret)
{
	return create_file(img, parent, name, attr, size_hint, 0, ret);
}

/* A sparse file's hint as bytes would be read as a dense file's data
 * blocks, and the indirect blocks above data far from the start (a 5 GiB
 * file's last block needs a TIND, a DIND and an IND) would be missing
 * from its window: the writer would then book one more window itself,
 * at whatever moment it gets there. Here the caller counts them. The
 * data blocks are not known, so requests are sized by each write. */
errcode_t e3_create_blocks(e3_image_t *img, ext2_ino_t parent,
			   const char *name, const struct e3_attr *attr,
			   uint64_t blocks, e3_file_t **ret)
{
	return create_file(img, parent, name, attr, E3_SIZE_UNKNOWN, blocks,
			   ret);
}

ext2_ino_t e3_file_ino(e3_file_t *f)
{
	return f->ino;
}

errcode_t e3_file_pwrite(e3_file_t *f, const void *buf, size_t len,
			 uint64_t offset)
{
	errcode_t err;

	pthread_mutex_lock(&f->lock);
	err = f->closed ? E3_FILE_CLOSED : write_at(f, buf, len, offset, NULL);
	pthread_mutex_unlock(&f->lock);
	return err;
}

errcode_t e3_file_write(e3_file_t *f, const void *buf, size_t len)
{
	errcode_t err;

	pthread_mutex_lock(&f->lock);
	err = f->closed ? E3_FILE_CLOSED : write_at(f, buf, len, f->size, NULL);
	pthread_mutex_unlock(&f->lock);
	return err;
}

errcode_t e3_file_wbuf(e3_file_t *f, size_t len, void **buf)
{
	size_t bytes;
	errcode_t err = 0;

	pthread_mutex_lock(&f->lock);
	/* whole blocks: the tail of the last is filled in there */
	bytes = len ? (len + f->bm.bs - 1) / f->bm.bs * f->bm.bs : f->bm.bs;
	if (f->closed) {
		err = E3_FILE_CLOSED;
	} else if (len > SIZE_MAX - f->bm.bs) {
		err = E3_FILE_TOO_BIG;
	} else if (f->spare_bytes < bytes) {
		/* no realloc: nothing in it is worth copying */
		free(f->spare);
		f->spare_bytes = 0;
		f->spare = malloc(bytes);
		if (f->spare)
			f->spare_bytes = bytes;
		else
			err = ENOMEM;
	}
	f->spare_len = err ? 0 : len;
	*buf = err ? NULL : f->spare;
	pthread_mutex_unlock(&f->lock);
	return err;
}

errcode_t e3_file_pwrite_wbuf(e3_file_t *f, size_t len, uint64_t offset)
{
	errcode_t err;

	pthread_mutex_lock(&f->lock);
	if (f->closed)
		err = E3_FILE_CLOSED;
	else if (!f->spare || len > f->spare_len)
		err = EINVAL;
	else
		err = write_spare(f, len, offset);
	/* not taken as the write buffer (copied, or split): freed now, not
	 * at close — ordered mode keeps dozens of files open */
	free(f->spare);
	f->spare = NULL;
	f->spare_bytes = 0;
	f->spare_len = 0;
	pthread_mutex_unlock(&f->lock);
	return err;
}

errcode_t e3_file_set_size(e3_file_t *f, uint64_t size)
{
	errcode_t err = 0;
	blk64_t pblk = 0;
	uint64_t lblk;

	pthread_mutex_lock(&f->lock);
	if (f->closed) {
		err = E3_FILE_CLOSED;
		goto out;
	}
	if (size < f->size) {
		/* shrinking would have to free blocks: only allowed over a
		 * tail that was never written */
		for (lblk = (size + f->bm.bs - 1) / f->bm.bs;
		     lblk * f->bm.bs < f->size; lblk++) {
			err = bm_lookup(&f->bm, lblk, &pblk);
			if (err || pblk) {
				err = err ? err : E3_BAD_SIZE;
				goto out;
			}
		}
	}
	if ((size + f->bm.bs - 1) / f->bm.bs > bm_max_blocks(&f->bm))
		err = E3_FILE_TOO_BIG;
	else
		f->size = size;
out:
	pthread_mutex_unlock(&f->lock);
	return err;
}

/* The inode's part of a close, into its copy (commit_file's, or in
 * commit_many the one in t's block): the map, the size, the blocks count. Changed in a copy first, so that a refusal
 * (a size libext2fs will not set) leaves the block as it was. Everything
 * changed lies in the first 128 bytes (struct ext2_inode: i_block,
 * i_size(_high), i_blocks and its high half), so only those are copied,
 * whatever the inode size (up to the block size: a 2048-byte inode copied
 * whole would overrun a 1024-byte buffer on the stack). */
static errcode_t patch_inode(struct e3_file *f, struct ext2_inode_large *at)
{
	ext2_filsys fs = f->img->fs;
	struct ext2_inode here;
	blk64_t nblocks = f->bm.nblocks;
	errcode_t err;

	memcpy(&here, at, sizeof(here));
	memcpy(here.i_block, f->bm.iblock, sizeof(here.i_block));
	err = ext2fs_inode_size_set(fs, &here, f->size);
	if (err)
		return err;
	if (ext2fs_file_acl_block(fs, &here))
		nblocks++;
	err = ext2fs_iblk_set(fs, &here, nblocks);
	if (!err)
		memcpy(at, &here, sizeof(here));
	return err;
}

/* The blocks the inode now maps count as used in libext2fs' bitmaps. */
/* The blocks of the files whose closes end together, counted in
 * libext2fs in as few calls as they allow: a batch's files lie back to
 * back, and each ext2fs_block_alloc_stats_range call walks the group's
 * descriptor, bitmap and superblock counts (a twentieth of a small
 * file's copy-in instructions, one call per file). The counts and bits
 * it leaves do not depend on how the ranges are cut. */
#define COUNT_RUNS 32

struct count_runs {
	blk64_t start[COUNT_RUNS], len[COUNT_RUNS];
	unsigned n;
};

static void count_flush(ext2_filsys fs, struct count_runs *c)
{
	for (unsigned i = 0; i < c->n; i++)
		ext2fs_block_alloc_stats_range(fs, c->start[i],
					       (blk_t)c->len[i], +1);
	c->n = 0;
}

static void count_add(ext2_filsys fs, struct count_runs *c, blk64_t start,
		      blk64_t len)
{
	if (c->n && c->start[c->n - 1] + c->len[c->n - 1] == start &&
	    c->len[c->n - 1] + len <= UINT32_MAX) {
		c->len[c->n - 1] += len;
		return;
	}
	if (c->n == COUNT_RUNS)
		count_flush(fs, c);
	c->start[c->n] = start;
	c->len[c->n++] = len;
}

/* f's used blocks into c (counted at the caller's count_flush) */
static void count_blocks(struct e3_file *f, struct count_runs *c)
{
	for (size_t i = 0; i < f->nruns; i++)
		if (f->runs[i].used)
			count_add(f->img->fs, c, f->runs[i].start,
				  f->runs[i].used);
}

/* Under fs_lock: the blocks count in libext2fs, the inode gets its map. */
static errcode_t commit_file(struct e3_file *f)
{
	ext2_filsys fs = f->img->fs;
	/* 128- to 1024-byte inodes (every mkfs' default and most -I) are
	 * read into this one, not a calloc'd one: a calloc and a free per
	 * file closed showed in copy-in profiles. The whole inode is read
	 * before anything is changed, so it needs no zeroing. */
	union {
		struct ext2_inode_large inode;
		char bytes[1024];
	} here;
	struct ext2_inode_large *inode = &here.inode;
	errcode_t err;

	if (EXT2_INODE_SIZE(fs->super) > sizeof(here) &&
	    !(inode = e3_inode_alloc(fs)))
		return ENOMEM;
	f->fs_held = 1;
	err = bm_flush(&f->bm);
	f->fs_held = 0;
	if (err)
		goto out;
	err = ext2fs_read_inode_full(fs, f->ino, EXT2_INODE(inode),
				     EXT2_INODE_SIZE(fs->super));
	if (!err)
		err = patch_inode(f, inode);
	if (!err)
		err = ext2fs_write_inode_full(fs, f->ino, EXT2_INODE(inode),
					      EXT2_INODE_SIZE(fs->super));
	if (!err) {
		struct count_runs c = { .n = 0 };

		count_blocks(f, &c);
		count_flush(fs, &c);
	}
out:
	if (inode != &here.inode)
		free(inode);
	return err;
}

/* Close failed before the inode took the blocks: indirect blocks that
 * went through the journal are revoked and freed after the commit; the
 * rest were never metadata and go back at once. */
static void release_blocks(struct e3_file *f)
{
	struct e3_image *img = f->img;

	for (size_t i = 0; i < f->nruns; i++) {
		struct e3_run *r = &f->runs[i];

		for (blk64_t b = r->start; b < r->start + r->used; b++) {
			if (bm_was_written(&f->bm, b)) {
				if (img->journal)
					e3_journal_revoke(img->journal, b);
				e3_alloc_free_deferred(img->alloc, b, 1);
			} else {
				e3_alloc_unclaim(img->alloc, b, 1);
			}
		}
		r->start += r->used;
		r->len -= r->used;
		r->used = 0;
	}
}

/* Close in three steps so that many files can share one fs_lock hold.
 * First, with f->lock held (kept until close_end): the data leaves the
 * write-behind buffer (here with flush, else by the caller's
 * flush_many). E3_FILE_CLOSED: f was closed before, nothing else is done
 * with it. */
static errcode_t close_begin(struct e3_file *f, int flush)
{
	errcode_t err = 0;

	pthread_mutex_lock(&f->lock);
	if (f->closed) {
		pthread_mutex_unlock(&f->lock);
		return E3_FILE_CLOSED;
	}
	f->closed = 1;
	if (flush)
		err = buf_flush(f);
	return err ? err : f->werr;
}

/* Under fs_lock: the inode takes the blocks, or (err) they go back. */
static errcode_t close_commit(struct e3_file *f, errcode_t err)
{
	errcode_t err2;

	if (!err) {
		err = commit_file(f);
		if (err)	/* libext2fs' inode cache may hold the new map */
			e3_undo_begin(f->img);
	}
	if (err)
		release_blocks(f);
	f->img->load->unfinished--;	/* done, or as done as it gets */
	err2 = e3_op_end(f->img);
	return err ? err : err2;
}

/* The end of one file's close in commit_many, as close_commit ends it,
 * but for its end of operation: the blocks counted (its inode has them,
 * *err == 0: into c, counted by the caller's count_flush) or given
 * back. */
static void commit_blocks(struct e3_file *f, errcode_t *err,
			  struct count_runs *c)
{
	if (!*err) {
		count_blocks(f, c);
	} else {
		e3_undo_begin(f->img);
		release_blocks(f);
	}
}

/* close_commit for n files of one image, under its fs_lock: each inode
 * is changed in its inode-table block in memory and each block written
 * once (itable.c), where commit_file read and wrote a whole block per
 * file through libext2fs. When a block has been written, the closes of
 * the files whose inodes it holds (and of those that failed since the
 * last block) end: first every one's block counts, then every one's end
 * of operation. An end of operation may commit, and let fs_lock go while
 * it writes the log: each inode that is in the image by then has its
 * blocks' bitmap bits there too (a commit between the two replayed to
 * blocks in use that the bitmap calls free), and the next block is read
 * only after the ends. Between two ends of operation the running
 * transaction takes one inode-table block's closes (and the next file's
 * map blocks), not the whole batch's: the journal's worst case
 * (worst_txn) counts on one operation past its limit, not 64. errs[i] on
 * entry: how the file's data went (E3_FILE_CLOSED: skip it); on return,
 * as close_commit's. */
static void commit_many(struct e3_image *img, struct e3_file **files,
			size_t n, errcode_t *errs)
{
	ext2_filsys fs = img->fs;
	unsigned char queued[FLUSH_MANY_MAX], patched[FLUSH_MANY_MAX];
	struct count_runs counts = { .n = 0 };
	struct e3_itab t;
	errcode_t err;

	e3_itab_init(&t, fs);
	memset(queued, 0, sizeof(queued));
	memset(patched, 0, sizeof(patched));
	for (size_t i = 0; i <= n; i++) {
		struct e3_file *f = i < n ? files[i] : NULL;
		blk64_t blk = 0;
		unsigned off = 0;

		if (i < n && (!f || errs[i] == E3_FILE_CLOSED))
			continue;
		if (f && !errs[i]) {
			f->fs_held = 1;
			err = bm_flush(&f->bm);
			f->fs_held = 0;
			if (!err)
				err = e3_itab_place(fs, f->ino, &blk, &off);
			if (err)
				errs[i] = err;
		}
		if (!f || (!errs[i] && blk != t.blk)) {
			/* the block is done: written, then its files' closes
			 * end (nothing of the batch is in t after the flush) */
			err = e3_itab_flush(&t);
			for (size_t k = 0; k < i; k++) {
				if (!queued[k])
					continue;
				if (patched[k] && err)
					errs[k] = err;
				commit_blocks(files[k], &errs[k], &counts);
			}
			count_flush(fs, &counts);
			/* only then any end: the first may commit */
			for (size_t k = 0; k < i; k++) {
				if (!queued[k])
					continue;
				queued[k] = 0;
				img->load->unfinished--;
				err = e3_op_end(img);
				if (!errs[k])
					errs[k] = err;
			}
			if (!f)
				break;
			/* read after those ends: a commit among them let
			 * others at the image */
			err = e3_itab_load(&t, blk);
			if (err)
				errs[i] = err;
		}
		queued[i] = 1;
		if (errs[i])
			continue;	/* its data, map or block failed */
		err = patch_inode(f, (struct ext2_inode_large *)(t.buf + off));
		if (err) {
			errs[i] = err;
			continue;
		}
		t.dirty = 1;
		patched[i] = 1;
	}
	e3_itab_free(&t);
}

/* Without fs_lock: what was claimed and not used (or not kept) goes
 * back; f is stripped (files_retire then frees or keeps it). */
static void close_end(struct e3_file *f)
{
	struct e3_image *img = f->img;

	for (size_t i = 0; i < f->nruns; i++) {
		struct e3_run *r = &f->runs[i];

		if (r->used < r->len)
			e3_alloc_unclaim(img->alloc, r->start + r->used,
					 r->len - r->used);
	}
	e3_rsv_discard(img->alloc, &f->rsv);
	pthread_mutex_unlock(&f->lock);
	file_strip(f);
}

errcode_t e3_file_close(e3_file_t *f)
{
	errcode_t err;

	if (!f)
		return 0;
	err = close_begin(f, 1);
	if (err == E3_FILE_CLOSED)
		return err;
	e3_fs_lock(f->img);
	err = close_commit(f, err);
	e3_fs_unlock(f->img);
	close_end(f);
	files_retire(f->img, &f, 1);
	return err;
}

errcode_t e3_file_flush_many(e3_file_t **files, size_t n)
{
	errcode_t errs[FLUSH_MANY_MAX], first = 0;

	for (size_t at = 0; at < n; at += FLUSH_MANY_MAX) {
		size_t k = n - at < FLUSH_MANY_MAX ? n - at : FLUSH_MANY_MAX;
		struct e3_file **fs = files + at;

		/* the files' locks only, in array order: no one else
		 * takes a file's lock while its loader uses it */
		for (size_t i = 0; i < k; i++) {
			errs[i] = 0;
			if (fs[i])
				pthread_mutex_lock(&fs[i]->lock);
		}
		flush_many(fs, k, errs);
		for (size_t i = 0; i < k; i++) {
			if (!fs[i])
				continue;
			free(fs[i]->buf);
			fs[i]->buf = NULL;
			fs[i]->buf_cap = 0;
			if (!first)
				first = fs[i]->werr;
			pthread_mutex_unlock(&fs[i]->lock);
		}
	}
	return first;
}

errcode_t e3_file_close_many(e3_file_t **files, size_t n, errcode_t *errs)
{
	struct e3_file *done[FLUSH_MANY_MAX];
	size_t nd = 0;
	struct e3_image *img = NULL;
	errcode_t first = 0;
	int one_image = 1;

	/* each file's lock, then fs_lock once: the documented order, and no
	 * one else takes these files' locks (a file has one user) */
	for (size_t i = 0; i < n; i++) {
		errs[i] = files[i] ? close_begin(files[i], 0) : 0;
		if (files[i] && errs[i] != E3_FILE_CLOSED)
			img = files[i]->img;
	}
	flush_many(files, n, errs);
	for (size_t i = 0; i < n; i++)
		if (files[i] && !errs[i])
			errs[i] = files[i]->werr;
	for (size_t i = 0; img && i < n; i++)
		if (files[i] && errs[i] != E3_FILE_CLOSED &&
		    files[i]->img != img)
			one_image = 0;
	if (img && one_image && e3_itab_usable(img->fs)) {
		e3_fs_lock(img);
		for (size_t at = 0; at < n; at += FLUSH_MANY_MAX)
			commit_many(img, files + at, n - at < FLUSH_MANY_MAX ?
				    n - at : FLUSH_MANY_MAX, errs + at);
		e3_fs_unlock(img);
	} else if (img) {
		e3_fs_lock(img);
		for (size_t i = 0; i < n; i++) {
			struct e3_file *f = files[i];

			if (!f || errs[i] == E3_FILE_CLOSED)
				continue;
			if (f->img != img) {	/* another image: its lock */
				e3_fs_unlock(img);
				e3_fs_lock(f->img);
				errs[i] = close_commit(f, errs[i]);
				e3_fs_unlock(f->img);
				e3_fs_lock(img);
				continue;
			}
			errs[i] = close_commit(f, errs[i]);
		}
		e3_fs_unlock(img);
	}
	for (size_t i = 0; i < n; i++) {
		struct e3_file *f = files[i];

		if (f && errs[i] != E3_FILE_CLOSED) {
			close_end(f);
			/* the batch's files leave the open list in one
			 * hold of its lock, each image's on its own */
			if (nd && (done[0]->img != f->img ||
				   nd == FLUSH_MANY_MAX)) {
				files_retire(done[0]->img, done, nd);
				nd = 0;
			}
			done[nd++] = f;
		}
		if (!first)
			first = errs[i];
	}
	if (nd)
		files_retire(done[0]->img, done, nd);
	return first;
}
