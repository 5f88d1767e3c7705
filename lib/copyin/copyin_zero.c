/*
 * copyin_zero.c: all-zero blocks left as holes (the default; --keep-zeros
 * writes them), as mke2fs -d does: a file's data goes to the image in
 * runs of blocks that hold a non-zero byte, and a block of zeros is
 * skipped, so it reads back as zeros without taking a block.
 *
 * Blocks are the image's, aligned on the file's offsets. An archive hands
 * its data in chunks that need not start on a block (a tar entry's data
 * follows a 512-byte header in the stream), so a block cut by a chunk
 * edge is gathered in a carry buffer and judged whole; a tree's reads are
 * aligned and seldom need it. Writes come in increasing offsets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "copyin.h"

int cp_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	return n == 0 || (b[0] == 0 && memcmp(b, b + 1, n - 1) == 0);
}

/* The carried partial block, written unless it is all zeros (what it
 * lacks of its block is a hole or was written before). */
static errcode_t flush_carry(struct cp_zw *z)
{
	errcode_t err = 0;

	if (z->carry_len && !cp_zero(z->carry, z->carry_len))
		err = e3_file_pwrite(z->f, z->carry, z->carry_len,
				     z->carry_off);
	z->carry_len = 0;
	return err;
}

/* Whole blocks at a block-aligned off: each run of blocks with data in
 * one write, zero blocks skipped. */
static errcode_t write_blocks(struct cp_zw *z, const unsigned char *buf,
			      size_t len, uint64_t off)
{
	size_t bs = z->bs, at = 0, run;
	errcode_t err;

	while (at < len) {
		while (at < len && cp_zero(buf + at, bs))
			at += bs;
		for (run = at; run < len && !cp_zero(buf + run, bs); run += bs)
			;
		if (run > at) {
			err = e3_file_pwrite(z->f, buf + at, run - at, off + at);
			if (err)
				return err;
		}
		at = run;
	}
	return 0;
}

errcode_t cp_zw_write(struct cp_zw *z, const void *data, size_t len,
		      uint64_t off)
{
	const unsigned char *buf = data;
	size_t take, whole;
	errcode_t err;

	if (z->keep)
		return e3_file_pwrite(z->f, buf, len, off);
	if (!z->carry && !(z->carry = malloc(z->bs)))
		return ENOMEM;
	/* a gap, or a new block: the carry is complete as it is */
	if (z->carry_len && (off != z->carry_off + z->carry_len ||
			     off / z->bs != z->carry_off / z->bs)) {
		err = flush_carry(z);
		if (err)
			return err;
	}
	/* up to the next block boundary: into the carry */
	if (off % z->bs || z->carry_len) {
		if (!z->carry_len)
			z->carry_off = off;
		take = z->bs - (size_t)(off % z->bs);
		if (take > len)
			take = len;
		memcpy(z->carry + z->carry_len, buf, take);
		z->carry_len += take;
		buf += take;
		len -= take;
		off += take;
		if (off % z->bs == 0 && (err = flush_carry(z)))
			return err;
	}
	whole = len / z->bs * z->bs;
	if (whole && (err = write_blocks(z, buf, whole, off)))
		return err;
	buf += whole;
	len -= whole;
	off += whole;
	if (len) {			/* a block begun: the next chunk ends it */
		memcpy(z->carry, buf, len);
		z->carry_off = off;
		z->carry_len = len;
	}
	return 0;
}

errcode_t cp_zw_finish(struct cp_zw *z)
{
	return flush_carry(z);
}

errcode_t cp_zw_init(struct cp_zw *z, e3_file_t *f, unsigned bs, int keep)
{
	memset(z, 0, sizeof(*z));
	z->f = f;
	z->bs = bs;
	z->keep = keep;
	/* the carry comes with the first write that goes through here: a
	 * tree's file without zero blocks is written from its own buffer
	 * (copyin_tree.c write_chunk) and never needs one */
	return 0;
}

void cp_zw_free(struct cp_zw *z)
{
	free(z->carry);
	z->carry = NULL;
}

size_t cp_zero_block_at(const void *data, size_t len, uint64_t off,
			unsigned bs)
{
	const unsigned char *buf = data;
	size_t at = (size_t)((bs - off % bs) % bs);

	for (; at + bs <= len; at += bs)
		if (cp_zero(buf + at, bs))
			return at;
	return len;
}
