/*
 * check_dirent.c: the rules one directory entry must keep (the same as
 * e2fsck's pass 2: rec_len at least 12, a multiple of 4, inside the block,
 * the name inside the record) and the salvage of an entry that breaks
 * them. The check runs the salvage on its private copy of the block, so
 * it counts the entries after a broken one exactly as the fix (which runs
 * it on the block it then writes) will leave them: a single bad name_len
 * loses one entry, not the rest of the block.
 */
#include <string.h>

#include "check.h"

#define HDR 8		/* inode, rec_len, name_len, file type */

static unsigned rec_len_at(ext2_filsys fs, const unsigned char *buf,
			   unsigned off, unsigned len)
{
	unsigned r = 0;

	if (len - off < HDR)
		return len - off;
	/* the entry may start at any 4-byte offset but a broken rec_len
	 * before it can leave it anywhere: read the fields bytewise */
	{
		struct ext2_dir_entry de;

		memcpy(&de, buf + off, HDR);
		if (ext2fs_get_rec_len(fs, &de, &r))
			return 0;
	}
	return r;
}

static unsigned name_len_at(ext2_filsys fs, const unsigned char *buf,
			    unsigned off, unsigned len)
{
	struct ext2_dir_entry de;

	if (len - off < HDR)
		return 0;
	memcpy(&de, buf + off, HDR);
	if (!ext2fs_has_feature_filetype(fs->super) &&
	    ext2fs_dirent_file_type(&de))
		return de.name_len;	/* without filetype, 16 bits of length */
	return ext2fs_dirent_name_len(&de);
}

int chk_dirent_bad(ext2_filsys fs, const unsigned char *buf, unsigned off,
		   unsigned len)
{
	unsigned rec_len;

	if (off % 4 || len - off < HDR)
		return 1;
	rec_len = rec_len_at(fs, buf, off, len);
	return rec_len < 12 || rec_len % 4 || off + rec_len > len ||
	       HDR + name_len_at(fs, buf, off, len) > rec_len;
}

static void set_rec_len(ext2_filsys fs, unsigned char *buf, unsigned off,
			unsigned rec_len)
{
	struct ext2_dir_entry de;

	memcpy(&de, buf + off, HDR);
	ext2fs_set_rec_len(fs, rec_len, &de);
	memcpy(buf + off, &de, HDR);
}

/* The name bytes hold no NUL (a rec_len cut to fit must not keep a name
 * that runs into zeroed space). */
static int name_plain(const unsigned char *p, unsigned n)
{
	return !memchr(p, 0, n);
}

unsigned chk_dirent_salvage(ext2_filsys fs, unsigned char *buf, unsigned off,
			    int prev, unsigned len)
{
	unsigned rec_len = rec_len_at(fs, buf, off, len);
	unsigned nlen = name_len_at(fs, buf, off, len);
	long left = (long)len - off - rec_len;
	uint32_t ino = 0;

	if (len - off >= HDR)
		memcpy(&ino, buf + off, 4);
	ino = ext2fs_le32_to_cpu(ino);
	/* an 8-byte record with room after it: a stray header; close the
	 * gap by moving the rest of the block up */
	if (rec_len == HDR && left >= 12) {
		memmove(buf + off, buf + off + HDR, left);
		memset(buf + off + left, 0, HDR);
		return off;
	}
	/* the block's first entry (no previous one to take it in) with a
	 * record length off the 4-byte grid, too short or running past the
	 * block (a flipped high bit; its inode may be damaged too, so the
	 * cut below, which trusts the inode number, does not apply), but a
	 * name that
	 * fits and a good entry right after the shortest record that holds
	 * it: the length was the damage, keep the entry and the rest of the
	 * block, as e2fsck keeps them (a '.' whose rec_len lost a bit kept
	 * nothing after it). The inode number is judged afterwards, as for
	 * any entry. Later entries keep the rules below, which are e2fsck's
	 * (it drops such an entry, and keeps the ones after it). */
	if (prev < 0 && (rec_len < 12 || rec_len % 4 || off + rec_len > len) && nlen &&
	    off + ((HDR + nlen + 3) & ~3u) + HDR <= len &&
	    name_plain(buf + off + HDR, nlen) &&
	    !chk_dirent_bad(fs, buf, off + ((HDR + nlen + 3) & ~3u), len)) {
		set_rec_len(fs, buf, off, (HDR + nlen + 3) & ~3u);
		return off;
	}
	/* the block's first entry, its record length good but its name
	 * longer than the record: only the entry is lost (made empty, its
	 * record kept), not the entries after it, as e2fsck keeps them (a
	 * '.' with a bad name_len emptied the block) */
	if (prev < 0 && rec_len >= 12 && rec_len % 4 == 0 && off + rec_len <= len) {
		memset(buf + off, 0, 4);
		buf[off + 6] = 0;
		buf[off + 7] = 0;
		return off;
	}
	/* the record runs past the block but its name fits: cut it */
	if (left < 0 && (long)rec_len + left > HDR &&
	    nlen + HDR <= (unsigned)((long)rec_len + left) &&
	    ino <= fs->super->s_inodes_count &&
	    name_plain(buf + off + HDR, nlen)) {
		set_rec_len(fs, buf, off, (unsigned)((long)rec_len + left));
		return off;
	}
	/* a plausible record length: the previous entry takes this record
	 * in and the walk goes on with the next one */
	if (prev >= 0 && rec_len && rec_len % 4 == 0 && off + rec_len <= len) {
		set_rec_len(fs, buf, prev, rec_len_at(fs, buf, prev, len) + rec_len);
		return off + rec_len;
	}
	/* nothing to go on: the rest of the block is lost */
	if (prev >= 0) {
		set_rec_len(fs, buf, prev, rec_len_at(fs, buf, prev, len) + len - off);
		return len;
	}
	if (len - off < HDR)
		return len;
	memset(buf + off, 0, HDR);
	set_rec_len(fs, buf, off, len - off);
	return off;
}
