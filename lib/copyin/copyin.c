/*
 * copyin.c: the copy-in engine — e3_copyin_run and the entry-making
 * helpers the walkers (copyin_tree.c, copyin_archive.c, copyin_devtab.c)
 * share: owner maps and the time clamp, path cleaning and resolution
 * inside the image, existing-entry rules, xattrs, deferred directory
 * attributes, the hard-link map and event reporting.
 *
 * Determinism: one thread (the caller's, "the scanner") makes every call
 * that places anything — inodes, directory entries, xattr blocks, and the
 * creation of each file with its size hint, which books the file's whole
 * run. Workers only stream file contents into runs already decided.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <archive.h>

#include "fs/image.h"
#include "copyin.h"
#include "util/grow.h"

/* ---- events --------------------------------------------------------------- */

void cp_event(struct cp_ctx *c, enum e3_copyin_event ev, const char *path,
	      errcode_t err)
{
	if (!c->o->event)
		return;
	pthread_mutex_lock(&c->stat_lock);
	c->o->event(c->o->event_ctx, ev, path, err, c->st);
	pthread_mutex_unlock(&c->stat_lock);
}

void cp_event_made(struct cp_ctx *c, const char *rel)
{
	const char *d = c->dest_shown ? c->dest_shown : "";
	char *p;

	if (!c->o->event || c->o->no_file_events)
		return;
	p = malloc(strlen(d) + strlen(rel) + 2);
	if (!p)
		return;		/* a listing line lost, nothing else */
	sprintf(p, "%s/%s", d, rel);
	cp_event(c, E3_CP_FILE, p, 0);
	free(p);
}

/* The destination as -v shows it: "" for the root, else "/a/b". */
static errcode_t set_dest_shown(struct cp_ctx *c, const char *dest)
{
	char *buf = strdup(dest ? dest : "/");
	errcode_t err;

	if (!buf)
		return ENOMEM;
	err = cp_path_clean(buf);
	free(c->dest_shown);
	c->dest_shown = NULL;
	if (!err) {
		c->dest_shown = malloc(strlen(buf) + 2);
		if (!c->dest_shown)
			err = ENOMEM;
		else
			sprintf(c->dest_shown, "%s%s", *buf ? "/" : "", buf);
	}
	free(buf);
	return err;
}

void cp_skip(struct cp_ctx *c, const char *path, errcode_t err)
{
	pthread_mutex_lock(&c->stat_lock);
	c->st->skipped++;
	pthread_mutex_unlock(&c->stat_lock);
	cp_event(c, E3_CP_SKIP, path, err);
}

static double now_seconds(void)
{
	struct timespec ts;

	/* once per file, for a tenth of a second: a tick's resolution does */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Counts entries and bytes done; progress at most ten times a second. */
void cp_count_file(struct cp_ctx *c, uint64_t bytes, const char *path)
{
	(void)path;
	pthread_mutex_lock(&c->stat_lock);
	cp_count_file_locked(c, bytes);
	pthread_mutex_unlock(&c->stat_lock);
}

void cp_count_file_locked(struct cp_ctx *c, uint64_t bytes)
{
	static const double period = 0.1;
	double t;

	c->st->files++;
	c->st->bytes += bytes;
	if (c->o->event) {
		t = now_seconds();
		if (t - c->last_progress >= period) {
			c->last_progress = t;
			c->o->event(c->o->event_ctx, E3_CP_PROGRESS, NULL, 0,
				    c->st);
		}
	}
}

void cp_error(struct cp_ctx *c, const char *path, errcode_t err)
{
	pthread_mutex_lock(&c->stat_lock);
	c->st->errors++;
	if (err == E3_NAME_EXISTS)
		c->st->exists++;
	pthread_mutex_unlock(&c->stat_lock);
	cp_event(c, E3_CP_ERROR, path, err);
}

/* ---- attributes ------------------------------------------------------------- */

void cp_attr_from_stat(struct e3_attr *a, const struct stat *st)
{
	a->mode = st->st_mode;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->atime = st->st_atim;
	a->mtime = st->st_mtim;
	a->ctime = st->st_ctim;
}

static uint32_t map_id(const struct e3_idmap *m, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].from == id)
			return m[i].to;
	return id;
}

static void clamp(struct timespec *t, int64_t epoch)
{
	if (t->tv_sec > epoch || (t->tv_sec == epoch && t->tv_nsec)) {
		t->tv_sec = (time_t)epoch;
		t->tv_nsec = 0;
	}
}

/* The range an inode of this image holds, as the kernel's ext4 sets
 * s_time_min/s_time_max: 32 signed bits of seconds, and with the *_extra
 * fields (large inodes) two more epoch bits, up to 2446-05-10. */
#define CP_TIME_MIN ((int64_t)INT32_MIN)
#define CP_TIME_MAX_EXTRA (((int64_t)1 << 34) - 1 + INT32_MIN)

static void clamp_range(struct timespec *t, int64_t lo, int64_t hi)
{
	/* at either end the nanoseconds go too, as timestamp_truncate does */
	if (t->tv_sec <= lo) {
		t->tv_sec = (time_t)lo;
		t->tv_nsec = 0;
	} else if (t->tv_sec >= hi) {
		t->tv_sec = (time_t)hi;
		t->tv_nsec = 0;
	}
}

void cp_map_attr(struct cp_ctx *c, struct e3_attr *a)
{
	const struct e3_copyin_opts *o = c->o;

	if (o->set_owner) {
		a->uid = o->owner_uid;
		a->gid = o->owner_gid;
	} else {
		a->uid = map_id(o->uid_map, o->n_uid_map, a->uid);
		a->gid = map_id(o->gid_map, o->n_gid_map, a->gid);
	}
	if (c->epoch >= 0) {
		clamp(&a->atime, c->epoch);
		clamp(&a->mtime, c->epoch);
		clamp(&a->ctime, c->epoch);
	}
	/* a time past what the inode holds (an archive's year 2500, or
	 * INT64_MAX) is the latest it holds, not a wrapped one */
	clamp_range(&a->atime, CP_TIME_MIN, c->time_max);
	clamp_range(&a->mtime, CP_TIME_MIN, c->time_max);
	clamp_range(&a->ctime, CP_TIME_MIN, c->time_max);
}

void cp_now(const struct cp_ctx *c, struct timespec *ts)
{
	int64_t fixed = c->epoch >= 0 ? c->epoch : c->img->clock;

	if (fixed >= 0)
		*ts = (struct timespec){ .tv_sec = (time_t)fixed };
	else
		clock_gettime(CLOCK_REALTIME, ts);
}

/* Attributes of a directory the input implies but does not describe. */
static void default_dir_attr(struct cp_ctx *c, struct e3_attr *a)
{
	struct timespec now;

	memset(a, 0, sizeof(*a));
	a->mode = S_IFDIR | 0755;
	cp_now(c, &now);
	a->atime = a->mtime = a->ctime = now;
	cp_map_attr(c, a);
}

/* ---- paths ------------------------------------------------------------------ */

static errcode_t ino_mode_links(struct cp_ctx *c, ext2_ino_t ino,
				uint16_t *mode, uint16_t *links)
{
	struct ext2_inode inode;
	errcode_t err;

	e3_fs_lock(c->img);
	err = ext2fs_read_inode(c->img->fs, ino, &inode);
	e3_fs_unlock(c->img);
	if (!err) {
		*mode = inode.i_mode;
		if (links)
			*links = inode.i_links_count;
	}
	return err;
}

errcode_t cp_ino_mode(struct cp_ctx *c, ext2_ino_t ino, uint16_t *mode)
{
	return ino_mode_links(c, ino, mode, NULL);
}

int cp_is_missing(errcode_t err)
{
	return err == E3_NOT_FOUND || err == EXT2_ET_FILE_NOT_FOUND ||
	       err == ENOENT;
}

/* A directory's inode goes where the Orlov rule sends it, which reads the
 * groups' free block counts: in ordered mode every file still being
 * written is finished first, so those counts are the same at any -j. */
static errcode_t ordered_mkdir(struct cp_ctx *c, ext2_ino_t parent,
			       const char *name, const struct e3_attr *a,
			       ext2_ino_t *ino)
{
	errcode_t err = 0;

	if (c->ordered)
		err = cp_close_oldest(c, 0);
	return err ? err : e3_mkdir(c->img, parent, name, a, ino);
}

/* One step down: name in dir, which must be (or become) a directory. */
static errcode_t step_dir(struct cp_ctx *c, ext2_ino_t dir, const char *name,
			  ext2_ino_t *ret)
{
	struct e3_attr a;
	uint16_t mode;
	errcode_t err;

	err = e3_lookup(c->img, dir, name, ret);
	if (cp_is_missing(err)) {
		default_dir_attr(c, &a);
		err = ordered_mkdir(c, dir, name, &a, ret);
		if (!err)
			err = cp_defer_dirattr(c, *ret, &a);
		return err;
	}
	if (err)
		return err;
	err = cp_ino_mode(c, *ret, &mode);
	if (err)
		return err;
	if (LINUX_S_ISLNK(mode))
		return E3_SYMLINK_IN_PATH;
	if (!LINUX_S_ISDIR(mode))
		return E3_NOT_DIR;
	return 0;
}

errcode_t cp_resolve_parent(struct cp_ctx *c, const char *rel,
			    ext2_ino_t *parent, const char **leaf)
{
	const char *slash = strrchr(rel, '/');
	size_t dirlen = slash ? (size_t)(slash - rel) : 0;
	ext2_ino_t cur = c->dest;
	errcode_t err = 0;
	char *buf, *p, *next;

	*leaf = slash ? slash + 1 : rel;
	if (!slash) {
		*parent = c->dest;
		return 0;
	}
	/* archives list siblings together: one cached parent saves lookups */
	if (c->cache_path && strlen(c->cache_path) == dirlen &&
	    memcmp(c->cache_path, rel, dirlen) == 0) {
		*parent = c->cache_ino;
		return 0;
	}
	buf = strndup(rel, dirlen);
	if (!buf)
		return ENOMEM;
	for (p = buf; p && !err; p = next) {
		next = strchr(p, '/');
		if (next)
			*next++ = '\0';
		err = step_dir(c, cur, p, &cur);
	}
	if (!err) {
		free(c->cache_path);
		c->cache_path = strndup(rel, dirlen);
		c->cache_ino = cur;
		*parent = cur;
	}
	free(buf);
	return err;
}

/* ---- entries ------------------------------------------------------------------- */

/* --update: E3_UP_TO_DATE when inode ino is what c->want describes — the
 * same type, size and mtime (to the nanosecond where the inode keeps
 * them), else 0: it is replaced. A file a crash cut short has its final
 * size only once its data is in (the size is set at its close), so it
 * never passes for a whole one. */
static errcode_t up_to_date(struct cp_ctx *c, ext2_ino_t ino)
{
	ext2_filsys fs = c->img->fs;
	struct ext2_inode_large *in;
	unsigned isz = EXT2_INODE_SIZE(fs->super);
	int same;
	errcode_t err;

	in = calloc(1, isz > sizeof(*in) ? isz : sizeof(*in));
	if (!in)
		return ENOMEM;
	e3_fs_lock(c->img);
	err = ext2fs_read_inode_full(fs, ino, EXT2_INODE(in), isz);
	e3_fs_unlock(c->img);
	if (err) {
		free(in);
		return err;
	}
	same = (in->i_mode & LINUX_S_IFMT) == (c->want.mode & S_IFMT) &&
	       EXT2_I_SIZE(in) == c->want.size &&
	       in->i_mtime == (uint32_t)c->want.mtime.tv_sec;
	/* nanoseconds and epoch bits, in inodes that have room for them */
	if (same && isz > EXT2_GOOD_OLD_INODE_SIZE &&
	    (size_t)EXT2_GOOD_OLD_INODE_SIZE + in->i_extra_isize >=
	    offsetof(struct ext2_inode_large, i_mtime_extra) +
	    sizeof(in->i_mtime_extra))
		same = (in->i_mtime_extra >> 2) ==
		       (uint32_t)c->want.mtime.tv_nsec;
	free(in);
	if (!same)
		return 0;
	c->want.ino = ino;
	return E3_UP_TO_DATE;
}

errcode_t cp_prepare_name(struct cp_ctx *c, ext2_ino_t parent,
			  const char *name, const char *path)
{
	ext2_ino_t ino;
	uint16_t mode, links;
	errcode_t err;

	(void)path;
	err = e3_lookup(c->img, parent, name, &ino);
	if (cp_is_missing(err))
		return 0;
	if (err)
		return err;
	if (c->o->update && c->want.set) {
		err = up_to_date(c, ino);
		if (err)
			return err;
	}
	if (!c->o->overwrite && !c->o->update)
		return E3_NAME_EXISTS;
	/* only the scanner changes links (a worker removes only a file it
	 * made, with one link, under a name that was free): the count
	 * holds until e3_remove */
	err = ino_mode_links(c, ino, &mode, &links);
	if (err)
		return err;
	if (LINUX_S_ISDIR(mode))
		return E3_IS_DIR;
	err = e3_remove(c->img, parent, name);
	if (err == E3_FILE_BUSY) {
		/* an earlier source's file, still being written: every file
		 * in flight is closed first (in ordered mode by the scanner,
		 * at this same point of the walk at any -j; otherwise by the
		 * workers, whose errors are reported at the end) */
		err = cp_drain(c);
		if (!err)
			err = e3_remove(c->img, parent, name);
		/* the close removed it itself (its source could not be
		 * opened): the name is free now */
		if (cp_is_missing(err))
			err = 0;
	}
	/* its number may be reused: hard links to come must not follow it */
	if (!err && links <= 1)
		cp_linkmap_forget(c->links, ino);
	/* its blocks wait for a commit: take it now if they are needed */
	if (!err && links <= 1 && c->release_frees)
		err = cp_release_freed(c, UINT64_MAX);
	else if (!err && links <= 1 && c->replace_need)
		err = cp_release_freed(c, c->replace_need);
	return err;
}

errcode_t cp_make_dir(struct cp_ctx *c, ext2_ino_t parent, const char *name,
		      const struct e3_attr *a, const char *path,
		      ext2_ino_t *ino, int *created)
{
	uint16_t mode;
	errcode_t err;

	(void)path;
	if (created)
		*created = 0;
	err = e3_lookup(c->img, parent, name, ino);
	if (cp_is_missing(err)) {
		err = ordered_mkdir(c, parent, name, a, ino);
		if (!err && created)
			*created = 1;
	} else if (!err) {
		/* directories merge: later sources add to earlier ones */
		err = cp_ino_mode(c, *ino, &mode);
		if (!err && LINUX_S_ISLNK(mode))
			err = E3_SYMLINK_IN_PATH;
		else if (!err && !LINUX_S_ISDIR(mode))
			err = c->o->overwrite || c->o->update ? E3_NOT_DIR :
							      E3_NAME_EXISTS;
	}
	if (!err)
		err = cp_defer_dirattr(c, *ino, a);
	return err;
}

errcode_t cp_set_xattrs(struct cp_ctx *c, ext2_ino_t ino,
			const struct cp_xattrs *x, const char *path)
{
	errcode_t err;

	(void)path;
	for (size_t i = 0; i < x->n; i++) {
		const void *v = x->v[i].value;
		unsigned char *mapped = NULL;

		/* ACL ids follow the owner maps, as the owners do (on a
		 * copy: a list may be set on more than one inode) */
		if ((c->o->n_uid_map || c->o->n_gid_map) &&
		    cp_acl_xattr_name(x->v[i].name)) {
			mapped = malloc(x->v[i].size ? x->v[i].size : 1);
			if (!mapped)
				return ENOMEM;
			memcpy(mapped, v, x->v[i].size);
			cp_acl_map_ids(c->o, mapped, x->v[i].size);
			v = mapped;
		}
		err = e3_setxattr(c->img, ino, x->v[i].name, v, x->v[i].size);
		free(mapped);
		if (err)
			return err;
	}
	return 0;
}

errcode_t cp_unmake(struct cp_ctx *c, ext2_ino_t parent, const char *name,
		    errcode_t why)
{
	errcode_t err;

	if (!cp_entry_error(why))
		return why;	/* the image's trouble: leave it alone */
	err = e3_remove(c->img, parent, name);
	return err && !cp_is_missing(err) ? err : why;
}

/* Directories get their final attributes last; a directory met twice
 * (merged sources) keeps the later attributes. */
errcode_t cp_defer_dirattr(struct cp_ctx *c, ext2_ino_t ino,
			   const struct e3_attr *a)
{
	struct cp_dirattr *d = e3_grow(c->dirs, c->ndirs, &c->capdirs,
				       sizeof(*d), 64);

	if (!d)
		return ENOMEM;
	c->dirs = d;
	c->dirs[c->ndirs] = (struct cp_dirattr){ .ino = ino, .attr = *a,
						  .seq = c->ndirs };
	c->ndirs++;
	return 0;
}

static int dirattr_cmp(const void *x, const void *y)
{
	const struct cp_dirattr *a = x, *b = y;

	return a->ino < b->ino ? -1 : a->ino > b->ino;
}

/* Applies the deferred attributes (the last one recorded per directory)
 * and returns the distinct directories for the htree pass. */
static errcode_t apply_dirattrs(struct cp_ctx *c)
{
	size_t i, n = 0;
	errcode_t err;

	if (c->ndirs)
		qsort(c->dirs, c->ndirs, sizeof(*c->dirs), dirattr_cmp);
	for (i = 0; i < c->ndirs; i++) {
		/* qsort is not stable: keep the entry with the latest seq */
		if (n && c->dirs[n - 1].ino == c->dirs[i].ino) {
			if (c->dirs[i].seq > c->dirs[n - 1].seq)
				c->dirs[n - 1] = c->dirs[i];
			continue;
		}
		c->dirs[n++] = c->dirs[i];
	}
	c->ndirs = n;
	for (i = 0; i < n; i++) {
		err = e3_setattr(c->img, c->dirs[i].ino, &c->dirs[i].attr);
		if (err)
			return err;
	}
	return 0;
}

/* ---- the run ------------------------------------------------------------------ */

/* The destination directory: every component made when missing. */
static errcode_t resolve_dest(struct cp_ctx *c, const char *dest)
{
	char *buf, *p, *next;
	errcode_t err = 0;

	c->dest = EXT2_ROOT_INO;
	buf = strdup(dest ? dest : "/");
	if (!buf)
		return ENOMEM;
	err = cp_path_clean(buf);
	for (p = buf; !err && p && *p; p = next) {
		next = strchr(p, '/');
		if (next)
			*next++ = '\0';
		err = step_dir(c, c->dest, p, &c->dest);
	}
	free(buf);
	return err;
}

/* An entry the measure found cannot be copied at all (xattrs too big
 * for the block size): told, naming it (inside an archive: "SRC: entry"),
 * and the run stops before anything is written. */
static errcode_t refuse_entry(struct cp_ctx *c, const char *src, int archive,
			      errcode_t err, struct e3_copyin_need *need)
{
	char *path = need->bad_path;

	if (archive && asprintf(&path, "%s: %s", src, need->bad_path) < 0)
		path = NULL;
	pthread_mutex_lock(&c->stat_lock);
	c->st->bad_xattr_bytes = err == E3_XATTR_TOO_BIG ? need->bad_size : 0;
	c->st->bad_block = need->bad_block;
	pthread_mutex_unlock(&c->stat_lock);
	cp_error(c, path ? path : need->bad_path, err);
	if (path != need->bad_path)
		free(path);
	free(need->bad_path);
	need->bad_path = NULL;
	return E3_SOURCE_REFUSED;
}

/* Where source i goes: its own destination, or the common one. */
static const char *source_dest(const struct e3_copyin_opts *o, size_t i)
{
	return o->dests && o->dests[i] ? o->dests[i] : o->dest;
}

static errcode_t label_dests(struct cp_ctx *c, size_t nsrcs);

/* --file-contexts in the measure: the label lookup for source i's
 * destination ("" the root, else "/a/b"); *path to free. */
static errcode_t lmeasure_init(struct cp_ctx *c, size_t i,
			       struct cp_lmeasure *l, char **path)
{
	char *buf = strdup(source_dest(c->o, i) ? source_dest(c->o, i) : "/");
	errcode_t err;

	*path = NULL;
	if (!buf)
		return ENOMEM;
	err = cp_path_clean(buf);
	if (!err && asprintf(path, "%s%s", buf[0] ? "/" : "", buf) < 0) {
		*path = NULL;
		err = ENOMEM;
	}
	free(buf);
	l->dest_path = *path;
	return err;
}

/* One source measured: an archive (stdin spooled first, so that it can
 * be read twice) read ahead, with the --overwrite/--update credit taken
 * entry by entry into *ac; a tree with its listings kept for the copy. */
static errcode_t measure_source(struct cp_ctx *c, size_t i, const char *src,
				struct cp_lmeasure *lm, struct cp_acredit *ac,
				struct e3_copyin_need *need)
{
	struct cp_ameasure x = { .fd = -1, .label = lm };
	ext2_filsys fs = c->img->fs;
	unsigned bs = fs->blocksize, isz = EXT2_INODE_SIZE(fs->super);
	int in = strcmp(src, "-") == 0;
	errcode_t err;

	if (in || c->archive[i]) {
		if (in && c->spool_fd < 0 &&
		    (err = cp_spool_stdin(&c->spool_fd, &c->spool_off)))
			return err;
		x.fd = in ? c->spool_fd : -1;
		x.off = c->spool_off;
		if (c->o->overwrite || c->o->update) {
			ac->c = c;
			ac->dest = cp_find_dest(c, source_dest(c->o, i));
			free(ac->last_path);	/* a parent under another dest */
			ac->last_path = NULL;
			x.credit = ac;
		}
		/* read once ahead, as e3mkfs auto does: an archive that does
		 * not fit is refused before it is begun, not found full half
		 * way */
		err = cp_measure_archive(src, bs, isz, c->o->keep_zeros, &x,
					 need);
		/* damaged further on: counted up to there, where the copy
		 * stops too, telling it (what came before stays, as with
		 * tar -x); stdin that is no archive at all is told by the
		 * copy the same way, reading the spool */
		if (err == E3_ARCHIVE_BAD || (in && err != ENOMEM &&
					      !need->bad_path))
			err = 0;
		return err;
	}
	if (!c->listings && (err = cp_listings_create(&c->listings)))
		return err;
	return cp_measure_tree(src, bs, isz, c->o->threads ? c->o->threads : 1,
			       c->listings, lm, need);
}

/* Sources known before anything is written (trees, plain files, archive
 * files, stdin once spooled) are measured and compared with the free
 * space. */
static errcode_t check_space(struct cp_ctx *c, const char *const *srcs,
			     size_t n, uint64_t *need_more, uint64_t *free_now)
{
	struct e3_copyin_need need, total = { 0 };
	struct cp_acredit ac = { 0 };
	struct cp_lmeasure lm = { .h = c->label, .root = c->o->selinux_root };
	ext2_filsys fs = c->img->fs;
	uint64_t free_blocks, free_inodes;
	struct stat st;
	errcode_t err = 0;
	char *lpath = NULL;

	pthread_mutex_init(&lm.lock, NULL);
	e3_fs_lock(c->img);
	free_blocks = ext2fs_free_blocks_count(fs->super);
	free_inodes = fs->super->s_free_inodes_count;
	e3_fs_unlock(c->img);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(srcs[i], "-") && stat(srcs[i], &st) < 0)
			continue;
		memset(&need, 0, sizeof(need));
		free(lpath);
		if (c->label && (err = lmeasure_init(c, i, &lm, &lpath)))
			goto out;
		err = measure_source(c, i, srcs[i], c->label ? &lm : NULL,
				     &ac, &need);
		if (err && need.bad_path) {
			err = refuse_entry(c, srcs[i], c->archive[i] ||
					   !strcmp(srcs[i], "-"), err, &need);
			goto out;
		}
		if (err)
			goto out;
		total.blocks += need.blocks;
		total.inodes += need.inodes;
		/* the progress line's ETA */
		c->st->total_files += need.files + need.dirs;
		c->st->total_bytes += need.bytes;
	}
	/* --file-contexts: labels on what the image holds under the
	 * destinations (copyin_label.c counts instead of labelling) */
	if (c->label) {
		c->label_need = &lm;
		err = label_dests(c, n);
		c->label_need = NULL;
		if (err)
			goto out;
		total.blocks += lm.blocks + cp_label_shared_blocks(&lm);
	}
	/* --overwrite: what the replaced entries give back (copyin_credit.c),
	 * looked up for trees only when the copy does not fit without it
	 * (archives were credited as they were read); then each removal
	 * commits to make its blocks reusable */
	if ((c->o->overwrite || c->o->update) &&
	    (total.blocks > free_blocks || total.inodes > free_inodes)) {
		struct e3_copyin_need credit = ac.credit;

		for (size_t i = 0; i < n; i++)
			if ((err = cp_overwrite_credit(c, srcs[i],
					source_dest(c->o, i), &credit)))
				goto out;
		if (total.blocks > free_blocks && credit.blocks)
			c->release_frees = 1;
		total.blocks -= credit.blocks < total.blocks ? credit.blocks :
							      total.blocks;
		total.inodes -= credit.inodes < total.inodes ? credit.inodes :
							      total.inodes;
	}
	if (total.blocks > free_blocks) {
		if (need_more)
			*need_more = total.blocks - free_blocks;
		if (free_now)
			*free_now = free_blocks;
		err = E3_NO_SPACE_KNOWN;
	} else if (total.inodes > free_inodes) {
		if (need_more)
			*need_more = total.inodes - free_inodes;
		if (free_now)
			*free_now = free_inodes;
		err = E3_NO_INODES_KNOWN;
	}
out:
	free(lpath);
	cp_acredit_free(&ac);
	cp_lmeasure_free(&lm);
	pthread_mutex_destroy(&lm.lock);
	return err;
}

/* cp's rule for one source that is a file (not a directory, not an
 * archive, not stdin): a destination that is not there, or is there and
 * not a directory, is the copy's own name; a trailing '/' keeps it a
 * directory. *dir: the directory to resolve instead of dest (NULL: dest
 * itself), with c->dest_name set. */
static errcode_t dest_names_file(struct cp_ctx *c, const char *const *srcs,
				 size_t n, const char *dest, const char **dir)
{
	struct stat st;
	ext2_ino_t ino;
	uint16_t mode;
	char *slash;
	errcode_t err;

	*dir = NULL;
	if (n != 1 || !dest || strcmp(srcs[0], "-") == 0 ||
	    stat(srcs[0], &st) < 0 || S_ISDIR(st.st_mode) ||
	    (S_ISREG(st.st_mode) && c->archive && c->archive[0]))
		return 0;
	if (!*dest || dest[strlen(dest) - 1] == '/')
		return 0;
	err = e3_namei(c->img, dest, &ino);
	if (!err) {
		err = cp_ino_mode(c, ino, &mode);
		if (err || LINUX_S_ISDIR(mode))
			return err;
	} else if (!cp_is_missing(err)) {
		return err;
	}
	c->dest_split = strdup(dest);
	if (!c->dest_split)
		return ENOMEM;
	slash = strrchr(c->dest_split, '/');
	if (!slash || !slash[1])
		return 0;		/* not a path (e3cp makes them absolute) */
	*slash = '\0';
	c->dest_name = slash + 1;
	*dir = slash == c->dest_split ? "/" : c->dest_split;
	return 0;
}

static errcode_t copy_one_source(struct cp_ctx *c, size_t i, const char *src)
{
	struct stat st;

	if (strcmp(src, "-") == 0)
		return cp_archive_copy(c, NULL, c->dest);
	if (stat(src, &st) < 0)
		return errno;
	if (c->archive[i])
		return cp_archive_copy(c, src, c->dest);
	return cp_tree_copy(c, src, c->dest);
}

/* Which sources are archives, decided once before anything is written:
 * one that cannot be read as the archive its name or content says it
 * is stops the run here, named (E3_SOURCE_REFUSED: the tool leaves the
 * image as it was). */
static errcode_t classify_sources(struct cp_ctx *c, const char *const *srcs,
				  size_t n)
{
	struct stat st;
	errcode_t err;
	int bad = 0;

	c->archive = calloc(n ? n : 1, sizeof(*c->archive));
	if (!c->archive)
		return ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(srcs[i], "-") == 0 || stat(srcs[i], &st) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		err = cp_source_kind(srcs[i], c->o->no_unpack, &c->archive[i]);
		if (err == ENOMEM)
			return err;
		if (err) {
			cp_error(c, srcs[i], err);
			bad = 1;
		}
	}
	return bad ? E3_SOURCE_REFUSED : 0;
}

static errcode_t setup(struct cp_ctx *c, e3_image_t *img,
		       const struct e3_copyin_opts *o,
		       struct e3_copyin_stats *st)
{
	unsigned threads = o->threads ? o->threads : 1;
	errcode_t err;

	memset(c, 0, sizeof(*c));
	c->img = img;
	c->bs = img->fs->blocksize;	/* fixed for the image's life */
	/* room for the *_extra times: e3_inode_set_attr's test */
	c->time_max = EXT2_INODE_SIZE(img->fs->super) >=
		      offsetof(struct ext2_inode_large, i_atime_extra) +
		      sizeof(uint32_t) ? CP_TIME_MAX_EXTRA : INT32_MAX;
	c->o = o;
	c->st = st;
	c->epoch = o->clamp_time;
	cp_noatime_init(&c->noatime);
	c->egid = getegid();
	c->ordered = o->reproducible;
	c->spool_fd = -1;
	c->order_lag = CP_ORDER_LAG;	/* never from -j: layout would follow it */
	pthread_mutex_init(&c->stat_lock, NULL);
	pthread_mutex_init(&c->order_lock, NULL);
	pthread_cond_init(&c->order_cond, NULL);
	c->ngroups = getgroups(0, NULL);
	if (c->ngroups > 0) {
		c->groups = calloc((size_t)c->ngroups, sizeof(*c->groups));
		if (!c->groups)
			return ENOMEM;
		c->ngroups = getgroups(c->ngroups, c->groups);
	}
	if (c->ngroups < 0)
		c->ngroups = 0;	/* only steering: fall back to egid */
	err = cp_linkmap_create(&c->links);
	if (err)
		return err;
	/* a few jobs per worker keep them busy; more would only hold fds */
	return e3_workq_create(threads, threads * 2, &c->wq);
}

static void teardown(struct cp_ctx *c)
{
	e3_workq_destroy(c->wq);
	cp_linkmap_free(c->links);
	free(c->groups);
	free(c->dirs);
	free(c->cache_path);
	free(c->archive);
	cp_label_close(c->label);
	if (c->spool_fd >= 0)
		close(c->spool_fd);
	free(c->dest_split);
	free(c->dest_shown);
	cp_listings_free(c->listings);
	cp_tree_jobs_free(c);
	pthread_mutex_destroy(&c->stat_lock);
	pthread_mutex_destroy(&c->order_lock);
	pthread_cond_destroy(&c->order_cond);
}

/* Directory attributes, then htree indexes: both only once every entry is
 * in place. */
static errcode_t finish(struct cp_ctx *c)
{
	ext2_ino_t *dirs;
	errcode_t err;

	err = apply_dirattrs(c);
	if (err)
		return err;
	dirs = malloc((c->ndirs + 1) * sizeof(*dirs));
	if (!dirs)
		return ENOMEM;
	for (size_t i = 0; i < c->ndirs; i++)
		dirs[i] = c->dirs[i].ino;
	err = e3_htree_build_all(c->img, dirs, c->ndirs);
	free(dirs);
	return err;
}

/* --file-contexts: each source's destination (for a file copied to a
 * name, that name), and for a device table the common destination. */
static errcode_t label_dests(struct cp_ctx *c, size_t nsrcs)
{
	const char **roots = calloc(nsrcs + 1, sizeof(*roots));
	size_t n = 0;
	errcode_t err;

	if (!roots)
		return ENOMEM;
	for (size_t i = 0; i < nsrcs; i++)
		roots[n++] = source_dest(c->o, i) ? source_dest(c->o, i) : "/";
	if (c->o->devtab || !nsrcs)
		roots[n++] = c->o->dest ? c->o->dest : "/";
	err = cp_label_tree(c, roots, n);
	free(roots);
	return err;
}

errcode_t e3_copyin_run(e3_image_t *img, const char *const *srcs,
			size_t nsrcs, const struct e3_copyin_opts *o,
			struct e3_copyin_stats *st, uint64_t *need_more,
			uint64_t *free_now)
{
	struct cp_devtab devtab = { 0 };
	const char *dest_dir = NULL;
	struct cp_ctx c;
	errcode_t err, err2;

	err = setup(&c, img, o, st);
	if (err)
		goto out;
	if (o->devtab) {
		err = cp_devtab_load(o->devtab, &devtab, &st->devtab_line);
		if (err) {
			st->devtab_failed = 1;
			goto out;
		}
	}
	err = classify_sources(&c, srcs, nsrcs);
	if (err)
		goto out;
	if (o->file_contexts) {
		err = cp_label_open(o->file_contexts, &c.label);
		if (err) {
			cp_error(&c, o->file_contexts, err);
			err = E3_SOURCE_REFUSED;
			goto out;
		}
	}
	if (o->check_space) {
		err = check_space(&c, srcs, nsrcs, need_more, free_now);
		if (err)
			goto out;
	}
	/* a device table alone: its paths are under the common destination */
	if (!nsrcs)
		err = resolve_dest(&c, o->dest);
	if (!err)
		err = dest_names_file(&c, srcs, nsrcs, source_dest(o, 0),
				      &dest_dir);
	for (size_t i = 0; !err && i < nsrcs; i++) {
		/* the cached parent is a path under the previous destination */
		free(c.cache_path);
		c.cache_path = NULL;
		err = resolve_dest(&c, i == 0 && dest_dir ? dest_dir :
					source_dest(o, i));
		if (!err)
			err = set_dest_shown(&c, i == 0 && dest_dir ? dest_dir :
						 source_dest(o, i));
		if (!err)
			err = copy_one_source(&c, i, srcs[i]);
	}
	err2 = cp_flush_batch(&c);
	if (!err)
		err = err2;
	err2 = cp_close_oldest(&c, 0);	/* ordered mode: the rest, in order */
	if (!err)
		err = err2;
	err2 = e3_workq_wait(c.wq);
	if (!err)
		err = err2;
	if (!err && o->devtab && nsrcs) {
		/* the table's paths are under the common destination, not
		 * the last source's own */
		free(c.cache_path);
		c.cache_path = NULL;
		err = resolve_dest(&c, dest_dir && !(o->dests && o->dests[0]) ?
				       dest_dir : o->dest);
	}
	if (!err && o->devtab)
		err = cp_devtab_apply(&c, &devtab);
	if (!err && c.label)
		err = label_dests(&c, nsrcs);
	if (!err)
		err = finish(&c);
	if (o->event)
		o->event(o->event_ctx, E3_CP_PROGRESS, NULL, 0, st);
out:
	teardown(&c);
	cp_devtab_free(&devtab);
	return err;
}
