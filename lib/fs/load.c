/*
 * load.c: lib/load's per-image state and the small helpers that every
 * "make a new name" operation shares — name rules, directory insertion
 * with growth, filling an inode's owner, mode and nanosecond times.
 *
 * Image close with files still open: e3_load_fini refuses with
 * E3_FILES_OPEN. It cannot close them itself — that would need
 * file->lock while image close holds fs_lock, the wrong order — and their
 * data may be half written. The open files' window and claimed blocks are
 * dropped with the allocator, nothing of theirs reaches the image beyond
 * the inode written at create (size 0), so the image stays consistent;
 * their handles are invalid once e3_image_close returns.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "load.h"
#include "load_int.h"
#include "dirfind.h"
#include "journal/journal.h"
#include "file_int.h"
#include "blockmap.h"
#include "alloc/alloc.h"

errcode_t e3_load_init(struct e3_image *img)
{
	struct e3_load *l = calloc(1, sizeof(*l));
	const char *env;
	char *end;

	if (!l)
		return ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	for (unsigned i = 0; i < E3_LOAD_FILE_BUCKETS; i++)
		TAILQ_INIT(&l->files[i]);
	l->write_buffer = 1 << 20;
	env = getenv("E3_WRITE_BUFFER");
	if (env && *env) {
		unsigned long long v = strtoull(env, &end, 0);

		if (*end == '\0' && v > 0 && v <= (1ULL << 30))
			l->write_buffer = (size_t)v;
	}
	img->load = l;
	return 0;
}

static void free_load(struct e3_image *img)
{
	struct e3_load *l = img->load;
	struct e3_file *f;

	for (unsigned i = 0; i < E3_LOAD_FILE_BUCKETS; i++)
		while ((f = TAILQ_FIRST(&l->files[i])) != NULL) {
			TAILQ_REMOVE(&l->files[i], f, link);
			e3_file_drop(f);
		}
	for (unsigned i = 0; i < E3_EA_SHARE_BUCKETS; i++) {
		struct e3_ea_share *s = l->ea[i], *next;

		for (; s; s = next) {
			next = s->next;
			free(s);
		}
	}
	while ((f = l->pool) != NULL) {
		l->pool = f->pool_next;
		e3_file_pool_free(f);
	}
	e3_dc_free(img);
	pthread_mutex_destroy(&l->lock);
	free(l);
	img->load = NULL;
}

errcode_t e3_load_fini(struct e3_image *img)
{
	unsigned open;

	pthread_mutex_lock(&img->load->lock);
	open = img->load->nfiles;
	pthread_mutex_unlock(&img->load->lock);
	free_load(img);
	return open ? E3_FILES_OPEN : 0;
}

void e3_load_abort(struct e3_image *img)
{
	free_load(img);
}

/* f->ino is fixed before the file is added and until it is removed */
static struct e3_file_list *bucket(struct e3_load *l, ext2_ino_t ino)
{
	return &l->files[ino & (E3_LOAD_FILE_BUCKETS - 1)];
}

void e3_load_file_add(struct e3_image *img, struct e3_file *f)
{
	pthread_mutex_lock(&img->load->lock);
	TAILQ_INSERT_TAIL(bucket(img->load, f->ino), f, link);
	img->load->nfiles++;
	pthread_mutex_unlock(&img->load->lock);
}

void e3_load_file_del(struct e3_image *img, struct e3_file *f)
{
	pthread_mutex_lock(&img->load->lock);
	TAILQ_REMOVE(bucket(img->load, f->ino), f, link);
	img->load->nfiles--;
	pthread_mutex_unlock(&img->load->lock);
}

void e3_load_files_del_keep(struct e3_image *img, struct e3_file **files,
			    size_t n, unsigned char *kept)
{
	struct e3_load *l = img->load;

	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < n; i++) {
		struct e3_file *f = files[i];

		TAILQ_REMOVE(bucket(l, f->ino), f, link);
		l->nfiles--;
#if E3_LOAD_POOL > 0
		kept[i] = l->npool < E3_LOAD_POOL;
#else
		kept[i] = 0;
#endif
		if (kept[i]) {
			f->pool_next = l->pool;
			l->pool = f;
			l->npool++;
		}
	}
	pthread_mutex_unlock(&l->lock);
}

struct e3_file *e3_load_file_reuse(struct e3_image *img)
{
	struct e3_load *l = img->load;
	struct e3_file *f;

	pthread_mutex_lock(&l->lock);
	f = l->pool;
	if (f) {
		l->pool = f->pool_next;
		l->npool--;
	}
	pthread_mutex_unlock(&l->lock);
	return f;
}

int e3_load_file_is_open(struct e3_image *img, ext2_ino_t ino)
{
	struct e3_file *f;
	int open = 0;

	pthread_mutex_lock(&img->load->lock);
	TAILQ_FOREACH(f, bucket(img->load, ino), link)
		if (f->ino == ino) {
			open = 1;
			break;
		}
	pthread_mutex_unlock(&img->load->lock);
	return open;
}

errcode_t e3_op_end(struct e3_image *img)
{
	if (!img->journal)
		return 0;
	/* a file being written has its name and an empty inode in the
	 * running transaction: committing now would make that durable, a
	 * file of 0 bytes under its real name after a crash. Its close
	 * (the map, in ordered mode after its data) ends the hold; only
	 * the journal's own limit commits sooner (e3_load_commit_wanted
	 * tells loaders to finish their files before that). */
	if (img->load && img->load->unfinished)
		return e3_journal_op_end_held(img->journal);
	return e3_journal_op_end(img->journal);
}

int e3_load_commit_wanted(struct e3_image *img, int by_time,
			  uint64_t pending)
{
	return img->journal && img->load && img->load->unfinished &&
	       e3_journal_commit_wanted(img->journal, by_time, pending);
}

uint64_t e3_load_txn_limit(struct e3_image *img)
{
	return img->journal ? e3_journal_txn_limit(img->journal) : 0;
}

errcode_t e3_load_commit(struct e3_image *img)
{
	if (!img->journal || (img->load && img->load->unfinished))
		return 0;
	return e3_journal_commit(img->journal, 0);
}

void e3_undo_begin(struct e3_image *img)
{
	ext2fs_flush_icache(img->fs);	/* invalidates: reads go to the I/O */
	e3_dc_drop_block(img);	/* and the directory cache's block */
}

void e3_op_poison(struct e3_image *img, errcode_t err)
{
	if (img->journal && e3_journal_poison(img->journal, err) == 0)
		return;
	img->fs->super->s_state |= EXT2_ERROR_FS;
	ext2fs_mark_super_dirty(img->fs);
}

errcode_t e3_check_writable(struct e3_image *img)
{
	if (!img || !(img->flags & E3_OPEN_WRITE) || !img->load || !img->alloc)
		return E3_IMAGE_READONLY;
	if (!img->journal &&
	    !__atomic_load_n(&img->unclean_on_disk, __ATOMIC_ACQUIRE))
		return e3_image_mark_unclean(img);
	return 0;
}

errcode_t e3_check_name(const char *name)
{
	size_t len;

	if (!name)
		return E3_BAD_NAME;
	len = strlen(name);
	if (len == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strchr(name, '/'))
		return E3_BAD_NAME;
	if (len > EXT2_NAME_LEN)
		return E3_NAME_TOO_LONG;
	return 0;
}

errcode_t e3_map_err(errcode_t err)
{
	switch (err) {
	case EXT2_ET_FILE_NOT_FOUND:
		return E3_NOT_FOUND;
	case EXT2_ET_NO_DIRECTORY:
		return E3_NOT_DIR;
	case EXT2_ET_BLOCK_ALLOC_FAIL:
		return E3_IMAGE_FULL;
	case EXT2_ET_INODE_ALLOC_FAIL:
		return E3_NO_INODES;
	case EXT2_ET_DIR_EXISTS:
		return E3_NAME_EXISTS;
	case EXT2_ET_EA_NO_SPACE:
		return E3_XATTR_TOO_BIG;
	default:
		return err;
	}
}

errcode_t e3_check_new_entry(ext2_filsys fs, ext2_ino_t parent,
			     const char *name, int links_needed)
{
	struct ext2_inode pi;

	return e3_check_new_entry_pi(fs, parent, name, links_needed, &pi);
}

errcode_t e3_check_new_entry_pi(ext2_filsys fs, ext2_ino_t parent,
				const char *name, int links_needed,
				struct ext2_inode *pip)
{
	struct e3_image *img = e3_image_of(fs);
	struct ext2_inode pi;
	ext2_ino_t ino;
	blk64_t lblk;
	errcode_t err;

	err = e3_check_name(name);
	if (err)
		return err;
	if (parent < EXT2_ROOT_INO || parent > fs->super->s_inodes_count)
		return E3_NOT_FOUND;
	err = ext2fs_read_inode(fs, parent, &pi);
	if (err)
		return err;
	*pip = pi;
	if (pi.i_links_count == 0)
		return E3_NOT_FOUND;
	if (!LINUX_S_ISDIR(pi.i_mode))
		return E3_NOT_DIR;
	if (links_needed && pi.i_links_count >= E3_LINK_MAX)
		return E3_LINK_LIMIT;
	err = img ? e3_dc_find_known(img, parent, &pi, name, &ino, &lblk)
		  : e3_dir_find(fs, parent, name, &ino, &lblk);
	if (err == 0)
		return E3_NAME_EXISTS;
	if (err != EXT2_ET_FILE_NOT_FOUND)
		return err;
	return 0;
}

static int file_type_of(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return EXT2_FT_REG_FILE;
	case S_IFDIR: return EXT2_FT_DIR;
	case S_IFLNK: return EXT2_FT_SYMLINK;
	case S_IFCHR: return EXT2_FT_CHRDEV;
	case S_IFBLK: return EXT2_FT_BLKDEV;
	case S_IFIFO: return EXT2_FT_FIFO;
	case S_IFSOCK: return EXT2_FT_SOCK;
	default: return EXT2_FT_UNKNOWN;
	}
}

/* ext2fs_expand_dir running out of space half way keeps a new indirect
 * block in the inode but not in i_blocks, and the operation's end would
 * commit that: the block and the indirect blocks above it must all be
 * free before it starts. */
static errcode_t dir_room(ext2_filsys fs, ext2_ino_t dir)
{
	struct e3_image *img = e3_image_of(fs);
	struct ext2_inode di;
	uint64_t nblk;
	errcode_t err;

	if (!img || !img->alloc)
		return 0;
	err = ext2fs_read_inode(fs, dir, &di);
	if (err)
		return err;
	nblk = EXT2_I_SIZE(&di) / fs->blocksize;
	if (nblk && e3_alloc_free_count(img->alloc) <
	    1 + bm_meta_between(fs->blocksize / 4, nblk - 1, nblk + 1))
		return E3_IMAGE_FULL;
	return 0;
}

/* Errors with which adding a name stops while reading, before it writes
 * anything (a damaged directory on an image we were given). */
static int refused_before_writing(errcode_t err)
{
	return err == EXT2_ET_DIR_CORRUPTED || err == EXT2_ET_DIR_CSUM_INVALID ||
	       err == EXT2_ET_DIR_EXISTS || err == EXT2_ET_NO_DIRECTORY ||
	       err == E3_FILE_BLOCKS_BAD;
}

/* Through the directory cache when it covers dir (images opened by this
 * library), else libext2fs. */
static errcode_t link_once(struct e3_image *img, ext2_filsys fs,
			   ext2_ino_t dir, const struct ext2_inode *di,
			   const char *name, ext2_ino_t ino, int ft)
{
	int handled = 0;
	errcode_t err;

	if (img) {
		err = e3_dc_link_known(img, dir, di, name, ino, ft, &handled);
		if (!err && !handled)
			err = e3_dc_dir_owned(img, dir);
		if (err || handled)
			return err;
	}
	return ext2fs_link(fs, dir, name, ino, ft);
}

errcode_t e3_dir_add(ext2_filsys fs, ext2_ino_t dir, const char *name,
		     ext2_ino_t ino, uint32_t mode)
{
	return e3_dir_add_known(fs, dir, NULL, name, ino, mode);
}

errcode_t e3_dir_add_known(ext2_filsys fs, ext2_ino_t dir,
			   const struct ext2_inode *di, const char *name,
			   ext2_ino_t ino, uint32_t mode)
{
	int ft = ext2fs_has_feature_filetype(fs->super) ? file_type_of(mode) : 0;
	struct e3_image *img = e3_image_of(fs);
	errcode_t err;

	err = link_once(img, fs, dir, di, name, ino, ft);
	if (err == EXT2_ET_DIR_NO_SPACE) {
		/* 1.47.0's ext2fs_link does not grow the directory itself;
		 * expand_dir allocates through our hook. */
		err = dir_room(fs, dir);
		if (err)
			return e3_map_err(err);		/* nothing written */
		err = ext2fs_expand_dir(fs, dir);
		if (!err)	/* the directory grew: its inode read again */
			err = link_once(img, fs, dir, NULL, name, ino, ft);
		if (err)
			goto half_done;
	} else if (err && !refused_before_writing(err)) {
		goto half_done;
	}
	return e3_map_err(err);
half_done:
	/* A write that failed inside libext2fs' directory code can leave
	 * it half done — expand_dir's new block allocated but not mapped,
	 * an htree leaf split — and no caller can undo that: the operation
	 * must never commit. */
	if (img) {
		e3_undo_begin(img);
		e3_dc_forget(img, dir);
		e3_op_poison(img, err);
	}
	return e3_map_err(err);
}

/* ext4's encoding of a time in the inode's *_extra field: two bits that
 * extend the seconds past 2038, then the nanoseconds. */
static uint32_t time_extra(const struct timespec *ts)
{
	int64_t sec = ts->tv_sec;
	uint32_t epoch = (uint32_t)(((sec - (int32_t)sec) >> 32) & EXT4_EPOCH_MASK);

	return epoch | ((uint32_t)ts->tv_nsec << EXT4_EPOCH_BITS);
}

void e3_inode_set_attr(ext2_filsys fs, struct ext2_inode_large *inode,
		       const struct e3_attr *attr)
{
	unsigned isz = EXT2_INODE_SIZE(fs->super);

	inode->i_mode = (uint16_t)attr->mode;
	inode->i_uid = (uint16_t)attr->uid;
	ext2fs_set_i_uid_high(*inode, attr->uid >> 16);
	inode->i_gid = (uint16_t)attr->gid;
	ext2fs_set_i_gid_high(*inode, attr->gid >> 16);
	inode->i_atime = (uint32_t)attr->atime.tv_sec;
	inode->i_mtime = (uint32_t)attr->mtime.tv_sec;
	inode->i_ctime = (uint32_t)attr->ctime.tv_sec;
	if (isz <= EXT2_GOOD_OLD_INODE_SIZE)
		return;
	if (inode_includes(EXT2_GOOD_OLD_INODE_SIZE + inode->i_extra_isize,
			   i_atime_extra)) {
		inode->i_ctime_extra = time_extra(&attr->ctime);
		inode->i_mtime_extra = time_extra(&attr->mtime);
		inode->i_atime_extra = time_extra(&attr->atime);
	}
}

void e3_inode_init(ext2_filsys fs, struct ext2_inode_large *inode,
		   const struct e3_attr *attr, uint16_t links)
{
	unsigned isz = EXT2_INODE_SIZE(fs->super);

	memset(inode, 0, isz > sizeof(*inode) ? isz : sizeof(*inode));
	if (isz > EXT2_GOOD_OLD_INODE_SIZE) {
		unsigned extra = sizeof(struct ext2_inode_large) -
				 EXT2_GOOD_OLD_INODE_SIZE;

		if (EXT2_GOOD_OLD_INODE_SIZE + extra > isz)
			extra = isz - EXT2_GOOD_OLD_INODE_SIZE;
		inode->i_extra_isize = (uint16_t)(extra & ~3u);
	}
	e3_inode_set_attr(fs, inode, attr);
	if (inode_includes(EXT2_GOOD_OLD_INODE_SIZE + inode->i_extra_isize,
			   i_crtime_extra)) {
		inode->i_crtime = inode->i_ctime;
		inode->i_crtime_extra = inode->i_ctime_extra;
	}
	inode->i_links_count = links;
}

struct ext2_inode_large *e3_inode_alloc(ext2_filsys fs)
{
	size_t isz = EXT2_INODE_SIZE(fs->super);

	return calloc(1, isz > sizeof(struct ext2_inode_large) ?
			 isz : sizeof(struct ext2_inode_large));
}

errcode_t e3_inode_new_in(struct e3_image *img, ext2_ino_t parent,
			  const char *name, const struct e3_attr *attr,
			  uint16_t links, struct ext2_inode_large *inode,
			  ext2_ino_t *ino)
{
	struct ext2_inode pi;

	return e3_inode_new_in_pi(img, parent, name, attr, links, inode, ino,
				  &pi);
}

errcode_t e3_inode_new_in_pi(struct e3_image *img, ext2_ino_t parent,
			     const char *name, const struct e3_attr *attr,
			     uint16_t links, struct ext2_inode_large *inode,
			     ext2_ino_t *ino, struct ext2_inode *pi)
{
	int is_dir = LINUX_S_ISDIR(attr->mode);
	errcode_t err;

	err = e3_check_new_entry_pi(img->fs, parent, name, is_dir, pi);
	if (!err)
		err = e3_ialloc(img->fs, parent, is_dir, ino);
	if (!err)
		e3_inode_init(img->fs, inode, attr, links);
	return err;
}

errcode_t e3_inode_new(struct e3_image *img, ext2_ino_t parent,
		       const char *name, const struct e3_attr *attr,
		       uint16_t links, struct ext2_inode_large **inode,
		       ext2_ino_t *ino)
{
	errcode_t err;

	*inode = e3_inode_alloc(img->fs);
	if (!*inode)
		return ENOMEM;
	err = e3_inode_new_in(img, parent, name, attr, links, *inode, ino);
	if (err) {
		free(*inode);
		*inode = NULL;
	}
	return err;
}

void e3_ifree(ext2_filsys fs, ext2_ino_t ino, int is_dir)
{
	e3_ifree_ino(fs, ino, is_dir);
}
