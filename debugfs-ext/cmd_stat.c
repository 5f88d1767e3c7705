/*
 * cmd_stat.c: stat FILE and blocks FILE in debugfs' text — the inode's
 * fields, times with their nanoseconds, extended attributes, a fast
 * symlink's target, a device's numbers, and the block map as runs
 * ("(0-11):1593-1604, (IND):1605, ..."). blocks lists nothing for a
 * fast symlink, where debugfs lists its target's bytes as blocks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbg.h"

struct runs {
	FILE *f;
	long long total;
	blk64_t first_blk, last_blk;
	e2_blkcnt_t first_cnt, last_cnt;
	int first;
};

static void end_run(struct runs *r)
{
	if (!r->first_blk)
		return;
	fprintf(r->f, "%s", r->first ? "" : ", ");
	r->first = 0;
	if (r->first_blk == r->last_blk)
		fprintf(r->f, "(%lld):%llu", (long long)r->first_cnt,
			(unsigned long long)r->first_blk);
	else
		fprintf(r->f, "(%lld-%lld):%llu-%llu", (long long)r->first_cnt,
			(long long)r->last_cnt, (unsigned long long)r->first_blk,
			(unsigned long long)r->last_blk);
	r->first_blk = 0;
}

static int runs_proc(ext2_filsys fs, blk64_t *blk, e2_blkcnt_t cnt,
		     blk64_t ref, int ref_off, void *priv)
{
	struct runs *r = priv;
	static const char *const meta[] = { "IND", "DIND", "TIND" };

	(void)fs;
	(void)ref;
	(void)ref_off;
	r->total++;
	if (cnt >= 0) {
		if (r->first_blk && r->last_blk + 1 == *blk &&
		    r->last_cnt + 1 == cnt) {
			r->last_blk = *blk;
			r->last_cnt = cnt;
			return 0;
		}
		end_run(r);
		r->first_blk = r->last_blk = *blk;
		r->first_cnt = r->last_cnt = cnt;
		return 0;
	}
	end_run(r);
	fprintf(r->f, "%s", r->first ? "" : ", ");
	r->first = 0;
	if (cnt >= -3)
		fprintf(r->f, "(%s):%llu", meta[-cnt - 1],
			(unsigned long long)*blk);
	return 0;
}

static void dump_blocks(struct dbg *d, ext2_ino_t ino)
{
	struct runs r = { .f = d->out, .first = 1 };

	fprintf(d->out, "BLOCKS:\n");
	ext2fs_block_iterate3(d->fs, ino, BLOCK_FLAG_READ_ONLY, NULL,
			      runs_proc, &r);
	end_run(&r);
	if (r.total)
		fprintf(d->out, "\nTOTAL: %lld\n", r.total);
	fprintf(d->out, "\n");
}

static const char *type_name(uint16_t mode)
{
	if (LINUX_S_ISDIR(mode)) return "directory";
	if (LINUX_S_ISREG(mode)) return "regular";
	if (LINUX_S_ISLNK(mode)) return "symlink";
	if (LINUX_S_ISBLK(mode)) return "block special";
	if (LINUX_S_ISCHR(mode)) return "character special";
	if (LINUX_S_ISFIFO(mode)) return "FIFO";
	if (LINUX_S_ISSOCK(mode)) return "socket";
	return "bad type";
}

static void one_time(struct dbg *d, const char *label, uint32_t t,
		     uint32_t extra, int large)
{
	char buf[64];

	if (large)
		fprintf(d->out, "%s: 0x%08x:%08x -- %s", label, t, extra,
			dbg_time(dbg_inode_time(t, extra, 1), buf));
	else
		fprintf(d->out, "%s: 0x%08x -- %s", label + (label[0] == ' '),
			t, dbg_time((int32_t)t, buf));
}

static void dump_times(struct dbg *d, struct ext2_inode_large *in, int large)
{
	char buf[64];

	one_time(d, " ctime", in->i_ctime, in->i_ctime_extra, large);
	one_time(d, " atime", in->i_atime, in->i_atime_extra, large);
	one_time(d, " mtime", in->i_mtime, in->i_mtime_extra, large);
	if (large)
		one_time(d, "crtime", in->i_crtime, in->i_crtime_extra, 1);
	if (in->i_dtime && large)
		fprintf(d->out, " dtime: 0x%08x:(%08x) -- %s", in->i_dtime,
			in->i_ctime_extra, dbg_time(dbg_inode_time(in->i_dtime,
					in->i_ctime_extra, 1), buf));
	else if (in->i_dtime)
		fprintf(d->out, "dtime: 0x%08x -- %s", in->i_dtime,
			dbg_time((int32_t)in->i_dtime, buf));
}

static void dump_device(struct dbg *d, struct ext2_inode *in)
{
	unsigned major, minor;
	const char *note = "";

	if (in->i_block[0]) {
		major = (in->i_block[0] >> 8) & 255;
		minor = in->i_block[0] & 255;
	} else {
		major = (in->i_block[1] & 0xfff00) >> 8;
		minor = (in->i_block[1] & 0xff) | ((in->i_block[1] >> 12) & 0xfff00);
		note = "(New-style) ";
	}
	fprintf(d->out, "%sDevice major/minor number: %02d:%02d (hex %02x:%02x)\n",
		note, major, minor, major, minor);
}

static void dump_inode(struct dbg *d, ext2_ino_t ino, struct ext2_inode_large *in)
{
	struct ext2_inode *i = EXT2_INODE(in);
	int big = EXT2_INODE_SIZE(d->fs->super) > EXT2_GOOD_OLD_INODE_SIZE;
	int large = big && in->i_extra_isize >= 24;

	fprintf(d->out, "Inode: %u   Type: %s    Mode:  0%03o   Flags: 0x%x\n",
		ino, type_name(i->i_mode), i->i_mode & 07777, i->i_flags);
	if (large)
		fprintf(d->out, "Generation: %u    Version: 0x%08x:%08x\n",
			i->i_generation, in->i_version_hi,
			i->osd1.linux1.l_i_version);
	else
		fprintf(d->out, "Generation: %u    Version: 0x%08x\n",
			i->i_generation, i->osd1.linux1.l_i_version);
	fprintf(d->out, "User: %5d   Group: %5d", inode_uid(*i), inode_gid(*i));
	if (big && in->i_extra_isize >= 32)
		fprintf(d->out, "   Project: %5d", in->i_projid);
	if (LINUX_S_ISREG(i->i_mode) || LINUX_S_ISDIR(i->i_mode))
		fprintf(d->out, "   Size: %llu\n", (unsigned long long)EXT2_I_SIZE(i));
	else
		fprintf(d->out, "   Size: %u\n", i->i_size);
	fprintf(d->out, "File ACL: %llu\n", (unsigned long long)i->i_file_acl |
		((unsigned long long)i->osd2.linux2.l_i_file_acl_high << 32));
	fprintf(d->out, "Links: %u   Blockcount: %llu\n", i->i_links_count,
		((unsigned long long)i->osd2.linux2.l_i_blocks_hi << 32) +
		i->i_blocks);
	fprintf(d->out, "Fragment:  Address: %u    Number: 0    Size: 0\n",
		i->i_faddr);
	dump_times(d, in, large);
	if (big)
		fprintf(d->out, "Size of extra inode fields: %u\n",
			in->i_extra_isize);
	dbg_print_xattrs(d, ino, 1);
	if (LINUX_S_ISLNK(i->i_mode) && ext2fs_is_fast_symlink(i))
		fprintf(d->out, "Fast link dest: \"%.*s\"\n",
			(int)EXT2_I_SIZE(i), (char *)i->i_block);
	else if (LINUX_S_ISBLK(i->i_mode) || LINUX_S_ISCHR(i->i_mode))
		dump_device(d, i);
	else
		dump_blocks(d, ino);
}

DBG_CMD(do_stat)
{
	struct dbg *d = dbg_of(info);
	struct ext2_inode_large *in;
	ext2_ino_t ino;

	if (dbg_args(d, argc, 2, 2, "stat FILE"))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	in = dbg_inode_buf(d);
	if (!in) {
		dbg_fail(d, ENOMEM, NULL);
		return;
	}
	if (!dbg_read_inode(d, ino, argv[1], in))
		dump_inode(d, ino, in);
	free(in);
}

static int list_proc(ext2_filsys fs, blk64_t *blk, e2_blkcnt_t cnt,
		     blk64_t ref, int ref_off, void *priv)
{
	(void)fs;
	(void)cnt;
	(void)ref;
	(void)ref_off;
	fprintf(((struct dbg *)priv)->out, "%llu ", (unsigned long long)*blk);
	return 0;
}

DBG_CMD(do_blocks)
{
	struct dbg *d = dbg_of(info);
	struct ext2_inode inode;
	ext2_ino_t ino;
	errcode_t err;

	if (dbg_args(d, argc, 2, 2, "blocks FILE"))
		return;
	if (!(ino = dbg_inode(d, argv[1])))
		return;
	if ((err = ext2fs_read_inode(d->fs, ino, &inode))) {
		dbg_fail(d, err, "%s", argv[1]);
		return;
	}
	/* debugfs prints a fast symlink's target bytes as block numbers */
	if (ext2fs_inode_has_valid_blocks2(d->fs, &inode))
		err = ext2fs_block_iterate3(d->fs, ino, BLOCK_FLAG_READ_ONLY,
					    NULL, list_proc, d);
	fputc('\n', d->out);
	if (err)
		dbg_fail(d, err, "%s", argv[1]);
}
